"""wgmma.mma_async's batch path: the warpgroups of a lock-step gang (op.gang, lockstep.py) run as one batch, and so
does one warpgroup whose last warp arrives on its own (GangMma.run, from ops/wgmma.py's execute).

A warpgroup runs when the gang's warps and those already waiting at the instruction make up its four warps (PTX
9.7.15.5: the warpgroup's four warps execute mma_async together). Every check ops/wgmma.py's execute makes runs
first, for every warpgroup, reading state only; any that would report (or a case not covered: a lane mask, a
warpgroup not whole; ops/wgmma.py gives sparse and integer forms no batch path) raises Fallback
before anything changes, and the warps run the instruction one at a time, which gives the report its warp. Then
the steps join deferred accumulator chains (chains.py), or one batched fused dot (hopper.wgmma_batch) computes
every warpgroup's D, and the effects land warpgroup by warpgroup in gang order."""
import itertools
import time

import numpy as np
from numba import njit

from ...arith.dtypes import element_type
from ...core.errors import TcemuError
from ...hopper.wgmma import wgmma_batch
from ...layout.addressing import resolved_addresses
from ...layout.descriptors import GmmaDescriptor
from ...layout.fragments import from_a_registers, from_d_registers_batch, to_d_registers_batch
from ...layout.smem import SUBBYTE
from .. import races
from ..provenance import check_operand
from ..chains import MAX_STEPS, Chain, registers, settle, settle_chains
from ..lockstep import Batch
from ..signals import Fallback

DEFER = True          # float-accumulator steps wait in chains until their registers are read (chains.py)
_LE = {8: np.dtype("u1"), 16: np.dtype("<u2"), 32: np.dtype("<u4")}   # shared memory is little-endian
_OPERANDS = {}        # (descriptor value, rows, k, dtype, major) -> Operand
_OPERANDS_MAX = 4096
_LAYOUTS = {}         # an operand's element addresses relative to its first granule (bytes) -> a small id
_LAYOUT_IDS = itertools.count()   # (never reused: a launch's memo may outlive a clear of _LAYOUTS)


class InFlight:
    """The shared 16-byte granules one wgmma reads (memory.granules), until the first of its warps retires it with
    wgmma.wait_group. The same index array increments and decrements: a granule both operands read stays
    consistent."""

    def __init__(self, sh, grains, warps):
        self.sh, self.grains, self.retired = sh, grains, False
        _add_at(sh.wgmma_reading, grains, 1)
        self.clock = races.collective_release(warps)   # racecheck: each warp's issue -> every warp's wait_group

    def retire(self):
        if not self.retired:
            self.retired = True
            _add_at(self.sh.wgmma_reading, self.grains, -1)


@njit(cache=True)
def _add_at(arr, idx, v):
    """arr[idx] += v, each index once per occurrence (the granules a wgmma reads: unique, as fancy += takes them)."""
    for i in idx:
        arr[i] += v


