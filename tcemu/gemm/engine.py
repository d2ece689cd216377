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

Two engines give the same bits (tests/test_matmul.py): "reference" (gemm/reference.py) chains fdp.fused_dot /
fdp.grouped_dot one step at a time over the whole output; "fast" (this module, on chain.py's kernels) is the same
arithmetic on exact float64 values, in output tiles on threads (nogil numba kernels), with a bounded working set
independent of K. gemm/plan.py checks the arguments and says how the GEMM is computed.
"""
import functools
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..arith import chain
from ..core.validate import show
from ..arith.fdp import decode_operand
from ..arith.formats import get_format
from .plan import (_FP8, _OUT, BlockScales, _accumulator_values, _block_scales, _fail, _operand_bits, _scale_bytes,
                   _split_ranges, _unit_steps, plan_matmul)
from .reference import _epilogue, _f32_add, _integer_chain, _reference_chain

__all__ = ["matmul", "BlockScales", "plan_matmul"]

_BUDGET = 256 << 20   # bytes of prepared operands per K chunk (the working set besides the output state)
_TN, _TM = 128, 128   # output tile of the fast engine: lanes per row segment, rows per parallel job
_TN_BLOCKED = 256     # lanes per row segment for K steps above 16 (passes of 8: more lanes amortise them)
FAST_PATH = True      # the exact fast path (chain.py): off only to measure or test the general path
SUM32 = True          # chain.py's 32-bit sums where exact (sum32_ok): off only to measure or test the float64 sums
LAST_STATS = {}       # the fast engine's last run: row segments on the fast path, general path, lanes redone, and
#                       general row segments summed in 32 bits (chain._sums32); empty after a reference-engine or
#                       integer run




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
    from .distributed import run_tiles, tile_shape  # optional dependency: dask.distributed, only with scheduler=
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
    """Buffers of one operand's prepared K chunk (rows, up to `steps` chain steps), reused from chunk to chunk;
    values as `vtype` (float32 for the 32-bit sums: sum32_ok)."""

    def __init__(self, R, steps, ks, vtype):
        self.val = np.empty((R, steps * ks), vtype)
        self.al = np.empty((R, steps * ks), np.int16)  # chain.NO_AL for zero and special elements
        self.lo = np.empty((R, steps), np.int32)
        self.hi = np.empty((R, steps), np.int32)
        self.zero = np.empty((R, steps), np.bool_)
        self.spec = np.empty((R, steps), np.bool_)

    def fill(self, bits, dtype, ks, steps, mx, mx_block):
        """Decode rows of raw bits (R, Kc <= steps * ks) for `steps` chain steps; mx: their block-scale bytes."""
        chain.prepare_rows(np.ascontiguousarray(bits), *_decode_tables(dtype), ks, steps, *_scales(mx, bits.shape[0]),
                           max(mx_block, 1), self.val, self.al, self.lo, self.hi, self.zero, self.spec)
        return self


def _scales(mx, R):
    """(exponents (R, blocks) int32, NaN flags) of rows' ue8m0 block-scale bytes mx, or empty arrays (none)."""
    if mx is None:
        return np.zeros((R, 0), np.int32), np.zeros((R, 0), np.bool_)
    se = decode_operand(mx, "ue8m0")
    return np.ascontiguousarray(se[..., 3]).astype(np.int32), np.ascontiguousarray(se[..., 0] == 3)


def sum32_ok(plan, scaled):
    """Whether chain.py's 32-bit sums (_sums32) are exact for the plan's unit wherever a row's bounds allow them:
    unscaled values (a block scale may take them past float32's range), products of at most 24 significant bits,
    steps (ks) of whole passes of 8, and ks terms each below 2^(F + 2) summing below 2^31."""
    fa, fb = get_format(plan.dtype_a), get_format(plan.dtype_b)
    ks = plan.ks
    return not scaled and fa.man_bits + fb.man_bits + 2 <= 24 and ks % 8 == 0 and \
        ks << (plan.unit.frac_bits + 2) <= 1 << 31


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
    use32 = sum32_ok(plan, mxs is not None)
    vtype = np.float32 if use32 else np.float64
    unit_k = ks * _unit_steps(plan)
    vbytes = np.dtype(vtype).itemsize
    per_k = (vbytes + 5) * (M + T * tn)  # bytes per K: A's rows and B's tiles decoded (value, alignment, flags)
    chunk = max(unit_k, (_BUDGET // per_k) // unit_k * unit_k)
    ps_a = ps[0] if ps is not None else np.zeros((M, 0))
    ps_b = np.zeros((0, T * tn))
    if ps is not None:
        ps_b = np.zeros((ps[1].shape[0], T * tn))
        ps_b[:, :N] = ps[1]
    cst = min(chunk, steps * ks) // ks  # steps per chunk
    bufs_a = _Prepared(M, cst, ks, vtype)
    bval = np.empty((T, cst * ks, tn), vtype)
    bal = np.empty((T, cst * ks, tn), np.int16)
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
            stats = np.zeros((njobs, 4), np.int64)
            g_last = s1 - s0 - 1
            for c0 in range(s0 * ks, s1 * ks, chunk):
                c1 = min(s1 * ks, c0 + chunk)
                nst = (c1 - c0) // ks
                kb_a = mxs[0][:, c0 // plan.mx_block:-(-c1 // plan.mx_block)] if mxs else None
                kb_b = mxs[1][:, c0 // plan.mx_block:-(-c1 // plan.mx_block)] if mxs else None
                pa = bufs_a.fill(A[:, c0:min(c1, K)], plan.dtype_a, ks, nst, kb_a, plan.mx_block)
                chain.prepare_tiles(np.ascontiguousarray(B[c0:min(c1, K)].T), *_decode_tables(plan.dtype_b), ks, nst,
                                    *_scales(kb_b, N), max(plan.mx_block, 1), tn, unit.zero_exp, bval, bal, bzf,
                                    bspec, blo, bhi, bzany, bsany)
                g0 = c0 // ks - s0
                kb0 = s0 // plan.promote if plan.promote else 0
                args = (ks, pa.val, pa.al, pa.lo, pa.hi, pa.zero, pa.spec, bval, bal, bzf, bspec, blo, bhi, bzany,
                        bsany, acc, cal, main, backoff, 0, M, N, _TM, nst, g0, g_last, plan.promote, init_cal, ps_a,
                        ps_b, kb0, uc["F"], uc["zero_exp"], uc["keep"], uc["emin"], uc["emax"], uc["rne"],
                        uc["nan_value"], uc["signed_zero"], thr_p, FAST_PATH, use32 and SUM32, stats)
                _run_jobs(pool, threads, njobs, args)
                report.add(M * N * (min(c1, K) - c0))
            st = stats.sum(axis=0)
            for key, v in zip(("fast", "general", "redone", "sum32"), st):
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
