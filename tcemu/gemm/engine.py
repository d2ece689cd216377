"""tcemu.matmul (this module: tcemu.gemm): the exact bits of a whole GEMM as a tensor-core kernel computes it.

D = A B (+ C) as a chain over K: instruction-size K steps in order, each one fused dot product of the
instruction's unit (fdp.py) with the previous step's accumulator as C, the accumulator starting from +0 (or from
`c`), the K tail zero-padded to a whole step; then, optionally, two-level accumulation (promote_every), split-K
partial sums reduced in f32, an f32 epilogue scale (alpha) and the conversion to out_dtype (round to nearest even).

What it rests on: traces/triton_kernels_sm90.npz (18 Triton sm_90a matmul launches on an H100, bf16/f16/tf32/e4m3,
every output bit equal to this chain; tests/test_matmul.py replays them), traces/wgmma_numerics_sm90.npz (the unit
itself), and, for cuBLAS, traces/torch_gemm_sm90.npz (README: which cases the chain reproduces and which not).
cuBLAS's fp8 promotion every 128 of K and its tf32 input rounding are silicon-verified there; DeepGEMM block
scales, split-K order and the Blackwell kinds follow the published kernels' code (CUTLASS, DeepGEMM, PTX) and the
tcgen05 models, not silicon.

Two engines give the same bits (tests/test_matmul.py): "reference" chains fdp.fused_dot / fdp.grouped_dot one
step at a time over the whole output; "fast" (chain.py) is the same arithmetic on exact float64 values, in
output tiles on threads (nogil numba kernels), with a bounded working set independent of K.
"""
import functools
import math
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from typing import Optional

import numpy as np

from ..arith import chain
from ..core.errors import LayoutError
from ..core.validate import show
from ..arith.fdp import FdpUnit, decode_operand, fused_dot, grouped_dot
from ..arith.formats import INT_FORMATS, NUMPY_TYPES, encode, get_format
from ..arith.rounding import IEEE, OVF_IEEE, RN, round_pack, split_fraction

__all__ = ["matmul", "BlockScales", "plan_matmul"]

_SM90_K = {"tf32": 8, "f16": 16, "bf16": 16, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32}
_SM90_PAIRS = {"tf32": ("tf32",), "f16": ("f16",), "bf16": ("bf16",), "e4m3": ("e4m3", "e5m2"),
               "e5m2": ("e4m3", "e5m2"), "s8": ("s8", "u8"), "u8": ("s8", "u8")}
_SM90_ACC = {"tf32": ("f32",), "bf16": ("f32",), "f16": ("f16", "f32"), "e4m3": ("f16", "f32"),
             "e5m2": ("f16", "f32"), "s8": ("s32",), "u8": ("s32",)}
_FP8 = ("e4m3", "e5m2")
_F8F6F4 = ("e4m3", "e5m2", "e2m3", "e3m2", "e2m1")
_OUT = {"f32": np.float32, "f16": np.float16, "bf16": NUMPY_TYPES["bf16"], "s32": np.int32}
_STORE = {8: np.uint8, 16: np.uint16, 32: np.uint32}
_BUDGET = 256 << 20   # bytes of prepared operands per K chunk (the working set besides the output state)
_TN, _TM = 128, 128   # output tile of the fast engine: lanes per row segment, rows per parallel job
_TN_BLOCKED = 256     # lanes per row segment for K steps above 16 (passes of 8: more lanes amortise them)
FAST_PATH = True      # the exact fast path (chain.py): off only to measure or test the general path
MAX_STEP = 1 << 20    # k_step, promote_every, split_k: far past any K a GEMM here can hold (a bound keeps arithmetic sane)
LAST_STATS = {}       # the fast engine's last run: row segments on the fast path, general path, lanes redone
                      # (empty after a reference-engine or integer run)


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
    from ..blackwell.mma import K_OF_KIND, fdp_unit as bw_unit
    from ..hopper.wgmma import fdp_unit as hopper_unit
    from ..blackwell.instr import BLOCK_SCALED, InstrDescriptor

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
            from ..blackwell.mma import block_size
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


# ---- the public function

