"""Plain-Python exact references for tests/ptx/test_arith.py (fractions.Fraction and integers only).

Written from IEEE 754-2019 (4.3 rounding, 6.3 signed zeros, 7.4 overflow) and the PTX ISA text, without
looking at tcemu.ptx's kernels. Values are ('nan',), ('inf', sign), ('zero', sign) or ('num', Fraction).
"""
from fractions import Fraction

# name: (exponent bits, mantissa bits, bias, kind, container bits, low bits ignored)
FORMATS = {
    "f64": (11, 52, 1023, "ieee", 64, 0),
    "f32": (8, 23, 127, "ieee", 32, 0),
    "tf32": (8, 10, 127, "ieee", 32, 13),
    "f16": (5, 10, 15, "ieee", 16, 0),
    "bf16": (8, 7, 127, "ieee", 16, 0),
    "e4m3": (4, 3, 7, "fn", 8, 0),
    "e5m2": (5, 2, 15, "ieee", 8, 0),
    "e2m3": (2, 3, 1, "none", 8, 0),
    "e3m2": (3, 2, 3, "none", 8, 0),
    "e2m1": (2, 1, 1, "none", 4, 0),
}


def canonical_nan(fmt):
    eb, mb, _, kind, _, shift = FORMATS[fmt]
    return ((1 << (eb + mb)) - 1) << shift


# NaN results measured on an H100 (traces/ptx_alu_sm90.npz, rules written out in NOTES.md "ALU capture"):
# f32/f16/bf16 arithmetic gives the canonical NaN; f64 arithmetic returns a NaN operand with its quiet bit set
# (sign and payload kept) -- add/sub/mul/fma look at the operands in the order b, c, a, and div/sqrt/rcp in the
# order a, b -- and an invalid operation gives 0xfff8000000000000.
F64_NAN_ORDER = {"add": (1, 0), "sub": (1, 0), "mul": (1, 0), "fma": (1, 2, 0), "div": (0, 1), "sqrt": (0,)}


def is_nan_bits(bits, fmt):
    return decode(bits, fmt)[0] == "nan"


def nan_result(fmt, op, operands):
    """The NaN an arithmetic op returns when some operand (raw bits, in PTX order) is NaN."""
    if fmt != "f64":
        return canonical_nan(fmt)
    for i in F64_NAN_ORDER[op]:
        if is_nan_bits(operands[i], fmt):
            return operands[i] | (1 << 51)
    raise AssertionError("no NaN operand")


def invalid_nan(fmt):
    """The NaN of an invalid operation (0 * inf, inf - inf, 0/0, sqrt(-1))."""
    return 0xFFF8000000000000 if fmt == "f64" else canonical_nan(fmt)


def decode(bits, fmt, ftz=False):
    eb, mb, bias, kind, _, shift = FORMATS[fmt]
    raw = bits >> shift
    sign = (raw >> (eb + mb)) & 1
    field = (raw >> mb) & ((1 << eb) - 1)
    man = raw & ((1 << mb) - 1)
    if kind == "ieee" and field == (1 << eb) - 1:
        return ("nan",) if man else ("inf", sign)
    if kind == "fn" and field == (1 << eb) - 1 and man == (1 << mb) - 1:
        return ("nan",)
    if field == 0:
        if man == 0 or ftz:
            return ("zero", sign)
        mag = Fraction(man) * Fraction(2) ** (1 - bias - mb)
    else:
        mag = Fraction(man + (1 << mb)) * Fraction(2) ** (field - bias - mb)
    return ("num", -mag if sign else mag)


def floor_log2(q: Fraction) -> int:
    """floor(log2(q)) for q > 0, exactly."""
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    return e


def largest_pattern(fmt):
    eb, mb, _, kind, _, _ = FORMATS[fmt]
    if kind == "ieee":
        return (((1 << eb) - 1) << mb) - 1
    if kind == "fn":
        return (1 << (eb + mb)) - 2
    return (1 << (eb + mb)) - 1


