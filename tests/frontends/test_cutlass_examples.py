"""CUTLASS 4.2's own Hopper examples under `tcemu exec`, each verifying its output against CUTLASS's reference GEMM
("Disposition: Passed"). Compiling one takes minutes and running one up to 20 (48, 49, 57), so CI does neither:
these tests run only with TCEMU_CUTLASS_EXAMPLES=1, on a binary that scripts/cutlass/run_examples.py built into
~/.cache/tcemu/cutlass-examples (TCEMU_CACHE moves the root), and skip without one. The arguments and SM counts are the script's (EXAMPLES); docs/guide.md has the table of runs."""
import glob
import importlib.util
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("run_examples", os.path.join(ROOT, "scripts", "cutlass",
                                                                          "run_examples.py"))
run_examples = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_examples)


def _binary(name: str) -> str:
    """The newest cached build of example `name` (any CUTLASS tree and flags the script keyed it by)."""
    found = [p for p in glob.glob(os.path.join(run_examples.cache_root(), f"{name}-*"))
             if ".tmp" not in p and not p.endswith((".out", ".err"))]
    if not found:
        pytest.skip(f"no prebuilt CUTLASS example {name} in {run_examples.cache_root()} "
                    f"(scripts/cutlass/run_examples.py --cutlass DIR --build-only --only {name})")
    return max(found, key=os.path.getmtime)


@pytest.mark.slow
@pytest.mark.parametrize("example", run_examples.EXAMPLES, ids=[e[0] for e in run_examples.EXAMPLES])
def test_cutlass_example_passes_its_own_verification(example):
    name, _, args, pattern, count, sms = example
    if os.environ.get("TCEMU_CUTLASS_EXAMPLES") != "1":
        pytest.skip("CUTLASS's examples take minutes each on the interpreter: set TCEMU_CUTLASS_EXAMPLES=1")
    path = _binary(name)
    if subprocess.run(["g++", "--version"], capture_output=True).returncode:
        pytest.skip("tcemu's libcudart needs g++")
    r = run_examples.run(path, args, sms, pattern, timeout=3600)
    assert r["rc"] == 0, r["stdout"][-2000:] + r["stderr"][-3000:]
    assert r["passes"] == count and r["fails"] == 0, r["stdout"][-2000:]
    assert r["launches"] and r["launches"] >= 1, r["stderr"][-2000:]


def test_the_script_lists_each_example_once_with_a_pass_count():
    names = [e[0] for e in run_examples.EXAMPLES]
    assert names == ["48", "49", "54", "55", "57", "62", "67"]
    for name, source, args, pattern, count, sms in run_examples.EXAMPLES:
        assert source.startswith(name + "_") and source.endswith(".cu")
        assert count >= 1 and (sms is None or 1 <= sms <= 132)
    assert run_examples.exec_options(8) == ["--summary", "--launch-timeout", "0", "--sm-count", "8"]
    assert run_examples.exec_options(None) == ["--summary", "--launch-timeout", "0"]
