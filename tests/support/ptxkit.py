"""Small PTX kernels for the tcemu.ptx tests: a module header, a standard register file and launch helpers.

Kernels written here are hand-written PTX; the tests compute every expectation independently (plain-Python
statements of the PTX ISA's semantics, or tcemu's hardware-verified instruction models).
"""
import json
import os

import numpy as np

import tcemu.ptx as ptx
from paths import PTX_FIXTURES as FX

HEADER = ".version 8.5\n.target sm_90a\n.address_size 64\n"

REGS = """\
  .reg .pred %p<16>;
  .reg .b16 %h<16>;
  .reg .b32 %r<64>;
  .reg .b64 %rd<32>;
  .reg .f32 %f<16>;
"""

# %rd0: global address of out, %r0: %tid.x, %rd1: &out[tid] (4-byte words)
OUT_PROLOGUE = """\
  ld.param.u64 %rd0, [out];
  cvta.to.global.u64 %rd0, %rd0;
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd1, %r0, 4;
  add.s64 %rd1, %rd0, %rd1;
"""


def entry(body: str, params: str = ".param .u64 out", name: str = "k", regs: str = REGS,
          directives: str = "", prologue: str = OUT_PROLOGUE, header: str = HEADER, before: str = "") -> str:
    """PTX text of a module with one kernel `name`."""
    return f"""{header}{before}
.visible .entry {name}({params}) {directives}
{{
{regs}{prologue}{body}
}}
"""


def run(body: str, *, block=32, grid=1, out_words=None, out=None, args=None, **kw):
    """Launch a one-output kernel built by entry(); returns the out array (uint32 words)."""
    nthreads = int(np.prod(block))
    if out is None:
        out = np.zeros(out_words or nthreads * int(np.prod(grid)), np.uint32)
    mod = ptx.load(entry(body, **{k: kw.pop(k) for k in list(kw) if k in
                                   ("params", "name", "regs", "directives", "prologue", "before")}))
    mod.launch("k", grid=grid, block=block, args=[out] + list(args or []), **kw)
    return out


# A one-instruction ALU harness: thread t loads a[t], b[t], c[t], runs the snippet, stores d.
ALU32 = """\
  ld.param.u64 %rd2, [pa];
  ld.param.u64 %rd3, [pb];
  ld.param.u64 %rd4, [pc];
  ld.param.u64 %rd5, [pd];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd6, %r0, 4;
  add.s64 %rd7, %rd2, %rd6;
  ld.global.u32 %r1, [%rd7];
  add.s64 %rd7, %rd3, %rd6;
  ld.global.u32 %r2, [%rd7];
  add.s64 %rd7, %rd4, %rd6;
  ld.global.u32 %r3, [%rd7];
  mov.u32 %r4, 0xDEADBEEF;
{body}
  add.s64 %rd7, %rd5, %rd6;
  st.global.u32 [%rd7], %r4;
  ret;
"""

ALU64 = """\
  ld.param.u64 %rd2, [pa];
  ld.param.u64 %rd3, [pb];
  ld.param.u64 %rd4, [pc];
  ld.param.u64 %rd5, [pd];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd6, %r0, 8;
  add.s64 %rd7, %rd2, %rd6;
  ld.global.u64 %rd21, [%rd7];
  add.s64 %rd7, %rd3, %rd6;
  ld.global.u64 %rd22, [%rd7];
  add.s64 %rd7, %rd4, %rd6;
  ld.global.u64 %rd23, [%rd7];
  mov.u64 %rd24, 0xDEADBEEFDEADBEEF;
{body}
  add.s64 %rd7, %rd5, %rd6;
  st.global.u64 [%rd7], %rd24;
  ret;
"""

ALU_PARAMS = ".param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd"


def alu(snippet: str, a, b=None, c=None, wide: bool = False) -> np.ndarray:
    """Run `snippet` (reading %r1 %r2 %r3 -> %r4, or %rd21 %rd22 %rd23 -> %rd24 when wide) once per element of
    a/b/c (lists of ints, up to 1024); returns d as a uint32/uint64 array."""
    dt = np.uint64 if wide else np.uint32
    mask = (1 << (64 if wide else 32)) - 1
    n = len(a)
    arrs = []
    for v in (a, b, c):
        v = [0] * n if v is None else v
        arrs.append(np.array([int(x) & mask for x in v], dt))
    d = np.zeros(n, dt)
    text = entry((ALU64 if wide else ALU32).format(body=snippet), params=ALU_PARAMS, prologue="")
    ptx.load(text).launch("k", grid=1, block=n, args=arrs + [d])
    return d


