"""The approximate PTX forms as the SASS ptxas 13.0 emits for sm_90a: a MUFU core (tcemu.sfu.mufu) wrapped in
the scaling, FMUL and special-value steps around it. Read from `cuobjdump -sass` of scripts/capture_sfu.cu's
probe kernels; every f32 and 16-bit form is proven over all inputs on the GPU (scripts/prove_sfu.cu,
traces/sfu_proof_sm90.npz), the f64 forms over 2^32 inputs.

    approx(op, ftype, operands, rounding, ftz) -> bits     op: rcp sqrt rsqrt ex2 lg2 sin cos tanh div
    LEGAL: the (op, rounding, ftz, type) combinations ptxas 13.0 accepts for sm_90a

Scaling constants (SASS): 2^24 for subnormal inputs (FSETP.GEU |x|, 2^-126: NaN counts as normal) and 1/4 for
|b| > 2^126 in div.full; FMULs round to nearest without .FTZ unless the PTX form has .ftz.
"""
import numpy as np

from ..sfu import fast, mufu
from . import _fpcore as core
from .errors import PtxError

F32 = (8, 23, 127, core.IEEE, 0)
F64 = (11, 52, 1023, core.IEEE, 0)
TINY32, HUGE32 = 0x00800000, 0x7E800000   # 2^-126 and 2^126 as f32 magnitudes

# (op, rounding, ftz, type) legal for sm_90a (ptxas 13.0; .approx is required where listed)
LEGAL = {
    ("rcp", "approx", False, "f32"), ("rcp", "approx", True, "f32"), ("rcp", "approx", True, "f64"),
    ("sqrt", "approx", False, "f32"), ("sqrt", "approx", True, "f32"),
    ("rsqrt", "approx", False, "f32"), ("rsqrt", "approx", True, "f32"),
    ("rsqrt", "approx", False, "f64"), ("rsqrt", "approx", True, "f64"),
    ("ex2", "approx", False, "f32"), ("ex2", "approx", True, "f32"),
    ("ex2", "approx", False, "f16"), ("ex2", "approx", False, "f16x2"),
    ("ex2", "approx", True, "bf16"), ("ex2", "approx", True, "bf16x2"),
    ("lg2", "approx", False, "f32"), ("lg2", "approx", True, "f32"),
    ("sin", "approx", False, "f32"), ("sin", "approx", True, "f32"),
    ("cos", "approx", False, "f32"), ("cos", "approx", True, "f32"),
    ("tanh", "approx", False, "f32"), ("tanh", "approx", False, "f16"), ("tanh", "approx", False, "f16x2"),
    ("tanh", "approx", False, "bf16"), ("tanh", "approx", False, "bf16x2"),
    ("div", "approx", False, "f32"), ("div", "approx", True, "f32"),
    ("div", "full", False, "f32"), ("div", "full", True, "f32"),
}


def _core(name):
    """An f32 MUFU core, compiled (tcemu.sfu.fast; mufu.py is the reference it is tested against)."""
    return lambda x: fast.core(name, x)


RCP, RSQ, SQRT, EX2, LG2, SIN, COS, TANH = (_core(n) for n in ("rcp", "rsqrt", "sqrt", "ex2", "lg2", "sin", "cos",
                                                                 "tanh"))


def check_form(op, rounding, ftz, ftype, form):
    """PtxError naming the rule when ptxas would refuse the form."""
    if (op, rounding, bool(ftz), ftype) in LEGAL:
        return
    ok = sorted({f"{o}.{r}{'.ftz' if z else ''}.{t}" for o, r, z, t in LEGAL if o == op})
    raise PtxError("form", f"{form}: not an approximate form ptxas accepts for sm_90a; {op} has "
                           f"{', '.join(ok) if ok else 'none'}")


def _arith(op, fmt, mode, ftz, *xs):
    """One exact FADD/FMUL/DFMA... over uint64 patterns (canonical f32 NaNs; f64 NaNs as DADD/DMUL/DFMA)."""
    x = np.asarray(xs[0], np.uint64)
    y = np.asarray(xs[1] if len(xs) > 1 else x, np.uint64)
    z = np.asarray(xs[2] if len(xs) > 2 else x, np.uint64)
    out = np.empty(x.size, np.uint64)
    nanmode = core.NAN_BCA if fmt is F64 else core.NAN_CANONICAL
    core.arith_kernel(op, x, y, z, *fmt, mode, ftz, nanmode, out)
    return out


