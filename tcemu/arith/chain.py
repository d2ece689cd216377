"""Numba kernels of tcemu.matmul: a chain of fused dot products over K, many outputs at once.

One chain step is one tensor-core instruction's fused dot (fdp.py; traces/wgmma_numerics_sm90.npz): for output
(m, n), with E the largest alignment exponent among the step's products (ea + eb), C's and the zero floor,

    D = round( C truncated + sum_k (a_k b_k truncated) ),   every term truncated toward zero to 2^(E - F).

Here every operand is held as an exact value (float64; float32 for the 32-bit sums below) and an int32 alignment
exponent. A product a_k b_k is exact in float64 (at most 22 significant bits), so is its scaling by 2^(F - E);
np.trunc of the scaled product is the truncated term as an integer below 2^(F + 2); the K_step + 1 terms sum
exactly (below 2^(F + 8) < 2^53, in any order); the sum times 2^(E - F) is the exact fused sum, rounded once by
bit operations (RZ for f32, RNE for f16). Both loops run over n and vectorise. Lanes with NaN/inf anywhere, and
lanes whose sum is zero (+0, or under a unit with signed_zero a sign that needs every term), are redone by
`_general`, which applies every rule of fdp.py one output at a time.

32-bit sums (_sums32): where every product of a row's step is exact in float32 and every lane's 2^(F - E) is a
float32, a truncated term is a float32 product cast to int32 (truncation toward zero) and a step's terms sum in
int32 (below ks 2^(F + 2) <= 2^31: engine.sum32_ok), twice the lanes of float64 per vector instruction; operands are
then stored as float32 (every unscaled operand format is exact there). Other rows take the float64 sums.

Fast path: when bounds on the exponents prove that no term of a row segment is truncated (every product's lowest
bit and C's lowest kept bit at or above 2^(E - F)), the fused sum is the exact sum and E is not needed: the
segment runs as plain float64 multiply-adds (exact: all partial sums fit in 53 bits).

Two-level accumulation (promote_every): the chain runs in `acc` from +0 (or from no C, a +0 accumulator term on
sm90: fdp.FdpUnit.zero_c_when_absent); every P steps it is
promoted into the f32 `main` accumulator as CUDA code does it, main = fma(s, acc, main) rounded once to f32
(s = 1, or DeepGEMM's per-block scale product), then the chain restarts.
"""
import math

import numpy as np
from numba import njit

from .formats import INF, decode_float
from . import rounding as R
from .rounding import IEEE, OVF_INF, RN, RZ, bitlen, round_bits_f64, split_float64


NO_TERM = -(1 << 20)   # alignment of a zero or special element: never the maximum, sums stay in int32
NO_AL = -(1 << 14)     # the same in the int16 alignment arrays of the operands (two sum to -2^15, still int16)
E_FLOOR = -(1 << 15)   # int16 floor of C's alignment and the zero floors in the largest-alignment pass
SPECIAL_CAL = 1024     # alignment recorded for an inf/NaN accumulator (float64 exponent field 2047)
BIG = 1 << 20          # "no nonzero term" for minima


# ---- operand preparation: raw bits -> exact float64 values, alignments and per-step exponent bounds

@njit(cache=True, inline="always")
def _clear_bounds(lo, hi, zero, spec, i, s):
    """Bounds of (row or tile i, step s) before any element: no nonzero finite one, no zero, no inf/NaN."""
    lo[i, s] = BIG
    hi[i, s] = NO_TERM
    zero[i, s] = False
    spec[i, s] = False


@njit(cache=True, inline="always")
def _decode(bits, r, k, shift, tab_val, tab_al, tab_cls, scaled, scale_exp, scale_nan, scale_block):
    """(value, alignment, class) of element (r, k) of raw bits: looked up in the format's tables (index bits >>
    shift: value, alignment, class 0 zero / 1 finite / 2 inf or NaN), times its block scale where scaled."""
    i = np.int64(bits[r, k]) >> shift
    cls = tab_cls[i]
    v = tab_val[i]
    align = tab_al[i]
    if scaled:
        b = k // scale_block
        if scale_nan[r, b]:
            cls = 2
            v = np.nan
        elif cls == 1:
            v = v * _i2f(np.int64(1023 + scale_exp[r, b]) << 52)  # exact: 2^e, |e| <= 127
            align += scale_exp[r, b]
    return v, align, cls


