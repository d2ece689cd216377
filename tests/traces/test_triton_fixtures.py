"""The Triton kernel fixtures (tests/fixtures/ptx), the capture drivers' planning and the input generator
(tcemu.triton's specialisation rules: tests/frontends/test_triton.py).

No GPU and no Triton: the PTX and json files are read as text, the capture scripts run in --dry-run mode.
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
from tcemu.frontends import triton as TT
from tcemu.core.errors import TcemuError

from paths import CAPTURE, PTX_FIXTURES, source_is_unchanged

FIX = Path(PTX_FIXTURES)
sys.path.insert(0, CAPTURE)
import capture_kernels as CK  # noqa: E402
import capture_torch_gemm as CT  # noqa: E402
import capture_sfu_kernels as CS  # noqa: E402

SM90 = sorted(CK.FIXTURES)
# tests/sfu/test_triton_sfu_kernels.py checks them
SFU = sorted({ln["fixture"] for c in CS.CASES for ln in c["launches"]})
SM100 = ["matmul_bf16_sm100", "matmul_e4m3_sm100", "matmul_tma_bf16_ws_sm100"]
MMA_SYNC = ["dot_mma_sync_f16"]   # tests/ptx/test_mma_sync.py runs it (a tl.dot Triton lowers to mma.sync)
ELEMENTWISE = ["add_f32"]         # tests/ptx/test_triton_elementwise.py runs it (tutorial 01)
M64 = (1 << 64) - 1


def _meta(name):
    return json.loads((FIX / f"{name}.json").read_text())


# ------------------------------------------------------------------ fixtures on disk

def test_fixture_set_is_exactly_the_listed_kernels():
    """Every Triton fixture on disk is one the captures, the sm100, the mma.sync or the elementwise list name, with
    its PTX (other fixture families, nvcc's and CUTLASS's, share the folder and carry no "triton" key)."""
    triton = sorted(p.stem for p in FIX.glob("*.json") if "triton" in json.loads(p.read_text()))
    assert triton == sorted(SM90 + SM100 + SFU + MMA_SYNC + ELEMENTWISE)
    assert all((FIX / f"{name}.ptx").exists() for name in triton)


@pytest.mark.parametrize("name", SM90 + SM100)
def test_fixture_sha256_and_target(name):
    meta = _meta(name)
    ptx = (FIX / f"{name}.ptx").read_bytes()
    assert hashlib.sha256(ptx).hexdigest() == meta["ptx_sha256"]
    want = "sm_90a" if name in SM90 else "sm_100a"
    assert re.search(rb"^\.target\s+" + want.encode() + rb"\s*$", ptx, re.M)
    assert meta["arch"] == ("sm90" if name in SM90 else "sm100")
    assert meta["triton"] and meta["command"].startswith("PYTHONPATH=. python scripts/triton_kernels.py")
    assert meta["block"] == [32 * meta["num_warps"], 1, 1]
    # rebuilt since the kernels' source last changed (the PTX carries its line numbers)
    assert source_is_unchanged("scripts/triton_kernels.py", meta["source_sha256"])


def _ptx_params(ptx):
    """Independent reading of the .entry parameter list: [(name, bytes)] from the declarations."""
    head = re.search(r"\.entry\s+(\w+)\(\s*(.*?)\)", ptx, re.S)
    out = []
    for decl in head.group(2).split(","):
        words = decl.split()
        name = words[-1]
        arr = re.match(r"(\w+)\[(\d+)\]$", name)
        if arr:
            assert ".b8" in words
            out.append((arr.group(1), int(arr.group(2))))
        else:
            width = {".u32": 4, ".b32": 4, ".s32": 4, ".u64": 8, ".b64": 8, ".s64": 8, ".f32": 4}
            out.append((name, [width[w] for w in words if w in width][0]))
    return head.group(1), out


@pytest.mark.parametrize("name", SM90 + SM100)
def test_param_list_matches_ptx(name):
    meta = _meta(name)
    entry, params = _ptx_params((FIX / f"{name}.ptx").read_text())
    assert entry == meta["entry"]
    assert [(p["ptx_name"], p["bytes"]) for p in meta["params"]] == params
    assert [p["index"] for p in meta["params"]] == list(range(len(params)))
    # roles: declared non-constexpr arguments in order (a tensordesc expands to map, shape i32 x r, strides
    # i64 x r), then the two scratch pointers
    expect = []
    for arg, ty in meta["signature"].items():
        if ty == "constexpr":
            continue
        if ty.startswith("tensordesc"):
            r = ty.count(",") + 1
            expect += [("tensormap", arg, 128)] + [("tensormap_shape", arg, 4)] * r + [("tensormap_stride", arg, 8)] * r
        else:
            expect.append(("pointer" if ty.startswith("*") else "scalar", arg, 8 if ty[0] in "*" or ty == "i64" else 4))
    expect += [("global_scratch", None, 8), ("profile_scratch", None, 8)]
    assert [(p["role"], p["arg"], p["bytes"]) for p in meta["params"]] == expect
    for p in meta["params"]:
        if p["role"] == "tensormap":
            assert ".align 64" in p["decl"] and p["align"] == 64


def test_bf16_kernel_uses_cp_async_and_wgmma_n256():
    ptx = (FIX / "matmul_bf16.ptx").read_text()
    assert len(re.findall(r"^\s*(?:@%p\d+\s+)?cp\.async\.cg\.shared\.global \[", ptx, re.M)) == 36
    assert len(re.findall(r"^\s*wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.bf16\.bf16 ", ptx, re.M)) == 4
    assert not re.search(r"ld\.global(\.\w+)*\.b16", ptx)
    census = _meta("matmul_bf16")["opcode_census"]
    assert census["cp.async.cg.shared.global"] == 36
    assert census["wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"] == 4
    e4m3 = (FIX / "matmul_e4m3.ptx").read_text()
    assert len(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n256k32\.f32\.e4m3\.e4m3 ", e4m3)) == 4


def test_census_counts_every_instruction_line():
    # every instruction of these kernels sits on its own line: count lines that start with an opcode
    for name in ("matmul_bf16", "matmul_tma_bf16", "matmul_dtma_bf16"):
        ptx = (FIX / f"{name}.ptx").read_text()
        lines, depth = [], 0
        for ln in ptx[ptx.index("{", ptx.index(".entry")):].splitlines():
            depth += ln.count("{") - ln.count("}")   # inline-asm scopes nest inside the entry's braces
            if re.match(r"\s*(@!?%?\w+\s+)?[a-z]", ln) and not ln.rstrip().endswith(":"):
                lines.append(ln)
            if depth == 0:
                break
        assert sum(TT.opcode_census(ptx).values()) == sum(_meta(name)["opcode_census"].values()) == len(lines)


def test_tma_fixtures_declare_tensor_maps_and_scratch():
    host, dev = _meta("matmul_tma_bf16"), _meta("matmul_dtma_bf16")
    assert [p["role"] for p in host["params"]].count("tensormap") == 3
    assert [d["block_size"] for d in host["tensordesc_meta"]] == [[128, 64], [256, 64], [128, 64]]
    assert host["global_scratch_size"] == 0
    assert dev["global_scratch_size"] == 3 * 128 and dev["global_scratch_align"] >= 64   # 3 tensor maps per CTA
    assert "tensormap.replace" in (FIX / "matmul_dtma_bf16.ptx").read_text()
    ws = (FIX / "matmul_tma_bf16_ws_sm100.ptx").read_text()
    assert "setmaxnreg" in ws and "tcgen05.mma" in ws


# ------------------------------------------------------------------ specialisation

@pytest.mark.parametrize("case", CK.CASES, ids=lambda c: f"{c[0]}-{c[1]}x{c[2]}x{c[3]}")
def test_each_case_launches_its_fixture_specialisation(case):
    meta = _meta(case[0])
    p = CK.plan(case[0], *case[1:], meta)
    CK.check_specialisation(p, meta)          # raises if a real launch would compile something else
    bm, bn = meta["constexprs"]["BLOCK_M"], meta["constexprs"]["BLOCK_N"]
    assert p["grid"] == [-(-case[1] // bm) * -(-case[2] // bn), 1, 1]


def test_specialisation_mismatch_is_refused():
    meta = _meta("matmul_bf16")
    p = CK.plan("matmul_bf16", 256, 256, 200, meta)     # K = 200: a launch compiles matmul_bf16_k200
    with pytest.raises(CK.CaseError, match="K = 200 specialises as plain"):
        CK.check_specialisation(p, meta)


# ------------------------------------------------------------------ input generator

def _ref_word(seed, stream, i):
    def mix(z):
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & M64
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB & M64
        return z ^ (z >> 31)
    key = mix(seed ^ mix(stream + 1))
    return mix((key + (i + 1) * 0x9E3779B97F4A7C15) & M64)


def _ref_bits(fmt, seed, stream, n):
    """Plain-Python statement of the generator rule in tcemu/traces/inputs.py's docstring."""
    width, ebits, mbits, bias = {"bf16": (16, 8, 7, 127), "f16": (16, 5, 10, 15), "f32": (32, 8, 23, 127),
                                 "e4m3": (8, 4, 3, 7)}[fmt]
    out = []
    for i in range(n):
        w = _ref_word(seed, stream, i)
        sign = (w >> 5) & 1
        if w & 31 == 0:
            out.append(sign << (width - 1))
            continue
        e = ((w >> 8) & 0xFFFF) % 9 - 4 + bias
        out.append(sign << (width - 1) | e << mbits | (w >> 32) & ((1 << mbits) - 1))
    return out


