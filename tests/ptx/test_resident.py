"""Issue 23 (scheduling): CTAs that wait on each other. A warp spinning on memory nobody will change is proven to
hang (its state repeats while no byte changes: tcemu/ptx/hang.py) without waiting for a budget; then the next
clusters of the grid start, up to an H100's occupancy (tcemu/ptx/schedule.py), so grid barriers, stream-K
fix-ups and producer/consumer pairs across CTAs complete; past the resident limit they are a Deadlock, as on the
GPU. Each planted hang has a correct control that must complete."""
import time

import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.ptx import BudgetExceeded, Deadlock, PtxError
from tcemu.ptx import schedule

HEAD = ".version 8.3\n.target sm_90\n.address_size 64\n"


def _lines(text, *needles):
    lines = text.splitlines()
    return [next(i + 1 for i, ln in enumerate(lines) if ln.strip() == n) for n in needles]


# ---- a grid barrier through an atomic counter: thread 0 of each CTA arrives (atom.add) and spins until every
# CTA has; out[ctaid] = its arrival number + the count it saw after the barrier

def grid_barrier(spin="ld.volatile.global.u32"):
    return HEAD + f"""
.visible .entry gb(.param .u64 cnt, .param .u64 out)
{{
 .reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .pred %p<4>;
 ld.param.u64 %rd1, [cnt]; ld.param.u64 %rd2, [out];
 mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %nctaid.x;
 setp.ne.u32 %p1, %r1, 0;
 @%p1 bra $WAIT;
 atom.global.add.u32 %r4, [%rd1], 1;
$SPIN:
 {spin} %r5, [%rd1];
 setp.lt.u32 %p2, %r5, %r3;
 @%p2 bra $SPIN;
$WAIT:
 bar.sync 0;
 ld.volatile.global.u32 %r6, [%rd1];
 mul.wide.u32 %rd3, %r2, 4;
 add.u64 %rd4, %rd2, %rd3;
 @%p1 bra $END;
 add.u32 %r7, %r6, %r4;
 st.global.u32 [%rd4], %r7;
$END:
 ret;
}}
"""


@pytest.mark.parametrize("spin", ["ld.volatile.global.u32", "ld.acquire.gpu.global.u32"])
def test_grid_barrier_completes(spin):
    cnt, out = np.zeros(1, np.uint32), np.zeros(6, np.uint32)
    st = ptx.load(grid_barrier(spin)).launch("gb", grid=6, block=64, args=[cnt, out])
    assert cnt[0] == 6 and out.tolist() == [6, 7, 8, 9, 10, 11]   # CTAs arrive in grid order
    assert st["ctas"] == 6


def test_grid_barrier_with_more_ctas_than_resident_is_a_deadlock():
    text = grid_barrier()
    spin, bar, atom = _lines(text, "ld.volatile.global.u32 %r5, [%rd1];", "bar.sync 0;",
                             "atom.global.add.u32 %r4, [%rd1], 1;")
    cnt, out = np.zeros(1, np.uint32), np.zeros(4, np.uint32)
    t = time.monotonic()
    with pytest.raises(Deadlock) as e:
        ptx.load(text).launch("gb", grid=4, block=64, args=[cnt, out], resident=2)
    assert time.monotonic() - t < 2
    msg = str(e.value)
    assert not isinstance(e.value, BudgetExceeded) and e.value.field == "grid"
    assert msg.startswith("grid: the launch has more CTAs than resident=2 allows at once (2 resident of 4): the "
                          "resident CTAs wait for CTAs that cannot start until one of them finishes, so the kernel "
                          "deadlocks on the GPU too whenever it holds no more than 2 at once (an H100 holds 4,224 "
                          "of these CTAs at once).")
    assert (f"CTA (1, 0, 0):\n  warp 0: spins in a loop from ld.volatile.global.u32 %r5, [%rd1] (line {spin}) to "
            f"@%p2 bra $SPIN (line {spin + 2}) that only reads memory nobody changes (its state repeats)") in msg
    assert f"  warp 1: at bar.sync 0 (line {bar}); waits on barrier 0 (32 of 64 threads arrived)" in msg
    assert (f"    reads global address 0x7f0000000000 (4 bytes, 0 bytes into 'cnt' (4 bytes)), holding 0x2; last "
            f"written by CTA (1, 0, 0) warp 0: atom.global.add.u32 %r4, [%rd1], 1 (line {atom})") in msg
    assert cnt[0] == 2
    # the same launch with room for all four: the control
    cnt[:] = 0
    ptx.load(text).launch("gb", grid=4, block=64, args=[cnt, out], resident=4)
    assert out.tolist() == [4, 5, 6, 7]


