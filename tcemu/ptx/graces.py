"""racecheck for global memory: conflicting accesses by threads of different CTAs that no synchronisation orders.

PTX memory consistency model (PTX ISA 8.x, "Data races", "Causality order"): two conflicting accesses (same
bytes, at least one a write) race unless both are morally strong or happens-before orders them. tcemu may run
CTA 0 to completion before CTA 1 starts; that order proves nothing. Across CTAs happens-before comes only from
release / acquire patterns through global memory, which this detector follows per CTA (lenient: a warp's
synchronisation counts for its whole CTA; scopes are not checked):

- release pattern: st/atom/red .release or .acq_rel, or a fence (fence.sc / .acq_rel / .release, membar)
  followed by a strong store. Each advances the CTA's sync epoch; every fence does (an approximation);
- acquire pattern: ld/atom .acquire or .acq_rel, or a strong load (atom, .relaxed / .volatile ld) followed by a
  fence. It reads the clock the observed strong write left on the location (the writer CTA's epoch at that write
  and what the writer had learnt; an atomic joins the location's clock: release sequences), and the reading CTA
  then knows that writer up to that epoch;
- dependency order, for a write after another CTA's plain read (WAR) only: a strong store orders the storing
  CTA's earlier reads before whatever a CTA that observes it with a strong load writes afterwards. The load's
  value has returned before the flag that depends on it is stored, and a GPU does not perform a store before the
  load it follows in program order has returned (no load buffering): CUB's decoupled look-back publishes tile
  prefixes with st.relaxed and polls with ld.relaxed, no fences, and in-place algorithms (thrust::unique,
  remove_if) rely on it. Writes before the flag stay unordered (RAW, WAW: a store may still be in flight);
- the launch boundary: the shadow is per launch, so nothing before the kernel races with it.

A plain access made by CTA X at epoch e is ordered before CTA Y's access iff Y knows X at an epoch > e (X
released after the access and Y acquired that release). Each global byte keeps its last writer and last plain
reader (CTA, epoch, instruction, warp, lane); a store writing the value a byte already holds is benign (redundant
epilogues, an atomic add of 0 in a spin loop), as in races.py: the earlier writer stays the one readers must be
ordered after.
"""
import numpy as np
from numba import njit

from .errors import HazardError, PtxLimit
from .granular import Granular
from .races import Sites, narrowest_access
from .rows import gather_starts, scatter

NONE = np.int64(0)   # no access: records start as zeros, pages the OS makes only where written
SPANS = {n: np.arange(n) for n in (1, 2, 4, 8, 16, 32)}


class GCta:
    """A CTA's sync epoch, what it knows of other CTAs ({linear id: epoch}) and observations awaiting a fence."""
    __slots__ = ("id", "epoch", "known", "pending", "fenced", "rknown")

    def __init__(self, cid):
        self.id = cid
        self.epoch = 0
        self.known = {}
        self.pending = {}
        self.fenced = False   # a fence since the CTA's last strong store: the next one completes a release pattern
        self.rknown = {}      # what it knows of other CTAs' reads through dependency order (orders WAR only)

    def clock(self) -> dict:
        c = dict(self.known)
        c[self.id] = self.epoch
        return c


def _key(me: GCta) -> int:
    """A record's key: (cta + 1) << 32 | epoch (0 is NONE, a byte no CTA accessed)."""
    return (me.id + 1) << 32 | me.epoch


def _cta_of(key):
    """The CTA ids of records' keys (-1 for NONE)."""
    return (key >> 32) - 1


def _join(into: dict, c: dict):
    for k, v in c.items():
        if into.get(k, -1) < v:
            into[k] = v


class GShadow(Granular):
    """One allocation's shadow: last writer and last plain reader per byte (per 16-byte granule while accesses
    cover whole granules: granular.py)."""

    # w_key / r_key (cta + 1) << 32 | epoch (0: no access in this launch: _key), w_info / r_info (int32) site
    # << 11 | warp << 6 | strong << 5 | lane (_info)
    FIELDS = {"w_key": (NONE, False), "w_info": (0, False, np.int32), "r_key": (NONE, False),
              "r_info": (0, False, np.int32)}

    def __init__(self, size, unit: int = 16):
        # fine records of the units made fine only; a store's unchanged bytes over no writer kept lazily
        super().__init__(size, self.FIELDS, unit=unit, sparse=True, kept=("w_key", "w_info"))
        self.size = size
        self.writers = set()   # CTAs that wrote / read here: two at most (_note_ids)
        self.readers = set()


