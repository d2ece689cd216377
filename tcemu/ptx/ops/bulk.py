"""Bulk and tensor copies through the async proxy (PTX ISA 9.7.9.24-9.7.9.27): cp.async.bulk.tensor (TMA tile
loads and stores, 1-5D, multicast), cp.async.bulk (plain bytes), their bulk groups, and the tensor-map
instructions (tensormap.replace, tensormap.cp_fenceproxy).

A TMA load completes at issue (one legal schedule: an infinitely fast copy engine): its bytes land in shared
memory with their provenance and the mbarrier phase they complete (`guard_bar/guard_phase`), and the
mbarrier's tx-count drops by the box's bytes. What would be a race on hardware is reported instead: a reader
that has not observed the phase, a copy into bytes an in-flight wgmma or bulk store still reads.
"""
import weakref

import numpy as np

from .. import parser as P
from .. import races
from ...layout.tma import TmaError, _box_offsets, box_slices, plan_tile_again
from ..errors import HazardError, KernelFault, MemoryFault, PtxSyntaxError, PtxUnsupported
from ..memory import NO_GUARD, PARAM_WINDOW, WINDOW_SIZE, WINDOWS
from ..rows import gather, scatter
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
    # the bytes as a slice where they lie in one buffer; else the space's load names the fault
    if space == "global":
        gmem = W.cta.launch.gmem
        a = gmem.holding(off, off + 127)
        if a is not None:
            return a.data[off - a.base:off - a.base + 128]
        raw = gmem.load(np.array([off], np.uint64), 128, [0], wh)[0]
    else:
        mem = W.cta.launch.params if space == "param" else W.cta.launch.const
        if off + 128 <= mem.data.size:
            return mem.data[off:off + 128]
        raw = mem.load(np.array([off], np.int64), 128, [0], wh)[0]
    return raw


# a kernel's TMA copies reuse a few maps: each one's 128 bytes -> its TensorMap, decoded and validated (never changed
# once made); and per launch's global memory, each map's view of its tensor
_MAPS = {}
_VIEWS = weakref.WeakKeyDictionary()   # GlobalMemory -> {map bytes: (allocation, its data, view)}


def _global_view(W, tm: TM.TensorMap, key: bytes, wh):
    """A numpy view of the global tensor a map describes, after proving every byte of it is mapped (once per map
    and allocation: the view is remembered while the allocation and its buffer stay the same)."""
    gmem = W.cta.launch.gmem
    es = tm.element_bytes
    base = tm.global_address
    for a in gmem.allocs:
        if a.base <= base < a.end:
            views = _VIEWS.setdefault(gmem, {})
            seen = views.get(key)
            if seen is not None and seen[0] is a and seen[1] is a.data:
                return seen[2], a, base
            extent = es + sum((d - 1) * s for d, s in zip(tm.global_dim[1:], tm.global_stride)) + \
                (tm.global_dim[0] - 1) * es
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
            views[key] = (a, a.data, view)
            return view, a, base
    raise MemoryFault(wh, f"the tensor map's global address {base:#x} is outside every allocation: "
                          f"{gmem.describe(base)}")


def _decode_map(W, raw, wh):
    """(TensorMap, its 128 bytes) of a map the kernel uses; KernelFault for one the driver would refuse."""
    key = raw.tobytes()
    tm = _MAPS.get(key)
    if tm is None:
        try:
            tm = TM.decode(raw)
            TM.validate(tm)
        except TmaError as e:
            raise KernelFault(wh, f"invalid tensor map: {e}") from None
        if len(_MAPS) >= 256:
            _MAPS.clear()
        _MAPS[key] = tm
    return tm, key


