"""A gang's registers copied between register slabs (machine.RegisterSlabs) and a batch (lockstep.Batch), where
the gang's warps are several runs of neighbouring columns: one numba pass per slab and register class, instead of
a fancy-indexed copy per run (a warp-specialised CTA's gang holds one run per CTA: CUTLASS ping-pong's consumer
warpgroups of a wave; session 27 measured 3 runs a batch there, 13% of the launch in the copies)."""
import math
import sys

import numpy as np
from numba import njit

POOL_BUFFERS = 2   # reused buffers per dtype (a stretch's batch, and a gang op's inside a run)


def scratch(pool: dict, shape, dtype) -> np.ndarray:
    """An uninitialised array for a batch: a view of a buffer of `pool` (the launch's) that no array still views
    (sys.getrefcount: the list, the loop name and the call's argument), else of a new one kept in the pool (at most
    POOL_BUFFERS a dtype, each the largest batch asked of it). A batch holds every register slot of the kernel (ops
    index them by slot) but touches a few: fresh arrays page-faulted their touched rows in anew (CUTLASS ping-pong,
    3,021 32-bit slots: 11.5 GB allocated a 512^3 launch, a fifth of the VM's time in the kernel's page zeroing)."""
    n = math.prod(shape)
    bufs = pool.setdefault(np.dtype(dtype), [])
    for i in range(len(bufs)):
        b = bufs[i]
        if sys.getrefcount(b) == 3:   # nothing views it (not enumerate: its tuple holds one more)
            if b.size < n:
                b = bufs[i] = np.empty(n, dtype)
            return b[:n].reshape(shape)
    b = np.empty(n, dtype)
    if len(bufs) < POOL_BUFFERS:
        bufs.append(b)
    return b[:n].reshape(shape)


def slab_runs(runs):
    """[(register files, (runs, 3) int64 rows (first column, end, position in the batch))], one per slab."""
    by = {}
    for files, k0, k1, s0 in runs:
        got = by.get(id(files))
        if got is None:
            by[id(files)] = got = (files, [])
        got[1].append((k0, k1, s0))
    return [(files, np.array(rows, np.int64)) for files, rows in by.values()]


@njit(cache=True, nogil=True)
def move(slab, idx, runs, batch, to_batch):
    """Rows idx of each run (k0, k1, s0) between a slab and a batch: batch[r, s0 + j] = slab[r, k0 + j] for
    j < k1 - k0 (to_batch), or the other way."""
    for i in range(idx.size):
        r = idx[i]
        for q in range(runs.shape[0]):
            k0, k1, s0 = runs[q, 0], runs[q, 1], runs[q, 2]
            for j in range(k1 - k0):
                if to_batch:
                    batch[r, s0 + j, :] = slab[r, k0 + j, :]
                else:
                    slab[r, k0 + j, :] = batch[r, s0 + j, :]
