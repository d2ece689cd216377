"""Tensor maps (CUtensorMap, 128 bytes): a host-side encoder with cuTensorMapEncodeTiled's rules, and the
byte format tcemu's interpreter reads, writes (tensormap.replace) and copies.

The real CUtensorMap layout is opaque (driver-defined); tcemu uses its own, little-endian, so that a map
built by `encode_tiled`, by tensormap.replace on a zeroed 128-byte block (Triton's device-side descriptors),
or by any C code following this table all mean the same thing:

    offset size  field                     offset size  field
    0      4     magic "TCTM" (optional)   16     8     global_address
    4      1     rank - 1                  24     4x5   global_dim[0..4]
    5      1     elemtype (PTX code)       48     8x4   global_stride[0..3] (bytes of dims 1..4)
    6      1     interleave                80     2x5   box_dim[0..4]
    7      1     swizzle_mode              90     1x5   element_stride[0..4]
    8      1     fill_mode                 95..127      reserved (zero)
    9      1     swizzle_atomicity
    10     1     l2_promotion

Field codes are those of PTX tensormap.replace (PTX ISA 9.7.9.26): elemtype .u8 0, .u16 1, .u32 2, .s32 3,
.u64 4, .s64 5, .f16 6, .f32 7, .f32.ftz 8, .f64 9, .bf16 10, .tf32 11, .tf32.ftz 12, .b4x16 13,
.b4x16_p64 14, .b6x16_p32 15; swizzle_mode 0 none, 1 32B, 2 64B, 3 128B; interleave 0 none, 1 16B, 2 32B;
fill_mode 0 zeros, 1 NaN-request-zero-FMA; swizzle_atomicity (sm100) 0 16B, 1 32B, 2 32B + 8B flip, 3 64B, which with
the 128B swizzle give the driver's 128B_ATOM_32B, 128B_ATOM_32B_FLIP_8B and 128B_ATOM_64B modes (driver enum 4, 5, 6).
"""
import struct
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np

from ..layout.tma import TmaError
from ..core.validate import as_int_list, show

SIZE = 128
MAGIC = b"TCTM"
ELEM_BYTES = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 4, 9: 8, 10: 2, 11: 4, 12: 4}
ELEM_NAMES = {0: "u8", 1: "u16", 2: "u32", 3: "s32", 4: "u64", 5: "s64", 6: "f16", 7: "f32", 8: "f32.ftz", 9: "f64",
              10: "bf16", 11: "tf32", 12: "tf32.ftz", 13: "b4x16", 14: "b4x16_p64", 15: "b6x16_p32"}
# cuTensorMapEncodeTiled's CUtensorMapDataType names -> PTX elemtype codes
DRIVER_TYPES = {"UINT8": 0, "UINT16": 1, "UINT32": 2, "INT32": 3, "UINT64": 4, "INT64": 5, "FLOAT16": 6,
                "FLOAT32": 7, "FLOAT64": 9, "BFLOAT16": 10, "FLOAT32_FTZ": 8, "TFLOAT32": 11, "TFLOAT32_FTZ": 12}
NUMPY_TYPES = {np.dtype(np.uint8): 0, np.dtype(np.int8): 0, np.dtype(np.uint16): 1, np.dtype(np.int16): 1,
               np.dtype(np.uint32): 2, np.dtype(np.int32): 3, np.dtype(np.uint64): 4, np.dtype(np.int64): 5,
               np.dtype(np.float16): 6, np.dtype(np.float32): 7, np.dtype(np.float64): 9}
SWIZZLES = {"none": 0, "32B": 1, "64B": 2, "128B": 3}
SWIZZLE_NAMES = {v: k for k, v in SWIZZLES.items()}
# sm100: the 128B swizzle with a wider atom (PTX tensormap.replace .swizzle_atomicity; tcemu.layout.tma's sm100 modes)
ATOMICITY_NAMES = {1: "128B_ATOM_32B", 2: "128B_ATOM_32B_FLIP_8B", 3: "128B_ATOM_64B"}
ATOMICITIES = {v: k for k, v in ATOMICITY_NAMES.items()}
_FLOAT_CODES = {6, 7, 8, 9, 10, 11, 12}