@njit(cache=True)
def prepare_rows(bits, shift, tab_val, tab_al, tab_cls, ks, steps, scale_exp, scale_nan, scale_block, val, al, lo,
                 hi, zero, spec):
    """bits (R, Kc) -> val, al (R, steps * ks) (zero padded), per (row, step) min/max alignment of nonzero finite
    elements (BIG / NO_TERM when none), any zero (padding included), any inf/NaN (_decode). scale_exp (R, nblocks)
    int32 (block-scaled kinds: 2^e multiplies every element of a block of scale_block K; scale_nan marks NaN scales)
    or an empty array."""
    R, Kc = bits.shape
    scaled = scale_exp.shape[1] > 0
    for r in range(R):
        for s in range(steps):
            # a step's bounds in locals, stored once: read-modify-writes of lo[r, s] per element (numba cannot keep
            # them in registers past the stores to val / al) ran this loop 4-7x slower (17 against 3-4 ns an element)
            l, h, z, sp = BIG, NO_TERM, False, False
            for j in range(ks):
                k = s * ks + j
                if k >= Kc:
                    val[r, k] = 0.0
                    al[r, k] = NO_AL
                    z = True
                    continue
                v, align, cls = _decode(bits, r, k, shift, tab_val, tab_al, tab_cls, scaled, scale_exp, scale_nan,
                                        scale_block)
                val[r, k] = v
                if cls == 0:
                    al[r, k] = NO_AL
                    z = True
                elif cls == 1:
                    al[r, k] = align
                    l = min(l, align)
                    h = max(h, align)
                else:
                    al[r, k] = NO_AL
                    sp = True
            lo[r, s] = l
            hi[r, s] = h
            zero[r, s] = z
            spec[r, s] = sp


@njit(cache=True)
def prepare_tiles(bits, shift, tab_val, tab_al, tab_cls, ks, steps, scale_exp, scale_nan, scale_block, tn, zero_exp,
                  bval, bal, bzf, bspec, blo, bhi, bzany, bsany):
    """B's rows (N, Kc) of raw bits decoded (as prepare_rows) straight into tile-major arrays: values / alignments
    (T, K, TN), per (T, step, lane) zero floor (zero_exp where the lane's step has a zero, else NO_TERM) and special
    flag, per (T, step) bounds and any zero / special over the tile's lanes. Padding lanes (n >= N) are never read
    back: 1.0, NO_AL, no flags. (One pass: B used to be decoded into rows, then copied into tiles.)"""
    N, Kc = bits.shape
    T = bval.shape[0]
    scaled = scale_exp.shape[1] > 0
    for t in range(T):
        for s in range(steps):
            _clear_bounds(blo, bhi, bzany, bsany, t, s)
        for j in range(tn):
            n = t * tn + j
            if n >= N:  # padding lanes: never read back
                for k in range(steps * ks):
                    bval[t, k, j] = 1.0
                    bal[t, k, j] = NO_AL
                for s in range(steps):
                    bzf[t, s, j] = NO_TERM
                    bspec[t, s, j] = False
                continue
            for s in range(steps):
                lo, hi, zero, spec = BIG, NO_TERM, False, False
                for jj in range(ks):
                    k = s * ks + jj
                    if k >= Kc:
                        bval[t, k, j] = 0.0
                        bal[t, k, j] = NO_AL
                        zero = True
                        continue
                    v, align, cls = _decode(bits, n, k, shift, tab_val, tab_al, tab_cls, scaled, scale_exp, scale_nan,
                                            scale_block)
                    bval[t, k, j] = v
                    if cls == 0:
                        bal[t, k, j] = NO_AL
                        zero = True
                    elif cls == 1:
                        bal[t, k, j] = align
                        lo = min(lo, align)
                        hi = max(hi, align)
                    else:
                        bal[t, k, j] = NO_AL
                        spec = True
                bzf[t, s, j] = zero_exp if zero else NO_TERM
                bspec[t, s, j] = spec
                blo[t, s] = min(blo[t, s], lo)
                bhi[t, s] = max(bhi[t, s], hi)
                bzany[t, s] |= zero
                bsany[t, s] |= spec


# ---- bit views of scalars (separate functions: numba's IR checks refuse .view on a variable defined twice)

@njit(cache=True)
def _f2i(x):
    return np.float64(x).view(np.int64)


@njit(cache=True)
def _i2f(i):
    return np.int64(i).view(np.float64)


# ---- rounding of an exact float64 sum to the accumulator format