def test_occupancy_is_an_h100s():
    assert schedule.occupancy(64, 0) == (32, "32 CTAs per SM")
    assert schedule.occupancy(256, 0) == (8, "2048 threads per SM (256 per CTA)")
    assert schedule.occupancy(1000, 0) == (2, "2048 threads per SM (1024 per CTA)")   # rounded up to warps
    assert schedule.occupancy(128, 100 * 1024) == (2, "228 KB of shared memory per SM (101 KB per CTA, 1 KB "
                                                      "reserved included)")
    assert schedule.occupancy(128, 227 * 1024)[0] == 1
    text = grid_barrier()
    with pytest.raises(Deadlock) as e:   # 4 CTAs of 1024 threads with 200 KB of shared memory: one per SM
        ptx.load(text).launch("gb", grid=3, block=64, args=[np.zeros(1, np.uint32), np.zeros(3, np.uint32)],
                              resident=1)
    assert "more CTAs than resident=1 allows at once (1 resident of 3)" in str(e.value)
    for bad in ("all", 0, True, 1.5, None):
        with pytest.raises(PtxError) as e:
            ptx.load(text).launch("gb", grid=2, block=64, args=[np.zeros(1, np.uint32), np.zeros(2, np.uint32)],
                                  resident=bad)
        assert e.value.field == "resident"


# ---- stream-K / split-K fix-up: CTA 0 waits for the partial of CTA 1 (and runs first)

SPLITK = HEAD + """
.visible .entry splitk(.param .u64 x, .param .u64 part, .param .u64 flag, .param .u64 out)
{
 .reg .b32 %r<10>; .reg .b64 %rd<12>; .reg .pred %p<4>;
 ld.param.u64 %rd1, [x]; ld.param.u64 %rd2, [part]; ld.param.u64 %rd3, [flag]; ld.param.u64 %rd4, [out];
 mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x;
 mad.lo.u32 %r3, %r2, 64, %r1;
 mul.wide.u32 %rd5, %r3, 4;
 add.u64 %rd6, %rd1, %rd5;
 ld.global.u32 %r4, [%rd6];
 mul.wide.u32 %rd7, %r2, 4;
 add.u64 %rd8, %rd2, %rd7;
 red.global.add.u32 [%rd8], %r4;
 bar.sync 0;
 setp.ne.u32 %p1, %r1, 0;
 @%p1 bra $END;
 setp.eq.u32 %p2, %r2, 0;
 @%p2 bra $FIXUP;
 fence.acq_rel.gpu;
 st.relaxed.gpu.global.u32 [%rd3], 1;
 bra $END;
$FIXUP:
 ld.acquire.gpu.global.u32 %r5, [%rd3];
 setp.eq.u32 %p3, %r5, 0;
 @%p3 bra $FIXUP;
 ld.global.u32 %r6, [%rd2];
 ld.global.u32 %r7, [%rd2+4];
 add.u32 %r8, %r6, %r7;
 st.global.u32 [%rd4], %r8;
$END:
 ret;
}
"""


def test_split_k_fixup_waiting_cta_first_completes():
    x = (np.arange(128, dtype=np.uint32) * 2654435761) % 1000
    part, flag, out = np.zeros(2, np.uint32), np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    st = ptx.load(SPLITK).launch("splitk", grid=2, block=64, args=[x, part, flag, out])
    assert part.tolist() == [int(x[:64].sum()), int(x[64:].sum())] and out[0] == int(x.sum()) and flag[0] == 1
    assert st["ctas"] == 2


# ---- a persistent work queue: the last CTA fills a table and raises a flag the others wait for; then every CTA
# takes tile numbers from an atomic counter until they run out

