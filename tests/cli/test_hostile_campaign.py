"""Hostile-input campaign (tests/support/campaign.py: the rule, the harness, the shared values) over the entry
points of the command line: argv lists, valid and hostile; every error is one line and a nonzero exit, no traceback."""
import contextlib
import io
import os
import tempfile

import pytest
from hypothesis import given, strategies as st

from tcemu.cli import main as cli_main

from campaign import (CLI_WEIGHT, D100, D90, FAILURES, TID_PTX, _classify, _settings, trace_files,
                      campaign_limits)  # noqa: F401 (campaign_limits: a fixture)

pytestmark = pytest.mark.usefixtures("campaign_limits")


def _png(d):
    return os.path.join(d, "tcemu_campaign.png")


@st.composite
def cli_argv(draw):
    """(argv, bad): one tcemu invocation; bad=True when some argument must make it fail."""
    tmp = tempfile.gettempdir()
    bad = False

    def pick(valid, hostile, p=0.2):
        nonlocal bad
        if draw(st.integers(0, 99)) < p * 100:
            bad = True
            return draw(st.sampled_from(hostile))
        return draw(st.sampled_from(valid))

    desc90 = [hex(d.encode()) for d in D90]
    bad_desc = ["0xzz", "0x" + "f" * 5000, "9" * 5000, "-1", hex(1 << 64), "", "1e3", "0x" + "_" * 10]
    bad_int = ["-1", "0", "1e400", "nan", "x", "9" * 5000, "0x10"]
    bad_png = ["/nonexistent/x.png", "noext", tmp, "/proc/tcemu_x.png", "x.jpg", ""]
    cmd = draw(st.sampled_from(["decode", "addresses", "explain", "instr", "swizzle", "banks", "fuzz", "replay", "run",
                                "serve"]))
    if cmd == "decode":
        argv = ["decode", pick(desc90, bad_desc)]
        if draw(st.booleans()):
            argv += ["--dtype", pick(["bf16", "tf32", "u8"], ["x", "f32", "", "b" * 3000])]
        if draw(st.booleans()):
            argv += ["--arch", pick(["sm90", "sm100"], ["sm80", "", "SM90"])]
    elif cmd == "addresses":
        argv = ["addresses", pick(desc90, bad_desc), "--rows", pick(["8", "64"], bad_int), "--k",
                pick(["16"], bad_int), "--dtype", pick(["bf16", "f16"], ["x", "b1 "])]
        if draw(st.booleans()):
            argv.append("--json")
    elif cmd == "explain" and draw(st.integers(0, 4)):
        argv = ["explain", pick(desc90, bad_desc), "--dtype", pick(["bf16", "e4m3"], ["x"]), "--rows",
                pick(["64", "8"], bad_int)]
        if draw(st.integers(0, 9)) == 0:
            argv += ["--png", pick([_png(tmp)], bad_png, 0.7)]
        if draw(st.integers(0, 3)) == 0:  # main's options: the resident tile, the sparse operand, the HTML page
            argv += ["--tile", pick(["64x256", "128x64"], ["x", "0x0", "-64x16", "9" * 5000, "64", "64x16x2"])]
        if draw(st.integers(0, 5)) == 0:
            argv += ["--sparse", "--operand", pick(["a", "b"], ["c"])]
        if draw(st.integers(0, 9)) == 0:
            argv += ["--html", pick([os.path.join(tmp, "tcemu_campaign.html")],
                                    ["/nonexistent/x.html", "x.htm", tmp, "/proc/tcemu.html", ""], 0.7)]
    elif cmd == "explain":
        if True:
            argv = ["explain", pick([hex(d.encode()) for d in D100], bad_desc), "--instr",
                    pick(["0x8400490", "0x10400490"], ["0xzz", "-1", hex((1 << 32) | 1), "0x" + "f" * 5000]),
                    "--kind", pick(["f16"], ["x", "f32"]), "--operand", pick(["a", "b"], ["c"])]
    elif cmd == "instr":
        argv = ["instr", pick(["0x8400490", "0x4000490"], bad_desc), "--kind", pick(["f16", "tf32"], ["x", ""])]
    elif cmd == "swizzle":
        argv = ["swizzle", pick(["128B", "64B", "none"], ["16B", "x", "9" * 5000]), "--png",
                pick([_png(tmp)], bad_png, 0.7), "--base-offset", pick(["0", "3"], ["-1", "8", "9" * 5000, "x"])]
        if not bad and draw(st.integers(0, 3)):  # pictures are slow: mostly hostile ones
            argv[3], bad = draw(st.sampled_from(bad_png)), True
    elif cmd == "banks":
        argv = ["banks", "--op", pick(["ld.shared.b32", "ldmatrix.x4", "ld.shared.v4.b32"],
                                      ["ld.shared.b33", "", "x" * 5000])]
        source = draw(st.integers(0, 2))
        if source == 0:
            argv += ["--pattern", pick(["(t % 8) * 128 + (t // 8) * 16", "t * 16"],
                                       ["__import__('os').system('true')", "(" * 300 + "t" + ")" * 300,
                                        "+".join(["t"] * 400), "*".join(["(t<<63)"] * 40), "t ** 99", "t // 0",
                                        "9" * 5000, "x" * 2000])]
        elif source == 1:
            argv += ["--addresses", pick([" ".join(str(16 * t) for t in range(32))],
                                         ["1 2 3", "x " * 32, " ".join(["9" * 5000] * 32), "0x10," * 40])]
        else:
            argv += ["--desc", pick(desc90, bad_desc), "--rows-expr", pick(["t % 8"], ["t - 100", "x"]),
                     "--cols-expr", pick(["8 * (t // 8)"], ["t * 1000"])]
        argv += ["--mask", pick(["0xffffffff", "0x0000ffff"], ["zz", "-1", hex(1 << 32), "9" * 5000, "1e3"])]
        if draw(st.integers(0, 9)) == 0:
            argv += ["--png", pick([_png(tmp)], bad_png, 0.8)]
    elif cmd == "fuzz":
        argv = ["fuzz", "--seconds", pick(["0", "0.01"], ["-1", "1e400", "nan", "inf", "1e9", "x"]),
                "--seed", pick(["0", "5"], ["-1", "x", "1.5", str(1 << 64)]),
                "--arch", pick(["sm90", "sm100"], ["sm80"])]
    elif cmd == "run":
        ptx = os.path.join(tmp, f"tcemu_campaign_{os.getpid()}.ptx")
        if not os.path.exists(ptx):
            with open(ptx, "w") as fh:
                fh.write(TID_PTX)
        argv = ["run", pick([ptx], ["/nonexistent/k.ptx", tmp, "/dev/null", os.path.abspath(__file__)]),
                "--quiet", "--grid", pick(["1", "2"], bad_int[:-1] + ["1x1x1x1", "4294967296"]),
                "--block", pick(["64", "32x2"], ["0", "2048", "x", "9" * 5000, "33x33"]),
                "--arg", pick(["zeros:u32:64"], ["/etc/passwd.npy", "zeros:u32:100000x100000", "zeros:x:4", "1.5",
                                                 "random:u32:" + "9" * 5000, "tensormap:a:64", "random:bf16:64:x",
                                                 "random:bf16:64:" + "9" * 5000, "/dev/null.npy"]),
                "--arg", pick(["64", "0"], ["-1", "x", "1e3", "4294967296", "9" * 5000])]
        if draw(st.integers(0, 4)) == 0:
            argv += ["--kernel", pick(["store_tid"], ["nope", "DONE", ""])]
        if draw(st.integers(0, 4)) == 0:
            argv += ["--save", pick([os.path.join(tmp, "tcemu_campaign_save")], ["/proc/tcemu_save", "/dev/null/x"])]
    elif cmd == "serve":  # only hostile ports: a valid one would serve forever
        argv, bad = ["serve", "--port", draw(st.sampled_from(["-1", "65536", "x", "9" * 5000, "1e3", ""]))], True
    else:
        path, file_bad = draw(trace_files())
        argv = ["replay", path]
        bad = bool(file_bad) or (file_bad is None and None)
    return argv, bad


