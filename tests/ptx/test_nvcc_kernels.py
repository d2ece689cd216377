"""nvcc-generated PTX (tests/fixtures/ptx/warp_kernels.cu, compiled by nvcc 13.0 for sm_90a) run by tcemu.ptx
against Python models of the CUDA source: the code layouts, local frames and warp intrinsics a real
compiler emits, not only the ones written by hand."""
import pathlib

import numpy as np
import pytest

import tcemu.ptx as ptx

from ptxkit import s32
from paths import PTX_FIXTURES

PTX = pathlib.Path(PTX_FIXTURES) / "warp_kernels.ptx"


@pytest.fixture(scope="module")
def mod():
    return ptx.load(PTX)


def test_fixture_is_nvcc_output_for_sm90a(mod):
    text = PTX.read_text()
    assert "Cuda compilation tools, release 13.0" in text and ".target sm_90a" in text
    assert set(mod.kernels) == {"cold_shfl", "warp_sum", "local_hist"}


def _cold_shfl_model(x):
    def lane(t):
        v = int(x[t])
        if v < 0:
            v = s32(v * v + 3)
            i = 0
            while i < v:
                v ^= int(x[i & 31])
                i += 1
        return v
    v = [lane(t) for t in range(len(x))]
    return [v[t ^ 1] for t in range(len(x))]


@pytest.mark.parametrize("negatives", [[], [5], [0, 1, 2, 40], list(range(64))])
def test_cold_block_placed_after_the_join(mod, negatives):
    # nvcc puts `if (unlikely(v < 0)) {...}` after the __shfl_xor_sync and branches back; lanes that took it
    # must still meet the others at the full-mask shuffle and at __syncthreads
    x = (np.arange(64, dtype=np.int32) * 7) % 23 + 1
    x[negatives] = -(np.arange(len(negatives)) % 3 + 1)
    out = np.zeros(64, np.int32)
    mod.launch("cold_shfl", grid=1, block=64, args=[out, x])
    assert list(out) == _cold_shfl_model(x)


def test_warp_sum_shuffles_syncwarp_and_atomics(mod):
    n = 200   # 2 CTAs x 128 threads: the last 56 threads contribute 0
    x = ((np.arange(n, dtype=np.uint64) * 2654435761) & 0xFFFFFFFF).astype(np.uint32)
    total = np.zeros(1, np.uint32)
    per_warp = np.zeros(8, np.uint32)
    mod.launch("warp_sum", grid=2, block=128, args=[total, per_warp, x, n])
    padded = np.concatenate([x, np.zeros(256 - n, np.uint32)]).astype(np.uint64)
    want = padded.reshape(8, 32).sum(axis=1) & 0xFFFFFFFF
    assert list(per_warp) == list(want) and int(total[0]) == int(padded.sum()) & 0xFFFFFFFF


def test_local_memory_array(mod):
    n = 300
    x = ((np.arange(n) * 37 + 11) % 256).astype(np.uint8)
    out = np.zeros(96, np.int32)
    mod.launch("local_hist", grid=1, block=96, args=[out, x, n])
    want = []
    for t in range(96):
        hist = [0] * 8
        for i in range(t, n, 96):
            hist[x[i] & 7] += 1 + (int(x[i]) >> 3)
        best = 0
        for i in range(1, 8):
            if hist[i] > hist[best]:
                best = i
        want.append(best * 1000 + hist[best])
    assert list(out) == want
