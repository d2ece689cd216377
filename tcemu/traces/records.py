"""Captured kernel launches, replayed on the CPU by tcemu's PTX interpreter.

A *launch record* says what a real launch passed, whatever host code built it (CUTLASS's GemmUniversalAdapter,
CuTe's make_tma_atom, ...): scripts/cutlass_kernels.py runs that host code on fake device pointers and stores one
record per case in tests/fixtures/ptx/cutlass_*.json (`launches`). Fields used here:

    entry, grid, block, cluster, shared_bytes    the launch
    param_blob                                   hex of the whole parameter space (the entry's .param list)
    params     [{name, offset, bytes, align}]    its layout (checked against the interpreter's)
    buffers    [{name, role, dtype, storage, bytes, address}]
                                                 role "input" / "output" / "workspace"; dtype one of
                                                 tcemu.kernel_inputs.FORMATS or "bytes"; address: the fake
                                                 device address the host code was given; optional `data`
                                                 (hex of the bytes before the launch: the buffer starts
                                                 from it, whatever its role) and `expected` (hex of an
                                                 output's bytes after it), as `tcemu exec --record` writes
    pointers   [{offset, buffer, delta}]         8-byte words of the blob that hold buffer address + delta
    tensormaps [{offset, encode}]                128-byte CUtensorMaps in the blob, made by encodes[encode]
    symbols    [{name, address, bytes}]          optional (absent: none): the module's .global / .const
                                                 variables (a program's __device__ / __constant__ ones, as
                                                 `tcemu exec --record` writes them) at that device address,
                                                 inside one of the buffers; older records lack the field, and
                                                 the replay then places the module's variables itself
    cooperative  optional bool (absent: false): a cooperative launch (cudaLaunchCooperativeKernel): the replay
                                                 launches it so, as grid.sync() needs
    encodes    [{dtype, rank, buffer, delta, dims, strides_bytes, box, element_strides, interleave, swizzle,
                 l2_promotion, oob_fill}]        cuTensorMapEncodeTiled's arguments (CUtensorMapDataType and
                                                 the other enums as integers; address = buffer + delta)

`replay` maps every buffer at its recorded address (so the blob's pointers stand as recorded), replaces each
real-format map by tcemu's encoding of the same encode arguments (tcemu.ptx.tensormap: the CUtensorMap format
is opaque, so a replay cannot reuse the bytes a driver wrote), maps each of `symbols` at its recorded address
(Module.launch(symbols=...): the kernel reads and writes the buffer holding it), fills the inputs from their
seed exactly as the GPU capture does (tcemu.kernel_inputs, stream = the buffer's index in `buffers`), poisons
outputs with 0xFF, and launches. The GPU capture (scripts/capture_cutlass.py) does the same with real pointers
and real maps.
tcemu.launches re-exports these names beside the launch_outputs trace side (trace_fixture, replay_trace_case).
"""
from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np

from .. import ptx as tptx
from ..core.errors import TcemuError
from ..core.validate import as_int, is_int, show
from ..ptx.program import Program
from ..ptx.tensormap import DRIVER_TYPES, SIZE, TensorMap, validate
from .inputs import FORMATS, input_bits

__all__ = ["LaunchRecordError", "Replay", "DRIVER_DTYPES", "POISON", "storage_dtype", "input_arrays", "blob_for",
           "tensor_map", "replay"]

POISON = 0xFF   # every output byte before the launch (scripts/capture_cutlass.py poisons the same way)
MAX_BUFFER_BYTES = 1 << 28  # one buffer of a record (the bundled records' largest holds 262,144 bytes)
MAX_PARAM_BYTES = 32764     # a kernel's parameter space (CUDA 12.1+)
# Module.launch arguments a replay sets from the record itself
_FROM_RECORD = ("grid", "block", "cluster", "shared_bytes", "param_bytes", "buffers", "args", "name", "symbols",
                "cooperative")

# CUtensorMapDataType (cuda.h), by value
DRIVER_DTYPES = ("UINT8", "UINT16", "UINT32", "INT32", "UINT64", "INT64", "FLOAT16", "FLOAT32", "FLOAT64",
                 "BFLOAT16", "FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ")
_ROLES = ("input", "output", "workspace")


ADDRESS_LIMIT = 1 << 63  # where a recorded buffer must end (GPU virtual addresses are 49 bits)

class LaunchRecordError(TcemuError):
    """A launch record that is malformed or disagrees with the PTX it names."""


@dataclass
class Replay:
    outputs: Dict[str, np.ndarray]   # every "output" buffer after the launch, in its storage shape and dtype
    stats: dict                      # Module.launch's statistics


