"""Peer oracle: CuTe's own descriptor builders (nvidia-cutlass headers, host-compiled with nvcc) vs tcemu.

tests/support/cute_oracle/umma_oracle.cu only #includes CuTe and calls it: tile_to_shape over every canonical
smem layout atom, make_umma_desc / make_gmma_desc and CuTe's MMA partition path (MakeTensor<smem_desc>,
DescriptorIterator), UMMA::make_instr_desc / make_instr_desc_block_scaled. It prints one JSON object
per line (format: tests/support/cute_oracle/README.md). It is built as two halves compiled in parallel (about
20 s on 2 cores), once: tests/support/cute.py keeps the binaries in a cache keyed by source, compiler and headers.

Oracle-only checks (need CuTe + nvcc, not tcemu's sm100 side): the descriptor bit positions, the
start address of every sub-tile, and the instruction descriptors against PTX Tables 42-44 as
transcribed in /work/shared/spec/ptx-tcgen05-instruction-descriptor.md, with a ledger of the
places where CuTe and the PTX text disagree. tcemu checks: decode, encode(decode(v)) == v and
operand_addresses against CuTe's per-element byte offsets, for sm90 and sm100.
"""
import collections
import importlib.util
import json

import numpy as np
import pytest

import tcemu

import cute

# host-compiled with nvcc; the first build takes CPU-minutes (tests/support/cute.py caches it)
pytestmark = [pytest.mark.needs_nvcc, pytest.mark.slow]

PARTS = (0, 1)  # ORACLE_PART halves, built as umma_oracle_0 / _1 (tests/support/cute.py), in parallel


# ---------------------------------------------------------------------------------------------
# Running the oracle (built once, and cached: tests/support/cute.py)
# ---------------------------------------------------------------------------------------------
class Oracle:
    def __init__(self, lines):
        self.meta, self.tiles, self.smem, self.instr, self.ends, self.sm103 = [], {}, [], [], [], []
        for line in lines:
            rec = json.loads(line)
            kind = rec["rec"]
            if kind == "tile":
                rec["offsets"] = np.asarray(rec["offsets"], dtype=np.int64).reshape(rec["mn"], rec["k"])
                self.tiles[rec["id"]] = rec
            elif kind == "smem_desc":
                rec["value"] = int(rec["desc"], 16)
                self.smem.append(rec)
            elif kind == "idesc":
                rec["value"] = int(rec["value"], 16)
                self.instr.append(rec)
            elif kind in ("sm103_tile", "sm103_desc"):
                self.sm103.append(rec)
            else:
                (self.meta if kind == "meta" else self.ends).append(rec)

    def tile_of(self, rec):
        return self.tiles.get(rec["tile"])

    def sub_offsets(self, rec):
        """CuTe's byte offsets (from the window start) of the elements a descriptor record covers."""
        t = self.tiles[rec["tile"]]
        return t["offsets"][rec["mn0"]:rec["mn0"] + rec["mm"], rec["k0"]:rec["k0"] + rec["kk"]]


@pytest.fixture(scope="session")
def oracle():
    lines, stderr = [], []
    for exe in cute.binaries([f"umma_oracle_{part}" for part in PARTS]):
        out, err = cute.run(exe)
        lines += out
        stderr += err
    o = Oracle(lines)
    o.stderr = stderr
    return o


# ---------------------------------------------------------------------------------------------
# Oracle-only checks
# ---------------------------------------------------------------------------------------------
def test_oracle_output_is_complete(oracle):
    assert sorted(m["part"] for m in oracle.meta) == list(PARTS)
    assert sorted(e["part"] for e in oracle.ends) == list(PARTS)   # every part ran to the end
    assert all(m["smem_buf_mod_1024"] == 0 for m in oracle.meta)   # tiles at base 0 are 1024-aligned
    # The only thing CuTe says on the host: make_*_desc cannot read a shared-memory address there.
    assert set(oracle.stderr) <= {"ERROR: cast_smem_ptr_to_uint not supported but used."}
    counts = collections.Counter((r["arch"], r["how"]) for r in oracle.smem)
    assert len(oracle.tiles) > 100 and counts[("sm100", "mma")] > 500 and counts[("sm90", "mma")] > 300
    assert len(oracle.instr) > 1000
    grid = {(t["bits"], t["major"], t["swizzle"]) for t in oracle.tiles.values()}
    for bits in (32, 16, 8, 4):
        for sw in ("INTER", "SW32", "SW64", "SW128"):
            assert (bits, "K", sw) in grid
            if bits > 4:
                assert (bits, "MN", sw) in grid
        if bits > 4:
            assert (bits, "MN", "SW128_32B") in grid


