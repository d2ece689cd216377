"""The defects of issue 17 in shared memory, fragments, banks, swizzles and TMA, one class per test, each pinned to
the field and rule it must now name (tests/layout/test_hostile_campaign.py keeps hammering the same classes with
generated inputs). The other classes: tests/{hopper,blackwell}/test_bad_input.py, tests/traces/test_bad_traces.py,
tests/ptx/test_parser.py (malformed PTX) and tests/cli/test_cli.py (one-line errors)."""
import ml_dtypes
import numpy as np
import pytest

import tcemu
from tcemu.blackwell.instr import InstrDescriptor
from tcemu.core.errors import SharedMemoryError
from tcemu.layout.banks import pattern_from_expression, pattern_from_layout, wavefronts_batch
from tcemu.layout.fragments import to_d_registers
from tcemu.layout.smem import SharedMemory
from tcemu.layout.swizzle import Swizzle
from tcemu.layout.tma import tensor_view

from badinput import field_of


# ---- 1. memory safety ----

def test_batch_masks_one_per_pattern():
    addrs = np.arange(3 * 32).reshape(3, 32) * 4
    assert field_of(wavefronts_batch, "ld.shared.b32", addrs, np.full(2, 0xFFFFFFFF)) == "masks"
    assert field_of(wavefronts_batch, "ld.shared.b32", addrs, np.full(3, 1 << 32)) == "masks"
    assert field_of(wavefronts_batch, "ldmatrix.x4", addrs[:, :32] * 4, np.full(3, 0xFF)) == "masks"
    # the same patterns with good masks: 32 distinct words in 32 banks, one wavefront each
    assert wavefronts_batch("ld.shared.b32", addrs, np.full(3, 0xFFFFFFFF)).tolist() == [1, 1, 1]


def test_tensor_view_stays_inside_its_buffer():
    buf = np.arange(256, dtype=np.uint8)
    # dims (4, 3) u16 with row stride 64 at offset 8: last element at 8 + 2*64 + 3*2 = 142..143
    view = tensor_view(buf, 8, 2, [4, 3], [64])
    assert view.shape == (3, 4) and int(view[2, 3]) == 142 | 143 << 8 and not view.flags.writeable
    edge = tensor_view(buf, 0, 4, [1, 2], [252])           # last element: bytes 252..255, exactly the end
    assert int(edge[1, 0]) == int.from_bytes(bytes(range(252, 256)), "little")
    assert field_of(tensor_view, buf, 0, 4, [1, 2], [253]) == "dims, strides"   # one byte past the end
    assert field_of(tensor_view, buf, 8, 2, [4, 1 << 30], [64]) == "dims, strides"
    assert field_of(tensor_view, buf, 300, 1, [1], []) == "offset"
    assert field_of(tensor_view, buf, 0, 1, [4, 4], [-16]) == "strides"
    assert field_of(tensor_view, buf.astype(np.float32), 0, 1, [4], []) == "buffer"


# ---- 2. flags are bools ----


def test_tcgen05_and_smem_flags():
    smem = SharedMemory("sm100", data=np.zeros(4096, np.uint8))
    d = tcemu.UmmaDescriptor(0x400, 128, 256, version=1)
    idesc = InstrDescriptor("f16", "f16", "f16", m=64, n=8)
    assert field_of(tcemu.tcgen05_mma, smem, d, d, idesc, enable_input_d="no") == "enable_input_d"
    assert field_of(SharedMemory().read_operand, d.encode() & ~(3 << 46), rows=8, k=16, dtype="bf16",
                    padded="yes") == "padded"
    assert field_of(SharedMemory().read, 0, 4, strict="False") == "strict"


# ---- 3. bits are unsigned integers of the right width; values are of the named type ----

