"""Gang versions of ld / st (.shared, .global, generic), ldmatrix and stmatrix (tcemu/ptx/ops/memory_gang.py): the
warps of a lock-step gang access memory as one batch, with the bytes, registers, racecheck records and reports of
the warps one at a time. Expectations are the bytes the PTX text moves (PTX ISA 9.7.9.8-9: ld / st; 9.7.14.5.15-16:
ldmatrix / stmatrix fragments, lane l holding elements (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1))."""
import sys
import warnings

import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.ptx import HazardError, MemoryFault, graces, lockstep, races

from ptxkit import REGS, entry, launch_matmul

PARAMS = ".param .u64 src, .param .u64 out"
SMEM = ".shared .align 16 .b8 buf[16384];\n"
OUT_WORDS = 32   # per thread

# Thread t of CTA c (128 threads), g = 128 c + t, x = src[16 g ..] (4 words), u = (t + 32) mod 128 (another warp):
#   shared stores: buf[16 t] <- x (v4); odd t: buf[2048 + t] <- byte x0, even t: buf[2304 + 2 t] <- half x1 (partial
#   masks); generic v2: buf[4096 + 8 t] <- (x2, x3); stmatrix.x4 of (x0..x3) at buf[8192 + 512 w]; stmatrix.x1
#   .trans of x0 at buf[12288 + 128 w]
#   after {sync}: loads of u's bytes and ldmatrix.x4 / .x1.trans of warp (w + 1) mod 4, all written to out[32 g ..]
BODY = """\
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mad.lo.u32 %r3, %r2, 128, %r1;
  mul.wide.u32 %rd3, %r3, 16;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.v4.u32 {%r20, %r21, %r22, %r23}, [%rd4];
  mov.u32 %r4, buf;
  shl.b32 %r5, %r1, 4;
  add.u32 %r6, %r4, %r5;
  st.shared.v4.u32 [%r6], {%r20, %r21, %r22, %r23};
  and.b32 %r10, %r1, 1;
  setp.eq.u32 %p1, %r10, 1;
  add.u32 %r11, %r4, %r1;
  @%p1 st.shared.u8 [%r11+2048], %r20;
  shl.b32 %r12, %r1, 1;
  add.u32 %r12, %r12, %r4;
  @!%p1 st.shared.u16 [%r12+2304], %r21;
  mov.u64 %rd5, buf;
  cvta.shared.u64 %rd5, %rd5;
  mul.wide.u32 %rd6, %r1, 8;
  add.s64 %rd7, %rd5, %rd6;
  st.v2.u32 [%rd7+4096], {%r22, %r23};
  shr.u32 %r13, %r1, 5;
  and.b32 %r14, %r1, 31;
  shl.b32 %r15, %r14, 4;
  shl.b32 %r16, %r13, 9;
  add.u32 %r17, %r4, %r16;
  add.u32 %r17, %r17, %r15;
  stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r17+8192], {%r20, %r21, %r22, %r23};
  shl.b32 %r16, %r13, 7;
  add.u32 %r18, %r4, %r16;
  add.u32 %r18, %r18, %r15;
  stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%r18+12288], {%r20};
{sync}
  add.u32 %r30, %r1, 32;
  and.b32 %r30, %r30, 127;
  shl.b32 %r31, %r30, 4;
  add.u32 %r31, %r31, %r4;
  ld.shared.v4.u32 {%r40, %r41, %r42, %r43}, [%r31];
  or.b32 %r32, %r30, 1;
  add.u32 %r32, %r32, %r4;
  ld.shared.u8 %r44, [%r32+2048];
  and.b32 %r33, %r30, 126;
  shl.b32 %r33, %r33, 1;
  add.u32 %r33, %r33, %r4;
  ld.shared.u16 %r45, [%r33+2304];
  mul.wide.u32 %rd8, %r30, 8;
  add.s64 %rd9, %rd5, %rd8;
  ld.v2.u32 {%r46, %r47}, [%rd9+4096];
  add.u32 %r34, %r13, 1;
  and.b32 %r34, %r34, 3;
  shl.b32 %r35, %r34, 9;
  add.u32 %r35, %r35, %r4;
  add.u32 %r35, %r35, %r15;
  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r50, %r51, %r52, %r53}, [%r35+8192];
  shl.b32 %r36, %r34, 7;
  add.u32 %r36, %r36, %r4;
  add.u32 %r36, %r36, %r15;
  ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%r54}, [%r36+12288];
  ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r55}, [%r36+12288];
  mul.wide.u32 %rd10, %r3, 128;
  add.s64 %rd11, %rd2, %rd10;
  st.global.v4.u32 [%rd11], {%r40, %r41, %r42, %r43};
  st.global.u32 [%rd11+16], %r44;
  st.global.u32 [%rd11+20], %r45;
  st.v2.u32 [%rd11+24], {%r46, %r47};
  st.global.v4.u32 [%rd11+32], {%r50, %r51, %r52, %r53};
  st.global.u32 [%rd11+48], %r54;
  st.global.u32 [%rd11+52], %r55;
  @%p1 st.global.u8 [%rd11+56], %r20;
  @!%p1 st.global.u16 [%rd11+58], %r21;
  ret;
"""


def launch(body=BODY, sync="  bar.sync 0;", grid=3, **kw):
    src = np.random.default_rng(3).integers(0, 1 << 32, 4 * 128 * grid, dtype=np.uint64).astype(np.uint32)
    out = np.zeros(OUT_WORDS * 128 * grid, np.uint32)
    mod = ptx.load(entry(body.replace("{sync}", sync), params=PARAMS, regs=REGS + SMEM,
                         prologue=""))
    mod.launch("k", grid=grid, block=128, args=[src, out], **kw)
    return src, out


