"""tcgen05 (sm_100a, PTX ISA 9.7.16): tensor-memory allocation, tcgen05.mma / .cp / .shift / .commit, tcgen05.ld /
.st / .wait and the tcgen05 fences, executed with tcemu's instruction model (tcemu.tcgen05_mma, TensorMemory).

Each CTA's tensor memory (128 lanes x 512 columns of 32 bits, 9.7.16.1) lives on its Cta (`cta.tmem`, made on
first use). One legal schedule is run: every asynchronous operation completes at issue (tcgen05.mma computes D into
tensor memory, tcgen05.ld fills its registers) and a tcgen05.commit arrives on its mbarrier at once. What would be
a race on hardware is reported instead, naming both instructions and the cells:

- tensor memory read (tcgen05.ld) or overwritten (tcgen05.st / .cp / .mma) while an asynchronous operation that
  wrote or reads it (.mma, .cp, .shift) is not known complete to the warp: it must be tracked by a tcgen05.commit
  whose mbarrier phase the warp observed (`W.mbar_seen`, the knowledge mbarrier waits and barriers pass on), except
  for the pipelined pairs of 9.7.16.6.2 (mma -> mma of the same thread, accumulator and shape; cp/shift -> mma and
  mma -> shift of the same thread);
- a tcgen05.st not yet waited for (tcgen05.wait::st) under a read or write, a tcgen05.ld not yet waited for
  (tcgen05.wait::ld) under a write (9.7.16.6.4.5: register dependencies order an ld's results, not its reads);
- shared memory an uncommitted tcgen05.mma / .cp reads, overwritten (SharedWindow.tcgen05_reading); operand bytes
  not written, still the target of an asynchronous copy, not fenced for the async proxy (9.7.16.6.5), from a TMA
  whose mbarrier phase the issuing warp has not observed, or (layout check) not a coherent tile of their source;
- a warp touching lanes outside its sub-partition (warp % 4 owns lanes 32 (warp % 4) .. +31, 9.7.16.8.1), tensor
  memory outside every allocation, allocation rules (9.7.16.7.1: a power of two of 32..512 columns, no alloc after
  relinquish_alloc_permit, no growing allocations, everything deallocated before exit), one .cta_group per kernel.

Data paths of tcgen05.ld / .st (thread t, register j; PTX 9.7.16.2.3.1's figures are images, these follow CuTe's
SM100_TMEM_LOAD/STORE Copy_Traits, nvidia-cutlass 4.2 cute/atom/copy_traits_sm100.hpp, checked element by element in
tests/test_cute_tmem_copy.py):
  .32x32b    lane t,                            column j
  .16x64b    lane 8 (t % 2) + t / 4,             column (t / 2) % 2 + 2 j
  .16x128b   lane t / 4 + 8 (j % 2),             column t % 4 + 4 (j / 2)
  .16x256b   lane t / 4 + 8 ((j / 2) % 2),       column 2 (t % 4) + j % 2 + 8 (j / 4)
  .16x32bx2  lane t % 16,                        column j + (t / 16) immHalfSplitoff
with .pack::16b / .unpack::16b each register holding the low halves of two adjacent columns (2c low bits, 2c + 1
high bits) where the plain form holds column c (CuTe's _16b ValIDs); unpack writes zeros to the cells' high halves
(our reading). tcgen05.cp (9.7.16.9.2) reads rows of 16-byte chunks through its shared-memory descriptor like a
K-major operand and writes row r to lane r (.128x256b, .128x128b), lane 32 r (.4x256b), lanes r + 32 q
(.32x128b.warpx4), r and r + 64 (.64x128b.warpx2::02_13), r % 32 + 64 (r / 32) and + 32 (::01_23): CuTe's UTCCP
Copy_Traits; the .b8x16 decompression puts each fp4 / fp6 value in an 8-bit container (tcemu.blackwell.tmem.CONTAINER_SHIFT).

Forms beyond the dense MMA (operand grammar: PTX 9.7.16.10.9, every line checked with ptxas 13.0):
  tcgen05.mma.sp   [d], a, b, [sp-meta-tmem], idesc, ... : the descriptor's sparse bit must be set; the metadata cells
                   (tcemu.blackwell.tmem.meta_cells: the selector's sub-column, .ws copies) are read like A and the scale factors;
  tcgen05.mma.ws / .ws.sp   ..., enable-input-d {, zero-column-mask-desc}: cta_group::1, kinds tf32/f16/f8f6f4/i8; D in
                   the .ws layouts (D / E / G); B's rows read are those the mask keeps, from its column shift on;
  .collector::a::fill/use/lastuse/discard (non-.ws) and .collector::b0..b3::* (.ws): one CollectorBuffers per CTA (the
                   pair's even CTA for cta_group::2); no qualifier is ::a::discard (.ws: ::b0::discard); a use the buffer
                   cannot serve (no live fill, other places, changed bytes) is a KernelFault from the instruction model;
  .target sm_103a: K = 96 (bit 31 of the mxf4 / mxf4nvf4 descriptor, the dense spelling) with its 3 / 6 scale factors
                   a row running on past byte 3, and LBO mode 1 descriptors; .kind::i8 is refused there (ptxas 13.0).
Refused: .ashift (not modelled), block-scaled cta_group::2 (the 2x2 scale-factor layout).
Not silicon-verified (README, "Blackwell").
"""
import itertools
import time

import numpy as np

from ...blackwell import mma as blackwell
from ...layout.addressing import operand_addresses
from ...layout.descriptors import UmmaDescriptor
from ...blackwell.collector import CollectorBuffers, CollectorOp
from ...core.errors import DescriptorError, TcemuError
from ...blackwell.instr import BLOCK_SCALED, WS_KINDS, InstrDescriptor, ZeroColumnMask
from ...layout.smem import SUBBYTE
from ...blackwell.tmem import COLUMNS, CONTAINER_SHIFT, LANES, TensorMemory, d_cells, meta_cells, row_lanes
from .. import parser as P
from ..errors import HazardError, KernelFault, MemoryFault, PtxSyntaxError, PtxUnsupported
from ..machine import BLOCK
from ..types import TYPES
from .common import Mods, mask_array, where
from .registry import register
from .mbarrier import lookup
from .memory_ops import address, cluster_space, shared_target
from .wgmma import check_async_proxy_read, check_provenance

B32 = TYPES["b32"]
U16 = TYPES["u16"]
U32 = TYPES["u32"]
U64 = TYPES["u64"]
PRED = TYPES["pred"]
FULL = np.ones(32, bool)
_IDS = itertools.count()


