"""A fuzzing campaign: tcemu's address resolution against the independent pycute formulation
(tcemu.oracle), with throughput, progress, and a minimal reproducer for any disagreement."""
import dataclasses
import sys
import time
from typing import Callable, Optional

import numpy as np

from .addressing import operand_addresses
from .descriptors import SM90_SWIZZLES, SM100_SWIZZLES, GmmaDescriptor, SwizzleMode, UmmaDescriptor
from .dtypes import MN_MAJOR_DTYPES, element_type
from .errors import TcemuError
from .explain import instruction_k
from .oracle import oracle

DTYPES = {"sm90": ("tf32", "f16", "bf16", "e4m3", "u8", "b1"), "sm100": ("tf32", "f16", "bf16", "e4m3", "u8")}


def _arch(desc) -> str:
    return "sm100" if isinstance(desc, UmmaDescriptor) else "sm90"


def random_case(rng, arch: str = "sm90"):
    dtype = str(rng.choice(DTYPES[arch]))
    modes = SM100_SWIZZLES if arch != "sm90" else SM90_SWIZZLES
    mode = modes[int(rng.integers(0, len(modes)))]
    mn_ok = dtype in MN_MAJOR_DTYPES[arch]
    major = "MN" if mn_ok and (mode is SwizzleMode.B128_BASE32B or rng.random() < 0.5) else "K"
    if mode is SwizzleMode.B128_BASE32B and major == "K":
        mode = SwizzleMode.B128
    fields = (16 * int(rng.integers(0x40, 0x2000)), 16 * int(rng.integers(0, 256)), 16 * int(rng.integers(0, 256)),
              int(rng.integers(0, 8)) if mode is not SwizzleMode.NONE else 0, mode)
    desc = UmmaDescriptor(*fields, version=1) if arch != "sm90" else GmmaDescriptor(*fields)
    rows = 8 * int(rng.choice([1, 2, 8, 16, 32]))
    return desc, rows, instruction_k(dtype, arch), dtype, major


def disagrees(case, emulator: Callable = operand_addresses) -> bool:
    desc, rows, k, dtype, major = case
    try:
        got = emulator(desc, rows=rows, k=k, dtype=dtype, major=major, arch=_arch(desc))
    except TcemuError:
        return False  # outside the window: both formulations are undefined there
    want = oracle(desc.start_address, desc.lbo, desc.sbo, desc.base_offset, desc.swizzle.bytes, element_type(dtype).bits,
                  major == "K", rows, k, desc.swizzle.value)
    return not np.array_equal(got, want)


def shrink(case, emulator: Callable = operand_addresses):
    """Greedily simplify a disagreeing case while it keeps disagreeing."""
    desc, rows, k, dtype, major = case
    new = dataclasses.replace
    tries = [lambda d, r: (d, 8 if major == "K" else max(8, r // 2)),
             lambda d, r: (new(d, start_address=0x400 + d.start_address % 1024), r),
             lambda d, r: (new(d, lbo=16), r),
             lambda d, r: (new(d, sbo=1024), r),
             lambda d, r: (new(d, base_offset=0), r),
             lambda d, r: (new(d, start_address=d.start_address - d.start_address % 1024 + 0x400 * (d.start_address < 0x400)),
                           r)]
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
    return (f"tcemu.operand_addresses({hex(desc.encode())}, rows={rows}, k={k}, dtype={dtype!r}, major={major!r}, "
            f"arch={_arch(desc)!r})  # differs from tcemu.oracle.oracle({desc.start_address:#x}, {desc.lbo:#x}, "
            f"{desc.sbo:#x}, {desc.base_offset}, {desc.swizzle.bytes}, {element_type(dtype).bits}, {major == 'K'}, "
            f"{rows}, {k}, {desc.swizzle.value!r})")


def campaign(*, seconds: float = 10.0, cases: Optional[int] = None, seed: int = 0, progress=sys.stderr,
             emulator: Callable = operand_addresses, arch: str = "sm90") -> dict:
    """Run random cases until `seconds` pass (or `cases` are done); stop at the first disagreement."""
    rng = np.random.default_rng(seed)
    n, elements, t0 = 0, 0, time.perf_counter()
    shown = t0
    while (cases is None and time.perf_counter() - t0 < seconds) or (cases is not None and n < cases):
        case = random_case(rng, arch)
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
