"""Forms added by PTX ISA 8.1-8.8 for sm_90 / sm_100: add/sub/mul/fma .f32x2 (9.7.3.1-4), three-input
min/max.f32 (9.7.3.11-12), redux.sync.{min,max}{.abs}{.NaN}.f32 (9.7.13.12), atom/red .add.noftz on
f16/bf16/f16x2/bf16x2 and the vector atom/red forms (9.7.13.5-6).

Every expectation comes from an independent reference: the plain-Fraction rounding of ptx_reference.py for the
arithmetic, and a plain-Python statement of the ISA's min/max pseudo-code (-0 < +0, NaN ignored unless every input
is NaN, canonical NaN with .NaN). Which lines are legal is what ptxas 13.0 says (FORMS, checked against ptxas when
it is installed)."""
import shutil
import subprocess
from fractions import Fraction

import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.ptx.errors import MemoryFault, PtxSyntaxError

from ptxkit import ALU32, ALU64, ALU_PARAMS, entry

import ptx_reference as R

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


# ----------------------------------------------------------------------------------------- atom / red

ATOM = """
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [cell];
  ld.param.u64 %rd4, [pd];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd6, %r0, {lane_bytes};
{loads}
{ins}
{stores}
  ret;
"""


def _elems(kind, first, n):
    return ["%{}{}".format(kind, first + i) for i in range(n)]


def launch_atom(line_of, t, vec, bvals, cell, header=H90A, red=False):
    """Every lane runs line_of(d_regs, b_regs) on the same cell (uint16/uint32 array); lane t's b elements are
    bvals[t]. Returns (olds per lane, cell after)."""
    w = 16 if t in ("f16", "bf16") else 32
    kind = "h" if w == 16 else "r"
    b_regs, d_regs = _elems(kind, 0, vec), _elems(kind, 8, vec)
    eb = w // 8
    loads = "  add.s64 %rd7, %rd2, %rd6;\n" + "\n".join(
        f"  ld.global.b{w} {r}, [%rd7+{i * eb}];" for i, r in enumerate(b_regs))
    stores = "" if red else "  add.s64 %rd7, %rd4, %rd6;\n" + "\n".join(
        f"  st.global.b{w} [%rd7+{i * eb}], {r};" for i, r in enumerate(d_regs))
    body = ATOM.format(lane_bytes=eb * vec, loads=loads, stores=stores, ins="  " + line_of(d_regs, b_regs))
    dt = np.uint16 if w == 16 else np.uint32
    b = np.array(bvals, dt).reshape(32, vec)
    d = np.zeros((32, vec), dt)
    text = entry(body, params=".param .u64 pb, .param .u64 cell, .param .u64 pd", prologue="", header=header)
    ptx.load(text).launch("k", grid=1, block=32, args=[b, cell, d])
    return d, cell


def brace(regs):
    return "{" + ", ".join(regs) + "}" if len(regs) > 1 else regs[0]


def serial(cell0, bvals, fn):
    """Lane-order serialisation of per-element read-modify-writes: (olds, final)."""
    cell, olds = list(cell0), []
    for lane in range(32):
        olds.append(list(cell))
        cell = [fn(o, x) for o, x in zip(cell, bvals[lane])]
    return olds, cell


def half_patterns(fmt, n):
    """Lane values for a 16-bit format: subnormals first, then values near 1, then inf, -inf, NaN, a finite."""
    mb = R.FORMATS[fmt][1]
    bias = R.FORMATS[fmt][2]
    out = []
    for i in range(n):
        s = int(RNG.integers(0, 2)) << 15
        if i % 32 < 8:
            out.append(s | int(RNG.integers(1, 1 << mb)))
        elif i % 32 < 28:
            out.append(s | (int(RNG.integers(bias - 3, bias + 3)) << mb) | int(RNG.integers(0, 1 << mb)))
        else:
            inf = ((1 << (15 - mb)) - 1) << mb
            out.append([inf, inf | 0x8000, inf | 1, 0x3C00 if fmt == "f16" else 0x3F80][i % 32 - 28])
    return out


