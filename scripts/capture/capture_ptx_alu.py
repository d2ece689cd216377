"""Capture the exact results of PTX ALU instructions on an sm_90a GPU and write traces/ptx_alu_sm90.npz.

Numpy only (does not import tcemu). Each op form (PTX spelling, e.g. "fma.rn.ftz.f32") is one kernel of
scripts/capture/capture_ptx_alu.cu (its inline asm comes from scripts/capture/ptx_alu_ops.inc, generated from FORMS below
by `--gen-inc`) applied to a table of input bit patterns: special values crossed with each other for binary
ops (+-0, +-subnormal min/max, +-normal min, +-1, +-max finite, +-inf, quiet/signalling NaNs with payloads),
halfway and boundary cases, plus seeded random patterns. Outputs are the raw destination registers.

Exact device command (build + capture, about a minute on an H100):

    python3 scripts/capture/capture_ptx_alu.py --gen-inc && nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o /tmp/ptx_alu scripts/capture/capture_ptx_alu.cu && python3 scripts/capture/capture_ptx_alu.py --binary /tmp/ptx_alu --seed 2611 --out traces/ptx_alu_sm90.npz

`--dry-run --out X.npz` exercises case generation and trace writing with fake outputs (no GPU, no binary).
"""
import argparse
import datetime
import hashlib
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
INC = os.path.join(HERE, "ptx_alu_ops.inc")
BUILD = "nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o /tmp/ptx_alu scripts/capture/capture_ptx_alu.cu"

# operand tags -> (register bits, generator family)
TAGS = {"f64": 64, "f32": 32, "f16": 16, "bf16": 16, "f16x2": 32, "bf16x2": 32, "e4m3x2": 16, "e5m2x2": 16,
        "u16": 16, "s16": 16, "u32": 32, "s32": 32, "u64": 64, "s64": 64, "sh": 32, "pos": 32, "len": 32,
        "cf": 32, "sel": 32}
CONSTRAINT = {16: "h", 32: "r", 64: "l"}


class Form:
    """One op form: name (PTX spelling), body (PTX with {d0} {d1} {a} {b} {c} {e} placeholders; predicate
    destinations are written to pred registers p, q and read back with selp), destination register bits
    (0 = predicate), source tags."""

    def __init__(self, name, body, dst, src):
        self.name, self.body, self.dst, self.src = name, body, tuple(dst), tuple(src)


