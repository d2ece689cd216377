"""Bit-exact mirror of the input generator of the sparse wgmma capture (scripts/sparse_gen.h, used by
scripts/capture_sparse.cu): the trace stores one seed per case and everything fed to wgmma.mma_async.sp is
regenerated here.

The generator is capture_numerics.cu's (tcemu/traces/seeds.py: rnd, gen_float, gen_int32, case parameters) with:
  - e4m3 outside raw mode and outside the special draws never takes the NaN pattern (S.1111.111 -> S.1111.110);
  - negzero cases (float kinds, rnd(seed, 3, 1) % 16 == 0): stored A, register A and C are -0, B's sign is cleared;
  - stored A (64 x K/2) from stream 16*step, index row*(K/2) + s; B (N x K) from 16*step + 1, index row*K + k;
  - metadata: thread t's register from rnd(seed, 16*step + 5, t) by class: 0 valid nibbles, 1 the raw low word,
    2 unordered (2:4: idx0 > idx1) / tf32: not 0b0100 or 0b1110, 3 repeated indices, 4 zero; nibble j takes
    table[((r >> 8j) & 0xFF) % len(table)].
tests/test_sparse_capture.py compiles scripts/sparse_gen.h for the host and compares every value.
"""
from typing import NamedTuple

import numpy as np

from . import seeds
from ..core.errors import TcemuError

__all__ = ["SP_KINDS", "SpParams", "sp_case_params", "sp_elem", "stored_a_bits", "b_bits", "c_bits",
           "a_register_bits", "meta_register_bits", "meta_table", "STREAM_META"]

