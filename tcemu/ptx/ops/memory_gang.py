"""Gang versions (lockstep.py) of ld / st on .shared, .global or generic addresses that all land in one of them, of
ldmatrix and of stmatrix (PTX ISA 9.7.9.8-9, 9.7.14.5.15-16): the accesses of the gang's warps, CTA by CTA, as one
batch. Every check the warps' own runs make (alignment, bounds, mbarrier objects, bytes in-flight async operations
read or write, TMA guards, unwritten bytes, racecheck) is made first, reading state only; where one would report,
or the batch is a case not covered (two lanes of the gang store to one byte, lanes in several state spaces or
allocations, another CTA's shared memory), the gang raises signals.Fallback before anything changes and the warps
run the instruction one at a time, which gives the report. Then the effects land as the warps' runs would leave
them, in gang order. memory_ops.py attaches these to the weak (plain) forms; strong ones run warp by warp.
"""
import numpy as np
from numba import njit

from .. import graces, races
from ...core.errors import TcemuError
from ..lockstep import Batch, thread_ids
from ..memory import NO_SOURCE, WINDOW_SIZE, WINDOWS, from_bytes
from ..rows import gather_starts, scatter_starts
from ..signals import Fallback
from .common import by_cta, cta_starts, repeats

OWN_CTA = 1 << 24   # generic shared offsets from 2^24 up name another CTA of the cluster (memory_ops.CLUSTER_SHIFT)
SHARED_BASE = np.uint64(WINDOWS["shared"])
SHARED_END = np.uint64(WINDOWS["shared"] + WINDOW_SIZE)

# lane l holds elements (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1) of each 8x8 matrix (PTX 9.7.14.5.15)
FRAG_ROW = np.arange(32) // 4
FRAG_COL = 2 * (np.arange(32) % 4)
ROW16 = np.arange(16)


def _lanes(members, get_addr):
    """(active-lane selectors (None: all 32), the (warps * 32,) selector of all (None: every lane), addresses,
    thread ids, lanes per warp) of a CTA's warps."""
    acts = [m if m is not None else (None if W.full else W.live) for W, m in members]
    addrs = np.concatenate([get_addr(W) for W, _ in members])
    tids = np.concatenate([W.tid for W, _ in members])
    if all(a is None for a in acts):
        return acts, None, addrs, tids, [32] * len(members)
    sel = np.concatenate([np.ones(32, bool) if a is None else a for a in acts])
    return acts, sel, addrs[sel], tids[sel], [32 if a is None else int(a.sum()) for a in acts]


def _space(space, addrs):
    """("shared", int64 offsets) or ("global", uint64 addresses) where every address lies in that state space
    (PTX 5.1.6: a generic address in the shared window names shared memory, one outside every window global)."""
    if space == "shared":
        return "shared", addrs.astype(np.int64)
    if space == "global":
        return "global", addrs
    inside = (addrs >= SHARED_BASE) & (addrs < SHARED_END)
    if inside.all():
        offs = (addrs - SHARED_BASE).astype(np.int64)
        if int(offs.max()) >= OWN_CTA:   # shared::cluster: another CTA's window
            raise Fallback
        return "shared", offs
    if inside.any() or any(((addrs >= np.uint64(b)) & (addrs < np.uint64(b + WINDOW_SIZE))).any()
                           for b in WINDOWS.values()):
        raise Fallback
    return "global", addrs


def _split(x, counts):
    """x's rows, warp by warp."""
    out, at = [], 0
    for k in counts:
        out.append(x[at:at + k])
        at += k
    return out


def _log(members, space, addrs, counts, nbytes, wh):
    """The launch's write log (hang.WriteLog: who last wrote what, for hang reports): the warps' stores, one entry
    (counts: each warp's lanes of addrs, in order)."""
    log = getattr(members[0][0].cta.launch, "writes", None)
    if log is not None:
        log.gang(space, [W for W, _ in members], addrs, counts, nbytes, wh)


# ------------------------------------------------------------------------------------------------- shared

