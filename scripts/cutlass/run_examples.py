"""CUTLASS's own Hopper examples, built unmodified and run under `tcemu exec` (docs/guide.md, "Run a CUDA program").

    python scripts/cutlass/run_examples.py --cutlass /tmp/cutlass42 [--only 48,49] [--build-only] [--markdown]

The CUTLASS tree is a release checkout (v4.2.0: `git archive v4.2.0 include tools examples | tar -x -C DIR`);
nothing of it is copied into this repository. Each example is one .cu, built with nvcc as CUTLASS's CMake builds
it (CUTLASS_CUDA_NVCC_FLAGS: --expt-relaxed-constexpr; CUTLASS_ENABLE_TENSOR_CORE_MMA=1) plus `-cudart shared`
and PTX for sm_90a, and cached in ~/.cache/tcemu/cutlass-examples/NAME-KEY (TCEMU_CACHE moves the root), KEY a
hash of nvcc's version, the flags, the example's source and the CUTLASS headers. The device-side random fills
include curand_kernel.h, which CUDA 13.0's toolkit lacks: it is in PyPI's nvidia-curand wheel (unzipped, not
installed: `pip download nvidia-curand --no-deps -d D && unzip D/*.whl 'nvidia/*/include/*' -d
~/.cache/tcemu/curand`), found with --curand (default ~/.cache/tcemu/curand/nvidia/cu13/include).

Each run uses the smallest problem the example's options allow and no profiling loop (--iterations=0); the
example verifies its own output against CUTLASS's reference GEMM and prints "Disposition: Passed" (49:
"<kernel>: Passed" for each of its 7 kernels; 57: once for each of its 4 schedules). The table: example,
arguments, the SMs the device reported (--sm-count: see EXAMPLES), the pass words seen, exit status, wall time,
kernel launches (tcemu exec --summary)."""
import argparse
import hashlib
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
GENCODE = "-gencode=arch=compute_90a,code=[sm_90a,compute_90a]"
FLAGS = ["-std=c++17", "-O1", "-cudart", "shared", GENCODE, "--expt-relaxed-constexpr",
         "-DCUTLASS_ENABLE_TENSOR_CORE_MMA=1", "-ftemplate-backtrace-limit=0"]

