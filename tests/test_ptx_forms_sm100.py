"""Forms added by PTX ISA 8.1-8.8 for sm_90 / sm_100: add/sub/mul/fma .f32x2 (9.7.3.1-4), three-input
min/max.f32 (9.7.3.11-12), redux.sync.{min,max}{.abs}{.NaN}.f32 (9.7.13.12), atom/red .add.noftz on
f16/bf16/f16x2/bf16x2 and the vector atom/red forms (9.7.13.5-6).

Every expectation comes from an independent reference: the plain-Fraction rounding of ptx_reference.py for the
arithmetic, and a plain-Python statement of the ISA's min/max pseudo-code (-0 < +0, NaN ignored unless every input
is NaN, canonical NaN with .NaN). Which lines are legal is what ptxas 13.0 says (FORMS, checked against ptxas when
it is installed)."""
import os
import shutil
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.ptx.errors import MemoryFault, PtxSyntaxError

from ptxkit import ALU32, ALU64, ALU_PARAMS, entry

sys.path.insert(0, os.path.dirname(__file__))
import ptx_reference as R  # noqa: E402

H100A = ".version 8.8\n.target sm_100a\n.address_size 64\n"
H90A = ".version 8.8\n.target sm_90a\n.address_size 64\n"
RNG = np.random.default_rng(20)

# f32 patterns weighted to the edges: zeros, subnormals, the smallest normals, 1 and its neighbours, the largest
# finite, infinities and NaNs (quiet, signalling, negative)
F32_EDGES = [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000,
             0x00400000, 0x80400000, 0x3F800000, 0xBF800000, 0x3F800001, 0x3FC00000, 0x33800000, 0x4B000001,
             0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFC00001, 0x40400000]


def f32_lanes(n):
    """n f32 patterns: edges and values near 1 (cancellation, ties)."""
    near = (RNG.integers(0, 2, n) << 31) | (RNG.integers(124, 131, n) << 23) | RNG.integers(0, 1 << 23, n)
    edge = np.array(F32_EDGES)[RNG.integers(0, len(F32_EDGES), n)]
    return [int(x) for x in np.where(RNG.random(n) < 0.5, edge, near)]


def launch_alu(snippet, a, b, c, wide, header=H100A):
    dt = np.uint64 if wide else np.uint32
    arrs = [np.array(v, dt) for v in (a, b, c)]
    d = np.zeros(len(a), dt)
    text = entry((ALU64 if wide else ALU32).format(body=snippet), params=ALU_PARAMS, prologue="", header=header)
    ptx.load(text).launch("k", grid=1, block=len(a), args=arrs + [d])
    return [int(x) for x in d]


def compile_line(line, header=H100A):
    """Compile a one-instruction kernel (refusals are raised here, as on the first launch)."""
    ptx.load(header + f"""
.visible .entry k(.param .u64 p)
{{
  .reg .pred %p<4>;
  .reg .b16 %h<16>;
  .reg .b32 %r<32>;
  .reg .f32 %f<32>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [p];
  {line}
  ret;
}}
""").program("k")


# ----------------------------------------------------------------------------------------- references

def _key(d):
    """Order of a decoded non-NaN value with -0 < +0 (PTX min/max: "+0.0 > -0.0")."""
    if d[0] == "inf":
        return (-1 if d[1] else 1, Fraction(0), 0)
    if d[0] == "zero":
        return (0, Fraction(0), 0 if d[1] else 1)
    return (0, d[1], 0)


def ref_minmax(op, vals, fmt="f32", nan=False, ftz=False, absolute=False):
    """PTX min/max (9.7.3.11-12 pseudo-code, n inputs): |x| first with .abs; NaN inputs ignored unless all are NaN,
    any NaN gives the canonical NaN with .NaN; .ftz flushes subnormal inputs to a zero of the same sign."""
    w = R.FORMATS[fmt][4]
    if absolute:
        vals = [v & ((1 << (w - 1)) - 1) for v in vals]
    dec = [R.decode(v, fmt, ftz) for v in vals]
    if any(d[0] == "nan" for d in dec):
        if nan or all(d[0] == "nan" for d in dec):
            return R.canonical_nan(fmt)
        vals, dec = zip(*[(v, d) for v, d in zip(vals, dec) if d[0] != "nan"])
    pick = (max if op == "max" else min)(range(len(dec)), key=lambda i: _key(dec[i]))
    return (dec[pick][1] << (w - 1)) if dec[pick][0] == "zero" else vals[pick]


