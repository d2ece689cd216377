"""Hostile-input campaign (tests/support/campaign.py: the rule, the harness, the shared values) over the entry
points of tcemu.triton: run_compiled, run and TensorDescriptor on a tiny @triton.jit kernel."""
import numpy as np
import pytest
from hypothesis import strategies as st

import tcemu.frontends.triton as ttriton
import tcemu.ptx as tptx

from campaign import (Arr, HUGE, Int, Name, PTX_BAD, Param, TID_MODULE, campaign_limits,
                      Registry)  # noqa: F401 (campaign_limits: a fixture)

# compiles a @triton.jit kernel with Triton when it is installed (without it: tcemu.triton must refuse cleanly)
pytestmark = [pytest.mark.usefixtures("campaign_limits"), pytest.mark.needs_triton]
ENTRIES = Registry()
entry = ENTRIES.entry

# tcemu.triton: a tiny @triton.jit kernel (compiled once; later compiles hit Triton's cache)
try:
    import triton as _triton_pkg
    import triton.language as tl

    @_triton_pkg.jit
    def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        tl.store(y_ptr + i, tl.load(x_ptr + i, mask=m) + 1, mask=m)
except ImportError:  # Triton is optional: without it run/compile raise TritonError (also a clean error)
    add_one = None


def _add_one_meta():
    sig, consts, div = ttriton.specialize(add_one, {"x_ptr": "*i32", "y_ptr": "*i32", "n": 128, "BLOCK": 128})
    ptx, _, meta = ttriton.compile_kernel(add_one, signature=sig, constexprs=consts, num_warps=4, num_stages=1,
                                          divisibility=div)
    return tptx.load(ptx), meta


TRITON_COMPILED = _add_one_meta() if add_one is not None else (TID_MODULE, {})
VALUES = Param(st.sampled_from([lambda: {"x_ptr": np.arange(128, dtype=np.int32), "y_ptr": np.zeros(128, np.int32),
                                          "n": 128},
                                lambda: {"x_ptr": np.arange(256, dtype=np.int32), "y_ptr": np.zeros(256, np.int32),
                                         "n": 256}]),
               st.sampled_from([None, "x", [], {}, {"x_ptr": np.zeros(128, np.int32), "n": 128},
                                {"x_ptr": "a", "y_ptr": np.zeros(128, np.int32), "n": 128},
                                {"x_ptr": np.zeros(128, np.int32), "y_ptr": np.zeros(128, np.int32), "n": 100},
                                {"x_ptr": np.zeros(128, np.int32), "y_ptr": np.zeros(128, np.int32), "n": "128"},
                                {"x_ptr": np.zeros(128, np.int32), "y_ptr": np.zeros(128, np.int32), "n": HUGE},
                                {"x_ptr": np.zeros(128, np.int32), "y_ptr": np.zeros(128, np.int32), "n": 128,
                                 "BLOCK": 64}]))


def _run_compiled(ptx, meta, values, grid):
    values = values() if callable(values) else values
    return ttriton.run_compiled(ptx, meta, values, grid=grid, printf="collect")


entry("triton.run_compiled", _run_compiled,
      Param(st.sampled_from([TRITON_COMPILED[0]]), st.sampled_from([None, 7, "garbage", PTX_BAD[-1]])),
      Param(st.just(TRITON_COMPILED[1]), st.sampled_from([None, {}, "x", [], {"entry": "add_one"},
                                                          dict(TRITON_COMPILED[1], params="x"),
                                                          dict(TRITON_COMPILED[1], block=[0, 1, 1]),
                                                          dict(TRITON_COMPILED[1], shared_bytes=-1),
                                                          dict(TRITON_COMPILED[1], entry=HUGE)])),
      VALUES, Param(st.sampled_from([(1,), (2,), [1, 1, 1], (2, 1)]),
                    st.sampled_from([(0,), "x", (1, 1, 1, 1), (HUGE,), (1.5,), (-1,)])), weight=0.7)


def _triton_run(fn, grid, values, **kw):
    values = values() if callable(values) else values
    if not isinstance(values, dict):
        return ttriton.run(fn, grid, launch={"printf": "collect"}, **kw)
    return ttriton.run(fn, grid, BLOCK=128, launch={"printf": "collect"}, **values, **kw)


RUN_VALUES = Param(VALUES.valid, st.sampled_from([None, "x", [], {}, {"x_ptr": np.zeros(128, np.int32), "n": 128},
                                                   {"x_ptr": "a", "y_ptr": np.zeros(128, np.int32), "n": 128},
                                                   {"x_ptr": np.zeros(128, np.int32), "y_ptr": np.zeros(128, np.int32),
                                                    "n": "128"},
                                                   {"x_ptr": np.zeros(128, np.int32), "y_ptr": np.zeros(128, object),
                                                    "n": 128},
                                                   {"x_ptr": np.zeros(128, np.int32), "y_ptr": np.zeros(128, np.int32),
                                                    "n": HUGE}]))
entry("triton.run", _triton_run, Param(st.just(add_one), st.sampled_from([None, 7, "x", print, lambda x: x])),
      Param(st.sampled_from([(1,), 1, (2,)]), st.sampled_from([(0,), "x", (1, 1, 1, 1), (HUGE,), (1.5,), None])),
      RUN_VALUES, num_warps=Int([4, 2], lo=1, hi=32, bad=[3, 0, 64]), num_stages=Int([1, 3], lo=1, hi=8, bad=[0]),
      arch=Name(["sm90"], bad=["sm80"]), weight=0.5)
entry("triton.TensorDescriptor", ttriton.TensorDescriptor,
      Arr(st.sampled_from([(64, 64), (16, 32, 64)]).map(lambda s: np.zeros(s, np.uint16)),
          [np.zeros((64, 64), np.uint16)[:, ::2], np.zeros(()), np.zeros((64, 64), object)], as_float=False,
          as_object=False),
      Param(st.just(None).map(lambda _: [64, 64]), st.sampled_from([[64.5, 64], "x", None, [0, 64], [-1, 64],
                                                                     [HUGE, 64], [64] * 6, [[64]], [True, 8]])))


test_entry_point = ENTRIES.test()
