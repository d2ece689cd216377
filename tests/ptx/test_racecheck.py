"""racecheck (tcemu/ptx/races.py): planted shared-memory races, each reported naming both accesses, beside a
correct control that must pass. Hand-written PTX; %r0 is %tid.x (tests/support/ptxkit.py)."""
from types import SimpleNamespace

import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.ptx.errors import Deadlock, HazardError, MemoryFault
from tcemu.ptx.races import ClusterRaces, WarpClock, collective_release

from ptxkit import entry, run

SMEM = ".shared .align 16 .b8 smem[4096];\n"
ADDR = """\
  mov.u32 %r3, smem;
  shl.b32 %r2, %r0, 2;
  add.u32 %r4, %r3, %r2;          // &smem[tid]
  setp.lt.u32 %p1, %r0, 32;       // warp 0
"""


def go(body, block=64, **kw):
    return run(ADDR + body, block=block, before=SMEM, **kw)


# ------------------------------------------------------------------------------------------- between warps

RAW = """\
  @%p1 st.shared.u32 [%r4], %r0;          // warp 0 writes smem[0..31]
{sync}
  @!%p1 ld.shared.u32 %r5, [%r4+-128];    // warp 1 reads them
  st.global.u32 [%rd1], %r5;
  ret;
"""


def test_raw_between_warps_names_both_accesses():
    with pytest.raises(HazardError) as e:
        go(RAW.format(sync=""))
    msg = str(e.value)
    assert "RAW race on shared address 0x400 of CTA (0, 0, 0)" in msg
    assert "thread 32 (warp 1, CTA (0, 0, 0)) reads it here" in msg
    assert "thread 0 (warp 0, CTA (0, 0, 0)) at @%p1 st.shared.u32 [%r4], %r0 (line 22) wrote it" in msg
    assert msg.startswith("@!%p1 ld.shared.u32 %r5, [%r4+-128] (line 24), CTA (0, 0, 0), warp 1")


def test_raw_control_with_bar_sync_passes():
    out = go(RAW.format(sync="  bar.sync 0;"))
    assert np.array_equal(out[32:], np.arange(32))


def test_raw_ordered_only_by_bar_warp_sync_is_a_race():
    # __syncwarp orders the lanes of its own warp, not warp 0's store before warp 1's load
    with pytest.raises(HazardError, match=r"RAW race on shared address 0x400 .* \(warp 0, .* wrote it; no "
                                          r"synchronisation orders the two warps"):
        go(RAW.format(sync="  bar.warp.sync -1;"))


def test_check_races_false_turns_racecheck_off():
    # check_races=False: today's behaviour (warp 0 ran first, so the output happens to be right)
    out = go(RAW.format(sync=""), check_races=False)
    assert np.array_equal(out[32:], np.arange(32))


WAR = """\
  st.shared.u32 [%r4], %r0;
  bar.sync 0;
  @!%p1 ld.shared.u32 %r5, [%r4+-128];    // warp 1 reads warp 0's word
{sync}
  @%p1 st.shared.u32 [%r4], 7;            // warp 0 overwrites it
  st.global.u32 [%rd1], %r5;
  ret;
"""


def test_war_between_warps_names_both_accesses():
    # warp 1 completes the barrier and runs on first: its read comes before warp 0's write in tcemu's order
    with pytest.raises(HazardError) as e:
        go(WAR.format(sync=""))
    msg = str(e.value)
    assert "WAR race on shared address 0x400" in msg
    assert "thread 0 (warp 0, CTA (0, 0, 0)) writes it here" in msg
    assert "thread 32 (warp 1, CTA (0, 0, 0)) at @!%p1 ld.shared.u32 %r5, [%r4+-128] (line 24) read it" in msg


