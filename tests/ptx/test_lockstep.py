"""Lock-step gangs (tcemu/ptx/lockstep.py): converged warps of the resident CTAs at one PC run register-only stretches
as one batch; the results are those of warps one at a time (lockstep=False), bit for bit, and every expectation is
computed here in plain Python."""
import gc
import os

import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.ptx import lockstep

from paths import PTX_FIXTURES
from ptxkit import OUT_PROLOGUE, entry, run

# thread t of CTA c: ((t * 2654435761 + c) mod 2^32 >> 3) xor t, through a chain of ALU instructions
ALU = """\
  mov.u32 %r1, %ctaid.x;
  mad.lo.u32 %r2, %r0, -1640531535, %r1;
  shr.u32 %r3, %r2, 3;
  xor.b32 %r4, %r3, %r0;
  st.global.u32 [%rd5], %r4;
  ret;
"""
GLOBAL_INDEX = """\
  mov.u32 %r9, %ctaid.x;
  mov.u32 %r8, %ntid.x;
  mad.lo.u32 %r7, %r9, %r8, %r0;
  mul.wide.u32 %rd4, %r7, 4;
  add.s64 %rd5, %rd0, %rd4;
"""


def alu_model(grid, block):
    t = np.tile(np.arange(block, dtype=np.uint64), grid)
    c = np.repeat(np.arange(grid, dtype=np.uint64), block)
    return (((((t * np.uint64(2654435761) + c) & np.uint64(0xFFFFFFFF)) >> np.uint64(3)) ^ t)
            & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def counting(monkeypatch):
    """Count the batches lockstep.stretch runs and the warps in them."""
    seen = []
    real = lockstep.stretch

    def spy(gang, pc, m=None):
        seen.append(len(gang))
        return real(gang, pc, m)
    monkeypatch.setattr(lockstep, "stretch", spy)
    return seen


def test_warps_of_every_cta_run_their_alu_stretch_as_one_batch(monkeypatch):
    seen = counting(monkeypatch)
    out = run(GLOBAL_INDEX + ALU, grid=8, block=64)
    assert np.array_equal(out, alu_model(8, 64))
    assert max(seen) == 16          # 8 CTAs x 2 warps in one gang
    seen.clear()
    alone = run(GLOBAL_INDEX + ALU, grid=8, block=64, lockstep=False)
    assert np.array_equal(alone, out) and seen == []


def test_a_gang_splits_where_its_warps_branch_apart_and_each_part_stays_exact(monkeypatch):
    # warps 0 and 2 take one path, 1 and 3 the other (a warp-specialised kernel's roles); both paths are ALU only
    body = GLOBAL_INDEX + """\
  shr.u32 %r10, %r0, 5;
  and.b32 %r10, %r10, 1;
  setp.eq.u32 %p1, %r10, 1;
  @%p1 bra ODD;
  mul.lo.u32 %r4, %r0, 3;
  add.u32 %r4, %r4, 7;
  bra DONE;
ODD:
  mul.lo.u32 %r4, %r0, 5;
  sub.u32 %r4, %r4, 1;
DONE:
  st.global.u32 [%rd5], %r4;
  ret;
"""
    seen = counting(monkeypatch)
    out = run(body, grid=2, block=128)
    t = np.tile(np.arange(128, dtype=np.int64), 2)
    want = np.where((t >> 5) & 1, 5 * t - 1, 3 * t + 7).astype(np.uint32)
    assert np.array_equal(out, want)
    assert 8 in seen and 4 in seen   # the whole grid first, then each role's 4 warps (2 per CTA)


def test_bar_sync_releases_the_whole_gang_in_one_step():
    # each thread writes its word, bar.sync, reads its neighbour warp's word: needs every warp past the barrier
    body = """\
  mov.u32 %r1, smem;
  shl.b32 %r2, %r0, 2;
  add.u32 %r3, %r1, %r2;
  mad.lo.u32 %r5, %r0, 7, 1;
  st.shared.u32 [%r3], %r5;
  bar.sync 0;
  xor.b32 %r6, %r2, 128;
  add.u32 %r6, %r1, %r6;
  ld.shared.u32 %r7, [%r6];
  st.global.u32 [%rd1], %r7;
  ret;
"""
    out = run(body, block=128, before=".shared .align 16 .b8 smem[512];\n")
    t = np.arange(128)
    assert np.array_equal(out, 7 * (t ^ 32) + 1)


def test_a_fault_inside_a_batched_stretch_names_its_warp():
    # cvt.rni.s32.f32 is private; the fault comes from the store after it, reached by warp 1 only
    body = GLOBAL_INDEX + """\
  setp.ge.u32 %p1, %r0, 32;
  selp.u32 %r4, 1048576, 0, %p1;
  mul.wide.u32 %rd6, %r4, 4096;
  add.s64 %rd6, %rd5, %rd6;
  st.global.u32 [%rd6], %r0;
  ret;
"""
    with pytest.raises(ptx.MemoryFault, match=r"CTA \(0, 0, 0\), warp 1: thread 32 "):
        run(body, block=64)


def test_forced_batches_of_one_warp_give_the_same_bits(monkeypatch):
    monkeypatch.setattr(lockstep, "FORCE", True)
    seen = counting(monkeypatch)
    out = run(GLOBAL_INDEX + ALU, grid=1, block=32)
    assert np.array_equal(out, alu_model(1, 32)) and seen and set(seen) == {1}


def test_the_stretch_table_marks_only_register_only_instructions():
    text = entry(GLOBAL_INDEX + ALU)
    mod = ptx.load(text)
    mod.launch("k", grid=1, block=32, args=[np.zeros(32, np.uint32)])
    prog = mod.program("k")
    private = [str(i.opcode) for pc, i in enumerate(prog.instrs) if prog.lockstep_end[pc] > pc]
    shared = [str(i.opcode) for pc, i in enumerate(prog.instrs) if prog.lockstep_end[pc] == pc]
    assert shared == ["ld.param.u64", "st.global.u32", "ret"]
    assert "cvta.to.global.u64" in private and "mad.lo.u32" in private and "xor.b32" in private
    assert OUT_PROLOGUE.count("\n") + GLOBAL_INDEX.count("\n") + ALU.count("\n") == len(prog.instrs)


def test_each_later_wave_starts_together_and_runs_as_one_gang(monkeypatch):
    """resident=3: CTAs 0-2 start at once; when they have finished, CTAs 3-5 start together, then 6-7 (before, the
    CTAs after the first wave started one at a time as slots freed, and ran in gangs of one CTA)."""
    seen = counting(monkeypatch)
    out = run(GLOBAL_INDEX + ALU, grid=8, block=64, resident=3)
    assert np.array_equal(out, alu_model(8, 64))
    assert seen and set(seen) == {6, 4} and seen.count(4) == seen.count(6) // 2


# each iteration one thread (tid == i) folds itself into a shared word, then the CTA meets at bar.sync: every
# iteration splits one warp off the gang while the others wait at the barrier (CUTLASS's reference_abs_diff loop)
SERIAL = os.path.join(PTX_FIXTURES, "serial_barrier.ptx")


def fold(threads):
    acc = 7
    for t in range(threads):
        acc = (acc * 3 + t) & 0xFFFFFFFF
    return acc


@pytest.mark.parametrize("grid,resident", [(4, None), (5, 2)])
def test_one_thread_at_a_time_between_barriers_in_every_cta(grid, resident, monkeypatch):
    """The waiting warps of every CTA run as one gang each iteration; a warp of a later CTA moved by a gang an
    earlier CTA's warp led counts as that CTA's progress (before, such a CTA was reported hung)."""
    seen = counting(monkeypatch)
    kw = {} if resident is None else {"resident": resident}
    out = np.zeros(grid, np.uint32)
    ptx.load(SERIAL).launch("serial", grid=grid, block=96, args=[out], **kw)
    assert out.tolist() == [fold(96)] * grid
    assert max(seen) == 3 * min(grid, resident or grid)   # every resident CTA's three warps in one batch


def spied(body, opcode, grid, block, out_words=None, module=None, **kw):
    """Run a kernel built by entry() (or kernel `serial` of the PTX file `module`), recording what the gang version of `opcode` returns call by call: "fallback",
    or a letter per warp (".": falls through, "j": jumps, "B": blocks, "d": diverges)."""
    from tcemu.ptx.signals import BLOCK, Fallback
    seen = []
    name = "k" if module is None else "serial"
    mod = ptx.load(entry(body, **kw) if module is None else module)
    prog = mod.program(name)
    for pc, ins in enumerate(prog.instrs):
        g = getattr(prog.code[pc], "gang", None)
        if ins.opcode.startswith(opcode) and g is not None:
            def wrap(pairs, g=g):
                try:
                    out = g(pairs)
                except Fallback:
                    seen.append("fallback")
                    raise
                seen.append("." * len(pairs) if out is None else
                            "".join("B" if r is BLOCK else "." if r is None else "j" if isinstance(r, int)
                                    else "d" for r in out))
                return out
            prog.code[pc].gang = wrap
    out = np.zeros(out_words or block * grid, np.uint32)
    mod.launch(name, grid=grid, block=block, args=[out])
    return out, seen


def test_a_cta_that_arrives_together_passes_its_barrier_in_one_step():
    out, seen = spied(GLOBAL_INDEX + "  bar.sync 0;\n" + ALU, "bar.sync", grid=3, block=128)
    assert np.array_equal(out, alu_model(3, 128))
    assert seen == ["." * 12]          # three CTAs of four warps: one call, every warp passes


def test_waiting_warps_pass_together_once_the_last_one_arrives():
    out, seen = spied(None, "bar.sync", grid=2, block=96, out_words=2, module=SERIAL)
    assert out.tolist() == [fold(96)] * 2
    # each of the 97 generations: the two warps of each CTA without the updating lane wait in a gang step, and
    # pass in one once the third arrived (warps waiting on different generations, arriving and waiting warps in
    # one step: none falls back)
    assert "fallback" not in seen and sum(x.count(".") for x in seen) >= 97 * 4


def test_a_named_barrier_the_gang_would_complete_twice_runs_warp_by_warp():
    # four warps at bar.sync 1, 64: warps 0-1 complete one generation, 2-3 the next (PTX 9.7.12.1)
    out, seen = spied(GLOBAL_INDEX + "  bar.sync 1, 64;\n" + ALU, "bar.sync", grid=1, block=128)
    assert np.array_equal(out, alu_model(1, 128))
    assert seen == ["fallback"]


def test_a_branch_of_the_whole_gang_is_one_step_and_a_split_warp_diverges_alone():
    # lanes 0-39 (warp 0 and part of warp 1) skip the xor: warp 1 splits, warps 0 and 2-3 go one way each
    body = GLOBAL_INDEX + """\
  mov.u32 %r1, 7;
  setp.lt.u32 %p1, %r0, 40;
  @%p1 bra SKIP;
  xor.b32 %r1, %r1, %r0;
SKIP:
  st.global.u32 [%rd5], %r1;
  ret;
"""
    out, seen = spied(body, "bra", grid=1, block=128)
    t = np.arange(128, dtype=np.uint32)
    assert out.tolist() == np.where(t < 40, 7, 7 ^ t).tolist()
    assert seen == ["jd.."]


def test_a_wave_reads_its_registers_in_place_and_a_partial_gang_copies_them(monkeypatch):
    """A wave's register files are neighbouring columns of one array (machine.RegisterSlabs): a gang of whole
    CTAs admitted together batches its registers as a view, others gather and scatter them; bits equal."""
    views = []
    real = lockstep.Batch.__init__

    def spy(self, warps, touched):
        real(self, warps, touched)
        views.append((len(warps), self.view))
    monkeypatch.setattr(lockstep.Batch, "__init__", spy)
    out = run(GLOBAL_INDEX + ALU, grid=8, block=64, resident=3)
    assert np.array_equal(out, alu_model(8, 64))
    assert set(views) == {(6, True), (4, True)}   # waves of 3, 3 and 2 CTAs, each its own slab
    views.clear()
    # warps 0 and 2 of each CTA take one path, 1 and 3 the other: a gang of every other column copies
    body = GLOBAL_INDEX + """\
  and.b32 %r1, %r0, 32;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra EVEN;
  add.u32 %r4, %r0, 5;
  bra.uni OUT;
EVEN:
  mul.lo.u32 %r4, %r0, 3;
OUT:
  st.global.u32 [%rd5], %r4;
  ret;
"""
    out = run(body, grid=2, block=128)
    t = np.tile(np.arange(128, dtype=np.uint64), 2)
    assert out.tolist() == np.where((t & 32) == 0, t * 3, t + 5).astype(np.uint32).tolist()
    assert (8, True) in views and (4, False) in views


def test_a_launch_freezes_older_objects_only_while_it_runs_and_keeps_a_callers_freeze(monkeypatch):
    """module.launch: the cyclic GC's full collections skip what existed before the run (gc.freeze), and unfreeze
    after it; a caller that froze objects itself keeps its freeze (this session's conftest does)."""
    during = []
    real = lockstep.stretch

    def spy(gang, pc, m=None):
        during.append(gc.get_freeze_count())
        return real(gang, pc, m)
    monkeypatch.setattr(lockstep, "stretch", spy)
    gc.unfreeze()   # the session's own freeze: made again below
    try:
        out = run(GLOBAL_INDEX + ALU, grid=4, block=64)
        assert np.array_equal(out, alu_model(4, 64))
        assert during and min(during) > 0 and gc.get_freeze_count() == 0
        gc.freeze()
        out = run(GLOBAL_INDEX + ALU, grid=4, block=64)
        assert np.array_equal(out, alu_model(4, 64)) and gc.get_freeze_count() > 0   # not undone
    finally:
        gc.freeze()


def _param_loads(monkeypatch) -> list:
    """The CTA of each load of the parameter space (memory_ops.access), as the launch makes them."""
    from tcemu.ptx.ops import memory_ops
    calls = []
    real = memory_ops.access

    def spy(W, space, *a, **k):
        if space == "param":
            calls.append(W.cta.ctaid)
        return real(W, space, *a, **k)
    monkeypatch.setattr(memory_ops, "access", spy)
    return calls


def test_a_gangs_ld_param_is_one_load_for_all_its_warps(monkeypatch):
    """ld.param at an address naming no register: the gang reads the parameter bytes once and sets every warp's
    registers together (memory_ops._param_gang); bits as warps one at a time."""
    calls = _param_loads(monkeypatch)
    out = run(GLOBAL_INDEX + ALU, grid=8, block=64)   # OUT_PROLOGUE's ld.param.u64 of the output pointer
    assert np.array_equal(out, alu_model(8, 64)) and len(calls) == 1   # 16 warps, one load
    calls.clear()
    alone = run(GLOBAL_INDEX + ALU, grid=8, block=64, lockstep=False)
    assert np.array_equal(alone, out) and len(calls) == 16


def test_a_gangs_ld_param_through_a_register_is_one_load_where_every_lane_names_one_offset(monkeypatch):
    """ld.param [%rd+k] (CUTLASS reads its Params struct so): where the register holds one offset in every lane of
    every warp, one load for the gang; where it does not (here: an offset from %tid), warp by warp. Bits as warps
    one at a time either way."""
    calls = _param_loads(monkeypatch)
    params = ".param .u64 out, .param .u32 x, .param .u32 y"
    prologue = "  mov.u64 %rd6, x;\n" + OUT_PROLOGUE.replace("[out]", "[%rd6+-8]")   # out sits 8 bytes before x

    def body(offset):
        return f"""\
  {offset}
  ld.param.u32 %r2, [%rd7+4];
  add.u32 %r2, %r2, %r0;
  st.global.u32 [%rd1], %r2;
  ret;
"""
    uniform = body("mov.u64 %rd7, %rd6;")
    per_lane = body("cvt.u64.u32 %rd7, %r0;\n  and.b64 %rd7, %rd7, 4;\n  sub.s64 %rd7, %rd6, %rd7;")
    kw = dict(params=params, prologue=prologue, block=128, args=[np.uint32(7), np.uint32(100)])
    tid = np.arange(128, dtype=np.uint32)
    out = run(uniform, **kw)
    assert np.array_equal(out, tid + 100) and len(calls) == 2   # [%rd6+-8] and [%rd7+4]: one load each
    calls.clear()
    assert np.array_equal(run(uniform, lockstep=False, **kw), out) and len(calls) == 8   # 4 warps, two loads each
    calls.clear()
    out = run(per_lane, **kw)   # lanes with bit 2 of %tid set read 4 bytes lower: x instead of y
    want = np.where(tid & 4, 7, 100).astype(np.uint32) + tid
    assert np.array_equal(out, want) and len(calls) == 1 + 4   # the uniform load once, then warp by warp
    calls.clear()
    assert np.array_equal(run(per_lane, lockstep=False, **kw), want)


def test_special_registers_of_a_batch_are_each_warps_own():
    """lockstep.Batch.special gives %tid and %ctaid for all the batch's warps at once: a 2-D block of 16 x 4
    threads (two warps a CTA) in a 2 x 3 grid, each thread storing tid.x | tid.y << 8 | ctaid.x << 16 |
    ctaid.y << 24 at its linear index; bits as warps one at a time."""
    body = """\
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %tid.y;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ctaid.y;
  shl.b32 %r5, %r2, 8;
  or.b32 %r5, %r5, %r1;
  shl.b32 %r6, %r3, 16;
  or.b32 %r5, %r5, %r6;
  shl.b32 %r6, %r4, 24;
  or.b32 %r5, %r5, %r6;
  mad.lo.u32 %r7, %r2, 16, %r1;          // thread index in the CTA
  mad.lo.u32 %r8, %r4, 2, %r3;           // CTA index in the grid
  mad.lo.u32 %r7, %r8, 64, %r7;
  mul.wide.u32 %rd4, %r7, 4;
  add.s64 %rd5, %rd0, %rd4;
  st.global.u32 [%rd5], %r5;
  ret;
"""
    out = run(body, grid=(2, 3), block=(16, 4))
    x, y = np.meshgrid(np.arange(16), np.arange(4))
    cx, cy = np.meshgrid(np.arange(2), np.arange(3))
    want = (x.reshape(1, -1) | y.reshape(1, -1) << 8 | cx.reshape(-1, 1) << 16 | cy.reshape(-1, 1) << 24)
    assert out.tolist() == want.reshape(-1).astype(np.uint32).tolist()
    assert np.array_equal(run(body, grid=(2, 3), block=(16, 4), lockstep=False), out)



EACH_WARP = ("wgmma.fence", "wgmma.commit_group", "wgmma.wait_group", "fence.proxy.async", "cp.async.commit_group")


def test_fences_commits_and_waits_run_each_warp_in_one_gang_step():
    """Instructions of whole warps that neither block nor jump (ops/common.each_warp) run for a gang in one step,
    each warp's own effects in gang order: Triton's bf16 matmul (a cp.async pipeline into wgmma chains, 2 CTAs of 8
    warps) gives the bits of warps one at a time, every such instruction run for all 16 warps at once."""
    from tcemu.frontends.triton import run_compiled
    from tcemu.traces.inputs import input_bits
    from ptxkit import matmul_args, matmul_fixture
    meta, text = matmul_fixture("matmul_bf16")
    mod = ptx.load(text)
    prog = mod.program(meta["entry"])
    ran = {}
    for pc, ins in enumerate(prog.instrs):
        name = next((n for n in EACH_WARP if ins.opcode.startswith(n)), None)
        if name is not None:
            def spy(pairs, gang=prog.code[pc].gang, name=name):
                ran.setdefault(name, []).append(len(pairs))
                return gang(pairs)
            prog.code[pc].gang = spy
    M = N = K = 256
    a, b = input_bits("bf16", (M, K), 7, 0), input_bits("bf16", (K, N), 7, 1)
    outs = []
    for m in (mod, ptx.load(text)):
        c = np.zeros((M, N), np.uint16)
        run_compiled(m, meta, matmul_args(meta, a, b, c, M, N, K, True), lockstep=m is mod)
        outs.append(c)
    assert outs[0].any() and np.array_equal(outs[0], outs[1])
    assert sorted(ran) == sorted(EACH_WARP)
    assert {n for sizes in ran.values() for n in sizes} == {16}


# every thread of 2 warps arrives once on the mbarrier at `bar` (count 64), waits for its phase 0, and stores the
# count its arrival found pending (the state's high word, PTX 9.7.13.15.13)
ARRIVE = """\
  mov.u32 %r1, bar;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r1], 64;
  bar.sync 0;
  mbarrier.arrive.shared::cta.b64 %rd2, [%r1{off}];
$L_wait:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], 0;
  @!%p2 bra $L_wait;
  shr.u64 %rd3, %rd2, 32;
  cvt.u32.u64 %r2, %rd3;
  st.global.u32 [%rd1], %r2;
  ret;
"""
BAR = ".shared .align 8 .b64 bar;\n"


@pytest.mark.parametrize("off", ["", "+8"], ids=["arrive", "no-mbarrier"])
def test_mbarrier_arrivals_of_a_gang_give_the_states_and_reports_of_warps_in_gang_order(off, monkeypatch):
    """mbarrier.arrive runs for a gang's warps in one step (ops/common.each_warp), in gang order: each thread's
    state holds the count pending before its arrival, as the warps one after another leave it (warp 0's lanes,
    then warp 1's: 64 - t); an arrival at an address that holds no mbarrier names the first warp that makes it."""
    from ptxkit import REGS
    got = []
    for gangs in (True, False):
        monkeypatch.setattr(lockstep, "GANG_OPS", gangs)
        mod = ptx.load(entry(ARRIVE.format(off=off), regs=REGS + BAR))
        out = np.zeros(64, np.uint32)
        try:
            mod.launch("k", grid=1, block=64, args=[out])
            got.append(out)
        except ptx.KernelFault as e:
            got.append(str(e))
    if off:
        assert isinstance(got[0], str) and "no initialised mbarrier at shared address" in got[0]
        assert "CTA (0, 0, 0), warp 0:" in got[0] and got[0] == got[1]
    else:
        assert np.array_equal(got[0], 64 - np.arange(64)) and np.array_equal(got[0], got[1])


# lanes 0-15 of a one-warp CTA arrive on its mbarrier (count 16) on a branch's path: masked lanes
ARRIVE_HALF = """\
  mov.u32 %r1, bar;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r1], 16;
  bar.sync 0;
  mov.u64 %rd2, 0;
  setp.lt.u32 %p3, %r0, 16;
  @!%p3 bra $L_skip;
  mbarrier.arrive.shared::cta.b64 %rd2, [%r1];
$L_skip:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], 0;
  @!%p2 bra $L_skip;
  shr.u64 %rd3, %rd2, 32;
  cvt.u32.u64 %r2, %rd3;
  mov.u32 %r3, %ctaid.x;
  shl.b32 %r3, %r3, 7;
  cvt.u64.u32 %rd4, %r3;
  add.s64 %rd1, %rd1, %rd4;
  st.global.u32 [%rd1], %r2;
  ret;
"""


def test_masked_arrivals_of_one_warp_in_each_cta_run_as_one_gang_step(monkeypatch):
    """each_warp's gang takes masked lanes of one warp in each CTA too (op.gang.masked == "any"): four one-warp CTAs
    whose lanes 0-15 arrive on a branch's path do so in one step, with the states of warps in gang order."""
    from ptxkit import REGS
    got, sizes = [], []
    for gangs in (True, False):
        monkeypatch.setattr(lockstep, "GANG_OPS", gangs)
        mod = ptx.load(entry(ARRIVE_HALF, regs=REGS + BAR))
        prog = mod.program("k")
        pc = next(i for i, ins in enumerate(prog.instrs) if ins.opcode.startswith("mbarrier.arrive"))
        real = prog.code[pc].gang

        def spy(pairs, real=real):
            sizes.append([m is not None and int(m.sum()) for _, m in pairs])
            return real(pairs)
        spy.masked = real.masked
        prog.code[pc].gang = spy
        out = np.zeros(4 * 32, np.uint32)
        mod.launch("k", grid=4, block=32, args=[out])
        got.append(out)
    t = np.arange(32)
    assert np.array_equal(got[0], np.tile(np.where(t < 16, 16 - t, 0), 4)) and np.array_equal(got[0], got[1])
    assert sizes == [[16] * 4]   # (GANG_OPS off: no gang call)
