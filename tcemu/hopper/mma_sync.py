"""mma.sync.aligned (PTX ISA 9.7.14.5.14 "Warp-level matrix multiply-accumulate"): the legal forms tcemu models
and their arithmetic on an sm_90 GPU, every rule measured on an H100 (traces/mma_sync_sm90.npz, 3,956 cases).

Forms (ptxas 13.0, .target sm_90a; .row.col only):
  m16n8k8, m16n8k16   .f16 -> .f16 or .f32 (D's type = C's type), .bf16 -> .f32
  m16n8k4, m16n8k8    .tf32 -> .f32
  m16n8k16, m16n8k32  .s8/.u8 (any mix) -> .s32, optionally .satfinite
  m16n8k16, m16n8k32  .e4m3/.e5m2 (any mix) -> .f32 or .f16 (sm_89+)
  m8n8k4 (sm_80+), m16n8k4, m16n8k8, m16n8k16 (sm_90+)  .f64 (optionally .rn): tcemu.ptx.ops.mma_sync (DMMA)
Arithmetic (what the H100 computed, bit for bit):
  f16/bf16/tf32 (HMMA): one fused dot product over the instruction's whole K plus C, the wgmma unit of
    hopper.wgmma.fdp_unit (exact products, truncation 25 bits below the largest exponent, one rounding: RZ to f32,
    RNE to f16); tf32 operands ignore their low 13 bits.
  e4m3/e5m2: no fp8 tensor-core path for mma.sync on sm_90: ptxas converts the operands to f16 (F2FP, exact) and
    issues two f16 HMMAs from a +0 accumulator, the first over the k with k % 4 < 2 (the low halves of the
    converted registers), the second over the rest, then adds C with FADD (f32) / HADD2 (f16), rounding to nearest
    even; a NaN result is the canonical NaN.
  s8/u8 (IMMA): exact, wrapping mod 2^32, or clamped to s32 with .satfinite.
"""
import re
from typing import NamedTuple

import ml_dtypes
import numpy as np

from ..arith.fdp import decode_operand, fused_dot, integer_dot
from ..arith.formats import decode_int
from ..core.errors import LayoutError
from ..core.validate import show
from ..layout.mma_fragments import gather, scatter
from .wgmma import fdp_unit

__all__ = ["MmaForm", "BITS", "parse_form", "operands", "tensor_core", "mma_sync"]

BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "s8": 8, "u8": 8, "s32": 32, "e4m3": 8, "e5m2": 8, "f64": 64}
_FP8 = ("e4m3", "e5m2")
_INT8 = ("s8", "u8")
# A's type -> (shapes, B's types, accumulator types, least sm)
_TABLE = {"f16": (("m16n8k8", "m16n8k16"), ("f16",), ("f16", "f32"), 80),
          "bf16": (("m16n8k8", "m16n8k16"), ("bf16",), ("f32",), 80),
          "tf32": (("m16n8k4", "m16n8k8"), ("tf32",), ("f32",), 80),
          "s8": (("m16n8k16", "m16n8k32"), _INT8, ("s32",), 80), "u8": (("m16n8k16", "m16n8k32"), _INT8, ("s32",), 80),
          "e4m3": (("m16n8k16", "m16n8k32"), _FP8, ("f32", "f16"), 89),
          "e5m2": (("m16n8k16", "m16n8k32"), _FP8, ("f32", "f16"), 89),
          "f64": (("m8n8k4", "m16n8k4", "m16n8k8", "m16n8k16"), ("f64",), ("f64",), 80)}
# legal PTX that tcemu does not model (PTX 9.7.14.5.14): refused as unsupported, not as a syntax error
UNMODELLED = {"m8n8k4": "the quad-pair m8n8k4 .f16 form", "m8n8k16": "m8n8k16 integer forms",
              "m8n8k32": "4-bit integer forms", "m16n8k64": "4-bit integer forms", "m8n8k128": "b1 forms",
              "m16n8k128": "b1 forms", "m16n8k256": "b1 forms"}


