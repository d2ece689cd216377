"""Exact PTX floating-point arithmetic on raw bit patterns: what the interpreter's FP instructions compute.

Every function is pure and vectorised over lanes: operands are numpy arrays of raw bit patterns (uint16 for
f16/bf16, uint32 for f32 and the packed f16x2/bf16x2, uint64 for f64 and the sm_100 f32x2), any length, and results come back the
same way (predicates as bool arrays). Modifier keywords mirror the PTX modifiers.

    float_op(op, ftype, *operands, rounding=None, ftz=False, sat=False, relu=False, nan=False,
             xorsign_abs=False) -> bits
        op: add sub mul fma mad div rcp sqrt neg abs min max copysign (exact), and the approximate
        rsqrt ex2 lg2 sin cos tanh, div.approx/full, rcp/sqrt.approx (the H100's bits: sfu_forms).
        rounding: None (PTX's default, .rn, where PTX allows omitting it), "rn" "rz" "rm" "rp", "approx", "full".
    float_compare(cmp, ftype, a, b, ftz=False) -> bool array; for f16x2/bf16x2 a pair (lower, upper halves)
        cmp: eq ne lt le gt ge (ordered), equ neu ltu leu gtu geu (unordered), num, nan (setp/set, 9.7.3.x).
    testp(op, ftype, a) -> bool array        op: finite infinite number notanumber normal subnormal
    cvt(dtype, atype, a, b=None, rounding=None, ftz=False, sat=False, satfinite=False, relu=False) -> bits
        every float/int pair PTX allows, integral rounding (.rni .rzi .rmi .rpi), tf32 (f32 container),
        and the packed forms: f16x2/bf16x2 from two f32 (a -> upper half), e4m3x2/e5m2x2 (and the sm_100
        e2m1x2/e2m3x2/e3m2x2) from two f32 or one f16x2, f16x2 from e4m3x2/e5m2x2/e2m1x2/e2m3x2/e3m2x2.
    set_bits(dtype, pred) -> bits            what `set` writes for a true/false predicate (1.0 or all ones)

Rules (PTX ISA 9.7.3, 9.7.4, 9.7.9.21, IEEE 754-2019): one exact result rounded once (fma included);
subnormals kept unless .ftz (inputs and results flushed to a zero of the same sign; a result is flushed
when it is tiny after rounding with an unbounded exponent, IEEE 754 7.5, not merely when it is subnormal after
rounding: a value just below 2^-126 that rounds up to 2^-126 on the f32 grid is flushed unless it also reaches
2^-126 at full precision. Measured for mul/fma/div/rcp .ftz.f32 on an H100, traces/ptx_alu_edges_sm90.npz:
1,059 cases where the rules disagree, every one "tiny after rounding"; _fpcore.round_pack. cvt.ftz.f32.f64,
emulated by ptxas, follows the same rule through its own thresholds: _ftz_f32_from_f64); cvt.f32.f32 and
cvt.f64.f64 without modifiers are register moves (NaN bits kept); cvt.rna.tf32.f32 is integer arithmetic on the
pattern (_cvt_tf32); an exact zero sum is +0, -0 under .rm; .sat clamps to [+0, 1] and
turns NaN into +0; .relu turns negative results into +0 and keeps NaN; .satfinite turns +-inf into
+-max finite. NaN results: NAN_POLICY (arithmetic), CVT_NAN (conversions), _float_to_int_nan, all measured
on an H100 (traces/ptx_alu_sm90.npz, every non-approximate form matches case for case).
Bad modifier combinations (those ptxas 13.0 rejects for sm_90a) raise PtxError. The approximate forms
compute what the H100 computes: MUFU tables measured on sm_90 and the SASS around them (sfu_forms).
"""
from functools import lru_cache

import numpy as np

from ..arith.formats import FLOAT_FORMATS, FN, IEEE, NONE
from . import _fpcore as core
from . import fphost
from . import sfu_forms
from .errors import PtxError, PtxUnsupported

# name -> (exp bits, mantissa bits, bias, special, container bits, low container bits ignored)
FORMATS = {name: (f.exp_bits, f.man_bits, f.bias, f.special, f.bits, f.shift)
           for name, f in FLOAT_FORMATS.items() if name in ("f32", "tf32", "f16", "bf16", "e4m3", "e5m2",
                                                            "e2m3", "e3m2", "e2m1")}
FORMATS["f64"] = (11, 52, 1023, IEEE, 64, 0)
FORMATS["e2m3"] = FORMATS["e2m3"][:4] + (8,) + FORMATS["e2m3"][5:]  # fp6 in a byte (upper 2 bits 0)
FORMATS["e3m2"] = FORMATS["e3m2"][:4] + (8,) + FORMATS["e3m2"][5:]
assert FN == core.FN and IEEE == core.IEEE and NONE == core.NONE

UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
SCALAR = ("f64", "f32", "f16", "bf16")
PACKED = {"f16x2": "f16", "bf16x2": "bf16"}
WIDE = {"f32x2": "f32"}  # sm_100 add/sub/mul/fma .f32x2: two f32 lanes in a .b64 register, element 0 in bits 0-31
ROUNDING = {"rn": core.RN, "rz": core.RZ, "rm": core.RM, "rp": core.RP, "rna": core.RNA}
INT_ROUNDING = {"rni": core.RN, "rzi": core.RZ, "rmi": core.RM, "rpi": core.RP}
INT_TYPES = {"s8": (8, True), "s16": (16, True), "s32": (32, True), "s64": (64, True),
             "u8": (8, False), "u16": (16, False), "u32": (32, False), "u64": (64, False)}

# NaN results of the arithmetic, per (op, type), measured on an H100 (traces/ptx_alu_sm90.npz): every f32,
# f16, bf16 (and x2) form gives the canonical NaN (0x7fffffff, 0x7fff); the f64 forms propagate a NaN operand
# quieted (sign and payload kept) and give the negative default NaN 0xfff8000000000000 for an invalid
# operation. DADD/DMUL/DFMA take the second source's NaN first, then the third's, then the first's; the
# div/rcp/sqrt.f64 sequences the first's, then the second's (_fpcore.NAN_BCA / NAN_AB).
NAN_POLICY = {(op, "f64"): core.NAN_BCA for op in ("add", "sub", "mul", "fma", "mad")}
NAN_POLICY.update({(op, "f64"): core.NAN_AB for op in ("div", "rcp", "sqrt")})


