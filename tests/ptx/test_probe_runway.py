"""hang._runway: where a spin probe that starts in straight-line code must stop (the first instruction no proven
cycle may hold), so the probe is answered without running (or settling the warp's deferred wgmma chains); -1
where a branch comes first and the probe runs as before."""
import numpy as np

import tcemu.ptx as ptx
from tcemu.ptx import hang
from tcemu.ptx.program import CLASS_ATTR

from ptxkit import entry

BODY = """\
  mov.u32 %r1, 1;
  add.u32 %r1, %r1, %r0;
  bar.sync 0;
  mov.u32 %r2, %r1;
  setp.ne.u32 %p1, %r2, 0;
  @%p1 bra L;
  st.global.u32 [%rd1], %r2;
L:
  ret;
"""


def test_the_runway_of_each_pc_without_and_with_cta_barriers():
    prog = ptx.load(entry(BODY)).program("k")
    texts = [i.opcode for i in prog.instrs]
    start = texts.index("mov.u32", texts.index("add.s64"))   # after ptxkit's prologue
    n = len(prog.instrs)
    bar, bra, ret = start + 2, start + 5, start + 7
    assert texts[bar] == "bar.sync" and texts[bra] == "bra" and texts[ret] == "ret"
    alone, cta = hang._runway(prog, False), hang._runway(prog, True)
    # a warp alone may not cycle through bar.sync; one of a CTA probed together may (then the branch comes first);
    # a store may be in a cycle (a probe whose store changes a byte proves nothing), ret may not
    assert alone[start:n + 1].tolist() == [bar, bar, bar, -1, -1, -1, ret, ret, n]
    assert cta[start:n + 1].tolist() == [-1, -1, -1, -1, -1, -1, ret, ret, n]


SETUP = """\
  mov.u32 %r1, 1;
  mbarrier.arrive.shared::cta.b64 %rd5, [%r4];
  add.u32 %r2, %r1, %r0;
  st.global.u32 [%rd1], %r2;
  ret;
"""


def test_a_probe_keeps_only_the_registers_an_instruction_it_may_run_writes():
    # destinations of every instruction a proven cycle may execute (the first operand: st's address register
    # counts too, a superset); mbarrier.arrive may not be in a cycle, so its %rd5 keeps its value through any probe
    prog = ptx.load(entry(SETUP)).program("k")
    kept = {a: set(idx.tolist()) for a, idx in hang._probe_regs(prog)}
    want = {}
    for name in ("%rd0", "%r0", "%rd1", "%r1", "%r2"):   # the prologue's and the body's
        s = prog.slots[name]
        want.setdefault(s.cls, set()).add(s.index)
    assert kept == {a: want.get(c, set()) for c, a in CLASS_ATTR.items()}
    assert prog.slots["%rd5"].index not in kept[CLASS_ATTR[64]]


LOOP = """\
  mov.u32 %r1, 1;
  setp.ne.u32 %p1, %r0, 0;
  @%p1 bra TOP;
  add.u32 %r1, %r1, 2;
  bar.sync 0;
TOP:
  ld.volatile.global.u32 %r2, [%rd1];
  setp.eq.u32 %p2, %r2, 0;
  @%p2 bra TOP;
  ret;
"""


def test_acyclic_pcs_reach_no_backward_branch_before_a_stop():
    # hang._acyclic: the forward branch's target is the spin loop, so it and the PCs before it may cycle (every
    # path counts); its fall-through stops at bar.sync for a warp alone (a CTA barrier); the loop's PCs reach its
    # backward branch; ret is a stop
    prog = ptx.load(entry(LOOP)).program("k")
    texts = [i.opcode for i in prog.instrs]
    start = texts.index("mov.u32", texts.index("add.s64"))
    bar = texts.index("bar.sync")
    assert bar == start + 4 and texts[start + 2] == "bra" and texts[bar + 3] == "bra"
    dag, stop_bar = hang._acyclic(prog, False)
    assert dag[start:bar + 5].tolist() == [False] * 3 + [True] * 2 + [False] * 3 + [True]
    assert stop_bar[start + 3:bar + 1].tolist() == [True] * 2 and not stop_bar[bar + 4]
    dag, _ = hang._acyclic(prog, True)   # bar.sync passes: the loop lies ahead of every PC
    assert dag[start:bar + 4].tolist() == [False] * 8


def test_a_spin_behind_a_forward_branch_is_still_proven():
    # warp 1's lanes wait on a flag nobody sets, past a forward branch and a loop: a hang report, not a timeout
    body = LOOP.replace("  bar.sync 0;\n", "")
    mod = ptx.load(entry(body))
    try:
        mod.launch("k", grid=1, block=32, args=[np.zeros(32, np.uint32)], timeout=60)
    except ptx.Deadlock as e:
        assert "spin" in str(e) or "hang" in str(e)
    else:
        raise AssertionError("the spin finished")
