"""The fused dot-product unit: exact products, one alignment, truncation, one final rounding.

Model (MMA-Sim, arXiv 2511.10909; Khattak & Mikaitis, arXiv 2512.07004), checked bit for bit on an
H200 (traces/wgmma_numerics_sm90.npz):
  1. operands decode to (sign, integer significand, exponent); subnormals keep emin;
  2. products are exact; a product's alignment exponent is ea + eb, not renormalised;
  3. C joins the same sum, aligned by its own exponent;
  4. E = the largest alignment exponent, zero terms counting as `zero_exp`;
  5. every term is truncated toward zero to a multiple of 2^(E - F); the terms are summed exactly;
  6. the sum is rounded once to the output format.
NaN in, inf * 0 or +inf + -inf give the canonical NaN; otherwise an inf gives a signed inf; a nonzero sum
that rounds to zero gives +0 (H200 trace: 60 of 60 such outputs). Two rules are properties of the unit (FdpUnit):
  signed_zero        the sign of an exact zero sum. False (every unit tcemu models): +0 whatever the terms' signs,
                     measured on an H100 for dense and sparse wgmma of every float kind, even when every product
                     and C are -0 (traces/wgmma_zero_sign_sm90.npz, traces/wgmma_sp_numerics_sm90.npz). True: -0
                     when every term is -0 (IEEE 754's rule for sums), kept to replay traces against it.
  zero_c_when_absent what the unit adds when there is no C (wgmma scale-d = 0). True (Hopper): a +0 accumulator,
                     a zero term at zero_exp that takes part in the largest-exponent search (H100: it changes
                     truncation when every product lies below 2^zero_exp, traces/wgmma_zero_sign_sm90.npz).
                     False: no C term at all.

Decoded operands are int64 arrays (..., 5): class, sign, significand, lsb exponent, alignment exponent.
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from ..core.errors import LayoutError
from .dtypes import CONTAINER, NUMPY_TYPES, TYPE_TABLE
from .formats import FINITE, INF, NAN, ZERO, decode_float, format_args, get_format
from . import rounding as R
from .rounding import IEEE, OVF_INF, RNE, RZ, bitlen, round_pack_inline
from ..core.validate import MAX_ELEMENTS, as_array, as_bool, as_choice, as_int, as_int_array, as_uint_bits, show

CLS, SIGN, SIG, LSB, ALIGN = range(5)
__all__ = ["FdpUnit", "OUT_NUMPY", "RNE", "RZ", "accumulator_bits", "decode_operand", "fused_dot", "fused_dot_batch", "integer_dot_batch",
           "grouped_dot", "integer_dot", "round_to_float"]

OUT_NUMPY = {n: NUMPY_TYPES[n] for n in ("f32", "f16", "s32")}  # D's element types as numpy sees them
_RAW = {n: CONTAINER[TYPE_TABLE[n].bits] for n in OUT_NUMPY}


def accumulator_bits(c, shape, dtype_d: str) -> np.ndarray:
    """The raw bits of an accumulator `c` given as a numpy array of D's type and shape; LayoutError on `c`."""
    c = as_array(c, "c", LayoutError)
    want = OUT_NUMPY[as_choice(dtype_d, "dtype_d", tuple(OUT_NUMPY), LayoutError)]
    if c.shape != tuple(shape):
        raise LayoutError("c", f"must have shape {tuple(shape)}, got {c.shape}")
    if c.dtype != want:
        raise LayoutError("c", f"must be a {np.dtype(want).name} array for {dtype_d} accumulators, got {c.dtype}")
    return c.view(_RAW[dtype_d])


class FdpUnit(NamedTuple):
    """Design constants of one fused dot-product unit."""
    frac_bits: int         # F: bits kept below the largest alignment exponent
    out_format: str        # "f32" or "f16"
    keep_bits: int         # fraction bits kept in the result (23 f32, 13 f32 from fp8, 10 f16)
    rounding: int          # RZ or RNE, applied once to the sum
    zero_exp: int = -133   # alignment exponent of a zero term (product or C); -126 and MMA-Sim's
                           # "zero operand = -126" both fail traces/wgmma_numerics_sm90.npz
    signed_zero: bool = False         # an exact zero sum is -0 when every term is -0 (else always +0: H100)
    zero_c_when_absent: bool = False  # no C: add a +0 accumulator term (H100 wgmma scale-d 0) instead of none


