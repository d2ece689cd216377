"""Capture wgmma numerics on an H100/H200 and write them as a tcemu trace (numpy only on the GPU host).

Exact command used for traces/wgmma_numerics_sm90.npz:

    python3 scripts/capture/gen_numerics_wrappers.py > scripts/capture/wgmma_numerics_wrappers.inc
    nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o /tmp/numerics scripts/capture/capture_numerics.cu
    python3 scripts/capture/capture_numerics.py --binary /tmp/numerics --seed 2611 --out traces/wgmma_numerics_sm90.npz

Inputs are not stored: each case's seed regenerates them (tcemu/traces/seeds.py mirrors the CUDA generator).
Stored per case: the instantiation, steps, scale-d flag, a 4-byte blake2b digest of every thread's raw
D registers (little-endian words), and for one case per instantiation the full raw register dump.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import capture_addresses  # noqa: E402  (provenance helper)
import gen_numerics_wrappers as gen  # noqa: E402

CASE_DTYPE = np.dtype([("seed", "<u8"), ("inst", "<i4"), ("steps", "<i4"), ("scale_d", "<i4"), ("pad", "<i4")])
REGS = 128


def plan(seed):
    """The case table: how many cases of each instantiation, with steps and scale-d."""
    rng = np.random.default_rng(seed)
    rows = []
    for inst_id, (kind, n, ta, tb, sa, sb, rega) in enumerate(gen.instantiations()):
        plain = n == 256 and not rega and (ta, tb, sa, sb) == (0, 0, 1, 1)
        if plain:
            spec = [(1, 64), (4, 12)]
        elif rega:
            spec = [(1, 8), (2, 8)]
        else:
            spec = [(1, 8)]
        for steps, count in spec:
            for _ in range(count):
                rows.append((int(rng.integers(0, 2**63)), inst_id, steps, int(rng.random() >= 1 / 16), 0))
    return np.array(rows, CASE_DTYPE)


def digests(raw, nregs):
    """(128,) uint32: blake2b-4 of each thread's first nregs raw D registers."""
    return np.array([int.from_bytes(hashlib.blake2b(raw[t, :nregs].astype("<u4").tobytes(), digest_size=4)
                                    .digest(), "little") for t in range(128)], np.uint32)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--seed", type=int, default=2611)
    ap.add_argument("--out", required=True)
    ap.add_argument("--workdir", default="/tmp")
    args = ap.parse_args()
    cases = plan(args.seed)
    cpath, opath = os.path.join(args.workdir, "ncases.bin"), os.path.join(args.workdir, "nout.bin")
    cases.tofile(cpath)
    print(f"{len(cases)} cases, {len(gen.instantiations())} instantiations", flush=True)
    subprocess.run([args.binary, cpath, opath], check=True)
    raw = np.fromfile(opath, np.uint32).reshape(len(cases), 128, REGS)
    insts = gen.instantiations()
    nregs = np.array([gen.nregs(insts[i][0], insts[i][1]) for i in cases["inst"]], np.int32)
    dig = np.stack([digests(raw[c], nregs[c]) for c in range(len(cases))])
    diag = [int(np.flatnonzero(cases["inst"] == i)[0]) for i in range(len(insts))]
    dumps = [raw[c, :, :nregs[c]].ravel() for c in diag]
    unwritten = int(sum(np.count_nonzero(raw[c, :, :nregs[c]] == 0xFFFFFFFF) for c in range(len(cases))))
    meta = {"format": "tcemu-trace", "version": 1, "kind": "wgmma_numerics", "arch": "sm90",
            "kinds": [list(k) for k in gen.KINDS], "instantiations": [list(i) for i in insts],
            **capture_addresses.provenance(args, None),
            "build": "nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o /tmp/numerics "
                     "scripts/capture/capture_numerics.cu",
            "columns": {
                "seed": "uint64 case seed (tcemu/traces/seeds.py regenerates A, B, C and register-A from it)",
                "inst": "index into meta.instantiations: [kind, N, trans_a, trans_b, scale_a, scale_b, a_in_registers]",
                "steps": "wgmma issued back to back on the same accumulators, A and B regenerated per step",
                "scale_d": "scale-d of step 0 (later steps accumulate)",
                "digest": "(cases, 128) uint32: blake2b(digest_size=4) of each thread's raw D registers, "
                          "little-endian words, as an int from little-endian bytes",
                "diag_case": "cases whose full raw D registers are stored",
                "diag_offsets": "diag_regs[diag_offsets[i]:diag_offsets[i+1]] is (128, nregs) row-major",
                "diag_regs": "uint32 raw D registers"}}
    meta["smem_base"] = "descriptors computed in the kernel from its own shared base"
    meta["sources"] = ({f"scripts/capture/{f}": hashlib.sha256(open(os.path.join(os.path.dirname(__file__), f), "rb")
                                                           .read()).hexdigest()
                            for f in ("capture_numerics.cu", "capture_numerics.py", "gen_numerics_wrappers.py",
                                      "wgmma_numerics_wrappers.inc", "capture_addresses.py")})
    np.savez_compressed(args.out, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                        seed=cases["seed"], inst=cases["inst"].astype(np.int16), steps=cases["steps"].astype(np.int8),
                        scale_d=cases["scale_d"].astype(np.int8), digest=dig,
                        diag_case=np.array(diag, np.int32),
                        diag_offsets=np.concatenate([[0], np.cumsum([d.size for d in dumps])]).astype(np.int64),
                        diag_regs=np.concatenate(dumps))
    print(f"wrote {args.out}: {len(cases)} cases, {int(nregs.sum()) * 128} registers digested, "
          f"{len(diag)} diagnostic dumps, {unwritten} registers left at the poison value")


if __name__ == "__main__":
    main()