def _shared_bounds(sh, offs, spots, nbytes):
    """SharedWindow.check and the mbarrier-object check of load and store (memory.py)."""
    if int(offs.min()) < sh.lo or int(offs.max()) + nbytes > sh.hi:
        raise Fallback
    if "mbar_live" in sh.__dict__ and sh.mbar_live[spots].any():   # a shadow never made is all zeros
        raise Fallback


def _shared_load_plan(sh, members, offs, tids, counts, nbytes, wh):
    """SharedWindow.load's checks for a CTA's warps, reading state only: the bytes read and the racecheck rows. wh:
    the site, or K sites where each warp's rows are K equal blocks, one per instruction (a run: ldmatrix_run)."""
    spots = offs[:, None] + (ROW16 if nbytes == 16 else np.arange(nbytes))
    _shared_bounds(sh, offs, spots, nbytes)
    warps = [W for W, _ in members]
    if sh.guarded and sh.unobserved(warps, spots) is not None:   # a TMA's bytes: check_guard
        raise Fallback
    if sh.pending_any(spots):
        raise Fallback
    if not sh.smem.written[spots].all():   # an unwritten read: its report may wait for a racing write
        raise Fallback
    rows = races.gang_read_plan(sh, warps, spots, tids, counts)
    if rows is None:
        raise Fallback
    raw = sh.smem.data[spots]

    def land():
        races.gang_read_record(sh, spots, tids, counts, rows, wh)
    return raw, land


@njit(cache=True)
def _shared_repeats(offs, counts, data) -> int:
    """0 where no two rows start together (offs; counts[i] rows of warp i, in order; data (rows, nbytes)), 1 where
    every shared start is one warp's and its rows there store one value, else 2."""
    n = offs.size
    warp = np.empty(n, np.int64)
    at = 0
    for i in range(counts.size):
        warp[at:at + counts[i]] = i
        at += counts[i]
    order = np.argsort(offs, kind="mergesort")
    out = 0
    for j in range(1, n):
        a, b = order[j - 1], order[j]
        if offs[a] != offs[b]:
            continue
        if warp[a] != warp[b]:
            return 2
        for k in range(data.shape[1]):
            if data[a, k] != data[b, k]:
                return 2
        out = 1
    return out


def _shared_store_plan(sh, members, offs, tids, counts, data, wh):
    """SharedWindow.store's checks for a CTA's warps (no byte stored twice), reading state only; the effects. wh:
    the site, or K sites where each warp's rows are K blocks of 32 lanes, one per instruction in program order
    (a run of stores, shared_store_run): records, write log and generic-proxy epochs then go instruction by
    instruction, as the instructions one after the other leave them."""
    nbytes = data.shape[1]
    # starts aligned to nbytes: overlapping stores start at one address; lanes of one warp may store one value
    # there (a reduction's result, which every lane holds: Triton's softmax, layer norm), as the warp's own store
    # does (the last lane's records, as its scatter leaves them)
    shared = _shared_repeats(offs, np.asarray(counts, np.int64), data)
    if shared == 2 or shared == 1 and not isinstance(wh, str):
        raise Fallback
    spots = offs[:, None] + (ROW16 if nbytes == 16 else np.arange(nbytes))
    _shared_bounds(sh, offs, spots, nbytes)
    try:
        sh.check_overwrite(spots, wh)
    except TcemuError:
        raise Fallback from None
    rows = races.gang_write_plan(sh, [W for W, _ in members], spots, tids, counts)
    if rows is None:
        raise Fallback

    def land():
        races.gang_write_record(sh, spots, tids, counts, rows, wh)
        nw = len(counts)
        if isinstance(wh, str):
            _log(members, sh, offs, counts, nbytes, wh)
        else:
            at = offs.reshape(nw, len(wh), 32)
            for j, w in enumerate(wh):
                _log(members, sh, at[:, j].reshape(-1), [32] * nw, nbytes, w)
        sh.clear_guard(spots)
        sh.set_sources(spots, NO_SOURCE)
        sh.smem.data[spots] = data
        sh.smem.written[spots] = True
        e = sh.write_epoch   # mark_generic once per warp, in gang order (instruction by instruction)
        if isinstance(wh, str):
            ep = np.repeat(np.arange(e + 1, e + 1 + nw, dtype=np.int64), counts)
            sh.write_epoch = e + nw
        else:
            k = len(wh)
            ep = (e + 1 + np.arange(k, dtype=np.int64)[None, :, None] * nw +
                  np.arange(nw, dtype=np.int64)[:, None, None]).repeat(32, axis=2).reshape(-1)
            sh.write_epoch = e + k * nw
        sh.set_unfenced(spots, ep[:, None])
    return land