class Operand:
    """What one descriptor value reads as one operand shape, resolved once: each CTA then only gathers."""

    def __init__(self, value, rows, k, dtype, major):
        self.key = (value, rows, k, dtype, major)
        self.desc = GmmaDescriptor.decode(value)
        self.addrs = resolved_addresses(self.desc, rows=rows, k=k, dtype="u8" if dtype == "b1" else dtype, major=major)
        self.ebytes = 1 if dtype in ("e4m3", "e5m2", "s8", "u8", "b1") else (4 if dtype == "tf32" else 2)
        self.lo, self.hi = int(self.addrs.min()), int(self.addrs.max()) + self.ebytes
        self.spots = (self.addrs.reshape(-1, 1) + np.arange(self.ebytes)).reshape(-1)
        self.grains = np.unique(self.spots >> 4)   # the 16-byte granules it reads (InFlight)
        self.addr_granules, self.addr_low = self.addrs >> 4, self.addrs & 15   # SharedWindow.operand_sources
        # operands whose element addresses are one pattern moved by whole granules (another stage's buffer, the
        # next K block of a swizzle atom: other descriptor values) read their granules in the same order, element
        # by element: provenance.check_operand's memo holds one entry for all of them
        rel = (self.addrs - (self.lo & ~15)).tobytes()
        if len(_LAYOUTS) >= _OPERANDS_MAX and rel not in _LAYOUTS:
            _LAYOUTS.clear()
        lid = _LAYOUTS.get(rel)
        if lid is None:
            lid = _LAYOUTS[rel] = next(_LAYOUT_IDS)
        self.layout = (rows, k, dtype, major, lid)
        self.index = None   # element indices of an aligned whole-byte read (SharedMemory.read_operand's gather)
        if dtype not in SUBBYTE:
            bits = element_type(dtype).bits
            read = resolved_addresses(value, rows=rows, k=k, dtype=dtype, major=major)
            if bits in _LE and not (read % (bits // 8)).any():
                self.index, self.le = read // (bits // 8), _LE[bits]
                self.full = int.from_bytes(b"\x01" * (bits // 8), "little")   # every byte of the element written


def operand(value, rows, k, dtype, major) -> Operand:
    """The Operand of a descriptor value, made once (TcemuError: the descriptor cannot be resolved)."""
    key = (value, rows, k, dtype, major)
    hit = _OPERANDS.get(key)
    if hit is None:
        hit = Operand(value, rows, k, dtype, major)
        if len(_OPERANDS) >= _OPERANDS_MAX:
            _OPERANDS.clear()
        _OPERANDS[key] = hit
    return hit


class GangMma:
    """op.gang of one wgmma.mma_async (dense, A and B in shared memory, float accumulator): called with
    [(warp, mask), ...] in gang order."""

    def __init__(self, prog, key, wh, form, ga, gb, gscale, slots, d_idx, a_idx, touched):
        self.prog, self.key, self.wh = prog, key, wh
        self.touched = touched   # the registers of the descriptors and scale-d (read through a lockstep.Batch)
        (self.n, self.K, self.dtype_a, self.dtype_b, self.dtype_d, self.trans_a, self.trans_b, self.scale_a,
         self.scale_b) = form
        self.ga, self.gb, self.gscale = ga, gb, gscale
        self.slots, self.d_idx, self.a_idx = slots, d_idx, a_idx
        self.calls = 0     # gang steps run here (tests read it: the gang path ran)
        self.d_key = prog.canonical(frozenset(int(i) for i in d_idx))   # a chain's key in Warp.deferred

    def _groups(self, pairs):
        """[(cta, warpgroup, its four warps)] in gang order, or Fallback. A warpgroup's warps in the gang and those
        already waiting at this instruction (warpgroup_collective's arrivals) must be its four warps: the gang's
        are the last to arrive, so the instruction runs now (a warp-specialised kernel's warps of one warpgroup
        often reach it one or two steps apart)."""
        key, order, members = self.key, [], {}
        for W, m in pairs:
            if m is not None:
                raise Fallback   # a lane mask: the warp reports it
            g = (W.cta, W.index // 4)
            if g not in members:
                members[g] = []
                order.append(g)
            members[g].append(W)
        groups = []
        for cta, wg in order:
            warps = cta.warps[4 * wg:4 * wg + 4]
            mine = members[(cta, wg)]
            if len(warps) < 4 or any(key in w.sync for w in mine):
                raise Fallback
            state = cta.collectives.get((wg, key))
            arrived = state[0] if state is not None else set()
            idx = {w.index for w in mine}
            if len(idx) != len(mine) or idx & arrived or idx | arrived != {w.index for w in warps}:
                raise Fallback   # not the whole warpgroup
            groups.append((cta, wg, warps))
        return groups

    def _agree(self, getter, B, G):
        """(G,) values of a per-thread operand the 128 threads of each warpgroup must agree on (execute's _one);
        B: the warpgroups' warps as a lockstep.Batch."""
        v = np.broadcast_to(getter(B), (4 * G, 32))
        v = v.reshape(G, 128)
        if not (v == v[:, :1]).all():
            raise Fallback
        return v[:, 0]

    def _a_registers(self, B, G):
        """Each warpgroup's A (64, K) bits from its threads' A registers (ops/wgmma.py's from_a_registers), in the
        container shared memory's read gives the same elements (the chains' steps stack)."""
        regs = B.r32[self.a_idx].transpose(1, 2, 0).reshape(G, 128, len(self.a_idx))   # (G, threads, 4)
        bits = element_type(self.dtype_a).bits
        cont = _LE.get(bits, np.dtype("<u4"))
        return [from_a_registers(regs[g], self.dtype_a).astype(cont) for g in range(G)]

    def _checked(self, cta, warps, which, value, rows, k, dtype, major, seen):
        """The operand's bits, after every check of _check_operand and of the read (SharedMemory.read_operand);
        the same operand of one CTA is checked and read once per gang step (the checks read state the step does
        not change), the TMA guard per warpgroup (it depends on the warps)."""
        try:
            op = operand(value, rows, k, dtype, major)
        except TcemuError:   # execute's report (KernelFault naming the operand)
            raise Fallback from None
        sh = cta.shared
        at = seen.get((id(cta), value, rows, dtype, major))
        if at is None:
            if op.lo < sh.lo or op.hi > sh.hi or sh.pending_any(op.spots, op.grains) or \
                    sh.unfenced_bytes(op.spots).size:
                raise Fallback
            try:
                if dtype != "b1" and cta.launch.check_layouts:
                    check_operand(cta.launch.gmem, sh, op, which, op.desc, self.wh, cta.launch.tiles)
                smem = sh.smem
                if smem.arch != "sm90":
                    raise Fallback
                if op.index is None:
                    bits = smem.read_operand(value, rows=rows, k=k, dtype=dtype, major=major)
                else:
                    whole = sh.written_reads   # operands found written whole: written bytes stay written
                    if op not in whole:
                        if (smem.written.view(np.uint8).view(op.le)[op.index] != op.full).any():
                            raise Fallback   # an element never written: the read's report
                        whole.add(op)
                    bits = smem.data.view(op.le)[op.index]
            except TcemuError:
                raise Fallback from None
            at = seen[(id(cta), value, rows, dtype, major)] = bits
        if sh.guarded and sh.unobserved(warps, op.spots, op.grains) is not None:
            raise Fallback
        return op, at

    def __call__(self, pairs):
        groups = self._groups(pairs)
        self.run(groups)
        for cta, wg, warps in groups:   # the collective completes (warpgroup_collective's fourth arrival)
            state = cta.collectives.get((wg, self.key))
            if state is None:
                state = cta.collectives[(wg, self.key)] = [set(), 0]
            state[0] = set()   # the warps that waited here pass at their next try
            state[1] += 1
            cta.progress = True

    def run(self, groups):
        """execute() for these warpgroups [(cta, warpgroup, its four warps)] at once (Fallback before any change);
        warpgroup_collective calls it for one warpgroup whose last warp arrives alone (ops/wgmma.py)."""
        G = len(groups)
        allw = [w for _, _, ws in groups for w in ws]
        slots = self.slots
        for w in allw:
            if slots & w.wgmma_dirty:
                raise Fallback
        B = Batch(allw, self.touched)   # the descriptors', scale-d's and A's registers as (warps, 32)
        desc_b = self._agree(self.gb, B, G)
        scale_d = self._agree(self.gscale, B, G).astype(bool)
        seen, a_bits, b_bits, a_of, b_of, spots = {}, [], [], [], [], []
        a_index, b_index = {}, {}
        operands = [("B", desc_b, self.n, self.K, self.dtype_b, self.trans_b, b_bits, b_of, b_index)]
        if self.ga is None:   # A in registers: each warpgroup's 128 threads' 4 registers (PTX 9.7.15.5.1)
            a_bits.extend(self._a_registers(B, G))
            a_of.extend(range(G))
        else:
            operands.insert(0, ("A", self._agree(self.ga, B, G), 64, self.K, self.dtype_a, self.trans_a, a_bits,
                                a_of, a_index))
        for g, (cta, wg, warps) in enumerate(groups):
            read = []
            for which, desc, rows, k, dtype, major, bits, of, index in operands:
                op, raw = self._checked(cta, warps, which, int(desc[g]), rows, k, dtype, "MN" if major else "K",
                                        seen)
                i = index.get(id(raw))
                if i is None:
                    i = index[id(raw)] = len(bits)
                    bits.append(raw)
                of.append(i)
                read.append(op.grains)
            spots.append(np.concatenate(read) if len(read) > 1 else read[0])
        if DEFER and self.dtype_d in ("f32", "f16") and self.scale_a == 1 and self.scale_b == 1 and \
                getattr(groups[0][0].launch, "trace", None) is None:   # a trace shows registers as they stand
            self._defer(groups, scale_d, a_bits, a_of, b_bits, b_of)
            self._effects(groups, spots, 0.0, None)
            return
        for w in allw:   # C comes from the registers: any result they wait for first (chains.py)
            if w.deferred:
                settle(w)
        nr = len(self.d_idx)
        regs = np.stack([w.r32[self.d_idx] for w in allw])               # (4G, nregs, 32)
        c_bits = None
        if scale_d.any():
            c_bits = from_d_registers_batch(regs.reshape(G, 4, nr, 32).transpose(0, 1, 3, 2).reshape(G, 128, nr),
                                            self.n, self.dtype_d)
        t0 = time.perf_counter()
        try:
            d = wgmma_batch(np.stack(a_bits), np.stack(b_bits), c_bits, dtype_a=self.dtype_a, dtype_b=self.dtype_b,
                            dtype_d=self.dtype_d, scale_a=self.scale_a, scale_b=self.scale_b, a_of=a_of, b_of=b_of,
                            c_used=scale_d if c_bits is not None else None)
        except TcemuError:
            raise Fallback from None
        dt = (time.perf_counter() - t0) / G
        self._effects(groups, spots, dt, to_d_registers_batch(d, self.dtype_d))   # (G, 128, nregs)

    def _defer(self, groups, scale_d, a_bits, a_of, b_bits, b_of):
        """Each warpgroup's step joins the chain into its D registers (chains.py): a step without C starts one."""
        d_key, d_idx = self.d_key, self.d_idx
        form = (self.n, self.dtype_a, self.dtype_b, self.dtype_d)
        full = [ch for _, _, warps in groups if (ch := warps[0].deferred.get(d_key)) is not None and
                len(ch.a) >= MAX_STEPS]
        if full:
            settle_chains(full)   # grown long: computed now (a CTA's twin warpgroups together)
        for g, (cta, wg, warps) in enumerate(groups):
            chain = warps[0].deferred.get(d_key)
            if chain is not None and (chain.form() != form or chain.warps != warps or
                                      any(w.deferred.get(d_key) is not chain for w in warps)):
                chain.settle()   # not this warpgroup's: computed now
                chain = None
            for w in warps:      # other chains into registers these D registers meet
                for other in list(w.deferred.values()):
                    if other is not chain and not other.idx.isdisjoint(d_key):
                        other.settle()
            if chain is not None and not scale_d[g]:
                chain.drop()     # D = A B: what the chain would give is never read
                chain = None
            if chain is None:
                chain = Chain(warps, d_key, d_idx, self.n, self.dtype_a, self.dtype_b, self.dtype_d,
                              registers(warps, d_idx) if scale_d[g] else None)
            chain.a.append(a_bits[a_of[g]])
            chain.b.append(b_bits[b_of[g]])

    def _effects(self, groups, spots, dt, out):
        """execute's effects, warpgroup by warpgroup in gang order; out (G, 128, nregs) D registers, or None where
        they wait in chains."""
        self.calls += 1
        d_idx, slots = self.d_idx, self.slots
        for g, (cta, wg, warps) in enumerate(groups):
            cta.launch.tensor_core_seconds += dt
            flight = InFlight(cta.shared, spots[g], warps)
            for i, w in enumerate(warps):
                if out is not None:
                    w.r32[d_idx] = out[g, 32 * i:32 * (i + 1)].T
                pend = w.wgmma_pending
                pend[slots] = pend.get(slots, 0) + 1
                w.wgmma_open.append((slots, flight))