# (atype, btype, dtype, satfinite), index = kind; identical to scripts/gen_sparse_wrappers.KINDS
SP_KINDS = [k for k in seeds.NUMERICS_KINDS if k[0] != "b1"]
_K = {"tf32": 16, "f16": 32, "bf16": 32, "e4m3": 64, "e5m2": 64, "s8": 64, "u8": 64}
_BITS = {"tf32": 32, "f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8}
STREAM_META = 5
_U64 = np.uint64


class SpParams(NamedTuple):
    base: seeds.CaseParams
    negzero: int


def _kind(kind) -> int:
    if isinstance(kind, bool) or not isinstance(kind, (int, np.integer)) or not 0 <= int(kind) < len(SP_KINDS):
        raise TcemuError("kind", f"sparse kind must be an index 0..{len(SP_KINDS) - 1}, got {kind!r}")
    return int(kind)


def _formats(kind):
    a, b, d, _ = SP_KINDS[_kind(kind)]
    return seeds.FORMAT_IDS[a], seeds.FORMAT_IDS[b], seeds.FORMAT_IDS[d], _BITS[a], _K[a]


def sp_case_params(seed: int, kind) -> SpParams:
    fa, fb, fc, _, _ = _formats(kind)
    p = seeds.case_params_formats(seed, fa, fb, fc)
    negzero = int(fa <= 5 and (int(seeds.rnd(seed, seeds.STREAM_PARAMS, 1)) & 15) == 0)
    return SpParams(p, negzero)


def sp_elem(r, fmt: int, center: int, p: SpParams, force: int = 0) -> np.ndarray:
    """sp_elem of sparse_gen.h on uint64 words r: uint32 element bits (8-bit integers: the low byte)."""
    r = np.asarray(r, np.uint64)
    if fmt > 5:
        return (r & _U64(0xFF)).astype(np.uint32)
    bits = seeds.gen_float(r, fmt, center, p.base).astype(np.uint64)
    if fmt == 4 and p.base.mode != 0:  # e4m3 never NaN outside raw mode and the special draws
        special = np.full(r.shape, False) if not p.base.specials else (r >> _U64(60)) == _U64(0)
        bits = np.where(~special & ((bits & _U64(0x7F)) == _U64(0x7F)), bits ^ _U64(1), bits)
    E, M, _, _ = seeds.FMTS[fmt]
    sign = _U64(0x80000000) if fmt == 1 else _U64(1 << (E + M))
    if force == 1:
        bits = np.full(r.shape, sign, np.uint64) | ((r >> _U64(32)) & _U64(0x1FFF) if fmt == 1 else _U64(0))
    elif force == 2:
        bits = bits & ~sign
    return np.asarray(bits, np.uint64).astype(np.uint32)


def _dtype(bits):
    return np.uint32 if bits == 32 else np.uint16 if bits == 16 else np.uint8


def _step(step):
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or not 0 <= int(step) < (1 << 27):
        raise TcemuError("step", f"step must be a non-negative integer, got {step!r}")
    return int(step)


def stored_a_bits(seed: int, kind, step: int) -> np.ndarray:
    """(64, K/2) raw bits of the stored (compressed) A of a step."""
    fa, _, _, bits, K = _formats(kind)
    p = sp_case_params(seed, kind)
    r = seeds.rnd(seed, 16 * _step(step), np.arange(64 * K // 2, dtype=np.uint64))
    return sp_elem(r, fa, p.base.ca, p, p.negzero).reshape(64, K // 2).astype(_dtype(bits))


def b_bits(seed: int, kind, step: int, rows: int) -> np.ndarray:
    """(rows, K) raw bits of B of a step."""
    _, fb, _, bits, K = _formats(kind)
    p = sp_case_params(seed, kind)
    r = seeds.rnd(seed, 16 * _step(step) + 1, np.arange(int(rows) * K, dtype=np.uint64))
    return sp_elem(r, fb, p.base.cb, p, 2 * p.negzero).reshape(int(rows), K).astype(_dtype(bits))


def c_bits(seed: int, kind, n: int) -> np.ndarray:
    """(64, n) raw bits of C: uint32 for f32/s32, uint16 for f16."""
    _, _, fc, _, _ = _formats(kind)
    p = sp_case_params(seed, kind)
    r = seeds.rnd(seed, seeds.STREAM_C, np.arange(64 * int(n), dtype=np.uint64))
    if fc == seeds.FORMAT_IDS["s32"]:
        v = seeds.gen_int32(r, p.base.mode)
    else:
        v = sp_elem(r, fc, p.base.cc, p, p.negzero)
    return v.reshape(64, int(n)).astype(np.uint16 if fc == seeds.FORMAT_IDS["f16"] else np.uint32)


def a_register_bits(seed: int, kind, step: int) -> np.ndarray:
    """(128, 4) uint32 register-A words: element e of register i of thread t from index (t*4 + i)*per + e."""
    fa, _, _, bits, _ = _formats(kind)
    p = sp_case_params(seed, kind)
    per = 32 // bits
    r = seeds.rnd(seed, 16 * _step(step) + 4, np.arange(128 * 4 * per, dtype=np.uint64).reshape(128, 4, per))
    v = sp_elem(r, fa, p.base.ca, p, p.negzero).astype(np.uint64) & _U64((1 << bits) - 1)
    shifts = np.arange(per, dtype=np.uint64) * _U64(bits)
    return (np.bitwise_or.reduce(v << shifts, axis=2) & _U64(0xFFFFFFFF)).astype(np.uint32)


def meta_table(chunk: int, cls: int) -> tuple:
    """The nibble table of a metadata class (sparse_gen.h sp_meta_table) for chunk width 2 (tf32) or 4."""
    if cls == 3:
        return (0x0, 0x5, 0xA, 0xF)
    if chunk == 2:
        return (0x4, 0xE) if cls == 0 else tuple(v for v in range(16) if v not in (0x4, 0xE))
    return (0x4, 0x8, 0xC, 0x9, 0xD, 0xE) if cls == 0 else (0x1, 0x2, 0x3, 0x6, 0x7, 0xB)


def meta_register_bits(seed: int, kind, step: int, cls: int) -> np.ndarray:
    """(128,) uint32: the metadata register of every thread for a step, by metadata class."""
    a = SP_KINDS[_kind(kind)][0]
    if cls not in range(5):
        raise TcemuError("cls", f"metadata class must be 0..4, got {cls!r}")
    r = seeds.rnd(seed, 16 * _step(step) + STREAM_META, np.arange(128, dtype=np.uint64))
    if cls == 1:
        return (r & _U64(0xFFFFFFFF)).astype(np.uint32)
    if cls == 4:
        return np.zeros(128, np.uint32)
    table = np.array(meta_table(2 if a == "tf32" else 4, cls), np.uint64)
    j = np.arange(8, dtype=np.uint64)
    pick = ((r[:, None] >> (_U64(8) * j)) & _U64(0xFF)) % _U64(table.size)
    return np.bitwise_or.reduce(table[pick.astype(np.int64)] << (_U64(4) * j), axis=1).astype(np.uint32)
