"""tcemu.ptx parser: the module grammar nvcc and Triton emit (PTX ISA chapters 4, 5, 7, 11), checked on the parse
tree and by running the parsed kernels; malformed text is a PtxSyntaxError at the exact line and column, and an
instruction the interpreter lacks is refused by name at compile time (first launch), never skipped."""
import re

import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.ptx import parser as P
from tcemu.ptx.errors import KernelFault, PtxError, PtxSyntaxError, PtxUnsupported, PtxUnsupportedWarning

from ptxkit import HEADER, entry, run


def test_module_directives_and_kernel_list():
    text = HEADER.replace(".target sm_90a", ".target sm_90a, debug") + """
.visible .entry first(.param .u64 .ptr .global .align 8 out, .param .u32 n, .param .align 64 .b8 tmap[128])
  .reqntid 128, 1, 1 .maxnreg 168
{ ret; }
.entry second() { ret; }
.func helper(.param .b32 x) { ret; }
"""
    tree = P.parse(text)
    assert (tree.version, tree.target, tree.address_size) == ("8.5", ["sm_90a", "debug"], 64)
    first = tree.functions["first"]
    assert first.entry and first.directives == {"reqntid": [128, 1, 1], "maxnreg": [168]}
    assert [(p.name, p.type, p.ptr_space, p.count) for p in first.params] == \
        [("out", "u64", "global", None), ("n", "u32", None, None), ("tmap", "b8", None, 128)]
    kernels = ptx.load(text).kernels
    assert set(kernels) == {"first", "second"}       # a .func is not a kernel
    assert [(p.name, p.kind, p.size) for p in kernels["first"]] == \
        [("out", "pointer", 8), ("n", "scalar", 4), ("tmap", "bytes", 128)]


def test_address_size_32_is_refused():
    with pytest.raises(PtxUnsupported):
        ptx.load(".version 8.5\n.target sm_90a\n.address_size 32\n.entry k() { ret; }\n")


def test_reg_ranges_vectors_and_undeclared_names():
    text = entry("""
  .reg .v2 .b32 %v;
  .reg .v4 .b16 %w;
  mov.u32 %v.x, 7;
  mov.u32 %v.y, 9;
  mov.b16 %w.w, 3;
  cvt.u32.u16 %r5, %w.w;
  add.u32 %r6, %v.x, %v.y;
  add.u32 %r6, %r6, %r5;
  st.global.u32 [%rd1], %r6;
  ret;
""", regs="  .reg .b32 %r<7>;\n  .reg .b64 %rd<2>;\n")
    fn = P.parse(text).functions["k"]
    assert [n for n in fn.regs if re.fullmatch(r"%r\d+", n)] == [f"%r{i}" for i in range(7)]   # %r<7>: %r0..%r6
    assert fn.regs["%v.y"] == "b32" and fn.regs["%w.w"] == "b16" and "%v" not in fn.regs
    out = np.zeros(32, np.uint32)
    ptx.load(text).launch("k", grid=1, block=32, args=[out])
    assert (out == 7 + 9 + 3).all()
    # %r7 is outside the range %r<7>: refused when the kernel is compiled, naming its line
    bad = text.replace("add.u32 %r6, %r6, %r5;", "add.u32 %r6, %r6, %r7;")
    line = bad.splitlines().index("  add.u32 %r6, %r6, %r7;") + 1
    with pytest.raises(PtxSyntaxError) as e:
        ptx.load(bad).launch("k", grid=1, block=32, args=[out])
    assert e.value.line == line and "%r7" in str(e.value)


def test_guards_labels_comments_and_multiline_statements():
    # thread t: d = t < 10 ? t + 1000 : 2 * t, written with a negated guard, a statement over three lines,
    # // and /* */ comments (one spanning lines) and a label on its own line
    body = """
  setp.lt.u32 %p1, %r0, 10;   // p1 = t < 10
  /* a comment
     spanning lines */
  @!%p1 bra $L__else;
  add.u32
      %r2,
      %r0, 1000;
  bra.uni $L__done;
$L__else:
  shl.b32 %r2, %r0, 1;  /* inline */
$L__done:
  st.global.u32 [%rd1], %r2;
  ret;
"""
    out = run(body, block=32)
    t = np.arange(32)
    assert np.array_equal(out, np.where(t < 10, t + 1000, 2 * t))
    fn = P.parse(entry(body)).functions["k"]
    add = next(i for i in fn.body if i.opcode == "add.u32" and i.operands[2] == P.Imm(1000))
    lines = entry(body).splitlines()
    assert lines[add.line - 1].strip() == "add.u32" and add.col == 3
    bra = next(i for i in fn.body if i.opcode == "bra")
    assert bra.guard == ("%p1", True)


