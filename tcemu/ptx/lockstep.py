"""Lock-step execution: warps of the resident CTAs that stand converged at one PC run as one gang.

A stretch of warp-private instructions (they read and write only the warp's own registers: integer and float
arithmetic, mov, cvt, setp, selp, ...) runs once over a batch of (warps, 32) lanes. Any other instruction runs
warp by warp, in gang order, and those that block are tried again once the others have run it (the last warp
at a bar.sync releases the rest). A gang whose warps go to different PCs splits into gangs by PC; a warp that
blocks for good, diverges or exits leaves, and the scheduler (machine.run_ctas) runs it on its own.

An op with a gang version (op.gang([(warp, mask), ...])) runs once for all the gang's warps instead: it has the
effects the warps' runs one after another would have, in gang order, and falls through for each (it returns None)
or returns each warp's control value (None, a jump, BLOCK, DIVERGED: bra, bar.sync); where it cannot
promise that (a check fails, a case it does not cover) it raises signals.Fallback before changing anything and
the warps run the instruction one at a time, which also gives any report its warp.

Private instructions touch no state another warp can see, so running them early for other warps changes
nothing anyone observes; the other instructions run in an order the GPU may also take (warps interleave at
instruction granularity). Off with TCEMU_LOCKSTEP=0; TCEMU_LOCKSTEP=force also runs single warps' stretches
through the batch (a test of the batch path over every kernel).

Masked gangs (run_any): warps that run on some of their lanes (a branch split them, or lanes exited) run
together, each on its own lanes, the way one warp steps its lanes: the warps at the lowest PC go first, so warps
that a data-dependent branch sent different ways (a GELU's erf, a reduction's lane 0) run each path together and
meet again where the paths join; a private stretch then runs as one batch under a (warps, 32) lane mask."""
import os
from typing import Dict, List

import numpy as np

from ..core.errors import TcemuError
from .errors import KernelFault, PtxError
from .chains import settle_warps
from .program import CLASS_ATTR, regs_of
from .signals import BLOCK, Fallback
from .slabcopy import move, scratch, slab_runs

MAX_PASSES = 4                         # tries of a blocking instruction within one gang step

MODE = os.environ.get("TCEMU_LOCKSTEP", "1")
ENABLED = MODE != "0"
FORCE = MODE == "force"
GANG_OPS = True                        # ops' gang versions (tests turn them off to compare)


def analyse(prog, code) -> None:
    """prog.lockstep_end[pc]: where the private stretch starting at pc ends (pc itself: not private), and
    prog.lockstep_regs[pc]: per register class, the slots the stretch reads or writes and those it writes."""
    n = len(prog.instrs)
    end = np.arange(n + 1)
    touched: List[Dict[int, set]] = [None] * (n + 1)
    written: List[Dict[int, set]] = [None] * (n + 1)
    private = prog.table.private   # the op table's column (optable.py), less forms their op refuses
    for pc in range(n - 1, -1, -1):
        ins = prog.instrs[pc]
        if not ENABLED or not private[pc] or getattr(code[pc], "refused", False):
            continue
        end[pc] = end[pc + 1] if end[pc + 1] > pc + 1 else pc + 1
        t = {c: set(s) for c, s in (touched[pc + 1] or {}).items()}
        w = {c: set(s) for c, s in (written[pc + 1] or {}).items()}
        regs = [r for o in ins.operands for r in regs_of(o)]
        names = [r.name for r in regs] + ([ins.guard[0]] if ins.guard else [])
        for name in names:
            s = prog.slots.get(name)
            if s is not None:
                t.setdefault(s.cls, set()).add(s.index)
        if ins.operands:
            for r in regs_of(ins.operands[0]):
                s = prog.slots.get(r.name)
                if s is not None:
                    w.setdefault(s.cls, set()).add(s.index)
        touched[pc], written[pc] = t, w
    prog.lockstep_end = end
    prog.lockstep_regs = [None if touched[pc] is None else
                          ({c: np.array(sorted(s)) for c, s in touched[pc].items()},
                           {c: np.array(sorted(s)) for c, s in written[pc].items()}) for pc in range(n + 1)]


def slots_of(prog, ops) -> Dict[int, np.ndarray]:
    """Per register class, the slots operands `ops` name (what a gang version gathers into a Batch)."""
    out = {}
    for o in ops:
        for r in regs_of(o):
            sl = prog.slots.get(r.name)
            if sl is not None:
                out.setdefault(sl.cls, set()).add(sl.index)
    return {c: np.array(sorted(x)) for c, x in out.items()}


