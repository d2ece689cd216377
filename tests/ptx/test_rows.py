"""tcemu/ptx/rows.py: shadow and memory rows moved as whole aligned rows give exactly what per-byte fancy indexing
gives, aligned or not, with a row written twice keeping the later values."""
import numpy as np
import pytest

from tcemu.ptx.rows import fill_starts, gather, gather_starts, scatter, scatter_starts


@pytest.mark.parametrize("w", [1, 2, 4, 8, 16, 3])
@pytest.mark.parametrize("aligned", [True, False])
def test_rows_at_starts_are_the_bytes_at_those_offsets(w, aligned):
    rng = np.random.default_rng(w)
    arr = rng.integers(0, 256, 4099, dtype=np.uint8)   # not a whole number of rows
    starts = rng.integers(0, (arr.size - w) // w, 40) * w + (0 if aligned else 1)
    want = arr[starts[:, None] + np.arange(w)]
    assert np.array_equal(gather_starts(arr, starts, w), want)
    assert np.array_equal(gather(arr, starts[:, None] + np.arange(w)), want)

    values = rng.integers(0, 256, (starts.size, w), dtype=np.uint8)
    values[-1] = 7   # the last row again, with other bytes: the later one stays
    starts = np.append(starts[:-1], starts[0])
    expect = arr.copy()
    expect[starts[:, None] + np.arange(w)] = values
    for put in (lambda a: scatter_starts(a, starts, values), lambda a: scatter(a, starts[:, None] + np.arange(w),
                                                                                values)):
        got = arr.copy()
        put(got)
        assert np.array_equal(got, expect)
        assert (got[starts[0]:starts[0] + w] == 7).all()


def test_no_rows_gather_nothing():
    arr = np.arange(64, dtype=np.uint8)
    assert gather_starts(arr, np.zeros(0, np.int64), 16).shape == (0, 16)


@pytest.mark.parametrize("dtype", [np.uint8, np.bool_, np.int32, np.int64])
@pytest.mark.parametrize("w", [2, 4, 8, 16, 32])
@pytest.mark.parametrize("offset", [0, 1])
def test_rows_of_whole_words_move_as_words(dtype, w, offset):
    # rows.py's word passes (rows whose bytes are whole 8-byte words, at starts aligned to the row): the bytes numpy's
    # per-element fancy indexing gives, a row twice keeping the later values, an array that does not start on an
    # 8-byte boundary included; a start that is not aligned, or a row past the end, moves nothing and falls back
    # to numpy (which raises IndexError before it writes)
    rng = np.random.default_rng(w * 7 + offset)
    raw = rng.integers(0, 2, 4100 * 8 + 1).astype(np.uint8).view(np.uint8)
    arr = raw[offset:offset + 4096 * np.dtype(dtype).itemsize].view(dtype)   # offset 1: an unaligned buffer
    n = arr.size // w
    starts = np.append(rng.integers(0, n, 30) * w, 0)
    values = rng.integers(0, 2, (starts.size, w)).astype(dtype)
    want = arr.copy()
    want[starts[:, None] + np.arange(w)] = values
    assert np.array_equal(gather_starts(arr, starts, w), arr[starts[:, None] + np.arange(w)])
    got = arr.copy()
    scatter_starts(got, starts, values)
    assert np.array_equal(got, want) and np.array_equal(got[:w], values[-1])
    got = arr.copy()
    fill_starts(got, starts, w, values[0, 0])
    want = arr.copy()
    want[starts[:, None] + np.arange(w)] = values[0, 0]
    assert np.array_equal(got, want)
    got = arr.copy()
    scatter(got, starts[:, None] + np.arange(w), values)
    want = arr.copy()
    want[starts[:, None] + np.arange(w)] = values
    assert np.array_equal(got, want)
    got = arr.copy()
    with pytest.raises(IndexError):   # the last row past the end: nothing is written
        scatter_starts(got, np.array([0, n * w], np.int64), values[:2])
    assert np.array_equal(got, arr)
    if w > 2:   # a start inside a row: the general path, the same bytes
        odd = starts[:3] + 1
        got = arr.copy()
        scatter_starts(got, odd, values[:3])
        want = arr.copy()
        want[odd[:, None] + np.arange(w)] = values[:3]
        assert np.array_equal(got, want)
