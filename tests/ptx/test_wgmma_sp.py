"""wgmma.mma_async.sp through tcemu.ptx: the kernel of tests/ptx/test_wgmma.py (tests/support/wgmma_kernel.py) with
the sparse form (stored A of K/2, a metadata register per thread, sp-sel). Expected D: tcemu.wgmma_sp
(silicon-verified: traces/wgmma_sp_*) on the same shared-memory image with the same metadata registers."""
import numpy as np
import pytest

import tcemu
import tcemu.ptx as ptx
from tcemu.hopper.sparse import meta_registers
from tcemu.layout.smem import SharedMemory

from wgmma_kernel import BASE, D, Form, _bits, kernel

N, K = 32, 32
A_DESC = D(BASE, 16, 1024, "128B")            # stored A: 64 x 16 bf16 (32 bytes of K per row)
B_DESC = D(BASE + 0x2000, 16, 1024, "128B")   # B: 32 x 32 bf16 (64 bytes of K per row)


def _case(seed, selector=1, nibble_fix=None):
    rng = np.random.default_rng(seed)
    stored = rng.integers(-4, 5, (64, K // 2))
    B = rng.integers(-4, 5, (N, K))
    pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    nib = np.array([[pairs[i][0] | pairs[i][1] << 2 for i in row] for row in rng.integers(0, 6, (64, K // 4))])
    if nibble_fix is not None:
        nib[nibble_fix] = 0b0000                  # repeated index 0: undefined metadata (PTX 9.7.15.6.1)
    meta = meta_registers(nib, "bf16", selector)
    smem = SharedMemory("sm90")
    smem.write_operand(A_DESC, _bits(stored, "bf16"), dtype="bf16")
    smem.write_operand(B_DESC, _bits(B, "bf16"), dtype="bf16")
    hi = int(np.flatnonzero(smem.written).max()) + 1
    image = smem.data[BASE:BASE + (hi - BASE + 15) // 16 * 16].copy()
    return smem, image, meta, stored, B, nib


def _run(image, meta, selector, edit=None):
    form = Form("m64n32k16", "f32", "bf16", "bf16", [A_DESC], [B_DESC])   # the dense kernel, rewritten below
    text = kernel(form, image.size // 4, hooks={"before_fence": "  mul.wide.u32 %rd23, %r0, 4;\n"
                                                                "  add.s64 %rd23, %rd5, %rd23;\n"
                                                                "  ld.global.u32 %r39, [%rd23];\n"})
    dense = "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16"
    assert dense in text
    text = text.replace(dense, "wgmma.mma_async.sp.sync.aligned.m64n32k32.f32.bf16.bf16")
    text = text.replace("%rd10, %rd11, %p2,", f"%rd10, %rd11, %r39, {selector}, %p2,")
    if edit:
        text = edit(text)
    out = np.zeros(128 * N // 2, np.uint32)
    mod = ptx.load(text)
    mod.launch("k", grid=1, block=128, args=[out, image.view(np.uint32), np.zeros(4, np.uint32), meta],
               shared_bytes=image.size)
    return out.reshape(128, N // 2)


@pytest.mark.parametrize("selector", [0, 1])
def test_sparse_wgmma_matches_the_model(selector):
    smem, image, meta, stored, B, nib = _case(11 + selector, selector)
    regs = _run(image, meta, selector)
    d = tcemu.wgmma_sp(smem, A_DESC.encode(), B_DESC.encode(), shape="m64n32k32", dtype_a="bf16", dtype_b="bf16",
                       dtype_d="f32", sparse_meta=meta, sparsity_selector=selector, scale_d=False)
    assert np.array_equal(regs, tcemu.to_d_registers(d.view(np.uint32), "f32"))
    # and exactly: every value is a small integer; stored element j of chunk c multiplies B column 4c + idx_j
    exact = np.zeros((64, N), np.int64)
    for m in range(64):
        for c in range(K // 4):
            i0, i1 = nib[m, c] & 3, nib[m, c] >> 2
            exact[m] += stored[m, 2 * c] * B[:, 4 * c + i0] + stored[m, 2 * c + 1] * B[:, 4 * c + i1]
    assert np.array_equal(d.astype(np.int64), exact)


def test_undefined_metadata_is_reported():
    smem, image, meta, *_ = _case(5, 0, nibble_fix=(3, 1))
    with pytest.raises(ptx.KernelFault, match="undefined"):
        _run(image, meta, 0)


def test_selector_outside_the_form_is_refused():
    smem, image, meta, *_ = _case(6, 0)
    with pytest.raises(ptx.PtxSyntaxError, match="sp-sel|selector"):
        _run(image, meta, 2)
