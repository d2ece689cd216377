"""tcemu refuses what ptxas refuses (issue 21): operand register types, guards, state spaces, duplicate
names, targets, barrier ids and operand counts (tcemu/ptx/strict.py). Each class: the valid kernel loads and
compiles, single-mistake mutants are PtxSyntaxErrors naming line and rule. Operand types are checked
against a truth table recorded from ptxas 13.0 (tests/fixtures/strict/); with ptxas on PATH a slice of the
table is rechecked against ptxas itself and 20 seeded mutants of small fixtures are judged by ptxas and tcemu
(scripts/checks/ptx_mutants.py; `pytest -m campaign` runs 1,000)."""
import gzip
import json
import os
import random
import re
import shutil
import subprocess
import tempfile
import warnings

import pytest

import tcemu.ptx as ptx
from tcemu.ptx import parser as P
from tcemu.ptx import strict
from tcemu.ptx.errors import PtxSyntaxError

from paths import CHECKS, FIXTURES as FIXTURE_DIR, PTX_FIXTURES

TABLE = os.path.join(FIXTURE_DIR, "strict", "operand_types_ptxas13.json.gz")
PTXAS = shutil.which("ptxas")

VALID = """.version 8.5
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
 .reg .pred %p<2>;
 .reg .b32 %r<4>;
 .reg .f32 %f<2>;
 .reg .b64 %rd<4>;
 ld.param.u64 %rd1, [out];
 mov.u32 %r1, %tid.x;
 setp.lt.u32 %p1, %r1, 8;
 @%p1 add.s32 %r2, %r1, 1;
 mul.wide.u32 %rd2, %r1, 4;
 add.s64 %rd3, %rd1, %rd2;
 cvt.rn.f32.u32 %f1, %r2;
 bar.sync 0;
 st.global.f32 [%rd3], %f1;
 ret;
}
"""


def compile_all(src):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = ptx.load(src)
        for k in m.kernels:
            m.program(k)
    return m


def refused(src, line, phrase):
    with pytest.raises(PtxSyntaxError) as e:
        compile_all(src)
    assert e.value.line == line, str(e.value)
    assert phrase in str(e.value), str(e.value)
    return e.value


def test_valid_kernel_compiles():
    compile_all(VALID)


@pytest.mark.parametrize("old,new,line,phrase", [
    ("add.s32 %r2, %r1, 1", "add.s32 %r2, %f1, 1", 13, "Arguments mismatch for instruction 'add'"),
    ("add.s32 %r2, %r1, 1", "add.s32 %rd2, %r1, 1", 13, "declared .b64, not compatible with .s32"),
    ("setp.lt.u32 %p1", "setp.lt.u32 %r3", 12, "Arguments mismatch for instruction 'setp'"),
    ("mul.wide.u32 %rd2", "mul.wide.u32 %r3", 14, "not compatible with .u64"),
    ("cvt.rn.f32.u32 %f1, %r2", "cvt.rn.f32.u32 %f1, %f1", 16, "'cvt'"),
    ("st.global.f32 [%rd3], %f1", "st.global.f32 [%rd3], %p1", 18, "'st'"),
    ("ld.param.u64 %rd1", "ld.param.u64 %r3", 10, "'ld'"),
])
def test_operand_types(old, new, line, phrase):
    refused(VALID.replace(old, new), line, phrase)


def test_relaxed_ld_st_cvt_registers_wider_than_the_type():
    # PTX ISA 6.4.1: ld/st/cvt may name a register wider than an integer instruction type
    compile_all(VALID.replace("ld.param.u64 %rd1, [out];", "ld.param.u64 %rd1, [out];\n ld.global.u8 %r3, [%rd1];"))


def test_guard_must_be_pred():
    refused(VALID.replace("@%p1 add", "@%r1 add"), 13, "Predicate expression expected")


