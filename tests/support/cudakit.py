"""What the `tcemu exec` tests need to build CUDA programs (tests/frontends/test_exec*.py)."""
import os
import shutil

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
