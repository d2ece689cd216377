"""Where a launch's time goes in the PTX interpreter, by what runs it: the lock-step gang steps by opcode (an op's
gang version, masked lanes, or warp by warp where it has none), private stretches run as one batch, fused runs of
one kind of instruction (ops/runs.py), warps run alone, hang probes, the GEMM engine computing deferred wgmma
chains, and the rest (scheduling). Each row's time excludes the rows nested inside it; warp instructions add up to
the launch's own count (probes run instructions on copies that are undone: they count none).

    python scripts/bench/where.py KIND N [--wave-mb MB] [--top K]

KIND: tri, cut, many, add or smx (scripts/bench/kinds.py, as duel.py's). The launch runs once to warm up, then once
measured. The wrappers cost time of their own (~1 us a call): shares, not absolute figures, compare."""
import argparse
import os
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from kinds import KINDS, launcher  # noqa: E402
from tcemu.ptx import chains, lockstep, machine, schedule  # noqa: E402
from tcemu.ptx.ops import runs  # noqa: E402

FX = os.path.join(ROOT, "tests", "fixtures", "ptx")


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
    ap.add_argument("kind", choices=KINDS)
    ap.add_argument("n", type=int)
    ap.add_argument("--wave-mb", type=int, default=None,
                    help="waves of this many MB of state: schedule.WAVE_BYTES and WAVE_BYTES_MAX (default: tcemu's)")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args(argv)
    if args.wave_mb is not None:
        schedule.WAVE_BYTES = schedule.WAVE_BYTES_MAX = args.wave_mb << 20
    go = launcher(args.kind, FX)
    go(args.n)   # numba's caches, the program's compiled instructions
    rows = Rows()
    instrument(rows)
    t = time.perf_counter()
    _, _, stats = go(args.n)
    print(table(rows, stats, time.perf_counter() - t, args.top))


if __name__ == "__main__":
    main()
