"""Replay a captured kernel launch on the CPU: the `kernel_outputs` traces (traces/README.md).

Each case of such a trace records how the GPU run was launched: the fixture (its PTX and json travel in the
trace), the grid, the seeded inputs, the buffers' device addresses, the parameters by role, and the arguments
of every cuTensorMapEncodeTiled call. The replay regenerates the inputs, maps them (and the poisoned output
and scratch buffers) at the same device addresses, re-encodes each tensor map in tcemu's format, launches the
same PTX on the interpreter and returns the output's raw bytes.

A multi-launch case (`launches` and `outputs` instead of one launch and `output`; scripts/capture_sfu_kernels.py)
runs its launches in order over one set of buffers (a later kernel reads what an earlier one wrote), each
non-input buffer poisoned with 0xFF or, with `init: "zero"`, zeroed first; it returns the bytes of every output
buffer, concatenated in the order of `outputs` (replay_launches).
"""
import json

import numpy as np

from ...core.arch import SMEM_WINDOW
from ...core.errors import TraceError
from ...core.validate import is_int, show
from ...layout.tma import TmaError
from ...ptx.errors import PtxError
from ...ptx.module import Module
from ...ptx.tensormap import DRIVER_TYPES, TensorMap, validate
from ..archive import (MAX_CASE_LAUNCHES, MAX_CASE_OUTPUTS, MAX_COLUMN_BYTES, MAX_KERNEL_CTAS, MAX_KERNEL_ELEMENTS,
                       Trace)
from ..inputs import FORMATS, input_bits
from .base import Kind, ReplayResult, col, offsets
from .fixtures import embedded_fixtures, fixture_members, replay_output_bytes

POISON = 0xFF
_STORE = {"bf16": np.uint16, "f16": np.uint16, "f32": np.uint32, "e4m3": np.uint8, "i32": np.uint32}
STORE_TYPES = _STORE  # output dtypes a case may name (_check holds a case record to these)
PARAM_ROLES = ("pointer", "global_scratch", "profile_scratch", "tensormap", "tensormap_shape", "tensormap_stride",
               "scalar")
_DRIVER_CODES = {0: "UINT8", 1: "UINT16", 2: "UINT32", 3: "INT32", 4: "UINT64", 5: "INT64", 6: "FLOAT16",
                 7: "FLOAT32", 8: "FLOAT64", 9: "BFLOAT16", 10: "FLOAT32_FTZ", 11: "TFLOAT32", 12: "TFLOAT32_FTZ"}


def _tensor_map(enc) -> TensorMap:
    """tcemu's map for one recorded cuTensorMapEncodeTiled call (driver enum codes)."""
    name = _DRIVER_CODES.get(int(enc["dtype"]))
    if name is None:
        raise PtxError("tensormaps", f"driver data type {enc['dtype']} is not modelled")
    swizzle, atomicity = int(enc["swizzle"]), 0
    if swizzle in (4, 5, 6):  # CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B / _32B_FLIP_8B / _64B (sm100)
        swizzle, atomicity = 3, swizzle - 3
    tm = TensorMap(DRIVER_TYPES[name], [int(d) for d in enc["dims"]], [int(s) for s in enc["strides_bytes"]],
                   [int(b) for b in enc["box"]], [int(e) for e in enc["element_strides"]], swizzle,
                   int(enc["interleave"]), int(enc["oob_fill"]), int(enc.get("l2_promotion", 0)),
                   int(enc["address"]), swizzle_atomicity=atomicity)
    try:
        validate(tm, "recorded tensor map")
    except TmaError as e:
        raise PtxError("tensormaps", str(e)) from None
    return tm


def replay_case(module: Module, fixture: dict, case: dict, **launch) -> np.ndarray:
    """The output bytes (uint8, row-major) the CPU computes for one recorded case."""
    arrays, buffers = {}, []
    for spec in case["inputs"]:
        arrays[spec["buffer"]] = input_bits(spec["dtype"], spec["shape"], int(spec["seed"]), int(spec["stream"]))
    out = case["output"]
    n_out = int(np.prod(out["shape"]))
    arrays[out["buffer"]] = np.full(n_out * np.dtype(_STORE[out["dtype"]]).itemsize, POISON, np.uint8)
    for name, b in case["buffers"].items():
        buffers.append((int(b["address"]), arrays[name]))
    nprog = int(np.prod(case["grid"])) * int(fixture.get("num_ctas", 1))
    for kind, s in case.get("scratch", {}).items():
        size = nprog * int(s["bytes_per_program"])
        buffers.append((int(s["address"]), np.full(size, 0 if kind == "profile" else POISON, np.uint8)))
    _launch_one(module, fixture, case, buffers, **launch)
    return arrays[out["buffer"]].view(np.uint8).reshape(-1)


