"""State spaces of a running kernel (PTX ISA 5.1) and the generic address space that maps onto them.

Global memory is the user's numpy buffers, each placed at a device address with unmapped guard space
between them, so an access past the end of one faults instead of landing in the next (as compute-sanitizer
would report it). Shared memory is the CTA's `tcemu.SharedMemory`, bounded to the kernel's allocation;
reading a byte nothing wrote is a fault unless the launch asks for zero-initialised shared memory. Local
memory is per thread; parameters are one read-only byte buffer per launch.

Generic addresses (PTX 5.1.6): each window below maps one state space; `cvta` adds or removes its base.
"""
from dataclasses import dataclass
from typing import List, Optional

import numpy as np
from numba import njit

from . import races
from .errors import HazardError, MemoryFault
from .granular import whole_granules
from .guardscan import MIXED, NO_GUARD, guard_cleared, guard_keys, guard_keys16, guard_summary
from .rows import fill_starts, gather_starts, scatter, scatter_starts

GLOBAL_BASE = 0x7F00_0000_0000    # first device allocation
GLOBAL_GUARD = 1 << 20            # unmapped bytes between allocations
SHARED_WINDOW = 0x1000_0000_0000  # generic address of shared::cta offset 0
LOCAL_WINDOW = 0x2000_0000_0000
PARAM_WINDOW = 0x3000_0000_0000
CONST_WINDOW = 0x4000_0000_0000
CODE_WINDOW = 0x5000_0000_0000    # device functions' addresses (callgraph.py): no data lives here
WINDOW_SIZE = 1 << 32
SMEM_RESERVED = 0x400  # sm90: the first 1 KiB of a CTA's shared window is reserved; dynamic smem starts here
                       # (hardware-leads.md: dynamic shared memory began at 0x400 in every capture kernel)

WINDOWS = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW, "param": PARAM_WINDOW, "const": CONST_WINDOW}


def generic_space(addr: int) -> str:
    for space, base in WINDOWS.items():
        if base <= addr < base + WINDOW_SIZE:
            return space
    return "global"


@dataclass
class Allocation:
    base: int
    data: np.ndarray   # uint8, the buffer's bytes (a view of the user's array where it is contiguous)
    name: str
    writable: bool = True
    shape: tuple = ()  # the user's array shape and element size (C order), for naming elements
    itemsize: int = 1

    @property
    def end(self) -> int:
        return self.base + self.data.size


class Where:
    """What a fault message says about the access: instruction, CTA, warp."""

    def __init__(self, text: str):
        self.text = text


