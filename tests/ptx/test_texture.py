"""tex / tld4 / txq / suld / sust / suq on texture and surface objects (tcemu/ptx/ops/texture.py, tcemu/ptx/texture.py).

Hand-written PTX over tcemu.ptx.texture_object / surface_object; every expected value is computed here with plain
numpy statements of the rules (CUDA Programming Guide "Texture Fetching", PTX ISA 9.7.10-11, and what the H100
showed: traces/texture_sm90.npz, replayed whole by tests/traces/test_traces.py and in part here)."""
import math
import os
import re

import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.ptx import texture as TX
from tcemu.ptx.errors import PtxUnsupportedWarning
from tcemu.traces import load_trace, replay

from ptxkit import HEADER
from paths import TRACES

TRACE = os.path.join(TRACES, "texture_sm90.npz")


def _kernel(body, coord_regs=".f32"):
    """One thread per coordinate: x = xs[i], y = ys[i] (words), then BODY writes %r0..%r3, stored at out[4 i]."""
    return HEADER + f""".visible .entry k(.param .u64 t, .param .u64 px, .param .u64 py, .param .u64 po)
{{
  .reg .pred %p;
  .reg .b32 %r<16>;
  .reg .f32 %f<16>;
  .reg .b64 %rd<8>;
  mov.u32 %r4, %tid.x;
  ld.param.u64 %rd1, [t];
  ld.param.u64 %rd2, [px];
  ld.param.u64 %rd3, [py];
  ld.param.u64 %rd4, [po];
  mul.wide.u32 %rd5, %r4, 4;
  add.s64 %rd2, %rd2, %rd5;
  add.s64 %rd3, %rd3, %rd5;
  ld.global.b32 %r10, [%rd2];
  ld.global.b32 %r11, [%rd3];
  mov.b32 %f10, %r10;
  mov.b32 %f11, %r11;
  {body}
  mul.wide.u32 %rd5, %r4, 16;
  add.s64 %rd4, %rd4, %rd5;
  st.global.v4.b32 [%rd4], {{%r0, %r1, %r2, %r3}};
  ret;
}}
"""


def _run(body, obj, xs, ys=None):
    xs = np.asarray(xs)
    xw = xs.astype(np.float32).view(np.uint32) if xs.dtype.kind == "f" else xs.astype(np.int32).view(np.uint32)
    ys = np.zeros(len(xs), np.uint32) if ys is None else np.asarray(ys)
    yw = ys.astype(np.float32).view(np.uint32) if ys.dtype.kind == "f" else ys.astype(np.int32).view(np.uint32)
    out = np.zeros((len(xs), 4), np.uint32)
    ptx.load(_kernel(body)).launch("k", grid=1, block=len(xs), args=[obj, xw, yw, out])
    return out


TEX2D = "tex.2d.v4.f32.f32 {%r0, %r1, %r2, %r3}, [%rd1, {%f10, %f11}];"
TEX1D = "tex.1d.v4.f32.f32 {%r0, %r1, %r2, %r3}, [%rd1, {%f10}];"
GRID = np.float32([-2.5, -1, -0.25, 0, 0.5, 1.99, 2, 3.5, 4.75, 7.9, 8, 11.25])
DATA = (np.arange(32, dtype=np.float32) * 0.75 - 5).reshape(4, 8)   # 8 wide, 4 high


def _index(x, n, mode, normalized):
    """Texel index of a coordinate (float64 math on float32 inputs: exact here) and whether it is outside."""
    i = np.floor(np.float64(x) * (n if normalized else 1)).astype(np.int64)
    if mode == "wrap" and normalized:
        return i % n, False
    if mode == "mirror" and normalized:
        m = i % (2 * n)
        return np.where(m >= n, 2 * n - 1 - m, m), False
    return np.clip(i, 0, n - 1), (i < 0) | (i >= n) if mode == "border" else False


@pytest.mark.parametrize("mode", ["clamp", "border", "wrap", "mirror"])
@pytest.mark.parametrize("normalized", [False, True])
def test_nearest_point_2d_in_every_address_mode(mode, normalized):
    xs = np.repeat(GRID, 3)
    ys = np.tile(np.float32([-1.5, 1.25, 3.75]), len(GRID))
    if normalized:
        xs, ys = xs / np.float32(8), ys / np.float32(4)   # exact: powers of two
    obj = ptx.texture_object(DATA, address=mode, normalized_coords=normalized, border=(9.5, 1, 2, 3))
    got = _run(TEX2D, obj, xs, ys)
    ix, ox = _index(xs, 8, mode, normalized)
    iy, oy = _index(ys, 4, mode, normalized)
    want = np.where(ox | oy, np.float32(9.5), DATA[iy, ix])   # wrap / mirror without normalized coords: clamp
    assert got[:, 0].tolist() == want.astype(np.float32).view(np.uint32).tolist()
    assert not got[:, 1:].any()   # a one-channel texture: y, z and w read 0 (the H100 gives 0 for w too)


