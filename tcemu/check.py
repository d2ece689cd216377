"""Writer versus reader: does a descriptor read the elements the writer (TMA, stores) put there?

`written` is a (rows, k) integer array: the absolute shared address where the writer put element
(row, k) of the operand (row = M for A, N for B), for example the addresses tcemu.tma_load returns,
transposed to (row, k) order.
"""
from dataclasses import dataclass, field
from itertools import product
from typing import List, Optional

import numpy as np

from .addressing import operand_addresses
from .arch import check_arch
from .descriptors import SM90_SWIZZLES, SM100_SWIZZLES, GmmaDescriptor, SwizzleMode, UmmaDescriptor, as_arch_descriptor
from .dtypes import OPERAND_DTYPES, element_type, parse_major
from .errors import LayoutError, TcemuError
from .validate import as_array, as_int, as_int_array, show


@dataclass
class CheckReport:
    desc: GmmaDescriptor
    operand: str
    total: int
    wrong: int
    lines: List[str] = field(default_factory=list)  # the first mismatches, in words

    @property
    def ok(self) -> bool:
        return self.wrong == 0

    def __str__(self) -> str:
        head = (f"{self.desc}: all {self.total} elements of {self.operand} read as written" if self.ok else
                f"{self.desc}: {self.wrong} of {self.total} elements of {self.operand} are read from the wrong place")
        return "\n".join([head] + self.lines)


def _written(written) -> np.ndarray:
    w = as_array(written, "written", LayoutError)
    if w.ndim != 2 or w.dtype.kind not in "iu":
        raise LayoutError("written", f"must be a (rows, k) integer array of addresses, got {w.dtype} {w.shape}")
    return as_int_array(w, "written", 0, 1 << 40, LayoutError)


def check_operand(written, desc, *, dtype: str, major: str = "K", operand: str = "A",
                  max_lines: int = 8, arch: str = "sm90") -> CheckReport:
    """Compare where the writer put every element with where the descriptor reads it."""
    max_lines = as_int(max_lines, "max_lines", 0, 1 << 16, LayoutError)
    if not isinstance(operand, str) or len(operand) > 8:
        raise LayoutError("operand", f"a short operand name such as 'A', got {show(operand)}")
    w = _written(written)
    rows, k = w.shape
    desc = as_arch_descriptor(desc, check_arch(arch))
    read = operand_addresses(desc, rows=rows, k=k, dtype=dtype, major=major, arch=arch)
    holder = {int(a): (r, c) for (r, c), a in np.ndenumerate(w)}
    bad = np.argwhere(read != w)
    report = CheckReport(desc, operand, w.size, len(bad))
    for r, c in bad[:max_lines]:
        a = int(read[r, c])
        what = f"which holds {operand}[{holder[a][0]}, {holder[a][1]}]" if a in holder else "which the writer never wrote"
        report.lines.append(f"{operand}[{r}, {c}] read from {a:#x}, {what}")
    return report


def suggest_descriptor(written, *, dtype: str, major: str = "K", arch: str = "sm90") -> Optional[GmmaDescriptor]:
    """A descriptor (GmmaDescriptor; UmmaDescriptor on sm100) that reads every element exactly where `written`
    puts it, or LayoutError saying why none exists (the closest candidate and what it gets wrong)."""
    w = _written(written)
    rows, k = w.shape
    etype = element_type(dtype, allowed=OPERAND_DTYPES[check_arch(arch)])
    k_major = parse_major(major)
    T = etype.per_chunk
    best, best_wrong = None, w.size + 1
    make = (lambda *f: UmmaDescriptor(*f, version=1)) if arch == "sm100" else GmmaDescriptor
    for mode, b0 in product(SM100_SWIZZLES if arch == "sm100" else SM90_SWIZZLES, range(8)):
        if (mode is SwizzleMode.NONE and b0) or (mode is SwizzleMode.B128_BASE32B and k_major):
            continue
        sw = mode.swizzle
        atom_rows = 1 << sw.shift  # K rows of an MN-major atom: 8, or 4 for 128B_base32B
        hi = sw.base + sw.shift    # the swizzle is an involution: apply it again to undo it
        unswz = w ^ (((((w >> hi) - b0) & ((1 << sw.bits) - 1)) << sw.base) if sw.bits else 0)
        start = int(unswz[0, 0])
        # strides from the unswizzled placement (K-major: rows 8 apart, K chunks; MN-major: the other way)
        if k_major:
            sbo = int(unswz[8, 0] - start) if rows > 8 else 0
            lbo = int(unswz[0, T] - start) if (mode is SwizzleMode.NONE and k > T) else 16
        else:
            per = T * (mode.bytes // 16)
            sbo = (int(unswz[T, 0] - start) if rows > T else 0) if mode is SwizzleMode.NONE else \
                (int(unswz[0, atom_rows] - start) if k > atom_rows else 0)
            lbo = (int(unswz[0, 8] - start) if k > 8 else 0) if mode is SwizzleMode.NONE else \
                (int(unswz[per, 0] - start) if rows > per else 0)
        try:
            cand = make(start, lbo, sbo, b0, mode)
            got = operand_addresses(cand, rows=rows, k=k, dtype=dtype, major=major, arch=arch)
        except TcemuError:
            continue
        wrong = int(np.count_nonzero(got != w))
        if wrong == 0:
            return cand
        if wrong < best_wrong:
            best, best_wrong = cand, wrong
    if best is None:
        raise LayoutError("written", "no descriptor of any swizzle mode can even be formed for this placement")
    report = check_operand(w, best, dtype=dtype, major=major, max_lines=3, arch=arch)
    raise LayoutError("written", f"no canonical {'K' if k_major else 'MN'}-major layout reads this placement; "
                                 f"closest: {report}")