def test_the_same_race_in_the_other_order_is_reported_too():
    # swapped roles: warp 0 reads warp 1's word after warp 1 (which ran on) overwrote it; the same pair of
    # accesses, seen as RAW: the report does not depend on which warp tcemu ran first
    body = WAR.format(sync="").replace("@!%p1 ld.shared.u32 %r5, [%r4+-128]", "@%p1 ld.shared.u32 %r5, [%r4+128]") \
        .replace("@%p1 st.shared.u32 [%r4], 7", "@!%p1 st.shared.u32 [%r4], 7")
    with pytest.raises(HazardError, match=r"RAW race on shared address 0x480 .*thread 0 \(warp 0.* reads it here; "
                                          r"thread 32 \(warp 1.* at @!%p1 st.shared.u32 \[%r4\], 7 \(line 26\) "
                                          r"wrote it"):
        go(body, lockstep=False)


def test_war_control_with_bar_sync_passes():
    out = go(WAR.format(sync="  bar.sync 0;"))
    assert np.array_equal(out[32:], np.arange(32))


WAW = """\
  setp.eq.u32 %p2, %r2, 0;
  setp.eq.u32 %p3, %r0, 32;
  @%p2 st.shared.u32 [%r3], 1;            // thread 0 writes smem[0]
{sync}
  @%p3 st.shared.u32 [%r3], 2;            // thread 32 writes it too
  bar.sync 0;
  ld.shared.u32 %r5, [%r3];
  st.global.u32 [%rd1], %r5;
  ret;
"""


def test_waw_between_warps_names_both_accesses():
    with pytest.raises(HazardError, match=r"WAW race on shared address 0x400 .*thread 32 \(warp 1.* writes it "
                                          r"here; thread 0 \(warp 0.* at @%p2 st.shared.u32 \[%r3\], 1 \(line 24\) "
                                          r"wrote it"):
        go(WAW.format(sync=""))


def test_waw_control_with_bar_sync_passes():
    assert (go(WAW.format(sync="  bar.sync 0;")) == 2).all()


def test_barrier_with_a_thread_count_orders_only_its_participants():
    # warps 0 and 1 meet on barrier 1 (64 threads): warp 2 is not ordered after warp 0's store
    body = RAW.format(sync="  @!%p4 bar.sync 1, 64;").replace("@!%p1 ld", "@%p5 ld")
    body = "  setp.ge.u32 %p4, %r0, 64;\n  setp.ge.u32 %p5, %r0, 32;\n" + body
    out = go(body.replace("[%r4+-128]", "[%r3]"), block=64)
    assert (out[32:] == 0).all()
    with pytest.raises(HazardError, match="RAW race .* thread 64 \\(warp 2"):
        go(body.replace("[%r4+-128]", "[%r3]"), block=96)


# ------------------------------------------------------------------------------------------- within a warp

def test_lanes_of_one_store_writing_one_byte_with_different_values_race():
    with pytest.raises(HazardError, match=r"WAW race on shared address 0x400 .*thread 1 \(warp 0.* writes it here; "
                                          r"thread 0 \(warp 0.* wrote it; both lanes write it in this one "
                                          r"instruction, with different values"):
        go("  st.shared.u32 [%r3], %r0;\n  ret;\n", block=32)
    go("  st.shared.u32 [%r3], 5;\n  ret;\n", block=32)   # the same value: no race


DIVERGED = """\
  setp.lt.u32 %p2, %r0, 16;
  @%p2 bra A;
  st.shared.u32 [%r3], 9;                // lanes 16-31
  bra J;
A:
{read_a}
J:
{read_j}
  st.global.u32 [%rd1], %r5;
  ret;
"""


def test_lanes_on_different_paths_of_a_branch_race_until_they_reconverge():
    with pytest.raises(HazardError, match=r"RAW race on shared address 0x400 .*thread 0 \(warp 0.* reads it here; "
                                          r"thread 31 \(warp 0.* wrote it; the two threads are lanes of one warp on "
                                          r"different paths"):
        go(DIVERGED.format(read_a="  ld.shared.u32 %r5, [%r3];", read_j=""), block=32)


