"""The special-function models (tcemu/sfu, tcemu/ptx/sfu_forms) against the hardware's bits.

Expected values come from the H200 (sm_90) sample of traces/sfu_proof_sm90.npz, captured next to the
exhaustive proof (scripts/prove_sfu.cu): every input class the issue names is looked up there and every
case of the class demanded bit for bit."""
import json

import numpy as np
import pytest

from tcemu.ptx import fparith
from tcemu.ptx.errors import PtxError
from tcemu.ptx.sfu_forms import LEGAL, parse_form
from tcemu.sfu import fast, mufu, tables

TRACE = "traces/sfu_proof_sm90.npz"


@pytest.fixture(scope="module")
def sample():
    with np.load(TRACE, allow_pickle=False) as z:
        meta = json.loads(z["meta"].tobytes())
        return meta, {k: z[k] for k in ("form", "a", "b", "out")}


def _run(form, a, b=None):
    op, rounding, ftz, ftype = parse_form(form)
    width = {"f32": np.uint32, "f64": np.uint64, "f16": np.uint16, "bf16": np.uint16, "f16x2": np.uint32,
             "bf16x2": np.uint32}[ftype]
    ops = [np.asarray(a).astype(width)] + ([np.asarray(b).astype(np.uint32)] if b is not None else [])
    return np.asarray(fparith.float_op(op, ftype, *ops, rounding=rounding, ftz=ftz)).astype(np.uint64)


def _class(sample, form, pick):
    """The sample's cases of `form` whose operands satisfy pick(a, b); at least one must exist."""
    meta, c = sample
    sel = c["form"] == meta["forms"].index(form)
    a, b, out = c["a"][sel], c["b"][sel], c["out"][sel]
    keep = pick(a, b)
    assert keep.any(), f"{form}: the sample holds no case of this class"
    return a[keep], b[keep], out[keep]


def _mag(x):
    return x & np.uint64(0x7FFFFFFF)


NAN = lambda a, b: _mag(a) > 0x7F800000                                      # noqa: E731
INF = lambda a, b: _mag(a) == 0x7F800000                                     # noqa: E731
SUBNORMAL = lambda a, b: (_mag(a) > 0) & (_mag(a) < 0x00800000)              # noqa: E731
NEGATIVE = lambda a, b: (a >> np.uint64(31) == 1) & (_mag(a) > 0) & (_mag(a) <= 0x7F800000)  # noqa: E731
HUGE = lambda a, b: (_mag(a) >= 0x4B000000) & (_mag(a) < 0x7F800000)        # |x| >= 2^23   # noqa: E731


@pytest.mark.parametrize("form,cls", [
    (f, c) for f in ("rcp.approx.f32", "rcp.approx.ftz.f32", "sqrt.approx.f32", "sqrt.approx.ftz.f32",
                     "rsqrt.approx.f32", "rsqrt.approx.ftz.f32", "ex2.approx.f32", "ex2.approx.ftz.f32",
                     "lg2.approx.f32", "lg2.approx.ftz.f32", "sin.approx.f32", "sin.approx.ftz.f32",
                     "cos.approx.f32", "cos.approx.ftz.f32", "tanh.approx.f32")
    for c in ("nan", "inf", "subnormal", "negative", "huge")])
def test_special_classes_f32(sample, form, cls):
    pick = {"nan": NAN, "inf": INF, "subnormal": SUBNORMAL, "negative": NEGATIVE, "huge": HUGE}[cls]
    a, _, out = _class(sample, form, pick)
    assert np.array_equal(_run(form, a), out)


@pytest.mark.parametrize("form", ["div.approx.f32", "div.approx.ftz.f32", "div.full.f32", "div.full.ftz.f32"])
@pytest.mark.parametrize("cls", ["zero", "inf", "big", "subnormal", "nan"])
def test_division_classes(sample, form, cls):
    """b = +-0, +-inf, |b| > 2^126 (div.full scales by 1/4; div.approx's reciprocal flushes), subnormal b."""
    pick = {"zero": lambda a, b: _mag(b) == 0, "inf": lambda a, b: _mag(b) == 0x7F800000,
            "big": lambda a, b: (_mag(b) > 0x7E800000) & (_mag(b) < 0x7F800000),
            "subnormal": lambda a, b: (_mag(b) > 0) & (_mag(b) < 0x00800000),
            "nan": lambda a, b: (_mag(a) > 0x7F800000) | (_mag(b) > 0x7F800000)}[cls]
    a, b, out = _class(sample, form, pick)
    assert np.array_equal(_run(form, a, b), out)


