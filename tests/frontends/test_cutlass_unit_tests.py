"""CUTLASS 4.2's own sm90 GEMM unit tests (test/unit/gemm/device/sm90_gemm_*.cu) under `tcemu exec`, each test
checking CUTLASS's GEMM against its host reference over TestAll's sweep of problem sizes. One test takes minutes
to tens of minutes on the interpreter, so CI runs none: these run only with TCEMU_CUTLASS_EXAMPLES=1, on binaries
that scripts/cutlass/run_unit_tests.py built into ~/.cache/tcemu/cutlass-unit (TCEMU_CACHE moves the root), and
skip without one. The files and filters are the script's UNIT_RUNS; docs/guide.md has the table of runs."""
import os
import subprocess
import time

import pytest

from cudakit import cutlass_script, newest_build

run_unit_tests = cutlass_script("run_unit_tests")


def _binary(stem: str) -> str:
    return newest_build(run_unit_tests.cache_root("cutlass-unit"), stem,
                        f"scripts/cutlass/run_unit_tests.py --cutlass DIR --googletest DIR --build-only --files {stem}")


@pytest.mark.slow
@pytest.mark.parametrize("stem,gfilter", run_unit_tests.UNIT_RUNS,
                         ids=[f"{s}:{f}" for s, f in run_unit_tests.UNIT_RUNS])
def test_cutlass_unit_test_passes(stem, gfilter):
    if os.environ.get("TCEMU_CUTLASS_EXAMPLES") != "1":
        pytest.skip("CUTLASS's unit tests take minutes each on the interpreter: set TCEMU_CUTLASS_EXAMPLES=1")
    path = _binary(stem)
    if subprocess.run(["g++", "--version"], capture_output=True).returncode:
        pytest.skip("tcemu's libcudart needs g++")
    tests = run_unit_tests.list_tests(path, None, gfilter)
    assert tests, f"{stem}: no test matches {gfilter}"
    for test in tests:
        r = run_unit_tests.run_test(path, test, None, timeout=3600)
        assert r["result"] == "OK", f"{test}: {r['result']}\n{r['stdout'][-2000:]}\n{r['stderr'][-3000:]}"
        assert r["launches"] and r["launches"] >= 1, r["stderr"][-2000:]


def test_gtest_list_is_parsed_into_full_names():
    text = ("SM90_Device_Gemm_bf16t_bf16t_bf16n_tensor_op_gmma_f32.\n"
            "  64x128x64\n"
            "  128x128x64_pingpong\n"
            "Typed/SuiteT.  # TypeParam = float\n"
            "  Case/0  # GetParam() = 3\n"
            "tcemu exec: 0 kernel launches (0 distinct kernels), 0.0 s in the interpreter\n")
    assert run_unit_tests.parse_list(text) == ["SM90_Device_Gemm_bf16t_bf16t_bf16n_tensor_op_gmma_f32.64x128x64",
                                              "SM90_Device_Gemm_bf16t_bf16t_bf16n_tensor_op_gmma_f32."
                                              "128x128x64_pingpong",
                                              "Typed/SuiteT.Case/0"]


def test_gtest_verdict_is_the_named_tests_line():
    out = ("[ RUN      ] A.x\n[       OK ] A.x (1234 ms)\n[ RUN      ] A.y\nfoo.cu:12: Failure\n"
           "[  FAILED  ] A.y (56 ms)\n[  FAILED  ] 1 test, listed below:\n[  FAILED  ] A.y\n")
    assert run_unit_tests.parse_verdict(out, "A.x") == ("OK", 1.234)
    assert run_unit_tests.parse_verdict(out, "A.y") == ("FAILED", 0.056)
    assert run_unit_tests.parse_verdict(out, "A.z") is None


def test_unit_flags_are_cmakes_defaults_beside_the_examples_flags():
    flags = run_unit_tests.UNIT_FLAGS
    assert flags[:len(run_unit_tests.FLAGS)] == run_unit_tests.FLAGS
    assert {"-cudart", "shared", "--expt-relaxed-constexpr", "-DCUTLASS_ENABLE_TENSOR_CORE_MMA=1",
            "-DCUTLASS_TEST_LEVEL=0", "-DCUTLASS_TEST_ENABLE_CACHED_RESULTS=1"} <= set(flags)
    assert "-gencode=arch=compute_90a,code=[sm_90a,compute_90a]" in flags
    for stem, gfilter in run_unit_tests.UNIT_RUNS:
        assert stem.startswith("sm90_gemm_") and gfilter
    assert run_unit_tests.cache_root("cutlass-unit").endswith(os.path.join("tcemu", "cutlass-unit")) or \
        os.environ.get("TCEMU_CACHE")


def test_table_lists_each_test_with_its_verdict_and_seconds():
    rows = [("sm90_gemm_x", "A.x", "OK", "312", 290), ("sm90_gemm_x", "A.y", "TIMEOUT", "1800", 97)]
    assert run_unit_tests.table(rows, markdown=True) == (
        "| file | test | result | wall s | launches |\n|---|---|---|---|---|\n"
        "| sm90_gemm_x | A.x | OK | 312 | 290 |\n| sm90_gemm_x | A.y | TIMEOUT | 1800 | 97 |")
    assert run_unit_tests.table(rows, markdown=False).splitlines()[0] == \
        "file         test  result   wall s  launches"


def test_timeout_ends_the_program_that_tcemu_exec_started(tmp_path):
    """A test past --timeout: its whole process group goes, the grandchild (the program under tcemu exec) too."""
    flag = tmp_path / "still-running"
    script = f"(sleep 0.6; touch {flag}) & echo started; wait"
    rc, out, _ = run_unit_tests.run_group(["sh", "-c", script], dict(os.environ), str(tmp_path), timeout=0.3)
    assert rc == "timeout" and out == "started\n"
    time.sleep(0.8)
    assert not flag.exists()
    assert run_unit_tests.run_group(["sh", "-c", "echo ok; exit 3"], dict(os.environ), str(tmp_path), 10) == \
        (3, "ok\n", "")
