"""TMA tile loads (cp.async.bulk.tensor, tile mode): where each box element lands in shared memory.

Model (traces/tma_tile_sm90.npz; CUDA driver API cuTensorMapEncodeTiled): the box is traversed with
dimension 0 innermost; along dimension d >= 1 it takes ceil(box[d] / element_strides[d]) elements at
coordinates coords[d] + j * element_strides[d] (dimension 0 takes box[0] consecutive elements).
Box row r (all dimensions >= 1, dimension 1 fastest) starts at smem_addr + r * pitch, with pitch the
box's inner size in bytes without swizzle, and the whole swizzle span (32/64/128 bytes) with one; only
the box's own bytes are written. The swizzle is Swizzle<B,4,3> on the absolute shared address, as for
wgmma with base offset 0. Elements outside the tensor are written as zero.

sm100 adds three 128-byte modes (CUDA driver API CUtensorMapSwizzle; PTX 5.5.7 pattern tables; not
silicon-verified): 128B_ATOM_32B permutes 32-byte chunks over 4 lines, CuTe's Swizzle<2,5,2> (the UMMA
descriptor's 128B_base32B); 128B_ATOM_64B swaps the two 64-byte halves of odd lines, Swizzle<1,6,1>
(CuTe's Swizzle<2,6,S> cannot fit a 128-byte span); 128B_ATOM_32B_FLIP_8B is ATOM_32B that also swaps
the 8-byte halves of every 16 bytes on odd lines (address bit 3 ^= bit 7, our reading of the PTX text).
"""
from functools import lru_cache

import numpy as np

from ..core.arch import SMEM_WINDOW, check_arch
from .descriptors import SM90_SWIZZLES, SwizzleMode
from ..core.errors import TcemuError
from .swizzle import Swizzle
from .smem import SharedMemory
from ..core.validate import MAX_ELEMENTS, as_array, as_choice, as_int, as_int_array, as_int_list, is_int, show


class TmaError(TcemuError):
    """Tensor-map parameters the driver refuses, or a load the hardware faults on."""


# sm100's TMA-only modes: (swizzle, flip the 8-byte halves of odd 128-byte lines).
SM100_TMA_SWIZZLES = {"128B_ATOM_32B": (Swizzle(2, 5, 2), False), "128B_ATOM_32B_FLIP_8B": (Swizzle(2, 5, 2), True),
                      "128B_ATOM_64B": (Swizzle(1, 6, 1), False)}


def _swizzle(mode, arch):
    """(name, Swizzle, flip) of a TMA swizzle mode on `arch`."""
    if isinstance(mode, SwizzleMode):
        mode = mode.value
    if not isinstance(mode, str) or len(mode) > 60:
        raise TmaError("swizzle", f"{show(mode)} is not a TMA swizzle mode name")
    text = mode.strip().upper().removeprefix("CU_TENSOR_MAP_SWIZZLE_")
    if text in SM100_TMA_SWIZZLES and check_arch(arch) == "sm100":
        return (text, *SM100_TMA_SWIZZLES[text])
    try:
        parsed = SwizzleMode.parse(text)
    except TcemuError:
        parsed = None
    if parsed not in SM90_SWIZZLES:
        extra = ", 128B_ATOM_32B, 128B_ATOM_32B_FLIP_8B, 128B_ATOM_64B on sm100" if arch == "sm100" else ""
        raise TmaError("swizzle", f"{show(mode)} is not a {arch} TMA swizzle (none, 32B, 64B, 128B{extra})")
    return parsed.value, parsed.swizzle, False


# sm100 sub-byte data types (CUtensorMapDataType; PTX 5.5.1.1): (bits per element, padded: each 16 elements'
# packed bytes then padding, left unwritten, fill 16 bytes of shared memory; dtypes' packed / padded rule). ALIGN8B copies packed
# bytes as they are (kind::mxf4*); ALIGN16B spreads 16 elements over 16 bytes (.b4x16_p64 / .b6x16_p32), the
# layout kind::f8f6f4 reads. The driver takes box[0] = 128 for ALIGN16B and 128B / 128B_ATOM_32B / none only.
PACKED_TYPES = {"16U4_ALIGN8B": (4, False), "16U4_ALIGN16B": (4, True), "16U6_ALIGN16B": (6, True)}


