"""`tcemu exec` of a CUDA program using arrays, texture objects and surface objects (tcemu/frontends/cuda/
cudart_texture.cpp and the interpreter's tex / suld / sust): tests/fixtures/cuda/texture.cu, compiled once per
session (needs_nvcc). Its `ok` run must print what the same program printed on an H100 (texture.h100.txt, recorded
2026-11-26, driver 580.159.04, CUDA 13.0: tests/fixtures/README.md), and the lines whose values are simple are
computed here too. Its `linear` run prints the bilinear values computed here from the rule (the H100's values
for that mode were not recorded); a .trap surface store out of range and mipmapped arrays end the program."""
import os
import subprocess

import numpy as np
import pytest

import buildcache
from cudakit import ROOT, exec_nvcc, tcemu_exec

SOURCE = os.path.join(ROOT, "tests", "fixtures", "cuda", "texture.cu")
H100 = os.path.join(ROOT, "tests", "fixtures", "cuda", "texture.h100.txt")
FLAGS = ["-cudart", "shared", "-gencode=arch=compute_90a,code=[sm_90a,compute_90a]"]


@pytest.fixture(scope="module")
def program():
    nvcc = exec_nvcc()
    compiler = "".join(subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout
                       for tool in (nvcc, "g++"))

    def make(path):
        p = subprocess.run([nvcc, *FLAGS, SOURCE, "-o", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=900)
        assert p.returncode == 0, f"nvcc texture.cu: {p.stdout[-3000:]}"
    with open(SOURCE, "rb") as fh:
        key = buildcache.digest(compiler, *FLAGS, fh.read())
    return buildcache.cached("cuda", "texture", key, make)


def _words(name, values, dtype):
    return f"{name}: " + " ".join(f"{int(w):08x}" for w in np.asarray(values, dtype).view(np.uint32))


def _expected_lines():
    """The lines of texture.cu's `ok` run whose values follow from the plain rules (computed, not recorded)."""
    n = 24
    xs = np.arange(n, dtype=np.float32) * np.float32(0.5) - 2   # i * 0.5 - 2, (i % 7) * 0.75 - 1: exact floats
    ys = (np.arange(n) % 7).astype(np.float32) * np.float32(0.75) - 1
    f = (np.arange(32, dtype=np.float32) * np.float32(0.25) - 3).reshape(4, 8)
    clamp = f[np.clip(np.floor(ys).astype(int), 0, 3), np.clip(np.floor(xs).astype(int), 0, 7)]
    li = np.arange(20) * 7 - 50
    idx = np.arange(24) - 2
    fetch = np.where((idx >= 0) & (idx < 20), li[np.clip(idx, 0, 19)], 0)
    surf = np.array([[x * 100 + y for x in range(6)] for y in range(3)])
    bx = np.arange(12) - 2
    read = np.concatenate([surf[1, np.clip(bx, 0, 5)], np.where((bx >= 0) & (bx < 6), surf[1, np.clip(bx, 0, 5)], 0)])
    return {0: _words("tex2D clamp", clamp, np.float32), 3: _words("tex1Dfetch", fetch, np.int32),
            11: _words("surf2Dwrite", surf.ravel(), np.int32), 12: _words("surf2Dread clamp zero", read, np.int32)}


def test_the_recorded_h100_lines_agree_with_the_rules():
    """Control for the run below: the H100's own output has the lines computed here (no tcemu involved)."""
    with open(H100, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    for at, line in _expected_lines().items():
        assert lines[at] == line


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_arrays_textures_and_surfaces_print_what_the_h100_printed(program):
    out = tcemu_exec("--", program, "ok")
    assert out.returncode == 0, out.stderr
    with open(H100, encoding="utf-8") as fh:
        assert out.stdout == fh.read()
    lines = out.stdout.splitlines()
    for at, line in _expected_lines().items():
        assert lines[at] == line
    # the refused descriptors are reported where the program made them (and nothing leaks)
    assert "cudaCreateTextureObject: linear filtering needs a float read" in out.stderr
    assert "(cudaErrorInvalidFilterSetting); called from main in " + program in out.stderr
    assert "cudaMallocArray: the channel format is none a CUDA array holds (cudaErrorInvalidChannelDescriptor)" \
        in out.stderr
    assert "leaked" not in out.stderr


def _linear_line():
    """texture.cu's `linear` values: bilinear filtering (clamp) of f at the `ok` coordinates. x - 0.5 falls on
    halves and y - 0.5 on quarters, so the weights (a b / 256 rounded half up: exact here) and the H100's sum of
    texels of few bits (docs/verification.md, Textures and surfaces) give the exact bilinear value."""
    n = 24
    xs = np.arange(n, dtype=np.float64) * 0.5 - 2
    ys = (np.arange(n) % 7) * 0.75 - 1
    f = (np.arange(32, dtype=np.float64) * 0.25 - 3).reshape(4, 8)
    gx, gy = np.floor(xs - 0.5), np.floor(ys - 0.5)
    a, b = xs - 0.5 - gx, ys - 0.5 - gy
    i0, i1 = np.clip(gx, 0, 7).astype(int), np.clip(gx + 1, 0, 7).astype(int)
    j0, j1 = np.clip(gy, 0, 3).astype(int), np.clip(gy + 1, 0, 3).astype(int)
    v = (1 - a) * (1 - b) * f[j0, i0] + a * (1 - b) * f[j0, i1] + (1 - a) * b * f[j1, i0] + a * b * f[j1, i1]
    assert (v.astype(np.float32) == v).all()   # exact: no rounding rule involved
    return _words("tex2D linear", v, np.float32)


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_linear_filtering_prints_the_bilinear_values(program):
    out = tcemu_exec("--", program, "linear")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "linear: cudaSuccess\n" + _linear_line() + "\n"


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_a_trapping_surface_store_out_of_range_is_a_kernel_fault(program):
    out = tcemu_exec("--", program, "trap")
    # the H100 gives cudaErrorIllegalAddress; tcemu stops at the fault, naming the thread and the coordinates
    assert out.returncode == 1 and out.stdout == ""
    assert "KernelFault: sust.b.1d.b32.trap" in out.stderr
    assert "thread 1: surface coordinates (64) lie outside the 16 surface of 4-byte elements" in out.stderr


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_mipmapped_arrays_stay_refused_by_name(program):
    out = tcemu_exec("--", program, "mipmap")
    assert out.returncode == 2 and "unreachable" not in out.stdout
    assert out.stderr.startswith("tcemu exec: unsupported CUDA runtime call cudaMallocMipmappedArray (called from "
                                 "main in " + program)
