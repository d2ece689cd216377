"""TMA and bulk copies (tcemu/ptx/ops/bulk.py): the row and span forms a box's shadows are written in (_Box), the
remembered plans (tcemu.layout.tma.plan_tile_again) and the shortcuts for a box inside its tensor give exactly what
the per-byte path and plan_tile give: shared bytes, every shadow, racecheck's records and the global result."""
import re

import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.layout.tma import TmaError, plan_tile, plan_tile_again
from tcemu.ptx.memory import _SHADOWS
from tcemu.ptx.ops import bulk
from tcemu.ptx.tensormap import encode_tiled
from ptxkit import HEADER

# thread 0: a TMA load of box A into the stage (phase 0), a TMA store of the stage, a second load into the stage
# (phase 1) after wait_group.read, a plain bulk copy of 256 bytes and a plain bulk store of them; every thread then
# reads the stage
KERNEL = """{header}
.extern .shared .align 1024 .b8 dyn[];
.visible .entry k(.param .align 64 .b8 src[128], .param .align 64 .b8 dst[128], .param .u64 raw, .param .u64 back)
{{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, dyn;
  add.u32 %r2, %r1, 32768;
  add.u32 %r12, %r1, 16384;
  ld.param.u64 %rd1, [raw];
  ld.param.u64 %rd2, [back];
  setp.ne.u32 %p0, %r0, 0;
  @!%p0 mbarrier.init.shared::cta.b64 [%r2], 1;
  bar.sync 0;
  mov.u32 %r3, {x0};
  mov.u32 %r4, {y0};
  @!%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], {tx};
  @!%p0 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [src, {{%r3, %r4}}], [%r2];
  mov.u32 %r9, 0;
W0:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], %r9;
  @!%p1 bra W0;
  @!%p0 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [dst, {{%r3, %r4}}], [%r1];
  @!%p0 cp.async.bulk.commit_group;
  @!%p0 cp.async.bulk.wait_group.read 0;
  bar.sync 0;
  mov.u32 %r5, {x1};
  mov.u32 %r6, {y1};
  @!%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], {tx2};
  @!%p0 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [src, {{%r5, %r6}}], [%r2];
  @!%p0 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r12], [%rd1], 256, [%r2];
  mov.u32 %r9, 1;
W1:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], %r9;
  @!%p1 bra W1;
  @!%p0 cp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r12], 256;
  @!%p0 cp.async.bulk.commit_group;
  @!%p0 cp.async.bulk.wait_group.read 0;
  shl.b32 %r7, %r0, 2;
  add.u32 %r8, %r1, %r7;
  ld.shared.u32 %r10, [%r8];
  ret;
}}
"""


class _PerByte(bulk._Box):
    """A _Box that offers only the per-byte form: the general path every shadow update falls back to."""
    __slots__ = ()

    def __init__(self, spots):
        super().__init__(spots)
        self.rows = self.g = self.span = self.order = self.pos = None
        self.at = spots


def _run(swizzle, box, coords, es, check_races):
    """Launch KERNEL; the shared window's bytes and shadows after each bulk / TMA instruction, and the results."""
    rng = np.random.default_rng(7)
    dt = np.uint16 if es == 2 else np.uint32
    tensor = rng.integers(0, 1 << 16, (96, 160)).astype(dt)
    out = np.zeros_like(tensor)
    raw = rng.integers(0, 256, 256).astype(np.uint8)
    back = np.zeros(256, np.uint8)
    src, dst = encode_tiled(tensor, box, swizzle=swizzle), encode_tiled(out, box, swizzle=swizzle)
    n = box[0] * box[1] * es   # a box's bytes, its out-of-bounds zeros included
    (x0, y0), (x1, y1) = coords
    text = KERNEL.format(header=HEADER, x0=x0, y0=y0, x1=x1, y1=y1, tx=n, tx2=n + 256)
    states = []

    def trace(W, pc, m, control):
        if "bulk" not in W.prog.instrs[pc].opcode:
            return
        sh = W.cta.shared
        # sources as they read (kept per granule where they can be, per byte where not: SharedWindow.sources)
        made = {k: v.copy() for k, v in sh.__dict__.items() if k in _SHADOWS and not k.startswith("source")}
        made["sources"] = sh.sources(np.arange(sh.hi))
        made["data"], made["written"] = sh.smem.data.copy(), sh.smem.written.copy()
        if sh.race is not None:
            for plane in ("coarse", "fine"):
                P = getattr(sh.race, plane)
                for f in (sh.race.FIELDS if P is not None else ()):
                    made[f"race.{plane}.{f}"] = getattr(P, f).copy()
        states.append((pc, made))

    ptx.load(text).launch("k", grid=1, block=64, args=[src, dst, raw, back], shared_bytes=32768 + 16,
                          trace=trace, check_races=check_races)
    return states, out, back, tensor, raw


def _same(a, b):
    (sa, oa, ba, _, _), (sb, ob, bb, _, _) = a, b
    assert [pc for pc, _ in sa] == [pc for pc, _ in sb]
    for (pc, x), (_, y) in zip(sa, sb):
        assert x.keys() == y.keys(), pc
        for k in x:
            assert x[k].dtype == y[k].dtype and np.array_equal(x[k], y[k]), (pc, k)
    assert np.array_equal(oa, ob) and np.array_equal(ba, bb)