def test_loc_and_file_before_or_after_the_code():
    body = """
  .loc 1 7 5
  mov.u32 %r2, 1;
  .loc 2 40 0, function_name $L__info_string0, inlined_at 1 9 17
  trap;
  ret;
"""
    for files_first in (True, False):
        files = '.file 1 "/src/kern.py"\n.file 2 "/src/helpers.h", 1700000000, 1234\n'
        text = entry(body, before=files if files_first else "") + ("" if files_first else files)
        fn = P.parse(text).functions["k"]
        mov = next(i for i in fn.body if i.opcode == "mov.u32" and i.operands[1] == P.Imm(1))
        trap = next(i for i in fn.body if i.opcode == "trap")
        assert mov.loc == ("/src/kern.py", 7, 5) and trap.loc == ("/src/helpers.h", 40, 0)
        with pytest.raises(KernelFault) as e:   # a fault names the PTX line and the source line
            ptx.load(text).launch("k", grid=1, block=32, args=[np.zeros(32, np.uint32)])
        assert f"line {trap.line} (/src/helpers.h:40)" in str(e.value)


def test_loc_does_not_leak_into_the_next_function():
    text = HEADER + """.file 1 "a.cu"
.visible .entry k1()
{
  .loc 1 5 0
  ret;
}
.visible .entry k2()
{
  trap;
}
"""
    tree = P.parse(text)
    assert tree.functions["k1"].body[0].loc == ("a.cu", 5, 0) and tree.functions["k2"].body[0].loc is None
    with pytest.raises(KernelFault) as e:
        ptx.load(text).launch("k2", grid=1, block=1)
    assert "a.cu" not in str(e.value)


def test_debug_sections_are_skipped():
    # Triton ends its PTX with .file and .section .debug_* blocks holding raw data and labels
    text = entry("  st.global.u32 [%rd1], %r0;\n  ret;\n") + """
  .file 1 "/tmp/k.py"
  .section .debug_abbrev
  {
.b8 1
.b8 17
.b32 $L__func_begin0
  }
  .section .debug_info
  {
.b32 92
.b64 $L__func_end0
.b8 107,0
  }
  .section .debug_macinfo { }
"""
    out = np.zeros(32, np.uint32)
    ptx.load(text).launch("k", grid=1, block=32, args=[out])
    assert np.array_equal(out, np.arange(32))


def test_vector_address_and_pair_operands():
    text = entry("""
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [%rd2, {%r2, %r3}], [%r4];
  shfl.sync.bfly.b32 %r5|%p1, %r6, 1, 0x1f, -1;
  setp.lt.s32 %p2|%p3, %r1, %r2;
  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd2+16];
  st.shared.u32 [smem-4], %r1;
  ret;
""", before=".extern .shared .align 16 .b8 smem[];\n")
    fn = P.parse(text).functions["k"]
    cp, shfl, setp, ld, st = [i for i in fn.body][5:10]
    assert cp.operands[1] == P.Addr(P.Reg("%rd2"), 0, P.Vec((P.Reg("%r2"), P.Reg("%r3"))))
    assert cp.operands[0] == P.Addr(P.Reg("%r1")) and cp.operands[2] == P.Addr(P.Reg("%r4"))
    assert shfl.operands[0] == P.Pair(P.Reg("%r5"), P.Reg("%p1"))
    assert shfl.operands[3] == P.Imm(0x1F) and shfl.operands[4] == P.Imm(-1)
    assert setp.operands[0] == P.Pair(P.Reg("%p2"), P.Reg("%p3"))
    assert ld.operands[0] == P.Vec(tuple(P.Reg(f"%r{i}") for i in (1, 2, 3, 4)))
    assert ld.operands[1] == P.Addr(P.Reg("%rd2"), 16)
    assert st.operands[0] == P.Addr(P.Sym("smem"), -4)


# CUTLASS-style inline asm: sibling { } scopes declare the same predicate name and the same label; each
# branch must resolve to the label of its own scope, and the inner %p shadows the kernel's %p.
SCOPES = """
  mov.u32 %r2, 0;
  setp.eq.u32 %p, %r0, 3;          // the outer %p: t == 3
  {
    .reg .pred %p;
    setp.lt.u32 %p, %r0, 8;         // scope 1: t < 8
    @%p bra $L_skip;
    add.u32 %r2, %r2, 1;             // t >= 8
    $L_skip:
  }
  {
    .reg .pred %p;
    setp.ge.u32 %p, %r0, 16;        // scope 2: t >= 16
    @%p bra $L_skip;
    add.u32 %r2, %r2, 10;            // t < 16
    $L_skip:
  }
  @%p add.u32 %r2, %r2, 100;        // the outer %p again
  st.global.u32 [%rd1], %r2;
  ret;
"""


