"""ptxas's multiply-add contraction: which `add`/`sub` instructions run as one fused multiply-add.

PTX ISA 9.7.3.1 (add, sub, mul): "mul/add sequences with no rounding modifiers may be optimized to use
fused-multiply-add instructions on the target device". ptxas 13.0 does so for sm_90a (read from its SASS,
tests/test_ptx_contract.py compiles each case with ptxas when it is on PATH):
- a `mul` and an `add`/`sub` of the same type (f32, f64, f16, bf16, f16x2, bf16x2), neither with a rounding
  modifier, both with or without .ftz, in one basic block, neither guarded, fuse into FFMA / DFMA / HFMA2 (the
  add's .sat carried);
- only when every read of the product is such an add/sub (a product also stored, compared or fed to an fma
  stays a separate FMUL), and not when one add reads it twice (x*y + x*y);
- an add of two such products fuses its first operand; sub a*b - c is fma(a, b, -c), c - a*b is
  fma(-a, b, c).
tcemu fuses only where the product's sources are not rewritten between the mul and the add (ptxas would
still fuse there, using the old values; generated PTX does not do this).
"""
from collections import defaultdict

from . import parser as P

_TYPES = ("f32", "f64", "f16", "bf16", "f16x2", "bf16x2")


def _plain(ins, ops):
    """(type, ftz, sat) of an unguarded float add/sub/mul with no rounding modifier, else None."""
    parts = ins.parts
    if ins.guard is not None or parts[0] not in ops or parts[-1] not in _TYPES:
        return None
    mods = set(parts[1:-1])
    if mods - {"ftz", "sat"} or ("sat" in mods and parts[0] == "mul"):
        return None
    return parts[-1], "ftz" in mods, "sat" in mods


def _regs(op):
    """Every register an operand reads (through vectors, addresses, pairs, negations)."""
    if isinstance(op, P.Reg):
        yield op.name
    elif isinstance(op, P.Vec):
        for item in op.items:
            yield from _regs(item)
    elif isinstance(op, P.Addr):
        yield from _regs(op.base)
        if op.vec is not None:
            yield from _regs(op.vec)
    elif isinstance(op, P.Pair):
        yield from _regs(op.first)
        yield from _regs(op.second)
    elif isinstance(op, P.Not):
        yield from _regs(op.item)


def contractions(instrs, leaders):
    """{pc of an add/sub: (pc of the fused mul, operand index 1 or 2 of the add that the product is)}.
    `leaders`: the pcs that start a basic block (branch targets)."""
    appear = defaultdict(int)        # register -> operand slots naming it, anywhere
    writes = defaultdict(list)       # register -> pcs writing it (as destination operand 0)
    for pc, ins in enumerate(instrs):
        for k, op in enumerate(ins.operands):
            for r in _regs(op):
                appear[r] += 1
            if k == 0 and isinstance(op, P.Reg):
                writes[op.name].append(pc)
        if ins.guard is not None:
            appear[ins.guard[0]] += 1
    block = []
    b = 0
    for pc, ins in enumerate(instrs):
        if pc in leaders and pc:
            b += 1
        block.append(b)
        if ins.parts[0] in ("bra", "ret", "exit", "call", "brx"):
            b += 1
    muls = {}                        # product register -> (pc, type, ftz, source registers)
    for pc, ins in enumerate(instrs):
        form = _plain(ins, ("mul",))
        if form and len(ins.operands) == 3 and isinstance(ins.operands[0], P.Reg):
            dst = ins.operands[0].name
            if writes[dst] == [pc]:
                muls[dst] = (pc, form[0], form[1], {r for op in ins.operands[1:] for r in _regs(op)})
    candidates = defaultdict(list)   # product -> [(add pc, operand index)]
    for pc, ins in enumerate(instrs):
        form = _plain(ins, ("add", "sub"))
        if not form or len(ins.operands) != 3:
            continue
        a, c = ins.operands[1], ins.operands[2]
        names = [o.name if isinstance(o, P.Reg) else None for o in (a, c)]
        if names[0] is not None and names[0] == names[1]:
            continue
        for k, name in enumerate(names, start=1):
            m = muls.get(name)
            if m and m[1] == form[0] and m[2] == form[1] and block[m[0]] == block[pc] and m[0] < pc and \
                    not any(m[0] < w < pc for r in m[3] for w in writes[r]):
                candidates[name].append((pc, k))
    out = {}
    for name, uses in candidates.items():
        if len(uses) != appear[name] - 1:   # some read of the product is not a fusable add/sub
            continue
        for pc, k in uses:
            if pc in out and out[pc][1] == 1:   # the first operand's product fuses first
                continue
            out[pc] = (muls[name][0], k)
    return out