def fmul(a, b, ftz=False, mode=core.RN):
    """FMUL (f32 patterns, uint32)."""
    a = np.asarray(a, np.uint32)
    b = np.broadcast_to(np.asarray(b, np.uint32), a.shape)
    return _arith(core.MUL, F32, mode, ftz, a, b).astype(np.uint32)


def _const(v, like):
    return np.full(like.shape, v, np.uint32)


def _abs(x):
    return x & np.uint32(0x7FFFFFFF)


def _subnormal(x):
    """!FSETP.GEU |x|, 2^-126: true for zeros and subnormals (NaN compares unordered: false)."""
    return _abs(x) < TINY32


def _scaled(x, core_fn, in_scale, out_scale, fadd=None):
    """ptxas's non-.ftz wrapper: a subnormal input is scaled by in_scale first; the core's result is then
    multiplied by out_scale (or has fadd added)."""
    low = _subnormal(x)
    if not low.any():
        return core_fn(x)
    xs = np.where(low, fmul(x, _const(in_scale, x)), x)
    y = core_fn(xs)
    if fadd is not None:
        fixed = _arith(core.ADD, F32, core.RN, False, y, _const(fadd, y)).astype(np.uint32)
    else:
        fixed = fmul(y, _const(out_scale, y))
    return np.where(low, fixed, y).astype(np.uint32)


def _rcp_f32(a, ftz):
    if ftz:
        return RCP(a)
    # FSEL: s = 1/4 above 2^126, 2^24 below 2^-126, else 1; MUFU.RCP(a * s) * s
    if not ((_abs(a) > HUGE32) | _subnormal(a)).any():
        return RCP(a)      # s = 1 in every lane: both FMULs are exact
    s = np.where(_abs(a) > HUGE32, np.uint32(0x3E800000),
                 np.where(_subnormal(a), np.uint32(0x4B800000), np.uint32(0x3F800000)))
    return fmul(s, RCP(fmul(a, s)))


def _ex2_f32(a, ftz):
    if ftz:
        return EX2(a)
    # FSETP.GEU a, -126: below it, EX2(a / 2) squared (FMUL keeps the subnormal result)
    low = (a > np.uint32(0xC2FC0000)) & (a <= np.uint32(0xFF800000))   # a < -126, not NaN
    if not low.any():
        return EX2(a)
    half = np.where(low, fmul(a, _const(0x3F000000, a)), a)
    y = EX2(half)
    return np.where(low, fmul(y, y), y).astype(np.uint32)


def _div_f32(a, b, full, ftz):
    a, b = np.asarray(a, np.uint32), np.asarray(b, np.uint32)
    b2 = b
    big = _abs(b) > HUGE32   # FSETP.GT(.FTZ): subnormals are not > 2^126
    if full and big.any():
        quarter = _const(0x3E800000, b)
        a = np.where(big, fmul(a, quarter, ftz), a)
        b2 = np.where(big, fmul(b, quarter, ftz), b)
    low = _subnormal(b)
    if not ftz and low.any():
        two24 = _const(0x4B800000, b)
        a = np.where(low, fmul(a, two24), a)
        b2 = np.where(low, fmul(b2, two24), b2)
    return fmul(RCP(b2), a, ftz)


def _rsqrt_f64(x):
    """rsqrt.approx.f64: RSQ64H seed (low word 0), one correction y + (3/8 e + 1/2) (y e), e = 1 - x y^2
    (DMUL/DFMA, round to nearest); zeros, negatives, inf and NaN by their own branch, subnormals scaled by
    2^54 and the result by 2^27."""
    x = np.asarray(x, np.uint64)
    hi = (x >> np.uint64(32)).astype(np.uint32)
    c375, c05, one = (np.full(x.shape, v, np.uint64) for v in (0x3FD8000000000000, 0x3FE0000000000000,
                                                               0x3FF0000000000000))

    def newton(v):
        y0 = mufu.rsq64h((v >> np.uint64(32)).astype(np.uint32)).astype(np.uint64) << np.uint64(32)
        t = _arith(core.MUL, F64, core.RN, False, y0, y0)
        e = _arith(core.FMA, F64, core.RN, False, v, t ^ np.uint64(1 << 63), one)
        c = _arith(core.FMA, F64, core.RN, False, e, c375, c05)
        d = _arith(core.MUL, F64, core.RN, False, y0, e)
        return _arith(core.FMA, F64, core.RN, False, c, d, y0)

    out = newton(x)
    slow = (hi - np.uint32(0x00100000)) >= np.uint32(0x7FE00000)
    if slow.any():
        mag = x & np.uint64((1 << 63) - 1)
        sign = x & np.uint64(1 << 63)
        sub = newton(_arith(core.MUL, F64, core.RN, False, x, np.full(x.shape, 0x4350000000000000, np.uint64)))
        sub = _arith(core.MUL, F64, core.RN, False, sub, np.full(x.shape, 0x41A0000000000000, np.uint64))
        nanq = _arith(core.ADD, F64, core.RN, False, x, x)   # DADD x, x quiets a NaN
        s = np.where(mag == 0, sign | np.uint64(0x7FF0000000000000),
                     np.where(mag > np.uint64(0x7FF0000000000000), nanq,
                              np.where(sign != 0, np.uint64(0xFFF8000000000000),
                                       np.where(mag == np.uint64(0x7FF0000000000000), np.uint64(0), sub))))
        out = np.where(slow, s, out)
    return out.astype(np.uint64)


