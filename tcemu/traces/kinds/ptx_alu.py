"""Replay a `ptx_alu` hardware capture (traces/ptx_alu_sm90.npz, scripts/capture_ptx_alu.py) against
tcemu.ptx.fparith / intarith and report, per op form, how many captured results match bit for bit.

    r = replay_alu_trace("traces/ptx_alu_sm90.npz")
    print(r.table())            # one line per form: cases, matched, status
    r.forms["fma.rn.f32"]       # FormResult(cases, matched, status, first_mismatch)

status: "match" (every case), "MISMATCH", "refused" (tcemu raises PtxUnsupported: approximate forms; the
trace then holds what the hardware does, to model them later) or "ERROR" (tcemu raised something else:
a bug). Reading the trace never executes anything in it (tcemu.traces.load_trace: no numpy.load, JSON meta).
"""
from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np

from ...core.validate import is_int
from ...ptx.errors import PtxError, PtxUnsupported
from ...ptx.fparith import cvt, float_compare, float_op, set_bits, testp
from ...ptx.intarith import int_compare, int_op
from ..archive import Trace, read_trace
from .base import GroupResult, Kind, ReplayResult, col, meta_list

_FLOAT_OPS = {"add", "sub", "mul", "fma", "mad", "div", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos",
              "tanh", "neg", "abs", "min", "max", "copysign"}
_ROUND = {"rn", "rz", "rm", "rp", "approx", "full", "rna", "rni", "rzi", "rmi", "rpi"}
_FTYPES = {"f32", "f64", "f16", "bf16", "f16x2", "bf16x2"}
_INTS = {"s8": 8, "u8": 8, "s16": 16, "u16": 16, "s32": 32, "u32": 32, "s64": 64, "u64": 64}
# operand tags of meta.forms[i].src (traces/README.md, ptx_alu) and their register widths
OPERAND_BITS = {"f64": 64, "f32": 32, "f16": 16, "bf16": 16, "f16x2": 32, "bf16x2": 32, "e4m3x2": 16, "e5m2x2": 16,
                "u16": 16, "s16": 16, "u32": 32, "s32": 32, "u64": 64, "s64": 64, "sh": 32, "pos": 32, "len": 32,
                "cf": 32, "sel": 32}


@dataclass
class FormResult:
    cases: int = 0
    matched: int = 0
    status: str = ""
    first_mismatch: Optional[str] = None


@dataclass
class AluReplay:
    meta: dict
    forms: Dict[str, FormResult] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(f.status in ("match", "refused") for f in self.forms.values()) and bool(self.forms)

    def table(self) -> str:
        lines = [f"{'form':<34} {'cases':>7} {'matched':>7}  status"]
        for name, f in self.forms.items():
            lines.append(f"{name:<34} {f.cases:>7} {f.matched:>7}  {f.status}"
                         + (f"  ({f.first_mismatch})" if f.first_mismatch else ""))
        return "\n".join(lines)


def load_alu_trace(path):
    """(meta, columns) of a ptx_alu trace, read as tcemu.traces.load_trace reads one (only the documented members,
    sizes and the meta's forms checked before anything is decompressed; nothing in the file is executed); a
    trace of another kind is refused (meta.kind)."""
    trace = read_trace(path, {"ptx_alu": TRACE_KINDS[0]})
    return trace.meta, trace.columns


def _extend(bits, dtype, reg_bits):
    """An integer result of `dtype` as the destination register holds it (PTX 6.4.x: sign- or zero-extended
    to the register width)."""
    w = _INTS.get(dtype)
    bits = bits.astype(np.uint64)
    if w is None or w >= reg_bits or not dtype.startswith("s"):
        return bits
    sign = (bits >> np.uint64(w - 1)) & np.uint64(1)
    fill = np.uint64(((1 << reg_bits) - 1) ^ ((1 << w) - 1))
    return np.where(sign == 1, bits | fill, bits)