def _cli(argv_bad):
    """Run tcemu in-process; returns (rc, stderr). SystemExit (argparse) counts as its code."""
    argv, _ = argv_bad
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli_main(argv)
        except SystemExit as e:  # argparse: usage and a one-line error, exit 2
            rc = e.code
    return rc, err.getvalue()




def _judge_cli(argv, bad):
    def judge(rc_err):
        rc, err = rc_err
        if "Traceback" in err:
            return "other exception", f"a traceback: {err[-1500:]}"
        if rc in (0, 1):  # 1: findings or mismatches reported on stdout
            if bad and rc == 0:
                return "silently accepted", "exit 0"
            return ("clean error" if rc == 1 and bad else "accepted"), ""
        lines = [ln for ln in err.splitlines() if ln.strip()]
        one_line = lines and len(lines) <= 3 and (lines[-1].startswith("tcemu: error:") or
                                                  lines[-1].startswith("tcemu "))
        if not isinstance(rc, int) or not one_line:
            return "other exception", f"exit {rc!r}, stderr {err[-500:]!r}"
        return "clean error", ""
    return judge


@_settings(CLI_WEIGHT)
@given(cli_argv())
def test_cli(argv_bad):
    argv, bad = argv_bad
    outcome, detail = _classify("cli " + argv[0], lambda: _cli(argv_bad), _judge_cli(argv, bad))
    assert outcome not in FAILURES, f"{[a[:60] for a in argv]}: {outcome}: {detail}"
