"""A fuzzing campaign: tcemu's address resolution against the independent pycute formulation
(tcemu.testing.oracle), with throughput, progress, and a minimal reproducer for any disagreement.

arch="sm103" adds LBO-mode-1 cases (K = 96 fp4, here as its 48 bytes of u8): the oracle composes two pycute
layouts as the PTX sentence reads (9.7.16.3.1.2: chunks from the start to the end of its 128-byte line, the rest
from the LBO address), sharing no code with addressing.py."""
import dataclasses
import math
import sys
import time
from typing import Callable, Optional

import numpy as np

from ..layout.addressing import operand_addresses
from ..core.arch import check_arch
from ..layout.descriptors import SM90_SWIZZLES, SM100_SWIZZLES, GmmaDescriptor, SwizzleMode, UmmaDescriptor
from ..arith.dtypes import MN_MAJOR_DTYPES, element_type
from ..core.errors import TcemuError
from ..tools.explain import instruction_k
from .oracle import oracle
from ..core.validate import as_int, show

MAX_SECONDS = 86400.0  # one day: a longer campaign is several runs with different seeds

DTYPES = {"sm90": ("tf32", "f16", "bf16", "e4m3", "u8", "b1"), "sm100": ("tf32", "f16", "bf16", "e4m3", "u8"),
          "sm103": ("tf32", "f16", "bf16", "e4m3", "u8")}


def _arch(desc) -> str:
    if isinstance(desc, UmmaDescriptor):
        return "sm103" if desc.lbo_mode else "sm100"
    return "sm90"


def _lbo_mode_case(rng):
    """A K = 96 fp4 read (48 bytes: u8, k = 48) through an LBO-mode-1 descriptor: 128B swizzle, base offset 0, the
    second chunk at the start of a 128-byte line (the only placement CuTe writes)."""
    start = 16 * int(rng.integers(0x40, 0x2000))
    desc = UmmaDescriptor(start, 128 * int(rng.integers(8, 0x600)), 16 * int(rng.integers(1, 256)), 0,
                          SwizzleMode.B128, version=1, lbo_mode=1)
    return desc, 8 * int(rng.choice([1, 2, 8, 16, 32])), 48, "u8", "K"


def mode1_oracle(desc, rows, k, bits=8):
    """LBO mode 1 per the PTX sentence, from two pycute layouts (module text)."""
    per = 128 // bits
    first = min(k, (8 - ((desc.start_address >> 4) & 7)) * per)
    parts = [oracle(desc.start_address, 16, desc.sbo, 0, 128, bits, True, rows, first)]
    if k > first:
        parts.append(oracle(desc.lbo, 16, desc.sbo, 0, 128, bits, True, rows, k - first))
    return np.concatenate(parts, axis=1)


def random_case(rng, arch: str = "sm90"):
    """(desc, rows, k, dtype, major) drawn from `rng` (a numpy Generator)."""
    check_arch(arch)
    if not isinstance(rng, np.random.Generator):
        raise TcemuError("rng", f"must be a numpy Generator (np.random.default_rng(seed)), got {show(rng)}")
    if arch == "sm103" and rng.random() < 0.5:
        return _lbo_mode_case(rng)
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
    return desc, rows, instruction_k(dtype, "sm100" if arch == "sm103" else arch), dtype, major


def _case(case):
    """A fuzz case (desc, rows, k, dtype, major) as random_case makes them."""
    if not isinstance(case, tuple) or len(case) != 5 or not isinstance(case[0], GmmaDescriptor):
        raise TcemuError("case", f"must be (desc, rows, k, dtype, major) as random_case returns, got {show(case)}")
    desc, rows, k, dtype, major = case
    element_type(dtype, allowed=DTYPES[_arch(desc)])
    return desc, as_int(rows, "rows", 1, 1 << 12), as_int(k, "k", 1, 1 << 12), dtype, major


def disagrees(case, emulator: Callable = operand_addresses) -> bool:
    desc, rows, k, dtype, major = _case(case)
    try:
        got = emulator(desc, rows=rows, k=k, dtype=dtype, major=major, arch=_arch(desc))
    except TcemuError:
        return False  # outside the window: both formulations are undefined there
    if getattr(desc, "lbo_mode", 0):
        return not np.array_equal(got, mode1_oracle(desc, rows, k, element_type(dtype).bits))
    want = oracle(desc.start_address, desc.lbo, desc.sbo, desc.base_offset, desc.swizzle.bytes, element_type(dtype).bits,
                  major == "K", rows, k, desc.swizzle.value)
    return not np.array_equal(got, want)


def shrink(case, emulator: Callable = operand_addresses):
    """Greedily simplify a disagreeing case while it keeps disagreeing."""
    desc, rows, k, dtype, major = _case(case)
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
    desc, rows, k, dtype, major = _case(case)
    if getattr(desc, "lbo_mode", 0):
        return (f"tcemu.operand_addresses({hex(desc.encode())}, rows={rows}, k={k}, dtype={dtype!r}, major='K', "
                f"arch='sm103')  # differs from tcemu.testing.fuzz.mode1_oracle(UmmaDescriptor.decode({hex(desc.encode())}), "
                f"{rows}, {k}, {element_type(dtype).bits})")
    return (f"tcemu.operand_addresses({hex(desc.encode())}, rows={rows}, k={k}, dtype={dtype!r}, major={major!r}, "
            f"arch={_arch(desc)!r})  # differs from tcemu.testing.oracle.oracle({desc.start_address:#x}, {desc.lbo:#x}, "
            f"{desc.sbo:#x}, {desc.base_offset}, {desc.swizzle.bytes}, {element_type(dtype).bits}, {major == 'K'}, "
            f"{rows}, {k}, {desc.swizzle.value!r})")


def campaign(*, seconds: float = 10.0, cases: Optional[int] = None, seed: int = 0, progress="stderr",
             emulator: Callable = operand_addresses, arch: str = "sm90") -> dict:
    """Run random cases until `seconds` pass (or `cases` are done); stop at the first disagreement.

    seconds: a finite number in [0, MAX_SECONDS]; cases: None or 0..10^9; seed: 0 <= seed < 2^64; progress: a text
    stream, None (none), or "stderr": sys.stderr as it is when called (a default bound at import kept the stream of
    that moment, which a test's capture may have closed since)."""
    if isinstance(progress, str) and progress == "stderr":
        progress = sys.stderr
    if isinstance(seconds, (bool, np.bool_)) or not isinstance(seconds, (int, float, np.integer, np.floating)) \
            or not math.isfinite(seconds) or not 0 <= seconds <= MAX_SECONDS:
        raise TcemuError("seconds", f"must be a number of seconds in [0, {MAX_SECONDS}], got {show(seconds)}")
    cases = None if cases is None else as_int(cases, "cases", 0, 10 ** 9)
    seed = as_int(seed, "seed", 0, (1 << 64) - 1)
    check_arch(arch)
    if not callable(emulator):
        raise TcemuError("emulator", f"must be a function like operand_addresses, got {show(emulator)}")
    if progress is not None and not callable(getattr(progress, "write", None)):
        raise TcemuError("progress", f"must be a text stream or None, got {show(progress)}")
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
