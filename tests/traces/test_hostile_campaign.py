"""Hostile-input campaign (tests/support/campaign.py: the rule, the harness, the shared values) over the entry
points of the capture's input generators, launch records (tcemu.launches), the zero-sign replay and whole trace files
(small valid ones cut from the bundled captures, crafted hostile ones and random mutations); no trace is ever
unpickled (test_no_trace_was_unpickled)."""
import json
import os

import numpy as np
import pytest
from hypothesis import strategies as st

import tcemu.ptx as tptx
from tcemu import TcemuError
from tcemu import traces
from tcemu.traces import inputs as kernel_inputs, launches, seeds
from tcemu.traces.kinds import zero_sign

from campaign import (Arr, HUGE, Int, Name, Opt, Param, RNG, TID_MODULE, TRIPWIRE, _trace_dir, trace_files,
                      campaign_limits, Registry)  # noqa: F401 (campaign_limits: a fixture)
from paths import PTX_FIXTURES

pytestmark = pytest.mark.usefixtures("campaign_limits")
ENTRIES = Registry()
entry = ENTRIES.entry

entry("seeds.rnd", seeds.rnd, Int([0, 5, (1 << 64) - 1], lo=0, hi=(1 << 64) - 1), Int([0, 2, 3], lo=0),
      Arr(st.just(np.arange(8)), [np.zeros((1 << 25,), np.uint8)]))
entry("seeds.special_bits", seeds.special_bits, Int([0, 5], lo=0, hi=5, bad=[99]), Int([0, 7], lo=0, hi=7),
      Int([0, 1], lo=0, hi=1))
entry("seeds.operand_bits", seeds.operand_bits, Int([1, 99], lo=0), Int([0, 3, 20], lo=0, hi=20),
      Int([0, 1], lo=0), Name(["A", "B", "a"]), Int([8, 64], lo=1, hi=1 << 20))
entry("seeds.c_bits", seeds.c_bits, Int([1], lo=0), Int([0, 17], lo=0, hi=20), Int([8], lo=1, hi=1 << 20))

# kernel inputs and tensor maps of whole-kernel runs
entry("kernel_inputs.input_bits", kernel_inputs.input_bits, Name(["bf16", "f16", "f32", "e4m3"], bad=["e5m2"]),
      Param(st.sampled_from([(4,), (3, 5), [2, 2], (1, 1, 1, 1)]),
            st.sampled_from([(-1,), (0.5,), "x", None, (1 << 40,), (1 << 20, 1 << 20), (HUGE,), [[2]]])),
      Int([0, 7, (1 << 64) - 1], lo=0, hi=(1 << 64) - 1), Int([0, 1], lo=0, hi=(1 << 64) - 1))

# launch records (tcemu.launches): the pingpong CUTLASS kernel, 200 x 136 x 200 (one output tile per CTA)
PP_JSON = json.load(open(os.path.join(PTX_FIXTURES, "cutlass_pingpong_bf16.json")))
PP_RECORD = next(r for r in PP_JSON["launches"] if r["case"][0] == 200)
PP_MODULE = tptx.load(os.path.join(PTX_FIXTURES, "cutlass_pingpong_bf16.ptx"))


def _record(**changes):
    return dict(PP_RECORD, **changes)


def _buffers(**changes):
    return [dict(b, **changes) for b in PP_RECORD["buffers"]]