def test_diverged_lanes_read_after_the_join_control_passes():
    # the read after the paths join (the warp reconverged) is ordered after the store of lanes 16-31
    body = DIVERGED.format(read_a="", read_j="  ld.shared.u32 %r5, [%r3];")
    assert (go(body, block=32) == 9).all()


# ------------------------------------------------------------------------------------------- mbarrier

MBAR = ".shared .align 8 .b64 bar;\n"
PRODUCER = """\
  mov.u32 %r6, bar;
  setp.eq.u32 %p2, %r0, 0;
  @%p2 mbarrier.init.shared::cta.b64 [%r6], {count};
  bar.sync 0;
  @!%p1 st.shared.u32 [%r4], %r0;        // warps 1 and 2 produce their words
  @!%p1 mbarrier.arrive.shared::cta.b64 %rd5, [%r6];
  @!%p1 bra DONE;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p5, [%r6], 0;
  @!%p5 bra WAIT;
  ld.shared.u32 %r5, [%r4+128];          // warp 0 reads warp 1's words...
  ld.shared.u32 %r7, [%r4+256];          // ... and warp 2's
  add.u32 %r5, %r5, %r7;
DONE:
  st.global.u32 [%rd1], %r5;
  ret;
"""


def test_mbarrier_ordered_producer_consumer_passes():
    out = run(ADDR + PRODUCER.format(count=64), block=96, before=SMEM + MBAR)
    t = np.arange(32)
    assert np.array_equal(out[:32], 2 * t + 96)


def test_mbarrier_with_a_wrong_arrival_count_names_the_race_not_an_unwritten_read():
    # count 32: the phase completes once warp 2 (the first to run on) arrives; warp 0 reads warp 1's words
    # before warp 1 writes them
    with pytest.raises(HazardError) as e:
        run(ADDR + PRODUCER.format(count=32), block=96, before=SMEM + MBAR, lockstep=False)
    msg = str(e.value)
    assert "WAR race on shared address 0x480" in msg and "nothing wrote" not in msg
    assert "thread 32 (warp 1, CTA (0, 0, 0)) writes it here" in msg
    assert "thread 0 (warp 0, CTA (0, 0, 0)) at ld.shared.u32 %r5, [%r4+128] (line 33) read it" in msg
    # without racecheck: the read of memory nothing had written yet
    with pytest.raises(MemoryFault, match="nothing wrote"):
        run(ADDR + PRODUCER.format(count=32), block=96, before=SMEM + MBAR, check_races=False, lockstep=False)
    # in lock-step warps 1 and 2 arrive together: the second arrival completes the next phase too, and warp 0
    # waits for a phase nobody will complete
    with pytest.raises(Deadlock, match=r"warp 0: at mbarrier.try_wait.*waits on parity 0 .*phase 2 \(parity 0\)"):
        run(ADDR + PRODUCER.format(count=32), block=96, before=SMEM + MBAR)


def test_a_read_nothing_ever_writes_is_still_the_unwritten_read():
    with pytest.raises(MemoryFault, match="which nothing wrote"):
        go("  ld.shared.u32 %r5, [%r4+256];\n  st.global.u32 [%rd1], %r5;\n  ret;\n")


# ------------------------------------------------------------------------------------------- clusters

DSMEM = """\
  mov.u32 %r3, smem;
  mov.u32 %r10, %cluster_ctarank;
  setp.eq.u32 %p1, %r10, 1;
  shl.b32 %r2, %r0, 2;
  add.u32 %r4, %r3, %r2;
  mapa.shared::cluster.u32 %r8, %r4, 0;   // the word in CTA 0's window
  @%p1 st.shared::cluster.u32 [%r8], %r0;  // CTA 1 writes CTA 0's smem
{sync}
  @!%p1 ld.shared.u32 %r5, [%r4];          // CTA 0 reads it
  @!%p1 st.global.u32 [%rd1], %r5;
  ret;
"""


