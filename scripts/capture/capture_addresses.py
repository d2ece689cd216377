"""Capture wgmma operand address maps on an H100/H200 and write them as a tcemu trace.

Runs on the GPU machine with numpy alone (no tcemu import), so the capture does not depend on
the code it judges. Exact command used for traces/wgmma_addresses_sm90.npz:

    nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o /tmp/probe scripts/capture/capture_addresses.cu
    python3 scripts/capture/capture_addresses.py --probe /tmp/probe --seed 2026 --out traces/wgmma_addresses_sm90.npz

Cases: random descriptors over every swizzle mode, both majors (MN-major for f16/bf16 only),
element sizes 4/2/1 (tf32, f16, bf16, u8), base offsets 0-7, start addresses cycling through every
16-byte position modulo 1024, random LBO/SBO, operand A (M = 64) and B (N up to 256), plus a
targeted grid of base offset x pattern start. See scripts/capture/capture_addresses.cu for the method.
"""
import argparse
import datetime
import hashlib
import json
import os
import subprocess
import sys

import numpy as np

KINDS = {0: ("tf32", 4, 8), 1: ("f16", 2, 16), 2: ("bf16", 2, 16), 3: ("u8", 1, 32)}  # name, bytes, K
N_SETS = {0: (8, 64, 256), 1: (8, 16, 64, 256), 2: (8, 16, 64, 256), 3: (8, 32, 64, 256)}
SWIZZLE_BYTES = {0: 0, 1: 128, 2: 64, 3: 32}  # sm90 layout-type code -> swizzle width
SMEM_BYTES, SEL_BYTES = 227 * 1024, 2048
CASE_DTYPE = np.dtype([("desc_a", "<u8"), ("desc_b", "<u8"), ("kind", "<i4"), ("n", "<i4"),
                       ("trans_a", "<i4"), ("trans_b", "<i4")])
DTYPE_NAMES = ["tf32", "f16", "bf16", "u8"]
TRACE_FORMAT = "tcemu-trace"


def encode_desc(start, lbo, sbo, base_offset, layout):
    return ((start & 0x3FFFF) >> 4) | ((lbo & 0x3FFFF) >> 4) << 16 | ((sbo & 0x3FFFF) >> 4) << 32 \
        | base_offset << 49 | layout << 62


