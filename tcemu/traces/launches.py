"""Captured kernel launches, replayed on the CPU by tcemu's PTX interpreter (the documented `tcemu.launches`).

    replay(record, ptx, seed=...)     one launch record (tests/fixtures/ptx/cutlass_*.json `launches`) on the CPU
    replay_trace_case(trace, i)       tcemu's output bytes for case i of a `launch_outputs` trace

The launch record format and its replay live in tcemu.traces.records (re-exported here); the trace side in
tcemu.traces.kinds.launch_outputs. A Trace handed in here is first held to the trace reader's checks.
"""
from typing import Optional

import numpy as np

from ..core.validate import show
from .archive import Trace
from .kinds.launch_outputs import case_bytes, case_outputs, fixture
from .records import (ADDRESS_LIMIT, DRIVER_DTYPES, MAX_BUFFER_BYTES, MAX_PARAM_BYTES, POISON,  # noqa: F401
                      LaunchRecordError, Replay, blob_for, input_arrays, replay, storage_dtype, tensor_map)
from .registry import check_trace

__all__ = ["LaunchRecordError", "Replay", "DRIVER_DTYPES", "POISON", "storage_dtype", "input_arrays", "blob_for",
           "tensor_map", "replay", "trace_fixture", "replay_trace_case", "case_outputs"]


def _launch_trace(trace):
    """A launch_outputs Trace, held to the trace reader's checks (a Trace built by hand too)."""
    if not isinstance(trace, Trace):
        raise LaunchRecordError("trace", f"must be a launch_outputs Trace (tcemu.traces.load_trace), got {show(trace)}")
    check_trace(trace)
    if trace.kind != "launch_outputs":
        raise LaunchRecordError("trace", f"is a {show(trace.kind)} trace, not launch_outputs")
    return trace


def trace_fixture(trace, name: str):
    """(PTX text, fixture json) embedded in a `launch_outputs` trace (scripts/capture_cutlass.py)."""
    return fixture(_launch_trace(trace), name)


def replay_trace_case(trace, i: int, modules: Optional[dict] = None, **launch) -> np.ndarray:
    """tcemu's output bytes for case i of a `launch_outputs` trace (what its `bits` column holds for the GPU:
    every output buffer of case_outputs(case), one after another), from the fixture embedded in the trace and
    the case's seed. `modules` caches loaded PTX by fixture name."""
    return case_bytes(_launch_trace(trace), i, modules, **launch)