# ------------------------------------------------------------------------------------------------ per-CTA state

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
    """Cells an asynchronous op wrote (or, readers=True, also read) must be known complete to W, unless pipelined."""
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


def check_pending(tm, lanes, cols, wh, what, loads=False):
    """No un-waited tcgen05.st (and, loads=True, tcgen05.ld) of any warp on these cells."""
    lanes, cols = np.broadcast_arrays(lanes, cols)
    for table, texts, waiting in ((tm.st_warp, tm.st_text, "tcgen05.wait::st"),) + \
            (((tm.ld_warp, tm.ld_text, "tcgen05.wait::ld"),) if loads else ()):
        ws = table[lanes, cols]
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


def _uniform(values, act, what, wh):
    v = values[act]
    if v.size and not (v == v[0]).all():
        raise HazardError(wh, f"{what} differs between the threads of the warp ({sorted(set(v.tolist()))[:3]}...)")
    return int(v[0]) if v.size else 0


def _whole_warp(W, m, ins):
    act = mask_array(m) & W.live
    if not act.all():
        raise HazardError(where(ins), f"{ins.opcode.split('.')[0]}.{ins.opcode.split('.')[1]} is .sync.aligned: all 32 "
                                      f"threads of warp {W.index} must execute it together (lanes "
                                      f"{np.flatnonzero(~act).tolist()[:8]} do not)")
    return act


def _cta_group(mods, ins, prog, required=True):
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


# ------------------------------------------------------------------------------------------------ allocation

def _pair_collective(W, key, payload, execute, wh, what):
    """cta_group::2 allocation management: one warp of each CTA of the pair; `execute(records)` runs once both
    arrived (records: {rank: (warp, payload)}). The first to arrive waits (BLOCK) until then."""
    even, odd = pair_of(W.cta, wh)
    tm = state(even)
    rec = tm.pair.setdefault(key, {"arrived": {}, "generation": 0})
    mine = W.sync.get(("pair",) + key)
    if mine is None:
        if W.cta.rank in rec["arrived"]:
            raise HazardError(wh, f"two warps of CTA rank {W.cta.rank} reached {what} (one warp per CTA)")
        rec["arrived"][W.cta.rank] = (W, payload)
        W.cta.progress = True
        if len(rec["arrived"]) == 2:
            arrived, rec["arrived"] = rec["arrived"], {}
            rec["generation"] += 1
            return execute(arrived)
        W.sync[("pair",) + key] = rec["generation"]
        W.wait = f"the peer CTA's warp at {what}"
        return BLOCK
    if rec["generation"] > mine:
        del W.sync[("pair",) + key]
        return None
    return BLOCK


def _fit(tms, ncols):
    """The lowest column, aligned to the allocation's size, free in every one of tms."""
    for start in range(0, COLUMNS, ncols):
        if all(not t.used[start:start + ncols].any() for t in tms):
            return start
    return None


@register("tcgen05.alloc", "tcgen05.dealloc", "tcgen05.relinquish_alloc_permit")
def c_alloc(ins, prog, pc):
    mods = Mods(ins, skip=1)
    what = mods.parts[0]
    group = _cta_group(mods, ins, prog)
    wh = where(ins)
    ops = ins.operands
    if what == "relinquish_alloc_permit":
        def relinquish(W, m):
            _whole_warp(W, m, ins)
            state(W.cta).relinquished.add(group)
            if group == 2:
                state(peer(W.cta, wh)).relinquished.add(group)
        return relinquish
    if what == "alloc":
        space = "shared::cta" if "shared::cta" in mods else "generic"
        get_dst = address(prog, ops[0], ins, space)
        gcols = prog.read(ops[1], U32, ins)
    else:
        gaddr = prog.read(ops[0], U32, ins)
        gcols = prog.read(ops[1], U32, ins)

    def columns(W, act):
        n = _uniform(gcols(W), act, "nCols", wh)
        if n < 32 or n > COLUMNS or n & (n - 1):
            raise KernelFault(wh, f"nCols = {n}: a power of two in [32, 512] (PTX 9.7.16.7.1)")
        return n

    def do_alloc(entries, n):
        """entries: [(warp, dst)] one per CTA taking part; all get the same columns."""
        tms = [state(w.cta) for w, _ in entries]
        for (w, _), t in zip(entries, tms):
            if group in t.relinquished:
                raise KernelFault(wh, f"tcgen05.alloc by CTA rank {w.cta.rank} after it executed "
                                      "tcgen05.relinquish_alloc_permit (PTX 9.7.16.7.1: illegal)")
            if t.last_columns is not None and n > t.last_columns:
                raise KernelFault(wh, f"tcgen05.alloc of {n} columns after one of {t.last_columns}: the number of "
                                      "columns allocated should not increase between two allocations of a CTA "
                                      "(PTX 9.7.16.7.1)")
        start = _fit(tms, n)
        if start is None:
            return None
        for (w, dst), t in zip(entries, tms):
            t.used[start:start + n] = True
            t.allocs[start] = (n, group)
            t.last_columns = n
            cta, off = shared_target(w, dst, "shared::cta" if space != "generic" else "generic", wh)
            if cta is not w.cta:
                raise KernelFault(wh, "tcgen05.alloc's destination must be in the executing CTA's shared memory")
            cta.shared.store(np.array([off], np.int64), np.frombuffer(np.uint32(start).tobytes(), np.uint8)[None],
                             [int(w.tid[0])], wh)
        return start

    def do_dealloc(entries, n, taddr):
        lane, col = split(taddr, wh)
        for w, _ in entries:
            t = state(w.cta)
            got = t.allocs.get(col)
            if lane or got is None or got[0] != n:
                have = ", ".join(f"[{a}, {a + c})" for a, (c, _) in sorted(t.allocs.items())) or "none"
                raise KernelFault(wh, f"tcgen05.dealloc of {n} columns at {taddr:#010x} in CTA rank {w.cta.rank}: "
                                      f"not an allocation (allocations: {have}; tcemu deallocates whole allocations)")
            if got[1] != group:
                raise KernelFault(wh, f"tcgen05.dealloc.cta_group::{group} of an allocation made with "
                                      f"cta_group::{got[1]}")
            cols = np.arange(col, col + n)
            lanes = np.arange(LANES)[:, None]
            # a tcgen05.ld still pending is not a hazard here: its registers hold the values already (the CuTe
            # tutorials free tensor memory after consuming them, with no tcgen05.wait::ld); stores and
            # asynchronous operations still writing or reading the columns are
            check_pending(t, lanes, cols[None, :], wh, "tcgen05.dealloc frees")
            check_async(w, t, lanes, cols[None, :], wh, "tcgen05.dealloc frees", readers=True)
            t.ld_warp[:, col:col + n] = -1
            del t.allocs[col]
            t.used[col:col + n] = False
            t.mem.written[:, col:col + n] = False
            t.writer[:, col:col + n] = -1
            t.reader[:, col:col + n] = -1

    key = (pc,)
    if what == "alloc":
        def alloc(W, m):
            act = _whole_warp(W, m, ins)
            n = columns(W, act)
            dst = _uniform(get_dst(W), act, "the destination address", wh)
            if group == 1:
                if do_alloc([(W, dst)], n) is None:
                    W.wait = (f"tensor memory: {n} free columns (tcgen05.alloc blocks until a tcgen05.dealloc frees "
                              "them)")
                    return BLOCK
                W.sync.pop(("alloc", pc), None)
                return None

            def both(arrived):
                ns = {p[0] for _, p in arrived.values()}
                if len(ns) != 1:
                    raise KernelFault(wh, f"the CTA pair's tcgen05.alloc.cta_group::2 asks for {sorted(ns)} columns")
                entries = [(w, p[1]) for _, (w, p) in sorted(arrived.items())]
                if do_alloc(entries, n) is None:
                    raise KernelFault(wh, f"tcgen05.alloc.cta_group::2: {n} columns are not free in both CTAs")
                return None
            return _pair_collective(W, key, (n, dst), both, wh, "tcgen05.alloc.cta_group::2")
        return alloc

    def dealloc(W, m):
        act = _whole_warp(W, m, ins)
        n = columns(W, act)
        taddr = _uniform(gaddr(W), act, "taddr", wh)
        if group == 1:
            do_dealloc([(W, None)], n, taddr)
            W.cta.progress = True  # a blocked tcgen05.alloc may go on
            return None

        def both(arrived):
            do_dealloc([(w, None) for _, (w, _) in sorted(arrived.items())], n, taddr)
            return None
        return _pair_collective(W, key, (n, taddr), both, wh, "tcgen05.dealloc.cta_group::2")
    return dealloc


