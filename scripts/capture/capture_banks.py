"""Capture Nsight Compute's shared-memory wavefront counts for single warp-wide instructions.

Runs on the GPU host with numpy alone. Exact command used for traces/smem_wavefronts_sm90.npz:

    nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o /tmp/banks scripts/capture/capture_banks.cu
    python3 scripts/capture/capture_banks.py --binary /tmp/banks --seed 5 --per-op 60 --extra-wide-loads 1500 \\
        --budget 480 --out traces/smem_wavefronts_sm90.npz

Confirmation set (traces/smem_wavefronts_targeted_sm90.npz), patterns from scripts/capture/banks_targeted.py:

    python3 scripts/capture/capture_banks.py --binary /tmp/banks --seed 6 --targeted --out traces/smem_wavefronts_targeted_sm90.npz

Each pattern: an op (OPS), an active mask (ld/st only), 32 per-thread byte offsets into dynamic
shared memory (aligned to the access width). ncu (--clock-control none) reports
l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum and ..._op_st.sum for every launch.
"""
import argparse
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import capture_addresses  # noqa: E402  (provenance helper)

OPS = ["ld.shared.u8", "ld.shared.u16", "ld.shared.b32", "ld.shared.b64", "ld.shared.v2.b32", "ld.shared.v4.b32",
       "ld.shared.v2.b64", "st.shared.u8", "st.shared.u16", "st.shared.b32", "st.shared.b64", "st.shared.v2.b32",
       "st.shared.v4.b32", "st.shared.v2.b64",
       "ldmatrix.sync.aligned.m8n8.x1.shared.b16", "ldmatrix.sync.aligned.m8n8.x2.shared.b16",
       "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16",
       "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
       "stmatrix.sync.aligned.m8n8.x1.shared.b16", "stmatrix.sync.aligned.m8n8.x2.shared.b16",
       "stmatrix.sync.aligned.m8n8.x4.shared.b16", "stmatrix.sync.aligned.m8n8.x1.trans.shared.b16",
       "stmatrix.sync.aligned.m8n8.x2.trans.shared.b16", "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16"]
WIDTH = [1, 2, 4, 8, 8, 16, 16] * 2 + [16] * 12
REGION = 32 * 1024
METRICS = ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"]


