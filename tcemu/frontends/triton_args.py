"""A Triton launch's arguments on tcemu: host buffers as device memory, and the parameter bytes.

Device memory is the user's own host memory. Each allocation a pointer argument lies in (a torch CPU tensor's
whole storage, a numpy array's owning array) is mapped once, in place, at a device address that keeps the host
address modulo 4096: the kernel reads and writes the user's bytes directly, a view's offset into its storage
is the same on both sides, and the alignment Triton's JIT saw on the host pointer (tt.divisibility 16) holds
on the device. Overlapping allocations (two views of one buffer) are one mapping. A kernel argument is its
data pointer, exactly as on a GPU: a non-contiguous view is read as the kernel's own indexing says. Each mapping
is also visible at its host address, so pointers the host wrote into memory (`x.data_ptr()` in a tensor, as
grouped GEMMs pass their matrices) are valid on the device; those aliases lie side by side as the host
allocations do, without guard space. A tensor reached only that way (not an argument) is found by its address:
the values of every 64-bit integer argument tensor that fall inside a live CPU tensor map that tensor too.

Parameters are packed as Triton's CUDA launcher packs them (backends/nvidia/driver.c): Python floats rounded
to f32 by a C cast (round to nearest even), fp16 by PyFloat_Pack2, bf16 by truncating that f32; ints as their
low bytes; a host TensorDescriptor as a tensor map, its shape and its strides.
"""
import ctypes
import struct
import sys

import numpy as np

from ..core.errors import TcemuError
from ..core.validate import as_int_list, show
from ..ptx import tensormap as tm
from ..ptx.memory import WINDOW_SIZE, WINDOWS

__all__ = ["TritonError", "TensorDescriptor", "DTYPES", "HostMemory", "triton_dtype", "pack_scalar", "tensor_map"]


class TritonError(TcemuError):
    """Bad input to the Triton front end (argument specialisation, compile options, PTX params, tensors)."""


# numpy (ml_dtypes) dtype name -> Triton element type
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64",
          "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5", "int8": "i8", "uint8": "u8", "int16": "i16",
          "uint16": "u16", "int32": "i32", "uint32": "u32", "int64": "i64", "uint64": "u64", "bool": "i1"}


def triton_dtype(dt) -> str:
    """The Triton element type of a numpy (or ml_dtypes) dtype."""
    name = getattr(dt, "name", str(dt))
    if name not in DTYPES:
        raise TritonError("dtype", f"no Triton element type for numpy {dt}")
    return DTYPES[name]


