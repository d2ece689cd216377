"""tcemu.ptx.fparith / intarith against independent references: plain-Fraction rounding (ptx_reference.py),
numpy/ml_dtypes where they are known-correct IEEE, hand-worked cases, and (when captured) the H100 trace."""
import os
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptx_reference as R

from tcemu.ptx.errors import PtxError, PtxUnsupported  # noqa: E402
from tcemu.ptx.fparith import cvt, float_compare, float_op, set_bits  # noqa: E402
from tcemu.ptx.fparith import testp as float_testp  # noqa: E402  (not a test)
from tcemu.ptx.intarith import int_compare, int_op, lop3, prmt  # noqa: E402

from paths import CAPTURE, TRACES

# each example checks a dozen lanes against Fraction arithmetic: a few dozen examples keep the ci profile
# within seconds; the campaign profile runs its full count
FEW = settings(max_examples=20 if settings.default.max_examples <= 150 else settings.default.max_examples)
WIDTH = {"f64": 64, "f32": 32, "f16": 16, "bf16": 16}
UT = {16: np.uint16, 32: np.uint32, 64: np.uint64}


def float_patterns(fmt):
    """Bit patterns weighted toward the hard cases: specials, subnormals, the top binade, near 1 (cancellation,
    halfway), short mantissas (exact results and ties), and raw bits."""
    eb, mb = R.FORMATS[fmt][:2]
    w = WIDTH[fmt]
    bias = (1 << (eb - 1)) - 1
    inf = ((1 << eb) - 1) << mb
    specials = [0, 1, (1 << mb) - 1, 1 << mb, bias << mb, inf - 1, inf, inf | 1, inf | (1 << (mb - 1))]
    sign = st.integers(0, 1).map(lambda s: s << (w - 1))
    near = st.tuples(sign, st.integers(bias - 3, bias + 3), st.integers(0, (1 << mb) - 1)).map(
        lambda t: t[0] | (t[1] << mb) | t[2])
    edge = st.tuples(sign, st.sampled_from([0, 1, 2, (1 << eb) - 3, (1 << eb) - 2]),
                     st.integers(0, (1 << mb) - 1)).map(lambda t: t[0] | (t[1] << mb) | t[2])
    short = st.tuples(sign, st.integers(1, (1 << eb) - 2), st.integers(0, 7)).map(
        lambda t: t[0] | (t[1] << mb) | (t[2] << (mb - 3)))
    return st.one_of(st.tuples(sign, st.sampled_from(specials)).map(lambda t: t[0] | t[1]), near, edge, short,
                     st.integers(0, (1 << w) - 1))


def lanes(fmt, n=12):
    return st.lists(float_patterns(fmt), min_size=n, max_size=n)


ARITH_CASES = [(fmt, op) for fmt in ("f32", "f64", "f16", "bf16") for op in ("add", "sub", "mul", "fma")] + \
              [(fmt, op) for fmt in ("f32", "f64") for op in ("div", "sqrt", "rcp")]


def legal(fmt, op, mode, ftz):
    if fmt in ("f16", "bf16"):
        return mode == "rn" and (not ftz or fmt == "f16")
    return not (ftz and fmt == "f64")


@pytest.mark.parametrize("fmt,op", ARITH_CASES, ids=lambda x: str(x))
@FEW
@given(data=st.data())
def test_arith_matches_fraction_reference(fmt, op, data):
    """Every rounding mode and .ftz: identical bits to a plain-Fraction single rounding; NaN results follow
    the measured rules the reference states (canonical for f32/f16/bf16; f64: the NaN operand quieted, invalid
    operations 0xfff8000000000000)."""
    mode = data.draw(st.sampled_from(["rn", "rz", "rm", "rp"]))
    ftz = data.draw(st.booleans())
    if not legal(fmt, op, mode, ftz):
        mode, ftz = "rn", False
    nargs = {"fma": 3, "sqrt": 1, "rcp": 1}.get(op, 2)
    xs = [data.draw(lanes(fmt)) for _ in range(nargs)]
    if op == "fma":  # make exact cancellation likely: c = -(a*b) rounded
        for i in range(0, 12, 3):
            p = R.ref_mul(xs[0][i], xs[1][i], fmt, "rn")
            xs[2][i] = p ^ (1 << (WIDTH[fmt] - 1))
    arrs = [np.array(x, UT[WIDTH[fmt]]) for x in xs]
    rounding = mode if (op not in ("add", "sub", "mul") or fmt in ("f32", "f64")) else "rn"
    got = float_op(op, fmt, *arrs, rounding=rounding, ftz=ftz)
    for i in range(12):
        a = [x[i] for x in xs]
        if op in ("add", "sub"):
            want = R.ref_add(a[0], a[1], fmt, mode, ftz, sub=op == "sub")
        elif op == "mul":
            want = R.ref_mul(a[0], a[1], fmt, mode, ftz)
        elif op == "fma":
            want = R.ref_fma(a[0], a[1], a[2], fmt, mode, ftz)
        elif op == "div":
            want = R.ref_div(a[0], a[1], fmt, mode, ftz)
        elif op == "rcp":
            want = R.ref_div(R.encode(("num", 1), fmt), a[0], fmt, mode, ftz)
        else:
            want = R.ref_sqrt(a[0], fmt, mode, ftz)
        assert int(got[i]) == want, (fmt, op, mode, ftz, [hex(v) for v in a], hex(int(got[i])), hex(want))


def heavy_patterns(fmt, n, rng):
    """n bit patterns, a sixth each: raw bits, zeros / subnormals, inf / NaN, near 1, short mantissas, and the
    bottom of the normal range (where .ftz and the fma's float32 grid decide)."""
    w = WIDTH[fmt]
    eb, mb = R.FORMATS[fmt][:2]
    ut = UT[w]
    raw = rng.integers(0, 1 << 62, n, dtype=np.uint64) * np.uint64(4) + rng.integers(0, 4, n, dtype=np.uint64)
    raw = (raw >> np.uint64(64 - w)).astype(ut)
    sign, man = ut(1 << (w - 1)), ut((1 << mb) - 1)
    exp = rng.integers(0, 1 << eb, n).astype(ut)
    kind = rng.integers(0, 6, n)
    bias = (1 << (eb - 1)) - 1
    for k, e in ((1, 0), (2, (1 << eb) - 1), (3, bias), (5, 1)):
        raw = np.where(kind == k, (raw & (sign | man)) | ut(e << mb), raw)
    return np.where(kind == 4, (raw & (sign | ut(7 << (mb - 3)))) | (exp << ut(mb)), raw).astype(ut)


@pytest.mark.parametrize("fmt,op,ftz", [("f32", o, z) for o in ("add", "sub", "mul", "fma") for z in (False, True)]
                         + [("f64", o, False) for o in ("add", "sub", "mul")])
