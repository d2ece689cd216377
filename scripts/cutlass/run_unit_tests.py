"""CUTLASS's own sm90 GEMM unit tests (test/unit/gemm/device/sm90_gemm_*.cu), built unmodified and run under
`tcemu exec`, one googletest test per process (docs/guide.md, "CUTLASS's own examples").

    python scripts/cutlass/run_unit_tests.py --cutlass /tmp/cutlass42 --googletest /tmp/gtest \\
        --files sm90_gemm_bf16_bf16_bf16_tensor_op_f32 [--filter 'SM90*'] [--timeout 1800] [--markdown]

The CUTLASS tree is a release checkout with its tests (v4.2.0: `git archive v4.2.0 include tools test`);
googletest is a source tree (v1.17.0: `git archive v1.17.0`), built once with g++ into ~/.cache/tcemu/gtest
(include/ and libgtest.a). Nothing of either is copied into this repository. Each test file is built as
CUTLASS's CMake builds a unit test (test/unit/CMakeLists.txt, cutlass_test_unit_add_executable): the file with
the test main (test/unit/test_unit.cpp) and filter_architecture.cpp, include paths test/unit/common, include,
tools/util/include, the flags of run_examples.FLAGS plus CUTLASS_TEST_LEVEL=0, CUTLASS_TEST_ENABLE_CACHED_RESULTS=1
and CUTLASS_DEBUG_TRACE_LEVEL=0 (CMake's defaults), linked with libgtest and the driver (`-l:libcuda.so.1`: TMA
descriptors come from cuTensorMapEncodeTiled). Binaries are cached in ~/.cache/tcemu/cutlass-unit/STEM-KEY, KEY a
hash of nvcc's version, the flags, the test file, the CUTLASS headers, the unit-test headers and libgtest.

The table: file, test, result (googletest's OK / FAILED, or TIMEOUT past --timeout, or EXIT n when the program
ended without a verdict), the test's wall seconds (googletest's own "(N ms)", which includes the interpreter; the
process's wall time on TIMEOUT), and the kernel launches (tcemu exec --summary). Each test's launches are also
logged one line each as they end (TCEMU_EXEC_LAUNCH_LOG) in STEM-KEY.TEST.launches beside the binary, which shows
how far a timed-out sweep got."""
import argparse
import hashlib
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_examples import FLAGS, ROOT, SUMMARY, cache_root, exec_options, headers_digest  # noqa: E402

UNIT_FLAGS = [*FLAGS, "-DCUTLASS_TEST_LEVEL=0", "-DCUTLASS_TEST_ENABLE_CACHED_RESULTS=1",
              "-DCUTLASS_DEBUG_TRACE_LEVEL=0"]
DEVICE = os.path.join("test", "unit", "gemm", "device")
GTEST = os.path.join(os.path.expanduser("~"), ".cache", "tcemu", "gtest")
# (test file, googletest filter) that tests/frontends/test_cutlass_unit_tests.py reruns (TCEMU_CUTLASS_EXAMPLES=1):
# the runs of docs/guide.md's table that passed in minutes (a ping-pong TestAll is 20 minutes on a free core)
UNIT_RUNS = [
    ("sm90_gemm_f32_f32_f32_tensor_op_f32",
     "SM90_Device_Gemm_f32t_f32t_f32n_tensor_op_gmma_f32.128x128x32_1x1x1_cooperative"),
    ("sm90_gemm_f32_f32_f32_tensor_op_f32",
     "SM90_Device_Gemm_f32t_f32t_f32n_tensor_op_gmma_f32.128x128x32_1x1x1_cooperative_narrow_wgmma"),
    ("sm90_gemm_f16_f16_f32_tensor_op_f32_rs_cluster_warpspecialized_cooperative",
     "SM90_Device_Gemm_f16t_f16n_f32n_tensor_op_gmma_f32_cooperative.128x192x64_1x1x1"),
]


def gtest_library(googletest: str, dest: str = GTEST) -> str:
    """DEST (include/ and libgtest.a), built from the googletest source tree if libgtest.a is missing."""
    lib = os.path.join(dest, "libgtest.a")
    if os.path.exists(lib):
        return dest
    src = os.path.join(googletest, "googletest")
    if not os.path.isfile(os.path.join(src, "src", "gtest-all.cc")):
        raise SystemExit(f"--googletest {googletest}: no googletest/src/gtest-all.cc there")
    os.makedirs(dest, exist_ok=True)
    obj = os.path.join(dest, "gtest-all.o")
    subprocess.run(["nice", "-n", "19", "g++", "-std=c++17", "-O1", "-fPIC", "-I", os.path.join(src, "include"),
                    "-I", src, "-c", os.path.join(src, "src", "gtest-all.cc"), "-o", obj], check=True)
    subprocess.run(["ar", "rcs", lib + ".tmp", obj], check=True)
    subprocess.run(["cp", "-r", os.path.join(src, "include"), dest], check=True)
    os.rename(lib + ".tmp", lib)
    return dest


