"""Whole sm_100a kernels on the PTX interpreter (tcgen05, tensor memory): Triton's matmuls (bf16, e4m3, the
warp-specialised host-TMA kernel, tl.dot_scaled mxfp8 / mxfp4 / nvfp4) and the CuTe Blackwell tutorials 01-04.

Nothing here has met Blackwell silicon (README, "Blackwell"). Each run is compared with
  (a) numpy float64 on the decoded inputs, within the bound the formats allow (each tcgen05.mma step's fused sum is
      truncated below 2^(E - F), F = 25 (35 for mxf4*), at most K_step + 1 terms, then rounded toward zero to f32: per
      step at most 2^-18 of the sum of |products|; plus half an ulp where the kernel rounds to f16), and
  (b) exact bits: a chain of tcemu.tcgen05_mma calls over K in instruction steps, in order, the first without C, on
      plain (unswizzled) tiles laid into a fresh SharedMemory: the instruction-level model composed by hand for the same
      tiles, without the interpreter; then the kernel's epilogue arithmetic (f32 -> f16 to nearest even; alpha acc
      + beta C) in numpy.
Planted bugs (edits of the fixture PTX) must each be reported at the instruction that makes them.
"""
import json
import os
import re

import ml_dtypes
import numpy as np
import pytest

import tcemu.ptx as tp
from tcemu import InstrDescriptor, SharedMemory, UmmaDescriptor, tcgen05_mma
from tcemu.traces.inputs import input_bits
from tcemu.traces.kinds.kernel_outputs import _tensor_map
from tcemu.frontends.triton import opcode_census, run_compiled

from ptxkit import matmul_args
from paths import PTX_FIXTURES, current_path, source_is_unchanged

FX = PTX_FIXTURES
SM100 = os.path.join(FX, "sm100")
K_STEP = {"f16": 16, "f8f6f4": 32, "mxf8f6f4": 32, "mxf4": 64, "mxf4nvf4": 64}
BITS = {"bf16": 16, "f16": 16, "e4m3": 8, "e2m1": 4}
E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6])


def _read(folder, name):
    with open(os.path.join(folder, name + ".json")) as f:
        meta = json.load(f)
    with open(os.path.join(folder, name + ".ptx")) as f:
        return meta, f.read()


# ------------------------------------------------------------------------------------------------ the reference

def _plain(address, rows, k, dtype):
    """A no-swizzle K-major UMMA descriptor for a dense (rows, k) tile at `address`: 8 x 16-byte core matrices,
    LBO 128 bytes between K chunks, SBO between 8-row groups (PTX 9.7.16.3.3, canonical K-major, no swizzle)."""
    chunks = k * BITS[dtype] // 128
    return UmmaDescriptor(start_address=address, lbo=128, sbo=128 * chunks, swizzle="none", version=1)