def max_offset(rows, kind, k_major, width, lbo, sbo):
    """Largest unswizzled byte offset the operand reaches (a bound; the swizzle stays in 128-byte lines)."""
    _, eb, K = KINDS[kind]
    T = 16 // eb
    if k_major and not width:
        return (rows // 8 - 1) * sbo + 7 * 16 + (K // T - 1) * lbo + 15
    if k_major:
        return (rows // 8 - 1) * sbo + 7 * width + 31
    if not width:
        return (rows // T - 1) * sbo + 7 * 16 + (K // 8 - 1) * lbo + 15
    per = T * width // 16
    return (-(-rows // per) - 1) * lbo + 7 * width + (K // 8 - 1) * sbo + min(rows, per) * eb - 1


def selector_desc(base):
    return encode_desc(base + SMEM_BYTES - SEL_BYTES, 128, 256, 0, 0)


def make_case(rng, base, kind, probe_b, n, major_mn, layout, position, base_offset, style):
    """One case whose predicted footprint lies in [base, base + SMEM - SEL); None if it cannot be placed."""
    _, eb, K = KINDS[kind]
    width = SWIZZLE_BYTES[layout]
    rows = n if probe_b else 64
    lo, hi = base, base + SMEM_BYTES - SEL_BYTES
    for _ in range(200):
        if style == "canonical":  # dense CuTe-like tiles
            w = width or 16
            if not major_mn:
                sbo, lbo = (8 * w, 128) if width else (256, 128)
            elif width:
                sbo = 8 * width
                lbo = sbo * (K // 8)
            else:
                lbo, sbo = 128, 128 * (K // 8)
        else:
            lbo, sbo = (int(x) * 16 for x in rng.integers(0, 8192 // 16 if rows <= 64 else 1024 // 16, 2))
        junk_lbo = 0
        if not major_mn and width and style != "canonical":
            junk_lbo = 2048  # the model ignores LBO here; keep a margin in case the hardware does not
        span = max_offset(rows, kind, not major_mn, width, lbo, sbo) + 1 + junk_lbo
        first = -(-(lo - position) // 1024)
        last = (hi - span - position - 127) // 1024
        if last >= first:
            start = position + 1024 * int(rng.integers(first, last + 1))
            desc = encode_desc(start, lbo, sbo, base_offset, layout)
            sel = selector_desc(base)
            ta, tb = (0, int(major_mn)) if probe_b else (int(major_mn), 0)
            return (sel, desc, kind, n, ta, tb) if probe_b else (desc, sel, kind, n, ta, tb)
    return None


def generate(seed, base, per_group):
    rng = np.random.default_rng(seed)
    cases = []
    for kind in KINDS:
        for major_mn in (0, 1) if kind in (1, 2) else (0,):
            for layout in (0, 1, 2, 3):
                configs = [(False, KINDS[kind][2])] + [(True, n) for n in N_SETS[kind]]
                for probe_b, n in configs:
                    positions = rng.permutation(64)
                    for i in range(per_group):
                        bo = 0 if rng.random() < 0.3 else int(rng.integers(0, 8))
                        style = "canonical" if i % 4 == 0 else "random"
                        c = make_case(rng, base, kind, probe_b, n, major_mn, layout,
                                      16 * int(positions[i % 64]), bo, style)
                        if c is not None:
                            cases.append(c)
    # Targeted grid: every base offset x every 128-byte pattern start, bf16 both majors, A and B.
    for layout in (1, 2, 3):
        for major_mn in (0, 1):
            for bo in range(8):
                for line in range(8):
                    for probe_b in (False, True):
                        c = make_case(rng, base, 2, probe_b, 64 if probe_b else 16, major_mn, layout,
                                      128 * line, bo, "canonical")
                        cases.append(c)
    arr = np.zeros(len(cases), CASE_DTYPE)
    for i, c in enumerate(cases):
        arr[i] = c
    return arr


def fragment_rc(n):
    """(row, col) of f32/s32 accumulator register i of thread t (PTX Figure 149), arrays (128, n/2)."""
    t = np.arange(128)[:, None]
    i = np.arange(n // 2)[None, :]
    row = 16 * (t // 32) + (t % 32) // 4 + 8 * ((i // 2) % 2)
    col = 8 * (i // 4) + (t % 4) * 2 + (i % 2)
    return row, col


def decode(cases, raw, base):
    """Per-case address maps (rows, K) in bytes, and the count of D entries that disagree with their replica."""
    maps, replica_mismatch = [], []
    sel = selector_desc(base)
    for idx, c in enumerate(cases):
        name, eb, K = KINDS[int(c["kind"])]
        n = int(c["n"])
        row, col = fragment_rc(n)
        d = np.empty((64, n), np.int64)
        d[row, col] = raw[idx, :, : n // 2]
        probe_b = int(c["desc_a"]) == sel
        if probe_b:
            m = d[:K, :].T * eb  # (N, K)
            replica_mismatch.append(int(np.count_nonzero(d != np.tile(d[:K], (64 // K, 1)))))
        else:
            m = d[:, :K] * eb
            replica_mismatch.append(0)
        maps.append(m)
    return maps, np.array(replica_mismatch, np.int32)


def delta_code(flat):
    out = flat.astype(np.int64).copy()
    out[1:] -= flat[:-1]
    return out.astype(np.int32)


def provenance(args, base):
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60).stdout.strip()
        except Exception as e:  # provenance is best effort; say what failed
            return f"unavailable ({e})"
    here = os.path.dirname(os.path.abspath(__file__))
    sources = {}
    for f in ("capture_addresses.cu", "wgmma_probe_wrappers.inc", "gen_probe_wrappers.py", "capture_addresses.py"):
        with open(os.path.join(here, f), "rb") as fh:
            sources["scripts/capture/" + f] = hashlib.sha256(fh.read()).hexdigest()
    return {
        "gpu": sh("nvidia-smi --query-gpu=name --format=csv,noheader | head -1"),
        "driver": sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1"),
        "cuda": sh("nvcc --version | tail -2 | head -1"),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "python3 " + " ".join(sys.argv),
        "build": "nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o /tmp/probe scripts/capture/capture_addresses.cu",
        "sources": sources,
        "smem_base": base,
        "seed": args.seed,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--probe", required=True, help="the built capture_addresses.cu binary")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--per-group", type=int, default=32)
    ap.add_argument("--out", required=True)
    ap.add_argument("--workdir", default="/tmp")
    args = ap.parse_args()

    base, smem = map(int, subprocess.run([args.probe, "--base"], check=True, capture_output=True,
                                         text=True).stdout.split())
    assert smem == SMEM_BYTES
    cases = generate(args.seed, base, args.per_group)
    cases_path, out_path = os.path.join(args.workdir, "cases.bin"), os.path.join(args.workdir, "out.bin")
    cases.tofile(cases_path)
    print(f"smem base {base:#x}; {len(cases)} cases", flush=True)
    subprocess.run([args.probe, cases_path, out_path], check=True)
    raw = np.fromfile(out_path, np.int32).reshape(len(cases), 128, 128)
    maps, replica_mismatch = decode(cases, raw, base)
    sel = selector_desc(base)
    probe_b = cases["desc_a"] == np.uint64(sel)
    flat = [delta_code(m.ravel()) for m in maps]
    offsets = np.concatenate([[0], np.cumsum([f.size for f in flat])]).astype(np.int64)
    meta = {"format": TRACE_FORMAT, "version": 1, "kind": "wgmma_operand_addresses", "arch": "sm90",
            "dtypes": DTYPE_NAMES, **provenance(args, base),
            "columns": {
                "desc": "uint64 matrix descriptor of the probed operand (absolute addresses)",
                "operand": "0 = A (rows = M = 64), 1 = B (rows = N)",
                "dtype": "index into meta.dtypes",
                "major": "0 = K-major, 1 = MN-major",
                "rows": "M or N", "k": "K of the instruction", "n": "instruction N",
                "replica_mismatches": "D entries of a B probe that disagreed with their replica row (expect 0)",
                "offsets": "case i's addresses are addresses[offsets[i]:offsets[i+1]]",
                "addresses": "int32, row-major (rows, k) byte addresses per case, delta-coded: "
                             "first absolute, then differences (decode with a cumulative sum)"}}
    np.savez_compressed(
        args.out, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
        desc=np.where(probe_b, cases["desc_b"], cases["desc_a"]).astype(np.uint64),
        operand=probe_b.astype(np.uint8), dtype=cases["kind"].astype(np.uint8),
        major=np.where(probe_b, cases["trans_b"], cases["trans_a"]).astype(np.uint8),
        rows=np.array([m.shape[0] for m in maps], np.int32), k=np.array([m.shape[1] for m in maps], np.int32),
        n=cases["n"].astype(np.int32), replica_mismatches=replica_mismatch,
        offsets=offsets, addresses=np.concatenate(flat))
    bad = int(np.count_nonzero(replica_mismatch))
    print(f"wrote {args.out}: {len(cases)} cases, {offsets[-1]} addresses, {bad} cases with replica mismatches")


if __name__ == "__main__":
    main()
