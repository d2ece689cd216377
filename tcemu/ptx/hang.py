"""Proofs that a warp spins for ever, and the words of a hang report.

The interpreter is deterministic: a warp that runs alone from state S, writes no memory byte and comes back to S
repeats that cycle for ever, unless another agent changes a byte the cycle reads. `probe` single-steps a warp
(Brent's cycle search, comparing whole warp states only where the PC comes back), watching every global and
shared load and store; the probe is invisible: the warp, the memory and the launch are restored afterwards
whatever it found. A proof (`Spin`) holds the bytes the warp read since S and their values: while they still hold
those values the warp would do nothing but cycle, so the scheduler need not run it (machine.run_ctas).

Only instructions whose effects are the warp's own registers, its local memory and global/shared bytes may be in
a proven cycle; mbarriers, asynchronous copies, tensor-core units, calls and exits end a probe unproven. Warps of
one CTA that loop through bar.sync together (Triton's broadcast of a scalar atomic) are probed as one
(`probe_cta`): their joint state and the CTA's barriers must come back, a barrier's generation counted relative to
the generation each waiting warp recorded (only that difference decides when it may go on).
A cycle that reads no global or shared memory is an unbounded loop, not a wait: the budgets report it. Reading
%clock / %globaltimer changes registers, so a spin on the time is never proven either (the time budget stops it).

Last writers: every st / red / atom on global or shared memory is recorded (warp, instruction, addresses; a gang's
store as one entry) while the log holds at most WRITE_LOG warps' stores, so a report can say who last wrote a byte
a spinning warp reads.
"""
import weakref
from collections import deque

import numpy as np

from ..core.errors import TcemuError
from .memory import GlobalMemory, SharedWindow
from .chains import settle
from .lockstep import step_of
from .program import CLASS_ATTR, describe, regs_of

PROBE_STEPS = 4096   # instructions one probe single-steps at most
MAX_READS = 4096     # distinct bytes a proven cycle may read (a spin reads a few flags)
WRITE_LOG = 1 << 16  # global / shared stores remembered for last-writer reports


class _Changed(Exception):
    """A store in a probe changed a byte: the cycle is not read-only."""


def _allowed(prog, cta_barriers: bool) -> np.ndarray:
    """Per PC: may a proven cycle execute this instruction; cta_barriers: bar / barrier (not .cluster) too, for
    a probe of a CTA's warps together (cached on the program)."""
    cache = getattr(prog, "_probe_ok", None)
    if cache is None:   # the op table's columns (optable.py)
        ok = prog.table.spin_ok
        cache = prog._probe_ok = (ok, ok | prog.table.cta_barrier)
    return cache[1] if cta_barriers else cache[0]


def _runway(prog, cta_barriers: bool) -> np.ndarray:
    """Per PC: the first instruction at or after it, in straight-line order, that a proven cycle may not execute
    (_allowed), or -1 where a branch comes first: a probe from there can only stop at it (cached on the program)."""
    cache = getattr(prog, "_probe_runway", None)
    if cache is None:
        n = len(prog.instrs)
        out = []
        for ok in (_allowed(prog, False), _allowed(prog, True)):
            run = np.full(n + 1, n, np.int64)   # past the end: not allowed
            nxt = n
            for pc in range(n - 1, -1, -1):
                if not ok[pc]:
                    nxt = pc
                elif prog.instrs[pc].opcode.split(".")[0] in ("bra", "brx"):
                    nxt = -1
                run[pc] = nxt
            out.append(run)
        cache = prog._probe_runway = tuple(out)
    return cache[1] if cta_barriers else cache[0]


