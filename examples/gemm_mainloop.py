"""A Hopper GEMM mainloop on the CPU: TMA loads with 128B swizzle, wgmma descriptors advanced per K
block as CuTe does, and a chain of wgmma accumulating in f32, checked against numpy.

    python examples/gemm_mainloop.py

C[m, n] = sum_k A[m, k] * B[n, k] for a 64 x 128 x 128 bf16 problem (both operands K-major).

Change a descriptor field (sbo=512, or swizzle="64B") and the script exits with status 1: the result no longer
matches numpy, and it prints what tcemu finds: which elements each descriptor reads from where the TMA did not
put them, the slip that explains it, and the descriptor lints.
"""
import sys

import ml_dtypes
import numpy as np

import tcemu

M, N, K = 64, 128, 128
BK = 64            # K elements per pipeline stage: 64 bf16 = one 128-byte swizzle row
A_SMEM, B_SMEM = 0x400, 0x2400  # stage buffers (1024-aligned, as CuTe's 128B-swizzle layouts require)
TOLERANCE = 1e-5   # max |C - C_f64| / max |C_f64|: f32 accumulation over K = 128 stays far below it


def mainloop(a: np.ndarray, b: np.ndarray, log=None) -> np.ndarray:
    """a: (M, K) bf16, b: (N, K) bf16 -> (M, N) float32, exactly as the tensor core computes it.
    log: a list that receives, per wgmma, (k, where TMA put A's and B's elements, the descriptors)."""
    smem = tcemu.SharedMemory()
    acc = None
    for k0 in range(0, K, BK):
        # Producer: TMA boxes of 64 columns (128 bytes) by all rows, 128B swizzle; each returns the shared
        # address of every element it wrote.
        placed_a = tcemu.tma_load(smem, A_SMEM, a, box=[BK, M], coords=[k0, 0], swizzle="128B")
        placed_b = tcemu.tma_load(smem, B_SMEM, b, box=[BK, N], coords=[k0, 0], swizzle="128B")
        # Consumer: one wgmma per 16-element K block; the descriptor start moves 32 bytes each time
        # (inside the swizzle atom: the hardware swizzles absolute addresses, base offset stays 0).
        for kb in range(BK // 16):
            da = tcemu.GmmaDescriptor(A_SMEM + 32 * kb, lbo=16, sbo=1024, swizzle="128B")
            db = tcemu.GmmaDescriptor(B_SMEM + 32 * kb, lbo=16, sbo=1024, swizzle="128B")
            if log is not None:
                cols = slice(16 * kb, 16 * kb + 16)
                log.append((k0 + 16 * kb, placed_a[:, cols], da, placed_b[:, cols], db))
            acc = tcemu.wgmma(smem, da, db, shape=f"m64n{N}k16", dtype_a="bf16", dtype_b="bf16",
                              dtype_d="f32", c=acc)
    return acc


def findings(log) -> list:
    """What tcemu finds at the first wgmma whose descriptors misread what the TMA wrote: the writer-vs-reader
    check of each operand (tcemu.check_operand, with its hints) and the descriptor's lints."""
    for k, placed_a, da, placed_b, db in log:
        out = []
        for name, placed, desc in (("A", placed_a, da), ("B", placed_b, db)):
            report = tcemu.check_operand(placed, desc, dtype="bf16", operand=name)
            if report.ok:
                continue
            out.append(f"wgmma at k = {k}, operand {name}: {report.wrong} of {report.total} elements read from "
                       f"the wrong place by {desc}")
            out += [f"  {line}" for line in report.lines[-4:]]
            rows = M if name == "A" else N
            out += [f"  lint: {f}" for f in tcemu.explain.lint(desc, dtype="bf16", rows=rows, k=16,
                                                                tile=(rows, BK), operand=name)]
        if out:
            return out
    return ["every descriptor reads what the TMA wrote: the difference comes from elsewhere"]


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((N, K)).astype(ml_dtypes.bfloat16)
    log = []
    c = mainloop(a.view(np.uint16), b.view(np.uint16), log)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    err = np.abs(c - ref).max() / np.abs(ref).max()
    print(f"C[0, :4] = {c[0, :4]}\nmax |C - C_f64| / max |C_f64| = {err:.2e}")
    if not err <= TOLERANCE:
        print(f"FAILED: C is not numpy's product (relative error {err:.2e} > {TOLERANCE:.0e}). tcemu finds:")
        print("\n".join(findings(log)))
        sys.exit(1)
    return c, ref


if __name__ == "__main__":
    main()
