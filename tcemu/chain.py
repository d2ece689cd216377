"""Numba kernels of tcemu.matmul: a chain of fused dot products over K, many outputs at once.

One chain step is one tensor-core instruction's fused dot (fdp.py; traces/wgmma_numerics_sm90.npz): for output
(m, n), with E the largest alignment exponent among the step's products (ea + eb), C's and the zero floor,

    D = round( C truncated + sum_k (a_k b_k truncated) ),   every term truncated toward zero to 2^(E - F).

Here every operand is held as an exact float64 value and an int32 alignment exponent. A product a_k b_k is exact
in float64 (at most 22 significant bits), so is its scaling by 2^(F - E); np.trunc of the scaled product is the
truncated term as an integer below 2^(F + 2); the K_step + 1 terms sum exactly (below 2^(F + 8) < 2^53, in any
order); the sum times 2^(E - F) is the exact fused sum, rounded once by bit operations (RZ for f32, RNE for f16).
Both loops run over n and vectorise. Lanes with NaN/inf anywhere, and lanes whose sum is zero (the sign of an
exact zero needs every term), are redone by `_general`, which applies every rule of fdp.py one output at a time.

Fast path: when bounds on the exponents prove that no term of a row segment is truncated (every product's lowest
bit and C's lowest kept bit at or above 2^(E - F)), the fused sum is the exact sum and E is not needed: the
segment runs as plain float64 multiply-adds (exact: all partial sums fit in 53 bits).

Two-level accumulation (promote_every): the chain runs in `acc` from +0 (or from no C); every P steps it is
promoted into the f32 `main` accumulator as CUDA code does it, main = fma(s, acc, main) rounded once to f32
(s = 1, or DeepGEMM's per-block scale product), then the chain restarts.
"""
import math

import numpy as np
from numba import njit, prange

from .formats import decode_float

NO_TERM = -(1 << 20)   # alignment of a zero or special element: never the maximum, sums stay in int32
SPECIAL_CAL = 1024     # alignment recorded for an inf/NaN accumulator (float64 exponent field 2047)
BIG = 1 << 20          # "no nonzero term" for minima


# ---- operand preparation: raw bits -> exact float64 values, alignments and per-step exponent bounds

@njit(cache=True)
def prepare_rows(bits, exp_bits, man_bits, bias, special, signed, shift, ks, steps, scale_exp, scale_nan,
                 scale_block, val, al, lo, hi, zero, spec):
    """bits (R, Kc) -> val, al (R, steps * ks) (zero padded), per (row, step) min/max alignment of nonzero finite
    elements (BIG / NO_TERM when none), any zero (padding included), any inf/NaN. scale_exp (R, nblocks) int32
    (block-scaled kinds: 2^e multiplies every element of a block of scale_block K; scale_nan marks NaN scales)
    or an empty array."""
    R, Kc = bits.shape
    scaled = scale_exp.shape[1] > 0
    for r in range(R):
        for s in range(steps):
            lo[r, s] = BIG
            hi[r, s] = NO_TERM
            zero[r, s] = False
            spec[r, s] = False
            for j in range(ks):
                k = s * ks + j
                if k >= Kc:
                    val[r, k] = 0.0
                    al[r, k] = NO_TERM
                    zero[r, s] = True
                    continue
                cls, sign, sig, exp = decode_float(bits[r, k], exp_bits, man_bits, bias, special, signed, shift)
                align = exp + man_bits
                if scaled:
                    b = k // scale_block
                    if scale_nan[r, b]:
                        cls = 3
                    exp += scale_exp[r, b]
                    align += scale_exp[r, b]
                if cls == 0:
                    val[r, k] = -0.0 if sign else 0.0
                    al[r, k] = NO_TERM
                    zero[r, s] = True
                elif cls == 1:
                    v = math.ldexp(np.float64(sig), exp)
                    val[r, k] = -v if sign else v
                    al[r, k] = align
                    lo[r, s] = min(lo[r, s], align)
                    hi[r, s] = max(hi[r, s], align)
                else:
                    val[r, k] = np.nan if cls == 3 else (-np.inf if sign else np.inf)
                    al[r, k] = NO_TERM
                    spec[r, s] = True


