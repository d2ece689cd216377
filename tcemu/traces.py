"""Hardware traces: read them (never executing anything in them) and replay them against tcemu.

A trace is a NumPy .npz archive read with allow_pickle=False. Its `meta` member is UTF-8 JSON
(bytes as uint8) naming the format ("tcemu-trace"), version, kind, arch and provenance; the other
members are plain numeric columns documented in meta["columns"] and traces/README.md.
"""
import json
import os
from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np

from .addressing import operand_addresses
from .descriptors import GmmaDescriptor
from .errors import TcemuError, TraceError

FORMAT, VERSION = "tcemu-trace", 1


@dataclass
class Trace:
    path: str
    meta: dict
    columns: Dict[str, np.ndarray]

    @property
    def kind(self) -> str:
        return self.meta["kind"]


_REQUIRED = {"wgmma_operand_addresses": ("desc", "operand", "dtype", "major", "rows", "k", "n", "offsets",
                                         "addresses")}


def load_trace(path: str) -> Trace:
    try:
        with np.load(path, allow_pickle=False) as z:
            columns = {name: z[name] for name in z.files}
    except (OSError, ValueError, EOFError) as e:
        raise TraceError(os.path.basename(path), f"not a readable .npz archive ({e})") from None
    if "meta" not in columns or columns["meta"].dtype != np.uint8:
        raise TraceError("meta", f"{path}: missing, or not UTF-8 JSON bytes")
    try:
        meta = json.loads(columns.pop("meta").tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TraceError("meta", f"{path}: not valid JSON ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise TraceError("meta.format", f"{path}: expected format {FORMAT!r} version {VERSION}")
    missing = [c for c in _REQUIRED.get(meta.get("kind"), ()) if c not in columns]
    if meta.get("kind") not in _REQUIRED or missing:
        raise TraceError("meta.kind" if not missing else ", ".join(missing),
                         f"{path}: unknown kind {meta.get('kind')!r}" if not missing else f"{path}: columns missing")
    return Trace(path, meta, columns)


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

    @property
    def ok(self) -> bool:
        return all(g.cases == g.cases_matched for g in self.groups.values()) and bool(self.groups)


def _case_addresses(cols, i) -> np.ndarray:
    lo, hi = cols["offsets"][i], cols["offsets"][i + 1]
    return np.cumsum(cols["addresses"][lo:hi].astype(np.int64)).reshape(int(cols["rows"][i]), int(cols["k"][i]))


def _replay_addresses(trace: Trace, result: ReplayResult, max_report: int):
    cols, dtypes = trace.columns, trace.meta["dtypes"]
    for i in range(cols["desc"].size):
        desc = GmmaDescriptor.decode(int(cols["desc"][i]))
        dtype, major = dtypes[int(cols["dtype"][i])], "MN" if cols["major"][i] else "K"
        operand = "AB"[int(cols["operand"][i])]
        group = result.groups.setdefault(f"{dtype:<4} {major:<2} {desc.swizzle.value:>4} {operand}", GroupResult())
        hw = _case_addresses(cols, i)
        try:
            model = operand_addresses(desc, rows=hw.shape[0], k=hw.shape[1], dtype=dtype, major=major,
                                      arch=trace.meta["arch"])
            same = model == hw
        except TcemuError as e:
            model, same = None, np.zeros(hw.shape, bool)
            result.mismatches.append(f"case {i}: tcemu raised {e}")
        group.cases += 1
        group.values += hw.size
        group.values_matched += int(same.sum())
        group.cases_matched += bool(same.all())
        if not same.all() and model is not None and len(result.mismatches) < max_report:
            r, c = np.argwhere(~same)[0]
            result.mismatches.append(f"case {i} {desc} {dtype} {major}-major {operand}: element ({r}, {c}) "
                                     f"hardware {int(hw[r, c]):#x}, tcemu {int(model[r, c]):#x}")


_REPLAYERS = {"wgmma_operand_addresses": _replay_addresses}


def replay(trace, max_report: int = 10) -> ReplayResult:
    trace = trace if isinstance(trace, Trace) else load_trace(trace)
    result = ReplayResult(trace)
    _REPLAYERS[trace.kind](trace, result, max_report)
    return result


def trace_paths(paths) -> List[str]:
    """Expand directories to the .npz traces inside them, sorted."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".npz"))
        else:
            out.append(p)
    return out