def _plan(tm, view, dst, coords, wh, arch="sm90"):
    swizzle = TM.swizzle_name(tm)
    try:
        return plan_tile_again(dst, view, tm.box_dim, coords, tm.element_stride, swizzle, arch)
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
            coords = [g(W).view(np.int32) for g in get_coords]
            masks = get_mask(W) if get_mask is not None else None
            for lane in act:
                tm, key = _decode_map(W, _read_map(W, maps[lane], base_is_param, wh), wh)
                if tm.rank != rank:
                    raise KernelFault(wh, f"a .{rank}d copy with a rank-{tm.rank} tensor map")
                view, alloc, base = _global_view(W, tm, key, wh)
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
                at = [int(c[lane]) for c in coords]
                addr, values, flat, counts, keep = _plan(tm, view, off, at, wh, W.cta.shared.smem.arch)
                src = _sources(view, base, flat, at, counts, tm.element_stride)
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
        coords = [g(W).view(np.int32) for g in get_coords]
        # lanes issuing the same store (CUTLASS's epilogue: a whole warp) share one: the write is idempotent, each
        # lane's read of the source bytes still counts
        for lane, n in _issues(act, maps, srcs, *coords):
            tm, key = _decode_map(W, _read_map(W, maps[lane], base_is_param, wh), wh)
            view, alloc, base = _global_view(W, tm, key, wh)
            sh = W.cta.shared
            off = int(srcs[lane])
            at = [int(c[lane]) for c in coords]
            addr, _, flat, counts, keep = _plan(tm, view, off, at, wh, sh.smem.arch)
            es = tm.element_bytes
            box = _box(addr, es)
            _check_async_read(W, sh, box.spots, wh, box)
            raw = box.get(sh.smem.data).reshape(-1, es)
            inside = flat >= 0
            if inside.any():  # out-of-bounds box elements are not written
                if not alloc.writable:
                    raise MemoryFault(wh, f"TMA store into read-only '{alloc.name}'")
                _store_box(view, raw, flat, inside, at, counts, tm.element_stride)
            _reading(sh, box, n)
            W.bulk_open.append((sh, box, n))
    return tma_store


def _issues(act, *values):
    """(first lane, lanes) of each distinct copy the active lanes issue (the same operand values: one copy), in
    lane order; values: each operand's per-lane values."""
    if act.size and all((v[act] == v[act[0]]).all() for v in values):   # the whole warp issues one
        return [(int(act[0]), int(act.size))]
    seen = {}
    for lane in act.tolist():
        key = tuple(int(v[lane]) for v in values)
        if key in seen:
            seen[key][1] += 1
        else:
            seen[key] = [lane, 1]
    return [tuple(x) for x in seen.values()]


def _reading(sh, box, n):
    """Count n more (or fewer) in-flight bulk stores reading a copy's source bytes."""
    if box.span is not None:
        sh.bulk_reading[box.span] += n
    elif box.rows is not None:
        r = sh.bulk_reading
        r[:r.size >> 4 << 4].reshape(-1, 16)[box.g] += n
    else:
        sh.bulk_reading[box.spots] += n


def _store_box(view, raw, flat, inside, coords, counts, est):
    """Write a stored box's elements (raw: (n, es) bytes, box order) into the tensor, those inside it: one strided
    slice for a box inside whose elements are distinct bytes of global memory, else element by element."""
    step = [1] + list(est[1:])
    box = box_slices(coords, counts, step, view.shape)
    if box is not None and _disjoint(view, counts, step):
        view[box] = np.ascontiguousarray(raw).view(view.dtype).reshape(tuple(counts[::-1]))
        return
    vals = np.ascontiguousarray(raw[inside]).view(view.dtype).reshape(-1)
    view[np.unravel_index(flat[inside], view.shape)] = vals


def _disjoint(view, counts, step):
    """Whether a box's elements are distinct bytes of the tensor: each dimension's step (bytes) clears the span of
    the smaller ones (global strides are only multiples of 16, possibly 0: rows may overlap)."""
    dims = sorted((s * e, n) for s, e, n in zip(view.strides[::-1], step, counts) if n > 1)
    span = view.itemsize
    for stride, n in dims:
        if stride < span:
            return False
        span += (n - 1) * stride
    return True


def _sources(view, base, flat, coords, counts, est):
    """The global byte address of each byte of the box (-1 for out-of-bounds elements), for layout provenance, as
    (first, offsets): their sum. A box inside the tensor: its first byte's address and the box's own offsets
    (dimension 0 contiguous: its bytes are one run; read-only, the same at every copy of that box)."""
    es = view.itemsize
    step = [1] + list(est[1:])
    if box_slices(coords, counts, step, view.shape) is not None:   # the box inside the tensor
        strides = view.strides[::-1]   # bytes, dimension 0 first
        first = base + sum(c * s for c, s in zip(coords, strides))
        return first, _box_offsets((counts[0] * es,) + tuple(counts[1:]), (1,) + tuple(step[1:]),
                                   (1,) + tuple(strides[1:]))
    src = np.full(flat.shape, -1, np.int64)
    inside = flat >= 0
    if inside.any():
        idx = np.unravel_index(flat[inside], view.shape)
        src[inside] = base + sum(i * s for i, s in zip(idx, view.strides))
    return 0, np.where(src[:, None] >= 0, src[:, None] + np.arange(es), -1).reshape(-1)


