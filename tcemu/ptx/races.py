"""racecheck for shared memory: a happens-before detector over the generic accesses of a launch's warps
(ld/st/atom/red .shared and shared::cluster, ldmatrix/stmatrix, the bytes TMA, cp.async.bulk and cp.async write).

tcemu runs a CTA's warps one at a time, so the order in which it executes two accesses proves nothing: each warp
carries a vector clock (one entry per warp of the cluster, indexed rank * warps + warp) that only synchronisation
advances (PTX ISA 8.x, memory consistency model: a data race is two conflicting accesses not ordered by
happens-before, which comes from release/acquire patterns such as barriers, not from execution order):

- bar.sync / barrier.sync / bar.red: every arriving warp releases its clock into the barrier's generation; the
  warps that wait (not bar.arrive) acquire the join when it completes (PTX 9.7.12.1); barrier.cluster.arrive /
  .wait the same across the cluster (9.7.12.2; .relaxed taken as a release too: lenient);
- mbarrier arrive (and expect_tx, cp.async.mbarrier.arrive, tcgen05.commit) releases into the current phase, a
  TMA's complete_tx releases its issuing warp at issue; a successful test_wait / try_wait acquires what the
  completed phases received (9.7.13.15);
- fences and membar create no edge by themselves.

Each shared byte keeps its last writer (an epoch: warp and clock, with the instruction, lane, the lanes that
executed it and the warp's divergence region) and, per warp that read it, that warp's clock at its last read.
An access conflicts with an earlier one of another warp whose clock entry its own clock does not cover. Within a
warp, instructions of a converged warp are ordered; lanes on different paths of a divergent branch are unordered
until the warp reconverges or meets at bar.warp.sync (a region: one divergence episode), and lanes of one store
writing one byte with different values race (WAW). Atomics and .volatile/.relaxed/.acquire/.release accesses do
not race with each other (morally strong). Reports name both accesses.
"""
from typing import Optional

import numpy as np
from numba import njit

from .errors import HazardError, MemoryFault
from .granular import Granular
from .rows import gather
from .types import TYPES

M32 = np.int64(0xFFFFFFFF)
NEVER = np.int64(1 << 62)  # the clock entry of "no writer": every access is ordered after it


class Sites:
    """Instruction sites of race reports: site(wh) numbers the instruction text `wh` once; names[n] gives it back
    (the shadows keep the number, a few bits of an int64)."""

    def __init__(self):
        self.sites = {}
        self.names = []

    def site(self, wh: str) -> int:
        s = self.sites.get(wh)
        if s is None:
            s = self.sites[wh] = len(self.names)
            self.names.append(wh)
        return s