def x2(fn):
    return lambda o, x: fn(o & 0xFFFF, x & 0xFFFF) | (fn(o >> 16, x >> 16) << 16)


@pytest.mark.parametrize("t", ["f16", "bf16", "f16x2", "bf16x2"])
def test_atom_add_noftz_half_types(t):
    base = t[:-2] if t.endswith("x2") else t
    if t.endswith("x2"):
        lo, hi = half_patterns(base, 32), half_patterns(base, 32)
        bvals = [[lo[i] | (hi[i] << 16)] for i in range(32)]
        cell0 = [0x0001 | (0x8003 << 16)]   # subnormals: kept by .noftz
        ref = x2(lambda o, x: R.ref_add(o, x, base))
        cell = np.array(cell0, np.uint32)
    else:
        bvals = [[v] for v in half_patterns(base, 32)]
        cell0 = [0x0001]
        ref = lambda o, x: R.ref_add(o, x, base)  # noqa: E731
        cell = np.array(cell0, np.uint16)
    d, cell = launch_atom(lambda d, b: f"atom.global.add.noftz.{t} {d[0]}, [%rd3], {b[0]};", t, 1, bvals, cell)
    olds, final = serial(cell0, bvals, ref)
    assert [list(map(int, r)) for r in d] == olds and list(map(int, cell)) == final


def test_atom_add_noftz_f16_keeps_subnormals_and_red_shared():
    # 0x0001 (2^-24) + 0x0001 = 0x0002, on shared memory through red (no flush anywhere for .noftz)
    body = """
  mov.u32 %r0, %tid.x;
  setp.eq.u32 %p1, %r0, 0;
  mov.u32 %r2, s;
  @%p1 st.shared.b16 [%r2], 0x0001;
  bar.sync 0;
  mov.b16 %h1, 0x0001;
  red.shared.add.noftz.f16 [%r2], %h1;
  bar.sync 0;
  ld.shared.b16 %h2, [%r2];
  cvt.u32.u16 %r3, %h2;
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd1, %rd1, %rd2;
  st.global.u32 [%rd1], %r3;
  ret;
"""
    out = np.zeros(32, np.uint32)
    ptx.load(entry(body, prologue="", header=H90A, before=".shared .align 4 .b16 s;\n")).launch(
        "k", grid=1, block=32, args=[out])
    assert (out == 33).all()   # 33 * 2^-24, every step exact


def test_scalar_atom_add_f32_flushes_on_global_only():
    """PTX 9.7.13.5: atom.add.f32 on global memory flushes subnormal inputs and results to sign-preserving zero; on
    shared memory (a .shared address or a generic one in the shared window) it keeps them."""
    body = """
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd3, [cell];
  mov.u32 %r2, s;
  st.shared.u32 [%r2], 0x00800000;
  st.shared.u32 [%r2+4], 0x00800000;
  mov.b32 %r5, 0x80400000;
  atom.global.add.f32 %r6, [%rd3], %r5;
  atom.shared.add.f32 %r7, [%r2], %r5;
  mov.u64 %rd4, s;
  cvta.shared.u64 %rd4, %rd4;
  atom.add.f32 %r8, [%rd4+4], %r5;
  atom.global.add.f32 %r9, [%rd3+4], %r5;
  ld.shared.u32 %r10, [%r2];
  ld.shared.u32 %r11, [%r2+4];
  st.global.u32 [%rd1], %r10;
  st.global.u32 [%rd1+4], %r11;
  st.global.u32 [%rd1+8], %r9;
  ret;
"""
    out = np.zeros(3, np.uint32)
    cell = np.array([0x00800000, 0x00000003], np.uint32)
    ptx.load(entry(body, params=".param .u64 out, .param .u64 cell", prologue="", header=H90A,
                   before=".shared .align 4 .b32 s[2];\n")).launch("k", grid=1, block=1, args=[out, cell])
    # 2^-126 + (-2^-127): global flushes the addend (2^-126 stays), shared gives the subnormal 2^-127
    assert int(cell[0]) == 0x00800000
    assert int(out[0]) == 0x00400000 and int(out[1]) == 0x00400000
    # 3 * 2^-149 + (-2^-127) on global: both flushed, +0 + -0 = +0; the old value comes back unflushed
    assert int(cell[1]) == 0x00000000 and int(out[2]) == 0x00000003