def tma_load(smem, smem_addr: int, tensor, *, box, coords, element_strides=None, swizzle="none",
             oob_fill: str = "zero", arch=None, data_type=None) -> np.ndarray:
    """Emulate one tile-mode TMA load of `tensor` (a numpy array; its last axis is TMA dimension 0,
    its shape and byte strides give globalDim and globalStrides) into `smem` at absolute `smem_addr`.

    box, coords, element_strides list dimension 0 first, as the driver API does. Returns the (absolute)
    shared addresses written, shaped like the box (outer dimensions first).

    data_type (sm100): one of PACKED_TYPES; `tensor` then holds packed bytes (dimension 0 counts bytes,
    box[0] and coords[0] count elements) and the result gives each element's position by dtypes' packed /
    padded rule: the byte holding it (ALIGN8B: packed e2m1) or its 8-bit slot in a 16-byte chunk (ALIGN16B:
    padded e2m1 / e2m3 / e3m2). tma_placement turns the result into an operand placement."""
    if not isinstance(smem, SharedMemory):
        raise TmaError("smem", f"must be a SharedMemory, got {show(smem)}")
    if arch is not None and check_arch(arch) != smem.arch:
        raise TmaError("arch", f"{show(arch)} differs from the shared memory's {smem.arch}")
    arch = smem.arch
    tensor = as_array(tensor, "tensor", TmaError)
    box, coords = as_int_list(box, "box", error=TmaError), as_int_list(coords, "coords", error=TmaError)
    as_choice(oob_fill, "oob_fill", ("zero",), TmaError)
    if data_type is not None:
        return _packed_load(smem, smem_addr, tensor, box, coords, element_strides, swizzle, oob_fill, arch, data_type)
    return _load(smem, smem_addr, tensor, box, coords, element_strides, swizzle, oob_fill, arch)


