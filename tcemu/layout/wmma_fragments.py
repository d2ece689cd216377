"""Register fragments of wmma (PTX ISA 9.7.14.4, nvcuda::wmma): which (row, column) of A (M x K), B (K x N) or
C/D (M x N) each lane's fragment element holds. PTX leaves the layout unspecified; these are the H100's, read from
its own wmma.load (traces/wmma_sm90.npz: every element of every lane, 28 fragment kinds).

Lane l: g = l // 4, t = l % 4; element e of the fragment (f16 / bf16: two a 32-bit register, the low half first):
  m16n16k16  A  row g + 8 ((e // 2) % 2),            column 2t + e % 2 + 8 ((e // 4) % 2)
             B  row (k) 2t + e % 2 + 8 ((e // 2) % 2), column g + 8 ((e // 4) % 2)
             C  row g + 8 ((e // 2) % 2),            column 2t + e % 2 + 8 (e // 4)
  m32n8k16   A  row g + 8 ((e // 2) % 2) + 16 (e // 8), column 2t + e % 2 + 8 ((e // 4) % 2)
             B  row 2t + e % 2 + 8 ((e // 2) % 2),     column g
             C  row g + 8 (e // 2),                 column 2t + e % 2
  m8n32k16   A  row g,                              column 2t + e % 2 + 8 ((e // 2) % 2)
             B  row 2t + e % 2 + 8 ((e // 4) % 2),     column g + 8 ((e // 2) % 2) + 16 (e // 8)
             C  row 2t + e % 2,                     column g + 8 (e // 2)
An f16 A or B fragment has 16 elements in every shape: where the matrix has fewer than 512 elements the pattern
repeats (element e holds what element e mod 8, or e mod 4, holds). A bf16 one has only the M K / 32 (K N / 32)
elements, no repeats. The memory layout (.row / .col) changes only the addresses.
"""
from functools import lru_cache

import numpy as np

from ..core.errors import LayoutError

__all__ = ["SHAPES", "coords", "count"]

SHAPES = {"m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16)}


def count(frag: str, shape: str, dtype: str) -> int:
    """Elements a lane's fragment holds (CUDA's fragment<...>::num_elements)."""
    m, n, k = SHAPES[shape]
    rows, cols = {"a": (m, k), "b": (k, n), "c": (m, n)}[frag]
    return 16 if frag in "ab" and dtype == "f16" else rows * cols // 32


@lru_cache(maxsize=None)
def coords(frag: str, shape: str, dtype: str):
    """(rows, cols) read-only int arrays (32, count) of fragment "a", "b" or "c" (also d)."""
    if frag not in ("a", "b", "c") or shape not in SHAPES:
        raise LayoutError("fragment", f"{frag!r} of {shape!r}: wmma fragments are a, b or c of "
                                      f"{', '.join(SHAPES)}")
    lane = np.arange(32)[:, None]
    g, t = lane // 4, lane % 4
    e = np.arange(count(frag, shape, dtype))[None, :]
    pair = 2 * t + e % 2
    if shape == "m16n16k16":
        r, c = {"a": (g + 8 * ((e // 2) % 2), pair + 8 * ((e // 4) % 2)),
                "b": (pair + 8 * ((e // 2) % 2), g + 8 * ((e // 4) % 2)),
                "c": (g + 8 * ((e // 2) % 2), pair + 8 * (e // 4))}[frag]
    elif shape == "m32n8k16":
        r, c = {"a": (g + 8 * ((e // 2) % 2) + 16 * (e // 8), pair + 8 * ((e // 4) % 2)),
                "b": (pair + 8 * ((e // 2) % 2), g),
                "c": (g + 8 * (e // 2), pair)}[frag]
    else:
        r, c = {"a": (g, pair + 8 * ((e // 2) % 2)),
                "b": (pair + 8 * ((e // 4) % 2), g + 8 * ((e // 2) % 2) + 16 * (e // 8)),
                "c": (pair, g + 8 * (e // 2))}[frag]
    r, c = np.broadcast_to(r, (32, e.shape[1])).copy(), np.broadcast_to(c, (32, e.shape[1])).copy()
    r.setflags(write=False)
    c.setflags(write=False)
    return r, c