@njit(cache=True)
def _decode_kernel(flat, exp_bits, man_bits, bias, special, signed, shift, negate, res):
    for i in range(flat.size):
        cls, sign, sig, exp = decode_float(flat[i], exp_bits, man_bits, bias, special, signed, shift)
        res[i, CLS] = cls
        res[i, SIGN] = sign ^ negate
        res[i, SIG] = sig
        res[i, LSB] = exp
        res[i, ALIGN] = exp + man_bits  # the implicit-bit position: emin for subnormals


def decode_operand(bits, fmt: str, negate: bool = False) -> np.ndarray:
    """(..., 5) int64 decoded view of raw bit patterns; `negate` flips every sign (imm-scale = -1)."""
    bits = as_uint_bits(bits, get_format(fmt).bits, "bits", LayoutError)
    negate = as_bool(negate, "negate", LayoutError)
    out = np.empty((bits.size, 5), np.int64)
    _decode_kernel(bits.ravel(), *format_args(fmt), int(negate), out)
    return out.reshape(bits.shape + (5,))


@njit(cache=True, inline="always")
def _shift(x, n):
    """x * 2^n truncated toward zero, for x >= 0."""
    if n >= 0:
        return x << n
    if n <= -63:
        return np.int64(0)
    return x >> (-n)


@njit(cache=True)
def round_to_float(mag, u, keep, out_man, emin, bias, emax_field, rounding):
    """(exponent field, mantissa) of mag * 2^u (mag > 0) rounded once (rounding.round_pack) to a float with `keep`
    fraction bits stored in `out_man` mantissa bits and exponents from emin = 1 - bias; overflow gives inf."""
    bits = R.round_pack(0, mag, u, False, bitlen(emax_field), keep, bias, IEEE, out_man - keep, rounding, False, OVF_INF)
    return np.int64(bits >> np.uint64(out_man)), np.int64(bits & np.uint64((1 << out_man) - 1))


@njit(cache=True, inline="always")
def _result_bits(S, u, keep, out_man, emin, bias, emax_field, rounding, sign_shift):
    """Bits of the nonzero exact sum S * 2^u rounded once; a sum that underflows to zero is +0."""
    bits = np.int64(round_pack_inline(0, abs(S), u, False, bitlen(emax_field), keep, bias, IEEE, out_man - keep,
                                      rounding, False, OVF_INF))
    return (np.int64(S < 0 and bits != 0) << sign_shift) | bits


@njit(cache=True)
def _fdp_general(A, B, C, m, n, c_present, F, zero_exp, keep, out_man, emin, bias, emax_field, rounding,
                 sign_shift, nan_bits, signed_zero):
    """One output, every rule: special values, the sign of an exact zero, underflow to +0."""
    K = A.shape[1]
    nan = False
    pinf = False
    ninf = False
    all_neg_zero = True
    E = np.int64(-(1 << 40))
    for k in range(K):
        ca, cb = A[m, k, CLS], B[n, k, CLS]
        s = A[m, k, SIGN] ^ B[n, k, SIGN]
        if ca == NAN or cb == NAN:
            nan = True
        elif ca == INF or cb == INF:
            if ca == ZERO or cb == ZERO:
                nan = True
            elif s:
                ninf = True
            else:
                pinf = True
        elif ca == ZERO or cb == ZERO:
            E = max(E, zero_exp)
            all_neg_zero = all_neg_zero and s == 1
        else:
            E = max(E, A[m, k, ALIGN] + B[n, k, ALIGN])
            all_neg_zero = False
    if c_present:
        cc = C[m, n, CLS]
        if cc == NAN:
            nan = True
        elif cc == INF:
            if C[m, n, SIGN]:
                ninf = True
            else:
                pinf = True
        elif cc == ZERO:
            E = max(E, zero_exp)
            all_neg_zero = all_neg_zero and C[m, n, SIGN] == 1
        else:
            E = max(E, C[m, n, ALIGN])
            all_neg_zero = False
    if nan or (pinf and ninf):
        return nan_bits
    if pinf or ninf:
        return (np.int64(ninf) << sign_shift) | (emax_field << out_man)
    u = E - F
    S = np.int64(0)
    for k in range(K):
        if A[m, k, CLS] == FINITE and B[n, k, CLS] == FINITE:
            t = _shift(A[m, k, SIG] * B[n, k, SIG], A[m, k, LSB] + B[n, k, LSB] - u)
            S += -t if A[m, k, SIGN] ^ B[n, k, SIGN] else t
    if c_present and C[m, n, CLS] == FINITE:
        t = _shift(C[m, n, SIG], C[m, n, LSB] - u)
        S += -t if C[m, n, SIGN] else t
    if S == 0:
        return np.int64(all_neg_zero and signed_zero) << sign_shift
    return _result_bits(S, u, keep, out_man, emin, bias, emax_field, rounding, sign_shift)


