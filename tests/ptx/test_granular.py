"""Racecheck records per 16-byte granule (tcemu/ptx/granular.py): the coarse plane answers whole-granule accesses,
the first partial access gives a granule per-byte records, and every answer is the one per-byte records give:
a random history against a per-byte model, and races between accesses of different widths reported at the
exact byte."""
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tcemu.ptx as ptx
from tcemu.ptx import granular, graces
from tcemu.ptx.errors import HazardError
from tcemu.ptx.granular import Granular, byte_mask, whole_granules
from tcemu.ptx.races import M32, _any_unordered, _lane_masks, _release_join, _unordered_writer

from ptxkit import HEADER, run, two_cta_kernel

FIELDS = {"a": (-1, False), "b": (0, False), "R": (0, True)}


def test_whole_granules_takes_rows_of_whole_aligned_granules_only():
    assert whole_granules(np.array([32, 64])[:, None] + np.arange(16)).tolist() == [[2], [4]]
    assert whole_granules(np.array([32])[:, None] + np.arange(32)).tolist() == [[2, 3]]
    # a TMA box row whose 16-byte chunks a swizzle permuted: granules in the row's order
    box = np.concatenate([48 + np.arange(16), 16 + np.arange(16)])[None, :]
    assert whole_granules(box).tolist() == [[3, 1]]
    assert whole_granules(np.array([8])[:, None] + np.arange(16)) is None     # not aligned
    assert whole_granules(np.array([0])[:, None] + np.arange(4)) is None      # part of a granule
    bad = box.copy()
    bad[0, 20] = 99                                                           # a chunk not contiguous
    assert whole_granules(bad) is None


def test_a_partial_access_gives_its_granules_the_records_of_their_bytes():
    g = Granular(64, FIELDS, rows=2)
    P, ix = g.at(np.array([0, 16])[:, None] + np.arange(16))
    assert P is g.coarse and ix.tolist() == [[0], [1]]
    P.a[ix] = np.array([[5], [6]])
    P.R[1, ix] = 9
    P, ix = g.at(np.array([20])[:, None] + np.arange(4))     # bytes 20..23 of granule 1
    assert P is g.fine and g.is_fine.tolist() == [False, True, False, False]
    assert P.a[16:32].tolist() == [6] * 16 and P.R[1, 16:32].tolist() == [9] * 16
    P.a[ix] = 7
    g.add_row()
    want = np.full(64, -1)
    want[:16], want[16:32], want[20:24] = 5, 6, 7
    assert g.bytes("a").tolist() == want.tolist()
    assert g.bytes("R").shape == (3, 64) and g.bytes("R")[1, :32].tolist() == [9] * 32
    # a whole-granule access touching the fine granule is answered per byte; one not touching it stays coarse
    assert g.at(np.array([16])[:, None] + np.arange(16))[0] is g.fine
    assert g.at(np.array([32])[:, None] + np.arange(16))[0] is g.coarse


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 15), st.sampled_from([1, 2, 4, 8, 16, 32]), st.integers(0, 1000),
                          st.booleans()), min_size=1, max_size=25), st.sampled_from([1, 2, 4, 8, 16]), st.booleans())
def test_any_history_reads_back_as_per_byte_records(history, unit, sparse):
    size = 256
    g = Granular(size, FIELDS, rows=1, unit=unit, sparse=sparse)
    ref = {"a": np.full(size, -1, np.int64), "R": np.zeros((1, size), np.int64)}
    for slot, width, value, reader in history:
        start = (slot * 16) % size // width * width               # aligned to its width
        spots = np.array([start])[:, None] + np.arange(width)
        if spots.max() >= size:
            continue
        P, ix = g.at(spots)
        before = P.R[0, ix] if reader else P.a[ix]
        assert np.array_equal(np.broadcast_to(before, ix.shape).reshape(-1) if P is g.fine else
                              np.repeat(before.reshape(-1), unit),
                              (ref["R"][0] if reader else ref["a"])[spots].reshape(-1))
        if reader:
            P.R[0, ix] = value
            ref["R"][0, spots] = value
        else:
            P.a[ix] = value
            ref["a"][spots] = value
    assert np.array_equal(g.bytes("a"), ref["a"]) and np.array_equal(g.bytes("R"), ref["R"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 15), st.sampled_from([1, 2, 4, 8, 16, 32]), st.integers(0, 1000),
                          st.sampled_from(["read", "write", "kept"]), st.integers(0, (1 << 16) - 1)),
                min_size=1, max_size=25), st.sampled_from([1, 2, 4, 8, 16]), st.booleans())
