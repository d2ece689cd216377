"""The rounding core: an exact value (sign, integer significand, exponent, sticky) rounded once to a float format."""
import numpy as np
from numba import njit

# Format kinds (FloatFormat.special in tcemu.arith.formats).
IEEE, FN, NONE = 0, 1, 2
# Rounding codes (RN, RZ, RNA keep tcemu.arith.formats' numbering).
RN, RZ, RNA, RM, RP = 0, 1, 2, 3, 4


@njit(cache=True, inline="always")
def bitlen(x):
    """Bits needed for x >= 0 (int64): 0 for 0."""
    n = 0
    if x >= (1 << 32):
        x >>= 32
        n += 32
    if x >= (1 << 16):
        x >>= 16
        n += 16
    if x >= (1 << 8):
        x >>= 8
        n += 8
    if x >= (1 << 4):
        x >>= 4
        n += 4
    if x >= (1 << 2):
        x >>= 2
        n += 2
    if x >= 2:
        x >>= 1
        n += 1
    return n + x


@njit(cache=True, inline="always")
def nan_bits(eb, mb, shift):
    """The canonical NaN: positive, every exponent and mantissa bit set (0x7fffffff, 0x7fff, 0x7f...)."""
    return np.uint64(((1 << (eb + mb)) - 1) << shift)


@njit(cache=True, inline="always")
def pack_zero(sign, eb, mb, shift):
    return (np.uint64(sign) << np.uint64(eb + mb)) << np.uint64(shift)


@njit(cache=True, inline="always")
def pack_max(sign, eb, mb, special, shift):
    """+-the largest finite value."""
    if special == IEEE:
        pat = (((1 << eb) - 1) << mb) - 1
    elif special == FN:
        pat = (1 << (eb + mb)) - 2
    else:
        pat = (1 << (eb + mb)) - 1
    return ((np.uint64(sign) << np.uint64(eb + mb)) | np.uint64(pat)) << np.uint64(shift)


@njit(cache=True, inline="always")
def pack_inf(sign, eb, mb, special, shift):
    """+-inf; formats without inf give NaN (FN) or the largest finite (NONE)."""
    if special == IEEE:
        pat = ((1 << eb) - 1) << mb
    elif special == FN:
        return nan_bits(eb, mb, shift)
    else:
        pat = (1 << (eb + mb)) - 1
    return ((np.uint64(sign) << np.uint64(eb + mb)) | np.uint64(pat)) << np.uint64(shift)


