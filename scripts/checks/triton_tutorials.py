"""Run Triton's tutorials 01-10 on tcemu's Triton driver, with their own correctness checks.

    PYTHONPATH=. python scripts/checks/triton_tutorials.py PATH/TO/triton/python/tutorials [--only 01 03] [--json out.json]

Each tutorial runs in its own process with TCEMU_TRITON set (sm90; sm100 for the Blackwell parts), as a user
would run it: `python 01-vector-add.py`. tcemu's driver is switched on by the `triton.backends` entry point
when tcemu is installed, else by tcemu.triton.activate() before the tutorial starts. What is changed:

- the tutorials' benchmarks (`triton.testing.perf_report(...).run(...)`) are not run: they time launches over
  sizes up to 2^27 elements (GPU timing; on the emulator, days). Each is reported as skipped;
- where a tutorial hard-codes CUDA (`device="cuda"` tensors, `assert x.is_cuda`) or checks at sizes only a GPU
  runs in reasonable time (8192^3 matmuls), the edits listed in TUTORIALS below (each with its reason) are
  applied to a copy, and the tutorial's own check functions are called at the sizes given there.

A tutorial passes when it exits with 0 and prints no failure mark ("❌"). The tutorial sources are not part of
tcemu: pass a checkout of Triton's python/tutorials (3.9.0 tag).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CUDA_TENSORS = ('device="cuda"', "device=triton.runtime.driver.active.get_active_torch_device()")
# cuBLAS (Triton's libtriton binding loads libcublas.so) is GPU-only: the tutorial's own no-BLAS path is taken
NO_CUBLAS = ("nvidia.cublas.CublasLt(", "None and (")
CUDA_DEVICE_VAR = ('device = "cuda"', "device = triton.runtime.driver.active.get_active_torch_device()")
# name: (arch, edits [(old, new)], reason for the edits, code run after the tutorial's module, pytest -k filter)
TUTORIALS = {
    "01-vector-add": ("sm90", [], "", "", None),
    "02-fused-softmax": ("sm90", [], "", "", None),
    "03-matrix-multiplication": ("sm90", [], "", "", None),
    "04-low-memory-dropout": ("sm90", [], "", "", None),
    "05-layer-norm": ("sm90", [("torch.nn.functional.layer_norm(x, w_shape, weight, bias, eps)",
                                "torch.nn.functional.layer_norm(x.float(), w_shape, weight.float(), bias.float(), "
                                "eps)")],
                      "its reference is CPU torch's fp16 layer_norm backward, whose bias gradient is off the exact "
                      "sum by up to 0.076 (the check's atol is 0.01); computed in fp32 and rounded once, as CUDA "
                      "torch does",
                      "", None),
    "06-fused-attention": ("sm90", [], "", "", "test_op and 128-2-1"),   # its own test, N_CTX 128, H 2, Z 1
    "07-extern-functions": ("sm90", [("assert x.is_cuda and output_triton.is_cuda",
                                      "assert x.device == DEVICE and output_triton.device == DEVICE")],
                            "it asserts CUDA tensors (x.is_cuda)", "", None),
    "08-grouped-gemm": ("sm90", [CUDA_TENSORS], "tensors created on device='cuda'", "", None),
    "09-persistent-matmul": ("sm90", [CUDA_TENSORS, NO_CUBLAS], "tensors created on device='cuda'; cuBLAS (GPU-only) "
                             "left out, as the tutorial does where it finds none; its own check is run at "
                             "32^3 and 256x256x512 (the tutorial's 8192x8192x512 takes hours on the CPU)",
                             "validate(32, 32, 32, torch.float16)\nvalidate(256, 256, 512, torch.float16)\n"
                             "validate(256, 256, 512, torch.float8_e4m3fn)", None),
    "10-block-scaled-matmul": ("sm100", [CUDA_TENSORS, NO_CUBLAS, CUDA_DEVICE_VAR],
                               "tensors created on device='cuda' (or device = 'cuda'); cuBLAS "
                               "(GPU-only) left out, as the tutorial does where it finds none; its own check is run "
                               "at 256x256x512 (the tutorial's 8192^3 takes hours on the CPU) for mxfp8 and nvfp4 (its "
                               "--format mixed and mxfp4 end in the tutorial's own UnboundLocalError, a_scale_cublas)",
                               "for fmt in ('mxfp8', 'nvfp4'):\n"
                               "    validate_block_scaled(256, 256, 512, block_scale_type=fmt)", None),
}
# runs the tutorial in the child process: tcemu's driver on, benchmarks skipped
BOOT = r"""
import os, runpy, sys
import triton, triton.testing
if "tcemu" not in triton.backends.backends:   # tcemu not installed: switch it on by hand
    import tcemu.triton
    tcemu.triton.activate(os.environ["TCEMU_TRITON"])