def matmul(a, b, *, c=None, arch="sm90", dtype_a, dtype_b, dtype_d="f32", out_dtype=None, k_step=None,
           promote_every=None, scales=None, split_k=1, workers=None, progress=False, kind=None, block_size_k=None,
           scale_type=None, init="zero", alpha=None, satfinite=False, engine="fast", scheduler=None, tile=None):
    """D = A B (+ C) with a tensor core's arithmetic, as a kernel chains its instructions over K.

    a (M, K), b (K, N): raw bits (integers) or arrays of the named type (ml_dtypes.bfloat16, float8_e4m3fn...;
      tf32: float32, its low 13 bits ignored). For B stored (N, K), pass its transpose (a view).
    c: (M, N) float32 / float16 accumulator (dtype_d), the chain's starting value; None: +0 registers.
    arch: "sm90" (wgmma: F = 25, fp8 F = 13 with 13 kept bits) or "sm100" (tcgen05: kind= or inferred).
    k_step: K per chain step (default: the instruction's, 8 tf32 / 16 f16, bf16 / 32 fp8, 64 mxf4*).
    promote_every: two-level accumulation: every P steps the chain (from +0) is added into f32 registers with
      one f32 FFMA (CUTLASS's FP8 accumulation, DeepGEMM); c then initialises those registers.
    scales: block-scaled sm100 kinds: (scale_a (M, K/bs), scale_b (N, K/bs)) raw scale bytes; sm90 fp8 with
      promote_every: BlockScales (or a pair of float32 arrays) applied at promotion.
    split_k: K split into this many contiguous ranges of whole steps (ceil(steps / S) each); each partial chain
      starts from +0, and the partials are added in f32, round to nearest, in K order, after c (CUTLASS's serial
      split-K order).
    alpha: f32 epilogue scale: D = f32(alpha * acc) before out_dtype (per-tensor fp8 scales, torch._scaled_mm).
    out_dtype: "f32", "f16" or "bf16" (default dtype_d), rounded to nearest even from the f32 result.
    init: "zero" (accumulator registers start at +0: Triton) or "none" (the first instruction of each chain runs
      with scale-d = 0: CUTLASS). On sm90 the two give the same bits: scale-d = 0 adds a +0 accumulator, a zero
      term like +0 registers (H100, traces/wgmma_zero_sign_sm90.npz). On sm100 they may differ only where every
      product of a chain's first step lies below the zero floor (2^-133; tcgen05 without C adds no term, not
      measured); never in a sign: every unit gives +0 for an exact zero.
    workers: threads for the fast engine (default: every core); scheduler: a dask.distributed address or Client
      to spread output tiles (`tile` = (rows, cols), default 1024 x 1024) over a cluster; progress: True for a
      bar on stderr, or a callable(done, total) in multiply-adds.
    engine: "fast" (chain.py) or "reference" (fdp.fused_dot per step; slow, the tests' oracle).

    Returns an (M, N) array of out_dtype (float32, float16, ml_dtypes.bfloat16; int32 for integer kinds).
    """
    mx = arch == "sm100" and scales is not None and not isinstance(scales, BlockScales)
    plan = plan_matmul(arch=arch, dtype_a=dtype_a, dtype_b=dtype_b, dtype_d=dtype_d, out_dtype=out_dtype,
                       k_step=k_step, promote_every=promote_every, split_k=split_k, kind=kind,
                       block_size_k=block_size_k, scale_type=scale_type, init=init, satfinite=satfinite,
                       mx_scales=mx)
    if not isinstance(engine, str) or engine not in ("fast", "reference"):
        _fail("engine", f"{show(engine)}: 'fast' or 'reference'")
    LAST_STATS.clear()
    A = _operand_bits(a, plan.dtype_a, "a")
    B = _operand_bits(b, plan.dtype_b, "b")
    M, K = A.shape
    if B.shape[0] != K:
        _fail("b", f"must have K = {K} rows (b is (K, N); pass B stored (N, K) transposed), got {B.shape}")
    N = B.shape[1]
    if K == 0 or M == 0 or N == 0:
        _fail("a" if M == 0 or K == 0 else "b", f"empty GEMM ({M} x {N} x {K})")
    C = _accumulator_values(c, (M, N), plan.dtype_d) if c is not None else None
    if alpha is not None:
        number = isinstance(alpha, (float, int, np.floating, np.integer)) and not isinstance(alpha, (bool, np.bool_))
        if plan.dtype_d == "s32" or not number or abs(alpha) >= 2.0 ** 128 or not np.isfinite(alpha):
            _fail("alpha", f"a finite f32 epilogue scale for floating-point kinds, got {show(alpha)}")
        if float(np.float32(alpha)) != float(alpha):
            _fail("alpha", f"{show(alpha)} is not an f32 value (round it first)")
        alpha = float(alpha)
    mxs = None
    ps = None
    if plan.mx_block:
        if scales is None:
            _fail("scales", f".kind::{plan.kind} is block-scaled: pass scales=(scale_a, scale_b) raw bytes")
        if not isinstance(scales, tuple) or len(scales) != 2:
            _fail("scales", "block-scaled kinds take a pair (scale_a, scale_b) of raw scale-byte arrays")
        nb = -(-K // plan.mx_block)
        mxs = (_scale_bytes(scales[0], M, nb, "scales[0]"), _scale_bytes(scales[1], N, nb, "scales[1]"))
    elif scales is not None:
        if plan.arch != "sm90" or plan.dtype_a not in _FP8:
            _fail("scales", "block scales at promotion are modelled for sm90 fp8 (DeepGEMM); sm100 mx kinds take "
                            "raw scale bytes")
        ps = _block_scales(scales, M, N, K, plan)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, (int, np.integer))
                                or not 1 <= workers <= 4096):
        _fail("workers", f"must be a positive integer (threads, at most 4096), got {show(workers)}")
    if tile is not None and scheduler is None:
        _fail("tile", "sizes the tasks of a dask cluster: pass scheduler= too")
    report = _Progress(progress, M * N * K, f"matmul {M}x{N}x{K} {plan.dtype_a}")
    if scheduler is not None:
        kw = dict(arch=arch, dtype_a=dtype_a, dtype_b=dtype_b, dtype_d=dtype_d, out_dtype=out_dtype, k_step=k_step,
                  promote_every=promote_every, split_k=split_k, kind=kind, block_size_k=block_size_k,
                  scale_type=scale_type, init=init, alpha=alpha, satfinite=satfinite, engine=engine,
                  workers=workers or 1)
        out = _distributed(scheduler, tile, A, B, c, scales, plan, kw, report)
        report.done()
        return out
    if plan.unit is None:
        out = _integer_chain(A, B, C, plan)
    elif engine == "reference" or plan.kind in ("mxf4", "mxf4nvf4"):
        out = _reference_chain(A, B, C, plan, mxs, ps, alpha, report)
    else:
        out = _fast_chain(A, B, C, plan, mxs, ps, alpha, workers, report)
    report.done()
    return out


