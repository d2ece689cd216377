"""Only TcemuError (a ValueError) escapes wgmma's form check and wgmma() on arbitrary input (banks and TMA:
tests/layout/test_banks.py and test_tma.py; tcgen05: tests/blackwell/test_arbitrary_input.py)."""
import numpy as np
from hypothesis import given, strategies as st

import tcemu
from tcemu.hopper.wgmma import check_form
from tcemu.layout.smem import SharedMemory

from arbitrary import junk, only_ours


@given(st.one_of(st.text(max_size=14), junk), st.sampled_from(["tf32", "f16", "bf16", "e4m3", "s8", "b1", "f32", "x"]),
       st.sampled_from(["tf32", "f16", "bf16", "e5m2", "u8", "b1", "q"]), st.sampled_from(["f32", "f16", "s32", "bf16"]),
       st.booleans(), st.booleans(), st.one_of(st.sampled_from([1, -1]), junk), st.booleans())
def test_wgmma_forms(shape, a, b, d, ta, tb, sa, sat):
    only_ours(check_form, shape, a, b, d, ta, tb, sa, 1, sat)


@given(st.one_of(junk, st.integers(0, 2**64 - 1)), st.one_of(junk, st.sampled_from(["m64n8k16", "m64n16k16"])))
def test_wgmma_call(desc, shape):
    smem = SharedMemory(data=np.zeros(4096, np.uint8))
    only_ours(tcemu.wgmma, smem, desc, desc, shape=shape, dtype_a="bf16", dtype_b="bf16", dtype_d="f32")


