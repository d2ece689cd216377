"""A fuzzing campaign: tcemu's address resolution against the independent pycute formulation
(tcemu.oracle), with throughput, progress, and a minimal reproducer for any disagreement."""
import sys
import time
from typing import Callable, Optional

import numpy as np

from .addressing import operand_addresses
from .descriptors import SM90_SWIZZLES, GmmaDescriptor, SwizzleMode
from .dtypes import element_type
from .errors import TcemuError
from .hopper import K_OF
from .oracle import oracle

DTYPES = ("tf32", "f16", "bf16", "e4m3", "u8", "b1")


def random_case(rng):
    dtype = str(rng.choice(DTYPES))
    major = "MN" if dtype in ("f16", "bf16") and rng.random() < 0.5 else "K"
    mode = SM90_SWIZZLES[int(rng.integers(0, len(SM90_SWIZZLES)))]
    desc = GmmaDescriptor(16 * int(rng.integers(0x40, 0x2000)), 16 * int(rng.integers(0, 256)),
                          16 * int(rng.integers(0, 256)), int(rng.integers(0, 8)) if mode is not SwizzleMode.NONE else 0,
                          mode)
    rows = 8 * int(rng.choice([1, 2, 8, 16, 32]))
    return desc, rows, K_OF[dtype], dtype, major


def disagrees(case, emulator: Callable = operand_addresses) -> bool:
    desc, rows, k, dtype, major = case
    try:
        got = emulator(desc, rows=rows, k=k, dtype=dtype, major=major)
    except TcemuError:
        return False  # outside the window: both formulations are undefined there
    want = oracle(desc.start_address, desc.lbo, desc.sbo, desc.base_offset, desc.swizzle.bytes, element_type(dtype).bits,
                  major == "K", rows, k)
    return not np.array_equal(got, want)


def shrink(case, emulator: Callable = operand_addresses):
    """Greedily simplify a disagreeing case while it keeps disagreeing."""
    desc, rows, k, dtype, major = case
    tries = [lambda d, r: (d, 8 if major == "K" else max(8, r // 2)),
             lambda d, r: (GmmaDescriptor(0x400 + d.start_address % 1024, d.lbo, d.sbo, d.base_offset, d.swizzle), r),
             lambda d, r: (GmmaDescriptor(d.start_address, 16, d.sbo, d.base_offset, d.swizzle), r),
             lambda d, r: (GmmaDescriptor(d.start_address, d.lbo, 1024, d.base_offset, d.swizzle), r),
             lambda d, r: (GmmaDescriptor(d.start_address, d.lbo, d.sbo, 0, d.swizzle), r),
             lambda d, r: (GmmaDescriptor(d.start_address - d.start_address % 1024 + 0x400 * (d.start_address < 0x400),
                                          d.lbo, d.sbo, d.base_offset, d.swizzle), r)]
    changed = True
    while changed:
        changed = False
        for t in tries:
            d2, r2 = t(desc, rows)
            cand = (d2, r2, k, dtype, major)
            if (d2, r2) != (desc, rows) and disagrees(cand, emulator):
                desc, rows, changed = d2, r2, True
    return desc, rows, k, dtype, major


def reproducer(case) -> str:
    desc, rows, k, dtype, major = case
    return (f"tcemu.operand_addresses({hex(desc.encode())}, rows={rows}, k={k}, dtype={dtype!r}, major={major!r})"
            f"  # differs from tcemu.oracle.oracle({desc.start_address:#x}, {desc.lbo:#x}, {desc.sbo:#x}, "
            f"{desc.base_offset}, {desc.swizzle.bytes}, {element_type(dtype).bits}, {major == 'K'}, {rows}, {k})")


def campaign(*, seconds: float = 10.0, cases: Optional[int] = None, seed: int = 0, progress=sys.stderr,
             emulator: Callable = operand_addresses) -> dict:
    """Run random cases until `seconds` pass (or `cases` are done); stop at the first disagreement."""
    rng = np.random.default_rng(seed)
    n, elements, t0 = 0, 0, time.perf_counter()
    shown = t0
    while (cases is None and time.perf_counter() - t0 < seconds) or (cases is not None and n < cases):
        case = random_case(rng)
        n += 1
        elements += case[1] * case[2]
        if disagrees(case, emulator):
            small = shrink(case, emulator)
            return {"cases": n, "elements": elements, "seconds": time.perf_counter() - t0,
                    "disagreement": reproducer(small)}
        if progress and time.perf_counter() - shown > 0.5:
            shown = time.perf_counter()
            dt = shown - t0
            print(f"\r{n} cases, {elements:,} addresses, {n / dt:,.0f} cases/s, 0 disagreements", end="",
                  file=progress, flush=True)
    if progress:
        print(file=progress)
    return {"cases": n, "elements": elements, "seconds": time.perf_counter() - t0, "disagreement": None}
