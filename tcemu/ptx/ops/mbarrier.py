"""mbarrier objects in shared memory (PTX ISA 9.7.13.15): init, arrive (counts, expect_tx), expect_tx,
complete_tx, test_wait / try_wait (.parity or a state), inval, pending_count, cp.async.mbarrier.arrive.

A phase completes when its pending arrival count and its transaction count both reach zero; then the phase
flips, the pending count is reset to the expected count. A failed test_wait/try_wait makes the warp wait
(re-executed later): one legal schedule, in which the barrier completes before the wait's time limit. A
successful wait records the completed phase in the warp (`W.mbar_seen`), which guards reads of TMA data, and
hands on what the arriving warps knew (release/acquire).
"""
import numpy as np

from .. import parser as P
from .. import races
from ..errors import HazardError, KernelFault, PtxSyntaxError
from ..machine import BLOCK
from ..types import TYPES
from .common import Mods, each_warp, mask_array, where
from .registry import register
from .cp_async import drain_cp_async
from .memory_ops import address, cluster_space, shared_target

U32 = TYPES["u32"]
U64 = TYPES["u64"]
PRED = TYPES["pred"]
TX_LIMIT = (1 << 20) - 1  # tx-count range [-(2^20 - 1), 2^20 - 1] (PTX 9.7.13.15.1)


class MBarrier:
    def __init__(self, cta, offset, count, wh):
        if not 1 <= count <= (1 << 20) - 1:
            raise KernelFault(wh, f"mbarrier.init count {count} outside 1..2^20-1")
        self.cta, self.offset = cta, offset
        self.expected = self.pending = count
        self.tx = 0
        self.phase = 0            # completed phases so far; the current phase's parity is phase & 1
        self.knowledge = {}       # what arriving warps knew (merged), handed to waiters
        self.arrivals = 0
        self.race_acc = None      # racecheck: the arriving warps' clocks this phase (races.py)
        self.race_done = None     # ... and of every completed phase, acquired by a successful wait

    def describe(self) -> str:
        tx = f", tx-count {self.tx} bytes" + (" (more bytes delivered than expected)" if self.tx < 0 else
                                              " still expected") if self.tx else ""
        return (f"mbarrier at {self.offset:#x} of CTA {self.cta.ctaid}: phase {self.phase} (parity {self.phase & 1}), "
                f"{self.pending} of {self.expected} arrivals pending{tx}")

    def learn(self, W):
        for bar, ph in W.mbar_seen.items():
            if self.knowledge.get(bar, -1) < ph:
                self.knowledge[bar] = ph

    def arrive(self, count, W, wh, lanes: int = 1):
        """An arrival of `count` by warp W; lanes: that many lanes' single arrivals in one step (count = lanes, no
        phase completing before the last: what W knew merged once, its clock released once a lane)."""
        if count < 1 or count > self.pending:
            raise HazardError(wh, f"arrive with count {count} on an {self.describe()}: more arrivals than the "
                                  "phase expects")
        if W is not None:
            self.learn(W)
            races.mbar_release(W, self, lanes)
        self.pending -= count
        self._maybe_complete()

    def expect_tx(self, n, wh):
        self.tx += n
        if abs(self.tx) > TX_LIMIT:
            raise HazardError(wh, f"tx-count {self.tx} outside the mbarrier's range +-(2^20 - 1)")

    def complete_tx(self, n):
        self.tx -= n
        self._maybe_complete()

    def _maybe_complete(self):
        if self.pending == 0 and self.tx == 0:
            races.mbar_complete(self)
            self.phase += 1
            self.pending = self.expected
            self.cta.progress = True

    def observe(self, W):
        """W saw phases up to self.phase - 1 complete."""
        key = (self.cta.rank, self.offset)
        if W.mbar_seen.get(key, -1) < self.phase - 1:
            W.mbar_seen[key] = self.phase - 1
        share_knowledge_from(W, self.knowledge)
        races.mbar_acquire(W, self)