def encode(value, fmt, mode="rn", ftz=False, satfinite=False):
    """Bits of an exact value rounded once. mode: rn rz rm rp rna. Overflow per IEEE 754 7.4
    (satfinite and formats without inf: the largest finite). ftz flushes a result that is tiny after rounding
    with an unbounded exponent (IEEE 754 7.5; measured for f32 on an H100, traces/ptx_alu_edges_sm90.npz), which
    includes values just below the smallest normal that round up to it on the format's grid."""
    eb, mb, bias, kind, _, shift = FORMATS[fmt]
    if value[0] == "nan":
        return canonical_nan(fmt)
    sbit = 1 << (eb + mb)
    if value[0] == "zero":
        return (sbit if value[1] else 0) << shift
    if value[0] == "inf":
        s = value[1]
        if satfinite or kind == "none":
            return ((sbit if s else 0) | largest_pattern(fmt)) << shift
        if kind == "fn":
            return canonical_nan(fmt)
        return ((sbit if s else 0) | (((1 << eb) - 1) << mb)) << shift
    v = value[1]
    neg = v < 0
    mag = -v if neg else v
    emin = 1 - bias
    e = max(floor_log2(mag), emin)
    quantum = Fraction(2) ** (e - mb)
    n = mag / quantum
    k = n.numerator // n.denominator
    frac = n - k
    if frac:
        if mode == "rn":
            k += frac > Fraction(1, 2) or (frac == Fraction(1, 2) and k % 2 == 1)
        elif mode == "rna":
            k += frac >= Fraction(1, 2)
        elif mode == "rp":
            k += not neg
        elif mode == "rm":
            k += neg
    # k * 2^(e - mb): k in [2^mb, 2^(mb+1)] for normals, [0, 2^mb] for subnormals
    if k >= (1 << (mb + 1)):
        k >>= 1
        e += 1
    if k < (1 << mb):
        pat = k
    else:
        pat = ((e - emin + 1) << mb) | (k - (1 << mb))
    if pat > largest_pattern(fmt):
        toward_inf = mode in ("rn", "rna") or (mode == "rp" and not neg) or (mode == "rm" and neg)
        if satfinite or kind == "none" or not toward_inf:
            pat = largest_pattern(fmt)
        elif kind == "ieee":
            pat = ((1 << eb) - 1) << mb
        else:
            return canonical_nan(fmt)
    if ftz and tiny_after_rounding(value, mode, fmt):
        pat = 0
    return ((sbit if neg else 0) | pat) << shift


def negate(value):
    if value[0] == "num":
        return ("num", -value[1])
    if value[0] in ("zero", "inf"):
        return (value[0], 1 - value[1])
    return value


def zero_sum_sign(mode):
    return 1 if mode == "rm" else 0


def ref_add(a, b, fmt, mode="rn", ftz=False, sub=False):
    x, y = decode(a, fmt, ftz), decode(b, fmt, ftz)
    if sub:
        y = negate(y)
    if "nan" in (x[0], y[0]):
        return nan_result(fmt, "add", (a, b))
    if x[0] == "inf" and y[0] == "inf":
        return invalid_nan(fmt) if x[1] != y[1] else encode(x, fmt)
    if x[0] == "inf" or y[0] == "inf":
        return encode(x if x[0] == "inf" else y, fmt)
    if x[0] == "zero" and y[0] == "zero":
        s = (x[1] | y[1]) if mode == "rm" else (x[1] & y[1])
        return encode(("zero", s), fmt)
    xv = x[1] if x[0] == "num" else 0
    yv = y[1] if y[0] == "num" else 0
    s = xv + yv
    if s == 0:
        return encode(("zero", zero_sum_sign(mode)), fmt)
    return encode(("num", s), fmt, mode, ftz)


def ref_mul(a, b, fmt, mode="rn", ftz=False):
    x, y = decode(a, fmt, ftz), decode(b, fmt, ftz)
    if "nan" in (x[0], y[0]):
        return nan_result(fmt, "mul", (a, b))
    sx = x[1] < 0 if x[0] == "num" else x[1]
    sy = y[1] < 0 if y[0] == "num" else y[1]
    s = int(sx) ^ int(sy)
    if {x[0], y[0]} == {"inf", "zero"}:
        return invalid_nan(fmt)
    if "inf" in (x[0], y[0]):
        return encode(("inf", s), fmt)
    if "zero" in (x[0], y[0]):
        return encode(("zero", s), fmt)
    return encode(("num", x[1] * y[1]), fmt, mode, ftz)


