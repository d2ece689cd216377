"""wgmma.mma_async (sm_90a): D = A * B (+ C), A and B read from shared memory through matrix
descriptors (A optionally from registers), with the hardware's arithmetic (fdp.py). Legal forms: forms.py.
"""
import numpy as np

from ..core.errors import LayoutError
from ..arith.fdp import (OUT_NUMPY, RNE, RZ, FdpUnit, accumulator_bits, decode_operand, fused_dot, fused_dot_batch,
                         integer_dot)
from ..arith.formats import decode_int
from ..layout.fragments import from_a_registers
from ..layout.smem import as_shared_memory
from ..core.validate import as_bool
from .forms import K_OF, check_form, legal_n  # noqa: F401  (K_OF, legal_n: read from here too)

_FP8 = ("e4m3", "e5m2")


def fdp_unit(dtype_a: str, dtype_d: str) -> FdpUnit:
    """Design constants of the Hopper dot-product unit for an operand type and accumulator.

    F = 25 for tf32/f16/bf16, 13 for fp8; f32 results round toward zero (fp8 keeping 13 fraction bits),
    f16 results to nearest even (hardware-leads.md; MMA-Sim; traces/wgmma_numerics_sm90.npz).
    An exact zero sum is +0 whatever the signs of the terms, and scale-d = 0 (or no C) adds a +0 accumulator,
    which counts at the -133 zero floor: H100, traces/wgmma_zero_sign_sm90.npz (120 of 120 cases: every dense
    tf32/f16/bf16/e4m3 -> f32 and f16 -> f16 case with all products and C -0 reads +0; with scale-d = 0 and
    every product below 2^-133 the truncation is the one a +0 C term gives, dense and sparse)."""
    frac = 13 if dtype_a in _FP8 else 25
    rules = dict(signed_zero=False, zero_c_when_absent=True)
    if dtype_d == "f16":
        return FdpUnit(frac, "f16", 10, RNE, **rules)
    return FdpUnit(frac, "f32", 13 if dtype_a in _FP8 else 23, RZ, **rules)


def read_operands(smem, desc_a, desc_b, a_regs, c, scale_d, n, k_a, k, dtype_a, dtype_b, dtype_d, trans_a, trans_b):
    """(A bits (64, k_a), B bits (n, k), C bits or None) of a dense or sparse wgmma: A from `a_regs` or desc_a,
    B from desc_b, C checked even when scale_d drops it."""
    smem = as_shared_memory(smem, "sm90", "smem")
    c = accumulator_bits(c, (64, n), dtype_d) if c is not None else None
    if a_regs is not None:
        if desc_a is not None or trans_a:
            raise LayoutError("a_regs", "A comes from registers or from desc_a, not both (and takes no trans_a)")
        a_bits = from_a_registers(a_regs, dtype_a)
    else:
        a_bits = smem.read_operand(desc_a, rows=64, k=k_a, dtype=dtype_a, major="MN" if trans_a else "K")
    b_bits = smem.read_operand(desc_b, rows=n, k=k, dtype=dtype_b, major="MN" if trans_b else "K")
    return a_bits, b_bits, c if scale_d else None


def wgmma(smem, desc_a, desc_b, *, shape: str, dtype_a: str, dtype_b: str, dtype_d: str,
          trans_a: bool = False, trans_b: bool = False, c=None, scale_d: bool = True,
          scale_a: int = 1, scale_b: int = 1, satfinite: bool = False, a_regs=None) -> np.ndarray:
    """One wgmma.mma_async: the (64, N) result as float32, float16 or int32.

    `smem` is a SharedMemory or a uint8 array of absolute shared addresses. `c` (the accumulator
    before the instruction, same dtype as the result) is added when `scale_d` is true; scale_d=False or
    c=None means D = A * B, which the unit computes as A * B + (+0): the +0 accumulator is a zero term of the
    sum (fdp_unit), whether A comes from shared memory or from registers. `a_regs` (128 threads x 4 uint32
    registers) replaces A's descriptor (desc_a=None).
    """
    N, K = check_form(shape, dtype_a, dtype_b, dtype_d, trans_a, trans_b, scale_a, scale_b, satfinite)
    scale_d = as_bool(scale_d, "scale_d", LayoutError)
    a_bits, b_bits, c = read_operands(smem, desc_a, desc_b, a_regs, c, scale_d, N, K, K, dtype_a, dtype_b, dtype_d,
                                      trans_a, trans_b)
    if dtype_d == "s32":
        c = c.view(np.int32) if c is not None else None
        if dtype_a == "b1":
            d = integer_dot(a_bits, b_bits, c, popc=True)
        else:
            d = integer_dot(decode_int(a_bits, dtype_a), decode_int(b_bits, dtype_b), c, satfinite=satfinite)
        return d
    A = decode_operand(a_bits, dtype_a, negate=scale_a == -1)
    B = decode_operand(b_bits, dtype_b, negate=scale_b == -1)
    C = decode_operand(c, dtype_d) if c is not None else None
    return fused_dot(A, B, C, fdp_unit(dtype_a, dtype_d)).view(OUT_NUMPY[dtype_d])


def wgmma_batch(a_bits, b_bits, c_bits, *, dtype_a: str, dtype_b: str, dtype_d: str, scale_a: int = 1,
                scale_b: int = 1, a_of=None, b_of=None, c_used=None) -> np.ndarray:
    """G dense float wgmmas of one form from operand bits already read (the interpreter's lock-step gangs):
    a_bits (GA, 64, K), b_bits (GB, N, K) raw operand bits, product g reading A a_of[g] and B b_of[g] (None: g);
    c_bits (G, 64, N) raw accumulator bits or None; c_used (G,) bool (None: all), the products whose scale-d adds
    their C, the others adding the unit's +0 accumulator (scale-d = 0). Returns (G, 64, N) raw D bits (uint32,
    uint16 for f16), product g bit for bit what wgmma() gives for it."""
    if dtype_d not in ("f32", "f16"):
        raise LayoutError("dtype_d", f"wgmma_batch computes float accumulators (f32, f16), not {dtype_d}")
    unit = fdp_unit(dtype_a, dtype_d)
    A = decode_operand(a_bits, dtype_a, negate=scale_a == -1)
    B = decode_operand(b_bits, dtype_b, negate=scale_b == -1)
    C = None
    if c_bits is not None:
        C = decode_operand(c_bits, dtype_d)
        if c_used is not None:   # scale-d = 0: the unit's +0 accumulator (fdp_unit), all-zero decoded fields
            C[~np.asarray(c_used, bool)] = 0
    elif c_used is not None and np.any(c_used):
        raise LayoutError("c_used", "products that add C need c_bits")
    return fused_dot_batch(A, B, C, unit, a_of, b_of)
