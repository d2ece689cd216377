"""Triton's launcher for tcemu (the driver's `launcher_cls`): runs a compiled kernel's PTX on tcemu.ptx.

Triton builds one launcher per compiled kernel, `Launcher(src, metadata)`, and calls it for every launch with
the grid and every argument of the @triton.jit function (constexprs included), as its CUDA launcher is called
(backends/nvidia/driver.py). The launcher reads the kernel's PTX from Triton's cache, flattens the arguments
as Triton's C launcher does (tuples, constexprs left out, host tensor descriptors expanded), maps the host
memory they point to (triton_args.HostMemory) and launches on tcemu: grid (x * num_ctas, y, z), clusters of
num_ctas along x, 32 * num_warps threads, the metadata's shared bytes.

Results land in the user's tensors as the kernel writes them. A fault (tcemu.ptx.KernelFault) is raised at
the launch with the Triton source line of the faulting instruction; the tensors hold what the kernel wrote
before it.
"""
import glob
import linecache
import os
import re
import time

from .. import ptx as tptx
from ..core.errors import TcemuError
from .triton_args import HostMemory, TritonError, pack_scalar, pointed_to, tensor_map

__all__ = ["Launcher", "LAUNCH_OPTIONS", "last_launch", "kernel_ptx"]

LAUNCH_OPTIONS = {}   # extra Module.launch options for the launches to come (tcemu.triton.run sets them)
_LAST = [None]        # statistics of the latest launch
_MODULES = {}         # PTX text -> loaded tcemu.ptx Module


def last_launch():
    """Statistics of the latest launch through tcemu's Triton driver (None before the first): kernel, arch,
    grid, block, cluster, CTAs run, warp instructions, seconds (wall time of the launch on the CPU), seconds in
    the tensor-core models, printf output, and where the kernel's source is."""
    return None if _LAST[0] is None else dict(_LAST[0])


def kernel_ptx(src, metadata) -> str:
    """The PTX Triton compiled for this kernel, from Triton's cache (the cubin holds only SASS)."""
    from triton.runtime.cache import get_cache_manager  # optional dependency (triton)
    cache = get_cache_manager(metadata.hash)
    name = getattr(src, "name", None) or metadata.name
    path = cache.get_file(f"{str(name)[:150]}.ptx")
    if path is None and getattr(cache, "cache_dir", None):
        found = sorted(glob.glob(os.path.join(cache.cache_dir, "*.ptx")))
        path = found[0] if len(found) == 1 else None
    if path is None:
        raise TritonError("kernel", f"the PTX of {metadata.name} is not in Triton's cache (is TRITON_STORE_BINARY_ONLY "
                                    "set?); tcemu runs the PTX, so it must be kept")
    with open(path) as f:
        return f.read()


def _module(ptx):
    mod = _MODULES.get(ptx)
    if mod is None:
        if len(_MODULES) > 64:
            _MODULES.clear()
        mod = _MODULES[ptx] = tptx.load(ptx)
    return mod


