"""Drive the exhaustive GPU proof of tcemu's SFU models (scripts/capture/prove_sfu.cu) on the device machine.

    python3 scripts/capture/prove_sfu.py --bin .bins/sfu_prove --out $OUT [--seed 2026]

Decodes tcemu/sfu/mufu_sm90.npz with tcemu/sfu itself (numpy and the standard library only: the folder is
loaded on its own, so the device machine needs no other tcemu dependency), writes the raw tables for the
CUDA port, builds the CI sample (special values of every class and seeded random inputs per form), runs the
proof and writes <out>/sfu_proof.json (counts per form, GPU, driver, date, command) and <out>/sfu_sample.bin
(records of uint64 form, a, b, hardware output). FORMS must list the forms in prove_sfu.cu's enum order.
"""
import argparse
import datetime
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

FORMS = ["rcp.approx.f32", "rcp.approx.ftz.f32", "sqrt.approx.f32", "sqrt.approx.ftz.f32", "rsqrt.approx.f32",
         "rsqrt.approx.ftz.f32", "ex2.approx.f32", "ex2.approx.ftz.f32", "lg2.approx.f32", "lg2.approx.ftz.f32",
         "sin.approx.f32", "sin.approx.ftz.f32", "cos.approx.f32", "cos.approx.ftz.f32", "tanh.approx.f32",
         "ex2.approx.f16x2", "ex2.approx.ftz.bf16x2", "tanh.approx.f16x2", "tanh.approx.bf16x2", "ex2.approx.f16",
         "ex2.approx.ftz.bf16", "tanh.approx.f16", "tanh.approx.bf16", "div.approx.f32", "div.approx.ftz.f32",
         "div.full.f32", "div.full.ftz.f32", "rcp.approx.ftz.f64", "rsqrt.approx.ftz.f64", "rsqrt.approx.f64"]


def load_sfu():
    spec = importlib.util.spec_from_file_location("sfu", os.path.join(ROOT, "tcemu", "sfu", "__init__.py"),
                                                  submodule_search_locations=[os.path.join(ROOT, "tcemu", "sfu")])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sfu"] = mod
    spec.loader.exec_module(mod)
    import sfu.tables  # noqa: F401  (the package registered above)
    return sys.modules["sfu.tables"]


def special_f32():
    """Every class: zeros, subnormals, normals at the edges, powers of two, integers, inf, NaNs."""
    v = [0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00400000, 0x00800000, 0x80800000, 0x7F7FFFFF,
         0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF, 0xFFFFFFFF,
         0x7E800000, 0x7E800001, 0x7E7FFFFF, 0x7F000000, 0x3F800001, 0x3F7FFFFF, 0x3FFFFFFF, 0x42FC0000, 0xC2FC0000,
         0xC2FC0001, 0xC2FBFFFF, 0xC2FE0000, 0xC3000000, 0xC3000001, 0x43000000, 0x42FFFFFF, 0xC3160000]
    for k in range(-149, 128):
        for s in (0, 0x80000000):
            v.append(s | np.float32(2.0 ** k).view(np.uint32))
    for i in range(-160, 161):
        v.append(int(np.float32(i).view(np.uint32)))
        v.append(int(np.float32(i + 0.5).view(np.uint32)))
    for x in (np.pi, -np.pi, np.pi / 2, 2 * np.pi, 1e-6, -1e-6, 1e6, 1e20, -1e20, 1e38, 8.0, -8.0, 7.999, 2.0 ** -8,
              0.00390625 * 0.999, 100.0, 1e30 * 3.3):
        v.append(int(np.float32(x).view(np.uint32)))
    return np.unique(np.array(v, np.uint64))


def special_f64():
    v = [0, 1 << 63, 1, (1 << 63) | 1, 0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF,
         0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
         0x7FF4000000000000, 0x3FF0000000000000, 0xBFF0000000000000, 0x3FF0000000000001, 0x4000000000000000]
    for k in range(-1074, 1024, 7):
        v.append(int(np.float64(2.0 ** k).view(np.uint64)))
    return np.unique(np.array(v, np.uint64))


