"""Control flow and synchronisation: bra, brx.idx, ret/exit, trap, bar/barrier (named, with counts), fences,
shfl.sync, vote.sync, match.sync, redux.sync, activemask, elect.sync, nanosleep, setmaxnreg, griddepcontrol
(PTX ISA 9.7.12, 9.7.13).

Blocking instructions (bar.sync, ...) are re-executed until they may proceed: the first execution records
the warp's arrival in `W.sync`, later ones check whether the barrier completed.
"""
import numpy as np

from .. import fparith
from .. import parser as P
from .. import graces, races
from ..errors import HazardError, KernelFault, PtxSyntaxError, PtxUnsupported
from ..machine import BLOCK, DIVERGED
from ..types import TYPES
from .calls import c_return
from .common import (Mods, by_cta, dest_setter, each_warp, mask_array, operands, require_ptx, require_target,
                     uniform, where)
from ..signals import Fallback
from .cp_async import drain_cp_async
from ..lockstep import Batch, slots_of
from .registry import register

U32 = TYPES["u32"]
B32 = TYPES["b32"]
PRED = TYPES["pred"]
LANE = np.arange(32)
LANE64 = LANE.astype(np.uint64)


@register("bra")
def c_bra(ins, prog, pc):
    target = ins.operands[0]
    if not isinstance(target, P.Sym):
        raise PtxSyntaxError(ins.line, ins.col, "bra takes a label")
    tpc = prog.label(ins, target.name)
    guard = ins.guard
    if guard is None:
        return lambda W, m: tpc
    gp = prog.read(P.Reg(guard[0]), PRED, ins)
    neg = guard[1]
    uni = "uni" in ins.opcode

    def op(W, m):
        p = gp(W)
        if neg:
            p = ~p
        act = W.live if m is None else m
        taken = p & act
        if not taken.any():
            return None
        if (taken == act).all():
            return tpc
        if uni:
            raise HazardError(where(ins), "bra.uni taken by some executing threads and not others")
        return W.diverge(m, taken, tpc, pc)

    def gang(pairs):
        """Every warp's branch at once (lockstep.py): the target where all its live lanes take it, the next
        instruction where none does, its own run where it splits."""
        warps = [W for W, _ in pairs]
        p = np.stack([gp(W) for W in warps])
        if neg:
            p = ~p
        act = np.stack([W.live if m is None else m for W, m in pairs])
        taken = p & act
        every = (taken == act).all(axis=1)
        some = taken.any(axis=1)
        return [tpc if e else (None if not s else op(W, m)) for (W, m), e, s in zip(pairs, every.tolist(),
                                                                                    some.tolist())]
    gang.masked = True   # lanes as the masks give them (lockstep.run_any)
    op.guarded = True
    op.gang = gang
    return op


@register("brx.idx")
def c_brx(ins, prog, pc):
    idx, table = ins.operands
    targets = prog.fn.branch_targets.get(table.name)
    if targets is None:
        raise PtxSyntaxError(ins.line, ins.col, f"{table.name} is not a .branchtargets list")
    pcs = np.array([prog.label(ins, t) for t in targets], np.int64)
    gi = prog.read(idx, U32, ins)
    wh = where(ins)

    def op(W, m):
        i = gi(W).astype(np.int64)
        act = W.live if m is None else m
        if (i[act] >= pcs.size).any():
            raise KernelFault(wh, f"index {int(i[act].max())} past the {pcs.size} targets of {table.name}")
        dest = pcs[np.minimum(i, pcs.size - 1)]
        d = dest[act]
        if (d == d[0]).all():
            return int(d[0])
        if W.lane_pc is None:
            W.lane_pc = np.full(32, pc, np.int64)
        W.lane_pc[act] = dest[act]
        return DIVERGED
    return op


