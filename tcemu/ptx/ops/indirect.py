"""Indirect calls (PTX ISA 9.7.12.8 `call (r), %rd, (a), proto;`, with a 10.3 .callprototype or a 10.4
.calltargets list): function pointers and virtual functions. Each calling lane's address must be a function
of the module (callgraph.function_addresses) that the kernel can call; lanes with different targets each enter
their own function, as the paths of a divergent branch do, and meet again after the call."""
import numpy as np

from ..callgraph import call_decl
from ..errors import KernelFault, PtxSyntaxError
from ..machine import DIVERGED
from ..types import ptx_type
from .common import mask_array, where
from .frames import enter_call, frame_slot, plan_call


def _target_plan(prog, ins, name, decl, label, arg_slots, ret_slots):
    """The call of `name` through this call site, or why a lane may not call it (a KernelFault's text)."""
    f = prog.functions.get(name)
    if f is not None and f.entry:
        return f"{name} is a kernel (.entry), which no call can enter"
    if decl.kind == "calltargets" and name not in decl.targets:
        return f"{name} is not in the call's .calltargets list {label} ({', '.join(decl.targets)})"
    if f is None or name not in prog.segments:
        return f"{name} is an external function tcemu does not call through a pointer"
    if len(f.params) != len(arg_slots) or len(f.returns) != len(ret_slots):
        return (f"{name} takes {len(f.params)} arguments and {len(f.returns)} return values; the call passes "
                f"{len(arg_slots)} and {len(ret_slots)}")
    return plan_call(prog, ins, name, arg_slots, ret_slots)


def indirect_call(ins, prog, pc, rets, target, args, label):
    owner = ins.owner or prog.name
    decl = call_decl(prog.functions[owner], ins.scope, label.name) if label is not None else None
    if decl is None:
        raise PtxSyntaxError(ins.line, ins.col, f"an indirect call through {target.name} names "
                             f"{label.name if label is not None else 'no label'}; it needs a .callprototype or "
                             ".calltargets label after its arguments (PTX ISA 9.7.12.8)")
    if decl.kind == "callprototype" and (len(decl.params) != len(args) or len(decl.returns) != len(rets)):
        raise PtxSyntaxError(ins.line, ins.col, f"call through prototype {label.name}: it declares "
                                                f"{len(decl.params)} arguments and {len(decl.returns)} return "
                                                f"values, the call passes {len(args)} and {len(rets)} "
                                                "(PTX ISA 9.7.12.8)")
    ret_slots = [frame_slot(prog, r, ins) for r in rets]
    arg_slots = [frame_slot(prog, a, ins) for a in args]
    table = sorted(prog.function_at.items())
    addrs = np.array([a for a, _ in table] or [0], np.uint64)
    plans = [_target_plan(prog, ins, n, decl, label.name, arg_slots, ret_slots) for _, n in table]
    if not table:
        plans = ["the module has no functions"]
    read = prog.read(target, ptx_type("b64"), ins)
    wh = where(ins)

    def fault(W, lane, why):
        raise KernelFault(wh, f"thread {int(W.tid[lane])} calls through address {int(read(W)[lane]):#x}: {why}")

    def op(W, m):
        act = mask_array(m) & W.live
        lanes = np.flatnonzero(act)
        if not lanes.size:
            return pc + 1
        a = read(W)[act]
        i = np.minimum(np.searchsorted(addrs, a), addrs.size - 1)
        miss = addrs[i] != a
        if miss.any() or not table:
            j = int(np.flatnonzero(miss)[0]) if miss.any() else 0
            fault(W, lanes[j], "a null function pointer" if a[j] == 0 else
                  "not the address of a function of this module")
        ks = np.unique(i)
        for k in ks:
            if isinstance(plans[k], str):
                fault(W, lanes[int(np.flatnonzero(i == k)[0])], plans[k])
        if ks.size == 1:
            return enter_call(W, act, pc, plans[ks[0]], wh)
        which = np.full(32, -1, np.int64)    # lanes with different targets: one path each
        which[act] = i
        if W.lane_pc is None:
            W.lane_pc = np.full(32, pc, np.int64)
        for k in ks:
            group = which == k
            W.lane_pc[group] = enter_call(W, group, pc, plans[k], wh)
        return DIVERGED
    return op
