"""Issue 27, checks: an fp4 operand is checked in the form its writer used, read from the placement itself.

DeepGEMM's sm100 fp8 x fp4 GEMM loads its fp4 operand with a 16U4_ALIGN16B TMA (one byte per value, for
kind::f8f6f4 / mxf8f6f4); checking that placement with dtype="e2m1" and no kind used to report "3968 of 4096
elements of B are read from the wrong place" for a correct kernel. Both TMA layouts are checked here, each
against the descriptor that reads it, with and without the form stated."""
import numpy as np
import pytest

from tcemu import InstrDescriptor, LayoutError, SharedMemory, UmmaDescriptor, tma_load, tma_placement
from tcemu.tools.check import check_operand, check_tile, suggest_descriptor, written_form

DESC = UmmaDescriptor(start_address=0x400, lbo=16, sbo=1024, swizzle="128B", version=1)
NOTE = ("note: e2m1 read padded, as the placement shows: one byte per element (16 values then padding per 16 bytes, "
        "as TMA's 16U4_ALIGN16B writes it for kind::f8f6f4 / kind::mxf8f6f4); say so with padded=True or the "
        "instruction (instr=)")


def _placement(data_type, rows, box_k):
    """Where a TMA of `data_type` puts each fp4 value of a (rows, 256) tensor: (rows, values in the box)."""
    rng = np.random.default_rng(27)
    vals = rng.integers(0, 16, (rows, 256))
    bits = (vals[:, :, None] >> np.arange(4)) & 1
    packed = np.packbits(bits.reshape(rows, -1), axis=1, bitorder="little")
    box = tma_load(SharedMemory("sm100"), DESC.start_address, packed, box=[box_k, rows], coords=[0, 0],
                   swizzle="128B", data_type=data_type)
    return tma_placement(box, rows=1, k=0)


@pytest.fixture(scope="module")
def padded():
    return _placement("16U4_ALIGN16B", 128, 128)[:, :32]   # 128 x 32: one kind::mxf8f6f4 instruction's B


@pytest.fixture(scope="module")
def packed():
    return _placement("16U4_ALIGN8B", 128, 256)[:, :64]    # 128 x 64: one kind::mxf4 instruction's B


def test_the_form_is_read_from_the_placement(padded, packed):
    assert (written_form(padded), written_form(packed)) == ("padded", "packed")
    assert written_form(padded[:, :1]) is None  # one column cannot tell


def test_padded_placement_without_a_kind_is_no_false_alarm(padded):
    report = check_operand(padded, DESC, dtype="e2m1", operand="B", arch="sm100")
    assert (report.ok, report.wrong, report.total) == (True, 0, 128 * 32)
    assert str(report).splitlines() == [f"{DESC}: all 4096 elements of B read as written", NOTE]
    assert suggest_descriptor(padded, dtype="e2m1", arch="sm100") == DESC
    idesc = InstrDescriptor("mxf8f6f4", "e4m3", "e2m1", m=128, n=128)
    assert check_operand(padded, DESC, instr=idesc, operand="B").lines == []  # the kind says it: no note


def test_packed_placement_keeps_the_packed_reading(packed):
    report = check_operand(packed, DESC, dtype="e2m1", operand="B", arch="sm100")
    assert (report.ok, report.total, report.lines) == (True, 128 * 64, [])


def test_a_stated_form_that_fails_names_the_other(padded, packed):
    """padded=False on the padded placement: the false reading is the user's claim, and the report says which
    form does read it, and which kinds read it so."""
    report = check_operand(padded, DESC, dtype="e2m1", operand="B", padded=False, arch="sm100")
    assert (report.ok, report.wrong, report.total) == (False, 3968, 4096)
    assert str(report).splitlines()[0] == f"{DESC}: 3968 of 4096 elements of B are read from the wrong place"
    assert report.lines[-1] == (
        "hint: the placement is e2m1 padded (16 values then padding per 16 bytes, as TMA's 16U4_ALIGN16B writes it "
        "for kind::f8f6f4); this descriptor reads it exactly with padded=True, or with the instruction (instr=: "
        ".kind::f8f6f4 and .kind::mxf8f6f4 read it so)")
    report = check_operand(packed, DESC, dtype="e2m1", operand="B", padded=True, arch="sm100")
    assert not report.ok and report.lines[-1] == (
        "hint: the placement is e2m1 packed (two values per byte, as TMA's 16U4_ALIGN8B writes it for kind::mxf4*); "
        "this descriptor reads it exactly with padded=False, or with the instruction (instr=: .kind::mxf4 and "
        ".kind::mxf4nvf4 read it so)")
    with pytest.raises(LayoutError, match="no e2m1 packed layout reads this placement, but it is e2m1 padded"):
        suggest_descriptor(padded, dtype="e2m1", padded=False, arch="sm100")


def test_whole_tile_takes_the_form_too():
    tile = _placement("16U4_ALIGN16B", 64, 128)   # 4 K blocks of 32 padded slots
    report = check_tile(tile, DESC, dtype="e2m1", operand="B", arch="sm100", start_advance=32)
    assert report.ok and str(report).splitlines()[:2] == ["all 4 K blocks of B read as written", NOTE]
    bad = check_tile(tile, DESC, dtype="e2m1", operand="B", arch="sm100", start_advance=16)
    assert [b.read_block for b in bad.blocks] == [0, None, 1, None]
