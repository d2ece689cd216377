"""`mma_sync_numerics` traces (scripts/capture/capture_mma_sync.cu, traces/README.md): one mma.sync.aligned per case on
registers the capture filled from a seed by register position, every lane's raw D registers; replayed through
tcemu's fragments and arithmetic (tcemu.ptx.ops.mma_sync.execute) on the same registers (tcemu.traces.mma_seeds)."""
import numpy as np

from ...core.errors import TcemuError, TraceError
from ...core.validate import show
from ...hopper.mma_sync import BITS, parse_form
from ...ptx.ops.mma_sync import execute
from ..archive import Trace
from ..mma_seeds import MODES, lane_registers
from .base import GroupResult, Kind, ReplayResult, col, meta_list, offsets

# the generator's (exponent bits, mantissa bits) per type; 0 exponent bits: an integer (capture_mma_sync.cu)
GENERATOR_FORMATS = {"f16": (5, 10), "bf16": (8, 7), "tf32": (8, 23), "f32": (8, 23), "e4m3": (4, 3),
                     "e5m2": (5, 2), "f64": (11, 52), "s8": (0, 8), "u8": (0, 8), "s32": (0, 32)}
_PREFIX = "mma.sync.aligned."


def _form(text):
    if not isinstance(text, str) or not text.startswith(_PREFIX):
        raise TraceError("meta.forms", f"{show(text)} is not an mma.sync.aligned opcode")
    try:
        return parse_form(text[len(_PREFIX):].split("."))
    except TcemuError as e:
        raise TraceError("meta.forms", f"{text}: {e}") from None


def _check(meta, cols):
    forms = [_form(f) for f in meta_list(meta, "forms", 256, lambda v: isinstance(v, str))]
    n = col(cols, "seed", 0, (1 << 64) - 1, (None,)).size
    form = col(cols, "form", 0, len(forms) - 1, (n,))
    modes = col(cols, "modes", 0, (1 << 24) - 1, (n,))
    if n and any(int(((modes >> s) & 255).max()) > max(MODES) for s in (0, 8, 16)):
        raise TraceError("modes", f"each operand's mode is 0..{max(MODES)} (mma_seeds.MODES)")
    regs = col(cols, "regs", 0, (1 << 32) - 1, (None,))
    off = offsets(cols, "offsets", n, regs.size)
    want = np.array([32 * forms[f].words("D") for f in form.tolist()], np.int64)
    if n and not np.array_equal(np.diff(off), want):
        bad = int(np.flatnonzero(np.diff(off) != want)[0])
        raise TraceError("offsets", f"case {bad} must hold 32 x {want[bad] // 32} D words")


def case_inputs(trace: Trace, i: int):
    """(form, A words, B words, C words) of case i: every lane's registers as the capture filled them."""
    cols = trace.columns
    text = trace.meta["forms"][int(cols["form"][i])]
    form = _form(text)
    seed, modes = int(cols["seed"][i]), int(cols["modes"][i])
    words = []
    for stream, (w, t) in enumerate((("A", form.dtype_a), ("B", form.dtype_b), ("C", form.dtype_c))):
        words.append(lane_registers(seed, stream, (modes >> (8 * stream)) & 255, *GENERATOR_FORMATS[t], BITS[t],
                                    form.words(w)))
    return (form, *words)


def _replay(trace: Trace, result: ReplayResult, max_report: int):
    cols = trace.columns
    off = cols["offsets"]
    for i in range(cols["seed"].size):
        form, a, b, c = case_inputs(trace, i)
        text = trace.meta["forms"][int(cols["form"][i])][len(_PREFIX):]
        d = execute(form, a, b, c)
        hw = cols["regs"][off[i]:off[i + 1]].reshape(d.shape)
        same = hw == d
        group = result.groups.setdefault(text, GroupResult())
        group.cases += 1
        group.values += same.size
        group.values_matched += int(same.sum())
        group.cases_matched += bool(same.all())
        if not same.all() and len(result.mismatches) < max_report:
            lane, word = (int(x) for x in np.argwhere(~same)[0])
            result.mismatches.append(f"case {i} {text} seed={int(cols['seed'][i])} modes={int(cols['modes'][i]):#x}: "
                                     f"{int((~same).sum())} of {same.size} D words differ (first: lane {lane} word "
                                     f"{word}: tcemu {int(d[lane, word]):#010x}, hardware {int(hw[lane, word]):#010x})")


TRACE_KINDS = (Kind("mma_sync_numerics", ("seed", "form", "modes", "offsets", "regs"), _check, _replay),)
