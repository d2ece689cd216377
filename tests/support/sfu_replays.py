"""The SFU kernels' replays on the PTX interpreter, the long part of tests/sfu/: every output byte of one captured
case, which the tests compare with the GPU's.

triton_case(i) replays case i of traces/triton_sfu_kernels_sm90.npz (tcemu.traces.kinds.kernel_outputs, every launch
of the case), cutlass_case(i) case i of traces/cutlass_sfu_kernels_sm90.npz (tcemu.launches.replay_trace_case).
tests/conftest.py queues the selected cases for the background worker (tests/support/background.py), which
computes them in the helper process on the other core; a case the worker has not started is replayed here. An
instruction the interpreter refuses raises PtxUnsupported either way.
"""
import os

import background
from paths import TRACES

TRITON = os.path.join(TRACES, "triton_sfu_kernels_sm90.npz")
CUTLASS = os.path.join(TRACES, "cutlass_sfu_kernels_sm90.npz")
_TRACES, _MODULES = {}, {}


def _trace(path):
    from tcemu.traces import load_trace
    if path not in _TRACES:
        _TRACES[path] = load_trace(path)
    return _TRACES[path]


def _fixture(name):
    from tcemu.traces.kinds.kernel_outputs import fixture_from_trace
    if name not in _MODULES:
        _MODULES[name] = fixture_from_trace(_trace(TRITON).columns, name)
    return _MODULES[name]


def _triton(i):
    from tcemu.traces.kinds.kernel_outputs import replay_launches
    return replay_launches(_fixture, _trace(TRITON).meta["cases"][i])


def _cutlass(i):
    from tcemu.traces import launches
    return launches.replay_trace_case(_trace(CUTLASS), i)


def _in_helper(name, i):
    return background.in_helper("sfu_replays", name, i)


def prepare(which, i):
    """Queue case i of the `which` ("triton" / "cutlass") trace for the background worker."""
    background.submit(("sfu", which, i), _in_helper, "_" + which, i)


def triton_case(i):
    """The output bytes of case i of the Triton SFU trace, replayed."""
    return background.result(("sfu", "triton", i), _triton, i)


def cutlass_case(i):
    """The output bytes of case i of the CUTLASS SFU trace, replayed."""
    return background.result(("sfu", "cutlass", i), _cutlass, i)
