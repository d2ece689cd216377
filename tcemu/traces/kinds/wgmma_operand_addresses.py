"""`wgmma_operand_addresses` traces (scripts/capture_addresses.cu, traces/README.md): the shared-memory address
the hardware read for every element of a wgmma operand, per descriptor, against tcemu.operand_addresses."""
import numpy as np

from ...arith.dtypes import SM90_OPERAND_DTYPES
from ...core.errors import TcemuError, TraceError
from ...layout.addressing import operand_addresses
from ...layout.descriptors import GmmaDescriptor
from ..archive import Trace
from .base import GroupResult, Kind, ReplayResult, col, meta_list, offsets


def check_operands(meta, cols, known, last_operand):
    """The columns of every operand-address trace, dense or sparse: meta.dtypes (each one of `known`), and per
    case a descriptor, operand (0..last_operand), dtype, major, rows, k and n. (dtypes, cases, rows, k)."""
    dtypes = meta_list(meta, "dtypes", 16, lambda v: v in known)
    n = col(cols, "desc", 0, (1 << 64) - 1, (None,)).size
    for name, hi in (("operand", last_operand), ("dtype", len(dtypes) - 1), ("major", 1)):
        col(cols, name, 0, hi, (n,))
    rows, k = col(cols, "rows", 1, 256, (n,)), col(cols, "k", 1, 256, (n,))
    col(cols, "n", 0, 256, (n,))
    return dtypes, n, rows, k


def check_addresses(cols, n, rows, k):
    """Each case's addresses (delta-coded: case_addresses): rows * k of them."""
    payload = col(cols, "addresses", -(1 << 31), (1 << 31) - 1, (None,))
    off = offsets(cols, "offsets", n, payload.size)
    if not np.array_equal(np.diff(off), rows.astype(np.int64) * k):
        raise TraceError("offsets", "each case must own rows * k addresses")


def _check(meta, cols):
    _, n, rows, k = check_operands(meta, cols, SM90_OPERAND_DTYPES, 1)
    check_addresses(cols, n, rows, k)


def case_addresses(cols, i) -> np.ndarray:
    lo, hi = cols["offsets"][i], cols["offsets"][i + 1]
    return np.cumsum(cols["addresses"][lo:hi].astype(np.int64)).reshape(int(cols["rows"][i]), int(cols["k"][i]))


def _replay(trace: Trace, result: ReplayResult, max_report: int):
    cols, dtypes = trace.columns, trace.meta["dtypes"]
    for i in range(cols["desc"].size):
        desc = GmmaDescriptor.decode(int(cols["desc"][i]))
        dtype, major = dtypes[int(cols["dtype"][i])], "MN" if cols["major"][i] else "K"
        operand = "AB"[int(cols["operand"][i])]
        group = result.groups.setdefault(f"{dtype:<4} {major:<2} {desc.swizzle.value:>4} {operand}", GroupResult())
        hw = case_addresses(cols, i)
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


TRACE_KINDS = (Kind("wgmma_operand_addresses", ("desc", "operand", "dtype", "major", "rows", "k", "n", "offsets",
                                                "addresses"), _check, _replay, optional=("replica_mismatches",)),)
