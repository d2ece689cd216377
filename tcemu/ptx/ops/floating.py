"""Floating-point instructions (PTX ISA 9.7.3, 9.7.4): the interpreter's glue to fparith's exact arithmetic.

Each form is checked once when the kernel is compiled (fparith refuses approximate forms and illegal modifier
combinations by name), then runs as one vectorised call per execution.
"""
import numpy as np

from .. import fparith
from ..errors import PtxError, PtxSyntaxError, PtxUnsupported
from ..types import TYPES
from . import Mods, operands, register

_ROUND = ("rn", "rz", "rm", "rp", "approx", "full")
_ARITY = {"add": 2, "sub": 2, "mul": 2, "fma": 3, "mad": 3, "div": 2, "min": 2, "max": 2, "copysign": 2,
          "rcp": 1, "sqrt": 1, "rsqrt": 1, "ex2": 1, "lg2": 1, "sin": 1, "cos": 1, "tanh": 1, "neg": 1, "abs": 1}


def _flags(ins, mods):
    return dict(rounding=mods.one_of(_ROUND), ftz="ftz" in mods, sat="sat" in mods, relu="relu" in mods,
                nan="NaN" in mods, xorsign_abs="xorsign" in mods)


def _checked(name, t, flags, ins):
    """Refuse a form fparith cannot model at compile time, with the instruction's line."""
    dummy = [np.zeros(1, np.dtype(f"u{max(1, t.bits // 8)}"))] * _ARITY[name]
    try:
        fparith.float_op(name, t.name, *dummy, **flags)
    except PtxUnsupported as e:
        raise PtxUnsupported(ins.opcode, f"{e.rule} ({ins.where()})") from None
    except PtxError as e:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: {e.rule}") from None


@register("fma", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "copysign")
def c_float_only(ins, prog, pc):
    return c_float_arith(ins, prog, pc)


def c_float_arith(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    name = ins.opcode.split(".")[0]
    flags = _flags(ins, mods)
    _checked(name, t, flags, ins)
    if pc in prog.contractions:
        return _fused(ins, prog, pc, t, flags)
    ops = operands(ins, _ARITY[name] + 1)
    gets = [prog.read(o, t, ins) for o in ops[1:]]
    sd = prog.write(ops[0], t, ins)
    fname = t.name
    if len(gets) == 1:
        g0 = gets[0]
        return lambda W, m: sd(W, fparith.float_op(name, fname, g0(W), **flags), m)
    if len(gets) == 2:
        g0, g1 = gets
        return lambda W, m: sd(W, fparith.float_op(name, fname, g0(W), g1(W), **flags), m)
    g0, g1, g2 = gets
    return lambda W, m: sd(W, fparith.float_op(name, fname, g0(W), g1(W), g2(W), **flags), m)


def _fused(ins, prog, pc, t, flags):
    """An add/sub ptxas fuses with the mul that feeds it (tcemu.ptx.contract): one fma, rounded once."""
    mul_pc, k = prog.contractions[pc]
    mul = prog.instrs[mul_pc]
    ga, gb = (prog.read(o, t, mul) for o in operands(mul, 3)[1:])
    ops = operands(ins, 3)
    gc = prog.read(ops[3 - k], t, ins)
    sd = prog.write(ops[0], t, ins)
    sign = np.array(1 << (t.bits - 1), np.dtype(f"u{t.bits // 8}"))
    sub = ins.parts[0] == "sub"
    neg_c, neg_a = sub and k == 1, sub and k == 2      # a*b - c = fma(a, b, -c); c - a*b = fma(-a, b, c)
    fname = t.name
    flags = dict(flags, rounding="rn")

    def run(W, m):
        a, b, c = ga(W), gb(W), gc(W)
        if neg_a:
            a = a ^ sign
        if neg_c:
            c = c ^ sign
        return sd(W, fparith.float_op("fma", fname, a, b, c, **flags), m)
    return run


def c_float_unary(ins, prog, pc):
    return c_float_arith(ins, prog, pc)


def float_compare(cmp: str, name: str, a, b, ftz: bool):
    return fparith.float_compare(cmp, name, a, b, ftz)


@register("testp")
def c_testp(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    what = mods.parts[0]
    d, a = operands(ins, 2)
    ga, sd = prog.read(a, t, ins), prog.write(d, TYPES["pred"], ins)
    return lambda W, m: sd(W, fparith.testp(what, t.name, ga(W)), m)


_ = PtxError
