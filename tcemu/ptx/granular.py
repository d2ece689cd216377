"""Racecheck records kept per granule until an access covers part of one (races.Shadow, graces.GShadow).

A GEMM moves shared and global memory in whole 16-byte granules (cp.async.cg, ld / st .v4, ldmatrix rows, TMA
boxes, wgmma operands: PTX 9.7.9.25, 9.7.15.5.1), so the bytes of a granule carry one record, and the coarse
plane keeps it once: 16x fewer bytes to gather and scatter. A kernel whose narrowest shared access is smaller
(CUTLASS's epilogue stores 4 and 8 bytes) keeps its shared records per unit of that size (races.shared_unit), and
its global records likewise (graces.global_unit). The
first access that covers part of a unit gives that unit per-byte records for good (the fine plane, each byte
starting from its unit's record), so every answer is the one per-byte records give.

A sparse Granular (global memory: graces.GShadow) keeps the fine plane's records of the units made fine only, in
slots taken in turn: a store that leaves some bytes of a granule as they were (each byte keeps its earlier writer)
makes that granule fine, and a 64 MB output would otherwise take 4 x 512 MB of per-byte records.

Kept bytes (`kept` fields, GShadow's writer): where such a store meets a unit no one wrote yet, the unit stays
coarse, its record the store's, and a mask (`keep`, a bit per byte) names the bytes that still hold no record.
Only the next access to the unit makes it fine, each kept byte back at its fields' fill: an output written once
over zeros (every word with a zero byte) keeps no per-byte records at all."""
import numpy as np
from numba import njit

from .rows import last_answer


class Plane:
    """One resolution's record arrays: name -> (n,) or (rows, n) of the field's dtype (int64 unless a third item
    of its spec names one). A zero fill is np.zeros: pages the OS makes only where records are written."""

    def __init__(self, fields, n: int, rows: int):
        for name, (fill, per_row, *dt) in fields.items():
            shape = (rows, n) if per_row else (n,)
            dtype = dt[0] if dt else np.int64
            setattr(self, name, np.full(shape, fill, dtype) if fill else np.zeros(shape, dtype))


class Granular:
    """Records of `size` bytes per `unit` (a power of two up to 16; the granule): `fields` name -> (fill, per_row):
    per_row fields hold one row per reader (add_row)."""

    def __init__(self, size: int, fields: dict, rows: int = 0, unit: int = 16, sparse: bool = False,
                 kept=()):
        self.fields = fields
        self.unit, self.shift = unit, unit.bit_length() - 1
        self.whole = WHOLE[unit]
        self.G = (size + unit - 1) >> self.shift
        self.rows = rows
        self.coarse = Plane(fields, self.G, rows)
        self.fine = None            # the per-byte Plane, made on first need
        self.is_fine = None         # per granule: its bytes have records of their own
        self.sparse = sparse
        self.slot = None            # sparse: per unit, its slot in the fine plane (bytes slot * unit ..)
        self.used = 0               # sparse: slots taken
        self.kept = kept            # fields a unit's bytes in `keep` hold at their fill (the module's text)
        self.keep = None            # per unit: a bit per byte its coarse record does not cover (made on first use)

    def add_row(self):
        self.rows += 1
        for P in (self.coarse, self.fine):
            if P is None:
                continue
            for name, (fill, per_row, *_) in self.fields.items():
                if per_row:
                    old = getattr(P, name)
                    setattr(P, name, np.vstack([old, np.full((1, old.shape[1]), fill, old.dtype)]))

    def at(self, spots, fine: bool = False):
        """(plane, index) for the records of `spots` ((n, k) byte offsets, each row start + 0..k-1, or whole
        16-byte chunks of one for a TMA box): the coarse plane and the (n, k / unit) units where every row is
        whole units, none of them fine, and `fine` is not asked; else the fine plane and spots, once the units
        spots touch are fine."""
        if not fine:
            g = self.whole(spots)
            if g is not None and (self.is_fine is None or not self.is_fine[g].any()) and not self._kept(g):
                return self.coarse, g
        g = np.asarray(spots).reshape(-1) >> self.shift
        if self.is_fine is None or not self.is_fine[g].all():
            self.refine(np.unique(g))
        return self.fine, self.fine_index(spots)

    def fine_index(self, spots):
        """The fine plane's index of byte offsets spots (of units made fine): the offsets themselves, or where
        sparse, each unit's slot."""
        if not self.sparse:
            return spots
        spots = np.asarray(spots)
        return self.slot[spots >> self.shift] * self.unit + (spots & (self.unit - 1))

    def at_rows(self, starts, k: int):
        """at() for the rows starts + 0..k-1 ((n,) byte offsets), building them only where the coarse plane does
        not answer: (plane, index)."""
        if k == self.unit and not (starts & (k - 1)).any():
            g = (starts >> self.shift)[:, None]
            if (self.is_fine is None or not self.is_fine[g].any()) and not self._kept(g):
                return self.coarse, g
        return self.at(starts[:, None] + np.arange(k))

    def refine(self, g):
        """Give units g per-byte records, each byte its unit's."""
        u = self.unit
        if self.fine is None:
            self.fine = Plane(self.fields, (min(self.G, max(64, 2 * len(g))) if self.sparse else self.G) * u,
                              self.rows)
            self.is_fine = np.zeros(self.G, bool)
            if self.sparse:
                self.slot = np.full(self.G, -1, np.int64)
        g = g[~self.is_fine[g]]
        if not g.size:
            return
        at = g
        if self.sparse:
            at = np.arange(self.used, self.used + g.size)
            self._room(self.used + g.size)
            self.slot[g] = at
            self.used += g.size
        for name, (_, per_row, *_) in self.fields.items():
            c, f = getattr(self.coarse, name), getattr(self.fine, name)
            if per_row:
                f.reshape(self.rows, -1, u)[:, at] = c[:, g][:, :, None]
            else:
                f.reshape(-1, u)[at] = c[g][:, None]
        if self._kept(g):   # kept bytes: back at their fill, per byte now
            km = self.keep[g]
            sel = km != 0
            bits = (km[sel][:, None] >> np.arange(u)) & 1 == 1
            for name in self.kept:
                f = getattr(self.fine, name).reshape(-1, u)
                f[at[sel]] = np.where(bits, self.fields[name][0], f[at[sel]])
            self.keep[g[sel]] = 0
        self.is_fine[g] = True

    def _kept(self, g) -> bool:
        return self.keep is not None and bool(self.keep[g].any())

    def write_kept(self, g, changed, values: dict) -> bool:
        """Record a store on units g ((n,), distinct) that changes the bytes `changed` ((n, unit) bool) of each and
        leaves the others as they were: values {kept field: (n,) record}. Only where every unit is coarse and
        holds no record yet (its kept fields at their fill, no kept bytes); else False, nothing changed (the
        caller records per byte)."""
        if self.is_fine is not None and self.is_fine[g].any() or self._kept(g):
            return False
        for name in self.kept:
            if (getattr(self.coarse, name)[g] != self.fields[name][0]).any():
                return False
        if self.keep is None:
            self.keep = np.zeros(self.G, np.uint16)   # unit <= 16 bytes: a bit each
        mask = byte_mask(changed)
        some = mask != 0
        g = g[some]
        for name, v in values.items():
            getattr(self.coarse, name)[g] = v[some]
        self.keep[g] = ((1 << self.unit) - 1) & ~mask[some]
        return True

    def _room(self, slots: int):
        """Grow a sparse fine plane to hold `slots` units (doubling, at most every unit)."""
        u = self.unit
        have = getattr(self.fine, next(iter(self.fields))).shape[-1] // u
        if slots <= have:
            return
        cap = min(self.G, max(slots, 2 * have))
        for name, (fill, *_) in self.fields.items():
            old = getattr(self.fine, name)
            new = np.full(old.shape[:-1] + (cap * u,), fill, old.dtype) if fill else \
                np.zeros(old.shape[:-1] + (cap * u,), old.dtype)
            new[..., :old.shape[-1]] = old
            setattr(self.fine, name, new)

    def bytes(self, name: str) -> np.ndarray:
        """A field resolved per byte (coarse records repeated over their granules' bytes)."""
        out = np.repeat(getattr(self.coarse, name), self.unit, axis=-1)
        if name in self.kept and self.keep is not None:
            kept = ((self.keep[:, None] >> np.arange(self.unit)) & 1 == 1).reshape(-1)
            out[kept[:out.shape[-1]]] = self.fields[name][0]
        if self.fine is not None:
            fine = np.flatnonzero(np.repeat(self.is_fine, self.unit))
            out[..., fine] = getattr(self.fine, name)[..., self.fine_index(fine)]
        return out


