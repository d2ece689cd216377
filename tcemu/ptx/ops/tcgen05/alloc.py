"""tcgen05.alloc / .dealloc / .relinquish_alloc_permit (PTX 9.7.16.7.1): tensor-memory columns, a power of two
of 32..512, allocated by one warp (cta_group::2: one warp of each CTA of the pair, together); a blocked alloc waits
for a dealloc."""
import numpy as np

from ....blackwell.tmem import COLUMNS, LANES
from ...errors import HazardError, KernelFault
from ...machine import BLOCK
from ...types import TYPES
from ..common import Mods, where
from ..memory_ops import address, shared_target
from ..registry import register
from .state import check_async, check_pending, pair_of, parse_cta_group, peer, split, state, uniform, whole_warp

U32 = TYPES["u32"]


def _pair_collective(W, key, payload, execute, wh, what):
    """cta_group::2 allocation management: one warp of each CTA of the pair; `execute(records)` runs once both
    arrived (records: {rank: (warp, payload)}). The first to arrive waits (BLOCK) until then."""
    even, odd = pair_of(W.cta, wh)
    tm = state(even)
    rec = tm.pair.setdefault(key, {"arrived": {}, "generation": 0})
    mine = W.sync.get(("pair",) + key)
    if mine is None:
        if W.cta.rank in rec["arrived"]:
            raise HazardError(wh, f"two warps of CTA rank {W.cta.rank} reached {what} (one warp per CTA)")
        rec["arrived"][W.cta.rank] = (W, payload)
        W.cta.progress = True
        if len(rec["arrived"]) == 2:
            arrived, rec["arrived"] = rec["arrived"], {}
            rec["generation"] += 1
            return execute(arrived)
        W.sync[("pair",) + key] = rec["generation"]
        W.wait = f"the peer CTA's warp at {what}"
        return BLOCK
    if rec["generation"] > mine:
        del W.sync[("pair",) + key]
        return None
    return BLOCK


def _fit(tms, ncols):
    """The lowest column, aligned to the allocation's size, free in every one of tms."""
    for start in range(0, COLUMNS, ncols):
        if all(not t.used[start:start + ncols].any() for t in tms):
            return start
    return None


def _operands(ins, prog, get_first, what):
    """read(W, m) -> (nCols, the first operand's value) of tcgen05.alloc / .dealloc: the whole warp executes it and
    both are the same in every thread; nCols a power of two of 32..512 (PTX 9.7.16.7.1)."""
    gcols = prog.read(ins.operands[1], U32, ins)
    wh = where(ins)

    def read(W, m):
        act = whole_warp(W, m, ins)
        n = uniform(gcols(W), act, "nCols", wh)
        if n < 32 or n > COLUMNS or n & (n - 1):
            raise KernelFault(wh, f"nCols = {n}: a power of two in [32, 512] (PTX 9.7.16.7.1)")
        return n, uniform(get_first(W), act, what, wh)
    return read


def _take(entries, n, group, space, wh):
    """Allocate n columns in each CTA of entries, [(warp, dst)] one per CTA taking part, all the same columns, and
    write their first column to dst; None when they are not free."""
    tms = [state(w.cta) for w, _ in entries]
    for (w, _), t in zip(entries, tms):
        if group in t.relinquished:
            raise KernelFault(wh, f"tcgen05.alloc by CTA rank {w.cta.rank} after it executed "
                                  "tcgen05.relinquish_alloc_permit (PTX 9.7.16.7.1: illegal)")
        if t.last_columns is not None and n > t.last_columns:
            raise KernelFault(wh, f"tcgen05.alloc of {n} columns after one of {t.last_columns}: the number of "
                                  "columns allocated should not increase between two allocations of a CTA "
                                  "(PTX 9.7.16.7.1)")
    start = _fit(tms, n)
    if start is None:
        return None
    for (w, dst), t in zip(entries, tms):
        t.used[start:start + n] = True
        t.allocs[start] = (n, group)
        t.last_columns = n
        cta, off = shared_target(w, dst, "shared::cta" if space != "generic" else "generic", wh)
        if cta is not w.cta:
            raise KernelFault(wh, "tcgen05.alloc's destination must be in the executing CTA's shared memory")
        cta.shared.store(np.array([off], np.int64), np.frombuffer(np.uint32(start).tobytes(), np.uint8)[None],
                         [int(w.tid[0])], wh)
    return start


