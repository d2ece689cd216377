"""Exact PTX integer, bit-manipulation and logic instructions on raw bit patterns (numpy, vectorised).

Operands are numpy arrays of raw patterns (uint16 / uint32 / uint64 by the instruction type's width; shift
amounts, bit positions and lengths are u32; predicates and carry flags are bool arrays), any length;
results come back the same way. Modifier keywords mirror the PTX modifiers.

    int_op(op, itype, *operands, mode=None, sat=False, relu=False, shiftamt=False, cc=False,
           carry_in=None) -> bits, or (bits, carry_out) when cc=True
        add sub (.sat .s32; .u16x2/.s16x2 add), addc subc (carry_in), mul mad (mode lo|hi|wide; mad.hi.sat.s32),
        madc, mul24 mad24 (mode lo|hi), div rem, abs neg, min max (.relu on s32 / s16x2), popc clz (-> u32),
        bfind (shiftamt), brev, bfe, bfi, prmt (mode None|f4e|b4e|rc8|ecl|ecr|rc16), lop3 (operands a, b, c,
        immLut), shf.l shf.r (mode clamp|wrap), shl shr, and or xor not cnot, sad, dp4a, dp2a (mode lo|hi;
        itype "atype.btype", e.g. "s32.u32"), szext (mode clamp|wrap), bmsk (mode clamp|wrap).
    int_compare(cmp, itype, a, b) -> bool      eq ne lt le gt ge lo ls hi hs (setp/set integer forms)

The carry flag (CC.CF, PTX 9.7.2) is a carry, never a borrow (measured: traces/ptx_alu_sm90.npz, H100):
add.cc/addc.cc/mad.cc/madc.cc write the carry out of the unsigned addition; sub.cc computes a + ~b + 1 and
writes its carry out (CF = 1 when a >= b unsigned, i.e. NOT borrow); subc computes a + ~b + CF = a - b - !CF
and writes that sum's carry out. (The PTX text calls the flag a borrow for subtraction; sub.cc then subc
gives the same multi-word difference either way, but add.cc then subc, or sub.cc then addc, follows the
carry reading: 1289/1288 captured cases of each of sub.cc/subc.cc .u32/.u64 and sub.cc.u32+subc.)
Division by zero is left undefined by PTX; the sm_90a code ptxas emits returns all ones for div and rem of
every width (SASS: `@!P LOP3.LUT R, RZ, b, RZ, 0x33` = ~b = ~0 when b == 0); INT_MIN / -1 wraps to INT_MIN,
remainder 0 (confirmed by the capture).
bfe/bfi: the 32-bit forms take pos and len modulo 256 as PTX states (SASS: PRMT picks their low bytes); the
64-bit forms do not (see _bfe_bfi: ptxas builds them from 64-bit shifts of the full u32 operands).
"""
from functools import lru_cache

import numpy as np

from .errors import PtxError, PtxUnsupported

INT = {"u16": (16, False), "s16": (16, True), "b16": (16, False), "u32": (32, False), "s32": (32, True),
       "b32": (32, False), "u64": (64, False), "s64": (64, True), "b64": (64, False)}
UINT = {16: np.uint16, 32: np.uint32, 64: np.uint64}
SINT = {16: np.int16, 32: np.int32, 64: np.int64}
U64 = np.uint64
ALL64 = U64(0xFFFFFFFFFFFFFFFF)

_ARITH_TYPES = ("u16", "s16", "u32", "s32", "u64", "s64")
_CC_TYPES = ("u32", "s32", "u64", "s64")


def _bits(x, width, field="operand"):
    arr = np.asarray(x)
    want = UINT[width]
    if arr.dtype == want:
        return arr
    if arr.dtype.kind not in "iub":
        raise PtxError(field, f"expected raw bit patterns (unsigned integers of {width} bits), got {arr.dtype}")
    if arr.dtype.kind == "i":  # signed inputs: their two's-complement patterns
        if arr.size and (int(arr.min()) < -(1 << (width - 1)) or int(arr.max()) >= (1 << width)):
            raise PtxError(field, f"a value does not fit {width} bits")
        return (arr.astype(np.int64).view(np.uint64) & _mask(width)).astype(want)
    if arr.size and arr.dtype.kind == "u" and arr.dtype.itemsize * 8 > width and int(arr.max()) >> width:
        raise PtxError(field, f"a value does not fit {width} bits")
    return arr.astype(want)