def _run_rows(gang, items, rows):
    """What a run's executor plans CTA by CTA: [(cta's first warp, end)], offsets and thread ids (warps, K, rows)
    (each warp's rows: instruction by instruction, `rows` lanes each) and the K sites, of items [(offsets (warps,
    rows), ..., site)] in program order; Fallback where a CTA's warps are not together in the gang."""
    first = cta_starts(gang)
    if first is None:
        raise Fallback
    nw, K = len(gang), len(items)
    offs = np.stack([it[0] for it in items], axis=1)
    tids = np.broadcast_to(thread_ids(gang)[:, None, :rows], (nw, K, rows))
    return list(zip(first, first[1:] + [nw])), offs, tids, [it[-1] for it in items]


def shared_store_run(gang, items, B=None):
    """A run of st.shared of one width (ops/runs.py) for a whole gang: items [(offsets (warps, 32), bytes
    (warps * 32, width), site)] in program order; a CTA's rows (warp, instruction, lane) as one _shared_store_plan,
    every CTA planned before any lands (no byte stored twice in a CTA: checked)."""
    ctas, offs, tids, whs = _run_rows(gang, items, 32)
    nw, K, nbytes = len(gang), len(items), items[0][1].shape[1]
    data = np.stack([it[1].reshape(nw, 32, nbytes) for it in items], axis=1)           # (warps, K, 32, width)
    plans = [_shared_store_plan(gang[lo].cta.shared, [(W, None) for W in gang[lo:hi]], offs[lo:hi].reshape(-1),
                                tids[lo:hi].reshape(-1), [K * 32] * (hi - lo), data[lo:hi].reshape(-1, nbytes), whs)
             for lo, hi in ctas]
    for land in plans:
        land()


# ------------------------------------------------------------------------------------------------- global

def _global_plan(W, offs_or_addrs, tids, nbytes, wh):
    """The allocation holding every lane's bytes (GlobalMemory._locate) and the offsets into it, or Fallback."""
    gmem = W.cta.launch.gmem
    try:
        a, off = gmem._locate(offs_or_addrs, nbytes, tids, wh)
    except TcemuError:
        raise Fallback from None
    if a is None or isinstance(a, str):   # "multi": lanes in several allocations
        raise Fallback
    return a, off


def global_loads_plan(parts, nbytes, wh):
    """The bytes the lanes of several CTAs load from global memory, as one: parts [(a warp of the CTA, addresses,
    the CTA's thread indices)] in gang order; and land(), which records the reads. Fallback where a check would
    report (reading state only)."""
    if len(parts) == 1:
        return global_loads_rows([parts[0][0]], parts[0][1], parts[0][2], [len(parts[0][1])], nbytes, wh)
    return global_loads_rows([p[0] for p in parts], np.concatenate([p[1] for p in parts]),
                             np.concatenate([p[2] for p in parts]), [len(p[1]) for p in parts], nbytes, wh)


def global_loads_rows(warps, addrs, tids, lens, nbytes, wh):
    """global_loads_plan of rows given as arrays: warps, a warp of each CTA; lens, each one's lanes of addrs and
    tids, in order (a gang's loads, not split CTA by CTA and joined again)."""
    W = warps[0]
    a, off = _global_plan(W, addrs, tids, nbytes, wh)
    checked = W.cta.launch.check_races
    if checked and graces.reads_race_ctas(warps, a, off, nbytes, lens):
        raise Fallback
    raw = gather_starts(a.data, off, nbytes)

    def land():
        if checked and off.size:
            part = np.repeat(np.arange(len(warps)), lens)
            graces.record_reads_rows(warps, a, nbytes, off, tids, part, wh, part)
    return raw, land