def test_nested_scopes_shadow_registers_and_labels():
    out = run(SCOPES, regs="  .reg .pred %p;\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<2>;\n")
    t = np.arange(32)
    assert np.array_equal(out, (t >= 8) * 1 + (t < 16) * 10 + (t == 3) * 100)
    fn = P.parse(entry(SCOPES, regs="  .reg .pred %p;\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<2>;\n")).functions["k"]
    assert sorted(k for k in fn.labels) == [(1, "$L_skip"), (2, "$L_skip")]


def test_reg_with_its_type_glued_on_as_cuda_fp16_writes_it():
    # cuda_fp16.hpp's hsqrt: `{.reg.b32 f; .reg.b16 r; ...}`, names without %, the type glued to .reg
    body = """
  {.reg.b32         f;
 .reg.b16         r;
  cvt.u32.u32 f, %r0;
  add.u32 f, f, 5;
  cvt.u16.u32 r, f;
  cvt.u32.u16 %r2, r;
  }
  st.global.u32 [%rd1], %r2;
  ret;
"""
    out = run(body, regs="  .reg .b32 %r<4>;\n  .reg .b64 %rd<2>;\n")
    assert np.array_equal(out, np.arange(32) + 5)
    with pytest.raises(PtxSyntaxError, match=r"\.reg without a type"):
        P.parse(entry("  .reg f;\n  ret;\n"))


def test_duplicate_label_in_one_scope_is_an_error():
    text = entry("$L_a:\n  ret;\n$L_a:\n  ret;\n")
    line = text.splitlines().index("$L_a:", text.splitlines().index("$L_a:") + 1) + 1
    with pytest.raises(PtxSyntaxError) as e:
        P.parse(text)
    assert (e.value.line, e.value.column) == (line, 1)


def test_extern_shared_and_global_initialisers():
    # .global tab holds 10, 20, 30, 40 (u32) and bytes 1..8; thread t reads tab[t % 4] + bytes[t % 8] and
    # 1000 * t (scale is the second .const: offset 4), round-tripped through the dynamic shared array
    before = """.extern .shared .align 16 .b8 dyn[];
.global .align 4 .u32 tab[4] = {10, 20, 0x1e, 40};
.global .align 1 .b8 bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
.const .align 4 .u32 first = 7;
.const .align 4 .u32 scale = 1000;
"""
    body = """
  and.b32 %r2, %r0, 3;
  mul.wide.u32 %rd2, %r2, 4;
  mov.u64 %rd3, tab;
  add.s64 %rd3, %rd3, %rd2;
  ld.global.u32 %r3, [%rd3];
  and.b32 %r2, %r0, 7;
  cvt.u64.u32 %rd2, %r2;
  mov.u64 %rd3, bytes;
  add.s64 %rd3, %rd3, %rd2;
  ld.global.u8 %r4, [%rd3];
  ld.const.u32 %r5, [scale];
  mul.lo.u32 %r5, %r5, %r0;
  shl.b32 %r6, %r0, 2;
  mov.u32 %r7, dyn;
  add.u32 %r6, %r6, %r7;
  st.shared.u32 [%r6], %r5;
  bar.sync 0;
  ld.shared.u32 %r5, [%r6];
  add.u32 %r3, %r3, %r4;
  add.u32 %r3, %r3, %r5;
  st.global.u32 [%rd1], %r3;
  ret;
"""
    out = run(body, block=32, before=before, shared_bytes=128)
    t = np.arange(32)
    assert np.array_equal(out, np.array([10, 20, 30, 40])[t % 4] + (t % 8 + 1) + 1000 * t)


def test_branchtargets_table():
    fn = P.parse(entry("""
  ts: .branchtargets $L_a, $L_b, $L_c;
  brx.idx %r0, ts;
$L_a:
$L_b:
$L_c:
  ret;
""")).functions["k"]
    assert fn.branch_targets == {"ts": ["$L_a", "$L_b", "$L_c"]}


@pytest.mark.parametrize("snippet,line_in_body,col,words", [
    ("  add.u32 %r1, %r2 %r3;\n", 1, 20, "expected ','"),            # missing comma: at %r3
    ("  add.u32 %r1, %r2, 1\n  ret;\n", 2, 3, "expected ','"),       # missing ';': at the next statement
    ("  mov.u32 %r1, 5 # 3;\n", 1, 18, "unexpected character"),
    ("  @%q1 bra $L_x;\n", 1, 4, "not a declared predicate"),
    ("  .reg %r9;\n", 1, 8, "without a type"),
    ("  add.u32 %r1, [%r2 + ], 1;\n", 1, 23, "expected an integer"),
    ("  ld.global.u32 %r1, [%r2;\n", 1, 26, "expected ']'"),
    ("  .reg .b32 %q<abc>;\n", 1, 16, "expected an integer"),
    ("  add.u32 %r1, %r2, ;\n", 1, 21, "unexpected ';'"),
])
def test_malformed_ptx_names_line_and_column(snippet, line_in_body, col, words):
    text = entry("  /* multi\n line */\n" + snippet + "  ret;\n")
    first = text.splitlines().index("  /* multi") + 1
    with pytest.raises(PtxSyntaxError) as e:
        ptx.load(text)
    assert (e.value.line, e.value.column) == (first + 1 + line_in_body, col), str(e.value)
    assert words in str(e.value)
    assert e.value.field == f"line {e.value.line}, column {e.value.column}"