def _acyclic(prog, cta_barriers: bool):
    """Per PC: (whether no backward branch is reachable from it through instructions a cycle may execute (_allowed;
    cta_barriers: bar.sync too, for the warps of a CTA probed together), following forward branches both ways: a
    warp there cannot cycle before it stops at an instruction _allowed refuses; whether one of those stops is a CTA
    barrier). Branches other than a bra to a label (brx, calls, returns) count as backward. Cached on the program."""
    cache = getattr(prog, "_probe_acyclic", None)
    if cache is None:
        cache = prog._probe_acyclic = {}
    got = cache.get(cta_barriers)
    if got is None:
        n = len(prog.instrs)
        ok, bar = _allowed(prog, cta_barriers), _allowed(prog, True)
        dag = np.zeros(n + 1, bool)
        reach_bar = np.zeros(n + 1, bool)
        dag[n] = True   # past the end: a stop
        for pc in range(n - 1, -1, -1):
            ins = prog.instrs[pc]
            op = ins.opcode.split(".")[0]
            if not ok[pc]:
                dag[pc], reach_bar[pc] = True, bool(bar[pc])
            elif op == "bra":
                try:
                    t = prog.label(ins, ins.operands[0].name)
                except (TcemuError, AttributeError, IndexError):   # (a malformed branch: the op reports it)
                    continue
                if t <= pc:
                    continue
                nxt = [t] if ins.guard is None else [t, pc + 1]
                dag[pc] = all(dag[x] for x in nxt)
                reach_bar[pc] = any(reach_bar[x] for x in nxt)
            elif op in ("brx", "call", "ret", "exit"):
                continue
            else:
                dag[pc], reach_bar[pc] = dag[pc + 1], reach_bar[pc + 1]
        got = cache[cta_barriers] = (dag, reach_bar)
    return got


def next_pc(w) -> int:
    """The PC the warp's next step executes (Warp.run's choice: lockstep.step_of)."""
    return step_of(w)[0]


def _probe_regs(prog):
    """[(register file attribute, the registers of that class an instruction a probe may run can write)]: the
    destinations of every instruction _allowed (with barriers). The others keep their values through any probe, so
    a probe saves, restores and compares only these (CUTLASS's ping-pong: 539 of its 3,021 32-bit registers; a
    12-warp CTA's probe had copied 4.6 MB three times). Cached on the program."""
    cache = getattr(prog, "_probe_regs", None)
    if cache is None:
        ok = _allowed(prog, True)
        out = {}
        for pc, ins in enumerate(prog.instrs):
            if ok[pc] and ins.operands:   # PTX's destination comes first (an address where there is none: more)
                for r in regs_of(ins.operands[0]):
                    s = prog.slots.get(r.name)
                    if s is not None:
                        out.setdefault(s.cls, set()).add(s.index)
        cache = prog._probe_regs = [(a, np.array(sorted(out.get(c, ())), np.int64)) for c, a in CLASS_ATTR.items()]
    return cache


def _save(w):
    """A warp's state but its registers (_save_regs: taken only once it runs, the only way they change)."""
    return (w.pc, None if w.lane_pc is None else w.lane_pc.copy(), w.live.copy(), w.full, w.done,
            w.cc.copy(), None if w.local is None else w.local.data.copy(),
            dict(w.sync), set(w.wgmma_dirty), dict(w.mbar_seen), w.wait, w.executed, w.cta.clock, w.parked_test,
            w.give_up_test)


def _save_regs(w):
    return [getattr(w, a)[idx] for a, idx in _probe_regs(w.prog)]


def _restore(w, s, regs=None):
    (w.pc, lane_pc, live, w.full, w.done, cc, local, sync, dirty, seen, w.wait, w.executed, w.cta.clock,
     w.parked_test, w.give_up_test) = s
    w.lane_pc = None if lane_pc is None else lane_pc.copy()
    w.live[:] = live
    if regs is not None:
        for (a, idx), r in zip(_probe_regs(w.prog), regs):
            getattr(w, a)[idx] = r
    w.cc = cc.copy()
    if local is not None:
        w.local.data[...] = local
    w.sync = dict(sync)
    w.wgmma_dirty = set(dirty)
    w.mbar_seen = dict(seen)


def _fingerprint(w) -> bytes:
    """Everything of a warp's state its future depends on, but its registers (_reg_bytes), as bytes (equal bytes
    and registers: the same future, given the same memory). A barrier record keeps only how many generations
    behind the barrier it is: the count itself grows."""
    parts = [repr((w.pc if w.lane_pc is None else -1, w.full, w.done)).encode(), w.live.tobytes()]
    if w.lane_pc is not None:
        parts.append(np.where(w.live, w.lane_pc, -1).tobytes())
    parts.append(w.cc.tobytes())
    if w.local is not None:
        parts.append(w.local.data.tobytes())
    sync = []
    for k, v in w.sync.items():
        if isinstance(k, tuple) and k[:1] == ("bar",) and isinstance(v, tuple):
            v = (v[0], w.cta.barriers[v[0]][1] - v[1])
        sync.append((repr(k), repr(v)))
    parts.append(repr((sorted(sync), sorted(map(repr, w.wgmma_dirty)), sorted(w.mbar_seen.items()))).encode())
    return b"|".join(parts)