@njit(cache=True)
def tile_columns(val, al, zero, spec, lo, hi, tn, zero_exp, bval, bal, bzf, bspec, blo, bhi, bzany, bsany):
    """B prepared as rows (N, K) -> tile-major (T, K, TN) values/alignments, per (T, step, lane) zero floor and
    special flag, per (T, step) bounds over the tile's columns."""
    N, Kp = val.shape
    steps = zero.shape[1]
    T = bval.shape[0]
    for t in range(T):
        for s in range(steps):
            blo[t, s] = BIG
            bhi[t, s] = NO_TERM
            bzany[t, s] = False
            bsany[t, s] = False
        for j in range(tn):
            n = t * tn + j
            if n >= N:  # padding lanes: never read back
                for k in range(Kp):
                    bval[t, k, j] = 1.0
                    bal[t, k, j] = NO_TERM
                for s in range(steps):
                    bzf[t, s, j] = NO_TERM
                    bspec[t, s, j] = False
                continue
            for k in range(Kp):
                bval[t, k, j] = val[n, k]
                bal[t, k, j] = al[n, k]
            for s in range(steps):
                bzf[t, s, j] = zero_exp if zero[n, s] else NO_TERM
                bspec[t, s, j] = spec[n, s]
                blo[t, s] = min(blo[t, s], lo[n, s])
                bhi[t, s] = max(bhi[t, s], hi[n, s])
                bzany[t, s] |= zero[n, s]
                bsany[t, s] |= spec[n, s]


# ---- bit views of scalars (separate functions: numba's IR checks refuse .view on a variable defined twice)

@njit(cache=True)
def _f2i(x):
    return np.float64(x).view(np.int64)


@njit(cache=True)
def _i2f(i):
    return np.int64(i).view(np.float64)


# ---- rounding of an exact float64 sum to the accumulator format

@njit(cache=True)
def _round(x, keep, emin, emax, rne, sub_up, sub_down):
    """x (exact, nonzero or zero) rounded once to a float with `keep` fraction bits, exponents emin..emax:
    toward zero (f32; fdp.round_to_float's RZ) or to nearest even (f16); overflow gives inf; a result that
    rounds to zero is +0. sub_up = 2^(keep - emin), sub_down = its inverse (the subnormal grid)."""
    xb = _f2i(x)
    ex = ((xb >> 52) & 0x7FF) - 1023
    sh = 52 - keep
    if rne:
        rn = _i2f((xb + ((np.int64(1) << (sh - 1)) - 1) + ((xb >> sh) & 1)) & ~((np.int64(1) << sh) - 1))
        rs = np.rint(x * sub_up) * sub_down
    else:
        rn = _i2f(xb & ~((np.int64(1) << sh) - 1))
        rs = np.trunc(x * sub_up) * sub_down
    r = rn if ex >= emin else rs
    rb = _f2i(r)
    rex = ((rb >> 52) & 0x7FF) - 1023
    if rex > emax:
        r = np.inf if x > 0 else -np.inf
    if r == 0.0:
        r = 0.0
    return r


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
def _general(a, ea, bt, ebt, n, ks, c, c_al, F, zero_exp, keep, emin, emax, rne, sub_up, sub_down, nan_value):
    """The fused dot of a (ks,) row and column n of bt (ks, TN), with C = c unless c_al == NO_TERM (no C)."""
    nan = False
    pinf = False
    ninf = False
    all_neg_zero = True
    E = np.int64(NO_TERM) * 4
    for k in range(ks):
        x = a[k]
        y = bt[k, n]
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
            E = max(E, np.int64(ea[k]) + ebt[k, n])
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
    t = 0.0
    for k in range(ks):
        t += np.trunc(a[k] * bt[k, n] * sc)
    if c_present:
        t += np.trunc(c * sc)
    if t == 0.0:
        return -0.0 if all_neg_zero else 0.0
    return _round(t * iv, keep, emin, emax, rne, sub_up, sub_down)


# ---- one row segment, one chain step

