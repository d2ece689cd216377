"""mma.sync.aligned (PTX ISA 9.7.14.5.14) on the PTX interpreter: the fragment layouts against the spec's figures,
every captured form through a kernel against the H100's bits (traces/mma_sync_sm90.npz), the strict front end's
refusals, a diverged warp, and a Triton-compiled kernel whose tl.dot is mma.sync (tests/fixtures/ptx)."""
import json
import os

import numpy as np
import pytest

import tcemu.ptx as tptx
from tcemu.arith.fdp import decode_operand, fused_dot
from tcemu.frontends.triton import run_compiled
from tcemu.hopper.mma_sync import parse_form
from tcemu.hopper.wgmma import fdp_unit
from tcemu.layout.mma_fragments import coords
from tcemu.ptx.errors import HazardError, PtxSyntaxError, PtxUnsupported
from tcemu.ptx.ops.mma_sync import execute
from tcemu.traces import load_trace
from tcemu.traces.kinds.mma_sync_numerics import case_inputs

from paths import PTX_FIXTURES, TRACES

TRACE = load_trace(os.path.join(TRACES, "mma_sync_sm90.npz"))
FORMS = TRACE.meta["forms"]


# ------------------------------------------------------------------------------------------- fragment layouts

# (operand, m, n, k, element bits, lane, [(row, col) of each element in register order]) read off the PTX ISA's
# figures "MMA .m16n8k16 fragment layout for matrix A with .f16/.bf16 type" and its siblings
SPEC = [
    ("A", 16, 8, 16, 16, 5, [(1, 2), (1, 3), (9, 2), (9, 3), (1, 10), (1, 11), (9, 10), (9, 11)]),
    ("B", 16, 8, 16, 16, 5, [(2, 1), (3, 1), (10, 1), (11, 1)]),
    ("A", 16, 8, 8, 16, 5, [(1, 2), (1, 3), (9, 2), (9, 3)]),
    ("B", 16, 8, 8, 16, 5, [(2, 1), (3, 1)]),
    ("A", 16, 8, 8, 32, 6, [(1, 2), (9, 2), (1, 6), (9, 6)]),          # .tf32
    ("B", 16, 8, 8, 32, 6, [(2, 1), (6, 1)]),
    ("A", 16, 8, 4, 32, 6, [(1, 2), (9, 2)]),
    ("B", 16, 8, 4, 32, 6, [(2, 1)]),
    ("A", 16, 8, 16, 8, 7, [(1, 12), (1, 13), (1, 14), (1, 15), (9, 12), (9, 13), (9, 14), (9, 15)]),   # .s8
    ("A", 16, 8, 32, 8, 7, [(1, 12), (1, 13), (1, 14), (1, 15), (9, 12), (9, 13), (9, 14), (9, 15),
                            (1, 28), (1, 29), (1, 30), (1, 31), (9, 28), (9, 29), (9, 30), (9, 31)]),
    ("B", 16, 8, 32, 8, 7, [(12, 1), (13, 1), (14, 1), (15, 1), (28, 1), (29, 1), (30, 1), (31, 1)]),
    ("C", 16, 8, 16, 32, 7, [(1, 6), (1, 7), (9, 6), (9, 7)]),
    ("C", 16, 8, 16, 16, 7, [(1, 6), (1, 7), (9, 6), (9, 7)]),
    ("A", 8, 8, 4, 64, 7, [(1, 3)]),                                      # .f64
    ("B", 8, 8, 4, 64, 7, [(3, 1)]),
    ("C", 8, 8, 4, 64, 7, [(1, 6), (1, 7)]),
    ("A", 16, 8, 16, 64, 7, [(1, 3), (9, 3), (1, 7), (9, 7), (1, 11), (9, 11), (1, 15), (9, 15)]),
    ("B", 16, 8, 16, 64, 7, [(3, 1), (7, 1), (11, 1), (15, 1)]),
]


@pytest.mark.parametrize("operand, m, n, k, bits, lane, want", SPEC,
                         ids=[f"{s[0]}-m{s[1]}n{s[2]}k{s[3]}-{s[4]}bit" for s in SPEC])
