"""CUTLASS sm_90a kernels that need approximate special-function PTX (ex2/lg2/tanh.approx, rcp...): their PTX
fixtures, launch records and cubins, made exactly as scripts/cutlass_kernels.py makes the others (its build():
the PTX, the cubin, the host builder linked with scripts/cutlass/fake_cuda.cpp, three runs per case with
different memory fills, the blob bits that differ cleared).

    PYTHONPATH=. python scripts/cutlass_sfu_kernels.py                      # all (~6 min on 2 cores)
    PYTHONPATH=. python scripts/cutlass_sfu_kernels.py cutlass_fmha_f16     # some

Kept apart from cutlass_kernels.py so that the older fixtures (whose json pin that script's sources by sha256)
stay as they are. The GPU capture is `scripts/capture_cutlass.py --set sfu` (trace
traces/cutlass_sfu_kernels_sm90.npz); tests/test_cutlass_sfu.py replays it.
"""
import argparse
import datetime
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
import cutlass_kernels as CKN  # noqa: E402

EVT = "scripts/cutlass/gemm_evt_sm90.cu"
FMHA = "scripts/cutlass/fmha_sm90.cu"

KERNELS = {
    "cutlass_evt_gelu_bf16": {
        "ptx_source": EVT, "builder": EVT, "defines": ["-DTCEMU_EVT=1"],
        "what": "CollectiveBuilder KernelTmaWarpSpecializedCooperative, bf16 -> f32 accumulate -> f32, 128x128x64, "
                "1x1 cluster, EVT epilogue LinCombEltAct<GELU> (D = GELU(acc), erff), no C",
        "cases": [[256, 256, 128], [200, 136, 200]]},
    "cutlass_evt_gelu_taylor_bf16": {
        "ptx_source": EVT, "builder": EVT, "defines": ["-DTCEMU_EVT=2"],
        "what": "CollectiveBuilder KernelTmaWarpSpecializedCooperative, bf16 -> f32 accumulate -> f32, 128x128x64, "
                "1x1 cluster, EVT epilogue LinCombEltAct<GELU_taylor> (D = GELU_taylor(acc), tanh.approx.f32), "
                "no C",
        "cases": [[256, 256, 128], [200, 136, 200]]},
    "cutlass_fmha_f16": {
        "ptx_source": FMHA, "builder": FMHA, "defines": [],
        "what": "CUTLASS example 88_hopper_fmha forward, fp16 Q K V O, f32 accumulators, LSE f32, DefaultFusion, "
                "KernelTmaWarpSpecializedCooperative 128x64x64 (head dim 64), 1x1 cluster; outputs O and LSE",
        "cases": [[1, 2, 128, 128, 64], [1, 2, 256, 192, 64]]},
}
SOURCES = ["scripts/cutlass_kernels.py", "scripts/cutlass_sfu_kernels.py", "scripts/cutlass/record.h",
           "scripts/cutlass/fake_cuda.cpp", EVT, FMHA]
# the example-88 headers the FMHA kernel is made of (inside the wheel's cutlass_library/source)
FMHA_HEADERS = ["examples/88_hopper_fmha/" + p for p in (
    "collective/fmha_collective_load.hpp", "collective/fmha_collective_softmax.hpp",
    "collective/fmha_collective_tma.hpp", "collective/fmha_collective_tma_warpspecialized.hpp",
    "collective/fmha_common.hpp", "collective/fmha_epilogue.hpp", "collective/fmha_fusion.hpp",
    "device/device_universal.hpp", "kernel/fmha_kernel_builder.hpp", "kernel/fmha_kernel_tma.hpp",
    "kernel/fmha_kernel_tma_warpspecialized.hpp", "kernel/fmha_options.hpp", "kernel/fmha_tile_scheduler.hpp")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "ptx"))
    ap.add_argument("--cubins", default=os.path.join(ROOT, ".kernels"))
    ap.add_argument("--builders", default=os.path.join(ROOT, "build", "cutlass"))
    ap.add_argument("names", nargs="*", help="kernels to build (default: all)")
    args = ap.parse_args()
    for d in (args.out, args.cubins, args.builders):
        os.makedirs(d, exist_ok=True)
    clash = set(KERNELS) & set(CKN.KERNELS)
    if clash:
        raise SystemExit(f"{sorted(clash)} already defined in cutlass_kernels.py")
    CKN.KERNELS.update(KERNELS)   # build() reads its kernel table
    cutlass = CKN.cutlass_dir()
    versions = CKN.tool_versions(cutlass)
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    sources = {s: CKN.sha256(open(os.path.join(ROOT, s), "rb").read()) for s in SOURCES}
    for name in args.names or list(KERNELS):
        if name not in KERNELS:
            raise SystemExit(f"unknown kernel {name!r}; known: {', '.join(KERNELS)}")
        meta = CKN.build(name, cutlass, args.out, args.cubins, args.builders)
        if KERNELS[name]["ptx_source"] == FMHA:
            meta["example_sources_sha256"] = {
                "cutlass_library/source/" + h: CKN.sha256(open(os.path.join(cutlass, h), "rb").read())
                for h in FMHA_HEADERS}
        meta.update({"versions": versions, "date": date, "sources_sha256": sources,
                     "command": "PYTHONPATH=. python " + " ".join(["scripts/cutlass_sfu_kernels.py"] + sys.argv[1:])})
        with open(os.path.join(args.out, name + ".json"), "w") as f:
            json.dump(meta, f, indent=1)
            f.write("\n")
        ls = meta["launches"]
        print(f"{name:28s} {len(meta['entries'])} entries  ptx {meta['ptx_bytes']:7d} B  "
              f"cubin {meta['cubin_bytes']:7d} B  "
              f"{len(ls)} launches  grid {ls[0]['grid']} block {ls[0]['block']} cluster {ls[0]['cluster']} "
              f"smem {ls[0]['shared_bytes']}  params {ls[0]['param_bytes']} B", flush=True)


if __name__ == "__main__":
    main()
