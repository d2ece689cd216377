"""Hostile-input campaign (tests/support/campaign.py: the rule, the harness, the shared values) over the entry
points of tcemu.matmul (plain, block-scaled, sm100 mx scales)."""
import numpy as np
import pytest
from hypothesis import strategies as st

import tcemu

from campaign import (Arr, HUGE, INF, Int, NAN, Name, Opt, Param, RNG, campaign_limits,
                      Registry)  # noqa: F401 (campaign_limits: a fixture)

pytestmark = pytest.mark.usefixtures("campaign_limits")
ENTRIES = Registry()
entry = ENTRIES.entry

MM_A = RNG.integers(0, 1 << 16, (16, 32)).astype(np.uint16) & 0x7F7F   # bf16 bits: finite values
MM_B = RNG.integers(0, 1 << 16, (32, 8)).astype(np.uint16) & 0x7F7F
entry("matmul", lambda a, b, **kw: tcemu.matmul(a, b, dtype_b="bf16", **kw),
      Arr(st.just(MM_A), [MM_A[:, :31], MM_A.astype(np.int64) + (1 << 16), MM_A[None], MM_A[:0], np.zeros((16, 32),
                                                                                                    np.float16)]),
      Arr(st.just(MM_B), [MM_B[:31], MM_B.astype(np.int64) - (1 << 20), MM_B.ravel(), np.zeros((32, 8), np.float32)]),
      dtype_a=Name(["bf16"], bad=["e4m3", "tf32"]), arch=Name(["sm90", "sm100"]), dtype_d=Name(["f32"], bad=["f16"]),
      out_dtype=Opt(Name(["f32", "bf16", "f16"], bad=["e4m3", "s32"])),
      c=Opt(Arr(st.just(np.zeros((16, 8), np.float32)), [np.zeros((16, 9), np.float32), np.zeros((16, 8), np.float16)],
                as_float=False)),
      k_step=Opt(Int([16, 32, 7], lo=1, bad=[0, -16])), promote_every=Opt(Int([1, 2], lo=1, bad=[0, -1])),
      split_k=Int([1, 2], lo=1, bad=[0, -1]), workers=Opt(Int([1, 2], lo=1, bad=[0, -2])),
      init=Name(["zero", "none"]), engine=Name(["fast", "reference"]),
      alpha=Opt(Param(st.sampled_from([1.0, 0.9375, 2, np.float32(0.5)]),
                      st.sampled_from([NAN, INF, "1", True, 0.1, [1.0], 1j, HUGE, np.array([1.0])]))),
      satfinite=Param(st.just(False), st.sampled_from(["False", 0, None, 1])),
      progress=Param(st.sampled_from([False, lambda done, total: None]), st.sampled_from(["yes", 1, [], 5.0])),
      tile=Param(st.none(), st.sampled_from([(64, 64), "x", 7])), weight=1.5)
FP8_A = RNG.integers(0, 0x78, (8, 256)).astype(np.uint8)   # e4m3 finite bits
FP8_B = RNG.integers(0, 0x78, (256, 8)).astype(np.uint8)
SCALE_A, SCALE_B = np.float32(RNG.random((8, 2)) + 0.5), np.float32(RNG.random((1, 2)) + 0.5)
entry("matmul(BlockScales)", lambda sa, sb, a_block, b_block, block_k, promote: tcemu.matmul(
    FP8_A, FP8_B, dtype_a="e4m3", dtype_b="e4m3", promote_every=promote,
    scales=tcemu.BlockScales(sa, sb, a_block, b_block, block_k)),
      Arr(st.just(SCALE_A), [SCALE_A[:, :1], SCALE_A.astype(np.float64), np.zeros((8, 2), np.int32)],
          as_float=False),  # a NaN / inf scale is data: the promotion FFMA multiplies it (NaN / inf out)
      Arr(st.just(SCALE_B), [SCALE_B[:, :1], np.zeros((2, 2), np.float32)],
          as_float=False),
      Int([1], lo=1, bad=[0, 3]), Int([128], lo=1, bad=[0, 7]), Int([128], lo=1, bad=[0, 100]),
      Int([4], lo=1, bad=[0, 3]))
MX_SCALES = (RNG.integers(120, 130, (16, 1)), RNG.integers(120, 130, (8, 1)))
entry("matmul(sm100 mx scales)", lambda a, b, scales, **kw: tcemu.matmul(a, b, dtype_a="e4m3", dtype_b="e4m3",
                                                                        arch="sm100", scales=scales, **kw),
      Param(st.just(FP8_A[:, :32].repeat(2, 0)), st.sampled_from([FP8_A, "x"])),
      Param(st.just(FP8_B[:32]), st.sampled_from([FP8_B[:31], None])),
      Param(st.just(MX_SCALES), st.sampled_from([MX_SCALES[0], (MX_SCALES[0], MX_SCALES[0]),
                                                 (MX_SCALES[0] + 200, MX_SCALES[1]), (MX_SCALES[0].astype(float),
                                                                                      MX_SCALES[1]), "x", ()])),
      kind=Opt(Name(["mxf8f6f4"], bad=["f16", "mxf4"])), out_dtype=Opt(Name(["f32", "bf16"])))  # None: from dtype


@pytest.fixture(scope="module", autouse=True)
def _compiled():
    """numba compiles a kernel at its first call (about 10 s for the matmul engines on a cold cache, as in CI's
    fresh clone): compile them before the hang alarm times any call."""
    for kw in ({}, {"engine": "reference"}, {"init": "none", "promote_every": 1, "split_k": 2, "out_dtype": "bf16"}):
        tcemu.matmul(MM_A, MM_B, dtype_a="bf16", dtype_b="bf16", **kw)
    tcemu.matmul(FP8_A, FP8_B, dtype_a="e4m3", dtype_b="e4m3", promote_every=4,
                 scales=tcemu.BlockScales(SCALE_A, SCALE_B, 1, 128, 128))


test_entry_point = ENTRIES.test()
