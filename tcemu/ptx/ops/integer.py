"""Integer arithmetic, bit manipulation, logic, comparison and selection (PTX ISA 9.7.1, 9.7.2, 9.7.6, 9.7.7).

Values are raw bits in unsigned containers; signed forms view them as two's complement. Overflow wraps
(modulo 2^width) unless .sat says otherwise.
"""
import numpy as np

from .. import fparith, intarith
from .. import parser as P
from ..errors import PtxError, PtxSyntaxError, PtxUnsupported
from ..types import CONTAINER, MASKS, SIGNED, TYPES, PtxType
from .common import Mods, dest_setter, operands
from .registry import register
from .floating import c_float_arith, float_compare

_U = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
# the packed-halfword SIMD types of add/sub/min/max (PTX ISA 9.7.1.1, 9.7.1.10): operands are .b32 registers
_X2 = {"u16x2": PtxType("u16x2", 32, "u"), "s16x2": PtxType("s16x2", 32, "s")}


def _type(mods):
    """The instruction's type: a .u16x2/.s16x2 (not a fundamental type, so not in TYPES), else the last type."""
    for name in _X2.keys() & mods.set:
        return _X2[name]
    return mods.type()


def _s(v, bits):
    return v.view(SIGNED[bits])


def _routed(exact):
    """Compile a float type through floating.py and a form `exact(mods, t)` selects through intarith (exact); the
    decorated fn(ins, prog, pc, mods, t) compiles the rest, which wrap in numpy's containers."""
    def deco(fn):
        def compile_(ins, prog, pc):
            mods = Mods(ins)
            t = _type(mods)
            if t.kind == "f":
                return c_float_arith(ins, prog, pc)
            if exact(mods, t):
                return c_intarith(ins, prog, pc)
            return fn(ins, prog, pc, mods, t)
        compile_.__name__, compile_.__doc__ = fn.__name__, fn.__doc__
        return compile_
    return deco


def _binary(ins, prog, fn, t=None):
    """d = fn(a, b) for `op.type d, a, b`."""
    mods = Mods(ins)
    t = t or mods.type()
    d, a, b = operands(ins, 3)
    ga, gb = prog.read(a, t, ins), prog.read(b, t, ins)
    sd = prog.write(d, t, ins)
    bits = t.bits

    def op(W, m):
        sd(W, fn(ga(W), gb(W), bits), m)
    return op


@register("add", "sub")
@_routed(lambda mods, t: "sat" in mods or "cc" in mods or t.name in ("u16x2", "s16x2"))
def c_addsub(ins, prog, pc, mods, t):
    sub = ins.opcode.startswith("sub")
    return _binary(ins, prog, (lambda a, b, bits: a - b) if sub else (lambda a, b, bits: a + b), t)


@register("mul", "mad")
@_routed(lambda mods, t: mods.one_of(("lo", "hi", "wide"), "lo") != "lo" or "sat" in mods or "cc" in mods)
def c_mul(ins, prog, pc, mods, t):
    """.lo forms wrap in the container (numpy); .hi / .wide / .sat / carry forms go through intarith."""
    mad = ins.opcode.startswith("mad")
    ops = operands(ins, 4 if mad else 3)
    ga, gb = prog.read(ops[1], t, ins), prog.read(ops[2], t, ins)
    sd = prog.write(ops[0], t, ins)
    if mad:
        gc = prog.read(ops[3], t, ins)
        return lambda W, m: sd(W, ga(W) * gb(W) + gc(W), m)
    return lambda W, m: sd(W, ga(W) * gb(W), m)


@register("div", "rem", "abs", "neg")
def c_divrem(ins, prog, pc):
    t = Mods(ins).type()
    return c_float_arith(ins, prog, pc) if t.kind == "f" else c_intarith(ins, prog, pc)


@register("min", "max")
@_routed(lambda mods, t: "relu" in mods or t.name in ("u16x2", "s16x2"))
def c_minmax(ins, prog, pc, mods, t):
    is_max = ins.opcode.startswith("max")
    fn = np.maximum if is_max else np.minimum
    if t.signed:
        return _binary(ins, prog, lambda a, b, bits: fn(_s(a, bits), _s(b, bits)).view(CONTAINER[bits]), t)
    return _binary(ins, prog, lambda a, b, bits: fn(a, b), t)


# --------------------------------------------------------------------------------- through intarith (exact)

_OUT_U32 = ("popc", "clz", "bfind")
_U32_OPERANDS = {"bfe": (1, 2), "bfi": (2, 3), "szext": (1,), "shf.l": (), "shf.r": ()}


@register("addc", "subc", "madc", "mul24", "mad24", "popc", "clz", "bfind", "brev", "bfe", "bfi", "prmt",
          "lop3", "shf", "sad", "dp4a", "dp2a", "szext", "bmsk", "cnot")
