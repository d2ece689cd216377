"""slabcopy: a gang's registers copied between register slabs and a batch, runs of columns at a time."""
import numpy as np
import pytest

from tcemu.ptx.slabcopy import move, slab_runs


def _slabs(rng, dtype):
    make = (lambda s: rng.integers(0, 2, s).astype(bool)) if dtype == bool else \
        (lambda s: rng.integers(0, 1 << 30, s).astype(dtype))
    return {"r": make((6, 20, 32))}, {"r": make((6, 20, 32))}


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64, np.uint16, bool])
def test_runs_of_two_slabs_move_both_ways_in_gang_order(dtype):
    rng = np.random.default_rng(7)
    s1, s2 = _slabs(rng, dtype)
    # three runs: columns 4-7 of slab 1, 0-1 of slab 2, 12-14 of slab 1 (positions 0-3, 4-5, 6-8)
    runs = [[s1, 4, 8, 0], [s2, 0, 2, 4], [s1, 12, 15, 6]]
    grouped = slab_runs(runs)
    assert [f is s1 for f, _ in grouped] == [True, False]
    assert grouped[0][1].tolist() == [[4, 8, 0], [12, 15, 6]] and grouped[1][1].tolist() == [[0, 2, 4]]
    idx = np.array([1, 4])
    want = np.concatenate([s1["r"][:, 4:8], s2["r"][:, 0:2], s1["r"][:, 12:15]], axis=1)
    got = np.zeros((6, 9, 32), dtype)
    for files, rows in grouped:
        move(files["r"], idx, rows, got, True)
    assert (got[idx] == want[idx]).all()
    assert not got[[0, 2, 3, 5]].any()   # rows outside idx untouched

    before1, before2 = s1["r"].copy(), s2["r"].copy()
    new = np.asarray(rng.integers(0, 2, got.shape) if dtype == bool else rng.integers(0, 1 << 30, got.shape), dtype)
    for files, rows in grouped:
        move(files["r"], idx, rows, new, False)
    exp1, exp2 = before1.copy(), before2.copy()
    exp1[np.ix_(idx, range(4, 8))] = new[idx, 0:4]
    exp2[np.ix_(idx, range(0, 2))] = new[idx, 4:6]
    exp1[np.ix_(idx, range(12, 15))] = new[idx, 6:9]
    assert (s1["r"] == exp1).all() and (s2["r"] == exp2).all()


def test_scratch_reuses_a_buffer_only_once_nothing_views_it():
    from tcemu.ptx.slabcopy import POOL_BUFFERS, scratch
    pool = {}
    a = scratch(pool, (3, 4, 32), np.uint32)
    assert a.shape == (3, 4, 32) and a.dtype == np.uint32
    b = scratch(pool, (3, 4, 32), np.uint32)   # a still views the first buffer: another
    assert not np.shares_memory(a, b)
    keep = a[1]                                # a view of a view holds the buffer too
    del a
    c = scratch(pool, (2, 4, 32), np.uint32)
    assert not np.shares_memory(c, keep)
    assert np.shares_memory(c, b) is False
    del keep, b
    bufs = pool[np.dtype(np.uint32)]
    assert len(bufs) == POOL_BUFFERS == 2
    d = scratch(pool, (5, 4, 32), np.uint32)   # a free buffer too small: replaced by a larger one, reused after
    assert bufs[0].size == 5 * 4 * 32 and np.shares_memory(d, bufs[0])
    del c
    e = scratch(pool, (1, 4, 32), np.uint64)   # dtypes have pools of their own
    assert e.dtype == np.uint64 and len(pool) == 2
    del d
    f = scratch(pool, (5, 4, 32), np.uint32)
    assert np.shares_memory(f, bufs[0])
