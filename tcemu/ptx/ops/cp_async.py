"""cp.async (+ commit_group / wait_group / wait_all): copies from global to shared memory that land at the wait
(PTX ISA 9.7.9.25), with the checks at issue and at completion. Each op also has a gang version (lockstep.py):
the warps of one CTA at one cp.async issue, or complete, as one batch; where a check would fail, or two warps'
copies touch one byte, the warps run it one at a time instead (signals.Fallback), which makes the report.
"""
from operator import itemgetter

import numpy as np

from .. import parser as P
from .. import graces, races
from ..errors import HazardError, MemoryFault, PtxSyntaxError, PtxUnsupported
from ...core.errors import TcemuError
from ..lockstep import Batch, slots_of, thread_ids
from ..memory import NO_SOURCE
from ..rows import fill_starts, gather, gather_starts, scatter, scatter_starts
from ..signals import Fallback
from ..types import TYPES
from .common import Mods, by_cta, cta_starts, each_warp, mask_array, operands, repeats, repeats_aligned, where
from .memory_ops import access, address
from .registry import register
from .runs import Fuse

# shadows kept per byte that a 16-byte copy's issue asks of its destination (memory._SHADOWS)
_BYTE_SHADOWS = frozenset({"bulk_reading", "tcgen05_reading", "guard_bar", "async_pending"})