def _reg_bytes(regs) -> bytes:
    return b"|".join(r.tobytes() for r in regs)


def _bars(cta) -> bytes:
    return repr(sorted((bid, B[0], B[2], [x.index for x in B[4]], B[3].get(B[1]))
                       for bid, B in cta.barriers.items())).encode()


class _Watch:
    """Instance-level wrappers on the launch's global memory and the resident CTAs' shared windows, for one
    probe: loads are recorded (byte addresses), stores keep an undo entry and end the probe if a byte changed."""

    def __init__(self, gmem, windows):
        self.gmem, self.windows = gmem, windows
        self.gbytes, self.sbytes = [], {}   # global byte addresses; id(window) -> shared byte offsets
        self.undo = []
        self.saved = []

    def install(self):
        g = self.gmem
        self._hook(g, "load", lambda addrs, nbytes, *a, **k: self._gload(addrs, nbytes, a, k))
        self._hook(g, "store", lambda addrs, data, lanes, where: self._gstore(addrs, data, lanes, where))
        for sh in self.windows:
            self._hook(sh, "load", lambda offs, nbytes, *a, _sh=sh, **k: self._sload(_sh, offs, nbytes, a, k))
            self._hook(sh, "store", lambda offs, data, *a, _sh=sh, **k: self._sstore(_sh, offs, data, a, k))

    def _hook(self, obj, name, fn):
        self.saved.append((obj, name, obj.__dict__.get(name)))
        setattr(obj, name, fn)

    def uninstall(self):
        for obj, name, old in reversed(self.saved):
            if old is None:
                obj.__dict__.pop(name, None)
            else:
                setattr(obj, name, old)
        for fn in reversed(self.undo):
            fn()

    def nbytes_read(self) -> int:
        return sum(a.size for a in self.gbytes) + sum(a.size for _, parts in self.sbytes.values() for a in parts)

    def _gload(self, addrs, nbytes, a, k):
        out = GlobalMemory.load(self.gmem, addrs, nbytes, *a, **k)
        self.gbytes.append((np.asarray(addrs, np.uint64)[:, None] + np.arange(nbytes, dtype=np.uint64)).ravel())
        return out

    def _gstore(self, addrs, data, lanes, where):
        g = self.gmem
        old = GlobalMemory.load(g, addrs, data.shape[1], lanes, where)
        GlobalMemory.store(g, addrs, data, lanes, where)
        self.undo.append(lambda: GlobalMemory.store(g, addrs, old, lanes, where))
        if not np.array_equal(GlobalMemory.load(g, addrs, data.shape[1], lanes, where), old):
            raise _Changed()

    def _sload(self, sh, offs, nbytes, a, k):
        out = SharedWindow.load(sh, offs, nbytes, *a, **k)
        self.sbytes.setdefault(id(sh), (sh, []))[1].append(
            (np.asarray(offs, np.int64)[:, None] + np.arange(nbytes)).ravel())
        return out

    def _sstore(self, sh, offs, data, a, k):
        spots = (np.asarray(offs, np.int64)[:, None] + np.arange(data.shape[1])).ravel()
        sh.check(offs, data.shape[1], a[0] if a else [], "probe")
        # the sources are kept per granule, per byte only for granules marked so (SharedWindow.sources): a
        # per-byte array made by this store holds nothing the restored granules point to
        gr = np.unique(spots >> 4)
        made = sh.__dict__   # (a shadow never made stays so: the store leaves guard_bar's -1 as it is)
        watched = [(sh.smem.data, spots), (sh.smem.written, spots)] + \
            ([(sh.guard_bar, spots)] if "guard_bar" in made else [])
        arrays = watched + [(sh.unfenced16, gr), (sh.source16, gr)] + \
            ([(sh.guard16, gr)] if "guard16" in made else [])
        for name in ("source", "unfenced"):   # the MIXED granules' bytes (unfenced: epochs, as the sources)
            if name in made:
                arrays.append((made[name], (gr[:, None] * 16 + np.arange(16)).ravel()))
        keep = [(arr, at, arr[at].copy()) for arr, at in arrays]
        was = sh.sources(spots)
        epoch = sh.write_epoch

        def undo():
            for arr, at, v in keep:
                arr[at] = v
            sh.write_epoch = epoch
        self.undo.append(undo)
        SharedWindow.write(sh, offs, data, *a, **k)
        if any(not np.array_equal(arr[at], v) for arr, at, v in keep[:len(watched)]) or \
                not np.array_equal(sh.sources(spots), was):
            raise _Changed()


