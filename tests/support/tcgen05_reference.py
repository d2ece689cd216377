"""tcgen05.mma's published arithmetic in exact rationals (no code shared with fdp.py's integer kernels): the
reference of tests/blackwell/test_mma.py and test_mma_forms.py, with their descriptor and random-bits helpers."""
from fractions import Fraction

import numpy as np

from tcemu import UmmaDescriptor
from tcemu.arith.formats import decode, get_format


def desc(start, swizzle="128B", sbo=1024, lbo=16):
    return UmmaDescriptor(start_address=start, lbo=lbo, sbo=sbo, swizzle=swizzle, version=1)



def _lead(x: Fraction) -> int:
    """floor(log2 |x|) for x != 0."""
    x = abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    return e if Fraction(2) ** e <= x else e - 1



def _align(x: Fraction, fmt: str) -> int:
    return _lead(x) if fmt == "ue8m0" else max(_lead(x), 1 - get_format(fmt).bias)  # subnormals align at emin



def _trunc(x: Fraction, q: Fraction) -> Fraction:
    n = abs(x) / q
    return (-1 if x < 0 else 1) * Fraction(n.numerator // n.denominator) * q



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
    toward zero below 2^(E - F), summed exactly, rounded once (finite inputs only). sa/sb: ue8m0 scales."""
    N = len(b)
    D = np.zeros((len(a), N), np.uint32)
    for m in rows:
        for n in range(N):
            terms = []
            for x, y in zip(a[m], b[n]):
                p = x * y * (sa[m] if sa else 1) * (sb[n] if sb else 1)
                e = (_align(x, fmt_a) + _align(y, fmt_b) + (_lead(sa[m]) if sa else 0) + (_lead(sb[n]) if sb else 0)
                     if p else zero_exp)
                terms.append((p, e))
            if c is not None:
                terms.append((c[m][n], _align(c[m][n], out) if c[m][n] else zero_exp))
            E = max(e for _, e in terms)
            S = sum(_trunc(t, Fraction(2) ** (E - F)) for t, _ in terms)
            D[m, n] = _round_bits(S, out)
    return D



def ref_grouped(a, b, c, sa, sb, scale_fmt, rows, F=35, zero_exp=-139):
    """kind::mxf4* per MMA-Sim: groups of 16 products summed exactly, each scaled and aligned at its scales'
    exponents only; one truncated sum with C; f32 toward zero."""
    N, K = len(b), len(a[0])
    D = np.zeros((len(a), N), np.uint32)
    for m in rows:
        for n in range(N):
            terms = [(c[m][n], _align(c[m][n], "f32") if c[m][n] else zero_exp)] if c is not None else []
            for g in range(K // 16):
                P = sum(x * y for x, y in zip(a[m][16 * g:16 * g + 16], b[n][16 * g:16 * g + 16]))
                s, t = sa[m][g], sb[n][g]
                terms.append((P * s * t, _align(s, scale_fmt) + _align(t, scale_fmt) if s and t else zero_exp))
            E = max(e for _, e in terms)
            D[m, n] = _round_bits(sum(_trunc(v, Fraction(2) ** (E - F)) for v, _ in terms), "f32")
    return D



def fractions(bits, fmt):
    return [[Fraction(float(v)) for v in row] for row in decode(np.asarray(bits), fmt).astype(np.float64)]



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
