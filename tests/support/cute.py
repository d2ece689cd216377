"""The CuTe peer oracles (tests/support/cute_oracle/*.cu): host programs that #include CuTe (nvidia-cutlass wheel) and
print what its builders give, compiled with nvcc as plain host C++. Used by tests/blackwell/test_cute_umma.py,
tests/blackwell/test_cute_tmem.py and tests/ptx/test_cute_tmem_copy.py.

Compiling them costs about 2 CPU-minutes (CuTe's templates), so each binary is built once and kept in a cache
keyed by the sha256 of its source, its compile command, the compiler's version and every CuTe / CUTLASS header:
a change to any of them builds it afresh. The cache is $TCEMU_TEST_CACHE, else $XDG_CACHE_HOME/tcemu-tests, else
~/.cache/tcemu-tests (TCEMU_TEST_CACHE=off: no cache, a fresh build in a temporary folder every session). When a
session selects a test that needs an oracle that is not cached, tests/conftest.py queues its build for the background
worker (tests/support/background.py) as soon as collection ends, so that it overlaps the tests that run first.
"""
import concurrent.futures
import fcntl
import hashlib
import importlib.util
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

import background
import buildcache

SOURCES = Path(__file__).parent / "cute_oracle"
INSTALL_HINT = "pip install --no-deps nvidia-cutlass"
# name: (source, extra flags). umma_oracle is compiled as two halves (ORACLE_PART), which can build in parallel.
ORACLES = {
    "tmem_oracle": ("tmem_oracle.cu", ()),
    "umma_oracle_0": ("umma_oracle.cu", ("-DORACLE_PART=0",)),
    "umma_oracle_1": ("umma_oracle.cu", ("-DORACLE_PART=1",)),
    "tmem_copy_oracle": ("tmem_copy_oracle.cu", ()),
}
# the session fixtures that run them, and what each needs (the order the test folders run in)
FIXTURE_ORACLES = {"tmem_oracle": ("tmem_oracle",), "oracle": ("umma_oracle_0", "umma_oracle_1"),
                   "copy_oracle": ("tmem_copy_oracle",)}


def cute_include():
    """The CuTe headers of the nvidia-cutlass wheel, or skip."""
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"CuTe headers not installed (nvidia-cutlass wheel): {INSTALL_HINT}")
    include = Path(list(spec.submodule_search_locations)[0]) / "source" / "include"
    if not (include / "cute" / "atom" / "mma_traits_sm100.hpp").is_file():
        pytest.skip(f"cutlass_library has no CuTe sm100 headers under {include}: {INSTALL_HINT}")
    return include


def nvcc() -> str:
    """nvcc ($TCEMU_NVCC, /usr/local/bin/nvcc or on PATH), or skip."""
    for candidate in (os.environ.get("TCEMU_NVCC"), "/usr/local/bin/nvcc", shutil.which("nvcc")):
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.skip("nvcc not found (set TCEMU_NVCC); the CuTe oracle is host code compiled with nvcc")


def compile_command(nvcc_path, include, name, exe):
    # -x c++: CuTe's CUTE_HOST_DEVICE code as plain host C++ (no device pass, ~2.5x faster than
    # -x cu, same output). -DNDEBUG: a packed-fp4 element's byte is taken from its sub-byte iterator.
    source, flags = ORACLES[name]
    return [nvcc_path, "-std=c++17", "-x", "c++", "-O1", "-DNDEBUG", *flags, f"-I{include}", str(SOURCES / source),
            "-o", str(exe)]


def _cache_dir():
    return buildcache.cache_dir("cute")


_HEADERS = {}


def _headers_digest(include):
    """sha256 over every file under the wheel's include/ (paths and contents): about a second, once a session."""
    if include not in _HEADERS:
        h = hashlib.sha256()
        for root, dirs, files in os.walk(include):
            dirs.sort()
            for f in sorted(files):
                path = os.path.join(root, f)
                h.update(os.path.relpath(path, include).encode() + b"\0")
                with open(path, "rb") as fh:
                    h.update(hashlib.sha256(fh.read()).digest())
        _HEADERS[include] = h.hexdigest()
    return _HEADERS[include]


def _compiler_version(nvcc_path):
    out = subprocess.run([nvcc_path, "--version"], capture_output=True, text=True, timeout=60).stdout
    host = shutil.which(os.environ.get("NVCC_CCBIN", "") or "g++") or "g++"
    out += subprocess.run([host, "--version"], capture_output=True, text=True, timeout=60).stdout
    return out


def _key(name, nvcc_path, include):
    source, _ = ORACLES[name]
    h = hashlib.sha256()
    h.update((SOURCES / source).read_bytes())
    h.update(" ".join(compile_command("nvcc", "<include>", name, "<exe>")[1:]).encode())
    h.update(_compiler_version(nvcc_path).encode())
    h.update(_headers_digest(include).encode())
    return h.hexdigest()[:32]


def _build(name, nvcc_path, include):
    """The path of the built oracle `name`: from the cache, or compiled now (into the cache when there is one)."""
    cache = _cache_dir()
    if cache is None:
        exe = Path(tempfile.mkdtemp(prefix="tcemu_cute_")) / name
    else:
        exe = cache / f"{name}-{_key(name, nvcc_path, include)}"
        if exe.is_file():
            return exe
        cache.mkdir(parents=True, exist_ok=True)
        with open(exe.with_name(exe.name + ".lock"), "w") as lock:   # pytest-xdist: one build, the others wait
            fcntl.flock(lock, fcntl.LOCK_EX)
            return exe if exe.is_file() else _compile(name, nvcc_path, include, exe)
    return _compile(name, nvcc_path, include, exe)


def _compile(name, nvcc_path, include, exe):
    tmp = exe.with_name(exe.name + f".{os.getpid()}.{threading.get_ident()}.tmp")
    proc = subprocess.run(compile_command(nvcc_path, include, name, tmp), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=900)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"compiling the CuTe oracle {name} failed:\n{proc.stdout[-4000:]}")
    os.replace(tmp, exe)   # atomic: a concurrent session sees the whole binary or none
    return exe


def prebuild(names):
    """Queue the builds of the oracles `names` for the background worker (tests/support/background.py), in this
    order (one cached, or whose CuTe headers / nvcc are missing, costs nothing: the fixture returns or skips)."""
    try:
        include, nvcc_path = cute_include(), nvcc()
    except pytest.skip.Exception:
        return
    for name in names:
        background.submit(("cute", name), _build, name, nvcc_path, include)


def binaries(names):
    """The built oracles `names` (skip without CuTe or nvcc): each the background worker's build (waited for), or
    built here when the worker has not started it, the missing ones at once, in parallel (the two cores of CI)."""
    include, nvcc_path = cute_include(), nvcc()
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(names)) as pool:
        jobs = [pool.submit(background.result, ("cute", name), _build, name, nvcc_path, include) for name in names]
    try:
        return [job.result() for job in jobs]
    except RuntimeError as e:
        pytest.fail(str(e))


def run(exe, timeout=300):
    """(stdout lines, stderr lines) of one oracle binary; it must exit 0."""
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.splitlines(), proc.stderr.splitlines()
