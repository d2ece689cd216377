"""tcgen05.mma: operands through descriptors and tensor memory, arithmetic against a plain-Python
reference of the published models (exact rationals, no shared code with fdp.py's integer kernels:
tests/support/tcgen05_reference.py), and against wgmma's silicon-verified model where the published constants
coincide (tf32/f16/bf16)."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tcemu
from tcemu import (GmmaDescriptor, InstrDescriptor, LayoutError, SharedMemory, TensorMemory, TmemError, UmmaDescriptor,
                   tcgen05_mma, wgmma)
from tcemu.arith.formats import decode, encode

from tcgen05_reference import _bits, desc, fractions, ref_fused, ref_grouped

A_AT, B_AT = 0x400, 0x20400


def place(a, b, dtype_a, dtype_b, padded=None, swizzle="128B", smem=None):
    smem = smem or SharedMemory("sm100")
    da, db = desc(A_AT, swizzle), desc(B_AT, swizzle)
    smem.write_operand(da, a, dtype=dtype_a, padded=padded)
    smem.write_operand(db, b, dtype=dtype_b, padded=padded)
    return smem, da, db


# ---- the plain-Python reference ------------------------------------------------------------------------


# ---- consistency with the silicon-verified Hopper model ----------------------------------------------

@pytest.mark.parametrize("dtype,kind,dtype_d,major", [("f16", "f16", "f32", "K"), ("bf16", "f16", "f32", "MN"),
                                                      ("f16", "f16", "f16", "K"), ("tf32", "tf32", "f32", "K")])
def test_tf32_f16_kinds_equal_wgmma(dtype, kind, dtype_d, major):
    """Published models give tcgen05 tf32/f16 the constants wgmma has on the H200 (F = 25, f32 toward zero,
    f16 nearest even): every bit of M = 128 equals two m64 wgmma, negation and C included."""
    rng = np.random.default_rng(5)
    K, N = {"tf32": 8}.get(dtype, 16), 64
    bits = 32 if dtype == "tf32" else 16
    a = rng.integers(0, 1 << bits, (128, K), dtype=np.uint64)
    b = rng.integers(0, 1 << bits, (N, K), dtype=np.uint64)
    wide = {"f16": 0x7C00, "bf16": 0x7F80, "tf32": 0x7F800000}[dtype]
    a[(a & wide) == wide] ^= wide // 2  # finite inputs (specials are tested below)
    b[(b & wide) == wide] ^= wide // 2
    c = rng.standard_normal((128, N)).astype(np.float32 if dtype_d == "f32" else np.float16)
    mn = major == "MN"
    sw = "128B_base32B" if (mn and dtype == "tf32") else "128B"
    smem = SharedMemory("sm100")
    da = UmmaDescriptor(start_address=A_AT, lbo=16 if not mn else 8192, sbo=1024, swizzle=sw, version=1)
    db = UmmaDescriptor(start_address=B_AT, lbo=16, sbo=1024, swizzle="128B", version=1)
    smem.write_operand(da, a, dtype=dtype, major=major)
    smem.write_operand(db, b, dtype=dtype)
    d = InstrDescriptor(kind, dtype, dtype, m=128, n=N, dtype_d=dtype_d, negate_a=True, transpose_a=mn)
    got = tcgen05_mma(smem, da, db, d, c=c)
    s9 = SharedMemory("sm90", data=smem.data)
    for h in range(2):
        rows = slice(64 * h, 64 * h + 64)
        s9.write_operand(GmmaDescriptor(start_address=0x10400, lbo=16, sbo=1024, swizzle="128B"), a[rows], dtype=dtype)
        want = wgmma(s9, GmmaDescriptor(start_address=0x10400, lbo=16, sbo=1024, swizzle="128B"),
                     GmmaDescriptor(start_address=B_AT, lbo=16, sbo=1024, swizzle="128B"),
                     shape=f"m64n{N}k{K}", dtype_a=dtype, dtype_b=dtype, dtype_d=dtype_d, c=c[rows], scale_a=-1)
        assert np.array_equal(got[rows].view(np.uint8), want.view(np.uint8))


def test_f8f6f4_keeps_25_bits_where_hopper_keeps_13():
    """1 + 2^-18: wgmma e4m3 (F = 13) drops the small product, tcgen05 f8f6f4 (F = 25) keeps it."""
    a = np.zeros((64, 32), np.int64)
    b = np.zeros((8, 32), np.int64)
    one, small = encode(1.0, "e4m3"), encode(2.0 ** -9, "e4m3")  # the smallest subnormal: small^2 = 2^-18
    a[:, 0], b[:, 0] = one, one
    a[:, 1], b[:, 1] = small, small
    smem, da, db = place(a, b, "e4m3", "e4m3")
    got = tcgen05_mma(smem, da, db, InstrDescriptor("f8f6f4", "e4m3", "e4m3", m=64, n=8))
    assert set(got.view(np.uint32).ravel()) == {0x3F800020}  # 1 + 2^-18
    s9 = SharedMemory("sm90", data=smem.data)
    hop = wgmma(s9, GmmaDescriptor(start_address=A_AT, lbo=16, sbo=1024, swizzle="128B"),
                GmmaDescriptor(start_address=B_AT, lbo=16, sbo=1024, swizzle="128B"), shape="m64n8k32",
                dtype_a="e4m3", dtype_b="e4m3", dtype_d="f32")
    assert set(hop.view(np.uint32).ravel()) == {0x3F800000}


# ---- every kind against the rational reference -------------------------------------------------------


F8F6F4 = ("e4m3", "e5m2", "e2m3", "e3m2", "e2m1")


@given(st.sampled_from(F8F6F4), st.sampled_from(F8F6F4), st.sampled_from(["f32", "f16"]),
       st.sampled_from([None, 2, 4]), st.booleans(), st.integers(0, 2 ** 32 - 1))
@pytest.mark.slow
def test_f8f6f4_matches_reference(fa, fb, dtype_d, spread, with_c, seed):
    rng = np.random.default_rng(seed)
    a, b = _bits(rng, fa, (64, 32), spread), _bits(rng, fb, (8, 32), spread)
    c = rng.standard_normal((64, 8)).astype(np.float32 if dtype_d == "f32" else np.float16) if with_c else None
    smem, da, db = place(a, b, fa, fb, padded=True)
    got = tcgen05_mma(smem, da, db, InstrDescriptor("f8f6f4", fa, fb, m=64, n=8, dtype_d=dtype_d), c=c)
    cf = fractions(c.view(np.uint32 if dtype_d == "f32" else np.uint16), dtype_d) if with_c else None
    rows = rng.choice(64, 8, replace=False)  # the rational reference is slow: 8 rows per example
    want = ref_fused(fractions(a, fa), fractions(b, fb), cf, fa, fb, dtype_d, rows)
    assert np.array_equal(got.view(np.uint32 if dtype_d == "f32" else np.uint16)[rows], want[rows])


@given(st.sampled_from(F8F6F4), st.sampled_from(F8F6F4), st.integers(0, 2 ** 32 - 1))
@pytest.mark.slow
def test_mxf8f6f4_matches_reference(fa, fb, seed):
    rng = np.random.default_rng(seed)
    a, b = _bits(rng, fa, (128, 32), 3), _bits(rng, fb, (8, 32), 3)
    sa, sb = rng.integers(100, 150, (128, 1)), rng.integers(100, 150, (8, 1))
    smem, da, db = place(a, b, fa, fb, padded=True)
    got = tcgen05_mma(smem, da, db, InstrDescriptor("mxf8f6f4", fa, fb, m=128, n=8), scale_a=sa, scale_b=sb)
    rows = rng.choice(128, 8, replace=False)
    want = ref_fused(fractions(a, fa), fractions(b, fb), None, fa, fb, "f32", rows,
                     sa=[Fraction(2) ** int(s - 127) for s in sa[:, 0]], sb=[Fraction(2) ** int(s - 127) for s in sb[:, 0]])
    assert np.array_equal(got.view(np.uint32)[rows], want[rows])


@given(st.sampled_from([("mxf4nvf4", "ue4m3", 16), ("mxf4nvf4", "ue8m0", 16), ("mxf4nvf4", "ue8m0", 32),
                        ("mxf4", "ue8m0", 32)]), st.booleans(), st.integers(0, 2 ** 32 - 1))
@pytest.mark.slow
def test_grouped_kinds_match_reference(form, with_c, seed):
    kind, scale_type, bs = form
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 16, (128, 64)), rng.integers(0, 16, (8, 64))
    nsf = 64 // bs
    if scale_type == "ue8m0":
        sa, sb = rng.integers(90, 160, (128, nsf)), rng.integers(90, 160, (8, nsf))
    else:  # any finite ue4m3, subnormals and zero included, sign bit set at random (ignored)
        sa, sb = rng.integers(0, 0x7F, (128, nsf)) | rng.integers(0, 2, (128, nsf)) << 7, rng.integers(0, 0x7F, (8, nsf))
    c = (rng.standard_normal((128, 8)) * 2.0 ** rng.integers(-30, 30, (128, 8))).astype(np.float32) if with_c else None
    smem, da, db = place(a, b, "e2m1", "e2m1")
    d = InstrDescriptor(kind, "e2m1", "e2m1", m=128, n=8, scale_type=scale_type)
    got = tcgen05_mma(smem, da, db, d, c=c, scale_a=sa, scale_b=sb, block_size_k=bs if kind == "mxf4nvf4" else None)
    per = bs // 16
    SA = [[Fraction(float(v)) for v in np.repeat(decode(sa, scale_type), per, 1)[m]] for m in range(128)]
    SB = [[Fraction(float(v)) for v in np.repeat(decode(sb, scale_type), per, 1)[n]] for n in range(8)]
    rows = rng.choice(128, 8, replace=False)
    want = ref_grouped(fractions(a, "e2m1"), fractions(b, "e2m1"), fractions(c.view(np.uint32), "f32") if with_c else None,
                       SA, SB, scale_type, rows)
    assert np.array_equal(got.view(np.uint32)[rows], want[rows])


def test_grouped_alignment_follows_the_scales_not_the_sums():
    """MMA-Sim's rule, by hand: group 0 sums to 0 under scales 2^40, group 1 sums to 1 under scale 1.
    E = 40 from the empty group, so group 1 is truncated at 2^(40 - 35): D = 0. Without group 0's
    big scales D = 1."""
    a, b = np.zeros((128, 64), np.int64), np.zeros((8, 64), np.int64)
    a[:, 16] = b[:, 16] = encode(1.0, "e2m1")
    sa = np.full((128, 4), 127)
    sb = np.full((8, 4), 127)
    sa[:, 0] = sb[:, 0] = 127 + 20
    smem, da, db = place(a, b, "e2m1", "e2m1")
    d = InstrDescriptor("mxf4nvf4", "e2m1", "e2m1", m=128, n=8)
    got = tcgen05_mma(smem, da, db, d, scale_a=sa, scale_b=sb, block_size_k=16)
    assert set(got.view(np.uint32).ravel()) == {0}
    sa[:, 0] = sb[:, 0] = 127 + 10  # E = 20: 1 survives
    got = tcgen05_mma(smem, da, db, d, scale_a=sa, scale_b=sb, block_size_k=16)
    assert set(got.view(np.uint32).ravel()) == {0x3F800000}


def test_zero_floors():
    """A zero C counts at 2^-133 (mxf8f6f4) and 2^-139 (mxf4*), the published floors, not MMA-Sim's 2^-126:
    a term 25 (35) bits below the floor survives and RZ leaves 2^-135 - 2^-149 (0x3FFF), where -126
    would truncate it and give 2^-135 (0x4000); the same for 2^-140 - 2^-165 (0x1FF vs 0x200)."""
    a, b = np.zeros((128, 32), np.int64), np.zeros((8, 32), np.int64)
    a[:, 0] = b[:, 0] = encode(1.0, "e4m3")
    a[:, 1], b[:, 1] = encode(-2.0 ** -9, "e4m3"), encode(2.0 ** -9, "e4m3")  # -2^-18
    smem, da, db = place(a, b, "e4m3", "e4m3")
    zero = np.zeros((128, 8), np.float32)
    got = tcgen05_mma(smem, da, db, InstrDescriptor("mxf8f6f4", "e4m3", "e4m3", m=128, n=8), c=zero,
                      scale_a=np.full((128, 1), 127 - 67), scale_b=np.full((8, 1), 127 - 68))
    assert set(got.view(np.uint32).ravel()) == {0x3FFF}
    a4, b4 = np.zeros((128, 64), np.int64), np.zeros((8, 64), np.int64)
    a4[:, 0] = b4[:, 0] = a4[:, 16] = encode(1.0, "e2m1")
    b4[:, 16] = encode(-1.0, "e2m1")
    smem, da, db = place(a4, b4, "e2m1", "e2m1")
    sa, sb = np.full((128, 4), 127 - 70), np.full((8, 4), 127 - 70)
    sb[:, 1] = 127 - 95  # group 1: -2^-165
    got = tcgen05_mma(smem, da, db, InstrDescriptor("mxf4nvf4", "e2m1", "e2m1", m=128, n=8), c=zero,
                      scale_a=sa, scale_b=sb, block_size_k=16)
    assert set(got.view(np.uint32).ravel()) == {0x1FF}


def test_block_scale_specials():
    """ue8m0 0xFF and ue4m3 0x7F (either sign bit) are NaN: the canonical NaN comes out."""
    a, b = np.full((128, 64), 2, np.int64), np.full((8, 64), 2, np.int64)
    smem, da, db = place(a, b, "e2m1", "e2m1")
    sa, sb = np.full((128, 4), 0x38), np.full((8, 4), 0x38)  # ue4m3 1.0
    sa[3, 2] = 0xFF
    got = tcgen05_mma(smem, da, db, InstrDescriptor("mxf4nvf4", "e2m1", "e2m1", m=128, n=8, scale_type="ue4m3"),
                      scale_a=sa, scale_b=sb).view(np.uint32)
    assert set(got[3]) == {0x7FFFFFFF} and set(np.delete(got, 3, 0).ravel()) == {0x42800000}  # 64 x 1.0 = 64
    a8, b8 = np.full((128, 32), 0x38, np.int64), np.full((8, 32), 0x38, np.int64)
    smem, da, db = place(a8, b8, "e4m3", "e4m3")
    sa8, sb8 = np.full((128, 1), 127), np.full((8, 1), 128)
    sb8[5] = 0xFF
    got = tcgen05_mma(smem, da, db, InstrDescriptor("mxf8f6f4", "e4m3", "e4m3", m=128, n=8),
                      scale_a=sa8, scale_b=sb8).view(np.uint32)
    assert set(got[:, 5]) == {0x7FFFFFFF} and set(np.delete(got, 5, 1).ravel()) == {0x42800000}  # 32 * 2 = 64


def test_i8_exact_and_saturating():
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 256, (64, 32)), rng.integers(0, 256, (16, 32))
    smem, da, db = place(a, b, "s8", "u8")
    c = rng.integers(-2 ** 31, 2 ** 31, (64, 16)).astype(np.int32)
    exact = (a - 256 * (a > 127)) @ b.T + c.astype(np.int64)
    got = tcgen05_mma(smem, da, db, InstrDescriptor("i8", "s8", "u8", m=64, n=16, dtype_d="s32"), c=c)
    assert np.array_equal(got, exact.astype(np.uint32).view(np.int32))  # wraps mod 2^32
    sat = tcgen05_mma(smem, da, db, InstrDescriptor("i8", "s8", "u8", m=64, n=16, dtype_d="s32", saturate=True), c=c)
    assert np.array_equal(sat, np.clip(exact, -2 ** 31, 2 ** 31 - 1))


def test_scale_input_d_is_exact_power_of_two():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((64, 16)).astype(np.float16), rng.standard_normal((8, 16)).astype(np.float16)
    c = rng.standard_normal((64, 8)).astype(np.float32)
    smem, da, db = place(a, b, "f16", "f16")
    d = InstrDescriptor("f16", "f16", "f16", m=64, n=8)
    assert np.array_equal(tcgen05_mma(smem, da, db, d, c=c, scale_input_d=5).view(np.uint32),
                          tcgen05_mma(smem, da, db, d, c=c / np.float32(32)).view(np.uint32))
    assert not np.array_equal(tcgen05_mma(smem, da, db, d, c=c, scale_input_d=5), tcgen05_mma(smem, da, db, d, c=c))


# ---- shared-memory and tensor-memory layouts ----------------------------------------------------------

def test_padded_fp4_fp6_and_packed_fp4_bytes():
    """f8f6f4 fp4: 16 values in the chunk's first 8 bytes, low nibble first, 8 bytes padding (.b4x16_p64);
    fp6: 16 x 6 bits from the chunk's lsb in 12 bytes (.b6x16_p32); mxf4: two per byte, even k low."""
    smem = SharedMemory("sm100")
    d = desc(0x400, "none", sbo=256, lbo=128)
    smem.write(0x400, bytes(range(0x10, 0x20)) * 64)
    fp4 = smem.read_operand(d, rows=8, k=32, dtype="e2m1", padded=True)
    assert fp4[0, :4].tolist() == [0x0, 0x1, 0x1, 0x1] and fp4[0, 15] == 0x1 and fp4[0, 16] == 0x0
    assert fp4[1, :2].tolist() == [0x0, 0x1]  # row 1 is the next 16-byte row of the core matrix
    fp6 = smem.read_operand(d, rows=8, k=32, dtype="e2m3")
    word = int.from_bytes(bytes(range(0x10, 0x1C)), "little")
    assert fp6[0, :16].tolist() == [(word >> (6 * i)) & 63 for i in range(16)]
    packed = smem.read_operand(d, rows=8, k=64, dtype="e2m1", padded=False)
    assert packed[0, :4].tolist() == [0x0, 0x1, 0x1, 0x1] and packed[0, 31].tolist() == 0x1
    fresh = SharedMemory("sm100")
    fresh.write(0x400, bytes(8))  # row 0's values only: rows 1-7 were never written
    with pytest.raises(tcemu.SharedMemoryError, match="never written"):
        fresh.read_operand(desc(0x400, "none", sbo=256, lbo=128), rows=8, k=16, dtype="e2m1", padded=True)