# (name, source under examples/, arguments, pass pattern, how many times it must be seen, SMs the device reports)
# The device-side random fills (BlockFillRandomUniform) launch 2 CTAs of 128 threads per SM, each thread starting
# its own curand XORWOW sequence (curand_init skips ahead by its thread index: ~30,000 warp instructions a warp);
# an example with device fills runs with as few SMs as its largest cluster needs (tcemu exec --sm-count)
EXAMPLES = [
    ("48", "48_hopper_warp_specialized_gemm/48_hopper_warp_specialized_gemm.cu",
     ["--m=128", "--n=128", "--k=64", "--iterations=0"], r"Disposition: Passed", 1, 8),
    ("49", "49_hopper_gemm_with_collective_builder/49_collective_builder.cu",
     ["--m=128", "--n=128", "--k=64", "--l=1"], r": Passed$", 7, 2),
    ("54", "54_hopper_fp8_warp_specialized_gemm/54_hopper_fp8_warp_specialized_gemm.cu",
     ["--m=128", "--n=128", "--k=128", "--iterations=0"], r"Disposition: Passed", 1, None),
    ("55", "55_hopper_mixed_dtype_gemm/55_hopper_mixed_dtype_gemm.cu",
     ["--m=128", "--n=128", "--k=128", "--g=128", "--mode=1", "--iterations=0"], r"Disposition: Passed", 1, 1),
    ("57", "57_hopper_grouped_gemm/57_hopper_grouped_gemm.cu",
     ["--m=128", "--n=128", "--k=64", "--groups=2", "--iterations=0"], r"Disposition: Passed", 4, 2),
    ("62", "62_hopper_sparse_gemm/62_hopper_sparse_gemm.cu",
     ["--m=128", "--n=128", "--k=128", "--l=1", "--iterations=0", "--warmup=0"], r"Disposition: Passed", 1, 2),
    # 67: N = 256, not 128: its 1x2 cluster rounds the grid up to two N tiles, and at N = 128 the second CTA's
    # producer skips the scale factors past N (predicated cp.async) while its consumer still reads them from shared
    # memory: a read of bytes nothing wrote (tcemu's kernel fault; dead values on a GPU, as that tile is never
    # stored). --zero-init-shared runs it to "Passed"
    ("67", "67_hopper_fp8_warp_specialized_gemm_with_blockwise_scaling/"
           "67_hopper_fp8_warp_specialized_gemm_with_blockwise_scaling.cu",
     ["--m=128", "--n=256", "--k=128", "--iterations=0", "--warmup=0"], r"Disposition: Passed", 1, None),
    # 88 and 77 (FMHA): " [OK]  <kernel>" for each kernel of the head dimension (88 at d = 32: a TMA kernel and a
    # warp-specialized cooperative one), its output O and log-sum-exp checked by the example's own reference kernels.
    # 77 runs its kernel only in its warm-up and timing loops: one warm-up, no timing
    ("88", "88_hopper_fmha/88_hopper_fmha.cu",
     ["--b=1", "--h=1", "--q=128", "--k=128", "--d=32", "--iterations=0", "--verify"], r"^ \[OK\] ", 2, 1),
    ("77", "77_blackwell_fmha/77_blackwell_fmha.cu",
     ["--b=1", "--h=1", "--q=128", "--k=128", "--d=64", "--iterations=0", "--warmup_iterations=1", "--verify"],
     r"^ \[OK\] ", 1, 1),
    # The CuTe tutorials as shipped (examples/cute/tutorial): the Hopper two print their timing line and check
    # nothing; the Blackwell five compare with a host GEMM and print "Execution is successful." (exact equality)
    # wgmma_sm90: K = 128, not 64: its prologue copies K_PIPE_MAX - 1 = 2 k-tiles whatever the number of k-tiles, so
    # at K = 64 its second cp.async reads 16 bytes past the end of A (tcemu's MemoryFault: K_TILE_FINDING); at 128
    # its first wgmma stops at the missing proxy fence (FINDINGS)
    ("cute-wgmma", "cute/tutorial/hopper/wgmma_sm90.cu", ["128", "128", "128"], r"^CUTE_GEMM:", 1, None),
    ("cute-wgmma-tma", "cute/tutorial/hopper/wgmma_tma_sm90.cu", ["256", "128", "64"], r"^CUTE_GEMM:", 1, None),
    ("cute-01", "cute/tutorial/blackwell/01_mma_sm100.cu", ["128", "256", "64"], r"^Execution is successful", 1,
     None),
    ("cute-02", "cute/tutorial/blackwell/02_mma_tma_sm100.cu", ["128", "256", "64"], r"^Execution is successful", 1,
     None),
    ("cute-03", "cute/tutorial/blackwell/03_mma_tma_multicast_sm100.cu", ["512", "1024", "64"],
     r"^Execution is successful", 1, None),
    ("cute-04", "cute/tutorial/blackwell/04_mma_tma_2sm_sm100.cu", ["512", "1024", "64"],
     r"^Execution is successful", 1, None),
    ("cute-05", "cute/tutorial/blackwell/05_mma_tma_epi_sm100.cu", ["512", "1024", "64"],
     r"^Execution is successful", 1, None),
]

# Flags an example's CMakeLists adds to CUTLASS's (88, 77: set_property COMPILE_FLAGS "--use_fast_math"; 77's
# fp16 target: target_compile_definitions FP16)
EXTRA_FLAGS = {"88": ["--use_fast_math"], "77": ["--use_fast_math", "-DFP16"]}
# The Blackwell ones: PTX for sm_100a instead of sm_90a, run with tcemu exec --arch sm100
SM100 = {"77", "cute-01", "cute-02", "cute-03", "cute-04", "cute-05"}
GENCODE_SM100 = "-gencode=arch=compute_100a,code=[sm_100a,compute_100a]"


