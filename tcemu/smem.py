"""The CTA's shared memory as a byte array, addressed absolutely (as descriptors address it)."""
import numpy as np

from .addressing import operand_addresses
from .arch import SMEM_WINDOW, check_arch
from .dtypes import SM90_OPERAND_DTYPES, element_type, is_padded, parse_major, placement_dtype
from .errors import SharedMemoryError

SUBBYTE = {"b1": 1, "e2m1": 4, "e2m3": 6, "e3m2": 6}  # value bits of the operand types narrower than a byte
_BITS_DTYPE = {8: np.uint8, 16: np.uint16, 32: np.uint32}
_LE = {8: np.dtype("u1"), 16: np.dtype("<u2"), 32: np.dtype("<u4")}  # shared memory is little-endian


def _numeric_array(values, field: str) -> np.ndarray:
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError) as e:
        raise SharedMemoryError(field, f"not a numeric array ({e})") from None
    if arr.dtype.kind not in "biuf" and arr.dtype.name not in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        raise SharedMemoryError(field, f"must be numbers or bit patterns, got {arr.dtype}")
    return arr


def _as_bits(values, bits: int, field: str) -> np.ndarray:
    """Raw bit patterns of `values`: float arrays of the right width are viewed, integers range-checked."""
    values = _numeric_array(values, field)
    if values.dtype.kind not in "iub":  # a float of some kind: its bits, if the width matches
        if values.dtype.itemsize * 8 != bits:
            raise SharedMemoryError(field, f"{values.dtype} has {values.dtype.itemsize * 8} bits; "
                                           f"this element type stores {bits}")
        return np.ascontiguousarray(values).view(_BITS_DTYPE[bits]).astype(np.int64)
    if values.size and (values.min() < -(1 << (bits - 1)) or values.max() >= 1 << bits):
        raise SharedMemoryError(field, f"values do not fit in {bits} bits")
    return values.astype(np.int64) & ((1 << bits) - 1)


def _address(value, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise SharedMemoryError(field, f"must be an integer byte address, got {value!r}")
    return int(value)


def _address_array(addresses) -> np.ndarray:
    try:
        arr = np.asarray(addresses)
    except (ValueError, TypeError) as e:
        raise SharedMemoryError("addresses", f"not an array of integers ({e})") from None
    if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
        raise SharedMemoryError("addresses", f"must be integers, got {arr.dtype}")
    if arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise SharedMemoryError("addresses", "an address exceeds int64")
    return arr.astype(np.int64)


def _raw_bytes(data) -> np.ndarray:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(data), np.uint8)
    try:
        arr = np.ascontiguousarray(data)
    except (ValueError, TypeError) as e:
        raise SharedMemoryError("data", f"not bytes or a numeric array ({e})") from None
    if arr.dtype.kind not in "biufV" or arr.dtype.hasobject:
        raise SharedMemoryError("data", f"must be bytes or a numeric array, got {arr.dtype}")
    return arr.reshape(-1).view(np.uint8)