def _signed(u, width):
    """Two's-complement value of width-bit patterns, as int64."""
    return u.view(SINT[width]).astype(np.int64)


def _u64(x):
    return x.astype(np.uint64)


def _mask(width):
    return U64((1 << width) - 1) if width < 64 else ALL64


def _check(cond, field, rule):
    if not cond:
        raise PtxError(field, rule)


def _mul_wide_u64(a, b):
    """Exact 128-bit product of uint64 arrays -> (hi, lo) uint64, from 32-bit limbs."""
    m32 = U64(0xFFFFFFFF)
    a0, a1 = a & m32, a >> U64(32)
    b0, b1 = b & m32, b >> U64(32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> U64(32)) + (p01 & m32) + (p10 & m32)
    lo = (p00 & m32) | (mid << U64(32))
    hi = p11 + (p01 >> U64(32)) + (p10 >> U64(32)) + (mid >> U64(32))
    return hi, lo


def _mul_hi(a, b, width, signed):
    """High half of the 2*width-bit product of width-bit patterns (uint64 arrays)."""
    if width < 64:
        if signed:
            p = (_signed(a.astype(UINT[width]), width) * _signed(b.astype(UINT[width]), width)).view(np.uint64)
        else:
            p = a * b
        return (p >> U64(width)) & _mask(width)
    hi, lo = _mul_wide_u64(a, b)
    if signed:  # signed high half = unsigned high half - (a<0 ? b : 0) - (b<0 ? a : 0)  (mod 2^64)
        hi = hi - np.where(a >> U64(63), b, U64(0)) - np.where(b >> U64(63), a, U64(0))
    return hi


def _sat_s32(v):
    return np.clip(v, -(1 << 31), (1 << 31) - 1)


_PRMT_MODES = ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")


@lru_cache(maxsize=None)
def _prmt_selectors(mode):
    """(4, 4) table: selector of destination byte j for c[1:0] = i (PTX 9.7.7.x prmt, the mode table)."""
    table = np.zeros((4, 4), np.uint64)
    for i in range(4):
        for j in range(4):
            table[i, j] = {"f4e": i + j,                 # forward 4 extract: bytes i .. i+3 of {b, a}
                           "b4e": (i - j) % 8,           # backward 4 extract: byte i, then downwards, wrapping
                           "rc8": i,                     # replicate byte i
                           "ecl": max(i, j),             # edge clamp left
                           "ecr": min(i, j),             # edge clamp right
                           "rc16": 2 * (i & 1) + (j & 1)  # replicate half-word (i & 1)
                           }[mode]
    return table


_BYTE_SHIFTS = np.array([0, 8, 16, 24], np.uint64)
_NIBBLE_SHIFTS = np.array([0, 4, 8, 12], np.uint64)


def prmt(a, b, c, mode=None):
    """prmt.b32{.mode} d, a, b, c: bytes of {b, a} (b7..b4 = b, b3..b0 = a) picked per destination byte."""
    a, b, c = (_u64(_bits(x, 32)) for x in (a, b, c))
    a, b, c = np.broadcast_arrays(a, b, c)
    src = ((b << U64(32)) | a)[..., None]
    if mode is None:
        sel = (c[..., None] >> _NIBBLE_SHIFTS) & U64(0xF)  # (..., 4): selector of destination byte j
    else:
        sel = _prmt_selectors(mode)[(c & U64(3)).astype(np.intp)]
    byte = (src >> ((sel & U64(7)) * U64(8))) & U64(0xFF)
    if mode is None:  # msb of the selector: replicate the byte's sign bit
        byte = np.where((sel & U64(8)) != 0, (byte >> U64(7)) * U64(0xFF), byte)
    return np.bitwise_or.reduce(byte << _BYTE_SHIFTS, axis=-1).astype(np.uint32)


def lop3(a, b, c, immlut):
    """lop3.b32: bit i of d is bit (a_i b_i c_i as a 3-bit number, a the msb) of immLut (PTX: ta = 0xF0,
    tb = 0xCC, tc = 0xAA encode the inputs)."""
    a, b, c = (_bits(x, 32) for x in (a, b, c))
    lut = int(immlut)
    _check(0 <= lut <= 255, "immLut", f"{immlut!r} is not in 0..255")
    out = np.zeros(np.broadcast(a, b, c).shape, np.uint32)
    for k in range(8):
        if lut >> k & 1:
            out |= (a if k & 4 else ~a) & (b if k & 2 else ~b) & (c if k & 1 else ~c)
    return out


