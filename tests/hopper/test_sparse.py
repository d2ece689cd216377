"""wgmma.mma_async.sp (tcemu/hopper/sparse.py): metadata layout, gather, arithmetic, addressing of 64-byte K rows, and
the traces of scripts/capture/capture_sparse.py when they are present.

References are independent of tcemu/hopper/sparse.py: CuTe's metadata layouts evaluated with CuTe's own layout algebra
(pycute), scalar loops over the PTX text's definitions, tests/support/fdp_reference.py's exact-rational fused-dot reference,
and numpy integer matrix products of the densified matrix.
"""
import os

import ml_dtypes
import numpy as np
import pytest

import tcemu
from tcemu import GmmaDescriptor, LayoutError, SharedMemory
from tcemu.hopper import sparse as S
from tcemu.arith.fdp import RNE, RZ, FdpUnit
from tcemu.layout.fragments import to_a_registers
from tcemu.traces import load_trace, sp_numerics_case_matches
from fdp_reference import reference

from paths import TRACES

BITS = {"tf32": 32, "f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8}
NP = {32: np.uint32, 16: np.uint16, 8: np.uint8}


# ------------------------------------------------------------------ metadata layout

def _elayouts():
    """CuTe's SM90::GMMA::ELayout_64x16 / 64x32 / 64x64 (cute/atom/mma_traits_sm90_gmma_sparse.hpp), typed from
    the header: (thread, value) -> m + 64 * k of the logical 64 x K tile."""
    from pycute import Layout
    return {16: Layout(((2, 2, 8, 4), (8, 2)), ((512, 0, 1, 16), (64, 8))),
            32: Layout(((2, 2, 8, 4), (16, 2)), ((1024, 0, 1, 16), (64, 8))),
            64: Layout(((2, 2, 8, 4), (32,)), ((8, 2048, 1, 16), (64,)))}


@pytest.mark.parametrize("dtype", ["tf32", "f16", "bf16", "e4m3", "s8"])
def test_meta_slots_follow_cute_elayout(dtype):
    """Every thread/value of CuTe's ELayout lands on the (row, chunk) whose nibble meta_slots names. CuTe's E value
    type holds 8 logical elements per byte (tf32: 4), so value v sits in nibble v // chunk width. The stride-0 thread
    mode of the 16-bit/tf32 layouts is the thread pair sp-sel picks."""
    K, w = S.SP_K_OF[dtype], S.CHUNK[dtype]
    L = _elayouts()[K]
    values = 16 if K == 16 else 32  # values per thread: (8,2), (16,2), (32)
    for sel in S.SELECTORS[dtype]:
        thread, nibble = S.meta_slots(dtype, sel)
        seen = set()
        for t in range(128):
            if K != 64 and (t % 32 // 2) % 2 != sel:
                continue
            for v in range(values):
                idx = L(t, v)
                m, c = idx % 64, idx // 64 // w
                assert (thread[m, c], nibble[m, c]) == (t, v // w)
                seen.add((m, c))
        assert len(seen) == thread.size


def test_meta_slot_examples():
    # f16, sp-sel 1: row 9 is warp 0, g = 1, second half (r = 1); chunk 5 (K 20-23) is h = 1, j = 1:
    # thread 4g + 2*sel + h = 7, nibble 4r + j = 5 (bits 20-23).
    t, n = S.meta_slots("f16", 1)
    assert (t[9, 5], n[9, 5]) == (7, 5)
    # u8: row 25 is warp 1, g = 1, r = 1; chunk 10 (K 40-43) is h = 1, j = 2: thread 32 + 4 + 2h + r = 39, nibble 2.
    t, n = S.meta_slots("u8", 0)
    assert (t[25, 10], n[25, 10]) == (39, 2)
    # tf32, sp-sel 0: row 0, chunk 7 (K 14-15): thread 1 (h = 1), nibble 3.
    t, n = S.meta_slots("tf32", 0)
    assert (t[0, 7], n[0, 7]) == (1, 3)


def test_meta_registers_roundtrip_and_unused_threads():
    rng = np.random.default_rng(5)
    for dtype in ("tf32", "f16", "u8"):
        for sel in S.SELECTORS[dtype]:
            nib = rng.integers(0, 16, (64, S.chunks_per_row(dtype))).astype(np.uint8)
            regs = S.meta_registers(nib, dtype, sel, fill=0xDEADBEEF)
            assert np.array_equal(S.meta_nibbles(regs, dtype, sel), nib)
            owners = set(S.meta_slots(dtype, sel)[0].ravel().tolist())
            assert len(owners) == (128 if dtype == "u8" else 64)
            assert all(regs[t] == 0xDEADBEEF for t in range(128) if t not in owners)


# ------------------------------------------------------------------ forms and refusals

@pytest.mark.parametrize("shape,a,b,d,kw,field", [
    ("m64n8k16", "f16", "f16", "f32", {}, "shape"),            # sparse f16 is k32
    ("m64n8k8", "tf32", "tf32", "f32", {}, "shape"),           # sparse tf32 is k16
    ("m64n8k256", "b1", "b1", "s32", {}, "dtype_a"),           # no sparse b1
    ("m64n40k64", "s8", "u8", "s32", {}, "shape"),             # s32: 8, 16, 24, then multiples of 16
    ("m64n8k64", "e4m3", "e4m3", "f32", {"trans_b": True}, "trans_b"),
    ("m64n8k32", "f16", "f16", "f32", {"sparsity_selector": 2}, "sparsity_selector"),
    ("m64n8k64", "u8", "u8", "s32", {"sparsity_selector": 1}, "sparsity_selector"),
    ("m64n8k64", "e5m2", "e4m3", "f32", {"sparsity_selector": 1}, "sparsity_selector"),
])
def test_illegal_sparse_forms_name_the_rule(shape, a, b, d, kw, field):
    meta = np.full(128, 0x44444444, np.uint32)
    with pytest.raises(LayoutError) as e:
        S.wgmma_sp(SharedMemory(), GmmaDescriptor(0x400, 128, 256), GmmaDescriptor(0x1400, 128, 512), shape=shape,
                   dtype_a=a, dtype_b=b, dtype_d=d, sparse_meta=meta, **kw)
    assert e.value.field == field


def test_bad_metadata_argument():
    with pytest.raises(LayoutError) as e:
        S.meta_nibbles(np.zeros(64, np.uint32), "f16")
    assert e.value.field == "sparse_meta"
    with pytest.raises(LayoutError):
        S.meta_nibbles(np.full(128, -1), "f16")


# ------------------------------------------------------------------ arithmetic against independent references

def _random_case(dtype_a, dtype_b, n, rng, nib_table=None):
    """stored A (64, K/2), B (n, K) raw bits of finite values, valid random nibbles."""
    K, w = S.SP_K_OF[dtype_a], S.CHUNK[dtype_a]
    table = nib_table or S.VALID_NIBBLES[w]
    nib = rng.choice(table, size=(64, K // w)).astype(np.uint8)

    def finite(shape, dtype):
        if dtype in ("s8", "u8"):
            return rng.integers(0, 256, shape).astype(np.uint8)
        np_type = {"tf32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
                   "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}[dtype]
        v = (rng.standard_normal(shape) * 2.0 ** rng.integers(-6, 6, shape)).astype(np_type)
        bits = v.view(NP[BITS[dtype]])
        if dtype == "tf32":
            bits = bits ^ rng.integers(0, 1 << 13, shape).astype(np.uint32)  # junk below tf32's 19 bits
        return bits
    return finite((64, K // 2), dtype_a), finite((n, K), dtype_b), nib


def _ref_column(dtype, nib, c, j):
    """PTX 9.7.15.6.1 read directly: 2:4 stored element j of chunk c sits at 4c + (2-bit index j of the nibble);
    tf32's one stored element sits at 2c + 0 for 0b0100 and 2c + 1 for 0b1110."""
    if S.CHUNK[dtype] == 2:
        return 2 * c + {0x4: 0, 0xE: 1}[int(nib)]
    return 4 * c + ((int(nib) >> (2 * j)) & 3)


UNITS = {("tf32", "f32"): FdpUnit(25, "f32", 23, RZ), ("f16", "f32"): FdpUnit(25, "f32", 23, RZ),
         ("f16", "f16"): FdpUnit(25, "f16", 10, RNE), ("bf16", "f32"): FdpUnit(25, "f32", 23, RZ),
         ("e4m3", "f32"): FdpUnit(13, "f32", 13, RZ), ("e5m2", "f16"): FdpUnit(13, "f16", 10, RNE)}


@pytest.mark.parametrize("dtype_a,dtype_b,dtype_d", [("tf32", "tf32", "f32"), ("f16", "f16", "f32"),
                                                     ("f16", "f16", "f16"), ("bf16", "bf16", "f32"),
                                                     ("e4m3", "e5m2", "f32"), ("e5m2", "e4m3", "f16")])
def test_float_sparse_dot_matches_exact_reference(dtype_a, dtype_b, dtype_d):
    rng = np.random.default_rng(hash((dtype_a, dtype_b, dtype_d)) % 2**32)
    a, b, nib = _random_case(dtype_a, dtype_b, 8, rng)
    c = rng.standard_normal((64, 8)).astype(np.float16 if dtype_d == "f16" else np.float32)
    c_bits = c.view(np.uint16 if dtype_d == "f16" else np.uint32)
    got = S.sparse_dot(a, b, nib, c_bits, dtype_a=dtype_a, dtype_b=dtype_b, dtype_d=dtype_d)
    unit = UNITS[(dtype_a, dtype_d)]
    fa = "f32" if dtype_a == "tf32" else dtype_a  # tf32: the low 13 bits ignored
    mask = 0xFFFFE000 if dtype_a == "tf32" else (1 << BITS[dtype_a]) - 1
    checked = 0
    for m in range(0, 64, 7):
        for n in range(8):
            pairs = [(int(a[m, 2 * c_ + j if S.CHUNK[dtype_a] == 4 else c_]) & mask,
                      int(b[n, _ref_column(dtype_a, nib[m, c_], c_, j)]) & mask)
                     for c_ in range(nib.shape[1]) for j in range(S.CHUNK[dtype_a] // 2)]
            want = reference([p[0] for p in pairs], [p[1] for p in pairs], int(c_bits[m, n]), fa,
                             "f32" if dtype_b == "tf32" else dtype_b, dtype_d, unit)
            if want is not None:
                assert int(got[m, n]) == want, (m, n)
                checked += 1
    assert checked > 60


@pytest.mark.parametrize("dtype_a,dtype_b,satfinite", [("s8", "s8", False), ("u8", "s8", False), ("s8", "u8", True)])
def test_integer_sparse_dot_is_the_dense_product(dtype_a, dtype_b, satfinite):
    rng = np.random.default_rng(7)
    a, b, nib = _random_case(dtype_a, dtype_b, 16, rng)
    c = rng.integers(-2**31, 2**31, (64, 16)).astype(np.int32)
    got = S.sparse_dot(a, b, nib, c.view(np.uint32), dtype_a=dtype_a, dtype_b=dtype_b, dtype_d="s32",
                       satfinite=satfinite)
    dense = np.zeros((64, 64), np.int64)
    for m in range(64):
        for c_ in range(16):
            for j in range(2):
                dense[m, _ref_column(dtype_a, nib[m, c_], c_, j)] = a[m, 2 * c_ + j].astype(np.int64)
    sa = dense - 256 * (dense > 127) if dtype_a == "s8" else dense
    bb = b.astype(np.int64)
    sb = bb - 256 * (bb > 127) if dtype_b == "s8" else bb
    exact = c.astype(np.int64) + sa @ sb.T
    want = np.clip(exact, -2**31, 2**31 - 1) if satfinite else ((exact + 2**31) % 2**32) - 2**31
    assert np.array_equal(got.astype(np.int64), want)


def test_tf32_half_gather_hypothesis():
    """invalid_meta='gather' for tf32: nibble 0b1000 (indices 0 and 2) reads the low half of B[2c] as the low half
    and the low half of B[2c + 1] as the high half of the 32-bit B value."""
    b = np.array([[0x3F80_1234, 0x4040_5678] + [0] * 14], np.uint32)  # 1.0-ish, 3.0-ish
    nib = np.array([0x8] + [0x4] * 7, np.uint8)
    assert S.gather_b(b, nib, "tf32")[0, 0] == 0x5678_1234
    assert S.gather_b(b, np.array([0x4] * 8, np.uint8), "tf32")[0, 0] == 0x3F80_1234
    assert S.gather_b(b, np.array([0xE] + [0x4] * 7, np.uint8), "tf32")[0, 0] == 0x4040_5678


def test_repeated_indices_gather_both_products():
    """0b0000 (both indices 0): gather multiplies both stored elements with B[4c] (hand-computed, u8)."""
    a = np.zeros((64, 32), np.uint8)
    a[0, 0], a[0, 1] = 3, 5
    b = np.zeros((8, 64), np.uint8)
    b[0, 0], b[0, 1] = 7, 11
    nib = np.full((64, 16), 0x4, np.uint8)
    nib[0, 0] = 0x0
    d = S.sparse_dot(a, b, nib, None, dtype_a="u8", dtype_b="u8", dtype_d="s32")
    assert d[0, 0] == 3 * 7 + 5 * 7
    nib[0, 0] = 0x1  # unordered (1, 0): a0 * B[1] + a1 * B[0]
    assert S.sparse_dot(a, b, nib, None, dtype_a="u8", dtype_b="u8", dtype_d="s32")[0, 0] == 3 * 11 + 5 * 7


def test_exact_zero_sum_is_positive():
    """A = -0 (f16), B = +1, C = -0: every stored product and C is -0, and the unit gives +0 (the Hopper unit's rule,
    dense and sparse: traces/wgmma_sp_numerics_sm90.npz, 57 such sparse cases, every output +0;
    traces/wgmma_zero_sign_sm90.npz for dense). The 'signed' alternative (IEEE 754's sign) gives -0 with a -0 C;
    without C (scale-d = 0) the unit adds a +0 accumulator, so even 'signed' gives +0. Nonzero results keep their
    sign: -1 * 1 * 16 stored = -16."""
    a = np.full((64, 16), 0x8000, np.uint16)  # -0.0 f16
    b = np.full((8, 32), 0x3C00, np.uint16)   # +1.0
    nib = np.full((64, 8), 0x4, np.uint8)     # positions 0, 1 kept; 2, 3 pruned
    for dtype_d, c_neg0, neg0 in (("f32", 0x80000000, 0x80000000), ("f16", 0x8000, 0x8000)):
        common = dict(dtype_a="f16", dtype_b="f16", dtype_d=dtype_d)
        c = np.full((64, 8), c_neg0, np.uint32 if dtype_d == "f32" else np.uint16)
        for cc in (None, c):
            assert np.all(S.sparse_dot(a, b, nib, cc, **common) == 0)
            assert np.all(S.sparse_dot(a, b, nib, cc, rule="signed", **common) == (0 if cc is None else neg0))
            assert np.all(S.sparse_dot(a, b, nib, cc, rule="zeros", **common) == 0)  # +0 pruned terms
    a[:] = 0xBC00  # -1.0: 16 stored products of -1 -> -16.0 = 0xC1800000
    assert np.all(S.sparse_dot(a, b, nib, None, dtype_a="f16", dtype_b="f16", dtype_d="f32") == 0xC1800000)


def test_pruned_positions_do_not_multiply():
    """inf in B at a pruned position does not make 0 * inf = NaN (H100 trace: the 202 float cases with an inf or
    NaN of B at a pruned position); the 'zeros' alternative (K-wide sum with +0 A) gives the canonical NaN."""
    a = np.full((64, 16), 0x3C00, np.uint16)  # +1.0 f16
    b = np.full((8, 32), 0x3C00, np.uint16)   # +1.0
    b[:, 2] = 0x7C00                          # +inf at a pruned position of every row
    nib = np.full((64, 8), 0x4, np.uint8)
    common = dict(dtype_a="f16", dtype_b="f16", dtype_d="f32")
    assert np.all(S.sparse_dot(a, b, nib, None, **common) == 0x41800000)  # 16.0
    assert np.all(S.sparse_dot(a, b, nib, None, rule="zeros", **common) == 0x7FFFFFFF)


def test_halves_rule_rounds_between_halves():
    """'halves' (two fused sums over logical K halves) rounds the accumulator in between: 1 + 2^-24 in the first half
    and 2^-24 in the second give 1 (RZ twice); one fused sum keeps 1 + 2^-23."""
    a = np.zeros((64, 16), np.uint16)
    a[:, 0], a[:, 1], a[:, 8] = 0x3C00, 0x0001, 0x0001  # 1.0, 2^-24 (f16 min subnormal), 2^-24
    b = np.zeros((8, 32), np.uint16)
    b[:, 0], b[:, 1], b[:, 16] = 0x3C00, 0x3C00, 0x3C00
    nib = np.full((64, 8), 0x4, np.uint8)
    common = dict(dtype_a="f16", dtype_b="f16", dtype_d="f32")
    assert np.all(S.sparse_dot(a, b, nib, None, **common) == 0x3F800001)
    assert np.all(S.sparse_dot(a, b, nib, None, rule="halves", **common) == 0x3F800000)


def test_invalid_metadata_is_refused_by_default():
    smem = SharedMemory()
    da, db = GmmaDescriptor(0x400, 128, 256), GmmaDescriptor(0x1400, 128, 512)
    smem.write_operand(da, np.ones((64, 16), np.uint16), dtype="f16")
    smem.write_operand(db, np.ones((8, 32), np.uint16), dtype="f16")
    meta = np.full(128, 0x44444444, np.uint32)
    meta[6] = 0x44444454  # thread 6 (g = 1, sel 1, h = 0), nibble 1: row 1, chunk 1 -> 0b0101
    common = dict(shape="m64n8k32", dtype_a="f16", dtype_b="f16", dtype_d="f32", sparsity_selector=1)
    with pytest.raises(LayoutError, match="row 1 chunk 1: nibble 0b0101 .thread 6, bits 4-7"):
        S.wgmma_sp(smem, da, db, sparse_meta=meta, **common)
    S.wgmma_sp(smem, da, db, sparse_meta=meta, invalid_meta="gather", **common)
    S.wgmma_sp(smem, da, db, sparse_meta=meta, sparsity_selector=0, **{k: v for k, v in common.items()
                                                                        if k != "sparsity_selector"})


# ------------------------------------------------------------------ end to end through shared memory

def test_end_to_end_swizzled_operands_and_register_a():
    """u8 with A 64B-swizzled, B 32B-swizzled K-major (64 bytes of K: second atom column at LBO), sp-sel 0: equals
    numpy's product of the densified A; A from registers (dense fragment of the stored matrix) gives the same."""
    rng = np.random.default_rng(11)
    a, b, nib = _random_case("u8", "u8", 32, rng)
    da = GmmaDescriptor(0x800, 16, 512, 0, "64B")
    db = GmmaDescriptor(0x4000, 32 * 32, 256, 0, "32B")  # LBO = N rows x 32 bytes: atom columns after all rows
    smem = SharedMemory()
    smem.write_operand(da, a, dtype="u8")
    smem.write_operand(db, b, dtype="u8")
    meta = S.meta_registers(nib, "u8", 0)
    common = dict(shape="m64n32k64", dtype_a="u8", dtype_b="u8", dtype_d="s32", sparse_meta=meta)
    d = S.wgmma_sp(smem, da, db, **common)
    assert np.array_equal(d.astype(np.int64), S.densify(a, nib, "u8").astype(np.int64) @ b.T.astype(np.int64))
    d_regs = S.wgmma_sp(smem, None, db, a_regs=to_a_registers(a, "u8"), **common)
    assert np.array_equal(d, d_regs)


def test_sparsify_densify_roundtrip():
    rng = np.random.default_rng(3)
    for dtype in ("f16", "tf32", "e4m3"):
        a, _, nib = _random_case(dtype, dtype, 8, rng)
        logical = S.densify(a, nib, dtype)
        stored, nib2 = S.sparsify(logical, dtype)
        assert np.array_equal(S.densify(stored, nib2, dtype), logical)
    three = np.zeros((64, 32), np.uint16)
    three[5, 4:7] = 0x3C00
    with pytest.raises(LayoutError, match="row 5 chunk 1 holds 3 non-zeros"):
        S.sparsify(three, "f16")


def test_b_k_major_32b_beyond_the_swizzle_width():
    """Plain-Python rule: chunk c of row r at start + (r // 8) * SBO + (r % 8) * 32 + (c // 2) * LBO + (c % 2) * 16,
    then bits [4, 5) ^= ((addr >> 7) - base_offset) & 1 of the absolute address."""
    for start, lbo, sbo, bo in ((0x400, 256, 256, 0), (0x1230, 4096, 512, 1), (0x2000, 48, 256, 0)):
        desc = GmmaDescriptor(start, lbo, sbo, bo, "32B")
        got = tcemu.operand_addresses(desc, rows=16, k=32, dtype="f16")
        for r in range(16):
            for k in range(32):
                c = k // 8
                plain = start + (r // 8) * sbo + (r % 8) * 32 + (c // 2) * lbo + (c % 2) * 16 + (k % 8) * 2
                assert got[r, k] == plain ^ ((((plain >> 7) - bo) & 1) << 4), (start, r, k)
    # K within one row: LBO takes no part (the dense rule, H200 trace)
    a = tcemu.operand_addresses(GmmaDescriptor(0x400, 16, 256, 0, "32B"), rows=8, k=16, dtype="f16")
    b = tcemu.operand_addresses(GmmaDescriptor(0x400, 4096, 256, 0, "32B"), rows=8, k=16, dtype="f16")
    assert np.array_equal(a, b)


def test_explain_lint_knows_lbo_is_used_for_sparse_b():
    from tcemu.tools.explain import lint
    desc = GmmaDescriptor(0x400, 16, 256, 0, "32B")  # CuTe's "assumed 1": chunks 2, 3 overlap chunks 1 and 2
    assert any(f.field == "lbo, sbo" for f in lint(desc, dtype="f16", rows=8, k=32))
    assert not any(f.field == "lbo, sbo" for f in lint(GmmaDescriptor(0x400, 256, 256, 0, "32B"), dtype="f16",
                                                      rows=8, k=32))


# ------------------------------------------------------------------ hardware traces (scripts/capture/capture_sparse.py)

def _trace(name):
    path = os.path.join(TRACES, name)
    if not os.path.exists(path):
        pytest.skip(f"{name} not captured yet: run the device command in scripts/capture/capture_sparse.py's docstring")
    return path


def test_sparse_traces_cover_the_questions():
    """Every value is replayed by tests/traces/test_traces.py (all of traces/*.npz); here: the captures hold the cases
    that decide each open rule, and no probe broke its own invariants."""
    addr = load_trace(_trace("wgmma_sp_addresses_sm90.npz"))
    c = addr.columns
    assert set(c["operand"].tolist()) == {0, 1, 2} and not c["check_mismatches"].any()
    wide = [GmmaDescriptor.decode(int(d)) for d, op, mj in zip(c["desc"], c["operand"], c["major"])
            if op == 1 and mj == 0 and GmmaDescriptor.decode(int(d)).swizzle.value == "32B"]
    assert len({d.lbo for d in wide}) >= 12 and {d.base_offset for d in wide} == set(range(8))
    meta = load_trace(_trace("wgmma_sp_metadata_sm90.npz"))
    pairs = set(zip(meta.columns["inst"].tolist(), meta.columns["cls"].tolist()))
    assert pairs == {(i, k) for i in range(len(meta.meta["instantiations"])) for k in range(6)}
    num = load_trace(_trace("wgmma_sp_numerics_sm90.npz"))
    kinds = {num.meta["instantiations"][i][0] for i in num.columns["inst"].tolist()}
    assert kinds == set(range(20)) and set(num.columns["cls"].tolist()) == set(range(5))


# inf / NaN bit tests of each B type (exponent field all ones; e4m3 has no inf, NaN is S.1111.111)
_INF_NAN = {"tf32": lambda x: (x & 0x7F800000) == 0x7F800000, "f16": lambda x: (x & 0x7C00) == 0x7C00,
            "bf16": lambda x: (x & 0x7F80) == 0x7F80, "e5m2": lambda x: (x & 0x7C) == 0x7C,
            "e4m3": lambda x: (x & 0x7F) == 0x7F}


def _num_inputs(trace, i):
    """Input properties of numerics case i, from the seed (tcemu/traces/sparse_seeds.py, the capture's generator) alone:
    (float kind, negzero with both imm-scales +1, valid metadata with an inf/NaN of B at a pruned position)."""
    from tcemu.traces import sparse_seeds as SS
    c = trace.columns
    kind, n, sel, rega, ta, tb, sa, sb = trace.meta["instantiations"][int(c["inst"][i])]
    atype, btype, dtype, _ = trace.meta["kinds"][kind]
    seed, cls = int(c["seed"][i]), int(c["cls"][i])
    if dtype == "s32":
        return False, False, False
    negzero = bool(SS.sp_case_params(seed, kind).negzero) and (sa, sb) == (1, 1)
    pruned_special = False
    for step in range(int(c["steps"][i]) if cls == 0 else 0):
        nib = S.meta_nibbles(SS.meta_register_bits(seed, kind, step, cls), atype, sel).astype(np.int64)
        special = _INF_NAN[btype](SS.b_bits(seed, kind, step, n).astype(np.int64))  # (N, K)
        kept = np.zeros((64, special.shape[1]), bool)
        for m in range(64):
            for ch in range(nib.shape[1]):
                if atype == "tf32":  # 0b0100: first element of the pair, 0b1110: second
                    kept[m, 2 * ch + (nib[m, ch] == 0xE)] = True
                else:
                    kept[m, 4 * ch + (nib[m, ch] & 3)] = kept[m, 4 * ch + (nib[m, ch] >> 2)] = True
        pruned_special |= bool((special[None, :, :] & ~kept[:, None, :]).any())
    return True, negzero, pruned_special


@pytest.mark.slow
def test_numerics_trace_rejects_the_alternative_rules():
    """Each alternative fails on captured cases chosen by an input property, where 'selected' matches:
    'signed' on every negzero case with a -0 C (A = C = -0, B > 0: hardware +0), 'zeros' on every valid case with
    an inf or NaN of B at a pruned position (hardware: no 0 * inf), 'halves' on ordinary cases (rounding between
    halves). The three negzero cases of one step with scale-d = 0 match 'signed' too: scale-d = 0 adds the unit's
    +0 accumulator (traces/wgmma_zero_sign_sm90.npz), a +0 term, so no rule of the sign can give -0 there.
    tests/traces/test_traces.py replays every case under 'selected'."""
    trace = load_trace(_trace("wgmma_sp_numerics_sm90.npz"))
    props = {i: _num_inputs(trace, i) for i in range(trace.columns["seed"].size)}
    match = lambda i, rule: bool(sp_numerics_case_matches(trace, i, rule).all())  # noqa: E731
    negzero = [i for i, p in props.items() if p[1]]
    assert len(negzero) == 57
    plus_c = [i for i in negzero if trace.columns["scale_d"][i] == 0 and trace.columns["steps"][i] == 1]
    assert len(plus_c) == 3
    assert all(match(i, "selected") and match(i, "signed") for i in plus_c)
    assert all(match(i, "selected") and not match(i, "signed") for i in negzero if i not in plus_c)
    pruned = [i for i, p in props.items() if p[2]][:12]
    assert len(pruned) == 12 and all(match(i, "selected") and not match(i, "zeros") for i in pruned)
    plain = [i for i, p in props.items() if p[0] and not p[1] and not p[2] and trace.columns["cls"][i] == 0][:12]
    assert all(match(i, "selected") and match(i, "zeros") for i in plain)
    assert sum(not match(i, "halves") for i in plain) >= 6


# ------------------------------------------------------------------ strategies, explain, robustness

from hypothesis import given, settings, strategies as st  # noqa: E402

from tcemu.core.errors import TcemuError  # noqa: E402
from tcemu.testing.strategies import sparse_meta, wgmma_sp_forms  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(form=wgmma_sp_forms(), data=st.data())
def test_legal_forms_run_and_valid_meta_is_accepted(form, data):
    """Any legal form with valid metadata runs; integer forms equal numpy's product of the densified A."""
    shape, a, b, d, sel = form
    n, K = int(shape[4:shape.index("k")]), S.SP_K_OF[a]
    meta = data.draw(sparse_meta(a, sel))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    stored = rng.integers(0, 1 << min(BITS[a], 16), (64, K // 2)).astype(NP[BITS[a]])
    bb = rng.integers(0, 1 << min(BITS[b], 16), (n, K)).astype(NP[BITS[b]])
    smem = SharedMemory()
    da, db = GmmaDescriptor(0x400, 128, 256), GmmaDescriptor(0x2000, 128, 512)
    smem.write_operand(da, stored, dtype=a)
    smem.write_operand(db, bb, dtype=b)
    out = S.wgmma_sp(smem, da, db, shape=shape, dtype_a=a, dtype_b=b, dtype_d=d, sparse_meta=meta,
                     sparsity_selector=sel)
    assert out.shape == (64, n)
    if d == "s32":
        sa = stored.astype(np.int64) - (256 * (stored > 127) if a == "s8" else 0)
        sb = bb.astype(np.int64) - (256 * (bb > 127) if b == "s8" else 0)
        dense = S.densify(sa, S.meta_nibbles(meta, a, sel), a)
        assert np.array_equal(out.astype(np.int64), ((dense @ sb.T + 2**31) % 2**32) - 2**31)


@settings(max_examples=40, deadline=None)
@given(form=wgmma_sp_forms(), meta=st.lists(st.integers(0, 2**32 - 1), min_size=128, max_size=128),
       gather=st.booleans())
def test_any_metadata_gives_a_result_or_a_tcemu_error(form, meta, gather):
    shape, a, b, d, sel = form
    n, K = int(shape[4:shape.index("k")]), S.SP_K_OF[a]
    smem = SharedMemory()
    da, db = GmmaDescriptor(0x400, 128, 256), GmmaDescriptor(0x2000, 128, 512)
    smem.write_operand(da, np.zeros((64, K // 2), NP[BITS[a]]), dtype=a)
    smem.write_operand(db, np.zeros((n, K), NP[BITS[b]]), dtype=b)
    try:
        S.wgmma_sp(smem, da, db, shape=shape, dtype_a=a, dtype_b=b, dtype_d=d, sparse_meta=np.array(meta, np.uint32),
                   sparsity_selector=sel, invalid_meta="gather" if gather else "raise")
    except TcemuError as e:
        assert not gather and e.field == "sparse_meta"


def test_explain_sparse_operands_and_metadata():
    from tcemu.tools.explain import describe_sparse_meta, explain, instruction_k
    assert instruction_k("f16", sparse=True, operand="a") == 16 and instruction_k("f16", sparse=True, operand="b") == 32
    assert instruction_k("e4m3", sparse=True, operand="b") == 64
    with pytest.raises(LayoutError):
        instruction_k("b1", sparse=True)
    text = explain(GmmaDescriptor(0x400, 256, 256, 0, "32B"), dtype="f16", rows=8, sparse=True, operand="b")
    assert "read as 8 x 32 f16" in text and "LBO = 0x100" in text and "no findings" in text
    meta = np.full(128, 0x44444444, np.uint32)
    meta[0] = 0x44444414  # thread 0, nibble 1 = 0b0001: indices (1, 0), descending
    meta[1] = 0x444444F4  # thread 1, nibble 1 = 0b1111: repeated, undefined
    lines = describe_sparse_meta(meta, "f16", 0)
    assert lines[0].startswith("sparse metadata (f16, sp-sel 0): 64 threads")
    assert any(ln.startswith("error: sparse_meta: row 0 chunk 5: nibble 0b1111 (thread 1, bits 4-7)") for ln in lines)
    assert any("1 chunks name their two indices in descending order" in ln for ln in lines)
