"""tcemu.ptx warp-level instructions against plain-Python statements of the PTX ISA: shfl.sync (9.7.9.6, its
pseudo-code), vote.sync (9.7.12.9), activemask (9.7.12.11), elect.sync (9.7.12.12), match.sync (9.7.12.10),
redux.sync (9.7.12.11), bar.warp.sync (9.7.12.3) and membermask rules."""
import numpy as np
import pytest

from tcemu.ptx.errors import HazardError

from ptxkit import run, s32

T = list(range(32))
VALUES = [(t * 2654435761 + 12345) & 0xFFFFFFFF for t in T]   # a[t], distinct


def shfl_model(mode, a, b, c):
    """PTX ISA shfl.sync pseudo-code, lane by lane: returns (d, p) lists. b and c per lane."""
    d, p = [], []
    for lane in T:
        bval, cval, seg = b[lane] & 31, c[lane] & 31, (c[lane] >> 8) & 31
        max_lane = (lane & seg) | (cval & ~seg & 31)
        min_lane = lane & seg
        if mode == "up":
            j = lane - bval
            pval = j >= max_lane
        elif mode == "down":
            j = lane + bval
            pval = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            pval = j <= max_lane
        else:
            j = min_lane | (bval & ~seg & 31)
            pval = j <= max_lane
        if not pval:
            j = lane
        d.append(a[j])
        p.append(int(pval))
    return d, p


SHFL = """
  mov.u32 %r1, {a};
  shfl.sync.{mode}.b32 %r2|%p1, %r1, {b}, {c}, -1;
  selp.u32 %r3, 1, 0, %p1;
  st.global.u32 [%rd1], %r2;
  st.global.u32 [%rd1+128], %r3;
  ret;
"""


def _lane_values(values):
    """PTX computing values[t] in %r1 from a 32-entry table in .global memory."""
    init = ", ".join(str(v) for v in values)
    before = f".global .align 4 .u32 table[32] = {{{init}}};\n"
    body = "  mov.u64 %rd5, table;\n  mul.wide.u32 %rd6, %r0, 4;\n  add.s64 %rd5, %rd5, %rd6;\n" \
           "  ld.global.u32 %r1, [%rd5];\n"
    return before, body


@pytest.mark.parametrize("mode,b,c", [
    ("up", 1, 0), ("up", 5, 0), ("up", 3, 0x1800), ("up", 2, 0x1C00), ("up", 33, 0), ("up", 4, 7),
    ("down", 1, 0x1F), ("down", 16, 0x1F), ("down", 3, 0x181F), ("down", 1, 0x1C1F), ("down", 2, 0x10),
    ("bfly", 1, 0x1F), ("bfly", 17, 0x1F), ("bfly", 6, 0x181F), ("bfly", 31, 0x0F), ("bfly", 2, 0x1E1F),
    ("idx", 0, 0x1F), ("idx", 13, 0x1F), ("idx", 5, 0x181F), ("idx", 7, 0x1C1F), ("idx", 20, 0x0F),
    ("idx", 45, 0x1F), ("idx", 3, 0x1F1F),
])
def test_shfl_sync_immediate_operands(mode, b, c):
    # c = ((32 - width) << 8) | clamp: CUDA's width-w shuffles; odd clamps/segments exercise maxLane
    before, load = _lane_values(VALUES)
    body = load + SHFL.format(a="%r1", mode=mode, b=b, c=c).replace("  mov.u32 %r1, %r1;\n", "")
    out = run(body, before=before, out_words=64)
    d, p = shfl_model(mode, VALUES, [b] * 32, [c] * 32)
    assert list(out[:32]) == d and list(out[32:]) == p


# b = (7t + 3) % 40 in %r5 and c = ((t % 4) * 8) << 8 | (31 - t) in %r6, for lane t in %r0
PER_LANE_BC = """
  mad.lo.u32 %r5, %r0, 7, 3;
  rem.u32 %r5, %r5, 40;
  and.b32 %r6, %r0, 3;
  shl.b32 %r6, %r6, 11;
  sub.u32 %r11, 31, %r0;
  or.b32 %r6, %r6, %r11;
"""