def _skip(self, *a, **k):
    print(f"[tcemu] benchmark {getattr(self, 'fn', self).__name__} skipped: it times GPU launches")
triton.testing.Mark.run = _skip
path, after = sys.argv[1], sys.argv[2]
sys.argv = [path]
ns = runpy.run_path(path, run_name="__main__" if not after else "tutorial")
if after:
    exec(after, ns)
"""


def run_one(src_dir, name, work, timeout):
    arch, edits, reason, after, pytest_k = TUTORIALS[name]
    path = os.path.join(src_dir, f"{name}.py")
    text = open(path).read()
    applied = []
    for old, new in edits:
        if old in text:
            text = text.replace(old, new)
            applied.append(old)
    if after:   # the tutorial's own main block is replaced by its check functions at CPU sizes
        text = text.replace('if __name__ == "__main__":', 'if __name__ == "__main__" and False:')
    # the copy sits where a Triton checkout has it: tutorial 07 finds libdevice at ../../third_party/nvidia/...
    os.makedirs(os.path.join(work, "python", "tutorials"), exist_ok=True)
    lib = os.path.join(work, "third_party", "nvidia", "backend", "lib")
    if not os.path.exists(lib):
        import triton
        os.makedirs(os.path.dirname(lib), exist_ok=True)
        os.symlink(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "lib"), lib)
    run_path = os.path.join(work, "python", "tutorials", f"{name}.py")
    with open(run_path, "w") as f:
        f.write(text)
    env = dict(os.environ, TCEMU_TRITON=arch, PYTHONPATH=os.pathsep.join(
        [ROOT, os.path.join(ROOT, "scripts", "checks")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")   # Triton 3.9's default, without its warning
    if pytest_k:
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "triton_peer_plugin",
               "--tcemu-launch-timeout", str(timeout), run_path, "-k", pytest_k, "--rootdir", os.path.dirname(run_path)]
    else:
        cmd = [sys.executable, "-c", BOOT, run_path, after]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=env, cwd=os.path.dirname(run_path), capture_output=True, text=True,
                           timeout=timeout)
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = "timeout", (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else \
            (e.stdout or "")
    ok = rc == 0 and "❌" not in out
    return {"tutorial": name, "arch": arch, "passed": ok, "returncode": rc, "seconds": round(time.time() - t0, 1),
            "edits": applied, "why_edited": reason if applied or after else "", "checks_run": after or pytest_k or
            "the tutorial's own module-level checks", "output_tail": out[-3000:]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tutorials", help="Triton's python/tutorials folder (3.9.0)")
    ap.add_argument("--only", nargs="*", help="tutorial numbers, e.g. 01 03")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--timeout", type=float, default=3600)
    args = ap.parse_args(argv)
    names = [n for n in TUTORIALS if not args.only or n[:2] in args.only]
    results = []
    with tempfile.TemporaryDirectory() as work:
        for name in names:
            r = run_one(args.tutorials, name, work, args.timeout)
            results.append(r)
            print(f"{name:28s} {r['arch']:6s} {'pass' if r['passed'] else 'FAIL'} {r['seconds']:8.1f} s"
                  + (f"  (edited: {r['why_edited']})" if r["why_edited"] else ""), flush=True)
            if not r["passed"]:
                print("    " + r["output_tail"][-1500:].replace("\n", "\n    "))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if all(r["passed"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