def test_kept_bytes_read_back_as_per_byte_records(history, unit, sparse):
    """A store that leaves some bytes as they were (Granular.write_kept, GShadow's writer fields): where it meets
    units with no record it keeps them coarse with a mask of unchanged bytes, else the caller writes per byte;
    either way every later access and bytes() read the per-byte model's records."""
    size = 256
    g = Granular(size, FIELDS, rows=1, unit=unit, sparse=sparse, kept=("a", "b"))
    ref = {"a": np.full(size, -1, np.int64), "b": np.zeros(size, np.int64), "R": np.zeros((1, size), np.int64)}
    took = 0
    for slot, width, value, kind, bits in history:
        start = (slot * 16) % size // width * width
        spots = np.array([start])[:, None] + np.arange(width)
        if spots.max() >= size:
            continue
        if kind == "kept" and width >= unit:   # rows of whole units: bit j of `bits` says byte j changes
            changed = (bits >> np.arange(width)) & 1 == 1
            units = spots[:, ::unit].reshape(-1) >> (unit.bit_length() - 1)
            n = units.size
            if g.write_kept(units, changed.reshape(n, unit), {"a": np.full(n, value), "b": np.full(n, value + 1)}):
                took += 1
            else:   # what graces._note_writes does then: the changed bytes per byte
                P, ix = g.at(spots, fine=True)
                P.a[ix] = np.where(changed, value, P.a[ix])
                P.b[ix] = np.where(changed, value + 1, P.b[ix])
            ref["a"][spots[0][changed]] = value
            ref["b"][spots[0][changed]] = value + 1
            continue
        P, ix = g.at(spots)
        for name in ("a", "b", "R"):
            got = P.R[0, ix] if name == "R" else getattr(P, name)[ix]
            want = (ref["R"][0] if name == "R" else ref[name])[spots].reshape(-1)
            assert np.array_equal(np.broadcast_to(got, ix.shape).reshape(-1) if P is g.fine else
                                  np.repeat(got.reshape(-1), unit), want)
        if kind == "read":
            P.R[0, ix] = value
            ref["R"][0, spots] = value
        else:
            P.a[ix], P.b[ix] = value, value + 1
            ref["a"][spots], ref["b"][spots] = value, value + 1
    for name in ("a", "b", "R"):
        assert np.array_equal(g.bytes(name), ref[name])


def test_an_output_written_once_over_zeros_keeps_no_per_byte_records():
    """Every word of a zeroed output stored once, each word with bytes that stay zero: the records stay per word
    (GShadow's kept bytes), where they had been per byte (4 x 8 bytes of records per output byte); a later read of
    one word by another CTA still sees its writer, per byte."""
    mod = ptx.load(two_cta_kernel("""\
  @!%p1 bra $READ;
  or.b32 %r4, %r1, 256;                 // tid | 0x100: bytes 2 and 3 stay zero (byte 0 too for thread 0)
  st.global.u32 [%rd1], %r4;            // CTA 0 stores data[tid]
  ret;
$READ:
  ld.global.u32 %r5, [%rd3+4];          // CTA 1 reads data[1]: unordered after CTA 0's store
  st.global.u32 [%rd1+256], %r5;
"""))
    out = np.zeros(128, np.uint32)
    shadows = []
    real = graces.GShadow.__init__

    def spy(self, *a, **k):
        real(self, *a, **k)
        shadows.append(self)
    try:
        graces.GShadow.__init__ = spy
        mod.launch("k", grid=1, block=64, args=[out, np.zeros(1, np.uint32)])   # CTA 0 only: words kept coarse
        assert shadows[-1].fine is None and shadows[-1].keep[:64].tolist() == [0b1101] + [0b1100] * 63
        assert out[:64].tolist() == [t | 256 for t in range(64)]
        with pytest.raises(HazardError, match=r"RAW race on global address 0x[0-9a-f]+04 \(4 bytes into 'data'\): "
                                              r"thread 0 \(warp 0, CTA \(1, 0, 0\)\) reads it here; thread 1 "
                                              r"\(warp 0, CTA \(0, 0, 0\)\) at st.global.u32"):
            mod.launch("k", grid=2, block=64, args=[np.zeros(128, np.uint32), np.zeros(1, np.uint32)],
                       lockstep=False)
        assert shadows[-1].fine is not None   # the read made data[1]'s word per byte
    finally:
        graces.GShadow.__init__ = real


# -------------------------------------------------------------------------- races between access widths