def ref_fma(a, b, c, fmt, mode="rn", ftz=False):
    x, y, z = decode(a, fmt, ftz), decode(b, fmt, ftz), decode(c, fmt, ftz)
    if "nan" in (x[0], y[0], z[0]):
        return nan_result(fmt, "fma", (a, b, c))
    sx = x[1] < 0 if x[0] == "num" else x[1]
    sy = y[1] < 0 if y[0] == "num" else y[1]
    sp = int(sx) ^ int(sy)
    if {x[0], y[0]} == {"inf", "zero"}:
        return invalid_nan(fmt)
    if "inf" in (x[0], y[0]):
        if z[0] == "inf" and z[1] != sp:
            return invalid_nan(fmt)
        return encode(("inf", sp), fmt)
    if z[0] == "inf":
        return encode(z, fmt)
    if "zero" in (x[0], y[0]):
        if z[0] == "zero":
            return encode(("zero", (sp | z[1]) if mode == "rm" else (sp & z[1])), fmt)
        return encode(z, fmt, mode, ftz)
    p = x[1] * y[1]
    s = p + (z[1] if z[0] == "num" else 0)
    if s == 0:
        return encode(("zero", zero_sum_sign(mode)), fmt)
    return encode(("num", s), fmt, mode, ftz)


def ref_div(a, b, fmt, mode="rn", ftz=False):
    x, y = decode(a, fmt, ftz), decode(b, fmt, ftz)
    if "nan" in (x[0], y[0]):
        return nan_result(fmt, "div", (a, b))
    sx = x[1] < 0 if x[0] == "num" else x[1]
    sy = y[1] < 0 if y[0] == "num" else y[1]
    s = int(sx) ^ int(sy)
    if x[0] == y[0] and x[0] in ("inf", "zero"):
        return invalid_nan(fmt)
    if x[0] == "inf" or y[0] == "zero":
        return encode(("inf", s), fmt)
    if x[0] == "zero" or y[0] == "inf":
        return encode(("zero", s), fmt)
    return encode(("num", x[1] / y[1]), fmt, mode, ftz)


