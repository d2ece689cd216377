"""`tcemu run --check`: a GEMM kernel's output against a reference, with the match figures.

numpy   C against the float64 product of the same inputs: every element must lie within
        |C - AB| <= u_out |AB| + K u_acc (|A| |B|) + the output format's smallest subnormal / 2,
        u_out the output format's unit roundoff, u_acc 2^-23 (2^-13 for fp8 operands, whose products are
        aligned to 13 bits); the report gives how many do and the normwise error max |C - AB| / max |AB|.
matmul  C against tcemu.matmul, the tensor core's own arithmetic chained over K as the kernel issues it:
        the report gives how many elements are bit-identical; any difference is a mismatch.
"""
import numpy as np

from ..arith.formats import decode
from ..core.errors import TcemuError
from ..gemm import matmul

MAN_BITS = {"f16": 10, "bf16": 7, "f32": 23, "tf32": 10, "e4m3": 3, "e5m2": 2}
MIN_SUBNORMAL_EXP = {"f16": -24, "bf16": -133, "f32": -149, "e4m3": -9, "e5m2": -16}
SHOW = 5   # mismatching elements listed


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def check(gemm, out: np.ndarray, how: str, arch: str):
    """(ok, report lines, JSON record) for output `out` of `gemm` (tcemu.tools.launch.Gemm)."""
    c = _bits(out)
    M, K = gemm.a.shape
    N = gemm.b.shape[1]
    if c.size != M * N:
        raise TcemuError("--check", f"{gemm.c_name} holds {c.size} elements, the GEMM's C {M} x {N}")
    c = c.reshape(M, N)
    name = gemm.c_name
    where = lambda i, j: f"{name}[{i}, {j}]"  # noqa: E731
    if how == "matmul":
        ref = _bits(np.asarray(matmul(gemm.a, np.ascontiguousarray(gemm.b), dtype_a=gemm.dtype_a, dtype_b=gemm.dtype_b,
                                      out_dtype=gemm.out_dtype, arch=arch, **gemm.options)))
        same = c == ref
        n = int(same.sum())
        opts = ", ".join(f"{k} {v}" for k, v in gemm.options.items())
        lines = [f"check matmul: {n} of {c.size} outputs of {name} bit-identical to tcemu.matmul ({gemm.dtype_a} x "
                 f"{gemm.dtype_b} -> {gemm.out_dtype}, {arch}{', ' + opts if opts else ''})"]
        w = 2 * c.itemsize
        for i, j in np.argwhere(~same)[:SHOW]:
            lines.append(f"  {where(i, j)}: kernel {int(c[i, j]):#0{w + 2}x}, tcemu.matmul {int(ref[i, j]):#0{w + 2}x}")
        return n == c.size, lines, {"how": how, "outputs": int(c.size), "matched": n}
    A = decode(gemm.a, gemm.dtype_a)
    B = decode(np.ascontiguousarray(gemm.b), gemm.dtype_b)
    alpha = float(gemm.options.get("alpha", 1.0))
    with np.errstate(all="ignore"):
        ref = alpha * (A @ B)
        mag = abs(alpha) * (np.abs(A) @ np.abs(B))
        got = decode(c, gemm.out_dtype)
        u_out = 2.0 ** -(MAN_BITS[gemm.out_dtype] + 1)
        u_acc = 2.0 ** -13 if gemm.dtype_a in ("e4m3", "e5m2") else 2.0 ** -23
        floor = 2.0 ** (MIN_SUBNORMAL_EXP.get(gemm.out_dtype, -149) - 1)
        bound = u_out * np.abs(ref) + K * u_acc * mag + floor
        diff = np.abs(got - ref)
        ok_el = diff <= bound  # NaN and inf compare False: a mismatch
        top = float(np.abs(ref).max()) if ref.size else 0.0
        normwise = float(np.nanmax(diff)) / top if top else float(np.nanmax(diff)) if diff.size else 0.0
    n = int(ok_el.sum())
    lines = [f"check numpy: {n} of {c.size} outputs of {name} within |C - AB| <= 2^-{MAN_BITS[gemm.out_dtype] + 1} "
             f"|AB| + K 2^{int(np.log2(u_acc))} (|A| |B|) of the float64 product; max |C - AB| / max |AB| = "
             f"{normwise:.2e}"]
    for i, j in np.argwhere(~ok_el)[:SHOW]:
        lines.append(f"  {where(i, j)} = {got[i, j]:.6g}, AB = {ref[i, j]:.6g} (bound {bound[i, j]:.3g})")
    return n == c.size, lines, {"how": how, "outputs": int(c.size), "matched": n, "normwise_error": normwise}
