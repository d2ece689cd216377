"""hang._runway: where a spin probe that starts in straight-line code must stop (the first instruction no proven
cycle may hold), so the probe is answered without running (or settling the warp's deferred wgmma chains); -1
where a branch comes first and the probe runs as before."""
import tcemu.ptx as ptx
from tcemu.ptx import hang

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
