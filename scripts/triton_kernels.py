"""Triton matmul kernels whose PTX tcemu keeps as fixtures, and the command that writes the fixtures.

    PYTHONPATH=. python scripts/triton_kernels.py --out tests/fixtures/ptx --cubins .kernels

writes, for each kernel below, tests/fixtures/ptx/<name>.ptx and <name>.json (tcemu.triton metadata plus
this command, the Triton version, the date and the sha256 of the PTX and of the cubin) and the sm_90a
cubins into .kernels/ (git-ignored; the GPU capture, scripts/capture_kernels.py, loads them from there).
Needs Triton (3.9 made the committed fixtures), no GPU.

Kernels (sm_90a; each compiled as the JIT would specialise it for its first case in capture_kernels.CASES:
pointers 16-byte aligned and integers that are multiples of 16 get tt.divisibility 16, integers equal to 1
become constexpr):
  matmul_bf16       bf16 A (M,K) and B (K,N) row-major, fp16 C, f32 accumulate; 128x256x64, 8 warps, 3 stages
  matmul_bf16_k200  the same kernel as a launch with K = 200 specialises it (K, A's row stride not /16)
  matmul_bf16_n300  the same kernel as a launch with N = 300 specialises it (N, B's and C's row strides not /16)
  matmul_e4m3       e4m3 A (M,K), B given as (N,K) row-major (K-major), fp16 C; 128x256x128, 8 warps, 3 stages
  matmul_tf32       f32 A, B, C; tl.dot's default input precision (tf32); 128x128x32, 8 warps, 3 stages
  matmul_f16        fp16 A, B row-major, fp16 C; 128x256x64, 8 warps, 3 stages
  matmul_tma_bf16   host TensorDescriptors (CUtensorMap by value) for A (M,K), B (N,K) and C (M,N) fp16
  matmul_dtma_bf16  device-side tl.make_tensor_descriptor (needs Triton's global scratch allocation)
  sm_100a, PTX and json only: matmul_bf16_sm100, matmul_e4m3_sm100, and matmul_tma_bf16_ws_sm100 (the host-TMA
  kernel with warp_specialize=True: on matmul_ptr's cp.async loop the flag changes no byte of the PTX)

All of them walk the output tiles in groups of GROUP_M tile rows (so consecutive programs share B
columns in L2) and accumulate K blocks in order into one f32 accumulator, masking the K tail with zeros.
"""
import argparse
import datetime
import hashlib
import json
import os
import sys

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")   # Triton 3.9's (and 3.6's) default, said explicitly
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from tcemu.triton import compile_kernel, specialize  # noqa: E402
import capture_kernels as cap  # noqa: E402  (the case table decides each fixture's specialisation)