def storage_dtype(dtype: str):
    """numpy dtype that holds one element's bits ("bytes" buffers are uint8)."""
    if isinstance(dtype, str) and dtype == "bytes":
        return np.dtype(np.uint8)
    if not isinstance(dtype, str) or dtype not in FORMATS:
        raise LaunchRecordError("buffers.dtype", f"expected one of {sorted(FORMATS)} or 'bytes', got {show(dtype)}")
    return np.dtype(FORMATS[dtype][0])


def _need(rec, key, kind):
    if not isinstance(rec, dict):
        raise LaunchRecordError("record", f"must be a launch record (a dict), got {show(rec)}")
    if key not in rec:
        raise LaunchRecordError(key, "missing from the launch record")
    v = rec[key]
    if not isinstance(v, kind) or isinstance(v, bool):
        raise LaunchRecordError(key, f"expected {getattr(kind, '__name__', kind)}, got {type(v).__name__}")
    return v


def _ints(rec, key, lo, hi, length=None):
    """rec[key]: a list of integers in [lo, hi] (of `length`); never int() of a string or a float."""
    v = _need(rec, key, list)
    if (length is not None and len(v) != length) or not all(is_int(x) and lo <= x <= hi for x in v):
        raise LaunchRecordError(key, f"must be a list of {length or 'some'} integers in [{lo}, {hi:#x}], got {show(v)}")
    return [int(x) for x in v]


def _int(rec, key, lo, hi):
    v = _need(rec, key, int)
    if not lo <= v <= hi:
        raise LaunchRecordError(key, f"must be an integer in [{lo}, {hi:#x}], got {show(v)}")
    return v


def _buffers(record):
    bufs = _need(record, "buffers", list)
    out = {}
    for i, b in enumerate(bufs):
        name = _need(b, "name", str)
        if name in out:
            raise LaunchRecordError("buffers", f"buffer {show(name)} appears twice")
        role = _need(b, "role", str)
        if role not in _ROLES:
            raise LaunchRecordError(f"buffers[{show(name)}].role", f"expected one of {_ROLES}, got {show(role)}")
        dt = storage_dtype(_need(b, "dtype", str))
        storage = _ints(b, "storage", 1, MAX_BUFFER_BYTES)
        nbytes = _int(b, "bytes", 1, MAX_BUFFER_BYTES)
        if not 1 <= len(storage) <= 5 or int(np.prod(storage, dtype=np.float64)) * dt.itemsize != nbytes:
            raise LaunchRecordError(f"buffers[{show(name)}]", f"storage {show(storage)} of {dt} is not {nbytes} bytes "
                                                              f"(at most {MAX_BUFFER_BYTES:,})")
        addr = _int(b, "address", 0, (1 << 64) - 1)
        if addr % 256:
            raise LaunchRecordError(f"buffers[{name}].address", f"{addr:#x} is not 256-byte aligned")
        if addr + nbytes > ADDRESS_LIMIT:  # never wraps past 2^64, never overflows the interpreter's int64 maths
            raise LaunchRecordError(f"buffers[{name}].address", f"{addr:#x} + {nbytes:,} bytes ends past 2^63: "
                                                                "device buffers lie below 2^63")
        data = b.get("data")
        if data is not None and (not isinstance(data, str) or len(data) != 2 * nbytes):
            raise LaunchRecordError(f"buffers[{show(name)}].data", f"must be the hex of its {nbytes:,} bytes")
        out[name] = {"index": i, "role": role, "dtype": b["dtype"], "np": dt, "storage": tuple(storage),
                     "bytes": nbytes, "address": addr, "data": data}
    return out


def _symbols(record, bufs) -> Dict[str, tuple]:
    """The record's `symbols` (absent: none) as Module.launch(symbols=...): {name: (address, bytes)}, each one
    inside a recorded buffer."""
    if "symbols" not in record:
        return {}
    out = {}
    for i, v in enumerate(_need(record, "symbols", list)):
        name = _need(v, "name", str)
        address, nbytes = _int(v, "address", 0, ADDRESS_LIMIT - 1), _int(v, "bytes", 1, MAX_BUFFER_BYTES)
        if name in out:
            raise LaunchRecordError(f"symbols[{i}].name", f"{show(name)} appears twice")
        if not any(b["address"] <= address and address + nbytes <= b["address"] + b["bytes"] for b in bufs.values()):
            raise LaunchRecordError(f"symbols[{i}]", f"{name} at {address:#x} ({nbytes} bytes) does not lie inside "
                                                     "one recorded buffer")
        out[name] = (address, nbytes)
    return out


