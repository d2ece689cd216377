"""Indirect calls (function pointers, virtual functions) and recursion: PTX ISA 9.7.12.8 call with 10.3
.callprototype / 10.4 .calltargets; tcemu/ptx/callgraph.py, ops/indirect.py, ops/frames.py."""
import os
import zlib

import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.ptx.callgraph import function_addresses
from tcemu.ptx.memory import CODE_WINDOW

from ptxkit import HEADER
from paths import PTX_FIXTURES

NVCC = os.path.join(PTX_FIXTURES, "indirect_calls.ptx")


def _fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def test_nvcc_virtual_calls_pointer_table_recursion():
    """indirect_calls.cu: per thread t, the area of a Tri(t, 3) or Sq(t) through its vtable (device new/delete),
    table[t % 3](t) of {add7, sq, neg}, fib(t % 16), is_even(t) * 10 + is_odd(t + 1), depth(n + t)."""
    out = np.zeros(5 * 32, np.int32)
    ptx.load(NVCC).launch("k", grid=1, block=32, args=[out, 5])
    t = np.arange(32)
    want = np.stack([np.where(t % 3 == 0, t * 3 // 2, t * t), np.choose(t % 3, [t + 7, t * t, -t]),
                     [_fib(x % 16) for x in t], (t % 2 == 0) * 10 + ((t + 1) % 2 == 1), 5 + t], 1)
    assert out.reshape(32, 5).tolist() == want.tolist()


def test_function_addresses_fill_vtables_and_pointer_tables():
    mod = ptx.load(NVCC)
    code = function_addresses(mod.tree.functions)
    assert all(CODE_WINDOW <= a < CODE_WINDOW + (1 << 32) and a % 16 == 0 for a in code.values())
    assert len(set(code.values())) == len(code)
    table = mod.initial_bytes("table").view(np.uint64).tolist()
    assert table == [code["_Z4add7i"], code["_Z2sqi"], code["_Z3negi"]]
    vt = mod.initial_bytes("_ZTV2Sq").view(np.uint64).tolist()   # offset-to-top, typeinfo, area, ~Sq, ~Sq (deleting)
    assert vt == [0, 0, code["_ZNK2Sq4areaEv"], code["_ZN2SqD1Ev"], code["_ZN2SqD0Ev"]]


def test_function_addresses_clash_to_the_next_free_slot(monkeypatch):
    import tcemu.ptx.callgraph as cg
    monkeypatch.setattr(cg, "SLOTS", 4)
    names = ["f", "g", "h", "i"]
    code = cg.function_addresses(names)
    assert sorted(code.values()) == [CODE_WINDOW + 16 * s for s in range(4)]
    assert code["f"] == CODE_WINDOW + 16 * (zlib.crc32(b"f") % 4)


KERNEL = HEADER + """
.func (.param .b32 r) add7(.param .b32 x)
{
  .reg .b32 %a<3>;
  ld.param.b32 %a1, [x];
  add.u32 %a2, %a1, 7;
  st.param.b32 [r], %a2;
  ret;
}
.func (.param .b32 r) dbl(.param .b32 x)
{
  .reg .b32 %a<3>;
  ld.param.b32 %a1, [x];
  shl.b32 %a2, %a1, 1;
  st.param.b32 [r], %a2;
  ret;
}
.func (.param .b32 r) down(.param .b32 x)
{
  .reg .b32 %a<4>;
  .reg .pred %q;
  ld.param.b32 %a1, [x];
  setp.eq.u32 %q, %a1, 0;
  @%q bra DONE;
  sub.u32 %a2, %a1, 1;
  {
  .param .b32 p;
  .param .b32 v;
  st.param.b32 [p], %a2;
  call.uni (v), down, (p);
  ld.param.b32 %a3, [v];
  }
  add.u32 %a1, %a3, 1;
DONE:
  st.param.b32 [r], %a1;
  ret;
}
.visible .entry k(.param .u64 out, .param .u32 n)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .pred %p<2>;
  mov.u32 %r1, %tid.x;
  mov.u64 %rd1, add7;
  mov.u64 %rd2, dbl;
  and.b32 %r2, %r1, 1;
  setp.eq.u32 %p1, %r2, 1;
  selp.b64 %rd3, %rd1, %rd2, %p1;
  {
  .param .b32 p0;
  .param .b32 rv;
  st.param.b32 [p0], %r1;
  proto: .callprototype (.param .b32 _) _ (.param .b32 _);
  tbl: .calltargets add7, dbl;
  call (rv), %rd3, (p0), proto;
  ld.param.b32 %r3, [rv];
  }
  shfl.sync.idx.b32 %r4, %r3, 1, 31, 0xffffffff;
  ld.param.u32 %r5, [n];
  {
  .param .b32 p1;
  .param .b32 rv1;
  st.param.b32 [p1], %r5;
  call.uni (rv1), down, (p1);
  ld.param.b32 %r6, [rv1];
  }
  ld.param.u64 %rd4, [out];
  cvta.to.global.u64 %rd4, %rd4;
  mul.wide.u32 %rd5, %r1, 12;
  add.s64 %rd4, %rd4, %rd5;
  st.global.u32 [%rd4], %r3;
  st.global.u32 [%rd4+4], %r4;
  st.global.u32 [%rd4+8], %r6;
  ret;
}
"""


def _run(src, n=3):
    out = np.zeros((32, 3), np.uint32)
    ptx.load(src).launch("k", grid=1, block=32, args=[out, n])
    return out


def test_divergent_targets_meet_again_after_the_call():
    out = _run(KERNEL)
    t = np.arange(32)
    assert out[:, 0].tolist() == np.where(t % 2, t + 7, 2 * t).tolist()
    assert out[:, 1].tolist() == [8] * 32           # the shuffle after the call sees every lane (lane 1: 1 + 7)
    assert out[:, 2].tolist() == [3] * 32
    same = _run(KERNEL.replace("selp.b64 %rd3, %rd1, %rd2, %p1;", "mov.b64 %rd3, %rd2;"))   # control: one target
    assert same[:, 0].tolist() == (2 * t).tolist()


def test_calltargets_list():
    out = _run(KERNEL.replace("call (rv), %rd3, (p0), proto;", "call (rv), %rd3, (p0), tbl;"))
    t = np.arange(32)
    assert out[:, 0].tolist() == np.where(t % 2, t + 7, 2 * t).tolist()
    bad = KERNEL.replace("call (rv), %rd3, (p0), proto;", "call (rv), %rd3, (p0), tbl;").replace(
        ".calltargets add7, dbl;", ".calltargets add7;")
    with pytest.raises(ptx.KernelFault, match=r"thread 0 calls through address 0x5000\w+: dbl is not in the "
                                              r"call's \.calltargets list tbl \(add7\)"):
        _run(bad)


def test_null_and_garbage_function_pointers_fault():
    null = KERNEL.replace("selp.b64 %rd3, %rd1, %rd2, %p1;", "selp.b64 %rd3, %rd1, 0, %p1;")
    with pytest.raises(ptx.KernelFault, match=r"call \{rv\}, %rd3, \{p0\}, proto \(line \d+\).*thread 0 calls "
                                              r"through address 0x0: a null function pointer"):
        _run(null)
    junk = KERNEL.replace("mov.u64 %rd2, dbl;", "add.u64 %rd2, %rd1, 4;")   # 4 bytes into add7
    with pytest.raises(ptx.KernelFault, match=r"thread 0 calls through address 0x5000\w+: not the address of "
                                              r"a function of this module"):
        _run(junk)


def test_recursion_depth_bound():
    assert _run(KERNEL, 1023)[:, 2].tolist() == [1023] * 32      # down(1023): 1024 frames, the bound
    with pytest.raises(ptx.KernelFault, match=r"call stack overflow: the call of down by lanes \[0, 1, 2, 3, 4, 5, "
                                              r"6, 7\] would be call 1025 deep \(recursion too deep"):
        _run(KERNEL, 1024)


def test_prototype_argument_count_mismatch_is_a_syntax_error():
    bad = KERNEL.replace(".callprototype (.param .b32 _) _ (.param .b32 _);",
                         ".callprototype (.param .b32 _) _ (.param .b32 _, .param .b32 _);")
    with pytest.raises(ptx.PtxSyntaxError, match=r"Function 'prototype proto' takes 2 arguments, the call passes 1"):
        ptx.load(bad)
    nolabel = KERNEL.replace("call (rv), %rd3, (p0), proto;", "call (rv), %rd3, (p0);")
    with pytest.raises(ptx.PtxSyntaxError, match=r"needs a \.callprototype or \.calltargets label"):
        ptx.load(nolabel)


def test_planted_bug_recursion_without_saving_clobbers_the_caller(monkeypatch):
    """Control for the save at each recursive call: with no function marked recursive, fib's registers are one
    static set, and the results go wrong."""
    import tcemu.ptx.callgraph as cg
    monkeypatch.setattr(cg, "on_cycles", lambda edges: set())
    out = np.zeros(5 * 32, np.int32)
    ptx.load(NVCC).launch("k", grid=1, block=32, args=[out, 5])
    fibs = out.reshape(32, 5)[:, 2].tolist()
    assert fibs[:2] == [0, 1] and fibs != [_fib(t % 16) for t in range(32)]


def test_a_kernel_is_not_callable():
    """Before recursion ran, a call of the kernel itself was refused as recursive; it is refused as a call of an
    .entry (only .func can be called)."""
    with pytest.raises(ptx.PtxSyntaxError, match=r"call to k, a kernel \(\.entry\): only \.func can be called"):
        _run(KERNEL.replace("call.uni (rv1), down, (p1);", "call.uni (rv1), k, (p1);"))


def test_callprototype_forms_parse():
    from tcemu.ptx import parser as P
    body = """.visible .entry k()
{
  p1: .callprototype ()_ (.param .b64 _);
  p2: .callprototype (.param .b32 _) _ (.param .b32 _, .param .align 16 .b8 _[32]);
  p3: .callprototype _ () .noreturn;
  t1: .calltargets f, g;
  ret;
}
"""
    fn = P.parse(HEADER + body).functions["k"]
    d = {name: decl for (_, name), decl in fn.call_decls.items()}
    assert [(len(x.returns), len(x.params)) for x in (d["p1"], d["p2"], d["p3"])] == [(0, 1), (1, 2), (0, 0)]
    assert d["p2"].params[1].size == 32 and d["t1"].targets == ["f", "g"] and len(fn.body) == 1
    with pytest.raises(ptx.PtxSyntaxError, match=r"expected '_'"):
        P.parse(HEADER + body.replace("()_ (.param .b64 _)", "() x (.param .b64 _)"))