def test_formats_and_read_modes():
    u8 = np.array([[0, 51, 255, 128], [7, 9, 11, 13]], np.uint8).T.copy()   # 4 texels x 2 channels
    got = _run(TEX1D, ptx.texture_object(u8, channels=2, normalized_read=True), np.float32([0.5, 1.5, 2.5, 3.5]))
    want = (u8.astype(np.float64) / 255).astype(np.float32).view(np.uint32)
    assert got[:, :2].tolist() == want.tolist() and not got[:, 2:].any()
    s8 = np.array([-128, -127, -1, 127], np.int8)
    got = _run(TEX1D, ptx.texture_object(s8, normalized_read=True), np.float32([0.5, 1.5, 2.5, 3.5]))
    assert got[:, 0].tolist() == np.float32([-1, -1, -1 / 127, 1]).view(np.uint32).tolist()   # max(v / 127, -1)
    s16 = np.array([-30000, -2, 5, 32767], np.int16)
    elem = "tex.1d.v4.s32.f32 {%r0, %r1, %r2, %r3}, [%rd1, {%f10}];"
    got = _run(elem, ptx.texture_object(s16), np.float32([0.5, 1.5, 2.5, 3.5]))
    assert got[:, 0].view(np.int32).tolist() == [-30000, -2, 5, 32767]   # sign-extended element read
    f16 = np.array([1.5, -0.000123, 65504, 2 ** -24], np.float16)
    got = _run(TEX1D, ptx.texture_object(f16), np.float32([0.5, 1.5, 2.5, 3.5]))
    assert got[:, 0].tolist() == f16.astype(np.float32).view(np.uint32).tolist()
    rgba = np.arange(16, dtype=np.uint32).reshape(4, 4) * 1000
    got = _run("tex.1d.v4.u32.f32 {%r0, %r1, %r2, %r3}, [%rd1, {%f10}];", ptx.texture_object(rgba, channels=4),
               np.float32([3.2, 0.1]))
    assert got.tolist() == [rgba[3].tolist(), rgba[0].tolist()]


def test_border_colour_of_each_read():
    xs = np.float32([-1, 9])
    got = _run(TEX1D, ptx.texture_object(np.zeros(4, np.uint8), address="border", normalized_read=True,
                                         border=(0.5, 0.25, -1, 2)), xs)
    # rounded to 1/255 steps, ties toward zero (0.5 * 255 = 127.5 reads 127 / 255 on the H100); missing channels 0
    assert got[0].tolist() == [np.float32(127 / 255).view(np.uint32), 0, 0, 0]
    got = _run("tex.1d.v4.u32.f32 {%r0, %r1, %r2, %r3}, [%rd1, {%f10}];",
               ptx.texture_object(np.zeros(4, np.uint32), address="border", border=(0.25, 0, 0, 0)), xs)
    assert got[1, 0] == np.float32(0.25).view(np.uint32)   # an integer element read: the float's bits


def test_tex1dfetch_of_linear_memory_reads_zero_outside():
    data = np.arange(10, dtype=np.int32) * 3 - 7
    fetch = "tex.1d.v4.s32.s32 {%r0, %r1, %r2, %r3}, [%rd1, {%r10}];"
    idx = np.array([-3, -1, 0, 4, 9, 10, 1 << 30], np.int32)
    got = _run(fetch, ptx.texture_object(data, resource="linear"), idx)
    want = np.where((idx >= 0) & (idx < 10), data[np.clip(idx, 0, 9)], 0)
    assert got[:, 0].view(np.int32).tolist() == want.tolist()


