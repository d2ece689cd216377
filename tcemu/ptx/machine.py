"""Execution state of a launch: warps (32 numpy lanes each, own program counter and active mask), CTAs, the
scheduler.

A warp runs converged with one PC until a branch splits its lanes; then every lane keeps its own PC and the
warp steps the lanes at the lowest PC first, so the lanes of an if/else or a loop meet again where their paths
join (the reconvergence of structured code). Lanes at a warp-synchronous instruction (.sync, .aligned, CTA
barriers) wait there while other lanes can still run, so the instruction sees every lane that will reach it
even where the compiler placed a branch's block after the join (as nvcc does with cold blocks). A CTA runs
its warps one at a time, each until it blocks (barrier, warpgroup collective, a barrier wait that would
fail, ...) or exits; a round in which no warp makes progress is a deadlock, reported with every warp's PC,
source line and what it waits on.

Instruction semantics return a control value: None (next instruction), an int (jump), BLOCK (stay on this
instruction and run it again later: blocking instructions are written to be re-executed), or DIVERGED.
A launch's `trace` (Module.launch(trace=...)), when set, is called after every instruction a warp executes as
trace(warp, pc, mask, control), mask as the instruction saw it (None: every live lane).
"""
import itertools
import math
import time
from typing import List, Optional

import numpy as np

from .errors import BudgetExceeded, Deadlock, KernelFault, PtxError
from . import graces, lockstep
from .hang import PROBE_STEPS, WriteLog, describe_spin, probe, probe_cta, spin_line
from ..layout.smem import SharedMemory
from .memory import SMEM_RESERVED, LocalMemory, SharedWindow
from .program import CLASS_ATTR, Program, describe
from .signals import BLOCK, DIVERGED, EXITED

QUANTUM = 1 << 14
CHUNK = 1 << 10        # a warp that runs this many instructions without blocking may be probed (run_ctas)
PROBE_FIRST = 256      # steps of a warp's first probe; each one that runs out doubles it, up to hang.PROBE_STEPS
PROBE_FIRST_CTA = 1024  # the same for a CTA's warps probed together (a cycle passes through every warp)
PROBE_SETUP = 256      # what setting up a probe costs, in instructions (charged even when it stops at once)
PROBE_SHARE = 256      # probes stay under 1/256 of a warp's (a CTA's) instructions, plus the first
GANG_TURNS = 4         # gangs a warp's turn may run (its gang's warps go on with it after a branch splits lanes)
LANES = np.arange(32, dtype=np.int64)
# per warp index: its threads' linear indices (read-only, shared by every CTA's warp w); per thread count: a warp's
# first live mask (copied: exits change it). Grids of many small CTAs make a Warp per CTA.
_TIDS = []
_LIVE = [np.arange(32) < n for n in range(33)]
_NO_CARRY = np.zeros(32, bool)   # a warp's first carry flags (read-only: add.cc and the rest write a new array)
_NO_CARRY.setflags(write=False)


def _tids(index: int) -> np.ndarray:
    while len(_TIDS) <= index:
        t = len(_TIDS) * 32 + LANES
        t.setflags(write=False)
        _TIDS.append(t)
    return _TIDS[index]