class Launcher:
    """One compiled kernel, launched on tcemu (see the module docstring)."""

    def __init__(self, src, metadata):
        from triton.backends.compiler import GPUTarget  # optional dependency (triton)
        self.name = metadata.name
        fn = getattr(src, "fn", None)
        self.arg_names = list(getattr(fn, "arg_names", None) or [str(k) for k in src.signature])
        self.signature = list(src.signature.values())
        self.tensordesc_meta = list(getattr(metadata, "tensordesc_meta", None) or [])
        self.num_warps = int(metadata.num_warps)
        self.num_ctas = int(getattr(metadata, "num_ctas", 1) or 1)
        self.shared = int(metadata.shared)
        self.scratch = [(int(metadata.global_scratch_size or 0), int(metadata.global_scratch_align or 1)),
                        (int(metadata.profile_scratch_size or 0), int(metadata.profile_scratch_align or 1))]
        target = metadata.target
        self.arch = f"sm{target.arch}" if isinstance(target, GPUTarget) else str(target)
        self.source = getattr(getattr(fn, "fn", None), "__code__", None)
        self.ptx = kernel_ptx(src, metadata)
        self.module = _module(self.ptx)
        params = self.module.kernels.get(self.name)
        if params is None:
            raise TritonError("kernel", f"{self.name} is not an entry of its PTX")
        prog = self.module.program(self.name)
        self.params = [(p, prog.symbols[p.name].address) for p in params]
        self.param_size = prog.param_size

    # -- arguments

    def _flatten(self, types, values, names, out):
        descs = [0]

        def visit(ty, value, name):
            if isinstance(ty, tuple):
                if not isinstance(value, (tuple, list)) or len(value) != len(ty):
                    raise TritonError(name, f"expected a tuple of {len(ty)}, got {type(value).__name__}")
                for i, (t, v) in enumerate(zip(ty, value)):
                    visit(t, v, f"{name}[{i}]")
            elif ty == "constexpr":
                return
            elif isinstance(ty, str) and ty.startswith("tensordesc"):
                meta = self.tensordesc_meta[descs[0]] if self.tensordesc_meta else None
                descs[0] += 1
                for a in ("base", "shape", "strides"):
                    if not hasattr(value, a):
                        raise TritonError(name, f"a tensordesc argument takes a TensorDescriptor, got "
                                                f"{type(value).__name__}")
                shape, strides = list(value.shape), list(value.strides)
                if meta is not None:
                    out.append(("desc", value, meta, name))
                else:   # no TMA: base pointer, shape, strides, padding, tf32 rounding (decompose_descriptor)
                    out.append(("ptr", value.base, name))
                    out.extend(("i64", v, name) for v in shape + strides)
                    out.extend([("i1", int(getattr(value, "padding", "zero") == "nan"), name),
                            ("i1", int(bool(getattr(value, "round_f32_to_tf32", False))), name)])
                out.extend([("i32", v, name) for v in shape] + [("i64", v, name) for v in strides])
            elif isinstance(ty, str) and ty.startswith("*"):
                out.append(("ptr", value, name))
            else:
                out.append((ty, value, name))

        for ty, value, name in zip(types, values, names):
            visit(ty, value, name)
        return out

    def _param_bytes(self, flat, grid_size):
        mem = HostMemory()
        got = [mem.add(v, name) if kind == "ptr" else mem.add(v.base, name) if kind == "desc" else None
               for kind, v, *_, name in flat]
        for kind, v, *_, name in flat:   # tensors reached through a table of pointers (grouped GEMMs)
            for t in pointed_to(v) if kind == "ptr" else ():
                mem.add(t, f"a tensor at {t.data_ptr():#x} (through {name})")
        scratch = [mem.scratch(size * grid_size * self.num_ctas, align, what)
                   for (size, align), what in zip(self.scratch, ("global scratch", "profile scratch"))]
        mem.finish()
        if len(flat) + 2 != len(self.params):
            raise TritonError("kernel", f"{self.name} declares {len(self.params)} parameters; its arguments expand "
                                        f"to {len(flat)} plus 2 scratch pointers")
        blob = bytearray(max(self.param_size, 1))
        items = list(zip(flat, got)) + [(("ptr", None, "scratch"), g) for g in scratch]
        for ((param, offset), (item, g)) in zip(self.params, items):
            kind, name = item[0], item[-1]
            if kind == "ptr":
                raw = mem.address(g).to_bytes(8, "little")
            elif kind == "desc":
                raw = tensor_map(mem.address(g), item[1], item[2], name)
            else:
                raw = pack_scalar(kind, item[1], param.size, name)
            if len(raw) != param.size:
                raise TritonError(name, f"the kernel's .param {param.name} is {param.size} bytes; this argument is "
                                        f"{len(raw)}")
            blob[offset:offset + len(raw)] = raw
        return bytes(blob), mem

    # -- the launch

    def __call__(self, gridX, gridY, gridZ, stream, function, packed_metadata, launch_metadata, enter_hook,
                 exit_hook, *args):
        if enter_hook is not None:
            enter_hook(launch_metadata)
        flat = self._flatten(self.signature, args, self.arg_names, [])
        if gridX * gridY * gridZ == 0:   # an empty grid launches nothing (CUDA refuses it; Triton skips it)
            return
        if self.scratch[0][0]:   # Triton refuses a launch that needs global scratch without an allocator
            from triton.runtime import _allocation  # optional dependency (triton)
            if isinstance(_allocation._allocator.get(), _allocation.NullAllocator):
                _allocation._allocator.get()(self.scratch[0][0], self.scratch[0][1], stream)
        blob, mem = self._param_bytes(flat, gridX * gridY * gridZ)
        grid = (gridX * self.num_ctas, gridY, gridZ)
        opts = dict(LAUNCH_OPTIONS)
        opts.setdefault("printf", "stdout")
        # the operand layout check reads tiles in the arrays' shapes: off where an allocation has none (a view)
        opts.setdefault("check_layouts", mem.shaped)
        t0 = time.perf_counter()
        try:
            stats = self.module.launch(self.name, grid=grid, block=(32 * self.num_warps, 1, 1),
                                       cluster=(self.num_ctas, 1, 1), shared_bytes=self.shared, param_bytes=blob,
                                       buffers=mem.buffers(), **opts)
        except TcemuError as e:
            _name_source_line(e, self.ptx, self.source)
            raise
        stats = dict(stats, kernel=self.name, arch=self.arch, grid=grid, block=(32 * self.num_warps, 1, 1),
                     cluster=(self.num_ctas, 1, 1), shared_bytes=self.shared, num_warps=self.num_warps,
                     wall_seconds=time.perf_counter() - t0,
                     source=(f"{self.source.co_filename}:{self.source.co_firstlineno}" if self.source else None))
        _LAST[0] = stats
        if exit_hook is not None:
            exit_hook(launch_metadata)


_LOC = re.compile(r"line (\d+) \(([^()\s]+\.py):(\d+)\)")
_PTX_LOC = re.compile(r"^\s*\.loc\s+\d+\s+(\d+)\s", re.M)


def _name_source_line(e, ptx, code=None):
    """Add the Triton source line an error's instruction came from to the message. Its .loc says it, except
    inside Triton's inline asm (loads, stores), where LLVM numbers the asm's own lines on from the statement's:
    there the block's first .loc is the statement's line. `code`: the launched function's code object; Triton's
    cache keys on the source text, not its path, so a kernel compiled from a file since moved names the old
    path: the launched function's file is read instead."""
    m = _LOC.search(f"{e.field} {e.rule}")
    if m is None:
        return
    line, path = int(m.group(3)), m.group(2)
    if code is not None and path != code.co_filename and os.path.basename(path) == os.path.basename(
            code.co_filename):
        path = code.co_filename
    lines = ptx.splitlines()
    pline = int(m.group(1))
    for i in range(min(pline, len(lines)) - 1, -1, -1):
        text = lines[i]
        if "// end inline asm" in text:
            break
        if "// begin inline asm" in text:
            first = _PTX_LOC.search("\n".join(lines[i + 1:pline]))
            line = int(first.group(1)) if first else line
            break
    text = linecache.getline(path, line).strip()
    if text:
        e.rule = f"{e.rule}\n  Triton source {os.path.basename(path)}:{line}: {text}"
        e.args = (f"{e.field}: {e.rule}",)