def chain(kind, dtype, a, b, sa=None, sb=None, block=None, scale_type="ue8m0"):
    """D (M, N) f32 bits of A (M, K) x B (N, K)^T as the kernels issue it: tcgen05.mma over K in instruction steps, in
    order, the first without C; 128 x 256 output tiles (the arithmetic of an output does not depend on the tile)."""
    M, K = a.shape
    N = b.shape[0]
    step = K_STEP[kind]
    out = np.zeros((M, N), np.uint32)
    for m0 in range(0, M, 128):
        for n0 in range(0, N, 256):
            nn = min(256, N - n0)
            acc = None
            for k0 in range(0, K, step):
                smem = SharedMemory("sm100")
                da = _plain(0x400, 128, step, dtype)
                db = _plain(0x400 + 128 * step * BITS[dtype] // 8, nn, step, dtype)
                smem.write_operand(da, a[m0:m0 + 128, k0:k0 + step], dtype=dtype)
                smem.write_operand(db, b[n0:n0 + nn, k0:k0 + step], dtype=dtype)
                kw = {}
                if sa is not None:
                    kw = dict(scale_a=sa[m0:m0 + 128, k0 // block:(k0 + step) // block],
                              scale_b=sb[n0:n0 + nn, k0 // block:(k0 + step) // block], block_size_k=block)
                idesc = InstrDescriptor(kind, dtype, dtype, m=128, n=nn,
                                        **({"scale_type": scale_type} if sa is not None else {}))
                acc = tcgen05_mma(smem, da, db, idesc, c=acc, **kw)
            out[m0:m0 + 128, n0:n0 + nn] = acc.view(np.uint32)
    return out


def _decoded(bits, dtype):
    if dtype == "e2m1":
        return E2M1[bits]
    return bits.view({"bf16": ml_dtypes.bfloat16, "f16": np.float16, "e4m3": ml_dtypes.float8_e4m3fn}[dtype]) \
        .astype(np.float64)


def check_numpy(got_f64, a, b, K_step, extra=0.0, sa=None, sb=None):
    """(a): |got - A B^T| within the per-step bound (module text) plus `extra` (a rounding of the output)."""
    ref = a @ b.T
    steps = a.shape[1] // K_step
    bound = steps * 2.0 ** -18 * (np.abs(a) @ np.abs(b).T) + extra * np.abs(ref) + 1e-30
    err = np.abs(got_f64 - ref)
    assert (err <= bound).all(), f"worst error {err.max()} against a bound of {bound.flat[np.argmax(err - bound)]}"


def f16_of(f32_bits):
    return f32_bits.view(np.float32).astype(np.float16).view(np.uint16)   # cvt.rn.f16x2.f32


# ------------------------------------------------------------------------------------------------ Triton fixtures

TRITON = {"bf16": ("matmul_bf16_sm100", "f16", "bf16"), "e4m3": ("matmul_e4m3_sm100", "f8f6f4", "e4m3"),
          "ws": ("matmul_tma_bf16_ws_sm100", "f16", "bf16")}
STORE = {"bf16": "bf16", "fp16": "f16", "fp8e4nv": "e4m3"}


def launch_triton(name, M, N, K, edit=None, **kw):
    meta, ptx = _read(FX, name)
    if edit is not None:
        edited = edit(ptx)
        assert edited != ptx, "the planted bug did not apply"
        ptx = edited
    sig = meta["signature"]
    ta = STORE[(sig.get("a_ptr") or sig["a_desc"]).split("<")[-1].lstrip("*").split("[")[0]]
    kn = "stride_bk" in sig and sig.get("stride_bn") == "constexpr"
    a = input_bits(ta, (M, K), 11, 0)
    b = input_bits(ta, (K, N) if kn else (N, K), 11, 1)
    c = np.zeros((M, N), np.uint16)
    vals = matmul_args(meta, a, b, c, M, N, K, kn)
    stats = run_compiled(ptx, meta, vals, **kw)
    return a, (b.T.copy() if kn else b), c, ta, stats


@pytest.mark.parametrize("which,M,N,K", [("bf16", 128, 256, 192), ("bf16", 256, 512, 64), ("e4m3", 128, 256, 256),
                                          ("ws", 128, 256, 192), ("ws", 256, 256, 64)])
@pytest.mark.slow
def test_triton_fixture_equals_tcgen05_chain(which, M, N, K):
    name, kind, dtype = TRITON[which]
    a, b_nk, c, ta, stats = launch_triton(name, M, N, K)
    assert stats["ctas"] == (M // 128) * (N // 256)
    acc = chain(kind, dtype, a, b_nk)
    assert np.array_equal(c, f16_of(acc))                                                   # (b) every bit
    check_numpy(c.view(np.float16).astype(np.float64), _decoded(a, dtype), _decoded(b_nk, dtype), K_STEP[kind],
                extra=2.0 ** -11)                                                          # (a)


SCALED = {"mxfp8": ("scaled_mxfp8_sm100", "mxf8f6f4", "e4m3", 32, "ue8m0"),
          "mxfp4": ("scaled_mxfp4_sm100", "mxf4", "e2m1", 32, "ue8m0"),
          "nvfp4": ("scaled_nvfp4_sm100", "mxf4nvf4", "e2m1", 16, "ue4m3")}


def _scaled_inputs(dtype, block, stype, M, N, K, seed=5):
    rng = np.random.default_rng(seed)
    if dtype == "e4m3":   # every finite e4m3 (0x7f / 0xff are NaN)
        a, b = (rng.integers(0, 256, shape, dtype=np.uint8) for shape in ((M, K), (N, K)))
        a[(a & 0x7F) == 0x7F], b[(b & 0x7F) == 0x7F] = 0x38, 0xB8
        packed = a, b
    else:                 # e2m1 nibbles, element 2i in the low nibble of byte i (Triton's packing)
        a, b = (rng.integers(0, 16, shape, dtype=np.uint8) for shape in ((M, K), (N, K)))
        packed = tuple((x[:, 0::2] | x[:, 1::2] << 4).astype(np.uint8) for x in (a, b))
    lo, hi = (120, 134) if stype == "ue8m0" else (0x20, 0x50)   # 2^-7..2^6; ue4m3 0.03..3
    sa, sb = (rng.integers(lo, hi, (r, K // block), dtype=np.uint8) for r in (M, N))
    return a, b, packed, sa, sb


def _scale_values(s, stype):
    return np.exp2(s.astype(np.float64) - 127) if stype == "ue8m0" else _decoded(s & 0x7F, "e4m3")


@pytest.mark.parametrize("fmt", sorted(SCALED))
@pytest.mark.slow
def test_triton_dot_scaled_equals_tcgen05_chain(fmt):
    name, kind, dtype, block, stype = SCALED[fmt]
    M, N, K = 128, 128, 256
    meta, ptx = _read(SM100, name)
    assert f"tcgen05.mma.cta_group::1.kind::{kind}.block_scale.block{block}" in meta["opcode_census"]
    a, b, (pa, pb), sa, sb = _scaled_inputs(dtype, block, stype, M, N, K)
    out = np.zeros((M, N), np.uint32)
    run_compiled(ptx, meta, {"a_ptr": pa, "b_ptr": pb, "sa_ptr": sa, "sb_ptr": sb, "c_ptr": out, "M": M, "N": N,
                             "K": K})
    assert np.array_equal(out, chain(kind, dtype, a, b, sa, sb, block, stype))                   # (b)
    A = _decoded(a, dtype) * np.repeat(_scale_values(sa, stype), block, 1)
    B = _decoded(b, dtype) * np.repeat(_scale_values(sb, stype), block, 1)
    check_numpy(out.view(np.float32).astype(np.float64), A, B, K_STEP[kind])                      # (a)


# ------------------------------------------------------------------------------------------------ CuTe tutorials

CUTE = ["cute_mma_sm100", "cute_mma_tma_sm100", "cute_mma_tma_multicast_sm100", "cute_mma_tma_2sm_sm100"]


def launch_cute(name, case, edit=None, **kw):
    meta, ptx = _read(SM100, name)
    if edit is not None:
        edited = edit(ptx)
        assert edited != ptx, "the planted bug did not apply"
        ptx = edited
    blob = bytearray.fromhex(case["param_blob"])
    for t in case["tensormaps"]:
        blob[t["offset"]:t["offset"] + 128] = _tensor_map(case["encodes"][t["encode"]]).to_bytes()
    M, N, K = case["M"], case["N"], case["K"]
    arrays = {"A": input_bits("f16", (M, K), 3, 0), "B": input_bits("f16", (N, K), 3, 1),
              "C": input_bits("f32", (M, N), 3, 2), "D": np.full((M, N), 0xFFFFFFFF, np.uint32)}
    mod = tp.load(ptx)
    stats = mod.launch(meta["entry"], grid=tuple(case["grid"]), block=tuple(case["block"]),
                       cluster=tuple(case["cluster"]), shared_bytes=case["shared_bytes"], param_bytes=bytes(blob),
                       buffers=[(case["buffers"][k], arrays[k]) for k in "ABCD"], **kw)
    return arrays, stats


def _cases():
    out = []
    for name in CUTE:
        meta, _ = _read(SM100, name)
        out += [pytest.param(name, i, id=f"{name}-{c['M']}x{c['N']}x{c['K']}-a{c['alpha']:g}b{c['beta']:g}")
                for i, c in enumerate(meta["cases"])]
    return out


@pytest.mark.parametrize("name,i", _cases())
@pytest.mark.slow
def test_cute_tutorial_equals_tcgen05_chain(name, i):
    meta, _ = _read(SM100, name)
    case = meta["cases"][i]
    arrays, stats = launch_cute(name, case)
    A, B, C, D = (arrays[k] for k in "ABCD")
    acc = chain("f16", "f16", A, B).view(np.float32)
    alpha, beta = np.float32(case["alpha"]), np.float32(case["beta"])
    # the tutorials' epilogue: beta == 0: alpha * acc (mul.f32); else fma(alpha, acc, beta * C), here with beta = 1 and
    # alpha = 2, both products exact, so one float32 addition rounds as the fma does
    assert beta in (0, 1)
    want = alpha * acc if beta == 0 else alpha * acc + C.view(np.float32)
    assert np.array_equal(D, want.astype(np.float32).view(np.uint32))                          # (b)
    check_numpy((D.view(np.float32).astype(np.float64) - float(beta) * C.view(np.float32)) / float(alpha),
                _decoded(A, "f16"), _decoded(B, "f16"), 16, extra=2.0 ** -23)                   # (a)


def test_cute_fixtures_differ_from_the_shipped_tutorials_only_in_printing():
    """The fixtures compile the tutorials with print/printf made no-ops: every opcode the shipped file's kernel uses,
    other than the printing (vprintf calls, their parameter and local stores, and the address arithmetic feeding them),
    appears as often in the fixture."""
    kernel_ops = re.compile(r"^(tcgen05|mbarrier|cp\.|bar|fence|elect|ld\.global|st\.global|ld\.shared|st\.shared|"
                            r"fma|mul\.f32|mul\.rn\.f32)")
    for name in CUTE + ["cute_mma_nofence_sm100"]:
        meta, _ = _read(SM100, name)
        kept, shipped = meta["opcode_census"], meta["opcode_census_shipped"]
        assert "call.uni" in shipped and "call.uni" not in kept
        fenced = name == "cute_mma_sm100"
        for op in set(kept) | set(shipped):
            if kernel_ops.match(op) and not (fenced and op == "fence.proxy.async.shared::cta"):
                assert kept.get(op) == shipped.get(op), (name, op, kept.get(op), shipped.get(op))
        assert not fenced or kept["fence.proxy.async.shared::cta"] > shipped.get("fence.proxy.async.shared::cta", 0)


def test_tutorial_01_as_shipped_misses_the_async_proxy_fence():
    """Tutorial 01 writes A and B with st.shared (generic proxy) and hands them to tcgen05.mma (async proxy) after
    __syncthreads() alone; PTX 9.7.16.6.5 wants fence.proxy.async between (a finding of tcemu, not a test artefact)."""
    meta, _ = _read(SM100, "cute_mma_nofence_sm100")
    with pytest.raises(tp.HazardError) as e:
        launch_cute("cute_mma_nofence_sm100", meta["cases"][0])
    msg = str(e.value)
    assert "tcgen05.mma.cta_group::1.kind::f16" in msg and "no fence.proxy.async since" in msg
    assert "CTA (0, 0, 0), warp 0" in msg


# ------------------------------------------------------------------------------------------------ planted bugs

def sub(old, new, count=1):
    def edit(ptx):
        assert old in ptx, old
        return ptx.replace(old, new, count)
    return edit


def drop_wait(barrier_reg, phase_reg):
    """An mbarrier spin loop whose wait always succeeds (the thread goes on without observing the phase)."""
    return sub(f"mbarrier.try_wait.parity.shared::cta.b64 complete, [{barrier_reg}], {phase_reg};",
               "setp.eq.u32 complete, 0, 0;")


# (fixture, M, N, K, edit, error class, phrases the message must contain)
PLANTED = {
    # the epilogue's wait on the commit's mbarrier removed: tcgen05.ld reads D before the MMAs are known complete
    "tcgen05.ld before the commit's phase": ("bf16", 128, 256, 64, drop_wait("%r683", "%r684"), tp.HazardError,
                                             ["tcgen05.ld reads tensor memory lane", "written by tcgen05.mma",
                                              "issued by thread 0 (warp 0)", "(phase 0), which warp "]),
    # every thread of the warp issues the MMAs (the elect.sync guard dropped): 32 unordered MMAs on one accumulator
    "two threads' MMAs on one accumulator": ("bf16", 128, 256, 64,
                                             sub("@%p23 tcgen05.mma.cta_group::1.kind::f16 [ %r428 + 0 ], %rd74",
                                                 "tcgen05.mma.cta_group::1.kind::f16 [ %r428 + 0 ], %rd74"),
                                             tp.HazardError, ["tcgen05.mma accumulates into tensor memory",
                                                              "issued by thread 0", "no tcgen05.commit tracks it"]),
    # the zeroing tcgen05.st not waited for before the first MMA reads over it
    "tcgen05.st not waited for": ("bf16", 128, 256, 64, sub("tcgen05.wait::st.sync.aligned;", ""), tp.HazardError,
                                  ["tcgen05.mma accumulates into tensor memory", "tcgen05.wait::st first"]),
    # the epilogue's lane base loses its sub-partition: warps 1-3 read lanes 0-31
    "tcgen05.ld outside the warp's sub-partition": ("bf16", 128, 256, 64,
                                                    sub("and.b32 \t%r123, %r122, 6291456;", "mov.b32 \t%r123, 0;"),
                                                    tp.MemoryFault, ["touches tensor-memory lane 0: warp",
                                                                     "of its warpgroup and may access lanes"]),
    "missing proxy fence before tcgen05.mma": ("bf16", 128, 256, 64, sub("fence.proxy.async.shared::cta;", "", 2),
                                               tp.HazardError, ["tcgen05.mma operand", "no fence.proxy.async since"]),
    "tensor memory never deallocated": ("bf16", 128, 256, 64,
                                       sub("@%p1 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r428, 256;", ""),
                                       tp.KernelFault, ["256 tensor-memory columns", "still allocated"]),
    # the MMA warp of the warp-specialised kernel skips its wait for the TMA data of stage 0: in tcemu's schedule it
    # runs before the load warp issued the TMA, and reads the stage's old bytes (the tcgen05.alloc slot, written by a
    # generic store)
    "MMA warp skips the TMA barrier": ("ws", 128, 256, 64, drop_wait("%r40", "%r41"), tp.HazardError,
                                       ["@%p16 tcgen05.mma", "warp 10 (tcgen05.mma operand A) reads shared address",
                                        "written by a TMA that completes phase 0 of the mbarrier at 0x244a0",
                                        "has not observed that phase"]),
    # the same in the steady state (K block 1): the TMA is done, but the MMA warp never observed its phase
    "MMA warp skips a later TMA barrier": ("ws", 128, 256, 128, drop_wait("%r56", "%r485"), tp.HazardError,
                                           ["tcgen05.mma operand", "written by a TMA that completes phase 0 of the "
                                            "mbarrier at 0x244a8", "warp 10", "has not observed that phase"]),
    # the epilogue's commit and its wait both removed: no commit tracks the last MMAs when tcgen05.ld reads D
    "no commit before the epilogue": ("bf16", 128, 256, 64,
                                      lambda p: drop_wait("%r683", "%r684")(p.replace(
                                          "@%p23 tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 "
                                          "[%r148];", "")), tp.HazardError,
                                      ["tcgen05.ld reads tensor memory lane", "no tcgen05.commit tracks it yet"]),
}


@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_planted_kernel_bug_is_reported(bug):
    which, M, N, K, edit, error, phrases = PLANTED[bug]
    with pytest.raises(error) as e:
        launch_triton(TRITON[which][0], M, N, K, edit)
    msg = str(e.value)
    for phrase in phrases:
        assert phrase in msg, msg
    assert "CTA (0, 0, 0)" in msg
    assert "line " in msg or "exits with" in msg   # the instruction, or (at exit) the CTA


# ------------------------------------------------------------------------------------------------ the fixtures

def test_sm100_fixtures_are_what_their_json_says():
    import hashlib
    names = sorted(p[:-5] for p in os.listdir(SM100) if p.endswith(".json"))
    assert names == sorted(CUTE + ["cute_mma_nofence_sm100"] + [v[0] for v in SCALED.values()])
    for name in names:
        meta, ptx = _read(SM100, name)
        assert hashlib.sha256(ptx.encode()).hexdigest() == meta["ptx_sha256"]
        assert re.search(r"^\.target\s+sm_100a\s*$", ptx, re.M)
        if name.startswith("scaled_"):
            assert meta["command"].startswith("PYTHONPATH=. python scripts/triton_kernels_sm100.py")
            assert source_is_unchanged("scripts/triton_kernels_sm100.py", meta["source_sha256"])
        else:
            assert meta["command"].startswith("PYTHONPATH=. python scripts/cute_sm100_kernels.py")
            for f, digest in meta["wrapper_sha256"].items():
                with open(current_path("scripts/cute_sm100/" + f), "rb") as fh:
                    assert hashlib.sha256(fh.read()).hexdigest() == digest, f
            assert meta["opcode_census"] == opcode_census(ptx)
            for case in meta["cases"]:
                assert len(bytes.fromhex(case["param_blob"])) == meta["param_size"]