def test_host_arithmetic_gives_the_bit_level_kernels_bits(fmt, op, ftz, monkeypatch):
    """fphost (the host's IEEE add / sub / mul, and fma.f32 through float64) against the bit-level kernel
    that the H100 trace proves, on 2^15 lanes heavy in specials, subnormals, cancellation and short mantissas."""
    import tcemu.ptx.fphost as F
    rng = np.random.default_rng(11)
    arrs = [heavy_patterns(fmt, 1 << 15, rng) for _ in range(3 if op == "fma" else 2)]
    if op == "fma":   # half the lanes cancel: c = -(a b) rounded, its last bits moved
        with np.errstate(all="ignore"):
            ab = (arrs[0].view(np.float32).astype(np.float64) * arrs[1].view(np.float32)).astype(np.float32)
        near = (-ab).view(np.uint32) ^ rng.integers(0, 4, ab.size).astype(np.uint32)
        arrs[2] = np.where(rng.integers(0, 2, ab.size) == 1, near, arrs[2]).astype(np.uint32)
    host = float_op(op, fmt, *arrs, rounding="rn", ftz=ftz)
    monkeypatch.setattr(F, "NATIVE", False)
    assert np.array_equal(host, float_op(op, fmt, *arrs, rounding="rn", ftz=ftz))


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f16x2", "bf16x2"])
def test_host_narrowing_gives_the_bit_level_kernels_bits(dtype, monkeypatch):
    """cvt.rn.{f16,bf16}(x2).f32 through numpy / ml_dtypes (fphost) against the bit-level kernel, on special-heavy
    f32 patterns plus exact ties (normal and subnormal results), values at the overflow boundary and NaNs."""
    import tcemu.ptx.fphost as F
    rng = np.random.default_rng(13)
    a = heavy_patterns("f32", 1 << 15, rng)
    sub = 0x1FFF if dtype.startswith("f16") else 0xFFFF   # the bits a narrowing drops (normal results)
    tie = (sub + 1) >> 1
    ties = (rng.integers(0, 1 << 32, 4096, dtype=np.uint64).astype(np.uint32) & ~np.uint32(sub)) | np.uint32(tie)
    grid = 2.0 ** -24 if dtype.startswith("f16") else 2.0 ** -133   # the subnormal results' spacing
    halves = ((rng.integers(0, 1 << 10, 4096) + 0.5) * grid).astype(np.float32).view(np.uint32)   # exact ties
    edge = np.array([65519.996, 65520.0, 65504.0, 3.3895314e38, 3.4028235e38, np.nan], np.float32).view(np.uint32)
    a = np.concatenate([a, ties, halves, edge, edge | np.uint32(1 << 31)])
    b = a[::-1].copy()
    args = (a, b) if dtype.endswith("x2") else (a,)
    host = cvt(dtype, "f32", *args, rounding="rn")
    monkeypatch.setattr(F, "NATIVE", False)
    assert np.array_equal(host, cvt(dtype, "f32", *args, rounding="rn"))


def test_host_arithmetic_stands_aside_where_the_host_flushes_subnormals(monkeypatch):
    # a library that sets the x86 FTZ / DAZ flags would make numpy flush 2^-140 * 1 to 0: fphost.host_ieee says
    # so, and the bit-level kernel computes instead
    import tcemu.ptx.fphost as F
    assert F.host_ieee()   # this process keeps subnormals
    a = np.array([2.0 ** -140, 1.5], np.float32).view(np.uint32)
    b = np.array([1.0, 2.0], np.float32).view(np.uint32)
    used = []
    real = F.host_op
    monkeypatch.setattr(F, "host_op", lambda *x: used.append(1) or real(*x))
    assert float_op("mul", "f32", a, b, rounding="rn").tolist() == [0x200, 0x40400000] and used
    used.clear()
    monkeypatch.setattr(F, "host_ieee", lambda: False)
    assert float_op("mul", "f32", a, b, rounding="rn").tolist() == [0x200, 0x40400000] and not used


def test_fma_f32_through_float64_redoes_a_float32_midpoint():
    # a b + c = 1 + 2^-24 + 2^-64 exactly: just above the midpoint of 1 and 1 + 2^-23, so .rn gives 1 + 2^-23;
    # float64 rounds the sum to the midpoint itself, and float32 then rounds that to even, 1 (double rounding)
    a, b, c = np.float32(1 + 2.0 ** -20), np.float32(-(2.0 ** -24) * (1 - 2.0 ** -20)), np.float32(1 + 2.0 ** -23)
    assert np.float32(np.float64(a) * np.float64(b) + np.float64(c)) == 1.0   # the naive host sum: wrong
    got = float_op("fma", "f32", *(np.array([v]).view(np.uint32) for v in (a, b, c)), rounding="rn")
    assert hex(int(got[0])) == "0x3f800001"


@FEW
@given(a=lanes("f32", 32), b=lanes("f32", 32))
def test_f32_rn_matches_numpy(a, b):
    """Second reference: numpy's float32 add/mul/div are IEEE round-to-nearest (x86 SSE, subnormals kept);
    only NaN results differ (numpy keeps a payload, PTX gives the canonical NaN)."""
    x, y = np.array(a, np.uint32), np.array(b, np.uint32)
    with np.errstate(all="ignore"):
        for op, fn in (("add", np.add), ("mul", np.multiply), ("div", np.divide)):
            ref = fn(x.view(np.float32), y.view(np.float32))
            got = float_op(op, "f32", x, y, rounding="rn")
            nan = np.isnan(ref)
            assert np.array_equal(got[~nan], ref.view(np.uint32)[~nan]), op
            assert np.all(got[nan] == 0x7FFFFFFF), op


@pytest.mark.parametrize("dst,src", [("f16", "f32"), ("bf16", "f32"), ("f32", "f64"), ("f16", "f64"),
                                     ("bf16", "f64")])
@FEW
@given(data=st.data())
def test_cvt_narrowing_every_mode(dst, src, data):
    xs = data.draw(lanes(src, 16))
    mode = data.draw(st.sampled_from(["rn", "rz", "rm", "rp"]))
    got = cvt(dst, src, np.array(xs, UT[WIDTH[src]]), rounding=mode)
    for i, x in enumerate(xs):
        v = R.decode(x, src)
        want = R.ref_cvt_nan(x, src, dst) if v[0] == "nan" else R.encode(v, dst, mode)
        assert int(got[i]) == want, (dst, src, mode, hex(x))


@FEW
@given(xs=lanes("f32", 32))
def test_cvt_rn_matches_ml_dtypes(xs):
    """Second reference for round-to-nearest narrowing: numpy float16 and ml_dtypes casts (non-NaN inputs)."""
    x = np.array(xs, np.uint32)
    f = x.view(np.float32)
    keep = ~np.isnan(f)
    with np.errstate(all="ignore"):
        assert np.array_equal(cvt("f16", "f32", x, rounding="rn")[keep], f.astype(np.float16).view(np.uint16)[keep])
        assert np.array_equal(cvt("bf16", "f32", x, rounding="rn")[keep],
                              f.astype(ml_dtypes.bfloat16).view(np.uint16)[keep])


@pytest.mark.parametrize("fmt8", ["e4m3", "e5m2"])
@FEW
@given(xs=lanes("f32", 16), relu=st.booleans())
def test_cvt_fp8_pairs(fmt8, xs, relu):
    """cvt.rn.satfinite{.relu}.e4m3x2/e5m2x2.f32 d, a, b: a -> upper byte (PTX 9.7.9.21); satfinite clamps
    +-inf and overflow to +-max finite; NaN -> 0x7f; relu: negatives -> +0."""
    a = np.array(xs[:8], np.uint32)
    b = np.array(xs[8:], np.uint32)
    got = cvt(f"{fmt8}x2", "f32", a, b, rounding="rn", satfinite=True, relu=relu)

    def one(x):
        v = R.decode(x, "f32")
        if v[0] == "nan":
            return 0x7F
        if relu and (v[0] in ("zero", "inf") and v[1] == 1 or v[0] == "num" and v[1] < 0):
            return 0
        return R.encode(v, fmt8, "rn", satfinite=True)
    for i in range(8):
        assert int(got[i]) == (one(int(a[i])) << 8) | one(int(b[i]))


