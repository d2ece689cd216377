"""Types as PTX spells them (without the dot), in one table: width, kind, whether PTX has the type, storage width as
a tensor-core operand in shared memory, the numpy type holding its values. The element types (DTYPES, NUMPY_TYPES),
the number formats' widths (formats.FloatFormat.bits, formats.INT_FORMATS) and the PTX interpreter's fundamental
types (tcemu.ptx.types.TYPES) are views of it."""
from dataclasses import dataclass
from typing import NamedTuple, Optional

import ml_dtypes
import numpy as np

from ..core.errors import LayoutError
from ..core.validate import as_bool, show


class TypeRow(NamedTuple):
    name: str
    bits: int              # width of one value: the PTX type's (PTX ISA 5.2.2), the number format's (fp6 6, fp4 4)
    kind: str              # "b" untyped, "u" unsigned, "s" signed, "f" float, "pred"
    ptx: bool              # a PTX fundamental type (tcemu.ptx.types.TYPES)
    smem_bits: int         # storage bits of one tensor-core operand element in shared memory (0: not an operand)
    numpy: Optional[type]  # numpy / ml_dtypes type with the same values, element for element (None: none)


def _row(name, bits, kind, ptx=True, smem_bits=0, numpy=None):
    return TypeRow(name, bits, kind, ptx, smem_bits, numpy)


_INT_OPERANDS = {"s8": np.int8, "u8": np.uint8, "s32": np.int32}  # wgmma / tcgen05 integer multiplicands, s32 D
TYPE_TABLE = {r.name: r for r in [
    _row("pred", 1, "pred"),
    *(_row(f"{k}{w}", w, k, smem_bits=w if f"{k}{w}" in _INT_OPERANDS else 0, numpy=_INT_OPERANDS.get(f"{k}{w}"))
      for w in (8, 16, 32, 64) for k in "bus"),
    _row("b128", 128, "b"),
    _row("b1", 1, "b", ptx=False, smem_bits=1, numpy=np.bool_),  # wgmma .b1 (bmma): bits, 128 per 16-byte chunk
    _row("tf32", 32, "f", smem_bits=32, numpy=np.float32),  # an f32 container, its low 13 bits ignored
    _row("f32", 32, "f", smem_bits=32, numpy=np.float32),
    _row("f16", 16, "f", smem_bits=16, numpy=np.float16),
    _row("bf16", 16, "f", smem_bits=16, numpy=ml_dtypes.bfloat16),
    _row("e4m3", 8, "f", smem_bits=8, numpy=ml_dtypes.float8_e4m3fn),
    _row("e5m2", 8, "f", smem_bits=8, numpy=ml_dtypes.float8_e5m2),
    # fp6: 16 per 16-byte chunk (kind::f8f6f4 / mxf8f6f4, PTX .b6x16_p32); fp4: two per byte (kind::mxf4 / mxf4nvf4)
    _row("e2m3", 6, "f", ptx=False, smem_bits=8, numpy=ml_dtypes.float6_e2m3fn),
    _row("e3m2", 6, "f", ptx=False, smem_bits=8, numpy=ml_dtypes.float6_e3m2fn),
    _row("e2m1", 4, "f", ptx=False, smem_bits=4, numpy=ml_dtypes.float4_e2m1fn),
    # block-scale types (OCP MX v1.0 5.4.1; ue4m3: e4m3 in a byte whose sign bit is ignored)
    _row("ue8m0", 8, "f", ptx=False, numpy=ml_dtypes.float8_e8m0fnu),
    _row("ue4m3", 8, "f", ptx=False),
    _row("f64", 64, "f"),
    *(_row(n, w, "f") for n, w in (("f16x2", 32), ("bf16x2", 32), ("f32x2", 64), ("e4m3x2", 16), ("e5m2x2", 16),
                                   ("e2m3x2", 16), ("e3m2x2", 16), ("e2m1x2", 8), ("ue8m0x2", 16), ("e4m3x4", 32),
                                   ("e5m2x4", 32))),  # packed pairs and quads (cvt, PTX 9.7.9.21)
]}