def isqrt_fraction_round(q: Fraction, fmt, mode, ftz):
    """sqrt(q), q > 0, rounded once: bracket the root by integers at the format's quantum."""
    eb, mb, bias, _, _, _ = FORMATS[fmt]
    emin = 1 - bias
    e = max(floor_log2(q) // 2, emin)
    quantum = Fraction(2) ** (e - mb)
    # k = floor(sqrt(q) / quantum) = isqrt(floor(q / quantum^2)) exactly (floor of sqrt of a rational)
    t = q / (quantum * quantum)
    k = _isqrt(t.numerator // t.denominator)
    exact = Fraction(k * k) == t
    lo = Fraction(k)
    if not exact:
        mid2 = (lo + Fraction(1, 2)) ** 2  # compare sqrt(t) with k + 1/2 via squares
        if mode == "rn":
            k += t > mid2 or (t == mid2 and k % 2 == 1)
        elif mode == "rna":
            k += t >= mid2
        elif mode == "rp":
            k += 1
    return encode(("num", k * quantum), fmt, "rz", ftz)  # k * quantum is exact in the format (or overflows)


def _isqrt(n):
    import math
    return math.isqrt(n)


def ref_sqrt(a, fmt, mode="rn", ftz=False):
    x = decode(a, fmt, ftz)
    if x[0] == "nan":
        return nan_result(fmt, "sqrt", (a,))
    if x[0] == "zero":
        return encode(x, fmt)
    if x[0] == "inf":
        return invalid_nan(fmt) if x[1] else encode(x, fmt)
    if x[1] < 0:
        return invalid_nan(fmt)
    return isqrt_fraction_round(x[1], fmt, mode, ftz)


def ref_float_to_int(a, fmt, mode, width, signed, ftz=False):
    """cvt.rXi.{s,u}W.fmt: round to an integer (rni ties to even), saturate to the range. NaN (measured,
    traces/ptx_alu_sm90.npz): 0 from f32/f16/bf16 into at most 32 bits, else 1 << (width - 1)."""
    x = decode(a, fmt, ftz)
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
    if x[0] == "nan":
        return 1 << (width - 1) if fmt == "f64" or width == 64 else 0
    if x[0] == "zero":
        return 0
    if x[0] == "inf":
        v = hi if x[1] == 0 else lo
    else:
        q = x[1]
        fl = q.numerator // q.denominator
        frac = q - fl
        if mode == "rzi":
            v = fl if q >= 0 else -((-q).numerator // (-q).denominator)
        elif mode == "rmi":
            v = fl
        elif mode == "rpi":
            v = fl + (frac != 0)
        else:
            v = fl + (frac > Fraction(1, 2) or (frac == Fraction(1, 2) and fl % 2 == 1))
        v = min(max(v, lo), hi)
    return v & ((1 << width) - 1)


def ref_int_to_float(value: int, fmt, mode):
    if value == 0:
        return 0
    return encode(("num", Fraction(value)), fmt, mode)


def ref_cvt_nan(bits, src, dst):
    """cvt.{rn,rz,rm,rp}.dst.src of a NaN, measured: through the f64 unit (f64 source or f64 destination) the
    sign is kept, the payload keeps its top bits (or moves to the top), the quiet bit is set; every other
    narrowing gives the destination's canonical NaN."""
    if "f64" not in (src, dst):
        return canonical_nan(dst)
    seb, smb, _, _, sw, _ = FORMATS[src]
    deb, dmb, _, _, dw, _ = FORMATS[dst]
    sign = bits >> (sw - 1)
    payload = bits & ((1 << smb) - 1)
    payload = payload << (dmb - smb) if dmb >= smb else payload >> (smb - dmb)
    return (sign << (dw - 1)) | (((1 << deb) - 1) << dmb) | payload | (1 << (dmb - 1))


def tiny_after_rounding(value, mode, fmt="f32"):
    """IEEE 754 7.5 tininess after rounding: the nonzero value rounded to the format's precision with an
    unbounded exponent range lies below the smallest normal."""
    eb, mb, bias, _, _, _ = FORMATS[fmt]
    v = value[1]
    neg = v < 0
    mag = -v if neg else v
    quantum = Fraction(2) ** (floor_log2(mag) - mb)
    n = mag / quantum
    k = n.numerator // n.denominator
    frac = n - k
    if frac:
        if mode == "rn":
            k += frac > Fraction(1, 2) or (frac == Fraction(1, 2) and k % 2 == 1)
        elif mode == "rna":
            k += frac >= Fraction(1, 2)
        elif mode == "rp":
            k += not neg
        elif mode == "rm":
            k += neg
    return k * quantum < Fraction(2) ** (1 - bias)


# ---- the 64-bit bfe/bfi sequences of ptxas 13.0 (sm_90a), instruction by instruction on 32-bit halves.
# SHF without .W clamps its shift amount (the full u32 register) at 32 for the .U32/.S32 types and at 64 for
# .U64/.S64; the .HI variants return the high word of the 64-bit funnel {hi:lo}.

M32 = 0xFFFFFFFF


def _shf_l_lo(lo, n):                 # SHF.L.U32 d, lo, n, RZ
    return (lo << min(n, 32)) & M32


def _shf_l_hi(lo, hi, n):             # SHF.L.U64.HI d, lo, n, hi
    return ((((hi << 32) | lo) << min(n, 64)) >> 32) & M32


def _shf_r_lo(lo, hi, n, signed):     # SHF.R.U64 / SHF.R.S64 d, lo, n, hi
    v = (hi << 32) | lo
    if signed and hi >> 31:
        v -= 1 << 64
    return (v >> min(n, 64)) & M32


def _shf_r_hi(hi, n, signed):         # SHF.R.U32.HI / SHF.R.S32.HI d, RZ, n, hi
    v = hi - (1 << 32) if signed and hi >> 31 else hi
    return (v >> min(n, 32)) & M32


def _mask64(length):                  # 1 << len (two SHF.L), then IADD3 / IADD3.X with -1
    one = (_shf_l_hi(1, 0, length) << 32) | _shf_l_lo(1, length)
    return (one - 1) % (1 << 64)


def _shl64(x, n):
    return (_shf_l_hi(x & M32, x >> 32, n) << 32) | _shf_l_lo(x & M32, n)


def sass_bfe64(a, pos, length, signed):
    m = _mask64(length)
    field = (_shf_r_hi(a >> 32, pos, signed) << 32) | _shf_r_lo(a & M32, a >> 32, pos, signed)
    t = field & m
    if not signed:
        return t
    l1 = (length - 1) & M32           # VIADD len, -1
    s = (_shf_r_hi(t >> 32, l1, False) << 32) | _shf_r_lo(t & M32, t >> 32, l1, False)
    return t | (~m % (1 << 64)) if s else t   # @P0 LOP3 0xf3: t | ~mask


def sass_bfi64(a, b, pos, length):
    """bfi.b64 d, a, b, pos, len: insert a's low len bits into b at pos (LOP3 0xf4: a_sh | (b & ~m_sh))."""
    m = _mask64(length)
    return _shl64(a & m, pos) | (b & ~_shl64(m, pos) % (1 << 64))