@pytest.mark.parametrize("old,new,phrase", [
    ("st.global.f32", "st.glbal.f32", "Unknown modifier '.glbal'"),
    ("st.global.f32", "st.globl.f32", "Unknown modifier '.globl'"),
])
def test_unknown_state_space(old, new, phrase):
    refused(VALID.replace(old, new), 18, phrase)


def test_cvta_needs_a_space():
    refused(VALID.replace("add.s64 %rd3, %rd1, %rd2;", "cvta.to.glbal.u64 %rd3, %rd1;"), 15, "'.glbal'")


def test_duplicates():
    refused(VALID + VALID[VALID.index(".visible"):], 21, "Duplicate definition of function 'k'")
    refused(VALID.replace(" .reg .f32 %f<2>;", " .reg .f32 %f<2>;\n .reg .b32 %r1;"), 9,
            "Duplicate definition of variable '%r1'")
    src = VALID.replace(".visible .entry", ".shared .b32 sv;\n.shared .b32 sv;\n.visible .entry")
    refused(src, 5, "Duplicate definition of variable 'sv'")
    # a prototype and then the definition is fine; so are the same names in nested { } scopes
    proto = VALID.replace(".visible .entry k(", ".visible .entry k(.param .u64 out);\n.visible .entry k(", 1)
    compile_all(proto)
    compile_all(VALID.replace(" bar.sync 0;", " { .reg .b32 %r1; mov.u32 %r1, 3; }\n bar.sync 0;"))


@pytest.mark.parametrize("target,instr,ok", [
    ("sm_90a", "wgmma.fence.sync.aligned;", True),
    ("sm_90", "wgmma.fence.sync.aligned;", False),
    ("sm_100a", "wgmma.fence.sync.aligned;", False),
    ("sm_90", "setmaxnreg.inc.sync.aligned.u32 64;", False),
    ("sm_100a", "setmaxnreg.inc.sync.aligned.u32 64;", True),
    ("sm_80", "tcgen05.fence::before_thread_sync;", False),
    ("sm_90a", "tcgen05.fence::before_thread_sync;", False),
    ("sm_100a", "tcgen05.fence::before_thread_sync;", True),
    ("sm_103a", "tcgen05.fence::before_thread_sync;", True),
    ("sm_80", "fence.proxy.async;", False),
])
def test_target(target, instr, ok):
    src = VALID.replace("sm_90a", target).replace(" bar.sync 0;", " " + instr)
    if ok:
        compile_all(src)
    else:
        refused(src, 17, "not supported on .target")


@pytest.mark.parametrize("new,phrase", [
    ("bar.sync 16;", "Barrier number '16' out of range"),
    ("bar.sync 1, 33;", "multiple of warp size"),
    ("barrier.sync -1;", "out of range"),
])
def test_barrier_ids(new, phrase):
    refused(VALID.replace("bar.sync 0;", new), 17, phrase)


def test_operand_count():
    src = VALID.replace(" bar.sync 0;", " .shared .b64 mb;\n mbarrier.expect_tx.shared.b64 [mb];")
    refused(src, 18, "Arguments mismatch for instruction 'mbarrier.expect_tx': 1 operands, mbarrier.expect_tx takes "
                     "2 ([addr], txCount)")


@pytest.mark.parametrize("old,new,phrase", [
    ("add.s32 %r2, %r1, 1;", "add.s32 %r2, %r1, 1, %r1;", "'add': 4 operands, add takes 3"),
    ("add.s32 %r2, %r1, 1;", "add.s32 %r2, %r1;", "'add': 2 operands"),
    ("mul.wide.u32 %rd2, %r1, 4;", "mul.wide.u32 %rd2, %r1;", "'mul'"),
    ("cvt.rn.f32.u32 %f1, %r2;", "cvt.rn.f32.u32 %f1;", "'cvt'"),
    ("setp.lt.u32 %p1, %r1, 8;", "setp.lt.u32 %p1, %r1, 8, %p1;", "'setp'"),
    ("st.global.f32 [%rd3], %f1;", "st.global.f32 [%rd3], %f1, %f1;", "'st'"),
    ("ld.param.u64 %rd1, [out];", "ld.param.u64 %rd1;", "'ld'"),
    ("mov.u32 %r1, %tid.x;", "mov.u32 %r1;", "'mov'"),
    ("bar.sync 0;", "bra $L0, $L0;\n$L0:", "'bra'"),
])
def test_operand_counts(old, new, phrase):
    # ptxas: "Arguments mismatch for instruction"; never an IndexError or an operand silently ignored
    line = VALID[:VALID.index(old)].count("\n") + 1
    refused(VALID.replace(old, new), line, phrase)


