"""Per-byte shadow arrays touched row by row: an access of `w` bytes at a start aligned to `w` (ld, st, cp.async,
ldmatrix: PTX 9.7.9.x requires the natural alignment) covers one whole row of the array viewed as (n, w), so
numpy moves a row per index instead of a byte. `spots` are (n, w) byte offsets, each row start + 0..w-1.

A row moves fastest as one element: np.take along the rows, and an assignment through the array viewed as one
void item per row (numpy's fancy indexing pays ~20 ns a (sub)row, a void item is one copy: 3-8x on 3,072 rows of
16, scripts/bench timings in NOTES, session 15). Rows of whole 8-byte words go faster still as words, in one numba
pass (3,072 rows of 16 bytes: 9-15 us against the void items' 33-43 us; NOTES, session 25)."""
import threading
from collections import deque

import numpy as np
from numba import njit


def _rows(arr, w):
    n = arr.shape[0] // w     # an aligned row inside the array lies inside the trimmed view
    return arr[:n * w].reshape(n, w)


def aligned(spots) -> bool:
    """Whether spots are rows of a power-of-two width > 1, each starting at a multiple of it."""
    return spots.ndim == 2 and spots.shape[1] > 1 and _aligned_starts(spots[:, 0], spots.shape[1])


def _aligned_starts(starts, w) -> bool:
    """Whether rows of w bytes at `starts` (some) are rows of the array viewed as (n, w): w a power of two > 1, each
    start a multiple of it."""
    return w > 1 and w & (w - 1) == 0 and starts.size > 0 and not (starts & (w - 1)).any()


LAST = 64             # spots arrays a last_answer function remembers: a gang's CTAs' plans, then their records
LAST_BYTES = 8 << 20   # and the bytes of those it holds at most (it keeps them alive), the newest always kept
# (8 answers had served a wave of 12 Triton CTAs: its records, made after planning all 12, all missed)


def last_answer(fn):
    """fn(spots), answering again at once for the spots arrays it saw last (LAST of them, within LAST_BYTES): one
    access updates several shadows at the same spots (a copy landing: data, written, source, ...; a racecheck plan,
    then its record), each asking, and a gang plans every CTA's access before it records any (spots arrays are never
    written in place). The memo holds the arrays it answers for, so an id in it names that array. Each thread keeps
    its own (launches run in threads side by side: a dask worker's threads, tcemu.matmul's workers)."""
    local = threading.local()

    def ask(spots):
        st = getattr(local, "memo", None)
        if st is None:
            st = local.memo = ({}, deque(), [0])
        memo, order, held = st
        hit = memo.get(id(spots))
        if hit is not None:
            return hit[1]
        out = fn(spots)
        memo[id(spots)] = (spots, out)
        order.append(id(spots))
        held[0] += spots.nbytes
        while len(order) > 1 and (len(order) > LAST or held[0] > LAST_BYTES):
            held[0] -= memo.pop(order.popleft())[0].nbytes
        return out
    ask.__doc__ = fn.__doc__
    return ask


@last_answer
def row_index(spots):
    """The (n,) row numbers of aligned spots in the array viewed as (n, w), or None where they are not aligned."""
    return spots[:, 0] // spots.shape[1] if aligned(spots) else None


def gather(arr, spots):
    """arr[spots]."""
    idx = row_index(spots)
    if idx is not None:
        return np.take(_rows(arr, spots.shape[1]), idx, axis=0)
    return arr[spots]