def evaluate(name, dst, src, a, b, c, e):
    """tcemu's (d0, d1) for one captured op form over uint64 operand columns; raises PtxUnsupported for
    refused forms."""
    ops = [a, b, c, e][:len(src)]
    ops = [x.astype({16: np.uint16, 32: np.uint32, 64: np.uint64}[OPERAND_BITS[t]]) for x, t in zip(ops, src)]
    zero = np.zeros(a.size, np.uint64)
    parts = name.split(".")
    head = parts[0]
    if name == "sub.cc.u32+subc":  # the flag read back through `subc d1, 0, 0`
        d, cf = int_op("sub", "u32", ops[0], ops[1], cc=True)
        z = np.zeros(d.shape, np.uint32)
        return d, int_op("subc", "u32", z, z, carry_in=cf).astype(np.uint64)
    if head in ("add", "sub", "addc", "subc", "mad", "madc") and "cc" in parts:
        t = parts[-1]
        mode = parts[1] if parts[1] in ("lo", "hi") else None
        if head in ("addc", "subc"):
            d, cf = int_op(head, t, ops[0], ops[1], cc=True, carry_in=ops[2] != 0)
        elif head == "madc":
            d, cf = int_op("madc", t, ops[0], ops[1], ops[2], mode=mode, cc=True, carry_in=ops[3] != 0)
        elif head == "mad":
            d, cf = int_op("mad", t, *ops, mode=mode, cc=True)
        else:
            d, cf = int_op(head, t, ops[0], ops[1], cc=True)
        return d, cf.astype(np.uint64)
    if head == "testp":
        return testp(parts[1], parts[2], ops[0]).astype(np.uint64), zero
    if head == "setp":
        t = parts[-1]
        ftz = "ftz" in parts
        if t in _FTYPES:
            r = float_compare(parts[1], t, ops[0], ops[1], ftz=ftz)
            if isinstance(r, tuple):
                return r[0].astype(np.uint64), r[1].astype(np.uint64)
            return r.astype(np.uint64), zero
        return int_compare(parts[1], t, ops[0], ops[1]).astype(np.uint64), zero
    if head == "set":
        cmp, dt, st = parts[1], parts[-2], parts[-1]
        r = float_compare(cmp, st, ops[0], ops[1])
        if isinstance(r, tuple):
            if dt in ("f16x2", "bf16x2"):
                base = dt[:-2]
                return (set_bits(base, r[0]).astype(np.uint64) |
                        (set_bits(base, r[1]).astype(np.uint64) << np.uint64(16))), zero
            return (set_bits("u16", r[0]).astype(np.uint64) | (set_bits("u16", r[1]).astype(np.uint64) << np.uint64(16))), zero
        return set_bits(dt, r).astype(np.uint64), zero
    if head == "cvt":
        mods = parts[1:-2]
        dt, at = parts[-2], parts[-1]
        rounding = next((m for m in mods if m in _ROUND), None)
        kw = dict(rounding=rounding, ftz="ftz" in mods, sat="sat" in mods, satfinite="satfinite" in mods,
                  relu="relu" in mods)
        if len(ops) == 2:
            r = cvt(dt, at, ops[0], ops[1], **kw)
        else:
            r = cvt(dt, at, ops[0], **kw)
        return _extend(np.asarray(r), dt, dst[0]), zero
    if head in _FLOAT_OPS and parts[-1] in _FTYPES:
        t = parts[-1]
        mods = parts[1:-1]
        rounding = next((m for m in mods if m in _ROUND), None)
        r = float_op(head, t, *ops, rounding=rounding, ftz="ftz" in mods, sat="sat" in mods, relu="relu" in mods,
                     nan="NaN" in mods, xorsign_abs="xorsign" in mods)
        return r.astype(np.uint64), zero
    # integer forms
    if head == "lop3":
        return int_op("lop3", "b32", ops[0], ops[1], ops[2], int(parts[-1], 16)).astype(np.uint64), zero
    if head == "shf":
        return int_op(f"shf.{parts[1]}", "b32", *ops, mode=parts[2]).astype(np.uint64), zero
    if head == "prmt":
        return int_op("prmt", "b32", *ops, mode=parts[2] if len(parts) > 2 else None).astype(np.uint64), zero
    if head in ("dp4a", "dp2a"):
        mode = parts[1] if head == "dp2a" else None
        return int_op(head, ".".join(parts[-2:]), *ops, mode=mode).astype(np.uint64), zero
    t = parts[-1]
    mods = parts[1:-1]
    mode = next((m for m in mods if m in ("lo", "hi", "wide", "clamp", "wrap")), None)
    r = int_op(head, t, *ops, mode=mode, sat="sat" in mods, relu="relu" in mods, shiftamt="shiftamt" in mods)
    return np.asarray(r).astype(np.uint64), zero


