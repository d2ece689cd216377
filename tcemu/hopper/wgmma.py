"""wgmma.mma_async (sm_90a): D = A * B (+ C), A and B read from shared memory through matrix
descriptors (A optionally from registers), with the hardware's arithmetic (fdp.py).

Legal forms (PTX 9.7.15.5): m64nNk8 tf32 -> f32; m64nNk16 f16 -> f16/f32, bf16 -> f32;
m64nNk32 e4m3/e5m2 (any mix) -> f16/f32, s8/u8 (any mix) -> s32 (optionally .satfinite);
m64nNk256 b1 -> s32 (.and.popc). N: multiples of 8 up to 256; s32 takes 8, 16, 24 and multiples of 16.
imm-scale-a/b (+-1) for floating types; imm-trans-a/b (MN-major) for f16/bf16 only.
"""
import re

import numpy as np

from ..arith.dtypes import SM90_MN_MAJOR_DTYPES
from ..core.errors import LayoutError
from ..arith.fdp import OUT_NUMPY, RNE, RZ, FdpUnit, accumulator_bits, decode_operand, fused_dot, integer_dot
from ..arith.formats import decode_int
from ..layout.fragments import from_a_registers
from ..layout.smem import as_shared_memory
from ..core.validate import as_bool, as_int, show

K_OF = {"tf32": 8, "f16": 16, "bf16": 16, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32, "b1": 256}
_FP8 = ("e4m3", "e5m2")
_INT8 = ("s8", "u8")


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


def legal_n(n: int, dtype_d: str) -> bool:
    if dtype_d == "s32":
        return n in (8, 16, 24) or (n % 16 == 0 and 32 <= n <= 256)
    return n % 8 == 0 and 8 <= n <= 256


def check_form(shape, dtype_a, dtype_b, dtype_d, trans_a, trans_b, scale_a, scale_b, satfinite, k_of=K_OF,
               what="wgmma"):
    """(N, K) of a legal wgmma form; LayoutError naming the first broken rule otherwise. `k_of` is the
    instruction K per multiplicand type (sparse.SP_K_OF for wgmma.mma_async.sp)."""
    m = re.fullmatch(r"m(\d{1,4})n(\d{1,4})k(\d{1,4})", shape) if isinstance(shape, str) else None
    if not m:
        raise LayoutError("shape", f"{show(shape)} is not of the form m64nNkK")
    M, N, K = map(int, m.groups())
    if not isinstance(dtype_a, str) or dtype_a not in k_of:
        raise LayoutError("dtype_a", f"{show(dtype_a)} is not a {what} multiplicand type ({', '.join(k_of)})")
    for name, value in (("dtype_b", dtype_b), ("dtype_d", dtype_d)):
        if not isinstance(value, str):
            raise LayoutError(name, f"must be a type name, got {show(value)}")
    trans_a, trans_b, satfinite = (as_bool(v, f, LayoutError) for v, f in
                                   ((trans_a, "trans_a"), (trans_b, "trans_b"), (satfinite, "satfinite")))
    scale_a, scale_b = as_int(scale_a, "scale_a", -1, 1, LayoutError), as_int(scale_b, "scale_b", -1, 1, LayoutError)
    pairs = {"tf32": ("tf32",), "f16": ("f16",), "bf16": ("bf16",), "e4m3": _FP8, "e5m2": _FP8,
             "s8": _INT8, "u8": _INT8, "b1": ("b1",)}
    if dtype_b not in pairs[dtype_a]:
        raise LayoutError("dtype_b", f"{show(dtype_b)} cannot pair with {dtype_a} (allowed: {', '.join(pairs[dtype_a])})")
    accs = {"tf32": ("f32",), "bf16": ("f32",), "f16": ("f16", "f32"), "s8": ("s32",), "u8": ("s32",),
            "b1": ("s32",)}.get(dtype_a, ("f16", "f32"))
    if dtype_d not in accs:
        raise LayoutError("dtype_d", f"{show(dtype_d)} is not an accumulator for {dtype_a} (allowed: {', '.join(accs)})")
    if M != 64:
        raise LayoutError("shape", f"M = {M}: wgmma is m64 only")
    if K != k_of[dtype_a]:
        raise LayoutError("shape", f"K = {K}: {what} {dtype_a} takes k{k_of[dtype_a]}")
    if not legal_n(N, dtype_d):
        rule = "8, 16, 24 or a multiple of 16 up to 256" if dtype_d == "s32" else "a multiple of 8 up to 256"
        raise LayoutError("shape", f"N = {N} is not legal for {dtype_d} accumulators ({rule})")
    for name, flag in (("trans_a", trans_a), ("trans_b", trans_b)):
        if flag and dtype_a not in SM90_MN_MAJOR_DTYPES:
            raise LayoutError(name, f"transpose (MN-major) needs f16/bf16, not {dtype_a}")
    for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
        if s not in (1, -1):
            raise LayoutError(name, f"imm-scale must be 1 or -1, got {show(s)}")
        if s == -1 and dtype_d == "s32":
            raise LayoutError(name, f"imm-scale applies to floating-point types only, not {dtype_a}")
    if satfinite and (dtype_d != "s32" or dtype_a == "b1"):
        raise LayoutError("satfinite", "only integer (s8/u8) wgmma with s32 accumulators takes .satfinite")
    return N, K


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