def input_arrays(record, seed: int, inputs: Optional[dict] = None) -> Dict[str, np.ndarray]:
    """Every buffer's initial contents: inputs from `inputs` (name -> array of the storage shape and element
    width), else the record's `data`, else input_bits(dtype, storage, seed, stream = buffer index); outputs
    POISON; workspace zeros."""
    if inputs is not None and not isinstance(inputs, dict):
        raise LaunchRecordError("inputs", f"must be a dict (buffer name -> array) or None, got {show(inputs)}")
    inputs = dict(inputs or {})
    out = {}
    for name, b in _buffers(record).items():
        if b["data"] is not None and name not in inputs:  # recorded bytes (tcemu exec --record)
            try:
                raw = bytes.fromhex(b["data"])
            except ValueError:
                raise LaunchRecordError(f"buffers[{show(name)}].data", "is not hex") from None
            out[name] = np.frombuffer(raw, np.uint8).view(b["np"]).reshape(b["storage"]).copy()
        elif b["role"] == "input":
            if name in inputs:
                a = inputs.pop(name)
                if not isinstance(a, np.ndarray) or a.dtype.kind not in "biuf":
                    raise LaunchRecordError(f"inputs[{name}]", f"must be a numeric array (the buffer's element bits), "
                                                               f"got {show(a)}")
                a = np.ascontiguousarray(a)
                if a.shape != b["storage"] or a.dtype.itemsize != b["np"].itemsize:
                    raise LaunchRecordError(f"inputs[{name}]", f"expected shape {b['storage']} of {b['np'].itemsize}-"
                                                               f"byte elements, got {a.shape} {a.dtype}")
                out[name] = a.view(b["np"]).copy()
            else:
                out[name] = input_bits(b["dtype"], b["storage"], seed, b["index"])
        elif b["role"] == "output":
            out[name] = np.full(b["bytes"], POISON, np.uint8).view(b["np"]).reshape(b["storage"])
        else:
            out[name] = np.zeros(b["storage"], b["np"])
    if inputs:
        raise LaunchRecordError("inputs", f"{show(list(inputs))} are not input buffers of this launch")
    return out


def tensor_map(encode: dict, buffers: dict):
    """tcemu's TensorMap for one recorded cuTensorMapEncodeTiled call (address = buffer + delta), validated."""
    if not isinstance(buffers, dict):
        raise LaunchRecordError("buffers", f"must be the record's buffers by name, got {show(buffers)}")
    dt = _need(encode, "dtype", int)
    if not 0 <= dt < len(DRIVER_DTYPES):
        raise LaunchRecordError("encodes.dtype", f"CUtensorMapDataType {show(dt)} is not modelled (0-12 are)")
    buf = _need(encode, "buffer", str)
    if buf not in buffers:
        raise LaunchRecordError("encodes.buffer", f"{show(buf)} is not a buffer of the record")
    rank = _need(encode, "rank", int)
    fields = {k: _ints(encode, k, 0, 1 << 62) for k in ("dims", "strides_bytes", "box", "element_strides")}
    if not (1 <= rank <= 5 and len(fields["dims"]) == len(fields["box"]) == len(fields["element_strides"]) == rank
            and len(fields["strides_bytes"]) == rank - 1):
        raise LaunchRecordError("encodes", f"rank {show(rank)} disagrees with dims/box/element_strides/strides lengths")
    address = buffers[buf]["address"] + _int(encode, "delta", -(1 << 64), 1 << 64)
    tm = TensorMap(DRIVER_TYPES[DRIVER_DTYPES[dt]], fields["dims"], fields["strides_bytes"], fields["box"],
                   fields["element_strides"], swizzle=_need(encode, "swizzle", int),
                   interleave=_need(encode, "interleave", int), fill=_need(encode, "oob_fill", int),
                   l2_promotion=_need(encode, "l2_promotion", int), global_address=address)
    validate(tm, f"tensor map of buffer {buf}")
    return tm


