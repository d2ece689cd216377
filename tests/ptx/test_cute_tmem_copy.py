"""Peer oracle: CuTe's SM100 tensor-memory copy traits (nvidia-cutlass headers, host-compiled with nvcc) vs the data
paths of tcemu.ptx's tcgen05.ld / tcgen05.st / tcgen05.cp (tcemu/ptx/ops/tcgen05.py).

tests/support/cute_oracle/tmem_copy_oracle.cu only #includes CuTe and evaluates its layouts: for every SM100_TMEM_LOAD_* and
SM100_TMEM_STORE_* (5 shapes, every .num, with and without the _16b pack/unpack), the tensor-memory lane, column and
bit of bit 0 and bit 16 of every thread's every register (ValID o DstLayout / SrcLayout); for the SM100_UTCCP_* 1-CTA
ops, the lane and column of every 32-bit word of every source row and every multicast copy. CuTe's 16x32bx2 ops pass
immHalfSplitoff = .num columns (2 .num with _16b), which the comparison uses.
"""
import json

import numpy as np
import pytest

from tcemu.ptx.ops.tcgen05 import cp_lanes, datapath

import cute

# host-compiled with nvcc; the first build takes CPU-minutes (tests/support/cute.py caches it)
pytestmark = [pytest.mark.needs_nvcc, pytest.mark.slow]

SHAPES = {"16dp256b": "16x256b", "16dp128b": "16x128b", "16dp64b": "16x64b", "16dp32b": "16x32bx2",
          "32dp32b": "32x32b"}


@pytest.fixture(scope="session")
def copy_oracle():
    [exe] = cute.binaries(["tmem_copy_oracle"])
    out, _ = cute.run(exe, timeout=120)
    return [json.loads(line) for line in out]


def test_oracle_covers_every_shape_num_and_pack(copy_oracle):
    ldst = {(r["rec"], r["shape"], r["num"], r["pack"]) for r in copy_oracle if r["rec"] in ("ld", "st")}
    nums = {"16dp256b": 32, "16dp128b": 64, "16dp64b": 128, "16dp32b": 128, "32dp32b": 128}
    want = {(rec, s, 1 << i, p) for rec in ("ld", "st") for s, top in nums.items() for i in range(top.bit_length())
            for p in (0, 1)}
    assert ldst == want                                   # 148 records: PTX Table 47's every shape x .num
    assert {r["op"] for r in copy_oracle if r["rec"] == "cp"} == {
        "128x256b", "128x128b", "32x128b.warpx4", "64x128b.warpx2::02_13", "64x128b.warpx2::01_23"}


def test_ld_st_data_paths_match_cute(copy_oracle):
    checked = 0
    for r in copy_oracle:
        if r["rec"] not in ("ld", "st"):
            continue
        regs, pack, num = r["regs"], bool(r["pack"]), r["num"]
        shape = SHAPES[r["shape"]]
        got = [np.array(r[f], np.int64).reshape(32, regs, 2) for f in ("lane", "col", "bit")]
        lanes, cols = datapath(shape, num, num * (2 if pack else 1), pack)
        assert lanes.shape[:2] == (32, regs)
        if pack:   # bit 0 and bit 16 of a register: the low halves of two adjacent cells
            want = (lanes, cols, np.zeros((32, regs, 2), np.int64))
        else:      # one cell: bit 0 and bit 16 of the same column
            want = (np.repeat(lanes, 2, -1), np.repeat(cols, 2, -1), np.broadcast_to([0, 16], (32, regs, 2)))
        for name, g, w in zip(("lane", "column", "bit"), got, want):
            assert np.array_equal(g, w), f"{r['rec']} {shape}.x{num} pack={pack}: {name} differs"
        checked += 1
    assert checked == 148


def test_cp_lanes_match_cute(copy_oracle):
    for r in copy_oracle:
        if r["rec"] != "cp":
            continue
        shape, _, multicast = r["op"].partition(".")
        rows, words, copies = r["rows"], r["bits"] // 32, r["copies"]
        lane = np.array(r["lane"]).reshape(copies, rows, words)
        col = np.array(r["col"]).reshape(copies, rows, words)
        want = cp_lanes(shape, multicast or None)            # (source rows, copies)
        src_rows = want.shape[0]
        # CuTe folds 01_23's second 32 rows into a repeat mode: copy index c = repeat + 2 broadcast
        if multicast == "warpx2::01_23":
            got_lanes = np.stack([np.concatenate([lane[2 * b], lane[2 * b + 1]]) for b in range(2)], axis=1)
        else:
            got_lanes = np.moveaxis(lane, 0, 1)
        assert got_lanes.shape[:2] == (src_rows, want.shape[1]), r["op"]
        assert np.array_equal(got_lanes, np.broadcast_to(want[:, :, None], got_lanes.shape)), r["op"]
        assert np.array_equal(col, np.broadcast_to(np.arange(words), col.shape)), r["op"]