VECTOR_CASES = [  # (type, op, vec)
    ("f32", "add", 2), ("f32", "add", 4), ("f16", "add", 8), ("bf16", "add", 2), ("f16", "max", 4),
    ("bf16", "min", 8), ("f16x2", "add", 4), ("bf16x2", "add", 2), ("f16x2", "min", 2), ("bf16x2", "max", 4),
]


@pytest.mark.parametrize("t,op,vec", VECTOR_CASES)
@pytest.mark.parametrize("red", [False, True])
def test_vector_atom_red(t, op, vec, red):
    if t == "f32":
        bvals = [f32_lanes(vec) for _ in range(32)]
        cell0 = f32_lanes(vec)
        cell0 = [v if not R.is_nan_bits(v, "f32") else 0xC0000000 for v in cell0]
        cell0[0] = 0x00000005                    # a subnormal cell: flushed (global atom.add.f32)
        for lane in range(20):
            bvals[lane] = [v if not R.is_nan_bits(v, "f32") else 0x3F800000 for v in bvals[lane]]
        ref = lambda o, x: R.ref_add(o, x, "f32", "rn", ftz=True)  # noqa: E731
        dt = np.uint32
    else:
        base = t[:-2] if t.endswith("x2") else t
        cols = [half_patterns(base, 32) for _ in range(vec * (2 if t.endswith("x2") else 1))]
        if t.endswith("x2"):
            bvals = [[cols[2 * e][i] | (cols[2 * e + 1][i] << 16) for e in range(vec)] for i in range(32)]
            cell0 = [0x0001 | (0x8000 << 16)] * vec
        else:
            bvals = [[cols[e][i] for e in range(vec)] for i in range(32)]
            cell0 = [0x8000] * vec
        one = (lambda o, x: R.ref_add(o, x, base)) if op == "add" else \
            (lambda o, x: ref_minmax(op, [o, x], base))
        ref = x2(one) if t.endswith("x2") else one
        dt = np.uint16 if t in ("f16", "bf16") else np.uint32
    cell = np.array(cell0, dt)
    noftz = "" if t == "f32" else ".noftz"
    if red:
        line = lambda d, b: f"red.global.{op}{noftz}.v{vec}.{t} [%rd3], {brace(b)};"  # noqa: E731
    else:
        line = lambda d, b: f"atom.global.{op}{noftz}.v{vec}.{t} {brace(d)}, [%rd3], {brace(b)};"  # noqa: E731
    d, cell = launch_atom(line, t, vec, [v for row in bvals for v in row], cell, red=red)
    olds, final = serial(cell0, bvals, ref)
    assert list(map(int, cell)) == final
    if not red:
        assert [list(map(int, r)) for r in d] == olds


def test_triton_split_k_vector_atomic():
    """Triton's split-K atomic_add line, verbatim: lane t adds (t, 1, 2^-149, -0) to cell t % 4; global memory
    flushes the subnormal addend."""
    body = """
  ld.param.u64 %rd2, [cell];
  ld.param.u64 %rd4, [out];
  mov.u32 %r0, %tid.x;
  and.b32 %r9, %r0, 3;
  mul.wide.u32 %rd3, %r9, 16;
  add.s64 %rd1, %rd2, %rd3;
  cvt.rn.f32.u32 %f1, %r0;
  mov.b32 %r5, %f1;
  mov.b32 %r6, 0x3f800000;
  mov.b32 %r7, 0x00000001;
  mov.b32 %r8, 0x80000000;
  atom.global.gpu.acq_rel.add.v4.f32 {%r1,%r2,%r3,%r4}, [%rd1], {%r5,%r6,%r7,%r8};
  mul.wide.u32 %rd3, %r0, 16;
  add.s64 %rd4, %rd4, %rd3;
  st.global.v4.u32 [%rd4], {%r1,%r2,%r3,%r4};
  ret;
"""
    cell = np.zeros(16, np.uint32)
    out = np.zeros(128, np.uint32)
    ptx.load(entry(body, params=".param .u64 cell, .param .u64 out", prologue="", header=H90A)).launch(
        "k", grid=1, block=32, args=[cell, out])
    out = out.reshape(32, 4)
    for g in range(4):
        lanes = [t for t in range(32) if t % 4 == g]
        running = 0.0
        for i, t in enumerate(lanes):
            assert list(out[t]) == [int(np.float32(running).view(np.uint32)),
                                    int(np.float32(i).view(np.uint32)), 0, 0]
            running += t
        assert list(cell[4 * g:4 * g + 4]) == [int(np.float32(running).view(np.uint32)), 0x41000000, 0, 0]


