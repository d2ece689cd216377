"""Run the CUTLASS / CuTe fixture kernels' recorded launches on an sm_90a GPU and write their outputs as a trace.

One line for the device machine (repository root; `.kernels/` carried, made by scripts/fixtures/cutlass_kernels.py):

    python3 scripts/capture/capture_cutlass.py --kernels .kernels --out $OUT

Local check without a GPU (plans every case, generates inputs, patches every blob, checks every tensor-map
argument against the driver's rules, writes a trace of numpy stand-in outputs):

    python3 scripts/capture/capture_cutlass.py --kernels .kernels --out /tmp/cap --dry-run

`--set sfu` runs the kernels that need approximate special-function PTX instead (EVT GELU GEMMs, example 88's
FMHA; scripts/fixtures/cutlass_sfu_kernels.py makes them) and writes <out>/cutlass_sfu_kernels_sm90.npz. A record with
several output buffers (the FMHA's O and LSE) stores them one after another (meta.cases[i].outputs).

Needs numpy and cuda-bindings (`cuda.bindings.driver`) only; imports nothing from tcemu (the input generator
and the driver wrapper come from scripts/capture/capture_kernels.py, itself tcemu-free). Each fixture json
(tests/fixtures/ptx/cutlass_*.json, made by scripts/fixtures/cutlass_kernels.py) holds one launch record per case,
built by CUTLASS/CuTe's own host code on fake device pointers. For each record: check the PTX and cubin sha256
against the json, load the cubin, apply the function attributes the host code set (cudaFuncSetAttribute),
allocate every buffer (inputs from the seed: input_bits(dtype, storage, seed, stream = the buffer's index in
the record), outputs between two 4 KiB guards, all poisoned with 0xFF), patch the recorded parameter blob (each
recorded pointer -> real address + delta; each placeholder map -> the real cuTensorMapEncodeTiled of the
recorded arguments at the real address), launch it whole with cuLaunchKernelEx (cluster dimension attribute
when the host code gave one, kernelParams pointing into one 64-byte-aligned copy of the blob), wait (bounded),
copy back, then all again (determinism). A failing case is recorded with its error and the run goes on (after
a context reset when the error is sticky). Writes <out>/cutlass_kernels_sm90.npz (kind `launch_outputs`,
traces/README.md; the fixtures' PTX and json ride inside) and prints a summary table. 15 launches of at most 8
CTAs each, every one twice: a few seconds on an H100 after module loading.
"""
import argparse
import ctypes
import datetime
import hashlib
import json
import os
import platform
import struct
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import capture_kernels as CK  # noqa: E402  (the generator copy and the checked driver wrapper; no tcemu)

FIXTURES = ["cutlass_cute_tutorial", "cutlass_ws_bf16", "cutlass_pingpong_bf16", "cutlass_coop_bf16_2x1",
            "cutlass_fp8_fastaccum", "cutlass_fp8_promote"]
# kernels that need approximate special-function PTX (scripts/fixtures/cutlass_sfu_kernels.py): --set sfu
SFU_FIXTURES = ["cutlass_evt_gelu_bf16", "cutlass_evt_gelu_taylor_bf16", "cutlass_fmha_f16"]
SETS = {"base": (FIXTURES, "cutlass_kernels_sm90.npz"), "sfu": (SFU_FIXTURES, "cutlass_sfu_kernels_sm90.npz")}
GUARD = 4096
POISON = 0xFF
TIMEOUT_S = 20.0
ELEM_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "e4m3": 1, "bytes": 1}
# cudaFuncSetAttribute names recorded by scripts/fixtures/cutlass/fake_cuda.cpp -> CUfunction_attribute
FUNC_ATTRS = {"MaxDynamicSharedMemorySize": "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES",
              "NonPortableClusterSizeAllowed": "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED",
              "PreferredSharedMemoryCarveout": "CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT"}
SWIZZLE_SPAN = {0: None, 1: 32, 2: 64, 3: 128}
DTYPE_BYTES = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2, 10: 4, 11: 4, 12: 4}   # CUtensorMapDataType


class CaseError(Exception):
    """A record that cannot run as planned (the message says why)."""


