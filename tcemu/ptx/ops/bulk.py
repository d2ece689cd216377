"""Bulk and tensor copies through the async proxy (PTX ISA 9.7.9.24-9.7.9.27): cp.async.bulk.tensor (TMA tile
loads and stores, 1-5D, multicast), cp.async.bulk (plain bytes), their bulk groups, and the tensor-map
instructions (tensormap.replace, tensormap.cp_fenceproxy).

A TMA load completes at issue (one legal schedule: an infinitely fast copy engine): its bytes land in shared
memory with their provenance and the mbarrier phase they complete (`guard_bar/guard_phase`), and the
mbarrier's tx-count drops by the box's bytes. What would be a race on hardware is reported instead: a reader
that has not observed the phase, a copy into bytes an in-flight wgmma or bulk store still reads.
"""
import numpy as np

from .. import parser as P
from .. import races
from ...layout.tma import TmaError, plan_tile
from ..errors import HazardError, KernelFault, MemoryFault, PtxSyntaxError, PtxUnsupported
from ..memory import PARAM_WINDOW, WINDOW_SIZE, WINDOWS
from .. import tensormap as TM
from ..types import TYPES
from .common import Mods, mask_array, where
from .registry import register
from .memory_ops import access, address, shared_target
from .mbarrier import lookup

U16 = TYPES["u16"]
U32 = TYPES["u32"]
S32 = TYPES["s32"]
U64 = TYPES["u64"]


def _lane0(W, m, values, what, wh):
    """The value the executing lanes agree on (bulk copies are issued by one thread; if several threads
    execute one, each issues its own copy: we take them in lane order)."""
    act = mask_array(m) & W.live
    return [int(v) for v in values[act]]


def _read_map(W, addr, base_is_param, wh):
    """The 128-byte tensor map at a generic (or param-space) address."""
    addr = int(addr)
    if base_is_param:
        space, off = "param", addr
    elif PARAM_WINDOW <= addr < PARAM_WINDOW + WINDOW_SIZE:
        space, off = "param", addr - PARAM_WINDOW
    elif WINDOWS["const"] <= addr < WINDOWS["const"] + WINDOW_SIZE:
        space, off = "const", addr - WINDOWS["const"]
    elif WINDOWS["shared"] <= addr < WINDOWS["shared"] + WINDOW_SIZE:
        raise MemoryFault(wh, f"tensor map at generic address {addr:#x} lies in shared memory; TMA reads maps from "
                              "global, const or param memory")
    else:
        space, off = "global", addr
    if off % 64:
        raise MemoryFault(wh, f"tensor map address {addr:#x} is not 64-byte aligned")
    if space == "global":
        raw = W.cta.launch.gmem.load(np.array([off], np.uint64), 128, [0], wh)[0]
    else:
        mem = W.cta.launch.params if space == "param" else W.cta.launch.const
        raw = mem.load(np.array([off], np.int64), 128, [0], wh)[0]
    return raw


def _global_view(W, tm: TM.TensorMap, wh):
    """A numpy view of the global tensor a map describes, after proving every byte of it is mapped."""
    gmem = W.cta.launch.gmem
    es = tm.element_bytes
    extent = es + sum((d - 1) * s for d, s in zip(tm.global_dim[1:], tm.global_stride)) + (tm.global_dim[0] - 1) * es
    base = tm.global_address
    for a in gmem.allocs:
        if a.base <= base < a.end:
            if base + extent > a.end:
                raise MemoryFault(wh, f"the tensor map's tensor ({extent} bytes from {base:#x}) runs "
                                      f"{base + extent - a.end} bytes past the end of '{a.name}' ({a.data.size} bytes)")
            flat = a.data[base - a.base:]
            dt = np.dtype(f"<u{es}")
            shape = tuple(tm.global_dim[::-1])
            strides = tuple(([es] + list(tm.global_stride))[::-1])
            # every reachable byte was proven inside the allocation above
            view = np.lib.stride_tricks.as_strided(flat[:extent].view(dt), shape=shape, strides=strides,
                                                   writeable=True)
            return view, a, base
    raise MemoryFault(wh, f"the tensor map's global address {base:#x} is outside every allocation: "
                          f"{gmem.describe(base)}")


def _decode_map(W, raw, wh):
    try:
        tm = TM.decode(raw)
        TM.validate(tm)
    except TmaError as e:
        raise KernelFault(wh, f"invalid tensor map: {e}") from None
    return tm


