"""wmma.load / wmma.mma / wmma.store (tcemu/ptx/ops/wmma.py) beyond the trace's packed matrices (the trace,
traces/wmma_sm90.npz, pins the layouts and the arithmetic): strides, shared memory, every memory layout, the
warp-synchronous rules and the forms not modelled. Values are small integers, so every expected D is exact and
computed here with integer numpy."""
import os

import ml_dtypes
import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.layout import wmma_fragments
from tcemu.ptx.errors import PtxUnsupportedWarning
from tcemu.traces import replay

from ptxkit import HEADER
from paths import PTX_FIXTURES, TRACES


def _kernel(shape, la, lb, lc, ld, space="global", strides=(None, None, None, None), before="", guard=""):
    m, n, k = wmma_fragments.SHAPES[shape]
    st = [f", {s}" if s is not None else "" for s in strides]
    vec = lambda p, c: "{" + ", ".join(f"%{p}{i}" for i in range(c)) + "}"   # noqa: E731
    a, b, c = vec("a", 8), vec("b", 8), vec("c", 8)
    copy = ""
    if space == "shared":   # stage A in shared memory first (a row-major 16-element-wide copy of what A reads)
        copy = """  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd9, %r3, 16;
  add.s64 %rd10, %rd0, %rd9;
  ld.global.v4.u32 {%r4, %r5, %r6, %r7}, [%rd10];
  mov.u32 %r8, smem;
  cvt.u64.u32 %rd11, %r8;
  add.s64 %rd11, %rd11, %rd9;
  st.shared.v4.u32 [%rd11], {%r4, %r5, %r6, %r7};
  bar.sync 0;
  mov.u32 %r8, smem;
  cvt.u64.u32 %rd0, %r8;
"""
    return HEADER + f""".shared .align 128 .b8 smem[2048];
.visible .entry w(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)
{{
  .reg .pred %p<4>;
  .reg .b32 %a<8>, %b<8>, %c<8>, %d<8>, %r<12>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd0, [pa];
  ld.param.u64 %rd1, [pb];
  ld.param.u64 %rd2, [pc];
  ld.param.u64 %rd3, [pd];
{before}{copy}  wmma.load.a.sync.aligned.{la}.{shape}{'.shared' if space == 'shared' else '.global'}.f16 {a}, [%rd0]{st[0]};
  wmma.load.b.sync.aligned.{lb}.{shape}.global.f16 {b}, [%rd1]{st[1]};
  wmma.load.c.sync.aligned.{lc}.{shape}.global.f32 {c}, [%rd2]{st[2]};
{guard}  wmma.mma.sync.aligned.{la}.{lb}.{shape}.f32.f32 {vec('d', 8)}, {a}, {b}, {c};
  wmma.store.d.sync.aligned.{ld}.{shape}.global.f32 [%rd3], {vec('d', 8)}{st[3]};
  ret;
}}
"""


def _spots(rows, cols, layout, stride):
    """Element offsets of a rows x cols matrix stored .row (rows `stride` apart) or .col (columns `stride` apart)."""
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    return r * stride + c if layout == "row" else c * stride + r


def _place(mat, layout, stride, dtype):
    """mat stored .row or .col with `stride`, -1 in the padding."""
    rows, cols = mat.shape
    buf = np.full((rows if layout == "row" else cols) * stride, -1, np.float64)
    buf[_spots(rows, cols, layout, stride)] = mat
    return buf.astype(dtype)


@pytest.mark.parametrize("shape", sorted(wmma_fragments.SHAPES))
@pytest.mark.parametrize("layouts", [("row", "col", "row", "row"), ("col", "row", "col", "col"),
                                     ("row", "row", "col", "row")])