_NO_TERM = -(1 << 29)  # alignment of a zero element in the fast path: never the maximum


@njit(cache=True)
def _split(X):
    """Contiguous signed significands and alignment exponents (zero elements: _NO_TERM), per-row
    flags (any NaN/inf, any zero), and the operand's mantissa bits (alignment - lsb, one format)."""
    R, K = X.shape[0], X.shape[1]
    sig = np.empty((R, K), np.int32)  # significands < 2^24, exponents well inside int32
    align = np.empty((R, K), np.int32)
    special = np.zeros(R, np.bool_)
    zero = np.zeros(R, np.bool_)
    for r in range(R):
        for k in range(K):
            c = X[r, k, CLS]
            sig[r, k] = -X[r, k, SIG] if X[r, k, SIGN] else X[r, k, SIG]
            align[r, k] = X[r, k, ALIGN] if c == FINITE else _NO_TERM
            special[r] |= c == NAN or c == INF
            zero[r] |= c == ZERO
    return sig, align, special, zero, X[0, 0, ALIGN] - X[0, 0, LSB]


@njit(cache=True)
def _fdp_kernel(A, B, C, c_present, F, zero_exp, keep, out_man, emin, bias, emax_field, rounding,
                sign_shift, nan_bits, signed_zero, out):
    M, K = A.shape[0], A.shape[1]
    N = B.shape[0]
    a_sig, a_al, a_sp, a_z, a_man = _split(A)
    b_sig, b_al, b_sp, b_z, b_man = _split(B)
    man = a_man + b_man  # lsb of a product = its alignment exponent - man
    for n in range(N):  # A's split rows (M x K int32) stay in L1 while B streams
        for m in range(M):
            c_cls = C[m, n, CLS] if c_present else ZERO
            if a_sp[m] or b_sp[n] or c_cls == NAN or c_cls == INF:
                out[m, n] = _fdp_general(A, B, C, m, n, c_present, F, zero_exp, keep, out_man, emin, bias,
                                         emax_field, rounding, sign_shift, nan_bits, signed_zero)
                continue
            E = np.int64(zero_exp) if (a_z[m] or b_z[n] or (c_present and c_cls == ZERO)) else np.int64(_NO_TERM)
            for k in range(K):
                E = max(E, np.int64(a_al[m, k]) + b_al[n, k])
            if c_present and c_cls == FINITE:
                E = max(E, C[m, n, ALIGN])
            u = E - F
            S = np.int64(0)
            for k in range(K):  # every lsb <= E: truncate |p| * 2^(lsb - u) as (|p| << F) >> (E - lsb)
                p = np.int64(a_sig[m, k]) * b_sig[n, k]
                neg = p >> 63
                t = (((p ^ neg) - neg) << F) >> min(E + man - a_al[m, k] - b_al[n, k], 63)
                S += (t ^ neg) - neg
            if c_present and c_cls == FINITE:
                t = _shift(C[m, n, SIG], C[m, n, LSB] - u)
                S += -t if C[m, n, SIGN] else t
            if S == 0:  # +0, or (signed_zero) a sign that needs every term: the general path
                out[m, n] = 0 if not signed_zero else _fdp_general(A, B, C, m, n, c_present, F, zero_exp, keep,
                                                                   out_man, emin, bias, emax_field, rounding,
                                                                   sign_shift, nan_bits, signed_zero)
                continue
            out[m, n] = _result_bits(S, u, keep, out_man, emin, bias, emax_field, rounding, sign_shift)


