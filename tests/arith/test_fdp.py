"""The fused dot-product engine against an independent exact-rational reference (tests/support/fdp_reference.py),
and its special rules."""
import functools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

from tcemu.arith import formats
from tcemu.core.errors import LayoutError
from tcemu.arith.fdp import RNE, RZ, FdpUnit, decode_operand, fused_dot, integer_dot, integer_dot_batch

from fdp_reference import reference

BF16_F32 = FdpUnit(25, "f32", 23, RZ)
F16_F16 = FdpUnit(25, "f16", 10, RNE)
FP8_F32 = FdpUnit(13, "f32", 13, RZ)


@functools.cache
def _finite(fmt):
    """Which bit patterns of a format of at most 16 bits are finite (a table, instead of a decode per draw)."""
    f = formats.FLOAT_FORMATS[fmt]
    return np.isfinite(formats.decode(np.arange(1 << f.bits), fmt)).tolist() if f.bits <= 16 else None


def finite_bits(fmt, draw_int):
    f, table = formats.FLOAT_FORMATS[fmt], _finite(fmt)
    while True:
        b = draw_int(0, (1 << f.bits) - 1)
        if table[b] if table is not None else np.isfinite(formats.decode(np.array([b]), fmt)[0]):
            return b


@pytest.mark.parametrize("fa,fc,unit,k", [("bf16", "f32", BF16_F32, 16), ("f16", "f16", F16_F16, 16),
                                          ("e4m3", "f32", FP8_F32, 32), ("e5m2", "f32", FP8_F32, 32)])
@given(data=st.data())
@pytest.mark.slow
def test_engine_matches_exact_reference(fa, fc, unit, k, data):
    draw = lambda lo, hi: data.draw(st.integers(lo, hi))
    a = [finite_bits(fa, draw) for _ in range(k)]
    b = [finite_bits(fa, draw) for _ in range(k)]
    c = finite_bits(fc, draw) if data.draw(st.booleans()) else None
    want = reference(a, b, c, fa, fa, fc, unit)
    A = decode_operand(np.array([a], np.uint32), fa)
    B = decode_operand(np.array([b], np.uint32), fa)
    C = decode_operand(np.array([[c]], np.uint32), fc) if c is not None else None
    got = int(fused_dot(A, B, C, unit)[0, 0])
    if want is None:  # exact zero: +0 whatever the signs (signed_zero off; test_zero_sign_is_a_unit_property)
        assert got == 0
    else:
        assert got == want, (a, b, c)


def bf16(*values):
    return np.array(values, ml_dtypes.bfloat16).view(np.uint16)


def dot(a, b, c=None, unit=BF16_F32, fmt="bf16", cfmt="f32"):
    C = None if c is None else decode_operand(np.array([[c]], np.uint32), cfmt)
    return int(fused_dot(decode_operand(a[None], fmt), decode_operand(b[None], fmt), C, unit)[0, 0])


def test_truncation_below_the_largest_exponent():
    # 2^0 + 2^-30: the small term lies below 2^(0 - 25) and is truncated away before the sum.
    assert dot(bf16(1.0, 2.0 ** -30), bf16(1.0, 1.0)) == 0x3F800000
    # 2^0 + 2^-24 survives (F = 25), then RZ to f32 drops it: still 1.0; 3 * 2^-24 + 1 keeps 2^-23.
    assert dot(bf16(1.0, 2.0 ** -23), bf16(1.0, 1.0)) == 0x3F800001
    # products are not renormalised: 1.5 * 1.5 = 2.25 aligns at 2^0, so a 2^-25 term survives and rounds off
    assert dot(bf16(1.5, 2.0 ** -25, -(2.0 ** -25)), bf16(1.5, 1.0, 1.0)) == np.float32(2.25).view(np.uint32)


def test_round_toward_zero_f32_and_nearest_even_f16():
    # 1 + 2^-24 + 2^-24*(1/2): exact sum needs 26 bits; RZ drops the tail (RNE would round up).
    assert dot(bf16(1.0, 2.0 ** -24, 2.0 ** -25), bf16(1.0, 1.0, 1.0)) == 0x3F800000
    assert dot(bf16(-1.0, -(2.0 ** -23), -(2.0 ** -24)), bf16(1.0, 1.0, 1.0)) == 0xBF800001
    # f16 RNE: 1 + 2^-11 (a tie) rounds to even 1.0; 1 + 3*2^-11 rounds up to 1 + 2^-9.
    h = lambda *v: np.array(v, np.float16).view(np.uint16)
    assert dot(h(1.0, 2.0 ** -11), h(1.0, 1.0), unit=F16_F16, fmt="f16") == 0x3C00
    assert dot(h(1.0, 3 * 2.0 ** -11), h(1.0, 1.0), unit=F16_F16, fmt="f16") == 0x3C02