def _launch_one(module, fixture, rec, buffers, **launch):
    """Run one recorded launch (entry, grid, block, shared_bytes, params, tensormaps) over `buffers`."""
    maps = {t["arg"]: _tensor_map(t["encode"]).to_bytes() for t in rec.get("tensormaps", [])}
    args = []
    for _, p in zip(fixture["params"], rec["params"]):
        role = p["role"]
        if role == "tensormap":
            args.append(maps[p["arg"]])
        elif role in ("pointer", "global_scratch", "profile_scratch"):
            args.append(int(p["value"]))
        else:
            args.append(p["value"])
    blob = _blob(module, rec["entry"], fixture["params"], args)
    return module.launch(rec["entry"], grid=tuple(rec["grid"]), block=tuple(rec["block"]),
                         shared_bytes=int(rec["shared_bytes"]), param_bytes=blob, buffers=buffers, **launch)


def replay_launches(get_fixture, case: dict, *, only=None, initial=None, **launch) -> np.ndarray:
    """The output bytes the CPU computes for a multi-launch case: get_fixture(name) -> (Module, fixture json);
    every output buffer's bytes (uint8), concatenated in the order of case["outputs"].

    only: indices of the launches to run (default: all, in order); initial: output buffer name -> bytes it holds
    before the first launch that runs (default: poison, or zeros for `init: "zero"`). With both, one launch of a
    sequence can be rerun from the buffers a capture recorded after the others."""
    arrays = {}
    for spec in case["inputs"]:
        arrays[spec["buffer"]] = input_bits(spec["dtype"], spec["shape"], int(spec["seed"]), int(spec["stream"]))
    for out in case["outputs"]:
        n = int(np.prod(out["shape"])) * np.dtype(_STORE[out["dtype"]]).itemsize
        if initial is not None and out["buffer"] in initial:
            arrays[out["buffer"]] = np.array(initial[out["buffer"]], np.uint8).reshape(-1).copy()
            if arrays[out["buffer"]].size != n:
                raise PtxError(f"initial[{out['buffer']!r}]", f"{arrays[out['buffer']].size} bytes, the buffer {n}")
        else:
            arrays[out["buffer"]] = np.full(n, 0 if out.get("init") == "zero" else POISON, np.uint8)
    buffers = [(int(b["address"]), arrays[name]) for name, b in case["buffers"].items()]
    for j, rec in enumerate(case["launches"]):
        if only is not None and j not in only:
            continue
        module, fixture = get_fixture(rec["fixture"])
        nprog = int(np.prod(rec["grid"])) * int(fixture.get("num_ctas", 1))
        scratch = [(int(s["address"]), np.full(nprog * int(s["bytes_per_program"]), 0 if kind == "profile" else POISON,
                                               np.uint8)) for kind, s in rec.get("scratch", {}).items()]
        _launch_one(module, fixture, rec, buffers + scratch, **launch)
    return np.concatenate([arrays[o["buffer"]].view(np.uint8).reshape(-1) for o in case["outputs"]])