@register("ret", "exit")
def c_exit(ins, prog, pc):
    if ins.opcode.startswith("ret") and ins.owner:
        return c_return(ins, prog, pc)

    def op(W, m):
        r = W.exit_lanes(m)
        if W.done:
            drain_cp_async(W)
            races.flush_all(W)  # the cluster's last warp: unwritten reads no race explained
        return r

    def gang(pairs):
        """Whole warps leaving, in gang order, where none has copies in flight or racecheck state to settle (a
        grid of small CTAs: their ret at once); else warp by warp, which names the warp in a report."""
        for W, m in pairs:
            if m is not None or W.cta.races is not None or W.cp_async_groups or W.cp_async_open:
                raise Fallback
        return [W.exit_lanes(None) for W, _ in pairs]
    op.gang = gang
    return op


@register("trap", "brkpt")
def c_trap(ins, prog, pc):
    wh = where(ins)

    def op(W, m):
        raise KernelFault(wh, f"{ins.opcode} executed by threads {W.lanes(m).tolist()[:8]}")
    return op


@register("nanosleep", "pmevent", "griddepcontrol", "fence.mbarrier_init", "fence.proxy.alias",
          "fence.proxy.tensormap", "fence.op_restrict")
def c_nop(ins, prog, pc):
    return lambda W, m: None


@register("membar", "fence.sc", "fence.acq_rel", "fence.acquire", "fence.release")
def c_fence_order(ins, prog, pc):
    """A fence in a release pattern (fence; strong store) or an acquire pattern (strong load; fence), PTX memory
    consistency model: global racecheck's edges between CTAs (graces.py)."""
    parts = ins.opcode.split(".")
    rel, acq = "acquire" not in parts, "release" not in parts

    def op(W, m):
        if W.cta.launch.check_races:
            graces.on_fence(W, rel, acq)
    return op


@register("fence.proxy.async")
def c_fence_proxy_async(ins, prog, pc):
    """Generic-proxy writes of this warp's threads become visible to the async proxy (wgmma, TMA)."""
    def op(W, m):
        W.cta.shared.fence_proxy_async()
    return each_warp(op)


@register("fence")
def c_fence(ins, prog, pc):
    return c_fence_order(ins, prog, pc)


@register("setmaxnreg")
def c_setmaxnreg(ins, prog, pc):
    n = operands(ins, 1)[0]
    if not isinstance(n, P.Imm) or not (24 <= n.value <= 256 and n.value % 8 == 0):
        raise PtxSyntaxError(ins.line, ins.col, "setmaxnreg takes an immediate in [24, 256], a multiple of 8")
    return lambda W, m: None


# ------------------------------------------------------------------------------------------------ barriers

def barrier_state(cta, bid):
    B = cta.barriers.get(bid)
    if B is None:  # arrived threads, generation, thread count, reductions by generation, arrived warps,
        #            the first arrival of the generation (count, instruction, warp) for synccheck
        B = cta.barriers[bid] = [0, 0, None, {}, [], None]
    return B


def share_knowledge(warps):
    """A barrier orders everything before it: each participant learns every mbarrier phase any of them saw."""
    merged = {}
    for w in warps:
        for bar, ph in w.mbar_seen.items():
            if merged.get(bar, -1) < ph:
                merged[bar] = ph
    for w in warps:
        w.mbar_seen.update(merged)


def _complete(B):
    share_knowledge(B[4])
    B[0] = 0
    B[1] += 1
    B[4] = []
    B[5] = None


def _arrive(cta, B, warps, n, count, bid) -> int:
    """`warps` arrive at barrier B (n threads each): the count, the arrivals' clocks released into the generation
    (racecheck); the generation they arrived in."""
    gen = B[1]
    B[0] += n * len(warps)
    B[4].extend(warps)
    B[2] = count
    if len(warps) == 1:
        races.bar_arrive(warps[0], bid, gen)
    else:
        races.bar_arrive_many(warps, bid, gen)
    cta.progress = True
    return gen


def _blocked(warps, B, bid, expected):
    """`warps` wait at barrier B: what each waits on (one text for all: deadlock reports)."""
    text = f"barrier {bid} ({B[0]} of {expected} threads arrived)"
    for W in warps:
        W.wait = text
    return BLOCK


def _expected(W, count):
    if count is not None:
        return count
    return 32 * [w.done for w in W.cta.warps].count(False)  # a list's count: faster than a generator's sum