@njit(cache=True, inline="always")
def _row_step(KS, a, ea, bt, ebt, zf, sflag, acc, cal, ebuf, prev, prevcal, flag, nlen, zr, F, zero_exp, keep, emin,
              emax, rne, sub_up, sub_down, fast):
    """acc[:nlen] = fused dot of (a, column n of bt) with C = acc[n]. Returns (bad lanes, min nonzero C
    alignment, max C alignment, any inf/NaN C) of the result, for the next step's fast-path test."""
    nbad = 0
    if fast:
        for n in range(nlen):
            c = acc[n]
            x = c
            for k in range(KS):
                x += a[k] * bt[k, n]
            prev[n] = c
            prevcal[n] = cal[n]
            bad = x == 0.0
            flag[n] = bad
            nbad += bad
            r = _round(x, keep, emin, emax, rne, sub_up, sub_down)
            acc[n] = r
            cal[n] = _align_of(r, emin, zero_exp)
    else:
        for n in range(nlen):
            e = max(cal[n], zf[n], zr)
            for k in range(KS):
                e = max(e, ea[k] + ebt[k, n])
            ebuf[n] = e
        for n in range(nlen):
            e = np.int64(ebuf[n])
            sc = _i2f((1023 + F - e) << 52)
            iv = _i2f((1023 - F + e) << 52)
            c = acc[n]
            t = np.trunc(c * sc)
            for k in range(KS):
                t += np.trunc(a[k] * bt[k, n] * sc)
            prev[n] = c
            prevcal[n] = cal[n]
            bad = (t == 0.0) | sflag[n] | (cal[n] >= SPECIAL_CAL)
            flag[n] = bad
            nbad += bad
            r = _round(t * iv, keep, emin, emax, rne, sub_up, sub_down)
            acc[n] = r
            cal[n] = _align_of(r, emin, zero_exp)
    return nbad


@njit(cache=True)
def _row8(a, ea, bt, ebt, zf, sflag, acc, cal, ebuf, prev, prevcal, flag, nlen, zr, F, zero_exp, keep, emin, emax, rne,
          sub_up, sub_down, fast):
    return _row_step(8, a, ea, bt, ebt, zf, sflag, acc, cal, ebuf, prev, prevcal, flag, nlen, zr, F, zero_exp, keep,
                     emin, emax, rne, sub_up, sub_down, fast)


@njit(cache=True)
def _row16(a, ea, bt, ebt, zf, sflag, acc, cal, ebuf, prev, prevcal, flag, nlen, zr, F, zero_exp, keep, emin, emax, rne,
           sub_up, sub_down, fast):
    return _row_step(16, a, ea, bt, ebt, zf, sflag, acc, cal, ebuf, prev, prevcal, flag, nlen, zr, F, zero_exp, keep,
                     emin, emax, rne, sub_up, sub_down, fast)


@njit(cache=True)
def _row32(a, ea, bt, ebt, zf, sflag, acc, cal, ebuf, prev, prevcal, flag, nlen, zr, F, zero_exp, keep, emin, emax, rne,
           sub_up, sub_down, fast):
    return _row_step(32, a, ea, bt, ebt, zf, sflag, acc, cal, ebuf, prev, prevcal, flag, nlen, zr, F, zero_exp, keep,
                     emin, emax, rne, sub_up, sub_down, fast)


@njit(cache=True)
def _row_any(a, ea, bt, ebt, zf, sflag, acc, cal, ebuf, prev, prevcal, flag, nlen, zr, F, zero_exp, keep, emin, emax,
             rne, sub_up, sub_down, fast):
    return _row_step(a.shape[0], a, ea, bt, ebt, zf, sflag, acc, cal, ebuf, prev, prevcal, flag, nlen, zr, F, zero_exp,
                     keep, emin, emax, rne, sub_up, sub_down, fast)


@njit(cache=True)
def _row(ks, a, ea, bt, ebt, zf, sflag, acc, cal, ebuf, prev, prevcal, flag, nlen, zr, F, zero_exp, keep, emin, emax, rne,
         sub_up, sub_down, fast):
    if ks == 16:
        return _row16(a, ea, bt, ebt, zf, sflag, acc, cal, ebuf, prev, prevcal, flag, nlen, zr, F, zero_exp, keep, emin,
                      emax, rne, sub_up, sub_down, fast)
    if ks == 32:
        return _row32(a, ea, bt, ebt, zf, sflag, acc, cal, ebuf, prev, prevcal, flag, nlen, zr, F, zero_exp, keep, emin,
                      emax, rne, sub_up, sub_down, fast)
    if ks == 8:
        return _row8(a, ea, bt, ebt, zf, sflag, acc, cal, ebuf, prev, prevcal, flag, nlen, zr, F, zero_exp, keep, emin,
                     emax, rne, sub_up, sub_down, fast)
    return _row_any(a, ea, bt, ebt, zf, sflag, acc, cal, ebuf, prev, prevcal, flag, nlen, zr, F, zero_exp, keep, emin,
                    emax, rne, sub_up, sub_down, fast)


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
def _promote_row(acc, cal, main, sa, sb, nlen, init_cal):
    for n in range(nlen):
        s = np.float64(np.float32(sa * sb[n]))
        main[n] = np.float64(fma_f32(s, acc[n], main[n]))
        acc[n] = 0.0
        cal[n] = init_cal


