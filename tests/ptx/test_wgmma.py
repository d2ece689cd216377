"""wgmma end to end through tcemu.ptx: one warpgroup copies an operand image into shared memory with st.shared,
fences the async proxy, meets at a barrier, builds matrix descriptors in registers, runs a chain of
wgmma.mma_async (PTX ISA 9.7.15) and stores its accumulator registers. Expected D comes from tcemu.wgmma called
directly on the same shared-memory image (the hardware-verified model) and tcemu.to_d_registers for the fragment
layout, and, because every operand is a small integer, also from an exact numpy matmul.

Hazards: accumulators read before wgmma.wait_group or written after wgmma.fence, a missing fence.proxy.async,
descriptors that differ between threads, a partial warpgroup, a descriptor outside the allocation, and the
layout-provenance check on cp.async-filled tiles."""
import warnings

import numpy as np
import pytest

import tcemu
import tcemu.ptx as ptx
from tcemu.ptx.errors import Deadlock, HazardError, KernelFault, MemoryFault
from tcemu.layout.smem import SharedMemory

from ptxkit import HEADER
from wgmma_kernel import AREG, BASE, BF16, D, E4M3, F16, Form, S8, TF32, _bits, _desc_build, launch, prepare


@pytest.mark.parametrize("form", [BF16, F16, TF32, E4M3, S8, AREG], ids=["bf16", "f16", "tf32", "e4m3", "s8sat", "areg"])
def test_wgmma_chain_matches_the_model(form):
    regs, prep = launch(form)
    assert np.array_equal(regs, prep["regs"])
    # the registers hold D in the PTX fragment layout: from_d_registers recovers the (64, N) matrix
    view = np.uint16 if form.dtype_d == "f16" else np.uint32
    d = tcemu.from_d_registers(regs, form.n, form.dtype_d).view(
        {"f32": np.float32, "f16": np.float16, "s32": np.int32}[form.dtype_d])
    assert np.array_equal(d.view(view), np.ascontiguousarray(prep["d"]).view(view))
    exact = prep["exact"]
    if form.satfinite:
        assert (exact == 2**31 - 1).any() and (exact == -2**31).any()      # the data does saturate
    assert np.array_equal(d.astype(np.float64), exact.astype(np.float64))


# ------------------------------------------------------------------------------------------------ hazards

def test_reading_an_accumulator_before_wait_group_waits_as_ptxas_makes_it():
    # ptxas 13.4 injects a wgmma.wait_group before such a read (info C7517; Triton's max_num_imprecise_acc kernels
    # rely on it): the read sees the finished wgmma, and tcemu says it serialized the pipeline
    with pytest.warns(ptx.WgmmaSerializedWarning, match=r"mov.b32 %r20, %d3 .*%d3 belongs to a wgmma.mma_async "
                                                        r"still in flight; ptxas makes this read wait for it \(C7517"):
        regs, prep = launch(BF16, hooks={"after_commit": "  mov.b32 %r20, %d3;\n"})
    assert np.array_equal(regs, prep["regs"])
    # a write: ptxas serializes the wgmmas (C7515), so the write lands on the finished accumulator
    with pytest.warns(ptx.WgmmaSerializedWarning, match=r"ptxas makes this write wait for it \(C7515"):
        regs, prep = launch(BF16, hooks={"after_commit": "  mov.b32 %d0, 0;\n"})
    assert not regs[:, 0].any() and np.array_equal(regs[:, 1:], prep["regs"][:, 1:])