@register("bar", "barrier")
def c_bar(ins, prog, pc):
    mods = Mods(ins)
    kind = mods.one_of(("sync", "arrive", "red"))
    if kind is None:
        kind = "sync"
    aligned = ins.opcode.startswith("bar.") or "aligned" in mods
    ops = list(ins.operands)
    red_dest = red_src = red_op = None
    if kind == "red":
        red_op = mods.one_of(("popc", "and", "or"))
        red_dest = ops.pop(0)
        red_src = ops.pop(-1)
    gid = prog.read(ops[0], U32, ins) if ops else (lambda W: np.zeros(32, np.uint32))
    gcount = prog.read(ops[1], U32, ins) if len(ops) > 1 else None
    if kind == "arrive" and gcount is None:
        raise PtxSyntaxError(ins.line, ins.col, "bar.arrive needs a thread count")
    sd = prog.write(red_dest, U32 if red_op == "popc" else PRED, ins) if red_dest is not None else None
    gsrc = prog.read(red_src, PRED, ins) if red_src is not None else None
    wh = where(ins)
    key = ("bar", pc)
    bid_imm = (ops[0].value if isinstance(ops[0], P.Imm) else None) if ops else 0
    count_imm = ops[1].value if len(ops) > 1 and isinstance(ops[1], P.Imm) else None
    if bid_imm is not None and not 0 <= bid_imm < 16 or count_imm is not None and (count_imm % 32 or count_imm <= 0):
        bid_imm = None   # the warps' own runs report it

    def op(W, m):
        cta = W.cta
        rec = W.sync.get(key)
        if rec is None:
            bid = uniform(gid(W), m, "the barrier id", wh)
            if not 0 <= bid < 16:
                raise KernelFault(wh, f"barrier id {bid} is outside 0-15")
            count = uniform(gcount(W), m, "the barrier's thread count", wh) if gcount is not None else None
            if count is not None and (count % 32 or count <= 0):
                raise KernelFault(wh, f"barrier thread count {count} is not a positive multiple of 32")
            act = mask_array(m) & W.live
            synccheck = cta.launch.check_races
            if synccheck and aligned and not (act == W.live).all():
                _divergent(W, act, bid, ins, wh)
            # PTX 9.7.12.1: the barrier counts warps' arrival (counts are multiples of 32): a warp whose
            # non-exited threads all execute it adds 32, even a partial last warp or one with exited lanes
            n = 32 if aligned or (act == W.live).all() else int(act.sum())
            B = barrier_state(cta, bid)
            if synccheck:
                _same_count(W, B, bid, count, ins, wh)
            gen = _arrive(cta, B, [W], n, count, bid)
            if gsrc is not None:
                vals = gsrc(W)[act]
                part = int(vals.sum()) if red_op == "popc" else (bool(vals.all()) if red_op == "and" else bool(vals.any()))
                acc = B[3].get(gen)
                B[3][gen] = part if acc is None else (acc + part if red_op == "popc" else
                                                      (acc and part) if red_op == "and" else (acc or part))
            expected = _expected(W, count)
            if B[0] >= expected:
                _complete(B)
                return _finish(W, m, B, gen, bid)
            if kind == "arrive":
                return None
            W.sync[key] = (bid, gen)
            return _blocked([W], B, bid, expected)
        bid, gen = rec
        B = cta.barriers[bid]
        if B[1] == gen:
            expected = _expected(W, B[2])
            if B[0] >= expected:  # warps exited since: the rest complete it
                _complete(B)
            else:
                return _blocked([W], B, bid, expected)
        del W.sync[key]
        return _finish(W, m, B, gen, bid)

    def gang(pairs):
        """bar.sync / bar.arrive of whole warps, CTA by CTA (lockstep.py), with the state their runs one after
        another leave: warps that waited here pass if their generation completed; the others arrive together and
        either complete the current generation (exactly: a count the gang would overshoot falls back), when every
        one of them passes, or wait. Reductions, a register id or count and partial warps fall back."""
        if red_op is not None or bid_imm is None or (gcount is not None and count_imm is None):
            raise Fallback
        plans = []
        for cta, members in by_cta(pairs):
            warps = [W for W, m in members]
            if any(m is not None for _, m in members) or any(not W.full for W in warps):
                raise Fallback
            recs = {W: W.sync[key] for W in warps if key in W.sync}   # those waiting here: (barrier, generation)
            waiting, fresh = list(recs), [W for W in warps if W not in recs]
            B = cta.barriers.get(bid_imm)
            gens = {W: gen for W, (bid, gen) in recs.items()}
            if any(bid != bid_imm for bid, _ in recs.values()):
                raise Fallback
            if any(g == B[1] for g in gens.values()) and B[0] >= _expected(warps[0], B[2]):
                raise Fallback   # warps exited since: the single run completes it
            if fresh:
                have = B[0] if B is not None else 0
                if have + 32 * len(fresh) > _expected(fresh[0], count_imm):
                    raise Fallback
                if cta.launch.check_races and B is not None and B[5] is not None and \
                        B[5][0] != (count_imm if count_imm is not None else 32 * len(cta.warps)):
                    raise Fallback   # synccheck's count mismatch: the warps' own runs report it
            plans.append((cta, warps, waiting, fresh, gens))
        out = {}
        for cta, warps, waiting, fresh, gens in plans:
            B = barrier_state(cta, bid_imm)
            passed = {}   # generation -> the waiting warps it releases
            for W in waiting:
                if gens[W] != B[1]:   # its generation completed: it passes
                    del W.sync[key]
                    passed.setdefault(gens[W], []).append(W)
                    out[W] = None
            for g, ws in passed.items():
                _finish_many(ws, g)
            waiting = [W for W in waiting if W not in out]
            if fresh:
                if cta.launch.check_races:
                    _same_count(fresh[0], B, bid_imm, count_imm, ins, wh)
                g = _arrive(cta, B, fresh, 32, count_imm, bid_imm)
                if B[0] >= _expected(fresh[0], count_imm):
                    _complete(B)
                    for W in waiting:
                        del W.sync[key]
                    _finish_many(waiting + fresh, g)
                    for W in waiting + fresh:
                        out[W] = None
                    continue
                if kind == "arrive":
                    for W in fresh:
                        out[W] = None
                    fresh = []
                for W in fresh:
                    W.sync[key] = (bid_imm, g)
            stay = waiting + fresh
            if stay:
                _blocked(stay, B, bid_imm, _expected(stay[0], B[2]))
                for W in stay:
                    out[W] = BLOCK
        return [out[W] for W, _ in pairs]

    def _finish_many(warps, gen):
        """_finish of whole warps that waited for one generation (the gang: no reduction)."""
        if kind != "arrive" and warps:
            races.bar_acquire_many(warps, bid_imm, gen)

    def _finish(W, m, B, gen, bid):
        if kind != "arrive":  # bar.arrive releases only; the waiting forms acquire what every arrival released
            races.bar_acquire(W, bid, gen)
        if sd is not None:
            val = B[3].get(gen, 0)
            sd(W, np.full(32, val, np.uint32 if red_op == "popc" else bool), m)
        return None
    op.gang = gang
    return op


