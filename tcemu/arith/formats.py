"""Number formats of tensor-core operands: exact decoding of bit patterns and single-rounding encoding.

Floats are described by FloatFormat (PTX ISA 5.2.5 "Alternate floating-point data formats", OCP MX v1.0
5.3-5.4). `decode_float` is the numba scalar the dot-product engine calls inside its loops; `decode`,
`encode`, `to_bits`, `from_bits` and `decode_int` are the vectorised, validating entry points.
"""
import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np
from numba import njit

from .dtypes import NUMPY_TYPES as ELEMENT_NUMPY_TYPES, TYPE_TABLE
from . import rounding as R
from .rounding import (E8M0, FN, IEEE, NONE, OVF_IEEE, OVF_SATURATE, RNA, RNE, RZ, nan_bits, pack_inf, pack_max,
                       pack_zero, split_float64)
from ..core.errors import LayoutError
from ..core.validate import show

# FloatFormat.special (IEEE, FN, NONE, E8M0) and the encode() rounding modes (RNE, RZ, RNA) are the rounding
# core's codes (rounding.py).
ROUNDING_MODES = {"rne": RNE, "rn": RNE, "rz": RZ, "rna": RNA}

# decode_float classes.
ZERO, FINITE, INF, NAN = 0, 1, 2, 3


class FormatError(LayoutError):
    """A number-format name, bit pattern, value array or rounding mode that tcemu cannot use."""


@dataclass(frozen=True)
class FloatFormat:
    name: str
    exp_bits: int
    man_bits: int
    bias: int
    signed: bool
    special: int  # IEEE, FN, NONE or E8M0
    bits: int     # storage width of one element (the container)
    shift: int = 0  # low container bits the hardware ignores (tf32: 13; format bits = container >> 13)

    @property
    def field_bits(self) -> int:
        """Bits the format itself uses: sign (if signed) + exponent + mantissa."""
        return int(self.signed) + self.exp_bits + self.man_bits

    @property
    def emin(self) -> int:
        """Unbiased exponent of the smallest normal, 1 - bias (subnormals share it, with no implicit bit).
        E8M0 has no subnormals: its smallest value is 2^-bias = 2^(emin - 1)."""
        return 1 - self.bias

    @property
    def max_finite(self) -> float:
        e, m = self.exp_bits, self.man_bits
        top = (1 << e) - 1  # all-ones exponent field
        if self.special == E8M0:
            return math.ldexp(1.0, top - 1 - self.bias)
        if self.special == IEEE:
            return math.ldexp((1 << (m + 1)) - 1, top - 1 - self.bias - m)
        if self.special == FN:  # all-ones mantissa at the top exponent is NaN
            return math.ldexp((1 << (m + 1)) - 2, top - self.bias - m)
        return math.ldexp((1 << (m + 1)) - 1, top - self.bias - m)

    @property
    def nan_bits(self):
        """The canonical NaN container pattern (positive, all-ones exponent and mantissa, as NVIDIA's
        canonical 0x7fffffff / 0x7fff), or None for formats without NaN."""
        if self.special == NONE:
            return None
        return ((1 << (self.exp_bits + self.man_bits)) - 1) << self.shift

    @property
    def storage_dtype(self):
        """The unsigned numpy type holding one container."""
        return np.uint8 if self.bits <= 8 else np.uint16 if self.bits <= 16 else np.uint32


def _float(name, exp_bits, man_bits, bias, signed, special, shift=0):
    return FloatFormat(name, exp_bits, man_bits, bias, signed, special, TYPE_TABLE[name].bits, shift)


_FORMATS = [
    _float("f32", 8, 23, 127, True, IEEE),
    _float("tf32", 8, 10, 127, True, IEEE, shift=13),  # f32 container, low 13 bits ignored
    _float("f16", 5, 10, 15, True, IEEE),
    _float("bf16", 8, 7, 127, True, IEEE),
    _float("e4m3", 4, 3, 7, True, FN),
    _float("e5m2", 5, 2, 15, True, IEEE),
    _float("e2m3", 2, 3, 1, True, NONE),
    _float("e3m2", 3, 2, 3, True, NONE),
    _float("e2m1", 2, 1, 1, True, NONE),
    _float("ue8m0", 8, 0, 127, False, E8M0),
    _float("ue4m3", 4, 3, 7, False, FN),  # block scale: e4m3 in a byte whose sign bit is ignored
]
FLOAT_FORMATS = {f.name: f for f in _FORMATS}