def _forms():
    F = []

    def add(name, body, dst, src):
        F.append(Form(name, body, dst, src))

    def simple(spelling, dt, srcs):
        ops = ", ".join("{" + "abce"[i] + "}" for i in range(len(srcs)))
        add(spelling, f"{spelling} {{d0}}, {ops};", [TAGS[dt]], srcs)

    rnd = ("rn", "rz", "rm", "rp")
    # float arithmetic
    for op in ("add", "sub", "mul"):
        for r in rnd:
            simple(f"{op}.{r}.f32", "f32", ["f32", "f32"])
            simple(f"{op}.{r}.ftz.f32", "f32", ["f32", "f32"])
            simple(f"{op}.{r}.f64", "f64", ["f64", "f64"])
        simple(f"{op}.rn.sat.f32", "f32", ["f32", "f32"])
        simple(f"{op}.rn.ftz.sat.f32", "f32", ["f32", "f32"])
        for t in ("f16", "f16x2"):
            for m in ("rn", "rn.ftz", "rn.sat"):
                simple(f"{op}.{m}.{t}", t, [t, t])
        for t in ("bf16", "bf16x2"):
            simple(f"{op}.rn.{t}", t, [t, t])
    for r in rnd:
        simple(f"fma.{r}.f32", "f32", ["f32"] * 3)
        simple(f"fma.{r}.ftz.f32", "f32", ["f32"] * 3)
        simple(f"fma.{r}.f64", "f64", ["f64"] * 3)
    for m in ("rn.sat", "rn.ftz.sat"):
        simple(f"fma.{m}.f32", "f32", ["f32"] * 3)
    simple("mad.rn.f32", "f32", ["f32"] * 3)
    for t in ("f16", "f16x2"):
        for m in ("rn", "rn.ftz", "rn.sat", "rn.relu"):
            simple(f"fma.{m}.{t}", t, [t] * 3)
    for t in ("bf16", "bf16x2"):
        for m in ("rn", "rn.relu"):
            simple(f"fma.{m}.{t}", t, [t] * 3)
    for r in rnd:
        simple(f"div.{r}.f32", "f32", ["f32", "f32"])
        simple(f"div.{r}.f64", "f64", ["f64", "f64"])
        for op in ("rcp", "sqrt"):
            simple(f"{op}.{r}.f32", "f32", ["f32"])
            simple(f"{op}.{r}.f64", "f64", ["f64"])
    for s in ("div.rn.ftz.f32", "div.full.f32", "div.full.ftz.f32", "div.approx.f32", "div.approx.ftz.f32"):
        simple(s, "f32", ["f32", "f32"])
    for s in ("rcp.rn.ftz.f32", "sqrt.rn.ftz.f32", "rcp.approx.f32", "rcp.approx.ftz.f32", "sqrt.approx.f32",
              "sqrt.approx.ftz.f32", "rsqrt.approx.f32", "rsqrt.approx.ftz.f32", "ex2.approx.f32",
              "ex2.approx.ftz.f32", "lg2.approx.f32", "lg2.approx.ftz.f32", "sin.approx.f32", "sin.approx.ftz.f32",
              "cos.approx.f32", "cos.approx.ftz.f32", "tanh.approx.f32"):
        simple(s, "f32", ["f32"])
    simple("rcp.approx.ftz.f64", "f64", ["f64"])
    simple("rsqrt.approx.f64", "f64", ["f64"])
    for t in ("f16", "f16x2"):
        simple(f"ex2.approx.{t}", t, [t])
        simple(f"tanh.approx.{t}", t, [t])
    for t in ("bf16", "bf16x2"):
        simple(f"ex2.approx.ftz.{t}", t, [t])
        simple(f"tanh.approx.{t}", t, [t])
    # min / max / neg / abs / copysign / testp
    for op in ("min", "max"):
        for m in ("", ".ftz", ".NaN", ".xorsign.abs", ".ftz.NaN"):
            simple(f"{op}{m}.f32", "f32", ["f32", "f32"])
        simple(f"{op}.f64", "f64", ["f64", "f64"])
        for m in ("", ".ftz", ".NaN", ".xorsign.abs"):
            simple(f"{op}{m}.f16", "f16", ["f16", "f16"])
        for m in ("", ".NaN", ".xorsign.abs"):
            simple(f"{op}{m}.bf16", "bf16", ["bf16", "bf16"])
        for t in ("f16x2", "bf16x2"):
            for m in ("", ".NaN"):
                simple(f"{op}{m}.{t}", t, [t, t])
    for op in ("neg", "abs"):
        for s, t in ((".f32", "f32"), (".ftz.f32", "f32"), (".f64", "f64"), (".f16", "f16"), (".ftz.f16", "f16"),
                     (".f16x2", "f16x2"), (".bf16", "bf16"), (".bf16x2", "bf16x2")):
            simple(op + s, t, [t])
    simple("copysign.f32", "f32", ["f32", "f32"])
    simple("copysign.f64", "f64", ["f64", "f64"])
    for t in ("f32", "f64"):
        for op in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"):
            add(f"testp.{op}.{t}", f"testp.{op}.{t} p, {{a}};", [0], [t])
    # comparisons
    cmps = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
    for t in ("f32", "f64", "f16", "bf16"):
        for c in cmps:
            add(f"setp.{c}.{t}", f"setp.{c}.{t} p, {{a}}, {{b}};", [0], [t, t])
    for c in ("lt", "equ", "num"):
        add(f"setp.{c}.ftz.f32", f"setp.{c}.ftz.f32 p, {{a}}, {{b}};", [0], ["f32", "f32"])
        add(f"setp.{c}.ftz.f16", f"setp.{c}.ftz.f16 p, {{a}}, {{b}};", [0], ["f16", "f16"])
    for t in ("f16x2", "bf16x2"):
        for c in ("lt", "eq", "geu", "nan"):
            add(f"setp.{c}.{t}", f"setp.{c}.{t} p|q, {{a}}, {{b}};", [0, 0], [t, t])
    for dt, st in (("u32", "f32"), ("f32", "f32"), ("f16", "f32"), ("f16x2", "f16x2"), ("bf16x2", "bf16x2"),
                   ("u32", "f16x2")):
        simple(f"set.lt.{dt}.{st}", dt, [st, st])
    # conversions
    for r in rnd:
        simple(f"cvt.{r}.f16.f32", "f16", ["f32"])
        simple(f"cvt.{r}.bf16.f32", "bf16", ["f32"])
        simple(f"cvt.{r}.f32.f64", "f32", ["f64"])
        simple(f"cvt.{r}.f16.bf16", "f16", ["bf16"])
        simple(f"cvt.{r}.bf16.f16", "bf16", ["f16"])
    for s in ("cvt.rn.ftz.f16.f32", "cvt.rn.sat.f16.f32", "cvt.rn.relu.f16.f32", "cvt.rn.satfinite.f16.f32",
              "cvt.rn.relu.satfinite.f16.f32", "cvt.rz.relu.f16.f32"):
        simple(s, "f16", ["f32"])
    for s in ("cvt.rn.relu.bf16.f32", "cvt.rn.satfinite.bf16.f32", "cvt.rz.relu.satfinite.bf16.f32",
              "cvt.rn.ftz.bf16.f32"):
        simple(s, "bf16", ["f32"])
    for s in ("cvt.rn.ftz.f32.f64", "cvt.rn.sat.f32.f64"):
        simple(s, "f32", ["f64"])
    for s in ("cvt.rn.f16.f64", "cvt.rz.f16.f64", "cvt.rn.bf16.f64", "cvt.rm.bf16.f64"):
        simple(s, s.split(".")[-2], ["f64"])
    for s in ("cvt.f32.f16", "cvt.ftz.f32.f16", "cvt.f32.bf16", "cvt.ftz.f32.bf16", "cvt.f64.f32", "cvt.ftz.f64.f32",
              "cvt.f64.f16", "cvt.f64.bf16", "cvt.f16.bf16", "cvt.sat.f32.f16"):
        d, a = s.split(".")[-2:]
        simple(s, d, [a])
    for s in ("cvt.rni.f32.f32", "cvt.rzi.f32.f32", "cvt.rmi.f32.f32", "cvt.rpi.f32.f32", "cvt.rni.ftz.f32.f32",
              "cvt.ftz.f32.f32", "cvt.sat.f32.f32", "cvt.ftz.sat.f32.f32", "cvt.rni.f64.f64", "cvt.rmi.f64.f64",
              "cvt.rni.f16.f16", "cvt.rzi.f16.f16", "cvt.sat.f16.f16", "cvt.rni.bf16.bf16", "cvt.rpi.bf16.bf16"):
        d = s.split(".")[-1]
        simple(s, d, [d])
    for s in ("cvt.rna.tf32.f32", "cvt.rna.satfinite.tf32.f32", "cvt.rn.tf32.f32", "cvt.rz.tf32.f32",
              "cvt.rn.relu.tf32.f32", "cvt.rz.relu.tf32.f32"):
        simple(s, "u32", ["f32"])
    for s in ("rn", "rz", "rn.relu", "rn.satfinite", "rz.relu.satfinite"):
        simple(f"cvt.{s}.f16x2.f32", "u32", ["f32", "f32"])
    for s in ("rn", "rz", "rn.relu", "rn.satfinite"):
        simple(f"cvt.{s}.bf16x2.f32", "u32", ["f32", "f32"])
    for f8 in ("e4m3x2", "e5m2x2"):
        for s in ("rn.satfinite", "rn.satfinite.relu"):
            simple(f"cvt.{s}.{f8}.f32", "u16", ["f32", "f32"])
            simple(f"cvt.{s}.{f8}.f16x2", "u16", ["f16x2"])
        for s in ("rn", "rn.relu"):
            simple(f"cvt.{s}.f16x2.{f8}", "u32", [f8])
    for src in ("f32", "f64", "f16", "bf16"):
        ints = ("s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64") if src == "f32" else \
            ("s32", "u32", "s64", "u16" if src == "bf16" else "u8")
        modes = ("rni", "rzi", "rmi", "rpi") if src == "f32" else ("rni", "rzi")
        for it in ints:
            for m in modes:
                dreg = "u64" if it.endswith("64") else ("u16" if it == "u16" and src == "bf16" else "u32")
                simple(f"cvt.{m}.{it}.{src}", dreg, [src])
    simple("cvt.rni.ftz.s32.f32", "u32", ["f32"])
    simple("cvt.rni.sat.s8.f32", "u32", ["f32"])
    for dst in ("f32", "f64", "f16", "bf16"):
        for it in ("s32", "u32", "s64", "u64", "s16"):
            for m in (rnd if dst in ("f32", "f16") else ("rn", "rz")):
                simple(f"cvt.{m}.{dst}.{it}", dst, [it])
    simple("cvt.rn.sat.f32.s32", "f32", ["s32"])
    for s, d, a in (("cvt.s8.s32", "u32", "s32"), ("cvt.u8.s32", "u32", "s32"), ("cvt.s32.s16", "u32", "s16"),
                    ("cvt.u32.s16", "u32", "s16"), ("cvt.sat.s16.s32", "u16", "s32"), ("cvt.sat.u16.s32", "u16", "s32"),
                    ("cvt.sat.u32.s32", "u32", "s32"), ("cvt.sat.s32.u32", "u32", "u32"), ("cvt.sat.s32.s64", "u32", "s64"),
                    ("cvt.s64.s32", "u64", "s32"), ("cvt.u64.s32", "u64", "s32"), ("cvt.sat.u64.s64", "u64", "s64"),
                    ("cvt.sat.s8.s32", "u32", "s32"), ("cvt.u16.u64", "u16", "u64")):
        simple(s, d, [a])
    # integer arithmetic
    for t in ("u16", "s16", "u32", "s32", "u64", "s64"):
        for op in ("add", "sub", "div", "rem", "min", "max"):
            simple(f"{op}.{t}", t, [t, t])
        for m in ("lo", "hi") + (("wide",) if "64" not in t else ()):
            wt = {"16": "32", "32": "64"}.get(t[1:], t[1:])
            dt = t[0] + wt if m == "wide" else t
            simple(f"mul.{m}.{t}", dt, [t, t])
            simple(f"mad.{m}.{t}", dt, [t, t, dt])
        simple(f"sad.{t}", t, [t, t, t])
        if t[0] == "s":
            simple(f"abs.{t}", t, [t])
            simple(f"neg.{t}", t, [t])
    for s in ("add.sat.s32", "sub.sat.s32", "min.relu.s32", "max.relu.s32"):
        simple(s, "s32", ["s32", "s32"])
    simple("mad.hi.sat.s32", "s32", ["s32"] * 3)
    for s in ("add.u16x2", "add.s16x2", "min.u16x2", "max.s16x2", "min.relu.s16x2", "max.relu.s16x2"):
        simple(s, "u32", ["u32", "u32"])
    for t in ("u32", "s32"):
        for m in ("lo", "hi"):
            simple(f"mul24.{m}.{t}", t, [t, t])
            simple(f"mad24.{m}.{t}", t, [t, t, t])
    simple("mad24.hi.sat.s32", "s32", ["s32"] * 3)
    # carry chains: the carry is read back with addc d, 0, 0; addc/subc/madc get CF = (c != 0) first
    for t in ("u32", "u64"):
        for op in ("add", "sub"):
            add(f"{op}.cc.{t}", f"{op}.cc.{t} {{d0}}, {{a}}, {{b}}; addc.{t} {{d1}}, 0, 0;", [TAGS[t], TAGS[t]],
                [t, t])
        for op in ("addc", "subc"):
            add(f"{op}.cc.{t}", f"add.cc.u32 cf, {{c}}, 0xffffffff; {op}.cc.{t} {{d0}}, {{a}}, {{b}}; "
                                f"addc.{t} {{d1}}, 0, 0;", [TAGS[t], TAGS[t]], [t, t, "cf"])
    add("sub.cc.u32+subc", "sub.cc.u32 {d0}, {a}, {b}; subc.u32 {d1}, 0, 0;", [32, 32], ["u32", "u32"])
    add("mad.lo.cc.u32", "mad.lo.cc.u32 {d0}, {a}, {b}, {c}; addc.u32 {d1}, 0, 0;", [32, 32], ["u32"] * 3)
    add("madc.hi.cc.u32", "add.cc.u32 cf, {e}, 0xffffffff; madc.hi.cc.u32 {d0}, {a}, {b}, {c}; addc.u32 {d1}, 0, 0;",
        [32, 32], ["u32", "u32", "u32", "cf"])
    # bit manipulation and logic
    for t in ("b32", "b64"):
        for op in ("popc", "clz"):
            simple(f"{op}.{t}", "u32", ["u" + t[1:]])
        simple(f"brev.{t}", "u" + t[1:], ["u" + t[1:]])
        simple(f"bfi.{t}", "u" + t[1:], ["u" + t[1:], "u" + t[1:], "pos", "len"])
    for t in ("u32", "s32", "u64", "s64"):
        simple(f"bfind.{t}", "u32", [t])
        simple(f"bfe.{t}", t, [t, "pos", "len"])
    simple("bfind.shiftamt.u32", "u32", ["u32"])
    simple("bfind.shiftamt.s64", "u32", ["s64"])
    for m in ("", ".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16"):
        simple(f"prmt.b32{m}", "u32", ["u32", "u32", "sel"])
    for lut in (0x00, 0xFF, 0x80, 0xFE, 0x96, 0xE8, 0x1A, 0xCA, 0x3C, 0x40, 0x6A, 0xB4):
        add(f"lop3.b32.{lut:#04x}", f"lop3.b32 {{d0}}, {{a}}, {{b}}, {{c}}, {lut:#04x};", [32], ["u32"] * 3)
    for d in ("l", "r"):
        for m in ("clamp", "wrap"):
            simple(f"shf.{d}.{m}.b32", "u32", ["u32", "u32", "sh"])
    for t in ("b16", "b32", "b64"):
        simple(f"shl.{t}", "u" + t[1:], ["u" + t[1:], "sh"])
    for t in ("b16", "u16", "s16", "b32", "u32", "s32", "b64", "u64", "s64"):
        simple(f"shr.{t}", t.replace("b", "u"), [t.replace("b", "u"), "sh"])
    for op in ("and", "or", "xor"):
        simple(f"{op}.b32", "u32", ["u32", "u32"])
    for t in ("b16", "b32", "b64"):
        simple(f"not.{t}", "u" + t[1:], ["u" + t[1:]])
        simple(f"cnot.{t}", "u" + t[1:], ["u" + t[1:]])
    for at in ("u32", "s32"):
        for bt in ("u32", "s32"):
            simple(f"dp4a.{at}.{bt}", "u32", [at, bt, "s32"])
            for m in ("lo", "hi"):
                simple(f"dp2a.{m}.{at}.{bt}", "u32", [at, bt, "s32"])
    for m in ("clamp", "wrap"):
        simple(f"szext.{m}.u32", "u32", ["u32", "sh"])
        simple(f"szext.{m}.s32", "u32", ["u32", "sh"])
        simple(f"bmsk.{m}.b32", "u32", ["sh", "sh"])
    for c, t in (("lt", "s32"), ("lt", "u32"), ("lo", "u32"), ("hs", "u64"), ("ge", "s64"), ("eq", "b16"),
                 ("gt", "s16")):
        add(f"setp.{c}.{t}", f"setp.{c}.{t} p, {{a}}, {{b}};", [0], [t.replace("b", "u"), t.replace("b", "u")])
    names = [f.name for f in F]
    assert len(names) == len(set(names)), "duplicate form names"
    return F


