"""wgmma(): legal forms, fragments, register A, chains, and the constants the trace pins down."""
import os

import ml_dtypes
import numpy as np
import pytest

import tcemu
from tcemu import LayoutError, SharedMemoryError
from tcemu.layout.fragments import a_coords, from_a_registers, from_d_registers, to_a_registers, to_d_registers
from tcemu.layout.smem import SharedMemory
from tcemu.traces import load_trace, numerics_case_registers, thread_digests
from tcemu.arith.fdp import RNE
from tcemu.hopper.wgmma import check_form, wgmma

from paths import TRACES

DA = tcemu.GmmaDescriptor(0x400, 16, 1024, 0, "128B")
DB = tcemu.GmmaDescriptor(0x2400, 16, 1024, 0, "128B")
ARGS = dict(trans_a=False, trans_b=False, scale_a=1, scale_b=1, satfinite=False)


@pytest.mark.parametrize("shape,a,b,d,kw,field", [
    ("m64n8k16", "bf16", "bf16", "f16", {}, "dtype_d"),        # bf16 accumulates in f32 only
    ("m64n8k16", "f16", "bf16", "f32", {}, "dtype_b"),
    ("m64n8k16", "tf32", "tf32", "f32", {}, "shape"),         # tf32 is k8
    ("m32n8k16", "f16", "f16", "f32", {}, "shape"),
    ("m64n12k16", "f16", "f16", "f32", {}, "shape"),
    ("m64n264k16", "f16", "f16", "f32", {}, "shape"),
    ("m64n40k32", "s8", "u8", "s32", {}, "shape"),            # s32: 8, 16, 24, then multiples of 16
    ("m64n8k8", "tf32", "tf32", "f32", {"trans_a": True}, "trans_a"),
    ("m64n8k32", "e4m3", "e5m2", "f32", {"trans_b": True}, "trans_b"),
    ("m64n8k32", "s8", "s8", "s32", {"scale_a": -1}, "scale_a"),
    ("m64n8k16", "f16", "f16", "f32", {"scale_b": 2}, "scale_b"),
    ("m64n8k16", "f16", "f16", "f32", {"satfinite": True}, "satfinite"),
    ("m64n8k256", "b1", "b1", "s32", {"satfinite": True}, "satfinite"),
    ("m64n8k32", "e4m3", "e4m3", "s32", {}, "dtype_d"),
    ("m64n8k16", "f32", "f32", "f32", {}, "dtype_a"),
    ("64x8x16", "f16", "f16", "f32", {}, "shape"),
])
def test_illegal_forms_name_the_rule(shape, a, b, d, kw, field):
    with pytest.raises(LayoutError) as e:
        check_form(shape, a, b, d, **{**ARGS, **kw})
    assert e.value.field == field


@pytest.mark.parametrize("shape,a,b,d", [("m64n256k8", "tf32", "tf32", "f32"), ("m64n8k16", "f16", "f16", "f16"),
                                         ("m64n24k32", "u8", "s8", "s32"), ("m64n48k32", "s8", "s8", "s32"),
                                         ("m64n136k32", "e5m2", "e4m3", "f16"), ("m64n256k256", "b1", "b1", "s32")])
def test_legal_forms(shape, a, b, d):
    n = int(shape[4:shape.index("k")])
    assert check_form(shape, a, b, d, **ARGS) == (n, int(shape[shape.index("k") + 1:]))


@pytest.mark.parametrize("dtype,k", [("tf32", 8), ("bf16", 16), ("e4m3", 32), ("s8", 32), ("b1", 256)])
def test_a_fragments_cover_the_tile_once(dtype, k):
    row, col = a_coords(dtype)
    cells = set(zip(row.ravel().tolist(), col.ravel().tolist()))
    assert len(cells) == row.size == 64 * k and max(c for _, c in cells) == k - 1
    bits = np.random.default_rng(1).integers(0, 2 if dtype == "b1" else 256, (64, k))
    assert np.array_equal(from_a_registers(to_a_registers(bits, dtype), dtype), bits)


def test_a_fragment_examples():
    # PTX Figure 148 (m64nNk16 A): thread 5 (lane 5: g = 1, q = 1), register 3 holds row 9, columns 10, 11.
    bits = np.arange(64 * 16).reshape(64, 16)
    regs = to_a_registers(bits, "bf16")
    assert regs[5, 3] == (9 * 16 + 10) | (9 * 16 + 11) << 16
    assert regs[32, 0] == (16 * 16 + 0) | (16 * 16 + 1) << 16  # warp 1 starts at row 16


