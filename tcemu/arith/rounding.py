"""The rounding core: an exact value rounded once to a float format (or to an integer), for every path that rounds.

An exact magnitude is (sig, exp, sticky): it lies in [sig, sig + 1) * 2^exp, strictly inside when sticky; sig is an
integer in (0, 2^62). round_pack rounds it to a format given as (exponent bits, mantissa bits, bias, kind, shift) and
packs the pattern. Its callers: formats.encode (float64 values), the fused dot unit (fdp: a sum rounded RZ or RN),
the matmul chains (chain.py: accumulator values), the PTX float kernels (ptx/_fpcore: every mode, ftz, satfinite)
and the gemm reference's exact FFMA (split_fraction). round_bits_f64 is its special case on float64 patterns whose
result is normal, for chain.py's vectorised loops. tests/test_rounding.py holds them to ml_dtypes and to an exact
fractions.Fraction reference over every format and mode.
"""
import math

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

# Format kinds (FloatFormat.special): what the all-ones exponent field means (PTX ISA 5.2.5, OCP MX v1.0 5.3-5.4).
IEEE = 0  # inf (mantissa 0) or NaN (mantissa != 0): f64, f32, tf32, f16, bf16, e5m2
FN = 1    # finite + NaN: only all-ones exponent AND mantissa is NaN, no inf (e4m3, ue4m3)
NONE = 2  # every pattern finite: no inf, no NaN (e2m3, e3m2, e2m1)
E8M0 = 3  # unsigned exponent only: value 2^(field - bias), 0xFF NaN, no zero, no subnormals (ue8m0, OCP MX 5.4.1)

# Rounding modes (PTX 9.7.3.x rounding modifiers .rn .rz .rna .rm .rp).
RN, RZ, RNA, RM, RP = 0, 1, 2, 3, 4
RNE = RN

# What an overflow gives.
OVF_IEEE = 0      # IEEE 754 7.4: inf, or the largest finite where the mode rounds toward zero from that sign
OVF_SATURATE = 1  # the largest finite (.satfinite; formats.encode(saturate=True))
OVF_INF = 2       # inf whatever the mode: the fused dot unit's rule (fdp.py)


@njit(cache=True, inline="always")
def bitlen(x):
    """Bits needed for x >= 0 (int64): 0 for 0 (one LLVM ctlz)."""
    return 64 - leading_zeros(np.int64(x))


@njit(cache=True, inline="always")
def nan_bits(eb, mb, shift):
    """The canonical NaN: positive, every exponent and mantissa bit set (0x7fffffff, 0x7fff, 0x7f...)."""
    return np.uint64(((1 << (eb + mb)) - 1) << shift)


@njit(cache=True, inline="always")
def pack_zero(sign, eb, mb, shift):
    return (np.uint64(sign) << np.uint64(eb + mb)) << np.uint64(shift)


@njit(cache=True, inline="always")
def max_pattern(eb, mb, special):
    """The largest finite magnitude pattern: below inf (IEEE), below the NaN (FN, E8M0), all ones (NONE)."""
    if special == IEEE:
        return (((1 << eb) - 1) << mb) - 1
    if special == NONE:
        return (1 << (eb + mb)) - 1
    return (1 << (eb + mb)) - 2


@njit(cache=True, inline="always")
def pack_max(sign, eb, mb, special, shift):
    """+-the largest finite value."""
    return ((np.uint64(sign) << np.uint64(eb + mb)) | np.uint64(max_pattern(eb, mb, special))) << np.uint64(shift)


@njit(cache=True, inline="always")
def pack_inf(sign, eb, mb, special, shift):
    """+-inf; formats without inf give NaN (FN, E8M0) or the largest finite (NONE)."""
    if special == IEEE:
        pat = ((1 << eb) - 1) << mb
    elif special == NONE:
        pat = (1 << (eb + mb)) - 1
    else:
        return nan_bits(eb, mb, shift)
    return ((np.uint64(sign) << np.uint64(eb + mb)) | np.uint64(pat)) << np.uint64(shift)


@njit(cache=True, inline="always")
def split_at(sig, sh, sticky):
    """[sig (+ sticky)] cut at bit sh -> (kept = sig >> sh, exact, cmp): cmp compares the dropped part with half
    a unit of the kept part (-1 below, 0 equal, 1 above). sh <= 0 drops only the sticky fraction, counted below
    half (callers keep 2 or more bits beyond the result when sticky). Data-dependent choices are selects, not
    branches: fdp and chain round random sums, where a mispredicted branch costs more than the rounding."""
    if sh <= 0:
        return sig << (-sh), not sticky, -1
    if sh >= 63:
        return np.int64(0), False, -1  # sig > 0
    rem = sig & ((np.int64(1) << sh) - 1)
    half = np.int64(1) << (sh - 1)
    above = (rem > half) | ((rem == half) & sticky)
    return sig >> sh, (rem == 0) & (not sticky), np.int64(above) - np.int64(rem < half)


@njit(cache=True, inline="always")
def rounds_up(cmp, odd, mode, sign):
    """Whether an inexact magnitude rounds away from zero: cmp as split_at's, odd the kept part's lowest bit."""
    if mode == RN:
        return (cmp > 0) | ((cmp == 0) & odd)
    if mode == RNA:
        return cmp >= 0
    if mode == RP:
        return sign == 0
    if mode == RM:
        return sign == 1
    return False


@njit(cache=True, inline="always")
def round_pack_inline(sign, sig, exp, sticky, eb, mb, bias, special, shift, mode, ftz, overflow):
    """round_pack, inlined into the caller: for hot kernels whose format, mode and overflow rule are constants
    (fdp's fused dot unit), which then fold away."""
    return _round_pack(sign, sig, exp, sticky, eb, mb, bias, special, shift, mode, ftz, overflow)