@register("cp.async")
def c_cp_async(ins, prog, pc):
    mods = Mods(ins, skip=2)
    if "bulk" in mods:
        raise PtxUnsupported(ins.opcode, f"bulk copies are not modelled yet ({ins.where()})")
    if mods.parts and mods.parts[0] in ("commit_group", "wait_group", "wait_all"):
        return _cp_async_sync(ins, prog, mods.parts[0])
    if mods.parts and mods.parts[0] == "mbarrier":
        raise PtxUnsupported(ins.opcode, "cp.async.mbarrier.arrive is not modelled yet")
    ops = ins.operands
    dst, src, size = ops[0], ops[1], ops[2]
    if not isinstance(size, P.Imm) or size.value not in (4, 8, 16):
        raise PtxSyntaxError(ins.line, ins.col, "cp.async cp-size must be 4, 8 or 16")
    if "cg" in mods and size.value != 16:
        raise PtxSyntaxError(ins.line, ins.col, "cp.async.cg copies 16 bytes")
    nbytes = size.value
    g_dst = address(prog, dst, ins, "shared")
    g_src = address(prog, src, ins, "global")
    g_srcsize = g_ignore = None
    rest = ops[3:]
    if "L2::cache_hint" in ins.opcode:
        rest = rest[:-1]
    if rest:
        if isinstance(rest[0], (P.Reg, P.Imm)) and not (isinstance(rest[0], P.Reg) and
                                                        prog.slot(rest[0], ins).cls == 1):
            g_srcsize = prog.read(rest[0], TYPES["u32"], ins)
        else:
            g_ignore = prog.read(rest[0], TYPES["pred"], ins)
    wh = where(ins)
    span = np.arange(nbytes)

    def read_sizes(pick, count):
        """Bytes each lane reads: src-size capped at cp-size, none where ignore-src is set (PTX 9.7.9.25); None
        where every lane reads cp-size. pick(getter): the lanes' values of an operand."""
        if g_srcsize is None and g_ignore is None:
            return None
        n = np.full(count, nbytes, np.int64) if g_srcsize is None else \
            np.minimum(pick(g_srcsize).astype(np.int64), nbytes)
        if g_ignore is not None:
            n = np.where(pick(g_ignore), 0, n)
        return None if (n == nbytes).all() else n

    def lanes(W, m):
        """(shared destinations, global sources, thread ids, bytes read per lane or None: all) of the lanes."""
        if m is None and W.full:
            dsts, srcs, tids = g_dst(W).astype(np.int64), g_src(W), W.tid
            return dsts, srcs, tids, read_sizes(lambda g: g(W), dsts.size)
        act = mask_array(m) & W.live
        dsts = g_dst(W)[act].astype(np.int64)
        return dsts, g_src(W)[act], W.tid[act], read_sizes(lambda g: g(W)[act], dsts.size)

    def op(W, m):
        dsts, srcs, tids, n = lanes(W, m)
        if dsts.size and (dsts % nbytes).any():
            j = int(np.flatnonzero(dsts % nbytes)[0])
            raise MemoryFault(wh, f"thread {int(tids[j])}: shared destination {int(dsts[j]):#x} is not aligned to "
                                  f"{nbytes} bytes")
        if n is None:
            data = access(W, "global", srcs, tids, nbytes, wh)
        else:
            keep = span[None, :] < n[:, None]
            data = np.zeros((dsts.size, nbytes), np.uint8)
            reads = n > 0
            if reads.any():  # lanes with src-size 0 read nothing (their address may be anything)
                data[reads] = access(W, "global", srcs[reads], tids[reads], nbytes, wh)
                data = np.where(keep, data, 0).astype(np.uint8)
        sh = W.cta.shared
        sh.check(dsts, nbytes, tids, wh, "writes")
        spots = dsts[:, None] + span
        order = np.argsort(dsts, kind="stable")
        same = np.flatnonzero(dsts[order][1:] == dsts[order][:-1])
        if same.size:
            a, b = order[same[0]], order[same[0] + 1]
            raise HazardError(wh, f"threads {int(tids[a])} and {int(tids[b])} of this cp.async both copy to shared "
                                  f"bytes [{int(dsts[a]):#x}, {int(dsts[a]) + nbytes:#x}): two asynchronous copies in "
                                  "flight write the same shared bytes")
        # the copy may land any time from its issue (PTX 9.7.9.25): bytes an in-flight wgmma / bulk store /
        # tcgen05 op still reads may not be its destination even though tcemu writes them at the wait
        sh.check_overwrite(spots, wh, "this cp.async writes")
        sh.check_in_flight(W, spots, wh, "this cp.async writes")
        sh.set_pending(spots, pc + 1)
        W.cp_async_open.append(Copy((dsts, data, srcs.astype(np.int64), n, tids), 0, dsts.size))

    touched = slots_of(prog, ops)   # the registers the operands read (the gang's are gathered once: Batch)

    def lanes_of(B, nw):
        """(shared destinations, global sources, bytes read or None: all) of a gang's (nw, 32) lanes, its registers
        read through a lockstep.Batch."""
        dsts = np.broadcast_to(g_dst(B), (nw, 32)).astype(np.int64)
        srcs = np.broadcast_to(g_src(B), (nw, 32))
        return dsts, srcs, read_sizes(lambda g: np.broadcast_to(g(B), (nw, 32)), nw * 32)

    def gang(pairs):
        """All the gang's issues at once: lanes and the global side together, the shared side CTA by CTA."""
        warps = [W for W, _ in pairs]
        nw = len(warps)
        B = Batch(warps, touched)
        sel = None if all(m is None for _, m in pairs) else \
            np.stack([np.ones(32, bool) if m is None else np.asarray(m, bool) for _, m in pairs])
        dsts, srcs, n = lanes_of(B, nw)
        _issue(warps, sel, [(dsts, srcs, None if n is None else n.reshape(nw, 32), nbytes, wh, pc)])

    gang.masked = True   # lanes as the masks give them (lockstep.run_any)
    op.gang = gang
    if g_ignore is None and ins.guard is None:   # issues of this width in a run (runs.py) are one
        def capture(B, nw):
            d, s, n = lanes_of(B, nw)
            return d, s, None if n is None else n.reshape(nw, 32), nbytes, wh, pc
        op.fuse = Fuse(("cp.async", nbytes), touched, capture, lambda gang, items, B: _issue(gang, None, items))
    return op


