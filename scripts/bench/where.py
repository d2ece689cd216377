"""Where a launch's time goes in the PTX interpreter, by what runs it: the lock-step gang steps by opcode (an op's
gang version, masked lanes, or warp by warp where it has none), private stretches run as one batch, fused runs of
one kind of instruction (ops/runs.py), warps run alone, hang probes, the GEMM engine computing deferred wgmma
chains, and the rest (scheduling). Each row's time excludes the rows nested inside it; warp instructions add up to
the launch's own count (probes run instructions on copies that are undone: they count none).

    python scripts/bench/where.py KIND N [--wave-mb MB] [--top K]

KIND as scripts/bench/duel.py's: tri (Triton's bf16 matmul fixture at N^3), cut (CUTLASS ping-pong 512^3 from its
launch record; N unused), many (N one-warp CTAs, scripts/bench.py's MANY_CTAS). The launch runs once to warm up,
then once measured. The wrappers cost time of their own (~1 us a call): shares, not absolute figures, compare."""
import argparse
import json
import os
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import numpy as np  # noqa: E402

import tcemu.ptx as tp  # noqa: E402
from tcemu.ptx import chains, lockstep, machine, schedule  # noqa: E402
from tcemu.ptx.ops import runs  # noqa: E402

FX = os.path.join(ROOT, "tests", "fixtures", "ptx")


def launcher(kind: str, n: int):
    """A function running the launch once and returning its stats."""
    if kind == "tri":
        from tcemu.frontends.triton import run_compiled
        from tcemu.traces.inputs import input_bits
        import tcemu.ptx.module as module
        meta = json.load(open(os.path.join(FX, "matmul_bf16.json")))
        mod = tp.load(open(os.path.join(FX, "matmul_bf16.ptx")).read())
        a, b = input_bits("bf16", (n, n), 1, 0), input_bits("bf16", (n, n), 1, 1)
        vals = {"a_ptr": a, "b_ptr": b, "M": n, "N": n, "K": n, "stride_am": n, "stride_bk": n, "stride_cm": n}

        def go():
            got = {}
            real = module.Module.launch

            def keep(self, *a, **k):
                got.update(real(self, *a, **k))
                return got
            module.Module.launch = keep
            try:
                run_compiled(mod, meta, dict(vals, c_ptr=np.zeros((n, n), np.uint16)))
            finally:
                module.Module.launch = real
            return got
        return go
    if kind == "cut":
        from tcemu.traces import launches
        rec = json.load(open(os.path.join(FX, "bench_cutlass_pingpong_bf16_512.json")))["launch"]
        mod = tp.load(open(os.path.join(FX, "cutlass_pingpong_bf16.ptx")).read())
        return lambda: launches.replay(rec, mod, seed=1).stats
    if kind == "many":
        from bench import MANY_CTAS
        mod = tp.load(MANY_CTAS)
        return lambda: mod.launch("k", grid=n, block=32, args=[np.zeros(n * 32, np.uint32)])
    raise SystemExit(f"KIND: tri, cut or many, not {kind!r}")


class Rows:
    """{row: [calls, warp instructions, seconds]}, each call's time less that of the wrapped calls inside it."""

    def __init__(self):
        self.rows = {}
        self.stack = []   # per open call: the time of the wrapped calls inside it

    def timed(self, fn, row_of, count=None):
        """fn wrapped: row_of(args, result) names the row, count(args, result) its warp instructions."""
        def wrapper(*a, **k):
            self.stack.append(0.0)
            t = time.perf_counter()
            try:
                out = fn(*a, **k)
            finally:
                dt = time.perf_counter() - t
                inner = self.stack.pop()
                if self.stack:
                    self.stack[-1] += dt
            r = self.rows.setdefault(row_of(a, out), [0, 0, 0.0])
            r[0] += 1
            r[1] += count(a, out) if count else 0
            r[2] += dt - inner
            return out
        return wrapper


def _opcode(g, pc):
    return g[0].prog.instrs[pc].opcode


def instrument(rows: Rows):
    """Wrap the interpreter's entry points (module attributes: the callers look them up when they call)."""
    step = lockstep._step

    def step_row(a, out):
        g, pc, masks = a[0], a[1], a[2]
        has = lockstep.GANG_OPS and getattr(g[0].prog.code[pc], "gang", None) is not None
        kind = "masked" if masks is not None else ("gang" if has else "warp by warp")
        return f"{kind}: {_opcode(g, pc)}"
    lockstep._step = rows.timed(step, step_row, lambda a, out: len(out[0]))
    lockstep.stretch = rows.timed(lockstep.stretch, lambda a, out: "private stretches" + (
        ", masked lanes" if len(a) > 2 and a[2] is not None else ""), lambda a, out: out)
    runs.Fuse.run = rows.timed(runs.Fuse.run, lambda a, out: f"fused runs: {_opcode(a[1], a[2])}", lambda a, out: out)
    machine.Warp.run = rows.timed(machine.Warp.run, lambda a, out: "warps alone", lambda a, out: out)
    machine.probe = rows.timed(machine.probe, lambda a, out: "hang probes (undone: no instructions)")
    machine.probe_cta = rows.timed(machine.probe_cta, lambda a, out: "hang probes (undone: no instructions)")
    chains._compute = rows.timed(chains._compute, lambda a, out: "GEMM engine: deferred wgmma chains")


def table(rows: Rows, stats: dict, seconds: float, top: int) -> str:
    """The rows by time, with the rest (scheduling, admission, ...) and the check of the instruction count."""
    rest = seconds - sum(r[2] for r in rows.rows.values())
    counted = sum(r[1] for k, r in rows.rows.items() if not k.startswith("hang probes"))
    lines = [f"{stats.get('ctas', 0):,} CTAs, {stats['warp_instructions']:,} warp instructions, {seconds:.3f} s "
             f"(measured with wrappers)"]
    for name, (calls, ins, dt) in sorted(rows.rows.items(), key=lambda kv: -kv[1][2])[:top]:
        lines.append(f"{dt:8.3f} s {100 * dt / seconds:5.1f} %  {calls:7,} calls  {ins:9,} warp instr  {name}")
    lines.append(f"{rest:8.3f} s {100 * rest / seconds:5.1f} %  the rest (scheduling, admission, retiring CTAs)")
    lines.append(f"warp instructions in the rows: {counted:,} (the launch's: {stats['warp_instructions']:,})")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kind")
    ap.add_argument("n", type=int)
    ap.add_argument("--wave-mb", type=int, default=None, help="schedule.WAVE_BYTES in MB (default: tcemu's)")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args(argv)
    if args.wave_mb is not None:
        schedule.WAVE_BYTES = args.wave_mb << 20
    go = launcher(args.kind, args.n)
    go()   # numba's caches, the program's compiled instructions
    rows = Rows()
    instrument(rows)
    t = time.perf_counter()
    stats = go()
    print(table(rows, stats, time.perf_counter() - t, args.top))


if __name__ == "__main__":
    main()
