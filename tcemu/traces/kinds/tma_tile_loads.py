"""`tma_tile_loads` traces (scripts/capture_tma.py, traces/README.md): the shared-memory bytes of TMA tile loads
(cp.async.bulk.tensor) over a patterned global buffer, against tcemu.tma_load."""
import numpy as np

from ...core.arch import SMEM_WINDOW
from ...core.errors import TraceError
from ...core.validate import show
from ...layout.smem import SharedMemory
from ...layout.tma import capture_global_bytes, capture_prefill, tensor_view, tma_load
from ..archive import MAX_GLOBAL_BYTES, Trace
from .base import GroupResult, Kind, ReplayResult, col, meta_int, offsets


# The record layout of scripts/capture_tma.py (CASE_DTYPE), field for field.
TMA_CASE = np.dtype([("dtype", "<i4"), ("rank", "<i4"), ("swizzle", "<i4"), ("dst", "<i4"), ("gaddr", "<i8"),
                     ("gdim", "<i8", 5), ("gstride", "<i8", 4), ("box", "<i4", 5), ("estride", "<i4", 5),
                     ("coord", "<i4", 5), ("pad", "<i4")])


def _check(meta, cols):
    meta_int(meta, "global_bytes", 1, MAX_GLOBAL_BYTES)
    window = meta_int(meta, "window_bytes", 1, max(SMEM_WINDOW.values()))
    case = cols.get("case")
    if not isinstance(case, np.ndarray) or case.dtype != np.uint8 or case.ndim != 2 or \
            case.shape[1] != TMA_CASE.itemsize:
        raise TraceError("case", f"must be (n, {TMA_CASE.itemsize}) uint8 records, got {show(case)}")
    n = case.shape[0]
    records = np.ascontiguousarray(case).view(TMA_CASE).ravel()
    for name, lo, hi in (("dtype", 0, 2), ("rank", 1, 5), ("swizzle", 0, 3), ("dst", 0, window - 1)):
        if n and (records[name].min() < lo or records[name].max() > hi):
            raise TraceError(f"case.{name}", f"must lie in [{lo}, {hi}]")
    for name in ("refused", "timed_out"):
        col(cols, name, 0, 1, (n,))
    positions = col(cols, "positions", 0, window - 1, (None,))
    col(cols, "values", 0, 255, (positions.size,))
    offsets(cols, "offsets", n, positions.size)


def _replay(trace: Trace, result: ReplayResult, max_report: int):
    cols, meta = trace.columns, trace.meta
    cases = np.ascontiguousarray(cols["case"]).view(TMA_CASE).ravel()
    gbytes = capture_global_bytes(int(meta["global_bytes"]))
    window = int(meta["window_bytes"])
    prefill = capture_prefill(window)
    for i, cs in enumerate(cases):
        rank, es = int(cs["rank"]), (1, 2, 4)[int(cs["dtype"])]
        mode = ("none", "32B", "64B", "128B")[int(cs["swizzle"])]
        group = result.groups.setdefault(f"rank {rank} u{8 * es} {mode}", GroupResult())
        want = prefill.copy()
        lo, hi = cols["offsets"][i], cols["offsets"][i + 1]
        want[cols["positions"][lo:hi]] = cols["values"][lo:hi]
        smem = SharedMemory()
        smem.write(0, prefill)  # dst is relative to a 1024-aligned base: absolute address bits agree
        if not (cols["refused"][i] or cols["timed_out"][i]):
            tensor = tensor_view(gbytes, int(cs["gaddr"]), es, [int(x) for x in cs["gdim"][:rank]],
                                 [int(x) for x in cs["gstride"][:rank - 1]])
            tma_load(smem, int(cs["dst"]), tensor, box=[int(x) for x in cs["box"][:rank]],
                     coords=[int(x) for x in cs["coord"][:rank]],
                     element_strides=[int(x) for x in cs["estride"][:rank]], swizzle=mode)
        same = smem.data[:window] == want
        group.cases += 1
        group.cases_matched += bool(same.all())
        group.values += window
        group.values_matched += int(same.sum())
        if not same.all() and len(result.mismatches) < max_report:
            first = int(np.flatnonzero(~same)[0])
            result.mismatches.append(f"case {i} {group_name(cs)}: {int((~same).sum())} bytes differ, first at "
                                     f"+{first:#x}")


def group_name(cs) -> str:
    return f"rank {int(cs['rank'])} box {list(cs['box'][:int(cs['rank'])])} dst {int(cs['dst']):#x}"


TRACE_KINDS = (Kind("tma_tile_loads", ("case", "refused", "timed_out", "offsets", "positions", "values"), _check,
                    _replay),)
