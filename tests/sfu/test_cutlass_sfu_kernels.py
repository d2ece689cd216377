"""CUTLASS sm_90a kernels that need approximate special-function PTX, replayed against an H100
(traces/cutlass_sfu_kernels_sm90.npz, kind launch_outputs; scripts/capture_cutlass.py --set sfu):

- cutlass_evt_gelu_bf16 / cutlass_evt_gelu_taylor_bf16: CollectiveBuilder GEMMs (bf16 -> f32) whose EVT epilogue
  applies cutlass::epilogue::thread::GELU (erff) / GELU_taylor (tanh.approx.f32), f32 out;
- cutlass_fmha_f16: CUTLASS example 88's Hopper FMHA forward (fp16, head dim 64): exp2f -> ex2.approx.f32,
  __logf -> lg2.approx.f32; outputs O (f16) and LSE (f32), stored one after the other in the trace.

Every output byte must match. While tcemu refuses an approximate form one of these kernels uses
(PtxUnsupported), the replay is skipped ("needs the SFU models"); a one-instruction probe kernel per form finds
that out in milliseconds, before the long replay. Made by scripts/cutlass_sfu_kernels.py (fixtures) and
scripts/capture_cutlass.py (trace).
"""
import hashlib
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from tcemu.traces import launches as L
from tcemu.ptx.errors import PtxUnsupported
from tcemu.traces import check_trace, load_trace

import sfu_replays
from paths import CAPTURE, PTX_FIXTURES, TRACES, source_is_unchanged

FIX = Path(PTX_FIXTURES)
TRACE = Path(TRACES) / "cutlass_sfu_kernels_sm90.npz"
sys.path.insert(0, CAPTURE)
import capture_cutlass as CC  # noqa: E402
from sfu_probe import approx_forms, refused, refused_forms  # noqa: E402

NAMES = ["cutlass_evt_gelu_bf16", "cutlass_evt_gelu_taylor_bf16", "cutlass_fmha_f16"]
# the approximate (or .full) special-function forms each kernel's PTX holds, and how often
FORMS = {"cutlass_evt_gelu_bf16": {"ex2.approx.ftz.f32": 64},      # erff's expansion (libdevice)
         "cutlass_evt_gelu_taylor_bf16": {"tanh.approx.f32": 64},
         "cutlass_fmha_f16": {"ex2.approx.f32": 66, "lg2.approx.f32": 2}}


def _meta(name):
    return json.loads((FIX / f"{name}.json").read_text())


def _skip_if_refused(name):
    missing = refused_forms((FIX / f"{name}.ptx").read_text())
    if missing:
        pytest.skip(f"needs the SFU models: tcemu refuses {', '.join(sorted(missing))}")


# ------------------------------------------------------------------ fixtures and trace (fast)

@pytest.mark.parametrize("name", NAMES)
def test_fixture_provenance_and_forms(name):
    meta = _meta(name)
    ptx = (FIX / f"{name}.ptx").read_bytes()
    assert hashlib.sha256(ptx).hexdigest() == meta["ptx_sha256"] and len(ptx) == meta["ptx_bytes"]
    assert re.search(rb"^\.target\s+sm_90a\s*$", ptx, re.M)
    assert "13.0" in meta["versions"]["nvcc"] and meta["command"].startswith("PYTHONPATH=. python scripts/cutlass_sfu")
    for src, digest in meta["sources_sha256"].items():    # rebuilt since any of its sources last changed
        assert source_is_unchanged(src, digest), src
    assert len(meta["entries"]) == 1 and all(r["entry"] == meta["entries"][0] for r in meta["launches"])
    assert approx_forms(ptx.decode()) == FORMS[name]
    outs = [[b["name"] for b in r["buffers"] if b["role"] == "output"] for r in meta["launches"]]
    assert all(o == (["O", "LSE"] if name == "cutlass_fmha_f16" else ["D"]) for o in outs)


def test_trace_holds_every_case():
    trace = load_trace(str(TRACE))
    check_trace(trace)
    meta, cols = trace.meta, trace.columns
    assert meta["kind"] == "launch_outputs" and not meta["dry_run"] and "H100" in meta["gpu"]
    assert meta["command"] == "python3 scripts/capture_cutlass.py --set sfu --kernels .kernels --out /root/out"
    expect = [(n, j) for n in NAMES for j in range(len(_meta(n)["launches"]))]
    assert [(c["fixture"], c["launch"]) for c in meta["cases"]] == expect
    for i, c in enumerate(meta["cases"]):
        assert c["status"] == "ok" and c["deterministic"] and c["poison_left"] == 0 and c["guard_clobbered"] == 0
        assert int(cols["status"][i]) == 0
        # the embedded fixture is today's fixture
        ptx, fixture = L.trace_fixture(trace, c["fixture"])
        assert ptx == (FIX / f"{c['fixture']}.ptx").read_text() and fixture == _meta(c["fixture"])
        outs = L.case_outputs(c)
        assert outs == (["O", "LSE"] if c["fixture"] == "cutlass_fmha_f16" else ["D"])


