"""tcgen05.mma.sp (sm_100a): A structured-sparse, K/2 of every row's K elements stored (PTX 9.7.16.10.8).

  .kind                        granularity   chunk   stored   K (logical)   metadata nibble of a chunk
  tf32                         1:2           2       1        16            0b0100 (first) or 0b1110 (second)
  f16, f8f6f4, mxf8f6f4, i8    2:4           4       2        32 / 64       idx0 | idx1 << 2
  mxf4, mxf4nvf4               4:8 in pairs  8       4        128           idx0 | idx1 << 2 name two of the 4 pairs

Meaningful nibbles (PTX 9.7.16.10.8.1-3): tf32 0b0100, 0b1110; the others 0b0100, 0b1000, 0b1100, 0b1001, 0b1101,
0b0110, 0b1110 (0b0110 names indices 2 and 1: the list is not ordered). The rest is undefined: tcemu refuses it
unless invalid_meta="gather" (each stored element multiplies the B element its own index names; tf32: the B bits
made of the 16-bit halves its two indices name). That reading is what the H100 does for wgmma.mma_async.sp
(traces/wgmma_sp_*_sm90.npz, sparse.py); for tcgen05 it is an inference.

Stored element j of a chunk multiplies logical column (chunk start) + idx_j (4:8: the pair idx_{j // 2}, element
j % 2 of it). The arithmetic (blackwell.py) is the dense unit's on the stored products: each row's metadata picks
the B columns, the K/2 stored products and C make one fused sum (mxf4*: the dense K = 64 unit's groups of 16, now
of stored products), and an exact zero sum is +0, the unit's rule (blackwell.fdp_unit; the H100's, dense and sparse).
Pruned positions multiply nothing (an inf or NaN of B there is never read). None of this is silicon-verified for
tcgen05.
"""
import numpy as np

from ..core.errors import LayoutError
from ..core.validate import show
from ..hopper.sparse import gather_b as _half_gather  # tf32's 16-bit-halves reading of undefined metadata (wgmma.sp, H100)

CHUNK = {"tf32": 2, "f16": 4, "f8f6f4": 4, "i8": 4, "mxf8f6f4": 4, "mxf4": 8, "mxf4nvf4": 8}
PAIR = {"mxf4": 2, "mxf4nvf4": 2}  # 4:8 sparsity keeps whole pairs
VALID_NIBBLES = {2: (0x4, 0xE), 4: (0x4, 0x8, 0xC, 0x9, 0xD, 0x6, 0xE), 8: (0x4, 0x8, 0xC, 0x9, 0xD, 0x6, 0xE)}

__all__ = ["CHUNK", "VALID_NIBBLES", "chunks_per_row", "columns", "invalid_nibbles", "sparsify", "densify", "gather_b"]


def _kind(kind) -> str:
    if not isinstance(kind, str) or kind not in CHUNK:
        raise LayoutError("kind", f"{show(kind)} is not a tcgen05 kind ({', '.join(CHUNK)})")
    return kind


def chunks_per_row(kind: str, k: int) -> int:
    """Metadata nibbles per row for a logical K."""
    return k // CHUNK[_kind(kind)]


def columns(nibbles, kind: str) -> np.ndarray:
    """(rows, K/2) logical column of each stored element, for (rows, chunks) nibbles (any nibble: the gather
    reading; tf32's undefined nibbles use gather_b's halves instead)."""
    nib = np.asarray(nibbles).astype(np.int64)
    rows, nc = nib.shape
    w = CHUNK[_kind(kind)]
    c = np.arange(nc)[None, :, None]
    if w == 2:
        return (2 * c[..., 0] + ((nib >> 1) & 1)).reshape(rows, nc)
    idx = np.stack([nib & 3, nib >> 2], axis=2)  # (rows, chunks, 2)
    if w == 4:
        return (w * c + idx).reshape(rows, -1)
    pair = np.repeat(idx, 2, axis=2)             # stored elements 0, 1 of pair idx0; 2, 3 of pair idx1
    return (w * c + 2 * pair + np.arange(2)[None, None, :].repeat(2, axis=0).reshape(1, 1, 4)).reshape(rows, -1)


def invalid_nibbles(nibbles, kind: str) -> np.ndarray:
    """Boolean mask of the nibbles PTX leaves undefined for the kind."""
    return ~np.isin(np.asarray(nibbles), VALID_NIBBLES[CHUNK[_kind(kind)]])


def sparsify(a_bits, kind: str):
    """(stored (rows, K/2), nibbles (rows, chunks)) of a logical (rows, K) raw-bit matrix whose chunks hold at
    most half their elements (4:8: pairs) non-zero; zero slots fill up in ascending order."""
    a = np.asarray(a_bits)
    w = CHUNK[_kind(kind)]
    unit = PAIR.get(kind, 1)
    if a.ndim != 2 or a.shape[1] % w:
        raise LayoutError("a", f"logical A must be (rows, K) with K a multiple of {w}, got {a.shape}")
    rows, k = a.shape
    units = a.reshape(rows, k // w, w // unit, unit)
    nonzero = (units != 0).any(axis=3)
    keep = w // unit // 2
    if (nonzero.sum(axis=2) > keep).any():
        m, c = np.argwhere(nonzero.sum(axis=2) > keep)[0]
        raise LayoutError("a", f"row {m} chunk {c} has {int(nonzero[m, c].sum())} non-zero {'pairs' if unit > 1 else 'elements'}; "
                               f".kind::{kind} keeps {keep} of every {w // unit}")
    idx = np.sort(np.argsort(~nonzero, axis=2, kind="stable")[:, :, :keep], axis=2)
    stored = np.take_along_axis(units, idx[..., None], axis=2).reshape(rows, k // 2)
    nib = np.where(idx[:, :, 0] == 0, 0x4, 0xE) if w == 2 else idx[:, :, 0] | (idx[:, :, 1] << 2)
    return stored.astype(a.dtype), nib.astype(np.uint8)


def densify(stored, nibbles, kind: str) -> np.ndarray:
    """The logical (rows, K) raw-bit matrix of stored A and meaningful metadata (zeros at pruned positions)."""
    a, nib = np.asarray(stored), np.asarray(nibbles)
    if invalid_nibbles(nib, kind).any():
        raise LayoutError("nibbles", "densify needs the meaningful nibbles of PTX 9.7.16.10.8")
    out = np.zeros((a.shape[0], 2 * a.shape[1]), a.dtype)
    out[np.arange(a.shape[0])[:, None], columns(nib, kind)] = a
    return out


def gather_b(b_bits, nib_row, kind: str) -> np.ndarray:
    """(N, K/2) raw bits of the B elements one row's stored elements multiply, for that row's (chunks,) nibbles."""
    b = np.asarray(b_bits)
    nib = np.asarray(nib_row)
    if CHUNK[_kind(kind)] == 2:
        return _half_gather(b, nib, "tf32")
    return b[:, columns(nib[None, :], kind)[0]]
