"""Core scaling of tcemu.matmul's fast engine: one bf16 GEMM (standard normal data, n^3) timed with workers = 1, 2,
4, ... up to every core, next to float64 BLAS on the same shape with the same thread counts (a subprocess per count:
OpenBLAS fixes its threads at load). Prints MAC/s, speedup over one worker and the ratio to BLAS.

    python scripts/bench/scaling.py [--n 2048]

Numbers in the README come from the device machine's 16 CPU cores (it has no other use for them here)."""
import argparse
import os
import sys
import time

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))         # scripts/: bench.py
sys.path.insert(0, os.path.join(HERE, "..", ".."))   # the repository: tcemu
import tcemu  # noqa: E402
from bench import blas_rate, cores  # noqa: E402  (scripts/bench.py, one folder up)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2048)
    args = ap.parse_args()
    n = args.n
    ncores = cores()
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16) for _ in range(2))
    counts = sorted({1 << i for i in range(ncores.bit_length()) if 1 << i <= ncores} | {ncores})
    tcemu.matmul(a[:128, :128], b[:128, :128], dtype_a="bf16", dtype_b="bf16", workers=1)  # compile
    first = None
    ref = None
    print(f"bf16 {n}^3 (standard normal), {ncores} cores")
    print(f"{'workers':>8} {'tcemu MAC/s':>12} {'speedup':>8} {'BLAS f64 MAC/s':>15} {'tcemu/BLAS':>10}")
    for w in counts:
        best = float("inf")
        for _ in range(2):
            t = time.perf_counter()
            out = tcemu.matmul(a, b, dtype_a="bf16", dtype_b="bf16", workers=w)
            best = min(best, time.perf_counter() - t)
        if ref is None:
            ref = out.view(np.uint32).copy()
        assert np.array_equal(out.view(np.uint32), ref), "the output depends on the worker count"
        rate = n ** 3 / best
        first = first or rate
        br = blas_rate(n, w)
        print(f"{w:>8} {rate:>12.3g} {rate / first:>8.2f} {br:>15.3g} {rate / br:>10.2f}", flush=True)


if __name__ == "__main__":
    main()