@njit(cache=True)
def _round(x, keep, emin, emax, rne):
    """x (exact, nonzero or zero) rounded once (rounding.round_pack) to a float with `keep` fraction bits, exponents
    emin..emax: toward zero (f32; fdp.round_to_float's RZ) or to nearest even (f16); overflow gives inf; a result
    that rounds to zero is +0."""
    if x == 0.0:
        return 0.0
    eb, bias = bitlen(emax - emin + 2), 1 - emin
    sig, exp = split_float64(abs(x))
    bits = R.round_pack(0, sig, exp, False, eb, keep, bias, IEEE, 0, RN if rne else RZ, False, OVF_INF)
    cls, _, sig, exp = decode_float(bits, eb, keep, bias, IEEE, 0, 0)
    r = math.inf if cls == INF else math.ldexp(float(sig), exp)
    return -r if (x < 0.0 and r != 0.0) else r


@njit(cache=True)
def _align_of(r, emin, zero_exp):
    """Alignment exponent of an accumulator value: its binade (emin for subnormals), zero_exp for zeros,
    SPECIAL_CAL for inf/NaN."""
    rex = ((_f2i(r) >> 52) & 0x7FF) - 1023
    if r == 0.0:
        return np.int32(zero_exp)
    return np.int32(max(rex, emin))


# ---- one output, every rule (fdp._fdp_general on exact values)

@njit(cache=True)
def _general(aval, aal, m, bval, bal, t, n, k0, ks, c, c_al, F, zero_exp, keep, emin, emax, rne, nan_value,
             signed_zero):
    """The fused dot of row m of A and lane n of B tile t over K [k0, k0 + ks), with C = c unless
    c_al == NO_TERM (no C); an exact zero is +0, or -0 when signed_zero and every term is -0 (fdp.FdpUnit)."""
    nan = False
    pinf = False
    ninf = False
    all_neg_zero = True
    E = np.int64(NO_TERM) * 4
    for k in range(k0, k0 + ks):
        x = np.float64(aval[m, k])   # float32 storage (the 32-bit sums): widened before any arithmetic
        y = np.float64(bval[t, k, n])
        neg = np.signbit(x) != np.signbit(y)
        if np.isnan(x) or np.isnan(y):
            nan = True
        elif np.isinf(x) or np.isinf(y):
            if x == 0.0 or y == 0.0:
                nan = True
            elif neg:
                ninf = True
            else:
                pinf = True
        elif x == 0.0 or y == 0.0:
            E = max(E, zero_exp)
            all_neg_zero = all_neg_zero and neg
        else:
            E = max(E, np.int64(aal[m, k]) + bal[t, k, n])
            all_neg_zero = False
    c_present = c_al != NO_TERM
    if c_present:
        if np.isnan(c):
            nan = True
        elif np.isinf(c):
            if c < 0:
                ninf = True
            else:
                pinf = True
        elif c == 0.0:
            E = max(E, zero_exp)
            all_neg_zero = all_neg_zero and np.signbit(c)
        else:
            E = max(E, np.int64(c_al))
            all_neg_zero = False
    if nan or (pinf and ninf):
        return nan_value
    if pinf:
        return np.inf
    if ninf:
        return -np.inf
    sc = _i2f((1023 + F - E) << 52)
    iv = _i2f((1023 - F + E) << 52)
    acc = 0.0
    for k in range(k0, k0 + ks):
        acc += np.trunc(np.float64(aval[m, k]) * np.float64(bval[t, k, n]) * sc)
    if c_present:
        acc += np.trunc(c * sc)
    if acc == 0.0:
        return -0.0 if (all_neg_zero and signed_zero) else 0.0
    return _round(acc * iv, keep, emin, emax, rne)


@njit(cache=True)
def _lane(aval, aal, m, bval, bal, t, n, k0, ks, c, c_al, zf, zr, lane_special, F, zero_exp, keep, emin, emax, rne,
          nan_value, signed_zero):
    """One flagged lane: the truncated sum without special-value branches when the lane has no NaN/inf and its
    result is a nonzero normal number; _general otherwise."""
    if not lane_special and c_al < SPECIAL_CAL:
        E = max(np.int64(c_al), zf, zr)
        for k in range(k0, k0 + ks):
            E = max(E, np.int64(aal[m, k]) + bal[t, k, n])
        sc = _i2f((1023 + F - E) << 52)
        x = np.trunc(c * sc)
        for k in range(k0, k0 + ks):
            x += np.trunc(np.float64(aval[m, k]) * np.float64(bval[t, k, n]) * sc)
        if x != 0.0:
            return _round(x * _i2f((1023 - F + E) << 52), keep, emin, emax, rne)
    return _general(aval, aal, m, bval, bal, t, n, k0, ks, c, c_al, F, zero_exp, keep, emin, emax, rne, nan_value,
                    signed_zero)


