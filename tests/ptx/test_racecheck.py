"""racecheck (tcemu/ptx/races.py): planted shared-memory races, each reported naming both accesses, beside a
correct control that must pass. Hand-written PTX; %r0 is %tid.x (tests/support/ptxkit.py)."""
import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.ptx.errors import HazardError, MemoryFault

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


def test_race_is_reported_whatever_the_check_races_schedule_and_off_switch():
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
                                          r"thread 32 \(warp 1.* at @!%p1 st.shared.u32 \[%r4\], 7 \(line 26\) wrote it"):
        go(body)


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
        run(ADDR + PRODUCER.format(count=32), block=96, before=SMEM + MBAR)
    msg = str(e.value)
    assert "WAR race on shared address 0x480" in msg and "nothing wrote" not in msg
    assert "thread 32 (warp 1, CTA (0, 0, 0)) writes it here" in msg
    assert "thread 0 (warp 0, CTA (0, 0, 0)) at ld.shared.u32 %r5, [%r4+128] (line 33) read it" in msg
    # without racecheck: the read of memory nothing had written yet
    with pytest.raises(MemoryFault, match="nothing wrote"):
        run(ADDR + PRODUCER.format(count=32), block=96, before=SMEM + MBAR, check_races=False)


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
    with pytest.raises(HazardError, match=r"race on shared address 0x400 of CTA \(0, 0, 0\): .*\(warp 0, CTA "
                                          r"\(1, 0, 0\)\).*\(warp 0, CTA \(0, 0, 0\)\)"):
        _dsmem("")


def test_distributed_shared_memory_control_with_barrier_cluster_passes():
    _dsmem("  barrier.cluster.arrive.aligned;\n  barrier.cluster.wait.aligned;")