def test_unclosed_function_and_bad_module_token():
    with pytest.raises(PtxSyntaxError) as e:
        ptx.load(HEADER + ".visible .entry k()\n{\n  ret;\n")
    assert "not closed" in str(e.value)
    with pytest.raises(PtxSyntaxError) as e:
        ptx.load(HEADER + "add.u32 %r1, %r2, %r3;\n")
    assert (e.value.line, e.value.column) == (4, 1)


def test_unsupported_instruction_listed_at_compile_refused_when_run():
    # in code no thread reaches, an instruction tcemu does not know is listed when the kernel compiles (issue 20:
    # libdevice's slow paths must not block a kernel) and refused by name and line only when a thread runs it
    text = entry("""
  setp.ne.u32 %p1, %r0, 99;
  @%p1 bra $L_end;
  frobnicate.b32 %r2, %r0;
$L_end:
  ret;
""")
    line = text.splitlines().index("  frobnicate.b32 %r2, %r0;") + 1
    mod = ptx.load(text)                      # loading parses only
    with pytest.warns(PtxUnsupportedWarning, match=f"line {line} frobnicate.b32"):
        mod.launch("k", grid=1, block=32, args=[np.zeros(32, np.uint32)])
    assert [op for _, op, _ in mod.unsupported("k")] == ["frobnicate.b32"]
    with pytest.raises(PtxUnsupported) as e:
        mod.launch("k", grid=1, block=128, args=[np.zeros(128, np.uint32)])   # thread 99 reaches it
    assert e.value.field == "frobnicate.b32" and f"line {line}" in str(e.value)


@pytest.mark.parametrize("ins", ["call.uni foo, (%r1);",
                                 "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1], [%r1], 16;"])
def test_known_but_unmodelled_instructions_are_refused(ins):
    text = entry(f"  {ins}\n  ret;\n", before=".extern .func foo(.param .b32 x);\n")
    with pytest.raises(PtxUnsupported) as e:
        ptx.load(text).launch("k", grid=1, block=32, args=[np.zeros(32, np.uint32)])
    assert e.value.field == ins.split()[0]


def test_load_from_path_and_bad_sources(tmp_path):
    text = entry("  st.global.u32 [%rd1], %r0;\n  ret;\n")
    path = tmp_path / "k.ptx"
    path.write_text(text)
    out = np.zeros(32, np.uint32)
    ptx.load(str(path)).launch("k", grid=1, block=32, args=[out])
    ptx.load(path).launch("k", grid=1, block=32, args=[out])
    assert np.array_equal(out, np.arange(32))
    with pytest.raises(PtxError):
        ptx.load(str(tmp_path / "missing.ptx"))
    with pytest.raises(PtxError):
        ptx.load(12)


@pytest.mark.parametrize("edit,what", [
    (("st.global.u32 [%rd1], %r1;", "st.global.u32 [%rd1];"), "Arguments mismatch .*st takes 2"),
    (("mul.wide.u32 %rd1, %r1, 4;", "mul.wide.u32 %rd1, %r1, 08;"), "'08' is not an integer literal"),
    (("st.global.u32 [%rd1], %r1;", "stmatrix.sync.aligned.m8n8.shared.b16 [%rd1], {%r1};"), "needs the matrix count"),
    ((".version 8.5\n", ""), "begins with a .version directive"),
], ids=["too few operands", "bad octal", "stmatrix without .num", "no .version"])
def test_malformed_ptx_is_a_syntax_error(edit, what):
    """Found by the campaign's mutated PTX: an instruction compiler indexing a missing operand (IndexError), a
    number token that is no integer literal (ValueError), a missing .x1/.x2/.x4 (KeyError), an empty text
    taken as a module."""
    from tcemu.ptx import PtxSyntaxError, load
    text = """.version 8.5
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd0, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd1, %r1, 4;
  add.s64 %rd1, %rd0, %rd1;
  st.global.u32 [%rd1], %r1;
  ret;
}
"""
    load(text).program("k")  # the unedited kernel compiles
    assert edit[0] in text
    with pytest.raises(PtxSyntaxError, match=what):
        load(text.replace(*edit)).program("k")
