"""CUTLASS / CuTe sm_90a kernels whose PTX tcemu keeps as fixtures, their launch records, and their cubins.

    PYTHONPATH=. python scripts/cutlass_kernels.py                      # all kernels (~6 min on 2 cores)
    PYTHONPATH=. python scripts/cutlass_kernels.py cutlass_ws_bf16      # some

Needs nvcc 13.0 and the nvidia-cutlass wheel (its headers and examples: `cutlass_library/source`), no GPU. For
each kernel in KERNELS:

1. the PTX fixture: `nvcc -ptx` of the kernel's source -> tests/fixtures/ptx/<name>.ptx (the CuTe tutorial is
   the wheel's examples/cute/tutorial/hopper/wgmma_tma_sm90.cu compiled unmodified; the CUTLASS GEMMs are
   scripts/cutlass/gemm_sm90.cu with -DTCEMU_GEMM=n);
2. the cubin: `ptxas -arch=sm_90a` of that PTX -> .kernels/<name>.cubin (git-ignored; the GPU capture,
   scripts/capture_cutlass.py, loads it and checks its sha256 against the json);
3. the launch-record builder: the same kernel source compiled for the host with scripts/cutlass/fake_cuda.cpp
   and `-cudart none` -> build/cutlass/<name>_builder. It runs CUTLASS/CuTe's own host code (make_tma_atom,
   GemmUniversalAdapter::initialize/run) on fake device pointers; fake_cuda.cpp stands in for the CUDA runtime
   and driver (fixed H100 properties, cuTensorMapEncodeTiled recorded with a placeholder map) and records the
   launch: entry, grid, block, cluster, dynamic shared bytes, the parameter blob laid out by the entry's PTX
   .param list, where the buffer pointers and tensor maps sit in it, and every encode's arguments. Each case
   runs three times with fresh memory pre-filled with different bytes: blob bits that differ are padding (or
   stray bits) no host code wrote; they are cleared and listed (`undefined_bytes`, `undefined_bits`), so the
   records do not depend on memory garbage;
4. one record per case (CASES), stored in tests/fixtures/ptx/<name>.json with the exact commands, tool
   versions, sha256 of every source, PTX and cubin, and the opcode census of every entry.

The records replay on the CPU with tcemu.launches.replay and on the GPU with scripts/capture_cutlass.py.
"""
import argparse
import datetime
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
from tcemu.triton import opcode_census  # noqa: E402

SRC = os.path.join(HERE, "cutlass")
TUTORIAL = "examples/cute/tutorial/hopper/wgmma_tma_sm90.cu"   # inside the wheel's cutlass_library/source
GEMM = "scripts/cutlass/gemm_sm90.cu"

# -DNDEBUG as CUTLASS's own release builds (CMake Release): device asserts would be `call __assertfail`.
COMMON = ["-std=c++17", "--expt-relaxed-constexpr", "-DNDEBUG", "-I$CUTLASS/include", "-I$CUTLASS/tools/util/include",
          "-I$CUTLASS/examples"]
PTX_ARCH = ["-gencode=arch=compute_90a,code=sm_90a"]
BUILDER_ARCH = ["-gencode=arch=compute_90a,code=compute_90a"]   # the host program never loads device code

# name -> kernel source (for the PTX), builder source, -D flags, cases (builder arguments after --ptx FILE)
KERNELS = {
    "cutlass_cute_tutorial": {
        "ptx_source": "$CUTLASS/" + TUTORIAL, "builder": "scripts/cutlass/cute_tutorial.cu", "defines": [],
        "what": "CuTe Hopper tutorial wgmma_tma_sm90.cu as shipped: f16 in, f16 accumulate, 128x128x64 CTA tile, "
                "3 stages, TMA loads, unpredicated axpby epilogue, launched on 2x1 clusters; NT and TN entries",
        "cases": [["NT", 256, 256, 256], ["NT", 256, 128, 200], ["TN", 256, 256, 256], ["TN", 256, 128, 200]]},
    "cutlass_ws_bf16": {
        "ptx_source": GEMM, "builder": GEMM, "defines": ["-DTCEMU_GEMM=1"],
        "what": "CollectiveBuilder KernelTmaWarpSpecialized, bf16 -> f32 accumulate -> bf16, 128x128x64, 1x1 cluster",
        "cases": [[256, 256, 256], [200, 136, 200]]},
    "cutlass_pingpong_bf16": {
        "ptx_source": GEMM, "builder": GEMM, "defines": ["-DTCEMU_GEMM=2"],
        "what": "CollectiveBuilder KernelTmaWarpSpecializedPingpong, bf16 -> f32 accumulate -> f32, 64x128x64, "
                "1x1 cluster",
        "cases": [[256, 256, 256], [200, 136, 200]]},
    "cutlass_coop_bf16_2x1": {
        "ptx_source": GEMM, "builder": GEMM, "defines": ["-DTCEMU_GEMM=3"],
        "what": "CollectiveBuilder KernelTmaWarpSpecializedCooperative, bf16 -> f32 accumulate -> bf16, 128x128x64, "
                "2x1 cluster (TMA multicast of B)",
        "cases": [[256, 256, 256], [200, 136, 200], [384, 128, 128]]},
    "cutlass_fp8_fastaccum": {
        "ptx_source": GEMM, "builder": GEMM, "defines": ["-DTCEMU_GEMM=4"],
        "what": "CollectiveBuilder KernelTmaWarpSpecializedFP8FastAccum, e4m3 -> f32 -> f32, 128x128x128, 1x1 cluster: "
                "every k-block chained in one wgmma accumulator",
        "cases": [[256, 256, 512], [200, 136, 336]]},
    "cutlass_fp8_promote": {
        "ptx_source": GEMM, "builder": GEMM, "defines": ["-DTCEMU_GEMM=5"],
        "what": "CollectiveBuilder KernelTmaWarpSpecialized on e4m3 (CUTLASS's default fp8 mainloop), e4m3 -> f32 "
                "-> f32, 128x128x128, 1x1 cluster: wgmma partial sums added into f32 registers every "
                "mma_promotion_interval = 4 k-blocks (one CTA k-tile)",
        "cases": [[256, 256, 512], [200, 136, 336]]},
}
SOURCES = ["scripts/cutlass_kernels.py", "scripts/cutlass/record.h", "scripts/cutlass/fake_cuda.cpp",
           "scripts/cutlass/cute_tutorial.cu", "scripts/cutlass/gemm_sm90.cu"]


