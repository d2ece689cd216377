"""A/B timing of the PTX interpreter between source trees, on hosts whose pace moves (the device machine's moved by
a fifth within one call): one warm worker process per tree, and each round runs one launch in every worker, in a
shuffled order, so the trees meet the host's changes alike. Outputs must be equal across trees.

    python scripts/bench/duel.py KIND N ROUNDS ROOT [ROOT ...]

KIND: tri, cut, many, add or smx (scripts/bench/kinds.py: Triton's bf16 matmul at N^3, CUTLASS ping-pong 512^3,
N one-warp CTAs, Triton's vector addition of N elements, its softmax of N rows). A ROOT holds tcemu/,
tests/fixtures/ptx/ (else this tree's are read) and, for many, scripts/bench.py: the repository itself (.), or an
older commit's, made with
`git archive COMMIT tcemu tests/fixtures/ptx scripts/bench.py | tar -x -C DIR`. Prints each round and, per tree, the
median, the least and the median of its per-round ratio to the first tree."""
import json, os, random, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
# a worker: tcemu, the fixtures and scripts/bench.py from its tree, the launch from this tree's kinds.py
WORKER = r'''
import os, sys
root, kind, n, here = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
sys.path.insert(0, root); sys.path.insert(0, os.path.join(root, "scripts")); sys.path.append(here)
import tcemu.ptx as tp
assert tp.__file__.startswith(os.path.abspath(root))
from kinds import launcher
fx = os.path.join(root, "tests/fixtures/ptx")
go = launcher(kind, fx if os.path.isdir(fx) else os.path.join(here, "..", "..", "tests/fixtures/ptx"))
go({"tri": 256, "cut": 0, "many": 4096, "add": 1 << 16, "smx": 64}[kind])
print("ready", flush=True)
for line in sys.stdin:
    t, chk, _ = go(n)
    print(f"{t:.4f} {chk}", flush=True)
'''


def main():
    kind, n, rounds, roots = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
    env = dict(os.environ)
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, r, kind, str(n), HERE], stdin=subprocess.PIPE,
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