SM100_FIELDS = dict(start_address=(0, 14, 4), lbo=(16, 14, 4), sbo=(32, 14, 4), version=(46, 2, 0),
                    base_offset=(49, 3, 0), lbo_mode=(52, 1, 0), layout_type=(61, 3, 0))
SM90_FIELDS = dict(start_address=(0, 14, 4), lbo=(16, 14, 4), sbo=(32, 14, 4), base_offset=(49, 3, 0),
                   layout_type=(62, 2, 0))
SM100_LAYOUT = {"INTER": 0, "SW128_32B": 1, "SW128": 2, "SW64": 4, "SW32": 6}
SM90_LAYOUT = {"INTER": 0, "SW128": 1, "SW64": 2, "SW32": 3}


def _bits(value, fields):
    return {name: (value >> lo & ((1 << width) - 1)) << shift for name, (lo, width, shift) in fields.items()}


def test_smem_descriptor_bit_positions(oracle):
    """CuTe's union fields sit where the PTX / public-sources notes put them; nothing else is set."""
    for r in oracle.smem:
        fields = SM100_FIELDS if r["arch"] == "sm100" else SM90_FIELDS
        decoded = _bits(r["value"], fields)
        assert decoded == {name: r[name] for name in fields}, r
        covered = sum(((1 << w) - 1) << lo for lo, w, _ in fields.values())
        assert r["value"] & ~covered == 0, r


def test_cute_descriptor_conventions(oracle):
    """What CuTe always writes: version 1 on sm100, base offset 0, LBO mode 0 (outside the sm103
    K=96 path), LBO = 16 bytes for swizzled K-major, the layout type of the atom's swizzle."""
    for r in oracle.smem:
        if r["how"] == "lbo_mode":
            assert r["lbo_mode"] == 1
            continue
        t = oracle.tile_of(r)
        assert r["base_offset"] == 0 and r.get("version", 1) == 1 and r.get("lbo_mode", 0) == 0
        assert r["layout_type"] == (SM100_LAYOUT if r["arch"] == "sm100" else SM90_LAYOUT)[t["swizzle"]]
        if t["major"] == "K" and t["swizzle"] != "INTER":
            assert r["lbo"] == 16, r


def test_subtile_start_is_its_first_element(oracle):
    """On a 1024-aligned tile every descriptor's start address is the address of its first element
    (sub-tiles begin on swizzle-row 0 of an atom, where the XOR term is 0)."""
    for r in oracle.smem:
        if r["tile"] >= 0 and oracle.tile_of(r)["base"] == 0:
            assert r["start_address"] == oracle.sub_offsets(r)[0, 0], r


def test_tile_offsets_are_injective(oracle):
    for t in oracle.tiles.values():
        off = t["offsets"].ravel()
        lo = t["base"]
        span = t["mn"] * t["k"] * t["bits"] // 8
        assert off.min() >= lo - 1024 and off.max() < lo + span + 1024
        if t["bits"] >= 8:
            assert len(np.unique(off)) == off.size, t["atom"]
        else:  # packed fp4: two elements per byte, every byte of the tile used
            assert len(np.unique(off)) == off.size // 2, t["atom"]


# PTX Tables 42-44 (tcgen05 instruction descriptor), as transcribed in /work/shared/spec.
T42_AB = {"tf32": {2: "tf32"}, "f16": {0: "f16", 1: "bf16"},
          "f8f6f4": {0: "e4m3", 1: "e5m2", 3: "e2m3", 4: "e3m2", 5: "e2m1"}, "i8": {0: "u8", 1: "s8"}}
T42_D = {"tf32": {1: "f32"}, "f16": {0: "f16", 1: "f32"}, "f8f6f4": {1: "f32"}, "i8": {2: "s32"}}
T43_AB = T42_AB["f8f6f4"]
T44_AB = {1: "e2m1"}
T4344_SF = {"mxf8f6f4": {1: "ue8m0"}, "mxf4": {1: "ue8m0"}, "mxf4nvf4": {0: "ue4m3", 1: "ue8m0"}}