FORMS = _forms()


def gen_inc():
    """The kernels and the op table of scripts/capture/capture_ptx_alu.cu, one kernel per form."""
    out = ["// Generated by scripts/capture/capture_ptx_alu.py --gen-inc from its FORMS; do not edit.", ""]
    ctype = {0: "unsigned int", 16: "unsigned short", 32: "unsigned int", 64: "unsigned long long"}
    for k, f in enumerate(FORMS):
        outs = []
        for j, bits in enumerate(f.dst):
            outs.append((f"d{j}", bits))
        body = f.body
        if any(b == 0 for b in f.dst):  # predicates: selp into 32-bit registers
            sel = " ".join(f"selp.u32 {{d{j}}}, 1, 0, {'pq'[j]};" for j, b in enumerate(f.dst) if b == 0)
            body = body + " " + sel
        operands, idx = {}, 0
        for j, (nm, bits) in enumerate(outs):
            operands[nm] = f"%{idx}"
            idx += 1
        for j, tag in enumerate(f.src):
            operands["abce"[j]] = f"%{idx}"
            idx += 1
        text = body.format(**operands)
        decl = "{ .reg .pred p, q; .reg .b32 cf; " + text + " }"
        lines = [f"__global__ void k{k}(const unsigned long long* __restrict__ in, unsigned long long* __restrict__ out, int n) {{",
                 "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;",
                 "  const unsigned long long* x = in + 4 * (size_t)i;"]
        for j, tag in enumerate(f.src):
            lines.append(f"  {ctype[TAGS[tag]]} s{j} = ({ctype[TAGS[tag]]})x[{j}];")
        for nm, bits in outs:
            lines.append(f"  {ctype[bits]} {nm} = 0;")
        cons_out = ", ".join(f'"={CONSTRAINT[b or 32]}"({nm})' for nm, b in outs)
        cons_in = ", ".join(f'"{CONSTRAINT[TAGS[t]]}"(s{j})' for j, t in enumerate(f.src))
        lines.append(f'  asm volatile("{decl}" : {cons_out} : {cons_in});')
        lines.append("  out[2 * (size_t)i] = d0;")
        lines.append(f"  out[2 * (size_t)i + 1] = {'d1' if len(outs) > 1 else '0'};")
        lines.append("}")
        out += lines
    out.append("")
    out.append("static const Kernel KERNELS[] = {" + ", ".join(f"k{k}" for k in range(len(FORMS))) + "};")
    out.append("static const char* NAMES[] = {" + ", ".join(json.dumps(f.name) for f in FORMS) + "};")
    out.append(f"static const int NFORMS = {len(FORMS)};")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------ inputs

