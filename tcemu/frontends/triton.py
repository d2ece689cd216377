"""Compile @triton.jit kernels for sm_90a / sm_100a on a machine without a GPU, as a real launch would.

Triton is an optional dependency: it is imported inside the functions, so `import tcemu.triton` works
without it. What a real launch adds, and `compile_kernel` mimics (Triton 3.x `runtime/jit.py`,
`backends/compiler.py`: the JIT's specialisation of each argument value):

- a pointer argument whose address is a multiple of 16 gets `tt.divisibility = 16` (every allocation
  torch or the CUDA driver hands out is), which is what lets Triton emit `cp.async` and vector loads;
- an integer argument divisible by 16 gets `tt.divisibility = 16`;
- an integer argument equal to 1 becomes a constexpr (unit strides disappear from the parameter list).

`specialize(fn, values)` applies those three rules to launch values; `compile_kernel` takes the result.
`kernel_params(ptx, ...)` maps the PTX entry's `.param` list to roles: each declared argument in order,
a host tensor descriptor expanded to its CUtensorMap (`.param .align 64 .b8 [128]`) then its shape (i32)
and strides (i64), then the two scratch pointers Triton appends (global, profile; null when their sizes
in the metadata are 0, otherwise `grid size x size` bytes at the given alignment).
"""
import re

import numpy as np

from ..core.errors import TcemuError
from ..core.validate import as_int, as_int_list, show
from .. import ptx as tptx
from ..ptx.tensormap import encode_tiled
from .triton_args import DTYPES, TensorDescriptor, TritonError
from .triton_driver import activate, deactivate, last_launch, launch_options, using

__all__ = ["TritonError", "ARCHS", "specialize", "compile_kernel", "kernel_params", "entry_params", "launch_grid",
           "opcode_census", "TensorDescriptor", "run", "run_compiled", "activate", "deactivate", "last_launch"]

ARCHS = {"sm90": 90, "sm100": 100}   # GPUTarget("cuda", cc, 32): Triton emits .target sm_90a / sm_100a


def _triton():
    try:
        import triton  # noqa: F401
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
    except ImportError as e:
        raise TritonError("triton", f"Triton is not installed ({e}); pip install 'tcemu[triton]'") from None
    return triton, ASTSource, GPUTarget


def _arg_names(fn):
    names = getattr(fn, "arg_names", None)
    if names is None:
        raise TritonError("fn", "expected a @triton.jit function (it has no arg_names)")
    return list(names)


def specialize(fn, values):
    """(signature, constexprs, divisibility) the JIT would derive from launch `values`.

    `values` maps every argument name of `fn` to: a Triton pointer type string such as "*bf16" (taken to be
    16-byte aligned, as device allocations are), a "tensordesc<...>" type string (host TensorDescriptor),
    a Python int (1 -> constexpr, multiple of 16 -> divisible; i32 if it fits, else i64) or, for constexpr
    parameters, their value. Floats and bools are not specialised (fp32 / u1)."""
    names = _arg_names(fn)
    missing = [n for n in names if n not in values]
    extra = [n for n in values if n not in names]
    if missing or extra:
        raise TritonError("values", f"must name exactly the arguments of {fn.__name__}: missing {missing}, "
                                    f"unknown {extra}")
    const_params = {p.name for p in fn.params if p.is_constexpr}
    signature, constexprs, divisible = {}, {}, []
    for name in names:
        v = values[name]
        if name in const_params:
            signature[name], constexprs[name] = "constexpr", v
        elif isinstance(v, str) and (v.startswith("*") or v.startswith("tensordesc")):
            signature[name] = v
            if v.startswith("*"):
                divisible.append(name)
        elif isinstance(v, bool):
            signature[name] = "u1"
        elif isinstance(v, int):
            if not -2**63 <= v < 2**64:
                raise TritonError(f"values[{show(name)}]", f"{show(v)} does not fit a 64-bit integer argument")
            if v == 1:
                signature[name], constexprs[name] = "constexpr", 1
            else:
                signature[name] = "i32" if -2**31 <= v < 2**31 else "i64"
                if v % 16 == 0:
                    divisible.append(name)
        elif isinstance(v, float):
            signature[name] = "fp32"
        else:
            raise TritonError(f"values[{show(name)}]", f"expected a pointer type string, a tensordesc type, an int "
                                                        f"or a float, got {type(v).__name__}")
    return signature, constexprs, divisible


