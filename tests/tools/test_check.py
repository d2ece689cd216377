"""check_operand / suggest_descriptor: writer placements against descriptor reads."""
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import tcemu
from tcemu import LayoutError
from tcemu.tools.check import check_operand, suggest_descriptor
from tcemu.layout.smem import SharedMemory


@given(st.sampled_from(["none", "32B", "64B", "128B"]), st.integers(0, 7), st.sampled_from([("bf16", "K", 16),
       ("bf16", "MN", 16), ("tf32", "K", 8), ("e4m3", "K", 32)]), st.integers(0x40, 0x800), st.integers(1, 64),
       st.integers(1, 64), st.sampled_from([8, 64, 128]))
def test_suggestion_reproduces_any_canonical_placement(mode, b0, kind, start, lbo, sbo, rows):
    dtype, major, k = kind
    desc = tcemu.GmmaDescriptor(16 * start, 16 * lbo, 16 * sbo, b0, mode)
    try:
        w = tcemu.operand_addresses(desc, rows=rows, k=k, dtype=dtype, major=major)
    except tcemu.TcemuError:
        assume(False)
    assume(len(np.unique(w)) == w.size)  # a placement with aliased elements has no unique answer
    found = suggest_descriptor(w, dtype=dtype, major=major)
    assert np.array_equal(tcemu.operand_addresses(found, rows=rows, k=k, dtype=dtype, major=major), w)


def test_tma_tile_needs_base_offset_zero():
    g = np.arange(128 * 64, dtype=np.uint16).reshape(128, 64)
    addrs = tcemu.tma_load(SharedMemory(), 0x480, g, box=[64, 64], coords=[0, 0], swizzle="128B")[:, :16]
    assert suggest_descriptor(addrs, dtype="bf16") == tcemu.GmmaDescriptor(0x480, 16, 1024, 0, "128B")
    report = check_operand(addrs, tcemu.GmmaDescriptor(0x480, 16, 1024, 1, "128B"), dtype="bf16")
    assert (report.ok, report.wrong, report.total) == (False, 1024, 1024)
    assert report.lines[0] == "A[0, 0] read from 0x480, which holds A[0, 8]"
    assert check_operand(addrs, tcemu.GmmaDescriptor(0x480, 16, 1024, 0, "128B"), dtype="bf16").ok


def test_unreadable_placement_is_explained():
    w = (np.arange(64 * 16).reshape(64, 16) * 2 + 0x400)[:, ::-1].copy()  # K reversed inside each row
    with pytest.raises(LayoutError, match="written"):
        suggest_descriptor(w, dtype="bf16")
    report = check_operand(w, tcemu.GmmaDescriptor(0x400, 128, 256), dtype="bf16", operand="B")
    assert not report.ok and report.lines[0].startswith("B[0, 0] read from 0x400, which holds B[")
    with pytest.raises(LayoutError, match="written: must be a \\(rows, k\\) integer array"):
        check_operand(np.zeros(16), tcemu.GmmaDescriptor(), dtype="bf16")


@given(st.sampled_from(["none", "32B", "64B", "128B", "128B_base32B"]), st.integers(0, 7),
       st.sampled_from([("f16", "K", 16), ("f16", "MN", 16), ("tf32", "MN", 8), ("e4m3", "K", 32), ("u8", "MN", 32)]),
       st.integers(0x40, 0x800), st.integers(1, 64), st.integers(1, 64), st.sampled_from([8, 64, 128]))
@pytest.mark.slow
def test_sm100_suggestion_reproduces_any_canonical_placement(mode, b0, kind, start, lbo, sbo, rows):
    dtype, major, k = kind
    desc = tcemu.UmmaDescriptor(16 * start, 16 * lbo, 16 * sbo, b0, mode, version=1)
    try:
        w = tcemu.operand_addresses(desc, rows=rows, k=k, dtype=dtype, major=major, arch="sm100")
    except tcemu.TcemuError:
        assume(False)
    assume(len(np.unique(w)) == w.size)
    found = suggest_descriptor(w, dtype=dtype, major=major, arch="sm100")
    assert isinstance(found, tcemu.UmmaDescriptor) and found.version == 1
    assert np.array_equal(tcemu.operand_addresses(found, rows=rows, k=k, dtype=dtype, major=major, arch="sm100"), w)


def test_sm100_tma_atom_32b_tile_and_a_128b_reader():
    """TMA 128B_ATOM_32B writes an MN-major tf32 tile: suggest finds the 128B_base32B descriptor; a 128B
    descriptor over the same bytes reads other elements, and check_operand says which."""
    g = np.arange(8 * 32, dtype=np.uint32).reshape(8, 32)  # (K, M)
    addrs = tcemu.tma_load(SharedMemory("sm100"), 0x400, g, box=[32, 8], coords=[0, 0], swizzle="128B_ATOM_32B").T
    found = suggest_descriptor(addrs, dtype="tf32", major="MN", arch="sm100")
    assert (found.swizzle.value, found.start_address, found.sbo) == ("128B_base32B", 0x400, 512)
    wrong = tcemu.UmmaDescriptor(0x400, found.lbo, 1024, 0, "128B", version=1)
    report = check_operand(addrs, wrong, dtype="tf32", major="MN", arch="sm100")
    assert not report.ok and report.lines[0].startswith("A[") and "which holds A[" in report.lines[0]
