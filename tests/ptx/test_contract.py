"""ptxas's mul + add contraction (tcemu/ptx/contract.py): which add/sub runs as one fused multiply-add.

The rules were read from ptxas 13.0's SASS for sm_90a; test_rules_agree_with_ptxas recompiles every case and
checks the FFMA count when ptxas and cuobjdump are on PATH (or in Triton's wheel)."""
import glob
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import tcemu.ptx as ptx

HEAD = """.version 8.5
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
 .reg .f32 %f<20>;
 .reg .f64 %fd<8>;
 .reg .b16 %h<8>;
 .reg .b32 %x<8>;
 .reg .b64 %rd<8>;
 .reg .b32 %r<4>;
 .reg .pred %p<3>;
 ld.param.u64 %rd1, [out];
 cvta.to.global.u64 %rd1, %rd1;
 mov.u32 %r1, %tid.x;
 mul.wide.u32 %rd2, %r1, 4;
 add.s64 %rd1, %rd1, %rd2;
 ld.param.u64 %rd3, [out];
 cvta.to.global.u64 %rd3, %rd3;
 ld.global.f32 %f1, [%rd3];
 ld.global.f32 %f2, [%rd3+4];
 ld.global.f32 %f3, [%rd3+8];
 ld.global.f32 %f4, [%rd3+12];
 ld.global.f64 %fd1, [%rd3];
 ld.global.f64 %fd2, [%rd3+8];
 ld.global.b16 %h1, [%rd3];
 ld.global.b16 %h2, [%rd3+2];
 ld.global.b16 %h3, [%rd3+4];
 ld.global.b32 %x1, [%rd3];
 ld.global.b32 %x2, [%rd3+4];
"""
TAIL = " ret;\n}\n"

# (name, body, number of fused add/sub ptxas 13.0 emits as FFMA)
CASES = [
    ("single use", "mul.f32 %f5, %f1, %f2;\n add.f32 %f6, %f5, %f3;\n st.global.f32 [%rd1], %f6;", 1),
    ("two uses", "mul.f32 %f5, %f1, %f2;\n add.f32 %f6, %f5, %f3;\n sub.f32 %f7, %f5, %f4;\n"
                 " st.global.f32 [%rd1], %f6;\n st.global.f32 [%rd1+4], %f7;", 2),
    ("product also stored", "mul.f32 %f5, %f1, %f2;\n add.f32 %f6, %f5, %f3;\n st.global.f32 [%rd1], %f6;\n"
                            " st.global.f32 [%rd1+4], %f5;", 0),
    ("two products", "mul.f32 %f5, %f1, %f2;\n mul.f32 %f7, %f3, %f4;\n add.f32 %f6, %f5, %f7;\n"
                     " st.global.f32 [%rd1], %f6;", 1),
    ("c minus product", "mul.f32 %f5, %f1, %f2;\n sub.f32 %f6, %f3, %f5;\n st.global.f32 [%rd1], %f6;", 1),
    ("mul.rn", "mul.rn.f32 %f5, %f1, %f2;\n add.f32 %f6, %f5, %f3;\n st.global.f32 [%rd1], %f6;", 0),
    ("add.rn", "mul.f32 %f5, %f1, %f2;\n add.rn.f32 %f6, %f5, %f3;\n st.global.f32 [%rd1], %f6;", 0),
    ("ftz on one side", "mul.ftz.f32 %f5, %f1, %f2;\n add.f32 %f6, %f5, %f3;\n st.global.f32 [%rd1], %f6;", 0),
    ("ftz on both", "mul.ftz.f32 %f5, %f1, %f2;\n add.ftz.f32 %f6, %f5, %f3;\n st.global.f32 [%rd1], %f6;", 1),
    ("sat add", "mul.f32 %f5, %f1, %f2;\n add.sat.f32 %f6, %f5, %f3;\n st.global.f32 [%rd1], %f6;", 1),
    ("x*y + x*y", "mul.f32 %f5, %f1, %f2;\n add.f32 %f6, %f5, %f5;\n st.global.f32 [%rd1], %f6;", 0),
    ("product into fma", "mul.f32 %f5, %f1, %f2;\n fma.rn.f32 %f6, %f3, %f4, %f5;\n st.global.f32 [%rd1], %f6;",
     0),
    ("f64, c minus product", "mul.f64 %fd3, %fd1, %fd2;\n sub.f64 %fd4, %fd1, %fd3;\n st.global.f64 [%rd1], %fd4;", 1),
    ("f16", "mul.f16 %h4, %h1, %h2;\n add.f16 %h5, %h4, %h3;\n st.global.b16 [%rd1], %h5;", 1),
    ("bf16", "mul.bf16 %h4, %h1, %h2;\n sub.bf16 %h5, %h3, %h4;\n st.global.b16 [%rd1], %h5;", 1),
    ("f16x2", "mul.f16x2 %x3, %x1, %x2;\n sub.f16x2 %x4, %x1, %x3;\n st.global.b32 [%rd1], %x4;", 1),
    ("bf16x2 product stored", "mul.bf16x2 %x3, %x1, %x2;\n add.bf16x2 %x4, %x3, %x1;\n st.global.b32 [%rd1], %x4;\n"
                              " st.global.b32 [%rd1+4], %x3;", 0),
    ("across a branch", "mul.f32 %f5, %f1, %f2;\n setp.gt.f32 %p1, %f3, 0f00000000;\n @%p1 bra L1;\n"
                        " add.f32 %f6, %f5, %f3;\n st.global.f32 [%rd1], %f6;\nL1:\n st.global.f32 [%rd1+8], %f4;",
     0),
]