# ---- one chain step of a tile: rows [r0, r1) of tile t

GENERAL, FAST, SUM32 = 0, 1, 2   # how _tile_step runs a row (chain_jobs decides from the row's bounds)
KB = 4   # K elements per pass of the sums (partial sums in xbuf: consecutive lanes overlap); steps of 8: one pass
EB = 16  # K elements per pass of the largest-alignment search (more row streams defeat the vectoriser)

# A tile step: acc[t, m, :nlen] = fused dot of (row m of A, lane n of B tile t) over chain step s, with C =
# acc[t, m, n], for the lanes it can settle; the others are flagged (flag[m - r0, n]; acc/cal keep C) for _lane:
# NaN/inf in the lane's inputs, a zero sum (the sign of zero needs every term), a result outside the
# accumulator's normal range (subnormal, overflow), or, on the fast path, a C with bits below 2^(E - F).
# zrow/skip/fast/top_p/lo_p (per row of the tile): its zero floor, whether all its lanes go to _general (NaN/inf
# in the row of A), whether it takes the fast path, the bounds of its products; nbad receives the flagged lanes
# per row. Whole arrays and indices, no views: a view per row costs more than a row of work.
# (Two rows per pass, to read B's step once, defeats the vectoriser: it cannot prove two rows of `acc` apart.)


@njit(cache=True, inline="always")
def _settled(c, cl, x, xb, other, emin, emax, sh, rne):
    """(acc, cal, flag) of a lane whose exact sum is x (float64 pattern xb): the sum rounded and its binade, or C
    kept and the lane flagged for _lane (`other`, a zero sum, a result outside the accumulator's normal range, a
    special C). Values only: stores inside an inlined helper cost the loops their vectorisation."""
    ex = ((xb >> 52) & 0x7FF) - 1023  # a zero sum: -1023, below emin
    bad = (ex < emin) | (ex >= emax) | (cl >= SPECIAL_CAL) | other
    rb = round_bits_f64(xb, sh, rne)
    return (c if bad else _i2f(rb)), (cl if bad else ((rb >> 52) & 0x7FF) - 1023), bad


@njit(cache=True)
def _fast_epilogue(acc, cal, xbuf, cbuf, flag, t, m, i, nlen, tp, lp, F, keep, emin, emax, rne, thr_p):
    """Round the exact sums xbuf of a fast-path row; flag lanes whose C the true E would truncate."""
    if rne:
        return _fast_round(acc, cal, xbuf, cbuf, flag, t, m, i, nlen, tp, lp, F, keep, emin, emax, True, thr_p)
    return _fast_round(acc, cal, xbuf, cbuf, flag, t, m, i, nlen, tp, lp, F, keep, emin, emax, False, thr_p)


@njit(cache=True, inline="always")
def _fast_round(acc, cal, xbuf, cbuf, flag, t, m, i, nlen, tp, lp, F, keep, emin, emax, rne, thr_p):
    sh = 52 - keep
    bad_n = 0
    for n in range(nlen):
        c = cbuf[n]
        cl = cal[t, m, n]
        x = xbuf[n]
        top = np.int64(max(tp, cl))  # >= the lane's E; C is exact iff it is a multiple of 2^(top - F)
        ct = c * _i2f((1023 + F - top) << 52)
        ok = (lp >= top - thr_p) & (ct == np.trunc(ct))
        acc[t, m, n], cal[t, m, n], bad = _settled(c, cl, x, _f2i(x), not ok, emin, emax, sh, rne)
        flag[i, n] = bad
        bad_n += bad
    return bad_n


@njit(cache=True)
def _general_epilogue(acc, cal, ebuf, xbuf, cbuf, bspec, flag, t, m, s, i, nlen, F, keep, emin, emax, rne):
    """Round the truncated sums xbuf (in units of 2^(E - F), E in ebuf) of a general-path row (rne a constant in
    each call: one loop per rounding)."""
    if rne:
        return _general_round(acc, cal, ebuf, xbuf, cbuf, bspec, flag, t, m, s, i, nlen, F, keep, emin, emax, True)
    return _general_round(acc, cal, ebuf, xbuf, cbuf, bspec, flag, t, m, s, i, nlen, F, keep, emin, emax, False)


