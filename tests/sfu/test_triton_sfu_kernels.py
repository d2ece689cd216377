"""Special-function Triton kernels (tutorials 02, 03, 05, 06 as Triton 3.9 writes them; scripts/triton_sfu_kernels.py)
against their outputs on an sm_90 GPU (traces/triton_sfu_kernels_sm90.npz, scripts/capture_sfu_kernels.py).

Every case is a sequence of launches (attention backward: forward, arg_k, preprocess, backward) and every output
buffer of it is compared byte for byte. Until tcemu models the approximate PTX forms these kernels use (ex2.approx,
div.full, sqrt.approx, tanh.approx), their replays skip with "needs the SFU models" -- only when the interpreter
refuses an approximate form, so they turn on by themselves once the models land. The launches that use no
approximate form (layer norm's dw/db reduction, attention's arg_k scaling and backward preprocess) are rerun today
from the buffers the capture recorded, and must match.
"""
import hashlib
import json
import os
import re
import sys

import numpy as np
import pytest

from tcemu.ptx.errors import PtxUnsupported
from tcemu.traces.kinds.kernel_outputs import fixture_from_trace, replay_launches
from tcemu.traces import check_trace, load_trace

import sfu_replays
from paths import CAPTURE, PTX_FIXTURES, TRACES, source_is_unchanged

TRACE_PATH = os.path.join(TRACES, "triton_sfu_kernels_sm90.npz")
FIXTURES = PTX_FIXTURES
TRACE = load_trace(TRACE_PATH)
CASES = TRACE.meta["cases"]
STORE = {"f16": 2, "f32": 4, "i32": 4}

# An approximate PTX form: what the SFU models will add (the opcode tcemu names when it refuses one).
APPROX_FORM = re.compile(r"^(?:ex2|lg2|rsqrt|sin|cos|tanh)\.|\.(?:approx|full)(?:\.|$)")
# The approximate forms in each fixture's PTX (instruction counts), as scripts/triton_sfu_kernels.py records them.
CENSUS = {
    "softmax_f32": {"div.full.f32": 4, "ex2.approx.f32": 4},
    "layernorm_fwd": {"div.full.f32": 3, "sqrt.approx.ftz.f32": 1},
    "layernorm_bwd_dx": {"div.full.f32": 2},
    "layernorm_bwd_dwdb": {},
    "attn_fwd_f16": {"div.full.f32": 64, "ex2.approx.ftz.f32": 68},
    "attn_fwd_causal_f16": {"div.full.f32": 64, "ex2.approx.ftz.f32": 136},
    "attn_scale_k": {},
    "attn_bwd_preprocess": {},
    "attn_bwd_f16": {"ex2.approx.ftz.f32": 64},
    "attn_bwd_causal_f16": {"ex2.approx.ftz.f32": 96},
    "matmul_gelu_erf": {"ex2.approx.ftz.f32": 128},
    "matmul_gelu_tanh": {"tanh.approx.f32": 128},
}
# One case per kernel is in the fast subset (-m "not slow"; about 30 s on the interpreter), the others are slow; the
# attention backward kernels are slow whatever the case (about 9 s each on 2 cores).
FAST = {"softmax_f32 48x781", "layernorm_fwd 64x512", "layernorm_bwd 64x512",
        "attn_fwd_f16 Z1 H2 N_CTX256 D64 sm_scale 0.125", "attn_fwd_causal_f16 Z1 H2 N_CTX256 D64 sm_scale 0.125",
        "matmul_gelu_erf 128x384x192", "matmul_gelu_tanh 128x384x192"}

_MODULES = {}


def _fixture(name):
    if name not in _MODULES:
        _MODULES[name] = fixture_from_trace(TRACE.columns, name)
    return _MODULES[name]