def _divergent(W, act, bid, ins, wh):
    """synccheck: an aligned barrier (bar.sync, barrier.sync.aligned) must be executed by every non-exited thread
    of the warp (PTX 9.7.12.1: "all threads in the warp"); lanes parked at another warp-synchronous instruction
    never arrive here (the machine runs a barrier's lanes only once no lane of the warp can still run towards it)."""
    rest = W.live & ~act
    pcs = sorted(set(W.lane_pc[rest].tolist())) if W.lane_pc is not None else []
    instrs = W.cta.prog.instrs
    elsewhere = "; ".join(f"lanes {np.flatnonzero(rest & (W.lane_pc == p)).tolist()} at {instrs[p].text()} "
                          f"({instrs[p].where()})" for p in pcs if p < len(instrs)) or "not executing it"
    raise HazardError(wh, f"divergent barrier: barrier {bid} reached by lanes {np.flatnonzero(act).tolist()} of "
                          f"warp {W.index} (pc {W.lane_pc[act][0] if W.lane_pc is not None else W.pc}), while its "
                          f"other live lanes are elsewhere: {elsewhere} (a __syncthreads in a branch that splits "
                          "the warp)")


def _same_count(W, B, bid, count, ins, wh):
    """synccheck: every thread of one barrier generation names the same thread count (PTX 9.7.12.1)."""
    eff = count if count is not None else 32 * len(W.cta.warps)
    if B[5] is None:
        B[5] = (eff, wh, W.index)
        return
    first, where_, warp = B[5]
    if first != eff:
        raise HazardError(wh, f"barrier {bid} thread count mismatch: warp {W.index} arrives here expecting {eff} "
                              f"threads, but warp {warp} arrived in the same generation at {where_} expecting "
                              f"{first}")


