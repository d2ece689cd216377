"""The form tables of wgmma (tcemu/hopper/forms.py) and tcgen05.mma (tcemu/blackwell/forms.py): one table serves
the instruction models and the PTX operand grammar, and the names users import from the models still work."""
import numpy as np
import pytest

import tcemu
from tcemu.blackwell import forms as bw
from tcemu.blackwell import instr, mma
from tcemu.core.errors import LayoutError
from tcemu.hopper import forms as hw
from tcemu.hopper import sparse, wgmma
from tcemu.ptx.ops import wgmma as ptx_wgmma
from tcemu.ptx.ops.tcgen05 import mma as ptx_mma


def test_the_models_and_the_ptx_side_read_one_table():
    assert wgmma.K_OF is hw.K_OF is ptx_wgmma.K_OF and sparse.SP_K_OF is hw.SP_K_OF is ptx_wgmma.SP_K_OF
    assert wgmma.check_form is hw.check_form is ptx_wgmma.check_form and sparse.SELECTORS is hw.SELECTORS
    assert instr.KINDS is bw.KINDS is ptx_mma.KINDS and instr.BLOCK_SCALED is bw.BLOCK_SCALED is ptx_mma.BLOCK_SCALED
    assert mma.K_OF_KIND is bw.K_OF_KIND and mma.check_form is bw.check_form is ptx_mma.check_form
    assert instr.shape_findings is bw.shape_findings and tcemu.instr.WS_KINDS is bw.WS_KINDS


def test_wgmma_tables_cover_each_type():
    assert set(hw.B_TYPES) == set(hw.ACCUMULATORS) == set(hw.K_OF) and set(hw.SP_K_OF) == set(hw.SELECTORS)
    assert set(hw.SP_K_OF) == set(hw.K_OF) - {"b1"} and all(hw.SP_K_OF[t] == 2 * hw.K_OF[t] for t in hw.SP_K_OF)
    assert {d for accs in hw.ACCUMULATORS.values() for d in accs} == set(hw.D_TYPES)


@pytest.mark.parametrize("a, d, a_regs, names", [
    ("f16", "f32", False, ("scale_a", "scale_b", "trans_a", "trans_b")),
    ("bf16", "f32", True, ("scale_a", "scale_b", "trans_b")),
    ("tf32", "f32", False, ("scale_a", "scale_b")),
    ("e4m3", "f16", True, ("scale_a", "scale_b")),
    ("s8", "s32", False, ()),
    ("b1", "s32", False, ())])
def test_wgmma_immediates_follow_the_grammar(a, d, a_regs, names):
    """PTX 9.7.15.5: imm-scale-a/b for floating types, imm-trans-a/b for f16/bf16 (no imm-trans-a with A in
    registers), none for integer types; each one check_form accepts."""
    assert hw.immediates(a, d, a_regs) == names
    for name in names:
        flags = dict(trans_a=False, trans_b=False, scale_a=1, scale_b=1)
        flags[name] = True if name.startswith("trans") else -1
        b = "e5m2" if a == "e4m3" else a
        hw.check_form(f"m64n8k{hw.K_OF[a]}", a, b, d, flags["trans_a"], flags["trans_b"], flags["scale_a"],
                      flags["scale_b"], False)


def test_sparse_selector_rule_is_the_models():
    assert hw.sparse_selector("f16", np.int64(1)) == 1
    with pytest.raises(LayoutError, match="e4m3 takes sp-sel 0 "):
        hw.sparse_selector("e4m3", 1)
    with pytest.raises(LayoutError, match="not a sparse wgmma multiplicand"):
        hw.sparse_selector("b1", 0)


def test_tcgen05_tables():
    assert set(bw.K_OF_KIND) == set(bw.KINDS) and set(bw.BLOCK_SCALED) | set(bw.WS_KINDS) == set(bw.KINDS)
    assert not set(bw.BLOCK_SCALED) & set(bw.WS_KINDS) and set(bw.GROUPED) <= set(bw.BLOCK_SCALED)
    assert [bw.a_tmem_bits(k, a) for k, a in (("tf32", "tf32"), ("f16", "bf16"), ("f8f6f4", "e2m1"), ("mxf4", "e2m1"),
                                              ("i8", "s8"))] == [32, 16, 8, 4, 8]
    d = instr.InstrDescriptor("mxf4nvf4", "e2m1", "e2m1", m=128, n=64, scale_type="ue8m0")
    assert {bw.block_size(d, bw.SCALE_VEC[q]) for q in ("block16", "block32", "scale_vec::2X", "scale_vec::4X")} == \
        {16, 32}