def fused_dot(A, B, C, unit: FdpUnit) -> np.ndarray:
    """D[m, n] = the unit's fused sum of A[m, k] * B[n, k] over k and C[m, n]; C None: the unit's own rule
    (zero_c_when_absent: a +0 accumulator, else no C term).

    A (M, K, 5), B (N, K, 5), C (M, N, 5) decoded operands; returns raw output bits (uint32 / uint16).
    """
    A, B, C = _decoded_operands(A, B, C, unit)
    out = np.empty((A.shape[0], B.shape[0]), np.int64)
    _fdp_kernel(A, B, *_accumulator_args(C, unit, out.shape), *_unit_args(unit), out)
    return out.astype(np.uint32 if get_format(unit.out_format).bits == 32 else np.uint16)


@njit(cache=True)
def _fdp_batch_kernel(A, B, C, a_of, b_of, c_present, F, zero_exp, keep, out_man, emin, bias, emax_field, rounding,
                      sign_shift, nan_bits, signed_zero, out):
    for g in range(out.shape[0]):   # product g: the kernel of one fused_dot, on A[a_of[g]], B[b_of[g]], C[g]
        _fdp_kernel(A[a_of[g]], B[b_of[g]], C[g if C.shape[0] > 1 else 0], c_present, F, zero_exp, keep, out_man,
                    emin, bias, emax_field, rounding, sign_shift, nan_bits, signed_zero, out[g])


def fused_dot_batch(A, B, C, unit: FdpUnit, a_of=None, b_of=None) -> np.ndarray:
    """G fused_dot products in one call: D[g] = fused_dot(A[a_of[g]], B[b_of[g]], C[g], unit), bit for bit.

    A (GA, M, K, 5) and B (GB, N, K, 5) decoded operands, shared between products through the index arrays a_of,
    b_of (G,) (None: the identity); C (G, M, N, 5) decoded accumulators or None (the unit's rule for every product:
    a unit with zero_c_when_absent takes an all-zero decoded row, a +0 accumulator, where a product has none).
    Returns (G, M, N) raw output bits."""
    if not isinstance(A, np.ndarray) or A.ndim != 4 or not isinstance(B, np.ndarray) or B.ndim != 4:
        raise LayoutError("A, B", f"must be stacks of decoded operands (G, rows, K, 5), got {show(A)}, {show(B)}")
    G = len(a_of) if a_of is not None else (C.shape[0] if C is not None else A.shape[0])
    a_of = _batch_index(a_of, G, A.shape[0], "a_of")
    b_of = _batch_index(b_of, G, B.shape[0], "b_of")
    if min(A.shape[0], B.shape[0]) == 0:
        raise LayoutError("A, B", "must hold at least one operand each")
    _decoded_operands(A[0], B[0], None, unit)   # type, K and size rules of one product (every product alike)
    if C is not None:
        C = _decoded(C, "C", (G, A.shape[1], B.shape[1], 5))
        c_present = True
    else:
        C, c_present = _accumulator_args(None, unit, (A.shape[1], B.shape[1]))
        C = C[None]
    out = np.empty((G, A.shape[1], B.shape[1]), np.int64)
    _fdp_batch_kernel(np.ascontiguousarray(A), np.ascontiguousarray(B), np.ascontiguousarray(C), a_of, b_of,
                      c_present, *_unit_args(unit), out)
    return out.astype(np.uint32 if get_format(unit.out_format).bits == 32 else np.uint16)


