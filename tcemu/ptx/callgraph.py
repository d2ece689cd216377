"""Indirect calls and recursion, decided before a kernel runs (PTX ISA 9.7.12.8 call, 10.3 .callprototype,
10.4 .calltargets): each function's code address, the functions whose address is taken (callable through a
register), what each function may call, and which functions sit on a call-graph cycle (their activations can
nest: ops/calls.py saves and restores their registers and frame around each call).

Function addresses lie in CODE_WINDOW, where no data lives: a load from one faults as an unmapped address."""
import zlib
from typing import Dict, Iterable, List, Optional, Set, Tuple

from . import parser as P
from .errors import PtxSyntaxError
from .memory import CODE_WINDOW

FUNC_STRIDE = 16   # bytes between two functions' addresses
SLOTS = (1 << 32) // FUNC_STRIDE   # the window's 4 GiB


def function_addresses(functions: Iterable[str]) -> Dict[str, int]:
    """Each function of the module at its own address in the code window, from a hash of its name (so a pointer
    carried from another module names no function here unless that module has one of the same name); clashes
    move to the next free slot in declaration order."""
    out, used = {}, set()
    for name in functions:
        slot = zlib.crc32(name.encode()) % SLOTS
        while slot in used:
            slot = (slot + 1) % SLOTS
        used.add(slot)
        out[name] = CODE_WINDOW + FUNC_STRIDE * slot
    return out


def is_call(ins: P.Instruction) -> bool:
    return ins.opcode.split(".", 1)[0] == "call"


def call_parts(ins: P.Instruction) -> Tuple[list, object, list, Optional[P.Sym]]:
    """(return operands, target, argument operands, prototype / target-list label) of a call:
    `call (r), f, (a)`, `call f, (a)`, `call f`, `call (r), %rd, (a), proto;` and `call %rd, proto;`."""
    ops = list(ins.operands)
    rets = list(ops.pop(0).items) if ops and isinstance(ops[0], P.Vec) else []
    if not ops:
        raise PtxSyntaxError(ins.line, ins.col, "call names no function")
    target = ops.pop(0)
    args = list(ops.pop(0).items) if ops and isinstance(ops[0], P.Vec) else []
    label = ops.pop(0) if ops and isinstance(ops[0], P.Sym) else None
    if ops:
        raise PtxSyntaxError(ins.line, ins.col, f"call: unexpected operand {P.fmt(ops[0])} after the argument list")
    return rets, target, args, label


def call_decl(fn: P.Function, scope: int, name: str) -> Optional[P.CallDecl]:
    """The .callprototype / .calltargets that label `name` declares, seen from `scope` outwards."""
    while True:
        d = fn.call_decls.get((scope, name))
        if d is not None or scope == 0:
            return d
        scope = fn.scope_parent.get(scope, 0)


def _syms(ops):
    for o in ops:
        if isinstance(o, P.Sym):
            yield o.name
        elif isinstance(o, P.Vec):
            yield from _syms(o.items)


def address_taken(functions: Dict[str, P.Function], variables: List[P.VarDecl]) -> Set[str]:
    """Functions used as values: a mov operand (`mov.u64 %rd1, f;`), an initialiser (vtables, tables of
    function pointers) or a .calltargets list."""
    taken = {x for v in variables for x in (v.init or ()) if isinstance(x, str) and x in functions}
    for f in functions.values():
        for ins in f.body:
            if not is_call(ins):
                taken.update(n for n in _syms(ins.operands) if n in functions)
        for d in f.call_decls.values():
            taken.update(d.targets)
    return {n for n in taken if n in functions}


def callees(f: P.Function, functions: Dict[str, P.Function], taken: Set[str]) -> List[str]:
    """Functions with a body that f may call, in first-call order: direct targets, and for an indirect call
    its .calltargets list or else every function whose address is taken."""
    out = []
    for ins in f.body:
        if not is_call(ins):
            continue
        ops = [o for o in ins.operands if not isinstance(o, P.Vec)]
        if not ops:
            continue
        if isinstance(ops[0], P.Sym):
            names = [ops[0].name]
        else:
            d = call_decl(f, ins.scope, ops[-1].name) if isinstance(ops[-1], P.Sym) else None
            names = d.targets if d is not None and d.kind == "calltargets" else [n for n in functions if n in taken]
        for n in names:
            g = functions.get(n)
            if g is not None and g.body and not g.entry and n not in out:
                out.append(n)
    return out


def on_cycles(edges: Dict[str, List[str]]) -> Set[str]:
    """The functions that can reach themselves through calls (direct or mutual recursion)."""
    out = set()
    for start in edges:
        seen, todo = set(), list(edges[start])
        while todo:
            n = todo.pop()
            if n == start:
                out.add(start)
                break
            if n not in seen:
                seen.add(n)
                todo.extend(edges.get(n, ()))
    return out