def _plan(tm, view, dst, coords, wh, arch="sm90"):
    swizzle = TM.swizzle_name(tm)
    try:
        return plan_tile(dst, view, tm.box_dim, coords, tm.element_stride, swizzle, "zero", arch)
    except TmaError as e:
        if e.field == "smem_addr":
            raise MemoryFault(wh, f"TMA shared address {dst:#x} is not 128-byte aligned (misaligned address)") from None
        raise KernelFault(wh, f"TMA: {e}") from None


@register("cp.async.bulk.tensor")
def c_tensor(ins, prog, pc):
    mods = Mods(ins, skip=4)
    if "im2col" in mods or any(p.startswith("im2col") for p in mods.parts):
        mods.unsupported("im2col TMA is not modelled")
    if "tile::gather4" in mods or "tile::scatter4" in mods:   # five coordinates: a column and four rows
        mods.unsupported(".tile::gather4 / .tile::scatter4 TMA is not modelled")
    # ptxas takes the qualifiers in any order, the destination space before the source (probe_qualifiers.py)
    dims = next((p for p in mods.parts if len(p) == 2 and p[1] == "d" and p[0] in "12345"), None)
    if dims is None:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected .1d-.5d")
    rank = int(dims[0])
    load = next((p for p in mods.parts if p.startswith(("shared", "global"))), "").startswith("shared")
    ops = ins.operands
    if load:
        dst, mapop, mbar = ops[0], ops[1], ops[2]
        rest = ops[3:]
    else:
        mapop, src = ops[0], ops[1]
        rest = ops[2:]
    if not isinstance(mapop, P.Addr) or mapop.vec is None or len(mapop.vec.items) != rank:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected [tensorMap, {{{rank} coordinates}}]")
    base_is_param = isinstance(mapop.base, P.Sym) and prog.symbols.get(mapop.base.name, (None,))[0] == "param"
    get_map = address(prog, P.Addr(mapop.base, mapop.offset), ins, "param" if base_is_param else "generic")
    get_coords = [prog.read(c, S32, ins) for c in mapop.vec.items]
    wh = where(ins)
    multicast = "multicast::cluster" in mods
    # .cta_group::2 (sm100): the mbarrier may be in the destination CTA's peer; with multicast, each destination's
    # signal goes to the CTA of its pair whose rank has the parity of the mbarrier's CTA (PTX 9.7.9.25.5.2)
    pair = "cta_group::2" in mods
    if load:
        space = "shared::cluster" if "shared::cluster" in mods else "shared::cta"
        get_dst = address(prog, dst, ins, space)
        get_bar = address(prog, mbar, ins, space)
        get_mask = prog.read(rest[0], U16, ins) if multicast else None

        def tma_load(W, m):
            act = np.flatnonzero(mask_array(m) & W.live)
            maps, dsts, bars = get_map(W), get_dst(W), get_bar(W)
            coords = np.stack([g(W).view(np.int32) for g in get_coords])
            masks = get_mask(W) if get_mask is not None else None
            for lane in act:
                tm = _decode_map(W, _read_map(W, maps[lane], base_is_param, wh), wh)
                if tm.rank != rank:
                    raise KernelFault(wh, f"a .{rank}d copy with a rank-{tm.rank} tensor map")
                view, alloc, base = _global_view(W, tm, wh)
                cta, off = shared_target(W, dsts[lane], space, wh)
                bcta, boff = shared_target(W, bars[lane], space, wh)
                if pair and bcta is W.cta and W.cta.rank % 2:
                    # tcemu's shared::cta addresses carry no CTA rank; on sm100, bit 24 of a shared::cluster address
                    # is the CTA-pair bit, which CuTe clears (Sm100MmaPeerBitMask, cute/arch/copy_sm100_tma.hpp) so
                    # that both CTAs' copies signal the even CTA's mbarrier: the executing CTA's own address names
                    # the even CTA of its pair (our reading; not silicon-verified)
                    bcta = W.cta.cluster[W.cta.rank - 1]
                if bcta is not cta and not multicast and not (pair and bcta.rank == cta.rank ^ 1):
                    raise KernelFault(wh, "the destination and its mbarrier are in different CTAs" +
                                      (" that are not a CTA pair" if pair else ""))
                addr, values, flat, counts, keep = _plan(tm, view, off, [int(c) for c in coords[:, lane]], wh,
                                                         W.cta.shared.smem.arch)
                src = _sources(view, alloc, base, flat, tm.element_bytes)
                targets = [cta]
                if multicast:
                    cm = int(masks[lane])
                    targets = [c for r, c in enumerate(W.cta.cluster) if cm >> r & 1]
                cluster = W.cta.cluster
                for c in targets:
                    bar_cta = bcta if not multicast else c
                    if pair and multicast:
                        r = (c.rank & ~1) | (bcta.rank & 1)
                        if r >= len(cluster):
                            raise KernelFault(wh, f"cta_group::2 multicast to CTA rank {c.rank}: its pair has no CTA "
                                                  f"rank {r} for the mbarrier signal")
                        bar_cta = cluster[r]
                    _deliver(W, c, addr, values, src, tm.element_bytes, boff, wh, bar_cta, pc, lane)
        return tma_load

    get_src = address(prog, src, ins, "shared::cta")

    def tma_store(W, m):
        act = np.flatnonzero(mask_array(m) & W.live)
        maps, srcs = get_map(W), get_src(W)
        coords = np.stack([g(W).view(np.int32) for g in get_coords])
        done = {}  # lanes issuing the same store (CUTLASS's epilogue: a whole warp) share one plan
        for lane in act:
            key = (int(maps[lane]), int(srcs[lane])) + tuple(coords[:, lane].tolist())
            if key in done:  # the same bytes again: the write is idempotent, the read still counts
                sh, spots = done[key]
                sh.bulk_reading[spots] += 1
                W.bulk_open.append((sh, spots))
                continue
            tm = _decode_map(W, _read_map(W, maps[lane], base_is_param, wh), wh)
            view, alloc, base = _global_view(W, tm, wh)
            sh = W.cta.shared
            off = int(srcs[lane])
            addr, _, flat, counts, keep = _plan(tm, view, off, [int(c) for c in coords[:, lane]], wh,
                                                sh.smem.arch)
            es = tm.element_bytes
            spots = (addr[:, None] + np.arange(es)).reshape(-1)
            _check_async_read(W, sh, spots, wh)
            raw = sh.smem.data[spots].reshape(-1, es)
            inside = flat >= 0
            if inside.any():  # out-of-bounds box elements are not written
                if not alloc.writable:
                    raise MemoryFault(wh, f"TMA store into read-only '{alloc.name}'")
                vals = np.ascontiguousarray(raw[inside]).view(view.dtype).reshape(-1)
                view[np.unravel_index(flat[inside], view.shape)] = vals
            sh.bulk_reading[spots] += 1
            W.bulk_open.append((sh, spots))
            done[key] = (sh, spots)
    return tma_store


