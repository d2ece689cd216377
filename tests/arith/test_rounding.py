"""The rounding core (tcemu.arith.rounding) against ml_dtypes/numpy casts and against an exact fractions.Fraction
reference written from IEEE 754-2019 (4.3 rounding, 7.4 overflow, 7.5 tininess after rounding) and OCP MX v1.0 5.4.1
(e8m0), over every format tcemu rounds to and every mode (rn rz rna rm rp), overflow rule and ftz: exhaustive over
the formats of 8 bits and fewer (every pattern, the quarter points between neighbours, with and without sticky),
dense random + edge samples for the wider ones."""
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from numba import njit

from tcemu.arith import rounding as R
from tcemu.arith.formats import FLOAT_FORMATS, encode

# name: (exponent bits, mantissa bits, bias, kind, signed, shift)
FORMATS = {f.name: (f.exp_bits, f.man_bits, f.bias, f.special, f.signed, f.shift) for f in FLOAT_FORMATS.values()}
FORMATS["f64"] = (11, 52, 1023, R.IEEE, True, 0)  # ptx/_fpcore's .f64
FORMATS["f32k13"] = (8, 13, 127, R.IEEE, True, 0)  # the fp8 fused dot unit: 13 kept bits, f32's range (fdp.FdpUnit)
NARROW = [n for n, f in FORMATS.items() if f[4] + f[0] + f[1] <= 8]
WIDE = [n for n in FORMATS if n not in NARROW]
MODES = (R.RN, R.RZ, R.RNA, R.RM, R.RP)


def _overflows(kind):
    return (R.OVF_IEEE, R.OVF_SATURATE, R.OVF_INF) if kind == R.IEEE else (R.OVF_IEEE, R.OVF_SATURATE)


# ---- the exact reference

def _floor_log2(q):
    e = q.numerator.bit_length() - q.denominator.bit_length()
    return e - 1 if Fraction(2) ** e > q else e


def _grid(q, g, mb):
    """q on the grid 2^(g - mb): (k, cmp, exact) with k = floor, cmp the remainder against half a step."""
    n = q / Fraction(2) ** (g - mb)
    k = n.numerator // n.denominator
    twice = 2 * (n - k)
    return k, (twice > 1) - (twice < 1), n == k


def _up(k, cmp, exact, mode, sign):
    if exact:
        return 0
    return int({R.RN: cmp > 0 or (cmp == 0 and k % 2 == 1), R.RZ: False, R.RNA: cmp >= 0, R.RM: sign == 1,
                R.RP: sign == 0}[mode])


def _max_value(eb, mb, bias, kind):
    if kind == R.E8M0:
        return Fraction(2) ** ((1 << eb) - 2 - bias)
    top = (1 << eb) - (2 if kind == R.IEEE else 1) - bias
    return (2 - Fraction(2 if kind == R.FN else 1, 1 << mb)) * Fraction(2) ** top


def _pattern(r, eb, mb, bias, kind):
    """Magnitude pattern of a representable r > 0."""
    e = _floor_log2(r)
    if kind == R.E8M0:
        return e + bias
    if e < 1 - bias:
        return int(r / Fraction(2) ** (1 - bias - mb))
    return ((e + bias) << mb) | (int(r / Fraction(2) ** (e - mb)) - (1 << mb))