def test_fragment_coordinates_follow_the_spec_figures(operand, m, n, k, bits, lane, want):
    rows, cols = coords(operand, m, n, k, bits)
    assert list(zip(rows[lane].tolist(), cols[lane].tolist())) == want
    # every element of the operand is held by exactly one lane
    assert len(set(zip(rows.ravel().tolist(), cols.ravel().tolist()))) == rows.size


# ------------------------------------------------------------------------------------- against the H100

def _kernel(opcode, form, target="sm_90a", guard=""):
    """k(a, b, c, d): every lane loads its A, B, C register words, issues `opcode`, stores D's words."""
    wide = form.dtype_d == "f64"
    step, cls, reg = (8, "b64", "%rd") if wide else (4, "b32", "%r")
    lines = [".version 8.7", f".target {target}", ".address_size 64",
             ".visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd) {",
             "  .reg .b32 %r<100>;", "  .reg .b64 %rd<100>;", "  .reg .pred %p<2>;", "  mov.u32 %r0, %tid.x;"]
    names = {}
    for i, (w, p) in enumerate((("A", "pa"), ("B", "pb"), ("C", "pc"), ("D", "pd"))):
        lines += [f"  ld.param.u64 %rd{i + 1}, [{p}];", f"  cvta.to.global.u64 %rd{i + 1}, %rd{i + 1};",
                  f"  mul.wide.u32 %rd{i + 5}, %r0, {4 * form.words(w)};",
                  f"  add.s64 %rd{i + 5}, %rd{i + 1}, %rd{i + 5};"]
        names[w] = [f"{reg}{20 + 20 * i + j}" for j in range(form.registers(w))]
        if w != "D":
            lines += [f"  ld.global.{cls} {r}, [%rd{i + 5}+{step * j}];" for j, r in enumerate(names[w])]
    vec = {w: "{" + ", ".join(names[w]) + "}" for w in "DABC"}
    lines += [f"  {guard}{opcode} {vec['D']}, {vec['A']}, {vec['B']}, {vec['C']};"]
    lines += [f"  st.global.{cls} [%rd8+{step * j}], {r};" for j, r in enumerate(names["D"])]
    return "\n".join(lines + ["  ret;", "}", ""])


def _first_case(form_index):
    return int(np.flatnonzero(TRACE.columns["form"] == form_index)[0])


def _hardware(i):
    off = TRACE.columns["offsets"]
    return TRACE.columns["regs"][off[i]:off[i + 1]].reshape(32, -1)


def _launch(text, form, a, b, c):
    d = np.full(32 * form.words("D"), 0xDEADBEEF, np.uint32)
    tptx.load(text).launch("k", grid=1, block=32, args=[a.ravel().copy(), b.ravel().copy(), c.ravel().copy(), d])
    return d.reshape(32, -1)


@pytest.mark.parametrize("opcode", FORMS)
def test_every_captured_form_gives_the_h100_bits_through_a_kernel(opcode):
    # case 0 of each form (the capture's first draw: narrow operands) and its specials case, through the interpreter
    f = FORMS.index(opcode)
    cases = np.flatnonzero(TRACE.columns["form"] == f)
    for i in (int(cases[0]), int(cases[[(int(m) & 255) in (3, 4) for m in TRACE.columns["modes"][cases]]][0])):
        form, a, b, c = case_inputs(TRACE, i)
        d = _launch(_kernel(opcode, form), form, a, b, c)
        assert np.array_equal(d, _hardware(i)), (i, opcode)


def test_trace_cases_replay_through_execute():
    # three cases of every form, straight through the model (the whole trace: tests/traces/test_traces.py, slow)
    for f in range(len(FORMS)):
        for i in np.flatnonzero(TRACE.columns["form"] == f)[::40][:3]:
            form, a, b, c = case_inputs(TRACE, int(i))
            assert np.array_equal(execute(form, a, b, c), _hardware(int(i))), (i, FORMS[f])


def test_fp8_rule_differs_from_one_fused_dot():
    # the H100's fp8 mma.sync is two f16 HMMAs (k % 4 < 2, then the rest) plus an FADD of C: one fused dot over all
    # of K with C (the wgmma rule) gets some captured case wrong (a planted model error the trace must catch)
    f = FORMS.index("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32")
    wrong = 0
    for i in np.flatnonzero(TRACE.columns["form"] == f)[:40]:
        form, a, b, c = case_inputs(TRACE, int(i))
        from tcemu.hopper.mma_sync import operands
        A, B, C = operands(form, a, b, c)
        one = fused_dot(decode_operand(A.astype(np.uint8), "e4m3"), decode_operand(B.T.copy().astype(np.uint8),
                                                                                    "e4m3"),
                        decode_operand(C.astype(np.uint32), "f32"), fdp_unit("e4m3", "f32"))
        wrong += not np.array_equal(one, _hardware_matrix(int(i), form))
        assert np.array_equal(execute(form, a, b, c), _hardware(int(i)))
    assert wrong > 10


