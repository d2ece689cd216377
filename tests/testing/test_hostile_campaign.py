"""Hostile-input campaign (tests/support/campaign.py: the rule, the harness, the shared values) over the entry
points of the fuzz campaign and the descriptor oracle."""
import numpy as np
import pytest
from hypothesis import strategies as st

from tcemu.testing.fuzz import campaign as fuzz_campaign, random_case
from tcemu.testing.oracle import oracle

from campaign import (Flag, INF, Int, NAN, Name, Opt, Param, campaign_limits,
                      Registry)  # noqa: F401 (campaign_limits: a fixture)

pytestmark = pytest.mark.usefixtures("campaign_limits")
ENTRIES = Registry()
entry = ENTRIES.entry

# fuzz, oracle
entry("fuzz.campaign", lambda **kw: fuzz_campaign(progress=None, **kw),
      seconds=Param(st.sampled_from([0, 0.01]), st.sampled_from([NAN, INF, -1, 1e400, 1e9, "1", None, True])),
      cases=Opt(Int([0, 2], lo=0, hi=10 ** 9)), seed=Int([0, 7], lo=0, hi=(1 << 64) - 1),
      arch=Name(["sm90", "sm100"]), weight=0.3)
entry("fuzz.random_case", random_case, Param(st.integers(0, 99).map(np.random.default_rng),
                                             st.sampled_from([None, 5, "x", np.random.RandomState(0)])),
      Name(["sm90", "sm100"]))
entry("oracle", oracle, Int([0x400], lo=0, hi=1 << 18), Int([16, 128], lo=0, hi=1 << 18), Int([256], lo=0, hi=1 << 18),
      Int([0, 1], lo=-7, hi=7), Int([16, 128], lo=16, hi=128, bad=[48]), Int([16, 8], lo=1, hi=32, bad=[3]),
      Flag(), Int([8, 16], lo=1, hi=4096), Int([16], lo=1, hi=4096), weight=0.3)


test_entry_point = ENTRIES.test()
