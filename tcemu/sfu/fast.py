"""The f32 MUFU cores of tcemu.sfu.mufu compiled with numba: the same rules, one loop over the lanes instead of
some twenty numpy passes (the interpreter calls them once per warp instruction). tests/test_sfu.py holds them
equal to mufu.py, the reference the GPU proof checks, on every special value and 2^20 random inputs per core.
"""
import numpy as np
from numba import njit

from .mufu import TANH_K
from .tables import table

QNAN, SIGN, INF, ONE = np.uint32(0x7FFFFFFF), np.uint32(0x80000000), np.uint32(0x7F800000), np.uint32(0x3F800000)
RCP, RSQ, SQRT, EX2, LG2, SIN, COS, TANH = range(8)


@njit(cache=True, inline="always")
def _scale(r, shift, sign):
    e = np.int64((r >> 23) & 0xFF) + shift
    if e <= 0:
        return sign
    if e >= 255:
        return INF | sign
    return np.uint32((np.uint32(e) << 23) | (r & 0x7FFFFF) | sign)


@njit(cache=True, inline="always")
def _isnan(x):
    return (x & 0x7FFFFFFF) > 0x7F800000


@njit(cache=True)
def _cores(code, xs, t0, t1, t0f, t1f, tanh_cat, tanh_off, out, outf):
    """out[i] = core(xs[i]); t0/t1 the core's table(s) (LG2: [1, 2) and [1/2, 1); TANH: tanh_cat/tanh_off)."""
    for i in range(xs.size):
        x = xs[i]
        s = x & SIGN
        e = np.int64((x >> 23) & 0xFF)
        m = x & 0x7FFFFF
        if code == RCP:
            if _isnan(x):
                out[i] = QNAN
            elif e == 0:
                out[i] = INF | s
            elif e == 255:
                out[i] = s
            else:
                out[i] = _scale(t0[m], 127 - e, s)
        elif code == RSQ or code == SQRT:
            if _isnan(x) or (s != 0 and e != 0):
                out[i] = QNAN
            elif e == 0:
                out[i] = INF | s if code == RSQ else s
            elif e == 255:
                out[i] = 0 if code == RSQ else INF
            else:
                k = e - 127
                r = t0[(np.uint32(k & 1) << 23) | m]
                out[i] = _scale(r, -(k >> 1) if code == RSQ else (k >> 1), np.uint32(0))
        elif code == EX2:
            if _isnan(x):
                out[i] = QNAN
            elif e >= 134:
                out[i] = 0 if s != 0 else INF
            else:
                sig = np.int64(m | 0x800000)
                sh = max(e - 127, -31)
                n = 0 if e == 0 else (sig << sh if sh >= 0 else sig >> (-sh))
                if s != 0:
                    n = ~n if (n & 0x7FFFFF) != 0 else -n
                out[i] = _scale(t0[n & 0x7FFFFF], n >> 23, np.uint32(0))
        elif code == LG2:
            if _isnan(x) or (s != 0 and e != 0):
                out[i] = QNAN
            elif e == 0:
                out[i] = 0xFF800000
            elif e == 255:
                out[i] = INF
            elif e == 127:
                out[i] = t0[m]
            elif e == 126:
                out[i] = t1[m]
            else:
                head = m < (1 << 22)
                c = float(e - 127) if head else float(e - 126)
                pf = t0f[m] if head else t1f[m]
                p = float(pf)
                pa = abs(pf)
                ulp = 0.0 if p == 0 else float(np.nextafter(pa, np.float32(np.inf)) - pa)
                v = c + p
                neg = v < 0
                if neg:
                    mag = -v - ((2.0 ** -36 if p == 0 else ulp) if p >= 0 else 0.0)
                else:
                    mag = v - (ulp if p < 0 else 0.0)
                mag = max(mag, 0.0)
                outf[i] = np.float32(mag)
                if float(outf[i]) > mag:
                    out[i] -= np.uint32(1)
                if neg:
                    out[i] |= SIGN
        elif code == SIN or code == COS:
            if e == 255:
                out[i] = QNAN
                continue
            sig = np.int64(m | 0x800000)
            sh = e - 125
            if e == 0 or sh >= 25:
                q = np.int64(0)
            elif sh >= 0:
                q = (sig << sh) & ((1 << 25) - 1)
            else:
                q = sig >> min(-sh, 63)
            if code == COS:
                q = (q + (1 << 23)) & ((1 << 25) - 1)
            h = t0[q & ((1 << 24) - 1)]
            if q >= (1 << 24):
                h ^= SIGN
            out[i] = h ^ s if code == SIN else h
        else:   # TANH
            if _isnan(x):
                out[i] = QNAN
            elif e >= 130:
                out[i] = ONE | s
            elif e >= 119:
                k = tanh_off[2 * (e - 119) + 1]
                out[i] = tanh_cat[tanh_off[2 * (e - 119)] + (m >> k)] | s
            else:
                out[i] = x


_CODES = {"rcp": RCP, "rsqrt": RSQ, "sqrt": SQRT, "ex2": EX2, "lg2": LG2, "sin": SIN, "cos": COS, "tanh": TANH}
_TABLE = {"rcp": "rcp", "rsqrt": "rsqrt", "sqrt": "sqrt", "ex2": "ex2", "lg2": "lg2_0", "sin": "sin", "cos": "sin"}
_EMPTY = np.zeros(1, np.uint32)
_tanh = []


def _tanh_tables():
    if not _tanh:
        parts = [table(f"tanh_{e}_{k}") for e, k in TANH_K.items()]
        off = np.zeros(2 * len(parts), np.int64)
        start = 0
        for j, (p, k) in enumerate(zip(parts, TANH_K.values())):
            off[2 * j], off[2 * j + 1] = start, k
            start += p.size
        _tanh.extend([np.concatenate(parts), off])
    return _tanh


def core(name, x):
    """The f32 core `name` (rcp rsqrt sqrt ex2 lg2 sin cos tanh) on uint32 patterns."""
    x = np.ascontiguousarray(x, np.uint32)
    t0 = table(_TABLE[name]) if name != "tanh" else _EMPTY
    t1 = table("lg2_m1") if name == "lg2" else _EMPTY
    cat, off = _tanh_tables() if name == "tanh" else (_EMPTY, np.zeros(2, np.int64))
    out = np.zeros(x.shape, np.uint32)
    _cores(_CODES[name], x.reshape(-1), t0, t1, t0.view(np.float32), t1.view(np.float32), cat, off,
           out.reshape(-1), out.reshape(-1).view(np.float32))
    return out