def test_strided_matrices_in_every_layout(shape, layouts):
    m, n, k = wmma_fragments.SHAPES[shape]
    rng = np.random.default_rng(hash((shape, layouts)) % 2**32)
    A, B, C = rng.integers(-3, 4, (m, k)), rng.integers(-3, 4, (k, n)), rng.integers(-50, 50, (m, n))
    la, lb, lc, ld = layouts
    pads = [(m if la == "col" else k) + 8, (k if lb == "col" else n) + 8, (m if lc == "col" else n) + 4,
            (m if ld == "col" else n) + 4]
    a = _place(A, la, pads[0], np.float16)
    b = _place(B, lb, pads[1], np.float16)
    c = _place(C, lc, pads[2], np.float32)
    d = np.full(max(m, n) * pads[3], 7.5, np.float32)
    ptx.load(_kernel(shape, *layouts, strides=pads)).launch("w", grid=1, block=32, args=[a, b, c, d])
    spots = _spots(m, n, ld, pads[3])
    assert d[spots].astype(np.int64).tolist() == (A @ B + C).tolist()
    rest = np.ones(d.size, bool)
    rest[spots] = False
    assert (d[rest] == 7.5).all()   # the padding between rows (columns) is untouched


def test_a_from_shared_memory_with_the_default_stride():
    rng = np.random.default_rng(5)
    A, B, C = rng.integers(-3, 4, (16, 16)), rng.integers(-3, 4, (16, 16)), rng.integers(-9, 9, (16, 16))
    a, b, c = A.astype(np.float16).ravel(), B.T.astype(np.float16).ravel(), C.astype(np.float32).ravel()
    d = np.zeros(256, np.float32)
    ptx.load(_kernel("m16n16k16", "row", "col", "row", "row", space="shared")).launch(
        "w", grid=1, block=32, args=[a, b, c, d])
    assert d.reshape(16, 16).astype(np.int64).tolist() == (A @ B + C).tolist()


def _args():
    return [np.zeros(256, np.float16), np.zeros(256, np.float16), np.zeros(256, np.float32), np.zeros(256, np.float32)]


def test_a_diverged_warp_and_a_per_thread_address_are_hazards():
    text = _kernel("m16n16k16", "row", "col", "row", "row",
                   before="  mov.u32 %r9, %tid.x;\n  setp.lt.u32 %p2, %r9, 16;\n  @%p2 bra LATE;\n",
                   guard="LATE:\n")
    with pytest.raises(ptx.HazardError, match=r"wmma is warp-synchronous .* only lanes \[16, 17, .*31\] did"):
        ptx.load(text).launch("w", grid=1, block=32, args=_args())
    per_thread = "  mov.u32 %r9, %tid.x;\n  mul.wide.u32 %rd12, %r9, 2;\n  add.s64 %rd0, %rd0, %rd12;\n"
    with pytest.raises(ptx.HazardError, match="the matrix address must be the same in every executing thread, got"):
        ptx.load(_kernel("m16n16k16", "row", "col", "row", "row", before=per_thread)).launch(
            "w", grid=1, block=32, args=_args())


@pytest.mark.parametrize("form, phrase", [
    ("wmma.load.a.sync.aligned.row.m16n16k8.global.tf32 {%a0, %a1, %a2, %a3}, [%rd0];", "m16n16k8.tf32 fragments"),
    ("wmma.mma.sync.aligned.row.col.m16n16k16.s32.s8.s8.s32 {%d0, %d1, %d2, %d3, %d4, %d5, %d6, %d7}, "
     "{%a0, %a1}, {%b0, %b1}, {%c0, %c1, %c2, %c3, %c4, %c5, %c6, %c7};", "this wmma.mma form is not modelled")])
def test_forms_not_modelled_are_refused_by_name(form, phrase):
    text = HEADER + f""".visible .entry w(.param .u64 pa)
{{
  .reg .b32 %a<8>, %b<8>, %c<8>, %d<8>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd0, [pa];
  {form}
  ret;
}}
"""
    with pytest.warns(PtxUnsupportedWarning):
        mod = ptx.load(text)
        mod.program("w")
    with pytest.raises(ptx.PtxUnsupported, match=phrase):
        mod.launch("w", grid=1, block=32, args=[np.zeros(256, np.float16)])


