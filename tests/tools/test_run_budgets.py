"""Issue 23, `tcemu run --timeout / --max-instructions`: the budgets of a run, their defaults in the help, bad
values refused with exit code 2 and one line; a spin nobody satisfies is a Deadlock at once, not a timeout."""
import numpy as np
import pytest

from tcemu.cli import main
from tcemu.ptx.module import DEFAULT_TIMEOUT, MAX_INSTRUCTIONS

HEAD = ".version 8.3\n.target sm_90\n.address_size 64\n"
LOOP = HEAD + ".visible .entry k()\n{\n$L:\nbra $L;\n}\n"   # reads no memory: the budgets' to stop
WAIT = HEAD + """.visible .entry wait(.param .u64 flag)
{
 .reg .b32 %r<2>; .reg .b64 %rd<2>; .reg .pred %p<2>;
 ld.param.u64 %rd1, [flag];
$SPIN:
 ld.volatile.global.u32 %r1, [%rd1];
 setp.eq.u32 %p1, %r1, 0;
 @%p1 bra $SPIN;
 ret;
}
"""


def _code(args) -> int:
    try:
        return main(args)
    except SystemExit as e:   # argparse's own refusals
        return e.code


def test_defaults_in_the_help(capsys):
    assert (DEFAULT_TIMEOUT, MAX_INSTRUCTIONS) == (600.0, 2_000_000_000)
    with pytest.raises(SystemExit):
        main(["run", "-h"])
    out = " ".join(capsys.readouterr().out.split())
    assert "stopped as a livelock (BudgetExceeded; default 2e+09)" in out
    assert "wall-clock seconds before the run is stopped (BudgetExceeded; default 600)" in out


@pytest.mark.parametrize("opt,value,words", [("--timeout", "0", "--timeout: 0: a number of seconds > 0"),
                                             ("--timeout", "-2", "--timeout: -2: a number of seconds > 0"),
                                             ("--timeout", "nan", "--timeout: nan: a number of seconds > 0"),
                                             ("--timeout", "inf", "--timeout: inf: a number of seconds > 0"),
                                             ("--timeout", "soon", "argument --timeout: invalid float value"),
                                             ("--max-instructions", "0", "--max-instructions: 0: a number of warp "
                                                                         "instructions >= 1"),
                                             ("--max-instructions", "1e3", "argument --max-instructions: invalid "
                                                                           "int value")])
def test_bad_budgets_are_refused(tmp_path, capsys, opt, value, words):
    path = tmp_path / "loop.ptx"
    path.write_text(LOOP)
    assert _code(["run", str(path), "--quiet", "--block", "32", opt, value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err, err


def test_budgets_stop_a_loop_and_a_spin_is_proven(tmp_path, capsys):
    path = tmp_path / "loop.ptx"
    path.write_text(LOOP)
    assert main(["run", str(path), "--quiet", "--block", "32", "--max-instructions", "5000"]) == 2
    assert "BudgetExceeded: CTA (0, 0, 0): more than 5000 warp instructions" in capsys.readouterr().err
    assert main(["run", str(path), "--quiet", "--block", "32", "--timeout", "0.2"]) == 2
    assert "time limit of 0.2 s" in capsys.readouterr().err
    wait = tmp_path / "wait.ptx"
    wait.write_text(WAIT)
    flag = tmp_path / "flag.npy"
    np.save(flag, np.zeros(1, np.uint32))
    assert main(["run", str(wait), "--quiet", "--block", "32", "--arg", str(flag), "--timeout", "60"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Deadlock: CTA (0, 0, 0): every unfinished warp is blocked or spins" in err
    assert "holding 0x0; nothing in this launch wrote it" in err
    np.save(flag, np.ones(1, np.uint32))   # the control: the flag is up
    assert main(["run", str(wait), "--quiet", "--block", "32", "--arg", str(flag)]) == 0