def int_compare(cmp, itype, a, b):
    """setp/set integer comparisons: lt le gt ge follow the type's signedness; lo ls hi hs are unsigned
    (unsigned types only); .b types compare eq/ne only (ptxas rejects the rest)."""
    if itype not in INT:
        raise PtxError("type", f"{itype!r} is not one of {' '.join(INT)}")
    width, signed = INT[itype]
    ops = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
    _check(cmp in ops, "cmp", f"{cmp!r} is not an integer comparison; expected one of {' '.join(ops)}")
    _check(not (itype.startswith("b") and cmp not in ("eq", "ne")), "cmp", f"setp.{cmp}.{itype}: .b types compare eq/ne")
    _check(not (signed and cmp in ("lo", "ls", "hi", "hs")), "cmp", f"setp.{cmp}.{itype}: lo/ls/hi/hs are unsigned")
    x, y = _bits(a, width), _bits(b, width)
    if signed:
        x, y = x.view(SINT[width]), y.view(SINT[width])
    cmp = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}.get(cmp, cmp)
    return {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}[cmp]


_ARITY = {"add": 2, "sub": 2, "addc": 2, "subc": 2, "mul": 2, "mad": 3, "madc": 3, "mul24": 2, "mad24": 3,
          "div": 2, "rem": 2, "abs": 1, "neg": 1, "min": 2, "max": 2, "popc": 1, "clz": 1, "bfind": 1,
          "brev": 1, "bfe": 3, "bfi": 4, "prmt": 3, "lop3": 4, "shf.l": 3, "shf.r": 3, "shl": 2, "shr": 2,
          "and": 2, "or": 2, "xor": 2, "not": 1, "cnot": 1, "sad": 3, "dp4a": 3, "dp2a": 3, "szext": 2,
          "bmsk": 2}


def int_op(op, itype, *operands, mode=None, sat=False, relu=False, shiftamt=False, cc=False, carry_in=None):
    """One PTX integer instruction over lanes (see the module docstring)."""
    if op not in _ARITY:
        raise PtxError("op", f"{op!r} is not one of {', '.join(_ARITY)}")
    if len(operands) != _ARITY[op]:
        raise PtxError("operands", f"{op} takes {_ARITY[op]} source operands, got {len(operands)}")
    form = ".".join([op] + [m for m in (mode,) if m] + [k for k, v in (("sat", sat), ("relu", relu),
                    ("shiftamt", shiftamt), ("cc", cc)) if v] + [str(itype)])
    _check(not cc or op in ("add", "sub", "addc", "subc", "mad", "madc"), "cc", f"{form}: .cc applies to "
           f"add sub addc subc mad madc")
    _check(carry_in is None or op in ("addc", "subc", "madc"), "carry_in", f"{form}: only addc/subc/madc read CF")
    _check(op not in ("addc", "subc", "madc") or carry_in is not None, "carry_in", f"{form}: reads CC.CF: pass carry_in")
    _check(not relu or op in ("min", "max") and itype in ("s32", "s16x2"), "relu", f"{form}: .relu needs min/max .s32/.s16x2")
    _check(not shiftamt or op == "bfind", "shiftamt", f"{form}: .shiftamt applies to bfind")
    if op in ("dp4a", "dp2a"):
        return _dot(op, form, itype, mode, *operands)
    if itype in ("u16x2", "s16x2"):
        return _x2(op, form, itype, operands, sat, relu, mode)
    if itype not in INT:
        raise PtxError("type", f"{form}: {itype!r} is not an integer type")
    width, signed = INT[itype]
    fn = _OPS.get(op)
    return fn(op, form, itype, width, signed, operands, mode, sat, relu, shiftamt, cc, carry_in)