def _batch_index(idx, G, size, field):
    if idx is None:
        if size != G:
            raise LayoutError(field, f"{size} operands for {G} products: give the index array")
        return np.arange(G, dtype=np.int64)
    idx = as_int_array(idx, field, 0, size - 1, LayoutError, ndim=1).astype(np.int64)
    if idx.size != G:
        raise LayoutError(field, f"must have {G} entries, got {idx.size}")
    return np.ascontiguousarray(idx)


def _decoded(X, field, shape):
    """A decoded operand: an int64 array of `shape` (None: any extent) whose last axis holds the 5 fields. The
    kernels index it without bounds checks, so every extent is checked here."""
    if not isinstance(X, np.ndarray) or X.dtype != np.int64 or X.ndim != len(shape) or \
            any(want is not None and have != want for have, want in zip(X.shape, shape)):
        want = tuple("." if w is None else w for w in shape)
        raise LayoutError(field, f"must be a decoded operand (decode_operand): int64 of shape {want}, got {show(X)}")
    return np.ascontiguousarray(X)


def _decoded_operands(A, B, C, unit):
    if not isinstance(unit, FdpUnit) or unit.out_format not in ("f32", "f16"):
        raise LayoutError("unit", f"must be an FdpUnit with out_format f32 or f16, got {show(unit)}")
    A = _decoded(A, "A", (None, None, 5))
    B = _decoded(B, "B", (None, A.shape[1], 5))
    C = None if C is None else _decoded(C, "C", (A.shape[0], B.shape[0], 5))
    if A.size * B.shape[0] > MAX_ELEMENTS * 256:
        raise LayoutError("A, B", f"{A.shape[0]} x {B.shape[0]} x {A.shape[1]} products exceed the limit")
    return A, B, C


def _accumulator_args(C, unit: FdpUnit, shape):
    """(C, present) for the kernels: without C, a decoded +0 accumulator (class ZERO, sign 0: all-zero rows)
    when the unit adds one, else a dummy (numba wants an array) and present = False."""
    if C is not None:
        return C, True
    if unit.zero_c_when_absent:
        return np.zeros(tuple(shape) + (5,), np.int64), True
    return np.zeros((1, 1, 5), np.int64), False


def _unit_args(unit: FdpUnit) -> tuple:
    """The unit's constants in the kernels' order: F, zero exponent, kept bits, then the output format's
    mantissa bits, emin, bias, all-ones exponent field, rounding, sign position and canonical NaN, and the
    unit's zero-sign rule."""
    fmt = get_format(unit.out_format)
    return (unit.frac_bits, unit.zero_exp, unit.keep_bits, fmt.man_bits, 1 - fmt.bias, fmt.bias,
            (1 << fmt.exp_bits) - 1, unit.rounding, fmt.bits - 1, (1 << (fmt.bits - 1)) - 1,  # NaN: 0x7fffffff
            bool(unit.signed_zero))


@njit(cache=True)
def _grouped_kernel(P, A, B, C, c_present, SA, SB, unit_exp, F, zero_exp, keep, out_man, emin, bias, emax_field,
                    rounding, sign_shift, nan_bits, signed_zero, out):
    M, N, G = P.shape
    for m in range(M):
        for n in range(N):
            nan = False
            for g in range(G):
                nan |= SA[m, g, CLS] == NAN or SB[n, g, CLS] == NAN
            if c_present:
                nan |= C[m, n, CLS] == NAN
            if nan:
                out[m, n] = nan_bits
                continue
            if c_present and C[m, n, CLS] == INF:
                out[m, n] = (C[m, n, SIGN] << sign_shift) | (emax_field << out_man)
                continue
            E = np.int64(-(1 << 40))
            if c_present:
                E = C[m, n, ALIGN] if C[m, n, CLS] == FINITE else np.int64(zero_exp)
            for g in range(G):  # a group counts at its scales' exponents, whatever its sum
                finite = SA[m, g, CLS] == FINITE and SB[n, g, CLS] == FINITE
                E = max(E, SA[m, g, ALIGN] + SB[n, g, ALIGN] if finite else zero_exp)
            u = E - F
            S = np.int64(0)
            for g in range(G):
                if P[m, n, g] != 0 and SA[m, g, CLS] == FINITE and SB[n, g, CLS] == FINITE:
                    t = _shift(abs(P[m, n, g]) * SA[m, g, SIG] * SB[n, g, SIG],
                               unit_exp + SA[m, g, LSB] + SB[n, g, LSB] - u)
                    S += -t if P[m, n, g] < 0 else t
            if c_present and C[m, n, CLS] == FINITE:
                t = _shift(C[m, n, SIG], C[m, n, LSB] - u)
                S += -t if C[m, n, SIGN] else t
            if S != 0:
                out[m, n] = _result_bits(S, u, keep, out_man, emin, bias, emax_field, rounding, sign_shift)
                continue
            neg = signed_zero and (not c_present or (C[m, n, CLS] == ZERO and C[m, n, SIGN] == 1))  # every term -0
            for k in range(A.shape[1]):
                neg = neg and (A[m, k, CLS] == ZERO or B[n, k, CLS] == ZERO) and (A[m, k, SIGN] ^ B[n, k, SIGN]) == 1
            out[m, n] = np.int64(neg) << sign_shift


