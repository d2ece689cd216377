"""`tcemu run` from metadata: what a path holds, and the launch a fixture's .json or a launch record describes.

- A Triton fixture's .json (tcemu.triton.compile_kernel's metadata: entry, parameters by role and argument name,
  block, shared bytes, grid rule, and the capture's `launch_values`) launches its kernel with every argument
  named as the metadata names it. A GEMM (a/b/c pointers or tensor descriptors, with M, N, K) gets seeded
  inputs of its launch shape by default; any argument can be given as `--arg NAME=SPEC`.
- A CUTLASS fixture's .json (`launches`: one launch record per case; `--launch I` picks one), a bench record's
  `launch`, or a bare launch record replays the recorded launch (tcemu.launches.replay) from the seed.

The PTX is the .json's sibling: the same name with .ptx, or the record's (else the document's) `fixture` + .ptx;
--ptx names another.
"""
import json
import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from ..core.validate import show
from ..frontends.triton import TensorDescriptor, launch_grid, run_compiled
from ..ptx import Module
from ..ptx.errors import PtxError
from ..traces import launches as L
from ..traces.inputs import input_bits
from .names import short_name

MAX_SOURCE_BYTES = 1 << 26   # a .ptx or .json read by `tcemu run` (the largest bundled fixture is 238 KB)
# Triton element types -> (tcemu format for seeded inputs or None, numpy storage, the TYPE of a zeros: spec)
TRITON_TYPES = {"bf16": ("bf16", np.uint16, "bf16"), "fp16": ("f16", np.uint16, "f16"),
                "fp32": ("f32", np.uint32, "f32"), "fp8e4nv": ("e4m3", np.uint8, "e4m3"), "u8": (None, np.uint8, "u8"),
                "i8": (None, np.int8, "s8"), "i16": (None, np.int16, "u16"), "i32": (None, np.int32, "s32"),
                "u32": (None, np.uint32, "u32"), "i64": (None, np.int64, "s64"), "fp64": (None, np.float64, "f64")}
ARG_ROLES = ("pointer", "scalar", "tensormap")   # the roles a user gives a value for (the rest follow from them)


@dataclass
class Gemm:
    """What --check compares: C = A B, the raw bits of each (b as (K, N)), their formats and the model's options."""
    a: np.ndarray
    b: np.ndarray
    c_name: str
    dtype_a: str
    dtype_b: str
    out_dtype: str
    options: dict = field(default_factory=dict)   # tcemu.matmul keywords (init, promote_every, alpha)


@dataclass
class Plan:
    module: Module
    entry: str
    what: str                                       # where the launch comes from, in words
    run: object = None                              # run(**launch options) -> stats; arrays are updated in place
    arrays: Dict[str, np.ndarray] = field(default_factory=dict)   # every array argument or output, by name
    gemm: Optional[Gemm] = None
    gemm_why: str = ""                              # why there is no GEMM to check, when there is none
    names: Dict[str, str] = field(default_factory=dict)  # .param name -> the metadata's name, for messages

    def rename(self, text: str) -> str:
        """`text` with the entry's .param names replaced by the names the metadata gives them."""
        for ptx_name in sorted(self.names, key=len, reverse=True):
            text = re.sub(rf"(?<![\w$]){re.escape(ptx_name)}(?![\w$])", self.names[ptx_name], text)
        return text


