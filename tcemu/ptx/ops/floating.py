"""Floating-point instructions (PTX ISA 9.7.3, 9.7.4): the interpreter's glue to fparith's exact arithmetic.

Each form is checked once when the kernel is compiled (fparith refuses approximate forms and illegal modifier
combinations by name), then runs as one vectorised call per execution.
"""
import numpy as np

from .. import fparith
from .. import parser as P
from ..errors import PtxError, PtxSyntaxError, PtxUnsupported
from ..types import TYPES
from .common import Mods, operands, require_ptx, require_target
from .registry import register

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


def _sm100(sm):
    return sm[0] >= 100


def c_float_arith(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    name = ins.opcode.split(".")[0]
    if name in ("min", "max"):
        if len(ins.operands) == 4:
            return _c_minmax3(ins, prog, mods, t, name)
        if ("xorsign" in mods) != ("abs" in mods):  # ptxas: ".abs requires .xorsign" and the converse
            raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: two-input {name} takes .xorsign and .abs "
                                                    f"together or neither")
    if t.name == "f32x2" and name in ("add", "sub", "mul", "fma"):  # PTX 9.7.3.1-4: PTX ISA 8.6, sm_100+
        require_target(ins, prog, f"{name}.f32x2", _sm100, "sm_100 or higher")
        require_ptx(ins, prog, f"{name}.f32x2", "8.6")
    flags = _flags(ins, mods)
    _checked(name, t, flags, ins)
    if pc in prog.contractions:
        return _fused(ins, prog, pc, t, flags)
    ops = operands(ins, _ARITY[name] + 1)
    if t.name == "f32x2":
        for o in ops:  # ptxas: "Arguments mismatch" for 32-bit registers and immediates
            if not (isinstance(o, P.Reg) and prog.slot(o, ins).cls == 64):
                raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: .f32x2 operands are .b64 registers, "
                                                        f"got {P.fmt(o)}")
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
    sign = np.array(0x80008000 if t.name in ("f16x2", "bf16x2") else 1 << (t.bits - 1), np.dtype(f"u{t.bits // 8}"))
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


def _c_minmax3(ins, prog, mods, t, name):
    """min/max{.ftz}{.NaN}{.abs}.f32 d, a, b, c (PTX 9.7.3.11-12; PTX ISA 8.8, sm_100): .abs takes |a| |b| |c|
    first, then d = two-input(two-input(a, b), c) with the two-input form's NaN, -0 < +0 and .ftz rules."""
    feature = f"{name}.f32 with three inputs"
    require_target(ins, prog, feature, _sm100, "sm_100 or higher")
    require_ptx(ins, prog, feature, "8.8")
    extra = [p for p in mods.parts if p not in ("ftz", "NaN", "abs", "f32")]
    if t.name != "f32" or extra:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: three-input {name} is {name}{{.ftz}}{{.NaN}}{{.abs}}"
                                                f".f32 (not {', '.join('.' + p for p in extra) or '.' + t.name})")
    flags = dict(ftz="ftz" in mods, nan="NaN" in mods)
    ops = operands(ins, 4)
    ga, gb, gc = (prog.read(o, t, ins) for o in ops[1:])
    sd = prog.write(ops[0], t, ins)
    mag = np.uint32(0x7FFFFFFF if "abs" in mods else 0xFFFFFFFF)
    f = fparith.float_op

    def op(W, m):
        sd(W, f(name, "f32", f(name, "f32", ga(W) & mag, gb(W) & mag, **flags), gc(W) & mag, **flags), m)
    return op


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
