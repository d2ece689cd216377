"""Throughput of tcemu's hot paths, each printed next to a reference measured in the same run.

wgmma: fused dot products per second through the whole tcemu.wgmma() call (descriptor decode,
address resolution, shared-memory gather, operand decode, engine) for m64n256 bf16 (K=16), e4m3
(K=32) and tf32 (K=8) with a nonzero f32 accumulator, and the time of one m64n256k16 bf16 wgmma;
next to a numpy float64 matmul of the same shape (same run) and the MMA-Sim anchor measured on this
machine class (shared/notes/hardware-leads.md: 9,100 bf16 dot products/s, 1.77 s per m64n256k16).

    python scripts/bench.py

operand_addresses: element addresses per second for a 128x64 bf16 K-major 128B-swizzled operand
(one call = 8192 addresses, Python overhead included), single thread, after JIT; the reference is
the plain-Python canonical-layout oracle of the tests (CuTe's pycute layout algebra when installed).
JIT warm-up: a fresh process importing tcemu and resolving one operand, with an empty numba cache
(cold compile) and with the cache it leaves behind (warm start).

tcemu.matmul: multiply-adds per second of a whole bf16 GEMM (bit-exact, fast engine) on one core and on every
core (workers=), for data that misses the exact fast path (standard normal: terms are truncated) and data that
takes it (+-[1, 2): no term truncated); fp8 plain and promoted every 4 steps, tf32; the reference engine (fdp
per step); each next to numpy's float64 BLAS on the same shape in the same run (one core in this process,
BLAS threads pinned to 1; every core in a subprocess). The 8192^3 bf16 plan times one 1024 x 1024 x 8192
output tile (one dask task) on one core. `--quick` skips the 8192 tile and shrinks the GEMMs.

Grids over dask: Triton's bf16 matmul at 1024^3 on the PTX interpreter in one process, and spread over a dask
LocalCluster of 4 worker processes (Module.launch(scheduler=)). `--dask` prints only this figure.
"""
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "support"))
sys.path.insert(0, os.path.join(HERE, ".."))   # the repository's tcemu, installed or not (interp_scaling.py alike)
os.environ.setdefault("NUMBA_NUM_THREADS", "1")
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # one-core BLAS reference
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import tcemu  # noqa: E402


def rate(fn, items, min_time=0.4, repeats=5):
    """Median over `repeats` timed windows of items processed per second."""
    fn()
    rates = []
    for _ in range(repeats):
        n, t0 = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - t0) < min_time:
            fn()
            n += 1
        rates.append(n * items / elapsed)
    return float(np.median(rates))


def first_call_seconds(cache_dir):
    code = ("import time; t = time.perf_counter(); import tcemu; "
            "tcemu.operand_addresses(0x4000004000010040, rows=128, k=64, dtype='bf16'); "
            "print(time.perf_counter() - t)")
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    return float(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                                text=True).stdout)


MMASIM_DOTS_PER_S, MMASIM_WGMMA_S = 9_100, 1.77  # anchor: hardware-leads.md, "Speed anchor"


def wgmma_bench():
    import ml_dtypes

    from tcemu.layout.smem import SharedMemory
    from tcemu import wgmma
    rng = np.random.default_rng(0)
    rows = []
    for dtype, np_type, k in (("bf16", ml_dtypes.bfloat16, 16), ("e4m3", ml_dtypes.float8_e4m3fn, 32),
                              ("tf32", np.float32, 8)):
        a = rng.standard_normal((64, k)).astype(np_type)
        b = rng.standard_normal((256, k)).astype(np_type)
        c = rng.standard_normal((64, 256)).astype(np.float32)
        smem = SharedMemory()
        da = tcemu.GmmaDescriptor(0x400, 16, 1024, 0, "128B")
        db = tcemu.GmmaDescriptor(0x2400, 16, 1024, 0, "128B")
        smem.write_operand(da, a, dtype=dtype)
        smem.write_operand(db, b, dtype=dtype)
        call = lambda: wgmma(smem, da, db, shape=f"m64n256k{k}", dtype_a=dtype, dtype_b=dtype, dtype_d="f32", c=c)
        dots = rate(call, 64 * 256)
        a64, b64, c64 = a.astype(np.float64), b.astype(np.float64).T, c.astype(np.float64)
        ref = rate(lambda: a64 @ b64 + c64, 64 * 256)
        rows.append((dtype, k, dots, ref))
    return rows