def test_splitmix_vectors():
    # splitmix64 from state 0 gives 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4 (Vigna's splitmix64.c)
    g = np.array([0x9E3779B97F4A7C15, 0x3C6EF372FE94F82A], np.uint64)
    assert [int(x) for x in KI.mix64(g)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4]


@pytest.mark.parametrize("fmt", ["bf16", "f16", "f32", "e4m3"])
def test_generator_matches_plain_python(fmt):
    for seed, stream in ((0, 0), (2026, 1), (M64, 7), (1 << 63, 0)):
        got = KI.input_bits(fmt, (5, 61), seed, stream)
        assert got.shape == (5, 61) and got.dtype == KI.FORMATS[fmt][0]
        assert [int(x) for x in got.ravel()] == _ref_bits(fmt, seed, stream, 305)


def test_generator_copies_agree():
    rng = np.random.default_rng(5)
    for _ in range(40):
        seed = int(rng.integers(0, 2**63)) * int(rng.integers(1, 3))
        stream = int(rng.integers(0, 5))
        shape = tuple(int(x) for x in rng.integers(1, 70, size=int(rng.integers(1, 4))))
        for fmt in KI.FORMATS:
            a = KI.input_bits(fmt, shape, seed, stream)
            b = CK.input_bits(fmt, shape, seed, stream)
            assert a.dtype == b.dtype and np.array_equal(a, b)
    assert CK.FORMATS == KI.FORMATS and CK.WINDOW == KI.WINDOW


