"""scripts/bench/where.py, where a launch's time goes: every warp instruction lands in exactly one row (the rows add
up to the launch's count) and each row counts what ran there."""
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_rows_of_64_one_warp_ctas_count_every_warp_instruction_once():
    out = subprocess.run([sys.executable, os.path.join("scripts", "bench", "where.py"), "many", "64", "--top", "50"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = {m.group(3): (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")))
            for m in re.finditer(r"%\s+([\d,]+) calls\s+([\d,]+) warp instr  (.+)", out.stdout)}
    # the 64 CTAs are one wave and one gang: ld.param, then 7 private instructions (cvta, mov x2, shl, add, mul.wide,
    # add) as one batch, st.global's gang version, and ret's (whole warps leaving at once)
    assert rows == {"gang: ld.param.u64": (1, 64), "private stretches": (1, 7 * 64), "gang: st.global.u32": (1, 64),
                    "gang: ret": (1, 64)}
    assert "warp instructions in the rows: 640 (the launch's: 640)" in out.stdout