def s32(x: int) -> int:
    """Two's-complement value of a 32-bit pattern."""
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >> 31 else x


def s64(x: int) -> int:
    x &= (1 << 64) - 1
    return x - (1 << 64) if x >> 63 else x


def sx(x: int, bits: int) -> int:
    """Two's-complement value of a `bits`-wide pattern."""
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >> (bits - 1) else x


def matmul_args(meta, a, b, c, M, N, K, kn):
    """The argument values of a Triton matmul fixture for tcemu.triton.run_compiled (tests/ptx/test_triton_kernels.py,
    test_tcgen05_kernels.py): tensor descriptors of A, B and C when the kernel takes them (host TMA), else the
    pointers and the strides its signature leaves to the launch (`kn`: B stored (K, N), its N stride constexpr 1)."""
    from tcemu.frontends.triton import TensorDescriptor
    sig = meta["signature"]
    if "a_desc" in sig:
        bm, bn, bk = (meta["constexprs"][x] for x in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
        return {"a_desc": TensorDescriptor(a, [bm, bk]), "b_desc": TensorDescriptor(b, [bn, bk]),
                "c_desc": TensorDescriptor(c, [bm, bn]), "M": M, "N": N, "K": K}
    vals = {"a_ptr": a, "b_ptr": b, "c_ptr": c, "M": M, "N": N, "K": K}
    vals.update({k: v for k, v in (("stride_am", K), ("stride_bk", N if kn else 1), ("stride_bn", 1 if kn else K),
                                   ("stride_cm", N)) if sig.get(k) not in (None, "constexpr")})
    return vals


MATMUL_STORE = {"bf16": "bf16", "fp16": "f16", "fp32": "f32", "fp8e4nv": "e4m3"}   # Triton type -> tcemu


def matmul_fixture(name):
    """(metadata, PTX text) of a fixture in tests/fixtures/ptx."""
    with open(os.path.join(FX, name + ".json")) as f:
        meta = json.load(f)
    with open(os.path.join(FX, name + ".ptx")) as f:
        return meta, f.read()


def launch_matmul(name, M, N, K, edit=None, **kw):
    """Run fixture `name` on seeded inputs (tests/ptx/test_triton_kernels.py, test_gang_wgmma.py); returns (a, b as
    stored, c, C's Triton type, A's tcemu type)."""
    from tcemu.frontends.triton import run_compiled   # as matmul_args: the Triton front end only where used
    from tcemu.traces.inputs import input_bits
    meta, ptx = matmul_fixture(name)
    if edit is not None:
        edited = edit(ptx)
        assert edited != ptx, "the planted bug did not apply"
        ptx = edited
    sig = meta["signature"]
    ta = MATMUL_STORE[(sig.get("a_ptr") or sig["a_desc"]).split("<")[-1].lstrip("*").split("[")[0]]
    tc = (sig.get("c_ptr") or sig["c_desc"]).split("<")[-1].lstrip("*").split("[")[0]
    kn = "stride_bk" in sig and sig.get("stride_bn") == "constexpr"
    a = input_bits(ta, (M, K), 7, 0)
    b = input_bits(ta, (K, N) if kn else (N, K), 7, 1)
    c = np.zeros((M, N), np.uint16 if tc == "fp16" else np.uint32)
    vals = matmul_args(meta, a, b, c, M, N, K, kn)
    run_compiled(ptx, meta, vals, **kw)
    return a, (b if kn else b.T.copy()), c, tc, ta


def two_cta_kernel(body: str, stride: int = 4) -> str:
    """A kernel k(data, flag) whose CTAs meet in global memory (tests/ptx/test_global_races.py, test_granular.py):
    CTA c, thread t: %r1 = tid, %r2 = ctaid, %rd1 = data + stride t, %rd2 = &flag, %r3 = t + 1 + 100 c,
    %p1 = (c == 0); then `body`."""
    return ".version 8.3\n.target sm_90\n.address_size 64\n" + f"""
.visible .entry k(.param .u64 data, .param .u64 flag)
{{
 .reg .b32 %r<16>; .reg .b64 %rd<8>; .reg .pred %p<4>;
 ld.param.u64 %rd3, [data]; ld.param.u64 %rd2, [flag];
 cvta.to.global.u64 %rd3, %rd3; cvta.to.global.u64 %rd2, %rd2;
 mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x;
 mul.wide.u32 %rd4, %r1, {stride};
 add.s64 %rd1, %rd3, %rd4;
 mad.lo.u32 %r3, %r2, 100, %r1;
 add.u32 %r3, %r3, 1;
 setp.eq.u32 %p1, %r2, 0;
{body}
 ret;
}}
"""
