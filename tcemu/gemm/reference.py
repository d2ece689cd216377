"""The reference engine of tcemu.matmul: one fdp call per chain step over the whole output, in exact arithmetic
(the tests' oracle); the integer kinds' exact chain; the f32 epilogue both engines share."""
import math
from fractions import Fraction

import numpy as np

from ..arith.fdp import decode_operand, fused_dot, grouped_dot
from ..arith.formats import decode_int, encode, get_format
from ..arith import rounding as R
from ..arith.rounding import IEEE, OVF_IEEE, RN, split_fraction
from ..blackwell.mma import _fold_scale
from .plan import _OUT, _STORE, _split_ranges


# ---- the epilogue

def _f32_add(x, y):
    """f32 addition, round to nearest even (FADD), elementwise on float64 arrays of f32 values."""
    with np.errstate(invalid="ignore", over="ignore"):  # inf + -inf is NaN, overflow is inf: as FADD
        return (x.astype(np.float32) + y.astype(np.float32)).astype(np.float64)


def _epilogue(acc, plan, alpha, fast=False):
    """Accumulator values (float64 holding f32/f16 values) -> the out_dtype array: alpha as one f32 multiply
    (round to nearest), then one rounding to out_dtype (nearest even), NaN as the canonical NaN. The reference
    engine converts with formats.encode; the fast one with numpy/ml_dtypes casts (IEEE round to nearest even
    from an exact f32), then canonical NaNs; tests hold the two to the same bits."""
    with np.errstate(invalid="ignore", over="ignore"):  # IEEE: inf * 0 is NaN, overflow is inf
        if alpha is not None:
            acc = (np.float32(alpha) * acc.astype(np.float32)).astype(np.float64)  # f32 multiply, RN
        return _convert(acc, plan.out_dtype, fast)


def _convert(acc, out, fast):
    if not fast:
        return encode(acc, out, "rne").view(_OUT[out])  # exact when out is the accumulator's type
    res = acc.astype(np.float32).astype(_OUT[out])
    nan = np.isnan(acc)
    if nan.any():
        res.view(_STORE[8 * res.itemsize])[nan] = get_format(out).nan_bits
    return res


# ---- integer kinds: exact, wrapping mod 2^32 (or .satfinite clamping every step's exact sum)

def _integer_chain(A, B, C, plan):
    M, K = A.shape
    acc = C.astype(np.int64) if C is not None else np.zeros((M, B.shape[1]), np.int64)
    step = plan.ks if plan.satfinite else max(plan.ks, 4096)
    for k0 in range(0, K, step):  # |partial| < 2^(14 + 12) per block: float64 matmul of integers is exact
        a = decode_int(A[:, k0:k0 + step], plan.dtype_a).astype(np.float64)
        b = decode_int(B[k0:k0 + step], plan.dtype_b).astype(np.float64)
        acc = acc + (a @ b).astype(np.int64)
        if plan.satfinite:
            acc = np.clip(acc, -(1 << 31), (1 << 31) - 1)
        else:
            acc = (acc + (1 << 31)) % (1 << 32) - (1 << 31)
    return acc.astype(np.int32)


# ---- reference engine: one fdp call per step over the whole output

def _reference_chain(A, B, C, plan, mxs, ps, alpha, report):
    M, K = A.shape
    N = B.shape[1]
    ks, unit = plan.ks, plan.unit
    steps = -(-K // ks)
    Ap = np.zeros((M, steps * ks), A.dtype)
    Ap[:, :K] = A
    Bp = np.zeros((steps * ks, N), B.dtype)
    Bp[:K] = B
    acc_np = _OUT[plan.dtype_d]
    partials = []
    for s0, s1 in _split_ranges(steps, plan):
        chain_c = C if (plan.split_k == 1 and not plan.promote) else None
        acc = None if chain_c is None else chain_c.astype(acc_np)
        main = C.copy() if (plan.promote and plan.split_k == 1 and C is not None) else np.zeros((M, N))
        for g, s in enumerate(range(s0, s1)):
            if acc is None and plan.init == "zero":
                acc = np.zeros((M, N), acc_np)
            Cd = decode_operand(acc.view(_STORE[8 * acc.itemsize]), plan.dtype_d) if acc is not None else None
            Ad = decode_operand(Ap[:, s * ks:(s + 1) * ks], plan.dtype_a)
            Bd = decode_operand(np.ascontiguousarray(Bp[s * ks:(s + 1) * ks].T), plan.dtype_b)
            if plan.kind in ("mxf4", "mxf4nvf4"):
                bs = plan.mx_block
                b0 = s * ks // bs
                nb = -(-ks // bs)
                SA = np.repeat(decode_operand(mxs[0][:, b0:b0 + nb], plan.scale_type), bs // 16, axis=1)
                SB = np.repeat(decode_operand(mxs[1][:, b0:b0 + nb], plan.scale_type), bs // 16, axis=1)
                bits = grouped_dot(Ad, Bd, Cd, SA, SB, unit, 16)
            else:
                if plan.mx_block:  # one ue8m0 scale per element block: fold 2^e into the elements
                    for lo in range(0, ks, plan.mx_block):
                        bidx = (s * ks + lo) // plan.mx_block
                        sl = slice(lo, lo + plan.mx_block)
                        Ad[:, sl] = _fold_scale(Ad[:, sl], mxs[0][:, bidx:bidx + 1])
                        Bd[:, sl] = _fold_scale(Bd[:, sl], mxs[1][:, bidx:bidx + 1])
                bits = fused_dot(Ad, Bd, Cd, unit)
            acc = bits.view(acc_np)
            report.add(M * N * (min((s + 1) * ks, K) - s * ks))
            if plan.promote and ((g + 1) % plan.promote == 0 or s == s1 - 1):
                if ps is None:
                    main = _f32_add(main, acc.astype(np.float64))
                else:
                    kb = s // plan.promote
                    sc = (ps[0][:, kb:kb + 1].astype(np.float32) * ps[1][kb][None, :].astype(np.float32))
                    main = _fma_f32_exact(sc.astype(np.float64), acc.astype(np.float64), main)
                acc = None
        partials.append(main if plan.promote else acc.astype(np.float64))
    if plan.split_k == 1:
        total = partials[0]
    else:
        total = C.copy() if C is not None else None
        for p in partials:
            total = p if total is None else _f32_add(total, p)
    return _epilogue(total, plan, alpha)


def _fma_f32_exact(s, t, m):
    """f32(s * t + m) rounded once to nearest even, elementwise, in exact rationals (the reference's FFMA)."""
    out = np.empty(np.broadcast(s, t, m).shape)
    for idx, (x, y, z) in enumerate(np.broadcast(s, t, m)):
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
            out.flat[idx] = float(np.float32(x * y + z))
            continue
        q = Fraction(x) * Fraction(y) + Fraction(z)
        if q == 0:
            out.flat[idx] = float(np.float32(x * y + z))  # exact zero: IEEE sign rule (x * y is exact)
            continue
        bits = R.round_pack(*split_fraction(q), 8, 23, 127, IEEE, 0, RN, False, OVF_IEEE)  # f32, RN
        out.flat[idx] = float(np.uint32(bits).view(np.float32))
    return out


