"""What the `tcemu exec` tests need to build CUDA programs (tests/frontends/test_exec*.py)."""
import os
import shutil
import subprocess
import sys

import pytest

from tcemu.frontends.cuda import build
from tcemu.frontends.cuda.build import CudaExecError


def exec_nvcc():
    """nvcc's path, once tcemu's libcudart is built (skips the test without nvcc, g++ or the CUDA headers)."""
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
    if nvcc is None or shutil.which("g++") is None:
        pytest.skip("nvcc and g++ are needed to build the test programs")
    try:
        build.library_dir()
    except CudaExecError as e:
        pytest.skip(f"tcemu's libcudart cannot be built here: {e}")
    return nvcc


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tcemu_exec(*argv, timeout=300, env=None):
    """`tcemu exec ARGV` in a fresh interpreter with this checkout on the path: the CompletedProcess (text)."""
    return subprocess.run([sys.executable, "-m", "tcemu.cli", "exec", *argv], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT, **(env or {})}, timeout=timeout)


def replay_recorded(record, folder, **kw):
    """tcemu.launches.replay of a `tcemu exec --record` record, its PTX beside the json in `folder`."""
    from tcemu import launches   # the traces layer: only the record tests need it
    return launches.replay(record, os.path.join(str(folder), record["fixture"] + ".ptx"), **kw)


def outputs(record):
    """The record's output buffers (those the launch changed)."""
    return [b for b in record["buffers"] if b["role"] == "output"]


def unmatched(rep, record):
    """Names of the record's outputs whose replayed bytes differ from its `expected` bytes."""
    return [b["name"] for b in outputs(record) if rep.outputs[b["name"]].tobytes() != bytes.fromhex(b["expected"])]