def tcgen05_bench():
    """tcgen05.mma M=128 N=256 through the whole call: f16 (K=16), f8f6f4 e4m3 x e2m1 (K=32, padded fp4),
    mxf4nvf4 (K=64, ue4m3 scales, grouped engine); the numpy reference is a float64 matmul of the shape."""
    from tcemu import InstrDescriptor, SharedMemory, UmmaDescriptor, tcgen05_mma
    rng = np.random.default_rng(0)
    rows = []
    for kind, ta, tb, k in (("f16", "f16", "f16", 16), ("f8f6f4", "e4m3", "e2m1", 32), ("mxf4nvf4", "e2m1", "e2m1", 64)):
        smem = SharedMemory("sm100")
        da = UmmaDescriptor(start_address=0x400, lbo=16, sbo=1024, swizzle="128B", version=1)
        db = UmmaDescriptor(start_address=0x10400, lbo=16, sbo=1024, swizzle="128B", version=1)
        width = {"f16": 16, "e4m3": 8}.get
        smem.write_operand(da, rng.integers(0, 1 << (width(ta) or 4), (128, k)) & 0x3BFF, dtype=ta,
                           padded=kind == "f8f6f4")
        smem.write_operand(db, rng.integers(0, 1 << (width(tb) or 4), (256, k)) & 0x3BFF, dtype=tb,
                           padded=kind == "f8f6f4")
        c = rng.standard_normal((128, 256)).astype(np.float32)
        extra = {}
        if kind == "mxf4nvf4":
            d = InstrDescriptor(kind, ta, tb, m=128, n=256, scale_type="ue4m3")
            extra = dict(scale_a=rng.integers(0x30, 0x40, (128, 4)), scale_b=rng.integers(0x30, 0x40, (256, 4)))
        else:
            d = InstrDescriptor(kind, ta, tb, m=128, n=256)
        dots = rate(lambda: tcgen05_mma(smem, da, db, d, c=c, **extra), 128 * 256)
        a64, b64, c64 = rng.standard_normal((128, k)), rng.standard_normal((k, 256)), c.astype(np.float64)
        ref = rate(lambda: a64 @ b64 + c64, 128 * 256)
        rows.append((f"{kind} {ta}x{tb} K={k}", dots, ref))
    return rows


def banks_bench():
    from tcemu.layout.banks import bank_conflicts, wavefronts_batch
    rng = np.random.default_rng(0)
    rows = []
    for op, width in (("ld.shared.b32", 4), ("st.shared.v4.b32", 16), ("ldmatrix.x4", 16)):
        addrs = rng.integers(0, 1024, (100_000, 32)) * width
        batch = rate(lambda: wavefronts_batch(op, addrs), addrs.shape[0])
        single = rate(lambda: bank_conflicts(op, addrs[0]), 1)
        rows.append((op, batch, single))
    return rows


def kernel_bench():
    """Triton's sm_90a bf16 matmul (tests/fixtures/ptx/matmul_bf16: 128x256x64 tiles, 8 warps, 3 stages) at
    512x512x512 on the PTX interpreter, one core: total seconds, the part inside the wgmma model, and warp
    instructions per second; next to numpy float64's matmul of the same shape."""
    from tcemu.traces.inputs import input_bits
    from tcemu.frontends.triton import run_compiled
    meta, mod = _fixture("matmul_bf16")
    M = N = K = 512
    a, b = input_bits("bf16", (M, K), 1, 0), input_bits("bf16", (K, N), 1, 1)
    vals = {"a_ptr": a, "b_ptr": b, "c_ptr": np.zeros((M, N), np.uint16), "M": M, "N": N, "K": K,
            "stride_am": K, "stride_bk": N, "stride_cm": N}
    run_compiled(mod, meta, dict(vals, c_ptr=np.zeros((M, N), np.uint16)))  # compile + JIT warm-up
    best, alone, c = None, None, None
    for _ in range(3):   # lock-step (the default) and warps one at a time, alternating
        c = np.zeros((M, N), np.uint16)
        st = run_compiled(mod, meta, dict(vals, c_ptr=c))
        best = st if best is None or st["seconds"] < best["seconds"] else best
        st = run_compiled(mod, meta, dict(vals, c_ptr=np.zeros((M, N), np.uint16)), lockstep=False)
        alone = st if alone is None or st["seconds"] < alone["seconds"] else alone
    from tcemu import matmul
    import ml_dtypes
    ref = matmul(a.view(ml_dtypes.bfloat16), b.view(ml_dtypes.bfloat16), dtype_a="bf16", dtype_b="bf16",
                 out_dtype="f16", workers=1)   # the kernel's C: accumulators from +0, rounded to f16
    t = time.perf_counter()
    matmul(a.view(ml_dtypes.bfloat16), b.view(ml_dtypes.bfloat16), dtype_a="bf16", dtype_b="bf16", out_dtype="f16",
           workers=1)
    best["matmul_seconds"] = time.perf_counter() - t
    best["alone_seconds"] = alone["seconds"]
    best["same"] = np.array_equal(ref.view(np.uint16), c)
    af, bf = np.random.rand(M, K), np.random.rand(K, N)
    t = time.perf_counter()
    for _ in range(10):
        af @ bf
    return best, (time.perf_counter() - t) / 10


