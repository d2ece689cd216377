"""`wgmma_numerics` traces (scripts/capture_numerics.cu, traces/README.md): seeded wgmma cases, a digest of every
thread's D registers (and the raw registers of some), against tcemu.wgmma on the same inputs (tcemu.traces.seeds
regenerates them)."""
import hashlib

import numpy as np

from ...core.errors import TraceError
from ...core.validate import is_int, show
from ...hopper.wgmma import K_OF, OUT_NUMPY, legal_n, wgmma
from ...layout.addressing import operand_addresses
from ...layout.descriptors import GmmaDescriptor
from ...layout.fragments import to_d_registers
from ...layout.smem import SharedMemory
from .. import seeds
from ..archive import MAX_STEPS, Trace
from ..seeds import NUMERICS_KINDS
from .base import GroupResult, Kind, ReplayResult, col, meta_list, offsets


def _check(meta, cols):
    # the inputs come from seeds.py's generator, which numbers the kinds itself: the trace must agree
    kinds = meta_list(meta, "kinds", len(NUMERICS_KINDS), lambda v: isinstance(v, list) and len(v) == 4)
    for i, v in enumerate(kinds):
        if v != list(NUMERICS_KINDS[i]) or type(v[3]) is not int:
            raise TraceError("meta.kinds", f"kind {i} is {show(v)}; the generator's kind {i} is "
                                           f"{list(NUMERICS_KINDS[i])}")
    insts = meta_list(meta, "instantiations", 4096, lambda v: isinstance(v, list) and len(v) == 7 and
                      all(is_int(x) for x in v) and 0 <= v[0] < len(kinds) and legal_n(v[1], "f32") and
                      v[2] in (0, 1) and v[3] in (0, 1) and v[4] in (1, -1) and v[5] in (1, -1) and v[6] in (0, 1))
    n = col(cols, "seed", 0, (1 << 64) - 1, (None,)).size
    inst = col(cols, "inst", 0, len(insts) - 1, (n,))
    col(cols, "steps", 1, MAX_STEPS, (n,))
    col(cols, "scale_d", 0, 1, (n,))
    col(cols, "digest", 0, (1 << 32) - 1, (n, 128))
    diag = col(cols, "diag_case", 0, max(n - 1, 0), (None,))
    regs = col(cols, "diag_regs", 0, (1 << 32) - 1, (None,))
    off = offsets(cols, "diag_offsets", diag.size, regs.size)
    for j, case in enumerate(diag.tolist()):
        kind, width = insts[int(inst[case])][0], insts[int(inst[case])][1]
        per_thread = width // 4 if kinds[kind][2] == "f16" else width // 2
        if off[j + 1] - off[j] != 128 * per_thread:
            raise TraceError("diag_offsets", f"diagnostic case {case} must hold 128 x {per_thread} registers")


def thread_digests(regs: np.ndarray) -> np.ndarray:
    """(128,) uint32: blake2b(digest_size=4) of each thread's raw registers as little-endian words."""
    return np.array([int.from_bytes(hashlib.blake2b(np.ascontiguousarray(r, "<u4").tobytes(), digest_size=4)
                                    .digest(), "little") for r in regs], np.uint32)


# Shared-memory placement used by scripts/capture_numerics.cu: no swizzle, A at +0, B at +4096.
NUMERICS_BASE, B_OFF = 0x400, 4096