QUEUE = HEAD + """
.visible .entry queue(.param .u64 next, .param .u64 flag, .param .u64 table, .param .u64 out, .param .u32 ntiles)
{
 .reg .b32 %r<12>; .reg .b64 %rd<12>; .reg .pred %p<6>;
 .shared .align 4 .u32 tile;
 ld.param.u64 %rd1, [next]; ld.param.u64 %rd2, [flag]; ld.param.u64 %rd3, [table]; ld.param.u64 %rd4, [out];
 ld.param.u32 %r9, [ntiles];
 mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %nctaid.x;
 add.u32 %r4, %r2, 1;
 setp.eq.u32 %p1, %r4, %r3;
 @!%p1 bra $CONSUME;
 mul.wide.u32 %rd5, %r1, 4;
 add.u64 %rd6, %rd3, %rd5;
 mul.lo.u32 %r5, %r1, 3;
 st.global.u32 [%rd6], %r5;
 bar.sync 0;
 setp.ne.u32 %p2, %r1, 0;
 @%p2 bra $LOOP;
 st.release.gpu.global.u32 [%rd2], 1;
 bra $LOOP;
$CONSUME:
 ld.acquire.gpu.global.u32 %r6, [%rd2];
 setp.eq.u32 %p3, %r6, 0;
 @%p3 bra $CONSUME;
$LOOP:
 bar.sync 0;
 setp.ne.u32 %p2, %r1, 0;
 @%p2 bra $GOT;
 atom.global.add.u32 %r7, [%rd1], 1;
 st.shared.u32 [tile], %r7;
$GOT:
 bar.sync 0;
 ld.shared.u32 %r7, [tile];
 setp.ge.u32 %p4, %r7, %r9;
 @%p4 bra $END;
 mul.wide.u32 %rd5, %r1, 4;
 add.u64 %rd6, %rd3, %rd5;
 ld.global.u32 %r8, [%rd6];
 add.u32 %r8, %r8, %r7;
 mad.lo.u32 %r10, %r7, 32, %r1;
 mul.wide.u32 %rd7, %r10, 4;
 add.u64 %rd8, %rd4, %rd7;
 st.global.u32 [%rd8], %r8;
 bra $LOOP;
$END:
 ret;
}
"""


def test_persistent_work_queue_with_a_producer_cta_completes():
    nxt, flag, table = np.zeros(1, np.uint32), np.zeros(1, np.uint32), np.zeros(32, np.uint32)
    out = np.zeros(16 * 32, np.uint32)
    ptx.load(QUEUE).launch("queue", grid=4, block=32, args=[nxt, flag, table, out, 16])
    t, tile = np.arange(32), np.arange(16)[:, None]
    assert np.array_equal(out.reshape(16, 32), 3 * t + tile) and nxt[0] == 16 + 4 and flag[0] == 1


# ---- a spin nobody can satisfy: proven at once, naming what the warp reads and who (never) wrote it

WAIT = HEAD + """
.visible .entry wait(.param .u64 flag, .param .u64 out)
{
 .reg .b32 %r<4>; .reg .b64 %rd<4>; .reg .pred %p<2>;
 ld.param.u64 %rd1, [flag]; ld.param.u64 %rd2, [out];
$SPIN:
 ld.volatile.global.u32 %r1, [%rd1];
 setp.eq.u32 %p1, %r1, 0;
 @%p1 bra $SPIN;
 st.global.u32 [%rd2], %r1;
 ret;
}
"""


def test_spin_nobody_satisfies_is_a_deadlock_at_once():
    spin, = _lines(WAIT, "ld.volatile.global.u32 %r1, [%rd1];")
    t = time.monotonic()
    with pytest.raises(Deadlock) as e:
        ptx.load(WAIT).launch("wait", grid=1, block=32, args=[np.zeros(1, np.uint32), np.zeros(1, np.uint32)])
    assert time.monotonic() - t < 1.5
    assert not isinstance(e.value, BudgetExceeded)
    assert str(e.value) == (
        "CTA (0, 0, 0): every unfinished warp is blocked or spins in a loop that only reads memory nobody will change "
        "(a livelock, proven: the warp's whole state repeats while no byte changes):\n"
        "CTA (0, 0, 0):\n"
        f"  warp 0: spins in a loop from ld.volatile.global.u32 %r1, [%rd1] (line {spin}) to @%p1 bra $SPIN (line "
        f"{spin + 2}) that only reads memory nobody changes (its state repeats)\n"
        "    reads global address 0x7f0000000000 (4 bytes, 0 bytes into 'flag' (4 bytes)), holding 0x0; nothing in "
        "this launch wrote it")
    out = np.zeros(1, np.uint32)   # the control: the flag is already up
    ptx.load(WAIT).launch("wait", grid=1, block=32, args=[np.array([5], np.uint32), out])
    assert out[0] == 5


WAIT_SHARED = HEAD + """
.visible .entry waits(.param .u64 out, .param .u32 value)
{
 .reg .b32 %r<6>; .reg .b64 %rd<4>; .reg .pred %p<3>;
 .shared .align 4 .u32 flag;
 ld.param.u64 %rd1, [out]; ld.param.u32 %r4, [value];
 mov.u32 %r1, %tid.x;
 setp.lt.u32 %p1, %r1, 32;
 @%p1 bra $SPIN;
 st.volatile.shared.u32 [flag], %r4;
 ret;
$SPIN:
 ld.volatile.shared.u32 %r2, [flag];
 setp.ne.u32 %p2, %r2, 2;
 @%p2 bra $SPIN;
 st.global.u32 [%rd1], %r2;
 ret;
}
"""


