"""cp.async's gang version (tcemu/ptx/ops/cp_async.py): the warps of a CTA issue and complete their copies as one
batch, with the bytes, the racecheck records and the reports of the warps one at a time. Expectations are the
source bytes, moved as the PTX text says (PTX ISA 9.7.9.25: cp-size, src-size zero-fill)."""
import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.ptx import HazardError, graces, lockstep, machine, races

from ptxkit import REGS, entry

# thread t of CTA c (128 threads): copy 1, 16 bytes src[(128 c + t) 16 ..] -> buf[16 t]; copy 2, 4 bytes
# src[4 t ..] -> buf[2048 + 4 t] (every CTA reads the same bytes); then, in a group of its own, odd threads copy
# 16 bytes with src-size n -> buf[4096 + 16 t]. After {sync}, thread t reads the bytes of thread u = (t + 32) mod 128
# (another warp's): 16 of copy 1, 16 of copy 3 from thread u | 1, 4 of copy 2, to dst[48 (128 c + t) ..].
BODY = """\
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  ld.param.u32 %r9, [n];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mad.lo.u32 %r3, %r2, 128, %r1;
  mul.wide.u32 %rd3, %r3, 16;
  add.s64 %rd4, %rd1, %rd3;
  mov.u32 %r4, buf;
  shl.b32 %r5, %r1, 4;
  add.u32 %r6, %r4, %r5;
  cp.async.cg.shared.global [%r6], [%rd4], 16;
  mul.wide.u32 %rd5, %r1, 4;
  add.s64 %rd6, %rd1, %rd5;
  shl.b32 %r7, %r1, 2;
  add.u32 %r8, %r4, %r7;
  add.u32 %r8, %r8, 2048;
  cp.async.ca.shared.global [%r8], [%rd6], 4;
  cp.async.commit_group;
  and.b32 %r10, %r1, 1;
  setp.eq.u32 %p1, %r10, 1;
  add.u32 %r11, %r6, 4096;
  @%p1 cp.async.cg.shared.global [%r11], [%rd4], 16, %r9;
  cp.async.commit_group;
  cp.async.wait_group 1;
  cp.async.wait_group 0;
{sync}
  add.u32 %r12, %r1, 32;
  and.b32 %r12, %r12, 127;
  shl.b32 %r13, %r12, 4;
  add.u32 %r14, %r4, %r13;
  ld.shared.v4.u32 {{%r20, %r21, %r22, %r23}}, [%r14];
  or.b32 %r15, %r12, 1;
  shl.b32 %r16, %r15, 4;
  add.u32 %r16, %r16, %r4;
  ld.shared.v4.u32 {{%r24, %r25, %r26, %r27}}, [%r16+4096];
  shl.b32 %r17, %r12, 2;
  add.u32 %r17, %r17, %r4;
  ld.shared.u32 %r28, [%r17+2048];
  mul.wide.u32 %rd7, %r3, 48;
  add.s64 %rd8, %rd2, %rd7;
  st.global.v4.u32 [%rd8], {{%r20, %r21, %r22, %r23}};
  st.global.v4.u32 [%rd8+16], {{%r24, %r25, %r26, %r27}};
  st.global.u32 [%rd8+32], %r28;
  ret;
"""
PARAMS = ".param .u64 src, .param .u64 dst, .param .u32 n"
BUF = ".shared .align 16 .b8 buf[8192];\n"


def launch(sync="  bar.sync 0;", grid=3, n=8, **kw):
    src = np.random.default_rng(5).integers(0, 256, 128 * grid * 16, dtype=np.uint8)
    dst = np.zeros(48 * 128 * grid, np.uint8)
    mod = ptx.load(entry(BODY.format(sync=sync), params=PARAMS, regs=REGS + BUF, prologue=""))
    mod.launch("k", grid=grid, block=128, args=[src, dst, n], **kw)
    return src, dst


def expected(src, grid, n):
    out = np.zeros((grid, 128, 48), np.uint8)
    for c in range(grid):
        for t in range(128):
            u = (t + 32) % 128
            out[c, t, :16] = src[(128 * c + u) * 16:][:16]
            out[c, t, 16:16 + n] = src[(128 * c + (u | 1)) * 16:][:n]
            out[c, t, 32:36] = src[4 * u:4 * u + 4]
    return out.reshape(-1)


