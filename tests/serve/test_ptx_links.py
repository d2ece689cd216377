"""The PTX view's link to the other views: for each shared-memory access, ldmatrix, wgmma and TMA load of the
traced warp, the wavefronts (tcemu.banks.bank_conflicts of the lanes' addresses) and the fields that open the
banks, descriptor or TMA view on the warp's own values; typed register values; the PTX size the server takes."""
import json
import os

import numpy as np
import pytest

import tcemu
from tcemu.layout.banks import bank_conflicts
from tcemu.serve import api, ptxrun
from tcemu.serve.server import MAX_BODY, call

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ptx")


def kernel(stride: int) -> str:
    """Warp 0 reads shared word `stride` bytes apart per lane (128: every lane in bank 0, a 32-way conflict;
    4: one wavefront), one ldmatrix.x4 whose 8 row addresses per matrix share a bank, one wgmma (descriptors in
    %rd1 / %rd2), a bar.sync (the TMA's bytes are ones warps 2-3 read: without it racecheck names the WAR race) and
    thread 0 one TMA load of a 64 x 64 box at (8, 16) to 0x2400."""
    return f"""
.version 8.5
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 dyn[];
.visible .entry k(.param .u64 out, .param .align 64 .b8 tmap[128])
{{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .s32 %s<4>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<8>;
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, dyn;
  mul.lo.u32 %r2, %r0, {stride};
  add.u32 %r3, %r1, %r2;
  ld.shared.u32 %r4, [%r3];
  and.b32 %r5, %r0, 7;
  shl.b32 %r5, %r5, 7;
  shr.u32 %r6, %r0, 3;
  shl.b32 %r6, %r6, 4;
  add.u32 %r5, %r5, %r6;
  add.u32 %r5, %r5, %r1;
  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{%r8, %r9, %r10, %r11}}, [%r5];
  sub.s32 %s0, 3, %r0;
  cvt.rn.f32.s32 %f4, %s0;
  setp.lt.s32 %p3, %s0, 0;
  mov.u64 %rd1, 0x0000001000080040;
  mov.u64 %rd2, 0x00000010000800c0;
  wgmma.fence.sync.aligned;
  wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {{%f0, %f1, %f2, %f3}}, %rd1, %rd2, 0, 1, 1, 0, 0;
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  bar.sync 0;
  setp.ne.u32 %p1, %r0, 0;
  @%p1 bra DONE;
  add.u32 %r12, %r1, 0x4000;
  mbarrier.init.shared.b64 [%r12], 1;
  add.u32 %r13, %r1, 0x2000;
  mov.u32 %r14, 8;
  mov.u32 %r15, 16;
  mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r12], 8192;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r13], [tmap, {{%r14, %r15}}], [%r12];
WAIT:
  mbarrier.try_wait.parity.shared.b64 %p2, [%r12], 0;
  @!%p2 bra WAIT;
DONE:
  ret;
}}
"""


def run(stride, **kw):
    fields = {"ptx": kernel(stride), "block": "128", "shared": "0x5000", "zero_init_shared": "1",
              "check_layouts": "0", "args": "zeros:bf16:128x128 tensormap:0:64x64:128B"}
    return ptxrun.ptx_view(dict(fields, **kw), seconds=120)  # the first wgmma compiles its numba kernels


def links_of(d, prefix):
    return next(r["links"] for r in d["rows"] if r["text"].startswith(prefix) and r["control"] != "waits")


@pytest.fixture(scope="module")
def conflicted():
    return run(128)


