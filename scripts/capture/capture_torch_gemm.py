"""cuBLAS GEMM outputs on an sm_90a GPU through torch (issue 15), written as a tcemu trace.

One line for the device machine (repository root), after the Triton capture:

    python3 scripts/capture/capture_kernels.py --kernels .kernels --out $OUT ; python3 scripts/capture/capture_torch_gemm.py --out $OUT

Local check without a GPU or torch (plans the cases, generates the inputs, writes a trace of numpy stand-in
outputs):   python3 scripts/capture/capture_torch_gemm.py --out /tmp/cap --dry-run

Cases, for (M, N, K) in SHAPES: torch.matmul on bf16 and fp16 (torch's defaults, reduced-precision
reductions allowed), f32 with TF32 allowed (set_float32_matmul_precision("high")) and with TF32 off
("highest"); torch._scaled_mm e4m3 x e4m3 with per-tensor f32 scales (1.5 and 0.625) -> bf16 and -> f32,
with use_fast_accum False and True. A is (M, K) row-major; B is (K, N) row-major for matmul and for
_scaled_mm, which wants it column-major, stored (N, K) row-major and passed transposed. Inputs come from the
generator in scripts/capture/capture_kernels.py (the copy of tcemu/traces/inputs.py): A stream 0, B stream 1, one
seed per case. Each case runs twice (determinism); the first run is profiled to name the CUDA kernels that
produced it. Outputs: the full raw bits of every output of at most STORE_ROWS_LIMIT elements, and of the
first 128 rows of the 1024^3 ones, plus an 8-byte blake2b digest of every row of every output, so every
bit is checked. Failures (e.g. _scaled_mm's shape rules) are recorded with their error. Writes
<out>/torch_gemm_sm90.npz (kind `gemm_outputs`, traces/README.md).
"""
import argparse
import ctypes
import datetime
import hashlib
import json
import os
import platform
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import capture_kernels as ck  # noqa: E402  (the input generator copy, provenance helpers; no tcemu)

SHAPES = [(128, 128, 128), (256, 512, 384), (1024, 1024, 1024), (200, 136, 72)]
SCALES = (1.5, 0.625)
STORE_ROWS_LIMIT = 1 << 17   # elements: outputs up to this size are stored whole, larger ones by their first rows
# (op, input format, output format, options)
VARIANTS = [
    ("matmul", "bf16", "bf16", {}),
    ("matmul", "f16", "f16", {}),
    ("matmul", "f32", "f32", {"float32_matmul_precision": "high"}),      # TF32 allowed
    ("matmul", "f32", "f32", {"float32_matmul_precision": "highest"}),   # TF32 off
    ("scaled_mm", "e4m3", "bf16", {"use_fast_accum": False}),
    ("scaled_mm", "e4m3", "bf16", {"use_fast_accum": True}),
    ("scaled_mm", "e4m3", "f32", {"use_fast_accum": False}),
    ("scaled_mm", "e4m3", "f32", {"use_fast_accum": True}),
]
OUT_BYTES = {"bf16": 2, "f16": 2, "f32": 4}


def plan(seed):
    cases = []
    for (m, n, k) in SHAPES:
        for op, fin, fout, opts in VARIANTS:
            i = len(cases)
            cases.append({"index": i, "op": op, "in": fin, "out": fout, "options": dict(opts), "M": m, "N": n, "K": k,
                          "seed": int(ck.words(seed, 0x6E44, i + 1)[i] >> np.uint64(1)),
                          "a_shape": [m, k], "b_shape": [k, n] if op == "matmul" else [n, k],
                          "b_layout": "KN" if op == "matmul" else "NK (passed as .t())",
                          "scales": list(SCALES) if op == "scaled_mm" else None})
    return cases


def row_digests(out_bytes, rows):
    per = out_bytes.reshape(rows, -1)
    return np.array([int.from_bytes(hashlib.blake2b(r.tobytes(), digest_size=8).digest(), "little") for r in per],
                    np.uint64)


def stand_in(case, a_bits, b_bits):
    """Dry run: float64 product rounded to the output type (bf16 by truncation of the f32 bits is near enough
    for sizing and round trips)."""
    a = ck.decode(case["in"], a_bits)
    b = ck.decode(case["in"], b_bits)
    c = a @ (b if case["op"] == "matmul" else b.T)
    if case["op"] == "scaled_mm":
        c = c * SCALES[0] * SCALES[1]
    if case["out"] == "f16":
        return c.astype(np.float16).view(np.uint8).ravel()
    f = c.astype(np.float32)
    if case["out"] == "bf16":
        return (f.view(np.uint32) >> np.uint32(16)).astype(np.uint16).view(np.uint8).ravel()
    return f.view(np.uint8).ravel()