def _nan_mode(op, ftype):
    return NAN_POLICY.get((op, ftype), core.NAN_CANONICAL)


# The approximate instructions: PTX gives only error bounds; tcemu computes what the H100's MUFU and the SASS
# around it compute (sfu_forms, from tables measured on sm_90 and proven over every input).
APPROX_OPS = ("rsqrt", "ex2", "lg2", "sin", "cos", "tanh")
APPROX = "approx"   # _float_plan's marker for a form sfu_forms computes


def _name(op, ftype, rounding=None, **flags):
    mods = [rounding] if rounding else []
    mods += [k.replace("_", ".") if k != "nan" else "NaN" for k, v in flags.items() if v]
    return ".".join([op] + mods + [ftype])


def _bits(x, width, field):
    """x as a contiguous array of the unsigned type of `width` bits (integer input of another width is
    accepted when every value fits)."""
    arr = np.asarray(x)
    want = UINT[width]
    if arr.dtype == want:
        return arr
    if arr.dtype.kind not in "iu" and arr.dtype != np.bool_:
        raise PtxError(field, f"expected raw bit patterns (unsigned integers of {width} bits), got {arr.dtype}")
    if arr.size and (arr.min() < 0 or int(arr.max()) >= (1 << width)):
        raise PtxError(field, f"a value does not fit {width} bits")
    return arr.astype(want)


def _fmt_args(fmt):
    eb, mb, bias, special, _, shift = FORMATS[fmt]
    return eb, mb, bias, special, shift


def _check(cond, field, rule):
    if not cond:
        raise PtxError(field, rule)


def _split(bits32):
    """f16x2/bf16x2 register -> one array of 2n halves: lower halves then upper halves."""
    return np.concatenate([(bits32 & 0xFFFF).astype(np.uint16), (bits32 >> 16).astype(np.uint16)])


def _join(halves, n):
    return halves[:n].astype(np.uint32) | (halves[n:].astype(np.uint32) << 16)


# ---------------------------------------------------------------- arithmetic

_ARITH = {"add": core.ADD, "sub": core.SUB, "mul": core.MUL, "fma": core.FMA, "mad": core.FMA,
          "div": core.DIV, "sqrt": core.SQRT, "rcp": core.RCP}
_ARITY = {"add": 2, "sub": 2, "mul": 2, "fma": 3, "mad": 3, "div": 2, "sqrt": 1, "rcp": 1, "neg": 1, "abs": 1,
          "min": 2, "max": 2, "copysign": 2, "rsqrt": 1, "ex2": 1, "lg2": 1, "sin": 1, "cos": 1, "tanh": 1}


def _validate(op, ftype, rounding, ftz, sat, relu, nan, xorsign_abs):
    """PTX/ptxas (13.0, sm_90a) modifier rules of the FP instructions; raises PtxError."""
    base = PACKED.get(ftype, ftype)
    form = _name(op, ftype, rounding, ftz=ftz, sat=sat, relu=relu, nan=nan, xorsign_abs=xorsign_abs)
    if ftype in WIDE:  # PTX 9.7.3.1-4: add/sub/mul{.rnd}{.ftz}.f32x2, fma.rnd{.ftz}.f32x2 (ptxas 13.0, sm_100a)
        _check(op in ("add", "sub", "mul", "fma"), "type", f"{form}: .f32x2 is an add/sub/mul/fma type")
        _check(rounding in ("rn", "rz", "rm", "rp") or (rounding is None and op != "fma"), "rounding",
               f"{form}: " + ("a rounding modifier is required" if op == "fma" else "rounding is .rn .rz .rm .rp"))
        _check(not (sat or relu or nan or xorsign_abs), "modifier", f"{form}: .f32x2 takes only a rounding "
                                                                    f"modifier and .ftz")
        return form
    if op in ("add", "sub", "mul"):
        _check(ftype in SCALAR or ftype in PACKED, "type", f"{form}: {op} takes f32 f64 f16 f16x2 bf16 bf16x2")
        if base in ("f32", "f64"):
            _check(rounding in (None, "rn", "rz", "rm", "rp"), "rounding", f"{form}: rounding is .rn .rz .rm .rp")
        else:
            _check(rounding in (None, "rn"), "rounding", f"{form}: half-precision {op} rounds .rn only")
        _check(not ftz or base in ("f32", "f16"), "ftz", f"{form}: .ftz applies to f32 and f16 only")
        _check(not sat or base in ("f32", "f16"), "sat", f"{form}: .sat applies to f32 and f16 only")
        _check(not (relu or nan or xorsign_abs), "modifier", f"{form}: no .relu/.NaN/.xorsign on {op}")
    elif op in ("fma", "mad"):
        ok_types = ("f32", "f64") if op == "mad" else SCALAR + tuple(PACKED)
        _check(ftype in ok_types, "type", f"{form}: {op} takes {' '.join(ok_types)}")
        if base in ("f32", "f64"):
            _check(rounding in ("rn", "rz", "rm", "rp"), "rounding", f"{form}: a rounding modifier is required")
        elif rounding == "rz" and base == "bf16":   # ptxas 13.4 takes fma.rz.bf16/bf16x2 (probe_instruction_types.py)
            raise PtxUnsupported(form, "fma.rz on bf16 is not modelled")
        else:
            _check(rounding == "rn", "rounding", f"{form}: half-precision fma requires .rn")
        _check(not ftz or base in ("f32", "f16"), "ftz", f"{form}: .ftz applies to f32 and f16 only")
        _check(not sat or base in ("f32", "f16"), "sat", f"{form}: .sat applies to f32 and f16 only")
        _check(not relu or base in ("f16", "bf16"), "relu", f"{form}: .relu applies to f16 and bf16 fma only")
        _check(not (sat and relu), "relu", f"{form}: .sat and .relu exclude each other")
        _check(not (nan or xorsign_abs), "modifier", f"{form}: no .NaN/.xorsign on {op}")
    elif op in ("div", "rcp", "sqrt"):
        _check(ftype in ("f32", "f64"), "type", f"{form}: {op} takes f32 or f64")
        _check(rounding in ("rn", "rz", "rm", "rp", "approx") or (op == "div" and rounding == "full"),
               "rounding", f"{form}: a rounding modifier (or .approx{'/.full' if op == 'div' else ''}) is required")
        if ftz and ftype == "f64" and op == "rcp" and rounding != "approx":   # ptxas 13.4 takes it, undocumented
            raise PtxUnsupported(form, "rcp.{rn,rz,rm,rp}.ftz.f64 is not modelled")
        _check(not ftz or ftype == "f32" or (rounding == "approx" and op == "rcp"), "ftz",
               f"{form}: .ftz applies to f32 only")
        _check(not (sat or relu or nan or xorsign_abs), "modifier", f"{form}: no .sat/.relu/.NaN/.xorsign")
    elif op in ("neg", "abs"):
        _check(ftype in SCALAR or ftype in PACKED, "type", f"{form}: {op} takes f32 f64 f16 f16x2 bf16 bf16x2")
        _check(rounding is None, "rounding", f"{form}: {op} takes no rounding modifier")
        _check(not ftz or base in ("f32", "f16"), "ftz", f"{form}: .ftz applies to f32 and f16 only")
        _check(not (sat or relu or nan or xorsign_abs), "modifier", f"{form}: {op} takes only .ftz")
    elif op in ("min", "max"):
        _check(ftype in SCALAR or ftype in PACKED, "type", f"{form}: {op} takes f32 f64 f16 f16x2 bf16 bf16x2")
        _check(rounding is None, "rounding", f"{form}: {op} takes no rounding modifier")
        _check(not ftz or base in ("f32", "f16"), "ftz", f"{form}: .ftz applies to f32 and f16 only")
        _check(not (nan or xorsign_abs) or ftype != "f64", "modifier", f"{form}: min/max.f64 take no modifier")
        _check(not (sat or relu), "modifier", f"{form}: no .sat/.relu on float {op}")
    elif op == "copysign":
        _check(ftype in ("f32", "f64"), "type", f"{form}: copysign takes f32 or f64")
        _check(rounding is None and not (ftz or sat or relu or nan or xorsign_abs), "modifier",
               f"{form}: copysign takes no modifier")
    elif op in APPROX_OPS:
        _check(not (sat or relu or nan or xorsign_abs), "modifier", f"{form}: no .sat/.relu/.NaN/.xorsign")
    else:
        raise PtxError("op", f"{op!r} is not a PTX floating-point operation handled here; expected one of "
                             f"{', '.join(_ARITY)}")
    return form


