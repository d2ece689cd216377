"""Calls in progress (PTX ISA 9.7.12.8 call, 9.7.12.10 ret): each lane's own stack of frames, the argument and
return copies, and for a function on a call-graph cycle (recursion, callgraph.py) the caller's copy of the
callee's registers and frame bytes, saved at the call and put back at its ret (registers and variables of a
merged .func are static slots, so a nested activation would clobber them)."""
from typing import NamedTuple, Optional

import numpy as np

from .. import parser as P
from ..errors import KernelFault, PtxSyntaxError
from ..machine import BLOCK, DIVERGED
from ..program import CLASS_ATTR
from .common import mask_array, where

MAX_CALL_DEPTH = 1024   # frames on one thread's call stack (the GPU's stack is finite too)


def frame_slot(prog, op, ins):
    """(offset, size) of a per-thread .param variable named by a call operand."""
    if not isinstance(op, P.Sym):
        raise PtxSyntaxError(ins.line, ins.col, f"call arguments are .param variables, got {P.fmt(op)}")
    sym = prog.symbols.get(op.name)
    if sym is None or sym.space != "local":
        raise PtxSyntaxError(ins.line, ins.col, f"{op.name} is not a .param variable of a call sequence")
    return sym.address + op.offset, sym.size


class Frame:
    """One call in progress: where its lanes resume, the return copies, the caller's frame (-1: the kernel)
    and, for a function on a call-graph cycle, the caller's copy of the callee's registers and variables."""
    __slots__ = ("ret_pc", "lanes", "owner", "rets", "copies_out", "parent", "depth", "saved", "whole")

    def __init__(self, ret_pc, lanes, plan, parent, depth, saved, whole):
        self.ret_pc, self.lanes, self.owner, self.rets = ret_pc, lanes, plan.name, plan.rets
        self.copies_out, self.parent, self.depth, self.saved = plan.copies_out, parent, depth, saved
        self.whole = whole   # the lanes were every live lane (live lanes only get fewer)


class CallStacks:
    """Each lane's call stack: its innermost frame (`top`, an id into `frames`; -1: the kernel's own code).
    Per lane, so lanes of a diverged warp can be inside different calls, or at different depths of one."""

    def __init__(self):
        self.top = np.full(32, -1, np.int64)
        self.frames = {}
        self.next = 0


def _stacks(W) -> CallStacks:
    st = getattr(W, "calls", None)
    if st is None:
        st = W.calls = CallStacks()
    return st


class Plan(NamedTuple):
    name: str
    entry: int
    rets: np.ndarray    # pcs of the callee's ret instructions
    copies_in: list     # (argument offset, parameter offset, bytes)
    copies_out: list    # (caller's return variable offset, callee's return offset, bytes)
    save: Optional[tuple]   # ({register file: slot indices}, local lo, hi): a recursive callee's own state


def _save_spec(prog, name):
    """The registers and frame bytes of merged function `name` (prefixed "name::", program.py)."""
    prefix = name + "::"
    regs = {}
    for reg, slot in prog.slots.items():
        if reg.startswith(prefix):
            regs.setdefault(CLASS_ATTR[slot.cls], []).append(slot.index)
    spans = [(s.address, s.address + s.size) for n, s in prog.symbols.items()
             if n.startswith(prefix) and s.space == "local"]
    lo, hi = (min(a for a, _ in spans), max(b for _, b in spans)) if spans else (0, 0)
    return {a: np.array(ix, np.int64) for a, ix in regs.items()}, lo, hi


def plan_call(prog, ins, name, arg_slots, ret_slots) -> Plan:
    callee = prog.functions[name]
    if len(callee.params) != len(arg_slots) or len(callee.returns) != len(ret_slots):
        raise PtxSyntaxError(ins.line, ins.col, f"{name} takes {len(callee.params)} arguments and "
                                                f"{len(callee.returns)} return values")
    params = [prog.symbols[f"{name}::{p.name}"] for p in callee.params]
    results = [prog.symbols[f"{name}::{r.name}"] for r in callee.returns]
    return Plan(name, prog.segments[name], np.array(prog.ret_pcs[name], np.int64),
                [(src, dst.address, min(size, dst.size)) for (src, size), dst in zip(arg_slots, params)],
                [(dst, src.address, min(size, src.size)) for (dst, size), src in zip(ret_slots, results)],
                _save_spec(prog, name) if name in prog.recursive else None)


