"""tcemu.matmul: exact bits against silicon (Triton and cuBLAS traces), against the instruction models (wgmma,
tcgen05 through their own code paths), and the fast engine against the reference engine (fdp per step)."""
import json
import os
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tcemu
from tcemu import TcemuError, matmul
from tcemu.gemm import engine as mm_mod
from tcemu.arith.chain import fma_f32
from tcemu.arith.formats import encode, get_format
from tcemu.traces.inputs import input_bits
from tcemu.gemm.engine import BlockScales
from tcemu.traces import load_trace

from paths import PTX_FIXTURES, TRACES

TRITON = os.path.join(TRACES, "triton_kernels_sm90.npz")
TORCH = os.path.join(TRACES, "torch_gemm_sm90.npz")
RAW = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def raw(x):
    return np.asarray(x).view(RAW[np.asarray(x).itemsize])


def both(*args, **kw):
    """(fast, reference) raw output bits."""
    return raw(matmul(*args, **kw)), raw(matmul(*args, engine="reference", **kw))


# ---- silicon: the 18 Triton launches (traces/triton_kernels_sm90.npz), through matmul instead of the PTX
# interpreter. The inputs come from each case's seeds exactly as tcemu/traces/kinds/kernel_outputs.py builds them.

B_STORED_NK = ("matmul_e4m3", "matmul_tma_bf16", "matmul_dtma_bf16")  # fixture descriptions: "B stored (N,K)"
TRITON_TYPES = {"bf16": "bf16", "f16": "f16", "f32": "tf32", "e4m3": "e4m3"}  # tl.dot on f32: tf32


@pytest.mark.slow
def test_triton_launches_equal_the_chain():
    t = load_trace(TRITON)
    cols, cases = t.columns, t.meta["cases"]
    assert len(cases) == 18
    for i, case in enumerate(cases):
        ins = {s["buffer"]: s for s in case["inputs"]}
        A, B = (input_bits(ins[x]["dtype"], ins[x]["shape"], ins[x]["seed"], ins[x]["stream"]) for x in "ab")
        fixture = json.load(open(os.path.join(PTX_FIXTURES, case["fixture"] + ".json")))
        nk = case["fixture"] in B_STORED_NK
        assert ("stored (N,K)" in fixture["description"]) == nk
        dt = TRITON_TYPES[ins["a"]["dtype"]]
        got = matmul(A, B.T if nk else B, dtype_a=dt, dtype_b=dt, out_dtype=case["output"]["dtype"])
        hw = cols["bits"][cols["offsets"][i]:cols["offsets"][i + 1]]
        assert np.array_equal(got.view(np.uint8).reshape(-1), hw), (i, case["fixture"])


def test_triton_trace_rejects_neighbouring_models():
    """The trace can fail: a chain promoted into f32 every 4 fp8 steps, or a coarser K step, disagree."""
    t = load_trace(TRITON)
    cols, cases = t.columns, t.meta["cases"]
    for i, kw in ((6, dict(promote_every=4)), (1, dict(k_step=32)), (9, dict(k_step=16))):
        case = cases[i]
        ins = {s["buffer"]: s for s in case["inputs"]}
        A, B = (input_bits(ins[x]["dtype"], ins[x]["shape"], ins[x]["seed"], ins[x]["stream"]) for x in "ab")
        nk = case["fixture"] in B_STORED_NK
        dt = TRITON_TYPES[ins["a"]["dtype"]]
        got = matmul(A, B.T if nk else B, dtype_a=dt, dtype_b=dt, out_dtype=case["output"]["dtype"], **kw)
        hw = cols["bits"][cols["offsets"][i]:cols["offsets"][i + 1]]
        assert np.count_nonzero(got.view(np.uint8).reshape(-1) != hw) > 0, (i, kw)


# ---- silicon: CUTLASS sm_90a GEMMs (traces/cutlass_kernels_sm90.npz), through matmul instead of the PTX
# interpreter. CUTLASS's first MMA of a tile runs without C (scale-d 0); the fp8 "promote" kernel adds the wgmma
# partial sums into f32 registers every 4 K blocks (its mainloop), "fastaccum" never does.

CUTLASS = os.path.join(TRACES, "cutlass_kernels_sm90.npz")
CUTLASS_PROMOTE = {"cutlass_fp8_promote": 4}


def _cutlass_cases():
    from tcemu.traces import launches
    t = load_trace(CUTLASS)
    for i, case in enumerate(t.meta["cases"]):
        if case["fixture"] == "cutlass_cute_tutorial":   # an f16 tutorial kernel with C stored (N, M): see test_traces
            continue
        rec = launches.trace_fixture(t, case["fixture"])[1]["launches"][case["launch"]]
        ins = launches.input_arrays(rec, int(case["seed"]))
        hw = t.columns["bits"][t.columns["offsets"][i]:t.columns["offsets"][i + 1]]
        yield case, ins["A"], ins["B"].T, hw          # B is stored (N, K): K-major, as CUTLASS's TN GEMM


def test_cutlass_launches_equal_the_chain():
    seen = set()
    for case, A, B, hw in _cutlass_cases():
        dt, od = case["inputs"][0]["dtype"], case["output"]["dtype"]
        got = matmul(A, B, dtype_a=dt, dtype_b=dt, out_dtype=od, init="none",
                     promote_every=CUTLASS_PROMOTE.get(case["fixture"]))
        assert np.array_equal(got.view(np.uint8).reshape(-1), hw), (case["fixture"], case["launch"])
        seen.add(case["fixture"])
    assert len(seen) == 5


def test_cutlass_fp8_trace_tells_promotion_apart():
    """The fp8 launches decide between fast accumulation and promotion every 4 blocks: each is wrong for the
    other kernel."""
    for case, A, B, hw in _cutlass_cases():
        if case["fixture"] not in ("cutlass_fp8_promote", "cutlass_fp8_fastaccum"):
            continue
        wrong = None if case["fixture"] == "cutlass_fp8_promote" else 4
        got = matmul(A, B, dtype_a="e4m3", dtype_b="e4m3", out_dtype=case["output"]["dtype"], init="none",
                     promote_every=wrong)
        assert np.count_nonzero(got.view(np.uint8).reshape(-1) != hw) > 1000, case["fixture"]


# ---- silicon: cuBLAS (traces/torch_gemm_sm90.npz; the replay of every claimed case is in test_traces.py)