def reference(fmt, q):
    """{(sign, mode, overflow, ftz): pattern} for q (Fraction > 0) rounded once to `fmt`."""
    eb, mb, bias, kind, signed, shift = FORMATS[fmt]
    emin = -bias if kind == R.E8M0 else 1 - bias
    e = _floor_log2(q)
    bounded = _grid(q, max(e, emin), mb)
    unbounded = _grid(q, e, mb)
    step, step_unb = Fraction(2) ** (max(e, emin) - mb), Fraction(2) ** (e - mb)
    top = _max_value(eb, mb, bias, kind)
    nan = ((1 << (eb + mb)) - 1) << shift
    top_pat = _pattern(top, eb, mb, bias, kind)
    out = {}
    for sign in ((0, 1) if signed else (0,)):
        sbit = sign << (eb + mb)
        for mode in MODES:
            r = (bounded[0] + _up(*bounded, mode, sign)) * step
            tiny = (unbounded[0] + _up(*unbounded, mode, sign)) * step_unb < Fraction(2) ** emin
            pat_r = _pattern(r, eb, mb, bias, kind) if r and r <= top else 0
            for ovf in _overflows(kind):
                for ftz in (False, True):
                    if kind == R.E8M0 and e < emin:
                        pat = 0  # no zero, no subnormals: 2^-bias (CUDA's rz, every mode here)
                    elif ftz and tiny:
                        pat = 0  # IEEE 754 7.5: tiny after rounding, flushed to a signed zero
                    elif r > top:
                        to_inf = ovf == R.OVF_INF or mode in (R.RN, R.RNA) or (mode == R.RP and sign == 0) or \
                            (mode == R.RM and sign == 1)
                        if ovf == R.OVF_SATURATE or kind == R.NONE or not to_inf:
                            pat = top_pat
                        elif kind == R.IEEE:
                            pat = ((1 << eb) - 1) << mb
                        else:
                            out[sign, mode, ovf, ftz] = nan
                            continue
                    else:
                        pat = pat_r
                    out[sign, mode, ovf, ftz] = (sbit | pat) << shift
    return out


# ---- inputs: (sig, exp, sticky), the value (sig + sticky / 4) * 2^exp

def _grid_values(fmt, fields, mans):
    """Values on the format's grid, the grid continued past the largest finite: (M, E) with value M * 2^E."""
    eb, mb, bias, kind = FORMATS[fmt][:4]
    for f in fields:
        for m in mans:
            if kind == R.E8M0:
                yield 1, f - bias
            elif f == 0:
                yield m, 1 - bias - mb
            else:
                yield m + (1 << mb), f - bias - mb


def _inputs(fmt, rng):
    eb, mb, bias = FORMATS[fmt][:3]
    if fmt in NARROW:
        fields, mans = range((1 << eb) + 2), range(1 << mb)
    else:
        fields = sorted({0, 1, 2, 3, (1 << eb) - 3, (1 << eb) - 2, (1 << eb) - 1, 1 << eb, (1 << eb) + 1}
                        | set(rng.integers(1, (1 << eb) - 1, 8).tolist()))
        mans = sorted({0, 1, 2, (1 << mb) - 2, (1 << mb) - 1} | set(rng.integers(0, 1 << mb, 6).tolist()))
    out = set()
    for M, E in _grid_values(fmt, fields, mans):
        for d in range(4):  # the value, a quarter, half and three quarters of the way to the next grid point
            if M or d:
                out.update(((M << 2) + d, E - 2, s) for s in (False, True))
    emin_lsb = 1 - bias - mb
    out.update((s, emin_lsb - 5, st) for s in range(1, 12) for st in (False, True))  # below the smallest subnormal
    if fmt not in NARROW:  # long significands: every remainder pattern
        for _ in range(250):
            sig = int(rng.integers(1, 1 << 62))
            out.add((sig, int(rng.integers(emin_lsb - 70, (1 << eb) - bias - 58)), bool(rng.integers(2))))
    # sticky needs two or more bits beyond the result (round_pack's callers: _fpcore's limbs, quotients, roots)
    return sorted((sig << (62 - sig.bit_length()), exp - 62 + sig.bit_length(), st) if st else (sig, exp, st)
                  for sig, exp, st in out)


@njit(cache=True)
def _round_many(signs, sigs, exps, stickies, eb, mb, bias, kind, shift, mode, ftz, ovf, out):
    for i in range(out.size):
        out[i] = R.round_pack(signs[i], sigs[i], exps[i], stickies[i], eb, mb, bias, kind, shift, mode, ftz, ovf)


