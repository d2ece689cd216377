"""explain / lint: each known trap gives its finding; canonical descriptors give none."""
import pytest

import tcemu

from tcemu import GmmaDescriptor
from tcemu.cli import main
from tcemu.tools.explain import explain, lint


def fields(desc, **kw):
    return [(f.field, f.severity) for f in lint(desc, **kw)]


@pytest.mark.parametrize("desc,kw", [
    (GmmaDescriptor(0x400, 16, 1024, 0, "128B"), dict(dtype="bf16")),
    (GmmaDescriptor(0x480, 16, 1024, 0, "128B"), dict(dtype="bf16")),          # inside the atom: fine
    (GmmaDescriptor(0x400, 128, 256, 0, "none"), dict(dtype="tf32")),
    (GmmaDescriptor(0x400, 1024, 128, 0, "none"), dict(dtype="f16", major="MN")),
    (GmmaDescriptor(0x800, 512, 256, 0, "32B"), dict(dtype="bf16", major="MN")),
])
def test_canonical_descriptors_are_clean(desc, kw):
    assert lint(desc, **kw) == []


def test_each_trap():
    assert ("lbo", "warning") in fields(GmmaDescriptor(0x400, 0x100, 1024, 0, "128B"), dtype="bf16")
    # bytes, unshifted: legal for a resident tile with K = 1024, wrong for a 64 x 64 tile (test_lint_tiles.py)
    assert fields(GmmaDescriptor(0x400, 16, 1024 * 16, 0, "128B"), dtype="bf16") == []
    assert ("lbo, sbo", "warning") in fields(GmmaDescriptor(0x400, 16, 1024 * 16, 0, "128B"), dtype="bf16",
                                             tile=(64, 64))
    assert ("lbo, sbo", "warning") in fields(GmmaDescriptor(0x400, 16, 1024 // 16, 0, "128B"), dtype="bf16")  # shifted twice: overlap
    assert ("start_address", "warning") in fields(GmmaDescriptor(0x40, 16, 1024, 0, "128B"), dtype="bf16")
    assert ("base_offset", "warning") in fields(GmmaDescriptor(0x480, 16, 1024, 1, "128B"), dtype="bf16")
    overlap = lint(GmmaDescriptor(0x400, 128, 64, 0, "none"), dtype="bf16")  # SBO 64 < 128-byte core matrix
    assert [(f.field, f.severity) for f in overlap] == [("lbo, sbo", "warning")]
    assert overlap[0].rule.startswith("strides overlap: elements A[4, 0] and A[8, 0] share bytes at 0x440")
    assert ("start_address, lbo, sbo", "error") in fields(GmmaDescriptor(0x38F00, 16, 1024, 0, "128B"), dtype="bf16")
    assert ("major", "error") in fields(GmmaDescriptor(0x400, 16, 1024, 0, "128B"), dtype="tf32", major="MN")


def test_explain_text_and_cli(capsys):
    text = explain(GmmaDescriptor(0x400, 16, 1024, 0, "128B"), dtype="bf16")
    assert "Swizzle<3,4,3>: bits [4, 7) of every absolute address" in text and "(0, 0): 0x00400 0x00490" in text
    assert text.endswith("no findings")
    assert main(["explain", hex(GmmaDescriptor(0x38F00, 16, 1024, 0, "128B").encode())]) == 1
    assert "error: start_address, lbo, sbo" in capsys.readouterr().out


def test_sm100_missing_version_bit_is_named():
    """An sm90-style value handed to tcgen05: the layout code lands on 128B, the version bit is missing."""
    text = explain(0x4000004000010040, arch="sm100")
    assert "version=0" in text and "error: version: 0: sm100 descriptors carry version 1" in text


def test_explain_with_an_instruction_descriptor():
    idesc = tcemu.InstrDescriptor("f16", "bf16", "bf16", m=128, n=256, transpose_a=True, transpose_b=True)
    ok = tcemu.UmmaDescriptor(start_address=0x400, lbo=0x2000, sbo=0x400, swizzle="128B", version=1)
    text = explain(ok, instr=idesc.encode(), kind="f16")
    assert "read as 128 x 16 bf16, MN-major" in text and ".kind::f16 M = 128, N = 256" in text
    assert text.endswith("no findings")
    assert "read as 256 x 16 bf16" in explain(ok, instr=idesc, operand="b")
    atom32 = tcemu.UmmaDescriptor(start_address=0x400, lbo=0x100, sbo=0x400, swizzle="128B_base32B", version=1)
    text = explain(atom32, instr=idesc)
    assert "Swizzle<2,5,2>: bits [5, 7) of every absolute address are XORed with bits [7, 9)" in text
    assert "error: desc_a: MN-major tf32 needs the 128B swizzle with 32-byte atoms" in text
    bad = tcemu.InstrDescriptor("i8", "s8", "s8", m=64, n=40, dtype_d="s32")
    assert "error: n: N = 40" in explain(ok, instr=bad)


def test_explain_takes_k_and_padding_from_the_instruction():
    """f8f6f4 reads 32 e2m1 per row from 16-value-per-16-byte slots, not 64 packed ones."""
    idesc = tcemu.InstrDescriptor("f8f6f4", "e4m3", "e2m1", m=128, n=64)
    desc = tcemu.UmmaDescriptor(start_address=0x400, lbo=16, sbo=1024, swizzle="128B", version=1)
    text = explain(desc, instr=idesc, operand="b")
    assert "operand B, read as 64 x 32 e2m1 padded, K-major" in text and text.endswith("no findings")
    assert "e2m1 padded: 16 values then padding in each 16-byte chunk" in text
    assert "read as 128 x 64 e2m1" in explain(desc, instr=tcemu.InstrDescriptor("mxf4", "e2m1", "e2m1", m=128, n=64))