def _check_async_read(W, sh, spots, wh, box=None):
    """Shared bytes the async proxy reads: inside the allocation, written, not in flight, fenced (box: spots as a
    _Box, where the caller has it)."""
    if spots.size == 0:
        return
    box = _Box(spots) if box is None else box
    if box.lo < sh.lo or box.hi >= sh.hi:
        raise MemoryFault(wh, f"reads shared bytes outside the kernel's shared memory [{sh.lo:#x}, {sh.hi:#x})")
    if not box.unordered(sh.smem.written).all():
        b = int(spots[~sh.smem.written[spots]][0])
        raise MemoryFault(wh, f"reads shared address {b:#x}, which nothing wrote")
    if sh.pending_any(box.at, box.g):
        raise HazardError(wh, "reads shared bytes an asynchronous copy is still writing")
    bad = sh.unfenced_bytes(spots)
    if bad.size:
        raise HazardError(wh, f"reads shared address {int(bad[0]):#x}, written by the generic proxy with no "
                              "fence.proxy.async since (the async proxy may not see it)")


class _Box:
    """The shared bytes of a copy, in its order (spots), and the cheaper forms of them that numpy moves faster:
    rows, their (n, 16) rows where they are whole 16-byte granules each in order, else None (g: those granules);
    span, the slice [lo, hi] where they are exactly those bytes (order: the permutation of rows into address order,
    None where they are in it), else None. A TMA box is whole granules: its inner extent is a multiple of 16 bytes
    and a swizzle permutes 16-byte chunks (PTX 5.5.7), except sm100's 8-byte flip; where its rows fill their pitch
    (the swizzle span, or the inner extent without one), it is one span."""

    # runs: put_sources' memo; row: racecheck's one row (one lane), the same array at every copy of a kept box, so
    # the units racecheck asks of it are worked out once (granular.Granular.at's memo)
    __slots__ = ("spots", "row", "rows", "g", "at", "lo", "hi", "span", "order", "pos", "runs")

    def __init__(self, spots):
        self.spots = spots
        self.row = spots[None, :]
        self.rows = self.g = self.span = self.order = self.pos = self.runs = None
        self.lo, self.hi = int(spots.min()), int(spots.max())   # (an empty copy: numpy's ValueError, as before)
        if not spots.size % 16:
            r = spots.reshape(-1, 16)
            if not (r[:, 0] & 15).any() and (r == r[:, :1] + np.arange(16)).all():
                self.rows, self.g = r, r[:, 0] >> 4
                pos = self.g - (self.lo >> 4)
                if self.hi - self.lo + 1 == spots.size and not (np.bincount(pos) > 1).any():
                    self.span = slice(self.lo, self.hi + 1)
                    if (np.diff(pos) != 1).any():
                        self.order, self.pos = np.argsort(pos), pos
        self.at = self.spots if self.rows is None else self.rows

    def unordered(self, arr):
        """arr's values at the bytes, in any order (for any / all)."""
        return arr[self.span] if self.span is not None else gather(arr, self.at)

    def get(self, arr):
        """arr's values at the bytes, in order, shaped like `at`."""
        if self.span is None:
            return gather(arr, self.at)
        v = arr[self.span].reshape(-1, 16)
        return v if self.pos is None else np.take(v, self.pos, axis=0)

    def fill(self, arr, value):
        """arr[bytes] = value."""
        if self.span is not None:
            arr[self.span] = value
        else:
            scatter(arr, self.at, value)

    def put_sources(self, sh, first, offsets):
        """sh's sources of the bytes (SharedWindow.set_sources) = first + offsets (one per byte, in order); for
        read-only offsets (the same each time) whether each 16-byte row is one run is worked out once."""
        if self.rows is None:
            sh.set_sources(self.spots, first + offsets)
            return
        if not offsets.flags.writeable:
            if self.runs is None or self.runs[0] is not offsets:   # (offsets, each row's first, all rows runs)
                r = offsets.reshape(-1, 16)
                self.runs = offsets, r[:, 0], bool(((r[:, :1] >= 0) & (r == r[:, :1] + np.arange(16))).all())
            if self.runs[2] and first >= 0:
                sh.set_source_rows(self.g, first + self.runs[1])
                return
        sh.set_sources(self.rows, (first + offsets).reshape(self.rows.shape), self.g)

    def put(self, arr, values):
        """arr[bytes] = values (one per byte, in order)."""
        if self.span is None:
            scatter(arr, self.at, values.reshape(self.at.shape))
            return
        v = values.reshape(-1, 16)
        if self.order is None:
            arr[self.span] = v.reshape(-1)
        else:   # one pass: the rows taken in address order straight into place (indices in range: no clip happens)
            np.take(v, self.order, axis=0, out=arr[self.span].reshape(-1, 16), mode="clip")