def wgmma_r32(prog) -> frozenset:
    """The 32-bit register indices some wgmma writes or reads (its D and A registers)."""
    got = getattr(prog, "_wgmma_r32", None)
    if got is None or got[0] != len(prog.wgmma_slots):
        got = prog._wgmma_r32 = (len(prog.wgmma_slots), frozenset(s.index for s in prog.wgmma_slots if s.cls == 32))
    return got[1]


def _runs(warps):
    """[(register files, first column, end, position in the batch)]: the batch as runs of warps in neighbouring
    columns of one register slab (machine.RegisterSlabs: consecutive warps of one CTA, or of CTAs admitted one after
    another), one slice each, or None where a warp has registers of its own."""
    cols = [w.regcol for w in warps]   # serial << 32 | column (machine.Cta): neighbours differ by one
    if None in cols:
        return None
    c0, n = cols[0], len(cols)
    if cols[-1] - c0 == n - 1 and cols == list(range(c0, c0 + n)):   # one slice: a wave's warps in order
        return [[warps[0].cta.regbase, c0 & 0xFFFFFFFF, (c0 & 0xFFFFFFFF) + n, 0]]
    runs = []
    prev = -2
    for k, c in enumerate(cols):
        if c == prev + 1:
            runs[-1][2] += 1
        else:
            runs.append([warps[k].cta.regbase, c & 0xFFFFFFFF, (c & 0xFFFFFFFF) + 1, k])
        prev = c
    return runs


_LANES = np.arange(32, dtype=np.int64)


def thread_ids(warps) -> np.ndarray:
    """(warps, 32) int64: each lane's linear thread index in its CTA (machine.Warp.tid), for a gang at once."""
    return np.array([W.index for W in warps], np.int64)[:, None] * 32 + _LANES


def _column_order(warps):
    """The order of warps by their register columns where that makes fewer slices than theirs (a warp-specialised
    wave's CTAs, whose warps lie warp index by warp index: machine.RegisterSlabs), else None."""
    cols = [w.regcol for w in warps]
    if None in cols:
        return None
    n = len(cols)
    srt = sorted(cols)
    if srt == cols:
        return None
    runs = 1 + sum(1 for a, b in zip(srt, srt[1:]) if b != a + 1)
    if runs >= 1 + sum(1 for a, b in zip(cols, cols[1:]) if b != a + 1):
        return None
    return sorted(range(n), key=cols.__getitem__)


