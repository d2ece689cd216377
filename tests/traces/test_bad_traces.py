"""The trace reader against the defects of issue 17: it opens only the members a kind names, and refuses
(TraceError naming the member or meta field) a record the replay could not read or that disagrees with the
columns (tests/traces/test_hostile_campaign.py mutates traces at random)."""
import os
import zipfile

import numpy as np

from tcemu.traces import load_trace, replay

from badinput import field_of
from paths import TRACES


def _small_wavefront_trace(tmp_path, name="t.npz", **changes):
    with np.load(os.path.join(TRACES, "smem_wavefronts_targeted_sm90.npz")) as z:
        cols = {k: (z[k] if k == "meta" else z[k][:16]) for k in z.files}
    cols.update(changes)
    path = str(tmp_path / name)
    np.savez(path, **cols)
    return path



def test_reader_opens_only_the_named_members(tmp_path, monkeypatch):
    path = _small_wavefront_trace(tmp_path, unused=np.zeros(1 << 20, np.uint8))
    opened = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, name, *a, **kw: (
        opened.append(getattr(name, "filename", name)), real_open(self, name, *a, **kw))[1])
    result = replay(path)
    assert result.ok and sorted(opened) == sorted(["meta.npy", "op.npy", "mask.npy", "addr.npy", "ld_wavefronts.npy",
                                                   "st_wavefronts.npy"])



def test_reader_refusals(tmp_path):
    objects = _small_wavefront_trace(tmp_path, "o.npz", mask=np.array([object()] * 16))
    assert field_of(load_trace, objects) == "o.npz:mask"
    assert field_of(load_trace, _small_wavefront_trace(tmp_path, "m.npz", mask=np.zeros(3, np.uint32))) == "mask"
    os.mkfifo(tmp_path / "fifo.npz")
    assert field_of(load_trace, str(tmp_path / "fifo.npz")) == "fifo.npz"
    with np.load(os.path.join(TRACES, "wgmma_numerics_sm90.npz")) as z:
        cols = {k: z[k] for k in z.files}
    np.savez(tmp_path / "steps.npz", **dict(cols, steps=np.full(cols["steps"].shape, 10 ** 9, np.int64)))
    assert field_of(load_trace, str(tmp_path / "steps.npz")) == "steps"
    with np.load(os.path.join(TRACES, "wgmma_addresses_sm90.npz")) as z:
        cols = {k: z[k] for k in z.files}
    np.savez(tmp_path / "rows.npz", **dict(cols, rows=cols["rows"] * 0 - 1))
    assert field_of(load_trace, str(tmp_path / "rows.npz")) == "rows"
    data = open(_small_wavefront_trace(tmp_path), "rb").read()
    (tmp_path / "cut.npz").write_bytes(data[:-30])
    assert field_of(load_trace, str(tmp_path / "cut.npz")) == "cut.npz"



def test_reader_refuses_a_npy_header_cut_inside_its_dict(tmp_path):
    """numpy reads a version-1.0 .npy header through Python's tokenizer: a header whose dict never closes
    raised tokenize.TokenError (found by the campaign's byte flips), now a TraceError naming the member."""
    import io
    buf = io.BytesIO()
    np.save(buf, np.zeros(16, np.uint32))
    raw = buf.getvalue()
    n = int.from_bytes(raw[8:10], "little")
    header = raw[10:10 + n].replace(b"'shape': (16,), }", b"'shape': (16,  ").ljust(n)
    assert header != raw[10:10 + n] and len(header) == n
    path = _small_wavefront_trace(tmp_path)
    with zipfile.ZipFile(path) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    members["mask.npy"] = raw[:10] + header + raw[10 + n:]
    with zipfile.ZipFile(str(tmp_path / "tok.npz"), "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    assert field_of(load_trace, str(tmp_path / "tok.npz")) == "tok.npz:mask"



def _kernel_trace(tmp_path, name="k.npz", meta_changes=None, case_changes=None, **changes):
    """One captured launch of the whole-kernel trace (matmul_tma_bf16, 128 x 256 x 64: one CTA) with its
    embedded fixture, as its own small trace."""
    import json
    with np.load(os.path.join(TRACES, "triton_kernels_sm90.npz")) as z:
        c = {k: z[k] for k in z.files}
    meta = json.loads(c["meta"].tobytes())
    i = next(j for j, case in enumerate(meta["cases"]) if case["fixture"] == "matmul_tma_bf16" and case["M"] == 128)
    fx = meta["cases"][i]["fixture"]
    meta["cases"], meta["fixtures"] = [dict(meta["cases"][i], **(case_changes or {}))], {fx: meta["fixtures"][fx]}
    meta.update(meta_changes or {})
    lo, hi = int(c["offsets"][i]), int(c["offsets"][i + 1])
    cols = {k: c[k][i:i + 1] for k in ("seed", "status", "m", "n", "k", "grid")}
    cols.update(meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), bits=c["bits"][lo:hi],
                offsets=np.array([0, hi - lo], np.int64), **{f"fixture_{fx}_{e}": c[f"fixture_{fx}_{e}"]
                                                              for e in ("ptx", "json")})
    cols.update(changes)
    path = str(tmp_path / name)
    np.savez(path, **cols)
    return path



