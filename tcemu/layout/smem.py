"""The CTA's shared memory as a byte array, addressed absolutely (as descriptors address it)."""
import numpy as np

from .addressing import operand_addresses, resolved_addresses
from ..core.arch import SMEM_WINDOW, check_arch
from ..arith.dtypes import (NUMPY_TYPES, OPERAND_DTYPES, SIGNED_INT_DTYPES, SM90_OPERAND_DTYPES, element_type,
                            is_padded, parse_major, placement_dtype)
from ..core.errors import SharedMemoryError
from ..core.validate import as_array, as_bool, as_int, as_int_array, as_typed_values, as_uint_bits, is_int, show

SUBBYTE = {"b1": 1, "e2m1": 4, "e2m3": 6, "e3m2": 6}  # value bits of the operand types narrower than a byte
_LE = {8: np.dtype("u1"), 16: np.dtype("<u2"), 32: np.dtype("<u4")}  # shared memory is little-endian


def element_bits(values, dtype: str, bits: int, field: str = "values") -> np.ndarray:
    """int64 bit patterns of `values` stored as `dtype`: an array of the type's numpy/ml_dtypes type
    (dtypes.NUMPY_TYPES), or integer bit patterns (validate.as_typed_values)."""
    return as_typed_values(values, bits, field, NUMPY_TYPES.get(dtype), dtype in SIGNED_INT_DTYPES, dtype,
                           SharedMemoryError)


def _address(value, field: str) -> int:
    return as_int(value, field, -(1 << 62), 1 << 62, SharedMemoryError)


def _address_array(addresses, field: str = "addresses") -> np.ndarray:
    return as_int_array(addresses, field, -(1 << 62), 1 << 62, SharedMemoryError)


def _raw_bytes(data) -> np.ndarray:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(data), np.uint8)
    arr = as_array(data, "data", SharedMemoryError)
    if arr.dtype.kind not in "biufV" or arr.dtype.hasobject:
        raise SharedMemoryError("data", f"must be bytes or a numeric array, got {arr.dtype}")
    return np.ascontiguousarray(arr).reshape(-1).view(np.uint8)


