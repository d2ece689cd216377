"""Masked gangs (tcemu/ptx/lockstep.py run_any): warps that run on some of their lanes (a branch split them, or lanes
exited) run together, each on its own lanes, the lowest PC first, so warps a data-dependent branch sent different
ways meet again where the paths join. Results are those of warps one at a time (lockstep=False), bit for bit, every
expectation is computed here, and racecheck still reports races between the paths of a ganged warp."""
import numpy as np
import pytest

from tcemu.ptx import lockstep
from tcemu.ptx.errors import HazardError

from ptxkit import run

SMEM = ".shared .align 16 .b8 smem[4096];\n"
GLOBAL_INDEX = """\
  mov.u32 %r9, %ctaid.x;
  mov.u32 %r8, %ntid.x;
  mad.lo.u32 %r7, %r9, %r8, %r0;
  mul.wide.u32 %rd4, %r7, 4;
  add.s64 %rd5, %rd0, %rd4;
"""
# h = (g * 2654435761) >> 7 for global thread g; odd h: x = 3h + 7, even: x = (h xor g) * 5 - 1
SPLIT = GLOBAL_INDEX + """\
  mul.lo.u32 %r1, %r7, -1640531535;
  shr.u32 %r1, %r1, 7;
  and.b32 %r2, %r1, 1;
  setp.eq.u32 %p1, %r2, 1;
  @%p1 bra ODD;
  xor.b32 %r4, %r1, %r7;
  mul.lo.u32 %r4, %r4, 5;
  sub.u32 %r4, %r4, 1;
  bra DONE;
ODD:
  mul.lo.u32 %r4, %r1, 3;
  add.u32 %r4, %r4, 7;
DONE:
  st.global.u32 [%rd5], %r4;
  ret;
"""


