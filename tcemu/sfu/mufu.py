"""The special-function unit's cores (SASS MUFU.*) on raw bit patterns, from the tables measured on sm_90.

Each function takes a numpy array of raw patterns (uint32 for the f32 cores, uint16 for the 16-bit ones) and
returns the unit's output patterns. The cores flush subnormal inputs and results to zero (MUFU has no
denormal path: ptxas wraps the non-.ftz PTX forms in scaling, tcemu.ptx.sfu_forms). What each core reads of
its input (all measured over every f32 input on an H200, sm_90: scripts/capture_sfu*.cu, the proof in
scripts/prove_sfu.cu):
  RCP   the mantissa (table of 2^23); the exponent only scales.          RCP64H: RCP's result cut to 20 bits
  RSQ   the mantissa and the exponent's parity (2^24).                    RSQ64H: likewise
  SQRT  the mantissa and the exponent's parity (2^24).
  EX2   a fixed-point number, |x| truncated to 23 fraction bits; a negative fraction in one's complement.
  LG2   the mantissa and exponent: the result is e + L(m) with 36 fraction bits, truncated to f32 (two
        tables of 2^23: the binades [1, 2) and [1/2, 1), see lg2).
  SIN / COS  sign and trunc(|t| 2^25) mod 2^25, t in turns (one table over half a turn).
  TANH  x itself below 2^-8 (subnormals kept), cells of 2^k inputs in [2^-8, 8) (tables per binade), +-1 above.
"""
import numpy as np

from .tables import table

QNAN32 = np.uint32(0x7FFFFFFF)       # MUFU's NaN (every f32 core)
SIGN32 = np.uint32(0x80000000)
INF32 = np.uint32(0x7F800000)
ONE32 = np.uint32(0x3F800000)
TANH_K = {119: 6, 120: 6, 121: 6, 122: 5, 123: 5, 124: 4, 125: 4, 126: 4, 127: 3, 128: 2, 129: 3}


def _fields(x):
    x = np.asarray(x, np.uint32)
    return x, x & SIGN32, ((x >> 23) & 0xFF).astype(np.int64), x & np.uint32(0x7FFFFF)


def _nan(x):
    return (x & ~SIGN32) > INF32


def _scale(r, shift, sign):
    """f32 pattern r (normal) times 2^shift, flushed to zero below 2^-126, inf above; sign OR-ed in."""
    e = ((r >> 23) & 0xFF).astype(np.int64) + shift
    out = (np.clip(e, 0, 255).astype(np.uint32) << 23) | (r & np.uint32(0x7FFFFF))
    out = np.where(e <= 0, np.uint32(0), np.where(e >= 255, INF32, out))
    return out.astype(np.uint32) | sign


def rcp(x):
    """MUFU.RCP (rcp.approx.ftz.f32): 1/x from the mantissa; +-0 and subnormals -> +-inf, +-inf -> +-0."""
    x, s, e, m = _fields(x)
    r = table("rcp")[m]
    out = _scale(r, 127 - np.maximum(e, 1), s)
    out = np.where(e == 0, INF32 | s, np.where(e == 255, s, out))
    return np.where(_nan(x), QNAN32, out).astype(np.uint32)


def _parity_index(e, m):
    """(table index, exponent halved) for RSQ/SQRT: the table covers [1, 4) ([2, 4) for odd exponents)."""
    k = e - 127
    return ((k & 1).astype(np.uint32) << 23) | m, k >> 1


def rsqrt(x):
    """MUFU.RSQ: 1/sqrt(x); +-0 and subnormals -> +-inf, +inf -> +0, negative -> NaN."""
    x, s, e, m = _fields(x)
    idx, half = _parity_index(np.maximum(e, 1), m)
    out = _scale(table("rsqrt")[idx], -half, np.uint32(0))
    out = np.where(e == 0, INF32 | s, np.where(e == 255, np.uint32(0), out))
    bad = _nan(x) | ((s != 0) & (e != 0))
    return np.where(bad, QNAN32, out).astype(np.uint32)