FLOATS = {"f64": (11, 52), "f32": (8, 23), "f16": (5, 10), "bf16": (8, 7), "e4m3": (4, 3), "e5m2": (5, 2)}


def float_specials(fmt):
    """+-0, +-min/max subnormal, +-min normal, +-1, +-1.5, +-max finite, +-inf, NaNs (quiet, signalling, payloads)."""
    eb, mb = FLOATS[fmt]
    w = 1 + eb + mb
    s = 1 << (w - 1)
    one = ((1 << (eb - 1)) - 1) << mb
    inf = ((1 << eb) - 1) << mb
    pos = [0, 1, (1 << mb) - 1, 1 << mb, one, one | (1 << (mb - 1)), inf - 1, inf]
    nans = [inf | (1 << (mb - 1)), inf | 1, inf | ((1 << mb) - 1), inf | (1 << (mb - 1)) | 5]
    vals = pos + [v | s for v in pos] + nans + [nans[0] | s, nans[1] | s]
    return sorted(set(vals))


def random_floats(rng, fmt, n):
    """Random patterns: a third raw, a third near 1 (close exponents: cancellation, halfway cases), the rest
    across the subnormal and top ranges, with short mantissas (exact and tie cases)."""
    eb, mb = FLOATS[fmt]
    w = 1 + eb + mb
    raw = rng.integers(0, 1 << w, n, dtype=np.uint64) if w < 64 else rng.integers(0, 2**64, n, dtype=np.uint64)
    kind = rng.integers(0, 4, n)
    sign = rng.integers(0, 2, n).astype(np.uint64) << np.uint64(w - 1)
    bias = (1 << (eb - 1)) - 1
    e_near = (bias + rng.integers(-4, 5, n)).astype(np.uint64)
    man = rng.integers(0, 1 << min(mb, 62), n, dtype=np.uint64)
    if mb > 62:
        man = (man << np.uint64(mb - 62)) | rng.integers(0, 1 << (mb - 62), n, dtype=np.uint64)
    near = sign | (e_near << np.uint64(mb)) | man
    e_edge = np.where(rng.integers(0, 2, n) == 0, rng.integers(0, 3, n), (1 << eb) - 2 - rng.integers(0, 3, n))
    short = man & ~np.uint64((1 << max(mb - 3, 0)) - 1)
    edge = sign | (e_edge.astype(np.uint64) << np.uint64(mb)) | np.where(rng.integers(0, 2, n) == 0, man, short)
    near_short = sign | (e_near << np.uint64(mb)) | short
    return np.where(kind == 0, raw, np.where(kind == 1, near, np.where(kind == 2, edge, near_short)))


