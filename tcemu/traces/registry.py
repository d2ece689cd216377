"""The registry of trace kinds: every kind module of tcemu.traces.kinds, and load_trace, check_trace and replay
dispatched through the kinds they declare (columns, embedded members, consistency check, replay).

A new kind is one module under tcemu/traces/kinds declaring TRACE_KINDS (kinds.base.Kind), listed in _MODULES
below, and documented in traces/README.md. The dependency runs one way: registry -> kinds -> archive.
"""
from typing import Dict

from ..core.errors import TraceError
from ..core.validate import as_int
from .archive import Trace, check_declared, read_trace
from .kinds import (gemm_outputs, kernel_outputs, launch_outputs, mma_sync_numerics, program_outputs, ptx_alu,
                    sfu_proof, smem_wavefronts, texture, tma_tile_loads, wgmma_numerics, wgmma_operand_addresses,
                    wgmma_sparse, wmma, zero_sign)
from .kinds.base import Kind, ReplayResult

# In this order: the order load_trace lists the kinds it knows when it refuses one.
_MODULES = (wgmma_operand_addresses, wgmma_numerics, smem_wavefronts, tma_tile_loads, wgmma_sparse, ptx_alu,
            kernel_outputs, launch_outputs, gemm_outputs, zero_sign, sfu_proof, program_outputs, mma_sync_numerics,
            wmma, texture)
KINDS: Dict[str, Kind] = {kind.name: kind for module in _MODULES for kind in module.TRACE_KINDS}


def load_trace(path) -> Trace:
    """Read a trace without executing anything in it (tcemu.traces.archive.read_trace: only a regular file,
    only the members its kind names, sizes checked before anything is decompressed, no pickles), then hold its
    meta and columns to its kind's check."""
    return read_trace(path, KINDS)


def check_trace(trace: Trace) -> None:
    """TraceError unless the meta and the columns have the documented form and agree with each other
    (traces/README.md): counts, indices into meta lists, offsets, sizes and value ranges."""
    check_declared(trace, KINDS)


def replay(trace, max_report: int = 10) -> ReplayResult:
    """Replay a trace (a path or a Trace) against tcemu: per group, cases and values that match bit for bit,
    the first `max_report` mismatches and notes on what was not judged."""
    max_report = as_int(max_report, "max_report", 0, 1 << 20, TraceError)
    trace = trace if isinstance(trace, Trace) else load_trace(trace)
    check_trace(trace)  # a Trace built by hand is held to the same rules
    result = ReplayResult(trace)
    KINDS[trace.kind].replay(trace, result, max_report)
    return result