def test_measured_facts():
    """Single values read off the H200 (the sample of traces/sfu_proof_sm90.npz), one per rule."""
    facts = [("sqrt.approx.f32", 0xBF800000, 0x7FFFFFFF),        # negative -> canonical NaN
             ("sqrt.approx.f32", 0x80000000, 0x80000000),        # sqrt(-0) = -0
             ("sqrt.approx.f32", 0x00000001, 0x1A3504F3),        # subnormal scaled by 2^24 first
             ("sqrt.approx.ftz.f32", 0x00000001, 0x00000000),    # ... or flushed
             ("rsqrt.approx.f32", 0x80000000, 0xFF800000),
             ("lg2.approx.f32", 0x00000001, 0xC3150000),         # lg2(2^-149) = -149 exactly
             ("lg2.approx.ftz.f32", 0x00000001, 0xFF800000),
             ("ex2.approx.f32", 0xBF800000, 0x3F000000),         # ex2(-1) = 1/2 exactly
             ("ex2.approx.f32", 0x80000001, 0x3F800000),
             ("sin.approx.f32", 0x60AD78EC, 0x00000000),         # sin(1e20) = 0: no fraction of a turn left
             ("cos.approx.f32", 0x60AD78EC, 0x3F800000),
             ("sin.approx.f32", 0x80000000, 0x80000000),
             ("rcp.approx.f32", 0x7F000000, 0x00400000),         # 1/2^127: subnormal without .ftz
             ("rcp.approx.ftz.f32", 0x7F000000, 0x00000000),
             ("tanh.approx.f32", 0x00000001, 0x00000001),        # tanh keeps subnormals
             ("tanh.approx.f32", 0x3F800000, 0x3F42F848),
             ("rsqrt.approx.f64", 0x7FF4000000000000, 0x7FFC000000000000),   # DADD x, x quiets the NaN
             ("rsqrt.approx.f64", 0x0000000000000001, 0x6180000000000000),
             ("rcp.approx.ftz.f64", 0x7FF4000000000000, 0x7FFFFFFF00000000)]
    for form, a, want in facts:
        assert int(_run(form, [a])[0]) == want, form


def test_whole_16bit_domains_and_packed_halves():
    """A packed form is its scalar core on each half; the scalar tables cover all 65,536 inputs."""
    x = np.arange(1 << 16, dtype=np.uint32)
    packed = x | (x[::-1] << 16)
    for op, fmt, form in (("ex2", "f16", "ex2.approx.f16x2"), ("ex2", "bf16", "ex2.approx.ftz.bf16x2"),
                          ("tanh", "f16", "tanh.approx.f16x2"), ("tanh", "bf16", "tanh.approx.bf16x2")):
        got = _run(form, packed)
        scalar = (mufu.ex2_h if op == "ex2" else mufu.tanh_h)(x.astype(np.uint16), fmt).astype(np.uint64)
        assert np.array_equal(got & np.uint64(0xFFFF), scalar)
        assert np.array_equal(got >> np.uint64(16), scalar[::-1])


def test_tables_decode_to_the_captured_bits():
    """Every table decodes to the sha256 recorded at capture; a changed residual is caught, not used."""
    spec = tables.meta()["tables"]
    assert len(spec) == 22
    assert all(tables.table(name).size == spec[name]["n"] for name in ("rcp", "ex2", "tanh_127_3"))
    meta, members = tables._archive()
    blob = members["ex2_f16"]
    raw = bytearray(__import__("lzma").decompress(blob.tobytes()))
    raw[100] ^= 1
    bad = np.frombuffer(__import__("lzma").compress(bytes(raw)), np.uint8)
    with pytest.raises(tables.SfuTableError, match="sha256"):
        tables.decode(bad, spec["ex2_f16"], "ex2_f16")