def dask_bench(n=1024, workers=4):
    """Triton's sm_90a bf16 matmul (the kernel_bench fixture) at n^3 on the PTX interpreter: one process, then its
    clusters spread over a dask LocalCluster of `workers` one-thread worker processes (Module.launch(scheduler=),
    tcemu/ptx/distribute.py), each after a warm-up launch (compile + JIT, in every worker); the outputs must be
    bit-identical. Returns (local stats, distributed stats, identical)."""
    import distributed
    from tcemu.traces.inputs import input_bits
    from tcemu.frontends.triton import run_compiled
    meta, mod = _fixture("matmul_bf16")

    def run(M, N, K, **kw):
        a, b = input_bits("bf16", (M, K), 1, 0), input_bits("bf16", (K, N), 1, 1)
        c = np.zeros((M, N), np.uint16)
        st = run_compiled(mod, meta, {"a_ptr": a, "b_ptr": b, "c_ptr": c, "M": M, "N": N, "K": K, "stride_am": K,
                                      "stride_bk": N, "stride_cm": N}, **kw)
        return c, st
    run(128, 256, 64)   # compile + JIT warm-up
    cpu = time.thread_time()
    want, local = run(n, n, n)
    local["cpu_seconds"] = time.thread_time() - cpu
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as lc, distributed.Client(lc) as client:
        run(128 * workers, 256, 64, scheduler=client)   # one CTA per worker: each compiles and warms up
        got, dist = run(n, n, n, scheduler=client)
    return local, dist, np.array_equal(want, got)


def barrier_bench(ctas=8, threads=1024):
    """tests/fixtures/ptx/serial_barrier.ptx (one thread at a time folds itself into a shared word between
    bar.syncs: the loop of CUTLASS example 88's reference_abs_diff) over `ctas` CTAs of `threads` threads on the PTX
    interpreter, one core: seconds in lock-step and with warps one at a time (lockstep=False), and whether every
    CTA's word is the fold computed here."""
    import tcemu.ptx as tp
    mod = tp.load(os.path.join(HERE, "..", "tests", "fixtures", "ptx", "serial_barrier.ptx"))
    acc = 7
    for t in range(threads):
        acc = (acc * 3 + t) & 0xFFFFFFFF
    out = {}
    for lockstep in (True, False):
        words = np.zeros(ctas, np.uint32)
        t = time.perf_counter()
        mod.launch("serial", grid=ctas, block=threads, args=[words], lockstep=lockstep)
        out[lockstep] = (time.perf_counter() - t, bool((words == acc).all()))
    return out


MANY_CTAS = """.version 8.3
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{
 .reg .b32 %r<4>; .reg .b64 %rd<4>;
 ld.param.u64 %rd1, [out]; cvta.to.global.u64 %rd1, %rd1;
 mov.u32 %r1, %ctaid.x; mov.u32 %r2, %tid.x; shl.b32 %r3, %r1, 5; add.u32 %r1, %r3, %r2;
 mul.wide.u32 %rd2, %r1, 4; add.s64 %rd3, %rd1, %rd2;
 st.global.u32 [%rd3], %r1;
 ret;
}
"""


def many_ctas_bench(ctas):
    """`ctas` one-warp CTAs, each thread storing its global index (an elementwise kernel's shape: issue 24's grid
    of 2^20 trivial CTAs), on the PTX interpreter, one core: seconds in lock-step and with warps one at a time,
    and whether every word is right."""
    import tcemu.ptx as tp
    mod = tp.load(MANY_CTAS)
    mod.launch("k", grid=8, block=32, args=[np.zeros(256, np.uint32)])   # compile
    out = {}
    for lockstep in (True, False):
        words = np.zeros(ctas * 32, np.uint32)
        t = time.perf_counter()
        mod.launch("k", grid=ctas, block=32, args=[words], lockstep=lockstep)
        out[lockstep] = (time.perf_counter() - t, bool((words == np.arange(ctas * 32)).all()))
    return out


