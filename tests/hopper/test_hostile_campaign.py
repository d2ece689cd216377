"""Hostile-input campaign (tests/support/campaign.py: the rule, the harness, the shared values) over the entry
points of wgmma, its form check, sparse wgmma and its metadata helpers."""
import numpy as np
import pytest
from hypothesis import strategies as st

import tcemu
from tcemu.hopper import sparse

from campaign import (Arr, Const, DESC90, FULL100, FULL90, Flag, Int, Name, Opt, Param, RNG, SP_META,
                      campaign_limits, Registry)  # noqa: F401 (campaign_limits: a fixture)

pytestmark = pytest.mark.usefixtures("campaign_limits")
ENTRIES = Registry()
entry = ENTRIES.entry

# wgmma
A_REGS = Param(st.none(), st.sampled_from([RNG.standard_normal((128, 4)), np.zeros((128, 3), np.uint32),
                                           np.full((128, 4), -1), "regs"]))
entry("wgmma", lambda smem, da, db, **kw: tcemu.wgmma(smem, da, db, **kw), Param(st.just(FULL90),
      st.sampled_from([FULL100, np.zeros(16, np.float32), "smem", None])), DESC90, DESC90,
      shape=Name(["m64n8k16", "m64n16k16", "m64n64k16"], bad=["m64n7k16", "m128n8k16", "m64n8k16" * 100]),
      dtype_a=Name(["bf16", "f16"]), dtype_b=Const("bf16"), dtype_d=Const("f32"),
      trans_a=Flag(), trans_b=Flag(), scale_d=Flag(), satfinite=Param(st.just(False), st.sampled_from(
          ["False", 0, None, True])),
      scale_a=Int([1, -1], lo=-1, hi=1, bad=[0]), scale_b=Int([1, -1], lo=-1, hi=1, bad=[2]),
      c=Opt(Arr(st.just(np.zeros((64, 8), np.float32)), [np.zeros((64, 8), np.float16), np.zeros((64, 9), np.float32)],
                as_float=False)), a_regs=A_REGS, weight=2)
entry("hopper.check_form", lambda *a: __import__("tcemu.hopper.wgmma").hopper.wgmma.check_form(*a),
      Name(["m64n8k16", "m64n256k16"]), Const("bf16"), Const("bf16"), Const("f32"), Flag(), Flag(),
      Int([1, -1], lo=-1, hi=1, bad=[0]), Int([1, -1], lo=-1, hi=1, bad=[0]), Param(st.just(False),
                                                                                     st.sampled_from(["False", 1])))
entry("wgmma_sp", lambda smem, da, db, **kw: sparse.wgmma_sp(smem, da, db, **kw),
      Param(st.just(FULL90), st.sampled_from([FULL100, np.zeros(16, np.float32), "smem", None])), DESC90, DESC90,
      shape=Name(["m64n8k32", "m64n16k32"], bad=["m64n8k16", "m64n7k32", "m128n8k32"]),
      dtype_a=Const("bf16"), dtype_b=Const("bf16"), dtype_d=Const("f32"),
      sparse_meta=Arr(st.just(SP_META), [np.zeros(127, np.uint32), np.full(128, -1), np.full(128, 1 << 32),
                                         np.zeros((2, 128), np.uint32)]),
      sparsity_selector=Int([0, 1], lo=0, hi=1, bad=[2, 3]), trans_a=Flag(), trans_b=Flag(), scale_d=Flag(),
      scale_a=Int([1, -1], lo=-1, hi=1, bad=[0]), scale_b=Int([1, -1], lo=-1, hi=1, bad=[2]),
      satfinite=Param(st.just(False), st.sampled_from(["False", 0, None, True])),
      c=Opt(Arr(st.just(np.zeros((64, 8), np.float32)), [np.zeros((64, 8), np.float16)], as_float=False)),
      a_regs=A_REGS, invalid_meta=Name(["raise", "gather"]), rule=Name(["selected", "signed", "zeros"]),
      weight=1.5)
NIBBLES = Arr(st.sampled_from([0x4, 0x9, 0xE]).map(lambda v: np.full((64, 8), v, np.uint8)),
              [np.full((64, 8), 16), np.full((64, 8), -1), np.zeros((64, 7), np.uint8), np.zeros((63, 8))])
entry("sparse.meta_registers", sparse.meta_registers, NIBBLES, Name(["bf16", "f16"], bad=["tf32x"]),
      Int([0, 1], lo=0, hi=1, bad=[2]), fill=Int([0, 0xFFFFFFFF], lo=0, hi=(1 << 32) - 1))
entry("sparse.meta_nibbles", sparse.meta_nibbles,
      Arr(st.just(SP_META), [np.zeros(127, np.uint32), np.full(128, -1), np.full(128, 1 << 32)]),
      Name(["bf16", "e4m3", "tf32"], bad=["b1"]), Int([0], lo=0, hi=1, bad=[2]))
entry("sparse.sparsify", sparse.sparsify,
      Arr(st.just(np.tile(np.array([0x3F80, 0, 0x4000, 0], np.uint16), (64, 8))),
          [np.ones((64, 32), np.uint16), np.zeros((64, 31), np.uint16), np.zeros((64, 32, 1), np.uint16)],
          as_float=True),
      Name(["bf16", "f16"], bad=["b1", "f32"]))
entry("sparse.densify", sparse.densify,
      Arr(st.just(np.ones((64, 16), np.uint16)), [np.ones((64, 15), np.uint16), np.full((64, 16), -1)]),
      NIBBLES, Name(["bf16"], bad=["b1"]))
entry("sparse.sparse_dot", lambda a, b, nib, c, **kw: sparse.sparse_dot(a, b, nib, c, **kw),
      Arr(st.just(RNG.integers(0, 1 << 16, (64, 16)).astype(np.uint16)), [np.zeros((64, 15), np.uint16),
                                                                         np.full((64, 16), 1 << 16)]),
      Arr(st.just(RNG.integers(0, 1 << 16, (8, 32)).astype(np.uint16)), [np.zeros((8, 31), np.uint16),
                                                                        np.zeros(32, np.uint16)]),
      NIBBLES, Opt(Arr(st.just(np.zeros((64, 8), np.uint32)), [np.zeros((64, 7), np.uint32)])),
      dtype_a=Const("bf16"), dtype_b=Const("bf16"), dtype_d=Name(["f32"], bad=["f16x", "bf16"]),
      scale_a=Int([1, -1], lo=-1, hi=1, bad=[0]), satfinite=Param(st.just(False), st.sampled_from(["False", 1])),
      rule=Name(["selected", "signed", "zeros", "halves"]))


test_entry_point = ENTRIES.test()
