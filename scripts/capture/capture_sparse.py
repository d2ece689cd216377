"""Capture sparse wgmma (wgmma.mma_async.sp) on an H100/H200 and write three tcemu traces (numpy only on the GPU
host; nothing from tcemu is imported, so the capture does not depend on the code it judges).

Device command (one call, about 2 minutes on an H100: three parallel builds of ~50 s, then ~30 s of runs):

    cd scripts/capture && for f in ADDR META NUM; do nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a \\
        -DSP_FAMILY_$f -o /tmp/sp_$f capture_sparse.cu & done; wait; cd ../.. && \\
    python3 scripts/capture/capture_sparse.py --bin-dir /tmp --seed 2027 --out-dir $OUT

It writes, into --out-dir (each well under 16 MiB):
  wgmma_sp_addresses_sm90.npz  kind wgmma_sp_operand_addresses: which bytes (A: stored elements; B: N x K) or
                               register elements (A in registers) feed each element
  wgmma_sp_metadata_sm90.npz   kind wgmma_sp_metadata: raw D of a one-hot B against given metadata registers
  wgmma_sp_numerics_sm90.npz   kind wgmma_sp_numerics: digests of D for seeded random operands (tcemu/traces/sparse_seeds.py)
and prints one line per file. `--dry-run` plans every case and writes the three traces with zero outputs, no GPU.

What each case group decides (scripts/capture/capture_sparse.cu for the kernels):
  addresses  A probe: stored A read through its descriptor (all swizzles, K- and (16-bit) MN-major, base offsets,
             start positions, random and junk LBO/SBO); B probe: B's N x K (64 bytes of K) through its
             descriptor, incl. an LBO sweep for 32B-swizzled K-major B (does LBO place the second 32-byte
             chunk?) and junk LBO for 64B/128B (ignored?), a base-offset x pattern-start grid; register A: which
             register element feeds each stored position. check_mismatches counts entries that broke the
             probe's own invariants (zeros where no element may land, replicas that disagree).
  metadata   every legal selector, A from shared memory and from registers, for tf32, f16, bf16, u8, e4m3:
             128 "walking" cases (nibble 0x4 everywhere, 0xE in thread t) that show which chunks each thread's
             register controls, and random registers of five classes (valid, raw words, unordered / other,
             repeated indices, zero): what invalid metadata does.
  numerics   20 kinds (tf32; f16 -> f32/f16; bf16; e4m3/e5m2 mixes -> f32/f16; s8/u8 mixes -> s32 +-satfinite),
             N = 256 and 24, A in shared memory and registers, chains of 4, sp-sel 1, imm-scale -1, transposes;
             every metadata class; 1/16 of float cases with A = C = -0 and B positive (the sign of pruned terms),
             special values in B at pruned positions (do pruned positions multiply?).
"""
import argparse
import datetime
import hashlib
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_sparse_wrappers as gen  # noqa: E402

SMEM_BYTES, SEL_BYTES = 227 * 1024, 4096
REGS = 128
ADDR_CASE = np.dtype([("desc_a", "<u8"), ("desc_b", "<u8"), ("inst", "<i4"), ("role", "<i4"), ("n", "<i4"),
                      ("pad", "<i4")])
META_CASE = np.dtype([("inst", "<i4"), ("cls", "<i4"), ("walk", "<i4"), ("pad", "<i4")])
NUM_CASE = np.dtype([("seed", "<u8"), ("inst", "<i4"), ("steps", "<i4"), ("scale_d", "<i4"), ("cls", "<i4")])
ADDR_KINDS = {gen.TF32: ("tf32", 4), gen.F16: ("f16", 2), gen.BF16: ("bf16", 2), gen.U8: ("u8", 1)}
N_SETS = {gen.TF32: (8, 16, 64, 256), gen.F16: (8, 32, 64, 256), gen.BF16: (8, 32, 64, 256), gen.U8: (8, 64, 256)}
SWIZZLE_BYTES = {0: 0, 1: 128, 2: 64, 3: 32}  # sm90 layout-type code -> swizzle width
META_CLASSES = ["valid", "raw", "unordered_or_other", "repeated", "zero", "walk"]
SOURCES = ("capture_sparse.cu", "capture_sparse.py", "gen_sparse_wrappers.py", "wgmma_sparse_wrappers.inc",
           "sparse_gen.h")
