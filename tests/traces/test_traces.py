"""Replay of every hardware trace in traces/: every captured value must match."""
import glob
import json
import os

import numpy as np
import pytest

from tcemu import GmmaDescriptor, TraceError, operand_addresses
from tcemu.traces import load_trace, replay

import replays
from paths import TRACES as TRACE_DIR, current_path

TRACES = sorted(glob.glob(os.path.join(TRACE_DIR, "*.npz")))
# Kernel traces whose every case has its own test, which demands every byte: replaying them whole here too
# would only double CI's time (tests/sfu/test_triton_sfu_kernels.py, tests/sfu/test_cutlass_sfu_kernels.py)
CASE_BY_CASE = {"triton_sfu_kernels_sm90.npz", "cutlass_sfu_kernels_sm90.npz"}


# the replays over ~5 s on 2 cores (the background worker runs them when they are selected: tests/support/replays.py)
SLOW = {"cutlass_kernels_sm90.npz", "mma_sync_sm90.npz", "torch_gemm_sm90.npz", "triton_kernels_sm90.npz",
        "wgmma_numerics_sm90.npz", "texture_sm90.npz",
        "wgmma_sp_metadata_sm90.npz", "wgmma_sp_numerics_sm90.npz"}


def _replay_params():
    return [pytest.param(p, marks=pytest.mark.slow) if os.path.basename(p) in SLOW else p
            for p in TRACES if os.path.basename(p) not in CASE_BY_CASE]


def test_there_are_traces():
    assert TRACES, "traces/ holds no captures"


@pytest.mark.parametrize("path", _replay_params(), ids=os.path.basename)
def test_trace_replays_exactly(path):
    # replay(path, max_report=2**20), once a session and usually by the background worker (tests/support/replays.py)
    result = replays.summary(path)
    assert result["mismatches"] == []
    for name, g in result["groups"].items():
        assert (g["cases_matched"], g["values_matched"]) == (g["cases"], g["values"]), name
    assert result["ok"]


@pytest.mark.parametrize("path", TRACES, ids=os.path.basename)
def test_trace_provenance(path):
    meta = load_trace(path).meta
    # whole-kernel and library captures (kernel_outputs, launch_outputs, gemm_outputs) place no probe in shared
    # memory: they compute their own addresses, so they need no smem_base (nor do the instruction-level
    # program_outputs and sfu_proof captures, the register-level mma_sync and wmma ones, and the texture
    # sampling one)
    probe = meta["kind"] not in ("kernel_outputs", "launch_outputs", "gemm_outputs", "program_outputs", "sfu_proof",
                                 "mma_sync_numerics", "wmma", "texture")
    for key in ("gpu", "driver", "cuda", "date", "command", "sources", "seed") + (("smem_base",) if probe else ()):
        assert meta.get(key), key
    for src, digest in meta["sources"].items():
        assert os.path.exists(current_path(src)), src
        assert len(digest) == 64


ADDR_TRACE = os.path.join(TRACE_DIR, "wgmma_addresses_sm90.npz")


def _cases(trace):
    c = trace.columns
    for i in range(c["desc"].size):
        lo, hi = c["offsets"][i], c["offsets"][i + 1]
        hw = np.cumsum(c["addresses"][lo:hi].astype(np.int64)).reshape(int(c["rows"][i]), int(c["k"][i]))
        yield (GmmaDescriptor.decode(int(c["desc"][i])), trace.meta["dtypes"][c["dtype"][i]],
               "MN" if c["major"][i] else "K", hw)


def test_address_trace_coverage():
    """The capture covers what issue 2 asks: every mode, base offset, 16-byte start position mod 1024."""
    trace = load_trace(ADDR_TRACE)
    c = trace.columns
    assert c["desc"].size >= 2000 and np.all(c["replica_mismatches"] == 0)
    descs = [GmmaDescriptor.decode(int(x)) for x in c["desc"]]
    assert {d.swizzle.value for d in descs} == {"none", "32B", "64B", "128B"}
    assert {d.base_offset for d in descs} == set(range(8))
    for mode in ("none", "32B", "64B", "128B"):
        starts = {d.start_address % 1024 for d in descs if d.swizzle.value == mode}
        assert starts == set(range(0, 1024, 16)), mode
    assert set(trace.meta["dtypes"][i] for i in c["dtype"]) == {"tf32", "f16", "bf16", "u8"}
    assert set(c["major"]) == {0, 1} and set(c["operand"]) == {0, 1} and c["rows"].max() == 256