@pytest.fixture
def spies(monkeypatch):
    """Count the gang records: the gang path must have run (else these tests would prove nothing)."""
    seen = {"issue": 0, "land": 0}
    reads, record = graces.record_reads_rows, races.gang_write_record

    def spy_reads(warps, a, nbytes, off, tids, part, wh, site_of=None):
        # the gang's rows, one part per CTA and instruction
        seen["issue"] += len(set(zip(part.tolist(), (part if site_of is None else site_of).tolist())))
        return reads(warps, a, nbytes, off, tids, part, wh, site_of)

    def spy_record(*a, **k):
        seen["land"] += 1
        return record(*a, **k)
    monkeypatch.setattr(graces, "record_reads_rows", spy_reads)
    monkeypatch.setattr(races, "gang_write_record", spy_record)
    return seen


@pytest.mark.parametrize("n", [16, 8, 0])
def test_gang_copies_land_the_bytes_the_ptx_text_moves(spies, n):
    src, dst = launch(n=n)
    assert np.array_equal(dst, expected(src, 3, n))
    assert spies["issue"] >= 3 * 2 and spies["land"] >= 3 * 2   # both issues and both waits of each CTA, ganged
    _, alone = launch(n=n, lockstep=False)
    assert np.array_equal(alone, dst)


def test_gang_and_warps_one_at_a_time_leave_the_same_race_report(spies, monkeypatch):
    # no bar.sync: thread t reads what warp (t + 32) / 32 copied, unordered (a RAW race)
    with pytest.raises(HazardError) as ganged:
        launch(sync="")
    assert spies["land"] > 0
    monkeypatch.setattr(lockstep, "GANG_OPS", False)
    with pytest.raises(HazardError) as alone:
        launch(sync="")
    assert "RAW race on shared address" in str(ganged.value)
    assert str(ganged.value) == str(alone.value)


def test_two_warps_copying_to_one_stage_fall_back_and_are_reported(spies):
    # every warp copies to buf[16 (t mod 32)]: warp 1's copy meets warp 0's still in flight
    body = BODY.replace("  shl.b32 %r5, %r1, 4;", "  and.b32 %r5, %r1, 31;\n  shl.b32 %r5, %r5, 4;")
    mod = ptx.load(entry(body.format(sync="  bar.sync 0;"), params=PARAMS, regs=REGS + BUF, prologue=""))
    src = np.zeros(128 * 16, np.uint8)
    with pytest.raises(HazardError, match=r"this cp.async writes shared bytes \[0x[0-9a-f]+, 0x[0-9a-f]+\) while the "
                                          r"copy at cp.async.cg.shared.global .* is still in flight"):
        mod.launch("k", grid=1, block=128, args=[src, np.zeros(48 * 128, np.uint8), 16])


@pytest.mark.parametrize("path", ["teams", "copies"])
def test_gang_wait_leaves_the_racecheck_records_of_warps_one_at_a_time(spies, monkeypatch, path):
    # the kernel's third copy runs on the odd lanes only: each warp's record keeps its own lanes' mask, though the
    # gang lands a CTA's rows chunk by chunk (the warps' rows of one issue together), not warp by warp; "teams":
    # each CTA's copies of one gang issue as one slice (cp_async._team_batches), "copies": warp by warp
    from tcemu.ptx import machine, memory
    from tcemu.ptx.ops import cp_async
    used = {"teams": 0, "copies": 0}
    teams, copies = cp_async._team_batches, cp_async._copy_batches

    def spy_teams(*a):
        out = teams(*a) if path == "teams" else None
        used["teams"] += out is not None
        return out

    def spy_copies(*a):
        used["copies"] += 1
        return copies(*a)
    monkeypatch.setattr(cp_async, "_team_batches", spy_teams)
    monkeypatch.setattr(cp_async, "_copy_batches", spy_copies)
    finals = []

    class Window(memory.SharedWindow):
        def release(self):
            finals.append({**{k: self.race.bytes(k) for k in ("w_ep", "w_info", "w_mask", "w_region", "R")},
                           "data": self.smem.data.copy(), "source": self.sources(np.arange(self.hi))})
            super().release()
    monkeypatch.setattr(machine, "SharedWindow", Window)
    launch(n=8)
    ganged, finals[:] = list(finals), []
    assert spies["land"] >= 3 * 2 and len(ganged) == 3
    assert used[path] >= 3 * 2 and used["teams" if path == "copies" else "copies"] == 0
    assert any((g["w_mask"] == 0xAAAAAAAA).any() for g in ganged)   # the odd lanes' copies
    monkeypatch.setattr(lockstep, "GANG_OPS", False)
    launch(n=8)
    assert len(finals) == 3
    for g, a in zip(ganged, finals):
        for k in g:
            assert np.array_equal(g[k], a[k]), k


