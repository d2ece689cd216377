"""CUTLASS / CuTe sm_90a fixtures (tests/fixtures/ptx/cutlass_*), their launch records, their CPU replay
(tcemu.launches) and the GPU capture's dry run (scripts/capture_cutlass.py).

No GPU and no nvcc: the PTX and json are read as text. References are built from tcemu's fused-dot model
(tcemu.arith.fdp, what tcemu.wgmma computes per instruction), independently of the PTX interpreter under test.
"""
import hashlib
import json
import re
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tcemu.traces import inputs as KI
from tcemu.traces import launches as L
from tcemu import ptx as tptx
from tcemu.ptx.program import Program
from tcemu.arith.fdp import decode_operand, fused_dot
from tcemu.hopper.wgmma import K_OF, fdp_unit

from paths import CAPTURE, PTX_FIXTURES, source_is_unchanged

FIX = Path(PTX_FIXTURES)
sys.path.insert(0, CAPTURE)
import capture_cutlass as CC  # noqa: E402

NAMES = ["cutlass_cute_tutorial", "cutlass_ws_bf16", "cutlass_pingpong_bf16", "cutlass_coop_bf16_2x1",
         "cutlass_fp8_fastaccum", "cutlass_fp8_promote"]
FAKE_LO, FAKE_HI = 0x00F0000000000000, 0x00F1000000000000   # scripts/cutlass/fake_cuda.cpp
# CUtensorMapDataType (cuda.h)
UINT8, UINT16, FLOAT16, FLOAT32, BFLOAT16 = 0, 1, 6, 7, 9


def _meta(name):
    return json.loads((FIX / f"{name}.json").read_text())


def _launch(name, case):
    recs = [r for r in _meta(name)["launches"] if r["case"] == case]
    assert len(recs) == 1
    return recs[0]


# ------------------------------------------------------------------ fixture files

def test_fixture_set():
    # the kernels that need approximate special functions are tests/sfu/test_cutlass_sfu_kernels.py's
    assert sorted(p.stem for p in FIX.glob("cutlass_*.json")) == sorted(NAMES + CC.SFU_FIXTURES)
    assert sorted(p.stem for p in FIX.glob("cutlass_*.ptx")) == sorted(NAMES + CC.SFU_FIXTURES)
    assert CC.FIXTURES == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_fixture_provenance(name):
    meta = _meta(name)
    ptx = (FIX / f"{name}.ptx").read_bytes()
    assert hashlib.sha256(ptx).hexdigest() == meta["ptx_sha256"] and len(ptx) == meta["ptx_bytes"] < 300_000
    assert re.search(rb"^\.target\s+sm_90a\s*$", ptx, re.M)
    assert "13.0" in meta["versions"]["nvcc"] and meta["versions"]["nvidia_cutlass_wheel"]
    cmd = meta["commands"]
    assert "-gencode=arch=compute_90a,code=sm_90a" in cmd["ptx"] and "--expt-relaxed-constexpr" in cmd["ptx"]
    assert "-std=c++17" in cmd["ptx"] and " -ptx " in cmd["ptx"] and cmd["cubin"].startswith("ptxas -arch=sm_90a")
    assert "-cudart none" in cmd["builder"] and "scripts/cutlass/fake_cuda.cpp" in cmd["builder"]
    # rebuilt since any capture source last changed
    for src, digest in meta["sources_sha256"].items():
        assert source_is_unchanged(src, digest), src
    if name == "cutlass_cute_tutorial":   # the wheel's tutorial, compiled unmodified
        assert meta["ptx_source"] == "cutlass_library/source/examples/cute/tutorial/hopper/wgmma_tma_sm90.cu"
        try:
            import cutlass_library
        except ImportError:
            return
        src = Path(cutlass_library.__file__).parent / "source" / "examples/cute/tutorial/hopper/wgmma_tma_sm90.cu"
        if src.exists():
            assert hashlib.sha256(src.read_bytes()).hexdigest() == meta["ptx_source_sha256"]


