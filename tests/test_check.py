"""check_operand / suggest_descriptor: writer placements against descriptor reads."""
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import tcemu
from tcemu import LayoutError
from tcemu.check import check_operand, suggest_descriptor
from tcemu.smem import SharedMemory


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