@njit(cache=True, inline="always")
def _general_round(acc, cal, ebuf, xbuf, cbuf, bspec, flag, t, m, s, i, nlen, F, keep, emin, emax, rne):
    sh = 52 - keep
    bad_n = 0
    for n in range(nlen):
        e = np.int64(ebuf[n])
        c = cbuf[n]
        cl = cal[t, m, n]
        x = xbuf[n]
        xb = _f2i(x * _i2f((1023 - F + e) << 52))  # written out: through _settled this loop vectorises less
        ex = ((xb >> 52) & 0x7FF) - 1023  # a zero sum: -1023, below emin
        bad = (ex < emin) | (ex >= emax) | (cl >= SPECIAL_CAL) | bspec[t, s, n]
        rb = round_bits_f64(xb, sh, rne)
        acc[t, m, n] = c if bad else _i2f(rb)
        cal[t, m, n] = cl if bad else ((rb >> 52) & 0x7FF) - 1023
        flag[i, n] = bad
        bad_n += bad
    return bad_n


@njit(cache=True, inline="always")
def _skip_row(flag, i, nlen):
    for n in range(nlen):
        flag[i, n] = True
    return nlen


@njit(cache=True, inline="always")
def _tile_step(ks, aval, aal, bval, bal, bzf, bspec, acc, cal, ebuf, fbuf, sum32, flag, t, r0, r1, s, nlen, zrow,
               skip, fast, top_p, lo_p, F, keep, emin, emax, rne, thr_p, nbad):
    """Rows [r0, r1) of tile t, chain step s (ks a compile-time constant in the _stepN wrappers). Each phase is its
    own loop over the lanes: the largest alignment (passes of up to EB elements), the sums, then the rounding.
    Lanes are independent within a pass, so the loads and the truncations of consecutive lanes overlap; one loop
    with the rounding in it vectorised only in part. fbuf (3, TN): xbuf (partial sums), sbuf (2^(F - E)) and cbuf,
    a copy of C (the rounding keeps C from it: a select against acc itself compiles to masked stores).

    fast[i]: FAST (row bounds: no product truncated), SUM32 (row bounds allow the 32-bit sums, _sums32) or GENERAL.
    The float64 sums take passes of KB elements (one pass for steps of 8)."""
    xbuf, sbuf, cbuf = fbuf[0], fbuf[1], fbuf[2]
    k0 = s * ks
    kp = 8 if ks == 8 else KB  # a constant in the _stepN wrappers
    whole = ks - ks % kp
    eb = min(ks, EB)
    ewhole = ks - ks % eb
    for i in range(r1 - r0):
        m = r0 + i
        if skip[i]:
            nbad[i] = _skip_row(flag, i, nlen)
        elif fast[i] == FAST:  # no product is truncated: exact multiply-adds (any order: no partial sum rounds)
            for n in range(nlen):
                cbuf[n] = acc[t, m, n]
                xbuf[n] = cbuf[n]
            for kb in range(0, whole, kp):
                for n in range(nlen):
                    x = xbuf[n]
                    for k in range(kp):
                        x += np.float64(aval[m, k0 + kb + k]) * np.float64(bval[t, k0 + kb + k, n])
                    xbuf[n] = x
            for k in range(whole, ks):
                for n in range(nlen):
                    xbuf[n] += np.float64(aval[m, k0 + k]) * np.float64(bval[t, k0 + k, n])
            nbad[i] = _fast_epilogue(acc, cal, xbuf, cbuf, flag, t, m, i, nlen, top_p[i], lo_p[i], F, keep, emin, emax,
                                     rne, thr_p)
        else:
            zr = zrow[i]
            for n in range(nlen):
                ebuf[n] = np.int16(max(cal[t, m, n], bzf[t, s, n], zr, E_FLOOR))
            for kb in range(0, ewhole, eb):  # int16 throughout (numba widens int16 + int16 to int64: 1/4 the lanes)
                for n in range(nlen):
                    e = ebuf[n]
                    for k in range(eb):
                        e = max(e, np.int16(aal[m, k0 + kb + k] + bal[t, k0 + kb + k, n]))
                    ebuf[n] = e
            for k in range(ewhole, ks):
                for n in range(nlen):
                    ebuf[n] = max(ebuf[n], np.int16(aal[m, k0 + k] + bal[t, k0 + k, n]))
            e_lo = np.int16(32767)
            for n in range(nlen):
                e_lo = min(e_lo, ebuf[n])
                sc = _i2f((1023 + F - np.int64(ebuf[n])) << 52)
                sbuf[n] = sc
                cv = acc[t, m, n]
                cbuf[n] = cv
                xbuf[n] = np.trunc(cv * sc)
            if fast[i] == SUM32 and F - np.int64(e_lo) > 127:   # a lane's 2^(F - E) is no float32 (_sums32)
                fast[i] = GENERAL
            if fast[i] == SUM32:
                _sums32(ks, aval, bval, sbuf, xbuf, sum32, t, m, k0, nlen)
            else:
                for kb in range(0, whole, kp):  # integers below 2^53: exact in any order
                    for n in range(nlen):
                        sc = sbuf[n]
                        x = xbuf[n]
                        for k in range(kp):
                            x += np.trunc(np.float64(aval[m, k0 + kb + k]) * np.float64(bval[t, k0 + kb + k, n]) * sc)
                        xbuf[n] = x
                for k in range(whole, ks):
                    for n in range(nlen):
                        xbuf[n] += np.trunc(np.float64(aval[m, k0 + k]) * np.float64(bval[t, k0 + k, n]) * sbuf[n])
            nbad[i] = _general_epilogue(acc, cal, ebuf, xbuf, cbuf, bspec, flag, t, m, s, i, nlen, F, keep, emin, emax,
                                        rne)


