"""synccheck (tcemu/ptx/ops/control.py): an aligned CTA barrier reached by only part of a warp's live lanes
(a __syncthreads in a branch that splits the warp), and threads of one barrier generation naming different
thread counts. Each planted bug beside a correct control. %r0 is %tid.x (tests/support/ptxkit.py)."""
import numpy as np
import pytest

from tcemu.ptx.errors import Deadlock, HazardError

from ptxkit import run

SPLIT = """\
  and.b32 %r5, %r0, 31;
  setp.lt.u32 %p2, {cond};
  @%p2 bra A;
  bar.sync 0;
  bra J;
A:
  bar.sync 0;
J:
  st.global.u32 [%rd1], %r0;
  ret;
"""


def test_bar_sync_in_both_arms_of_a_branch_that_splits_every_warp_is_a_divergent_barrier():
    with pytest.raises(HazardError) as e:
        run(SPLIT.format(cond="%r5, 16"), block=64)
    msg = str(e.value)
    assert msg.startswith("bar.sync 0 (line 20), CTA (0, 0, 0), warp 0: divergent barrier: barrier 0 reached by lanes "
                          f"{list(range(16, 32))} of warp 0 (pc 8)")
    assert f"other live lanes are elsewhere: lanes {list(range(16))} at bar.sync 0 (line 23)" in msg


def test_bar_sync_in_both_arms_of_a_branch_uniform_per_warp_passes():
    out = run(SPLIT.format(cond="%r0, 32"), block=64)   # warp 0 takes one arm, warp 1 the other
    assert np.array_equal(out, np.arange(64))


LATER = """\
  and.b32 %r5, %r0, 31;
  setp.lt.u32 %p2, %r5, {split};
  @%p2 bra J;
  bar.sync 0;                 // only lanes >= split
J:
  bar.sync 0;
  st.global.u32 [%rd1], %r0;
  ret;
"""


def test_bar_sync_skipped_by_part_of_the_warp_which_waits_at_the_next_barrier_is_divergent():
    with pytest.raises(HazardError, match=r"divergent barrier: barrier 0 reached by lanes \[8, .*, 31\] of warp 0 "
                                          r".*elsewhere: lanes \[0, 1, 2, 3, 4, 5, 6, 7\] at bar.sync 0 \(line 22\)"):
        run(LATER.format(split=8), block=64)


def test_a_branch_no_lane_takes_passes():
    out = run(LATER.format(split=0), block=64)
    assert np.array_equal(out, np.arange(64))


def test_lanes_that_exited_count_as_arrived_not_as_divergence():
    # PTX 9.7.12.1: a warp whose non-exited threads all execute the barrier counts as arrived
    body = "  and.b32 %r5, %r0, 31;\n  setp.lt.u32 %p2, %r5, 16;\n  @%p2 ret;\n  bar.sync 0;\n" \
           "  st.global.u32 [%rd1], %r0;\n  ret;\n"
    out = run(body, block=64)
    t = np.arange(64)
    assert np.array_equal(out, np.where(t % 32 >= 16, t, 0))


COUNTS = """\
  setp.lt.u32 %p2, %r0, 32;
  @%p2 bra A;
  bar.sync 1, {other};        // warps 1 and 2
  bra J;
A:
  bar.sync 1, 96;             // warp 0
J:
  st.global.u32 [%rd1], %r0;
  ret;
"""


def test_threads_of_one_barrier_naming_different_counts_name_both():
    # warps one at a time: warp 0 arrives first, then warp 1 names another count in the same generation
    with pytest.raises(HazardError) as e:
        run(COUNTS.format(other=64), block=96, lockstep=False)
    assert str(e.value) == (
        "bar.sync 1, 64 (line 19), CTA (0, 0, 0), warp 1: barrier 1 thread count mismatch: warp 1 arrives here "
        "expecting 64 threads, but warp 0 arrived in the same generation at bar.sync 1, 96 (line 22) expecting 96")


def test_in_lock_step_the_smaller_count_completes_first_and_the_other_warp_hangs():
    # warps 1 and 2 reach bar.sync 1, 64 together and complete it; warp 0's bar.sync 1, 96 then waits for good
    with pytest.raises(Deadlock, match=r"warp 0: at bar.sync 1, 96 \(line 22\); waits on barrier 1 \(32 of 96"):
        run(COUNTS.format(other=64), block=96)


def test_threads_of_one_barrier_naming_one_count_pass():
    out = run(COUNTS.format(other=96), block=96)
    assert np.array_equal(out, np.arange(96))


def test_check_races_false_turns_synccheck_off():
    # without synccheck the divergent barrier runs through (each half-warp counts as the warp's arrival), the
    # count mismatch hangs: what tcemu did before synccheck
    out = run(SPLIT.format(cond="%r5, 16"), block=64, check_races=False)
    assert np.array_equal(out, np.arange(64))
    with pytest.raises(Deadlock, match="waits on barrier 1"):
        run(COUNTS.format(other=64), block=96, check_races=False)