def _free(entries, n, taddr, group, wh):
    """Deallocate the n columns at taddr in each CTA of entries, [(warp, None)]: a whole allocation of `group`."""
    lane, col = split(taddr, wh)
    for w, _ in entries:
        t = state(w.cta)
        got = t.allocs.get(col)
        if lane or got is None or got[0] != n:
            have = ", ".join(f"[{a}, {a + c})" for a, (c, _) in sorted(t.allocs.items())) or "none"
            raise KernelFault(wh, f"tcgen05.dealloc of {n} columns at {taddr:#010x} in CTA rank {w.cta.rank}: "
                                  f"not an allocation (allocations: {have}; tcemu deallocates whole allocations)")
        if got[1] != group:
            raise KernelFault(wh, f"tcgen05.dealloc.cta_group::{group} of an allocation made with "
                                  f"cta_group::{got[1]}")
        cols = np.arange(col, col + n)
        lanes = np.arange(LANES)[:, None]
        # a tcgen05.ld still pending is not a hazard here: its registers hold the values already (the CuTe
        # tutorials free tensor memory after consuming them, with no tcgen05.wait::ld); stores and
        # asynchronous operations still writing or reading the columns are
        check_pending(t, lanes, cols[None, :], wh, "tcgen05.dealloc frees")
        check_async(w, t, lanes, cols[None, :], wh, "tcgen05.dealloc frees", readers=True)
        t.ld_warp[:, col:col + n] = -1
        del t.allocs[col]
        t.used[col:col + n] = False
        t.mem.written[:, col:col + n] = False
        t.writer[:, col:col + n] = -1
        t.reader[:, col:col + n] = -1


@register("tcgen05.alloc", "tcgen05.dealloc", "tcgen05.relinquish_alloc_permit")
def c_alloc(ins, prog, pc):
    mods = Mods(ins, skip=1)
    what = mods.parts[0]
    group = parse_cta_group(mods, ins, prog)
    if what == "relinquish_alloc_permit":
        return _relinquish(ins, group)
    if what == "alloc":
        return _alloc(ins, prog, pc, mods, group)
    return _dealloc(ins, prog, pc, group)


def _relinquish(ins, group):
    wh = where(ins)

    def relinquish(W, m):
        whole_warp(W, m, ins)
        state(W.cta).relinquished.add(group)
        if group == 2:
            state(peer(W.cta, wh)).relinquished.add(group)
    return relinquish


def _alloc(ins, prog, pc, mods, group):
    wh = where(ins)
    space = "shared::cta" if "shared::cta" in mods else "generic"
    read = _operands(ins, prog, address(prog, ins.operands[0], ins, space), "the destination address")

    def alloc(W, m):
        n, dst = read(W, m)
        if group == 1:
            if _take([(W, dst)], n, group, space, wh) is None:
                W.wait = (f"tensor memory: {n} free columns (tcgen05.alloc blocks until a tcgen05.dealloc frees "
                          "them)")
                return BLOCK
            W.sync.pop(("alloc", pc), None)
            return None

        def both(arrived):
            ns = {p[0] for _, p in arrived.values()}
            if len(ns) != 1:
                raise KernelFault(wh, f"the CTA pair's tcgen05.alloc.cta_group::2 asks for {sorted(ns)} columns")
            entries = [(w, p[1]) for _, (w, p) in sorted(arrived.items())]
            if _take(entries, n, group, space, wh) is None:
                raise KernelFault(wh, f"tcgen05.alloc.cta_group::2: {n} columns are not free in both CTAs")
            return None
        return _pair_collective(W, (pc,), (n, dst), both, wh, "tcgen05.alloc.cta_group::2")
    return alloc


def _dealloc(ins, prog, pc, group):
    wh = where(ins)
    read = _operands(ins, prog, prog.read(ins.operands[0], U32, ins), "taddr")

    def dealloc(W, m):
        n, taddr = read(W, m)
        if group == 1:
            _free([(W, None)], n, taddr, group, wh)
            W.cta.progress = True  # a blocked tcgen05.alloc may go on
            return None

        def both(arrived):
            _free([(w, None) for _, (w, _) in sorted(arrived.items())], n, taddr, group, wh)
            return None
        return _pair_collective(W, (pc,), (n, taddr), both, wh, "tcgen05.dealloc.cta_group::2")
    return dealloc
