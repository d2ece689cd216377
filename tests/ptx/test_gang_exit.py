"""ret / exit's gang version (tcemu/ptx/ops/control.py): the whole warps of a gang leave at once, and only where
nothing is left to settle at exit; a warp with racecheck state (a deferred report) or copies in flight leaves on
its own, as before. Expectations are computed here from the PTX text."""
import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.ptx import MemoryFault, lockstep

from ptxkit import REGS, entry

# thread t of CTA c stores 32 c + t
STORE = """\
  mov.u32 %r1, %ctaid.x;
  shl.b32 %r2, %r1, 5;
  add.u32 %r3, %r2, %r0;
  mul.wide.u32 %rd2, %r3, 4;
  add.s64 %rd3, %rd0, %rd2;
  st.global.u32 [%rd3], %r3;
  ret;
"""
# ... after reading a shared word nothing wrote: racecheck defers the report to the cluster's last exit
UNWRITTEN = """\
  mov.u32 %r4, buf;
  ld.shared.u32 %r5, [%r4];
""" + STORE
BUF = ".shared .align 16 .b8 buf[64];\n"


def counted(mod):
    """The gang calls of the kernel's ret (their warp counts) as the launch makes them."""
    prog = mod.program("k")
    pc = next(i for i, ins in enumerate(prog.instrs) if ins.opcode == "ret")
    op = prog.code[pc]
    gang, calls = op.gang, []

    def spy(pairs):
        out = gang(pairs)
        calls.append(len(pairs))
        return out
    op.gang = spy
    return calls


def test_whole_warps_leave_in_one_gang_step():
    mod = ptx.load(entry(STORE))
    calls = counted(mod)
    out = np.zeros(64 * 32, np.uint32)
    stats = mod.launch("k", grid=64, block=32, args=[out])
    assert (out == np.arange(64 * 32)).all()
    assert sum(calls) == 64 and len(calls) < 64   # every warp's exit through the gang, several at once
    alone = np.zeros_like(out)
    assert ptx.load(entry(STORE)).launch("k", grid=64, block=32, args=[alone], lockstep=False)[
        "warp_instructions"] == stats["warp_instructions"]
    assert (alone == out).all()


def test_a_deferred_report_is_made_at_the_last_exit(monkeypatch):
    """Racecheck holds a read of unwritten bytes until the cluster's last warp leaves: the gang leaves that to the
    warps' own exits, which report it, as without gang versions."""
    texts = []
    for gangs in (True, False):
        monkeypatch.setattr(lockstep, "GANG_OPS", gangs)
        mod = ptx.load(entry(UNWRITTEN, regs=REGS + BUF))
        calls = counted(mod)
        with pytest.raises(MemoryFault) as e:
            mod.launch("k", grid=8, block=32, args=[np.zeros(8 * 32, np.uint32)])
        texts.append(str(e.value))
        assert "when the cluster finished" in texts[-1]
        assert sum(calls) == 0   # (fell back: no warp left through the gang)
    assert texts[0] == texts[1]