def c_intarith(ins, prog, pc):
    """The instruction as tcemu.ptx.intarith defines it; the carry flag (CC.CF) lives in W.cc."""
    mods = Mods(ins)
    op = ins.opcode.split(".")[0]
    if op == "shf":
        op = "shf." + mods.one_of(("l", "r"))
    types = mods.types
    if op in ("dp4a", "dp2a"):
        itype = f"{types[0].name}.{types[1].name}"
        src_t = [TYPES["b32"]] * 3
        dst_t = TYPES["b32"]
    else:
        t = _type(mods)
        itype = t.name
        n_src = {"bfe": 3, "bfi": 4, "prmt": 3, "shf.l": 3, "shf.r": 3, "sad": 3, "mad": 3, "madc": 3, "mad24": 3,
                 "szext": 2, "bmsk": 2, "lop3": 3}.get(op, 1 if op in ("popc", "clz", "bfind", "brev", "abs", "neg",
                                                                      "cnot") else 2)
        src_t = [t] * n_src
        for i in _U32_OPERANDS.get(op, ()):
            src_t[i] = TYPES["u32"]
        if op == "bmsk":
            src_t = [TYPES["u32"], TYPES["u32"]]
        part = mods.one_of(("lo", "hi", "wide"))
        wide = TYPES.get(f"{t.kind}{2 * t.bits}") if part == "wide" and t.bits < 64 else None
        if wide is not None and op in ("mad", "madc"):
            src_t[2] = wide
        dst_t = TYPES["u32"] if op in _OUT_U32 else (wide or t)
    mode = mods.one_of(("lo", "hi", "wide", "clamp", "wrap", "f4e", "b4e", "rc8", "ecl", "ecr", "rc16"))
    if op in ("mul24", "mad24") and mode is None:
        mode = "lo"
    flags = dict(sat="sat" in mods, relu="relu" in mods, shiftamt="shiftamt" in mods, cc="cc" in mods)
    ops = list(ins.operands)
    imm = None
    if op == "lop3":
        if len(ops) != 5 or not isinstance(ops[4], P.Imm):
            raise PtxSyntaxError(ins.line, ins.col, "lop3 takes d, a, b, c, immLut")
        imm = ops.pop().value & 0xFF
    if len(ops) != len(src_t) + 1:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} takes {len(src_t) + 1} operands, got {len(ops)}")
    gets = [prog.read(o, st, ins) for o, st in zip(ops[1:], src_t)]
    sd = prog.write(ops[0], dst_t, ins)
    reads_cf = op in ("addc", "subc", "madc")
    try:  # the form is checked now (intarith names the broken rule)
        dummy = [np.zeros(1, CONTAINER[max(8, st.bits)]) for st in src_t] + ([imm] if imm is not None else [])
        intarith.int_op(op, itype, *dummy, mode=mode, carry_in=np.zeros(1, bool) if reads_cf else None, **flags)
    except PtxUnsupported as e:   # valid PTX intarith does not model: refused if executed
        raise PtxUnsupported(ins.opcode, f"{e.rule} ({ins.where()})") from None
    except PtxError as e:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: {e.rule}") from None

    def run(W, m):
        vals = [g(W) for g in gets]
        if imm is not None:
            vals.append(imm)
        r = intarith.int_op(op, itype, *vals, mode=mode, carry_in=W.cc if reads_cf else None, **flags)
        if flags["cc"]:
            r, carry = r
            W.cc = np.where(W.active(m), carry, W.cc)
        sd(W, np.asarray(r).astype(CONTAINER[dst_t.bits], copy=False), m)
    return run


@register("and", "or", "xor")
def c_logic(ins, prog, pc):
    t = Mods(ins).type()
    name = ins.opcode.split(".")[0]
    if t.bits == 1:
        fn = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[name]
    else:
        fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[name]
    return _binary(ins, prog, lambda a, b, bits: fn(a, b), t)


@register("not")
def c_not(ins, prog, pc):
    t = Mods(ins).type()
    d, a = operands(ins, 2)
    ga, sd = prog.read(a, t, ins), prog.write(d, t, ins)
    return lambda W, m: sd(W, ~ga(W), m)


@register("shl", "shr")
def c_shift(ins, prog, pc):
    t = Mods(ins).type()
    d, a, b = operands(ins, 3)
    ga, gb, sd = prog.read(a, t, ins), prog.read(b, TYPES["u32"], ins), prog.write(d, t, ins)
    bits = t.bits
    left = ins.opcode.startswith("shl")
    arith = t.signed and not left
    cont = CONTAINER[bits]

    def op(W, m):
        # PTX 9.7.7.7/8: shift amounts greater than the width clamp to the width
        n = np.minimum(gb(W), np.uint32(bits))
        a = ga(W)
        if arith:
            v = _s(a, bits).astype(np.int64) >> np.minimum(n, 63).astype(np.int64)
            sd(W, v.astype(SIGNED[bits]).view(cont), m)
            return
        wide = a.astype(np.uint64)
        n64 = n.astype(np.uint64)
        if bits == 64:
            r = np.where(n64 >= 64, np.uint64(0), (wide << np.minimum(n64, 63)) if left else (wide >> np.minimum(n64, 63)))
        else:
            r = (wide << n64) if left else (wide >> n64)
        sd(W, r.astype(cont), m)
    return op


