"""The CuTe Blackwell tutorials 01-04 (nvidia-cutlass wheel) as PTX fixtures, with the launches their own host code
makes, for the interpreter's sm_100a tests.

    PYTHONPATH=. python scripts/cute_sm100_kernels.py [--out tests/fixtures/ptx/sm100] [names...]

Needs nvcc 13.0 and the nvidia-cutlass wheel (its headers and examples, `cutlass_library/source`), no GPU. For each
fixture in FIXTURES:

1. the PTX: `nvcc -ptx` of scripts/cute_sm100/tutorial.cu with -DTCEMU_TUTORIAL naming the wheel's tutorial file: the
   tutorial included unmodified, its debug `print`/`printf` compiled out (tcemu does not model vprintf calls);
   `cute_mma_sm100` also defines TCEMU_FENCE_BEFORE_SYNCTHREADS (the fence.proxy.async tutorial 01 lacks, which
   `cute_mma_nofence_sm100` keeps out: tcemu reports the missing fence there);
2. the shipped tutorial file compiled as-is, only for its opcode census (stored next to the fixture's: the two differ
   in the printing code only, tests/test_ptx_tcgen05_kernels.py checks the rest is equal);
3. the launch records: scripts/cute_sm100/builder.cu (the same tutorial.cu, host-compiled with fake_runtime.cpp and
   `-cudart none`) runs the tutorial's own host function `gemm_host_f16xf16_f32_f32_tnt` on fake device pointers
   for each case and prints the launch: entry, grid, block, cluster, dynamic shared bytes, the bytes of every kernel
   argument (laid out here at the PTX .param offsets) and the cuTensorMapEncodeTiled calls (their 128-byte maps are
   placeholders in the blob, "tcemuMAP" + index; a replay writes tcemu's encoding of the same arguments there).

A (M, K) and B (N, K) are f16 K-major, C and D (M, N) f32 row-major, as the tutorials' main() lays them out.
"""
import argparse
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
import tcemu.ptx as tp  # noqa: E402
from tcemu.triton import opcode_census  # noqa: E402

SRC = os.path.join(HERE, "cute_sm100")
TUTORIALS = "cute/tutorial/blackwell"   # inside the wheel's examples/
BUFFERS = {"A": 0x7E0000000000, "B": 0x7E1000000000, "C": 0x7E2000000000, "D": 0x7E3000000000}   # builder.cu
COMMON = ["-std=c++17", "--expt-relaxed-constexpr", "-DNDEBUG", "-I$CUTLASS/include", "-I$CUTLASS/tools/util/include",
          "-I$CUTLASS/examples"]
PTX_ARCH = ["-gencode=arch=compute_100a,code=sm_100a", "-ptx"]
BUILDER = ["-DCUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL=1", "-gencode=arch=compute_100a,code=compute_100a",
           "-cudart", "none", "-I" + "scripts/cute_sm100"]

# name -> (tutorial file, extra -D, what, cases (M, N, K, alpha, beta))
FIXTURES = {
    "cute_mma_sm100": ("01_mma_sm100.cu", ["-DTCEMU_FENCE_BEFORE_SYNCTHREADS"],
                       "tutorial 01: cooperative copies to shared memory, one tcgen05.mma 128x256x16 f16 -> f32 per "
                       "K block, tcgen05.ld 32x32b epilogue with alpha/beta; a fence.proxy.async added before each "
                       "__syncthreads()", [(128, 256, 128, 2.0, 1.0), (256, 256, 64, 1.0, 0.0)]),
    "cute_mma_nofence_sm100": ("01_mma_sm100.cu", [],
                               "tutorial 01 as shipped (prints compiled out): generic-proxy st.shared read by "
                               "tcgen05.mma with no fence.proxy.async between", [(128, 256, 64, 1.0, 0.0)]),
    "cute_mma_tma_sm100": ("02_mma_tma_sm100.cu", [],
                           "tutorial 02: TMA loads (128B swizzle) completing on an mbarrier, 128x256x16 f16 MMAs",
                           [(128, 256, 128, 1.0, 0.0), (256, 256, 64, 2.0, 1.0)]),
    "cute_mma_tma_multicast_sm100": ("03_mma_tma_multicast_sm100.cu", [],
                                     "tutorial 03: 4x4 clusters, TMA multicast of A along N and B along M, multicast "
                                     "tcgen05.commit", [(512, 1024, 64, 1.0, 0.0)]),
    "cute_mma_tma_2sm_sm100": ("04_mma_tma_2sm_sm100.cu", [],
                               "tutorial 04: 2-SM tcgen05.mma.cta_group::2 256x256x16 over CTA pairs of 4x4 clusters, "
                               ".cta_group::2 multicast TMA, tcgen05.alloc.cta_group::2", [(512, 1024, 64, 1.0, 0.0)]),
}


def cutlass_source():
    import cutlass_library
    return os.path.join(os.path.dirname(cutlass_library.__file__), "source")


def expand(args, cutlass):
    return [a.replace("$CUTLASS", cutlass) for a in args]


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{(p.stdout + p.stderr)[-4000:]}")
    return p.stdout