def nvcc_command(cutlass: str, gtest: str, stem: str, out: str):
    from tcemu.frontends.cuda import build as cudart_build  # the repository on sys.path only when run as a script
    unit = os.path.join(cutlass, "test", "unit")
    return ["nvcc", *UNIT_FLAGS, f'-DCUTLASS_TARGET_NAME="{stem}"', "-I", os.path.join(unit, "common"), "-I", unit,
            "-I", os.path.join(cutlass, "include"), "-I", os.path.join(cutlass, "tools", "util", "include"),
            "-I", os.path.join(gtest, "include"), os.path.join(cutlass, DEVICE, stem + ".cu"),
            os.path.join(unit, "test_unit.cpp"), os.path.join(unit, "common", "filter_architecture.cpp"),
            "-o", out, os.path.join(gtest, "libgtest.a"), "-lpthread",
            "-L" + cudart_build.library_dir(), "-l:" + cudart_build.DRIVER]


def binary_path(cutlass: str, gtest: str, stem: str, headers: str) -> str:
    h = hashlib.sha256()
    h.update(subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.encode())
    h.update(" ".join(UNIT_FLAGS).encode() + b"\0" + headers.encode())
    device = os.path.join(cutlass, DEVICE)
    for name in sorted(os.listdir(device)):  # the test file and every testbed header beside it
        if name == stem + ".cu" or name.endswith((".h", ".hpp")):
            with open(os.path.join(device, name), "rb") as fh:
                h.update(name.encode() + b"\0" + fh.read())
    for p in (os.path.join(cutlass, "test", "unit", "test_unit.cpp"), os.path.join(gtest, "libgtest.a")):
        with open(p, "rb") as fh:
            h.update(fh.read())
    return os.path.join(cache_root("cutlass-unit"), f"{stem}-{h.hexdigest()[:16]}")


