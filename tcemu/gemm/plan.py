"""The arithmetic plan of a GEMM (tcemu.matmul): the parameter checks, how it is computed (Plan), the inputs'
checks and conversions, and the step ranges both engines share."""
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..core.errors import LayoutError
from ..core.validate import show
from ..arith.dtypes import CONTAINER
from ..arith.fdp import FdpUnit
from ..arith.formats import INT_FORMATS, NUMPY_TYPES, get_format
from ..blackwell.instr import BLOCK_SCALED, InstrDescriptor
from ..blackwell.mma import K_OF_KIND, block_size, fdp_unit as bw_unit
from ..hopper.wgmma import fdp_unit as hopper_unit

_SM90_K = {"tf32": 8, "f16": 16, "bf16": 16, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32}
_SM90_PAIRS = {"tf32": ("tf32",), "f16": ("f16",), "bf16": ("bf16",), "e4m3": ("e4m3", "e5m2"),
               "e5m2": ("e4m3", "e5m2"), "s8": ("s8", "u8"), "u8": ("s8", "u8")}
_SM90_ACC = {"tf32": ("f32",), "bf16": ("f32",), "f16": ("f16", "f32"), "e4m3": ("f16", "f32"),
             "e5m2": ("f16", "f32"), "s8": ("s32",), "u8": ("s32",)}
_FP8 = ("e4m3", "e5m2")
_F8F6F4 = ("e4m3", "e5m2", "e2m3", "e3m2", "e2m1")
_OUT = {"f32": np.float32, "f16": np.float16, "bf16": NUMPY_TYPES["bf16"], "s32": np.int32}
_STORE = CONTAINER  # raw bits by width
MAX_STEP = 1 << 20    # k_step, promote_every, split_k: far past any K a GEMM here can hold (a bound keeps arithmetic sane)


@dataclass(frozen=True)
class BlockScales:
    """DeepGEMM-style fp8 block scales, applied when a K block's partial sum is promoted into f32:
    main += (a[m // a_block[0], kb] * b[n // b_block[0], kb]) * partial (one f32 product, one FFMA).

    a: (ceil(M / a_block[0]), ceil(K / block_k)) float32; b: (ceil(N / b_block[0]), ceil(K / block_k)) float32.
    The defaults are DeepGEMM's: 1 x 128 for A (per row), 128 x 128 for B."""
    a: np.ndarray
    b: np.ndarray
    a_block: int = 1
    b_block: int = 128
    block_k: int = 128


@dataclass(frozen=True)
class Plan:
    arch: str
    kind: Optional[str]       # sm100 tcgen05 kind
    dtype_a: str
    dtype_b: str
    dtype_d: str
    out_dtype: str
    ks: int                   # K per chain step
    unit: Optional[FdpUnit]   # None for integer kinds
    promote: int              # 0: none
    split_k: int
    init: str                 # "zero" (C = +0 registers) or "none" (first instruction without C)
    mx_block: int             # block-scaled kinds: K per scale factor (0: none)
    scale_type: Optional[str]
    satfinite: bool


def _fail(field, rule):
    raise LayoutError(field, rule)