@pytest.mark.parametrize("dtype_d", ["f32", "f16", "s32"])
def test_d_fragments_roundtrip(dtype_d):
    n = 24
    d = np.random.default_rng(2).integers(0, 1 << 16, (64, n)).astype(np.uint32)
    regs = to_d_registers(d, dtype_d)
    assert regs.shape == (128, n // 4 if dtype_d == "f16" else n // 2)
    assert np.array_equal(from_d_registers(regs, n, dtype_d), d.astype(np.uint16 if dtype_d == "f16" else np.uint32))
    # PTX Figure 149: thread 0 register 2 is row 8, column 0; register 4 is row 0, column 8.
    if dtype_d != "f16":
        assert (regs[0, 2], regs[0, 4]) == (d[8, 0], d[0, 8])


def _operands(dtype, np_type, n, k, seed=3):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((64, k)).astype(np_type)
    b = rng.standard_normal((n, k)).astype(np_type)
    smem = SharedMemory()
    smem.write_operand(DA, a, dtype=dtype)
    smem.write_operand(DB, b, dtype=dtype)
    return smem, a, b


def test_register_a_equals_shared_a():
    smem, a, _ = _operands("bf16", ml_dtypes.bfloat16, 64, 16)
    common = dict(shape="m64n64k16", dtype_a="bf16", dtype_b="bf16", dtype_d="f32")
    d_smem = wgmma(smem, DA, DB, **common)
    d_regs = wgmma(smem, None, DB, a_regs=to_a_registers(a.view(np.uint16), "bf16"), **common)
    assert np.array_equal(d_smem.view(np.uint32), d_regs.view(np.uint32))


def test_close_to_float64_and_chains_accumulate():
    smem, a, b = _operands("bf16", ml_dtypes.bfloat16, 256, 16)
    common = dict(shape="m64n256k16", dtype_a="bf16", dtype_b="bf16", dtype_d="f32")
    d1 = wgmma(smem, DA, DB, **common)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    assert np.max(np.abs(d1 - ref) / (np.abs(ref) + 1e-3)) < 1e-5
    d2 = wgmma(smem, DA, DB, c=d1, **common)
    assert np.max(np.abs(d2 - 2 * ref) / (np.abs(ref) + 1e-3)) < 1e-5
    assert not np.array_equal(d2, d1)
    d3 = wgmma(smem, DA, DB, c=d1, scale_d=False, **common)  # scale-d = 0 ignores C
    assert np.array_equal(d3.view(np.uint32), d1.view(np.uint32))


def _bf16_tiles(a_row, b_row, n=8):
    """Shared memory holding A = a_row in every row, B = b_row in every column (raw bf16 bits, K = 16)."""
    smem = SharedMemory()
    a = np.tile(np.asarray(a_row, np.uint16), (64, 1))
    smem.write_operand(DA, a, dtype="bf16")
    smem.write_operand(DB, np.tile(np.asarray(b_row, np.uint16), (n, 1)), dtype="bf16")
    return smem, to_a_registers(a, "bf16")


def test_exact_zero_is_positive_and_scale_d0_adds_a_positive_zero():
    """The H100's two rules (traces/wgmma_zero_sign_sm90.npz), for A from shared memory and from registers:
    (1) every product -0 (A = -0 or imm-scale-a = -1 on +0, B = +1) and C = -0 gives +0, not IEEE's -0;
    (2) scale-d = 0 adds a +0 accumulator, a zero term at -133. Hand-worked: A = (2^-74, 2^-80 x 15), B = (2^-74,
    -2^-80 x 15): exact sum 2^-148 - 15 * 2^-160. Without a zero term the largest exponent is -148 and the terms
    are exact: RZ to f32 gives 2^-149 (0x00000001). With the +0 term E = -133, the 2^-158 grid truncates every
    -2^-160 to 0: 2^-148 (0x00000002), which the H100 gives (its floor_dense_noc cases)."""
    common = dict(shape="m64n8k16", dtype_a="bf16", dtype_b="bf16", dtype_d="f32")
    neg0 = np.full((64, 8), -0.0, np.float32)
    for a_row, scale_a in (([0x8000] * 16, 1), ([0x0000] * 16, -1)):
        smem, regs = _bf16_tiles(a_row, [0x3F80] * 16)
        for kw in (dict(c=neg0), dict(c=neg0, scale_d=False), dict(scale_d=False), {}):
            for d in (wgmma(smem, DA, DB, scale_a=scale_a, **kw, **common),
                      wgmma(smem, None, DB, a_regs=regs, scale_a=scale_a, **kw, **common)):
                assert set(d.view(np.uint32).ravel().tolist()) == {0}, (a_row[0], scale_a, kw)
    smem, regs = _bf16_tiles([0x1A80] + [0x1780] * 15, [0x1A80] + [0x9780] * 15)  # 2^-74, 2^-80, -2^-80
    assert np.float32(np.array([0x1A80], np.uint16).view(ml_dtypes.bfloat16)[0]) == 2.0 ** -74
    assert np.float32(np.array([0x9780], np.uint16).view(ml_dtypes.bfloat16)[0]) == -(2.0 ** -80)
    c_junk = np.full((64, 8), 1.0, np.float32)
    for kw in (dict(scale_d=False), dict(c=c_junk, scale_d=False), {}):
        for d in (wgmma(smem, DA, DB, **kw, **common), wgmma(smem, None, DB, a_regs=regs, **kw, **common)):
            assert set(d.view(np.uint32).ravel().tolist()) == {0x00000002}, kw
    zero_c = wgmma(smem, DA, DB, c=np.zeros((64, 8), np.float32), **common)  # C = +0 given: the same zero term
    assert set(zero_c.view(np.uint32).ravel().tolist()) == {0x00000002}


def test_scale_a_negates_exactly():
    smem, _, _ = _operands("e4m3", ml_dtypes.float8_e4m3fn, 8, 32)
    common = dict(shape="m64n8k32", dtype_a="e4m3", dtype_b="e4m3", dtype_d="f32")
    pos = wgmma(smem, DA, DB, **common)
    neg = wgmma(smem, DA, DB, scale_a=-1, **common)
    assert np.array_equal(neg.view(np.uint32), pos.view(np.uint32) ^ np.uint32(0x80000000))


def test_bad_accumulator_and_unwritten_memory():
    smem, _, _ = _operands("bf16", ml_dtypes.bfloat16, 8, 16)
    common = dict(shape="m64n8k16", dtype_a="bf16", dtype_b="bf16", dtype_d="f32")
    with pytest.raises(LayoutError, match="c: must be a float32 array"):
        wgmma(smem, DA, DB, c=np.zeros((64, 8), np.float16), **common)
    with pytest.raises(LayoutError, match=r"c: must have shape \(64, 8\)"):
        wgmma(smem, DA, DB, c=np.zeros((64, 16), np.float32), **common)
    far = tcemu.GmmaDescriptor(0x10000, 16, 1024, 0, "128B")  # nothing written there
    with pytest.raises(SharedMemoryError, match="desc: element \\(0, 0\\) reads 0x10000, which was never written"):
        wgmma(smem, DA, far, **common)
    with pytest.raises(LayoutError, match="a_regs"):
        wgmma(smem, DA, DB, a_regs=np.zeros((128, 4), np.uint32), **common)


NUMERICS = load_trace(os.path.join(TRACES, "wgmma_numerics_sm90.npz"))


def _failures(unit_change, kinds, limit=40):
    """How many of the first `limit` trace cases of `kinds` fail with the unit's constants changed."""
    import tcemu.hopper.wgmma as W
    original = W.fdp_unit
    W.fdp_unit = lambda a, d: original(a, d)._replace(**unit_change)
    try:
        cols, meta = NUMERICS.columns, NUMERICS.meta
        picked = [i for i in range(cols["seed"].size)
                  if meta["kinds"][meta["instantiations"][int(cols["inst"][i])][0]][0] in kinds][:limit]
        return sum(bool((thread_digests(numerics_case_registers(NUMERICS, i)) != cols["digest"][i]).any())
                   for i in picked)
    finally:
        W.fdp_unit = original


@pytest.mark.parametrize("change,kinds", [
    ({"frac_bits": 24}, ("bf16",)),                 # one bit fewer kept below the maximum
    ({"frac_bits": 26}, ("tf32",)),
    ({"rounding": RNE}, ("bf16",)),                 # nearest-even instead of toward zero for f32
    ({"keep_bits": 23}, ("e4m3",)),                 # fp8 -> f32 keeps 13 fraction bits, not 23
    ({"zero_exp": -126}, ("tf32", "bf16")),
    # signed_zero / zero_c_when_absent: this trace cannot tell (no case has every term -0 or every product below
    # 2^-133); traces/wgmma_zero_sign_sm90.npz does (tests/traces/test_capture_edges.py::test_zero_sign_trace_replays)
])
def test_trace_rejects_other_constants(change, kinds):
    assert _failures(change, kinds) > 0