def _numerics_descriptor(offset, rows, mn_major):
    if mn_major:  # SBO: next 8 MN elements; LBO: next 8 K
        return GmmaDescriptor(NUMERICS_BASE + offset, lbo=(rows // 8) * 128, sbo=128)
    return GmmaDescriptor(NUMERICS_BASE + offset, lbo=128, sbo=256)


def _write_numerics_operand(smem, desc, bits, dtype, mn_major):
    if dtype == "b1":  # the capture writes raw bytes of each row's 32-byte K extent
        smem.scatter(operand_addresses(desc, rows=bits.shape[0], k=32, dtype="u8"), bits, "u8")
    else:
        smem.write_operand(desc, bits, dtype=dtype, major="MN" if mn_major else "K")


def numerics_case_registers(trace: Trace, i: int) -> np.ndarray:
    """tcemu's raw D registers (128, nregs) for case i of a wgmma_numerics trace."""
    cols = trace.columns
    kind, n, ta, tb, sa, sb, rega = trace.meta["instantiations"][int(cols["inst"][i])]
    atype, btype, dtype, satf = trace.meta["kinds"][kind]
    seed = int(cols["seed"][i])
    K = K_OF[atype]
    c = seeds.c_bits(seed, kind, n).view(OUT_NUMPY[dtype])
    scale_d = bool(cols["scale_d"][i])
    da, db = _numerics_descriptor(0, 64, ta), _numerics_descriptor(B_OFF, n, tb)
    for step in range(int(cols["steps"][i])):
        smem = SharedMemory()
        a_regs = seeds.a_register_bits(seed, kind, step) if rega else None
        if not rega:
            _write_numerics_operand(smem, da, seeds.operand_bits(seed, kind, step, "A", 64), atype, ta)
        _write_numerics_operand(smem, db, seeds.operand_bits(seed, kind, step, "B", n), btype, tb)
        c = wgmma(smem, None if rega else da, db, shape=f"m64n{n}k{K}", dtype_a=atype, dtype_b=btype,
                  dtype_d=dtype, trans_a=bool(ta), trans_b=bool(tb), c=c, scale_d=scale_d or step > 0,
                  scale_a=sa, scale_b=sb, satfinite=bool(satf), a_regs=a_regs)
    return to_d_registers(c.view(np.uint16 if dtype == "f16" else np.uint32), dtype)


def _replay(trace: Trace, result: ReplayResult, max_report: int):
    cols, meta = trace.columns, trace.meta
    diag = {int(c): j for j, c in enumerate(cols["diag_case"])}
    for i in range(cols["seed"].size):
        kind, n, ta, tb, sa, sb, rega = meta["instantiations"][int(cols["inst"][i])]
        atype, btype, dtype, satf = meta["kinds"][kind]
        form = (f"{atype}.{btype}->{dtype}{'.sat' if satf else ''}"
                + (" regA" if rega else "") + (" trans" if ta or tb else "") + (" neg" if -1 in (sa, sb) else ""))
        regs = numerics_case_registers(trace, i)
        same = thread_digests(regs) == cols["digest"][i]
        if i in diag:
            lo, hi = cols["diag_offsets"][diag[i]], cols["diag_offsets"][diag[i] + 1]
            hw = cols["diag_regs"][lo:hi].reshape(regs.shape)
            same &= np.all(hw == regs, axis=1)
        count_threads(result, cols, i, form, n, same, regs.shape[1], max_report)


def count_threads(result: ReplayResult, cols, i, form, n, same, nregs, max_report):
    """Case i (instruction N = n) of a seeded numerics trace, dense or sparse, into the group of its `form`:
    `same` (128,) says which threads match in all their `nregs` D registers."""
    group = result.groups.setdefault(form, GroupResult())
    group.cases += 1
    group.values += 128 * nregs
    group.values_matched += int(same.sum()) * nregs
    group.cases_matched += bool(same.all())
    if not same.all() and len(result.mismatches) < max_report:
        t = int(np.flatnonzero(~same)[0])
        result.mismatches.append(f"case {i} {form} n={n} steps={int(cols['steps'][i])} seed={int(cols['seed'][i])}: "
                                 f"{int((~same).sum())} of 128 threads differ (first: thread {t})")


TRACE_KINDS = (Kind("wgmma_numerics", ("seed", "inst", "steps", "scale_d", "digest", "diag_case", "diag_offsets",
                                       "diag_regs"), _check, _replay),)
