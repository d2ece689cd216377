"""Hostile-input campaign (tests/support/campaign.py: the rule, the harness, the shared values) over the entry
points of tcemu.ptx: loading (with mutated PTX texts), launching, device printf and instruction traces, tensor maps."""
import os

import numpy as np
import pytest
from hypothesis import strategies as st

import tcemu.ptx as tptx
from tcemu.ptx import tensormap

from campaign import (Arr, Flag, HUGE, Int, Name, Opt, PTX_BAD, Param, TID_MODULE, TID_PTX, campaign_limits,
                      Registry)  # noqa: F401 (campaign_limits: a fixture)
from paths import PTX_FIXTURES

pytestmark = pytest.mark.usefixtures("campaign_limits")
ENTRIES = Registry()
entry = ENTRIES.entry

TM_TENSOR = Arr(st.sampled_from([(64, 64), (4, 32, 64)]).map(lambda s: np.zeros(s, np.uint16)),
                [np.zeros((2,) * 6, np.uint16), np.zeros((8, 8), object), np.zeros((64, 64), np.uint16)[:, ::2],
                 np.zeros((8, 8), "U2")], as_float=False, as_object=False)
entry("ptx.tensormap.encode_tiled", tensormap.encode_tiled, TM_TENSOR,
      Param(st.sampled_from([[64, 8], [64, 4, 2], [8, 8]]), st.sampled_from([[0, 8], [300, 8], [8.0, 8], "x", None,
                                                                            [HUGE, 8], [8], [8] * 6, [7, 8]])),
      dtype=Opt(Name(["UINT16", "BFLOAT16", "FLOAT16", "CU_TENSOR_MAP_DATA_TYPE_UINT16"], bad=["FLOAT32"])),
      element_strides=Opt(Param(st.sampled_from([[1, 1], [1, 2, 1]]), st.sampled_from([[0, 1], [1, 9], 1, "x",
                                                                                       [1.5, 1]]))),
      swizzle=Name(["none", "32B", "64B", "128B", "128B_ATOM_32B"], bad=["16B"]),
      interleave=Name(["none"], bad=["32B"]), l2_promotion=Name(["none", "128B"], bad=["512B"]),
      oob_fill=Name(["none"], bad=["zero"]))


def _load_and_compile(source):
    """tcemu.ptx.load, then every kernel compiled (load parses; unsupported instructions are refused when a
    kernel is first compiled)."""
    module = tptx.load(source)
    return [module.program(name) for name in module.kernels]


PTX_TOKENS = list(" \n;,{}[]()<>.%@!+-:0123456789abcdefxyz_$|") + [
    ".reg", ".b32", "%r1", "%rd1", "[%rd1]", "ld.global.u32", "bra", "@%p0", ".entry", ".func", "ret;", "0x", "0f",
    ".x4", ".shared", ".sync", ".aligned", "::", ".v4", "{%r1, %r2}", "08", "1e3", "%p1"]
PTX_SOURCES = [TID_PTX] + [open(os.path.join(PTX_FIXTURES, n + ".ptx")).read()
                           for n in ("calls", "warp_kernels", "matmul_tma_bf16")]


@st.composite
def mutated_ptx(draw):
    """A bundled PTX text with a few characters or tokens deleted, inserted or cut off: it may still compile,
    or must be refused with a PtxError naming the line and column (the parser and every instruction compiler)."""
    text = draw(st.sampled_from(PTX_SOURCES))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        how = draw(st.sampled_from(["delete", "insert", "insert", "cut"]))
        if how == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 12)):]
        elif how == "insert":
            text = text[:i] + draw(st.sampled_from(PTX_TOKENS)) + text[i:]
        else:
            text = text[:i]
    return text


entry("ptx.load", _load_and_compile, Param(st.sampled_from([TID_PTX, TID_PTX.encode()]), st.sampled_from(PTX_BAD),
                                           mutated_ptx()))


def _launch(name, grid, block, args, **kw):
    args = args() if callable(args) else args  # a fresh output array per call
    return TID_MODULE.launch(name, grid=grid, block=block, args=args, printf="collect", **kw)


entry("ptx.Module.launch", _launch, Name(["store_tid"], bad=["store", "DONE"]),
      Param(st.sampled_from([1, (1,), (2, 1, 1), np.int64(1)]),
            st.sampled_from([0, -1, (1, 1, 1, 1), "x", 1.5, HUGE, None, (True,), (1 << 40,), ()])),
      Param(st.sampled_from([32, (64,), (128, 1, 1)]),
            st.sampled_from([0, 2048, (33, 33), "x", -32, HUGE, None, (1.5,)])),
      Param(st.sampled_from([lambda: [np.zeros(128, np.uint32), 100], lambda: {"out": np.zeros(128, np.uint32),
                                                                                  "n": 128}]),
            st.sampled_from([[], "x", None, [np.zeros(4, np.uint32), 100], [np.zeros(128, np.uint32), -1],
                             [np.zeros(128, np.uint32), 1.5], [np.zeros(128, np.uint32), 1 << 32],
                             [np.zeros(128, object), 1], [np.zeros(128, np.uint32), 1, 2], {"out": None},
                             [0, 100], [np.zeros(128, np.uint32), HUGE], [np.zeros(128, np.uint32), "5"]])),
      shared_bytes=Int([0, 1024], lo=0, hi=227 * 1024), zero_init_shared=Flag(), check_layouts=Flag(),
      check_races=Flag(),
      max_instructions=Opt(Int([10 ** 6], lo=1, bad=[0])),
      ctas=Opt(Param(st.just([(0, 0, 0)]), st.sampled_from([[(5, 0, 0)], [(-1,)], "x", [1.5], [(0, 0, 0, 0)], 3]))),
      trace=Opt(Param(st.just(lambda w, pc, m, c: None), st.sampled_from([5, "x", True]))), weight=1.5)

# device printf and per-instruction traces of Module.launch (tests/fixtures/ptx/calls.ptx: calls, vprintf, assert)
CALLS_MODULE = tptx.load(os.path.join(PTX_FIXTURES, "calls.ptx"))
entry("ptx.Module.launch(printf, trace)", lambda n, printf, trace: CALLS_MODULE.launch(
    "_Z1kPii", grid=1, block=64, args=[np.zeros(64, np.int32), n], printf=printf, trace=trace),
      Int([64, 40], lo=0, bad=[60]),       # n = 60: thread 60's assert(t < n) fails: a KernelFault (65: none does)
      Name(["collect", "stdout"], bad=["file", "print", "STDOUT"]),
      Opt(Param(st.sampled_from([lambda w, pc, m, c: None, print if False else (lambda *a: None)]),
                st.sampled_from([5, "x", True, object(), [print]]))),
      check=lambda st_: st_["printf"] == ["t=5 v=15 c=1 f=7.500000 s=hi\n"] or pytest.fail(str(st_["printf"])))


test_entry_point = ENTRIES.test()
