"""Per-CTA tcgen05 state and the checks every tcgen05 instruction shares: a CTA's tensor memory (Tmem), the
asynchronous operations that complete through tcgen05.commit (AsyncOp), and what would be a race on hardware
(check_async, check_pending, check_allocated; see the package text)."""
import itertools

import numpy as np

from ....blackwell.tmem import COLUMNS, LANES, TensorMemory
from ... import parser as P
from ...errors import HazardError, KernelFault, MemoryFault, PtxSyntaxError
from ...types import TYPES
from ..common import Mods, mask_array, where

U32 = TYPES["u32"]
_IDS = itertools.count()


class AsyncOp:
    """One asynchronous tcgen05 operation that completes through tcgen05.commit (mma, cp, shift).

    A commit tracks every earlier operation of its thread and .cta_group (9.7.16.12.1), so the operation is known
    complete to a warp that observed the mbarrier phase of any commit its thread issued after it: `log` is that
    thread's list of commits (shared, growing), `first` the index of the first one after this operation."""

    def __init__(self, kind, W, lane, cta_group, text, key=None):
        self.id = next(_IDS)
        self.kind = kind
        self.thread = (W.cta.rank, W.index, int(lane))
        self.cta_group = cta_group
        self.text = text
        self.key = key            # mma: (D address, M, N), what makes two MMAs one pipeline
        tm = state(W.cta)
        self.log = tm.commits.setdefault((W.index, int(lane), cta_group), [])
        self.first = len(self.log)
        self.reads = []           # [(SharedWindow, byte indices)] read from shared memory, until committed
        tm.unreleased.setdefault((W.index, int(lane), cta_group), []).append(self)

    def who(self) -> str:
        r, w, lane = self.thread
        return f"{self.text}, issued by thread {32 * w + lane} (warp {w}) of CTA rank {r}"


class Tmem:
    """A CTA's tensor memory, its allocations and what each cell is waiting on."""

    def __init__(self, cta):
        self.cta = cta
        self.mem = TensorMemory()
        self.allocs = {}                                   # first column -> (columns, cta_group)
        self.used = np.zeros(COLUMNS, bool)
        self.relinquished = set()                          # cta_groups whose allocation permit is given up
        self.last_columns = None
        self.writer = np.full((LANES, COLUMNS), -1, np.int64)   # async op that last wrote the cell
        self.reader = np.full((LANES, COLUMNS), -1, np.int64)   # async op that last read it (A, scale factors)
        self.st_warp = np.full((LANES, COLUMNS), -1, np.int32)  # warp whose tcgen05.st to it is not waited for
        self.ld_warp = np.full((LANES, COLUMNS), -1, np.int32)  # warp whose tcgen05.ld of it is not waited for
        self.st_text = {}
        self.ld_text = {}
        self.ops = {}                                      # id -> AsyncOp touching this CTA's tensor memory
        self.commits = {}                                  # (warp, lane, cta_group) -> [[(rank, offset, phase)]]
        self.unreleased = {}                               # (warp, lane, cta_group) -> [AsyncOp] not yet committed
        self.pair = {}                                     # cta_group::2 rendezvous: key -> record
        self.collector = None                              # CollectorBuffers of its tcgen05.mma collector qualifiers

    def at_exit(self, cta):
        if self.allocs:
            first, (cols, group) = sorted(self.allocs.items())[0]
            raise KernelFault(f"CTA {cta.ctaid}", f"exits with {cols} tensor-memory columns from column {first} still "
                                                  f"allocated (cta_group::{group}): every tcgen05.alloc needs a "
                                                  "tcgen05.dealloc before the kernel exits (PTX 9.7.16.7.1)")


def state(cta) -> Tmem:
    if cta.tmem is None:
        cta.tmem = Tmem(cta)
    return cta.tmem


def peer(cta, wh):
    """The other CTA of cta's CTA pair (ranks differing in the last bit, PTX 9.7.16.5.1)."""
    r = cta.rank ^ 1
    if r >= len(cta.cluster):
        raise KernelFault(wh, f"cta_group::2 needs a CTA pair: CTA rank {cta.rank} has no peer in its cluster of "
                              f"{len(cta.cluster)} (launch with a cluster of at least 2 CTAs)")
    return cta.cluster[r]


def pair_of(cta, wh):
    """(even CTA, odd CTA) of the pair holding cta."""
    p = peer(cta, wh)
    return (cta, p) if cta.rank % 2 == 0 else (p, cta)


def observed(W, op) -> bool:
    seen = W.mbar_seen
    for arrivals in reversed(op.log[op.first:]):
        if any(seen.get((r, off), -1) >= ph for r, off, ph in arrivals):
            return True
    return False


def _why(W, op) -> str:
    if len(op.log) == op.first:
        return "no tcgen05.commit tracks it yet"
    r, off, ph = op.log[op.first][0]
    return (f"its tcgen05.commit arrives on the mbarrier at {off:#x} of CTA rank {r} (phase {ph}), which warp "
            f"{W.index} has not observed (wait on that mbarrier first)")


