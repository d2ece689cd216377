"""Run the Triton fixture kernels' cubins on an sm_90a GPU and write their outputs as a tcemu trace.

One line for the device machine (repository root; `.kernels/` carried, made by scripts/fixtures/triton_kernels.py):

    python3 scripts/capture/capture_kernels.py --kernels .kernels --out $OUT ; python3 scripts/capture/capture_torch_gemm.py --out $OUT

Local check without a GPU (plans every case, generates inputs, packs every kernel parameter, checks the
tensor-map arguments, writes a trace with numpy stand-in outputs):

    python3 scripts/capture/capture_kernels.py --kernels .kernels --out /tmp/cap --dry-run

Needs numpy and cuda-bindings (`cuda.bindings.driver`) only; imports nothing from tcemu or Triton, so the
capture does not depend on the code it judges. For each case (CASES below): check that a real Triton launch
with these arguments would pick exactly the fixture's specialisation (tests/fixtures/ptx/<name>.json:
divisibility-16 and constexpr-1 arguments), check the cubin's sha256 against the json, load it with
cuModuleLoadData, set the dynamic shared-memory limit as Triton's loader does, fill the inputs from their
seeds (the generator below, a copy of tcemu/traces/inputs.py), poison the output and 4 KiB guards on both
sides with 0xFF, pack the .param list of the json by hand (host tensor descriptors: cuTensorMapEncodeTiled
with Triton 3.9's arguments, including its small-tensor fix for drivers <= 13.1), launch, wait (bounded),
copy back, then do it all again and compare (determinism). A failing case is recorded with its error and
the run goes on (after a context reset when the error is sticky). Writes <out>/triton_kernels_sm90.npz
(kind `kernel_outputs`, traces/README.md) and prints a summary table.
"""
import argparse
import ctypes
import datetime
import hashlib
import json
import os
import platform
import struct
import subprocess
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# ----------------------------------------------------------------------------------------------------------
# Input generator: an exact copy of tcemu/traces/inputs.py (tests/traces/test_triton_fixtures.py checks the bits).
# ----------------------------------------------------------------------------------------------------------
FORMATS = {"bf16": (np.uint16, 8, 7, 127), "f16": (np.uint16, 5, 10, 15), "f32": (np.uint32, 8, 23, 127),
           "e4m3": (np.uint8, 4, 3, 7)}
WINDOW = 4

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)


def mix64(z):
    """splitmix64's finaliser on a uint64 array (wrap-around arithmetic)."""
    z = np.asarray(z, dtype=np.uint64)
    z = (z ^ (z >> np.uint64(30))) * _MUL1
    z = (z ^ (z >> np.uint64(27))) * _MUL2
    return z ^ (z >> np.uint64(31))


def words(seed, stream, n):
    """(n,) uint64: word(seed, stream, i) for i = 0..n-1."""
    seed = np.array([seed], dtype=np.uint64)
    stream = np.array([stream], dtype=np.uint64)
    key = mix64(seed ^ mix64(stream + np.uint64(1)))
    idx = np.arange(1, n + 1, dtype=np.uint64)
    return mix64(key + idx * _GOLDEN)


def input_bits(dtype, shape, seed, stream):
    """Raw bit patterns (uint8/16/32 array of `shape`) of a `dtype` tensor ("bf16", "f16", "f32", "e4m3")."""
    if dtype not in FORMATS:
        raise ValueError(f"dtype: expected one of {sorted(FORMATS)}, got {dtype!r}")
    store, ebits, mbits, bias = FORMATS[dtype]
    shape = tuple(int(s) for s in shape)
    n = int(np.prod(shape, dtype=np.int64))
    w = words(int(seed), int(stream), n)
    width = np.dtype(store).itemsize * 8
    sign = (w >> np.uint64(5)) & np.uint64(1)
    exp = ((w >> np.uint64(8)) & np.uint64(0xFFFF)) % np.uint64(2 * WINDOW + 1) + np.uint64(bias - WINDOW)
    mant = (w >> np.uint64(32)) & np.uint64((1 << mbits) - 1)
    zero = (w & np.uint64(31)) == np.uint64(0)
    bits = (sign << np.uint64(width - 1)) | np.where(zero, np.uint64(0), (exp << np.uint64(mbits)) | mant)
    return bits.astype(store).reshape(shape)
# ------------------------------------------------------------------------------ end of the generator copy


def decode(dtype, bits):
    """float64 values of raw bits (finite formats only; used for the dry run's stand-in outputs)."""
    store, ebits, mbits, bias = FORMATS[dtype]
    b = bits.astype(np.int64)
    width = np.dtype(store).itemsize * 8
    sign = np.where((b >> (width - 1)) & 1, -1.0, 1.0)
    e = (b >> mbits) & ((1 << ebits) - 1)
    m = (b & ((1 << mbits) - 1)).astype(np.float64)
    normal = np.ldexp(1.0 + m / (1 << mbits), (e - bias).astype(np.int64))
    sub = np.ldexp(m / (1 << mbits), 1 - bias)
    return sign * np.where(e == 0, sub, normal)