def test_operand_counts_valid_forms():
    compile_all(VALID.replace("setp.lt.u32 %p1, %r1, 8;", "setp.lt.and.u32 %p1, %r1, 8, %p1;"))
    compile_all(VALID.replace("bar.sync 0;", "lop3.b32 %r3, %r1, %r2, %r1, 0x3c;"))
    src = VALID.replace("bar.sync 0;", "max.f32 %f1, %f1, %f1, %f1;")
    refused(src, 17, "max takes 3")
    compile_all(src.replace("sm_90a", "sm_100a").replace(".version 8.5", ".version 8.8"))   # sm_100, PTX 8.8


@pytest.mark.parametrize("old,new,phrase", [
    ("cvt.rn.f32.u32 %f1, %r2;", "add.f32 %f1, %f1, 1;", "integer constant 1, not a .f32 constant"),
    ("mul.wide.u32 %rd2, %r1, 4;", "mul.wide.f32 %rd2, %r1, 4;", "Unexpected instruction types"),
    ("mul.wide.u32 %rd2, %r1, 4;", "mul.u64 %rd2, %rd1, 4;", ".u64: mul takes .bf16"),
    ("mul.wide.u32 %rd2, %r1, 4;", "mul.wide.u64 %rd2, %rd1, 4;", "mul.wide takes .s16, .u16, .s32, .u32"),
    ("bar.sync 0;", "bar.sync 0, 32, 1;", "'bar': 3 operands"),
    ("bar.sync 0;", "mov.b64 %rd2, {%r1, %rd1};", "needs 32-bit elements"),
    ("add.s32 %r2, %r1, 1;", "add.s32 %r2, %r1, 99999999999999999999;", "Constant overflow"),
])
def test_types_constants_packing(old, new, phrase):
    line = VALID[:VALID.index(old)].count("\n") + 1
    refused(VALID.replace(old, new), line, phrase)


def test_big_literals_ptxas_reads_are_read():
    compile_all(VALID.replace("add.s32 %r2, %r1, 1;", "add.s32 %r2, %r1, 92233720368547758079;"))
    compile_all(VALID.replace("add.s32 %r2, %r1, 1;", "add.f32 %f1, %f1, 0f3F800000;"))


@pytest.mark.parametrize("instr,phrase", [
    ("mbarrier.init.shared::cta.b32 [mb], 1;", "an mbarrier object is .b64"),
    ("mbarrier.init.shared::ctx.b64 [mb], 1;", "Unknown modifier '.shared::ctx'"),
    ("mbarrier.try_wait.parit.shared::cta.b64 %p1, [mb], 0;", "Unknown modifier '.parit'"),
    ("fence.proxy.async.shared::gpu;", "Unknown modifier '.shared::gpu'"),
    ("cp.async.cq.shared.global [mb], [%rd1], 16;", "Unknown modifier '.cq'"),
    ("cp.async.cg.shared.local [mb], [%rd1], 16;", "State space incorrect"),
    ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bits [mb], [%rd1], 16, [mb];",
     "complete_tx::bytes"),
    ("ldmatrix.sync.aligned.m8n8.x1.shared.b64 {%r3}, [mb];", "takes .b16 or .b8"),
    ("setmaxnreg.inc.sync.aligned.u64 64;", "takes .u32"),
    ("cp.async.bulk.global.shared::cta.bulk_grp [%rd1], [mb], 16;", "Unknown modifier '.bulk_grp'"),
    ("st.shard::cta.b32 [mb], %r1;", "Unknown modifier '.shard::cta'"),
    ("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r3}, [mb], [mb];", "'ldmatrix': 3 operands"),
])
def test_async_qualifiers(instr, phrase):
    src = VALID.replace(" bar.sync 0;", " .shared .align 8 .b64 mb;\n " + instr)
    refused(src, 18, phrase)


