"""`tcemu run`: launch a PTX kernel (sm_90a, sm_100a, sm_103a) on the CPU from the command line.

    tcemu run tests/fixtures/ptx/matmul_bf16.json --check matmul
    tcemu run tests/fixtures/ptx/matmul_bf16.json --arg M=128 --arg N=256 --arg K=64 --check numpy --save out/
    tcemu run tests/fixtures/ptx/cutlass_ws_bf16.json --launch 1 --check matmul
    tcemu run matmul.ptx --kernel matmul_kernel --grid 8 --block 256 --shared 147456 \\
        --arg random:bf16:512x512:1 --arg random:bf16:512x512:2 --arg zeros:f16:512x512 \\
        --arg 512 --arg 512 --arg 512 --arg 512 --arg 512 --arg 512 --arg null --arg null --save out/

A fixture's .json launches its kernel from the metadata: the entry, block, shared memory and grid, and every
argument by the name the metadata gives it (Triton's compile metadata; a GEMM gets seeded inputs of its launch
shape, and `--arg NAME=SPEC` replaces any argument), or replays one of its recorded launches (CUTLASS fixtures'
`launches`, a bench record's `launch`, a bare launch record). The PTX is the .json's sibling, or --ptx.

An --arg of a PTX file is one kernel parameter, in order: an int or a float (scalars), `null` (a null pointer),
a `.npy` file (loaded without pickles), `zeros:TYPE:SHAPE`, `random:TYPE:SHAPE[:SEED]` (tcemu.kernel_inputs'
seeded bit patterns; TYPE bf16, f16, f32 or e4m3) or `tensormap:ARG:BOX[:SWIZZLE]` (a tensor map over the
array given as argument number ARG, box dimension 0 first, e.g. `tensormap:0:64x128:128B`). SHAPE and BOX
are `x`-separated. --save writes every array argument after the run as DIR/arg<i>.npy (DIR/<name>.npy for a
.json). --check compares a GEMM's output with numpy or tcemu.matmul and exits 1 on a mismatch.
"""
import argparse
import json
import os
import re

import numpy as np

from ..core.errors import TcemuError
from ..core.validate import show
from ..ptx.errors import PtxError, PtxLimit
from ..ptx.module import DEFAULT_TIMEOUT, MAX_INSTRUCTIONS
from ..ptx.tensormap import encode_tiled
from ..traces.inputs import input_bits
from .launch import Plan, load_module, metadata_names, param_names, plan_json, read_source, sibling_metadata
from .names import pretty, short_name
from .refcheck import check as refcheck

ARG_BYTES_LIMIT = 4 << 30  # one --arg array (zeros:/random:/.npy): larger is refused before it is allocated

_DT = {"bf16": np.uint16, "f16": np.float16, "f32": np.float32, "e4m3": np.uint8, "u8": np.uint8, "s8": np.int8,
       "u16": np.uint16, "u32": np.uint32, "s32": np.int32, "u64": np.uint64, "s64": np.int64, "f64": np.float64}


def _dims(text: str, field: str):
    try:
        if len(text) > 80:
            raise ValueError
        dims = tuple(int(x) for x in text.lower().split("x"))
    except ValueError:
        raise PtxError(field, f"{show(text)} is not an x-separated list of ints") from None
    if not dims or any(d < 1 for d in dims) or np.prod(dims, dtype=np.float64) > 2**31:
        raise PtxError(field, f"{show(text)}: dimensions must be positive and hold at most 2^31 elements")
    return dims


def _check_bytes(field: str, what: str, shape, itemsize: int):
    n = 1
    for d in shape:
        n *= int(d)
    if n * itemsize > ARG_BYTES_LIMIT:
        raise PtxLimit(field, f"{what}: {n:,} elements of {itemsize} bytes would take {n * itemsize:,} bytes; "
                              f"an argument holds at most {ARG_BYTES_LIMIT:,} (tcemu.tools.run.ARG_BYTES_LIMIT)")


def _load_npy(path: str, field: str):
    # np.load, after checking the header's shape against the file's size and ARG_BYTES_LIMIT (a header that
    # declares 10^12 elements is refused before numpy tries to allocate them)
    fmt = np.lib.format
    try:
        with open(path, "rb") as fh:
            version = fmt.read_magic(fh)
            reader = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}.get(version)
            if reader is None:
                raise ValueError(f"unknown .npy version {version}")
            shape, _, dtype = reader(fh)
            data_bytes = os.fstat(fh.fileno()).st_size - fh.tell()
    except (ValueError, OSError, EOFError, TypeError) as e:
        raise PtxError(field, f"cannot read {show(path)} as a .npy array ({show(str(e), 200)})") from None
    _check_bytes(field, show(path), shape, dtype.itemsize)
    need = 1
    for d in shape:
        need *= int(d)
    need *= dtype.itemsize
    if need > data_bytes:
        raise PtxError(field, f"{show(path)}: its header declares shape {shape} of {dtype} ({need:,} bytes) but "
                              f"the file holds {max(data_bytes, 0):,} bytes of data")
    return np.load(path, allow_pickle=False)