@dataclass
class TensorMap:
    """A tiled tensor map. `tensor` (host side) is the numpy array whose device address the launch fills in."""
    elemtype: int
    global_dim: List[int]
    global_stride: List[int]          # bytes, dimensions 1..rank-1
    box_dim: List[int]
    element_stride: List[int]
    swizzle: int = 0
    interleave: int = 0
    fill: int = 0
    l2_promotion: int = 0
    global_address: int = 0
    tensor: Optional[np.ndarray] = field(default=None, repr=False, compare=False)
    swizzle_atomicity: int = 0        # sm100 (see ATOMICITY_NAMES)

    @property
    def rank(self) -> int:
        return len(self.global_dim)

    @property
    def element_bytes(self) -> int:
        return ELEM_BYTES.get(self.elemtype, 1)

    def to_bytes(self, global_address: Optional[int] = None) -> bytes:
        return encode(self, self.global_address if global_address is None else global_address)


def encode(tm: TensorMap, address: int) -> bytes:
    buf = bytearray(SIZE)
    buf[0:4] = MAGIC
    buf[4] = tm.rank - 1
    buf[5], buf[6], buf[7], buf[8], buf[10] = tm.elemtype, tm.interleave, tm.swizzle, tm.fill, tm.l2_promotion
    buf[9] = tm.swizzle_atomicity
    struct.pack_into("<Q", buf, 16, address)
    for i, v in enumerate(tm.global_dim):
        struct.pack_into("<I", buf, 24 + 4 * i, v)
    for i, v in enumerate(tm.global_stride):
        struct.pack_into("<Q", buf, 48 + 8 * i, v)
    for i, v in enumerate(tm.box_dim):
        struct.pack_into("<H", buf, 80 + 2 * i, v)
    for i, v in enumerate(tm.element_stride):
        buf[90 + i] = v
    return bytes(buf)


def decode(raw) -> TensorMap:
    """The fields of a 128-byte map (whatever wrote it); `validate` checks them."""
    raw = bytes(raw)
    rank = raw[4] + 1
    if rank > 5:
        raise TmaError("rank", f"tensor map rank field {raw[4]} + 1 is above 5")
    return TensorMap(
        elemtype=raw[5], interleave=raw[6], swizzle=raw[7], fill=raw[8], l2_promotion=raw[10], swizzle_atomicity=raw[9],
        global_address=struct.unpack_from("<Q", raw, 16)[0],
        global_dim=[struct.unpack_from("<I", raw, 24 + 4 * i)[0] for i in range(rank)],
        global_stride=[struct.unpack_from("<Q", raw, 48 + 8 * i)[0] for i in range(rank - 1)],
        box_dim=[struct.unpack_from("<H", raw, 80 + 2 * i)[0] for i in range(rank)],
        element_stride=[raw[90 + i] for i in range(rank)])


# tensormap.replace (PTX ISA 9.7.9.26): field -> (offset, size, per-dimension step), and value transforms
REPLACE = {"global_address": (16, 8, 0), "rank": (4, 1, 0), "elemtype": (5, 1, 0), "interleave_layout": (6, 1, 0),
           "swizzle_mode": (7, 1, 0), "fill_mode": (8, 1, 0), "swizzle_atomicity": (9, 1, 0),
           "global_dim": (24, 4, 4), "global_stride": (48, 8, 8), "box_dim": (80, 2, 2), "element_stride": (90, 1, 1)}