@njit(cache=True, inline="always")
def _sums32(ks, aval, bval, sbuf, xbuf, sum32, t, m, k0, nlen):
    """The truncated terms of a row's step in float32 and int32, twice the lanes of float64 a vector instruction
    (ks a multiple of 8; float32 operand storage). Exact where chain_jobs marks the row SUM32 and every lane's
    2^(F - E) is a float32 (_tile_step):
    - a b is exact in float32: at most 24 significant bits (sum32_ok), its top below 2^(ahi + bhi + 2) <= 2^128
      and its lowest bit at or above 2^(alo + blo - fa - fb) >= 2^-149 (row bounds);
    - times 2^(F - E) it stays exact, or lies below 2^-126 < 1 where only its truncation, 0, counts;
    - each term's magnitude is below 2^(F + 2) (|a b| < 2^(al_a + al_b + 2), al_a + al_b <= E), so the cast to int32
      truncates it exactly, and ks of them sum below ks 2^(F + 2) <= 2^31 (sum32_ok) in int32."""
    sums, scs = sum32[0], _f32_view(sum32[1])   # a float32 scale array: the passes run on float32 lanes only
    for n in range(nlen):
        scs[n] = np.float32(sbuf[n])
        sums[n] = 0
    for kb in range(0, ks, 8):
        for n in range(nlen):
            sc = scs[n]
            x = sums[n]
            for k in range(8):
                x += np.int32(aval[m, k0 + kb + k] * bval[t, k0 + kb + k, n] * sc)
            sums[n] = x
    for n in range(nlen):
        xbuf[n] += np.float64(sums[n])


@njit(cache=True, inline="always")
def _f32_view(row):
    return row.view(np.float32)


@njit(cache=True, nogil=True)
def _step8(aval, aal, bval, bal, bzf, bspec, acc, cal, ebuf, fbuf, sum32, flag, t, r0, r1, s, nlen, zrow, skip,
           fast, top_p, lo_p, F, keep, emin, emax, rne, thr_p, nbad):
    _tile_step(8, aval, aal, bval, bal, bzf, bspec, acc, cal, ebuf, fbuf, sum32, flag, t, r0, r1, s, nlen, zrow,
               skip, fast, top_p, lo_p, F, keep, emin, emax, rne, thr_p, nbad)


@njit(cache=True, nogil=True)
def _step16(aval, aal, bval, bal, bzf, bspec, acc, cal, ebuf, fbuf, sum32, flag, t, r0, r1, s, nlen, zrow, skip,
            fast, top_p, lo_p, F, keep, emin, emax, rne, thr_p, nbad):
    _tile_step(16, aval, aal, bval, bal, bzf, bspec, acc, cal, ebuf, fbuf, sum32, flag, t, r0, r1, s, nlen, zrow,
               skip, fast, top_p, lo_p, F, keep, emin, emax, rne, thr_p, nbad)


