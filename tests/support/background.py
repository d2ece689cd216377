"""Work a session will need later, started when collection ends and done on the machine's other core.

pytest runs the tests one at a time, on one core; CI has two. tests/conftest.py hands the long, self-contained jobs
of the selected tests to one background worker, one job at a time, in the order they will be needed: the
whole-trace replays of tests/traces/test_traces.py (tests/support/replays.py), the SFU kernels' replays
(tests/support/sfu_replays.py), both computed in a helper process (in_helper), and the CuTe oracles' builds
(tests/support/cute.py). A test asks for its job's result with result(): it waits for a job the
worker is running, and runs a job the worker has not started itself. Either way the test checks the same values.
"""
import concurrent.futures
import importlib
import multiprocessing
import threading

_POOL = None
_HELPER = None
_JOBS = {}
_AT_END = []
_LOCK = threading.Lock()


def submit(key, fn, *args):
    """Queue fn(*args) for the background worker under `key` (once per key)."""
    global _POOL
    with _LOCK:
        if key in _JOBS:
            return
        if _POOL is None:
            _POOL = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="tests-background")
        _JOBS[key] = _POOL.submit(fn, *args)


def result(key, fn, *args):
    """The result of the job `key`: the background worker's (waiting for it if it is running) or, when it has not
    started it, fn(*args) here. A job's exception is raised here."""
    with _LOCK:
        job = _JOBS.get(key)
        if job is not None and job.cancel():
            job = None
        if job is None:
            _JOBS.pop(key, None)
    return fn(*args) if job is None else job.result()


def running(key):
    """The background job `key` if it is queued or running, else None."""
    with _LOCK:
        job = _JOBS.get(key)
        return job if job is not None and not job.done() else None


def at_end(fn):
    """Call fn() at the end of the session, after dropping the jobs not started (to stop a running one's process)."""
    with _LOCK:
        if fn not in _AT_END:
            _AT_END.append(fn)


def cancel_pending():
    """At the end of the session: drop the jobs not started yet, then call the at_end functions."""
    with _LOCK:
        for job in _JOBS.values():
            job.cancel()
        hooks = list(_AT_END)
    for fn in hooks:
        fn()


def _call(module, name, args):
    """In the helper process: module.name(*args); a TcemuError comes back as its class, field and rule (they do not
    pickle as they are)."""
    from tcemu import TcemuError
    try:
        return "ok", getattr(importlib.import_module(module), name)(*args)
    except TcemuError as e:
        return "raise", type(e).__module__, type(e).__qualname__, e.field, e.rule


def in_helper(module, name, *args):
    """module.name(*args) (a function of tests/support) in the session's helper process: one, spawned at the first
    call, so that tcemu is imported and numba's kernels loaded once; run from the background worker, it uses the
    other core. A TcemuError it raises is raised here again, the same class with the same field and rule."""
    global _HELPER
    with _LOCK:
        if _HELPER is None:
            _HELPER = concurrent.futures.ProcessPoolExecutor(max_workers=1,
                                                             mp_context=multiprocessing.get_context("spawn"))
            _AT_END.append(_stop_helper)
    out = _HELPER.submit(_call, module, name, args).result()
    if out[0] == "raise":
        _, mod, cls, field, rule = out
        raise getattr(importlib.import_module(mod), cls)(field, rule)
    return out[1]


def _stop_helper():
    if _HELPER is not None:
        for proc in list(getattr(_HELPER, "_processes", {}).values()):
            proc.terminate()
        _HELPER.shutdown(wait=False, cancel_futures=True)
