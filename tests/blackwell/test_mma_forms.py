"""tcgen05.mma beyond the dense MMA: .sp (sparse A, metadata in tensor memory), .ws (weight stationary, zero-column
mask, collector buffers) and sm_103a (K = 96, LBO mode 1).

Expected values come from plain-Python restatements of the PTX text (which logical column each stored element
names, the zero-column mask of Table 45 and its worked examples, the .ws and sparse shapes of Table 39) fed to the
rational reference of tests/support/tcgen05_reference.py (ref_fused / ref_grouped, no code shared with fdp.py);
the tensor-memory maps and LBO mode 1 are checked against CuTe in test_cute_tmem.py / test_cute_umma.py. None of it
is silicon-verified.
"""
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tcemu
from tcemu import (DescriptorError, InstrDescriptor, LayoutError, SharedMemory, TensorMemory, TmemError,
                   UmmaDescriptor, tcgen05_mma)
from tcemu.blackwell.collector import CollectorBuffers
from tcemu.arith.formats import decode, encode
from tcemu.blackwell.instr import ZeroColumnMask, shape_findings

from tcgen05_reference import _bits, desc, fractions, ref_fused, ref_grouped

A_AT, B_AT = 0x400, 0x20400

# ---- PTX 9.7.16.10.8, restated ------------------------------------------------------------------------
# The meaningful metadata nibbles, as the PTX text lists them.
PTX_NIBBLES = {"tf32": (0b1110, 0b0100),
               "2:4": (0b0100, 0b1000, 0b1100, 0b1001, 0b1101, 0b0110, 0b1110),
               "4:8": (0b0100, 0b1000, 0b1100, 0b1001, 0b1101, 0b0110, 0b1110)}
WIDTH = {"tf32": 2, "f16": 4, "f8f6f4": 4, "mxf8f6f4": 4, "i8": 4, "mxf4": 8, "mxf4nvf4": 8}


def _family(kind):
    return "tf32" if kind == "tf32" else "4:8" if kind in ("mxf4", "mxf4nvf4") else "2:4"


def ptx_positions(nibble, kind):
    """Positions inside its chunk that a chunk's stored elements take (PTX 9.7.16.10.8.1-3): tf32 the one
    index; 2:4 the two 2-bit indices, low field first; 4:8 the two pairs those indices name."""
    if kind == "tf32":
        return [{0b0100: 0, 0b1110: 1}[nibble]]
    i0, i1 = nibble & 3, nibble >> 2
    if kind in ("mxf4", "mxf4nvf4"):
        return [2 * i0, 2 * i0 + 1, 2 * i1, 2 * i1 + 1]
    return [i0, i1]


def ptx_columns(nib_row, kind):
    w = WIDTH[kind]
    return [w * c + p for c, n in enumerate(nib_row) for p in ptx_positions(int(n), kind)]


def random_nibbles(rng, kind, rows, chunks):
    return rng.choice(PTX_NIBBLES[_family(kind)], (rows, chunks)).astype(np.uint8)


def gathered(b_rows, nib_row, kind):
    """B's rows (N lists of K values) reduced to the columns one A row's stored elements multiply."""
    cols = ptx_columns(nib_row, kind)
    return [[row[c] for c in cols] for row in b_rows]


def ref_sparse(a_st, b, nib, c, fa, fb, out, rows, kind, **kw):
    """D of the sparse MMA: per row, one fused sum of the stored products with the B elements the metadata
    names (the dense unit on K/2 terms); ref_fused gives an exact zero sum +0, the sparse rule."""
    D = np.zeros((len(a_st), len(b)), np.uint32)
    for m in rows:
        D[m] = ref_fused([a_st[m]], gathered(b, nib[m], kind),
                         None if c is None else [c[m]], fa, fb, out, [0],
                         sa=None if "sa" not in kw else [kw["sa"][m]], sb=kw.get("sb"))[0]
    return D


def smem_with(a, b, fa, fb, padded=None, b_swizzle="128B"):
    smem = SharedMemory("sm100")
    da, db = desc(A_AT), desc(B_AT, b_swizzle, lbo=4096 if b_swizzle == "32B" else 16)
    smem.write_operand(da, a, dtype=fa, padded=padded)
    if b_swizzle == "32B":  # B's 64 bytes of K in two 32-byte atom columns, LBO apart (the wide-row rule)
        half = b.shape[1] // 2
        smem.write_operand(db, b[:, :half], dtype=fb, padded=padded)
        smem.write_operand(replace(db, start_address=B_AT + 4096), b[:, half:], dtype=fb, padded=padded)
    else:
        smem.write_operand(db, b, dtype=fb, padded=padded)
    return smem, da, db


# ---- tcgen05.mma.sp ----------------------------------------------------------------------------------

FLOAT_SP = [("f16", "f16", "f16", "f32"), ("f16", "bf16", "bf16", "f32"), ("f16", "f16", "f16", "f16"),
            ("tf32", "tf32", "tf32", "f32"), ("f8f6f4", "e4m3", "e2m1", "f32"), ("f8f6f4", "e3m2", "e5m2", "f16")]


