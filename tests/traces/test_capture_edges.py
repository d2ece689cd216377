"""scripts/capture_edges.py: the case planning of the edge capture (f32 .ftz flush rule, NaN -> integer and
cvt.f32.f64 edges, exact-zero sign and zero floor of wgmma), the replay of its wgmma_zero_sign trace
(tcemu/traces/kinds/zero_sign.py), and the captured traces when present."""
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from tcemu.core.errors import TraceError
from tcemu.arith.fdp import decode_operand, fused_dot
from tcemu.layout.fragments import to_d_registers
from tcemu.hopper.wgmma import fdp_unit
from tcemu.traces.kinds.ptx_alu import evaluate, load_alu_trace, replay_alu_columns, replay_alu_trace
from tcemu.ptx.fparith import _FTZ_F64_BELOW, cvt, float_op
from tcemu.traces.kinds.zero_sign import HYPOTHESES, case_bits, case_inputs, replay_zero_sign

from paths import CAPTURE, TRACES as TRACE_DIR

TRACES = Path(TRACE_DIR)
SCRIPTS = Path(CAPTURE)


def _load_driver():
    sys.path.insert(0, CAPTURE)
    spec = importlib.util.spec_from_file_location("capture_edges", SCRIPTS / "capture_edges.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


E = _load_driver()


@pytest.fixture(scope="module")
def alu_plan():
    op, slots = E.plan_alu(2711)
    return op, slots


@pytest.fixture(scope="module")
def zs_plan():
    cases, pool, groups, found = E.plan_wgmma(2711)
    return cases, pool, groups, found


def _zs_columns(cases, pool, groups, regs):
    """A wgmma_zero_sign trace's (meta, columns) from a plan and per-case (128, nregs) registers."""
    names = list(E.GROUPS)
    meta = {"format": "tcemu-trace", "version": 1, "kind": "wgmma_zero_sign", "arch": "sm90",
            "kinds": [list(k) for k in E.KINDS], "instantiations": [list(i) for i in E.INSTANTIATIONS],
            "groups": [{"name": g, "what": E.GROUPS[g]} for g in names]}
    flat = [np.asarray(r, np.uint32).ravel() for r in regs]
    cols = dict(inst=cases["inst"].astype(np.int16), group=np.array([names.index(g) for g in groups], np.int16),
                scale_d=cases["scale_d"].astype(np.int8), sp_meta=cases["meta"].astype(np.uint32),
                a_off=cases["a_off"], a_len=cases["a_len"], b_off=cases["b_off"], b_len=cases["b_len"],
                c_off=cases["c_off"], c_len=cases["c_len"], pool=pool,
                d_offsets=np.concatenate([[0], np.cumsum([f.size for f in flat])]).astype(np.int64),
                d_regs=np.concatenate(flat) if flat else np.zeros(0, np.uint32))
    return meta, cols


# ------------------------------------------------------------------ generated code, forms, dry run

def test_inc_is_what_the_driver_generates():
    assert (SCRIPTS / "capture_edges.inc").read_text() == E.gen_inc()


@pytest.mark.slow
def test_every_alu_form_is_judged_by_the_replay(alu_plan):
    """No planned form trips tcemu's modifier validation or is refused: each one's replay is a real judgement."""
    op, slots = alu_plan
    for i, f in enumerate(E.FORMS):
        s = slots[op == i]
        assert s.shape[0] >= 90, f.name
        d0, _ = evaluate(f.name, f.dst, f.src, s[:, 0], s[:, 1], s[:, 2], s[:, 3])
        assert d0.shape == (s.shape[0],)


def test_dry_run_writes_both_traces_in_their_formats(tmp_path):
    old = sys.argv
    sys.argv = ["capture_edges.py", "--dry-run", "--per-form", "40", "--tries", "20", "--out-dir", str(tmp_path)]
    try:
        E.main()
    finally:
        sys.argv = old
    meta, cols = load_alu_trace(str(tmp_path / E.ALU_FILE))
    with np.load(TRACES / "ptx_alu_sm90.npz", allow_pickle=False) as z:
        ref = json.loads(z["meta"].tobytes())
        assert set(cols) == set(z.files) - {"meta"}
        assert {k: cols[k].dtype for k in cols} == {k: z[k].dtype for k in cols}
    assert set(meta) == set(ref) and meta["dry_run"] and meta["kind"] == "ptx_alu"
    r = replay_alu_columns(meta, cols)
    assert all(f.status in ("match", "MISMATCH") for f in r.forms.values())  # judged, never ERROR / refused
    with np.load(tmp_path / E.ZS_FILE, allow_pickle=False) as z:
        zcols = {k: z[k] for k in z.files}
    zmeta = json.loads(zcols.pop("meta").tobytes())
    for key in ("gpu", "driver", "cuda", "date", "command", "sources", "seed", "smem_base", "build"):
        assert zmeta.get(key) is not None, key
    res = replay_zero_sign(zmeta, zcols)
    assert len(res.cases) == zcols["inst"].size == 120
    # the dry run stores zeros: exactly the cases whose tcemu result is +0 everywhere match, i.e. every sign case
    # (an exact zero is +0) and no floor case (tiny nonzero sums)
    assert {c.group for c in res.cases if c.ok} == {g for g in E.GROUPS if not g.startswith("floor_")}
    assert not any(c.ok for c in res.cases if c.group.startswith("floor_"))


# ------------------------------------------------------------------ f32 .ftz flush rule

# Hand-derived: 0x00ffffff = (2 - 2^-23) 2^-126. Halved (mul by 0x3f000000, fma with -0, div by 2) it is
# 2^-126 - 2^-150: halfway between 0x007fffff and 0x00800000 on the f32 grid, ties-to-even -> 0x00800000, a normal
# result that "subnormal after rounding" keeps; with an unbounded exponent it is exact ((2^24 - 1) 2^-150 < 2^-126),
# so "tiny after rounding" and "tiny before rounding" flush it to +0. 1 / 0x7e800001 = 2^-126 / (1 + 2^-23) lies in
# (2^-126 - 2^-149, 2^-126 - 2^-150): .rp rounds it up to 2^-126 on the f32 grid, to 2^-126 - 2^-150 (tiny) on the
# unbounded one.
DECIDING = [("mul", "rn", (0x00FFFFFF, 0x3F000000), 0x00800000, 0),
            ("fma", "rn", (0x00FFFFFF, 0x3F000000, 0x80000000), 0x00800000, 0),
            ("div", "rn", (0x00FFFFFF, 0x40000000), 0x00800000, 0),
            ("rcp", "rp", (0x7E800001,), 0x00800000, 0),
            ("rcp", "rm", (0xFE800001,), 0x80800000, 0x80000000)]


@pytest.mark.parametrize("op, mode, ops, kept, flushed", DECIDING, ids=lambda x: str(x))
def test_deciding_inputs_are_planned(alu_plan, op, mode, ops, kept, flushed):
    out = E.ftz_outcomes(op, mode, *ops)
    assert out == {"subnormal_after": kept, "tiny_after_unbounded": flushed, "tiny_before": flushed}
    # tcemu follows the H100 (traces/ptx_alu_edges_sm90.npz): tiny after rounding with an unbounded exponent
    assert int(float_op(op, "f32", *[np.array([x], np.uint32) for x in ops], rounding=mode, ftz=True)[0]) == flushed
    plan_op, slots = alu_plan
    i = [f.name for f in E.FORMS].index(f"{op}.{mode}.ftz.f32")
    rows = {tuple(int(x) for x in r[:len(ops)]) for r in slots[plan_op == i]}
    assert ops in rows


def test_ftz_plan_separates_the_three_rules(alu_plan):
    """Per .ftz form: how many planned cases tell "subnormal after rounding" from each other rule. Rounding toward
    zero can never tell them apart (a result below 2^-126 never rounds up to it); rcp reaches the window only at
    1 / (2^126 (1 + 2^-23)); div.rn only with a power-of-two divisor (a/b - 2^-126 is a multiple of ulp(a)/b)."""
    op, slots = alu_plan
    want = {"mul.rn": (60, 30), "mul.rm": (60, 30), "mul.rp": (60, 30), "fma.rn": (50, 30), "fma.rm": (50, 30),
            "fma.rp": (50, 30), "div.rm": (100, 0), "div.rp": (100, 0), "div.rn": (5, 0), "rcp.rm": (1, 0),
            "rcp.rp": (1, 0)}
    for i, f in enumerate(E.FORMS):
        p = f.name.split(".")
        if p[0] not in E.FTZ_OPS or "ftz" not in p:
            continue
        unb = before = 0
        for r in slots[op == i]:
            o = E.ftz_outcomes(p[0], p[1], *[int(x) for x in r[:len(f.src)]])
            if o is not None:
                unb += o["tiny_after_unbounded"] != o["subnormal_after"]
                before += o["tiny_before"] != o["subnormal_after"]
        lo_unb, lo_before = want.get(f"{p[0]}.{p[1]}", (0, 0))
        assert unb >= lo_unb and before >= max(lo_before, lo_unb), (f.name, unb, before)
        if lo_unb == 0:
            assert unb == before == 0, f.name  # add/sub/sqrt and the rz forms cannot decide


def test_planner_model_equals_tcemu_on_every_ftz_case(alu_plan):
    """The driver's exact rational model (Fractions) and tcemu's integer kernels are written independently: on every
    planned case with a finite nonzero result, the planner's 'tiny after rounding with an unbounded exponent' bits
    (with .ftz: the rule the H100 follows, traces/ptx_alu_edges_sm90.npz) and its f32 rounding (without) equal
    tcemu's. So the deciding cases decided what they were planned to, not a planner slip."""
    op, slots = alu_plan
    checked = 0
    for i, f in enumerate(E.FORMS):
        p = f.name.split(".")
        if p[0] not in E.FTZ_OPS or p[0] == "sqrt":
            continue
        ftz = "ftz" in p
        rows = slots[op == i][:, :len(f.src)]
        got = float_op(p[0], "f32", *[rows[:, j].astype(np.uint32) for j in range(rows.shape[1])], rounding=p[1],
                       ftz=ftz)
        for r, g in zip(rows, got):
            ops = [int(x) for x in r]
            if ftz:
                o = E.ftz_outcomes(p[0], p[1], *ops)
                want = None if o is None else o["tiny_after_unbounded"]
            else:
                x = E.exact_result(p[0], *ops, ftz=False)
                want = None if x is None else E.f32_bits(E.round_f32(x, p[1]), x < 0)
            if want is not None:
                assert int(g) == want, (f.name, [hex(v) for v in ops])
                checked += 1
    assert checked > 10000


# ------------------------------------------------------------------ conversions

def _rows(alu_plan, name):
    op, slots = alu_plan
    return slots[op == [f.name for f in E.FORMS].index(name)][:, 0]


@pytest.mark.parametrize("form", [f.name for f in E.FORMS if f.name.startswith(("cvt.rzi.", "cvt.rni."))
                                  and f.name.split(".")[2][0] in "su"])
def test_nan_to_integer_forms_hold_every_kind_of_nan(alu_plan, form):
    src = form.split(".")[-1]
    a = _rows(alu_plan, form)
    eb, mb, w = {"f64": (11, 52, 64), "f16": (5, 10, 16), "bf16": (8, 7, 16)}[src]
    mag = a & np.uint64((1 << (w - 1)) - 1)
    inf = np.uint64(((1 << eb) - 1) << mb)
    nan = a[mag > inf]
    quiet = (nan >> np.uint64(mb - 1)) & np.uint64(1)
    neg = nan >> np.uint64(w - 1)
    assert nan.size >= 10 and set(quiet.tolist()) == {0, 1} and set(neg.tolist()) == {0, 1}
    if src == "f64":  # a NaN whose payload sits in the low word only
        assert np.any((mag > inf) & ((a >> np.uint64(32)) & np.uint64(0xFFFFF) == 0))
    assert np.count_nonzero(mag < inf) >= 40  # ordinary values too


def test_cvt_f32_f64_cases_straddle_every_flush_threshold(alu_plan):
    """Each threshold tcemu read from ptxas's SASS (_FTZ_F64_BELOW), for each sign, has a case just below and at it."""
    for mode, (pos, neg) in _FTZ_F64_BELOW.items():
        a = set(int(x) for x in _rows(alu_plan, f"cvt.{mode}.ftz.f32.f64"))
        for t, s in ((pos, 0), (neg, 1 << 63)):
            assert {(t - 1) | s, t | s} <= a, (mode, hex(t), s)
        assert a == set(int(x) for x in _rows(alu_plan, f"cvt.{mode}.f32.f64"))  # the control shares its inputs


def test_same_type_cvts_see_signalling_nans(alu_plan):
    for name, snan in (("cvt.f64.f64", 0x7FF0000000000001), ("cvt.rzi.f64.f64", 0xFFF0000000000001),
                       ("cvt.f32.f32", 0x7F800001), ("cvt.f16.f16", 0x7C01), ("cvt.bf16.bf16", 0x7F81)):
        assert snan in set(int(x) for x in _rows(alu_plan, name)), name
    # cvt.f64.f64 and cvt.f32.f32 are moves (the signalling NaN comes back unchanged; f32 measured by this capture),
    # cvt.rzi quiets it; cvt.f16.f16 / bf16.bf16 give the canonical NaN (measured by this capture)
    assert int(cvt("f64", "f64", np.array([0x7FF0000000000001], np.uint64))[0]) == 0x7FF0000000000001
    assert int(cvt("f64", "f64", np.array([0x7FF0000000000001], np.uint64), rounding="rzi")[0]) == 0x7FF8000000000001
    assert int(cvt("f32", "f32", np.array([0x7F800001], np.uint32))[0]) == 0x7F800001
    assert int(cvt("f16", "f16", np.array([0x7C01], np.uint16))[0]) == 0x7FFF
    assert int(cvt("bf16", "bf16", np.array([0x7F81], np.uint16))[0]) == 0x7FFF


# ------------------------------------------------------------------ wgmma: what each planned group asks

def _model(cases, pool, groups, hypothesis="model"):
    meta, cols = _zs_columns(cases, pool, groups, [])
    out = []
    for i in range(cases.size):
        x = case_inputs(meta, cols, i)
        names = ("zeros", "pruned_plus_zero") if x.sparse else ()
        if hypothesis in ("model", "signed_zero", "no_c_term") or hypothesis in names:
            out.append(case_bits(x, hypothesis).astype(np.uint32))
        else:
            out.append(None)
    return out


# the sign groups whose every term is -0 (a product sign or C = -0), by their definitions (scripts/capture_edges.py)
ALL_NEG = {"dense_negzero_c", "dense_negzero_noc", "dense_negprod_c", "dense_negprod_noc", "dense_negscale_c",
           "sparse_negzero_c", "sparse_negprod_c", "sparse_negprod_noc", "sparse_prunedneg_c", "sparse_prunedpos_c",
           "sparse_negscale_c"}


@pytest.mark.slow
def test_sign_groups_predict_what_their_definitions_say(zs_plan):
    """tcemu's D for every sign case is +0 (the H100's rule: an exact zero is +0 whatever the terms' signs), and the
    IEEE alternative ('signed_zero': -0 only when every term is -0) gives the sign derived by hand from the group's
    definition: -0 where every stored product and C are -0, +0 where one term is +0 (a +0 product, C = +0, or the
    +0 accumulator that scale-d = 0 adds: so the *_noc groups are +0 under either sign rule, and only the *_c
    groups tell the rules apart)."""
    cases, pool, groups, _ = zs_plan
    model = _model(cases, pool, groups)
    signed = _model(cases, pool, groups, "signed_zero")
    no_c = _model(cases, pool, groups, "no_c_term")
    meta, cols = _zs_columns(cases, pool, groups, [])
    told = 0
    for i, g in enumerate(groups):
        if g.startswith("floor_"):
            continue
        x = case_inputs(meta, cols, i)
        neg = 0x8000 if x.dtype == "f16" else 0x80000000
        assert np.all(model[i] == 0) and np.all(no_c[i] == 0), g
        if g in ALL_NEG:
            ieee = np.full((64, x.n), not g.endswith("_noc"))
        elif g == "dense_mix_rows":  # row r misses pattern entry (8r + K) % (K + 1): all -0 iff that is the +0
            K = x.k
            all_neg = np.array([all((r * K + k) % (K + 1) != 0 for k in range(K)) for r in range(64)])
            assert all_neg.any() and not all_neg.all()
            ieee = np.repeat(all_neg[:, None], x.n, axis=1)
        elif g in ("dense_mix_c", "sparse_mix_c"):  # C = -0, -0, +0 repeating over m * 8 + n
            ieee = (np.arange(64 * x.n) % 3 != 2).reshape(64, x.n)
        else:  # a +0 product in every output (dense_pospzero_c, mix_b, cancel, negscale_pos, sparse_pospzero_c)
            ieee = np.zeros((64, x.n), bool)
        assert np.array_equal(signed[i], np.where(ieee, neg, 0)), g
        told += bool(ieee.any())
    # per kind: dense negzero_c, negprod_c, negscale_c, mix_rows, mix_c; sparse negzero_c, negprod_c (2 metadata),
    # prunedneg_c (2), prunedpos_c (2), negscale_c, mix_c
    assert told == 14 * len(E.KINDS)


def test_floor_cases_tell_the_floor_apart(zs_plan):
    """Every floor case: the planner's fused sums (scripts/capture_edges.py fused_sums, written independently) equal
    tcemu's fdp without any zero term and with one at -133; the two differ in at least 50 of the 512 outputs.
    tcemu's model takes the floor in every floor case: with C = +0 given (a zero term) and with scale-d = 0 (the
    +0 accumulator the H100 adds: floor_dense_noc / floor_sparse_noc). The 'no_c_term' alternative (tcemu before
    the capture) floors only where C = +0 is given; the sparse 'zeros' alternative (pruned positions as zero terms)
    cannot be told from the model here, the accumulator already being a zero term."""
    cases, pool, groups, found = zs_plan
    meta, cols = _zs_columns(cases, pool, groups, [])
    model = _model(cases, pool, groups)
    no_c = _model(cases, pool, groups, "no_c_term")
    zeros = _model(cases, pool, groups, "zeros")
    floor_cases = [i for i, g in enumerate(groups) if g.startswith("floor_")]
    assert sorted(found) == floor_cases and len(floor_cases) == 10
    for i in floor_cases:
        g, x = groups[i], case_inputs(meta, cols, i)
        assert x.atype in ("tf32", "bf16") and x.dtype == "f32"
        b = x.b
        if x.sparse:
            b = x.b[:, E.kept_columns(x.atype, 0xE if x.sp_meta == E.META_HIGH else 0x4, x.k)]
        A, B = decode_operand(x.a, x.atype), decode_operand(b, x.btype)
        unit = fdp_unit(x.atype, x.dtype)._replace(zero_c_when_absent=False)  # C None: no term at all
        plain = fused_dot(A, B, None, unit)
        floor = fused_dot(np.concatenate([A, decode_operand(np.zeros((64, 1), np.uint32), x.atype)], axis=1),
                          np.concatenate([B, decode_operand(np.full((8, 1), E.ONE[x.atype]), x.btype)], axis=1),
                          None, unit)
        assert np.array_equal(E.fused_sums(x.a, b, x.atype), plain), g
        assert np.array_equal(E.fused_sums(x.a, b, x.atype, E.FLOOR), floor), g
        assert np.count_nonzero(plain != floor) == found[i] >= 50, g
        assert np.array_equal(model[i], floor), g
        if g.endswith("_noc"):
            assert not x.scale_d and np.array_equal(no_c[i], plain), g
        else:  # C = +0 given: a zero term under either rule
            assert x.scale_d and np.all(x.c == 0) and np.array_equal(no_c[i], floor), g
        if x.sparse:
            assert np.array_equal(zeros[i], floor), g


# ------------------------------------------------------------------ the replay

def test_replay_reports_matches_and_mismatches_by_register(zs_plan):
    """A two-case trace written by hand: dense f16 -> f32, A = -0, B > 0, C = -0: the H100 (and tcemu) give +0 in
    every register; the second copy has thread 5 register 2 planted as -0 (0x80000000, IEEE's sign)."""
    cases, pool, groups, _ = zs_plan
    i = next(j for j, g in enumerate(groups) if g == "dense_negzero_c" and E.KINDS[E.INSTANTIATIONS[
        int(cases["inst"][j])][1]] == ("f16", "f16", "f32"))
    good = np.zeros((128, 4), np.uint32)
    bad = good.copy()
    bad[5, 2] = 0x80000000
    meta, cols = _zs_columns(cases[[i, i]], pool, [groups[i]] * 2, [good, bad])
    r = replay_zero_sign(meta, cols, hypotheses=HYPOTHESES)
    assert [c.ok for c in r.cases] == [True, False]
    assert (r.cases[1].values, r.cases[1].values_matched) == (512, 511)
    assert "thread 5 reg 2: hardware 0x80000000, tcemu 0x00000000" in r.cases[1].describe()
    assert r.cases[0].hypotheses == {"model": True, "signed_zero": False, "no_c_term": True}
    assert r.by_group()["dense_negzero_c"] == {"cases": 2, "model": 1, "signed_zero": 0, "no_c_term": 1}
    assert not r.ok and "dense_negzero_c" in r.table()


def test_replay_rejects_malformed_traces(zs_plan):
    cases, pool, groups, _ = zs_plan
    meta, cols = _zs_columns(cases[:2], pool, groups[:2], [np.zeros((128, 4), np.uint32)] * 2)
    bad = dict(cols)
    del bad["pool"]
    with pytest.raises(TraceError, match="pool"):
        replay_zero_sign(meta, bad)
    bad = dict(cols, a_len=np.array([0, 1], np.int32))
    with pytest.raises(TraceError, match="a_len"):
        replay_zero_sign(meta, bad)
    with pytest.raises(TraceError, match="meta.kind"):
        replay_zero_sign(dict(meta, kind="ptx_alu"), cols)
    with pytest.raises(TraceError, match="d_offsets"):
        replay_zero_sign(meta, dict(cols, d_offsets=np.array([0, 512, 1000], np.int64)))
    with pytest.raises(TraceError, match="hypotheses"):
        replay_zero_sign(meta, cols, hypotheses=("nonsense",))


# ------------------------------------------------------------------ the capture kernels on tcemu's PTX interpreter

@pytest.fixture(scope="module")
def capture_ptx(tmp_path_factory):
    """scripts/capture_edges.cu compiled to PTX by nvcc (as the device binary is built), loaded by tcemu.ptx."""
    import shutil
    import subprocess
    import tcemu.ptx as ptx
    if not shutil.which("nvcc"):
        pytest.skip("nvcc not found: the capture kernels cannot be compiled here")
    out = tmp_path_factory.mktemp("edges") / "capture_edges.ptx"
    subprocess.run(["nvcc", "-O2", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-ptx", "-o", str(out),
                    str(SCRIPTS / "capture_edges.cu")], check=True, capture_output=True, timeout=300)
    return ptx.load(str(out))


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_capture_wgmma_kernel_lays_out_what_the_replay_reads(capture_ptx, zs_plan):
    """The capture's own kernel (pattern fill, descriptors, C fragment, D store), run by the PTX interpreter on every
    planned case, gives the registers the replay computes from the trace columns: the two layouts agree."""
    cases, pool, groups, _ = zs_plan
    meta, cols = _zs_columns(cases, pool, groups, [])
    kernels = {E.wgmma_inst_name(inst): next(k for k in capture_ptx.kernels if E.wgmma_inst_name(inst) in k)
               for inst in E.INSTANTIATIONS}
    for i in range(cases.size):
        name = E.wgmma_inst_name(E.INSTANTIATIONS[int(cases["inst"][i])])
        out = np.full(cases.size * 128 * 4, 0xFFFFFFFF, np.uint32)
        capture_ptx.launch(kernels[name], grid=1, block=128,
                           args=[cases.view(np.uint32).copy(), np.array([i], np.int32), pool, out])
        x = case_inputs(meta, cols, i)
        want = to_d_registers(case_bits(x), x.dtype)
        assert np.array_equal(out.reshape(cases.size, 128, 4)[i, :, :want.shape[1]], want), (i, groups[i], name)


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_capture_alu_kernels_move_operands_as_the_replay_reads_them(capture_ptx, alu_plan):
    """Every ALU kernel (operand casts, register widths, the 64-bit output slot) run by the interpreter equals the
    replay's evaluate() on the planned cases, all 64 bits of each output slot."""
    op, slots = alu_plan
    for i, f in enumerate(E.FORMS):
        s = np.ascontiguousarray(slots[op == i])
        out = np.zeros(2 * s.shape[0], np.uint64)
        capture_ptx.launch(f"_Z{len(f'alu_k{i}')}alu_k{i}PKyPyi", grid=(s.shape[0] + 255) // 256, block=256,
                           args=[s.ravel().copy(), out, s.shape[0]])
        d0, _ = evaluate(f.name, f.dst, f.src, s[:, 0], s[:, 1], s[:, 2], s[:, 3])
        assert np.array_equal(out[0::2], d0.astype(np.uint64)) and not out[1::2].any(), f.name


# ------------------------------------------------------------------ the captures (scripts/capture_edges.py)

def _trace(name):
    path = TRACES / name
    if not path.exists():
        pytest.skip(f"{name} not captured yet: run the device command in scripts/capture_edges.py's docstring")
    return path


def test_alu_edges_trace_replays():
    r = replay_alu_trace(str(_trace(E.ALU_FILE)))
    assert r.ok and not [k for k, v in r.forms.items() if v.status != "match"], "\n" + r.table()


def test_zero_sign_trace_replays():
    path = _trace(E.ZS_FILE)
    with np.load(path, allow_pickle=False) as z:
        cols = {k: z[k] for k in z.files}
    meta = json.loads(cols.pop("meta").tobytes())
    r = replay_zero_sign(meta, cols, hypotheses=HYPOTHESES)
    assert r.ok, "\n" + r.table() + "\n" + "\n".join(c.describe() for c in r.cases if not c.ok)
    assert (len(r.cases), sum(c.values for c in r.cases), sum(c.values_matched for c in r.cases)) == \
        (120, 55808, 55808)
    # each rule the capture settled is needed: IEEE's zero sign fails every group whose terms are all -0 with C
    # given (dense and sparse, every kind), no C term fails the scale-d = 0 floor cases (H100, 2026-11 capture)
    fails = lambda h: sorted({c.group for c in r.cases if not c.hypotheses[h]})  # noqa: E731
    assert fails("signed_zero") == sorted({"dense_negzero_c", "dense_negprod_c", "dense_negscale_c", "dense_mix_rows",
                                           "dense_mix_c", "sparse_negzero_c", "sparse_negprod_c", "sparse_prunedneg_c",
                                           "sparse_prunedpos_c", "sparse_negscale_c", "sparse_mix_c"})
    assert sum(not c.hypotheses["signed_zero"] for c in r.cases) == 70
    assert fails("no_c_term") == ["floor_dense_noc", "floor_sparse_noc"]
    pruned = [v for c in r.cases for h, v in c.hypotheses.items() if h in ("zeros", "pruned_plus_zero")]
    assert len(pruned) == 2 * 61 and all(pruned)  # 61 sparse cases: pruned zero terms change nothing visible
