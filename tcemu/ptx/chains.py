"""Deferred wgmma accumulator chains: consecutive wgmma.mma_async of a warpgroup into the same D registers, each
taking C from those registers (scale-d), are recorded (their A and B bits, read and checked at issue) and computed
as one K loop by the GEMM engine when another instruction first touches a D register, or after MAX_STEPS.

The bits are the instructions' own: a chain of fused dots, each over the instruction's K and C, rounded once, is
what tcemu.matmul computes (gemm/engine.py; its reference engine chains fdp.fused_dot step by step, and
tests/test_matmul.py holds the two equal), with init "zero" (+0 registers) equal to a first step without C on sm90
(traces/wgmma_zero_sign_sm90.npz). Only the register values wait: issue, in-flight tracking, wgmma.wait_group and
every check stay at the instruction (ops/wgmma_gang.py). Everything that reads registers settles first: the
hazard wrapper of instructions that touch wgmma registers (wrappers.hazard_checked), a lock-step batch
(lockstep.Batch), a warp-by-warp wgmma (ops/wgmma.py) and the hang probes (hang.py)."""
import time
import zlib

import numpy as np

from ..arith.fdp import OUT_NUMPY
from ..gemm.engine import matmul
from ..layout.fragments import from_d_registers, to_d_registers

MAX_STEPS = 64   # steps kept before a chain is computed (bounds the bits it holds: 64 K steps of A and B; the GEMM
#                engine runs (64, 1024) x (1024, 256) bf16 chains ~20 % faster than two of K 512, and K 2048 slower
#                again: Triton 2048^3 on the VM spent 7.9 / 5.7 / 7.2 s in the chains at 32 / 64 / 128, session 19)


class Chain:
    """One warpgroup's pending steps into D registers d_idx (32-bit slots) of its four warps."""
    __slots__ = ("warps", "key", "d_idx", "idx", "n", "dtype_a", "dtype_b", "dtype_d", "c", "a", "b")

    def __init__(self, warps, key, d_idx, n, dtype_a, dtype_b, dtype_d, c):
        self.warps, self.key, self.d_idx, self.idx = warps, key, d_idx, frozenset(d_idx.tolist())
        self.n, self.dtype_a, self.dtype_b, self.dtype_d = n, dtype_a, dtype_b, dtype_d
        self.c = c            # (128, nregs) D register bits the chain starts from, or None: +0
        self.a, self.b = [], []
        for w in warps:
            w.deferred[key] = self

    def form(self):
        return self.n, self.dtype_a, self.dtype_b, self.dtype_d

    def drop(self):
        for w in self.warps:
            if w.deferred.get(self.key) is self:
                del w.deferred[self.key]

    def settle(self):
        """Compute the steps and write D into the warps' registers."""
        settle_chains([self])


def settle_chains(chains):
    """Compute chains and write their D registers. Chains whose steps read the same B bits (one CTA's warpgroups: a
    gang step reads a CTA's operand once, so their B lists hold the same arrays; CTAs of one tile column, whose
    shared memory holds copies of the same global bytes) and that have the same form, all from C or all from +0,
    run as one GEMM of their A rows stacked: the engine's rows are independent, so the bits are each chain's own,
    and B is prepared once for all of them."""
    groups, crcs = {}, {}
    for ch in chains:
        ch.drop()
        if ch.a:
            key = (ch.form(), ch.c is None, len(ch.b)) + tuple(_crc(b, crcs) for b in ch.b)
            groups.setdefault(key, []).append(ch)
    for group in groups.values():
        first = group[0]
        same = [ch for ch in group if ch is first or all(x is y or np.array_equal(x, y) for x, y in zip(ch.b, first.b))]
        _compute(same)
        for ch in group:   # (a checksum met by other bits: alone)
            if ch.a is not None:
                _compute([ch])


def _crc(bits, memo) -> int:
    """A checksum of one step's B bits, once per array (twins' lists hold the same arrays)."""
    got = memo.get(id(bits))
    if got is None:
        got = memo[id(bits)] = zlib.crc32(np.ascontiguousarray(bits))
    return got


def _compute(group):
    first = group[0]
    t0 = time.perf_counter()
    A = np.concatenate([np.concatenate(ch.a, axis=1) if len(ch.a) > 1 else ch.a[0] for ch in group])   # (64 x, S K)
    B = np.concatenate(first.b, axis=1) if len(first.b) > 1 else first.b[0]                          # (N, S K)
    n, dtype_d = first.n, first.dtype_d
    c = None if first.c is None else np.concatenate(
        [from_d_registers(ch.c, n, dtype_d).view(OUT_NUMPY[dtype_d]) for ch in group])
    d = matmul(A, B.T, c=c, arch="sm90", dtype_a=first.dtype_a, dtype_b=first.dtype_b, dtype_d=dtype_d,
               out_dtype=dtype_d, workers=1)
    d = np.ascontiguousarray(d).view(np.uint16 if dtype_d == "f16" else np.uint32)
    for j, ch in enumerate(group):
        regs = to_d_registers(d[64 * j:64 * (j + 1)], dtype_d)
        for i, w in enumerate(ch.warps):
            w.r32[ch.d_idx] = regs[32 * i:32 * (i + 1)].T
        ch.a = ch.b = None
    first.warps[0].cta.launch.tensor_core_seconds += time.perf_counter() - t0


def settle(W, idx=None):
    """Compute W's chains whose D registers meet the 32-bit register indices `idx` (None: all of them)."""
    settle_warps([W], idx)


def settle_warps(warps, idx=None):
    """settle() for each of the warps at once (twin chains together)."""
    seen = {}
    for w in warps:
        for ch in w.deferred.values():
            if idx is None or not ch.idx.isdisjoint(idx):
                seen[id(ch)] = ch
    settle_chains(list(seen.values()))


def registers(warps, d_idx) -> np.ndarray:
    """(128, nregs) copy of a warpgroup's D registers (a chain's C)."""
    return np.concatenate([w.r32[d_idx].T for w in warps])