def tutorial_define(tutorial):
    return f'-DTCEMU_TUTORIAL="{TUTORIALS}/{tutorial}"'


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def build(name, out, work, cutlass, nvcc):
    tutorial, defines, what, cases = FIXTURES[name]
    ptx_path = os.path.join(out, name + ".ptx")
    ptx_cmd = [nvcc] + PTX_ARCH + COMMON + defines + [tutorial_define(tutorial), "scripts/cute_sm100/tutorial.cu",
                                                      "-o", ptx_path]
    run(expand(ptx_cmd, cutlass), cwd=ROOT)
    shipped = os.path.join(work, name + "_shipped.ptx")
    run(expand([nvcc] + PTX_ARCH + COMMON + [f"$CUTLASS/examples/{TUTORIALS}/{tutorial}", "-o", shipped], cutlass),
        cwd=ROOT)
    builder = os.path.join(work, name + "_builder")
    builder_cmd = [nvcc] + COMMON + BUILDER + defines + [tutorial_define(tutorial), "scripts/cute_sm100/builder.cu",
                                                         "scripts/cute_sm100/fake_runtime.cpp", "-o", builder]
    run(expand(builder_cmd, cutlass), cwd=ROOT)
    with open(ptx_path) as f:
        ptx = f.read()
    mod = tp.load(ptx)
    entry = next(n for n in mod.kernels if "gemm_device" in n)
    prog = mod.program(entry)
    params = [{"name": p.name, "offset": prog.symbols[p.name].address, "bytes": p.size} for p in prog.fn.params]
    records = []
    for M, N, K, alpha, beta in cases:
        env = {**os.environ, "TCEMU_PARAM_SIZES": ",".join(str(p["bytes"]) for p in params)}
        text = run([builder, str(M), str(N), str(K), repr(alpha), repr(beta)], env=env)
        rec = json.loads([ln for ln in text.splitlines() if ln.startswith("{")][-1])
        if rec["entry"] != entry:
            raise SystemExit(f"{name}: the host code launched {rec['entry'][:80]}..., the PTX's entry is "
                             f"{entry[:80]}...")
        blob = bytearray(prog.param_size)
        for p, raw in zip(params, rec["args"]):
            blob[p["offset"]:p["offset"] + p["bytes"]] = bytes.fromhex(raw)
        maps = []
        for i, enc in enumerate(rec["encodes"]):
            tag = b"tcemuMAP" + i.to_bytes(4, "little")
            offsets = [m.start() for m in re.finditer(re.escape(tag), bytes(blob))]
            maps += [{"offset": o, "encode": i} for o in offsets]
        records.append({"M": M, "N": N, "K": K, "alpha": alpha, "beta": beta, "grid": rec["grid"],
                        "block": rec["block"], "cluster": rec["cluster"], "shared_bytes": rec["shared_bytes"],
                        "param_blob": blob.hex(), "tensormaps": maps, "encodes": rec["encodes"],
                        "buffers": {k: v for k, v in BUFFERS.items()}})
    with open(shipped) as f:
        shipped_census = opcode_census(_first_entry(f.read(), entry))
    nvcc_version = [ln for ln in run([nvcc, "--version"]).splitlines() if "release" in ln][0].strip()
    from importlib.metadata import version
    meta = {
        "name": name, "description": what, "arch": "sm100", "tutorial": f"examples/{TUTORIALS}/{tutorial}",
        "nvidia_cutlass": version("nvidia-cutlass"), "nvcc": nvcc_version,
        "ptx_command": " ".join(ptx_cmd), "builder_command": " ".join(builder_cmd),
        "command": "PYTHONPATH=. python " + " ".join(["scripts/cute_sm100_kernels.py"] + sys.argv[1:]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "entry": entry, "params": params, "param_size": prog.param_size,
        "ptx_sha256": sha(ptx_path), "tutorial_sha256": sha(os.path.join(cutlass, "examples", TUTORIALS, tutorial)),
        "wrapper_sha256": {f: sha(os.path.join(SRC, f)) for f in ("tutorial.cu", "builder.cu", "fake_runtime.cpp")},
        "opcode_census": opcode_census(_first_entry(ptx, entry)), "opcode_census_shipped": shipped_census,
        "cases": records,
    }
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    return name, entry


def _first_entry(ptx, entry):
    """The module text, checked to hold `entry` as its first .entry (opcode_census reads the first one)."""
    first = re.search(r"\.entry\s+([\w$]+)", ptx)
    if first is None or first.group(1) != entry:
        raise SystemExit(f"expected {entry[:60]}... to be the module's first .entry")
    return ptx


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/fixtures/ptx/sm100")
    ap.add_argument("--work", default="build/cute_sm100", help="git-ignored folder for builders and shipped PTX")
    ap.add_argument("--nvcc", default=os.environ.get("TCEMU_NVCC", "nvcc"))
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    cutlass = cutlass_source()
    names = args.names or list(FIXTURES)
    with ThreadPoolExecutor(max_workers=2) as pool:
        for name, entry in pool.map(lambda n: build(n, args.out, args.work, cutlass, args.nvcc), names):
            print(f"{name:32s} {entry[:60]}...", flush=True)


if __name__ == "__main__":
    main()