def plan_matmul(*, arch="sm90", dtype_a, dtype_b, dtype_d="f32", out_dtype=None, k_step=None, promote_every=None,
                split_k=1, kind=None, block_size_k=None, scale_type=None, init="zero", satfinite=False,
                mx_scales=False) -> Plan:
    """Validate the arithmetic parameters of a GEMM and say how it is computed (TcemuError naming the field)."""
    if not isinstance(arch, str) or arch not in ("sm90", "sm100"):
        _fail("arch", f"{show(arch)}: 'sm90' (wgmma) or 'sm100' (tcgen05.mma)")
    for name, v in (("dtype_a", dtype_a), ("dtype_b", dtype_b), ("dtype_d", dtype_d)):
        if not isinstance(v, str):
            _fail(name, f"must be a type name (PTX spelling), got {show(v)}")
    if not isinstance(init, str) or init not in ("zero", "none"):
        _fail("init", f"{show(init)}: 'zero' (the accumulator registers start at +0, as Triton) or 'none' (the "
                      "first instruction of a chain runs without C, scale-d = 0, as CUTLASS)")
    if not isinstance(satfinite, (bool, np.bool_)):
        _fail("satfinite", f"must be a bool, got {show(satfinite)}")
    mx_block, stype = 0, None
    if arch == "sm90":
        if kind is not None:
            _fail("kind", "sm90 has no tcgen05 kinds; pass arch='sm100'")
        if block_size_k is not None or scale_type is not None:
            _fail("block_size_k" if block_size_k is not None else "scale_type",
                  "block-scaled (mx) kinds are sm100 only")
        if dtype_a not in _SM90_K:
            _fail("dtype_a", f"{show(dtype_a)} is not an sm90 wgmma multiplicand for matmul ({', '.join(_SM90_K)})")
        if dtype_b not in _SM90_PAIRS[dtype_a]:
            _fail("dtype_b", f"{show(dtype_b)} cannot pair with {dtype_a} ({', '.join(_SM90_PAIRS[dtype_a])})")
        if dtype_d not in _SM90_ACC[dtype_a]:
            _fail("dtype_d", f"{show(dtype_d)} is not a wgmma accumulator for {dtype_a} ({', '.join(_SM90_ACC[dtype_a])})")
        ks = _SM90_K[dtype_a]
        unit = None if dtype_d == "s32" else hopper_unit(dtype_a, dtype_d)
    else:
        if kind is None:
            kind = ("tf32" if dtype_a == "tf32" else "f16" if dtype_a in ("f16", "bf16") else
                    "i8" if dtype_a in ("s8", "u8") else
                    ("mxf8f6f4" if mx_scales else "f8f6f4") if dtype_a in _F8F6F4 else None)
            if kind is None:
                _fail("dtype_a", f"{show(dtype_a)} is not a tcgen05 multiplicand")
        if not isinstance(kind, str) or kind not in K_OF_KIND:
            _fail("kind", f"{show(kind)}: one of {', '.join(K_OF_KIND)}")
        if scale_type is not None and not isinstance(scale_type, str):
            _fail("scale_type", f"must be a scale type name (ue8m0, ue4m3), got {show(scale_type)}")
        if kind in BLOCK_SCALED:
            stype = scale_type or "ue8m0"
        elif scale_type is not None or block_size_k is not None:
            _fail("scale_type" if scale_type is not None else "block_size_k", f".kind::{kind} is not block-scaled")
        d = InstrDescriptor(kind, dtype_a, dtype_b, m=128, n=256, dtype_d=dtype_d if kind not in BLOCK_SCALED
                            else "f32", scale_type=stype or "ue8m0")
        for f, rule in d.validate(strict=False):
            _fail(f, rule)
        if kind in BLOCK_SCALED and dtype_d != "f32":
            _fail("dtype_d", f".kind::{kind} accumulates in f32")
        if kind in BLOCK_SCALED:
            mx_block = block_size(d, block_size_k)
        ks = K_OF_KIND[kind]
        unit = None if kind == "i8" else bw_unit(kind, dtype_d)
    if k_step is not None:
        if isinstance(k_step, bool) or not isinstance(k_step, (int, np.integer)) or not 1 <= k_step <= MAX_STEP:
            _fail("k_step", f"must be a positive integer (K per chain step, at most {MAX_STEP}), got {show(k_step)}")
        if mx_block and k_step % mx_block and mx_block % k_step:
            _fail("k_step", f"{k_step} does not tile the {mx_block}-element scale blocks")
        ks = int(k_step)
    promote = 0
    if promote_every is not None:
        if isinstance(promote_every, bool) or not isinstance(promote_every, (int, np.integer)) \
                or not 1 <= promote_every <= MAX_STEP:
            _fail("promote_every", f"must be a positive integer (chain steps per promotion, at most {MAX_STEP}), "
                                   f"got {show(promote_every)}")
        if unit is None:
            _fail("promote_every", "integer kinds accumulate exactly: nothing to promote")
        if unit.out_format != "f32":
            _fail("promote_every", "promotion adds into f32 registers: the chain must accumulate in f32")
        promote = int(promote_every)
    if isinstance(split_k, bool) or not isinstance(split_k, (int, np.integer)) or not 1 <= split_k <= MAX_STEP:
        _fail("split_k", f"must be a positive integer (at most {MAX_STEP}), got {show(split_k)}")
    if out_dtype is None:
        out_dtype = dtype_d
    if not isinstance(out_dtype, str):
        _fail("out_dtype", f"must be a type name ('f32', 'f16', 'bf16'), got {show(out_dtype)}")
    if dtype_d == "s32":
        if out_dtype != "s32":
            _fail("out_dtype", "integer kinds give s32")
        if promote or split_k > 1:
            _fail("split_k", "integer kinds: split-K is exact, nothing to model")
    elif out_dtype not in ("f32", "f16", "bf16"):
        _fail("out_dtype", f"{show(out_dtype)}: 'f32', 'f16' or 'bf16' (rounded to nearest even from the accumulator)")
    if satfinite and dtype_d != "s32":
        _fail("satfinite", "only integer kinds take .satfinite")
    return Plan(arch, kind, dtype_a, dtype_b, dtype_d, out_dtype, ks, unit, promote, int(split_k), init, mx_block,
                stype, bool(satfinite))


# ---- inputs

