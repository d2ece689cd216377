"""PTX fundamental types (PTX ISA 5.2): width, kind and the numpy container of each, read from the one type table
(tcemu.arith.dtypes.TYPE_TABLE).

Values move through the interpreter as raw bit patterns in unsigned containers (uint8/16/32/64, bool for
predicates); an instruction views them as signed or floating types itself.
"""
from typing import NamedTuple

import numpy as np

from ..arith.dtypes import CONTAINER, FLOAT, MASKS, SIGNED, TYPE_TABLE  # noqa: F401 (FLOAT, MASKS: for ops)
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


TYPES = {r.name: PtxType(r.name, r.bits, r.kind) for r in TYPE_TABLE.values() if r.ptx}


def ptx_type(name: str, field: str = "type") -> PtxType:
    t = TYPES.get(name.lstrip("."))
    if t is None:
        raise PtxError(field, f"{show(name)} is not a PTX fundamental type")
    return t


def is_type(name: str) -> bool:
    return name.lstrip(".") in TYPES


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