def test_spin_on_shared_memory_names_the_last_writer():
    st, = _lines(WAIT_SHARED, "st.volatile.shared.u32 [flag], %r4;")   # strong: a flag, not a race
    with pytest.raises(Deadlock) as e:   # warp 1 writes 1, warp 0 waits for 2
        ptx.load(WAIT_SHARED).launch("waits", grid=1, block=64, args=[np.zeros(1, np.uint32), 1],
                                     zero_init_shared=True)
    msg = str(e.value)
    assert "  warp 0: spins in a loop from ld.volatile.shared.u32 %r2, [flag]" in msg and "  warp 1: exited" in msg
    assert ("    reads shared address 0x400 (4 bytes) of CTA rank 0, holding 0x1; last written by CTA (0, 0, 0) "
            f"warp 1: st.volatile.shared.u32 [flag], %r4 (line {st})") in msg
    out = np.zeros(1, np.uint32)   # the control: warp 1 writes 2
    ptx.load(WAIT_SHARED).launch("waits", grid=1, block=64, args=[out, 2], zero_init_shared=True)
    assert out[0] == 2


# ---- loops that end are never hangs; loops that read no memory are the budgets' (an unbounded loop, not a wait)

COUNT = HEAD + """
.visible .entry count(.param .u64 flag, .param .u64 out, .param .u32 n)
{
 .reg .b32 %r<6>; .reg .b64 %rd<4>; .reg .pred %p<2>;
 ld.param.u64 %rd1, [flag]; ld.param.u64 %rd2, [out]; ld.param.u32 %r3, [n];
 mov.u32 %r1, 0;
$L:
 ld.volatile.global.u32 %r2, [%rd1];
 add.u32 %r1, %r1, %r2;
 setp.lt.u32 %p1, %r1, %r3;
 @%p1 bra $L;
 st.global.u32 [%rd2], %r1;
 ret;
}
"""


REG_LOOP = HEAD + """
.visible .entry k(.param .u64 out, .param .u32 n)
{
 .reg .b32 %r<4>; .reg .b64 %rd<2>; .reg .pred %p<2>;
 ld.param.u64 %rd1, [out]; ld.param.u32 %r2, [n];
 mov.u32 %r1, 0;
$L:
 add.u32 %r1, %r1, 1;
 setp.lt.u32 %p1, %r1, %r2;
 @%p1 bra $L;
 st.global.u32 [%rd1], %r1;
 ret;
}
"""


def test_long_loops_that_end_are_not_hangs():
    # 6,000 iterations of 4 instructions reading memory and 10,000 of 3 without: probes run and fail
    out = np.zeros(1, np.uint32)
    st = ptx.load(COUNT).launch("count", grid=1, block=32, args=[np.array([1], np.uint32), out, 6000])
    assert out[0] == 6000 and st["warp_instructions"] == 3 + 1 + 4 * 6000 + 2   # probes execute nothing
    st = ptx.load(REG_LOOP).launch("k", grid=1, block=32, args=[out, 10_000])
    assert out[0] == 10_000 and st["warp_instructions"] == 3 + 3 * 10_000 + 2


@pytest.mark.slow
def test_a_200k_iteration_register_loop_is_not_a_hang():
    out = np.zeros(1, np.uint32)
    st = ptx.load(REG_LOOP).launch("k", grid=1, block=32, args=[out, 200_000])
    assert out[0] == 200_000 and st["warp_instructions"] == 3 + 3 * 200_000 + 2


def test_a_probe_is_invisible_to_the_trace():
    # the trace sees exactly the instructions the warps execute, as without probes: 3 per iteration
    seen = []
    out = np.zeros(1, np.uint32)
    ptx.load(COUNT).launch("count", grid=1, block=32, args=[np.array([1], np.uint32), out, 3000],
                           trace=lambda w, pc, m, r: seen.append(pc))
    assert len(seen) == 3 + 1 + 4 * 3000 + 2 and seen[:6] == [0, 1, 2, 3, 4, 5] and seen[-2:] == [8, 9]


def test_a_loop_reading_no_memory_is_left_to_the_budgets():
    spin = HEAD + ".visible .entry k()\n{\n$L:\nbra $L;\n}\n"
    with pytest.raises(BudgetExceeded, match="more than 50000 warp instructions"):
        ptx.load(spin).launch("k", grid=1, block=32, max_instructions=50_000)
    with pytest.raises(BudgetExceeded, match="time limit of 0.3 s"):
        ptx.load(spin).launch("k", grid=1, block=32, timeout=0.3)