def test_vector_atom_faults():
    base = """
  ld.param.u64 %rd2, [cell];
  mov.b32 %r5, 0x3f800000;
  mov.b32 %r6, 0x3f800000;
  {ins}
  ret;
"""
    cell = np.zeros(8, np.uint32)
    # 8 bytes into the cell: a .v4.f32 access is 16 bytes and must be 16-byte aligned
    text = entry(base.format(ins="red.global.add.v4.f32 [%rd2+8], {%r5,%r6,%r5,%r6};"),
                 params=".param .u64 cell", prologue="", header=H90A)
    with pytest.raises(MemoryFault, match="not aligned to 16 bytes"):
        ptx.load(text).launch("k", grid=1, block=1, args=[cell])
    # a generic address in the shared window: vector atomics reach global memory only
    text = entry(base.format(ins="mov.u64 %rd3, s;\n  cvta.shared.u64 %rd3, %rd3;\n  red.add.v2.f32 [%rd3], {%r5,%r6};"),
                 params=".param .u64 cell", prologue="", header=H90A, before=".shared .align 16 .b8 s[16];\n")
    with pytest.raises(MemoryFault, match="needs a global address"):
        ptx.load(text).launch("k", grid=1, block=1, args=[cell])


# ----------------------------------------------------------------------------------------- legality (ptxas 13.0)

V4 = "{%r1,%r2,%r3,%r4}"
W4 = "{%r5,%r6,%r7,%r8}"
H8 = "{%h0,%h1,%h2,%h3,%h4,%h5,%h6,%h7}"
G8 = "{%h8,%h9,%h10,%h11,%h12,%h13,%h14,%h15}"
R8 = "{%r1,%r2,%r3,%r4,%r5,%r6,%r7,%r8}"
S8 = "{%r9,%r10,%r11,%r12,%r13,%r14,%r15,%r16}"

