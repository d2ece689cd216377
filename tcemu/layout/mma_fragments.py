"""Register fragments of mma.sync.aligned (PTX ISA 9.7.14.5, "Matrix fragments for mma.m16n8k*" and
"mma.m8n8k4" with .f64): which (row, column) of A (M x K), B (K x N) or C/D (M x N) each lane's elements hold.

Lane l: g = l // 4 (groupID), t = l % 4 (threadID_in_group). A lane's elements are numbered in register order,
the low bits of a 32-bit register first; p = 32 / element bits elements share a register (1 for 32- and 64-bit
types), and u = i // p, e = i % p:
  A (.row)  row g + 8 * (u % 2),  column p * t + e + 4 * p * (u // 2)
  B (.col)  row (k) p * t + e + 4 * p * u,  column g
  C/D       row g + 8 * (i // 2), column 2 * t + i % 2          (f16: two elements per register)
e.g. m16n8k16 .f16 A: a0, a1 (row g, columns 2t, 2t+1), a2, a3 (row g + 8), a4..a7 (columns + 8); m16n8k8 .tf32 A:
a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4); m16n8k32 .s8 B: b0..b3 rows 4t..4t+3, b4..b7 rows 4t+16...
Confirmed for every captured form on an H100 (traces/mma_sync_sm90.npz).
"""
from functools import lru_cache

import numpy as np

from ..core.errors import LayoutError

__all__ = ["coords", "gather", "scatter", "to_registers"]


@lru_cache(maxsize=None)
def coords(operand: str, m: int, n: int, k: int, bits: int):
    """(rows, cols) read-only int arrays (32, elements per lane) of operand "A", "B", "C" (also D) of an m x n x k
    mma.sync with `bits`-bit elements."""
    if operand not in ("A", "B", "C") or bits not in (8, 16, 32, 64):
        raise LayoutError("operand", f"{operand!r} / {bits}-bit elements: mma.sync fragments are A, B or C of 8-, "
                                     "16-, 32- or 64-bit elements")
    rows_, cols_ = {"A": (m, k), "B": (k, n), "C": (m, n)}[operand]
    count = rows_ * cols_ // 32
    lane = np.arange(32)[:, None]
    g, t = lane // 4, lane % 4
    i = np.arange(count)[None, :]
    p = 32 // bits if bits < 64 else 1
    u, e = i // p, i % p
    if operand == "A":
        r, c = g + 8 * (u % 2), p * t + e + 4 * p * (u // 2)
    elif operand == "B":
        r, c = p * t + e + 4 * p * u, np.broadcast_to(g, (32, count))
    else:
        r, c = g + 8 * (i // 2), 2 * t + i % 2
    r, c = np.broadcast_to(r, (32, count)).copy(), np.broadcast_to(c, (32, count)).copy()
    if r.max() >= rows_ or c.max() >= cols_ or len(set(zip(r.ravel().tolist(), c.ravel().tolist()))) != r.size:
        raise LayoutError("shape", f"m{m}n{n}k{k} with {bits}-bit elements has no {operand} fragment")
    r.setflags(write=False)
    c.setflags(write=False)
    return r, c


_ELEMENT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _elements(words: np.ndarray, bits: int) -> np.ndarray:
    """(32, words) uint32 -> (32, elements) element patterns in register order, low bits first: a little-endian
    view, no copy beyond making the words contiguous."""
    w = np.ascontiguousarray(words, np.uint32)
    return w.view(_ELEMENT[bits]) if w.ndim == 2 else w


def gather(words, operand: str, m: int, n: int, k: int, bits: int) -> np.ndarray:
    """The operand as a matrix of bit patterns (uint8/16/32/64 by `bits`; A: m x k, B: k x n, C: m x n) from every
    lane's register words (32, words)."""
    r, c = coords(operand, m, n, k, bits)
    el = _elements(words, bits)
    if el.shape != r.shape:
        raise LayoutError(operand, f"expected {max(r.shape[1] * bits // 32, 1)} words a lane, got {np.shape(words)}")
    shape = {"A": (m, k), "B": (k, n), "C": (m, n)}[operand]
    out = np.empty(shape, el.dtype)
    out[r, c] = el
    return out


def to_registers(matrix, operand: str, m: int, n: int, k: int, bits: int) -> np.ndarray:
    """Every lane's register words (32, words) uint32 holding `operand` ("A" m x k, "B" k x n, "C" m x n) given as
    a matrix of bit patterns (the inverse of gather)."""
    r, c = coords(operand, m, n, k, bits)
    shape = {"A": (m, k), "B": (k, n), "C": (m, n)}[operand]
    matrix = np.asarray(matrix)
    if matrix.shape != shape:
        raise LayoutError(operand, f"must be a {shape[0]} x {shape[1]} matrix of bit patterns, got {matrix.shape}")
    el = np.ascontiguousarray(matrix.astype(_ELEMENT[bits], copy=False)[r, c])
    return el.view(np.uint32)


def scatter(matrix: np.ndarray, m: int, n: int, bits: int) -> np.ndarray:
    """Every lane's D register words (32, words) uint32 from the m x n result's bit patterns."""
    return to_registers(matrix, "C", m, n, 8, bits)