@lru_cache(maxsize=None)
def _float_plan(op, ftype, nops, rounding, ftz, sat, relu, nan, xorsign_abs):
    """Validated (base format, operand width) of one float_op form; raises for bad forms."""
    if not isinstance(op, str) or op not in _ARITY:
        raise PtxError("op", f"{op!r} is not one of {', '.join(_ARITY)}")
    if ftype not in SCALAR and ftype not in PACKED and ftype not in WIDE:
        raise PtxError("type", f"{ftype!r} is not one of f64 f32 f16 bf16 f16x2 bf16x2 f32x2")
    if nops != _ARITY[op]:
        raise PtxError("operands", f"{op} takes {_ARITY[op]} source operands, got {nops}")
    if rounding is not None and rounding not in ("rn", "rz", "rm", "rp", "approx", "full"):
        raise PtxError("rounding", f"{rounding!r} is not one of rn rz rm rp approx full")
    form = _validate(op, ftype, rounding, ftz, sat, relu, nan, xorsign_abs)
    if ftype in WIDE:
        return WIDE[ftype], 64
    base = PACKED.get(ftype, ftype)
    width = 32 if ftype in PACKED else FORMATS[base][4]
    if op in APPROX_OPS or rounding in ("approx", "full"):
        sfu_forms.check_form(op, rounding, ftz, ftype, form)
        return APPROX, width
    return base, width


def _lanes(operands, width):
    """Operands as flat arrays of `width`-bit patterns, one shape (broadcast if they differ)."""
    arrs = [_bits(x, width, "operand") for x in operands]
    shape = arrs[0].shape
    for a in arrs:
        if a.shape != shape:
            try:
                arrs = np.broadcast_arrays(*arrs)
            except ValueError:
                raise PtxError("operands", f"lane counts differ: {[a.shape for a in arrs]}") from None
            shape = arrs[0].shape
            break
    if len(shape) != 1:
        arrs = [np.ascontiguousarray(a).reshape(-1) for a in arrs]
    return arrs, shape


def float_op(op, ftype, *operands, rounding=None, ftz=False, sat=False, relu=False, nan=False,
             xorsign_abs=False):
    """One PTX floating-point instruction over lanes (see the module docstring)."""
    try:
        base, width = _float_plan(op, ftype, len(operands), rounding, bool(ftz), bool(sat), bool(relu),
                                  bool(nan), bool(xorsign_abs))
    except TypeError:
        raise PtxError("op", f"unusable instruction description {op!r} {ftype!r} {rounding!r}") from None
    flat, shape = _lanes(operands, width)
    if base is APPROX:
        return sfu_forms.approx(op, ftype, flat, rounding, bool(ftz)).reshape(shape)
    if ftype in WIDE:  # each element is exactly the scalar f32 instruction
        n = flat[0].size
        halves = [np.concatenate([(a & np.uint64(0xFFFFFFFF)).astype(np.uint32), (a >> np.uint64(32)).astype(np.uint32)])
                  for a in flat]
        out = _scalar_op(op, base, halves, rounding, ftz, sat, relu, nan, xorsign_abs).astype(np.uint64)
        return (out[:n] | (out[n:] << np.uint64(32))).reshape(shape)
    if ftype in PACKED and op in _ARITH:
        eb, mb, bias, special, shift, dt, sign = _CONST[base]
        x = flat[0].astype(np.uint64)
        y = flat[1].astype(np.uint64) if len(flat) > 1 else x
        z = flat[2].astype(np.uint64) if len(flat) > 2 else x
        out = np.empty(x.size, np.uint64)
        core.arith_kernel_x2(_ARITH[op], x, y, z, eb, mb, bias, special, shift, ROUNDING[rounding or "rn"], ftz,
                             _nan_mode(op, base), out)
        out = out.astype(np.uint32)
        if sat or relu:
            halves = _split(out)
            halves = _saturate(halves, base) if sat else _relu(halves, base)
            out = _join(halves, x.size)
        return out.reshape(shape)
    if ftype in PACKED:
        n = flat[0].size
        out = _join(_scalar_op(op, base, [_split(a) for a in flat], rounding, ftz, sat, relu, nan, xorsign_abs), n)
    else:
        out = _scalar_op(op, base, flat, rounding, ftz, sat, relu, nan, xorsign_abs)
    return out.reshape(shape)