class SharedMemory:
    """Byte-addressed shared memory of one CTA: `arch`'s window (sm90: 228 KiB), zero-filled."""

    def __init__(self, arch: str = "sm90", data=None):
        self.arch = check_arch(arch)
        self.data = np.zeros(SMEM_WINDOW[arch], np.uint8)
        self.written = np.zeros(SMEM_WINDOW[arch], bool)  # operand reads of unwritten bytes are errors
        if data is not None:
            self.write(0, data)

    @property
    def size(self) -> int:
        return self.data.size

    def _check(self, lo: int, hi: int, what: str):
        if lo < 0 or hi > self.size:
            raise SharedMemoryError(what, f"bytes [{lo:#x}, {hi:#x}) fall outside the {self.arch} shared window "
                                          f"[0, {self.size:#x})")

    def read(self, address: int, nbytes: int) -> np.ndarray:
        address, nbytes = _address(address, "address"), _address(nbytes, "nbytes")
        if nbytes < 0:
            raise SharedMemoryError("nbytes", f"must not be negative, got {nbytes}")
        self._check(address, address + nbytes, "address")
        return self.data[address:address + nbytes].copy()

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

    def gather(self, addresses, dtype: str) -> np.ndarray:
        """Raw bit patterns (uint8/16/32) of the elements at byte `addresses` (any shape)."""
        bits = _byte_element_bits(dtype)
        addresses = self._element_addresses(addresses, bits)
        return self.data.view(_LE[bits])[addresses // (bits // 8)]  # aligned: one typed gather

    def scatter(self, addresses, values, dtype: str) -> None:
        """Store `values` (bit patterns, or floats of the element's width) at byte `addresses`."""
        bits = _byte_element_bits(dtype)
        addresses = self._element_addresses(addresses, bits)
        try:
            raw = np.broadcast_to(_as_bits(values, bits, "values"), addresses.shape).astype(np.int64)
        except ValueError as e:
            raise SharedMemoryError("values", f"shape does not match the addresses {addresses.shape} ({e})") from None
        for b in range(bits // 8):
            self.data[addresses + b] = (raw >> (8 * b)) & 0xFF
            self.written[addresses + b] = True

    def scatter_bytes(self, addresses, raw) -> None:
        """Store element i's bytes raw[i] (shape (n, element bytes), uint8) from byte address addresses[i]."""
        addresses = _address_array(addresses).ravel()
        raw = np.asarray(raw, np.uint8).reshape(addresses.size, -1)
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
        8-bit elements.

        keep_rows: a (rows,) bool mask; the other rows are neither checked nor read (they come back 0): B columns a
        zero-column mask zeroes, or rows before a column shift (tcgen05.mma.ws). arch: "sm103" reads LBO-mode-1
        descriptors of a Blackwell shared memory (addressing.py)."""
        arch = self._reading_arch(arch)
        keep = self._keep(keep_rows, rows)
        if dtype in SUBBYTE:
            return self._subbyte(desc, rows, k, dtype, major, padded, None, keep, arch)
        addrs = operand_addresses(desc, rows=rows, k=k, dtype=dtype, major=major, arch=arch)
        bits = element_type(dtype).bits
        full = int.from_bytes(b"\x01" * (bits // 8), "little")  # every byte of the element written
        self._check_written((self.written.view(np.uint8).view(_LE[bits])[addrs // (bits // 8)] != full) & keep, addrs)
        out = self.gather(addrs, dtype)
        return np.where(keep, out, 0).astype(out.dtype)

    def _reading_arch(self, arch):
        if arch is None or arch == self.arch:
            return self.arch
        if {arch, self.arch} == {"sm100", "sm103"}:
            return arch
        raise SharedMemoryError("arch", f"{arch!r} cannot read {self.arch} shared memory")

    @staticmethod
    def _keep(keep_rows, rows):
        if keep_rows is None:
            return np.ones((1, 1), bool)
        keep = np.asarray(keep_rows, bool)
        if keep.shape != (rows,):
            raise SharedMemoryError("keep_rows", f"must be a ({rows},) bool mask, got shape {keep.shape}")
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
        bits = _as_bits(values, width, "values")
        for spot, part in ((lo, (bits << shift) & 0xFF), (hi, (bits << shift) >> 8)):
            keep = ~((mask << shift) >> (8 if spot is hi else 0)) & 0xFF
            np.bitwise_and.at(self.data, spot, keep.astype(np.uint8))
            np.bitwise_or.at(self.data, spot, part.astype(np.uint8))
            self.written[spot] = True

    def write_operand(self, desc, values, *, dtype: str, major: str = "K", padded=None) -> None:
        """Lay the (rows, k) matrix `values` into shared memory where the descriptor reads it."""
        values = _numeric_array(values, "values")
        if values.ndim != 2:
            raise SharedMemoryError("values", f"must be a (rows, k) matrix, got shape {values.shape}")
        rows, k = values.shape
        parse_major(major)
        if dtype in SUBBYTE:
            return self._subbyte(desc, rows, k, dtype, major, padded, values)
        addrs = operand_addresses(desc, rows=rows, k=k, dtype=dtype, major=major, arch=self.arch)
        self.scatter(addrs, values, dtype)


def _byte_element_bits(dtype: str) -> int:
    etype = element_type(dtype, allowed=SM90_OPERAND_DTYPES + ("f32", "s32"))
    if etype.bits == 1:
        raise SharedMemoryError("dtype", "b1 elements are bits, not bytes: use read_operand/write_operand")
    return etype.bits
