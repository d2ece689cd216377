"""wgmma.mma_async's legal forms (PTX 9.7.15.5, sparse 9.7.15.6): one table for the instruction model
(wgmma.py, sparse.py) and the PTX operand grammar (tcemu/ptx/ops/wgmma.py).

m64nNk8 tf32 -> f32; m64nNk16 f16 -> f16/f32, bf16 -> f32; m64nNk32 e4m3/e5m2 (any mix) -> f16/f32, s8/u8 (any mix)
-> s32 (optionally .satfinite); m64nNk256 b1 -> s32 (.and.popc). N: multiples of 8 up to 256; s32 takes 8, 16, 24
and multiples of 16. imm-scale-a/b (+-1) for floating types; imm-trans-a/b (MN-major) for f16/bf16 only. The
sparse form doubles K (b1 has none) and takes sp-sel 0 or 1 for 32- and 16-bit types, 0 for 8-bit ones.
"""
import re

import numpy as np

from ..arith.dtypes import SM90_MN_MAJOR_DTYPES
from ..core.errors import LayoutError
from ..core.validate import as_bool, as_int, show

K_OF = {"tf32": 8, "f16": 16, "bf16": 16, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32, "b1": 256}
SP_K_OF = {"tf32": 16, "f16": 32, "bf16": 32, "e4m3": 64, "e5m2": 64, "s8": 64, "u8": 64}
_FP8 = ("e4m3", "e5m2")
_INT8 = ("s8", "u8")
B_TYPES = {"tf32": ("tf32",), "f16": ("f16",), "bf16": ("bf16",), "e4m3": _FP8, "e5m2": _FP8,
           "s8": _INT8, "u8": _INT8, "b1": ("b1",)}                    # B's type for each A type
ACCUMULATORS = {"tf32": ("f32",), "bf16": ("f32",), "f16": ("f16", "f32"), "e4m3": ("f16", "f32"),
                "e5m2": ("f16", "f32"), "s8": ("s32",), "u8": ("s32",), "b1": ("s32",)}
D_TYPES = ("f32", "f16", "s32")
SELECTORS = {"tf32": (0, 1), "f16": (0, 1), "bf16": (0, 1), "e4m3": (0,), "e5m2": (0,), "s8": (0,), "u8": (0,)}


def legal_n(n: int, dtype_d: str) -> bool:
    if dtype_d == "s32":
        return n in (8, 16, 24) or (n % 16 == 0 and 32 <= n <= 256)
    return n % 8 == 0 and 8 <= n <= 256


def immediates(dtype_a: str, dtype_d: str, a_regs: bool):
    """The immediates after scale-d, in order (PTX 9.7.15.5): none for integer types; imm-scale-a, imm-scale-b,
    then, for the MN-major-capable f16/bf16, imm-trans-b and (A from shared memory) imm-trans-a before it."""
    if dtype_d == "s32":
        return ()
    if dtype_a not in SM90_MN_MAJOR_DTYPES:
        return ("scale_a", "scale_b")
    return ("scale_a", "scale_b") + (("trans_b",) if a_regs else ("trans_a", "trans_b"))


def sparse_dtype(dtype_a) -> str:
    if not isinstance(dtype_a, str) or dtype_a not in SP_K_OF:
        raise LayoutError("dtype_a", f"{show(dtype_a)} is not a sparse wgmma multiplicand type ({', '.join(SP_K_OF)})")
    return dtype_a


def sparse_selector(dtype_a, selector) -> int:
    if isinstance(selector, bool) or not isinstance(selector, (int, np.integer)) or \
            int(selector) not in SELECTORS[sparse_dtype(dtype_a)]:
        allowed = " or ".join(map(str, SELECTORS[dtype_a]))
        raise LayoutError("sparsity_selector", f"{show(selector)}: {dtype_a} takes sp-sel {allowed} (PTX 9.7.15.6.1; "
                                               "ptxas rejects any other value)")
    return int(selector)


def check_form(shape, dtype_a, dtype_b, dtype_d, trans_a, trans_b, scale_a, scale_b, satfinite, k_of=K_OF,
               what="wgmma"):
    """(N, K) of a legal wgmma form; LayoutError naming the first broken rule otherwise. `k_of` is the
    instruction K per multiplicand type (SP_K_OF for wgmma.mma_async.sp)."""
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
    if dtype_b not in B_TYPES[dtype_a]:
        allowed = ", ".join(B_TYPES[dtype_a])
        raise LayoutError("dtype_b", f"{show(dtype_b)} cannot pair with {dtype_a} (allowed: {allowed})")
    accs = ACCUMULATORS[dtype_a]
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