_NOT_GLOBAL = ("shared", "local", "param", "const", "tex")


def global_unit(prog) -> int:
    """The unit of the kernel's global racecheck records: its narrowest access that may reach global memory (ld /
    st / atom / red / ldu on .global or generic addresses, cp.async's source; TMA boxes are 16-byte units). A
    kernel that stores 4-byte words keeps its records per word, not per byte (granular.py)."""
    got = getattr(prog, "_global_unit", None)
    if got is None:
        got = prog._global_unit = narrowest_access(
            prog, lambda p: not any(x.startswith(_NOT_GLOBAL) for x in p[1:]))
    return got


class GlobalRaces(Sites):
    """A launch's detector state."""

    def __init__(self, launch):
        super().__init__()
        self.grid = launch.grid
        self.ctas = {}
        self.shadows = {}    # id(allocation) -> GShadow
        self.sync = {}       # global byte address of a strong write -> the clock it left
        self.rsync = {}      # the same, for the writer's reads: its dependency-order clock

    def cta(self, cta) -> GCta:
        g = cta.grace
        if g is None:
            cid = cta.linear
            g = cta.grace = self.ctas.get(cid) or self.ctas.setdefault(cid, GCta(cid))
        return g

    def site(self, wh: str) -> int:
        s = super().site(wh)
        if s >= 1 << 20:   # _info's bits
            raise PtxLimit("check_races", f"more than {1 << 20:,} instructions access global memory; run with "
                                          "check_races=False")
        return s

    def ctaid(self, cid: int):
        """The CTA of a linear id (machine.Cta.linear: x fastest)."""
        gx, gy = self.grid[0], self.grid[1]
        return (cid % gx, cid // gx % gy, cid // (gx * gy))


def _ids_keys(warps):
    """The linear ids of the warps' CTAs and their records' keys (_key), without making the state of a CTA that
    has none yet (its epoch is 0: GlobalRaces.cta makes it when it first synchronises or reports)."""
    ctas = [W.cta for W in warps]
    if not any(c.grace for c in ctas):   # (CTAs that never synchronised: their linear ids)
        ids = [c.linear for c in ctas]
        return ids, (np.array(ids, np.int64) + 1) << 32
    ids, keys = [], []
    for W in warps:
        me = W.cta.grace
        if me is None:
            cid = W.cta.linear
            ids.append(cid)
            keys.append((cid + 1) << 32)   # _key at epoch 0
        else:
            ids.append(me.id)
            keys.append(_key(me))
    return ids, np.array(keys, np.int64)


def retire(cta):
    """A finished CTA's state leaves the detector (its records keep its id; what others learnt of it is theirs):
    ~400 bytes a CTA, 400 MB for 2^20 CTAs."""
    g = getattr(cta.launch, "grace", None)
    if g is not None:
        g.ctas.pop(cta.grace.id, None)


def state(W):
    """The launch's detector, or None where the launch runs with check_races=False (or a hang probe)."""
    L = W.cta.launch
    if not L.check_races:
        return None
    g = getattr(L, "grace", None)
    if g is None:
        g = L.grace = GlobalRaces(L)
    return g


def on_access(W, gmem, addrs, nbytes, tids, wh, data=None, strong=False, acquire=False, release=False, rmw=False):
    """Check and record a global access of `nbytes` per lane at `addrs` (uint64; data: the (n, nbytes) bytes a
    store writes). Called before the access is made (a store's old bytes decide whether a WAW is benign)."""
    g = state(W)
    if g is None or addrs.size == 0:
        return
    a, off = gmem._locate(addrs, nbytes, tids, wh)
    if a is None:
        return
    if a == "multi":  # lanes in several allocations: one at a time
        for j in range(addrs.size):
            on_access(W, gmem, addrs[j:j + 1], nbytes, tids[j:j + 1], wh,
                      None if data is None else data[j:j + 1], strong, acquire, release, rmw)
        return
    me = g.cta(W.cta)
    sd = g.shadows.get(id(a))
    if sd is None:
        sd = g.shadows[id(a)] = GShadow(a.data.size, global_unit(W.cta.prog))
    if release and data is not None:
        me.epoch += 1
        me.fenced = True
    spots = _spots(off, nbytes)
    write = data is not None
    released = write and strong and me.fenced   # this store is the release: readers that observe it are
    if strong:                                  # ordered after it and everything before it (published epoch + 1)
        _sync(g, me, addrs, acquire, write, rmw, released)
    w = sd.writers
    others = len(w) > 1 or (w and me.id not in w)
    r = sd.readers
    rothers = write and (len(r) > 1 or (r and me.id not in r))

    def verdicts(P, ix):   # (writer keys, unordered writers, reader keys, unordered readers) on plane P
        wkey = P.w_key[ix] if others else None
        rkey = P.r_key[ix] if rothers else None
        return (wkey, None if wkey is None else _unordered(g, me, wkey),
                rkey, None if rkey is None else _unordered(g, me, rkey, reads=True))
    P, ix = sd.at(spots)
    key, bad, rkey, rbad = verdicts(P, ix)
    if P is sd.coarse and (_some(bad) or _some(rbad)):
        P, ix = sd.at(spots, fine=True)   # a candidate: weighed (and reported) per byte
        key, bad, rkey, rbad = verdicts(P, ix)
    # a candidate is on the per-byte plane, where its bytes' values weigh it; on the coarse plane nothing is bad
    if _some(bad):
        if strong or not write:
            # two strong accesses never race; a plain read of bytes an atomic / strong store wrote is not reported
            # either (lenient: Triton reads its spin counter with a plain load after the loop)
            bad &= (P.w_info[ix] >> 5 & 1) == 0
        if write:
            bad &= a.data[spots] != data   # the value already there: benign
        if bad.any():
            _report(g, a, me, W, "WAW" if write else "RAW", bad, spots, tids, wh, key, P.w_info[ix], strong)
    if write:
        if _some(rbad):
            rbad &= a.data[spots] != data   # a store leaving the bytes as they were: benign
            if rbad.any():
                _report(g, a, me, W, "WAR", rbad, spots, tids, wh, rkey, P.r_info[ix], strong)
        _note_writes(g, me, sd, a, spots, data, tids, wh, strong)
        if strong:   # a new epoch after every strong store: its dependency-order clock covers the reads before it
            me.epoch += 1
        if released:
            me.fenced = False
    elif not strong:
        _note_reads(g, sd, (me.id,), np.int64(_key(me)), off, nbytes, tids, wh)


def _spots(off, nbytes):
    """The (lanes, nbytes) byte offsets of accesses of nbytes at offsets off."""
    return off[:, None] + SPANS[nbytes] if nbytes in SPANS else off[:, None] + np.arange(nbytes)


def _info(g, wh, tids, strong=False):
    """Per lane: site << 11 | warp << 6 | strong << 5 | lane (tids: the CTA's thread indices, warp = tid // 32 < 32;
    2^20 sites fit the records' int32)."""
    return _lane_info(np.int64(g.site(wh)), tids, strong)


def _lane_info(site, tids, strong=False):
    """_info of site ids: one for all lanes, or one a lane."""
    tids = np.asarray(tids, np.int64)
    return site << 11 | np.int64(int(strong) << 5) | (tids // 32) << 6 | tids % 32


def _note_reads(g, sd, ids, key, off, nbytes, tids, wh):
    """Record plain reads of nbytes at offsets off as the bytes' last reads: CTAs `ids` read, key (_key)
    one for all lanes or (lanes, 1), tids the lanes' thread indices in their CTAs; wh the site, or each lane's
    site id (record_reads_ctas)."""
    _note_ids(sd.readers, ids)
    P, ix = sd.at_rows(off, nbytes)
    site = np.array([g.site(wh)], np.int64) if isinstance(wh, str) else wh
    if ix.ndim == 2 and ix.shape[1] == 1:   # a unit a lane (a cp.async's 16 bytes): both fields in one pass
        _record_reads(P.r_key, P.r_info, ix.reshape(-1), np.asarray(key, np.int64).reshape(-1), site << 11,
                      np.asarray(tids, np.int64))
        return
    scatter(P.r_key, ix, key)
    scatter(P.r_info, ix, _lane_info(site, tids)[:, None])


@njit(cache=True)
def _record_reads(r_key, r_info, units, keys, site, tids):
    """_note_reads' two scatters where each lane reads one unit: unit units[j] gets key keys[j] (keys[0] for all
    where one is given) and _info's site << 11 | warp << 6 | lane of tids[j] (site: one for all, or one a lane),
    the later lane's where two read one unit, as the scatters leave it (a gang's cp.async issue: ~50 us of numpy a
    CTA's 3,072 rows)."""
    one = keys.size == 1
    one_site = site.size == 1
    for j in range(units.size):
        t = tids[j]
        r_key[units[j]] = keys[0] if one else keys[j]
        r_info[units[j]] = (site[0] if one_site else site[j]) | (t // 32) << 6 | (t % 32)


def _note_ids(into: set, ids):
    """Add CTA ids to a shadow's writers or readers, keeping two at most: what is asked of them (none, only this
    CTA, another) reads the same from the first two (a set of every CTA of a 2^20 grid would hold 2^20 ints)."""
    for i in ids:
        if len(into) > 1:
            return
        into.add(i)


def _note_writes(g, me, sd, a, spots, data, tids, wh, strong=False, keys=None, off=None):
    """Record stores of `data` by CTA me (before the bytes are stored): bytes the store leaves as they were (a
    same-value store, an atomic add of 0 while spinning) keep their earlier writer, the one readers must be
    ordered after. Several CTAs' stores at once: me their ids, keys (n,) each lane's _key. spots: the (rows, n)
    byte offsets, or None where off holds the rows' starts (spots = off + 0..n-1, made only for rows some of whose
    bytes keep their value)."""
    if keys is None:
        _note_ids(sd.writers, (me.id,))
        mykey = np.int64(_key(me))
    else:
        _note_ids(sd.writers, me)
        mykey = keys[:, None]
    n = data.shape[1]
    keep = (a.data[spots] if spots is not None else gather_starts(a.data, off, n)) != data
    info = _info(g, wh, tids, strong)
    whole, touched = _all_any(keep)   # rows (lanes) that change every byte: their units' records as they stand
    every = whole.all()
    rows = slice(None) if every else whole
    if every or whole.any():
        P, ix = sd.at(spots[rows]) if spots is not None else sd.at_rows(off if every else off[rows], n)
        scatter(P.w_key, ix, mykey if keys is None else mykey[rows])
        scatter(P.w_info, ix, info[rows][:, None])
    part = ~whole & touched
    if not part.any():
        return
    starts = off if spots is None else spots[:, 0]
    if part.all():   # (every row: a store of small values over zeros, say)
        k, pinfo = keep, info
        pkey = np.broadcast_to(mykey, (len(keep), 1))
    else:
        starts, k, pinfo = starts[part], keep[part], info[part]
        pkey = np.broadcast_to(mykey, (len(keep), 1))[part]   # (rows, 1)
    if not _kept_writes(sd, starts, k, pkey[:, 0], pinfo):
        # some bytes of these rows keep their writer: per byte (their units only)
        P, ix = sd.at(_spots(starts, n), fine=True)
        P.w_key[ix] = np.where(k, pkey, P.w_key[ix])
        P.w_info[ix] = np.where(k, pinfo[:, None], P.w_info[ix])


def _all_any(b):
    """(every, some) byte of each row of the (rows, n) bool b: a row of 1, 2, 4 or 8 bytes read as one word."""
    n = b.shape[1]
    if n in (1, 2, 4, 8) and b.flags.c_contiguous:
        w = b.view(f"<u{n}")[:, 0]   # (numpy bool bytes are 0 or 1)
        return w == int.from_bytes(b"\x01" * n, "little"), w != 0
    if n % 8 == 0 and n <= 64 and b.flags.c_contiguous:   # rows of a few words (a .v4 store's 16 bytes: two),
        w = b.view("<u8")                                   # column by column (numpy's axis=1 is slow on pairs)
        every, some = w[:, 0] == 0x0101010101010101, w[:, 0] != 0
        for j in range(1, n // 8):
            every &= w[:, j] == 0x0101010101010101
            some |= w[:, j] != 0
        return every, some
    return b.all(axis=1), b.any(axis=1)


def _kept_writes(sd, starts, changed, keys, info) -> bool:
    """_note_writes' rows (at `starts`, changed.shape[1] bytes each) that leave some bytes as they were, where every
    unit they touch has no writer yet: each unit's record is the row's, its unchanged bytes kept without one
    (Granular.write_kept: no per-byte records until the unit is accessed again). False: nothing recorded (rows not
    whole units, a unit twice, a unit with a writer or per-byte records)."""
    starts = np.asarray(starts, np.int64)
    if sd.keep is None:
        sd.keep = np.zeros(sd.G, np.uint16)   # (no bits: no kept bytes, as None)
    got = _write_kept_rows(starts, changed, keys, np.asarray(info, np.int64), sd.unit, sd.shift,
                           sd.coarse.w_key, sd.coarse.w_info, sd.is_fine if sd.is_fine is not None else _NO_FINE,
                           sd.keep)
    if got < 2:
        return got == 1
    spots = _spots(starts, changed.shape[1])
    g = sd.whole(spots)   # (rows, units a row): units in another order, their distinctness by sorting
    if g is None:
        return False
    per = g.shape[1]
    g = g.reshape(-1)
    s = np.sort(g)
    if (s[1:] == s[:-1]).any():
        return False
    return sd.write_kept(g, changed.reshape(-1, sd.unit),
                         {"w_key": np.repeat(keys, per), "w_info": np.repeat(info, per)})


_NO_FINE = np.zeros(0, np.bool_)


@njit(cache=True)
def _write_kept_rows(starts, changed, keys, info, unit, shift, w_key, w_info, is_fine, keep):
    """_kept_writes in two passes where the rows' units come in increasing order (lanes storing in address order:
    distinct, no sort): 0 where a row is no whole units or a unit is fine, has kept bytes or a writer (nothing
    changed), 1 once recorded (Granular.write_kept's records: a unit that changes some bytes gets its row's key and
    info and the mask of the others), 2 where the units are out of order (the caller sorts). One pass had been a
    sort, the units' gathers and a byte mask (~0.5 ms a gang of 140 one-warp CTAs' stores on the VM); the rows by
    their starts (their byte offsets had cost ~60 us more)."""
    n, k = changed.shape
    if k & (unit - 1):
        return 0
    per = k >> shift
    prev = -1
    for i in range(n):
        for j in range(per):
            s = starts[i] + j * unit
            if s & (unit - 1):
                return 0
            u = s >> shift
            if u <= prev:
                return 2
            prev = u
            if (is_fine.size and is_fine[u]) or keep[u] != 0 or w_key[u] != NONE or w_info[u] != 0:
                return 0
    full = (1 << unit) - 1
    for i in range(n):
        for j in range(per):
            u = (starts[i] + j * unit) >> shift
            m = 0
            for t in range(unit):
                if changed[i, j * unit + t]:
                    m |= 1 << t
            if m:
                w_key[u] = keys[i]
                w_info[u] = info[i]
                keep[u] = full & ~m
    return 1


def reads_race(W, a, off, nbytes) -> bool:
    """Whether plain loads by W's CTA of `nbytes` at offsets `off` of allocation `a` race with another CTA's write
    (on_access reports it); checks only."""
    g = state(W)
    sd = None if g is None else g.shadows.get(id(a))
    if sd is None or off.size == 0:
        return False
    me = g.cta(W.cta)
    w = sd.writers
    if not (len(w) > 1 or (w and me.id not in w)):
        return False
    P, ix = sd.at_rows(off, nbytes)
    bad = _unordered(g, me, P.w_key[ix])
    return bad is not None and bool((bad & ((P.w_info[ix] >> 5 & 1) == 0)).any())


def reads_race_ctas(warps, a, off, nbytes, lens) -> bool:
    """reads_race for the loads of several CTAs at once (warps: one of each CTA; lens: each one's lanes of off, in
    order): False at once where no byte read has a record of another CTA's write, else each CTA's reads_race."""
    g = state(warps[0])
    sd = None if g is None else g.shadows.get(id(a))
    if sd is None or off.size == 0 or not sd.writers:
        return False
    P, ix = sd.at_rows(off, nbytes)
    if not _foreign(warps, lens, P.w_key[ix]):
        return False
    return any(reads_race(W, a, o, nbytes) for W, o in zip(warps, _per_cta(off, lens)))


def _foreign(warps, lens, keys) -> bool:
    """Whether a record (keys: (lanes, ...) _key, or NONE) names another CTA than its lane's (warps: one of each
    CTA; lens: each one's lanes, in order)."""
    some = keys != NONE
    if not some.any():   # bytes no CTA accessed yet (a fresh output)
        return False
    ids = np.repeat(np.array(_ids_keys(warps)[0], np.int64), lens)[:, None]
    return bool((some & (_cta_of(keys) != ids)).any())


def _per_cta(x, lens):
    """x's rows, CTA by CTA (lens: each CTA's lanes, in order)."""
    return np.split(x, np.cumsum(lens)[:-1])


def _gang_shadow(W, a, off):
    """(detector, W's CTA, allocation a's shadow, made if new) for a gang's record, or None: nothing to record."""
    g = state(W)
    if g is None or off.size == 0:
        return None
    sd = g.shadows.get(id(a))
    if sd is None:
        sd = g.shadows[id(a)] = GShadow(a.data.size, global_unit(W.cta.prog))
    return g, g.cta(W.cta), sd


def record_reads_ctas(parts, a, nbytes, wh):
    """on_access's record of plain loads by the warps of one or more CTAs at once, where reads_race_ctas found none:
    parts [(a warp of the CTA, offsets, the CTA's thread indices, warp = tid // 32)], in gang order. Where two CTAs
    read one byte the later one's record stays, as their loads one after the other leave it. wh: the site, or one a
    part (the parts of a run of loads, instruction by instruction: ops/runs.py)."""
    if not isinstance(wh, str):
        wh = [w for p, w in zip(parts, wh) if p[1].size]
    parts = [p for p in parts if p[1].size]
    if not parts:
        return
    sizes = [p[1].size for p in parts]
    part = np.repeat(np.arange(len(parts)), sizes)
    record_reads_rows([W for W, _, _ in parts], a, nbytes, np.concatenate([p[1] for p in parts]),
                      np.concatenate([p[2] for p in parts]), part, wh, part)


def record_reads_rows(warps, a, nbytes, off, tids, part, wh, site_of=None):
    """record_reads_ctas of rows given as arrays: offsets and thread indices, and per row `part`, the index in
    `warps` of a warp of its CTA, and site_of, the index of its site in the list wh (or wh, one site for all)."""
    got = _gang_shadow(warps[0], a, off) if off.size else None
    if got is None:
        return
    g, _, sd = got
    ids, keys = _ids_keys(warps)
    ids = np.array(ids, np.int64)[part]   # each row's CTA; _note_ids keeps the first two that differ
    other = int(np.argmax(ids != ids[0]))
    ids = [int(ids[0])] + ([int(ids[other])] if ids[other] != ids[0] else [])
    sites = wh if isinstance(wh, str) else np.array([g.site(w) for w in wh], np.int64)[site_of]
    _note_reads(g, sd, ids, keys[part][:, None], off, nbytes, tids, sites)


def writes_race(W, a, off, data) -> bool:
    """Whether plain stores by W's CTA of `data` ((n, nbytes) bytes at offsets `off` of allocation `a`, no byte
    written twice) race with another CTA's write or plain read (on_access reports it); a byte that keeps its value
    is benign. Checks only."""
    g = state(W)
    sd = None if g is None else g.shadows.get(id(a))
    if sd is None or off.size == 0:
        return False
    me = g.cta(W.cta)
    P, ix = sd.at_rows(off, data.shape[1])
    for who, keys in ((sd.writers, "w_key"), (sd.readers, "r_key")):
        if len(who) > 1 or (who and me.id not in who):
            bad = _unordered(g, me, getattr(P, keys)[ix], reads=keys == "r_key")
            if bad is not None and bad.any() and (P is sd.coarse or
                                                  (bad & (a.data[_spots(off, data.shape[1])] != data)).any()):
                return True   # (a coarse candidate: the warps' own runs weigh it per byte)
    return False


def writes_race_ctas(warps, a, off, data, lens) -> bool:
    """writes_race for the stores of several CTAs at once (warps: one of each CTA; lens: each one's lanes of off,
    in order): False at once where no byte has a record of another CTA than its storing lane's, else each CTA's
    own writes_race."""
    g = state(warps[0])
    sd = None if g is None else g.shadows.get(id(a))
    if sd is None or off.size == 0:
        return False
    P, ix = sd.at_rows(off, data.shape[1])
    if any(who and _foreign(warps, lens, getattr(P, keys)[ix])
           for who, keys in ((sd.writers, "w_key"), (sd.readers, "r_key"))):
        return any(writes_race(W, a, o, d) for W, o, d in zip(warps, _per_cta(off, lens), _per_cta(data, lens)))
    return False


def record_writes_ctas(warps, a, off, data, tids, lens, wh):
    """record_writes for the stores of several CTAs at once (warps, lens: as writes_race_ctas'; no byte stored
    twice)."""
    got = _gang_shadow(warps[0], a, off)
    if got is None:
        return
    g, _, sd = got
    ids, keys = _ids_keys(warps)
    _note_writes(g, ids, sd, a, None, data, tids, wh, keys=np.repeat(keys, lens), off=off)


def record_writes(W, a, off, data, tids, wh):
    """on_access's record of plain stores by several warps of W's CTA at once, where writes_race found none (tids:
    the CTA's thread indices, warp = tid // 32); call before the bytes are stored."""
    got = _gang_shadow(W, a, off)
    if got is None:
        return
    g, me, sd = got
    _note_writes(g, me, sd, a, None, data, tids, wh, off=off)


def _unordered(g, me, key, reads=False):
    """Bytes whose recorded access (key) is by another CTA this one does not know past its epoch; None: none.
    reads: the accesses are plain reads and this CTA writes (dependency order counts too)."""
    cta = _cta_of(key)
    foreign = (key != NONE) & (cta != me.id)
    if not foreign.any():
        return None
    bad = np.zeros(key.shape, bool)
    for c in np.unique(cta[foreign]).tolist():
        k = me.known.get(c, -1)
        if reads:
            k = max(k, me.rknown.get(c, -1))
        bad |= foreign & (cta == c) & ((key & 0xFFFFFFFF) >= k)
    return bad


def _some(bad) -> bool:
    return bad is not None and bool(bad.any())


def _sync(g, me, addrs, acquire, write, rmw, released):
    """A strong access: what it observes (acquire: known now; else at the CTA's next fence) and what it leaves."""
    for ad in set(addrs.tolist()):
        if not write or rmw:
            seen = g.sync.get(ad)
            if seen:
                _join(me.known if acquire else me.pending, seen)
                me.known.pop(me.id, None)
            seen = g.rsync.get(ad)
            if seen:   # dependency order: at once, fence or not
                _join(me.rknown, seen)
                me.rknown.pop(me.id, None)
        if write:
            c = me.clock()
            r = dict(me.rknown)
            _join(r, c)
            r[me.id] = me.epoch + 1   # the reads so far (this store starts a new epoch after it)
            c[me.id] += released
            if rmw and ad in g.sync:
                _join(c, g.sync[ad])
                _join(r, g.rsync.get(ad, {}))
            g.sync[ad] = c
            g.rsync[ad] = r


def on_fence(W, release=True, acquire=True):
    """fence / membar: the CTA's strong loads observed so far become acquires; later strong stores release."""
    g = state(W)
    if g is None:
        return
    me = g.cta(W.cta)
    if acquire and me.pending:
        _join(me.known, me.pending)
        me.pending = {}
        me.known.pop(me.id, None)
    if release:
        me.epoch += 1
        me.fenced = True


def _thread(g, cid, info, ) -> str:
    info = int(info)
    return f"thread {(info >> 6 & 31) * 32 + (info & 31)} (warp {info >> 6 & 31}, CTA {g.ctaid(cid)})"


def _report(g, a, me, W, kind, bad, spots, tids, wh, key, infos, strong):
    """infos: the other access's records at spots."""
    j, b = np.argwhere(bad)[0]
    spot = int(spots[j, b])
    other = int(_cta_of(key[j, b]))
    oinfo = int(infos[j, b])
    lane = int(tids[j]) % 32
    mine = f"thread {W.index * 32 + lane} (warp {W.index}, CTA {g.ctaid(me.id)})"
    verb = {"RAW": "reads", "WAR": "writes", "WAW": "writes"}[kind]
    prior = {"RAW": "wrote", "WAR": "read", "WAW": "wrote"}[kind]
    ostrong = " (a strong access)" if oinfo >> 5 & 1 else ""
    raise HazardError(wh, f"{kind} race on global address {a.base + spot:#x} ({spot} bytes into '{a.name}'): "
                          f"{mine} {verb} it here{' (a strong access)' if strong else ''}; "
                          f"{_thread(g, other, oinfo)}{ostrong} at {g.names[oinfo >> 11]} {prior} it; no "
                          "synchronisation orders the two CTAs' accesses (the order tcemu ran them in proves "
                          "nothing): use atomics, a release/acquire flag (st.release / ld.acquire, or fence + "
                          "relaxed store / relaxed load + fence) or a grid sync")
