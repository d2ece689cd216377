"""tcemu/ptx/rows.py: shadow and memory rows moved as whole aligned rows give exactly what per-byte fancy indexing
gives, aligned or not, with a row written twice keeping the later values."""
import numpy as np
import pytest

from tcemu.ptx.rows import gather, gather_starts, scatter, scatter_starts


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
