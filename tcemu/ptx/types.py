"""PTX fundamental types (PTX ISA 5.2): width, kind and the numpy container of each.

Values move through the interpreter as raw bit patterns in unsigned containers (uint8/16/32/64, bool for
predicates); an instruction views them as signed or floating types itself.
"""
from typing import NamedTuple

import numpy as np

from ..core.validate import show
from .errors import PtxError


class PtxType(NamedTuple):
    name: str
    bits: int
    kind: str  # "b" untyped, "u" unsigned, "s" signed, "f" float, "pred"

    @property
    def signed(self) -> bool:
        return self.kind == "s"

    @property
    def container(self):
        return CONTAINER[self.bits]


CONTAINER = {1: np.bool_, 8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
SIGNED = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
FLOAT = {32: np.float32, 64: np.float64}

TYPES = {"pred": PtxType("pred", 1, "pred")}
for _bits in (8, 16, 32, 64):
    for _kind in "bus":
        TYPES[f"{_kind}{_bits}"] = PtxType(f"{_kind}{_bits}", _bits, _kind)
TYPES["b128"] = PtxType("b128", 128, "b")
for _name, _bits in (("f16", 16), ("bf16", 16), ("f32", 32), ("f64", 64), ("f16x2", 32), ("bf16x2", 32),
                     ("tf32", 32), ("f32x2", 64), ("e4m3", 8), ("e5m2", 8), ("e4m3x2", 16), ("e5m2x2", 16), ("e2m3x2", 16),
                     ("e3m2x2", 16), ("e2m1x2", 8), ("ue8m0x2", 16), ("e4m3x4", 32), ("e5m2x4", 32)):
    TYPES[_name] = PtxType(_name, _bits, "f")


def ptx_type(name: str, field: str = "type") -> PtxType:
    t = TYPES.get(name.lstrip("."))
    if t is None:
        raise PtxError(field, f"{show(name)} is not a PTX fundamental type")
    return t


def is_type(name: str) -> bool:
    return name.lstrip(".") in TYPES


MASKS = {8: 0xFF, 16: 0xFFFF, 32: 0xFFFFFFFF, 64: 0xFFFFFFFFFFFFFFFF}


def to_signed(bits: np.ndarray, width: int) -> np.ndarray:
    """Two's-complement view of `width`-bit patterns held in their unsigned container."""
    return bits.view(SIGNED[width]) if bits.dtype.itemsize * 8 == width else \
        bits.astype(CONTAINER[width]).view(SIGNED[width])


def resize(bits: np.ndarray, from_bits: int, to_bits: int, signed: bool) -> np.ndarray:
    """`from_bits`-wide patterns in a `to_bits` container: truncated, or zero/sign-extended (PTX 6.4.2 ld/st/cvt
    operand size rules)."""
    if from_bits == to_bits:
        return bits
    if to_bits < from_bits:
        return bits.astype(CONTAINER[to_bits])
    if signed:
        return to_signed(bits, from_bits).astype(SIGNED[to_bits]).view(CONTAINER[to_bits])
    return bits.astype(CONTAINER[to_bits])
