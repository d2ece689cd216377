"""Deterministic predictors of the MUFU tables: float64 basic operations only (+ - * /, sqrt, floor, ldexp),
which IEEE 754 fixes bit for bit on every machine, so a table stored as (hardware - prediction) decodes to
the same bits everywhere. They need not be accurate, only close (small residuals compress well); no libm
call is used, since exp2 / log2 / sin / tanh differ between C libraries in the last bit.
"""
import numpy as np

LN2 = 0.6931471805599453
TWO_PI = 6.283185307179586


def to_f32_bits(v):
    """float64 -> f32 bits, round to nearest (numpy's cast; gradual underflow)."""
    return np.asarray(v, np.float64).astype(np.float32).view(np.uint32)


def exp2(y):
    """2^y for float64 y, |y| < 1000: 2^floor(y) * (2^(f/16))^16 with a Taylor series of degree 12."""
    y = np.asarray(y, np.float64)
    k = np.floor(y)
    z = (y - k) * (LN2 / 16.0)
    p = np.ones_like(z)
    for n in range(12, 0, -1):
        p = 1.0 + p * z / n
    for _ in range(4):
        p = p * p
    return np.ldexp(p, k.astype(np.int64))


def log2_near1(x):
    """log2(x) for x in [0.5, 2): 2 atanh(s) / ln 2, s = (x - 1) / (x + 1), 21 odd terms."""
    x = np.asarray(x, np.float64)
    s = (x - 1.0) / (x + 1.0)
    s2 = s * s
    acc = np.zeros_like(s)
    for k in range(20, -1, -1):
        acc = acc * s2 + 1.0 / (2 * k + 1)
    return 2.0 * s * acc / LN2


def _sin_series(a):
    a2 = a * a
    acc = np.zeros_like(a)
    for n in range(12, -1, -1):   # sum (-1)^n a^(2n+1) / (2n+1)!
        acc = acc * (-a2) / ((2 * n + 2) * (2 * n + 3)) + 1.0
    return a * acc


def _cos_series(a):
    a2 = a * a
    acc = np.zeros_like(a)
    for n in range(12, -1, -1):
        acc = acc * (-a2) / ((2 * n + 1) * (2 * n + 2)) + 1.0
    return acc


def sin_turns(u):
    """sin(2 pi u) for u in [0, 1/2): the first quarter by its sine series, the second by the cosine's."""
    u = np.asarray(u, np.float64)
    second = u >= 0.25
    a = np.where(second, u - 0.25, u) * TWO_PI
    return np.where(second, _cos_series(a), _sin_series(a))


def tanh(x):
    """tanh(x) for x >= 0 (float64): (1 - u) / (1 + u), u = 2^(-2x / ln 2)."""
    x = np.asarray(x, np.float64)
    u = exp2(-2.0 * x / LN2)
    return (1.0 - u) / (1.0 + u)
