"""Triton tutorial 10 (block-scaled matmul) on sm_100a, replayed from its compiled PTX (tests/fixtures/ptx/tutorial10,
made by scripts/fixtures/triton_tutorial10.py with Triton 3.9.0) with check_layouts on: the scale factors come through
5-D TMA descriptors over the tutorial's pre-shuffled layout and tcgen05.cp.32x128b.warpx4 copies them into tensor
memory (issue 23: the layout check called that source "not a tile", and with num_stages=2 the second k-tile's
tcgen05.cp over the scale columns was reported as a race). Every output bit equals tcemu.matmul's block-scaled sm100
model; the values equal a float64 numpy product within the accumulation's rounding."""
import json
import os

import ml_dtypes
import numpy as np
import pytest

import tcemu
import tcemu.ptx as tp
from tcemu.frontends.triton import TensorDescriptor, run_compiled

from paths import PTX_FIXTURES

T10 = os.path.join(PTX_FIXTURES, "tutorial10")
M, N, K, VEC = 128, 128, 256, 32


def _read(name):
    with open(os.path.join(T10, name + ".json")) as f:
        meta = json.load(f)
    with open(os.path.join(T10, name + ".ptx")) as f:
        return meta, f.read()


def inputs(seed=1):
    """e4m3 A (M, K), B (N, K) (every finite value), ue8m0 scales 2^-7 .. 2^6 in the tutorial's pre-shuffled layout
    (M / 128, K / VEC / 4, 32, 16) and as (rows, K / VEC) for the reference (the tutorial's unpack_scale)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (M, K), dtype=np.uint8)
    b = rng.integers(0, 256, (N, K), dtype=np.uint8)
    a[(a & 0x7F) == 0x7F], b[(b & 0x7F) == 0x7F] = 0x38, 0xB8
    sa, sb = (rng.integers(120, 134, (r // 128, K // VEC // 4, 32, 16), dtype=np.uint8) for r in (M, N))

    def unpack(s):
        return s.reshape(*s.shape[:2], 32, 4, 4).transpose(0, 3, 2, 1, 4).reshape(s.shape[0] * 128, s.shape[1] * 4)
    return a, b, sa, sb, unpack(sa), unpack(sb)


def launch(name, edit=None, **kw):
    meta, ptx = _read(name)
    if edit is not None:
        edited = edit(ptx)
        assert edited != ptx, "the planted bug did not apply"
        ptx = edited
    a, b, sa, sb, _, _ = inputs()
    c = np.zeros((M, N), np.float32)
    values = {"a_desc": TensorDescriptor(a.view(ml_dtypes.float8_e4m3fn), [128, 128]),
              "a_scale_desc": TensorDescriptor(sa.reshape(1, M // 128, K // VEC // 4, 2, 256), [1, 1, 1, 2, 256]),
              "b_desc": TensorDescriptor(b.view(ml_dtypes.float8_e4m3fn), [128, 128]),
              "b_scale_desc": TensorDescriptor(sb.reshape(1, N // 128, K // VEC // 4, 2, 256), [1, 1, 1, 2, 256]),
              "c_desc": TensorDescriptor(c, [128, 128])}
    stats = run_compiled(ptx, meta, values, grid=(1, 1, 1), check_layouts=True, **kw)
    return c, stats


@pytest.mark.parametrize("stages", [1, 2])
def test_tutorial10_mxfp8_equals_block_scaled_matmul(stages):
    meta, ptx = _read(f"t10_mxfp8_s{stages}")
    assert meta["opcode_census"]["tcgen05.cp.cta_group::1.warpx4.32x128b"] == 2 * stages   # (2: unrolled)
    assert "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.block32" in meta["opcode_census"]
    c, stats = launch(f"t10_mxfp8_s{stages}")
    a, b, _, _, sa, sb = inputs()
    want = tcemu.matmul(a, b.T, arch="sm100", dtype_a="e4m3", dtype_b="e4m3", kind="mxf8f6f4", scales=(sa, sb),
                        block_size_k=VEC, scale_type="ue8m0")
    assert np.array_equal(c.view(np.uint32), np.asarray(want, np.float32).view(np.uint32))
    A = a.view(ml_dtypes.float8_e4m3fn).astype(np.float64) * np.repeat(np.exp2(sa.astype(np.float64) - 127), VEC, 1)
    B = b.view(ml_dtypes.float8_e4m3fn).astype(np.float64) * np.repeat(np.exp2(sb.astype(np.float64) - 127), VEC, 1)
    ref = A @ B.T
    assert np.allclose(c, ref, rtol=2.0 ** -20, atol=np.abs(A) @ np.abs(B).T * 2.0 ** -22)


def test_tutorial10_scale_copy_from_another_thread_still_needs_the_commit():
    """Control: the second k-tile's scale copy issued by a different thread (thread 32 of warp 1, which does not
    issue the first k-tile's tcgen05 operations) is not ordered after them: reported."""
    meta, ptx = _read("t10_mxfp8_s2")
    assert ptx.count("@%p33 tcgen05.cp") == 1   # the second k-tile's A-scale copy, elected in warp 0
    with pytest.raises(tp.HazardError) as e:
        launch("t10_mxfp8_s2", edit=_other_thread_copies)
    msg = str(e.value)
    assert "@%thread32 tcgen05.cp" in msg
    assert "tcgen05.cp writes tensor memory lane 0, column" in msg and "issued by thread 0 (warp 0)" in msg


def _other_thread_copies(ptx):
    ptx = ptx.replace(".reg .b32 \t%r<240>;", ".reg .b32 \t%r<240>;\n\t.reg .b32 %tid_x;\n\t.reg .pred %thread32;", 1)
    return ptx.replace("@%p33 tcgen05.cp", "mov.u32 %tid_x, %tid.x;\n\tsetp.eq.u32 %thread32, %tid_x, 32;\n\t"
                                           "@%thread32 tcgen05.cp")


@pytest.mark.slow
@pytest.mark.needs_triton
@pytest.mark.parametrize("stages", [1, 2])
def test_triton_compiles_what_the_fixture_holds(stages):
    """With Triton installed: the fixture script compiles the same instructions (census) as the committed PTX."""
    pytest.importorskip("triton")
    import importlib.util   # the fixture script is not a module of tcemu (Triton: optional)
    path = os.path.join(os.path.dirname(PTX_FIXTURES), "..", "..", "scripts", "fixtures", "triton_tutorial10.py")
    spec = importlib.util.spec_from_file_location("triton_tutorial10", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    _, _, live = mod.build(f"t10_mxfp8_s{stages}")
    meta, _ = _read(f"t10_mxfp8_s{stages}")
    assert live["opcode_census"] == meta["opcode_census"] and live["shared_bytes"] == meta["shared_bytes"]
