"""scripts/bench/duel.py, the A/B timing between source trees: every round runs one launch in each tree's warm
worker, checks that the trees' outputs agree, and the summary gives each tree's median and ratio."""
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_a_duel_of_a_tree_with_itself_runs_every_round_and_agrees():
    out = subprocess.run([sys.executable, os.path.join("scripts", "bench", "duel.py"), "many", "64", "3", ".", "."],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [ln.split(":")[0] for ln in lines[:3]] == ["round 0", "round 1", "round 2"]
    summary = [ln for ln in lines if ln.startswith("many 64 .: median")]
    assert len(summary) == 2 and re.search(r"ratio to \. median 1\.000$", summary[0])


def test_the_elementwise_and_softmax_kinds_run_their_fixtures(monkeypatch):
    # kinds.py's launchers: the vector addition gives numpy's sums (check 1); the softmax's checksum is the same
    # with the warps one at a time
    sys.path.insert(0, os.path.join(ROOT, "scripts", "bench"))
    from kinds import launcher
    fx = os.path.join(ROOT, "tests", "fixtures", "ptx")
    _, chk, stats = launcher("add", fx)(4096 + 48)
    assert chk == 1 and stats["ctas"] == 5
    _, chk, stats = launcher("smx", fx)(16)
    assert stats["ctas"] == 16
    import tcemu.ptx.lockstep as ls
    monkeypatch.setattr(ls, "ENABLED", False)
    assert launcher("smx", fx)(16)[1] == chk
