"""Hostile-input campaign (tests/support/campaign.py: the rule, the harness, the shared values) over the entry
points of the number formats and the fused dot-product engine (for users who compose their own instruction)."""
import numpy as np
import pytest
from hypothesis import strategies as st

from tcemu.arith import formats
from tcemu.arith.fdp import FdpUnit, RZ, decode_operand, fused_dot, grouped_dot, integer_dot

from campaign import (Arr, Const, Flag, Int, NUMBERS, Name, Opt, Param, RNG, campaign_limits,
                      Registry)  # noqa: F401 (campaign_limits: a fixture)

pytestmark = pytest.mark.usefixtures("campaign_limits")
ENTRIES = Registry()
entry = ENTRIES.entry

# formats and the capture's generator
entry("formats.encode", formats.encode,
      Arr(st.just(None).map(lambda _: RNG.standard_normal(8)), [np.array(["1"]), np.array([1 + 2j])],
          as_float=False, as_object=False, ok=NUMBERS),
      Name(["bf16", "e4m3", "e2m1", "ue8m0", "tf32"]), rounding=Name(["rne", "rz", "rna"]), saturate=Flag())

# formats take object arrays of Python ints as bit patterns (exactly, range-checked): as_object=False
entry("formats.decode", formats.decode,
      Arr(st.just(None).map(lambda _: RNG.integers(0, 256, 8)), [np.array([256]), np.array([-1])], as_object=False),
      Name(["e4m3", "e5m2", "ue8m0", "e2m3"]))
entry("formats.from_bits", formats.from_bits, Arr(st.just(np.arange(16)), [np.array([1 << 16]), np.array([-1])],
                                                 as_object=False),
      Name(["bf16", "f16", "e4m3", "e2m1"], bad=["ue4m3"]))
entry("formats.decode_int", formats.decode_int, Arr(st.just(np.arange(16)), [np.array([256]), np.array([-1])],
                                                   as_object=False),
      Name(["s8", "u8"]))

# fdp (the engine, for users who compose their own instruction)
_DEC = decode_operand(RNG.integers(0, 1 << 16, (4, 16)), "bf16")
UNIT = FdpUnit(25, "f32", 23, RZ)
entry("fdp.decode_operand", decode_operand, Arr(st.just(RNG.integers(0, 1 << 16, (4, 16))),
                                                 [np.full(3, 1 << 16), np.full(3, -1)]),
      Name(["bf16", "f16", "e4m3"]), Flag())
entry("fdp.fused_dot", fused_dot, Param(st.just(_DEC), st.sampled_from([_DEC[:, :8], _DEC.astype(np.int32),
                                                                         _DEC[..., :4], "A", None])),
      Param(st.just(_DEC), st.sampled_from([_DEC[:, :15], _DEC.astype(float), _DEC[None]])),
      Opt(Param(st.just(decode_operand(np.zeros((4, 4), np.uint32), "f32")), st.sampled_from([_DEC]))),
      Param(st.just(UNIT), st.sampled_from([None, (25, "f32", 23, 1), FdpUnit(25, "bf16", 7, RZ)])))
_E2M1 = decode_operand(RNG.integers(0, 16, (4, 32)), "e2m1")
_SCALE = decode_operand(np.full((4, 2), 127), "ue8m0")
entry("fdp.grouped_dot", grouped_dot, Param(st.just(_E2M1), st.sampled_from([_E2M1[:, :16], _DEC, None])),
      Param(st.just(_E2M1), st.sampled_from([_E2M1[:, :31], _E2M1.astype(np.float32)])), Opt(Param(st.none())),
      Param(st.just(_SCALE), st.sampled_from([_SCALE[:, :1], _SCALE[:3], "x"])),
      Param(st.just(_SCALE), st.sampled_from([_SCALE[..., :4], None])), Const(FdpUnit(35, "f32", 23, RZ, -139)),
      Int([16], lo=1, hi=32, bad=[0, 5, 64]))
entry("fdp.integer_dot", integer_dot, Arr(st.just(RNG.integers(-128, 128, (4, 32))), [np.zeros((4, 31))]),
      Arr(st.just(RNG.integers(-128, 128, (8, 32))), [np.zeros((8, 33)), np.full((8, 32), 1 << 40)]),
      Opt(Arr(st.just(np.zeros((4, 8), np.int64)), [np.zeros((4, 7))])), satfinite=Flag(), popc=Flag())


test_entry_point = ENTRIES.test()
