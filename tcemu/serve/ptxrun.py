"""The PTX view of `tcemu serve`: run a small kernel on the interpreter (tcemu.ptx) and record one warp's
instructions through the launch's trace hook, bounded in text size, traced rows, warp instructions and time.

Only the CTA (and its cluster) holding the traced warp runs; the PTX text is parsed, never read from a path.
"""
import re
import time

import numpy as np

from ..core.errors import TcemuError
from ..tools.run import parse_arg
from ..ptx.errors import KernelFault
from ..ptx.machine import BLOCK, DIVERGED, EXITED
from ..ptx.module import Module
from ..ptx import parser as P
from ..ptx.optable import has_dest
from ..ptx.program import CLASS_ATTR
from .params import REQUIRED, Params, ServeError
from .ptxlinks import links, typed

PTX_FIELDS = ("ptx", "kernel", "grid", "block", "cluster", "shared", "args", "cta", "warp", "limit",
              "zero_init_shared", "check_layouts")
MAX_PTX = 192 * 1024           # characters of PTX text (server.MAX_BODY, 256 KiB, bounds the JSON body around it)
MAX_TRACE = 2000               # traced instructions of the chosen warp
MAX_WARP_INSTRUCTIONS = 1_000_000
MAX_LINKED = 400               # traced rows that carry a shared-memory / descriptor / TMA analysis
SECONDS = 5.0                  # wall-clock budget of one run
MAX_ARRAY_ELEMENTS = 1 << 20   # per zeros:/random: argument
SHOWN_VALUES = 64              # elements of each array argument returned after the run
SHOWN_REGS = 4                 # destination registers shown per instruction (wgmma writes up to 128)


class _Stop(Exception):
    """Raised by the trace hook to end a run (budget reached); never leaves this module."""

    def __init__(self, why: str):
        self.why = why


def _regs(op):
    if isinstance(op, P.Reg):
        return [op]
    if isinstance(op, P.Vec):
        return [r for o in op.items for r in _regs(o)]
    if isinstance(op, P.Pair):
        return _regs(op.first) + _regs(op.second)
    return []


def _args(text: str):
    """Kernel arguments in `tcemu run --arg` syntax, whitespace-separated; files are never read here."""
    values = []
    for i, spec in enumerate(text.split()):
        if spec.endswith(".npy"):
            raise ServeError("args", f"argument {i} ({spec}): the server reads no files; use zeros:/random: arrays")
        parts = spec.split(":")
        if parts[0] in ("zeros", "random") and len(parts) >= 3:
            try:
                n = int(np.prod([int(x) for x in parts[2].lower().split("x")], dtype=np.float64))
            except ValueError:
                n = 0  # parse_arg says what is wrong
            if n > MAX_ARRAY_ELEMENTS:
                raise ServeError("args", f"argument {i} ({spec}): {n} elements; at most {MAX_ARRAY_ELEMENTS}")
        try:
            values.append(parse_arg(spec, values, i))
        except TcemuError as e:
            raise ServeError("args", f"argument {i} ({spec}): {e.rule}") from None
    return values


def _launch_setting(e: TcemuError, params) -> str:
    """The form field a launch error is about, or None for a fault of the running kernel."""
    if isinstance(e, KernelFault):
        return None
    names = {"grid": "grid", "block": "block", "cluster": "cluster", "shared_bytes": "shared", "ctas": "cta",
             "args": "args"}
    if e.field in names:
        return names[e.field]
    return "args" if e.field in params else None


_WHERE = re.compile(r"\(line (\d+)\)(?:.*?), CTA \((\d+), (\d+), (\d+)\), warp (\d+)$")


def _fault(e, prog, cta, warp, rows) -> dict:
    """A kernel fault with where it happened (the machine appends "CTA (x, y, z), warp w" to the instruction's
    field): its PTX line, pc, CTA and warp; a fault of the traced warp adds a last row, the faulting instruction."""
    out = {"type": type(e).__name__, "field": e.field, "rule": e.rule, "line": None, "pc": None, "cta": None,
           "warp": None, "traced": False}
    m = _WHERE.search(e.field or "")
    if m:
        line = int(m.group(1))
        out.update(line=line, cta=[int(m.group(i)) for i in (2, 3, 4)], warp=int(m.group(5)))
        out["pc"] = next((i for i, ins in enumerate(prog.instrs) if ins.line == line), None)
        out["traced"] = tuple(out["cta"]) == tuple(cta) and out["warp"] == warp
        if out["traced"] and out["pc"] is not None:
            ins = prog.instrs[out["pc"]]
            rows.append({"step": len(rows), "pc": out["pc"], "line": line, "text": ins.text(), "lanes": 0, "ran": 0,
                         "control": "faults", "count": 1, "dests": [], "more_dests": 0, "links": [], "fault": True})
    return out