BAD_RECORDS = [None, "x", [], {}, _record(grid=[1 << 20, 1 << 20, 1]), _record(grid="x"), _record(block=[4096, 1, 1]),
               _record(param_blob="zz"), _record(param_blob=PP_RECORD["param_blob"][:-2]), _record(param_blob=7),
               _record(buffers=_buffers(storage=["200", 136])), _record(buffers=_buffers(storage=[1 << 30, 1 << 30])),
               _record(buffers=_buffers(dtype="e9m9")), _record(buffers=_buffers(role="eval")),
               _record(buffers=_buffers(address=-256)), _record(buffers=_buffers(address=1.5)),
               _record(buffers=_buffers(address=1 << 70)), _record(buffers=_buffers(bytes=HUGE)),
               _record(buffers="x"), _record(buffers=PP_RECORD["buffers"] * 2),
               _record(encodes=[dict(e, dims=["x"] * e["rank"]) for e in PP_RECORD["encodes"]]),
               _record(encodes=[dict(e, rank=9) for e in PP_RECORD["encodes"]]),
               _record(encodes=[dict(e, dtype=99) for e in PP_RECORD["encodes"]]),
               _record(encodes=[dict(e, box=[1 << 20] * e["rank"]) for e in PP_RECORD["encodes"]]),
               _record(tensormaps=[dict(t, offset=3) for t in PP_RECORD["tensormaps"]]),
               _record(tensormaps=[dict(t, encode=99) for t in PP_RECORD["tensormaps"]]),
               _record(pointers=[{"offset": 0, "buffer": "nope", "delta": 0}]),
               _record(pointers=[{"offset": "0", "buffer": "A", "delta": 0}]),
               _record(params=[dict(p, offset=p["offset"] + 8) for p in PP_RECORD["params"]]),
               _record(params="x"), _record(entry="_Z6nosuch"), _record(entry=None), _record(cluster=[0, 1, 1]),
               _record(shared_bytes=-1), _record(shared_bytes=1 << 40),
               {k: v for k, v in PP_RECORD.items() if k != "encodes"}]
entry("launches.replay", lambda rec, ptx, **kw: launches.replay(rec, ptx, **kw),
      Param(st.just(PP_RECORD), st.sampled_from(BAD_RECORDS)),
      Param(st.just(PP_MODULE), st.sampled_from(["garbage", 7, None, TID_MODULE, b"\xff", [PP_MODULE]])),
      seed=Int([0, 7, (1 << 64) - 1], lo=0, hi=(1 << 64) - 1),
      inputs=Opt(Param(st.just(None).map(lambda _: {"A": RNG.integers(0, 1 << 16, (200, 200)).astype(np.uint16)}),
                       st.sampled_from([{"Z": np.zeros(4)}, {"A": np.zeros((200, 199), np.uint16)}, "x", [],
                                        {"A": np.zeros((200, 200), object)}, {"A": "x"}, {"D": np.zeros((200, 136),
                                                                                               np.float32)},
                                        {7: np.zeros(4)}]))),
      cluster=Opt(Param(st.sampled_from([(1, 1, 1), [1, 1, 1]]),
                        st.sampled_from([(0, 1, 1), "x", (1.5, 1, 1), (HUGE, 1, 1), (64, 1, 1)]))),  # (1, 1): a dim3
      check=lambda r: np.asarray(r.outputs["D"]).shape == (200, 136) or pytest.fail("wrong output shape"),
      weight=0.5, slow=True)
_LAUNCH_TRACE = []


def _launch_trace():
    """The campaign's cut launch_outputs trace (one pingpong case), loaded once."""
    if not _LAUNCH_TRACE:
        _LAUNCH_TRACE.append(traces.load_trace(os.path.join(_trace_dir()[0], "launch.npz")))
    return _LAUNCH_TRACE[0]


def _trace_case(trace, i, modules):
    t = _launch_trace() if trace == "launch" else trace() if callable(trace) else trace
    return launches.replay_trace_case(t, i, {"cutlass_pingpong_bf16": PP_MODULE} if modules == "cached" else modules)


def _hand_trace(**meta_changes):
    """A Trace built by hand from the cut one, its meta changed (made when drawn: the files exist by then)."""
    return lambda: traces.Trace(_launch_trace().path, dict(_launch_trace().meta, **meta_changes),
                                _launch_trace().columns)


