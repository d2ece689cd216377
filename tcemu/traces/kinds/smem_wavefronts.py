"""`smem_wavefronts` traces (scripts/capture_banks.py, traces/README.md): Nsight Compute's shared-memory wavefronts
per warp-wide access pattern, against tcemu.banks."""
import numpy as np

from ...core.errors import TcemuError, TraceError
from ...core.validate import show
from ...layout.banks import parse_op, wavefronts_batch
from ..archive import Trace
from .base import GroupResult, Kind, ReplayResult, col, meta_list


def _check(meta, cols):
    ops = meta_list(meta, "ops", 256, lambda v: isinstance(v, str))
    for op in ops:
        try:
            parse_op(op)
        except TcemuError as e:
            raise TraceError("meta.ops", f"{show(op)} is not an op ({e.rule})") from None
    n = col(cols, "op", 0, len(ops) - 1, (None,)).size
    col(cols, "mask", 0, (1 << 32) - 1, (n,))
    col(cols, "addr", 0, (1 << 31) - 1, (n, 32))
    for name in ("ld_wavefronts", "st_wavefronts"):
        col(cols, name, 0, 1 << 16, (n,))


def _replay(trace: Trace, result: ReplayResult, max_report: int):
    cols, ops = trace.columns, trace.meta["ops"]
    for index, name in enumerate(ops):
        rows = np.flatnonzero(cols["op"] == index)
        if rows.size == 0:
            continue
        op = parse_op(name)
        masks = np.where(op.matrices, 0xFFFFFFFF, cols["mask"][rows].astype(np.int64))
        model = wavefronts_batch(op, cols["addr"][rows], masks)
        hw = cols[f"{op.metric}_wavefronts"][rows]
        other = cols[f"{'st' if op.metric == 'ld' else 'ld'}_wavefronts"][rows]
        same = (model == hw) & (other == 0)
        group = result.groups.setdefault(op.name, GroupResult())
        group.cases += rows.size
        group.cases_matched += int(same.sum())
        group.values += int(hw.sum())
        group.values_matched += int(np.minimum(model, hw)[same].sum())
        for j in np.flatnonzero(~same)[:max(0, max_report - len(result.mismatches))]:
            i = int(rows[j])
            result.mismatches.append(f"pattern {i} {op.name} mask {int(cols['mask'][i]):#010x}: ncu {int(hw[j])} "
                                     f"wavefronts, tcemu {int(model[j])}")


TRACE_KINDS = (Kind("smem_wavefronts", ("op", "mask", "addr", "ld_wavefronts", "st_wavefronts"), _check, _replay),)