def _global_store_plan(members, addrs, tids, counts, data, wh):
    W = members[0][0]
    a, off = _global_plan(W, addrs, tids, data.shape[1], wh)
    if not a.writable:
        raise Fallback
    checked = W.cta.launch.check_races
    if checked and graces.writes_race(W, a, off, data):
        raise Fallback

    def land():
        if checked:
            graces.record_writes(W, a, off, data, tids, wh)
        scatter_starts(a.data, off, data)
        _log(members, W.cta.launch.gmem, addrs, counts, data.shape[1], wh)
    return land


def _global_stores_plan(stores, wh):
    """_global_store_plan for the stores of several CTAs at once (stores: as _global_stores'), no byte stored
    twice."""
    groups, addrs, tids, counts, lens, data = stores
    W = groups[0][0][0]
    a, off = _global_plan(W, addrs, tids, data.shape[1], wh)
    if not a.writable:
        raise Fallback
    checked = W.cta.launch.check_races
    warps = [ms[0][0] for ms in groups]   # a warp of each CTA
    if checked and graces.writes_race_ctas(warps, a, off, data, lens):
        raise Fallback

    def land():   # (the rows at their starts: a gang's .v4 stores as (n, 16) offsets had cost ~1 ms, 16,384 rows)
        if checked:
            graces.record_writes_ctas(warps, a, off, data, tids, lens, wh)
        scatter_starts(a.data, off, data)
        _log([m for ms in groups for m in ms], W.cta.launch.gmem, addrs, counts, data.shape[1], wh)
    return land


def _global_stores(stores, wh):
    """The plan of a gang's global stores: stores (the warps of each CTA [[(W, m), ...], ...], addresses, thread
    ids, lanes per warp, lanes per CTA, (lanes, nbytes) data), in gang order; several CTAs' as one; no byte stored
    twice in the gang (else Fallback)."""
    groups, addrs, tids, counts, _, data = stores
    if repeats(addrs):
        raise Fallback
    if len(groups) > 1:
        return _global_stores_plan(stores, wh)
    return _global_store_plan(groups[0], addrs, tids, counts, data, wh)


def _joined(parts):
    """_global_stores' stores of per-CTA parts [(members, addresses, tids, counts, data)]."""
    cat = (lambda i: parts[0][i]) if len(parts) == 1 else (lambda i: np.concatenate([p[i] for p in parts]))
    return ([p[0] for p in parts], cat(1), cat(2), [c for p in parts for c in p[3]], [len(p[1]) for p in parts],
            cat(4))


# ------------------------------------------------------------------------------------------------- ld / st

def _gang_lanes(pairs, B, get_addr, nbytes, starts):
    """(the (warps, 32) selector of the gang's active lanes (None: every lane), their addresses, their thread ids,
    lanes per warp, lanes per CTA (starts: cta_starts)) read through B, the gang's registers; Fallback where no lane
    runs or an address is misaligned."""
    nw = len(pairs)
    addrs = np.broadcast_to(get_addr(B), (nw, 32))
    tids = thread_ids([W for W, _ in pairs])
    if all(m is None and W.full for W, m in pairs):
        sel, addrs, tids = None, addrs.reshape(-1), tids.reshape(-1)
        counts = [32] * nw
    else:
        sel = np.stack([W.live if m is None else m for W, m in pairs])
        addrs, tids = addrs[sel], tids[sel]
        counts = sel.sum(axis=1).tolist()
    if addrs.size == 0 or nbytes > 1 and (addrs % np.uint64(nbytes)).any():
        raise Fallback
    return sel, addrs, tids, counts, np.add.reduceat(np.asarray(counts), starts).tolist()