def test_generator_values():
    e4 = KI.input_bits("e4m3", (1 << 16,), 3, 1)
    assert not np.any((e4 & 0x7F) == 0x7F)                         # never NaN
    vals = e4.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    nz = vals[vals != 0]
    assert 2.0**-4 <= np.abs(nz).min() and np.abs(nz).max() < 2.0**5
    zeros = np.count_nonzero(vals == 0)
    assert 1500 < zeros < 2600                                        # 1/32 of 65536 = 2048
    assert np.count_nonzero(e4 == 0x80) > 500                        # -0 among them
    f32 = KI.input_bits("f32", (4096,), 9, 0)
    assert len(np.unique(f32 & 0x1FFF)) > 3000                        # low 13 bits (tf32 drops them) vary
    with pytest.raises(TcemuError):
        KI.input_bits("e5m2", (4,), 0, 0)


# ------------------------------------------------------------------ dry runs of the capture scripts

def test_kernel_capture_dry_run_records_failures(tmp_path, monkeypatch):
    kernels = tmp_path / "k"
    kernels.mkdir()
    (kernels / "matmul_bf16_n300.cubin").write_bytes(b"not the fixture's cubin")
    monkeypatch.setattr(sys, "argv", ["capture_kernels.py", "--out", str(tmp_path), "--dry-run",
                                      "--only", "matmul_bf16_n300,matmul_f16", "--kernels", str(kernels)])
    CK.main()
    z = np.load(tmp_path / "triton_kernels_sm90.npz", allow_pickle=False)
    cases = json.loads(z["meta"].tobytes())["cases"]
    assert [(c["fixture"], c["status"]) for c in cases] == [("matmul_bf16_n300", "error")] + [("matmul_f16", "ok")] * 2
    assert "sha256 differs" in cases[0]["error"]
    assert z["status"].tolist() == [1, 0, 0]
    sizes = np.diff(z["offsets"]).tolist()
    assert sizes == [0] + [c["M"] * c["N"] * 2 for c in cases[1:]]