class Spin:
    """A proven spin of one warp or of warps of one CTA: the bytes they read (global byte addresses, per-window
    shared offsets) and their values. `holds()`: they still do (the warps would still only cycle)."""

    def __init__(self, warps, pcs, gmem, gaddrs, shared):
        self.warps, self.pcs, self.gmem = warps, pcs, gmem   # pcs: warp -> the first and last PC of its cycle
        self.gaddrs = gaddrs                                  # sorted unique uint64
        self.gvals = _gread(gmem, gaddrs)
        self.shared = [(sh, offs, sh.smem.data[offs].copy()) for sh, offs in shared]

    def holds(self) -> bool:
        if self.gaddrs.size and not np.array_equal(_gread(self.gmem, self.gaddrs), self.gvals):
            return False
        return all(np.array_equal(sh.smem.data[offs], v) for sh, offs, v in self.shared)


def _gread(gmem, addrs):
    if not addrs.size:
        return np.zeros(0, np.uint8)
    return GlobalMemory.load(gmem, addrs, 1, np.zeros(addrs.size, np.int64), "probe").ravel()


def probe(w, windows, steps: int = PROBE_STEPS):
    """(Spin or None, steps used, whether it stopped at a CTA barrier): a Spin if warp w, run alone from its
    present state, provably cycles without changing memory and reads global or shared memory. Invisible either
    way (everything is restored)."""
    return _probe([w], windows, steps, 1, False)


def probe_cta(warps, windows, steps: int = PROBE_STEPS):
    """probe for warps of one CTA together (a loop with bar.sync in it: Triton's spin on an atomic is one), run
    in turns of at most 64 instructions each, each until it blocks; their joint state and the CTA's barriers
    must repeat. A warp not in `warps` must be proven to spin alone already (it changes nothing)."""
    return _probe(warps, windows, steps, 1 if len(warps) == 1 else 64, True)[:2]