def _captured(i):
    """Output buffer name -> the bytes the GPU left in it (case i)."""
    cols, case = TRACE.columns, CASES[i]
    bits = cols["bits"][int(cols["offsets"][i]):int(cols["offsets"][i + 1])]
    out, at = {}, 0
    for o in case["outputs"]:
        n = int(np.prod(o["shape"])) * STORE[o["dtype"]]
        out[o["buffer"]] = bits[at:at + n]
        at += n
    assert at == bits.size
    return out


def _replay(fn):
    try:
        return fn()
    except PtxUnsupported as e:
        if APPROX_FORM.search(e.field):
            pytest.skip(f"needs the SFU models ({e.field} refused)")
        raise


def test_trace_is_a_clean_capture():
    check_trace(TRACE)
    meta = TRACE.meta
    assert not meta["dry_run"] and meta["compute_capability"] == [9, 0] and meta["kind"] == "kernel_outputs"
    assert len(CASES) == 14 and set(FAST) <= {c["name"] for c in CASES}
    for c in CASES:
        assert c["status"] == "ok" and c["deterministic"], c["name"]
        assert not any(c["guard_clobbered"].values()), c["name"]
        assert not any(c["poison_left"].values()), c["name"]   # every output element written


def test_fixtures_are_the_captured_ones():
    """The committed PTX and json are the ones the trace embeds (and the GPU ran: cubin sha256 in the json)."""
    for name, digests in TRACE.meta["fixtures"].items():
        ptx = open(os.path.join(FIXTURES, name + ".ptx"), "rb").read()
        js = open(os.path.join(FIXTURES, name + ".json"), "rb").read()
        assert hashlib.sha256(ptx).hexdigest() == digests["ptx_sha256"] == json.loads(js)["ptx_sha256"], name
        assert hashlib.sha256(js).hexdigest() == digests["json_sha256"], name
        assert digests["cubin_sha256"] == digests["cubin_sha256_in_json"], name
    assert set(TRACE.meta["fixtures"]) == set(CENSUS)


def test_fixtures_are_built_from_the_committed_source():
    for name in CENSUS:
        meta = json.load(open(os.path.join(FIXTURES, name + ".json")))
        ptx = open(os.path.join(FIXTURES, name + ".ptx")).read()
        assert re.search(r"^\.target\s+sm_90a\s*$", ptx, re.M) and meta["arch"] == "sm90", name
        assert meta["command"].startswith("PYTHONPATH=. python scripts/triton_sfu_kernels.py"), name
        assert meta["env"] == {"TRITON_DEFAULT_FP_FUSION": "1"} and meta["triton"] == "3.9.0", name
        # rebuilt since the kernels' source last changed
        assert source_is_unchanged("scripts/triton_sfu_kernels.py", meta["source_sha256"]), name


def test_approx_census():
    """Which approximate forms each kernel uses (what the SFU models must cover)."""
    pattern = re.compile(r"\b(?:(?:ex2|lg2|rsqrt|rcp|sqrt|sin|cos|tanh|div)\.(?:approx|full)[\w.]*|"
                         r"(?:ex2|lg2|rsqrt|sin|cos|tanh)\.[\w.]+)")
    for name, want in CENSUS.items():
        ptx = re.sub(r"//[^\n]*", "", open(os.path.join(FIXTURES, name + ".ptx")).read())
        got = {}
        for m in pattern.finditer(ptx):
            got[m.group(0)] = got.get(m.group(0), 0) + 1
        assert got == want, name
        assert json.load(open(os.path.join(FIXTURES, name + ".json")))["approx_census"] == want, name


