"""Throughput of tcemu's hot paths, each printed next to a reference measured in the same run.

    python scripts/bench.py

operand_addresses: element addresses per second for a 128x64 bf16 K-major 128B-swizzled operand
(one call = 8192 addresses, Python overhead included), single thread, after JIT; the reference is
the plain-Python canonical-layout oracle of the tests (CuTe's pycute layout algebra when installed).
JIT warm-up: a fresh process importing tcemu and resolving one operand, with an empty numba cache
(cold compile) and with the cache it leaves behind (warm start).
"""
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import tcemu  # noqa: E402


def rate(fn, items, min_time=1.0):
    fn()
    n, t0 = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - t0) < min_time:
        fn()
        n += 1
    return n * items / elapsed


def first_call_seconds(cache_dir):
    code = ("import time; t = time.perf_counter(); import tcemu; "
            "tcemu.operand_addresses(0x4000004000010040, rows=128, k=64, dtype='bf16'); "
            "print(time.perf_counter() - t)")
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    return float(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                                text=True).stdout)


def main():
    desc = tcemu.GmmaDescriptor(start_address=0x400, lbo=16, sbo=1024, swizzle="128B")
    kw = dict(rows=128, k=64, dtype="bf16", major="K")
    ours = rate(lambda: tcemu.operand_addresses(desc, **kw), 128 * 64)
    big = dict(rows=16384, k=64, dtype="bf16", major="K")
    desc_big = tcemu.GmmaDescriptor(start_address=0, lbo=16, sbo=1024, swizzle="128B")
    # rows beyond the window are fine for the kernel alone: time the numba loop without the window check
    from tcemu.addressing import _resolve
    out = np.empty((big["rows"], big["k"]), np.int64)
    sw = desc_big.swizzle.swizzle
    kernel = rate(lambda: _resolve(0, 16, 1024, sw.bits, sw.base, sw.shift, 0, 128, True, 16, out), out.size)

    try:
        from pycute import Swizzle
        from test_addressing_oracle import ptx_layout

        def reference(d, rows, k, dtype, major):  # per element, plain Python: CuTe layout then swizzle
            L = ptx_layout(16, major == "K", 128, rows, k, d.lbo, d.sbo)
            sw = Swizzle(3, 4, 3)
            return np.array([[sw(d.start_address + L(r, c)) for c in range(k)] for r in range(rows)])
        ref_name = "pycute canonical-layout oracle (tests)"
    except ImportError:
        reference, ref_name = None, "unavailable (install nvidia-cutlass --no-deps for pycute)"
    ref = rate(lambda: reference(desc, **kw), 128 * 64, 2.0) if reference else float("nan")
    if reference is not None:
        assert np.array_equal(reference(desc, **kw), tcemu.operand_addresses(desc, **kw))

    with tempfile.TemporaryDirectory() as cache:
        cold = first_call_seconds(cache)
        warm = first_call_seconds(cache)

    print(f"{'measure':<58} {'value':>14}  reference")
    print(f"{'operand_addresses 128x64 bf16 (addresses/s, per call)':<58} {ours:>14,.0f}  "
          f"{ref:,.0f} ({ref_name}); x{ours / ref:,.0f}")
    print(f"{'numba kernel alone, 16384x64 (addresses/s)':<58} {kernel:>14,.0f}")
    print(f"{'first call in a fresh process, empty numba cache (s)':<58} {cold:>14.2f}")
    print(f"{'first call in a fresh process, warm numba cache (s)':<58} {warm:>14.2f}")
    print("target: > 50,000,000 addresses/s for the 128x64 bf16 operand, single core")


if __name__ == "__main__":
    main()
