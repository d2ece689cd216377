"""Whole Triton kernels on the PTX interpreter (fixtures in tests/fixtures/ptx, made by scripts/triton_kernels.py).

The silicon check is tests/traces/test_traces.py (traces/triton_kernels_sm90.npz: every output byte of 18 H100
launches).
Here: small launches of each sm_90a fixture against a chain of tcemu's wgmma fused-dot model built without the
interpreter, and planted kernel bugs, each of which must be reported at the instruction that makes it, never
silently computed.
"""

import numpy as np
import pytest

import tcemu.ptx as tp
from tcemu.arith.fdp import decode_operand, fused_dot
from tcemu.hopper.wgmma import fdp_unit
from tcemu.frontends.triton import TritonError, run_compiled

from ptxkit import launch_matmul as launch, matmul_fixture as fixture
from paths import PTX_FIXTURES

FX = PTX_FIXTURES
K_STEP = {"bf16": 16, "f16": 16, "tf32": 8, "e4m3": 32}


def chain(a_bits, b_kn_bits, dtype, out):
    """D = A B as a chain of wgmma fused dots over K in instruction steps, in order, from +0; K zero-padded;
    f32 -> out with round-to-nearest-even (hardware-leads.md, 'Whole kernels')."""
    M, K = a_bits.shape
    N = b_kn_bits.shape[1]
    step = K_STEP[dtype]
    Kp = -(-K // step) * step
    A = np.zeros((M, Kp), a_bits.dtype)
    A[:, :K] = a_bits
    B = np.zeros((Kp, N), b_kn_bits.dtype)
    B[:K] = b_kn_bits
    unit = fdp_unit(dtype, "f32")
    acc = np.zeros((M, N), np.uint32)
    for k0 in range(0, Kp, step):
        acc = fused_dot(decode_operand(np.ascontiguousarray(A[:, k0:k0 + step]), dtype),
                        decode_operand(np.ascontiguousarray(B[k0:k0 + step].T), dtype),
                        decode_operand(acc, "f32"), unit)
    f = acc.view(np.float32)
    return f.astype(np.float16).view(np.uint16) if out == "fp16" else f.view(np.uint32)


@pytest.mark.parametrize("name,M,N,K", [("matmul_bf16", 128, 256, 128), ("matmul_f16", 128, 256, 96),
                                         ("matmul_e4m3", 128, 256, 256), ("matmul_tf32", 128, 128, 64),
                                         ("matmul_tma_bf16", 128, 256, 192), ("matmul_dtma_bf16", 128, 256, 128),
                                         ("matmul_bf16_n300", 128, 300, 64)])
@pytest.mark.slow
def test_fixture_equals_wgmma_chain(name, M, N, K):
    a, b_kn, c, tc, ta = launch(name, M, N, K)
    dtype = {"f32": "tf32"}.get(ta, ta)
    assert np.array_equal(c, chain(a, b_kn, dtype, tc))


def test_specialization_is_checked():
    meta, ptx = fixture("matmul_bf16")
    with pytest.raises(TritonError, match="multiple of 16"):
        run_compiled(ptx, meta, {"a_ptr": np.zeros((120, 64), np.uint16), "b_ptr": np.zeros((64, 256), np.uint16),
                                 "c_ptr": np.zeros((120, 256), np.uint16), "M": 120, "N": 256, "K": 64,
                                 "stride_am": 64, "stride_bk": 256, "stride_cm": 256})


def sub(old, new, count=1):
    return lambda ptx: ptx.replace(old, new, count)


# (fixture, M, N, K, edit, error class, a phrase the message must contain)
PLANTED = {
    # an off-by-one in the epilogue's row bound (< M became <= M): the store one row past C faults
    "row bound off by one": ("matmul_bf16", 112, 256, 64, sub("setp.lt.s32 \t%p39, %r252, %r25;",
                                                               "setp.le.s32 \t%p39, %r252, %r25;"),
                             tp.MemoryFault, "0 bytes past the end of"),
    # the descriptors' swizzle mode (128B in bits 62-63) replaced by 64B: the tile reads scrambled
    "wrong swizzle": ("matmul_bf16", 128, 256, 64, sub("4611686293305294848", "9223372311732682752", 8),
                      tp.HazardError, "is not a tile of the array"),
    "missing proxy fence": ("matmul_bf16", 128, 256, 128, sub("fence.proxy.async.shared::cta;", ""),
                            tp.HazardError, "no fence.proxy.async"),
    "cp.async waits one group short": ("matmul_bf16", 128, 256, 256, sub("cp.async.wait_group \t2;",
                                                                         "cp.async.wait_group \t3;"),
                                       tp.HazardError, "still in flight"),
    "stage reused under an in-flight wgmma": ("matmul_bf16", 128, 256, 512,
                                              sub("wgmma.wait_group.sync.aligned 1;", "wgmma.wait_group.sync.aligned 2;"),
                                              tp.HazardError, "which a wgmma.mma_async still in flight reads"),
    "expect_tx 16 bytes short": ("matmul_tma_bf16", 128, 256, 64, sub("_, [%r7], 49152;", "_, [%r7], 49136;"),
                                 tp.Deadlock, "tx-count -16 bytes (more bytes delivered than expected)"),
    "TMA stage not 128-byte aligned": ("matmul_tma_bf16", 128, 256, 64, sub("[%r10], [%rd14", "[%r10+16], [%rd14"),
                                       tp.MemoryFault, "not 128-byte aligned"),
    "consumer skips the full-barrier wait": ("matmul_tma_bf16", 128, 256, 64,
                                             sub("mbarrier.try_wait.parity.shared::cta.b64 complete, [%r54], %r184;",
                                                 "setp.eq.u32 complete, 0, 0;"),
                                             tp.HazardError, "has not observed that phase"),
}


@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_planted_kernel_bug_is_reported(bug):
    name, M, N, K, edit, error, phrase = PLANTED[bug]
    with pytest.raises(error) as e:
        launch(name, M, N, K, edit)
    msg = str(e.value)
    assert phrase in msg
    assert "line " in msg and "CTA (0, 0, 0)" in msg  # the instruction and where it ran


def test_accumulators_read_before_wgmma_wait_group_race_the_other_warpgroup():
    # without its wgmma.wait_group 0 the epilogue reads accumulators still in flight: ptxas injects a wait at each
    # warp's first read (C7517), after the barrier, so warpgroup 0 stages C in shared memory while warpgroup 1's
    # wgmma may still read B there: a real race on the GPU, reported at the store; the read itself only warns
    with pytest.warns(tp.WgmmaSerializedWarning, match="ptxas makes this read wait for it"):
        with pytest.raises(tp.HazardError, match=r"st.shared.v4.b32 .*CTA \(0, 0, 0\), warp 0: writes shared address "
                                                 r"0x400, which a wgmma.mma_async still in flight reads"):
            launch("matmul_bf16", 128, 256, 64, sub("wgmma.wait_group.sync.aligned 0;", ""))


def test_layout_check_can_be_turned_off():
    # SBO 1024 -> 512 bytes in every descriptor: the rows read stay inside the stage, so the only witness of the
    # bug is the layout check; without it the kernel runs to a silently wrong C, as it would on a GPU
    edit = sub("4611686293305294848", "4611686155866341376", 8)
    with pytest.raises(tp.HazardError, match="is not a tile of the array"):
        launch("matmul_bf16", 128, 256, 64, edit)
    a, b_kn, c, tc, ta = launch("matmul_bf16", 128, 256, 64, edit, check_layouts=False)
    assert not np.array_equal(c, chain(a, b_kn, ta, tc))