def _sources(view, alloc, base, flat, es):
    """Global byte address of each box element (-1 out of bounds), for layout provenance."""
    src = np.full(flat.shape, -1, np.int64)
    inside = flat >= 0
    if inside.any():
        idx = np.unravel_index(flat[inside], view.shape)
        src[inside] = base + sum(i * s for i, s in zip(idx, view.strides))
    return src


def _check_async_read(W, sh, spots, wh):
    """Shared bytes the async proxy reads: inside the allocation, written, not in flight, fenced."""
    if spots.size == 0:
        return
    if spots.min() < sh.lo or spots.max() >= sh.hi:
        raise MemoryFault(wh, f"reads shared bytes outside the kernel's shared memory [{sh.lo:#x}, {sh.hi:#x})")
    if not sh.smem.written[spots].all():
        b = int(spots[~sh.smem.written[spots]][0])
        raise MemoryFault(wh, f"reads shared address {b:#x}, which nothing wrote")
    if sh.pending_any(spots):
        raise HazardError(wh, "reads shared bytes an asynchronous copy is still writing")
    bad = sh.unfenced_bytes(spots)
    if bad.size:
        raise HazardError(wh, f"reads shared address {int(bad[0]):#x}, written by the generic proxy with no "
                              "fence.proxy.async since (the async proxy may not see it)")