def build(cutlass: str, gtest: str, stem: str, path: str) -> str:
    """The cached binary (built now, nice 19, if missing); '' or nvcc's log tail on failure."""
    if os.path.exists(path):
        return ""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    start = time.time()
    proc = subprocess.run(["nice", "-n", "19", *nvcc_command(cutlass, gtest, stem, tmp)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode:
        return proc.stdout[-3000:] or f"nvcc exit {proc.returncode}"
    os.rename(tmp, path)
    print(f"built {stem} in {time.time() - start:.0f} s: {path}", file=sys.stderr, flush=True)
    return ""


def run_group(cmd, env, cwd: str, timeout: float):
    """(exit status or "timeout", stdout, stderr) of CMD in a session of its own: on timeout the whole process
    group is killed (tcemu exec runs the program as its child, which a plain subprocess timeout leaves running)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                            env=env, cwd=cwd, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return "timeout", out, err


def _exec(path: str, args, sms, timeout: float, env_extra=None):
    cmd = [sys.executable, "-m", "tcemu.cli", "exec", *exec_options(sms), "--", path, *args]
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env_extra or {})}
    start = time.time()
    # in the binary's folder: a failing testbed writes error_Gemm_device_*.txt into the working directory
    rc, out, err = run_group(cmd, env, os.path.dirname(os.path.abspath(path)), timeout)
    return rc, out, err, time.time() - start


def parse_list(text: str):
    """`--gtest_list_tests` output -> ['Suite.Name', ...] (typed tests' '# TypeParam' comments dropped)."""
    tests, suite = [], None
    for line in text.splitlines():
        body = line.split("#", 1)[0].rstrip()
        if not body or body.startswith("tcemu exec"):
            continue
        if not line.startswith(" "):
            suite = body
        elif suite:
            tests.append(suite + body.strip())
    return tests


VERDICT = re.compile(r"^\[\s+(OK|FAILED|SKIPPED)\s+\] (\S+) \((\d+) ms\)", re.M)


def parse_verdict(out: str, test: str):
    """googletest's line for TEST: (OK | FAILED | SKIPPED, seconds) or None."""
    for word, name, ms in VERDICT.findall(out):
        if name == test:
            return word, int(ms) / 1000
    return None


def list_tests(path: str, sms, gfilter: str):
    rc, out, err, _ = _exec(path, ["--gtest_list_tests", f"--gtest_filter={gfilter}"], sms, 600)
    if rc != 0:
        raise SystemExit(f"{path} --gtest_list_tests: exit {rc}\n{out[-2000:]}\n{err[-2000:]}")
    return parse_list(out)


def run_test(path: str, test: str, sms, timeout: float):
    """One test in its own `tcemu exec` process; its output goes to PATH.TEST.out / .err, its launches to
    PATH.TEST.launches."""
    base = f"{path}.{test.replace('/', '_')}"
    log = base + ".launches"
    if os.path.exists(log):
        os.remove(log)
    rc, out, err, wall = _exec(path, [f"--gtest_filter={test}"], sms, timeout, {"TCEMU_EXEC_LAUNCH_LOG": log})
    for ext, text in ((".out", out), (".err", err)):
        with open(base + ext, "w") as fh:
            fh.write(text)
    verdict = parse_verdict(out, test)
    if rc == "timeout":
        result, seconds = "TIMEOUT", wall
    elif verdict:
        result, seconds = verdict
        if rc != 0 and result == "OK":
            result = f"OK, exit {rc}"
    else:
        result, seconds = f"EXIT {rc}", wall
    m = SUMMARY.search(err)
    launches = int(m.group(1)) if m else None
    if launches is None and os.path.exists(log):
        with open(log) as fh:
            launches = sum(1 for _ in fh)
    return {"result": result, "seconds": seconds, "wall": wall, "launches": launches, "rc": rc, "stdout": out,
            "stderr": err}


def table(rows, markdown: bool) -> str:
    head = ("file", "test", "result", "wall s", "launches")
    if markdown:
        return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] +
                         ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])
    widths = [max(len(str(x[i])) for x in [head, *rows]) for i in range(len(head))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head, *rows])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cutlass", required=True, help="a CUTLASS 4.2 source tree with test/")
    ap.add_argument("--googletest", help="a googletest source tree (built once into ~/.cache/tcemu/gtest)")
    ap.add_argument("--files", required=True,
                    help="comma-separated test files under test/unit/gemm/device, without .cu (sm90_gemm_...)")
    ap.add_argument("--filter", default="*", help="googletest filter of the tests to run (default: all)")
    ap.add_argument("--sm-count", type=int, help="tcemu exec --sm-count (default: all 132)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per test (default 1800)")
    ap.add_argument("--build-only", action="store_true", help="build (or find) the binaries, run nothing")
    ap.add_argument("--list", action="store_true", help="list each file's tests, run nothing")
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    opts = ap.parse_args(argv)
    if not os.path.exists(os.path.join(GTEST, "libgtest.a")) and not opts.googletest:
        ap.error(f"no {GTEST}/libgtest.a yet: pass --googletest SRC to build it")
    gtest = gtest_library(opts.googletest) if opts.googletest else GTEST
    stems = [s[:-3] if s.endswith(".cu") else s for s in opts.files.split(",")]
    missing = [s for s in stems if not os.path.isfile(os.path.join(opts.cutlass, DEVICE, s + ".cu"))]
    if missing:
        ap.error(f"--files: no {', '.join(missing)}.cu under {os.path.join(opts.cutlass, DEVICE)}")
    headers = headers_digest(opts.cutlass, ("include", os.path.join("tools", "util", "include"),
                                            os.path.join("test", "unit", "common")))
    rows, status = [], 0
    for stem in stems:
        path = binary_path(opts.cutlass, gtest, stem, headers)
        log = build(opts.cutlass, gtest, stem, path)
        if log:
            print(f"{stem}: nvcc failed:\n{log}", file=sys.stderr)
            rows.append((stem, "-", "build failed", "-", "-"))
            status = 1
            continue
        if opts.build_only:
            print(f"{stem}: {path}")
            continue
        tests = list_tests(path, opts.sm_count, opts.filter)
        if opts.list:
            print("\n".join(f"{stem}: {t}" for t in tests))
            continue
        for test in tests:
            r = run_test(path, test, opts.sm_count, opts.timeout)
            status |= r["result"] != "OK"
            rows.append((stem, test, r["result"], f"{r['seconds']:.0f}", "-" if r["launches"] is None
                         else r["launches"]))
            print("  ".join(str(c) for c in rows[-1]), file=sys.stderr, flush=True)
            if r["result"] != "OK":
                print(f"{test}: {r['stdout'][-3000:]}\n{r['stderr'][-3000:]}", file=sys.stderr)
    if rows:
        print(table(rows, opts.markdown))
    return status


if __name__ == "__main__":
    sys.exit(main())