def test_address_trace_rejects_wrong_models():
    """The trace can fail: plausible wrong base-offset rules disagree with the hardware."""
    wrong = {"ignore base offset": 0, "add base offset": 0, "xor base offset": 0}
    for desc, dtype, major, hw in _cases(load_trace(ADDR_TRACE)):
        if desc.swizzle.value == "none" or desc.base_offset == 0:
            continue
        plain = GmmaDescriptor(desc.start_address, desc.lbo, desc.sbo, 0, desc.swizzle)
        kw = dict(rows=hw.shape[0], k=hw.shape[1], dtype=dtype, major=major)
        base = operand_addresses(plain, **kw)
        line = (base >> 7) & ((1 << desc.swizzle.swizzle.bits) - 1)
        unswz = base ^ (line << 4)  # undo the base-offset-free swizzle
        b = desc.swizzle.swizzle.bits
        mask = (1 << b) - 1
        wrong["ignore base offset"] += not np.array_equal(base, hw)
        wrong["add base offset"] += not np.array_equal(unswz ^ ((((unswz >> 7) + desc.base_offset) & mask) << 4), hw)
        wrong["xor base offset"] += not np.array_equal(unswz ^ ((((unswz >> 7) ^ desc.base_offset) & mask) << 4), hw)
    assert all(v > 100 for v in wrong.values()), wrong


def _write(path, meta, **cols):
    np.savez(path, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **cols)


def test_reader_refuses_pickles(tmp_path):
    p = tmp_path / "evil.npz"
    np.savez(p, meta=np.array([{"format": "tcemu-trace"}], dtype=object))
    with pytest.raises(TraceError, match="evil.npz|meta"):
        load_trace(str(p))


@pytest.mark.parametrize("meta,field", [
    ({"format": "other", "version": 1, "kind": "wgmma_operand_addresses"}, "meta.format"),
    ({"format": "tcemu-trace", "version": 9, "kind": "wgmma_operand_addresses"}, "meta.format"),
    ({"format": "tcemu-trace", "version": 1, "kind": "mystery"}, "meta.kind"),
    ({"format": "tcemu-trace", "version": 1, "kind": "wgmma_operand_addresses"}, "desc"),
])
def test_reader_rejects_bad_meta(tmp_path, meta, field):
    p = tmp_path / "t.npz"
    _write(p, meta, x=np.zeros(1))
    with pytest.raises(TraceError) as e:
        load_trace(str(p))
    assert field in e.value.field


def test_reader_rejects_non_archives(tmp_path):
    p = tmp_path / "junk.npz"
    p.write_bytes(b"not a zip")
    with pytest.raises(TraceError, match="junk.npz"):
        load_trace(str(p))
    p2 = tmp_path / "badjson.npz"
    np.savez(p2, meta=np.frombuffer(b"{not json", np.uint8))
    with pytest.raises(TraceError, match="meta"):
        load_trace(str(p2))


def test_replay_reports_a_corrupted_trace(tmp_path):
    with np.load(ADDR_TRACE, allow_pickle=False) as z:
        cols = {k: z[k] for k in z.files}
    cols["addresses"] = cols["addresses"].copy()
    cols["addresses"][5] += 16  # shift one element of case 0 by a chunk (and, by the delta code, the rest)
    buf = tmp_path / "bad.npz"
    np.savez_compressed(buf, **cols)
    result = replay(str(buf))
    assert not result.ok
    bad = [g for g in result.groups.values() if g.cases != g.cases_matched]
    assert sum(g.cases - g.cases_matched for g in bad) == 1
    assert "case 0" in result.mismatches[0] and "element (0, 5)" in result.mismatches[0]
