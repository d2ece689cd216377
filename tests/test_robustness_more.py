"""Only TcemuError (a ValueError) escapes banks, TMA and wgmma on arbitrary input."""
import numpy as np
from hypothesis import example, given, strategies as st

import tcemu
from tcemu import TcemuError
from tcemu.banks import bank_conflicts, pattern_from_expression, wavefronts_batch
from tcemu.hopper import check_form
from tcemu.smem import SharedMemory
from tcemu.tma import tma_load

junk = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=True), st.text(max_size=12),
                 st.integers(-2**70, 2**70), st.lists(st.integers(-2**40, 2**40), max_size=40))
ops = st.one_of(st.sampled_from(["ld.shared.b32", "ld.shared.v4.b32", "ldmatrix.x4", "stmatrix.x1.trans",
                                 "st.shared.u8", "lds.128", "ld.shared.v2.b64"]), st.text(max_size=20), junk)


def only_ours(fn, *a, **kw):
    try:
        fn(*a, **kw)
    except TcemuError as e:
        assert e.field and e.field in str(e)


@given(ops, st.one_of(junk, st.lists(st.integers(-64, 4096), min_size=32, max_size=32)), st.one_of(junk, st.integers(0, 2**32 - 1)))
def test_banks(op, addrs, mask):
    only_ours(bank_conflicts, op, addrs, mask=mask if isinstance(mask, int) and not isinstance(mask, bool) else 0xFFFFFFFF)
    only_ours(bank_conflicts, op, addrs, mask=mask)


@given(ops, st.integers(0, 3), st.integers(-16, 4096))
def test_banks_batch(op, n, scale):
    only_ours(wavefronts_batch, op, np.arange(32 * n).reshape(n, 32) * scale)


@given(st.text(max_size=30))
@example("9223372036854775808")  # past int64: found by the campaign profile
def test_pattern_expression(expr):
    only_ours(pattern_from_expression, expr)


@given(st.lists(st.integers(-300, 300), min_size=0, max_size=6), st.lists(st.integers(-300, 300), min_size=0, max_size=6),
       st.one_of(st.none(), st.lists(st.integers(-2, 10), max_size=6)), st.one_of(st.sampled_from(["none", "32B", "64B", "128B"]), junk),
       st.one_of(st.integers(-512, 1 << 20), junk), st.integers(1, 3))
def test_tma(box, coords, est, swizzle, dst, rank):
    tensor = np.zeros((4,) * rank, np.uint16)
    only_ours(tma_load, SharedMemory(), dst, tensor, box=box, coords=coords, element_strides=est, swizzle=swizzle)


@given(st.one_of(st.text(max_size=14), junk), st.sampled_from(["tf32", "f16", "bf16", "e4m3", "s8", "b1", "f32", "x"]),
       st.sampled_from(["tf32", "f16", "bf16", "e5m2", "u8", "b1", "q"]), st.sampled_from(["f32", "f16", "s32", "bf16"]),
       st.booleans(), st.booleans(), st.one_of(st.sampled_from([1, -1]), junk), st.booleans())
def test_wgmma_forms(shape, a, b, d, ta, tb, sa, sat):
    only_ours(check_form, shape, a, b, d, ta, tb, sa, 1, sat)


@given(st.one_of(junk, st.integers(0, 2**64 - 1)), st.one_of(junk, st.sampled_from(["m64n8k16", "m64n16k16"])))
def test_wgmma_call(desc, shape):
    smem = SharedMemory(data=np.zeros(4096, np.uint8))
    only_ours(tcemu.wgmma, smem, desc, desc, shape=shape, dtype_a="bf16", dtype_b="bf16", dtype_d="f32")