def _operand_bits(x, dtype, field, ndim=2) -> np.ndarray:
    """Raw bit patterns of an operand given as raw bits (unsigned/signed integers of the container width) or as
    an array of the type's numpy/ml_dtypes type (tf32: float32)."""
    if isinstance(x, (list, tuple)):
        _fail(field, "must be a numpy array (raw bits, or the type's numpy/ml_dtypes type)")
    if not isinstance(x, np.ndarray):
        _fail(field, f"must be a numpy array, got {type(x).__name__}")
    if x.ndim != ndim:
        _fail(field, f"must be {ndim}-D, got shape {x.shape}")
    if dtype in INT_FORMATS:
        width, signed = INT_FORMATS[dtype]
        if x.dtype == (np.int8 if signed else np.uint8):
            return x.view(np.uint8)
        fmt_bits = width
    else:
        fmt = get_format(dtype)
        ntype = NUMPY_TYPES.get(dtype)
        if ntype is not None and x.dtype == np.dtype(ntype):
            return x.view(fmt.storage_dtype)
        fmt_bits = fmt.bits
    if x.dtype.kind not in "iu":
        want = NUMPY_TYPES.get(dtype)
        _fail(field, f"{x.dtype} array for {dtype}: pass raw bits (integers) or "
                     f"{np.dtype(want).name if want is not None else 'raw bits'} (convert explicitly; tcemu does not "
                     "round inputs)")
    if x.size:
        lo, hi = int(x.min()), int(x.max())
        if lo < 0 or hi >= 1 << fmt_bits:
            _fail(field, f"bit pattern {lo if lo < 0 else hi} is outside [0, 2^{fmt_bits}) for {dtype}")
    return x.astype(_STORE[max(8, 1 << (fmt_bits - 1).bit_length())], copy=False)


def _accumulator_values(c, shape, dtype_d, field="c") -> np.ndarray:
    """float64 values (exact) of an accumulator given as float32/float16 (or raw bits) of shape `shape`."""
    if not isinstance(c, np.ndarray):
        _fail(field, f"must be a numpy array of the accumulator type ({dtype_d}), got {type(c).__name__}")
    if c.shape != tuple(shape):
        _fail(field, f"must have shape {tuple(shape)}, got {c.shape}")
    want = _OUT[dtype_d]
    bits = c.view(_STORE[8 * c.itemsize]) if c.dtype == np.dtype(want) else _operand_bits(c, dtype_d, field)
    if dtype_d == "s32":
        return bits.view(np.int32).astype(np.int64)
    with np.errstate(invalid="ignore"):  # signalling NaNs: any NaN C gives the canonical NaN
        return bits.view(want).astype(np.float64)


def _scale_bytes(x, rows, nblocks, field) -> np.ndarray:
    if not isinstance(x, np.ndarray) or x.dtype.kind not in "iu" or x.shape != (rows, nblocks):
        _fail(field, f"must be a ({rows}, {nblocks}) integer array of raw scale bytes, got "
                     f"{getattr(x, 'dtype', type(x).__name__)} {getattr(x, 'shape', '')}")
    if x.size and (int(x.min()) < 0 or int(x.max()) > 255):
        _fail(field, "scale bytes lie in [0, 255]")
    return x.astype(np.uint8)


def _block_scales(scales, M, N, K, plan):
    """(ps_a (M, nkb), ps_b (nkb, N)) float64 values of f32 promotion scales, expanded per row / column."""
    if isinstance(scales, tuple) and len(scales) == 2 and not isinstance(scales, BlockScales):
        scales = BlockScales(*scales)
    if not isinstance(scales, BlockScales):
        _fail("scales", "fp8 block scales: a BlockScales or a pair (a, b) of float32 arrays (DeepGEMM 1x128, 128x128)")
    blocks = {}
    for name in ("a_block", "b_block", "block_k"):
        v = getattr(scales, name)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= 1 << 24:
            _fail(f"scales.{name}", f"must be a positive integer (at most 2^24), got {show(v)}")
        blocks[name] = int(v)  # a numpy unsigned scalar would turn -(-rows // blk) into an overflow
    scales = BlockScales(scales.a, scales.b, **blocks)
    if not plan.promote:
        _fail("scales", "block scales are applied at promotion: pass promote_every too")
    if plan.promote * plan.ks != scales.block_k:
        _fail("promote_every", f"{plan.promote} steps of K = {plan.ks} is not the scales' K block {scales.block_k}: "
                               "DeepGEMM promotes once per scale block")
    nkb = -(-K // scales.block_k)
    out = []
    for name, arr, rows, blk in (("scales.a", scales.a, M, scales.a_block), ("scales.b", scales.b, N, scales.b_block)):
        want = (-(-rows // blk), nkb)
        if not isinstance(arr, np.ndarray) or arr.dtype != np.float32 or arr.shape != want:
            _fail(name, f"must be a float32 array of shape {want}, got {getattr(arr, 'dtype', type(arr).__name__)} "
                        f"{getattr(arr, 'shape', '')}")
        out.append(np.repeat(arr.astype(np.float64), blk, axis=0)[:rows])
    return np.ascontiguousarray(out[0]), np.ascontiguousarray(out[1].T)


# ---- step ranges

def _split_ranges(steps, plan):
    """Contiguous step ranges of the K splits: ceil(steps / split_k) steps each (rounded up to whole promotion
    intervals and scale blocks), the last one shorter."""
    align = _unit_steps(plan)
    per = -(-steps // plan.split_k)
    per = -(-per // align) * align
    return [(s0, min(steps, s0 + per)) for s0 in range(0, steps, per)]


def _unit_steps(plan):
    """Chain steps that must stay together: a promotion interval, and a block of mx scales."""
    return max(1, plan.promote) * (max(1, plan.mx_block // plan.ks) if plan.mx_block else 1)