def check_encode(e, address):
    """cuTensorMapEncodeTiled's documented rules (CUDA driver API), so a dry run catches what the driver refuses."""
    rank, es = e["rank"], DTYPE_BYTES.get(e["dtype"])
    if es is None:
        raise CaseError(f"tensor map data type {e['dtype']} is not one these captures use")
    if address % 16:
        raise CaseError(f"tensor map address {address:#x} not 16-byte aligned")
    if not (len(e["dims"]) == len(e["box"]) == len(e["element_strides"]) == rank
            and len(e["strides_bytes"]) == rank - 1):
        raise CaseError(f"tensor map of rank {rank} with mismatched dims/box/strides")
    if any(s % 16 or s >= 1 << 40 for s in e["strides_bytes"]):
        raise CaseError(f"tensor map strides {e['strides_bytes']} must be multiples of 16 below 2^40")
    if any(not 1 <= b <= 256 for b in e["box"]) or any(not 1 <= d <= 1 << 32 for d in e["dims"]):
        raise CaseError(f"box {e['box']} / dims {e['dims']} out of range")
    if any(not 1 <= s <= 8 for s in e["element_strides"]):
        raise CaseError(f"element strides {e['element_strides']} out of 1..8")
    if e["box"][0] * es % 16:
        raise CaseError(f"inner box {e['box'][0]} x {es} B is not a multiple of 16 bytes")
    span = SWIZZLE_SPAN.get(e["swizzle"], 0)
    if span == 0 or (span is not None and e["box"][0] * es > span):
        raise CaseError(f"inner box {e['box'][0]} x {es} B does not fit swizzle mode {e['swizzle']}")


def plan(record):
    """Buffers (name, role, dtype, storage, bytes) and the launch of a record, checked for consistency."""
    bufs = []
    for i, b in enumerate(record["buffers"]):
        es = ELEM_BYTES.get(b["dtype"])
        if es is None or b["role"] not in ("input", "output", "workspace"):
            raise CaseError(f"buffer {b['name']}: dtype {b['dtype']!r} / role {b['role']!r} not handled")
        if int(np.prod(b["storage"])) * es != b["bytes"]:
            raise CaseError(f"buffer {b['name']}: storage {b['storage']} x {es} B != {b['bytes']} B")
        bufs.append(dict(b, index=i))
    blob = bytes.fromhex(record["param_blob"])
    if len(blob) != record["param_bytes"]:
        raise CaseError("param_blob length differs from param_bytes")
    end = 0
    for p in record["params"]:
        if p["offset"] % p["align"] or p["offset"] < end:
            raise CaseError(f"param {p['name'][:40]}... at offset {p['offset']} breaks the .param layout")
        end = p["offset"] + p["bytes"]
    if end != len(blob):
        raise CaseError(f"params end at {end}, the blob has {len(blob)} bytes")
    names = {b["name"]: b for b in bufs}
    for p in record["pointers"]:
        b = names.get(p["buffer"])
        if b is None or int.from_bytes(blob[p["offset"]:p["offset"] + 8], "little") != b["address"] + p["delta"]:
            raise CaseError(f"pointer at blob offset {p['offset']} does not hold {p['buffer']} + {p['delta']}")
    for t in record["tensormaps"]:
        if t["offset"] % 64 or blob[t["offset"]:t["offset"] + 8] != b"tcTMAPph":
            raise CaseError(f"no placeholder tensor map at blob offset {t['offset']}")
    outs = [b for b in bufs if b["role"] == "output"]
    if not outs:
        raise CaseError("expected at least one output buffer, the record has none")
    return bufs, blob, outs


def patch(record, blob, addrs, encode):
    """The blob with real pointers and real tensor maps; returns (bytes, [(offset, encode args, map hex)])."""
    out = bytearray(blob)
    real = {b["name"]: addrs[b["name"]] for b in record["buffers"]}
    fake = {b["name"]: b["address"] for b in record["buffers"]}
    for p in record["pointers"]:
        struct.pack_into("<Q", out, p["offset"], real[p["buffer"]] + p["delta"])
    maps = []
    for t in record["tensormaps"]:
        e = dict(record["encodes"][t["encode"]])
        e["address"] = real[e["buffer"]] + e["delta"]
        check_encode(e, e["address"])
        raw = encode(e)
        if len(raw) != 128:
            raise CaseError("a CUtensorMap is 128 bytes")
        out[t["offset"]:t["offset"] + 128] = raw
        maps.append({"offset": t["offset"], "encode": e, "bytes": raw.hex()})
    # nothing of the fake address space may survive
    for off in range(0, len(out) - 7, 8):
        v = int.from_bytes(out[off:off + 8], "little")
        if any(f <= v <= f + 2**36 for f in fake.values()):
            raise CaseError(f"blob offset {off} still holds the fake address {v:#x}")
    return bytes(out), maps


