"""Replays the 159 linear-filter cases of traces/texture_sm90.npz under tcemu's rule and under the alternatives the
rule was chosen against (docs/verification.md, Textures and surfaces), printing matched words per group:

    PYTHONPATH=. python scripts/capture/texture_linear_alternatives.py

Each alternative changes one part of tcemu.ptx.texture for the run: guard bits, the 2-D weights, the coordinate's
fractional bits, the 1-D border row, the float sum (in float64, rounded once to the format)."""
import sys
from contextlib import contextmanager

import numpy as np

from tcemu.ptx import texture as TX
from tcemu.traces import load_trace, replay


@contextmanager
def patched(**changes):
    old = {k: getattr(TX, k) for k in changes}
    for k, v in changes.items():
        setattr(TX, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(TX, k, v)


def independent_weights(al):   # each 2-D corner weight rounded alone (half up)
    if len(al) == 1:
        return [((0,), 256 - al[0]), ((1,), al[0])]
    a, b = al
    return [((0, 0), ((256 - a) * (256 - b) + 128) >> 8), ((1, 0), (a * (256 - b) + 128) >> 8),
            ((0, 1), ((256 - a) * b + 128) >> 8), ((1, 1), (a * b + 128) >> 8)]


def exact_sum(v, w, p, emin, rmin):   # the weighted sum in float64, rounded to the format
    s = (v * w).sum(axis=0) / 256.0
    return s.astype(np.float16).astype(np.float64) if p == 11 else s


def main(path="traces/texture_sm90.npz"):
    trace = load_trace(path)
    c = trace.columns["cases"].astype(np.int64)
    rows = np.flatnonzero((c[:, 8] == 1) & (c[:, 14] == 0) & (trace.columns["status"] == 0))
    sub = type(trace)(trace.path, trace.meta, dict(trace.columns, cases=trace.columns["cases"][rows],
                                                   status=trace.columns["status"][rows]))
    real_filter = TX.filter_linear

    def no_border_row(d, alphas, corner):   # a 1-D texture filtered alone, no hidden border row
        saved = d.address
        d.address = (d.address[0], 1, 1)
        try:
            return real_filter(d, alphas, corner)
        finally:
            d.address = saved
    variants = [("tcemu's rule", {}), ("3 guard bits", dict(FILTER_GUARD_BITS=3)),
                ("5 guard bits", dict(FILTER_GUARD_BITS=5)), ("2-D weights rounded alone", dict(
                    filter_weights=independent_weights)), ("22 fractional coordinate bits", dict(NORMALIZED_BITS=22)),
                ("1-D without the border row", dict(filter_linear=no_border_row)),
                ("float64 sum, rounded to the format", dict(_filter_float=exact_sum))]
    for name, changes in variants:
        with patched(**changes):
            r = replay(sub)
        groups = ", ".join(f"{g}: {v.values_matched}/{v.values}" for g, v in r.groups.items())
        print(f"{name:32s} {'all match' if r.ok else 'MISMATCH'}  {groups}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
