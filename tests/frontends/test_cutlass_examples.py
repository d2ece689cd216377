"""CUTLASS 4.2's own examples under `tcemu exec`: the Hopper GEMMs, each verifying its output against CUTLASS's
reference GEMM ("Disposition: Passed"), the FMHA examples 88 (Hopper) and 77 (Blackwell, --arch sm100) against their
reference attention kernels (" [OK] "), and the CuTe tutorials as shipped (the Blackwell ones against a host GEMM;
tutorial 01 ends at tcemu's report of its missing proxy fence: run_examples.FINDINGS). Compiling one takes minutes
and running one up to an hour (88), so CI does neither: these tests run only with TCEMU_CUTLASS_EXAMPLES=1, on a
binary that scripts/cutlass/run_examples.py built into ~/.cache/tcemu/cutlass-examples (TCEMU_CACHE moves the
root), and skip without one. The arguments and SM counts are the script's (EXAMPLES); docs/guide.md has the table
of runs."""
import os
import subprocess

import pytest

from cudakit import cutlass_script, newest_build

run_examples = cutlass_script("run_examples")


def _binary(name: str) -> str:
    return newest_build(run_examples.cache_root(), name,
                        f"scripts/cutlass/run_examples.py --cutlass DIR --build-only --only {name}")


@pytest.mark.slow
@pytest.mark.parametrize("example", run_examples.EXAMPLES, ids=[e[0] for e in run_examples.EXAMPLES])
def test_cutlass_example_passes_its_own_verification(example):
    name, _, args, pattern, count, sms = example
    if os.environ.get("TCEMU_CUTLASS_EXAMPLES") != "1":
        pytest.skip("CUTLASS's examples take minutes each on the interpreter: set TCEMU_CUTLASS_EXAMPLES=1")
    path = _binary(name)
    if subprocess.run(["g++", "--version"], capture_output=True).returncode:
        pytest.skip("tcemu's libcudart needs g++")
    r = run_examples.run(path, args, sms, pattern, timeout=7200, arch=run_examples.arch_for(name))
    if name in run_examples.FINDINGS:
        assert r["rc"] == 1 and run_examples.FINDINGS[name] in r["stderr"], r["stderr"][-3000:]
        return
    assert r["rc"] == 0, r["stdout"][-2000:] + r["stderr"][-3000:]
    assert r["passes"] == count and r["fails"] == 0, r["stdout"][-2000:]
    assert r["launches"] and r["launches"] >= 1, r["stderr"][-2000:]


@pytest.mark.slow
def test_blackwell_fmha_with_the_race_checks_off_passes_its_own_check(monkeypatch):
    # 77 stops at tcemu's tensor-memory race report (FINDINGS); with the race checks off (TCEMU_EXEC_RACECHECK=0) its
    # kernel's O and LSE pass the example's own reference check: " [OK]  tma ws 256x128 acc fp32 individual"
    if os.environ.get("TCEMU_CUTLASS_EXAMPLES") != "1":
        pytest.skip("set TCEMU_CUTLASS_EXAMPLES=1")
    name, _, args, pattern, count, sms = next(e for e in run_examples.EXAMPLES if e[0] == "77")
    monkeypatch.setenv("TCEMU_EXEC_RACECHECK", "0")
    r = run_examples.run(_binary(name), args, sms, pattern, timeout=7200, arch=run_examples.arch_for(name))
    assert r["rc"] == 0 and r["passes"] == count == 1 and r["fails"] == 0, r["stdout"][-2000:] + r["stderr"][-3000:]


@pytest.mark.slow
def test_cute_wgmma_tutorial_at_one_k_tile_reads_past_a():
    # wgmma_sm90.cu's prologue copies K_PIPE_MAX - 1 = 2 k-tiles whatever K is: at K = 64 the second reads past A
    if os.environ.get("TCEMU_CUTLASS_EXAMPLES") != "1":
        pytest.skip("set TCEMU_CUTLASS_EXAMPLES=1")
    args, fragments = run_examples.K_TILE_FINDING
    r = run_examples.run(_binary("cute-wgmma"), args, None, r"^CUTE_GEMM:", timeout=1800)
    assert r["rc"] == 1 and r["passes"] == 0, r["stderr"][-3000:]
    for f in fragments:
        assert f in r["stderr"], r["stderr"][-3000:]


