"""What every compiled instruction is wrapped in (Module._compile): its guard predicate (`@p` / `@!p`: the lanes
it runs on) and, for an instruction that names a wgmma register, the hazard rules of registers a wgmma.mma_async
still writes (ptxas serialises: C7515 / C7517) and of registers its deferred chain still owes (chains.py). Both
pass an op's gang version (lockstep.py) through."""
import warnings

import numpy as np

from . import parser as P
from .chains import settle, settle_warps
from .errors import HazardError, WgmmaSerializedWarning
from .lockstep import Batch
from .ops.common import where
from .ops.wgmma import serialize
from .optable import has_dest
from .program import Program, regs_of
from .signals import Fallback


def guarded(op, ins: P.Instruction, prog: Program):
    slot = prog.slot(P.Reg(ins.guard[0]), ins)
    i, neg = slot.index, ins.guard[1]

    def guarded(W, m):
        p = W.rp[i]
        if neg:
            p = ~p
        mm = p if m is None else (p & m)
        if not mm.any():
            return None
        if m is None and mm.all():
            mm = None
        return op(W, mm)
    guarded.wgmma = getattr(op, "wgmma", False)
    guarded.refused = getattr(op, "refused", False)
    gang = getattr(op, "gang", None)
    if gang is not None:
        def gang_guarded(pairs):
            if len(pairs) >= GUARD_BATCH:
                return _guarded_batch(gang, pairs, i, neg)
            run, at = [], []
            for k, (W, m) in enumerate(pairs):
                p = W.rp[i]
                if neg:
                    p = ~p
                mm = p if m is None else (p & m)
                if mm.any():
                    run.append((W, None if m is None and mm.all() else mm))
                    at.append(k)
            return _ran(gang, run, at, len(pairs))
        gang_guarded.masked = getattr(gang, "masked", False)
        guarded.gang = gang_guarded
    return guarded


GUARD_BATCH = 8   # gangs of at least this many warps read their guard predicate through one lockstep.Batch
_PRED = {}        # predicate slot -> the Batch's `touched` naming it


def _guarded_batch(gang, pairs, i: int, neg: bool):
    """gang_guarded for a large gang: the predicate of every warp at once, as (warps, 32) lanes (a Triton
    elementwise kernel's predicated loads and stores: one any / all a warp had cost more than the loads)."""
    touched = _PRED.get(i)
    if touched is None:
        touched = _PRED[i] = {1: np.array([i])}
    p = Batch([W for W, _ in pairs], touched).rp[i]
    if neg:
        p = ~p
    masks = [m for _, m in pairs]
    unmasked = [m is None for m in masks]
    if not all(unmasked):
        p = p & np.stack([np.ones(32, bool) if m is None else m for m in masks])
    elif p.all():   # the guard holds on every lane of every warp (a grid's inner CTAs): the gang as it is
        return gang(pairs)
    some = p.any(axis=1).tolist()
    every = p.all(axis=1).tolist()
    run, at = [], []
    for k, (W, _) in enumerate(pairs):
        if some[k]:
            run.append((W, None if unmasked[k] and every[k] else p[k]))
            at.append(k)
    return _ran(gang, run, at, len(pairs))


def _ran(gang, run, at, n: int):
    """The gang version run on the warps whose guard holds somewhere (`run`, at positions `at` of the n pairs):
    each pair's control value, None for the warps whose guard is false everywhere (they fall through)."""
    out = gang(run) if run else None
    if out is None:
        return None
    full = [None] * n
    for k, r in zip(at, out):
        full[k] = r
    return full


def hazard_checked(op, ins: P.Instruction, prog: Program):
    """Wrap an instruction that touches a wgmma register: it may not while the wgmma is in flight, and its
    writes make the register dirty until the next wgmma.fence."""
    if getattr(op, "wgmma", False) or not prog.wgmma_slots:
        return op
    refs = {prog.slots[r.name] for o in ins.operands for r in regs_of(o) if r.name in prog.slots}
    if ins.guard:
        refs.add(prog.slots[ins.guard[0]])
    touched = frozenset(refs & prog.wgmma_slots)
    if not touched:
        return op
    writes = frozenset() if not has_dest(ins) else \
        frozenset({prog.slots[r.name] for r in regs_of(ins.operands[0]) if r.name in prog.slots} & touched)
    wh = where(ins)
    touched32 = frozenset(s.index for s in touched if s.cls == 32)

    def checked(W, m):
        if getattr(W, "deferred", None):   # wgmma results the registers wait for (chains.py)
            settle(W, touched32)
        if W.wgmma_pending and any(touched & fs for fs in W.wgmma_pending):
            for s in touched:
                if any(s in fs for fs in W.wgmma_pending):
                    if getattr(W, "warps", None) is not None:   # a lock-step batch: each warp on its own
                        raise HazardError(wh, "serialized per warp")
                    how = "write wait for it (C7515: the wgmmas are serialized)" if s in writes else \
                        "read wait for it (C7517: a wgmma.wait_group is injected)"
                    name = [n for n, x in prog.slots.items() if x == s][-1].split("@")[0]   # the report only
                    text = (f"{wh}: {name} belongs to a wgmma.mma_async still in flight; ptxas makes this {how}, "
                            "so the result is the finished wgmma's; add the wgmma.wait_group to keep the pipeline")
                    warnings.warn(WgmmaSerializedWarning(text), stacklevel=2)
                    serialize(W)
                    break
        r = op(W, m)
        if writes:
            W.wgmma_dirty |= writes
        return r
    gang = getattr(op, "gang", None)
    if gang is not None:
        def checked_gang(pairs):
            if any(W.wgmma_pending and any(touched & fs for fs in W.wgmma_pending) for W, _ in pairs):
                raise Fallback   # each warp serialises (and warns) on its own
            settle_warps([W for W, _ in pairs if W.deferred], touched32)   # results the registers wait for
            out = gang(pairs)
            if writes:
                for W, _ in pairs:
                    W.wgmma_dirty |= writes
            return out
        checked_gang.masked = getattr(gang, "masked", False)
        checked.gang = checked_gang
    return checked
