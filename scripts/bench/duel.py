"""A/B timing of the PTX interpreter between source trees, on hosts whose pace moves (the device machine's moved by
a fifth within one call): one warm worker process per tree, and each round runs one launch in every worker, in a
shuffled order, so the trees meet the host's changes alike. Outputs must be equal across trees.

    python scripts/bench/duel.py KIND N ROUNDS ROOT [ROOT ...]

KIND: tri (Triton's bf16 matmul fixture at N^3), cut (CUTLASS ping-pong 512^3 from its launch record; N unused),
many (N one-warp CTAs, scripts/bench.py's MANY_CTAS). A ROOT holds tcemu/, tests/fixtures/ptx/ and, for many,
scripts/bench.py: the repository itself (.), or an older commit's, made with
`git archive COMMIT tcemu tests/fixtures/ptx scripts/bench.py | tar -x -C DIR`. Prints each round and, per tree, the
median, the least and the median of its per-round ratio to the first tree."""
import json, os, random, statistics, subprocess, sys

WORKER = r'''
import json, os, sys, time
root, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, root); sys.path.insert(0, os.path.join(root, "scripts"))
import numpy as np
import tcemu.ptx as tp
assert tp.__file__.startswith(os.path.abspath(root))
fx = os.path.join(root, "tests/fixtures/ptx")
if kind == "tri":
    from tcemu.frontends.triton import run_compiled
    from tcemu.traces.inputs import input_bits
    meta = json.load(open(os.path.join(fx, "matmul_bf16.json")))
    mod = tp.load(open(os.path.join(fx, "matmul_bf16.ptx")).read())
    def go(n):
        a, b = input_bits("bf16", (n, n), 1, 0), input_bits("bf16", (n, n), 1, 1)
        vals = {"a_ptr": a, "b_ptr": b, "M": n, "N": n, "K": n, "stride_am": n, "stride_bk": n, "stride_cm": n}
        c = np.zeros((n, n), np.uint16)
        t = time.perf_counter(); run_compiled(mod, meta, dict(vals, c_ptr=c)); t = time.perf_counter() - t
        return t, int(c.astype(np.uint64).sum())
    go(256)
elif kind == "cut":
    from tcemu.traces import launches
    rec = json.load(open(os.path.join(fx, "bench_cutlass_pingpong_bf16_512.json")))["launch"]
    mod = tp.load(open(os.path.join(fx, "cutlass_pingpong_bf16.ptx")).read())
    def go(n):
        t = time.perf_counter(); r = launches.replay(rec, mod, seed=1); t = time.perf_counter() - t
        return t, int(r.outputs["D"].view(np.uint32).astype(np.uint64).sum())
    go(0)
else:
    from bench import MANY_CTAS
    mod = tp.load(MANY_CTAS)
    def go(n):
        w = np.zeros(n * 32, np.uint32); t = time.perf_counter()
        mod.launch("k", grid=n, block=32, args=[w]); t = time.perf_counter() - t
        return t, int((w == np.arange(n * 32)).all())
    go(4096)
print("ready", flush=True)
for line in sys.stdin:
    t, chk = go(n)
    print(f"{t:.4f} {chk}", flush=True)
'''


def main():
    kind, n, rounds, roots = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
    env = dict(os.environ)
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, r, kind, str(n)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env) for r in roots]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    times = {r: [] for r in roots}
    for k in range(rounds):
        order = list(range(len(roots)))
        random.Random(k).shuffle(order)
        got = {}
        for i in order:
            procs[i].stdin.write("go\n"); procs[i].stdin.flush()
            t, chk = procs[i].stdout.readline().split()
            got[roots[i]] = (float(t), chk)
        assert len({c for _, c in got.values()}) == 1, got   # every tree: the same output
        for r in roots:
            times[r].append(got[r][0])
        print(f"round {k}: " + "  ".join(f"{r} {got[r][0]:.3f}" for r in roots), flush=True)
    base = times[roots[0]]
    for r in roots:
        ratios = [a / b for a, b in zip(times[r], base)]
        print(f"{kind} {n} {r}: median {statistics.median(times[r]):.3f} s  min {min(times[r]):.3f}  "
              f"ratio to {roots[0]} median {statistics.median(ratios):.3f}")
    for p in procs:
        p.stdin.close(); p.wait()


if __name__ == "__main__":
    main()
