"""The launches the interpreter's speed tools time (scripts/bench/duel.py, where.py), by KIND:

- tri: Triton's bf16 matmul fixture at N^3 (tests/fixtures/ptx/matmul_bf16), inputs from traces.inputs.input_bits;
- cut: CUTLASS ping-pong bf16 512^3 from its launch record (bench_cutlass_pingpong_bf16_512.json; N unused);
- many: N one-warp CTAs, each thread storing its index (scripts/bench.py's MANY_CTAS: `bench` importable);
- add: Triton's tutorial 01 vector addition of N float32 elements (tests/fixtures/ptx/add_f32: N / 1024 CTAs of
  4 warps), inputs from a seeded generator;
- smx: Triton's tutorial 02 softmax (tests/fixtures/ptx/softmax_f32) of N rows of 1,000 float32 (N a multiple of 16),
  min(N, 132) persistent CTAs of 8 warps: reductions through shared memory.

tcemu is imported from wherever sys.path finds it first, and the fixtures are read from `fx`: duel.py's workers
point both at an older tree."""
import json
import os
import time

import numpy as np

KINDS = ("tri", "cut", "many", "add", "smx")


def _fixture(fx: str, name: str):
    """(metadata, loaded module) of fixture `name` in folder fx."""
    import tcemu.ptx as tp
    with open(os.path.join(fx, name + ".json")) as f:
        meta = json.load(f)
    with open(os.path.join(fx, name + ".ptx")) as f:
        return meta, tp.load(f.read())


def launcher(kind: str, fx: str):
    """go(n) -> (seconds, a checksum of the output, the launch's stats) for one launch of `kind`."""
    import tcemu.ptx as tp
    if kind == "tri":
        from tcemu.frontends.triton import run_compiled
        from tcemu.traces.inputs import input_bits
        meta, mod = _fixture(fx, "matmul_bf16")

        def go(n):
            a, b = input_bits("bf16", (n, n), 1, 0), input_bits("bf16", (n, n), 1, 1)
            vals = {"a_ptr": a, "b_ptr": b, "M": n, "N": n, "K": n, "stride_am": n, "stride_bk": n, "stride_cm": n}
            c = np.zeros((n, n), np.uint16)
            t = time.perf_counter()
            stats = run_compiled(mod, meta, dict(vals, c_ptr=c))
            return time.perf_counter() - t, int(c.astype(np.uint64).sum()), stats
        return go
    if kind == "cut":
        from tcemu.traces import launches
        rec = json.load(open(os.path.join(fx, "bench_cutlass_pingpong_bf16_512.json")))["launch"]
        mod = tp.load(open(os.path.join(fx, "cutlass_pingpong_bf16.ptx")).read())

        def go(n):
            t = time.perf_counter()
            r = launches.replay(rec, mod, seed=1)
            return time.perf_counter() - t, int(r.outputs["D"].view(np.uint32).astype(np.uint64).sum()), r.stats
        return go
    if kind == "many":
        from bench import MANY_CTAS
        mod = tp.load(MANY_CTAS)

        def go(n):
            w = np.zeros(n * 32, np.uint32)
            t = time.perf_counter()
            stats = mod.launch("k", grid=n, block=32, args=[w])
            return time.perf_counter() - t, int((w == np.arange(n * 32)).all()), stats
        return go
    if kind == "add":
        from tcemu.frontends.triton import run_compiled
        meta, mod = _fixture(fx, "add_f32")

        def go(n):
            rng = np.random.default_rng(0)
            x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
            out = np.zeros(n, np.float32)
            t = time.perf_counter()
            stats = run_compiled(mod, meta, {"x_ptr": x, "y_ptr": y, "output_ptr": out, "n_elements": n})
            return time.perf_counter() - t, int((out == x + y).all()), stats
        return go
    if kind == "smx":
        from tcemu.frontends.triton import run_compiled
        meta, mod = _fixture(fx, "softmax_f32")

        def go(n):
            x = np.random.default_rng(0).standard_normal((n, 1000)).astype(np.float32)
            out = np.zeros_like(x)
            vals = dict(output_ptr=out, input_ptr=x, input_row_stride=1000, output_row_stride=1000, n_rows=n,
                        n_cols=1000)
            t = time.perf_counter()
            stats = run_compiled(mod, meta, vals, grid=(min(n, 132),))
            return time.perf_counter() - t, int(out.view(np.uint32).astype(np.uint64).sum()), stats
        return go
    raise SystemExit(f"KIND: {', '.join(KINDS)}, not {kind!r}")
