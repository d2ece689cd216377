"""The package as a user imports it (issue 13's friction): every public submodule is an attribute of `tcemu`, no
import order finds a cycle, an unknown name is an AttributeError. (Issue 13's other friction tests: the 64-bit runtime
instruction descriptor in tests/blackwell/test_instr.py and tests/cli/test_cli.py, the architecture hints in
tests/layout/test_descriptors.py.)"""
import os
import subprocess
import sys

import pytest

from paths import ROOT

# Issue 22 moved the flat modules into subpackages: the undocumented flat names (tcemu.addressing, tcemu.fdp, ...) are
# gone, and these are the same modules at their new paths (a dotted name: an attribute of an attribute of tcemu).
PUBLIC_SUBMODULES = ["layout.addressing", "core.arch", "banks", "blackwell", "blackwell_sparse", "check", "cli",
                     "collector", "layout.descriptors", "arith.dtypes", "core.errors",
                     "explain", "arith.fdp", "arith.formats", "layout.fragments", "fuzz", "hopper", "instr",
                     "kernel_inputs", "tools.operand", "oracle", "pictures", "ptx", "seeds", "smem", "sparse",
                     "sparse_seeds", "strategies", "layout.swizzle", "layout.tma", "blackwell.tmem", "traces", "triton",
                     "core", "arith", "layout", "gemm", "frontends", "tools", "testing", "sfu"]
# attributes tcemu resolves lazily: `import tcemu.fuzz` is no module path, the module is tcemu.testing.fuzz
IMPORT_PATH = {"fuzz": "testing.fuzz", "oracle": "testing.oracle", "pictures": "tools.pictures", "seeds": "traces.seeds",
               "sparse_seeds": "traces.sparse_seeds", "strategies": "testing.strategies"}


def _python(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_every_public_submodule_is_an_attribute_of_the_package():
    """`import tcemu; tcemu.check.check_operand` used to raise AttributeError (check, explain, traces, ...)."""
    out = _python("import functools, tcemu, types\n"
                  f"for name in {PUBLIC_SUBMODULES!r}:\n"
                  "    assert isinstance(functools.reduce(getattr, name.split('.'), tcemu), types.ModuleType), name\n"
                  "print(tcemu.check.check_operand.__name__, tcemu.explain.lint.__name__, tcemu.explain.explain.__name__,\n"
                  "      tcemu.check_operand is tcemu.check.check_operand)")
    assert out.split() == ["check_operand", "lint", "explain", "True"]


@pytest.mark.slow
def test_no_import_cycle_whatever_module_comes_first():
    """Each public submodule imported first, in a process where no tcemu module is loaded yet: a cycle in the
    import graph shows up as an ImportError / AttributeError for some first module."""
    out = _python("import importlib, sys\n"
                  "ok = 0\n"
                  f"for name in {[IMPORT_PATH.get(n, n) for n in PUBLIC_SUBMODULES]!r}:\n"
                  "    for m in [m for m in sys.modules if m == 'tcemu' or m.startswith('tcemu.')]:\n"
                  "        del sys.modules[m]\n"
                  "    importlib.import_module('tcemu.' + name)\n"
                  "    ok += 1\n"
                  "print(ok)")
    assert int(out) == len(PUBLIC_SUBMODULES)


def test_unknown_attribute_is_still_an_attribute_error():
    import tcemu
    with pytest.raises(AttributeError, match="no attribute 'chek'"):
        tcemu.chek  # noqa: B018


def test_import_and_the_exec_launcher_load_no_model():
    """`import tcemu` and the parser of `tcemu exec` (the launcher that starts the program) load neither numba nor
    the interpreter: every public name loads on first use (tcemu/core/lazy.py). The launcher had spent 2 s of every
    `tcemu exec` importing what the program's own Python imports again."""
    out = _python("import sys, tcemu, tcemu.layout, tcemu.cli\n"
                  "tcemu.cli.build_parser('exec').parse_args(['exec', '--', 'prog'])\n"
                  "print(*[m in sys.modules for m in ('numba', 'tcemu.ptx', 'tcemu.layout.addressing')])\n"
                  "tcemu.layout.addressing.operand_addresses, tcemu.matmul\n"
                  "print(*[m in sys.modules for m in ('numba', 'tcemu.layout.addressing', 'tcemu.gemm')])")
    assert out.split() == ["False"] * 3 + ["True"] * 3