def parse_arg(text: str, previous: list, index: int, seed: int = 0):
    field = f"--arg {index}"
    t = text.strip()
    if t == "null":
        return None
    try:
        return int(t, 0)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        pass
    if t.endswith(".npy"):
        if not os.path.isfile(t):
            raise PtxError(field, f"{show(t)} is not a file")
        try:
            arr = _load_npy(t, field)
        except (ValueError, OSError, EOFError) as e:
            if isinstance(e, TcemuError):
                raise
            raise PtxError(field, f"cannot read {show(t)} as a .npy array ({show(str(e), 200)})") from None
        if not isinstance(arr, np.ndarray):
            raise PtxError(field, f"{show(t)} holds an archive, not one .npy array")
        return np.ascontiguousarray(arr)
    parts = t.split(":")
    kind = parts[0]
    if kind in ("zeros", "random"):
        if len(parts) not in (3, 4) or parts[1] not in _DT:
            raise PtxError(field, f"{show(t)}: expected {kind}:TYPE:SHAPE[:SEED], TYPE one of {', '.join(_DT)}")
        shape = _dims(parts[2], field)
        _check_bytes(field, show(t), shape, np.dtype(_DT[parts[1]]).itemsize)
        if kind == "zeros":
            return np.zeros(shape, _DT[parts[1]])
        if parts[1] not in ("bf16", "f16", "f32", "e4m3"):
            raise PtxError(field, "random arrays are bf16, f16, f32 or e4m3")
        if len(parts) == 4:
            seed = int(parts[3]) if parts[3].isdigit() and len(parts[3]) <= 20 else -1
            if not 0 <= seed < 1 << 64:
                raise PtxError(field, f"{show(parts[3])}: the seed is an integer in [0, 2^64)")
        bits = input_bits(parts[1], shape, seed, index)
        return bits.view(_DT[parts[1]]) if parts[1] in ("f16", "f32") else bits
    if kind == "tensormap":
        if len(parts) not in (3, 4) or not parts[1].isdigit():
            raise PtxError(field, f"{show(t)}: expected tensormap:ARG:BOX[:SWIZZLE]")
        src = int(parts[1])
        if not 0 <= src < len(previous) or not isinstance(previous[src], np.ndarray):
            raise PtxError(field, f"argument {src} is not an earlier array argument")
        arr = previous[src]
        dtype = "BFLOAT16" if arr.dtype == np.uint16 else None
        return encode_tiled(arr, list(_dims(parts[2], field)), dtype=dtype, swizzle=parts[3] if len(parts) == 4 else "none")
    raise PtxError(field, f"{show(t)} is not a number, null, a .npy file, zeros:/random:/tensormap: spec")


def _distinct_short_names(names):
    """short_name of each; where two read the same, each says where its mangled name first differs."""
    short = [short_name(n) for n in names]
    key = [re.sub(r"[\d,]+ characters", "", s) for s in short]  # names that differ only in length read the same
    out = []
    for i, (n, s) in enumerate(zip(names, short)):
        twins = [m for j, m in enumerate(names) if j != i and key[j] == key[i]]
        if twins:
            at = min(next((c for c, (x, y) in enumerate(zip(n, m)) if x != y), min(len(n), len(m))) for m in twins)
            s += f" [from character {at}: …{n[at:at + 24]}…]"
        out.append(s)
    return out


def _kernel(mod, wanted):
    """The entry to run: the module's only kernel, or the one --kernel names (whole, by number in the module's
    list, or by a part of its name found in one kernel only)."""
    names = list(mod.kernels)
    listing = "; ".join(f"{i}: {s}" for i, s in enumerate(_distinct_short_names(names)))
    if wanted is None:
        if len(names) != 1:
            raise PtxError("--kernel", f"the module has {len(names)} kernels; name one, or give its number: {listing}")
        return names[0]
    if wanted in names:
        return wanted
    if wanted.isdigit() and int(wanted) < len(names):
        return names[int(wanted)]
    hits = [n for n in names if wanted and (wanted in n or wanted in (pretty(n) or ""))]
    if len(hits) == 1:
        return hits[0]
    raise PtxError("--kernel", f"{show(wanted)} names {'several' if hits else 'none'} of the module's kernels: "
                               f"{listing}")