def test_spin_on_the_clock_is_not_proven():
    # %clock changes registers: never a proven cycle; the time budget ends it
    text = WAIT.replace(" ld.volatile.global.u32 %r1, [%rd1];", " ld.volatile.global.u32 %r1, [%rd1];\n"
                                                                 " mov.u32 %r3, %clock;")
    with pytest.raises(BudgetExceeded, match="time limit of 0.5 s"):
        ptx.load(text).launch("wait", grid=1, block=32, args=[np.zeros(1, np.uint32), np.zeros(1, np.uint32)],
                              timeout=0.5)


def test_subset_launch_runs_only_what_was_asked():
    # ctas= picks CTA 1 of the grid barrier alone: it waits for the others, which were not asked for
    cnt, out = np.zeros(1, np.uint32), np.zeros(4, np.uint32)
    with pytest.raises(Deadlock, match="every unfinished warp is blocked or spins"):
        ptx.load(grid_barrier()).launch("gb", grid=4, block=64, args=[cnt, out], ctas=[(1,)])
    cnt[:] = 0
    st = ptx.load(grid_barrier()).launch("gb", grid=4, block=64, args=[cnt, out], ctas=[0, 1, 2, 3])
    assert st["ctas"] == 4 and out.tolist() == [4, 5, 6, 7]


def test_the_default_limit_is_an_h100s_occupancy(monkeypatch):
    # 200 KB of shared memory: one CTA per SM; with 2 SMs (a smaller H100, to keep it short) 2 CTAs at once
    monkeypatch.setattr(schedule, "SMS", 2)
    cnt, out = np.zeros(1, np.uint32), np.zeros(3, np.uint32)
    with pytest.raises(Deadlock) as e:
        ptx.load(grid_barrier()).launch("gb", grid=3, block=64, args=[cnt, out], shared_bytes=200 * 1024)
    assert str(e.value).startswith(
        "grid: the launch has more CTAs than an H100 holds at once (2 resident of 3): the resident CTAs wait for CTAs "
        "that cannot start until one of them finishes, so the kernel deadlocks on the GPU too (1 CTAs per SM x 2 "
        "SMs, limited by 228 KB of shared memory per SM (201 KB per CTA, 1 KB reserved included); registers per "
        "thread are unknown before ptxas and not counted).")
    cnt[:] = 0   # the control: "grid" lets all three run
    ptx.load(grid_barrier()).launch("gb", grid=3, block=64, args=[cnt, out], shared_bytes=200 * 1024,
                                    resident="grid")
    assert out.tolist() == [3, 4, 5]


