"""The fuzz campaign and the public hypothesis strategies."""
import dataclasses

import pytest

from hypothesis import given

import tcemu
from tcemu import TcemuError, operand_addresses
from tcemu.testing.fuzz import campaign
from tcemu.hopper.wgmma import check_form
from tcemu.testing.strategies import invalid_descriptors, operands, tcgen05_forms, valid_descriptors, wgmma_forms


@pytest.mark.slow
def test_campaign_agrees():
    result = campaign(cases=25, seed=3, progress=None)
    assert (result["cases"], result["disagreement"]) == (25, None) and result["elements"] > 0


def test_sm100_campaign_agrees_and_catches_a_wrong_atom():
    """sm100 cases (UMMA descriptors, 128B_base32B included) agree with the pycute formulation; an emulator
    that gives the 32-byte-atom mode 8-row atoms (tcemu's first version) is caught."""
    result = campaign(cases=60, seed=5, progress=None, arch="sm100")
    assert (result["cases"], result["disagreement"]) == (60, None)

    def eight_row_atoms(desc, **kw):
        if desc.swizzle is tcemu.SwizzleMode.B128_BASE32B:
            return operand_addresses(dataclasses.replace(desc, swizzle=tcemu.SwizzleMode.B128), **kw)
        return operand_addresses(desc, **kw)
    rep = campaign(cases=200, seed=5, progress=None, arch="sm100", emulator=eight_row_atoms)["disagreement"]
    assert rep is not None and "arch='sm100'" in rep and "'128B_base32B')" in rep


def test_campaign_catches_and_shrinks_a_bug():
    def buggy(desc, **kw):  # forgets the base offset
        return operand_addresses(dataclasses.replace(desc, base_offset=0), **kw)
    result = campaign(cases=200, seed=3, progress=None, emulator=buggy)
    rep = result["disagreement"]
    assert rep is not None and rep.startswith("tcemu.operand_addresses(0x")
    assert "rows=8," in rep or "major='MN'" in rep              # shrunk to one core-matrix row group


@given(operands())
def test_operands_strategy(case):
    desc, rows, k, dtype, major = case
    try:
        assert operand_addresses(desc, rows=rows, k=k, dtype=dtype, major=major).shape == (rows, k)
    except TcemuError as e:
        assert e.field == "start_address, lbo, sbo"           # only the window can refuse these


@given(invalid_descriptors())
def test_invalid_descriptors_strategy(desc):
    assert any(f.severity == "error" for f in desc.validate())


@given(wgmma_forms())
def test_wgmma_forms_strategy(form):
    shape, a, b, d = form
    n, k = check_form(shape, a, b, d, False, False, 1, 1, False)
    assert shape == f"m64n{n}k{k}" and tcemu.hopper.wgmma.K_OF[a] == k


@given(tcgen05_forms(), valid_descriptors(arch="sm100"))
def test_tcgen05_forms_strategy(d, desc):
    assert d.validate() == [] and tcemu.InstrDescriptor.decode(d.encode(), d.kind) == d
    assert isinstance(desc, tcemu.UmmaDescriptor) and desc.validate() == []


# ---- tcgen05 .sp / .ws / sm_103a ---------------------------------------------------------------------------

def test_sm103_campaign_agrees_and_catches_mode_0():
    """sm103 cases: half of them LBO mode 1 (K = 96 fp4 as 48 bytes), against two pycute layouts composed as the
    PTX sentence reads; an emulator that ignores the mode (reads on in the start's line) is caught."""
    result = campaign(cases=40, seed=7, progress=None, arch="sm103")
    assert (result["cases"], result["disagreement"]) == (40, None)

    def mode0(desc, **kw):
        if desc.lbo_mode:
            desc = dataclasses.replace(desc, lbo_mode=0, lbo=16)
        return operand_addresses(desc, **kw)
    rep = campaign(cases=200, seed=7, progress=None, arch="sm103", emulator=mode0)["disagreement"]
    assert rep is not None and "mode1_oracle" in rep and "arch='sm103'" in rep


from tcemu.testing.strategies import (lbo_mode_descriptors, sm103_forms, sparse_nibbles, tcgen05_sparse_forms,
                                      tcgen05_ws_forms)  # noqa: E402
from tcemu.blackwell.mma import check_form as tcgen05_check_form  # noqa: E402
from tcemu.blackwell.sparse import invalid_nibbles  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(st.sampled_from([1, 2]).flatmap(lambda g: st.tuples(st.just(g), tcgen05_sparse_forms(cta_group=g))))
def test_sparse_forms_strategy(case):
    group, d = case
    assert d.sparse and d.validate(cta_group=group) == []
    tcgen05_check_form(d, group, False, None, None, 0)


@given(tcgen05_ws_forms())
def test_ws_forms_strategy(case):
    d, mask = case
    assert d.m in (32, 64, 128) and d.validate(ws=True) == []
    tcgen05_check_form(d, 1, False, None, None, 0, ws=True)
    if mask is not None:
        assert tcemu.instr.ZeroColumnMask.decode(mask).validate(d.m, d.n, d.max_shift_columns) == []


@given(st.sampled_from(["tf32", "f16", "i8", "mxf4"]).flatmap(lambda k: st.tuples(st.just(k), sparse_nibbles(k, 16))))
@pytest.mark.slow
def test_sparse_nibbles_strategy(case):
    kind, nib = case
    assert nib.shape == (16, {"tf32": 8, "f16": 8, "i8": 16, "mxf4": 16}[kind]) and not invalid_nibbles(nib, kind).any()


@given(sm103_forms(), lbo_mode_descriptors())
def test_sm103_strategies(d, desc):
    tcgen05_check_form(d, 1, False, desc, None, 0, arch="sm103")
    assert desc.validate("sm103", major="K") == []
    assert operand_addresses(desc, rows=8, k=96, dtype="e2m1", arch="sm103").shape == (8, 96)