def to_matrix(frag):
    """One 8x8 b16 matrix from its fragment (32 b32 registers, one per lane)."""
    m = np.zeros((8, 8), np.uint16)
    for lane in range(32):
        m[lane // 4, 2 * (lane % 4)] = frag[lane] & 0xFFFF
        m[lane // 4, 2 * (lane % 4) + 1] = frag[lane] >> 16
    return m


def to_fragment(m):
    return np.array([int(m[lane // 4, 2 * (lane % 4)]) | int(m[lane // 4, 2 * (lane % 4) + 1]) << 16
                     for lane in range(32)], np.uint32)


def expected(src, grid):
    x = src.reshape(grid, 128, 4)
    out = np.zeros((grid, 128, OUT_WORDS), np.uint32)
    for c in range(grid):
        for t in range(128):
            u, w, lane = (t + 32) % 128, t // 32, t % 32
            nxt = ((w + 1) % 4) * 32
            out[c, t, 0:4] = x[c, u]
            out[c, t, 4] = x[c, u | 1, 0] & 0xFF
            out[c, t, 5] = x[c, u & 126, 1] & 0xFFFF
            out[c, t, 6:8] = x[c, u, 2:4]
            out[c, t, 8:12] = x[c, nxt + lane]                      # stmatrix then ldmatrix: the same fragments
            # warp nxt's x0 stored transposed, read back plain (.x1 uses rows of lanes 0-7) and transposed
            m = to_matrix(x[c, nxt:nxt + 32, 0])
            out[c, t, 12] = x[c, nxt + lane, 0]
            out[c, t, 13] = to_fragment(m.T)[lane]
            out[c, t, 14] = x[c, t, 0] & 0xFF if t % 2 else (x[c, t, 1] & 0xFFFF) << 16
    return out.reshape(-1)


@pytest.fixture
def spies(monkeypatch):
    """Count the gang records: the gang path must have run (else these tests would prove nothing). cp.async's
    wait_group records through gang_write_record too: those calls count as "gang_write_record@cp_async"."""
    seen = {}
    for mod, name in ((races, "gang_write_record"), (races, "gang_read_record"), (graces, "record_writes"),
                      (graces, "record_writes_ctas"), (graces, "record_reads_rows")):
        real = getattr(mod, name)

        def spy(*a, real=real, name=name, **k):
            if name == "gang_write_record" and sys._getframe(1).f_globals["__name__"].endswith(".cp_async"):
                name += "@cp_async"
            n = 1
            if name.endswith("_ctas"):   # several CTAs' global loads or stores at once: one record each
                name, n = name[:-5], len(a[0])
            elif name == "record_reads_rows":   # (rows of several CTAs: part, each row's CTA)
                name, n = "record_reads", len(np.unique(a[5]))
            seen[name] = seen.get(name, 0) + n
            return real(*a, **k)
        monkeypatch.setattr(mod, name, spy)
    return seen


def test_gang_accesses_move_the_bytes_the_ptx_text_moves(spies):
    src, out = launch()
    want = expected(src, 3)
    # out words 14: an odd thread's st.global.u8 fills byte 56, an even one's .u16 bytes 58-59
    assert np.array_equal(out, want)
    # per CTA: st.shared x4 + stmatrix x2; ld.shared x4 + ldmatrix x3; ld.global x1 + st.global x9
    assert spies == {"gang_write_record": 3 * 6, "gang_read_record": 3 * 7, "record_writes": 3 * 9,
                     "record_reads": 3}
    _, alone = launch(lockstep=False)
    assert np.array_equal(alone, out)


@pytest.fixture
def states(monkeypatch):
    """Every CTA's shared window and every global racecheck shadow a launch makes, in order of creation; a window's
    state as it was when its CTA finished (the CTA then drops its shadows and racecheck records: Cta.release)."""
    from tcemu.ptx import machine, memory
    made = []

    class Window(memory.SharedWindow):
        def release(self):
            self.final = state_of(self)
            super().release()

    def window(*a, **k):
        made.append(Window(*a, **k))
        return made[-1]

    class Shadow(graces.GShadow):
        def __init__(self, *a):
            super().__init__(*a)
            made.append(self)
    monkeypatch.setattr(machine, "SharedWindow", window)
    monkeypatch.setattr(graces, "GShadow", Shadow)
    return made


def state_of(obj):
    """The state a window or shadow holds: bytes, written flags, shadows (the lazily made ones as they read), the
    racecheck records and the generic-proxy epochs (a window's as its CTA left it)."""
    if "final" in obj.__dict__:
        return obj.final
    if isinstance(obj, graces.GShadow):
        return {**{k: obj.bytes(k) for k in ("w_key", "w_info", "r_key", "r_info")},
                **{k: getattr(obj, k) for k in ("writers", "readers")}}
    out = {k: getattr(obj, k) for k in ("guard_bar", "source", "async_pending", "async_pending16", "write_epoch")}
    out["epochs"] = obj.epochs(np.arange(obj.hi))
    out.update(data=obj.smem.data, written=obj.smem.written)
    if obj.race is not None:
        out.update({f"race.{k}": obj.race.bytes(k) for k in ("w_ep", "w_info", "w_mask", "w_region", "R")})
        out.update({f"race.{k}": getattr(obj.race, k) for k in ("rmax", "wmax", "agents")})
    return out


def assert_same_states(got, want):
    """Each state_of in `got` equal to its twin in `want`, key by key (the key named where one differs)."""
    for g, a in zip(got, want):
        assert g.keys() == a.keys()
        for k in g:
            assert np.array_equal(g[k], a[k]) if isinstance(g[k], np.ndarray) else g[k] == a[k], k


def no_memory_gangs(monkeypatch):
    from tcemu.ptx.ops import memory_ops
    for name in ("ld_gang", "st_gang", "ldmatrix_gang", "stmatrix_gang"):
        monkeypatch.setattr(memory_ops, name, lambda *a: None)


@pytest.mark.parametrize("run", ["hand", "triton"])
def test_gang_leaves_every_shadow_as_the_warps_one_at_a_time_do(run, states, spies, monkeypatch):
    # the racecheck records, epochs and shadows after the launch, not only the output bits
    go = (lambda: launch()) if run == "hand" else (lambda: launch_matmul("matmul_bf16", 128, 256, 64))
    go()
    ganged = [state_of(x) for x in states]
    assert spies["gang_write_record"] and spies["gang_read_record"] and spies["record_writes"]
    states.clear()
    spies.clear()
    no_memory_gangs(monkeypatch)   # cp.async's and wgmma's gangs stay (cp.async's land marks one write epoch)
    go()
    # cp.async's issue records its global reads, its wait_group its shared writes
    assert set(spies) <= {"record_reads", "gang_write_record@cp_async"}
    alone = [state_of(x) for x in states]
    assert len(ganged) == len(alone) > 2
    assert all("race.w_ep" in g and g["race.w_ep"].any() for g in ganged if "written" in g)   # records compared
    assert_same_states(ganged, alone)


def test_gang_without_racecheck_gives_the_same_bytes(spies):
    src, out = launch(check_races=False)
    # the gangs ran (the shared records see no clock and record nothing; the global ones are not called)
    assert np.array_equal(out, expected(src, 3)) and spies == {"gang_write_record": 3 * 6, "gang_read_record": 3 * 7}


def test_triton_matmul_epilogue_gangs_give_the_bits_of_warps_one_at_a_time(spies):
    # the bf16 fixture's epilogue: st.shared.v4.b32, ldmatrix.x4 and st.global of 2 CTAs x 8 warps, ganged (its two
    # runs of 8 ldmatrix as one load a CTA each: ops/runs.py)
    _, _, c, _, _ = launch_matmul("matmul_bf16", 256, 256, 64)
    assert spies.get("gang_read_record", 0) >= 2 * 2 and spies.get("record_writes", 0) >= 2
    _, _, alone, _, _ = launch_matmul("matmul_bf16", 256, 256, 64, lockstep=False)
    assert c.any() and np.array_equal(c, alone)


def same_report(run, monkeypatch, kind=HazardError):
    """The report of a planted bug with the gang versions, then with the warps one at a time: the same text."""
    with pytest.raises(kind) as ganged:
        run()
    monkeypatch.setattr(lockstep, "GANG_OPS", False)
    with pytest.raises(kind) as alone:
        run()
    assert type(alone.value) is type(ganged.value) and str(ganged.value) == str(alone.value)
    monkeypatch.setattr(lockstep, "GANG_OPS", True)
    return str(ganged.value)


def test_missing_bar_sync_reads_as_the_race_it_is(spies, monkeypatch):
    # thread t reads what warp (t + 32) / 32 stored, unordered (a RAW race), first at the ld.shared.v4
    text = same_report(lambda: launch(sync=""), monkeypatch)
    assert "RAW race on shared address" in text and "ld.shared.v4.u32" in text
    assert spies["gang_write_record"] >= 6   # the stores before it ran as gangs


def test_missing_bar_sync_before_ldmatrix_reads_as_the_race_it_is(spies, monkeypatch):
    # the plain loads read the thread's own bytes (ordered); ldmatrix reads the next warp's stmatrix: RAW
    body = BODY.replace("  add.u32 %r30, %r1, 32;\n  and.b32 %r30, %r30, 127;", "  mov.u32 %r30, %r1;") \
        .replace("  or.b32 %r32, %r30, 1;", "  mov.u32 %r32, %r30;") \
        .replace("  and.b32 %r33, %r30, 126;", "  mov.u32 %r33, %r30;")
    body = body.replace("@%p1 st.shared.u8 [%r11+2048]", "st.shared.u8 [%r11+2048]") \
        .replace("@!%p1 st.shared.u16 [%r12+2304]", "st.shared.u16 [%r12+2304]")
    text = same_report(lambda: launch(body, sync=""), monkeypatch)
    assert "RAW race on shared address" in text and "ldmatrix.sync.aligned.m8n8.x4" in text
    assert spies["gang_read_record"] >= 3   # the loads of own bytes before it ran as gangs


def test_a_store_over_another_warps_ganged_reads_reads_as_the_race_it_is(spies, monkeypatch):
    # thread t overwrites slot (t + 64) mod 128, which thread t + 32 (another warp) has just read: WAR, found only
    # through the racecheck records of the ganged ld.shared
    body = BODY.replace("  mul.wide.u32 %rd10, %r3, 128;", "  add.u32 %r37, %r1, 64;\n  and.b32 %r37, %r37, 127;\n"
                        "  shl.b32 %r37, %r37, 4;\n  add.u32 %r37, %r37, %r4;\n  st.shared.u32 [%r37], %r1;\n"
                        "  mul.wide.u32 %rd10, %r3, 128;")
    text = same_report(lambda: launch(body), monkeypatch)
    assert "WAR race on shared address" in text and "ld.shared.v4.u32" in text
    assert spies["gang_read_record"] >= 3 * 7


def test_two_lanes_storing_one_byte_fall_back_to_the_per_warp_report(monkeypatch):
    # lanes 0 and 1 of each warp store different bytes to one address (one instruction: WAW within the warp)
    body = BODY.replace("  add.u32 %r11, %r4, %r1;", "  shr.u32 %r11, %r1, 1;\n  add.u32 %r11, %r11, %r4;") \
        .replace("@%p1 st.shared.u8 [%r11+2048], %r20;", "st.shared.u8 [%r11+2048], %r20;")
    text = same_report(lambda: launch(body), monkeypatch)
    assert "both lanes write it in this one instruction" in text


def test_faults_fall_back_to_the_per_warp_report(monkeypatch):
    misaligned = BODY.replace("st.shared.v4.u32 [%r6]", "st.shared.v4.u32 [%r6+4]")
    assert "not aligned to 16 bytes" in same_report(lambda: launch(misaligned), monkeypatch, MemoryFault)
    outside = BODY.replace("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r50, %r51, %r52, %r53}, [%r35+8192]",
                           "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r50, %r51, %r52, %r53}, [%r35+16384]")
    assert "outside the kernel's shared memory" in same_report(lambda: launch(outside), monkeypatch, MemoryFault)
    # ldmatrix is .sync.aligned: a predicate that leaves out lanes is the warp's HazardError
    partial = BODY.replace("  ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r55}",
                           "  @%p1 ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r55}")
    assert "is warp-synchronous" in same_report(lambda: launch(partial), monkeypatch)
    # a byte nothing wrote: odd threads read bytes only even threads' .u8 would have stored
    unwritten = BODY.replace("  or.b32 %r32, %r30, 1;", "  and.b32 %r32, %r30, 126;")
    assert "which nothing wrote" in same_report(lambda: launch(unwritten), monkeypatch, MemoryFault)


# ------------------------------------------------------------------------------------------------ global races

GLOBAL = """\
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mul.wide.u32 %rd3, %r1, 4;
  mul.wide.u32 %rd4, %r2, 512;
  xor.b32 %r3, %r2, 1;
  mul.wide.u32 %rd5, %r3, 512;
  add.s64 %rd6, %rd2, %rd3;
  add.s64 %rd7, %rd6, %rd4;
  add.s64 %rd8, %rd6, %rd5;
  add.u32 %r4, %r2, 7;
{body}
  ret;
"""
# %rd7: &out[128 c + t] (the CTA's own words), %rd8: &out[128 (c ^ 1) + t] (the other CTA's), %r4 = c + 7


def launch_global(body, grid=2, **kw):
    out = np.zeros(128 * grid, np.uint32)
    mod = ptx.load(entry(GLOBAL.format(body=body), params=PARAMS, regs=REGS, prologue=""))
    mod.launch("k", grid=grid, block=128, args=[np.zeros(4, np.uint32), out], **kw)
    return out


PLANTED_GLOBAL = {   # (body, report phrase)
    "two CTAs store one word": ("  st.global.u32 [%rd6], %r4;", "WAW race on global address"),
    "a CTA overwrites the other's words": ("  st.global.u32 [%rd7], %r4;\n  st.global.u32 [%rd8], %r4;",
                                           "WAW race on global address"),
    "a CTA reads the other's words": ("  st.global.u32 [%rd7], %r4;\n  ld.global.u32 %r5, [%rd8];",
                                      "RAW race on global address"),
    "a CTA stores over the other's reads": ("  ld.global.u32 %r5, [%rd8];\n  st.global.u32 [%rd7], %r4;",
                                            "WAR race on global address"),
}


@pytest.mark.parametrize("bug", sorted(PLANTED_GLOBAL))
def test_planted_global_races_read_as_without_the_gang(bug, monkeypatch):
    body, phrase = PLANTED_GLOBAL[bug]
    assert phrase in same_report(lambda: launch_global(body), monkeypatch)


def test_global_controls_pass_and_run_as_gangs(spies):
    # the CTA's own words, a store of the value a word holds, and a word every thread of both CTAs reads
    out = launch_global("  st.global.u32 [%rd7], %r4;\n  ld.global.u32 %r5, [%rd7];\n  st.global.u32 [%rd7], %r5;\n"
                        "  ld.global.u32 %r6, [%rd1];")
    assert np.array_equal(out, np.repeat(np.arange(7, 9, dtype=np.uint32), 128))
    assert spies == {"record_writes": 2 * 2, "record_reads": 2 * 2}
    spies.clear()
    # both CTAs store 0 to every word (a value the word holds): benign, run warp by warp (one byte, two lanes)
    assert not launch_global("  mov.u32 %r5, 0;\n  st.global.u32 [%rd6], %r5;").any()
    assert spies == {}


# ------------------------------------------------------------------------------------------------ hang reports

# warps 1 and 2 store 1 to flag[32 (w - 1) + lane] (a gang of two), then all meet at bar.sync and warp 0 spins until
# flag[0] is 2: a deadlock whose report names the last writer of what warp 0 reads (hang.WriteLog)
SPIN = """\
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r4, 1;
  setp.lt.u32 %p1, %r1, 32;
  @%p1 bra $SYNC;
  sub.u32 %r2, %r1, 32;
  mul.wide.u32 %rd2, %r2, 4;
  {store}
$SYNC:
  bar.sync 0;
  @!%p1 ret;
$SPIN:
  {load}
  setp.ne.u32 %p2, %r3, 2;
  @%p2 bra $SPIN;
  ret;
"""
SPINS = {
    "shared": ("mov.u32 %r5, flag;\n  cvt.u32.u64 %r6, %rd2;\n  add.u32 %r5, %r5, %r6;\n  st.shared.u32 [%r5], %r4;",
               "ld.volatile.shared.u32 %r3, [flag];", "reads shared address 0x400 (4 bytes) of CTA rank 0,"),
    "global": ("add.s64 %rd3, %rd1, %rd2;\n  st.global.u32 [%rd3], %r4;", "ld.volatile.global.u32 %r3, [%rd1];",
               "(4 bytes, 0 bytes into 'out' (256 bytes))"),
}


@pytest.mark.parametrize("space", sorted(SPINS))
def test_a_hang_report_names_the_warp_of_a_gang_store(space, spies, monkeypatch):
    store, load, phrase = SPINS[space]
    text = entry(SPIN.replace("{store}", store).replace("{load}", load), params=".param .u64 out",
                 regs=REGS + ".shared .align 4 .u32 flag[64];\n", prologue="")

    def run():
        ptx.load(text).launch("k", grid=1, block=96, args=[np.zeros(64, np.uint32)])
    got = same_report(run, monkeypatch, ptx.Deadlock)
    assert phrase in got and f"holding 0x1; last written by CTA (0, 0, 0) warp 1: st.{space}.u32" in got
    assert spies.get("gang_write_record" if space == "shared" else "record_writes") == 1


def test_the_write_log_reads_a_gang_entry_back_warp_by_warp():
    # one entry for a gang's store (WriteLog.gang) answers `last` as the warps' own entries would: the last warp in
    # gang order with a lane on a byte of the range, found through each warp's count of lanes
    from types import SimpleNamespace
    from tcemu.ptx.hang import WriteLog
    space = object()
    warps = [SimpleNamespace(cta=SimpleNamespace(ctaid=(c, 0, 0)), index=i) for c, i in ((0, 0), (0, 1), (1, 0))]
    log = WriteLog()
    log.gang(space, warps, np.array([0, 4, 8, 12, 16, 100, 104], np.uint64), [2, 3, 2], 4, "st.global.u32")
    assert log.count == 3
    assert log.last(space, 0, 4) == (((0, 0, 0), 0), "st.global.u32")
    assert log.last(space, 6, 10) == (((0, 0, 0), 1), "st.global.u32")
    assert log.last(space, 0, 200) == (((1, 0, 0), 0), "st.global.u32")   # the last of three warps
    assert log.last(space, 20, 100) is None and log.last(object(), 0, 200) is None


def test_the_write_log_holds_a_bounded_number_of_warps_stores(monkeypatch):
    # a gang's entry counts as its warps' stores: the oldest entries go once more than WRITE_LOG are held (a grid of
    # 2^20 one-warp CTAs keeps the addresses of the last WRITE_LOG warps' stores, not of every gang)
    from types import SimpleNamespace
    from tcemu.ptx import hang
    monkeypatch.setattr(hang, "WRITE_LOG", 5)
    space = object()
    warp = SimpleNamespace(cta=SimpleNamespace(ctaid=(0, 0, 0)), index=0)
    log = hang.WriteLog()
    for k in range(4):   # gangs of 2 warps, 8 bytes each
        log.gang(space, [warp, warp], np.arange(8 * k, 8 * k + 8, 4, dtype=np.uint64), [1, 1], 4, f"gang {k}")
    assert (log.held, len(log.log), log.count) == (4, 2, 8)
    assert log.last(space, 0, 16) is None and log.last(space, 16, 24)[1] == "gang 2"
    log.running = warp
    log.add(space, np.array([40], np.uint64), 4, "alone")
    assert (log.held, len(log.log)) == (5, 3) and log.last(space, 0, 64)[1] == "alone"


def test_a_store_of_an_in_flight_wgmma_register_serialises_warp_by_warp(spies):
    # st.global of a wgmma accumulator before wgmma.wait_group: each warp waits for its wgmma and warns (module.py's
    # hazard check), so the gang stands back; the bytes are the finished wgmma's. The 16 stores of the accumulators
    # after the wait (wrapped by the same hazard check) run as gangs of the 4 warps.
    from wgmma_kernel import BF16, launch as launch_wgmma   # the wgmma harness only here
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        regs, prep = launch_wgmma(BF16)
    assert np.array_equal(regs, prep["regs"]) and spies["record_writes"] == 16
    spies.clear()
    hook = {"after_commit": "  mul.wide.u32 %rd23, %r0, 64;\n  add.s64 %rd23, %rd0, %rd23;\n"
                            "  st.global.u32 [%rd23+20], %d5;\n"}
    with pytest.warns(ptx.WgmmaSerializedWarning):
        regs, _ = launch_wgmma(BF16, prep=prep, hooks=hook)
    assert np.array_equal(regs, prep["regs"]) and spies["record_writes"] == 16   # the early store: warp by warp


# ------------------------------------------------------------------------------------------------ clusters

# thread t of cluster rank r (2 warps): st.u32 through a generic address of the other CTA's window (mapa) of
# t + 100 r, then barrier.cluster, then a generic ld of its own word: out[64 r + t] = t + 100 (1 - r)
DSMEM = """\
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r10, %cluster_ctarank;
  xor.b32 %r11, %r10, 1;
  mov.u64 %rd5, buf;
  cvta.shared.u64 %rd5, %rd5;
  mul.wide.u32 %rd6, %r1, 4;
  add.s64 %rd7, %rd5, %rd6;
  mapa.u64 %rd8, %rd7, %r11;
  mad.lo.u32 %r12, %r10, 100, %r1;
  st.u32 [%rd8], %r12;
  barrier.cluster.arrive.aligned;
  barrier.cluster.wait.aligned;
  ld.u32 %r5, [%rd7];
  mad.lo.u32 %r13, %r10, 64, %r1;
  mul.wide.u32 %rd9, %r13, 4;
  add.s64 %rd9, %rd1, %rd9;
  st.global.u32 [%rd9], %r5;
  ret;
"""


def test_stores_to_another_ctas_window_run_warp_by_warp(spies):
    def run(**kw):
        out = np.zeros(128, np.uint32)
        mod = ptx.load(entry(DSMEM, params=".param .u64 out", regs=REGS + SMEM, prologue="",
                             directives=".explicitcluster"))
        mod.launch("k", grid=2, block=64, cluster=(2, 1, 1), args=[out], **kw)
        return out
    out = run()
    t = np.arange(64, dtype=np.uint32)
    assert np.array_equal(out, np.concatenate([t + 100, t]))
    # the stores to the other window fall back; the loads of the own window and the global stores run as gangs
    assert "gang_write_record" not in spies and spies["gang_read_record"] == 2 and spies["record_writes"] == 2
    assert np.array_equal(run(lockstep=False), out)


def test_mapa_runs_in_a_private_stretch_and_reports_a_rank_outside_the_cluster(monkeypatch):
    """mapa reads only registers and the cluster's size (alike in every cluster of a launch): it runs in the
    lock-step batches of register-only instructions; a rank past the cluster stops the batch there, and each warp's
    own run reports it, naming the warp, as without batches."""
    stretched = []
    run = lockstep.stretch

    def spy(gang, pc, m=None):
        n = run(gang, pc, m)
        stretched.extend((gang[0].prog.instrs[i].opcode, len(gang)) for i in range(pc, gang[0].pc))
        return n
    monkeypatch.setattr(lockstep, "stretch", spy)
    mod = ptx.load(entry(DSMEM, params=".param .u64 out", regs=REGS + SMEM, prologue="",
                         directives=".explicitcluster"))
    out = np.zeros(128, np.uint32)
    mod.launch("k", grid=2, block=64, cluster=(2, 1, 1), args=[out])
    assert [n for op, n in stretched if op.startswith("mapa")] == [4]   # the cluster's 4 warps, in one batch
    t = np.arange(64, dtype=np.uint32)
    assert np.array_equal(out, np.concatenate([t + 100, t]))
    bad = DSMEM.replace("xor.b32 %r11, %r10, 1;", "add.u32 %r11, %r10, 2;")
    texts = []
    for gangs in (True, False):
        with pytest.raises(ptx.MemoryFault) as e:
            ptx.load(entry(bad, params=".param .u64 out", regs=REGS + SMEM, prologue="",
                           directives=".explicitcluster")).launch("k", grid=2, block=64, cluster=(2, 1, 1),
                                                                  args=[out], lockstep=gangs)
        texts.append(str(e.value))
    assert "mapa to CTA rank 2; the cluster has 2" in texts[0] and "CTA (0, 0, 0), warp 0" in texts[0]
    assert texts[0] == texts[1]


def test_cta_starts_finds_each_ctas_run_of_warps_or_none():
    # the gang versions that take a CTA's rows as one slice (st.global of several CTAs, cp.async's issue) need each
    # CTA's warps together in the gang; thread_ids are Warp.tid for every warp at once
    from types import SimpleNamespace
    from tcemu.ptx.machine import _tids
    from tcemu.ptx.lockstep import thread_ids
    from tcemu.ptx.ops.common import cta_starts
    a, b, c = object(), object(), object()
    warps = [SimpleNamespace(cta=x, index=i) for x, i in ((a, 0), (a, 1), (b, 0), (c, 3), (c, 1))]
    assert cta_starts(warps) == [0, 2, 3] and cta_starts(warps[:1]) == [0]
    assert cta_starts(warps + [SimpleNamespace(cta=b, index=1)]) is None   # b's warps apart
    assert np.array_equal(thread_ids(warps), np.stack([_tids(w.index) for w in warps]))


def test_triton_issue_runs_leave_every_shadow_as_its_issues_one_at_a_time_do(states, monkeypatch):
    # the bf16 fixture's pipeline stages: 4 and 8 cp.async with their address arithmetic, each run as one issue
    from tcemu.ptx.ops import cp_async
    sizes = []
    real = cp_async._issue
    monkeypatch.setattr(cp_async, "_issue", lambda w, s, items: (sizes.append(len(items)), real(w, s, items))[1])
    _, _, c, _, _ = launch_matmul("matmul_bf16", 256, 256, 256)
    assert 4 in sizes and 8 in sizes
    fused = [state_of(x) for x in states]
    states.clear()
    from tcemu.ptx.ops import runs
    monkeypatch.setattr(runs.Fuse, "run", lambda *a: 0)
    sizes.clear()
    _, _, one, _, _ = launch_matmul("matmul_bf16", 256, 256, 256)
    assert set(sizes) == {1} and c.any() and np.array_equal(c, one)
    each = [state_of(x) for x in states]
    assert len(fused) == len(each) > 2
    assert_same_states(fused, each)


# thread t (128 threads a CTA) stores its 4 words w0..w3 to buf[16 t] and w3..w0 to buf[{second} + 16 t] (address
# arithmetic between the two stores: one run), then reads thread u = (t + 32) mod 128's two rows back to out
STORE_RUN = """\
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mad.lo.u32 %r3, %r2, 128, %r1;
  mul.wide.u32 %rd3, %r3, 16;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.v4.u32 {%r20, %r21, %r22, %r23}, [%rd4];
  mov.u32 %r4, buf;
  shl.b32 %r5, %r1, 4;
  add.u32 %r6, %r4, %r5;
  st.shared.v4.u32 [%r6], {%r20, %r21, %r22, %r23};
  add.u32 %r7, %r6, {second};
  st.shared.v4.u32 [%r7], {%r23, %r22, %r21, %r20};
  bar.sync 0;
  add.u32 %r8, %r1, 32;
  and.b32 %r8, %r8, 127;
  shl.b32 %r9, %r8, 4;
  add.u32 %r10, %r4, %r9;
  ld.shared.v4.u32 {%r30, %r31, %r32, %r33}, [%r10];
  ld.shared.v4.u32 {%r34, %r35, %r36, %r37}, [%r10+{second}];
  mul.wide.u32 %rd5, %r3, 32;
  add.s64 %rd6, %rd2, %rd5;
  st.global.v4.u32 [%rd6], {%r30, %r31, %r32, %r33};
  st.global.v4.u32 [%rd6+16], {%r34, %r35, %r36, %r37};
  ret;
"""


def test_a_run_of_shared_stores_leaves_the_state_of_the_stores_one_at_a_time(states, monkeypatch):
    """Two st.shared.v4 with address arithmetic between them run as one store (ops/runs.py): the words the PTX
    text moves, and every window's bytes, records, sources and generic-proxy epochs equal to the stores run one
    at a time; where the second store writes the first one's bytes (second=0: the later wins), the run falls back
    and the bytes are the same as one at a time."""
    from tcemu.ptx.ops import memory_gang, runs
    plans = []
    real = memory_gang._shared_store_plan
    monkeypatch.setattr(memory_gang, "_shared_store_plan",   # (a plan that passes its checks)
                        lambda *a: (lambda land: (plans.append(not isinstance(a[-1], str)), land)[1])(real(*a)))

    def go(second):
        src = np.random.default_rng(11).integers(0, 1 << 32, 4 * 128 * 3, dtype=np.uint64).astype(np.uint32)
        out = np.zeros(8 * 128 * 3, np.uint32)
        mod = ptx.load(entry(STORE_RUN.replace("{second}", str(second)), params=PARAMS, regs=REGS + SMEM,
                             prologue=""))
        mod.launch("k", grid=3, block=128, args=[src, out])
        return src, out
    src, out = go(4096)
    x = src.reshape(3, 128, 4)
    u = (np.arange(128) + 32) % 128
    assert np.array_equal(out.reshape(3, 128, 8), np.concatenate([x[:, u], x[:, u, ::-1]], axis=2))
    assert plans.count(True) == 3   # one run a CTA
    fused = [state_of(s) for s in states]
    states.clear()
    _, over = go(0)
    assert plans.count(True) == 3 and np.array_equal(over.reshape(3, 128, 8)[:, :, :4], x[:, u, ::-1])
    states.clear()
    monkeypatch.setattr(runs.Fuse, "run", lambda *a: 0)
    _, one = go(4096)
    assert np.array_equal(one, out)
    each = [state_of(s) for s in states]
    assert len(fused) == len(each) > 3
    assert_same_states(fused, each)


# thread t (128 threads) stores its 4 words to buf[16 t]; after bar.sync each warp loads two x4 matrices sets with
# ldmatrix (rows from lanes 0-31: buf[16 (32 w' + lane)] for the next warp w', then 2048 bytes further, which the
# same stores filled from src 2 KB on); {between} sits between the two loads; 9 words go to out[48 (256 c + t)]
LOAD_RUN = """\
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mad.lo.u32 %r3, %r2, 256, %r1;
  mul.wide.u32 %rd3, %r3, 16;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.v4.u32 {%r20, %r21, %r22, %r23}, [%rd4];
  ld.global.v4.u32 {%r24, %r25, %r26, %r27}, [%rd4+2048];
  mov.u32 %r4, buf;
  shl.b32 %r5, %r1, 4;
  add.u32 %r6, %r4, %r5;
  st.shared.v4.u32 [%r6], {%r20, %r21, %r22, %r23};
  st.shared.v4.u32 [%r6+2048], {%r24, %r25, %r26, %r27};
  bar.sync 0;
  add.u32 %r7, %r1, 32;
  and.b32 %r7, %r7, 127;
  shl.b32 %r8, %r7, 4;
  add.u32 %r9, %r4, %r8;
  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r30, %r31, %r32, %r33}, [%r9];
{between}
  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r34, %r35, %r36, %r37}, [%r9+2048];
  mul.wide.u32 %rd5, %r3, 48;
  add.s64 %rd6, %rd2, %rd5;
  st.global.v4.u32 [%rd6], {%r30, %r31, %r32, %r33};
  st.global.v4.u32 [%rd6+16], {%r34, %r35, %r36, %r37};
  st.global.u32 [%rd6+32], %r40;
  ret;
"""


@pytest.mark.parametrize("between, fused", [("  add.u32 %r40, %r1, 7;", True),
                                            ("  add.u32 %r40, %r30, 7;", False),
                                            ("  mov.u32 %r9, %r4;\n  mov.u32 %r40, 0;", True)])
def test_a_run_of_ldmatrix_gives_the_registers_and_records_of_the_loads_one_at_a_time(states, monkeypatch,
                                                                                      between, fused):
    """Two ldmatrix.x4 with an instruction between them run as one load (ops/runs.py) unless the instruction
    between reads a register the first load writes (it must see the loaded value: the run ends there). Whichever
    way, the words are those of the loads one at a time, and of the warps one at a time, and so are every window's
    racecheck records."""
    from tcemu.ptx.ops import memory_gang, memory_ops, runs
    got_runs = []
    real = memory_gang.ldmatrix_run

    def spy(num, trans):
        run = real(num, trans)
        return lambda gang, items, B: (got_runs.append(len(items)), run(gang, items, B))[1]
    monkeypatch.setattr(memory_ops, "ldmatrix_run", spy)

    def go(**kw):
        src = np.random.default_rng(13).integers(0, 1 << 32, 4 * 256 * 2, dtype=np.uint64).astype(np.uint32)
        out = np.zeros(12 * 384, np.uint32)
        mod = ptx.load(entry(LOAD_RUN.replace("{between}", between), params=PARAMS, regs=REGS + SMEM,
                             prologue=""))
        mod.launch("k", grid=2, block=128, args=[src, out], **kw)
        return out
    out = go()
    assert (2 in got_runs) == fused
    ran = [state_of(s) for s in states]
    states.clear()
    monkeypatch.setattr(runs.Fuse, "run", lambda *a: 0)
    assert np.array_equal(go(), out) and out.any()
    one = [state_of(s) for s in states]
    assert np.array_equal(go(lockstep=False), out)
    assert len(ran) == len(one) >= 2
    assert_same_states(ran, one)


# ------------------------------------------------------------------------------------------------ predicated loads

# Triton's elementwise pattern (tutorial 01): a register set to a default, a guarded load over it, bounds by n. Thread
# g = 96 c + t of CTA c (3 warps) loads src[g] where g < n (@%p1), and src[g + 1] where g is even and below n
# (@!%p2, over 0xAAAA); odd lanes of even warps branch past a generic load of src[2 g] (the warps then run the load
# on half their lanes, a masked gang); out[4 g ..] receives the three registers
PREDICATED = """\
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r9, [n];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mad.lo.u32 %r3, %r2, 96, %r1;
  setp.lt.u32 %p1, %r3, %r9;
  and.b32 %r4, %r3, 1;
  setp.ne.u32 %p3, %r4, 0;
  or.pred %p2, %p3, !%p1;
  mul.wide.u32 %rd3, %r3, 4;
  add.s64 %rd4, %rd1, %rd3;
  mov.u32 %r10, 0;
  @%p1 ld.global.u32 %r10, [%rd4];
  mov.u32 %r11, 0xAAAA;
  @!%p2 ld.global.u32 %r11, [%rd4+4];
  mov.u32 %r12, 0x5555;
  shr.u32 %r5, %r1, 5;
  and.b32 %r5, %r5, 1;
  setp.eq.u32 %p4, %r5, 0;
  and.pred %p4, %p4, %p3;
  @%p4 bra SKIP;
  mul.wide.u32 %rd5, %r3, 8;
  add.s64 %rd6, %rd1, %rd5;
  ld.u32 %r12, [%rd6];
SKIP:
  mul.wide.u32 %rd7, %r3, 16;
  cvta.to.global.u64 %rd2, %rd2;
  add.s64 %rd8, %rd2, %rd7;
  st.global.v2.u32 [%rd8], {%r10, %r11};
  st.global.u32 [%rd8+8], %r12;
  ret;
"""


def launch_predicated(n, grid=6, body=PREDICATED, **kw):
    src = np.random.default_rng(5).integers(0, 1 << 32, 2 * 96 * grid + 2, dtype=np.uint64).astype(np.uint32)
    out = np.zeros(4 * 96 * grid, np.uint32)
    mod = ptx.load(entry(body, params=".param .u64 src, .param .u64 out, .param .u32 n", regs=REGS,
                         prologue=""))
    mod.launch("k", grid=grid, block=96, args=[src, out, np.uint32(n)], **kw)
    return src, out


def test_predicated_global_loads_of_many_ctas_run_as_one_batch(monkeypatch):
    from tcemu.ptx.ops import memory_gang
    ran = []
    real = memory_gang._global_load_lanes
    monkeypatch.setattr(memory_gang, "_global_load_lanes", lambda *a: ran.append(real(*a)) or ran[-1])
    n = 96 * 4 + 37   # CTA 4: warp 0 whole, warp 1 on 5 lanes; CTA 5 loads nothing
    src, out = launch_predicated(n)
    g = np.arange(96 * 6)
    want = np.zeros((g.size, 3), np.uint32)
    want[:, 0] = np.where(g < n, src[g], 0)
    want[:, 1] = np.where((g < n) & (g % 2 == 0), src[g + 1], 0xAAAA)
    skip = ((g % 96) // 32 % 2 == 0) & (g % 2 == 1)
    want[:, 2] = np.where(skip, 0x5555, src[np.minimum(2 * g, src.size - 1)])
    assert np.array_equal(out.reshape(-1, 4)[:, :3], want) and not out.reshape(-1, 4)[:, 3].any()
    # the @%p1 and @!%p2 loads ran through the batch (18 warps, the guard's lanes), and the masked generic one too
    assert ran.count(True) >= 3
    _, alone = launch_predicated(n, lockstep=False)
    assert np.array_equal(alone, out)


def test_a_guard_true_on_every_lane_of_the_gang_runs_the_gang_as_it_is(monkeypatch):
    # wrappers._guarded_batch: where @%p1 holds on every lane of all 18 warps (n covers the grid) the load runs on
    # the gang itself, without _ran picking the warps; the bits are those of warps run one at a time
    from tcemu.ptx import wrappers
    picked = []
    real = wrappers._ran
    monkeypatch.setattr(wrappers, "_ran", lambda gang, run, at, n: picked.append(n) or real(gang, run, at, n))
    g = np.arange(96 * 6)
    counts = {}
    for n in (96 * 6, 96 * 6 - 1):
        picked.clear()
        src, out = launch_predicated(n)
        counts[n] = len(picked)
        assert np.array_equal(out.reshape(-1, 4)[:, 0], np.where(g < n, src[g], 0))
        assert np.array_equal(launch_predicated(n, lockstep=False)[1], out)
    assert counts[96 * 6] == counts[96 * 6 - 1] - 1   # the @%p1 load alone: false on the last lane of one warp


def test_predicated_global_loads_leave_the_records_of_the_warps_one_at_a_time(states, monkeypatch):
    launch_predicated(96 * 4 + 37)
    ganged = [state_of(x) for x in states]
    states.clear()
    monkeypatch.setattr(lockstep, "GANG_OPS", False)
    launch_predicated(96 * 4 + 37)
    alone = [state_of(x) for x in states]
    shadows = [g for g in ganged if "r_key" in g]
    # records compared: src's reads, out's writes
    assert len(shadows) == 2 and shadows[0]["r_key"].any() and shadows[1]["w_key"].any()
    assert_same_states(ganged, alone)


def test_a_predicated_load_of_another_ctas_words_reads_as_the_race_it_is(monkeypatch):
    # src is out: thread g of CTA 1 loads word g, which thread g / 4 of CTA 0 stores (unordered: a race)
    body = PREDICATED.replace("  ld.param.u64 %rd1, [src];", "  ld.param.u64 %rd1, [out];")
    assert "race on global address" in same_report(lambda: launch_predicated(96 * 6, body=body), monkeypatch)


# ------------------------------------------------------------------------------------------------ one address

# A reduction's result stored from every lane (Triton's softmax and layer norm: after the butterfly shuffles each
# lane of warp w holds the warp's value and stores it to red[w]): thread t of CTA c stores v = src[4 c + w] to
# red[4 w]; after bar.sync thread t reads red[4 (t % 4)] into out[128 c + t]. {vary}: a planted bug's edit.
REDUCED = """\
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  shr.u32 %r3, %r1, 5;
  shl.b32 %r4, %r2, 2;
  add.u32 %r4, %r4, %r3;
  mul.wide.u32 %rd3, %r4, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r5, [%rd4];
{vary}
  mov.u32 %r6, buf;
  shl.b32 %r7, %r3, 2;
  add.u32 %r8, %r6, %r7;
  st.shared.u32 [%r8], %r5;
  bar.sync 0;
  and.b32 %r9, %r1, 3;
  shl.b32 %r9, %r9, 2;
  add.u32 %r10, %r6, %r9;
  ld.shared.u32 %r11, [%r10];
  shl.b32 %r12, %r2, 7;
  add.u32 %r12, %r12, %r1;
  mul.wide.u32 %rd5, %r12, 4;
  add.s64 %rd6, %rd2, %rd5;
  st.global.u32 [%rd6], %r11;
  ret;
"""


def launch_reduced(vary="", grid=3, **kw):
    src = np.random.default_rng(9).integers(0, 1 << 32, 4 * grid, dtype=np.uint64).astype(np.uint32)
    out = np.zeros(128 * grid, np.uint32)
    mod = ptx.load(entry(REDUCED.replace("{vary}", vary), params=PARAMS, regs=REGS + SMEM, prologue=""))
    mod.launch("k", grid=grid, block=128, args=[src, out], **kw)
    return src, out


def test_every_lane_storing_its_warps_value_to_one_address_runs_as_a_gang(spies):
    src, out = launch_reduced()
    t = np.arange(128)
    assert np.array_equal(out.reshape(3, 128), src.reshape(3, 4)[:, t % 4])
    assert spies["gang_write_record"] == 3   # each CTA's four warps' stores as one
    _, alone = launch_reduced(lockstep=False)
    assert np.array_equal(alone, out)


@pytest.mark.parametrize("vary", ["", "  mov.u32 %r3, 0;\n  mov.u32 %r5, 7;"])   # (every warp stores 7 to red[0])
def test_one_address_stores_leave_the_records_of_the_warps_one_at_a_time(vary, states, monkeypatch):
    launch_reduced(vary, zero_init_shared=True)   # (red[4..] unwritten in the second)
    ganged = [state_of(x) for x in states]
    states.clear()
    monkeypatch.setattr(lockstep, "GANG_OPS", False)
    launch_reduced(vary, zero_init_shared=True)
    alone = [state_of(x) for x in states]
    assert len(ganged) == len(alone) > 3 and all(g["race.w_ep"].any() for g in ganged if "written" in g)
    assert_same_states(ganged, alone)


@pytest.mark.parametrize("vary", ["  add.u32 %r5, %r5, %r1;",      # lanes of a warp store different values
                                  "  mov.u32 %r3, 0;"])            # every warp stores to red[0]
def test_one_address_stores_that_race_read_as_the_race_they_are(vary, monkeypatch):
    assert "WAW" in same_report(lambda: launch_reduced(vary), monkeypatch)
