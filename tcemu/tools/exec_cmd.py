"""tcemu exec [OPTIONS] -- PROGRAM [ARGS...]: run an unmodified CUDA program with tcemu's libcudart.so, so that
every kernel it launches runs on tcemu's PTX interpreter (bit-exact wgmma / tcgen05 / TMA), on the CPU.

Build the program with the shared CUDA runtime and PTX for the emulated GPU:
  nvcc -cudart shared -gencode=arch=compute_90a,code=[sm_90a,compute_90a] prog.cu -o prog
(--arch sm100: compute_100a / sm_100a). The library is built with g++ on first use (~/.cache/tcemu/cudart;
TCEMU_CACHE moves it). Streams run in order and synchronously; events measure wall time. A call tcemu does not
implement stops the program naming the call and its caller (exit status 2); a kernel fault prints tcemu's report
and ends the program with status 1 (--continue-on-fault: the launch returns cudaErrorLaunchFailure instead).
Leaked and doubly freed device memory is reported at exit. docs/guide.md, "Run a CUDA program: tcemu exec".

exit status: the program's own, or 1 after a kernel fault, 2 for a call or program tcemu cannot run."""
import argparse
import os
import shutil
import subprocess
import sys

from ..frontends.cuda import build, elf
from ..frontends.cuda.build import CudaExecError


def _program(name: str) -> str:
    path = name if os.sep in name else shutil.which(name)
    if not path or not os.path.isfile(path):
        raise CudaExecError("PROGRAM", f"{name}: no such program")
    if not os.access(path, os.X_OK):
        raise CudaExecError("PROGRAM", f"{name} is not executable")
    return path


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < 1e9:
        raise argparse.ArgumentTypeError(f"must be a number of seconds (0: no limit), got {text!r}")
    return value


def _sms(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 148:
        raise argparse.ArgumentTypeError(f"must be a number of SMs from 1 to 148, got {text!r}")
    return int(text)


def environment(args, path: str, info) -> dict:
    """The program's environment: tcemu's libcudart first on the search path (and preloaded when the program
    needs a libcudart itself, so an RPATH to the real one cannot win), and the settings it reads."""
    libdir = build.library_dir()
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (libdir, env.get("LD_LIBRARY_PATH")) if p)
    if info is not None and info.cudart:
        soname = info.cudart if info.cudart in build.SONAMES else build.SONAMES[0]
        preload = [os.path.join(libdir, soname)]
        if build.DRIVER in info.needed:   # linked with -lcuda: tcemu's empty libcuda.so.1, never the real driver
            preload.append(os.path.join(libdir, build.DRIVER))
        env["LD_PRELOAD"] = " ".join(p for p in (*preload, env.get("LD_PRELOAD")) if p)
    env["TCEMU_EXEC_ARCH"] = args.arch
    env["TCEMU_EXEC_CHECK_LAYOUTS"] = "1" if args.check_layouts else "0"
    env["TCEMU_EXEC_CONTINUE_ON_FAULT"] = "1" if args.continue_on_fault else "0"
    env["TCEMU_EXEC_PYTHON"] = sys.executable
    env["TCEMU_EXEC_SYSPATH"] = os.pathsep.join(os.path.abspath(p) if p else os.getcwd() for p in sys.path)
    if args.sm_count:
        env["TCEMU_EXEC_SMS"] = str(args.sm_count)
    else:
        env.pop("TCEMU_EXEC_SMS", None)
    env["TCEMU_EXEC_ZERO_INIT_SHARED"] = "1" if args.zero_init_shared else "0"
    env["TCEMU_EXEC_TIMEOUT"] = repr(args.launch_timeout)
    env["TCEMU_EXEC_SUMMARY"] = "1" if args.summary else "0"
    if args.record:
        env["TCEMU_EXEC_RECORD"] = os.path.abspath(args.record)
    else:
        env.pop("TCEMU_EXEC_RECORD", None)
    return env


def exec_command(args) -> int:
    full = 148 if args.arch == "sm100" else 132
    if args.sm_count and args.sm_count > full:
        raise CudaExecError("--sm-count", f"{args.sm_count} is more SMs than the {args.arch} GPU has ({full})")
    argv = list(args.args)
    if argv and argv[0] == "--":
        argv = argv[1:]
    path = _program(args.program)
    info = elf.read(path)
    if info is not None and info.static_cudart:
        raise CudaExecError("PROGRAM", f"{args.program} links the CUDA runtime statically (nvcc's default, "
                                       "-cudart static), which tcemu cannot replace: rebuild it with -cudart shared")
    env = environment(args, path, info)
    proc = subprocess.run([path, *argv], env=env)
    return proc.returncode if proc.returncode >= 0 else 128 - proc.returncode


def add_parser(sub):
    p = sub.add_parser("exec", help="run an unmodified CUDA program (built with -cudart shared) on the CPU",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--arch", default="sm90", choices=["sm90", "sm100"],
                   help="the GPU the program sees: sm90 (H100 SXM, runs sm_90a PTX) or sm100 (B200, runs sm_100a "
                        "PTX); default sm90")
    p.add_argument("--check-layouts", action=argparse.BooleanOptionalAction, default=True,
                   help="check that every tensor-core operand copied from global memory is a coherent tile of its "
                        "source array (default on; --no-check-layouts skips it)")
    p.add_argument("--continue-on-fault", action="store_true",
                   help="after a kernel fault, return cudaErrorLaunchFailure from the launch (and from every later "
                        "synchronising call) instead of ending the program with status 1")
    p.add_argument("--record", metavar="OUT.json",
                   help="write every launch as a launch record (with its buffers' bytes before and after) to "
                        "OUT.json, and each module's PTX beside it; replay with `tcemu run OUT.json --launch I`")
    p.add_argument("--zero-init-shared", action="store_true",
                   help="shared memory starts as zeros; by default a thread reading a shared byte nothing wrote "
                        "is a kernel fault (on a GPU: whatever an earlier CTA left there)")
    p.add_argument("--sm-count", type=_sms, metavar="N",
                   help="the device reports N streaming multiprocessors (1-132 on sm90, 1-148 on sm100) instead of "
                        "all of them, as a MIG slice does; programs that size their grids by the SM count (CUTLASS's "
                        "device-side random fills, persistent kernels) then launch fewer CTAs")
    p.add_argument("--launch-timeout", type=_seconds, default=600.0, metavar="SECONDS",
                   help="each launch's wall-clock budget: past it the launch ends in BudgetExceeded naming what every "
                        "unfinished warp was doing (a kernel fault); 0: no limit; default 600")
    p.add_argument("--summary", action="store_true",
                   help="at exit, print how many kernels the program launched, how often each, and the seconds "
                        "the interpreter spent on them (stderr)")
    p.add_argument("program", metavar="PROGRAM", help="the program (a path, or a name found on PATH)")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="the program's own arguments")
    p.set_defaults(run=exec_command)