def test_shared_access_wavefronts_and_banks_link(conflicted):
    d = conflicted
    assert d["fault"] is None and d["stopped"] is None
    (ld,) = links_of(d, "ld.shared.u32")
    # planted: 32 lanes 128 bytes apart, all in bank 0 -> 32 wavefronts; the banks view on these values agrees
    assert ld["addresses"] == [0x400 + 128 * t for t in range(32)]
    assert (ld["wavefronts"], ld["ideal"], ld["conflicts"]) == (32, 1, 31)
    assert ld["view"] == "banks" and api.banks_view(ld["values"])["wavefronts"] == 32
    control = run(4)
    (ok,) = links_of(control, "ld.shared.u32")
    assert (ok["wavefronts"], ok["conflicts"]) == (1, 0) and api.banks_view(ok["values"])["conflicts"] == 0
    (lm,) = links_of(d, "ldmatrix")
    rows = [0x400 + (t % 8) * 128 + (t // 8) * 16 for t in range(32)]
    assert lm["addresses"] == rows
    assert lm["wavefronts"] == bank_conflicts("ldmatrix.x4", np.array(rows)).wavefronts == 32


def test_wgmma_and_tma_links_open_the_views_on_the_warp_s_values(conflicted):
    a, b = links_of(conflicted, "wgmma.mma_async")
    assert a["values"] == {"arch": "sm90", "descriptor": "0x0000001000080040", "dtype": "bf16", "major": "K",
                           "rows": "64", "k": "16", "operand": "a"}
    assert b["values"]["descriptor"] == "0x00000010000800c0" and b["values"]["rows"] == "8"
    da = api.descriptor_view(a["values"])
    # start 0x400, LBO 128, SBO 256, no swizzle: A[r, k] at 0x400 + (r // 8) * 256 + (r % 8) * 16 + (k // 8) * 128
    assert da["addresses"][9][8] == 0x400 + 256 + 16 + 128 + 0
    (t,) = links_of(conflicted, "cp.async.bulk.tensor")
    assert t["values"] == {"arch": "sm90", "dtype": "bf16", "dims": "128x128", "box": "64x64", "coords": "8,16",
                           "element_strides": "1,1", "swizzle": "128B", "smem_addr": "0x2400"}
    tv = api.tma_view(t["values"])
    assert tv["addresses"][0][0] == 0x2400 and tv["out_of_bounds"] == 0


def test_typed_register_values(conflicted):
    """Each destination as its declared type reads it: .s32 signed, .f32 float, .pred true/false, .b32 hex."""
    rows = {r["text"]: r for r in conflicted["rows"]}
    s = rows["sub.s32 %s0, 3, %r0"]["dests"][0]
    assert s["type"] == "s32" and s["typed"][:5] == ["3", "2", "1", "0", "-1"]
    assert s["values"][4] == "0xffffffff"
    f = rows["cvt.rn.f32.s32 %f4, %s0"]["dests"][0]
    assert f["type"] == "f32" and f["typed"][:5] == ["3.0", "2.0", "1.0", "0.0", "-1.0"]
    p = rows["setp.lt.s32 %p3, %s0, 0"]["dests"][0]
    assert p["type"] == "pred" and p["typed"][:5] == ["false"] * 4 + ["true"]
    assert rows["mov.u32 %r0, %tid.x"]["dests"][0]["typed"][:2] == ["0x00000000", "0x00000001"]  # .b32: hex


def test_a_36_kib_kernel_is_taken_and_only_the_body_limit_bounds_it():
    text = open(os.path.join(FIXTURES, "matmul_tma_bf16.ptx")).read()
    assert len(text) > 32 * 1024 and ptxrun.MAX_PTX + 16 * 1024 < MAX_BODY
    # the text parses and its kernel is found: what is missing is its arguments, named as such
    status, body = call("ptx", {"ptx": text, "block": "256", "args": ""})
    assert status == 400 and body["error"]["field"] == "args", body
    assert call("ptx", {"ptx": "x" * (ptxrun.MAX_PTX + 1)})[1]["error"]["field"] == "ptx"


def test_fault_of_another_warp_names_it():
    """A fault in warp 1 while warp 0 is traced: the fault says which warp, and no row of warp 0 is marked."""
    from ptxkit import entry
    text = entry("  setp.ge.u32 %p0, %r0, 32;\n  @!%p0 bra DONE;\n  st.global.u32 [%rd1+4096], %r0;\nDONE:\n  ret;\n")
    d = ptxrun.ptx_view({"ptx": text, "block": "64", "args": "zeros:u32:64"})
    assert d["fault"]["warp"] == 1 and d["fault"]["traced"] is False
    assert not any(r.get("fault") for r in d["rows"])
    d1 = ptxrun.ptx_view({"ptx": text, "block": "64", "args": "zeros:u32:64", "warp": "1"})
    assert d1["fault"]["traced"] is True and d1["rows"][-1]["fault"] is True
    assert json.dumps(d1, allow_nan=False)