class SharedMemory:
    """Byte-addressed shared memory of one CTA: `arch`'s window (sm90: 228 KiB), zero-filled."""

    def __init__(self, arch: str = "sm90", data=None):
        self.arch = check_arch(arch)
        # data, and written (operand reads of unwritten bytes are errors), are made on first use (__getattr__):
        # the interpreter makes one SharedMemory per CTA, and many CTAs never touch theirs
        if data is not None:
            self.write(0, data)

    def __getattr__(self, name):
        if name not in ("data", "written") or "arch" not in self.__dict__:
            raise AttributeError(name)
        arr = np.zeros(SMEM_WINDOW[self.arch], np.uint8 if name == "data" else bool)
        setattr(self, name, arr)
        return arr

    @property
    def size(self) -> int:
        return SMEM_WINDOW[self.arch]

    def _check(self, lo: int, hi: int, what: str):
        if lo < 0 or hi > self.size:
            raise SharedMemoryError(what, f"bytes [{lo:#x}, {hi:#x}) fall outside the {self.arch} shared window "
                                          f"[0, {self.size:#x})")

    def read(self, address: int, nbytes: int, *, strict: bool = True) -> np.ndarray:
        """A copy of `nbytes` bytes from `address`. strict (the default): every byte must have been written
        (SharedMemoryError names the first that was not); strict=False reads them as they are (a raw dump:
        zero unless written), as the hardware would return stale bytes."""
        address, nbytes = _address(address, "address"), _address(nbytes, "nbytes")
        if nbytes < 0:
            raise SharedMemoryError("nbytes", f"must not be negative, got {nbytes}")
        self._check(address, address + nbytes, "address")
        if as_bool(strict, "strict", SharedMemoryError):
            self._check_bytes_written(np.arange(address, address + nbytes), "address")
        return self.data[address:address + nbytes].copy()

    def _check_bytes_written(self, spots, field: str):
        """SharedMemoryError naming the first byte in `spots` (in order) that was never written."""
        unwritten = ~self.written[spots]
        if unwritten.any():
            first = int(spots.ravel()[np.argmax(unwritten.ravel())])
            raise SharedMemoryError(field, f"byte {first:#x} was never written ({int(unwritten.sum())} unwritten "
                                           "bytes; pass strict=False to read raw bytes)")

    def write(self, address: int, data) -> None:
        address, raw = _address(address, "address"), _raw_bytes(data)
        self._check(address, address + raw.size, "address")
        self.data[address:address + raw.size] = raw
        self.written[address:address + raw.size] = True

    def _element_addresses(self, addresses, bits: int) -> np.ndarray:
        addresses = _address_array(addresses)
        nbytes = bits // 8
        if addresses.size:
            self._check(int(addresses.min()), int(addresses.max()) + nbytes, "addresses")
            if np.any(addresses % nbytes):
                bad = int(addresses.ravel()[np.argmax(addresses.ravel() % nbytes != 0)])
                raise SharedMemoryError("addresses", f"{bad:#x} is not aligned to the {nbytes}-byte element size")
        return addresses

    def gather(self, addresses, dtype: str, *, strict: bool = True) -> np.ndarray:
        """Raw bit patterns (uint8/16/32) of the elements at byte `addresses` (any shape). strict (the
        default): every byte read must have been written, as for read()."""
        bits = _byte_element_bits(dtype)
        addresses = self._element_addresses(addresses, bits)
        if as_bool(strict, "strict", SharedMemoryError):
            self._check_bytes_written(addresses[..., None] + np.arange(bits // 8), "addresses")
        return self.data.view(_LE[bits])[addresses // (bits // 8)]  # aligned: one typed gather

    def scatter(self, addresses, values, dtype: str) -> None:
        """Store `values` at byte `addresses`: an array of the element type's numpy type (dtypes.NUMPY_TYPES),
        or integer bit patterns; broadcast to the addresses' shape."""
        bits = _byte_element_bits(dtype)
        addresses = self._element_addresses(addresses, bits)
        raw = element_bits(values, dtype, bits)
        try:
            raw = np.broadcast_to(raw, addresses.shape)
        except ValueError:
            raise SharedMemoryError("values", f"shape {raw.shape} does not match the addresses {addresses.shape}") \
                from None
        nbytes = bits // 8   # aligned (checked above): one typed store of the elements and of their written flags
        self.data.view(_LE[bits])[addresses // nbytes] = raw
        self.written.view(np.uint8).view(_LE[bits])[addresses // nbytes] = int.from_bytes(b"\x01" * nbytes, "little")

    def scatter_bytes(self, addresses, raw) -> None:
        """Store element i's bytes raw[i] (shape (n, element bytes), values 0..255) from byte address addresses[i]."""
        addresses = _address_array(addresses).ravel()
        raw = as_uint_bits(raw, 8, "raw", SharedMemoryError, ndim=2)
        if raw.shape[0] != addresses.size or not 1 <= raw.shape[1] <= 16:
            raise SharedMemoryError("raw", f"must have shape ({addresses.size}, element bytes 1..16), got {raw.shape}")
        spots = addresses[:, None] + np.arange(raw.shape[1])
        if spots.size:
            self._check(int(spots.min()), int(spots.max()) + 1, "addresses")
        self.data[spots] = raw
        self.written[spots] = True

    def read_operand(self, desc, *, rows: int, k: int, dtype: str, major: str = "K", padded=None, keep_rows=None,
                     arch=None) -> np.ndarray:
        """The (rows, k) operand the descriptor describes, as raw bit patterns (b1: 0/1 per element).

        Sub-byte elements pack from the low bits of their byte: b1 column k is bit k % 8 (see README). fp4 / fp6
        (sm100) follow dtypes' packed / padded rule (README, "fp4 and fp6 in shared memory"): packed e2m1 two
        per byte, even k in the low nibble (kind::mxf4*); padded (padded=True, kind::f8f6f4 / mxf8f6f4, and
        always for fp6) 16 values then padding per 16-byte chunk (PTX .b4x16_p64 / .b6x16_p32), addressed like
        8-bit elements. padded is None or a bool.

        keep_rows: a (rows,) bool mask; the other rows are neither checked nor read (they come back 0): B columns a
        zero-column mask zeroes, or rows before a column shift (tcgen05.mma.ws). arch: "sm103" reads LBO-mode-1
        descriptors of a Blackwell shared memory (addressing.py)."""
        padded = None if padded is None else as_bool(padded, "padded", SharedMemoryError)
        dtype = element_type(dtype, allowed=OPERAND_DTYPES[self.arch]).name
        arch = self._reading_arch(arch)
        keep = self._keep(keep_rows, rows)
        if dtype in SUBBYTE:
            return self._subbyte(desc, rows, k, dtype, major, padded, None, keep, arch)
        addrs = resolved_addresses(desc, rows=rows, k=k, dtype=dtype, major=major, arch=arch)
        bits = element_type(dtype).bits
        full = int.from_bytes(b"\x01" * (bits // 8), "little")  # every byte of the element written
        self._check_written((self.written.view(np.uint8).view(_LE[bits])[addrs // (bits // 8)] != full) & keep, addrs)
        out = self.gather(addrs, dtype, strict=False)  # checked element by element just above (kept rows)
        return np.where(keep, out, 0).astype(out.dtype)

    def _reading_arch(self, arch):
        if arch is None or (isinstance(arch, str) and arch == self.arch):
            return self.arch
        if isinstance(arch, str) and {arch, self.arch} == {"sm100", "sm103"}:
            return arch
        raise SharedMemoryError("arch", f"{show(arch)} cannot read {self.arch} shared memory")

    @staticmethod
    def _keep(keep_rows, rows):
        if keep_rows is None:
            return np.ones((1, 1), bool)
        keep = as_array(keep_rows, "keep_rows", SharedMemoryError)
        if keep.dtype.kind != "b" or not is_int(rows) or keep.shape != (int(rows),):
            raise SharedMemoryError("keep_rows", f"must be a ({show(rows)},) bool mask, got {show(keep)}")
        return keep[:, None]

    @staticmethod
    def _check_written(unwritten, addrs):
        if unwritten.any():
            r, c = np.argwhere(unwritten)[0]
            raise SharedMemoryError("desc", f"element ({r}, {c}) reads {int(addrs[r, c]):#x}, which was never "
                                            f"written ({int(unwritten.sum())} such elements)")

    def _subbyte(self, desc, rows, k, dtype, major, padded, values, keep=True, arch=None):
        """Read (values None) or write the sub-byte operand: the bytes each element spans and its shift."""
        width = SUBBYTE[dtype]
        padded = is_padded(dtype, padded, error=SharedMemoryError)  # dtypes: the packed / padded rule
        addrs = operand_addresses(desc, rows=rows, k=k, dtype=placement_dtype(dtype, padded, major=major),
                                  major=major, arch=arch or self.arch)
        if padded:  # element i of a 16-byte chunk: bits [width*i, width*(i+1)) of the chunk
            bit = width * (addrs & 15)
            lo, shift = (addrs & ~15) + (bit >> 3), bit & 7
        else:       # packed from the low bits: b1 bit k % 8; e2m1 even k low (MMA-Sim's order; not silicon)
            lo, shift = addrs, np.broadcast_to(np.arange(k) * width % 8, addrs.shape)
        hi = lo + ((shift + width - 1) >> 3)  # fp6 may straddle two bytes
        mask = (1 << width) - 1
        if values is None:
            self._check_written(~(self.written[lo] & self.written[hi]) & keep, addrs)
            word = self.data[lo].astype(np.int64) | self.data[hi].astype(np.int64) << 8
            return np.where(keep, (word >> shift) & mask, 0).astype(np.uint8)
        bits = element_bits(values, dtype, width)
        for spot, part in ((lo, (bits << shift) & 0xFF), (hi, (bits << shift) >> 8)):
            keep = ~((mask << shift) >> (8 if spot is hi else 0)) & 0xFF
            np.bitwise_and.at(self.data, spot, keep.astype(np.uint8))
            np.bitwise_or.at(self.data, spot, part.astype(np.uint8))
            self.written[spot] = True

    def write_operand(self, desc, values, *, dtype: str, major: str = "K", padded=None) -> None:
        """Lay the (rows, k) matrix `values` into shared memory where the descriptor reads it: an array of
        the element type's numpy/ml_dtypes type (dtypes.NUMPY_TYPES), or integer bit patterns."""
        values = as_array(values, "values", SharedMemoryError)
        if values.ndim != 2:
            raise SharedMemoryError("values", f"must be a (rows, k) matrix, got shape {values.shape}")
        rows, k = values.shape
        padded = None if padded is None else as_bool(padded, "padded", SharedMemoryError)
        parse_major(major)
        etype = element_type(dtype, allowed=OPERAND_DTYPES[self.arch])
        if etype.name in SUBBYTE:
            bits = element_bits(values, etype.name, SUBBYTE[etype.name])  # before any address is resolved
            return self._subbyte(desc, rows, k, etype.name, major, padded, bits)
        bits = element_bits(values, etype.name, etype.bits)
        addrs = operand_addresses(desc, rows=rows, k=k, dtype=etype.name, major=major, arch=self.arch)
        self.scatter(addrs, bits, etype.name)


def _byte_element_bits(dtype: str) -> int:
    etype = element_type(dtype, allowed=SM90_OPERAND_DTYPES + ("f32", "s32"))
    if etype.bits == 1:
        raise SharedMemoryError("dtype", "b1 elements are bits, not bytes: use read_operand/write_operand")
    return etype.bits


def as_shared_memory(smem, arch: str, field: str = "smem") -> SharedMemory:
    """`smem` itself (a SharedMemory of `arch`), or a new one holding a uint8 array / bytes from address 0."""
    if isinstance(smem, SharedMemory):
        if smem.arch != arch:
            raise SharedMemoryError(field, f"an {smem.arch} SharedMemory cannot feed an {arch} instruction; "
                                           f"use SharedMemory({arch!r})")
        return smem
    if not isinstance(smem, (bytes, bytearray, memoryview)):
        arr = as_array(smem, field, SharedMemoryError)
        if arr.dtype != np.uint8:
            raise SharedMemoryError(field, f"must be a SharedMemory or a uint8 array of shared memory from address 0, "
                                           f"got {show(arr)}")
    return SharedMemory(arch, data=smem)