_PARAM = re.compile(r"\.param\s+(?P<decl>[^,)]*?)\s*(?P<name>[A-Za-z_$%][\w$]*)\s*(?:\[(?P<count>\d+)\])?\s*(?=[,)])")


def entry_params(ptx):
    """(entry name, [(ptx name, declaration, bytes, align)]) of the single .entry in `ptx`, in order."""
    m = re.search(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)", ptx)
    if m is None:
        raise TritonError("ptx", "no `.entry NAME( ... )` found")
    if re.search(r"\.entry\s+", ptx[m.end():]):
        raise TritonError("ptx", "more than one .entry; expected one kernel per module")
    out = []
    for p in _PARAM.finditer(m.group(2) + ")"):
        decl = " ".join(p.group("decl").split())
        width = re.search(r"\.[bsuf](8|16|32|64)\b", decl)
        if width is None:
            raise TritonError(f"param {p.group('name')}", f"cannot read a width from {decl!r}")
        elem = int(width.group(1)) // 8
        count = int(p.group("count") or 1)
        align = re.search(r"\.align\s+(\d+)", decl)
        align = int(align.group(1)) if align and count > 1 else elem
        out.append((p.group("name"), decl + (f" [{count}]" if p.group("count") else ""), elem * count, align))
    return m.group(1), out


def _entry_body(ptx):
    m = re.search(r"\.entry\s+[\w$]+\s*\([^)]*\)[^{]*\{", ptx)
    if m is None:
        raise TritonError("ptx", "no `.entry NAME( ... ) {` found")
    depth, i = 1, m.end()
    while depth and i < len(ptx):
        depth += {"{": 1, "}": -1}.get(ptx[i], 0)
        i += 1
    return ptx[m.end():i - 1]


