"""Run the special-function Triton kernels' cubins (scripts/fixtures/triton_sfu_kernels.py) on an sm_90a GPU and write every
output of every case as a tcemu trace: traces/triton_sfu_kernels_sm90.npz (kind `kernel_outputs`, multi-launch
cases; traces/README.md).

On the device machine, from a folder holding this script, scripts/capture/capture_kernels.py (whose driver access,
input generator and parameter packing it reuses), the fixtures' .json/.ptx and the cubins:

    python3 capture_sfu_kernels.py --kernels kernels --fixtures fixtures --out $OUT

Local check without a GPU (plans every case, checks each launch's specialisation against its fixture, generates
the inputs, packs every parameter and tensor map, writes a trace whose outputs are left poisoned):

    python3 scripts/capture/capture_sfu_kernels.py --kernels .kernels --out /tmp/cap --dry-run

Needs numpy and cuda-bindings only; imports nothing from tcemu or Triton. A case is a sequence of launches over a
set of buffers: inputs (filled from their seed by capture_kernels' copy of tcemu/traces/inputs.py, stream = the
input's index), outputs poisoned with 0xFF, or zeroed where the tutorial's host code allocates them with
torch.zeros (layer norm's locks and partial sums). Every non-input buffer sits between two poisoned 4 KiB guards.
Each launch: the specialisation check, the cubin's sha256, cuModuleLoadData, the .param list packed by hand
(host tensor descriptors through cuTensorMapEncodeTiled as Triton 3.9 builds them), launch, bounded wait. The
whole sequence runs twice (buffers re-initialised) and the two runs must agree. The trace stores, per case, the
bytes of every output buffer in the order of its `outputs`, and the record of every launch.
"""
import argparse
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
import capture_kernels as ck  # noqa: E402  (no tcemu inside: the driver, the generator, pack_params)

ROOT = os.path.dirname(os.path.dirname(HERE))
ELEM = {"f16": ("fp16", 2), "f32": ("fp32", 4), "i32": ("i32", 4)}   # buffer dtype -> Triton type, bytes
GUARD, POISON = ck.GUARD, ck.POISON

# ----------------------------------------------------------------------------------------------- the cases
Z, H, N_CTX, HEAD_DIM = 1, 2, 256, 64          # attention: BATCH * HEADS = 2
ROWS = Z * H * N_CTX                           # q, k, v, o, do, dq, dk, dv stored (Z * H * N_CTX, HEAD_DIM)
RCP_LN2 = 1.4426950408889634


def f32(x):
    """A float argument as the launch passes it (an fp32 parameter): the nearest float32, as a Python float."""
    return float(np.float32(x))


class Case:
    """Buffers (name -> dtype, shape, init) and launches of one case."""

    def __init__(self, name, fixture):
        self.name, self.fixture = name, fixture    # fixture: the kernel the case is about (its replay group)
        self.buffers, self.launches, self.outputs = {}, [], []

    def buf(self, name, dtype, shape, init):
        assert init in ("input", "poison", "zero") and dtype in ELEM
        self.buffers[name] = {"dtype": dtype, "shape": list(shape), "init": init}
        if init != "input":
            self.outputs.append(name)
        return self

    def launch(self, fixture, grid, **args):
        """args: ("ptr", buffer) for a pointer, ("desc", buffer, block) for a host tensor descriptor, an int, a
        float (fp32)."""
        values, bind, descs = {}, {}, {}
        for a, v in args.items():
            if isinstance(v, tuple) and v[0] == "ptr":
                values[a], bind[a] = "*" + ELEM[self.buffers[v[1]]["dtype"]][0], v[1]
            elif isinstance(v, tuple) and v[0] == "desc":
                values[a] = f"tensordesc<{ELEM[self.buffers[v[1]]['dtype']][0]}[{v[2][0]}, {v[2][1]}]>"
                bind[a], descs[a] = v[1], (v[1], list(v[2]))
            else:
                values[a] = v
        self.launches.append({"fixture": fixture, "values": values, "bind": bind, "descs": descs,
                              "grid": list(grid) + [1] * (3 - len(grid))})
        return self

    def as_dict(self):
        return {"name": self.name, "fixture": self.fixture, "buffers": self.buffers, "outputs": self.outputs,
                "launches": self.launches}


