"""cvt with a floating-point side (PTX ISA 9.7.9.21): float <-> float (packed x2 forms too), float <-> int.

Every conversion rounds once from the exact source value (tcemu.formats.encode); packed forms put the
value converted from the FIRST source in the UPPER half (PTX: "a ... stored in the upper half of d").
"""
import numpy as np

from .. import parser as P
from ...formats import decode, encode
from ..errors import PtxSyntaxError, PtxUnsupported
from ..types import CONTAINER, MASKS, SIGNED, TYPES

_ENC = {"rn": "rne", "rz": "rz", "rna": "rna", None: "rne"}
_SCALAR = {"f16": "f16", "bf16": "bf16", "f32": "f32", "tf32": "tf32", "e4m3": "e4m3", "e5m2": "e5m2"}
_PACKED = {"f16x2": ("f16", 16), "bf16x2": ("bf16", 16), "e4m3x2": ("e4m3", 8), "e5m2x2": ("e5m2", 8)}


def _values(bits, name):
    """Exact float64 values of source patterns."""
    if name == "f64":
        return bits.view(np.float64).copy()
    return decode(bits.astype(np.int64) & MASKS[TYPES[name].bits] if TYPES[name].bits <= 32 else bits, name)


def _encode(x, name, rnd, sat_finite, relu, ftz):
    if relu:
        x = np.where(np.isnan(x), x, np.maximum(x, 0.0))
    if name == "f64":
        return x.astype(np.float64).view(np.uint64)
    # .satfinite: +-inf and overflow give +-max finite, NaN stays NaN (formats.encode's saturate)
    return encode(x, name, _ENC[rnd], saturate=bool(sat_finite)).astype(np.uint64)


def c_cvt_float(ins, prog, pc, mods, dt, st):
    rnd = mods.one_of(("rn", "rz", "rm", "rp", "rna", "rs", "rni", "rzi", "rmi", "rpi"))
    sat = "sat" in mods
    satfinite = "satfinite" in mods
    relu = "relu" in mods
    ftz = "ftz" in mods
    ops = ins.operands
    if rnd in ("rm", "rp", "rs"):
        mods.unsupported(f".{rnd} rounding is not modelled yet")
    if dt.name in _PACKED:
        elem, w = _PACKED[dt.name]
        if st.name == "f32":
            if len(ops) != 3:
                raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} takes d, a, b")
            ga, gb = prog.read(ops[1], TYPES["f32"], ins), prog.read(ops[2], TYPES["f32"], ins)
            sd = prog.write(ops[0], dt, ins)
            ct = CONTAINER[dt.bits]

            def pack(W, m):
                hi = _encode(_values(ga(W), "f32"), elem, rnd, satfinite, relu, ftz)
                lo = _encode(_values(gb(W), "f32"), elem, rnd, satfinite, relu, ftz)
                sd(W, ((hi << np.uint64(w)) | lo).astype(ct), m)
            return pack
        mods.unsupported(f"cvt to .{dt.name} from .{st.name}")
    if st.name in _PACKED:
        if dt.name in _PACKED:  # e.g. cvt.rn.f16x2.e4m3x2: element-wise, exact
            selem, sw = _PACKED[st.name]
            delem, dw = _PACKED[dt.name]
            ga, sd = prog.read(ops[1], st, ins), prog.write(ops[0], dt, ins)

            def unpack(W, m):
                v = ga(W).astype(np.int64)
                lo = _encode(_values((v & ((1 << sw) - 1)).astype(np.uint64), selem), delem, rnd, satfinite, relu, ftz)
                hi = _encode(_values(((v >> sw) & ((1 << sw) - 1)).astype(np.uint64), selem), delem, rnd, satfinite,
                             relu, ftz)
                sd(W, ((hi << np.uint64(dw)) | lo).astype(CONTAINER[dt.bits]), m)
            return unpack
        mods.unsupported(f"cvt from .{st.name} to .{dt.name}")
    d, a = ops if len(ops) == 2 else (None, None)
    if d is None:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} takes d, a")
    ga, sd = prog.read(a, st, ins), prog.write(d, dt, ins)
    if dt.kind == "f" and st.kind == "f":
        if dt.name not in _SCALAR and dt.name != "f64" or st.name not in _SCALAR and st.name != "f64":
            mods.unsupported(f"cvt .{st.name} -> .{dt.name}")
        if rnd in ("rni", "rzi", "rmi", "rpi"):  # round to integral value in the same type
            f = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[rnd]

            def integral(W, m):
                x = _values(ga(W), st.name)
                sd(W, _encode(f(x), dt.name, "rn", False, False, ftz).astype(CONTAINER[dt.bits]), m)
            return integral

        def op(W, m):
            x = _values(ga(W), st.name)
            if ftz and st.name == "f32":
                x = np.where(np.abs(x) < 2.0**-126, np.copysign(0.0, x), x)
            if sat:
                x = np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0))
            r = _encode(x, dt.name, rnd, satfinite, relu, ftz)
            if ftz and dt.name == "f32":
                xr = _values(r.astype(np.uint32), "f32")
                r = np.where(np.abs(xr) < 2.0**-126, np.where(np.signbit(xr), 0x80000000, 0), r).astype(np.uint64)
            sd(W, r.astype(CONTAINER[dt.bits]), m)
        return op
    if st.kind == "f":  # float -> integer: round per .rXi, NaN -> 0, saturate to the range (PTX 9.7.9.21)
        f = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}.get(rnd or "rzi")
        if f is None:
            raise PtxSyntaxError(ins.line, ins.col, "float-to-integer cvt takes .rni/.rzi/.rmi/.rpi")
        lo, hi = (-(2 ** (dt.bits - 1)), 2 ** (dt.bits - 1) - 1) if dt.signed else (0, 2 ** dt.bits - 1)

        def to_int(W, m):
            x = _values(ga(W), st.name)
            if ftz:
                x = np.where(np.abs(x) < 2.0**-126, 0.0, x)
            r = np.where(np.isnan(x), 0.0, f(x))
            r = np.clip(r, lo, hi)
            if dt.bits == 64:
                out = np.array([int(v) & MASKS[64] for v in r], np.uint64)
            else:
                out = r.astype(np.int64).astype(SIGNED[dt.bits] if dt.signed else CONTAINER[dt.bits])
                out = out.view(CONTAINER[dt.bits])
            sd(W, out, m)
        return to_int
    # integer -> float, rounded once
    def from_int(W, m):
        v = ga(W)
        if st.bits == 64:
            x = [int(i) for i in (v.view(np.int64) if st.signed else v)]
            if dt.name == "f64":
                r = np.array([float(i) for i in x], np.float64).view(np.uint64)  # Python rounds to nearest even
            else:
                mods.unsupported("64-bit integer to narrow float")
        else:
            xv = (v.view(SIGNED[st.bits]) if st.signed else v).astype(np.float64)  # exact
            r = _encode(xv, dt.name, rnd, False, False, ftz)
        sd(W, r.astype(CONTAINER[dt.bits]), m)
    return from_int


_ = (P, PtxUnsupported)
