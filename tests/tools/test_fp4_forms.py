"""fp4 / fp6 in shared memory: one packed / padded rule (dtypes.is_padded) for read_operand, check_operand,
suggest_descriptor, explain and TMA (issue 13, "False alarms and misses", first item)."""
import numpy as np
import pytest

import tcemu
from tcemu import InstrDescriptor, LayoutError, SharedMemory, UmmaDescriptor, tma_load, tma_placement
from tcemu.tools.check import check_operand, check_tile, suggest_descriptor
from tcemu.arith.dtypes import is_padded, placement_dtype
from tcemu.tools.explain import explain, instruction_k


def _pack(values, width):
    """Rows of `width`-bit values packed little-endian (element i at bit width*i), as uint8 bytes."""
    bits = (values[:, :, None] >> np.arange(width)) & 1
    return np.packbits(bits.reshape(values.shape[0], -1), axis=1, bitorder="little")


def _desc(start):
    return UmmaDescriptor(start_address=start, lbo=16, sbo=1024, swizzle="128B", version=1)


def test_the_rule():
    assert (is_padded("e2m1"), is_padded("e2m3"), is_padded("e2m1", kind="f8f6f4"), is_padded("e2m1", kind="mxf4"),
            is_padded("e4m3", True)) == (False, True, True, False, False)
    assert (placement_dtype("e2m1", True), placement_dtype("e2m1"), placement_dtype("e3m2")) == ("u8", "e2m1", "e3m2")
    assert (instruction_k("e2m1", "sm100"), instruction_k("e2m1", "sm100", padded=True),
            instruction_k("e2m3", "sm100")) == (64, 32, 32)
    with pytest.raises(LayoutError) as e:
        is_padded("e2m3", False)
    assert e.value.field == "padded" and ".b6x16_p32" in e.value.rule
    with pytest.raises(LayoutError, match="kind::f8f6f4 reads e2m1 padded"):
        is_padded("e2m1", False, kind="f8f6f4")
    with pytest.raises(LayoutError, match="must be K-major"):
        placement_dtype("e2m1", True, major="MN")


class TestDeepGemmFp4B:
    """DeepGEMM's sm100 fp8 x fp4 GEMM (deep_gemm/include/deep_gemm/impls/sm100_fp8_fp4_gemm_1d1d.cuh,
    csrc/jit_kernels/impls/runtime_utils.hpp): kind::mxf8f6f4 (SM100_MMA_MXF8F6F4_SS), the fp4 operand typed
    float_e2m1_unpacksmem_t and loaded by TMA as 16U4_ALIGN16B, 128B swizzle, BLOCK_K = 128, UMMA_K = 32, the
    descriptor start advanced 32 bytes (32 one-byte slots) per UMMA K block (advance_umma_desc_lo)."""
    N = 64

    def setup_method(self):
        rng = np.random.default_rng(13)
        self.vals = rng.integers(0, 16, (self.N, 256))
        smem = SharedMemory("sm100")
        box = tma_load(smem, 0x400, _pack(self.vals, 4), box=[128, self.N], coords=[0, 0], swizzle="128B",
                       data_type="16U4_ALIGN16B")
        self.smem, self.tile = smem, tma_placement(box, rows=1, k=0)  # (N, 128) slots of K block 0..3
        self.idesc = InstrDescriptor("mxf8f6f4", "e4m3", "e2m1", m=128, n=self.N)

    def test_natural_dtype_with_the_padded_form_reads_exactly(self):
        written = self.tile[:, :32]
        assert check_operand(written, _desc(0x400), dtype="e2m1", padded=True, arch="sm100").ok
        assert check_operand(written, _desc(0x400), instr=self.idesc, operand="B").ok  # the kind says padded
        got = self.smem.read_operand(_desc(0x400), rows=self.N, k=32, dtype="e2m1", padded=True)
        assert np.array_equal(got, self.vals[:, :32])

    def test_packed_reading_is_caught_and_the_padded_form_named(self):
        written = self.tile[:, :32]
        report = check_operand(written, _desc(0x400), dtype="e2m1", padded=False, arch="sm100")
        # packed e2m1: element k at byte k // 2 of the row; padded slots are one byte each, so every element but
        # k = 0 of each row is read elsewhere: 31 of 32 per row
        assert (report.ok, report.wrong, report.total) == (False, 31 * self.N, 32 * self.N)
        assert report.lines[-1] == ("hint: the placement is e2m1 padded (16 values then padding per 16 bytes, as "
                                    "TMA's 16U4_ALIGN16B writes it for kind::f8f6f4); this descriptor reads it "
                                    "exactly with padded=True, or with the instruction (instr=: .kind::f8f6f4 and "
                                    ".kind::mxf8f6f4 read it so)")
        with pytest.raises(LayoutError) as e:
            suggest_descriptor(written, dtype="e2m1", padded=False, arch="sm100")
        assert e.value.rule.startswith("no e2m1 packed layout reads this placement, but it is e2m1 padded: "
                                       "suggest_descriptor(..., padded=True) gives UmmaDescriptor(start_address=0x400, "
                                       "lbo=0x10, sbo=0x400, base_offset=0, swizzle=128B, version=1")
        assert suggest_descriptor(written, dtype="e2m1", padded=True, arch="sm100") == _desc(0x400)
        assert suggest_descriptor(written, instr=self.idesc, operand="B") == _desc(0x400)

    def test_the_kind_refuses_the_other_form(self):
        with pytest.raises(LayoutError) as e:
            check_operand(self.tile[:, :32], _desc(0x400), instr=self.idesc, operand="B", padded=False)
        assert e.value.field == "padded" and ".kind::mxf8f6f4 reads e2m1 padded" in e.value.rule

    def test_whole_tile_with_a_packed_advance(self):
        """The planted bug: the K step computed for packed fp4 (32 elements x 4 bits = 16 bytes) instead of the
        32 one-byte slots the padded form takes: block kb starts 16 * kb bytes in, i.e. at slot 16 * kb."""
        good = check_tile(self.tile, _desc(0x400), instr=self.idesc, operand="B", start_advance=32)
        assert good.ok and [b.read_block for b in good.blocks] == [0, 1, 2, 3]
        bad = check_tile(self.tile, _desc(0x400), instr=self.idesc, operand="B", start_advance=16)
        why = " (start advanced 16 bytes per block, expected 32)"
        assert [b.text for b in bad.blocks] == [
            "K block 0: reads tile columns 0-31",
            "K block 1 read tile columns 16-47 (expected 32-63: the data of K blocks 0 and 1)" + why,
            "K block 2 read the data of K block 1" + why,
            "K block 3 read tile columns 48-79 (expected 96-127: the data of K blocks 1 and 2)" + why]