_BOXES = {}   # id of a planned box's (read-only) address array -> (it, es, its _Box)


def _box(addr, es) -> _Box:
    """The _Box of elements of es bytes at shared addresses addr; kept for a planned box's address array (read-only,
    the same at every copy of that box)."""
    seen = _BOXES.get(id(addr))
    if seen is not None and seen[0] is addr and seen[1] == es:
        return seen[2]
    box = _Box((addr[:, None] + np.arange(es)).reshape(-1))
    if not addr.flags.writeable:
        if len(_BOXES) >= 64:   # (a kernel has a few: one per stage buffer and operand)
            _BOXES.clear()
        _BOXES[id(addr)] = (addr, es, box)
    return box


def _in_flight_clear(W, sh, box):
    """Whether check_in_flight passes for a box of whole granules, told at once where it can be: no cp.async in flight
    to it, and its TMA guard none, or one (mbarrier, phase) that W has observed (False: ask check_in_flight)."""
    if box.rows is None or sh.pending_any(box.rows, box.g):
        return False
    keys = sh.guard16[box.g]   # one (barrier, phase) a granule, NO_GUARD or MIXED
    if (keys == NO_GUARD).all():
        return True
    return bool(keys[0] >= 0 and (keys == keys[0]).all()) and sh.unobserved([W], box.spots[:1]) is None


def _deliver(W, cta, addr, values, src, es, bar_off, wh, bar_cta=None, pc=-1, lane=0):
    """Write one TMA box into `cta`'s shared memory and complete its bytes on the mbarrier at bar_off of `bar_cta`
    (default: `cta` itself). src: the global byte behind each byte written (-1: none), as (first, offsets) whose sum
    it is (_sources). The shadows are written in the box's cheapest form (_Box)."""
    bar_cta = cta if bar_cta is None else bar_cta
    sh = cta.shared
    box = _box(addr, es)
    spots = box.spots
    if box.lo < sh.lo or box.hi >= sh.hi:
        raise MemoryFault(wh, f"TMA box [{box.lo:#x}, {box.hi + 1:#x}) falls outside the "
                              f"kernel's shared memory [{sh.lo:#x}, {sh.hi:#x}) of CTA {cta.ctaid}")
    if box.unordered(sh.mbar_live).any():
        raise HazardError(wh, "a TMA box overwrites an initialised mbarrier object")
    sh.check_overwrite(box.at, wh, "a TMA load writes", box.g)
    mb = lookup(W, bar_cta, bar_off, wh)
    if not _in_flight_clear(W, sh, box):
        sh.check_in_flight(W, spots, wh, "this copy writes")
    data = np.ascontiguousarray(values).view(np.uint8)
    # racecheck: the async proxy's write, in the issuing warp's order; waiters acquire it through the mbarrier
    races.on_write(sh, W, box.row, W.tid[lane:lane + 1], wh, data[None, :])
    races.mbar_release(W, mb)
    box.fill(sh.copy_pc, pc + 1)
    box.put(sh.smem.data, data)
    box.fill(sh.smem.written, True)
    sh.set_unfenced(box.at, 0)   # the async proxy's write: nothing to fence
    box.put_sources(sh, *src)
    bar = bar_off if bar_cta is cta else ((bar_cta.rank + 1) << 24) | bar_off
    box.fill(sh.guard_bar, bar)
    box.fill(sh.guard_phase, mb.phase)
    if box.rows is not None:
        sh.guard16[box.g] = bar << 32 | mb.phase
    else:
        sh.guard_changed(spots)
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
                    data, src = sh.smem.data[sp].copy(), sh.sources(sp)
                cta, off = shared_target(W, dsts[lane], dst_space, wh)
                _, boff = shared_target(W, bars[lane], dst_space, wh)
                targets = [cta] if not multicast else \
                    [c for r, c in enumerate(W.cta.cluster) if int(get_mask(W)[lane]) >> r & 1]
                for c in targets:
                    _deliver(W, c, off + np.arange(n), data, (0, src), 1, boff, wh, None, pc, lane)
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
                box = _Box(spots) if n else None   # (an empty store reads nothing)
                _check_async_read(W, sh, spots, wh, box)
                access(W, "global", dsts[lane:lane + 1], W.tid[lane:lane + 1], n, wh,
                       data=sh.smem.data[spots].reshape(1, -1))
                if box is not None:
                    _reading(sh, box, 1)
                    W.bulk_open.append((sh, box, 1))
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
            for sh, box, n in W.bulk_groups.pop(0):
                _reading(sh, box, -n)
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
