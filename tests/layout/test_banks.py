"""Bank-conflict analyzer: exact wavefront counts, op spellings, builders, errors."""
import numpy as np
import pytest
from hypothesis import example, given, strategies as st

import tcemu
from tcemu.layout.banks import (BankError, bank_conflicts, core_matrix_banks, parse_op, pattern_from_descriptor,
                                pattern_from_expression, pattern_from_layout, wavefronts_batch)

from arbitrary import junk, only_ours

T = np.arange(32)


@pytest.mark.parametrize("op,addrs,waves,ideal", [
    ("ld.shared.b32", T * 4, 1, 1),                    # consecutive words
    ("ld.shared.b32", T * 8, 2, 1),                    # stride 2 words: 2-way
    ("ld.shared.b32", T * 128, 32, 1),                 # one bank, 32 words
    ("ld.shared.b32", np.zeros(32, int), 1, 1),        # broadcast
    ("ld.shared.u8", T, 1, 1),                         # 4 threads per word
    ("ld.shared.u16", T * 2 + 256 * (T % 2), 2, 1),   # two words per bank
    ("st.shared.v2.b32", T * 8, 2, 2),                 # two half-warp phases
    ("st.shared.v4.b32", T * 16, 4, 4),                # four quarter-warp phases
    ("st.shared.v4.b32", T * 32, 8, 4),                # 2-way inside every quarter
    ("ldmatrix.x4", T * 16, 4, 4),
    ("ldmatrix.x4", T * 128, 32, 4),                   # unswizzled 128-byte rows: 8-way per matrix
    ("ldmatrix.x4", (T % 8) * 128 + ((T // 8) ^ (T % 8)) * 16, 4, 4),  # 128B swizzle: conflict-free
    ("stmatrix.x2.trans", T * 16, 2, 2),
])
def test_textbook_counts(op, addrs, waves, ideal):
    r = bank_conflicts(op, addrs)
    assert (r.wavefronts, r.ideal, r.conflicts) == (waves, ideal, waves - ideal)
    assert wavefronts_batch(op, np.asarray(addrs)[None])[0] == waves


def test_report_details():
    r = bank_conflicts("ld.shared.b32", T * 8)
    (p,) = r.phases
    assert (p.degree, p.threads) == (2, list(range(32)))
    assert r.bank_demand.tolist() == [2, 0] * 16
    assert "2 wavefronts, ideal 1, conflicts 1" in r.table() and "0-31" in r.table()


def test_inactive_and_ignored_threads():
    addrs = T * 128
    assert bank_conflicts("ld.shared.b32", addrs, mask=0x0000000F).wavefronts == 4
    assert bank_conflicts("ld.shared.b32", addrs, mask=0).wavefronts == 0
    r = bank_conflicts("ld.shared.v4.b32", T * 16, mask=0x000000FF)   # only the first quarter
    assert (r.wavefronts, r.ideal) == (1, 1)
    x1 = bank_conflicts("ldmatrix.x1", np.concatenate([np.arange(8) * 16, np.zeros(24, int)]))
    assert x1.wavefronts == 1 and len(x1.phases) == 1                  # threads 8-31 are not read
    assert bank_conflicts("ldmatrix.x1", np.arange(8) * 16).wavefronts == 1


@pytest.mark.parametrize("text,name,width", [
    ("ld.shared.v4.b32", "ld.shared.v4.b32", 16), ("ld.shared::cta.v2.f32", "ld.shared.v2.f32", 8),
    ("LDS.128", "ld.shared.v4.b32", 16), ("sts.64", "st.shared.b64", 8), ("lds.u8", "ld.shared.u8", 1),
    ("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", 16),
    ("stmatrix.x2", "stmatrix.sync.aligned.m8n8.x2.shared.b16", 16), ("st.u16", "st.shared.u16", 2),
])
def test_op_spellings(text, name, width):
    op = parse_op(text)
    assert (op.name, op.width) == (name, width)


@pytest.mark.parametrize("bad", ["mov.b32", "ld.shared.v8.b32", "ld.shared.v4.b64", "ldmatrix.x3", "ld.shared",
                                 "ldmatrix.x4.b32", "lds.96", "", 7])
def test_bad_ops(bad):
    with pytest.raises(BankError, match="op"):
        parse_op(bad)


def test_address_and_mask_errors():
    with pytest.raises(BankError, match="thread 3: 0x32 is not a non-negative multiple of the 16-byte"):
        bank_conflicts("ld.shared.v4.b32", np.where(T == 3, 50, T * 16))
    with pytest.raises(BankError, match="mask: ldmatrix is .sync.aligned"):
        bank_conflicts("ldmatrix.x4", T * 16, mask=0xFFFF)
    with pytest.raises(BankError, match="addresses: .* takes one address per thread"):
        bank_conflicts("ld.shared.b32", T[:16] * 4)
    with pytest.raises(BankError, match="mask"):
        bank_conflicts("ld.shared.b32", T * 4, mask=1 << 32)
    # an inactive thread's misaligned address is ignored
    assert bank_conflicts("ld.shared.b32", np.where(T == 5, 3, T * 4), mask=~(1 << 5) & 0xFFFFFFFF).wavefronts == 1


@given(st.lists(st.integers(0, 2047), min_size=32, max_size=32), st.integers(0, 2**32 - 1),
       st.sampled_from(["ld.shared.u8", "ld.shared.b32", "st.shared.v2.b32", "st.shared.v4.b32", "ldmatrix.x4",
                        "stmatrix.x1"]))
def test_batch_matches_single(slots, mask, op_name):
    op = parse_op(op_name)
    addrs = np.array(slots) * op.width
    mask = 0xFFFFFFFF if op.matrices else mask
    assert wavefronts_batch(op, addrs[None], np.array([mask]))[0] == bank_conflicts(op, addrs, mask=mask).wavefronts


def test_pattern_builders():
    assert pattern_from_expression("(t % 8) * 128 + (t // 8) * 16")[[0, 1, 8, 31]].tolist() == [0, 128, 16, 944]
    assert pattern_from_layout((8, 4), (64, 4), element_bytes=4)[[0, 1, 8, 31]].tolist() == [0, 256, 16, 1840]
    for bad in ("__import__('os')", "t.real", "open(t)", "x + 1", "1.5 * t", "t // 0", "t << 99"):
        with pytest.raises(BankError, match="pattern"):
            pattern_from_expression(bad)
    desc = tcemu.GmmaDescriptor(0x400, 16, 1024, 0, "128B")
    addrs = pattern_from_descriptor(desc, T % 8, 8 * (T // 8), tile_rows=64, tile_k=64, dtype="bf16")
    assert addrs.tolist() == tcemu.operand_addresses(desc, rows=64, k=64, dtype="bf16")[T % 8, 8 * (T // 8)].tolist()
    assert bank_conflicts("st.shared.v4.b32", addrs).conflicts == 0     # 128B swizzle: conflict-free epilogue
    plain = tcemu.GmmaDescriptor(0x400, 128, 1024, 0, "none")
    stripe = pattern_from_descriptor(plain, T % 8, 8 * (T // 8) % 16, tile_rows=64, tile_k=16, dtype="bf16")
    assert bank_conflicts("st.shared.v4.b32", stripe).wavefronts == 4


def test_core_matrix_banks():
    sw = tcemu.GmmaDescriptor(0x400, 16, 1024, 0, "128B")
    assert core_matrix_banks(sw, rows=64, k=64, dtype="bf16").tolist() == [[1] * 8] * 8
    # no swizzle: a core matrix is 128 contiguous bytes, every bank once; 32B/64B swizzles keep that
    for mode in ("none", "32B", "64B"):
        desc = tcemu.GmmaDescriptor(0x480, 128, 1024, 3, mode)
        assert core_matrix_banks(desc, rows=16, k=16, dtype="bf16").tolist() == [[1, 1], [1, 1]], mode


@pytest.mark.parametrize("op,addrs,mask,waves", [
    # every pair (t, t^1) shares: 16-byte load served per half-warp, 8-byte load per warp
    ("ld.shared.v4.b32", (T // 2) * 16, 0xFFFFFFFF, 2),
    ("st.shared.v4.b32", (T // 2) * 16, 0xFFFFFFFF, 4),          # stores never merge
    ("ld.shared.v2.b32", (T // 2) * 8, 0xFFFFFFFF, 1),
    ("ld.shared.v4.b32", ((T & ~2) % 8) * 16, 0xFFFFFFFF, 2),    # pairs (t, t^2), 4 addresses repeated
    ("ld.shared.v4.b32", np.zeros(32, int), 0xFFFFFFFF, 2),      # all one address: one per half-warp
    ("ld.shared.v4.b32", T * 16, 0x00000201, 1),                 # lanes 0 and 9: partners inactive
    ("ld.shared.v4.b32", T * 16, 0x00010001, 2),                 # lanes 0 and 16: half-warps never merge
    ("ld.shared.b64", T * 8, 0x00020001, 1),                     # lanes 0 and 17 (8-byte): the warp merges
    ("st.shared.b64", T * 8, 0x00020001, 2),
    ("ld.shared.v4.b32", T * 16, 0x00000107, 2),                 # 0-1 and 0-2 differ: no merge, textbook
])
def test_wide_load_pair_rule(op, addrs, mask, waves):
    assert bank_conflicts(op, addrs, mask=mask).wavefronts == waves
    assert wavefronts_batch(op, np.asarray(addrs)[None], np.array([mask]))[0] == waves


# ---- arbitrary input: a result or TcemuError naming its field, never another exception ----

ops = st.one_of(st.sampled_from(["ld.shared.b32", "ld.shared.v4.b32", "ldmatrix.x4", "stmatrix.x1.trans",
                                 "st.shared.u8", "lds.128", "ld.shared.v2.b64"]), st.text(max_size=20), junk)



@given(ops, st.one_of(junk, st.lists(st.integers(-64, 4096), min_size=32, max_size=32)), st.one_of(junk, st.integers(0, 2**32 - 1)))
def test_banks(op, addrs, mask):
    only_ours(bank_conflicts, op, addrs, mask=mask if isinstance(mask, int) and not isinstance(mask, bool) else 0xFFFFFFFF)
    only_ours(bank_conflicts, op, addrs, mask=mask)



@given(ops, st.integers(0, 3), st.integers(-16, 4096))
def test_banks_batch(op, n, scale):
    only_ours(wavefronts_batch, op, np.arange(32 * n).reshape(n, 32) * scale)



@given(st.text(max_size=30))
@example("9223372036854775808")  # past int64: found by the campaign profile
def test_pattern_expression(expr):
    only_ours(pattern_from_expression, expr)