@pytest.mark.parametrize("src", ["f32", "f64"])
@FEW
@given(data=st.data())
def test_cvt_float_to_int(src, data):
    xs = data.draw(lanes(src, 16))
    mode = data.draw(st.sampled_from(["rni", "rzi", "rmi", "rpi"]))
    it = data.draw(st.sampled_from(["s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64"]))
    width, signed = int(it[1:]), it[0] == "s"
    got = cvt(it, src, np.array(xs, UT[WIDTH[src]]), rounding=mode)
    for i, x in enumerate(xs):
        assert int(got[i]) == R.ref_float_to_int(x, src, mode, width, signed), (it, src, mode, hex(x))


@FEW
@given(data=st.data())
@pytest.mark.slow
def test_cvt_int_to_float(data):
    it = data.draw(st.sampled_from(["s32", "u32", "s64", "u64", "s16"]))
    dst = data.draw(st.sampled_from(["f16", "bf16", "f32", "f64"]))
    mode = data.draw(st.sampled_from(["rn", "rz", "rm", "rp"]))
    w, signed = int(it[1:]), it[0] == "s"
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
    vals = data.draw(st.lists(st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, 0, 1, -1 if signed else 2]),
                                        st.integers(0, 64).map(lambda k: min(hi, (1 << min(k, w - 1)) + 1))),
                              min_size=8, max_size=8))
    got = cvt(dst, it, np.array([v & ((1 << w) - 1) for v in vals], UT[w]), rounding=mode)
    for i, v in enumerate(vals):
        assert int(got[i]) == R.ref_int_to_float(v, dst, mode), (it, dst, mode, v)


# ------------------------------------------------------------------ hand-worked floating-point rules

def f32(*xs):
    return np.array(xs, np.uint32)


def test_signed_zero_sums():
    # x + (-x) is +0 in every mode but .rm, where it is -0 (IEEE 754 6.3)
    one, mone = 0x3F800000, 0xBF800000
    assert float_op("add", "f32", f32(one), f32(mone), rounding="rn")[0] == 0
    assert float_op("add", "f32", f32(one), f32(mone), rounding="rm")[0] == 0x80000000
    # (-0) + (-0) = -0; (+0) + (-0) = +0 (rm: -0)
    assert float_op("add", "f32", f32(0x80000000), f32(0x80000000))[0] == 0x80000000
    assert float_op("add", "f32", f32(0), f32(0x80000000), rounding="rm")[0] == 0x80000000
    # fma: (+0 * -1) + +0 = -0 + +0 = +0
    assert float_op("fma", "f32", f32(0), f32(mone), f32(0), rounding="rn")[0] == 0


def test_fma_single_rounding():
    # a = 1 + 2^-23, b = 1 - 2^-23: a*b = 1 - 2^-46 exactly; fma(a, b, -1) = -2^-46 (0xa8800000), while the
    # product rounded first (1.0) gives 0.
    a, b = 0x3F800001, 0x3F7FFFFE
    assert float_op("fma", "f32", f32(a), f32(b), f32(0xBF800000), rounding="rn")[0] == 0xA8800000
    assert float_op("mul", "f32", f32(a), f32(b), rounding="rn")[0] == 0x3F800000


def test_ftz_and_sat():
    # min subnormal * 1: kept without .ftz, flushed (sign kept) with it
    assert float_op("mul", "f32", f32(0x80000001), f32(0x3F800000))[0] == 0x80000001
    assert float_op("mul", "f32", f32(0x80000001), f32(0x3F800000), ftz=True)[0] == 0x80000000
    # .sat: 2 -> 1.0, -3 -> +0, NaN -> +0 (PTX 9.7.3)
    got = float_op("add", "f32", f32(0x3F800000, 0xC0400000, 0x7FC00000), f32(0x3F800000, 0, 0), sat=True)
    assert list(got) == [0x3F800000, 0, 0]
    # f16x2: halves independent; 65504 + 65504 overflows to inf in the upper half only
    h = float_op("add", "f16x2", np.array([0x7BFF3C00], np.uint32), np.array([0x7BFF3C00], np.uint32))
    assert h[0] == 0x7C004000


def test_min_max_rules():
    nan, one, pz, nz = 0x7FC00000, 0x3F800000, 0, 0x80000000
    # one NaN operand: the other operand; both NaN or .NaN: canonical NaN; -0 < +0 (PTX 9.7.3 min/max)
    assert float_op("min", "f32", f32(nan), f32(one))[0] == one
    assert float_op("max", "f32", f32(one), f32(nan))[0] == one
    assert float_op("min", "f32", f32(nan), f32(0x7F800001))[0] == 0x7FFFFFFF
    assert float_op("min", "f32", f32(nan), f32(one), nan=True)[0] == 0x7FFFFFFF
    assert float_op("min", "f32", f32(pz), f32(nz))[0] == nz
    assert float_op("max", "f32", f32(nz), f32(pz))[0] == pz
    # xorsign.abs: min(|-2|, |1|) = 1 with sign(-2) ^ sign(1) = -> -1
    assert float_op("min", "f32", f32(0xC0000000), f32(one), xorsign_abs=True)[0] == 0xBF800000


def test_compare_and_testp():
    nan = 0x7FC00000
    a, b = f32(0x3F800000, nan, 0x80000000), f32(0x40000000, 0x3F800000, 0)
    assert list(float_compare("lt", "f32", a, b)) == [True, False, False]
    assert list(float_compare("ltu", "f32", a, b)) == [True, True, False]
    assert list(float_compare("ne", "f32", a, b)) == [True, False, False]   # ordered ne is false on NaN
    assert list(float_compare("eq", "f32", a, b)) == [False, False, True]   # -0 == +0
    # .ftz: the min subnormal equals 0
    assert float_compare("eq", "f32", f32(1), f32(0), ftz=True)[0]
    assert not float_compare("eq", "f32", f32(1), f32(0))[0]
    # zeros count as normal (PTX testp)
    assert list(float_testp("normal", "f32", f32(0, 1, 0x7F800000))) == [True, False, False]
    assert list(float_testp("subnormal", "f32", f32(0, 1, 0x7F800000))) == [False, True, False]
    assert set_bits("f32", np.array([True, False]))[0] == 0x3F800000


def test_cvt_packed_half_order():
    # cvt.rn.f16x2.f32 d, a, b: a (1.0 -> 0x3c00) goes to the UPPER half, b (2.0 -> 0x4000) to the lower
    assert cvt("f16x2", "f32", f32(0x3F800000), f32(0x40000000), rounding="rn")[0] == 0x3C004000
    # cvt.rn.f16x2.e4m3x2: the upper byte (0x38 = 1.0) -> upper half; lower byte (0x40 = 2.0) -> lower half
    assert cvt("f16x2", "e4m3x2", np.array([0x3840], np.uint16), rounding="rn")[0] == 0x3C004000
    # cvt.rn.satfinite.e4m3x2.f16x2: upper half 1.0 -> upper byte 0x38; lower half 1e4 -> 448 = 0x7e
    assert cvt("e4m3x2", "f16x2", np.array([0x3C0070E2], np.uint32), rounding="rn", satfinite=True)[0] == 0x387E


