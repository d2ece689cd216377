"""Triton's own unit tests (python/test/unit/language/test_core.py) on tcemu's Triton driver, and their tally.

    PYTHONPATH=. python scripts/checks/triton_test_core.py run TRITON_TEST_DIR --per-test 1 --report core.jsonl
    PYTHONPATH=. python scripts/checks/triton_test_core.py tally core.jsonl [--markdown]

`run` runs pytest on TRITON_TEST_DIR/unit/language/test_core.py (TRITON_TEST_DIR is Triton's python/test, holding
its conftest.py) with scripts/checks/triton_peer_plugin.py: tcemu's driver active before collection (TCEMU_TRITON,
default sm90), `--device cpu` (tensors on the CPU; tests that call check_cuda_or_hip(device) skip themselves),
each launch bounded to --launch-timeout seconds, and a seeded sample: --per-test N keeps N tests of each test
function, --sample N keeps N in all, --shard i/n one shard; --ids FILE keeps only the test ids the file lists
(one a line, as the tally prints them). Extra pytest arguments follow `--`.

`tally` counts passed / failed / skipped / xfailed by test function, and groups the failures by their
exception and first line: each group is either a bug to fix or a named refusal (an unmodelled form, a GPU-only
feature). The whole file is 9,336 tests (3.9.0 sources, 3.9.0 wheel); on one CPU core they take days, so the runs
reported are samples (docs/triton.md gives the last one).
"""
import argparse
import collections
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run(args, extra):
    """pytest in this process (its command line names no pytest: it is one long job, not a test run)."""
    import pytest
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")   # Triton 3.9's default, without its warning
    os.environ.setdefault("TCEMU_TRITON", "sm90")
    sys.path[:0] = [ROOT, HERE]
    report = os.path.abspath(args.report)
    ids = os.path.abspath(args.ids) if args.ids else ""
    os.chdir(args.tests)
    cmd = ["-p", "triton_peer_plugin", "-p", "no:cacheprovider", "--device", "cpu", "-q", "--tcemu-seed",
           str(args.seed), "--tcemu-report", report, "--tcemu-launch-timeout", str(args.launch_timeout),
           "unit/language/test_core.py"]
    if args.per_test:
        cmd += ["--tcemu-per-test", str(args.per_test)]
    if args.sample:
        cmd += ["--tcemu-sample", str(args.sample)]
    if args.shard:
        cmd += ["--tcemu-shard", args.shard]
    if args.resume:
        cmd += ["--tcemu-resume"]
    if args.ids:
        cmd += ["--tcemu-ids", ids]
    return pytest.main(cmd + extra)


def _group(detail):
    """A failure's group: its exception type and the rule, numbers and paths taken out."""
    text = re.sub(r"0x[0-9a-f]+|\d+", "N", detail.split("\n")[0])
    text = re.sub(r"\(line N \([^)]*\)\)", "", text)
    return text[:160]


def tally(path, markdown=False):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    last = {}
    for r in rows:   # one outcome per test: a failed setup or call wins over a later teardown record
        key = r["test"]
        if key not in last or r["outcome"] != "passed":
            last[key] = r
    by_fn = collections.defaultdict(collections.Counter)
    fails = collections.defaultdict(list)
    for r in last.values():
        by_fn[r["function"]][r["outcome"]] += 1
        if r["outcome"] == "failed":
            fails[_group(r["detail"])].append(r["test"])
    total = collections.Counter()
    for c in by_fn.values():
        total.update(c)
    out = [f"{len(last)} tests: " + ", ".join(f"{k} {v}" for k, v in sorted(total.items()))]
    if markdown:
        out += ["", "| test function | passed | failed | skipped | xfailed |", "| --- | ---: | ---: | ---: | ---: |"]
        for fn in sorted(by_fn):
            c = by_fn[fn]
            out.append(f"| {fn} | {c['passed']} | {c['failed']} | {c['skipped']} | {c['xfailed']} |")
    else:
        for fn in sorted(by_fn):
            c = by_fn[fn]
            out.append(f"  {fn:48s} " + " ".join(f"{k}={c[k]}" for k in ("passed", "failed", "skipped", "xfailed")
                                                  if c[k]))
    out.append("")
    out.append("failures by cause:")
    for g, tests in sorted(fails.items(), key=lambda kv: -len(kv[1])):
        out.append(f"  {len(tests):4d}  {g}")
        out += [f"          {t}" for t in tests[:4]] + (["          ..."] if len(tests) > 4 else [])
    skips = collections.Counter(_group(r["detail"]) for r in last.values() if r["outcome"] == "skipped")
    out.append("")
    out.append("skips by reason:")
    out += [f"  {n:4d}  {g}" for g, n in skips.most_common()]
    return "\n".join(out)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("tests", help="Triton's python/test folder (with conftest.py and unit/language/test_core.py)")
    r.add_argument("--report", default="test_core.jsonl")
    r.add_argument("--per-test", type=int, default=0)
    r.add_argument("--sample", type=int, default=0)
    r.add_argument("--shard", default="")
    r.add_argument("--seed", type=int, default=25)
    r.add_argument("--launch-timeout", type=float, default=120.0)
    r.add_argument("--resume", action="store_true", help="leave out the tests the report already holds")
    r.add_argument("--ids", default="", help="a file of test ids (as the tally lists them), one a line: run only "
                                             "those (before --per-test / --sample / --shard)")
    t = sub.add_parser("tally")
    t.add_argument("report")
    t.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        report = os.path.abspath(args.report)
        rc = run(args, extra)
        print(tally(report))
        return rc
    print(tally(args.report, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