def int_specials(tag):
    w = TAGS[tag]
    m = (1 << w) - 1
    vals = {0, 1, 2, 3, 7, m, m - 1, 1 << (w - 1), (1 << (w - 1)) - 1, (1 << (w - 1)) + 1, 0x80, 0xFF, 0x7F,
            0x8000 & m, 0xFFFF & m, 0x55555555 & m, 0xAAAAAAAA & m}
    return sorted(v & m for v in vals)


def operand_values(rng, tag, n):
    """n random patterns of an operand tag."""
    if tag in FLOATS:
        return random_floats(rng, tag, n)
    if tag in ("f16x2", "bf16x2"):
        h = random_floats(rng, tag[:-2], 2 * n)
        return h[:n] | (h[n:] << np.uint64(16))
    if tag in ("e4m3x2", "e5m2x2"):
        return rng.integers(0, 1 << 16, n, dtype=np.uint64)
    if tag in ("sh", "pos", "len"):
        small = rng.integers(0, 70, n)
        big = rng.integers(0, 1 << 32, n, dtype=np.uint64) if tag == "sh" else rng.integers(0, 256, n)
        return np.where(rng.integers(0, 4, n) == 0, big, small).astype(np.uint64)
    if tag == "cf":
        return rng.integers(0, 2, n, dtype=np.uint64)
    if tag == "sel":
        return rng.integers(0, 1 << 32, n, dtype=np.uint64)
    w = TAGS[tag]
    raw = rng.integers(0, 1 << w, n, dtype=np.uint64) if w < 64 else rng.integers(0, 2**64, n, dtype=np.uint64)
    small = rng.integers(0, 300, n, dtype=np.uint64)
    neg_small = ((np.uint64(1 << w) - small) & np.uint64((1 << w) - 1)) if w < 64 else (~small + np.uint64(1))
    k = rng.integers(0, 4, n)
    return np.where(k < 2, raw, np.where(k == 2, small, neg_small))