# (target, .version, line, ptxas's message or None where ptxas accepts the line)
FORMS = [
    ("sm_100a", "8.8", "add.f32x2 %rd2, %rd3, %rd4;", None),
    ("sm_100a", "8.8", "add.rz.ftz.f32x2 %rd2, %rd3, %rd4;", None),
    ("sm_100a", "8.8", "sub.rm.f32x2 %rd2, %rd3, %rd4;", None),
    ("sm_100a", "8.8", "mul.rp.ftz.f32x2 %rd2, %rd3, %rd4;", None),
    ("sm_100a", "8.8", "fma.rn.ftz.f32x2 %rd2, %rd3, %rd4, %rd5;", None),
    ("sm_100", "8.8", "fma.rz.f32x2 %rd2, %rd3, %rd4, %rd5;", None),
    ("sm_120a", "8.8", "add.f32x2 %rd2, %rd3, %rd4;", None),
    ("sm_90a", "8.8", "add.rn.f32x2 %rd2, %rd3, %rd4;", "Feature 'add.f32x2' requires .target sm_100 or higher"),
    ("sm_90a", "8.8", "fma.rn.f32x2 %rd2, %rd3, %rd4, %rd5;",
     "Feature 'fma.f32x2' requires .target sm_100 or higher"),
    ("sm_100a", "8.8", "add.rn.sat.f32x2 %rd2, %rd3, %rd4;", "Illegal modifier '.sat' for instruction 'add'"),
    ("sm_100a", "8.8", "add.rn.relu.f32x2 %rd2, %rd3, %rd4;", "Illegal modifier '.relu' for instruction 'add'"),
    ("sm_100a", "8.8", "fma.rn.sat.f32x2 %rd2, %rd3, %rd4, %rd5;", "Illegal modifier '.sat' for instruction 'fma'"),
    ("sm_100a", "8.8", "fma.f32x2 %rd2, %rd3, %rd4, %rd5;", "Rounding modifier required for instruction 'fma'"),
    ("sm_100a", "8.8", "mad.rn.f32x2 %rd2, %rd3, %rd4, %rd5;", "Unexpected instruction types specified for 'mad'"),
    ("sm_100a", "8.8", "max.f32x2 %rd2, %rd3, %rd4;", "Unexpected instruction types specified for 'max'"),
    ("sm_100a", "8.8", "neg.f32x2 %rd2, %rd3;", "Unexpected instruction types specified for 'neg'"),
    ("sm_100a", "8.8", "add.rn.f32x2 %r2, %r3, %r4;", "Arguments mismatch for instruction 'add'"),
    ("sm_100a", "8.8", "add.rn.f32x2 %rd2, %rd3, 0;", "Arguments mismatch for instruction 'add'"),
    # three-input min/max: f32 only, .ftz .NaN .abs, no .xorsign; PTX ISA 8.8, sm_100
    ("sm_100a", "8.8", "max.f32 %f1, %f2, %f3, %f4;", None),
    ("sm_100a", "8.8", "min.ftz.NaN.f32 %f1, %f2, %f3, %f4;", None),
    ("sm_100a", "8.8", "max.abs.NaN.f32 %f1, %f2, %f3, %f4;", None),
    ("sm_100a", "8.8", "max.f32 %f1, %f2, 0f3F800000, %f4;", None),
    ("sm_120", "8.8", "min.f32 %f1, %f2, %f3, %f4;", None),
    ("sm_90a", "8.8", "max.f32 %f1, %f2, %f3, %f4;",
     "Feature 'max.f32 with 3 input operands' requires .target sm_100 or higher"),
    ("sm_100a", "8.6", "min.f32 %f1, %f2, %f3, %f4;",
     "Feature 'min.f32 with 3 input operands' requires PTX ISA .version 8.8 or later"),
    ("sm_100a", "8.8", "max.xorsign.abs.f32 %f1, %f2, %f3, %f4;", "Illegal modifier '.xorsign' for instruction 'max'"),
    ("sm_100a", "8.8", "max.relu.f32 %f1, %f2, %f3, %f4;", "Unexpected instruction types specified for 'max'"),
    ("sm_100a", "8.8", "max.f16 %h1, %h2, %h3, %h4;", "Arguments mismatch for instruction 'max'"),
    ("sm_100a", "8.8", "max.bf16x2 %r1, %r2, %r3, %r4;", "Arguments mismatch for instruction 'max'"),
    ("sm_100a", "8.8", "max.s32 %r1, %r2, %r3, %r4;", "Arguments mismatch for instruction 'max'"),
    ("sm_90a", "8.8", "max.abs.f32 %f1, %f2, %f3;", "Modifier '.abs' requires modifier '.xorsign'"),
    ("sm_90a", "8.8", "max.xorsign.f32 %f1, %f2, %f3;", "Modifier '.xorsign' requires modifier '.abs'"),
    # redux.sync .f32: min/max with .abs/.NaN; sm_100a/sm_103a and the sm_100f family
    ("sm_100a", "8.8", "redux.sync.min.f32 %f1, %f2, -1;", None),
    ("sm_100a", "8.8", "redux.sync.max.abs.NaN.f32 %f1, %f2, %r1;", None),
    ("sm_100a", "8.8", "redux.sync.max.NaN.abs.f32 %f1, %f2, %r1;", None),
    ("sm_103a", "8.8", "redux.sync.min.abs.f32 %f1, %f2, -1;", None),
    ("sm_100f", "8.8", "redux.sync.max.f32 %f1, %f2, -1;", None),
    ("sm_103f", "9.0", "redux.sync.max.f32 %f1, %f2, -1;", None),
    ("sm_90a", "8.8", "redux.sync.min.f32 %f1, %f2, -1;", "Instruction 'redux.f32' not supported on .target 'sm_90a'"),
    ("sm_100", "8.8", "redux.sync.min.f32 %f1, %f2, -1;", "Instruction 'redux.f32' not supported on .target 'sm_100'"),
    ("sm_120a", "8.8", "redux.sync.min.f32 %f1, %f2, -1;",
     "Instruction 'redux.f32' not supported on .target 'sm_120a'"),
    ("sm_100a", "8.8", "redux.sync.add.f32 %f1, %f2, -1;", "Incorrect type '.f32' for operation '.add'"),
    ("sm_100a", "8.8", "redux.sync.min.ftz.f32 %f1, %f2, -1;", "Illegal modifier '.ftz' for instruction 'redux'"),
    ("sm_100a", "8.8", "redux.sync.min.f16 %h1, %h2, -1;", "Unexpected instruction types specified for 'redux'"),
    ("sm_100a", "8.8", "redux.sync.min.abs.u32 %r1, %r2, -1;", "requires '.f32' type with '.abs' modifier"),
    ("sm_100a", "8.8", "redux.sync.max.NaN.s32 %r1, %r2, -1;", "requires '.f32' type with '.NaN' modifier"),
    # scalar atom/red on 16-bit floats: .add.noftz only
    ("sm_90a", "8.8", "atom.global.add.noftz.f16 %h1, [%rd1], %h2;", None),
    ("sm_90a", "8.8", "atom.shared.add.noftz.bf16x2 %r1, [%rd1], %r2;", None),
    ("sm_90a", "8.8", "atom.add.noftz.bf16 %h1, [%rd1], %h2;", None),
    ("sm_90a", "8.8", "atom.global.add.noftz.L2::cache_hint.f16 %h1, [%rd1], %h2, %rd2;", None),
    ("sm_90a", "8.8", "red.global.add.noftz.f16x2 [%rd1], %r2;", None),
    ("sm_80", "8.8", "atom.global.add.noftz.bf16 %h1, [%rd1], %h2;",
     "Instruction 'atom.add.bf16.global' requires .target sm_90 or higher"),
    ("sm_90a", "8.8", "atom.global.add.f16 %h1, [%rd1], %h2;",
     "'.noftz' modifier required for instruction 'atom' with type '.f16'"),
    ("sm_90a", "8.8", "red.global.add.bf16x2 [%rd1], %r2;",
     "'.noftz' modifier required for instruction 'red' with type '.bf16x2'"),
    ("sm_90a", "8.8", "atom.global.min.noftz.f16 %h1, [%rd1], %h2;",
     "Vector modifier required for instruction 'atom.min.f16.global'"),
    ("sm_90a", "8.8", "atom.global.add.noftz.f32 %r1, [%rd1], %r2;", "Illegal modifier '.noftz' for instruction 'atom'"),
    # vector atom/red: PTX ISA 8.1, sm_90, .global; f32 .add .v2/.v4; 16-bit .add/.min/.max (.v8 for f16/bf16)
    ("sm_90a", "8.8", f"atom.global.gpu.acq_rel.add.v4.f32 {V4}, [%rd1], {W4};", None),
    ("sm_90a", "8.8", "atom.global.v2.f32.add {%r1,%r2}, [%rd1], {%r3,%r4};", None),
    ("sm_90a", "8.8", "atom.add.v2.f32 {%r1,%r2}, [%rd1], {%r3,%r4};", None),
    ("sm_90a", "8.8", "atom.global.add.v2.f32 {%r1,%r2}, [%rd1], {%r3,0f3F800000};", None),
    ("sm_90a", "8.8", f"atom.global.add.L2::cache_hint.v4.f32 {V4}, [%rd1], {W4}, %rd2;", None),
    ("sm_90a", "8.8", f"atom.global.add.noftz.v8.f16 {H8}, [%rd1], {G8};", None),
    ("sm_90a", "8.8", f"atom.global.max.noftz.v8.bf16 {H8}, [%rd1], {G8};", None),
    ("sm_90a", "8.8", f"atom.global.min.noftz.v4.bf16x2 {V4}, [%rd1], {W4};", None),
    ("sm_90a", "8.8", "red.global.gpu.release.add.v2.f32 [%rd1], {%r5,%r6};", None),
    ("sm_90a", "8.8", f"red.global.min.noftz.v4.f16x2 [%rd1], {W4};", None),
    ("sm_100a", "8.8", f"red.global.add.noftz.v8.bf16 [%rd1], {H8};", None),
    ("sm_80", "8.8", "atom.global.add.v2.f32 {%r1,%r2}, [%rd1], {%r3,%r4};",
     "Feature 'atom instruction with vector types' requires .target sm_90 or higher"),
    ("sm_90a", "8.0", "atom.global.add.v2.f32 {%r1,%r2}, [%rd1], {%r3,%r4};",
     "Feature 'atom instruction with vector types' requires PTX ISA .version 8.1 or later"),
    ("sm_90a", "8.8", "atom.shared.add.v2.f32 {%r1,%r2}, [%rd1], {%r3,%r4};",
     "State space incorrect for feature 'atom instruction with vector types'"),
    ("sm_90a", "8.8", "red.shared.add.v2.f32 [%rd1], {%r5,%r6};",
     "State space incorrect for feature 'red instruction with vector types'"),
    ("sm_90a", "8.8", f"atom.global.add.v8.f32 {R8}, [%rd1], {S8};",
     "Only .v2 or .v4 vector modifier supported with type .f32"),
    ("sm_90a", "8.8", f"atom.global.add.noftz.v8.f16x2 {R8}, [%rd1], {S8};",
     "Only .v2 or .v4 vector modifier supported with type .f16x2"),
    ("sm_90a", "8.8", "atom.global.add.noftz.v2.f32 {%r1,%r2}, [%rd1], {%r3,%r4};",
     "Illegal modifier '.noftz' for instruction 'atom'"),
    ("sm_90a", "8.8", "atom.global.min.v2.f32 {%r1,%r2}, [%rd1], {%r3,%r4};", "Operation .min requires"),
    ("sm_90a", "8.8", "atom.global.add.v2.u32 {%r1,%r2}, [%rd1], {%r3,%r4};",
     "Vector qualifier is not allowed for instruction 'atom'"),
    ("sm_90a", "8.8", "atom.global.add.v2.f16x2 {%r1,%r2}, [%rd1], {%r3,%r4};",
     "'.noftz' modifier required for instruction 'atom' with type '.f16x2'"),
    ("sm_90a", "8.8", f"atom.global.add.v4.f32 {{%r1,%r2,%r3}}, [%rd1], {W4};", "Argument vector size mismatch"),
    ("sm_90a", "8.8", "atom.global.add.v4.f32 %rd2, [%rd1], %rd3;", "Arguments mismatch for instruction 'atom'"),
]


