"""tcgen05.commit (PTX 9.7.16.12.1): an mbarrier arrival once the thread's earlier asynchronous tcgen05 operations
complete (at once, in tcemu's schedule), and the tcgen05 fences (9.7.16.6.4)."""
from ...errors import PtxSyntaxError
from ...machine import BLOCK
from ...types import TYPES
from ..common import where
from ..mbarrier import lookup
from ..memory_ops import address, cluster_space, shared_target
from ..registry import register
from .state import issuers, qualifiers, state

U16 = TYPES["u16"]


@register("tcgen05.commit")
def c_commit(ins, prog, pc):
    mods, group = qualifiers(ins, prog, "mbarrier::arrive::one")
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
        for lane in issuers(W, m):
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



@register("tcgen05.fence::before_thread_sync", "tcgen05.fence::after_thread_sync")
def c_fence(ins, prog, pc):
    # ordering is what mbarrier waits and barriers hand on (W.mbar_seen); tcemu does not require these fences
    return lambda W, m: None

