"""call / ret of device functions and the vprintf / __assertfail builtins (tcemu/ptx/ops/calls.py)."""
import os

import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.ptx.ops.calls import format_printf

from ptxkit import HEADER
from paths import PTX_FIXTURES

FX = os.path.join(PTX_FIXTURES, "calls.ptx")


def test_nvcc_kernel_with_call_printf_assert(capsys):
    mod = ptx.load(FX)
    out = np.zeros(64, np.int32)
    st = mod.launch("_Z1kPii", grid=1, block=64, args=[out, 64], printf="collect")
    # calls.cu: twice(x) = 3x (and c += 1) for odd x, 2x for even; out[t] = twice(t) + c
    t = np.arange(64)
    assert out.tolist() == np.where(t % 2, 3 * t + 1, 2 * t).tolist()
    assert st["printf"] == ["t=5 v=15 c=1 f=7.500000 s=hi\n"]
    assert capsys.readouterr().out == ""          # "collect" keeps it out of stdout
    with pytest.raises(ptx.KernelFault, match=r"calls.cu:10: void k\(int \*, int\): .*thread 60: Assertion `t < n` "
                                              "failed"):
        mod.launch("_Z1kPii", grid=1, block=64, args=[out, 60], printf="collect")


NESTED = HEADER + """
.func (.param .b32 r) inner(.param .b32 x)
{
  .reg .b32 %a<4>;
  .reg .pred %q;
  ld.param.b32 %a1, [x];
  setp.lt.u32 %q, %a1, 10;
  @%q bra SMALL;
  add.u32 %a2, %a1, 1000;
  st.param.b32 [r], %a2;
  ret;
SMALL:
  mul.lo.u32 %a2, %a1, %a1;
  st.param.b32 [r], %a2;
  ret;
}
.func (.param .b32 r) outer(.param .b32 x)
{
  .reg .b32 %b<4>;
  ld.param.b32 %b1, [x];
  {
  .param .b32 p0;
  st.param.b32 [p0], %b1;
  .param .b32 rv;
  call.uni (rv), inner, (p0);
  ld.param.b32 %b2, [rv];
  }
  add.u32 %b3, %b2, 1;
  st.param.b32 [r], %b3;
  ret;
}
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  {
  .param .b32 p0;
  st.param.b32 [p0], %r1;
  .param .b32 rv;
  call (rv), outer, (p0);
  ld.param.b32 %r2, [rv];
  }
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
  ret;
}
"""


def test_nested_calls_with_divergent_returns():
    out = np.zeros(32, np.uint32)
    ptx.load(NESTED).launch("k", grid=1, block=32, args=[out])
    t = np.arange(32)
    assert out.tolist() == (np.where(t < 10, t * t, t + 1000) + 1).tolist()


def test_unbounded_recursion_overflows_and_unknown_externals_are_refused():
    rec = NESTED.replace("call.uni (rv), inner, (p0);", "call.uni (rv), outer, (p0);")
    with pytest.raises(ptx.KernelFault, match=r"call stack overflow: the call of outer by lanes \[0, 1, 2, 3, 4, 5, "
                                              r"6, 7\] would be call 1025 deep \(recursion too deep"):
        ptx.load(rec).launch("k", grid=1, block=32, args=[np.zeros(32, np.uint32)])
    ext = NESTED.replace(".func (.param .b32 r) inner(.param .b32 x)\n{", ".extern .func (.param .b32 r) mystery"
                         "(.param .b32 x);\n.func (.param .b32 r) inner2(.param .b32 x)\n{").replace(
        "call.uni (rv), inner, (p0);", "call.uni (rv), mystery, (p0);")
    with pytest.raises(ptx.PtxUnsupported, match="mystery"):
        ptx.load(ext).launch("k", grid=1, block=32, args=[np.zeros(32, np.uint32)])


def test_printf_formatting():
    words = {0: 7, 8: -3 & 0xFFFFFFFFFFFFFFFF, 16: 0x400C000000000000}  # int 7, long -3, double 3.5

    def read(off, n):
        return words[off] & ((1 << (8 * n)) - 1)
    assert format_printf("%d|%ld|%.2f|%%", read, None) == "7|-3|3.50|%"


DIVERGENT_CALL_THEN_SHFL = """.version 8.5
.target sm_90a
.address_size 64
.func (.param .b32 r) f(.param .b32 x)
{
  .reg .b32 %a<3>;
  ld.param.b32 %a1, [x];
  add.u32 %a2, %a1, 7;
  st.param.b32 [r], %a2;
  ret;
}
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .pred %p<2>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r3, %r1;
  and.b32 %r2, %r1, 1;
  setp.eq.u32 %p1, %r2, 1;
  @!%p1 bra SKIP;
  {
  .param .b32 p0;
  .param .b32 rv;
  st.param.b32 [p0], %r1;
  call.uni (rv), f, (p0);
  ld.param.b32 %r3, [rv];
  }
SKIP:
  shfl.sync.idx.b32 %r4, %r3, 1, 31, 0xffffffff;
  ld.param.u64 %rd4, [out];
  cvta.to.global.u64 %rd4, %rd4;
  mul.wide.u32 %rd5, %r1, 4;
  add.s64 %rd4, %rd4, %rd5;
  st.global.u32 [%rd4], %r4;
  ret;
}
"""


def test_call_in_a_branch_then_a_full_warp_shuffle():
    # odd lanes call f (x + 7), all lanes then meet at shfl.sync with the full mask: the callee's ret runs before the
    # waiting shuffle (every lane waits at a warp-synchronous instruction; the call's ret is taken first)
    out = np.zeros(32, np.uint32)
    ptx.load(DIVERGENT_CALL_THEN_SHFL).launch("k", grid=1, block=32, args=[out])
    assert out.tolist() == [1 + 7] * 32