def launch_attributes(record):
    """(cluster dims or None, [(name, value)] other launch attributes) as the host code launched."""
    cluster = record["cluster"] if record.get("cluster_attribute") else None
    others = []
    for a in record["attributes"]:
        k, v = a.split("=")
        if k not in FUNC_ATTRS:
            others.append((k, int(v)))
    return cluster, others


def func_attributes(record):
    out = []
    for a in record["attributes"]:
        k, v = a.split("=")
        if k in FUNC_ATTRS:
            out.append((FUNC_ATTRS[k], int(v)))
    return out


# ----------------------------------------------------------------------------------------------------------
class Driver(CK.Driver):
    """capture_kernels' checked driver calls, with cuLaunchKernelEx (clusters) and recorded function attributes."""

    def function(self, mod, entry, attributes):
        cu = self.cu
        fn = self.call("cuModuleGetFunction", mod, entry.encode())
        fa = cu.CUfunction_attribute
        for name, value in attributes:
            self.call("cuFuncSetAttribute", fn, getattr(fa, name), value)
        attrs = {"num_regs": int(self.call("cuFuncGetAttribute", fa.CU_FUNC_ATTRIBUTE_NUM_REGS, fn)),
                 "static_shared": int(self.call("cuFuncGetAttribute", fa.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn)),
                 "max_threads": int(self.call("cuFuncGetAttribute", fa.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn)),
                 "local_bytes": int(self.call("cuFuncGetAttribute", fa.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn)),
                 "max_dynamic_shared": int(self.call("cuFuncGetAttribute",
                                                     fa.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fn))}
        return fn, attrs

    def encode_record(self, e):
        cu = self.cu
        tmap = self.call("cuTensorMapEncodeTiled", cu.CUtensorMapDataType(e["dtype"]), e["rank"], e["address"],
                         [cu.cuuint64_t(x) for x in e["dims"]], [cu.cuuint64_t(x) for x in e["strides_bytes"]],
                         [cu.cuuint32_t(x) for x in e["box"]], [cu.cuuint32_t(x) for x in e["element_strides"]],
                         cu.CUtensorMapInterleave(e["interleave"]), cu.CUtensorMapSwizzle(e["swizzle"]),
                         cu.CUtensorMapL2promotion(e["l2_promotion"]), cu.CUtensorMapFloatOOBfill(e["oob_fill"]))
        return struct.pack("<16Q", *[int(x) for x in tmap.opaque])

    def launch_ex(self, fn, grid, block, smem, blob, offsets, cluster, others):
        cu = self.cu
        raw = ctypes.create_string_buffer(len(blob) + 64)
        base = (ctypes.addressof(raw) + 63) // 64 * 64
        ctypes.memmove(base, blob, len(blob))
        ptrs = (ctypes.c_void_p * max(len(offsets), 1))(*[base + o for o in offsets])
        cfg = cu.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
        cfg.sharedMemBytes = smem
        cfg.hStream = cu.CUstream(0)
        attrs = []
        if cluster is not None:
            a = cu.CUlaunchAttribute()
            a.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z = cluster
            attrs.append(a)
        for name, value in others:
            if name != "ProgrammaticStreamSerialization":
                raise CaseError(f"launch attribute {name} is not handled")
            a = cu.CUlaunchAttribute()
            a.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            a.value.programmaticStreamSerializationAllowed = value
            attrs.append(a)
        cfg.attrs = attrs
        cfg.numAttrs = len(attrs)
        self.call("cuLaunchKernelEx", cfg, fn, ctypes.addressof(ptrs), 0)
        t0 = time.time()
        while True:   # bounded wait: a kernel whose barrier never completes must not hang the capture
            res = cu.cuStreamQuery(cu.CUstream(0))
            code = int(res[0] if isinstance(res, tuple) else res)
            if code == 0:
                return
            if code != 600:    # CUDA_ERROR_NOT_READY
                self.call("cuCtxSynchronize")
                raise CK.CudaError("cuStreamQuery", code, "kernel failed")
            if time.time() - t0 > TIMEOUT_S:
                raise TimeoutError(f"kernel still running after {TIMEOUT_S} s (hang?)")
            time.sleep(0.0005)