@register("barrier.cluster")
def c_barrier_cluster(ins, prog, pc):
    """barrier.cluster.arrive / .wait: all threads of the cluster's CTAs arrive, then wait for the phase."""
    mods = Mods(ins, skip=2)
    kind = mods.one_of(("arrive", "wait"))
    aligned = "aligned" in mods
    key = ("cbar", "arrival")  # shared by every barrier.cluster instruction: one arrival per phase per warp

    def arrive(W, m):
        B = W.cta.cluster_barrier
        if key in W.sync:
            raise HazardError(where(ins), "barrier.cluster.arrive twice without a barrier.cluster.wait between")
        act = mask_array(m) & W.live
        B.arrived += 32 if aligned else int(act.sum())
        B.warps.append(W)
        W.sync[key] = B.generation
        races.cluster_arrive(W, B.generation)
        W.cta.progress = True
        if B.arrived >= B.expected():
            _cluster_complete(B)

    def wait(W, m):
        B = W.cta.cluster_barrier
        gen = W.sync.get(key)
        if gen is None:
            raise HazardError(where(ins), "barrier.cluster.wait without a preceding barrier.cluster.arrive")
        if B.generation == gen and B.arrived >= B.expected():
            _cluster_complete(B)
        if B.generation > gen:
            del W.sync[key]
            races.cluster_acquire(W, gen)
            return None
        W.wait = f"barrier.cluster ({B.arrived} of {B.expected()} threads of the cluster arrived)"
        return BLOCK
    return arrive if kind == "arrive" else wait


def _cluster_complete(B):
    share_knowledge(B.warps)
    B.arrived = 0
    B.generation += 1
    B.warps = []


# ------------------------------------------------------------------------------------------------ warp-level

def _members(W, m, gmask, ins):
    """The member lanes of a .sync warp instruction, checked against the executing lanes: (executing lanes, G) with
    G[i, j] whether lane j is in lane i's group. Lanes may name different membermasks in one instruction when the
    masks split the executing lanes into groups, each lane in its own mask and each mask naming exactly the lanes
    that execute with it (cooperative groups' tiles: thread_block_tile<16> gives lanes 0-15 0x0000ffff and lanes
    16-31 0xffff0000); each group then acts as its own warp."""
    act = mask_array(m) & W.live
    masks = gmask(W).astype(np.uint32)
    wh = where(ins)
    v = masks[act]
    if v.size == 0 or (v == v[0]).all():
        mm = int(v[0]) if v.size else 0
        member = ((mm >> LANE) & 1).astype(bool)
        if (act & ~member).any():
            raise HazardError(wh, f"lanes {np.flatnonzero(act & ~member).tolist()} execute it but are not in "
                                  f"membermask {mm:#010x}")
        missing = member & ~act & W.live  # .sync waits for the non-exited lanes of membermask (PTX 9.7.9.6)
        if missing.any():
            raise HazardError(wh, f"membermask {mm:#010x} names lanes {np.flatnonzero(missing).tolist()} "
                                  "that did not reach this instruction (they run elsewhere in the warp)")
        return act, act[None, :] & act[:, None]
    named = ((masks[:, None] >> LANE.astype(np.uint32)[None, :]) & 1).astype(bool)   # lane i's mask names lane j
    G = named & act[:, None]
    if (act & ~G[LANE, LANE]).any():
        bad = int(np.flatnonzero(act & ~G[LANE, LANE])[0])
        raise HazardError(wh, f"lane {bad} executes it but is not in its own membermask {int(masks[bad]):#010x}")
    away = named & act[:, None] & ~act[None, :] & W.live[None, :]
    if away.any():
        lane, j = np.argwhere(away)[0]
        raise HazardError(wh, f"membermask {int(masks[lane]):#010x} of lane {int(lane)} names lane {int(j)}, which "
                              "did not reach this instruction (it runs elsewhere in the warp)")
    if (G & (masks[:, None] != masks[None, :])).any():
        i, j = np.argwhere(G & (masks[:, None] != masks[None, :]))[0]
        raise HazardError(wh, f"membermask must be the same in every thread of a group: lane {int(i)} names lane "
                              f"{int(j)} with {int(masks[i]):#010x}, lane {int(j)} gives {int(masks[j]):#010x}")
    return act, G


