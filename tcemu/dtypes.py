"""Element types as PTX spells them (without the dot), with their storage width in shared memory."""
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from .errors import LayoutError
from .validate import show


@dataclass(frozen=True)
class ElementType:
    name: str
    bits: int  # storage bits per element in shared memory
    kind: str  # "float", "int" or "bits"

    @property
    def per_chunk(self) -> int:
        """Elements per 16-byte core-matrix row: the PTX's T = 128 / sizeof-bits."""
        return 128 // self.bits


_TYPES = [
    ElementType("tf32", 32, "float"),
    ElementType("f32", 32, "float"),
    ElementType("f16", 16, "float"),
    ElementType("bf16", 16, "float"),
    ElementType("e4m3", 8, "float"),
    ElementType("e5m2", 8, "float"),
    ElementType("s8", 8, "int"),
    ElementType("u8", 8, "int"),
    ElementType("s32", 32, "int"),
    ElementType("b1", 1, "bits"),
    ElementType("e2m3", 8, "float"),  # fp6: 16 per 16-byte chunk (kind::f8f6f4 / mxf8f6f4, PTX .b6x16_p32)
    ElementType("e3m2", 8, "float"),
    ElementType("e2m1", 4, "float"),  # fp4, two per byte (kind::mxf4 / mxf4nvf4)
]
DTYPES = {t.name: t for t in _TYPES}

# numpy / ml_dtypes types whose values are those of the named element type: an array of one of these holds,
# element for element, the bits shared memory stores (tf32 in its f32 container; fp4/fp6 in the low bits of
# a byte; b1 as bool). ue8m0 is the block-scale type.
NUMPY_TYPES = {"f32": np.float32, "tf32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
               "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2, "e2m3": ml_dtypes.float6_e2m3fn,
               "e3m2": ml_dtypes.float6_e3m2fn, "e2m1": ml_dtypes.float4_e2m1fn, "ue8m0": ml_dtypes.float8_e8m0fnu,
               "s8": np.int8, "u8": np.uint8, "s32": np.int32, "b1": np.bool_}
SIGNED_INT_DTYPES = ("s8", "s32")

# wgmma multiplicands (PTX 9.7.15.5.1.1); accumulators are f32, f16, s32.
SM90_OPERAND_DTYPES = ("tf32", "f16", "bf16", "e4m3", "e5m2", "s8", "u8", "b1")
# Only 16-bit multiplicands may be MN-major (imm-trans-a/b) on sm90 (PTX 9.7.15.5.1.2).
SM90_MN_MAJOR_DTYPES = ("f16", "bf16")
# tcgen05 multiplicands (PTX 9.7.16, Table 42-44); fp6/fp4 are K-major only (PTX 9.7.16.10.3 lists
# transposes for 8-, 16- and 32-bit elements; CuTe's UMMA descriptor comment agrees).
SM100_OPERAND_DTYPES = ("tf32", "f16", "bf16", "e4m3", "e5m2", "e2m3", "e3m2", "e2m1", "s8", "u8")
SM100_MN_MAJOR_DTYPES = ("tf32", "f16", "bf16", "e4m3", "e5m2", "s8", "u8")
OPERAND_DTYPES = {"sm90": SM90_OPERAND_DTYPES, "sm100": SM100_OPERAND_DTYPES}
MN_MAJOR_DTYPES = {"sm90": SM90_MN_MAJOR_DTYPES, "sm100": SM100_MN_MAJOR_DTYPES}


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