# ------------------------------------------------------------------------------------------------ ld / st / wait

SHAPES = ("16x64b", "16x128b", "16x256b", "32x32b", "16x32bx2")
_REGS_PER_NUM = {"16x64b": 1, "16x128b": 2, "16x256b": 4, "32x32b": 1, "16x32bx2": 1}


def datapath(shape: str, num: int, split_off: int = 0, pack: bool = False):
    """(lanes, columns) of thread t's register j, each (32, registers, parts): the lane (relative to taddr's) and
    column (relative to taddr's) of each 32-bit cell the register covers; parts is 2 with pack/unpack::16b (low
    half from the first cell, high half from the second), else 1. See the module text for the maps."""
    nregs = _REGS_PER_NUM[shape] * num
    t = np.arange(32)[:, None]
    j = np.arange(nregs)[None, :]
    if shape == "32x32b":
        lane, col = t + 0 * j, j + 0 * t
    elif shape == "16x64b":
        lane, col = 8 * (t % 2) + t // 4 + 0 * j, (t // 2) % 2 + 2 * j
    elif shape == "16x128b":
        lane, col = t // 4 + 8 * (j % 2), t % 4 + 4 * (j // 2)
    elif shape == "16x256b":
        lane, col = t // 4 + 8 * ((j // 2) % 2), 2 * (t % 4) + j % 2 + 8 * (j // 4)
    else:  # 16x32bx2: two 16-lane accesses, the second at taddr + immHalfSplitoff
        lane, col = t % 16 + 0 * j, j + 0 * t
        lanes_hi = (t // 16) + 0 * j
    if not pack:
        if shape == "16x32bx2":
            col = col + lanes_hi * split_off
        return lane[..., None], col[..., None]
    col = 2 * col[..., None] + np.arange(2)
    if shape == "16x32bx2":
        col = col + (lanes_hi * split_off)[..., None]
    return np.broadcast_to(lane[..., None], col.shape), col


def _num(mods, ins):
    num = [int(p[1:]) for p in mods.parts if p[0] == "x" and p[1:].isdigit()]
    if len(num) != 1 or num[0] not in (1, 2, 4, 8, 16, 32, 64, 128):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected one .num of .x1 .. .x128")
    return num[0]


def _ldst_form(ins, mods):
    shape = mods.one_of(SHAPES)
    if shape is None:
        shapes = ", ".join("." + s for s in SHAPES)
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected a shape ({shapes})")
    num = _num(mods, ins)
    nregs = _REGS_PER_NUM[shape] * num
    if nregs > 128:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: .{shape}.x{num} would take {nregs} registers; PTX "
                                                "Table 47 stops at 128")
    if "red" in mods:
        mods.unsupported("tcgen05.ld.red (sm_103a / sm_110a) is not modelled")
    pack = "pack::16b" in mods or "unpack::16b" in mods
    return shape, num, nregs, pack


def _cells(W, taddr, shape, num, split_off, pack, wh, what):
    """Absolute (lanes, cols) of every register's cells, after the address and sub-partition checks."""
    lane0, col0 = split(taddr, wh)
    lanes, cols = datapath(shape, num, split_off, pack)
    lanes, cols = lanes + lane0, cols + col0
    q = W.index % 4
    if lanes.min() < 32 * q or lanes.max() >= 32 * q + 32:
        bad = int(lanes[(lanes < 32 * q) | (lanes >= 32 * q + 32)].flat[0])
        raise MemoryFault(wh, f"warp {W.index} ({what} at {taddr:#010x}) touches tensor-memory lane {bad}: warp "
                              f"{W.index} is warp {q} of its warpgroup and may access lanes {32 * q}-{32 * q + 31} "
                              "only "
                              "(PTX 9.7.16.8.1)")
    if cols.max() >= COLUMNS:
        raise MemoryFault(wh, f"{what} at {taddr:#010x} runs to column {int(cols.max())}, past column {COLUMNS - 1}")
    return lanes, cols


def _ldst_cells(W, m, ins, gaddr, shape, num, split_off, pack, wh, store):
    """(state, lanes, cols) of the tensor-memory cells a tcgen05.ld (store False) or tcgen05.st moves, after the
    whole-warp, uniform-address, allocation, pending-access and async-completion checks (a store also waits for
    loads and async readers of its cells)."""
    what = "tcgen05.st" if store else "tcgen05.ld"
    act = _whole_warp(W, m, ins)
    taddr = _uniform(gaddr(W), act, "taddr", wh)
    tm = state(W.cta)
    lanes, cols = _cells(W, taddr, shape, num, split_off, pack, wh, what)
    access = f"{what} writes" if store else f"{what} reads"
    check_allocated(tm, cols, wh, access)
    check_pending(tm, lanes, cols, wh, access, loads=store)
    check_async(W, tm, lanes, cols, wh, access, readers=store)
    return tm, lanes, cols