class TorchRunner:
    def __init__(self, device="cuda"):
        import torch
        self.torch = torch
        self.dev = torch.device(device)
        self.cuda = device == "cuda"
        if self.cuda:
            torch.cuda.init()
        self.prof_ok = True

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def tensor(self, fmt, bits):
        t = self.torch
        view = {"bf16": (np.int16, t.bfloat16), "f16": (np.int16, t.float16), "f32": (np.int32, t.float32),
                "e4m3": (np.uint8, t.float8_e4m3fn)}[fmt]
        return t.from_numpy(np.ascontiguousarray(bits).view(view[0])).to(self.dev).view(view[1])

    def run(self, case, a, b):
        t = self.torch
        if case["op"] == "matmul":
            t.set_float32_matmul_precision(case["options"].get("float32_matmul_precision", "highest"))
            case["effective"] = {}
            for flag in ("allow_tf32", "fp32_precision"):   # what the backend reports after the setting
                try:
                    case["effective"][flag] = str(getattr(t.backends.cuda.matmul, flag))
                except Exception as e:  # the older or newer spelling may be missing
                    case["effective"][flag] = f"unavailable ({type(e).__name__})"
            return t.matmul(a, b)
        sa = t.tensor(SCALES[0], dtype=t.float32, device=self.dev)
        sb = t.tensor(SCALES[1], dtype=t.float32, device=self.dev)
        out_dtype = {"bf16": t.bfloat16, "f32": t.float32}[case["out"]]
        return t._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=out_dtype,
                            use_fast_accum=case["options"]["use_fast_accum"])

    def kernels(self, fn):
        """(result, names of the CUDA kernels the call launched) via torch.profiler; names best effort."""
        if not self.prof_ok:
            return fn(), ["profiler unavailable"]
        try:
            from torch.profiler import ProfilerActivity, profile
            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
            with profile(activities=acts) as prof:
                out = fn()
                self.sync()
            names = []
            for e in prof.events():
                dt = str(getattr(e, "device_type", ""))
                if "CUDA" in dt and e.name not in names:
                    names.append(e.name)
            return out, names
        except Exception as e:  # the kernel names are a courtesy; the output is what matters
            self.prof_ok = False
            return fn(), [f"profiler failed: {type(e).__name__}: {e}"]

    def bits(self, out):
        t = self.torch
        iv = {t.bfloat16: t.int16, t.float16: t.int16, t.float32: t.int32}[out.dtype]
        return out.contiguous().view(iv).cpu().numpy().view(np.uint8).ravel().copy()

    def info(self):
        t = self.torch
        d = {"torch": t.__version__, "torch_cuda": t.version.cuda, "cudnn": str(t.backends.cudnn.version()),
             "gpu": t.cuda.get_device_name(0) if self.cuda else f"torch device {self.dev} (not a capture)",
             "compute_capability": list(t.cuda.get_device_capability(0)) if self.cuda else None,
             "allow_bf16_reduced_precision_reduction": t.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
             "allow_fp16_reduced_precision_reduction": t.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
             "CUBLAS_WORKSPACE_CONFIG": os.environ.get("CUBLAS_WORKSPACE_CONFIG")}
        try:
            d["preferred_blas_library"] = str(t.backends.cuda.preferred_blas_library())
        except Exception as e:  # provenance is best effort
            d["preferred_blas_library"] = f"unavailable ({e})"
        d.update(cublas_versions())
        return d