def test_kernel_trace_reads_the_fixtures_its_meta_names(tmp_path, monkeypatch):
    """kernel_outputs embeds its fixtures' PTX and json: the reader opens the members meta.fixtures names (and
    the kind's columns), not an unnamed fixture that happens to sit in the archive."""
    path = _kernel_trace(tmp_path, fixture_other_ptx=np.zeros(1 << 20, np.uint8))
    opened = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, name, *a, **kw: (
        opened.append(getattr(name, "filename", name)), real_open(self, name, *a, **kw))[1])
    result = replay(path)
    assert result.ok
    assert [(g.cases, g.cases_matched, g.values) for g in result.groups.values()] == [(1, 1, 128 * 256 * 2)]
    assert sorted(opened) == sorted(f"{c}.npy" for c in ("meta", "seed", "status", "offsets", "bits", "m", "n", "k",
                                                         "grid", "fixture_matmul_tma_bf16_ptx",
                                                         "fixture_matmul_tma_bf16_json"))



def test_kernel_trace_refusals(tmp_path):
    import hashlib
    with np.load(os.path.join(TRACES, "triton_kernels_sm90.npz")) as z:
        ptx = z["fixture_matmul_tma_bf16_ptx"]
    longer = np.concatenate([ptx, np.frombuffer(b"\n", np.uint8)])  # not the PTX whose sha256 meta.fixtures gives
    assert field_of(load_trace, _kernel_trace(tmp_path, fixture_matmul_tma_bf16_ptx=longer)) == \
        "fixture_matmul_tma_bf16_ptx"
    huge_grid = _kernel_trace(tmp_path, case_changes={"grid": [1 << 20, 1 << 20, 1]})
    assert field_of(load_trace, huge_grid) == "meta.cases[0]"
    assert field_of(load_trace, _kernel_trace(tmp_path, case_changes={"fixture": "../../etc/passwd"})) == \
        "meta.cases[0]"
    assert field_of(load_trace, _kernel_trace(tmp_path, case_changes={
        "output": {"buffer": "c", "dtype": "f16", "shape": [1 << 30, 1 << 30]}})) == "meta.cases[0]"
    assert field_of(load_trace, _kernel_trace(tmp_path, meta_changes={"cases": []})) == "meta.cases"
    assert field_of(load_trace, _kernel_trace(tmp_path, bits=np.zeros(5, np.uint8),
                                              offsets=np.array([0, 5], np.int64))) == "offsets"
    path = _kernel_trace(tmp_path)
    with zipfile.ZipFile(path) as zf:
        kept = {n: zf.read(n) for n in zf.namelist() if n != "fixture_matmul_tma_bf16_json.npy"}
    with zipfile.ZipFile(str(tmp_path / "missing.npz"), "w") as zf:
        for n, data in kept.items():
            zf.writestr(n, data)
    assert field_of(load_trace, str(tmp_path / "missing.npz")) == "fixture_matmul_tma_bf16_json"
    bad = np.frombuffer(b"\xff\xfe", np.uint8)
    fixtures = {"matmul_tma_bf16": {"ptx_sha256": hashlib.sha256(bad.tobytes()).hexdigest(),
                                    "json_sha256": hashlib.sha256(np.load(path)["fixture_matmul_tma_bf16_json"]
                                                                  .tobytes()).hexdigest()}}
    assert field_of(load_trace, _kernel_trace(tmp_path, meta_changes={"fixtures": fixtures},
                                              fixture_matmul_tma_bf16_ptx=bad)) == "fixture_matmul_tma_bf16_ptx"



def test_sparse_and_alu_trace_refusals(tmp_path):
    import json
    with np.load(os.path.join(TRACES, "wgmma_sp_addresses_sm90.npz")) as z:
        cols = {k: z[k] for k in z.files}
    np.savez(tmp_path / "op.npz", **dict(cols, operand=cols["operand"] + 3))
    assert field_of(load_trace, str(tmp_path / "op.npz")) == "operand"
    np.savez(tmp_path / "k.npz", **dict(cols, k=cols["k"] * 2))      # not the extent of a sparse operand
    assert field_of(load_trace, str(tmp_path / "k.npz")) == "rows, k"
    with np.load(os.path.join(TRACES, "wgmma_sp_numerics_sm90.npz")) as z:
        cols = {k: z[k] for k in z.files}
    meta = json.loads(cols["meta"].tobytes())
    meta["kinds"][0] = ["tf32", "tf32", "f16", 0]                      # not sparse_seeds' kind 0
    np.savez(tmp_path / "kinds.npz", **dict(cols, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8)))
    assert field_of(load_trace, str(tmp_path / "kinds.npz")) == "meta.kinds"
    np.savez(tmp_path / "steps.npz", **dict(cols, steps=np.full_like(cols["steps"], 100)))
    assert field_of(load_trace, str(tmp_path / "steps.npz")) == "steps"
    with np.load(os.path.join(TRACES, "ptx_alu_sm90.npz")) as z:
        cols = {k: (z[k] if k == "meta" else z[k][:100]) for k in z.files}
    meta = json.loads(cols["meta"].tobytes())
    meta["forms"][0]["src"] = ["f99"]                                   # an operand tag the replay cannot read
    np.savez(tmp_path / "alu.npz", **dict(cols, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8)))
    assert field_of(load_trace, str(tmp_path / "alu.npz")) == "meta.forms"
    np.savez(tmp_path / "aluop.npz", **dict(cols, op=np.full(100, 5000, np.int16)))
    assert field_of(load_trace, str(tmp_path / "aluop.npz")) == "op"