SMEM = ".shared .align 16 .b8 smem[1024];\n"
HEAD = """\
  mov.u32 %r3, smem;
  setp.lt.u32 %p1, %r0, 32;       // warp 0
  setp.eq.u32 %p2, %r0, 32;       // thread 32 (warp 1)
  shl.b32 %r2, %r0, 4;
  add.u32 %r4, %r3, %r2;          // &smem[16 tid]
"""


def go(body, sync=""):
    return run(HEAD + body.replace("{sync}", sync) + "  st.global.u32 [%rd1], %r5;\n  ret;\n", block=64,
               before=SMEM, zero_init_shared=True)


def test_a_word_read_of_a_granule_another_warp_wrote_whole_is_reported_at_the_word():
    body = """\
  @%p1 st.shared.v4.u32 [%r4], {%r0, %r0, %r0, %r0};   // warp 0 writes granules 0..31 whole
{sync}
  mov.u32 %r5, 0;
  @%p2 ld.shared.u32 %r5, [%r3+52];                     // thread 32 reads bytes 52..55 (granule 3)
"""
    with pytest.raises(HazardError, match=r"RAW race on shared address 0x434 .*thread 32 \(warp 1.* reads it here; "
                                          r"thread 3 \(warp 0.* st.shared.v4.u32"):
        go(body)
    assert go(body, "  bar.sync 0;")[32] == 3


def test_a_granule_read_whole_after_another_warp_wrote_one_word_is_reported_at_that_word():
    body = """\
  @%p2 st.shared.u32 [%r3+72], 9;                       // thread 32 writes bytes 72..75 (granule 4)
{sync}
  mov.u32 %r5, 0;
  setp.lt.u32 %p3, %r0, 8;
  @%p3 ld.shared.v4.u32 {%r5, %r6, %r7, %r8}, [%r4];    // threads 0..7 read granules 0..7 whole
  add.u32 %r5, %r5, %r7;
"""
    with pytest.raises(HazardError, match=r"RAW race on shared address 0x448 .*thread 4 \(warp 0.* reads it here; "
                                          r"thread 32 \(warp 1.* st.shared.u32 \[%r3\+72\], 9"):
        go(body)
    out = go(body, "  bar.sync 0;")
    assert out[4] == 9 and out[:4].tolist() == [0, 0, 0, 0]


GLOBAL = """\
.version 8.3
.target sm_90
.address_size 64
.visible .entry k(.param .u64 data)
{{
 .reg .b32 %r<16>; .reg .b64 %rd<8>; .reg .pred %p<4>;
 ld.param.u64 %rd3, [data]; cvta.to.global.u64 %rd3, %rd3;
 mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x;
 setp.eq.u32 %p1, %r2, 0;
 mul.wide.u32 %rd4, %r1, 16;
 add.s64 %rd1, %rd3, %rd4;
 add.u32 %r3, %r1, 1;
 @%p1 st.global.v4.u32 [%rd1], {{%r3, %r3, %r3, %r3}};   // CTA 0 writes 16 bytes a thread
 @!%p1 ld.global.u32 %r4, [%rd3+{off}];                  // CTA 1 reads one word
 @!%p1 st.global.u32 [%rd3+{off}], %r4;
 ret;
}}
"""


def test_global_word_after_another_ctas_whole_granule_store_is_reported_at_the_word():
    data = np.zeros(128, np.uint32)
    with pytest.raises(HazardError, match=r"RAW race on global address 0x[0-9a-f]+ \(100 bytes into 'data'\)"):
        ptx.load(GLOBAL.format(off=100)).launch("k", grid=2, block=8, args=[data])


def test_the_report_names_the_writer_of_the_first_racing_byte_not_of_the_first_byte_read():
    # CTA 1's lane 0 reads a word nobody wrote, lane 1 the word at byte 100 that CTA 0's thread 6 stored
    body = GLOBAL.replace("@!%p1 ld.global.u32 %r4, [%rd3+{off}];", """setp.eq.u32 %p2, %r1, 0;
 selp.b64 %rd5, 400, 100, %p2;
 add.s64 %rd6, %rd3, %rd5;
 @!%p1 ld.global.u32 %r4, [%rd6];""").replace("@!%p1 st.global.u32 [%rd3+{off}], %r4;", "")
    with pytest.raises(HazardError, match=r"RAW race on global address 0x[0-9a-f]+ \(100 bytes into 'data'\): "
                                          r"thread 1 .*; thread 6 \(warp 0, CTA \(0, 0, 0\)\) at @%p1 st\.global"):
        ptx.load(body.format()).launch("k", grid=2, block=8, args=[np.zeros(128, np.uint32)])