@njit(cache=True, inline="always")
def _round_pack(sign, sig, exp, sticky, eb, mb, bias, special, shift, mode, ftz, overflow):
    """The container pattern (uint64) of (-1)^sign * [sig + (0 or a fraction if sticky)] * 2^exp rounded once.

    sig: int64 in (0, 2^62). Subnormal results are kept unless ftz; ftz flushes to a zero of the same sign
    every result that is tiny after rounding with an unbounded exponent (IEEE 754 7.5), which includes the
    values just below 2^emin that round up to it on the format's grid but not at full precision (H100:
    traces/ptx_alu_edges_sm90.npz, mul/fma/div/rcp .ftz.f32, 1,059 deciding cases). Overflow per `overflow`:
    OVF_IEEE (IEEE 754 7.4: rz and the rounding away from a sign give the largest finite), OVF_SATURATE or
    OVF_INF; formats without inf give the largest finite (NONE: e2m3, e3m2, e2m1) or NaN (FN: e4m3, E8M0).
    E8M0 has no zero and no subnormals: a value below 2^-bias gives pattern 0 (2^-bias) in every mode, as CUDA's
    conversions do; its ties go up (sig 1 is odd), as ml_dtypes does. The sign of unsigned formats is the caller's
    to drop (pass 0)."""
    emin = -bias if special == E8M0 else 1 - bias
    e_top = exp + bitlen(sig) - 1
    kept, exact, cmp = split_at(sig, max(e_top, emin) - mb - exp, sticky)
    kept += (not exact) & rounds_up(cmp, (kept & 1) == 1, mode, sign)
    pmax = max_pattern(eb, mb, special)
    if e_top < emin:
        pat = np.int64(0) if special == E8M0 else kept  # subnormal; kept == 2^mb carries into the smallest normal
    elif e_top - emin >= ((1 << eb) - 2 if special == IEEE else (1 << eb) - 1):
        pat = pmax + 1  # overflow, decided before an int64 overflow in f64
    else:
        pat = ((e_top - emin) << mb) + kept  # kept == 2^(mb+1) carries into the next binade
        if special == E8M0:
            pat -= 1 << mb  # no implicit bit: the field is e_top - emin
    if pat > pmax:
        # inf where the mode rounds a value past the largest finite away from zero (IEEE 754 7.4)
        to_inf = overflow == OVF_INF or rounds_up(1, False, mode, sign)
        if overflow == OVF_SATURATE or special == NONE or not to_inf:
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
    _, exact, cmp = split_at(sig, sh, sticky)
    return not exact and rounds_up(cmp, True, mode, sign)  # all ones: a tie rounds to even, up


@njit(cache=True)
def round_integral(m, e, s, mode):
    """Round m * 2^e (m > 0) to an integer magnitude: -> (n, exact); e < 0 only matters."""
    kept, exact, cmp = split_at(m, -e, False)
    if exact:
        return kept, True
    return kept + rounds_up(cmp, (kept & 1) == 1, mode, s), False


def _round_pack_entry(sign, sig, exp, sticky, eb, mb, bias, special, shift, mode, ftz, overflow):
    """The container pattern (uint64) of (-1)^sign * [sig + (0 or a fraction if sticky)] * 2^exp rounded once;
    see _round_pack."""
    return _round_pack(sign, sig, exp, sticky, eb, mb, bias, special, shift, mode, ftz, overflow)


# round_pack: one explicit signature, since its callers pass constants (0, False, OVF_IEEE) that numba would type as
# literals and compile again per combination (3-4 s each; the test suite made 11). An explicit signature compiles
# (or loads from numba's cache, which sets numba up: ~0.5 s) when it is declared, so it is declared on first use
# (PEP 562): callers name it through the module (`from . import rounding as R`; `R.round_pack`), and importing
# tcemu.arith.rounding stays cheap.
_ROUND_PACK_SIG = "uint64(int64, int64, int64, boolean, int64, int64, int64, int64, int64, int64, boolean, int64)"


def __getattr__(name):
    if name == "round_pack":
        fn = globals()["round_pack"] = njit(_ROUND_PACK_SIG, cache=True)(_round_pack_entry)
        return fn
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@njit(cache=True, inline="always")
def split_float64(a):
    """(sig, exp) of a finite float64 a > 0: a = sig * 2^exp exactly, sig of 53 bits."""
    frac, ex = math.frexp(a)  # a = frac * 2^ex, frac in [0.5, 1)
    return np.int64(math.ldexp(frac, 53)), np.int64(ex) - 53


@njit(cache=True, inline="always")
def round_bits_f64(xb, sh, rne):
    """round_pack's special case for chain.py's vectorised loops: the float64 pattern xb (finite, nonzero) rounded
    to 52 - sh fraction bits, to nearest even (rne) or toward zero, by integer arithmetic on the pattern (a carry
    runs into the exponent field: the next binade). Equal to round_pack wherever the result is a normal number of
    the target format; the callers send every other lane to the general path."""
    mask = ~((np.int64(1) << sh) - 1)
    nearest = (xb + ((np.int64(1) << (sh - 1)) - 1) + ((xb >> sh) & 1)) & mask  # both, then a select: vectorises
    return nearest if rne else xb & mask


def split_fraction(q):
    """(sign, sig, exp, sticky) of a nonzero fractions.Fraction for round_pack: sig has 61 or 62 bits."""
    sign = int(q < 0)
    n, d = abs(q.numerator), q.denominator
    exp = n.bit_length() - d.bit_length() - 61
    sig, rem = divmod(n, d << exp) if exp >= 0 else divmod(n << -exp, d)
    return sign, sig, exp, rem != 0
