"""Data movement and conversion between registers: mov (incl. vector pack/unpack), cvt, cvta, isspacep
(PTX ISA 9.7.9.1, 9.7.9.21, 9.7.9.17, 9.7.9.16)."""
import numpy as np

from .. import parser as P
from ..errors import PtxSyntaxError, PtxUnsupported
from ..memory import WINDOW_SIZE, WINDOWS
from ..types import CONTAINER, MASKS, SIGNED, TYPES, resize
from .common import Mods, operands
from .convert import c_cvt_float
from .registry import register


@register("mov")
def c_mov(ins, prog, pc):
    t = Mods(ins).type()
    d, a = operands(ins, 2)
    if isinstance(d, P.Vec):  # unpack: mov.b64 {lo, hi}, x
        parts = d.items
        w = t.bits // len(parts)
        ga = prog.read(a, t, ins)
        sets = [prog.write(p, TYPES[f"b{w}"], ins) for p in parts]
        wt = CONTAINER[w]

        def unpack(W, m):
            v = ga(W).astype(np.uint64)
            for i, s in enumerate(sets):
                s(W, ((v >> np.uint64(w * i)) & np.uint64(MASKS[w])).astype(wt), m)
        return unpack
    if isinstance(a, P.Vec):  # pack: mov.b64 x, {lo, hi}
        parts = a.items
        w = t.bits // len(parts)
        gets = [prog.read(p, TYPES[f"b{w}"], ins) for p in parts]
        sd = prog.write(d, t, ins)
        ct = CONTAINER[t.bits]

        def pack(W, m):
            v = gets[0](W).astype(np.uint64)   # (32,) lanes, or (warps, 32) in a lock-step batch
            for i, g in enumerate(gets[1:], 1):
                v = v | (g(W).astype(np.uint64) << np.uint64(w * i))
            sd(W, v.astype(ct), m)
        return pack
    ga, sd = prog.read(a, t, ins), prog.write(d, t, ins)

    def op(W, m):
        sd(W, ga(W), m)
    return op


_INT_RND = ("rni", "rzi", "rmi", "rpi")
_FLT_RND = ("rn", "rz", "rm", "rp", "rna", "rs")


@register("cvt")
def c_cvt(ins, prog, pc):
    mods = Mods(ins)
    if len(mods.types) != 2:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: cvt takes a destination and a source type")
    dt, st = mods.types
    if dt.kind == "f" or st.kind == "f":
        return c_cvt_float(ins, prog, pc, mods, dt, st)
    d, a = operands(ins, 2)
    ga, sd = prog.read(a, st, ins), prog.write(d, dt, ins)
    sat = "sat" in mods
    if mods.one_of(_INT_RND + _FLT_RND):
        raise PtxSyntaxError(ins.line, ins.col, "integer-to-integer cvt takes no rounding modifier")

    lo, hi = (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1) if dt.signed else (0, (1 << dt.bits) - 1)

    def op(W, m):
        v = ga(W)
        if sat:  # clamp to the destination's range: compared in the source's own signedness, so no value wraps
            if st.signed:
                x = v.view(SIGNED[st.bits]).astype(np.int64)
                r = np.clip(x, max(lo, -(1 << 63)), min(hi, (1 << 63) - 1)).astype(np.uint64)
            else:
                x = v.astype(np.uint64)
                r = np.minimum(x, np.uint64(hi))
            sd(W, (r & np.uint64(MASKS[dt.bits])).astype(CONTAINER[dt.bits]), m)
            return
        sd(W, resize(v, st.bits, dt.bits, st.signed), m)
    return op


@register("cvta")
def c_cvta(ins, prog, pc):
    mods = Mods(ins)
    to = "to" in mods
    space = mods.one_of(("global", "shared", "local", "param", "const", "shared::cta"))
    if space is None:
        raise PtxSyntaxError(ins.line, ins.col, "cvta needs a state space")
    space = "shared" if space == "shared::cta" else space   # PTX ISA 5.1.4: .shared means .shared::cta
    if "cluster" in ins.opcode:
        raise PtxUnsupported(ins.opcode, "shared::cluster generic addresses are not modelled yet")
    t = mods.type()
    d, a = operands(ins, 2)
    ga, sd = prog.read(a, t, ins), prog.write(d, t, ins)
    base = np.uint64(WINDOWS.get(space, 0))
    ct = CONTAINER[t.bits]

    def op(W, m):
        v = ga(W).astype(np.uint64)
        sd(W, ((v - base) if to else (v + base)).astype(ct), m)
    return op


@register("isspacep")
def c_isspacep(ins, prog, pc):
    mods = Mods(ins)
    space = mods.one_of(("global", "shared", "local", "param", "const"))
    d, a = operands(ins, 2)
    ga, sd = prog.read(a, TYPES["u64"], ins), prog.write(d, TYPES["pred"], ins)

    def op(W, m):
        v = ga(W)
        inside = {s: (v >= np.uint64(b)) & (v < np.uint64(b + WINDOW_SIZE)) for s, b in WINDOWS.items()}
        if space == "global":
            r = ~np.logical_or.reduce(list(inside.values()))
        else:
            r = inside[space if space != "shared" else "shared"]
        sd(W, r, m)
    return op