def share_knowledge_from(W, knowledge):
    for bar, ph in knowledge.items():
        if W.mbar_seen.get(bar, -1) < ph:
            W.mbar_seen[bar] = ph


def lookup(W, cta, offset, wh) -> MBarrier:
    mb = cta.mbarriers.get(offset)
    if mb is None:
        raise KernelFault(wh, f"no initialised mbarrier at shared address {offset:#x} of CTA {cta.ctaid} "
                              "(mbarrier.init missing, or a wrong address)")
    return mb


def _uniform_target(W, m, get_addr, space, wh):
    """The one mbarrier the executing lanes name (they must agree)."""
    act = mask_array(m) & W.live
    addrs = get_addr(W)[act]
    if addrs.size == 0:
        return None
    if not (addrs == addrs[0]).all():
        return [shared_target(W, a, space, wh) for a in addrs.tolist()]
    return shared_target(W, addrs[0], space, wh)


@register("mbarrier")
def c_mbarrier(ins, prog, pc):
    mods = Mods(ins)
    op_name = mods.parts[0]
    space = cluster_space(mods)
    ops = ins.operands
    wh = where(ins)
    if op_name == "init":
        get_addr = address(prog, ops[0], ins, space)
        gcount = prog.read(ops[1], U32, ins)

        def init(W, m):
            act = mask_array(m) & W.live
            for a, c in zip(get_addr(W)[act].tolist(), gcount(W)[act].tolist()):
                cta, off = shared_target(W, a, space, wh)
                if off % 8:
                    raise KernelFault(wh, f"mbarrier at {off:#x} is not 8-byte aligned")
                sh = cta.shared
                sh.check(np.array([off]), 8, [0], wh, "initialises")
                cta.mbarriers[off] = MBarrier(cta, off, int(c), wh)
                if sh.race is not None:  # racecheck does not follow the object's bytes
                    sh.race.forget(off, off + 8)
                sh.mbar_live[off:off + 8] = True
                sh.smem.written[off:off + 8] = True
        return init
    if op_name == "inval":
        get_addr = address(prog, ops[0], ins, space)

        def inval(W, m):
            t = _uniform_target(W, m, get_addr, space, wh)
            for cta, off in (t if isinstance(t, list) else [t] if t else []):
                cta.mbarriers.pop(off, None)
                cta.shared.mbar_live[off:off + 8] = False
        return inval
    if op_name in ("arrive", "arrive_drop"):
        expect = "expect_tx" in mods
        state = ops[0] if not isinstance(ops[0], P.Addr) else None
        rest = ops[1:] if state is not None else ops
        get_addr = address(prog, rest[0], ins, space)
        gval = prog.read(rest[1], U32, ins) if len(rest) > 1 else None
        sd = prog.write(state, U64, ins) if state is not None else None
        drop = op_name == "arrive_drop"
        no_complete = "noComplete" in mods

        def arrive(W, m):
            act = mask_array(m) & W.live
            addrs = get_addr(W)
            vals = gval(W) if gval is not None else None
            out = np.zeros(32, np.uint64)
            lanes = np.flatnonzero(act)
            if lanes.size > 1 and not (expect or drop or no_complete) and vals is None and \
                    (addrs[lanes] == addrs[lanes[0]]).all():   # one mbarrier, one arrival a lane
                cta, off = shared_target(W, addrs[lanes[0]], space, wh)
                mb = lookup(W, cta, off, wh)
                if lanes.size <= mb.pending:   # no phase completes before the last lane
                    out[lanes] = np.uint64(mb.phase) | (np.uint64(mb.pending) - np.arange(lanes.size,
                                                                                         dtype=np.uint64)) << 32
                    mb.arrive(lanes.size, W, wh, lanes=lanes.size)
                    W.cta.progress = True
                    lanes = lanes[:0]
            for lane in lanes:  # each executing thread arrives once
                cta, off = shared_target(W, addrs[lane], space, wh)
                mb = lookup(W, cta, off, wh)
                out[lane] = mb.phase | mb.pending << 32  # the opaque state: phase and pending count before it
                if expect:
                    mb.expect_tx(int(vals[lane]), wh)
                    mb.arrive(1, W, wh)
                else:
                    count = int(vals[lane]) if vals is not None else 1
                    if no_complete and count >= mb.pending:
                        raise HazardError(wh, f"arrive.noComplete would complete the phase of an {mb.describe()}")
                    mb.arrive(count, W, wh)
                if drop:  # later phases expect one arrival fewer
                    mb.expected -= 1
                W.cta.progress = True
            if sd is not None:
                sd(W, out, m)
        return each_warp(arrive)
    if op_name in ("expect_tx", "complete_tx"):
        get_addr = address(prog, ops[0], ins, space)
        gval = prog.read(ops[1], U32, ins)

        def tx(W, m):
            act = mask_array(m) & W.live
            addrs, vals = get_addr(W), gval(W)
            for lane in np.flatnonzero(act):
                cta, off = shared_target(W, addrs[lane], space, wh)
                mb = lookup(W, cta, off, wh)
                if op_name == "expect_tx":
                    mb.expect_tx(int(vals[lane]), wh)
                else:
                    mb.complete_tx(int(vals[lane]))
        return each_warp(tx)
    if op_name in ("test_wait", "try_wait"):
        parity = "parity" in mods
        dest = ops[0]
        get_addr = address(prog, ops[1], ins, space)
        gphase = prog.read(ops[2], U32 if parity else U64, ins)
        sd = prog.write(dest, PRED, ins)
        key = ("mbar", pc)

        def wait(W, m):
            t = _uniform_target(W, m, get_addr, space, wh)
            if t is None:
                return None
            if isinstance(t, list):
                raise HazardError(wh, "threads of one warp wait on different mbarriers in one instruction")
            cta, off = t
            mb = lookup(W, cta, off, wh)
            want = gphase(W)
            act = mask_array(m) & W.live
            w = int(want[act][0]) if parity else int(want[act][0]) & 0xFFFFFFFF  # a state's phase: low word
            done = ((mb.phase & 1) != (w & 1)) if parity else (mb.phase > w)
            if done or W.give_up_test:  # give up: every warp was parked (run_ctas); the phase is incomplete
                if done:
                    mb.observe(W)
                sd(W, np.full(32, done), m)
                W.sync.pop(key, None)
                W.give_up_test = W.parked_test = False
                return None
            W.parked_test = True
            W.wait = (f"{'parity ' + str(w & 1) if parity else 'phase ' + str(w)} of the {mb.describe()}")
            return BLOCK
        return wait
    if op_name == "pending_count":
        d, s = ops
        gs, sd = prog.read(s, U64, ins), prog.write(d, U32, ins)
        # the pending arrivals of the phase when the arrive that returned the state ran, before it (PTX ISA,
        # mbarrier.pending_count: the state is "captured prior to the arrive-on operation")
        return lambda W, m: sd(W, (gs(W) >> np.uint64(32)).astype(np.uint32), m)
    raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: unknown mbarrier operation")


@register("cp.async.mbarrier")
def c_cp_async_mbarrier(ins, prog, pc):
    """cp.async.mbarrier.arrive{.noinc}: arrive once this thread's prior cp.async copies complete."""
    mods = Mods(ins, skip=2)
    space = cluster_space(mods)
    noinc = "noinc" in mods
    get_addr = address(prog, ins.operands[0], ins, space)
    wh = where(ins)

    def op(W, m):
        drain_cp_async(W)  # completing the copies now is one legal schedule
        act = mask_array(m) & W.live
        addrs = get_addr(W)
        for lane in np.flatnonzero(act):
            cta, off = shared_target(W, addrs[lane], space, wh)
            mb = lookup(W, cta, off, wh)
            if not noinc:  # .noinc: the arrival is counted in init's count; otherwise it adds one first
                mb.pending += 1
            mb.arrive(1, W, wh)
    return op