def _save(W, spec):
    regs, lo, hi = spec
    return ({a: (ix, getattr(W, a)[ix]) for a, ix in regs.items()},   # fancy indexing: copies
            W.local.data[:, lo:hi].copy(), lo, hi)


def _restore(W, saved, lanes):
    regs, local, lo, hi = saved
    for a, (ix, vals) in regs.items():
        arr = getattr(W, a)
        sub = arr[ix]
        np.copyto(sub, vals, where=lanes)
        arr[ix] = sub
    W.local.data[lanes, lo:hi] = local[lanes]


def enter_call(W, act, pc, plan, wh, whole=False):
    """Push a frame for the lanes `act` (one per caller frame among them), copy the arguments in. `whole`: act
    is every live lane of a converged warp (the ret then needs fewer checks)."""
    st = _stacks(W)
    local = W.local.data
    if not st.frames:   # the kernel's own code calls: one frame
        groups = [(-1, act)]
    else:
        parents = st.top[act]
        if not parents.size:
            return pc + 1
        groups = [(int(parents[0]), act)] if (parents == parents[0]).all() else \
            [(int(p), act & (st.top == p)) for p in np.unique(parents)]
        whole = whole and len(groups) == 1
    for parent, lanes in groups:
        depth = 1 if parent < 0 else st.frames[parent].depth + 1
        if depth > MAX_CALL_DEPTH:
            raise KernelFault(wh, f"call stack overflow: the call of {plan.name} by lanes "
                                  f"{np.flatnonzero(lanes).tolist()[:8]} would be call {depth} deep (recursion too "
                                  f"deep; tcemu's stack holds {MAX_CALL_DEPTH} frames, the GPU's is finite too)")
        saved = _save(W, plan.save) if plan.save is not None else None   # before the arguments land
        for src, dst, n in plan.copies_in:
            local[lanes, dst:dst + n] = local[lanes, src:src + n]
        fid = st.next
        st.next += 1
        st.frames[fid] = Frame(pc + 1, lanes.copy(), plan, parent, depth, saved, whole)
        st.top[lanes] = fid
    return plan.entry


def c_return(ins, prog, pc):
    owner = ins.owner
    wh = where(ins)

    def op(W, m):
        st = _stacks(W)
        act = mask_array(m) & W.live
        ids = st.top[act]
        f0 = int(ids[0])
        uniform = (ids == f0).all()
        for fid in ((f0,) if uniform else np.unique(ids)):
            F = st.frames.get(int(fid))
            if F is None:
                raise KernelFault(wh, f"ret from {owner} with no matching call on this warp's stack")
            if F.owner != owner:
                raise KernelFault(wh, f"ret from {owner} inside a call of {F.owner}")
        if W.lane_pc is None:   # converged: every live lane is at this ret
            F = st.frames[f0]
            if uniform and (F.whole or not (W.live & ~F.lanes).any()):
                _pop(W, st, f0, F, W.live)
                return F.ret_pc
            W.lane_pc = np.full(32, pc, np.int64)
        # every call whose lanes have all reached a ret of its function returns now: siblings of a divergent
        # indirect call meet again after it; the others wait for their lanes still inside the function
        popped = False
        tops = st.top[W.live]
        for fid in np.unique(tops[tops >= 0]):
            fid = int(fid)
            F = st.frames[fid]
            lanes = F.lanes & W.live
            if (st.top[lanes] == fid).all() and np.isin(W.lane_pc[lanes], F.rets).all():
                _pop(W, st, fid, F, lanes)
                W.lane_pc[lanes] = F.ret_pc
                popped = True
        if not popped:
            F = st.frames[int(ids[0])]
            waiting = F.lanes & W.live & ~np.isin(W.lane_pc, F.rets)
            W.wait = f"the other lanes of the call to {owner} (lanes {np.flatnonzero(waiting).tolist()[:8]})"
            return BLOCK
        return DIVERGED
    op.guarded = False
    return op


def _pop(W, st, fid, F, lanes):
    local = W.local.data
    if F.saved is None:
        for dst, src, n in F.copies_out:
            local[lanes, dst:dst + n] = local[lanes, src:src + n]
    else:   # the callee's results, then the caller's own activation back, then the results into it
        vals = [local[lanes, src:src + n] for _, src, n in F.copies_out]
        _restore(W, F.saved, lanes)
        for (dst, _, n), v in zip(F.copies_out, vals):
            local[lanes, dst:dst + n] = v
    st.top[lanes] = F.parent
    del st.frames[fid]