def sqrt(x):
    """MUFU.SQRT: sqrt(x); +-0 and subnormals -> +-0, +inf -> +inf, negative -> NaN."""
    x, s, e, m = _fields(x)
    idx, half = _parity_index(np.maximum(e, 1), m)
    out = _scale(table("sqrt")[idx], half, np.uint32(0))
    out = np.where(e == 0, s, np.where(e == 255, INF32, out))
    bad = _nan(x) | ((s != 0) & (e != 0))
    return np.where(bad, QNAN32, out).astype(np.uint32)


def ex2(x):
    """MUFU.EX2: 2^x for x read as fixed point, |x| truncated to 23 fraction bits: 2^int * T[frac], flushed
    below 2^-126. A negative x has its integer part and fraction negated apart, the fraction in one's complement
    (-f 2^-23 reads as -1 + (2^23 - 1 - f) 2^-23) unless it is 0."""
    x, s, e, m = _fields(x)
    sig = (m | np.uint32(0x800000)).astype(np.int64)
    sh = np.clip(e - 127, -31, 7)
    n = np.where(sh >= 0, sig << np.maximum(sh, 0), sig >> np.maximum(-sh, 0))   # |x| 2^23, truncated
    n = np.where(e == 0, 0, n)
    q = np.where(s != 0, np.where((n & 0x7FFFFF) != 0, ~n, -n), n)
    out = _scale(table("ex2")[q & 0x7FFFFF], q >> 23, np.uint32(0))
    big = e >= 134   # |x| >= 128
    out = np.where(big, np.where(s != 0, np.uint32(0), INF32), out)
    return np.where(_nan(x), QNAN32, out).astype(np.uint32)


def _trunc_f32(v):
    """float64 magnitudes -> f32 patterns, truncated (round toward zero)."""
    f = v.astype(np.float32)
    over = f.astype(np.float64) > v
    return np.where(over, f.view(np.uint32) - np.uint32(1), f.view(np.uint32)).astype(np.uint32)


def lg2(x):
    """MUFU.LG2: log2(x) = e + L(m), formed with 36 fraction bits and truncated to f32, a negative sum in one's
    complement. L comes from the two measured binades: [1, 3/2) from [1, 2)'s table (L >= 0) and [3/2, 2) from
    [1/2, 1)'s (as 1 + log2(m/2), log2(m/2) < 0). Their f32 entries are the 36-bit values already truncated, so
    the bits below an entry's ulp are unknown: they change the result only when the result's ulp is finer than
    the entry's, which happens in the two measured binades alone (taken from the tables as they are)."""
    x, s, e, m = _fields(x)
    t0, t1 = table("lg2_0"), table("lg2_m1")
    head = m < (1 << 22)
    c = np.where(head, e - 127, e - 126).astype(np.float64)
    pbits = np.where(head, t0[m], t1[m])
    p = pbits.view(np.float32).astype(np.float64)
    pu = np.abs(p).astype(np.float32)
    ulp = np.where(p == 0, 0.0, (np.nextafter(pu, np.float32(np.inf)) - pu).astype(np.float64))
    v = c + p
    neg = v < 0
    # the hidden bits below the entry's ulp: a positive entry is below its 36-bit value, a negative one above
    mag = np.where(neg, -v - np.where(p >= 0, np.where(p == 0, 2.0 ** -36, ulp), 0.0),
                   v - np.where(p < 0, ulp, 0.0))
    out = _trunc_f32(np.maximum(mag, 0.0)) | np.where(neg, SIGN32, np.uint32(0))
    out = np.where(e == 127, t0[m], np.where(e == 126, t1[m], out))
    out = np.where(e == 0, np.uint32(0xFF800000), np.where(e == 255, INF32, out))
    bad = _nan(x) | ((s != 0) & (e != 0))
    return np.where(bad, QNAN32, out).astype(np.uint32)


def _turn_cell(t):
    """sign and q = trunc(|t| 2^25) mod 2^25 of f32 patterns t (turns)."""
    t, s, e, m = _fields(t)
    sig = (m | np.uint32(0x800000)).astype(np.int64)
    sh = e - 125                       # |t| 2^25 = sig 2^(e - 150 + 25)
    q = np.where(sh >= 0, (sig << np.clip(sh, 0, 25)) & ((1 << 25) - 1), sig >> np.clip(-sh, 0, 63))
    q = np.where((e == 0) | (sh >= 25), 0, q)
    return t, s, e, q