def test_landing_as_rows_leaves_the_state_landing_by_bytes_leaves():
    """cp_async._land_rows (whole 16-byte granules read in full or not at all, landed as rows without byte offsets)
    against _land on the same copies' (n, 16) byte offsets: the bytes, written flags, unfenced epochs, sources,
    pending marks and TMA guards of the window come out equal, whatever the window held before (granules with
    per-byte sources, guarded bytes, pending marks)."""
    from hypothesis import given, settings, strategies as st
    from tcemu.layout.smem import SharedMemory
    from tcemu.ptx.memory import SharedWindow
    from tcemu.ptx.ops.cp_async import _land, _land_rows, _row_sources, _sources

    G = 24

    @settings(max_examples=60, deadline=None, derandomize=True)
    @given(st.lists(st.integers(0, G - 1), min_size=1, max_size=G, unique=True), st.integers(0, 2 ** 32 - 1),
           st.booleans(), st.booleans(), st.booleans())
    def check(rows, seed, guarded, mixed, zero_fill):
        rng = np.random.default_rng(seed)
        starts = np.array(rows, np.int64) * 16
        data = rng.integers(0, 256, (len(rows), 16), dtype=np.uint8)
        src = rng.integers(0, 1 << 20, len(rows)).astype(np.int64) * 16
        nread = np.where(rng.random(len(rows)) < 0.5, 0, 16) if zero_fill else None   # src-size 0 rows
        if zero_fill:
            data[nread == 0] = 0
        guards = rng.integers(0, 16 * G, 40)
        wins = []
        for _ in range(2):   # the same state in both windows
            sh = SharedWindow(SharedMemory(), 0, 16 * G, zero_init=False)
            if guarded:
                sh.guard_bar[guards] = 8
            if mixed:   # a few bytes copied on their own: their granule keeps per-byte sources
                sh.set_sources(np.array([[5, 6, 7, 8]]) + 16 * int(rows[0]), np.array([[1, 2, 3, 4]]))
            sh.set_pending(None, 3, g=starts >> 4)
            sh.mark_generic(np.arange(16 * G)[None, :])
            wins.append(sh)
        _land(wins[0], starts[:, None] + np.arange(16), data, _sources(src, nread, 16))
        _land_rows(wins[1], starts, data, _row_sources(src, nread))
        a, b = wins
        assert np.array_equal(a.smem.data, b.smem.data) and np.array_equal(a.smem.written, b.smem.written)
        assert a.write_epoch == b.write_epoch and np.array_equal(a.epochs(np.arange(a.hi)), b.epochs(np.arange(b.hi)))
        assert np.array_equal(a.sources(np.arange(16 * G)), b.sources(np.arange(16 * G)))
        assert np.array_equal(a.async_pending16, b.async_pending16)
        if guarded:
            assert np.array_equal(a.guard_bar, b.guard_bar)
    check()


def test_repeats_of_aligned_starts_answer_as_a_sort():
    """ops/common.repeats_aligned (cp.async's gang issue and landing: a bitmap over the starts' span) against
    repeats (a sort), on multiples of w with and without a repeat, and spans past the bitmap's limit."""
    from hypothesis import given, settings, strategies as st
    from tcemu.ptx.ops import common

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(st.lists(st.integers(0, 5000), max_size=60), st.sampled_from([1, 4, 8, 16]), st.booleans())
    def check(vals, w, far):
        x = np.array(vals, np.int64) * w
        if far and x.size:
            x[0] += (common.BITMAP_MAX + 1) * w   # a span past the bitmap: the sort answers
        assert common.repeats_aligned(x, w) == common.repeats(x)
    check()