# Triton element type -> generator format, bytes
TTYPES = {"bf16": ("bf16", 2), "fp16": ("f16", 2), "fp32": ("f32", 4), "fp8e4nv": ("e4m3", 1)}

# Fixture name -> family and operand types. "ptr": pointer loads (matmul_ptr); "tma_host": three host
# TensorDescriptors (matmul_tma_host); "tma_device": tl.make_tensor_descriptor (matmul_tma_device).
# b_layout "KN": B stored (K, N) row-major; "NK": B stored (N, K) row-major (K-major).
FIXTURES = {
    "matmul_bf16": {"family": "ptr", "a": "bf16", "b": "bf16", "c": "fp16", "b_layout": "KN"},
    "matmul_bf16_k200": {"family": "ptr", "a": "bf16", "b": "bf16", "c": "fp16", "b_layout": "KN"},
    "matmul_bf16_n300": {"family": "ptr", "a": "bf16", "b": "bf16", "c": "fp16", "b_layout": "KN"},
    "matmul_e4m3": {"family": "ptr", "a": "fp8e4nv", "b": "fp8e4nv", "c": "fp16", "b_layout": "NK"},
    "matmul_tf32": {"family": "ptr", "a": "fp32", "b": "fp32", "c": "fp32", "b_layout": "KN"},
    "matmul_f16": {"family": "ptr", "a": "fp16", "b": "fp16", "c": "fp16", "b_layout": "KN"},
    "matmul_tma_bf16": {"family": "tma_host", "a": "bf16", "b": "bf16", "c": "fp16", "b_layout": "NK"},
    "matmul_dtma_bf16": {"family": "tma_device", "a": "bf16", "b": "bf16", "c": "fp16", "b_layout": "NK"},
}

# (fixture, M, N, K). A real Triton launch specialises on every integer argument (multiple of 16 ->
# tt.divisibility 16; equal to 1 -> constexpr), so one kernel's cases must share that key: the ragged
# (256, 256, 200) and (128, 300, 64) launches get their own specialisations (their row strides 200 and 300
# are not multiples of 16), and the other ragged shapes are ragged against the tile but multiples of 16.
CASES = [
    ("matmul_bf16", 512, 512, 512), ("matmul_bf16", 384, 512, 1024), ("matmul_bf16", 640, 512, 320),
    ("matmul_bf16_k200", 256, 256, 200), ("matmul_bf16_n300", 128, 300, 64),
    ("matmul_e4m3", 512, 512, 512), ("matmul_e4m3", 256, 512, 1024), ("matmul_e4m3", 256, 384, 320),
    ("matmul_e4m3", 384, 304, 176),
    ("matmul_tf32", 256, 256, 512), ("matmul_tf32", 256, 400, 176),
    ("matmul_f16", 256, 512, 512), ("matmul_f16", 320, 304, 208),
    ("matmul_tma_bf16", 256, 512, 512), ("matmul_tma_bf16", 384, 400, 208),
    ("matmul_tma_bf16", 128, 256, 64),   # tensors under 128 KiB: Triton clears bit 21 of their maps' word 1
    ("matmul_dtma_bf16", 256, 512, 512), ("matmul_dtma_bf16", 384, 400, 208),
]
STREAM_A, STREAM_B = 0, 1
GUARD = 4096
POISON = 0xFF
TIMEOUT_S = 20.0

# Triton 3.9 backends/nvidia/driver.py: device-side TMA element type -> host CUtensorMapDataType
TMA_DTYPE_DEVICE_TO_HOST = {i: i for i in range(16)}
TMA_DTYPE_DEVICE_TO_HOST.update({8: 10, 9: 8, 10: 9})
CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0, 2, 0
SWIZZLE_SPAN = {0: None, 1: 32, 2: 64, 3: 128}


class CaseError(Exception):
    """A case that cannot run as planned (the message says why)."""


def case_seed(seed, index):
    return int(words(seed, 0xCA5E, index + 1)[index] >> np.uint64(1))