def byte_mask(b: np.ndarray) -> np.ndarray:
    """(n,) int64 masks of the (n, unit) bools b, bit j for byte j (unit <= 16)."""
    n, unit = b.shape
    if unit == 16:
        return np.packbits(np.ascontiguousarray(b).reshape(-1), bitorder="little").view("<u2").astype(np.int64)
    w = np.ascontiguousarray(b).view(f"<u{unit}")[:, 0].astype(np.int64)   # byte j (0 or 1) at bit 8 j
    mask = w & 1
    for j in range(1, unit):
        mask |= (w >> (7 * j)) & (1 << j)
    return mask


NUMBA_MAX = 4096   # offsets _units takes in one scalar pass; numpy's vector passes win above (3,072 x 16: 29 us
                   # against 66)


@njit(cache=True)
def _units(spots, unit, shift):
    """(n, k / unit) units of (n, k) byte offsets whose every run of `unit` is one aligned unit in order (a TMA
    box row is 16-byte chunks, each contiguous: a swizzle permutes whole chunks), else an empty array. One pass:
    the numpy form made five temporaries (~35 us for 128 rows of 8 bytes, against ~4)."""
    n, k = spots.shape
    out = np.empty((n, k >> shift), np.int64)
    for i in range(n):
        for j in range(0, k, unit):
            s = spots[i, j]
            if s & (unit - 1):
                return out[:0]
            for u in range(1, unit):
                if spots[i, j + u] != s + u:
                    return out[:0]
            out[i, j >> shift] = s >> shift
    return out


def _whole(unit: int):
    shift = unit.bit_length() - 1

    @last_answer
    def whole(spots):
        """The (n, k / unit) units of spots whose rows are whole units, else None."""
        if spots.ndim == 2 and not spots.shape[1] & (unit - 1) and spots.shape[0] and spots.dtype.kind == "i":
            if spots.size <= NUMBA_MAX:
                g = _units(spots, unit, shift)
                return g if g.size else None
            g = spots[:, ::unit]
            if not (g & (unit - 1)).any():
                n, k = spots.shape
                if k == unit or (spots.reshape(n, k >> shift, unit) - g[:, :, None] == np.arange(unit)).all():
                    return g >> shift
        return None
    return whole


WHOLE = {u: _whole(u) for u in (1, 2, 4, 8, 16)}   # each remembers its own last answer
whole_granules = WHOLE[16]