@triton.jit
def _tile_coords(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """Program id -> (tile row, tile column), walking column-major inside bands of GROUP_M tile rows."""
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_band = GROUP_M * tiles_n
    band = pid // per_band
    first = band * GROUP_M
    height = min(tiles_m - first, GROUP_M)
    inside = pid % per_band
    return first + inside % height, inside // height


@triton.jit
def matmul_ptr(a_ptr, b_ptr, c_ptr, M, N, K,
               stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
               WARP_SPECIALIZE: tl.constexpr):
    """C = A B with pointer loads. B's strides say its layout: (stride_bk, stride_bn) = (N, 1) for (K, N)
    row-major, (1, K) for B given as (N, K) row-major."""
    tile_m, tile_n = _tile_coords(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rows = (tile_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M     # wrapped rows/cols stay in bounds; not stored
    cols = (tile_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    ks = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in tl.range(0, tl.cdiv(K, BLOCK_K), warp_specialize=WARP_SPECIALIZE):
        left = K - kb * BLOCK_K
        a = tl.load(a_tile, mask=ks[None, :] < left, other=0.0)
        b = tl.load(b_tile, mask=ks[:, None] < left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk
    out_rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    out_cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_tile = c_ptr + out_rows[:, None] * stride_cm + out_cols[None, :] * stride_cn
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), mask=(out_rows[:, None] < M) & (out_cols[None, :] < N))


@triton.jit
def matmul_tma_host(a_desc, b_desc, c_desc, M, N, K,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                    WARP_SPECIALIZE: tl.constexpr):
    """C = A B^T-stored: A (M, K), B as (N, K), C (M, N), all through host-built tensor maps; TMA zero-fills
    out-of-bounds boxes and clips the store."""
    tile_m, tile_n = _tile_coords(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in tl.range(0, tl.cdiv(K, BLOCK_K), warp_specialize=WARP_SPECIALIZE):
        a = a_desc.load([tile_m * BLOCK_M, kb * BLOCK_K])
        b = b_desc.load([tile_n * BLOCK_N, kb * BLOCK_K])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([tile_m * BLOCK_M, tile_n * BLOCK_N], acc.to(c_desc.dtype))


@triton.jit
def matmul_tma_device(a_ptr, b_ptr, c_ptr, M, N, K,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """The same as matmul_tma_host, the tensor maps built on the device (into Triton's global scratch)."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    tile_m, tile_n = _tile_coords(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([tile_m * BLOCK_M, kb * BLOCK_K])
        b = b_desc.load([tile_n * BLOCK_N, kb * BLOCK_K])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([tile_m * BLOCK_M, tile_n * BLOCK_N], acc.to(c_ptr.dtype.element_ty))


GRID_TILES = [[["M", "BLOCK_M"], ["N", "BLOCK_N"]], [], []]   # (cdiv(M, BM) * cdiv(N, BN), 1, 1)

# fixture -> (kernel, tile constexprs, num_warps, num_stages). Operand types and layouts, and the cases
# (whose launch values decide the specialisation) live in capture_kernels.FIXTURES / CASES.
PTR_BF16 = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "WARP_SPECIALIZE": False}
CONFIGS = {
    "matmul_bf16": (matmul_ptr, PTR_BF16, 8, 3),
    "matmul_bf16_k200": (matmul_ptr, PTR_BF16, 8, 3),
    "matmul_bf16_n300": (matmul_ptr, PTR_BF16, 8, 3),
    "matmul_e4m3": (matmul_ptr, {**PTR_BF16, "BLOCK_K": 128}, 8, 3),
    "matmul_tf32": (matmul_ptr, {**PTR_BF16, "BLOCK_N": 128, "BLOCK_K": 32}, 8, 3),
    "matmul_f16": (matmul_ptr, PTR_BF16, 8, 3),
    "matmul_tma_bf16": (matmul_tma_host, {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8,
                                          "WARP_SPECIALIZE": False}, 8, 3),
    "matmul_dtma_bf16": (matmul_tma_device, {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, 8, 3),
}
DESCRIPTIONS = {
    "matmul_bf16": "bf16 (M,K) x bf16 (K,N) row-major -> fp16, f32 accumulate, 128x256x64, 8 warps, 3 stages; "
                   "specialised for M, N, K and row strides multiples of 16",
    "matmul_bf16_k200": "matmul_bf16 specialised as a launch with K = 200 compiles it (K and A's row stride not "
                        "multiples of 16)",
    "matmul_bf16_n300": "matmul_bf16 specialised as a launch with N = 300 compiles it (N and B's and C's row "
                        "strides not multiples of 16)",
    "matmul_e4m3": "e4m3 (M,K) x e4m3 B stored (N,K) (K-major) -> fp16, 128x256x128, 8 warps, 3 stages",
    "matmul_tf32": "f32 (M,K) x f32 (K,N) -> f32, tl.dot's default input precision (tf32), 128x128x32, 8 warps, "
                   "3 stages",
    "matmul_f16": "fp16 (M,K) x fp16 (K,N) -> fp16, f32 accumulate, 128x256x64, 8 warps, 3 stages",
    "matmul_tma_bf16": "host TensorDescriptors: bf16 A (M,K), B stored (N,K) -> fp16 C (M,N), 128x256x64, "
                       "8 warps, 3 stages",
    "matmul_dtma_bf16": "device tl.make_tensor_descriptor: bf16 A (M,K), B stored (N,K) -> fp16 C (M,N), "
                        "128x256x64, 8 warps, 3 stages",
}
# sm_100a fixtures (PTX and json only): (sm90 fixture whose first case gives the launch values, overrides)
SM100 = {
    "matmul_bf16_sm100": ("matmul_bf16", {}),
    "matmul_e4m3_sm100": ("matmul_e4m3", {}),
    # warp_specialize on matmul_ptr's loop changes nothing (Triton 3.9 partitions only descriptor loads):
    # the warp-specialised fixture is the host-TMA kernel
    "matmul_tma_bf16_ws_sm100": ("matmul_tma_bf16", {"WARP_SPECIALIZE": True}),
}


def build(name):
    """(ptx, cubin, meta) of one fixture, specialised as its first case's real launch would be."""
    base, over = SM100.get(name, (name, {}))
    arch = "sm100" if name in SM100 else "sm90"
    fn, const, warps, stages = CONFIGS[base]
    const = {**const, **over}
    case = next(c for c in cap.CASES if c[0] == base)
    plan = cap.plan(base, *case[1:], {"constexprs": const, "grid": GRID_TILES, "block": [32 * warps, 1, 1]})
    values = {**plan["values"], **const}
    signature, constexprs, divisible = specialize(fn, values)
    ptx, cubin, meta = compile_kernel(fn, signature=signature, constexprs=constexprs, num_warps=warps,
                                      num_stages=stages, arch=arch, divisibility=divisible, grid=GRID_TILES)
    desc = DESCRIPTIONS[base] + (f"; sm_100a{', warp_specialize=True' if over.get('WARP_SPECIALIZE') else ''}"
                                 if arch == "sm100" else "")
    meta = {"name": name, "description": desc, "arch": arch, "launch_values": plan["values"],
            "launch_shape": {"M": case[1], "N": case[2], "K": case[3]}, **meta}
    return ptx, cubin, meta


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/fixtures/ptx", help="folder for <name>.ptx and <name>.json")
    ap.add_argument("--cubins", default=".kernels", help="git-ignored folder for the sm_90a cubins")
    ap.add_argument("names", nargs="*", help="kernels to build (default: all)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.cubins, exist_ok=True)
    command = "PYTHONPATH=. python " + " ".join(["scripts/triton_kernels.py"] + sys.argv[1:])
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    for name in args.names or list(CONFIGS) + list(SM100):
        ptx, cubin, meta = build(name)
        meta.update({"command": command, "date": date,
                     "ptx_sha256": hashlib.sha256(ptx.encode()).hexdigest(),
                     "cubin_sha256": hashlib.sha256(cubin).hexdigest(), "cubin_bytes": len(cubin),
                     "source_sha256": hashlib.sha256(open(__file__, "rb").read()).hexdigest(),
                     "env": {"TRITON_DEFAULT_FP_FUSION": os.environ.get("TRITON_DEFAULT_FP_FUSION")}})
        with open(os.path.join(args.out, name + ".ptx"), "w", newline="\n") as f:
            f.write(ptx)
        if meta["arch"] == "sm90":
            with open(os.path.join(args.cubins, name + ".cubin"), "wb") as f:
                f.write(cubin)
        with open(os.path.join(args.out, name + ".json"), "w") as f:
            json.dump(meta, f, indent=1)
            f.write("\n")
        print(f"{name:22s} {meta['arch']:6s} {meta['entry']:20s} {len(meta['params']):3d} params "
              f"{meta['shared_bytes']:7d} B shared  ptx {len(ptx):7d} B  cubin {len(cubin):7d} B", flush=True)


if __name__ == "__main__":
    main()
