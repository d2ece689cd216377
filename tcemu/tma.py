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
import numpy as np

from .arch import check_arch
from .descriptors import SM90_SWIZZLES, SwizzleMode
from .errors import TcemuError
from .swizzle import Swizzle


class TmaError(TcemuError):
    """Tensor-map parameters the driver refuses, or a load the hardware faults on."""


# sm100's TMA-only modes: (swizzle, flip the 8-byte halves of odd 128-byte lines).
SM100_TMA_SWIZZLES = {"128B_ATOM_32B": (Swizzle(2, 5, 2), False), "128B_ATOM_32B_FLIP_8B": (Swizzle(2, 5, 2), True),
                      "128B_ATOM_64B": (Swizzle(1, 6, 1), False)}


def _swizzle(mode, arch):
    """(name, Swizzle, flip) of a TMA swizzle mode on `arch`."""
    text = str(mode).strip().upper().removeprefix("CU_TENSOR_MAP_SWIZZLE_")
    if text in SM100_TMA_SWIZZLES and check_arch(arch) == "sm100":
        return (text, *SM100_TMA_SWIZZLES[text])
    try:
        parsed = SwizzleMode.parse(text)
    except TcemuError:
        parsed = None
    if parsed not in SM90_SWIZZLES:
        extra = ", 128B_ATOM_32B, 128B_ATOM_32B_FLIP_8B, 128B_ATOM_64B on sm100" if arch == "sm100" else ""
        raise TmaError("swizzle", f"{mode!r} is not a {arch} TMA swizzle (none, 32B, 64B, 128B{extra})")
    return parsed.value, parsed.swizzle, False


def tma_load(smem, smem_addr: int, tensor, *, box, coords, element_strides=None, swizzle="none",
             oob_fill: str = "zero", arch=None) -> np.ndarray:
    """Emulate one tile-mode TMA load of `tensor` (a numpy array; its last axis is TMA dimension 0,
    its shape and byte strides give globalDim and globalStrides) into `smem` at absolute `smem_addr`.

    box, coords, element_strides list dimension 0 first, as the driver API does. Returns the (absolute)
    shared addresses written, shaped like the box (outer dimensions first)."""
    tensor = np.asarray(tensor)
    rank = tensor.ndim
    if not 1 <= rank <= 5:
        raise TmaError("tensor", f"rank {rank}: TMA tensors have 1 to 5 dimensions")
    es = tensor.dtype.itemsize
    if es not in (1, 2, 4, 8):
        raise TmaError("tensor", f"elements of {es} bytes: TMA moves 1, 2, 4 or 8-byte elements")
    box, coords = list(box), list(coords)
    est = [1] * rank if element_strides is None else list(element_strides)
    for name, v in (("box", box), ("coords", coords), ("element_strides", est)):
        if len(v) != rank or not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in v):
            raise TmaError(name, f"needs {rank} integers (dimension 0 first), got {v!r}")
    if not all(1 <= b <= 256 for b in box):
        raise TmaError("box", f"{box}: every box dimension is 1..256 elements")
    if not all(1 <= e <= 8 for e in est):
        raise TmaError("element_strides", f"{est}: each is 1..8")
    name, sw, flip = _swizzle(swizzle, arch or getattr(smem, "arch", "sm90"))
    span = 128 if flip or name in SM100_TMA_SWIZZLES else sw.atom_bytes
    inner = box[0] * es
    if inner % 16:
        raise TmaError("box", f"box[0] * element size = {inner} bytes must be a multiple of 16")
    if sw.bits and inner > span:
        raise TmaError("box", f"box[0] spans {inner} bytes, more than the {name} swizzle span ({span} bytes)")
    strides = tensor.strides[::-1]  # bytes, dimension 0 first
    if strides[0] != es or any(s % 16 for s in strides[1:]) or any(s <= 0 for s in strides):
        raise TmaError("tensor", f"byte strides {strides[1:]} of dimensions 1.. must be positive multiples of 16, "
                                 "and dimension 0 contiguous")
    if isinstance(smem_addr, bool) or not isinstance(smem_addr, (int, np.integer)) or smem_addr % 128:
        raise TmaError("smem_addr", f"{smem_addr!r}: the destination must be 128-byte aligned (misaligned address)")
    if (coords[0] * es) % 16:
        raise TmaError("coords", f"coords[0] = {coords[0]} is {coords[0] * es} bytes, not a multiple of 16 "
                                 "(the hardware faults: illegal instruction)")
    if oob_fill != "zero":
        raise TmaError("oob_fill", f"{oob_fill!r}: only 'zero' (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) is modelled")

    counts = [box[0]] + [-(-box[d] // est[d]) for d in range(1, rank)]
    idx = np.indices(counts[::-1]).reshape(rank, -1)[::-1]  # (rank, n): dimension 0 first, varying fastest
    gcoord = np.array(coords)[:, None] + idx * np.array([1] + est[1:])[:, None]
    dims = np.array(tensor.shape[::-1])[:, None]
    inside = np.all((gcoord >= 0) & (gcoord < dims), axis=0)
    values = np.zeros(idx.shape[1], tensor.dtype)
    values[inside] = tensor[tuple(gcoord[::-1][:, inside])]
    row = np.ravel_multi_index(tuple(idx[1:][::-1]), counts[1:][::-1]) if rank > 1 else np.zeros(idx.shape[1], int)
    pitch = span if sw.bits else inner
    addr = smem_addr + row * pitch + idx[0] * es
    addr = addr ^ ((((addr >> (sw.base + sw.shift)) & ((1 << sw.bits) - 1)) << sw.base) if sw.bits else 0)
    if flip:
        addr = addr ^ (((addr >> 7) & 1) << 3)
    smem.scatter_bytes(addr, np.ascontiguousarray(values).view(np.uint8).reshape(-1, es))
    return addr.reshape(counts[::-1])


# Byte patterns of the capture (scripts/capture_tma.cu gbyte/sbyte), to replay it.
def capture_global_bytes(n: int) -> np.ndarray:
    i = np.arange(n, dtype=np.uint64)
    return ((i * np.uint64(0x9D)) ^ (i >> np.uint64(8)) ^ ((i >> np.uint64(16)) * np.uint64(0x5B))).astype(np.uint8)


def capture_prefill(n: int) -> np.ndarray:
    j = np.arange(n, dtype=np.uint32)
    return (0xA7 ^ (j * 0x35) ^ (j >> 7)).astype(np.uint8)


def tensor_view(buffer: np.ndarray, offset: int, element_bytes: int, dims, strides) -> np.ndarray:
    """A numpy view of a TMA tensor in a byte buffer: dims and byte strides dimension 0 first
    (strides of dimensions 1..), as cuTensorMapEncodeTiled takes them."""
    flat = np.asarray(buffer, np.uint8)[offset:]
    flat = flat[:flat.size // element_bytes * element_bytes].view(np.dtype(f"<u{element_bytes}"))
    full = [element_bytes] + list(strides)[:len(dims) - 1]
    return np.lib.stride_tricks.as_strided(flat, shape=tuple(dims[::-1]), strides=tuple(full[::-1]), writeable=False)
