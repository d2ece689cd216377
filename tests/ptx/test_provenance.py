"""Layout provenance (tcemu.ptx.provenance, launch option check_layouts): an operand is a tile when every row reads its
K elements at one stride, src(r, k) = f(r) + s k in global bytes, wherever its rows start.

A grouped GEMM (CUTLASS example 57's storage): both groups' A (64 x K_g) and B (32 x K_g) bf16 matrices live in ONE
packed 1-D buffer, row pitch K_g (or a padded pitch), no array shape to read tiles in. cp.async copies each k16 step
into the no-swizzle core-matrix layout (LBO 128: the next 8 K, SBO 256: the next 8 rows); wgmma.m64n32k16 chains the
steps. The right descriptors pass and equal tcemu.matmul's bits; a wrong swizzle, LBO or SBO is reported, naming two
elements of the buffer. The rule itself is checked directly on descriptors of every swizzle mode, K- and MN-major."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tcemu
import tcemu.ptx as ptx
from tcemu.layout.addressing import operand_addresses
from tcemu.layout.descriptors import GmmaDescriptor
from tcemu.ptx.errors import HazardError
from tcemu.ptx.memory import GlobalMemory, _runs_at
from tcemu.ptx.provenance import _moved, _moved_at, check_operand, check_tile

from ptxkit import HEADER

GROUPED = HEADER + """
.extern .shared .align 1024 .b8 dyn[];
.visible .entry grouped(.param .u64 out, .param .u64 packed, .param .u64 meta)
{
  .reg .pred %p<8>;
  .reg .b32 %r<40>;
  .reg .b64 %rd<16>;
  .reg .f32 %d<16>;
  ld.param.u64 %rd0, [out];
  ld.param.u64 %rd1, [packed];
  ld.param.u64 %rd2, [meta];
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, dyn;
  // meta[group] = {A offset, B offset, K, row pitch} in elements of the packed buffer
  mul.wide.u32 %rd3, %r1, 16;
  add.s64 %rd3, %rd2, %rd3;
  ld.global.u32 %r3, [%rd3];
  ld.global.u32 %r4, [%rd3+4];
  ld.global.u32 %r5, [%rd3+8];
  ld.global.u32 %r30, [%rd3+12];
  shr.u32 %r6, %r5, 4;               // k16 steps
  shr.u32 %r7, %r0, 1;               // this thread's row
  and.b32 %r8, %r0, 1;               // and 16-byte chunk (8 K) of each step
  shr.u32 %r9, %r7, 3;               // core-matrix offset: (row / 8) SBO + chunk LBO + (row % 8) 16
  shl.b32 %r9, %r9, 8;
  shl.b32 %r10, %r8, 7;
  add.u32 %r9, %r9, %r10;
  and.b32 %r10, %r7, 7;
  shl.b32 %r10, %r10, 4;
  add.u32 %r9, %r9, %r10;
  shl.b32 %r12, %r8, 3;
  mad.lo.u32 %r11, %r7, %r30, %r3;   // A element of (row, chunk): A offset + row pitch + 8 chunk
  add.u32 %r11, %r11, %r12;
  mad.lo.u32 %r13, %r7, %r30, %r4;   // B likewise (rows < 32: threads < 64)
  add.u32 %r13, %r13, %r12;
  setp.lt.u32 %p1, %r0, 64;
  mov.u32 %r14, 0;
$L_copy:
  shl.b32 %r15, %r14, 11;            // A step s at dyn + 2048 s
  add.u32 %r15, %r15, %r9;
  add.u32 %r15, %r15, %r2;
  shl.b32 %r16, %r14, 4;
  add.u32 %r17, %r11, %r16;
  mul.wide.u32 %rd4, %r17, 2;
  add.s64 %rd4, %rd1, %rd4;
  cp.async.cg.shared.global [%r15], [%rd4], 16;
  @!%p1 bra $L_nob;
  shl.b32 %r18, %r14, 10;            // B step s at dyn + 0x2000 + 1024 s
  add.u32 %r18, %r18, %r9;
  add.u32 %r18, %r18, %r2;
  add.u32 %r18, %r18, 0x2000;
  add.u32 %r19, %r13, %r16;
  mul.wide.u32 %rd5, %r19, 2;
  add.s64 %rd5, %rd1, %rd5;
  cp.async.cg.shared.global [%r18], [%rd5], 16;
$L_nob:
  add.u32 %r14, %r14, 1;
  setp.lt.u32 %p2, %r14, %r6;
  @%p2 bra $L_copy;
  cp.async.commit_group;
  cp.async.wait_group 0;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  wgmma.fence.sync.aligned;
  mov.u32 %r20, 0;
$L_mma:
  shl.b32 %r21, %r20, 11;
  add.u32 %r21, %r21, %r2;
  shr.u32 %r21, %r21, 4;
  and.b32 %r21, %r21, 0x3FFF;
  or.b32 %r21, %r21, {LO};
  mov.u32 %r22, {HI};
  mov.b64 %rd10, {%r21, %r22};
  shl.b32 %r23, %r20, 10;
  add.u32 %r23, %r23, %r2;
  add.u32 %r23, %r23, 0x2000;
  shr.u32 %r23, %r23, 4;
  and.b32 %r23, %r23, 0x3FFF;
  or.b32 %r23, %r23, {LO};
  mov.b64 %rd11, {%r23, %r22};
  setp.ne.u32 %p3, %r20, 0;
  wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {D}, %rd10, %rd11, %p3, 1, 1, 0, 0;
  add.u32 %r20, %r20, 1;
  setp.lt.u32 %p4, %r20, %r6;
  @%p4 bra $L_mma;
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  mad.lo.u32 %r24, %r1, 128, %r0;
  mul.wide.u32 %rd7, %r24, 64;
  add.s64 %rd7, %rd0, %rd7;
{STORES}  ret;
}
"""

RIGHT = dict(lbo=128, sbo=256, swizzle="none")


def grouped_kernel(lbo=128, sbo=256, swizzle="none"):
    const = GmmaDescriptor(0, lbo, sbo, 0, swizzle).encode()
    dregs = "{" + ", ".join(f"%d{i}" for i in range(16)) + "}"
    stores = "".join(f"  st.global.f32 [%rd7+{4 * i}], %d{i};\n" for i in range(16))
    return GROUPED.replace("{LO}", f"{const & 0xFFFFFFFF:#x}").replace("{HI}", f"{const >> 32:#x}") \
        .replace("{D}", dregs).replace("{STORES}", stores)


def packed_groups(ks=(32, 48), pad=0, seed=3):
    """One flat bf16 buffer holding A_g (64 x K_g) then B_g (32 x K_g) of each group, rows `pad` elements apart beyond
    K_g; the meta table; the matrices."""
    rng = np.random.default_rng(seed)
    parts, meta, mats, at = [], [], [], 0
    for k in ks:
        pitch = k + pad
        a = rng.integers(-4, 5, (64, k))
        b = rng.integers(-4, 5, (32, k))
        for m in (a, b):
            block = np.zeros((m.shape[0], pitch))
            block[:, :k] = m
            parts.append(block.ravel())
        meta.append([at, at + 64 * pitch, k, pitch])
        at += 96 * pitch
        mats.append((a, b))
    packed = np.concatenate(parts).astype(ml_dtypes.bfloat16).view(np.uint16)
    return packed, np.array(meta, np.uint32), mats


def run_grouped(pad=0, **desc):
    packed, meta, mats = packed_groups(pad=pad)
    out = np.zeros(2 * 128 * 16, np.uint32)
    ptx.load(grouped_kernel(**{**RIGHT, **desc})).launch("grouped", grid=2, block=128,
                                                         args=[out, packed, meta], shared_bytes=0x3000)
    return out.reshape(2, 128, 16), mats


@pytest.mark.parametrize("pad", [0, 24])
def test_grouped_gemm_from_one_packed_buffer_passes_and_equals_matmul(pad):
    """Row pitch 32 and 48 elements in group 0 and 1 (pad 0), or 56 and 72 (a padded pitch): no array shape says it."""
    out, mats = run_grouped(pad=pad)
    for g, (a, b) in enumerate(mats):
        d = tcemu.from_d_registers(out[g], 32, "f32").view(np.float32)
        want = tcemu.matmul(a.astype(ml_dtypes.bfloat16), b.T.astype(ml_dtypes.bfloat16), dtype_a="bf16",
                            dtype_b="bf16")
        assert np.array_equal(d.view(np.uint32), np.asarray(want, np.float32).view(np.uint32))
        assert np.array_equal(d.astype(np.int64), a @ b.T)


# the first pair of elements each wrong field is reported with (group 0: A at element 0, pitch 32)
WRONG = {
    "swizzle": (dict(swizzle="32B"), "element (0, 0) holds packed[0] but element (0, 8) holds packed[32]"),
    "lbo": (dict(lbo=256), "element (0, 0) holds packed[0] but element (0, 8) holds packed[256]"),
    "sbo": (dict(sbo=128), "element (8, 0) holds packed[8] but element (8, 8) holds packed[256]"),
}


@pytest.mark.parametrize("field", sorted(WRONG))
def test_grouped_gemm_with_a_wrong_descriptor_field_is_reported(field):
    desc, pair = WRONG[field]
    with pytest.raises(HazardError) as e:
        run_grouped(**desc)
    msg = str(e.value)
    assert "operand A" in msg and "is not a tile of the array its data was copied from" in msg
    assert pair in msg and "one stride (2 bytes in row 0)" in msg
    assert "CTA (0, 0, 0)" in msg


# ------------------------------------------------------------------------------------------------ the rule itself

def _sources(desc, rows, k, major, pitch, ebytes=2, base=0x1000, row_of=None):
    """src (rows, k) of an operand written through `desc` from a row-major global matrix of `pitch` bytes per row
    (K-major: row r = operand row; MN-major: row = K index), read back through the same shared bytes."""
    right = operand_addresses(desc, rows=rows, k=k, dtype="bf16", major=major)
    row_of = np.arange(rows) if row_of is None else row_of
    r, kk = np.meshgrid(row_of, np.arange(k), indexing="ij")
    glob = base + (r * pitch + kk * ebytes if major == "K" else kk * pitch + r * ebytes)
    source = {}
    for a, g in zip(right.ravel(), glob.ravel()):
        source[int(a)] = int(g)
    return lambda d: np.vectorize(lambda a: source.get(int(a), -1))(
        operand_addresses(d, rows=rows, k=k, dtype="bf16", major=major))


def _flat(size=1 << 16):
    gm = GlobalMemory()
    gm.place(0x1000, np.zeros(size, np.uint8), "flat", shape=(size // 2,), itemsize=2)
    return gm


CASES = [  # (major, right descriptor, rows, k, wrong descriptors that must be reported)
    ("K", GmmaDescriptor(0, 128, 256, 0, "none"), 64, 16,
     [GmmaDescriptor(0, 256, 256, 0, "none"), GmmaDescriptor(0, 128, 128, 0, "none"),
      GmmaDescriptor(0, 128, 256, 0, "32B")]),
    ("K", GmmaDescriptor(0, 16, 1024, 0, "128B"), 64, 64,
     [GmmaDescriptor(0, 16, 1024, 0, "64B"), GmmaDescriptor(0, 16, 1040, 0, "128B")]),
    ("K", GmmaDescriptor(0, 16, 512, 0, "64B"), 64, 32,
     [GmmaDescriptor(0, 16, 512, 0, "32B"), GmmaDescriptor(0, 16, 528, 0, "64B")]),
    ("MN", GmmaDescriptor(0, 2048, 1024, 0, "128B"), 128, 16,
     [GmmaDescriptor(0, 2048, 512, 0, "128B"), GmmaDescriptor(0, 2048, 1024, 0, "64B")]),
    ("MN", GmmaDescriptor(0, 128, 256, 0, "none"), 64, 16,
     [GmmaDescriptor(0, 256, 256, 0, "none"), GmmaDescriptor(0, 128, 128, 0, "none")]),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_rule_on_packed_rows_every_swizzle_and_major(i):
    """From a flat buffer (no shape), rows at a pitch no array gives, some repeated (clamped) and out of order (a
    gather): the right descriptor passes, each wrong one is reported."""
    major, right, rows, k, wrongs = CASES[i]
    right = GmmaDescriptor(0x400, right.lbo, right.sbo, 0, right.swizzle)
    row_of = np.minimum(np.arange(rows)[::-1], rows - 3)            # reversed, last rows clamped
    pitch = (k + 40) * 2 if major == "K" else (rows + 24) * 2
    src = _sources(right, rows, k, major, pitch, row_of=row_of)
    gm = _flat()
    check_tile(gm, src(right), 2, "A", right, "here")
    for w in wrongs:
        w = GmmaDescriptor(0x400, w.lbo, w.sbo, 0, w.swizzle)
        with pytest.raises(HazardError, match="is not a tile of the array its data was copied from"):
            check_tile(gm, src(w), 2, "A", w, "here")


def test_rule_skips_unknown_elements_and_names_bytes_of_an_unshaped_buffer():
    gm = GlobalMemory()
    gm.place(0x1000, np.zeros(4096, np.uint8), "raw")                # itemsize 1: elements named by byte
    src = np.full((8, 16), -1, np.int64)
    src[0, :3] = 0x1000 + 2 * np.arange(3)
    check_tile(gm, src, 2, "B", GmmaDescriptor(0, 16, 128, 0, "none"), "here")   # one row: consistent
    src[5, 0], src[5, 9] = 0x1100, 0x1100 + 20                      # row 5 reads k 9 at 10 elements
    with pytest.raises(HazardError) as e:
        check_tile(gm, src, 2, "B", GmmaDescriptor(0, 16, 128, 0, "none"), "here")
    assert "element (5, 0) holds byte 256 of 'raw' but element (5, 9) holds byte 276 of 'raw'" in str(e.value)


def test_a_whole_row_permutation_is_not_reported():
    """The documented limit: a 64B-swizzled K-major tile read as 128B (SBO 1024) reads whole rows in order, 2r for row
    r < 4, 2r + 1 for 4 <= r < 8 (both XORs take the same address bits): a row mapping like a gather's, which f(r) left
    free accepts."""
    right = GmmaDescriptor(0x400, 16, 512, 0, "64B")
    src = _sources(right, 64, 32, "K", 160)
    wrong = GmmaDescriptor(0x400, 16, 1024, 0, "128B")
    got = src(wrong)
    assert np.array_equal((got[:8, 0] - 0x1000) // 160, [0, 2, 4, 6, 9, 11, 13, 15])
    assert (np.diff(got[(got >= 0).all(axis=1)], axis=1) == 2).all()     # (rows past the tile read nothing written)
    check_tile(_flat(), got, 2, "A", wrong, "here")


def test_memo_passes_a_translated_tile_once_checked_and_still_checks_the_rest(monkeypatch):
    """check_tile(memo=) (the launch keeps one): an operand whose sources are a passing one's moved by whole
    elements inside the same allocation passes with one comparison; any other set of sources under the same
    descriptor (a different pattern, a half-element shift, a move out of the allocation, unknown elements) gets
    the full check, so a wrong layout is still reported."""
    from tcemu.ptx import provenance
    real, calls = provenance._check, []
    monkeypatch.setattr(provenance, "_check", lambda *a: (calls.append(1), real(*a))[1])
    right = GmmaDescriptor(0x400, 16, 1024, 0, "128B")
    src = _sources(right, 64, 64, "K", 64 * 2 + 256)(right)
    gm, memo = _flat(1 << 17), {}
    check_tile(gm, src, 2, "A", right, "here", memo=memo)
    check_tile(gm, src + 128, 2, "A", right, "here", memo=memo)        # the next K block: remembered
    check_tile(gm, src + 2 * 384, 2, "A", right, "here", memo=memo)    # two rows down
    assert len(calls) == 1 and len(memo) == 1
    wrong = src + 128
    wrong[3, 16:24], wrong[3, 24:32] = src[3, 24:32] + 128, src[3, 16:24] + 128   # two 16-byte chunks swapped
    for w in (wrong, wrong + 256):                                      # a failure is never remembered
        with pytest.raises(HazardError, match="is not a tile"):
            check_tile(gm, w, 2, "A", right, "here", memo=memo)
    assert len(calls) == 3
    check_tile(gm, src + 1, 2, "A", right, "here", memo=memo)          # half an element: checked again
    assert len(calls) == 4
    check_tile(gm, src + (1 << 17), 2, "A", right, "here", memo=memo)   # past the end of 'flat'
    part = src + 128
    part[0, 5] = -1                                                     # an element no copy wrote
    check_tile(gm, part, 2, "A", right, "here", memo=memo)
    assert len(calls) == 6 and len(memo) == 1


class _Window:
    """What check_operand asks of a SharedWindow: its granule sources and the per-element sources of an operand."""

    def __init__(self, source16):
        self.source16 = source16

    def granule_sources(self):
        return self.source16

    def operand_sources(self, op):
        g = self.source16[op.addr_granules]
        return np.where(g >= 0, g + op.addr_low, -1)


def test_operand_memo_by_granules_passes_moved_stages_and_still_checks_the_rest(monkeypatch):
    """check_operand (the wgmma paths' provenance check): an operand whose 16-byte granules were copied from a
    passing one's sources moved by whole elements (the next K block, another CTA's tile) passes by comparing
    granules, without the per-element check; a granule pattern that differs, a half-element move, a move out of
    the allocation or a granule that is no run gets check_tile, which reports a wrong layout."""
    from tcemu.ptx import provenance
    from tcemu.ptx.ops.wgmma_gang import operand
    real, calls = provenance._check, []
    monkeypatch.setattr(provenance, "_check", lambda *a: (calls.append(1), real(*a))[1])
    right = GmmaDescriptor(0x400, 16, 1024, 0, "128B")
    op = operand(right.encode(), 64, 64, "bf16", "K")
    src = _sources(right, 64, 64, "K", 64 * 2 + 256)(right)           # element sources, 128-byte rows of 16-byte runs
    base16 = np.full(1 << 12, -1, np.int64)
    base16[op.addr_granules.reshape(-1)] = (src - op.addr_low).reshape(-1)
    gm, memo = _flat(1 << 17), {}

    def check(source16):
        check_operand(gm, _Window(source16), op, "A", right, "here", memo)
    check(base16)
    moved = np.where(base16 >= 0, base16 + 128, -1)
    check(moved)                                                      # the next K block: by granules
    check(np.where(base16 >= 0, base16 + 2 * 384, -1))                # two rows down
    assert len(calls) == 1 and len(memo) == 2                         # check_tile's entry and the granules'
    g = op.grains
    swapped = moved.copy()
    swapped[g[2]], swapped[g[3]] = moved[g[3]], moved[g[2]]           # two chunks of a row exchanged
    with pytest.raises(HazardError, match="is not a tile"):
        check(swapped)
    assert len(calls) == 2
    check(np.where(base16 >= 0, base16 + 1, -1))                      # half an element: checked again
    check(np.where(base16 >= 0, base16 + (1 << 17), -1))              # past the end of 'flat'
    hole = moved.copy()
    hole[g[5]] = -1                                                   # a granule no copy wrote
    check(hole)
    mixed = moved.copy()
    mixed[g[7]] = -2                                                  # sources kept byte by byte (MIXED)
    check(mixed)
    assert len(calls) == 6
    # another stage's buffer (a descriptor 8 KB further: whole 128B-swizzle atoms) has the same layout, so its
    # sources moved pass by granules; one 128 bytes further (inside an atom) is another layout, checked in full
    far = GmmaDescriptor(0x400 + 0x2000, 16, 1024, 0, "128B")
    op2 = operand(far.encode(), 64, 64, "bf16", "K")
    assert op2.layout == op.layout and op2.key != op.key
    check(moved)                                                      # (the half-element move is remembered)
    assert len(calls) == 7
    stage = np.full(1 << 12, -1, np.int64)
    stage[op2.grains] = moved[g] + 2 * 384
    check_operand(gm, _Window(stage), op2, "A", far, "here", memo)
    assert len(calls) == 7
    stage[op2.grains[2]], stage[op2.grains[3]] = stage[op2.grains[3]], stage[op2.grains[2]]
    with pytest.raises(HazardError, match="is not a tile"):
        check_operand(gm, _Window(stage), op2, "A", far, "here", memo)
    assert len(calls) == 8
    near = GmmaDescriptor(0x400 + 0x80, 16, 1024, 0, "128B")
    op3 = operand(near.encode(), 64, 64, "bf16", "K")
    assert op3.layout != op.layout


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 30), st.booleans())
def test_the_one_pass_source_gathers_answer_as_numpy(seed, n, unknown):
    # memory._runs_at (operand_sources: each granule's run plus the element's offset, False where one is no run)
    # and provenance._moved (src is a remembered operand's relative sources moved to `first`)
    rng = np.random.default_rng(seed)
    source16 = rng.integers(0, 1 << 20, 16).astype(np.int64) * 16
    if unknown:
        source16[rng.integers(0, 16)] = -1
    gr = rng.integers(0, 16, n).astype(np.int64)
    low = rng.integers(0, 16, n).astype(np.int64)
    out = np.empty(n, np.int64)
    ok = _runs_at(source16, gr, low, out)
    assert ok == bool((source16[gr] >= 0).all())
    if ok:
        assert out.tolist() == (source16[gr] + low).tolist()
    rel = rng.integers(-64, 64, n).astype(np.int64)
    first = int(rng.integers(0, 1000))
    src = first + rel
    assert _moved(src, rel, first)
    # provenance._moved_at (check_operand: granule sources are remembered ones moved to `first`, every one a run)
    grains = rng.permutation(16)[:min(n, 16)].astype(np.int64)
    s0, f16 = int(source16[grains[0]]), int(rng.integers(0, 1000)) * 16 + (1 << 24)   # moved up: runs stay >= 0
    rel16 = source16[grains] - s0
    shifted = np.where(source16 >= 0, source16 - s0 + f16, source16)
    assert _moved_at(shifted, grains, rel16, f16) == bool(s0 >= 0 and (source16[grains] >= 0).all())
    shifted[grains[-1]] += 16
    assert not _moved_at(shifted, grains, rel16, f16)
    src[int(rng.integers(0, n))] += 1
    assert not _moved(src, rel, first)