@pytest.mark.parametrize("mode", ["up", "down", "bfly", "idx"])
def test_shfl_sync_per_lane_b_and_c(mode):
    # b and c from registers, different in every lane: b = (7t + 3) % 40, c = ((t % 4) * 8) << 8 | (31 - t)
    before, load = _lane_values(VALUES)
    body = load + PER_LANE_BC + SHFL.format(a="%r1", mode=mode, b="%r5", c="%r6").replace("  mov.u32 %r1, %r1;\n", "")
    out = run(body, before=before, out_words=64)
    b = [(7 * t + 3) % 40 for t in T]
    c = [((t % 4) * 8) << 8 | (31 - t) for t in T]
    d, p = shfl_model(mode, VALUES, b, c)
    assert list(out[:32]) == d and list(out[32:]) == p


def test_shfl_sync_in_a_divergent_branch_with_a_partial_mask():
    # lanes 0-15 shuffle among themselves (membermask 0xFFFF) inside a branch; lanes 16-31 do not
    before, load = _lane_values(VALUES)
    body = load + """
  mov.u32 %r2, 0;
  setp.ge.u32 %p2, %r0, 16;
  @%p2 bra $L_skip;
  shfl.sync.down.b32 %r2, %r1, 3, 0x1f, 0xffff;
$L_skip:
  st.global.u32 [%rd1], %r2;
  ret;
"""
    out = run(body, before=before)
    # within the 16 members, down 3 with clamp 31: lanes 13-15 would read lanes 16-18 (not members: their
    # value is whatever the non-member register holds; PTX leaves it undefined), so check lanes 0-12 only
    assert list(out[:13]) == VALUES[3:16] and list(out[16:]) == [0] * 16


def test_vote_sync_all_any_uni_ballot():
    # p = a[t] odd; q = t < 32 (all true); r = false everywhere
    before, load = _lane_values(VALUES)
    body = load + """
  and.b32 %r2, %r1, 1;
  setp.eq.u32 %p1, %r2, 1;
  setp.lt.u32 %p2, %r0, 32;
  setp.gt.u32 %p3, %r0, 32;
  vote.sync.ballot.b32 %r3, %p1, -1;
  vote.sync.all.pred %p4, %p1, -1;
  vote.sync.any.pred %p5, %p1, -1;
  vote.sync.uni.pred %p6, %p1, -1;
  vote.sync.all.pred %p7, %p2, -1;
  vote.sync.uni.pred %p8, %p3, -1;
  vote.sync.any.pred %p9, !%p2, -1;
  vote.sync.ballot.b32 %r4, !%p1, -1;
  selp.u32 %r5, 1, 0, %p4;
  selp.u32 %r6, 2, 0, %p5;
  selp.u32 %r7, 4, 0, %p6;
  selp.u32 %r8, 8, 0, %p7;
  selp.u32 %r9, 16, 0, %p8;
  selp.u32 %r10, 32, 0, %p9;
  or.b32 %r5, %r5, %r6;
  or.b32 %r5, %r5, %r7;
  or.b32 %r5, %r5, %r8;
  or.b32 %r5, %r5, %r9;
  or.b32 %r5, %r5, %r10;
  st.global.u32 [%rd1], %r3;
  st.global.u32 [%rd1+128], %r4;
  st.global.u32 [%rd1+256], %r5;
  ret;
"""
    out = run(body, before=before, out_words=96)
    p = [v & 1 for v in VALUES]
    ballot = sum(bit << t for t, bit in enumerate(p))
    assert 0 < ballot < 0xFFFFFFFF   # the data makes p mixed, so all/uni are false and any is true
    flags = 0 * 1 + 1 * 2 + 0 * 4 + 1 * 8 + 1 * 16 + 0 * 32
    assert (out[:32] == ballot).all() and (out[32:64] == ballot ^ 0xFFFFFFFF).all() and (out[64:] == flags).all()


