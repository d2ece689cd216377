"""The examples run, and give what the tensor core gives."""
import importlib.util
import os

import ml_dtypes
import numpy as np

import tcemu

from paths import EXAMPLES

HERE = EXAMPLES


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gemm_mainloop():
    ex = load("gemm_mainloop")
    c, ref = ex.main()
    assert c.dtype == np.float32 and c.shape == (ex.M, ex.N)
    assert np.abs(c - ref).max() <= 1e-5 * np.abs(ref).max()
    # The same chain written without TMA or swizzle (plain K-major tiles) gives the same bits:
    # the layout changes where bytes live, never what the tensor core computes.
    rng = np.random.default_rng(0)
    a = rng.standard_normal((ex.M, ex.K)).astype(ml_dtypes.bfloat16).view(np.uint16)
    b = rng.standard_normal((ex.N, ex.K)).astype(ml_dtypes.bfloat16).view(np.uint16)
    acc = None
    for kb in range(ex.K // 16):
        smem = tcemu.SharedMemory()
        da, db = tcemu.GmmaDescriptor(0x400, 128, 256), tcemu.GmmaDescriptor(0x2400, 128, 256)
        smem.write_operand(da, a[:, 16 * kb:16 * kb + 16], dtype="bf16")
        smem.write_operand(db, b[:, 16 * kb:16 * kb + 16], dtype="bf16")
        acc = tcemu.wgmma(smem, da, db, shape=f"m64n{ex.N}k16", dtype_a="bf16", dtype_b="bf16", dtype_d="f32", c=acc)
    assert np.array_equal(acc.view(np.uint32), c.view(np.uint32))


def test_blackwell_mainloop():
    ex = load("blackwell_mainloop")
    c, ref = ex.main()
    assert c.dtype == np.float32 and c.shape == (ex.M, ex.N)
    assert np.abs(c - ref).max() <= 1e-5 * np.abs(ref).max()
    a, b, sfa, sfb = ex.inputs()
    # The same chain from plain tiles, D as arrays and scale factors as arrays: the same bits.
    acc = None
    for kb in range(ex.K // 32):
        smem = tcemu.SharedMemory("sm100")
        da = tcemu.UmmaDescriptor(start_address=0x400, lbo=128, sbo=256, version=1)
        db = tcemu.UmmaDescriptor(start_address=0x8400, lbo=128, sbo=256, version=1)
        smem.write_operand(da, a[:, 32 * kb:32 * kb + 32], dtype="e4m3")
        smem.write_operand(db, b[:, 32 * kb:32 * kb + 32], dtype="e4m3")
        acc = tcemu.tcgen05_mma(smem, da, db, tcemu.InstrDescriptor("mxf8f6f4", "e4m3", "e4m3", m=ex.M, n=ex.N),
                                c=acc, scale_a=sfa[:, kb:kb + 1], scale_b=sfb[:, kb:kb + 1])
    assert np.array_equal(acc.view(np.uint32), c.view(np.uint32))
    # A wrong scale-factor id reads another K block's scales: a silently wrong result.
    assert not np.array_equal(ex.mainloop(a, b, sfa, sfb, a_scale_id=0).view(np.uint32), c.view(np.uint32))