def replay_alu_trace(path, max_report: int = 1) -> AluReplay:
    meta, cols = load_alu_trace(path)
    return replay_alu_columns(meta, cols, max_report)


def replay_alu_columns(meta, cols, max_report: int = 1) -> AluReplay:
    """Replay a loaded ptx_alu trace (meta dict, columns) form by form."""
    result = AluReplay(meta)
    op = cols["op"].astype(np.int64)
    order = np.argsort(op, kind="stable")
    bounds = np.searchsorted(op[order], np.arange(len(meta["forms"]) + 1))
    for k, form in enumerate(meta["forms"]):
        idx = order[bounds[k]:bounds[k + 1]]
        name, dst, src = form["name"], form["dst"], form["src"]
        fr = FormResult(cases=int(idx.size))
        result.forms[name] = fr
        if not idx.size:
            fr.status = "empty"
            continue
        a, b, c, e = (cols[x][idx] for x in ("a", "b", "c", "e"))
        hw0, hw1 = cols["d"][idx], cols["d1"][idx]
        try:
            d0, d1 = evaluate(name, dst, src, a, b, c, e)
        except PtxUnsupported:
            fr.status = "refused"
            continue
        except (PtxError, ValueError, TypeError, KeyError, IndexError) as ex:  # a name tcemu cannot read
            fr.status = "ERROR"
            fr.first_mismatch = f"{type(ex).__name__}: {ex}"
            continue
        mask0 = np.uint64((1 << dst[0]) - 1) if 0 < dst[0] < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
        same = (d0.astype(np.uint64) & mask0) == (hw0 & mask0)
        if len(dst) > 1:
            mask1 = np.uint64((1 << dst[1]) - 1) if 0 < dst[1] < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
            same &= (d1.astype(np.uint64) & mask1) == (hw1 & mask1)
        fr.matched = int(same.sum())
        fr.status = "match" if fr.matched == fr.cases else "MISMATCH"
        if fr.matched != fr.cases:
            i = int(np.flatnonzero(~same)[0])
            ins = " ".join(f"{int(x[i]):#x}" for x in (a, b, c, e)[:len(src)])
            fr.first_mismatch = (f"in {ins}: hardware {int(hw0[i]):#x}/{int(hw1[i]):#x}, "
                                 f"tcemu {int(d0[i]):#x}/{int(d1[i]):#x}")
    return result


# ---- the kind: its consistency check (load_trace and replay both run it) and its replay

def _check(meta, cols):

    def form(v):
        return (isinstance(v, dict) and isinstance(v.get("name"), str) and 0 < len(v["name"]) <= 80
                and isinstance(v.get("dst"), list) and 1 <= len(v["dst"]) <= 2
                and all(is_int(d) and 0 <= d <= 64 for d in v["dst"])
                and isinstance(v.get("src"), list) and len(v["src"]) <= 4
                and all(isinstance(t, str) and t in OPERAND_BITS for t in v["src"]))
    forms = meta_list(meta, "forms", 4096, form)
    n = col(cols, "op", 0, len(forms) - 1, (None,)).size
    for name in ("a", "b", "c", "e", "d", "d1"):
        col(cols, name, 0, (1 << 64) - 1, (n,))


def _replay(trace: Trace, result: ReplayResult, max_report: int):
    """ALU instructions one form at a time through the interpreter's exact arithmetic (tcemu.ptx)."""
    alu = replay_alu_columns(trace.meta, trace.columns)
    refused = []
    for name, f in alu.forms.items():
        if f.status == "refused":  # approximate forms tcemu does not model: not judged
            refused.append(name)
            continue
        g = result.groups.setdefault(name, GroupResult())
        g.cases += f.cases
        g.cases_matched += f.matched
        g.values += f.cases
        g.values_matched += f.matched
        if f.status != "match" and len(result.mismatches) < max_report:
            result.mismatches.append(f"{name}: {f.status} {f.first_mismatch or ''}")
    if refused:
        result.notes.append(f"{len(refused)} approximate forms refused by tcemu, not judged: {', '.join(refused)}")


TRACE_KINDS = (Kind("ptx_alu", ("op", "a", "b", "c", "e", "d", "d1"), _check, _replay),)
