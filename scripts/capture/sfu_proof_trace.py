"""Write traces/sfu_proof_sm90.npz (kind `sfu_proof`) from what scripts/capture/prove_sfu.py brought back.

    python scripts/capture/sfu_proof_trace.py --proof DIR [--out traces/sfu_proof_sm90.npz]

DIR holds sfu_proof.json (the exhaustive counts and the provenance) and sfu_sample.bin (records of uint64 form,
a, b, hardware output). The trace keeps the sample as columns and the proof as meta.proof.
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from prove_sfu import FORMS  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proof", required=True)
    ap.add_argument("--also", action="append", default=[],
                    help="another run's folder: its GPU, date and counts go into meta.proof.other_runs (its sample "
                         "must equal this one's bit for bit)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.dirname(HERE)), "traces", "sfu_proof_sm90.npz"))
    args = ap.parse_args()
    proof = json.load(open(os.path.join(args.proof, "sfu_proof.json")))
    rec = np.fromfile(os.path.join(args.proof, "sfu_sample.bin"), np.uint64).reshape(-1, 4)
    srcs = ("prove_sfu.cu", "prove_sfu.py", "sfu_proof_trace.py", "capture_sfu.cu", "capture_sfu2.cu",
            "pack_sfu.py", "build_sfu_tables.py")
    meta = {"format": "tcemu-trace", "version": 1, "kind": "sfu_proof", "arch": "sm90",
            "gpu": proof["gpu"], "driver": proof["driver"], "cuda": proof["cuda"], "date": proof["date"],
            "command": proof["command"],
            "build": "nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o .bins/sfu_prove scripts/capture/prove_sfu.cu",
            "sources": {"scripts/capture/" + s: hashlib.sha256(open(os.path.join(HERE, s), "rb").read()).hexdigest() for s in srcs},
            "seed": proof["seed"], "smem_base": 0, "forms": FORMS,
            "proof": {k: proof[k] for k in ("gpu_ms", "forms", "control", "table_meta_sha256")},
            "columns": {"form": "index into meta.forms", "a": "first operand's raw bits",
                        "b": "second operand's raw bits (div; 0 otherwise)", "out": "the hardware's result bits"}}
    for folder in args.also:
        other = json.load(open(os.path.join(folder, "sfu_proof.json")))
        same = np.array_equal(np.fromfile(os.path.join(folder, "sfu_sample.bin"), np.uint64).reshape(-1, 4), rec)
        if not same:
            raise SystemExit(f"{folder}: its sample differs from this run's")
        meta["proof"].setdefault("other_runs", []).append(
            {k: other[k] for k in ("gpu", "driver", "cuda", "date", "command", "control")} |
            {"inputs": sum(r["inputs"] for r in other["forms"]), "mismatches": sum(r["mismatches"] for r in other["forms"]),
             "sample_identical": True})
    cols = {"form": rec[:, 0].astype(np.uint8), "a": rec[:, 1], "b": rec[:, 2].astype(np.uint32), "out": rec[:, 3]}
    np.savez_compressed(args.out, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **cols)
    print(f"wrote {args.out}: {rec.shape[0]} sample cases, {os.path.getsize(args.out) / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