# per format: (eb, mb, bias, special, shift, unsigned dtype, sign-bit mask)
_CONST = {f: FORMATS[f][:4] + (FORMATS[f][5], UINT[FORMATS[f][4]], UINT[FORMATS[f][4]](1 << (FORMATS[f][4] - 1)))
          for f in FORMATS if f != "e2m1"}


def _scalar_op(op, fmt, arrs, rounding, ftz, sat, relu, nan, xorsign_abs):
    eb, mb, bias, special, shift, dt, sign = _CONST[fmt]
    code = _ARITH.get(op)
    if code is not None:
        host = fphost.NATIVE and (rounding or "rn") == "rn" and (op, fmt) in fphost.HOST and fphost.host_ieee()
        if host:
            out, redo = fphost.host_op(op, fmt, arrs, ftz)   # (out: a new array)
            arrs = [a[redo] for a in arrs] if redo.any() else None
        if arrs is not None:
            x = arrs[0].astype(np.uint64)
            y = arrs[1].astype(np.uint64) if len(arrs) > 1 else x
            z = arrs[2].astype(np.uint64) if len(arrs) > 2 else x
            bits = np.empty(x.size, np.uint64)
            core.arith_kernel(code, x, y, z, eb, mb, bias, special, shift, ROUNDING[rounding or "rn"], ftz,
                              _nan_mode(op, fmt), bits)
            if host:
                out[redo] = bits
            else:
                out = bits.astype(dt)
        if sat:
            out = _saturate(out, fmt)
        if relu:
            out = _relu(out, fmt)
        return out
    if op in ("neg", "abs"):
        # ptxas emits FADD/HADD2/DADD of -0 and the negated or absolute operand (SASS of sm_90a: DADD R, -RZ,
        # -R): arithmetic, so .ftz flushes and a NaN follows the add's NaN rule: canonical for f32/f16/bf16,
        # the operand quieted with its own sign for f64 (the negation is not applied to it; trace).
        x = arrs[0]
        r = x ^ sign if op == "neg" else x & ~sign
        if ftz:
            mag = x & ~sign
            r = np.where((mag < dt(1 << mb)) & (mag != 0), r & sign, r)
        isnan = _isnan(x, fmt)
        if isnan.any():
            r = np.where(isnan, _nan_out(x, fmt, _nan_mode("add", fmt)), r)
        return r.astype(dt)
    if op == "copysign":  # d = b with a's sign (LOP3 in SASS: a pure bit operation)
        a, b = arrs
        return ((b & ~sign) | (a & sign)).astype(dt)
    # min / max
    out = np.empty(arrs[0].size, np.uint64)
    canon = np.uint64(core.nan_bits(eb, mb, shift))
    core.minmax_kernel(op == "max", arrs[0].astype(np.uint64), arrs[1].astype(np.uint64), eb, mb, bias,
                       special, shift, ftz, nan, xorsign_abs, canon, fmt == "f64", out)
    return out.astype(dt)


def _isnan(x, fmt):
    eb, mb, _, special, width, shift = FORMATS[fmt]
    mag = (x.astype(np.uint64) >> np.uint64(shift)) & np.uint64((1 << (eb + mb)) - 1)
    if special == IEEE:
        return mag > np.uint64(((1 << eb) - 1) << mb)
    if special == FN:
        return mag == np.uint64((1 << (eb + mb)) - 1)
    return np.zeros(x.shape, bool)


def _nan_out(x, fmt, mode):
    """NaN lanes' result of a one-operand arithmetic form: the canonical NaN, or x quieted."""
    eb, mb, _, special, width, shift = FORMATS[fmt]
    if mode != core.NAN_CANONICAL:
        return (x | UINT[width](1 << (mb - 1 + shift))).astype(UINT[width])
    return UINT[width](((1 << (eb + mb)) - 1) << shift)


def _saturate(bits, fmt):
    """.sat: clamp to [+0, 1.0]; NaN and every negative (-0 included) give +0 (PTX 9.7.3)."""
    eb, mb, bias, _, width, _ = FORMATS[fmt]
    dt = UINT[width]
    one = dt(bias << mb)
    neg = (bits >> dt(width - 1)) != 0
    return np.where(neg | _isnan(bits, fmt), dt(0), np.minimum(bits, one)).astype(dt)


def _relu(bits, fmt):
    """.relu: negative results (-0 included) give +0; NaN stays NaN (PTX 9.7.4 fma.relu, 9.7.9.21 cvt)."""
    width = FORMATS[fmt][4]
    dt = UINT[width]
    neg = (bits >> dt(width - 1)) != 0
    return np.where(neg & ~_isnan(bits, fmt), dt(0), bits).astype(dt)


# ---------------------------------------------------------------- comparisons

_CMP = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")


def _values(bits, fmt, ftz):
    """float64 values (exact for f16/bf16/f32/f64), subnormals flushed to signed zero with ftz."""
    if fmt == "f64":
        v = bits.view(np.float64)
    elif fmt == "f32":
        v = bits.view(np.float32).astype(np.float64)
    elif fmt == "f16":
        v = bits.view(np.float16).astype(np.float64)
    else:  # bf16: the upper half of an f32
        v = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if ftz:
        v = np.where(np.abs(v) < 2.0 ** (1 - FORMATS[fmt][2]), 0.0 * v, v)
    return v