# ---- a dask cluster: output tiles as tasks

def _distributed(scheduler, tile, A, B, c, scales, plan, kw, report):
    """D computed as (rows x cols) tiles on a dask cluster, each task one matmul over the whole K."""
    from .distributed import run_tiles, tile_shape
    tm, tn = tile_shape(tile)
    bs = scales if isinstance(scales, BlockScales) else \
        BlockScales(*scales) if (scales is not None and not plan.mx_block) else None
    if bs is not None and (tm % bs.a_block or tn % bs.b_block):
        _fail("tile", f"({tm}, {tn}) must be whole scale blocks ({bs.a_block} rows of A, {bs.b_block} columns of B)")
    K = A.shape[1]

    def tile_args(r0, r1, c0, c1):
        if plan.mx_block:  # mx scale bytes: per row of A, per column of B
            sc = (scales[0][r0:r1], scales[1][c0:c1])
        elif bs is not None:
            sc = BlockScales(bs.a[r0 // bs.a_block:-(-r1 // bs.a_block)], bs.b[c0 // bs.b_block:-(-c1 // bs.b_block)],
                             bs.a_block, bs.b_block, bs.block_k)
        else:
            sc = None
        return ((np.ascontiguousarray(A[r0:r1]), np.ascontiguousarray(B[:, c0:c1])),
                dict(kw, c=None if c is None else np.ascontiguousarray(c[r0:r1, c0:c1]), scales=sc))

    out = np.empty((A.shape[0], B.shape[1]), _OUT[plan.out_dtype])
    return run_tiles(scheduler, matmul, out, (tm, tn), tile_args,
                     lambda r0, r1, c0, c1: report.add((r1 - r0) * (c1 - c0) * K))


# ---- shared pieces: step ranges, epilogue

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


def _f32_add(x, y):
    """f32 addition, round to nearest even (FADD), elementwise on float64 arrays of f32 values."""
    with np.errstate(invalid="ignore", over="ignore"):  # inf + -inf is NaN, overflow is inf: as FADD
        return (x.astype(np.float32) + y.astype(np.float32)).astype(np.float64)


def _epilogue(acc, plan, alpha, fast=False):
    """Accumulator values (float64 holding f32/f16 values) -> the out_dtype array: alpha as one f32 multiply
    (round to nearest), then one rounding to out_dtype (nearest even), NaN as the canonical NaN. The reference
    engine converts with formats.encode; the fast one with numpy/ml_dtypes casts (IEEE round to nearest even
    from an exact f32), then canonical NaNs; tests hold the two to the same bits."""
    with np.errstate(invalid="ignore", over="ignore"):  # IEEE: inf * 0 is NaN, overflow is inf
        if alpha is not None:
            acc = (np.float32(alpha) * acc.astype(np.float32)).astype(np.float64)  # f32 multiply, RN
        return _convert(acc, plan.out_dtype, fast)


def _convert(acc, out, fast):
    if not fast:
        return encode(acc, out, "rne").view(_OUT[out])  # exact when out is the accumulator's type
    res = acc.astype(np.float32).astype(_OUT[out])
    nan = np.isnan(acc)
    if nan.any():
        res.view(_STORE[8 * res.itemsize])[nan] = get_format(out).nan_bits
    return res


class _Progress:
    """progress=True: a one-line bar on stderr (at most ~4 updates a second); a callable gets (done, total)."""

    def __init__(self, progress, total, label):
        self.cb = progress if callable(progress) else None
        flag = isinstance(progress, (bool, np.bool_))
        self.bar = flag and bool(progress)
        if not (flag or self.cb or progress is None):  # a flag is a bool (validate.py), never 0 / 1 / "yes"
            _fail("progress", f"True, False or a callable(done, total), got {show(progress)}")
        self.total, self.label, self.done_n = max(1, total), label, 0
        self.t0 = self.last = time.perf_counter()

    def add(self, n):
        self.done_n += n
        if self.cb:
            self.cb(self.done_n, self.total)
        now = time.perf_counter()
        if self.bar and (now - self.last > 0.25 or self.done_n >= self.total):
            self.last = now
            f = min(1.0, self.done_n / self.total)
            el = now - self.t0
            eta = el / f - el if f > 0 else float("nan")
            rate = self.done_n / el if el > 0 else 0.0
            sys.stderr.write(f"\r{self.label} [{'#' * int(30 * f):<30}] {100 * f:5.1f}%  {rate / 1e9:.2f} G MAC/s  "
                             f"{el:.1f} s, ETA {eta:.1f} s")
            sys.stderr.flush()

    def done(self):
        if self.bar:
            sys.stderr.write("\n")
            sys.stderr.flush()


# ---- integer kinds: exact, wrapping mod 2^32 (or .satfinite clamping every step's exact sum)

def _integer_chain(A, B, C, plan):
    from ..arith.formats import decode_int
    M, K = A.shape
    acc = C.astype(np.int64) if C is not None else np.zeros((M, B.shape[1]), np.int64)
    step = plan.ks if plan.satfinite else max(plan.ks, 4096)
    for k0 in range(0, K, step):  # |partial| < 2^(14 + 12) per block: float64 matmul of integers is exact
        a = decode_int(A[:, k0:k0 + step], plan.dtype_a).astype(np.float64)
        b = decode_int(B[k0:k0 + step], plan.dtype_b).astype(np.float64)
        acc = acc + (a @ b).astype(np.int64)
        if plan.satfinite:
            acc = np.clip(acc, -(1 << 31), (1 << 31) - 1)
        else:
            acc = (acc + (1 << 31)) % (1 << 32) - (1 << 31)
    return acc.astype(np.int32)


# ---- reference engine: one fdp call per step over the whole output

def _reference_chain(A, B, C, plan, mxs, ps, alpha, report):
    from ..blackwell.mma import _fold_scale
    M, K = A.shape
    N = B.shape[1]
    ks, unit = plan.ks, plan.unit
    steps = -(-K // ks)
    Ap = np.zeros((M, steps * ks), A.dtype)
    Ap[:, :K] = A
    Bp = np.zeros((steps * ks, N), B.dtype)
    Bp[:K] = B
    acc_np = _OUT[plan.dtype_d]
    partials = []
    for s0, s1 in _split_ranges(steps, plan):
        chain_c = C if (plan.split_k == 1 and not plan.promote) else None
        acc = None if chain_c is None else chain_c.astype(acc_np)
        main = C.copy() if (plan.promote and plan.split_k == 1 and C is not None) else np.zeros((M, N))
        for g, s in enumerate(range(s0, s1)):
            if acc is None and plan.init == "zero":
                acc = np.zeros((M, N), acc_np)
            Cd = decode_operand(acc.view(_STORE[8 * acc.itemsize]), plan.dtype_d) if acc is not None else None
            Ad = decode_operand(Ap[:, s * ks:(s + 1) * ks], plan.dtype_a)
            Bd = decode_operand(np.ascontiguousarray(Bp[s * ks:(s + 1) * ks].T), plan.dtype_b)
            if plan.kind in ("mxf4", "mxf4nvf4"):
                bs = plan.mx_block
                b0 = s * ks // bs
                nb = -(-ks // bs)
                SA = np.repeat(decode_operand(mxs[0][:, b0:b0 + nb], plan.scale_type), bs // 16, axis=1)
                SB = np.repeat(decode_operand(mxs[1][:, b0:b0 + nb], plan.scale_type), bs // 16, axis=1)
                bits = grouped_dot(Ad, Bd, Cd, SA, SB, unit, 16)
            else:
                if plan.mx_block:  # one ue8m0 scale per element block: fold 2^e into the elements
                    for lo in range(0, ks, plan.mx_block):
                        bidx = (s * ks + lo) // plan.mx_block
                        sl = slice(lo, lo + plan.mx_block)
                        Ad[:, sl] = _fold_scale(Ad[:, sl], mxs[0][:, bidx:bidx + 1])
                        Bd[:, sl] = _fold_scale(Bd[:, sl], mxs[1][:, bidx:bidx + 1])
                bits = fused_dot(Ad, Bd, Cd, unit)
            acc = bits.view(acc_np)
            report.add(M * N * (min((s + 1) * ks, K) - s * ks))
            if plan.promote and ((g + 1) % plan.promote == 0 or s == s1 - 1):
                if ps is None:
                    main = _f32_add(main, acc.astype(np.float64))
                else:
                    kb = s // plan.promote
                    sc = (ps[0][:, kb:kb + 1].astype(np.float32) * ps[1][kb][None, :].astype(np.float32))
                    main = _fma_f32_exact(sc.astype(np.float64), acc.astype(np.float64), main)
                acc = None
        partials.append(main if plan.promote else acc.astype(np.float64))
    if plan.split_k == 1:
        total = partials[0]
    else:
        total = C.copy() if C is not None else None
        for p in partials:
            total = p if total is None else _f32_add(total, p)
    return _epilogue(total, plan, alpha)


def _fma_f32_exact(s, t, m):
    """f32(s * t + m) rounded once to nearest even, elementwise, in exact rationals (the reference's FFMA)."""
    out = np.empty(np.broadcast(s, t, m).shape)
    for idx, (x, y, z) in enumerate(np.broadcast(s, t, m)):
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
            out.flat[idx] = float(np.float32(x * y + z))
            continue
        q = Fraction(x) * Fraction(y) + Fraction(z)
        if q == 0:
            out.flat[idx] = float(np.float32(x * y + z))  # exact zero: IEEE sign rule (x * y is exact)
            continue
        bits = round_pack(*split_fraction(q), 8, 23, 127, IEEE, 0, RN, False, OVF_IEEE)  # f32, RN
        out.flat[idx] = float(np.uint32(bits).view(np.float32))
    return out


# ---- fast engine

def _unit_consts(unit):
    fmt = get_format(unit.out_format)
    emin, emax = 1 - fmt.bias, fmt.bias
    keep = unit.keep_bits
    return dict(F=unit.frac_bits, zero_exp=unit.zero_exp, keep=keep, emin=emin, emax=emax,
                rne=unit.rounding == 0, nan_value=np.nan, signed_zero=bool(unit.signed_zero))


@functools.lru_cache(maxsize=None)
def _decode_tables(dtype):
    """(shift, values, alignments, classes) of every pattern of an operand format, from fdp.decode_operand (the
    unit's own decoder): value = +-sig * 2^lsb exactly in float64, inf/NaN as float64's, alignment = the
    implicit bit's exponent (emin for subnormals), class 0 zero / 1 finite / 2 inf or NaN."""
    fmt = get_format(dtype)
    n = 1 << (fmt.bits - fmt.shift)
    d = decode_operand(np.arange(n, dtype=np.int64) << fmt.shift, dtype)
    cls = d[:, 0]
    val = np.ldexp(d[:, 2].astype(np.float64), d[:, 3])
    val = np.where(d[:, 1] == 1, -val, val)
    val = np.where(cls == 2, np.where(d[:, 1] == 1, -np.inf, np.inf), val)
    val = np.where(cls == 3, np.nan, val)
    al = np.where(cls == 1, d[:, 4], chain.NO_TERM).astype(np.int32)
    return fmt.shift, val, al, np.minimum(cls, 2).astype(np.uint8)


class _Prepared:
    """Buffers of one operand's prepared K chunk (rows, up to `steps` chain steps), reused from chunk to chunk."""

    def __init__(self, R, steps, ks):
        self.val = np.empty((R, steps * ks))
        self.al = np.empty((R, steps * ks), np.int32)
        self.lo = np.empty((R, steps), np.int32)
        self.hi = np.empty((R, steps), np.int32)
        self.zero = np.empty((R, steps), np.bool_)
        self.spec = np.empty((R, steps), np.bool_)

    def fill(self, bits, dtype, ks, steps, mx, mx_block):
        """Decode rows of raw bits (R, Kc <= steps * ks) for `steps` chain steps; mx: their block-scale bytes."""
        R = bits.shape[0]
        if mx is not None:
            se = decode_operand(mx, "ue8m0")
            sexp = np.ascontiguousarray(se[..., 3]).astype(np.int32)
            snan = np.ascontiguousarray(se[..., 0] == 3)
        else:
            sexp, snan = np.zeros((R, 0), np.int32), np.zeros((R, 0), np.bool_)
        chain.prepare_rows(np.ascontiguousarray(bits), *_decode_tables(dtype), ks, steps, sexp, snan,
                           max(mx_block, 1), self.val, self.al, self.lo, self.hi, self.zero, self.spec)
        return self


def _fast_chain(A, B, C, plan, mxs, ps, alpha, workers, report):
    unit = plan.unit
    uc = _unit_consts(unit)
    M, K = A.shape
    N = B.shape[1]
    ks = plan.ks
    steps = -(-K // ks)
    tn = min(_TN if ks <= 16 else _TN_BLOCKED, -(-N // 8) * 8)
    T = -(-N // tn)
    fa, fb = get_format(plan.dtype_a), get_format(plan.dtype_b)
    thr_p = unit.frac_bits - fa.man_bits - fb.man_bits
    # a chain (re)starts from +0 registers (init "zero") or from an instruction without C, which a unit that adds a
    # +0 accumulator then (sm90: traces/wgmma_zero_sign_sm90.npz) computes the same way
    init_cal = unit.zero_exp if (plan.init == "zero" or unit.zero_c_when_absent) else chain.NO_TERM
    # K chunk: whole steps, whole promotion intervals and whole scale blocks, prepared operands within budget
    unit_k = ks * _unit_steps(plan)
    per_k = 13 * M + 26 * T * tn  # bytes per K: A and B rows decoded (value, alignment, flags), B's tile copy
    chunk = max(unit_k, (_BUDGET // per_k) // unit_k * unit_k)
    ps_a = ps[0] if ps is not None else np.zeros((M, 0))
    ps_b = np.zeros((0, T * tn))
    if ps is not None:
        ps_b = np.zeros((ps[1].shape[0], T * tn))
        ps_b[:, :N] = ps[1]
    cst = min(chunk, steps * ks) // ks  # steps per chunk
    bufs_a, bufs_b = _Prepared(M, cst, ks), _Prepared(N, cst, ks)
    bval = np.empty((T, cst * ks, tn))
    bal = np.empty((T, cst * ks, tn), np.int32)
    bzf = np.empty((T, cst, tn), np.int32)
    bspec = np.empty((T, cst, tn), np.bool_)
    blo = np.empty((T, cst), np.int32)
    bhi = np.empty((T, cst), np.int32)
    bzany = np.empty((T, cst), np.bool_)
    bsany = np.empty((T, cst), np.bool_)
    LAST_STATS.clear()
    njobs = T * -(-M // _TM)
    threads = min(njobs, int(workers) if workers is not None else _default_workers())
    pool = ThreadPoolExecutor(threads) if threads > 1 else None
    try:
        total = C.copy() if (C is not None and plan.split_k > 1) else None
        for s0, s1 in _split_ranges(steps, plan):
            acc = np.zeros((T, M, tn))
            cal = np.full((T, M, tn), init_cal, np.int32)
            main = np.zeros((T, M, tn))
            chain_c = C is not None and plan.split_k == 1
            if chain_c:
                tiled = _to_tiles(C, T, tn)
                if plan.promote:
                    main[:] = tiled
                else:
                    acc[:] = tiled
                    cal[:] = _cal_of(tiled, uc)
            backoff = np.zeros((T, M), np.int32)
            stats = np.zeros((njobs, 3), np.int64)
            g_last = s1 - s0 - 1
            for c0 in range(s0 * ks, s1 * ks, chunk):
                c1 = min(s1 * ks, c0 + chunk)
                nst = (c1 - c0) // ks
                kb_a = mxs[0][:, c0 // plan.mx_block:-(-c1 // plan.mx_block)] if mxs else None
                kb_b = mxs[1][:, c0 // plan.mx_block:-(-c1 // plan.mx_block)] if mxs else None
                pa = bufs_a.fill(A[:, c0:min(c1, K)], plan.dtype_a, ks, nst, kb_a, plan.mx_block)
                pb = bufs_b.fill(B[c0:min(c1, K)].T, plan.dtype_b, ks, nst, kb_b, plan.mx_block)
                chain.tile_columns(pb.val, pb.al, pb.zero, pb.spec, pb.lo, pb.hi, N, nst, ks, tn, unit.zero_exp,
                                   bval, bal, bzf, bspec, blo, bhi, bzany, bsany)
                g0 = c0 // ks - s0
                kb0 = s0 // plan.promote if plan.promote else 0
                args = (ks, pa.val, pa.al, pa.lo, pa.hi, pa.zero, pa.spec, bval, bal, bzf, bspec, blo, bhi, bzany,
                        bsany, acc, cal, main, backoff, 0, M, N, _TM, nst, g0, g_last, plan.promote, init_cal, ps_a,
                        ps_b, kb0, uc["F"], uc["zero_exp"], uc["keep"], uc["emin"], uc["emax"], uc["rne"],
                        uc["nan_value"], uc["signed_zero"], thr_p, FAST_PATH, stats)
                _run_jobs(pool, threads, njobs, args)
                report.add(M * N * (min(c1, K) - c0))
            st = stats.sum(axis=0)
            for key, v in zip(("fast", "general", "redone"), st):
                LAST_STATS[key] = LAST_STATS.get(key, 0) + int(v)
            part = _from_tiles(main if plan.promote else acc, M, N)
            total = part if total is None else _f32_add(total, part)
    finally:
        if pool is not None:
            pool.shutdown()
    return _epilogue(total, plan, alpha, fast=True)


def _default_workers():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _run_jobs(pool, threads, njobs, args):
    """The job kernel over [0, njobs) in `threads` contiguous ranges (nogil: the threads run in parallel)."""
    if pool is None:
        chain.chain_jobs(0, njobs, *args)
        return
    parts = min(njobs, 4 * threads)  # a few ranges per thread evens out unequal jobs
    edges = [njobs * i // parts for i in range(parts + 1)]
    for f in [pool.submit(chain.chain_jobs, edges[i], edges[i + 1], *args) for i in range(parts)]:
        f.result()


def _to_tiles(X, T, tn):
    M, N = X.shape
    out = np.zeros((T, M, tn))
    pad = np.zeros((M, T * tn))
    pad[:, :N] = X
    out[:] = pad.reshape(M, T, tn).transpose(1, 0, 2)
    return out


def _from_tiles(X, M, N):
    T, _, tn = X.shape
    return np.ascontiguousarray(X.transpose(1, 0, 2).reshape(M, T * tn)[:, :N])


def _cal_of(v, uc):
    """Alignment exponents of accumulator values (chain._align_of, vectorised in numpy)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.frexp(v)[1].astype(np.int64) - 1
    e = np.maximum(e, uc["emin"])
    e = np.where(v == 0, uc["zero_exp"], e)
    e = np.where(np.isfinite(v), e, chain.SPECIAL_CAL)
    return e.astype(np.int32)
