"""`tcemu exec`: unmodified CUDA programs run through tcemu's libcudart.so (tcemu/frontends/cuda).

The programs are tests/fixtures/cuda/*.cu, compiled once per session with nvcc into a temporary folder (the
needs_nvcc tests skip without nvcc or g++); each run starts a Python in the program, so those tests are slow.
The fatbinary, ELF and CLI tests at the top need nothing."""
import concurrent.futures
import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import buildcache
from cudakit import ROOT, exec_nvcc, outputs, replay_recorded, tcemu_exec, unmatched
import cute
from tcemu.frontends.cuda import build, elf, fatbin
from tcemu.frontends.cuda.build import CudaExecError

SOURCES = os.path.join(ROOT, "tests", "fixtures", "cuda")
GENCODE = "-gencode=arch=compute_90a,code=[sm_90a,compute_90a]"


# ------------------------------------------------------------------------------------------- no compiler needed

def _fatbin(images):
    """A fatbinary of (kind, arch, flags, payload, uncompressed size) images, laid out as nvcc writes them."""
    body = b""
    for kind, arch, flags, payload, usize in images:
        head = bytearray(64)
        struct.pack_into("<HHIQI", head, 0, kind, 0x101, 64, len(payload), len(payload) if usize else 0)
        struct.pack_into("<I", head, 28, arch)
        struct.pack_into("<Q", head, 40, flags)
        struct.pack_into("<Q", head, 56, usize)
        body += bytes(head) + payload
    return struct.pack("<IHHQ", fatbin.MAGIC, 1, 16, len(body)) + body


PTX90 = b".version 9.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\nret;\n}\n\0\0\0"


def test_fatbin_plain_ptx_is_chosen_beside_a_cubin():
    data = _fatbin([(2, 90, 0x11, b"\x7fELF" + b"\0" * 60, 0), (1, 90, 0x11, PTX90, 0)])
    assert [im.what for im in fatbin.images(data)] == ["cubin sm_90", "PTX compute_90"]
    assert fatbin.choose_ptx(data, "sm90", "k") == PTX90.split(b"\0")[0].decode()


def test_fatbin_without_runnable_ptx_names_the_gencode():
    data = _fatbin([(2, 80, 0x11, b"\x7fELF" + b"\0" * 60, 0)])
    with pytest.raises(CudaExecError, match=r"kernel k: the program carries no PTX that tcemu's sm_90a can run "
                                            r"\(its fatbinary holds: cubin sm_80\); tcemu runs PTX, not SASS: rebuild "
                                            r"with -gencode=arch=compute_90a,code=\[sm_90a,compute_90a\]"):
        fatbin.choose_ptx(data, "sm90", "k")
    # sm_90a PTX is arch-specific: a B200 cannot run it (PTX ISA 5.1, arch-specific features)
    data = _fatbin([(1, 90, 0x11, PTX90, 0)])
    with pytest.raises(CudaExecError, match=r"holds: PTX sm_90a\).*compute_100a,code=\[sm_100a,compute_100a\]"):
        fatbin.choose_ptx(data, "sm100", "k")


def test_runs_on_rules():
    assert fatbin.runs_on("sm_90a", "sm90") and fatbin.runs_on("sm_80", "sm90") and fatbin.runs_on("sm_90", "sm100")
    assert not fatbin.runs_on("sm_90a", "sm100") and not fatbin.runs_on("sm_100a", "sm90")
    assert not fatbin.runs_on("sm_120", "sm100") and fatbin.runs_on("sm_100f", "sm100")


def test_lz4_block_with_an_overlapping_match():
    # nvcc -compress-mode=speed's first bytes: 1 literal "\n", a match at offset 1 of 7 bytes (8 "\n" in all),
    # then a last token of literals only (LZ4 block format)
    src = b"\x13\n\x01\x00" + b"\x50hello"
    assert fatbin.lz4_block(src, 13) == b"\n" * 8 + b"hello"
    data = _fatbin([(1, 90, 0x2011, src, 13)])
    assert fatbin.ptx_text(fatbin.images(data)[0]) == "\n" * 8 + "hello"


def test_bad_fatbinary_is_a_named_error():
    with pytest.raises(CudaExecError, match="magic 0x12345678 is not a fatbinary's"):
        fatbin.images(struct.pack("<IHHQ", 0x12345678, 1, 16, 0))
    data = bytearray(_fatbin([(1, 90, 0x11, PTX90, 0)]))
    struct.pack_into("<Q", data, 16 + 8, 1 << 20)  # the image claims more bytes than the fatbinary holds
    with pytest.raises(CudaExecError, match="runs past the fatbinary"):
        fatbin.images(bytes(data))