def float_compare(cmp, ftype, a, b, ftz=False):
    """setp/set comparison (PTX 9.7.3.x, Table 'Floating-point comparison operators'): ordered comparisons
    are false when either operand is NaN, the unordered ones (…u) true; -0 == +0; .ftz compares flushed
    subnormals as zeros. Packed types give (lower-half result, upper-half result)."""
    if cmp not in _CMP:
        raise PtxError("cmp", f"{cmp!r} is not a float comparison; expected one of {' '.join(_CMP)}")
    if ftype not in SCALAR and ftype not in PACKED:
        raise PtxError("type", f"{ftype!r} is not one of f64 f32 f16 bf16 f16x2 bf16x2")
    base = PACKED.get(ftype, ftype)
    _check(not ftz or base in ("f32", "f16"), "ftz", f"setp.{cmp}.ftz.{ftype}: .ftz applies to f32 and f16 only")
    width = 32 if ftype in PACKED else FORMATS[base][4]
    a, b = _bits(a, width, "a"), _bits(b, width, "b")
    if ftype in PACKED:
        n = a.size
        r = _compare(cmp, base, _split(a.reshape(-1)), _split(b.reshape(-1)), ftz)
        return r[:n].reshape(a.shape), r[n:].reshape(a.shape)
    return _compare(cmp, base, a, b, ftz)


def _compare(cmp, fmt, a, b, ftz):
    with np.errstate(invalid="ignore"):
        x, y = _values(a, fmt, ftz), _values(b, fmt, ftz)
        unordered = np.isnan(x) | np.isnan(y)
        base = cmp.rstrip("u") if cmp not in ("num",) else cmp
        if cmp == "num":
            return ~unordered
        if cmp == "nan":
            return unordered
        r = {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}[base]
    if cmp.endswith("u"):
        return r | unordered
    return r & ~unordered


def testp(op, ftype, a):
    """testp (PTX 9.7.3.x): .finite .infinite .number .notanumber .normal .subnormal; zeros count as
    normal, as PTX says ("positive and negative zero are considered normal numbers")."""
    ops = ("finite", "infinite", "number", "notanumber", "normal", "subnormal")
    if op not in ops:
        raise PtxError("op", f"{op!r} is not a testp operation; expected one of {' '.join(ops)}")
    if ftype not in ("f32", "f64"):
        raise PtxError("type", f"testp.{op}.{ftype}: testp takes f32 or f64")
    eb, mb, _, _, width, _ = FORMATS[ftype]
    bits = _bits(a, width, "a").astype(np.uint64)
    field = (bits >> np.uint64(mb)) & np.uint64((1 << eb) - 1)
    man = bits & np.uint64((1 << mb) - 1)
    top = np.uint64((1 << eb) - 1)
    inf = (field == top) & (man == 0)
    isnan = (field == top) & (man != 0)
    sub = (field == 0) & (man != 0)
    return {"finite": field != top, "infinite": inf, "number": ~isnan, "notanumber": isnan,
            "normal": (field != top) & ~sub, "subnormal": sub}[op]


def set_bits(dtype, pred):
    """What `set` writes for each lane's predicate: 1.0 (f32, f16, bf16, per half for x2 types) or all ones
    (integer types) when true, 0 when false (PTX 9.7.3.x set)."""
    pred = np.asarray(pred, bool)
    ones = {"f32": (np.uint32, 0x3F800000), "u32": (np.uint32, 0xFFFFFFFF), "s32": (np.uint32, 0xFFFFFFFF),
            "f16": (np.uint16, 0x3C00), "bf16": (np.uint16, 0x3F80), "u16": (np.uint16, 0xFFFF),
            "s16": (np.uint16, 0xFFFF)}
    if dtype not in ones:
        raise PtxError("dtype", f"{dtype!r}: set writes f32 f16 bf16 u32 s32 u16 s16 (x2 types: per half, "
                                f"call twice and pack)")
    dt, one = ones[dtype]
    return np.where(pred, dt(one), dt(0))


# ---------------------------------------------------------------- conversions

_FLOAT_CVT = ("f64", "f32", "f16", "bf16")
_PACK_FROM_F32 = {"f16x2": "f16", "bf16x2": "bf16", "e4m3x2": "e4m3", "e5m2x2": "e5m2", "e2m1x2": "e2m1",
                  "e2m3x2": "e2m3", "e3m2x2": "e3m2"}
_UNPACK_TO_F16X2 = {"e4m3x2": "e4m3", "e5m2x2": "e5m2", "e2m1x2": "e2m1", "e2m3x2": "e2m3", "e3m2x2": "e3m2"}
_PRECISION = {"f64": 53, "f32": 24, "bf16": 8, "f16": 11}

# NaN results of float -> float conversions, per (dtype, atype), measured (traces/ptx_alu_sm90.npz) and
# explained by the sm_90a SASS ptxas 13.0 emits; any pair not listed gives the destination's canonical NaN.
#   "shift": every bit kept, the payload moved up (cvt.f32.bf16 is SHF.L.U32 d, a, 0x10: a signalling NaN
#            stays signalling);
#   "quiet": sign kept, the payload moved to the top of the destination mantissa (widening) or its top bits
#            kept (narrowing: truncated, never rounded), the quiet bit set: F2F.F64.{F32,F16,BF16} and
#            F2F.{F32,F16,BF16}.F64, the conversions through the f64 unit (0x7f800001 -> 0x7ff8000020000000,
#            0x7fff95cf3f2b1494 -> 0x7ffcae79).
# .ftz changes the instruction: cvt.ftz.f32.bf16 is F2F.FTZ.F32.BF16 (canonical 0x7fffffff); cvt.ftz.f64.f32
# is FMUL.FTZ x, 1 (canonical f32 NaN) then F2F.F64.F32, so every NaN gives 0x7fffffffe0000000.
CVT_NAN = {("f32", "bf16"): "shift", ("f64", "f32"): "quiet", ("f64", "f16"): "quiet", ("f64", "bf16"): "quiet",
           ("f32", "f64"): "quiet", ("f16", "f64"): "quiet", ("bf16", "f64"): "quiet"}


def _float_to_int_nan(atype, width):
    """What cvt.rXi.{s,u}W.atype writes for NaN: the sm_90a SASS is F2I ... .NTZ (NaN to zero) exactly when the
    source is f32/f16/bf16 and the destination at most 32 bits (NaN -> 0); the f64 sources (F2I.F64,
    F2I.U8.F64 ...) and the 64-bit destinations (F2I.S64/U64) have no .NTZ and give the integer indefinite
    1 << (width - 1) (0x80000000, 0x8000000000000000, 0x80 for u8: traces/ptx_alu_sm90.npz; the s8/s16/u16
    f64 sources are inferred from the same F2I family)."""
    return 1 << (width - 1) if atype == "f64" or width == 64 else 0


