"""`program_outputs` traces (traces/README.md): a small CUDA module's kernels as the GPU left their one output
buffer, each launch rerun on tcemu's PTX interpreter from the PTX embedded in the trace."""
import hashlib

import numpy as np

from ... import ptx as P
from ...core.errors import TraceError
from ...core.validate import is_int
from ..archive import Trace
from .base import GroupResult, Kind, ReplayResult, col, meta_list, offsets


def _check(meta, cols):
    """program_outputs: the embedded PTX is the one meta.ptx_sha256 names; one launch record per output range,
    each a kernel of one output buffer with a bounded grid and block."""
    ptx = col(cols, "ptx", 0, 255, (None,))
    if hashlib.sha256(ptx.astype(np.uint8).tobytes()).hexdigest() != meta.get("ptx_sha256"):
        raise TraceError("ptx", "the embedded PTX is not the one meta.ptx_sha256 names")

    def launch(v):
        return (isinstance(v, dict) and isinstance(v.get("entry"), str) and 0 < len(v["entry"]) <= 200
                and all(is_int(v.get(k)) and 1 <= v[k] <= lim for k, lim in
                        (("grid", 65535), ("block", 1024), ("words", 1 << 24))))
    launches = meta_list(meta, "launches", 256, launch)
    bits = col(cols, "bits", 0, (1 << 32) - 1, (None,))
    off = offsets(cols, "offsets", len(launches), bits.size)
    if any(int(off[i + 1] - off[i]) != r["words"] for i, r in enumerate(launches)):
        raise TraceError("offsets", "each launch's range must hold its meta.launches words")


def _replay(trace: Trace, result: ReplayResult, max_report: int):
    """Each launch of the embedded module rerun on the PTX interpreter (one output buffer, zeroed first, as the
    capture did), every output word demanded."""
    cols = trace.columns
    mod = P.load(cols["ptx"].astype(np.uint8).tobytes().decode("utf-8"))
    for i, r in enumerate(trace.meta["launches"]):
        want = cols["bits"][int(cols["offsets"][i]):int(cols["offsets"][i + 1])]
        out = np.zeros(want.size, np.uint32)
        mod.launch(r["entry"], grid=r["grid"], block=r["block"], args=[out])
        same = out == want
        g = result.groups.setdefault(r["entry"], GroupResult())
        g.cases += 1
        g.cases_matched += bool(same.all())
        g.values += want.size
        g.values_matched += int(same.sum())
        if not same.all() and len(result.mismatches) < max_report:
            j = int(np.flatnonzero(~same)[0])
            result.mismatches.append(f"{r['entry']}: word {j}: hardware 0x{int(want[j]):08x}, tcemu 0x{int(out[j]):08x}")


TRACE_KINDS = (Kind("program_outputs", ("ptx", "bits", "offsets"), _check, _replay),)