FULL_MASK = np.uint32(0xFFFFFFFF)


def _lane_bits(x) -> np.ndarray:
    """The 32-bit masks of the lanes x marks along its last axis (uint64)."""
    return np.sum(x.astype(np.uint64) << LANE64, axis=-1)


def _vote(mode, every, some):
    """vote.sync's .all / .any / .uni from whether every / some member lane's predicate holds."""
    return every if mode == "all" else some if mode == "any" else (every | ~some)


# redux.sync's integer reductions: a group's lanes along the last axis, the identity in the others
_REDUX_IDENTITY = {"add": 0, "min": 1 << 40, "max": -(1 << 40), "and": 0xFFFFFFFF, "or": 0, "xor": 0}


def _redux_int(name, v) -> np.ndarray:
    """The reduction along the last axis of int64 values v (32-bit patterns, sign-extended for .s32)."""
    if name == "add":
        r = v.sum(axis=-1)
    elif name in ("min", "max"):
        r = v.min(axis=-1) if name == "min" else v.max(axis=-1)
    else:
        r = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[name].reduce(v & 0xFFFFFFFF, axis=-1)
    return (r & 0xFFFFFFFF).astype(np.uint32)


def _whole_warps(pairs, touched, gm):
    """A gang's batch (lockstep.Batch of the registers `touched`) where every warp runs on all 32 lanes with the full
    membermask, so _members has nothing to check and one group per warp; else Fallback (the warps' own runs check
    and group their lanes)."""
    if any(m is not None or not W.full for W, m in pairs):
        raise Fallback
    B = Batch([W for W, _ in pairs], touched)
    if not (gm(B) == FULL_MASK).all():
        raise Fallback
    return B


def _checked_members(W, m, gm, ins):
    """_members, but for a gang's batch, which _whole_warps checked."""
    if m is None and getattr(W, "warps", None) is not None:
        return None, None
    return _members(W, m, gm, ins)


@register("bar.warp.sync")
def c_bar_warp_sync(ins, prog, pc):
    """__syncwarp (PTX 9.7.12.3): the membermask's lanes meet here (lanes wait at it: warp_synchronous)."""
    mask = operands(ins, 1)[0]
    gm = prog.read(mask, U32, ins)

    def op(W, m):
        _members(W, m, gm, ins)
        races.warp_sync(W)
    touched = slots_of(prog, [mask])

    def gang(pairs):
        _whole_warps(pairs, touched, gm)
        for W, _ in pairs:
            races.warp_sync(W)
    op.gang = gang
    return op


