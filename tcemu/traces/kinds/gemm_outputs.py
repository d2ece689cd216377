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

from ...arith.formats import decode, encode
from ...core.errors import TcemuError, TraceError
from ...core.validate import is_int, show
from ...gemm.engine import matmul
from ..archive import MAX_GEMM_DIM, MAX_GEMM_MACS, MAX_KERNEL_ELEMENTS, Trace
from ..inputs import FORMATS, input_bits
from .base import GroupResult, Kind, ReplayResult, col, offsets

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


# ---- the kind: what a case record must hold (checked before a replay starts), and the replay

def _check(meta, cols):
    """gemm_outputs: every case record holds what this module reads (op, types, options, kernels, the inputs'
    seeds and shapes, which must be the columns' M x K and K x N), and each case's stored bytes and row digests
    are its record's: stored_rows whole rows of N outputs, M digests; none for a failed case."""
    status = col(cols, "status", 0, 127, (None,))
    n = status.size
    col(cols, "seed", 0, (1 << 64) - 1, (n,))
    m, nn, k = (col(cols, c, 1, MAX_GEMM_DIM, (n,)).astype(np.int64) for c in ("m", "n", "k"))
    rows = col(cols, "stored_rows", 0, MAX_GEMM_DIM, (n,)).astype(np.int64)
    bits = col(cols, "bits", 0, 255, (None,))
    off = offsets(cols, "offsets", n, bits.size)
    digests = col(cols, "row_digests", 0, (1 << 64) - 1, (None,))
    doff = offsets(cols, "digest_offsets", n, digests.size)
    cases = meta.get("cases")
    if not isinstance(cases, list) or len(cases) != n:
        raise TraceError("meta.cases", f"one case record per status entry expected ({n}), got {show(cases)}")
    scales = meta.get("scales")
    for i, case in enumerate(cases):
        field = f"meta.cases[{i}]"
        if not isinstance(case, dict):
            raise TraceError(field, f"must be a record (a JSON object), got {show(case)}")
        M, N, K = int(m[i]), int(nn[i]), int(k[i])
        if M * N * K > MAX_GEMM_MACS or max(M * K, K * N, M * N) > MAX_KERNEL_ELEMENTS:
            raise TraceError(field, f"{M} x {N} x {K} is larger than a trace's GEMM ({MAX_GEMM_MACS:,} products, "
                                    f"{MAX_KERNEL_ELEMENTS:,} elements an operand)")
        if status[i] != 0:
            if rows[i] or off[i + 1] != off[i] or doff[i + 1] != doff[i]:
                raise TraceError(field, "a case that was not captured stores no outputs and no digests")
            continue
        _gemm_case(case, field, M, N, K, meta, scales, FORMATS, _OUT)
        size = np.dtype(_OUT[case["out"]]).itemsize
        if rows[i] > M or off[i + 1] - off[i] != rows[i] * N * size:
            raise TraceError("offsets", f"case {i} stores {int(off[i + 1] - off[i]):,} bytes; {int(rows[i])} whole "
                                        f"rows of {N} {case['out']} outputs (at most {M} rows) expected")
        if doff[i + 1] - doff[i] != M:
            raise TraceError("digest_offsets", f"case {i} holds {int(doff[i + 1] - doff[i])} row digests; its "
                                               f"{M} rows expected")


def _gemm_case(case, field, M, N, K, meta, scales, formats, out_types):
    def need(cond, what):
        if not cond:
            raise TraceError(field, what)

    def finite(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) and abs(v) < 1e38
    need(isinstance(case.get("op"), str) and isinstance(case.get("in"), str), "op and in must be names")
    need(case.get("out") in out_types, f"out must be one of {', '.join(out_types)}")
    need(isinstance(case.get("options", {}), dict), "options must be a record")
    need(isinstance(case.get("kernels", []), list) and len(case.get("kernels", [])) <= 64 and
         all(isinstance(x, str) and len(x) <= 400 for x in case.get("kernels", [])),
         "kernels must be a list of kernel names")
    need(case.get("b_layout", "KN") is None or isinstance(case.get("b_layout", "KN"), str),
         "b_layout must be a name")
    if case["op"] == "scaled_mm":
        sc = case.get("scales") or scales
        need(isinstance(sc, list) and len(sc) == 2 and all(finite(v) for v in sc),
             "scaled_mm needs its two per-tensor scales (the case's or meta.scales): finite numbers")
    ins = case.get("inputs")
    need(isinstance(ins, list) and all(isinstance(t, dict) for t in ins) and
         sorted(t.get("buffer") for t in ins) == ["a", "b"], "inputs must be the records of buffers a and b")
    want_b = [K, N] if case.get("b_layout", "KN") == "KN" else [N, K]  # otherwise stored (N, K), passed .t()
    for t in ins:
        shape = [M, K] if t["buffer"] == "a" else want_b
        need(t.get("dtype") == case["in"] and t["dtype"] in formats,
             f"input {t['buffer']}'s dtype must be the case's type ({show(case['in'])}), one of tcemu.kernel_inputs'")
        need(t.get("shape") == shape and all(is_int(x) for x in t["shape"]),
             f"input {t['buffer']}'s shape must be {shape} (M, N, K of the columns)")
        need(is_int(t.get("seed")) and 0 <= t["seed"] < 1 << 64 and is_int(t.get("stream")) and
             0 <= t["stream"] < 1 << 64, f"input {t['buffer']} needs an integer seed and stream below 2^64")


def _replay(trace: Trace, result: ReplayResult, max_report: int):
    """cuBLAS GEMMs (gemm_outputs) through tcemu.matmul; the model of each case comes from its record
    (case_model), and cases it does not claim are noted, not judged."""
    cols = trace.columns
    for i, case in enumerate(trace.meta["cases"]):  # check_trace has held every record to _check
        label = f"case {i} {case.get('op')} {case.get('in')}->{case.get('out')} {case.get('M')}x{case.get('N')}x" \
                f"{case.get('K')}"
        if int(cols["status"][i]) != 0:
            result.notes.append(f"{label}: not captured ({case.get('error') or case.get('status')})")
            continue
        kw, reason = case_model(case, trace.meta)
        if kw is None:
            result.notes.append(f"{label}: not judged ({reason})")
            continue
        opts = case.get("options") or {}
        name = f"{case['op']} {case['in']}->{case['out']}" + (
            "" if case["op"] != "scaled_mm" else " fast_accum" if opts.get("use_fast_accum") else " promote")
        g = result.groups.setdefault(name, GroupResult())
        try:
            rows_eq, same, stored, rows = compare(cols, i, case, run_case(case, kw))
        except TcemuError as e:  # the model refuses the case: every value of it counts as differing
            g.cases += 1
            g.values += int(cols["m"][i]) + int(cols["stored_rows"][i]) * int(cols["n"][i])
            if len(result.mismatches) < max_report:
                result.mismatches.append(f"{label}: tcemu raised {type(e).__name__}: {e}"[:400])
            continue
        g.cases += 1
        g.values += rows + stored
        g.values_matched += rows_eq + same
        g.cases_matched += rows_eq == rows and same == stored
        if (rows_eq != rows or same != stored) and len(result.mismatches) < max_report:
            result.mismatches.append(f"{label}: {rows - rows_eq} of {rows} row digests and {stored - same} of "
                                     f"{stored} stored outputs differ")


TRACE_KINDS = (Kind("gemm_outputs", ("seed", "status", "m", "n", "k", "stored_rows", "offsets", "bits",
                                     "digest_offsets", "row_digests"), _check, _replay),)