def test_elf_reader(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    assert elf.read(str(script)) is None
    info = elf.read(sys.executable)  # a real ELF executable without CUDA
    assert info is not None and info.cudart is None and not info.static_cudart


def test_stubs_are_weak_and_name_themselves():
    text = build.stubs_source(["cudaGraphCreate"])
    assert 'extern "C" __attribute__((weak)) void cudaGraphCreate(void) { tcemu_unsupported("cudaGraphCreate", ' \
           '__builtin_return_address(0)); }' in text
    with open(build.SYMBOLS, encoding="utf-8") as fh:
        names = build.implemented_symbols(fh.read())
    assert len(names) == 422 and "cudaMalloc" in names and "cudaGraphLaunch" in names


def test_recorded_buffer_bytes_start_the_replay():
    from tcemu import launches
    buf = {"name": "x", "role": "output", "dtype": "bytes", "storage": [4], "bytes": 4, "address": 256}
    got = launches.input_arrays({"buffers": [{**buf, "data": "01020304"}]}, 0)["x"]
    assert got.tolist() == [1, 2, 3, 4]                                  # recorded, not poisoned
    assert launches.input_arrays({"buffers": [buf]}, 0)["x"].tolist() == [0xFF] * 4   # the control: no data
    with pytest.raises(launches.LaunchRecordError, match=r"buffers\['x'\].data: must be the hex of its 4 bytes"):
        launches.input_arrays({"buffers": [{**buf, "data": "0102"}]}, 0)
    with pytest.raises(launches.LaunchRecordError, match=r"buffers\['x'\].data: is not hex"):
        launches.input_arrays({"buffers": [{**buf, "data": "zz020304"}]}, 0)


PTX_VAR = """.version 8.0
.target sm_90a
.address_size 64
.visible .global .align 4 .u32 count;
.visible .entry bump()
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<3>;
  mov.u64 %rd1, count;
  ld.global.u32 %r1, [%rd1];
  add.u32 %r2, %r1, 1;
  st.global.u32 [%rd1], %r2;
  ret;
}
"""


def test_recorded_symbols_map_the_module_variables_in_place():
    from tcemu import launches
    buf = {"name": "__device__ count", "role": "output", "dtype": "bytes", "storage": [4], "bytes": 4,
           "address": 4096, "data": "07000000"}
    rec = {"entry": "bump", "grid": [1, 1, 1], "block": [1, 1, 1], "cluster": [1, 1, 1], "shared_bytes": 0,
           "params": [], "param_blob": "", "pointers": [], "tensormaps": [], "encodes": [], "buffers": [buf],
           "symbols": [{"name": "count", "address": 4096, "bytes": 4}]}
    assert launches.replay(rec, PTX_VAR, printf="collect").outputs["__device__ count"].tolist() == [8, 0, 0, 0]
    old = {k: v for k, v in rec.items() if k != "symbols"}   # a record from before the field: still replays,
    assert launches.replay(old, PTX_VAR, printf="collect").outputs["__device__ count"].tolist() == [7, 0, 0, 0]
    with pytest.raises(launches.LaunchRecordError, match=r"symbols\[0\]: count at 0x2000 \(4 bytes\) does not lie "
                                                         r"inside one recorded buffer"):
        launches.replay({**rec, "symbols": [{"name": "count", "address": 8192, "bytes": 4}]}, PTX_VAR)
    with pytest.raises(launches.LaunchRecordError, match=r"symbols\[1\].name: 'count' appears twice"):
        launches.replay({**rec, "symbols": rec["symbols"] * 2}, PTX_VAR)
    with pytest.raises(launches.LaunchRecordError, match="symbols: comes from the launch record"):
        launches.replay(rec, PTX_VAR, symbols={"count": 4096})


def test_help_describes_every_option(capsys):
    from tcemu.cli import main
    with pytest.raises(SystemExit) as e:
        main(["exec", "--help"])
    assert e.value.code == 0
    flat = " ".join(capsys.readouterr().out.split())
    for opt in ("--arch {sm90,sm100}", "--check-layouts, --no-check-layouts", "--continue-on-fault",
                "--record OUT.json", "--zero-init-shared", "--sm-count N", "--launch-timeout SECONDS", "--summary", "PROGRAM", "ARGS"):
        assert opt in flat, opt
    assert "-cudart shared -gencode=arch=compute_90a,code=[sm_90a,compute_90a]" in flat


def test_launch_timeout_must_be_seconds(capsys):
    from tcemu.cli import main
    with pytest.raises(SystemExit) as e:
        main(["exec", "--launch-timeout", "-1", "--", "/nonexistent/prog"])
    assert e.value.code == 2
    assert "argument --launch-timeout: must be a number of seconds (0: no limit), got '-1'" in capsys.readouterr().err


def test_sm_count_is_bounded_by_the_gpu(capsys):
    from tcemu.cli import main
    with pytest.raises(SystemExit):
        main(["exec", "--sm-count", "0", "--", "/nonexistent/prog"])
    assert "argument --sm-count: must be a number of SMs from 1 to 148, got '0'" in capsys.readouterr().err
    assert main(["exec", "--sm-count", "140", "--", "/nonexistent/prog"]) == 2       # an H100 has 132
    assert capsys.readouterr().err == "tcemu: error: CudaExecError: --sm-count: 140 is more SMs than the sm90 GPU " \
                                      "has (132)\n"
    assert main(["exec", "--arch", "sm100", "--sm-count", "140", "--", "/nonexistent/prog"]) == 2   # a B200: 148
    assert "PROGRAM: /nonexistent/prog: no such program" in capsys.readouterr().err


def test_launch_timeout_reaches_the_interpreter(monkeypatch):
    from tcemu.frontends.cuda import runtime
    monkeypatch.setenv("TCEMU_EXEC_TIMEOUT", "0.0")
    assert runtime._timeout() is None                     # 0: no limit
    monkeypatch.setenv("TCEMU_EXEC_TIMEOUT", "7200.0")
    assert runtime._timeout() == 7200.0
    monkeypatch.delenv("TCEMU_EXEC_TIMEOUT")
    assert runtime._timeout() == 600.0                    # tcemu.ptx's own default


def test_summary_counts_launches_per_kernel(monkeypatch):
    from tcemu.frontends.cuda import runtime
    monkeypatch.setattr(runtime, "_launches", {"fill": [3, 12.25], "gemm": [1, 0.5]})
    assert runtime.summary() == ("4 kernel launches (2 distinct kernels), 12.8 s in the interpreter\n"
                                 "      3 x     12.2 s  fill\n"
                                 "      1 x      0.5 s  gemm")
    monkeypatch.setattr(runtime, "_launches", {"k": [1, 0.04]})
    assert runtime.summary().splitlines()[0] == "1 kernel launch (1 distinct kernel), 0.0 s in the interpreter"


def test_launch_log_appends_one_line_per_launch(monkeypatch, tmp_path):
    from tcemu.frontends.cuda import runtime
    log = tmp_path / "launches"
    monkeypatch.delenv("TCEMU_EXEC_LAUNCH_LOG", raising=False)
    runtime._log_launch("k", (1, 1, 1), (32, 1, 1), (1, 1, 1), 0.5, "ok")     # unset: nothing written
    assert not log.exists()
    monkeypatch.setenv("TCEMU_EXEC_LAUNCH_LOG", str(log))
    runtime._log_launch("gemm", (6, 1, 1), (384, 1, 1), (1, 2, 1), 1.25, "ok")
    runtime._log_launch("fill", [2, 1, 1], [128, 1, 1], [1, 1, 1], 0.0004, "failed")
    assert log.read_text() == ("1.250 s grid (6, 1, 1) block (384, 1, 1) cluster (1, 2, 1) ok gemm\n"
                               "0.000 s grid (2, 1, 1) block (128, 1, 1) cluster (1, 1, 1) failed fill\n")


def test_missing_program_is_bad_input(capsys):
    from tcemu.cli import main
    assert main(["exec", "--", "/nonexistent/prog"]) == 2
    assert capsys.readouterr().err == "tcemu: error: CudaExecError: PROGRAM: /nonexistent/prog: no such program\n"


# ---------------------------------------------------------------------------------------------- compiled programs

def _compiler(nvcc):
    """nvcc's and the host compiler's versions: part of every cached program's key."""
    return "".join(subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout
                   for tool in (nvcc, "g++"))


def _nvcc_build(nvcc, args, name):
    """A build step for buildcache.cached: nvcc `args` -o the path it is given."""
    def build(path):
        p = subprocess.run([nvcc, *args, "-o", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=900)
        assert p.returncode == 0, f"nvcc {name}: {p.stdout[-3000:]}"
    return build


@pytest.fixture(scope="session")
def programs():
    """Every test program, compiled (in parallel, or taken from the test cache: tests/support/buildcache.py):
    name -> path."""
    nvcc = exec_nvcc()
    basics, faults = os.path.join(SOURCES, "basics.cu"), os.path.join(SOURCES, "faults.cu")
    jobs = {"basics": ["-cudart", "shared", GENCODE, basics],
            "faults": ["-cudart", "shared", GENCODE, faults],
            "faults_lz4": ["-cudart", "shared", GENCODE, "-compress-mode=speed", faults],
            "faults_sm100": ["-cudart", "shared", "-gencode=arch=compute_100a,code=[sm_100a,compute_100a]", faults],
            "sass_only": ["-cudart", "shared", "-gencode=arch=compute_80,code=sm_80", faults],
            "static": [GENCODE, faults],
            "symbols": ["-cudart", "shared", GENCODE, os.path.join(SOURCES, "symbols.cu")],
            "graph": ["-cudart", "shared", GENCODE, os.path.join(SOURCES, "graph.cu")],
            "graph_api": ["-cudart", "shared", GENCODE, os.path.join(SOURCES, "graph_api.cu")],
            "streams": ["-cudart", "shared", GENCODE, os.path.join(SOURCES, "streams.cu")],
            # linked with tcemu's libcuda.so.1 (this machine's toolkit may have no driver stub to link with)
            "driver": ["-cudart", "shared", GENCODE, "-L" + build.library_dir(), "-l:" + build.DRIVER,
                       os.path.join(SOURCES, "driver.cu")]}
    compiler = _compiler(nvcc)
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        done = {name: pool.submit(buildcache.cached, "cuda", name,
                                  buildcache.digest(compiler, *flags[:-1], open(flags[-1], "rb").read()),
                                  _nvcc_build(nvcc, flags, name)) for name, flags in jobs.items()}
        return {name: job.result() for name, job in done.items()}


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_plain_cuda_program_passes(programs):
    out = tcemu_exec("--", programs["basics"])
    assert out.returncode == 0, out.stderr
    assert out.stdout == ("device NVIDIA H100 80GB HBM3 (tcemu), sm_90, 132 SMs\n"
                          "cluster of 2 CTAs, rank 0\n"
                          "PASS (sum 1000, timed events)\n")
    assert out.stderr == ""   # everything freed: no leak report


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_summary_names_every_kernel_launched(programs, tmp_path):
    log = tmp_path / "launches"
    out = tcemu_exec("--summary", "--launch-timeout", "0", "--", programs["basics"],
                     env={"TCEMU_EXEC_LAUNCH_LOG": str(log)})
    assert out.returncode == 0, out.stderr
    assert [line.split()[-2:] for line in log.read_text().splitlines()] == [
        ["ok", "_Z4vaddPKfS0_Pfi"], ["ok", "_Z6reducePKiPii"], ["ok", "_Z12cluster_swapPi"]]
    assert out.stdout.endswith("PASS (sum 1000, timed events)\n")
    lines = out.stderr.splitlines()
    assert lines[0].startswith("tcemu exec: 3 kernel launches (3 distinct kernels), ") and len(lines) == 4
    assert [line.split()[::4] for line in lines[1:]] == [["1", "_Z4vaddPKfS0_Pfi"], ["1", "_Z6reducePKiPii"],
                                                         ["1", "_Z12cluster_swapPi"]]


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_sm_count_is_what_the_program_sees(programs):
    out = tcemu_exec("--sm-count", "16", "--", programs["basics"])
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("device NVIDIA H100 80GB HBM3 (tcemu), sm_90, 16 SMs\n")


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_correct_control_and_device_printf(programs):
    out = tcemu_exec("--", programs["faults"], "printf")
    assert out.returncode == 0, out.stderr
    assert out.stdout == ("hello from thread 0, x = 7\nhello from thread 1, x = 7\n"
                          "launch: cudaSuccess, synchronize: cudaSuccess\nprintf: h[63] = 63\n")
    assert out.stderr == ""


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_sm100_program_runs_as_a_b200(programs):
    out = tcemu_exec("--arch", "sm100", "--", programs["faults_sm100"], "printf")
    assert out.returncode == 0, out.stderr
    assert out.stdout == ("hello from thread 0, x = 7\nhello from thread 1, x = 7\n"
                          "launch: cudaSuccess, synchronize: cudaSuccess\nprintf: h[63] = 63\n")
    out = tcemu_exec("--", programs["faults_sm100"], "ok")   # sm_100a PTX on the default H100: no image
    assert out.returncode == 2 and "(its fatbinary holds: cubin sm_100, PTX sm_100a)" in out.stderr


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_lz4_compressed_ptx_runs(programs):
    out = tcemu_exec("--", programs["faults_lz4"], "ok")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "launch: cudaSuccess, synchronize: cudaSuccess\nok: h[63] = 63\n"


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_out_of_bounds_write_is_reported_and_ends_the_program(programs):
    out = tcemu_exec("--", programs["faults"], "oob")
    assert out.returncode == 1
    assert out.stdout == ""   # the program never reaches its own report
    err = out.stderr
    assert "tcemu exec: kernel fault in _Z4fillPiii (grid (1, 1, 1), block (128, 1, 1), cluster (1, 1, 1)):" in err
    assert "MemoryFault: st.global.u32 [%rd4], %r1 (line " in err
    assert "thread 64 accesses 4 bytes at global address " in err
    assert "outside every allocation: 0 bytes past the end of 'cudaMalloc#0x" in err
    assert "tcemu exec: the launch of _Z4fillPiii came from main in " + programs["faults"] in err
    assert err.endswith("tcemu exec: the program ends at this kernel fault\n")


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_continue_on_fault_returns_launch_failure(programs):
    out = tcemu_exec("--continue-on-fault", "--", programs["faults"], "oob")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("launch: cudaErrorLaunchFailure, synchronize: cudaErrorLaunchFailure\n")
    assert "MemoryFault" in out.stderr


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_leak_and_double_free_are_reported(programs):
    out = tcemu_exec("--", programs["faults"], "leak")
    assert out.returncode == 0
    lines = out.stderr.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("tcemu exec: leaked 256 bytes at 0x") and \
        f"(cudaMalloc, called from main in {programs['faults']} (+0x" in lines[0]
    assert lines[1] == "tcemu exec: LEAK SUMMARY: 256 bytes leaked in 1 allocation"
    out = tcemu_exec("--", programs["faults"], "double")
    assert "second free: cudaErrorInvalidValue\n" in out.stdout
    assert "): double free: these 256 bytes (cudaMalloc, called from main in " in out.stderr
    assert out.stderr.endswith("tcemu exec: ERROR SUMMARY: 1 double free\n")
    assert "leaked" not in out.stderr


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_copy_past_an_allocation_is_invalid_value(programs):
    out = tcemu_exec("--", programs["faults"], "memcpy")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("oversized copy: cudaErrorInvalidValue\nexact copy: cudaSuccess\n")
    assert out.stderr.startswith("tcemu exec: cudaMemcpy: the destination range [0x")
    assert out.stderr.count("\n") == 1 and ", +260 bytes) is not inside one device allocation; called from main in " \
        in out.stderr


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_dynamic_shared_memory_above_48k_needs_the_attribute(programs):
    out = tcemu_exec("--", programs["faults"], "smem")
    assert "64 KiB launch: cudaErrorInvalidValue, out[0] = " in out.stdout
    assert "tcemu exec: <<<>>>: _Z3bigPi asks for 65536 bytes of dynamic shared memory; above 48 KiB a kernel needs " \
           "cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize) (set: 49152); called from main in " \
        in out.stderr
    out = tcemu_exec("--", programs["faults"], "smem_attr")   # the control
    assert out.returncode == 0, out.stderr
    assert "64 KiB launch: cudaSuccess, out[0] = 31\n" in out.stdout and out.stderr == ""


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_empty_grid_is_invalid_configuration_named(programs):
    out = tcemu_exec("--", programs["faults"], "grid0")
    assert out.returncode == 0, out.stderr
    assert "empty grid: cudaErrorInvalidConfiguration\n" in out.stdout and "grid0: h[63] = 63\n" in out.stdout
    assert out.stderr.startswith("tcemu exec: <<<>>>: _Z4fillPiii with grid (0, 1, 1) and block (128, 1, 1): every "
                                 "dimension must be at least 1 and a block at most 1024 threads "
                                 "(cudaErrorInvalidConfiguration); called from main in ")
    out = tcemu_exec("--", programs["faults"], "ok")   # the control: the same launch with one CTA
    assert out.returncode == 0 and out.stderr == "" and "ok: h[63] = 63\n" in out.stdout


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_driver_calls_bind_to_tcemu(programs):
    assert build.DRIVER in elf.read(programs["driver"]).needed
    out = tcemu_exec("--", programs["driver"])
    assert out.returncode == 0, out.stderr
    assert out.stdout == "cuGetErrorString: 0 invalid argument\ncuMemsetD32Async: 0, 7 7 7 7\n" and out.stderr == ""
    out = tcemu_exec("--", programs["driver"], "missing")   # a driver call tcemu does not implement
    assert out.returncode == 2 and "unreachable" not in out.stdout
    assert out.stderr == "tcemu exec: unsupported CUDA driver call cuDeviceGetCount (tcemu's libcuda.so.1; the " \
                         "driver calls tcemu implements are cuTensorMapEncodeTiled, cuGetErrorString, " \
                         "cuGetErrorName, cuMemsetD32Async and cuMemsetD8Async)\n"


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_unwritten_shared_read_is_a_fault_unless_zero_initialised(programs):
    out = tcemu_exec("--", programs["faults"], "uninit")
    assert out.returncode == 1 and "uninit:" not in out.stdout
    assert "MemoryFault: ld.shared.u32 " in out.stderr and ": thread 32 reads shared address 0x" in out.stderr
    assert "which nothing wrote (tcemu exec --zero-init-shared to read zeros)" in out.stderr
    out = tcemu_exec("--zero-init-shared", "--", programs["faults"], "uninit")   # the control
    assert out.returncode == 0, out.stderr
    assert "uninit: cudaSuccess, out[31] = 32, out[32] = 0\n" in out.stdout and out.stderr == ""


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_shared_race_is_a_fault_unless_racecheck_is_off(programs):
    out = tcemu_exec("--", programs["faults"], "race")
    assert out.returncode == 1 and "race:" not in out.stdout
    assert "HazardError: " in out.stderr and "race on shared address" in out.stderr
    assert "no synchronisation orders the two warps' accesses" in out.stderr
    out = tcemu_exec("--", programs["faults"], "race", env={"TCEMU_EXEC_RACECHECK": "0"})   # the control
    assert out.returncode == 0, out.stderr
    assert "race: cudaSuccess\n" in out.stdout and out.stderr == ""


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_unsupported_call_stops_the_program_naming_it(programs):
    out = tcemu_exec("--", programs["faults"], "graph")
    assert out.returncode == 2
    assert "unreachable" not in out.stdout
    assert out.stderr.startswith("tcemu exec: unsupported CUDA runtime call cudaGraphAddMemAllocNode (called from "
                                 "main in " + programs["faults"])


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_program_without_ptx_names_the_gencode(programs):
    out = tcemu_exec("--", programs["sass_only"], "ok")
    assert out.returncode == 2
    assert ("the program carries no PTX that tcemu's sm_90a can run (its fatbinary holds: cubin sm_80); tcemu runs "
            "PTX, not SASS: rebuild with -gencode=arch=compute_90a,code=[sm_90a,compute_90a]") in out.stderr
    out = tcemu_exec("--arch", "sm100", "--", programs["faults"], "ok")
    assert out.returncode == 2
    assert "rebuild with -gencode=arch=compute_100a,code=[sm_100a,compute_100a]" in out.stderr


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_static_cudart_is_refused(programs):
    info = elf.read(programs["static"])
    assert info.static_cudart and info.defines_register_fatbinary and info.cudart is None
    assert elf.read(programs["faults"]).cudart == "libcudart.so.13"
    out = tcemu_exec("--", programs["static"], "ok")
    assert out.returncode == 2
    assert out.stderr == (f"tcemu: error: CudaExecError: PROGRAM: {programs['static']} links the CUDA runtime "
                          "statically (nvcc's default, -cudart static), which tcemu cannot replace: rebuild it with "
                          "-cudart shared\n")


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_record_replays_to_the_same_bytes(programs, tmp_path):
    path = tmp_path / "run.json"
    out = tcemu_exec("--record", str(path), "--", programs["basics"])
    assert out.returncode == 0, out.stderr
    doc = json.loads(path.read_text())
    records = doc["launches"]
    assert [r["entry"] for r in records] == ["_Z4vaddPKfS0_Pfi", "_Z6reducePKiPii", "_Z12cluster_swapPi"]
    assert records[2]["cluster"] == [2, 1, 1] and records[1]["shared_bytes"] == 512
    for r in records:
        assert len(outputs(r)) == 1
        assert unmatched(replay_recorded(r, tmp_path, printf="collect"), r) == []
    run = subprocess.run([sys.executable, "-m", "tcemu.cli", "run", str(path), "--launch", "2", "--quiet"],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.endswith("_Z12cluster_swapPi: 4 CTAs, 142 warp instructions, " + run.stdout.split(", ")[-1])
    # the expected bytes are the program's: vadd's c = a + b
    a, b, c = (np.frombuffer(bytes.fromhex(x["data" if x["role"] == "input" else "expected"]), np.float32)
               for x in records[0]["buffers"][2:5])
    assert np.array_equal(c, a + b)


def _poly_line(coef, n=40):
    """symbols.cu's line for one launch of poly (x = i / 2: every value and the sum are exact in float32)."""
    y = [((coef[3] * v + coef[2]) * v + coef[1]) * v + coef[0] for v in (i / 2 for i in range(n))]
    return f"poly: y[3] = {y[3]:.5f}, y[39] = {y[39]:.5f}, sum = {sum(y):.5f}\n"


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_device_and_constant_variables_are_shared_with_the_host(programs):
    out = tcemu_exec("--", programs["symbols"], "ok")
    assert out.returncode == 0, out.stderr
    table = [3, 1, 4, 1, 5]
    assert out.stdout == (_poly_line([1, 2, 0.5, 0.25]) + _poly_line([1, 2, 3, 0.25])   # coef[2] set by offset
                          + "counter: 80\n"                                            # 40 threads, two launches
                          + "gather: " + " ".join(str(table[i % 5] * 10 + i) for i in range(8)) + "\n"
                          + "table (20 bytes): " + " ".join(str(2 * t) for t in table) + ", by address: "
                          + " ".join(str(2 * t) for t in table) + "\nerrors: cudaSuccess\n")
    assert out.stderr == ""   # the variables' memory is no leak


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_copy_past_a_variable_is_invalid_value_named(programs):
    out = tcemu_exec("--", programs["symbols"], "past")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "past: cudaErrorInvalidValue, shifted: cudaErrorInvalidValue, exact: cudaSuccess\n"
    lines = out.stderr.splitlines()
    assert len(lines) == 2   # the exact copy (the control) says nothing
    assert lines[0].startswith("tcemu exec: cudaMemcpyToSymbol: 20 bytes at offset 0 run past the end of "
                               "__constant__ coef (16 bytes) (cudaErrorInvalidValue); called from main in ")
    assert lines[1].startswith("tcemu exec: cudaMemcpyToSymbol: 16 bytes at offset 4 run past the end of "
                               "__constant__ coef (16 bytes) (cudaErrorInvalidValue); called from main in ")


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_unknown_symbol_is_invalid_symbol_named(programs):
    out = tcemu_exec("--", programs["symbols"], "unknown")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "unknown: cudaErrorInvalidSymbol (invalid device symbol), address: cudaErrorInvalidSymbol\n"
    lines = out.stderr.splitlines()
    assert len(lines) == 2
    for api, line in zip(("cudaMemcpyToSymbol", "cudaGetSymbolAddress"), lines):
        assert line.startswith(f"tcemu exec: {api}: 0x") and " is not a registered __device__ or __constant__ " \
            "variable (cudaErrorInvalidSymbol); called from main in " + programs["symbols"] in line


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_captured_graph_runs_in_order_each_launch(programs):
    out = tcemu_exec("--", programs["graph"])
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # memset, scale, add, host function, copy back: recorded, not run
    assert lines[0] == "capture: status 1, end cudaSuccess, 5 nodes, nothing ran: 0 0"
    for r in range(3):   # a = 0x01010101 * k + i + b, k = 3 as captured; add bumps b once per launch
        a = [0x01010101 * 3 + i + i * i + r for i in range(100)]
        assert lines[1 + r] == f"launch {r}: cudaSuccess, a[0] = {a[0]}, a[5] = {a[5]}, a[99] = {a[99]}, " \
                               f"sum = {sum(a)}, callbacks = {r + 1}"
    assert lines[4:] == ["after: status 0, cudaSuccess"]
    assert out.stderr == ""


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_capture_rules_are_cuda_errors_named(programs):
    out = tcemu_exec("--", programs["graph"], "sync")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "sync: cudaErrorStreamCaptureUnsupported, end: cudaErrorStreamCaptureInvalidated, graph null\n"
    assert out.stderr.startswith("tcemu exec: cudaStreamSynchronize on a capturing stream: "
                                 "cudaErrorStreamCaptureUnsupported, and the capture is invalidated; called from main "
                                 "in ") and out.stderr.count("\n") == 1
    out = tcemu_exec("--", programs["graph"], "legacy")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "legacy: cudaErrorStreamCaptureUnsupported\n"
    assert out.stderr.startswith("tcemu exec: cudaStreamBeginCapture: the legacy default stream cannot capture")


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_fault_in_a_graph_comes_at_its_launch(programs):
    out = tcemu_exec("--", programs["graph"], "oob")
    assert out.returncode == 1
    assert out.stdout == "capture: status 1, end cudaSuccess, 5 nodes, nothing ran: 0 0\n"   # capture runs nothing
    assert "tcemu exec: kernel fault in _Z5scalePiii (grid (2, 1, 1), block (64, 1, 1), cluster (1, 1, 1)):\n" \
           "  MemoryFault: ld.global.u32 " in out.stderr
    assert "thread 36 accesses 4 bytes at global address " in out.stderr and \
        "outside every allocation: 0 bytes past the end of 'cudaMalloc#0x" in out.stderr
    assert out.stderr.endswith("tcemu exec: the program ends at this kernel fault\n")


def _graph_api_out(k, c_hi=-1):
    """graph_api.cu's numbers for one launch: a = 5 (memset), a[i] = 5 k + i below 32, 5 * 3 + c_hi * i above,
    out[i] = a[i] + 2 a[i + 32]; the 2-D copy lands 4 rows of 8 in rows of 12 (the rest stays -1)."""
    a = [5 * k + i for i in range(32)] + [15 + c_hi * i for i in range(32, 64)]
    out = [a[i] + 2 * a[i + 32] for i in range(32)]
    return out, sum(out)


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_explicit_graph_runs_in_dependency_order_with_updated_parameters(programs):
    out = tcemu_exec("--", programs["graph_api"])
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # memset, lo, hi, combine, copy, child, host; 8 edges; the host node's edges added last
    assert lines[0] == "built: deps cudaSuccess, again cudaErrorInvalidValue, 7 nodes, 8 edges, 1 root (the memset: " \
                       "1), child type 4"
    assert lines[1] == "lo node: k = 1, c = 1, block 32"   # the arguments as added (k changed afterwards)
    assert lines[2] == "instantiate: cudaSuccess, nothing ran: 0 -1"
    for r in range(3):   # k set in the executable before each launch; the child's counter once per launch
        o, total = _graph_api_out(2 + r)
        assert lines[3 + r] == f"launch {r} (k {2 + r}): set cudaSuccess, launch cudaSuccess, out[0] = {o[0]}, " \
                               f"out[31] = {o[31]}, sum {total}, pad 1, tick {r + 1}, host calls {r + 1}"
    o, total = _graph_api_out(1, c_hi=-2)   # the update takes the graph's nodes: lo's k = 1, hi's c = -2
    assert lines[6] == f"update: cudaSuccess (result 0), out[0] = {o[0]}, out[31] = {o[31]}, sum {total}, tick 4"
    # the child graph's copy node, found through cudaGraphChildGraphNodeGetGraph, lands elsewhere in the executable
    assert lines[7] == "memcpy 1D: cudaSuccess, new place 5, old place 4, kernel parameters on a copy node: " \
                       "cudaErrorInvalidValue"
    assert lines[8] == "other topology: cudaErrorGraphExecUpdateFailure (result 2)"   # TopologyChanged
    assert len(lines) == 9
    assert out.stderr.startswith("tcemu exec: cudaGraphExecUpdate: the graph's topology differs from the one "
                                 "instantiated (cudaErrorGraphExecUpdateFailure); called from main in ")
    assert out.stderr.count("\n") == 1


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_graph_cycle_is_refused_at_instantiate(programs):
    out = tcemu_exec("--", programs["graph_api"], "cycle")
    assert out.returncode == 0, out.stderr
    assert out.stdout == ("cycle: add cudaSuccess, instantiate cudaErrorInvalidValue, exec null\n"
                          "removed: cudaSuccess, instantiate cudaSuccess, exec made\n")   # the control
    assert out.stderr.startswith("tcemu exec: cudaGraphInstantiate: the graph's dependencies form a cycle: nodes "
                                 "0 (kernel), 1 (kernel) (numbered in the order added, from 0) lie on it or after it "
                                 "(cudaErrorInvalidValue); called from cycle_case() in ")
    assert out.stderr.count("\n") == 1


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_multi_stream_capture_forks_and_joins(programs):
    out = tcemu_exec("--", programs["streams"])
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # nodes: 0 memset (s1), 1 upper half (s2), 2 lower half (s1), 3 combine (s1, after the join), 4 copy back
    assert lines[0] == "capture: s2 joined 1, deps at the join 2, end cudaSuccess, 5 nodes, 5 edges, 1 root"
    assert lines[1] == "edges: 0->1 0->2 2->3 1->3 3->4"
    o = [i - 3 * (i + 32) for i in range(32)]   # a[i] = i below, 3 i above; out = low - high
    for r in range(2):
        assert lines[2 + r] == f"launch {r}: cudaSuccess, out[1] = {o[1]}, out[31] = {o[31]}, sum {sum(o)}"
    # the executable launched into a capturing stream: a child graph node (type 4) before the memset (type 2)
    assert lines[4] == f"nested: cudaSuccess, 2 nodes (types 4 2), child of 5 nodes, out[31] = {o[31]}, device " \
                       "out[31] = 0"
    assert len(lines) == 5 and out.stderr == ""


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_unjoined_capture_is_stream_capture_unjoined(programs):
    out = tcemu_exec("--", programs["streams"], "unjoined")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "unjoined: s2 joined 1, end cudaErrorStreamCaptureUnjoined, graph null, capturing after: 0 0\n"
    assert out.stderr.startswith("tcemu exec: cudaStreamEndCapture: stream 2 forked from the capture "
                                 "(cudaStreamWaitEvent) and its work was never joined back into stream 1, where the "
                                 "capture began: record an event after its last work and wait on it in stream 1 "
                                 "(cudaErrorStreamCaptureUnjoined); called from main in ")


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_capture_boundary_rules_are_cuda_errors_named(programs):
    out = tcemu_exec("--", programs["streams"], "rules")
    assert out.returncode == 0, out.stderr
    # the external wait is a wait node (cudaGraphNodeTypeWaitEvent, 6), the control; the rest are CUDA's errors
    assert out.stdout == "rules: external wait cudaSuccess (node type 6), query cudaErrorCapturedEvent, merge " \
                         "cudaErrorStreamCaptureMerge, isolation cudaErrorStreamCaptureIsolation, ends " \
                         "cudaErrorStreamCaptureInvalidated cudaErrorStreamCaptureInvalidated, graphs null null\n"
    lines = out.stderr.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("tcemu exec: cudaEventQuery: the event was last recorded in a capturing stream "
                               "(cudaErrorCapturedEvent); called from main in ")
    assert lines[1].startswith("tcemu exec: cudaStreamWaitEvent: the stream takes part in another capture than the "
                               "event's: two captures cannot merge (cudaErrorStreamCaptureMerge); called from main in ")
    assert lines[2].startswith("tcemu exec: cudaStreamWaitEvent: a capturing stream waits on an event recorded "
                               "outside its capture: the dependency would cross the capture's boundary "
                               "(cudaErrorStreamCaptureIsolation; cudaEventWaitExternal makes it an external event "
                               "wait node); called from main in ")


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_record_of_device_variables_replays_byte_for_byte(programs, tmp_path):
    path = tmp_path / "vars.json"
    out = tcemu_exec("--record", str(path), "--", programs["symbols"], "ok")
    assert out.returncode == 0, out.stderr
    records = json.loads(path.read_text())["launches"]
    assert [r["entry"] for r in records] == ["_Z4polyPKfPfi", "_Z4polyPKfPfi", "_Z6gatherPii", "_Z5twicev"]
    checked = 0
    for r in records:
        syms = {s["name"]: s for s in r["symbols"]}
        assert {n: s["bytes"] for n, s in syms.items()} == {"coef": 16, "counter": 4, "table": 20}
        by_label = {b["name"]: b for b in r["buffers"]}
        for name, kind in (("coef", "__constant__"), ("counter", "__device__"), ("table", "__device__")):
            assert by_label[f"{kind} {name}"]["address"] == syms[name]["address"]   # the variable's own block
        assert unmatched(replay_recorded(r, tmp_path, printf="collect"), r) == [], r["entry"]
        checked += len(outputs(r))
    assert checked == 6   # poly: y and counter, twice; gather: out; twice: table
    # the variables written are the program's: counter 40 after the first poly, table doubled by twice
    counter = [b for b in records[0]["buffers"] if b["name"] == "__device__ counter"][0]
    assert int.from_bytes(bytes.fromhex(counter["expected"]), "little") == 40
    table = [b for b in records[3]["buffers"] if b["name"] == "__device__ table"][0]
    assert np.frombuffer(bytes.fromhex(table["expected"]), np.int32).tolist() == [6, 2, 8, 2, 10]
    # without the mapping (a record from before the field) the replay's own counter takes the atomics
    old = {k: v for k, v in records[0].items() if k != "symbols"}
    assert "__device__ counter" in unmatched(replay_recorded(old, tmp_path, printf="collect"), old)


@pytest.fixture(scope="session")
def cute_program():
    """The CuTe wgmma + TMA program (about 2 minutes of nvcc), with the nvidia-cutlass wheel's headers."""
    try:
        import cutlass_library  # the headers and the tutorial ship in the wheel's source/ folder
    except ImportError:
        pytest.skip("the nvidia-cutlass wheel (cutlass_library) is not installed")
    src = os.path.join(os.path.dirname(cutlass_library.__file__), "source")
    if not os.path.isfile(os.path.join(src, "examples", "cute", "tutorial", "hopper", "wgmma_tma_sm90.cu")):
        pytest.skip("the cutlass wheel carries no CuTe Hopper tutorial")
    nvcc = exec_nvcc()
    flags = ["-cudart", "shared", GENCODE, "-std=c++17", "--expt-relaxed-constexpr", "-I" + os.path.join(src, "include"),
             "-I" + os.path.join(src, "tools", "util", "include"), "-I" + os.path.join(src, "examples"),
             os.path.join(SOURCES, "cute_wgmma_tma.cu")]
    key = buildcache.digest(_compiler(nvcc), *flags[:-1], cute._headers_digest(os.path.join(src, "include")),
                            open(flags[-1], "rb").read())
    return buildcache.cached("cuda", "cute_wgmma_tma", key, _nvcc_build(nvcc, flags, "cute_wgmma_tma"))


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_cute_wgmma_tma_program_passes(cute_program):
    out = tcemu_exec("--", cute_program)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "PASS (256x128x128 wgmma + TMA GEMM)\n"
    assert out.stderr == ""


PAST_THE_END = ("MemoryFault: st.global.u16 [%rd127], %rs678 (line 7082), CTA (1, 1, 0), warp 1: thread 35 accesses 2 "
                "bytes at global address ", "32 bytes past the end of 'cudaMalloc#0x")
OVERLAP = ("HazardError: st.global.u16 ", "CTA (1, 0, 0), warp 1: WAW race on global address",
           "thread 32 (warp 1, CTA (0, 0, 0)) at st.global.u16", "bytes into 'cudaMalloc#0x")


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_cute_tutorial_unpredicated_tile_is_a_fault(cute_program):
    # M = 128: the 2x1 cluster rounds the grid up to two M tiles; the tutorial's epilogue has no bounds check, so
    # CTA (1, 0)'s rows 128.. land on CTA (0, 0)'s part of C (M-major) and CTA (1, 1)'s past its end. Which report
    # comes first depends on the order the CTAs' stores run in: with CTAs one at a time (TCEMU_LOCKSTEP=0) the
    # overlap, as the race between the two CTAs' stores (on a GPU: silent corruption); in lock-step either; without
    # the race checks, the store past the end of C
    def report(env):
        out = tcemu_exec("--", cute_program, "128", "256", "128", env=env)
        assert out.returncode == 1
        assert "came from cutlass::ClusterLauncher::launch(" in out.stderr
        return out.stderr
    alone, unchecked = report({"TCEMU_LOCKSTEP": "0"}), report({"TCEMU_EXEC_RACECHECK": "0"})   # one run each
    assert all(x in alone for x in OVERLAP)
    assert all(x in unchecked for x in PAST_THE_END)
    err = report({})
    assert all(x in err for x in OVERLAP) or all(x in err for x in PAST_THE_END)


def test_record_keeps_buffers_apart_whose_labels_repeat(tmp_path):
    # the runtime cuts long symbol names short, so two variables may carry one label: the address keeps them apart
    from tcemu import launches
    import tcemu.ptx as ptx
    from tcemu.frontends.cuda.record import Recorder
    rec = Recorder(str(tmp_path / "r.json"))
    prog = ptx.load(PTX_VAR).program("bump")
    a, b = np.array([7, 0, 0, 0], np.uint8), np.array([9, 0, 0, 0], np.uint8)
    bufs = [(4096, a, "__device__ count"), (8192, b, "__device__ count")]
    before = rec.before(bufs)
    a[0] = 8
    rec.add(0, PTX_VAR, "bump", prog, (1, 1, 1), (1, 1, 1), (1, 1, 1), 0, b"", bufs, before,
            symbols={"count": (4096, 4)})
    rec.write()
    with open(tmp_path / "r.json", encoding="utf-8") as fh:
        record = json.load(fh)["launches"][0]
    assert [x["name"] for x in record["buffers"]] == ["__device__ count", "__device__ count@0x2000"]
    rep = launches.replay(record, str(tmp_path / "r.m0.ptx"))
    assert rep.outputs["__device__ count"].tolist() == [8, 0, 0, 0]