def _torch_case(index):
    from tcemu.traces.kinds.gemm_outputs import case_inputs, case_model, compare, run_case
    t = load_trace(TORCH)
    case = t.meta["cases"][index]
    kw, reason = case_model(case, t.meta)
    return t, case, kw, reason, case_inputs, compare, run_case


def test_torch_trace_claims_and_reasons():
    from tcemu.traces.kinds.gemm_outputs import case_model
    t = load_trace(TORCH)
    claimed = [i for i, c in enumerate(t.meta["cases"]) if c["status"] == "ok" and case_model(c, t.meta)[0]]
    assert len(claimed) == 23 and len(t.meta["cases"]) == 32
    reasons = {case_model(c, t.meta)[1] for c in t.meta["cases"] if c["status"] == "ok"} - {None}
    assert reasons == {"f32 without TF32: SIMT FFMA kernels, not a tensor core",
                       "cuBLAS split-K reduction (splitKreduce_kernel) is not modelled"}


@pytest.mark.parametrize("index,change,wrong", [
    (14, "promote_every", [None, 1, 2, 8]),   # e4m3 -> f32, no fast accumulation: promotion every 4 steps only
    (12, "promote_every", [None, 2, 8]),      # the same -> bf16
    (15, "promote_every", [4]),               # fast accumulation is the plain chain, not promoted
    (10, "tf32_rounding", [None, "rna"]),     # cuBLAS tf32: inputs rounded to nearest even, not truncated
    (8, "k_step", [32]),                      # bf16: k16 steps
])
def test_torch_trace_rejects_neighbouring_models(index, change, wrong):
    t, case, kw, _, _, compare, run_case = _torch_case(index)
    rows, same, stored, M = compare(t.columns, index, case, run_case(case, kw))
    assert (rows, same) == (M, stored)  # the claimed model
    for value in wrong:
        alt = dict(kw, **{change: value})
        if value is None:
            alt.pop(change)
        rows, same, stored, M = compare(t.columns, index, case, run_case(case, alt))
        assert rows < M and same < stored, (change, value)


# ---- the instruction models: one wgmma / tcgen05.mma per K step, through their own code paths

def _bits(rng, fmt, shape, window=None, special=0.0, zero=0.0):
    """Raw patterns of a float format: uniformly random (every class) when window is None, else exponents in
    [window[0], window[1]] (unbiased), random signs and mantissas; then a fraction of zeros and of NaN/inf."""
    f = get_format(fmt)
    if window is None:
        x = rng.integers(0, 1 << f.bits, shape)
    else:
        top = (1 << f.exp_bits) - (2 if f.special == 0 else 1)
        field = np.clip(rng.integers(window[0], window[1] + 1, shape) + f.bias, 1, top)
        x = (rng.integers(0, 2, shape) << (f.bits - 1 - f.shift) if f.signed else 0) | (field << f.man_bits) \
            | rng.integers(0, 1 << f.man_bits, shape)
        if f.special == 1:  # e4m3: all-ones exponent and mantissa is NaN
            x = np.where((x & ((1 << (f.exp_bits + f.man_bits)) - 1)) == (1 << (f.exp_bits + f.man_bits)) - 1,
                         x ^ 1, x)
        x = x << f.shift
    if zero:
        x = np.where(rng.random(shape) < zero, rng.integers(0, 2, shape) << (f.bits - 1), x)
    if special and f.nan_bits is not None:
        x = np.where(rng.random(shape) < special, f.nan_bits if fmt != "e5m2" else 0x7C, x)
    return x.astype(f.storage_dtype)


HOPPER = [("tf32", "tf32", "f32"), ("f16", "f16", "f16"), ("f16", "f16", "f32"), ("bf16", "bf16", "f32"),
          ("e4m3", "e5m2", "f32"), ("e5m2", "e5m2", "f16")]


@pytest.mark.parametrize("ta,tb,td", HOPPER)
def test_chain_equals_wgmma_chain(ta, tb, td):
    """K = 3 instructions + a tail: matmul equals wgmma issued three times (the tail zero-padded) on C."""
    from tcemu.hopper.wgmma import K_OF
    rng = np.random.default_rng(7)
    k = K_OF[ta]
    K = 3 * k - k // 2
    a, b = _bits(rng, ta, (64, K), (-6, 6), 0.02, 0.05), _bits(rng, tb, (K, 24), (-6, 6), 0.02, 0.05)
    c = rng.standard_normal((64, 24)).astype(np.float32 if td == "f32" else np.float16)
    got = raw(matmul(a, b, c=c, dtype_a=ta, dtype_b=tb, dtype_d=td))
    ap = np.zeros((64, 3 * k), a.dtype)
    ap[:, :K] = a
    bp = np.zeros((24, 3 * k), b.dtype)
    bp[:, :K] = b.T
    d = c
    for s in range(3):
        smem = tcemu.SharedMemory()
        da, db = tcemu.GmmaDescriptor(0x400, 128, 256), tcemu.GmmaDescriptor(0x8400, 128, 256)
        smem.write_operand(da, ap[:, s * k:(s + 1) * k], dtype=ta)
        smem.write_operand(db, bp[:, s * k:(s + 1) * k], dtype=tb)
        d = tcemu.wgmma(smem, da, db, shape=f"m64n24k{k}", dtype_a=ta, dtype_b=tb, dtype_d=td, c=d)
    assert np.array_equal(got, raw(d))


BLACKWELL = [("f16", "bf16", "bf16", "f32"), ("tf32", "tf32", "tf32", "f32"), ("f8f6f4", "e4m3", "e2m1", "f32"),
             ("f8f6f4", "e3m2", "e2m3", "f16"), ("mxf8f6f4", "e5m2", "e4m3", "f32"),
             ("mxf4nvf4", "e2m1", "e2m1", "f32")]


