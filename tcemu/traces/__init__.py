"""Hardware traces: read them (never executing anything in them) and replay them against tcemu.

The public readers live in tcemu.traces.archive and are re-exported here; launches, kernel inputs and the
capture generators' mirrors sit beside them, and tcemu.traces.kinds holds the kinds with replays of their own.
"""
from .archive import (GroupResult, ReplayResult, Trace, check_trace, check_zero_sign_operands, group_name,
                      load_trace, numerics_case_registers, replay, sp_metadata_case_registers,
                      sp_numerics_case_matches, sp_numerics_case_registers, thread_digests, trace_paths)

__all__ = ["GroupResult", "ReplayResult", "Trace", "check_trace", "check_zero_sign_operands", "group_name",
           "load_trace", "numerics_case_registers", "replay", "sp_metadata_case_registers",
           "sp_numerics_case_matches", "sp_numerics_case_registers", "thread_digests", "trace_paths"]
