"""Racecheck records kept per 16-byte granule until an access covers part of one (races.Shadow, graces.GShadow).

A GEMM moves shared and global memory in whole 16-byte granules (cp.async.cg, ld / st .v4, ldmatrix rows, TMA
boxes, wgmma operands: PTX 9.7.9.25, 9.7.15.5.1), so the bytes of a granule carry one record, and the coarse
plane keeps it once: 16x fewer bytes to gather and scatter. The first access that covers part of a granule gives
that granule per-byte records for good (the fine plane, each byte starting from its granule's record), so every
answer is the one per-byte records give."""
import numpy as np

from .rows import last_answer


class Plane:
    """One resolution's record arrays: name -> (n,) or (rows, n) int64."""

    def __init__(self, fields, n: int, rows: int):
        for name, (fill, per_row) in fields.items():
            shape = (rows, n) if per_row else (n,)
            setattr(self, name, np.full(shape, fill, np.int64) if fill else np.zeros(shape, np.int64))


class Granular:
    """Records of `size` bytes: `fields` name -> (fill, per_row): per_row fields hold one row per reader (add_row)."""

    def __init__(self, size: int, fields: dict, rows: int = 0):
        self.fields = fields
        self.G = (size + 15) >> 4
        self.rows = rows
        self.coarse = Plane(fields, self.G, rows)
        self.fine = None            # the per-byte Plane, made on first need
        self.is_fine = None         # per granule: its bytes have records of their own

    def add_row(self):
        self.rows += 1
        for P in (self.coarse, self.fine):
            if P is None:
                continue
            for name, (fill, per_row) in self.fields.items():
                if per_row:
                    old = getattr(P, name)
                    setattr(P, name, np.vstack([old, np.full((1, old.shape[1]), fill, np.int64)]))

    def at(self, spots, fine: bool = False):
        """(plane, index) for the records of `spots` ((n, k) byte offsets, each row start + 0..k-1, or whole
        16-byte chunks of one for a TMA box): the coarse plane and the (n, k / 16) granules where every row is
        whole granules, none of them fine, and `fine` is not asked; else the fine plane and spots, once the
        granules spots touch are fine."""
        if not fine:
            g = whole_granules(spots)
            if g is not None and (self.is_fine is None or not self.is_fine[g].any()):
                return self.coarse, g
        g = np.asarray(spots).reshape(-1) >> 4
        if self.is_fine is None or not self.is_fine[g].all():
            self.refine(np.unique(g))
        return self.fine, spots

    def at_rows(self, starts, k: int):
        """at() for the rows starts + 0..k-1 ((n,) byte offsets), building them only where the coarse plane does
        not answer: (plane, index)."""
        if k == 16 and not (starts & 15).any():
            g = (starts >> 4)[:, None]
            if self.is_fine is None or not self.is_fine[g].any():
                return self.coarse, g
        return self.at(starts[:, None] + np.arange(k))

    def refine(self, g):
        """Give granules g per-byte records, each byte its granule's."""
        if self.fine is None:
            self.fine = Plane(self.fields, self.G * 16, self.rows)
            self.is_fine = np.zeros(self.G, bool)
        g = g[~self.is_fine[g]]
        if not g.size:
            return
        for name, (_, per_row) in self.fields.items():
            c, f = getattr(self.coarse, name), getattr(self.fine, name)
            if per_row:
                f.reshape(self.rows, -1, 16)[:, g] = c[:, g][:, :, None]
            else:
                f.reshape(-1, 16)[g] = c[g][:, None]
        self.is_fine[g] = True

    def bytes(self, name: str) -> np.ndarray:
        """A field resolved per byte (coarse records repeated over their granules' bytes)."""
        out = np.repeat(getattr(self.coarse, name), 16, axis=-1)
        if self.fine is not None:
            fine = np.repeat(self.is_fine, 16)
            out[..., fine] = getattr(self.fine, name)[..., fine]
        return out


@last_answer
def whole_granules(spots):
    """The (n, k / 16) 16-byte granules of spots whose rows are whole granules, else None."""
    if spots.ndim == 2 and not spots.shape[1] & 15 and spots.shape[0]:
        g = spots[:, ::16]
        if not (g & 15).any():
            n, k = spots.shape   # k > 16, a TMA box row: 16-byte chunks, each contiguous (a swizzle permutes them)
            if k == 16 or (spots.reshape(n, k >> 4, 16) - g[:, :, None] == np.arange(16)).all():
                return g >> 4
    return None