@pytest.mark.parametrize("fmt", NARROW + WIDE)
def test_round_pack_against_fraction(fmt):
    eb, mb, bias, kind, signed, shift = FORMATS[fmt]
    ins = _inputs(fmt, np.random.default_rng(len(fmt) * 7 + mb))
    refs = [reference(fmt, Fraction(4 * sig + st, 4) * Fraction(2) ** exp) for sig, exp, st in ins]
    sigs = np.array([i[0] for i in ins], np.int64)
    exps = np.array([i[1] for i in ins], np.int64)
    sts = np.array([i[2] for i in ins], np.bool_)
    out = np.empty(len(ins), np.uint64)
    checked = 0
    for key in refs[0]:
        sign, mode, ovf, ftz = key
        _round_many(np.full(len(ins), sign, np.int64), sigs, exps, sts, eb, mb, bias, kind, shift, mode, ftz, ovf,
                    out)
        want = np.array([r[key] for r in refs], np.uint64)
        bad = np.flatnonzero(out != want)
        assert bad.size == 0, (fmt, key, ins[bad[0]], hex(int(out[bad[0]])), hex(int(want[bad[0]])))
        checked += len(ins)
    assert checked >= len(ins) * 20


@pytest.mark.parametrize("fmt", ["f32", "tf32", "f16", "bf16", "e4m3", "e5m2", "e2m3", "e3m2", "e2m1", "ue8m0",
                                 "ue4m3"])
def test_encode_against_fraction(fmt):
    """formats.encode (float64 in; rne rz rna; saturate) is round_pack's OVF_IEEE / OVF_SATURATE rows."""
    eb, mb, bias, kind, signed, shift = FORMATS[fmt]
    rng = np.random.default_rng(1)
    vals = sorted({(sig, exp, False) for sig, exp, st in _inputs(fmt, rng) if sig < 1 << 53})
    x = np.array([math.ldexp(s, e) for s, e, _ in vals])
    refs = [reference(fmt, Fraction(s) * Fraction(2) ** e) for s, e, _ in vals]
    for name, mode in (("rne", R.RN), ("rz", R.RZ), ("rna", R.RNA)):
        for sat in (False, True):
            for sign in ((0, 1) if signed else (0,)):
                got = encode(-x if sign else x, fmt, name, saturate=sat)
                want = [r[sign, mode, R.OVF_SATURATE if sat else R.OVF_IEEE, False] for r in refs]
                assert got.tolist() == want, (fmt, name, sat, sign)


# ---- ml_dtypes / numpy casts (round to nearest even)

ML = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
      "e5m2": ml_dtypes.float8_e5m2, "e2m3": ml_dtypes.float6_e2m3fn, "e3m2": ml_dtypes.float6_e3m2fn,
      "e2m1": ml_dtypes.float4_e2m1fn, "ue8m0": ml_dtypes.float8_e8m0fnu}