def cublas_versions():
    """Versions of the cuBLAS libraries this process loaded (read from /proc/self/maps, asked via ctypes)."""
    out = {}
    try:
        libs = sorted({line.split()[-1] for line in open("/proc/self/maps") if "libcublas" in line})
    except OSError as e:
        return {"cublas": f"unavailable ({e})"}
    out["cublas_libraries"] = libs
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
            if "cublasLt" in os.path.basename(path):
                lib.cublasLtGetVersion.restype = ctypes.c_size_t
                out["cublasLt_version"] = int(lib.cublasLtGetVersion())
            else:
                v = ctypes.c_int()
                fn = getattr(lib, "cublasGetProperty", None)
                if fn is not None:
                    parts = []
                    for prop in (0, 1, 2):   # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
                        fn(prop, ctypes.byref(v))
                        parts.append(v.value)
                    out["cublas_version"] = ".".join(map(str, parts))
        except Exception as e:  # provenance is best effort
            out[f"error {os.path.basename(path)}"] = str(e)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--seed", type=int, default=1515)
    ap.add_argument("--dry-run", action="store_true", help="no GPU, no torch: numpy stand-in outputs")
    ap.add_argument("--device", default="cuda", help="torch device; 'cpu' only smoke-tests the torch calls locally")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    t_start = time.time()
    cases = plan(args.seed)
    runner = None if args.dry_run else TorchRunner(args.device)
    outs, digests = [], []
    for c in cases:
        c.update(status="error", error=None, deterministic=None, kernels=None, stored_rows=0)
        a_bits = ck.input_bits(c["in"], c["a_shape"], c["seed"], ck.STREAM_A)
        b_bits = ck.input_bits(c["in"], c["b_shape"], c["seed"], ck.STREAM_B)
        c["inputs"] = [{"buffer": "a", "dtype": c["in"], "shape": c["a_shape"], "seed": c["seed"], "stream": 0},
                       {"buffer": "b", "dtype": c["in"], "shape": c["b_shape"], "seed": c["seed"], "stream": 1}]
        out = None
        try:
            if runner is None:
                first, second, c["kernels"] = stand_in(c, a_bits, b_bits), stand_in(c, a_bits, b_bits), ["dry run"]
            else:
                a, b = runner.tensor(c["in"], a_bits), runner.tensor(c["in"], b_bits)
                r1, c["kernels"] = runner.kernels(lambda: runner.run(c, a, b))
                runner.sync()
                first = runner.bits(r1)
                r2 = runner.run(c, a, b)
                runner.sync()
                second = runner.bits(r2)
                c["output_shape"] = list(r1.shape)
            if first.size != c["M"] * c["N"] * OUT_BYTES[c["out"]]:
                raise ValueError(f"output has {first.size} bytes, expected {c['M']}x{c['N']} {c['out']}")
            c["deterministic"] = bool(np.array_equal(first, second))
            c["status"] = "ok" if c["deterministic"] else "nondeterministic"
            out = first
        except Exception as e:
            c["error"] = f"{type(e).__name__}: {e}"
            c["traceback"] = traceback.format_exc(limit=3)
        if out is not None:
            rows = c["M"] if c["M"] * c["N"] <= STORE_ROWS_LIMIT else max(1, STORE_ROWS_LIMIT // c["N"])
            c["stored_rows"] = rows
            outs.append(out[:rows * c["N"] * OUT_BYTES[c["out"]]])
            digests.append(row_digests(out, c["M"]))
        else:
            outs.append(np.zeros(0, np.uint8))
            digests.append(np.zeros(0, np.uint64))
        print(f"[{time.time() - t_start:6.1f}s] case {c['index']:2d} {c['op']:9s} {c['in']:4s}->{c['out']:4s} "
              f"{json.dumps(c['options']):38s} {c['M']:4d}x{c['N']:4d}x{c['K']:4d} {c['status']}"
              + (f": {c['error']}" if c["error"] else "") + (f"  {c['kernels']}" if c["kernels"] else ""), flush=True)
    env = {"dry_run": True, "gpu": "dry run (no GPU)"} if runner is None else {"dry_run": False, **runner.info()}
    status_codes = {"ok": 0, "error": 1, "nondeterministic": 2}
    meta = {"format": "tcemu-trace", "version": 1, "kind": "gemm_outputs", "arch": "sm90", **env,
            "driver": ck.sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1") or None,
            "cuda": env.get("torch_cuda"), "python": platform.python_version(), "numpy": np.__version__,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": "python3 " + " ".join(sys.argv), "build": None, "smem_base": None, "seed": args.seed,
            "sources": {f: ck.sha256_file(os.path.join(ck.ROOT, f)) for f in
                        ("scripts/capture/capture_torch_gemm.py", "scripts/capture/capture_kernels.py", "tcemu/traces/inputs.py")},
            "generator": "scripts/capture/capture_kernels.py input_bits (= tcemu/traces/inputs.py): A stream 0, B stream 1",
            "scales": list(SCALES), "store_rows_limit": STORE_ROWS_LIMIT, "status_codes": status_codes,
            "cases": cases,
            "columns": {"seed": "uint64 case seed", "status": "index into meta.status_codes",
                        "m": "M", "n": "N", "k": "K",
                        "stored_rows": "rows of the output stored whole in bits (the first ones)",
                        "offsets": "case i's stored bytes are bits[offsets[i]:offsets[i+1]]",
                        "bits": "uint8 raw output bytes, little-endian elements, row-major, first stored_rows rows",
                        "digest_offsets": "case i's row digests are row_digests[digest_offsets[i]:digest_offsets[i+1]]",
                        "row_digests": "uint64: blake2b(digest_size=8) of each output row's raw little-endian "
                                       "bytes, read as a little-endian int (every row, stored or not)"}}
    sizes = [o.size for o in outs]
    path = os.path.join(args.out, "torch_gemm_sm90.npz")
    np.savez_compressed(
        path, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
        seed=np.array([c["seed"] for c in cases], np.uint64),
        status=np.array([status_codes[c["status"]] for c in cases], np.int8),
        m=np.array([c["M"] for c in cases], np.int32), n=np.array([c["N"] for c in cases], np.int32),
        k=np.array([c["K"] for c in cases], np.int32),
        stored_rows=np.array([c["stored_rows"] for c in cases], np.int32),
        offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        bits=np.concatenate(outs).astype(np.uint8),
        digest_offsets=np.concatenate([[0], np.cumsum([d.size for d in digests])]).astype(np.int64),
        row_digests=np.concatenate(digests).astype(np.uint64))
    ok = sum(c["status"] == "ok" for c in cases)
    print(f"\nwrote {path}: {ok}/{len(cases)} cases ok, {os.path.getsize(path)} bytes, {time.time() - t_start:.1f} s"
          + (" (DRY RUN: stand-in outputs)" if runner is None else ""))


if __name__ == "__main__":
    main()