def test_case_table_is_the_captured_one():
    """scripts/capture_sfu_kernels.py's CASES (its plan, without a GPU) are the trace's cases, launch for launch."""
    sys.path.insert(0, CAPTURE)
    try:
        import capture_sfu_kernels as cap
    finally:
        sys.path.pop(0)
    assert [c["name"] for c in cap.CASES] == [c["name"] for c in CASES]
    for plan, rec in zip(cap.CASES, CASES):
        assert [ln["fixture"] for ln in plan["launches"]] == [ln["fixture"] for ln in rec["launches"]]
        assert [ln["grid"] for ln in plan["launches"]] == [ln["grid"] for ln in rec["launches"]]
        assert [o["buffer"] for o in rec["outputs"]] == plan["outputs"]
        for ln, lr in zip(plan["launches"], rec["launches"]):
            for p in lr["params"]:
                if p["role"] == "scalar":
                    assert ln["values"][p["arg"]] == p["value"], (plan["name"], p["arg"])


def _rerun(i, j, produced, corrupt=None):
    """Rerun launch j of case i alone, every output buffer as the GPU left it except `produced` (poisoned again);
    the bytes of `produced` the interpreter computes, and the GPU's."""
    hw = _captured(i)
    initial = {n: b.copy() for n, b in hw.items() if n not in produced}
    if corrupt is not None:
        initial[corrupt][0] ^= 0x40
    case = dict(CASES[i], outputs=[o for o in CASES[i]["outputs"]])
    got_all = replay_launches(_fixture, case, only={j}, initial=initial)
    got, at = {}, 0
    for o in case["outputs"]:
        n = int(np.prod(o["shape"])) * STORE[o["dtype"]]
        got[o["buffer"]] = got_all[at:at + n]
        at += n
    return {n: got[n] for n in produced}, {n: hw[n] for n in produced}


@pytest.mark.parametrize("name,j,produced", [("layernorm_bwd 64x512", 2, ("dw", "db")),
                                            ("attn_bwd_causal_f16 Z1 H2 N_CTX256 D64 sm_scale 0.015625", 1,
                                             ("arg_k",)),
                                            ("attn_bwd_causal_f16 Z1 H2 N_CTX256 D64 sm_scale 0.015625", 2,
                                             ("delta",)),
                                            ("attn_bwd_f16 Z1 H2 N_CTX256 D64 sm_scale 0.015625", 2, ("delta",))])
def test_sfu_free_launches_match_today(name, j, produced):
    i = next(k for k, c in enumerate(CASES) if c["name"] == name)
    assert CENSUS[CASES[i]["launches"][j]["fixture"]] == {}
    got, hw = _rerun(i, j, produced)
    for n in produced:
        assert np.array_equal(got[n], hw[n]), f"{name} launch {j}: {n}: {np.count_nonzero(got[n] != hw[n])} bytes differ"


def test_rerun_sees_a_corrupted_input():
    """The reruns compare something: one flipped bit in a captured partial sum changes layer norm's dw."""
    i = next(k for k, c in enumerate(CASES) if c["name"] == "layernorm_bwd 64x512")
    got, hw = _rerun(i, 2, ("dw", "db"), corrupt="dw_part")
    assert not np.array_equal(got["dw"], hw["dw"]) and np.array_equal(got["db"], hw["db"])


@pytest.mark.parametrize("i", [pytest.param(k, id=c["name"].replace(" ", "-"),
                                            marks=() if c["name"] in FAST else pytest.mark.slow)
                               for k, c in enumerate(CASES)])
def test_case_replays_exactly(i):
    case = CASES[i]
    hw = TRACE.columns["bits"][int(TRACE.columns["offsets"][i]):int(TRACE.columns["offsets"][i + 1])]
    got = _replay(lambda: sfu_replays.triton_case(i))   # replay_launches(_fixture, case), maybe in the helper process
    assert got.size == hw.size
    if not np.array_equal(got, hw):
        bad = []
        at = 0
        for o in case["outputs"]:
            n = int(np.prod(o["shape"])) * STORE[o["dtype"]]
            d = int(np.count_nonzero(got[at:at + n] != hw[at:at + n]))
            if d:
                bad.append(f"{o['buffer']}: {d} of {n} bytes")
            at += n
        pytest.fail(f"{case['name']}: " + ", ".join(bad))