def _batch_lanes(pairs, touched, get_addr, nbytes):
    """(warps, where each CTA's warps start, the lockstep.Batch) + _gang_lanes of a gang whose CTAs' warps stand
    together, its registers read once through the Batch; None where they do not (the CTA by CTA path)."""
    warps = [W for W, _ in pairs]
    starts = cta_starts(warps)
    if starts is None:
        return None
    B = Batch(warps, touched)
    return (warps, starts, B) + _gang_lanes(pairs, B, get_addr, nbytes, starts)


def _set_loaded(B, sel, raw, cont, sets, written):
    """The loaded bytes raw ((lanes, nbytes), sel's lanes in gang order) into every warp's destinations at once."""
    vals = from_bytes(raw, cont)   # (lanes, vec)
    for i, s in enumerate(sets):
        if sel is None:
            s(B, vals[:, i].reshape(len(B.warps), 32), None)
        else:
            full = np.zeros(sel.shape, cont)
            full[sel] = vals[:, i]
            s(B, full, sel)
    B.store(written)


def _global_load_lanes(pairs, touched, written, get_addr, nbytes, cont, sets, space, wh) -> bool:
    """ld.global of the gang's warps, every CTA's at once through one lockstep.Batch (addresses read and
    destinations set for all warps together: a Triton elementwise kernel's predicated loads had cost ~1.7 ms a
    CTA of four warps warp by warp, 2026-11-28); False where a CTA's warps are not together in the gang or the
    lanes are not all global (the CTA by CTA path)."""
    got = _batch_lanes(pairs, touched, get_addr, nbytes)
    if got is None:
        return False
    warps, starts, B, sel, addrs, tids, _, lens = got
    kind, at = _space(space, addrs)
    if kind != "global":
        return False
    raw, land = global_loads_rows([warps[k] for k in starts], at, tids, lens, nbytes, wh)
    land()
    _set_loaded(B, sel, raw, cont, sets, written)
    return True


def _shared_gang_lanes(pairs, touched, get_addr, nbytes):
    """The lanes of a gang's .shared access read through one lockstep.Batch, CTA by CTA: (B, sel, offsets, thread
    ids, [(the CTA's (W, m) pairs, its lanes' slice, its warps' lane counts)]), or None where a CTA's warps are not
    together in the gang (the CTA by CTA path, every warp's registers read on its own: ~2-3 us a warp, Triton's
    softmax reductions through shared memory); Fallback where a CTA has no lane to run."""
    got = _batch_lanes(pairs, touched, get_addr, nbytes)
    if got is None:
        return None
    warps, starts, B, sel, addrs, tids, counts, lens = got
    if 0 in lens:
        raise Fallback
    ends, at, ctas = starts[1:] + [len(warps)], 0, []
    for a, b, n in zip(starts, ends, lens):
        ctas.append((pairs[a:b], slice(at, at + n), counts[a:b]))
        at += n
    return B, sel, _space("shared", addrs)[1], tids, ctas


def _shared_load_lanes(pairs, touched, written, get_addr, nbytes, cont, sets, wh) -> bool:
    """ld.shared of the gang's warps: every CTA planned (_shared_load_plan), then recorded, then every warp's
    destinations set at once through the Batch; False where _shared_gang_lanes gives None."""
    got = _shared_gang_lanes(pairs, touched, get_addr, nbytes)
    if got is None:
        return False
    B, sel, offs, tids, ctas = got
    plans = [_shared_load_plan(m[0][0].cta.shared, m, offs[at], tids[at], counts, nbytes, wh) for m, at, counts in ctas]
    for _, land in plans:
        land()
    _set_loaded(B, sel, np.concatenate([raw for raw, _ in plans]) if len(plans) > 1 else plans[0][0], cont, sets,
                written)
    return True


