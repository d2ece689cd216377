"""The tcemu command line: decode, instr, addresses, explain, swizzle, banks, fuzz, replay, run, exec, serve.

The subcommands live in tcemu/tools (commands.py, replay_cmd.py, run.py, exec_cmd.py) and tcemu/serve/cli.py; this module
builds the parser and turns every way a command can end into an exit status: 0 ok, 1 findings, 2 bad input (one
line on stderr), 130 interrupted (one line), and silence when the reader of stdout goes away (`| head`)."""
import argparse
import errno
import os
import sys

from . import __version__
from .core.arch import ARCHES, TCGEN05_KINDS as KINDS
from .core.errors import TcemuError
from .tools.names import tidy

EPILOG = """exit status:
  0    ok: no findings; every trace, check and comparison matched
  1    findings: a descriptor or lint error, a trace mismatch, a failed --check or fuzz disagreement
  2    bad input: one line on stderr names the field and the rule
  130  interrupted (Ctrl-C): one line on stderr
  141  stdout closed early (e.g. `tcemu replay traces | head -1`): nothing more is printed

Every reporting subcommand takes --json (one JSON object on stdout). tcemu SUBCOMMAND -h for its options."""

# optional dependencies: the import name, what it is for, and how to install it
OPTIONAL = {"matplotlib": ("pictures (--png, --svg)", "pip install 'tcemu[pictures]'"),
            "triton": ("compiling Triton kernels (tcemu.triton)", "pip install 'tcemu[triton]'"),
            "dask": ("spreading tcemu.matmul over a cluster (scheduler=)", "pip install 'tcemu[dask]'"),
            "distributed": ("spreading tcemu.matmul over a cluster (scheduler=)", "pip install 'tcemu[dask]'"),
            "hypothesis": ("tcemu.strategies and the property tests", "pip install 'tcemu[test]'"),
            "pycute": ("the fuzzer's independent oracle (CuTe's layout algebra)",
                       "pip install --no-deps nvidia-cutlass")}


def install_hint(name: str):
    """'NAME is needed for WHAT: HOW' for an optional dependency's import name (or a submodule of it), else None."""
    top = (name or "").split(".")[0]
    if top not in OPTIONAL:
        return None
    what, how = OPTIONAL[top]
    return f"{top} is not installed; it is needed for {what}: {how}"


def _command(name: str):
    """tools/commands.py's NAME, loaded when the subcommand runs (start-up cost: the layout models and numba)."""
    def run(args) -> int:
        from .tools import commands  # start-up cost (the layout models, numba), loaded when the command runs
        return getattr(commands, name)(args)
    return run


def _replay(args) -> int:
    from .tools.replay_cmd import replay_command  # start-up cost (the trace readers), loaded when replay runs
    return replay_command(args)


def _fuzz(args) -> int:
    from .testing.fuzz import campaign  # start-up cost (the fuzzer and its oracle), loaded when fuzz runs
    from .tools import commands  # start-up cost, as above
    result = campaign(seconds=args.seconds, seed=args.seed, arch=args.arch)
    rate = result["cases"] / max(result["seconds"], 1e-9)
    if args.json:
        commands.emit({**result, "cases_per_second": round(rate, 1), "ok": not result["disagreement"]})
        return 1 if result["disagreement"] else 0
    print(f"{result['cases']} cases ({result['elements']:,} addresses) in {result['seconds']:.1f} s, {rate:,.0f} cases/s")
    if result["disagreement"]:
        print("DISAGREEMENT, minimal reproducer:\n  " + result["disagreement"])
        return 1
    print("tcemu and the pycute formulation agree on every case")
    return 0


def _explain(args) -> int:
    from .serve.export import explain_html  # start-up cost (the page server), loaded when explain runs
    from .tools import commands  # start-up cost, as above
    return commands.explain_cmd(args, html_writer=explain_html)


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line (`tcemu decode: error: ...`) and exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} -h)\n")


def _json(p):
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def _arch(p, what="descriptor format"):
    p.add_argument("--arch", default="sm90", choices=ARCHES, help=f"{what}: sm90 (wgmma), sm100 / sm103 (tcgen05); "
                                                                  "default sm90")


LIGHT = ("decode", "addresses", "explain", "instr", "swizzle", "banks", "fuzz", "replay")   # parsers that load no model


def _subcommand(argv):
    """The subcommand argv names (its first word that is no option), else None."""
    return next((word for word in (sys.argv[1:] if argv is None else argv) if not word.startswith("-")), None)