def cvt(dtype, atype, a, b=None, rounding=None, ftz=False, sat=False, satfinite=False, relu=False):
    """PTX cvt (9.7.9.21) on raw bits. Integer types take/give two's-complement patterns of their own
    width (uint8/16/32/64); the interpreter extends 8-bit results into wider registers."""
    form = ".".join(["cvt"] + [m for m in (rounding,) if m] + [k for k, v in (("ftz", ftz), ("sat", sat),
                    ("relu", relu), ("satfinite", satfinite)) if v] + [str(dtype), str(atype)])
    if dtype in _PACK_FROM_F32 or (atype in _UNPACK_TO_F16X2 and dtype == "f16x2"):
        return _cvt_packed(form, dtype, atype, a, b, rounding, ftz, sat, satfinite, relu)
    if b is not None:
        raise PtxError("b", f"{form}: only the packed destinations take a second source")
    if dtype == "tf32":
        return _cvt_tf32(form, atype, a, rounding, ftz, sat, satfinite, relu)
    dfloat, afloat = dtype in _FLOAT_CVT, atype in _FLOAT_CVT
    if not (dfloat or dtype in INT_TYPES) or not (afloat or atype in INT_TYPES):
        raise PtxError("type", f"{form}: expected types among {' '.join(_FLOAT_CVT + tuple(INT_TYPES))}, "
                               f"tf32, and the packed forms")
    if dfloat and afloat:
        return _cvt_float(form, dtype, atype, a, rounding, ftz, sat, satfinite, relu)
    _check(not (relu or satfinite), "modifier", f"{form}: .relu/.satfinite apply to float destinations only")
    if afloat:  # float -> integer: integer rounding required, always saturating
        _check(rounding in INT_ROUNDING, "rounding", f"{form}: float-to-integer cvt needs .rni .rzi .rmi or .rpi")
        _check(not ftz or atype == "f32", "ftz", f"{form}: .ftz applies to an f32 source only")
        width, signed = INT_TYPES[dtype]
        x = _bits(a, FORMATS[atype][4], "a")
        out = np.empty(x.size, np.uint64)
        core.float_to_int_kernel(np.ascontiguousarray(x).reshape(-1).astype(np.uint64), *_fmt_args(atype), ftz,
                                 INT_ROUNDING[rounding], width, signed, np.uint64(_float_to_int_nan(atype, width)),
                                 out)
        return out.astype(UINT[max(width, 8)]).reshape(x.shape)
    if dfloat:  # integer -> float
        _check(rounding in ("rn", "rz", "rm", "rp"), "rounding", f"{form}: integer-to-float cvt needs .rn .rz .rm .rp")
        _check(not sat or dtype in ("f32", "f64", "f16"), "sat", f"{form}: .sat needs an f16/f32/f64 destination")
        width, signed = INT_TYPES[atype]
        x = _bits(a, width, "a").astype(np.uint64).reshape(-1)
        neg = np.zeros(x.size, bool)
        if signed:
            neg = (x >> np.uint64(width - 1)) != 0
            x = np.where(neg, (~x + np.uint64(1)) & np.uint64((1 << width) - 1 if width < 64 else 0xFFFFFFFFFFFFFFFF), x)
        out = np.empty(x.size, np.uint64)
        core.int_to_float_kernel(x, neg, *_fmt_args(dtype), ROUNDING[rounding], out)
        out = out.astype(UINT[FORMATS[dtype][4]])
        if sat:
            out = _saturate(out, dtype)
        return out.reshape(np.shape(a))
    # integer -> integer: truncate or extend; .sat clamps to the destination's range
    _check(rounding is None and not ftz, "modifier", f"{form}: integer-to-integer cvt takes only .sat")
    _check(not sat or dtype != atype, "sat", f"{form}: .sat needs different types")
    dw, ds = INT_TYPES[dtype]
    aw, as_ = INT_TYPES[atype]
    x = _bits(a, aw, "a").astype(np.uint64)
    mask = np.uint64((1 << dw) - 1) if dw < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    if as_ and aw < 64:  # sign-extend to 64 bits
        signbit = np.uint64(1 << (aw - 1))
        x = np.where(x & signbit, x | ~np.uint64((1 << aw) - 1), x)
    if sat:
        v = x.view(np.int64) if as_ else None
        if as_:
            lo, hi = (-(1 << (dw - 1)), (1 << (dw - 1)) - 1) if ds else (0, (1 << dw) - 1)
            hi = min(hi, (1 << 63) - 1)
            v = np.clip(v, lo, hi)
            x = v.view(np.uint64)
        else:
            hi = (1 << (dw - 1)) - 1 if ds else (1 << dw) - 1
            x = np.minimum(x, np.uint64(hi))
    return (x & mask).astype(UINT[max(dw, 8)])