BUILD = ("cd scripts/capture && for f in ADDR META NUM; do nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a "
         "-DSP_FAMILY_$f -o /tmp/sp_$f capture_sparse.cu & done; wait")


def K_of(kind):
    return gen.K_OF[gen.KINDS[kind][0]]


def encode_desc(start, lbo, sbo, base_offset, layout):
    return ((start & 0x3FFFF) >> 4) | ((lbo & 0x3FFFF) >> 4) << 16 | ((sbo & 0x3FFFF) >> 4) << 32 \
        | base_offset << 49 | layout << 62


# ---------------------------------------------------------------------------------------------- addresses

def max_offset(rows, eb, kk, k_major, width, lbo, sbo):
    """A bound on the largest unswizzled byte offset of a (rows, kk) operand, under the model (K-major
    swizzled K beyond the swizzle width: atom columns LBO apart) and under contiguous K."""
    T = 16 // eb
    chunks = kk * eb // 16
    if k_major and not width:
        return (rows // 8 - 1) * sbo + 7 * 16 + (chunks - 1) * lbo + 15
    if k_major:
        per_row = width // 16
        cols = -(-chunks // per_row)
        return (rows // 8 - 1) * sbo + 7 * width + (cols - 1) * lbo + chunks * 16 + 15
    if not width:
        return (rows // T - 1) * sbo + 7 * 16 + (kk // 8 - 1) * lbo + 15
    per = T * width // 16
    return (-(-rows // per) - 1) * lbo + 7 * width + (kk // 8 - 1) * sbo + min(rows, per) * eb - 1


def sel_desc(base, role):
    """The selector operand's descriptor: B one-hot (roles 0, 2) or the A selector (role 1)."""
    start = base + SMEM_BYTES - SEL_BYTES
    return encode_desc(start, 128, 256, 0, 0) if role == 1 else encode_desc(start, 128, 512, 0, 0)


def place(rng, base, span, position):
    """A start address = position (mod 1024) whose [start, start + span) lies in the code-filled window."""
    lo, hi = base, base + SMEM_BYTES - SEL_BYTES
    first = -(-(lo - position) // 1024)
    last = (hi - span - position - 127) // 1024
    if last < first:
        return None
    return position + 1024 * int(rng.integers(first, last + 1))


def addr_case(rng, base, kind, role, n, mn, layout, position, bo, lbo, sbo):
    name, eb = ADDR_KINDS[kind]
    K, width = K_of(kind), SWIZZLE_BYTES[layout]
    rows, kk = (64, K // 2) if role == 0 else (n, K)
    span = max_offset(rows, eb, kk, not mn, width, lbo, sbo) + 1 + (lbo if width and not mn else 0) + 64
    start = place(rng, base, span, position)
    if start is None:
        return None
    desc = encode_desc(start, lbo, sbo, bo, layout)
    inst = gen.addr_instantiations().index((kind, n, 0, 0, int(mn and role == 0), int(mn and role == 1), 1, 1))
    if role == 0:
        return (desc, sel_desc(base, 0), inst, 0, n, 0)
    return (sel_desc(base, 1), desc, inst, 1, n, 0)


def canonical_strides(kind, role, n, mn, layout):
    _, eb = ADDR_KINDS[kind]
    K, W = K_of(kind), SWIZZLE_BYTES[layout]
    rows, kk = (64, K // 2) if role == 0 else (n, K)
    T = 16 // eb
    if not mn:
        if not W:
            return 128, 128 * (kk * eb // 16)
        # K wider than the swizzled row: atom columns after all rows (Triton's tile order), else CuTe's LBO 16
        return (rows * W if kk * eb > W else 16), 8 * W
    if W:
        return 8 * W * max(kk // 8, 1), 8 * W
    return 128 * (rows // T), 128


def plan_addresses(seed, base, per_group):
    rng = np.random.default_rng(seed)
    cases = []
    for kind in ADDR_KINDS:
        sixteen = kind in (gen.F16, gen.BF16)
        for mn in (0, 1) if sixteen else (0,):
            for layout in (0, 1, 2, 3):
                configs = [(0, K_of(kind))] + [(1, n) for n in N_SETS[kind]]
                for role, n in configs:
                    positions = rng.permutation(64)
                    for i in range(per_group):
                        bo = 0 if rng.random() < 0.3 else int(rng.integers(0, 8))
                        rows = 64 if role == 0 else n
                        if i % 4 == 0:
                            lbo, sbo = canonical_strides(kind, role, n, mn, layout)
                        else:
                            lim = 8192 // 16 if rows <= 64 else 1024 // 16
                            lbo, sbo = (int(x) * 16 for x in rng.integers(0, lim, 2))
                        c = addr_case(rng, base, kind, role, n, mn, layout, 16 * int(positions[i % 64]), bo, lbo, sbo)
                        if c is not None:
                            cases.append(c)
    # LBO sweep: 32B-swizzled K-major B (64 bytes of K in 32-byte rows), canonical and random SBO
    for kind in ADDR_KINDS:
        for n in (8, 64, 256):
            for lbo in (0, 16, 32, 48, 64, 96, 128, 256, 512, n * 32, 1040, 4096):
                for sbo in (256, 16 * int(rng.integers(16, 64))):
                    bo = int(rng.integers(0, 8)) if rng.random() < 0.5 else 0
                    c = addr_case(rng, base, kind, 1, n, 0, 3, 16 * int(rng.integers(0, 64)), bo, lbo, sbo)
                    if c is not None:
                        cases.append(c)
    # junk LBO on 64B / 128B K-major B, which hold 64 bytes of K in one row
    for kind in ADDR_KINDS:
        for n in (8, 64, 256):
            for layout in (1, 2):
                for lbo in (0, 16, 48, 4096, 8192):
                    c = addr_case(rng, base, kind, 1, n, 0, layout, 16 * int(rng.integers(0, 64)), 0, lbo,
                                  8 * SWIZZLE_BYTES[layout])
                    if c is not None:
                        cases.append(c)
    # base offset x 128-byte pattern start, bf16 K-major B with 32B / 64B / 128B swizzle (N = 32)
    for layout in (3, 2, 1):
        for bo in range(8):
            for line in range(8):
                lbo, sbo = canonical_strides(gen.BF16, 1, 32, 0, layout)
                c = addr_case(rng, base, gen.BF16, 1, 32, 0, layout, 128 * line, bo, lbo, sbo)
                if c is not None:
                    cases.append(c)
    # A from registers: one case per kind
    for kind in ADDR_KINDS:
        inst = gen.addr_instantiations().index((kind, K_of(kind), 0, 1, 0, 0, 1, 1))
        cases.append((0, sel_desc(base, 0), inst, 2, K_of(kind), 0))
    arr = np.zeros(len(cases), ADDR_CASE)
    for i, c in enumerate(cases):
        arr[i] = c
    return arr


def fragment_rc(n):
    """(row, col) of f32/s32 accumulator register i of thread t (PTX Figure 149), arrays (128, n/2)."""
    t = np.arange(128)[:, None]
    i = np.arange(n // 2)[None, :]
    return 16 * (t // 32) + (t % 32) // 4 + 8 * ((i // 2) % 2), 8 * (i // 4) + (t % 4) * 2 + (i % 2)


def stored_columns(kind):
    """Logical column of each stored element under nibble 0x4 (2:4: 4c + j; tf32: 2c)."""
    s = np.arange(K_of(kind) // 2)
    return 2 * s if kind == gen.TF32 else 4 * (s // 2) + s % 2


def decode_addresses(cases, raw):
    """Per case: the map (A: (64, K/2) addresses or register ids; B: (N, K) addresses) and the check count."""
    maps, checks = [], []
    insts = gen.addr_instantiations()
    for idx, c in enumerate(cases):
        kind = insts[int(c["inst"])][0]
        eb, K, n, role = ADDR_KINDS[kind][1], K_of(kind), int(c["n"]), int(c["role"])
        row, col = fragment_rc(n)
        d = np.empty((64, n), np.int64)
        d[row, col] = raw[idx, :, : n // 2]
        if role == 1:
            maps.append(d[:K, :].T * eb)
            checks.append(int(np.count_nonzero(d != np.tile(d[:K], (64 // K, 1)))))
        else:
            cols = stored_columns(kind)
            others = np.setdiff1d(np.arange(K), cols)
            maps.append(d[:, cols] * (eb if role == 0 else 1))
            checks.append(int(np.count_nonzero(d[:, others])))
    return maps, np.array(checks, np.int32)


def delta_code(flat):
    out = flat.astype(np.int64).copy()
    out[1:] -= flat[:-1]
    return out.astype(np.int32)


# ---------------------------------------------------------------------------------------------- metadata

def meta_nibble_table(chunk, cls):
    if cls == 3:
        return np.array([0x0, 0x5, 0xA, 0xF])
    if chunk == 2:
        return np.array([0x4, 0xE]) if cls == 0 else np.array([v for v in range(16) if v not in (0x4, 0xE)])
    return np.array([0x4, 0x8, 0xC, 0x9, 0xD, 0xE]) if cls == 0 else np.array([0x1, 0x2, 0x3, 0x6, 0x7, 0xB])


def plan_metadata(seed):
    rng = np.random.default_rng(seed + 1)
    cases, metas = [], []
    for inst, (kind, n, sel, rega, ta, tb, sa, sb) in enumerate(gen.meta_instantiations()):
        chunk = 2 if kind == gen.TF32 else 4
        for t in range(128):  # walking: 0x4 everywhere, 0xE in every nibble of thread t
            regs = np.full(128, 0x44444444, np.uint32)
            regs[t] = 0xEEEEEEEE
            cases.append((inst, 5, t, 0))
            metas.append(regs)
        for cls, count in ((0, 16), (1, 24), (2, 8), (3, 8), (4, 4)):
            for _ in range(count):
                if cls == 1:
                    regs = rng.integers(0, 1 << 32, 128, dtype=np.uint64).astype(np.uint32)
                elif cls == 4:
                    regs = np.zeros(128, np.uint32)
                else:
                    nib = rng.choice(meta_nibble_table(chunk, cls), size=(128, 8)).astype(np.uint64)
                    regs = np.bitwise_or.reduce(nib << (4 * np.arange(8, dtype=np.uint64)), axis=1).astype(np.uint32)
                cases.append((inst, cls, -1, 0))
                metas.append(regs)
    arr = np.zeros(len(cases), META_CASE)
    for i, c in enumerate(cases):
        arr[i] = c
    return arr, np.stack(metas).astype(np.uint32)


# ---------------------------------------------------------------------------------------------- numerics

def plan_numerics(seed):
    rng = np.random.default_rng(seed + 2)
    rows = []
    for inst_id, (kind, n, sel, rega, ta, tb, sa, sb) in enumerate(gen.num_instantiations()):
        plain = n == 256 and sel == 0 and (ta, tb, sa, sb) == (0, 0, 1, 1)
        spec = [(1, 40), (4, 8)] if plain and not rega else [(1, 8), (2, 4)] if plain else [(1, 8)]
        for steps, count in spec:
            for _ in range(count):
                cls = int(rng.choice(5, p=[0.5, 0.2, 0.1, 0.1, 0.1]))
                rows.append((int(rng.integers(0, 2**63)), inst_id, steps, int(rng.random() >= 1 / 16), cls))
    return np.array(rows, NUM_CASE)


def digests(raw, nregs):
    """(128,) uint32: blake2b-4 of each thread's first nregs raw D registers."""
    return np.array([int.from_bytes(hashlib.blake2b(raw[t, :nregs].astype("<u4").tobytes(), digest_size=4)
                                    .digest(), "little") for t in range(128)], np.uint32)


# ---------------------------------------------------------------------------------------------- running

def provenance(args, base, dry):
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60).stdout.strip()
        except Exception as e:  # provenance is best effort; say what failed
            return f"unavailable ({e})"
    sources = {}
    for f in SOURCES:
        with open(os.path.join(HERE, f), "rb") as fh:
            sources["scripts/capture/" + f] = hashlib.sha256(fh.read()).hexdigest()
    return {
        "gpu": "dry-run (no GPU)" if dry else sh("nvidia-smi --query-gpu=name --format=csv,noheader | head -1"),
        "driver": "dry-run" if dry else sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1"),
        "cuda": sh("nvcc --version | tail -2 | head -1") or "unavailable",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "python3 " + " ".join(sys.argv), "build": BUILD, "sources": sources,
        "smem_base": base, "seed": args.seed, "dry_run": dry,
    }


def run(binary, argv, outfile, shape, dtype, dry):
    if dry:
        return np.zeros(shape, dtype)
    subprocess.run([binary] + argv, check=True)
    return np.fromfile(outfile, dtype).reshape(shape)


def save(path, meta, **cols):
    np.savez_compressed(path, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **cols)
    print(f"wrote {path} ({os.path.getsize(path) / 2**20:.2f} MiB)", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default="/tmp", help="folder holding the built sp_ADDR, sp_META, sp_NUM")
    ap.add_argument("--seed", type=int, default=2027)
    ap.add_argument("--per-group", type=int, default=16)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--workdir", default="/tmp")
    ap.add_argument("--dry-run", action="store_true", help="plan and write traces with zero outputs; no GPU")
    args = ap.parse_args()
    dry = args.dry_run
    os.makedirs(args.out_dir, exist_ok=True)
    binary = {f: os.path.join(args.bin_dir, f"sp_{f}") for f in ("ADDR", "META", "NUM")}
    work = lambda name: os.path.join(args.workdir, name)  # noqa: E731

    # ---- addresses
    if dry:
        base = 0x400
    else:
        base, smem = map(int, subprocess.run([binary["ADDR"], "--base"], check=True, capture_output=True,
                                             text=True).stdout.split())
        assert smem == SMEM_BYTES
    cases = plan_addresses(args.seed, base, args.per_group)
    cases.tofile(work("sp_acases.bin"))
    print(f"addresses: smem base {base:#x}; {len(cases)} cases", flush=True)
    raw = run(binary["ADDR"], ["addr", work("sp_acases.bin"), work("sp_aout.bin")], work("sp_aout.bin"),
              (len(cases), 128, REGS), np.int32, dry)
    maps, checks = decode_addresses(cases, raw)
    insts = gen.addr_instantiations()
    kinds = [insts[int(i)][0] for i in cases["inst"]]
    role = cases["role"]
    flat = [delta_code(m.ravel()) for m in maps]
    names = [ADDR_KINDS[k][0] for k in ADDR_KINDS]
    meta = {"format": "tcemu-trace", "version": 1, "kind": "wgmma_sp_operand_addresses", "arch": "sm90",
            "dtypes": names, **provenance(args, base, dry),
            "columns": {
                "desc": "uint64 matrix descriptor of the probed operand (absolute addresses; 0 for register A)",
                "operand": "0 = stored A through its descriptor (rows 64, k = K/2 stored), 1 = B (rows N, k = K), "
                           "2 = A from registers (values are register-element ids (thread*4 + reg)*per + e)",
                "dtype": "index into meta.dtypes", "major": "0 = K-major, 1 = MN-major",
                "rows": "64 or N", "k": "stored elements (A) or K (B) per row", "n": "instruction N",
                "check_mismatches": "D entries that broke the probe's invariants (expect 0)",
                "offsets": "case i's values are addresses[offsets[i]:offsets[i+1]]",
                "addresses": "int32 row-major (rows, k) per case, delta-coded: first absolute, then differences"}}
    save(os.path.join(args.out_dir, "wgmma_sp_addresses_sm90.npz"), meta,
         desc=np.where(role == 1, cases["desc_b"], np.where(role == 0, cases["desc_a"], 0)).astype(np.uint64),
         operand=role.astype(np.uint8), dtype=np.array([names.index(ADDR_KINDS[k][0]) for k in kinds], np.uint8),
         major=np.array([insts[int(i)][4] | insts[int(i)][5] for i in cases["inst"]], np.uint8),
         rows=np.array([m.shape[0] for m in maps], np.int32), k=np.array([m.shape[1] for m in maps], np.int32),
         n=cases["n"].astype(np.int32), check_mismatches=checks,
         offsets=np.concatenate([[0], np.cumsum([f.size for f in flat])]).astype(np.int64),
         addresses=np.concatenate(flat))
    print(f"addresses: {int(np.count_nonzero(checks))} cases broke a probe invariant", flush=True)

    # ---- metadata
    mcases, metas = plan_metadata(args.seed)
    mcases.tofile(work("sp_mcases.bin"))
    metas.tofile(work("sp_metas.bin"))
    print(f"metadata: {len(mcases)} cases", flush=True)
    raw = run(binary["META"], ["meta", work("sp_mcases.bin"), work("sp_metas.bin"), work("sp_mout.bin")],
              work("sp_mout.bin"), (len(mcases), 128, REGS), np.uint32, dry)
    minsts = gen.meta_instantiations()
    nregs = np.array([gen.nregs(minsts[i][0], minsts[i][1]) for i in mcases["inst"]], np.int32)
    dumps = [raw[c, :, :nregs[c]].ravel() for c in range(len(mcases))]
    meta = {"format": "tcemu-trace", "version": 1, "kind": "wgmma_sp_metadata", "arch": "sm90",
            "kinds": [list(k) for k in gen.KINDS], "instantiations": [list(i) for i in minsts],
            "classes": META_CLASSES, **provenance(args, base, dry),
            "columns": {
                "inst": "index into meta.instantiations: [kind, N, sp-sel, a_in_registers, trans_a, trans_b, "
                        "scale_a, scale_b]; N = K, B one-hot B[n][k] = (k == n)",
                "cls": "index into meta.classes", "walk": "thread holding 0xEEEEEEEE in walking cases, else -1",
                "sp_meta": "(cases, 128) uint32 metadata register of every thread",
                "d_offsets": "d_regs[d_offsets[i]:d_offsets[i+1]] is case i's (128, nregs) raw D registers",
                "d_regs": "uint32 raw D registers; stored A (m, s) = 1 for even s, 2 for odd s (tf32: 1.0)"}}
    meta["smem_base"] = "descriptors computed in the kernel from its own shared base"
    save(os.path.join(args.out_dir, "wgmma_sp_metadata_sm90.npz"), meta, inst=mcases["inst"].astype(np.int16),
         cls=mcases["cls"].astype(np.int8), walk=mcases["walk"].astype(np.int16), sp_meta=metas,
         d_offsets=np.concatenate([[0], np.cumsum([d.size for d in dumps])]).astype(np.int64),
         d_regs=np.concatenate(dumps))

    # ---- numerics
    ncases = plan_numerics(args.seed)
    ncases.tofile(work("sp_ncases.bin"))
    ninsts = gen.num_instantiations()
    print(f"numerics: {len(ncases)} cases, {len(ninsts)} instantiations", flush=True)
    raw = run(binary["NUM"], ["num", work("sp_ncases.bin"), work("sp_nout.bin")], work("sp_nout.bin"),
              (len(ncases), 128, REGS), np.uint32, dry)
    nregs = np.array([gen.nregs(ninsts[i][0], ninsts[i][1]) for i in ncases["inst"]], np.int32)
    dig = np.stack([digests(raw[c], nregs[c]) for c in range(len(ncases))])
    diag = [int(np.flatnonzero(ncases["inst"] == i)[0]) for i in range(len(ninsts)) if (ncases["inst"] == i).any()]
    dumps = [raw[c, :, :nregs[c]].ravel() for c in diag]
    unwritten = int(sum(np.count_nonzero(raw[c, :, :nregs[c]] == 0xFFFFFFFF) for c in range(len(ncases))))
    meta = {"format": "tcemu-trace", "version": 1, "kind": "wgmma_sp_numerics", "arch": "sm90",
            "kinds": [list(k) for k in gen.KINDS], "instantiations": [list(i) for i in ninsts],
            "classes": META_CLASSES[:5], **provenance(args, base, dry),
            "columns": {
                "seed": "uint64 case seed (tcemu/traces/sparse_seeds.py regenerates A, B, C, register A, metadata)",
                "inst": "index into meta.instantiations: [kind, N, sp-sel, a_in_registers, trans_a, trans_b, "
                        "scale_a, scale_b]",
                "steps": "wgmma issued back to back on the same accumulators, operands regenerated per step",
                "scale_d": "scale-d of step 0", "cls": "metadata class (index into meta.classes)",
                "digest": "(cases, 128) uint32 blake2b(digest_size=4) of each thread's raw D registers",
                "diag_case": "cases whose full raw D registers are stored",
                "diag_offsets": "diag_regs[diag_offsets[i]:diag_offsets[i+1]] is (128, nregs) row-major",
                "diag_regs": "uint32 raw D registers"}}
    meta["smem_base"] = "descriptors computed in the kernel from its own shared base"
    save(os.path.join(args.out_dir, "wgmma_sp_numerics_sm90.npz"), meta, seed=ncases["seed"],
         inst=ncases["inst"].astype(np.int16), steps=ncases["steps"].astype(np.int8),
         scale_d=ncases["scale_d"].astype(np.int8), cls=ncases["cls"].astype(np.int8), digest=dig,
         diag_case=np.array(diag, np.int32),
         diag_offsets=np.concatenate([[0], np.cumsum([d.size for d in dumps])]).astype(np.int64),
         diag_regs=np.concatenate(dumps))
    print(f"numerics: {unwritten} registers left at the poison value", flush=True)


if __name__ == "__main__":
    main()