@settings(max_examples=12)
@given(st.sampled_from(FLOAT_SP), st.booleans(), st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_sparse_float_kinds_match_reference(form, with_c, in_tmem, seed):
    """Stored A (M x K/2) through its descriptor, B (N x K), metadata from tensor memory or an array: every
    stored product meets the B element PTX's indices name; one fused sum with C (F = 25)."""
    kind, fa, fb, dtype_d = form
    rng = np.random.default_rng(seed)
    K = {"tf32": 16, "f16": 32, "f8f6f4": 64}[kind]
    M, N = 128, 16
    if kind == "tf32":  # finite f32 containers (tf32 reads their top 19 bits)
        a, b = (rng.standard_normal(shape).astype(np.float32).view(np.uint32) for shape in ((M, K // 2), (N, K)))
    else:
        a, b = _bits(rng, fa, (M, K // 2), 4), _bits(rng, fb, (N, K), 4)
    nib = random_nibbles(rng, kind, M, K // WIDTH[kind])
    c = rng.standard_normal((M, N)).astype(np.float32 if dtype_d == "f32" else np.float16) if with_c else None
    padded = True if kind == "f8f6f4" else None
    smem, da, db = smem_with(a, b, fa, fb, padded, b_swizzle="32B" if kind == "f16" else "128B")
    d = InstrDescriptor(kind, fa, fb, m=M, n=N, dtype_d=dtype_d, sparse=True,
                        sparsity_selector=1 if kind in ("f16", "tf32") and in_tmem else 0)
    kw = dict(sparse_meta=nib)
    if in_tmem:
        tm = TensorMemory()
        tm.write_sparse_meta(64, nib, kind, selector=d.sparsity_selector)
        kw = dict(sparse_meta=64, tmem=tm)
    got = tcgen05_mma(smem, da, db, d, c=c, **kw)
    cf = fractions(c.view(np.uint32 if dtype_d == "f32" else np.uint16), dtype_d) if with_c else None
    rows = rng.choice(M, 6, replace=False)
    want = ref_sparse(fractions(a, fa), fractions(b, fb), nib, cf, fa, fb, dtype_d, rows, kind)
    raw = got.view(np.uint32 if dtype_d == "f32" else np.uint16)
    assert np.array_equal(raw[rows], want[rows].astype(raw.dtype))


def test_sparse_i8_is_exact_and_selects_by_metadata():
    rng = np.random.default_rng(3)
    a, b = rng.integers(-128, 128, (128, 32)), rng.integers(0, 256, (32, 64))
    nib = random_nibbles(rng, "i8", 128, 16)
    smem, da, db = smem_with(a & 0xFF, b, "s8", "u8")
    got = tcgen05_mma(smem, da, db, InstrDescriptor("i8", "s8", "u8", m=128, n=32, dtype_d="s32", sparse=True),
                      sparse_meta=nib)
    want = np.array([[sum(int(x) * int(y) for x, y in zip(a[m], gathered(b.tolist(), nib[m], "i8")[n]))
                      for n in range(32)] for m in range(128)])
    assert np.array_equal(got, want)


def test_sparse_mxf8f6f4_and_mxf4nvf4_match_reference():
    rng = np.random.default_rng(11)
    # mxf8f6f4: K = 64 (32 stored), one ue8m0 scale a row covering all of it
    a, b = _bits(rng, "e4m3", (128, 32), 3), _bits(rng, "e2m3", (8, 64), 3)
    nib = random_nibbles(rng, "mxf8f6f4", 128, 16)
    sa, sb = rng.integers(100, 150, (128, 1)), rng.integers(100, 150, (8, 1))
    smem, da, db = smem_with(a, b, "e4m3", "e2m3", padded=True)
    got = tcgen05_mma(smem, da, db, InstrDescriptor("mxf8f6f4", "e4m3", "e2m3", m=128, n=8, sparse=True),
                      sparse_meta=nib, scale_a=sa, scale_b=sb)
    rows = [0, 17, 99]
    want = ref_sparse(fractions(a, "e4m3"), fractions(b, "e2m3"), nib, None, "e4m3", "e2m3", "f32", rows, "mxf8f6f4",
                      sa=[Fraction(2) ** int(s - 127) for s in sa[:, 0]], sb=[Fraction(2) ** int(s - 127) for s in sb[:, 0]])
    assert np.array_equal(got.view(np.uint32)[rows], want[rows])
    # mxf4nvf4: K = 128 logical (64 stored e2m1), 4:8 pairs; .block16 -> 4 ue4m3 scales a row, one per 16 stored
    a, b = rng.integers(0, 16, (128, 64)), rng.integers(0, 16, (8, 128))
    nib = random_nibbles(rng, "mxf4nvf4", 128, 16)
    sa, sb = rng.integers(0, 0x7F, (128, 4)), rng.integers(0, 0x7F, (8, 4))
    smem, da, db = smem_with(a, b, "e2m1", "e2m1")
    d = InstrDescriptor("mxf4nvf4", "e2m1", "e2m1", m=128, n=8, scale_type="ue4m3", sparse=True)
    got = tcgen05_mma(smem, da, db, d, sparse_meta=nib, scale_a=sa, scale_b=sb, block_size_k=16)
    SA = [[Fraction(float(v)) for v in decode(sa, "ue4m3")[m]] for m in range(128)]
    SB = [[Fraction(float(v)) for v in decode(sb, "ue4m3")[n]] for n in range(8)]
    A, B = fractions(a, "e2m1"), fractions(b, "e2m1")
    for m in (3, 64, 127):
        want = ref_grouped([A[m]], gathered(B, nib[m], "mxf4nvf4"), None, [SA[m]], SB, "ue4m3", [0])
        assert np.array_equal(got.view(np.uint32)[m], want[0])


def test_sparse_exact_zero_is_positive_and_pruned_positions_are_not_read():
    """Every stored product -0 and C = -0: +0, dense and sparse alike (blackwell.fdp_unit: the H100's rule for
    wgmma and wgmma.sp, and MMA-Sim's tcgen05 arithmetic; not measured on a Blackwell). B holds inf at every
    pruned position: nothing multiplies it."""
    a = np.full((64, 16), 0x8000, np.uint16)        # -0
    b = np.full((8, 32), 0x3C00, np.uint16)         # 1.0 ...
    nib = np.full((64, 8), 0b0100, np.uint8)         # indices 0 and 1 of every chunk
    b[:, 2::4] = b[:, 3::4] = 0x7C00                 # ... and inf where the metadata does not look
    smem, da, db = smem_with(a, b, "f16", "f16")
    d = InstrDescriptor("f16", "f16", "f16", m=64, n=8, sparse=True)
    got = tcgen05_mma(smem, da, db, d, sparse_meta=nib, c=np.full((64, 8), -0.0, np.float32))
    assert set(got.view(np.uint32).ravel()) == {0}
    ones, _, _ = smem_with(a, np.full((8, 32), 0x3C00, np.uint16), "f16", "f16")
    dense = tcgen05_mma(ones, da, db, InstrDescriptor("f16", "f16", "f16", m=64, n=8), c=np.full((64, 8), -0.0,
                                                                                                 np.float32))
    assert set(dense.view(np.uint32).ravel()) == {0}  # the dense unit: +0 too (before: IEEE's -0)
    # enable-input-d false: no C term on tcgen05 (unlike wgmma's scale-d = 0); the sign is +0 either way
    assert set(tcgen05_mma(ones, da, db, InstrDescriptor("f16", "f16", "f16", m=64, n=8),
                           enable_input_d=False).view(np.uint32).ravel()) == {0}


def test_sparse_metadata_refusals_and_gather():
    a = np.zeros((128, 16), np.uint16)
    a[:, 0::2] = 0x3C00                              # 1.0 in the first stored element of every chunk
    b = np.arange(16 * 32).reshape(16, 32).astype(np.float16)
    smem, da, db = smem_with(a, b, "f16", "f16")
    d = InstrDescriptor("f16", "f16", "f16", m=128, n=16, sparse=True)
    nib = np.full((128, 8), 0b0101, np.uint8)        # idx0 = idx1 = 1: undefined (PTX lists it nowhere)
    with pytest.raises(LayoutError, match="undefined") as e:
        tcgen05_mma(smem, da, db, d, sparse_meta=nib)
    assert e.value.field == "sparse_meta"
    got = tcgen05_mma(smem, da, db, d, sparse_meta=nib, invalid_meta="gather")
    assert np.array_equal(got, np.tile(b[:, 1::4].astype(np.float32).sum(1), (128, 1)))  # B column 4c + 1
    with pytest.raises(LayoutError, match=r"\(128, 8\) array"):
        tcgen05_mma(smem, da, db, d, sparse_meta=np.zeros((128, 4), np.uint8))
    with pytest.raises(LayoutError, match="pass the metadata"):
        tcgen05_mma(smem, da, db, d)
    with pytest.raises(LayoutError, match="goes with a sparse"):
        tcgen05_mma(smem, da, db, replace(d, sparse=False), sparse_meta=nib)
    tm = TensorMemory()
    with pytest.raises(TmemError, match="128 rows"):  # M = 64 metadata: no CuTe layout
        tcgen05_mma(smem, da, db, replace(d, m=64), sparse_meta=0, tmem=tm)
    tm.write_sparse_meta(2, np.full((128, 8), 0b0100, np.uint8), "f16")
    with pytest.raises(TmemError, match="never written"):  # selector 1 reads the next column, unwritten
        tcgen05_mma(smem, da, db, replace(d, sparsity_selector=1), sparse_meta=2, tmem=tm)
    with pytest.raises(TmemError, match="odd metadata column"):
        tcgen05_mma(smem, da, db, replace(d, sparsity_selector=1), sparse_meta=3, tmem=tm)


def test_sparse_selector_picks_the_column():
    """CuTe's encoding: metadata of the MMA at column 2c + 1 is issued as column 2c with selector 1."""
    rng = np.random.default_rng(5)
    a, b = _bits(rng, "f16", (128, 16), 3), _bits(rng, "f16", (8, 32), 3)
    smem, da, db = smem_with(a, b, "f16", "f16")
    n0, n1 = random_nibbles(rng, "f16", 128, 8), random_nibbles(rng, "f16", 128, 8)
    tm = TensorMemory()
    tm.write_sparse_meta(10, n0, "f16")
    tm.write_sparse_meta(11, n1, "f16")
    d = InstrDescriptor("f16", "f16", "f16", m=128, n=8, sparse=True)
    for nib, sel in ((n0, 0), (n1, 1)):
        got = tcgen05_mma(smem, da, db, replace(d, sparsity_selector=sel), sparse_meta=10, tmem=tm)
        assert np.array_equal(got.view(np.uint32), tcgen05_mma(smem, da, db, d, sparse_meta=nib).view(np.uint32))


def test_sparse_cta_pair_and_layout_c():
    """cta_group::2 M = 256: each CTA's 128 rows and metadata in its own tensor memory; M = 128 sparse puts D in
    layout C (each CTA's 64 rows as layout F: lane r % 16 + 32 * (r // 16))."""
    rng = np.random.default_rng(7)
    a, b = _bits(rng, "f16", (256, 16), 3), _bits(rng, "f16", (32, 32), 3)
    nib = random_nibbles(rng, "f16", 256, 8)
    pair = []
    for i in range(2):
        s = SharedMemory("sm100")
        s.write_operand(desc(A_AT), a[128 * i:128 * i + 128], dtype="f16")
        s.write_operand(desc(B_AT), b[16 * i:16 * i + 16], dtype="f16")
        pair.append(s)
    d = InstrDescriptor("f16", "f16", "f16", m=256, n=32, sparse=True)
    want = tcgen05_mma(pair, desc(A_AT), desc(B_AT), d, cta_group=2, sparse_meta=nib)
    tms = [TensorMemory(), TensorMemory()]
    for i in range(2):
        tms[i].write_sparse_meta(0, nib[128 * i:128 * i + 128], "f16")
    got = tcgen05_mma(pair, desc(A_AT), desc(B_AT), d, cta_group=2, sparse_meta=0, tmem=tms, d_tmem=8,
                      enable_input_d=False)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    rows = [0, 1, 127]  # row r of CTA i: lane r, columns 8 ...
    assert np.array_equal(tms[1].read(8, np.array(rows)[:, None], np.arange(32)[None, :]),
                          want.view(np.uint32)[[128 + r for r in rows]])
    d128 = replace(d, m=128)
    got = tcgen05_mma(pair, desc(A_AT), desc(B_AT), d128, cta_group=2, sparse_meta=nib[:128], tmem=tms,
                      d_tmem=(16 << 16) | 40, enable_input_d=False)
    r = np.arange(64)
    lanes = 16 + r % 16 + 32 * (r // 16)
    assert np.array_equal(tms[0].read(40, lanes[:, None], np.arange(32)[None, :]), got.view(np.uint32)[:64])
    assert np.array_equal(tms[1].read(40, lanes[:, None], np.arange(32)[None, :]), got.view(np.uint32)[64:])


def test_sparse_shapes_follow_table_39():
    assert shape_findings("mxf8f6f4", 128, 16, 2, sparse=True)[0][0] == "m"          # ::2 sparse block-scaled: 256 only
    assert shape_findings("mxf8f6f4", 256, 16, 2, sparse=True) == []
    assert shape_findings("f16", 128, 16, 2, sparse=True) == []                      # the others keep 128 and 256
    assert shape_findings("mxf4nvf4", 128, 8, 1, sparse=True) == []


# ---- instruction descriptor: selector, max shift, K = 96 -------------------------------------------------

@pytest.mark.parametrize("kind,a,b,d,legal", [("f16", "f16", "f16", "f32", {0, 1, 2, 3}),
                                              ("tf32", "tf32", "tf32", "f32", {0, 1, 2, 3}),
                                              ("f8f6f4", "e4m3", "e4m3", "f32", {0}), ("i8", "s8", "s8", "s32", {0}),
                                              ("mxf8f6f4", "e4m3", "e4m3", "f32", {0}), ("mxf4", "e2m1", "e2m1", "f32", {0})])
def test_sparsity_selector_per_kind(kind, a, b, d, legal):
    """PTX 9.7.16.10.8.4: tf32 / f16 select among sub-columns (Table 42: 0-3); i8 and f8f6f4 must be 0; the
    block-scaled kinds assume 0 (their Tables 43/44 reserve bits 0-1). Dense descriptors carry 0."""
    for sel in range(4):
        kw = {} if kind in ("mxf8f6f4", "mxf4") else dict(dtype_d=d)
        found = InstrDescriptor(kind, a, b, m=128, n=64, sparse=True, sparsity_selector=sel, **kw).validate()
        assert (found == []) == (sel in legal), (sel, found)
        if found:
            assert found[0][0] == "sparsity_selector"
        dense = InstrDescriptor(kind, a, b, m=128, n=64, sparsity_selector=sel, **kw).validate()
        assert (dense == []) == (sel == 0)
    with pytest.raises(DescriptorError) as e:
        InstrDescriptor.decode(0b011 | 1 << 4 | 1 << 17 | 8 << 24, "i8")  # i8 sparse, selector 3
    assert e.value.field in ("sparsity_selector", "dtype_d")


def test_max_shift_and_k96_fields():
    d = InstrDescriptor("f16", "f16", "f16", m=64, n=128, max_shift=3)
    assert d.max_shift_columns == 32 and d.encode() >> 30 == 3
    assert [InstrDescriptor("i8", "s8", "s8", m=64, n=64, dtype_d="s32", max_shift=s).max_shift_columns
            for s in range(4)] == [0, 8, 16, 32]
    bad = InstrDescriptor("mxf4", "e2m1", "e2m1", m=128, n=64, sparse=True, k96=True)
    assert bad.validate()[0][0] == "k96"  # K = 96 is a dense shape
    # K = 96 scale ids: .block32 reads 3 bytes from any byte, .block16 (ue4m3) 6 from byte 0 or 2
    for sf_id in range(4):
        assert InstrDescriptor("mxf4", "e2m1", "e2m1", m=128, n=64, k96=True, a_scale_id=sf_id).validate() == []
        found = InstrDescriptor("mxf4nvf4", "e2m1", "e2m1", m=128, n=64, k96=True, scale_type="ue4m3",
                                b_scale_id=sf_id).validate()
        assert (found == []) == (sf_id in (0, 2))


def test_ws_shapes_follow_table_39():
    ok = [(k, m, n) for k in ("f16", "tf32", "f8f6f4", "i8", "mxf8f6f4", "mxf4") for m in (32, 64, 128, 256)
          for n in (32, 64, 128, 256) if not shape_findings(k, m, n, 1, ws=True)]
    assert ok == [(k, m, n) for k in ("f16", "tf32", "f8f6f4", "i8") for m in (32, 64, 128) for n in (64, 128, 256)]
    assert shape_findings("f16", 64, 256, 1, ws=True, sparse=True)[0][0] == "n"   # sparse .ws: N 64 or 128
    assert shape_findings("f16", 128, 64, 2, ws=True)[0][0] == "cta_group"
    assert shape_findings("mxf4", 128, 64, 1, ws=True)[0][0] == "ws"


# ---- the zero-column mask descriptor (PTX 9.7.16.4.3, Table 45) -------------------------------------------

def _mask_text(bits):
    """A sub-mask as the PTX examples write it: most significant column first."""
    return "".join("1" if x else "0" for x in bits[::-1])


def test_zero_column_mask_reproduces_the_ptx_examples():
    """Table 45's four worked examples: each sub-mask's low columns as PTX prints them (after its "0b ..."),
    most significant first; N = 64 here, so each sub-mask is longer than the printed tail."""
    tail = lambda bits, text: _mask_text(bits).endswith(text.replace(" ", ""))  # noqa: E731
    # Example 1: M = 128, non-zero mask 0 -> 0x0, every column used
    assert not ZeroColumnMask(skip_span=4, use_span=3).mask(128, 64).any()
    # Example 2: M = 128, non-zero mask 1, skip span 2, use span 3 -> "0b ... 111 0000 111 0000"
    assert tail(ZeroColumnMask(non_zero_mask=True, skip_span=2, use_span=3).mask(128, 64), "111 0000 111 0000")
    # Example 3: M = 64, start counts 0, first spans {fs1, fs0} = {0, 1}
    m3 = ZeroColumnMask(first_spans=(1, 0, 0, 0), non_zero_mask=True, skip_span=2, use_span=3).mask(64, 64)
    assert tail(m3[:32], "111 0000 111 0000 111") and tail(m3[32:], "0000 111 0000 111 0000")
    # Example 4: M = 32, {sc3..sc0} = {1, 2, 1, 0}, {fs3..fs0} = {0, 0, 1, 1}, shift 2
    m4 = ZeroColumnMask((0, 1, 2, 1), (1, 1, 0, 0), True, 2, 3, 2).mask(32, 64)
    assert tail(m4[0:16], "0000 111 0000 111") and tail(m4[16:32], "0000 111 0000 11")
    assert tail(m4[32:48], "111 0000 111 00") and tail(m4[48:64], "111 0000 111 000")
    # the table's own span wording, taken literally (skip span = columns of B used), fails example 2
    literal = ZeroColumnMask(non_zero_mask=True, skip_span=3, use_span=2).mask(128, 64)
    assert not tail(literal, "111 0000 111 0000")


def test_zero_column_mask_fields_and_limits():
    z = ZeroColumnMask((1, 2, 3, 4), (1, 0, 1, 0), True, 5, 6, 7)
    v = z.encode()
    assert v == 1 | 2 << 8 | 3 << 16 | 4 << 24 | 0b0101 << 32 | 1 << 39 | 5 << 40 | 6 << 48 | 7 << 56
    assert ZeroColumnMask.decode(v) == z and ZeroColumnMask.decode(hex(v)) == z
    assert [f for f, _ in ZeroColumnMask(shift=17).validate(32, 64)] == ["shift"]      # M = 32: at most 16
    assert ZeroColumnMask(shift=17).validate(64, 64) == []
    assert [f for f, _ in ZeroColumnMask(shift=9).validate(64, 64, 8)] == ["max_shift"]
    assert [f for f, _ in ZeroColumnMask.decode(1 << 37).validate(128, 64)] == ["zero_column_mask"]


# ---- tcgen05.mma.ws -------------------------------------------------------------------------------------

@pytest.mark.parametrize("m,n", [(32, 64), (64, 128), (128, 64)])
def test_ws_with_mask_and_shift_matches_reference(m, n):
    """D[:, j] = A x B[:, j + shift], zero where the mask says; D lands in layout G / E / D."""
    rng = np.random.default_rng(m + n)
    shift = 5
    a, b = _bits(rng, "bf16", (m, 16), 3), _bits(rng, "bf16", (n + 8, 16), 3)
    smem = SharedMemory("sm100")
    smem.write_operand(desc(A_AT), a, dtype="bf16")
    smem.write_operand(desc(B_AT), b, dtype="bf16")
    z = ZeroColumnMask(start_counts=(1, 0, 2, 3), first_spans=(0, 1, 1, 0), non_zero_mask=True, skip_span=1,
                       use_span=4, shift=shift)
    d = InstrDescriptor("f16", "bf16", "bf16", m=m, n=n, max_shift=1)
    tm = TensorMemory()
    c = rng.standard_normal((m, n)).astype(np.float32)
    tm.write_d(4, c.view(np.uint32), m, "f32", ws=True)  # C in tensor memory, where D accumulates
    got = tcgen05_mma(smem, desc(A_AT), desc(B_AT), d, ws=True, zero_column_mask=z.encode(), tmem=tm, d_tmem=4)
    mask = z.mask(m, n)
    B = fractions(b, "bf16")
    Bs = [[Fraction(0)] * 16 if mask[j] else B[j + shift] for j in range(n)]
    rows = [0, m // 2, m - 1]
    want = ref_fused(fractions(a, "bf16"), Bs, fractions(c.view(np.uint32), "f32"), "bf16", "bf16", "f32", rows)
    assert np.array_equal(got.view(np.uint32)[rows], want[rows])
    ways = 128 // m  # PTX layouts G (1x4), E (2x2), D (4x1): N split over the lane blocks
    r, j = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    assert np.array_equal(tm.read(4, r + m * (j // (n // ways)), j % (n // ways)), got.view(np.uint32))


def test_ws_refusals():
    smem = SharedMemory("sm100")
    smem.write_operand(desc(A_AT), np.zeros((64, 16), np.float16), dtype="f16")
    smem.write_operand(desc(B_AT), np.zeros((128, 16), np.float16), dtype="f16")
    d = InstrDescriptor("f16", "f16", "f16", m=64, n=64)
    with pytest.raises(DescriptorError) as e:  # shift 9 > the descriptor's max shift of 8
        tcgen05_mma(smem, desc(A_AT), desc(B_AT), replace(d, max_shift=1), ws=True,
                    zero_column_mask=ZeroColumnMask(shift=9).encode())
    assert e.value.field == "max_shift"
    with pytest.raises(LayoutError, match="only tcgen05.mma.ws"):
        tcgen05_mma(smem, desc(A_AT), desc(B_AT), d, zero_column_mask=0)
    with pytest.raises(LayoutError) as e:
        tcgen05_mma(smem, desc(A_AT), desc(B_AT), d, ws=True, scale_input_d=2)
    assert e.value.field == "scale_input_d"
    with pytest.raises(LayoutError) as e:
        tcgen05_mma(smem, desc(A_AT), desc(B_AT), d, ws=True, disable_output_lane=np.zeros(4, np.uint32))
    assert e.value.field == "disable_output_lane"
    with pytest.raises(LayoutError) as e:
        tcgen05_mma(smem, None, desc(B_AT), d, ws=True, tmem=TensorMemory(), a_tmem=0)
    assert e.value.field == "a_tmem"
    with pytest.raises(LayoutError, match="b0..b3"):
        tcgen05_mma(smem, desc(A_AT), desc(B_AT), d, ws=True, collector_op="a::fill")


def test_ws_sparse_metadata_copies():
    """.ws M = 64 reads its metadata from both lane halves (CuTe's tmem_e_frg_ws duplicates it): a second copy
    that disagrees is refused."""
    rng = np.random.default_rng(2)
    a, b = _bits(rng, "f16", (64, 16), 3), _bits(rng, "f16", (64, 32), 3)
    smem, da, db = smem_with(a, b, "f16", "f16")
    nib = random_nibbles(rng, "f16", 64, 8)
    d = InstrDescriptor("f16", "f16", "f16", m=64, n=64, sparse=True)
    tm = TensorMemory()
    tm.write_sparse_meta(0, nib, "f16", ws=True)
    got = tcgen05_mma(smem, da, db, d, ws=True, sparse_meta=0, tmem=tm)
    assert np.array_equal(got.view(np.uint32), tcgen05_mma(smem, da, db, d, ws=True, sparse_meta=nib).view(np.uint32))
    tm.write(0, np.array([64 + 5]), np.array([0]), np.array([0xFFFFFFFF]))
    with pytest.raises(TmemError, match="copy 1"):
        tcgen05_mma(smem, da, db, d, ws=True, sparse_meta=0, tmem=tm)


# ---- collector buffers ------------------------------------------------------------------------------------

def test_collector_buffers_hold_what_the_fill_read():
    smem = SharedMemory("sm100")
    rng = np.random.default_rng(4)
    smem.write_operand(desc(A_AT), _bits(rng, "f16", (64, 64), 3), dtype="f16")  # four K blocks of A
    b = _bits(rng, "f16", (80, 16), 3)
    smem.write_operand(desc(B_AT), b, dtype="f16")
    d = InstrDescriptor("f16", "f16", "f16", m=64, n=64)
    cb = CollectorBuffers()
    run = lambda op, **kw: tcgen05_mma(smem, desc(A_AT), desc(B_AT), kw.pop("d", d), ws=True, collector=cb,  # noqa
                                       collector_op=op, **kw)
    with pytest.raises(LayoutError, match="earlier .collector::b2::fill"):
        run("b2::use")
    first = run("b2::fill")
    assert np.array_equal(run("b2::use"), first)
    assert np.array_equal(run("b2::use", zero_column_mask=0), first)  # shift 0, no mask: the same columns
    with pytest.raises(LayoutError, match="does not hold"):  # B read through another descriptor
        tcgen05_mma(smem, desc(A_AT), desc(B_AT + 1024), d, ws=True, collector=cb, collector_op="b2::use")
    # with a max shift the buffer may hold columns the fill did not read: a shifted use is not held against it
    run("b2::use", zero_column_mask=ZeroColumnMask(shift=8).encode(), d=replace(d, max_shift=1))
    smem.write_operand(desc(B_AT), b ^ 1, dtype="f16")
    with pytest.raises(LayoutError, match="changed since the fill"):
        run("b2::lastuse")
    run("b1::fill")
    run("b1::lastuse")
    with pytest.raises(LayoutError, match="earlier"):
        run("b1::use")
    with pytest.raises(LayoutError) as e:
        tcgen05_mma(smem, desc(A_AT), desc(B_AT), d, ws=True, collector_op="b0::use")
    assert e.value.field == "collector"
    a_buf = CollectorBuffers()  # activation stationary: collector::a holds A
    tcgen05_mma(smem, desc(A_AT), desc(B_AT), d, collector=a_buf, collector_op="a::fill")
    with pytest.raises(LayoutError, match="does not hold"):
        tcgen05_mma(smem, desc(A_AT + 32), desc(B_AT), d, collector=a_buf, collector_op="a::use")


# ---- sm_103a: K = 96 and LBO mode 1 -----------------------------------------------------------------------

@pytest.mark.parametrize("kind,scale_type,bs", [("mxf4", "ue8m0", 32), ("mxf4nvf4", "ue4m3", 16),
                                                ("mxf4nvf4", "ue8m0", 32)])
def test_k96_matches_reference(kind, scale_type, bs):
    """K = 96 e2m1: six groups of 16 (MMA-Sim's grouped unit, as at K = 64) under 96 / block scales a row."""
    rng = np.random.default_rng(bs)
    a, b = rng.integers(0, 16, (128, 96)), rng.integers(0, 16, (16, 96))
    nsf = 96 // bs
    lo, hi = (90, 160) if scale_type == "ue8m0" else (0, 0x7F)
    sa, sb = rng.integers(lo, hi, (128, nsf)), rng.integers(lo, hi, (16, nsf))
    smem = SharedMemory("sm100")
    smem.write_operand(desc(A_AT), a, dtype="e2m1")
    smem.write_operand(desc(B_AT), b, dtype="e2m1")
    d = InstrDescriptor(kind, "e2m1", "e2m1", m=128, n=16, scale_type=scale_type, k96=True)
    got = tcgen05_mma(smem, desc(A_AT), desc(B_AT), d, scale_a=sa, scale_b=sb, arch="sm103",
                      block_size_k=bs if kind == "mxf4nvf4" else None)
    per = bs // 16
    SA = [[Fraction(float(v)) for v in np.repeat(decode(sa, scale_type), per, 1)[m]] for m in range(128)]
    SB = [[Fraction(float(v)) for v in np.repeat(decode(sb, scale_type), per, 1)[n]] for n in range(16)]
    rows = [0, 31, 64, 127]
    want = ref_grouped(fractions(a, "e2m1"), fractions(b, "e2m1"), None, SA, SB, scale_type, rows)
    assert np.array_equal(got.view(np.uint32)[rows], want[rows])
    # the same factors from tensor memory: runs of 3 / 6 bytes, past byte 3 into later columns
    tm = TensorMemory()
    sf_id = 3 if nsf == 3 else 2
    tm.write_scales(0, sa, sf_id, k96=True)
    tm.write_scales(32, sb, sf_id, k96=True)
    t = tcgen05_mma(smem, desc(A_AT), desc(B_AT), replace(d, a_scale_id=sf_id, b_scale_id=sf_id), scale_a=0,
                    scale_b=32, tmem=tm, arch="sm103", block_size_k=bs if kind == "mxf4nvf4" else None)
    assert np.array_equal(t.view(np.uint32), got.view(np.uint32))
    # where the run sits (tmem.py): byte sf_id + j of row r, column r // 32 + 4 * ((sf_id + j) // 4)
    j = nsf - 1
    r = 100
    cell = tm.read(0, np.array([r % 32]), np.array([r // 32 + 4 * ((sf_id + j) // 4)]))[0]
    assert (int(cell) >> (8 * ((sf_id + j) % 4))) & 0xFF == sa[r, j]


def test_lbo_mode_1_reads_the_second_chunk_at_lbo():
    """A K = 96 read starting 96 bytes into a 128-byte line: 32 bytes there, 16 from the LBO address. Laid that
    way, the MMA equals the same one on a contiguous copy (start at the line's start, mode 0)."""
    rng = np.random.default_rng(9)
    a, b = rng.integers(0, 16, (128, 96)), rng.integers(0, 16, (16, 96))
    smem = SharedMemory("sm100")
    stage0, stage1 = 0x4000, 0x8000
    smem.write_operand(desc(stage0 + 96), a[:, :64], dtype="e2m1")          # chunks 6, 7 of stage 0's lines
    smem.write_operand(desc(stage1), a[:, 64:], dtype="e2m1")               # chunk 0 of stage 1's lines
    smem.write_operand(desc(0x10000), a, dtype="e2m1")                      # the contiguous copy
    smem.write_operand(desc(B_AT), b, dtype="e2m1")
    d = InstrDescriptor("mxf4", "e2m1", "e2m1", m=128, n=16, k96=True)
    s = dict(scale_a=np.full((128, 3), 127), scale_b=np.full((16, 3), 127), arch="sm103")
    split = UmmaDescriptor(stage0 + 96, lbo=stage1, sbo=1024, swizzle="128B", version=1, lbo_mode=1)
    got = tcgen05_mma(smem, split, desc(B_AT), d, **s)
    assert np.array_equal(got.view(np.uint32), tcgen05_mma(smem, desc(0x10000), desc(B_AT), d, **s).view(np.uint32))
    with pytest.raises(LayoutError, match="sm_103a"):
        tcgen05_mma(smem, split, desc(B_AT), d, **dict(s, arch="sm100"))
    with pytest.raises(LayoutError, match="K = 96 instructions only"):
        tcgen05_mma(smem, split, desc(B_AT), replace(d, k96=False), scale_a=np.full((128, 2), 127),
                    scale_b=np.full((16, 2), 127), arch="sm103")
    findings = {f.field for f in replace(split, swizzle="64B", base_offset=1).validate("sm103")}
    assert findings == {"lbo_mode", "base_offset"}
    assert [f.field for f in split.validate("sm100")] == ["lbo_mode"]
    assert [f.field for f in replace(split, lbo=stage1 + 32).validate("sm103")] == ["lbo"]


def test_k96_refusals():
    smem = SharedMemory("sm100")
    d = InstrDescriptor("mxf4", "e2m1", "e2m1", m=128, n=16, k96=True)
    with pytest.raises(LayoutError) as e:
        tcgen05_mma(smem, desc(A_AT), desc(B_AT), d)
    assert e.value.field == "k96" and "arch='sm103'" in e.value.rule
    with pytest.raises(LayoutError) as e:
        tcgen05_mma(smem, desc(A_AT), desc(B_AT), replace(d, n=8), arch="sm103")
    assert e.value.field == "n"
    assert shape_findings("mxf4", 256, 32, 2, k96=True) == [] and shape_findings("mxf4", 128, 32, 2, k96=True) == []
    with pytest.raises(LayoutError) as e:
        tcgen05_mma(smem, desc(A_AT), desc(B_AT), d, arch="sm90")
    assert e.value.field == "arch"


# ---- explain and the CLI ---------------------------------------------------------------------------------

def test_explain_names_the_new_forms():
    from tcemu.cli import main
    from tcemu.tools.explain import explain
    k96 = InstrDescriptor("mxf4", "e2m1", "e2m1", m=128, n=64, k96=True)
    split = UmmaDescriptor(0x4460, lbo=0x8400, sbo=1024, swizzle="128B", version=1, lbo_mode=1)
    text = explain(split, instr=k96)
    assert "(sm103, operand A, read as 128 x 96 e2m1 packed" in text and text.endswith("no findings")
    assert "LBO mode 1 (sm_103a): the LBO field holds the absolute address 0x8400" in text
    assert "takes K elements 0-63 from the start's 128-byte line and 64-95 from 0x8400" in text  # chunk 6: 2 chunks
    crossing = explain(replace(split, lbo_mode=0, lbo=16), instr=k96)
    assert "warning: lbo_mode: a 48-byte K read from chunk 6 of its 128-byte line runs past the line" in crossing
    assert "warning: lbo_mode" not in explain(replace(split, start_address=0x4450, lbo_mode=0, lbo=16), instr=k96)
    dense = InstrDescriptor("mxf4", "e2m1", "e2m1", m=128, n=64)
    assert "error: desc_a: LBO mode 1 (bit 52: LBO holds an absolute address) is sm_103a only" in \
        explain(split, instr=dense)
    assert "error: desc_a: LBO mode 1 is the absolute-address mode for a K of 48 bytes" in \
        explain(split, instr=dense, arch="sm103")
    sp = InstrDescriptor("f16", "f16", "f16", m=128, n=64, sparse=True, sparsity_selector=2)
    text = explain(0x4000404000010040, instr=sp, operand="b")
    assert "read as 64 x 32 f16" in text and "sparsity selector 2: metadata from the address's column + 2" in text
    assert "read as 128 x 16 f16" in explain(0x4000404000010040, instr=sp)  # A: K/2 stored
    sw32 = UmmaDescriptor(0x400, lbo=0x1000, sbo=256, swizzle="32B", version=1)  # sparse B: two atom columns
    assert explain(sw32, instr=sp, operand="b").endswith("no findings")
    ws = InstrDescriptor("f16", "f16", "f16", m=32, n=64, max_shift=2)
    assert "max shift 16 columns" in explain(0x4000404000010040, instr=ws, ws=True)
    assert "error: m: M = 32" in explain(0x4000404000010040, instr=ws)  # without .ws, M = 32 is no shape
    assert main(["instr", hex(ws.encode()), "--kind", "f16", "--ws"]) == 0
    assert main(["instr", hex(ws.encode()), "--kind", "f16"]) == 1
    assert main(["explain", hex(split.encode()), "--instr", hex(k96.encode()), "--kind", "mxf4"]) == 0
