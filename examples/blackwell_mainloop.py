"""A Blackwell block-scaled (MXFP8) GEMM mainloop on the CPU: TMA loads with 128B swizzle, UMMA descriptors
advanced per K block, scale factors in tensor memory picked by the instruction descriptor's scale-factor
ids, and a chain of tcgen05.mma accumulating in tensor memory, checked against numpy.

    python examples/blackwell_mainloop.py

C[m, n] = sum_k (A[m, k] * 2^(SFA[m, k/32] - 127)) * (B[n, k] * 2^(SFB[n, k/32] - 127)) for a 128 x 128 x 256
e4m3 problem (both operands K-major). Not silicon-verified: see README.md, "Blackwell".
"""
import ml_dtypes
import numpy as np

import tcemu

M, N, K = 128, 128, 256
BK = 128                        # K elements per stage: 128 e4m3 = one 128-byte swizzle row
A_SMEM, B_SMEM = 0x400, 0x4400  # stage buffers, 1024-aligned
D_TMEM, SFA_TMEM, SFB_TMEM = tcemu.tmem_address(0, 0), tcemu.tmem_address(0, 256), tcemu.tmem_address(0, 264)


def mainloop(a, b, sfa, sfb, *, a_scale_id=None) -> np.ndarray:
    """a: (M, K), b: (N, K) e4m3 bits; sfa: (M, K/32), sfb: (N, K/32) ue8m0 bytes -> (M, N) float32 read back
    from tensor memory. a_scale_id overrides the A scale-factor id (to show what a wrong one does)."""
    smem, tmem = tcemu.SharedMemory("sm100"), tcemu.TensorMemory()
    for k0 in range(0, K, BK):
        tcemu.tma_load(smem, A_SMEM, a, box=[BK, M], coords=[k0, 0], swizzle="128B")
        tcemu.tma_load(smem, B_SMEM, b, box=[BK, N], coords=[k0, 0], swizzle="128B")
        # The stage's 4 scale factors per row fill one 32-bit cell (as tcgen05.cp would copy them):
        # byte j holds the scale of K block j of this stage.
        tmem.write_scales(SFA_TMEM, sfa[:, k0 // 32:k0 // 32 + 4])
        tmem.write_scales(SFB_TMEM, sfb[:, k0 // 32:k0 // 32 + 4])
        for kb in range(BK // 32):  # one MMA per 32 elements; the start moves 32 bytes inside the atom
            da = tcemu.UmmaDescriptor(start_address=A_SMEM + 32 * kb, lbo=16, sbo=1024, swizzle="128B", version=1)
            db = tcemu.UmmaDescriptor(start_address=B_SMEM + 32 * kb, lbo=16, sbo=1024, swizzle="128B", version=1)
            idesc = tcemu.InstrDescriptor("mxf8f6f4", "e4m3", "e4m3", m=M, n=N,
                                          a_scale_id=kb if a_scale_id is None else a_scale_id, b_scale_id=kb)
            tcemu.tcgen05_mma(smem, da, db, idesc, tmem=tmem, d_tmem=D_TMEM, enable_input_d=k0 + kb > 0,
                              scale_a=SFA_TMEM, scale_b=SFB_TMEM)
    return tmem.read_d(D_TMEM, M, N, "f32").view(np.float32)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    b = rng.standard_normal((N, K)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    sfa = rng.integers(127 - 4, 127 + 5, (M, K // 32)).astype(np.uint8)
    sfb = rng.integers(127 - 4, 127 + 5, (N, K // 32)).astype(np.uint8)
    return a, b, sfa, sfb


def dequantized(x, sf):
    v = x.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    return v * np.exp2(np.repeat(sf.astype(np.float64) - 127, 32, axis=1))


def main():
    a, b, sfa, sfb = inputs()
    c = mainloop(a, b, sfa, sfb)
    ref = dequantized(a, sfa) @ dequantized(b, sfb).T
    err = np.abs(c - ref).max() / np.abs(ref).max()
    print(f"C[0, :4] = {c[0, :4]}\nmax |C - C_f64| / max |C_f64| = {err:.2e}")
    return c, ref


if __name__ == "__main__":
    main()