@pytest.mark.parametrize("kind,ta,tb,td", BLACKWELL)
def test_chain_equals_tcgen05_chain(kind, ta, tb, td):
    """sm100: matmul over two instructions' K equals blackwell's arithmetic applied twice on C."""
    from tcemu.blackwell.mma import K_OF_KIND, _arithmetic
    from tcemu.blackwell.instr import InstrDescriptor
    rng = np.random.default_rng(11)
    k = K_OF_KIND[kind]
    a, b = _bits(rng, ta, (16, 2 * k), (-3, 3), 0.0, 0.05), _bits(rng, tb, (2 * k, 8), (-3, 3), 0.0, 0.05)
    c = rng.standard_normal((16, 8)).astype(np.float32 if td == "f32" else np.float16)
    kw, sa, sb, bs = {}, None, None, 0
    d = InstrDescriptor(kind, ta, tb, m=128, n=256, dtype_d=td if kind not in ("mxf8f6f4", "mxf4nvf4") else "f32",
                        scale_type="ue4m3" if kind == "mxf4nvf4" else "ue8m0")
    if kind in ("mxf8f6f4", "mxf4nvf4"):
        bs = 32 if kind == "mxf8f6f4" else 16
        lo, hi = (118, 136) if kind == "mxf8f6f4" else (0x30, 0x48)
        sa, sb = rng.integers(lo, hi, (16, 2 * k // bs)), rng.integers(lo, hi, (8, 2 * k // bs))
        kw = dict(scales=(sa, sb), kind=kind, block_size_k=bs if kind == "mxf4nvf4" else None,
                  scale_type="ue4m3" if kind == "mxf4nvf4" else None)
    got = raw(matmul(a, b, c=c, arch="sm100", dtype_a=ta, dtype_b=tb, dtype_d=td, **kw))
    acc = raw(c)
    for s in range(2):
        sl = slice(s * k, (s + 1) * k)
        ss = slice(s * k // bs, (s + 1) * k // bs) if bs else None
        acc = _arithmetic(d, a[:, sl], np.ascontiguousarray(b[sl].T), acc, 0, None if sa is None else sa[:, ss],
                          None if sb is None else sb[:, ss], bs)
    assert np.array_equal(got, acc)


# ---- promotion, block scales, split-K: against hand-built chains with exact rational FFMA

def _f32_rne(q: Fraction) -> float:
    """q rounded to f32, nearest even, with subnormals and overflow to inf (independent of tcemu)."""
    if q == 0:
        return 0.0
    neg, q = q < 0, abs(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    e = e - 1 if Fraction(2) ** e > q else e
    ulp = Fraction(2) ** (max(e, -126) - 23)
    n, r = divmod(q, ulp)
    n += (2 * r > ulp) or (2 * r == ulp and n % 2)
    v = float(n * ulp) if n * ulp < 2 ** 128 else float("inf")
    return -v if neg else v


@given(st.floats(width=32, allow_nan=False, allow_infinity=False), st.floats(width=32, allow_nan=False,
                                                                             allow_infinity=False),
       st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_fma_f32_is_correctly_rounded(s, t, m):
    want = _f32_rne(Fraction(s) * Fraction(t) + Fraction(m))
    got = float(fma_f32(s, t, m))
    if want == 0:  # IEEE 754 6.3: an exact zero sum is +0 unless both addends are -0 (s * t is exact here)
        want = -0.0 if (np.signbit(s) != np.signbit(t)) and np.signbit(m) and (s * t == 0) else 0.0
    assert np.float32(got).view(np.uint32) == np.float32(want).view(np.uint32)


def test_fma_f32_halfway_cases():
    """Ties that a plain float64 sum would double-round: 1 + 2^-24 + 2^-60 rounds up (the sticky 2^-60)."""
    assert fma_f32(2.0 ** -30, 2.0 ** -30, 1.0 + 2.0 ** -24) == np.float32(1.0 + 2.0 ** -23)
    assert fma_f32(0.0, 0.0, 1.0 + 2.0 ** -24) == np.float32(1.0)  # a tie alone goes to even
    assert fma_f32(-(2.0 ** -30), 2.0 ** -30, 1.0 + 2.0 ** -24) == np.float32(1.0)


def test_promotion_with_block_scales_equals_hand_chain():
    """DeepGEMM-style: every 4 fp8 wgmma (K = 128) the chain from +0 is promoted, main = fma(sa * sb, acc, main)."""
    rng = np.random.default_rng(5)
    M, N, K = 8, 130, 320  # a partial last K block (64) and a partial last B scale block (2 columns)
    a, b = _bits(rng, "e4m3", (M, K), (-4, 4)), _bits(rng, "e4m3", (K, N), (-4, 4))
    sa = rng.uniform(0.25, 4, (M, 3)).astype(np.float32)
    sb = rng.uniform(0.25, 4, (2, 3)).astype(np.float32)
    c = rng.standard_normal((M, N)).astype(np.float32)
    got = raw(matmul(a, b, c=c, dtype_a="e4m3", dtype_b="e4m3", promote_every=4, scales=BlockScales(sa, sb)))
    from tcemu.arith.fdp import decode_operand, fused_dot
    from tcemu.hopper.wgmma import fdp_unit
    main = c.astype(np.float64)
    for kb in range(3):
        lo, hi = 128 * kb, min(K, 128 * kb + 128)
        acc = np.zeros((M, N), np.float32)
        for k0 in range(lo, hi, 32):
            A = decode_operand(a[:, k0:k0 + 32], "e4m3")
            B = decode_operand(np.ascontiguousarray(b[k0:k0 + 32].T), "e4m3")
            C = decode_operand(acc.view(np.uint32), "f32")
            acc = fused_dot(A, B, C, fdp_unit("e4m3", "f32")).view(np.float32)
        for m in range(M):
            for n in range(N):
                s = float(np.float32(sa[m, kb]) * np.float32(sb[n // 128, kb]))
                main[m, n] = _f32_rne(Fraction(s) * Fraction(float(acc[m, n])) + Fraction(main[m, n]))
    assert np.array_equal(got, main.astype(np.float32).view(np.uint32))


def test_split_k_adds_partials_in_k_order_after_c():
    rng = np.random.default_rng(2)
    a, b = _bits(rng, "bf16", (20, 100), (-8, 8)), _bits(rng, "bf16", (100, 12), (-8, 8))
    c = rng.standard_normal((20, 12)).astype(np.float32)
    got = raw(matmul(a, b, c=c, dtype_a="bf16", dtype_b="bf16", split_k=3))
    total = c.copy()
    for lo, hi in ((0, 48), (48, 96), (96, 100)):  # 7 steps of 16: 3 + 3 + 1 (ceil(7 / 3) = 3 per split)
        total = total + matmul(a[:, lo:hi], b[lo:hi], dtype_a="bf16", dtype_b="bf16", engine="reference")
    assert np.array_equal(got, total.view(np.uint32))
    assert not np.array_equal(got, raw(matmul(a, b, c=c, dtype_a="bf16", dtype_b="bf16")))


def test_alpha_and_out_dtype():
    rng = np.random.default_rng(4)
    a, b = _bits(rng, "e4m3", (16, 64), (-4, 4)), _bits(rng, "e4m3", (64, 16), (-4, 4))
    acc = matmul(a, b, dtype_a="e4m3", dtype_b="e4m3")
    got = matmul(a, b, dtype_a="e4m3", dtype_b="e4m3", alpha=0.9375, out_dtype="bf16")
    want = encode((np.float32(0.9375) * acc).astype(np.float64), "bf16", "rne")
    assert np.array_equal(raw(got), want)


# ---- hand-worked values

def test_truncation_below_c_is_the_hardware_rule():
    """C = 2^25 and sixteen products 0.75: E = 25, grid 2^(E - 25) = 1, each 0.75 truncates to 0, D = 2^25
    (an exact sum would give 2^25 + 12, 33554440 after rounding toward zero)."""
    a = np.full((1, 16), 0.75, ml_dtypes.bfloat16)
    b = np.ones((16, 1), ml_dtypes.bfloat16)
    c = np.full((1, 1), 2.0 ** 25, np.float32)
    assert matmul(a, b, c=c, dtype_a="bf16", dtype_b="bf16")[0, 0] == 2.0 ** 25
    assert matmul(a, b, c=c, dtype_a="bf16", dtype_b="bf16", engine="reference")[0, 0] == 2.0 ** 25
    # 32 products in two steps of 16: the same truncation twice
    a2, b2 = np.full((1, 32), 0.75, ml_dtypes.bfloat16), np.ones((32, 1), ml_dtypes.bfloat16)
    assert matmul(a2, b2, c=c, dtype_a="bf16", dtype_b="bf16")[0, 0] == 2.0 ** 25


def test_k_tail_is_zero_padded_and_signs_of_zero():
    """A K tail is a partial instruction padded with +0. An exact zero is +0 whatever the signs of its terms (the
    H100's rule, traces/wgmma_zero_sign_sm90.npz; tcgen05 follows it, not measured), with init 'zero' or 'none'
    and on either engine: -0 x +0 products and no C give +0."""
    a = np.full((2, 5), -0.0, ml_dtypes.bfloat16)
    b = np.zeros((5, 3), ml_dtypes.bfloat16)
    assert set(raw(matmul(a, b, dtype_a="bf16", dtype_b="bf16")).ravel()) == {0}
    assert set(raw(matmul(a, b, dtype_a="bf16", dtype_b="bf16", init="none")).ravel()) == {0}
    a16, b16 = np.full((2, 16), -0.0, ml_dtypes.bfloat16), np.zeros((16, 3), ml_dtypes.bfloat16)
    for arch in ("sm90", "sm100"):
        for eng in ("fast", "reference"):
            for init in ("none", "zero"):
                got = matmul(a16, b16, arch=arch, dtype_a="bf16", dtype_b="bf16", init=init, engine=eng)
                assert set(raw(got).ravel()) == {0}, (arch, eng, init)


def test_init_none_equals_zero_on_sm90():
    """Hand-worked: a row (2^-74, 2^-80 x 15) times a column (2^-74, -2^-80 x 15) = 2^-148 - 15 * 2^-160. With a zero
    term at -133 (+0 registers, or sm90's scale-d = 0, which adds a +0 accumulator: traces/wgmma_zero_sign_sm90.npz
    floor_dense_noc) the 2^-158 grid truncates every -2^-160: 2^-148 (0x00000002). Without one (tcgen05 without C,
    tcemu's reading) the largest exponent is -148, nothing is truncated, RZ gives 2^-149 (0x00000001). So init
    'none' and 'zero' coincide on sm90 and differ on sm100, on both engines."""
    a = np.array([[2.0 ** -74] + [2.0 ** -80] * 15], ml_dtypes.bfloat16)
    b = np.array([[2.0 ** -74] + [-(2.0 ** -80)] * 15], ml_dtypes.bfloat16).T
    for eng in ("fast", "reference"):
        for arch, init, want in (("sm90", "zero", 2), ("sm90", "none", 2), ("sm100", "zero", 2), ("sm100", "none", 1)):
            got = matmul(a, b, arch=arch, dtype_a="bf16", dtype_b="bf16", init=init, engine=eng)
            assert int(raw(got)[0, 0]) == want, (eng, arch, init)


@settings(max_examples=15)
@given(st.sampled_from([("tf32", "tf32", "f32"), ("bf16", "bf16", "f32")]), st.integers(1, 24), st.integers(1, 24),
       st.integers(1, 70), st.sampled_from([(-75, -66), (-80, -60)]), st.sampled_from([0.0, 0.1]),
       st.integers(0, 2 ** 32 - 1))
def test_init_none_equals_zero_on_sm90_where_the_floor_decides(config, M, N, K, window, zero, seed):
    """Products near 2^-140 (where the -133 zero floor changes truncation; zeros optional): sm90's init 'none'
    (scale-d = 0 first) and 'zero' (+0 registers) give the same bits on both engines. On sm100 (no C term without
    enable-input-d; not measured) such inputs can differ between the inits (test_init_none_equals_zero_on_sm90);
    there the engines still agree with each other."""
    ta, tb, td = config
    rng = np.random.default_rng(seed)
    a, b = _bits(rng, ta, (M, K), window, 0.0, zero), _bits(rng, tb, (K, N), window, 0.0, zero)
    kw = dict(dtype_a=ta, dtype_b=tb, dtype_d=td)
    f_none, r_none = both(a, b, init="none", **kw)
    f_zero, r_zero = both(a, b, init="zero", **kw)
    assert np.array_equal(f_none, f_zero) and np.array_equal(r_none, r_zero) and np.array_equal(f_none, r_none)
    bw_none, bw_zero = both(a, b, arch="sm100", init="none", **kw), both(a, b, arch="sm100", init="zero", **kw)
    assert np.array_equal(*bw_none) and np.array_equal(*bw_zero)


def test_specials():
    a = np.ones((3, 16), ml_dtypes.bfloat16)
    b = np.ones((16, 2), ml_dtypes.bfloat16)
    a[0, 3] = np.inf
    a[1, 3] = np.nan
    a[2, 3] = np.inf
    b[3, 1] = 0
    f, r = both(a, b, dtype_a="bf16", dtype_b="bf16", out_dtype="bf16")
    assert np.array_equal(f, r)
    assert f.tolist() == [[0x7F80, 0x7FFF], [0x7FFF, 0x7FFF], [0x7F80, 0x7FFF]]  # inf; inf x 0 and NaN: canonical


# ---- the fast engine equals the reference engine, bit for bit, on both of its paths

CONFIGS = [("sm90", "bf16", "bf16", "f32"), ("sm90", "f16", "f16", "f16"), ("sm90", "f16", "f16", "f32"),
           ("sm90", "tf32", "tf32", "f32"), ("sm90", "e4m3", "e5m2", "f32"), ("sm90", "e5m2", "e4m3", "f16"),
           ("sm100", "bf16", "bf16", "f32"), ("sm100", "e4m3", "e2m1", "f32"), ("sm100", "e3m2", "e2m3", "f16"),
           ("sm100", "tf32", "tf32", "f32")]


@given(st.sampled_from(CONFIGS), st.integers(1, 40), st.integers(1, 40), st.integers(1, 130),
       st.sampled_from([None, (0, 1), (-2, 3), (-10, 10), (-40, 40)]), st.sampled_from([0.0, 0.02]),
       st.sampled_from([0.0, 0.1]), st.booleans(), st.sampled_from(["zero", "none"]), st.integers(1, 3),
       st.sampled_from([None, 1, 3]), st.sampled_from([None, 8, 24]), st.integers(0, 2 ** 32 - 1))
def test_fast_engine_equals_reference(config, M, N, K, window, special, zero, with_c, init, split_k, promote,
                                      k_step, seed):
    arch, ta, tb, td = config
    rng = np.random.default_rng(seed)
    a, b = _bits(rng, ta, (M, K), window, special, zero), _bits(rng, tb, (K, N), window, special, zero)
    kw = dict(arch=arch, dtype_a=ta, dtype_b=tb, dtype_d=td, init=init, split_k=split_k)
    if with_c:
        kw["c"] = _bits(rng, td, (M, N), window if window is None else (window[0] + 4, window[1] + 4), special,
                        zero).view(np.float32 if td == "f32" else np.float16)
    if promote and td == "f32":
        kw["promote_every"] = promote
    if k_step and ta in ("bf16", "f16"):
        kw["k_step"] = k_step
    if td == "f32" and rng.random() < 0.3:
        kw["out_dtype"] = "bf16"
    f, r = both(a, b, **kw)
    assert np.array_equal(f, r)


@given(st.sampled_from([("bf16", "f32"), ("f16", "f16"), ("tf32", "f32"), ("e4m3", "f32"), ("e5m2", "f16")]),
       st.integers(1, 4), st.integers(100, 270), st.sampled_from([None, 3, 5, 6, 7, 13, 40]),
       st.sampled_from([None, (-2, 3), (-12, 12)]), st.sampled_from([0.0, 0.01]), st.booleans(),
       st.integers(0, 2 ** 32 - 1))
@settings(max_examples=12, deadline=None)
def test_general_path_passes_equal_reference(config, M, N, k_step, window, special, with_c, seed):
    """chain._tile_step's passes over the lanes (largest alignment in passes of up to 16 K elements, truncated sums
    in passes of 4 and a tail, rounding in its own loop): N across one to three 128-lane tiles (a last partial
    vector of lanes), K steps of any length (odd, over 32), rows where some lanes are redone (NaN/inf, zero
    sums) and the rest rounded in the pass; the same bits as the reference engine."""
    ta, td = config
    rng = np.random.default_rng(seed)
    K = int(rng.integers(1, 48))
    a, b = _bits(rng, ta, (M, K), window, special, 0.05), _bits(rng, ta, (K, N), window, special, 0.05)
    kw = dict(dtype_a=ta, dtype_b=ta, dtype_d=td)
    if k_step:
        kw["k_step"] = k_step
    if with_c:
        kw["c"] = _bits(rng, td, (M, N), window, special, 0.05).view(np.float32 if td == "f32" else np.float16)
    f, r = both(a, b, **kw)
    assert np.array_equal(f, r)


@given(st.sampled_from(["e4m3", "e5m2", "e2m3", "e3m2", "e2m1"]), st.sampled_from(["e4m3", "e2m1", "e3m2"]),
       st.integers(1, 20), st.integers(1, 20), st.integers(1, 100), st.sampled_from([(100, 150), (0, 255)]),
       st.booleans(), st.integers(0, 2 ** 32 - 1))
@settings(max_examples=40)
def test_mx_kind_fast_engine_equals_reference(ta, tb, M, N, K, scale_range, with_c, seed):
    """kind::mxf8f6f4: ue8m0 scales (extreme and NaN ones included) folded into the elements, both engines."""
    rng = np.random.default_rng(seed)
    a, b = _bits(rng, ta, (M, K), (-3, 3), 0.0, 0.1), _bits(rng, tb, (K, N), (-3, 3), 0.0, 0.1)
    nb = -(-K // 32)
    sa, sb = rng.integers(*scale_range, (M, nb)), rng.integers(*scale_range, (N, nb))
    c = rng.standard_normal((M, N)).astype(np.float32) if with_c else None
    f, r = both(a, b, c=c, arch="sm100", dtype_a=ta, dtype_b=tb, scales=(sa, sb))
    assert np.array_equal(f, r)


@pytest.mark.slow
def test_block_scales_with_split_k_and_init_none():
    rng = np.random.default_rng(9)
    a, b = _bits(rng, "e4m3", (33, 600), (-4, 4), 0.0, 0.05), _bits(rng, "e4m3", (600, 140), (-4, 4), 0.0, 0.05)
    sc = BlockScales(rng.uniform(0.5, 2, (33, 5)).astype(np.float32), rng.uniform(0.5, 2, (2, 5)).astype(np.float32))
    c = rng.standard_normal((33, 140)).astype(np.float32)
    for kw in (dict(split_k=2), dict(split_k=3, init="none"), dict(init="none")):
        f, r = both(a, b, c=c, dtype_a="e4m3", dtype_b="e4m3", promote_every=4, scales=sc, **kw)
        assert np.array_equal(f, r), kw


def test_both_paths_and_the_redo_path_are_exercised():
    """Data that hits the fast path (no truncated term), data that misses it, data with specials: each path
    is taken, and every result equals the reference engine."""
    rng = np.random.default_rng(0)
    n = 96
    hit = (rng.uniform(1, 2, (n, n)) * rng.choice([-1, 1], (n, n))).astype(ml_dtypes.bfloat16)
    miss = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    special = hit.copy()
    special[5, 7] = np.nan
    special[9, 3] = -np.inf
    for x, y, path in ((hit, hit.T.copy(), "fast"), (miss, miss.T.copy(), "general"), (special, hit, "redone")):
        f = raw(matmul(x, y, dtype_a="bf16", dtype_b="bf16"))
        assert mm_mod.LAST_STATS[path] > 0, path
        if path == "fast":
            assert mm_mod.LAST_STATS["general"] == 0
        assert np.array_equal(f, raw(matmul(x, y, dtype_a="bf16", dtype_b="bf16", engine="reference")))
        assert mm_mod.LAST_STATS == {}  # the reference engine keeps no fast-engine statistics
    f = raw(matmul(hit, hit.T.copy(), dtype_a="bf16", dtype_b="bf16"))
    mm_mod.FAST_PATH = False
    try:
        off = raw(matmul(hit, hit.T.copy(), dtype_a="bf16", dtype_b="bf16"))
        assert mm_mod.LAST_STATS["fast"] == 0
    finally:
        mm_mod.FAST_PATH = True
    assert np.array_equal(off, f)


def _bf16(mant, exp, shape, sign=0):
    """bf16 patterns of (1 + mant / 128) 2^exp everywhere (mant 0..127, exp a normal exponent)."""
    return np.full(shape, (sign << 15) | ((exp + 127) << 7) | mant, np.uint16)


def _sum32_rows(a, b, **kw):
    """(fast-engine bits, general row segments summed in 32 bits), after holding the bits equal to the reference
    engine and to the same engine with the 32-bit sums off (bf16 operands unless kw names the types)."""
    kw = {"dtype_a": "bf16", "dtype_b": "bf16", **kw}
    f = raw(matmul(a, b, **kw))
    n32 = mm_mod.LAST_STATS["sum32"]
    r = raw(matmul(a, b, engine="reference", **kw))
    mm_mod.SUM32 = False
    try:
        off = raw(matmul(a, b, **kw))
        assert mm_mod.LAST_STATS["sum32"] == 0
    finally:
        mm_mod.SUM32 = True
    assert np.array_equal(f, r) and np.array_equal(f, off)
    return f, n32


@pytest.mark.parametrize("sign", [0, 1])
def test_sum32_at_the_int32_bound(sign):
    """16 bf16 products of the largest mantissa, (255/128)^2, all at the step's largest alignment (E = 0): each
    truncated term is 65,025 x 2^11 = 133,171,200 units of 2^-25, and 16 of them sum to +-2,130,739,200, inside
    int32 (2^31 = 2,147,483,648); C (1.5) joins in float64. One step of 16 rows, every one summed in 32 bits,
    to exact sums (f32 holds them)."""
    a, b = _bf16(127, 0, (16, 16), sign), _bf16(127, 0, (16, 16))
    b[0, 0] = _bf16(127, -20, ())   # lane 0: one product 2^20 smaller, truncated (63.75 units: 63); no row is fast
    c = np.full((16, 16), 1.5, np.float32)
    f, n32 = _sum32_rows(a, b, c=c)
    assert n32 == 16
    s_ = -1 if sign else 1
    for lanes, units in ((f[:, 0], s_ * (15 * 133171200 + 63) + 50331648), (f[:, 1:], s_ * 16 * 133171200 + 50331648)):
        cut = abs(units).bit_length() - 24   # f32 keeps 24 bits, toward zero
        want = np.float32(np.sign(units) * (abs(units) >> cut << cut) / 2 ** 25)
        assert (lanes == want.view(np.uint32)).all()
    assert f[1, 1] == np.float32(65.0009765625 if sign == 0 else -62.0009765625).view(np.uint32)


@pytest.mark.parametrize("top, sum32", [(126, True), (127, False)])
def test_sum32_needs_products_inside_float32(top, sum32):
    """Row bounds ahi + bhi <= 126: every product of two largest mantissas stays below 2^128 (float32's range);
    at 127 the rows take the float64 sums. Bits equal to the reference engine either way."""
    rng = np.random.default_rng(top)
    a = _bf16(127, top // 2, (8, 16))
    b = _bf16(127, top - top // 2, (16, 8))
    a[:, 1::2] = _bf16(5, top // 2 - 30, (8, 8))   # smaller products: the general path, truncated terms
    b[::3] |= rng.integers(0, 128, (6, 8)).astype(np.uint16)
    f, n32 = _sum32_rows(a, b)
    assert (n32 > 0) == sum32 and (n32 == 8 or not sum32)


@pytest.mark.parametrize("exp_b, sum32", [(-51, True), (-52, False)])
def test_sum32_needs_every_scale_inside_float32(exp_b, sum32):
    """Every lane's 2^(F - E) must be a float32: E = -51 + exp_b is -102 (2^127) or -103 (2^128, no float32),
    where the rows fall back to the float64 sums; C is +0, so E is the products' own."""
    a, b = _bf16(3, -51, (8, 16)), _bf16(9, exp_b, (16, 8))
    a[:, ::4] = _bf16(0, -70, (8, 4))   # products 19 binades smaller: the general path
    f, n32 = _sum32_rows(a, b)
    assert (n32 > 0) == sum32 and (n32 == 8 or not sum32)


@given(st.sampled_from([("bf16", "f32"), ("f16", "f16"), ("tf32", "f32"), ("e4m3", "f32")]),
       st.sampled_from([(-50, -40), (-62, -45), (40, 63), (55, 64), (-120, -100), (-10, 10)]),
       st.sampled_from([0.0, 0.05]), st.booleans(), st.integers(0, 2 ** 32 - 1))
@settings(max_examples=30, deadline=None)
def test_sum32_near_its_bounds_equals_reference(config, window, zero, with_c, seed):
    """Exponent windows that straddle the 32-bit sums' bounds (float32 products near 2^128, scales near 2^127 or
    products near 2^-149 as far as each format reaches): the bits equal the reference engine's and the float64
    sums'."""
    ta, td = config
    rng = np.random.default_rng(seed)
    M, N, K = int(rng.integers(1, 20)), int(rng.integers(1, 140)), int(rng.integers(1, 70))
    a, b = _bits(rng, ta, (M, K), window, 0.0, zero), _bits(rng, ta, (K, N), window, 0.0, zero)
    kw = dict(dtype_a=ta, dtype_b=ta, dtype_d=td)
    if with_c:
        kw["c"] = _bits(rng, td, (M, N), (window[0] * 2, window[1] * 2), 0.0, zero).view(
            np.float32 if td == "f32" else np.float16)
    _sum32_rows(a, b, **kw)


def test_sum32_ok_per_unit():
    """Which units take the 32-bit sums: sm90 tf32 / f16 / bf16 (F 25, steps of 8 or 16) and fp8 (F 13, 32);
    not sm100's f8f6f4 (F 25, steps of 32: 32 terms below 2^27 may reach 2^32), nor block-scaled values."""
    from tcemu.gemm.plan import plan_matmul
    got = {}
    for arch, ta, kind in (("sm90", "tf32", None), ("sm90", "f16", None), ("sm90", "bf16", None),
                           ("sm90", "e4m3", None), ("sm100", "bf16", None), ("sm100", "e4m3", None)):
        plan = plan_matmul(arch=arch, dtype_a=ta, dtype_b=ta, dtype_d="f32", out_dtype=None, k_step=None,
                           promote_every=None, split_k=1, kind=kind, block_size_k=None, scale_type=None,
                           init="zero", satfinite=False, mx_scales=False)
        got[(arch, ta)] = (mm_mod.sum32_ok(plan, False), mm_mod.sum32_ok(plan, True))
    assert got == {("sm90", "tf32"): (True, False), ("sm90", "f16"): (True, False),
                   ("sm90", "bf16"): (True, False), ("sm90", "e4m3"): (True, False),
                   ("sm100", "bf16"): (True, False), ("sm100", "e4m3"): (False, False)}


def test_chunks_threads_and_progress(monkeypatch):
    """K in many chunks (a tiny operand budget: the working set does not grow with K), 1 or 3 threads, a
    progress callback: the same bits."""
    rng = np.random.default_rng(8)
    a, b = _bits(rng, "e4m3", (70, 700), (-4, 4)), _bits(rng, "e4m3", (700, 150), (-4, 4))
    sc = BlockScales(rng.uniform(0.5, 2, (70, 6)).astype(np.float32), rng.uniform(0.5, 2, (2, 6)).astype(np.float32))
    kw = dict(dtype_a="e4m3", dtype_b="e4m3", promote_every=4, scales=sc)
    want = raw(matmul(a, b, **kw))
    seen = []
    monkeypatch.setattr(mm_mod, "_BUDGET", 1)  # one promotion interval (128 of K) per chunk
    got = raw(matmul(a, b, workers=3, progress=lambda done, total: seen.append((done, total)), **kw))
    assert np.array_equal(got, want)
    assert [d for d, _ in seen] == [70 * 150 * min(700, 128 * (i + 1)) for i in range(6)]
    assert {t for _, t in seen} == {70 * 150 * 700}


def test_progress_bar(capsys):
    a = np.ones((4, 32), ml_dtypes.bfloat16)
    matmul(a, a.T.copy(), dtype_a="bf16", dtype_b="bf16", progress=True)
    err = capsys.readouterr().err
    assert "matmul 4x4x32 bf16" in err and "100.0%" in err


def test_integer_kinds():
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (9, 200)).astype(np.int8)
    b = rng.integers(0, 256, (200, 7)).astype(np.uint8)
    c = rng.integers(-2 ** 31, 2 ** 31, (9, 7)).astype(np.int32)
    exact = c.astype(np.int64) + a.astype(np.int64) @ b.astype(np.int64)
    got = matmul(a, b, c=c, dtype_a="s8", dtype_b="u8", dtype_d="s32")
    assert np.array_equal(got, ((exact + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32))
    want = c.astype(np.int64)  # .satfinite clamps every instruction's exact sum
    for k0 in range(0, 200, 32):
        want = np.clip(want + a[:, k0:k0 + 32].astype(np.int64) @ b[k0:k0 + 32].astype(np.int64), -2 ** 31,
                       2 ** 31 - 1)
    sat = matmul(a, b, c=c, dtype_a="s8", dtype_b="u8", dtype_d="s32", satfinite=True)
    assert np.array_equal(sat, want.astype(np.int32))


# ---- refusals name the field

BF = np.ones((4, 16), ml_dtypes.bfloat16)


@pytest.mark.parametrize("args,kw,field", [
    ((BF, BF.T), dict(dtype_a="bf16", dtype_b="f16"), "dtype_b"),
    ((BF, BF.T), dict(dtype_a="fp32", dtype_b="fp32"), "dtype_a"),
    ((BF, BF.T), dict(dtype_a="bf16", dtype_b="bf16", dtype_d="f16"), "dtype_d"),
    ((BF.astype(np.float64), BF.T), dict(dtype_a="bf16", dtype_b="bf16"), "a"),
    ((np.full((4, 16), 70000), BF.T), dict(dtype_a="bf16", dtype_b="bf16"), "a"),
    ((BF, BF), dict(dtype_a="bf16", dtype_b="bf16"), "b"),
    ((BF, BF.T), dict(dtype_a="bf16", dtype_b="bf16", c=np.zeros((4, 4), np.float16)), "c"),
    ((BF, BF.T), dict(dtype_a="bf16", dtype_b="bf16", c=np.zeros((4, 5), np.float32)), "c"),
    ((BF, BF.T), dict(dtype_a="f16", dtype_b="f16", dtype_d="f16", promote_every=2), "promote_every"),
    ((BF, BF.T), dict(dtype_a="bf16", dtype_b="bf16", promote_every=0), "promote_every"),
    ((BF, BF.T), dict(dtype_a="bf16", dtype_b="bf16", split_k=0), "split_k"),
    ((BF, BF.T), dict(dtype_a="bf16", dtype_b="bf16", alpha=0.1), "alpha"),
    ((BF, BF.T), dict(dtype_a="bf16", dtype_b="bf16", workers=0), "workers"),
    ((BF, BF.T), dict(dtype_a="bf16", dtype_b="bf16", arch="sm80"), "arch"),
    ((BF, BF.T), dict(dtype_a="bf16", dtype_b="bf16", engine="gpu"), "engine"),
    ((BF, BF.T), dict(dtype_a="bf16", dtype_b="bf16", progress="yes"), "progress"),
    ((BF, BF.T), dict(dtype_a="bf16", dtype_b="bf16", init="ones"), "init"),
    ((BF, BF.T), dict(dtype_a="bf16", dtype_b="bf16", k_step=0), "k_step"),
    ((BF, BF.T), dict(dtype_a="bf16", dtype_b="bf16", out_dtype="e4m3"), "out_dtype"),
    ((BF, BF.T), dict(dtype_a="bf16", dtype_b="bf16", scales=(np.ones((4, 1), np.float32),) * 2), "scales"),
    ((BF[:, :0], BF.T[:0]), dict(dtype_a="bf16", dtype_b="bf16"), "a"),
    ((BF, BF.T), dict(dtype_a="bf16", dtype_b="bf16", kind="f16"), "kind"),
    ((BF, BF.T), dict(dtype_a="bf16", dtype_b="bf16", tile=(64, 64)), "tile"),
    ((np.zeros((4, 64), np.uint8), np.zeros((64, 4), np.uint8)), dict(dtype_a="e2m1", dtype_b="e2m1", arch="sm100",
                                                                     kind="mxf4nvf4", scale_type="ue4m3"), "scales"),
])
def test_refusals_name_the_field(args, kw, field):
    with pytest.raises(TcemuError) as e:
        matmul(*args, **kw)
    assert e.value.field == field


def test_fp8_block_scales_refusals():
    a = np.ones((4, 256), ml_dtypes.float8_e4m3fn)
    good = BlockScales(np.ones((4, 2), np.float32), np.ones((1, 2), np.float32))
    kw = dict(dtype_a="e4m3", dtype_b="e4m3")
    for bad, field in ((dict(scales=good), "scales"),  # no promote_every
                       (dict(scales=good, promote_every=2), "promote_every"),  # 64 of K is not the 128 block
                       (dict(scales=BlockScales(np.ones((4, 2), np.float64), good.b), promote_every=4), "scales.a"),
                       (dict(scales=BlockScales(good.a, np.ones((2, 2), np.float32)), promote_every=4), "scales.b")):
        with pytest.raises(TcemuError) as e:
            matmul(a, a.T.copy(), **kw, **bad)
        assert e.value.field == field


# ---- a dask cluster of two processes (optional extra)

def test_dask_local_cluster():
    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(6)
    a, b = _bits(rng, "bf16", (300, 100), (-6, 6)), _bits(rng, "bf16", (100, 200), (-6, 6))
    c = rng.standard_normal((300, 200)).astype(np.float32)
    want = raw(matmul(a, b, c=c, dtype_a="bf16", dtype_b="bf16", out_dtype="f16"))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc:
        got = raw(matmul(a, b, c=c, dtype_a="bf16", dtype_b="bf16", out_dtype="f16", scheduler=lc.scheduler_address,
                         tile=(128, 128)))
        with distributed.Client(lc) as client:
            assert len(client.scheduler_info()["workers"]) == 2
            with pytest.raises(TcemuError) as e:
                matmul(a, b, dtype_a="bf16", dtype_b="bf16", scheduler=client, tile=(0, 5))
            assert e.value.field == "tile"
    assert np.array_equal(got, want)


@given(st.sampled_from(["bf16", "f16", "e4m3", "e2m1", "tf32"]), st.integers(1, 40), st.integers(1, 70),
       st.sampled_from([8, 16, 32]), st.sampled_from([8, 16, 128]), st.booleans(), st.integers(0, 2 ** 32 - 1))
@settings(max_examples=40, deadline=None)
def test_b_decoded_into_tiles_equals_its_rows_decoded_then_tiled(dtype, N, Kc, ks, tn, scaled, seed):
    """chain.prepare_tiles (B's raw rows straight into the engine's tile-major arrays) against prepare_rows' row
    arrays tiled by numpy: values, alignments, each lane's zero floor and special flag, each tile's bounds; a last
    partial tile (padding lanes), a K not a multiple of the step, block scales (NaN among them) or none; any bits."""
    from tcemu.arith import chain
    rng = np.random.default_rng(seed)
    fmt = get_format(dtype)
    bits = (rng.integers(0, 1 << (fmt.bits - fmt.shift), (N, Kc)) << fmt.shift).astype(
        np.uint32 if fmt.bits > 16 else np.uint16)
    steps = -(-Kc // ks)
    tabs = mm_mod._decode_tables(dtype)
    mx = rng.integers(100, 160, (N, -(-Kc // 32))).astype(np.uint8) if scaled else None
    if scaled:
        mx[rng.random(mx.shape) < 0.1] = 0xFF   # NaN scales
    sexp, snan = mm_mod._scales(mx, N)
    Kp, zero_exp = steps * ks, -150
    val, al = np.empty((N, Kp)), np.empty((N, Kp), np.int16)
    lo, hi = np.empty((N, steps), np.int32), np.empty((N, steps), np.int32)
    zero, spec = np.empty((N, steps), bool), np.empty((N, steps), bool)
    chain.prepare_rows(bits, *tabs, ks, steps, sexp, snan, 32, val, al, lo, hi, zero, spec)
    T = -(-N // tn)
    got = [np.empty((T, Kp, tn)), np.empty((T, Kp, tn), np.int16), np.empty((T, steps, tn), np.int32),
           np.empty((T, steps, tn), bool), np.empty((T, steps), np.int32), np.empty((T, steps), np.int32),
           np.empty((T, steps), bool), np.empty((T, steps), bool)]
    chain.prepare_tiles(bits, *tabs, ks, steps, sexp, snan, 32, tn, zero_exp, *got)
    pad = T * tn - N
    lanes = lambda a, fill: np.concatenate([a, np.full((pad,) + a.shape[1:], fill, a.dtype)]).reshape(
        (T, tn) + a.shape[1:]).swapaxes(1, 2)
    want = [lanes(val, 1.0), lanes(al, chain.NO_AL), lanes(np.where(zero, zero_exp, chain.NO_TERM).astype(np.int32),
                                                                chain.NO_TERM), lanes(spec, False)]
    for g, w in zip(got[:4], want):
        assert np.array_equal(g, w, equal_nan=g.dtype.kind == "f")
    by_tile = lambda a, fill: np.concatenate([a, np.full((pad, steps), fill, a.dtype)]).reshape(T, tn, steps)
    assert np.array_equal(got[4], by_tile(lo, chain.BIG).min(axis=1))
    assert np.array_equal(got[5], by_tile(hi, chain.NO_TERM).max(axis=1))
    assert np.array_equal(got[6], by_tile(zero, False).any(axis=1))
    assert np.array_equal(got[7], by_tile(spec, False).any(axis=1))