# Runs whose expected end is tcemu's report of a fault in the example, not its pass word: the fragment of the report.
# cute-01 stores A and B with st.shared and hands them to tcgen05.mma (the async proxy) after __syncthreads() alone,
# with no fence.proxy.async between (PTX 9.7.16.6.5); tutorials 02-05 load through TMA and need none. cute-wgmma
# (wgmma_sm90) does the same with cp.async and wgmma: its mainloop waits (cp.async.wait_group 0) and arrives
# (wgmma.fence) with no fence.proxy.async, which wgmma's operands written by the generic proxy need (PTX 9.7.15:
# wgmma.mma_async reads shared memory through the async proxy)
FINDINGS = {"cute-01": "tcgen05.mma operand A reads shared address 0x400, written by the generic proxy (st.shared / "
                       "cp.async) with no fence.proxy.async since (PTX 9.7.16.6.5)",
            "cute-wgmma": "CTA (0, 0, 0), warp 3: operand A reads shared address 0x400, written by the generic proxy "
                          "(st.shared / cp.async / stmatrix) with no fence.proxy.async since (2048 such bytes)",
            # 77's softmax warp stores its row maxima with tcgen05.st and arrives on an mbarrier before its
            # tcgen05.wait::st; the correction warp loads them (docs/guide.md). With TCEMU_EXEC_RACECHECK=0 (the race
            # checks off) it runs to its own check and must print its [OK]
            "77": "warp 8: tcgen05.ld reads tensor memory lane 0, column 0 while tcgen05.st (line 413890) of warp 0 on it "
                  "has not completed (tcgen05.wait::st first)"}


# The same binary at K = 64 (cute-wgmma's note above): (arguments, fragment of tcemu's report)
K_TILE_FINDING = (["128", "128", "64"],
                  ["MemoryFault: cp.async.ca.shared.global.L2::128B [%r188], [%rd39], 16 (line 317), CTA (0, 0, 0), "
                   "warp 0: thread 0 accesses 16 bytes at global address ",
                   "outside every allocation: 0 bytes past the end of 'cudaMalloc#"])


def arch_for(name: str):
    """tcemu exec's --arch for an example: sm100 for the Blackwell ones, else None (exec's default, sm90)."""
    return "sm100" if name in SM100 else None


def flags_for(name: str):
    """The flags run_examples adds for one example beyond FLAGS: its CMakeLists' own, and the sm_100a target."""
    extra = list(EXTRA_FLAGS.get(name, ()))
    return extra + [GENCODE_SM100] if name in SM100 else extra