class ClusterRaces(Sites):
    """A cluster's detector state: which instruction each site id names, barrier and cluster-barrier releases,
    uninitialised reads whose report waits for a racing write."""

    def __init__(self, ctas):
        self.ctas = ctas
        self.nw = max(len(c.warps) for c in ctas)
        self.n = len(ctas) * self.nw
        super().__init__()
        self.bars = {}      # (rank, barrier id) -> {generation: joined clock}
        self.cbar = {}      # barrier.cluster generation -> joined clock
        self.pending = {}   # agent -> (field, rule) of an uninitialised read, reported at its next acquire
        # every warp's clock, a row each (WarpClock.vcx): entry 0 "no writer", entry a + 1 warp a; a warp starts
        # in its own epoch 1. One array, so a gang's barrier edges are one operation over its rows
        self.VCX = np.zeros((self.n, self.n + 1), np.int64)
        self.VCX[:, 0] = NEVER
        self.VCX[np.arange(self.n), np.arange(1, self.n + 1)] = 1

    def thread(self, agent: int, lane: int) -> str:
        c = self.ctas[agent // self.nw]
        w = agent % self.nw
        return f"thread {w * 32 + lane} (warp {w}, CTA {c.ctaid})"


class WarpClock:
    __slots__ = ("id", "vcx", "vc", "region", "ref", "cl")

    def __init__(self, cl: ClusterRaces, agent: int):
        self.cl = cl
        self.id = agent
        self.vcx = cl.VCX[agent]   # entry 0: "no writer"; entry a + 1: warp a
        self.vc = self.vcx[1:]
        self.region = 0     # divergence episodes of this warp so far
        self.ref = None     # the warp's lane_pc array of the current episode (a new array per divergence)

    def now(self, W) -> int:
        if W.lane_pc is not self.ref:
            self.ref = W.lane_pc
            self.region += 1
        return self.region

    def release(self) -> np.ndarray:
        """This warp's clock for a release, then a new epoch for what follows it."""
        out = self.vc.copy()
        self.vc[self.id] += 1
        return out

    def acquire(self, vc: Optional[np.ndarray]):
        if vc is not None:
            np.maximum(self.vc, vc, out=self.vc)


def clock(W) -> Optional[WarpClock]:
    """W's clock (made on first use), or None where the launch runs with check_races=False."""
    st = W.race
    if st is None:
        cta = W.cta
        if not getattr(cta.launch, "check_races", False):
            W.race = False
            return None
        cl = cta.races
        if cl is None:
            cl = ClusterRaces(cta.cluster)
            for c in cta.cluster:
                c.races = cl
        st = W.race = WarpClock(cl, cta.rank * cl.nw + W.index)
    return st or None


class Shadow(Granular):
    """Per shared byte of one CTA's window: last writer and, per reading warp, its last read (per 16-byte granule
    while accesses cover whole granules: granular.py)."""

    FIELDS = {"w_ep": (0, False),       # (agent + 1) << 32 | clock; 0: no tracked writer
              "w_info": (0, False),     # site << 6 | strong << 5 | lane
              "w_mask": (0, False),     # lanes that executed the writing instruction
              "w_region": (0, False),
              "R": (0, True)}           # per reader row: clock << 32 | site << 6 | strong << 5 | lane

    def __init__(self, size: int, local=(), unit: int = 16):
        super().__init__(size, self.FIELDS, len(local), unit)
        self.agents = np.asarray(local, np.int64)
        self.rows_of = {int(a): i for i, a in enumerate(local)}   # agent -> row of R
        self.rmax = np.zeros(len(local), np.int64)   # per row: the reader's latest clock (all its reads are at most)
        self.wmax = None                         # per warp: its latest clock as a writer here

    def row(self, agent: int) -> int:
        r = self.rows_of.get(agent)
        if r is None:
            r = self.rows_of[agent] = len(self.agents)
            self.agents = np.append(self.agents, agent)
            self.rmax = np.append(self.rmax, 0)
            self.add_row()
        return r

    def unordered_writers(self, st) -> bool:
        """Whether some warp wrote here at a clock this warp does not cover (else no byte's writer can race)."""
        if self.wmax is None:
            self.wmax = np.zeros(st.cl.n, np.int64)
        return bool((self.wmax > st.vc).any())

    def forget(self, lo: int, hi: int):
        """Bytes reused by something the detector does not follow (mbarrier.init, tcgen05.alloc's address)."""
        P, ix = self.at(np.arange(lo, hi)[None, :])
        P.w_ep[ix] = 0
        P.R[:, ix] = 0


def shadow(sh, st) -> Shadow:
    s = sh.race
    if s is None:
        nw = st.cl.nw
        s = sh.race = Shadow(sh.hi, range(sh.rank * nw, (sh.rank + 1) * nw), shared_unit(st.cl.ctas[0].prog))
    return s


_ACCESS = ("ld", "st", "atom", "red", "ldu")
_OTHER_SPACES = {"global", "local", "param", "const", "tex"}


def shared_unit(prog) -> int:
    """The unit (a power of two, 16 at most) of the kernel's racecheck records of shared memory: its narrowest
    access that may reach shared memory (ld / st / atom / red on .shared or generic addresses, cp.async;
    ldmatrix / stmatrix rows and TMA boxes are 16-byte units). Only a speed choice: a narrower access than the
    unit is answered per byte (granular.py)."""
    got = getattr(prog, "_shared_unit", None)
    if got is None:
        got = prog._shared_unit = narrowest_access(prog, lambda p: not _OTHER_SPACES.intersection(p))
    return got


def narrowest_access(prog, reaches) -> int:
    """The narrowest access (a power of two, 16 at most) among the kernel's ld / st / atom / red / ldu whose
    qualifiers `reaches(parts)` accepts and its cp.async copies (cp-size); 16 where there are none."""
    got = 16
    for ins in prog.instrs:
        p = ins.parts
        if p[0] == "cp" and len(p) > 1 and p[1] == "async" and "bulk" not in p and len(ins.operands) > 2:
            size = getattr(ins.operands[2], "value", 1)
            got = min(got, size if size in (4, 8, 16) else 1)
        elif p[0] in _ACCESS and reaches(p):
            width = next((TYPES[x].bits >> 3 for x in p if x in TYPES), 0) or 1   # (.pred: 1 bit)
            vec = next((int(x[1:]) for x in p if x in ("v2", "v4", "v8")), 1)
            got = min(got, width * vec)
    return 1 << (got.bit_length() - 1)   # a power of two


LANES = np.arange(32, dtype=np.int64)
FULL = (1 << 32) - 1


def _lanes(tids) -> np.ndarray:
    return LANES if len(tids) == 32 else np.asarray(tids, np.int64) % 32


def _mask(tids) -> int:
    return FULL if len(tids) == 32 else \
        int(np.bitwise_or.reduce(np.int64(1) << (np.asarray(tids, np.int64) % 32))) if len(tids) else 0


def _describe(cl, info, agent) -> str:
    info = int(info)
    return f"{cl.thread(agent, info & 31)} {'' if not info >> 5 & 1 else '(a strong access) '}at " \
           f"{cl.names[info >> 6]}"


def _report(sh, st, kind, spot, wh, lane, other_agent, other_info, what, strong):
    cl = st.cl
    me = cl.thread(st.id, lane)
    verb = {"RAW": "reads", "WAR": "writes", "WAW": "writes"}[kind]
    prior = {"RAW": "wrote", "WAR": "read", "WAW": "wrote"}[kind]
    if other_agent == st.id:
        why = "the two threads are lanes of one warp on different paths of a branch, with no reconvergence or " \
              "bar.warp.sync between them (PTX 9.7.12.3)" if what != "same" else \
              "both lanes write it in this one instruction, with different values"
    else:
        why = "no synchronisation orders the two warps' accesses (a missing bar.sync / __syncthreads or " \
              "mbarrier wait? fences alone do not order warps)"
    raise HazardError(wh, f"{kind} race on shared address {spot:#x} of CTA {sh_cta(sh, cl)}: {me} {verb} it "
                          f"here{' (a strong access)' if strong else ''}; {_describe(cl, other_info, other_agent)} "
                          f"{prior} it; {why}")


def sh_cta(sh, cl):
    return next((c.ctaid for c in cl.ctas if c.shared is sh), "?")


def _verdicts(sd, P, ix, st, W, tids, region, readers):
    """The checks of on_read / on_write on plane P: (writer epochs, bad writers) where a writer may be unordered
    (else None, None), and, with `readers`, (reader rows, their records, bad reads) where a reader row is (else
    None, None, None)."""
    ep = bad = rows = r = badr = None
    writers, diverged = sd.unordered_writers(st), W.lane_pc is not None
    # readers with reads this warp is not ordered after
    late = np.flatnonzero(sd.rmax > st.vc[sd.agents]) if readers and len(sd.agents) else None
    if ix.dtype == np.int64 and ix.ndim and len(ix) == len(tids) and not (  # first, in one pass: is anything
            (writers or diverged or late is not None and late.size) and     # unordered? (Shadow's fields: int64)
            _any_unordered(P.w_ep, P.R, P.w_region, P.w_mask, P.w_info, ix.reshape(len(ix), -1), _lanes(tids),
                           _mask(tids) if diverged else 0, st.vcx, st.vc, sd.agents,
                           _NO_ROWS if late is None else late, writers, diverged, st.id + 1, region)):
        return ep, bad, rows, r, badr   # (what the arrays below would say: nothing to report)
    if writers or diverged:
        ep = P.w_ep[ix]
        bad = (ep & M32) > st.vcx[ep >> 32]
        if diverged:
            bad |= _diverged(P, st, ep, ix, tids, region)
    if late is not None:
        rows = late
        if rows.size:
            r = P.R[rows[:, None, None], ix[None]]
            badr = (r >> 32) > st.vc[sd.agents[rows]][:, None, None]
    return ep, bad, rows, r, badr


_NO_ROWS = np.zeros(0, np.int64)


@njit(cache=True)
def _any_unordered(w_ep, R, w_region, w_mask, w_info, ix, lanes, cur, vcx, vc, agents, rows, writers, diverged, me,
                   region):
    """Whether _verdicts finds a bad writer (writers: some writer is unordered somewhere; diverged: _diverged's
    test, a unit this warp (me: its agent + 1) wrote in this divergence region by a lane on another path: neither
    lane executed the other's instruction; cur: this instruction's lanes, lanes[j]: row j's) or a bad read of
    reader rows `rows` at units ix ((rows, units)): one pass without its arrays (~100 us a TMA box's write in
    CUTLASS; a TMA of a diverged producer warp, after elect.sync, had always taken the arrays: ~120 us more).
    False: nothing to report."""
    n, k = ix.shape
    if writers or diverged:
        for j in range(n):
            for u in range(k):
                i = ix[j, u]
                ep = w_ep[i]
                if writers and (ep & 0xFFFFFFFF) > vcx[ep >> 32]:
                    return True
                if diverged and (ep >> 32) == me and w_region[i] == region and (w_mask[i] >> lanes[j]) & 1 == 0 \
                        and (cur >> (w_info[i] & 31)) & 1 == 0:
                    return True
    for r in rows:
        lim = vc[agents[r]]
        for j in range(n):
            for u in range(k):
                if (R[r, ix[j, u]] >> 32) > lim:
                    return True
    return False


def _checked(sd, spots, st, W, tids, region, readers=False):
    """(plane, index, _verdicts) for an access: a candidate the coarse plane shows is weighed (and reported)
    on the per-byte plane."""
    P, ix = sd.at(spots)
    v = _verdicts(sd, P, ix, st, W, tids, region, readers)
    if P is sd.coarse and any(x is not None and x.any() for x in (v[1], v[4])):
        P, ix = sd.at(spots, fine=True)
        v = _verdicts(sd, P, ix, st, W, tids, region, readers)
    return P, ix, v


def on_read(sh, W, spots, tids, wh, strong=False):
    """Check a read of shared bytes `spots` ((n, k) offsets, one row per lane `tids`) and record it."""
    st = clock(W)
    if st is None or spots.size == 0:
        return
    sd = shadow(sh, st)
    region = st.now(W)
    P, ix, (ep, bad, *_) = _checked(sd, spots, st, W, tids, region)
    if bad is not None:
        _conflict(sh, P, st, "RAW", bad, spots, tids, wh, ep, strong)
    info = np.int64(st.cl.site(wh) << 6 | strong << 5) | _lanes(tids)
    row = sd.row(st.id)  # before indexing R: a new reader grows it
    P.R[row, ix] = (st.vc[st.id] << 32) | info[:, None]
    sd.rmax[row] = st.vc[st.id]


def on_write(sh, W, spots, tids, wh, data=None, strong=False):
    """Check a write of shared bytes `spots` ((n, k), one row per lane) and record this warp as their writer;
    `data`: the (n, k) bytes written (a WAW that stores the value already there is benign; lanes of one store
    writing different values race). W None: a write the detector does not follow."""
    st = clock(W) if W is not None else None
    if st is None:
        if W is None and sh.race is not None:
            P, ix = sh.race.at(spots)
            P.w_ep[ix] = 0
        return
    if spots.size == 0:
        return
    sd = shadow(sh, st)
    region = st.now(W)
    P, ix, (ep, bad, rows, r, badr) = _checked(sd, spots, st, W, tids, region, readers=True)
    benign = None
    if bad is not None and bad.any():
        if data is not None:  # a byte rewritten with the value it holds: benign (Triton's warp-specialised
            same = sh.smem.data[spots] == data  # prologue stores one constant from every thread); the
            benign = bad & same                 # earlier writer stays the one readers must be ordered after
            bad &= ~same
        _conflict(sh, P, st, "WAW", bad, spots, tids, wh, ep, strong)
    if badr is not None and badr.any():
        _war(sh, sd, st, badr, r, spots, tids, wh, strong, rows)
    if data is not None and spots.shape[0] > 1:
        _same_instruction(sh, st, spots, tids, data, wh)
    lanes = _lanes(tids)
    if benign is not None and benign.any():
        keep = ~benign.any(axis=1)
        ix, lanes, tids = ix[keep], lanes[keep], np.asarray(tids)[keep]
    P.w_ep[ix] = np.int64((st.id + 1) << 32) | st.vc[st.id]
    sd.wmax[st.id] = st.vc[st.id]
    P.w_info[ix] = (np.int64(st.cl.site(wh) << 6 | strong << 5) | lanes)[:, None]
    P.w_mask[ix] = _mask(tids)
    P.w_region[ix] = region


def _gang_clocks(warps):
    """The warps' clocks ([] where the launch runs without racecheck)."""
    sts = []
    for W in warps:
        st = clock(W)
        if st is None:
            return []
        sts.append(st)
    return sts


def _diverged_race(P, warps, sts, ix, tids, lanes) -> bool:
    """on_read / on_write's check that only diverged warps (W.lane_pc set) make: same-warp writes of this
    divergence region by lanes on another path (_diverged). Their writers against their clocks are _writers_race's
    (on_read / on_write check every byte for a diverged warp; a writer a warp's wmax covers cannot race)."""
    div = [k for k, W in enumerate(warps) if W.lane_pc is not None]
    if not div:
        return False
    ep = P.w_ep[ix]
    tids = np.asarray(tids)
    for k in div:
        mine = lanes == k   # warp k's rows (lanes: each row's warp)
        if _diverged(P, sts[k], ep[mine], ix[mine], tids[mine], sts[k].now(warps[k])).any():
            return True
    return False


def _writers_race(sd, P, sts, vcx, lanes, ix) -> bool:
    """Whether a record of `ix` (row j of warp lanes[j]) has a writer its warp's clock (vcx: the warps' clocks with
    entry 0) does not cover. Checked for all warps where one has an unordered writer anywhere
    (unordered_writers): a warp that has none passes anyway (every byte's writer clock is at most its wmax)."""
    sd.unordered_writers(sts[0])   # makes wmax
    if not (sd.wmax > vcx[:, 1:]).any():
        return False
    if ix.ndim == 2 and ix.dtype == np.int64:   # (Shadow's fields are int64)
        return _unordered_writer(P.w_ep, ix, vcx, np.asarray(lanes, np.int64))
    ep = gather(P.w_ep, ix)
    return bool(((ep & M32) > vcx[lanes[:, None], ep >> 32]).any())


@njit(cache=True)
def _unordered_writer(w_ep, ix, vcx, lanes):
    """Whether a record ix[j] (row j of warp lanes[j]) has a writer (epoch (agent + 1) << 32 | clock) that warp's
    clock row of vcx does not cover: _writers_race's test in one pass (a gather and four temporaries had cost
    40-90 us a CTA's store of CUTLASS's epilogue)."""
    n, k = ix.shape
    for j in range(n):
        row = vcx[lanes[j]]
        for u in range(k):
            ep = w_ep[ix[j, u]]
            if (ep & 0xFFFFFFFF) > row[ep >> 32]:
                return True
    return False


def _units_of(sd, spots, starts):
    """sd.at(spots), or for rows of 16 bytes at `starts` (spots None) sd.at_rows (no byte offsets made where the
    records are per granule)."""
    return sd.at(spots) if spots is not None else sd.at_rows(starts, 16)


def gang_write_plan(sh, warps, spots, tids, counts, owner=None, starts=None):
    """on_write's checks for plain writes of several warps of one CTA at once, one width: spots (n, k) of every
    lane, counts[i] lanes of warps[i] (in order; or, given `owner`, each row's index into warps, the rows in any
    order), no byte in two rows; spots None: rows of 16 bytes at `starts`. The per-warp (clock, region, lane mask) for
    gang_write_record where none would report, or None (a write conflicts with an earlier access, or a diverged
    warp's lanes on another path wrote a byte: on_write reports it). Checks only; the bytes are disjoint, so one
    warp's record cannot change the verdict on another's. A reader row whose latest read its warp covers passes
    (its reads are at most rmax), so the rows checked for one warp are checked for all."""
    sts = _gang_clocks(warps)
    if not sts:
        return sts
    sd = shadow(sh, sts[0])
    P, ix = _units_of(sd, spots, starts)
    lanes = np.repeat(np.arange(len(sts)), counts) if owner is None else owner
    vcx = sts[0].cl.VCX[[st.id for st in sts]]
    if _writers_race(sd, P, sts, vcx, lanes, ix) or _diverged_race(P, warps, sts, ix, tids, lanes):
        return None
    if len(sd.agents):
        vc = vcx[:, sd.agents + 1]   # (warps, reader rows)
        late = np.flatnonzero((sd.rmax > vc).any(axis=0))
        if late.size and ((P.R[late[:, None, None], ix[None]] >> 32) >
                          vc[:, late].T[:, lanes, None]).any():
            return None
    # each warp's lanes wherever its rows are (counts: in order)
    masks = _lane_masks(np.asarray(lanes, np.int64), np.asarray(tids, np.int64), len(sts)).tolist()
    return [(st, st.now(W), m) for W, st, m in zip(warps, sts, masks)]


@njit(cache=True)
def _lane_masks(owner, tids, n):
    """Per warp (of n), the bits of its lanes among rows whose warp is owner[j] and thread tids[j] (np.bitwise_or.at
    had cost ~75 us a CTA's landing)."""
    out = np.zeros(n, np.int64)
    for j in range(owner.size):
        out[owner[j]] |= np.int64(1) << (tids[j] & 31)
    return out


def gang_write_record(sh, spots, tids, counts, rows, wh, owner=None, starts=None):
    """Record the writes gang_write_plan checked, as the warps' on_write calls would (counts, owner, starts: as
    there). wh: the site, or a list of K sites where each warp's rows are K blocks of 32 lanes, one per
    instruction (a run of stores: ops/runs.py)."""
    if not rows:
        return
    sd = sh.race
    P, ix = _units_of(sd, spots, starts)
    sts = [r[0] for r in rows]
    ep = np.array([((st.id + 1) << 32) | int(st.vc[st.id]) for st in sts], np.int64)
    for st in sts:
        sd.wmax[st.id] = st.vc[st.id]
    warp_of = np.repeat(np.arange(len(rows), dtype=np.int64), counts) if owner is None else \
        np.asarray(owner, np.int64)
    _record_writes(P.w_ep, P.w_info, P.w_mask, P.w_region, np.asarray(ix, np.int64).reshape(len(warp_of), -1),
                   warp_of, ep, np.array([r[2] for r in rows], np.int64), np.array([r[1] for r in rows], np.int64),
                   _sites(sts[0].cl, wh, len(rows), len(warp_of)), np.asarray(tids, np.int64))


def _sites(cl, wh, warps, n):
    """site << 6 of a gang record's n rows: one for every row, or a row's own where wh lists one site an
    instruction (each of the `warps` warps' rows K equal blocks, one per instruction: a run, ops/runs.py)."""
    if isinstance(wh, str):
        return np.array([cl.site(wh) << 6], np.int64)
    per = np.array([cl.site(w) << 6 for w in wh], np.int64)
    return np.broadcast_to(per[None, :, None], (warps, len(wh), n // (warps * len(wh)))).reshape(-1)


@njit(cache=True)
def _record_writes(w_ep, w_info, w_mask, w_region, ix, warp_of, ep, mask, region, site, tids):
    """gang_write_record's four fields in one pass: row j's units ix[j] get warp warp_of[j]'s epoch, lane mask and
    divergence region, and site << 6 | its lane (site: one for all rows, or one a row; in row order: a unit two
    rows write keeps the later's, as a scatter leaves it). Four scatters had cost ~90 us a CTA's store."""
    n, k = ix.shape
    one = site.size == 1
    for j in range(n):
        w = warp_of[j]
        e, m, r, info = ep[w], mask[w], region[w], (site[0] if one else site[j]) | (tids[j] & 31)
        for u in range(k):
            i = ix[j, u]
            w_ep[i] = e
            w_info[i] = info
            w_mask[i] = m
            w_region[i] = r


def gang_read_plan(sh, warps, spots, tids, counts):
    """on_read's checks for the plain reads of several warps of one CTA at once (spots, counts as
    gang_write_plan's). A read's check looks only at writers, so the reads of one step do not change each other's
    verdicts. The warps' clocks for gang_read_record where none would report, or None (a read
    conflicts with an unordered write, or a diverged warp's with its other path's). Checks only."""
    sts = _gang_clocks(warps)
    if not sts:
        return sts
    sd = shadow(sh, sts[0])
    P, ix = sd.at(spots)
    for W, st in zip(warps, sts):
        st.now(W)
    vcx = sts[0].cl.VCX[[st.id for st in sts]]
    lanes = np.repeat(np.arange(len(sts)), counts)
    if _writers_race(sd, P, sts, vcx, lanes, ix) or _diverged_race(P, warps, sts, ix, tids, lanes):
        return None
    return sts


def gang_read_record(sh, spots, tids, counts, rows, wh):
    """Record the reads gang_read_plan checked, as the warps' on_read calls would (where two lanes of one warp
    read one byte, the later lane's record stays, as numpy's assignment leaves it in both). wh: the site, or K
    sites where each warp's rows are K equal blocks, one per instruction (a run of loads: the later one's stays)."""
    if not rows:
        return
    sd = sh.race
    idx = np.array([sd.row(st.id) for st in rows], np.int64)   # before indexing R: a new reader grows it
    P, ix = sd.at(spots)
    vc = np.array([st.vc[st.id] for st in rows], np.int64)
    info = _sites(rows[0].cl, wh, len(rows), len(tids)) | np.asarray(tids, np.int64) % 32
    P.R[np.repeat(idx, counts)[:, None], ix] = ((np.repeat(vc, counts) << 32) | info)[:, None]
    sd.rmax[idx] = vc


def _diverged(P, st, ep, ix, tids, region):
    """Same-warp writes of this divergence region by lanes on another path: neither lane executed the other's
    instruction (a lane that executed it, or whose lanes now execute with the writer's, is ordered after it)."""
    mine = ((ep >> 32) == st.id + 1) & (P.w_region[ix] == region)
    if not mine.any():
        return mine
    lanes = (np.asarray(tids, np.int64) % 32)[:, None]
    wlane = P.w_info[ix] & 31
    cur = _mask(tids)
    return mine & ((P.w_mask[ix] >> lanes) & 1 == 0) & ((cur >> wlane) & 1 == 0)


def _strong(info):
    return (info >> 5) & 1 == 1


def _conflict(sh, P, st, kind, bad, spots, tids, wh, ep, strong):
    """Report the first byte `bad` marks (P: the fine plane wherever bad holds any)."""
    if not bad.any():
        return
    if strong:
        bad = bad & ~_strong(P.w_info[spots])
        if not bad.any():
            return
    j, b = np.argwhere(bad)[0]
    spot = int(spots[j, b])
    _report(sh, st, kind, spot, wh, int(tids[j]) % 32, int(ep[j, b] >> 32) - 1, P.w_info[spot],
            "other", strong)


def _war(sh, sd, st, badr, r, spots, tids, wh, strong, rows):
    if strong:
        badr = badr & ~_strong(r)
        if not badr.any():
            return
    k, j, b = np.argwhere(badr)[0]
    _report(sh, st, "WAR", int(spots[j, b]), wh, int(tids[j]) % 32, int(sd.agents[rows[k]]), int(r[k, j, b]) & M32,
            "other", strong)


def _same_instruction(sh, st, spots, tids, data, wh):
    """Lanes of one store writing one byte with different values (PTX 8: two writes, neither ordered)."""
    starts = spots[:, 0]
    if (np.diff(starts) >= spots.shape[1]).all():   # lanes in increasing address order, no overlap: common
        return
    if not (np.diff(np.sort(starts)) < spots.shape[1]).any():
        return
    flat = spots.reshape(-1)
    order = np.argsort(flat, kind="stable")
    f, d = flat[order], np.asarray(data).reshape(-1)[order]
    clash = (f[1:] == f[:-1]) & (d[1:] != d[:-1])
    if clash.any():
        i = int(np.flatnonzero(clash)[0])
        a, b = int(order[i]) // spots.shape[1], int(order[i + 1]) // spots.shape[1]
        info = np.int64(st.cl.site(wh) << 6) | int(tids[a]) % 32
        _report(sh, st, "WAW", int(f[i]), wh, int(tids[b]) % 32, st.id, info, "same", False)


# ------------------------------------------------------------------------------------------------ edges

def bar_arrive(W, bid: int, gen: int):
    """A warp arrives at CTA barrier bid in generation gen: its clock joins the generation's release."""
    st = clock(W)
    if st is None:
        return
    _join_release(st.cl, (W.cta.rank, bid), gen, st.release())


def _join_release(cl, key, gen: int, rel):
    """A barrier generation's release: the join of its arrivals' clocks (the last 4 generations kept)."""
    gens = cl.bars.setdefault(key, {})
    acc = gens.get(gen)
    if acc is None:
        gens[gen] = rel
        for g in [g for g in gens if g < gen - 4]:
            del gens[g]
    else:
        np.maximum(acc, rel, out=acc)


def bar_arrive_many(warps, bid: int, gen: int):
    """bar_arrive of several warps of one CTA, in order, as one operation over their clocks' rows."""
    sts = [clock(W) for W in warps]
    if not sts or sts[0] is None:
        return
    cl = sts[0].cl
    rel = _release_join(cl.VCX, np.array([st.id for st in sts], np.int64))
    _join_release(cl, (warps[0].cta.rank, bid), gen, rel)


def bar_acquire_many(warps, bid: int, gen: int):
    """bar_acquire of several warps of one CTA that waited for one generation, as one operation."""
    sts = [clock(W) for W in warps]
    if not sts or sts[0] is None:
        return
    cl = sts[0].cl
    acc = cl.bars.get((warps[0].cta.rank, bid), {}).get(gen)
    if acc is not None:
        ids = np.array([st.id for st in sts])
        cl.VCX[ids, 1:] = np.maximum(cl.VCX[ids, 1:], acc)
    for st in sts:
        st.region += 1
    if cl.pending:
        for W, st in zip(warps, sts):
            flush(W, st)


def bar_acquire(W, bid: int, gen: int):
    st = clock(W)
    if st is None:
        return
    st.acquire(st.cl.bars.get((W.cta.rank, bid), {}).get(gen))
    st.region += 1
    flush(W, st)


def cluster_arrive(W, gen: int):
    st = clock(W)
    if st is None:
        return
    acc = st.cl.cbar.get(gen)
    rel = st.release()
    if acc is None:
        st.cl.cbar[gen] = rel
        st.cl.cbar.pop(gen - 4, None)
    else:
        np.maximum(acc, rel, out=acc)


def cluster_acquire(W, gen: int):
    st = clock(W)
    if st is None:
        return
    st.acquire(st.cl.cbar.get(gen))
    flush(W, st)


def warp_sync(W):
    """bar.warp.sync: the member lanes meet; what each did before is ordered before what the others do after."""
    st = clock(W)
    if st is not None:
        st.region += 1


def mbar_release(W, mb, times: int = 1):
    """An arrive (or a TMA's complete_tx) on mbarrier mb: the warp's clock joins the current phase's release.
    times: that many arrivals by the warp in a row (its clock released each time; the last release is the
    largest)."""
    st = clock(W) if W is not None else None
    if st is None:
        return
    if times > 1:
        st.vc[st.id] += times - 1
    rel = st.release()
    if mb.race_acc is None:
        mb.race_acc = rel
    else:
        np.maximum(mb.race_acc, rel, out=mb.race_acc)


def mbar_complete(mb):
    """The phase completed: what it received becomes visible to every waiter that observes it (or a later one)."""
    if mb.race_acc is not None:
        if mb.race_done is None:
            mb.race_done = mb.race_acc
        else:
            np.maximum(mb.race_done, mb.race_acc, out=mb.race_done)
        mb.race_acc = None


def mbar_acquire(W, mb):
    acquire(W, mb.race_done)


def acquire(W, vc: Optional[np.ndarray]) -> None:
    """W has observed a release whose clock is vc (None: nothing released): what came before it is ordered before
    what W does next; a deferred unwritten read of W is reported now."""
    st = clock(W)
    if st is None:
        return
    st.acquire(vc)
    flush(W, st)


def collective_release(warps) -> Optional[np.ndarray]:
    """A warpgroup's wgmma.mma_async: it runs once all four warps have issued it (PTX 9.7.15.5: .aligned, executed
    by every warp of the warpgroup), so its completion follows each warp's issue. The join of the warps' clocks
    at issue, acquired (acquire) at each warp's wgmma.wait_group that sees it complete (None without racecheck):
    whatever every warp did before issuing it is ordered before what follows the wait (CUTLASS's register-A
    mainloops read A with ldmatrix in every warp, and one warp releases the stage after the wait)."""
    sts = _gang_clocks(warps)
    if not sts:
        return None
    # (a warpgroup's warps are one CTA's: one cluster's clock rows)
    return _release_join(sts[0].cl.VCX, np.array([st.id for st in sts], np.int64))


@njit(cache=True)
def _release_join(VCX, ids):
    """The join (elementwise max) of the clock rows ids of VCX, each row's own entry then advanced to a new epoch
    (ids distinct): several warps' releases as one (WarpClock.release, one row each). One pass: a fancy-indexed
    max and += had cost ~10 us a warpgroup's wgmma."""
    acc = VCX[ids[0], 1:].copy()
    for i in ids[1:]:
        for j in range(acc.size):
            if VCX[i, j + 1] > acc[j]:
                acc[j] = VCX[i, j + 1]
    for i in ids:
        VCX[i, i + 1] += 1
    return acc


# ------------------------------------------------------------------------------------------------ unwritten reads

def defer_unwritten(W, field: str, rule: str) -> bool:
    """A read of bytes nothing wrote yet: with the detector on, the report waits (the read is recorded) so that a
    write another warp makes later, unordered with it, is reported as the race it is; True if deferred."""
    st = clock(W)
    if st is None:
        return False
    st.cl.pending.setdefault(st.id, (field, rule))
    return True


def flush(W, st=None):
    """At the reading warp's next acquire (the writes it could race with have been made): the deferred read."""
    st = st or clock(W)
    if st is None or not st.cl.pending:
        return
    p = st.cl.pending.pop(st.id, None)
    if p is not None:
        raise MemoryFault(*p)


def flush_all(W):
    """The cluster's last warp exits: every deferred unwritten read that no race explained."""
    if W.cta.races is None:   # the cluster's racecheck state was never made: nothing deferred
        return
    st = clock(W)
    if st is None or not st.cl.pending:
        return
    if any(not w.done for c in st.cl.ctas for w in c.warps):
        return
    agent, (field, rule) = next(iter(st.cl.pending.items()))
    st.cl.pending.clear()
    c = st.cl.ctas[agent // st.cl.nw]
    raise MemoryFault(field, f"{rule}; read by warp {agent % st.cl.nw} of CTA {c.ctaid} (reported when the "
                             "cluster finished: no write raced with it)")
