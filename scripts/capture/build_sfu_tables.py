"""Build tcemu/sfu/mufu_sm90.npz from the packs the two SFU captures brought back.

    python scripts/capture/build_sfu_tables.py --capture1 DIR1 --capture2 DIR2 [--out tcemu/sfu/mufu_sm90.npz]

DIR1 holds sfu_*.npz from `scripts/capture/capture_sfu.cu` (+ pack_sfu.py), DIR2 those of `scripts/capture/capture_sfu2.cu`.
Checks on the way (each stops the build if it fails): the high words of rcp/rsqrt.approx.ftz.f64 are the f32
tables' results cut to 20 mantissa bits; sin(-x) = -sin(x) and cos(-x) = cos(x) cell for cell; the sine cells
of the second half turn are the first half's negated and cos(q) = sin(q + quarter turn), so one half-turn
table H serves both; tanh's negative cells are the positive ones negated.
"""
import argparse
import datetime
import glob
import hashlib
import json
import lzma
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)
from tcemu.sfu import tables  # noqa: E402

EMPTY = 0xFFFFFFFF
TANH_K = {119: 6, 120: 6, 121: 6, 122: 5, 123: 5, 124: 4, 125: 4, 126: 4, 127: 3, 128: 2, 129: 3}


def load_packs(folder):
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "sfu_*.npz"))):
        with np.load(path, allow_pickle=False) as z:
            for k in z.files:
                u16 = k.endswith("_u16")
                d = np.frombuffer(lzma.decompress(z[k].tobytes()), np.int16 if u16 else np.int32)
                dt = np.uint16 if u16 else np.uint32
                out[k] = np.cumsum(d.view(dt).astype(np.uint64)).astype(dt)
    return out


def check(cond, what):
    if not cond:
        raise SystemExit(f"build_sfu_tables: check failed: {what}")
    print("ok:", what)