def split_model(grid, block):
    g = np.arange(grid * block, dtype=np.uint64)
    h = ((g * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)) >> np.uint64(7)
    odd = 3 * h + 7
    even = (h ^ g) * 5 - 1
    return (np.where(h & np.uint64(1), odd, even) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def stretches(monkeypatch):
    """(warps, masked) of every batch lockstep.stretch runs."""
    seen = []
    real = lockstep.stretch

    def spy(gang, pc, m=None):
        seen.append((len(gang), m is not None))
        return real(gang, pc, m)
    monkeypatch.setattr(lockstep, "stretch", spy)
    return seen


def test_warps_a_data_dependent_branch_splits_run_each_path_together_and_meet_again(monkeypatch):
    seen = stretches(monkeypatch)
    out = run(SPLIT, grid=4, block=128)
    assert np.array_equal(out, split_model(4, 128))
    # the 16 warps' ALU before the branch; both paths, each warp on its lanes of it; after the join, whole again
    assert seen == [(16, False), (16, True), (16, True)]
    seen.clear()
    assert np.array_equal(run(SPLIT, grid=4, block=128, lockstep=False), out) and seen == []


def test_lanes_that_exited_leave_the_rest_of_their_warp_ganged(monkeypatch):
    # threads 0-19 of each warp exit; the other 12 of all 8 warps go on as one masked gang
    body = GLOBAL_INDEX + """\
  and.b32 %r1, %r0, 31;
  setp.lt.u32 %p1, %r1, 20;
  @%p1 bra OUT;
  mul.lo.u32 %r4, %r7, 11;
  xor.b32 %r4, %r4, 0x5a5a;
  st.global.u32 [%rd5], %r4;
OUT:
  ret;
"""
    seen = stretches(monkeypatch)
    out = run(body, grid=2, block=128)
    g = np.arange(256, dtype=np.uint32)
    assert np.array_equal(out, np.where(g % 32 < 20, 0, (g * 11) ^ 0x5A5A))
    assert (8, True) in seen


def test_lane_zero_of_every_warp_stores_its_word_in_one_gang_step(monkeypatch):
    # a block reduction's hand-off: lane 0 of each warp writes one shared word, then warp 0 reads them all
    body = """\
  mov.u32 %r3, smem;
  shr.u32 %r1, %r0, 5;
  and.b32 %r2, %r0, 31;
  shl.b32 %r5, %r1, 2;
  add.u32 %r5, %r3, %r5;
  mad.lo.u32 %r6, %r1, 7, 3;
  setp.ne.u32 %p1, %r2, 0;
  @%p1 bra SYNC;
  st.shared.u32 [%r5], %r6;
SYNC:
  bar.sync 0;
  setp.ge.u32 %p2, %r0, 8;
  @%p2 bra OUT;
  shl.b32 %r5, %r0, 2;
  add.u32 %r5, %r3, %r5;
  ld.shared.u32 %r4, [%r5];
  st.global.u32 [%rd1], %r4;
OUT:
  ret;
"""
    calls = []
    real = lockstep._step

    def spy(g, pc, masks, log):
        calls.append((g[0].prog.instrs[pc].opcode, len(g), masks is not None))
        return real(g, pc, masks, log)
    monkeypatch.setattr(lockstep, "_step", spy)
    out = run(body, block=256, before=SMEM)
    assert out[:8].tolist() == [7 * w + 3 for w in range(8)]
    assert ("st.shared.u32", 8, True) in calls   # the 8 warps' lane 0 in one step


DIVERGED = """\
  mov.u32 %r3, smem;
  shr.u32 %r1, %r0, 5;
  shl.b32 %r1, %r1, 2;
  add.u32 %r3, %r3, %r1;          // &smem[warp]
  and.b32 %r2, %r0, 31;
  setp.lt.u32 %p2, %r2, 16;
  @%p2 bra A;
  st.shared.u32 [%r3], 9;         // lanes 16-31 of every warp
  bra J;
A:
{read_a}
J:
{read_j}
  st.global.u32 [%rd1], %r5;
  ret;
"""


def test_a_race_between_the_paths_of_ganged_warps_is_reported():
    with pytest.raises(HazardError, match=r"RAW race on shared address 0x400 of CTA \(0, 0, 0\): thread 0 \(warp 0.* "
                                          r"reads it here; thread 31 \(warp 0.* wrote it; the two threads are lanes "
                                          r"of one warp on different paths"):
        run(DIVERGED.format(read_a="  ld.shared.u32 %r5, [%r3];", read_j=""), grid=2, block=128, before=SMEM)


def test_a_read_after_the_paths_join_passes_in_every_ganged_warp():
    out = run(DIVERGED.format(read_a="", read_j="  ld.shared.u32 %r5, [%r3];"), grid=2, block=128, before=SMEM,
              out_words=128)   # both CTAs write words 0-127
    assert (out == 9).all()


# lane 0 of each warp alone runs {loop} (%r9 its CTA's index, %r4 from 0 its result); every thread stores %r4
LANE_ZERO = GLOBAL_INDEX + """\
  mov.u32 %r4, 0;
  and.b32 %r1, %r0, 31;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra OUT;
{loop}OUT:
  st.global.u32 [%rd5], %r4;
  ret;
"""

def test_one_warp_a_cta_on_one_lane_runs_ganged_across_ctas(monkeypatch):
    # a producer warp's shape (CUTLASS after elect.sync): in every one-warp CTA lane 0 alone runs a loop; the CTAs'
    # lane-0 warps are one masked gang (their private stretches one batch), with the results of warps one at a time
    body = LANE_ZERO.format(loop="""\
  mov.u32 %r2, 0;
LOOP:
  mad.lo.u32 %r4, %r4, 31, %r2;
  add.u32 %r4, %r4, %r9;
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p2, %r2, 12;
  @%p2 bra LOOP;
""")
    seen = stretches(monkeypatch)
    out = run(body, grid=6, block=32)
    want = np.zeros(6 * 32, np.uint32)
    for c in range(6):
        x = 0
        for i in range(12):
            x = (x * 31 + i + c) & 0xFFFFFFFF
        want[32 * c] = x
    assert np.array_equal(out, want)
    assert seen.count((6, True)) >= 12   # the loop body, once for the six CTAs' lane 0 each time round
    seen.clear()
    assert np.array_equal(run(body, grid=6, block=32, lockstep=False), out) and seen == []


def test_a_masked_gang_asks_each_warp_its_next_step_only_after_it_ran(monkeypatch):
    # one-warp CTAs whose lane 0 loops ctaid % 8 times: the gang's warps leave the loop at different steps, and at
    # each step only those at the lowest PC run; a warp that did not run keeps its step (run_any's next_step), so
    # step_of is asked at most once a warp instruction run plus once a warp (asking every live warp at every step:
    # 2,561 here, over 2,400 warp instructions)
    from tcemu import ptx
    from ptxkit import entry
    body = LANE_ZERO.format(loop="""\
  rem.u32 %r5, %r9, 8;
  mov.u32 %r2, 0;
LOOP:
  setp.ge.u32 %p2, %r2, %r5;
  @%p2 bra OUT;
  add.u32 %r4, %r4, %r2;
  add.u32 %r2, %r2, 1;
  bra LOOP;
""")
    calls = []
    real = lockstep.step_of
    monkeypatch.setattr(lockstep, "step_of", lambda w: calls.append(w) or real(w))
    mod = ptx.load(entry(body))
    out = np.zeros(64 * 32, np.uint32)
    stats = mod.launch("k", grid=64, block=32, args=[out])
    want = np.zeros(64 * 32, np.uint32)
    want[::32] = [(c % 8) * (c % 8 - 1) // 2 for c in range(64)]
    assert np.array_equal(out, want)
    assert 0 < len(calls) <= stats["warp_instructions"] + 64
    assert np.array_equal(run(body, grid=64, block=32, lockstep=False), out)
