"""Hostile-input campaign (tests/support/campaign.py: the rule, the harness, the shared values) over the entry
points of check, explain, lint, operand specs, the pictures."""
import os
import tempfile

import numpy as np
import pytest
from hypothesis import strategies as st

import tcemu
from tcemu.blackwell.instr import InstrDescriptor
from tcemu.tools import check, explain
from tcemu.tools.operand import instruction_k, operand_spec

from campaign import (ARCH, Arr, BAD_DESC, Const, D100, D90, DESC100, DESC90, DTYPE90, Flag, IDESC, Int, KS, MAJOR,
                      Name, Opt, Param, ROWS, SP_META, SWIZZLE_NAME, _has_error_finding, _instr_descs,
                      campaign_limits, Registry)  # noqa: F401 (campaign_limits: a fixture)

pytestmark = pytest.mark.usefixtures("campaign_limits")
ENTRIES = Registry()
entry = ENTRIES.entry

# check, explain, pictures
WRITTEN = Arr(st.just(tcemu.operand_addresses(D90[0], rows=64, k=16, dtype="bf16")),
              [np.zeros(16, np.int64), np.full((64, 16), -1), np.full((8, 8), 1 << 50)])
entry("check_operand", check.check_operand, WRITTEN, DESC90, dtype=Name(["bf16"]), major=Const("K"),
      operand=Param(st.just("A"), st.sampled_from([None, 1, "x" * 100])), max_lines=Int([0, 8], lo=0, bad=[2.5]),
      arch=Const("sm90"))
entry("suggest_descriptor", check.suggest_descriptor, WRITTEN, dtype=Name(["bf16"]), major=MAJOR, arch=ARCH)
entry("explain", explain.explain, DESC90, dtype=DTYPE90, major=MAJOR, rows=ROWS, k=Opt(KS), arch=Const("sm90"),
      reports=explain.has_errors)
entry("explain(instr)", explain.explain, DESC100, instr=IDESC, kind=Param(st.none()),
      operand=Name(["a", "b"], bad=["c", "A" * 3]), reports=explain.has_errors)
entry("lint", explain.lint, DESC90, dtype=DTYPE90, major=MAJOR, rows=ROWS, k=Opt(KS), arch=ARCH,
      reports=_has_error_finding)
entry("instruction_k", explain.instruction_k, DTYPE90, ARCH)
entry("describe_instruction", explain.describe_instruction,
      Param(_instr_descs(), st.sampled_from([None, 1, "x", object()])))
entry("pictures.swizzle_atom", lambda mode, path, base_offset: __import__("tcemu.tools.pictures").tools.pictures.swizzle_atom(
    mode, path, base_offset=base_offset), SWIZZLE_NAME,
      Param(st.just(None).map(lambda _: os.path.join(tempfile.gettempdir(), "tcemu_campaign_atom.png")),
            st.sampled_from(["/nonexistent/x.png", "noext", tempfile.gettempdir(), "", None, 7,
                             "/proc/tcemu.png", "x.jpg"])),
      Int([0, 3], lo=0, hi=7), weight=0.2)


def _tile_written(desc, rows, k):
    return tcemu.operand_addresses(desc, rows=rows, k=k, dtype="bf16")


TILE_DESC = tcemu.GmmaDescriptor(0x400, 16, 1024, 0, "128B")
TILE = Arr(st.just(_tile_written(TILE_DESC, 64, 64)),  # 64 x 64 bf16: four K blocks of 16, 32 bytes apart
           [np.zeros((64, 0), np.int64), np.full((64, 64), -1), np.full((8, 8), 1 << 50), np.zeros(64, np.int64)])
entry("check_tile", check.check_tile, TILE,
      Param(st.sampled_from([TILE_DESC, TILE_DESC.encode(), hex(TILE_DESC.encode()),
                             check.k_block_descriptors(TILE_DESC, 4, 32)]),
            st.sampled_from(BAD_DESC + [[], [TILE_DESC] * 100, [1.5] * 4, {}, (TILE_DESC, "x")])),
      dtype=Name(["bf16"]), major=Const("K"), arch=Const("sm90"),
      k=Opt(Int([16, 32], lo=1, hi=64, bad=[0, 5, -16])), start_advance=Opt(Int([32, 0, 64], lo=-(1 << 18),
                                                                                    hi=1 << 18)),
      max_lines=Int([3], lo=0, hi=1 << 16, bad=[2.5]), operand=Param(st.just("A"), st.sampled_from([None, 1,
                                                                                                   "x" * 100])))
entry("k_block_descriptors", check.k_block_descriptors, DESC90, Int([1, 4], lo=1, hi=4096, bad=[0]),
      Int([32, 0, -32], lo=-(1 << 18), hi=1 << 18), arch=Const("sm90"))
IDESC_A = InstrDescriptor("f16", "bf16", "bf16", m=128, n=64)  # A: 128 x 16 bf16, K-major
entry("check_operand(instr)", check.check_operand,
      Arr(st.just(tcemu.operand_addresses(D100[0], rows=128, k=16, dtype="bf16", arch="sm100")),
          [np.zeros((128, 15), np.int64), np.full((128, 16), -1)]),
      DESC100, instr=Param(st.sampled_from([IDESC_A, IDESC_A.encode()]), IDESC.bad),
      kind=Opt(Name(["f16"], bad=["i8", "tf32"])), operand=Name(["A", "a"], bad=["C"]),
      cta_group=Opt(Int([1], lo=1, hi=2, bad=[0, 3])), padded=Opt(Flag()))
entry("operand_spec", operand_spec, IDESC, kind=Opt(Name(list(tcemu.instr.KINDS))),
      operand=Name(["A", "B", "a", "b"], bad=["C", "AB"]), cta_group=Opt(Int([1, 2], lo=1, hi=2, bad=[0, 3])))
entry("instruction_k(sparse)", instruction_k, DTYPE90, ARCH, Flag(), Name(["A", "B", "a"], bad=["C"]),
      padded=Opt(Flag()))
entry("describe_sparse_meta", explain.describe_sparse_meta,
      Arr(st.just(SP_META), [np.zeros(127, np.uint32), np.full(128, -1)]), Name(["bf16", "tf32"], bad=["b1"]),
      Int([0, 1], lo=0, hi=1, bad=[3]))


test_entry_point = ENTRIES.test()
