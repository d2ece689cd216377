"""The op table (tcemu/ptx/optable.py): per PC, the columns lock-step, the scheduler, the hang probes and the
hazard wrappers read, decided from the instruction's text; and those parts read them from it."""
import numpy as np

import tcemu.ptx as ptx
from tcemu.ptx import hang, optable
from ptxkit import entry

# instruction, then its expected columns: private, warp_sync, has_dest, cta_barrier, spin_ok, unit
ROWS = [
    ("add.s32 %r1, %r2, %r3;", "P.D.S", ""),
    ("mov.u32 %r1, %clock;", "..D.S", ""),            # each %clock read advances the CTA's clock
    ("add.cc.u32 %r1, %r2, %r3;", "..D.S", ""),       # the carry flag is not a batched register
    ("ld.global.u32 %r1, [%rd1];", "..D.S", ""),
    ("st.global.u32 [%rd1], %r1;", "....S", ""),      # a probe ends where a store changes a byte
    ("prefetchu.L1 [%rd1];", "....S", ""),
    ("shfl.sync.idx.b32 %r1, %r2, 0, 31, -1;", ".WD.S", ""),
    ("elect.sync %r1|%p1, -1;", ".WD.S", ""),
    ("bar.warp.sync -1;", ".W..S", ""),
    ("bar.sync 0;", ".W.B.", ""),
    ("barrier.cluster.arrive;", ".W...", ""),
    ("cp.async.ca.shared.global [%r1], [%rd1], 4;", ".....", "cp.async"),
    ("cp.async.commit_group;", ".....", "cp.async"),
    ("cp.async.mbarrier.arrive.b64 [%r1];", ".....", "cp.async"),
    ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 16, [%r2];", ".....",
     "bulk"),
    ("mbarrier.init.shared::cta.b64 [%r1], 32;", ".....", "mbarrier"),
    ("wgmma.fence.sync.aligned;", ".W...", "wgmma"),
    ("fence.proxy.async.shared::cta;", ".....", ""),
    ("membar.cta;", "....S", ""),
]


def _program(rows):
    body = "".join(f"  {text}\n" for text, _, _ in rows) + "  ret;\n"
    return ptx.load(entry(body)).program("k")


def test_each_column_is_the_instructions_own():
    prog = _program(ROWS)
    t = prog.table
    first = len(prog.instrs) - len(ROWS) - 1   # the kernel's prologue comes first
    for k, (text, cols, unit) in enumerate(ROWS):
        pc = first + k
        got = "".join(c if v else "." for c, v in zip("PWDBS", (t.private[pc], t.warp_sync[pc], t.has_dest[pc],
                                                                 t.cta_barrier[pc], t.spin_ok[pc])))
        assert (got, t.unit[pc]) == (cols, unit), text
    end = len(prog.instrs)   # past the end: nothing
    assert not (t.private[end] or t.warp_sync[end] or t.has_dest[end] or t.spin_ok[end]) and t.unit[end] == ""
    assert t.uses("bulk") and t.uses("wgmma", "tcgen05") and not t.uses("tcgen05")


def test_a_called_functions_ret_is_warp_synchronous_and_the_kernels_is_not():
    text = entry("  call f;\n  ret;\n", before=".func f()\n{\n  ret;\n}\n")
    prog = ptx.load(text).program("k")
    rets = [pc for pc, i in enumerate(prog.instrs) if i.opcode == "ret"]
    assert sorted(bool(prog.table.warp_sync[pc]) for pc in rets) == [False, True]


def test_multimem_has_a_destination_only_for_ld_reduce():
    def ins(opcode, *operands):
        return ptx.parser.Instruction(opcode, operands, None, 1, 1)
    r = ptx.parser.Reg("%r1")
    assert optable.has_dest(ins("multimem.ld_reduce.global.add.u32", r, r))
    assert not optable.has_dest(ins("multimem.st.global.u32", r, r))
    assert not optable.has_dest(ins("multimem.red.global.add.u32", r, r))


def test_lock_step_the_scheduler_and_the_probes_read_the_table():
    prog = _program(ROWS)
    assert prog.converge is prog.table.warp_sync
    ok, with_bars = hang._allowed(prog, False), hang._allowed(prog, True)
    assert np.array_equal(ok, prog.table.spin_ok)
    assert np.array_equal(with_bars, prog.table.spin_ok | prog.table.cta_barrier)
    # a private stretch (lockstep.analyse) is a run of the column's PCs: here the first add alone
    pc = len(prog.instrs) - len(ROWS) - 1
    assert prog.lockstep_end[pc] == pc + 1 and prog.lockstep_end[pc + 1] == pc + 1
