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
from .descriptors import SM90_SWIZZLES, GmmaDescriptor, SwizzleMode
from .dtypes import element_type, parse_major
from .errors import LayoutError, TcemuError


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
    w = np.asarray(written)
    if w.ndim != 2 or w.dtype.kind not in "iu":
        raise LayoutError("written", f"must be a (rows, k) integer array of addresses, got {w.dtype} {w.shape}")
    return w.astype(np.int64)


def check_operand(written, desc, *, dtype: str, major: str = "K", operand: str = "A",
                  max_lines: int = 8) -> CheckReport:
    """Compare where the writer put every element with where the descriptor reads it."""
    w = _written(written)
    rows, k = w.shape
    read = operand_addresses(desc, rows=rows, k=k, dtype=dtype, major=major)
    holder = {int(a): (r, c) for (r, c), a in np.ndenumerate(w)}
    bad = np.argwhere(read != w)
    report = CheckReport(desc if isinstance(desc, GmmaDescriptor) else GmmaDescriptor.decode(desc), operand,
                         w.size, len(bad))
    for r, c in bad[:max_lines]:
        a = int(read[r, c])
        what = f"which holds {operand}[{holder[a][0]}, {holder[a][1]}]" if a in holder else "which the writer never wrote"
        report.lines.append(f"{operand}[{r}, {c}] read from {a:#x}, {what}")
    return report


def suggest_descriptor(written, *, dtype: str, major: str = "K") -> Optional[GmmaDescriptor]:
    """A descriptor that reads every element exactly where `written` puts it, or LayoutError saying why
    none exists (the closest candidate and what it gets wrong)."""
    w = _written(written)
    rows, k = w.shape
    etype = element_type(dtype)
    k_major = parse_major(major)
    T = etype.per_chunk
    best, best_wrong = None, w.size + 1
    for mode, b0 in product(SM90_SWIZZLES, range(8)):
        if mode is SwizzleMode.NONE and b0:
            continue
        sw = mode.swizzle
        unswz = w ^ (((((w >> 7) - b0) & ((1 << sw.bits) - 1)) << 4) if sw.bits else 0)  # swizzle is an involution
        start = int(unswz[0, 0])
        # strides from the unswizzled placement (K-major: rows 8 apart, K chunks; MN-major: the other way)
        if k_major:
            sbo = int(unswz[8, 0] - start) if rows > 8 else 0
            lbo = int(unswz[0, T] - start) if (mode is SwizzleMode.NONE and k > T) else 16
        else:
            per = T * (mode.bytes // 16)
            sbo = (int(unswz[T, 0] - start) if rows > T else 0) if mode is SwizzleMode.NONE else \
                (int(unswz[0, 8] - start) if k > 8 else 0)
            lbo = (int(unswz[0, 8] - start) if k > 8 else 0) if mode is SwizzleMode.NONE else \
                (int(unswz[per, 0] - start) if rows > per else 0)
        try:
            cand = GmmaDescriptor(start, lbo, sbo, b0, mode)
            got = operand_addresses(cand, rows=rows, k=k, dtype=dtype, major=major)
        except TcemuError:
            continue
        wrong = int(np.count_nonzero(got != w))
        if wrong == 0:
            return cand
        if wrong < best_wrong:
            best, best_wrong = cand, wrong
    if best is None:
        raise LayoutError("written", "no descriptor of any swizzle mode can even be formed for this placement")
    report = check_operand(w, best, dtype=dtype, major=major, max_lines=3)
    raise LayoutError("written", f"no canonical {'K' if k_major else 'MN'}-major layout reads this placement; "
                                 f"closest: {report}")
