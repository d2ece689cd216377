"""A Hopper GEMM mainloop on the CPU: TMA loads with 128B swizzle, wgmma descriptors advanced per K
block as CuTe does, and a chain of wgmma accumulating in f32, checked against numpy.

    python examples/gemm_mainloop.py

C[m, n] = sum_k A[m, k] * B[n, k] for a 64 x 128 x 128 bf16 problem (both operands K-major).
"""
import ml_dtypes
import numpy as np

import tcemu

M, N, K = 64, 128, 128
BK = 64            # K elements per pipeline stage: 64 bf16 = one 128-byte swizzle row
A_SMEM, B_SMEM = 0x400, 0x2400  # stage buffers (1024-aligned, as CuTe's 128B-swizzle layouts require)


def mainloop(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a: (M, K) bf16, b: (N, K) bf16 -> (M, N) float32, exactly as the tensor core computes it."""
    smem = tcemu.SharedMemory()
    acc = None
    for k0 in range(0, K, BK):
        # Producer: TMA boxes of 64 columns (128 bytes) by all rows, 128B swizzle.
        tcemu.tma_load(smem, A_SMEM, a, box=[BK, M], coords=[k0, 0], swizzle="128B")
        tcemu.tma_load(smem, B_SMEM, b, box=[BK, N], coords=[k0, 0], swizzle="128B")
        # Consumer: one wgmma per 16-element K block; the descriptor start moves 32 bytes each time
        # (inside the swizzle atom: the hardware swizzles absolute addresses, base offset stays 0).
        for kb in range(BK // 16):
            da = tcemu.GmmaDescriptor(A_SMEM + 32 * kb, lbo=16, sbo=1024, swizzle="128B")
            db = tcemu.GmmaDescriptor(B_SMEM + 32 * kb, lbo=16, sbo=1024, swizzle="128B")
            acc = tcemu.wgmma(smem, da, db, shape=f"m64n{N}k16", dtype_a="bf16", dtype_b="bf16",
                              dtype_d="f32", c=acc)
    return acc


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((N, K)).astype(ml_dtypes.bfloat16)
    c = mainloop(a.view(np.uint16), b.view(np.uint16))
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    err = np.abs(c - ref).max() / np.abs(ref).max()
    print(f"C[0, :4] = {c[0, :4]}\nmax |C - C_f64| / max |C_f64| = {err:.2e}")
    return c, ref


if __name__ == "__main__":
    main()