def plan(fixture, M, N, K, meta):
    """Launch values, buffers and descriptors of one case, from the fixture's json `meta`."""
    fam = FIXTURES[fixture]
    a_shape = (M, K)
    b_shape = (K, N) if fam["b_layout"] == "KN" else (N, K)
    c_shape = (M, N)
    buffers = {"a": (fam["a"], a_shape), "b": (fam["b"], b_shape), "c": (fam["c"], c_shape)}
    const = meta["constexprs"]
    if fam["family"] == "ptr":
        kn = fam["b_layout"] == "KN"
        values = {"a_ptr": "*" + fam["a"], "b_ptr": "*" + fam["b"], "c_ptr": "*" + fam["c"], "M": M, "N": N, "K": K,
                  "stride_am": K, "stride_ak": 1, "stride_bk": N if kn else 1, "stride_bn": 1 if kn else K,
                  "stride_cm": N, "stride_cn": 1}
        bind = {"a_ptr": "a", "b_ptr": "b", "c_ptr": "c"}
        descs = {}
    elif fam["family"] == "tma_host":
        bm, bn, bk = const["BLOCK_M"], const["BLOCK_N"], const["BLOCK_K"]
        values = {"a_desc": f"tensordesc<{fam['a']}[{bm}, {bk}]>", "b_desc": f"tensordesc<{fam['b']}[{bn}, {bk}]>",
                  "c_desc": f"tensordesc<{fam['c']}[{bm}, {bn}]>", "M": M, "N": N, "K": K}
        bind = {"a_desc": "a", "b_desc": "b", "c_desc": "c"}
        descs = {"a_desc": ("a", [bm, bk]), "b_desc": ("b", [bn, bk]), "c_desc": ("c", [bm, bn])}
    elif fam["family"] == "tma_device":
        values = {"a_ptr": "*" + fam["a"], "b_ptr": "*" + fam["b"], "c_ptr": "*" + fam["c"], "M": M, "N": N, "K": K}
        bind = {"a_ptr": "a", "b_ptr": "b", "c_ptr": "c"}
        descs = {}
    else:
        raise CaseError(f"unknown family {fam['family']!r}")
    return {"fixture": fixture, "M": M, "N": N, "K": K, "values": values, "buffers": buffers, "bind": bind,
            "descs": descs, "grid": grid_of(meta["grid"], {**const, **values}), "block": meta["block"]}


def grid_of(rule, env):
    """The json's grid rule: per dimension a product of ints, names, or [n, block] = ceil(n / block)."""
    def val(x):
        if isinstance(x, int):
            return x
        if isinstance(x, str):
            return int(env[x])
        return -(-val(x[0]) // val(x[1]))
    out = []
    for dim in rule:
        g = 1
        for f in dim:
            g *= val(f)
        out.append(g)
    return out


def jit_key(values):
    """What Triton's JIT makes of each launch value: "constexpr" (int 1), "D" (tt.divisibility 16: an aligned
    pointer or an int multiple of 16) or "" (nothing); tensor descriptors get no attribute."""
    key = {}
    for name, v in values.items():
        if isinstance(v, str):
            key[name] = "D" if v.startswith("*") else ""
        elif v == 1:
            key[name] = "constexpr"
        else:
            key[name] = "D" if v % 16 == 0 else ""
    return key


def check_specialisation(p, meta):
    """Refuse a case whose real launch would compile a different specialisation than the fixture."""
    sig, div = meta["signature"], set(meta["divisibility_16"])
    for name, k in jit_key(p["values"]).items():
        if name not in sig:
            raise CaseError(f"{p['fixture']}: launch value {name} is not an argument of the kernel")
        want = "constexpr" if sig[name] == "constexpr" else ("D" if name in div else "")
        if k != want:
            raise CaseError(f"{p['fixture']}: argument {name} = {p['values'][name]!r} specialises as {k or 'plain'}, "
                            f"the fixture was compiled with {want or 'plain'}")
        if k == "constexpr" and meta["constexprs"].get(name) != 1:
            raise CaseError(f"{p['fixture']}: {name} is constexpr {meta['constexprs'].get(name)!r} in the fixture")
        v = p["values"][name]
        if isinstance(v, int) and k != "constexpr":
            ty = "i32" if -2**31 <= v < 2**31 else "i64"
            if sig[name] != ty:
                raise CaseError(f"{p['fixture']}: {name} = {v} is {ty}, the fixture has {sig[name]}")
        if isinstance(v, str) and sig[name] != v:
            raise CaseError(f"{p['fixture']}: {name} is {v}, the fixture has {sig[name]}")


def tiled_encode_args(tmeta, address, shape, strides, driver_version):
    """cuTensorMapEncodeTiled's arguments exactly as Triton 3.9's fill_tma_descriptor_tiled builds them for a
    host TensorDescriptor (shape/strides in elements, outermost first), plus whether it then clears bit 21 of
    the map's second word (its small-tensor fix for drivers <= 13.1)."""
    rank = len(shape)
    elem = tmeta["elem_size"]
    if tmeta.get("fp4_padded") or tmeta.get("is_im2col"):
        raise CaseError("fp4-padded and im2col tensor maps are not used by these kernels")
    dims = [int(shape[rank - 1 - i]) for i in range(rank)]
    gstrides = [int(elem * strides[rank - 2 - i]) for i in range(rank - 1)]
    box = [int(tmeta["block_size"][rank - 1 - i]) for i in range(rank)]
    args = {"dtype": TMA_DTYPE_DEVICE_TO_HOST[tmeta["elem_type"]], "rank": rank, "address": int(address),
            "dims": dims, "strides_bytes": gstrides, "box": box, "element_strides": [1] * rank,
            "interleave": CU_TENSOR_MAP_INTERLEAVE_NONE, "swizzle": tmeta["swizzle"],
            "l2_promotion": CU_TENSOR_MAP_L2_PROMOTION_L2_128B, "oob_fill": CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE}
    # the driver's documented rules, checked here so a dry run catches them
    if address % 16:
        raise CaseError(f"tensor map address {address:#x} not 16-byte aligned")
    if any(s % 16 or s >= 1 << 40 for s in gstrides):
        raise CaseError(f"tensor map strides {gstrides} must be multiples of 16 below 2^40")
    if any(not 1 <= b <= 256 for b in box) or any(d < 1 for d in dims):
        raise CaseError(f"box {box} / dims {dims} out of range")
    span = SWIZZLE_SPAN[args["swizzle"]]
    if span is not None and box[0] * elem > span:
        raise CaseError(f"inner box {box[0]} x {elem} B exceeds the {span} B swizzle span")
    max_byte = sum((dims[i] - 1) * (elem if i == 0 else gstrides[i - 1]) for i in range(rank))
    args["clear_bit21_of_word1"] = bool(driver_version <= 13010 and max_byte + 1 < 128 * 1024)
    return args


def pack_params(p, meta, addrs, tensormaps, scratch):
    """(host blob, [offsets], [(role, arg, value)]): the .param list of the json, laid out and filled."""
    blob, offsets, shown = bytearray(), [], []
    values = p["values"]
    for prm in meta["params"]:
        align = max(prm["align"], 1)
        while len(blob) % align:
            blob.append(0)
        offsets.append(len(blob))
        role, arg, ty = prm["role"], prm["arg"], prm["type"]
        if role == "pointer":
            data, val = struct.pack("<Q", addrs[p["bind"][arg]]), addrs[p["bind"][arg]]
        elif role == "scalar":
            fmt = {"i32": "<i", "i64": "<q", "u32": "<I", "u64": "<Q", "fp32": "<f"}[ty]
            val = values[arg]
            data = struct.pack(fmt, val)
        elif role == "tensormap":
            data, val = tensormaps[arg], "CUtensorMap"
        elif role in ("tensormap_shape", "tensormap_stride"):
            buf, _ = p["descs"][arg]
            shape = p["buffers"][buf][1]
            strides = [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))]
            val = (shape if role == "tensormap_shape" else strides)[prm["dim"]]
            data = struct.pack("<i" if role == "tensormap_shape" else "<q", val)
        elif role == "global_scratch":
            val = scratch.get("global", 0)
            data = struct.pack("<Q", val)
        elif role == "profile_scratch":
            val = scratch.get("profile", 0)
            data = struct.pack("<Q", val)
        else:
            raise CaseError(f"param {prm['ptx_name']}: unknown role {role!r}")
        if len(data) != prm["bytes"]:
            raise CaseError(f"param {prm['ptx_name']} ({role} {arg}) packs {len(data)} bytes, the PTX wants "
                            f"{prm['bytes']}")
        blob += data
        shown.append((role, arg, val if not isinstance(val, bytes) else val.hex()))
    return bytes(blob), offsets, shown


