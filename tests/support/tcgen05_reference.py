"""tcgen05.mma's published arithmetic in exact rationals (no code shared with fdp.py's integer kernels): the
reference of tests/blackwell/test_mma.py and test_mma_forms.py, with their descriptor and random-bits helpers."""
import math
from fractions import Fraction

import numpy as np

from tcemu import UmmaDescriptor
from tcemu.arith.formats import decode, get_format


def desc(start, swizzle="128B", sbo=1024, lbo=16):
    return UmmaDescriptor(start_address=start, lbo=lbo, sbo=sbo, swizzle=swizzle, version=1)



def _lead(x: Fraction) -> int:
    """floor(log2 |x|) for x != 0 (integers only: 2^e <= |x| compared as n >= d 2^e)."""
    n, d = abs(x.numerator), x.denominator
    e = n.bit_length() - d.bit_length()
    return e if (n >= d << e if e >= 0 else n << -e >= d) else e - 1



def _align(x: Fraction, fmt: str) -> int:
    return _lead(x) if fmt == "ue8m0" else max(_lead(x), 1 - get_format(fmt).bias)  # subnormals align at emin



def _trunc_sum(terms, k: int) -> Fraction:
    """The exact sum of `terms` (numerator, denominator > 0 pairs), each truncated toward zero to a multiple of
    2^k, in integers: each term's floor(|n| / (d 2^k)) with its sign, times 2^k once."""
    total = 0
    for n, d in terms:
        m = abs(n) // (d << k) if k >= 0 else (abs(n) << -k) // d
        total += -m if n < 0 else m
    return Fraction(total << k) if k >= 0 else Fraction(total, 1 << -k)



def _round_bits(x: Fraction, out: str) -> int:
    """x rounded once: f32 toward zero, f16 to nearest even; underflow to zero gives +0."""
    f = get_format(out)
    if x == 0:
        return 0
    e = max(_lead(x), 1 - f.bias)
    q = Fraction(2) ** (e - f.man_bits)
    n = abs(x) / q
    if out == "f32":
        m = n.numerator // n.denominator
    else:
        m = round(n)  # Python rounds Fractions half to even
    if m == 0:
        return 0
    sign = 1 << (f.bits - 1) if x < 0 else 0
    if m * q > f.max_finite:  # overflow: inf (the f32 sums here never get there)
        return ((1 << f.exp_bits) - 1) << f.man_bits | sign
    bits = int(np.array(float(m * q), np.float32 if out == "f32" else np.float16).view(np.uint32 if out == "f32"
                                                                                      else np.uint16))
    return bits | sign



def ref_fused(a, b, c, fmt_a, fmt_b, out, rows, F=25, zero_exp=-133, sa=None, sb=None):
    """D bits of `rows` of one fused sum: every product and C aligned at the largest exponent, truncated
    toward zero below 2^(E - F), summed exactly, rounded once (finite inputs only). sa/sb: ue8m0 scales.
    Each element's exponent and scaled value are worked out once; a product is the pair (n1 n2, d1 d2)."""
    N = len(b)
    D = np.zeros((len(a), N), np.uint32)
    bs = [[(v.numerator, v.denominator) for v in ([y * sb[n] for y in b[n]] if sb else b[n])] for n in range(N)]
    eb = [[_align(y, fmt_b) + (_lead(sb[n]) if sb else 0) for y in b[n]] for n in range(N)]
    for m in rows:
        am = [(v.numerator, v.denominator) for v in ([x * sa[m] for x in a[m]] if sa else a[m])]
        ea = [_align(x, fmt_a) + (_lead(sa[m]) if sa else 0) for x in a[m]]
        for n in range(N):
            terms = [(xn * yn, xd * yd) for (xn, xd), (yn, yd) in zip(am, bs[n])]
            exps = [ex + ey if pn else zero_exp for (pn, _), ex, ey in zip(terms, ea, eb[n])]
            if c is not None:
                terms.append((c[m][n].numerator, c[m][n].denominator))
                exps.append(_align(c[m][n], out) if c[m][n] else zero_exp)
            D[m, n] = _round_bits(_trunc_sum(terms, max(exps) - F), out)
    return D



def _dot(xs, ys) -> Fraction:
    """sum(x y) exactly, over one common denominator (one Fraction, not one per product)."""
    pairs = [(x.numerator * y.numerator, x.denominator * y.denominator) for x, y in zip(xs, ys)]
    den = math.lcm(*(d for _, d in pairs))
    return Fraction(sum(n * (den // d) for n, d in pairs), den)



def ref_grouped(a, b, c, sa, sb, scale_fmt, rows, F=35, zero_exp=-139):
    """kind::mxf4* per MMA-Sim: groups of 16 products summed exactly, each scaled and aligned at its scales'
    exponents only; one truncated sum with C; f32 toward zero."""
    N, K = len(b), len(a[0])
    D = np.zeros((len(a), N), np.uint32)
    eb = [[_align(t, scale_fmt) if t else None for t in sb[n][:K // 16]] for n in range(N)]
    for m in rows:
        ea = [_align(s, scale_fmt) if s else None for s in sa[m][:K // 16]]
        for n in range(N):
            terms = [(c[m][n], _align(c[m][n], "f32") if c[m][n] else zero_exp)] if c is not None else []
            for g in range(K // 16):
                P = _dot(a[m][16 * g:16 * g + 16], b[n][16 * g:16 * g + 16])
                s, t = sa[m][g], sb[n][g]
                terms.append((P * s * t, ea[g] + eb[n][g] if s and t else zero_exp))
            E = max(e for _, e in terms)
            D[m, n] = _round_bits(_trunc_sum([(v.numerator, v.denominator) for v, _ in terms], E - F), "f32")
    return D



def fractions(bits, fmt):
    """The values of `bits` (a 2-D array of `fmt` patterns) as lists of Fractions, each distinct value made once."""
    values, at = np.unique(decode(np.asarray(bits), fmt).astype(np.float64), return_inverse=True)
    exact = [Fraction(float(v)) for v in values]
    return [[exact[i] for i in row] for row in at.reshape(np.shape(bits)).tolist()]



def _bits(rng, fmt, shape, spread):
    """Finite random patterns of `fmt`; spread narrows the exponent field to keep most terms in range."""
    f = get_format(fmt)
    x = rng.integers(0, 1 << f.bits, shape)
    if spread is not None and f.exp_bits > 2:
        field = (x >> f.man_bits) & ((1 << f.exp_bits) - 1)
        field = np.clip(field, f.bias - spread, f.bias + spread)
        x = (x & ~(((1 << f.exp_bits) - 1) << f.man_bits)) | (field << f.man_bits)
    if fmt == "e4m3":
        x[(x & 0x7F) == 0x7F] ^= 1
    if fmt == "e5m2":
        x[(x & 0x7C) == 0x7C] ^= 0x04
    return x