def _cvt_float(form, dtype, atype, a, rounding, ftz, sat, satfinite, relu, host=True):
    x = _bits(a, FORMATS[atype][4], "a")
    if dtype == atype:  # same type: integral rounding, or just .ftz / .sat
        _check(rounding is None or rounding in INT_ROUNDING, "rounding",
               f"{form}: same-type float cvt takes .rni .rzi .rmi .rpi or no rounding")
        _check(not ftz or dtype == "f32", "ftz", f"{form}: .ftz applies to f32 only")
        _check(not sat or dtype != "bf16", "sat", f"{form}: .sat does not apply to bf16")
        _check(not (relu or satfinite), "modifier", f"{form}: no .relu/.satfinite here")
        if rounding is None and not sat and (dtype == "f64" or (dtype == "f32" and not ftz)):
            # cvt.f64.f64 and cvt.f32.f32 are register moves: every bit kept, a signalling NaN included
            # (f64: ptxas emits no instruction; f32: 0x7f800001 -> 0x7f800001, traces/ptx_alu_edges_sm90.npz).
            # cvt.f16.f16 / cvt.bf16.bf16 are not: their NaNs come back canonical (0x7fff, same trace).
            return x.copy()
        flat = np.ascontiguousarray(x).reshape(-1).astype(np.uint64)
        out = np.empty(flat.size, np.uint64)
        eb, mb, bias, special, shift = _fmt_args(dtype)
        canon = np.uint64(core.nan_bits(eb, mb, shift))
        if rounding is None:
            core.convert_kernel(flat, eb, mb, bias, special, shift, ftz, eb, mb, bias, special, shift, core.RN,
                                ftz, False, False, canon, out)
        else:
            core.integral_kernel(flat, eb, mb, bias, special, shift, ftz, INT_ROUNDING[rounding], canon, out)
        out = out.astype(x.dtype)
        if dtype == "f64":  # FRND.F64: a NaN comes back quieted, sign and payload kept (trace)
            out = _nan_payload(out, flat, "f64", "f64", True)
        if sat:
            out = _saturate(out, dtype)
        return out.reshape(x.shape)
    widening = _PRECISION[dtype] >= _PRECISION[atype] and FORMATS[dtype][0] >= FORMATS[atype][0]
    if widening:
        _check(rounding is None or (atype == "bf16" and rounding in ROUNDING), "rounding",
               f"{form}: an exact (widening) cvt takes no rounding modifier")
        mode = core.RN
        _check(not (relu or satfinite), "modifier", f"{form}: no .relu/.satfinite on a widening cvt")
    else:
        if {dtype, atype} == {"f16", "bf16"} and rounding is None:
            rounding = "rn"  # ptxas accepts cvt.f16.bf16 and cvt.bf16.f16 (Triton 3.9 emits it) without rounding
        _check(rounding in ("rn", "rz", "rm", "rp"), "rounding", f"{form}: a narrowing cvt needs .rn .rz .rm or .rp")
        mode = ROUNDING[rounding]
        if relu or satfinite:
            _check(atype == "f32" and dtype in ("f16", "bf16") and rounding in ("rn", "rz"), "modifier",
                   f"{form}: .relu/.satfinite need cvt.rn/.rz.{{f16,bf16}}.f32")
            _check(not ftz or not relu, "ftz", f"{form}: .ftz and .relu exclude each other")
        _check(not sat or dtype != "bf16", "sat", f"{form}: .sat does not apply to a bf16 destination")
    _check(not ftz or "f32" in (dtype, atype), "ftz", f"{form}: .ftz needs an f32 source or destination")
    _check(not ftz or "bf16" not in (dtype, atype) or dtype == "f32" or atype == "f32", "ftz", form)
    flat = np.ascontiguousarray(x).reshape(-1).astype(np.uint64)
    out = None if not host else fphost.narrowed(   # (NaN lanes: the kernel and CVT_NAN below)
        flat, atype, dtype, rounding == "rn" and not (ftz or sat or relu or satfinite),
        lambda r: _cvt_float(form, dtype, atype, x.reshape(-1)[r], rounding, ftz, sat, satfinite, relu, False))
    if out is not None:
        return out.astype(UINT[FORMATS[dtype][4]]).reshape(x.shape)
    out = np.empty(flat.size, np.uint64)
    deb, dmb, dbias, dspecial, dshift = _fmt_args(dtype)
    canon = np.uint64(core.nan_bits(deb, dmb, dshift))
    policy = CVT_NAN.get((dtype, atype))
    if ftz and (dtype, atype) in (("f32", "bf16"), ("f64", "f32")):  # other instructions (see CVT_NAN)
        policy = None
    if ftz and (dtype, atype) == ("f64", "f32"):
        canon = np.uint64(0x7FFFFFFFE0000000)  # FMUL.FTZ (canonical 0x7fffffff), then F2F.F64.F32 widens it
    tiny_f64 = ftz and (dtype, atype) == ("f32", "f64")
    core.convert_kernel(flat, *_fmt_args(atype), ftz and atype == "f32", deb, dmb, dbias, dspecial, dshift, mode,
                        ftz and dtype == "f32" and not tiny_f64, satfinite, relu, canon, out)
    out = out.astype(UINT[FORMATS[dtype][4]])
    if tiny_f64:
        out = _ftz_f32_from_f64(out, flat, rounding)
    if policy is not None:
        out = _nan_payload(out, flat, dtype, atype, policy == "quiet")
    if sat:
        out = _saturate(out, dtype)
    return out.reshape(x.shape)


# cvt.ftz.f32.f64: F2F.F32.F64 has no .FTZ, so ptxas compares |a| with a threshold and multiplies the result
# by 2^-126 (a signed zero) below it (sm_90a SASS). The thresholds make the flush "tiny after rounding with an
# unbounded exponent" (IEEE 754 7.5), not "subnormal after rounding": with RN, 0x380fffffefffffff
# (0x7fffff.c * 2^-149) rounds to 2^-126 but is flushed (traces/ptx_alu_sm90.npz). |a| bits below the first
# value flush, for a positive / negative a (rm and rp: DSETP.GT with 0x380fffffe0000001 or 0x3810000000000000).
_FTZ_F64_BELOW = {"rn": (0x380FFFFFF0000000, 0x380FFFFFF0000000), "rz": (0x3810000000000000, 0x3810000000000000),
                  "rm": (0x3810000000000000, 0x380FFFFFE0000001), "rp": (0x380FFFFFE0000001, 0x3810000000000000)}


def _ftz_f32_from_f64(out, src, rounding):
    pos, neg = _FTZ_F64_BELOW[rounding]
    mag = src & np.uint64(0x7FFFFFFFFFFFFFFF)
    negative = (src >> np.uint64(63)) != 0
    flush = mag < np.where(negative, np.uint64(neg), np.uint64(pos))  # NaN (mag above inf) never flushes
    return np.where(flush, out & np.uint32(0x80000000), out).astype(np.uint32)


def _nan_payload(out, src, dtype, atype, quieten):
    """NaN lanes: the source's sign and payload, the payload moved to the top of the destination mantissa
    (its top bits kept when the destination is narrower), the quiet bit set when quieten."""
    isnan = _isnan(src, atype)
    if not isnan.any():
        return out
    seb, smb, _, _, sw, _ = FORMATS[atype]
    deb, dmb, _, _, dw, _ = FORMATS[dtype]
    sign = (src >> np.uint64(sw - 1)) & np.uint64(1)
    payload = src & np.uint64((1 << smb) - 1)
    payload = payload << np.uint64(dmb - smb) if dmb >= smb else payload >> np.uint64(smb - dmb)
    if quieten:
        payload |= np.uint64(1 << (dmb - 1))
    bits = (sign << np.uint64(dw - 1)) | np.uint64(((1 << deb) - 1) << dmb) | payload
    return np.where(isnan, bits.astype(out.dtype), out)