class FakeDriver(CK.FakeDriver):
    """Dry run: host byte arrays at fake device addresses; a launch writes a float64 stand-in (fake_output)."""

    def function(self, mod, entry, attributes):
        for name, value in attributes:
            if name == "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES" and value > self.smem_optin:
                raise CaseError(f"{value} B of dynamic shared memory exceed the opt-in maximum")
        return entry, {"num_regs": 0, "static_shared": 0, "max_threads": 0, "local_bytes": 0, "max_dynamic_shared": 0}

    def encode_record(self, e):
        return bytes(128)

    def launch_ex(self, fn, grid, block, smem, blob, offsets, cluster, others):
        self.on_launch(self)


def _to_bits(values, dtype):
    """float64 -> raw bits of dtype (round to nearest even; dry-run stand-ins only)."""
    if dtype == "f32":
        return values.astype(np.float32).view(np.uint32)
    if dtype == "f16":
        return values.astype(np.float16).view(np.uint16)
    if dtype == "bf16":
        u = values.astype(np.float32).view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    raise CaseError(f"no stand-in for {dtype}")


def _erf(x):
    import math
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def fake_outputs(record, inputs):
    """Stand-ins for the kernel's outputs ({buffer name: bits}, float64 maths rounded to each output's type) from
    the record's notes."""
    notes = record["notes"]
    dec = {n: CK.decode(b["dtype"], inputs[n]) for n, b in ((b["name"], b) for b in record["buffers"]) if n in inputs}
    outs = [b for b in record["buffers"] if b["role"] == "output"]
    if "fusion" in notes:       # example 88's FMHA: Q (B, H, Q, D), K and V (B, H, K, D); O, LSE (B, H, Q)
        s = np.einsum("bhqd,bhkd->bhqk", dec["Q"], dec["K"]) / np.sqrt(notes["D"])
        mx = s.max(axis=-1, keepdims=True)
        p = np.exp(s - mx)
        total = p.sum(axis=-1, keepdims=True)
        vals = {"O": np.einsum("bhqk,bhkd->bhqd", p / total, dec["V"]), "LSE": (mx + np.log(total))[..., 0]}
    elif "layout" in notes:     # the CuTe tutorial: C (N, M) storage (column-major M x N)
        a = dec["A"].T if notes["layout"] == "NT" else dec["A"]       # (M, K)
        b = dec["B"].T if notes["layout"] == "NT" else dec["B"]       # (N, K)
        vals = {outs[0]["name"]: (a @ b.T).T}
    else:                       # CUTLASS GEMMs: A (M, K), B (N, K), D (M, N)
        c = dec["A"] @ dec["B"].T
        act = notes.get("activation")
        if act == "GELU":
            c = 0.5 * c * (1 + _erf(c / np.sqrt(2)))
        elif act == "GELU_taylor":
            c = 0.5 * c * (1 + np.tanh(0.7978845608028654 * c * (1 + 0.044715 * c * c)))
        elif act is not None:
            raise CaseError(f"no stand-in for activation {act!r}")
        vals = {outs[0]["name"]: c}
    return {b["name"]: _to_bits(vals[b["name"]], b["dtype"]).reshape(b["storage"]) for b in outs}


# ----------------------------------------------------------------------------------------------------------
def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def case_list(fixtures_dir, only, names=FIXTURES):
    cases = []
    for name in names:
        if only and name not in only:
            continue
        meta = json.load(open(os.path.join(fixtures_dir, name + ".json")))
        for j in range(len(meta["launches"])):
            cases.append((name, j))
    return cases