def _entry_text(ptx, entry):
    """The entry's parameter list and body, read independently of tcemu (brace matching)."""
    m = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*\((.*?)\)\s*(?:\.\w+[^{]*)?\{", ptx, re.S)
    depth, i = 1, m.end()
    while depth:
        depth += {"{": 1, "}": -1}.get(ptx[i], 0)
        i += 1
    return m.group(1), ptx[m.end():i - 1]


@pytest.mark.parametrize("name", NAMES)
def test_entries_and_census(name):
    meta = _meta(name)
    ptx = (FIX / f"{name}.ptx").read_text()
    assert meta["entries"] == re.findall(r"\.entry\s+([\w$]+)\s*\(", ptx)
    used = {r["entry"] for r in meta["launches"]}
    for entry in used:
        _, body = _entry_text(ptx, entry)
        census = meta["opcode_census"][entry]
        for op, pat in (("wgmma", r"^\s*wgmma\.mma_async\.\S+"),
                        ("tma", r"^\s*(?:@!?%p\d+\s+)?cp\.async\.bulk\.tensor\S*")):
            lines = re.findall(pat, body, re.M)
            keys = [k for k in census if k.startswith("wgmma.mma_async" if op == "wgmma" else "cp.async.bulk.tensor")]
            assert sum(census[k] for k in keys) == len(lines) > 0, (op, entry[:40])
    if name == "cutlass_cute_tutorial":   # NT and TN gemm_device (and cub's empty kernel)
        assert len(meta["entries"]) == 3 and len(used) == 2
        for entry in used:   # one k-tile unrolled: 128x128x64 / m64n64k16 = 2 x 2 x 4
            assert meta["opcode_census"][entry]["wgmma.mma_async.sync.aligned.m64n64k16.f16.f16.f16"] == 16
    else:
        assert len(meta["entries"]) == 1


# ------------------------------------------------------------------ launch records

def _ptx_param_layout(plist):
    """[(name, offset, bytes)] of a .param list: arrays at their .align, scalars at their width."""
    out, off = [], 0
    for decl in plist.split(","):
        w = decl.split()
        name = w[-1]
        width = int(re.search(r"\.[bsuf](8|16|32|64)\b", decl).group(1)) // 8
        arr = re.match(r"([\w$]+)\[(\d+)\]$", name)
        if arr:
            name, size = arr.group(1), width * int(arr.group(2))
            align = int(re.search(r"\.align\s+(\d+)", decl).group(1))
        else:
            size = align = width
        off = -(-off // align) * align
        out.append((name, off, size))
        off += size
    return out


@pytest.mark.parametrize("name", NAMES)
def test_record_layout_matches_ptx(name):
    meta = _meta(name)
    text = (FIX / f"{name}.ptx").read_text()
    mod = tptx.load(text)
    for rec in meta["launches"]:
        plist, _ = _entry_text(text, rec["entry"])
        layout = _ptx_param_layout(plist)
        assert [(p["name"], p["offset"], p["bytes"]) for p in rec["params"]] == layout
        blob = bytes.fromhex(rec["param_blob"])
        assert len(blob) == rec["param_bytes"] == layout[-1][1] + layout[-1][2]
        prog = Program(mod.tree.functions[rec["entry"]], {})   # the interpreter's layout of the same list
        assert prog.param_size == len(blob)
        assert [prog.symbols[n].address for n, _, _ in layout] == [o for _, o, _ in layout]


@pytest.mark.parametrize("name", NAMES)
def test_record_pointers_and_maps(name):
    for rec in _meta(name)["launches"]:
        blob = bytes.fromhex(rec["param_blob"])
        bufs = {b["name"]: b for b in rec["buffers"]}
        maps = {t["offset"]: t["encode"] for t in rec["tensormaps"]}
        for off, idx in maps.items():
            assert off % 64 == 0 and blob[off:off + 8] == b"tcTMAPph"
            assert int.from_bytes(blob[off + 8:off + 12], "little") == idx
            assert all(blob[off + j] == 0xA5 ^ j ^ idx for j in range(12, 128))
        assert sorted(maps.values()) == list(range(len(rec["encodes"])))   # every encode is in the blob once
        # every 8-byte word in the fake address zone is a recorded pointer
        in_map = {off + j for off in maps for j in range(128)}
        zone = {o: int.from_bytes(blob[o:o + 8], "little") for o in range(0, len(blob) - 7, 8) if o not in in_map}
        zone = {o: v for o, v in zone.items() if FAKE_LO <= v < FAKE_HI}
        assert zone == {p["offset"]: bufs[p["buffer"]]["address"] + p["delta"] for p in rec["pointers"]}
        for e in rec["encodes"]:
            assert e["address"] == bufs[e["buffer"]]["address"] + e["delta"]
        # cleared padding (bits no host code wrote) never touches a pointer or a map
        undefined = {i: 0xFF for a, b in rec["undefined_bytes"] for i in range(a, b)}
        undefined.update({i: m for i, m in rec["undefined_bits"]})
        assert not set(undefined) & (in_map | {p["offset"] + j for p in rec["pointers"] for j in range(8)})
        assert all(blob[i] & m == 0 for i, m in undefined.items())
        addrs = sorted(b["address"] for b in rec["buffers"])
        assert all(a % 256 == 0 and FAKE_LO <= a < FAKE_HI for a in addrs) and len(set(addrs)) == len(addrs)


def test_gemm_records_hand_derived():
    # KernelTmaWarpSpecialized 128x128x64: one producer and one consumer warpgroup, one CTA per tile. A (M, K)
    # and B (N, K) bf16 K-major: TMA dim 0 is K (contiguous), row pitch 2K bytes, the batch mode of extent 1 has
    # stride 0; the box is a 64-element (128-byte, the 128B swizzle span) by 128-row tile. CUTLASS passes MMA
    # operands to TMA as raw 16-bit words (UINT16) and D as BFLOAT16.
    r = _launch("cutlass_ws_bf16", [200, 136, 200])
    assert (r["grid"], r["block"], r["cluster"], r["launch_api"]) == ([2, 2, 1], [256, 1, 1], [1, 1, 1], "<<<>>>")
    a, b, d = r["encodes"]
    assert (a["buffer"], a["dtype"], a["dims"], a["strides_bytes"], a["box"], a["swizzle"]) == \
        ("A", UINT16, [200, 200, 1], [400, 0], [64, 128, 1], 3)
    assert (b["buffer"], b["dtype"], b["dims"], b["strides_bytes"], b["box"]) == \
        ("B", UINT16, [200, 136, 1], [400, 0], [64, 128, 1])
    assert (d["buffer"], d["dtype"], d["dims"], d["strides_bytes"]) == ("D", BFLOAT16, [136, 200, 1], [272, 0])
    assert r["pointers"] == [] and r["attributes"] == [f"MaxDynamicSharedMemorySize={r['shared_bytes']}"]
    # Pingpong 64x128x64: a producer and two consumer warpgroups (384 threads); persistent, one CTA per tile
    # while the 132 SMs outnumber the (256/64) x (256/128) = 8 tiles; f32 D rows are 4N bytes
    r = _launch("cutlass_pingpong_bf16", [256, 256, 256])
    assert r["block"] == [384, 1, 1] and int(np.prod(r["grid"])) == 8 and r["cluster"] == [1, 1, 1]
    assert (r["encodes"][2]["dtype"], r["encodes"][2]["strides_bytes"]) == (FLOAT32, [1024, 0])
    # Cooperative on 2x1 clusters: the two CTAs of a cluster share B's tile, each loads half of it (64 of 128
    # rows) and multicasts it; launched with a cluster-dimension attribute
    r = _launch("cutlass_coop_bf16_2x1", [384, 128, 128])
    assert (r["block"], r["cluster"], r["cluster_attribute"], r["launch_api"]) == \
        ([384, 1, 1], [2, 1, 1], True, "cudaLaunchKernelExC")
    assert r["grid"][0] % 2 == 0 and [e["box"] for e in r["encodes"][:2]] == [[64, 128, 1], [64, 64, 1]]
    assert "NonPortableClusterSizeAllowed=1" in r["attributes"]
    # fp8: 128 e4m3 = 128 bytes of K per box row, raw bytes (UINT8)
    for name in ("cutlass_fp8_fastaccum", "cutlass_fp8_promote"):
        r = _launch(name, [200, 136, 336])
        assert [(e["dtype"], e["box"], e["dims"]) for e in r["encodes"][:2]] == \
            [(UINT8, [128, 128, 1], [336, 200, 1]), (UINT8, [128, 128, 1], [336, 136, 1])]
        assert r["encodes"][2]["dtype"] == FLOAT32 and r["notes"]["tile"] == [128, 128, 128]
    assert _launch("cutlass_fp8_promote", [256, 256, 512])["notes"]["mma_promotion_interval"] == 4


def test_tutorial_records_hand_derived():
    # gemm_nt / gemm_tn: 128x128x64 CTA tiles, 3 stages, 2x1 clusters, grid (round_up(ceil(M/128), 2),
    # ceil(N/128)); shared storage 2 x 128x64x3 halves + 2 x 3 mbarriers = 98352 bytes, 128-aligned: 98432
    for case in (["NT", 256, 256, 256], ["NT", 256, 128, 200], ["TN", 256, 256, 256], ["TN", 256, 128, 200]):
        r = _launch("cutlass_cute_tutorial", case)
        m, n, k = case[1:]
        assert r["grid"] == [2, n // 128, 1] and r["block"] == [128, 1, 1] and r["cluster"] == [2, 1, 1]
        assert r["shared_bytes"] == 98432 and r["cluster_attribute"]
        assert [(p["buffer"], p["delta"]) for p in r["pointers"]] == [("A", 0), ("B", 0), ("C", 0)]
        a, b = r["encodes"]
        if case[0] == "NT":   # MN-major: A is (K, M) in memory, the 128B-swizzle atom is 64 M x 8 K
            assert (a["dims"], a["strides_bytes"], a["box"]) == ([m, k], [2 * m], [64, 8])
            assert (b["dims"], b["strides_bytes"], b["box"]) == ([n, k], [2 * n], [64, 8])
        else:                 # K-major: 64 K (128 bytes) x 128 rows
            assert (a["dims"], a["strides_bytes"], a["box"]) == ([k, m], [2 * k], [64, 128])
            assert (b["dims"], b["strides_bytes"], b["box"]) == ([k, n], [2 * k], [64, 128])
        assert {a["dtype"], b["dtype"], a["swizzle"], b["swizzle"]} == {FLOAT16, 3}
        assert [b_["role"] for b_ in r["buffers"]] == ["input", "input", "output"]


# ------------------------------------------------------------------ references from tcemu's instruction model

def _chain(a, b, dt, dd, c0=None):
    """wgmma's arithmetic chained over K: a (M, K), b (N, K) raw bits, K a multiple of the instruction's K;
    the first step adds c0 (None: no C, scale-d 0, as CUTLASS's mainloops issue it)."""
    k, unit, acc = K_OF[dt], fdp_unit(dt, dd), c0
    for s in range(0, a.shape[1], k):
        acc = fused_dot(decode_operand(a[:, s:s + k], dt), decode_operand(b[:, s:s + k], dt),
                        None if acc is None else decode_operand(acc, dd), unit)
    return acc


def _gemm_reference(name, rec, seed):
    """D of a CUTLASS GEMM record: K zero-padded to the CTA k-tile (TMA fills out-of-bounds elements with
    zeros), the fp8 promote kernel's two levels (mma_promotion_interval / (k-tile / 32) k-tiles of wgmma into
    fresh accumulators, then an f32 add into registers that start at +0), D rounded to nearest even."""
    a = KI.input_bits(rec["buffers"][0]["dtype"], rec["buffers"][0]["storage"], seed, 0)
    b = KI.input_bits(rec["buffers"][1]["dtype"], rec["buffers"][1]["storage"], seed, 1)
    dt, kt = rec["buffers"][0]["dtype"], rec["notes"]["tile"][2]
    pad = -a.shape[1] % kt
    a, b = np.pad(a, ((0, 0), (0, pad))), np.pad(b, ((0, 0), (0, pad)))
    if name == "cutlass_fp8_promote":
        span = kt * (rec["notes"]["mma_promotion_interval"] // (kt // K_OF[dt]))
        acc = np.zeros((a.shape[0], b.shape[0]), np.float32)
        for s in range(0, a.shape[1], span):
            acc = acc + _chain(a[:, s:s + span], b[:, s:s + span], dt, "f32").view(np.float32)
        acc = acc.view(np.uint32)
    else:
        acc = _chain(a, b, dt, "f32")
    if rec["buffers"][2]["dtype"] == "bf16":
        return acc.view(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    return acc


def _tutorial_reference(rec, seed):
    """C (N, M storage) of the tutorial: f16 accumulators cleared to +0 and every wgmma adding them (CuTe's
    default scale-d 1), K zero-padded to 64, then axpby with beta = 0: C = alpha * acc, alpha = 1."""
    A = KI.input_bits("f16", rec["buffers"][0]["storage"], seed, 0)
    B = KI.input_bits("f16", rec["buffers"][1]["storage"], seed, 1)
    a, b = (A.T, B.T) if rec["notes"]["layout"] == "NT" else (A, B)
    pad = -a.shape[1] % 64
    a, b = np.pad(a, ((0, 0), (0, pad))), np.pad(b, ((0, 0), (0, pad)))
    acc = _chain(a, b, "f16", "f16", c0=np.zeros((a.shape[0], b.shape[0]), np.uint16))
    return np.ascontiguousarray((acc.view(np.float16) * np.float16(1)).view(np.uint16).T)


_REPLAYS = {}


def _replayed(name, case, seed=7):
    key = (name, tuple(case), seed)
    if key not in _REPLAYS:
        _REPLAYS[key] = L.replay(_launch(name, case), (FIX / f"{name}.ptx").read_text(), seed=seed)
    return _REPLAYS[key]


RUNNABLE = [("cutlass_ws_bf16", [200, 136, 200]), ("cutlass_pingpong_bf16", [200, 136, 200]),
            ("cutlass_fp8_fastaccum", [200, 136, 336]), ("cutlass_fp8_promote", [200, 136, 336])]


@pytest.mark.parametrize("name,case", RUNNABLE, ids=lambda x: x if isinstance(x, str) else "x".join(map(str, x)))
@pytest.mark.slow
def test_replay_equals_wgmma_chain(name, case):
    rec = _launch(name, case)
    out = _replayed(name, case)
    d = out.outputs["D"]
    assert d.shape == tuple(rec["buffers"][2]["storage"])
    assert np.array_equal(d, _gemm_reference(name, rec, 7))
    assert out.stats["ctas"] == int(np.prod(rec["grid"]))


@pytest.mark.slow
def test_pingpong_wgmmas_run_as_batches(monkeypatch):
    # the ping-pong consumers' wgmmas run through the batch path (ops/wgmma_gang.py), whole warpgroups at a time
    # since warps gang up at every turn (machine.run_ctas); warps that reach a wgmma apart are
    # test_gang_wgmma.py's; the bits stay the wgmma chain's
    from tcemu.ptx.ops.wgmma_gang import GangMma
    seen = {"runs": 0, "joined": 0}
    real = GangMma.run

    def spy(self, groups):
        seen["runs"] += 1
        seen["joined"] += sum(bool((cta.collectives.get((wg, self.key)) or [()])[0]) for cta, wg, _ in groups)
        return real(self, groups)
    monkeypatch.setattr(GangMma, "run", spy)
    name, case = "cutlass_pingpong_bf16", [200, 136, 200]
    rec = _launch(name, case)
    out = L.replay(rec, (FIX / f"{name}.ptx").read_text(), seed=7)
    assert np.array_equal(out.outputs["D"], _gemm_reference(name, rec, 7))
    assert seen["runs"] > 0 and seen["joined"] == 0


@pytest.mark.slow
def test_fp8_promotion_changes_the_bits():
    """Issue 15: CUTLASS's default fp8 kernel and its fast-accumulation twin give different bits for the same
    inputs, each exactly its own accumulation model."""
    case = [200, 136, 336]
    fast, promote = (_replayed(n, case).outputs["D"] for n in ("cutlass_fp8_fastaccum", "cutlass_fp8_promote"))
    ref_fast = _gemm_reference("cutlass_fp8_fastaccum", _launch("cutlass_fp8_fastaccum", case), 7)
    ref_promote = _gemm_reference("cutlass_fp8_promote", _launch("cutlass_fp8_promote", case), 7)
    assert np.array_equal(fast, ref_fast) and np.array_equal(promote, ref_promote)
    differ = int(np.count_nonzero(fast != promote))
    assert differ == int(np.count_nonzero(ref_fast != ref_promote)) and differ > fast.size // 2


@pytest.mark.parametrize("case", [["NT", 256, 128, 200], ["TN", 256, 128, 200]], ids=lambda c: c[0])
@pytest.mark.slow
def test_tutorial_replay(case):
    rec = _launch("cutlass_cute_tutorial", case)
    out = L.replay(rec, (FIX / "cutlass_cute_tutorial.ptx").read_text(), seed=7)
    assert np.array_equal(out.outputs["C"], _tutorial_reference(rec, 7))


@pytest.mark.slow
def test_cooperative_2x1_replay():
    rec = _launch("cutlass_coop_bf16_2x1", [200, 136, 200])
    out = L.replay(rec, (FIX / "cutlass_coop_bf16_2x1.ptx").read_text(), seed=7)
    assert np.array_equal(out.outputs["D"], _gemm_reference("cutlass_coop_bf16_2x1", rec, 7))


# ------------------------------------------------------------------ replay input checks

def test_replay_refuses_inconsistent_records():
    rec = _launch("cutlass_cute_tutorial", ["NT", 256, 128, 200])
    text = (FIX / "cutlass_cute_tutorial.ptx").read_text()
    bad = json.loads(json.dumps(rec))
    bad["pointers"][0]["delta"] = 16                 # the blob holds A + 0
    with pytest.raises(L.LaunchRecordError, match="blob offset"):
        L.blob_for(bad)
    bad = json.loads(json.dumps(rec))
    bad["params"][1]["offset"] += 4
    with pytest.raises(L.LaunchRecordError, match="offset"):
        L.replay(bad, tptx.load(text))
    mod = tptx.load(text)   # its kernel compiled: the record's layout is checked against that Program's
    mod.program(rec["entry"])
    with pytest.raises(L.LaunchRecordError, match="offset"):
        L.replay(bad, mod)
    bad = json.loads(json.dumps(rec))
    bad["encodes"][0]["box"] = [64, 8, 1]
    with pytest.raises(L.LaunchRecordError, match="rank"):
        L.blob_for(bad)
    bad = json.loads(json.dumps(rec))
    bad["buffers"][0]["bytes"] += 2
    with pytest.raises(L.LaunchRecordError, match="storage"):
        L.input_arrays(bad, 0)
    with pytest.raises(L.LaunchRecordError, match="inputs"):
        L.input_arrays(rec, 0, {"A": np.zeros((3, 3), np.uint16)})
    with pytest.raises(L.LaunchRecordError, match="not input buffers"):
        L.input_arrays(rec, 0, {"C": np.zeros((128, 256), np.uint16)})


def test_replay_maps_in_tcemu_format():
    rec = _launch("cutlass_ws_bf16", [200, 136, 200])
    blob = L.blob_for(rec)
    from tcemu.ptx.tensormap import decode
    tm = decode(blob[128:256])
    assert (tm.global_dim, tm.global_stride, tm.box_dim, tm.swizzle, tm.elemtype) == \
        ([200, 200, 1], [400, 0], [64, 128, 1], 3, 1)          # u16 (PTX code 1) from CUtensorMapDataType UINT16
    assert tm.global_address == rec["buffers"][0]["address"]
    arrays = L.input_arrays(rec, 3)
    assert np.array_equal(arrays["A"], KI.input_bits("bf16", (200, 200), 3, 0))
    assert np.array_equal(arrays["B"], KI.input_bits("bf16", (136, 200), 3, 1))
    assert arrays["D"].dtype == np.uint16 and np.all(arrays["D"] == 0xFFFF)


# ------------------------------------------------------------------ the GPU capture, dry run

@pytest.mark.slow
def test_capture_dry_run_and_trace_replay(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["capture_cutlass.py", "--out", str(tmp_path), "--dry-run",
                                      "--kernels", str(tmp_path / "none")])
    CC.main()
    from tcemu.core.errors import TraceError
    from tcemu.traces import Trace
    z = np.load(tmp_path / "cutlass_kernels_sm90.npz", allow_pickle=False)
    meta = json.loads(z["meta"].tobytes())
    cols = {k: z[k] for k in z.files if k != "meta"}
    assert meta["kind"] == "launch_outputs" and meta["dry_run"] and meta["format"] == "tcemu-trace"
    expect = [(n, j) for n in NAMES for j in range(len(_meta(n)["launches"]))]
    assert [(c["fixture"], c["launch"]) for c in meta["cases"]] == expect
    for i, c in enumerate(meta["cases"]):
        rec = _meta(c["fixture"])["launches"][c["launch"]]
        assert c["status"] == "ok" and c["deterministic"] and c["poison_left"] == 0 and c["guard_clobbered"] == 0
        blob = bytes.fromhex(c["param_blob"])
        addrs = {k: v["address"] for k, v in c["buffers"].items()}
        for p in rec["pointers"]:
            assert int.from_bytes(blob[p["offset"]:p["offset"] + 8], "little") == addrs[p["buffer"]] + p["delta"]
        for t in c["tensormaps"]:          # the dry-run driver's maps are zeros; the encode carries the real address
            assert blob[t["offset"]:t["offset"] + 128] == bytes(128)
            assert t["encode"]["address"] == addrs[t["encode"]["buffer"]] + t["encode"]["delta"]
        got = z["bits"][z["offsets"][i]:z["offsets"][i + 1]]
        out = [b for b in rec["buffers"] if b["role"] == "output"][0]
        assert got.size == out["bytes"] and c["output"]["buffer"] == out["name"]
        # the dry run's stand-in: float64 products rounded to the output type
        kinds = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "e4m3": ml_dtypes.float8_e4m3fn}
        dec = {b["name"]: KI.input_bits(b["dtype"], b["storage"], c["seed"], k).view(kinds[b["dtype"]])
               .astype(np.float64) for k, b in enumerate(rec["buffers"]) if b["role"] == "input"}
        if c["fixture"] == "cutlass_cute_tutorial":
            a, b = (dec["A"].T, dec["B"].T) if rec["notes"]["layout"] == "NT" else (dec["A"], dec["B"])
            want = (a @ b.T).T.astype(np.float16)
        else:
            want = (dec["A"] @ dec["B"].T).astype(np.float32)      # bf16 stand-ins round through f32, as the script
            want = want.astype(ml_dtypes.bfloat16) if out["dtype"] == "bf16" else want
        assert got.tobytes() == np.ascontiguousarray(want).tobytes()
    # the trace carries its fixtures; tcemu replays a case from the trace alone
    i = expect.index(("cutlass_ws_bf16", 1))
    trace = Trace(str(tmp_path / "cutlass_kernels_sm90.npz"), meta, cols)
    ptx, fixture = L.trace_fixture(trace, "cutlass_ws_bf16")
    assert ptx == (FIX / "cutlass_ws_bf16.ptx").read_text() and fixture == _meta("cutlass_ws_bf16")
    mine = L.replay_trace_case(trace, i, ctas=[(1, 1, 0)]).view(np.uint16).reshape(200, 136)   # the corner tile only
    rec = _meta("cutlass_ws_bf16")["launches"][1]
    ref = _gemm_reference("cutlass_ws_bf16", rec, meta["cases"][i]["seed"])
    assert np.array_equal(mine[128:, 128:], ref[128:, 128:])          # rows 128..199, columns 128..135
    mine[128:, 128:] = 0xFFFF
    assert np.all(mine == 0xFFFF)                                      # no other CTA ran
    cols["fixture_cutlass_ws_bf16_json"] = cols["fixture_cutlass_ws_bf16_json"][:-1]
    with pytest.raises(TraceError, match="sha256"):    # the trace reader's check (tcemu/traces/archive.py)
        L.trace_fixture(Trace("t", meta, cols), "cutlass_ws_bf16")


def test_capture_plan_refuses_broken_records():
    rec = _launch("cutlass_ws_bf16", [200, 136, 200])
    bufs, blob, outs = CC.plan(rec)
    assert [b["name"] for b in bufs] == ["A", "B", "D"] and [o["name"] for o in outs] == ["D"]
    assert len(blob) == rec["param_bytes"]
    bad = json.loads(json.dumps(rec))
    bad["tensormaps"][0]["offset"] += 64
    with pytest.raises(CC.CaseError, match="placeholder"):
        CC.plan(bad)
    bad = json.loads(json.dumps(rec))
    bad["buffers"][2]["role"] = "input"
    with pytest.raises(CC.CaseError, match="at least one output"):
        CC.plan(bad)
    e = dict(rec["encodes"][0], strides_bytes=[408, 0])
    with pytest.raises(CC.CaseError, match="multiples of 16"):
        CC.check_encode(e, 0x1000)
    with pytest.raises(CC.CaseError, match="16-byte aligned"):
        CC.check_encode(rec["encodes"][0], 0x1008)
    assert CC.launch_attributes(_launch("cutlass_coop_bf16_2x1", [200, 136, 200])) == ([2, 1, 1], [])
    assert CC.func_attributes(_launch("cutlass_cute_tutorial", ["NT", 256, 256, 256])) == [
        ("CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1),
        ("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 98432)]


def test_a_replay_of_a_compiled_kernel_makes_no_program_to_check_the_layout(monkeypatch):
    """The record's .param layout is the compiled kernel's where the module has compiled it (a second replay of one
    module had built a Program for it again: 16 ms of CUTLASS ping-pong's replay on the VM)."""
    from tcemu.traces import records
    rec = _launch("cutlass_cute_tutorial", ["NT", 256, 128, 200])
    mod = tptx.load((FIX / "cutlass_cute_tutorial.ptx").read_text())
    made = []
    program = records.Program
    monkeypatch.setattr(records, "Program", lambda *a: made.append(a) or program(*a))
    first = L.replay(rec, mod).outputs
    assert len(made) == 1   # before the module compiles the kernel
    again = L.replay(rec, mod).outputs
    assert len(made) == 1 and all(np.array_equal(first[k], again[k]) for k in first)