def _deliver(W, cta, addr, values, src, es, bar_off, wh, bar_cta=None, pc=-1, lane=0):
    """Write one TMA box into `cta`'s shared memory and complete its bytes on the mbarrier at bar_off of `bar_cta`
    (default: `cta` itself)."""
    bar_cta = cta if bar_cta is None else bar_cta
    sh = cta.shared
    spots = (addr[:, None] + np.arange(es)).reshape(-1)
    if spots.min() < sh.lo or spots.max() >= sh.hi:
        raise MemoryFault(wh, f"TMA box [{int(spots.min()):#x}, {int(spots.max()) + 1:#x}) falls outside the "
                              f"kernel's shared memory [{sh.lo:#x}, {sh.hi:#x}) of CTA {cta.ctaid}")
    if sh.mbar_live[spots].any():
        raise HazardError(wh, "a TMA box overwrites an initialised mbarrier object")
    sh.check_overwrite(spots, wh, "a TMA load writes")
    mb = lookup(W, bar_cta, bar_off, wh)
    sh.check_in_flight(W, spots, wh, "this copy writes")
    # racecheck: the async proxy's write, in the issuing warp's order; waiters acquire it through the mbarrier
    races.on_write(sh, W, spots[None, :], W.tid[lane:lane + 1], wh,
                   np.ascontiguousarray(values).view(np.uint8)[None, :])
    races.mbar_release(W, mb)
    sh.copy_pc[spots] = pc + 1
    sh.smem.data[spots] = np.ascontiguousarray(values).view(np.uint8)
    sh.smem.written[spots] = True
    sh.unfenced[spots] = 0
    sh.source[spots] = np.where(src[:, None] >= 0, src[:, None] + np.arange(es), -1).reshape(-1)
    sh.guard_bar[spots] = bar_off if bar_cta is cta else ((bar_cta.rank + 1) << 24) | bar_off
    sh.guard_phase[spots] = mb.phase
    sh.guarded = True
    mb.complete_tx(spots.size)


@register("cp.async.bulk")
def c_bulk(ins, prog, pc):
    mods = Mods(ins, skip=3)
    first = mods.parts[0] if mods.parts else ""
    if first in ("commit_group", "wait_group"):
        return _bulk_group(ins, prog, first, "read" in mods)
    if first == "prefetch":
        return lambda W, m: None
    ops = ins.operands
    wh = where(ins)
    # the destination space, then the source, among qualifiers in any order (ptxas accepts any)
    spaces = [p for p in mods.parts if p.startswith(("shared", "global"))] + ["", ""]
    first = spaces[0]
    if first.startswith("shared"):  # global (or shared::cta) -> shared::cluster, completing on an mbarrier
        dst_space = "shared::cluster" if first == "shared::cluster" else "shared::cta"
        src_global = spaces[1] == "global"
        get_dst = address(prog, ops[0], ins, dst_space)
        get_src = address(prog, ops[1], ins, "global" if src_global else "shared::cta")
        gsize = prog.read(ops[2], U32, ins)
        get_bar = address(prog, ops[3], ins, dst_space)
        multicast = "multicast::cluster" in mods
        get_mask = prog.read(ops[4], U16, ins) if multicast else None

        def bulk_load(W, m):
            act = np.flatnonzero(mask_array(m) & W.live)
            dsts, srcs, sizes, bars = get_dst(W), get_src(W), gsize(W), get_bar(W)
            for lane in act:
                n = int(sizes[lane])
                if n % 16 or int(dsts[lane]) % 16 or int(srcs[lane]) % 16:
                    raise MemoryFault(wh, f"bulk copy of {n} bytes from {int(srcs[lane]):#x} to {int(dsts[lane]):#x}: "
                                          "size and addresses must be multiples of 16")
                if src_global:
                    data = access(W, "global", srcs[lane:lane + 1], W.tid[lane:lane + 1], n, wh)[0] if n else \
                        np.zeros(0, np.uint8)
                    src = np.arange(n, dtype=np.int64) + int(srcs[lane])
                else:
                    sh = W.cta.shared
                    sp = int(srcs[lane]) + np.arange(n)
                    _check_async_read(W, sh, sp, wh)
                    data, src = sh.smem.data[sp].copy(), sh.source[sp].copy()
                cta, off = shared_target(W, dsts[lane], dst_space, wh)
                _, boff = shared_target(W, bars[lane], dst_space, wh)
                targets = [cta] if not multicast else \
                    [c for r, c in enumerate(W.cta.cluster) if int(get_mask(W)[lane]) >> r & 1]
                for c in targets:
                    _deliver(W, c, off + np.arange(n), data, src, 1, boff, wh, None, pc, lane)
        return bulk_load
    if first == "global":  # shared::cta -> global, in a bulk group
        get_dst = address(prog, ops[0], ins, "global")
        get_src = address(prog, ops[1], ins, "shared::cta")
        gsize = prog.read(ops[2], U32, ins)

        def bulk_store(W, m):
            act = np.flatnonzero(mask_array(m) & W.live)
            dsts, srcs, sizes = get_dst(W), get_src(W), gsize(W)
            for lane in act:
                n = int(sizes[lane])
                sh = W.cta.shared
                spots = int(srcs[lane]) + np.arange(n)
                _check_async_read(W, sh, spots, wh)
                access(W, "global", dsts[lane:lane + 1], W.tid[lane:lane + 1], n, wh,
                       data=sh.smem.data[spots].reshape(1, -1))
                sh.bulk_reading[spots] += 1
                W.bulk_open.append((sh, spots))
        return bulk_store
    raise PtxUnsupported(ins.opcode, f"this bulk copy form is not modelled ({ins.where()})")


