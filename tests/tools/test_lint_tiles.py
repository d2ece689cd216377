"""lint: shape from the instruction, the operand named in every finding, overlap repairs, the tile-extent
check; check_tile's refusals and its per-block verdicts across swizzles."""
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

from tcemu import (GmmaDescriptor, InstrDescriptor, LayoutError, SharedMemory, TcemuError, UmmaDescriptor,
                   operand_addresses, tma_load, tma_placement)
from tcemu.tools.check import check_tile, suggest_descriptor
from tcemu.tools.explain import lint

OVERLAPPING = UmmaDescriptor(start_address=0x400, lbo=16, sbo=0x200, swizzle="128B", version=1)


def test_shape_comes_from_the_instruction():
    """SBO 0x200 (half an 8-row group of 128-byte rows): every 8-row boundary overlaps 4 rows x 16 bf16, so
    pairs = (rows / 8 - 1) x 64: B has N = 64 rows (448), A has M = 128 (960)."""
    idesc = InstrDescriptor("f16", "bf16", "bf16", m=128, n=64)
    [b] = lint(OVERLAPPING, instr=idesc, operand="b")
    [a] = lint(OVERLAPPING, instr=idesc.encode(), kind="f16")
    assert "(448 such pairs)" in b.rule and b.rule.startswith("strides overlap: elements B[4, 0] and B[8, 0]")
    assert "(960 such pairs)" in a.rule and a.rule.startswith("strides overlap: elements A[4, 0] and A[8, 0]")


def test_every_finding_names_the_operand():
    desc = GmmaDescriptor(0x80, lbo=0x100, sbo=1024, base_offset=1, swizzle="128B")
    found = lint(desc, dtype="bf16", operand="B")
    assert [f.field for f in found] == ["lbo", "start_address", "base_offset"]
    assert all(f.rule.endswith("(operand B)") for f in found)
    assert all(f.rule.endswith("(operand A)") for f in lint(desc, dtype="bf16"))


def test_shifted_twice_sbo_overlaps_and_the_repair_is_named():
    """SBO 0x40 is 1/16 of the 0x400 a 128B-swizzled K-major tile needs (8 rows x 128 bytes)."""
    [f] = lint(GmmaDescriptor(0x400, lbo=16, sbo=0x40, swizzle="128B"), dtype="bf16")
    assert f.field == "lbo, sbo"
    assert f.rule.endswith("; with SBO 0x40 x 16 = 0x400 they would not: shifted twice? (operand A)")


def test_tile_must_hold_one_instruction():
    with pytest.raises(LayoutError) as e:
        lint(GmmaDescriptor(0x400, lbo=16, sbo=1024, swizzle="128B"), dtype="bf16", tile=(32, 64))
    assert e.value.field == "tile"


@pytest.mark.parametrize("swizzle,atom", [("32B", 16), ("64B", 32), ("128B", 64)])
def test_mn_major_k_step_of_one_atom_instead_of_two(swizzle, atom):
    """MN-major bf16, N = one atom (W / 2 elements), K = 64: each 16-deep block is two 8-row atoms of
    8 x W bytes (SBO = 8 W). A step of one atom per block (SBO instead of 2 SBO) makes block kb read K rows
    8 kb .. 8 kb + 15: tile columns 8 kb to 8 kb + 15, half its own data."""
    w = 2 * atom
    g = np.arange(64 * atom, dtype=np.uint16).reshape(64, atom)  # (K, N)
    tile = tma_placement(tma_load(SharedMemory(), 0x400, g, box=[atom, 64], coords=[0, 0], swizzle=swizzle),
                         rows=0, k=1)
    base = GmmaDescriptor(0x400, lbo=64 * w, sbo=8 * w, swizzle=swizzle)
    assert check_tile(tile, base, dtype="bf16", major="MN", start_advance=16 * w).ok
    bad = check_tile(tile, base, dtype="bf16", major="MN", start_advance=8 * w)
    why = f" (start advanced {8 * w} bytes per block, expected {16 * w})"
    assert bad.blocks[1].text == "K block 1 read tile columns 8-23 (expected 16-31: the data of K blocks 0 and 1)" + why
    assert bad.blocks[2].text == "K block 2 read the data of K block 1" + why


def test_check_tile_refusals():
    tile = np.arange(64 * 64).reshape(64, 64) * 2 + 0x400
    base = GmmaDescriptor(0x400, lbo=16, sbo=1024, swizzle="128B")
    for kw, field in ((dict(start_advance=32, descs=[base]), "start_advance"), (dict(descs=[base] * 3), "descs"),
                      (dict(descs=base, start_advance=32, k=24), "k"), (dict(descs=base, start_advance=1.5), "start_advance")):
        descs = kw.pop("descs")
        with pytest.raises(LayoutError) as e:
            check_tile(tile, descs, dtype="bf16", **kw)
        assert e.value.field == field
    pair = InstrDescriptor("f16", "bf16", "bf16", m=256, n=256)
    with pytest.raises(LayoutError) as e:
        check_tile(np.zeros((256, 64), int), UmmaDescriptor(0x400, 16, 1024, 0, "128B"), instr=pair, start_advance=32)
    assert e.value.field == "written" and "each CTA holds 128 of A" in e.value.rule


def test_a_narrow_swizzled_box_keeps_whole_rows():
    """A 32-byte-wide box (16 bf16 of K) with 128B swizzle still lands 128 bytes per row (TMA's pitch is the swizzle
    span): the 64 x 16 tile occupies 64 x 128 bytes, and one instruction's read of it fits."""
    g = np.arange(64 * 16, dtype=np.uint16).reshape(64, 16)
    tile = tma_placement(tma_load(SharedMemory(), 0x400, g, box=[16, 64], coords=[0, 0], swizzle="128B"), rows=1, k=0)
    desc = GmmaDescriptor(0x400, lbo=16, sbo=1024, swizzle="128B")
    assert check_tile(tile, desc, dtype="bf16", start_advance=32).ok
    assert lint(desc, dtype="bf16", tile=(64, 16)) == []


@given(st.sampled_from(["none", "32B", "64B", "128B"]), st.sampled_from([("bf16", "K", 16), ("bf16", "MN", 16),
       ("tf32", "K", 8), ("e4m3", "K", 32)]), st.integers(0x40, 0x800), st.integers(1, 64), st.integers(1, 64),
       st.sampled_from([8, 64, 128]))
def test_lint_never_flags_the_strides_suggest_descriptor_proposes(mode, kind, start, lbo, sbo, rows):
    """Whatever canonical placement a writer made, the descriptor suggest_descriptor proposes for it draws no
    stride finding from lint (issue 13: a lint must not contradict the tool's own suggestion)."""
    dtype, major, k = kind
    try:
        w = operand_addresses(GmmaDescriptor(16 * start, 16 * lbo, 16 * sbo, 0, mode), rows=rows, k=k, dtype=dtype,
                              major=major)
    except TcemuError:
        assume(False)
    assume(len(np.unique(w)) == w.size)
    found = suggest_descriptor(w, dtype=dtype, major=major)
    assert [f for f in lint(found, dtype=dtype, major=major, rows=rows, k=k) if "lbo" in f.field or "sbo" in f.field] == []
