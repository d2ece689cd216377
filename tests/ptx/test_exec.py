"""tcemu.ptx execution: divergence and reconvergence, loops, early exit, brx.idx, barriers (ids, counts, arrive,
red, exited warps, deadlock reports) and the launch API. Every expected output comes from a Python model of
the kernel written next to it."""
import re

import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.ptx.errors import Deadlock, HazardError, KernelFault, PtxError, PtxSyntaxError

from ptxkit import HEADER, entry, run

T = np.arange(32)


# ------------------------------------------------------------------------------------------------ control flow

def test_nested_divergence():
    body = """
  and.b32 %r2, %r0, 1;
  setp.ne.u32 %p1, %r2, 0;
  @!%p1 bra $L_even;
  and.b32 %r2, %r0, 2;
  setp.ne.u32 %p2, %r2, 0;
  @%p2 bra $L_odd3;
  mov.u32 %r3, 100;
  bra $L_join;
$L_odd3:
  mov.u32 %r3, 200;
  bra $L_join;
$L_even:
  setp.lt.u32 %p3, %r0, 16;
  @%p3 bra $L_low;
  mov.u32 %r3, 300;
  bra $L_join;
$L_low:
  mov.u32 %r3, 400;
$L_join:
  add.u32 %r3, %r3, %r0;
  st.global.u32 [%rd1], %r3;
  ret;
"""
    def model(t):
        if t & 1:
            d = 200 if t & 2 else 100
        else:
            d = 400 if t < 16 else 300
        return d + t
    assert list(run(body)) == [model(t) for t in T]


def test_loops_with_per_lane_trip_counts():
    # d = sum over i < t % 7 of (sum over j < i of (j + 1)), with both loops' trip counts per lane
    body = """
  rem.u32 %r2, %r0, 7;           // outer trip count
  mov.u32 %r3, 0;                // i
  mov.u32 %r4, 0;                // d
$L_outer:
  setp.ge.u32 %p1, %r3, %r2;
  @%p1 bra $L_done;
  mov.u32 %r5, 0;                // j
$L_inner:
  setp.ge.u32 %p2, %r5, %r3;
  @%p2 bra $L_inner_done;
  add.u32 %r5, %r5, 1;
  add.u32 %r4, %r4, %r5;
  bra $L_inner;
$L_inner_done:
  add.u32 %r3, %r3, 1;
  bra $L_outer;
$L_done:
  st.global.u32 [%rd1], %r4;
  ret;
"""
    model = [sum(sum(j + 1 for j in range(i)) for i in range(t % 7)) for t in T]
    assert list(run(body)) == model