class MmaForm(NamedTuple):
    m: int
    n: int
    k: int
    dtype_d: str
    dtype_a: str
    dtype_b: str
    dtype_c: str
    satfinite: bool
    least_sm: int   # the oldest target ptxas accepts it on

    @property
    def shape(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"

    def words(self, operand: str) -> int:
        """32-bit register words a lane holds of "A", "B", "C" or "D" (an f64 register is two)."""
        rows, cols = {"A": (self.m, self.k), "B": (self.k, self.n), "C": (self.m, self.n), "D": (self.m, self.n)}[
            operand]
        t = {"A": self.dtype_a, "B": self.dtype_b, "C": self.dtype_c, "D": self.dtype_d}[operand]
        return rows * cols * BITS[t] // 1024

    def registers(self, operand: str) -> int:
        """Registers of the operand's vector in PTX (64-bit ones for f64)."""
        return self.words(operand) // (2 if self.dtype_d == "f64" else 1)


def parse_form(modifiers) -> MmaForm:
    """The form of `mma.sync.aligned.<modifiers>` (a list: shape, .row, .col, {.satfinite | .rn}, dtype, atype,
    btype, ctype). LayoutError names the first broken rule (ptxas 13.0's for sm_90a); a legal form tcemu does not
    model is LayoutError("form", "... not modelled ...")."""
    mods = list(modifiers)
    shape = next((p for p in mods if re.fullmatch(r"m\d+n\d+k\d+", p)), None)
    if shape is None:
        raise LayoutError("shape", f"{'.'.join(mods)}: mma.sync needs a shape .mMnNkK")
    types = [p for p in mods if p in BITS]
    if (shape in UNMODELLED and not (shape == "m8n8k4" and "f64" in types)) or \
            any(p.startswith("kind::") or p in ("s4", "u4", "b1", "sp") for p in mods):
        raise LayoutError("form", f"{shape}: {UNMODELLED.get(shape, 'this form')} of mma.sync are not modelled")
    if len(types) != 4:
        raise LayoutError("types", f"mma.sync takes .dtype.atype.btype.ctype, got {show(types)}")
    d, a, b, c = types
    if [p for p in mods if p in ("row", "col")] != ["row", "col"]:
        raise LayoutError("layout", "mma.sync takes .row.col (A row-major, B column-major); ptxas refuses any other "
                                    "layout for these shapes")
    extra = set(mods) - {shape, "row", "col", "satfinite", "rn", *types}
    if extra:
        raise LayoutError("modifier", f"{sorted(extra)} is not an mma.sync modifier")
    if a not in _TABLE:
        raise LayoutError("dtype_a", f"{a} is not an mma.sync multiplicand type ({', '.join(_TABLE)})")
    shapes, btypes, accs, least = _TABLE[a]
    if shape not in shapes:
        raise LayoutError("shape", f"{shape} is not an mma.sync shape for .{a} (allowed: {', '.join(shapes)})")
    if b not in btypes:
        raise LayoutError("dtype_b", f".{b} cannot pair with .{a} (allowed: {', '.join(btypes)})")
    if d not in accs or c not in accs:
        raise LayoutError("dtype_d", f".{d}/.{c} is not an accumulator for .{a} (allowed: {', '.join(accs)})")
    if d != c:
        raise LayoutError("dtype_c", f".dtype must equal .ctype for mma {shape} (.{d} vs .{c}; ptxas 13.0)")
    if "satfinite" in mods and d != "s32":
        raise LayoutError("satfinite", ".satfinite applies to integer (s8/u8 -> s32) mma.sync only")
    if "rn" in mods and d != "f64":
        raise LayoutError("rn", ".rn applies to .f64 mma.sync only")
    m, n, k = (int(x) for x in re.fullmatch(r"m(\d+)n(\d+)k(\d+)", shape).groups())
    if a == "f64" and shape != "m8n8k4":
        least = 90
    return MmaForm(m, n, k, d, a, b, c, "satfinite" in mods, least)


def operands(form: MmaForm, a_words, b_words, c_words):
    """(A m x k, B k x n, C m x n) uint64 bit matrices from every lane's register words (32, words) uint32."""
    return (gather(a_words, "A", form.m, form.n, form.k, BITS[form.dtype_a]),
            gather(b_words, "B", form.m, form.n, form.k, BITS[form.dtype_b]),
            gather(c_words, "C", form.m, form.n, form.k, BITS[form.dtype_c]))


_NARROW = {8: np.uint8, 16: np.uint16, 32: np.uint32}


def _f16_from_fp8(bits, dtype):
    """F2FP.F16.E4M3/E5M2.UNPACK_B: every fp8 value is exact in f16."""
    fp8 = ml_dtypes.float8_e4m3fn if dtype == "e4m3" else ml_dtypes.float8_e5m2
    return bits.astype(np.uint8).view(fp8).astype(np.float16).view(np.uint16)


def _hmma(A, B, C, dtype_a, dtype_d):
    """One HMMA: A (m, k), B (k, n) bit matrices of dtype_a, C (m, n) raw bits of dtype_d."""
    narrow = _NARROW[BITS[dtype_a]]
    Ad = decode_operand(np.ascontiguousarray(A, narrow), dtype_a)
    Bd = decode_operand(np.ascontiguousarray(B.T, narrow), dtype_a)
    return fused_dot(Ad, Bd, decode_operand(C, dtype_d), fdp_unit(dtype_a, dtype_d))


def hmma(A, B, C, dtype_a: str, dtype_d: str) -> np.ndarray:
    """D (m, n) bits of HMMA over the whole K at once: A (m, k), B (k, n) bit matrices of dtype_a (f16, bf16, tf32),
    C (m, n) bits of dtype_d. wmma's m16n16k16, m32n8k16 and m8n32k16 are such a K = 16 product per element
    (traces/wmma_sm90.npz, 98,304 of 98,304 elements)."""
    return _hmma(A, B, C, dtype_a, dtype_d)


def _add_rn(x, y, dtype):
    """FADD / HADD2: x + y rounded to nearest even; NaN results canonical (0x7fffffff, 0x7fff)."""
    t, u = (np.float32, np.uint32) if dtype == "f32" else (np.float16, np.uint16)
    with np.errstate(all="ignore"):
        s = x.view(t) + y.view(t)   # numpy's f16 add rounds the exact f32 sum once more: still correctly rounded
    out = s.view(u).copy()
    out[np.isnan(s)] = 0x7FFFFFFF if dtype == "f32" else 0x7FFF
    return out


def tensor_core(form: MmaForm, A, B, C) -> np.ndarray:
    """D (m, n) raw bits (uint32 / uint16) of an HMMA / IMMA form from bit matrices A (m, k), B (k, n), C (m, n)."""
    a, b, d = form.dtype_a, form.dtype_b, form.dtype_d
    if d == "f64":
        raise LayoutError("dtype_d", "f64 mma.sync is DMMA, a chain of DFMA: tcemu.ptx.ops.mma_sync computes it")
    if d == "s32":
        c = C.astype(np.uint32).view(np.int32)
        r = integer_dot(decode_int(A.astype(np.uint8), a), decode_int(np.ascontiguousarray(B.T).astype(np.uint8), b),
                        c, satfinite=form.satfinite)
        return r.view(np.uint32)
    c = C.astype(_NARROW[BITS[d]])
    if a not in _FP8:
        return _hmma(A, B, c, a, d)
    low = np.flatnonzero(np.arange(form.k) % 4 < 2)
    high = np.flatnonzero(np.arange(form.k) % 4 >= 2)
    A16 = _f16_from_fp8(A, a)
    B16 = _f16_from_fp8(B, b)
    acc = _hmma(A16[:, low], B16[low], np.zeros_like(c), "f16", d)
    acc = _hmma(A16[:, high], B16[high], acc, "f16", d)
    return _add_rn(acc, c, d)


def mma_sync(form: MmaForm, a_words, b_words, c_words) -> np.ndarray:
    """Every lane's D register words (32, words) uint32 of one HMMA / IMMA mma.sync."""
    A, B, C = operands(form, a_words, b_words, c_words)
    return scatter(tensor_core(form, A, B, C), form.m, form.n, BITS[form.dtype_d])