@register("shfl")
def c_shfl(ins, prog, pc):
    mods = Mods(ins)
    if "sync" not in mods:
        raise PtxUnsupported(ins.opcode, "shfl without .sync (pre-sm70) is not supported")
    mode = mods.one_of(("up", "down", "bfly", "idx"))
    d, a, b, c, mask = operands(ins, 5)
    ga, gb, gc, gm = prog.read(a, B32, ins), prog.read(b, U32, ins), prog.read(c, U32, ins), prog.read(mask, U32, ins)
    put = dest_setter(prog, d, ins, B32)

    def op(W, m):
        _checked_members(W, m, gm, ins)
        bval = gb(W) & np.uint32(31)
        cv = gc(W)
        cval = (cv & np.uint32(31)).astype(np.int64)
        seg = ((cv >> np.uint32(8)) & np.uint32(31)).astype(np.int64)
        lane = LANE
        bv = bval.astype(np.int64)
        max_lane = (lane & seg) | (cval & ~seg)
        min_lane = lane & seg
        if mode == "up":
            j = lane - bv
            pval = j >= max_lane
        elif mode == "down":
            j = lane + bv
            pval = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bv
            pval = j <= max_lane
        else:
            j = min_lane | (bv & ~seg)
            pval = j <= max_lane
        j = np.where(pval, j, lane)   # a source lane outside the membermask gives its register (undefined)
        src = ga(W)
        if src.ndim == 1:
            put(W, src[j], pval, m)
        else:   # a gang's batch (warps, 32)
            put(W, np.take_along_axis(src, np.broadcast_to(j, src.shape), axis=1), pval, m)

    touched = slots_of(prog, [a, b, c, mask, d])
    written = slots_of(prog, [d])

    def gang(pairs):
        """Whole warps with the full membermask (lockstep.py): every warp's shuffle as one batch; any other case
        (lanes masked or exited, other membermasks: _members' checks and groups) runs warp by warp."""
        B = _whole_warps(pairs, touched, gm)
        op(B, None)
        B.store(written)
    op.gang = gang
    return op


@register("vote")
def c_vote(ins, prog, pc):
    mods = Mods(ins)
    mode = mods.one_of(("all", "any", "uni", "ballot"))
    if "sync" not in mods:
        raise PtxUnsupported(ins.opcode, "vote without .sync is not supported")
    d, a, mask = operands(ins, 3)
    ga, gm = prog.read(a, PRED, ins), prog.read(mask, U32, ins)
    sd = prog.write(d, B32 if mode == "ballot" else PRED, ins)

    def op(W, m):
        act, G = _members(W, m, gm, ins)
        p = ga(W)
        if mode == "ballot":   # each lane: the bits of its group
            sd(W, _lane_bits(G & p[None, :]).astype(np.uint32), m)
            return
        sd(W, _vote(mode, ~(G & ~p[None, :]).any(axis=1), (G & p[None, :]).any(axis=1)), m)
    touched = slots_of(prog, [d, a, mask])
    written = slots_of(prog, [d])

    def gang(pairs):
        """Whole warps, full membermask: each warp one group, every warp's vote at once."""
        B = _whole_warps(pairs, touched, gm)
        p = np.broadcast_to(ga(B), (len(pairs), 32))
        if mode == "ballot":
            sd(B, np.repeat(_lane_bits(p).astype(np.uint32)[:, None], 32, axis=1), None)
        else:
            sd(B, np.broadcast_to(_vote(mode, p.all(axis=1, keepdims=True), p.any(axis=1, keepdims=True)),
                                  (len(pairs), 32)), None)
        B.store(written)
    op.gang = gang
    return op


@register("activemask")
def c_activemask(ins, prog, pc):
    sd = prog.write(operands(ins, 1)[0], B32, ins)

    def op(W, m):
        act = mask_array(m) & W.live
        sd(W, np.full(32, int(_lane_bits(act)), np.uint32), m)
    return op


@register("elect")
def c_elect(ins, prog, pc):
    d, mask = operands(ins, 2)
    gm = prog.read(mask, U32, ins)
    put = dest_setter(prog, d, ins, B32)

    def op(W, m):
        act, G = _members(W, m, gm, ins)
        leader = np.where(G.any(axis=1), G.argmax(axis=1), 0)   # each group's lowest lane
        put(W, leader.astype(np.uint32), LANE == leader, m)
    touched = slots_of(prog, [d, mask])
    written = slots_of(prog, [d])

    def gang(pairs):
        """Whole warps, full membermask: lane 0 leads every warp."""
        B = _whole_warps(pairs, touched, gm)
        put(B, np.zeros((len(pairs), 32), np.uint32), np.broadcast_to(LANE == 0, (len(pairs), 32)), None)
        B.store(written)
    op.gang = gang
    return op


