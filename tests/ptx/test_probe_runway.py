"""hang._runway: where a spin probe that starts in straight-line code must stop (the first instruction no proven
cycle may hold), so the probe is answered without running (or settling the warp's deferred wgmma chains); -1
where a branch comes first and the probe runs as before."""
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