def pattern(rng, op):
    """(mask, 32 offsets) for one launch."""
    w = WIDTH[op]
    t = np.arange(32)
    kind = int(rng.integers(0, 7 if op < 14 else 6))
    region = int(rng.choice([w * 32, 128, 256, 512, 1024, 4096, REGION]))
    slots = max(region // w, 1)
    if kind == 0:    # uniform random
        addr = w * rng.integers(0, slots, 32)
    elif kind == 1:  # broadcast-heavy: a few distinct addresses
        distinct = w * rng.integers(0, slots, int(rng.choice([1, 2, 3, 4, 8, 16])))
        addr = distinct[rng.integers(0, distinct.size, 32)]
    elif kind == 2:  # strided
        stride = w * int(rng.choice([1, 2, 3, 4, 5, 8, 16, 17, 32, 33, 64]))
        addr = (w * int(rng.integers(0, slots)) + t * stride) % REGION
    elif kind == 3:  # threads t and t ^ x share an address (the LDS.128 lead), x from one or two bits
        x = int(rng.choice([1, 2, 4, 8, 16, 3, 5, 6, 12, 24]))
        base = w * rng.integers(0, slots, 32) if rng.random() < 0.5 else (t * w * int(rng.choice([1, 2, 4]))) % REGION
        addr = base[t & ~x]
    elif kind == 4:  # a 128-byte-row tile, optionally XOR-swizzled by row (CUTLASS-style)
        per_row = max(128 // w, 1)
        row, col = t // per_row, t % per_row
        if rng.random() < 0.5 and w >= 16:
            col = col ^ (row % per_row)
        row_stride = int(rng.choice([128, 144, 256, 1024]))
        addr = (int(rng.integers(0, 64)) * 128 + row * row_stride + col * w) % REGION
    elif kind == 5:  # permutation of a contiguous block
        addr = (w * int(rng.integers(0, slots)) + w * rng.permutation(32)) % REGION
    else:            # ld/st: 2-6 active lanes on a tiny address set (same address, same bank, other bank)
        lanes = rng.choice(32, int(rng.integers(2, 7)), replace=False)
        base = 128 * int(rng.integers(0, 64))
        choices = base + np.array([0, 0, 128, 256, w, 2 * w, 64, 64 + 128]) // w * w
        addr = np.full(32, base)
        addr[lanes] = rng.choice(choices, lanes.size)
        mask = int(sum(1 << int(l) for l in lanes))
        return mask, ((addr // w * w) % REGION).astype(np.int32)
    addr = (np.asarray(addr, np.int64) // w * w) % REGION
    mask = 0xFFFFFFFF
    if op < 14 and rng.random() < 0.25:  # ld/st: some threads inactive
        mask = int(rng.integers(1, 1 << 32)) & int(rng.integers(1, 1 << 32)) or 1
    return mask, addr.astype(np.int32)


def run_ncu(binary, recs, workdir):
    path = os.path.join(workdir, "patterns.bin")
    recs.astype("<i4").tofile(path)
    cmd = ["ncu", "--clock-control", "none", "--metrics", ",".join(METRICS), "--csv", binary, path]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = [r for r in csv.reader(io.StringIO("\n".join(l for l in out.splitlines() if l.startswith('"'))))]
    head, body = rows[0], rows[1:]
    ci, cm, cv = head.index("ID"), head.index("Metric Name"), head.index("Metric Value")
    res = np.full((len(recs), 2), -1, np.int64)
    for r in body:
        res[int(r[ci]), METRICS.index(r[cm])] = int(float(r[cv].replace(",", "")))
    return res, " ".join(cmd[:-2])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--per-op", type=int, default=60)
    ap.add_argument("--extra-wide-loads", type=int, default=1500,
                    help="more patterns for each 64/128-bit load, where the textbook model fails")
    ap.add_argument("--budget", type=float, default=420, help="seconds of ncu time to spend at most")
    ap.add_argument("--chunk", type=int, default=300)
    ap.add_argument("--targeted", action="store_true",
                    help="capture the confirmation set of scripts/capture/banks_targeted.py instead of random patterns")
    ap.add_argument("--out", required=True)
    ap.add_argument("--workdir", default="/tmp")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    recs = []
    for i in range(0 if args.targeted else args.per_op):
        for op in range(len(OPS)):
            mask, addr = pattern(rng, op)
            recs.append(np.concatenate([[op, mask - 2**32 if mask >= 2**31 else mask], addr]).astype(np.int64))
    if args.targeted:
        import banks_targeted
        recs = list(banks_targeted.targeted(rng)[0])
    for i in range(0 if args.targeted else args.extra_wide_loads):
        for op in (3, 4, 5, 6):
            mask, addr = pattern(rng, op)
            recs.append(np.concatenate([[op, mask - 2**32 if mask >= 2**31 else mask], addr]).astype(np.int64))
    recs = np.array(recs, np.int64)  # ops interleaved: a cut-off run still covers every op
    results, t0, done, ncu_cmd = [], time.time(), 0, ""
    while done < len(recs) and time.time() - t0 < args.budget:
        chunk = recs[done:done + args.chunk]
        res, ncu_cmd = run_ncu(args.binary, chunk, args.workdir)
        results.append(res)
        done += len(chunk)
        print(f"{done} patterns, {time.time() - t0:.0f} s", flush=True)
    res = np.concatenate(results)
    recs = recs[:done]
    meta = {"format": "tcemu-trace", "version": 1, "kind": "smem_wavefronts", "arch": "sm90", "ops": OPS,
            "metrics": METRICS, **capture_addresses.provenance(args, None),
            "build": "nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o /tmp/banks scripts/capture/capture_banks.cu",
            "ncu": ncu_cmd + " PATTERNS.bin",
            "ncu_version": subprocess.run(["ncu", "--version"], capture_output=True, text=True).stdout.strip()[-60:],
            "columns": {"op": "index into meta.ops", "mask": "uint32 active threads (ld/st; matrix ops use all 32)",
                        "addr": "(n, 32) int32 byte offsets from the 128-aligned dynamic shared base",
                        "ld_wavefronts": "ncu ..._op_ld.sum of the launch", "st_wavefronts": "ncu ..._op_st.sum"}}
    meta["smem_base"] = "dynamic shared memory, 128-byte aligned (bank = offset / 4 mod 32)"
    here = os.path.dirname(os.path.abspath(__file__))
    meta["sources"] = {f"scripts/capture/{f}": hashlib.sha256(open(os.path.join(here, f), "rb").read()).hexdigest()
                       for f in ("capture_banks.cu", "capture_banks.py", "capture_addresses.py",
                                 "banks_targeted.py")}
    np.savez_compressed(args.out, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                        op=recs[:, 0].astype(np.uint8), mask=recs[:, 1].astype(np.int64).astype(np.uint32),
                        addr=recs[:, 2:].astype(np.int32), ld_wavefronts=res[:, 0].astype(np.int32),
                        st_wavefronts=res[:, 1].astype(np.int32))
    print(f"wrote {args.out}: {done} patterns; missing metric values: {int((res < 0).sum())}")


if __name__ == "__main__":
    main()