def cutlass_dir():
    import cutlass_library
    return os.path.join(os.path.dirname(cutlass_library.__file__), "source")


def expand(args, cutlass):
    return [a.replace("$CUTLASS", cutlass) for a in args]


def run(cmd, cutlass, **kw):
    res = subprocess.run(expand(cmd, cutlass), cwd=ROOT, capture_output=True, text=True, **kw)
    if res.returncode:
        raise RuntimeError(f"{shlex.join(cmd)} failed ({res.returncode}):\n{res.stderr[-4000:]}")
    return res.stdout


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def tool_versions(cutlass):
    from importlib import metadata
    ver = open(os.path.join(cutlass, "include", "cutlass", "version.h")).read()
    parts = [re.search(rf"#define CUTLASS_{k} (\d+)", ver) for k in ("MAJOR", "MINOR", "PATCH")]
    def release(tool):
        lines = run([tool, "--version"], cutlass).strip().splitlines()
        return "; ".join(ln.strip() for ln in lines if "release" in ln or ln.startswith("Build"))
    return {"nvcc": release("nvcc"), "ptxas": release("ptxas"),
            "host_compiler": run(["g++", "--version"], cutlass).splitlines()[0],
            "nvidia_cutlass_wheel": metadata.version("nvidia-cutlass"),
            "cutlass_headers": ".".join(p.group(1) for p in parts if p)}


# each builder runs three times, fresh memory filled with each byte (record.h, fake_cuda.cpp); the environment
# sizes differ too, which moves the stack, so a stale stack address that escaped the fill differs as well
STACK_FILLS = (("0x5a", ""), ("0xa5", "x" * 4133), ("0xa5", "x" * 131))


def defined_bytes(records):
    """One record from several runs of a builder: identical but for blob bits no host code wrote (struct
    padding, holding what memory held, and the odd uninitialised bit of a real field), which differ between
    the runs; those bits are cleared (the AND of the runs) and listed: `undefined_bytes` (ranges of whole
    bytes), `undefined_bits` ([offset, mask] of partly defined bytes)."""
    first = records[0]
    for r in records[1:]:
        if {k: v for k, v in first.items() if k != "param_blob"} != {k: v for k, v in r.items() if k != "param_blob"}:
            raise RuntimeError("runs of a builder disagree beyond the parameter blob")
    blobs = [bytes.fromhex(r["param_blob"]) for r in records]
    anded = bytearray(blobs[0])
    differ = bytearray(len(anded))
    for b in blobs[1:]:
        for i, (x, y) in enumerate(zip(blobs[0], b)):
            anded[i] &= y
            differ[i] |= x ^ y
    used = {p["offset"] + j for p in first["pointers"] for j in range(8)}
    used |= {t["offset"] + j for t in first["tensormaps"] for j in range(128)}
    if any(differ[i] for i in used):
        raise RuntimeError("a pointer or tensor map of the blob depends on uninitialised memory")
    ranges, bits = [], []
    for i, m in enumerate(differ):
        if m == 0xFF:
            if ranges and ranges[-1][1] == i:
                ranges[-1][1] = i + 1
            else:
                ranges.append([i, i + 1])
        elif m:
            bits.append([i, m])
    return dict(first, param_blob=anded.hex(), undefined_bytes=ranges, undefined_bits=bits)


def entries(ptx):
    return re.findall(r"\.entry\s+([\w$]+)\s*\(", ptx)


