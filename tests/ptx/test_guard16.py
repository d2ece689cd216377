"""The TMA guard per 16-byte granule (memory.SharedWindow's guard16): it says what the per-byte guard_bar /
guard_phase say, after TMA deliveries, stores over parts of granules and whole ones, and in real kernels at every
guard check; and a check over granules answers as the check over bytes does."""
import json
import os

import numpy as np

from tcemu.layout.smem import SharedMemory
from tcemu.ptx import memory
from tcemu.ptx.memory import MIXED, NO_GUARD, SMEM_RESERVED, SharedWindow
from tcemu.traces import launches

FX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ptx")


def _summary(sh):
    """guard16 worked out from the bytes."""
    bar = sh.guard_bar[:sh.guard16.size * 16].reshape(-1, 16)
    ph = sh.guard_phase[:sh.guard16.size * 16].reshape(-1, 16)
    key = np.where(bar >= 0, bar << 32 | ph, -1)
    alike = (key == key[:, :1]).all(axis=1)
    return np.where(alike, key[:, 0], MIXED)


class _Warp:
    def __init__(self, seen):
        self.mbar_seen = seen
        self.index = 0


def test_stores_over_parts_of_a_delivered_box_keep_the_granules_exact():
    sh = SharedWindow(SharedMemory(), SMEM_RESERVED, SMEM_RESERVED + 4096, True)
    lo = SMEM_RESERVED + 256
    box = np.arange(lo, lo + 512)             # a TMA box of 32 granules, as bulk._deliver leaves it
    sh.guard_bar[box] = 0x40
    sh.guard_phase[box] = 3
    sh.guard16[box[::16] >> 4] = 0x40 << 32 | 3
    sh.guarded = True
    g = lo >> 4
    sh.write(np.array([lo + 4]), np.ones((1, 4), np.uint8), [0], "st")                # part of granule g
    sh.write(np.array([lo + 16]), np.ones((1, 16), np.uint8), [0], "st")              # all of granule g + 1
    sh.write(np.array([lo + 32, lo + 40]), np.ones((2, 8), np.uint8), [0, 1], "st")   # granule g + 2, two halves
    assert sh.guard16[g:g + 4].tolist() == [MIXED, NO_GUARD, NO_GUARD, 0x40 << 32 | 3]
    assert (sh.guard16 == _summary(sh)).all()
    # the check over granules answers as the one over bytes, for warps that have and have not seen phase 3
    grains = np.arange(g, g + 32)
    spots = (grains[:, None] * 16 + np.arange(16)).reshape(-1)
    for seen, blocked in (({(0, 0x40): 3}, False), ({(0, 0x40): 2}, True), ({}, True)):
        w = _Warp(seen)
        by_granule, by_byte = sh.unobserved([w], spots, grains), sh.unobserved([w], spots)
        assert (by_granule is not None) == blocked and by_granule == by_byte
    # only the MIXED granule's guarded bytes are left of the first four: a check of them still finds the TMA
    assert sh.unobserved([_Warp({})], spots[:64], grains[:4])[1] == lo
    # a copy into a granule none guarded (sm100's 8-byte rows): guarded as a whole, then half of it per byte
    free = np.arange(lo + 1024, lo + 1040)
    sh.guard_bar[free[:8]] = 0x48
    sh.guard_changed(free[None, :8])
    assert sh.guard16[free[0] >> 4] == MIXED
    sh.guard_bar[free[8:]] = 0x48
    sh.guard_changed(free[None, 8:])
    assert sh.guard16[free[0] >> 4] == 0x48 << 32 and (sh.guard16 == _summary(sh)).all()
    # halves of one granule written by copies of one barrier's two phases (sm100's 8-byte rows): per byte
    half = np.arange(lo + 48, lo + 56)
    sh.guard_phase[half] = 4
    sh.guard_changed(half[None, :])
    assert sh.guard16[g + 3] == MIXED and (sh.guard16 == _summary(sh)).all()
    w = _Warp({(0, 0x40): 3})
    assert sh.unobserved([w], spots, grains)[2] == 4 and sh.unobserved([w], spots, grains) == sh.unobserved([w], spots)
    assert sh.unobserved([w], spots[:48], grains[:3]) is None   # (granules g, g + 1, g + 2: phase 3 or none)


def test_guard16_follows_the_bytes_in_cutlass_and_answers_as_they_do(monkeypatch):
    """CUTLASS ping-pong on 4 CTAs: at every guard check, each window's guard16 is its bytes' summary, and the
    wgmma operands' checks over granules (every one of them: 4 CTAs of one tile each, its consumer warpgroup's 8 K
    blocks x 4 wgmmas x 2 operands) answer as the checks over bytes."""
    asked = []
    unobserved = SharedWindow.unobserved

    def spy(self, warps, spots, grains=None):
        got = unobserved(self, warps, spots, grains)
        if "guard16" in self.__dict__:
            assert (self.guard16 == _summary(self)).all()
        if grains is not None:
            assert got == unobserved(self, warps, spots)
            asked.append(got)
        return got
    monkeypatch.setattr(memory.SharedWindow, "unobserved", spy)
    rec = json.load(open(os.path.join(FX, "bench_cutlass_pingpong_bf16_512.json")))["launch"]
    launches.replay(rec, os.path.join(FX, "cutlass_pingpong_bf16.ptx"), seed=1, ctas=[(0, y, 0) for y in range(4)])
    assert len(asked) == 4 * 8 * 4 * 2 and all(a is None for a in asked)


def test_a_store_where_no_tma_guards_passes_over_the_guard_and_one_that_touches_a_guard_clears_it():
    # clear_guard's glance (memory._unguarded): rows whose first and last byte's granules are NO_GUARD leave both
    # shadows untouched; a row reaching into a guarded granule from an unguarded one (its last byte) still clears
    # that byte, and one in the middle of a box clears its bytes, each time as the per-byte summary says
    sh = SharedWindow(SharedMemory(), SMEM_RESERVED, SMEM_RESERVED + 4096, True)
    lo = SMEM_RESERVED + 256
    box = np.arange(lo, lo + 64)
    sh.guard_bar[box] = 0x40
    sh.guard_phase[box] = 1
    sh.guard16[box[::16] >> 4] = 0x40 << 32 | 1
    before = sh.guard_bar.copy()
    sh.write(np.array([lo + 512, lo + 528]), np.ones((2, 8), np.uint8), [0, 1], "st")   # far from the box
    assert (sh.guard_bar == before).all() and (sh.guard16 == _summary(sh)).all()
    assert memory._unguarded(sh.guard16, np.array([[lo + 512 + i for i in range(8)]]), None)
    assert not memory._unguarded(sh.guard16, (lo - 4 + np.arange(8))[None, :], None)   # its last byte: guarded
    assert not memory._unguarded(sh.guard16, None, np.array([lo + 512, lo + 48]))
    sh.write(np.array([lo - 4]), np.ones((1, 8), np.uint8), [0], "st")                 # 4 bytes into the box
    assert sh.guard_bar[lo - 4:lo + 8].tolist() == [-1] * 8 + [0x40] * 4
    assert sh.guard16[lo >> 4] == MIXED and (sh.guard16 == _summary(sh)).all()
    sh.write(np.array([lo + 16]), np.ones((1, 16), np.uint8), [0], "st")               # a whole granule of it
    assert sh.guard16[(lo >> 4) + 1] == NO_GUARD and (sh.guard_bar[lo + 16:lo + 32] == -1).all()
    assert (sh.guard16 == _summary(sh)).all()