@njit(cache=True, nogil=True)
def _step32(aval, aal, bval, bal, bzf, bspec, acc, cal, ebuf, fbuf, sum32, flag, t, r0, r1, s, nlen, zrow, skip,
            fast, top_p, lo_p, F, keep, emin, emax, rne, thr_p, nbad):
    _tile_step(32, aval, aal, bval, bal, bzf, bspec, acc, cal, ebuf, fbuf, sum32, flag, t, r0, r1, s, nlen, zrow,
               skip, fast, top_p, lo_p, F, keep, emin, emax, rne, thr_p, nbad)


@njit(cache=True, nogil=True)
def _step_any(ks, aval, aal, bval, bal, bzf, bspec, acc, cal, ebuf, fbuf, sum32, flag, t, r0, r1, s, nlen, zrow,
              skip, fast, top_p, lo_p, F, keep, emin, emax, rne, thr_p, nbad):
    _tile_step(ks, aval, aal, bval, bal, bzf, bspec, acc, cal, ebuf, fbuf, sum32, flag, t, r0, r1, s, nlen, zrow,
               skip, fast, top_p, lo_p, F, keep, emin, emax, rne, thr_p, nbad)


# ---- promotion into the f32 main accumulator

@njit(cache=True)
def fma_f32(s, t, m):
    """f32(s * t + m) rounded once to nearest even, for f32 values s, t, m (CUDA's fmaf / FFMA): s * t is exact
    in float64; the float64 sum is made round-to-odd (TwoSum error), and round-to-odd at 53 bits followed by
    one rounding to 24 bits is the correctly rounded result (Boldo & Melquiond, 2008)."""
    p = s * t
    x = p + m
    if not np.isfinite(x):
        return np.float32(x)
    bb = x - p
    err = (p - (x - bb)) + (m - bb)
    if err != 0.0:
        xb = _f2i(x)
        if (xb & 1) == 0:
            x = _i2f(xb + (1 if (err > 0.0) == (x > 0.0) else -1))
    return np.float32(x)


@njit(cache=True)
def _promote_rows(acc, cal, main, t, r0, r1, nlen, sa, sb, init_cal):
    """main = fma(s, acc, main) in f32 for rows [r0, r1) of tile t, s = f32(sa[m] * sb[n]); the chain restarts."""
    for m in range(r0, r1):
        for n in range(nlen):
            sc = np.float64(np.float32(sa[m] * sb[n]))
            main[t, m, n] = np.float64(fma_f32(sc, acc[t, m, n], main[t, m, n]))
            acc[t, m, n] = 0.0
            cal[t, m, n] = init_cal


# ---- the job kernel: a chunk of chain steps over a range of output tiles (one thread's share)

FAST_BACKOFF = 16  # steps a row segment stays on the general path after a fast attempt flagged > 1/8 of lanes


