"""`sfu_proof` traces (scripts/prove_sfu.py, scripts/sfu_proof_trace.py; traces/README.md): a sample of the
approximate forms' results (special values of every class, seeded random inputs) against tcemu.ptx.fparith,
with the exhaustive GPU proof's counts in the meta."""
import numpy as np

from ...core.errors import TraceError
from ...core.validate import is_int
from ...ptx import fparith
from ...ptx.errors import PtxError
from ...ptx.sfu_forms import form_bits, parse_form
from ..archive import Trace
from .base import GroupResult, Kind, ReplayResult, col, meta_list


def _check(meta, cols):
    """sfu_proof: meta.forms are approximate forms tcemu knows (sfu_forms.LEGAL), the sample's operands fit
    their forms' widths, meta.proof counts every form once."""

    def form(v):
        try:
            return isinstance(v, str) and len(v) <= 40 and bool(parse_form(v))
        except PtxError:
            return False
    forms = meta_list(meta, "forms", 64, form)
    n = col(cols, "form", 0, len(forms) - 1, (None,)).size
    for name, hi in (("a", (1 << 64) - 1), ("b", (1 << 32) - 1), ("out", (1 << 64) - 1)):
        col(cols, name, 0, hi, (n,))
    width = np.array([form_bits(parse_form(f)[3]) for f in forms])[cols["form"].astype(np.int64)]
    for name in ("a", "out"):
        over = (width < 64) & (cols[name] >> np.minimum(width, 63).astype(np.uint64) != 0)
        if over.any():
            raise TraceError(name, f"case {int(np.flatnonzero(over)[0])}: wider than its form's operands")
    proof = meta.get("proof")
    if not isinstance(proof, dict) or not isinstance(proof.get("forms"), list) or len(proof["forms"]) > 64 or \
            not all(isinstance(r, dict) and r.get("form") in forms and is_int(r.get("inputs"))
                    and is_int(r.get("mismatches")) for r in proof["forms"]):
        raise TraceError("meta.proof", "must hold {form, inputs, mismatches} per form of meta.forms")


def _replay(trace: Trace, result: ReplayResult, max_report: int):
    """The approximate forms' sample (special values of every class, seeded random inputs) through
    tcemu.ptx.fparith, every result bit demanded; the exhaustive GPU counts are reported as notes."""
    cols, forms = trace.columns, trace.meta["forms"]
    for i, name in enumerate(forms):
        sel = np.flatnonzero(cols["form"] == i)
        if not sel.size:
            continue
        op, rounding, ftz, ftype = parse_form(name)
        dt = {16: np.uint16, 32: np.uint32, 64: np.uint64}[form_bits(ftype)]
        ops = [cols["a"][sel].astype(dt)] + ([cols["b"][sel].astype(np.uint32)] if op == "div" else [])
        got = np.asarray(fparith.float_op(op, ftype, *ops, rounding=rounding, ftz=ftz)).astype(np.uint64)
        same = got == cols["out"][sel]
        g = result.groups.setdefault(name, GroupResult())
        g.cases += sel.size
        g.cases_matched += int(same.sum())
        g.values += sel.size
        g.values_matched += int(same.sum())
        if not same.all() and len(result.mismatches) < max_report:
            j = sel[int(np.flatnonzero(~same)[0])]
            result.mismatches.append(f"{name}: in 0x{int(cols['a'][j]):x} 0x{int(cols['b'][j]):x}: hardware "
                                     f"0x{int(cols['out'][j]):x}, tcemu 0x{int(got[np.flatnonzero(~same)[0]]):x}")
    proved = trace.meta["proof"]["forms"]
    result.notes.append(f"exhaustive GPU proof (meta.proof): {sum(r['inputs'] for r in proved):,} inputs over "
                        f"{len(proved)} forms, {sum(r['mismatches'] for r in proved):,} mismatches")


TRACE_KINDS = (Kind("sfu_proof", ("form", "a", "b", "out"), _check, _replay),)
