"""traces/atomics_sm90.npz: float atomics on special values, as an H100 left them (kind program_outputs)."""
import os

import pytest

from tcemu.traces import Trace, load_trace, replay

import replays
from paths import TRACES

TRACE = os.path.join(TRACES, "atomics_sm90.npz")


@pytest.mark.slow
def test_replays_every_word():
    r = replays.summary(TRACE)   # the replay tests/traces/test_traces.py checks too: done once a session
    assert r["mismatches"] == [] and sum(g["values"] for g in r["groups"].values()) == 12674


def test_the_flush_rules_the_trace_decides():
    """atom.global.add.f32 flushes subnormal inputs and results (PTX ISA, atom: 'on global memory'), the
    shared-memory form keeps them: thread 2 adds S[2] = 2^-149 to S[0] = +0."""
    t = load_trace(TRACE)
    bits, off = t.columns["bits"], t.columns["offsets"]
    names = [r["entry"] for r in t.meta["launches"]]
    glob = bits[off[names.index("add_f32_global")]:][:1152].reshape(-1, 2)
    shared = bits[off[names.index("add_f32_shared")]:][:1152].reshape(-1, 2)
    i = 2 * 24   # memory S[0] = +0, operand S[2] = 2^-149
    assert (int(glob[i, 1]), int(shared[i, 1])) == (0, 1)


def test_a_changed_word_fails():
    t = load_trace(TRACE)
    cols = dict(t.columns)
    cols["bits"] = cols["bits"].copy()
    cols["bits"][5] ^= 1
    r = replay(Trace(t.path, t.meta, cols))
    assert len(r.mismatches) == 1 and "add_f32_global: word 5" in r.mismatches[0]