def test_values_of_another_float_type_are_refused():
    d = tcemu.GmmaDescriptor(0x400, 128, 256)
    smem = SharedMemory()
    assert field_of(smem.write_operand, d, np.ones((8, 8), np.float16), dtype="bf16") == "values"
    assert field_of(smem.write_operand, d, np.full((8, 8), -1), dtype="bf16") == "values"
    smem.write_operand(d, np.full((8, 8), 1.5, ml_dtypes.bfloat16), dtype="bf16")
    assert smem.read_operand(d, rows=8, k=8, dtype="bf16")[0, 0] == 0x3FC0   # bf16 1.5: 0 01111111 1000000
    smem.write_operand(d, np.full((8, 8), 0x3F80), dtype="bf16")             # integer bit patterns: as given
    assert smem.read_operand(d, rows=8, k=8, dtype="bf16")[7, 7] == 0x3F80
    smem.write_operand(d, np.full((8, 16), -3, np.int64), dtype="s8")        # s8 values: two's complement
    assert smem.read_operand(d, rows=8, k=16, dtype="s8")[0, 0] == 0xFD


def test_registers_are_integer_bits():
    smem = SharedMemory(data=np.zeros(4096, np.uint8))
    d = tcemu.GmmaDescriptor(0x400, 128, 256)
    kw = dict(shape="m64n8k16", dtype_a="f16", dtype_b="f16", dtype_d="f32")
    assert field_of(tcemu.wgmma, smem, None, d, a_regs=np.ones((128, 4)), **kw) == "a_regs"
    assert field_of(tcemu.wgmma, smem, None, d, a_regs=np.full((128, 4), -1), **kw) == "a_regs"
    assert field_of(tcemu.to_a_registers, np.ones((64, 16)), "f16") == "bits"
    assert field_of(to_d_registers, np.zeros((64, 8)), "f32") == "d_bits"


# ---- 4. fields out of range ----


def test_other_ranges():
    assert field_of(Swizzle, -1, 4, 3) == "bits"
    assert field_of(Swizzle, 3, 4, 2) == "shift"         # the XOR fields would overlap
    assert field_of(tcemu.layout.swizzle.SWIZZLE_128B, 0x400, -1) == "base_offset"
    assert field_of(SharedMemory().scatter_bytes, [0x400], [[256]]) == "raw"
    assert field_of(pattern_from_layout, (32,), (4,), base=float("nan")) == "base"
    assert field_of(pattern_from_layout, (32,), (1 << 40,)) == "stride"


# ---- 7. foreign exceptions: sizes bounded before allocating, ints never truncated ----

def test_huge_and_odd_inputs_are_named():
    assert field_of(tcemu.tma_load, SharedMemory(), 0, np.zeros((2, 2, 2, 2, 16), np.uint8), box=[256] * 5,
                    coords=[0] * 5) == "box"   # 2^40 box elements: refused before np.indices allocates
    assert field_of(tcemu.bank_conflicts, "ld.shared.b32", np.arange(32) * 4.0) == "addresses"
    assert field_of(tcemu.GmmaDescriptor.decode, "0x" + "f" * 5000) == "descriptor"
    assert field_of(tcemu.operand_addresses, 0x40, rows=10 ** 5000, k=8, dtype="bf16") == "rows, k"
    assert field_of(pattern_from_expression, "*".join(["(t<<63)"] * 4)) == "pattern"   # grows past 2^64
    assert field_of(pattern_from_expression, "+".join(["t"] * 250)) == "pattern"      # nests 249 operators


# ---- 8. never-written shared memory ----

def test_strict_reads():
    smem = SharedMemory()
    smem.write(0x400, b"\x01\x02")
    with pytest.raises(SharedMemoryError, match="byte 0x402 was never written"):
        smem.read(0x400, 4)
    assert smem.read(0x400, 4, strict=False).tolist() == [1, 2, 0, 0]
    assert smem.read(0x400, 2).tolist() == [1, 2]
    assert smem.gather([0x400], "bf16").tolist() == [0x0201]
    with pytest.raises(SharedMemoryError, match="byte 0x402 was never written"):
        smem.gather([0x400, 0x402], "bf16")
    assert smem.gather([0x402], "bf16", strict=False).tolist() == [0]