def read_source(path):
    """("ptx", text) or ("json", dict) for the file at `path`, whatever its name: JSON when it ends in .json or
    its text starts with "{"; anything else is PTX text. PtxError (field "ptx") for a missing or unreadable one."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise PtxError("ptx", f"{show(path, 400)} is not a file path")
    if os.path.isdir(path):
        raise PtxError("ptx", f"{show(path, 400)} is a folder; give a PTX file or a fixture's .json")
    if not os.path.isfile(path):
        raise PtxError("ptx", f"{show(path, 400)}: no such file")
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_SOURCE_BYTES + 1)
    except OSError as e:
        raise PtxError("ptx", f"cannot read {show(path, 400)} ({e.strerror or e})") from None
    if len(raw) > MAX_SOURCE_BYTES:
        raise PtxError("ptx", f"{show(path, 400)} holds more than {MAX_SOURCE_BYTES:,} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PtxError("ptx", f"{show(path, 400)} is not text (byte {e.start}): give PTX text or a fixture's .json") \
            from None
    if path.lower().endswith(".json") or text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as e:
            raise PtxError("ptx", f"{show(path, 400)} is not valid JSON ({show(str(e), 120)})") from None
        if not isinstance(doc, dict):
            raise PtxError("ptx", f"{show(path, 400)} holds JSON {type(doc).__name__}, not a fixture's metadata object")
        return "json", doc
    return "ptx", text


def load_module(path: str, text: str) -> Module:
    return Module(text, os.path.basename(path))


def sibling_metadata(path: str, entry: str) -> Optional[dict]:
    """The Triton metadata beside a .ptx (same name, .json) when it describes `entry`, else None."""
    meta_path = os.path.splitext(path)[0] + ".json"
    if meta_path == path or not os.path.isfile(meta_path):
        return None
    try:
        kind, doc = read_source(meta_path)
    except PtxError:
        return None
    if kind == "json" and doc.get("entry") == entry and isinstance(doc.get("params"), list):
        return doc
    return None


def param_names(meta: dict) -> List[str]:
    """How the metadata names each .param of its entry (argument name, or the scratch pointer's role)."""
    out = []
    for p in meta.get("params") or []:
        if not isinstance(p, dict):
            continue
        role, arg = p.get("role"), p.get("arg")
        if role in ("tensormap_shape", "tensormap_stride"):
            out.append(f"{arg}.{'shape' if role == 'tensormap_shape' else 'stride'}[{p.get('dim')}]")
        elif role in ("global_scratch", "profile_scratch"):
            out.append(role.replace("_", " "))
        else:
            out.append(str(arg))
    return out


def metadata_names(meta: dict) -> Dict[str, str]:
    """.param name -> the metadata's name for it (param_names), where the metadata gives the .param name."""
    out = {}
    for p, name in zip(meta.get("params") or [], param_names(meta)):
        if isinstance(p, dict) and isinstance(p.get("ptx_name"), str) and name != "None":
            out[p["ptx_name"]] = name
    return out


# ---------------------------------------------------------------------------------------------- the PTX file

def _ptx_for(path: str, doc: dict, ptx: Optional[str]) -> str:  # ptx: --ptx
    if ptx is not None:
        return ptx
    folder = os.path.dirname(path)
    names = []
    if isinstance(doc.get("fixture"), str):
        names.append(os.path.join(folder, os.path.basename(doc["fixture"]) + ".ptx"))
    names.append(os.path.splitext(path)[0] + ".ptx")
    for p in names:
        if os.path.isfile(p):
            return p
    raise PtxError("--ptx", f"no PTX beside {show(path, 400)} (looked for {', '.join(show(p, 400) for p in names)}): "
                            "name it with --ptx")


def plan_json(path: str, doc: dict, args, parse_arg) -> Plan:
    """The launch a fixture's .json or a launch record describes (see the module docstring)."""
    if "param_blob" in doc or "launches" in doc or isinstance(doc.get("launch"), dict):
        return _plan_record(path, doc, args)
    if isinstance(doc.get("entry"), str) and isinstance(doc.get("params"), list):
        if not all(isinstance(p, dict) and isinstance(p.get("role"), str) for p in doc["params"]):
            raise PtxError("ptx", f"{show(path, 400)}: its params carry no roles and argument names (it is not "
                                  "Triton's metadata): run its PTX with the arguments in order (--arg ...)")
        return _plan_triton(path, doc, args, parse_arg)
    keys = ", ".join(list(doc)[:8])
    raise PtxError("ptx", f"{show(path, 400)} is neither a fixture's metadata (entry and params), a CUTLASS fixture "
                          f"(launches), a bench record (launch) nor a launch record (param_blob); its keys: {keys}")


def _load(path, doc, args):
    ptx_path = _ptx_for(path, doc, args.ptx_path)
    kind, text = read_source(ptx_path)
    if kind != "ptx":
        raise PtxError("--ptx", f"{show(ptx_path, 400)} holds JSON, not PTX text")
    return load_module(ptx_path, text)


# ---------------------------------------------------------------------------------------------- launch records

def _plan_record(path, doc, args) -> Plan:
    if "param_blob" in doc:
        record, what = doc, f"the launch record {os.path.basename(path)}"
    elif isinstance(doc.get("launch"), dict):
        record, what = doc["launch"], f"the launch record of {os.path.basename(path)}"
    else:
        records = doc["launches"]
        if not isinstance(records, list) or not records:
            raise PtxError("launches", f"{show(path, 400)}: expected a non-empty list of launch records")
        i = 0 if args.launch is None else args.launch
        if not 0 <= i < len(records):
            raise PtxError("--launch", f"{i}: {os.path.basename(path)} holds launches 0 to {len(records) - 1}")
        record = records[i]
        case = record.get("case") if isinstance(record, dict) else None
        what = f"launch {i} of {len(records)} in {os.path.basename(path)}" + (f" (case {case})" if case else "")
    for opt in ("grid", "block", "cluster", "shared"):
        if getattr(args, opt) is not None:
            raise PtxError(f"--{opt}", "comes from the launch record; leave it out")
    if args.arg:
        raise PtxError("--arg", "a launch record carries its own parameters and seeded inputs (--seed picks "
                                "the inputs)")
    if args.launch is not None and "launches" not in doc:
        raise PtxError("--launch", f"{os.path.basename(path)} holds one launch, not a list of them")
    entry = record.get("entry") if isinstance(record, dict) else None
    if not isinstance(entry, str):
        raise PtxError("entry", f"the launch record in {show(path, 400)} names no entry")
    # a record may name its own PTX (tcemu exec --record: one file per fatbinary); else the document's
    mod = _load(path, record if isinstance(record.get("fixture"), str) else doc, args)
    plan = Plan(mod, entry, what)
    out = {}

    def run(**launch):
        rep = L.replay(record, mod, seed=args.seed, **launch)
        out.update(rep.outputs)
        plan.arrays.update(rep.outputs)
        return rep.stats
    plan.run = run
    plan.gemm, plan.gemm_why = _record_gemm(record, args.seed)
    return plan


def _record_gemm(record, seed):
    """CUTLASS GEMM records (notes.gemm): D (M, N) = alpha A (M, K) B (N, K)^T with beta 0."""
    notes = record.get("notes") if isinstance(record.get("notes"), dict) else {}
    if not notes.get("gemm"):
        return None, "the launch record's notes do not describe a GEMM (notes.gemm)"
    if notes.get("beta", 0) != 0:
        return None, f"the GEMM adds beta = {notes['beta']} x C; --check compares D = alpha A B only"
    bufs = {b.get("name"): b for b in record.get("buffers", []) if isinstance(b, dict)}
    ins = [b for b in record.get("buffers", []) if isinstance(b, dict) and b.get("role") == "input"]
    outs = [b for b in record.get("buffers", []) if isinstance(b, dict) and b.get("role") == "output"]
    if len(ins) != 2 or len(outs) != 1:
        return None, f"expected two inputs and one output buffer, the record has {sorted(bufs)}"
    arrays = L.input_arrays(record, seed)
    a, b = arrays[ins[0]["name"]], arrays[ins[1]["name"]]
    options = {"init": "none"}
    alpha = notes.get("alpha", 1)
    if alpha != 1:
        options["alpha"] = float(alpha)
    interval = notes.get("mma_promotion_interval")
    if interval:
        ks = {"e4m3": 32, "e5m2": 32}.get(ins[0]["dtype"], 16)
        per_tile = (notes.get("tile") or [0, 0, 128])[2] // ks
        options["promote_every"] = per_tile * (int(interval) // per_tile) if per_tile else int(interval)
    return Gemm(a, b.T, outs[0]["name"], ins[0]["dtype"], ins[1]["dtype"], outs[0]["dtype"], options), ""


# ---------------------------------------------------------------------------------------------- Triton metadata

def _arguments(meta) -> List[tuple]:
    """(name, role, type) of each argument a user gives, in .param order."""
    out, seen = [], set()
    for p in meta["params"]:
        if not isinstance(p, dict):
            raise PtxError("params", "each parameter of the metadata must be a record with a role")
        if p.get("role") in ARG_ROLES and p.get("arg") not in seen:
            seen.add(p.get("arg"))
            out.append((str(p.get("arg")), p["role"], str(p.get("type", ""))))
    return out


def _given(args, arguments, parse_arg):
    """name -> value of the --arg options: NAME=SPEC, or positional in argument order."""
    names = [a[0] for a in arguments]
    given, positional = {}, 0
    for i, text in enumerate(args.arg or []):
        name, spec = None, text
        head = text.split("=", 1)[0]
        if "=" in text and head in names:
            name, spec = head, text.split("=", 1)[1]
        elif "=" in text and head.isidentifier():
            raise PtxError(f"--arg {i}", f"{show(head)} is not an argument of the kernel; its arguments: "
                                         f"{', '.join(names)}")
        else:
            if positional >= len(names):
                raise PtxError("--arg", f"{len(args.arg)} values for the {len(names)} arguments "
                                        f"({', '.join(names)})")
            name, positional = names[positional], positional + 1
        if name in given:
            raise PtxError(f"--arg {i}", f"{name} is given twice")
        given[name] = parse_arg(spec, list(given.values()), i)
    return given


def _element(type_text: str):
    """(tcemu format or None, numpy storage, block shape or None, zeros: TYPE) of a Triton '*T' or
    'tensordesc<T[..]>' type."""
    block = None
    if type_text.startswith("tensordesc<"):
        inner = type_text[len("tensordesc<"):-1]
        t, _, dims = inner.partition("[")
        block = [int(x) for x in dims.rstrip("]").split(",") if x.strip()]
    else:
        t = type_text.lstrip("*")
    if t not in TRITON_TYPES:
        raise PtxError("type", f"element type {show(t)} is not one tcemu run can make arrays of")
    fmt, store, spec = TRITON_TYPES[t]
    return fmt, store, block, spec


def _gemm_names(sig):
    for trio in (("a_ptr", "b_ptr", "c_ptr"), ("a_desc", "b_desc", "c_desc")):
        if all(n in sig for n in trio):
            return trio
    return None


def _plan_triton(path, meta, args, parse_arg) -> Plan:
    for opt in ("cluster",):
        if getattr(args, opt) is not None:
            raise PtxError(f"--{opt}", "comes from the metadata (num_ctas); leave it out")
    if args.launch is not None:
        raise PtxError("--launch", f"{os.path.basename(path)} describes one kernel, not a list of launches")
    arguments = _arguments(meta)
    given = _given(args, arguments, parse_arg)
    values = dict(meta.get("launch_values") or {})
    sig = meta.get("signature") or {}
    for name, _, _ in arguments:  # launch values the user replaced
        if name in given:
            values[name] = given[name]
    gemm_names = _gemm_names(sig)
    mod = _load(path, meta, args)
    entry = meta["entry"]
    plan = Plan(mod, entry, f"{os.path.basename(path)} (Triton metadata)")
    plan.names = metadata_names(meta)
    shape = None
    if gemm_names is not None and all(k in values for k in "MNK"):
        shape = _gemm_shape(values)
        kn = "stride_bk" in sig and sig.get("stride_bn") == "constexpr"
        for k, v in (("stride_am", shape[2]), ("stride_bk", shape[1] if kn else 1),
                     ("stride_bn", 1 if kn else shape[2]), ("stride_cm", shape[1])):
            if sig.get(k) not in (None, "constexpr") and k not in given:
                values[k] = v  # follows M, N, K when the user changed them
    for stream, (name, role, type_text) in enumerate(arguments):
        if role == "scalar":
            if name not in values or isinstance(values[name], str):
                raise PtxError(name, f"the metadata gives no value for this {type_text} argument: pass --arg "
                                     f"{name}=VALUE")
            continue
        fmt, store, block, spec = _element(type_text)
        arr = given.get(name)
        if isinstance(arr, TensorDescriptor):
            arr = arr.base
        if arr is None and shape is not None and name in gemm_names:
            M, N, K = shape
            which = gemm_names.index(name)
            kn = "stride_bk" in sig and sig.get("stride_bn") == "constexpr"
            dims = [(M, K), (K, N) if kn else (N, K), (M, N)][which]
            arr = np.zeros(dims, store) if which == 2 or fmt is None else input_bits(fmt, dims, args.seed, stream)
        if arr is None:
            what = f"random:{fmt}:SHAPE" if fmt else f"zeros:{spec}:SHAPE"
            raise PtxError(name, f"the metadata gives no shape for this {type_text} argument: pass --arg "
                                 f"{name}={what} (or zeros:TYPE:SHAPE, or a .npy file)")
        if not isinstance(arr, np.ndarray):
            raise PtxError(name, f"this {type_text} argument takes an array (random:, zeros:, a .npy file), "
                                 f"got {show(arr)}")
        if arr.dtype.itemsize != np.dtype(store).itemsize:
            raise PtxError(name, f"{type_text} elements are {np.dtype(store).itemsize} bytes; the array's are "
                                 f"{arr.dtype.itemsize} ({arr.dtype})")
        plan.arrays[name] = arr
        values[name] = TensorDescriptor(arr, block) if role == "tensormap" else arr
    grid = _grid(meta, values, args)
    run_meta = dict(meta)
    if args.block is not None:
        run_meta["block"] = list(args.block)
    if args.shared is not None:
        run_meta["shared_bytes"] = args.shared
    runtime = {k: v for k, v in values.items() if sig.get(k) != "constexpr" or k in given}

    def run(**launch):
        return run_compiled(mod, run_meta, runtime, grid=grid, **launch)
    plan.run = run
    if shape is not None:
        a, b, c = (plan.arrays[n] for n in gemm_names)
        kn = "stride_bk" in sig and sig.get("stride_bn") == "constexpr"
        types = [_element(str(sig[n]))[0] for n in gemm_names]
        if None in types:
            plan.gemm_why = f"--check knows bf16, f16, f32 and e4m3 operands, not {sig[gemm_names[0]]}"
        else:
            dt = "tf32" if types[0] == "f32" else types[0]
            plan.gemm = Gemm(a, b if kn else b.T, gemm_names[2], dt, dt, types[2], {"init": "zero"})
    else:
        plan.gemm_why = (f"{short_name(entry)} is not a GEMM --check can name (a_ptr, b_ptr, c_ptr or a_desc, b_desc, "
                         "c_desc with M, N, K)")
    return plan


MAX_OPERAND_ELEMENTS = 1 << 31   # one operand a GEMM launch makes (4 GiB of f16 bits at most)


def _gemm_shape(values):
    """(M, N, K) of a GEMM launch: positive integers, each operand within MAX_OPERAND_ELEMENTS elements."""
    for k in "MNK":
        v = values[k]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise PtxError(k, f"{show(v)}: a GEMM's M, N and K are positive integers")
    M, N, K = values["M"], values["N"], values["K"]
    for name, n in (("A", M * K), ("B", K * N), ("C", M * N)):
        if n > MAX_OPERAND_ELEMENTS:
            raise PtxError("MNK", f"M = {M}, N = {N}, K = {K}: {name} would hold {n:,} elements; at most "
                                  f"{MAX_OPERAND_ELEMENTS:,} (tcemu.tools.launch.MAX_OPERAND_ELEMENTS)")
    return M, N, K


def _grid(meta, values, args):
    if args.grid is not None:
        return tuple(args.grid)
    if meta.get("grid") is not None:
        ints = {k: v for k, v in values.items() if isinstance(v, int) and not isinstance(v, bool)}
        return launch_grid(meta["grid"], ints, meta.get("constexprs") or {})
    if isinstance(meta.get("launch_grid"), list):
        return tuple(meta["launch_grid"])
    raise PtxError("--grid", "the metadata has no grid rule and no launch_grid: pass --grid")