def _bulk_group(ins, prog, which, read):
    if which == "commit_group":
        def commit(W, m):
            W.bulk_groups.append(W.bulk_open)
            W.bulk_open = []
        return commit
    n = ins.operands[0] if ins.operands else None
    if not isinstance(n, P.Imm):
        raise PtxSyntaxError(ins.line, ins.col, "cp.async.bulk.wait_group takes an immediate")
    keep = n.value

    def wait(W, m):  # writes to global completed at issue; what remains is releasing the source bytes
        while len(W.bulk_groups) > keep:
            for sh, spots in W.bulk_groups.pop(0):
                sh.bulk_reading[spots] -= 1
    return wait


@register("cp.reduce.async.bulk")
def c_reduce(ins, prog, pc):
    raise PtxUnsupported(ins.opcode, f"bulk reductions are not modelled yet ({ins.where()})")


# ------------------------------------------------------------------------------------------------ tensor maps

@register("tensormap.replace")
def c_replace(ins, prog, pc):
    mods = Mods(ins, skip=2)
    if mods.parts[0] != "tile":
        mods.unsupported("only .tile tensor maps")
    field = mods.parts[1]
    if field not in TM.REPLACE:
        mods.unsupported(f"field .{field}")
    space = "shared::cta" if "shared::cta" in mods else "global"
    t = mods.type()
    ops = ins.operands
    get_addr = address(prog, ops[0], ins, space)
    ordinal = ops[1] if len(ops) == 3 else None
    if ordinal is not None and not isinstance(ordinal, P.Imm):
        raise PtxSyntaxError(ins.line, ins.col, "tensormap.replace's ordinal is an immediate")
    gval = prog.read(ops[-1], t, ins)
    wh = where(ins)

    def op(W, m):
        act = np.flatnonzero(mask_array(m) & W.live)
        addrs, vals = get_addr(W), gval(W)
        for lane in act:
            a = int(addrs[lane])
            if a % 128:
                raise MemoryFault(wh, f"tensor map at {a:#x} is not 128-byte aligned")
            sp = "shared" if space == "shared::cta" else "global"
            raw = bytearray(access(W, sp, np.array([a], np.uint64), W.tid[lane:lane + 1], 128, wh)[0].tobytes())
            try:
                TM.replace(raw, field, int(vals[lane]), ordinal.value if ordinal is not None else None)
            except TmaError as e:
                raise KernelFault(wh, str(e)) from None
            access(W, sp, np.array([a], np.uint64), W.tid[lane:lane + 1], 128, wh,
                   data=np.frombuffer(bytes(raw), np.uint8).reshape(1, -1))
    return op


@register("tensormap.cp_fenceproxy")
def c_cp_fenceproxy(ins, prog, pc):
    ops = ins.operands
    get_dst = address(prog, ops[0], ins, "global")
    get_src = address(prog, ops[1], ins, "shared::cta")
    wh = where(ins)

    def op(W, m):  # .sync.aligned: the warp copies one map (its threads name the same one)
        act = mask_array(m) & W.live
        d, s = get_dst(W)[act], get_src(W)[act]
        if d.size == 0:
            return
        if not ((d == d[0]).all() and (s == s[0]).all()):
            raise HazardError(wh, "threads of the warp name different tensor maps in one .sync.aligned copy")
        raw = access(W, "shared", s[:1], W.tid[:1], 128, wh)
        access(W, "global", d[:1], W.tid[:1], 128, wh, data=raw)
    return op
