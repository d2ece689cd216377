"""traces/atomics_sm90.npz (kind `program_outputs`): the float atomics of tests/fixtures/ptx/atomics_sm90.cu on
special values, as the GPU left each kernel's output buffer.

Device machine (binary built here and carried in .bins):
    nvcc -gencode=arch=compute_90a,code=sm_90a -o .bins/capture_atomics scripts/capture/capture_atomics.cu
    ./.bins/capture_atomics $OUT            (one <kernel>.bin per kernel)
Here:
    python scripts/capture/capture_atomics.py --bins DIR --gpu "NVIDIA H100 80GB HBM3" --driver 580.159.04 --date ...
"""
import argparse
import hashlib
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PTX = os.path.join(ROOT, "tests", "fixtures", "ptx", "atomics_sm90.ptx")
# (entry, grid, block, output words): the launches of scripts/capture/capture_atomics.cu, in its order
KERNELS = [("add_f32_global", 3, 192, 1152), ("add_f32_shared", 1, 576, 1152), ("red_f32_global", 3, 192, 1152),
           ("add_f16_global", 3, 192, 1152), ("add_bf16_global", 3, 192, 1152), ("add_f16x2_global", 3, 192, 1152),
           ("add_bf16x2_global", 3, 192, 1152), ("add_v4_f32_global", 3, 192, 4608),
           ("add_f32_contended", 1, 256, 2)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bins", required=True)
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--driver", required=True)
    ap.add_argument("--date", required=True)
    ap.add_argument("--out", default=os.path.join(ROOT, "traces", "atomics_sm90.npz"))
    args = ap.parse_args()
    bits, offsets, launches = [], [0], []
    for entry, grid, block, words in KERNELS:
        b = np.fromfile(os.path.join(args.bins, entry + ".bin"), np.uint32)
        assert b.size == words, entry
        bits.append(b)
        offsets.append(offsets[-1] + words)
        launches.append({"entry": entry, "grid": grid, "block": block, "words": words})
    ptx = open(PTX, "rb").read()
    src = {os.path.relpath(p, ROOT): hashlib.sha256(open(p, "rb").read()).hexdigest() for p in
           (os.path.join(HERE, "capture_atomics.cu"), os.path.join(HERE, "capture_atomics.py"), PTX[:-4] + ".cu")}
    meta = {"format": "tcemu-trace", "version": 1, "kind": "program_outputs", "arch": "sm90", "gpu": args.gpu,
            "driver": args.driver, "cuda": "13.0 (V13.0.88)", "date": args.date,
            "command": "./.bins/capture_atomics $OUT",
            "build": "nvcc -gencode=arch=compute_90a,code=sm_90a -o .bins/capture_atomics scripts/capture/capture_atomics.cu; "
                     "nvcc -gencode=arch=compute_90a,code=sm_90a -ptx atomics_sm90.cu -o atomics_sm90.ptx",
            "sources": src, "seed": "none (the kernels index a fixed table of special values)", "smem_base": 0, "ptx_sha256": hashlib.sha256(ptx).hexdigest(),
            "launches": launches,
            "columns": {"ptx": "the module's PTX text (UTF-8)", "bits": "each launch's output buffer, uint32 words",
                        "offsets": "launch i owns bits[offsets[i]:offsets[i+1]]"}}
    np.savez_compressed(args.out, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                        ptx=np.frombuffer(ptx, np.uint8), bits=np.concatenate(bits), offsets=np.array(offsets, np.int64))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
