"""Layout provenance: is a tensor-core operand read through a matrix descriptor a coherent tile of the global bytes it
was copied from? (launch option check_layouts)

Shared bytes remember the global byte address they were copied from (SharedWindow.sources: TMA, cp.async, ld + st).
For an operand of R rows (M for A, N for B) and K elements, src(r, k) is the global byte address of element (r, k) as
the descriptor reads it (PTX 9.7.15.5.1 / 9.7.16.3: start address, LBO, SBO, swizzle), -1 where the bytes are no copy
(zero fill, out-of-bounds TMA rows, st.shared of computed values): those elements are not checked.

wgmma and tcgen05.mma A / B (`tile`): the operand is a tile when

    src(r, k) = f(r) + s k      for every known element, one stride s with |s| >= the element size,

f arbitrary. Every row reads its K elements at one stride (s = the element size for a K-major copy of a K-major
array, the array's row pitch for an MN-major one), wherever the row starts: packed buffers holding several matrices,
any row pitch, a sub-tile of a padded array, wrapped, clamped or repeated rows all pass. What a wrong descriptor field
does to src:
- LBO (the K step between core matrices, K-major without swizzle; the MN step between atoms, MN-major): from
  element 8 (16 bytes) on, g(k) = src(r, k) - src(r, 0) jumps by the same amount in every row. A separable rule
  (f(r) + any g(k)) accepts that; a linear g does not;
- swizzle: 16-byte chunks of a row come from other chunks, differently in different rows (the XOR takes the row
  bits): g is not linear;
- SBO (between 8-row groups, K-major; between 8-K groups, MN-major): MN-major, K rows 8.. read the wrong K (g jumps);
  K-major, a row group that starts inside another row reads K-shifted data across a chunk boundary (g jumps). An SBO
  that lands every row group exactly on other whole rows is a row permutation, which no rule that leaves f free can
  tell from a kernel's own row mapping (a grouped GEMM's gather): not reported.

tcgen05.cp (`rows`): the copy moves rows of 16-byte chunks whose meaning is the consumer's (pre-shuffled scale
factors, 9.7.16.10.7: bytes of one row belong to several M rows and K blocks, in any order a TMA box or a shuffle gives
them). The checkable rule is separable:

    src(r, j) = f(r) + g(j)     with g injective (no two bytes of a row from one global byte),

so every row is the same gather of bytes: a wrong swizzle (rows permute their chunks differently) is reported, a wrong
LBO / SBO that moves whole rows or chunks uniformly is not.

The report names two elements of one row whose sources break the rule, by array element where the allocation has an
element size and shape, else by byte offset."""
import numpy as np
from numba import njit

from .errors import HazardError

MEMO_SIZE = 512   # verdicts a launch keeps (one per descriptor value and operand shape; B of n256 holds 128 KB)
TAIL = ("; the swizzle, LBO or SBO the descriptor gives disagree with the layout the copies wrote "
        "(check_layouts=False turns this off)")


def check_tile(gmem, src, ebytes, which, desc, wh, rule="tile", memo=None):
    """Raise HazardError unless the (R, K) global byte addresses `src` (-1: unknown) of an operand of `ebytes`-byte
    elements follow `rule`: "tile" (wgmma / tcgen05.mma A and B) or "rows" (tcgen05.cp source rows).

    memo (a dict kept by the launch): verdicts already given. Every rule above compares sources within rows and
    rows with each other, so an operand whose sources are a passing one's moved by a whole number of elements
    inside the same allocation passes too (every row's column moves alike): the next K block of a stage, the same
    stage of another CTA, or another stage's buffer (another descriptor value), costs one comparison."""
    key = hit = None
    if memo is not None and src.size and src.flat[0] >= 0:
        key = (which, src.shape, ebytes, rule)   # (the verdict is src's alone: desc only names it in a report)
        hit = _translated(gmem, src, ebytes, memo.get(key))
        if hit is True:
            return
    _check(gmem, src, ebytes, which, desc, wh, rule)
    if hit is not None and (key in memo or len(memo) < MEMO_SIZE):   # all known, inside one allocation
        memo[key] = hit