def _issue(warps, sel, items):
    """The issues of a gang's warps at once: items [(dsts, srcs, bytes read or None, width, site, pc)], each (nw, 32)
    per instruction in program order, one width; sel (nw, 32) the lanes that run (None: all). A warp's rows are
    (instruction, lane) in order, a CTA's its warps' (each CTA's warps together): one copy a warp, one team a CTA.
    Checks first (Fallback before any change), then the effects, as the instructions one after the other would
    leave them: their global read records instruction by instruction; the rest is order-free (no two rows of a CTA
    may write one shared byte: checked)."""
    nw, K = len(warps), len(items)
    nbytes = items[0][3]
    span = np.arange(nbytes)
    take = np.ones((nw, K, 32), bool) if sel is None else np.broadcast_to(sel[:, None, :], (nw, K, 32))
    if K == 1:
        dsts, srcs = items[0][0][take[:, 0]], items[0][1][take[:, 0]]
    else:
        dsts = np.stack([it[0] for it in items], axis=1)[take]
        srcs = np.stack([it[1] for it in items], axis=1)[take]
    tids = np.broadcast_to(thread_ids(warps)[:, None, :], (nw, K, 32))[take]
    n = None if all(it[2] is None for it in items) else \
        np.stack([np.full((nw, 32), nbytes) if it[2] is None else it[2] for it in items], axis=1)[take]
    if n is not None and (n == nbytes).all():   # (lanes that do not run may hold any src-size)
        n = None
    per_warp = take.sum(axis=(1, 2))
    first = cta_starts(warps)   # where each CTA's warps start; a CTA's warps must be together
    if first is None:
        raise Fallback
    ctas = [warps[k].cta for k in first]
    ends = np.cumsum(per_warp)
    cut = [0] + [int(ends[k - 1]) for k in first[1:]] + [int(ends[-1])]   # lane ranges per CTA
    if dsts.size and (dsts % nbytes).any():
        raise Fallback
    reads = slice(None) if n is None else np.flatnonzero(n > 0)
    rsrc = srcs[reads]
    data = np.zeros((dsts.size, nbytes), np.uint8)
    alloc = off = None
    if rsrc.size:
        if (rsrc % np.uint64(nbytes)).any():
            raise Fallback
        try:
            alloc, off = warps[0].cta.launch.gmem._locate(rsrc, nbytes, tids, items[0][4])
        except TcemuError:
            raise Fallback from None
        if alloc is None or alloc == "multi":
            raise Fallback
        data[reads] = gather_starts(alloc.data, off, nbytes)
    srcs = srcs.astype(np.int64)
    if n is not None:
        data = np.where(span[None, :] < n[:, None], data, 0).astype(np.uint8)
    sh0 = ctas[0].shared   # a launch's windows are alike
    if any(c.shared.lo != sh0.lo or c.shared.hi != sh0.hi for c in ctas):
        raise Fallback
    if dsts.size and (int(dsts.min()) < sh0.lo or int(dsts.max()) + nbytes > sh0.hi or
                      repeats_aligned(np.repeat(np.arange(len(ctas), dtype=np.int64) * (sh0.hi // nbytes + 1)
                                                * nbytes, np.diff(cut)) + dsts, nbytes)):
        raise Fallback   # outside the window; two lanes (of one warp or two, one issue or two) copying to one byte
    gr = dsts >> 4 if nbytes == 16 else None   # a 16-byte copy is one granule (aligned: checked above)
    # the bytes themselves only where a shadow kept per byte is there to ask (memory._SHADOWS, made lazily)
    spots = dsts[:, None] + span if gr is None or any(_BYTE_SHADOWS.intersection(c.shared.__dict__)
                                                      for c in ctas) else None
    for c, lo, hi in zip(ctas, cut, cut[1:]):
        sh = c.shared
        if lo == hi:
            continue
        sp = None if spots is None else spots[lo:hi]
        g = None if gr is None else gr[lo:hi]
        try:
            sh.check_overwrite(sp, items[0][4], g=g)
        except TcemuError:
            raise Fallback from None
        if sh.pending_any(sp, g) or ("guard_bar" in sh.__dict__ and (gather(sh.guard_bar, sp) >= 0).any()):
            raise Fallback
    if alloc is not None:
        leads = [warps[k] for k in first]
        lens = np.diff(cut).tolist() if n is None else [int((n[lo:hi] > 0).sum()) for lo, hi in zip(cut, cut[1:])]
        if graces.reads_race_ctas(leads, alloc, off, nbytes, lens):
            raise Fallback   # another CTA's unordered write: the warps' own loads report it
        _record_reads(leads, first, take, n, off, tids, alloc, nbytes, [it[4] for it in items])
    pcs = [it[5] for it in items]
    if K == 1:
        pend = pcs[0] + 1
    else:   # each row's copy: its instruction's pc + 1
        pend = np.broadcast_to(np.array(pcs, np.int64)[None, :, None] + 1, (nw, K, 32))[take]
    for c, lo, hi in zip(ctas, cut, cut[1:]):
        v = pend if K == 1 else pend[lo:hi, None]
        c.shared.set_pending(None if spots is None else spots[lo:hi], v, None if gr is None else gr[lo:hi, None])
    chunk = (dsts, data, srcs, n, tids)   # each warp's copy: its rows of the gang's arrays; a CTA's: its team
    ends = ends.tolist()
    bounds = first + [nw]
    for k, (lo, hi) in enumerate(zip(cut, cut[1:])):
        team = Team(chunk, lo, hi, bounds[k + 1] - bounds[k])
        for j in range(bounds[k], bounds[k + 1]):
            warps[j].cp_async_open.append(Copy(chunk, ends[j - 1] if j else 0, ends[j], team))


def _record_reads(leads, first, take, n, off, tids, alloc, nbytes, whs):
    """graces.record_reads_ctas of a gang's issues (rows as _issue orders them: warp, instruction, lane; first:
    where each CTA's warps start), one record with the rows instruction by instruction, each its instruction's
    site: where two lanes read one byte, the later instruction's record stays, as their runs one after the other
    leave it."""
    nw, K = take.shape[0], take.shape[1]
    lay = np.full(take.shape, -1, np.int64)   # (warps, K, 32): -1 where a lane does not run or read
    if n is None:
        lay[take] = off
    else:
        rows = np.full(n.size, -1, np.int64)
        rows[n > 0] = off
        lay[take] = rows
    who = np.zeros(take.shape, np.int64)
    who[take] = tids
    cta = np.repeat(np.arange(len(first)), np.diff(first + [nw]))   # each warp's CTA, in `leads` order
    lay, who = lay.transpose(1, 0, 2), who.transpose(1, 0, 2)   # instruction, warp, lane
    keep = lay >= 0
    graces.record_reads_rows(leads, alloc, nbytes, lay[keep], who[keep],
                             np.broadcast_to(cta[None, :, None], keep.shape)[keep],
                             whs, np.broadcast_to(np.arange(K)[:, None, None], keep.shape)[keep])


class Copy:
    """A warp's cp.async in flight: rows lo..hi of `chunk` = (dst, data, src, nread, tids), per lane its shared
    destination (n,), the (n, k) bytes it read, its global source (n,), the bytes it reads (n,) or None where all
    k (src-size / ignore-src: PTX 9.7.9.25), its thread id. A gang's issue is one chunk, each warp's copy its rows
    (so its wait lands them without joining warp by warp); the byte offsets are made again where it lands.
    team: the rows of every warp of its CTA that issued it in that gang (a Team, shared by their copies; None for
    a warp's own issue), so that a gang's wait takes a CTA's copies as one."""
    __slots__ = ("chunk", "lo", "hi", "team")

    def __init__(self, chunk, lo, hi, team=None):
        self.chunk, self.lo, self.hi, self.team = chunk, lo, hi, team

    @property
    def width(self) -> int:
        return self.chunk[1].shape[1]


class Team:
    """Rows lo..hi of a gang issue's chunk: those of the `warps` warps of one CTA (Copy.team)."""
    __slots__ = ("chunk", "lo", "hi", "warps")

    def __init__(self, chunk, lo, hi, warps):
        self.chunk, self.lo, self.hi, self.warps = chunk, lo, hi, warps


def _spots(dst, k):
    return dst[:, None] + np.arange(k)


def _sources(src, nread, k):
    """The global byte behind each shared byte a copy writes (-1: a byte src-size left zero)."""
    out = src[:, None] + np.arange(k)
    return out if nread is None else np.where(np.arange(k) < nread[:, None], out, -1)


def _joined(cs):
    """Copies of one width as one (dst, data, src, nread, tids), in their order; neighbouring rows of one chunk
    are taken as one slice."""
    runs = []
    for c in cs:
        if runs and runs[-1][0] is c.chunk and runs[-1][2] == c.lo:
            runs[-1][2] = c.hi
        else:
            runs.append([c.chunk, c.lo, c.hi])
    parts = [tuple(None if a is None else a[lo:hi] for a in chunk) for chunk, lo, hi in runs]
    return parts[0] if len(parts) == 1 else _concat(parts)


def _concat(parts):
    """Row slices (dst, data, src, nread, tids) of chunks of one width as one."""
    k = parts[0][1].shape[1]
    nread = None if all(p[3] is None for p in parts) else \
        np.concatenate([np.full(len(p[0]), k) if p[3] is None else p[3] for p in parts])
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]), nread, np.concatenate([p[4] for p in parts]))