def ptx_view(raw, *, seconds: float = SECONDS) -> dict:
    deadline = time.perf_counter() + seconds  # the budget covers parsing and compiling too
    p = Params(raw, PTX_FIELDS)
    text = p.text("ptx", REQUIRED, max_len=MAX_PTX)
    try:
        mod = Module(text)
    except TcemuError as e:
        raise ServeError("ptx", f"{e.field}: {e.rule}") from None
    except (AttributeError, IndexError, TypeError) as e:
        # tcemu.ptx's parser reads past the last token of some truncated texts (e.g. one that ends inside an
        # instruction's operands) instead of raising PtxSyntaxError: still the text's fault, so a 400
        raise ServeError("ptx", f"the text ends early or is malformed (the parser stopped with "
                                f"{type(e).__name__} before saying where)") from None
    kernels = mod.kernels
    name = p.text("kernel", None, max_len=200)
    if name is None:
        if len(kernels) != 1:
            raise ServeError("kernel", f"the module has {len(kernels)} kernels; name one of {', '.join(kernels)}")
        name = next(iter(kernels))
    elif name not in kernels:
        raise ServeError("kernel", f"{name!r} is not a kernel of this module; kernels: {', '.join(kernels)}")
    try:
        prog = mod.program(name)
    except TcemuError as e:
        raise ServeError("ptx", f"{e.field}: {e.rule}") from None
    grid = p.int_list("grid", [1], max_len=3, lo=1, hi=1 << 31)
    block = p.int_list("block", [32], max_len=3, lo=1, hi=1024)
    cluster = p.int_list("cluster", [1], max_len=3, lo=1, hi=16)
    shared = p.integer("shared", 0, lo=0, hi=1 << 20)
    cta = tuple(p.int_list("cta", [0], max_len=3, lo=0, hi=1 << 31)) + (0,) * 3
    cta = cta[:3]
    warp = p.integer("warp", 0, lo=0, hi=31)
    limit = p.integer("limit", 500, lo=1, hi=MAX_TRACE)
    values = _args(p.text("args", "", max_len=4000) or "")
    nthreads = int(np.prod(block))
    if 32 * warp >= nthreads:
        raise ServeError("warp", f"warp {warp} does not exist: the block has {nthreads} threads "
                                 f"({(nthreads + 31) // 32} warps)")

    rows = []
    live_before = {}
    executed = [0]
    linked = [0]
    slots = prog.slots

    def trace(w, pc, m, control):
        executed[0] += 1
        if executed[0] & 63 == 0 and time.perf_counter() > deadline:
            raise _Stop(f"the {seconds:g} s budget ran out")
        if w.index != warp or w.cta.ctaid != cta:
            return
        before = live_before.get(w.index)
        if before is None:
            before = np.arange(32) < min(32, nthreads - 32 * warp)
        lanes = before if m is None else np.asarray(m, bool)
        live_before[w.index] = w.live.copy()
        ins = prog.instrs[pc] if pc < len(prog.instrs) else None
        ran = lanes.copy()
        if ins is not None and ins.guard:
            slot = slots.get(ins.guard[0])
            if slot is not None:
                pred = w.rp[slot.index].astype(bool)
                ran &= ~pred if ins.guard[1] else pred
        what = ("waits" if control is BLOCK else "diverges" if control is DIVERGED else "exits" if control is EXITED
                else f"jumps to {control}" if isinstance(control, int) else "next")
        if rows and what == "waits" and rows[-1]["pc"] == pc and rows[-1]["control"] == "waits":
            rows[-1]["count"] += 1  # a blocked instruction re-runs until it can proceed: one row
            return
        if len(rows) >= limit:
            raise _Stop(f"the trace reached its limit of {limit} instructions")
        dests, more = [], 0
        if ins is not None and control is not BLOCK and has_dest(ins):
            regs = _regs(ins.operands[0])
            more = max(len(regs) - SHOWN_REGS, 0)
            for r in regs[:SHOWN_REGS]:
                slot = slots.get(r.name)
                if slot is None:
                    continue
                arr = getattr(w, CLASS_ATTR[slot.cls])[slot.index]
                digits = max(slot.cls // 4, 1)
                values = [f"{int(v):#0{digits + 2}x}" if on else None for v, on in zip(arr.tolist(), ran)]
                typ = prog.reg_types.get(r.name, f"b{slot.cls}")
                dests.append({"reg": r.name.split("@")[0], "bits": slot.cls, "type": typ, "values": values,
                              "typed": typed(arr, typ, ran)})
        found = []
        if ins is not None and control is not BLOCK and linked[0] < MAX_LINKED:
            found = links(prog, ins, w, ran)
            linked[0] += bool(found)
        rows.append({"step": len(rows), "pc": pc, "line": ins.line if ins else None,
                     "text": ins.text() if ins else "(past the last instruction)",
                     "lanes": int(sum(1 << i for i in np.flatnonzero(lanes))),
                     "ran": int(sum(1 << i for i in np.flatnonzero(ran))), "control": what, "count": 1,
                     "dests": dests, "more_dests": more, "links": found})

    out = {"view": "ptx", "kernel": name, "kernels": {k: [vars(x) for x in v] for k, v in kernels.items()},
           "grid": grid, "block": block, "cluster": cluster, "cta": list(cta), "warp": warp, "limit": limit,
           "rows": rows, "stopped": None, "fault": None, "stats": None, "warps": (nthreads + 31) // 32}
    params = {x.name for x in kernels[name]}
    try:
        stats = mod.launch(name, grid=grid, block=block, cluster=cluster, args=values, shared_bytes=shared,
                           ctas=[cta], zero_init_shared=p.flag("zero_init_shared"),
                           check_layouts=p.flag("check_layouts", True), max_instructions=MAX_WARP_INSTRUCTIONS,
                           trace=trace)
        out["stats"] = {"ctas": stats["ctas"], "warp_instructions": stats["warp_instructions"],
                        "seconds": round(stats["seconds"], 4)}
    except _Stop as s:
        out["stopped"] = s.why
    except TcemuError as e:
        setting = _launch_setting(e, params)
        if setting is not None and executed[0] == 0:
            raise ServeError(setting, f"{e.field}: {e.rule}" if e.field != setting else e.rule) from None
        out["fault"] = _fault(e, prog, cta, warp, rows)
    out["executed"] = executed[0]
    out["arrays"] = [{"index": i, "dtype": str(v.dtype), "shape": list(v.shape),
                      "values": [str(x) for x in v.reshape(-1)[:SHOWN_VALUES].tolist()]}
                     for i, v in enumerate(values) if isinstance(v, np.ndarray)]
    return out

