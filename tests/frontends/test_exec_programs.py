"""`tcemu exec` of CUDA programs written as a user would, each compared line for line with what the same program
printed on an H100 (NAME.h100.txt beside NAME.cu in tests/fixtures/cuda; recorded 2026-11-26, H100 80GB HBM3,
driver 580.159.04, CUDA 13.0, built there with nvcc -gencode=arch=compute_90a,code=sm_90a):

- mathlib.cu: libdevice math (float and double), the fast-math intrinsics, integer intrinsics, 64-bit division,
  fp16 / bf16 arithmetic, cooperative-groups reduce, match / redux / shuffle / ballot, directed roundings and
  conversions: one checksum of 4,096 results per function;
- samples.cu: CUDA-samples kernels (a tiled matrixMul, a bitonic sort and a shared-atomic histogram in shared
  memory), mapped zero-copy and managed memory, cudaLaunchHostFunc and a stream callback;
- thrust_basics.cu: Thrust (CUB's kernels): sequence, transform, reduce, radix sort, inclusive_scan;
- lang.cu: C++ in device code: printf formats, recursion (fib), a table of function pointers, virtual functions
  with device new/delete, local arrays indexed at run time, double atomics, a CAS loop, __int128, a partial-mask
  shuffle (recorded on the device machine's H100 the same day, CUDA 13.0.88).
- simd.cu: the SIMD-in-a-word intrinsics (__vadd4, __vabsdiffu4, __vsadu2, __vcmpgts4 ...: 62 functions, a
  checksum of 4,096 results each; nvcc emits vabsdiff2 / vabsdiff4 for some of them);
- cgmisc.cu: cooperative-groups tiles of 16 (each half warp its own membermask in one shfl), coalesced groups,
  cg::memcpy_async, cuda::std::atomic in shared memory, __ldcs / __ldlu / __stcs, inline lop3 and bfind.
- runtime_tour.cu: device properties and attributes, the occupancy helper, pitched 2-D copies, __constant__,
  priority streams and events, 80 KB of dynamic shared memory, half2 / bf16 atomics, h2 math (set.f16x2),
  cuda::std::complex. tcemu's device name ends in " (tcemu)": that suffix is the one difference allowed.

Compiled once per session with -cudart shared (needs_nvcc); each run's stdout must be the H100's, byte for byte."""
import os
import subprocess

import numpy as np
import pytest

import buildcache
from cudakit import ROOT, exec_nvcc, tcemu_exec

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "cuda")
FLAGS = ["-cudart", "shared", "-gencode=arch=compute_90a,code=[sm_90a,compute_90a]"]
PROGRAMS = ("mathlib", "samples", "thrust_basics", "lang", "simd", "cgmisc", "runtime_tour")


@pytest.fixture(scope="module")
def programs():
    nvcc = exec_nvcc()
    compiler = "".join(subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout
                       for tool in (nvcc, "g++"))
    out = {}
    for name in PROGRAMS:
        source = os.path.join(FIXTURES, name + ".cu")

        def make(path, source=source, name=name):
            p = subprocess.run([nvcc, *FLAGS, source, "-o", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=900)
            assert p.returncode == 0, f"nvcc {name}.cu: {p.stdout[-3000:]}"
        with open(source, "rb") as fh:
            key = buildcache.digest(compiler, *FLAGS, fh.read())
        out[name] = buildcache.cached("cuda", name, key, make)
    return out


def _h100(name):
    with open(os.path.join(FIXTURES, name + ".h100.txt"), encoding="utf-8") as fh:
        return fh.read()


@pytest.mark.needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("name", PROGRAMS)
def test_prints_what_the_h100_printed(programs, name):
    out = tcemu_exec("--", programs[name], timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.replace(" (tcemu)", "", 1) == _h100(name)


def test_the_recorded_lines_that_follow_from_plain_rules():
    """Control for the runs above: lines of the H100's own output computed here (no tcemu involved)."""
    ys = [(i * i * 7 + 3) % 251 for i in range(10000)]
    x, keys = 7, []
    for _ in range(512):
        x = (x * 1664525 + 1013904223) & 0xFFFFFFFF
        keys.append((x >> 12) - 300000)
    samples = _h100("samples").splitlines()
    assert samples[1] == f"bitonic sorted 1 min {min(keys)} max {max(keys)}"
    assert samples[2] == f"hist ok 1 h[3]={ys.count(3)}"
    # zero copy: x = 0.5 i, then 3x + 1; managed: i / 4 + 1, then 2y + 1 (the third launch); callbacks 1 + 100 * 2
    assert samples[3:6] == ["zerocopy 2.5 1499.5", "managed 1.5 250.75", "callbacks 201 managed 4.5"]
    vals = sorted(i * i % 1000 for i in range(1000))
    assert _h100("thrust_basics") == f"sum {sum(vals)} sorted 1 first {vals[0]} last {vals[-1]} scanlast {sum(vals)}\n"
    math = _h100("mathlib").splitlines()
    brev = [int(f"{(i * 40503) & 0xFFFFFFFF:032b}"[::-1], 2) for i in (5, 4000)]
    assert math[25].split()[2:] == [f"{w:08x}" for w in brev]            # f24: __brev(i * 40503)
    warp = [sum(3 * j for j in range(i // 32 * 32, i // 32 * 32 + 32)) for i in (5, 4000)]
    assert math[33].split()[2:] == [f"{w:08x}" for w in warp]            # f32: cg::reduce of 3i over the warp
    # lang.cu: the device printf, and max(f - t) with f = thrice(Sq(t / 2).area()) for odd t, twice(Ci(t / 4)) else
    lang = _h100("lang").splitlines()
    assert lang[0] == "fmt: %d %5.2f %e %x %s %c %d %u|%-4d|" % (-7, 3.14159, 12345.678, 255, "str", "Z",
                                                                 -1234567890123, 4000000000, 42)
    f32 = np.float32
    side = [f32(t) * f32(0.5) if t % 2 else f32(t) * f32(0.25) for t in range(32)]
    fs = [f32(3) * (r * r) if t % 2 else f32(2) * (f32(3.25) * r * r) for t, r in enumerate(side)]
    top = float(max(f - f32(t) for t, f in enumerate(fs)))
    mant, exp = float.hex(top)[4:].split("p")
    assert lang[1].split()[-1] == f"0x1.{mant.rstrip('0')}p{exp}"
