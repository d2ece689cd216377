"""cvt with a floating-point side (PTX ISA 9.7.9.21): the interpreter's glue to fparith.cvt (every
float/int pair, integral rounding, tf32, the packed x2 forms; one exact rounding each)."""
import numpy as np

from .. import fparith
from ..errors import PtxError, PtxSyntaxError, PtxUnsupported
from ..types import CONTAINER

_RND = ("rn", "rz", "rm", "rp", "rna", "rs", "rni", "rzi", "rmi", "rpi")


def c_cvt_float(ins, prog, pc, mods, dt, st):
    flags = dict(rounding=mods.one_of(_RND), ftz="ftz" in mods, sat="sat" in mods, satfinite="satfinite" in mods,
                 relu="relu" in mods)
    ops = ins.operands
    two = len(ops) == 3
    if len(ops) not in (2, 3):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} takes d, a (or d, a, b for packed forms)")
    try:
        dummy = np.zeros(1, CONTAINER[max(8, st.bits)])
        fparith.cvt(dt.name, st.name, dummy, dummy if two else None, **flags)
    except PtxUnsupported as e:
        raise PtxUnsupported(ins.opcode, f"{e.rule} ({ins.where()})") from None
    except PtxError as e:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: {e.rule}") from None
    ga = prog.read(ops[1], st, ins)
    gb = prog.read(ops[2], st, ins) if two else None
    sd = prog.write(ops[0], dt, ins)
    d_name, s_name, cont = dt.name, st.name, CONTAINER[max(8, dt.bits)]
    if two:
        return lambda W, m: sd(W, fparith.cvt(d_name, s_name, ga(W), gb(W), **flags).astype(cont, copy=False), m)
    return lambda W, m: sd(W, fparith.cvt(d_name, s_name, ga(W), **flags).astype(cont, copy=False), m)