def test_vote_activemask_elect_in_divergent_code():
    # inside `if (t % 3 == 1)`: activemask = the branch's lanes; vote over them; elect one leader
    body = """
  rem.u32 %r2, %r0, 3;
  setp.ne.u32 %p1, %r2, 1;
  mov.u32 %r3, 0;
  mov.u32 %r4, 0;
  mov.u32 %r5, 0;
  mov.u32 %r6, 99;
  mov.u32 %r7, 0;
  @%p1 bra $L_out;
  activemask.b32 %r3;
  setp.lt.u32 %p2, %r0, 20;
  vote.sync.ballot.b32 %r4, %p2, %r3;
  vote.sync.all.pred %p3, %p2, %r3;
  selp.u32 %r5, 1, 0, %p3;
  elect.sync %r6|%p4, %r3;
  selp.u32 %r7, 1, 0, %p4;
$L_out:
  st.global.u32 [%rd1], %r3;
  st.global.u32 [%rd1+128], %r4;
  st.global.u32 [%rd1+256], %r5;
  st.global.u32 [%rd1+384], %r6;
  st.global.u32 [%rd1+512], %r7;
  ret;
"""
    out = run(body, out_words=160).reshape(5, 32)
    members = [t for t in T if t % 3 == 1]
    mask = sum(1 << t for t in members)
    ballot = sum(1 << t for t in members if t < 20)
    inside = np.array([t % 3 == 1 for t in T])
    assert list(out[0]) == [mask if i else 0 for i in inside]
    assert list(out[1]) == [ballot if i else 0 for i in inside]
    assert (out[2] == 0).all()                         # not every member has t < 20
    # elect.sync: every member receives the same leader lane, a member; only the leader's predicate is set
    leaders = set(out[3][inside].tolist())
    assert len(leaders) == 1 and leaders <= set(members) and (out[3][~inside] == 99).all()
    assert out[4].sum() == 1 and out[4][leaders.pop()] == 1


def test_activemask_after_some_lanes_exited():
    out = run("  setp.lt.u32 %p1, %r0, 5;\n  @%p1 exit;\n  activemask.b32 %r2;\n  st.global.u32 [%rd1], %r2;\n"
              "  ret;\n")
    assert list(out) == [0] * 5 + [0xFFFFFFE0] * 27


@pytest.mark.parametrize("wide", [False, True])
def test_match_sync_any_and_all(wide):
    # values v(t) = t % 5 (and a constant); match.any gives each lane the mask of lanes with its value
    t = "b64" if wide else "b32"
    cvt = "  cvt.u64.u32 %rd10, %r2;\n  cvt.u64.u32 %rd11, %r8;\n" if wide else ""
    src, same = ("%rd10", "%rd11") if wide else ("%r2", "%r8")
    body = f"""
  rem.u32 %r2, %r0, 5;
  mov.u32 %r8, 77;
{cvt}  match.any.sync.{t} %r3, {src}, -1;
  match.all.sync.{t} %r4|%p1, {src}, -1;
  match.all.sync.{t} %r5|%p2, {same}, -1;
  selp.u32 %r6, 1, 0, %p1;
  selp.u32 %r7, 1, 0, %p2;
  st.global.u32 [%rd1], %r3;
  st.global.u32 [%rd1+128], %r4;
  st.global.u32 [%rd1+256], %r6;
  st.global.u32 [%rd1+384], %r5;
  st.global.u32 [%rd1+512], %r7;
  ret;
"""
    out = run(body, out_words=160).reshape(5, 32)
    assert list(out[0]) == [sum(1 << u for u in T if u % 5 == x % 5) for x in T]
    assert (out[1] == 0).all() and (out[2] == 0).all()
    assert (out[3] == 0xFFFFFFFF).all() and (out[4] == 1).all()