def _count_error(mod, name, n_given, meta, meta_path):
    params = mod.kernels[name]
    if meta is not None:
        names = param_names(meta)
        how = f", as {os.path.basename(meta_path)} names them"
        hint = f"; or run {meta_path}, which launches it from its metadata"
    else:
        names = [p.name[len(name) + 1:] if p.name.startswith(name + "_") else p.name for p in params]
        how, hint = "", ""
    return PtxError("--arg", f"{short_name(name)} takes {len(params)} parameters ({', '.join(names)}{how}), got "
                             f"{n_given} --arg{'' if n_given == 1 else 's'}{hint}")


def _plan_ptx(path, text, args):
    mod = load_module(path, text)
    name = _kernel(mod, args.kernel)
    for opt, flag in (("ptx_path", "--ptx"), ("launch", "--launch")):
        if getattr(args, opt) is not None:
            raise PtxError(flag, "only with a fixture's .json; this is a PTX file")
    meta = sibling_metadata(path, name)
    values = []
    for i, a in enumerate(args.arg or []):
        head = a.split("=", 1)[0]
        if "=" in a and head.isidentifier():
            raise PtxError(f"--arg {i}", f"{show(head)}=... names an argument: arguments have names in a fixture's "
                                         ".json (tcemu run KERNEL.json --arg NAME=SPEC); here they go in order")
        values.append(parse_arg(a, values, i, seed=args.seed))
    if len(values) != len(mod.kernels[name]):
        raise _count_error(mod, name, len(values), meta, os.path.splitext(path)[0] + ".json")
    reqntid = mod.tree.functions[name].directives.get("reqntid")
    block = args.block or (tuple(reqntid) if reqntid else (128,))
    plan = Plan(mod, name, os.path.basename(path))
    if meta is not None:
        plan.names = metadata_names(meta)
    plan.arrays = {f"arg{i}": v for i, v in enumerate(values) if isinstance(v, np.ndarray)}

    def run(**launch):
        return mod.launch(name, grid=args.grid or (1,), block=block, args=values, shared_bytes=args.shared or 0,
                          cluster=args.cluster or (1,), **launch)
    plan.run = run
    plan.gemm_why = "a PTX file's arguments are positional: run the kernel's .json, whose metadata names A, B and C"
    return plan


def _save_folder(folder):
    try:  # the folder is made before the run, so that a bad one costs nothing
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise PtxError("--save", f"cannot make the folder {show(folder)} ({e.strerror or e})") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PtxError("--save", f"{show(folder)} is not a writable folder")


def run_command(args) -> int:
    if args.save:
        _save_folder(args.save)
    for opt in ("grid", "block", "cluster"):
        if getattr(args, opt) is not None:
            setattr(args, opt, _dims(getattr(args, opt), f"--{opt}"))
    if not 0 <= args.seed < 1 << 64:
        raise PtxError("--seed", f"{args.seed}: a seed is an integer in [0, 2^64)")
    if not args.max_instructions >= 1:
        raise PtxError("--max-instructions", f"{args.max_instructions}: a number of warp instructions >= 1")
    if not 0 < args.timeout < 1e9:
        raise PtxError("--timeout", f"{args.timeout:g}: a number of seconds > 0 (and below 1e9)")
    if args.shared is not None and args.shared < 0:
        raise PtxError("--shared", f"{args.shared}: dynamic shared memory is a byte count >= 0")
    kind, source = read_source(args.ptx)
    if kind == "json":
        if args.kernel is not None:
            raise PtxError("--kernel", "the entry comes from the metadata; leave it out")
        plan = plan_json(args.ptx, source, args, lambda t, prev, i: parse_arg(t, prev, i, seed=args.seed))
    else:
        plan = _plan_ptx(args.ptx, source, args)
    if args.check and plan.gemm is None:
        raise PtxError("--check", plan.gemm_why)
    try:
        stats = plan.run(zero_init_shared=args.zero_init_shared, check_layouts=not args.no_check_layouts,
                         check_races=not args.no_check_races, progress=not args.quiet,
                         max_instructions=args.max_instructions, timeout=args.timeout,
                         **({"printf": "collect"} if args.json else {}),
                         **({"scheduler": args.scheduler} if args.scheduler else {}))
    except TcemuError as e:  # the kernel's parameters as the metadata names them
        if plan.names:
            e.args = (plan.rename(str(e)),)
        raise
    name = short_name(plan.entry)
    doc = {"kernel": plan.entry, "from": plan.what, "ctas": stats["ctas"], "warp_instructions":
           stats["warp_instructions"], "seconds": round(stats["seconds"], 3)}
    lines = [f"{name}: {stats['ctas']} CTAs, {stats['warp_instructions']} warp instructions, {stats['seconds']:.2f} s"]
    ok = True
    if args.check:
        ok, check_lines, doc["check"] = refcheck(plan.gemm, plan.arrays[plan.gemm.c_name], args.check,
                                                 plan.module.arch)
        lines += check_lines
    if args.save:
        saved = []
        for i, (key, v) in enumerate(plan.arrays.items()):
            # a name from a .json becomes a file name only when it is a plain one (no folders, no dots first)
            stem = key if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}", key) else f"array{i}"
            try:
                np.save(os.path.join(args.save, f"{stem}.npy"), v, allow_pickle=False)
            except OSError as e:
                raise PtxError("--save", f"cannot write {stem}.npy in {show(args.save, 400)} ({e.strerror or e})") \
                    from None
            saved.append(f"{stem}.npy")
        folder = os.path.join(os.path.normpath(args.save), "")
        doc["saved"] = [os.path.join(folder, s) for s in saved]
        lines.append(f"saved {', '.join(saved)} to {folder}" if saved else "no array arguments to save")
    if args.json:
        doc["printf"] = stats.get("printf", [])
        doc["ok"] = ok
        print(json.dumps(doc))
    else:
        print("\n".join(lines))
    return 0 if ok else 1