def grouped_dot(A, B, C, SA, SB, unit: FdpUnit, group: int = 16) -> np.ndarray:
    """D[m, n] of the grouped block-scaled unit (tcgen05 kind::mxf4 / mxf4nvf4, MMA-Sim's model):
    each group of `group` products is summed exactly, scaled by SA[m, g] * SB[n, g], and joins one fused
    sum (with C) aligned at the scales' exponents, not at the group's own magnitude.

    A (M, K, 5), B (N, K, 5) decoded elements of a format with no inf/NaN (e2m1); SA (M, K/group, 5),
    SB (N, K/group, 5) decoded scales; C (M, N, 5) or None. Returns raw f32 bits (uint32)."""
    A, B, C = _decoded_operands(A, B, C, unit)
    group = as_int(group, "group", 1, max(A.shape[1], 1), LayoutError)
    if A.shape[1] % group:
        raise LayoutError("group", f"{group} does not divide K = {A.shape[1]}")
    SA = _decoded(SA, "SA", (A.shape[0], A.shape[1] // group, 5))
    SB = _decoded(SB, "SB", (B.shape[0], A.shape[1] // group, 5))
    lsb_a, lsb_b = int(A[..., LSB].min(initial=0)), int(B[..., LSB].min(initial=0))

    def fixed(X, lsb):  # signed significands on one grid: small integers (e2m1: |x| * 2 <= 12)
        v = np.where(X[..., CLS] == FINITE, X[..., SIG] << (X[..., LSB] - lsb), 0)
        return np.where(X[..., SIGN] == 1, -v, v)

    a, b = fixed(A, lsb_a), fixed(B, lsb_b)
    if np.abs(a).max(initial=0) * np.abs(b).max(initial=0) * group >= 2 ** 53:
        raise LayoutError("dtype", "grouped_dot takes narrow elements (e2m1): these significands are too wide "
                                   "for an exact group sum")
    a, b = a.astype(np.float64), b.astype(np.float64)
    G = A.shape[1] // group
    P = np.empty((A.shape[0], B.shape[0], G), np.int64)
    for g in range(G):  # float64 matmul of small integers is exact (|sum| < 2^53, checked above) and fast
        span = slice(g * group, (g + 1) * group)
        P[:, :, g] = a[:, span] @ b[:, span].T
    out = np.empty((A.shape[0], B.shape[0]), np.int64)
    _grouped_kernel(P, A, B, *_accumulator_args(C, unit, out.shape), SA, SB, lsb_a + lsb_b, *_unit_args(unit), out)
    return out.astype(np.uint32)


@njit(cache=True)
def _int_kernel(A, B, C, c_present, satfinite, popc, out):
    M, K = A.shape
    N = B.shape[0]
    for m in range(M):
        for n in range(N):
            s = C[m, n] if c_present else np.int64(0)
            for k in range(K):
                if popc:
                    x = A[m, k] & B[n, k]
                    while x:  # popcount of one 8-bit chunk
                        s += x & 1
                        x >>= 1
                else:
                    s += A[m, k] * B[n, k]
            if satfinite:
                s = min(max(s, -(1 << 31)), (1 << 31) - 1)
            out[m, n] = s


@njit(cache=True)
def _int_batch_kernel(A, B, C, a_of, b_of, c_present, satfinite, popc, out):
    for g in range(out.shape[0]):   # product g: the kernel of one integer_dot, on A[a_of[g]], B[b_of[g]], C[g]
        _int_kernel(A[a_of[g]], B[b_of[g]], C[g if C.shape[0] > 1 else 0], c_present, satfinite, popc, out[g])


def integer_dot(A, B, C, *, satfinite=False, popc=False) -> np.ndarray:
    """int32 D = C + sum(A * B) (popc: C + popcount(A AND B) over byte chunks), exact, wrapping mod 2^32
    unless `satfinite` clamps the exact sum to the s32 range. A (M, K), B (N, K), C (M, N) int arrays of
    32-bit values (signed or unsigned)."""
    satfinite, popc = as_bool(satfinite, "satfinite", LayoutError), as_bool(popc, "popc", LayoutError)
    lo = 0 if popc else -(1 << 31)  # popc counts the bits of A AND B: non-negative chunks (a negative never ends)
    A = as_int_array(A, "A", lo, (1 << 32) - 1, LayoutError, ndim=2)
    B = as_int_array(B, "B", lo, (1 << 32) - 1, LayoutError, ndim=2)
    if B.shape[1] != A.shape[1]:
        raise LayoutError("B", f"must have K = {A.shape[1]} columns like A, got shape {B.shape}")
    c = np.zeros((1, 1), np.int64) if C is None else \
        as_int_array(C, "C", -(1 << 31), (1 << 32) - 1, LayoutError, shape=(A.shape[0], B.shape[0]))
    out = np.empty((A.shape[0], B.shape[0]), np.int64)
    _int_kernel(np.ascontiguousarray(A), np.ascontiguousarray(B), np.ascontiguousarray(c), C is not None, satfinite,
                popc, out)
    return out.astype(np.uint32).view(np.int32)  # wrap mod 2^32


def integer_dot_batch(A, B, C, *, a_of=None, b_of=None, satfinite=False) -> np.ndarray:
    """G integer_dot products in one call: D[g] = integer_dot(A[a_of[g]], B[b_of[g]], C[g]), bit for bit.

    A (GA, M, K) and B (GB, N, K) int arrays of 32-bit values, shared between products through the index arrays
    a_of, b_of (G,) (None: the identity); C (G, M, N) or None. Returns (G, M, N) int32."""
    satfinite = as_bool(satfinite, "satfinite", LayoutError)
    A = as_int_array(A, "A", -(1 << 31), (1 << 32) - 1, LayoutError, ndim=3)
    B = as_int_array(B, "B", -(1 << 31), (1 << 32) - 1, LayoutError, ndim=3)
    if B.shape[2] != A.shape[2]:
        raise LayoutError("B", f"must have K = {A.shape[2]} columns like A, got shape {B.shape}")
    if min(A.shape[0], B.shape[0]) == 0:
        raise LayoutError("A, B", "must hold at least one operand each")
    G = len(a_of) if a_of is not None else (len(C) if C is not None else A.shape[0])
    a_of = _batch_index(a_of, G, A.shape[0], "a_of")
    b_of = _batch_index(b_of, G, B.shape[0], "b_of")
    c = np.zeros((1, 1, 1), np.int64) if C is None else \
        as_int_array(C, "C", -(1 << 31), (1 << 32) - 1, LayoutError, shape=(G, A.shape[1], B.shape[1]))
    out = np.empty((G, A.shape[1], B.shape[1]), np.int64)
    _int_batch_kernel(np.ascontiguousarray(A), np.ascontiguousarray(B), np.ascontiguousarray(c), a_of, b_of,
                      C is not None, satfinite, False, out)
    return out.astype(np.uint32).view(np.int32)  # wrap mod 2^32
