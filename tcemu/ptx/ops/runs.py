"""Runs: instructions of one kind with the private instructions between them (lockstep.analyse), run for a whole
gang as one step. lockstep.run asks op.fuse (a Fuse) of the first: a Triton pipeline stage's 4 or 8 cp.async and
their address arithmetic make one issue, an epilogue's 8 st.shared one store, and the gang op's per-CTA work is
paid once a run, not once an instruction.

The private instructions run first, on a copy of the registers (lockstep.Batch(copy=True)); each instruction of the
kind reads its operands from that copy at its place (Fuse.capture); then the kind's executor checks all of them at
once and makes their effects, or raises signals.Fallback before any change, and the copy is dropped: the gang then
runs the first instruction as before, which gives any report. Private instructions touch registers alone and the
run's instructions read registers alone, so running them after the private ones leaves what the instructions one
after the other leave; each executor keeps the order where it shows (records, epochs, logs: instruction by
instruction) and refuses what would make order matter (two of them writing one byte).
A pc whose runs fell back GIVE_UP times in a row stops trying (each try ran its private instructions for nothing)."""
import numpy as np

from .. import lockstep
from ...core.errors import TcemuError
from ..lockstep import Batch
from ..signals import Fallback

GIVE_UP = 8   # runs from one pc that fell back in a row before that pc stops trying (each try ran the private
#              instructions on a copy for nothing: a run over two allocations, say, always falls back)


class Fuse:
    """op.fuse of an instruction that runs in runs: its kind (runs hold one kind), the registers its operands read,
    capture(B, nw) -> what the executor takes of it (read from a Batch of the gang's nw warps), the executor,
    execute(gang, [captured, ...], B) in program order, and the registers it writes (a load: the executor sets them
    in B), which nothing after it in the run may read or write (run_of ends the run there)."""
    __slots__ = ("kind", "touched", "capture", "execute", "writes")

    def __init__(self, kind, touched, capture, execute, writes=None):
        self.kind, self.touched, self.capture, self.execute = kind, touched, capture, execute
        self.writes = writes or {}

    def run(self, gang, pc: int, log=None) -> int:
        """The run from pc for a whole gang (every lane of converged warps, lockstep.run): the warp instructions
        run, or 0 (nothing changed: the run holds one instruction of the kind, or a check failed)."""
        prog = gang[0].prog
        run = run_of(prog, pc)
        if run is None:
            return 0
        failed = prog.__dict__.setdefault("_fuse_failed", {})
        if failed.get(pc, 0) >= GIVE_UP:
            return 0
        if not self._try(gang, pc, run, log):
            failed[pc] = failed.get(pc, 0) + 1
            return 0
        failed.pop(pc, None)
        return (run[0] - pc) * len(gang)

    def _try(self, gang, pc, run, log) -> bool:
        """The run (run_of's) for the gang; False where it changed nothing."""
        prog = gang[0].prog
        end, fused, touched, written = run
        code = prog.code
        if log is not None:
            log.running = gang[0]
        B = Batch(gang, touched, copy=True)
        nw, items = len(gang), []
        try:
            for at in range(pc, end):
                f = fused.get(at)
                if f is not None:
                    items.append(f.capture(B, nw))
                elif code[at](B, None) is not None:
                    return False
            self.execute(gang, items, B)
        except (Fallback, TcemuError):
            return False
        except Exception:   # an op the batch cannot run (lockstep.stretch): the gang runs the instruction alone
            if lockstep.FORCE:
                raise
            return False
        B.store(written)
        for w in gang:
            w.pc = end
            w.wait = None
            w.executed += end - pc
        return True


def run_of(prog, pc):
    """(end, {pc: Fuse} of its instructions of the kind, registers read, registers written) of the run from pc, or
    None where it holds one instruction of its kind (the gang op alone is as fast)."""
    runs = prog.__dict__.setdefault("_fuse_runs", {})
    if pc in runs:
        return runs[pc]
    code, private_end = prog.code, prog.lockstep_end
    kind = code[pc].fuse.kind
    fused, touched, written, late = {}, {}, {}, {}   # late: what the run's loads write (set after everything)
    at = pc
    while at < len(code):
        f = getattr(code[at], "fuse", None)
        same = f is not None and f.kind == kind
        if same:
            reads, writes, nxt = f.touched, f.writes, at + 1
        elif private_end[at] > at:
            reads, writes = prog.lockstep_regs[at]
            nxt = int(private_end[at])
        else:
            break
        if any(late.get(c, set()).intersection(idx.tolist()) for c, idx in reads.items()):
            break   # (reads include what it writes) it would see a load's register before the load
        if same:
            fused[at] = f
            for c, idx in writes.items():
                late.setdefault(c, set()).update(idx.tolist())
        for c, idx in writes.items():
            written.setdefault(c, set()).update(idx.tolist())
        for c, idx in reads.items():
            touched.setdefault(c, set()).update(idx.tolist())
        at = nxt
    runs[pc] = None if len(fused) < 2 else (
        at, fused, {c: np.array(sorted(x)) for c, x in touched.items()},
        {c: np.array(sorted(x)) for c, x in written.items()})
    return runs[pc]