def specials(tag):
    if tag in FLOATS:
        return float_specials(tag)
    if tag in ("f16x2", "bf16x2"):
        sp = float_specials(tag[:-2])
        return [a | (b << 16) for a, b in zip(sp, sp[::-1])]
    if tag in ("e4m3x2", "e5m2x2"):
        return [a | (b << 8) for a in range(256) for b in (0x00, 0x7F, 0x80, 0xFF, 0x01, 0x78, 0x7C)]
    if tag in ("sh", "pos", "len"):
        return [0, 1, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 127, 255, 256, 0xFFFFFFFF]
    if tag == "cf":
        return [0, 1]
    if tag == "sel":
        return [0x3210, 0x7654, 0x1032, 0x8888, 0xFFFF, 0xBA98, 0, 1, 2, 3, 0x4321]
    return int_specials(tag)


def halfway_cases(form):
    """Conversions from f32/f64: values exactly halfway between destination neighbours and one ulp either
    side; to integers: k + 1/2 and the range edges."""
    name = form.name
    if not name.startswith("cvt") or form.src[0] not in ("f32", "f64"):
        return []
    dst = name.split(".")[-2]
    src = form.src[0]
    eb, mb = FLOATS[src]
    if dst[0] in "su" and dst[1:].isdigit():
        vals = [k + 0.5 for k in range(6)] + [2.0 ** 31, 2.0 ** 32, 2.0 ** 63, 2.0 ** 64, 2.0 ** 15, 2.0 ** 16,
                                              2.0 ** 7, 2.0 ** 8, 1e30, 0.49999997]
        vals = vals + [-v for v in vals]
        ftype = np.float32 if src == "f32" else np.float64
        utype = np.uint32 if src == "f32" else np.uint64
        bits = np.array(vals, ftype).view(utype).astype(np.uint64)
        return sorted(set(int(x) + d for x in bits for d in (-1, 0, 1)))
    keep = {"f16": 10, "bf16": 7, "tf32": 10, "f32": 23, "e4m3x2": 3, "e5m2x2": 2, "f16x2": 10, "bf16x2": 7}.get(dst)
    if keep is None or keep >= mb:
        return []
    bias = (1 << (eb - 1)) - 1
    out = []
    for e in (bias - 20, bias - 14, bias - 10, bias - 1, bias, bias + 3, bias + 15, bias + 16, bias + 127,
              bias - 126, bias - 127, bias - 133, bias - 149, bias - 150):
        if not 0 < e < (1 << eb) - 1:
            continue
        for m in (1, 2, 3, 5, (1 << keep) - 1):
            half = (m << (mb - keep)) | (1 << (mb - keep - 1))
            for d in (-1, 0, 1):
                for s in (0, 1):
                    out.append((s << (eb + mb)) | (e << mb) | (half + d))
    return out


