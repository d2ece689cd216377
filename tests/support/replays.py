"""Whole-trace replays, once a session: tcemu.traces.archive.replay(path, max_report=2**20) reduced to what the
tests check (every mismatch line; per group, the cases and values and how many matched; ok).

summary(path) is the same whichever process computed it: tests/conftest.py queues the replays of the selected
tests for the background worker (tests/support/background.py), which runs them in a second process, on the other
core (`python tests/support/replays.py PATH` prints one as JSON); a replay the worker has not started runs here.
Every test that replays a whole trace asks summary(), so a trace replayed by two tests is replayed once.
"""
import json
import os
import sys

import background

MAX_REPORT = 1 << 20
_DONE = {}


def _summarise(path):
    from tcemu.traces import replay
    result = replay(path, max_report=MAX_REPORT)
    return {"mismatches": list(result.mismatches), "ok": bool(result.ok),
            "groups": {name: {"cases": int(g.cases), "cases_matched": int(g.cases_matched), "values": int(g.values),
                              "values_matched": int(g.values_matched)} for name, g in result.groups.items()}}


def _summarise_in_helper(path):
    return background.in_helper("replays", "_summarise", path)


def prepare(path):
    """Queue the replay of `path` for the background worker."""
    background.submit(("replay", os.path.abspath(path)), _summarise_in_helper, os.path.abspath(path))


def summary(path):
    """The summary of replaying the trace at `path` (computed once a session)."""
    key = os.path.abspath(path)
    if key not in _DONE:
        _DONE[key] = background.result(("replay", key), _summarise, key)
    return _DONE[key]


if __name__ == "__main__":
    json.dump(_summarise(sys.argv[1]), sys.stdout)
