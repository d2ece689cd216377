"""Hardware traces: read them (never executing anything in them) and replay them against tcemu.

The public readers are re-exported here: the archive format (tcemu.traces.archive: Trace, the size limits,
bounded reading), the registry of kinds that loads, checks and replays a trace (tcemu.traces.registry), and the
per-kind helpers of tcemu.traces.kinds. Launches, kernel inputs and the capture generators' mirrors sit beside
them.
"""
from ..core.lazy import lazy

# Loaded on first use (PEP 562), for start-up cost: the registry imports every kind, and the kinds that rerun
# kernels import tcemu.ptx (the interpreter); tcemu.kernel_inputs, tcemu.seeds and `tcemu`'s start need neither.
_EXPORTS = {"Trace": "archive", "trace_paths": "archive", "GroupResult": "kinds.base", "Kind": "kinds.base",
            "ReplayResult": "kinds.base", "TMA_CASE": "kinds.tma_tile_loads", "group_name": "kinds.tma_tile_loads",
            "numerics_case_registers": "kinds.wgmma_numerics", "thread_digests": "kinds.wgmma_numerics",
            "sp_metadata_case_registers": "kinds.wgmma_sparse", "sp_numerics_case_matches": "kinds.wgmma_sparse",
            "sp_numerics_case_registers": "kinds.wgmma_sparse", "check_zero_sign_operands": "kinds.zero_sign",
            "KINDS": "registry", "check_trace": "registry", "load_trace": "registry", "replay": "registry"}

__all__ = ["GroupResult", "ReplayResult", "Trace", "check_trace", "check_zero_sign_operands", "group_name",
           "load_trace", "numerics_case_registers", "replay", "sp_metadata_case_registers",
           "sp_numerics_case_matches", "sp_numerics_case_registers", "thread_digests", "trace_paths",
           "KINDS", "Kind", "TMA_CASE"]


__getattr__, __dir__ = lazy(__name__, _EXPORTS)