# numpy containers of raw bit patterns by width (the PTX interpreter's registers, tcemu.matmul's raw operands)
CONTAINER = {1: np.bool_, 8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
SIGNED = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
FLOAT = {32: np.float32, 64: np.float64}
MASKS = {8: 0xFF, 16: 0xFFFF, 32: 0xFFFFFFFF, 64: 0xFFFFFFFFFFFFFFFF}


@dataclass(frozen=True)
class ElementType:
    name: str
    bits: int  # storage bits per element in shared memory
    kind: str  # "float", "int" or "bits"

    @property
    def per_chunk(self) -> int:
        """Elements per 16-byte core-matrix row: the PTX's T = 128 / sizeof-bits."""
        return 128 // self.bits


_KIND_WORDS = {"f": "float", "s": "int", "u": "int", "b": "bits"}
DTYPES = {r.name: ElementType(r.name, r.smem_bits, _KIND_WORDS[r.kind]) for r in TYPE_TABLE.values() if r.smem_bits}

# numpy / ml_dtypes types whose values are those of the named element type: an array of one of these holds,
# element for element, the bits shared memory stores (tf32 in its f32 container; fp4/fp6 in the low bits of
# a byte; b1 as bool). ue8m0 is the block-scale type.
NUMPY_TYPES = {r.name: r.numpy for r in TYPE_TABLE.values() if r.numpy is not None}
SIGNED_INT_DTYPES = ("s8", "s32")

# wgmma multiplicands (PTX 9.7.15.5.1.1); accumulators are f32, f16, s32.
SM90_OPERAND_DTYPES = ("tf32", "f16", "bf16", "e4m3", "e5m2", "s8", "u8", "b1")
# Only 16-bit multiplicands may be MN-major (imm-trans-a/b) on sm90 (PTX 9.7.15.5.1.2).
SM90_MN_MAJOR_DTYPES = ("f16", "bf16")
# tcgen05 multiplicands (PTX 9.7.16, Table 42-44); fp6/fp4 are K-major only (PTX 9.7.16.10.3 lists
# transposes for 8-, 16- and 32-bit elements; CuTe's UMMA descriptor comment agrees).
SM100_OPERAND_DTYPES = ("tf32", "f16", "bf16", "e4m3", "e5m2", "e2m3", "e3m2", "e2m1", "s8", "u8")
SM100_MN_MAJOR_DTYPES = ("tf32", "f16", "bf16", "e4m3", "e5m2", "s8", "u8")
OPERAND_DTYPES = {"sm90": SM90_OPERAND_DTYPES, "sm100": SM100_OPERAND_DTYPES, "sm103": SM100_OPERAND_DTYPES}
MN_MAJOR_DTYPES = {"sm90": SM90_MN_MAJOR_DTYPES, "sm100": SM100_MN_MAJOR_DTYPES, "sm103": SM100_MN_MAJOR_DTYPES}


def element_type(name: str, allowed=SM90_OPERAND_DTYPES) -> ElementType:
    if not isinstance(name, str) or name.lstrip(".") not in allowed:
        raise LayoutError("dtype", f"{show(name)} is not a multiplicand type; expected one of {', '.join(allowed)}")
    return DTYPES[name.lstrip(".")]


def parse_major(major) -> bool:
    """True for K-major, False for MN-major ('M' and 'N' name MN-major of A and B)."""
    if not isinstance(major, str) or len(major) > 20:
        raise LayoutError("major", f"{show(major)} is not a major-ness; expected 'K' or 'MN'")
    text = major.strip().upper().removesuffix("-MAJOR")
    if text == "K":
        return True
    if text in ("MN", "M", "N"):
        return False
    raise LayoutError("major", f"{show(major)} is not a major-ness; expected 'K' or 'MN'")


# ---- fp4 / fp6 in shared memory: packed or padded (README, "fp4 and fp6 in shared memory") ----------------
# One rule for every function that places or reads them (SharedMemory.read_operand / write_operand,
# check.check_operand / suggest_descriptor, explain, pictures, tma): the dtype names the values (e2m1, e2m3,
# e3m2) and `padded` says how they lie in shared memory.
#   packed (padded=False): e2m1 two per byte, even k in the low nibble; what kind::mxf4 / mxf4nvf4 read
#     (CuTe's float_e2m1_t) and TMA's 16U4_ALIGN8B writes. An element's address is the byte that holds it.
#   padded (padded=True): each 16-byte chunk holds 16 values in its first 8 (fp4) or 12 (fp6) bytes, then
#     padding (PTX .b4x16_p64 / .b6x16_p32); what kind::f8f6f4 / mxf8f6f4 read (CuTe's
#     float_e2m1_unpacksmem_t) and TMA's 16U4_ALIGN16B / 16U6_ALIGN16B write. An element's address is its 8-bit
#     slot (chunk + index in the chunk): the operand is laid out, and addressed, like a u8 operand.
#   padded=None: what an instruction descriptor's kind says when one is given; otherwise fp6 padded (its only
#     form) and e2m1 packed.
FP4_FP6 = {"e2m1": 4, "e2m3": 6, "e3m2": 6}  # value bits
PADDED_KINDS, PACKED_KINDS = ("f8f6f4", "mxf8f6f4"), ("mxf4", "mxf4nvf4")


def is_padded(dtype, padded=None, *, kind=None, error=LayoutError) -> bool:
    """Whether `dtype`'s elements lie padded (16 per 16 bytes) by the rule above; raises `error` on a form that
    does not exist (packed fp6, padded b1 or byte types) or that contradicts the kind."""
    name = dtype.lstrip(".") if isinstance(dtype, str) else None
    if padded is not None:
        padded = as_bool(padded, "padded", error)
    if name not in FP4_FP6:  # byte types are one per byte in every kind: padded means nothing for them
        if padded and name == "b1":
            raise error("padded", "b1 has no padded form: only fp4 / fp6 (e2m1, e2m3, e3m2) do")
        return False
    need = None if kind not in PADDED_KINDS + PACKED_KINDS else kind in PADDED_KINDS
    if padded is None:
        padded = need if need is not None else FP4_FP6[name] == 6
    elif need is not None and bool(padded) != need:
        raise error("padded", f".kind::{kind} reads {name} {'padded (16 values then padding per 16 bytes)' if need else 'packed (two per byte)'}, "
                              f"not {'padded' if padded else 'packed'}")
    if FP4_FP6[name] == 6 and not padded:
        raise error("padded", f"{name} lives in shared memory only in the padded 16-per-16-byte form (PTX .b6x16_p32)")
    return bool(padded)


def placement_dtype(dtype, padded=None, *, kind=None, major=None) -> str:
    """The element type whose addressing gives `dtype`'s placement: 'u8' (byte slots) for padded e2m1, the dtype
    itself otherwise (fp6 types are addressed as slots already). fp4 / fp6 are K-major only (PTX 9.7.16.10.3)."""
    if not isinstance(dtype, str):
        raise LayoutError("dtype", f"must be a type name, got {show(dtype)}")
    name = dtype.lstrip(".")
    padded = is_padded(name, padded, kind=kind)
    if name in FP4_FP6 and major is not None and not parse_major(major):
        raise LayoutError("major", f"{name} must be K-major (PTX 9.7.16.10.3: transposes take 8-, 16- and 32-bit "
                                   "elements only)")
    return "u8" if name == "e2m1" and padded else name


def form_text(dtype, padded) -> str:
    """`dtype` with its form, for messages: 'e2m1 padded', 'e2m1 packed', 'bf16'."""
    if dtype not in FP4_FP6:
        return dtype
    return f"{dtype} {'padded' if padded else 'packed'}"