class Batch:
    """A gang's registers as (registers, warps, 32) arrays: the `W` a private instruction's semantics run on."""
    full = True
    lane_pc = None

    def __init__(self, warps, touched, runs=None, copy=False):
        self.warps = warps
        # wgmma results these registers wait for (a kernel without wgmma asks no warp)
        if 32 in touched and warps[0].prog.wgmma_slots and any(w.deferred for w in warps):
            idx = set(touched[32].tolist())
            if not idx.isdisjoint(wgmma_r32(warps[0].prog)):
                settle_warps(warps, idx)
        nb = len(warps)
        self.runs = runs or _runs(warps)   # (runs: _runs(warps), where the caller has them)
        # one slice: the registers themselves (copy: a copy all the same, kept only by store: cp_async's issue runs)
        self.view = self.runs is not None and len(self.runs) == 1 and not copy
        self.slabs = None   # slab_runs(runs), made once where the batch copies (_by_slab)
        for cls, idx in touched.items():
            attr = CLASS_ATTR[cls]
            if self.view:
                files, k0, k1, _ = self.runs[0]
                setattr(self, attr, files[attr][:, k0:k1])
                continue
            first = getattr(warps[0], attr)
            arr = scratch(warps[0].cta.launch.scratch, (first.shape[0], nb, 32), first.dtype)
            if self.runs is None:
                arr[idx] = np.stack([getattr(w, attr)[idx] for w in warps], axis=1)
            elif idx.size:
                for files, rows in self._by_slab():
                    move(files[attr], idx, rows, arr, True)
            setattr(self, attr, arr)
        self.live = np.ones((nb, 32), bool)
        self.wgmma_dirty = set()

    def _by_slab(self):
        if self.slabs is None:
            self.slabs = slab_runs(self.runs)
        return self.slabs

    @property
    def wgmma_pending(self):
        """The warps' in-flight wgmmas' register sets (wrappers.hazard_checked asks: a stretch touching them), made
        once a batch: what a batch runs issues and retires no wgmma (a stretch of 64 mov.f32 into a wave's
        accumulators had merged the warps' sets at each)."""
        pend = self.__dict__.get("_pending")
        if pend is None:
            pend = self._pending = {}
            for w in self.warps:
                pend.update(w.wgmma_pending)
        return pend

    def special(self, name: str) -> np.ndarray:
        """(warps, 32) values of a special register (machine.Cta.special): %ctaid and %tid for all warps at once
        (a gang of one-warp CTAs reads them once a warp: no per-warp cache helps), others warp by warp."""
        if name[-2:-1] == "." and name[:-2] in ("%ctaid", "%tid"):
            axis = "xyz".index(name[-1])
            ws = self.warps
            if name[1] == "c":   # the same in every lane of a warp
                return np.repeat(np.array([w.cta.ctaid[axis] for w in ws], np.int64)[:, None], 32, axis=1)
            bx, by, _ = ws[0].cta.launch.block
            t = thread_ids(ws)   # (a stack of the warps' rows had cost ~90 us a gang of 140 one-warp CTAs)
            return (t % bx, (t // bx) % by, t // (bx * by))[axis]
        return np.stack([w.special(name) for w in self.warps])

    def active(self, m):
        return self.live if m is None else m

    def store(self, written):
        for cls, idx in written.items():
            if self.view:
                continue
            attr = CLASS_ATTR[cls]
            arr = getattr(self, attr)
            if self.runs is None:
                for k, w in enumerate(self.warps):
                    getattr(w, attr)[idx] = arr[idx, k]
            elif idx.size:
                for files, rows in self._by_slab():
                    move(files[attr], idx, rows, arr, False)
        if self.wgmma_dirty:
            for w in self.warps:
                w.wgmma_dirty |= self.wgmma_dirty


def stretch(gang, pc: int, m=None) -> int:
    """Run the private stretch at pc over the gang as one batch; the warp instructions run. On an exception
    the stretch stops before the instruction that raised it, each warp there, and the warps run it on their
    own (which names the warp in the error).

    m: the lanes the warps run on (None: every lane; or one mask for all, or (warps, 32): step_of's); a diverged
    warp's lanes stop where its other lanes stand, to run on with them."""
    prog = gang[0].prog
    end = int(prog.lockstep_end[pc])
    if m is not None:
        if m.ndim == 1:
            m = np.repeat(m[None], len(gang), axis=0)
        for w, mw in zip(gang, m):
            if w.lane_pc is not None:
                rest = w.lane_pc[w.live & ~mw]
                rest = rest[rest > pc]
                if rest.size:
                    end = min(end, int(rest.min()))
    touched, written = prog.lockstep_regs[pc]
    order = _column_order(gang)
    if order is not None:   # (private: the warps' order is no one's to see)
        gang = [gang[k] for k in order]
        if m is not None:
            m = m[order]
    B = Batch(gang, touched)
    code = prog.code
    at = pc
    try:
        while at < end:
            r = code[at](B, m)
            if r is not None:   # private semantics only fall through
                raise PtxError(prog.instrs[at].opcode, "a private instruction returned a control value")
            at += 1
    except TcemuError:   # re-raised by the warps' own run of this instruction, which names the warp
        pass
    except Exception:   # an op the batch cannot run: the warps run it on their own (TCEMU_LOCKSTEP=force: a bug)
        if FORCE:
            raise
    B.store(written)
    for k, w in enumerate(gang):
        if w.lane_pc is None:
            w.pc = at
        elif at > pc:
            lanes_moved(w, w.lane_pc, m[k], pc, at)
        w.executed += at - pc
    return (at - pc) * len(gang)


def eligible(w) -> bool:
    return not w.done and w.lane_pc is None and w.full and not w.parked_test


def masked(w) -> bool:
    """A warp that runs on some of its lanes: diverged (lane_pc), or converged with lanes exited or never there."""
    return not w.done and not w.parked_test and (w.lane_pc is not None or not w.full)


def step_of(w):
    """(pc, lanes) of a warp's next instruction, lanes None for every lane of a full converged warp (W.live itself
    for a converged partial one: ops tell converged calls by it). A diverged warp runs its lowest PC first, but
    lanes at a warp-synchronous instruction wait while others can run, and where every lane waits a call's ret goes
    first (machine.Warp.run)."""
    if w.lane_pc is None:
        return w.pc, (None if w.full else w.live)
    live = w.live
    pcs = w.lane_pc
    at = pcs[live]
    pc = int(at.min())
    prog = w.prog
    if prog.converge[pc]:  # lanes at a warp-synchronous instruction wait for those still running
        free = at[~prog.converge[at]]
        if free.size:
            pc = int(free.min())
        else:   # every lane waits: a call's ret first (its lanes return and may join the rest)
            rets = at[prog.callee_ret[at]]
            if rets.size:
                pc = int(rets.min())
    return pc, live & (pcs == pc)


def lanes_moved(w, pcs, m, pc: int, r) -> None:
    """A diverged warp's lanes m ran pc (pcs: its lane_pc then) and got r (not BLOCK): where they go; lanes that
    all stand at one PC again run converged."""
    if r is None:
        pcs[m] = pc + 1
    elif r.__class__ is int:
        pcs[m] = r
    if not w.done and w.lane_pc is not None:
        rest = w.lane_pc[w.live]
        if rest.size and (rest == rest[0]).all():
            w.pc = int(rest[0])
            w.lane_pc = None


def run_lowest(w, pcs, pc: int, m, budget: int):
    """Run a diverged warp's lanes m, which step_of chose at pc, on while step_of would choose them again (their
    PC below every other live lane's and not warp-synchronous): what one step_of and lanes_moved an instruction
    would do, without asking the lanes each time. pcs: the warp's lane_pc. (instructions run, whether the last one
    tried blocked)."""
    rest = pcs[w.live & ~m]
    hi = int(rest.min()) if rest.size else -1   # (no other lane: one step; lanes_moved converges the warp)
    code, sync = w.prog.code, w.prog.converge
    n = 0
    while True:
        r = code[pc](w, m)
        if r is BLOCK:
            return n, True
        n += 1
        w.wait = None
        if r is None:
            nxt = pc + 1
        elif r.__class__ is int:
            nxt = r
        else:   # DIVERGED / EXITED: the op set the lanes' PCs or ended them
            lanes_moved(w, pcs, m, pc, r)
            return n, False
        if n >= budget or nxt >= hi or sync[nxt] or w.done or w.lane_pc is not pcs:
            lanes_moved(w, pcs, m, pc, r)
            return n, False
        pcs[m] = nxt   # (ops read lane_pc: a ret's frames, the racecheck's diverged writes)
        pc = nxt


def _advance(w, r, pc: int) -> None:
    """A warp ran the instruction at pc and it returned r (not BLOCK): next instruction, a jump, or the warp's own
    per-lane PCs (DIVERGED / EXITED: the op set them)."""
    if r is None:
        w.pc = pc + 1
    elif r.__class__ is int:
        w.pc = r
    w.wait = None
    w.executed += 1


def _moved(w, pcs, m, pc: int, r) -> None:
    """_advance for a warp that ran on lanes m (pcs: its lane_pc before, None where it ran converged)."""
    if pcs is None:
        _advance(w, r, pc)
    else:
        lanes_moved(w, pcs, m, pc, r)
        w.wait = None
        w.executed += 1


def _step(g, pc: int, masks, log):
    """Run the instruction at pc (not private) for the gang's warps, each on its lanes (masks[k]; masks None:
    every lane of full warps): its gang version once for all where it has one (for masked lanes: one that takes
    them, op.gang.masked, and more than one warp of a CTA, since it works CTA by CTA, unless masked is "any": it
    goes warp by warp itself), else warp by warp, those that block tried again once the others ran it. (the warps
    that ran it, whether all went on to one PC)."""
    code = g[0].prog.code
    op = code[pc]
    pcs = [w.lane_pc for w in g]
    ms = [None] * len(g) if masks is None else masks
    moved = []
    pending = list(range(len(g)))
    gang_op = getattr(op, "gang", None) if GANG_OPS else None
    if gang_op is not None and (masks is None or getattr(gang_op, "masked", False) and
                                (gang_op.masked == "any" or len({id(w.cta) for w in g}) < len(g))):
        if log is not None:
            log.running = g[0]
        try:
            out = gang_op(list(zip(g, ms)))
        except Fallback:
            pass
        else:
            if masks is None and (out is None or (out.count(out[0]) == len(out) and
                                                  (out[0] is None or out[0].__class__ is int))):
                nxt = pc + 1 if out is None or out[0] is None else out[0]
                for w in g:   # every warp falls through or jumps to one place: the gang stays whole
                    w.pc = nxt
                    w.wait = None
                    w.executed += 1
                return g, True
            for k, r in enumerate([None] * len(g) if out is None else out):   # each warp's control value
                if r is not BLOCK:
                    _moved(g[k], pcs[k], ms[k], pc, r)
                    moved.append(g[k])
            pending = ()
    for _ in range(MAX_PASSES if pending else 0):
        blocked = []
        for k in pending:
            w = g[k]
            if log is not None:
                log.running = w
            try:
                r = op(w, ms[k])
            except KernelFault as e:
                raise w.named(e) from None
            if r is BLOCK:
                blocked.append(k)
                continue
            _moved(w, pcs[k], ms[k], pc, r)
            moved.append(w)
        if not blocked or len(blocked) == len(pending):
            break
        pending = blocked
    return moved, False


def run(gang, budget: int, log=None) -> int:
    """Run the warps of `gang` (eligible, at one PC) in lock-step until none run together any more or `budget`
    warp instructions have run; the number run."""
    prog = gang[0].prog
    end = prog.lockstep_end
    code = prog.code
    n = 0
    queue = [gang]
    while queue and n < budget:
        g = queue.pop()
        while len(g) > 1 and n < budget:
            pc = g[0].pc
            if end[pc] > pc:
                k = stretch(g, pc)
                n += k
                if g[0].pc < end[pc]:    # an exception: the warps run that instruction on their own
                    return n
                continue
            fuse = getattr(code[pc], "fuse", None) if GANG_OPS else None
            if fuse is not None:   # a run of one kind of instruction as one step (ops/runs.py)
                k = fuse.run(g, pc, log)
                if k:
                    n += k
                    continue
            moved, whole = _step(g, pc, None, log)
            n += len(moved)
            if whole:
                continue
            by_pc = {}
            moved = set(moved)   # (a list's `in` made this loop quadratic: 0.7 s for a gang of 4,096 warps)
            for w in g:   # the gang's order stays the order the warps were listed in (CTA by CTA, warp by warp)
                if w in moved and eligible(w):
                    by_pc.setdefault(w.pc, []).append(w)
            groups = [x for x in by_pc.values() if len(x) > 1]
            if not groups:
                break
            g = groups.pop(0)          # the group of the earliest warp goes on; the others after it
            queue.extend(reversed(groups))
    return n


ALONE_STEPS = 64   # steps run_any lets one warp of its gang take alone in a row (a loop the others wait out)
MASKED_BATCH = 8   # warp instructions a masked stretch must hold to run as a batch (gathering the lanes costs)


def run_any(gang, budget: int, log=None) -> int:
    """Run warps that may stand at different PCs, on all or some of their lanes, as one: like a warp's lanes
    (machine.Warp.run), the warps at the lowest PC go first, together (each on its lanes: step_of), so warps that a
    branch sent different ways meet again where the paths join. A warp that blocks leaves; it ends when fewer than
    two warps are left, after `budget` warp instructions (the number run), or when one warp has run alone
    ALONE_STEPS steps in a row. Private stretches run as one batch (stretch; short ones of masked warps, under
    MASKED_BATCH warp instructions, warp by warp), other instructions as _step runs them.

    Where the gang has one warp a CTA (the producer warps of a wave's CTAs), the instructions with gang versions run
    warp by warp (_step: the gang versions work CTA by CTA); its private stretches run as one batch."""
    prog = gang[0].prog
    end = prog.lockstep_end
    n = 0
    alone = 0
    live = list(gang)
    known = {}   # warp -> (instructions it had run, step_of then): a warp's next step changes only as it runs

    def next_step(w):
        got = known.get(w)
        if got is None or got[0] != w.executed:
            got = known[w] = (w.executed, step_of(w))
        return got[1]
    while n < budget:
        live = [w for w in live if not w.done and not w.parked_test]
        if len(live) < 2:
            break
        steps = [next_step(w) for w in live]   # (a gang of 4,096 one-warp CTAs: only the last step's warps anew)
        low = min(pc for pc, _ in steps)
        at = [k for k, (pc, _) in enumerate(steps) if pc == low]
        g = [live[k] for k in at]
        alone = alone + 1 if len(g) == 1 else 0
        if alone > ALONE_STEPS:
            break
        full = all(steps[k][1] is None for k in at)
        masks = None if full else [live[k].live if steps[k][1] is None else steps[k][1] for k in at]
        if end[low] > low and (full or len(g) * (end[low] - low) >= MASKED_BATCH):
            n += stretch(g, low, None if full else np.stack(masks))
            if any(next_step(w)[0] == low for w in g if not w.done):   # an exception: their own runs next
                break
            continue
        moved, _ = _step(g, low, masks, log)
        n += len(moved)
        if len(moved) < len(g):
            ran = set(moved)
            gone = {id(w) for w in g if w not in ran}   # blocked here: they leave
            live = [w for w in live if id(w) not in gone]
    return n
