"""wgmma.fence / commit_group / wait_group / mma_async (PTX ISA 9.7.15), executed by tcemu.wgmma.

mma_async is a warpgroup collective: the four warps of a warpgroup reach it, then it runs once with their
128 threads' registers (descriptors, scale-d and A fragments read from the threads, which must agree). The
result lands in the accumulator registers at once, but those registers stay *pending* until a
wgmma.wait_group retires the instruction's group: any other instruction that touches them before then is a
hazard (PTX 9.7.15.7: "accessing the accumulator register ... without first performing a wgmma.wait_group
... is undefined behavior"), as is an accumulator or A register written by another instruction since the
last wgmma.fence. Shared-memory operands must be in the kernel's allocation, written, not the target of an
asynchronous copy still in flight, and visible to the async proxy (a fence.proxy.async after generic writes).
"""
import re
import time

import numpy as np

from ...hopper import wgmma as hopper
from ...hopper.forms import D_TYPES, K_OF, SP_K_OF, check_form, immediates, sparse_selector
from ...layout.descriptors import GmmaDescriptor
from ...core.errors import TcemuError
from ...arith.fdp import OUT_NUMPY
from ...layout.fragments import from_d_registers, to_d_registers
from ...hopper.sparse import wgmma_sp
from .. import parser as P
from .. import races
from ..errors import HazardError, KernelFault, MemoryFault, PtxSyntaxError
from ..machine import BLOCK
from ..chains import registers, settle
from ..lockstep import slots_of
from ..signals import Fallback
from ..provenance import check_operand
from ..types import TYPES
from .common import Mods, each_warp, where
from .registry import register
from .wgmma_gang import GangMma, InFlight, operand

B32 = TYPES["b32"]
U64 = TYPES["u64"]
PRED = TYPES["pred"]


@register("wgmma.fence")
def c_fence(ins, prog, pc):
    def op(W, m):
        W.wgmma_dirty.clear()
    return each_warp(op)


@register("wgmma.commit_group")
def c_commit(ins, prog, pc):
    def op(W, m):
        W.wgmma_groups.append(W.wgmma_open)
        W.wgmma_open = []
    return each_warp(op)


@register("wgmma.wait_group")
def c_wait(ins, prog, pc):
    n = ins.operands[0] if ins.operands else None
    if not isinstance(n, P.Imm):
        raise PtxSyntaxError(ins.line, ins.col, "wgmma.wait_group takes an immediate group count")
    keep = n.value

    def op(W, m):
        retire(W, keep)
    return each_warp(op)


def retire(W, keep: int):
    """wgmma.wait_group keep: the warp's committed groups beyond the newest `keep` complete."""
    while len(W.wgmma_groups) > keep:
        for slots, flight in W.wgmma_groups.pop(0):
            if flight is not None:
                flight.retire()
                races.acquire(W, flight.clock)
            left = W.wgmma_pending.get(slots, 0) - 1
            if left > 0:
                W.wgmma_pending[slots] = left
            else:
                W.wgmma_pending.pop(slots, None)


def serialize(W):
    """What ptxas does where a non-wgmma instruction reads or writes a register of a wgmma still in flight: it
    injects a wgmma.wait_group there (info C7517, a read) or serializes the wgmmas (C7515, a write), so the access
    sees, or comes after, the finished wgmma (ptxas 13.4 on Triton's max_num_imprecise_acc kernel and on
    tests/ptx/test_wgmma.py's hazards). Every wgmma the warp issued completes here, committed or not."""
    if W.wgmma_open:
        W.wgmma_groups.append(W.wgmma_open)
        W.wgmma_open = []
    retire(W, 0)


