"""Capture shared-memory images after real TMA tile loads on an H100/H200 (numpy only on the GPU host).

Exact command used for traces/tma_tile_sm90.npz:

    nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o /tmp/tma scripts/capture/capture_tma.cu
    python3 scripts/capture/capture_tma.py --binary /tmp/tma --seed 7 --cases 600 --out traces/tma_tile_sm90.npz

Cases: uint8/uint16/uint32 tensors of rank 1-5 with padded strides, swizzle none/32B/64B/128B, boxes
whose inner extent is 16..(swizzle span or 256) bytes, element (traversal) strides 1-3 on the outer
dimensions, boxes partly or wholly out of bounds (negative and past-the-end coordinates), and
destinations at every 128-byte offset (often not aligned to the 256/512/1024-byte swizzle repeat).
Stored per case: the bytes of the 48 KiB window that differ from the pre-fill (capture_tma.cu sbyte()).
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

WINDOW, GLOBAL_BYTES = 48 * 1024, 8 << 20
CASE_DTYPE = np.dtype([("dtype", "<i4"), ("rank", "<i4"), ("swizzle", "<i4"), ("dst", "<i4"), ("gaddr", "<i8"),
                       ("gdim", "<i8", 5), ("gstride", "<i8", 4), ("box", "<i4", 5), ("estride", "<i4", 5),
                       ("coord", "<i4", 5), ("pad", "<i4")])
SPAN = {0: 0, 1: 32, 2: 64, 3: 128}


def make_case(rng):
    dtype = int(rng.choice([0, 1, 1, 1, 1, 2, 2]))
    es = (1, 2, 4)[dtype]
    rank = int(rng.choice([1, 2, 2, 2, 3, 3, 4, 5]))
    swz = int(rng.integers(0, 4))
    inner = 16 * int(rng.integers(1, (SPAN[swz] or 256) // 16 + 1))
    inner = min(inner, 256 * es // 16 * 16)
    box = [inner // es] + [1] * 4
    est = [1] * 5
    for d in range(1, rank):
        box[d] = int(rng.integers(1, 9 if rank > 2 else 65))
        est[d] = int(rng.choice([1, 1, 1, 2, 3]))
        box[d] = max(box[d], 1)
    rows = int(np.prod([(box[d] + est[d] - 1) // est[d] for d in range(1, rank)])) if rank > 1 else 1
    footprint = rows * (SPAN[swz] or inner)
    if footprint > WINDOW // 2:
        return None
    gdim = [0] * 5
    gdim[0] = box[0] * int(rng.integers(1, 4)) + int(rng.integers(0, 9))
    gstride = [0] * 4
    if rank > 1:
        gstride[0] = -(-gdim[0] * es // 16) * 16 + 16 * int(rng.integers(0, 3))
    for d in range(1, rank):
        gdim[d] = int(rng.integers(1, 2 * box[d] + 4))
        if d < rank - 1:
            gstride[d] = gstride[d - 1] * gdim[d] + 16 * int(rng.integers(0, 3))
    for d in range(rank, 5):
        gdim[d] = 1
    total = gstride[rank - 2] * gdim[rank - 1] if rank > 1 else gdim[0] * es
    gaddr = 256 * int(rng.integers(0, (GLOBAL_BYTES - total) // 256))
    coord = [0] * 5
    q = 16 // es  # inner coordinate: a multiple of 16 bytes
    coord[0] = q * int(rng.integers(-(box[0] // q) - 1, gdim[0] // q + 2))
    for d in range(1, rank):
        coord[d] = int(rng.integers(-box[d], gdim[d] + 1))
    dst = 128 * int(rng.integers(0, (WINDOW - footprint) // 128 + 1))
    return (dtype, rank, swz, dst, gaddr, gdim, gstride[:4], box, est, coord, 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cases", type=int, default=600)
    ap.add_argument("--out", required=True)
    ap.add_argument("--workdir", default="/tmp")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = []
    while len(rows) < args.cases:
        c = make_case(rng)
        if c is not None:
            rows.append(c)
    cases = np.array(rows, CASE_DTYPE)
    cpath, opath = os.path.join(args.workdir, "tcases.bin"), os.path.join(args.workdir, "tout.bin")
    cases.tofile(cpath)
    subprocess.run(["timeout", "300", args.binary, cpath, opath], check=True)
    images = np.fromfile(opath, np.uint8).reshape(len(cases), WINDOW)
    j = np.arange(WINDOW, dtype=np.uint32)
    prefill = (0xA7 ^ (j * 0x35) ^ (j >> 7)).astype(np.uint8)
    refused = np.all(images == 0xFF, axis=1)
    timed_out = np.all(images == 0xEE, axis=1)  # the mbarrier never completed (wrong byte count)
    pos, val, off = [], [], [0]
    for img in images:
        changed = np.flatnonzero(img != prefill).astype(np.uint16)
        pos.append(changed)
        val.append(img[changed])
        off.append(off[-1] + changed.size)
    meta = {"format": "tcemu-trace", "version": 1, "kind": "tma_tile_loads", "arch": "sm90",
            **capture_addresses.provenance(args, None),
            "build": "nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o /tmp/tma scripts/capture/capture_tma.cu",
            "window_bytes": WINDOW, "global_bytes": GLOBAL_BYTES,
            "columns": {"case": "structured record, capture_tma.py CASE_DTYPE (dtype 0 u8 1 u16 2 u32; swizzle "
                                "0 none 1 32B 2 64B 3 128B; dst: shared offset from a 1024-aligned base)",
                        "refused": "cuTensorMapEncodeTiled refused the case (no load ran)",
                        "timed_out": "the mbarrier did not complete within the bounded wait (expect 0)",
                        "offsets": "case i's changed bytes are positions/values[offsets[i]:offsets[i+1]]",
                        "positions": "uint16 byte offsets in the window that differ from the pre-fill",
                        "values": "uint8 byte values there"}}
    meta["smem_base"] = "1024-aligned dynamic shared memory; dst is relative to it"
    here = os.path.dirname(os.path.abspath(__file__))
    meta["sources"] = {f"scripts/capture/{f}": hashlib.sha256(open(os.path.join(here, f), "rb").read()).hexdigest()
                       for f in ("capture_tma.cu", "capture_tma.py", "capture_addresses.py")}
    np.savez_compressed(args.out, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                        case=cases.view(np.uint8).reshape(len(cases), CASE_DTYPE.itemsize),
                        refused=refused, timed_out=timed_out, offsets=np.array(off, np.int64), positions=np.concatenate(pos),
                        values=np.concatenate(val))
    print(f"wrote {args.out}: {len(cases)} cases, {int(refused.sum())} refused, {int(timed_out.sum())} timed out, "
          f"{off[-1]} changed bytes")


if __name__ == "__main__":
    main()