def test_special_values():
    nan32, nan16 = 0x7FFFFFFF, 0x7FFF
    inf = float("inf")
    assert dot(bf16(inf, 1.0), bf16(0.0, 1.0)) == nan32               # inf * 0
    assert dot(bf16(inf, inf), bf16(1.0, -1.0)) == nan32              # +inf + -inf
    assert dot(bf16(float("nan"), 1.0), bf16(1.0, 1.0)) == nan32      # NaN in
    assert dot(bf16(inf, 2.0 ** 100), bf16(-1.0, 1.0)) == 0xFF800000  # a single -inf
    assert dot(bf16(1.0), bf16(1.0), c=0x7F800000) == 0x7F800000      # inf from C
    h = np.array([np.inf, 0.0], np.float16).view(np.uint16)
    assert dot(h, np.array([0.0, 1.0], np.float16).view(np.uint16), unit=F16_F16, fmt="f16") == nan16


ZERO_SIGN_CASES = [  # (a, b, C bits or None, sign under IEEE 754's rule for sums: -0 only when every term is -0)
    (bf16(-0.0, 0.0), bf16(1.0, -1.0), None, 0x80000000),        # every term -0
    (bf16(-0.0, 0.0), bf16(1.0, 1.0), None, 0),                   # one +0 term
    (bf16(1.0, -1.0), bf16(1.0, 1.0), None, 0),                   # cancellation
    (bf16(-0.0), bf16(1.0), 0x80000000, 0x80000000),              # -0 products and -0 C
    (bf16(-0.0), bf16(1.0), 0, 0)]


def test_zero_sign_is_a_unit_property():
    """An exact zero sum is +0 whatever the signs of its terms: the H100 gives +0 in every dense (tf32, f16, bf16,
    e4m3 -> f32, f16 -> f16) and sparse case where every product and C are -0 (traces/wgmma_zero_sign_sm90.npz,
    traces/wgmma_sp_numerics_sm90.npz), and every unit tcemu models follows it. signed_zero=True is IEEE 754's
    rule, kept to replay traces against it; the general path (special values) and the fast path agree."""
    from tcemu.blackwell.mma import fdp_unit as bw_unit
    from tcemu.hopper.wgmma import fdp_unit as hopper_unit
    units = [hopper_unit(t, d) for t, d in (("tf32", "f32"), ("f16", "f16"), ("bf16", "f32"), ("e4m3", "f32"))]
    units += [bw_unit(k, d) for k, d in (("f16", "f32"), ("f16", "f16"), ("mxf4", "f32"))]
    assert not any(u.signed_zero for u in units)
    signed = BF16_F32._replace(signed_zero=True)
    for a, b, c, ieee in ZERO_SIGN_CASES:
        assert dot(a, b, c) == 0, (a, b, c)
        assert dot(a, b, c, unit=signed) == ieee, (a, b, c)
    f16_signed = F16_F16._replace(signed_zero=True)
    h = np.array([-0.0, 0.0], np.float16).view(np.uint16)
    one = np.array([1.0, -1.0], np.float16).view(np.uint16)
    C = decode_operand(np.array([[0x8000]], np.uint16), "f16")
    for unit, want in ((F16_F16, 0), (f16_signed, 0x8000)):
        assert int(fused_dot(decode_operand(h[None], "f16"), decode_operand(one[None], "f16"), C, unit)[0, 0]) == want
    # a row with an inf elsewhere in the batch takes the general path for its own lanes only; a NaN C too
    A = decode_operand(bf16(-0.0, 0.0)[None].repeat(2, axis=0), "bf16")
    B = decode_operand(np.stack([bf16(1.0, -1.0), bf16(float("inf"), 1.0)]), "bf16")
    for unit, want in ((BF16_F32, 0), (signed, 0x80000000)):
        got = fused_dot(A, B, None, unit)
        assert int(got[0, 0]) == want and int(got[0, 1]) == 0x7FFFFFFF  # -0 * inf: NaN