def _packed_load(smem, smem_addr, tensor, box, coords, element_strides, swizzle, oob_fill, arch, data_type):
    name = data_type.upper().removeprefix("CU_TENSOR_MAP_DATA_TYPE_") if isinstance(data_type, str) else None
    if name not in PACKED_TYPES or check_arch(arch) != "sm100":
        raise TmaError("data_type", f"{show(data_type)}: the packed types are sm100's {', '.join(PACKED_TYPES)}")
    if tensor.dtype != np.uint8 or not 1 <= tensor.ndim <= 5 or not box or not coords:
        raise TmaError("tensor", f"a packed {name} tensor is a uint8 array of packed bytes, got {tensor.dtype} "
                                 f"{tensor.shape}")
    width, padded = PACKED_TYPES[name]
    if len(box) != tensor.ndim or len(coords) != tensor.ndim:
        raise TmaError("box" if len(box) != tensor.ndim else "coords", f"needs {tensor.ndim} integers (dimension 0 "
                                                                       "first)")
    if not padded:  # ALIGN8B: the packed bytes themselves, two elements per byte
        if box[0] % 32 or coords[0] % 2:
            raise TmaError("box" if box[0] % 32 else "coords", f"{name}: box[0] must be a multiple of 32 elements "
                                                               "(16 bytes) and coords[0] even")
        addr = _load(smem, smem_addr, tensor, [box[0] // 2] + box[1:], [coords[0] // 2] + coords[1:],
                     element_strides, swizzle, oob_fill, arch)
        return np.repeat(addr, 2, axis=-1)
    group_bytes = 16 * width // 8  # packed bytes of 16 elements: 8 (fp4) or 12 (fp6)
    if box[0] != 128 or coords[0] % 128 or tensor.shape[-1] % (8 * group_bytes):
        raise TmaError("box" if box[0] != 128 else "coords" if coords[0] % 128 else "tensor",
                       f"{name}: box[0] is 128 elements, globalDim[0] a multiple of 128 (driver API); tcemu "
                       "also takes coords[0] in whole boxes")
    if any(s % 32 for s in tensor.strides[:-1]):
        raise TmaError("tensor", f"{name}: global strides must be multiples of 32 bytes (driver API)")
    if _swizzle(swizzle, arch)[0] not in ("none", "128B", "128B_ATOM_32B"):
        raise TmaError("swizzle", f"{show(swizzle)}: {name} loads take none, 128B or 128B_ATOM_32B (driver API)")
    groups = tensor.reshape(tensor.shape[:-1] + (-1, group_bytes))
    slots = np.zeros(groups.shape[:-1] + (16,), np.uint8)  # each 16 elements: their packed bytes, then padding
    slots[..., :group_bytes] = groups
    return _load(smem, smem_addr, slots.reshape(tensor.shape[:-1] + (-1,)), box, coords, element_strides, swizzle,
                 oob_fill, arch, write=lambda i0: i0 % 16 < group_bytes)


def _load(smem, smem_addr, tensor, box, coords, element_strides, swizzle, oob_fill, arch, write=None):
    """The tile load; `write` (dimension-0 index -> bool) leaves padding positions unwritten."""
    addr, values, _, counts, keep = plan_tile(smem_addr, tensor, box, coords, element_strides, swizzle, oob_fill,
                                               arch, write, window=smem.size)
    es = tensor.dtype.itemsize
    smem.scatter_bytes(addr[keep], np.ascontiguousarray(values).view(np.uint8).reshape(-1, es)[keep])
    return addr.reshape(counts[::-1])


def plan_tile(smem_addr, tensor, box, coords, element_strides=None, swizzle="none", oob_fill="zero", arch="sm90",
              write=None, window=None):
    """Where a tile-mode load puts each box element, without writing: (shared addresses, values, flat element
    index into `tensor` or -1 for out-of-bounds zeros, per-dimension counts (dimension 0 first), kept mask).
    The checks are the driver's and the hardware's (TmaError). `window`: the shared memory's size in bytes, when
    the box must lie inside it (tma_load); a box larger than any shared window is refused in any case, before
    anything is allocated."""
    tensor = as_array(tensor, "tensor", TmaError)
    rank = tensor.ndim
    if not 1 <= rank <= 5:
        raise TmaError("tensor", f"rank {rank}: TMA tensors have 1 to 5 dimensions")
    if tensor.dtype.kind not in "biufcV" or tensor.dtype.hasobject:
        raise TmaError("tensor", f"must be an array of numbers, got {tensor.dtype}")
    es = tensor.dtype.itemsize
    if es not in (1, 2, 4, 8):
        raise TmaError("tensor", f"elements of {es} bytes: TMA moves 1, 2, 4 or 8-byte elements")
    box = as_int_list(box, "box", rank, error=TmaError)
    coords = as_int_list(coords, "coords", rank, -(1 << 31), (1 << 31) - 1, TmaError)  # the driver's int32
    est = [1] * rank if element_strides is None else as_int_list(element_strides, "element_strides", rank,
                                                                   error=TmaError)
    if not all(1 <= b <= 256 for b in box):
        raise TmaError("box", f"{show(box)}: every box dimension is 1..256 elements")
    if not all(1 <= e <= 8 for e in est):
        raise TmaError("element_strides", f"{show(est)}: each is 1..8")
    name, sw, flip = _swizzle(swizzle, arch)
    span = 128 if flip or name in SM100_TMA_SWIZZLES else sw.atom_bytes
    inner = box[0] * es
    if inner % 16:
        raise TmaError("box", f"box[0] * element size = {inner} bytes must be a multiple of 16")
    if sw.bits and inner > span:
        raise TmaError("box", f"box[0] spans {inner} bytes, more than the {name} swizzle span ({span} bytes)")
    strides = tensor.strides[::-1]  # bytes, dimension 0 first
    # a stride of 0 is a multiple of 16 (CUTLASS gives its extent-1 batch mode stride 0; the driver takes it)
    if strides[0] != es or any(s % 16 for s in strides[1:]) or any(s < 0 for s in strides):
        raise TmaError("tensor", f"byte strides {strides[1:]} of dimensions 1.. must be non-negative multiples of "
                                 "16, and dimension 0 contiguous")
    smem_addr = as_int(smem_addr, "smem_addr", 0, (window if window is not None else 1 << 32) - 1, TmaError)
    if smem_addr % 128:
        raise TmaError("smem_addr", f"{smem_addr}: the destination must be 128-byte aligned (misaligned address)")
    if (coords[0] * es) % 16:
        raise TmaError("coords", f"coords[0] = {coords[0]} is {coords[0] * es} bytes, not a multiple of 16 "
                                 "(the hardware faults: illegal instruction)")
    if oob_fill != "zero":
        raise TmaError("oob_fill", f"{show(oob_fill)}: only 'zero' (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) is modelled")

    counts = [box[0]] + [-(-box[d] // est[d]) for d in range(1, rank)]
    pitch = span if sw.bits else inner
    box_bytes = int(np.prod(counts[1:], dtype=np.int64)) * pitch  # checked before anything is allocated
    if box_bytes > SMEM_WINDOW[arch]:
        raise TmaError("box", f"{box_bytes:,} bytes of box exceed the {arch} shared window "
                              f"({SMEM_WINDOW[arch]:#x} bytes)")
    if window is not None and smem_addr + box_bytes > window:
        raise TmaError("box", f"{box_bytes:,} bytes of box from {smem_addr:#x} run past the {arch} shared "
                              f"window ({window:#x})")
    idx, addr = _box_geometry(smem_addr, tuple(counts), es, pitch, sw.base, sw.shift, sw.bits, bool(flip))
    step = [1] + est[1:]
    inside = _inside_box(tensor, coords, counts, step)
    if inside is not None:
        values, flat = inside
    else:
        gcoord = np.array(coords)[:, None] + idx * np.array(step)[:, None]
        dims = np.array(tensor.shape[::-1])[:, None]
        inside = np.all((gcoord >= 0) & (gcoord < dims), axis=0)
        values = np.zeros(idx.shape[1], tensor.dtype)
        values[inside] = tensor[tuple(gcoord[::-1][:, inside])]
        flat = np.full(idx.shape[1], -1, np.int64)
        flat[inside] = np.ravel_multi_index(tuple(gcoord[::-1][:, inside]), tensor.shape)
    keep = write(idx[0]) if write is not None else np.ones(idx.shape[1], bool)
    return addr, values, flat, counts, keep


def box_slices(coords, counts, step, shape):
    """The strided slices (the array's axes, outer first) of a box wholly inside a tensor of `shape`, or None where
    it is not: coords, counts and step per dimension, dimension 0 first."""
    last = [c + (n - 1) * e for c, n, e in zip(coords, counts, step)]
    if min(coords) < 0 or not all(x < d for x, d in zip(last, shape[::-1])):
        return None
    return tuple(slice(c, x + 1, e) for c, x, e in zip(coords[::-1], last[::-1], step[::-1]))


def _inside_box(tensor, coords, counts, step, mult=None):
    """(values, flat indices) of a box wholly inside the tensor (the common case), else None: a strided slice, in the
    box's order (dimension 0 fastest is the array's last axis fastest), and flat indices = the first element's + the
    box's own. mult: the tensor's elements per step of each dimension, dimension 0 first, where the caller has them."""
    box = box_slices(coords, counts, step, tensor.shape)
    if box is None:
        return None
    values = tensor[box].reshape(-1)
    mult = _mult(tensor.shape) if mult is None else mult
    flat = int(np.dot(coords, mult)) + _box_offsets(tuple(counts), tuple(step), mult)
    return values, flat


def _mult(shape):
    """Elements per step of each dimension, dimension 0 first (int64, as numpy's cumprod wraps them)."""
    return tuple(int(m) for m in np.cumprod((1,) + shape[::-1][:-1]))


# plan_tile_again's checked geometries: (smem_addr, shape, strides, dtype, box, element_strides, swizzle, arch) ->
# (counts, step, addr, keep, mult)
_CHECKED = {}


def plan_tile_again(smem_addr: int, tensor: np.ndarray, box: list, coords: list, element_strides=None,
                    swizzle: str = "none", arch: str = "sm90"):
    """plan_tile(smem_addr, tensor, box, coords, element_strides, swizzle, "zero", arch) for the interpreter's TMA
    instructions, which repeat a few geometries (one per stage buffer) at many coordinates: the checks that do not
    depend on coords run once per geometry (plan_tile's, on its first call), and a box wholly inside the tensor is
    then one strided slice; anything else goes through plan_tile. Arguments as a TMA instruction gives them (ints,
    lists of ints, an ndarray); the kept mask returned is read-only."""
    key = (smem_addr, tensor.shape, tensor.strides, tensor.dtype, tuple(box),
           None if element_strides is None else tuple(element_strides), swizzle, arch)
    geo = _CHECKED.get(key)
    if geo is not None and len(coords) == tensor.ndim and not (coords[0] * tensor.dtype.itemsize) % 16 and \
            all(-(1 << 31) <= c < 1 << 31 for c in coords):   # plan_tile's coordinate checks (the driver's int32)
        counts, step, addr, keep, mult = geo
        inside = _inside_box(tensor, coords, counts, step, mult)
        if inside is not None:
            return addr, inside[0], inside[1], list(counts), keep
    plan = plan_tile(smem_addr, tensor, box, coords, element_strides, swizzle, "zero", arch)
    if geo is None:
        if len(_CHECKED) >= 64:   # (a kernel has a few: one per stage buffer and operand)
            _CHECKED.clear()
        est = [1] * tensor.ndim if element_strides is None else list(element_strides)
        keep = np.ones(plan[0].size, bool)
        keep.setflags(write=False)
        _CHECKED[key] = (list(plan[3]), [1] + est[1:], plan[0], keep, _mult(tensor.shape))
    return plan


@lru_cache(maxsize=256)
def _box_offsets(counts, step, mult):
    """Flat element offsets of a box's elements from its first (box order: dimension 0 fastest), read-only."""
    off = np.zeros(1, np.int64)
    for n, e, m in zip(counts[::-1], step[::-1], mult[::-1]):   # the outermost dimension first
        off = (off[:, None] + np.arange(n, dtype=np.int64) * e * m).reshape(-1)
    off.setflags(write=False)
    return off


@lru_cache(maxsize=256)
def _box_geometry(smem_addr, counts, es, pitch, base, shift, bits, flip):
    """(box element indices (rank, n), dimension 0 first and fastest; their swizzled shared addresses), read-only:
    a kernel's TMA loads repeat a few of these (one per stage buffer)."""
    rank = len(counts)
    idx = np.indices(counts[::-1]).reshape(rank, -1)[::-1]
    row = np.ravel_multi_index(tuple(idx[1:][::-1]), counts[1:][::-1]) if rank > 1 else np.zeros(idx.shape[1], int)
    addr = smem_addr + row * pitch + idx[0] * es
    addr = addr ^ ((((addr >> (base + shift)) & ((1 << bits) - 1)) << base) if bits else 0)
    if flip:
        addr = addr ^ (((addr >> 7) & 1) << 3)
    idx = np.ascontiguousarray(idx)
    idx.setflags(write=False)
    addr.setflags(write=False)
    return idx, addr


# Byte patterns of the capture (scripts/capture_tma.cu gbyte/sbyte), to replay it.
MAX_CAPTURE_BYTES = 1 << 26  # the capture's buffers: 8 MiB of global memory, a 48 KiB window


def capture_global_bytes(n: int) -> np.ndarray:
    i = np.arange(as_int(n, "n", 0, MAX_CAPTURE_BYTES, TmaError), dtype=np.uint64)
    return ((i * np.uint64(0x9D)) ^ (i >> np.uint64(8)) ^ ((i >> np.uint64(16)) * np.uint64(0x5B))).astype(np.uint8)


def capture_prefill(n: int) -> np.ndarray:
    j = np.arange(as_int(n, "n", 0, MAX_CAPTURE_BYTES, TmaError), dtype=np.uint32)
    return (0xA7 ^ (j * 0x35) ^ (j >> 7)).astype(np.uint8)


def tensor_view(buffer: np.ndarray, offset: int, element_bytes: int, dims, strides) -> np.ndarray:
    """A read-only numpy view of a TMA tensor in a byte buffer: dims and byte strides dimension 0 first
    (strides of dimensions 1..), as cuTensorMapEncodeTiled takes them.

    Every byte the view can reach is proved inside `buffer` (a 1-D uint8 array, or bytes) before the view
    is built: offset + sum((dims[d] - 1) * strides[d]) + element_bytes <= len(buffer)."""
    if isinstance(buffer, (bytes, bytearray, memoryview)):
        buffer = np.frombuffer(bytes(buffer), np.uint8)
    if not isinstance(buffer, np.ndarray) or buffer.dtype != np.uint8 or buffer.ndim != 1:
        raise TmaError("buffer", f"must be a 1-D uint8 array (or bytes), got {show(buffer)}")
    element_bytes = as_int(element_bytes, "element_bytes", 1, 8, TmaError)
    if element_bytes not in (1, 2, 4, 8):
        raise TmaError("element_bytes", f"{element_bytes}: TMA moves 1, 2, 4 or 8-byte elements")
    dims = as_int_list(dims, "dims", None, 1, 1 << 32, TmaError)
    if not 1 <= len(dims) <= 5:
        raise TmaError("dims", f"rank {len(dims)}: TMA tensors have 1 to 5 dimensions")
    strides = as_int_list(strides, "strides", len(dims) - 1, 1, 1 << 40, TmaError)
    offset = as_int(offset, "offset", 0, buffer.size, TmaError)
    full = [element_bytes] + strides
    last = offset + sum((d - 1) * st for d, st in zip(dims, full)) + element_bytes  # one past the last byte
    if last > buffer.size:
        raise TmaError("dims, strides", f"the tensor reaches byte {last - 1:#x} of a {buffer.size:#x}-byte buffer "
                                        f"(offset {offset:#x}, dims {show(dims)}, strides {show(strides)})")
    flat = np.ascontiguousarray(buffer)[offset:]
    flat = flat[:flat.size // element_bytes * element_bytes].view(np.dtype(f"<u{element_bytes}"))
    return np.lib.stride_tricks.as_strided(flat, shape=tuple(dims[::-1]), strides=tuple(full[::-1]), writeable=False)


def tma_placement(loads, *, rows, k, element_strides=None) -> np.ndarray:
    """The (rows, k) operand placement that check.check_operand / check_tile / suggest_descriptor take, from
    what tma_load returned: a box's addresses (outer dimensions first), or a list of (addresses, coords) pairs
    for a tile assembled from several boxes (coords as passed to tma_load, dimension 0 first).

    rows, k: the TMA dimensions (numbered as the driver does, dimension 0 innermost) that index the operand's
    rows (M of A, N of B) and its K. A tuple lists several dimensions, fastest first: a map that splits K into
    swizzle-width pieces (ThunderKittens' 5-D maps: dimension 0 the 64 elements of a 128-byte row, 2 the
    piece) takes k=(0, 2). K-major operands have k=0 (K contiguous), MN-major ones rows=0. Every other
    dimension must span one element of the tile. element_strides: as passed to tma_load (a strided box takes
    every element_strides[d]-th coordinate; the placement counts the elements it took)."""
    if isinstance(loads, np.ndarray) or not isinstance(loads, (list, tuple)):
        first = as_array(loads, "loads", TmaError)
        loads = [(first, [0] * first.ndim)]
    if len(loads) > 1 << 16:
        raise TmaError("loads", f"{len(loads):,} boxes; at most {1 << 16:,}")
    pairs = []
    for item in loads:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise TmaError("loads", "a tma_load result, or a list of (addresses, coords) pairs, one per box")
        addr, coords = as_array(item[0], "loads", TmaError), item[1]
        n = len(coords) if isinstance(coords, (list, tuple)) or (isinstance(coords, np.ndarray) and coords.ndim == 1) \
            else -1
        if addr.dtype.kind not in "iu" or not 1 <= addr.ndim <= 5 or n != addr.ndim:
            raise TmaError("loads", f"each box is tma_load's (outer-first) address array with its coords, dimension "
                                    f"0 first; got {show(addr)} with coords {show(coords)}")
        coords = as_int_list(coords, "loads", addr.ndim, -(1 << 31), (1 << 31) - 1, TmaError)  # the driver's int32
        if not addr.size:
            raise TmaError("loads", f"a box of shape {addr.shape} holds no element")
        pairs.append((as_int_array(addr, "loads", 0, 1 << 40, TmaError), coords))
    if not pairs:
        raise TmaError("loads", "no box given")
    rank = pairs[0][0].ndim
    if any(a.ndim != rank for a, _ in pairs):
        raise TmaError("loads", "every box must come from the same tensor map (same rank)")
    if element_strides is None:
        est = [1] * rank
    else:  # rank integers 1..8, dimension 0 first
        est = as_int_list(element_strides, "element_strides", rank, 1, 8, TmaError)
    est[0] = 1  # dimension 0 always takes consecutive elements

    def dims(value, name):
        value = (value,) if is_int(value) else value
        if not isinstance(value, (tuple, list)) or not value or not all(is_int(d) and 0 <= d < rank for d in value):
            raise TmaError(name, f"{show(value)}: TMA dimension numbers 0..{rank - 1} (dimension 0 innermost), or a "
                                 "tuple of them, fastest first")
        return [int(d) for d in value]

    row_dims, k_dims = dims(rows, "rows"), dims(k, "k")
    if len(set(row_dims + k_dims)) != len(row_dims) + len(k_dims):
        raise TmaError("rows, k", f"{show(rows)} and {show(k)} must name distinct dimensions")
    lo = [min(c[d] for _, c in pairs) for d in range(rank)]
    hi = [max(c[d] + a.shape[rank - 1 - d] * est[d] for a, c in pairs) for d in range(rank)]
    count = [-(-(hi[d] - lo[d]) // est[d]) for d in range(rank)]
    for d in range(rank):
        if d not in row_dims + k_dims and count[d] != 1:
            raise TmaError("rows, k", f"dimension {d} spans {count[d]} elements of the tile but is neither in rows "
                                      f"{show(rows)} nor in k {show(k)}")

    def flat(index, ds):
        out, scale = 0, 1
        for d in ds:
            out, scale = out + index[d] * scale, scale * count[d]
        return out, scale

    n_rows, n_k = flat([0] * rank, row_dims)[1], flat([0] * rank, k_dims)[1]
    if n_rows * n_k > MAX_ELEMENTS:  # checked before the placement is allocated
        raise TmaError("loads", f"the boxes span a {n_rows} x {n_k} tile; at most {MAX_ELEMENTS:,} elements")
    out = np.full((n_rows, n_k), -1, np.int64)
    for addr, coords in pairs:
        for d in range(rank):
            if (coords[d] - lo[d]) % est[d]:
                raise TmaError("loads", f"box at coords {coords} is off the element-stride grid of dimension {d}")
        idx = np.indices(addr.shape)[::-1]  # dimension 0 first
        tile = [idx[d] + (coords[d] - lo[d]) // est[d] for d in range(rank)]
        r, c = flat(tile, row_dims)[0], flat(tile, k_dims)[0]
        if np.any(out[r, c] >= 0):
            i = np.argwhere(out[r, c] >= 0)[0]
            raise TmaError("loads", f"boxes overlap: operand element ({int(r[tuple(i)])}, {int(c[tuple(i)])}) "
                                    "is loaded twice")
        out[r, c] = addr
    if np.any(out < 0):
        r, c = np.argwhere(out < 0)[0]
        raise TmaError("loads", f"operand element ({r}, {c}) lies in no box: the boxes leave a hole")
    return out