def check_operand(gmem, sh, op, which, desc, wh, memo):
    """check_tile of a descriptor operand (ops/wgmma_gang.Operand `op`) read from the shared window `sh`, asked
    first by its 16-byte granules. Where every granule it reads is one run of copied bytes (SharedWindow.source16 >=
    0), element (granule g, low byte l) comes from source16[g] + l, so granule sources moved by d put every element's
    source d further: a passing operand of the same layout whose granule sources all moved by a
    whole number of elements, inside its allocation, passes (check_tile's memo, without making the per-element
    sources: one pass over 128-512 granules instead of 1-4 K elements). The memo's key is the operand's layout
    (Operand.layout: its element addresses up to a move by whole granules), not its descriptor value: element
    (r, k) reads granule op.grains[i] at low byte l alike in every such operand, so the stages' buffers and K
    blocks of a pipeline share one entry (a Triton GEMM's 24 descriptor values had each paid a full check)."""
    src16 = sh.granule_sources()
    key = ("granules", which, op.layout)
    if src16 is not None and op.grains.size:
        first = int(src16[op.grains[0]])
        seen = memo.get(key)
        if seen is not None and first >= 0 and _moves_inside(seen, first, op.ebytes) and \
                _moved_at(src16, op.grains, seen[1], first):
            return
    src = sh.operand_sources(op)
    check_tile(gmem, src, op.ebytes, which, desc, wh, memo=memo)
    if src16 is None or not op.grains.size or not (key in memo or len(memo) < MEMO_SIZE):
        return
    g16 = src16[op.grains]
    if (g16 < 0).any():   # a granule that is no run (no copy, or mixed sources): asked element by element
        return
    entry = _remembered(gmem, int(g16[0]), g16, int(src.min()), int(src.max()))
    if entry is not None:
        memo[key] = entry


def _moves_inside(seen, first, ebytes) -> bool:
    """Whether a remembered passing operand `seen` moved to start at `first` stays inside its allocation, moved by
    whole elements (what the sources are then compared for)."""
    s_first, _, s_alloc, s_lo, s_hi = seen
    return s_alloc.base <= first + s_lo and first + s_hi < s_alloc.end and (first - s_first) % ebytes == 0


def _remembered(gmem, first, src, lo, hi):
    """What the memo keeps of passing sources `src` (first: the one others are relative to; lo, hi: the least and
    largest element source): (first, relative sources, allocation, lo and hi relative), or None outside one
    allocation."""
    alloc = gmem.holding(lo, hi)
    return None if alloc is None else (first, src - first, alloc, lo - first, hi - first)


@njit(cache=True)
def _moved_at(src16, grains, rel, first):
    """Whether src16[grains] == first + rel everywhere, every one a run (>= 0), in one pass."""
    for i in range(grains.size):
        v = src16[grains[i]]
        if v < 0 or v - first != rel[i]:
            return False
    return True


def _translated(gmem, src, ebytes, seen):
    """True if `src` is `seen` (a passing operand's (first source, relative sources, allocation, least and largest
    relative source)) moved by whole elements inside its allocation; else what to remember of `src` if it passes,
    or None (unknown elements, or not inside one allocation). A match's bounds are the remembered ones moved (an
    unknown element, -1, would put the least below the allocation)."""
    first = int(src.flat[0])
    if seen is not None:
        s_rel = seen[1]
        if _moves_inside(seen, first, ebytes) and src.shape == s_rel.shape and src.dtype == s_rel.dtype == np.int64 \
                and _moved(np.ascontiguousarray(src).reshape(-1), np.ascontiguousarray(s_rel).reshape(-1), first):
            return True
    lo, hi = int(src.min()), int(src.max())
    return None if lo < 0 else _remembered(gmem, first, src, lo, hi)


@njit(cache=True)
def _moved(src, rel, first):
    """Whether src == first + rel everywhere (flat int64), in one pass stopping at the first difference."""
    for i in range(src.size):
        if src[i] - first != rel[i]:
            return False
    return True