def _blob(module, entry, params, values) -> bytes:
    """The parameter space laid out as the PTX declares it, from per-parameter values."""
    prog = module.program(entry)
    buf = bytearray(prog.param_size)
    for decl, value in zip(prog.fn.params, values):
        off = prog.symbols[decl.name].address
        size = decl.size
        if isinstance(value, (bytes, bytearray)):
            raw = bytes(value)
        elif isinstance(value, float):
            raw = np.array([value], np.float32 if size == 4 else np.float64).tobytes()
        else:
            raw = (int(value) & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        if len(raw) != size:
            raise PtxError(decl.name, f"recorded value has {len(raw)} bytes, the parameter {size}")
        buf[off:off + size] = raw
    return bytes(buf)


def fixture_from_trace(z, name: str):
    """(Module, fixture json) embedded in a kernel_outputs trace."""
    ptx = bytes(z[f"fixture_{name}_ptx"]).decode("utf-8")
    meta = json.loads(bytes(z[f"fixture_{name}_json"]).decode("utf-8"))
    return Module(ptx, name + ".ptx"), meta


# ---- the kind: what a case record must hold (checked before a replay starts), and the replay

def _check(meta, cols):
    """kernel_outputs: the embedded fixtures are the ones meta.fixtures names (sha256), and every case record
    holds what the replay reads (replay_case, replay_launches), with bounded sizes."""
    fixtures = embedded_fixtures(meta, cols)
    for fx, fj in fixtures.items():
        if not isinstance(fj, dict) or not isinstance(fj.get("params"), list) or \
                not is_int(fj.get("num_ctas", 1)) or not 1 <= fj.get("num_ctas", 1) <= 16:
            raise TraceError(f"fixture_{fx}_json", "must hold the kernel's params (a list) and num_ctas (1..16)")
    status = col(cols, "status", 0, 127, (None,))
    n = status.size
    col(cols, "seed", 0, (1 << 64) - 1, (n,))
    for name in ("m", "n", "k"):
        if name in cols:
            col(cols, name, 0, 1 << 20, (n,))
    if "grid" in cols:
        col(cols, "grid", 1, 1 << 16, (n, 3))
    bits = col(cols, "bits", 0, 255, (None,))
    off = offsets(cols, "offsets", n, bits.size)
    cases = meta.get("cases")
    if not isinstance(cases, list) or len(cases) != n:
        raise TraceError("meta.cases", f"one case record per status entry expected ({n}), got {show(cases)}")
    for i, case in enumerate(cases):
        if not isinstance(case, dict):
            raise TraceError(f"meta.cases[{i}]", f"must be a record (a JSON object), got {show(case)}")
        size = _kernel_case(case, i, fixtures, FORMATS, STORE_TYPES, PARAM_ROLES) if status[i] == 0 else 0
        if off[i + 1] - off[i] != size:
            raise TraceError("offsets", f"case {i} holds {int(off[i + 1] - off[i]):,} output bytes; its record says "
                                        f"{size:,}")


def _kernel_case(case, i, fixtures, formats, store_types, roles) -> int:
    """Check one captured case's record (what replay_case, or replay_launches for a multi-launch case, reads); its
    output's size in bytes (a multi-launch case: the sum over its outputs)."""
    field = f"meta.cases[{i}]"

    def need(cond, what):
        if not cond:
            raise TraceError(field, what)

    def ints(v, n, lo, hi):
        return isinstance(v, list) and (n is None or len(v) == n) and all(is_int(x) and lo <= x <= hi for x in v)

    def tensor(v, dtypes):
        return (isinstance(v, dict) and isinstance(v.get("buffer"), str) and v.get("dtype") in dtypes and
                ints(v.get("shape"), None, 1, MAX_KERNEL_ELEMENTS) and 1 <= len(v["shape"]) <= 4 and
                int(np.prod(v["shape"], dtype=np.float64)) <= MAX_KERNEL_ELEMENTS)
    need(isinstance(case, dict), "must be a record (a JSON object)")
    need(case.get("fixture") in fixtures, "fixture must be one of meta.fixtures")
    multi = "launches" in case
    need(isinstance(case.get("inputs"), list) and len(case["inputs"]) <= 8 and
         all(tensor(t, formats) and ints([t.get("seed"), t.get("stream")], 2, 0, (1 << 64) - 1)
             for t in case["inputs"]), "inputs must be up to 8 (buffer, dtype, shape, seed, stream) records")
    if multi:
        outs = case.get("outputs")
        need(isinstance(outs, list) and 1 <= len(outs) <= MAX_CASE_OUTPUTS and
             all(tensor(o, store_types) and o.get("init", "poison") in ("poison", "zero") for o in outs),
             f"outputs must be 1..{MAX_CASE_OUTPUTS} (buffer, dtype, shape, init poison/zero) records")
        need(isinstance(case["launches"], list) and 1 <= len(case["launches"]) <= MAX_CASE_LAUNCHES and
             all(isinstance(ln, dict) and ln.get("fixture") in fixtures for ln in case["launches"]),
             f"launches must be 1..{MAX_CASE_LAUNCHES} launch records, each naming one of meta.fixtures")
        named_list = [t["buffer"] for t in case["inputs"]] + [o["buffer"] for o in outs]
        need(len(set(named_list)) == len(named_list), "inputs and outputs must name distinct buffers")
        total = sum(int(np.prod(o["shape"])) * np.dtype(store_types[o["dtype"]]).itemsize for o in outs)
        need(total <= MAX_COLUMN_BYTES, f"outputs must fit in {MAX_COLUMN_BYTES:,} bytes")
    else:
        need(tensor(case.get("output"), store_types), "output must be a (buffer, dtype, shape) record")
        named_list = [t["buffer"] for t in case["inputs"]] + [case["output"]["buffer"]]
        total = int(np.prod(case["output"]["shape"])) * np.dtype(store_types[case["output"]["dtype"]]).itemsize
    need(isinstance(case.get("buffers"), dict) and set(case["buffers"]) == set(named_list) and
         all(isinstance(b, dict) and ints([b.get("address")], 1, 0, (1 << 64) - 1) for b in case["buffers"].values()),
         "buffers must give the device address of every input and of the output" + ("s" if multi else ""))
    for j, rec in enumerate(case["launches"] if multi else [case]):
        _kernel_launch(rec, f"{field}.launches[{j}]" if multi else field, fixtures, roles)
    return total


def _kernel_launch(case, field, fixtures, roles):
    """One launch of a kernel_outputs case (the case itself, or one of its launches): what _launch_one reads."""
    def need(cond, what):
        if not cond:
            raise TraceError(field, what)

    def ints(v, n, lo, hi):
        return isinstance(v, list) and (n is None or len(v) == n) and all(is_int(x) and lo <= x <= hi for x in v)

    def scalar(v):  # an integer, or a float argument's value (packed as the parameter's float type)
        return is_int(v) or (isinstance(v, float) and np.isfinite(v))
    need(isinstance(case.get("entry"), str) and 0 < len(case["entry"]) <= 200, "entry must be the kernel's name")
    need(ints(case.get("grid"), 3, 1, MAX_KERNEL_CTAS) and int(np.prod(case["grid"])) <= MAX_KERNEL_CTAS,
         f"grid must be 3 integers, at most {MAX_KERNEL_CTAS} CTAs")
    need(ints(case.get("block"), 3, 1, 1024) and int(np.prod(case["block"])) <= 1024,
         "block must be 3 integers, at most 1024 threads")
    need(is_int(case.get("shared_bytes")) and 0 <= case["shared_bytes"] <= max(SMEM_WINDOW.values()),
         "shared_bytes must be the dynamic shared bytes of the launch")
    scratch = case.get("scratch", {})
    need(isinstance(scratch, dict) and len(scratch) <= 4 and all(
        isinstance(s, dict) and ints([s.get("address")], 1, 0, (1 << 64) - 1) and
        ints([s.get("bytes_per_program")], 1, 0, 1 << 20) for s in scratch.values()),
         "scratch must give each scratch buffer's address and bytes_per_program")
    programs = int(np.prod(case["grid"])) * fixtures[case["fixture"]].get("num_ctas", 1)
    need(sum(programs * s["bytes_per_program"] for s in scratch.values()) <= MAX_COLUMN_BYTES,
         f"scratch of all programs must fit in {MAX_COLUMN_BYTES:,} bytes")
    maps = case.get("tensormaps", [])
    need(isinstance(maps, list) and len(maps) <= 16 and all(
        isinstance(t, dict) and isinstance(t.get("arg"), str) and isinstance(t.get("encode"), dict) and
        ints([t["encode"].get(f) for f in ("dtype", "swizzle", "interleave", "oob_fill", "address")], 5, 0,
             (1 << 64) - 1) and ints([t["encode"].get("l2_promotion", 0)], 1, 0, 3) and
        all(ints(t["encode"].get(f), None, 0, (1 << 40)) and 1 <= len(t["encode"][f]) <= 5
            for f in ("dims", "box", "element_strides")) and ints(t["encode"].get("strides_bytes"), None, 0, 1 << 40)
        for t in maps), "tensormaps must be (arg, encode: cuTensorMapEncodeTiled arguments) records")
    map_args = {t["arg"] for t in maps}
    need(isinstance(case.get("params"), list) and len(case["params"]) <= 256 and all(
        isinstance(p, dict) and p.get("role") in roles and
        (p.get("arg") in map_args if p.get("role") == "tensormap" else
         scalar(p.get("value")) if p.get("role") == "scalar" else is_int(p.get("value")))
        for p in case["params"]), "params must be (role, arg, value) records; a tensormap's arg names one of "
                                 "its tensormaps, a scalar is an integer or a finite float, other values are integers")


def _replay(trace: Trace, result: ReplayResult, max_report: int):
    """Whole kernels: each captured launch rerun on the PTX interpreter, every output byte compared."""
    cols = trace.columns
    cases = trace.meta.get("cases")
    if not isinstance(cases, list) or len(cases) != cols["status"].size:
        raise TraceError("meta.cases", f"{trace.path}: one case record per status entry expected")
    mods = {}

    class _Z:  # the embedded fixtures, by member name
        def __getitem__(self, key):
            if key not in cols:
                raise TraceError(key, f"{trace.path}: fixture member missing")
            return cols[key]

    def get(name):
        if name not in mods:  # a fixture whose PTX does not parse fails each of its cases
            mods[name] = fixture_from_trace(_Z(), name)
        return mods[name]

    def run(i, case, name):
        if "launches" in case:  # a multi-launch case: every launch in order, every output buffer compared
            return replay_launches(get, case)
        return replay_case(*get(name), case)
    replay_output_bytes(trace, cases, result, max_report, run)


TRACE_KINDS = (Kind("kernel_outputs", ("seed", "status", "offsets", "bits"), _check, _replay,
                    optional=("m", "n", "k", "grid"), embedded=fixture_members),)