def _merged(copies):
    """One group's copies, those of one width joined (they land together; none overlap: check_in_flight refused
    that at issue)."""
    widths = {}
    for c in copies:
        widths.setdefault(c.width, []).append(c)
    return [_joined(cs) for cs in widths.values()]


def _apply_copies(W, copies, wh="cp.async completing"):
    sh = W.cta.shared
    for dst, data, src, nread, tids in _merged(copies):
        k = data.shape[1]
        spots = _spots(dst, k)
        sh.check_overwrite(spots, wh, "a cp.async completing here writes")
        # racecheck: the copy's write lands here, in the issuing warp's order (a reader needs the wait's edge)
        races.on_write(sh, W, spots, tids, wh, data)
        _land(sh, spots, data, _landing_sources(src, nread, k))


def _land(sh, spots, data, src):
    """The copies' bytes land at spots; src: the global byte behind each (n, k), or for whole granules read in
    full (n,) each row's first (_landing_sources)."""
    # copy_pc names the TMA behind a guarded byte (check_in_flight); a cp.async's bytes are guarded by nothing
    sh.clear_guard(spots)
    scatter(sh.smem.data, spots, data)
    scatter(sh.smem.written, spots, True)
    if src.ndim == 1:
        sh.set_source_rows(spots[:, 0] >> 4, src)
    else:
        sh.set_sources(spots, src)
    sh.mark_generic(spots)   # cp.async writes through the generic proxy
    sh.set_pending(spots, 0)