def test_early_exit_of_some_lanes():
    # lanes t % 3 == 0 exit at once; lanes 1 mod 3 exit inside a divergent loop after t // 3 rounds; the rest
    # finish the loop (4 rounds) and write; the exited lanes' words stay at their initial 0xAAAA
    body = """
  rem.u32 %r2, %r0, 3;
  setp.eq.u32 %p1, %r2, 0;
  @%p1 exit;
  mov.u32 %r3, 0;
  div.u32 %r6, %r0, 3;
$L_loop:
  setp.eq.u32 %p2, %r2, 1;
  setp.eq.u32 %p3, %r3, %r6;
  and.pred %p2, %p2, %p3;
  @%p2 exit;
  add.u32 %r3, %r3, 1;
  setp.lt.u32 %p4, %r3, 4;
  @%p4 bra $L_loop;
  mul.lo.u32 %r4, %r0, %r3;
  st.global.u32 [%rd1], %r4;
  ret;
"""
    out = np.full(32, 0xAAAA, np.uint32)
    run(body, out=out)
    expect = [0xAAAA if t % 3 == 0 or (t % 3 == 1 and t // 3 < 4) else 4 * t for t in T]
    assert list(out) == expect


def test_reconvergence_before_shfl_sync():
    # a divergent if/else, then a full-mask shfl.sync.bfly: every lane must have reconverged; lane t receives
    # lane (t ^ 1)'s value, v(t) = t odd ? 3t : t + 50
    body = """
  and.b32 %r2, %r0, 1;
  setp.eq.u32 %p1, %r2, 1;
  @%p1 bra $L_odd;
  add.u32 %r3, %r0, 50;
  bra $L_join;
$L_odd:
  mul.lo.u32 %r3, %r0, 3;
$L_join:
  shfl.sync.bfly.b32 %r4, %r3, 1, 0x1f, -1;
  st.global.u32 [%rd1], %r4;
  ret;
"""
    v = np.where(T % 2 == 1, 3 * T, T + 50)
    assert np.array_equal(run(body), v[T ^ 1])


def test_reconvergence_with_the_then_block_after_the_join():
    # nvcc may place a rarely taken block after the join point and branch back; the lanes that took it meet
    # the others at the full-mask shfl.sync (sm_70+ .sync semantics: the instruction waits for every lane in
    # membermask), so lane t still receives lane (t ^ 1)'s value
    body = """
  setp.lt.u32 %p1, %r0, 8;
  @%p1 bra $L_cold;
  add.u32 %r3, %r0, 50;
$L_join:
  shfl.sync.bfly.b32 %r4, %r3, 1, 0x1f, -1;
  st.global.u32 [%rd1], %r4;
  ret;
$L_cold:
  mul.lo.u32 %r3, %r0, 3;
  bra $L_join;
"""
    v = np.where(T < 8, 3 * T, T + 50)
    assert np.array_equal(run(body), v[T ^ 1])


def test_brx_idx_divergent_targets():
    # lane t jumps to target t % 3 of the table; each target adds its own constant, then all join
    body = """
  ts: .branchtargets $L_a, $L_b, $L_c;
  rem.u32 %r2, %r0, 3;
  mov.u32 %r3, %r0;
  brx.idx %r2, ts;
$L_a:
  add.u32 %r3, %r3, 1000;
  bra $L_join;
$L_b:
  add.u32 %r3, %r3, 2000;
  bra $L_join;
$L_c:
  add.u32 %r3, %r3, 3000;
$L_join:
  st.global.u32 [%rd1], %r3;
  ret;
"""
    assert np.array_equal(run(body), T + 1000 * (T % 3 + 1))
    with pytest.raises(KernelFault) as e:   # an index past the table
        run(body.replace("rem.u32 %r2, %r0, 3;", "rem.u32 %r2, %r0, 5;"))
    assert "index 4" in str(e.value)


def test_bra_uni_taken_by_some_lanes_is_a_hazard():
    with pytest.raises(HazardError):
        run("  setp.lt.u32 %p1, %r0, 4;\n  @%p1 bra.uni $L_x;\n$L_x:\n  ret;\n")


def test_falling_off_the_end_and_trap():
    with pytest.raises(KernelFault) as e:
        run("  st.global.u32 [%rd1], %r0;\n")
    assert "without ret/exit" in str(e.value)
    with pytest.raises(KernelFault) as e:
        run("  setp.eq.u32 %p1, %r0, 5;\n  @%p1 trap;\n  ret;\n")
    assert "threads [5]" in str(e.value)


# ------------------------------------------------------------------------------------------------ barriers

def _smem_exchange(barrier: str, nthreads: int, shift: int = 1) -> str:
    """Thread t writes 7t + 1 to smem[t], runs `barrier`, reads smem[(t + shift) % nthreads]."""
    return f"""
  shl.b32 %r2, %r0, 2;
  mov.u32 %r3, smem;
  add.u32 %r4, %r3, %r2;
  mad.lo.u32 %r5, %r0, 7, 1;
  st.shared.u32 [%r4], %r5;
{barrier}
  add.u32 %r6, %r0, {shift};
  rem.u32 %r6, %r6, {nthreads};
  shl.b32 %r6, %r6, 2;
  add.u32 %r6, %r3, %r6;
  ld.shared.u32 %r7, [%r6];
  st.global.u32 [%rd1], %r7;
  ret;
"""


SMEM = ".shared .align 16 .b8 smem[4096];\n"


@pytest.mark.parametrize("barrier", ["  bar.sync 0;", "  barrier.sync 0;", "  barrier.sync.aligned 0;",
                                     "  bar.sync 3, 128;", "  mov.u32 %r8, 5;\n  mov.u32 %r9, 128;\n  "
                                                           "barrier.sync %r8, %r9;"])
def test_bar_sync_orders_shared_memory_between_warps(barrier):
    out = run(_smem_exchange(barrier, 128, 33), block=128, before=SMEM)
    t = np.arange(128)
    assert np.array_equal(out, 7 * ((t + 33) % 128) + 1)


def test_without_a_barrier_the_read_sees_unwritten_shared_memory():
    # the control for the test above. Warps one at a time (lockstep=False): warp 0 runs ahead and reads a word
    # warp 1 has not written yet; racecheck names the race (warp 1's write, unordered with the read), without it
    # the read of unwritten memory. In lock-step both warps store first: the read is the race's second access
    with pytest.raises(HazardError, match=r"WAR race on shared address 0x484 .*thread 33 \(warp 1.* writes it "
                                          r"here; thread 0 \(warp 0.*ld.shared.u32 %r7, \[%r6\] \(line 29\) read it"):
        run(_smem_exchange("", 128, 33), block=128, before=SMEM, lockstep=False)
    with pytest.raises(HazardError, match=r"ld.shared.u32 %r7, \[%r6\] \(line 29\), CTA \(0, 0, 0\), warp 0: RAW race "
                                          r"on shared address 0x484 .*thread 0 \(warp 0.* reads it here; thread 33 "
                                          r"\(warp 1, CTA \(0, 0, 0\)\) at st.shared.u32 \[%r4\], %r5 \(line 23\) wrote it"):
        run(_smem_exchange("", 128, 33), block=128, before=SMEM)
    with pytest.raises(ptx.MemoryFault) as e:
        run(_smem_exchange("", 128, 33), block=128, before=SMEM, check_races=False, lockstep=False)
    assert "nothing wrote" in str(e.value)


def test_barriers_with_ids_and_counts_from_registers():
    # warps 0-1 meet on barrier 1 (64 threads), warps 2-3 on barrier 2 (64 threads); each pair exchanges
    # through its own half of smem
    body = """
  shr.u32 %r10, %r0, 6;          // pair 0 or 1
  add.u32 %r8, %r10, 1;          // barrier id 1 or 2
  mov.u32 %r9, 64;
  shl.b32 %r2, %r0, 2;
  mov.u32 %r3, smem;
  add.u32 %r4, %r3, %r2;
  mad.lo.u32 %r5, %r0, 7, 1;
  st.shared.u32 [%r4], %r5;
  barrier.sync %r8, %r9;
  xor.b32 %r6, %r0, 32;          // the other warp of the pair
  shl.b32 %r6, %r6, 2;
  add.u32 %r6, %r3, %r6;
  ld.shared.u32 %r7, [%r6];
  st.global.u32 [%rd1], %r7;
  ret;
"""
    out = run(body, block=128, before=SMEM)
    t = np.arange(128)
    assert np.array_equal(out, 7 * (t ^ 32) + 1)


def test_bar_arrive_producer_consumer():
    # warps 0-1 consume (bar.sync 1, 128 then read), warps 2-3 produce (write then bar.arrive 1, 128); the
    # consumers reach the barrier first in the interpreter's warp order, so the data must wait for it
    body = """
  setp.lt.u32 %p1, %r0, 64;
  mov.u32 %r3, smem;
  @%p1 bra $L_consumer;
  sub.u32 %r2, %r0, 64;
  shl.b32 %r2, %r2, 2;
  add.u32 %r4, %r3, %r2;
  mad.lo.u32 %r5, %r0, 5, 3;
  st.shared.u32 [%r4], %r5;
  bar.arrive 1, 128;
  ret;
$L_consumer:
  bar.sync 1, 128;
  shl.b32 %r2, %r0, 2;
  add.u32 %r4, %r3, %r2;
  ld.shared.u32 %r7, [%r4];
  st.global.u32 [%rd1], %r7;
  ret;
"""
    out = run(body, block=128, before=SMEM)
    assert np.array_equal(out[:64], 5 * (np.arange(64) + 64) + 3) and (out[64:] == 0).all()


@pytest.mark.parametrize("form,model", [
    ("bar.red.popc.u32 %r4, 0, %p1;", lambda p: int(p.sum())),
    ("barrier.red.popc.aligned.u32 %r4, 2, 128, %p1;", lambda p: int(p.sum())),
    ("bar.red.popc.u32 %r4, 0, !%p1;", lambda p: int((~p).sum())),
    ("bar.red.and.pred %p2, 0, %p1;\n  selp.u32 %r4, 1, 0, %p2;", lambda p: int(p.all())),
    ("bar.red.or.pred %p2, 0, %p1;\n  selp.u32 %r4, 1, 0, %p2;", lambda p: int(p.any())),
])
@pytest.mark.parametrize("cut", [0, 37, 128])
def test_bar_red(form, model, cut):
    # p = t < cut over a 128-thread CTA; every thread receives the reduction over all 128
    out = run(f"  setp.lt.u32 %p1, %r0, {cut};\n  {form}\n  st.global.u32 [%rd1], %r4;\n  ret;\n", block=128)
    assert (out == model(np.arange(128) < cut)).all()


def test_exited_warps_do_not_block_a_barrier():
    # warp 3 exits at once; warps 0-2 (96 threads) complete bar.sync 0 among themselves
    body = """
  setp.ge.u32 %p1, %r0, 96;
  @%p1 exit;
""" + _smem_exchange("  bar.sync 0;", 96, 40)
    out = run(body, block=128, before=SMEM)
    t = np.arange(96)
    assert np.array_equal(out[:96], 7 * ((t + 40) % 96) + 1) and (out[96:] == 0).all()


def test_barrier_in_a_partial_warp():
    # 40 threads: warp 1 holds 8; barrier.sync counts warps' arrival (PTX 9.7.12.1), so the partial warp
    # completes the CTA-wide barrier
    for barrier in ("  bar.sync 0;", "  barrier.sync 0;"):
        out = run(_smem_exchange(barrier, 40, 9), block=40, before=SMEM)
        t = np.arange(40)
        assert np.array_equal(out, 7 * ((t + 9) % 40) + 1)
    # lanes 20-31 of both warps exit first; the rest exchange with their partner t ^ 32 across the barrier
    for barrier in ("  bar.sync 0;", "  barrier.sync 0;", "  barrier.sync 0, 64;"):
        body = "  and.b32 %r9, %r0, 31;\n  setp.ge.u32 %p9, %r9, 20;\n  @%p9 exit;\n" + \
            _smem_exchange(barrier, 64, 32)
        out = run(body, block=64, before=SMEM)
        t = np.arange(64)
        assert np.array_equal(out, np.where(t % 32 < 20, 7 * (t ^ 32) + 1, 0))


def _deadlock(text, block):
    with pytest.raises(Deadlock) as e:
        ptx.load(text).launch("k", grid=1, block=block, args=[np.zeros(block, np.uint32)])
    return str(e.value)


def test_deadlock_count_never_reached():
    text = entry("  .loc 1 30 0\n  bar.sync 1, 96;\n  ret;\n", before='.file 1 "hang.cu"\n')
    line = text.splitlines().index("  bar.sync 1, 96;") + 1
    msg = _deadlock(text, 64)
    assert f"warp 0: at bar.sync 1, 96 (line {line} (hang.cu:30)); waits on barrier 1 (64 of 96" in msg
    assert f"warp 1: at bar.sync 1, 96 (line {line} (hang.cu:30)); waits on barrier 1 (64 of 96" in msg


def test_deadlock_warp_skips_the_barrier_another_waits_on():
    # warp 1 branches around bar.sync 0 and waits on barrier 1, which nobody else reaches
    text = entry("""
  setp.ge.u32 %p1, %r0, 32;
  @%p1 bra $L_skip;
  .loc 1 10 0
  bar.sync 0;
  ret;
$L_skip:
  .loc 1 20 0
  bar.sync 1;
  ret;
""", before='.file 1 "skip.cu"\n')
    lines = text.splitlines()
    msg = _deadlock(text, 64)
    assert f"warp 0: at bar.sync 0 (line {lines.index('  bar.sync 0;') + 1} (skip.cu:10)); waits on barrier 0" in msg
    assert f"warp 1: at bar.sync 1 (line {lines.index('  bar.sync 1;') + 1} (skip.cu:20)); waits on barrier 1" in msg


def test_infinite_loop_is_reported():
    text = entry("$L_spin:\n  bra $L_spin;\n")
    with pytest.raises(Deadlock) as e:
        ptx.load(text).launch("k", grid=1, block=32, args=[np.zeros(32, np.uint32)], max_instructions=10_000)
    assert "more than 10000" in str(e.value)


@pytest.mark.parametrize("ins,words", [("mov.u32 %r2, %r0;\n  bar.sync %r2;", "same in every executing thread"),
                                       ("mov.u32 %r2, 16;\n  bar.sync %r2;", "outside 0-15"),
                                       ("mov.u32 %r2, 48;\n  bar.sync 0, %r2;", "multiple of 32")])
def test_bad_barrier_operands(ins, words):
    with pytest.raises(KernelFault) as e:
        run(f"  {ins}\n  ret;\n")
    assert words in str(e.value)


@pytest.mark.parametrize("ins,words", [("bar.sync 16;", "out of range, expected to be in range [0..15]"),
                                       ("bar.sync 0, 48;", "multiple of warp size")])
def test_bad_barrier_immediates_refused_at_compile(ins, words):  # as ptxas refuses them (tests/ptx/test_strict.py)
    with pytest.raises(PtxSyntaxError) as e:
        run(f"  {ins}\n  ret;\n")
    assert words in str(e.value)


# ------------------------------------------------------------------------------------------------ launch API

LAUNCH = HEADER + """
.visible .entry k(.param .u64 out, .param .u32 n, .param .s8 s, .param .f32 f, .param .align 8 .b8 blob[16])
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd0, [out];
  ld.param.u32 %r1, [n];
  ld.param.s8 %r2, [s];
  ld.param.u32 %r3, [f];
  ld.param.u32 %r4, [blob+4];
  st.global.v4.u32 [%rd0], {%r1, %r2, %r3, %r4};
  ret;
}
"""


def test_scalar_pointer_and_byte_parameters():
    out = np.zeros(4, np.uint32)
    blob = bytes(range(16))
    ptx.load(LAUNCH).launch("k", grid=1, block=1, args=[out, 0xFFFFFFFF, -3, 1.5, blob])
    # s8 -3 sign-extends into the 32-bit register (ld.param.s8); f32 1.5 = 0x3FC00000; blob bytes 4..7
    assert list(out) == [0xFFFFFFFF, 0xFFFFFFFD, 0x3FC00000, 0x07060504]
    out[:] = 0
    ptx.load(LAUNCH).launch("k", grid=1, block=1,
                            args={"out": out, "n": 5, "s": 127, "f": np.float32(-2.0),
                                  "blob": np.arange(16, dtype=np.uint8)})
    assert list(out) == [5, 127, 0xC0000000, 0x07060504]


@pytest.mark.parametrize("args,field", [
    ([np.zeros(4, np.uint32), 1, 1, 1.0], "args"),                              # one missing
    ([[0, 0, 0, 0], 1, 1, 1.0, bytes(16)], "out"),                             # a list is no device buffer
    ([np.zeros(4, np.uint32), -1, 1, 1.0, bytes(16)], "n"),                    # u32 range
    ([np.zeros(4, np.uint32), 1 << 32, 1, 1.0, bytes(16)], "n"),
    ([np.zeros(4, np.uint32), 1.0, 1, 1.0, bytes(16)], "n"),                   # a float for .u32
    ([np.zeros(4, np.uint32), 1, 128, 1.0, bytes(16)], "s"),                   # s8 range
    ([np.zeros(4, np.uint32), 1, True, 1.0, bytes(16)], "s"),
    ([np.zeros(4, np.uint32), 1, 1, 0.1, bytes(16)], "f"),                     # 0.1 is not an f32
    ([np.zeros(4, np.uint32), 1, 1, "1", bytes(16)], "f"),
    ([np.zeros(4, np.uint32), 1, 1, 1.0, bytes(15)], "blob"),
    ([np.zeros(4, np.uint32), 1, 1, 1.0, 7], "blob"),
])
def test_argument_errors_name_the_parameter(args, field):
    with pytest.raises(PtxError) as e:
        ptx.load(LAUNCH).launch("k", grid=1, block=1, args=args)
    assert e.value.field == field


def test_dict_arguments_missing_and_unknown():
    with pytest.raises(PtxError) as e:
        ptx.load(LAUNCH).launch("k", grid=1, block=1, args={"out": None, "n": 1, "s": 1, "f": 1.0, "blub": b""})
    assert e.value.field == "args" and "blob" in str(e.value) and "blub" in str(e.value)


def test_launch_geometry_errors():
    mod = ptx.load(entry("  ret;\n", directives=".reqntid 64"))
    out = np.zeros(64, np.uint32)
    mod.launch("k", grid=1, block=64, args=[out])
    mod.launch("k", grid=1, block=(64, 1, 1), args=[out])
    for kw, field in [(dict(block=32), "block"), (dict(block=(32, 2)), "block"), (dict(block=64, grid=0), "grid"),
                      (dict(block=64, grid=(1, 2, 3, 4)), "grid"), (dict(block=64, grid="2"), "grid"),
                      (dict(block=64, shared_bytes=227 * 1024 + 1), "shared_bytes"),
                      (dict(block=64, shared_bytes=-1), "shared_bytes"),
                      (dict(block=64, ctas=[(1,)]), "ctas"), (dict(block=64, zero_init_shared=1), "zero_init_shared")]:
        kw.setdefault("grid", 1)
        with pytest.raises(PtxError) as e:
            mod.launch("k", args=[out], **kw)
        assert e.value.field == field, kw
    with pytest.raises(PtxError) as e:
        ptx.load(entry("  ret;\n")).launch("k", grid=1, block=1025, args=[out])
    assert e.value.field == "block"
    with pytest.raises(PtxError) as e:
        mod.launch("nope", grid=1, block=64, args=[out])
    assert e.value.field == "kernel"
    # static .shared counts against the limit too
    big = ptx.load(entry("  ret;\n", before=".shared .align 16 .b8 tile[200000];\n"))
    big.launch("k", grid=1, block=1, args=[out], shared_bytes=227 * 1024 - 200000)
    with pytest.raises(PtxError) as e:
        big.launch("k", grid=1, block=1, args=[out], shared_bytes=227 * 1024 - 200000 + 16)
    assert e.value.field == "shared_bytes"


# thread (x, y, z) of CTA (cx, cy, cz) writes its ids packed in one word at its linear global index
GEOMETRY = """
  mov.u32 %r1, %tid.y;
  mov.u32 %r2, %tid.z;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ctaid.y;
  mov.u32 %r5, %ntid.x;
  mov.u32 %r6, %ntid.y;
  mov.u32 %r7, %nctaid.x;
  mad.lo.u32 %r8, %r2, %r6, %r1;       // linear thread index: (z * ny + y) * nx + x
  mad.lo.u32 %r8, %r8, %r5, %r0;
  mad.lo.u32 %r9, %r4, %r7, %r3;       // linear CTA index: cy * gx + cx
  mul.lo.u32 %r10, %r5, %r6;
  mov.u32 %r11, %ntid.z;
  mul.lo.u32 %r10, %r10, %r11;
  mad.lo.u32 %r9, %r9, %r10, %r8;
  shl.b32 %r12, %r3, 24;               // pack cx, cy, z, y, x
  shl.b32 %r13, %r4, 16;
  or.b32 %r12, %r12, %r13;
  shl.b32 %r13, %r2, 12;
  or.b32 %r12, %r12, %r13;
  shl.b32 %r13, %r1, 6;
  or.b32 %r12, %r12, %r13;
  or.b32 %r12, %r12, %r0;
  mul.wide.u32 %rd2, %r9, 4;
  add.s64 %rd2, %rd0, %rd2;
  st.global.u32 [%rd2], %r12;
  ret;
"""


def _geometry_model(grid, block, ctas=None):
    gx, gy = grid
    bx, by, bz = block
    out = np.full(gx * gy * bx * by * bz, 0xFFFFFFFF, np.uint32)
    for cy in range(gy):
        for cx in range(gx):
            if ctas is not None and (cx, cy) not in ctas:
                continue
            for z in range(bz):
                for y in range(by):
                    for x in range(bx):
                        i = (cy * gx + cx) * bx * by * bz + (z * by + y) * bx + x
                        out[i] = cx << 24 | cy << 16 | z << 12 | y << 6 | x
    return out


@pytest.mark.parametrize("grid,block", [((3, 1), (40, 1, 1)), ((2, 3), (8, 4, 2)), ((1, 2), (5, 7, 3))])
def test_grid_and_block_tuples(grid, block):
    out = np.full(int(np.prod(grid)) * int(np.prod(block)), 0xFFFFFFFF, np.uint32)
    run(GEOMETRY, out=out, grid=grid, block=block)
    assert np.array_equal(out, _geometry_model(grid, block))


def test_ctas_subset():
    out = np.full(4 * 3 * 32, 0xFFFFFFFF, np.uint32)
    run(GEOMETRY, out=out, grid=(4, 3), block=32, ctas=[(1, 2), (3, 0, 0), [0, 1]])
    assert np.array_equal(out, _geometry_model((4, 3), (32, 1, 1), {(1, 2), (3, 0), (0, 1)}))
    mod = ptx.load(entry(GEOMETRY))
    stats = mod.launch("k", grid=(4, 3), block=32, args=[out], ctas=[(1, 2)])
    assert stats["ctas"] == 1 and stats["warp_instructions"] == len(GEOMETRY.strip().splitlines()) + 5
    out[:] = 0xFFFFFFFF
    mod.launch("k", grid=(4, 3), block=32, args=[out], ctas=[2, (0,)])      # missing coordinates are 0
    assert np.array_equal(out, _geometry_model((4, 3), (32, 1, 1), {(2, 0), (0, 0)}))
    for bad in ([(-1,)], [(4, 0)], [(0, 3)], [(0, 0, 1)], [(0, 0, 0, 0)], [1.0], ["0"]):
        with pytest.raises(PtxError) as e:
            mod.launch("k", grid=(4, 3), block=32, args=[out], ctas=bad)
        assert e.value.field == "ctas"


def test_progress_bar_counts_ctas(capsys):
    out = np.full(3 * 32, 0xFFFFFFFF, np.uint32)
    run(GEOMETRY, out=out, grid=3, block=32, progress=True, lockstep=False)   # CTAs one after another
    err = capsys.readouterr().err
    assert "1/3 CTAs" in err and "2/3 CTAs" in err and "3/3 CTAs" in err and err.endswith("\n")
    run(GEOMETRY, out=out, grid=3, block=32, progress=True)   # one lock-step wave: its CTAs end together
    err = capsys.readouterr().err
    assert "0/3 CTAs" in err and "1/3 CTAs" not in err and "3/3 CTAs" in err and err.endswith("\n")
    # the last line: every CTA done, their warp instructions per second and the wall time
    last = err.rstrip("\n").split("\r")[-1]
    assert re.fullmatch(r"\[#{30}\] 3/3 CTAs [0-9.]+/s, [0-9,]+ warp instructions/s, [0-9.]+ s", last), last
    assert not last.split("CTAs ")[1].startswith("0.0/s") and ", 0 warp instructions/s" not in last
    assert np.array_equal(out, _geometry_model((3, 1), (32, 1, 1)))