def test_wait_group_n_leaves_the_newest_groups_pending():
    # steps 0-2 commit as one group, step 3 as a second; wait_group 1 retires only the first, and step 3 writes
    # every accumulator, so reading one still needs ptxas's injected wait; wait_group 0 makes it plain
    commit = "  wgmma.commit_group.sync.aligned;\n"
    with pytest.warns(ptx.WgmmaSerializedWarning, match="%d7 belongs to a wgmma.mma_async still in flight"):
        regs, prep = launch(BF16, hooks={"after_step2": commit, "after_commit": "  wgmma.wait_group.sync.aligned 1;\n"
                                                                               "  mov.b32 %r20, %d7;\n"})
    assert np.array_equal(regs, prep["regs"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ptx.WgmmaSerializedWarning)
        regs, prep = launch(BF16, hooks={"after_step2": commit, "after_commit": "  wgmma.wait_group.sync.aligned 1;\n"
                                                                               "  wgmma.wait_group.sync.aligned 0;\n"
                                                                               "  mov.b32 %r20, %d7;\n"})
    assert np.array_equal(regs, prep["regs"])


def test_writing_an_accumulator_after_the_fence():
    # a write before wgmma.fence is fine (init_c does exactly that); one after it, before the mma, is not
    with pytest.raises(HazardError) as e:
        launch(S8, hooks={"after_fence": "  add.s32 %d5, %d5, 1;\n"})
    assert "wrote wgmma register(s) %d5 since its last wgmma.fence" in str(e.value)
    with pytest.raises(HazardError):   # the A fragment registers too
        launch(AREG, hooks={"after_fence": "  mov.b32 %a1, 0;\n"})


def test_missing_fence_proxy_async():
    with pytest.raises(HazardError) as e:
        launch(BF16, hooks={"fence_proxy": ""})
    assert "no fence.proxy.async" in str(e.value) and "operand A" in str(e.value)


def test_descriptor_differs_between_threads():
    # lane 5 of warp 2 moves B's start by 16 bytes
    hook = "  setp.eq.u32 %p5, %r0, 69;\n  @%p5 add.s64 %rd11, %rd11, 1;\n"
    with pytest.raises(HazardError) as e:
        launch(BF16, hooks={"desc": hook})
    assert "B's descriptor differs between the threads of the warpgroup" in str(e.value)


def test_partial_warpgroup_deadlocks():
    # warp 3 leaves before the mma: warps 0-2 wait for it forever
    hook = "  setp.ge.u32 %p6, %r0, 96;\n  @%p6 exit;\n"
    with pytest.raises(Deadlock) as e:
        launch(BF16, hooks={"before_fence": hook})
    msg = str(e.value)
    assert "warp 3: exited" in msg and "waits on the other warps of warpgroup 0 at wgmma" in msg
    assert "arrived: [0, 1, 2]" in msg
    with pytest.raises(KernelFault) as e:  # a CTA of three warps has no whole warpgroup
        launch(BF16, block=96)
    assert "fewer than four warps" in str(e.value)


def test_descriptor_outside_the_allocation():
    # B's second step reads 32 bytes past the image when the launch allocates exactly the image
    far = Form(**{**BF16.__dict__, "b_descs": BF16.b_descs[:1] + [D(BASE + 0x2000 + 32, 16, 1024, "128B")]})
    prep = prepare(far)
    bad = Form(**{**far.__dict__, "b_descs": far.b_descs[:1] + [D(BASE + 0x4000, 16, 1024, "128B")]})
    with pytest.raises(MemoryFault) as e:
        launch(bad, prep=prep)
    assert "operand B reads shared bytes" in str(e.value) and "outside the kernel's shared memory" in str(e.value)


# ------------------------------------------------------------------------------------------------ layout provenance

PROV = HEADER + """
.extern .shared .align 1024 .b8 dyn[];
.visible .entry k(.param .u64 out, .param .u64 a_image, .param .u64 b)
{
  .reg .pred %p<4>;
  .reg .b32 %r<40>;
  .reg .b64 %rd<16>;
  .reg .b32 %d<16>;
  ld.param.u64 %rd0, [out];
  ld.param.u64 %rd1, [a_image];
  ld.param.u64 %rd2, [b];
  mov.u32 %r0, %tid.x;
  mov.u32 %r2, dyn;
  // A: 8 KiB image copied with st.shared (no provenance)
  mov.u32 %r1, %r0;
$L_a:
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r3, [%rd4];
  shl.b32 %r4, %r1, 2;
  add.u32 %r4, %r4, %r2;
  st.shared.u32 [%r4], %r3;
  add.u32 %r1, %r1, 128;
  setp.lt.u32 %p1, %r1, 2048;
  @%p1 bra $L_a;
  // B (32 x 64 bf16, row-major in global): 16-byte chunk c of row r goes to row r * 128 + (c ^ (r % 8)) * 16
  // of the tile at dyn + 0x2000 (the 128B swizzle), by cp.async; 256 chunks, two per thread
  mov.u32 %r5, 0;
$L_b:
  mad.lo.u32 %r6, %r5, 128, %r0;     // chunk id
  shr.u32 %r7, %r6, 3;               // row
  and.b32 %r8, %r6, 7;               // chunk in the row
  and.b32 %r9, %r7, 7;
  {SWZ}
  shl.b32 %r10, %r10, 4;
  mad.lo.u32 %r11, %r7, 128, %r10;
  add.u32 %r11, %r11, %r2;
  add.u32 %r11, %r11, 0x2000;
  mul.wide.u32 %rd5, %r6, 16;
  add.s64 %rd6, %rd2, %rd5;
  cp.async.cg.shared.global [%r11], [%rd6], 16;
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p2, %r5, 2;
  @%p2 bra $L_b;
  cp.async.commit_group;
  cp.async.wait_group 0;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  wgmma.fence.sync.aligned;
  setp.ne.u32 %p3, %r0, %r0;
{MMAS}  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  mul.wide.u32 %rd7, %r0, 64;
  add.s64 %rd7, %rd0, %rd7;
{STORES}  ret;
}
"""


def _prov_kernel(swizzle_b, xor=True):
    mmas = ""
    for s in range(4):
        mmas += _desc_build(D(BASE + 32 * s, 16, 1024, "128B"), "%rd10", 30)
        mmas += _desc_build(D(BASE + 0x2000 + 32 * s, 16, 1024, swizzle_b), "%rd11", 32)
        mmas += "  wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {" + \
                ", ".join(f"%d{i}" for i in range(16)) + f"}}, %rd10, %rd11, {'%p3' if s == 0 else '1'}, 1, 1, 0, 0;\n"
    stores = "".join(f"  st.global.u32 [%rd7+{4 * i}], %d{i};\n" for i in range(16))
    swz = "xor.b32 %r10, %r8, %r9;" if xor else "mov.u32 %r10, %r8;"
    return PROV.replace("{MMAS}", mmas).replace("{STORES}", stores).replace("{SWZ}", swz)


def _prov_data():
    rng = np.random.default_rng(7)
    A = rng.integers(-4, 5, (64, 64))
    B = rng.integers(-4, 5, (32, 64))
    smem = SharedMemory("sm90")
    for s in range(4):
        smem.write_operand(D(BASE + 32 * s, 16, 1024, "128B"), _bits(A[:, 16 * s:16 * s + 16], "bf16"), dtype="bf16")
    return A, B, smem.data[BASE:BASE + 0x2000].copy()


def test_cp_async_tile_with_the_right_swizzle():
    A, B, a_image = _prov_data()
    out = np.zeros(128 * 16, np.uint32)
    b = _bits(B, "bf16").reshape(32, 64)       # a 2-D array: provenance names its elements
    ptx.load(_prov_kernel("128B")).launch("k", grid=1, block=128, args=[out, a_image.view(np.uint32), b],
                                          shared_bytes=0x3000)
    d = tcemu.from_d_registers(out.reshape(128, 16), 32, "f32").view(np.float32)
    assert np.array_equal(d.astype(np.int64), A @ B.T)


@pytest.mark.parametrize("swizzle_b,xor", [("64B", True), ("none", True), ("128B", False)])
def test_cp_async_tile_with_a_wrong_swizzle_is_reported(swizzle_b, xor):
    A, B, a_image = _prov_data()
    out = np.zeros(128 * 16, np.uint32)
    b = _bits(B, "bf16").reshape(32, 64)
    text = _prov_kernel(swizzle_b, xor)
    with pytest.raises(HazardError) as e:
        ptx.load(text).launch("k", grid=1, block=128, args=[out, a_image.view(np.uint32), b], shared_bytes=0x3000)
    msg = str(e.value)
    assert "operand B" in msg and "is not a tile of the array its data was copied from" in msg
    assert msg.count("holds b[") == 2        # names two elements of the source array
    # check_layouts=False: the same launch runs (and computes a product of scrambled data)
    out[:] = 0
    ptx.load(text).launch("k", grid=1, block=128, args=[out, a_image.view(np.uint32), b], shared_bytes=0x3000,
                          check_layouts=False)
    d = tcemu.from_d_registers(out.reshape(128, 16), 32, "f32").view(np.float32)
    assert not np.array_equal(d.astype(np.int64), A @ B.T)