def blob_for(record) -> bytes:
    """The record's parameter blob with every tensor map in tcemu's format; pointers checked, left as recorded
    (the replay maps each buffer at its recorded address)."""
    text = _need(record, "param_blob", str)
    if len(text) > 2 * MAX_PARAM_BYTES:
        raise LaunchRecordError("param_blob", f"{len(text) // 2:,} bytes; a parameter space holds at most "
                                              f"{MAX_PARAM_BYTES:,}")
    try:
        blob = bytearray(bytes.fromhex(text))
    except ValueError:
        raise LaunchRecordError("param_blob", "is not hex") from None
    bufs = _buffers(record)
    for p in _need(record, "pointers", list):
        off, name, delta = _need(p, "offset", int), _need(p, "buffer", str), _int(p, "delta", -(1 << 64), 1 << 64)
        if name not in bufs or not 0 <= off <= len(blob) - 8:
            raise LaunchRecordError("pointers", f"offset {show(off)} / buffer {show(name)} outside the blob or the buffers")
        held = int.from_bytes(blob[off:off + 8], "little")
        if held != bufs[name]["address"] + delta:
            raise LaunchRecordError("pointers", f"blob offset {off} holds {held:#x}, the record says {show(name)} + {show(delta)}")
    encodes = _need(record, "encodes", list)
    for t in _need(record, "tensormaps", list):
        off, idx = _need(t, "offset", int), _need(t, "encode", int)
        if not 0 <= idx < len(encodes):
            raise LaunchRecordError("tensormaps.encode", f"{show(idx)} is not an index into encodes")
        if off % 64 or not 0 <= off <= len(blob) - SIZE:
            raise LaunchRecordError("tensormaps.offset", f"{show(off)}: a map is 64-byte aligned inside the blob")
        tm = tensor_map(encodes[idx], bufs)
        blob[off:off + SIZE] = tm.to_bytes()
    return bytes(blob)


def _check_layout(mod, record):
    """The record's .param layout must be the interpreter's (read from the declarations; nothing compiled)."""
    entry = _need(record, "entry", str)
    fn = mod.tree.functions.get(entry)
    if fn is None or not fn.entry:
        raise LaunchRecordError("entry", f"{entry[:80]}... is not a kernel of the PTX module")
    # (a kernel the module compiled already has the same .param layout: replays of one module skip a Program)
    prog = mod.compiled(entry) or Program(fn, {})
    params = _need(record, "params", list)
    names = [_need(p, "name", str) for p in params]
    if [p.name for p in prog.fn.params] != names:
        raise LaunchRecordError("params", f"the record's parameter names differ from {entry[:80]}...'s .param list")
    for name, p in zip(names, params):
        off = _need(p, "offset", int)
        if prog.symbols[name].address != off:
            raise LaunchRecordError("params", f"{name[:80]}...: the record puts it at offset {show(off)}, the "
                                              f"interpreter at {prog.symbols[name].address}")
    return entry


def replay(record, ptx, *, seed: int = 0, inputs: Optional[dict] = None, cluster=None, **launch) -> Replay:
    """Run one recorded launch on the CPU; `ptx` is the PTX text, a path, or a loaded tcemu.ptx Module.

    cluster: None launches with the record's cluster shape; another shape is the caller's claim that the
    kernel's CTAs never communicate (no distributed shared memory, multicast or remote arrive), so the split
    cannot change any output. `launch` goes to Module.launch (max_instructions, progress, check_layouts...)."""
    seed = as_int(seed, "seed", 0, (1 << 64) - 1, LaunchRecordError)
    clash = [k for k in launch if k in _FROM_RECORD]
    if clash:
        raise LaunchRecordError(clash[0], "comes from the launch record (replay sets it); pass cluster= to change "
                                          "the cluster shape")
    if isinstance(record, dict) and "entry" not in record and ("launch" in record or "launches" in record):
        key = "launch" if "launch" in record else "launches"  # a fixture's json, passed whole (issue 27)
        raise LaunchRecordError("record", f"this is a fixture's json, not a launch record: pass its {key!r} "
                                          + ("value (fixture['launch'])" if key == "launch" else
                                             "records one at a time (fixture['launches'][i])")
                                          + ", or run it with `tcemu run FIXTURE.json`")
    _need(record, "entry", str)  # the record's form before a PTX text is parsed
    mod = ptx if isinstance(ptx, tptx.Module) else tptx.load(ptx)
    entry = _check_layout(mod, record)
    blob = blob_for(record)
    bufs = _buffers(record)
    symbols = _symbols(record, bufs)
    arrays = input_arrays(record, seed, inputs)
    grid = _ints(record, "grid", 1, (1 << 31) - 1, 3)
    recorded = _ints(record, "cluster", 1, 16, 3)  # checked even when cluster= overrides it
    cl = recorded if cluster is None else cluster
    coop = record.get("cooperative", False)
    if not isinstance(coop, bool):
        raise LaunchRecordError("cooperative", f"expected true or false, got {show(coop)}")
    if coop:
        launch["cooperative"] = True
    stats = mod.launch(entry, grid=grid, block=_ints(record, "block", 1, 1024, 3), cluster=cl,
                       shared_bytes=_need(record, "shared_bytes", int), param_bytes=blob,
                       buffers=[(bufs[n]["address"], a) for n, a in arrays.items()], symbols=symbols or None,
                       **launch)
    return Replay({n: a for n, a in arrays.items() if bufs[n]["role"] == "output"}, stats)