def _half_turn(q):
    """sin(2 pi q 2^-25) from the half-turn table: the second half is the first negated."""
    h = table("sin")[q & ((1 << 24) - 1)]
    return np.where(q >= (1 << 24), h ^ SIGN32, h).astype(np.uint32)


def sin(t):
    """MUFU.SIN of t in turns (sin.approx.f32 feeds it x * 1/(2 pi), rounded toward zero)."""
    t, s, e, q = _turn_cell(t)
    out = _half_turn(q) ^ s
    return np.where((e == 255), QNAN32, out).astype(np.uint32)


def cos(t):
    """MUFU.COS of t in turns: cos(q) = sin(q + quarter turn), even in t."""
    t, s, e, q = _turn_cell(t)
    out = _half_turn((q + (1 << 23)) & ((1 << 25) - 1))
    return np.where((e == 255), QNAN32, out).astype(np.uint32)


def tanh(x):
    """MUFU.TANH: x itself below 2^-8 (subnormals too), a cell table per binade up to 8, then +-1."""
    x, s, e, m = _fields(x)
    out = x
    for exp, k in TANH_K.items():
        sel = e == exp
        if sel.any():
            out = np.where(sel, table(f"tanh_{exp}_{k}")[(m >> k) & ((1 << (23 - k)) - 1)] | s, out)
    out = np.where(e >= 130, ONE32 | s, out)
    return np.where(_nan(x), QNAN32, out).astype(np.uint32)


def ex2_h(x, fmt):
    """MUFU.EX2.F16 / .BF16 (fmt "f16" / "bf16"): the measured table over every 16-bit input."""
    return table(f"ex2_{fmt}")[np.asarray(x, np.uint16)]


def tanh_h(x, fmt):
    """MUFU.TANH.F16 / .BF16: the measured table over every 16-bit input."""
    return table(f"tanh_{fmt}")[np.asarray(x, np.uint16)]


def _fields64(hi):
    hi = np.asarray(hi, np.uint32)
    return hi, hi & SIGN32, ((hi >> 20) & 0x7FF).astype(np.int64), hi & np.uint32(0xFFFFF)


def _pack64(r, exp, sign):
    """f32 table pattern r -> f64 high word with exponent field exp (flushed to 0 at or below 0) and sign."""
    out = (np.clip(exp, 0, 0x7FF).astype(np.uint32) << 20) | ((r & np.uint32(0x7FFFFF)) >> 3)
    return np.where(exp <= 0, np.uint32(0), out).astype(np.uint32) | sign


def rcp64h(hi):
    """MUFU.RCP64H: the high word of 1/x from x's high word alone (the low word is not read): RCP's f32 table
    at the 20 high-word mantissa bits, its result cut to 20 bits (scripts/build_sfu_tables.py checks this
    against the captured high words)."""
    hi, s, e, m = _fields64(hi)
    r = table("rcp")[m << 3]
    out = _pack64(r, ((r >> 23) & 0xFF).astype(np.int64) - 127 + 2046 - e, s)
    out = np.where(e == 0, s | np.uint32(0x7FF00000), np.where(e == 0x7FF, s, out))
    return np.where((e == 0x7FF) & (m != 0), QNAN32, out).astype(np.uint32)


def rsq64h(hi):
    """MUFU.RSQ64H: the high word of 1/sqrt(x) from x's high word, RSQ's table cut to 20 bits."""
    hi, s, e, m = _fields64(hi)
    k = e - 1023
    r = table("rsqrt")[((k & 1).astype(np.uint32) << 23) | (m << 3)]
    out = _pack64(r, ((r >> 23) & 0xFF).astype(np.int64) - 127 + 1023 - (k >> 1), np.uint32(0))
    out = np.where(e == 0, s | np.uint32(0x7FF00000), np.where(e == 0x7FF, np.uint32(0), out))
    bad = ((e == 0x7FF) & (m != 0)) | ((s != 0) & (e != 0))
    return np.where(bad, QNAN32, out).astype(np.uint32)
