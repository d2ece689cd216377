"""pytest plugin: run Triton's own unit tests (python/test/unit/language/test_core.py) on tcemu's driver.

Loaded by scripts/checks/triton_test_core.py (`-p triton_peer_plugin`, this folder on PYTHONPATH). It switches tcemu's
driver on before collection (TCEMU_TRITON, default sm90), bounds every launch's wall time (a kernel that spins
forever on the CPU is a BudgetExceeded, not a hang), optionally keeps a seeded sample of the collected tests,
and writes each test's outcome with its failure's first line to --tcemu-report (JSON lines).
"""
import json
import os
import random
import time

import pytest


def pytest_addoption(parser):
    g = parser.getgroup("tcemu")
    g.addoption("--tcemu-sample", type=int, default=0, help="keep this many tests (seeded), 0: all")
    g.addoption("--tcemu-per-test", type=int, default=0, help="keep at most this many tests of each function")
    g.addoption("--tcemu-seed", type=int, default=25)
    g.addoption("--tcemu-shard", default="", help="i/n: keep the i-th of n shards (after sampling)")
    g.addoption("--tcemu-report", default="", help="JSON lines: one record per test")
    g.addoption("--tcemu-launch-timeout", type=float, default=120.0, help="seconds per launch")
    g.addoption("--tcemu-resume", action="store_true", help="leave out the tests --tcemu-report already holds")
    g.addoption("--tcemu-ids", default="", help="a file of test ids (test_dot[...]), one a line: keep only those")


def _shim_test_environment():
    """Names 3.9.0's test_core.py uses that this environment lacks; no behaviour of the tests changes.

    - triton._internal_testing.get_arch: in the 3.9.0 sources, absent from the installed 3.9.0 wheel's copy;
    - numpy's _get/_set_promotion_state: removed in numpy 2.2, where "weak" promotion (NEP 50) is the only mode,
      which is what the tests ask for."""
    import numpy as np
    import triton._internal_testing as it
    if not hasattr(it, "get_arch"):
        def get_arch():
            target = it.get_current_target()
            return "" if target is None else str(target.arch)
        it.get_arch = get_arch
    if not hasattr(np, "_get_promotion_state"):
        np._get_promotion_state = lambda: "weak"
        np._set_promotion_state = lambda state: None


def pytest_configure(config):
    _shim_test_environment()
    import tcemu.triton
    from tcemu.frontends import triton_launch
    tcemu.triton.activate(os.environ.get("TCEMU_TRITON") or "sm90")
    triton_launch.LAUNCH_OPTIONS["timeout"] = config.getoption("--tcemu-launch-timeout")
    config._tcemu_report = open(config.getoption("--tcemu-report"), "a") if config.getoption("--tcemu-report") \
        else None


def _function(item):
    return item.originalname if hasattr(item, "originalname") else item.name.split("[")[0]


def pytest_collection_modifyitems(session, config, items):
    rng = random.Random(config.getoption("--tcemu-seed"))
    keep = list(items)
    ids = config.getoption("--tcemu-ids")
    if ids:
        wanted = {line.strip() for line in open(ids) if line.strip()}
        keep = [it for it in keep if it.nodeid.split("::")[-1] in wanted]
    per = config.getoption("--tcemu-per-test")
    if per:
        groups = {}
        for it in keep:
            groups.setdefault(_function(it), []).append(it)
        keep = [it for g in groups.values() for it in (rng.sample(g, per) if len(g) > per else g)]
    n = config.getoption("--tcemu-sample")
    if n and n < len(keep):
        keep = rng.sample(keep, n)
    shard = config.getoption("--tcemu-shard")
    if shard:
        i, total = (int(x) for x in shard.split("/"))
        keep = [it for j, it in enumerate(sorted(keep, key=lambda it: it.nodeid)) if j % total == i]
    report = config.getoption("--tcemu-report")
    if config.getoption("--tcemu-resume") and report and os.path.exists(report):
        done = {json.loads(line)["test"] for line in open(report) if line.strip()}
        keep = [it for it in keep if it.nodeid.split("::")[-1] not in done]
    chosen = {id(it) for it in keep}
    dropped = [it for it in items if id(it) not in chosen]
    items[:] = [it for it in items if id(it) in chosen]
    if dropped:
        config.hook.pytest_deselected(items=dropped)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    f = item.config._tcemu_report
    if f is None or not (rep.when == "call" or rep.outcome != "passed"):
        return
    if rep.when == "setup" and rep.outcome == "passed":
        return
    first = ""
    if rep.outcome == "skipped" and isinstance(rep.longrepr, tuple):
        first = str(rep.longrepr[2])
    elif rep.outcome == "failed" and call.excinfo is not None:
        e = call.excinfo.value
        first = f"{type(e).__module__}.{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    f.write(json.dumps({"test": item.nodeid.split("::")[-1], "function": _function(item), "when": rep.when,
                        "outcome": "xfailed" if hasattr(rep, "wasxfail") and rep.outcome == "skipped" else
                        rep.outcome, "seconds": round(rep.duration, 2), "detail": first[:400],
                        "time": time.time()}) + "\n")
    f.flush()
