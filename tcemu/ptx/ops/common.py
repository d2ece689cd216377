"""What the families' compile functions share: an opcode's modifiers (Mods), operand counts, the text that
names an instruction in errors, the module's .target / .version checks, and the executing-lanes mask."""
from typing import Callable, List, Optional

import numpy as np
from numba import njit

from .. import parser as P
from ..errors import HazardError, KernelFault, PtxSyntaxError, PtxUnsupported
from ..parser import Instruction
from ..types import TYPES, PtxType


class Mods:
    """An opcode's modifiers: `parts` after the base, the types among them, and set-membership tests."""

    def __init__(self, ins: Instruction, skip: int = 1):
        self.ins = ins
        self.parts = ins.opcode.split(".")[skip:]
        self.set = set(self.parts)
        self.types: List[PtxType] = [TYPES[p] for p in self.parts if p in TYPES]

    def __contains__(self, item) -> bool:
        return item in self.set

    def type(self, index: int = -1) -> PtxType:
        if not self.types:
            raise PtxSyntaxError(self.ins.line, self.ins.col, f"{self.ins.opcode} needs a type")
        return self.types[index]

    def one_of(self, options, default=None) -> Optional[str]:
        found = [p for p in self.parts if p in options]
        if len(found) > 1:
            raise PtxSyntaxError(self.ins.line, self.ins.col, f"{self.ins.opcode}: conflicting {', '.join(found)}")
        return found[0] if found else default

    def unsupported(self, rule: str):
        raise PtxUnsupported(self.ins.opcode, f"{rule} ({self.ins.where()})")


def operands(ins: Instruction, n: int, at_least: bool = False):
    ops = ins.operands
    if len(ops) != n and not (at_least and len(ops) >= n):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} takes {n} operands, got {len(ops)}")
    return ops


def dest_setter(prog, op, ins: Instruction, t: PtxType):
    """One setter for a destination `d` or `d|p` (the optional predicate destination of shfl, elect and match,
    setp's `p|q`): put(W, value, pred, m) writes d, and p where the operand names one and pred is not None."""
    sd = prog.write(op.first if isinstance(op, P.Pair) else op, t, ins)
    sp = prog.write(op.second, TYPES["pred"], ins) if isinstance(op, P.Pair) else None

    def put(W, value, pred, m):
        sd(W, value, m)
        if sp is not None and pred is not None:
            sp(W, pred, m)
    return put


def where(ins: Instruction) -> str:
    return f"{ins.text()} ({ins.where()})"


def target_sm(prog) -> Optional[tuple]:
    """The module's .target as (number, suffix): sm_100a -> (100, "a"), sm_90 -> (90, ""); None without one."""
    for t in getattr(prog, "target", ()):
        if t.startswith("sm_"):
            num = "".join(ch for ch in t[3:] if ch.isdigit())
            return int(num), t[3 + len(num):]
    return None


def require_target(ins: Instruction, prog, feature: str, ok: Callable, needs: str):
    """Refuse `feature` unless ok((number, suffix)) holds for the module's .target, as ptxas does (a module
    without .target is not checked)."""
    sm = target_sm(prog)
    if sm is not None and not ok(sm):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: {feature} requires .target {needs} (ptxas 13.0 "
                                                f"refuses it on .target sm_{sm[0]}{sm[1]})")


def require_ptx(ins: Instruction, prog, feature: str, version: str):
    """Refuse `feature` when the module's .version is older than `version` (PTX ISA notes), as ptxas does."""
    have = getattr(prog, "ptx_version", None)
    try:
        older = have is not None and tuple(map(int, have.split("."))) < tuple(map(int, version.split(".")))
    except ValueError:
        return
    if older:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: {feature} requires PTX ISA .version {version} or "
                                                f"later (the module says .version {have})")


def active_any(m) -> bool:
    return m is None or bool(m.any())


FULL = np.ones(32, bool)


def mask_array(m) -> np.ndarray:
    return FULL if m is None else m



def uniform(values, m, what: str, wh: str) -> int:
    """The one value the executing lanes (mask m; None: all) must agree on (0 where none executes)."""
    v = values if m is None else values[m]
    if v.size == 0:
        return 0
    if not (v == v[0]).all():
        raise HazardError(wh, f"{what} must be the same in every executing thread, got "
                              f"{sorted(set(int(x) for x in v))[:4]}")
    return int(v[0])


def whole_warp(m, wh: str, name: str) -> None:
    """A .sync.aligned warp-level instruction (`name`) that all 32 lanes must execute together."""
    if m is not None and not np.asarray(m).all():
        raise HazardError(wh, f"{name} is warp-synchronous (.sync.aligned): all 32 threads must execute it together, "
                              f"but only lanes {np.flatnonzero(m).tolist()} did")


def each_warp(op):
    """op, with op.gang its own run for each warp in gang order (lockstep.py): for an instruction of whole warps that
    neither blocks, jumps nor diverges (a fence, a commit, a wait that only retires, an mbarrier arrival), the
    scheduler's step of one warp at a time is all a gang saves. A fault names its warp, as that step does; the
    warps before it have run, as they had one at a time."""
    def gang(pairs):
        for W, m in pairs:
            try:
                op(W, m)
            except KernelFault as e:
                raise W.named(e) from None
    gang.masked = "any"   # each warp on its lanes (lockstep.run_any), one warp of each CTA too
    op.gang = gang
    return op


def cta_starts(warps) -> Optional[List[int]]:
    """Where each CTA's warps start in the gang's `warps`, in order; None where a CTA's warps are not together
    (the gang versions that take a CTA's rows as one slice then go CTA by CTA, or fall back)."""
    starts, seen, last = [], set(), None
    for k, W in enumerate(warps):
        c = W.cta
        if c is not last:
            if c in seen:
                return None
            seen.add(c)
            starts.append(k)
            last = c
    return starts


def by_cta(pairs):
    """A gang's (warp, mask) pairs grouped by CTA, in gang order: [(cta, [(W, m), ...]), ...] (lockstep.py)."""
    out = {}
    for W, m in pairs:
        out.setdefault(W.cta, []).append((W, m))
    return list(out.items())


def repeats(x) -> bool:
    """Whether a value occurs twice in x."""
    s = np.sort(x)
    return bool((s[1:] == s[:-1]).any())


BITMAP_MAX = 1 << 22   # values spanned by repeats_aligned's bitmap (a sort above)


def repeats_aligned(x, w: int) -> bool:
    """repeats(x) for int64 values that are all multiples of w (aligned starts of w-byte rows): one pass over a
    bitmap of their span (a sort of a gang's 3,072 cp.async starts had cost ~70 us, this ~30). Values that are not
    multiples can only be taken for repeats (two in one w), never missed."""
    if x.size < 2:
        return False
    lo, hi = int(x.min()), int(x.max())
    if (hi - lo) // w >= BITMAP_MAX:
        return repeats(x)
    return _repeats_in(x, lo, w, (hi - lo) // w + 1)


@njit(cache=True)
def _repeats_in(x, lo, w, n):
    seen = np.zeros(n, np.bool_)
    for v in x:
        i = (v - lo) // w
        if seen[i]:
            return True
        seen[i] = True
    return False