def run_case(drv, index, fixture, j, seed, fixtures_dir, kernels_dir, modules):
    meta = json.load(open(os.path.join(fixtures_dir, fixture + ".json")))
    rec = meta["launches"][j]
    notes = rec["notes"]
    info = {"index": index, "fixture": fixture, "launch": j, "case": rec["case"], "entry": rec["entry"],
            "M": notes.get("M", 0), "N": notes.get("N", 0), "K": notes.get("K", 0), "grid": rec["grid"], "block": rec["block"],
            "cluster": rec["cluster"], "shared_bytes": rec["shared_bytes"], "seed": seed, "status": "error",
            "error": None, "deterministic": None, "poison_left": None, "guard_clobbered": None}
    out = None
    try:
        bufs, blob, obufs = plan(rec)
        ptx = os.path.join(fixtures_dir, fixture + ".ptx")
        if sha256_file(ptx) != meta["ptx_sha256"]:
            raise CaseError(f"{ptx}: sha256 differs from {fixture}.json")
        cubin_path = os.path.join(kernels_dir, fixture + ".cubin")
        if isinstance(drv, FakeDriver) and not os.path.exists(cubin_path):
            cubin, info["cubin"] = b"", "absent (dry run)"
        else:
            cubin = open(cubin_path, "rb").read()
            if hashlib.sha256(cubin).hexdigest() != meta["cubin_sha256"]:
                raise CaseError(f"{cubin_path}: sha256 differs from {fixture}.json (rebuild both with "
                                f"scripts/fixtures/cutlass_kernels.py, or copy the .kernels/ that made the fixtures)")
            info["cubin"] = "sha256 checked"
        if fixture not in modules:
            modules[fixture] = drv.load(cubin)
        mod, _ = modules[fixture]
        fn, info["function_attributes"] = drv.function(mod, rec["entry"], func_attributes(rec))
        cluster, others = launch_attributes(rec)
        inputs, specs = {}, []
        for b in bufs:
            if b["role"] == "input":
                inputs[b["name"]] = CK.input_bits(b["dtype"], b["storage"], seed, b["index"])
                specs.append({"buffer": b["name"], "dtype": b["dtype"], "storage": b["storage"], "seed": seed,
                              "stream": b["index"]})
        info["inputs"] = specs
        # one output: `output`, as always; several: `outputs`, their bytes stored one after another in this order
        odesc = [{"buffer": b["name"], "dtype": b["dtype"], "storage": b["storage"]} for b in obufs]
        if len(odesc) == 1:
            info["output"] = odesc[0]
        else:
            info["outputs"] = odesc
        allocs, running, addrs = [], False, {}
        try:
            for b in bufs:
                if b["role"] == "output":
                    base = drv.alloc(b["bytes"] + 2 * GUARD)
                    allocs.append(base)
                    addrs[b["name"]] = base + GUARD
                else:
                    addrs[b["name"]] = drv.alloc(b["bytes"])
                    allocs.append(addrs[b["name"]])
                    if b["role"] == "input":
                        drv.upload(addrs[b["name"]], inputs[b["name"]])
                    else:
                        drv.fill(addrs[b["name"]], 0, b["bytes"])
            info["buffers"] = {k: {"address": v} for k, v in addrs.items()}
            real_blob, maps = patch(rec, blob, addrs, drv.encode_record)
            info["tensormaps"] = maps
            info["param_blob"] = real_blob.hex()
            offsets = [p["offset"] for p in rec["params"]]
            if isinstance(drv, FakeDriver):
                def on_launch(d, rec=rec, inputs=inputs, addrs=addrs):
                    for name, bits in fake_outputs(rec, inputs).items():
                        d.upload(addrs[name], bits)
                drv.on_launch = on_launch
            runs = []
            for _ in range(2):
                for b in obufs:
                    drv.fill(addrs[b["name"]] - GUARD, POISON, b["bytes"] + 2 * GUARD)
                t0 = time.time()
                running = True   # stays True only when the wait timed out
                try:
                    drv.launch_ex(fn, rec["grid"], rec["block"], rec["shared_bytes"], real_blob, offsets, cluster,
                                  others)
                except TimeoutError:
                    raise
                except Exception:
                    running = False
                    raise
                running = False
                info.setdefault("seconds", []).append(round(time.time() - t0, 4))
                runs.append([drv.download(addrs[b["name"]] - GUARD, b["bytes"] + 2 * GUARD) for b in obufs])
            first, second = runs
            outs, poison, clobbered = [], 0, 0
            for b, raw in zip(obufs, first):
                o = raw[GUARD:GUARD + b["bytes"]]
                outs.append(o)
                es = ELEM_BYTES[b["dtype"]]
                poison += int(np.all(o.reshape(-1, es) == POISON, axis=1).sum())
                guards = np.concatenate([raw[:GUARD], raw[GUARD + b["bytes"]:]])
                clobbered += int(np.count_nonzero(guards != POISON))
            out = np.concatenate(outs)
            info["deterministic"] = all(np.array_equal(x, y) for x, y in zip(first, second))
            info["poison_left"] = poison
            info["guard_clobbered"] = clobbered
            info["status"] = "ok" if info["deterministic"] else "nondeterministic"
        finally:
            for a in allocs if not running else ():   # never free under a kernel that may still run
                try:
                    drv.free(a)
                except Exception:  # a sticky error makes frees fail too; the reset below cleans up
                    pass
    except TimeoutError as e:
        info["status"], info["error"] = "timeout", str(e)
        raise
    except Exception as e:
        info["error"] = f"{type(e).__name__}: {e}"
        info["traceback"] = traceback.format_exc(limit=4)
        if isinstance(e, CK.CudaError) and e.code in CK.STICKY:
            modules.clear()
            drv.reset()
    return info, out