REDUX = [
    ("add", "u32", lambda v: sum(v) & 0xFFFFFFFF),
    ("add", "s32", lambda v: sum(v) & 0xFFFFFFFF),
    ("min", "u32", min), ("max", "u32", max),
    ("min", "s32", lambda v: min(v, key=s32)), ("max", "s32", lambda v: max(v, key=s32)),
    ("and", "b32", lambda v: np.bitwise_and.reduce(np.array(v, np.uint64)).item()),
    ("or", "b32", lambda v: np.bitwise_or.reduce(np.array(v, np.uint64)).item()),
    ("xor", "b32", lambda v: np.bitwise_xor.reduce(np.array(v, np.uint64)).item()),
]


@pytest.mark.parametrize("op,typ,model", REDUX)
def test_redux_sync(op, typ, model):
    before, load = _lane_values(VALUES)
    out = run(load + f"  redux.sync.{op}.{typ} %r2, %r1, -1;\n  st.global.u32 [%rd1], %r2;\n  ret;\n",
              before=before)
    assert (out == model(VALUES)).all()


def test_redux_sync_partial_membermask():
    # lanes 8-23 reduce among themselves in a branch; min over signed values
    before, load = _lane_values(VALUES)
    body = load + """
  mov.u32 %r2, 0;
  setp.lt.u32 %p1, %r0, 8;
  setp.ge.u32 %p2, %r0, 24;
  or.pred %p1, %p1, %p2;
  @%p1 bra $L_out;
  redux.sync.min.s32 %r2, %r1, 0x00ffff00;
$L_out:
  st.global.u32 [%rd1], %r2;
  ret;
"""
    out = run(body, before=before)
    want = min(VALUES[8:24], key=s32)
    assert list(out) == [0] * 8 + [want] * 16 + [0] * 8


def test_syncwarp_and_warp_collectives_after_lanes_exited():
    # PTX: .sync instructions wait for the non-exited lanes of membermask; lanes 0-3 exit first, the rest
    # run a full-mask __syncwarp, shuffle and ballot
    body = """
  setp.lt.u32 %p1, %r0, 4;
  @%p1 exit;
  bar.warp.sync -1;
  setp.ge.u32 %p2, %r0, 10;
  vote.sync.ballot.b32 %r2, %p2, -1;
  shfl.sync.idx.b32 %r3, %r0, 31, 0x1f, -1;
  add.u32 %r2, %r2, %r3;
  st.global.u32 [%rd1], %r2;
  ret;
"""
    out = run(body)
    assert list(out) == [0] * 4 + [(0xFFFFFFFF & ~0x3FF) + 31] * 28


def test_lane_outside_membermask_is_a_hazard():
    with pytest.raises(HazardError) as e:
        run("  shfl.sync.bfly.b32 %r2, %r0, 1, 0x1f, 0xffff;\n  ret;\n")
    assert "not in membermask 0x0000ffff" in str(e.value)


def test_member_lane_that_never_arrives_is_a_hazard():
    # lane 31 waits at its own __syncwarp while lanes 0-30 run a full-mask vote naming it
    body = """
  setp.eq.u32 %p1, %r0, 31;
  @%p1 bra $L_other;
  vote.sync.any.pred %p2, %p1, -1;
  ret;
$L_other:
  bar.warp.sync 0x80000000;
  ret;
"""
    with pytest.raises(HazardError) as e:
        run(body)
    assert "names lanes [31] that did not reach" in str(e.value)


def test_membermasks_must_split_the_lanes_into_groups():
    # lane 0 names 0xfffffffe (not itself): an error; lanes 0-15 naming 0xffff and lanes 16-31 all 32: overlapping
    with pytest.raises(HazardError, match="lane 0 executes it but is not in its own membermask 0xfffffffe"):
        run("  or.b32 %r2, %r0, 0xfffffffe;\n  vote.sync.any.pred %p1, %p1, %r2;\n  ret;\n")
    body = """  setp.lt.u32 %p2, %r0, 16;
  selp.b32 %r2, 0xffff, 0xffffffff, %p2;
  vote.sync.any.pred %p1, %p1, %r2;
  ret;
"""
    with pytest.raises(HazardError, match=r"membermask must be the same in every thread of a group: lane 16 names "
                                          r"lane 0 with 0xffffffff, lane 0 gives 0x0000ffff"):
        run(body)


