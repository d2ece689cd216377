"""Friction a new user hits (issue 13): submodules reachable from the package, 64-bit runtime instruction
descriptors, architecture hints in descriptor findings."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PUBLIC_SUBMODULES = ["addressing", "arch", "banks", "blackwell", "blackwell_sparse", "check", "cli", "collector",
                     "descriptors", "dtypes", "errors",
                     "explain", "fdp", "formats", "fragments", "fuzz", "hopper", "instr", "kernel_inputs", "operand",
                     "oracle", "pictures", "ptx", "seeds", "smem", "sparse", "sparse_seeds", "strategies", "swizzle",
                     "tma", "tmem", "traces", "triton"]


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


# ---- architecture hints ----------------------------------------------------------------------------------

def _tk_blackwell_desc(addr, lbo, sbo, hopper_code):
    """ThunderKittens include/types/shared/descriptor.cuh (matrix_descriptor_raw): on Blackwell it ORs 1 << 46
    (the version) into the Hopper encoding, whose 2-bit layout code sits at bit 62 on both archs."""
    enc = lambda x: (x & 0x3FFFF) >> 4  # noqa: E731  PTX matrix-descriptor-encode
    return enc(addr) | enc(lbo) << 16 | enc(sbo) << 32 | 1 << 46 | hopper_code << 62


def test_blackwell_descriptor_decoded_as_hopper_names_the_version_bit(capsys):
    from tcemu import GmmaDescriptor, UmmaDescriptor
    from tcemu.cli import main
    value = _tk_blackwell_desc(0x400, 16, 1024, 1)  # K-major 128B, as ThunderKittens builds it for tcgen05
    assert value == 0x4000404000010040
    [f] = [f for f in GmmaDescriptor.decode(value).validate() if f.severity == "error"]
    assert f.field == "reserved_bits"
    assert f.rule == ("bit 46 is reserved and must be 0; bit 46 is sm100's descriptor version bit (UMMA descriptors "
                      "carry version 1 in bits 46-47): this looks like a Blackwell descriptor, decode it with --arch "
                      "sm100 (arch='sm100')")
    assert main(["decode", hex(value)]) == 1
    assert "decode it with --arch sm100" in capsys.readouterr().out
    sm100 = UmmaDescriptor.decode(value)  # the same value read as sm100: Hopper's code 1 << 62 is 128B there too
    assert (sm100.swizzle.value, sm100.version, sm100.validate(major="K")) == ("128B", 1, [])
    assert main(["decode", hex(value), "--arch", "sm100"]) == 0


def test_hopper_layout_codes_in_the_sm100_field_are_named():
    """A hand-rolled sm100 builder that stores Hopper's GMMA layout enum (B128 = 1, B32 = 3) in the 3-bit layout
    field at bits 61-63 (CuTe's UMMA::SmemDescriptor::layout_type_) gets 128B_base32B or an unused code."""
    from tcemu import DescriptorError, UmmaDescriptor
    from tcemu.tools.explain import explain
    base = 0x40 | 1 << 16 | 0x40 << 32 | 1 << 46
    with pytest.raises(DescriptorError) as e:
        UmmaDescriptor.decode(base | 3 << 61)
    assert e.value.field == "swizzle" and "3 is Hopper's encoding of the 32B swizzle" in e.value.rule
    assert "sm100 encodes as 6" in e.value.rule
    text = explain(base | 1 << 61, arch="sm100", dtype="bf16", major="K")
    assert ("error: swizzle: 128B_base32B is MN-major only (CuTe static-asserts K-major); layout type 1 (bits 61-63) "
            "is Hopper's encoding of the 128B swizzle; sm100 encodes 128B as 2") in text
