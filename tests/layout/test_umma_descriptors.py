"""sm100 (tcgen05) shared-memory descriptors and addressing.

Anchors (not silicon: no Blackwell here): PTX 9.7.16 / CuTe's UMMA::SmemDescriptor field layout, the
two worked examples of shared/spec/blog-blackwell-smem-descriptor.md, and CuTe's Swizzle<2,5,2> for
the 32-byte-atom 128B mode; tile layouts below are written independently with pycute.
"""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from pycute import Layout, Swizzle

import tcemu
from tcemu import DescriptorError, LayoutError
from tcemu.layout.descriptors import SM100_RESERVED_MASK, UmmaDescriptor

BASE = 0x4000  # 1024-aligned tile start


@given(st.integers(0, (1 << 64) - 1))
def test_decode_encode_round_trip(value):
    code = value >> 61
    if code in (3, 5, 7):
        with pytest.raises(DescriptorError) as e:
            UmmaDescriptor.decode(value)
        assert e.value.field == "swizzle"
    else:
        assert UmmaDescriptor.decode(value).encode() == value


def test_field_positions_and_rules():
    d = UmmaDescriptor(0x400, 16, 1024, 5, "64B", version=1, lbo_mode=0)
    v = d.encode()
    assert (v & 0x3FFF, v >> 16 & 0x3FFF, v >> 32 & 0x3FFF, v >> 46 & 3, v >> 49 & 7, v >> 61) == (0x40, 1, 64, 1, 5, 4)
    assert UmmaDescriptor.decode(v) == d and d.validate() == []
    assert [f.field for f in UmmaDescriptor(0x400, version=0).validate()] == ["version"]   # the missing version bit
    assert [f.field for f in UmmaDescriptor(0x400, lbo_mode=1, swizzle="128B").validate()] == ["lbo_mode"]
    assert UmmaDescriptor.decode(1 << 61).swizzle is tcemu.SwizzleMode.B128_BASE32B
    assert UmmaDescriptor.decode(v | 1 << 48).validate()[0].field == "reserved_bits"
    assert SM100_RESERVED_MASK >> 48 & 1 and not SM100_RESERVED_MASK >> 52 & 1
    with pytest.raises(DescriptorError, match="desc: a GmmaDescriptor cannot describe an sm100 operand"):
        tcemu.operand_addresses(tcemu.GmmaDescriptor(0x400), rows=8, k=16, dtype="bf16", arch="sm100")


def swizzled(layout, sw, m, k):
    return np.array([[BASE + sw(layout(r, c)) for c in range(k)] for r in range(m)])  # BASE is 1024-aligned


def test_blog_example_kmajor_sw128():
    """(M=128, K=128) bf16, K-major, 128B swizzle: SBO 1024 B, LBO 16 B; MMA subtiles (64, 16) advance
    the start by 8192 B along M, 32 B along K inside an atom and 16384 B to the next 64 K."""
    tile = Layout(((8, 16), (64, 2)), ((128, 1024), (2, 16384)))  # bytes: atom 8 x 128 B, atoms along M then K
    want = swizzled(tile, Swizzle(3, 4, 3), 128, 128)
    for mt in range(2):
        for kt in range(8):
            start = BASE + mt * 8192 + (kt % 4) * 32 + (kt // 4) * 16384
            desc = UmmaDescriptor(start, 16, 1024, 0, "128B")
            got = tcemu.operand_addresses(desc.encode(), rows=64, k=16, dtype="bf16", major="K", arch="sm100")
            assert np.array_equal(got, want[64 * mt:64 * mt + 64, 16 * kt:16 * kt + 16]), (mt, kt)


def test_blog_example_mnmajor_sw64():
    """(M=128, K=128) bf16, MN-major, 64B swizzle: atoms of 32 (M) x 8 (K); LBO 8192 B between atoms
    along M, SBO 512 B along K; subtiles advance 16384 B along M and 1024 B along K."""
    tile = Layout(((32, 4), (8, 16)), ((2, 8192), (64, 512)))
    want = swizzled(tile, Swizzle(2, 4, 3), 128, 128)
    for mt in range(2):
        for kt in range(8):
            desc = UmmaDescriptor(BASE + mt * 16384 + kt * 1024, 8192, 512, 0, "64B")
            got = tcemu.operand_addresses(desc, rows=64, k=16, dtype="bf16", major="MN", arch="sm100")
            assert np.array_equal(got, want[64 * mt:64 * mt + 64, 16 * kt:16 * kt + 16]), (mt, kt)


@pytest.mark.parametrize("dtype,bits", [("bf16", 16), ("tf32", 32), ("e4m3", 8)])
def test_128b_base32b_is_cute_swizzle_2_5_2(dtype, bits):
    T = 128 // bits
    desc = UmmaDescriptor(BASE, 2048, 512, 0, "128B_base32B")  # LBO: next 8T of MN, SBO: next 4 of K
    canon = Layout(((T, 8, 2), (4, 4)), ((bits // 8, 16, 2048), (128, 512)))  # atom: 4 K-rows of 128 B (CuTe)
    want = swizzled(canon, Swizzle(2, 5, 2), 16 * T, 16)
    got = tcemu.operand_addresses(desc, rows=16 * T, k=16, dtype=dtype, major="MN", arch="sm100")
    assert np.array_equal(got, want)
    with pytest.raises(LayoutError, match="MN-major only"):
        tcemu.operand_addresses(desc, rows=16 * T, k=16 * T // 16, dtype=dtype, major="K", arch="sm100")


def test_sm100_transposes_and_fp4():
    desc = UmmaDescriptor(BASE, 128, 256)
    assert tcemu.operand_addresses(desc, rows=16, k=32, dtype="e4m3", major="MN", arch="sm100").shape == (16, 32)
    fp4 = tcemu.operand_addresses(desc, rows=8, k=64, dtype="e2m1", major="K", arch="sm100")
    assert fp4[0, :4].tolist() == [BASE, BASE, BASE + 1, BASE + 1] and fp4[0, 32] == BASE + 128  # two per byte
    with pytest.raises(LayoutError, match="e2m1 must be K-major on sm100"):
        tcemu.operand_addresses(desc, rows=32, k=8, dtype="e2m1", major="MN", arch="sm100")
    with pytest.raises(LayoutError, match="e4m3 must be K-major on sm90"):
        tcemu.operand_addresses(tcemu.GmmaDescriptor(BASE, 128, 256), rows=16, k=32, dtype="e4m3", major="MN")