def test_align8b_is_packed_and_the_padded_reading_is_named():
    """kind::mxf4 reads packed e2m1 (CuTe's float_e2m1_t; TMA 16U4_ALIGN8B): two per byte, K = 64 per MMA."""
    rng = np.random.default_rng(3)
    smem = SharedMemory("sm100")
    box = tma_load(smem, 0x800, _pack(rng.integers(0, 16, (32, 256)), 4), box=[256, 32], coords=[0, 0],
                   swizzle="128B", data_type="16U4_ALIGN8B")
    written = tma_placement(box, rows=1, k=0)[:, :64]
    assert check_operand(written, _desc(0x800), dtype="e2m1", arch="sm100").ok
    assert check_operand(written, _desc(0x800), instr=InstrDescriptor("mxf4", "e2m1", "e2m1", m=128, n=32),
                         operand="B").ok
    report = check_operand(written, _desc(0x800), dtype="e2m1", padded=True, arch="sm100")
    assert not report.ok and report.lines[-1] == (
        "hint: the placement is e2m1 packed (two values per byte, as TMA's 16U4_ALIGN8B writes it for kind::mxf4*); "
        "this descriptor reads it exactly with padded=False, or with the instruction (instr=: .kind::mxf4 and "
        ".kind::mxf4nvf4 read it so)")


def test_fp6_is_padded_by_default_everywhere():
    rng = np.random.default_rng(4)
    smem = SharedMemory("sm100")
    box = tma_load(smem, 0x400, _pack(rng.integers(0, 64, (64, 128)), 6), box=[128, 64], coords=[0, 0],
                   swizzle="128B", data_type="16U6_ALIGN16B")
    written = tma_placement(box, rows=1, k=0)[:, :32]
    assert check_operand(written, _desc(0x400), dtype="e2m3", arch="sm100").ok
    assert suggest_descriptor(written, dtype="e3m2", arch="sm100") == _desc(0x400)
    with pytest.raises(LayoutError) as e:
        check_operand(written, _desc(0x400), dtype="e2m3", padded=False, arch="sm100")
    assert e.value.field == "padded"
    text = explain(_desc(0x400), dtype="e2m3", arch="sm100")
    assert "read as 64 x 32 e2m3 padded, K-major" in text and text.endswith("no findings")


def test_explain_and_read_operand_agree_on_the_default():
    """No instruction: e2m1 is packed (64 per 32-byte K step), as SharedMemory.read_operand takes it."""
    text = explain(_desc(0x400), dtype="e2m1", arch="sm100", rows=8)
    assert "read as 8 x 64 e2m1 packed, K-major" in text
    assert "e2m1 packed: two values per byte, even k in the low nibble" in text
    padded = explain(_desc(0x400), dtype="e2m1", arch="sm100", rows=8, padded=True)
    assert "read as 8 x 32 e2m1 padded, K-major" in padded and "layout: Swizzle<3,4,3> o ((8,m),(16,2k))" in padded
    assert tcemu.check.check_operand is check_operand