def test_padding_is_not_read():
    smem = SharedMemory("sm100")
    d = desc(0x400, "none", sbo=128, lbo=2048)
    vals = np.arange(8 * 16).reshape(8, 16) % 16
    smem.write_operand(d, vals, dtype="e2m1", padded=True)
    assert smem.written[0x400:0x480].reshape(8, 16)[:, :8].all() and not smem.written[0x400:0x480].reshape(8, 16)[:, 8:].any()
    assert np.array_equal(smem.read_operand(d, rows=8, k=16, dtype="e2m1", padded=True), vals)


def test_d_layouts_in_tensor_memory():
    from tcemu.blackwell.tmem import d_cells
    lanes, cols = d_cells(64, 8, 1, 16)
    assert lanes[:, 0].tolist() == [16 + r % 16 + 32 * (r // 16) for r in range(64)] and cols[5].tolist() == list(range(8))
    lanes, cols = d_cells(128, 32, 2)
    assert lanes[3, 15] == 3 and lanes[3, 16] == 67 and cols[3, 16] == 0
    with pytest.raises(TmemError, match="lane base is 0 or 16"):
        d_cells(64, 8, 1, 8)


def test_a_and_d_in_tensor_memory_and_disabled_lanes():
    rng = np.random.default_rng(6)
    a, b = rng.integers(0, 256, (128, 32)), rng.integers(0, 16, (16, 32))
    smem, da, db = place(a, b, "e4m3", "e2m1", padded=True)
    d = InstrDescriptor("f8f6f4", "e4m3", "e2m1", m=128, n=16)
    want = tcgen05_mma(smem, da, db, d)
    tm = TensorMemory()
    tm.write_a(tcemu.tmem_address(0, 40), a, 8)
    assert tm.cells[0, 40] == a[0, 0] | a[0, 1] << 8 | a[0, 2] << 16 | a[0, 3] << 24
    got = tcgen05_mma(smem, None, db, d, tmem=tm, a_tmem=40, d_tmem=100, enable_input_d=False)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(tm.read_d(100, 128, 16, "f32"), want.view(np.uint32))
    mask = [0x0000FFFF, 0, 0, 1 << 31]  # lanes 0-15 and 127 keep D
    twice = tcgen05_mma(smem, None, db, d, tmem=tm, a_tmem=40, d_tmem=100, disable_output_lane=mask)
    stored = tm.read_d(100, 128, 16, "f32")
    keep = np.r_[np.arange(16), 127]
    assert np.array_equal(stored[keep], want.view(np.uint32)[keep])
    assert np.array_equal(np.delete(stored, keep, 0), np.delete(twice.view(np.uint32), keep, 0))
    with pytest.raises(TmemError, match="never written"):
        tcgen05_mma(smem, None, db, d, tmem=TensorMemory(), a_tmem=0, d_tmem=100, enable_input_d=False)


def test_fp4_container_in_tensor_memory():
    """f8f6f4 A in tensor memory: one fp4 per byte at bits 2-5 (mma.sync's container; not silicon-verified)."""
    tm = TensorMemory()
    vals = np.arange(128 * 32).reshape(128, 32) % 16
    tm.write_a(0, vals, 8, container="e2m1")
    assert tm.cells[0, 0] == (0 << 2) | (1 << 10) | (2 << 18) | (3 << 26)
    assert np.array_equal(tm.read_a(0, 128, 32, 8, container="e2m1"), vals)


def test_scales_from_tensor_memory():
    rng = np.random.default_rng(8)
    a, b = rng.integers(0, 16, (128, 64)), rng.integers(0, 16, (64, 64))
    sa, sb = rng.integers(110, 140, (128, 2)), rng.integers(110, 140, (64, 2))
    smem, da, db = place(a, b, "e2m1", "e2m1")
    d = InstrDescriptor("mxf4", "e2m1", "e2m1", m=128, n=64, a_scale_id=2, b_scale_id=0)
    want = tcgen05_mma(smem, da, db, d, scale_a=sa, scale_b=sb)
    tm = TensorMemory()
    tm.write_scales(200, sa, sf_id=2)
    tm.write_scales(300, sb, sf_id=0)
    assert tm.cells[33, 201] >> 16 == sa[33, 0] | sa[33, 1] << 8 and tm.cells[97, 201] == tm.cells[33, 201]
    got = tcgen05_mma(smem, da, db, d, tmem=tm, scale_a=200, scale_b=300)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    tm.cells[64 + 5, 200] ^= 1 << 16
    with pytest.raises(TmemError, match="duplicated into all four"):
        tcgen05_mma(smem, da, db, d, tmem=tm, scale_a=200, scale_b=300)


def test_cta_pair_equals_two_halves():
    """cta_group::2, M = 256: A's rows and B's columns split between the CTAs (CuTe's 2-SM atoms); each CTA's
    D equals a cta_group::1 M = 128 on its A half and the whole B."""
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((256, 16)).astype(np.float16), rng.standard_normal((64, 16)).astype(np.float16)
    pair = [place(a[:128], b[:32], "f16", "f16")[0], place(a[128:], b[32:], "f16", "f16")[0]]
    tms = [TensorMemory(), TensorMemory()]
    got = tcgen05_mma(pair, desc(A_AT), desc(B_AT), InstrDescriptor("f16", "f16", "f16", m=256, n=64), cta_group=2,
                      tmem=tms, d_tmem=0, enable_input_d=False)
    whole = place(a[:128], b, "f16", "f16")[0]
    for i in range(2):
        whole.write_operand(desc(A_AT), a[128 * i:128 * i + 128], dtype="f16")
        half = tcgen05_mma(whole, desc(A_AT), desc(B_AT), InstrDescriptor("f16", "f16", "f16", m=128, n=64))
        assert np.array_equal(got[128 * i:128 * i + 128].view(np.uint32), half.view(np.uint32))
        assert np.array_equal(tms[i].read_d(0, 256, 64, "f32", cta_group=2), half.view(np.uint32))


def test_cta_pair_with_a_in_tensor_memory():
    """cta_group::2 M = 256 with A in each CTA's tensor memory (lanes 0-127, CuTe's 2-SM TS atoms) gives the
    bits of A from shared memory."""
    rng = np.random.default_rng(10)
    a, b = rng.standard_normal((256, 16)).astype(np.float16), rng.standard_normal((64, 16)).astype(np.float16)
    pair = [place(a[:128], b[:32], "f16", "f16")[0], place(a[128:], b[32:], "f16", "f16")[0]]
    d = InstrDescriptor("f16", "f16", "f16", m=256, n=64)
    want = tcgen05_mma(pair, desc(A_AT), desc(B_AT), d, cta_group=2)
    tms = [TensorMemory(), TensorMemory()]
    for i in range(2):
        tms[i].write_a(8, a[128 * i:128 * i + 128].view(np.uint16), 16, cta_group=2)
    got = tcgen05_mma(pair, None, desc(B_AT), d, cta_group=2, tmem=tms, a_tmem=8)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


# ---- refusals name the field and the rule -------------------------------------------------------------

@pytest.mark.parametrize("kw,field,match", [
    (dict(kind="i8", dtype_a="s8", dtype_b="s8", m=64, n=40, dtype_d="s32"), "n", "48..256"),
    (dict(kind="mxf8f6f4", dtype_a="e4m3", dtype_b="e4m3", m=128, n=8, sparse=True), "sparse_meta", "pass the metadata"),
    (dict(kind="f16", dtype_a="f16", dtype_b="f16", m=64, n=8, max_shift=1), "max_shift", "tcgen05.mma.ws"),
    (dict(kind="f16", dtype_a="f16", dtype_b="f16", m=32, n=64), "m", "M = 32 is a .ws shape"),
    (dict(kind="mxf4", dtype_a="e2m1", dtype_b="e2m1", m=128, n=8, k96=True), "k96", "sm_103a"),
    (dict(kind="f16", dtype_a="f16", dtype_b="f16", m=256, n=8), "m", "Table 39"),  # M = 256 needs the pair
    (dict(kind="f8f6f4", dtype_a="e4m3", dtype_b="e4m3", m=64, n=8, transpose_b=True), "n", "Table 50"),
])
def test_forms_refused(kw, field, match):
    smem = SharedMemory("sm100")
    with pytest.raises(LayoutError, match=match) as e:
        tcgen05_mma(smem, desc(A_AT), desc(B_AT), InstrDescriptor(**kw))
    assert e.value.field == field


def test_operand_rules_refused():
    smem, da, db = place(np.zeros((64, 16), np.float16), np.zeros((8, 16), np.float16), "f16", "f16")
    f16 = InstrDescriptor("f16", "f16", "f16", m=64, n=8)
    with pytest.raises(LayoutError, match="0..15") as e:
        tcgen05_mma(smem, da, db, f16, scale_input_d=16)
    assert e.value.field == "scale_input_d"
    with pytest.raises(LayoutError, match="kind=") as e:
        tcgen05_mma(smem, da, db, f16.encode())
    assert np.array_equal(tcgen05_mma(smem, da, db, f16.encode(), kind="f16"), tcgen05_mma(smem, da, db, f16))
    with pytest.raises(LayoutError, match="32-byte atoms") as e:
        tcgen05_mma(smem, da, db, InstrDescriptor("tf32", "tf32", "tf32", m=64, n=8, transpose_a=True))
    with pytest.raises(LayoutError, match="scale_a") as e:
        tcgen05_mma(smem, da, db, InstrDescriptor("mxf4nvf4", "e2m1", "e2m1", m=128, n=8))
    with pytest.raises(LayoutError, match=r"\.block16"):
        tcgen05_mma(smem, da, db, InstrDescriptor("mxf4nvf4", "e2m1", "e2m1", m=128, n=8), scale_a=np.zeros((128, 4), int),
                    scale_b=np.zeros((8, 4), int))
    with pytest.raises(LayoutError, match="ue4m3 scales takes"):
        tcgen05_mma(smem, da, db, InstrDescriptor("mxf4nvf4", "e2m1", "e2m1", m=128, n=8, scale_type="ue4m3"),
                    scale_a=np.zeros((128, 2), int), scale_b=np.zeros((8, 2), int), block_size_k=32)
    with pytest.raises(LayoutError, match="steps of 16"):
        tcgen05_mma(smem, None, db, InstrDescriptor("f16", "f16", "f16", m=128, n=8), tmem=TensorMemory(), a_tmem=0)
