"""Hypothesis profiles: 'ci' (default, fast) and 'campaign' (long fuzzing runs).

    HYPOTHESIS_PROFILE=campaign pytest tests/ -k hypothesis

The test folders mirror tcemu's subpackages; their shared helpers are in tests/support/ (on sys.path through
pyproject's pythonpath). tests/README.md lists the folders, the markers and the fast subset.
"""
import gc
import os
import shutil
import tempfile

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=150, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("campaign", max_examples=20000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config):
    """Where the environment forbids bytecode files (PYTHONDONTWRITEBYTECODE), every Python process the tests start
    (`tcemu exec`'s CLI and the program's interpreter, the CLI tests, dask workers: several hundred) compiled tcemu,
    numpy and numba from source again, ~0.8 s each of a 3 s `tcemu exec`. The session's processes (xdist workers
    included: they start after this) keep their bytecode in a temporary folder instead (PYTHONPYCACHEPREFIX),
    removed when the session ends; the source tree gets none."""
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTEST_XDIST_WORKER") and \
            not os.environ.get("PYTHONPYCACHEPREFIX"):
        config._tcemu_pycache = tempfile.mkdtemp(prefix="tcemu-tests-pyc-")
        os.environ["PYTHONPYCACHEPREFIX"] = config._tcemu_pycache
        del os.environ["PYTHONDONTWRITEBYTECODE"]


def pytest_unconfigure(config):
    folder = getattr(config, "_tcemu_pycache", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop("PYTHONPYCACHEPREFIX", None)
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"


def pytest_collection_modifyitems(session, config, items):
    """The test files that run a CuTe oracle go last, whole and in their order, so that the oracle's build (started
    when collection ends, when it is not cached) overlaps the rest of the suite instead of holding it up."""
    import cute
    late = {item.nodeid.split("::")[0] for item in items
            if set(getattr(item, "fixturenames", ())) & set(cute.FIXTURE_ORACLES)}
    if late:
        items[:] = [i for i in items if i.nodeid.split("::")[0] not in late] + \
                   [i for i in items if i.nodeid.split("::")[0] in late]


def pytest_collection_finish(session):
    """Queue the selected tests' long, self-contained jobs for the background worker (tests/support/background.py),
    in the order the tests will want them: whole-trace replays (tests/support/replays.py), the SFU kernels' replays
    (tests/support/sfu_replays.py), the CuTe oracles' builds (tests/support/cute.py; a cached one costs nothing).
    Under pytest-xdist (`-n auto`, the README's command) the workers share the cores instead: each replays what it
    runs, and only the oracles' builds are queued (a lock makes one worker build, the other wait)."""
    if session.config.option.collectonly:
        return
    xdist = bool(os.environ.get("PYTEST_XDIST_WORKER"))   # every worker collects every test: it replays on demand
    import cute
    import replays
    import sfu_replays
    oracles = []
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if not xdist:
            _queue_replays(item, callspec, replays, sfu_replays)
        for fixture, names in cute.FIXTURE_ORACLES.items():
            if fixture in getattr(item, "fixturenames", ()):
                oracles += [n for n in names if n not in oracles]
    if oracles:
        cute.prebuild(oracles)
    # What collection made (test modules, items, tcemu, numpy, numba: ~200,000 objects) lives all session: frozen,
    # the cyclic GC's full collections during the tests no longer walk it each time (they cost a 2-core CI run
    # ~10% of its CPU: 0.25 s each, some 60 per worker). Objects the tests make are collected as before.
    gc.collect()
    gc.freeze()


def _queue_replays(item, callspec, replays, sfu_replays):
    if getattr(item, "originalname", None) == "test_trace_replays_exactly" and callspec is not None:
        replays.prepare(callspec.params["path"])
    if item.nodeid.startswith("tests/ptx/test_atomics_trace.py::test_replays_every_word"):
        replays.prepare(item.module.TRACE)
    if item.nodeid.startswith("tests/sfu/test_triton_sfu_kernels.py::test_case_replays_exactly"):
        sfu_replays.prepare("triton", callspec.params["i"])
    if item.nodeid.startswith("tests/sfu/test_cutlass_sfu_kernels.py::test_replay_matches_h100"):
        sfu_replays.prepare("cutlass", callspec.params["i"])


def pytest_sessionfinish(session):
    """Jobs the background worker has not started are dropped, a replay still running is stopped (a running
    build finishes, into its cache)."""
    import background
    background.cancel_pending()
