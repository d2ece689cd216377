"""`launch_outputs` traces (scripts/capture_cutlass.py, traces/README.md): recorded launches of the fixtures embedded
in the trace (their launch records: tcemu.traces.records), each captured case's output bytes against the
replay's. tcemu.launches.trace_fixture and replay_trace_case are this module's fixture and case_bytes for a Trace
they first hold to the trace reader's checks."""
import hashlib
import json
from typing import Optional

import numpy as np

from ... import ptx as tptx
from ...core.arch import SMEM_WINDOW
from ...core.errors import TraceError
from ...core.validate import as_int, is_int, show
from ..archive import MAX_KERNEL_CTAS, MAX_LAUNCH_BYTES, MAX_LAUNCHES, MAX_PARAM_BYTES, Trace
from ..inputs import FORMATS
from ..records import LaunchRecordError, replay
from .base import Kind, ReplayResult, col, offsets
from .fixtures import embedded_fixtures, fixture_members, replay_output_bytes


def _check(meta, cols):
    """launch_outputs: the embedded fixtures (sha256) and their launch records (tcemu/traces/records.py) hold what the
    replay reads, with bounded sizes; every captured case names a fixture, one of its launches, the launch's output
    buffer (its dtype and storage) and the seed of the seed column, and stores exactly that buffer's bytes."""
    fixtures = embedded_fixtures(meta, cols)
    for fx, fj in fixtures.items():
        if not isinstance(fj, dict) or not isinstance(fj.get("launches"), list) or \
                not 1 <= len(fj["launches"]) <= MAX_LAUNCHES:
            raise TraceError(f"fixture_{fx}_json", f"must hold the fixture's launch records (launches: a list of "
                                                   f"1..{MAX_LAUNCHES})")
    status = col(cols, "status", 0, 127, (None,))
    n = status.size
    seeds = col(cols, "seed", 0, (1 << 64) - 1, (n,))
    for name in ("m", "n", "k"):
        if name in cols:
            col(cols, name, 0, 1 << 20, (n,))
    grid = col(cols, "grid", 1, MAX_KERNEL_CTAS, (n, 3)) if "grid" in cols else None
    bits = col(cols, "bits", 0, 255, (None,))
    off = offsets(cols, "offsets", n, bits.size)
    cases = meta.get("cases")
    if not isinstance(cases, list) or len(cases) != n:
        raise TraceError("meta.cases", f"one case record per status entry expected ({n}), got {show(cases)}")
    checked = {}
    for i, case in enumerate(cases):
        field = f"meta.cases[{i}]"
        if not isinstance(case, dict):
            raise TraceError(field, f"must be a record (a JSON object), got {show(case)}")
        if status[i] != 0:
            if off[i + 1] != off[i]:
                raise TraceError("offsets", f"case {i} was not captured: it stores no output bytes")
            continue
        fx, launch = case.get("fixture"), case.get("launch")
        if not isinstance(fx, str) or fx not in fixtures or not is_int(launch) or \
                not 0 <= launch < len(fixtures[fx]["launches"]):
            raise TraceError(field, "fixture and launch must name one of meta.fixtures and an index into its "
                                    "launch records")
        key = (fx, int(launch))
        if key not in checked:
            checked[key] = _launch_record(fixtures[fx]["launches"][launch], f"fixture_{fx}_json: launches[{launch}]")
        buffers = checked[key]
        if not is_int(case.get("seed")) or case["seed"] != int(seeds[i]):
            raise TraceError(field, f"seed must be the seed column's {int(seeds[i])}")
        # one output buffer (`output`) or several stored one after another (`outputs`, never both)
        if "outputs" in case:
            outs = case["outputs"]
            if "output" in case or not isinstance(outs, list) or not 2 <= len(outs) <= len(buffers):
                raise TraceError(field, "outputs must list two or more output buffers of its launch record "
                                        "(and replace output)")
        else:
            outs = [case.get("output")]
        total, seen = 0, set()
        for out in outs:
            if not isinstance(out, dict) or not isinstance(out.get("buffer"), str) or \
                    buffers.get(out["buffer"], {}).get("role") != "output" or out["buffer"] in seen:
                raise TraceError(field, "output must name an output buffer of its launch record (each once)")
            seen.add(out["buffer"])
            b = buffers[out["buffer"]]
            if out.get("dtype") != b["dtype"] or out.get("storage") != b["storage"]:
                raise TraceError(field, f"output {out['buffer']} must have its launch record's dtype {b['dtype']} "
                                        f"and storage {b['storage']}")
            total += b["bytes"]
        if off[i + 1] - off[i] != total:
            raise TraceError("offsets", f"case {i} holds {int(off[i + 1] - off[i]):,} output bytes; buffer(s) "
                                        f"{', '.join(sorted(seen))} of its launch record hold {total:,}")
        if grid is not None and grid[i].tolist() != fixtures[fx]["launches"][launch]["grid"]:
            raise TraceError("grid", f"case {i}: {grid[i].tolist()} is not its launch record's grid")


