"""tcgen05 instruction descriptors: PTX Tables 42-44, every field, round trips, refusals."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from tcemu import DescriptorError
from tcemu.blackwell.instr import KINDS, InstrDescriptor


@given(st.integers(0, (1 << 32) - 1), st.sampled_from(KINDS))
def test_decode_is_exact_or_refused(value, kind):
    try:
        d = InstrDescriptor.decode(value, kind)
    except DescriptorError as e:
        assert e.field in ("dtype_a", "dtype_b", "dtype_d", "scale_type", "reserved", "saturate", "negate_a",
                           "negate_b", "transpose_a", "transpose_b", "a_scale_id", "b_scale_id",
                           "sparsity_selector", "k96")
        return
    assert d.encode() == value and d.kind == kind


def test_table42_field_positions():
    d = InstrDescriptor("f8f6f4", "e2m3", "e2m1", m=128, n=248, dtype_d="f16", negate_a=True, transpose_b=True,
                        sparse=True, max_shift=2)
    v = d.encode()
    assert (v & 3, v >> 2 & 1, v >> 4 & 3, v >> 7 & 7, v >> 10 & 7) == (0, 1, 0, 3, 5)
    assert InstrDescriptor("f16", "f16", "f16", m=128, n=8, sparse=True, sparsity_selector=3).encode() & 7 == 0b111
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


# ---- scale-factor ids per .scale_vec size (PTX 9.7.16.10.7.2-3: 1X byte offset 0-3, 2X half-word 0 or 2, 4X 0) ----

@pytest.mark.parametrize("kind,scale_type,legal", [
    ("mxf8f6f4", "ue8m0", {0, 1, 2, 3}),  # .scale_vec::1X: one scale byte per row, any byte of the cell
    ("mxf4", "ue8m0", {0, 2}),            # .scale_vec::2X: two bytes, at half-word 0 or 2
    ("mxf4nvf4", "ue8m0", {0, 2}),        # 2X (.block32); .block16 is checked by tcgen05_mma, which knows it
    ("mxf4nvf4", "ue4m3", {0}),           # .scale_vec::4X (nvfp4): four bytes fill the cell
])
def test_scale_ids_follow_the_scale_vec_size(kind, scale_type, legal):
    dtype = "e4m3" if kind == "mxf8f6f4" else "e2m1"
    for field in ("a_scale_id", "b_scale_id"):
        for sf_id in range(4):
            found = InstrDescriptor(kind, dtype, dtype, m=128, n=128, scale_type=scale_type,
                                    **{field: sf_id}).validate()
            if sf_id in legal:
                assert found == [], (field, sf_id, found)
            else:
                vec = "4X" if scale_type == "ue4m3" else "2X"
                assert [f for f, _ in found] == [field]
                assert found[0][1].startswith(f"{field} = {sf_id}: .scale_vec::{vec} reads ")
                assert "PTX 9.7.16.10.7.2-3" in found[0][1]


def test_nvfp4_descriptor_with_scale_id_2_is_refused_by_decode_cli_and_explain(capsys):
    """Hand-encoded per PTX Table 44: A e2m1 (1 << 7), B e2m1 (1 << 10), N = 128 (16 << 17), ue4m3 (bit 23 = 0),
    M = 128 (1 << 27), A scale id 2 (2 << 29) = 0x48200480; CuTe's block-scaled builder encodes it without a word."""
    from tcemu.cli import main
    from tcemu.tools.explain import explain
    with pytest.raises(DescriptorError) as e:
        InstrDescriptor.decode(0x48200480, "mxf4nvf4")
    assert e.value.field == "a_scale_id" and "four scale bytes per row, which fill its 32-bit" in e.value.rule
    assert main(["instr", "0x48200480", "--kind", "mxf4nvf4"]) == 2
    assert "a_scale_id: a_scale_id = 2: .scale_vec::4X" in capsys.readouterr().err
    bad = InstrDescriptor("mxf4nvf4", "e2m1", "e2m1", m=128, n=128, scale_type="ue4m3", b_scale_id=2)
    text = explain(0x4000404000010040, instr=bad, operand="b")
    assert "error: b_scale_id: b_scale_id = 2: .scale_vec::4X" in text
    assert InstrDescriptor.decode(0x08200480, "mxf4nvf4").a_scale_id == 0  # the same with id 0 is fine