def _f(v, lo, width):
    return v >> lo & ((1 << width) - 1)


def ptx_decode(value, kind):
    """Fields of a 32-bit instruction descriptor per PTX Tables 42-44; unknown codes read '?<code>',
    set reserved bits are listed under 'reserved'."""
    out = dict(sparse=_f(value, 2, 1), a_neg=_f(value, 13, 1), b_neg=_f(value, 14, 1),
               a_major="MN" if _f(value, 15, 1) else "K", b_major="MN" if _f(value, 16, 1) else "K",
               n=_f(value, 17, 6) << 3)
    if kind in T42_AB:
        codes = T42_AB[kind]
        out.update(sparse_id2=_f(value, 0, 2), saturate=_f(value, 3, 1),
                   d=T42_D[kind].get(_f(value, 4, 2), f"?{_f(value, 4, 2)}"),
                   a=codes.get(_f(value, 7, 3), f"?{_f(value, 7, 3)}"),
                   b=codes.get(_f(value, 10, 3), f"?{_f(value, 10, 3)}"),
                   m=_f(value, 24, 5) << 4, max_shift=_f(value, 30, 2))
        reserved = (6, 23, 29)
    else:
        fp4 = kind != "mxf8f6f4"
        codes = T44_AB if fp4 else T43_AB
        out.update(b_sf_id=_f(value, 4, 2), a=codes.get(_f(value, 7, 3), f"?{_f(value, 7, 3)}"),
                   b=codes.get(_f(value, 10, 2 if fp4 else 3), f"?{_f(value, 10, 3)}"),
                   sf=T4344_SF[kind].get(_f(value, 23, 1), f"?{_f(value, 23, 1)}"), m=_f(value, 27, 2) << 7,
                   a_sf_id=_f(value, 29, 2), d="f32")
        if fp4:
            out["k_size"] = _f(value, 31, 1)
        reserved = (0, 1, 3, 6, 24, 25, 26) + ((12,) if fp4 else (31,))
    out["reserved"] = [b for b in reserved if value >> b & 1]
    return out


def _ptx_disagreements(r):
    got = ptx_decode(r["value"], r["kind"])
    bad = {k: (r[k], got[k]) for k in got if k in r and k != "value" and got[k] != r[k]}
    if got["reserved"]:
        bad["reserved"] = got["reserved"]
    return bad


# Where CuTe's builders and the PTX text part ways (each with the reason); test_instr_ledger
# requires this list to be exactly what the oracle shows.
KNOWN = {
    # Table 42 lists only F32 = 1 as the D type of .kind::f8f6f4, but tcgen05.mma.kind::f8f6f4
    # accumulates into f16 too; CuTe encodes half_t as CFormat::F16 = 0, as for .kind::f16.
    "f8f6f4 f16 accumulator": lambda r, bad: r["kind"] == "f8f6f4" and r["d"] == "f16" and bad == {"d": ("f16", "?0")},
    # to_UMMAFormat<float_e2m1_t> (packed fp4) is MXF4Format::E2M1 = 1 whatever the kind, which
    # .kind::f8f6f4 reads as E5M2; f8f6f4 must be given float_e2m1_unpacksmem_t (code 5).
    "packed e2m1 in f8f6f4": lambda r, bad: r["a_cxx"] == "float_e2m1_t" and r["kind"] == "f8f6f4"
    and bad == {"a": ("e2m1", "e5m2"), "b": ("e2m1", "e5m2")},
    # CuTe's InstrDescriptorBlockScaled keeps sparse_id2_ in bits 0-1; Tables 43/44 mark them reserved.
    "block-scaled sparse selector": lambda r, bad: "sf" in r and r["sparse_id2"]
    and bad == {"reserved": [b for b in (0, 1) if r["sparse_id2"] >> b & 1]},
}


def _classify(r):
    bad = _ptx_disagreements(r)
    if not bad:
        return None
    for name, match in KNOWN.items():
        if match(r, bad):
            return name
    return f"UNEXPECTED {r['kind']} {r.get('a_cxx')}x{r.get('b_cxx')}: {bad}"