def entry_census(ptx, entry):
    """opcode_census of one entry of a module with several."""
    at = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*\(", ptx)
    return opcode_census(ptx[at.start():])


def build(name, cutlass, out, cubins, builders):
    k = KERNELS[name]
    ptx_path, json_path = os.path.join(out, name + ".ptx"), os.path.join(out, name + ".json")
    cubin_path, builder_path = os.path.join(cubins, name + ".cubin"), os.path.join(builders, name + "_builder")
    ptx_cmd = (["nvcc"] + COMMON + PTX_ARCH + k["defines"] +
               ["-ptx", "-o", os.path.relpath(ptx_path, ROOT), k["ptx_source"]])
    cubin_cmd = ["ptxas", "-arch=sm_90a", "-o", os.path.relpath(cubin_path, ROOT), os.path.relpath(ptx_path, ROOT)]
    builder_cmd = (["nvcc"] + COMMON + ["-I" + os.path.relpath(SRC, ROOT)] + BUILDER_ARCH + k["defines"] +
                   ["-cudart", "none", "-o", os.path.relpath(builder_path, ROOT), k["builder"],
                    "scripts/cutlass/fake_cuda.cpp"])
    with ThreadPoolExecutor(2) as pool:   # the PTX and the builder compile independently
        jobs = [pool.submit(run, ptx_cmd, cutlass), pool.submit(run, builder_cmd, cutlass)]
        for j in jobs:
            j.result()
    run(cubin_cmd, cutlass)
    ptx = open(ptx_path, "rb").read()
    cubin = open(cubin_path, "rb").read()
    text = ptx.decode()
    launches = []
    for case in k["cases"]:
        args = [builder_path, "--ptx", ptx_path] + [str(c) for c in case]
        rec = defined_bytes([json.loads(run(args, cutlass, env={**os.environ, "TCEMU_STACK_FILL": fill,
                                                                "TCEMU_ENV_PAD": pad}))
                             for fill, pad in STACK_FILLS])
        rec = {"case": case, **rec}
        if rec["entry"] not in entries(text):
            raise RuntimeError(f"{name} {case}: the builder launched {rec['entry'][:80]}..., not an entry of the PTX")
        launches.append(rec)
    src = k["ptx_source"].replace("$CUTLASS", cutlass)
    meta = {
        "name": name, "arch": "sm90", "what": k["what"],
        "ptx_source": k["ptx_source"].replace("$CUTLASS/", "cutlass_library/source/"),
        "ptx_source_sha256": sha256(open(os.path.join(ROOT, src), "rb").read()),
        "builder_source": k["builder"], "defines": k["defines"],
        "commands": {"ptx": shlex.join(ptx_cmd), "cubin": shlex.join(cubin_cmd), "builder": shlex.join(builder_cmd),
                     "record": shlex.join([os.path.relpath(builder_path, ROOT), "--ptx",
                                           os.path.relpath(ptx_path, ROOT), "<case arguments>"]),
                     "$CUTLASS": "python -c \"import cutlass_library, os; "
                                 "print(os.path.dirname(cutlass_library.__file__))\"/source"},
        "ptx_sha256": sha256(ptx), "ptx_bytes": len(ptx), "cubin_sha256": sha256(cubin), "cubin_bytes": len(cubin),
        "entries": entries(text),
        "opcode_census": {e: entry_census(text, e) for e in entries(text)},
        "launches": launches,
    }
    return meta


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "ptx"))
    ap.add_argument("--cubins", default=os.path.join(ROOT, ".kernels"))
    ap.add_argument("--builders", default=os.path.join(ROOT, "build", "cutlass"))
    ap.add_argument("names", nargs="*", help="kernels to build (default: all)")
    args = ap.parse_args()
    for d in (args.out, args.cubins, args.builders):
        os.makedirs(d, exist_ok=True)
    cutlass = cutlass_dir()
    versions = tool_versions(cutlass)
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    sources = {s: sha256(open(os.path.join(ROOT, s), "rb").read()) for s in SOURCES}
    for name in args.names or list(KERNELS):
        if name not in KERNELS:
            raise SystemExit(f"unknown kernel {name!r}; known: {', '.join(KERNELS)}")
        meta = build(name, cutlass, args.out, args.cubins, args.builders)
        meta.update({"versions": versions, "date": date, "sources_sha256": sources,
                     "command": "PYTHONPATH=. python " + " ".join(["scripts/cutlass_kernels.py"] + sys.argv[1:])})
        with open(os.path.join(args.out, name + ".json"), "w") as f:
            json.dump(meta, f, indent=1)
            f.write("\n")
        ls = meta["launches"]
        print(f"{name:24s} {len(meta['entries'])} entries  ptx {meta['ptx_bytes']:7d} B  "
              f"cubin {meta['cubin_bytes']:7d} B  "
              f"{len(ls)} launches  grid {ls[0]['grid']} block {ls[0]['block']} cluster {ls[0]['cluster']} "
              f"smem {ls[0]['shared_bytes']}  params {ls[0]['param_bytes']} B", flush=True)


if __name__ == "__main__":
    main()