# thread t of CTA c (128 threads): two 16-byte copies in one run (address arithmetic between them, no commit):
# src[(128 c + t) 16 ..] -> buf[16 t] and src[(128 c + (t ^ 1)) 16 ..] -> buf[{second} + 16 t], with src-size n;
# after the wait and bar.sync, thread t reads both of thread u = (t + 32) mod 128 into dst[32 (128 c + t) ..]
RUN_BODY = """\
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  ld.param.u32 %r9, [n];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mad.lo.u32 %r3, %r2, 128, %r1;
  mul.wide.u32 %rd3, %r3, 16;
  add.s64 %rd4, %rd1, %rd3;
  mov.u32 %r4, buf;
  shl.b32 %r5, %r1, 4;
  add.u32 %r6, %r4, %r5;
  cp.async.cg.shared.global [%r6], [%rd4], 16, %r9;
  xor.b32 %r7, %r3, 1;
  mul.wide.u32 %rd5, %r7, 16;
  add.s64 %rd6, %rd1, %rd5;
  add.u32 %r8, %r6, {second};
  cp.async.cg.shared.global [%r8], [%rd6], 16, %r9;
  cp.async.commit_group;
  cp.async.wait_group 0;
  bar.sync 0;
  add.u32 %r12, %r1, 32;
  and.b32 %r12, %r12, 127;
  shl.b32 %r13, %r12, 4;
  add.u32 %r14, %r4, %r13;
  ld.shared.v4.u32 {{%r20, %r21, %r22, %r23}}, [%r14];
  ld.shared.v4.u32 {{%r24, %r25, %r26, %r27}}, [%r14+{second}];
  mul.wide.u32 %rd7, %r3, 32;
  add.s64 %rd8, %rd2, %rd7;
  st.global.v4.u32 [%rd8], {{%r20, %r21, %r22, %r23}};
  st.global.v4.u32 [%rd8+16], {{%r24, %r25, %r26, %r27}};
  ret;
"""


def run_launch(second=2048, grid=3, n=16, **kw):
    src = np.random.default_rng(7).integers(0, 256, 128 * grid * 16, dtype=np.uint8)
    dst = np.zeros(32 * 128 * grid, np.uint8)
    mod = ptx.load(entry(RUN_BODY.format(second=second), params=PARAMS, regs=REGS + BUF, prologue=""))
    mod.launch("k", grid=grid, block=128, args=[src, dst, n], **kw)
    return src, dst


@pytest.fixture
def fused(monkeypatch):
    """Count the issue runs (cp_async._issue called with more than one instruction's lanes)."""
    from tcemu.ptx.ops import cp_async
    seen = {"runs": 0}
    real = cp_async._issue

    def spy(warps, sel, items):
        seen["runs"] += len(items) > 1
        return real(warps, sel, items)
    monkeypatch.setattr(cp_async, "_issue", spy)
    return seen


@pytest.mark.parametrize("n", [16, 0])
def test_a_run_of_issues_lands_the_bytes_and_state_of_the_issues_one_at_a_time(fused, monkeypatch, n):
    """Two cp.async with address arithmetic between them run as one issue (ops/runs.py): the bytes the
    PTX text moves (src-size 0: zeros), and every shadow and racecheck record of the windows and of the global
    source equal to the issues run one at a time and to the warps one at a time."""
    from tcemu.ptx import machine, memory
    finals = []

    class Window(memory.SharedWindow):
        def release(self):
            finals.append({**{k: self.race.bytes(k) for k in ("w_ep", "w_info", "w_mask", "w_region", "R")},
                           "data": self.smem.data.copy(), "written": self.smem.written.copy(),
                           "source": self.sources(np.arange(self.hi)), "epochs": self.epochs(np.arange(self.hi)),
                           "epoch": self.write_epoch})
            super().release()
    monkeypatch.setattr(machine, "SharedWindow", Window)
    shadows = []

    class Shadow(graces.GShadow):
        def __init__(self, *a):
            super().__init__(*a)
            shadows.append(self)
    monkeypatch.setattr(graces, "GShadow", Shadow)

    def state():
        out = ([dict(f) for f in finals], [{k: s.bytes(k) for k in ("w_key", "w_info", "r_key", "r_info")}
                                           for s in shadows])
        finals.clear()
        shadows.clear()
        return out
    src, dst = run_launch(n=n)
    want = np.zeros((3, 128, 32), np.uint8)
    if n:
        rows = src.reshape(3, 128, 16)
        u = (np.arange(128) + 32) % 128
        want[:, :, :16] = rows[:, u]
        want[:, :, 16:] = rows[:, u ^ 1]
    assert np.array_equal(dst.reshape(3, 128, 32), want)
    assert fused["runs"] == 1   # the grid's three CTAs in one gang, their two issues as one
    got = state()
    from tcemu.ptx.ops import runs
    monkeypatch.setattr(runs.Fuse, "run", lambda *a: 0)
    _, one = run_launch(n=n)
    assert fused["runs"] == 1 and np.array_equal(one, dst)
    each = state()
    _, alone = run_launch(n=n, lockstep=False)
    assert np.array_equal(alone, dst)
    warps = state()
    assert len(got[0]) == 3 and len(got[1]) >= 1
    for other, epochs in ((each, True), (warps, False)):   # (a gang's landing marks one write epoch, not a warp's)
        for g, a in zip(got[0] + got[1], other[0] + other[1]):
            assert g.keys() == a.keys()
            for k in g:
                if epochs or k not in ("epochs", "epoch"):
                    assert np.array_equal(g[k], a[k]) if isinstance(g[k], np.ndarray) else g[k] == a[k], k


