"""Module.launch(trace=...): the per-warp instruction hook (tcemu serve's PTX view uses it)."""
import numpy as np
import pytest

import tcemu.ptx as ptx
from ptxkit import entry

# pcs: 0-4 the OUT_PROLOGUE (5 instructions), 5 setp, 6 @p bra, 7 add, 8 st, 9 ret
BODY = """\
  setp.lt.u32 %p0, %r0, 8;
  @%p0 bra SKIP;
  add.u32 %r0, %r0, 100;
SKIP:
  st.global.u32 [%rd1], %r0;
  ret;
"""


def _mask(m):
    return None if m is None else sum(1 << i for i in np.flatnonzero(m))


def test_trace_sees_every_instruction_with_its_lanes():
    rec = []
    out = np.zeros(64, np.uint32)
    ptx.load(entry(BODY)).launch("k", grid=1, block=64, args=[out],
                                 trace=lambda w, pc, m, r: rec.append((w.index, pc, _mask(m))))
    # warp 0: lanes 0-7 branch over pc 7, so pc 7 runs on lanes 8-31 alone, then the warp is whole again;
    # warp 1 (threads 32-63) never branches
    warp0 = [(0, pc, None) for pc in range(7)] + [(0, 7, 0xFFFFFF00), (0, 8, None), (0, 9, None)]
    assert rec == warp0 + [(1, pc, None) for pc in range(10)]
    assert out.tolist() == list(range(8)) + [t + 100 for t in range(8, 64)]


def test_trace_exception_ends_the_launch_and_bad_trace_is_refused():
    class Stop(Exception):
        pass

    def stop(w, pc, m, r):
        if pc == 3:
            raise Stop
    with pytest.raises(Stop):
        ptx.load(entry(BODY)).launch("k", grid=1, block=32, args=[np.zeros(32, np.uint32)], trace=stop)
    with pytest.raises(ptx.PtxError) as e:
        ptx.load(entry(BODY)).launch("k", grid=1, block=32, args=[np.zeros(32, np.uint32)], trace=3)
    assert e.value.field == "trace"
