"""An instruction tcemu does not model is listed when its kernel compiles and refused only when run."""
import warnings

import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.ptx.errors import PtxUnsupported, PtxUnsupportedWarning

SRC = """.version 8.5
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
 .reg .pred %p<2>;
 .reg .b32 %r<4>;
 .reg .b64 %rd<4>;
 ld.param.u64 %rd1, [out];
 mov.u32 %r1, %tid.x;
 setp.gt.u32 %p1, %r1, 100;
 @%p1 bra SLOW;
 st.global.u32 [%rd1], %r1;
 ret;
SLOW:
 sured.b.add.1d.u32.trap [%rd1, {%r1}], %r1;
 ret;
}
"""


def test_listed_at_compile_and_refused_when_executed():
    mod = ptx.load(SRC)
    with pytest.warns(PtxUnsupportedWarning, match="line 16 sured.b.add.1d.u32.trap"):
        mod.program("k")
    assert [(ln, op) for ln, op, _ in mod.unsupported("k")] == [(16, "sured.b.add.1d.u32.trap")]
    out = np.zeros(1, np.uint32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # no second warning: compiled once
        mod.launch("k", grid=1, block=32, args=[out])   # the unmodelled path never runs
    assert out[0] == 31
    with pytest.raises(PtxUnsupported, match=r"sured.*line 16"):
        mod.launch("k", grid=1, block=128, args=[out])  # threads 101.. take it
