"""Replay of `gemm_outputs` traces (cuBLAS GEMMs through torch, scripts/capture_torch_gemm.py) with tcemu.matmul.

The model of a case is chosen from its record alone (op, types, options, the cuBLAS kernels the profiler saw),
never from its outcome:

  torch.matmul bf16 / f16 (nvjet *_tst / *_hsh)  the chain over K in k16 steps, f32 accumulator from +0,
                                                 then one rounding to the output type (nearest even);
  torch.matmul f32, TF32 allowed                 inputs rounded f32 -> tf32 to nearest even, then the k8
                                                 chain (cutlass_80 s1688 mma.sync and sm90 wgmma kernels);
  torch._scaled_mm e4m3, use_fast_accum          the k32 chain, then D = f32(scale_a * scale_b * acc);
  torch._scaled_mm e4m3, no fast accumulation    the same with the chain promoted into f32 every 4 wgmma
                                                 (every 128 of K: CUTLASS's default FP8 promotion interval).

Not judged, with the reason: f32 with TF32 off (SIMT FFMA kernels, no tensor core), and any case whose kernels
include cuBLAS's split-K reduction (splitKreduce_kernel: how the partials are cut and summed is not known;
README.md, "tcemu.matmul", lists what was tried).
"""
import hashlib

import numpy as np

from ...core.errors import TraceError
from ...arith.formats import decode, encode
from ..inputs import input_bits

_OUT = {"bf16": np.uint16, "f16": np.uint16, "f32": np.uint32}
FP8_PROMOTE_K = 128  # K between promotions of cuBLAS's FP8 kernels without fast accumulation


def case_model(case: dict, meta: dict):
    """(matmul keyword arguments, None) for a case the model claims, or (None, reason) for one it does not."""
    kernels = case.get("kernels") or []
    op, dtype, out = case.get("op"), case.get("in"), case.get("out")
    if any("splitKreduce" in k for k in kernels):
        return None, "cuBLAS split-K reduction (splitKreduce_kernel) is not modelled"
    if op == "matmul" and dtype in ("bf16", "f16"):
        return dict(dtype_a=dtype, dtype_b=dtype, out_dtype=out), None
    if op == "matmul" and dtype == "f32":
        if case.get("options", {}).get("float32_matmul_precision") != "high":
            return None, "f32 without TF32: SIMT FFMA kernels, not a tensor core"
        return dict(dtype_a="tf32", dtype_b="tf32", out_dtype=out, tf32_rounding="rne"), None
    if op == "scaled_mm" and dtype == "e4m3":
        scales = case.get("scales") or meta.get("scales")
        alpha = float(np.float32(np.float32(scales[0]) * np.float32(scales[1])))
        kw = dict(dtype_a="e4m3", dtype_b="e4m3", out_dtype=out, alpha=alpha)
        if not case.get("options", {}).get("use_fast_accum"):
            kw["promote_every"] = FP8_PROMOTE_K // 32
        return kw, None
    return None, f"no model for {op} {dtype}"


def case_inputs(case: dict):
    """(A (M, K), B (K, N)) raw bits, regenerated from the case's seeds (tcemu/traces/inputs.py)."""
    ins = {s["buffer"]: s for s in case["inputs"]}
    a, b = ins["a"], ins["b"]
    A = input_bits(a["dtype"], a["shape"], a["seed"], a["stream"])
    B = input_bits(b["dtype"], b["shape"], b["seed"], b["stream"])
    if case.get("b_layout", "KN") != "KN":  # stored (N, K), passed transposed
        B = B.T
    return A, B


def row_digests(rows: np.ndarray) -> np.ndarray:
    """blake2b (8 bytes, little-endian int) of each row's raw bytes, as the capture computed them."""
    return np.array([int.from_bytes(hashlib.blake2b(np.ascontiguousarray(r).tobytes(), digest_size=8).digest(),
                                    "little") for r in rows], np.uint64)


def run_case(case: dict, kw: dict) -> np.ndarray:
    """The model's raw output bits (M, N) for a claimed case."""
    from ...gemm.engine import matmul
    A, B = case_inputs(case)
    kw = dict(kw)
    rounding = kw.pop("tf32_rounding", None)
    if rounding:  # cuBLAS converts f32 to tf32 (to nearest even) before the MMA
        A = encode(decode(A, "f32"), "tf32", rounding)
        B = encode(decode(B, "f32"), "tf32", rounding)
    return matmul(A, np.ascontiguousarray(B), **kw).view(_OUT[kw["out_dtype"]])


def compare(cols, i, case, got):
    """(rows equal by digest, stored elements equal, stored elements, rows) for case i."""
    M, N = int(cols["m"][i]), int(cols["n"][i])
    if got.shape != (M, N):
        raise TraceError("m", f"case {i}: model output {got.shape}, trace ({M}, {N})")
    stored = int(cols["stored_rows"][i])
    hw = cols["bits"][int(cols["offsets"][i]):int(cols["offsets"][i + 1])].view(_OUT[case["out"]])
    if hw.size != stored * N:
        raise TraceError("bits", f"case {i}: {hw.size} stored elements, expected {stored} rows of {N}")
    digests = cols["row_digests"][int(cols["digest_offsets"][i]):int(cols["digest_offsets"][i + 1])]
    if digests.size != M:
        raise TraceError("row_digests", f"case {i}: {digests.size} digests for {M} rows")
    rows_equal = int(np.count_nonzero(row_digests(got) == digests))
    same = int(np.count_nonzero(got[:stored].reshape(-1) == hw))
    return rows_equal, same, hw.size, M
