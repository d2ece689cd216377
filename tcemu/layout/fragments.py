"""Register fragments of wgmma: which (row, column) of A or D each thread's register holds.

Thread t of the warpgroup is lane l = t % 32 of warp w = t // 32; g = l // 4 and q = l % 4.
A (PTX 9.7.15.5.1.1, Figures 148/150/152/154), register i in 0..3, row 16w + g + 8*(i % 2):
  tf32: one element,  column q + 4*(i // 2)
  16-bit: two, column 2q + 8*(i // 2) + e           (e = 0 low half, 1 high half)
  8-bit: four, column 4q + 16*(i // 2) + e          (e-th byte)
  b1: 32 bits, column 32q + 128*(i // 2) + e        (bit e)
D (Figures 149/151/153/155): f32/s32 register i holds (16w + g + 8*((i // 2) % 2), 8*(i // 4) + 2q + i % 2);
  f16 register j packs the f32-numbered elements 2j (low half) and 2j + 1 (high half).
Register layouts of D and of 16-bit A were confirmed on an H200 (traces/wgmma_numerics_sm90.npz).
"""
from functools import lru_cache

import numpy as np

from ..arith.dtypes import SM90_OPERAND_DTYPES, element_type
from ..core.errors import LayoutError
from ..core.validate import as_choice, as_int, as_uint_bits

D_TYPES = ("f32", "f16", "s32")


def _a_type(dtype):
    return element_type(dtype, allowed=SM90_OPERAND_DTYPES)


def _d_n(n, dtype_d) -> int:
    """N of a wgmma D fragment: a multiple of 8 up to 256 (hopper.legal_n narrows it per form)."""
    as_choice(dtype_d, "dtype_d", D_TYPES, LayoutError)
    n = as_int(n, "n", 8, 256, LayoutError)
    if n % 8:
        raise LayoutError("n", f"N = {n} is not a multiple of 8")
    return n