def test_a_run_whose_issues_meet_is_reported_as_the_warps_one_at_a_time_report_it(fused, monkeypatch):
    # the second issue copies to the first one's bytes (second=0): the run falls back before any change, and the
    # second issue's gang and then its warps report the copy still in flight, as with no gang at all
    with pytest.raises(HazardError) as ganged:
        run_launch(second=0)
    assert fused["runs"] == 1
    monkeypatch.setattr(lockstep, "GANG_OPS", False)
    with pytest.raises(HazardError) as alone:
        run_launch(second=0)
    assert "is still in flight" in str(ganged.value) and str(ganged.value) == str(alone.value)


def test_a_pc_whose_runs_always_fall_back_stops_trying(fused):
    # the second issue reads another allocation (`other`): the run falls back every time (one allocation a run), and
    # the issues run one at a time with the same bytes; after runs.GIVE_UP launches that pc no longer tries
    from tcemu.ptx.ops import runs
    body = RUN_BODY.format(second=2048).replace("  add.s64 %rd6, %rd1, %rd5;", "  add.s64 %rd6, %rd9, %rd5;")
    body = body.replace("  ld.param.u32 %r9, [n];", "  ld.param.u32 %r9, [n];\n  ld.param.u64 %rd9, [other];")
    mod = ptx.load(entry(body, params=PARAMS + ", .param .u64 other", regs=REGS + BUF, prologue=""))
    src = np.random.default_rng(7).integers(0, 256, 128 * 3 * 16, dtype=np.uint8)
    other = np.random.default_rng(8).integers(0, 256, 128 * 3 * 16, dtype=np.uint8)
    u = (np.arange(128) + 32) % 128
    want = np.concatenate([src.reshape(3, 128, 16)[:, u], other.reshape(3, 128, 16)[:, u ^ 1]], axis=2)
    for k in range(runs.GIVE_UP + 3):
        dst = np.zeros(32 * 128 * 3, np.uint8)
        mod.launch("k", grid=3, block=128, args=[src, dst, 16, other])
        assert np.array_equal(dst.reshape(3, 128, 32), want)
        assert fused["runs"] == min(k + 1, runs.GIVE_UP)


@pytest.mark.parametrize("wgmma, check_layouts, kept", [(False, True, False), (True, True, True), (True, False, False)])
def test_sources_are_kept_only_where_a_layout_check_reads_them(spies, monkeypatch, wgmma, check_layouts, kept):
    """The global byte behind each shared byte (SharedWindow.source16) is read only by a tensor-core operand's
    layout check: a launch whose program has no wgmma or tcgen05 instruction (here one past the ret, never run),
    or with check_layouts=False, makes none; the bytes moved are the same."""
    made = []
    release = machine.SharedWindow.release

    def spy(self):
        made.append("source16" in self.__dict__)
        release(self)
    monkeypatch.setattr(machine.SharedWindow, "release", spy)
    body = BODY.format(sync="  bar.sync 0;") + ("  wgmma.fence.sync.aligned;\n" if wgmma else "")
    src = np.random.default_rng(5).integers(0, 256, 128 * 3 * 16, dtype=np.uint8)
    dst = np.zeros(48 * 128 * 3, np.uint8)
    mod = ptx.load(entry(body, params=PARAMS, regs=REGS + BUF, prologue=""))
    mod.launch("k", grid=3, block=128, args=[src, dst, 8], check_layouts=check_layouts)
    assert np.array_equal(dst, expected(src, 3, 8))
    assert spies["land"] >= 3 * 2
    assert made == [kept] * 3