def ld_gang(space, get_addr, nbytes, cont, sets, wh, touched=None, written=None):
    """op.gang of a weak ld (memory_ops.c_ld): sets, the destination setters; cont, the element container;
    touched / written: the registers the operands name / the destinations (a global load of several CTAs reads
    and sets every warp's at once: lockstep.Batch)."""
    def gang(pairs):
        if space in ("global", "generic") and touched is not None and len(pairs) > 1 and \
                _global_load_lanes(pairs, touched, written, get_addr, nbytes, cont, sets, space, wh):
            return
        if space == "shared" and touched is not None and len(pairs) > 1 and \
                _shared_load_lanes(pairs, touched, written, get_addr, nbytes, cont, sets, wh):
            return
        plans, loads = [], []   # loads: every CTA's global lanes, read as one
        for cta, members in by_cta(pairs):
            acts, _, addrs, tids, counts = _lanes(members, get_addr)
            if addrs.size == 0 or nbytes > 1 and (addrs % np.uint64(nbytes)).any():
                raise Fallback
            kind, at = _space(space, addrs)
            if kind == "shared":
                raw, land = _shared_load_plan(cta.shared, members, at, tids, counts, nbytes, wh)
                plans.append((members, acts, counts, raw, land))
            else:
                loads.append((members[0][0], at, tids))
                plans.append((members, acts, counts, None, None))
        if loads:
            raw, land = global_loads_plan(loads, nbytes, wh)
            land()
            at = 0
            for i, (members, acts, counts, r, _) in enumerate(plans):
                if r is None:
                    n = sum(counts)
                    plans[i] = (members, acts, counts, raw[at:at + n], None)
                    at += n
        for members, acts, counts, raw, land in plans:
            if land is not None:
                land()
            vals = from_bytes(raw, cont)   # (lanes, vec)
            for (W, _), act, v in zip(members, acts, _split(vals, counts)):
                for i, s in enumerate(sets):
                    if act is None:
                        s(W, v[:, i], None)
                    else:
                        full = np.zeros(32, cont)
                        full[act] = v[:, i]
                        s(W, full, act)
    gang.masked = True   # lanes as the masks give them (lockstep.run_any)
    return gang


def _store_bytes(B, sel, gets, pack):
    """The bytes a gang's st stores, its active lanes' (sel) in gang order: the sources read through the Batch B."""
    nw = len(B.warps)
    vals = np.stack([np.broadcast_to(g(B), (nw, 32)) for g in gets], axis=-1)   # (warps, 32, vec)
    return pack(vals.reshape(nw * 32, -1) if sel is None else vals[sel])


def _global_lanes(pairs, touched, gets, get_addr, nbytes, pack):
    """st.global of the gang's warps, every CTA's at once: _global_stores' stores, or None where a CTA's warps are
    not together in the gang (the CTA by CTA path)."""
    got = _batch_lanes(pairs, touched, get_addr, nbytes)
    if got is None:
        return None
    warps, starts, B, sel, addrs, tids, counts, lens = got
    groups = [pairs[a:b] for a, b in zip(starts, starts[1:] + [len(warps)])]   # the warps of each CTA, in order
    return groups, addrs, tids, counts, lens, _store_bytes(B, sel, gets, pack)


def st_gang(space, gets, get_addr, nbytes, pack, wh, touched=None):
    """op.gang of a weak st (memory_ops.c_st): gets, the source getters; pack, (lanes, vec) values to bytes;
    touched: the registers the operands read (a global store gathers every warp's at once: lockstep.Batch)."""
    def gang(pairs):
        if space == "global" and touched is not None and len(pairs) > 1:
            stores = _global_lanes(pairs, touched, gets, get_addr, nbytes, pack)
            if stores is not None:
                _global_stores(stores, wh)()
                return
        if space == "shared" and touched is not None and len(pairs) > 1:
            got = _shared_gang_lanes(pairs, touched, get_addr, nbytes)
            if got is not None:   # every CTA planned, then landed (no byte stored twice in a CTA: checked)
                B, sel, offs, tids, ctas = got
                data = _store_bytes(B, sel, gets, pack)
                plans = [_shared_store_plan(m[0][0].cta.shared, m, offs[at], tids[at], counts, data[at], wh)
                         for m, at, counts in ctas]
                for land in plans:
                    land()
                return
        plans = []
        stores = []   # global addresses of every CTA: no byte stored twice in the gang
        for cta, members in by_cta(pairs):
            _, sel, addrs, tids, counts = _lanes(members, get_addr)
            if addrs.size == 0 or nbytes > 1 and (addrs % np.uint64(nbytes)).any():
                raise Fallback
            vals = np.stack([g(W) for W, _ in members for g in gets])   # (warps * vec, 32)
            vals = vals.reshape(len(members), len(gets), 32).transpose(0, 2, 1).reshape(-1, len(gets))
            data = pack(vals if sel is None else vals[sel])
            kind, at = _space(space, addrs)
            if kind == "shared":
                plans.append(_shared_store_plan(cta.shared, members, at, tids, counts, data, wh))
            else:
                stores.append((members, at, tids, counts, data))
        if stores:   # the CTAs' global stores as one (one allocation; CTA by CTA where one has another's records)
            plans.append(_global_stores(_joined(stores), wh))
        for land in plans:
            land()
    gang.masked = True
    return gang