def test_cvt_saturation_and_tf32():
    # float -> int saturates (PTX 9.7.9.21): 3e9 -> s32 max; -1.5 -> u32 0; NaN -> 0; -2.5 rni -> -2 (ties even)
    got = cvt("s32", "f32", f32(0x4F32D05E, 0xBFC00000, 0x7FC00000, 0xC0200000), rounding="rni")
    assert list(got) == [0x7FFFFFFF, 0xFFFFFFFE, 0, 0xFFFFFFFE]
    assert cvt("u32", "f32", f32(0xBFC00000), rounding="rni")[0] == 0
    # tf32 keeps 10 mantissa bits in the f32 container: 1 + 2^-11 (0x3f801000) .rna -> ties away: 0x3f802000
    assert cvt("tf32", "f32", f32(0x3F801000), rounding="rna")[0] == 0x3F802000
    assert cvt("tf32", "f32", f32(0x3F801000), rounding="rn")[0] == 0x3F800000
    # f16 .satfinite: 1e5 -> 65504 (0x7bff); .relu: -1 -> +0
    assert cvt("f16", "f32", f32(0x47C35000), rounding="rn", satfinite=True)[0] == 0x7BFF
    assert cvt("f16", "f32", f32(0xBF800000), rounding="rn", relu=True)[0] == 0


def test_same_type_cvt_sat_clamps():
    """cvt.sat.f64.f64 / cvt.sat.f32.f32 are not moves: .sat clamps to [+0, 1.0], NaN and negatives give +0
    (PTX 9.7.9.21; only the modifier-free forms are moves, traces/ptx_alu_edges_sm90.npz)."""
    x = np.array([0x7FF0000000000001, 0xBFF0000000000000, 0x4000000000000000, 0x3FE0000000000000,
                  0x8000000000000000, 0x7FF0000000000000], np.uint64)
    assert [int(v) for v in cvt("f64", "f64", x, sat=True)] == [0, 0, 0x3FF0000000000000, 0x3FE0000000000000, 0,
                                                                 0x3FF0000000000000]
    assert [int(v) for v in cvt("f64", "f64", x)] == [int(v) for v in x]
    y = f32(0x7F800001, 0xC0000000, 0x40000000, 0x3F000000)
    assert [int(v) for v in cvt("f32", "f32", y, sat=True)] == [0, 0, 0x3F800000, 0x3F000000]


def test_refusals_and_bad_modifiers():
    x = f32(0x3F800000)
    # approximate forms compute (tests/sfu/test_sfu.py); a form without .approx is one ptxas refuses
    for op, kw in (("ex2", {}), ("tanh", {}), ("sin", {}), ("rsqrt", {"rounding": "rn"})):
        with pytest.raises(PtxError) as e:
            float_op(op, "f32", x, **kw)
        assert e.value.field == "form"
    assert [int(v) for v in float_op("div", "f32", x, x, rounding="full")] == [0x3F800000]
    # forms ptxas 13.0 rejects for sm_90a
    h = np.array([0x3C00], np.uint16)
    for call in (lambda: float_op("add", "f16", h, h, rounding="rz"),        # half add: .rn only
                 lambda: float_op("fma", "f32", x, x, x),                     # rounding required
                 lambda: float_op("add", "bf16", h, h, ftz=True),             # no .ftz on bf16
                 lambda: float_op("div", "f64", x.astype(np.uint64), x.astype(np.uint64), rounding="rn", ftz=True),
                 lambda: float_op("min", "f64", x.astype(np.uint64), x.astype(np.uint64), nan=True),
                 lambda: cvt("f32", "s32", x),                                # rounding required
                 lambda: cvt("f16", "f32", x),
                 lambda: cvt("f16", "f32", x, rounding="rm", relu=True),      # relu needs rn/rz
                 lambda: cvt("e4m3x2", "f32", x, x, rounding="rn"),            # satfinite required
                 lambda: cvt("s32", "f64", x.astype(np.uint64), rounding="rni", ftz=True),
                 lambda: int_op("add", "u32", x, x, sat=True),
                 lambda: int_op("shf.l", "b32", x, x, x),                      # clamp/wrap required
                 lambda: int_compare("lo", "s32", x, x)):
        with pytest.raises(PtxError):
            call()


# ------------------------------------------------------------------ rules measured on the H100 (traces/ptx_alu_sm90.npz)

def f64(*xs):
    return np.array(xs, np.uint64)


def test_f64_nan_propagation():
    """DADD/DMUL/DFMA return a NaN operand quieted (sign, payload kept), the 2nd source first, then the 3rd,
    then the 1st; the div/sqrt/rcp.f64 sequences the 1st, then the 2nd; invalid operations give the negative
    default NaN (all cases below are captured ones)."""
    snan, qnan5, nneg = 0x7FF0000000000001, 0x7FF8000000000005, 0xFFF0000000000001
    one, inf, ninf = 0x3FF0000000000000, 0x7FF0000000000000, 0xFFF0000000000000
    assert float_op("add", "f64", f64(0), f64(snan), rounding="rn")[0] == 0x7FF8000000000001
    assert float_op("add", "f64", f64(snan), f64(qnan5), rounding="rn")[0] == qnan5           # b wins
    assert float_op("sub", "f64", f64(one), f64(nneg), rounding="rz")[0] == 0xFFF8000000000001  # not negated
    assert float_op("mul", "f64", f64(qnan5), f64(nneg), rounding="rn")[0] == 0xFFF8000000000001
    assert float_op("fma", "f64", f64(snan), f64(one), f64(qnan5), rounding="rn")[0] == qnan5      # c before a
    assert float_op("fma", "f64", f64(snan), f64(nneg), f64(qnan5), rounding="rm")[0] == 0xFFF8000000000001
    assert float_op("div", "f64", f64(snan), f64(qnan5), rounding="rn")[0] == 0x7FF8000000000001  # a wins
    assert float_op("rcp", "f64", f64(nneg), rounding="rn")[0] == 0xFFF8000000000001
    # invalid: 0 * inf, inf - inf, inf + -inf in fma, 0/0, sqrt(-min subnormal)
    assert float_op("mul", "f64", f64(0), f64(inf), rounding="rn")[0] == 0xFFF8000000000000
    assert float_op("sub", "f64", f64(inf), f64(inf), rounding="rn")[0] == 0xFFF8000000000000
    assert float_op("fma", "f64", f64(ninf), f64(0x3FF8000000000000), f64(inf), rounding="rn")[0] == \
        0xFFF8000000000000
    assert float_op("div", "f64", f64(0), f64(0), rounding="rn")[0] == 0xFFF8000000000000
    assert float_op("sqrt", "f64", f64(0x8000000000000001), rounding="rn")[0] == 0xFFF8000000000000
    # neg/abs are DADD -RZ, -x / |x|: a NaN is quieted and keeps its sign; min/max: both NaN -> b quieted
    assert float_op("neg", "f64", f64(nneg))[0] == 0xFFF8000000000001
    assert float_op("abs", "f64", f64(nneg))[0] == 0xFFF8000000000001
    assert float_op("min", "f64", f64(qnan5), f64(snan))[0] == 0x7FF8000000000001
    assert float_op("max", "f64", f64(snan), f64(one))[0] == one
    # f32 keeps the canonical NaN for all of these
    assert float_op("add", "f32", f32(0x7F800001), f32(0x3F800000), rounding="rn")[0] == 0x7FFFFFFF
    assert float_op("mul", "f32", f32(0), f32(0x7F800000), rounding="rn")[0] == 0x7FFFFFFF


