"""A parsed function compiled for execution: register slots, symbol addresses, one callable per instruction.

Registers live in per-warp arrays of shape (count, 32), one per width class (pred, 8, 16, 32, 64 bits);
an operand becomes a getter `f(W) -> (32,) array of raw bits` and a destination a setter
`f(W, bits, m)` that writes the lanes of mask `m` (None: all 32). Instruction semantics come from the
opcode table in `ops/`; each entry turns an Instruction into `op(W, m) -> control` (see machine.py).
"""
import dataclasses
import struct
from functools import cached_property
from typing import Callable, Dict, List, NamedTuple, Optional

import numpy as np

from . import callgraph, contract
from . import parser as P
from .errors import PtxLimit, PtxSyntaxError, PtxUnsupported
from .memory import SMEM_RESERVED
from .optable import Columns
from .types import CONTAINER, MASKS, PtxType, ptx_type, resize

CLASS_ATTR = {1: "rp", 8: "r8", 16: "r16", 32: "r32", 64: "r64"}


class Slot(NamedTuple):
    cls: int    # 1 (pred), 8, 16, 32, 64
    index: int


class Symbol(NamedTuple):
    space: str  # shared, param, local, global, const, func, label
    address: int
    size: int


class Program:
    """One compiled .entry (or .func) of a module."""

    def __init__(self, fn: P.Function, module_symbols: Dict[str, Symbol], module_shared=(), functions=None,
                 address_taken=frozenset()):
        self.fn = fn
        self.module_shared = list(module_shared)
        self.name = fn.name
        self.functions = {fn.name: fn}
        self.segments = {fn.name: 0}   # where each merged function's code starts
        self.ret_pcs = {}              # callee name -> pcs of its ret instructions
        self.instrs: List[P.Instruction] = list(fn.body)
        self.function_at = {s.address: n for n, s in module_symbols.items() if s.space == "func"}
        self._merge_callees(functions or {}, set(address_taken))
        self.slots: Dict[str, Slot] = {}
        self.nregs = {c: 0 for c in CLASS_ATTR}
        self.symbols: Dict[str, Symbol] = dict(module_symbols)
        self.wgmma_slots = set()    # registers some wgmma reads or writes (hazard tracking)
        self._canonical = {}
        self.param_size = 0
        self.shared_static = 0      # bytes of .shared variables (static), from SMEM_RESERVED
        self.extern_shared = []     # names of dynamic (.extern) shared arrays
        self.extern_align = 16
        self.local_size = 0
        self._layout()
        self.code: List[Callable] = []
        # per pc (plus the fell-off slot): the op table's columns; does the instruction wait for the other lanes
        # of its warp?
        self.table = Columns(self.instrs)
        self.converge = self.table.warp_sync
        # per pc: a called function's ret (a diverged warp whose lanes all wait runs these first: machine.py)
        self.callee_ret = np.zeros(len(self.instrs) + 1, bool)
        for pcs in self.ret_pcs.values():
            self.callee_ret[pcs] = True

    @cached_property
    def contractions(self):
        """ptxas's mul + add/sub fusions (tcemu.ptx.contract): {add pc: (mul pc, operand index)}."""
        leaders = {self.segments[name] + pc for name, f in self.functions.items() for pc in f.labels.values()}
        leaders |= set(self.segments.values())
        return contract.contractions(self.instrs, leaders)

    # -- calls: each .func the kernel may call is appended once, its names prefixed with "name::"
    def _merge_callees(self, functions, taken):
        order, edges = [], {}

        def visit(f):
            edges[f.name] = callgraph.callees(f, functions, taken)
            for target in edges[f.name]:
                if target not in self.functions:
                    self.functions[target] = functions[target]
                    order.append(functions[target])
                    visit(functions[target])
        visit(self.fn)
        self.recursive = callgraph.on_cycles(edges)   # activations that can nest: saved around calls
        self.merged = {}
        for callee in order:
            self.segments[callee.name] = len(self.instrs)
            own = self._callee_names(callee)
            self.merged[callee.name] = own
            rets = []
            for ins in callee.body:
                copy = rename(ins, callee.name, own)
                if copy.opcode.split(".")[0] == "ret":
                    rets.append(len(self.instrs))
                self.instrs.append(copy)
            self.ret_pcs[callee.name] = rets

    @staticmethod
    def _callee_names(callee):
        return set(callee.regs) | {v.name for v in callee.params + callee.returns + callee.locals}

    # -- layout of registers and variables
    def _layout(self):
        regs = dict(self.fn.regs)
        for name, f in self.functions.items():
            if f is not self.fn:
                regs.update({f"{name}::{r}": t for r, t in f.regs.items()})
        self.reg_types = regs   # declared type of each register (strict.py checks operands against it)
        if len(regs) > P.MAX_REGS_PER_FUNCTION:  # each function is held to it by the parser; with its callees
            raise PtxLimit(self.name, f"{len(regs):,} registers with its called functions; tcemu allows at most "
                                      f"{P.MAX_REGS_PER_FUNCTION:,} (tcemu.ptx.parser.MAX_REGS_PER_FUNCTION)")
        for name, typ in regs.items():
            t = ptx_type(typ, "register type")
            cls = 1 if t.bits == 1 else (t.bits if t.bits in (8, 16, 32, 64) else None)
            if cls is None:
                raise PtxUnsupported(f".reg .{typ}", "registers of this width are not modelled")
            self.slots[name] = Slot(cls, self.nregs[cls])
            self.nregs[cls] += 1
        off = 0
        for p in self.fn.params:
            align = max(p.align, min(8, max(1, ptx_type(p.type).bits // 8)))
            off = (off + align - 1) // align * align
            self.symbols[p.name] = Symbol("param", off, p.size)
            off += p.size
        self.param_size = off
        shared = [v for v in self.fn.locals if v.space == "shared"] + \
                 [v for v in self.module_shared if v.space == "shared"]
        addr = SMEM_RESERVED
        for v in shared:
            if v.extern or v.count == 0:
                self.extern_shared.append(v.name)
                self.extern_align = max(self.extern_align, v.align or 16)
                continue
            align = max(v.align, 1)
            addr = (addr + align - 1) // align * align
            self.symbols[v.name] = Symbol("shared", addr, v.size)
            addr += v.size
        self.shared_static = addr - SMEM_RESERVED
        # per-thread frame: .local variables, and the .param variables of call sequences and of called
        # functions (parameters and return values live per thread; a kernel's own parameters do not)
        local = 0
        frame = [(v.name, v) for v in self.fn.locals if v.space in ("local", "param")]
        for name, f in self.functions.items():
            if f is not self.fn:
                frame += [(f"{name}::{v.name}", v) for v in f.params + f.returns + f.locals
                          if v.space in ("local", "param")]
        sizes = {}
        for name, v in frame:  # call sequences redeclare param0... in each { } block: one slot, the largest
            natural = max(1, ptx_type(v.type).bits // 8) * v.vector  # an unaligned .param still has its type's
            sizes[name] = (max(sizes.get(name, (0, 1))[0], v.size),
                           max(sizes.get(name, (0, 1))[1], v.align or 1, min(natural, 16)))
        for name, (size, align) in sizes.items():
            local = (local + align - 1) // align * align
            self.symbols[name] = Symbol("local", local, size)
            local += size
        self.local_size = local

    def dynamic_base(self) -> int:
        a = self.extern_align
        return (SMEM_RESERVED + self.shared_static + a - 1) // a * a

    def set_dynamic_base(self):
        base = self.dynamic_base()
        for name in self.extern_shared:
            self.symbols[name] = Symbol("shared", base, 0)

    # -- labels
    def label(self, ins: P.Instruction, name: str) -> int:
        owner = ins.owner or self.name
        fn, base = self.functions[owner], self.segments[owner]
        scope = ins.scope
        while True:
            pc = fn.labels.get((scope, name))
            if pc is not None:
                return base + pc
            if scope == 0:
                break
            scope = fn.scope_parent.get(scope, 0)
        raise PtxSyntaxError(ins.line, ins.col, f"branch target {name} is not a label of {owner}")

    def canonical(self, key):
        """The program's one object equal to `key` (register sets that key per-warp dicts: wgmma_pending, deferred
        chains). Equal sets made by different instructions then match by identity; otherwise every lookup compares
        their 128-odd registers one by one (~15 us a warp and wgmma)."""
        return self._canonical.setdefault(key, key)

    # -- operands
    def slot(self, op, ins=None) -> Slot:
        if not isinstance(op, P.Reg) or op.name not in self.slots:
            where = ins if ins is not None else None
            raise PtxSyntaxError(where.line if where else 0, where.col if where else 0,
                                 f"{P.fmt(op)} is not a declared register")
        return self.slots[op.name]

    def read(self, op, t: PtxType, ins: P.Instruction) -> Callable:
        """Getter for a source operand read at type `t`: raw bits in t's container, 32 lanes."""
        if isinstance(op, P.Reg):
            s = self.slot(op, ins)
            attr, i = CLASS_ATTR[s.cls], s.index
            if s.cls == 1:
                if t.bits != 1:
                    raise PtxSyntaxError(ins.line, ins.col, f"predicate {P.fmt(op)} used as .{t.name}")
                return lambda W: getattr(W, attr)[i]
            if s.cls == t.bits or t.bits == 1:
                return lambda W: getattr(W, attr)[i]
            if s.cls > t.bits:
                dt = CONTAINER[t.bits]
                return lambda W: getattr(W, attr)[i].astype(dt)
            signed = t.signed
            return lambda W: resize(getattr(W, attr)[i], s.cls, t.bits, signed)
        if isinstance(op, (P.Imm, P.FloatLit)):
            const = np.full(32, self.immediate(op, t, ins), CONTAINER[t.bits])
            const.setflags(write=False)
            return lambda W: const
        if isinstance(op, P.Special):
            name = op.name
            dt = CONTAINER[t.bits] if t.bits != 1 else np.bool_
            return lambda W: W.special(name).astype(dt, copy=False)
        if isinstance(op, P.Sym):
            sym = self.symbols.get(op.name)
            if sym is None:
                raise PtxSyntaxError(ins.line, ins.col, f"{op.name} is not a declared name")
            if sym.space == "label":
                raise PtxUnsupported(ins.opcode, "labels as values are not supported")
            dt = CONTAINER[t.bits]
            if sym.space in ("global", "const"):  # placed per launch (Module._place_globals), after compiling
                symbols, name, off, mask = self.symbols, op.name, op.offset, MASKS[t.bits]
                return lambda W: np.full(32, (symbols[name].address + off) & mask, dt)
            const = np.full(32, (sym.address + op.offset) & MASKS[t.bits], dt)
            const.setflags(write=False)
            return lambda W: const
        if isinstance(op, P.Not):
            inner = self.read(op.item, t, ins)
            return lambda W: ~inner(W)
        raise PtxSyntaxError(ins.line, ins.col, f"operand {P.fmt(op)} cannot be read as .{t.name}")

    def immediate(self, op, t: PtxType, ins) -> int:
        if isinstance(op, P.FloatLit) or (isinstance(op, P.Imm) and op.fbits):
            if t.kind != "f" and t.kind != "b":
                raise PtxSyntaxError(ins.line, ins.col, f"float literal used as .{t.name}")
            if isinstance(op, P.FloatLit):
                value = op.value
            elif op.fbits == t.bits:
                return op.value
            else:
                value = struct.unpack("<f", struct.pack("<I", op.value))[0] if op.fbits == 32 else \
                    struct.unpack("<d", struct.pack("<Q", op.value))[0]
            if t.bits == 32:
                return struct.unpack("<I", struct.pack("<f", value))[0]
            if t.bits == 64:
                return struct.unpack("<Q", struct.pack("<d", value))[0]
            if t.bits == 16 and t.name in ("f16",):
                return int(np.array(value, np.float16).view(np.uint16))
            raise PtxUnsupported(ins.opcode, f"a float literal as .{t.name}")
        if t.bits == 1:
            return op.value != 0
        if t.kind == "f" and t.name in ("f32", "f64") and op.value != 0:
            # PTX allows integer literals for float operands only as bit patterns of the same width
            return op.value & MASKS[t.bits]
        return op.value & MASKS[t.bits]

    def write(self, op, t: PtxType, ins: P.Instruction, signed: Optional[bool] = None) -> Callable:
        """Setter for a destination: f(W, bits in t's container, m). Narrow values are zero- or sign-extended
        into a wider register (PTX 6.4.2); `_` discards."""
        if isinstance(op, P.Sink):
            return lambda W, v, m: None
        s = self.slot(op, ins)
        attr, i = CLASS_ATTR[s.cls], s.index
        if s.cls == 1:
            def setp(W, v, m):
                if m is None:
                    getattr(W, attr)[i] = v
                else:
                    np.copyto(getattr(W, attr)[i], v, where=m)
            return setp
        sign = t.signed if signed is None else signed
        if s.cls == t.bits:
            def set_(W, v, m):
                if m is None:
                    getattr(W, attr)[i] = v
                else:
                    np.copyto(getattr(W, attr)[i], v, where=m, casting="unsafe")
            return set_
        width = t.bits

        def set_resized(W, v, m):
            v = resize(v, width, s.cls, sign)
            if m is None:
                getattr(W, attr)[i] = v
            else:
                np.copyto(getattr(W, attr)[i], v, where=m, casting="unsafe")
        return set_resized

    def vector(self, op, ins) -> list:
        if isinstance(op, P.Vec):
            return list(op.items)
        return [op]


def regs_of(op) -> List:
    """The registers an operand names (vectors, addresses, pairs and negations included)."""
    if isinstance(op, P.Reg):
        return [op]
    if isinstance(op, P.Vec):
        return [r for o in op.items for r in regs_of(o)]
    if isinstance(op, P.Addr):
        return regs_of(op.base) + (regs_of(op.vec) if op.vec is not None else [])
    if isinstance(op, P.Not):
        return regs_of(op.item)
    if isinstance(op, P.Pair):
        return regs_of(op.first) + regs_of(op.second)
    return []


def call_target(ins: P.Instruction) -> Optional[str]:
    """The function a direct `call` names (`call (ret), f, (args)`, `call f, (args)`, `call f`); None for an
    indirect call through a register."""
    target = callgraph.call_parts(ins)[1]
    if isinstance(target, P.Sym):
        return target.name
    if isinstance(target, P.Reg):
        return None
    raise PtxSyntaxError(ins.line, ins.col, f"call target {P.fmt(target)} is neither a function nor a register")


def rename(ins: P.Instruction, owner: str, names) -> P.Instruction:
    """A called function's instruction with its own registers and variables prefixed "owner::"."""
    def r(op):
        if isinstance(op, P.Reg):
            base = op.name.split("@")[0].split(".")[0]
            return P.Reg(f"{owner}::{op.name}") if base in names or op.name in names else op
        if isinstance(op, P.Sym):
            return P.Sym(f"{owner}::{op.name}", op.offset) if op.name in names else op
        if isinstance(op, P.Vec):
            return P.Vec(tuple(r(o) for o in op.items))
        if isinstance(op, P.Addr):
            return P.Addr(r(op.base) if op.base is not None else None, op.offset, r(op.vec) if op.vec else None)
        if isinstance(op, P.Not):
            return P.Not(r(op.item))
        if isinstance(op, P.Pair):
            return P.Pair(r(op.first), r(op.second))
        return op
    guard = (f"{owner}::{ins.guard[0]}", ins.guard[1]) if ins.guard else None
    return dataclasses.replace(ins, operands=[r(o) for o in ins.operands], guard=guard, owner=owner)


def base_opcode(opcode: str) -> List[str]:
    return opcode.split(".")


def describe(ins: P.Instruction) -> str:
    return f"{ins.text()} ({ins.where()})"