def _calls():
    with open(os.path.join(PTX_FIXTURES, "calls.ptx")) as f:
        return f.read()


@pytest.mark.parametrize("old,new,phrase", [
    (".param .b32 param0;", ".param .b64 param0;", "Type of argument does not match formal parameter"),
    (".param .b32 param0;", ".param .align 4 .b8 param0[4];", "'_Z5twiceiPi_param_0'"),
    (".param .b32 retval0;", ".param .b64 retval0;", "formal parameter 'func_retval0'"),
    ("\tparam0, \n\tparam1\n", "\tparam0\n", "takes 2 arguments, the call passes 1"),
    ("\tparam0, \n\tparam1\n", "\tparam0, param1, param1\n", "takes 2 arguments, the call passes 3"),
    ("call.uni (retval0), \n\t_Z5twiceiPi", "call.uni _Z5twiceiPi", "takes 1 return values, the call passes 0"),
])
def test_call_matches_prototype(old, new, phrase):
    # ptxas 13.0: "Type of argument does not match formal parameter"; argument counts likewise
    src = _calls()
    assert old in src
    refused(src.replace(old, new, 1), 100, phrase)


def test_call_argument_width_only():
    # ptxas accepts a .u32/.f32 argument for a .b32 formal parameter: only the width must match
    compile_all(_calls().replace(".param .b32 param0;", ".param .f32 param0;", 1))
    compile_all(_calls().replace(".param .b64 param1;", ".param .u64 param1;", 1))


# -- the recorded truth table ------------------------------------------------------------------------------

# ptxas 13.0 lets a .f16x2 register stand for a .pred operand of and/or/xor/not/mov; tcemu refuses it
KNOWN_STRICTER = re.compile(r"^(and|or|xor|not|mov)\.pred .*%x_f16x2")


def _table():
    with gzip.open(TABLE, "rt") as f:
        return json.load(f)


def _tcemu_accepts(table):
    fn = P.parse("\n".join(table["header"] + [r[0] for r in table["rows"]] + ["ret;", "}"])).functions["k"]
    out = []
    for ins in fn.body[:-1]:
        try:
            strict.check_operand_types(ins, fn.regs)
            out.append(True)
        except PtxSyntaxError:
            out.append(False)
    return out


def test_operand_types_match_ptxas_table():
    table = _table()
    got = _tcemu_accepts(table)
    wrong = [(r[0], r[1]) for r, g in zip(table["rows"], got) if bool(r[1]) != g and not KNOWN_STRICTER.match(r[0])]
    assert len(table["rows"]) > 10000 and not wrong, wrong[:10]


@pytest.mark.skipif(PTXAS is None, reason="ptxas is not on PATH: the recorded table is checked without it")
@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_table_slice_still_matches_ptxas():
    table = _table()
    rows = random.Random(21).sample(table["rows"], 400)
    verdict = _ptxas_lines(table["header"], [r[0] for r in rows])
    assert [bool(r[1]) for r in rows] == verdict


