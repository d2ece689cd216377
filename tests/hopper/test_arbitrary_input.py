"""Only TcemuError (a ValueError) escapes banks, TMA and wgmma on arbitrary input."""
import numpy as np
from hypothesis import example, given, strategies as st

import tcemu
from tcemu import TcemuError
from tcemu.layout.banks import bank_conflicts, pattern_from_expression, wavefronts_batch
from tcemu.hopper.wgmma import check_form
from tcemu.layout.smem import SharedMemory
from tcemu.layout.tma import tma_load

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


_FULL_SM100 = tcemu.SharedMemory("sm100", data=np.random.default_rng(0).integers(0, 256, 228 * 1024, dtype=np.uint8))
_SM100_FIELD = st.integers(0, 0x3FFF).map(lambda x: 16 * x)
umma_descriptors = st.integers(0, 7).flatmap(lambda i: st.integers(0, 2**64 - 1) if i == 0 else st.builds(lambda s, l, b, sw: tcemu.UmmaDescriptor(start_address=s, lbo=l, sbo=b, swizzle=sw, version=1),
              _SM100_FIELD.map(lambda x: x % 0x20000), st.sampled_from([16, 128, 256, 1024, 4096]),
              st.sampled_from([128, 256, 512, 1024, 2048]), st.sampled_from(["none", "32B", "64B", "128B", "128B_base32B"])))


def instr_descriptors():
    """(value, kind): mostly legal forms (tcemu.testing.strategies.tcgen05_forms), sometimes any 32 bits, any kind."""
    from tcemu.blackwell.instr import KINDS
    from tcemu.testing.strategies import tcgen05_forms
    legal = tcgen05_forms().map(lambda d: (d.encode(), d.kind)) | tcgen05_forms(cta_group=2).map(lambda d: (d.encode(), d.kind))
    return st.integers(0, 7).flatmap(lambda i: st.tuples(st.integers(0, 2**32 - 1), st.sampled_from(KINDS + ("x",)))
                                     if i == 0 else legal)


@given(instr_descriptors(), umma_descriptors, umma_descriptors, st.sampled_from(["auto"] * 4 + [1, 2, 3]),
       st.sampled_from(["auto", "auto", "auto", None, 0xFF, 0x38]), st.sampled_from([None, None, 16, 32, 7]),
       st.sampled_from([0] * 8 + [3, 16, -1]))
def test_tcgen05_arbitrary(instr, da, db, cta_group, scale, block, scale_d):
    """Arbitrary instruction and matrix descriptors against a fully written shared memory: a result or
    our error, never another exception."""
    idesc, kind = instr
    try:
        d = tcemu.InstrDescriptor.decode(idesc, kind)
    except TcemuError:
        d = None
    if cta_group == "auto":
        cta_group = 2 if d is not None and d.m == 256 else 1
    smem = [_FULL_SM100] * cta_group if cta_group > 1 else _FULL_SM100
    if scale == "auto":  # the scale arrays a block-scaled kind wants, if the descriptor decodes
        try:
            d = tcemu.InstrDescriptor.decode(idesc, kind)
            nsf = {"mxf8f6f4": 1, "mxf4": 2}.get(d.kind, 4 if block != 32 else 2)
            scale = (d.m, d.n, nsf, 0x7F) if d.kind in ("mxf8f6f4", "mxf4", "mxf4nvf4") else None
        except TcemuError:
            scale = None
    scales = {}
    if isinstance(scale, tuple):
        scales = dict(scale_a=np.full(scale[:1] + scale[2:3], scale[3]), scale_b=np.full(scale[1:3], scale[3]))
    elif scale is not None:
        scales = dict(scale_a=np.full((128, 4), scale), scale_b=np.full((256, 4), scale))
    try:
        tcemu.tcgen05_mma(smem, da, db, idesc, kind=kind, cta_group=cta_group, block_size_k=block,
                          scale_input_d=scale_d, **scales)
    except TcemuError as exc:
        assert exc.field and exc.field in str(exc), repr(exc)