@pytest.mark.parametrize("swizzle, box, es", [("128B", [64, 32], 2), ("64B", [32, 16], 2), ("32B", [8, 64], 4),
                                              ("none", [48, 8], 2)])
@pytest.mark.parametrize("check_races", [False, True])
def test_tma_rows_and_spans_write_what_the_per_byte_path_writes(monkeypatch, swizzle, box, es, check_races):
    """Boxes of several swizzles (rows permuted in address order, or not), the second one partly outside the tensor
    (its zeros and -1 sources): every shadow after every copy, the stored box and the bulk store's bytes."""
    coords = [(32, 16), (160 - box[0] // 2, 8)]
    bulk._BOXES.clear()
    fast = _run(swizzle, box, coords, es, check_races)
    if swizzle != "none":   # the span form with its rows out of address order was taken
        assert any(b[2].span is not None and b[2].order is not None for b in bulk._BOXES.values())
    monkeypatch.setattr(bulk, "_Box", _PerByte)
    monkeypatch.setattr(bulk, "_BOXES", {})
    slow = _run(swizzle, box, coords, es, check_races)
    _same(fast, slow)
    states, out, back, tensor, raw = fast
    y, x = coords[0][1], coords[0][0]
    want = np.zeros_like(tensor)
    want[y:y + box[1], x:x + box[0]] = tensor[y:y + box[1], x:x + box[0]]
    assert np.array_equal(out, want) and np.array_equal(back, raw)


def test_plan_tile_again_answers_as_plan_tile():
    """In-bounds, out-of-bounds and faulting coordinates, strided boxes, several geometries: the same arrays (and
    the same errors) as plan_tile, first call and later ones."""
    rng = np.random.default_rng(3)
    t = rng.integers(0, 1 << 16, (5, 40, 96)).astype(np.uint16)
    cases = [(1024, [32, 8, 2], [1, 2, 1], "64B"), (0, [64, 16, 1], None, "128B"), (128, [16, 4, 3], [1, 3, 2], "none")]
    for smem, box, est, sw in cases:
        for coords in ([0, 0, 0], [32, 8, 1], [88, 35, 4], [-8, -3, 0], [8, 0, 0], [3, 0, 0], [0, 40, 5],
                       [1 << 31, 0, 0]):
            for _ in range(2):
                try:
                    want = plan_tile(smem, t, box, coords, est, sw, "zero", "sm90")
                except TmaError as e:
                    with pytest.raises(TmaError, match=re.escape(str(e))):
                        plan_tile_again(smem, t, box, coords, est, sw, "sm90")
                    continue
                got = plan_tile_again(smem, t, box, coords, est, sw, "sm90")
                for w, g in zip(want, got):
                    assert np.array_equal(w, g) and np.asarray(w).dtype == np.asarray(g).dtype
    for _ in range(2):   # a geometry's own faults, every time
        with pytest.raises(TmaError, match="128-byte aligned"):
            plan_tile_again(64, t, [32, 8, 1], [0, 0, 0], None, "none", "sm90")


def test_sources_and_store_slices_match_the_element_by_element_forms():
    """_sources' first byte + box offsets and _store_box's strided slice against np.unravel_index; a map whose
    rows overlap (stride 16 bytes, rows of 64) takes the element-by-element store."""
    from tcemu.layout.tma import plan_tile as plan
    buf = np.arange(4096, dtype=np.uint8)
    for strides, shape, est in [((320, 2), (12, 160), [1, 2]), ((16, 2), (12, 32), [1, 1])]:
        view = np.lib.stride_tricks.as_strided(buf.view(np.uint16), shape=shape, strides=strides)
        box, coords = [16, 4], [8, 2]
        _, values, flat, counts, _ = plan(0, view, box, coords, est)
        first, offs = bulk._sources(view, 5000, flat, coords, counts, est)
        idx = np.unravel_index(flat, view.shape)
        elem = 5000 + sum(i * s for i, s in zip(idx, view.strides))
        assert np.array_equal(first + offs, (elem[:, None] + np.arange(2)).reshape(-1))
        assert bulk._disjoint(view, counts, est) == (strides[0] == 320)
        raw = np.arange(values.size * 2, dtype=np.uint8).reshape(-1, 2)
        a, b = buf.copy(), buf.copy()
        va = np.lib.stride_tricks.as_strided(a.view(np.uint16), shape=shape, strides=strides)
        vb = np.lib.stride_tricks.as_strided(b.view(np.uint16), shape=shape, strides=strides)
        bulk._store_box(va, raw, flat, flat >= 0, coords, counts, est)
        vb[np.unravel_index(flat, shape)] = raw.copy().view(np.uint16).reshape(-1)
        assert np.array_equal(a, b)


def test_issues_groups_lanes_by_their_operands_in_lane_order():
    act = np.array([0, 3, 4, 7, 9])
    maps = np.array([5] * 10, np.uint64)
    srcs = np.array([0, 0, 0, 16, 0, 0, 0, 16, 0, 32], np.uint32)
    x = np.zeros(10, np.int32)
    assert bulk._issues(act, maps, srcs, x) == [(0, 2), (3, 2), (9, 1)]
    assert bulk._issues(np.array([1, 2, 4]), maps, srcs, x) == [(1, 3)]