# ------------------------------------------------------------------------------------------------- matrices

def _matrix_rows(members, get_addr, num, generic):
    """ldmatrix / stmatrix row addresses (memory_ops._row_addresses) of a CTA's warps: (warps * 8 num,) offsets."""
    out = []
    for W, m in members:
        if m is not None and not m.all():   # .sync.aligned: the whole warp (common.whole_warp)
            raise Fallback
        out.append(get_addr(W)[:8 * num])
    return matrix_offsets(np.concatenate(out), generic)


def matrix_offsets(a, generic):
    """Shared offsets (int64) of ldmatrix / stmatrix row addresses `a`, or Fallback: a generic address outside the
    shared window, a row not 16-byte aligned (the warps' own runs report them)."""
    if generic:
        if ((a < SHARED_BASE) | (a >= SHARED_END)).any():
            raise Fallback
        a = a - SHARED_BASE
    a = a.astype(np.int64)
    if (a % 16).any():
        raise Fallback
    return a


def fragments(raw, warps, num, trans):
    """ldmatrix's (warps, num, 32) b32 registers from (warps * 8 num, 16) bytes read (PTX 9.7.14.5.15)."""
    mats = from_bytes(raw, np.uint16).reshape(warps, num, 8, 8)
    if trans:
        mats = mats.swapaxes(2, 3)
    lo = mats[:, :, FRAG_ROW, FRAG_COL].astype(np.uint32)
    hi = mats[:, :, FRAG_ROW, FRAG_COL + 1].astype(np.uint32)
    return lo | (hi << np.uint32(16))


def ldmatrix_run(num, trans):
    """The executor of a run of ldmatrix of one form (ops/runs.py) for a whole gang: items [(row offsets (warps,
    8 num), register setters, site)] in program order; a CTA's rows (warp, instruction, row) as one
    _shared_load_plan, every CTA planned before any lands; the registers set in B, the run's copy."""
    rows = 8 * num

    def run(gang, items, B):
        ctas, offs, tids, whs = _run_rows(gang, items, rows)
        nw, K = len(gang), len(items)
        plans = [_shared_load_plan(gang[lo].cta.shared, [(W, None) for W in gang[lo:hi]], offs[lo:hi].reshape(-1),
                                   tids[lo:hi].reshape(-1), [K * rows] * (hi - lo), 16, whs) for lo, hi in ctas]
        raw = np.concatenate([r for r, _ in plans]).reshape(nw, K, rows, 16)
        for _, land in plans:
            land()
        for j, (_, sets, _) in enumerate(items):
            v = fragments(raw[:, j].reshape(-1, 16), nw, num, trans)       # (warps, num, 32)
            for i, s in enumerate(sets):
                s(B, v[:, i], None)
    return run