def test_instr_descriptors_follow_ptx_tables(oracle):
    unexpected = [c for c in map(_classify, oracle.instr) if c and c.startswith("UNEXPECTED")]
    assert not unexpected, "\n".join(unexpected[:20])


def test_instr_ledger(oracle):
    """Every known CuTe-vs-PTX-text disagreement still shows up (if one vanishes, CuTe changed)."""
    seen = collections.Counter(c for c in map(_classify, oracle.instr) if c)
    assert set(seen) == set(KNOWN), seen


def test_instr_grid_coverage(oracle):
    kinds = collections.Counter(r["kind"] for r in oracle.instr)
    assert set(kinds) == {"tf32", "f16", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4"}
    assert {r["m"] for r in oracle.instr} == {64, 128, 256}
    assert {r["n"] for r in oracle.instr} == set(range(8, 257, 8))
    assert {(r["a_sf_id"], r["b_sf_id"]) for r in oracle.instr if r["kind"] == "mxf8f6f4"} >= \
        {(a, b) for a in range(4) for b in range(4)}
    assert any(r.get("k_size") for r in oracle.instr) and any(r.get("max_shift") for r in oracle.instr)
    assert any(r.get("saturate") for r in oracle.instr) and any(r["sparse"] for r in oracle.instr)


# ---------------------------------------------------------------------------------------------
# tcemu against CuTe
# ---------------------------------------------------------------------------------------------
def _tcemu_attr(name, module):
    found = getattr(tcemu, name, None)
    if found is None:
        try:
            found = getattr(importlib.import_module(f"tcemu.{module}"), name, None)
        except ImportError:
            found = None
    if found is None:
        pytest.skip(f"tcemu has no {name} yet")
    return found


SWIZZLE_NAMES = {"INTER": "NONE", "SW32": "B32", "SW64": "B64", "SW128": "B128", "SW128_32B": "B128_BASE32B"}
# Layout-identical PTX types per storage width: CuTe tiles are built for one C++ type per width
# (tfloat32_t, half_t, float_e4m3_t, float_e2m1_t); the same offsets hold for every alias.
DTYPES = {"sm100": {32: ("tf32",), 16: ("f16", "bf16"), 8: ("e4m3", "e5m2", "s8", "u8", "e2m3", "e3m2"), 4: ("e2m1",)},
          "sm90": {32: ("tf32",), 16: ("f16", "bf16"), 8: ("e4m3", "e5m2", "s8", "u8"), 4: ()}}
GROUPS = [(arch, major, sw) for arch in ("sm100", "sm90") for major in ("K", "MN")
          for sw in ("INTER", "SW32", "SW64", "SW128", "SW128_32B")
          if not (sw == "SW128_32B" and (major == "K" or arch == "sm90"))]


def _records(oracle, arch, major, sw):
    out = [r for r in oracle.smem if r["arch"] == arch and r["tile"] >= 0
           and oracle.tile_of(r)["major"] == major and oracle.tile_of(r)["swizzle"] == sw]
    assert out, (arch, major, sw)
    return out


def _descriptor_class(arch):
    return _tcemu_attr("UmmaDescriptor", "descriptors") if arch == "sm100" else tcemu.GmmaDescriptor


@pytest.mark.parametrize("arch,major,sw", GROUPS, ids=["-".join(g) for g in GROUPS])
def test_tcemu_decodes_cute_descriptors(oracle, arch, major, sw):
    cls = _descriptor_class(arch)
    mode = getattr(tcemu.SwizzleMode, SWIZZLE_NAMES[sw])
    for r in _records(oracle, arch, major, sw):
        d = cls.decode(r["value"])
        got = dict(start_address=d.start_address, lbo=d.lbo, sbo=d.sbo, base_offset=d.base_offset, swizzle=d.swizzle)
        want = dict(start_address=r["start_address"], lbo=r["lbo"], sbo=r["sbo"], base_offset=r["base_offset"],
                    swizzle=mode)
        if arch == "sm100":
            got.update(version=d.version, lbo_mode=d.lbo_mode)
            want.update(version=r["version"], lbo_mode=r["lbo_mode"])
        assert got == want, r
        assert d.encode() == r["value"], r
        assert d.validate(arch, major=major) == [], r  # CuTe-built descriptors draw no findings


def test_tcemu_round_trips_lbo_mode_descriptors(oracle):
    cls = _descriptor_class("sm100")
    recs = [r for r in oracle.smem if r["how"] == "lbo_mode"]
    assert recs
    for r in recs:
        d = cls.decode(r["value"])
        assert (d.lbo_mode, d.lbo, d.start_address) == (1, r["lbo"], r["start_address"])
        assert d.encode() == r["value"]


@pytest.mark.parametrize("arch,major,sw", GROUPS, ids=["-".join(g) for g in GROUPS])
def test_tcemu_addresses_match_cute(oracle, arch, major, sw):
    """operand_addresses(desc) minus the window start (0: CuTe's host start address) equals CuTe's
    swizzled byte offset of every element, for every dtype of the tile's width."""
    _descriptor_class(arch)
    window_start = 0
    failures, skipped, checked = [], collections.Counter(), 0
    for r in _records(oracle, arch, major, sw):
        t = oracle.tile_of(r)
        want = oracle.sub_offsets(r)
        for dtype in DTYPES[arch][t["bits"]]:
            try:
                got = tcemu.operand_addresses(r["value"], rows=r["mm"], k=r["kk"], dtype=dtype, major=major, arch=arch)
            except tcemu.LayoutError as e:
                if dtype in ("e2m1", "e2m3", "e3m2"):  # fp4/fp6 not (yet) modelled: kept in the oracle
                    skipped[dtype] += 1
                    continue
                failures.append(f"{t['atom']} {dtype} {t['mn']}x{t['k']} base {t['base']} sub ({r['mn0']},{r['k0']}) "
                                f"{r['desc']}: raised {e}")
                continue
            checked += 1
            diff = np.argwhere(got - window_start != want)
            if len(diff):
                i, k = diff[0]
                failures.append(f"{t['atom']} {dtype} {t['mn']}x{t['k']} base {t['base']} sub ({r['mn0']},{r['k0']}) "
                                f"{r['mm']}x{r['kk']} {r['desc']}: {len(diff)} elements differ, first ({i},{k}): "
                                f"tcemu {int(got[i, k])} CuTe {int(want[i, k])}")
    assert checked or skipped
    assert not failures, f"{len(failures)} descriptors disagree:\n" + "\n".join(failures[:12])


def _expected_instr(r):
    exp = {"dtype_a": r["a"], "dtype_b": r["b"], "m": r["m"], "n": r["n"], "negate_a": bool(r["a_neg"]),
           "negate_b": bool(r["b_neg"]), "transpose_a": r["a_major"] == "MN", "transpose_b": r["b_major"] == "MN",
           "sparse": bool(r["sparse"])}
    if "sf" in r:
        exp.update(scale_type=r["sf"], a_scale_id=r["a_sf_id"], b_scale_id=r["b_sf_id"], k96=bool(r["k_size"]))
    else:
        exp.update(dtype_d=r["d"], saturate=bool(r["saturate"]), sparsity_selector=r["sparse_id2"],
                   max_shift=r["max_shift"])
    return exp


def _instr_decode(cls, value, kind):
    try:
        return cls.decode(value, kind)
    except TypeError:  # a decoder that needs no kind
        return cls.decode(value)


def _breaks_scale_vec_4x(r):
    """ue4m3 scales are .scale_vec::4X (PTX Table 54): four scale bytes fill the tensor-memory cell, so the ids
    must be 0 (PTX 9.7.16.10.7.2-3). CuTe's make_runtime_instr_desc_block_scaled encodes any id it is given."""
    return r.get("sf") == "ue4m3" and not r["k_size"] and (r["a_sf_id"] or r["b_sf_id"])


def _breaks_selector(r):
    """PTX 9.7.16.10.8.4.5-6: the sparsity selector must be 0 for .kind::i8 and .kind::f8f6f4 (CuTe's own
    S8 / F8F6F4 sparse atoms pass id2 = 0; the oracle hands make_runtime_instr_desc other values on purpose)."""
    return "sf" not in r and r["kind"] in ("i8", "f8f6f4") and r["sparse"] and r["sparse_id2"]


def test_tcemu_instr_descriptors_match_cute(oracle):
    cls = _tcemu_attr("InstrDescriptor", "instr")
    failures = []
    refused_4x = refused_sel = 0
    for r in oracle.instr:
        known = _classify(r)
        if known == "f8f6f4 f16 accumulator":
            known = None  # tcemu follows CuTe here (f16 D for f8f6f4), so compare as usual
        try:
            d = _instr_decode(cls, r["value"], r["kind"])
        except tcemu.TcemuError as e:
            if known == "block-scaled sparse selector":
                continue  # tcemu refuses reserved bits 0-1, as the PTX text has them
            if _breaks_scale_vec_4x(r) and e.field in ("a_scale_id", "b_scale_id") and "4X" in e.rule:
                refused_4x += 1
                continue
            if _breaks_selector(r) and e.field == "sparsity_selector" and "must be 0" in e.rule:
                refused_sel += 1
                continue
            failures.append(f"{r['kind']} {r['a_cxx']}x{r['b_cxx']} {r['value']:#010x}: raised {e}")
            continue
        exp = _expected_instr(r)
        if known == "packed e2m1 in f8f6f4":  # the value says E5M2; tcemu must read it so
            exp.update(dtype_a="e5m2", dtype_b="e5m2")
        got = {k: getattr(d, k) for k in exp}
        if got != exp:
            failures.append(f"{r['kind']} {r['a_cxx']}x{r['b_cxx']} M={r['m']} N={r['n']} {r['value']:#010x}: "
                            f"{ {k: (exp[k], got[k]) for k in exp if got[k] != exp[k]} }")
        if d.encode() != r["value"]:
            failures.append(f"{r['kind']} {r['value']:#010x}: encode gives {d.encode():#010x}")
    assert not failures, f"{len(failures)} disagree:\n" + "\n".join(failures[:20])
    assert refused_4x == sum(1 for r in oracle.instr if _breaks_scale_vec_4x(r)) > 0
    assert refused_sel == sum(1 for r in oracle.instr if _breaks_selector(r)) == 2


# ---------------------------------------------------------------------------------------------
# sm103: K = 96 through LBO mode 1, as CuTe's sm103 mainloop issues it
# ---------------------------------------------------------------------------------------------
def test_sm103_lbo_mode_reads_cutes_k_blocks(oracle):
    """CuTe's sm103 block-scaled mainloop lays three 128-byte K stages of A (and B) in K-major 128B-swizzled
    shared memory and issues eight K = 96 (48-byte) MMAs over them; MMAs 2 and 5 start 96 bytes into a stage,
    so their 48 bytes run into the next stage, whose start CuTe writes into the LBO field with LBO mode 1
    (SM103::mma_unpack). tcemu's reading of LBO mode 1 (addressing.py) must give, element by element, the bytes
    CuTe's own layout holds for K bytes [48 j, 48 j + 48) of the stages laid end to end; mode 0 must not
    (it would read the start's next 128-byte line)."""
    from dataclasses import replace
    tiles = {r["mn"]: np.asarray(r["offsets"], np.int64).reshape(3, r["mn"], 128)
             for r in oracle.sm103 if r["rec"] == "sm103_tile"}
    descs = [r for r in oracle.sm103 if r["rec"] == "sm103_desc"]
    assert sorted(tiles) == [128, 256] and len(descs) == 16
    crossing = 0
    for r in descs:
        mn, j = r["mn"], r["mma"]
        want = np.concatenate(list(tiles[mn]), axis=1)[:, 48 * j + np.arange(96) // 2]  # packed e2m1: its byte
        d = tcemu.UmmaDescriptor.decode(int(r["desc"], 16))
        assert d.lbo_mode == 1 and d.validate("sm103", major="K") == [], r
        got = tcemu.operand_addresses(d, rows=mn, k=96, dtype="e2m1", arch="sm103")
        assert np.array_equal(got, want), r
        if r["kblock"] > 5:  # the read crosses into the next stage: LBO mode 0 reads something else
            crossing += 1
            mode0 = tcemu.operand_addresses(replace(d, lbo_mode=0, lbo=16), rows=mn, k=96, dtype="e2m1", arch="sm103")
            assert not np.array_equal(mode0, want)
    assert crossing == 4
