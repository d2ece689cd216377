"""The defects of issue 17 in wgmma's arguments, one class per test, each pinned to the field and rule it must now
name (tests/hopper/test_hostile_campaign.py keeps hammering the same classes with generated inputs)."""
import numpy as np
import pytest

import tcemu
from tcemu.layout.smem import SharedMemory

from badinput import field_of


@pytest.mark.parametrize("flag", ["scale_d", "trans_a", "trans_b", "satfinite"])
def test_wgmma_flags_refuse_strings(flag):
    smem = SharedMemory(data=np.zeros(4096, np.uint8))
    d = tcemu.GmmaDescriptor(0x400, 128, 256)
    assert field_of(tcemu.wgmma, smem, d, d, shape="m64n8k16", dtype_a="f16", dtype_b="f16", dtype_d="f32",
                    **{flag: "False"}) == flag