@register("tcgen05.ld")
def c_ld(ins, prog, pc):
    mods = Mods(ins, skip=2)
    shape, num, nregs, pack = _ldst_form(ins, mods)
    ops = ins.operands
    dests = list(ops[0].items) if isinstance(ops[0], P.Vec) else [ops[0]]
    if len(dests) != nregs:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} writes {nregs} registers, got {len(dests)}")
    gaddr = tmem_getter(prog, ops[1], ins)
    split_off = 0
    if shape == "16x32bx2":
        if len(ops) != 3 or not isinstance(ops[2], P.Imm):
            raise PtxSyntaxError(ins.line, ins.col, ".16x32bx2 takes an immediate immHalfSplitoff")
        split_off = ops[2].value
    sets = [prog.write(d, B32, ins) for d in dests]
    wh = where(ins)
    text = f"tcgen05.ld (line {ins.line})"

    def op(W, m):
        tm, lanes, cols = _ldst_cells(W, m, ins, gaddr, shape, num, split_off, pack, wh, store=False)
        if not tm.mem.written[lanes, cols].all():
            k = np.argwhere(~tm.mem.written[lanes, cols])[0]
            raise MemoryFault(wh, f"thread {k[0]} of warp {W.index} reads tensor-memory lane {int(lanes[tuple(k)])}, "
                                  f"column {int(cols[tuple(k)])}, which nothing wrote")
        cells = tm.mem.cells[lanes, cols]          # (32, nregs, parts)
        regs = cells[..., 0] if not pack else (cells[..., 0] & 0xFFFF) | ((cells[..., 1] & 0xFFFF) << 16)
        regs = regs.astype(np.uint32)
        for j, s in enumerate(sets):
            s(W, regs[:, j], m)
        tm.ld_warp[lanes, cols] = W.index
        tm.ld_text[W.index] = text
    return op


@register("tcgen05.st")
def c_st(ins, prog, pc):
    mods = Mods(ins, skip=2)
    shape, num, nregs, pack = _ldst_form(ins, mods)
    ops = ins.operands
    gaddr = tmem_getter(prog, ops[0], ins)
    split_off = 0
    rest = ops[1:]
    if shape == "16x32bx2":
        if not rest or not isinstance(rest[0], P.Imm):
            raise PtxSyntaxError(ins.line, ins.col, ".16x32bx2 takes an immediate immHalfSplitoff")
        split_off, rest = rest[0].value, rest[1:]
    srcs = list(rest[0].items) if rest and isinstance(rest[0], P.Vec) else list(rest[:1])
    if len(srcs) != nregs:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} reads {nregs} registers, got {len(srcs)}")
    gets = [prog.read(s, B32, ins) for s in srcs]
    wh = where(ins)
    text = f"tcgen05.st (line {ins.line})"

    def op(W, m):
        tm, lanes, cols = _ldst_cells(W, m, ins, gaddr, shape, num, split_off, pack, wh, store=True)
        regs = np.stack([g(W) for g in gets], axis=1).astype(np.uint32)   # (32, nregs)
        if pack:  # unpack::16b: the low half into the first cell, the high half into the second, zero-extended
            vals = np.stack([regs & 0xFFFF, regs >> 16], axis=-1)
        else:
            vals = regs[..., None]
        tm.mem.cells[lanes, cols] = vals
        tm.mem.written[lanes, cols] = True
        tm.writer[lanes, cols] = -1
        tm.st_warp[lanes, cols] = W.index
        tm.st_text[W.index] = text
    return op


@register("tcgen05.wait::ld", "tcgen05.wait::st")
def c_wait(ins, prog, pc):
    loads = ins.opcode.split(".")[1] == "wait::ld"

    def op(W, m):
        _whole_warp(W, m, ins)
        tm = W.cta.tmem
        if tm is not None:
            table = tm.ld_warp if loads else tm.st_warp
            table[table == W.index] = -1
    return op


@register("tcgen05.fence::before_thread_sync", "tcgen05.fence::after_thread_sync")
def c_fence(ins, prog, pc):
    # ordering is what mbarrier waits and barriers hand on (W.mbar_seen); tcemu does not require these fences
    return lambda W, m: None


# ------------------------------------------------------------------------------------------------ shared operands

def _smem_spots(cta, desc_value, rows, k, dtype, major, padded, which, wh, W, arch="sm100", keep=None):
    """Byte indices of shared memory an operand reads (checked: inside the allocation, not in flight, fenced for the
    async proxy, TMA-guard phases observed by the issuing warp, layout provenance). Fewer than 8 rows (tcgen05.cp
    .4x256b) are the first rows of one core-matrix group; `keep` (rows,) bool: only those rows are read (B under a
    zero-column mask); `arch` "sm103" reads LBO mode 1 descriptors."""
    sh = cta.shared
    try:
        desc = UmmaDescriptor.decode(int(desc_value))
        addr_dtype = "u8" if padded else dtype
        addrs = operand_addresses(desc, rows=max(rows, 8), k=k, dtype=addr_dtype, major=major, arch=arch)[:rows]
    except TcemuError as e:
        raise KernelFault(wh, f"{which}: {e}") from None
    if keep is not None:
        addrs = addrs[np.asarray(keep, bool)]
    if padded:
        width = SUBBYTE[dtype]
        bit = width * (addrs & 15)
        lo = (addrs & ~15) + (bit >> 3)
        spots = np.unique(np.concatenate([lo.ravel(), (lo + (((bit & 7) + width - 1) >> 3)).ravel()]))
        ebytes = 0
    elif dtype in SUBBYTE:
        spots, ebytes = np.unique(addrs), 0
    else:
        ebytes = {"tf32": 4, "f16": 2, "bf16": 2}.get(dtype, 1)
        spots = (addrs.reshape(-1, 1) + np.arange(ebytes)).reshape(-1)
    lo_, hi_ = int(spots.min()), int(spots.max()) + 1
    if lo_ < sh.lo or hi_ > sh.hi:
        raise MemoryFault(wh, f"{which} reads shared bytes [{lo_:#x}, {hi_:#x}) of CTA rank {cta.rank} through "
                              f"descriptor {int(desc_value):#018x}, outside the kernel's shared memory "
                              f"[{sh.lo:#x}, {sh.hi:#x})")
    check_async_proxy_read(sh, spots, wh, which, "", "st.shared / cp.async", "PTX 9.7.16.6.5")
    if sh.guarded:
        sh.check_guard([W], spots, wh, f"({which}) reads")
    if ebytes and cta.launch.check_layouts:
        check_provenance(cta.launch.gmem, sh.source[addrs], ebytes, which, desc, wh)
    return spots