def test_gpu_outputs_plausible():
    """The H100's outputs against float64 references (a check of the records and the capture, not of tcemu):
    GELU within bf16-input GEMM rounding, attention O and LSE within fp16 P rounding."""
    trace = load_trace(str(TRACE))
    meta, cols = trace.meta, trace.columns
    from tcemu.traces.inputs import input_bits
    for i, c in enumerate(meta["cases"]):
        rec = _meta(c["fixture"])["launches"][c["launch"]]
        bits = cols["bits"][int(cols["offsets"][i]):int(cols["offsets"][i + 1])]
        inputs = {b["name"]: input_bits(b["dtype"], b["storage"], c["seed"], k)
                  for k, b in enumerate(rec["buffers"]) if b["role"] == "input"}
        want = CC.fake_outputs(rec, inputs)     # float64 maths rounded to the outputs' types
        at = 0
        for name in L.case_outputs(c):
            w = want[name]
            got = bits[at:at + w.nbytes].view(w.dtype).reshape(w.shape)
            at += w.nbytes
            f = np.float16 if w.dtype == np.uint16 else np.float32
            g, r = got.view(f).astype(np.float64), w.view(f).astype(np.float64)
            assert np.all(np.isfinite(g)), (c["fixture"], name)
            tol = 0.02 * np.abs(r).max() + 1e-3
            assert np.abs(g - r).max() <= tol, (c["fixture"], c["case"], name, np.abs(g - r).max(), tol)
        assert at == bits.size


def test_capture_dry_run_sfu_set(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["capture_cutlass.py", "--out", str(tmp_path), "--dry-run", "--set", "sfu",
                                      "--kernels", str(tmp_path / "none")])
    CC.main()
    trace = load_trace(str(tmp_path / "cutlass_sfu_kernels_sm90.npz"))
    check_trace(trace)
    assert [c["fixture"] for c in trace.meta["cases"]] == [n for n in NAMES for _ in _meta(n)["launches"]]
    assert all(c["status"] == "ok" for c in trace.meta["cases"])


def test_trace_check_several_outputs():
    """The trace reader holds a case with several outputs to its record: every buffer once, the bytes their sum."""
    from tcemu.core.errors import TraceError
    from tcemu.traces import Trace
    trace = load_trace(str(TRACE))
    i = [c["fixture"] for c in trace.meta["cases"]].index("cutlass_fmha_f16")
    for change in (lambda c: c["outputs"].pop(),                                  # LSE's bytes unaccounted for
                   lambda c: c["outputs"].__setitem__(1, dict(c["outputs"][0])),  # O twice
                   lambda c: c.__setitem__("output", c["outputs"][0]),            # both keys
                   lambda c: c["outputs"][1].__setitem__("dtype", "f16")):
        meta = json.loads(json.dumps(trace.meta))
        change(meta["cases"][i])
        with pytest.raises(TraceError):
            check_trace(Trace("t", meta, trace.columns))


def test_probe_runs_modelled_forms():
    assert refused("div.rn.f32") is None      # correctly rounded forms run: the probe itself works
    assert refused("rcp.rn.f32") is None
    assert approx_forms("ex2.approx.ftz.f32 %f1, %f2;\n div.full.f32 %f3, %f1, %f2;\n div.rn.f32 %f3, %f1, %f2;\n") == \
        {"ex2.approx.ftz.f32": 1, "div.full.f32": 1}


# ------------------------------------------------------------------ replays (every output byte)

def _cases():
    if not TRACE.exists():
        return []
    with np.load(TRACE, allow_pickle=False) as z:
        meta = json.loads(z["meta"].tobytes())
    # each replay takes seconds on a CPU core (the first pays numba's compiles): slow
    return [pytest.param(i, c["fixture"], id=f"{c['fixture']}-{'x'.join(map(str, c['case']))}")
            for i, c in enumerate(meta["cases"])]


_TRACE = {}


@pytest.mark.parametrize("i, name", _cases())
@pytest.mark.slow
def test_replay_matches_h100(i, name):
    _skip_if_refused(name)
    if "trace" not in _TRACE:
        _TRACE["trace"] = load_trace(str(TRACE))
    trace = _TRACE["trace"]
    cols = trace.columns
    hw = cols["bits"][int(cols["offsets"][i]):int(cols["offsets"][i + 1])]
    try:
        got = sfu_replays.cutlass_case(i)   # L.replay_trace_case(trace, i), maybe in the helper process
    except PtxUnsupported as e:       # only an approximate form tcemu does not model yet
        if approx_forms(e.field + " "):
            pytest.skip(f"needs the SFU models: {e.field}")
        raise
    assert got.size == hw.size
    bad = np.flatnonzero(got != hw)
    assert bad.size == 0, f"{bad.size} of {hw.size} output bytes differ (first at byte {bad[:8].tolist()})"