def _add_sub(op, form, itype, width, signed, ops, mode, sat, relu, shiftamt, cc, carry_in):
    _check(mode is None, "mode", f"{form}: no mode")
    _check(itype in _ARITH_TYPES, "type", f"{form}: {op} takes {' '.join(_ARITH_TYPES)}")
    _check(not sat or (itype == "s32" and op in ("add", "sub")), "sat", f"{form}: .sat applies to add/sub.s32")
    if (cc or carry_in is not None) and itype in ("u16", "s16"):   # ptxas 13.4 takes them (undocumented)
        raise PtxUnsupported(form, "16-bit carry forms are not modelled")
    _check(not (cc or carry_in is not None) or itype in _CC_TYPES, "cc", f"{form}: carry forms take u32 s32 u64 s64")
    a, b = (_u64(_bits(x, width)) for x in ops)
    m = _mask(width)
    cin = U64(0) if carry_in is None else np.asarray(carry_in, bool).astype(np.uint64)
    if sat:
        sa, sb = _signed(a.astype(np.uint32), 32), _signed(b.astype(np.uint32), 32)
        return _sat_s32(sa + sb if op == "add" else sa - sb).astype(np.int32).view(np.uint32)
    if op in ("add", "addc"):
        d = (a + b + cin) & m
        carry = (d < a) | ((d == a) & ((b != 0) | (cin != 0))) if width == 64 else ((a + b + cin) >> U64(width)) != 0
    elif op == "sub":  # d = a + ~b + 1; CF out = its carry = (a >= b) (NOT a borrow; trace)
        d = (a - b) & m
        carry = a >= b
    else:  # subc: d = a + ~b + CF = a - b - !CF; CF out = its carry: a > b, or a == b with CF in
        d = (a - b + cin - U64(1)) & m
        carry = (a > b) | ((a == b) & (cin != 0))
    d = d.astype(UINT[width])
    return (d, carry) if cc else d


def _mul_mad(op, form, itype, width, signed, ops, mode, sat, relu, shiftamt, cc, carry_in):
    _check(itype in _ARITH_TYPES, "type", f"{form}: {op} takes {' '.join(_ARITH_TYPES)}")
    _check(mode in ("lo", "hi", "wide"), "mode", f"{form}: needs .lo .hi or .wide")
    _check(mode != "wide" or width < 64, "mode", f"{form}: .wide takes 16- or 32-bit types")
    _check(not sat or (op == "mad" and mode == "hi" and itype == "s32"), "sat", f"{form}: .sat only on mad.hi.s32")
    if (cc or carry_in is not None) and mode != "wide" and itype in ("u16", "s16"):   # ptxas 13.4 takes them
        raise PtxUnsupported(form, "16-bit carry forms are not modelled")
    _check(not (cc or carry_in is not None) or (mode != "wide" and itype in _CC_TYPES), "cc",
           f"{form}: carry forms are mad{{c}}.lo/.hi on u32 s32 u64 s64")
    a, b = (_u64(_bits(x, width)) for x in ops[:2])
    if mode == "wide":
        wide = 2 * width
        if signed:
            t = (_signed(a.astype(UINT[width]), width) * _signed(b.astype(UINT[width]), width)).view(np.uint64)
        else:
            t = a * b
        t &= _mask(wide)
        if op == "mul":
            return t.astype(UINT[wide])
        c = _u64(_bits(ops[2], wide))
        return ((t + c) & _mask(wide)).astype(UINT[wide])
    t = _mul_hi(a, b, width, signed) if mode == "hi" else (a * b) & _mask(width)
    if op == "mul":
        return t.astype(UINT[width])
    c = _u64(_bits(ops[2], width))
    if sat:  # mad.hi.sat.s32: the sum clamped to the s32 range
        return _sat_s32(_signed(t.astype(np.uint32), 32) + _signed(c.astype(np.uint32), 32)).astype(
            np.int32).view(np.uint32)
    return _add_sub("addc" if carry_in is not None else "add", form, itype, width, signed,
                    (t.astype(UINT[width]), c.astype(UINT[width])), None, False, False, False, cc, carry_in)


def _mul24(op, form, itype, width, signed, ops, mode, sat, relu, shiftamt, cc, carry_in):
    _check(itype in ("u32", "s32"), "type", f"{form}: {op} takes u32 or s32")
    _check(mode in ("lo", "hi"), "mode", f"{form}: needs .lo or .hi")
    _check(not sat or (op == "mad24" and mode == "hi" and itype == "s32"), "sat", f"{form}: .sat only on mad24.hi.s32")
    a, b = (_bits(x, 32).astype(np.int64) & 0xFFFFFF for x in ops[:2])
    if signed:  # the low 24 bits as a signed 24-bit value
        a = np.where(a & 0x800000, a - (1 << 24), a)
        b = np.where(b & 0x800000, b - (1 << 24), b)
    t = a * b  # exact 48-bit product
    part = (t >> 16) & 0xFFFFFFFF if mode == "hi" else t & 0xFFFFFFFF
    if op == "mul24":
        return part.astype(np.uint32)
    c = _bits(ops[2], 32)
    if sat:
        return _sat_s32(_signed(part.astype(np.uint32), 32) + _signed(c, 32)).astype(np.int32).view(np.uint32)
    return ((part + c.astype(np.int64)) & 0xFFFFFFFF).astype(np.uint32)


