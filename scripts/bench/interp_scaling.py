"""How the PTX interpreter's time grows with N: Triton's sm_90a bf16 matmul fixture (tests/fixtures/ptx/matmul_bf16,
128x256x64 tiles, 8 warps) at N^3 on one core, in lock-step and with warps one at a time (lockstep=False), next to
tcemu.matmul on the same inputs in the same run; every output is checked bit for bit against tcemu.matmul.

    python scripts/bench/interp_scaling.py [--n 256 512 1024 2048] [--alone-max 1024]

Prints a markdown table (seconds; the ratio to tcemu.matmul; warp instructions per second; the process's peak
resident memory during the lock-step launch, sampled every 10 ms from /proc/self/statm, Linux only)."""
import argparse
import json
import os
import sys
import threading
import time

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))   # the repository: tcemu
import tcemu  # noqa: E402
import tcemu.ptx as tp  # noqa: E402
from tcemu.frontends.triton import run_compiled  # noqa: E402
from tcemu.traces.inputs import input_bits  # noqa: E402


class PeakRss:
    """The largest resident set size seen while the block runs (MB; None where /proc is absent)."""

    def __enter__(self):
        self.peak, self.stop = None, False
        self.page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        if os.path.exists("/proc/self/statm"):
            self.thread = threading.Thread(target=self._watch, daemon=True)
            self.thread.start()
        return self

    def _watch(self):
        while not self.stop:
            with open("/proc/self/statm") as f:
                rss = int(f.read().split()[1]) * self.page / 2**20
            self.peak = rss if self.peak is None else max(self.peak, rss)
            time.sleep(0.01)

    def __exit__(self, *exc):
        self.stop = True
        if self.peak is not None:
            self.thread.join()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[256, 512, 1024, 2048])
    ap.add_argument("--alone-max", type=int, default=1024, help="largest N also run with lockstep=False")
    args = ap.parse_args()
    fx = os.path.join(HERE, "..", "..", "tests", "fixtures", "ptx")
    meta = json.load(open(os.path.join(fx, "matmul_bf16.json")))
    mod = tp.load(open(os.path.join(fx, "matmul_bf16.ptx")).read())
    print("| N | lock-step s | warps one at a time s | tcemu.matmul s | lock-step / matmul | warp instructions/s "
          "| peak RSS MB | bits |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for n in args.n:
        a, b = input_bits("bf16", (n, n), 1, 0), input_bits("bf16", (n, n), 1, 1)
        vals = {"a_ptr": a, "b_ptr": b, "M": n, "N": n, "K": n, "stride_am": n, "stride_bk": n, "stride_cm": n}
        if n == args.n[0]:   # compile the instructions and warm numba (both paths) once
            a0, b0 = (np.ascontiguousarray(x[:256, :256]) for x in (a, b))
            w = {**vals, "a_ptr": a0, "b_ptr": b0, "M": 256, "N": 256, "K": 256, "stride_am": 256, "stride_bk": 256,
                 "stride_cm": 256}
            run_compiled(mod, meta, dict(w, c_ptr=np.zeros((256, 256), np.uint16)))
            run_compiled(mod, meta, dict(w, c_ptr=np.zeros((256, 256), np.uint16)), lockstep=False)
            tcemu.matmul(a0.view(ml_dtypes.bfloat16), b0.view(ml_dtypes.bfloat16), dtype_a="bf16", dtype_b="bf16",
                         out_dtype="f16", workers=1)
        c = np.zeros((n, n), np.uint16)
        with PeakRss() as rss:
            st = run_compiled(mod, meta, dict(vals, c_ptr=c))
        alone = "-"
        if n <= args.alone_max:
            alone = f"{run_compiled(mod, meta, dict(vals, c_ptr=np.zeros((n, n), np.uint16)), lockstep=False)['seconds']:.2f}"
        t = time.perf_counter()
        ref = tcemu.matmul(a.view(ml_dtypes.bfloat16), b.view(ml_dtypes.bfloat16), dtype_a="bf16", dtype_b="bf16",
                           out_dtype="f16", workers=1)   # the kernel's C: accumulators from +0, rounded to f16
        mm = time.perf_counter() - t
        same = np.array_equal(ref.view(np.uint16), c)
        print(f"| {n} | {st['seconds']:.2f} | {alone} | {mm:.3f} | {st['seconds'] / mm:.0f}x | "
              f"{st['warp_instructions'] / st['seconds']:,.0f} | {'-' if rss.peak is None else f'{rss.peak:,.0f}'} | "
              f"{'equal' if same else 'DIFFER'} |", flush=True)


if __name__ == "__main__":
    main()