def add_parser(sub):
    p = sub.add_parser("run", help="run a PTX kernel on the CPU (sm_90a, sm_100a, sm_103a), from a PTX file or "
                                   "a fixture's .json", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("ptx", help="a PTX file (any name), a fixture's .json (Triton metadata, CUTLASS launches) or a "
                               "launch record")
    p.add_argument("--kernel", help="entry: its name, a part of it, or its number in the module (default: the "
                                    "module's only kernel)")
    p.add_argument("--grid", help="CTAs, e.g. 8 or 4x2 (default 1, or the metadata's grid)")
    p.add_argument("--block", help="threads per CTA, e.g. 256 or 32x4 (default: the kernel's .reqntid, else 128)")
    p.add_argument("--cluster", help="CTAs per cluster, e.g. 2x1 (default 1)")
    p.add_argument("--shared", type=int, help="dynamic shared memory bytes (default 0, or the metadata's)")
    p.add_argument("--arg", action="append", help="one kernel argument, in order (see above); with a .json also "
                                                  "NAME=SPEC")
    p.add_argument("--ptx", dest="ptx_path", help="with a .json: the PTX file (default: the .json's sibling)")
    p.add_argument("--launch", type=int, help="with a CUTLASS fixture's .json: which of its launch records "
                                              "(default 0)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated inputs (random: specs without one, "
                                                       "metadata and launch-record inputs; default 0)")
    p.add_argument("--check", choices=["numpy", "matmul"], help="compare a GEMM's output with numpy's float64 "
                                                               "product (within a bound) or with tcemu.matmul "
                                                               "(bit for bit); exit 1 on a mismatch")
    p.add_argument("--save", help="folder for the array arguments after the run (PTX: arg<i>.npy; .json: "
                                  "<name>.npy)")
    p.add_argument("--zero-init-shared", action="store_true", help="shared memory starts as zeros")
    p.add_argument("--no-check-layouts", action="store_true", help="skip the operand layout provenance check")
    p.add_argument("--no-check-races", action="store_true", help="skip racecheck of shared memory (races between "
                                                                 "threads no barrier or mbarrier orders)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--max-instructions", type=int, default=MAX_INSTRUCTIONS,
                   help=f"warp instructions per cluster before the run is stopped as a livelock (BudgetExceeded; "
                        f"default {MAX_INSTRUCTIONS:.0e})")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help=f"wall-clock seconds before the run is stopped (BudgetExceeded; default {DEFAULT_TIMEOUT:g}). "
                        "A warp proven to spin on memory nobody changes stops the run at once (Deadlock)")
    p.add_argument("--scheduler", help="a dask scheduler address (tcp://host:8786): the grid's clusters run as tasks "
                                       "on its workers, bit-identical to a local run (pip install 'tcemu[dask]'; "
                                       "docs/guide.md, Grids over dask)")
    p.add_argument("--json", action="store_true", help="print one JSON object: the launch, its figures, the "
                                                       "check and the saved files")
    p.set_defaults(run=run_command)