def lanes2(x):
    return x & 0xFFFFFFFF, x >> 32


# ----------------------------------------------------------------------------------------- f32x2

@pytest.mark.parametrize("op", ["add", "sub", "mul", "fma"])
@pytest.mark.parametrize("rnd", [None, "rn", "rz", "rm", "rp"])
@pytest.mark.parametrize("ftz", [False, True])
def test_f32x2_is_the_scalar_f32_operation_per_element(op, rnd, ftz):
    if op == "fma" and rnd is None:
        pytest.skip("fma.f32x2 requires a rounding modifier (refused: FORMS)")
    n = 256
    a, b, c = ([lo | (hi << 32) for lo, hi in zip(f32_lanes(n), f32_lanes(n))] for _ in range(3))
    form = ".".join([op] + ([rnd] if rnd else []) + (["ftz"] if ftz else []) + ["f32x2"])
    srcs = "%rd21, %rd22, %rd23" if op == "fma" else "%rd21, %rd22"
    got = launch_alu(f"  {form} %rd24, {srcs};", a, b, c, wide=True)
    mode = rnd or "rn"
    for i in range(n):
        want = []
        for x, y, z in zip(lanes2(a[i]), lanes2(b[i]), lanes2(c[i])):
            if op == "fma":
                want.append(R.ref_fma(x, y, z, "f32", mode, ftz))
            elif op == "mul":
                want.append(R.ref_mul(x, y, "f32", mode, ftz))
            else:
                want.append(R.ref_add(x, y, "f32", mode, ftz, sub=op == "sub"))
        assert got[i] == want[0] | (want[1] << 32), (form, hex(a[i]), hex(b[i]), hex(c[i]), hex(got[i]))


def test_f32x2_element_0_is_the_low_half():
    # (1, 2) + (3, 4) = (4, 6); element 0 in bits 0-31
    got = launch_alu("  add.f32x2 %rd24, %rd21, %rd22;", [0x40000000_3F800000], [0x40800000_40400000], [0],
                     wide=True)
    assert got == [0x40C00000_40800000]
    # fma.rn: (1 * 3 + 1, 2 * 4 + 2) = (4, 10); one lane's NaN (inf - inf) stays in its half, canonical
    got = launch_alu("  fma.rn.f32x2 %rd24, %rd21, %rd22, %rd23;", [0x7F800000_3F800000], [0x3F800000_40400000],
                     [0xFF800000_3F800000], wide=True)
    assert got == [0x7FFFFFFF_40800000]


# ----------------------------------------------------------------------------------------- three-input min/max

@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("mods", ["", ".ftz", ".NaN", ".abs", ".ftz.NaN.abs", ".NaN.abs"])
def test_three_input_min_max_f32(op, mods):
    n = 512
    a, b, c = f32_lanes(n), f32_lanes(n), f32_lanes(n)
    got = launch_alu(f"  {op}{mods}.f32 %r4, %r1, %r2, %r3;", a, b, c, wide=False)
    flags = dict(nan=".NaN" in mods, ftz=".ftz" in mods, absolute=".abs" in mods)
    for i in range(n):
        assert got[i] == ref_minmax(op, [a[i], b[i], c[i]], **flags), (op + mods, hex(a[i]), hex(b[i]), hex(c[i]))


