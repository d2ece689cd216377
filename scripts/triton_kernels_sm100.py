"""Triton sm_100a kernels with block-scaled tl.dot_scaled, whose PTX tcemu keeps as fixtures.

    PYTHONPATH=. python scripts/triton_kernels_sm100.py --out tests/fixtures/ptx/sm100

writes tests/fixtures/ptx/sm100/<name>.ptx and <name>.json (tcemu.triton.compile_kernel's metadata plus this command,
the Triton version, the date and the sha256 of the PTX and of this script). Needs Triton (3.9 made the committed
fixtures), no GPU. A separate script from scripts/triton_kernels.py so that the sm_90a fixtures (and the H100
trace that embeds them) keep their bytes.

Kernel: C (M, N) f32 = sum over K blocks of tl.dot_scaled(A block, its scales, B block^T, its scales), A (M, K) and B
(N, K) stored row-major (K-major), scales (M, K / VEC) and (N, K / VEC) bytes; 128x128x128 tiles, 4 warps,
2 stages. Triton 3.9 emits tcgen05.mma ... .block_scale and stores the scale factors into tensor memory with
tcgen05.st:
  scaled_mxfp8_sm100   e4m3 x e4m3, ue8m0 scales per 32 (kind::mxf8f6f4.block_scale.block32)
  scaled_mxfp4_sm100   e2m1 x e2m1 packed two per byte (first element low), ue8m0 per 32 (kind::mxf4 .block32)
  scaled_nvfp4_sm100   e2m1 x e2m1, ue4m3 scales per 16 (kind::mxf4nvf4.block_scale.block16)
"""
import argparse
import datetime
import hashlib
import json
import os
import sys

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tcemu.triton import compile_kernel  # noqa: E402


@triton.jit
def matmul_scaled(a_ptr, b_ptr, sa_ptr, sb_ptr, c_ptr, M, N, K,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  FMT: tl.constexpr, VEC: tl.constexpr, PACK: tl.constexpr):
    """C = A B^T with microscaled operands: element k of a row of A is a_ptr[row, k / PACK] (PACK = 2: two fp4
    per byte), its scale sa_ptr[row, k / VEC]; B likewise. M, N multiples of the tile, K of BLOCK_K."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K // PACK)
    ss = tl.arange(0, BLOCK_K // VEC)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptr + rows[:, None] * (K // PACK) + (kb * (BLOCK_K // PACK) + ks)[None, :])
        b = tl.load(b_ptr + cols[:, None] * (K // PACK) + (kb * (BLOCK_K // PACK) + ks)[None, :])
        sa = tl.load(sa_ptr + rows[:, None] * (K // VEC) + (kb * (BLOCK_K // VEC) + ss)[None, :])
        sb = tl.load(sb_ptr + cols[:, None] * (K // VEC) + (kb * (BLOCK_K // VEC) + ss)[None, :])
        acc = tl.dot_scaled(a, sa, FMT, b.T, sb, FMT, acc)
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc)


TILE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128}
# name -> (operand pointer type, scale pointer type, FMT, VEC, PACK, description)
KERNELS = {
    "scaled_mxfp8_sm100": ("*fp8e4nv", "*u8", "e4m3", 32, 1, "mxfp8: e4m3 A (M,K) and B (N,K), ue8m0 scales per 32"),
    "scaled_mxfp4_sm100": ("*u8", "*u8", "e2m1", 32, 2, "mxfp4: e2m1 packed two per byte, ue8m0 scales per 32"),
    "scaled_nvfp4_sm100": ("*u8", "*fp8e4nv", "e2m1", 16, 2, "nvfp4: e2m1 packed two per byte, ue4m3 scales per 16"),
}
GRID = [[["M", "BLOCK_M"]], [["N", "BLOCK_N"]], []]


def build(name):
    operand, scale, fmt, vec, pack, what = KERNELS[name]
    signature = {"a_ptr": operand, "b_ptr": operand, "sa_ptr": scale, "sb_ptr": scale, "c_ptr": "*fp32", "M": "i32",
                 "N": "i32", "K": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr",
                 "FMT": "constexpr", "VEC": "constexpr", "PACK": "constexpr"}
    constexprs = {**TILE, "FMT": fmt, "VEC": vec, "PACK": pack}
    divisible = ["a_ptr", "b_ptr", "sa_ptr", "sb_ptr", "c_ptr", "M", "N", "K"]
    ptx, cubin, meta = compile_kernel(matmul_scaled, signature=signature, constexprs=constexprs, num_warps=4,
                                      num_stages=2, arch="sm100", divisibility=divisible, grid=GRID)
    meta = {"name": name, "description": what + "; 128x128x128 tiles, 4 warps, 2 stages; sm_100a", "arch": "sm100",
            **meta}
    return ptx, cubin, meta


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/fixtures/ptx/sm100")
    ap.add_argument("names", nargs="*", help="kernels to build (default: all)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    command = "PYTHONPATH=. python " + " ".join(["scripts/triton_kernels_sm100.py"] + sys.argv[1:])
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    for name in args.names or list(KERNELS):
        ptx, cubin, meta = build(name)
        meta.update({"command": command, "date": date, "ptx_sha256": hashlib.sha256(ptx.encode()).hexdigest(),
                     "cubin_sha256": hashlib.sha256(cubin).hexdigest(), "cubin_bytes": len(cubin),
                     "source_sha256": hashlib.sha256(open(__file__, "rb").read()).hexdigest(),
                     "env": {"TRITON_DEFAULT_FP_FUSION": os.environ.get("TRITON_DEFAULT_FP_FUSION")}})
        with open(os.path.join(args.out, name + ".ptx"), "w", newline="\n") as f:
            f.write(ptx)
        with open(os.path.join(args.out, name + ".json"), "w") as f:
            json.dump(meta, f, indent=1)
            f.write("\n")
        census = meta["opcode_census"]
        print(f"{name:22s} {meta['entry']:16s} {meta['shared_bytes']:7d} B shared  ptx {len(ptx):7d} B  "
              f"{[k for k in census if k.startswith('tcgen05.mma')]}", flush=True)


if __name__ == "__main__":
    main()