def _ptxas_lines(header, lines):
    """ptxas's verdict per line (all in one module: ptxas reports every line's error)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.ptx")
        with open(path, "w") as f:
            f.write("\n".join(header + lines + ["ret;", "}"]) + "\n")
        r = subprocess.run([PTXAS, "-arch=sm_90a", path, "-o", os.devnull], capture_output=True, text=True)
    bad = {int(m) for m in re.findall(r"line (\d+); error", r.stderr)}
    return [len(header) + 1 + i not in bad for i in range(len(lines))]


# -- realistic single-mistake mutants of the bundled fixtures ----------------------------------------------

# small fixtures ptxas 13.0 itself accepts (the Triton ones say .version 9.4, newer than it reads)
FIXTURE_FILES = ["warp_kernels.ptx", "calls.ptx", "atomics_sm90.ptx"]


def test_fixtures_compile():
    for name in FIXTURE_FILES:
        with open(os.path.join(PTX_FIXTURES, name)) as f:
            compile_all(f.read())


def test_memory_modifiers_ptxas_accepts_are_not_refused():
    # tests/fixtures/strict/memory_modifiers_valid.ptx: ld/st/red/atom/cvta/isspacep/prefetch forms ptxas 13.0
    # accepts for sm_90a (cache hints, scopes, mbarrier completion, shared::cluster ...)
    with open(os.path.join(FIXTURE_DIR, "strict", "memory_modifiers_valid.ptx")) as f:
        fn = P.parse(f.read()).functions["k"]
    for ins in fn.body:
        strict.check_spaces(ins)
    assert len(fn.body) > 10


# -- the differential campaign (scripts/checks/ptx_mutants.py) over every bundled fixture --------------------

def _campaign_module():
    import importlib.util
    spec = importlib.util.spec_from_file_location("ptx_mutants", os.path.join(CHECKS, "ptx_mutants.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_campaign_mutants_are_seeded_and_single():
    pm = _campaign_module()
    a = list(pm.mutants(30, seed=5))
    assert a == list(pm.mutants(30, seed=5)) and len(a) == 30
    assert len({cls for _, cls, _ in a}) >= 8
    for path, cls, text in a:
        src = pm.source(os.path.join(pm.ROOT, path))
        if cls != "dup entry":   # one line changed (a call's continuation lines blanked), numbering kept
            assert len(text.split("\n")) == len(src.split("\n")), cls


# small fixtures (loaded in a fraction of a second; no special-function tables to decode): CUDA's .version 9.0 ones
# for ptxas 13.0, a Triton .version 9.4 one for Triton's ptxas-blackwell
QUICK = ["atomics_sm90.ptx", "calls.ptx", "warp_kernels.ptx", "tcgen05_forms_sm103a.ptx", "attn_scale_k.ptx"]


def test_campaign_quick_slice():
    """A few seconds of the differential campaign for CI: 20 seeded mutants of the small fixtures that a ptxas at
    hand reads (nvcc's on PATH, or Triton's bundled copy), each judged by ptxas and by tcemu."""
    pm = _campaign_module()
    paths = [os.path.join(PTX_FIXTURES, n) for n in QUICK]
    paths = [p for p in paths if pm.ptxas_for(pm.module_version(pm.source(p))) is not None]
    if not paths:
        warnings.warn("no ptxas (nvcc's on PATH or Triton's bundled copy) reads the fixtures: the differential "
                      "campaign's quick slice did not run")
        pytest.skip("no ptxas at hand: the differential campaign's quick slice needs one")
    table, bad = pm.campaign(20, seed="ci", fixtures=paths, limit=60)
    assert sum(r["total"] for r in table.values()) == 20
    assert sum(r["ptxas rejects"] for r in table.values()) >= 10
    assert not bad, [(o, cls, path, detail[:200]) for o, cls, path, msg, detail, text in bad]


@pytest.mark.campaign
@pytest.mark.slow
@pytest.mark.needs_nvcc
def test_campaign_against_ptxas():
    pm = _campaign_module()
    if pm.ptxas_for((9, 0)) is None or pm.ptxas_for((9, 4)) is None:
        pytest.skip("needs ptxas for .version 9.0 (CUDA 13.0 on PATH) and 9.4 (Triton's ptxas-blackwell)")
    table, bad = pm.campaign(1000, seed=21, limit=120)
    print(pm.format_table(table))
    counted = [(o, cls, path, detail[:200]) for o, cls, path, msg, detail, text in bad if o != "no ptxas"]
    assert sum(r["total"] for r in table.values()) == 1000
    assert not counted, counted[:20]