def build_parser(command=None) -> argparse.ArgumentParser:
    """The parser of every subcommand; with a known `command`, run's, exec's and serve's only when it names them.
    Start-up cost: `run` and `serve` bring the PTX interpreter and the page server (a second or more), which
    `tcemu exec` and `tcemu decode` do not need; they are loaded here, under main's handlers, so that Ctrl-C while
    they load is one line and 130 like any other."""
    def heavy(name):
        return command in (name, None) or command not in LIGHT + ("run", "exec", "serve")
    ap = _Parser(prog="tcemu", description="Bit-accurate CPU emulator of tensor-core operand reads.", epilog=EPILOG,
                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", action="version", version=f"tcemu {__version__}", help="print the version and exit")
    sub = ap.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")
    p = sub.add_parser("decode", help="decode and validate a matrix descriptor")
    p.add_argument("descriptor", help="64-bit descriptor, e.g. 0x4000004000010040")
    _arch(p)
    p.add_argument("--dtype", help="element type for the layout's units, e.g. bf16 (default: bytes)")
    p.add_argument("--major", choices=["K", "MN"], help="operand major-ness (default: show both)")
    _json(p)
    p.set_defaults(run=_command("decode_cmd"))
    p = sub.add_parser("addresses", help="absolute shared-memory address of every operand element")
    p.add_argument("descriptor", help="64-bit matrix descriptor, e.g. 0x4000004000010040")
    p.add_argument("--rows", type=int, required=True, help="M (operand A) or N (operand B)")
    p.add_argument("--k", type=int, required=True, help="K elements per row")
    p.add_argument("--dtype", required=True, help="element type, e.g. bf16, tf32, e4m3")
    p.add_argument("--major", default="K", choices=["K", "MN"], help="operand major-ness (default K)")
    _arch(p)
    _json(p)
    p.set_defaults(run=_command("addresses_cmd"))
    p = sub.add_parser("explain", help="a descriptor in plain words, with lints for known traps")
    p.add_argument("descriptor", help="64-bit matrix descriptor, e.g. 0x4000004000010040")
    _arch(p)
    p.add_argument("--dtype", default="bf16", help="element type (default bf16)")
    p.add_argument("--major", default="K", choices=["K", "MN"], help="operand major-ness (default K)")
    p.add_argument("--rows", type=int, default=64, help="M (A) or N (B) (default 64)")
    p.add_argument("--k", type=int, help="K elements (default: one instruction's K)")
    p.add_argument("--instr", help="sm100: a tcgen05 instruction descriptor (32-bit); with --kind, it sets the "
                                   "operand's type, major-ness and extent")
    p.add_argument("--kind", choices=KINDS, help="with --instr: the instruction's .kind")
    p.add_argument("--operand", default="a", choices=["a", "b", "A", "B"],
                   help="which operand the descriptor is (with --sparse: A's K/2 stored elements or B's K)")
    p.add_argument("--cta-group", type=int, choices=[1, 2], help="with --instr: cta_group::1 or ::2 (default: 2 for "
                                                                "M = 256, else 1); each CTA of a pair holds half of "
                                                                "A's rows and B's columns")
    p.add_argument("--form", choices=["packed", "padded"], help="fp4 / fp6 in shared memory (default: fp6 padded, "
                                                               "e2m1 packed; with --instr the kind decides)")
    p.add_argument("--tile", help="ROWSxK of the whole tile the kernel keeps in shared memory: the read must fit")
    p.add_argument("--sparse", action="store_true", help="sm90 wgmma.mma_async.sp: A's K/2 stored elements, B's K")
    p.add_argument("--ws", action="store_true", help="with --instr: tcgen05.mma.ws (its shapes)")
    p.add_argument("--png", help="draw the operand's shared-memory map")
    p.add_argument("--svg", help="the same as SVG")
    p.add_argument("--html", help="the operand's map, text and lints as one self-contained HTML file")
    _json(p)
    p.set_defaults(run=_explain)
    p = sub.add_parser("instr", help="decode and check a tcgen05 instruction descriptor (sm100)")
    p.add_argument("value", help="the 32-bit value, e.g. 0x8400490 (or CuTe's 64-bit runtime form, value << 32)")
    p.add_argument("--kind", required=True, choices=KINDS, help="the instruction's .kind, which decides how the "
                                                               "fields read")
    p.add_argument("--ws", action="store_true", help="check the shape rules of tcgen05.mma.ws (M 32 / 64 / 128)")
    _json(p)
    p.set_defaults(run=_command("instr_cmd"))
    p = sub.add_parser("swizzle", help="show a swizzle atom: which logical 16-byte chunk each physical chunk holds")
    p.add_argument("mode", help="none, 32B, 64B, 128B or 128B_base32B (sm100)")
    p.add_argument("--base-offset", type=int, default=0, help="the descriptor's base offset, 0-7 (default 0)")
    p.add_argument("--png", help="also draw the atom into this .png or .svg file")
    _json(p)
    p.set_defaults(run=_command("swizzle_cmd"))
    p = sub.add_parser("banks", help="bank conflicts of one warp-wide shared-memory instruction")
    p.add_argument("--op", required=True, help="e.g. ld.shared.v4.b32, ldmatrix.x4.trans, stmatrix.x2")
    p.add_argument("--addresses", help="32 byte addresses, space- or comma-separated")
    p.add_argument("--pattern", help="address as an expression of the thread index t, e.g. '(t%%8)*128+(t//8)*16'")
    p.add_argument("--desc", help="descriptor of a tile; thread t accesses (--rows-expr, --cols-expr) of it")
    p.add_argument("--rows-expr", default="t % 8", help="with --desc: the row thread t accesses (default 't %% 8')")
    p.add_argument("--cols-expr", default="0", help="with --desc: the K column thread t accesses (default 0)")
    p.add_argument("--tile-rows", type=int, default=64, help="with --desc: rows of the tile (default 64)")
    p.add_argument("--tile-k", type=int, default=64, help="with --desc: K columns of the tile (default 64)")
    p.add_argument("--dtype", default="bf16", help="with --desc: element type (default bf16)")
    p.add_argument("--major", default="K", choices=["K", "MN"], help="with --desc: major-ness (default K)")
    p.add_argument("--mask", default="0xffffffff", help="active threads (ld/st), a 32-bit mask (default all)")
    p.add_argument("--png", help="write a lanes x banks heat map")
    _json(p)
    p.set_defaults(run=_command("banks_cmd"))
    p = sub.add_parser("fuzz", help="fuzz address resolution against CuTe's layout algebra (pycute)")
    p.add_argument("--seconds", type=float, default=10.0, help="how long to run (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random cases (default 0)")
    _arch(p, "which descriptors and instructions to draw")
    _json(p)
    p.set_defaults(run=_fuzz)
    if heavy("run"):
        from .tools.run import add_parser as add_run  # start-up cost, as above
        add_run(sub)
    if heavy("exec"):
        from .tools.exec_cmd import add_parser as add_exec  # start-up cost, as above
        add_exec(sub)
    if heavy("serve"):
        from .serve.cli import add_parser as add_serve  # start-up cost, as above
        add_serve(sub)
    p = sub.add_parser("replay", help="replay hardware traces and print a match table")
    p.add_argument("paths", nargs="+", help="trace files (.npz) or folders of them")
    p.add_argument("--progress", action="store_true", help="report progress on stderr even when it is not a "
                                                            "terminal (it is shown on a terminal anyway)")
    _json(p)
    p.set_defaults(run=_replay)
    return ap


def _stdout_gone():
    """The reader of stdout went away: no more output, and no complaint when Python flushes at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout is no file (a test's capture)
        pass
    return 141


class _Interrupts:
    """Remembers a Ctrl-C that Python drops: KeyboardInterrupt raised inside a finalizer (a half-read ZipFile
    collected while a trace loads) is only reported through sys.unraisablehook, and the command would run on to a
    normal exit. Other unraisable exceptions go to the hook that was there."""

    def __init__(self):
        self.seen, self.old = False, None

    def __enter__(self):
        self.old = sys.unraisablehook
        sys.unraisablehook = self._hook
        return self

    def _hook(self, unraisable):
        if isinstance(unraisable.exc_type, type) and issubclass(unraisable.exc_type, KeyboardInterrupt):
            self.seen = True
        else:
            self.old(unraisable)

    def __exit__(self, *exc):
        if sys.unraisablehook is self._hook:
            sys.unraisablehook = self.old


def main(argv=None) -> int:
    try:
        with _Interrupts() as ctrl_c:
            args = build_parser(_subcommand(argv)).parse_args(argv)
            status = args.run(args)
            if ctrl_c.seen:   # raised inside a finalizer and dropped there
                raise KeyboardInterrupt
            return status
    except TcemuError as e:  # bad input: one line naming the field and the rule, never a traceback
        print(f"tcemu: error: {type(e).__name__}: {tidy(str(e))}".replace("\n", "; "), file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's status for SIGINT
        clear = "\r\033[K" if sys.stderr.isatty() else ""  # a terminal: over the ^C and any progress line
        print(f"{clear}tcemu: interrupted", file=sys.stderr)
        # an object the interrupt left half-built (numpy's np.load inside zipfile) may complain when it is collected
        # at exit ("Exception ignored in ZipFile.__del__"): the one line above is all an interrupt prints
        sys.unraisablehook = lambda unraisable: None
        return 130
    except BrokenPipeError:  # `tcemu replay traces | head -1`
        return _stdout_gone()
    except OSError as e:
        if e.errno == errno.EPIPE:
            return _stdout_gone()
        raise
    except ModuleNotFoundError as e:
        hint = install_hint(e.name)
        if hint is None:
            raise
        print(f"tcemu: error: {hint}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
