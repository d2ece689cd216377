"""The op table: what the scheduler, lock-step, the hang probes and the hazard wrappers need to know of an
instruction beyond its semantics, as columns over a program's PCs. Each column is decided from the instruction's
text alone (opcode, qualifiers, operands), in one place:

- private: reads and writes only the warp's own registers (integer and float arithmetic, mov, cvt, setp, ...): a
  gang runs a stretch of them as one batch (lockstep.py). Not %clock / %globaltimer reads (each read advances the
  CTA's clock) nor the carry forms (.cc: the carry flag is not a register tcemu batches);
- warp_sync: waits for the other lanes of its warp (.sync with a membermask, .aligned, CTA barriers, a called
  function's ret): in a diverged warp, lanes that reach it wait while other lanes run (machine.Warp.run);
- has_dest: its first operand is a destination register (wgmma register hazards, the page's register view);
- unit: the asynchronous unit it drives, or "": "cp.async" (cp.async, its groups and mbarrier arrive), "bulk"
  (cp.async.bulk / .tensor, cp.reduce.async.bulk: TMA), "wgmma", "tcgen05", "mbarrier";
- spin_ok: a proven spin cycle may execute it (hang.py): it changes no state outside the warp and the bytes a probe
  watches, and does not end or leave the loop. PTX ISA 9.7.12.1 bar / barrier, 9.7.13.15 mbarrier, 9.7.9.25
  cp.async and the bulk copies, 9.7.15 wgmma, 9.7.16 tcgen05 change such state; call, ret, exit, trap leave;
- cta_barrier: bar / barrier of the CTA (not .cluster, not bar.warp.sync): a probe of a CTA's warps together may
  pass it.

An op's own attributes (op.gang, op.refused, op.wgmma: ops/) say what only its compiled form knows."""
from typing import List

import numpy as np

from . import parser as P

# opcodes whose semantics read and write only registers (ops/integer.py, floating.py, data.py, convert.py)
PRIVATE = frozenset({
    "add", "sub", "mul", "mad", "div", "rem", "abs", "neg", "min", "max", "and", "or", "xor", "not", "cnot",
    "shl", "shr", "setp", "set", "selp", "slct", "mov", "cvt", "cvta", "bfe", "bfi", "prmt", "lop3", "shf",
    "popc", "clz", "brev", "bfind", "fma", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh",
    "copysign", "testp", "mul24", "mad24", "sad", "szext", "bmsk", "isspacep", "dp4a", "dp2a"})
CLOCKS = ("%clock", "%globaltimer")
# opcodes whose first operand is not a destination register
NO_DEST = frozenset({"st", "stmatrix", "red", "bar", "barrier", "cp", "mbarrier", "wgmma", "tcgen05", "prefetch",
                     "fence", "membar", "bra", "brx", "ret", "exit", "call", "trap", "tensormap", "griddepcontrol",
                     "setmaxnreg", "nanosleep", "prefetchu", "applypriority", "discard"})
# opcodes a proven spin cycle may not execute, besides every .async form and fence.proxy (see spin_ok)
SPIN_BLOCKED = frozenset({"call", "ret", "exit", "trap", "brkpt", "discard", "applypriority", "mbarrier", "tensormap",
                          "tcgen05", "wgmma", "barrier", "cp"})
UNITS = ("", "cp.async", "bulk", "wgmma", "tcgen05", "mbarrier")


def _specials(ops):
    for o in ops:
        if isinstance(o, P.Special):
            yield o
        elif isinstance(o, P.Vec):
            yield from _specials(o.items)


def private(ins: P.Instruction) -> bool:
    parts = ins.opcode.split(".")
    if parts[0] not in PRIVATE or "cc" in parts:
        return False
    return not any(o.name.startswith(CLOCKS) for o in _specials(ins.operands))


def warp_sync(ins: P.Instruction) -> bool:
    parts = ins.opcode.split(".")
    if ins.owner and parts[0] == "ret":   # lanes returning from a call wait for the call's other lanes
        return True
    return parts[0] in ("bar", "barrier") or "sync" in parts or "aligned" in parts


def has_dest(ins: P.Instruction) -> bool:
    parts = ins.opcode.split(".")
    if parts[0] == "multimem":   # ld_reduce returns the reduction; st and red write memory only (PTX 9.7.9.16)
        return parts[1:2] == ["ld_reduce"]
    return bool(ins.operands) and parts[0] not in NO_DEST


def unit(ins: P.Instruction) -> str:
    parts = ins.opcode.split(".")
    if parts[0] == "cp":
        return "bulk" if "bulk" in parts else "cp.async"
    return parts[0] if parts[0] in ("wgmma", "tcgen05", "mbarrier") else ""


def cta_barrier(ins: P.Instruction) -> bool:
    parts = ins.opcode.split(".")
    return parts[0] == "bar" and parts[1:2] != ["warp"] or parts[0] == "barrier" and parts[1:2] != ["cluster"]


def spin_ok(ins: P.Instruction) -> bool:
    parts = ins.opcode.split(".")
    return not (parts[0] in SPIN_BLOCKED or "async" in parts or parts[:2] == ["fence", "proxy"]
                or (parts[0] == "bar" and parts[1:2] != ["warp"]))


class Columns:
    """The table's columns over a program's instructions, one entry per PC plus one past the end (a warp that fell
    off the code: nothing of the above)."""

    def __init__(self, instrs: List[P.Instruction]):
        def col(fn, dtype=bool):
            return np.array([fn(i) for i in instrs] + [dtype()], dtype)
        self.private = col(private)
        self.warp_sync = col(warp_sync)
        self.has_dest = col(has_dest)
        self.cta_barrier = col(cta_barrier)
        self.spin_ok = col(spin_ok)
        self.unit = col(unit, object)
        self.unit[-1] = ""

    def uses(self, *units: str) -> bool:
        """Whether some instruction drives one of these asynchronous units."""
        return bool(np.isin(self.unit, units).any())