def cases_for(form, rng, n_random):
    """(k, 4) uint64 operand slots for one form: specials crossed (binary: all pairs; ternary: a subset),
    halfway cases, then random patterns."""
    src = form.src
    cols = []
    sp = [np.array(specials(t), np.uint64) for t in src]
    if len(src) == 1:
        base = [sp[0]]
    elif len(src) == 2:
        g = np.meshgrid(sp[0], sp[1], indexing="ij")
        base = [g[0].ravel(), g[1].ravel()]
    else:
        small = [s[rng.permutation(s.size)[:12]] if s.size > 12 else s for s in sp]
        g = np.meshgrid(*small, indexing="ij")
        base = [x.ravel() for x in g]
    hw = halfway_cases(form)
    if hw:
        h = np.array(hw, np.uint64)
        base = [np.concatenate([base[0], h])] + [np.concatenate([b, operand_values(rng, t, h.size)])
                                                 for b, t in zip(base[1:], src[1:])]
    rand = [operand_values(rng, t, n_random) for t in src]
    for j in range(len(src)):
        cols.append(np.concatenate([base[j], rand[j]]))
    k = cols[0].size
    slots = np.zeros((k, 4), np.uint64)
    for j, c in enumerate(cols):
        slots[:, j] = c[:k]
    return slots