def _fixture(name):
    """(metadata, loaded module) of the PTX fixture `name` (tests/fixtures/ptx)."""
    import json
    import tcemu.ptx as tp
    fx = os.path.join(HERE, "..", "tests", "fixtures", "ptx")
    with open(os.path.join(fx, name + ".json")) as f:
        meta = json.load(f)
    with open(os.path.join(fx, name + ".ptx")) as f:
        return meta, tp.load(f.read())


def elementwise_bench(n):
    """Triton's tutorial 01 vector addition (tests/fixtures/ptx/add_f32) of n float32 elements on the PTX
    interpreter, one core: seconds in lock-step and with warps one at a time, and whether the sums are numpy's."""
    from tcemu.frontends.triton import run_compiled
    meta, mod = _fixture("add_f32")
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = {}
    for lockstep in (True, False):
        z = np.zeros(n, np.float32)
        args = {"x_ptr": x[:4096], "y_ptr": y[:4096], "output_ptr": z[:4096], "n_elements": 4096}
        run_compiled(mod, meta, args, lockstep=lockstep)   # compile
        t = time.perf_counter()
        run_compiled(mod, meta, {"x_ptr": x, "y_ptr": y, "output_ptr": z, "n_elements": n}, lockstep=lockstep)
        out[lockstep] = (time.perf_counter() - t, bool(np.array_equal(z.view(np.uint32), (x + y).view(np.uint32))))
    return out


def cutlass_bench():
    """CUTLASS's ping-pong bf16 GEMM (tests/fixtures/ptx/cutlass_pingpong_bf16: 64x128x64 tiles, a producer warp
    and two consumer warpgroups, TMA + mbarriers) at 512x512x512 on the PTX interpreter, one core, from the
    launch record bench_cutlass_pingpong_bf16_512.json; checked against tcemu.matmul on the same inputs."""
    import json
    import tcemu.ptx as tp
    from tcemu.traces import launches
    from tcemu import matmul
    fx = os.path.join(HERE, "..", "tests", "fixtures", "ptx")
    rec = json.load(open(os.path.join(fx, "bench_cutlass_pingpong_bf16_512.json")))["launch"]
    mod = tp.load(open(os.path.join(fx, "cutlass_pingpong_bf16.ptx")).read())
    best = None
    for _ in range(2):   # the first run also compiles the instructions and warms numba
        r = launches.replay(rec, mod, seed=1)
        best = r if best is None or r.stats["seconds"] < best.stats["seconds"] else best
    ins = launches.input_arrays(rec, 1)
    ref, took = None, None
    for _ in range(3):   # the same shape on tcemu.matmul, one core, best of 3
        t = time.perf_counter()
        ref = matmul(ins["A"], ins["B"].T, dtype_a="bf16", dtype_b="bf16", out_dtype="f32", init="none", workers=1)
        took = min(took or 1e9, time.perf_counter() - t)
    return best.stats, np.array_equal(ref.view(np.uint32), best.outputs["D"].view(np.uint32)), took


