"""Element types as PTX spells them (without the dot), with their storage width in shared memory."""
from dataclasses import dataclass

from .errors import LayoutError


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
        raise LayoutError("dtype", f"{name!r} is not a multiplicand type; expected one of {', '.join(allowed)}")
    return DTYPES[name.lstrip(".")]


def parse_major(major) -> bool:
    """True for K-major, False for MN-major ('M' and 'N' name MN-major of A and B)."""
    text = str(major).strip().upper().removesuffix("-MAJOR")
    if text == "K":
        return True
    if text in ("MN", "M", "N"):
        return False
    raise LayoutError("major", f"{major!r} is not a major-ness; expected 'K' or 'MN'")
