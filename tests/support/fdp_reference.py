"""An exact-rational model of the fused dot-product engine (tcemu/arith/fdp.py), written independently of it: the
reference of tests/arith/test_fdp.py and tests/hopper/test_sparse.py."""
import functools
import math
from fractions import Fraction

import numpy as np

from tcemu.arith import formats
from tcemu.arith.fdp import RNE, FdpUnit


@functools.cache
def value_exp(bits, fmt):
    """(exact Fraction value, alignment exponent) of one element: exponent of the implicit bit, emin if subnormal
    (once per pattern: both are immutable)."""
    f = formats.FLOAT_FORMATS[fmt]
    v = Fraction(float(formats.decode(np.array([bits]), fmt)[0]))
    e = max(math.floor(math.log2(abs(v))), f.emin) if v else None
    if v and abs(v) < Fraction(2) ** f.emin:
        e = f.emin
    return v, e



def round_fraction(x: Fraction, out: str, keep: int, rounding: int) -> int:
    """Bits of x rounded once (RZ or RNE) to `out` with `keep` fraction bits; overflow -> inf."""
    f = formats.FLOAT_FORMATS[out]
    neg, x = x < 0, abs(x)
    e = max(math.floor(math.log2(x)), f.emin)
    ulp = Fraction(2) ** (e - keep)
    q, r = divmod(x, ulp)
    if rounding == RNE and (r > ulp / 2 or (r == ulp / 2 and q % 2)):
        q += 1
    y = q * ulp
    bits = formats.encode(np.array([float(y)]), out, rounding="rz")[0]  # y is representable (or overflows)
    if y >= Fraction(2) ** (f.emin + (1 << f.exp_bits) - 2):  # 2^(emax + 1)
        bits = ((1 << f.exp_bits) - 1) << f.man_bits
    return int(bits) | (int(neg) << (f.bits - 1))



def reference(a_bits, b_bits, c_bits, fa, fb, fc, unit: FdpUnit):
    """The model of fdp.py, in exact rationals (finite, nonzero-sum inputs only)."""
    terms = []
    for x, y in zip(a_bits, b_bits):
        (va, ea), (vb, eb) = value_exp(x, fa), value_exp(y, fb)
        terms.append((va * vb, unit.zero_exp if va == 0 or vb == 0 else ea + eb))
    if c_bits is not None:
        vc, ec = value_exp(c_bits, fc)
        terms.append((vc, unit.zero_exp if vc == 0 else ec))
    E = max(e for _, e in terms)
    unit_ = Fraction(2) ** (E - unit.frac_bits)
    total = sum(math.trunc(v / unit_) * unit_ for v, _ in terms)
    return None if total == 0 else round_fraction(total, unit.out_format, unit.keep_bits, unit.rounding)