def test_tld4_gathers_one_component_of_the_footprint():
    data = np.arange(8 * 4 * 4, dtype=np.float32).reshape(4, 8, 4)
    body = "tld4.b.2d.v4.f32.f32 {%r0, %r1, %r2, %r3}, [%rd1, {%f10, %f11}];"
    got = _run(body, ptx.texture_object(data, channels=4), np.float32([3.0, 0.2]), np.float32([2.0, 0.2]))
    # footprint from floor(x - 0.5): (2..3, 1..2) and, clamped, (0..0, 0..0); order (i0,j1) (i1,j1) (i1,j0) (i0,j0)
    want0 = [data[2, 2, 2], data[2, 3, 2], data[1, 3, 2], data[1, 2, 2]]
    assert got[0].tolist() == np.float32(want0).view(np.uint32).tolist()
    assert got[1].tolist() == [np.float32(data[0, 0, 2]).view(np.uint32)] * 4


def test_txq_and_suq():
    obj = ptx.texture_object(DATA, address=("wrap", "border"), normalized_coords=True)
    body = """txq.width.b32 %r0, [%rd1];
  txq.height.b32 %r1, [%rd1];
  txq.normalized_coords.b32 %r2, [%rd1];
  txq.addr_mode_1.b32 %r3, [%rd1];"""
    assert _run(body, obj, np.float32([0]))[0].tolist() == [8, 4, 1, 3]
    body = "suq.width.b32 %r0, [%rd1];\n  suq.height.b32 %r1, [%rd1];\n  mov.b32 %r2, 0;\n  mov.b32 %r3, 0;"
    assert _run(body, ptx.surface_object(DATA), np.float32([0]))[0].tolist() == [8, 4, 0, 0]


SULD = "suld.b.2d.b32.{mode} {{%r0}}, [%rd1, {{%r10, %r11}}];\n  mov.b32 %r1, 0;\n  mov.b32 %r2, 0;\n  mov.b32 %r3, 0;"