def test_cvt_nan_rules():
    """F2F through the f64 unit keeps sign and payload (moved up, or its top bits kept) and quiets; SHF-based
    cvt.f32.bf16 keeps every bit; the .ftz forms and the rest give canonical NaNs (captured cases)."""
    assert cvt("f64", "f32", f32(0x7F800001))[0] == 0x7FF8000020000000
    assert cvt("f64", "f32", f32(0x7F800001), ftz=True)[0] == 0x7FFFFFFFE0000000    # FMUL.FTZ first
    assert cvt("f64", "f16", np.array([0xFEBE], np.uint16))[0] == 0xFFFAF80000000000
    assert cvt("f64", "bf16", np.array([0x7F81], np.uint16))[0] == 0x7FF8200000000000
    assert cvt("f32", "f64", f64(0x7FFF95CF3F2B1494), rounding="rm")[0] == 0x7FFCAE79  # 0xf95cf3f2b1494 >> 29
    assert cvt("f32", "f64", f64(0x7FF0000000000001), rounding="rn", ftz=True)[0] == 0x7FC00000
    assert cvt("f16", "f64", f64(0xFFF0000000000001), rounding="rz")[0] == 0xFE00
    assert cvt("bf16", "f64", f64(0xFFF248172FD51C87), rounding="rm")[0] == 0xFFD2
    assert cvt("f32", "f64", f64(0x7FF0000000000001), rounding="rn", sat=True)[0] == 0
    assert cvt("f32", "bf16", np.array([0x7F81], np.uint16))[0] == 0x7F810000          # stays signalling
    assert cvt("f32", "bf16", np.array([0x7F81], np.uint16), ftz=True)[0] == 0x7FFFFFFF
    assert cvt("f32", "f16", np.array([0x7C01], np.uint16))[0] == 0x7FFFFFFF
    assert cvt("f16", "f32", f32(0xFFC00000), rounding="rn")[0] == 0x7FFF
    assert cvt("f64", "f64", f64(0xFFF0000000000001), rounding="rni")[0] == 0xFFF8000000000001  # FRND.F64
    assert cvt("f64", "f64", f64(0x7FF0000000000001))[0] == 0x7FF0000000000001   # no instruction: a move
    # cvt.f32.f32 is a move too; cvt.f16.f16 / bf16.bf16 canonicalise (traces/ptx_alu_edges_sm90.npz)
    assert cvt("f32", "f32", f32(0x7F800001))[0] == 0x7F800001
    assert cvt("f32", "f32", f32(0xFFC00005))[0] == 0xFFC00005
    assert cvt("f16", "f16", np.array([0x7C01], np.uint16))[0] == 0x7FFF
    assert cvt("bf16", "bf16", np.array([0xFF81], np.uint16))[0] == 0x7FFF
    assert cvt("f32", "f32", f32(0x7F800001), rounding="rni")[0] == 0x7FFFFFFF


def test_cvt_float_to_int_nan_indefinite():
    """F2I with .NTZ (f32/f16/bf16 into <= 32 bits) gives 0 for NaN; without it (f64 sources, 64-bit
    destinations) the integer indefinite 1 << (width - 1) (captured: s64/u64 from f32/f16/bf16,
    s32/u32/s64/u8 from f64, 0 for the rest)."""
    h = np.array([0x7E00], np.uint16)
    assert cvt("s64", "f32", f32(0x7FC00000), rounding="rni")[0] == 0x8000000000000000
    assert cvt("u64", "f32", f32(0xFF800001), rounding="rzi")[0] == 0x8000000000000000
    assert cvt("s64", "f16", h, rounding="rni")[0] == 0x8000000000000000
    assert cvt("s64", "bf16", np.array([0x7FC0], np.uint16), rounding="rzi")[0] == 0x8000000000000000
    assert cvt("u32", "f64", f64(0x7FF8000000000000), rounding="rzi")[0] == 0x80000000
    assert cvt("u8", "f64", f64(0xFFF8000000000000), rounding="rni")[0] == 0x80
    for it in ("s8", "u8", "s16", "u16", "s32", "u32"):
        assert cvt(it, "f32", f32(0x7FC00000), rounding="rni")[0] == 0, it
    assert cvt("u32", "f16", h, rounding="rzi")[0] == 0
    # +-inf still saturate
    assert cvt("s64", "f32", f32(0xFF800000), rounding="rni")[0] == 0x8000000000000000
    assert cvt("u32", "f64", f64(0x7FF0000000000000), rounding="rni")[0] == 0xFFFFFFFF


@FEW
@given(xs=lanes("f32", 24), satfinite=st.booleans())
def test_cvt_rna_tf32_matches_reference(xs, satfinite):
    """cvt.rna{.satfinite}.tf32.f32: finite values round half away once (the Fraction reference; .satfinite
    overflow gives +-max finite); inf and NaN patterns lose their 13 low bits, and .satfinite then steps any
    pattern with an all-ones exponent down by 0x2000 (SASS: IADD 0x1000 for finite, LOP3 & 0xffffe000,
    @|x| >= inf VIADD -0x2000; captured: 0x7f800001 -> 0x7f800000, .satfinite 0x7fc00000 -> 0x7fbfe000)."""
    got = cvt("tf32", "f32", np.array(xs, np.uint32), rounding="rna", satfinite=satfinite)
    for i, x in enumerate(xs):
        v = R.decode(x, "f32")
        if v[0] in ("nan", "inf"):
            want = x & 0xFFFFE000
            if satfinite:
                want -= 0x2000
        else:
            want = R.encode(v, "tf32", "rna", satfinite=satfinite)
        assert int(got[i]) == want, hex(x)


def f64_near_min_normal_f32():
    """f64 patterns around 2^-126 (where the ftz cutoff lies), either sign, plus raw patterns."""
    sign = st.integers(0, 1).map(lambda s: s << 63)
    near = st.tuples(sign, st.sampled_from([0x380F, 0x3810]), st.integers(0, (1 << 48) - 1)).map(
        lambda t: t[0] | (t[1] << 48) | t[2])
    edges = st.tuples(sign, st.sampled_from([0x380FFFFFF0000000, 0x380FFFFFEFFFFFFF, 0x380FFFFFE0000000,
                                             0x380FFFFFE0000001, 0x380FFFFFDFFFFFFF, 0x3810000000000000,
                                             0x380FFFFFFFFFFFFF, 0x36A0000000000000, 1])).map(
        lambda t: t[0] | t[1])
    return st.one_of(near, edges, st.integers(0, (1 << 64) - 1))


@FEW
@given(xs=st.lists(f64_near_min_normal_f32(), min_size=16, max_size=16),
       mode=st.sampled_from(["rn", "rz", "rm", "rp"]))
def test_cvt_ftz_f32_f64_flushes_tiny_after_rounding(xs, mode):
    """cvt.ftz.f32.f64 flushes (to a zero of the input's sign) exactly the inputs that are tiny after rounding
    with an unbounded exponent (IEEE 754 7.5): ptxas's thresholds 0x380ffffff0000000 (rn), 2^-126 (rz; rm/rp
    on the side rounding toward zero) and 0x380fffffe0000000 inclusive (rm/rp rounding away). Captured (rn):
    0x380fffffefffffff -> 0 although it rounds to 2^-126."""
    got = cvt("f32", "f64", np.array(xs, np.uint64), rounding=mode, ftz=True)
    for i, x in enumerate(xs):
        v = R.decode(x, "f64")
        if v[0] == "nan":
            want = R.ref_cvt_nan(x, "f64", "f32")
        elif v[0] == "num" and R.tiny_after_rounding(v, mode):
            want = (x >> 63) << 31
        else:
            want = R.encode(v, "f32", mode)
        assert int(got[i]) == want, (mode, hex(x))
    assert cvt("f32", "f64", f64(0x380FFFFFEFFFFFFF), rounding="rn", ftz=True)[0] == 0
    assert cvt("f32", "f64", f64(0x380FFFFFEFFFFFFF), rounding="rn")[0] == 0x00800000