def sfu_bench():
    """Approximate (MUFU) forms per warp instruction (32 lanes) through tcemu.ptx.fparith, next to add.rn.f32 in
    the same run; and Triton's fused attention forward (tutorial 06, f16, Z=1 H=2 N_CTX=256 D=64, from
    traces/triton_sfu_kernels_sm90.npz) on the PTX interpreter, one core, checked against the H200's bytes,
    next to numpy float64 attention of the same shape."""
    from tcemu.ptx import fparith
    from tcemu.traces.kinds.kernel_outputs import fixture_from_trace, replay_launches
    from tcemu.traces import load_trace
    x = (np.random.default_rng(0).random(32) * 8 - 4).astype(np.float32).view(np.uint32)
    rows = []
    for name, op, kw in (("add.rn.f32", "add", dict(rounding="rn")),
                         ("ex2.approx.ftz.f32", "ex2", dict(rounding="approx", ftz=True)),
                         ("ex2.approx.f32", "ex2", dict(rounding="approx")),
                         ("lg2.approx.f32", "lg2", dict(rounding="approx")),
                         ("sin.approx.f32", "sin", dict(rounding="approx")),
                         ("tanh.approx.f32", "tanh", dict(rounding="approx")),
                         ("div.full.f32", "div", dict(rounding="full"))):
        args = (x, x) if op in ("add", "div") else (x,)
        per_s = rate(lambda: fparith.float_op(op, "f32", *args, **kw), 1)
        rows.append((name, 1e6 / per_s))
    trace = load_trace(os.path.join(HERE, "..", "traces", "triton_sfu_kernels_sm90.npz"))
    mods = {}

    def fixture(name):
        if name not in mods:
            mods[name] = fixture_from_trace(trace.columns, name)
        return mods[name]

    def replayed(prefix):   # (seconds, bit-identical to the H200) of the trace's first case named prefix...
        i = next(k for k, c in enumerate(trace.meta["cases"]) if c["name"].startswith(prefix))
        case = trace.meta["cases"][i]
        replay_launches(fixture, case)   # compile, JIT, decode the tables
        t = time.perf_counter()
        got = replay_launches(fixture, case)
        seconds = time.perf_counter() - t
        hw = trace.columns["bits"][int(trace.columns["offsets"][i]):int(trace.columns["offsets"][i + 1])]
        return seconds, bool(np.array_equal(got, hw))
    kernels = {name: replayed(name) for name in ("softmax_f32 64x1000", "layernorm_fwd 64x512")}
    seconds, same = replayed("attn_fwd_f16")
    q, k, v = (np.random.rand(2, 256, 64) for _ in range(3))
    t = time.perf_counter()
    for _ in range(10):
        s_ = q @ k.transpose(0, 2, 1) * 0.125
        p_ = np.exp(s_ - s_.max(-1, keepdims=True))
        (p_ / p_.sum(-1, keepdims=True)) @ v
    return rows, seconds, same, (time.perf_counter() - t) / 10, kernels