def plan(seed, n_random):
    rng = np.random.default_rng(seed)
    ops, slots = [], []
    for i, f in enumerate(FORMS):
        s = cases_for(f, rng, n_random)
        ops.append(np.full(s.shape[0], i, np.int32))
        slots.append(s)
    return np.concatenate(ops), np.concatenate(slots)


# ------------------------------------------------------------------------------------------ driver

def provenance(args):
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60).stdout.strip()
        except Exception as e:  # provenance is best effort; say what failed
            return f"unavailable ({e})"
    sources = {}
    for f in ("capture_ptx_alu.cu", "capture_ptx_alu.py", "ptx_alu_ops.inc"):
        with open(os.path.join(HERE, f), "rb") as fh:
            sources["scripts/capture/" + f] = hashlib.sha256(fh.read()).hexdigest()
    return {"gpu": sh("nvidia-smi --query-gpu=name --format=csv,noheader | head -1"),
            "driver": sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1"),
            "cuda": sh("nvcc --version | tail -2 | head -1"),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": "python3 " + " ".join(sys.argv), "build": BUILD, "sources": sources, "seed": args.seed,
            "smem_base": "not used (registers only)"}


def fake_outputs(op, slots):
    """--dry-run: deterministic stand-ins for hardware results (the XOR of the operands)."""
    out = np.zeros((op.size, 2), np.uint64)
    out[:, 0] = slots[:, 0] ^ slots[:, 1] ^ slots[:, 2]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gen-inc", action="store_true", help="write scripts/capture/ptx_alu_ops.inc and exit")
    ap.add_argument("--binary", help="the built capture_ptx_alu.cu")
    ap.add_argument("--dry-run", action="store_true", help="fake outputs, no GPU")
    ap.add_argument("--seed", type=int, default=2611)
    ap.add_argument("--random", type=int, default=1000, help="random cases per form")
    ap.add_argument("--out")
    ap.add_argument("--workdir", default="/tmp")
    args = ap.parse_args()
    if args.gen_inc:
        with open(INC, "w") as fh:
            fh.write(gen_inc())
        print(f"wrote {INC}: {len(FORMS)} forms")
        return
    if not args.out or not (args.binary or args.dry_run):
        ap.error("--out and one of --binary / --dry-run are required")
    op, slots = plan(args.seed, args.random)
    if args.dry_run:
        out = fake_outputs(op, slots)
    else:
        listed = subprocess.run([args.binary, "--list"], check=True, capture_output=True, text=True).stdout.split("\n")
        if [x for x in listed if x] != [f.name for f in FORMS]:
            sys.exit("the binary's forms differ from FORMS: rebuild after --gen-inc")
        inp, outp = os.path.join(args.workdir, "alu_in.bin"), os.path.join(args.workdir, "alu_out.bin")
        with open(inp, "wb") as fh:
            np.array([op.size], np.int64).tofile(fh)
            op.tofile(fh)
            slots.tofile(fh)
        subprocess.run([args.binary, inp, outp], check=True)
        out = np.fromfile(outp, np.uint64).reshape(op.size, 2)
    meta = {"format": "tcemu-trace", "version": 1, "kind": "ptx_alu", "arch": "sm90",
            "forms": [{"name": f.name, "dst": list(f.dst), "src": list(f.src)} for f in FORMS],
            "dry_run": bool(args.dry_run), **provenance(args),
            "columns": {"op": "int16 index into meta.forms (PTX spelling; 'dst' register bits, 0 = predicate; "
                              "'src' operand tags)",
                        "a": "uint64 source operand 0 bit pattern (low bits; width per tag)",
                        "b": "uint64 source operand 1", "c": "uint64 source operand 2", "e": "uint64 source operand 3",
                        "d": "uint64 destination register 0 (predicates as 0/1)",
                        "d1": "uint64 destination register 1 (second predicate, carry read back), else 0"}}
    np.savez_compressed(args.out, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                        op=op.astype(np.int16), a=slots[:, 0], b=slots[:, 1], c=slots[:, 2], e=slots[:, 3],
                        d=out[:, 0], d1=out[:, 1])
    print(f"wrote {args.out}: {len(FORMS)} forms, {op.size} cases{' (dry run: fake outputs)' if args.dry_run else ''}")


if __name__ == "__main__":
    main()