def _cvt_tf32(form, atype, a, rounding, ftz, sat, satfinite, relu):
    _check(atype == "f32", "type", f"{form}: tf32 converts from f32")
    _check(not ftz and not sat, "modifier", f"{form}: no .ftz/.sat on cvt.tf32")
    if rounding == "rna":
        _check(not relu, "relu", f"{form}: .relu cannot be combined with .rna")
    else:
        _check(rounding in ("rn", "rz"), "rounding", f"{form}: cvt.tf32.f32 rounds .rna, .rn or .rz")
        if satfinite:
            raise PtxUnsupported(form, "cvt.rn/.rz.satfinite.tf32.f32 needs sm_100 (ptxas 13.0); not modelled")
    x = _bits(a, 32, "a")
    if rounding == "rna":
        # sm_90a SASS: FSETP.GEU P, |a|, +INF; @!P IADD a, a, 0x1000; LOP3 a & 0xffffe000 (.satfinite then:
        # FSETP.GEU P, |a|, +INF; @P VIADD a, a, -0x2000). Round half away on the bit pattern for finite a
        # (carries into the exponent give inf); inf/NaN only lose their 13 low bits, so a NaN whose payload
        # lies there becomes inf (0x7f800001 -> 0x7f800000), and satfinite steps inf AND NaN patterns down by
        # one tf32 ulp (inf -> max finite 0x7f7fe000, 0x7fc00000 -> 0x7fbfe000; traces/ptx_alu_sm90.npz).
        u = x.astype(np.uint32)
        finite = (u & np.uint32(0x7FFFFFFF)) < np.uint32(0x7F800000)
        r = np.where(finite, u + np.uint32(0x1000), u) & np.uint32(0xFFFFE000)
        if satfinite:
            r = np.where((r & np.uint32(0x7FFFFFFF)) >= np.uint32(0x7F800000), r - np.uint32(0x2000), r)
        return r.astype(np.uint32)
    flat = np.ascontiguousarray(x).reshape(-1).astype(np.uint64)
    out = np.empty(flat.size, np.uint64)
    eb, mb, bias, special, shift = _fmt_args("tf32")
    core.convert_kernel(flat, *_fmt_args("f32"), False, eb, mb, bias, special, shift, ROUNDING[rounding], False,
                        satfinite, relu, np.uint64(core.nan_bits(eb, mb, shift)), out)
    return out.astype(np.uint32).reshape(x.shape)


def _convert(src, atype, dtype, mode, satfinite, relu, ftz_in=False):
    """Flat uint64 source patterns -> flat destination patterns (uint64)."""
    out = fphost.narrowed(src, atype, dtype, mode == core.RN and not (satfinite or relu or ftz_in),
                          lambda r: _soft_convert(src[r], atype, dtype, mode, satfinite, relu, ftz_in))
    return out if out is not None else _soft_convert(src, atype, dtype, mode, satfinite, relu, ftz_in)


def _soft_convert(src, atype, dtype, mode, satfinite, relu, ftz_in=False):
    """_convert on the bit-level kernel."""
    out = np.empty(src.size, np.uint64)
    deb, dmb, dbias, dspecial, dshift = _fmt_args(dtype)
    if dspecial == NONE:  # no NaN: NaN converts to +max finite (CUDA's cuda_fp6.hpp / cuda_fp4.hpp)
        nan_out = np.uint64(core.pack_max(0, deb, dmb, dspecial, dshift))
    else:
        nan_out = np.uint64(core.nan_bits(deb, dmb, dshift))
    core.convert_kernel(src, *_fmt_args(atype), ftz_in, deb, dmb, dbias, dspecial, dshift, mode, False, satfinite,
                        relu, nan_out, out)
    return out


def _cvt_packed(form, dtype, atype, a, b, rounding, ftz, sat, satfinite, relu):
    _check(not ftz and not sat, "modifier", f"{form}: no .ftz/.sat on packed cvt")
    if dtype == "f16x2" and atype in _UNPACK_TO_F16X2:  # f16x2 from two 8-bit (or 4-bit) values
        _check(rounding == "rn" and not satfinite, "rounding", f"{form}: requires .rn (and takes .relu only)")
        _check(b is None, "b", f"{form}: one source")
        sub = _UNPACK_TO_F16X2[atype]
        w = 8 if sub != "e2m1" else 4
        x = _bits(a, 2 * w, "a").astype(np.uint64)
        flat = x.reshape(-1)
        mask = np.uint64((1 << w) - 1)
        halves = np.concatenate([flat & mask, (flat >> np.uint64(w)) & mask])
        out = _convert(halves, sub, "f16", core.RN, False, relu)
        n = flat.size
        return (out[:n] | (out[n:] << np.uint64(16))).astype(np.uint32).reshape(x.shape)
    sub = _PACK_FROM_F32[dtype]
    if dtype in ("f16x2", "bf16x2"):
        _check(atype == "f32" and b is not None, "type", f"{form}: two f32 sources (a -> upper half)")
        _check(rounding in ("rn", "rz"), "rounding", f"{form}: packed f16/bf16 cvt rounds .rn or .rz")
    else:
        _check(rounding == "rn" and satfinite, "rounding", f"{form}: requires .rn.satfinite")
        _check(atype == "f32" and b is not None or atype == "f16x2" and b is None and sub in ("e4m3", "e5m2"),
               "type", f"{form}: sources are two f32 (a -> upper byte) or one f16x2")
    w = FORMATS[sub][4]
    if atype == "f32":
        hi_src = _bits(a, 32, "a").astype(np.uint64)
        lo_src = _bits(b, 32, "b").astype(np.uint64)
        try:
            hi_src, lo_src = np.broadcast_arrays(hi_src, lo_src)
        except ValueError:
            raise PtxError("operands", "lane counts of a and b differ") from None
        shape = hi_src.shape
        src = np.concatenate([lo_src.reshape(-1), hi_src.reshape(-1)])
    else:
        x = _bits(a, 32, "a").astype(np.uint64)
        shape = x.shape
        src = np.concatenate([x.reshape(-1) & np.uint64(0xFFFF), x.reshape(-1) >> np.uint64(16)])
        atype = "f16"
    out = _convert(src, atype, sub, ROUNDING[rounding], satfinite, relu)
    n = src.size // 2
    packed = out[:n] | (out[n:] << np.uint64(w))
    return packed.astype(UINT[max(2 * w, 8)]).reshape(shape)
