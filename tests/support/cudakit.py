"""What the `tcemu exec` tests need to build CUDA programs (tests/frontends/test_exec*.py)."""
import glob
import importlib.util
import os
import re
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


def cutlass_script(name: str):
    """scripts/cutlass/NAME.py as a module (run_examples, run_unit_tests: their tables and cache paths)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "scripts", "cutlass", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def newest_build(root: str, stem: str, how: str) -> str:
    """The newest cached build STEM-KEY (KEY: 16 hex digits; any CUTLASS tree and flags the scripts keyed it by) in
    `root`; the test skips without one, saying `how` to build it."""
    found = [p for p in glob.glob(os.path.join(root, f"{stem}-*"))
             if re.fullmatch(re.escape(stem) + r"-[0-9a-f]{16}", os.path.basename(p))]   # not cute-wgmma-tma's
    if not found:
        pytest.skip(f"no prebuilt {stem} in {root} ({how})")
    return max(found, key=os.path.getmtime)