KEEP = GLOBAL.replace(" add.u32 %r3, %r1, 1;\n", """ add.u32 %r3, %r1, 1;
 mul.lo.u32 %r3, %r3, 16843009;          // every byte t + 1
 setp.eq.u32 %p2, %r1, 2;
 @%p2 and.b32 %r3, %r3, -256;            // thread 2: byte 32 stays 0, as it was
""").replace(
    "@!%p1 ld.global.u32 %r4, [%rd3+{off}];                  // CTA 1 reads one word",
    "@!%p1 ld.global.u8 %r4, [%rd3+{off}];                   // CTA 1 reads one byte").replace(
    " @!%p1 st.global.u32 [%rd3+{off}], %r4;\n", "")


def test_a_store_whose_lane_leaves_a_byte_as_it_was_makes_only_that_lanes_granule_per_byte(monkeypatch):
    made = []
    real = graces.GShadow.__init__

    def spy(self, size, unit=16):
        real(self, size, unit)
        made.append(self)
    monkeypatch.setattr(graces.GShadow, "__init__", spy)
    monkeypatch.setattr(graces, "global_unit", lambda prog: 16)   # granules, though the kernel reads a byte
    data = np.zeros(64, np.uint32)
    ptx.load(KEEP.format(off=32)).launch("k", grid=2, block=8, args=[data])   # the kept byte: still nobody's
    assert data[8:12].tolist() == [0x03030300] * 4 and data[20:24].tolist() == [0x06060606] * 4
    assert made[-1].used == 1 and made[-1].is_fine.tolist() == [False, False, True] + [False] * 13
    with pytest.raises(HazardError, match=r"RAW race on global address 0x[0-9a-f]+ \(33 bytes into 'data'\)"):
        ptx.load(KEEP.format(off=33)).launch("k", grid=2, block=8, args=[np.zeros(64, np.uint32)])
    with pytest.raises(HazardError, match=r"RAW race on global address 0x[0-9a-f]+ \(80 bytes into 'data'\)"):
        ptx.load(KEEP.format(off=80)).launch("k", grid=2, block=8, args=[np.zeros(64, np.uint32)])


def test_the_global_unit_is_the_kernels_narrowest_access_that_may_reach_global_memory():
    from paths import PTX_FIXTURES
    mm = ptx.load(open(os.path.join(PTX_FIXTURES, "matmul_bf16.ptx")).read())
    assert graces.global_unit(mm.program("matmul_ptr")) == 16   # cp.async.cg and st.global.v4
    word = ptx.load(KEEP.format(off=32)).program("k")        # st.global.v4.u32 and ld.global.u8
    assert graces.global_unit(word) == 1
    four = ptx.load(GLOBAL.format(off=100)).program("k")     # ld.param.u64 is not global: ld.global.u32
    assert graces.global_unit(four) == 4


def test_a_sparse_fine_plane_holds_the_units_made_fine_only_in_the_order_they_were():
    g = Granular(16 * 1000, FIELDS, rows=1, sparse=True)
    P, ix = g.at(np.array([16 * 700 + 4])[:, None] + np.arange(4))   # a word of granule 700
    assert P is g.fine and P.a.size == 64 * 16 and g.slot[700] == 0 and ix.tolist() == [[4, 5, 6, 7]]
    P.a[ix] = 3
    grains = np.arange(100, 200)
    P, ix = g.at(grains[:, None] * 16 + 8 + np.arange(8))       # 100 more: the plane grows, slot 0 kept
    assert P.a.size == 128 * 16 and g.slot[grains].tolist() == list(range(1, 101)) and g.used == 101
    assert P.a[:16].tolist() == [-1] * 4 + [3] * 4 + [-1] * 8
    P.a[ix] = np.arange(100)[:, None]
    want = np.full(16 * 1000, -1)
    want[16 * 700 + 4:16 * 700 + 8] = 3
    want[(grains[:, None] * 16 + 8 + np.arange(8)).reshape(-1)] = np.repeat(np.arange(100), 8)
    assert np.array_equal(g.bytes("a"), want)
    assert g.at(np.array([16 * 700])[:, None] + np.arange(16))[1].tolist() == [list(range(16))]   # fine, slot 0