def _launch_record(rec, field) -> dict:
    """Check one launch record (tcemu/traces/records.py reads it) for types and sizes the replay relies on;
    tcemu.launches checks the rest against the PTX when it replays (LaunchRecordError). Its buffers, by name."""

    def need(cond, what):
        if not cond:
            raise TraceError(field, what)

    def ints(v, n, lo, hi):
        return isinstance(v, list) and (n is None or len(v) == n) and all(is_int(x) and lo <= x <= hi for x in v)

    def records(key, limit, **fields):
        v = rec.get(key)
        need(isinstance(v, list) and len(v) <= limit and all(
            isinstance(r, dict) and all(check(r.get(f)) for f, check in fields.items()) for r in v),
             f"{key} must be up to {limit} records of {', '.join(fields)}")
        return v
    need(isinstance(rec, dict), f"must be a launch record (a JSON object), got {show(rec)}")
    need(isinstance(rec.get("entry"), str) and 0 < len(rec["entry"]) <= 8192, "entry must be the kernel's name")
    need(ints(rec.get("grid"), 3, 1, MAX_KERNEL_CTAS) and int(np.prod(rec["grid"])) <= MAX_KERNEL_CTAS,
         f"grid must be 3 integers, at most {MAX_KERNEL_CTAS} CTAs")
    need(ints(rec.get("block"), 3, 1, 1024) and int(np.prod(rec["block"])) <= 1024,
         "block must be 3 integers, at most 1024 threads")
    need(ints(rec.get("cluster"), 3, 1, 16) and int(np.prod(rec["cluster"])) <= 16,
         "cluster must be 3 integers, at most 16 CTAs")
    need(is_int(rec.get("shared_bytes")) and 0 <= rec["shared_bytes"] <= max(SMEM_WINDOW.values()),
         "shared_bytes must be the dynamic shared bytes of the launch")
    blob = rec.get("param_blob")
    need(isinstance(blob, str) and len(blob) <= 2 * MAX_PARAM_BYTES and len(blob) % 2 == 0 and
         all(c in "0123456789abcdefABCDEF" for c in blob), f"param_blob must be hex of at most {MAX_PARAM_BYTES} bytes")
    word = (lambda v: is_int(v) and -(1 << 64) < v < 1 << 64)  # noqa: E731
    name = (lambda v: isinstance(v, str) and 0 < len(v) <= 8192)  # noqa: E731
    records("params", 256, name=name, offset=lambda v: is_int(v) and 0 <= v <= MAX_PARAM_BYTES)
    records("pointers", 256, offset=lambda v: is_int(v) and 0 <= v <= MAX_PARAM_BYTES, buffer=name, delta=word)
    records("tensormaps", 16, offset=lambda v: is_int(v) and 0 <= v <= MAX_PARAM_BYTES,
            encode=lambda v: is_int(v) and 0 <= v < 16)
    small = (lambda v: is_int(v) and 0 <= v < 1 << 8)  # noqa: E731
    records("encodes", 16, dtype=small, rank=lambda v: is_int(v) and 1 <= v <= 5, buffer=name, delta=word,
            interleave=small, swizzle=small, l2_promotion=small, oob_fill=small,
            **{f: (lambda v: ints(v, None, 0, 1 << 40) and 1 <= len(v) <= 5)
               for f in ("dims", "strides_bytes", "box", "element_strides")})
    bufs = records("buffers", 16, name=name, role=lambda v: v in ("input", "output", "workspace"),
                   dtype=lambda v: v == "bytes" or v in FORMATS,
                   storage=lambda v: ints(v, None, 1, MAX_LAUNCH_BYTES) and 1 <= len(v) <= 4,
                   bytes=lambda v: is_int(v) and 1 <= v <= MAX_LAUNCH_BYTES, address=lambda v: word(v) and v >= 0)
    out = {}
    for b in bufs:
        need(b["name"] not in out, f"buffer {show(b['name'])} appears twice")
        item = 1 if b["dtype"] == "bytes" else np.dtype(FORMATS[b["dtype"]][0]).itemsize
        need(int(np.prod(b["storage"], dtype=np.float64)) * item == b["bytes"],
             f"buffer {show(b['name'])}: storage {b['storage']} of {b['dtype']} is not {b['bytes']:,} bytes")
        out[b["name"]] = b
    need(sum(b["bytes"] for b in bufs) <= MAX_LAUNCH_BYTES, f"its buffers hold more than {MAX_LAUNCH_BYTES:,} bytes")
    return out