def opcode_census(ptx):
    """{opcode with its modifiers: count} of the instructions in the entry's body (directives, labels and
    debug sections left out; a guard `@%p` does not count)."""
    body = re.sub(r"//[^\n]*", "", _entry_body(ptx))
    body = re.sub(r"^\s*\.(?:loc|file)\b[^\n]*$", "", body, flags=re.M)   # debug directives carry no ';'
    counts = {}
    for stmt in body.split(";"):
        s = stmt.strip()
        while True:   # labels and braces in front of a statement
            m = re.match(r"(?:[$\w]+:|[{}])\s*", s)
            if not m:
                break
            s = s[m.end():]
        if not s or s.startswith("."):
            continue
        s = re.sub(r"^@!?%?\w+\s+", "", s)
        op = re.match(r"[A-Za-z_][\w.:]*", s)
        if op:
            counts[op.group(0)] = counts.get(op.group(0), 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _desc_rank(ty):
    m = re.match(r"tensordesc(?:_im2col)?<[^\[>]*\[([^\]]*)\]", ty)
    if m is None:
        raise TritonError("signature", f"malformed tensor descriptor type {ty!r}")
    rank = re.search(r",input_rank=(\d+)", ty)
    return int(rank.group(1)) if rank else m.group(1).count(",") + 1


def kernel_params(ptx, signature):
    """The PTX entry's .param list with the role of each parameter, checked against `signature`."""
    entry, params = entry_params(ptx)
    roles = []
    for name, ty in signature.items():
        if ty == "constexpr":
            continue
        if ty.startswith("tensordesc"):
            rank = _desc_rank(ty)
            roles.append({"role": "tensormap", "arg": name, "type": ty})
            roles += [{"role": "tensormap_shape", "arg": name, "dim": d, "type": "i32"} for d in range(rank)]
            roles += [{"role": "tensormap_stride", "arg": name, "dim": d, "type": "i64"} for d in range(rank)]
        else:
            roles.append({"role": "pointer" if ty.startswith("*") else "scalar", "arg": name, "type": ty})
    roles += [{"role": "global_scratch", "arg": None, "type": "*i8"},
              {"role": "profile_scratch", "arg": None, "type": "*i8"}]
    if len(roles) != len(params):
        raise TritonError("ptx", f"{entry} declares {len(params)} .param, the signature expands to {len(roles)} "
                                 f"({[r['role'] for r in roles]})")
    size = {"i1": 1, "u1": 1, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8,
            "fp32": 4, "fp64": 8}
    out = []
    for i, ((pname, decl, nbytes, align), role) in enumerate(zip(params, roles)):
        want = 128 if role["role"] == "tensormap" else 8 if role["type"].startswith("*") else size.get(role["type"])
        if want is not None and want != nbytes:
            raise TritonError(f"param {pname}", f"{decl!r} is {nbytes} bytes; {role['role']} {role['arg']} of type "
                                                f"{role['type']} needs {want}")
        out.append({"index": i, "ptx_name": pname, "decl": decl, "bytes": nbytes, "align": align, **role})
    return entry, out


def launch_grid(rule, args, constexprs):
    """Evaluate a grid rule: 3 entries, each a list of factors; a factor is an int, an argument or
    constexpr name, or [n, block] meaning ceil(n / block)."""
    env = {**constexprs, **args}

    def val(x):
        if isinstance(x, int) and not isinstance(x, bool):
            return x
        if isinstance(x, str):
            if x not in env:
                raise TritonError("grid", f"rule names {show(x)}, which is neither an argument nor a constexpr")
            return as_int(env[x], f"grid ({x})", error=TritonError)
        if isinstance(x, (list, tuple)) and len(x) == 2:
            n, b = val(x[0]), val(x[1])
            if b <= 0:
                raise TritonError("grid", f"[n, block] with block {b}: the block must be positive")
            return -(-n // b)
        raise TritonError("grid", f"factor {show(x)} is not an int, a name or [n, block]")

    if not isinstance(rule, (list, tuple)) or len(rule) != 3 or not all(isinstance(d, (list, tuple)) for d in rule):
        raise TritonError("grid", f"a grid rule has 3 dimensions, each a list of factors; got {show(rule)} (the "
                                  "metadata has no rule: pass grid=)")
    grid = []
    for dim in rule:
        g = 1
        for f in dim:
            g *= val(f)
        grid.append(g)
    return tuple(grid)


def _compile_settings(arch, num_warps, num_stages, options):
    """(num_warps, num_stages), checked with arch and options as a Triton launch takes them."""
    if not isinstance(arch, str) or arch not in ARCHS:
        raise TritonError("arch", f"expected one of {sorted(ARCHS)}, got {show(arch)}")
    num_warps = as_int(num_warps, "num_warps", 1, 32, TritonError)
    if num_warps & (num_warps - 1):
        raise TritonError("num_warps", f"{num_warps}: a power of two (1, 2, 4, 8, 16 or 32)")
    num_stages = as_int(num_stages, "num_stages", 1, 8, TritonError)
    if options is not None and not isinstance(options, dict):
        raise TritonError("options", f"must be a dict of Triton compile options, got {show(options)}")
    return num_warps, num_stages


def compile_kernel(fn, *, signature, constexprs, num_warps, num_stages, arch="sm90", divisibility="pointers",
                   grid=None, options=None):
    """Compile `fn` for sm_90a or sm_100a; returns (ptx text, cubin bytes, metadata dict).

    signature: every argument name -> Triton type ("*bf16", "i32", "tensordesc<bf16[128, 64]>",
    "constexpr"); constexprs: name -> value for every "constexpr" entry; divisibility: "pointers" (every
    pointer argument, as a real launch on 16-byte-aligned buffers) or an iterable of argument names that get
    tt.divisibility 16 (use `specialize` to derive all three from launch values); grid: optional rule for
    `launch_grid`, stored in the metadata; options: extra Triton compile options."""
    num_warps, num_stages = _compile_settings(arch, num_warps, num_stages, options)
    names = _arg_names(fn)
    if list(signature) != names:
        raise TritonError("signature", f"must list the arguments of {fn.__name__} in order: {names}")
    const_names = [n for n, t in signature.items() if t == "constexpr"]
    if sorted(const_names) != sorted(constexprs):
        raise TritonError("constexprs", f"must give exactly the constexpr arguments {const_names}, "
                                        f"got {sorted(constexprs)}")
    if divisibility == "pointers":
        divisibility = [n for n, t in signature.items() if t.startswith("*")]
    divisibility = list(divisibility)
    for n in divisibility:
        t = signature.get(n)
        if t is None or not (t.startswith("*") or t[0] in "iu"):
            raise TritonError("divisibility", f"{n!r} is not a pointer or integer argument")
    triton, ASTSource, GPUTarget = _triton()
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in divisibility}
    src = ASTSource(fn, signature=dict(signature), constexprs=dict(constexprs), attrs=attrs)
    opts = {"num_warps": num_warps, "num_stages": num_stages, **(options or {})}
    try:
        compiled = triton.compile(src, target=GPUTarget("cuda", ARCHS[arch], 32), options=opts)
    except Exception as e:  # noqa: BLE001 - Triton's own errors (syntax, types, options) are about fn or options
        raise TritonError("fn", f"Triton could not compile {getattr(fn, '__name__', 'it')}: {type(e).__name__}: "
                                f"{show(str(e), 400)}") from None
    ptx, cubin = compiled.asm["ptx"], compiled.asm["cubin"]
    md = compiled.metadata
    entry, params = kernel_params(ptx, signature)
    if entry != md.name:
        raise TritonError("ptx", f"entry {entry!r} differs from the compiled kernel's name {md.name!r}")
    target = re.search(r"^\s*\.target\s+(\S+)", ptx, re.M)
    version = re.search(r"^\s*\.version\s+(\S+)", ptx, re.M)
    tdm = getattr(md, "tensordesc_meta", None)
    try:   # which ptxas made the cubin (Triton 3.x backends/nvidia/compiler.py)
        from triton.backends.nvidia.compiler import get_ptxas_version
        ptxas = [ln for ln in get_ptxas_version(ARCHS[arch]).splitlines() if "release" in ln][0].strip()
    except Exception as e:  # provenance is best effort
        ptxas = f"unknown ({type(e).__name__})"
    meta = {
        "entry": entry,
        "params": params,
        "signature": dict(signature),
        "constexprs": {k: (v if isinstance(v, (int, float, bool, str)) or v is None else str(v))
                       for k, v in constexprs.items()},
        "divisibility_16": divisibility,
        "num_warps": md.num_warps,
        "num_ctas": md.num_ctas,
        "num_stages": num_stages,
        "block": [32 * md.num_warps, 1, 1],
        "shared_bytes": md.shared,
        "global_scratch_size": md.global_scratch_size,
        "global_scratch_align": md.global_scratch_align,
        "profile_scratch_size": md.profile_scratch_size,
        "profile_scratch_align": md.profile_scratch_align,
        "tensordesc_meta": [dict(d) for d in tdm] if tdm else [],
        "grid": grid,
        "triton": triton.__version__,
        "ptxas": ptxas,
        "target": {"backend": "cuda", "arch": ARCHS[arch], "warp_size": 32,
                   "ptx_target": target.group(1) if target else None,
                   "ptx_version": version.group(1) if version else None},
        "options": {k: v for k, v in opts.items()},
        "opcode_census": opcode_census(ptx),
    }
    return ptx, cubin, meta


# ----------------------------------------------------------------------------------------------- on the CPU

_PTX_TO_DRIVER = {0: "UINT8", 1: "UINT16", 2: "UINT32", 3: "INT32", 4: "UINT64", 5: "INT64", 6: "FLOAT16",
                  7: "FLOAT32", 8: "FLOAT32_FTZ", 9: "FLOAT64", 10: "BFLOAT16", 11: "TFLOAT32", 12: "TFLOAT32_FTZ"}
_SWZ = {0: "none", 1: "32B", 2: "64B", 3: "128B"}


def bind_args(meta, values, grid):
    """Kernel arguments in `.param` order for tcemu.ptx's Module.launch, from the metadata's parameter roles
    (`kernel_params`) and the launch `values` (argument name -> numpy array, int, float or TensorDescriptor)."""
    tdm = meta.get("tensordesc_meta") or []
    if not isinstance(tdm, list) or not all(isinstance(m, dict) for m in tdm):
        raise TritonError("meta.tensordesc_meta", f"must be a list of records, got {show(tdm)}")
    descs = [p["arg"] for p in meta["params"] if p["role"] == "tensormap"]
    nprog = int(np.prod(grid))
    args = []
    for p in meta["params"]:
        role, arg = p["role"], p.get("arg")
        if role in ("pointer", "scalar"):
            if arg not in values:
                raise TritonError(arg, "missing launch value")
            v = values[arg]
            if p.get("type") == "fp32" and isinstance(v, (float, np.floating)):
                with np.errstate(over="ignore"):
                    v = np.float32(v)   # a real launch rounds a Python float to f32 (a C cast: nearest even)
            args.append(v)
        elif role == "tensormap":
            d = values.get(arg)
            if not isinstance(d, TensorDescriptor):
                raise TritonError(arg, f"a tensordesc argument takes a tcemu.triton.TensorDescriptor, got "
                                       f"{type(d).__name__}")
            m = tdm[descs.index(arg)] if descs.index(arg) < len(tdm) else {}
            box = list(m.get("block_size", d.block_shape))[::-1]
            args.append(encode_tiled(d.base, box, dtype=_PTX_TO_DRIVER.get(m.get("elem_type")),
                                     swizzle=_SWZ.get(m.get("swizzle", 0), "none")))
        elif role in ("tensormap_shape", "tensormap_stride"):
            d = values.get(arg)
            if not isinstance(d, TensorDescriptor):
                raise TritonError(str(arg), f"a tensordesc argument takes a tcemu.triton.TensorDescriptor, got "
                                            f"{type(d).__name__}")
            dims = d.shape if role == "tensormap_shape" else d.strides
            dim = p.get("dim")
            if not isinstance(dim, int) or not 0 <= dim < len(dims):
                raise TritonError("meta.params", f"{role} of {arg}: dim {show(dim)} is not one of its "
                                                 f"{len(dims)} dimensions")
            args.append(dims[dim])
        elif role in ("global_scratch", "profile_scratch"):
            key = "global" if role == "global_scratch" else "profile"
            size = as_int(meta.get(f"{key}_scratch_size", 0) or 0, f"meta.{key}_scratch_size", 0, 1 << 20,
                          TritonError)
            if size * nprog > 1 << 30:
                raise TritonError("grid", f"{nprog} programs x {size} bytes of {key} scratch exceed 1 GiB")
            args.append(np.zeros(size * nprog, np.uint8) if size else None)
        else:
            raise TritonError("meta.params", f"unknown parameter role {show(role)}")
    return args


def check_specialization(meta, values):
    """A compiled kernel assumes what its JIT specialisation saw: integers marked divisible by 16 must be, and
    arguments compiled as the constant 1 are gone. Running it on other values is a different kernel (Triton
    would compile one), so refuse instead of computing something no GPU would."""
    for name in meta.get("divisibility_16", []) or []:
        v = values.get(name) if isinstance(name, str) else None
        if isinstance(v, int) and not isinstance(v, bool) and v % 16:
            raise TritonError(name, f"{v} is not a multiple of 16, but the kernel was compiled assuming it is "
                                    "(tt.divisibility 16); compile it for this value")
    for name, v in (meta.get("constexprs") or {}).items():
        got = values.get(name, v)
        if name in values and (not isinstance(got, (int, float, str, np.number)) or got != v):
            raise TritonError(name, f"the kernel was compiled with {name} = {show(v)} as a constant; got "
                                    f"{show(values[name])}")


def run_compiled(ptx, meta, values, *, grid=None, **launch):
    """Run a compiled kernel (its PTX text or a loaded tcemu.ptx Module, and the metadata of compile_kernel or
    a fixture json) on the CPU; pointer arguments are numpy arrays, updated in place. Returns launch stats."""
    mod = ptx if isinstance(ptx, tptx.Module) else tptx.load(ptx)
    _check_meta(meta)
    if not isinstance(values, dict) or not all(isinstance(k, str) for k in values):
        raise TritonError("values", f"must map argument names to launch values, got {show(values)}")
    if grid is None:
        grid = launch_grid(meta.get("grid"), {k: v for k, v in values.items() if isinstance(v, int)},
                           meta.get("constexprs") or {})
    if isinstance(grid, int) and not isinstance(grid, bool):
        grid = (grid,)
    grid = as_int_list(grid, "grid", None, 1, (1 << 31) - 1, TritonError)
    if not 1 <= len(grid) <= 3:
        raise TritonError("grid", f"1 to 3 dimensions, got {len(grid)}")
    grid = tuple(grid) + (1,) * (3 - len(grid))
    check_specialization(meta, values)
    args = bind_args(meta, values, grid)
    return mod.launch(meta["entry"], grid=grid, block=tuple(meta["block"]), args=args,
                      shared_bytes=int(meta["shared_bytes"]), **launch)


def _check_meta(meta):
    """The metadata run_compiled reads (compile_kernel's, or a fixture json): entry, block, shared bytes and the
    parameter roles, of the documented types."""
    if not isinstance(meta, dict):
        raise TritonError("meta", f"must be compile_kernel's metadata (a dict), got {show(meta)}")
    if not isinstance(meta.get("entry"), str):
        raise TritonError("meta.entry", f"must be the kernel's name, got {show(meta.get('entry'))}")
    as_int_list(meta.get("block"), "meta.block", None, 1, 1024, TritonError)
    as_int(meta.get("shared_bytes"), "meta.shared_bytes", 0, 1 << 20, TritonError)
    params = meta.get("params")
    if not isinstance(params, list) or not all(isinstance(p, dict) and isinstance(p.get("role"), str)
                                               for p in params):
        raise TritonError("meta.params", f"must be a list of parameter records with roles, got {show(params)}")
    for name in ("constexprs",):
        if meta.get(name) is not None and not isinstance(meta[name], dict):
            raise TritonError(f"meta.{name}", f"must be a dict, got {show(meta[name])}")


def run(fn, grid, *, num_warps=4, num_stages=3, arch="sm90", options=None, launch=None, **values):
    """Launch `fn` (@triton.jit) on numpy arrays through tcemu's Triton driver, as `fn[grid](**values)` would
    launch it on an H100 (arch="sm90") or a B200 ("sm100"); returns the launch statistics (last_launch()).

        tcemu.triton.run(matmul_kernel, (8, 1), a_ptr=a, b_ptr=b, c_ptr=c, M=512, ..., BLOCK_M=128, ...)

    Every argument of `fn` is named. numpy arrays are pointers (C-contiguous, of Triton element types from their
    dtypes; bfloat16 / float8 from ml_dtypes; results land in them in place), TensorDescriptor values are host tensor
    descriptors, ints, floats and bools are scalars or constexprs, specialised as Triton's JIT specialises them.
    options: extra Triton compile options; launch: extra tcemu.ptx Module.launch options (printf, timeout, ...).
    Only this call uses tcemu's driver: Triton's active driver is unchanged afterwards."""
    _, _, _ = _triton()
    if not callable(getattr(fn, "run", None)) or getattr(fn, "arg_names", None) is None:
        raise TritonError("fn", f"expected a @triton.jit function, got {show(fn)}")
    num_warps, num_stages = _compile_settings(arch, num_warps, num_stages, options)
    launch = launch_options({} if launch is None else launch)
    if isinstance(grid, int) and not isinstance(grid, bool):
        grid = (grid,)
    grid = as_int_list(grid, "grid", None, 1, (1 << 31) - 1, TritonError)
    if not 1 <= len(grid) <= 3:
        raise TritonError("grid", f"1 to 3 dimensions, got {len(grid)}")
    names = _arg_names(fn)
    missing = [n for n in names if n not in values]
    extra = [n for n in values if n not in names]
    if missing or extra:
        raise TritonError("values", f"must name exactly the arguments of {fn.__name__}: missing {missing}, "
                                    f"unknown {extra}")
    const = {p.name for p in fn.params if p.is_constexpr}
    for name, v in values.items():
        if name in const:
            continue
        if isinstance(v, np.ndarray):
            if v.dtype.hasobject or v.dtype.name not in DTYPES:
                raise TritonError(name, f"a pointer argument takes an array of a Triton element type, got {show(v)}")
            if not v.flags.c_contiguous:   # its data pointer would be read as if it were contiguous
                raise TritonError(name, f"a non-contiguous array (strides {v.strides}) is passed as the address of "
                                        "its first element: the kernel would read the memory around it as if it were "
                                        "contiguous; pass np.ascontiguousarray of it (or its base array and strides)")
        elif isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            if not -2**63 <= int(v) < 2**64:
                raise TritonError(name, f"{show(v)} does not fit a 64-bit integer argument")
        elif not isinstance(v, (TensorDescriptor, float, bool, np.floating, np.bool_)) and v is not None:
            raise TritonError(name, f"expected a numpy array, a TensorDescriptor, an int, a float or a bool, got "
                                    f"{type(v).__name__}")
    with using(arch, **launch):
        try:
            fn[tuple(grid)](**values, num_warps=num_warps, num_stages=num_stages, **(options or {}))
        except TcemuError:
            raise
        except Exception as e:  # noqa: BLE001 - Triton's own errors (compile, specialisation, options)
            if _raised_in_tcemu(e):
                raise
            raise TritonError("fn", f"Triton could not launch {getattr(fn, '__name__', 'it')}: {type(e).__name__}: "
                                    f"{show(str(e), 400)}") from None
    return last_launch()


def _raised_in_tcemu(e):
    tb = e.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename.startswith(_PACKAGE)


_PACKAGE = __file__.rsplit("frontends", 1)[0]