# ------------------------------------------------------------------------------------------------ tcgen05.mma

_VEC = {"scale_vec::1X": 32, "scale_vec::2X": 32, "scale_vec::4X": 16, "block16": 16, "block32": 32}
_KINDS = {"kind::" + k: k for k in ("tf32", "f16", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4")}
_BITS_IN_TMEM = {"tf32": 32, "f16": 16, "bf16": 16}


def _issuers(W, m):
    return np.flatnonzero(mask_array(m) & W.live)


def _mma_pipelined(thread, group, key):
    def ok(op):
        return op.kind == "mma" and op.thread == thread and op.cta_group == group and op.key == key
    return ok


def _feeds_mma(thread, group):
    def ok(op):   # cp -> mma, shift -> mma (9.7.16.6.2), an mma's reads by a later mma of the same pipeline
        return op.thread == thread and op.cta_group == group
    return ok


def _form(ins, mods):
    """(ws, sp) from the qualifiers right after tcgen05.mma: .sp, .ws or .ws.sp (PTX 9.7.16.10.9; ptxas 13.0 refuses
    .sp.ws as "Unknown modifier '.ws'")."""
    parts = mods.parts
    ws = bool(parts) and parts[0] == "ws"
    sp = len(parts) > int(ws) and parts[int(ws)] == "sp"
    if parts.count("ws") + parts.count("sp") != int(ws) + int(sp):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: .ws / .sp go right after tcgen05.mma, in the order "
                                                "tcgen05.mma.ws.sp (PTX 9.7.16.10.9)")
    return ws, sp


def _collector(ins, mods, ws):
    """The .collector::<buffer>::<op> qualifier (None: absent, the default discard). Grammar (PTX 9.7.16.10.9, and
    ptxas 13.0): .collector::a::* on tcgen05.mma and tcgen05.mma.sp of every kind, .collector::b0..b3::* on
    tcgen05.mma.ws and .ws.sp only."""
    found = [p for p in mods.parts if p.startswith("collector")]
    if not found:
        return None
    if len(found) > 1:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: more than one .collector qualifier")
    try:
        return CollectorOp.parse(found[0], ws)
    except TcemuError as e:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: .{found[0]}: {e.rule}") from None


def _arch(prog):
    """sm103 for a module whose .target is sm_103a / sm_103f (K = 96, LBO mode 1), else sm100."""
    return "sm103" if any(t.startswith("sm_103") for t in getattr(prog, "target", ())) else "sm100"


@register("tcgen05.mma")
def c_mma(ins, prog, pc):
    mods = Mods(ins, skip=2)
    ws, sp = _form(ins, mods)
    if "ashift" in mods:
        mods.unsupported(".ashift (the convolution form shifting A's rows) is not modelled")
    group = _cta_group(mods, ins, prog)
    kind = mods.one_of(tuple(_KINDS))
    if kind is None:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} needs .kind::tf32/f16/f8f6f4/i8/mxf8f6f4/mxf4/mxf4nvf4")
    kind = _KINDS[kind]
    arch = _arch(prog)
    if kind == "i8" and arch == "sm103":   # ptxas 13.0: "Feature '.kind::i8' not supported on .target 'sm_103a'"
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: .kind::i8 is not supported on .target sm_103a (ptxas "
                                                "13.0 refuses it; CCCL's tcgen05_mma headers guard i8 to sm_100a / "
                                                "sm_110a)")
    if ws and (group != 1 or kind not in WS_KINDS):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: tcgen05.mma.ws is .cta_group::1 with .kind::"
                                                f"{' / '.join(WS_KINDS)} only (PTX Table 39, 9.7.16.10.9)")
    scaled = "block_scale" in mods
    if scaled != (kind in BLOCK_SCALED):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: .block_scale goes with the block-scaled kinds "
                                                "(mxf8f6f4, mxf4, mxf4nvf4) and only with them")
    vec = mods.one_of(tuple(_VEC))
    block = _VEC[vec] if vec else None
    if kind == "mxf4nvf4" and vec is None:
        raise PtxSyntaxError(ins.line, ins.col, ".kind::mxf4nvf4 needs .scale_vec::2X/4X or .block16/.block32 "
                                                "(PTX 9.7.16.10.9.1)")
    ops = list(ins.operands)
    if len(ops) < 5 + sp:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: too few operands")
    g_d = tmem_getter(prog, ops[0], ins)
    a_tmem = isinstance(ops[1], P.Addr)
    collector = _collector(ins, mods, ws)
    g_a = tmem_getter(prog, ops[1], ins) if a_tmem else prog.read(ops[1], U64, ins)
    g_b = prog.read(ops[2], U64, ins)
    g_meta = None
    if sp:   # [d-tmem], a, b-desc, [sp-meta-tmem], idesc, ...
        if not isinstance(ops[3], P.Addr):
            raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: the fourth operand is the sparsity metadata's "
                                                    f"tensor-memory address [sp-meta-tmem], got {P.fmt(ops[3])}")
        g_meta = tmem_getter(prog, ops[3], ins)
    g_i = prog.read(ops[3 + sp], U32, ins)
    rest = ops[4 + sp:]
    g_sa = g_sb = g_lanes = g_zcm = None
    if scaled:
        if len(rest) != 3:
            raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected [scale-A-tmem], [scale-B-tmem], "
                                                    "enable-input-d")
        g_sa, g_sb = tmem_getter(prog, rest[0], ins), tmem_getter(prog, rest[1], ins)
        rest = rest[2:]
    elif ws:   # enable-input-d {, zero-column-mask-desc}: no lane mask, no scale-input-d (9.7.16.10.9)
        if not 1 <= len(rest) <= 2 or any(isinstance(r, P.Vec) for r in rest):
            raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected enable-input-d {{, "
                                                    "zero-column-mask-desc}")
        if len(rest) == 2:
            g_zcm = prog.read(rest[1], U64, ins)
            rest = rest[:1]
    elif isinstance(rest[0], P.Vec):
        if len(rest[0].items) != 4 * group:
            raise PtxSyntaxError(ins.line, ins.col, f"disable-output-lane takes {4 * group} registers with "
                                                    f".cta_group::{group}")
        g_lanes = [prog.read(r, U32, ins) for r in rest[0].items]
        rest = rest[1:]
    if not 1 <= len(rest) <= 2:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected enable-input-d {{, scale-input-d}}")
    g_en = prog.read(rest[0], PRED, ins)
    scale_input_d = 0
    if len(rest) == 2:
        if not isinstance(rest[1], P.Imm):
            raise PtxSyntaxError(ins.line, ins.col, "scale-input-d is an immediate")
        scale_input_d = rest[1].value
    wh = where(ins)
    name = "tcgen05.mma" + (".ws" if ws else "") + (".sp" if sp else "")
    text = f"{name} (line {ins.line})"
    default_buffer = "b0" if ws else "a"   # no qualifier: .collector::a::discard (.ws: ::b0::discard)

    def issue(W, lane):
        d_addr, idesc_v = int(g_d(W)[lane]), int(g_i(W)[lane])
        try:
            d = InstrDescriptor.decode(idesc_v, kind)
            blackwell.check_form(d, group, a_tmem, None, None, scale_input_d, ws=ws, arch=arch, sparse=sp)
            bs = blackwell.block_size(d, block) if scaled else None
        except TcemuError as e:
            raise KernelFault(wh, f"instruction descriptor {idesc_v:#010x} (.kind::{kind}): {e}") from None
        ctas = list(pair_of(W.cta, wh)) if group == 2 else [W.cta]
        tms = [state(c) for c in ctas]
        M, N = d.m, d.n
        K = blackwell.instr_k(d)
        KA = K // 2 if sp else K      # a sparse A holds K/2 of each row's K (9.7.16.10.8)
        mc, nc = M // group, N // group
        thread = (W.cta.rank, W.index, int(lane))
        key = (d_addr, M, N) + (("ws",) if ws else ())
        op = AsyncOp("mma", W, lane, group, text, key)
        d_lane, d_col = split(d_addr, wh, "D address")
        # tensor memory: D (and C), A, scale factors, sparse metadata
        try:
            dl, dc = d_cells(M, N, group, d_lane, sparse=sp, ws=ws)
        except TcemuError as e:
            raise KernelFault(wh, f"D at {d_addr:#010x}: {e}") from None
        dc = dc + d_col
        enable = bool(g_en(W)[lane])
        reads = []   # (tmem, lanes, cols) read as A / scale factors / metadata
        a_addr = None
        if a_tmem:
            a_addr = int(g_a(W)[lane])
            a_lane, a_col = split(a_addr, wh, "A address")
            bits = _BITS_IN_TMEM.get(d.dtype_a, 4 if kind in ("mxf4", "mxf4nvf4") else 8)
            try:
                al = row_lanes(M, group, a_lane)
            except TcemuError as e:
                raise KernelFault(wh, f"A at {a_addr:#010x}: {e}") from None
            ac = a_col + np.arange(-(-KA * bits // 32))
            for t in tms:
                reads.append((t, al[:, None], ac[None, :], "A"))
        meta = None
        if sp:
            meta = int(g_meta(W)[lane])
            try:
                ml, mcols, _ = meta_cells(kind, mc, selector=d.sparsity_selector, ws=ws, address=meta)
            except TcemuError as e:
                raise KernelFault(wh, f"sparse metadata at {meta:#010x}: {e}") from None
            m_col = split(meta, wh, "sparse metadata address")[1]
            for t in tms:   # every copy (.ws M = 64 / 32), each CTA's own rows (cta_group::2)
                reads.append((t, np.stack(ml), (mcols + m_col)[None], "sparse metadata"))
        sfa = sfb = None
        if scaled:
            if group == 2:
                raise PtxUnsupported(ins.opcode, "block-scaled tcgen05.mma with cta_group::2 (the 2x2 scale-factor "
                                                 f"layout) is not modelled ({ins.where()})")
            sfa, sfb = int(g_sa(W)[lane]), int(g_sb(W)[lane])
            for addr, rows, sf_id, mat in ((sfa, M, d.a_scale_id, "A"), (sfb, N, d.b_scale_id, "B")):
                sl, sc = split(addr, wh, f"scale factors of {mat}")
                r = np.arange(rows)
                if d.k96:   # 3 or 6 bytes a row from byte sf_id, running on into later columns (tmem.py)
                    fl, fc, _ = TensorMemory._sf_cells(rows, K // bs, sf_id)
                    reads.append((tms[0], fl[:, :, None] + 32 * np.arange(4) + sl, sc + fc[:, :, None],
                                  f"scale factors of {mat}"))
                    continue
                reads.append((tms[0], (r % 32)[:, None] + 32 * np.arange(4) + sl, sc + (r // 32)[:, None]
                              + 0 * np.arange(4), f"scale factors of {mat}"))
        for t in tms:
            check_allocated(t, dc, wh, "tcgen05.mma's D is")
            check_pending(t, dl, dc, wh, "tcgen05.mma accumulates into", loads=True)
            check_async(W, t, dl, dc, wh, "tcgen05.mma accumulates into", pipelined=_mma_pipelined(thread, group, key),
                        readers=True)
        for t, ll, cc, what in reads:
            check_allocated(t, cc, wh, f"tcgen05.mma's {what} is in")
            check_pending(t, ll, cc, wh, f"tcgen05.mma reads its {what} from")
            check_async(W, t, ll, cc, wh, f"tcgen05.mma reads its {what} from", pipelined=_feeds_mma(thread, group))
        # the zero-column mask (.ws): B's columns read are those the mask keeps, from the column shift on
        zcm, keep_b, rows_b = None, None, nc
        if g_zcm is not None:
            zcm = int(g_zcm(W)[lane])
            try:
                mask = ZeroColumnMask.decode(zcm)
                for f, rule in mask.validate(M, N, d.max_shift_columns):
                    raise DescriptorError(f, rule)
                unit = blackwell._row_unit(d)
                rows_b = -(-(N + mask.shift) // unit) * unit
                keep_b = np.zeros(rows_b, bool)
                keep_b[mask.shift:mask.shift + N] = ~mask.mask(M, N)
            except TcemuError as e:
                raise KernelFault(wh, f"zero-column mask descriptor {zcm:#018x}: {e}") from None
        # shared memory: A (unless in tensor memory) and B, each CTA's rows / columns of the pair
        padded = kind in ("f8f6f4", "mxf8f6f4")
        for which, value, rows, k, dtype, mn, keep in (("A", None if a_tmem else int(g_a(W)[lane]), mc, KA,
                                                        d.dtype_a, d.transpose_a, None),
                                                       ("B", int(g_b(W)[lane]), rows_b, K, d.dtype_b, d.transpose_b,
                                                        keep_b)):
            if value is None:
                continue
            for c in ctas:
                spots = _smem_spots(c, value, rows, k, dtype, "MN" if mn else "K", padded and dtype in SUBBYTE,
                                    f"tcgen05.mma operand {which}", wh, W, arch=arch, keep=keep)
                op.reads.append((c.shared, spots))
        lanes_words = None
        if g_lanes is not None:
            lanes_words = np.array([int(g(W)[lane]) for g in g_lanes], np.uint64)
        model_kw = {}
        if sp:
            model_kw["sparse_meta"] = meta
        if ws:
            model_kw.update(ws=True, zero_column_mask=zcm)
        if arch != "sm100":
            model_kw["arch"] = arch
        buffers = state(ctas[0]).collector   # one set per CTA (cta_group::2: the pair's, on its even CTA)
        if collector is not None:
            if buffers is None:
                buffers = state(ctas[0]).collector = CollectorBuffers()
            model_kw.update(collector=buffers, collector_op=collector)
        t0 = time.perf_counter()
        try:
            blackwell.tcgen05_mma([c.shared.smem for c in ctas] if group == 2 else ctas[0].shared.smem,
                                  None if a_tmem else int(g_a(W)[lane]), int(g_b(W)[lane]), d, cta_group=group,
                                  enable_input_d=enable, scale_input_d=scale_input_d,
                                  tmem=[t.mem for t in tms] if group == 2 else tms[0].mem, d_tmem=d_addr,
                                  a_tmem=a_addr, scale_a=sfa, scale_b=sfb, block_size_k=bs,
                                  disable_output_lane=lanes_words, **model_kw)
        except TcemuError as e:
            raise KernelFault(wh, f"{e}") from None
        if collector is None and buffers is not None:
            buffers.buffers.pop(default_buffer, None)
        launch = W.cta.launch
        if hasattr(launch, "tensor_core_seconds"):
            launch.tensor_core_seconds += time.perf_counter() - t0
        # bookkeeping: D cells written (lanes disabled by disable-output-lane keep their writer), reads, smem
        for i, t in enumerate(tms):
            t.ops[op.id] = op
            keep = None
            if lanes_words is not None:
                w = lanes_words[4 * i:4 * i + 4]
                keep = ((w[:, None] >> np.arange(32, dtype=np.uint64)) & np.uint64(1)).astype(bool).ravel()
            written = np.ones(dl.shape, bool) if keep is None else ~keep[dl]
            t.writer[dl[written], dc[written]] = op.id
        for t, ll, cc, _ in reads:
            t.reader[np.broadcast_to(ll, np.broadcast(ll, cc).shape), np.broadcast_to(cc, np.broadcast(ll, cc).shape)] \
                = op.id
        for sh, spots in op.reads:
            sh.tcgen05_reading[spots] += 1

    def mma(W, m):
        for lane in _issuers(W, m):   # single-thread semantics: each executing thread issues one MMA
            issue(W, lane)
    return mma


# ------------------------------------------------------------------------------------------------ tcgen05.cp / shift

CP_SHAPES = {"128x256b": (128, 32), "4x256b": (4, 32), "128x128b": (128, 16), "64x128b": (64, 16),
             "32x128b": (32, 16)}   # rows, bytes per row


def cp_lanes(shape, multicast):
    """The lanes (relative to taddr's) each source row is copied to: (rows, copies)."""
    rows = CP_SHAPES[shape][0]
    r = np.arange(rows)[:, None]
    if shape in ("128x256b", "128x128b"):
        return r
    if shape == "4x256b":
        return 32 * r
    if shape == "32x128b":
        return r + 32 * np.arange(4)
    if multicast == "warpx2::02_13":
        return r + 64 * np.arange(2)
    return r % 32 + 64 * (r // 32) + 32 * np.arange(2)   # warpx2::01_23


@register("tcgen05.cp")
def c_cp(ins, prog, pc):
    mods = Mods(ins, skip=2)
    group = _cta_group(mods, ins, prog)
    shape = mods.one_of(tuple(CP_SHAPES))
    if shape is None:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected a shape ({', '.join(CP_SHAPES)})")
    multicast = mods.one_of(("warpx2::02_13", "warpx2::01_23", "warpx4"))
    need = {"64x128b": ("warpx2::02_13", "warpx2::01_23"), "32x128b": ("warpx4",)}.get(shape, (None,))
    if multicast not in need:
        takes = " or ".join("." + n if n else "no multicast" for n in need)
        raise PtxSyntaxError(ins.line, ins.col, f".{shape} takes {takes} (PTX 9.7.16.9.2)")
    src_fmt = mods.one_of(("b6x16_p32", "b4x16_p64"))
    if (src_fmt is None) != ("b8x16" not in mods):
        raise PtxSyntaxError(ins.line, ins.col, ".dst_fmt .b8x16 and .src_fmt .b6x16_p32 / .b4x16_p64 go together")
    rows, row_bytes = CP_SHAPES[shape]
    g_t = tmem_getter(prog, ins.operands[0], ins)
    g_s = prog.read(ins.operands[1], U64, ins)
    wh = where(ins)
    text = f"tcgen05.cp (line {ins.line})"
    rel_lanes = cp_lanes(shape, multicast)

    def issue(W, lane):
        taddr, sdesc = int(g_t(W)[lane]), int(g_s(W)[lane])
        lane0, col0 = split(taddr, wh)
        ctas = list(pair_of(W.cta, wh)) if group == 2 else [W.cta]
        op = AsyncOp("cp", W, lane, group, text)
        ncols = row_bytes // 4
        lanes = (rel_lanes + lane0)[:, :, None]                # (rows, copies, 1)
        cols = (col0 + np.arange(ncols))[None, None, :]        # (1, 1, ncols)
        if lanes.max() >= LANES or cols.max() >= COLUMNS:
            raise MemoryFault(wh, f"tcgen05.cp.{shape} at {taddr:#010x} runs past tensor memory")
        lanes, cols = np.broadcast_arrays(lanes, cols)
        for c in ctas:
            t = state(c)
            check_allocated(t, cols, wh, "tcgen05.cp writes")
            check_pending(t, lanes, cols, wh, "tcgen05.cp writes", loads=True)
            check_async(W, t, lanes, cols, wh, "tcgen05.cp writes", readers=True,
                        pipelined=lambda o: o.kind == "shift" and shape == "4x256b" and o.thread == op.thread)
            # the source: rows of 16-byte chunks read like a K-major operand of 8-bit elements
            spots = _smem_spots(c, sdesc, rows, row_bytes, "u8", "K", False, "tcgen05.cp source", wh, W)
            addrs = operand_addresses(UmmaDescriptor.decode(sdesc), rows=max(rows, 8), k=row_bytes, dtype="u8",
                                      arch="sm100")[:rows]     # checked by _smem_spots above
            if not c.shared.smem.written[addrs].all():
                r, b = np.argwhere(~c.shared.smem.written[addrs])[0]
                raise MemoryFault(wh, f"tcgen05.cp source row {r}, byte {b} reads shared address "
                                      f"{int(addrs[r, b]):#x}, which nothing wrote")
            raw = c.shared.smem.data[addrs]
            if src_fmt is not None:
                raw = _decompress(raw, src_fmt)
            words = np.ascontiguousarray(raw.astype(np.uint8)).view(np.uint32)   # (rows, ncols)
            t.mem.cells[lanes, cols] = np.broadcast_to(words[:, None, :], lanes.shape)
            t.mem.written[lanes, cols] = True
            t.writer[lanes, cols] = op.id
            t.ops[op.id] = op
            op.reads.append((c.shared, spots))
            c.shared.tcgen05_reading[spots] += 1

    def cp(W, m):
        for lane in _issuers(W, m):
            issue(W, lane)
    return cp


def _decompress(raw, src_fmt):
    """(rows, bytes) of 16-value chunks (fp4 + 8 padding bytes, or fp6 + 4) -> one 8-bit container per value
    (PTX 9.7.16.9.1; value i at bits [w i, w (i + 1)) of its chunk, as tcemu.smem reads .b4x16_p64 / .b6x16_p32)."""
    width = 4 if src_fmt == "b4x16_p64" else 6
    chunks = raw.reshape(raw.shape[0], -1, 16).astype(np.int64)
    word = np.zeros(chunks.shape[:2], dtype=object)
    for b in range(16):
        word = word + (chunks[..., b].astype(object) << (8 * b))
    out = np.zeros(chunks.shape, np.int64)
    shift = CONTAINER_SHIFT["e2m1" if width == 4 else "e2m3"]
    for i in range(16):
        out[..., i] = ((word >> (width * i)) & ((1 << width) - 1)).astype(np.int64) << shift
    return out.reshape(raw.shape)


@register("tcgen05.shift")
def c_shift(ins, prog, pc):
    mods = Mods(ins, skip=2)
    group = _cta_group(mods, ins, prog)
    if "down" not in mods:
        raise PtxSyntaxError(ins.line, ins.col, "tcgen05.shift takes .down")
    g_t = tmem_getter(prog, ins.operands[0], ins)
    wh = where(ins)
    text = f"tcgen05.shift (line {ins.line})"

    def issue(W, lane):
        taddr = int(g_t(W)[lane])
        lane0, col0 = split(taddr, wh)
        if lane0 % 32:
            raise KernelFault(wh, f"tcgen05.shift's lane {lane0} is not a multiple of 32 (PTX 9.7.16.9.3)")
        op = AsyncOp("shift", W, lane, group, text)
        # .31x256b (our reading of 9.7.16.9.3): rows lane0 .. lane0 + 30 move one lane down, 8 columns
        lanes = np.arange(lane0, lane0 + 32)[:, None]
        cols = (col0 + np.arange(8))[None, :]
        lanes, cols = np.broadcast_arrays(lanes, cols)
        for c in (list(pair_of(W.cta, wh)) if group == 2 else [W.cta]):
            t = state(c)
            check_allocated(t, cols, wh, "tcgen05.shift moves")
            check_pending(t, lanes, cols, wh, "tcgen05.shift moves", loads=True)
            check_async(W, t, lanes, cols, wh, "tcgen05.shift moves", readers=True,
                        pipelined=lambda o: o.kind == "mma" and o.thread == op.thread)
            if not t.mem.written[lanes[:-1], cols[:-1]].all():
                raise MemoryFault(wh, f"tcgen05.shift at {taddr:#010x} moves tensor memory nothing wrote")
            t.mem.cells[lanes[1:], cols[1:]] = t.mem.cells[lanes[:-1], cols[:-1]].copy()
            t.mem.written[lanes[1:], cols[1:]] = True
            t.writer[lanes, cols] = op.id
            t.ops[op.id] = op

    def shift(W, m):
        for lane in _issuers(W, m):
            issue(W, lane)
    return shift


# ------------------------------------------------------------------------------------------------ tcgen05.commit

@register("tcgen05.commit")
def c_commit(ins, prog, pc):
    mods = Mods(ins, skip=2)
    group = _cta_group(mods, ins, prog)
    if "mbarrier::arrive::one" not in mods:
        raise PtxSyntaxError(ins.line, ins.col, "tcgen05.commit takes .mbarrier::arrive::one")
    multicast = "multicast::cluster" in mods
    space = cluster_space(mods)
    ops = ins.operands
    g_bar = address(prog, ops[0], ins, space)
    g_mask = prog.read(ops[1], U16, ins) if multicast else None
    if multicast != (len(ops) == 2):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: .multicast::cluster goes with a ctaMask operand")
    wh = where(ins)

    key = ("commit", pc)

    def op(W, m):
        # after signalling, the warp yields once (BLOCK, then done on re-execution): the waiters run before it races on
        # (the CuTe tutorials let one warp drive every phase; a waiter two phases behind a parity wait would hang)
        if W.sync.pop(key, None):
            return None
        bars, masks = g_bar(W), (g_mask(W) if g_mask is not None else None)
        tm = state(W.cta)
        for lane in _issuers(W, m):
            cta, off = shared_target(W, bars[lane], space, wh)
            if multicast:
                cm = int(masks[lane])
                targets = [c for r, c in enumerate(W.cta.cluster) if cm >> r & 1]
            else:
                targets = [cta]
            thread = (W.index, int(lane), group)
            arrivals = [(c.rank, off, lookup(W, c, off, wh).phase) for c in targets]
            tm.commits.setdefault(thread, []).append(arrivals)
            for o in tm.unreleased.pop(thread, []):  # every tracked operation completed (tcemu's schedule)
                for sh, spots in o.reads:
                    sh.tcgen05_reading[spots] -= 1
                o.reads = []
            for c in targets:
                lookup(W, c, off, wh).arrive(1, W, wh)
            W.cta.progress = True
        W.sync[key] = True
        W.wait = "nothing (it yields after its tcgen05.commit)"
        return BLOCK
    return op