@pytest.mark.parametrize("fmt", list(ML))
def test_encode_against_ml_dtypes(fmt):
    """Every value of the format, the midpoints between neighbours and one float32 step either side, past the
    largest finite, below the smallest subnormal. ml_dtypes rounds float64 through float32, so the inputs are
    float32 values (f32 itself: float64 midpoints, numpy's cast). Where the conventions differ the comparison
    is of NaN-ness: ml_dtypes keeps the sign of an overflow's NaN (tcemu: the canonical NaN); ue8m0 takes
    positive values from 2^-126 only (ml_dtypes: NaN for 0 and negatives, where tcemu encodes |x| and 0 as 2^-127;
    it rounds float32 subnormals up: 1.4999998 * 2^-127 -> 2^-126, the Fraction test above has 2^-127)."""
    eb, mb, bias, kind, signed, shift = FORMATS[fmt]
    rng = np.random.default_rng(2)
    vals = np.array(sorted({math.ldexp(M, E) for M, E in _grid_values(
        fmt, range((1 << eb) + 2) if fmt in NARROW else _inputs_fields(fmt, rng), range(1 << mb) if fmt in NARROW
        else range(0, 1 << mb, max(1, (1 << mb) // 64)))}))
    vals = vals[vals < 2.0 ** 120]  # past every format's range, inside float32's
    mids = (vals[1:] + vals[:-1]) / 2
    wide = np.float64 if fmt == "f32" else np.float32
    x = np.concatenate([vals, mids, np.nextafter(mids.astype(wide), wide(np.inf)),
                        np.nextafter(mids.astype(wide), wide(0)), [2.0 ** (-bias - mb - 3), 2.0 ** 120]]).astype(wide)
    x = x[(x > 0) & ((x >= 2.0 ** -126) | (fmt != "ue8m0"))]  # ml_dtypes and float32 subnormals: see above
    if signed:
        x = np.concatenate([x, -x])
    got = encode(x, fmt)
    with np.errstate(over="ignore"):  # f16, bf16, fp8...: overflow to inf or NaN is the point
        want = x.astype(ML[fmt]).view(got.dtype)
    g_nan, w_nan = np.isnan(got.view(ML[fmt]).astype(np.float64)), np.isnan(want.view(ML[fmt]).astype(np.float64))
    assert np.array_equal(g_nan, w_nan), (fmt, x[g_nan != w_nan][:4])
    assert np.array_equal(got[~g_nan], want[~g_nan]), (fmt, x[~g_nan][got[~g_nan] != want[~g_nan]][:4])
    assert x.size > 2 * vals.size


def _inputs_fields(fmt, rng):
    eb = FORMATS[fmt][0]
    return sorted({0, 1, 2, (1 << eb) - 3, (1 << eb) - 2, (1 << eb) - 1}
                  | set(rng.integers(1, (1 << eb) - 1, 40).tolist()))


# ---- the other entry points of the core

def test_round_bits_f64_is_round_pack_on_normal_results():
    """chain.py's vectorised rounding of float64 patterns equals round_pack (OVF_INF) where the result is normal."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(50000) * np.exp2(rng.integers(-140, 140, 50000))
    x = np.concatenate([x, [1.5, 1 + 2.0 ** -24, 1 + 3 * 2.0 ** -24, 2 - 2.0 ** -30, 65519.0, 65520.0, 2.0 ** -14]])
    for keep, eb, bias in ((23, 8, 127), (13, 8, 127), (10, 5, 15)):
        for rne in (True, False):
            fast, pats = _bits_both(x, keep, eb, bias, rne)
            field = (pats >> keep) & ((1 << eb) - 1)
            normal = (field > 0) & (field < (1 << eb) - 1)
            want = np.ldexp(((pats & ((1 << keep) - 1)) + (1 << keep)).astype(np.float64), field - bias - keep)
            want = np.where(x < 0, -want, want)
            assert np.array_equal(fast.view(np.float64)[normal], want[normal]), (keep, rne)
            assert normal.sum() > 2000


@njit(cache=True)
def _bits_both(x, keep, eb, bias, rne):
    fast = np.empty(x.size, np.int64)
    pats = np.empty(x.size, np.int64)
    for i in range(x.size):
        fast[i] = R.round_bits_f64(x.view(np.int64)[i], 52 - keep, rne)
        sig, exp = R.split_float64(abs(x[i]))
        pats[i] = R.round_pack(0, sig, exp, False, eb, keep, bias, R.IEEE, 0, R.RN if rne else R.RZ, False,
                               R.OVF_INF)
    return fast, pats


def test_round_integral_and_split_fraction():
    rng = np.random.default_rng(4)
    for _ in range(800):
        m, e = int(rng.integers(1, 1 << 40)), int(rng.integers(-45, 3))
        q = Fraction(m) * Fraction(2) ** e
        k, cmp, exact = _grid(q, 0, 0)
        for mode in MODES:
            for s in (0, 1):
                assert R.round_integral(m, e, s, mode) == (k + _up(k, cmp, exact, mode, s), exact)
    for _ in range(500):  # the gemm reference's exact FFMA: Fraction -> (sign, sig, exp, sticky) -> f32
        q = Fraction(int(rng.integers(1, 1 << 62)), int(rng.integers(1, 1 << 62))) * Fraction(2) ** int(
            rng.integers(-160, 140)) * (1 if rng.integers(2) else -1)
        sign, sig, exp, sticky = R.split_fraction(q)
        assert 1 << 60 <= sig < 1 << 62 and (Fraction(sig) * Fraction(2) ** exp == abs(q)) != sticky
        got = R.round_pack(sign, sig, exp, sticky, 8, 23, 127, R.IEEE, 0, R.RN, False, R.OVF_IEEE)
        assert got == reference("f32", abs(q))[sign, R.RN, R.OVF_IEEE, False]