def test_the_cpu_memory_limit_is_named_when_it_binds(monkeypatch):
    from tcemu.ptx import module
    mod = ptx.load(grid_barrier())
    prog = mod.program("gb")
    one = mod._cluster_bytes(prog, 64, (1, 1, 1), prog.dynamic_base() - module.SMEM_RESERVED)   # no dynamic bytes
    monkeypatch.setattr(module, "MEMORY_LIMIT", 2 * one + one // 2)
    with pytest.raises(Deadlock) as e:
        mod.launch("gb", grid=3, block=64, args=[np.zeros(1, np.uint32), np.zeros(3, np.uint32)])
    assert str(e.value).startswith(
        "grid: the launch has more CTAs than tcemu keeps resident within its memory limit "
        "(tcemu.ptx.module.MEMORY_LIMIT) at once (2 resident of 3): the resident CTAs wait for CTAs that cannot "
        "start until one of them finishes (an H100 holds 4,224 of these CTAs at once; raise MEMORY_LIMIT or pass a "
        "smaller grid).")


def test_cooperative_groups_grid_sync_from_nvcc():
    # cg::this_grid().sync() (tests/fixtures/ptx/cg_grid_sync.cu): the grid workspace comes from %envreg1/2
    from paths import PTX_FIXTURES
    mod = ptx.load(f"{PTX_FIXTURES}/cg_grid_sync.ptx")
    out = np.zeros(1 + 5, np.int32)
    mod.launch("_Z5gsyncPi", grid=5, block=64, args=[out], cooperative=True)
    assert out.tolist() == [5, 5, 5, 5, 5, 5]
    with pytest.raises(ptx.KernelFault, match="trap executed"):   # not cooperative: no workspace, grid.sync traps
        mod.launch("_Z5gsyncPi", grid=5, block=64, args=[np.zeros(6, np.int32)])
    with pytest.raises(PtxError, match=r"4,225 CTAs; a cooperative launch may have at most as many as the GPU holds "
                                       r"at once \(4,224 on an H100 here: 32 CTAs per SM x 132 SMs"):
        mod.launch("_Z5gsyncPi", grid=4225, block=64, args=[np.zeros(6, np.int32)], cooperative=True)


# ---- warps of a CTA that spin through bar.sync together (as Triton broadcasts a scalar atomic) are proven as one

BAR_SPIN = HEAD + """
.visible .entry barspin(.param .u64 flag, .param .u64 out, .param .u32 step)
{
 .reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<3>;
 .shared .align 4 .u32 seen;
 ld.param.u64 %rd1, [flag]; ld.param.u64 %rd2, [out]; ld.param.u32 %r5, [step];
 mov.u32 %r1, %tid.x;
 setp.eq.u32 %p1, %r1, 0;
$LOOP:
 bar.sync 0;
 @!%p1 bra $WAIT;
 ld.volatile.global.u32 %r2, [%rd1];
 add.u32 %r2, %r2, %r5;
 st.volatile.global.u32 [%rd1], %r2;
 st.shared.u32 [seen], %r2;
$WAIT:
 bar.sync 0;
 ld.shared.u32 %r3, [seen];
 setp.lt.u32 %p2, %r3, 1000;
 @%p2 bra $LOOP;
 @%p1 st.global.u32 [%rd2], %r3;
 ret;
}
"""


def test_warps_spinning_through_bar_sync_are_proven_together():
    # step 0: thread 0 re-reads the flag and broadcasts it through shared memory; nobody raises it
    bar_line, = _lines(BAR_SPIN, "bar.sync 0;")
    with pytest.raises(Deadlock) as e:
        ptx.load(BAR_SPIN).launch("barspin", grid=1, block=96, args=[np.zeros(1, np.uint32), np.zeros(1, np.uint32), 0])
    msg = str(e.value)
    assert not isinstance(e.value, BudgetExceeded)
    assert f"  warp 0: spins in a loop from bar.sync 0 (line {bar_line}) to " in msg
    assert "(with warps 1, 2) that only reads memory nobody changes" in msg
    assert "  warp 2: spins in a loop from " in msg and "    reads what warp 0 reads" in msg
    assert "reads global address 0x7f0000000000 (4 bytes, 0 bytes into 'flag' (4 bytes)), holding 0x0; last written " \
           "by CTA (0, 0, 0) warp 0: st.volatile.global.u32 [%rd1], %r2" in msg   # the same value: no change
    # the control: step 8 raises the flag each round (the warps change memory: never proven) until 1000
    flag, out = np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    ptx.load(BAR_SPIN).launch("barspin", grid=1, block=96, args=[flag, out, 8])
    assert flag[0] == 1000 and out[0] == 1000


def test_a_whole_grids_clusters_come_in_launch_order_without_a_list_of_them(monkeypatch):
    """schedule.Corners: a launch of the whole grid admits its clusters in the order a launch of every CTA listed
    with ctas= does (x fastest), made by index (a 2^20-CTA grid keeps no 2^20 tuples); same output words."""
    grid, cluster = (6, 4, 3), (2, 2, 1)
    listed = [(x, y, z) for z in range(grid[2]) for y in range(grid[1]) for x in range(grid[0])]
    want = list(dict.fromkeys(tuple(c[i] // cluster[i] for i in range(3)) for c in listed))
    corners = schedule.Corners(tuple(g // c for g, c in zip(grid, cluster)))
    assert [corners[i] for i in range(len(corners))] == want
    with pytest.raises(IndexError):
        corners[len(corners)]
    seen = []
    real = schedule.Residency.__init__

    def spy(self, resident, corners, *a, **k):
        seen.append(corners)
        real(self, resident, corners, *a, **k)
    monkeypatch.setattr(schedule.Residency, "__init__", spy)
    text = """.version 8.3
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out) .explicitcluster .reqnctapercluster 2, 2, 1
{
 .reg .b32 %r<8>; .reg .b64 %rd<4>;
 ld.param.u64 %rd1, [out]; cvta.to.global.u64 %rd1, %rd1;
 mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ctaid.y; mov.u32 %r3, %ctaid.z;
 mad.lo.u32 %r4, %r3, 4, %r2; mad.lo.u32 %r4, %r4, 6, %r1;
 mul.wide.u32 %rd2, %r4, 4; add.s64 %rd2, %rd1, %rd2;
 mad.lo.u32 %r5, %r3, 256, %r2; shl.b32 %r5, %r5, 8; or.b32 %r5, %r5, %r1;
 st.global.u32 [%rd2], %r5;
 ret;
}
"""
    mod = ptx.load(text)
    outs = []
    for ctas in (None, listed):
        out = np.zeros(72, np.uint32)
        mod.launch("k", grid=grid, block=32, cluster=cluster, args=[out], ctas=ctas)
        outs.append(out)
    assert isinstance(seen[0], schedule.Corners) and not isinstance(seen[1], schedule.Corners)
    x, y, z = np.meshgrid(np.arange(6), np.arange(4), np.arange(3), indexing="ij")
    want = np.zeros(72, np.uint32)
    want[(z * 4 + y) * 6 + x] = (z << 16 | y << 8 | x)
    assert np.array_equal(outs[0], want) and np.array_equal(outs[1], want)


def test_a_finished_cta_is_freed_without_the_cycle_collector(monkeypatch):
    """Cta.release cuts the reference cycles through a finished CTA (its warps' `cta`, its cluster's lists, the
    write log's watch of its shared window), so reference counting frees it and its window: the cyclic garbage
    collector had spent a third of a grid of one-warp CTAs' time collecting them."""
    import gc
    import weakref
    from tcemu.ptx import machine
    refs = []
    real = machine.Cta.__init__

    def spy(self, launch, ctaid, prog, shared, rank=0):
        real(self, launch, ctaid, prog, shared, rank)
        refs.append((weakref.ref(self), weakref.ref(shared), weakref.ref(self.warps[0])))
    monkeypatch.setattr(machine.Cta, "__init__", spy)
    text = """.version 8.3
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{
 .reg .b32 %r<4>; .reg .b64 %rd<4>;
 .shared .align 4 .b32 s[32];
 ld.param.u64 %rd1, [out]; cvta.to.global.u64 %rd1, %rd1;
 mov.u32 %r1, %ctaid.x; mov.u32 %r2, %tid.x; mov.u32 %r3, s;
 shl.b32 %r2, %r2, 2; add.u32 %r3, %r3, %r2; st.shared.u32 [%r3], %r1; bar.sync 0;
 ld.shared.u32 %r1, [%r3]; shr.u32 %r2, %r2, 2; mad.lo.u32 %r1, %r1, 32, %r2;
 mul.wide.u32 %rd2, %r1, 4; add.s64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r1;
 ret;
}
"""
    out = np.zeros(64 * 32, np.uint32)
    was = gc.isenabled()
    gc.disable()
    try:
        ptx.load(text).launch("k", grid=64, block=32, args=[out])
        assert out.tolist() == list(range(64 * 32))
        assert len(refs) == 64 and all(r() is None for three in refs for r in three)
    finally:
        if was:
            gc.enable()


def test_the_wave_estimate_follows_the_kernels_shadows():
    """A CTA's shared state is estimated per byte of its window by kernel (module.shadow_bytes): granule shadows,
    racecheck records per unit of its narrowest shared access with a row per warp, per-byte shadows where it stores
    parts of granules, TMA shadows where it has a bulk or tensor copy. Triton's cp.async GEMM (145 KB of shared
    memory, 8 warps, 16-byte unit) starts 27 CTAs a wave within 64 MB (12 when one figure, 28 a byte, served every
    kernel); waves of fewer than WAVE_CTAS (16) grow to it within WAVE_BYTES_MAX (256 MB): its TMA version (11
    within 64 MB) to 16, CUTLASS ping-pong (210 KB, 12 warps, 4-byte unit, TMA: 3 within 64 MB, 4 had been a third
    over the budget) to the 12 that 256 MB hold."""
    import json
    import os
    from tcemu.ptx import module
    fx = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ptx")
    waves, per = {}, {}
    for kernel, threads, smem in (("matmul_bf16", 256, 147456), ("matmul_tma_bf16", 256, 147456),
                                  ("cutlass_pingpong_bf16", 384, 215040)):
        mod = ptx.load(open(os.path.join(fx, kernel + ".ptx")).read())
        prog = mod.program(list(mod.kernels)[0])
        per[kernel] = module.shadow_bytes(prog, threads // 32)
        assert mod._shared_state(prog, threads // 32, (1, 1, 1), smem) == \
            228 * 1024 * 2 + int((1024 + smem) * per[kernel]) + module.SMALL_SHADOW_BYTES
        cluster_bytes = mod._cluster_bytes(prog, threads, (1, 1, 1), smem)
        grid_ = schedule.Residency("occupancy", [(0, 0, 0)] * 64, None, threads, smem, 1, cluster_bytes,
                                   module.MEMORY_LIMIT)
        waves[kernel] = grid_.wave
    # 1.5 + (4 + 8) 8 / 16; + 25.5 (TMA); 1.5 + (4 + 12) 8 / 4 + 16 (parts of granules) + 25.5 (TMA)
    assert per == {"matmul_bf16": 7.5, "matmul_tma_bf16": 33, "cutlass_pingpong_bf16": 75}
    assert waves == {"matmul_bf16": 27, "matmul_tma_bf16": 16, "cutlass_pingpong_bf16": 12}
    assert schedule.WAVE_CTAS == 16 and schedule.WAVE_BYTES_MAX == 256 << 20 and schedule.WAVE_BYTES == 64 << 20


def test_the_wave_estimate_holds_what_a_cta_allocates(monkeypatch):
    """What a finished CTA's window holds (its bytes, flags, shadows and racecheck records), measured at its release,
    lies within the estimate and above three quarters of it, for Triton's GEMM and CUTLASS ping-pong."""
    import json
    import os
    from tcemu.frontends.triton import run_compiled
    from tcemu.ptx import machine, module
    from tcemu.traces import launches
    from tcemu.traces.inputs import input_bits
    fx = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ptx")
    held = []
    release = machine.Cta.release

    def measure(self):
        sh, seen = self.shared, set()

        def arrays(obj, depth=0):
            for v in vars(obj).values():
                if isinstance(v, np.ndarray) and id(v) not in seen:
                    seen.add(id(v))
                    yield v.nbytes
                elif depth < 2 and hasattr(v, "__dict__") and v.__class__.__module__.startswith("tcemu.") and \
                        not callable(v) and v is not self.launch:
                    yield from arrays(v, depth + 1)
        held.append((sum(arrays(sh)), self.prog, sh.hi))
        release(self)
    monkeypatch.setattr(machine.Cta, "release", measure)
    meta = json.load(open(os.path.join(fx, "matmul_bf16.json")))
    mod = ptx.load(open(os.path.join(fx, "matmul_bf16.ptx")).read())
    n = 256
    run_compiled(mod, meta, {"a_ptr": input_bits("bf16", (n, n), 1, 0), "b_ptr": input_bits("bf16", (n, n), 1, 1),
                             "c_ptr": np.zeros((n, n), np.uint16), "M": n, "N": n, "K": n, "stride_am": n,
                             "stride_bk": n, "stride_cm": n})
    rec = json.load(open(os.path.join(fx, "bench_cutlass_pingpong_bf16_512.json")))["launch"]
    launches.replay(rec, os.path.join(fx, "cutlass_pingpong_bf16.ptx"), seed=1, ctas=[(0, 0, 0)])
    assert len(held) == 3
    for (got, prog, hi), threads in zip(held[1:], (256, 384)):
        want = 228 * 1024 * 2 + hi * module.shadow_bytes(prog, threads // 32) + module.SMALL_SHADOW_BYTES
        assert 0.75 * want < got <= want, (prog.name, got, want)


def test_a_grid_smaller_than_a_wave_gets_register_slabs_for_its_own_ctas(monkeypatch):
    """The register slab of a wave holds the wave's CTAs side by side, but no more than the grid has: Triton's GEMM
    (27 CTAs a wave) launched on a 2-CTA grid had paid for 27 CTAs' files (~35 ms a launch on the VM)."""
    import json
    import os
    from tcemu.frontends.triton import run_compiled
    from tcemu.ptx import machine, module
    from tcemu.traces.inputs import input_bits
    made = []

    class Slabs(machine.RegisterSlabs):
        def __init__(self, ctas, by_warp=False):
            made.append(ctas)
            super().__init__(ctas, by_warp)
    monkeypatch.setattr(module, "RegisterSlabs", Slabs)
    fx = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ptx")
    meta = json.load(open(os.path.join(fx, "matmul_bf16.json")))
    mod = ptx.load(open(os.path.join(fx, "matmul_bf16.ptx")).read())
    for n, want in ((256, 2), (512, 8)):
        c = np.zeros((n, n), np.uint16)
        run_compiled(mod, meta, {"a_ptr": input_bits("bf16", (n, n), 1, 0), "b_ptr": input_bits("bf16", (n, n), 1, 1),
                                 "c_ptr": c, "M": n, "N": n, "K": n, "stride_am": n, "stride_bk": n,
                                 "stride_cm": n})
        assert made[-1] == want