def test_at_rows_answers_as_at_does_without_building_the_rows():
    g = Granular(128, FIELDS, rows=1)
    P, ix = g.at_rows(np.array([16, 48]), 16)
    assert P is g.coarse and ix.tolist() == [[1], [3]]
    P, ix = g.at_rows(np.array([8]), 16)             # not granule-aligned: per byte
    assert P is g.fine and ix.tolist() == [list(range(8, 24))]
    P, ix = g.at_rows(np.array([16]), 16)            # granule 1 is fine now
    assert P is g.fine and ix.tolist() == [list(range(16, 32))]
    P, ix = g.at_rows(np.array([64, 96]), 16)        # untouched granules stay coarse
    assert P is g.coarse and ix.tolist() == [[4], [6]]


def test_the_unit_is_the_kernels_narrowest_shared_access():
    from tcemu.ptx.races import shared_unit
    from paths import PTX_FIXTURES as FX
    import os
    units = {name: [shared_unit(m.program(k)) for k in m.kernels]
             for name in ("matmul_bf16", "cutlass_pingpong_bf16", "serial_barrier")
             for m in [ptx.load(open(os.path.join(FX, name + ".ptx")).read())]}
    # Triton: cp.async 16, ldmatrix, st.shared.v4; CUTLASS's epilogue: st.shared.f32; the barrier loop: u32
    assert units == {"matmul_bf16": [16], "cutlass_pingpong_bf16": [4], "serial_barrier": [4]}
    body = "  mov.u32 %r1, smem;\n  st.shared.u8 [%r1], 1;\n  ret;\n"
    mod = ptx.load(run.__globals__["entry"](body, before=SMEM))
    assert shared_unit(mod.program("k")) == 1


@pytest.mark.parametrize("unit", [4, 16])
def test_a_byte_store_into_a_unit_another_warp_wrote_whole_is_reported_at_that_byte(unit, monkeypatch):
    # the CUTLASS-like unit (4) and the granule: warp 0 stores words, thread 32 one byte of word 5 with no barrier
    from tcemu.ptx import races
    monkeypatch.setattr(races, "shared_unit", lambda prog: unit)
    body = """\
  shl.b32 %r2, %r0, 2;
  add.u32 %r4, %r3, %r2;
  @%p1 st.shared.u32 [%r4], %r0;                        // warp 0 writes words 0..31
{sync}
  mov.u32 %r5, 0;
  @%p2 st.shared.u8 [%r3+22], 7;                        // thread 32 writes byte 22 (word 5)
"""
    with pytest.raises(HazardError, match=r"WAW race on shared address 0x416 .*thread 32 \(warp 1.* writes it here; "
                                          r"thread 5 \(warp 0.* st.shared.u32"):
        go(body)
    go(body, "  bar.sync 0;")


ORDERED = two_cta_kernel("""\
 @!%p1 bra $SECOND;
 st.global.v4.u32 [%rd1], {%r3, %r3, %r3, %r3};         // CTA 0 writes 16 bytes a thread
 bar.sync 0;
 setp.ne.u32 %p2, %r1, 0;
 @%p2 bra $END;
 st.release.gpu.global.u32 [%rd2], 1;                   // then releases the flag
 bra $END;
$SECOND:
 setp.ne.u32 %p2, %r1, 0;
 @%p2 bra $SKIP;
$SPIN:
 ld.acquire.gpu.global.u32 %r6, [%rd2];                 // CTA 1 acquires it
 setp.eq.u32 %p3, %r6, 0;
 @%p3 bra $SPIN;
$SKIP:
 bar.sync 0;
 ld.global.v4.u32 {%r7, %r8, %r9, %r10}, [%rd1];        // reads CTA 0's bytes, ordered
 add.u32 %r3, %r3, %r7;
 st.global.v4.u32 [%rd1], {%r3, %r3, %r3, %r3};         // and writes them again, ordered
$END:
""", stride=16)


@pytest.mark.parametrize("lockstep", [True, False])
def test_global_whole_granule_accesses_ordered_by_a_flag_are_silent(lockstep):
    # the other CTA's records are on the coarse plane (every byte CTA 0 stores changes: 0xff -> small words) and
    # ordered: nothing is weighed per byte, nothing reported
    data, flag = np.full(32 * 4, 0xFFFFFFFF, np.uint32), np.zeros(1, np.uint32)
    ptx.load(ORDERED).launch("k", grid=2, block=32, args=[data, flag], lockstep=lockstep)
    t = np.arange(32)
    assert data.reshape(32, 4).tolist() == [[int(x)] * 4 for x in (101 + t) + (1 + t)]