def _hardware_matrix(i, form):
    from tcemu.layout.mma_fragments import gather
    return gather(_hardware(i), "C", form.m, form.n, form.k, 32).astype(np.uint32)


# ------------------------------------------------------------------------------------------ strict front end

REFUSED = [
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16", PtxSyntaxError, ".dtype must equal .ctype"),
    ("mma.sync.aligned.m16n8k16.col.row.f32.f16.f16.f32", PtxSyntaxError, "takes .row.col"),
    ("mma.sync.aligned.m16n8k16.row.col.satfinite.f32.f16.f16.f32", PtxSyntaxError, ".satfinite applies to integer"),
    ("mma.sync.aligned.m16n8k8.row.col.s32.s8.s8.s32", PtxSyntaxError, "m16n8k8 is not an mma.sync shape for .s8"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.f16.f32", PtxSyntaxError, ".f16 cannot pair with .bf16"),
    ("mma.sync.aligned.m16n8k16.row.col.f16.bf16.bf16.f16", PtxSyntaxError, "is not an accumulator for .bf16"),
    ("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32", PtxUnsupported, "quad-pair m8n8k4 .f16 form"),
    ("mma.sync.aligned.m8n8k32.row.col.s32.s4.s4.s32", PtxUnsupported, "4-bit integer forms"),
]


@pytest.mark.parametrize("opcode, error, text", REFUSED, ids=[r[0][17:] for r in REFUSED])
def test_illegal_or_unmodelled_forms_are_refused_at_load(opcode, error, text):
    body = ".version 8.7\n.target sm_90a\n.address_size 64\n.visible .entry k() {\n  .reg .b32 %r<40>;\n" \
           f"  {opcode} {{%r0, %r1, %r2, %r3}}, {{%r4, %r5, %r6, %r7}}, {{%r8, %r9}}, {{%r10, %r11, %r12, %r13}};\n" \
           "  ret;\n}\n"
    with pytest.raises(error) as e:
        tptx.load(body).launch("k", grid=1, block=32, args=[])
    assert text in str(e.value)


def test_register_count_and_target_are_checked():
    form = parse_form("m16n8k16.row.col.f32.f16.f16.f32".split("."))
    good = _kernel("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", form)
    zeros = [np.zeros(256, np.uint32) for _ in range(4)]
    tptx.load(good).launch("k", grid=1, block=32, args=zeros)   # control: runs
    with pytest.raises(PtxSyntaxError) as e:            # three registers for A's four
        tptx.load(good.replace("%r20, %r21, %r22, %r23}, {%r40", "%r20, %r21, %r22}, {%r40")).launch(
            "k", grid=1, block=32, args=zeros)
    assert "Arguments mismatch for instruction 'mma'" in str(e.value) and "vector of 4" in str(e.value)
    f64 = parse_form("m16n8k8.row.col.f64.f64.f64.f64".split("."))
    text = _kernel("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64", f64, target="sm_80")
    with pytest.raises(PtxSyntaxError) as e:            # m16n8k8 .f64 is sm_90's
        tptx.load(text).launch("k", grid=1, block=32, args=[np.zeros(256, np.uint32)] * 4)
    assert "requires .target sm_90 or higher" in str(e.value)


def test_a_diverged_warp_is_a_hazard():
    opcode = FORMS[0]
    i = _first_case(0)
    form, a, b, c = case_inputs(TRACE, i)
    guarded = _kernel(opcode, form, guard="@%p1 ").replace("  mov.u32 %r0, %tid.x;",
                                                          "  mov.u32 %r0, %tid.x;\n  setp.lt.u32 %p1, %r0, 16;")
    with pytest.raises(HazardError) as e:
        _launch(guarded, form, a, b, c)
    assert "all 32 threads must execute it together, but only lanes [0, 1, 2" in str(e.value)
    control = guarded.replace("setp.lt.u32 %p1, %r0, 16", "setp.lt.u32 %p1, %r0, 32")   # every lane: no alarm
    assert np.array_equal(_launch(control, form, a, b, c), _hardware(i))


# ---------------------------------------------------------------------------------- a Triton-compiled kernel

def test_triton_dot_lowered_to_mma_sync_matches_the_fused_dot_chain():
    # tests/fixtures/ptx/dot_mma_sync_f16: Triton 3.9's 32 x 32 x 32 f16 tl.dot (4 warps, mma.sync m16n8k16 and
    # ldmatrix); against two fused dots in K order from C, built without the interpreter (the rule the trace proves)
    with open(os.path.join(PTX_FIXTURES, "dot_mma_sync_f16.json")) as fh:
        meta = json.load(fh)
    with open(os.path.join(PTX_FIXTURES, "dot_mma_sync_f16.ptx")) as fh:
        ptx = fh.read()
    assert meta["opcode_census"]["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"] == 4
    rng = np.random.default_rng(7)
    a = rng.standard_normal((32, 32)).astype(np.float16)
    b = (rng.standard_normal((32, 32)) * 2.0 ** rng.integers(-12, 12, (32, 32))).astype(np.float16)
    c = (rng.standard_normal((32, 32)) * 8).astype(np.float32)
    d = np.full((32, 32), np.nan, np.float32)
    run_compiled(ptx, meta, {"a_ptr": a, "b_ptr": b, "c_ptr": c, "d_ptr": d})
    acc = c.view(np.uint32)
    for k0 in (0, 16):
        acc = fused_dot(decode_operand(np.ascontiguousarray(a.view(np.uint16)[:, k0:k0 + 16]), "f16"),
                        decode_operand(np.ascontiguousarray(b.view(np.uint16)[k0:k0 + 16].T), "f16"),
                        decode_operand(acc, "f32"), fdp_unit("f16", "f32"))
    assert np.array_equal(d.view(np.uint32), acc)


# ------------------------------------------------------------------------------------------ the trace kind

def _small_trace(**change):
    """The first case of each of two forms, as a Trace the replay accepts; `change` replaces columns / meta keys."""
    from tcemu.traces.archive import Trace
    c = TRACE.columns
    keep = [_first_case(0), _first_case(FORMS.index("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64"))]
    off = c["offsets"]
    regs = np.concatenate([c["regs"][off[i]:off[i + 1]] for i in keep])
    cols = {"seed": c["seed"][keep], "form": c["form"][keep], "modes": c["modes"][keep],
            "offsets": np.concatenate([[0], np.cumsum([off[i + 1] - off[i] for i in keep])]).astype(np.int64),
            "regs": regs}
    meta = dict(TRACE.meta)
    for k, v in change.items():
        (cols if k in cols else meta)[k] = v
    return Trace("<test>", meta, cols)


def test_replay_reports_a_planted_wrong_register_and_passes_the_control():
    from tcemu.traces import replay
    assert replay(_small_trace()).ok                       # control: both cases match
    r = _small_trace()
    regs = r.columns["regs"].copy()
    regs[5] ^= 1                                           # one bit of lane 1's D word 1 in the first case
    result = replay(_small_trace(regs=regs))
    assert not result.ok
    assert "case 0 m16n8k16.row.col.f32.f16.f16.f32" in result.mismatches[0]
    assert "1 of 128 D words differ (first: lane 1 word 1" in result.mismatches[0]


def test_trace_check_refuses_inconsistent_columns():
    from tcemu.core.errors import TraceError
    from tcemu.traces import check_trace
    with pytest.raises(TraceError) as e:
        check_trace(_small_trace(forms=["mma.sync.aligned.m16n8k8.row.col.s32.s8.s8.s32"] + FORMS[1:]))
    assert "m16n8k8 is not an mma.sync shape for .s8" in str(e.value)
    with pytest.raises(TraceError) as e:
        check_trace(_small_trace(modes=np.array([9, 0], np.int32)))
    assert "modes" in str(e.value)
    with pytest.raises(TraceError) as e:
        t = _small_trace()
        check_trace(_small_trace(offsets=np.array([0, 64, t.columns["regs"].size], np.int64)))
    assert "case 0 must hold 32 x 4 D words" in str(e.value)