def _probe(warps, windows, steps, turn, bars_ok):
    cta = warps[0].cta
    ok = _allowed(cta.prog, bars_ok)
    at_bar = _allowed(cta.prog, True)
    first = warps[0]
    # no backward branch ahead of any lane of any warp before a stop: their PCs only grow (or they block) until one
    # stops, so their joint state cannot repeat; a warp alone says whether a stop ahead is a CTA barrier
    dag, reach_bar = _acyclic(cta.prog, bars_ok)
    at = [p for w in warps if not w.done
          for p in ([w.pc] if w.lane_pc is None else np.unique(w.lane_pc[w.live]).tolist())]
    if all(dag[p] for p in at):
        return None, 0, len(warps) == 1 and any(bool(reach_bar[p]) for p in at)
    if first.lane_pc is None and not first.done:   # straight-line code up to an instruction no cycle may hold:
        stop = int(_runway(cta.prog, bars_ok)[first.pc])   # the probe's first turn ends there, proving nothing
        if 0 <= stop - first.pc < min(turn if len(warps) > 1 else steps, steps):
            return None, stop - first.pc, bool(at_bar[min(stop, ok.size - 1)])
    L = cta.launch
    for w in warps:   # the registers a probe saves and restores hold every wgmma result (chains.py)
        if w.deferred:
            settle(w)
    starts = [_save(w) for w in warps]
    regs = {}   # warp -> its registers before its first step in the probe (a warp that never runs keeps them)
    bars = {bid: [B[0], B[1], B[2], dict(B[3]), list(B[4]), *B[5:]] for bid, B in cta.barriers.items()}
    progress = cta.progress
    # a probe is speculative: racecheck / synccheck (races.py) neither see nor record it
    checks, races = L.check_races, [w.race for w in warps]
    L.check_races = False
    for w in warps:
        w.race = False
    watch = _Watch(L.gmem, windows)
    trace, L.trace = L.trace, None
    watch.install()
    used = 0
    one = warps[0] if len(warps) == 1 and turn == 1 else None
    try:
        def joint():
            """The warps' state (and the CTA's barriers) as bytes, and a function giving their registers'."""
            return (b"#".join([_fingerprint(w) for w in warps] + [_bars(cta)]),
                    lambda: b"#".join([_reg_bytes(_save_regs(w)) for w in warps]))

        def registers_then():   # the registers at the probe's start, asked only when a state matches the start's
            return b"#".join([_reg_bytes(regs[w] if w in regs else _save_regs(w)) for w in warps])
        snap, power, lam = (joint()[0], registers_then), 1, 0
        snap_pc = one.current_pc() if one is not None else None
        pcs = {w: [next_pc(w)] * 2 for w in warps}   # the PCs run since the snapshot: the cycle's once found
        while used < steps:
            ran = 0
            for w in warps:
                k = 0
                while k < turn and not w.done:
                    pc = next_pc(w)
                    if not ok[min(pc, ok.size - 1)]:
                        break
                    if w not in regs:
                        regs[w] = _save_regs(w)
                    if w.run(1) == 0:
                        break
                    k += 1
                    lo_hi = pcs[w]
                    lo_hi[0], lo_hi[1] = min(lo_hi[0], pc), max(lo_hi[1], pc)
                if w.done or (k < turn and not ok[min(next_pc(w), ok.size - 1)]):
                    return None, used + ran + k, not w.done and bool(at_bar[min(next_pc(w), ok.size - 1)])
                ran += k
            used += ran
            if not ran:
                return None, used, False   # all blocked: a hang or a wait, not a spin
            lam += 1
            now = None
            if one is None or one.current_pc() == snap_pc:
                now = joint()
            if now is not None and now[0] == snap[0] and now[1]() == snap[1]():
                if watch.nbytes_read() > MAX_READS:
                    return None, used, False
                if not watch.gbytes and not watch.sbytes:
                    return None, used, False   # reads no memory: an unbounded loop, for the budgets
                g = np.unique(np.concatenate(watch.gbytes)) if watch.gbytes else np.zeros(0, np.uint64)
                sh = [(s, np.unique(np.concatenate(parts))) for s, parts in watch.sbytes.values()]
                watch.uninstall()
                watch.saved, watch.undo = [], []
                for w, st in zip(warps, starts):
                    _restore(w, st, regs.get(w))
                spin = Spin(list(warps), {w: tuple(v) for w, v in pcs.items()}, L.gmem, g, sh)
                spin.alone = not bars_ok   # proven without CTA barriers: re-proven the same way
                return spin, used, False
            if lam >= power:
                state = (now or joint())[0]
                taken = b"#".join([_reg_bytes(_save_regs(w)) for w in warps])   # the registers now, kept
                snap, power, lam = (state, lambda: taken), power * 2, 0
                snap_pc = one.current_pc() if one is not None else None
                pcs = {w: [next_pc(w)] * 2 for w in warps}
        return None, used, False
    except Exception:   # a fault, a changed byte, ...: not proven (the real run meets the fault itself)
        return None, used, False
    finally:
        watch.uninstall()
        for w, st in zip(warps, starts):
            _restore(w, st, regs.get(w))
        cta.barriers.clear()
        cta.barriers.update(bars)
        cta.progress = progress
        L.trace = trace
        L.check_races = checks
        for w, r in zip(warps, races):
            w.race = r


# ----------------------------------------------------------------------------------------------- last writers