def _dsmem(sync):
    return ptx.load(entry(DSMEM.format(sync=sync), before=SMEM, directives=".explicitcluster")).launch(
        "k", grid=2, block=32, cluster=(2, 1, 1), args=[np.zeros(32, np.uint32)])


def test_distributed_shared_memory_race_across_the_cluster():
    # CTA 1 writes CTA 0's word through the cluster window; CTA 0's warp 0 reads it: either order is the race
    with pytest.raises(HazardError, match=r"race on shared address 0x400 of CTA \(0, 0, 0\): ") as e:
        _dsmem("")
    assert "(warp 0, CTA (1, 0, 0)) at @%p1 st.shared::cluster.u32" in str(e.value) or \
        "(warp 0, CTA (1, 0, 0)) writes it here" in str(e.value)
    assert "(warp 0, CTA (0, 0, 0))" in str(e.value)


def test_distributed_shared_memory_control_with_barrier_cluster_passes():
    _dsmem("  barrier.cluster.arrive.aligned;\n  barrier.cluster.wait.aligned;")


# ------------------------------------------------------------------------------------------- asynchronous copies

CP_ASYNC = """\
  ld.param.u64 %rd2, [src];
  shl.b32 %r2, %r0, 4;
  add.u32 %r4, %r3, %r2;                  // &smem[16 t]
  cvt.u64.u32 %rd3, %r2;
  add.s64 %rd3, %rd2, %rd3;
  cp.async.ca.shared.global [%r4], [%rd3], 16;
{between}
  cp.async.ca.shared.global [%r4], [%rd3], 16;
  cp.async.commit_group;
  cp.async.wait_group 0;
  ld.shared.u32 %r5, [%r4];
  st.global.u32 [%rd1], %r5;
  ret;
"""


def _cp_async(between):
    src = np.arange(128, dtype=np.uint32)
    return run("  mov.u32 %r3, smem;\n" + CP_ASYNC.format(between=between), block=32, before=SMEM,
               params=".param .u64 out, .param .u64 src", args=[src])


def test_two_cp_async_in_flight_to_the_same_bytes_name_both_copies():
    with pytest.raises(HazardError, match=r"this cp.async writes shared bytes \[0x400, 0x600\) while the copy at "
                                          r"cp.async.ca.shared.global \[%r4\], \[%rd3\], 16 \(line 24\) is still in "
                                          r"flight writing 0x400 .*two asynchronous copies write the same shared"):
        _cp_async("")


def test_cp_async_waited_on_before_the_second_copy_passes():
    out = _cp_async("  cp.async.commit_group;\n  cp.async.wait_group 0;")
    assert np.array_equal(out, np.arange(0, 128, 4))


BULK = """\
  ld.param.u64 %rd2, [src];
  mov.u32 %r3, smem;
  mov.u32 %r6, bar;
  setp.eq.u32 %p2, %r0, 0;
  @%p2 mbarrier.init.shared::cta.b64 [%r6], 1;
  bar.sync 0;
  @%p2 mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r6], {tx};
  @%p2 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r3], [%rd2], 128, [%r6];
{between}
  @%p2 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r3+64], [%rd2], 128, [%r6];
  mov.u32 %r9, {last};
W:
  mbarrier.try_wait.parity.shared::cta.b64 %p5, [%r6], %r9;
  @!%p5 bra W;
  ld.shared.u32 %r5, [%r4];
  st.global.u32 [%rd1], %r5;
  ret;
"""
WAIT0 = """\
W0:
  mbarrier.try_wait.parity.shared::cta.b64 %p5, [%r6], 0;
  @!%p5 bra W0;
  @%p2 mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r6], 128;"""


def _bulk(between, tx, last):
    src = np.arange(32, dtype=np.uint32)
    return run(ADDR + BULK.format(between=between, tx=tx, last=last), block=32, before=SMEM + MBAR,
               params=".param .u64 out, .param .u64 src", args=[src])


