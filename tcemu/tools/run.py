"""`tcemu run`: launch a PTX kernel on the CPU from the command line.

    tcemu run matmul.ptx --kernel matmul_kernel --grid 8 --block 256 --shared 147456 \\
        --arg random:bf16:512x512:1 --arg random:bf16:512x512:2 --arg zeros:f16:512x512 \\
        --arg 512 --arg 512 --arg 512 --arg 512 --arg 512 --arg 512 --arg null --arg null --save out/

An --arg is one kernel parameter, in order: an int or a float (scalars), `null` (a null pointer), a `.npy`
file (loaded without pickles), `zeros:TYPE:SHAPE`, `random:TYPE:SHAPE[:SEED]` (tcemu.kernel_inputs' seeded
bit patterns; TYPE bf16, f16, f32 or e4m3) or `tensormap:ARG:BOX[:SWIZZLE]` (a tensor map over the array
given as argument number ARG, box dimension 0 first, e.g. `tensormap:0:64x128:128B`). SHAPE and BOX are
`x`-separated. --save writes every array argument after the run as DIR/arg<i>.npy.
"""
import os

import numpy as np

from ..core.validate import show
from ..core.errors import TcemuError
from ..ptx import load
from ..ptx.errors import PtxError, PtxLimit
from ..ptx.tensormap import encode_tiled
from ..traces.inputs import input_bits

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


def parse_arg(text: str, previous: list, index: int):
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
        seed = 0
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


def run_command(args) -> int:
    if args.save:  # the folder is made before the run, so that a bad one costs nothing
        try:
            os.makedirs(args.save, exist_ok=True)
        except OSError as e:
            raise PtxError("--save", f"cannot make the folder {show(args.save)} ({e.strerror or e})") from None
        if not os.access(args.save, os.W_OK | os.X_OK):
            raise PtxError("--save", f"{show(args.save)} is not a writable folder")
    mod = load(args.ptx)
    name = args.kernel
    if name is None:
        names = list(mod.kernels)
        if len(names) != 1:
            raise PtxError("--kernel", f"the module has {len(names)} kernels; name one of {', '.join(names)}")
        name = names[0]
    values = []
    for i, a in enumerate(args.arg or []):
        values.append(parse_arg(a, values, i))
    stats = mod.launch(name, grid=_dims(args.grid, "--grid"), block=_dims(args.block, "--block"), args=values,
                       shared_bytes=args.shared, cluster=_dims(args.cluster, "--cluster"),
                       zero_init_shared=args.zero_init_shared, check_layouts=not args.no_check_layouts,
                       progress=not args.quiet, max_instructions=args.max_instructions, timeout=args.timeout)
    print(f"{name}: {stats['ctas']} CTAs, {stats['warp_instructions']} warp instructions, {stats['seconds']:.2f} s")
    if args.save:
        for i, v in enumerate(values):
            if isinstance(v, np.ndarray):
                np.save(os.path.join(args.save, f"arg{i}.npy"), v, allow_pickle=False)
        print(f"saved the array arguments to {args.save}/")
    return 0


def add_parser(sub):
    p = sub.add_parser("run", help="run a PTX kernel on the CPU (sm_90a)", description=__doc__,
                       formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("ptx", help="a .ptx file")
    p.add_argument("--kernel", help="entry name (default: the module's only kernel)")
    p.add_argument("--grid", default="1", help="e.g. 8 or 4x2")
    p.add_argument("--block", default="128", help="e.g. 256 or 32x4")
    p.add_argument("--cluster", default="1")
    p.add_argument("--shared", type=int, default=0, help="dynamic shared memory bytes")
    p.add_argument("--arg", action="append", help="one kernel parameter, in order (see above)")
    p.add_argument("--save", help="folder for the array arguments after the run")
    p.add_argument("--zero-init-shared", action="store_true", help="shared memory starts as zeros")
    p.add_argument("--no-check-layouts", action="store_true", help="skip the operand layout provenance check")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--max-instructions", type=int, default=200_000_000,
                   help="warp instructions per cluster before the run is stopped as a livelock (default 2e8)")
    p.add_argument("--timeout", type=float, default=None, help="wall-clock seconds before the run is stopped")
    p.set_defaults(run=run_command)


_ = TcemuError