@njit(cache=True)
def round_pack(sign, sig, exp, sticky, eb, mb, bias, special, shift, mode, ftz, satfinite):
    """The container pattern of (-1)^sign * [sig + (0 or a fraction if sticky)] * 2^exp rounded once.

    sig: int64 in (0, 2^62). Subnormal results are kept unless ftz; ftz flushes to a zero of the same sign
    every result that is tiny after rounding with an unbounded exponent (IEEE 754 7.5), which includes the
    values just below 2^emin that round up to it on the format's grid but not at full precision (H100:
    traces/ptx_alu_edges_sm90.npz, mul/fma/div/rcp .ftz.f32, 1,059 deciding cases). Overflow per IEEE 754
    7.4 (rz and the rounding away from a sign give the largest finite), or the largest finite with satfinite /
    formats without inf (e2m3, e3m2, e2m1); FN formats (e4m3) without satfinite give NaN."""
    emin = 1 - bias
    e_top = exp + bitlen(sig) - 1
    q = max(e_top, emin) - mb
    sh = q - exp
    if sh <= 0:
        kept = sig << (-sh)
        exact = not sticky
        cmp = -1  # below half (when inexact)
    elif sh >= 63:
        kept = np.int64(0)
        exact = False  # sig > 0
        cmp = -1
    else:
        kept = sig >> sh
        rem = sig & ((np.int64(1) << sh) - 1)
        half = np.int64(1) << (sh - 1)
        exact = rem == 0 and not sticky
        if rem > half or (rem == half and sticky):
            cmp = 1
        elif rem == half:
            cmp = 0
        else:
            cmp = -1
    up = False
    if not exact:
        if mode == RN:
            up = cmp > 0 or (cmp == 0 and (kept & 1) == 1)
        elif mode == RNA:
            up = cmp >= 0
        elif mode == RP:
            up = sign == 0
        elif mode == RM:
            up = sign == 1
    kept += up
    if special == IEEE:
        past = (1 << eb) - 2  # e_top - emin at which the exponent field reaches inf's
        pmax = (((1 << eb) - 1) << mb) - 1
    elif special == FN:
        past = (1 << eb) - 1
        pmax = (1 << (eb + mb)) - 2
    else:
        past = (1 << eb) - 1
        pmax = (1 << (eb + mb)) - 1
    if e_top < emin:
        pat = kept  # subnormal; kept == 2^mb carries into the smallest normal
    elif e_top - emin >= past:
        pat = pmax + 1  # overflow, decided before an int64 overflow in f64
    else:
        pat = ((e_top - emin) << mb) + kept  # kept == 2^(mb+1) carries into the next binade
    if pat > pmax:
        to_inf = mode == RN or mode == RNA or (mode == RP and sign == 0) or (mode == RM and sign == 1)
        if satfinite or special == NONE or not to_inf:
            pat = pmax
        elif special == IEEE:
            pat = ((1 << eb) - 1) << mb
        else:
            return nan_bits(eb, mb, shift)
    if ftz and e_top < emin and not (e_top == emin - 1 and _carries(sig, exp, sticky, e_top - mb - exp, mb, mode,
                                                                     sign)):
        pat = 0  # tiny after rounding with an unbounded exponent (IEEE 754 7.5): flushed to a signed zero
    return ((np.uint64(sign) << np.uint64(eb + mb)) | np.uint64(pat)) << np.uint64(shift)


@njit(cache=True, inline="always")
def _carries(sig, exp, sticky, sh, mb, mode, sign):
    """Whether [sig (+ sticky)] * 2^exp, rounded to mb + 1 significant bits at 2^(exp + sh) with an unbounded
    exponent, carries into the next power of two (it can only when every kept bit is set)."""
    if sh < 0 or (sig >> sh) != (np.int64(1) << (mb + 1)) - 1:
        return False
    if sh == 0:
        if not sticky:
            return False
        cmp = -1
    else:
        rem = sig & ((np.int64(1) << sh) - 1)
        half = np.int64(1) << (sh - 1)
        if rem == 0 and not sticky:
            return False
        cmp = 1 if (rem > half or (rem == half and sticky)) else (0 if rem == half else -1)
    if mode == RN:
        return cmp >= 0  # a tie rounds to even: up, the kept bits being all ones (odd)
    if mode == RNA:
        return cmp >= 0
    if mode == RP:
        return sign == 0
    if mode == RM:
        return sign == 1
    return False


@njit(cache=True)
def round_integral(m, e, s, mode):
    """Round m * 2^e (m > 0) to an integer magnitude: -> (n, exact); e < 0 only matters."""
    if e >= 0:
        return m << e, True
    sh = -e
    if sh >= 63:
        kept = np.int64(0)
        rem_cmp = -1
    else:
        kept = m >> sh
        rem = m & ((np.int64(1) << sh) - 1)
        half = np.int64(1) << (sh - 1)
        if rem == 0:
            return kept, True
        rem_cmp = 1 if rem > half else (0 if rem == half else -1)
    up = False
    if mode == RN:
        up = rem_cmp > 0 or (rem_cmp == 0 and (kept & 1) == 1)
    elif mode == RNA:
        up = rem_cmp >= 0
    elif mode == RP:
        up = s == 0
    elif mode == RM:
        up = s == 1
    return kept + up, False