def test_a_shadow_keeps_two_of_its_writers_and_readers_and_a_finished_ctas_state_goes(monkeypatch):
    """GShadow.writers / readers answer none / only this CTA / another from their first two CTAs (graces._note_ids:
    a 2^20-CTA grid kept every id), and a finished CTA's GCta leaves the detector (graces.retire); a read of
    another CTA's word is still a race."""
    shadows, states = [], []
    real = graces.GShadow.__init__

    def spy(self, *a, **k):
        real(self, *a, **k)
        shadows.append(self)
    monkeypatch.setattr(graces.GShadow, "__init__", spy)
    real_state = graces.state

    def keep(W):
        g = real_state(W)
        if g is not None and g not in states:
            states.append(g)
        return g
    monkeypatch.setattr(graces, "state", keep)
    kernel = two_cta_kernel("""\
  mul.wide.u32 %rd5, %r2, 128;
  add.s64 %rd5, %rd1, %rd5;             // CTA c: data[32 c + tid]
  st.global.u32 [%rd5], %r3;
  ld.global.u32 %r4, [%rd5];
""")
    out = np.zeros(32 * 16, np.uint32)
    ptx.load(kernel).launch("k", grid=16, block=32, args=[out, np.zeros(1, np.uint32)])
    assert out.tolist() == [t + 1 + 100 * c for c in range(16) for t in range(32)]
    sd = next(s for s in shadows if s.size == out.nbytes)
    assert len(sd.writers) == 2 and len(sd.readers) == 2 and states[0].ctas == {}
    with pytest.raises(HazardError, match="RAW race on global"):   # CTA c reads CTA 0's word: unordered
        ptx.load(kernel.replace("ld.global.u32 %r4, [%rd5];", "ld.global.u32 %r4, [%rd3];")).launch(
            "k", grid=16, block=32, args=[np.zeros_like(out), np.zeros(1, np.uint32)], lockstep=False)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([1, 2, 4, 8, 16]), st.integers(0, 40), st.integers(0, 2**32 - 1), st.booleans())
def test_byte_mask_is_bit_j_for_byte_j(unit, n, seed, strided):
    # write_kept's masks of the bytes a store changes: bit j set where byte j of the row changes, for every unit
    # (1-8: the row read as one word; 16: packbits), rows of a contiguous array or a strided view
    rng = np.random.default_rng(seed)
    b = rng.random((2 * n if strided else n, unit)) < 0.5
    if strided:
        b = b[::2]
    want = [sum(1 << j for j in range(unit) if row[j]) for row in b.tolist()]
    assert byte_mask(b).tolist() == want


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 6), st.integers(1, 4), st.integers(1, 3))
def test_the_unordered_writer_pass_answers_as_the_gather_does(seed, n, k, warps):
    # races._unordered_writer (one numba pass) against the numpy form it replaces: a record's writer epoch
    # (agent + 1) << 32 | clock is unordered where the row's warp clock for that agent is below it (agent 0: none)
    rng = np.random.default_rng(seed)
    agents = 3
    vcx = rng.integers(0, 4, (warps, agents + 1)).astype(np.int64)
    vcx[:, 0] = 1 << 62
    w_ep = (rng.integers(0, agents + 1, 32).astype(np.int64) << 32) | rng.integers(0, 5, 32)
    ix = rng.integers(0, 32, (n, k)).astype(np.int64)
    lanes = rng.integers(0, warps, n).astype(np.int64)
    ep = w_ep[ix]
    assert _unordered_writer(w_ep, ix, vcx, lanes) == bool(((ep & M32) > vcx[lanes[:, None], ep >> 32]).any())


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 6), st.integers(1, 4), st.booleans(), st.booleans(),
       st.integers(0, 3))