def replace(raw: bytearray, name: str, value: int, ordinal: Optional[int] = None) -> None:
    """Write one field in place (`rank` takes rank - 1, as tensormap.replace does)."""
    off, size, step = REPLACE[name]
    if step:
        limit = 4 if name == "global_stride" else 5
        if ordinal is None or not 0 <= ordinal < limit:
            raise TmaError("ord", f"tensormap.replace .{name} ordinal {ordinal} outside 0..{limit - 1}")
        off += step * ordinal
    raw[off:off + size] = int(value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


def validate(tm: TensorMap, where: str = "tensor map") -> None:
    """The rules cuTensorMapEncodeTiled checks (CUDA driver API), applied to a map the kernel uses."""
    es = ELEM_BYTES.get(tm.elemtype)
    if es is None:
        raise TmaError("elemtype", f"{where}: element type code {tm.elemtype} ({ELEM_NAMES.get(tm.elemtype, '?')}) "
                                   "is not modelled")
    if tm.interleave != 0:
        raise TmaError("interleave", f"{where}: interleaved layouts are not modelled")
    if tm.swizzle not in SWIZZLE_NAMES:
        raise TmaError("swizzle", f"{where}: swizzle code {tm.swizzle} is not a Hopper mode (0-3)")
    if tm.swizzle_atomicity and (tm.swizzle != 3 or tm.swizzle_atomicity not in ATOMICITY_NAMES):
        raise TmaError("swizzle_atomicity", f"{where}: atomicity code {tm.swizzle_atomicity} needs the 128B swizzle "
                                            "and one of 1 (32B), 2 (32B + 8B flip), 3 (64B)")
    if tm.global_address % 16:
        raise TmaError("global_address", f"{where}: {tm.global_address:#x} is not 16-byte aligned")
    for i, d in enumerate(tm.global_dim):
        if not 0 < d <= 1 << 32:
            raise TmaError("global_dim", f"{where}: globalDim[{i}] = {d} must be in 1..2^32")
    for i, s in enumerate(tm.global_stride):
        # 0 is a multiple of 16: CUTLASS encodes a batch mode of extent 1 with stride 0 (make_cute_packed_stride;
        # CuTe's make_tma_copy_desc asserts only "multiple of 16B" and "below 2^40")
        if s % 16 or not 0 <= s < 1 << 40:
            raise TmaError("global_stride", f"{where}: globalStrides[{i}] = {s} must be a multiple of 16 below 2^40")
    for i, b in enumerate(tm.box_dim):
        if not 0 < b <= 256:
            raise TmaError("box_dim", f"{where}: boxDim[{i}] = {b} must be in 1..256 (0: never set?)")
    for i, e in enumerate(tm.element_stride):
        if not 0 < e <= 8:
            raise TmaError("element_stride", f"{where}: elementStrides[{i}] = {e} must be in 1..8 (0: never set?)")
    inner = tm.box_dim[0] * es
    if inner % 16:
        raise TmaError("box_dim", f"{where}: boxDim[0] * element size = {inner} bytes is not a multiple of 16")
    span = {1: 32, 2: 64, 3: 128}.get(tm.swizzle)
    if span and inner > span:
        raise TmaError("box_dim", f"{where}: the box's inner dimension ({inner} bytes) exceeds the "
                                  f"{swizzle_name(tm)} swizzle span")
    if tm.fill == 1 and tm.elemtype not in _FLOAT_CODES:
        raise TmaError("oob_fill", f"{where}: NaN fill needs a floating-point element type")


def swizzle_name(tm: TensorMap) -> str:
    """The map's swizzle as tcemu.layout.tma names it (sm100 atom modes included)."""
    return ATOMICITY_NAMES[tm.swizzle_atomicity] if tm.swizzle_atomicity else SWIZZLE_NAMES[tm.swizzle]


def _name(value, prefix):
    """A driver enum name, upper case, without its CU_TENSOR_MAP_... prefix; None for anything but a short string."""
    if not isinstance(value, str) or len(value) > 80:
        return None
    return value.upper().removeprefix(prefix)


def encode_tiled(tensor: np.ndarray, box, *, dtype=None, element_strides=None, swizzle="none",
                 interleave="none", l2_promotion="none", oob_fill="none") -> TensorMap:
    """cuTensorMapEncodeTiled for a numpy array: dimension 0 is the array's last (contiguous) axis; box and
    element_strides list dimension 0 first, as the driver API does. `dtype` (a CUtensorMapDataType name such as
    "BFLOAT16") overrides the type taken from the array (needed for bf16 held as uint16)."""
    if not isinstance(tensor, np.ndarray):
        raise TmaError("tensor", f"must be a numpy array, got {type(tensor).__name__}")
    if not 1 <= tensor.ndim <= 5:
        raise TmaError("tensor", f"rank {tensor.ndim}: tensor maps have 1 to 5 dimensions")
    if dtype is None:
        name = getattr(tensor.dtype, "name", "")
        code = 10 if name == "bfloat16" else NUMPY_TYPES.get(tensor.dtype)
        if code is None:
            raise TmaError("dtype", f"no tensor-map element type for {tensor.dtype}; pass dtype=")
    else:
        key = _name(dtype, "CU_TENSOR_MAP_DATA_TYPE_")
        if key not in DRIVER_TYPES:
            raise TmaError("dtype", f"{show(dtype)} is not a CUtensorMapDataType ({', '.join(DRIVER_TYPES)})")
        code = DRIVER_TYPES[key]
    es = ELEM_BYTES[code]
    if tensor.dtype.itemsize != es:
        raise TmaError("dtype", f"{ELEM_NAMES[code]} elements are {es} bytes; the array's are {tensor.dtype.itemsize}")
    strides = tensor.strides[::-1]
    if strides[0] != es:
        raise TmaError("tensor", "dimension 0 (the last axis) must be contiguous")
    rank = tensor.ndim
    # dimension 0 first; validate() states the driver's ranges (boxDim 1..256, elementStrides 1..8)
    box = as_int_list(box, "box", rank, -(1 << 16), 1 << 16, TmaError)
    est = [1] * rank if element_strides is None else as_int_list(element_strides, "element_strides", rank,
                                                                   -(1 << 16), 1 << 16, TmaError)
    sw = _name(swizzle, "CU_TENSOR_MAP_SWIZZLE_")
    atomicity = ATOMICITIES.get(sw, 0)
    sw = "128B" if atomicity else {"NONE": "none", "32B": "32B", "64B": "64B", "128B": "128B"}.get(sw)
    if sw is None:
        raise TmaError("swizzle", f"{show(swizzle)}: none, 32B, 64B or 128B (sm100: 128B_ATOM_32B, "
                                  "128B_ATOM_32B_FLIP_8B, 128B_ATOM_64B)")
    if _name(interleave, "CU_TENSOR_MAP_INTERLEAVE_") != "NONE":
        raise TmaError("interleave", f"{show(interleave)}: interleaved layouts are not modelled (none only)")
    fill = {"NONE": 0, "NAN_REQUEST_ZERO_FMA": 1}.get(_name(oob_fill, "CU_TENSOR_MAP_FLOAT_OOB_FILL_"))
    if fill is None:
        raise TmaError("oob_fill", f"{show(oob_fill)}: none or nan_request_zero_fma")
    l2 = {"NONE": 0, "64B": 1, "128B": 2, "256B": 3}.get((_name(l2_promotion, "CU_TENSOR_MAP_L2_PROMOTION_") or "")
                                                         .removeprefix("L2_"))
    if l2 is None:
        raise TmaError("l2_promotion", f"{show(l2_promotion)}: none, 64B, 128B or 256B")
    tm = TensorMap(code, [int(d) for d in tensor.shape[::-1]], [int(s) for s in strides[1:]],
                   [int(b) for b in box], [int(e) for e in est], SWIZZLES[sw], 0, fill, l2, 0, tensor, atomicity)
    validate(tm, "encode_tiled")
    return tm