def _check(gmem, src, ebytes, which, desc, wh, rule):
    known = src >= 0
    counts = known.sum(axis=1)
    if counts.max(initial=0) < 2:   # no row shows two elements: nothing to compare
        return
    ref = int(np.argmax(counts))
    kr = np.flatnonzero(known[ref])
    rows = np.arange(src.shape[0])
    if rule == "tile":
        k0, k1 = int(kr[0]), int(kr[1])
        step, rem = divmod(int(src[ref, k1] - src[ref, k0]), k1 - k0)
        if rem or abs(step) < ebytes:
            _report(gmem, src, ebytes, which, desc, wh, (ref, k0), (ref, k1),
                    f"a row's elements {'overlap' if not rem else 'are not evenly spaced'}")
        off = src - step * np.arange(src.shape[1])
        first = np.argmax(known, axis=1)
        bad = known & (off != off[rows, first][:, None])
        if bad.any():
            r, k = (int(v) for v in np.argwhere(bad)[0])
            _report(gmem, src, ebytes, which, desc, wh, (r, int(first[r])), (r, k),
                    f"every row of a tile reads its K elements at one stride ({step} bytes in row {ref})")
        # every row now reads at one stride: where all are known, a row's first and last element decide which
        # array row and columns it reads (a run at one stride cannot leave an array row and come back)
        cols = np.array([0, src.shape[1] - 1]) if known.all() and src.shape[1] > 2 else None
        _same_columns(gmem, src, known, ebytes, which, desc, wh, cols)
        return
    g = src[ref]
    seen = g[known[ref]]
    values, times = np.unique(seen, return_counts=True)
    if (times > 1).any():
        dup = np.flatnonzero(known[ref] & (g == values[np.argmax(times > 1)]))
        _report(gmem, src, ebytes, which, desc, wh, (ref, int(dup[0])), (ref, int(dup[1])),
                "two bytes of one row come from one global byte")
    common = known & known[ref][None, :]
    has = common.any(axis=1)
    first = np.argmax(common, axis=1)
    off = src - g[None, :]
    bad = common & has[:, None] & (off != off[rows, first][:, None])
    if bad.any():
        r, k = (int(v) for v in np.argwhere(bad)[0])
        _report(gmem, src, ebytes, which, desc, wh, (r, int(first[r])), (r, k),
                f"every row gathers its bytes in the same pattern (as row {ref} does)")


def _same_columns(gmem, src, known, ebytes, which, desc, wh, cols=None):
    """Where the operand comes from one array of two or more axes whose element size is the operand's, and one axis
    holds each row's K run (K-major: the last; MN-major: the one before), every row starts that run at the same index:
    the rows read the same columns. (A K-major row that reads 16 elements from another 16-element-aligned place of its
    own or another row, as a wrong swizzle for k16 makes it, is linear in k: only the array's shape tells the column.)
    No axis holds the runs (a packed matrix whose rows cross the array's rows), or a 1-D array: nothing to check."""
    pick = known if cols is None else np.zeros_like(known)
    if cols is not None:   # only these columns (check_tile: rows at one stride, all known)
        pick[:, cols] = known[:, cols]
    found = gmem.element_index(src[pick])
    if found is None or gmem.allocs[found[0]].itemsize != ebytes or found[1].shape[1] < 2:
        return
    idx = found[1]
    r, kk = np.nonzero(pick)
    starts = np.r_[0, np.flatnonzero(np.diff(r)) + 1]            # first known element of each row (C order)
    head = np.repeat(starts, np.diff(np.r_[starts, r.size]))
    for axis in range(idx.shape[1]):
        off = idx[:, axis] - kk
        if not (off == off[head]).all():
            continue
        others = np.delete(idx, axis, axis=1)
        if not (others == others[head]).all():
            continue
        bad = np.flatnonzero(off != off[0])
        if bad.size:
            b = int(bad[0])
            _report(gmem, src, ebytes, which, desc, wh, (int(r[0]), int(kk[0])), (int(r[b]), int(kk[b])),
                    f"the rows of a tile read the same columns of '{gmem.allocs[found[0]].name}' (axis {axis})")
        return


def _report(gmem, src, ebytes, which, desc, wh, e0, e1, rule):
    (r0, k0), (r1, k1) = e0, e1
    raise HazardError(wh, f"operand {which} (descriptor {desc.encode():#018x}) is not a tile of the array its data was "
                          f"copied from: element ({r0}, {k0}) holds {name(gmem, int(src[r0, k0]), ebytes)} but element "
                          f"({r1}, {k1}) holds {name(gmem, int(src[r1, k1]), ebytes)} ({rule})" + TAIL)


def name(gmem, addr, ebytes):
    """`buf[i, j]` for the element of an allocation at global byte address `addr`, else `byte n of 'buf'`."""
    for a in gmem.allocs:
        if a.base <= addr < a.end:
            off = addr - a.base
            if a.itemsize == ebytes and off % a.itemsize == 0:
                idx = np.unravel_index(off // a.itemsize, a.shape)
                return f"{a.name}[{', '.join(str(int(i)) for i in idx)}]"
            return f"byte {off} of '{a.name}'"
    return f"global byte {addr:#x}"