class WriteLog:
    """The last WRITE_LOG global / shared stores (st, red, atom, stmatrix): who wrote which bytes."""

    def __init__(self):
        self.log = deque()
        self.held = 0    # warps' stores in the log (a gang's entry holds several): at most WRITE_LOG, oldest out
        self.count = 0
        self.running = None   # the warp the scheduler runs now (machine.run_ctas sets it)

    def watch_global(self, gmem):
        store = gmem.store

        def logged(addrs, data, lanes, where):
            store(addrs, data, lanes, where)
            self.add(gmem, addrs, data.shape[1], where)
        gmem.store = logged

    def watch_shared(self, sh):
        # (SharedWindow.store adds its stores; the log holds the window by a weak reference, so no cycle)
        sh.log = self

    def add(self, space, addrs, nbytes, where, warp=None):
        # searched at report time; a CTA's shared window and warps are not kept alive by the log once it finishes
        # (its shadows would be): the window by a weak reference, the warp as (CTA index, warp index)
        self.count += 1
        w = self.running if warp is None else warp
        self._push(space, addrs, nbytes, None if w is None else (w.cta.ctaid, w.index), where)

    def _push(self, space, addrs, nbytes, who, where, counts=None):
        """Log a store (who: (CTA index, warp index), or a gang's list of them with counts, each one's lanes of
        addrs); the oldest entries go once more than WRITE_LOG warps' stores are held."""
        log = self.log
        log.append((weakref.ref(space) if isinstance(space, SharedWindow) else space, addrs, nbytes, who, where,
                    counts))
        self.held += 1 if counts is None else len(counts)
        while self.held > WRITE_LOG and len(log) > 1:
            old = log.popleft()
            self.held -= 1 if old[5] is None else len(old[5])

    def gang(self, space, warps, addrs, counts, nbytes, where):
        """A gang's store (ops/memory_gang.py): the warps' stores as one entry (counts: each warp's lanes of addrs,
        in gang order), read back by `last` as the warps' own entries would be."""
        self.count += len(warps)
        self._push(space, addrs, nbytes, [(w.cta.ctaid, w.index) for w in warps], where, counts)

    def last(self, space, lo: int, hi: int):
        """((CTA index, warp index), where) of the last logged store to a byte of [lo, hi) of `space`, or None."""
        for s, a, nbytes, w, where, counts in reversed(self.log):
            if (s() if isinstance(s, weakref.ref) else s) is space and len(a):
                a = np.asarray(a).astype(np.int64)
                hit = np.flatnonzero((a < hi) & (a + nbytes > lo))
                if hit.size:   # a gang's entry: its last warp (in gang order) with a lane there
                    return (w if counts is None else
                            w[int(np.searchsorted(np.cumsum(counts), hit[-1], side="right"))]), where
        return None


def _ranges(addrs):
    """Contiguous runs of sorted byte addresses: [(first, count)]."""
    out = []
    for a in np.asarray(addrs).tolist():
        if out and out[-1][0] + out[-1][1] == a:
            out[-1][1] += 1
        else:
            out.append([a, 1])
    return out


def _value(raw: np.ndarray) -> str:
    if raw.size in (1, 2, 4, 8):
        return f"{int.from_bytes(raw.tobytes(), 'little'):#x}"
    return " ".join(f"{b:02x}" for b in raw.tolist())


def describe_spin(spin: Spin, log: WriteLog, untracked: bool, limit: int = 8) -> list:
    """Lines naming what a spinning warp reads, its values and who last wrote each range."""
    never = "no st, red or atom of this launch wrote it (cp.async / TMA copies are not tracked)" if untracked \
        else "nothing in this launch wrote it"
    if log.count > WRITE_LOG:
        never = f"no store among the last {WRITE_LOG:,} of this launch wrote it"
    parts = []
    for first, n in _ranges(spin.gaddrs):
        raw = spin.gvals[np.searchsorted(spin.gaddrs, np.uint64(first)):][:n]
        parts.append((f"global address {first:#x} ({n} bytes, {spin.gmem.describe(first)}), holding {_value(raw)}",
                      spin.gmem, first, first + n))
    for sh, offs, vals in spin.shared:
        for first, n in _ranges(offs):
            i = int(np.searchsorted(offs, first))
            parts.append((f"shared address {first:#x} ({n} bytes) of CTA rank {sh.rank}, holding "
                          f"{_value(vals[i:i + n])}", sh, first, first + n))
    lines = []
    for text, space, lo, hi in parts[:limit]:
        who = log.last(space, lo, hi)
        if who is None:
            by = never
        else:
            w, where = who
            by = f"last written by CTA {w[0]} warp {w[1]}: {where}" if w is not None else \
                f"last written by {where}"
        lines.append(f"    reads {text}; {by}")
    if len(parts) > limit:
        lines.append(f"    ... and {len(parts) - limit} more address ranges")
    return lines


def spin_line(spin: Spin, w) -> str:
    lo, hi = (describe(w.prog.instrs[pc]) for pc in spin.pcs[w])
    with_ = "" if len(spin.warps) == 1 else f" (with warps {', '.join(str(x.index) for x in spin.warps if x is not w)})"
    return (f"  warp {w.index}: spins in a loop from {lo} to {hi}{with_} that only reads memory nobody changes (its "
            "state repeats)")