# numpy / ml_dtypes types with the same encoding (ue4m3 has none).
NUMPY_TYPES = {name: t for name, t in ELEMENT_NUMPY_TYPES.items() if name in FLOAT_FORMATS}

INT_FORMATS = {n: (TYPE_TABLE[n].bits, TYPE_TABLE[n].kind == "s") for n in ("s8", "u8", "s32", "b1")}  # (bits, signed)


def get_format(name) -> FloatFormat:
    """The FloatFormat called `name` (PTX spelling, a leading dot allowed), or `name` if it is one."""
    if isinstance(name, FloatFormat):
        return name
    if isinstance(name, str) and name.lstrip(".") in FLOAT_FORMATS:
        return FLOAT_FORMATS[name.lstrip(".")]
    raise FormatError("dtype", f"{show(name)} is not a float format; expected one of {', '.join(FLOAT_FORMATS)}")


def format_args(fmt) -> tuple:
    """(exp_bits, man_bits, bias, special, signed, shift) as ints, to splat into decode_float."""
    f = get_format(fmt)
    return (f.exp_bits, f.man_bits, f.bias, f.special, int(f.signed), f.shift)


@njit(cache=True, inline="always")
def decode_float(bits, exp_bits, man_bits, bias, special, signed, shift):
    """-> (cls, sign, sig, exp): cls 0 zero, 1 finite nonzero, 2 inf, 3 NaN;
    value = (-1)**sign * sig * 2**exp, sig an integer including the implicit bit for normals,
    exp the exponent of sig's least significant bit (subnormals: exponent emin, no implicit bit).
    Zero: sig 0 (sign kept); inf/NaN: sig = exp = 0; E8M0: sig 1, exp field - bias."""
    raw = np.int64(bits) >> shift
    emask = (np.int64(1) << exp_bits) - 1
    mmask = (np.int64(1) << man_bits) - 1
    field = (raw >> man_bits) & emask
    man = raw & mmask
    sign = np.int64(0)
    if signed:
        sign = (raw >> (exp_bits + man_bits)) & 1  # bits above the sign (ue4m3's byte top bit) are ignored
    cls = np.int64(FINITE)
    sig = np.int64(0)
    exp = np.int64(0)
    if special == E8M0:
        if field == emask:
            cls = np.int64(NAN)
        else:
            sig = np.int64(1)
            exp = field - bias
    elif field == emask and special == IEEE:
        cls = np.int64(INF) if man == 0 else np.int64(NAN)
    elif field == emask and special == FN and man == mmask:
        cls = np.int64(NAN)
    elif field == 0:  # zero or subnormal: exponent emin, no implicit bit
        sig = man
        exp = np.int64(1 - bias - man_bits)
        if man == 0:
            cls = np.int64(ZERO)
    else:
        sig = man | (mmask + 1)
        exp = field - bias - man_bits
    return cls, sign, sig, exp


@njit(cache=True)
def encode_float(x, exp_bits, man_bits, bias, special, signed, shift, rounding, saturate):
    """The container pattern (int64) of float64 `x` rounded once to the format (see encode())."""
    if x != x:  # canonical NaN; all ones is +max finite where there is no NaN (CUDA cuda_fp6.hpp __nv_cvt_double_to_fp6)
        return np.int64(nan_bits(exp_bits, man_bits, shift))
    sign = np.int64(1) if signed and math.copysign(1.0, x) < 0.0 else np.int64(0)
    a = abs(x)  # unsigned formats encode |x|, as CUDA's ue8m0 conversions do
    if a == math.inf:
        if saturate:
            return np.int64(pack_max(sign, exp_bits, man_bits, special, shift))
        return np.int64(pack_inf(sign, exp_bits, man_bits, special, shift))
    if a == 0.0:  # E8M0 has no zero: pattern 0 is its smallest value 2^-127 (CUDA rz)
        return np.int64(pack_zero(sign, exp_bits, man_bits, shift))
    sig, exp = split_float64(a)
    return np.int64(R.round_pack(sign, sig, exp, False, exp_bits, man_bits, bias, special, shift, rounding, False,
                               OVF_SATURATE if saturate else OVF_IEEE))


