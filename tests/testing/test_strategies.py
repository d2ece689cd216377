"""tcemu.testing.strategies is public API (users put it in their own CI): every draw of a "valid" strategy is accepted
by the function it targets, every draw of invalid_descriptors is refused, and bad arguments raise when the
strategy is made. ci: a few hundred draws per strategy; HYPOTHESIS_PROFILE=campaign: thousands."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tcemu
from tcemu import TcemuError
from tcemu.blackwell.mma import check_form as tcgen05_check_form
from tcemu.hopper.wgmma import check_form as wgmma_check_form
from tcemu.blackwell.instr import BLOCK_SCALED
from tcemu.testing.strategies import (descriptor_values, invalid_descriptors, operands, tcgen05_forms,
                                      valid_descriptors, wgmma_forms)

MANY = settings(max_examples=max(200, settings().max_examples // 4))  # ci 200 draws; campaign 5,000
RNG = np.random.default_rng(5)
FULL90 = tcemu.SharedMemory(data=RNG.integers(0, 256, 228 * 1024, dtype=np.uint8))
FULL100 = tcemu.SharedMemory("sm100", data=RNG.integers(0, 256, 228 * 1024, dtype=np.uint8))


@MANY
@given(operands())
def test_operands_are_accepted_by_operand_addresses(case):
    desc, rows, k, dtype, major = case
    addrs = tcemu.operand_addresses(desc, rows=rows, k=k, dtype=dtype, major=major)
    assert addrs.shape == (rows, k) and addrs.min() >= 0x400 and addrs.max() < 228 * 1024


@MANY
@given(st.sampled_from(["sm90", "sm100"]).flatmap(lambda arch: st.tuples(st.just(arch), valid_descriptors(arch=arch))))
@pytest.mark.slow
def test_valid_descriptors_validate(arch_desc):
    arch, desc = arch_desc
    assert [f for f in desc.validate(arch) if f.severity == "error"] == []
    assert desc.check(arch) is desc
    assert type(desc).decode(desc.encode()) == desc


@MANY
@given(invalid_descriptors())
def test_invalid_descriptors_are_refused(desc):
    assert any(f.severity == "error" for f in desc.validate())
    with pytest.raises(TcemuError):
        tcemu.operand_addresses(desc, rows=64, k=16, dtype="bf16")


@MANY
@given(descriptor_values())
def test_descriptor_values_decode(value):
    assert tcemu.GmmaDescriptor.decode(value).encode() == value


@settings(max_examples=max(150, settings().max_examples // 20))
@given(wgmma_forms(), st.booleans())
def test_wgmma_forms_run(form, with_c):
    shape, dtype_a, dtype_b, dtype_d = form
    n = int(shape[shape.index("n") + 1:shape.index("k")])
    wgmma_check_form(shape, dtype_a, dtype_b, dtype_d, False, False, 1, 1, False)
    desc = tcemu.GmmaDescriptor(0x400, lbo=128, sbo=256)
    c = np.zeros((64, n), {"f32": np.float32, "f16": np.float16, "s32": np.int32}[dtype_d]) if with_c else None
    d = tcemu.wgmma(FULL90, desc, desc, shape=shape, dtype_a=dtype_a, dtype_b=dtype_b, dtype_d=dtype_d, c=c)
    assert d.shape == (64, n)


@settings(max_examples=max(150, settings().max_examples // 20))
@given(st.sampled_from([1, 2]).flatmap(lambda g: st.tuples(st.just(g), tcgen05_forms(cta_group=g))))
def test_tcgen05_forms_run(group_form):
    cta_group, d = group_form
    assert d.validate(cta_group=cta_group) == []
    tcgen05_check_form(d, cta_group, False, None, None, 0)
    desc = tcemu.UmmaDescriptor(0x400, lbo=16, sbo=1024, swizzle="128B", version=1)
    kw = {}
    if d.kind in BLOCK_SCALED:
        nsf = {"mxf8f6f4": 1, "mxf4": 2}.get(d.kind, 4)
        kw = dict(scale_a=np.full((d.m, nsf), 127), scale_b=np.full((d.n, nsf), 127),
                  block_size_k=16 if nsf == 4 else None)
    out = tcemu.tcgen05_mma([FULL100] * cta_group if cta_group == 2 else FULL100, desc, desc, d,
                            cta_group=cta_group, **kw)
    assert out.shape == (d.m, d.n)


@pytest.mark.parametrize("make, field", [
    (lambda: valid_descriptors(arch="sm80"), "arch"),
    (lambda: valid_descriptors(swizzles=["128B_base32B"]), "swizzles"),  # an sm100-only mode on sm90
    (lambda: valid_descriptors(swizzles="128B"), "swizzles"),
    (lambda: valid_descriptors(max_stride=-16), "max_stride"),
    (lambda: operands(dtypes=["x"]), "dtypes"),
    (lambda: operands(dtypes="bf16"), "dtypes"),
    (lambda: operands(majors=["MN"], dtypes=["tf32"]), "majors"),
    (lambda: tcgen05_forms(kinds=["f64"]), "kinds"),
    (lambda: tcgen05_forms(cta_group=3), "cta_group"),
])
def test_bad_arguments_raise_when_the_strategy_is_made(make, field):
    with pytest.raises(TcemuError) as e:
        make()
    assert e.value.field == field