def sources():
    files = ["scripts/capture/capture_cutlass.py", "scripts/capture/capture_kernels.py",
             "scripts/fixtures/cutlass_kernels.py", "scripts/fixtures/cutlass/fake_cuda.cpp",
             "scripts/fixtures/cutlass/record.h", "scripts/fixtures/cutlass/cute_tutorial.cu",
             "scripts/fixtures/cutlass/gemm_sm90.cu", "scripts/fixtures/cutlass_sfu_kernels.py",
             "scripts/fixtures/cutlass/gemm_evt_sm90.cu",
             "scripts/fixtures/cutlass/fmha_sm90.cu", "tcemu/traces/inputs.py"]
    return {f: sha256_file(os.path.join(ROOT, f)) for f in files if os.path.exists(os.path.join(ROOT, f))}


def write_trace(path, meta, infos, outs):
    sizes = [0 if o is None else o.size for o in outs]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    bits = np.concatenate([o for o in outs if o is not None]) if any(sizes) else np.zeros(0, np.uint8)
    status_codes = {"ok": 0, "error": 1, "nondeterministic": 2, "timeout": 3, "not run": 4}
    cols = {
        "seed": np.array([i["seed"] for i in infos], np.uint64),
        "status": np.array([status_codes[i["status"]] for i in infos], np.int8),
        "m": np.array([i["M"] for i in infos], np.int32),
        "n": np.array([i["N"] for i in infos], np.int32),
        "k": np.array([i["K"] for i in infos], np.int32),
        "grid": np.array([i["grid"] for i in infos], np.int32).reshape(len(infos), 3),
        "offsets": offsets,
        "bits": bits.astype(np.uint8),
    }
    meta = dict(meta, cases=infos, status_codes=status_codes)
    for name in meta["fixtures"]:   # the fixtures travel in the trace (sha256 in meta.fixtures)
        for ext in ("ptx", "json"):
            with open(os.path.join(ROOT, meta["fixtures_dir"], f"{name}.{ext}"), "rb") as f:
                cols[f"fixture_{name}_{ext}"] = np.frombuffer(f.read(), np.uint8)
    np.savez_compressed(path, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **cols)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", default=".kernels", help="folder of the sm_90a cubins (scripts/fixtures/cutlass_kernels.py)")
    ap.add_argument("--fixtures", default=os.path.join(ROOT, "tests", "fixtures", "ptx"))
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--only", default=None, help="comma-separated fixture names (default: all of the set)")
    ap.add_argument("--set", default="base", choices=sorted(SETS),
                    help="base: the GEMM fixtures -> cutlass_kernels_sm90.npz; sfu: the kernels that need "
                         "approximate special functions (scripts/fixtures/cutlass_sfu_kernels.py) -> cutlass_sfu_kernels_sm90.npz")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: plan, patch, write a trace of stand-in outputs")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    names, trace_name = SETS[args.set]
    cases = case_list(args.fixtures, only, names)
    drv = FakeDriver() if args.dry_run else Driver()
    if not args.dry_run and drv.cc != (9, 0):
        print(f"warning: {drv.name} is sm_{drv.cc[0]}{drv.cc[1]}, the cubins are sm_90a", flush=True)
    fixtures = {}
    for name in sorted({c[0] for c in cases}):
        jpath, ppath = (os.path.join(args.fixtures, name + e) for e in (".json", ".ptx"))
        fmeta = json.load(open(jpath))
        cubin = os.path.join(args.kernels, name + ".cubin")
        fixtures[name] = {"json_sha256": sha256_file(jpath), "ptx_sha256": sha256_file(ppath),
                          "cubin_sha256": sha256_file(cubin) if os.path.exists(cubin) else None,
                          "cubin_sha256_in_json": fmeta["cubin_sha256"], "versions": fmeta["versions"],
                          "commands": fmeta["commands"]}
    try:
        import cuda.bindings
        bindings = getattr(cuda.bindings, "__version__", "?")
    except ImportError:
        bindings = "not installed"
    meta = {"format": "tcemu-trace", "version": 1, "kind": "launch_outputs", "arch": "sm90",
            "dry_run": bool(args.dry_run), "gpu": drv.name, "compute_capability": list(drv.cc),
            "driver": CK.sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1") or None,
            "cuda": drv.version, "cuda_bindings": bindings, "numpy": np.__version__,
            "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": "python3 " + " ".join(sys.argv),
            "build": "PTX, cubins and launch records from scripts/fixtures/cutlass_kernels.py"
                     + (" (via scripts/fixtures/cutlass_sfu_kernels.py)" if args.set == "sfu" else "")
                     + " (each fixture json: the nvcc, ptxas and builder commands, tool versions, sha256)",
            "sources": sources(), "fixtures": fixtures, "seed": args.seed, "smem_base": None,
            "fixtures_dir": os.path.relpath(args.fixtures, ROOT),
            "generator": "tcemu/traces/inputs.py (copy in scripts/capture/capture_kernels.py): input_bits(dtype, storage, "
                         "seed, stream = the buffer's index in the launch record), row-major storage index",
            "poison": POISON, "guard_bytes": GUARD,
            "columns": {"seed": "uint64 case seed", "status": "index into meta.status_codes", "m": "M", "n": "N",
                        "k": "K", "grid": "(cases, 3) launch grid",
                        "offsets": "case i's output bytes are bits[offsets[i]:offsets[i+1]] (empty when it failed)",
                        "bits": "uint8 raw bytes of the output buffer after the first run, little-endian elements, "
                                "its row-major storage order (meta.cases[i].output: buffer, dtype, storage); a "
                                "launch with several output buffers stores each in turn, in the order of "
                                "meta.cases[i].outputs"}}
    infos, outs, modules = [], [], {}
    t_start, hung = time.time(), None
    for i, (name, j) in enumerate(cases):
        seed = CK.case_seed(args.seed, i)
        if hung is not None:
            infos.append({"index": i, "fixture": name, "launch": j, "M": 0, "N": 0, "K": 0, "seed": seed,
                          "grid": [0, 0, 0], "status": "not run", "error": f"after the hang of case {hung}"})
            outs.append(None)
            continue
        try:
            info, out = run_case(drv, i, name, j, seed, args.fixtures, args.kernels, modules)
        except TimeoutError as e:
            info = {"index": i, "fixture": name, "launch": j, "M": 0, "N": 0, "K": 0, "seed": seed,
                    "grid": [0, 0, 0], "status": "timeout", "error": str(e)}
            out, hung = None, i
        infos.append(info)
        outs.append(out)
        print(f"[{time.time() - t_start:6.1f}s] case {i:2d} {name:22s} {str(info.get('case')):24s} {info['status']}"
              + (f": {info['error']}" if info.get("error") else ""), flush=True)
    path = os.path.join(args.out, trace_name)
    write_trace(path, meta, infos, outs)
    print(f"\n{'case':>4} {'fixture':22s} {'M':>5} {'N':>5} {'K':>5} {'grid':>9} {'cluster':>7} {'status':16s} "
          f"{'det':>4} {'poison':>6} {'guard':>5}")
    for info in infos:
        g = "x".join(str(x) for x in info["grid"])
        c = "x".join(str(x) for x in info.get("cluster", [0, 0, 0]))
        print(f"{info['index']:4d} {info['fixture']:22s} {info['M']:5d} {info['N']:5d} {info['K']:5d} {g:>9} {c:>7} "
              f"{info['status']:16s} {str(info.get('deterministic'))[:4]:>4} {str(info.get('poison_left')):>6} "
              f"{str(info.get('guard_clobbered')):>5}")
    ok = sum(i["status"] == "ok" for i in infos)
    print(f"\nwrote {path}: {ok}/{len(infos)} cases ok, {os.path.getsize(path)} bytes, "
          f"{time.time() - t_start:.1f} s{' (DRY RUN: stand-in outputs)' if args.dry_run else ''}")
    if hung is not None:
        os._exit(3)   # a hung kernel keeps the context busy; leave without waiting for it


if __name__ == "__main__":
    main()