@njit(cache=True)
def _decode_kernel(bits, exp_bits, man_bits, bias, special, signed, shift, out):
    for i in range(bits.size):
        cls, sign, sig, exp = decode_float(bits[i], exp_bits, man_bits, bias, special, signed, shift)
        if cls == NAN:
            out[i] = np.nan
            continue
        v = math.inf if cls == INF else math.ldexp(float(sig), exp)
        out[i] = -v if sign else v


@njit(cache=True)
def _encode_kernel(values, exp_bits, man_bits, bias, special, signed, shift, rounding, saturate, out):
    for i in range(values.size):
        out[i] = encode_float(values[i], exp_bits, man_bits, bias, special, signed, shift, rounding, saturate)


def _as_array(obj, field):
    try:
        return np.asarray(obj)
    except (TypeError, ValueError, OverflowError) as exc:  # ragged lists, odd objects
        raise FormatError(field, f"cannot be read as an array ({exc})") from None


def _as_bits(bits, width: int, field: str = "bits") -> np.ndarray:
    """int64 array of patterns, each checked to lie in [0, 2^width)."""
    arr = _as_array(bits, field)
    limit = 1 << width
    if arr.dtype.kind == "O":
        flat = arr.ravel().tolist()
        if not all(isinstance(v, (int, np.integer)) for v in flat):
            raise FormatError(field, "expected integer bit patterns")
        bad = [v for v in flat if not 0 <= v < limit]
        if bad:
            raise FormatError(field, f"pattern {show(bad[0])} is outside [0, 2^{width})")
        return np.array([int(v) for v in flat], dtype=np.int64).reshape(arr.shape)
    if arr.dtype.kind == "f" and arr.size == 0:  # np.asarray([]) is float64
        return arr.astype(np.int64)
    if arr.dtype.kind not in "biu":
        raise FormatError(field, f"expected integer bit patterns, got {arr.dtype}")
    if arr.size and arr.dtype.kind != "b":
        lo, hi = arr.min(), arr.max()
        if lo < 0 or hi >= limit:
            raise FormatError(field, f"pattern {show(int(lo if lo < 0 else hi))} is outside [0, 2^{width})")
    return arr.astype(np.int64)


def _as_values(values) -> np.ndarray:
    """float64 array holding `values` exactly (so that encode rounds once)."""
    arr = _as_array(values, "values")
    kind = arr.dtype.kind
    if kind == "O":
        flat = arr.ravel().tolist()
        if not all(isinstance(v, (int, float, np.integer, np.floating)) for v in flat):
            raise FormatError("values", "expected real numbers")
        try:
            conv = np.array([float(v) for v in flat], dtype=np.float64)
        except OverflowError:
            raise FormatError("values", "an integer is too large for float64") from None
        if any(not isinstance(v, (float, np.floating)) and int(v) != c for v, c in zip(flat, conv.tolist())):
            raise FormatError("values", "an integer is not exactly a float64; round it first")
        return conv.reshape(arr.shape)
    if kind == "b":
        return arr.astype(np.float64)
    if kind in "iu":
        conv = arr.astype(np.float64)
        big = np.abs(conv) >= 2.0**53  # only there can int -> float64 round
        if big.any() and any(int(v) != int(c) for v, c in zip(arr[big].tolist(), conv[big].tolist())):
            raise FormatError("values", "an integer is not exactly a float64; round it first")
        return conv
    if kind == "f":
        if arr.dtype.itemsize <= 8:
            return arr.astype(np.float64)
        conv = arr.astype(np.float64)
        with np.errstate(invalid="ignore"):
            if not np.array_equal(conv.astype(arr.dtype), arr, equal_nan=True):
                raise FormatError("values", f"{arr.dtype} values are not exactly float64; round them first")
        return conv
    if kind == "V" and _is_ml_float(arr.dtype):  # bfloat16, float8_*: exactly float64
        return arr.astype(np.float64)
    raise FormatError("values", f"expected real numbers, got {arr.dtype}")