def test_tensor_memory_scale_reads_and_writes_follow_the_rule():
    from tcemu import TensorMemory, TmemError
    tm = TensorMemory()
    four = np.arange(128 * 4).reshape(128, 4) % 251
    with pytest.raises(TmemError) as e:  # 4 bytes from byte 2 used to lose the upper two silently
        tm.write_scales(0, four, sf_id=2)
    assert e.value.field == "sf_id" and "do not fit the 32-bit tensor-memory cell" in e.value.rule
    tm.write_scales(0, four, sf_id=0)
    assert np.array_equal(tm.read_scales(0, 128, 4, 0), four)
    for nsf, sf_id, vec in ((4, 2, "4X"), (4, 1, "4X"), (2, 1, "2X"), (2, 3, "2X")):
        with pytest.raises(TmemError) as e:
            tm.read_scales(0, 128, nsf, sf_id)
        assert e.value.field == "sf_id" and f".scale_vec::{vec} reads" in e.value.rule
    assert np.array_equal(tm.read_scales(0, 128, 2, 2), four[:, 2:])
    assert np.array_equal(tm.read_scales(0, 128, 1, 3), four[:, 3:])  # 1X: any byte
    tm.write_scales(8, four[:, :2], sf_id=1)  # two 1X instructions' factors at bytes 1 and 2: a legal store
    assert np.array_equal(tm.read_scales(8, 128, 1, 2), four[:, 1:2])


def test_tcgen05_block16_ue8m0_takes_scale_id_0_only():
    """mxf4nvf4 with ue8m0 scales and .block16 is .scale_vec::4X: the descriptor alone (2X-legal id 2) cannot
    tell, tcgen05_mma with block_size_k=16 can."""
    from tcemu import LayoutError, SharedMemory, tcgen05_mma
    d = InstrDescriptor("mxf4nvf4", "e2m1", "e2m1", m=128, n=128, b_scale_id=2)
    assert d.validate() == []
    s = np.zeros((128, 4), np.uint8)
    with pytest.raises(LayoutError) as e:
        tcgen05_mma(SharedMemory("sm100"), 0x4000404000010040, 0x4000404000010040, d, scale_a=s, scale_b=s,
                    block_size_k=16)
    assert e.value.field == "b_scale_id" and ".scale_vec::4X" in e.value.rule and ".block16" in e.value.rule


# ---- 64-bit runtime instruction descriptors (issue 13's friction) ----

def test_runtime_64bit_instruction_descriptor_is_the_32bit_value_shifted():
    """DeepGEMM's sm100 MXFP8 mainloop (deep_gemm/include/deep_gemm/mma/sm100.cuh, make_runtime_instr_desc_with_sf_id)
    and CuTe's make_runtime_instr_desc (cute/arch/mma_sm100_desc.hpp) hand tcgen05.mma the 32-bit descriptor in
    bits 32-63 of a 64-bit value. Hand-encoded per PTX Table 43: B sf id 1 at bit 4 (0x10), N = 256 -> 32 << 17
    (0x400000), ue8m0 at bit 23 (0x800000), M = 128 -> 1 << 27 (0x8000000), A sf id 1 at bit 29 (0x20000000)."""
    from tcemu import InstrDescriptor
    import numpy as np
    want = InstrDescriptor("mxf8f6f4", "e4m3", "e4m3", m=128, n=256, a_scale_id=1, b_scale_id=1)
    assert want.encode() == 0x28C00010
    for value in (0x28C0001000000000, np.uint64(0x28C0001000000000), "0x28c00010_00000000", 0x28C00010):
        assert InstrDescriptor.decode(value, "mxf8f6f4") == want



def test_64bit_value_with_a_low_half_says_shift_by_32_in_hex():
    from tcemu import DescriptorError, GmmaDescriptor, InstrDescriptor
    with pytest.raises(DescriptorError) as e:
        InstrDescriptor.decode(0x0840049000000400, "f16")
    assert e.value.field == "descriptor"
    assert "0x0840049000000400 has 64 bits" in e.value.rule and "0x00000400" in e.value.rule
    assert "shift right by 32 (0x08400490)" in e.value.rule
    with pytest.raises(DescriptorError, match="0x10000000000000000 is not a 32-bit instruction descriptor"):
        InstrDescriptor.decode(1 << 64, "f16")
    with pytest.raises(DescriptorError, match="unsigned 64-bit integer, got 0x10000000000000000"):
        GmmaDescriptor.decode(1 << 64)
    with pytest.raises(DescriptorError, match="got -0x1"):
        GmmaDescriptor.decode(-1)
