"""SIMD video instructions (tcemu/ptx/ops/video.py, PTX ISA 9.7.8.2) in hand-written PTX: every element computed
here in plain Python; the H100 check of what nvcc emits (vabsdiff2 / vabsdiff4, with and without .add) is
tests/frontends/test_exec_programs.py's simd.cu."""
import numpy as np
import pytest

from tcemu.ptx.errors import PtxSyntaxError, PtxUnsupported

from ptxkit import run

A = [(t * 2654435761 + 977) & 0xFFFFFFFF for t in range(32)]
B = [(t * 40503 * 40503 + 13) & 0xFFFFFFFF for t in range(32)]
C = [(t * 7919 + 5) & 0xFFFFFFFF for t in range(32)]


def _els(v, n, signed):
    bits = 32 // n
    out = [(v >> (bits * i)) & ((1 << bits) - 1) for i in range(n)]
    return [e - (1 << bits) if signed and e >> (bits - 1) else e for e in out]


def _model(op, n, v, a, b, c, sat=False, add=False, dsigned=False):
    ea, eb = _els(a, n, v), _els(b, n, v)
    t = []
    for x, y in zip(ea, eb):
        r = {"vadd": x + y, "vsub": x - y, "vabsdiff": abs(x - y), "vmin": min(x, y), "vmax": max(x, y),
             "vavrg": (x + y + 1) >> 1 if x + y >= 0 else (x + y) >> 1}[op]
        t.append(r)
    if add:
        return (c + sum(t)) & 0xFFFFFFFF
    bits = 32 // n
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dsigned else (0, (1 << bits) - 1)
    return sum(((min(max(r, lo), hi) if sat else r) & ((1 << bits) - 1)) << (bits * i) for i, r in enumerate(t))


def _run(ins):
    table = ", ".join(str(x) for x in A + B + C)
    before = f".global .align 4 .u32 tab[96] = {{{table}}};\n"
    body = f"""  mov.u64 %rd5, tab;
  mul.wide.u32 %rd6, %r0, 4;
  add.s64 %rd5, %rd5, %rd6;
  ld.global.u32 %r1, [%rd5];
  ld.global.u32 %r2, [%rd5+128];
  ld.global.u32 %r3, [%rd5+256];
  {ins} %r4, %r1, %r2, %r3;
  st.global.u32 [%rd1], %r4;
  ret;
"""
    return [int(x) for x in run(body, before=before)]


@pytest.mark.parametrize("form", ["vabsdiff4.u32.u32.u32", "vabsdiff4.u32.u32.u32.add", "vabsdiff2.s32.s32.s32.add",
                                  "vadd4.u32.u32.u32.sat", "vadd4.s32.s32.s32.sat", "vsub2.s32.s32.s32",
                                  "vavrg2.s32.s32.s32", "vavrg4.u32.u32.u32", "vmin4.s32.s32.s32",
                                  "vmax2.u32.u32.u32.sat"])
def test_simd_video_forms(form):
    parts = form.split(".")
    op, n = parts[0][:-1], int(parts[0][-1])
    signed = parts[1] == "s32"
    want = [_model(op, n, signed, A[t], B[t], C[t], sat="sat" in parts, add="add" in parts, dsigned=signed)
            for t in range(32)]
    assert _run(form) == want


def test_selectors_are_refused_by_name_and_sat_with_add_is_a_syntax_error():
    with pytest.raises(PtxUnsupported, match="element selectors and masks other than the defaults"):
        _run_sel()
    with pytest.raises(PtxSyntaxError, match=".sat and .add exclude each other"):
        _run("vadd4.u32.u32.u32.sat.add")


def _run_sel():
    body = """  mov.u32 %r1, 5;
  vadd2.u32.u32.u32 %r4.h0, %r1, %r1, %r1;
  st.global.u32 [%rd1], %r4;
  ret;
"""
    return run(body)