def _is_ml_float(dtype) -> bool:
    try:
        ml_dtypes.finfo(dtype)
    except (TypeError, ValueError):
        return False
    return True


def _rounding_code(rounding) -> int:
    if isinstance(rounding, str) and rounding.lstrip(".").lower() in ROUNDING_MODES:
        return ROUNDING_MODES[rounding.lstrip(".").lower()]
    raise FormatError("rounding", f"{show(rounding)} is not a rounding mode; expected 'rne', 'rz' or 'rna'")


def decode(bits, fmt_name) -> np.ndarray:
    """Exact float64 values of the bit patterns (container patterns: tf32's low 13 bits are ignored,
    ue4m3's sign bit is ignored). NaN, +-inf and -0.0 come out as numpy's."""
    fmt = get_format(fmt_name)
    arr = _as_bits(bits, fmt.bits)
    out = np.empty(arr.shape, dtype=np.float64)
    _decode_kernel(np.ascontiguousarray(arr).reshape(-1), *format_args(fmt), out.reshape(-1))
    return out


def encode(values, fmt_name, rounding="rne", saturate=False) -> np.ndarray:
    """Container patterns (uint of the storage width) of `values` rounded once to the format.

    rounding: 'rne' (nearest even), 'rz' (toward zero) or 'rna' (nearest, ties away). Overflow:
    inf where the format has one, NaN for FN formats and ue8m0, max finite for e2m3/e3m2/e2m1; rz
    overflows to max finite (IEEE 754). saturate=True clamps every overflow and inf to +-max finite.
    NaN gives the canonical NaN (nan_bits), or +max finite where there is no NaN. Unsigned formats
    encode |x|; ue8m0 has no zero, so 0 and values below 2^-127 give 2^-127 (pattern 0)."""
    fmt = get_format(fmt_name)
    mode = _rounding_code(rounding)
    if not isinstance(saturate, (bool, np.bool_)):
        raise FormatError("saturate", f"{show(saturate)} is not a bool")
    arr = _as_values(values)
    out = np.empty(arr.shape, dtype=np.int64)
    _encode_kernel(np.ascontiguousarray(arr).reshape(-1), *format_args(fmt), mode, int(saturate),
                   out.reshape(-1))
    return out.astype(fmt.storage_dtype)


def to_bits(array, fmt_name) -> np.ndarray:
    """Raw container bits of an array of the format's numpy type (a view-copy: tf32 takes a float32
    array's bits as they are); arrays of other real types are encoded with encode(..., 'rne')."""
    fmt = get_format(fmt_name)
    arr = _as_array(array, "values")
    ntype = NUMPY_TYPES.get(fmt.name)
    if ntype is not None and arr.dtype == np.dtype(ntype):
        return np.array(arr.view(fmt.storage_dtype), copy=True)
    return encode(arr, fmt)


def from_bits(bits, fmt_name) -> np.ndarray:
    """The array of the format's numpy type holding these patterns (tf32: float32 with the ignored low
    13 bits cleared, so its values equal decode's)."""
    fmt = get_format(fmt_name)
    ntype = NUMPY_TYPES.get(fmt.name)
    if ntype is None:
        raise FormatError("dtype", f"{fmt.name} has no numpy type; use decode()")
    arr = _as_bits(bits, fmt.bits)
    if fmt.shift:
        arr = arr & ~((1 << fmt.shift) - 1)
    return arr.astype(fmt.storage_dtype).view(ntype)


def decode_int(bits, name) -> np.ndarray:
    """int64 values of s8, u8, s32 (two's complement from the storage width) or b1 (0/1) patterns."""
    key = name.lstrip(".") if isinstance(name, str) else None
    if key not in INT_FORMATS:
        raise FormatError("dtype", f"{show(name)} is not an integer type; expected one of {', '.join(INT_FORMATS)}")
    width, signed = INT_FORMATS[key]
    arr = _as_bits(bits, width)
    if signed:
        arr = np.where(arr >= 1 << (width - 1), arr - (1 << width), arr)
    return arr