def cache_root(kind: str = "cutlass-examples") -> str:
    """~/.cache/tcemu/KIND (TCEMU_CACHE moves the root): cutlass-examples here, cutlass-unit for run_unit_tests.py."""
    return os.path.join(os.environ.get("TCEMU_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "tcemu"),
                        kind)


def headers_digest(cutlass: str, subs=("include", os.path.join("tools", "util", "include"),
                                       os.path.join("examples", "common"))) -> str:
    """One hash of every file under the CUTLASS tree's folders SUBS (their paths and bytes)."""
    h = hashlib.sha256()
    for sub in subs:
        top = os.path.join(cutlass, sub)
        for d, dirs, files in os.walk(top):
            dirs.sort()
            for f in sorted(files):
                p = os.path.join(d, f)
                h.update(os.path.relpath(p, cutlass).encode() + b"\0")
                with open(p, "rb") as fh:
                    h.update(fh.read())
    return h.hexdigest()


def nvcc_command(cutlass: str, curand: str, source: str, out: str, extra=()):
    """CUTLASS's examples link the driver (`cuda`); tcemu's libcuda.so.1 stands in for it at link time as at run
    time (a toolkit without a driver has no libcuda.so to link with). The link is not part of the cache key: it
    only adds libcuda.so.1 to the program's DT_NEEDED."""
    from tcemu.frontends.cuda import build as cudart_build  # the repository on sys.path only when run as a script
    src = os.path.join(cutlass, "examples", source)
    flags = [f for f in FLAGS if not (GENCODE_SM100 in extra and f == GENCODE)]
    return ["nvcc", *flags, *extra, "-I", os.path.join(cutlass, "include"),
            "-I", os.path.join(cutlass, "tools", "util", "include"), "-I", os.path.join(cutlass, "examples", "common"),
            "-I", os.path.dirname(src), "-I", curand, src, "-o", out,
            "-L" + cudart_build.library_dir(), "-l:" + cudart_build.DRIVER]


def binary_path(cutlass: str, curand: str, name: str, source: str, headers: str, extra=()) -> str:
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    with open(os.path.join(cutlass, "examples", source), "rb") as fh:
        text = fh.read()
    key = hashlib.sha256(b"\0".join([nvcc.encode(), " ".join([*FLAGS, *extra]).encode(), headers.encode(), text,
                                     curand.encode()])).hexdigest()[:16]
    return os.path.join(cache_root(), f"{name}-{key}")


def build(cutlass: str, curand: str, name: str, source: str, path: str, extra=()) -> str:
    """The cached binary (built now, nice 19, if it is missing); '' and the log's tail on failure."""
    if os.path.exists(path):
        return ""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    start = time.time()
    proc = subprocess.run(["nice", "-n", "19", *nvcc_command(cutlass, curand, source, tmp, extra)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode:
        return proc.stdout[-3000:]
    os.rename(tmp, path)
    print(f"built {name} in {time.time() - start:.0f} s: {path}", file=sys.stderr, flush=True)
    return ""


SUMMARY = re.compile(r"tcemu exec: (\d+) kernel launch(?:es)? \((\d+) distinct kernels?\)")


def exec_options(sms, arch=None):
    return ["--summary", "--launch-timeout", "0", *(["--arch", arch] if arch else []),
            *(["--sm-count", str(sms)] if sms else [])]


def run(path: str, args, sms, pattern: str, timeout: float, arch=None, extra_exec=()):
    """One run under tcemu exec; its output also goes to PATH.out / PATH.err beside the binary as it is written."""
    start = time.time()
    cmd = [sys.executable, "-m", "tcemu.cli", "exec", *exec_options(sms, arch), *extra_exec, "--", path, *args]
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with open(path + ".out", "w") as out_fh, open(path + ".err", "w") as err_fh:
        try:
            rc = subprocess.run(cmd, stdout=out_fh, stderr=err_fh, timeout=timeout, env=env).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    with open(path + ".out", errors="replace") as fh:
        out = fh.read()
    with open(path + ".err", errors="replace") as fh:
        err = fh.read()
    wall = time.time() - start
    passes = len(re.findall(pattern, out, flags=re.M))
    fails = len(re.findall(r"Failed|FAILED", out))
    m = SUMMARY.search(err)
    return {"rc": rc, "wall": wall, "passes": passes, "fails": fails, "launches": int(m.group(1)) if m else None,
            "kernels": int(m.group(2)) if m else None, "stdout": out, "stderr": err}


def fmha_record_check(path: str, dtype="float16"):
    """88 / 77 run with `tcemu exec --record PATH --launch-timeout S --continue-on-fault`, S cutting the example's
    reference_abs_diff launches (256 CTAs of 1024 threads each looping 1024 times over __syncthreads: about 10 CPU
    minutes each on the interpreter): the example's own comparison done here instead, on the recorded bytes. For each
    FMHA kernel launch followed by a reference-kernel launch: the largest and mean |O - O_ref| and |LSE - LSE_ref|
    against the example's thresholds (max < 1e-2, mean < 1e-3), O from the launch's outputs (its first output) and
    O_ref from the reference kernel's (the same byte count), LSE likewise (its second output, f32). Lines of text."""
    import json  # only this mode reads records
    import numpy as np  # the repository's dependency, not needed to build or run
    with open(path, encoding="utf-8") as fh:
        launches = json.load(fh)["launches"]
    out = []
    for i, launch in enumerate(launches):
        name = launch["entry"]
        if "reference" in name or "fmha" not in name.lower():
            continue
        ref = next((r for r in launches[i + 1:] if "reference_kernel" in r["entry"]), None)
        mine = sorted((b for b in launch["buffers"] if b["role"] == "output"), key=lambda b: b["address"])
        if ref is None or len(mine) != 2:
            out.append(f"launch {i} {name[:60]}...: no reference launch after it, or not 2 outputs")
            continue
        theirs = [b for b in ref["buffers"] if b["role"] == "output"]
        verdict = []
        for b, t, what in ((mine[0], np.dtype(dtype), "O"), (mine[1], np.dtype(np.float32), "LSE")):
            r = next(x for x in theirs if x["bytes"] == b["bytes"])
            d = np.abs(np.frombuffer(bytes.fromhex(b["expected"]), t).astype(np.float64) -
                       np.frombuffer(bytes.fromhex(r["expected"]), t).astype(np.float64))
            verdict.append((what, float(d.max()), float(d.mean()), d.max() < 1e-2 and d.mean() < 1e-3))
        out.append(f"launch {i} {name[:60]}...: " + ", ".join(
            f"{w} max {mx:.2e} mean {mn:.2e}" for w, mx, mn, _ in verdict) +
            (" -> within the example's thresholds" if all(v[3] for v in verdict) else " -> OUTSIDE the thresholds"))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cutlass", required=True, help="a CUTLASS 4.2 source tree (include/, tools/, examples/)")
    ap.add_argument("--curand", default=os.path.join(os.path.expanduser("~"), ".cache", "tcemu", "curand", "nvidia",
                                                     "cu13", "include"),
                    help="a folder holding curand_kernel.h (from the nvidia-curand wheel)")
    ap.add_argument("--only", help="comma-separated example names (48, 88, cute-01, ...), run in that order "
                                   "(default: all)")
    ap.add_argument("--build-only", action="store_true", help="build (or find) the binaries, run nothing")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run (default 1800)")
    ap.add_argument("--verbose", action="store_true", help="print each run's output")
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    ap.add_argument("--fmha-cut", type=float, metavar="SECONDS",
                    help="88 / 77: record the run and end each launch after SECONDS (the example's reference_abs_diff "
                         "launches), then compare the FMHA outputs with its reference kernel's here "
                         "(fmha_record_check)")
    opts = ap.parse_args(argv)
    if not os.path.isfile(os.path.join(opts.curand, "curand_kernel.h")):
        ap.error(f"--curand {opts.curand}: no curand_kernel.h there (see this script's help)")
    by_name = {e[0]: e for e in EXAMPLES}
    names = opts.only.split(",") if opts.only else list(by_name)
    unknown = [n for n in names if n not in by_name]
    if unknown:
        ap.error(f"--only: no example {', '.join(unknown)} (the examples: {', '.join(by_name)})")
    chosen = [by_name[n] for n in names]
    headers = headers_digest(opts.cutlass)
    rows, status = [], 0
    for name, source, args, pattern, count, sms in chosen:
        extra = flags_for(name)
        path = binary_path(opts.cutlass, opts.curand, name, source, headers, extra)
        log = build(opts.cutlass, opts.curand, name, source, path, extra)
        if log:
            print(f"example {name}: nvcc failed:\n{log}", file=sys.stderr)
            rows.append((name, " ".join(args), str(sms or 132), "build failed", "-", "-", "-"))
            status = 1
            continue
        if opts.build_only:
            print(f"{name}: {path}")
            continue
        if opts.fmha_cut and name in ("88", "77"):
            rec = path + ".record.json"
            r = run(path, args, sms, pattern, opts.timeout, arch_for(name),
                    ["--record", rec, "--launch-timeout", str(opts.fmha_cut), "--continue-on-fault"])
            lines = fmha_record_check(rec) if os.path.exists(rec) else [f"no record ({r['stderr'][-500:]})"]
            print(f"{name}:", *lines, sep="\n  ")
            ok = bool(lines) and all("within" in line for line in lines)
            status |= not ok
            rows.append((name, " ".join(args), str(sms or 132), f"{'PASS' if ok else 'FAIL'} (offline check of "
                         f"{len(lines)} kernel{'' if len(lines) == 1 else 's'})", str(r["rc"]), f"{r['wall']:.0f} s",
                         str(r["launches"])))
            continue
        r = run(path, args, sms, pattern, opts.timeout, arch_for(name))
        if opts.verbose:
            print(r["stdout"], r["stderr"], sep="\n", file=sys.stderr)
        finding = name in FINDINGS and not (name == "77" and os.environ.get("TCEMU_EXEC_RACECHECK") == "0")
        if finding:
            ok = r["rc"] == 1 and FINDINGS[name] in r["stderr"]
        else:
            ok = r["rc"] == 0 and r["passes"] == count and not r["fails"]
        status |= not ok
        launches = "-" if r["launches"] is None else \
            f"{r['launches']} ({r['kernels']} kernel{'' if r['kernels'] == 1 else 's'})"
        rows.append((name, " ".join(args), str(sms or 132),
                     (f"{'FINDING' if ok else 'FAIL'}: kernel fault" if finding else
                      f"{'PASS' if ok else 'FAIL'}: {r['passes']} passed, {r['fails']} failed"),
                     str(r["rc"]), f"{r['wall']:.0f} s", launches))
        if not ok:
            print(f"example {name} ({path}): exit {r['rc']}\n{r['stdout'][-2000:]}\n{r['stderr'][-3000:]}",
                  file=sys.stderr)
    if rows:
        head = ("example", "arguments", "SMs", "result", "exit", "wall", "launches")
        if opts.markdown:
            print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
            for r in rows:
                print("| " + " | ".join(f"`{c}`" if i == 1 else c for i, c in enumerate(r)) + " |")
        else:
            widths = [max(len(str(x[i])) for x in [head, *rows]) for i in range(len(head))]
            for r in [head, *rows]:
                print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    return status


if __name__ == "__main__":
    sys.exit(main())