class GlobalMemory:
    """Device allocations addressed by 64-bit global (and generic) addresses."""

    def __init__(self):
        self.allocs: List[Allocation] = []
        self._bases = np.zeros(0, np.uint64)
        self._next = GLOBAL_BASE
        self.gone: List[tuple] = []   # (allocation, why) unmapped during the launch (heap.py: device free)

    def allocate(self, data: np.ndarray, name: str, writable: bool = True, shape=(), itemsize: int = 1) -> int:
        """Map a uint8 buffer; returns its device address (256-byte aligned, as cudaMalloc's)."""
        base = self._next
        self.allocs.append(Allocation(base, data, name, writable, tuple(shape) or (data.size,), itemsize))
        self._bases = np.array([a.base for a in self.allocs], np.uint64)
        self._next = (base + data.size + GLOBAL_GUARD + 255) // 256 * 256
        return base

    def place(self, base: int, data: np.ndarray, name: str, writable: bool = True, shape=(), itemsize: int = 1):
        """Map a buffer at a chosen device address (a captured launch's own pointers)."""
        if not (0 <= base and base + data.size <= 1 << 63):
            raise MemoryFault("buffers", f"'{name}' at {base:#x} ({data.size} bytes) does not lie in [0, 2^63)")
        for a in self.allocs:
            if base < a.end and a.base < base + data.size:
                raise MemoryFault("buffers", f"buffer at {base:#x} ({data.size} bytes) overlaps '{a.name}'")
        self.allocs.append(Allocation(base, data, name, writable, tuple(shape) or (data.size,), itemsize))
        self.allocs.sort(key=lambda a: a.base)
        self._bases = np.array([a.base for a in self.allocs], np.uint64)
        self._next = max(self._next, (self.allocs[-1].end + GLOBAL_GUARD + 255) // 256 * 256)

    def unmap(self, a: Allocation, why: str) -> None:
        """Remove an allocation: a later access faults, and describe() says `why` of its bytes."""
        self.allocs.remove(a)
        self._bases = np.array([x.base for x in self.allocs], np.uint64)
        self.gone.append((a, why))

    def holding(self, lo: int, hi: int):
        """The allocation holding bytes lo..hi (inclusive), or None."""
        i = int(np.searchsorted(self._bases, lo, side="right")) - 1
        if i < 0 or hi >= self.allocs[i].end:
            return None
        return self.allocs[i]

    def element_index(self, addrs: np.ndarray):
        """(allocation index, (n, ndim) element indices) of global byte addresses, or None if they are not all
        element starts inside one allocation."""
        if addrs.size == 0:
            return None
        i = int(np.searchsorted(self._bases, addrs.min(), side="right")) - 1
        if i < 0:
            return None
        a = self.allocs[i]
        off = addrs.astype(np.int64) - a.base
        if off.max() >= a.data.size or (off % a.itemsize).any():
            return None
        return i, np.stack(np.unravel_index(off // a.itemsize, a.shape), axis=1)

    def describe(self, addr: int) -> str:
        """Where an address lies relative to the allocations, in words."""
        for a, why in reversed(self.gone):
            if a.base <= addr < a.end:
                return f"{addr - a.base} bytes into '{a.name}' ({a.data.size} bytes), {why}"
        best = None
        for a in self.allocs:
            if a.base <= addr < a.end:
                return f"{addr - a.base} bytes into '{a.name}' ({a.data.size} bytes)"
            dist = addr - a.end if addr >= a.end else a.base - addr
            if best is None or dist < best[0]:
                best = (dist, a, addr >= a.end)
        if best is None:
            return "no buffer is mapped"
        dist, a, after = best
        return f"{dist} bytes {'past the end of' if after else 'before'} '{a.name}' ({a.data.size} bytes at {a.base:#x})"

    def _locate(self, addrs: np.ndarray, nbytes: int, lanes, where: str):
        """The allocation holding every access [addr, addr + nbytes) of the active lanes."""
        if addrs.size == 0:
            return None, addrs
        i = int(np.searchsorted(self._bases, addrs[0], side="right")) - 1
        if i >= 0:
            a = self.allocs[i]
            off = addrs - np.uint64(a.base)
            # a wrapped (negative) offset is huge as uint64, so one comparison checks both ends
            if int(off.max()) + nbytes <= a.data.size:
                return a, off.astype(np.int64)
        for j, addr in enumerate(addrs.tolist()):
            k = int(np.searchsorted(self._bases, addr, side="right")) - 1
            if k < 0 or not (self.allocs[k].base <= addr and addr + nbytes <= self.allocs[k].end):
                a = self.allocs[k] if k >= 0 else None
                where_ = self.describe(addr) if a is None or addr >= a.end else \
                    f"starts {addr - a.base} bytes into '{a.name}' ({a.data.size} bytes at {a.base:#x}) and runs " \
                    f"{addr + nbytes - a.end} bytes past its end"
                raise MemoryFault(where, f"thread {lanes[j]} accesses {nbytes} bytes at global address {addr:#x}, "
                                         f"outside every allocation: {where_}")
        # several allocations in one instruction: resolve lane by lane
        return "multi", addrs

    def load(self, addrs: np.ndarray, nbytes: int, lanes, where: str) -> np.ndarray:
        a, off = self._locate(addrs, nbytes, lanes, where)
        if a is None:
            return np.zeros((0, nbytes), np.uint8)
        if a == "multi":
            return np.stack([self.load(addrs[j:j + 1], nbytes, lanes[j:j + 1], where)[0]
                             for j in range(addrs.size)])
        return gather_starts(a.data, off, nbytes)

    def store(self, addrs: np.ndarray, data: np.ndarray, lanes, where: str) -> None:
        nbytes = data.shape[1]
        a, off = self._locate(addrs, nbytes, lanes, where)
        if a is None:
            return
        if a == "multi":
            for j in range(addrs.size):
                self.store(addrs[j:j + 1], data[j:j + 1], lanes[j:j + 1], where)
            return
        if not a.writable:
            raise MemoryFault(where, f"thread {lanes[0]} writes to read-only '{a.name}'")
        scatter_starts(a.data, off, data)


# per-byte shadow state of a SharedWindow: name -> (dtype, initial value)
_SHADOWS = {
    # bytes an in-flight cp.async will write (pc + 1 of the copy): per 16-byte granule for copies of whole
    # granules (cp.async.cg: 16 bytes at a 16-byte aligned address), per byte for 4- and 8-byte copies (pending)
    "async_pending": (np.int32, 0),
    "async_pending16": (np.int32, 0),
    # generic-proxy writes not yet made visible to the async proxy: the epoch of each byte's last write; a
    # fence.proxy.async (by any warp: an approximation of the happens-before chain) covers every earlier one.
    # Per 16-byte granule (its bytes' epoch where they share one: a cp.async.cg or st.shared.v4 row writes a
    # whole granule), or MIXED: per byte in `unfenced`, made only then (an int64 a byte had been 1.2 MB of a
    # Triton GEMM CTA's ~2.7 MB of shadows, filled at every landing)
    "unfenced16": (np.int64, 0),
    "unfenced": (np.int64, 0),
    # layout provenance (provenance.py): the global byte each shared byte was copied from, per 16-byte granule
    # (SharedWindow.sources): the granule's byte 0's, its bytes following it in order (a copied granule: cp.async,
    # a TMA box's 16-byte chunks, bulk copies), NO_SOURCE, or MIXED: per byte in `source`, made only then
    "source16": (np.int64, -1),
    "source": (np.int64, -1),
    # bytes a TMA wrote, completing on mbarrier guard_bar (shared offset) in its phase guard_phase: a reader must
    # have observed that phase (a successful wait, or knowledge passed on through a barrier)
    "guard_bar": (np.int64, -1),
    "guard_phase": (np.int64, 0),
    # the same per 16-byte granule (guard16): its bytes' one (barrier << 32 | phase), NO_GUARD where none of its
    # bytes is guarded, or MIXED: per byte only. Kept by every writer of guard_bar (TMA delivery sets it, stores
    # clear it: clear_guard), so that a wgmma operand's guard check reads one entry a granule (unobserved)
    "guard16": (np.int64, -1),
    # in-flight wgmmas reading each 16-byte granule: a wgmma operand is whole granules (its start address, LBO
    # and SBO count 16 bytes and a swizzle permutes 16-byte chunks: PTX 9.7.15.5.1), so this is exact
    "wgmma_reading": (np.int32, 0),
    "tcgen05_reading": (np.int32, 0),  # bytes tcgen05.mma / .cp read, until committed
    "bulk_reading": (np.int32, 0),     # source bytes of in-flight bulk stores
    "mbar_live": (np.bool_, 0),        # bytes of initialised mbarrier objects
    "copy_pc": (np.int32, 0),          # pc + 1 of the async copy that wrote each byte
}
_GRANULES = {"wgmma_reading", "async_pending16", "source16", "unfenced16", "guard16"}   # kept per 16-byte granule, not byte
NO_SOURCE = -1   # source16: no byte of the granule is a copy; MIXED (guardscan.py): its bytes' sources (unfenced16:
                 # epochs) are per byte in `source` (`unfenced`)
_BYTE = np.arange(16)


@njit(cache=True)
def _any_at(arr, idx):
    """Whether arr[idx] holds a nonzero anywhere: a gather and its any() in one pass, stopping at the first
    (check_overwrite asks three shadows at every shared store)."""
    for i in idx:
        if arr[i] != 0:
            return True
    return False


@njit(cache=True)
def _runs_at(source16, granules, low, out):
    """out = source16[granules] + low where every granule is a run (>= 0; then True), in one pass (operand_sources:
    a take, a min and an add had cost ~30 us a wgmma operand)."""
    g, lo, o = granules.reshape(-1), low.reshape(-1), out.reshape(-1)
    for i in range(g.size):
        v = source16[g[i]]
        if v < 0:
            return False
        o[i] = v + lo[i]
    return True


@njit(cache=True)
def _any_unfenced(unfenced16, unfenced, idx, bound):
    """Whether a byte of idx has an epoch above bound (unfenced_bytes' question, asked before its array is built):
    its granule's, or its own where the granule is MIXED."""
    for i in idx:
        e = unfenced16[i >> 4]
        if e == MIXED:
            e = unfenced[i]
        if e > bound:
            return True
    return False


@njit(cache=True)
def _set_epochs(unfenced16, unfenced, spots, epochs):
    """SharedWindow.set_unfenced's rows that are no whole granules: spots (n, k) byte offsets, epochs (n,) one a row
    or (1,) for all. A granule goes per byte (MIXED: its epoch spelled out into `unfenced`) before its first byte
    changes, and back to one epoch where the write leaves its 16 bytes alike (two lanes' 8-byte stores). Rows in
    order: a byte written twice keeps the later row's epoch."""
    one = epochs.size == 1
    n, k = spots.shape
    for i in range(n):
        e = epochs[0] if one else epochs[i]
        for j in range(k):
            b = spots[i, j]
            g = b >> 4
            cur = unfenced16[g]
            if cur == e:
                continue   # every byte of the granule holds e already
            if cur != MIXED:
                for t in range(16):
                    unfenced[(g << 4) + t] = cur
                unfenced16[g] = MIXED
            unfenced[b] = e
    for i in range(n):
        for j in range(k):
            g = spots[i, j] >> 4
            if unfenced16[g] == MIXED:
                v = unfenced[g << 4]
                alike = True
                for t in range(1, 16):
                    if unfenced[(g << 4) + t] != v:
                        alike = False
                        break
                if alike:
                    unfenced16[g] = v


def _flat(x) -> np.ndarray:
    """x's offsets as one contiguous int64 row (a view where they are one already)."""
    return np.ascontiguousarray(x, np.int64).reshape(-1)


def _granule_bytes(g) -> np.ndarray:
    """The byte offsets of 16-byte granules g, flat."""
    return (np.asarray(g).reshape(-1, 1) * 16 + _BYTE).reshape(-1)


def granules(spots) -> np.ndarray:
    """The 16-byte granules (offset >> 4) of byte offsets `spots`, a granule once per aligned row of 16 or more."""
    g = whole_granules(spots) if isinstance(spots, np.ndarray) else None
    if g is not None:
        return g.reshape(-1)
    return np.asarray(spots).reshape(-1) >> 4


def _unguarded(guard16, spots, starts) -> bool:
    """Whether no TMA guards a byte of spots ((n, k) rows of k <= 16 bytes, each start + 0..k-1: its first and last
    byte's granules hold it whole) or of the rows of 16 at `starts`: guard16 NO_GUARD at every granule (a granule
    is NO_GUARD only where every byte's guard_bar is -1: every writer of guard_bar keeps guard16). False: not told."""
    if spots is None:
        return bool((guard16[starts >> 4] == NO_GUARD).all())
    if not (isinstance(spots, np.ndarray) and spots.ndim == 2 and 0 < spots.shape[1] <= 16):
        return False
    return bool((guard16[spots[:, 0] >> 4] == NO_GUARD).all() and (guard16[spots[:, -1] >> 4] == NO_GUARD).all())


class SharedWindow:
    """A CTA's shared memory: the bytes [lo, hi) of a tcemu.SharedMemory that the launch allocated."""
    # whether the global byte behind each shared byte is kept (set_sources): only a tensor-core operand's layout
    # check reads it (provenance.py), so a launch without one, or with check_layouts=False, keeps none (Module.launch)
    keep_sources = True
    log = None   # the launch's hang.WriteLog, where it watches this window's stores

    def __init__(self, smem, lo: int, hi: int, zero_init: bool):
        self.smem = smem
        self.lo, self.hi = lo, hi
        if zero_init:
            smem.written[lo:hi] = True
        # the per-byte shadow arrays (_SHADOWS) are made on first use, as long as the kernel's window [0, hi): a CTA
        # that never touches shared memory costs none of their 40 bytes per byte
        self.write_epoch = 0
        self.fence_epoch = 0
        self.guarded = False
        self.rank = 0                                            # the CTA's rank in its cluster
        self.race = None                                         # racecheck's shadow (races.py), on first use
        # tensor-core operands (wgmma_gang.Operand) whose every byte has been written: a byte once written stays
        # written (nothing clears smem.written while the window lives; a hang probe's undo runs no wgmma)
        self.written_reads = set()
        self.made = False                                        # whether a shadow has been made

    def __getattr__(self, name):
        made = _SHADOWS.get(name)
        if made is None:
            raise AttributeError(name)
        n = (self.hi + 15) >> 4 if name in _GRANULES else self.hi   # every offset checked lies below hi
        if name in ("source", "unfenced"):   # whole granules (the MIXED ones of source16 / unfenced16)
            n = ((self.hi + 15) >> 4) << 4
        arr = np.full(n, made[1], made[0]) if made[1] else np.zeros(n, made[0])
        setattr(self, name, arr)
        self.made = True
        return arr

    def release(self):
        """Drop the shadows of a finished CTA's window (made again, empty, if anything asks)."""
        if self.made:
            d = self.__dict__
            for name in _SHADOWS:
                d.pop(name, None)
            self.made = False
        self.race = None
        if self.written_reads:
            self.written_reads = set()

    def check(self, offs: np.ndarray, nbytes: int, lanes, where: str, what: str = "accesses"):
        if offs.size == 0:
            return
        lo, hi = int(offs.min()), int(offs.max()) + nbytes
        if lo < self.lo or hi > self.hi:
            bad = offs[(offs < self.lo) | (offs + nbytes > self.hi)]
            j = int(np.flatnonzero((offs < self.lo) | (offs + nbytes > self.hi))[0])
            raise MemoryFault(where, f"thread {lanes[j]} {what} {nbytes} bytes at shared address {int(bad[0]):#x}, "
                                     f"outside the kernel's shared memory [{self.lo:#x}, {self.hi:#x})")

    def load(self, offs: np.ndarray, nbytes: int, lanes, where: str, W=None, guard: bool = True,
             strong: bool = False) -> np.ndarray:
        """The bytes each lane reads; W (the reading warp) for the TMA-guard (`guard`) and race checks."""
        self.check(offs, nbytes, lanes, where, "reads")
        spots = offs[:, None] + np.arange(nbytes)
        if "mbar_live" in self.__dict__ and self.mbar_live[spots].any():   # (a shadow never made is all False)
            raise HazardError(where, f"a generic load reads an initialised mbarrier object at "
                                     f"{int(spots[self.mbar_live[spots]][0]):#x}")
        if self.guarded and W is not None and guard:
            self.check_guard([W], spots, where, "reads")
        if self.pending_any(spots):  # before the unwritten check: the copy's target is unwritten too
            j, b = np.argwhere(self.pending(spots) != 0)[0]
            raise HazardError(where, f"thread {lanes[j]} reads shared address {int(offs[j]) + int(b):#x} while an "
                                     "asynchronous copy to it is still in flight (missing cp.async.wait_group / "
                                     "barrier wait)")
        if W is not None:
            races.on_read(self, W, spots, lanes, where, strong)
        if not self.smem.written[spots].all():
            j, b = np.argwhere(~self.smem.written[spots])[0]
            rule = f"thread {lanes[j]} reads shared address {int(offs[j]) + int(b):#x}, which nothing wrote " \
                   "(launch with zero_init_shared=True to read zeros)"
            # racecheck: the report waits for a write of another warp that races with this read
            if W is None or not races.defer_unwritten(W, where, rule):
                raise MemoryFault(where, rule)
        return self.smem.data[spots]

    def store(self, offs: np.ndarray, data: np.ndarray, lanes, where: str, generic: bool = True, W=None,
              strong: bool = False) -> None:
        """W: the writing warp, for the race checks (None: a write the detector does not follow). The store goes in
        the launch's write log (`log`: hang.WriteLog.watch_shared), where it watches this window."""
        self.write(offs, data, lanes, where, generic, W, strong)
        if self.log is not None:
            self.log.add(self, offs, data.shape[1], where)

    def write(self, offs: np.ndarray, data: np.ndarray, lanes, where: str, generic: bool = True, W=None,
              strong: bool = False) -> None:
        """store, without the write log (a hang probe's own stores, which it undoes)."""
        nbytes = data.shape[1]
        self.check(offs, nbytes, lanes, where, "writes")
        spots = offs[:, None] + np.arange(nbytes)
        if "mbar_live" in self.__dict__ and self.mbar_live[spots].any():
            raise HazardError(where, f"a generic store overwrites an initialised mbarrier object at "
                                     f"{int(spots[self.mbar_live[spots]][0]):#x} (mbarrier.inval it first)")
        self.check_overwrite(spots, where)
        races.on_write(self, W, spots, lanes, where, data, strong)
        self.clear_guard(spots)
        self.smem.data[spots] = data
        self.smem.written[spots] = True
        self.set_sources(spots, NO_SOURCE)
        if generic:
            self.mark_generic(spots)

    def sources(self, offs) -> np.ndarray:
        """The global byte each shared byte at offsets `offs` (any shape) was copied from, -1 where none."""
        offs = np.asarray(offs)
        if "source16" not in self.__dict__:
            return np.full(offs.shape, NO_SOURCE, np.int64)
        g = np.take(self.source16, offs >> 4)
        out = np.where(g >= 0, g + (offs & 15), NO_SOURCE)
        if "source" in self.__dict__:
            mixed = g == MIXED
            if mixed.any():
                out[mixed] = self.source[offs[mixed]]
        return out

    def granule_sources(self):
        """source16 (each granule's global source where it is one run of copied bytes, else NO_SOURCE / MIXED), or
        None where no copy ever wrote this window."""
        return self.__dict__.get("source16")

    def operand_sources(self, op) -> np.ndarray:
        """sources(op.addrs) for a tensor-core operand (ops/wgmma_gang.Operand: its element addresses, their
        granules and offsets in them): where every granule it reads is one run, a gather of granules."""
        if "source16" in self.__dict__ and op.addrs.size:
            out = np.empty(op.addrs.shape, np.int64)
            if _runs_at(self.source16, op.addr_granules, op.addr_low, out):
                return out
        return self.sources(op.addrs)

    def set_sources(self, spots, src, g=None):
        """Record that the bytes `spots` ((n, k) offsets) were copied from global bytes `src` (broadcast against
        spots; NO_SOURCE: none). g: whole_granules(spots), where the caller has them."""
        if not self.keep_sources:
            return
        src = np.asarray(src, np.int64)
        if src.ndim == 0 and src < 0 and "source16" not in self.__dict__:
            return   # a shadow never made holds NO_SOURCE everywhere already
        g = whole_granules(spots) if g is None else g
        if g is None:   # parts of granules: those granules go per byte
            spots = np.asarray(spots)
            if src.ndim == 0 and src < 0 and (np.take(self.source16, spots >> 4) == NO_SOURCE).all():
                return   # no source cleared where there was none (a st.shared of computed values)
            gr = np.unique(spots >> 4)
            self._per_byte(gr)
            self.source[spots] = src
            self.source16[gr] = MIXED
            return
        g = g.reshape(-1)
        if src.ndim == 0:
            self.source16[g] = src if src < 0 else MIXED
            if src >= 0:
                self.source[_granule_bytes(g)] = src
            return
        rows = np.broadcast_to(src, np.shape(spots)).reshape(-1, 16)   # granule by granule, as g lists them
        first = rows[:, 0]
        val = np.where((first >= 0) & (rows == first[:, None] + _BYTE).all(axis=1), first,
                       np.where((rows < 0).all(axis=1), NO_SOURCE, MIXED))
        mixed = val == MIXED
        if mixed.any():
            self.source[_granule_bytes(g[mixed])] = rows[mixed].reshape(-1)
        self.source16[g] = val

    def set_source_rows(self, g, first):
        """set_sources for whole granules g ((n,)) copied in order from global bytes first, first + 1, ..."""
        if self.keep_sources:
            self.source16[g] = first

    def _per_byte(self, gr):
        """Spell out granules gr's sources byte by byte in `source` (those not MIXED already)."""
        cur = self.source16[gr]
        lone = cur != MIXED
        if lone.any():
            b = _granule_bytes(gr[lone])
            self.source[b] = np.where(cur[lone][:, None] >= 0, cur[lone][:, None] + _BYTE, NO_SOURCE).reshape(-1)

    def check_overwrite(self, spots, where: str, what: str = "writes", g=None):
        """Bytes an in-flight wgmma or bulk store still reads may not be overwritten (g: granules(spots), where the
        caller has them; spots may then be None where no per-byte shadow of these is made)."""
        made = self.__dict__   # a shadow never made (lazy, __getattr__) is all zeros: nothing to check
        if "wgmma_reading" in made and _any_at(self.wgmma_reading, _flat(granules(spots) if g is None else g)):
            flat = _granule_bytes(g) if spots is None else np.asarray(spots).reshape(-1)
            b = int(flat[self.wgmma_reading[flat >> 4] != 0][0])
            raise HazardError(where, f"{what} shared address {b:#x}, which a wgmma.mma_async still in flight reads "
                                     "(wait for it with wgmma.wait_group before reusing the stage)")
        if spots is None and ("bulk_reading" in made or "tcgen05_reading" in made):   # per-byte shadows: bytes
            spots = _granule_bytes(g)
        if "bulk_reading" in made and _any_at(self.bulk_reading, _flat(spots)):
            b = int(spots[self.bulk_reading[spots] != 0][0])
            raise HazardError(where, f"{what} shared address {b:#x}, which a bulk copy to global memory still reads "
                                     "(cp.async.bulk.wait_group.read first)")
        if "tcgen05_reading" in made and _any_at(self.tcgen05_reading, _flat(spots)):
            b = int(spots[self.tcgen05_reading[spots] != 0][0])
            raise HazardError(where, f"{what} shared address {b:#x}, which a tcgen05.mma / tcgen05.cp still reads: no "
                                     "tcgen05.commit has completed it yet (wait on the commit's mbarrier before "
                                     "reusing the stage)")

    def pending_any(self, spots, g=None) -> bool:
        """Whether an in-flight cp.async will write a byte of spots (g: granules(spots), where the caller has
        them)."""
        made = self.__dict__   # a shadow never made is all zeros
        if "async_pending16" in made and _any_at(self.async_pending16, _flat(granules(spots) if g is None else g)):
            return True
        return "async_pending" in made and _any_at(self.async_pending, _flat(spots))

    def pending(self, spots) -> np.ndarray:
        """Per byte of spots: pc + 1 of the in-flight cp.async that will write it, 0 where none."""
        spots = np.asarray(spots)
        made = self.__dict__
        out = self.async_pending[spots] if "async_pending" in made else np.zeros(spots.shape, np.int32)
        if "async_pending16" in made:
            g = self.async_pending16[spots >> 4]
            out = np.where(g != 0, g, out)
        return out

    def set_pending(self, spots, value: int, g=None):
        """Mark (pc + 1) or clear (0) the bytes a cp.async will write: per granule where its rows are whole
        granules (the same spots clear what they marked; g: those granules, where the caller has them)."""
        g = whole_granules(spots) if g is None else g
        if g is not None:
            self.async_pending16[g] = value
        else:
            scatter(self.async_pending, spots, value)

    def check_guard(self, warps, spots, where: str, what: str):
        """Every reader warp must have observed the mbarrier phase that completes the TMA writes it reads."""
        hit = self.unobserved(warps, spots)
        if hit is not None:
            w, b, phase, key = hit
            other = "" if key[0] == self.rank else f" of CTA rank {key[0]}"
            raise HazardError(where, f"warp {w.index} {what} shared address {b:#x} written by a TMA that "
                                     f"completes phase {phase} of the mbarrier at {key[1]:#x}{other}, but the "
                                     "warp has not observed that phase (no successful mbarrier wait on it)")

    def clear_guard(self, spots, starts=None):
        """No TMA guards bytes spots ((n, k) offsets; or rows of 16 at 16-byte aligned `starts`) any more: a generic
        or cp.async write. guard_bar and guard16 both (shadows never made hold -1 / NO_GUARD everywhere already;
        only a TMA's delivery makes them hold more)."""
        made = self.__dict__
        if "guard_bar" not in made:
            return
        if "guard16" in made and _unguarded(self.guard16, spots, starts):   # (CUTLASS's epilogue: ~0.7 ms a CTA)
            return
        if spots is None:
            fill_starts(self.guard_bar, starts, 16, -1)
            g = starts >> 4
        else:
            scatter(self.guard_bar, spots, -1)
            g = whole_granules(spots) if isinstance(spots, np.ndarray) else None
        if "guard16" not in made:
            return
        if g is not None:
            self.guard16[_flat(g)] = NO_GUARD
        else:   # parts of granules: those a TMA guarded are worked out again
            guard_cleared(self.guard16, self.guard_bar, self.guard_phase, _flat(spots))

    def guard_changed(self, spots):
        """A TMA's delivery set guard_bar / guard_phase at bytes spots, not whole granules: guard16 follows."""
        guard_summary(self.guard16, self.guard_bar, self.guard_phase, np.unique(_flat(spots) >> 4))

    def unobserved(self, warps, spots, grains=None):
        """(warp, byte, phase, mbarrier key) of a byte a TMA wrote whose phase a warp has not observed, or None.
        grains: the 16-byte granules of spots where they are whole granules (a tensor-core operand's)."""
        flat = _flat(spots)
        keys = np.empty(16, np.int64)
        if grains is not None:   # which (barrier, phase) at all: one entry a granule
            n = guard_keys16(self.guard16, self.guard_bar, self.guard_phase, _flat(grains), keys)
        else:
            n = guard_keys(self.guard_bar, self.guard_phase, flat, keys)
        if n == 0:
            return None
        if n > 0 and all(w.mbar_seen.get(self._bar_key(k >> 32), -1) >= (k & 0xFFFFFFFF)
                         for k in keys[:n].tolist() for w in warps):
            return None
        return self._unobserved(warps, flat)

    def _bar_key(self, bar: int):
        # a barrier in another CTA of the cluster (cta_group::2 TMA) is stored as (rank + 1) << 24 | offset
        return (self.rank, bar) if bar < 1 << 24 else ((bar >> 24) - 1, bar & 0xFFFFFF)

    def _unobserved(self, warps, spots):
        """unobserved's answer, the first such (barrier, phase) in key order, with the first byte of that barrier."""
        g = self.guard_bar[spots]
        hit = g >= 0
        if not hit.any():
            return None
        ph = self.guard_phase[spots]
        if hit.all() and (g == g[0]).all() and (ph == ph[0]).all():   # one TMA box's bytes: one (barrier, phase)
            keys = np.array([int(g[0]) << 32 | int(ph[0])], np.int64)
        else:   # one int64 key per (barrier, phase): a 1-D unique, far cheaper than a row-wise one
            keys = np.unique((g[hit].astype(np.int64) << 32) | ph[hit].astype(np.int64))
        for bar, phase in zip((keys >> 32).tolist(), (keys & 0xFFFFFFFF).tolist()):
            key = self._bar_key(bar)
            for w in warps:
                seen = w.mbar_seen.get(key, -1)
                if seen < phase:
                    return w, int(spots[hit][(g[hit] == bar)][0]), phase, key
        return None

    def check_in_flight(self, W, spots, where: str, what: str):
        """The destination bytes of an asynchronous copy (cp.async, cp.async.bulk, TMA) must not be the target of
        another copy still in flight: a cp.async not yet waited on (cp.async.wait_group), or a bulk copy whose
        mbarrier phase the issuing warp has not observed (PTX 9.7.9.25: the copies' writes are unordered; two
        in flight to one byte leave it undefined)."""
        spots = np.asarray(spots).reshape(-1)
        if spots.size == 0:
            return
        lo, hi = int(spots.min()), int(spots.max()) + 1
        p = self.pending(spots)
        if p.any():
            b = int(spots[p != 0][0])
            raise HazardError(where, f"{what} shared bytes [{lo:#x}, {hi:#x}) while {self._copy(W, int(p[p != 0][0]))} "
                                     f"is still in flight writing {b:#x} (no cp.async.wait_group since): two "
                                     "asynchronous copies write the same shared bytes")
        hit = self.unobserved([W], spots)
        if hit is not None:
            _, b, phase, key = hit
            other = "" if key[0] == self.rank else f" of CTA rank {key[0]}"
            raise HazardError(where, f"{what} shared bytes [{lo:#x}, {hi:#x}) while {self._copy(W, self.copy_pc[b])} "
                                     f"is still in flight writing {b:#x}: it completes phase {phase} of the mbarrier "
                                     f"at {key[1]:#x}{other}, which warp {W.index} has not observed (no successful "
                                     "mbarrier wait on it): two asynchronous copies write the same shared bytes")

    @staticmethod
    def _copy(W, pc1: int) -> str:
        instrs = W.cta.prog.instrs
        if not 0 < pc1 <= len(instrs):
            return "another copy"
        ins = instrs[pc1 - 1]
        return f"the copy at {ins.text()} ({ins.where()})"

    def mark_generic(self, spots, starts=None):
        """The bytes spots ((n, k) offsets; or rows of 16 at `starts`) were written through the generic proxy."""
        self.write_epoch += 1
        self.set_unfenced(spots, self.write_epoch, starts)

    def set_unfenced(self, spots, epoch, starts=None):
        """The bytes spots ((n, k) offsets, or any shape; or rows of 16 at `starts`) get write epoch `epoch` (one,
        or (n, 1): one a row; 0: written by the async proxy, nothing to fence). Rows that are whole granules set
        their granules' epoch; others spell their granules out per byte first (MIXED)."""
        if np.ndim(epoch) == 0 and epoch == 0 and "unfenced16" not in self.__dict__:
            return   # a shadow never made holds 0 everywhere already
        if spots is None:
            if not (starts & 15).any():   # aligned rows of 16: whole granules
                self.unfenced16[starts >> 4] = epoch if np.ndim(epoch) == 0 else np.reshape(epoch, -1)
                return
            spots = starts[:, None] + _BYTE
        g = whole_granules(spots) if isinstance(spots, np.ndarray) else None
        if g is not None:
            self.unfenced16[g] = epoch
            return
        spots = np.asarray(spots, np.int64)
        rows = spots.reshape(len(spots), -1) if spots.ndim > 1 else spots.reshape(-1, 1)   # a row a byte for 1-D
        _set_epochs(self.unfenced16, self.unfenced, rows, np.asarray(epoch, np.int64).reshape(-1))

    def fence_proxy_async(self):
        self.fence_epoch = self.write_epoch

    def unfenced_bytes(self, spots) -> np.ndarray:
        if self.write_epoch <= self.fence_epoch:   # no generic write since the last fence (epochs <= write_epoch)
            return spots[:0]
        made = self.__dict__
        flat = _flat(spots)
        if "unfenced16" not in made or not _any_unfenced(self.unfenced16, made.get("unfenced", flat[:0]), flat,
                                                        self.fence_epoch):
            return flat[:0]   # (a shadow never made is all zeros)
        spots = np.asarray(spots)
        return spots[self.epochs(spots) > self.fence_epoch]

    def epochs(self, offs) -> np.ndarray:
        """The epoch of each byte's last generic write (0: none, or an async-proxy write since) at offsets `offs`
        (any shape)."""
        offs = np.asarray(offs)
        if "unfenced16" not in self.__dict__:
            return np.zeros(offs.shape, np.int64)
        e = self.unfenced16[offs >> 4]
        mixed = e == MIXED
        if mixed.any():
            e[mixed] = self.unfenced[offs[mixed]]
        return e


class LocalMemory:
    """Per-thread local memory of one warp: a (32, size) byte array addressed by offsets."""

    def __init__(self, size: int):
        self.data = np.zeros((32, max(size, 0)), np.uint8)
        self.size = size

    def _spots(self, offs, nbytes, lanes, where):
        if offs.size and (int(offs.min()) < 0 or int(offs.max()) + nbytes > self.size):
            j = int(np.flatnonzero((offs < 0) | (offs + nbytes > self.size))[0])
            raise MemoryFault(where, f"thread {lanes[j]} accesses {nbytes} bytes at local offset {int(offs[j])}, "
                                     f"outside its {self.size}-byte local frame")
        return offs[:, None] + np.arange(nbytes)

    def load(self, offs, nbytes, lanes, where):
        spots = self._spots(offs, nbytes, lanes, where)
        return self.data[(np.asarray(lanes) % 32)[:, None], spots]

    def store(self, offs, data, lanes, where):
        spots = self._spots(offs, data.shape[1], lanes, where)
        self.data[(np.asarray(lanes) % 32)[:, None], spots] = data


class ByteSpace:
    """A read-only byte buffer addressed by offsets: kernel parameters, or .const data."""

    def __init__(self, data: np.ndarray, name: str):
        self.data = data
        self.name = name

    def load(self, offs, nbytes, lanes, where):
        if offs.size and (int(offs.min()) < 0 or int(offs.max()) + nbytes > self.data.size):
            j = int(np.flatnonzero((offs < 0) | (offs + nbytes > self.data.size))[0])
            raise MemoryFault(where, f"thread {lanes[j]} reads {nbytes} bytes at {self.name} offset {int(offs[j])}, "
                                     f"outside its {self.data.size} bytes")
        return self.data[offs[:, None] + np.arange(nbytes)]

    def store(self, offs, data, lanes, where):
        raise MemoryFault(where, f"thread {lanes[0]} writes to the read-only {self.name} space")


def as_bytes(rows: np.ndarray, nbytes: int) -> np.ndarray:
    """(n, k) unsigned values -> (n, k * itemsize) little-endian bytes, nbytes per row."""
    rows = np.ascontiguousarray(rows)
    return rows.view(np.uint8).reshape(rows.shape[0], -1)[:, :nbytes]


def from_bytes(raw: np.ndarray, dtype) -> np.ndarray:
    """(n, k * itemsize) bytes -> (n, k) values of `dtype` (little-endian)."""
    raw = np.ascontiguousarray(raw)
    return raw.view(dtype).reshape(raw.shape[0], -1)


def optional(x) -> Optional[int]:
    return None if x is None else int(x)