def f32_near_min_normal_operands(op):
    """f32 operands whose mul / fma / div / rcp result lies near 2^-126 (where .ftz decides): a in the lowest
    binades (or a subnormal), b near 1 (div: in [1, 4); rcp: x near 2^126), fma's c a tiny value or a zero."""
    sign = st.integers(0, 1).map(lambda s: s << 31)
    man = st.one_of(st.integers(0, (1 << 23) - 1), st.sampled_from([(1 << 23) - 1, (1 << 23) - 2, 0, 1]))

    def pat(fields, known=()):  # known: magnitudes that put results right at 2^-126 (the deciding window)
        drawn = st.tuples(sign, st.sampled_from(fields), man).map(lambda t: t[0] | (t[1] << 23) | t[2])
        return st.one_of(drawn, st.tuples(sign, st.sampled_from(known)).map(lambda t: t[0] | t[1])) if known \
            else drawn
    tiny = [0x00FFFFFF, 0x00FFFFFE, 0x00FFFFFD, 0x00800001, 0x00800003]
    near_one = [0x3F000000, 0x3F000001, 0x3F7FFFFE, 0x3F7FFFFF, 0x3F800001]
    if op == "rcp":
        return st.tuples(pat([252, 253, 254], [0x7E800001, 0x7E800003, 0x7E7FFFFF]))
    if op == "div":
        return st.tuples(pat([0, 1, 2], tiny), pat([127, 128], [0x40000000, 0x3F800001, 0x3FFFFFFF]))
    if op == "mul":
        return st.tuples(pat([0, 1, 2], tiny), pat([125, 126, 127], near_one))
    return st.tuples(pat([0, 1, 2], tiny), pat([125, 126, 127], near_one),
                     st.one_of(pat([0]), st.sampled_from([0, 1 << 31])))


@pytest.mark.parametrize("op", ["mul", "fma", "div", "rcp"])
@FEW
@given(data=st.data())
def test_f32_ftz_flushes_results_tiny_after_rounding(op, data):
    """.ftz.f32: a result is flushed when it is tiny after rounding with an unbounded exponent (IEEE 754 7.5),
    measured on an H100 (traces/ptx_alu_edges_sm90.npz: all 1,059 cases of mul/fma/div/rcp .rn/.rm/.rp.ftz.f32
    where this rule and "subnormal after rounding" disagree follow this rule). The Fraction reference encodes
    the rule (ptx_reference.encode, tiny_after_rounding); operands are drawn so that results straddle 2^-126."""
    mode = data.draw(st.sampled_from(["rn", "rz", "rm", "rp"]))
    rows = data.draw(st.lists(f32_near_min_normal_operands(op), min_size=12, max_size=12))
    got = float_op(op, "f32", *[np.array(c, np.uint32) for c in zip(*rows)], rounding=mode, ftz=True)
    for g, a in zip(got, rows):
        want = {"mul": lambda: R.ref_mul(a[0], a[1], "f32", mode, True),
                "fma": lambda: R.ref_fma(a[0], a[1], a[2], "f32", mode, True),
                "div": lambda: R.ref_div(a[0], a[1], "f32", mode, True),
                "rcp": lambda: R.ref_div(R.encode(("num", 1), "f32"), a[0], "f32", mode, True)}[op]()
        assert int(g) == want, (op, mode, [hex(v) for v in a], hex(int(g)), hex(want))


def test_f32_ftz_hand_worked_flushes():
    """0x00ffffff * 0.5 = 2^-126 - 2^-150 exactly: halfway between 0x007fffff and 0x00800000 on the f32 grid (ties
    to even: 2^-126, a normal result), exact and below 2^-126 with an unbounded exponent: .ftz flushes it (the
    H100 gives 0x00000000, traces/ptx_alu_edges_sm90.npz); without .ftz it is 0x00800000. 1 / 0x7e800001 =
    2^-126 / (1 + 2^-23) lies in (2^-126 - 2^-149, 2^-126 - 2^-150): .rp rounds it up to 2^-126 on the f32
    grid but to 2^-126 - 2^-150 at full precision, so .rp.ftz flushes it too (H100: 0x00000000). A value that
    reaches 2^-126 at full precision is not tiny: 0x00800001 * 0x3f7ffffe = 2^-126 (1 + 2^-23)(1 - 2^-23) =
    2^-126 - 2^-172 lies above 2^-126 - 2^-150, the largest 24-bit value below 2^-126: .rn and .rp round it to
    2^-126 and keep 0x00800000, .rz and .rm (positive) truncate it below and flush it."""
    assert float_op("mul", "f32", f32(0x00FFFFFF), f32(0x3F000000), rounding="rn")[0] == 0x00800000
    assert float_op("mul", "f32", f32(0x00FFFFFF), f32(0x3F000000), rounding="rn", ftz=True)[0] == 0
    assert float_op("mul", "f32", f32(0x80FFFFFF), f32(0x3F000000), rounding="rm", ftz=True)[0] == 0x80000000
    assert float_op("rcp", "f32", f32(0x7E800001), rounding="rp", ftz=True)[0] == 0
    for mode, want in (("rn", 0x00800000), ("rp", 0x00800000), ("rz", 0), ("rm", 0)):
        assert float_op("mul", "f32", f32(0x00800001), f32(0x3F7FFFFE), rounding=mode, ftz=True)[0] == want, mode


# ------------------------------------------------------------------ hand-worked integer rules

def u32(*xs):
    return np.array(xs, np.uint32)


def test_prmt_modes():
    a, b = u32(0x33221100), u32(0x77665544)  # source bytes b7..b0 = 77 66 55 44 33 22 11 00
    # generic: selectors per destination byte (low nibble first); 0x5410 -> bytes 0,1,4,5 of {b,a}
    assert prmt(a, b, u32(0x5410))[0] == 0x55441100
    # msb of a selector replicates the byte's sign: a = 0x000000F0, c = 0x4448: destination byte 0 has
    # selector 8 (byte 0 = 0xF0, sign 1 -> 0xFF), bytes 1-3 selector 4 (byte 4 = b's low byte 0x44)
    assert prmt(u32(0xF0), b, u32(0x4448))[0] == 0x444444FF
    # f4e c=1: bytes 4 3 2 1 -> 0x44332211; b4e c=0: bytes 5 6 7 0 -> 0x55667700
    assert prmt(a, b, u32(1), mode="f4e")[0] == 0x44332211
    assert prmt(a, b, u32(0), mode="b4e")[0] == 0x55667700
    # rc8 c=2: byte 2 replicated; ecl c=1: 3 2 1 1; ecr c=2: 2 2 1 0; rc16 c=1: half 1 twice (3 2 3 2)
    assert prmt(a, b, u32(2), mode="rc8")[0] == 0x22222222
    assert prmt(a, b, u32(1), mode="ecl")[0] == 0x33221111
    assert prmt(a, b, u32(2), mode="ecr")[0] == 0x22221100
    assert prmt(a, b, u32(1), mode="rc16")[0] == 0x33223322