def gather_starts(arr, starts, w):
    """arr[starts[:, None] + 0..w-1] without making those offsets: rows of w bytes at starts aligned to w (w a power
    of two), else the general gather."""
    words, per = _words(arr, w)
    if per:
        out = np.empty((starts.size, w), arr.dtype)
        if _take_words(words, starts, per, arr.itemsize, out.view(np.uint64).reshape(-1)):
            return out
    if _aligned_starts(starts, w):
        return np.take(_rows(arr, w), starts // w, axis=0)
    return arr[starts[:, None] + np.arange(w)]


def scatter_starts(arr, starts, values):
    """arr[starts[:, None] + 0..w-1] = values ((n, w) of arr's dtype) without making those offsets, as
    gather_starts."""
    if not _put_rows(arr, starts, values.shape[1], values):
        arr[starts[:, None] + np.arange(values.shape[1])] = values


def fill_starts(arr, starts, w, value):
    """arr[starts[:, None] + 0..w-1] = value (one value), without making those offsets, as scatter_starts."""
    if not _fill_rows(arr, starts, w, value):
        arr[starts[:, None] + np.arange(w)] = value


def _put_rows(arr, starts, w, values) -> bool:
    """arr's rows of w elements at `starts` = values ((n, w)): as words where a row is whole words, else as one void
    item a row; False (nothing written) where the starts are not aligned to w or arr is not one contiguous row."""
    words, per = _words(arr, w)
    if per and _put_words(words, starts, per, arr.itemsize,
                          np.ascontiguousarray(values, arr.dtype).view(np.uint64).reshape(-1)):
        return True
    if not (arr.flags.c_contiguous and _aligned_starts(starts, w)):
        return False
    _items(arr, w)[starts // w] = np.ascontiguousarray(values, arr.dtype).view(_items(arr, w).dtype).reshape(-1)
    return True


def _fill_rows(arr, starts, w, value) -> bool:
    """arr's rows of w elements at `starts` all set to one value, as _put_rows (void items: one of the value, copied
    to each)."""
    words, per = _words(arr, w)
    if per and _fill_words(words, starts, per, arr.itemsize, _word(arr.dtype, value)):
        return True
    if not (arr.flags.c_contiguous and _aligned_starts(starts, w)):
        return False
    items = _items(arr, w)
    items[starts // w] = np.full(w, value, arr.dtype).view(items.dtype)[0]
    return True


_WORDS = {}   # (dtype, value) -> the 8-byte word of that value repeated


def _word(dtype, value):
    key = (dtype.str, value.item() if isinstance(value, (np.generic, np.ndarray)) else value)   # (a 0-d array too)
    word = _WORDS.get(key)
    if word is None:
        if len(_WORDS) > 256:
            _WORDS.clear()
        word = _WORDS[key] = np.full(8 // dtype.itemsize, value, dtype).view(np.uint64)[0]
    return word


def _words(arr, w):
    """(arr's whole 8-byte words as uint64, the words a row of w elements spans), or (None, 0) where a row is no whole
    number of words or arr is no contiguous row of elements of at most 8 bytes. A row aligned to w inside arr lies
    inside its whole words (a row ends at a multiple of its bytes, and so of 8)."""
    rb = w * arr.itemsize
    if rb & 7 or w & (w - 1) or arr.ndim != 1 or arr.itemsize > 8 or not arr.flags.c_contiguous:
        return None, 0
    return arr[:((arr.nbytes >> 3) << 3) // arr.itemsize].view(np.uint64), rb >> 3


# The word passes below take element starts (each a multiple of the row's w elements, or the pass declines) and
# move rows of `per` words; they check every row first and move nothing where one fails (as numpy's fancy indexing
# raises before it writes).

@njit(cache=True)
def _rows_inside(words, starts, per, itemsize):
    """Whether every start is aligned to its row (w a power of two) and every row lies inside words."""
    mask = ((per << 3) // itemsize) - 1
    for st in starts:
        if st < 0 or st & mask or ((st * itemsize) >> 3) + per > words.size:
            return False
    return True


@njit(cache=True)
def _fill_words(words, starts, per, itemsize, value):
    if not _rows_inside(words, starts, per, itemsize):
        return False
    if per == 2:   # rows of 16 bytes (cp.async.cg, st.shared.v4): a loop of its own, twice as fast
        for st in starts:
            f = (st * itemsize) >> 3
            words[f] = value
            words[f + 1] = value
        return True
    for st in starts:
        f = (st * itemsize) >> 3
        for j in range(per):
            words[f + j] = value
    return True


@njit(cache=True)
def _put_words(words, starts, per, itemsize, src):
    if not _rows_inside(words, starts, per, itemsize):
        return False
    if per == 2:
        for i in range(starts.size):
            f = (starts[i] * itemsize) >> 3
            words[f] = src[2 * i]
            words[f + 1] = src[2 * i + 1]
        return True
    for i in range(starts.size):
        f = (starts[i] * itemsize) >> 3
        for j in range(per):
            words[f + j] = src[i * per + j]
    return True


@njit(cache=True)
def _take_words(words, starts, per, itemsize, out):
    if not _rows_inside(words, starts, per, itemsize):
        return False
    if per == 2:
        for i in range(starts.size):
            f = (starts[i] * itemsize) >> 3
            out[2 * i] = words[f]
            out[2 * i + 1] = words[f + 1]
        return True
    for i in range(starts.size):
        f = (starts[i] * itemsize) >> 3
        for j in range(per):
            out[i * per + j] = words[f + j]
    return True


def _items(arr, w):
    """arr's whole rows of w as one void item each (arr 1-D and contiguous: every shadow is)."""
    n = arr.shape[0] // w
    return arr[:n * w].view(np.dtype((np.void, w * arr.itemsize)))


def scatter(arr, spots, values):
    """arr[spots] = values (values broadcast against (n, w); rows touching one byte twice: the later wins)."""
    idx = row_index(spots)
    if idx is None:
        arr[spots] = values
        return
    w = spots.shape[1]
    values = np.asarray(values)
    if values.size == 1:   # one value everywhere
        done = _fill_rows(arr, idx * w, w, values.reshape(()))
    elif values.shape == spots.shape:
        done = _put_rows(arr, idx * w, w, values)
    else:   # a value per row, broadcast along it: as fast row by row
        _rows(arr, w)[idx] = values
        return
    if not done:
        arr[spots] = values
