"""Triton's tutorial 01 vector addition (tests/fixtures/ptx/add_f32, made by scripts/fixtures/triton_elementwise.py)
on the PTX interpreter: the elementwise pattern of a bounds mask, registers set to a default, predicated global loads
and stores, in grids of many CTAs. add.f32 rounds to nearest even and keeps subnormals (PTX ISA 9.7.3.1), which is
what numpy's float32 addition computes, so the expected bits are numpy's."""
import hashlib

import numpy as np
import pytest

from tcemu.frontends.triton import run_compiled
from tcemu.ptx.ops import memory_gang

from ptxkit import matmul_fixture as fixture
from paths import source_is_unchanged


def finite_f32(n, seed):
    """n float32 values of every finite class (random bit patterns with the NaN / inf exponent cleared: normals,
    subnormals, both zeros), so that x + y is never NaN, whose payload numpy and the GPU choose differently."""
    bits = np.random.default_rng(seed).integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    bits[(bits & 0x7F800000) == 0x7F800000] &= 0xBFFFFFFF
    return bits.view(np.float32)


def add(n, pad=64, **launch):
    meta, ptx = fixture("add_f32")
    x, y = finite_f32(n + pad, 1), finite_f32(n + pad, 2)
    out = np.full(n + pad, 0x7FC0DEAD, np.uint32).view(np.float32)   # sentinel past n_elements
    stats = run_compiled(ptx, meta, {"x_ptr": x, "y_ptr": y, "output_ptr": out, "n_elements": n}, **launch)
    return x, y, out, stats


@pytest.mark.parametrize("n", [98432, 4096 + 48])
def test_vector_add_gives_ieee_f32_sums_inside_the_mask_and_nothing_past_it(n, monkeypatch):
    ran = []
    real = memory_gang._global_load_lanes
    monkeypatch.setattr(memory_gang, "_global_load_lanes", lambda *a: ran.append(real(*a)) or ran[-1])
    x, y, out, stats = add(n)
    with np.errstate(over="ignore"):
        want = x[:n] + y[:n]
    assert np.array_equal(out[:n].view(np.uint32), want.view(np.uint32))
    assert (out[n:].view(np.uint32) == 0x7FC0DEAD).all()   # the last CTA's masked lanes stored nothing
    assert stats["ctas"] == -(-n // 1024)
    assert ran and all(ran)   # every predicated load ran for many CTAs' warps at once


def test_vector_add_in_lock_step_gives_the_bits_of_warps_one_at_a_time():
    *_, ganged, _ = add(4096 + 48)
    *_, alone, _ = add(4096 + 48, lockstep=False)
    assert np.array_equal(ganged.view(np.uint32), alone.view(np.uint32))


def test_fixture_is_the_ptx_its_script_made():
    meta, ptx = fixture("add_f32")
    assert hashlib.sha256(ptx.encode()).hexdigest() == meta["ptx_sha256"]
    assert meta["command"].startswith("PYTHONPATH=. python scripts/fixtures/triton_elementwise.py")
    assert meta["block"] == [128, 1, 1] and meta["shared_bytes"] == 0
    assert source_is_unchanged("scripts/fixtures/triton_elementwise.py", meta["source_sha256"])
