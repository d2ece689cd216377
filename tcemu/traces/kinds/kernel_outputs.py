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

from ..inputs import input_bits
from ...layout.tma import TmaError
from ...ptx.errors import PtxError
from ...ptx.module import Module
from ...ptx.tensormap import DRIVER_TYPES, TensorMap, validate

POISON = 0xFF
_STORE = {"bf16": np.uint16, "f16": np.uint16, "f32": np.uint32, "e4m3": np.uint8, "i32": np.uint32}
STORE_TYPES = _STORE  # output dtypes a case may name (tcemu.traces checks a case record against these)
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
