"""The defects of issue 17 in tcgen05's instruction descriptors and tensor memory, one class per test, each pinned
to the field and rule it must now name (tests/blackwell/test_hostile_campaign.py keeps hammering the same classes
with generated inputs)."""
import numpy as np
import pytest

import tcemu
from tcemu.blackwell.instr import InstrDescriptor
from tcemu.blackwell.tmem import TensorMemory
from tcemu.layout.fragments import to_d_registers

from badinput import field_of


@pytest.mark.parametrize("flag", ["negate_a", "negate_b", "transpose_a", "transpose_b", "sparse", "saturate", "k96"])
def test_instruction_descriptor_flags(flag):
    assert field_of(InstrDescriptor, "f16", "f16", "f16", m=64, n=8, **{flag: 2}) == flag
    assert field_of(InstrDescriptor, "f16", "f16", "f16", m=64, n=8, **{flag: "False"}) == flag



def test_instruction_descriptor_field_widths():
    for name in ("sparsity_selector", "max_shift", "a_scale_id", "b_scale_id"):
        assert field_of(InstrDescriptor, "f16", "f16", "f16", m=64, n=8, **{name: 4}) == name
        assert field_of(InstrDescriptor, "f16", "f16", "f16", m=64, n=8, **{name: -1}) == name
    assert field_of(InstrDescriptor("f16", "f16", "f16", m=64, n=12).encode) == "n"



def test_tensor_memory_never_wraps():
    tm = TensorMemory()
    tm.write(0, np.arange(4), np.zeros(4, np.int64), np.arange(4))
    assert field_of(tm.read, 0, np.array([-1]), np.array([0])) == "lanes"
    assert field_of(tm.read, 0, np.array([128]), np.array([0])) == "lanes"
    assert field_of(tm.read, 0, np.array([0]), np.array([-1])) == "columns"
    assert field_of(tm.read, 0, np.array([0]), np.array([512])) == "columns"
    assert field_of(tm.read, 500, np.array([0]), np.array([12])) == "address"   # column 512 after adding 500
    assert field_of(tcemu.tmem_address, 0, 65536 + 5) == "column"               # not lane 1, column 5
    assert field_of(tcemu.tmem_address, 128, 0) == "lane"
    assert field_of(tm.write_scales, 0, np.zeros((128, 1), np.uint8), sf_id=4) == "sf_id"
    assert field_of(tm.write_scales, 0, np.full((128, 1), 256)) == "scales"
    assert field_of(tm.write_scales, 0, np.zeros((128, 1))) == "scales"               # floats are not bytes
    # bytes 3 and 4: past the cell from byte sf_id (main's scale-id rule names sf_id; test_instr)
    assert field_of(tm.write_scales, 0, np.zeros((128, 2), np.uint8), sf_id=3) == "sf_id"
    assert field_of(tm.write_scales, 0, np.zeros((128, 5), np.uint8)) == "scales"      # 5 bytes fit no cell
    assert field_of(tm.write_scales, 0, np.zeros((257, 1), np.uint8)) == "scales"      # rows: M or N, up to 256
    assert field_of(tm.read_d, 0, 128, 8, "bf16") == "dtype_d"
    assert field_of(to_d_registers, np.zeros((64, 8), np.uint32), "bf16") == "dtype_d"
