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
  (tcgen05.wait::ld) under a write (9.7.16.6.4.5: register dependencies order an ld's results, not its reads),
  except the issuing warp's own tcgen05.st (lenient: CUTLASS's sm100 FMHA relies on it; not silicon-checked);
- shared memory an uncommitted tcgen05.mma / .cp reads, overwritten (SharedWindow.tcgen05_reading); operand bytes
  not written, still the target of an asynchronous copy, not fenced for the async proxy (9.7.16.6.5), from a TMA
  whose mbarrier phase the issuing warp has not observed, or (layout check) not a coherent tile of their source;
- a warp touching lanes outside its sub-partition (warp % 4 owns lanes 32 (warp % 4) .. +31, 9.7.16.8.1), tensor
  memory outside every allocation, allocation rules (9.7.16.7.1: a power of two of 32..512 columns, no alloc after
  relinquish_alloc_permit, no growing allocations, everything deallocated before exit), one .cta_group per kernel.

One module per part: state.py (per-CTA tensor memory, asynchronous operations, the shared checks), alloc.py, ldst.py
(tcgen05.ld / .st / .wait), mma.py, cp.py (tcgen05.cp / .shift), commit.py (tcgen05.commit, the fences) and
shared.py (shared-memory operand reads). Each registers its opcodes on import.
"""
from . import alloc, commit, cp, ldst, mma  # noqa: F401  (each registers its opcodes)
from .cp import CP_SHAPES, cp_lanes  # noqa: F401
from .ldst import SHAPES, datapath  # noqa: F401