@FEW
@given(st.lists(st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
                min_size=8, max_size=8))
def test_prmt_generic_matches_ptx_pseudocode(abc):
    """PTX 9.7.9.x prmt, generic form: ctl[j] = c >> 4j & 0xf; byte = {b, a} byte (ctl & 7), or its sign
    bit replicated when ctl & 8."""
    a, b, c = (u32(*[t[i] for t in abc]) for i in range(3))
    got = prmt(a, b, c)
    for k, (x, y, z) in enumerate(abc):
        src = (y << 32) | x
        want = 0
        for j in range(4):
            ctl = (z >> (4 * j)) & 0xF
            byte = (src >> (8 * (ctl & 7))) & 0xFF
            if ctl & 8:
                byte = 0xFF if byte & 0x80 else 0
            want |= byte << (8 * j)
        assert int(got[k]) == want


def test_bfe_bfind_shf_shifts():
    # bfe.s32 0x00000F00, pos 8, len 4 -> field 0xF, sign bit (bit 11) = 1 -> 0xFFFFFFFF; bfe.u32 -> 0xF
    assert int_op("bfe", "s32", u32(0xF00), u32(8), u32(4))[0] == 0xFFFFFFFF
    assert int_op("bfe", "u32", u32(0xF00), u32(8), u32(4))[0] == 0xF
    # pos beyond the msb: signed fills with a[31]; len 0 -> 0
    assert int_op("bfe", "s32", u32(0x80000000), u32(40), u32(3))[0] == 0xFFFFFFFF
    assert int_op("bfe", "s32", u32(0x80000000), u32(4), u32(0))[0] == 0
    # bfind: msb position; signed negative: most significant 0; .shiftamt = 31 - pos; none -> 0xffffffff
    assert list(int_op("bfind", "u32", u32(0x10, 0))) == [4, 0xFFFFFFFF]
    assert int_op("bfind", "s32", u32(0xFFFFFF00))[0] == 7
    assert int_op("bfind", "u32", u32(0x10), shiftamt=True)[0] == 27
    # shf.l.clamp with c = 40 -> n = 32 -> d = a; .wrap -> n = 8
    assert int_op("shf.l", "b32", u32(0x12345678), u32(0x9ABCDEF0), u32(40), mode="clamp")[0] == 0x12345678
    assert int_op("shf.l", "b32", u32(0x12345678), u32(0x9ABCDEF0), u32(40), mode="wrap")[0] == 0xBCDEF012
    assert int_op("shf.r", "b32", u32(0x12345678), u32(0x9ABCDEF0), u32(8), mode="clamp")[0] == 0xF0123456
    # shifts clamp at the width; shr.s fills with the sign
    assert int_op("shl", "b32", u32(1), u32(32))[0] == 0
    assert int_op("shr", "s32", u32(0x80000000), u32(100))[0] == 0xFFFFFFFF
    assert int_op("shr", "u16", np.array([0x8000], np.uint16), u32(15))[0] == 1


def test_lop3_and_misc():
    a, b, c = u32(0xF0F0F0F0), u32(0xCCCCCCCC), u32(0xAAAAAAAA)
    # immLut = F(0xF0, 0xCC, 0xAA): the canonical inputs reproduce the LUT byte
    for lut in (0x00, 0x96, 0xE8, 0x1A, 0xFF):
        assert lop3(a, b, c, lut)[0] == lut * 0x01010101
    # szext.clamp.s32 0x80, 8 -> 0xFFFFFF80; bmsk.wrap 1, 2 -> 0x6 (PTX example)
    assert int_op("szext", "s32", u32(0x80), u32(8), mode="clamp")[0] == 0xFFFFFF80
    assert int_op("bmsk", "b32", u32(1), u32(2), mode="wrap")[0] == 6
    # dp4a.s32.u32: a bytes (-1, 2, 0, 0) . b bytes (3, 4, 0, 0) + 10 = -3 + 8 + 10 = 15
    assert int_op("dp4a", "s32.u32", u32(0x02FF), u32(0x0403), u32(10))[0] == 15
    # mul24.hi.u32: (0xFFFFFF * 0xFFFFFF) >> 16 = 0xFFFFFE000001 >> 16 = 0xFFFFFE00
    assert int_op("mul24", "u32", u32(0xFFFFFF), u32(0xFFFFFF), mode="hi")[0] == 0xFFFFFE00


def test_division_carry_saturation():
    # by zero: all ones (ptxas's sm_90a sequence); INT_MIN / -1 wraps; rem keeps the dividend's sign
    assert list(int_op("div", "s32", u32(5, 0x80000000, 0xFFFFFFF9), u32(0, 0xFFFFFFFF, 2))) == \
        [0xFFFFFFFF, 0x80000000, 0xFFFFFFFD]
    assert int_op("rem", "s32", u32(0xFFFFFFF9), u32(2))[0] == 0xFFFFFFFF
    assert int_op("rem", "u64", np.array([7], np.uint64), np.array([0], np.uint64))[0] == 0xFFFFFFFFFFFFFFFF
    # add.cc: 0xffffffff + 1 = 0, carry 1; addc adds CF
    d, cf = int_op("add", "u32", u32(0xFFFFFFFF), u32(1), cc=True)
    assert d[0] == 0 and cf[0]
    assert int_op("addc", "u32", u32(1), u32(2), carry_in=np.array([True]))[0] == 4
    # .sat .s32 clamps; mad.hi.sat.s32
    assert int_op("add", "s32", u32(0x7FFFFFFF), u32(1), sat=True)[0] == 0x7FFFFFFF
    assert int_op("sub", "s32", u32(0x80000000), u32(1), sat=True)[0] == 0x80000000
    # mul.hi.s64: (-1) * 3 = -3 -> high half all ones; mul.wide.s32
    assert int_op("mul", "s64", np.array([2**64 - 1], np.uint64), np.array([3], np.uint64), mode="hi")[0] == 2**64 - 1
    assert int_op("mul", "s32", u32(0xFFFFFFFF), u32(3), mode="wide")[0] == 2**64 - 3


def test_carry_flag_is_a_carry():
    """sub.cc writes the carry of a + ~b + 1 (1 when a >= b: NOT a borrow), subc computes a + ~b + CF
    (= a - b - !CF) and writes its carry (captured: subc.cc.u32 0xfffffffe, 0x55555555 with CF 0 ->
    0xaaaaaaa8, CF 1; sub.cc 0 - 0 -> 0, CF 1)."""
    d, cf = int_op("sub", "u32", u32(0, 0, 5), u32(0, 1, 2), cc=True)
    assert list(d) == [0, 0xFFFFFFFF, 3] and list(cf) == [True, False, True]
    d, cf = int_op("subc", "u32", u32(0xFFFFFFFE, 5, 5), u32(0x55555555, 2, 5), cc=True,
                   carry_in=np.array([False, True, False]))
    assert list(d) == [0xAAAAAAA8, 3, 0xFFFFFFFF] and list(cf) == [True, True, False]
    # two-word subtraction 0x1_00000000 - 1 = 0x0_ffffffff: sub.cc on the low words, subc on the high words
    lo, cf = int_op("sub", "u32", u32(0), u32(1), cc=True)
    hi = int_op("subc", "u32", u32(1), u32(0), carry_in=cf)
    assert (int(hi[0]), int(lo[0])) == (0, 0xFFFFFFFF)