entry("launches.replay_trace_case", _trace_case,
      Param(st.just("launch"), st.sampled_from([None, "x", {}, 7, _hand_trace(cases="x"), _hand_trace(kind="ptx_alu"),
                                                _hand_trace(cases=[{"fixture": "x"}]), _hand_trace(fixtures={}),
                                                lambda: traces.load_trace(os.path.join(_trace_dir()[0], "zs.npz"))])),
      Int([0], lo=0, hi=0, bad=[1, -1]),
      Param(st.sampled_from([None, "cached", {}]), st.sampled_from(["x", [], 5, {"cutlass_pingpong_bf16": "module"},
                                                                    {"cutlass_pingpong_bf16": TID_MODULE}])),
      weight=0.5, slow=True)

# the zero-sign replay (tcemu.traces.kinds.zero_sign): the campaign's cut trace (three cases tcemu's model gives)
_ZS = []


def _zs():
    if not _ZS:
        t = traces.load_trace(os.path.join(_trace_dir()[0], "zs.npz"))
        _ZS.append((t.meta, t.columns))
    return _ZS[0]


def _zs_meta(**changes):
    return lambda: dict(_zs()[0], **changes)


def _zs_cols(**changes):
    return lambda: dict(_zs()[1], **changes)


def _replay_zero_sign(meta, cols, hypotheses):
    meta = _zs()[0] if meta == "zs" else meta() if callable(meta) else meta
    cols = _zs()[1] if cols == "zs" else cols() if callable(cols) else cols
    return zero_sign.replay_zero_sign(meta, cols, hypotheses)


entry("zero_sign.replay_zero_sign", _replay_zero_sign,
      Param(st.just("zs"), st.sampled_from([None, "x", [], {}, _zs_meta(kinds=[["s8", "s8", "s32"]] * 5),
                                            _zs_meta(kinds="x"), _zs_meta(instantiations=[[0, 9, 8, 1, 1]] * 20),
                                            _zs_meta(instantiations=[[0, 0, 7, 1, 1]] * 20),
                                            _zs_meta(groups=None), _zs_meta(kind="ptx_alu"),
                                            _zs_meta(kinds=[["f16", "f16", "f16"]] * 5)])),
      Param(st.just("zs"), st.sampled_from([None, "x", [], {}, _zs_cols(pool=None), _zs_cols(pool=[1, 2, 3]),
                                            _zs_cols(a_len=np.full(3, 1 << 30, np.int32)),
                                            _zs_cols(a_off=np.full(3, -5, np.int32)),
                                            _zs_cols(d_offsets=np.zeros(4, np.int64)),
                                            _zs_cols(inst=np.full(3, 999, np.int16)),
                                            _zs_cols(inst=np.zeros(3, np.float64)),
                                            _zs_cols(sp_meta=np.full(3, -1, np.int64)),
                                            _zs_cols(group=np.zeros(2, np.int16)),
                                            _zs_cols(pool=np.full(9628, 0xFFFFFFFF, np.uint32))])),
      Param(st.sampled_from([(), zero_sign.HYPOTHESES, ("model",), ["signed_zero", "zeros"]]),
            st.sampled_from(["model", ["nonsense"], None, 5, [None], ("model", 7), {"model": 1}])),
      reports=lambda r: not r.ok, slow=True)   # a pool of NaN bits is a legal trace that does not replay


def _replay(path_bad):
    path, bad = path_bad
    result = traces.replay(path)
    if bad is False:
        assert result.ok, f"{path}: a valid trace must replay as a match"
    assert not bad, f"{path}: a crafted trace that must be refused replayed ({len(result.groups)} groups)"
    return result


entry("traces.replay", lambda t: _replay(t), Param(trace_files()), weight=1.5, slow=True)


test_entry_point = ENTRIES.test()


def test_no_trace_was_unpickled():
    """Runs after the trace entries (file order): the tripwire objects in crafted traces were never unpickled."""
    _, files = _trace_dir()
    for path, _ in files:
        if "objects" in path:
            with pytest.raises(TcemuError, match="object"):
                traces.load_trace(path)
    assert not os.path.exists(TRIPWIRE), "a trace's object array was unpickled"
