"""Integer arithmetic, bit manipulation, logic, comparison and selection (PTX ISA 9.7.1, 9.7.2, 9.7.6, 9.7.7).

Values are raw bits in unsigned containers; signed forms view them as two's complement. Overflow wraps
(modulo 2^width) unless .sat says otherwise.
"""
import numpy as np

from ..errors import PtxSyntaxError
from ..types import CONTAINER, MASKS, SIGNED, TYPES
from . import Mods, operands, register
from .floating import float_compare

_U = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _s(v, bits):
    return v.view(SIGNED[bits])


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
def c_addsub(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    if t.kind == "f" or "f16" in t.name or "f32" in t.name:
        from .floating import c_float_arith
        return c_float_arith(ins, prog, pc)
    if "cc" in mods or mods.parts[0] in ("cc",):
        mods.unsupported("carry forms (.cc, addc/subc) are not modelled")
    sub = ins.opcode.startswith("sub")
    if "sat" in mods:
        if t.name != "s32":
            raise PtxSyntaxError(ins.line, ins.col, ".sat applies to .s32 only")

        def sat(a, b, bits):
            r = _s(a, 32).astype(np.int64) + (-1 if sub else 1) * _s(b, 32).astype(np.int64)
            return np.clip(r, -2**31, 2**31 - 1).astype(np.int32).view(np.uint32)
        return _binary(ins, prog, sat, t)
    if sub:
        return _binary(ins, prog, lambda a, b, bits: a - b, t)
    return _binary(ins, prog, lambda a, b, bits: a + b, t)


def _wide_product(a, b, bits, signed):
    """Exact product of two `bits`-wide values as int64/uint64 (bits <= 32) or Python ints (64)."""
    if bits <= 32:
        if signed:
            return _s(a, bits).astype(np.int64) * _s(b, bits).astype(np.int64)
        return a.astype(np.uint64) * b.astype(np.uint64)
    av = [int(x) for x in (_s(a, 64) if signed else a)]
    bv = [int(x) for x in (_s(b, 64) if signed else b)]
    return [x * y for x, y in zip(av, bv)]


def _part(prod, bits, part):
    """lo / hi / wide bits of an exact product, as unsigned containers."""
    if isinstance(prod, list):
        mask = (1 << 64) - 1
        if part == "lo":
            return np.array([p & mask for p in prod], np.uint64)
        if part == "hi":
            return np.array([(p >> 64) & mask for p in prod], np.uint64)
        raise PtxSyntaxError(0, 0, "mul.wide of 64-bit operands does not exist")
    u = prod.view(np.uint64) if prod.dtype == np.int64 else prod
    if part == "lo":
        return u.astype(_U[bits])
    if part == "hi":
        return (u >> np.uint64(bits)).astype(_U[bits])
    return u.astype(_U[2 * bits])


@register("mul")
def c_mul(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    if t.kind == "f":
        from .floating import c_float_arith
        return c_float_arith(ins, prog, pc)
    part = mods.one_of(("lo", "hi", "wide"), "lo")
    d, a, b = operands(ins, 3)
    ga, gb = prog.read(a, t, ins), prog.read(b, t, ins)
    dt = TYPES[f"{t.kind}{2 * t.bits}"] if part == "wide" else t
    sd = prog.write(d, dt, ins)
    bits, signed = t.bits, t.signed

    if part == "lo":
        def op(W, m):
            sd(W, ga(W) * gb(W), m)
    else:
        def op(W, m):
            sd(W, _part(_wide_product(ga(W), gb(W), bits, signed), bits, part), m)
    return op


@register("mad")
def c_mad(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    if t.kind == "f":
        from .floating import c_float_arith
        return c_float_arith(ins, prog, pc)
    part = mods.one_of(("lo", "hi", "wide"), "lo")
    d, a, b, c = operands(ins, 4)
    ga, gb = prog.read(a, t, ins), prog.read(b, t, ins)
    ct = TYPES[f"{t.kind}{2 * t.bits}"] if part == "wide" else t
    gc = prog.read(c, ct, ins)
    sd = prog.write(d, ct, ins)
    bits, signed = t.bits, t.signed
    if "sat" in mods:
        if not (part == "hi" and t.name == "s32"):
            raise PtxSyntaxError(ins.line, ins.col, "mad .sat applies to mad.hi.s32 only")

        def op(W, m):
            p = _wide_product(ga(W), gb(W), 32, True) >> 32
            r = np.clip(p + _s(gc(W), 32).astype(np.int64), -2**31, 2**31 - 1)
            sd(W, r.astype(np.int32).view(np.uint32), m)
        return op
    if part == "lo":
        def op(W, m):
            sd(W, ga(W) * gb(W) + gc(W), m)
    else:
        def op(W, m):
            sd(W, _part(_wide_product(ga(W), gb(W), bits, signed), bits, part) + gc(W), m)
    return op


@register("mul24", "mad24")
def c_mul24(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    part = mods.one_of(("lo", "hi"), "lo")
    mad = ins.opcode.startswith("mad")
    ops = operands(ins, 4 if mad else 3)
    ga, gb = prog.read(ops[1], t, ins), prog.read(ops[2], t, ins)
    gc = prog.read(ops[3], t, ins) if mad else None
    sd = prog.write(ops[0], t, ins)

    def op(W, m):
        a, b = ga(W), gb(W)
        if t.signed:
            a24 = (_s(a, 32) << 8) >> 8
            b24 = (_s(b, 32) << 8) >> 8
            p = a24.astype(np.int64) * b24.astype(np.int64)
            p = p.view(np.uint64)
        else:
            p = (a & np.uint32(0xFFFFFF)).astype(np.uint64) * (b & np.uint32(0xFFFFFF)).astype(np.uint64)
        r = (p >> np.uint64(16)).astype(np.uint32) if part == "hi" else p.astype(np.uint32)
        if mad:
            r = r + gc(W)
        sd(W, r, m)
    return op


@register("div", "rem")
def c_divrem(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    if t.kind == "f":
        from .floating import c_float_arith
        return c_float_arith(ins, prog, pc)
    rem = ins.opcode.startswith("rem")
    bits = t.bits

    def fn(a, b, bits):
        # PTX 9.7.1.8: division by zero gives an unspecified value; we return what the H100 gives for the
        # common case (all ones for div, the dividend for rem) and do not fault.
        zero = b == 0
        bb = np.where(zero, 1, b).astype(b.dtype)
        if t.signed and bits == 64:  # Python ints: |MININT| does not fit int64
            q = [abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
                 for x, y in zip(_s(a, 64).tolist(), _s(bb, 64).tolist())]
            r = [x - qq * y for x, y, qq in zip(_s(a, 64).tolist(), _s(bb, 64).tolist(), q)]
            out = np.array([v & MASKS[64] for v in (r if rem else q)], np.uint64)
        elif t.signed:
            sa, sb = _s(a, bits).astype(np.int64), _s(bb, bits).astype(np.int64)
            q = np.abs(sa) // np.abs(sb) * np.sign(sa) * np.sign(sb)   # truncation toward zero
            r = sa - q * sb
            out = (r if rem else q).astype(SIGNED[bits]).view(CONTAINER[bits])
        else:
            out = (a % bb) if rem else (a // bb)
        return np.where(zero, a if rem else np.array(MASKS[bits], CONTAINER[bits]), out).astype(CONTAINER[bits])
    return _binary(ins, prog, fn, t)


@register("abs", "neg")
def c_absneg(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    if t.kind == "f":
        from .floating import c_float_unary
        return c_float_unary(ins, prog, pc)
    d, a = operands(ins, 2)
    ga, sd = prog.read(a, t, ins), prog.write(d, t, ins)
    neg = ins.opcode.startswith("neg")
    bits = t.bits

    def op(W, m):
        v = _s(ga(W), bits)
        sd(W, (-v if neg else np.abs(v)).view(CONTAINER[bits]), m)
    return op


@register("min", "max")
def c_minmax(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    if t.kind == "f":
        from .floating import c_float_arith
        return c_float_arith(ins, prog, pc)
    is_max = ins.opcode.startswith("max")
    relu = "relu" in mods
    bits = t.bits

    def fn(a, b, bits):
        if t.signed:
            r = (np.maximum if is_max else np.minimum)(_s(a, bits), _s(b, bits))
            if relu:
                r = np.maximum(r, 0).astype(r.dtype)
            return r.view(CONTAINER[bits])
        return (np.maximum if is_max else np.minimum)(a, b)
    return _binary(ins, prog, fn, t)


@register("and", "or", "xor")
def c_logic(ins, prog, pc):
    t = Mods(ins).type()
    name = ins.opcode.split(".")[0]
    if t.bits == 1:
        fn = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[name]
    else:
        fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[name]
    return _binary(ins, prog, lambda a, b, bits: fn(a, b), t)


@register("not", "cnot")
def c_not(ins, prog, pc):
    t = Mods(ins).type()
    d, a = operands(ins, 2)
    ga, sd = prog.read(a, t, ins), prog.write(d, t, ins)
    if ins.opcode.startswith("cnot"):
        def op(W, m):
            sd(W, (ga(W) == 0).astype(CONTAINER[t.bits]), m)
    elif t.bits == 1:
        def op(W, m):
            sd(W, ~ga(W), m)
    else:
        def op(W, m):
            sd(W, ~ga(W), m)
    return op


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


@register("shf")
def c_shf(ins, prog, pc):
    mods = Mods(ins)
    left = "l" in mods
    clamp = "clamp" in mods
    d, a, b, c = operands(ins, 4)
    u32 = TYPES["b32"]
    ga, gb, gc, sd = prog.read(a, u32, ins), prog.read(b, u32, ins), prog.read(c, u32, ins), prog.write(d, u32, ins)

    def op(W, m):
        n = gc(W)
        n = np.minimum(n, np.uint32(32)) if clamp else (n & np.uint32(31))
        n = n.astype(np.uint64)
        pair = (gb(W).astype(np.uint64) << np.uint64(32)) | ga(W).astype(np.uint64)  # b:a, a in the low word
        if left:
            r = ((pair << n) >> np.uint64(32)) & np.uint64(0xFFFFFFFF)
        else:
            r = (pair >> n) & np.uint64(0xFFFFFFFF)
        sd(W, r.astype(np.uint32), m)
    return op


@register("popc", "clz", "brev")
def c_bitcount(ins, prog, pc):
    t = Mods(ins).type()
    d, a = operands(ins, 2)
    name = ins.opcode.split(".")[0]
    ga = prog.read(a, t, ins)
    sd = prog.write(d, t if name == "brev" else TYPES["u32"], ins)
    bits = t.bits

    def op(W, m):
        v = ga(W).astype(np.uint64)
        if name == "popc":
            r = np.zeros(v.shape, np.uint32)
            for i in range(bits):
                r += ((v >> np.uint64(i)) & np.uint64(1)).astype(np.uint32)
        elif name == "clz":
            r = np.full(v.shape, bits, np.uint32)
            for i in range(bits):
                r = np.where((v >> np.uint64(i)) & np.uint64(1), np.uint32(bits - 1 - i), r)
        else:
            r = np.zeros(v.shape, np.uint64)
            for i in range(bits):
                r |= ((v >> np.uint64(i)) & np.uint64(1)) << np.uint64(bits - 1 - i)
            r = r.astype(CONTAINER[bits])
        sd(W, r, m)
    return op


@register("bfind")
def c_bfind(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    d, a = operands(ins, 2)
    ga, sd = prog.read(a, t, ins), prog.write(d, TYPES["u32"], ins)
    bits, shiftamt = t.bits, "shiftamt" in mods

    def op(W, m):
        v = ga(W).astype(np.uint64)
        if t.signed:  # position of the most significant bit that differs from the sign
            neg = (v >> np.uint64(bits - 1)) & np.uint64(1)
            v = np.where(neg == 1, ~v & np.uint64(MASKS[bits]), v)
        r = np.full(v.shape, 0xFFFFFFFF, np.uint32)
        for i in range(bits):
            r = np.where((v >> np.uint64(i)) & np.uint64(1), np.uint32(i), r)
        if shiftamt:
            r = np.where(r == 0xFFFFFFFF, r, np.uint32(bits - 1) - r)
        sd(W, r, m)
    return op


@register("bfe")
def c_bfe(ins, prog, pc):
    t = Mods(ins).type()
    d, a, b, c = operands(ins, 4)
    u32 = TYPES["u32"]
    ga, gb, gc, sd = prog.read(a, t, ins), prog.read(b, u32, ins), prog.read(c, u32, ins), prog.write(d, t, ins)
    bits = t.bits

    def op(W, m):
        # PTX 9.7.2.6: pos = b & 0xff, len = c & 0xff; the sign (signed forms) is bit min(pos + len - 1, msb)
        pos = (gb(W) & np.uint32(0xFF)).astype(np.uint64)
        ln = (gc(W) & np.uint32(0xFF)).astype(np.uint64)
        v = ga(W).astype(np.uint64)
        shifted = np.where(pos >= bits, np.uint64(0), v >> np.minimum(pos, np.uint64(63)))
        if t.signed:
            sbit_pos = np.minimum(pos + ln - np.uint64(1), np.uint64(bits - 1))
            sbit = np.where((ln == 0) | (pos >= bits), (v >> np.uint64(bits - 1)) & np.uint64(1) if False else
                            np.uint64(0), (v >> sbit_pos) & np.uint64(1))
            sbit = np.where(ln == 0, np.uint64(0), np.where(pos >= bits, (v >> np.uint64(bits - 1)) & np.uint64(1), sbit))
        else:
            sbit = np.zeros_like(v)
        # field bits i < len with pos + i <= msb come from a; the rest (even inside len) are the sign bit
        eff = np.minimum(ln, np.uint64(bits) - np.minimum(pos, np.uint64(bits)))
        keep = np.where(eff >= bits, np.uint64(MASKS[bits]),
                        (np.uint64(1) << np.minimum(eff, np.uint64(63))) - np.uint64(1))
        r = shifted & keep
        r = np.where(sbit == 1, r | (~keep & np.uint64(MASKS[bits])), r)
        r = np.where(ln == 0, np.uint64(0), r)
        sd(W, r.astype(CONTAINER[bits]), m)
    return op


@register("bfi")
def c_bfi(ins, prog, pc):
    t = Mods(ins).type()
    f, a, b, c, d = operands(ins, 5)
    u32 = TYPES["u32"]
    ga, gb, gc, gd = prog.read(a, t, ins), prog.read(b, t, ins), prog.read(c, u32, ins), prog.read(d, u32, ins)
    sf = prog.write(f, t, ins)
    bits = t.bits

    def op(W, m):
        pos = (gc(W) & np.uint32(0xFF)).astype(np.uint64)
        ln = (gd(W) & np.uint32(0xFF)).astype(np.uint64)
        ln = np.where(pos >= bits, np.uint64(0), np.minimum(ln, np.uint64(bits) - np.minimum(pos, np.uint64(bits))))
        field = np.where(ln >= 64, np.uint64(MASKS[64]), (np.uint64(1) << np.minimum(ln, np.uint64(63))) - np.uint64(1))
        mask = (field << np.minimum(pos, np.uint64(63))) & np.uint64(MASKS[bits])
        r = (gb(W).astype(np.uint64) & ~mask) | ((ga(W).astype(np.uint64) << np.minimum(pos, np.uint64(63))) & mask)
        sf(W, r.astype(CONTAINER[bits]), m)
    return op


@register("prmt")
def c_prmt(ins, prog, pc):
    mods = Mods(ins)
    mode = mods.one_of(("f4e", "b4e", "rc8", "ecl", "ecr", "rc16"))
    d, a, b, c = operands(ins, 4)
    u32 = TYPES["b32"]
    ga, gb, gc, sd = prog.read(a, u32, ins), prog.read(b, u32, ins), prog.read(c, u32, ins), prog.write(d, u32, ins)

    def op(W, m):
        # PTX 9.7.7.9: bytes of {b, a} numbered 0-7 (a's low byte is 0)
        src = (gb(W).astype(np.uint64) << np.uint64(32)) | ga(W).astype(np.uint64)
        by = [((src >> np.uint64(8 * i)) & np.uint64(0xFF)) for i in range(8)]
        sel = gc(W).astype(np.uint64)
        out = np.zeros(src.shape, np.uint64)
        if mode is None:
            for k in range(4):
                s = (sel >> np.uint64(4 * k)) & np.uint64(0xF)
                idx = s & np.uint64(7)
                val = np.choose(idx.astype(np.int64), by)
                sign = (val >> np.uint64(7)) & np.uint64(1)
                val = np.where(s & np.uint64(8), np.where(sign == 1, np.uint64(0xFF), np.uint64(0)), val)
                out |= val << np.uint64(8 * k)
        else:
            n = (sel & np.uint64(3)).astype(np.int64)
            tables = {"f4e": [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
                      "b4e": [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]],
                      "rc8": [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
                      "ecl": [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]],
                      "ecr": [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]],
                      "rc16": [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]]}[mode]
            tab = np.array(tables)
            for k in range(4):
                idx = tab[n, k]
                out |= np.choose(idx, by) << np.uint64(8 * k)
        sd(W, out.astype(np.uint32), m)
    return op


@register("lop3")
def c_lop3(ins, prog, pc):
    ops = ins.operands
    if len(ops) != 5:
        raise PtxSyntaxError(ins.line, ins.col, "lop3 takes d, a, b, c, immLut")
    d, a, b, c, lut = ops
    u32 = TYPES["b32"]
    ga, gb, gc, sd = prog.read(a, u32, ins), prog.read(b, u32, ins), prog.read(c, u32, ins), prog.write(d, u32, ins)
    L = lut.value & 0xFF

    def op(W, m):
        A, B, C = ga(W), gb(W), gc(W)
        r = np.zeros_like(A)
        for i in range(8):  # minterm i: a = bit 2, b = bit 1, c = bit 0 of i (ta = 0xF0, tb = 0xCC, tc = 0xAA)
            if L >> i & 1:
                r |= (A if i & 4 else ~A) & (B if i & 2 else ~B) & (C if i & 1 else ~C)
        sd(W, r, m)
    return op


@register("sad")
def c_sad(ins, prog, pc):
    t = Mods(ins).type()
    d, a, b, c = operands(ins, 4)
    ga, gb, gc, sd = prog.read(a, t, ins), prog.read(b, t, ins), prog.read(c, t, ins), prog.write(d, t, ins)

    def op(W, m):
        A, B = ga(W), gb(W)
        if t.signed:
            diff = np.abs(_s(A, t.bits).astype(np.int64) - _s(B, t.bits).astype(np.int64)).astype(np.uint64)
        else:
            diff = np.where(A > B, A - B, B - A).astype(np.uint64)
        sd(W, (diff + gc(W).astype(np.uint64)).astype(CONTAINER[t.bits]), m)
    return op


@register("dp4a", "dp2a")
def c_dp(ins, prog, pc):
    mods = Mods(ins)
    ta, tb = mods.types[0], mods.types[1]
    four = ins.opcode.startswith("dp4a")
    hi = "hi" in mods
    d, a, b, c = operands(ins, 4)
    u32 = TYPES["b32"]
    ga, gb, gc = prog.read(a, u32, ins), prog.read(b, u32, ins), prog.read(c, u32, ins)
    sd = prog.write(d, u32, ins)

    def lanes(v, width, n, signed, offset=0):
        out = []
        for i in range(n):
            x = ((v.astype(np.int64) >> (width * i + offset)) & ((1 << width) - 1))
            if signed:
                x = np.where(x >= 1 << (width - 1), x - (1 << width), x)
            out.append(x)
        return out

    def op(W, m):
        if four:
            A = lanes(ga(W), 8, 4, ta.signed)
            B = lanes(gb(W), 8, 4, tb.signed)
        else:
            A = lanes(ga(W), 16, 2, ta.signed)
            B = lanes(gb(W), 8, 2, tb.signed, 16 if hi else 0)
        acc = gc(W).view(np.int32).astype(np.int64) if (ta.signed or tb.signed) else gc(W).astype(np.int64)
        for x, y in zip(A, B):
            acc = acc + x * y
        sd(W, (acc & 0xFFFFFFFF).astype(np.uint32), m)
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
    dest = ops[0]
    pd = prog.write(dest.first if hasattr(dest, "first") else dest, TYPES["pred"], ins)
    qd = prog.write(dest.second, TYPES["pred"], ins) if hasattr(dest, "second") else None
    ga, gb = prog.read(ops[1], t, ins), prog.read(ops[2], t, ins)
    gc = prog.read(ops[3], TYPES["pred"], ins) if boolop else None
    if boolop and len(ops) != 4 or not boolop and len(ops) != 3:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: wrong operand count")
    bfn = _BOOL.get(boolop)

    def op(W, m):
        r = fn(ga(W), gb(W))
        if bfn is not None:
            c = gc(W)
            p, q = bfn(r, c), bfn(~r, c)
        else:
            p, q = r, ~r
        pd(W, p, m)
        if qd is not None:
            qd(W, q, m)
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
    one = {"f32": 0x3F800000}.get(dt.name, MASKS.get(dt.bits))

    def op(W, m):
        r = fn(ga(W), gb(W))
        if boolop:
            r = _BOOL[boolop](r, gc(W))
        sd(W, np.where(r, one, 0).astype(CONTAINER[dt.bits]), m)
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
