"""The TMA guard's scans over a shared window's shadows (memory.SharedWindow.unobserved): which (mbarrier, phase)
the TMA-written bytes of an access complete on, per byte (guard_bar, guard_phase) or per 16-byte granule
(guard16), and guard16 worked out again from the bytes where a write changed them. Each is one pass in numba: a
wgmma operand's check had gathered both int64 shadows of its 2-4 KB (~50 us a CUTLASS operand)."""
from numba import njit

MIXED = -2      # a granule shadow (memory.py's source16, unfenced16, guard16) whose bytes differ: per byte
NO_GUARD = -1   # guard16: no byte of the granule is guarded


@njit(cache=True)
def _add_key(keys, n, k):
    """keys[:n] with k once (the new count; -1 where keys is full)."""
    for j in range(n):
        if keys[j] == k:
            return n
    if n == keys.size:
        return -1
    keys[n] = k
    return n + 1


@njit(cache=True)
def guard_keys(guard_bar, guard_phase, idx, keys):
    """The distinct (barrier << 32 | phase) of the TMA-guarded bytes idx into keys (how many; -1 past its size):
    unobserved's question in one pass, without gathering both shadows (~50 us a CUTLASS wgmma operand)."""
    n = 0
    for i in idx:
        if guard_bar[i] >= 0:
            n = _add_key(keys, n, (guard_bar[i] << 32) | guard_phase[i])
            if n < 0:
                return -1
    return n


@njit(cache=True)
def guard_keys16(guard16, guard_bar, guard_phase, grains, keys):
    """guard_keys for whole granules `grains`: one entry a granule (guard16), its bytes where they differ (MIXED)."""
    n = 0
    for g in grains:
        k = guard16[g]
        if k >= 0:
            n = _add_key(keys, n, k)
        elif k == MIXED:
            for i in range(g << 4, (g + 1) << 4):
                if n >= 0 and guard_bar[i] >= 0:
                    n = _add_key(keys, n, (guard_bar[i] << 32) | guard_phase[i])
        if n < 0:
            return -1
    return n


@njit(cache=True)
def _summarise(guard16, guard_bar, guard_phase, g):
    """guard16[g] from its 16 bytes' guard_bar / guard_phase."""
    b0, p0 = guard_bar[g << 4], guard_phase[g << 4]
    for t in range(1, 16):
        b = guard_bar[(g << 4) + t]
        if b != b0 or (b >= 0 and guard_phase[(g << 4) + t] != p0):
            guard16[g] = MIXED
            return
    guard16[g] = NO_GUARD if b0 < 0 else (b0 << 32) | p0


@njit(cache=True)
def guard_summary(guard16, guard_bar, guard_phase, grains):
    """guard16 of granules `grains` from their bytes (a delivery of parts of granules: SharedWindow.guard_changed)."""
    for g in grains:
        _summarise(guard16, guard_bar, guard_phase, g)


@njit(cache=True)
def guard_cleared(guard16, guard_bar, guard_phase, spots):
    """guard_summary for the granules of byte offsets `spots` whose guard_bar a write set to -1: a granule NO_GUARD
    before stays so (the common case: a store where no TMA wrote), each other is worked out once per run of its
    bytes (np.unique over an epilogue's 8-byte stores had cost ~150 us a CTA's store)."""
    last = -1
    for s in spots:
        g = s >> 4
        if g != last and guard16[g] != NO_GUARD:
            _summarise(guard16, guard_bar, guard_phase, g)
        last = g