def _saved(tmp_path, name, cols, **meta_changes):
    import json
    meta = json.loads(cols["meta"].tobytes())
    meta.update(meta_changes)
    np.savez(tmp_path / name, **dict(cols, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8)))
    return str(tmp_path / name)



def test_gemm_launch_and_zero_sign_trace_refusals(tmp_path):
    """gemm_outputs, launch_outputs and wgmma_zero_sign: a record the replay could not read, or that disagrees with
    the columns, is refused by load_trace naming it (the bundled traces load: test_traces)."""
    import hashlib
    import json
    with np.load(os.path.join(TRACES, "torch_gemm_sm90.npz")) as z:
        cols = {k: z[k] for k in z.files}
    cases = json.loads(cols["meta"].tobytes())["cases"]
    a, b = cases[0]["inputs"]
    wrong = [dict(cases[0], inputs=[dict(a, shape=[128, 64]), b])] + cases[1:]   # A is not M x K
    assert field_of(load_trace, _saved(tmp_path, "g1.npz", cols, cases=wrong)) == "meta.cases[0]"
    untyped = [dict(cases[0], kernels=[1])] + cases[1:]                           # `"splitK" in 1` in the model
    assert field_of(load_trace, _saved(tmp_path, "g2.npz", cols, cases=untyped)) == "meta.cases[0]"
    np.savez(tmp_path / "g3.npz", **dict(cols, stored_rows=cols["stored_rows"] + (cols["status"] != 0)))
    assert field_of(load_trace, str(tmp_path / "g3.npz")) == "meta.cases[28]"   # a refused case storing rows
    np.savez(tmp_path / "g4.npz", **dict(cols, m=cols["m"] * 64, n=cols["n"] * 64))
    assert field_of(load_trace, str(tmp_path / "g4.npz")) == "meta.cases[0]"    # past the operand limit

    with np.load(os.path.join(TRACES, "cutlass_kernels_sm90.npz")) as z:
        cols = {k: z[k] for k in z.files}
    meta = json.loads(cols["meta"].tobytes())
    cases = meta["cases"]
    assert field_of(load_trace, _saved(tmp_path, "l1.npz", cols, cases=[dict(cases[0], seed=1)] + cases[1:])) == \
        "meta.cases[0]"                                                          # not the seed column's
    assert field_of(load_trace, _saved(tmp_path, "l2.npz", cols, cases=[dict(cases[0], launch=7)] + cases[1:])) == \
        "meta.cases[0]"
    fx = cases[0]["fixture"]
    fj = json.loads(cols[f"fixture_{fx}_json"].tobytes())
    fj["launches"][0]["buffers"][0]["storage"] = ["256", 256]                    # int("256") in tcemu.launches
    raw = np.frombuffer(json.dumps(fj).encode(), np.uint8)
    fixtures = dict(meta["fixtures"], **{fx: dict(meta["fixtures"][fx], json_sha256=hashlib.sha256(raw).hexdigest())})
    cols[f"fixture_{fx}_json"] = raw
    assert field_of(load_trace, _saved(tmp_path, "l3.npz", cols, fixtures=fixtures)) == \
        f"fixture_{fx}_json: launches[0]"

    with np.load(os.path.join(TRACES, "wgmma_zero_sign_sm90.npz")) as z:
        cols = {k: z[k] for k in z.files}
    np.savez(tmp_path / "z1.npz", **dict(cols, c_len=cols["c_len"] + cols["pool"].size))
    assert field_of(load_trace, str(tmp_path / "z1.npz")) == "c_len"                 # longer than the pool
    np.savez(tmp_path / "z0.npz", **dict(cols, c_off=cols["c_off"] * 0 + cols["pool"].size - 1))
    assert field_of(load_trace, str(tmp_path / "z0.npz")) == "c_off, c_len"          # runs past its end
    meta = json.loads(cols["meta"].tobytes())
    assert field_of(load_trace, _saved(tmp_path, "z2.npz", cols, kinds=[["s8", "u8", "s32"]] + meta["kinds"][1:])) \
        == "meta.kinds"