def _replay(trace: Trace, result: ReplayResult, max_report: int):
    """Recorded launches (launch_outputs): each captured case rerun from the fixture embedded in the trace and
    its seed (case_bytes, as tcemu.launches.replay_trace_case), every output byte compared."""
    modules = {}
    # check_trace has held every record to _check
    replay_output_bytes(trace, trace.meta["cases"], result, max_report,
                        lambda i, case, name: case_bytes(trace, i, modules))


def fixture(trace: Trace, name: str):
    """(PTX text, fixture json) embedded in a checked `launch_outputs` trace (scripts/capture_cutlass.py)."""
    if not isinstance(name, str):
        raise LaunchRecordError("fixture", f"must be a fixture name, got {show(name)}")
    cols, meta = trace.columns, trace.meta
    try:
        ptx_raw = cols[f"fixture_{name}_ptx"].tobytes()
        js_raw = cols[f"fixture_{name}_json"].tobytes()
        want = meta["fixtures"][name]
    except KeyError:
        raise LaunchRecordError("fixture", f"{show(name)} is not embedded in {trace.path}") from None
    for raw, key in ((ptx_raw, "ptx_sha256"), (js_raw, "json_sha256")):
        if hashlib.sha256(raw).hexdigest() != want[key]:
            raise LaunchRecordError("fixture", f"{name}: the embedded {key[:-7]} differs from meta.fixtures' sha256")
    return ptx_raw.decode(), json.loads(js_raw)


def case_bytes(trace: Trace, i: int, modules: Optional[dict] = None, **launch) -> np.ndarray:
    """tcemu's output bytes for case i of a checked `launch_outputs` trace (tcemu.launches.replay_trace_case)."""
    i = as_int(i, "i", 0, len(trace.meta["cases"]) - 1, LaunchRecordError)
    if int(trace.columns["status"][i]) != 0:
        raise LaunchRecordError("i", f"case {i} was not captured (status {int(trace.columns['status'][i])}): "
                                     "nothing to compare")
    if modules is not None and not isinstance(modules, dict):
        raise LaunchRecordError("modules", f"must be a dict (fixture name -> tcemu.ptx Module) or None, got "
                                           f"{show(modules)}")
    case = trace.meta["cases"][i]
    ptx, fixture_json = fixture(trace, case["fixture"])
    modules = {} if modules is None else modules
    if case["fixture"] not in modules:
        modules[case["fixture"]] = tptx.load(ptx)
    elif not isinstance(modules[case["fixture"]], tptx.Module):
        raise LaunchRecordError("modules", f"{case['fixture']} must map to a loaded tcemu.ptx Module, got "
                                           f"{show(modules[case['fixture']])}")
    record = fixture_json["launches"][case["launch"]]
    out = replay(record, modules[case["fixture"]], seed=int(case["seed"]), **launch)
    return np.concatenate([np.ascontiguousarray(out.outputs[name]).reshape(-1).view(np.uint8)
                           for name in case_outputs(case)])


def case_outputs(case) -> list:
    """The output buffers a `launch_outputs` case stores, in the order of its bytes: `output` (one buffer) or
    `outputs` (a launch with several, stored one after another)."""
    if "outputs" in case:
        return [o["buffer"] for o in case["outputs"]]
    return [case["output"]["buffer"]]


TRACE_KINDS = (Kind("launch_outputs", ("seed", "status", "offsets", "bits"), _check, _replay,
                    optional=("m", "n", "k", "grid"), embedded=fixture_members),)