def build_sample(seed, n_random=2048):
    rng = np.random.default_rng(seed)
    recs = []
    f32s, f64s = special_f32(), special_f64()
    for fi, name in enumerate(FORMS):
        if name.startswith("div"):
            # every class of divisor (zeros, subnormals, 2^-126, |b| > 2^126, inf, NaNs) against every class
            # of dividend, plus random specials
            key = np.array([0, 0x80000000, 1, 0x807FFFFF, 0x00800000, 0x3F800000, 0xBFC00000, 0x7E800000,
                            0x7E800001, 0xFEFFFFFF, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFBFFFFF],
                           np.uint64)
            sp = np.unique(np.concatenate([key, f32s[rng.choice(f32s.size, 81, replace=False)]]))
            a = np.repeat(sp, sp.size)
            b = np.tile(sp, sp.size)
            a = np.concatenate([a, rng.integers(0, 1 << 32, n_random, dtype=np.uint64)])
            b = np.concatenate([b, rng.integers(0, 1 << 32, n_random, dtype=np.uint64)])
        elif name.endswith("f64"):
            a = np.concatenate([f64s, rng.integers(0, 1 << 63, n_random, dtype=np.uint64) * 2 + 1])
            b = np.zeros_like(a)
        elif name.endswith(("f16", "bf16")):
            a = np.arange(1 << 16, dtype=np.uint64)[rng.choice(1 << 16, 4096, replace=False)]
            b = np.zeros_like(a)
        else:
            a = np.concatenate([f32s, rng.integers(0, 1 << 32, n_random, dtype=np.uint64)])
            b = np.zeros_like(a)
        recs.append(np.stack([np.full(a.size, fi, np.uint64), a, b, np.zeros(a.size, np.uint64)], axis=1))
    return np.concatenate(recs).astype(np.uint64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--tables", default="/tmp/sfu_tables")
    args = ap.parse_args()
    tables = load_sfu()
    os.makedirs(args.tables, exist_ok=True)
    for name in tables.meta()["tables"]:
        tables.table(name).tofile(os.path.join(args.tables, name + ".bin"))
    sample = build_sample(args.seed)
    sin_path = os.path.join(args.tables, "sample_in.bin")
    sample.tofile(sin_path)
    sout = os.path.join(args.out, "sfu_sample.bin")
    cmd = [args.bin, args.tables, sin_path, sout]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=500)
    sys.stderr.write(res.stderr)
    if res.returncode:
        print(res.stdout)
        raise SystemExit(f"sfu_prove failed ({res.returncode})")
    proof = json.loads(res.stdout)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    proof.update(gpu=smi.split(",")[0].strip(), driver=smi.split(",")[-1].strip(), cuda=nvcc,
                 date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 command=" ".join(["python3", "scripts/capture/prove_sfu.py"] + sys.argv[1:]), seed=args.seed,
                 table_meta_sha256={k: v["sha256"] for k, v in tables.meta()["tables"].items()})
    with open(os.path.join(args.out, "sfu_proof.json"), "w") as f:
        json.dump(proof, f, indent=1)
    c = proof["control"]
    print(f"control ({c['flipped']} in the model): {c['mismatches']} mismatches of {c['form']}, "
          f"{c['expected']} expected")
    width = max(len(x["form"]) for x in proof["forms"])
    for x in proof["forms"]:
        print(f"{x['form']:{width}s} {x['inputs']:>12,d} inputs  {x['mismatches']:>10,d} mismatches  "
              f"{' '.join('/'.join(r) for r in x['first'][:2])}")
    print(f"GPU time {proof['gpu_ms'] / 1000:.1f} s; {sum(x['mismatches'] for x in proof['forms'])} mismatches")


if __name__ == "__main__":
    main()