def _land_rows(sh, starts, data, src):
    """_land for whole granules read in full: rows of 16 bytes at `starts`, src each row's first global byte."""
    sh.clear_guard(None, starts)   # (cp.async.cg rows are 16-byte aligned)
    scatter_starts(sh.smem.data, starts, data)
    fill_starts(sh.smem.written, starts, 16, True)
    g = starts >> 4
    sh.set_source_rows(g, src)
    sh.mark_generic(None, starts=starts)
    sh.set_pending(None, 0, g=g)


def drain_cp_async(W):
    """Complete every copy of a warp (at exit: the hardware finishes them even if nobody waits)."""
    if not W.cp_async_groups and not W.cp_async_open:
        return
    for g in W.cp_async_groups:
        _apply_copies(W, g)
    _apply_copies(W, W.cp_async_open)
    W.cp_async_groups, W.cp_async_open = [], []


def _cp_async_sync(ins, prog, which):
    if which == "commit_group":
        def commit(W, m):
            W.cp_async_groups.append(W.cp_async_open)
            W.cp_async_open = []
        return each_warp(commit)
    if which == "wait_all":
        def wait_all(W, m):
            W.cp_async_groups.append(W.cp_async_open)
            W.cp_async_open = []
            drain_cp_async(W)
        return wait_all
    n_op = operands(ins, 1)[0]
    if not isinstance(n_op, P.Imm):
        raise PtxSyntaxError(ins.line, ins.col, "cp.async.wait_group takes an immediate")
    keep = n_op.value

    wh = where(ins)

    def wait(W, m):
        while len(W.cp_async_groups) > keep:
            _apply_copies(W, W.cp_async_groups.pop(0), wh)

    def gang(pairs):
        plans = []
        for cta, members in by_cta(pairs):
            sh = cta.shared
            batches = _team_batches(members, keep)
            if batches is None:
                batches = _copy_batches(members, keep)
            if len(batches) > 1 and repeats(np.concatenate([_bytes(b[1], b[6]).reshape(-1) for b in batches])):
                raise Fallback
            for _, spots, *_, starts in batches:
                try:
                    sh.check_overwrite(spots, wh, g=None if spots is not None else starts >> 4)
                except TcemuError:
                    raise Fallback from None
            rows = [races.gang_write_plan(sh, b[0], b[1], b[4], None, owner=b[5], starts=b[6]) for b in batches]
            if any(r is None for r in rows):
                raise Fallback
            plans.append((sh, members, batches, rows))
        for sh, members, batches, rows in plans:
            for W, _ in members:
                del W.cp_async_groups[:max(len(W.cp_async_groups) - keep, 0)]
            for (owners, spots, data, src, tids, owner, starts), r in zip(batches, rows):
                races.gang_write_record(sh, spots, tids, None, r, wh, owner=owner, starts=starts)
                if spots is None:
                    _land_rows(sh, starts, data, src)
                else:
                    _land(sh, spots, data, src)
    wait.gang = gang
    return wait


