"""One @triton.jit fp16 matmul source (Triton's tutorial 03 kernel, one fixed config: 128 x 256 x 64 blocks, 8 warps,
3 stages, f32 accumulators, f16 output) run two ways on the CPU, each in a fresh process, at N^3:

- Triton's own interpreter (TRITON_INTERPRET=1: numpy over whole blocks, not bit-exact);
- tcemu: Triton compiles it for sm_90a as for an H100 and tcemu's PTX interpreter runs the PTX (TCEMU_TRITON=sm90),
  every output bit checked against tcemu.matmul on the same inputs.

    python scripts/bench/triton_interp.py [--n 256 512 1024]

Needs triton and torch (CPU). Each figure is the CPU time of the timed launch (after one warm-up launch at the same
N, which compiles); a markdown table."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")

CHILD = r'''
import json, os, sys, time
sys.path.insert(0, os.path.abspath(sys.argv[3]))
import numpy as np
if sys.argv[1] == "tcemu":
    import tcemu.triton
    tcemu.triton.activate(arch="sm90")
import torch, triton, triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def run(n, seed):
    g = torch.Generator().manual_seed(seed)
    a = (torch.rand((n, n), generator=g) * 2 - 1).to(torch.float16)
    b = (torch.rand((n, n), generator=g) * 2 - 1).to(torch.float16)
    c = torch.empty((n, n), dtype=torch.float16)
    grid = (triton.cdiv(n, 128) * triton.cdiv(n, 256),)
    t = time.process_time()
    matmul_kernel[grid](a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1), BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3)
    return time.process_time() - t, a, b, c


n = int(sys.argv[2])
run(n, 0)                      # compiles (tcemu: Triton's sm_90a build; both: their caches warm)
cpu, a, b, c = run(n, 1)
import tcemu
ref = tcemu.matmul(a.numpy(), b.numpy(), dtype_a="f16", dtype_b="f16", out_dtype="f16", workers=1)
got = c.numpy()
diff = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
print(json.dumps({"cpu": cpu, "bits_equal": bool(np.array_equal(got.view(np.uint16), ref.view(np.uint16))),
                  "max_abs_diff": diff}))
'''


def child(mode, n):
    env = dict(os.environ)
    env.pop("TCEMU_TRITON", None)
    env.pop("TRITON_INTERPRET", None)
    if mode == "interpret":
        env["TRITON_INTERPRET"] = "1"
    with tempfile.TemporaryDirectory() as tmp:   # @triton.jit reads its function's source from a file
        path = os.path.join(tmp, "triton_matmul_child.py")
        with open(path, "w") as f:
            f.write(CHILD)
        out = subprocess.run([sys.executable, path, mode, str(n), ROOT], env=env, capture_output=True, text=True,
                             timeout=3600)
    if out.returncode:
        raise SystemExit(f"{mode} at N={n} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[256, 512, 1024])
    args = ap.parse_args()
    print("| N | tcemu (PTX, sm_90a) CPU s | TRITON_INTERPRET=1 CPU s | tcemu / interpreter | tcemu bits vs tcemu.matmul "
          "| interpreter max abs diff |")
    print("|---:|---:|---:|---:|---|---:|")
    for n in args.n:
        t, i = child("tcemu", n), child("interpret", n)
        print(f"| {n} | {t['cpu']:.2f} | {i['cpu']:.2f} | {t['cpu'] / i['cpu']:.2f} | "
              f"{'equal' if t['bits_equal'] else 'DIFFER'} | {i['max_abs_diff']:.3g} |", flush=True)


if __name__ == "__main__":
    main()