def _div_rem(op, form, itype, width, signed, ops, mode, sat, relu, shiftamt, cc, carry_in):
    _check(itype in _ARITH_TYPES and mode is None, "type", f"{form}: {op} takes {' '.join(_ARITH_TYPES)}")
    a, b = (_bits(x, width) for x in ops)
    zero = b == 0
    safe = np.where(zero, UINT[width](1), b)
    if signed:
        sa, sb = _signed(a, width), _signed(safe, width)
        if width == 64:  # avoid INT64_MIN / -1 overflow in numpy: |a| and |b| as unsigned
            ua = np.where(sa < 0, (~a.astype(np.uint64)) + U64(1), a.astype(np.uint64))
            ub = np.where(sb < 0, (~safe.astype(np.uint64)) + U64(1), safe.astype(np.uint64))
            q, r = ua // ub, ua % ub
            q = np.where((sa < 0) != (sb < 0), (~q) + U64(1), q)
            r = np.where(sa < 0, (~r) + U64(1), r)
            res = q if op == "div" else r
        else:
            q = np.abs(sa) // np.abs(sb)
            r = np.abs(sa) - q * np.abs(sb)
            q = np.where((sa < 0) != (sb < 0), -q, q)
            r = np.where(sa < 0, -r, r)  # C semantics: the remainder has the dividend's sign
            res = (q if op == "div" else r).view(np.uint64)
    else:
        res = (a // safe) if op == "div" else (a % safe)
    res = np.asarray(res).astype(np.uint64) & _mask(width)
    return np.where(zero, UINT[width](-1 & ((1 << width) - 1)), res.astype(UINT[width])).astype(UINT[width])


def _abs_neg(op, form, itype, width, signed, ops, mode, sat, relu, shiftamt, cc, carry_in):
    _check(signed and mode is None, "type", f"{form}: {op} takes s16 s32 s64")
    a = _bits(ops[0], width)
    neg = (~a + UINT[width](1)).astype(UINT[width])
    if op == "neg":
        return neg
    return np.where(a >> UINT[width](width - 1), neg, a).astype(UINT[width])  # abs(INT_MIN) = INT_MIN


def _min_max(op, form, itype, width, signed, ops, mode, sat, relu, shiftamt, cc, carry_in):
    _check(itype in _ARITH_TYPES and mode is None, "type", f"{form}: {op} takes {' '.join(_ARITH_TYPES)}")
    a, b = (_bits(x, width) for x in ops)
    x, y = (a.view(SINT[width]), b.view(SINT[width])) if signed else (a, b)
    r = np.minimum(x, y) if op == "min" else np.maximum(x, y)
    if relu:
        r = np.maximum(r, 0)
    return r.astype(SINT[width] if signed else UINT[width]).view(UINT[width])


def _x2(op, form, itype, ops, sat, relu, mode):
    _check(op in ("add", "min", "max") and not sat and mode is None, "type", f"{form}: 16x2 forms are add/min/max")
    _check(not relu or (itype == "s16x2" and op != "add"), "relu", f"{form}: .relu needs min/max.s16x2")
    a, b = (_bits(x, 32) for x in ops)
    halves = []
    for sh in (0, 16):
        x = ((a >> sh) & 0xFFFF).astype(np.uint16)
        y = ((b >> sh) & 0xFFFF).astype(np.uint16)
        if op == "add":
            r = (x + y).astype(np.uint16)
        else:
            r = _min_max(op, form, itype[:3], 16, itype[0] == "s", (x, y), None, False, relu, False, False, None)
        halves.append(r.astype(np.uint32))
    return halves[0] | (halves[1] << 16)


def _bitcount(op, form, itype, width, signed, ops, mode, sat, relu, shiftamt, cc, carry_in):
    if op == "bfind":
        _check(itype in ("u32", "s32", "u64", "s64"), "type", f"{form}: bfind takes u32 s32 u64 s64")
    else:
        _check(itype in ("b32", "b64"), "type", f"{form}: {op} takes b32 or b64")
    a = _u64(_bits(ops[0], width))
    if op == "popc":
        return np.bitwise_count(a).astype(np.uint32)
    if op == "brev":  # swap bits, pairs, nibbles, bytes, halves, words of a 64-bit value, then align
        r = a
        for sh, m in ((1, 0x5555555555555555), (2, 0x3333333333333333), (4, 0x0F0F0F0F0F0F0F0F),
                      (8, 0x00FF00FF00FF00FF), (16, 0x0000FFFF0000FFFF), (32, 0x00000000FFFFFFFF)):
            r = ((r >> U64(sh)) & U64(m)) | ((r & U64(m)) << U64(sh))
        return (r >> U64(64 - width)).astype(UINT[width])
    if op == "bfind" and signed:  # negative inputs: the most significant 0 (search ~a)
        a = np.where(a >> U64(width - 1), ~a & _mask(width), a)
    msb = _msb(a)
    if op == "clz":
        return np.where(a == 0, width, width - 1 - msb).astype(np.uint32)
    d = np.where(a == 0, np.uint32(0xFFFFFFFF), msb.astype(np.uint32))
    if shiftamt:  # left shift that brings the found bit to the msb
        d = np.where(a == 0, d, (width - 1 - msb).astype(np.uint32))
    return d.astype(np.uint32)


def _msb(a):
    """Position of the highest set bit of uint64 values (-1 for 0)."""
    r = np.full(a.shape, -1, np.int64)
    x = a.copy()
    for step in (32, 16, 8, 4, 2, 1):
        big = x >= (U64(1) << U64(step))
        x = np.where(big, x >> U64(step), x)
        r += np.where(big, step, 0)
    return r + (x != 0)


def _shr_sat(x, n):
    """x >> n for uint64 arrays and any u32 amount n (0 when n >= 64)."""
    return np.where(n >= 64, U64(0), x >> np.minimum(n, 63).astype(np.uint64))


def _shl_sat(x, n):
    """x << n for uint64 arrays and any u32 amount n (0 when n >= 64)."""
    return np.where(n >= 64, U64(0), x << np.minimum(n, 63).astype(np.uint64))


def _bfe_bfi(op, form, itype, width, signed, ops, mode, sat, relu, shiftamt, cc, carry_in):
    """32-bit forms: PTX 9.7.7.x, pos and len modulo 256 (ptxas: PRMT R, pos, 0x7604, len then BFE-like
    SHF/SGXT or BMSK, which read the low bytes).
    64-bit forms, measured (traces/ptx_alu_sm90.npz: 2728 bfe.u64, 2728 bfe.s64, 21736 bfi.b64 cases) and read
    from the sm_90a SASS: pos and len are used as full u32 values, every shift by 64 or more giving 0 (sign fill
    for SHF.R.S64); SHF without .W clamps its amount at the width, so len 0x100 is not len 0:
        mask = len >= 64 ? ~0 : (1 << len) - 1          (SHF.L.U32 / SHF.L.U64.HI of 1, then - 1)
        bfe.u64: d = (a >> pos) & mask                    (SHF.R.U64 / SHF.R.U32.HI)
        bfe.s64: t = (a >>s pos) & mask; d = t | ~mask if (t >> (len - 1 mod 2^32)) != 0 else t
                 (the sign bit is bit len-1 of the field when 1 <= len <= 64; none for len 0 or len > 64)
        bfi.b64: d = ((a & mask) << pos) | (b & ~(mask << pos))   (bfi d, a, b, pos, len: a goes into b)"""
    if op == "bfe":
        _check(itype in ("u32", "s32", "u64", "s64"), "type", f"{form}: bfe takes u32 s32 u64 s64")
        a = _u64(_bits(ops[0], width))
        if width == 64:
            pos = _u64(_bits(ops[1], 32))
            length = _u64(_bits(ops[2], 32))
            mask = _shl_sat(U64(1), length) - U64(1)  # wraps to ~0 when len >= 64
            if signed:
                # SHF.R.S64: the sign fills from the top; any pos >= 63 leaves only sign bits
                t = (a.view(np.int64) >> np.minimum(pos, U64(63)).astype(np.int64)).view(np.uint64) & mask
                ext = _shr_sat(t, (length - U64(1)) & U64(0xFFFFFFFF)) != 0
                return np.where(ext, t | ~mask, t).astype(np.uint64)
            return (_shr_sat(a, pos) & mask).astype(np.uint64)
        pos = (_bits(ops[1], 32) & 0xFF).astype(np.int64)
        length = (_bits(ops[2], 32) & 0xFF).astype(np.int64)
        # PTX: d[i] = a[pos + i] for i < len and pos + i <= msb, else the sign bit a[min(pos + len - 1, msb)]
        # (0 for unsigned types or len == 0)
        take = np.clip(np.minimum(length, width - pos), 0, width)
        field = np.where(pos >= width, U64(0), a >> np.minimum(pos, width - 1).astype(np.uint64))
        keep = np.where(take >= 64, ALL64, (U64(1) << take.astype(np.uint64)) - U64(1))
        field &= keep
        if signed:
            sbit_pos = np.minimum(pos + length - 1, width - 1)
            sbit = np.where(length == 0, U64(0), (a >> np.maximum(sbit_pos, 0).astype(np.uint64)) & U64(1))
            field = np.where(sbit == 1, field | (~keep), field)
        return (field & _mask(width)).astype(UINT[width])
    _check(itype in ("b32", "b64"), "type", f"{form}: bfi takes b32 or b64")
    a, b = (_u64(_bits(x, width)) for x in ops[:2])
    if width == 64:
        pos = _u64(_bits(ops[2], 32))
        length = _u64(_bits(ops[3], 32))
        mask = _shl_sat(U64(1), length) - U64(1)
        return (_shl_sat(a & mask, pos) | (b & ~_shl_sat(mask, pos))).astype(np.uint64)
    pos = (_bits(ops[2], 32) & 0xFF).astype(np.int64)
    length = (_bits(ops[3], 32) & 0xFF).astype(np.int64)
    take = np.clip(np.minimum(length, width - pos), 0, width)  # bits i < len with pos + i <= msb
    keep = np.where(take >= 64, ALL64, (U64(1) << take.astype(np.uint64)) - U64(1))
    sh = np.minimum(pos, width - 1).astype(np.uint64)
    mask = np.where(take > 0, (keep << sh) & _mask(width), U64(0))
    return ((b & ~mask) | ((a << sh) & mask)).astype(UINT[width])


def _prmt_op(op, form, itype, width, signed, ops, mode, sat, relu, shiftamt, cc, carry_in):
    _check(itype == "b32", "type", f"{form}: prmt takes b32")
    _check(mode is None or mode in _PRMT_MODES, "mode", f"{form}: mode is one of {' '.join(_PRMT_MODES)}")
    return prmt(*ops, mode=mode)


def _lop3_op(op, form, itype, width, signed, ops, mode, sat, relu, shiftamt, cc, carry_in):
    _check(itype == "b32" and mode is None, "type", f"{form}: lop3 takes b32")
    return lop3(*ops)


def _shf(op, form, itype, width, signed, ops, mode, sat, relu, shiftamt, cc, carry_in):
    _check(itype == "b32", "type", f"{form}: shf takes b32")
    _check(mode in ("clamp", "wrap"), "mode", f"{form}: needs .clamp or .wrap")
    a, b, c = (_u64(_bits(x, 32)) for x in ops)
    n = np.minimum(c, U64(32)) if mode == "clamp" else c & U64(31)
    cat = (b << U64(32)) | a
    if op == "shf.l":  # the 32 msbs of {b, a} << n
        r = (cat << n) >> U64(32)
    else:  # the 32 lsbs of {b, a} >> n
        r = cat >> n
    return (r & U64(0xFFFFFFFF)).astype(np.uint32)


def _shift(op, form, itype, width, signed, ops, mode, sat, relu, shiftamt, cc, carry_in):
    if op == "shl":
        _check(itype in ("b16", "b32", "b64"), "type", f"{form}: shl takes b16 b32 b64")
    a = _bits(ops[0], width)
    n = np.minimum(_bits(ops[1], 32), np.uint32(width))  # PTX: amounts above the width are clamped to it
    if op == "shl":
        r = np.where(n >= width, U64(0), _u64(a) << np.minimum(n, width - 1).astype(np.uint64))
        return (r & _mask(width)).astype(UINT[width])
    if signed:
        s = a.view(SINT[width]).astype(np.int64)
        return (s >> np.minimum(n, width - 1).astype(np.int64)).astype(SINT[width]).view(UINT[width])
    r = np.where(n >= width, U64(0), _u64(a) >> np.minimum(n, width - 1).astype(np.uint64))
    return r.astype(UINT[width])


def _logic(op, form, itype, width, signed, ops, mode, sat, relu, shiftamt, cc, carry_in):
    _check(itype in ("b16", "b32", "b64"), "type", f"{form}: {op} takes b16 b32 b64 (pred: use numpy)")
    x = [_bits(v, width) for v in ops]
    if op == "and":
        return x[0] & x[1]
    if op == "or":
        return x[0] | x[1]
    if op == "xor":
        return x[0] ^ x[1]
    if op == "not":
        return ~x[0]
    return (x[0] == 0).astype(UINT[width])  # cnot


def _sad(op, form, itype, width, signed, ops, mode, sat, relu, shiftamt, cc, carry_in):
    _check(itype in _ARITH_TYPES, "type", f"{form}: sad takes {' '.join(_ARITH_TYPES)}")
    a, b, c = (_bits(x, width) for x in ops)
    if signed:
        x, y = a.view(SINT[width]), b.view(SINT[width])
        lt = x < y
    else:
        lt = a < b
    diff = np.where(lt, b - a, a - b).astype(UINT[width])  # |a - b| modulo 2^width
    return (diff + c).astype(UINT[width])


def _dot(op, form, itype, mode, a, b, c):
    parts = str(itype).split(".")
    _check(len(parts) == 2 and all(p in ("u32", "s32") for p in parts), "type",
           f"{form}: itype is 'atype.btype' with each u32 or s32")
    _check((mode in ("lo", "hi")) == (op == "dp2a"), "mode", f"{form}: dp2a needs .lo/.hi, dp4a takes no mode")
    sa, sb = parts[0] == "s32", parts[1] == "s32"
    a, b, c = (_bits(x, 32).astype(np.int64) for x in (a, b, c))

    def field(x, i, w, s):
        v = (x >> (w * i)) & ((1 << w) - 1)
        return np.where(v >= (1 << (w - 1)), v - (1 << w), v) if s else v

    acc = c.copy()
    if op == "dp4a":
        for i in range(4):
            acc += field(a, i, 8, sa) * field(b, i, 8, sb)
    else:
        base = 0 if mode == "lo" else 2
        for i in range(2):
            acc += field(a, i, 16, sa) * field(b, base + i, 8, sb)
    return (acc & 0xFFFFFFFF).astype(np.uint32)


def _szext_bmsk(op, form, itype, width, signed, ops, mode, sat, relu, shiftamt, cc, carry_in):
    _check(mode in ("clamp", "wrap"), "mode", f"{form}: needs .clamp or .wrap")
    a, b = (_u64(_bits(x, 32)) for x in ops)
    full = U64(0xFFFFFFFF)
    if op == "szext":
        _check(itype in ("u32", "s32"), "type", f"{form}: szext takes u32 or s32")
        b1 = b & U64(31)
        too_large = (b >= U64(32)) if mode == "clamp" else np.zeros(b.shape, bool)
        mask = np.where(too_large, U64(0), (full << b1) & full)  # PTX: mask = ~0 << b1 (0 if clamped)
        sign = np.zeros(b.shape, bool)
        if signed:
            sign = (b1 != 0) & ~too_large & (((a >> ((b1 - U64(1)) & U64(31))) & U64(1)) == 1)
        return ((a & ~mask & full) | np.where(sign, mask, U64(0))).astype(np.uint32)
    _check(itype == "b32", "type", f"{form}: bmsk takes b32")
    a1, b1 = a & U64(31), b & U64(31)
    mask0 = (full << a1) & full
    total = a1 + b1
    mask1 = np.where(total >= 32, U64(0), (full << total) & full)
    if mode == "clamp":
        mask0 = np.where(a >= 32, U64(0), mask0)
        mask1 = np.where((a >= 32) | (b >= 32), U64(0), mask1)
    mask1 = np.where((total < 32) & ~((mode == "clamp") & ((a >= 32) | (b >= 32))) & (b1 == 0), full, mask1)
    return (mask0 & ~mask1 & full).astype(np.uint32)


_OPS = {"add": _add_sub, "sub": _add_sub, "addc": _add_sub, "subc": _add_sub, "mul": _mul_mad, "mad": _mul_mad,
        "madc": _mul_mad, "mul24": _mul24, "mad24": _mul24, "div": _div_rem, "rem": _div_rem, "abs": _abs_neg,
        "neg": _abs_neg, "min": _min_max, "max": _min_max, "popc": _bitcount, "clz": _bitcount,
        "bfind": _bitcount, "brev": _bitcount, "bfe": _bfe_bfi, "bfi": _bfe_bfi, "prmt": _prmt_op,
        "lop3": _lop3_op, "shf.l": _shf, "shf.r": _shf, "shl": _shift, "shr": _shift, "and": _logic,
        "or": _logic, "xor": _logic, "not": _logic, "cnot": _logic, "sad": _sad, "szext": _szext_bmsk,
        "bmsk": _szext_bmsk}
