"""Friction a new user hits (issue 13): submodules reachable from the package, 64-bit runtime instruction
descriptors, architecture hints in descriptor findings."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PUBLIC_SUBMODULES = ["addressing", "arch", "banks", "blackwell", "check", "cli", "descriptors", "dtypes", "errors",
                     "explain", "fdp", "formats", "fragments", "fuzz", "hopper", "instr", "oracle", "pictures", "ptx",
                     "seeds", "smem", "strategies", "swizzle", "tma", "tmem", "traces"]


def _python(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_every_public_submodule_is_an_attribute_of_the_package():
    """`import tcemu; tcemu.check.check_operand` used to raise AttributeError (check, explain, traces, ...)."""
    out = _python("import tcemu, types\n"
                  f"for name in {PUBLIC_SUBMODULES!r}:\n"
                  "    assert isinstance(getattr(tcemu, name), types.ModuleType), name\n"
                  "print(tcemu.check.check_operand.__name__, tcemu.explain.lint.__name__, tcemu.explain.explain.__name__,\n"
                  "      tcemu.check_operand is tcemu.check.check_operand)")
    assert out.split() == ["check_operand", "lint", "explain", "True"]


def test_no_import_cycle_whatever_module_comes_first():
    """Each public submodule imported first, in a process where no tcemu module is loaded yet: a cycle in the
    import graph shows up as an ImportError / AttributeError for some first module."""
    out = _python("import importlib, sys\n"
                  "ok = 0\n"
                  f"for name in {PUBLIC_SUBMODULES!r}:\n"
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


# ---- 64-bit runtime instruction descriptors --------------------------------------------------------------

def test_runtime_64bit_instruction_descriptor_is_the_32bit_value_shifted():
    """DeepGEMM's sm100 MXFP8 mainloop (deep_gemm/include/deep_gemm/mma/sm100.cuh, make_runtime_instr_desc_with_sf_id)
    and CuTe's make_runtime_instr_desc (cute/arch/mma_sm100_desc.hpp) hand tcgen05.mma the 32-bit descriptor in
    bits 32-63 of a 64-bit value. Hand-encoded per PTX Table 43: B sf id 1 at bit 4 (0x10), N = 256 -> 32 << 17
    (0x400000), ue8m0 at bit 23 (0x800000), M = 128 -> 1 << 27 (0x8000000), A sf id 1 at bit 29 (0x20000000)."""
    from tcemu import InstrDescriptor
    import numpy as np
    want = InstrDescriptor("mxf8f6f4", "e4m3", "e4m3", m=128, n=256, a_scale_id=1, b_scale_id=1)
    assert want.encode() == 0x28C00010
    for value in (0x28C0001000000000, np.uint64(0x28C0001000000000), "0x28c00010_00000000", 0x28C00010):
        assert InstrDescriptor.decode(value, "mxf8f6f4") == want


def test_64bit_value_with_a_low_half_says_shift_by_32_in_hex():
    from tcemu import DescriptorError, GmmaDescriptor, InstrDescriptor
    with pytest.raises(DescriptorError) as e:
        InstrDescriptor.decode(0x0840049000000400, "f16")
    assert e.value.field == "descriptor"
    assert "0x0840049000000400 has 64 bits" in e.value.rule and "0x00000400" in e.value.rule
    assert "shift right by 32 (0x08400490)" in e.value.rule
    with pytest.raises(DescriptorError, match="0x10000000000000000 is not a 32-bit instruction descriptor"):
        InstrDescriptor.decode(1 << 64, "f16")
    with pytest.raises(DescriptorError, match="unsigned 64-bit integer, got 0x10000000000000000"):
        GmmaDescriptor.decode(1 << 64)
    with pytest.raises(DescriptorError, match="got -0x1"):
        GmmaDescriptor.decode(-1)


def test_cli_instr_takes_the_runtime_form(capsys):
    from tcemu.cli import main
    assert main(["instr", "0x0840049000000000", "--kind", "f16"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("instruction descriptor 0x08400490 (.kind::f16, from the 64-bit runtime form "
                          "0x0840049000000000 >> 32)")
    assert main(["instr", "0x0840049000000001", "--kind", "f16"]) == 2
    assert "shift right by 32 (0x08400490)" in capsys.readouterr().err