def check_async(W, tm, lanes, cols, wh, what, pipelined=None, readers=False):
    """Cells an asynchronous op wrote (or, readers=True, also read) must be known complete to W, unless pipelined.
    Off with the launch's check_races=False (a race on tensor memory: tcemu's values are those of the schedule it
    runs, every operation complete at issue)."""
    if not tm.cta.launch.check_races:
        return
    lanes, cols = np.broadcast_arrays(lanes, cols)   # the offending cell is named by its index in both
    for table, verb in ((tm.writer, "written"), (tm.reader, "read")) if readers else ((tm.writer, "written"),):
        ids = table[lanes, cols]
        for i in np.unique(ids[ids >= 0]).tolist():
            op = tm.ops[i]
            if pipelined is not None and pipelined(op):
                continue
            if not observed(W, op):
                k = np.argwhere(ids == i)[0]
                lane, col = int(np.asarray(lanes)[tuple(k)]), int(np.asarray(cols)[tuple(k)])
                raise HazardError(wh, f"{what} tensor memory lane {lane}, column {col} of CTA rank {tm.cta.rank}, "
                                      f"{verb} by {op.who()}; {_why(W, op)}")


def check_pending(tm, lanes, cols, wh, what, loads=False, own=-1):
    """No un-waited tcgen05.st (and, loads=True, tcgen05.ld) of any warp on these cells; own: a warp whose own
    un-waited loads do not count (its tcgen05.st after its tcgen05.ld of the same cells). Off with the launch's
    check_races=False, as check_async."""
    if not tm.cta.launch.check_races:
        return
    lanes, cols = np.broadcast_arrays(lanes, cols)
    for table, texts, waiting in ((tm.st_warp, tm.st_text, "tcgen05.wait::st"),) + \
            (((tm.ld_warp, tm.ld_text, "tcgen05.wait::ld"),) if loads else ()):
        ws = table[lanes, cols]
        if table is tm.ld_warp and own >= 0:
            ws = np.where(ws == own, -1, ws)
        if (ws >= 0).any():
            k = np.argwhere(ws >= 0)[0]
            w = int(ws[tuple(k)])
            lane, col = int(np.asarray(lanes)[tuple(k)]), int(np.asarray(cols)[tuple(k)])
            raise HazardError(wh, f"{what} tensor memory lane {lane}, column {col} while {texts.get(w, '?')} of warp "
                                  f"{w} on it has not completed ({waiting} first)")


def check_allocated(tm, cols, wh, what):
    cols = np.asarray(cols)
    if cols.size and (cols.max() >= COLUMNS or not tm.used[cols].all()):
        bad = int(cols[(cols >= COLUMNS) | ~tm.used[np.minimum(cols, COLUMNS - 1)]].flat[0])
        have = ", ".join(f"[{a}, {a + c})" for a, (c, _) in sorted(tm.allocs.items())) or "none"
        raise MemoryFault(wh, f"{what} tensor-memory column {bad} of CTA rank {tm.cta.rank}, outside every "
                              f"tcgen05.alloc allocation (allocated columns: {have})")


def split(addr, wh, what="address"):
    addr = int(addr)
    lane, col = addr >> 16, addr & 0xFFFF
    if lane >= LANES or col >= COLUMNS:
        raise MemoryFault(wh, f"tensor-memory {what} {addr:#010x} is lane {lane}, column {col}: tensor memory has "
                              f"{LANES} lanes x {COLUMNS} columns")
    return lane, col


def uniform(values, act, what, wh):
    v = values[act]
    if v.size and not (v == v[0]).all():
        raise HazardError(wh, f"{what} differs between the threads of the warp ({sorted(set(v.tolist()))[:3]}...)")
    return int(v[0]) if v.size else 0


def whole_warp(W, m, ins):
    act = mask_array(m) & W.live
    if not act.all():
        raise HazardError(where(ins), f"{ins.opcode.split('.')[0]}.{ins.opcode.split('.')[1]} is .sync.aligned: all 32 "
                                      f"threads of warp {W.index} must execute it together (lanes "
                                      f"{np.flatnonzero(~act).tolist()[:8]} do not)")
    return act


def parse_cta_group(mods, ins, prog, required=True):
    g = mods.one_of(("cta_group::1", "cta_group::2"))
    if g is None:
        if required:
            raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} needs .cta_group::1 or .cta_group::2")
        return None
    group = int(g[-1])
    seen = getattr(prog, "tcgen05_cta_group", None)
    if seen is not None and seen[0] != group:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: .cta_group::{group}, but line {seen[1]} uses "
                                                f".cta_group::{seen[0]}; all tcgen05 instructions of a kernel must use "
                                                "the same .cta_group (PTX 9.7.16.7.1)")
    prog.tcgen05_cta_group = (group, ins.line)
    return group


def qualifiers(ins, prog, needs=None):
    """(Mods, .cta_group) of tcgen05.cp / .shift / .commit, checking the qualifier `needs` the instruction requires."""
    mods = Mods(ins, skip=2)
    group = parse_cta_group(mods, ins, prog)
    if needs is not None and needs not in mods:
        raise PtxSyntaxError(ins.line, ins.col, f"tcgen05.{ins.opcode.split('.')[1]} takes .{needs}")
    return mods, group


def tmem_getter(prog, op, ins):
    """Getter of a tensor-memory address operand [reg + off] (32 bits, lane << 16 | column)."""
    if not isinstance(op, P.Addr) or op.vec is not None:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected a tensor-memory address [taddr], got "
                                                f"{P.fmt(op)}")
    off = op.offset
    if op.base is None:
        const = np.full(32, off & 0xFFFFFFFF, np.int64)
        return lambda W: const
    if not isinstance(op.base, P.Reg):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: a tensor-memory address is a register, got "
                                                f"{P.fmt(op.base)}")
    g = prog.read(op.base, U32, ins)
    return lambda W: (g(W).astype(np.int64) + off) & 0xFFFFFFFF


def issuers(W, m):
    """The lanes that issue a single-thread instruction (mma, cp, shift, commit): each executing lane, once."""
    return np.flatnonzero(mask_array(m) & W.live)