def softmax(n_rows, n_cols, programs):
    c = Case(f"softmax_f32 {n_rows}x{n_cols}", "softmax_f32")
    c.buf("x", "f32", (n_rows, n_cols), "input").buf("y", "f32", (n_rows, n_cols), "poison")
    return c.launch("softmax_f32", (programs,), output_ptr=("ptr", "y"), input_ptr=("ptr", "x"),
                    input_row_stride=n_cols, output_row_stride=n_cols, n_rows=n_rows, n_cols=n_cols)


def _ln_fwd(c, M, N, eps):
    return c.launch("layernorm_fwd", (M,), X=("ptr", "x"), Y=("ptr", "y"), W=("ptr", "w"), B=("ptr", "b"),
                    Mean=("ptr", "mean"), Rstd=("ptr", "rstd"), stride=N, N=N, eps=f32(eps))


def layernorm(M, N, eps=1e-5, backward=False):
    c = Case(f"layernorm_{'bwd' if backward else 'fwd'} {M}x{N}", "layernorm_bwd_dx" if backward else "layernorm_fwd")
    c.buf("x", "f16", (M, N), "input").buf("w", "f16", (N,), "input").buf("b", "f16", (N,), "input")
    if backward:
        c.buf("dy", "f16", (M, N), "input")
    c.buf("y", "f16", (M, N), "poison").buf("mean", "f32", (M,), "poison").buf("rstd", "f32", (M,), "poison")
    _ln_fwd(c, M, N, eps)
    if not backward:
        return c
    group = 256   # the tutorial's GROUP_SIZE_M for N <= 1024: >= M, so no two rows share a lock or partial row
    assert N <= 1024 and M <= group
    c.buf("dx", "f16", (M, N), "poison").buf("dw_part", "f16", (group, N), "zero")
    c.buf("db_part", "f16", (group, N), "zero").buf("locks", "i32", (2 * group,), "zero")
    c.buf("dw", "f16", (N,), "poison").buf("db", "f16", (N,), "poison")
    c.launch("layernorm_bwd_dx", (M,), DX=("ptr", "dx"), DY=("ptr", "dy"), DW=("ptr", "dw_part"),
             DB=("ptr", "db_part"), X=("ptr", "x"), W=("ptr", "w"), Mean=("ptr", "mean"), Rstd=("ptr", "rstd"),
             Lock=("ptr", "locks"), stride=N, N=N)
    c.launch("layernorm_bwd_dwdb", (-(-N // 128),), DW=("ptr", "dw_part"), DB=("ptr", "db_part"),
             FINAL_DW=("ptr", "dw"), FINAL_DB=("ptr", "db"), M=min(group, M), N=N)
    return c


def _attn_fwd(c, causal, sm_scale):
    fx = "attn_fwd_causal_f16" if causal else "attn_fwd_f16"
    return c.launch(fx, (N_CTX // 128, Z * H), sm_scale=f32(sm_scale), M=("ptr", "m"), Z=Z, H=H,
                    desc_q=("desc", "q", (128, HEAD_DIM)), desc_k=("desc", "k", (64, HEAD_DIM)),
                    desc_v=("desc", "v", (64, HEAD_DIM)), desc_o=("desc", "o", (128, HEAD_DIM)), N_CTX=N_CTX)


def attention(causal, sm_scale, backward=False):
    kind = ("bwd" if backward else "fwd") + ("_causal" if causal else "")
    main = f"attn_{kind}_f16"
    c = Case(f"{main} Z{Z} H{H} N_CTX{N_CTX} D{HEAD_DIM} sm_scale {sm_scale}", main)
    for t in ("q", "k", "v") + (("do",) if backward else ()):
        c.buf(t, "f16", (ROWS, HEAD_DIM), "input")
    c.buf("o", "f16", (ROWS, HEAD_DIM), "poison").buf("m", "f32", (ROWS,), "poison")
    _attn_fwd(c, causal, sm_scale)
    if not backward:
        return c
    c.buf("arg_k", "f16", (ROWS, HEAD_DIM), "poison").buf("delta", "f32", (ROWS,), "poison")
    for t in ("dq", "dk", "dv"):
        c.buf(t, "f16", (ROWS, HEAD_DIM), "poison")
    c.launch("attn_scale_k", (ROWS * HEAD_DIM // 1024,), K=("ptr", "k"), ARG_K=("ptr", "arg_k"),
             n_elements=ROWS * HEAD_DIM, scale=f32(sm_scale * RCP_LN2))
    c.launch("attn_bwd_preprocess", (N_CTX // 128, Z * H), O=("ptr", "o"), DO=("ptr", "do"), Delta=("ptr", "delta"),
             Z=Z, H=H, N_CTX=N_CTX)
    return c.launch(main, (N_CTX // 128, 1, Z * H), Q=("ptr", "q"), K=("ptr", "arg_k"), V=("ptr", "v"),
                    sm_scale=f32(sm_scale), DO=("ptr", "do"), DQ=("ptr", "dq"), DK=("ptr", "dk"), DV=("ptr", "dv"),
                    M=("ptr", "m"), D=("ptr", "delta"), stride_z=H * N_CTX * HEAD_DIM, stride_h=N_CTX * HEAD_DIM,
                    stride_tok=HEAD_DIM, stride_d=1, H=H, N_CTX=N_CTX)


def matmul_gelu(form, M, N, K, alpha):
    fx = f"matmul_gelu_{form}"
    c = Case(f"{fx} {M}x{N}x{K}", fx)
    c.buf("a", "f16", (M, K), "input").buf("b", "f16", (K, N), "input").buf("c", "f16", (M, N), "poison")
    return c.launch(fx, (-(-M // 128) * -(-N // 128),), a_ptr=("ptr", "a"), b_ptr=("ptr", "b"), c_ptr=("ptr", "c"),
                    M=M, N=N, K=K, stride_am=K, stride_ak=1, stride_bk=N, stride_bn=1, stride_cm=N, stride_cn=1,
                    alpha=f32(alpha))


# Inputs come from tcemu/traces/inputs.py: magnitudes 2^-4..2^5, random signs, 1/32 zeros. A dot product of
# 64 such fp16 values has an rms near 700, so the attention scales below keep the softmax from being one-hot
# everywhere (0.125 is 1/sqrt(HEAD_DIM), the usual choice; 2^-7 softens it) and alpha = 2^-9 brings the matmul's
# accumulator (rms ~ 1400 at K = 256) into the range where GELU is neither x nor 0.
CASES = [c.as_dict() for c in [
    softmax(64, 1000, 64), softmax(48, 781, 16),
    layernorm(64, 512), layernorm(64, 512, backward=True),
    attention(False, 0.125), attention(False, 2 ** -7), attention(True, 0.125), attention(True, 2 ** -7),
    attention(False, 2 ** -6, backward=True), attention(True, 2 ** -6, backward=True),
    matmul_gelu("erf", 256, 256, 256, 2 ** -9), matmul_gelu("erf", 128, 384, 192, 2 ** -8),
    matmul_gelu("tanh", 256, 256, 256, 2 ** -9), matmul_gelu("tanh", 128, 384, 192, 2 ** -8),
]]


# ----------------------------------------------------------------------------------------------- the run
def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def plan_launch(case, ln):
    """capture_kernels' plan record (what its check_specialisation / pack_params read) for one launch."""
    bufs = {n: (ELEM[b["dtype"]][0], tuple(b["shape"])) for n, b in case["buffers"].items()}
    return {"fixture": ln["fixture"], "values": ln["values"], "bind": ln["bind"], "descs": ln["descs"],
            "buffers": bufs}


def run_case(drv, index, case, seed, fixtures_dir, kernels_dir, modules):
    info = {"index": index, "name": case["name"], "fixture": case["fixture"], "seed": seed, "status": "error",
            "error": None, "deterministic": None}
    outs = None
    allocs, running = [], False
    try:
        metas = {}
        for ln in case["launches"]:
            fx = ln["fixture"]
            if fx not in metas:
                metas[fx] = json.load(open(os.path.join(fixtures_dir, fx + ".json")))
            ck.check_specialisation(plan_launch(case, ln), metas[fx])
        for fx, meta in metas.items():
            if fx in modules:
                continue
            path = os.path.join(kernels_dir, fx + ".cubin")
            if isinstance(drv, ck.FakeDriver) and not os.path.exists(path):
                cubin = b""
            else:
                cubin = open(path, "rb").read()
                if hashlib.sha256(cubin).hexdigest() != meta["cubin_sha256"]:
                    raise ck.CaseError(f"{path}: sha256 differs from {fx}.json")
            mod, keep = drv.load(cubin)
            modules[fx] = (mod, keep) + drv.function(mod, meta["entry"], meta["shared_bytes"])
        # buffers: inputs exact, the others between poisoned guards
        inputs, specs, outputs, addrs, spans = {}, [], [], {}, {}
        stream = 0
        for name, b in case["buffers"].items():
            nbytes = int(np.prod(b["shape"])) * ELEM[b["dtype"]][1]
            if b["init"] == "input":
                inputs[name] = ck.input_bits(b["dtype"], b["shape"], seed, stream)
                specs.append({"buffer": name, "dtype": b["dtype"], "shape": b["shape"], "seed": seed, "stream": stream})
                stream += 1
                addrs[name] = drv.alloc(nbytes)
                allocs.append(addrs[name])
            else:
                base = drv.alloc(nbytes + 2 * GUARD)
                allocs.append(base)
                addrs[name], spans[name] = base + GUARD, (base, nbytes)
                outputs.append({"buffer": name, "dtype": b["dtype"], "shape": b["shape"], "init": b["init"]})
        info["inputs"], info["outputs"] = specs, outputs
        info["buffers"] = {n: {"address": a} for n, a in addrs.items()}
        # launches: scratch, tensor maps, parameters
        records, packed = [], []
        for ln in case["launches"]:
            meta = metas[ln["fixture"]]
            p = plan_launch(case, ln)
            scratch, nprog = {}, int(np.prod(ln["grid"])) * meta["num_ctas"]
            for kind in ("global", "profile"):
                size = meta[f"{kind}_scratch_size"]
                if size > 0:
                    align = max(meta[f"{kind}_scratch_align"], 1)
                    base = drv.alloc(nprog * size + align)
                    allocs.append(base)
                    scratch[kind] = (base + align - 1) // align * align
            tensormaps, tm_info = {}, []
            tdm = iter(meta["tensordesc_meta"])
            for prm in meta["params"]:
                if prm["role"] == "tensormap":
                    buf, block = p["descs"][prm["arg"]]
                    tm = next(tdm)
                    if [int(x) for x in tm["block_size"]] != [int(x) for x in block]:
                        raise ck.CaseError(f"{prm['arg']}: block {block}, the kernel's tensordesc_meta has "
                                           f"{tm['block_size']}")
                    shape = case["buffers"][buf]["shape"]
                    strides = [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))]
                    args = ck.tiled_encode_args(tm, addrs[buf], shape, strides, drv.version)
                    tensormaps[prm["arg"]] = drv.encode_tiled(args)
                    tm_info.append({"arg": prm["arg"], "block_shape": block, "encode": args,
                                    "bytes": tensormaps[prm["arg"]].hex()})
            blob, offsets, shown = ck.pack_params(p, meta, addrs, tensormaps, scratch)
            _, _, fn, fattrs = modules[ln["fixture"]]
            records.append({"fixture": ln["fixture"], "entry": meta["entry"], "grid": ln["grid"],
                            "block": meta["block"], "shared_bytes": meta["shared_bytes"],
                            "params": [{"role": r, "arg": a, "value": v} for r, a, v in shown],
                            "param_blob": blob.hex(), "tensormaps": tm_info, "function_attributes": fattrs,
                            "scratch": {k: {"address": v, "bytes_per_program": meta[f"{k}_scratch_size"]}
                                        for k, v in scratch.items()}})
            packed.append((fn, ln["grid"], meta["block"], meta["shared_bytes"], blob, offsets, scratch, nprog, meta))
        info["launches"] = records
        if isinstance(drv, ck.FakeDriver):
            drv.on_launch = lambda d: None    # the dry run leaves the outputs poisoned
        runs = []
        for _ in range(2):
            for name, arr in inputs.items():
                drv.upload(addrs[name], arr)
            for name, (base, nbytes) in spans.items():
                drv.fill(base, POISON, nbytes + 2 * GUARD)
                if case["buffers"][name]["init"] == "zero":
                    drv.fill(base + GUARD, 0, nbytes)
            t0 = time.time()
            for fn, grid, block, smem, blob, offsets, scratch, nprog, meta in packed:
                for kind, addr in scratch.items():
                    drv.fill(addr, 0 if kind == "profile" else POISON, nprog * meta[f"{kind}_scratch_size"])
                running = True
                try:
                    drv.launch(fn, grid, block, smem, blob, offsets)
                except TimeoutError:
                    raise
                except Exception:
                    running = False
                    raise
                running = False
            info.setdefault("seconds", []).append(round(time.time() - t0, 4))
            runs.append({n: drv.download(base, nbytes + 2 * GUARD) for n, (base, nbytes) in spans.items()})
        first, second = runs
        info["deterministic"] = all(np.array_equal(first[n], second[n]) for n in spans)
        info["poison_left"], info["guard_clobbered"] = {}, {}
        outs = []
        for o in outputs:
            n = o["buffer"]
            nbytes = spans[n][1]
            body = first[n][GUARD:GUARD + nbytes]
            esize = ELEM[o["dtype"]][1]
            info["poison_left"][n] = int(np.all(body.reshape(-1, esize) == POISON, axis=1).sum())
            info["guard_clobbered"][n] = int(np.count_nonzero(np.concatenate([first[n][:GUARD],
                                                                              first[n][GUARD + nbytes:]]) != POISON))
            outs.append(body)
        outs = np.concatenate(outs)
        info["output_bytes"] = int(outs.size)
        info["status"] = "ok" if info["deterministic"] else "nondeterministic"
    except TimeoutError as e:
        info["status"], info["error"] = "timeout", str(e)
        raise
    except Exception as e:
        info["error"] = f"{type(e).__name__}: {e}"
        info["traceback"] = traceback.format_exc(limit=4)
        outs = None
        if isinstance(e, ck.CudaError) and e.code in ck.STICKY:
            modules.clear()
            drv.reset()
            allocs = []
    finally:
        for a in allocs if not running else ():
            try:
                drv.free(a)
            except Exception:  # after a sticky error frees fail too; the reset cleaned up
                pass
    return info, outs


def write_trace(path, meta, infos, outs, fixtures_dir):
    sizes = [0 if o is None else o.size for o in outs]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    bits = np.concatenate([o for o in outs if o is not None]) if any(sizes) else np.zeros(0, np.uint8)
    status_codes = {"ok": 0, "error": 1, "nondeterministic": 2, "timeout": 3, "not run": 4}
    cols = {"seed": np.array([i["seed"] for i in infos], np.uint64),
            "status": np.array([status_codes[i["status"]] for i in infos], np.int8),
            "offsets": offsets, "bits": bits.astype(np.uint8)}
    meta = dict(meta, cases=infos, status_codes=status_codes)
    for name in meta["fixtures"]:
        for ext in ("ptx", "json"):
            with open(os.path.join(fixtures_dir, f"{name}.{ext}"), "rb") as f:
                cols[f"fixture_{name}_{ext}"] = np.frombuffer(f.read(), np.uint8)
    np.savez_compressed(path, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **cols)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", default=".kernels", help="folder of the sm_90a cubins (scripts/fixtures/triton_sfu_kernels.py)")
    ap.add_argument("--fixtures", default=os.path.join(ROOT, "tests", "fixtures", "ptx"))
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--seed", type=int, default=2027)
    ap.add_argument("--only", default=None, help="comma-separated case fixtures (default: all)")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: plan, pack, write a trace of poisoned outputs")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cases = [c for c in CASES if args.only is None or c["fixture"] in args.only.split(",")]
    drv = ck.FakeDriver() if args.dry_run else ck.Driver()
    if not args.dry_run and drv.cc != (9, 0):
        print(f"warning: {drv.name} is sm_{drv.cc[0]}{drv.cc[1]}, the cubins are sm_90a", flush=True)
    fixtures = {}
    for name in sorted({ln["fixture"] for c in cases for ln in c["launches"]}):
        fmeta = json.load(open(os.path.join(args.fixtures, name + ".json")))
        cubin = os.path.join(args.kernels, name + ".cubin")
        fixtures[name] = {"entry": fmeta["entry"], "triton": fmeta["triton"],
                          "json_sha256": sha256_file(os.path.join(args.fixtures, name + ".json")),
                          "ptx_sha256": sha256_file(os.path.join(args.fixtures, name + ".ptx")),
                          "cubin_sha256": sha256_file(cubin) if os.path.exists(cubin) else None,
                          "ptx_sha256_in_json": fmeta["ptx_sha256"], "cubin_sha256_in_json": fmeta["cubin_sha256"]}
    try:
        import cuda.bindings
        bindings = getattr(cuda.bindings, "__version__", "?")
    except ImportError:
        bindings = "not installed"
    # beside this script (a device folder holds copies), else where the repository keeps them
    srcs = {f"scripts/{d}/{f}": next((p for p in (os.path.join(HERE, f), os.path.join(ROOT, "scripts", d, f))
                                      if os.path.exists(p)), None)
            for d, f in (("capture", "capture_sfu_kernels.py"), ("capture", "capture_kernels.py"),
                         ("fixtures", "triton_sfu_kernels.py"))}
    here = {k: sha256_file(p) for k, p in srcs.items() if p}
    meta = {"format": "tcemu-trace", "version": 1, "kind": "kernel_outputs", "arch": "sm90",
            "dry_run": bool(args.dry_run), "gpu": drv.name, "compute_capability": list(drv.cc),
            "driver": ck.sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1") or None,
            "cuda": drv.version, "cuda_bindings": bindings, "numpy": np.__version__,
            "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": "python3 " + " ".join(sys.argv),
            "build": "cubins and PTX from scripts/fixtures/triton_sfu_kernels.py (each fixture's json: command, Triton version, "
                     "sha256)", "sources": here, "fixtures": fixtures,
            "seed": args.seed, "smem_base": None, "fixtures_dir": "tests/fixtures/ptx",
            "generator": "tcemu/traces/inputs.py (copy in scripts/capture/capture_kernels.py): input_bits(dtype, shape, "
                         "seed, stream), stream = the input's index in the case's inputs, row-major storage index",
            "poison": POISON, "guard_bytes": GUARD,
            "columns": {"seed": "uint64 case seed (inputs: input_bits(dtype, shape, seed, stream))",
                        "status": "index into meta.status_codes",
                        "offsets": "case i's output bytes are bits[offsets[i]:offsets[i+1]] (empty when it failed)",
                        "bits": "uint8 raw bytes of every output buffer of the first run, in the order of "
                                "meta.cases[i].outputs, each little-endian, row-major"}}
    infos, outs, modules = [], [], {}
    t_start, hung = time.time(), None
    for i, case in enumerate(cases):
        seed = ck.case_seed(args.seed, i)
        if hung is not None:
            infos.append({"index": i, "name": case["name"], "fixture": case["fixture"], "seed": seed,
                          "status": "not run", "error": f"after the hang of case {hung}"})
            outs.append(None)
            continue
        try:
            info, out = run_case(drv, i, case, seed, args.fixtures, args.kernels, modules)
        except TimeoutError as e:
            info = {"index": i, "name": case["name"], "fixture": case["fixture"], "seed": seed, "status": "timeout",
                    "error": str(e)}
            out, hung = None, i
        infos.append(info)
        outs.append(out)
        print(f"[{time.time() - t_start:6.1f}s] case {i:2d} {case['name']:52s} {info['status']}"
              + (f": {info['error']}" if info.get("error") else "")
              + (f" poison_left {info.get('poison_left')} guard {sum(info.get('guard_clobbered', {}).values())} "
                 f"{info.get('seconds')}" if info["status"] == "ok" else ""), flush=True)
    path = os.path.join(args.out, "triton_sfu_kernels_sm90.npz")
    write_trace(path, meta, infos, outs, args.fixtures)
    ok = sum(i["status"] == "ok" for i in infos)
    print(f"\nwrote {path}: {ok}/{len(infos)} cases ok, {os.path.getsize(path)} bytes, "
          f"{time.time() - t_start:.1f} s{' (DRY RUN: poisoned outputs)' if args.dry_run else ''}")
    if hung is not None:
        os._exit(3)


if __name__ == "__main__":
    main()