def _matrix_batch(pairs, touched, get_addr, num, generic):
    """(B, the CTAs' [(first, end)] in the gang, row offsets (warps, 8 num)) of a gang's ldmatrix / stmatrix read
    through one lockstep.Batch, or None where a CTA's warps are not together (the CTA by CTA path reads each warp's
    registers on its own); Fallback where a warp runs on some lanes only."""
    warps = [W for W, _ in pairs]
    starts = cta_starts(warps)
    if starts is None:
        return None
    if any(m is not None and not m.all() for _, m in pairs):   # .sync.aligned: the whole warp
        raise Fallback
    B = Batch(warps, touched)
    nw, rows = len(warps), 8 * num
    offs = matrix_offsets(np.broadcast_to(get_addr(B), (nw, 32))[:, :rows], generic)
    return B, list(zip(starts, starts[1:] + [nw])), offs


def ldmatrix_gang(num, trans, sets, get_addr, generic, wh, touched=None, written=None):
    """op.gang of ldmatrix .m8n8 .b16 (memory_ops.c_ldmatrix); touched / written: the registers the operands name
    / the destinations (every warp's read and set at once: _matrix_batch)."""
    rows = 8 * num
    run = ldmatrix_run(num, trans)

    def gang(pairs):
        got = _matrix_batch(pairs, touched, get_addr, num, generic) if touched is not None and len(pairs) > 1 \
            else None
        if got is not None:   # a run of one (ldmatrix_run: every CTA planned, then recorded, then set in B)
            B, _, offs = got
            run(B.warps, [(offs, sets, wh)], B)
            B.store(written)
            return
        plans = []
        for cta, members in by_cta(pairs):
            offs = _matrix_rows(members, get_addr, num, generic)
            tids = np.concatenate([W.tid[:rows] for W, _ in members])
            raw, land = _shared_load_plan(cta.shared, members, offs, tids, [rows] * len(members), 16, wh)
            plans.append((members, raw, land))
        for members, raw, land in plans:
            land()
            v = fragments(raw, len(members), num, trans)   # (warps, num, 32)
            for k, (W, _) in enumerate(members):
                for i, s in enumerate(sets):
                    s(W, v[k, i], None)
    return gang


def _matrices(v, num, trans):
    """stmatrix's (warps * 8 num, 16) bytes of (warps, num, 32) b32 registers (PTX 9.7.14.5.16)."""
    mt = np.zeros((len(v), num, 8, 8), np.uint16)
    mt[:, :, FRAG_ROW, FRAG_COL] = (v & np.uint32(0xFFFF)).astype(np.uint16)
    mt[:, :, FRAG_ROW, FRAG_COL + 1] = (v >> np.uint32(16)).astype(np.uint16)
    if trans:
        mt = mt.swapaxes(2, 3)
    return np.ascontiguousarray(mt).reshape(-1, 8).view(np.uint8)


def stmatrix_gang(num, trans, gets, get_addr, generic, wh, touched=None):
    """op.gang of stmatrix .m8n8 .b16 (memory_ops.c_stmatrix); touched: the registers the operands name (every
    warp's read at once: _matrix_batch)."""
    rows = 8 * num

    def gang(pairs):
        got = _matrix_batch(pairs, touched, get_addr, num, generic) if touched is not None and len(pairs) > 1 \
            else None
        if got is not None:
            B, ctas, offs = got
            nw = len(pairs)
            tids = thread_ids(B.warps)[:, :rows]
            data = _matrices(np.stack([np.broadcast_to(g(B), (nw, 32)) for g in gets], axis=1).astype(np.uint32),
                             num, trans)
            plans = [_shared_store_plan(pairs[a][0].cta.shared, pairs[a:b], offs[a:b].reshape(-1),
                                        tids[a:b].reshape(-1), [rows] * (b - a), data[a * rows:b * rows], wh)
                     for a, b in ctas]
            for land in plans:
                land()
            return
        plans = []
        for cta, members in by_cta(pairs):
            offs = _matrix_rows(members, get_addr, num, generic)
            v = np.array([[g(W) for g in gets] for W, _ in members], np.uint32)   # (warps, num, 32)
            tids = np.concatenate([W.tid[:rows] for W, _ in members])
            plans.append(_shared_store_plan(cta.shared, members, offs, tids, [rows] * len(members),
                                            _matrices(v, num, trans), wh))
        for land in plans:
            land()
    return gang