def test_the_script_lists_each_example_once_with_a_pass_count():
    names = [e[0] for e in run_examples.EXAMPLES]
    assert names == ["48", "49", "54", "55", "57", "62", "67", "88", "77", "cute-wgmma", "cute-wgmma-tma",
                     "cute-01", "cute-02", "cute-03", "cute-04", "cute-05"]
    for name, source, args, pattern, count, sms in run_examples.EXAMPLES:
        assert source.startswith(name + "_" if name[0].isdigit() else "cute/tutorial/") and source.endswith(".cu")
        assert count >= 1 and (sms is None or 1 <= sms <= 132)
    assert run_examples.exec_options(8) == ["--summary", "--launch-timeout", "0", "--sm-count", "8"]
    assert run_examples.exec_options(None) == ["--summary", "--launch-timeout", "0"]
    assert run_examples.exec_options(1, "sm100") == ["--summary", "--launch-timeout", "0", "--arch", "sm100",
                                                     "--sm-count", "1"]
    assert set(run_examples.FINDINGS) <= set(names)


def test_the_blackwell_examples_build_for_sm100a_and_88_keeps_its_cmake_flags():
    # the Hopper GEMMs' flags (and so their cache keys) are as before: nothing added
    assert [run_examples.flags_for(n) for n in ("48", "67", "cute-wgmma")] == [[], [], []]
    assert run_examples.flags_for("88") == ["--use_fast_math"]
    assert run_examples.flags_for("77") == ["--use_fast_math", "-DFP16", run_examples.GENCODE_SM100]
    cmd = run_examples.nvcc_command("/C", "/R", "cute/tutorial/blackwell/02_mma_tma_sm100.cu", "out",
                                    run_examples.flags_for("cute-02"))
    assert run_examples.GENCODE not in cmd and cmd.count(run_examples.GENCODE_SM100) == 1
    assert [run_examples.arch_for(n) for n in ("88", "77", "cute-wgmma-tma", "cute-05")] == \
        [None, "sm100", None, "sm100"]



def _fmha_record(tmp_path, o, o_ref, lse, lse_ref):
    """A two-launch record as `tcemu exec --record` writes it: the FMHA kernel (outputs O, then LSE, in allocation
    order) and the example's reference kernel (O_ref, LSE_ref)."""
    import json

    def buf(addr, after):
        return {"address": addr, "bytes": after.nbytes, "role": "output", "data": (0 * after).tobytes().hex(),
                "expected": after.tobytes().hex()}
    launches = [{"entry": "_ZN7cutlass13device_kernelINS_4fmha6kernel13FmhaKernelTma",
                 "buffers": [buf(0x1000, o), buf(0x2000, lse)]},
                {"entry": "_Z21fmha_reference_kernelIN4cute5tuple",
                 "buffers": [buf(0x3000, o_ref), buf(0x4000, lse_ref)]}]
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"launches": launches}))
    return str(path)


def test_fmha_record_check_applies_the_examples_thresholds(tmp_path):
    import numpy as np
    o = np.linspace(-1, 1, 64).astype(np.float16)
    lse = np.linspace(0, 4, 8).astype(np.float32)
    near = o.copy()
    near[5] += np.float16(0.0009765625)   # one fp16 step of 1 at 0.5..1: within 1e-2 / 1e-3
    lines = run_examples.fmha_record_check(_fmha_record(tmp_path, o, near, lse, lse))
    assert lines == ["launch 0 _ZN7cutlass13device_kernelINS_4fmha6kernel13FmhaKernelTma...: O max 9.77e-04 mean "
                     "1.53e-05, LSE max 0.00e+00 mean 0.00e+00 -> within the example's thresholds"]
    far = o.copy()
    far[5] += np.float16(0.03125)         # planted: one element off by 0.03
    lines = run_examples.fmha_record_check(_fmha_record(tmp_path, o, far, lse, lse))
    assert lines[0].endswith("O max 3.12e-02 mean 4.88e-04, LSE max 0.00e+00 mean 0.00e+00 -> OUTSIDE the thresholds")
    off = lse.copy()
    off[:] += np.float32(0.002)           # planted: every LSE off by 2e-3, the mean over 1e-3
    assert run_examples.fmha_record_check(_fmha_record(tmp_path, o, o, lse, off))[0].endswith("OUTSIDE the thresholds")