@register("wgmma.mma_async")
def c_mma(ins, prog, pc):
    mods = Mods(ins, skip=2)
    sparse = "sp" in mods  # wgmma.mma_async.sp: A holds K/2 stored elements; metadata register and sp-sel follow B
    shape = next((p for p in mods.parts if re.fullmatch(r"m\d+n\d+k\d+", p)), None)
    if shape is None:
        raise PtxSyntaxError(ins.line, ins.col, "wgmma.mma_async needs a shape .m64nNkK")
    names = [p for p in mods.parts if p in K_OF or p in D_TYPES]
    if len(names) != 3:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected .dtype.atype.btype")
    dtype_d, dtype_a, dtype_b = names
    satfinite = "satfinite" in mods
    n = int(re.fullmatch(r"m\d+n(\d+)k\d+", shape).group(1))
    ops = ins.operands
    d_vec = ops[0]
    if not isinstance(d_vec, P.Vec):
        raise PtxSyntaxError(ins.line, ins.col, "wgmma's D is a vector of registers")
    d_slots = [prog.slot(r, ins) for r in d_vec.items]
    nregs = n // 4 if dtype_d == "f16" else n // 2
    if len(d_slots) != nregs:
        raise PtxSyntaxError(ins.line, ins.col, f"{shape} .{dtype_d} takes {nregs} D registers, got {len(d_slots)}")
    a_regs = isinstance(ops[1], P.Vec)
    a_slots = [prog.slot(r, ins) for r in ops[1].items] if a_regs else []
    if a_regs and len(a_slots) != 4:
        raise PtxSyntaxError(ins.line, ins.col, "A in registers takes 4 registers")
    ga = None if a_regs else prog.read(ops[1], U64, ins)
    gb = prog.read(ops[2], U64, ins)
    rest = ops[3:]
    gmeta = sel = None
    if sparse:
        if len(rest) < 3 or not isinstance(rest[1], P.Imm):
            raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected sp-meta, an immediate sp-sel, then scale-d")
        gmeta, sel = prog.read(rest[0], TYPES["b32"], ins), rest[1].value
        rest = rest[2:]
    gscale = prog.read(rest[0], PRED, ins)
    imm = [o.value if isinstance(o, P.Imm) else None for o in rest[1:]]
    if any(v is None for v in imm):
        raise PtxSyntaxError(ins.line, ins.col, "wgmma's scale and transpose arguments are immediates")
    want = immediates(dtype_a, dtype_d, a_regs)   # imm-scale-a/b, imm-trans-a/b (PTX 9.7.15.5)
    if len(imm) != len(want):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} takes {len(want) or 'no'} immediates after scale-d")
    imm = dict(zip(want, imm))
    scale_a, scale_b = imm.get("scale_a", 1), imm.get("scale_b", 1)
    trans_a, trans_b = bool(imm.get("trans_a", False)), bool(imm.get("trans_b", False))
    try:  # the form itself is checked once, at load time
        if sparse:
            _, K = check_form(shape, dtype_a, dtype_b, dtype_d, trans_a, trans_b, scale_a, scale_b, satfinite,
                              k_of=SP_K_OF, what="sparse wgmma")
            sparse_selector(dtype_a, sel)
        else:
            _, K = check_form(shape, dtype_a, dtype_b, dtype_d, trans_a, trans_b, scale_a, scale_b, satfinite)
    except TcemuError as e:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: {e}") from None
    k_a = K // 2 if sparse else K
    slots = prog.canonical(frozenset(d_slots + a_slots))
    prog.wgmma_slots |= slots
    wh = where(ins)
    d_idx = np.array([s.index for s in d_slots])
    a_idx = np.array([s.index for s in a_slots])
    key = ("wgmma", pc)

    def execute(cta, warps):
        gang = getattr(op, "gang", None)
        if gang is not None:   # the batch path for one warpgroup: checks first, deferred chains (wgmma_gang.py)
            try:
                gang.run([(cta, warps[0].index // 4, warps)])
                return
            except Fallback:
                pass
        for w in warps:   # C and A registers hold every earlier wgmma's result (chains.py)
            if w.deferred:
                settle(w)
        descs_b = np.concatenate([gb(w) for w in warps])
        desc_b = _one(descs_b, "B's descriptor", wh)
        desc_a = None if a_regs else _one(np.concatenate([ga(w) for w in warps]), "A's descriptor", wh)
        scale_d = _one(np.concatenate([gscale(w) for w in warps]), "scale-d", wh)
        for w in warps:
            dirty = slots & w.wgmma_dirty
            if dirty:
                raise HazardError(wh, f"warp {w.index} wrote wgmma register(s) "
                                      f"{_names(prog, dirty)} since its last wgmma.fence")
        sh = cta.shared
        read = []
        for which, desc, rows, major in (("A", desc_a, 64, trans_a), ("B", desc_b, n, trans_b)):
            if desc is None:
                continue
            opnd = _check_operand(cta, GmmaDescriptor.decode(desc), rows, k_a if which == "A" else K,
                                  dtype_a if which == "A" else dtype_b, "MN" if major else "K", which, wh)
            if sh.guarded:
                sh.check_guard(warps, opnd.spots, wh, f"(wgmma operand {which}) reads")
            read.append(opnd.grains)
        c = None
        if scale_d:
            regs = registers(warps, d_idx)  # (128, nregs)
            c = from_d_registers(regs, n, dtype_d).view(OUT_NUMPY[dtype_d])
        a_bits = np.concatenate([w.r32[a_idx].T for w in warps]) if a_regs else None
        t0 = time.perf_counter()
        try:
            kw = dict(shape=shape, dtype_a=dtype_a, dtype_b=dtype_b, dtype_d=dtype_d, trans_a=trans_a, trans_b=trans_b,
                      c=c, scale_d=bool(scale_d), scale_a=scale_a, scale_b=scale_b, satfinite=satfinite, a_regs=a_bits)
            if sparse:  # metadata PTX leaves undefined is an error here (the H100 gathers: sparse.py)
                meta = np.concatenate([gmeta(w) for w in warps]).astype(np.uint32)
                d = wgmma_sp(sh.smem, None if a_regs else desc_a, desc_b, sparse_meta=meta, sparsity_selector=sel,
                             **kw)
            else:
                d = hopper.wgmma(sh.smem, None if a_regs else desc_a, desc_b, **kw)
        except TcemuError as e:
            raise KernelFault(wh, f"{e}") from None
        cta.launch.tensor_core_seconds += time.perf_counter() - t0
        regs = to_d_registers(np.ascontiguousarray(d).view(np.uint16 if dtype_d == "f16" else np.uint32), dtype_d)
        flight = InFlight(sh, np.concatenate(read) if read else np.zeros(0, np.int64), warps)
        for i, w in enumerate(warps):
            w.r32[d_idx] = regs[32 * i:32 * (i + 1)].T
            w.wgmma_pending[slots] = w.wgmma_pending.get(slots, 0) + 1
            w.wgmma_open.append((slots, flight))

    def op(W, m):
        return warpgroup_collective(W, m, key, ins, execute)
    op.wgmma = True
    # lock-step gangs run their complete warpgroups as one batch (wgmma_gang); sparse and integer forms run warp by
    # warp (A in registers joins the batch: Triton's attention, whose traces check it)
    if not sparse and dtype_d != "s32":
        op.gang = GangMma(prog, key, wh, (n, K, dtype_a, dtype_b, dtype_d, trans_a, trans_b, scale_a, scale_b),
                          ga, gb, gscale, slots, d_idx, a_idx, slots_of(prog, (ops[1], ops[2], rest[0])))
    return op


def warpgroup_collective(W, m, key, ins, execute):
    """Run `execute(cta, warps)` once all four warps of W's warpgroup have reached this instruction."""
    cta = W.cta
    if m is not None and not np.array_equal(m, np.ones(32, bool)):
        raise HazardError(where(ins), f"{ins.opcode.split('.')[0]} is .sync.aligned: all 32 threads of warp "
                                      f"{W.index} must execute it together")
    wg = W.index // 4
    ckey = (wg, key)
    state = cta.collectives.get(ckey)
    if state is None:
        state = cta.collectives[ckey] = [set(), 0]
    rec = W.sync.get(key)
    if rec is None:
        if 4 * wg + 3 >= len(cta.warps):
            raise KernelFault(where(ins), f"warp {W.index}'s warpgroup {wg} has fewer than four warps "
                                          f"({len(cta.warps)} warps in the CTA)")
        state[0].add(W.index)
        cta.progress = True
        if len(state[0]) == 4:
            warps = [cta.warps[4 * wg + i] for i in range(4)]
            state[0] = set()
            state[1] += 1
            execute(cta, warps)
            return None
        W.sync[key] = state[1]
        W.wait = f"the other warps of warpgroup {wg} at {ins.opcode.split('.')[0]} (line {ins.line}); " \
                 f"arrived: {sorted(state[0])}"
        return BLOCK
    if state[1] > rec:
        del W.sync[key]
        return None
    return BLOCK


def _one(values, what, wh):
    if values.size and not (values == values[0]).all():
        raise HazardError(wh, f"{what} differs between the threads of the warpgroup "
                              f"({sorted(set(int(v) for v in values))[:3]}...)")
    return int(values[0])


def _names(prog, slots):
    inv = {s: name for name, s in prog.slots.items()}
    return ", ".join(inv.get(s, str(s)).split("@")[0] for s in sorted(slots))[:200]


def _check_operand(cta, desc, rows, k, dtype, major, which, wh):
    """The operand's bytes are inside the kernel's shared memory, not in flight, fenced for the async
    proxy, and (where they were copied from global memory) a coherent tile of the source array; bytes never
    written are reported by the read itself."""
    sh = cta.shared
    try:
        op = operand(desc.encode(), rows, k, dtype, major)   # resolved once per descriptor value (wgmma_gang.py)
    except TcemuError as e:
        raise KernelFault(wh, f"operand {which}: {e}") from None
    if op.lo < sh.lo or op.hi > sh.hi:
        raise MemoryFault(wh, f"operand {which} reads shared bytes [{op.lo:#x}, {op.hi:#x}) through descriptor "
                              f"{desc.encode():#018x}, outside the kernel's shared memory [{sh.lo:#x}, {sh.hi:#x})")
    check_async_proxy_read(sh, op.spots, wh, f"operand {which}", " before wgmma", "st.shared / cp.async / stmatrix")
    if dtype != "b1" and cta.launch.check_layouts:
        check_operand(cta.launch.gmem, sh, op, which, desc, wh, cta.launch.tiles)
    return op


def check_async_proxy_read(sh, spots, wh, reader, wait_hint, writers, cite=None):
    """The async proxy (wgmma, tcgen05.mma) reads shared bytes `spots`: none may still be the target of an
    asynchronous copy, none written by the generic proxy (`writers`) since the last fence.proxy.async. `cite`
    closes the second message (default: how many such bytes)."""
    if sh.pending_any(spots):
        b = int(spots[sh.pending(spots) != 0][0])
        raise HazardError(wh, f"{reader} reads shared address {b:#x} while an asynchronous copy to it is still in "
                              f"flight (missing cp.async.wait_group / mbarrier wait{wait_hint})")
    bad = sh.unfenced_bytes(spots)
    if bad.size:
        raise HazardError(wh, f"{reader} reads shared address {int(bad[0]):#x}, written by the generic proxy "
                              f"({writers}) with no fence.proxy.async since ({cite or f'{bad.size} such bytes'})")