def test_surface_reads_clamp_and_zero():
    surf = np.arange(24, dtype=np.uint32).reshape(4, 6) + 100
    bx = np.array([-8, 0, 4, 20, 24, 40], np.int32)   # byte coordinates
    by = np.array([1, -1, 2, 3, 4, 1], np.int32)
    clamp = _run(SULD.format(mode="clamp"), ptx.surface_object(surf), bx, by)
    assert clamp[:, 0].tolist() == surf[np.clip(by, 0, 3), np.clip(bx // 4, 0, 5)].tolist()
    zero = _run(SULD.format(mode="zero"), ptx.surface_object(surf), bx, by)
    inside = (bx >= 0) & (bx <= 20) & (by >= 0) & (by <= 3)
    assert zero[:, 0].tolist() == np.where(inside, surf[np.clip(by, 0, 3), np.clip(bx // 4, 0, 5)], 0).tolist()


def test_surface_stores_and_their_out_of_range_modes():
    surf = np.zeros((2, 4), np.uint32)
    store = """sust.b.2d.b32.{mode} [%rd1, {{%r10, %r11}}], {{%r4}};
  mov.b32 %r0, 0;\n  mov.b32 %r1, 0;\n  mov.b32 %r2, 0;\n  mov.b32 %r3, 0;"""
    _run(store.format(mode="zero"), ptx.surface_object(surf), np.int32([0, 4, 12, 16, -4]), np.int32([0, 1, 1, 0, 0]))
    assert surf.tolist() == [[0, 0, 0, 0], [0, 1, 0, 2]]   # lanes 3 and 4 fall outside: dropped
    with pytest.raises(ptx.KernelFault, match=r"thread 1: surface coordinates \(16, 0\) lie outside the 4 x 2 "
                                              r"surface of 4-byte elements \(.trap; x is a byte coordinate\)"):
        _run(store.format(mode="trap"), ptx.surface_object(surf), np.int32([12, 16]), np.int32([0, 0]))
    with pytest.raises(ptx.KernelFault, match="thread 0: surface byte coordinate x = 2 is not a multiple of the "
                                              "4-byte access"):
        _run(SULD.format(mode="trap"), ptx.surface_object(surf), np.int32([2]), np.int32([0]))


def test_a_handle_pointing_at_no_header_is_a_kernel_fault():
    good = ptx.texture_object(DATA)
    assert _run(TEX2D, good, np.float32([1.5]), np.float32([2.5]))[0, 0] == DATA[2, 1].view(np.uint32)   # control
    with pytest.raises(ptx.KernelFault, match=r"tex.2d.v4.f32.f32 .*: texture handle 0x1000 points at no texture "
                                              r"or surface header"):
        _run(TEX2D, 0x1000, np.float32([1.5]), np.float32([2.5]))
    # a mapped buffer that is no header: the magic names the rule
    with pytest.raises(ptx.KernelFault, match=r"texture handle 0x[0-9a-f]+: no texture or surface header here "
                                              r"\(magic b'\\x00\\x00\\x00\\x00'"):
        _run(TEX2D, np.zeros(128, np.uint8), np.float32([1.5]), np.float32([2.5]))
    with pytest.raises(ptx.KernelFault, match="surface handle .* names a texture object"):
        _run(SULD.format(mode="trap"), good, np.int32([0]), np.int32([0]))


@pytest.mark.parametrize("body, phrase", [
    ("tex.level.2d.v4.f32.f32 {%r0, %r1, %r2, %r3}, [%rd1, {%f10, %f11}], %f10;", "tex.level: mipmapped"),
    ("tex.grad.2d.v4.f32.f32 {%r0, %r1, %r2, %r3}, [%rd1, {%f10, %f11}], {%f10, %f11}, {%f10, %f11};",
     "tex.grad: mipmapped"),
    ("tex.cube.v4.f32.f32 {%r0, %r1, %r2, %r3}, [%rd1, {%f10, %f11, %f10, %f11}];", ".cube textures are not modelled"),
    ("tex.2dms.v4.s32.s32 {%r0, %r1, %r2, %r3}, [%rd1, {%r10, %r10, %r11, %r11}];", ".2dms textures are not modelled"),
    ("sust.p.1d.v4.b32.trap [%rd1, {%r10}], {%r0, %r1, %r2, %r3};", "sust.p (formatted surface access)"),
])
def test_forms_not_modelled_are_refused_by_name(body, phrase):
    with pytest.warns(PtxUnsupportedWarning, match="refused if executed"), \
            pytest.raises(ptx.PtxUnsupported, match=re.escape(phrase)):
        _run(body, ptx.texture_object(DATA), np.float32([0]))


# ---- linear filtering: the rule as measured (traces/texture_sm90.npz), restated here with Python integers

def _filter_float_ref(terms, p):
    """sum w v / 256 the H100's way, one point: texels with a weight aligned to the largest (exponent at least
    the smallest normal's), cut toward zero 4 bits below its last mantissa bit, summed exactly, rounded to p bits
    (not below the subnormal step), ties away from zero. p = 24 (float32) or 11 (f16)."""
    emin, rmin = (-126, -149) if p == 24 else (-14, -24)
    live = [(w, v) for w, v in terms if w and v != 0]
    if not live:
        return 0.0
    top = max(max(math.frexp(v)[1] - 1, emin) for _, v in live)
    lsb = top - (p - 1 + 4)
    tot = sum(w * int(math.ldexp(v, -lsb)) for w, v in live)   # int() truncates toward zero
    exp = lsb - 8
    step = max(abs(tot).bit_length() - 1 + exp - p + 1, rmin)
    if step > exp:
        sh = step - exp
        mag = (abs(tot) + (1 << (sh - 1))) >> sh
        return math.copysign(math.ldexp(mag, step), tot)
    return math.ldexp(tot, exp)


def _bits(v):
    return int(np.float32(v).view(np.uint32))


def test_linear_filtering_1d_float32_is_the_aligned_sum_rounded_once():
    """Two H100 results hard-coded from the trace (case 17: a = 57, one ulp below the exactly rounded sum; case 415:
    a = 254 with cancellation, 24 ulps from it), then a sweep of every weight over random texels against the rule."""
    t = np.float32([float.fromhex("0x1.3958fap-1"), float.fromhex("0x1.a73736p-7"), float.fromhex("0x1.db5ed0p+5"),
                    -float.fromhex("0x1.13ca9ep-1")])
    x = np.float32([0.5 + 57 / 256, 2.5 + 254 / 256])
    got = _run(TEX1D, ptx.texture_object(t, filter="linear"), x)[:, 0]
    assert [int(g) for g in got] == [0x3ef50d17, 0xbd8fce6b]
    exact = [np.float32((199 * float(t[0]) + 57 * float(t[1])) / 256),
             np.float32((2 * float(t[2]) + 254 * float(t[3])) / 256)]
    assert [_bits(e) for e in exact] != [0x3ef50d17, 0xbd8fce6b]   # what the rule is not: one rounding of the exact sum
    rng = np.random.default_rng(3)
    tex = (rng.choice([-1, 1], 8) * np.exp2(rng.integers(-12, 12, 8)) * rng.uniform(1, 2, 8)).astype(np.float32)
    a = np.arange(256)
    xs = np.float32(np.repeat(np.arange(1, 5), 256) + np.tile(a, 4) / 256 + 0.5)   # 1,024 lanes
    got = _run(TEX1D, ptx.texture_object(tex, filter="linear"), xs)
    want = [_bits(_filter_float_ref([(256 - k % 256, float(tex[k // 256 + 1])), (k % 256, float(tex[k // 256 + 2]))],
                                    24)) for k in range(len(xs))]
    assert [int(g) for g in got[:, 0]] == want and not got[:, 1:].any()


def test_linear_filtering_2d_weights_and_the_f16_subnormal_step():
    """2-D: the corner weight a b / 256 rounded half up, the others what is left (H100, trace case 288: x = 1.75,
    y = 1.1953125, a = 64, b = 178, all four products tie at .5); f16: to f16 precision with its subnormal step
    (trace case 50: -0x1.4a8p-15)."""
    rows = [["-0x1.32c4c4p+5", "-0x1.83db3ep-3"], ["0x1.ad25bcp-6", "-0x1.5da546p-1"]]
    tex = np.zeros((4, 8), np.float32)
    tex[0:2, 1:3] = [[float.fromhex(v) for v in r] for r in rows]
    got = _run(TEX2D, ptx.texture_object(tex, filter="linear"), np.float32([1.75]), np.float32([1.1953125]))
    assert int(got[0, 0]) == 0xc10f5438
    a, b = 64, 178
    ab = (a * b + 128) >> 8
    want = _filter_float_ref([(256 - a - b + ab, float(tex[0, 1])), (a - ab, float(tex[0, 2])),
                              (b - ab, float(tex[1, 1])), (ab, float(tex[1, 2]))], 24)
    assert _bits(want) == 0xc10f5438
    h = np.float16([float.fromhex("-0x1.a4p-17"), float.fromhex("-0x1.f7p-14")])
    got = _run(TEX1D, ptx.texture_object(h, filter="linear"), np.float32([0.75]))
    assert int(got[0, 0]) == 0xb8254000 == _bits(_filter_float_ref([(192, float(h[0])), (64, float(h[1]))], 11))


def test_linear_filtering_1d_border_mode_gives_the_border_row_half():
    """A 1-D texture filters as row 0 of a 2-D one at y - 0.5 = -0.5: in border mode row -1 is the border colour
    (the trace's 1-D border sweeps: x = 0.5 reads (border + t0) / 2)."""
    t = np.float32([3.0, -5.0, 0.75, 8.0])
    obj = ptx.texture_object(t, filter="linear", address="border", border=(0.25, 0, 0, 0))
    xs = np.float32([0.5, 1.5, 1.75, 1.875, -0.5, 4.5])
    got = _run(TEX1D, obj, xs)[:, 0]
    want = []
    for x in xs:
        f = math.floor((float(x) - 0.5) * 256 + 0.5)
        i, a = f >> 8, f & 255
        tex = lambda j: float(t[j]) if 0 <= j < 4 else 0.25   # noqa: E731
        half = (a + 1) >> 1
        want.append(_bits(_filter_float_ref([(128, 0.25), (128 - half, tex(i)), (half, tex(i + 1))], 24)))
    assert [int(g) for g in got] == want
    assert int(got[0]) == _bits((0.25 + 3.0) / 2)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16])
def test_linear_filtering_of_normalized_reads_in_integer_steps(dtype):
    """8/16-bit normalized reads: Y = sum w k over the integer steps, to a 16-bit unorm u / 65535 or snorm
    s / 32767 (clamped at -1), read as the nearest float32. H100 (trace case 164): s8 (30, 112) at a = 2 reads
    0x3e7709ee, one step below Y * 32767 / 127 / 256 rounded."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(5)
    k = rng.integers(info.min, info.max, 12, endpoint=True).astype(dtype)
    k[:3] = [info.min, info.max, 0]
    xs = np.float32(np.repeat(np.arange(0, 11), 16) + np.tile(np.arange(0, 256, 16), 11) / 256 + 0.5)
    got = _run(TEX1D, ptx.texture_object(k, filter="linear", normalized_read=True), xs)[:, 0]
    want = []
    for x in xs:
        f = math.floor((float(x) - 0.5) * 256 + 0.5)
        i, a = f >> 8, f & 255
        y = (256 - a) * int(k[i]) + a * int(k[min(i + 1, 11)])
        if dtype == np.uint8:
            v = (y + ((y + 128) >> 8)) / 65535
        elif dtype == np.int8:
            v = max(y + ((y + 64 + ((y >> 12) << 4)) >> 7), -32767) / 32767
        elif dtype == np.uint16:
            v = ((y + 128) >> 8) / 65535
        else:
            v = max((y + 128) >> 8, -32767) / 32767
        want.append(_bits(v))
    assert [int(g) for g in got] == want
    if dtype == np.int8:
        s8 = np.int8([30, 112])
        got = _run(TEX1D, ptx.texture_object(s8, filter="linear", normalized_read=True), np.float32([0.5 + 2 / 256]))
        assert int(got[0, 0]) == 0x3e7709ee != _bits(round((254 * 30 + 2 * 112) * 32767 / 127 / 256) / 32767)


def test_linear_filtering_stays_refused_where_not_measured():
    vol = np.ones((2, 2, 2), np.float32)
    body3 = "tex.3d.v4.f32.f32 {%r0, %r1, %r2, %r3}, [%rd1, {%f10, %f10, %f10, %f10}];"
    with pytest.raises(ptx.PtxUnsupported, match="trilinear filtering of 3-D textures is not modelled"):
        _run(body3, ptx.texture_object(vol, filter="linear"), np.float32([0.7]))
    bodya = "tex.a1d.v4.f32.f32 {%r0, %r1, %r2, %r3}, [%rd1, {%r5, %f10}];"
    with pytest.raises(ptx.PtxUnsupported, match="linear filtering of layered textures is not modelled"):
        _run("mov.b32 %r5, 0;\n  " + bodya, ptx.texture_object(np.ones((2, 4), np.float32), filter="linear",
                                                                layered=True), np.float32([0.7]))
    with pytest.raises(ptx.PtxUnsupported, match="address modes x and y not both border"):
        _run(TEX1D, ptx.texture_object(np.ones(4, np.float32), filter="linear", address=["border", "clamp"]),
             np.float32([0.7]))
    with pytest.raises(ptx.PtxUnsupported, match=r"tex.1d.v4.f32.f32: linear filtering of an infinite or NaN texel"):
        _run(TEX1D, ptx.texture_object(np.float32([1, np.inf, 2]), filter="linear"), np.float32([1.2]))
    # a weight-0 infinite texel is not read into the sum: x = 0.5 is texel 0 alone
    assert int(_run(TEX1D, ptx.texture_object(np.float32([1, np.inf]), filter="linear"), np.float32([0.5]))[0, 0]) \
        == _bits(1.0)
    with pytest.raises(ptx.PtxError, match="linear filtering needs a float read"):   # as CUDA refuses it
        ptx.texture_object(np.zeros(4, np.uint8), filter="linear")


def test_the_header_round_trips_and_its_rules_are_checked():
    d = TX.TextureDesc(resource=0, dims=2, base=0x1234_5600, width=8, height=4, pitch=32, slice=128,
                       bits=(16, 16, 0, 0), kind=0, address=(3, 2, 1), filter=0, normalized_coords=True,
                       normalized_read=True, border=(0.5, -1, 2, 3))
    back = TX.decode(d.to_bytes())
    assert (back.base, back.extent, back.bits, back.address, back.normalized_read, back.border) == \
        (0x1234_5600, [8, 4], (16, 16, 0, 0), (3, 2, 1), True, (0.5, -1.0, 2.0, 3.0))
    for change, rule in [(dict(bits=(8, 8, 8, 0)), "1, 2 or 4 channels"),
                         (dict(kind=2, normalized_read=True), "cudaErrorInvalidNormSetting"),
                         (dict(normalized_read=False, filter=1), "cudaErrorInvalidFilterSetting"),
                         (dict(width=0), "empty dimension")]:
        bad = TX.TextureDesc(**{**d.__dict__, "extent": [], **change})
        with pytest.raises(ptx.PtxError, match=rule):
            TX.decode(bad.to_bytes())


def _subset(trace, rows):
    """The trace with only the case rows `rows` (the columns they index stay whole)."""
    cols = dict(trace.columns, cases=trace.columns["cases"][rows], status=trace.columns["status"][rows])
    return type(trace)(trace.path, trace.meta, cols)


def test_a_sample_of_the_trace_replays_and_a_wrong_rule_fails_it(monkeypatch):
    """Four H100 cases (every address mode of a 1-D float texture, unnormalized): exact; then the replay of the same
    cases with mirror acting on coordinates rather than texel indices must fail (planted bug)."""
    trace = load_trace(TRACE)
    cases = trace.columns["cases"]
    pick = [i for i in range(len(cases)) if cases[i, 8] == 0 and cases[i, 10] == 1 and cases[i, 2] == 32
            and cases[i, 6] == 2 and cases[i, 3] == 0 and cases[i, 14] == 0 and cases[i, 11] == 16][:4]
    assert len(pick) == 4
    result = replay(_subset(trace, pick))
    assert result.ok and sum(g.values for g in result.groups.values()) == 4 * 234 * 4
    real = TX.resolve
    monkeypatch.setattr(TX, "resolve", lambda i, n, mode, norm: real(i, n, 1 if mode == 2 else mode, norm))
    result = replay(_subset(trace, pick))
    assert not result.ok and "address mode 2, normalized 1" in result.mismatches[0]


def test_the_trace_linear_filter_sample_replays_and_wrong_rules_fail_it(monkeypatch):
    """H100 linear-filter cases (1-D float32 fine sweep, 2-D float32 fine sweep, 1-D s8 and f16): exact; then
    planted wrong rules must fail them: 3 guard bits instead of 4, and 2-D corner weights each rounded alone."""
    trace = load_trace(TRACE)
    c = trace.columns["cases"].astype(np.int64)
    lin = (c[:, 8] == 1) & (c[:, 14] == 0) & (trace.columns["status"] == 0)
    pick = [int(np.flatnonzero(lin & (c[:, 0] == 1) & (c[:, 2] == 32) & (c[:, 3] == 0) & (c[:, 6] == 2)
                               & (c[:, 15] == 5120))[0]),
            int(np.flatnonzero(lin & (c[:, 0] == 2) & (c[:, 2] == 32) & (c[:, 3] == 0) & (c[:, 15] == 4096))[0]),
            int(np.flatnonzero(lin & (c[:, 2] == 8) & (c[:, 6] == 0) & (c[:, 15] == 5120))[0]),
            int(np.flatnonzero(lin & (c[:, 2] == 16) & (c[:, 6] == 2) & (c[:, 15] == 5120))[0])]
    result = replay(_subset(trace, pick))
    assert result.ok and sum(g.values for g in result.groups.values()) == 4 * (3 * 5120 + 4096)
    monkeypatch.setattr(TX, "FILTER_GUARD_BITS", 3)
    result = replay(_subset(trace, pick[:1]))
    assert not result.ok and "tex 1d linear" in result.mismatches[0]
    monkeypatch.undo()
    real = TX.filter_weights
    monkeypatch.setattr(TX, "filter_weights", lambda al: real(al) if len(al) == 1 else [
        (p, (w0 * w1 + 128) >> 8) for p, w0, w1 in [((0, 0), 256 - al[0], 256 - al[1]), ((1, 0), al[0], 256 - al[1]),
                                                      ((0, 1), 256 - al[0], al[1]), ((1, 1), al[0], al[1])]])
    result = replay(_subset(trace, pick[1:2]))
    assert not result.ok and "tex 2d linear" in result.mismatches[0]


def test_3d_and_layered_textures_and_integer_coordinates():
    vol = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4) * 2 + 1   # (depth, height, width)
    body = "tex.3d.v4.f32.f32 {%r0, %r1, %r2, %r3}, [%rd1, {%f10, %f11, %f11, %f11}];"
    xs, ys = np.float32([0.5, 3.9, -2, 2.5]), np.float32([0.2, 1.7, 2.5, 9])
    got = _run(body, ptx.texture_object(vol), xs, ys)   # y is also z here: clamp each
    ix, iy = np.clip(np.floor(xs).astype(int), 0, 3), np.floor(ys).astype(int)
    assert got[:, 0].tolist() == vol[np.clip(iy, 0, 1), np.clip(iy, 0, 2), ix].view(np.uint32).tolist()
    layers = np.arange(3 * 5, dtype=np.float32).reshape(3, 5) - 4   # 3 layers of 5 texels
    obj = ptx.texture_object(layers, layered=True)
    body = "tex.a1d.v4.f32.f32 {%r0, %r1, %r2, %r3}, [%rd1, {%r11, %f10}];"
    # the layer is an unsigned index (PTX 9.7.10.3), clamped to the last layer: -1 reads layer 2
    got = _run(body, obj, np.float32([1.5, 4.5, 0.5, 2.5]), np.int32([0, 2, 7, -1]))
    assert got[:, 0].tolist() == layers[[0, 2, 2, 2], [1, 4, 0, 2]].view(np.uint32).tolist()
    fetch = "tex.2d.v4.f32.s32 {%r0, %r1, %r2, %r3}, [%rd1, {%r10, %r11}];"   # integer texel coordinates
    got = _run(fetch, ptx.texture_object(DATA), np.int32([3, -5, 9]), np.int32([1, 2, 3]))
    assert got[:, 0].tolist() == DATA[[1, 2, 3], [3, 0, 7]].view(np.uint32).tolist()


# ---- a gang's warps sample together (the gang version of tex / tld4: tcemu/ptx/ops/texture.py)

def _gang_kernel(body):
    """_kernel with thread i = %ctaid.x * %ntid.x + %tid.x, every eighth thread's BODY predicated off (its words
    stay 7)."""
    keep = ("mov.b32 %r0, 7;\n  mov.b32 %r1, 7;\n  mov.b32 %r2, 7;\n  mov.b32 %r3, 7;\n  and.b32 %r7, %r4, 7;\n"
            "  setp.ne.u32 %p, %r7, 3;\n  @%p ")
    return _kernel(keep + body).replace("  mov.u32 %r4, %tid.x;\n", "  mov.u32 %r4, %tid.x;\n  mov.u32 %r5, %ctaid.x;\n"
                                                                   "  mov.u32 %r6, %ntid.x;\n  mad.lo.u32 %r4, %r5, %r6, %r4;\n")


@pytest.mark.parametrize("body, obj", [
    (TEX2D, lambda: ptx.texture_object(DATA, filter="linear", address="border", border=(0.5, 0, 0, 0))),
    ("tld4.g.2d.v4.f32.f32 {%r0, %r1, %r2, %r3}, [%rd1, {%f10, %f11}];",
     lambda: ptx.texture_object(np.arange(8 * 4 * 2, dtype=np.float32).reshape(4, 8, 2), channels=2)),
    ("tex.a1d.v4.f32.f32 {%r0, %r1, %r2, %r3}, [%rd1, {%r11, %f10}];",
     lambda: ptx.texture_object(np.arange(3 * 5, dtype=np.float32).reshape(3, 5) - 4, layered=True)),
], ids=["2d linear", "tld4", "layered"])
def test_the_warps_of_several_ctas_sample_as_one_gang(body, obj, monkeypatch):
    """3 CTAs of 3 warps, every eighth thread predicated off: the same bits as the warps one at a time (which
    tests above and the trace pin down), from one sample() per CTA wave instead of one per warp."""
    rng = np.random.default_rng(5)
    n = 3 * 96
    xs = rng.uniform(-3, 11, n).astype(np.float32).view(np.uint32)
    ys = (rng.uniform(-2, 6, n).astype(np.float32).view(np.uint32) if "a1d" not in body
          else rng.integers(0, 4, n).astype(np.uint32))
    mod = ptx.load(_gang_kernel(body))
    calls = []
    real = TX.sample
    monkeypatch.setattr(TX, "sample", lambda *a, **k: calls.append(a[1][0].size) or real(*a, **k))
    runs = {}
    for how, kw in (("gang", {}), ("alone", {"lockstep": False})):
        calls.clear()
        out = np.zeros((n, 4), np.uint32)
        mod.launch("k", grid=3, block=96, args=[obj(), xs, ys, out], **kw)
        runs[how] = out, list(calls)
    (gang, gang_calls), (alone, alone_calls) = runs["gang"], runs["alone"]
    assert np.array_equal(gang, alone)
    assert (gang[np.arange(n) % 8 == 3] == 7).all() and not (gang[np.arange(n) % 8 != 3] == 7).all()
    assert alone_calls == [28] * 9                  # a warp's 28 executing lanes, warp by warp
    assert gang_calls == [3 * 3 * 28]               # every warp of the three CTAs at once


def test_a_fault_in_a_ganged_tex_is_reported_by_the_warps_own_runs():
    """A float coordinate on a texture of linear memory, in every warp: the gang falls back and the first warp's
    own run names it, as without lock-step."""
    mod = ptx.load(_gang_kernel(TEX1D))
    errs = []
    for kw in ({}, {"lockstep": False}):
        with pytest.raises(ptx.KernelFault) as e:
            mod.launch("k", grid=2, block=64, args=[ptx.texture_object(np.arange(8, dtype=np.int32), resource="linear"),
                                                    np.zeros(128, np.uint32), np.zeros(128, np.uint32),
                                                    np.zeros((128, 4), np.uint32)], **kw)
        errs.append(str(e.value))
    assert errs[0] == errs[1] and "read with integer coordinates" in errs[0] and "warp 0" in errs[0]