@register("redux")
def c_redux(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    name = mods.one_of(("add", "min", "max", "and", "or", "xor"))
    if t.kind == "f":
        return _c_redux_f32(ins, prog, mods, t, name)
    if "abs" in mods or "NaN" in mods:  # ptxas: "requires '.f32' type with '.abs' modifier"
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: .abs and .NaN need the .f32 type")
    d, a, mask = operands(ins, 3)
    ga, gm, sd = prog.read(a, t, ins), prog.read(mask, U32, ins), prog.write(d, t, ins)

    def op(W, m):
        act, G = _members(W, m, gm, ins)
        v = ga(W)
        v = (v.view(np.int32) if t.signed else v).astype(np.int64)   # each lane: its group's reduction
        sd(W, _redux_int(name, np.where(G, v[None, :], _REDUX_IDENTITY[name])), m)
    touched = slots_of(prog, [d, a, mask])
    written = slots_of(prog, [d])

    def gang(pairs):
        """Whole warps, full membermask: each warp's 32 lanes one group, every warp's reduction at once."""
        B = _whole_warps(pairs, touched, gm)
        v = np.broadcast_to(ga(B), (len(pairs), 32))
        v = (v.view(np.int32) if t.signed else v).astype(np.int64)
        sd(B, np.repeat(_redux_int(name, v)[:, None], 32, axis=1), None)
        B.store(written)
    op.gang = gang
    return op


def _redux_f32_target(sm):
    return 100 <= sm[0] < 110 and sm[1] in ("a", "f")


def _c_redux_f32(ins, prog, mods, t, name):
    """redux.sync.{min,max}{.abs}{.NaN}.f32 (PTX 9.7.13.12; PTX ISA 8.6, sm_100a, the sm_100f family from 8.8):
    the min/max of the member lanes' values (|x| with .abs) under min/max.f32's rules: -0 < +0, subnormals kept,
    a NaN ignored unless every value is NaN (then the canonical NaN 0x7fffffff), any NaN gives the canonical NaN
    with .NaN. Reduced as a tree of two-input min/max (both rules are associative)."""
    extra = [p for p in mods.parts if p not in ("sync", "min", "max", "abs", "NaN", "f32")]
    if t.name != "f32" or name not in ("min", "max") or extra:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: floating-point redux is "
                                                f"redux.sync.{{min,max}}{{.abs}}{{.NaN}}.f32")
    require_target(ins, prog, "redux.f32", _redux_f32_target, "sm_100a, sm_103a or the sm_100f family")
    require_ptx(ins, prog, "redux.f32", "8.6")
    nan = "NaN" in mods
    mag = np.uint32(0x7FFFFFFF if "abs" in mods else 0xFFFFFFFF)
    # what lanes outside the reduction hold: a NaN (ignored) without .NaN, else -inf for max, +inf for min
    identity = np.uint32(0x7FFFFFFF if not nan else 0xFF800000 if name == "max" else 0x7F800000)
    d, a, mask = operands(ins, 3)
    ga, gm, sd = prog.read(a, t, ins), prog.read(mask, U32, ins), prog.write(d, t, ins)

    def op(W, m):
        act, G = _members(W, m, gm, ins)
        if not (G == G[np.flatnonzero(act)[0] if act.any() else 0]).all(axis=1)[act].all():
            raise PtxUnsupported(ins.opcode, f"redux.f32 with several membermask groups ({ins.where()})")
        v = np.where(act, ga(W) & mag, identity)
        while v.size > 1:
            v = fparith.float_op(name, "f32", v[:v.size // 2], v[v.size // 2:], nan=nan)
        sd(W, np.full(32, v[0], np.uint32), m)
    return op


@register("match")
def c_match(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    mode = mods.one_of(("any", "all"))
    d, a, mask = operands(ins, 3)
    ga, gm = prog.read(a, t, ins), prog.read(mask, U32, ins)
    put = dest_setter(prog, d, ins, B32)

    def op(W, m):
        act, G = _members(W, m, gm, ins)
        v = ga(W)
        same = (v[:, None] == v[None, :]) & G
        masks, group = _lane_bits(same), _lane_bits(G)
        if mode == "any":
            put(W, masks.astype(np.uint32), None, m)
        else:   # each group: its mask where all its lanes hold one value
            ok = ~(G & (masks[None, :] != group[:, None])).any(axis=1)
            put(W, np.where(ok, group, 0).astype(np.uint32), ok, m)
    return op
