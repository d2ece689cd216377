"""Swizzle atoms: CuTe's Swizzle<B, M, S> acting on absolute shared-memory byte addresses.

Swizzle<B, M, S> XORs the B-bit field at bit M (the 16-byte chunk, M = 4) with the B-bit
field S bits above it (the 128-byte line, M + S = 7). The hardware takes the upper field
from the *absolute* address, less the descriptor's base offset, modulo 2^B
(traces/wgmma_addresses_*.npz; lead in shared/notes/hardware-leads.md).
"""
from typing import NamedTuple

from numba import njit

from ..core.validate import as_int

ADDRESS_BITS = 32  # shared and tensor-memory addresses fit 32 bits


class _SwizzleFields(NamedTuple):
    bits: int   # B: how many chunk bits are permuted (0 = identity)
    base: int   # M: lowest permuted bit (log2 of the 16-byte chunk)
    shift: int  # S: distance to the bits that select the permutation


class Swizzle(_SwizzleFields):
    """Swizzle<B, M, S> with B, M >= 0, S >= B (CuTe asserts |S| >= B: the two fields must not overlap)
    and M + S + B <= 32."""
    __slots__ = ()

    def __new__(cls, bits: int, base: int, shift: int):
        bits = as_int(bits, "bits", 0, ADDRESS_BITS)
        base = as_int(base, "base", 0, ADDRESS_BITS)
        shift = as_int(shift, "shift", bits, ADDRESS_BITS - base - bits)
        return super().__new__(cls, bits, base, shift)

    @property
    def atom_bytes(self) -> int:
        """Bytes in one swizzled row (the swizzle width, e.g. 128B): the span the permuted bits address."""
        return 1 << (self.base + self.bits) if self.bits else 16

    def __call__(self, addr: int, base_offset: int = 0) -> int:
        addr = as_int(addr, "addr", 0, (1 << ADDRESS_BITS) - 1)
        base_offset = as_int(base_offset, "base_offset", 0, 7)  # the descriptors' 3-bit field
        return int(swizzle_address(addr, self.bits, self.base, self.shift, base_offset))

    def __str__(self) -> str:
        return f"Swizzle<{self.bits},{self.base},{self.shift}>"


@njit(cache=True, inline="always")
def swizzle_address(addr, bits, base, shift, base_offset):
    """addr with bits [base, base+bits) ^= ((addr >> (base+shift)) - base_offset) mod 2^bits."""
    mask = (1 << bits) - 1
    return addr ^ ((((addr >> (base + shift)) - base_offset) & mask) << base)


# sm90 layout types (PTX 9.7.15.5.1.2.2, bits 62-63) and their swizzles (PTX canonical layouts table).
SWIZZLE_NONE = Swizzle(0, 4, 3)
SWIZZLE_32B = Swizzle(1, 4, 3)
SWIZZLE_64B = Swizzle(2, 4, 3)
SWIZZLE_128B = Swizzle(3, 4, 3)
# sm100 "128B with 32-byte atoms" (MN-major only): CuTe's Swizzle<2,5,2>, bits [5,7) ^= bits [7,9).
SWIZZLE_128B_BASE32B = Swizzle(2, 5, 2)