# ----------------------------------------------------------------------------------------------------------
# CUDA driver access (cuda.bindings.driver) and a stand-in for the dry run
# ----------------------------------------------------------------------------------------------------------
class CudaError(Exception):
    def __init__(self, what, code, text):
        self.code = code
        super().__init__(f"{what}: CUDA error {code} ({text})")


STICKY = {700, 701, 702, 704, 710, 715, 716, 717, 718, 719, 720}   # launch failures that poison the context


class Driver:
    """The few driver calls the capture needs, each return code checked."""

    def __init__(self):
        try:
            from cuda.bindings import driver as cu
        except ImportError:    # cuda-python before 12.6 spelled it cuda.cuda (same API)
            from cuda import cuda as cu
        self.cu = cu
        self.call("cuInit", 0)
        self.dev = self.call("cuDeviceGet", 0)
        self.ctx = None
        self.open_context()
        self.version = int(self.call("cuDriverGetVersion"))
        name = self.call("cuDeviceGetName", 256, self.dev)
        self.name = (name.decode() if isinstance(name, bytes) else str(name)).split("\x00")[0]
        attr = cu.CUdevice_attribute
        self.cc = (int(self.call("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.dev)),
                   int(self.call("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.dev)))
        self.smem_optin = int(self.call("cuDeviceGetAttribute",
                                        attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, self.dev))

    def call(self, fn, *args):
        res = getattr(self.cu, fn)(*args)
        if not isinstance(res, tuple):
            res = (res,)
        err, rest = res[0], res[1:]
        code = int(err)
        if code != 0:
            try:
                text = self.cu.cuGetErrorString(err)[1]
                text = text.decode() if isinstance(text, bytes) else str(text)
            except Exception:  # the error string is a courtesy
                text = getattr(err, "name", "?")
            raise CudaError(fn, code, text)
        return rest[0] if len(rest) == 1 else (rest if rest else None)

    def open_context(self):
        self.ctx = self.call("cuDevicePrimaryCtxRetain", self.dev)
        self.call("cuCtxSetCurrent", self.ctx)

    def reset(self):
        """After a sticky launch error: drop every allocation and module, start a fresh primary context."""
        try:
            self.call("cuDevicePrimaryCtxReset", self.dev)
        finally:
            self.open_context()

    def load(self, cubin):
        img = np.frombuffer(cubin, np.uint8).copy()
        mod = self.call("cuModuleLoadData", img.ctypes.data)
        return mod, img

    def function(self, mod, entry, dynamic_smem):
        cu = self.cu
        fn = self.call("cuModuleGetFunction", mod, entry.encode())
        fa = cu.CUfunction_attribute
        attrs = {"num_regs": int(self.call("cuFuncGetAttribute", fa.CU_FUNC_ATTRIBUTE_NUM_REGS, fn)),
                 "static_shared": int(self.call("cuFuncGetAttribute", fa.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn)),
                 "max_threads": int(self.call("cuFuncGetAttribute", fa.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn)),
                 "local_bytes": int(self.call("cuFuncGetAttribute", fa.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn)),
                 "binary_version": int(self.call("cuFuncGetAttribute", fa.CU_FUNC_ATTRIBUTE_BINARY_VERSION, fn))}
        # Triton 3.9's loader (backends/nvidia/driver.c loadBinary), its path for drivers without the
        # oversized-shared-memory mode: above 48 KiB, prefer shared and raise the dynamic limit to the opt-in
        # maximum less the static part
        if dynamic_smem > 49152:
            self.call("cuFuncSetCacheConfig", fn, cu.CUfunc_cache.CU_FUNC_CACHE_PREFER_SHARED)
            self.call("cuFuncSetAttribute", fn, fa.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                      self.smem_optin - attrs["static_shared"])
        return fn, attrs

    def alloc(self, nbytes):
        return int(self.call("cuMemAlloc", max(int(nbytes), 1)))

    def free(self, addr):
        self.call("cuMemFree", self.cu.CUdeviceptr(addr))

    def upload(self, addr, array):
        a = np.ascontiguousarray(array)
        self.call("cuMemcpyHtoD", self.cu.CUdeviceptr(addr), a.ctypes.data, a.nbytes)

    def download(self, addr, nbytes):
        out = np.empty(nbytes, np.uint8)
        self.call("cuMemcpyDtoH", out.ctypes.data, self.cu.CUdeviceptr(addr), nbytes)
        return out

    def fill(self, addr, byte, nbytes):
        self.call("cuMemsetD8", self.cu.CUdeviceptr(addr), byte, nbytes)

    def encode_tiled(self, a):
        cu = self.cu
        tmap = self.call("cuTensorMapEncodeTiled", cu.CUtensorMapDataType(a["dtype"]), a["rank"], a["address"],
                         [cu.cuuint64_t(x) for x in a["dims"]], [cu.cuuint64_t(x) for x in a["strides_bytes"]],
                         [cu.cuuint32_t(x) for x in a["box"]], [cu.cuuint32_t(x) for x in a["element_strides"]],
                         cu.CUtensorMapInterleave(a["interleave"]), cu.CUtensorMapSwizzle(a["swizzle"]),
                         cu.CUtensorMapL2promotion(a["l2_promotion"]), cu.CUtensorMapFloatOOBfill(a["oob_fill"]))
        words64 = [int(x) for x in tmap.opaque]
        if len(words64) != 16:
            raise CaseError(f"CUtensorMap has {len(words64)} words, expected 16")
        if a["clear_bit21_of_word1"]:
            words64[1] &= ~(1 << 21)
        return struct.pack("<16Q", *words64)

    def launch(self, fn, grid, block, smem, blob, offsets):
        # a 64-byte-aligned host copy of the parameters and one pointer per parameter (kernelParams)
        raw = ctypes.create_string_buffer(len(blob) + 64)
        base = (ctypes.addressof(raw) + 63) // 64 * 64
        ctypes.memmove(base, blob, len(blob))
        ptrs = (ctypes.c_void_p * max(len(offsets), 1))(*[base + o for o in offsets])
        self.call("cuLaunchKernel", fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem,
                  self.cu.CUstream(0), ctypes.addressof(ptrs), 0)
        t0 = time.time()
        while True:   # bounded wait: a kernel whose barrier never completes must not hang the capture
            res = self.cu.cuStreamQuery(self.cu.CUstream(0))
            code = int(res[0] if isinstance(res, tuple) else res)
            if code == 0:
                return
            if code != 600:    # CUDA_ERROR_NOT_READY
                self.call("cuCtxSynchronize")
                raise CudaError("cuStreamQuery", code, "kernel failed")
            if time.time() - t0 > TIMEOUT_S:
                raise TimeoutError(f"kernel still running after {TIMEOUT_S} s (hang?)")
            time.sleep(0.0005)


class FakeDriver:
    """Dry-run stand-in: host byte arrays at fake device addresses; a launch computes the matmul in float64
    and rounds it to the output type (so the trace has realistic bits); tensor maps are 128 zero bytes."""

    def __init__(self):
        self.name, self.version, self.cc, self.smem_optin = "dry run (no GPU)", 13000, (9, 0), 232448
        self.mem, self.next = {}, 0x7F0000000000
        self.on_launch = None

    def reset(self):
        self.mem.clear()

    def load(self, cubin):
        return "module", None

    def function(self, mod, entry, dynamic_smem):
        if dynamic_smem > self.smem_optin:
            raise CaseError(f"{dynamic_smem} B of shared memory exceed the opt-in maximum")
        return entry, {"num_regs": 0, "static_shared": 0, "max_threads": 0, "local_bytes": 0, "binary_version": 0}

    def alloc(self, nbytes):
        addr = self.next
        self.mem[addr] = np.zeros(max(int(nbytes), 1), np.uint8)
        self.next += (int(nbytes) + 0xFFFF) // 0x10000 * 0x10000 + 0x10000
        return addr

    def free(self, addr):
        del self.mem[addr]

    def _view(self, addr, nbytes):
        for base, buf in self.mem.items():
            if base <= addr and addr + nbytes <= base + buf.size:
                return buf[addr - base: addr - base + nbytes]
        raise CaseError(f"fake access {addr:#x}+{nbytes} outside every allocation")

    def upload(self, addr, array):
        a = np.ascontiguousarray(array).view(np.uint8).ravel()
        self._view(addr, a.size)[:] = a

    def download(self, addr, nbytes):
        return self._view(addr, nbytes).copy()

    def fill(self, addr, byte, nbytes):
        self._view(addr, nbytes)[:] = byte

    def encode_tiled(self, a):
        return bytes(128)

    def launch(self, fn, grid, block, smem, blob, offsets):
        self.on_launch(self)


def fake_output(p, inputs):
    """float64 A B rounded to the output type: a stand-in with the statistics of real outputs."""
    fam = FIXTURES[p["fixture"]]
    a = decode(TTYPES[fam["a"]][0], inputs["a"])
    b = decode(TTYPES[fam["b"]][0], inputs["b"])
    if fam["b_layout"] == "NK":
        b = b.T
    c = a @ b
    return (c.astype(np.float16).view(np.uint16) if fam["c"] == "fp16" else c.astype(np.float32).view(np.uint32))


# ----------------------------------------------------------------------------------------------------------
def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def run_case(drv, index, case, seed, fixtures_dir, kernels_dir, modules):
    fixture, M, N, K = case
    meta = json.load(open(os.path.join(fixtures_dir, fixture + ".json")))
    p = plan(fixture, M, N, K, meta)
    info = {"index": index, "fixture": fixture, "entry": meta["entry"], "M": M, "N": N, "K": K,
            "grid": p["grid"], "block": p["block"], "shared_bytes": meta["shared_bytes"], "seed": seed,
            "status": "error", "error": None, "deterministic": None, "poison_left": None, "guard_clobbered": None}
    out = None
    try:
        check_specialisation(p, meta)
        cubin_path = os.path.join(kernels_dir, fixture + ".cubin")
        if isinstance(drv, FakeDriver) and not os.path.exists(cubin_path):
            cubin, info["cubin"] = b"", "absent (dry run)"
        else:
            cubin = open(cubin_path, "rb").read()
            if hashlib.sha256(cubin).hexdigest() != meta["cubin_sha256"]:
                raise CaseError(f"{cubin_path}: sha256 differs from {fixture}.json (copy the .kernels/ that "
                                f"made the fixtures, or rebuild both with triton_kernels.py)")
            info["cubin"] = "sha256 checked"
        if fixture not in modules:
            mod, keep = drv.load(cubin)
            modules[fixture] = (mod, keep) + drv.function(mod, meta["entry"], meta["shared_bytes"])
        _, _, fn, fattrs = modules[fixture]
        info["function_attributes"] = fattrs
        # inputs
        inputs, specs = {}, []
        for role, stream in (("a", STREAM_A), ("b", STREAM_B)):
            tty, shape = p["buffers"][role]
            fmt = TTYPES[tty][0]
            inputs[role] = input_bits(fmt, shape, seed, stream)
            specs.append({"buffer": role, "dtype": fmt, "shape": list(shape), "seed": seed, "stream": stream})
        ctty, cshape = p["buffers"]["c"]
        c_bytes = int(np.prod(cshape)) * TTYPES[ctty][1]
        info["inputs"], info["output"] = specs, {"buffer": "c", "dtype": TTYPES[ctty][0], "shape": list(cshape)}
        # device buffers: inputs exact size; output between two poisoned guards
        allocs, running = [], False
        try:
            addrs = {}
            for role in ("a", "b"):
                addrs[role] = drv.alloc(inputs[role].nbytes)
                allocs.append(addrs[role])
                drv.upload(addrs[role], inputs[role])
            c_base = drv.alloc(c_bytes + 2 * GUARD)
            allocs.append(c_base)
            addrs["c"] = c_base + GUARD
            scratch, nprog = {}, p["grid"][0] * p["grid"][1] * p["grid"][2] * meta["num_ctas"]
            for kind in ("global", "profile"):
                size = meta[f"{kind}_scratch_size"]
                if size > 0:
                    align = max(meta[f"{kind}_scratch_align"], 1)
                    base = drv.alloc(nprog * size + align)
                    allocs.append(base)
                    scratch[kind] = (base + align - 1) // align * align
                    drv.fill(base, 0 if kind == "profile" else POISON, nprog * size + align)
            info["buffers"] = {k: {"address": v} for k, v in addrs.items()}
            info["scratch"] = {k: {"address": v, "bytes_per_program": meta[f"{k}_scratch_size"]}
                               for k, v in scratch.items()}
            # host tensor maps
            tensormaps, tm_info = {}, []
            tdm = iter(meta["tensordesc_meta"])
            for prm in meta["params"]:
                if prm["role"] == "tensormap":
                    buf, block = p["descs"][prm["arg"]]
                    tm = next(tdm)
                    if len(tm["block_size"]) != len(block):
                        raise CaseError(f"{prm['arg']}: rank-{len(block)} block {block}, but the kernel's "
                                        f"tensordesc_meta has {tm['block_size']}")
                    shape = p["buffers"][buf][1]
                    strides = [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))]
                    args = tiled_encode_args(tm, addrs[buf], shape, strides, drv.version)
                    tensormaps[prm["arg"]] = drv.encode_tiled(args)
                    # the box is the kernel's tensordesc_meta block (Triton splits a 128x256 fp16 store into
                    # 64-column boxes for the 128-byte swizzle), not the descriptor's block_shape
                    tm_info.append({"arg": prm["arg"], "block_shape": block, "encode": args,
                                    "bytes": tensormaps[prm["arg"]].hex()})
            info["tensormaps"] = tm_info
            blob, offsets, shown = pack_params(p, meta, addrs, tensormaps, scratch)
            info["params"] = [{"role": r, "arg": a, "value": v} for r, a, v in shown]
            info["param_blob"] = blob.hex()

            if isinstance(drv, FakeDriver):
                def on_launch(d, p=p, inputs=inputs, addr=addrs["c"]):
                    d.upload(addr, fake_output(p, inputs))
                drv.on_launch = on_launch
            runs = []
            for _ in range(2):
                drv.fill(c_base, POISON, c_bytes + 2 * GUARD)
                t0 = time.time()
                running = True   # stays True only when the wait timed out
                try:
                    drv.launch(fn, p["grid"], p["block"], meta["shared_bytes"], blob, offsets)
                except TimeoutError:
                    raise
                except Exception:
                    running = False
                    raise
                running = False
                info.setdefault("seconds", []).append(round(time.time() - t0, 4))
                runs.append(drv.download(c_base, c_bytes + 2 * GUARD))
            first, second = runs
            out = first[GUARD:GUARD + c_bytes]
            guards = np.concatenate([first[:GUARD], first[GUARD + c_bytes:]])
            esize = TTYPES[ctty][1]
            info["deterministic"] = bool(np.array_equal(first, second))
            info["poison_left"] = int(np.all(out.reshape(-1, esize) == POISON, axis=1).sum())
            info["guard_clobbered"] = int(np.count_nonzero(guards != POISON))
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
        if isinstance(e, CudaError) and e.code in STICKY:
            modules.clear()
            drv.reset()
    return info, out


def sources():
    files = ["scripts/capture/capture_kernels.py", "scripts/fixtures/triton_kernels.py", "tcemu/frontends/triton.py",
             "tcemu/traces/inputs.py"]
    return {f: sha256_file(os.path.join(ROOT, f)) for f in files if os.path.exists(os.path.join(ROOT, f))}


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # provenance is best effort; say what failed
        return f"unavailable ({e})"


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
    # the fixtures themselves travel in the trace, so a replay needs nothing else (sha256 in meta.fixtures)
    for name in meta.get("fixtures", {}):
        for ext in ("ptx", "json"):
            with open(os.path.join(ROOT, meta["fixtures_dir"], f"{name}.{ext}"), "rb") as f:
                cols[f"fixture_{name}_{ext}"] = np.frombuffer(f.read(), np.uint8)
    np.savez_compressed(path, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **cols)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", default=".kernels", help="folder of the sm_90a cubins (scripts/fixtures/triton_kernels.py)")
    ap.add_argument("--fixtures", default=os.path.join(ROOT, "tests", "fixtures", "ptx"))
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--only", default=None, help="comma-separated fixture names (default: all)")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: plan, pack, write a trace of stand-in outputs")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cases = [c for c in CASES if args.only is None or c[0] in args.only.split(",")]
    drv = FakeDriver() if args.dry_run else Driver()
    if not args.dry_run and drv.cc != (9, 0):
        print(f"warning: {drv.name} is sm_{drv.cc[0]}{drv.cc[1]}, the cubins are sm_90a", flush=True)
    fixtures = {}
    for name in sorted({c[0] for c in cases}):
        fmeta = json.load(open(os.path.join(args.fixtures, name + ".json")))
        ptx = os.path.join(args.fixtures, name + ".ptx")
        cubin = os.path.join(args.kernels, name + ".cubin")
        fixtures[name] = {"entry": fmeta["entry"], "triton": fmeta["triton"], "json_sha256": sha256_file(
            os.path.join(args.fixtures, name + ".json")), "ptx_sha256": sha256_file(ptx) if os.path.exists(ptx)
            else None, "cubin_sha256": sha256_file(cubin) if os.path.exists(cubin) else None,
            "ptx_sha256_in_json": fmeta["ptx_sha256"], "cubin_sha256_in_json": fmeta["cubin_sha256"]}
    try:
        import cuda.bindings
        bindings = getattr(cuda.bindings, "__version__", "?")
    except ImportError:
        bindings = "not installed"
    meta = {"format": "tcemu-trace", "version": 1, "kind": "kernel_outputs", "arch": "sm90",
            "dry_run": bool(args.dry_run), "gpu": drv.name, "compute_capability": list(drv.cc),
            "driver": sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1") or None,
            "cuda": drv.version, "cuda_bindings": bindings, "numpy": np.__version__,
            "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": "python3 " + " ".join(sys.argv), "build": "cubins and PTX from scripts/fixtures/triton_kernels.py "
            "(each fixture's json: command, Triton version, sha256)", "sources": sources(), "fixtures": fixtures,
            "seed": args.seed, "smem_base": None, "fixtures_dir": os.path.relpath(args.fixtures, ROOT), "generator": "tcemu/traces/inputs.py (copy in this script): "
            "input_bits(dtype, shape, seed, stream), A stream 0, B stream 1, row-major storage index",
            "poison": POISON, "guard_bytes": GUARD,
            "columns": {"seed": "uint64 case seed (inputs: input_bits(dtype, storage shape, seed, stream))",
                        "status": "index into meta.status_codes", "m": "M", "n": "N", "k": "K",
                        "grid": "(cases, 3) launch grid",
                        "offsets": "case i's output bytes are bits[offsets[i]:offsets[i+1]] (empty when it failed)",
                        "bits": "uint8 raw output bytes of the first run, little-endian elements, row-major "
                                "(meta.cases[i].output: dtype and shape)"}}
    infos, outs, modules = [], [], {}
    t_start = time.time()
    hung = None
    for i, case in enumerate(cases):
        seed = case_seed(args.seed, i)
        if hung is not None:
            infos.append({"index": i, "fixture": case[0], "M": case[1], "N": case[2], "K": case[3], "seed": seed,
                          "grid": [0, 0, 0], "status": "not run", "error": f"after the hang of case {hung}"})
            outs.append(None)
            continue
        try:
            info, out = run_case(drv, i, case, seed, args.fixtures, args.kernels, modules)
        except TimeoutError as e:
            info = {"index": i, "fixture": case[0], "M": case[1], "N": case[2], "K": case[3], "seed": seed,
                    "grid": [0, 0, 0], "status": "timeout", "error": str(e)}
            out, hung = None, i
        infos.append(info)
        outs.append(out)
        print(f"[{time.time() - t_start:6.1f}s] case {i:2d} {case[0]:18s} {case[1]:5d}x{case[2]:5d}x{case[3]:5d} "
              f"{info['status']}" + (f": {info['error']}" if info.get("error") else ""), flush=True)
    path = os.path.join(args.out, "triton_kernels_sm90.npz")
    write_trace(path, meta, infos, outs)
    print(f"\n{'case':>4} {'fixture':18s} {'M':>5} {'N':>5} {'K':>5} {'grid':>11} {'status':16s} {'det':>4} "
          f"{'poison':>6} {'guard':>5}")
    for info in infos:
        g = "x".join(str(x) for x in info["grid"])
        print(f"{info['index']:4d} {info['fixture']:18s} {info['M']:5d} {info['N']:5d} {info['K']:5d} {g:>11} "
              f"{info['status']:16s} {str(info.get('deterministic'))[:4]:>4} {str(info.get('poison_left')):>6} "
              f"{str(info.get('guard_clobbered')):>5}")
    ok = sum(i["status"] == "ok" for i in infos)
    print(f"\nwrote {path}: {ok}/{len(infos)} cases ok, {os.path.getsize(path)} bytes, "
          f"{time.time() - t_start:.1f} s{' (DRY RUN: stand-in outputs)' if args.dry_run else ''}")
    if hung is not None:
        os._exit(3)   # a hung kernel keeps the context busy; leave without waiting for it


if __name__ == "__main__":
    main()