def _fused(body):
    mod = ptx.load(HEAD + " " + body + "\n" + TAIL)
    prog = mod.program("k")
    return prog.contractions


@pytest.mark.parametrize("name,body,ffma", CASES, ids=[c[0] for c in CASES])
def test_fusions_counted_as_ptxas_makes_them(name, body, ffma):
    assert len(_fused(body)) == ffma


def test_packed_halves_negate_both_lanes():
    """c - a*b on f16x2 is fma(-a, b, c) in both halves: each half equals the scalar fused f16 result."""
    out = np.zeros(64, np.uint32)
    a, b, c = 0x3C013BFF, 0x3BFE3C02, 0xBC003C00      # per half: a, b and c (1 + 2^-10 etc.)
    out[:3] = [a, b, c]
    body = ("ld.global.b32 %x5, [%rd3+8];\n mul.f16x2 %x3, %x1, %x2;\n sub.f16x2 %x4, %x5, %x3;\n"
            " st.global.b32 [%rd1], %x4;")
    mod = ptx.load(HEAD + " " + body + "\n" + TAIL)
    assert len(mod.program("k").contractions) == 1
    mod.launch("k", grid=1, block=32, args=[out])
    f16 = lambda v: np.uint16(v).view(np.float16).astype(np.float64)   # noqa: E731
    for shift in (0, 16):
        x, y, z = (f16((w >> shift) & 0xFFFF) for w in (a, b, c))
        want = np.float16(z - x * y).view(np.uint16)      # exact in float64, one rounding to f16
        assert (int(out[0]) >> shift) & 0xFFFF == want


def test_two_products_fuse_the_first_operand():
    fused = _fused(CASES[3][1])
    (pc, (mul_pc, k)), = fused.items()
    assert k == 1


def test_fused_result_is_rounded_once():
    """a*b + c with a = 1 + 2^-23, b = 1 - 2^-23, c = -1: a*b = 1 - 2^-46 rounds to 1 alone, so mul then add
    gives 0, while one fma keeps the product's low bits: -2^-46, which is what runs."""
    out = np.zeros(64, np.uint32)
    out[:4] = [0x3F800001, 0x3F7FFFFE, 0xBF800000, 0x3F800003]   # the loads of %f1..%f4
    mod = ptx.load(HEAD + " " + CASES[0][1] + "\n" + TAIL)
    mod.launch("k", grid=1, block=32, args=[out])
    a, b, c = np.uint32(0x3F800001).view(np.float32), np.uint32(0x3F7FFFFE).view(np.float32), -1.0
    exact = np.float32(float(a) * float(b) + c)              # the product is exact in float64
    separate = np.float32(np.float32(a * b) + np.float32(c))
    assert exact == -2.0 ** -46 and separate == 0
    assert out[0] == exact.view(np.uint32)


def _tool(name):
    path = shutil.which(name)
    if path:
        return path
    hits = glob.glob(os.path.join(os.path.dirname(__import__("importlib").util.find_spec("triton").origin),
                                  "backends", "nvidia", "bin", name)) if \
        __import__("importlib").util.find_spec("triton") else []
    return hits[0] if hits else None


@pytest.mark.parametrize("name,body,ffma", CASES, ids=[c[0] for c in CASES])
@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_rules_agree_with_ptxas(tmp_path, name, body, ffma):
    ptxas, cuobjdump = _tool("ptxas"), _tool("cuobjdump")
    if not (ptxas and cuobjdump):
        pytest.skip("ptxas and cuobjdump not on PATH (nvcc's, or Triton's wheel)")
    src = tmp_path / "k.ptx"
    src.write_text(HEAD + " " + body + "\n" + TAIL)
    subprocess.run([ptxas, "-arch=sm_90a", "-o", str(tmp_path / "k.cubin"), str(src)], check=True)
    sass = subprocess.run([cuobjdump, "-sass", str(tmp_path / "k.cubin")], check=True, capture_output=True,
                          text=True).stdout
    # an FMA adding -RZ is a plain multiply (bf16 has no HMUL2 on sm_90)
    fmas = sum(1 for line in sass.splitlines() if re.search(r"\b(FFMA|DFMA|HFMA2)\b", line) and
               not re.search(r"-RZ\s*;", line))
    assert fmas == ffma + body.count("fma.rn")