def test_two_bulk_copies_in_flight_to_the_same_bytes_name_both_copies():
    with pytest.raises(HazardError, match=r"this copy writes shared bytes \[0x440, 0x4c0\) while the copy at @%p2 "
                                          r"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes \[%r3\], "
                                          r"\[%rd2\], 128, \[%r6\] \(line 30\) is still in flight writing 0x440: it "
                                          r"completes phase 0 of the mbarrier at 0x1400, which warp 0 has not "
                                          r"observed"):
        _bulk("", 256, 0)


def test_bulk_copy_after_the_first_copys_phase_was_observed_passes():
    out = _bulk(WAIT0, 128, 1)
    assert np.array_equal(out[16:], np.arange(16))     # the second copy's bytes from 64 on
    assert np.array_equal(out[:16], np.arange(16))


TMA = """{header}
.extern .shared .align 1024 .b8 dyn[];
.visible .entry k(.param .u64 out, .param .align 64 .b8 tmap[128])
{{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, dyn;
  add.u32 %r2, %r1, 8192;
  setp.ne.u32 %p0, %r0, 0;
  @!%p0 mbarrier.init.shared::cta.b64 [%r2], 1;
  bar.sync 0;
  mov.u32 %r3, 0;
  add.u32 %r11, %r1, 2048;
  @!%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], {tx};
  @!%p0 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [tmap, {{%r3, %r3}}], [%r2];
{between}
  @!%p0 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r11], [tmap, {{%r3, %r3}}], [%r2];
  mov.u32 %r9, {last};
W:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], %r9;
  @!%p1 bra W;
  ret;
}}
"""


def _tma(between, tx, last):
    from ptxkit import HEADER
    from tcemu.ptx.tensormap import encode_tiled
    tensor = np.arange(64 * 64, dtype=np.uint32).reshape(64, 64)
    tm = encode_tiled(tensor, [32, 32])          # a 32 x 32 box of u32: 4 KiB
    ptx.load(TMA.format(header=HEADER, between=between, tx=tx, last=last)).launch(
        "k", grid=1, block=32, args=[np.zeros(4, np.uint32), tm], shared_bytes=8192 + 16)


def test_two_tma_loads_in_flight_to_overlapping_stages_name_both_copies():
    with pytest.raises(HazardError, match=r"this copy writes shared bytes \[0xc00, 0x1c00\) while the copy at "
                                          r"@!%p0 cp.async.bulk.tensor.2d.* \[%r1\], .* \(line 20\) is still in flight "
                                          r"writing 0xc00"):
        _tma("", 8192, 0)


def test_tma_load_after_the_first_loads_phase_was_observed_passes():
    _tma("W0:\n  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], 0;\n  @!%p1 bra W0;\n"
         "  @!%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 4096;", 4096, 1)


# ------------------------------------------------------------------------------------------- other access forms

LDMATRIX = """\
  @%p1 st.shared.u32 [%r4], %r0;          // warp 0 writes an 8 x 8 b16 matrix (128 bytes)
{sync}
  and.b32 %r6, %r0, 7;
  shl.b32 %r6, %r6, 4;
  add.u32 %r6, %r3, %r6;                  // row r at smem + 16 r (threads 8 i + r)
  @!%p1 ldmatrix.sync.aligned.m8n8.x1.shared.b16 {{%r5}}, [%r6];
  st.global.u32 [%rd1], %r5;
  ret;
"""


def test_ldmatrix_reading_another_warps_stores_without_a_barrier_races():
    with pytest.raises(HazardError, match=r"RAW race on shared address 0x400 .*thread 32 \(warp 1.* reads it here; "
                                          r"thread 0 \(warp 0.* wrote it"):
        go(LDMATRIX.format(sync=""))
    out = go(LDMATRIX.format(sync="  bar.sync 0;"))
    assert np.array_equal(out[32:], np.arange(32))    # lane l gets row l / 4, elements 2 (l % 4), +1: word l