def best_rate(fn, macs, repeats=3):
    """Multiply-adds per second: the best of `repeats` timed calls (after one warm-up call)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return macs / best, best


def cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def simd():
    """The host CPU as LLVM (numba's code generator) names it, and its widest vector unit: the GEMM kernels'
    lanes per instruction (AVX-512: 8 float64, AVX2: 4), so ratios to BLAS differ by about 2x between the two."""
    from llvmlite import binding  # numba's dependency; only for this line
    feats = binding.get_host_cpu_features()
    width = "AVX-512" if feats.get("avx512f") else "AVX2" if feats.get("avx2") else "no AVX2"
    return f"{binding.get_host_cpu_name()} ({width})"


def blas_rate(n, threads=None):
    """float64 BLAS multiply-adds per second on an n^3 GEMM with `threads` threads, default every core (a
    subprocess: the thread count of an OpenBLAS already loaded cannot change); the best of 3 calls."""
    code = ("import numpy as np, time; n = %d; a = np.random.default_rng(0).standard_normal((n, n)); b = a.T.copy();"
            " a @ b; best = 9e9\nfor _ in range(3):\n t = time.perf_counter(); a @ b; "
            "best = min(best, time.perf_counter() - t)\nprint(n ** 3 / best)" % n)
    env = dict(os.environ)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads or cores())
    return float(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                                text=True).stdout)


def paired(ours, blas, macs, repeats=3):
    """(tcemu MAC/s, BLAS MAC/s): the best of `repeats` rounds, each round timing BLAS then tcemu back to back
    (this machine's load varies; a BLAS figure from another moment makes a wrong ratio). `blas` is a callable
    returning its own MAC/s."""
    ours()
    best, ref = float("inf"), 0.0
    for _ in range(repeats):
        ref = max(ref, blas())
        t = time.perf_counter()
        ours()
        best = min(best, time.perf_counter() - t)
    return macs / best, ref


def matmul_bench(quick=False):
    """Rows (name, tcemu MAC/s, float64 BLAS MAC/s, stats) and the 8192^3 plan."""
    import ml_dtypes

    from tcemu.gemm import engine as gemm
    n = 512 if quick else 1024
    rng = np.random.default_rng(0)
    macs = n ** 3
    miss = [rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16) for _ in range(2)]
    hit = [(rng.uniform(1, 2, (n, n)) * rng.choice([-1.0, 1.0], (n, n))).astype(ml_dtypes.bfloat16)
           for _ in range(2)]
    fp8 = [rng.standard_normal((n, n)).astype(ml_dtypes.float8_e4m3fn) for _ in range(2)]
    f32 = [rng.standard_normal((n, n)).astype(np.float32) for _ in range(2)]
    a64, b64 = miss[0].astype(np.float64), miss[1].astype(np.float64)

    def blas1():
        t = time.perf_counter()
        a64 @ b64
        return macs / (time.perf_counter() - t)

    def blasn():
        return blas_rate(n)

    ncores = cores()
    rows = []

    def row(name, a, b, dtype, blas, **kw):
        ours, ref = paired(lambda: tcemu.matmul(a, b, dtype_a=dtype, dtype_b=dtype, **kw), blas, macs)
        rows.append((name, ours, ref, dict(gemm.LAST_STATS)))

    row(f"bf16 {n}^3, miss (normal), 1 core", *miss, "bf16", blas1, workers=1)
    row(f"bf16 {n}^3, miss (normal), {ncores} cores", *miss, "bf16", blasn, workers=ncores)
    row(f"bf16 {n}^3, hit (+-[1,2)), 1 core", *hit, "bf16", blas1, workers=1)
    row(f"bf16 {n}^3, hit (+-[1,2)), {ncores} cores", *hit, "bf16", blasn, workers=ncores)
    row(f"e4m3 {n}^3, plain chain, 1 core", *fp8, "e4m3", blas1, workers=1)
    row(f"e4m3 {n}^3, promote every 4 (K 128), 1 core", *fp8, "e4m3", blas1, workers=1, promote_every=4)
    row(f"tf32 {n}^3, 1 core", *f32, "tf32", blas1, workers=1)
    m = 128
    small = [x[:m, :m] for x in miss]
    ref, _ = best_rate(lambda: tcemu.matmul(*small, dtype_a="bf16", dtype_b="bf16", engine="reference"), m ** 3, 1)
    rows.append((f"bf16 {m}^3, reference engine (fdp per step)", ref, blas1(), {}))
    plan = None
    if not quick:
        a = rng.standard_normal((1024, 8192)).astype(ml_dtypes.bfloat16)
        b = rng.standard_normal((8192, 1024)).astype(ml_dtypes.bfloat16)
        tcemu.matmul(a, b, dtype_a="bf16", dtype_b="bf16", workers=1)  # first touch of the chunk buffers
        t = time.perf_counter()
        tcemu.matmul(a, b, dtype_a="bf16", dtype_b="bf16", workers=1)
        plan = (time.perf_counter() - t, blas1())
    return rows, plan


def print_dask_bench():
    try:
        import distributed  # noqa: F401  (optional: pip install 'tcemu[dask]')
    except ImportError:
        print(f"{'Triton bf16 matmul 1024^3 over dask, 4 worker processes':<58} {'-':>10}  unavailable: dask.distributed "
              "is not installed (pip install 'tcemu[dask]')")
        return
    local, dist, same = dask_bench()
    print(f"{'Triton bf16 matmul 1024^3 over dask, 4 worker processes':<58} {dist['seconds']:>10.2f} s  "
          f"one process {local['seconds']:.2f} s: x{local['seconds'] / dist['seconds']:.2f} on {cores()} cores; "
          f"{dist['chunks']} chunks on {dist['workers']} workers, {'bit-identical' if same else 'DIFFERENT BITS'}")
    print(f"{'  CPU seconds: the workers, in all / one process':<58} {sum(dist['chunk_cpu_seconds']):>10.2f} s  "
          f"{local['cpu_seconds']:.2f} s; the longest chunk {max(dist['chunk_seconds']):.2f} s of wall time")


def main():
    quick = "--quick" in sys.argv
    if "--dask" in sys.argv:   # only the dask figure
        print_dask_bench()
        return
    desc = tcemu.GmmaDescriptor(start_address=0x400, lbo=16, sbo=1024, swizzle="128B")
    kw = dict(rows=128, k=64, dtype="bf16", major="K")
    ours = rate(lambda: tcemu.operand_addresses(desc, **kw), 128 * 64)
    big = dict(rows=16384, k=64, dtype="bf16", major="K")
    desc_big = tcemu.GmmaDescriptor(start_address=0, lbo=16, sbo=1024, swizzle="128B")
    # rows beyond the window are fine for the kernel alone: time the numba loop without the window check
    from tcemu.layout.addressing import _resolve
    out = np.empty((big["rows"], big["k"]), np.int64)
    sw = desc_big.swizzle.swizzle
    kernel = rate(lambda: _resolve(0, 16, 1024, sw.bits, sw.base, sw.shift, 0, 128, True, 16, out), out.size)

    try:
        from pycute import Swizzle
        from tcemu.testing.oracle import ptx_layout

        def reference(d, rows, k, dtype, major):  # per element, plain Python: CuTe layout then swizzle
            L = ptx_layout(16, major == "K", 128, rows, k, d.lbo, d.sbo)
            sw = Swizzle(3, 4, 3)
            return np.array([[sw(d.start_address + L(r, c)) for c in range(k)] for r in range(rows)])
        ref_name = "pycute canonical-layout oracle (tcemu.testing.oracle)"
    except ImportError:
        reference, ref_name = None, "unavailable (install nvidia-cutlass --no-deps for pycute)"
    ref = rate(lambda: reference(desc, **kw), 128 * 64, 1.0, 1) if reference else float("nan")
    if reference is not None:
        assert np.array_equal(reference(desc, **kw), tcemu.operand_addresses(desc, **kw))

    with tempfile.TemporaryDirectory() as cache:
        cold = first_call_seconds(cache)
        warm = first_call_seconds(cache)

    print(f"{'measure':<58} {'value':>14}  reference")
    print(f"{'operand_addresses 128x64 bf16 (addresses/s, per call)':<58} {ours:>14,.0f}  "
          f"{ref:,.0f} ({ref_name}); x{ours / ref:,.0f}")
    print(f"{'numba kernel alone, 16384x64 (addresses/s)':<58} {kernel:>14,.0f}")
    print(f"{'first call in a fresh process, empty numba cache (s)':<58} {cold:>14.2f}")
    print(f"{'first call in a fresh process, warm numba cache (s)':<58} {warm:>14.2f}")
    print("target: > 50,000,000 addresses/s for the 128x64 bf16 operand, single core")
    print()
    print(f"{'wgmma m64n256, f32 accumulator':<34} {'tcemu dots/s':>14} {'numpy f64 dots/s':>17} "
          f"{'MMA-Sim anchor':>15} {'vs MMA-Sim':>11}")
    for dtype, k, dots, ref in wgmma_bench():
        print(f"{dtype + ' K=' + str(k):<34} {dots:>14,.0f} {ref:>17,.0f} {MMASIM_DOTS_PER_S:>15,} "
              f"{dots / MMASIM_DOTS_PER_S:>10,.0f}x")
        if dtype == "bf16":
            one = 64 * 256 / dots
            numpy_one = 64 * 256 / ref
    print(f"one m64n256k16 bf16 wgmma: tcemu {one * 1e3:.3f} ms, numpy float64 matmul {numpy_one * 1e3:.3f} ms, "
          f"MMA-Sim {MMASIM_WGMMA_S:.2f} s")
    print("target: > 20,000,000 dot products/s on one core; one m64n256k16 in under 1 ms")
    print()
    print(f"{'tcgen05.mma M=128 N=256, f32 acc.':<34} {'tcemu dots/s':>14} {'numpy f64 dots/s':>17}")
    for name, dots, ref in tcgen05_bench():
        print(f"{name:<34} {dots:>14,.0f} {ref:>17,.0f}   one instruction: {128 * 256 / dots * 1e3:.2f} ms")
    print()
    print(f"{'bank conflicts (random addresses)':<34} {'batch /s':>14} {'one call /s':>17}")
    for op, batch, single in banks_bench():
        print(f"{op:<34} {batch:>14,.0f} {single:>17,.0f}")
    print("target: > 1,000,000 single-instruction analyses/s, batched")
    print()
    st, np_s = kernel_bench()
    interp = st["seconds"] - st["tensor_core_seconds"]
    print(f"{'Triton bf16 matmul 512^3 on the PTX interpreter (1 core)':<58} {st['seconds']:>10.2f} s  "
          f"numpy float64 {np_s * 1e3:.2f} ms")
    print(f"{'  warps one at a time (lockstep=False)':<58} {st['alone_seconds']:>10.2f} s  lock-step is "
          f"x{st['alone_seconds'] / st['seconds']:.2f} faster")
    print(f"{'  tcemu.matmul, same shape and inputs':<58} {st['matmul_seconds']:>10.2f} s  the interpreter takes "
          f"x{st['seconds'] / st['matmul_seconds']:.0f} as long; bits "
          f"{'identical' if st['same'] else 'DIFFER'}")
    print(f"{'  inside the wgmma model / interpreting the rest':<58} {st['tensor_core_seconds']:>10.2f} s  "
          f"{interp:.2f} s ({st['warp_instructions'] / interp:,.0f} warp instructions/s)")
    print("target: under 5 s")
    print_dask_bench()
    st, same, mm = cutlass_bench()
    interp = st["seconds"] - st["tensor_core_seconds"]
    print(f"{'CUTLASS ping-pong bf16 512^3 on the PTX interpreter (1 core)':<58} {st['seconds']:>10.2f} s  "
          f"{st['ctas']} CTAs, {st['warp_instructions']:,} warp instructions; "
          f"{'bit-identical to' if same else 'DIFFERS from'} tcemu.matmul")
    print(f"{'  tcemu.matmul, same shape and inputs (f32 out)':<58} {mm:>10.2f} s  "
          f"the interpreter takes x{st['seconds'] / mm:.0f} as long (issue 24's target: x5)")
    print(f"{'  inside the wgmma model / interpreting the rest':<58} {st['tensor_core_seconds']:>10.2f} s  "
          f"{interp:.2f} s ({st['warp_instructions'] / interp:,.0f} warp instructions/s)")
    bb = barrier_bench()
    print(f"{'8 CTAs x 1024 threads, one thread at a time between bar.syncs':<58} {bb[True][0]:>10.2f} s  "
          f"warps one at a time {bb[False][0]:.2f} s (x{bb[False][0] / bb[True][0]:.2f}); words "
          f"{'right' if bb[True][1] and bb[False][1] else 'WRONG'}")
    n = 4096 if quick else 16384
    mc = many_ctas_bench(n)
    print(f"{f'{n:,} one-warp CTAs storing a word per thread':<58} {mc[True][0]:>10.2f} s  "
          f"warps one at a time {mc[False][0]:.2f} s (x{mc[False][0] / mc[True][0]:.2f}); "
          f"{mc[True][0] / n * 1e6:.0f} us a CTA, 2^20 CTAs ~{mc[True][0] / n * 2 ** 20:.0f} s; words "
          f"{'right' if mc[True][1] and mc[False][1] else 'WRONG'}")
    print("target: 2^20 trivial CTAs in seconds (issue 24)")
    print()
    n = 1 << 18 if quick else 1 << 20
    ew = elementwise_bench(n)
    sums = "numpy's" if ew[True][1] and ew[False][1] else "WRONG"
    print(f"{f'Triton vector add (tutorial 01), {n:,} f32 elements':<58} {ew[True][0]:>10.2f} s  "
          f"warps one at a time {ew[False][0]:.2f} s (x{ew[False][0] / ew[True][0]:.2f}); "
          f"{ew[True][0] / (n // 1024) * 1e6:.0f} us a CTA of 4 warps; sums {sums}")
    print()
    rows, att_s, att_same, att_np, kernels = sfu_bench()
    base = rows[0][1]
    print(f"{'special functions, one warp instruction (32 lanes)':<58} {'us':>10}  reference: add.rn.f32 {base:.1f} us")
    for name, us in rows[1:]:
        print(f"{'  ' + name:<58} {us:>10.1f}  x{us / base:.1f}")
    print(f"{'Triton attention fwd f16 1x2x256x64 on the PTX interpreter':<58} {att_s:>10.2f} s  "
          f"{'bit-identical to' if att_same else 'DIFFERS from'} the H200; numpy float64 {att_np * 1e3:.2f} ms")
    for name, (sec, same) in kernels.items():
        print(f"{'Triton ' + name + ' (64 CTAs) on the PTX interpreter':<58} {sec:>10.2f} s  "
              f"{'bit-identical to' if same else 'DIFFERS from'} the H200")
    print()
    rows, plan = matmul_bench(quick)
    print(f"{'tcemu.matmul (bit-exact)':<46} {'tcemu MAC/s':>14} {'f64 BLAS MAC/s':>15} {'ratio':>6}  paths "
          f"(row segments fast / general (of them summed in 32 bits), lanes redone)")
    for name, macs_s, blas, st in rows:
        paths = f"{st.get('fast', 0):,} / {st.get('general', 0):,} ({st.get('sum32', 0):,}), {st.get('redone', 0):,}" \
            if st else ""
        print(f"{name:<46} {macs_s:>14,.0f} {blas:>15,.0f} {macs_s / blas:>6.3f}  {paths}")
    print(f"target: half of float64 BLAS throughput (issue 24), bit-exact; host {simd()}")
    if plan is not None:
        tile_macs, (sec, blas) = 1024 * 1024 * 8192, plan
        print(f"8192^3 bf16 plan: one 1024 x 1024 x 8192 output tile (a dask task) took {sec:.2f} s on one core "
              f"({tile_macs / sec / 1e9:.2f} G MAC/s; float64 BLAS 1024^3 just after: {blas / 1e9:.1f} G); "
              f"64 tiles = {64 * sec:.0f} core-seconds, {64 * sec / cores() / 60:.1f} min on this machine's "
              f"{cores()} cores")


if __name__ == "__main__":
    main()