@njit(cache=True, nogil=True)
def chain_jobs(j0, j1, ks, aval, aal, alo, ahi, azero, aspec, bval, bal, bzf, bspec, blo, bhi, bzany, bsany,
               acc, cal, main, backoff, m0, m1, N, tm, steps, g0, g_last, promote, init_cal, ps_a, ps_b, kb0,
               F, zero_exp, keep, emin, emax, rne, nan_value, signed_zero, thr_p, allow_fast, sum32_ok, stats):
    """Jobs [j0, j1) of a prepared chunk: chain steps [0, steps) on rows [m0, m1) of the state (acc, cal,
    main: (T, M, TN)); job j is tile j % T, rows m0 + (j // T) * tm onwards. Releases the GIL: threads run
    disjoint job ranges (tcemu.matmul, workers=).

    init_cal: the accumulator's alignment when a chain (re)starts: the zero floor for +0 registers (or a unit that
    adds a +0 accumulator without C), NO_TERM for an instruction without C;
    g0: the chunk's first step, counted from the start of the chain (promotion intervals, first-step C);
    g_last: the chain's last step (a partial promotion interval is promoted there); promote: P or 0;
    ps_a (M, nkb) / ps_b (nkb, T * TN): promotion scales (float32 values) or empty arrays (scale 1);
    backoff (T, M): fast-path back-off counters; stats (T * ntm, 4): row segments run fast, run general, lanes
    redone one at a time, and general row segments whose sums ran in 32 bits; sum32_ok: aval / bval hold float32
    values and the unit's terms fit _sums32's int32 sums (engine.sum32_ok); each row's step then takes them where
    its bounds allow."""
    T, _, TN = acc.shape
    scaled = ps_a.shape[1] > 0
    ones_m = np.ones(acc.shape[1], np.float64)
    for job in range(j0, j1):
        t = job % T
        r0 = m0 + (job // T) * tm
        r1 = min(m1, r0 + tm)
        rows = r1 - r0
        nlen = min(TN, N - t * TN)
        ebuf = np.empty(TN, np.int16)
        fbuf = np.empty((3, TN), np.float64)  # per lane: partial sums, 2^(F - E), C
        sum32 = np.empty((2, TN), np.int32)   # _sums32's sums and (float32 bits) scales
        flag = np.empty((tm, TN), np.bool_)
        zrow = np.empty(tm, np.int32)
        skip = np.zeros(tm, np.bool_)
        fast = np.zeros(tm, np.int8)   # GENERAL / FAST / SUM32 (_tile_step)
        top_p = np.empty(tm, np.int32)
        lo_p = np.empty(tm, np.int32)
        nbad = np.zeros(tm, np.int64)
        ones_b = np.ones(TN, np.float64)
        for s in range(steps):
            g = g0 + s
            k0 = s * ks
            for i in range(rows):
                m = r0 + i
                zrow[i] = zero_exp if azero[m, s] else NO_TERM
                tp = ahi[m, s] + bhi[t, s]
                if azero[m, s] or bzany[t, s]:
                    tp = max(tp, zero_exp)
                top_p[i] = tp
                lo_p[i] = alo[m, s] + blo[t, s]
                fast[i] = GENERAL
                skip[i] = aspec[m, s]
                if allow_fast and not bsany[t, s] and not aspec[m, s]:
                    if backoff[t, m] > 0:
                        backoff[t, m] -= 1
                    elif lo_p[i] >= tp - thr_p:
                        fast[i] = FAST
                if fast[i] == GENERAL and sum32_ok and not bsany[t, s] and ahi[m, s] + bhi[t, s] <= 126 and \
                        lo_p[i] - (F - thr_p) >= -149:   # every product exact in float32 (_sums32)
                    fast[i] = SUM32
            if ks == 16:  # the unrolled kernels of the instruction K steps, separate functions (an inlined copy
                # in this loop optimises worse)
                _step16(aval, aal, bval, bal, bzf, bspec, acc, cal, ebuf, fbuf, sum32, flag, t, r0, r1, s,
                        nlen, zrow, skip, fast, top_p, lo_p, F, keep, emin, emax, rne, thr_p, nbad)
            elif ks == 32:
                _step32(aval, aal, bval, bal, bzf, bspec, acc, cal, ebuf, fbuf, sum32, flag, t, r0, r1, s,
                        nlen, zrow, skip, fast, top_p, lo_p, F, keep, emin, emax, rne, thr_p, nbad)
            elif ks == 8:
                _step8(aval, aal, bval, bal, bzf, bspec, acc, cal, ebuf, fbuf, sum32, flag, t, r0, r1, s,
                       nlen, zrow, skip, fast, top_p, lo_p, F, keep, emin, emax, rne, thr_p, nbad)
            else:
                _step_any(ks, aval, aal, bval, bal, bzf, bspec, acc, cal, ebuf, fbuf, sum32, flag, t, r0, r1,
                          s, nlen, zrow, skip, fast, top_p, lo_p, F, keep, emin, emax, rne, thr_p, nbad)
            for i in range(rows):
                m = r0 + i
                stats[job, 0 if fast[i] == FAST else 1] += 1
                stats[job, 3] += fast[i] == SUM32
                if fast[i] == FAST and nbad[i] * 8 > nlen:
                    backoff[t, m] = FAST_BACKOFF
                if nbad[i]:
                    for n in range(nlen):
                        if flag[i, n]:  # acc/cal still hold C
                            acc[t, m, n] = _lane(aval, aal, m, bval, bal, t, n, k0, ks, acc[t, m, n], cal[t, m, n],
                                                 bzf[t, s, n], zrow[i], aspec[m, s] or bspec[t, s, n], F, zero_exp,
                                                 keep, emin, emax, rne, nan_value, signed_zero)
                            cal[t, m, n] = _align_of(acc[t, m, n], emin, zero_exp)
                            stats[job, 2] += 1
            if promote and ((g + 1) % promote == 0 or g == g_last):
                if scaled:
                    _promote_rows(acc, cal, main, t, r0, r1, nlen, ps_a[:, kb0 + g // promote],
                                  ps_b[kb0 + g // promote, t * TN:(t + 1) * TN], init_cal)
                else:
                    _promote_rows(acc, cal, main, t, r0, r1, nlen, ones_m, ones_b, init_cal)