def test_the_unordered_pass_of_one_access_answers_as_the_arrays_do(seed, n, k, writers, diverged, nrows):
    # races._any_unordered against _verdicts' arrays: a writer its clock does not cover (asked where some writer
    # is unordered), a unit this warp wrote in this divergence region by a lane on another path (diverged:
    # races._diverged itself), a read of a candidate reader row this warp is not ordered after
    from types import SimpleNamespace
    from tcemu.ptx.races import _diverged, _mask
    rng = np.random.default_rng(seed)
    agents = np.array([1, 2, 3], np.int64)
    vcx = rng.integers(0, 4, 5).astype(np.int64)
    vcx[0] = 1 << 62
    vc = vcx[1:]
    w_ep = (rng.integers(0, 5, 32).astype(np.int64) << 32) | rng.integers(0, 5, 32)
    w_region = rng.integers(0, 3, 32).astype(np.int64)
    w_mask = rng.integers(0, 1 << 32, 32).astype(np.int64) & rng.choice([0, -1], 32)   # some writers: one lane
    w_info = (rng.integers(0, 8, 32).astype(np.int64) << 6) | rng.integers(0, 32, 32)
    R = (rng.integers(0, 5, (3, 32)).astype(np.int64) << 32) | rng.integers(0, 64, (3, 32))
    ix = rng.integers(0, 32, (n, k)).astype(np.int64)
    tids = np.sort(rng.choice(32, n, replace=False)).astype(np.int64) + 32 * 2
    rows = np.sort(rng.choice(3, nrows, replace=False)).astype(np.int64) if nrows else np.zeros(0, np.int64)
    me, region = 2, 1
    ep = w_ep[ix]
    P = SimpleNamespace(w_region=w_region, w_mask=w_mask, w_info=w_info)
    want = bool(writers and ((ep & M32) > vcx[ep >> 32]).any()) or \
        bool(diverged and _diverged(P, SimpleNamespace(id=me - 1), ep, ix, tids, region).any()) or \
        any(((R[r, ix] >> 32) > vc[agents[r]]).any() for r in rows)
    assert _any_unordered(w_ep, R, w_region, w_mask, w_info, ix, tids % 32, _mask(tids), vcx, vc, agents, rows,
                          writers, diverged, me, region) == want


def test_whole_units_answer_alike_on_both_sides_of_the_numba_limit():
    # granular.whole: one numba pass up to NUMBA_MAX offsets, numpy's vector passes above; the same answers for rows
    # of consecutive bytes (its callers' spots) and for TMA box rows of 16-byte chunks
    for rows in (4, granular.NUMBA_MAX // 32 + 8):
        spots = np.arange(rows, dtype=np.int64)[:, None] * 64 + np.arange(32)
        assert whole_granules(spots).tolist() == [[4 * r, 4 * r + 1] for r in range(rows)]
        shifted = spots.copy()
        shifted[-1] += 8                       # a row starting inside a granule
        assert whole_granules(shifted) is None
        broken = spots.copy()
        broken[-1, 20] += 1                    # a chunk of a box row not contiguous
        assert whole_granules(broken) is None


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(0, 50), st.integers(1, 5))
def test_the_lane_masks_pass_answers_as_bitwise_or_at(seed, n, warps):
    # races._lane_masks: each warp's lanes among the rows it owns (np.bitwise_or.at's answer)
    rng = np.random.default_rng(seed)
    owner = rng.integers(0, warps, n).astype(np.int64)
    tids = rng.integers(0, 1024, n).astype(np.int64)
    bits = np.zeros(warps, np.int64)
    np.bitwise_or.at(bits, owner, np.int64(1) << (tids % 32))
    assert _lane_masks(owner, tids, warps).tolist() == bits.tolist()


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 12), st.integers(1, 4))
def test_the_release_join_pass_answers_as_numpy(seed, n, k):
    # races._release_join (a warpgroup's wgmma, a barrier's arrivals): the join of the rows' clocks, then each row's
    # own entry one epoch on
    rng = np.random.default_rng(seed)
    vcx = rng.integers(0, 1000, (n, n + 1)).astype(np.int64)
    ids = rng.permutation(n)[:min(k, n)].astype(np.int64)
    want = vcx.copy()
    acc = want[ids, 1:].max(axis=0)
    want[ids, ids + 1] += 1
    got = vcx.copy()
    assert _release_join(got, ids).tolist() == acc.tolist() and np.array_equal(got, want)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 60), st.booleans(), st.booleans())
def test_the_read_records_pass_answers_as_the_scatters(seed, n, one_key, one_site):
    # graces._record_reads (a unit a lane: a cp.async's global reads): each unit's reader key and info, the later
    # lane's where two lanes read one unit, as scatters of the keys and of _info leave them; one site for all lanes,
    # or one a lane (a run of issues: each lane its instruction's)
    rng = np.random.default_rng(seed)
    units = rng.integers(0, 40, n).astype(np.int64)
    keys = rng.integers(1, 1 << 40, 1 if one_key else n).astype(np.int64)
    tids = rng.integers(0, 1024, n).astype(np.int64)
    site = rng.integers(0, 1 << 20, 1 if one_site else n).astype(np.int64) << 11
    want_key, want_info = np.zeros(40, np.int64), np.zeros(40, np.int32)
    want_key[units] = keys if not one_key else keys[0]
    want_info[units] = site | (tids // 32) << 6 | tids % 32
    got_key, got_info = np.zeros(40, np.int64), np.zeros(40, np.int32)
    graces._record_reads(got_key, got_info, units, keys, site, tids)
    assert np.array_equal(got_key, want_key) and np.array_equal(got_info, want_info)


def test_last_answer_keeps_a_memo_per_thread():
    # launches run in threads side by side (a dask worker's threads) and ask about shared read-only arrays (a kept
    # TMA box's offsets, an operand's): one memo for all threads took one array in twice and later popped it twice
    import sys
    import threading
    from tcemu.ptx import rows
    ask = rows.last_answer(lambda spots: int(spots[0, 0]))
    pool = [np.full((4, 16), v, np.int64) for v in range(3 * rows.LAST)]
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(4000):
                a = pool[int(rng.integers(0, len(pool)))]
                if ask(a) != int(a[0, 0]):
                    errors.append("a wrong answer")
        except Exception as e:   # noqa: BLE001 (one shared memo: a KeyError from an id popped twice)
            errors.append(repr(e))
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        ts = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors[:3]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from([1, 2, 4, 8, 16]), st.integers(1, 3), st.integers(1, 24),
       st.sampled_from(["increasing", "shuffled", "repeated", "unaligned"]), st.booleans())
