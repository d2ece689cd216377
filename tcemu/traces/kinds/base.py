"""What a trace kind declares (Kind), what a replay reports (ReplayResult), and the checks of meta entries and
columns every kind's consistency check is built from (traces/README.md documents each kind's columns)."""
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from ...core.errors import TraceError
from ...core.validate import is_int, show
from ..archive import Trace


@dataclass
class GroupResult:
    cases: int = 0
    cases_matched: int = 0
    values: int = 0
    values_matched: int = 0


@dataclass
class ReplayResult:
    trace: Trace
    groups: Dict[str, GroupResult] = field(default_factory=dict)
    mismatches: List[str] = field(default_factory=list)  # first few, as readable lines
    notes: List[str] = field(default_factory=list)       # what the replay did not judge, and why

    @property
    def ok(self) -> bool:
        return all(g.cases == g.cases_matched for g in self.groups.values()) and bool(self.groups)


@dataclass(frozen=True)
class Kind:
    """One kind of trace, declared once in its module under tcemu.traces.kinds and listed in
    tcemu.traces.registry: the columns the reader reads (required: missing ones refuse the trace), the members
    its meta names (embedded(meta) -> member names, checked before any is read), the consistency check of meta
    and columns (TraceError naming the field) and the replay against tcemu (filling a ReplayResult)."""
    name: str
    required: Tuple[str, ...]
    check: Callable[[dict, dict], None]
    replay: Callable[[Trace, ReplayResult, int], None]
    optional: Tuple[str, ...] = ()
    embedded: Optional[Callable[[dict], List[str]]] = None


def meta_list(meta, key, limit, item):
    """meta[key]: a list of at most `limit` entries, each accepted by item(entry) (True)."""
    value = meta.get(key)
    if not isinstance(value, list) or not 1 <= len(value) <= limit or not all(item(v) for v in value):
        raise TraceError(f"meta.{key}", f"must be a list of 1..{limit} entries of the documented form, got "
                                        f"{show(value)}")
    return value


def meta_int(meta, key, lo, hi):
    value = meta.get(key)
    if not is_int(value) or not lo <= value <= hi:
        raise TraceError(f"meta.{key}", f"must be an integer in [{lo}, {hi:,}], got {show(value)}")
    return value


def col(cols, name, lo, hi, shape):
    """cols[name]: an integer (or bool) column of `shape` (None: any length) with values in [lo, hi]."""
    arr = cols.get(name)
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "biu":
        raise TraceError(name, f"must be an integer column, got {show(arr)}")
    if arr.ndim != len(shape) or any(want is not None and have != want for have, want in zip(arr.shape, shape)):
        raise TraceError(name, f"must have shape {tuple('n' if w is None else w for w in shape)}, got {arr.shape}")
    if arr.size and (int(arr.min()) < lo or int(arr.max()) > hi):
        raise TraceError(name, f"values must lie in [{lo}, {hi:,}], found {show(int(arr.min()))}.."
                               f"{show(int(arr.max()))}")
    return arr


def offsets(cols, name, n, total):
    """An offsets column: n + 1 non-decreasing values from 0 to `total`."""
    off = col(cols, name, 0, total, (n + 1,)).astype(np.int64)
    if off[0] != 0 or off[-1] != total or np.any(np.diff(off) < 0):
        raise TraceError(name, f"must rise from 0 to {total:,} (the payload's length)")
    return off
