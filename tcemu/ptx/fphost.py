"""The host's own IEEE arithmetic where it gives a PTX form's bits (fparith calls it first, and the bit-level
kernel for the lanes it cannot answer): add / sub / mul .rn of f32 and f64, fma.rn.f32 through float64, and
cvt.rn.f16 / bf16 from f32. decisions.md ("PTX ALU arithmetic") gives the argument; tests/ptx/test_arith.py
compares both ways over special-heavy lanes."""
import ml_dtypes
import numpy as np

# add, sub and mul .rn of f32 and f64 are correctly rounded IEEE operations on both sides (x86 SSE / AVX without FTZ
# or DAZ, numpy's default); fma.rn.f32 is a * b exact in float64 (48 bits), one float64 addition, then float32: right
# unless the float64 sum is a float32 midpoint (double rounding). Lanes the host may get wrong go to the bit-level
# kernel: NaN results (the GPU's NaN rules), results at or below 2^-126 in magnitude where .ftz or the fma's float32
# grid decides, subnormal operands under .ftz, and the fma's midpoints. NATIVE: tests turn it off to compare.
NATIVE = True
_SUBNORMAL = np.array([2.0 ** -140], np.float32)
_ONE = np.array([1.0], np.float32)


def host_ieee() -> bool:
    """Whether numpy's float unit keeps subnormals, as IEEE does: a shared object built with -ffast-math sets the
    x86 FTZ / DAZ flags when it is loaded, and then the host would flush where the GPU does not (the bit-level
    kernel, integer arithmetic, is immune). Asked at every call: the flags can change at any time."""
    with np.errstate(all="ignore"):   # (bits compared: under DAZ a float comparison reads 2^-140 as 0 too)
        return bool((_SUBNORMAL * _ONE).view(np.uint32)[0] == _SUBNORMAL.view(np.uint32)[0])


HOST = {("add", "f32"): np.add, ("sub", "f32"): np.subtract, ("mul", "f32"): np.multiply, ("fma", "f32"): None,
        ("mad", "f32"): None, ("add", "f64"): np.add, ("sub", "f64"): np.subtract, ("mul", "f64"): np.multiply}
_TYPES = {"f32": (np.float32, np.uint32, 0x7FFFFF), "f64": (np.float64, np.uint64, 0xFFFFFFFFFFFFF)}
_F32_TINY = np.float64(2.0 ** -126)


def host_op(op, fmt, arrs, ftz):
    """(bits, lanes to redo bit by bit) of an add / sub / mul / fma .rn (HOST) on the host's float unit."""
    ft, ut, man = _TYPES[fmt]
    v = [a.astype(ut, copy=False).view(ft) for a in arrs]
    with np.errstate(all="ignore"):
        if op in ("fma", "mad"):
            s = v[0].astype(np.float64) * v[1] + v[2]   # the product exact, the sum rounded once
            r = s.astype(np.float32)
            mid = (s.view(np.uint64) & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000)
            redo = np.isnan(r) | (np.abs(s) < _F32_TINY) | mid
        else:
            r = HOST[(op, fmt)](v[0], v[1])
            redo = np.isnan(r)
            if ftz:
                redo |= np.abs(r) <= ft(2.0 ** -126 if fmt == "f32" else 2.0 ** -1022)
    if ftz:   # subnormal operands are flushed first
        for a in v:
            b = a.view(ut)
            redo |= ((b & ut(~man & ((1 << (8 * a.itemsize - 1)) - 1))) == 0) & ((b & ut(man)) != 0)
    return r.view(ut), redo


def narrowed(src, atype: str, dtype: str, plain: bool, soft):
    """cvt's bits from flat f32 patterns src on the host (narrow), its lanes to redo through soft(lanes) (the
    bit-level kernel's bits of src[lanes]); None where the host does not answer this form (narrows)."""
    if not narrows(atype, dtype, plain):
        return None
    out, redo = narrow(src, dtype)
    if redo.any():
        out[redo] = soft(redo)
    return out


def narrows(atype: str, dtype: str, plain: bool) -> bool:
    """Whether narrow() answers a cvt from atype to dtype (plain: .rn, no .ftz / .sat / .relu / .satfinite)."""
    return NATIVE and plain and atype == "f32" and dtype in ("f16", "bf16") and host_ieee()


def narrow(src, dtype):
    """(f32 patterns src (flat uint64) rounded to nearest even as f16 / bf16 by the host: numpy's and ml_dtypes'
    conversions, IEEE with subnormals and overflow to inf, as the GPU's F2F; the NaN lanes, whose payloads the GPU
    treats its own way, to redo)."""
    f = src.astype(np.uint32).view(np.float32)
    with np.errstate(all="ignore"):
        r = f.astype(np.float16 if dtype == "f16" else ml_dtypes.bfloat16).view(np.uint16)
    return r.astype(np.uint64), np.isnan(f)