# ---- the tile kernel: a chunk of chain steps over every output tile, tiles in parallel

@njit(cache=True, parallel=True)
def chain_chunk(ks, aval, aal, alo, ahi, azero, aspec, bval, bal, bzf, bspec, blo, bhi, bzany, bsany,
                acc, cal, main, crow_lo, crow_hi, crow_sp, m0, m1, N, tm, steps, g0, g_last, promote, init_cal,
                ps_a, ps_b, kb0, F, zero_exp, keep, emin, emax, rne, sub_up, sub_down, nan_value, thr_p, thr_c,
                thr_c_first, allow_fast, stats):
    """Run chain steps [0, steps) of a prepared chunk on rows [m0, m1) of the state (acc, cal, main: (T, M, TN)).

    g0: the chunk's first step, counted from the start of the chain (promotion intervals, first-step C);
    g_last: the chain's last step (a partial promotion interval is promoted there); promote: P or 0;
    ps_a (M, nkb) / ps_b (nkb, T * TN): promotion scales (float32 values) or empty arrays (scale 1);
    crow_*: per (T, M) bounds of C for the fast-path test; stats (T * ntm, 3): fast, general, redone lanes."""
    T, _, TN = acc.shape
    ntm = (m1 - m0 + tm - 1) // tm
    scaled = ps_a.shape[1] > 0
    for job in prange(T * ntm):
        t = job % T
        r0 = m0 + (job // T) * tm
        r1 = min(m1, r0 + tm)
        nlen = min(TN, N - t * TN)
        ebuf = np.empty(TN, np.int32)
        prev = np.empty(TN, np.float64)
        prevcal = np.empty(TN, np.int32)
        flag = np.empty(TN, np.bool_)
        ones = np.ones(TN, np.float64)
        for s in range(steps):
            g = g0 + s
            k0 = s * ks
            bt = bval[t, k0:k0 + ks]
            ebt = bal[t, k0:k0 + ks]
            zf = bzf[t, s]
            sflag = bspec[t, s]
            for m in range(r0, r1):
                a = aval[m, k0:k0 + ks]
                ea = aal[m, k0:k0 + ks]
                zr = zero_exp if azero[m, s] else NO_TERM
                accr = acc[t, m]
                calr = cal[t, m]
                fast = False
                if allow_fast and not (aspec[m, s] or bsany[t, s] or crow_sp[t, m]):
                    top = max(ahi[m, s] + bhi[t, s], crow_hi[t, m])
                    if azero[m, s] or bzany[t, s]:
                        top = max(top, zero_exp)
                    tc = thr_c_first if g == 0 else thr_c
                    fast = alo[m, s] + blo[t, s] >= top - thr_p and crow_lo[t, m] >= top - tc
                nbad = _row(ks, a, ea, bt, ebt, zf, sflag, accr, calr, ebuf, prev, prevcal, flag, nlen, zr, F,
                            zero_exp, keep, emin, emax, rne, sub_up, sub_down, fast)
                stats[job, 0 if fast else 1] += 1
                if nbad or aspec[m, s]:
                    for n in range(nlen):
                        if flag[n] or aspec[m, s]:
                            accr[n] = _general(a, ea, bt, ebt, n, ks, prev[n], prevcal[n], F, zero_exp, keep,
                                               emin, emax, rne, sub_up, sub_down, nan_value)
                            calr[n] = _align_of(accr[n], emin, zero_exp)
                            stats[job, 2] += 1
                lo = BIG
                hi = NO_TERM
                sp = False
                for n in range(nlen):
                    cl = calr[n]
                    hi = max(hi, cl)
                    if accr[n] != 0.0:
                        lo = min(lo, cl)
                    sp |= cl >= SPECIAL_CAL
                if promote and ((g + 1) % promote == 0 or g == g_last):
                    if scaled:
                        _promote_row(accr, calr, main[t, m], ps_a[m, kb0 + g // promote],
                                     ps_b[kb0 + g // promote, t * TN:(t + 1) * TN], nlen, init_cal)
                    else:
                        _promote_row(accr, calr, main[t, m], 1.0, ones, nlen, init_cal)
                    lo = BIG
                    hi = init_cal
                    sp = False
                crow_lo[t, m] = lo
                crow_hi[t, m] = hi
                crow_sp[t, m] = sp