def _batch(owners, dst, data, src, nread, tids, owner, keep=True):
    """A landing batch of one width: (owner warps, spots, data, sources, tids, each row's index into owners, row
    starts), the sources as _land takes them; Fallback where two rows start together (rows aligned to their width
    overlap only then). Whole 16-byte granules read in full or not at all land as rows (_land_rows: spots None; a CTA's
    3,072 x 16 byte offsets had been 393 KB made and walked at every landing), others byte by byte (starts None)."""
    k = data.shape[1]
    if repeats_aligned(dst, k):   # (aligned to their width: checked at issue)
        raise Fallback
    if k == 16 and (nread is None or not ((nread != 0) & (nread != 16)).any()):
        return owners, None, data, _row_sources(src, nread) if keep else _UNKEPT, tids, owner, dst
    return owners, _spots(dst, k), data, _landing_sources(src, nread, k) if keep else _UNKEPT, tids, owner, None


_UNKEPT = np.array(NO_SOURCE, np.int64)   # a landing's sources where its window keeps none (SharedWindow.keep_sources)


def _row_sources(src, nread):
    """Each 16-byte row's first source where every row is read in full or not at all (src-size 0: zero fill, no
    source: NO_SOURCE, as _sources gives each of its bytes)."""
    return src if nread is None else np.where(nread == 16, src, NO_SOURCE)


def _bytes(spots, starts):
    """A batch's byte offsets (rows of 16 at starts where spots is None)."""
    return spots if spots is not None else _spots(starts, 16)


def _landing_sources(src, nread, k):
    """What _land takes: each row's first source where every row is a whole 16-byte granule read in full, else
    the global byte behind each byte (_sources)."""
    return src if k == 16 and nread is None else _sources(src, nread, k)


def _team_batches(members, keep):
    """A CTA's landing batches where its waiting warps are exactly the warps that issued each copy in one gang
    (Copy.team): a team's rows are one slice, taken without visiting the warps' copies one by one. An owner per
    (warp, group), as _apply_copies records them. None where that does not hold (_copy_batches)."""
    w0 = members[0][0]
    n = len(w0.cp_async_groups) - keep
    if n <= 0:
        return None
    teams, where = [], {}   # where: team -> its group's index (a team is in one group of every warp)
    for gi, g in enumerate(w0.cp_async_groups[:n]):
        for c in g:
            teams.append(c.team)
            where[c.team] = gi
    if None in where or any(t.warps != len(members) for t in teams):
        return None
    for W, _ in members[1:]:
        if len(W.cp_async_groups) - keep != n or [c.team for g in W.cp_async_groups[:n] for c in g] != teams:
            return None
    pos = np.full(max(W.index for W, _ in members) + 1, -1, np.int64)
    pos[[W.index for W, _ in members]] = np.arange(len(members)) * n
    owners = [W for W, _ in members for _ in range(n)]
    widths = {}
    for t in teams:
        widths.setdefault(t.chunk[1].shape[1], []).append(t)
    out = []
    for ts in widths.values():
        parts = [tuple(None if a is None else a[t.lo:t.hi] for a in t.chunk) for t in ts]
        dst, data, src, nread, tids = parts[0] if len(parts) == 1 else _concat(parts)
        owner = pos[tids >> 5] + np.repeat([where[t] for t in ts], [t.hi - t.lo for t in ts])
        out.append(_batch(owners, dst, data, src, nread, tids, owner, w0.cta.shared.keep_sources))
    return out


def _copy_batches(members, keep):
    """A CTA's landing batches from its warps' copies one by one: one batch per width, an owner per warp's group
    and width (one on_write call of _apply_copies); a batch's rows go chunk by chunk (a gang issue's rows of this
    CTA: one slice)."""
    widths, order = {}, {}
    for W, _ in members:
        for g in W.cp_async_groups[:max(len(W.cp_async_groups) - keep, 0)]:
            for c in g:
                part = widths.setdefault(c.width, ([], []))
                if not part[1] or part[1][-1][1] is not g:
                    part[1].append((W, g))
                part[0].append((order.setdefault(id(c.chunk), len(order)), c.lo, len(part[1]) - 1, c))
    batches = []
    for part, owners in widths.values():
        part.sort(key=itemgetter(0, 1))   # chunk by chunk, rows in order
        owner = np.repeat(np.array([p[2] for p in part]), [p[3].hi - p[3].lo for p in part])
        batches.append(_batch([W for W, _ in owners], *_joined([p[3] for p in part]), owner,
                              members[0][0].cta.shared.keep_sources))
    return batches