def _hi_only(x, core_fn):
    """rcp.approx.ftz.f64 / rsqrt.approx.ftz.f64: the 64H core on the high word, low word 0."""
    hi = (np.asarray(x, np.uint64) >> np.uint64(32)).astype(np.uint32)
    return core_fn(hi).astype(np.uint64) << np.uint64(32)


def _halves(fn, x, fmt, packed):
    x = np.asarray(x, np.uint32 if packed else np.uint16)
    if not packed:
        return fn(x, fmt)
    lo = fn((x & 0xFFFF).astype(np.uint16), fmt).astype(np.uint32)
    hi = fn((x >> 16).astype(np.uint16), fmt).astype(np.uint32)
    return lo | (hi << 16)


def approx(op, ftype, operands, rounding, ftz):
    """The approximate form's result bits for each lane (operands: arrays of raw patterns)."""
    a = operands[0]
    if ftype == "f32":
        a = np.asarray(a, np.uint32)
        if op == "rcp":
            return _rcp_f32(a, ftz)
        if op == "sqrt":
            return SQRT(a) if ftz else _scaled(a, SQRT, 0x4B800000, 0x39800000)   # 2^24, 2^-12
        if op == "rsqrt":
            return RSQ(a) if ftz else _scaled(a, RSQ, 0x4B800000, 0x45800000)  # 2^24, 2^12
        if op == "lg2":
            return LG2(a) if ftz else _scaled(a, LG2, 0x4B800000, None, fadd=0xC1C00000)  # -24
        if op == "ex2":
            return _ex2_f32(a, ftz)
        if op in ("sin", "cos"):
            # FMUL.RZ by 1/(2 pi) (0x3e22f983), no .FTZ, into MUFU.SIN / MUFU.COS
            t = fmul(a, _const(0x3E22F983, a), mode=core.RZ)
            return (SIN if op == "sin" else COS)(t)
        if op == "tanh":
            return TANH(a)
        if op == "div":
            return _div_f32(a, operands[1], rounding == "full", ftz)
    if ftype == "f64":
        if op == "rcp":
            return _hi_only(a, mufu.rcp64h)
        if op == "rsqrt":
            return _hi_only(a, mufu.rsq64h) if ftz else _rsqrt_f64(a)
    if ftype in ("f16", "bf16", "f16x2", "bf16x2"):
        fmt = ftype[:-2] if ftype.endswith("x2") else ftype
        fn = mufu.ex2_h if op == "ex2" else mufu.tanh_h
        return _halves(fn, a, fmt, ftype.endswith("x2"))
    raise PtxError("form", f"{op}.{rounding}.{ftype}: no approximate form")  # check_form refuses these first


def parse_form(name):
    """'div.full.ftz.f32' -> ('div', 'full', True, 'f32'), checked against LEGAL (PtxError otherwise)."""
    parts = name.split(".") if isinstance(name, str) else []
    if len(parts) not in (3, 4) or (len(parts) == 4 and parts[2] != "ftz"):
        raise PtxError("form", f"{name!r} is not an approximate form name (op.approx[.ftz].type)")
    op, rounding, ftype = parts[0], parts[1], parts[-1]
    check_form(op, rounding, len(parts) == 4, ftype, name)
    return op, rounding, len(parts) == 4, ftype


def form_bits(ftype):
    """Operand width of a form's type."""
    return {"f32": 32, "f64": 64, "f16": 16, "bf16": 16, "f16x2": 32, "bf16x2": 32}[ftype]