def test_the_trace_replay_fails_on_a_wrong_layout_or_arithmetic(monkeypatch):
    real = wmma_fragments.coords

    def swapped(frag, shape, dtype):   # a plausible mistake: B's k and n swapped in m16n16k16
        r, c = real(frag, shape, dtype)
        return (c, r) if (frag, shape) == ("b", "m16n16k16") else (r, c)
    monkeypatch.setattr("tcemu.traces.kinds.wmma.coords", swapped)
    monkeypatch.setattr("tcemu.ptx.ops.wmma.coords", swapped)
    result = replay(os.path.join(TRACES, "wmma_sm90.npz"))
    bad = {name for name, g in result.groups.items() if g.cases_matched < g.cases}
    # the products stay right: load, mma and store agree with each other on any layout (PTX leaves it unspecified)
    assert not result.ok and bad == {"layout m16n16k16 b .f16", "layout m16n16k16 b .bf16"}
    monkeypatch.undo()
    from tcemu.ptx.ops import wmma as ops_wmma
    real_hmma = ops_wmma.hmma
    monkeypatch.setattr(ops_wmma, "hmma", lambda A, B, C, at, dt: real_hmma(A, B, C, at, dt) ^ 1)   # one ulp off
    result = replay(os.path.join(TRACES, "wmma_sm90.npz"))
    bad = {name for name, g in result.groups.items() if g.cases_matched < g.cases}
    assert bad == {name for name in result.groups if name.startswith("mma ")} and len(bad) == 6


def test_the_captures_own_kernels_give_the_h100s_outputs():
    """nvcc's PTX of scripts/capture/capture_wmma.cu (nvcuda::wmma as mma.h writes it) on the capture's inputs:
    every fragment element of `layouts` and every D element of `numerics` equal what the H100 wrote."""
    from tcemu.traces import load_trace
    trace = load_trace(os.path.join(TRACES, "wmma_sm90.npz"))
    cols, meta = trace.columns, trace.meta
    mod = ptx.load(os.path.join(PTX_FIXTURES, "capture_wmma.ptx"))
    idx = np.arange(512)
    out = np.full(1 << 18, -1, np.int32)
    mod.launch("_Z7layoutsPKvS0_S0_Pi", grid=1, block=32, args=[
        idx.astype(np.float16), idx.astype(ml_dtypes.bfloat16), idx.astype(np.float32), out])
    assert out[(1 << 18) - 1] == cols["layout"].size and np.array_equal(out[:cols["layout"].size], cols["layout"])
    cases, ia, ib, ic = meta["cases"], 0, 0, 0
    for cfg, (m, n, k, ta, tc) in enumerate(meta["configs"]):
        a = np.zeros((cases, 512), np.uint16)
        b = np.zeros((cases, 512), np.uint16)
        cw = np.uint32 if tc == "f32" else np.uint16
        c = np.zeros((cases, 2048 // np.dtype(cw).itemsize), cw)
        a[:, :m * k] = cols["a"][ia:ia + cases * m * k].reshape(cases, -1)
        b[:, :k * n] = cols["b"][ib:ib + cases * k * n].reshape(cases, -1)
        c[:, :m * n] = cols["c"][ic:ic + cases * m * n].reshape(cases, -1)
        d = np.zeros_like(c)
        mod.launch("_Z8numericsiPKcS0_S0_Pc", grid=cases, block=32, args=[np.int32(cfg), a, b, c, d])
        assert np.array_equal(d[:, :m * n].ravel(), cols["d"][ic:ic + cases * m * n].astype(cw)), (m, n, k, ta, tc)
        ia, ib, ic = ia + cases * m * k, ib + cases * k * n, ic + cases * m * n