def test_zero_c_when_absent_is_a_zero_term_at_the_floor():
    """bf16 2^-74 * 2^-74 + 2^-80 * -2^-80 = 2^-148 - 2^-160. Without a C term the largest alignment exponent is
    -148, the -2^-160 term is kept (2^-173 grid) and RZ to f32 gives 2^-149 (0x00000001). With a +0 accumulator
    (C = +0 given, or zero_c_when_absent: the H100's scale-d = 0, traces/wgmma_zero_sign_sm90.npz floor_*_noc)
    the zero term counts at -133, the grid is 2^-158 and -2^-160 truncates to 0: 2^-148 (0x00000002)."""
    from tcemu.hopper.wgmma import fdp_unit as hopper_unit
    a, b = bf16(2.0 ** -74, 2.0 ** -80), bf16(2.0 ** -74, -(2.0 ** -80))
    assert dot(a, b) == 0x00000001
    assert dot(a, b, c=0) == 0x00000002
    assert dot(a, b, unit=BF16_F32._replace(zero_c_when_absent=True)) == 0x00000002
    hopper = hopper_unit("bf16", "f32")
    assert hopper.zero_c_when_absent and dot(a, b, unit=hopper) == 0x00000002
    assert dot(a, b, unit=hopper._replace(zero_c_when_absent=False)) == 0x00000001


def test_overflow_and_subnormal_results():
    big = bf16(2.0 ** 127, 2.0 ** 127)
    assert dot(big, bf16(2.0, 2.0)) == 0x7F800000                     # 2^129 overflows f32
    tiny = dot(bf16(2.0 ** -100), bf16(2.0 ** -40))                   # 2^-140: f32 subnormal
    assert tiny == np.float32(2.0 ** -140).view(np.uint32)


def test_fp8_result_keeps_13_fraction_bits():
    e4 = lambda *v: np.array(v, ml_dtypes.float8_e4m3fn).view(np.uint8)
    # 256 + 1/64: 2^-6 is 14 bits below 2^8 -> truncated (F = 13 on the sum)
    assert dot(e4(16.0, 0.125), e4(16.0, 0.125), unit=FP8_F32, fmt="e4m3") == np.float32(256.0).view(np.uint32)
    # 256 + 2^-5 = 2^8 * (1 + 2^-13): kept
    assert dot(e4(16.0, 0.25), e4(16.0, 0.125), unit=FP8_F32, fmt="e4m3") == np.float32(256 + 2 ** -5).view(np.uint32)


def test_integer_dot_wraps_and_saturates():
    a = np.full((1, 32), 127)
    b = np.full((1, 32), 127)
    c = np.array([[2 ** 31 - 1]])
    assert integer_dot(a, b, c)[0, 0] == np.int64(2 ** 31 - 1 + 32 * 127 * 127 - 2 ** 32)
    assert integer_dot(a, b, c, satfinite=True)[0, 0] == 2 ** 31 - 1
    assert integer_dot(-a, b, -c - 1, satfinite=True)[0, 0] == -(2 ** 31)
    bits = np.array([[1, 0, 1, 1]])
    assert integer_dot(bits, np.array([[1, 1, 1, 0]]), np.array([[5]]), popc=True)[0, 0] == 7


@pytest.mark.parametrize("satfinite", [False, True])
def test_integer_dot_batch_is_integer_dot_product_by_product(satfinite):
    """The batch (the sparse wgmma's one product per A row) against integer_dot one product at a time, with C
    near both ends of the s32 range so that some sums wrap or saturate."""
    rng = np.random.default_rng(9)
    A = rng.integers(-128, 128, (3, 2, 32))
    B = rng.integers(0, 256, (4, 5, 32))
    C = rng.choice([0, 2 ** 31 - 1, -(2 ** 31), 12345], (6, 2, 5))
    a_of, b_of = np.array([0, 2, 1, 1, 0, 2]), np.array([3, 0, 0, 2, 1, 3])
    got = integer_dot_batch(A, B, C, a_of=a_of, b_of=b_of, satfinite=satfinite)
    want = np.stack([integer_dot(A[i], B[j], C[g], satfinite=satfinite) for g, (i, j) in enumerate(zip(a_of, b_of))])
    assert got.dtype == np.int32 and np.array_equal(got, want)
    assert (want == 2 ** 31 - 1).any() == satfinite   # the cases reach the clamp (and wrap without it)
    assert np.array_equal(integer_dot_batch(A, B[:3], None), np.stack([integer_dot(A[g], B[g], None) for g in range(3)]))
    with pytest.raises(LayoutError, match="b_of"):
        integer_dot_batch(A, B, None, b_of=[0, 1, 4])
    with pytest.raises(LayoutError, match="K = 32"):
        integer_dot_batch(A, B[..., :16], None, b_of=[0, 1, 2])