_DTYPES = {1: np.bool_, 8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_REG_ATTRS = frozenset(CLASS_ATTR.values())


# a warp's containers for its asynchronous units and blocking instructions, made on first use (Warp.__getattr__):
# a grid of one-warp CTAs that never issue them makes none (ops/*.py own their meaning)
_LAZY = {
    "_special": dict,           # special registers read so far
    "wgmma_pending": dict,      # frozenset of Slots -> in-flight wgmmas writing them (registers)
    "wgmma_open": list,         # wgmma issued since the last commit_group
    "wgmma_groups": list,       # committed groups: (number, slots, smem ranges)
    "wgmma_dirty": set,         # wgmma registers written by other instructions since wgmma.fence
    "sync": dict,               # blocking instructions' per-warp records
    "frames": list,             # calls in progress: (return pc, calling lanes, callee, return copies)
    "mbar_seen": dict,          # (CTA rank, mbarrier offset) -> highest phase this warp knows completed
    "bulk_open": list,          # bulk stores since the last cp.async.bulk.commit_group
    "bulk_groups": list,
}


class Warp:
    # slots: a grid of many small CTAs makes a Warp per CTA, and an instance dict of some 35 names grew by resizes
    # (~3 us a warp on the VM, 2026-11-28)
    __slots__ = ("cta", "index", "prog", "_files", "_column", "live", "full", "pc", "lane_pc", "done", "wait",
                 "parked_test", "give_up_test", "tid", "local", "executed", "cc", "race", "regcol", "calls",
                 "deferred", "cp_async_open", "cp_async_groups", "__weakref__") + tuple(_LAZY) + \
        tuple(CLASS_ATTR.values())

    def __init__(self, cta: "Cta", index: int, nthreads: int, prog: Program, files=None, column: int = 0,
                 serial: int = 0):
        self.cta = cta
        self.index = index
        self.prog = prog
        # views of column `column` of a slab's register files (lockstep.Batch slices them; made on first use:
        # __getattr__, ~0.5 us each, and a gang reads the slab itself), or files of its own
        self._files, self._column = files, column
        if files is None:
            for cls, attr in CLASS_ATTR.items():
                setattr(self, attr, np.zeros((max(prog.nregs[cls], 1), 32), _DTYPES[cls]))
        self.live = _LIVE[nthreads].copy()
        self.full = nthreads == 32
        self.pc = 0
        self.lane_pc: Optional[np.ndarray] = None
        self.done = nthreads == 0
        self.wait: Optional[str] = None     # what a blocked warp waits on (deadlock reports)
        self.parked_test = False            # blocked on a failing mbarrier test_wait / try_wait
        self.give_up_test = False           # that wait returns False when next run (run_ctas, a stall)
        self.tid = _tids(index)             # linear thread index in the CTA (read-only)
        self.local = LocalMemory(prog.local_size) if prog.local_size else None
        self.executed = 0
        self.cc = _NO_CARRY                 # the carry flag CC.CF of each thread (add.cc / addc ...)
        self.race = None                    # racecheck's vector clock (races.py), made on first use
        # where its registers lie: serial << 32 | column of its slab (RegisterSlabs; lockstep._runs)
        self.regcol = None if files is None else serial << 32 | column
        self.calls = None                   # per-lane call stacks (ops/frames.py), made on first use
        self.deferred = {}                  # D slot set -> chains.Chain: wgmma results not yet computed
        self.cp_async_open = []             # copies not yet committed
        self.cp_async_groups = []           # committed groups, oldest first

    def __getattr__(self, name):   # (unset slots) a register file's view, or a container, on first use
        make = _LAZY.get(name)
        if make is not None:
            v = make()
        elif name in _REG_ATTRS and self._files is not None:
            v = self._files[name][:, self._column]
        else:
            raise AttributeError(name)
        setattr(self, name, v)
        return v

    @property
    def warpgroup(self) -> int:
        return self.index // 4

    def special(self, name: str) -> np.ndarray:
        v = self._special.get(name)
        if v is None:
            v = self.cta.special(name, self)
            if not name.startswith(("%clock", "%globaltimer")):
                self._special[name] = v
        return v

    def lanes(self, m) -> np.ndarray:
        """Thread indices (in the CTA) of mask m's lanes."""
        return self.tid[self.live] if m is None and not self.full else (self.tid if m is None else self.tid[m])

    def active(self, m) -> np.ndarray:
        return self.live if m is None else m

    def where(self) -> str:
        c = self.cta
        return f"CTA {c.ctaid}, warp {self.index}"

    def named(self, e: KernelFault) -> KernelFault:
        """The fault e, its field naming this warp (what a report of an instruction it ran says)."""
        return type(e)(f"{e.field}, {self.where()}", e.rule)

    def run(self, budget: int) -> int:
        """Execute until this warp blocks, exits or has run `budget` instructions; the number executed."""
        code = self.prog.code
        trace = getattr(self.cta.launch, "trace", None)
        force = lockstep.FORCE and trace is None and getattr(self.cta.launch, "lockstep", True)
        ends = self.prog.lockstep_end if force else None
        n = 0
        try:
            while n < budget and not self.done:
                if self.lane_pc is None:
                    pc = self.pc
                    if force and ends[pc] > pc:   # TCEMU_LOCKSTEP=force: a batch of this one warp
                        n += lockstep.stretch([self], pc, None if self.full else self.live)
                        if self.pc < ends[pc]:   # the batch stopped at an instruction that raised: run it alone
                            force = False
                        continue
                    m = None if self.full else self.live
                    r = code[pc](self, m)
                    if trace is not None:
                        trace(self, pc, m, r)
                    if r is None:
                        self.pc = pc + 1
                    elif r.__class__ is int:
                        self.pc = r
                    elif r is BLOCK:
                        break
                    # DIVERGED / EXITED: the op updated lane_pc / live
                else:
                    pcs = self.lane_pc
                    pc, m = lockstep.step_of(self)
                    if force and ends[pc] > pc:   # TCEMU_LOCKSTEP=force: a batch of this warp's lanes
                        k = lockstep.stretch([self], pc, m)
                        n += k
                        if k == 0:
                            force = False
                        continue
                    if trace is None and not force:   # the lanes run on together while they are the lowest
                        k, blocked = lockstep.run_lowest(self, pcs, pc, m, budget - n)
                        n += k
                        if blocked:
                            break
                        continue
                    r = code[pc](self, m)
                    if trace is not None:
                        trace(self, pc, m, r)
                    if r is BLOCK:
                        break
                    lockstep.lanes_moved(self, pcs, m, pc, r)
                self.wait = None
                n += 1
        except KernelFault as e:
            raise self.named(e) from None
        except PtxError:
            raise
        self.executed += n
        return n

    def current_pc(self) -> int:
        if self.lane_pc is None:
            return self.pc
        return int(self.lane_pc[self.live].min())

    def diverge(self, m, taken: np.ndarray, target: int, pc: int):
        """Split the executing lanes m: `taken` go to target, the rest to pc + 1."""
        if self.lane_pc is None:
            self.lane_pc = np.full(32, pc, np.int64)
        act = self.active(m)
        self.lane_pc[act & taken] = target
        self.lane_pc[act & ~taken] = pc + 1
        return DIVERGED

    def exit_lanes(self, m):
        self.full = False
        if m is None:   # every lane
            self.live[:] = False
            self.done = True
        else:
            self.live &= ~m
            if not self.live.any():
                self.done = True
        return EXITED


class Cta:
    """One CTA: its warps, shared memory, barriers and asynchronous units."""
    __slots__ = ("launch", "ctaid", "prog", "shared", "nthreads", "regbase", "warps", "barriers",
                 "mbarriers", "cluster", "rank", "cluster_barrier", "collectives", "progress", "clock", "tmem", "races",
                 "grace", "linear", "__weakref__", "__dict__")

    def __init__(self, launch, ctaid, prog: Program, shared, rank: int = 0):
        self.launch = launch
        self.ctaid = ctaid
        g = launch.grid
        self.linear = ctaid[0] + g[0] * (ctaid[1] + g[1] * ctaid[2])   # x fastest (graces.GlobalRaces.ctaid inverts it)
        self.prog = prog
        self.shared = shared
        nthreads = launch.nthreads
        self.nthreads = nthreads
        nw = (nthreads + 31) // 32
        # one register file per class: (registers, warps, 32), warp w's registers are [:, cols[w]] of regbase's,
        # which the CTAs admitted after it share (RegisterSlabs)
        slabs = getattr(launch, "slabs", None) or RegisterSlabs(1)   # without a wave: a slab of its own
        self.regbase, cols, serial = slabs.take(prog, nw)
        self.warps: List[Warp] = [Warp(self, w, min(32, nthreads - 32 * w), prog, self.regbase, cols[w], serial)
                                  for w in range(nw)]
        self.barriers = {}      # named barrier id -> [arrived threads, generation, count, reductions, warps]
        self.mbarriers = {}     # shared offset -> MBarrier (ops/mbarrier.py)
        self.cluster = [self]   # the CTAs of this CTA's cluster, by rank (Module.launch sets these two)
        self.rank = rank
        self.cluster_barrier: Optional[ClusterBarrier] = None
        self.collectives = {}   # (warpgroup, pc) -> [arrived warps, generation, expected]
        self.progress = False
        self.clock = 0
        self.tmem = None        # tensor memory and tcgen05 state, made on first use (ops/tcgen05/state.py)
        self.races = None       # the cluster's racecheck state (races.py), made on first use
        self.grace = None       # global racecheck's per-CTA state (graces.py), made on first use

    def release(self):
        """A finished CTA's shadows, registers and deferred chains go at once, and the reference cycles through it
        (its warps' `cta`, its cluster's lists, the cluster's racecheck state) are cut, so that reference counting
        frees it: left to the cyclic garbage collector, a grid of 16,384 one-warp CTAs spent a third of its time
        in collections (0.85 of 2.5 s on the VM)."""
        self.shared.release()
        if self.grace is not None:
            graces.retire(self)
        for w in self.warps:
            if w.deferred:
                w.deferred = {}
            w._files = w.regcol = None   # (register views a warp made hold a slab only as long as the warp)
            w.cta = w.race = None   # (a racecheck clock names its cluster's state, which lists the CTAs)
        self.regbase = None
        self.cluster = self.cluster_barrier = self.races = self.grace = None

    def special(self, name: str, w: Warp) -> np.ndarray:
        L = self.launch
        t = w.tid
        bx, by, bz = L.block
        base = name.split(".")[0]
        axis = "xyz".index(name[-1]) if name[-2] == "." else None
        if base == "%tid":
            v = (t % bx, (t // bx) % by, t // (bx * by))[axis]
        elif base == "%ntid":
            v = np.full(32, L.block[axis])
        elif base == "%ctaid":
            v = np.full(32, self.ctaid[axis])
        elif base == "%nctaid":
            v = np.full(32, L.grid[axis])
        elif base == "%laneid":
            v = LANES.copy()
        elif base == "%warpid":
            v = np.full(32, w.index)
        elif base == "%nwarpid":
            v = np.full(32, len(self.warps))
        elif base in ("%smid", "%gridid"):
            v = np.zeros(32)
        elif base == "%nsmid":
            v = np.full(32, 132)
        elif base.startswith("%lanemask_"):
            rel = base[len("%lanemask_"):]
            one = np.uint64(1) << LANES.astype(np.uint64)
            v = {"eq": one, "lt": one - np.uint64(1), "le": (one << np.uint64(1)) - np.uint64(1)}.get(rel)
            if v is None:
                le = (one << np.uint64(1)) - np.uint64(1)
                lt = one - np.uint64(1)
                v = (~lt if rel == "ge" else ~le) & np.uint64(0xFFFFFFFF)
            v = v & np.uint64(0xFFFFFFFF)
        elif base in ("%clock", "%clock64", "%globaltimer", "%globaltimer_lo", "%clock_hi", "%globaltimer_hi"):
            self.clock += 1
            v = np.full(32, self.launch.clock() + self.clock)
        elif base == "%dynamic_smem_size":
            v = np.full(32, L.shared_bytes)
        elif base in ("%total_smem_size", "%aggr_smem_size"):
            v = np.full(32, self.shared.hi - self.shared.lo + (self.shared.lo if base == "%aggr_smem_size" else 0))
        elif base == "%cluster_ctaid":
            v = np.full(32, (self.ctaid[axis] % L.cluster[axis]))
        elif base == "%cluster_nctaid":
            v = np.full(32, L.cluster[axis])
        elif base == "%cluster_ctarank":
            c = L.cluster
            x, y, z = (self.ctaid[i] % c[i] for i in range(3))
            v = np.full(32, x + c[0] * (y + c[1] * z))
        elif base == "%cluster_nctarank":
            v = np.full(32, int(np.prod(L.cluster)))
        elif base == "%clusterid":
            v = np.full(32, self.ctaid[axis] // L.cluster[axis])
        elif base == "%nclusterid":
            v = np.full(32, L.grid[axis] // L.cluster[axis])
        elif base == "%is_explicit_cluster":
            v = np.full(32, L.explicit_cluster)
        elif base.startswith("%envreg"):   # a cooperative launch's grid workspace address (Module.launch)
            v = np.full(32, getattr(L, "envreg", {}).get(base[len("%envreg"):], 0))
        else:
            raise PtxError(name, "special register not modelled")
        return np.asarray(v).astype(np.uint64)

    def run(self, max_instructions: int):
        return run_ctas([self], max_instructions)

    def report(self) -> str:
        lines = []
        for w in self.warps:
            if w.done:
                lines.append(f"  warp {w.index}: exited")
                continue
            pc = w.current_pc()
            ins = self.prog.instrs[pc] if pc < len(self.prog.instrs) else None
            what = describe(ins) if ins is not None else f"pc {pc}"
            lines.append(f"  warp {w.index}: at {what}" + (f"; waits on {w.wait}" if w.wait else ""))
        for bid, (count, gen, *_) in sorted(self.barriers.items()):
            if count:
                lines.append(f"  barrier {bid}: {count} threads arrived (generation {gen})")
        extra = getattr(self, "barrier_report", None)
        if extra:
            lines.extend(extra())
        return "\n".join(lines)

    def deadlock(self):
        raise Deadlock(f"CTA {self.ctaid}", "no warp can make progress (hang):\n" + self.report())


class RegisterSlabs:
    """Register files for `ctas` CTAs at a time in one array per class: CTAs admitted one after another hold
    neighbouring columns, so a gang of whole CTAs (a wave in lock-step) reads its registers as one slice, without
    a copy (lockstep.Batch). A slab goes once every CTA in it has finished (Cta.release).

    by_warp: a warp-specialised kernel's warps lie warp index by warp index (warp w of the slab's CTA s in column
    w * ctas + s), so that the warps of one role in a wave (CUTLASS's consumer warpgroups, its producer warp after
    elect.sync) are one slice too, taken in column order (lockstep.stretch); its whole CTAs are then one slice in
    that order."""

    def __init__(self, ctas: int, by_warp: bool = False):
        self.ctas = max(1, ctas)
        self.by_warp = by_warp
        self.base, self.used = None, 0

    def take(self, prog, nw: int):
        """(register files, each warp's column, the slab's serial number) for a CTA of nw warps."""
        if self.base is None or self.used + nw > self.ctas * nw:
            self.base = {attr: np.zeros((max(prog.nregs[cls], 1), self.ctas * nw, 32), _DTYPES[cls])
                         for cls, attr in CLASS_ATTR.items()}
            self.used = 0
            self.serial = next(_SLAB_SERIAL)
        at, self.used = self.used, self.used + nw
        if not self.by_warp:
            return self.base, range(at, at + nw), self.serial
        return self.base, range(at // nw, self.ctas * nw, self.ctas), self.serial


def warp_specialised(prog) -> bool:
    """Whether the kernel hands its warpgroups registers of their own (setmaxnreg: PTX 9.7.19.5), the sign of
    warpgroups with roles (a producer, consumers) that run apart."""
    got = getattr(prog, "_warp_specialised", None)
    if got is None:
        got = prog._warp_specialised = any(i.parts[0] == "setmaxnreg" for i in prog.instrs)
    return got


_SLAB_SERIAL = itertools.count(1)


class ClusterBarrier:
    """barrier.cluster: every thread of every CTA in the cluster arrives, then waits (PTX 9.7.13.4)."""

    def __init__(self, ctas):
        self.ctas = ctas
        self.arrived = 0
        self.generation = 0
        self.warps = []

    def expected(self) -> int:
        return 32 * sum(1 for c in self.ctas for w in c.warps if not w.done)


def budget_report(ctas, limit: int = 64) -> str:
    """What each unfinished warp was doing when a budget ran out: its PC, the instruction's text and source line,
    what it waits on, and how many instructions it had executed (a spinning warp has many)."""
    lines = []
    for c in ctas:
        for w in c.warps:
            if w.done:
                continue
            pc = w.current_pc()
            ins = c.prog.instrs[pc] if pc < len(c.prog.instrs) else None
            what = describe(ins) if ins is not None else "past the last instruction"
            lines.append(f"  CTA {c.ctaid} warp {w.index}: pc {pc}, at {what}, {w.executed:,} instructions executed"
                         + (f"; waits on {w.wait}" if w.wait else ""))
    if len(lines) > limit:
        lines = lines[:limit] + [f"  ... and {len(lines) - limit} more warps"]
    return "\n".join(lines)


def cluster_builder(L, prog: Program, cluster, window_hi: int, zero_shared: bool, keep_sources: bool, arch: str):
    """corner -> the CTAs of the cluster there (corner: its index in clusters), by rank: each with its shared
    window [SMEM_RESERVED, window_hi) (watched by the launch's write log; keep_sources: SharedWindow's) and the
    cluster's barrier (schedule.Residency admits clusters through it)."""
    writes = L.writes
    ranks = [(r % cluster[0], (r // cluster[0]) % cluster[1], r // (cluster[0] * cluster[1]))
             for r in range(math.prod(cluster))]   # each rank's place in its cluster

    def window():
        sh = SharedWindow(SharedMemory(arch), SMEM_RESERVED, window_hi, zero_shared)
        writes.watch_shared(sh)
        if not keep_sources:
            sh.keep_sources = False
        return sh

    def build_one(corner):   # a cluster of one CTA (most grids): without build's loop over ranks
        cta = Cta(L, corner, prog, window(), 0)
        cta.cluster_barrier = ClusterBarrier(cta.cluster)
        return cta.cluster

    def build(corner):
        ctas = []
        for rank, (x, y, z) in enumerate(ranks):
            ctaid = (corner[0] * cluster[0] + x, corner[1] * cluster[1] + y, corner[2] * cluster[2] + z)
            sh = window()
            sh.rank = rank
            ctas.append(Cta(L, ctaid, prog, sh, rank))
        cbar = ClusterBarrier(ctas)
        for cta in ctas:
            cta.cluster = ctas
            cta.cluster_barrier = cbar
        return ctas
    return build_one if len(ranks) == 1 else build


class _Resident:
    """One resident cluster: its CTAs, their warps, and the warp instructions it has executed."""

    def __init__(self, ctas):
        self.ctas = ctas
        self.warps = [w for c in ctas for w in c.warps]
        self.total = 0
        self.moved = False

    def where(self):
        ctas = self.ctas
        return f"CTA {ctas[0].ctaid}" if len(ctas) == 1 else f"cluster of CTAs {[c.ctaid for c in ctas]}"


def run_ctas(ctas, max_instructions: int, deadline: Optional[float] = None, timeout: Optional[float] = None,
             grid=None) -> int:
    """Run the warps of these CTAs (one CTA, or the CTAs of a cluster) until all exit; Deadlock otherwise.
    BudgetExceeded past `max_instructions` warp instructions of one cluster, or once time.monotonic() passes
    `deadline` (checked after each warp's quantum; `timeout` is the launch's limit in seconds, for the message).

    grid (schedule.Residency): the launch's further clusters. One cluster is resident at a time, run to
    completion, as long as it makes progress; when every resident warp is blocked or proven to spin on memory
    nobody changes (hang.py), the next clusters are admitted (up to grid.limit resident) and all resident warps
    interleave. A warp proven to spin is not run again until a byte it reads changes (it would only cycle)."""
    clusters = [_Resident(ctas)]
    log = getattr(ctas[0].launch, "writes", None)
    trace = getattr(ctas[0].launch, "trace", None)
    gang_up = lockstep.ENABLED and getattr(ctas[0].launch, "lockstep", True) and trace is None
    if gang_up and grid is not None:   # a wave of clusters runs in lock-step (lockstep.py)
        while len(clusters) < grid.wave and grid.pending():
            clusters.append(_Resident(grid.admit()))
    total = 0
    want = 1
    spins = {}     # warp -> hang.Spin: proven to cycle while the bytes it reads keep their values
    probes = {}    # warp -> [steps of its next probe, probe steps spent on it]
    released = set()  # warps whose failing test_wait / try_wait returned False since the last barrier event
    keys = {}      # masked warp -> (instructions it had run, its next PC then): its state changes only as it runs

    def key_of(x):
        got = keys.get(x)
        if got is None or got[0] != x.executed:
            got = keys[x] = (x.executed, lockstep.step_of(x)[0])
        return got[1]

    def gang_for(w, everyone, ganged, mates):
        """The warps that run with w's turn, and how (lockstep.run / run_any): the eligible warps at its PC; for a
        warp on some of its lanes, the others on some of theirs at its PC and its last gang's warps wherever they
        are, of its CTA or of others (one warp a CTA, as CUTLASS's producer warps after elect.sync: their private
        stretches run as one batch, their TMA and mbarrier ops still CTA by CTA). Warps that had their turn this
        round join only as mates."""
        if lockstep.eligible(w):
            pc = w.pc
            return [x for x in everyone if x.pc == pc and lockstep.eligible(x) and x not in spins
                    and (x not in ganged or x in mates)], lockstep.run
        if not lockstep.masked(w):
            return (), None
        key = key_of(w)
        g = [x for x in everyone if x not in spins and (
            x is w or x in mates and not x.done and not x.parked_test and x.wait is None or
            x not in ganged and lockstep.masked(x) and key_of(x) == key)]
        return g, lockstep.run_any

    def cta_probe(c, windows) -> bool:
        """Probe the unfinished warps of CTA c not already proven to spin, together (within its allowance)."""
        members = [w for w in c.warps if not w.done and w not in spins]
        if not members or any(w.parked_test for w in members):   # a test_wait may yet return False
            return False
        p = probes.get(c)
        if p is None:
            p = probes[c] = [PROBE_FIRST_CTA, 0]
        if p[1] > sum(w.executed for w in c.warps) // PROBE_SHARE + PROBE_FIRST_CTA:
            return False
        s, used = probe_cta(members, windows, p[0])
        p[1] += used + PROBE_SETUP
        if s is None:
            if used >= p[0]:   # no cycle within its steps: a longer probe next time
                p[0] = min(2 * p[0], PROBE_STEPS)
            return False
        for w in members:
            spins[w] = s
        return True

    def probe_warp(w, windows) -> bool:
        """After a chunk a warp ran without blocking: probe it (within its allowance); True if it is now parked
        (proven to spin, alone or with its CTA)."""
        p = probes.get(w)
        if p is None:
            p = probes[w] = [PROBE_FIRST, 0]   # [steps of the next probe, steps spent probing]
        if p[1] > w.executed // PROBE_SHARE + PROBE_FIRST:
            return False
        s, used, at_bar = probe(w, windows, p[0])
        p[1] += used + PROBE_SETUP
        if s is not None:
            spins[w] = s
            return True
        if used >= p[0]:
            p[0] = min(2 * p[0], PROBE_STEPS)
        return bool(at_bar and cta_probe(w.cta, windows))   # a loop through bar.sync: the CTA's warps as one

    while True:
        resident = [c for r in clusters for c in r.ctas]
        windows = [c.shared for c in resident]
        if any(c.progress for c in resident):
            released.clear()
        for c in resident:
            c.progress = False
        ran = set()
        # lock-step (lockstep.py): a warp's turn runs every eligible warp at its PC with it, each warp taking one
        # turn a round, alone or in a gang (`ganged`: those that had theirs in another warp's gang)
        everyone = [w for r in clusters for w in r.warps] if gang_up else ()
        owner = {w: r for r in clusters for w in r.warps} if gang_up else None
        ganged = set()
        for r in clusters:   # before any turn: a gang's warps of a later cluster count as its moves
            r.moved = False
        for r in clusters:
            for w in r.warps:
                if w.done:
                    continue
                if spins:
                    s = spins.get(w)
                    if s is not None:
                        if s.holds():
                            continue
                        # a byte they read changed: do they still only cycle?
                        old = s.warps
                        s = (probe(w, windows) if len(old) == 1 and s.alone else probe_cta(old, windows))[0]
                        for x in old:
                            spins.pop(x)
                            if s is not None:
                                spins[x] = s
                            else:   # they run on; probe them again soon (their allowance starts afresh)
                                probes.pop(x, None)
                                probes.pop(x.cta, None)
                        if s is not None:
                            continue
                if log is not None:
                    log.running = w
                budget = max(1, min(QUANTUM, max_instructions + 1 - r.total))  # no quantum far past the budget
                if gang_up:
                    if w in ganged:
                        continue
                    mates = ()   # the warps of its last gang: they go on with it (a branch splits lanes)
                    for _ in range(GANG_TURNS):
                        g, runner = gang_for(w, everyone, ganged, mates)
                        if len(g) < 2:
                            break
                        before = [(x, x.executed) for x in g]
                        share = min(budget, CHUNK)   # a chunk each, then the probes the warps' own runs get
                        k = runner(g, share * len(g), log)
                        total += k
                        if k >= share * len(g):   # nobody blocked: spinning, perhaps
                            for x in g:
                                if not x.done and x.wait is None and x not in spins:
                                    probe_warp(x, windows)
                        for x, e in before:
                            if x.executed > e:
                                o = owner[x]
                                o.total += x.executed - e
                                o.moved = True
                                ran.add(x.cta)
                                ganged.add(x)
                            elif x.wait is not None:   # tried and blocked: not again this round
                                ganged.add(x)
                        if log is not None:
                            log.running = w
                        if w.done or r.total > max_instructions or w.wait is not None or w in spins:
                            break
                        mates = set(g)   # (membership only: gang_for asks it of every warp)
                    if w.done or r.total > max_instructions:
                        continue
                # the quantum in chunks (the same instructions in the same order as one w.run(budget)); after a
                # chunk the warp ran without blocking, a probe may prove it spins (then it stops here, parked)
                n = 0
                while True:
                    step = min(CHUNK, budget - n)
                    k = w.run(step)
                    n += k
                    if k < step or n >= budget or w.done:
                        break
                    if probe_warp(w, windows):
                        break
                r.total += n
                total += n
                if n:
                    r.moved = True
                    ran.add(w.cta)
                if deadline is not None and time.monotonic() > deadline:
                    one = len(clusters) == 1
                    raise BudgetExceeded(r.where() if one else "grid",
                                         f"the launch ran past its time limit of {timeout:g} s (timeout=) after "
                                         f"{r.total if one else total:,} warp instructions here"
                                         f"{'' if one else f' ({len(resident)} CTAs resident)'} (a livelock or an "
                                         f"unbounded loop?); the unfinished warps:\n" + budget_report(resident))
        bar = getattr(ctas[0].launch, "progress", None)
        if bar is not None:
            bar.tick(total)
        for c in ran:   # warps of a CTA that spin together (a bar.sync in the loop): probe them as one
            if len(c.warps) > 1 and sum(1 for w in c.warps if not w.done and w not in spins) > 1:   # one warp: its
                cta_probe(c, windows)                                                            # chunks' probes
        moved = any(r.moved for r in clusters)
        fin = [all(w.done for w in r.warps) for r in clusters]   # (nothing below runs a warp)
        for r, f in zip(clusters, fin):
            if f:
                continue
            if not r.moved and not any(c.progress for c in r.ctas) and not any(w in spins for w in r.warps):
                # a failing mbarrier test_wait / try_wait may return False (PTX: it does not wait, or waits a
                # bounded time): when nothing else can move, each parked one does so once; a hang only if that
                # changes nothing
                parked = [w for w in r.warps if not w.done and w.parked_test and id(w) not in released]
                if parked:
                    for w in parked:
                        w.give_up_test = True
                        released.add(id(w))
                    moved = True   # they run again next round
                    continue
                ctas_ = r.ctas
                raise Deadlock(r.where(), "no warp can make progress (hang):\n" +
                               "\n".join((f"CTA {c.ctaid}:\n" if len(ctas_) > 1 else "") + c.report() for c in ctas_))
            if r.total > max_instructions:
                raise BudgetExceeded(f"CTA {r.ctas[0].ctaid}", f"more than {max_instructions} warp instructions "
                                                              f"without finishing (a livelock or an unbounded loop?)\n"
                                     + budget_report(r.ctas))
        ended = [r for r, f in zip(clusters, fin) if f]   # (one pass: removing them one by one costs a wave's length
        if ended:                                         # each)
            clusters[:] = [r for r, f in zip(clusters, fin) if not f]
        for r in ended:
            for c in r.ctas:
                if c.tmem is not None:  # what the CTA still holds at exit (e.g. tensor memory never deallocated)
                    c.tmem.at_exit(c)
            if spins or probes:
                for w in r.warps:
                    spins.pop(w, None)
                    probes.pop(w, None)
                for c in r.ctas:
                    probes.pop(c, None)
        if ended and grid is not None:   # (the CTAs of a wave end together: the pace is judged on all of them)
            grid.finished([c for r in ended for c in r.ctas])
        if gang_up and grid is not None and not clusters:   # lock-step: the next wave starts together
            while len(clusters) < grid.wave and grid.pending():
                clusters.append(_Resident(grid.admit()))
        while grid is not None and len(clusters) < want and grid.pending():
            clusters.append(_Resident(grid.admit()))
        if not clusters:
            return total
        if moved or any(c.progress for c in resident):
            continue
        # nothing moved: every unfinished warp is blocked or spins on bytes nobody changes
        parked = [w for r in clusters for w in r.warps if not w.done and w.parked_test and id(w) not in released]
        if parked:
            for w in parked:
                w.give_up_test = True
                released.add(id(w))
            continue
        if grid is not None and grid.pending() and len(clusters) < grid.limit:
            want = min(grid.limit, 2 * len(clusters))   # the waiting CTAs may wait for CTAs not yet started
            while len(clusters) < want and grid.pending():
                clusters.append(_Resident(grid.admit()))
            continue
        raise stuck(clusters, spins, grid, log)


def stuck(clusters, spins, grid, log) -> Deadlock:
    """The Deadlock of a resident set in which every unfinished warp is blocked or proven to spin."""
    ctas = [c for r in clusters for c in r.ctas]
    prog = ctas[0].prog
    untracked = prog.table.uses("cp.async", "bulk")   # copies land without a store the write log sees
    body = []
    for c in ctas:
        lines = c.report().split("\n")
        for w in c.warps:
            s = spins.get(w)
            if s is None:
                continue
            head = f"  warp {w.index}: "
            k = next(i for i, ln in enumerate(lines) if ln.startswith(head))
            reads = describe_spin(s, log if log is not None else WriteLog(), untracked) if w is s.warps[0] else \
                [f"    reads what warp {s.warps[0].index} reads"]
            lines[k:k + 1] = [spin_line(s, w)] + reads
        body.append(f"CTA {c.ctaid}:\n" + "\n".join(lines))
    if grid is not None and grid.pending():
        n = len(ctas)
        if not grid.gpu:
            then = (f"resident CTAs wait for CTAs that cannot start until one of them finishes ({grid.why}; raise "
                    "MEMORY_LIMIT or pass a smaller grid)")
        elif grid.holder == "an H100 holds":
            then = (f"resident CTAs wait for CTAs that cannot start until one of them finishes, so the kernel "
                    f"deadlocks on the GPU too ({grid.why})")
        else:
            then = (f"resident CTAs wait for CTAs that cannot start until one of them finishes, so the kernel "
                    f"deadlocks on the GPU too whenever it holds no more than {n} at once ({grid.why})")
        head = (f"the launch has more CTAs than {grid.holder} at once ({n} resident of {grid.total}): the {then}. "
                "Every resident warp is blocked or spins on memory nobody changes:\n")
        return Deadlock("grid", head + "\n".join(body))
    head = ("every unfinished warp is blocked or spins in a loop that only reads memory nobody will change (a "
            "livelock, proven: the warp's whole state repeats while no byte changes)" +
            (f"; every CTA of the launch has started ({len(ctas)} of {grid.total} still running)"
             if grid is not None and len(ctas) > 1 else "") +
            ":\n")
    where = clusters[0].where() if len(clusters) == 1 else "grid"
    return Deadlock(where, head + "\n".join(body))