def sha_files(folder):
    return {os.path.basename(p): hashlib.sha256(open(p, "rb").read()).hexdigest()
            for p in sorted(glob.glob(os.path.join(folder, "sfu_*.npz")))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--capture1", required=True)
    ap.add_argument("--capture2", required=True)
    ap.add_argument("--out", default=os.path.join(ROOT, "tcemu", "sfu", "mufu_sm90.npz"))
    args = ap.parse_args()
    c1, c2 = load_packs(args.capture1), load_packs(args.capture2)
    t = {}
    t["rcp"] = c1["rcp_b0_127_u32"]
    t["rsqrt"] = np.concatenate([c1["rsqrt_b0_127_u32"], c1["rsqrt_b0_128_u32"]])
    t["sqrt"] = np.concatenate([c1["sqrt_b0_127_u32"], c1["sqrt_b0_128_u32"]])
    t["ex2"] = c1["ex2_grid_u32"][: 1 << 23]
    neg = c1["ex2_grid_u32"][1 << 23:]
    ones = t["ex2"][::-1][1:] - (1 << 23)   # 2^-1 * T[N - 1 - f], f >= 1
    check(neg[0] == 0x3F800000 and np.array_equal(neg[1:], ones),
          "ex2(-f 2^-23) = T[2^23 - 1 - f] / 2 (one's complement of the fixed-point input)")
    t["lg2_0"], t["lg2_m1"] = c1["lg2_b0_127_u32"], c1["lg2_b0_126_u32"]
    for name, f32 in (("rcp64h", t["rcp"]), ("rsq64h", t["rsqrt"])):
        hi = np.concatenate([c1[f"{name}_b1023_u32"], c1[f"{name}_b1024_u32"]])
        idx = np.arange(1 << 20) << 3
        idx = np.concatenate([idx, idx + (1 << 23)]) if name == "rsq64h" else np.concatenate([idx, idx])
        w = f32[idx].astype(np.int64)
        cut = (((w >> 23) - 127 + 1023) << 20) | ((w & 0x7FFFFF) >> 3)
        if name == "rcp64h":   # binade 1024 = binade 1023 halved
            cut[1 << 20:] -= 1 << 20
        check(np.array_equal(cut, hi.astype(np.int64)), f"{name}: the f32 table's result cut to 20 mantissa bits")
    s, c = c2["sin_cells_u32"].astype(np.int64), c2["cos_cells_u32"].astype(np.int64)
    half, quarter = 1 << 24, 1 << 23
    h = np.full(half, EMPTY, np.int64)
    # (cells, their q in the full turn): sine cells as they are; cosine cells moved a quarter turn on
    sources = [(s, np.arange(1 << 25)), (c, (np.arange(1 << 25) + quarter) % (1 << 25))]
    for vals, q in sources:
        keep = vals != EMPTY
        v = np.where(q >= half, vals ^ 0x80000000, vals)[keep]   # sin(q + half turn) = -sin(q)
        qq = (q % half)[keep]
        clash = (h[qq] != EMPTY) & (h[qq] != v)
        check(not clash.any(), f"sin/cos cells agree with one half-turn table ({keep.sum()} cells)")
        h[qq] = v
    print(f"half-turn table: {np.mean(h != EMPTY):.4f} of cells reached")
    pred = tables.predicted("sin", half, "sin").astype(np.int64)
    t["sin"] = np.where(h == EMPTY, pred, h).astype(np.uint32)
    for e, k in TANH_K.items():
        cells = c2[f"tanh_cells_{e}_u32"]
        n = 1 << (23 - k)
        pos, negc = cells[:n], cells[n:]
        check(not (pos == EMPTY).any() and np.array_equal(negc, pos ^ 0x80000000),
              f"tanh binade {e}: every cell filled, tanh(-x) = -tanh(x)")
        t[f"tanh_{e}_{k}"] = pos
    hf = c1["half_forms_u16"].reshape(4, 65536)
    for i, name in enumerate(("ex2_f16", "ex2_bf16", "tanh_f16", "tanh_bf16")):
        t[name] = hf[i]
    predictor = {"rcp": "rcp", "rsqrt": "rsqrt", "sqrt": "sqrt", "ex2": "ex2", "lg2_0": "lg2_0",
                 "lg2_m1": "lg2_m1", "sin": "sin"}
    members, specs = {}, {}
    for name, words in t.items():
        p = predictor.get(name, "tanh" if name.startswith("tanh_1") else None)
        blob, rdt, sha = tables.encode(words, p, name)
        members[name] = blob
        specs[name] = {"n": int(words.size), "dtype": str(words.dtype), "predictor": p, "residual": rdt,
                       "sha256": sha}
        print(f"{name:14s} {words.size:9d} words  {blob.size / 1e3:8.1f} kB  ({rdt})")
    meta = {
        "format": "tcemu-sfu-tables", "version": 1, "arch": "sm_90",
        "gpu": "NVIDIA H200", "driver": "580.159.04", "cuda": "13.0 (V13.0.88)", "date": "2026-11-26",
        "commands": [
            "nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o .bins/sfu_capture scripts/capture/capture_sfu.cu; "
            "./.bins/sfu_capture /tmp/raw; python3 scripts/capture/pack_sfu.py /tmp/raw $OUT",
            "nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o .bins/sfu_capture2 scripts/capture/capture_sfu2.cu; "
            "./.bins/sfu_capture2 /tmp/raw2; python3 scripts/capture/pack_sfu.py /tmp/raw2 $OUT",
            "python scripts/capture/build_sfu_tables.py --capture1 DIR1 --capture2 DIR2"],
        "sources": {os.path.basename(p): hashlib.sha256(open(p, "rb").read()).hexdigest()
                    for p in [os.path.join(HERE, n) for n in ("capture_sfu.cu", "capture_sfu2.cu", "pack_sfu.py",
                                                               "build_sfu_tables.py")]},
        "packs": {"capture1": sha_files(args.capture1), "capture2": sha_files(args.capture2)},
        "built": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "tables": specs,
    }
    members["meta"] = np.frombuffer(json.dumps(meta, indent=1).encode(), np.uint8)
    np.savez(args.out, **members)
    print(f"wrote {args.out}: {os.path.getsize(args.out) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