def a_coords(dtype: str):
    """(rows, cols) int arrays of shape (128, 4, per_register) for A held in registers."""
    bits = _a_type(dtype).bits
    per = 32 // bits
    t = np.arange(128)[:, None, None]
    i = np.arange(4)[None, :, None]
    e = np.arange(per)[None, None, :]
    w, g, q = t // 32, (t % 32) // 4, t % 4
    row = 16 * w + g + 8 * (i % 2) + 0 * e
    col = per * q + 4 * per * (i // 2) + e
    return row, col


def to_a_registers(bits: np.ndarray, dtype: str) -> np.ndarray:
    """(128, 4) uint32 registers holding the (64, K) raw-bit matrix A (b1: a 0/1 matrix): integer bit
    patterns of the type's width."""
    row, col = a_coords(dtype)
    bits_per = 32 // row.shape[2]
    k = 8 * row.shape[2]  # K = 8 registers' worth of columns per row
    vals = as_uint_bits(bits, bits_per, "bits", LayoutError, shape=(64, k), allow_bool=bits_per == 1)
    vals = vals.astype(np.uint64)[row, col]
    shifts = (np.arange(row.shape[2], dtype=np.uint64) * np.uint64(bits_per))[None, None, :]
    return np.bitwise_or.reduce(vals << shifts, axis=2).astype(np.uint32)


def from_a_registers(regs: np.ndarray, dtype: str) -> np.ndarray:
    """The (64, K) raw-bit matrix A held by (128, 4) uint32 registers (b1: 0/1 per element)."""
    regs = as_uint_bits(regs, 32, "a_regs", LayoutError, shape=(128, 4))
    row, col = a_coords(dtype)
    per = row.shape[2]
    bits_per = 32 // per
    out = np.zeros((64, 8 * per), np.uint32)  # K = 8 registers' worth of columns per row
    shifts = (np.arange(per, dtype=np.uint64) * np.uint64(bits_per))[None, None, :]
    vals = (regs.astype(np.uint64)[:, :, None] >> shifts) & np.uint64((1 << bits_per) - 1)
    out[row, col] = vals
    return out


@lru_cache(maxsize=None)
def d_coords(n: int, dtype_d: str):
    """(rows, cols) of shape (128, N/2): the f32/s32 numbering of D's fragment (cached, read-only)."""
    return _d_coords(n)


def _d_coords(n: int):
    t = np.arange(128)[:, None]
    i = np.arange(n // 2)[None, :]
    w, g, q = t // 32, (t % 32) // 4, t % 4
    rows, cols = 16 * w + g + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * q + i % 2
    rows.setflags(write=False)
    cols.setflags(write=False)
    return rows, cols


def to_d_registers(d_bits: np.ndarray, dtype_d: str) -> np.ndarray:
    """(128, N/2) uint32 registers (N/4 for f16) holding the (64, N) raw-bit matrix D (integer bit patterns:
    16-bit for f16, 32-bit for f32/s32)."""
    as_choice(dtype_d, "dtype_d", D_TYPES, LayoutError)
    d_bits = as_uint_bits(d_bits, 16 if dtype_d == "f16" else 32, "d_bits", LayoutError, ndim=2)
    if d_bits.shape[0] != 64:
        raise LayoutError("d_bits", f"must be a (64, N) matrix, got shape {d_bits.shape}")
    row, col = d_coords(_d_n(d_bits.shape[1], dtype_d), dtype_d)
    vals = d_bits[row, col].astype(np.uint32)
    if dtype_d == "f16":
        return (vals[:, 0::2] & 0xFFFF) | (vals[:, 1::2] << 16)
    return vals


def from_d_registers(regs: np.ndarray, n: int, dtype_d: str) -> np.ndarray:
    """The (64, N) raw-bit matrix D (uint32, or uint16 for f16) held by the registers."""
    n = _d_n(n, dtype_d)
    regs = as_uint_bits(regs, 32, "regs", LayoutError, shape=(128, n // 4 if dtype_d == "f16" else n // 2))
    regs = regs.astype(np.uint32)
    row, col = d_coords(n, dtype_d)
    if dtype_d == "f16":
        vals = np.empty((128, n // 2), np.uint32)
        vals[:, 0::2], vals[:, 1::2] = regs & 0xFFFF, regs >> 16
        out = np.empty((64, n), np.uint16)
    else:
        vals, out = regs, np.empty((64, n), np.uint32)
    out[row, col] = vals
    return out


def to_d_registers_batch(d_bits: np.ndarray, dtype_d: str) -> np.ndarray:
    """to_d_registers of G results at once: (G, 64, N) raw bits -> (G, 128, N/2) uint32 (N/4 for f16)."""
    as_choice(dtype_d, "dtype_d", D_TYPES, LayoutError)
    raw = np.uint16 if dtype_d == "f16" else np.uint32
    if not (isinstance(d_bits, np.ndarray) and d_bits.dtype == raw and d_bits.ndim == 3):  # typed bits: no scan
        d_bits = as_uint_bits(d_bits, 16 if dtype_d == "f16" else 32, "d_bits", LayoutError, ndim=3)
    if d_bits.shape[1] != 64:
        raise LayoutError("d_bits", f"must be a stack of (64, N) matrices, got shape {d_bits.shape}")
    row, col = d_coords(_d_n(d_bits.shape[2], dtype_d), dtype_d)
    vals = d_bits[:, row, col].astype(np.uint32)
    if dtype_d == "f16":
        return (vals[:, :, 0::2] & 0xFFFF) | (vals[:, :, 1::2] << 16)
    return vals


def from_d_registers_batch(regs: np.ndarray, n: int, dtype_d: str) -> np.ndarray:
    """from_d_registers of G warpgroups at once: (G, 128, N/2) registers (N/4 for f16) -> (G, 64, N) raw bits."""
    n = _d_n(n, dtype_d)
    if not (isinstance(regs, np.ndarray) and regs.dtype == np.uint32 and regs.ndim == 3):  # typed: no scan
        regs = as_uint_bits(regs, 32, "regs", LayoutError, ndim=3)
    if regs.shape[1:] != (128, n // 4 if dtype_d == "f16" else n // 2):
        raise LayoutError("regs", f"must have shape (G, 128, {n // 4 if dtype_d == 'f16' else n // 2}), got "
                                  f"{regs.shape}")
    regs = regs.astype(np.uint32, copy=False)
    row, col = d_coords(n, dtype_d)
    G = regs.shape[0]
    if dtype_d == "f16":
        vals = np.empty((G, 128, n // 2), np.uint32)
        vals[:, :, 0::2], vals[:, :, 1::2] = regs & 0xFFFF, regs >> 16
        out = np.empty((G, 64, n), np.uint16)
    else:
        vals, out = regs, np.empty((G, 64, n), np.uint32)
    out[:, row, col] = vals
    return out