def test_kept_writes_in_one_pass_record_what_the_sorted_path_records(seed, unit, per, n, order, prior):
    # graces._kept_writes' numba pass (rows whose units come in increasing order) against Granular.write_kept
    # after whole() and a sort (what it did before, and still does for other orders): the answer and every array
    from tcemu.ptx import graces
    rng = np.random.default_rng(seed)
    k = per * unit
    size = 64 * 16 * 4
    starts = np.sort(rng.choice(size // k, n, replace=False)) * k
    if order == "shuffled":
        rng.shuffle(starts)
    elif order == "repeated" and n > 1:
        starts[-1] = starts[0]
    elif order == "unaligned":
        starts = starts + (rng.integers(0, 2) if unit > 1 else 0)
    spots = starts[:, None] + np.arange(k)
    changed = rng.random((n, k)) < 0.5
    keys = rng.integers(1, 1 << 40, n).astype(np.int64)
    info = rng.integers(0, 1 << 30, n).astype(np.int64)
    sds = [graces.GShadow(size, unit) for _ in range(2)]
    for sd in sds:
        if prior:   # a unit with a writer, and (per byte) a fine one, somewhere among them
            r = np.random.default_rng(seed + 1)
            sd.coarse.w_key[r.integers(0, sd.G, 3)] = 7
            sd.refine(np.array([int(r.integers(0, sd.G))]))
    got = graces._kept_writes(sds[0], starts, changed, keys, info)
    g = sds[1].whole(spots)
    want = g is not None and len(np.unique(g)) == g.size and sds[1].write_kept(
        g.reshape(-1), changed.reshape(-1, unit), {"w_key": np.repeat(keys, per), "w_info": np.repeat(info, per)})
    assert got == want
    for name in ("w_key", "w_info"):
        assert np.array_equal(getattr(sds[0].coarse, name), getattr(sds[1].coarse, name))
    keep = [np.zeros(sds[0].G, np.uint16) if sd.keep is None else sd.keep for sd in sds]
    assert np.array_equal(keep[0], keep[1])
    assert order != "increasing" or prior or got   # (the one-pass case is reached)


def test_the_ids_and_keys_of_ctas_without_state_are_their_linear_ids():
    # graces._ids_keys: CTAs that never synchronised (no GCta) by their linear ids (machine.Cta.linear, x fastest:
    # GlobalRaces.ctaid inverts them) and _key at epoch 0; a CTA with state gives its own key
    from types import SimpleNamespace
    from tcemu.ptx import graces, machine
    prog = ptx.load(HEADER + ".visible .entry k() { ret; }").program("k")
    launch = SimpleNamespace(grid=(3, 5, 7), nthreads=32)
    g = graces.GlobalRaces(launch)
    ctaids = [(2, 4, 6), (0, 0, 0), (1, 3, 2), (2, 0, 5)]
    warps = [machine.Cta(launch, c, prog, None).warps[0] for c in ctaids]
    ids, keys = graces._ids_keys(warps)
    want = [104, 0, 40, 77]   # x + 3 (y + 5 z)
    assert ids == want and [g.ctaid(i) for i in ids] == ctaids and keys.tolist() == [(i + 1) << 32 for i in want]
    me = graces.GCta(9)
    me.epoch = 3
    warps[1].cta.grace = me
    ids, keys = graces._ids_keys(warps)
    assert ids == [104, 9, 40, 77] and keys.tolist() == [105 << 32, 10 << 32 | 3, 41 << 32, 78 << 32]