def _header(target, version):
    return f".version {version}\n.target {target}\n.address_size 64\n"


@pytest.mark.parametrize("target,version,line,message", FORMS, ids=[f"{f[0]}:{f[2]}" for f in FORMS])
def test_legality_matches_ptxas(target, version, line, message):
    """tcemu compiles exactly the lines ptxas 13.0 assembles and refuses the others, naming line and rule."""
    if message is None:
        compile_line(line, _header(target, version))
    else:
        with pytest.raises(PtxSyntaxError, match=r"line \d+"):
            compile_line(line, _header(target, version))


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_forms_table_matches_ptxas(tmp_path):
    """FORMS assembled by ptxas 13.0 (skipped without it): accepted lines assemble, refused ones fail with the
    message recorded."""
    exe = shutil.which("ptxas")
    if exe is None:
        pytest.skip("ptxas not installed")
    for target, version, line, message in FORMS:
        src = tmp_path / "k.ptx"
        src.write_text(f"""{_header(target, version)}
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
""")
        r = subprocess.run([exe, f"-arch={target}", str(src), "-o", str(tmp_path / "k.cubin")], capture_output=True,
                           text=True)
        if message is None:
            assert r.returncode == 0, (line, r.stderr)
        else:
            assert r.returncode != 0 and message in r.stdout + r.stderr, (line, r.stderr)
