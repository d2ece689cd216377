"""Hostile-input campaign (tests/support/campaign.py: the rule, the harness, the shared values) over the entry
points of the JSON API's views of tcemu serve (request fields as a query string or JSON body gives them)."""
import pytest
from hypothesis import strategies as st

from tcemu.serve import api as serve_api, ptxrun as serve_api_ptx

from campaign import (D100, D90, HUGE, Param, TID_PTX, campaign_limits,
                      Registry)  # noqa: F401 (campaign_limits: a fixture)

pytestmark = pytest.mark.usefixtures("campaign_limits")
ENTRIES = Registry()
entry = ENTRIES.entry

# tcemu serve: the JSON API's views (request fields as a query string or JSON body gives them)
SERVE_BAD = ["-8", "0x", "x", "9" * 5000, "1e3", [], {}, 1.5, "a" * 300, "\x00", HUGE, float("nan")]  # null: unset


def Request(valid, reads=()):
    """A request of a serve view: `valid` requests; bad: one of them with one of the fields it sets (or of
    `reads`, fields every one of these requests reads) made hostile, an unknown field, or no mapping at all."""
    pairs = [(r, sorted(set(r) | set(reads))) for r in valid]
    hostile = st.sampled_from(pairs).flatmap(lambda rf: st.tuples(
        st.just(rf[0]), st.sampled_from(rf[1]), st.sampled_from(SERVE_BAD))).map(lambda t: dict(t[0], **{t[1]: t[2]}))
    junk = st.sampled_from([None, [], "x", 7, {"nonsense": "1"}, {1: 2}, {"x" * 300: "1"}])
    return Param(st.sampled_from(valid), hostile | junk)


entry("serve.descriptor_view", serve_api.descriptor_view,
      Request([{"descriptor": hex(D90[0].encode())}, {"descriptor": hex(D90[1].encode()), "rows": "16", "k": "32"},
               {"input": "fields", "start_address": "0x400", "lbo": "16", "sbo": "0x400", "swizzle": "128B"},
               {"arch": "sm100", "descriptor": hex(D100[0].encode()), "instr": "0x8400490", "kind": "f16"},
               {"descriptor": hex(D90[0].encode()), "sparse": "1", "operand": "b"}], ["arch", "sparse"]))
entry("serve.swizzle_view", serve_api.swizzle_view,
      Request([{"mode": "128B"}, {"mode": "32B", "base_offset": "1"}, {"mode": "128B_base32B"}], ["base_offset"]))
entry("serve.tma_view", serve_api.tma_view,
      Request([{"dims": "64x64", "box": "64x64", "swizzle": "128B", "smem_addr": "0x400", "k": "16"},
               {"dims": "64x40", "box": "64x64", "coords": "0,8", "swizzle": "128B", "major": "MN"},
               {"dims": "24x16", "box": "24x16", "swizzle": "none", "k": "24"}],
              ["coords", "smem_addr", "element_strides", "dtype", "arch"]))
entry("serve.instr_view", serve_api.instr_view,
      Request([{"instr": "0x8400490", "kind": "f16"}, {"instr": "0x8400490", "kind": "f16", "cta_group": "1"}],
              ["cta_group"]))
entry("serve.tmem_view", serve_api.tmem_view,
      Request([{"instr": "0x8400490", "kind": "f16", "d_tmem": hex(16 << 16 | 8), "a_tmem": "0x100"},
               {"instr": "0x8400490", "kind": "f16"}], ["d_tmem", "cta_group"]))
entry("serve.banks_view", serve_api.banks_view,
      Request([{"op": "ldmatrix.x4", "pattern": "(t % 8) * 128 + (t // 8) * 16"},
               {"op": "st.shared.b32", "source": "addresses", "addresses": ", ".join(hex(4 * t) for t in range(32))}],
              ["mask"]))
entry("serve.ptx_view", serve_api_ptx.ptx_view,
      Request([{"ptx": TID_PTX, "block": "64", "args": "zeros:u32:64 64"},
               {"ptx": TID_PTX, "block": "32", "args": "zeros:u32:32 32", "limit": "7"}],
              ["grid", "warp", "cta", "limit", "kernel", "shared"]), weight=0.7)


test_entry_point = ENTRIES.test()