_INT_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
            "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}
_BOOL = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


def compare(cmp: str, t, ftz: bool):
    """fn(a, b) -> bool for a comparison of .type t."""
    if t.kind == "f":
        return lambda a, b: float_compare(cmp, t.name, a, b, ftz)
    if t.bits == 1:
        return lambda a, b: _INT_CMP[cmp](a, b)
    fn = _INT_CMP.get(cmp)
    if fn is None:
        raise PtxSyntaxError(0, 0, f"comparison {cmp} does not apply to integers")
    if t.signed and cmp not in ("lo", "ls", "hi", "hs"):
        bits = t.bits
        return lambda a, b: fn(_s(a, bits), _s(b, bits))
    return fn


@register("setp")
def c_setp(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    cmp = mods.parts[0]
    boolop = mods.one_of(tuple(_BOOL))
    fn = compare(cmp, t, "ftz" in mods)
    ops = ins.operands
    put = dest_setter(prog, ops[0], ins, TYPES["pred"])
    ga, gb = prog.read(ops[1], t, ins), prog.read(ops[2], t, ins)
    gc = prog.read(ops[3], TYPES["pred"], ins) if boolop else None
    if boolop and len(ops) != 4 or not boolop and len(ops) != 3:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: wrong operand count")
    bfn = _BOOL.get(boolop)

    packed = t.name in ("f16x2", "bf16x2")  # p from the lower halves, q from the upper (PTX 9.7.4.4)

    def op(W, m):
        r = fn(ga(W), gb(W))
        lo, hi = r if packed else (r, ~r)
        if bfn is not None:
            c = gc(W)
            lo, hi = bfn(lo, c), bfn(hi, c)
        put(W, lo, hi, m)
    return op


@register("set")
def c_set(ins, prog, pc):
    mods = Mods(ins)
    dt, st = mods.types[0], mods.types[1]
    cmp = mods.parts[0]
    boolop = mods.one_of(tuple(_BOOL))
    fn = compare(cmp, st, "ftz" in mods)
    ops = ins.operands
    sd = prog.write(ops[0], dt, ins)
    ga, gb = prog.read(ops[1], st, ins), prog.read(ops[2], st, ins)
    gc = prog.read(ops[3], TYPES["pred"], ins) if boolop else None
    if st.name.endswith("x2"):   # per half (PTX 9.7.4.x set: .f16x2 / .bf16x2 sources): each half of d is 1.0 in
        half = {"f16x2": 0x3C00, "bf16x2": 0x3F80}.get(dt.name, 0xFFFF)   # dtype's half format, or all ones

        def op2(W, m):
            lo, hi = fn(ga(W), gb(W))
            if boolop:
                c = gc(W)
                lo, hi = _BOOL[boolop](lo, c), _BOOL[boolop](hi, c)
            sd(W, (np.where(lo, half, 0) | (np.where(hi, half, 0) << 16)).astype(np.uint32), m)
        return op2

    def op(W, m):
        r = fn(ga(W), gb(W))
        if boolop:
            r = _BOOL[boolop](r, gc(W))
        sd(W, fparith.set_bits(dt.name, r) if dt.kind == "f" else np.where(r, MASKS[dt.bits], 0).astype(
            CONTAINER[dt.bits]), m)
    return op


@register("selp")
def c_selp(ins, prog, pc):
    t = Mods(ins).type()
    d, a, b, c = operands(ins, 4)
    ga, gb, gc, sd = prog.read(a, t, ins), prog.read(b, t, ins), prog.read(c, TYPES["pred"], ins), prog.write(d, t, ins)

    def op(W, m):
        sd(W, np.where(gc(W), ga(W), gb(W)), m)
    return op


@register("slct")
def c_slct(ins, prog, pc):
    mods = Mods(ins)
    dt, ct = mods.types[0], mods.types[1]
    d, a, b, c = operands(ins, 4)
    ga, gb, gc, sd = prog.read(a, dt, ins), prog.read(b, dt, ins), prog.read(c, ct, ins), prog.write(d, dt, ins)
    ftz = "ftz" in mods

    def op(W, m):
        cv = gc(W)
        if ct.kind == "f":
            f = cv.view(np.float32)
            if ftz:
                f = np.where(np.abs(f) < np.float32(1.1754944e-38), np.float32(0) * np.sign(f), f)
            sel = f >= 0
        else:
            sel = cv.view(np.int32) >= 0
        sd(W, np.where(sel, ga(W), gb(W)), m)
    return op


__all__ = ["compare"]
_ = MASKS