def test_three_input_min_max_hand_cases():
    cases = [  # (form, a, b, c, d)
        ("max", 0x80000000, 0x00000000, 0x80000000, 0x00000000),        # +0 > -0
        ("min", 0x00000000, 0x80000000, 0x00000000, 0x80000000),
        ("max", 0x7FC00000, 0x3F800000, 0x7F800001, 0x3F800000),        # NaNs ignored
        ("min", 0x7FC00000, 0xFFC00001, 0x7F800001, 0x7FFFFFFF),        # all NaN: canonical
        ("max.NaN", 0x3F800000, 0x7F800001, 0x40000000, 0x7FFFFFFF),    # any NaN: canonical
        ("min.abs", 0xC0400000, 0x40000000, 0xC0A00000, 0x40000000),    # min(|-3|, |2|, |-5|) = 2
        ("max.abs", 0xC0400000, 0x40000000, 0xFFC00000, 0x40400000),    # max(3, 2, NaN) = 3
        ("max", 0x00000001, 0x80000000, 0x00000000, 0x00000001),        # subnormals kept
        ("max.ftz", 0x00000001, 0x80000000, 0x807FFFFF, 0x00000000),    # flushed to +0, -0, -0
        ("min.ftz", 0x00000001, 0x00000000, 0x807FFFFF, 0x80000000),
    ]
    for form, a, b, c, d in cases:
        got = launch_alu(f"  {form}.f32 %r4, %r1, %r2, %r3;", [a], [b], [c], wide=False)
        assert got == [d], form


# ----------------------------------------------------------------------------------------- redux.sync .f32

REDUX = """
  ld.param.u64 %rd2, [pa];
  ld.param.u64 %rd5, [pd];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd6, %r0, 4;
  add.s64 %rd7, %rd2, %rd6;
  ld.global.u32 %r1, [%rd7];
  mov.u32 %r4, 0xDEADBEEF;
{body}
  add.s64 %rd7, %rd5, %rd6;
  st.global.u32 [%rd7], %r4;
  ret;
"""


def launch_redux(body, values, header=H100A):
    a = np.array(values, np.uint32)
    d = np.zeros(32, np.uint32)
    text = entry(REDUX.format(body=body), params=".param .u64 pa, .param .u64 pd", prologue="", header=header)
    ptx.load(text).launch("k", grid=1, block=32, args=[a, d])
    return [int(x) for x in d]


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("mods", ["", ".abs", ".NaN", ".abs.NaN"])
def test_redux_sync_f32(op, mods):
    flags = dict(nan=".NaN" in mods, absolute=".abs" in mods)
    for trial in range(6):
        vals = f32_lanes(32)
        if trial == 0:   # no NaN among the lanes
            vals = [v if not R.is_nan_bits(v, "f32") else 0x80000000 for v in vals]
        if trial == 1:   # every lane NaN: the canonical NaN
            vals = [0x7FC00000 | (t << 3) | (0x80000000 if t % 3 else 0) for t in range(32)]
        if trial == 2:   # only zeros of both signs and subnormals
            vals = [[0, 0x80000000, 1, 0x80000001][t % 4] for t in range(32)]
        got = launch_redux(f"  redux.sync.{op}{mods}.f32 %r4, %r1, -1;", vals)
        assert got == [ref_minmax(op, vals, **flags)] * 32, (op + mods, [hex(v) for v in vals])


def test_redux_sync_f32_partial_membermask():
    # lanes 8-23 reduce among themselves; a NaN outside them does not count
    vals = f32_lanes(32)
    vals[3] = 0x7FC00000
    vals[8:24] = [v if not R.is_nan_bits(v, "f32") else 0x3F800000 for v in vals[8:24]]
    body = """
  setp.lt.u32 %p1, %r0, 8;
  setp.ge.u32 %p2, %r0, 24;
  or.pred %p1, %p1, %p2;
  @%p1 bra $L_out;
  redux.sync.max.NaN.f32 %r4, %r1, 0x00ffff00;
$L_out:
"""
    got = launch_redux(body, vals)
    assert got == [0xDEADBEEF] * 8 + [ref_minmax("max", vals[8:24], nan=True)] * 16 + [0xDEADBEEF] * 8
