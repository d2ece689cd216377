"""SIMD video instructions (PTX ISA 9.7.8.2): vadd2/4, vsub2/4, vavrg2/4, vabsdiff2/4, vmin2/4, vmax2/4 on the
halfwords (2) or bytes (4) of 32-bit registers, with the secondary merge (d's elements, .sat clamping them to the
element range) or accumulate (.add: c plus the sum of the element results). CUDA 13's __vabsdiffu2/4 and
__vsadu2/4 compile to vabsdiff2/4 (with .add for the sums of absolute differences). Modelled with the default
selectors and masks (a's elements against b's, every element of d written); other selectors and masks are refused
by name. Scalar video instructions (vadd, vmad, vset, vshl ...) are not modelled."""
import numpy as np

from .. import parser as P
from ..errors import PtxSyntaxError, PtxUnsupported
from ..types import TYPES
from .common import Mods, operands
from .registry import register

_OPS = ("vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax")


def _elements(v, n, signed):
    """(32, n) int64 elements of 32-bit words v: n halfwords (n = 2) or bytes (n = 4), sign- or zero-extended."""
    bits = 32 // n
    shifts = np.arange(n, dtype=np.uint64) * np.uint64(bits)
    e = (v.astype(np.uint64)[:, None] >> shifts) & np.uint64((1 << bits) - 1)
    e = e.astype(np.int64)
    if signed:
        e = np.where(e >= 1 << (bits - 1), e - (1 << bits), e)
    return e


@register(*(f"{o}{n}" for o in _OPS for n in (2, 4)))
def c_video_simd(ins, prog, pc):
    mods = Mods(ins)
    name = ins.opcode.split(".")[0]
    op, n = name[:-1], int(name[-1])
    types = [t.name for t in mods.types]
    if len(types) != 3 or any(t not in ("u32", "s32") for t in types):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: {name} takes .dtype.atype.btype, each .u32 or .s32")
    sat, add = "sat" in mods, "add" in mods
    if sat and add:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: .sat and .add exclude each other")
    d, a, b, c = operands(ins, 4)
    for o in (d, a, b, c):
        if isinstance(o, P.Reg) and "." in o.name.split("@")[0]:
            raise PtxUnsupported(ins.opcode, f"operand {P.fmt(o)}: element selectors and masks other than the "
                                             f"defaults are not modelled ({ins.where()})")
    u32 = TYPES["u32"]
    ga, gb, gc = (prog.read(x, u32, ins) for x in (a, b, c))
    sd = prog.write(d, u32, ins)
    dsigned, asigned, bsigned = (t == "s32" for t in types)
    bits = 32 // n
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dsigned else (0, (1 << bits) - 1)

    def op_(W, m):
        va, vb = _elements(ga(W), n, asigned), _elements(gb(W), n, bsigned)
        if op == "vadd":
            t = va + vb
        elif op == "vsub":
            t = va - vb
        elif op == "vavrg":   # rounds half up: (a + b + 1) >> 1 for a non-negative sum, (a + b) >> 1 otherwise
            s = va + vb
            t = np.where(s >= 0, (s + 1) >> 1, s >> 1)
        elif op == "vabsdiff":
            t = np.abs(va - vb)
        elif op == "vmin":
            t = np.minimum(va, vb)
        else:
            t = np.maximum(va, vb)
        c_ = gc(W)
        if add:   # d = c + the element results, modulo 2^32
            r = (c_.astype(np.int64) + t.sum(axis=1)) & 0xFFFFFFFF
        else:
            if sat:
                t = np.clip(t, lo, hi)
            t = t & ((1 << bits) - 1)
            r = (t << (np.arange(n) * bits)).sum(axis=1)
        sd(W, r.astype(np.uint32), m)
    return op_