def test_kernel_capture_dry_run_round_trip(tmp_path, monkeypatch):
    only = ("matmul_bf16_n300", "matmul_e4m3", "matmul_tf32", "matmul_tma_bf16")
    monkeypatch.setattr(sys, "argv", ["capture_kernels.py", "--out", str(tmp_path), "--dry-run",
                                      "--only", ",".join(only), "--kernels", str(tmp_path / "none")])
    CK.main()
    z = np.load(tmp_path / "triton_kernels_sm90.npz", allow_pickle=False)
    meta = json.loads(z["meta"].tobytes())
    assert meta["kind"] == "kernel_outputs" and meta["format"] == "tcemu-trace" and meta["dry_run"]
    assert [(c["fixture"], c["M"], c["N"], c["K"]) for c in meta["cases"]] == [c for c in CK.CASES if c[0] in only]
    mld = {"bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn, "f32": np.float32, "f16": np.float16}
    for i, c in enumerate(meta["cases"]):
        assert c["status"] == "ok" and c["deterministic"] and c["poison_left"] == 0 and c["guard_clobbered"] == 0
        assert z["grid"][i].tolist() == c["grid"] and int(z["seed"][i]) == c["seed"]
        m, n, k = c["M"], c["N"], c["K"]
        a_in, b_in = c["inputs"]
        a = KI.input_bits(a_in["dtype"], a_in["shape"], c["seed"], 0).view(mld[a_in["dtype"]]).astype(np.float64)
        b = KI.input_bits(b_in["dtype"], b_in["shape"], c["seed"], 1).view(mld[b_in["dtype"]]).astype(np.float64)
        kmajor = CK.FIXTURES[c["fixture"]]["b_layout"] == "NK"
        assert b_in["shape"] == ([n, k] if kmajor else [k, n])
        ref = (a @ (b.T if kmajor else b)).astype(mld[c["output"]["dtype"]])   # the dry run's stand-in rule
        got = z["bits"][z["offsets"][i]:z["offsets"][i + 1]]
        assert got.tobytes() == ref.tobytes()
        scal = {p["arg"]: p["value"] for p in c["params"] if p["role"] == "scalar"}
        assert (scal["M"], scal["N"], scal["K"]) == (m, n, k)
        if c["fixture"] == "matmul_tf32":      # stride_am, stride_bk, stride_cm; unit strides are constexpr
            assert (scal["stride_am"], scal["stride_bk"], scal["stride_cm"]) == (k, n, n)
        if c["fixture"] == "matmul_e4m3":      # B (N, K): stride_bn = K, stride_bk = 1 is constexpr
            assert (scal["stride_am"], scal["stride_bn"], scal["stride_cm"]) == (k, k, n)
    tma = [c for c in meta["cases"] if c["fixture"] == "matmul_tma_bf16" and c["N"] == 400][0]
    shapes = [p["value"] for p in tma["params"] if p["role"] == "tensormap_shape"]
    strides = [p["value"] for p in tma["params"] if p["role"] == "tensormap_stride"]
    assert shapes == [384, 208, 400, 208, 384, 400] and strides == [208, 1, 208, 1, 400, 1]
    enc = {t["arg"]: t["encode"] for t in tma["tensormaps"]}
    assert enc["a_desc"]["dims"] == [208, 384] and enc["a_desc"]["strides_bytes"] == [416]
    assert enc["b_desc"]["dims"] == [208, 400] and enc["c_desc"]["dims"] == [400, 384]
    assert [enc[x]["box"] for x in ("a_desc", "b_desc", "c_desc")] == [[64, 128], [64, 256], [64, 128]]
    assert (enc["a_desc"]["dtype"], enc["c_desc"]["dtype"], enc["a_desc"]["swizzle"]) == (9, 6, 3)  # bf16, f16, 128B
    assert enc["a_desc"]["address"] == tma["buffers"]["a"]["address"]
    blob = bytes.fromhex(tma["param_blob"])
    assert int.from_bytes(blob[128:132], "little") == 384        # a_desc shape[0] right after the 128-byte map


def test_tensor_map_small_tensor_fix():
    tm = {"elem_size": 2, "elem_type": 10, "block_size": [128, 64], "swizzle": 3}
    small = CK.tiled_encode_args(tm, 0x1000, [128, 64], [64, 1], 13000)     # 16 KiB
    assert small["clear_bit21_of_word1"]
    assert not CK.tiled_encode_args(tm, 0x1000, [128, 64], [64, 1], 13020)["clear_bit21_of_word1"]
    # Triton's test is (last element's byte offset) + 1 < 128 KiB: 255 * 2 + 255 * 512 + 1 = 131071 (applies),
    # 263 * 2 + 255 * 528 + 1 = 135167 (does not)
    assert CK.tiled_encode_args(tm, 0x1000, [256, 256], [256, 1], 13000)["clear_bit21_of_word1"]
    assert not CK.tiled_encode_args(tm, 0x1000, [256, 264], [264, 1], 13000)["clear_bit21_of_word1"]
    with pytest.raises(CK.CaseError, match="multiples of 16"):
        CK.tiled_encode_args(tm, 0x1000, [128, 60], [60, 1], 13000)


def test_torch_capture_dry_run_round_trip(tmp_path, monkeypatch):
    monkeypatch.setattr(CT, "SHAPES", [(128, 128, 128), (200, 136, 72)])
    monkeypatch.setattr(CT, "STORE_ROWS_LIMIT", 128 * 64)
    monkeypatch.setattr(sys, "argv", ["capture_torch_gemm.py", "--out", str(tmp_path), "--dry-run"])
    CT.main()
    z = np.load(tmp_path / "torch_gemm_sm90.npz", allow_pickle=False)
    meta = json.loads(z["meta"].tobytes())
    assert meta["kind"] == "gemm_outputs" and len(meta["cases"]) == 2 * len(CT.VARIANTS)
    for i, c in enumerate(meta["cases"]):
        assert c["status"] == "ok"
        stored = z["bits"][z["offsets"][i]:z["offsets"][i + 1]]
        rows = z["stored_rows"][i]
        assert rows == (128 * 64 // c["N"] if c["M"] * c["N"] > 128 * 64 else c["M"])   # 128x128: 64 rows; 200x136: 60
        assert stored.size == rows * c["N"] * CT.OUT_BYTES[c["out"]]
        dig = z["row_digests"][z["digest_offsets"][i]:z["digest_offsets"][i + 1]]
        assert dig.size == c["M"]
        per = stored.reshape(rows, -1)
        for r in (0, rows - 1):
            assert int(dig[r]) == int.from_bytes(hashlib.blake2b(per[r].tobytes(), digest_size=8).digest(), "little")