class TensorDescriptor:
    """A host tensor descriptor over a numpy array (Triton's `TensorDescriptor(base, shape, strides,
    block_shape)` with shape and strides taken from the array): passed where the kernel takes a
    `tensordesc<...>` argument, it becomes the CUtensorMap, shape and strides parameters. bf16 and fp8 arrays
    are ml_dtypes arrays."""

    def __init__(self, base, block_shape):
        if not isinstance(base, np.ndarray):
            raise TritonError("base", f"must be a numpy array, got {type(base).__name__}")
        if not 1 <= base.ndim <= 5 or base.dtype.hasobject or base.dtype.name not in DTYPES:
            raise TritonError("base", f"must be an array of a Triton element type ({', '.join(DTYPES)}) with 1 to "
                                      f"5 dimensions, got {show(base)}")
        if base.strides[-1] != base.dtype.itemsize:
            raise TritonError("base", "the last dimension must be contiguous")
        self.base = base
        # a TMA box: one entry per dimension, 1..256 elements each (cuTensorMapEncodeTiled)
        self.block_shape = as_int_list(block_shape, "block_shape", base.ndim, 1, 256, TritonError)
        self.shape = list(base.shape)
        self.strides = [s // base.dtype.itemsize for s in base.strides]


# ------------------------------------------------------------------------------------------------ memory

_ALIGN = 4096            # device address = host address modulo this
_GUARD = 1 << 20         # unmapped bytes between mappings: a kernel running off one faults
_BASE = 1 << 47          # above every user-space host address (x86-64, aarch64): no alias lands here


def _torch_tensor(value):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def host_allocation(value, name):
    """(data pointer, allocation start, allocation end, keep-alive, writable) of a pointer argument, or None
    for a null pointer."""
    if value is None:
        return None
    if _torch_tensor(value):
        if value.device.type != "cpu":
            raise TritonError(name, f"is a tensor on {value.device}; tcemu's driver runs kernels on CPU tensors "
                                    "(create it on triton.runtime.driver.active.get_active_torch_device(), or "
                                    "move it with .cpu())")
        if value.layout is not _torch_strided():
            raise TritonError(name, f"is a {value.layout} tensor; a kernel argument is a strided (dense) tensor")
        ptr = value.data_ptr()
        if ptr == 0:
            return None
        st = value.untyped_storage()
        return ptr, st.data_ptr(), st.data_ptr() + st.nbytes(), value, True
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TritonError(name, "an object array cannot be device memory")
        root = value
        while isinstance(root.base, np.ndarray):
            root = root.base
        lo, hi = np.lib.array_utils.byte_bounds(root)
        return value.__array_interface__["data"][0], lo, hi, root, bool(root.flags.writeable)
    base = getattr(value, "base", None)   # triton.reinterpret's TensorWrapper: the tensor it wraps
    if base is not None and hasattr(value, "data_ptr") and (_torch_tensor(base) or isinstance(base, np.ndarray)):
        got = host_allocation(base, name)
        return None if got is None else (int(value.data_ptr()),) + got[1:]
    array = getattr(value, "tcemu_array", None)   # a numpy array wrapped for Triton's specialisation
    if isinstance(array, np.ndarray):
        return host_allocation(array, name)
    raise TritonError(name, f"a pointer argument takes a CPU torch tensor, a numpy array or None, got "
                            f"{type(value).__name__}")


def _torch_strided():
    return sys.modules["torch"].strided


def pointed_to(value, limit=1 << 16):
    """The live CPU torch tensors whose storage holds an address stored in `value`, a 64-bit integer tensor or
    array (a table of data_ptr()s): a kernel can reach them through it. Empty for anything else."""
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    if _torch_tensor(value) and value.device.type == "cpu" and value.dtype in (torch.int64, torch.uint64):
        vals = value.reshape(-1)[:limit].numpy().view(np.uint64)
    elif isinstance(value, np.ndarray) and value.dtype in (np.int64, np.uint64):
        vals = value.reshape(-1)[:limit].view(np.uint64)
    else:
        return []
    vals = vals[(vals >= 1 << 16) & (vals < 1 << 47)]
    if vals.size == 0:
        return []
    import gc
    found, seen = [], set()
    for obj in gc.get_objects():
        if issubclass(type(obj), torch.Tensor):   # type(): no attribute lookups on arbitrary objects
            if obj.device.type != "cpu" or obj.layout is not torch.strided or obj.is_meta:
                continue
            st = obj.untyped_storage()
            lo = st.data_ptr()
            if lo in seen or not lo:
                continue
            if ((vals >= lo) & (vals < lo + st.nbytes())).any():
                seen.add(lo)
                found.append(obj)
    return found


def _whole(value, ptr, lo, hi):
    """(shape, itemsize) when `value` is C-contiguous and fills its allocation exactly, else None: the mapping
    then carries the array's shape (tcemu's operand layout check reads tiles in it)."""
    if _torch_tensor(value):
        ok = value.is_contiguous() and value.numel() * value.element_size() == hi - lo
        shape, itemsize = tuple(value.shape), value.element_size()
    elif isinstance(value, np.ndarray):
        ok = value.flags.c_contiguous and value.nbytes == hi - lo
        shape, itemsize = value.shape, value.dtype.itemsize
    else:
        return None
    return (shape, itemsize) if ok and ptr == lo and itemsize in (1, 2, 4, 8) and len(shape) else None


def _in_window(lo, hi):
    """Whether host bytes [lo, hi) meet one of tcemu's generic-address windows (shared, local, param, const)."""
    return any(lo < w + WINDOW_SIZE and w < hi for w in WINDOWS.values())


class HostMemory:
    """The host allocations one launch touches, each mapped once as device memory (see the module docstring).
    `add` every pointer argument first, then `finish`, then `address` of each."""

    def __init__(self):
        self._items = []      # (lo, hi, keep, writable, name, shape)
        self.regions = []     # (lo, hi, device base, view, keep, name)
        self.shaped = True    # every mapping carries its array's shape

    def add(self, value, name):
        got = host_allocation(value, name)
        if got is not None:
            ptr, lo, hi, keep, writable = got
            self._items.append((lo, hi, keep, writable, name, _whole(value, ptr, lo, hi)))
        return got

    def finish(self):
        merged = []
        for lo, hi, keep, writable, name, shape in sorted(self._items, key=lambda s: s[0]):
            m = merged[-1] if merged else None
            if m is not None and lo < m["hi"] and writable and m["writable"]:
                m["hi"] = max(m["hi"], hi)
                m["keep"].append(keep)
                m["names"] += [name] if name not in m["names"] else []
                m["shapes"].add(shape)
            else:
                merged.append({"lo": lo, "hi": hi, "keep": [keep], "writable": writable, "names": [name],
                               "shapes": {shape}})
        cursor = _BASE
        for m in merged:
            lo, n = m["lo"], m["hi"] - m["lo"]
            if n and m["writable"]:
                view = np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(lo))
            else:   # read-only memory: the kernel gets a copy (its writes are dropped)
                view = np.frombuffer(ctypes.string_at(lo, n), np.uint8).copy() if n else np.zeros(0, np.uint8)
            shape = next(iter(m["shapes"])) if len(m["shapes"]) == 1 else None
            if shape is not None:
                view = view.view(f"u{shape[1]}").reshape(shape[0])
            elif n:
                self.shaped = False
            base = -(-cursor // _ALIGN) * _ALIGN + lo % _ALIGN
            self.regions.append((lo, m["hi"], base, view, m["keep"], " / ".join(m["names"])))
            cursor = base + n + _GUARD
        return self

    def address(self, got) -> int:
        if got is None:
            return 0
        ptr = got[0]
        for lo, hi, base, *_ in self.regions:
            if lo <= ptr <= hi and (got[1] >= lo and got[2] <= hi):
                return base + (ptr - lo)
        raise TritonError("pointer", f"{ptr:#x} lies in no mapped allocation")   # not reached: add() maps it

    def scratch(self, nbytes, align, name):
        """A zeroed device allocation of the launch's own (Triton's global and profile scratch)."""
        if not nbytes:
            return None
        buf = np.zeros(nbytes + align, np.uint8)
        lo = buf.__array_interface__["data"][0]
        lo += (-lo) % align
        got = (lo, lo, lo + nbytes, buf, True)
        self._items.append(got[1:] + (name, ((nbytes,), 1)))
        return got

    def buffers(self):
        """(device address, bytes, name) of every mapping, then of its alias at the host address."""
        out = [(base, view, name) for _, _, base, view, _, name in self.regions if view.size]
        return out + [(lo, view, name) for lo, _, _, view, _, name in self.regions
                      if view.size and not _in_window(lo, lo + view.nbytes)]


# ------------------------------------------------------------------------------------------------ params

_INT_BITS = {"i1": 32, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "u1": 32, "u8": 8, "u16": 16, "u32": 32,
             "u64": 64}


def pack_scalar(ty, value, size, name) -> bytes:
    """A scalar argument's bytes as Triton's launcher writes them, cut to the .param's `size` bytes."""
    if ty in ("fp32", "f32", "fp16", "bf16", "fp64"):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TritonError(name, f"a {ty} argument takes a number, got {type(value).__name__}")
        d = float(value)
        if ty == "fp64":
            raw = struct.pack("<d", d)
        elif ty == "fp16":   # PyFloat_Pack2: nearest even from the double; a finite value too large is refused
            with np.errstate(over="ignore"):
                h = np.float16(d)
            if np.isinf(h) and np.isfinite(d):
                raise TritonError(name, f"{show(value)} is too large for fp16 (Triton's launcher refuses it)")
            raw = h.tobytes()
        else:
            with np.errstate(over="ignore"):
                f = np.float32(d)   # (float)double: nearest even
            raw = f.tobytes() if ty != "bf16" else (int(f.view(np.uint32)) >> 16).to_bytes(2, "little")
    elif ty in _INT_BITS:
        if not isinstance(value, (int, np.integer)):   # bool is an int
            raise TritonError(name, f"a {ty} argument takes an int, got {type(value).__name__}")
        v = int(value)
        bits = _INT_BITS[ty]
        lo, hi = (-(1 << (bits - 1)), 1 << bits) if ty[0] == "i" else (0, 1 << bits)
        if not lo <= v < hi:
            raise TritonError(name, f"{show(v)} does not fit a {ty} argument")
        raw = (v & ((1 << bits) - 1)).to_bytes(bits // 8, "little")
    else:
        raise TritonError(name, f"Triton argument type {ty!r} is not modelled")
    if size > len(raw):
        raise TritonError(name, f"the kernel's .param is {size} bytes; a {ty} argument is {len(raw)}")
    return raw[:size]


# host swizzle enum (CUtensorMapSwizzle) -> (PTX swizzle mode, sm100 atomicity)
_SWIZZLE = {0: (0, 0), 1: (1, 0), 2: (2, 0), 3: (3, 0), 4: (3, 1), 5: (3, 2), 6: (3, 3)}
_TF32 = 11


def tensor_map(address, desc, meta, name) -> bytes:
    """The 128 bytes of a host tensor descriptor's CUtensorMap (fillTMADescriptorTiled's arguments: the
    metadata's element type, swizzle and block, the descriptor's shape and strides)."""
    if meta.get("is_im2col"):
        raise TritonError(name, "im2col tensor descriptors are not modelled")
    shape = [int(s) for s in desc.shape]
    strides = [int(s) for s in desc.strides]
    if meta.get("fp4_padded"):
        shape[-1] *= 2
    elem_type = _TF32 if getattr(desc, "round_f32_to_tf32", False) else int(meta["elem_type"])
    swizzle, atomicity = _SWIZZLE.get(int(meta["swizzle"]), (None, None))
    if swizzle is None:
        raise TritonError(name, f"swizzle mode {meta['swizzle']} is not a CUtensorMapSwizzle value")
    es = int(meta["elem_size"])
    if strides and strides[-1] != 1:
        raise TritonError(name, f"strides {strides}: a tensor descriptor's last dimension must be contiguous "
                                "(stride 1)")
    m = tm.TensorMap(elemtype=elem_type, global_dim=shape[::-1], global_stride=[s * es for s in strides[:-1]][::-1],
                     box_dim=[int(b) for b in meta["block_size"]][::-1], element_stride=[1] * len(shape),
                     swizzle=swizzle, fill=1 if getattr(desc, "padding", "zero") == "nan" else 0, l2_promotion=2,
                     global_address=address, swizzle_atomicity=atomicity)
    try:
        tm.validate(m, f"tensor descriptor {name}")
    except TcemuError as e:
        raise TritonError(name, f"cuTensorMapEncodeTiled would refuse it: {e}") from None
    return m.to_bytes()