def test_tiles_of_16_with_their_own_membermasks():
    # cooperative groups' thread_block_tile<16>: lanes 0-15 name 0x0000ffff, lanes 16-31 0xffff0000, in one
    # instruction; each half acts as its own warp (shfl within the tile, ballot, redux, match, elect per tile)
    before, load = _lane_values(VALUES)
    body = load + """
  setp.lt.u32 %p2, %r0, 16;
  selp.b32 %r9, 0xffff, 0xffff0000, %p2;
  shfl.sync.down.b32 %r2, %r1, 3, 0x101f, %r9;
  and.b32 %r3, %r1, 1;
  setp.eq.u32 %p3, %r3, 1;
  vote.sync.ballot.b32 %r4, %p3, %r9;
  redux.sync.add.u32 %r5, %r0, %r9;
  and.b32 %r6, %r0, 3;
  match.any.sync.b32 %r7, %r6, %r9;
  elect.sync %r8|%p4, %r9;
  st.global.u32 [%rd1], %r2;
  st.global.u32 [%rd1+128], %r4;
  st.global.u32 [%rd1+256], %r5;
  st.global.u32 [%rd1+384], %r7;
  st.global.u32 [%rd1+512], %r8;
  ret;
"""
    out = run(body, before=before, out_words=160)
    tile = [t // 16 for t in T]
    shfl = [VALUES[t + 3] if t % 16 + 3 < 16 else VALUES[t] for t in T]   # c = 0x101f: segments of 16 lanes
    ballot = [sum(1 << j for j in T if tile[j] == tile[t] and VALUES[j] & 1) for t in T]
    redux = [sum(j for j in T if tile[j] == tile[t]) for t in T]
    match = [sum(1 << j for j in T if tile[j] == tile[t] and j % 4 == t % 4) for t in T]
    elect = [16 * tile[t] for t in T]
    assert [list(out[k * 32:(k + 1) * 32]) for k in range(5)] == [shfl, ballot, redux, match, elect]


def test_lane_special_registers():
    # PTX 10.3, 10.18-10.22: %laneid, %lanemask_{eq,le,lt,ge,gt}; %warpid / %nwarpid / %dynamic_smem_size of a
    # 96-thread CTA launched with 48 bytes of dynamic shared memory
    body = """
  mov.u32 %r2, %laneid;
  mov.u32 %r3, %lanemask_eq;
  mov.u32 %r4, %lanemask_le;
  mov.u32 %r5, %lanemask_lt;
  mov.u32 %r6, %lanemask_ge;
  mov.u32 %r7, %lanemask_gt;
  mov.u32 %r8, %nwarpid;
  mov.u32 %r9, %dynamic_smem_size;
  mul.wide.u32 %rd2, %r0, 32;
  add.s64 %rd2, %rd0, %rd2;
  st.global.v4.u32 [%rd2], {%r2, %r3, %r4, %r5};
  st.global.v4.u32 [%rd2+16], {%r6, %r7, %r8, %r9};
  ret;
"""
    out = run(body, block=96, out_words=96 * 8, shared_bytes=48).reshape(96, 8)
    for t in range(96):
        lane = t % 32
        lt, le = (1 << lane) - 1, (1 << (lane + 1)) - 1
        assert list(out[t]) == [lane, 1 << lane, le, lt, ~lt & 0xFFFFFFFF, ~le & 0xFFFFFFFF, 3, 48]


# the gang tests' epilogue: %r2 to out[g], %r3 to out[256 + g] (global thread g in %r7)
STORE_R2_R3 = """\
  mul.wide.u32 %rd6, %r7, 4;
  add.s64 %rd7, %rd0, %rd6;
  st.global.u32 [%rd7], %r2;
  st.global.u32 [%rd7+1024], %r3;
  ret;
"""


def gang_steps(monkeypatch):
    """(opcode, warps) of every non-private step lockstep._step runs for a gang."""
    from tcemu.ptx import lockstep
    calls = []
    real = lockstep._step

    def spy(g, pc, masks, log):
        calls.append((g[0].prog.instrs[pc].opcode, len(g)))
        return real(g, pc, masks, log)
    monkeypatch.setattr(lockstep, "_step", spy)
    return calls


@pytest.mark.parametrize("mode", ["up", "down", "bfly", "idx"])
def test_shfl_sync_of_a_gang_of_whole_warps_is_one_batch(mode, monkeypatch):
    # 8 warps (2 CTAs x 4) shuffle a[g] = table[lane] xor 0x9e3779b9 * warp, per-lane b and c: the gang version
    # runs once for all of them, with the bits of each warp's own run (and of lockstep=False)
    before, load = _lane_values(VALUES)
    body = """
  and.b32 %r0, %r0, 31;
""" + load.replace("mul.wide.u32 %rd6, %r0, 4", "mul.wide.u32 %rd6, %r0, 4") + """
  mov.u32 %r9, %ctaid.x;
  mov.u32 %r8, %tid.x;
  mad.lo.u32 %r7, %r9, 128, %r8;        // global thread g
  shr.u32 %r10, %r7, 5;                 // global warp
  mul.lo.u32 %r10, %r10, -1640531527;
  xor.b32 %r1, %r1, %r10;
""" + PER_LANE_BC + """  shfl.sync.MODE.b32 %r2|%p1, %r1, %r5, %r6, -1;
  selp.u32 %r3, 1, 0, %p1;
""".replace("MODE", mode) + STORE_R2_R3
    calls = gang_steps(monkeypatch)
    out = run(body, before=before, grid=2, block=128, out_words=512)
    assert (f"shfl.sync.{mode}.b32", 8) in calls
    b = [(7 * t + 3) % 40 for t in T]
    c = [((t % 4) * 8) << 8 | (31 - t) for t in T]
    for w in range(8):
        a = [v ^ ((w * 0x9E3779B9) & 0xFFFFFFFF) for v in VALUES]
        d, p = shfl_model(mode, a, b, c)
        assert list(out[32 * w:32 * w + 32]) == d and list(out[256 + 32 * w:256 + 32 * w + 32]) == p
    assert np.array_equal(run(body, before=before, grid=2, block=128, out_words=512, lockstep=False), out)


@pytest.mark.parametrize("form", ["vote.sync.ballot.b32 %r2, %p1, -1", "vote.sync.all.pred %p2, %p1, -1",
                                  "vote.sync.any.pred %p2, !%p1, -1", "vote.sync.uni.pred %p2, %p1, -1",
                                  "elect.sync %r2|%p2, -1"])
def test_votes_and_elect_of_a_gang_of_whole_warps_are_one_batch(form, monkeypatch):
    # 8 warps (2 CTAs x 4), p = bit (warp % 4) of lane ^ warp: every warp its own ballot; whole warps with the full
    # membermask run the gang version once, with the bits of lockstep=False
    body = """
  mov.u32 %r9, %ctaid.x;
  mad.lo.u32 %r7, %r9, 128, %r0;        // global thread g
  shr.u32 %r10, %r7, 5;                 // global warp w
  and.b32 %r11, %r7, 31;
  xor.b32 %r12, %r11, %r10;
  and.b32 %r13, %r10, 3;
  shr.u32 %r12, %r12, %r13;
  and.b32 %r12, %r12, 1;
  setp.eq.u32 %p1, %r12, 1;
  mov.u32 %r2, 77;
  setp.ne.u32 %p2, %r2, %r2;
  FORM;
  selp.u32 %r3, 1, 0, %p2;
""".replace("FORM", form) + STORE_R2_R3
    calls = gang_steps(monkeypatch)
    out = run(body, grid=2, block=128, out_words=512)
    assert (form.split()[0], 8) in calls
    for w in range(8):
        p = [((lane ^ w) >> (w % 4)) & 1 == 1 for lane in T]
        r, q = out[32 * w:32 * w + 32].tolist(), out[256 + 32 * w:256 + 32 * w + 32].tolist()
        if "ballot" in form:
            assert r == [sum(1 << lane for lane in T if p[lane])] * 32 and q == [0] * 32
        elif "elect" in form:
            assert r == [0] * 32 and q == [1] + [0] * 31
        else:
            want = all(p) if ".all" in form else (not all(p)) if ".any" in form else (all(p) or not any(p))
            assert r == [77] * 32 and q == [int(want)] * 32
    assert np.array_equal(run(body, grid=2, block=128, out_words=512, lockstep=False), out)


@pytest.mark.parametrize("op,typ,model", REDUX)
def test_redux_sync_of_a_gang_of_whole_warps_is_one_batch(op, typ, model, monkeypatch):
    # 8 warps (2 CTAs x 4) reduce a[g] = table[lane] xor 0x9e3779b9 * warp: one gang step, each warp its own value
    before, load = _lane_values(VALUES)
    body = "  and.b32 %r0, %r0, 31;\n" + load + f"""
  mov.u32 %r9, %ctaid.x;
  mov.u32 %r8, %tid.x;
  mad.lo.u32 %r7, %r9, 128, %r8;
  shr.u32 %r10, %r7, 5;
  mul.lo.u32 %r10, %r10, -1640531527;
  xor.b32 %r1, %r1, %r10;
  redux.sync.{op}.{typ} %r2, %r1, -1;
  mov.u32 %r3, 0;
""" + STORE_R2_R3
    calls = gang_steps(monkeypatch)
    out = run(body, before=before, grid=2, block=128, out_words=512)
    assert (f"redux.sync.{op}.{typ}", 8) in calls
    for w in range(8):
        want = model([v ^ ((w * 0x9E3779B9) & 0xFFFFFFFF) for v in VALUES])
        assert out[32 * w:32 * w + 32].tolist() == [want] * 32
    assert np.array_equal(run(body, before=before, grid=2, block=128, out_words=512, lockstep=False), out)



LOWEST = """.version 8.3
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{
 .reg .b32 %r<6>; .reg .b64 %rd<4>; .reg .pred %p<3>;
 ld.param.u64 %rd1, [out]; cvta.to.global.u64 %rd1, %rd1;
 mov.u32 %r1, %tid.x; and.b32 %r1, %r1, 31;
 mov.u32 %r2, 0;
 setp.ne.u32 %p1, %r1, LANE;
 @%p1 bra SKIP;
 mov.u32 %r3, 0;
LOOP:
 add.u32 %r2, %r2, %r3;
 add.u32 %r3, %r3, 1;
 setp.lt.u32 %p2, %r3, 10;
 @%p2 bra LOOP;
SKIP:
 add.u32 %r2, %r2, %r1;
 mov.u32 %r4, %tid.x; mul.wide.u32 %rd2, %r4, 4; add.s64 %rd3, %rd1, %rd2;
 st.global.u32 [%rd3], %r2;
 ret;
}
"""


@pytest.mark.parametrize("lane", [0, 17])
@pytest.mark.parametrize("lockstep", [True, False])
def test_a_diverged_warps_lowest_lanes_run_on_until_the_others_pc(lane, lockstep):
    """One lane loops while the warp's other lanes wait at the join: the loop runs on that lane alone (machine.Warp.run
    and lockstep.run_lowest without asking every lane each step) and joins the others there, not past it: 7
    instructions converged, 41 on the one lane, 6 converged again, per warp (past the join alone: 6 more)."""
    import tcemu.ptx as tp
    mod = tp.load(LOWEST.replace("LANE", str(lane)))
    outs, counts = [], []
    for trace in (None, lambda *a: None):   # a trace runs every step through step_of / lanes_moved
        out = np.zeros(64, np.uint32)
        counts.append(mod.launch("k", grid=1, block=64, args=[out], trace=trace, lockstep=lockstep)
                      ["warp_instructions"])
        outs.append(out)
    want = np.arange(64, dtype=np.uint32) % 32
    want[[lane, 32 + lane]] += 45
    assert np.array_equal(outs[0], want) and np.array_equal(outs[1], want)
    assert counts == [2 * (7 + 41 + 6)] * 2
