"""The launch record of scripts/bench.py's CUTLASS row (issue 11): the ping-pong bf16 GEMM at 512x512x512.

    PYTHONPATH=. python scripts/fixtures/cutlass_kernels.py cutlass_pingpong_bf16   # builds the builder (and the fixture)
    PYTHONPATH=. python scripts/bench/cutlass_bench_record.py

Runs the fixture's own launch-record builder (build/cutlass/cutlass_pingpong_bf16_builder, see
scripts/fixtures/cutlass_kernels.py) three times on the bench's case, as that script does for the fixture's cases, and
writes tests/fixtures/ptx/bench_cutlass_pingpong_bf16_512.json. It is kept apart from the fixture's launches,
which the GPU capture (traces/cutlass_kernels_sm90.npz) covers; the bench checks its output against tcemu.matmul.
"""
import argparse
import datetime
import json
import os
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fixtures"))
import cutlass_kernels as ck  # noqa: E402

NAME, CASE = "cutlass_pingpong_bf16", [512, 512, 512]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ck.ROOT, "tests", "fixtures", "ptx"))
    ap.add_argument("--builders", default=os.path.join(ck.ROOT, "build", "cutlass"))
    args = ap.parse_args()
    cutlass = ck.cutlass_dir()
    ptx_path = os.path.join(args.out, NAME + ".ptx")
    builder = os.path.join(args.builders, NAME + "_builder")
    runs = [json.loads(ck.run([builder, "--ptx", ptx_path] + [str(c) for c in CASE], cutlass,
                              env={**os.environ, "TCEMU_STACK_FILL": fill, "TCEMU_ENV_PAD": pad}))
            for fill, pad in ck.STACK_FILLS]
    rec = {"fixture": NAME, "ptx_sha256": ck.sha256(open(ptx_path, "rb").read()),
           "command": "PYTHONPATH=. python scripts/bench/cutlass_bench_record.py",
           "builder_command": shlex.join([f"build/cutlass/{NAME}_builder", "--ptx",
                                          f"tests/fixtures/ptx/{NAME}.ptx"] + [str(c) for c in CASE]),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "launch": {"case": CASE, **ck.defined_bytes(runs)}}
    with open(os.path.join(args.out, f"bench_{NAME}_{CASE[0]}.json"), "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
