"""Floating-point instructions (PTX ISA 9.7.3, 9.7.4) and float comparisons.

Round-to-nearest f32/f64 arithmetic is numpy's IEEE arithmetic on the raw bits; NaN results are the canonical
NaN. Forms whose exact hardware behaviour tcemu does not know are refused by name.
"""
import numpy as np

from ..errors import PtxSyntaxError, PtxUnsupported
from ..types import TYPES
from . import Mods, operands, register

_FT = {"f32": (np.float32, np.uint32, 0x7FFFFFFF), "f64": (np.float64, np.uint64, 0x7FFFFFFFFFFFFFFF)}


def _as_float(bits, name):
    if name == "f32":
        return bits.view(np.float32)
    if name == "f64":
        return bits.view(np.float64)
    if name == "f16":
        return bits.view(np.float16).astype(np.float32)
    if name == "bf16":
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    raise PtxUnsupported(f".{name}", "float type not modelled here")


def _ftz(x: np.ndarray, name: str) -> np.ndarray:
    """Flush subnormal inputs to sign-preserving zero (.ftz, PTX 9.7.3)."""
    tiny = {"f32": np.float32(1.1754944e-38), "f64": np.float64(2.2250738585072014e-308)}[name]
    return np.where(np.abs(x) < tiny, np.copysign(x.dtype.type(0), x), x)


def float_compare(cmp: str, name: str, a, b, ftz: bool):
    x, y = _as_float(a, name), _as_float(b, name)
    if ftz and name in ("f32", "f64"):
        x, y = _ftz(x, name), _ftz(y, name)
    unordered = np.isnan(x) | np.isnan(y)
    base = cmp[:-1] if cmp.endswith("u") and cmp not in ("equ",) and len(cmp) == 3 else cmp
    if cmp == "equ":
        base = "eq"
    with np.errstate(invalid="ignore"):
        if cmp == "num":
            return ~unordered
        if cmp == "nan":
            return unordered
        r = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
             "ge": np.greater_equal}[base](x, y)
    if cmp.endswith("u") and len(cmp) == 3:
        return r | unordered
    if cmp == "ne":
        return r & ~unordered
    return r


def _canon(r_bits, fl, name):
    dt, ut, nan = _FT[name]
    return np.where(np.isnan(fl), ut(nan), r_bits).astype(ut)


@register("fma")
def c_fma(ins, prog, pc):
    return c_float_arith(ins, prog, pc)


def c_float_arith(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    name = ins.opcode.split(".")[0]
    rnd = mods.one_of(("rn", "rz", "rm", "rp"))
    if t.name not in ("f32", "f64"):
        mods.unsupported(f"{name} on .{t.name} is not modelled yet")
    if rnd not in (None, "rn") or "sat" in mods or ("ftz" in mods and t.name == "f32" and name in ("fma", "mad")):
        if rnd not in (None, "rn") or "sat" in mods:
            mods.unsupported("directed rounding and .sat are not modelled yet")
    if name in ("fma", "mad") and t.name == "f32":
        mods.unsupported("f32 fma needs one exact rounding; not modelled yet")
    if name == "div" and ("approx" in mods or "full" in mods):
        mods.unsupported("div.approx / div.full results are not specified exactly")
    dt, ut, _ = _FT[t.name]
    ftz = "ftz" in mods
    ops = ins.operands
    n_in = {"fma": 3, "mad": 3}.get(name, 2)
    if len(ops) != n_in + 1:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} takes {n_in + 1} operands")
    gets = [prog.read(o, t, ins) for o in ops[1:]]
    sd = prog.write(ops[0], t, ins)
    fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "min": np.fmin, "max": np.fmax}.get(name)
    if fn is None:
        mods.unsupported(f"{name}.{t.name}")

    def op(W, m):
        xs = [g(W).view(dt) for g in gets]
        if ftz:
            xs = [_ftz(x, t.name) for x in xs]
        with np.errstate(all="ignore"):
            r = fn(*xs)
        if ftz:
            r = _ftz(r, t.name)
        sd(W, _canon(r.view(ut), r, t.name), m)
    return op


def c_float_unary(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    name = ins.opcode.split(".")[0]
    d, a = operands(ins, 2)
    ga, sd = prog.read(a, t, ins), prog.write(d, t, ins)
    if "ftz" in mods and t.name != "f32":
        mods.unsupported("ftz")
    sign = {16: 0x8000, 32: 0x80000000, 64: 1 << 63}[t.bits] if t.name not in ("f16x2", "bf16x2") else 0x80008000
    from ..types import CONTAINER
    s = CONTAINER[t.bits](sign)
    ftz = "ftz" in mods

    def op(W, m):
        v = ga(W)
        if ftz:  # subnormal inputs flush to zero first
            f = v.view(np.float32)
            v = _ftz(f, "f32").view(np.uint32)
        sd(W, (v ^ s) if name == "neg" else (v & ~s), m)
    return op


for _n in ("rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "testp", "copysign"):
    @register(_n)
    def _refuse(ins, prog, pc, _n=_n):
        raise PtxUnsupported(ins.opcode, f"{_n} is not modelled yet ({ins.where()})")

_ = TYPES