@FEW
@given(st.lists(st.tuples(st.sampled_from([32, 64]), st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1),
                          st.booleans()), min_size=8, max_size=8))
def test_carry_chain_matches_plain_arithmetic(cases):
    """sub.cc / subc.cc against the sums a + ~b + 1 and a + ~b + CF in Python integers."""
    for w, a, b, cin in cases:
        m = (1 << w) - 1
        a, b = a & m, b & m
        dt = UT[w]
        d, cf = int_op("sub", f"u{w}", np.array([a], dt), np.array([b], dt), cc=True)
        s = a + (~b & m) + 1
        assert (int(d[0]), bool(cf[0])) == (s & m, s >> w == 1)
        d, cf = int_op("subc", f"u{w}", np.array([a], dt), np.array([b], dt), cc=True, carry_in=np.array([cin]))
        s = a + (~b & m) + cin
        assert (int(d[0]), bool(cf[0])) == (s & m, s >> w == 1)


def test_bfe_bfi_64_use_full_operands():
    """The 64-bit forms do not reduce pos/len modulo 256 (captured): len 0x100 keeps every bit."""
    a = np.array([0x55555555], np.uint64)
    assert int_op("bfe", "u64", a, u32(7), u32(0x100))[0] == 0xAAAAAA          # (a >> 7), mask ~0
    assert int_op("bfe", "s64", np.array([0x7F], np.uint64), u32(1), u32(0x100))[0] == 0x3F
    assert int_op("bfe", "s64", np.array([0x80], np.uint64), u32(4), u32(4))[0] == 2**64 - 8  # 0b1000 -> -8
    assert int_op("bfe", "u64", a, u32(0x40), u32(8))[0] == 0                   # pos >= 64: nothing
    # bfi.b64 a=3 into b=0x8000000000000001 at 16, len 0x100: (3 << 16) | (b & 0xffff) = 0x30001
    assert int_op("bfi", "b64", np.array([3], np.uint64), np.array([0x8000000000000001], np.uint64), u32(0x10),
                  u32(0x100))[0] == 0x30001
    # the 32-bit forms keep PTX's modulo 256: bfe.u32 len 0x100 -> len 0 -> 0
    assert int_op("bfe", "u32", u32(0x55555555), u32(7), u32(0x100))[0] == 0


def _pos_len():
    return st.one_of(st.integers(0, 70), st.integers(250, 330), st.sampled_from([0x100, 0x140, 0xFFFFFFFF]),
                     st.integers(0, 2**32 - 1))


@FEW
@given(st.lists(st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1), _pos_len(), _pos_len()),
                min_size=12, max_size=12))
def test_bfe_bfi_64_match_the_sass_sequence(cases):
    """bfe.u64/.s64 and bfi.b64 against ptxas 13.0's sm_90a instruction sequence run on 32-bit halves in
    Python (ptx_reference.sass_bfe64 / sass_bfi64; that model reproduces all 27,192 captured cases)."""
    a, b, p, n = (np.array([c[i] for c in cases], np.uint64 if i < 2 else np.uint32) for i in range(4))
    bu = int_op("bfe", "u64", a, p, n)
    bs = int_op("bfe", "s64", a, p, n)
    bi = int_op("bfi", "b64", a, b, p, n)
    for k, (x, y, pos, ln) in enumerate(cases):
        assert int(bu[k]) == R.sass_bfe64(x, pos, ln, False), (hex(x), pos, ln)
        assert int(bs[k]) == R.sass_bfe64(x, pos, ln, True), (hex(x), pos, ln)
        assert int(bi[k]) == R.sass_bfi64(x, y, pos, ln), (hex(x), hex(y), pos, ln)


# ------------------------------------------------------------------ the hardware capture

TRACE = os.path.join(TRACES, "ptx_alu_sm90.npz")


@pytest.mark.slow
def test_hardware_trace_replays():
    if not os.path.exists(TRACE):
        pytest.skip("traces/ptx_alu_sm90.npz not captured yet (scripts/capture/capture_ptx_alu.py docstring: device command)")
    from tcemu.traces.kinds.ptx_alu import replay_alu_trace
    r = replay_alu_trace(TRACE)
    bad = {k: v for k, v in r.forms.items() if v.status != "match"}
    assert not bad, "\n" + r.table()
    # 708 forms matched case for case (1,075,244 cases), the 29 approximate ones (31,486 cases) included
    approx = [k for k in r.forms if "approx" in k or "full" in k]
    assert len(r.forms) == 708 and len(approx) == 29
    assert sum(v.matched for v in r.forms.values()) == 1075244


def test_replay_reports_planted_mismatch(tmp_path):
    """A two-form trace written by hand: add.rn.f32 1+1 = 2 (0x40000000) and a planted wrong result."""
    import json
    from tcemu.traces.kinds.ptx_alu import replay_alu_trace
    meta = {"format": "tcemu-trace", "version": 1, "kind": "ptx_alu", "arch": "sm90",
            "forms": [{"name": "add.rn.f32", "dst": [32], "src": ["f32", "f32"]},
                      {"name": "ex2.approx.f32", "dst": [32], "src": ["f32"]}]}
    cols = dict(op=np.array([0, 0, 1], np.int16), a=np.array([0x3F800000, 0x3F800000, 0], np.uint64),
                b=np.array([0x3F800000, 0x3F800000, 0], np.uint64), c=np.zeros(3, np.uint64),
                e=np.zeros(3, np.uint64), d=np.array([0x40000000, 0x40000001, 0x3F800000], np.uint64),
                d1=np.zeros(3, np.uint64))
    path = tmp_path / "t.npz"
    np.savez(path, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **cols)
    r = replay_alu_trace(str(path))
    assert (r.forms["add.rn.f32"].cases, r.forms["add.rn.f32"].matched) == (2, 1)
    assert r.forms["add.rn.f32"].status == "MISMATCH" and "0x40000001" in r.forms["add.rn.f32"].first_mismatch
    assert r.forms["ex2.approx.f32"].status == "match"   # ex2(0) = 1, as the H100 computes it
    assert not r.ok


@pytest.mark.slow
def test_capture_script_consistent(tmp_path):
    """The committed kernels file is what the driver generates; every captured form is either modelled or
    computed (no form the capture issues trips tcemu's modifier validation); --dry-run writes
    a trace the replay reads."""
    sys.path.insert(0, CAPTURE)
    import capture_ptx_alu as cap
    from tcemu.traces.kinds.ptx_alu import evaluate, load_alu_trace
    with open(os.path.join(CAPTURE, "ptx_alu_ops.inc")) as fh:
        assert fh.read() == cap.gen_inc()
    rng = np.random.default_rng(0)
    refused = []
    for f in cap.FORMS:
        s = cap.cases_for(f, rng, 4)
        try:
            evaluate(f.name, f.dst, f.src, s[:, 0], s[:, 1], s[:, 2], s[:, 3])
        except PtxUnsupported:
            refused.append(f.name)
    assert refused == []   # every captured form is modelled, the approximate ones included
    out = tmp_path / "dry.npz"
    old = sys.argv
    sys.argv = ["capture_ptx_alu.py", "--dry-run", "--random", "2", "--out", str(out)]
    try:
        cap.main()
    finally:
        sys.argv = old
    meta, cols = load_alu_trace(str(out))
    assert meta["kind"] == "ptx_alu" and meta["dry_run"] and len(meta["forms"]) == len(cap.FORMS)
    assert cols["op"].size == cols["d"].size > len(cap.FORMS)
