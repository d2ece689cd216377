"""Capture mma.sync.aligned numerics on an sm_90 GPU and write them as a tcemu trace (numpy only on the GPU host).

Exact commands used for traces/mma_sync_sm90.npz:

    python3 scripts/capture/gen_mma_sync_wrappers.py > scripts/capture/mma_sync_wrappers.inc
    nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o mma_sync scripts/capture/capture_mma_sync.cu
    python3 scripts/capture/capture_mma_sync.py --binary ./mma_sync --seed 2025 --out mma_sync_sm90.npz

Inputs are not stored: each case's seed and modes regenerate them (tcemu/traces/mma_seeds.py mirrors the CUDA
generator). Stored per case: the form (index into meta.forms), the seed, the operand modes (A | B << 8 | C << 16),
and every lane's raw D registers (32-bit words; an f64 register is two words, low first).
"""
import argparse
import datetime
import hashlib
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_mma_sync_wrappers as gen  # noqa: E402

CASE_DTYPE = np.dtype([("seed", "<u8"), ("form", "<i4"), ("modes", "<i4")])
WORDS = 8
# operand modes (mma_seeds.py): 0 narrow, 1 wide, 2 mixed scales, 3 subnormal, 4 specials, 5 raw bits,
# 6 +-1/+-2 (exact cancellation), 7 signed zeros, 8 near overflow; integers: 0 small, 1 any, 2 near the s32 limits,
# 3 near the s8 limits
FLOAT_PLAN = [((0, 0, 0), 24), ((0, 0, 7), 8), ((1, 1, 1), 16), ((2, 2, 2), 24), ((2, 2, 0), 8), ((3, 3, 3), 12),
              ((3, 0, 3), 8), ((0, 3, 7), 8), ((4, 4, 4), 16), ((5, 5, 5), 12), ((6, 6, 6), 16), ((6, 6, 7), 16),
              ((7, 7, 7), 4), ((8, 8, 8), 8), ((0, 0, 8), 8), ((2, 2, 7), 8)]
INT_PLAN = [((0, 0, 0), 8), ((1, 1, 1), 32), ((3, 3, 2), 32), ((1, 1, 2), 16), ((3, 3, 1), 16)]


def plan(seed):
    rng = np.random.default_rng(seed)
    rows = []
    for i, form in enumerate(gen.FORMS):
        integer = gen.parse(form)[3] == "s32"
        for (ma, mb, mc), count in INT_PLAN if integer else FLOAT_PLAN:
            rows += [(int(rng.integers(0, 2 ** 63)), i, ma | mb << 8 | mc << 16) for _ in range(count)]
    return np.array(rows, CASE_DTYPE)


def provenance(args):
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60).stdout.strip()
        except Exception as e:  # provenance is best effort; say what failed
            return f"unavailable ({e})"
    return {"gpu": sh("nvidia-smi --query-gpu=name --format=csv,noheader | head -1"),
            "driver": sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1"),
            "cuda": sh("nvcc --version | tail -2 | head -1"),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": "python3 " + " ".join(sys.argv), "seed": args.seed}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--seed", type=int, default=2025)
    ap.add_argument("--out", required=True)
    ap.add_argument("--workdir", default="/tmp")
    args = ap.parse_args()
    cases = plan(args.seed)
    cpath, opath = os.path.join(args.workdir, "mma_cases.bin"), os.path.join(args.workdir, "mma_out.bin")
    cases.tofile(cpath)
    print(f"{len(cases)} cases, {len(gen.FORMS)} forms", flush=True)
    subprocess.run([args.binary, cpath, opath], check=True)
    raw = np.fromfile(opath, np.uint32).reshape(len(cases), 32, WORDS)
    nd = np.array([gen.layout(gen.FORMS[f])[3] for f in cases["form"]], np.int64)
    regs = [raw[c, :, :nd[c]].ravel() for c in range(len(cases))]
    unwritten = int(sum(np.count_nonzero(r == 0xFFFFFFFF) for r in regs))
    here = os.path.dirname(os.path.abspath(__file__))
    meta = {"format": "tcemu-trace", "version": 1, "kind": "mma_sync_numerics", "arch": "sm90",
            "forms": ["mma.sync.aligned." + f for f in gen.FORMS],
            **provenance(args),
            "build": "nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o mma_sync "
                     "scripts/capture/capture_mma_sync.cu",
            "columns": {
                "seed": "uint64 case seed (tcemu/traces/mma_seeds.py regenerates every lane's A, B, C registers)",
                "form": "index into meta.forms (the PTX opcode issued)",
                "modes": "operand modes: A | B << 8 | C << 16 (mma_seeds.py)",
                "offsets": "regs[offsets[i]:offsets[i+1]] is case i's (32, words) D registers, row-major by lane",
                "regs": "uint32 raw D words (an f64 register: low word first)"}}
    meta["smem_base"] = None
    meta["sources"] = {f"scripts/capture/{f}": hashlib.sha256(open(os.path.join(here, f), "rb").read()).hexdigest()
                       for f in ("capture_mma_sync.cu", "capture_mma_sync.py", "gen_mma_sync_wrappers.py",
                                 "mma_sync_wrappers.inc")}
    np.savez_compressed(args.out, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                        seed=cases["seed"], form=cases["form"].astype(np.int16), modes=cases["modes"].astype(np.int32),
                        offsets=np.concatenate([[0], np.cumsum([r.size for r in regs])]).astype(np.int64),
                        regs=np.concatenate(regs))
    print(f"wrote {args.out}: {len(cases)} cases, {sum(r.size for r in regs)} words, {unwritten} words left at the "
          f"poison value")


if __name__ == "__main__":
    main()
