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
from functools import lru_cache
from typing import List, NamedTuple

import numpy as np

from . import parser as P

# opcodes whose semantics read and write only registers (ops/integer.py, floating.py, data.py, convert.py)
PRIVATE = frozenset({
    "add", "sub", "mul", "mad", "div", "rem", "abs", "neg", "min", "max", "and", "or", "xor", "not", "cnot",
    "shl", "shr", "setp", "set", "selp", "slct", "mov", "cvt", "cvta", "bfe", "bfi", "prmt", "lop3", "shf",
    "popc", "clz", "brev", "bfind", "fma", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh",
    "copysign", "testp", "mul24", "mad24", "sad", "szext", "bmsk", "isspacep", "dp4a", "dp2a", "mapa"})
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


class _Opcode(NamedTuple):
    """The columns as far as the opcode alone decides them (a program has few distinct opcodes)."""
    private: bool       # before its operands' %clock reads
    warp_sync: bool     # before a called function's ret
    has_dest: bool      # given operands
    unit: str
    cta_barrier: bool
    spin_ok: bool
    ret: bool


@lru_cache(maxsize=4096)
def _opcode(opcode: str) -> _Opcode:
    parts = opcode.split(".")
    base = parts[0]
    if base == "cp":
        unit = "bulk" if "bulk" in parts else "cp.async"
    else:
        unit = base if base in ("wgmma", "tcgen05", "mbarrier") else ""
    return _Opcode(
        private=base in PRIVATE and "cc" not in parts,
        warp_sync=base in ("bar", "barrier") or "sync" in parts or "aligned" in parts,
        # multimem: ld_reduce returns the reduction; st and red write memory only (PTX 9.7.9.16)
        has_dest=parts[1:2] == ["ld_reduce"] if base == "multimem" else base not in NO_DEST,
        unit=unit,
        cta_barrier=base == "bar" and parts[1:2] != ["warp"] or base == "barrier" and parts[1:2] != ["cluster"],
        spin_ok=not (base in SPIN_BLOCKED or "async" in parts or parts[:2] == ["fence", "proxy"]
                     or (base == "bar" and parts[1:2] != ["warp"])),
        ret=base == "ret")


def private(ins: P.Instruction) -> bool:
    return _opcode(ins.opcode).private and not _reads_clock(ins.operands)


def _reads_clock(operands) -> bool:
    for o in operands:
        if o.__class__ is P.Special or o.__class__ is P.Vec:   # (most operands are neither: no generator)
            return any(s.name.startswith(CLOCKS) for s in _specials(operands))
    return False


def warp_sync(ins: P.Instruction) -> bool:
    op = _opcode(ins.opcode)
    return op.warp_sync or bool(ins.owner) and op.ret   # lanes returning from a call wait for its other lanes


def has_dest(ins: P.Instruction) -> bool:
    return bool(ins.operands) and _opcode(ins.opcode).has_dest


def unit(ins: P.Instruction) -> str:
    return _opcode(ins.opcode).unit


def cta_barrier(ins: P.Instruction) -> bool:
    return _opcode(ins.opcode).cta_barrier


def spin_ok(ins: P.Instruction) -> bool:
    return _opcode(ins.opcode).spin_ok


class Columns:
    """The table's columns over a program's instructions, one entry per PC plus one past the end (a warp that fell
    off the code: nothing of the above)."""

    def __init__(self, instrs: List[P.Instruction]):
        rows, units = [], []
        for i in instrs:
            o = _opcode(i.opcode)
            rows.append((o.private and not _reads_clock(i.operands), o.warp_sync or o.ret and bool(i.owner),
                         o.has_dest and bool(i.operands), o.cta_barrier, o.spin_ok))
            units.append(o.unit)
        cols = np.zeros((5, len(instrs) + 1), bool)
        if rows:
            cols[:, :-1] = np.array(rows, bool).T
        self.private, self.warp_sync, self.has_dest, self.cta_barrier, self.spin_ok = cols
        self.unit = np.array(units + [""], object)

    def uses(self, *units: str) -> bool:
        """Whether some instruction drives one of these asynchronous units."""
        return bool(np.isin(self.unit, units).any())