def test_a_decoded_table_is_kept_and_a_damaged_copy_is_not_used(tmp_path, monkeypatch):
    """The first decode keeps the table in the cache folder; the next process reads it instead of running the
    predictor; a kept copy whose bits are not the captured ones is decoded afresh (and replaced), never used."""
    monkeypatch.setenv("TCEMU_CACHE", str(tmp_path))
    name = "tanh_119_6"
    spec = tables.meta()["tables"][name]
    want = tables.decode(tables._archive()[1][name], spec, name)
    path = tmp_path / "sfu" / f"{spec['sha256']}.npy"
    tables.table.cache_clear()
    decodes = []
    real = tables.decode
    monkeypatch.setattr(tables, "decode", lambda *a: decodes.append(a[2]) or real(*a))
    try:
        assert np.array_equal(tables.table(name), want) and decodes == [name] and path.is_file()
        tables.table.cache_clear()
        assert np.array_equal(tables.table(name), want) and decodes == [name]   # read, not decoded
        kept = np.load(path)
        kept[7] ^= 1
        np.save(path, kept)
        tables.table.cache_clear()
        assert np.array_equal(tables.table(name), want) and decodes == [name, name]
        assert np.array_equal(np.load(path), want)   # replaced by the good bits
        path.write_bytes(b"not a npy file")
        tables.table.cache_clear()
        assert np.array_equal(tables.table(name), want) and decodes == [name, name, name]
    finally:
        tables.table.cache_clear()


def test_replay_catches_a_wrong_table_entry(sample, monkeypatch):
    """The sample is sensitive to the tables: one changed entry of RCP's table fails the cases that read it."""
    meta, c = sample
    sel = c["form"] == meta["forms"].index("rcp.approx.ftz.f32")
    a = c["a"][sel]
    m = int(a[(a & 0x7F800000 != 0) & (a & 0x7F800000 != 0x7F800000)][0]) & 0x7FFFFF
    t = tables.table("rcp").copy()
    t[m] ^= 1
    patched = lambda name: t if name == "rcp" else tables.table(name)   # noqa: E731
    monkeypatch.setattr(mufu, "table", patched)
    monkeypatch.setattr(fast, "table", patched)
    assert not np.array_equal(_run("rcp.approx.ftz.f32", a), c["out"][sel])


def test_illegal_forms_are_refused_as_ptxas_refuses_them():
    x = np.array([0x3F800000], np.uint32)
    for op, ftype, kw in (("ex2", "f32", {}),                                   # .approx required
                          ("sin", "f32", {"rounding": "rn"}),
                          ("tanh", "f32", {"rounding": "approx", "ftz": True}),  # tanh has no .ftz
                          ("ex2", "bf16", {"rounding": "approx"}),               # bf16 ex2 needs .ftz
                          ("ex2", "f16", {"rounding": "approx", "ftz": True}),   # f16 ex2 takes none
                          ("rcp", "f64", {"rounding": "approx"}),                # f64 rcp needs .ftz
                          ("sqrt", "f64", {"rounding": "approx"}),
                          ("lg2", "f32", {"rounding": "approx", "sat": True})):
        w = {"f64": np.uint64, "f32": np.uint32}.get(ftype, np.uint16)
        with pytest.raises(PtxError):
            fparith.float_op(op, ftype, x.astype(w), **kw)
    assert ("div", "full", True, "f32") in LEGAL and ("div", "full", False, "f64") not in LEGAL


@pytest.mark.parametrize("name", ["rcp", "rsqrt", "sqrt", "ex2", "lg2", "sin", "cos", "tanh"])
def test_compiled_cores_equal_the_reference(sample, name):
    """tcemu.sfu.fast (what the interpreter runs) against tcemu.sfu.mufu (what the GPU proof and the sample
    check): every f32 pattern of the sample and 2^20 random patterns."""
    from tcemu.sfu import fast
    meta, c = sample
    f32 = np.isin(c["form"], [i for i, f in enumerate(meta["forms"]) if f.endswith(".f32")])
    x = np.concatenate([c["a"][f32].astype(np.uint32),
                        np.random.default_rng(7).integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32)])
    assert np.array_equal(fast.core(name, x), getattr(mufu, name)(x))