ATOMS = """\
  setp.eq.u32 %p2, %r2, 0;
  @%p2 st.shared.u32 [%r3], 0;
  bar.sync 0;
  atom.shared.add.u32 %r5, [%r3], 1;      // every thread of both warps
{sync}
  ld.shared.u32 %r5, [%r3];
  st.global.u32 [%rd1], %r5;
  ret;
"""


def test_atomics_of_different_warps_do_not_race_but_a_plain_read_of_their_result_does():
    out = go(ATOMS.format(sync="  bar.sync 0;"))
    assert (out == 64).all()
    with pytest.raises(HazardError, match=r"race on shared address 0x400 .*\(a strong access\)"):
        go(ATOMS.format(sync=""))


# ------------------------------------------------------------------------------------------ warpgroup wgmma

WGMMA = """\
  ld.shared.u32 %r5, [%r4];               // every warp reads its 128 bytes of smem
  wgmma.fence.sync.aligned;
  mov.b64 %rd10, {a};
  mov.b64 %rd11, {b};
  setp.ne.u32 %p2, %r0, %r0;
  wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{%f0, %f1, %f2, %f3}}, %rd10, %rd11, %p2, 1, 1, 0, 0;
  wgmma.commit_group.sync.aligned;
{early}  wgmma.wait_group.sync.aligned 0;
{late}  st.global.u32 [%rd1], %r5;
  ret;
"""
# warp 1 overwrites the bytes warp 0 read (smem[0..31])
OVERWRITE = """\
  setp.ge.u32 %p3, %r0, 32;
  setp.lt.u32 %p4, %r0, 64;
  and.pred %p3, %p3, %p4;
  @%p3 st.shared.u32 [%r4+-128], %r0;
"""


@pytest.mark.parametrize("after", [True, False])
def test_a_warpgroups_wgmma_orders_each_warps_earlier_reads_before_every_warps_wait(after):
    """wgmma.mma_async runs once all four warps of the warpgroup have issued it, so a warp whose wait_group saw it
    complete is ordered after what every warp did before issuing it (CUTLASS's register-A mainloops: each warp reads
    A with ldmatrix, one warp releases the stage after the wait). Warp 1 overwriting what warp 0 read is fine after
    its wait_group; between the commit and the wait it is a race (warp 0 may not have issued the wgmma yet)."""
    from tcemu.layout.descriptors import GmmaDescriptor
    a = GmmaDescriptor(0x800, 128, 256, 0, "none").encode()    # zero-initialised operands at 0x800 / 0x1000
    b = GmmaDescriptor(0x1000, 128, 256, 0, "none").encode()
    body = WGMMA.format(a=a, b=b, early="" if after else OVERWRITE, late=OVERWRITE if after else "")
    if after:
        out = go(body, block=128, zero_init_shared=True)
        assert out.tolist() == [0] * 128
    else:
        with pytest.raises(HazardError, match="race on shared address 0x400 of CTA"):
            go(body, block=128, zero_init_shared=True)


def test_a_warpgroups_release_joins_its_clocks_then_starts_each_an_epoch():
    # races.collective_release on a cluster's clock rows at once: the join of the four warps' clocks at issue, then
    # each warp's own entry one further (WarpClock.release, warp by warp, gives the same)
    rng = np.random.default_rng(7)
    cl = ClusterRaces([SimpleNamespace(warps=[None] * 8)])
    cl.VCX[:, 1:] = rng.integers(1, 9, (8, 8))
    twin = cl.VCX.copy()
    warps = [SimpleNamespace(race=WarpClock(cl, a)) for a in (4, 5, 6, 7)]
    want = twin[4:8, 1:].max(axis=0)
    for a in (4, 5, 6, 7):
        twin[a, a + 1] += 1
    assert collective_release(warps).tolist() == want.tolist()
    assert cl.VCX.tolist() == twin.tolist()
