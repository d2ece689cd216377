"""tcgen05 instruction descriptors: PTX Tables 42-44, every field, round trips, refusals."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from tcemu import DescriptorError
from tcemu.instr import KINDS, InstrDescriptor


@given(st.integers(0, (1 << 32) - 1), st.sampled_from(KINDS))
def test_decode_is_exact_or_refused(value, kind):
    try:
        d = InstrDescriptor.decode(value, kind)
    except DescriptorError as e:
        assert e.field in ("dtype_a", "dtype_b", "dtype_d", "scale_type", "reserved", "saturate", "negate_a",
                           "negate_b", "transpose_a", "transpose_b", "a_scale_id", "b_scale_id")
        return
    assert d.encode() == value and d.kind == kind


def test_table42_field_positions():
    d = InstrDescriptor("f8f6f4", "e2m3", "e2m1", m=128, n=248, dtype_d="f16", negate_a=True, transpose_b=True,
                        sparse=True, sparsity_selector=3, max_shift=2)
    v = d.encode()
    assert (v & 3, v >> 2 & 1, v >> 4 & 3, v >> 7 & 7, v >> 10 & 7) == (3, 1, 0, 3, 5)
    assert (v >> 13 & 1, v >> 14 & 1, v >> 15 & 1, v >> 16 & 1) == (1, 0, 0, 1)
    assert (v >> 17 & 63, v >> 24 & 31, v >> 30) == (31, 8, 2)
    assert InstrDescriptor("i8", "s8", "u8", m=64, n=8, dtype_d="s32", saturate=True).encode() == \
        1 << 3 | 2 << 4 | 1 << 7 | 0 << 10 | 1 << 17 | 4 << 24
    assert InstrDescriptor("tf32", "tf32", "tf32", m=64, n=8).encode() == 1 << 4 | 2 << 7 | 2 << 10 | 1 << 17 | 4 << 24


def test_block_scaled_field_positions():
    v = InstrDescriptor("mxf8f6f4", "e4m3", "e5m2", m=256, n=256, a_scale_id=3, b_scale_id=1).encode()
    assert (v >> 4 & 3, v >> 7 & 7, v >> 10 & 7, v >> 17 & 63, v >> 23 & 1, v >> 27 & 3, v >> 29 & 3) == \
        (1, 0, 1, 32, 1, 2, 3)
    v = InstrDescriptor("mxf4nvf4", "e2m1", "e2m1", m=128, n=64, scale_type="ue4m3", k96=True).encode()
    assert (v >> 7 & 7, v >> 10 & 3, v >> 23 & 1, v >> 27 & 3, v >> 31) == (1, 1, 0, 1, 1)


@pytest.mark.parametrize("kw,field", [
    (dict(kind="f16", dtype_a="e4m3", dtype_b="f16", m=64, n=8), "dtype_a"),
    (dict(kind="tf32", dtype_a="tf32", dtype_b="tf32", m=64, n=8, dtype_d="f16"), "dtype_d"),
    (dict(kind="i8", dtype_a="s8", dtype_b="s8", m=64, n=8, dtype_d="s32", negate_a=True), "negate_a"),
    (dict(kind="f16", dtype_a="f16", dtype_b="f16", m=64, n=8, saturate=True), "saturate"),
    (dict(kind="mxf4", dtype_a="e2m1", dtype_b="e2m1", m=128, n=8, transpose_a=True), "transpose_a"),
    (dict(kind="mxf4", dtype_a="e2m1", dtype_b="e2m1", m=128, n=8, scale_type="ue4m3"), "scale_type"),
    (dict(kind="mxf4nvf4", dtype_a="e2m1", dtype_b="e2m1", m=128, n=8, b_scale_id=1), "b_scale_id"),
    (dict(kind="f16", dtype_a="f16", dtype_b="f16", m=40, n=8), "m"),
    (dict(kind="mxf8f6f4", dtype_a="e4m3", dtype_b="e4m3", m=64, n=8), "m"),
    (dict(kind="f16", dtype_a="f16", dtype_b="f16", m=64, n=12), "n"),
])
def test_refusals_name_the_field(kw, field):
    d = InstrDescriptor(**kw)
    assert d.validate()[0][0] == field


def test_shape_rules():
    """PTX Table 39: cta_group::1 steps N by 8 (M = 64 or 128), cta_group::2 by 16; i8 skips 40."""
    assert InstrDescriptor("f16", "f16", "f16", m=128, n=24).validate() == []
    assert InstrDescriptor("f16", "f16", "f16", m=128, n=24).validate(cta_group=2) == [
        ("n", "N = 24: .kind::f16 M = 128 cta_group::2 takes N 16..256 in steps of 16 (PTX Table 39)")]
    assert InstrDescriptor("f16", "f16", "f16", m=64, n=24).validate() == []
    assert InstrDescriptor("f16", "f16", "f16", m=64, n=24).validate(cta_group=2)[0][0] == "m"
    assert InstrDescriptor("f16", "f16", "f16", m=256, n=24).validate()[0][0] == "n"  # M = 256 implies ::2
    i8 = [n for n in range(8, 257, 8) if not InstrDescriptor("i8", "s8", "s8", m=64, n=n, dtype_d="s32").validate()]
    assert i8 == [8, 16, 24, 32] + list(range(48, 257, 16))
    assert InstrDescriptor("mxf8f6f4", "e4m3", "e4m3", m=128, n=8).validate() == []
    assert InstrDescriptor("f16", "bf16", "bf16", m=64, n=8, dtype_d="f16").validate()[0][0] == "dtype_d"
    with pytest.raises(DescriptorError, match="kind"):
        InstrDescriptor("f32", "f16", "f16", m=64, n=8)
    with pytest.raises(DescriptorError, match="reserved"):
        InstrDescriptor.decode(1 << 23 | 1 << 4 | 2 << 7 | 2 << 10 | 1 << 17 | 4 << 24, "tf32")


def test_decode_accepts_numpy_and_hex_strings():
    d = InstrDescriptor("f16", "bf16", "bf16", m=128, n=256)
    assert InstrDescriptor.decode(np.uint32(d.encode()), "f16") == d == InstrDescriptor.decode(hex(d.encode()), "f16")
    with pytest.raises(DescriptorError, match="integer literal"):
        InstrDescriptor.decode("0xzz", "f16")
