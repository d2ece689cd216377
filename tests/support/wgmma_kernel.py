"""The wgmma kernel of tests/ptx/test_wgmma.py and test_wgmma_sp.py: one warpgroup copies an operand image into
shared memory with st.shared, fences the async proxy, builds matrix descriptors in registers, runs a chain of
wgmma.mma_async and stores its accumulator registers (Form: the instruction, its operands and descriptors);
prepare / launch: its operands, expected registers and a launch (test_wgmma.py, test_gang_wgmma.py)."""
from dataclasses import dataclass, field
from typing import List, Optional

import ml_dtypes
import numpy as np

import tcemu
import tcemu.ptx as ptx
from tcemu import GmmaDescriptor
from tcemu.layout.smem import SharedMemory

from ptxkit import HEADER


BASE = 0x400   # the dynamic shared array `dyn` starts here (1024-aligned)


@dataclass
class Form:
    shape: str
    dtype_d: str
    dtype_a: str
    dtype_b: str
    a_descs: List[Optional[GmmaDescriptor]]   # one per instruction; None: A from registers
    b_descs: List[GmmaDescriptor]
    trans_a: int = 0
    trans_b: int = 0
    scale_a: int = 1
    scale_b: int = 1
    satfinite: bool = False
    init_c: bool = False                      # accumulators loaded from memory before the fence (scale-d = 1)
    seed: int = 0
    lo: int = -4                              # operand values: integers in [lo, hi]
    hi: int = 4
    extra: dict = field(default_factory=dict)

    @property
    def n(self):
        return int(self.shape[4:self.shape.index("k")])

    @property
    def k(self):
        return int(self.shape[self.shape.index("k") + 1:])

    @property
    def nregs(self):
        return self.n // 4 if self.dtype_d == "f16" else self.n // 2


def _bits(values, dtype):
    """Raw bit patterns of small integer values in an operand type."""
    v = np.asarray(values)
    if dtype == "bf16":
        return v.astype(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    if dtype == "f16":
        return v.astype(np.float16).view(np.uint16)
    if dtype == "tf32":
        return v.astype(np.float32).view(np.uint32)
    if dtype == "e4m3":
        return v.astype(np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    if dtype == "s8":
        return v.astype(np.int8).view(np.uint8)
    if dtype == "u8":
        return v.astype(np.uint8)
    raise ValueError(dtype)


def _major(trans):
    return "MN" if trans else "K"


def _desc_build(desc: GmmaDescriptor, reg: str, tmp: int) -> str:
    """PTX that builds `desc` in 64-bit register `reg`: the start address from the `dyn` symbol, the other fields
    from constants (the way compiled kernels do it)."""
    const = GmmaDescriptor(0, desc.lbo, desc.sbo, desc.base_offset, desc.swizzle).encode()
    return f"""  mov.u32 %r{tmp}, dyn;
  add.u32 %r{tmp}, %r{tmp}, {desc.start_address - BASE};
  shr.u32 %r{tmp}, %r{tmp}, 4;
  and.b32 %r{tmp}, %r{tmp}, 0x3FFF;
  or.b32 %r{tmp}, %r{tmp}, {const & 0xFFFFFFFF:#x};
  mov.u32 %r{tmp + 1}, {const >> 32:#x};
  mov.b64 {reg}, {{%r{tmp}, %r{tmp + 1}}};
"""


def kernel(form: Form, image_words: int, hooks=None) -> str:
    """PTX of the test kernel; `hooks` inserts text at named places (to plant hazards)."""
    h = {"after_copy": "", "fence_proxy": "  fence.proxy.async.shared::cta;\n", "before_fence": "",
         "after_fence": "", "after_commit": "", "desc": "", "barrier": "  bar.sync 0;\n", **(hooks or {})}
    steps = len(form.b_descs)
    nregs = form.nregs
    dregs = "{" + ", ".join(f"%d{i}" for i in range(nregs)) + "}"
    body = []
    if form.init_c:
        body.append(f"  mul.wide.u32 %rd20, %r0, {4 * nregs};\n  add.s64 %rd20, %rd5, %rd20;\n")
        body += [f"  ld.global.u32 %d{i}, [%rd20+{4 * i}];\n" for i in range(nregs)]
    for s, a in enumerate(form.a_descs):
        if a is None:
            body.append(f"  mul.wide.u32 %rd21, %r0, 16;\n  add.s64 %rd21, %rd4, %rd21;\n"
                        f"  ld.global.v4.u32 {{%a{4 * s}, %a{4 * s + 1}, %a{4 * s + 2}, %a{4 * s + 3}}}, "
                        f"[%rd21+{2048 * s}];\n")
    body.append("  setp.ne.u32 %p2, %r0, %r0;\n  setp.eq.u32 %p3, %r0, %r0;\n")   # false / true for scale-d
    body.append(h["before_fence"])
    body.append("  wgmma.fence.sync.aligned;\n")
    body.append(h["after_fence"])
    dt = f"{form.dtype_d}.{form.dtype_a}.{form.dtype_b}"
    sat = ".satfinite" if form.satfinite else ""
    for s in range(steps):
        a = form.a_descs[s]
        body.append(_desc_build(form.b_descs[s], "%rd11", 30))
        if a is not None:
            body.append(_desc_build(a, "%rd10", 32))
            a_op = "%rd10"
        else:
            a_op = "{" + ", ".join(f"%a{4 * s + i}" for i in range(4)) + "}"
        body.append(h["desc"])
        scale_d = "%p3" if (s > 0 or form.init_c) else "%p2"
        imm = ""
        if form.dtype_d != "s32":
            imm = f", {form.scale_a}, {form.scale_b}"
            if form.dtype_a in ("f16", "bf16"):
                imm += f", {form.trans_b}" if a is None else f", {form.trans_a}, {form.trans_b}"
        body.append(f"  wgmma.mma_async.sync.aligned.{form.shape}{sat}.{dt} {dregs}, {a_op}, %rd11, {scale_d}{imm};\n")
        body.append(h.get(f"after_step{s}", ""))
    body.append("  wgmma.commit_group.sync.aligned;\n")
    body.append(h["after_commit"])
    body.append("  wgmma.wait_group.sync.aligned 0;\n")
    body.append(f"  mul.wide.u32 %rd22, %r0, {4 * nregs};\n  add.s64 %rd22, %rd0, %rd22;\n")
    body += [f"  st.global.u32 [%rd22+{4 * i}], %d{i};\n" for i in range(nregs)]
    return HEADER + f"""
.extern .shared .align 1024 .b8 dyn[];
.visible .entry k(.param .u64 out, .param .u64 image, .param .u64 aregs, .param .u64 cinit)
{{
  .reg .pred %p<8>;
  .reg .b32 %r<40>;
  .reg .b64 %rd<24>;
  .reg .b32 %d<{nregs}>;
  .reg .b32 %a<{4 * len(form.b_descs)}>;
  ld.param.u64 %rd0, [out];
  ld.param.u64 %rd2, [image];
  ld.param.u64 %rd4, [aregs];
  ld.param.u64 %rd5, [cinit];
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, %r0;
  mov.u32 %r2, dyn;
$L_copy:
  setp.ge.u32 %p1, %r1, {image_words};
  @%p1 bra $L_copied;
  mul.wide.u32 %rd6, %r1, 4;
  add.s64 %rd7, %rd2, %rd6;
  ld.global.u32 %r3, [%rd7];
  shl.b32 %r4, %r1, 2;
  add.u32 %r4, %r4, %r2;
  st.shared.u32 [%r4], %r3;
  add.u32 %r1, %r1, 128;
  bra $L_copy;
$L_copied:
{h["after_copy"]}{h["fence_proxy"]}{h["barrier"]}{"".join(body)}  ret;
}}
"""


def D(start, lbo, sbo, swizzle, base_offset=0):
    return GmmaDescriptor(start, lbo, sbo, base_offset, swizzle)


def prepare(form: Form):
    """The operands, the shared-memory image, the register inputs and the expected registers and D."""
    rng = np.random.default_rng(form.seed)
    steps = len(form.b_descs)
    smem = SharedMemory("sm90")
    As, Bs, a_regs = [], [], []
    for s in range(steps):
        A = rng.integers(form.lo, form.hi + 1, (64, form.k))
        B = rng.integers(form.lo, form.hi + 1, (form.n, form.k))
        As.append(A)
        Bs.append(B)
        if form.a_descs[s] is None:
            a_regs.append(tcemu.to_a_registers(_bits(A, form.dtype_a), form.dtype_a))
        else:
            smem.write_operand(form.a_descs[s], _bits(A, form.dtype_a), dtype=form.dtype_a, major=_major(form.trans_a))
        smem.write_operand(form.b_descs[s], _bits(B, form.dtype_b), dtype=form.dtype_b, major=_major(form.trans_b))
    hi = int(np.flatnonzero(smem.written).max()) + 1
    size = (hi - BASE + 15) // 16 * 16
    image = smem.data[BASE:BASE + size].copy()
    c0 = None
    if form.init_c:
        c0 = form.extra.get("c0")
        if c0 is None:
            c0 = rng.integers(-100, 100, (64, form.n))
    # expected: the hardware-verified model, step by step, on the same bytes and descriptors
    out_np = {"f32": np.float32, "f16": np.float16, "s32": np.int32}[form.dtype_d]
    d = None if c0 is None else np.asarray(c0).astype(out_np)
    for s in range(steps):
        d = tcemu.wgmma(smem, None if form.a_descs[s] is None else form.a_descs[s].encode(), form.b_descs[s].encode(),
                        shape=form.shape, dtype_a=form.dtype_a, dtype_b=form.dtype_b, dtype_d=form.dtype_d,
                        trans_a=bool(form.trans_a), trans_b=bool(form.trans_b), c=d, scale_d=d is not None,
                        scale_a=form.scale_a, scale_b=form.scale_b, satfinite=form.satfinite,
                        a_regs=a_regs[s] if form.a_descs[s] is None else None)
    view = np.uint16 if form.dtype_d == "f16" else np.uint32
    regs = tcemu.to_d_registers(np.ascontiguousarray(d).view(view), form.dtype_d)     # (128, nregs)
    # and an exact integer product: every value is a small integer, every partial sum exact
    # (.satfinite clamps each instruction's s32 result, so the chain clamps step by step)
    exact = np.zeros((64, form.n), np.int64) if c0 is None else np.asarray(c0, np.int64)
    for s in range(steps):
        exact = exact + form.scale_a * form.scale_b * As[s].astype(np.int64) @ Bs[s].astype(np.int64).T
        if form.satfinite:
            exact = np.clip(exact, -2**31, 2**31 - 1)
    cregs = None
    if c0 is not None:
        cbits = np.asarray(c0).astype(out_np).view(view)
        cregs = tcemu.to_d_registers(cbits, form.dtype_d)
    return dict(image=image, a_regs=a_regs, d=d, regs=regs, exact=exact, cregs=cregs)


def launch(form: Form, prep=None, hooks=None, block=128, **kw):
    prep = prep or prepare(form)
    image = prep["image"]
    words = image.size // 4
    a_regs = np.concatenate([r.reshape(-1) for r in prep["a_regs"]]).astype(np.uint32) if prep["a_regs"] else \
        np.zeros(4, np.uint32)
    cinit = prep["cregs"].reshape(-1).astype(np.uint32) if prep["cregs"] is not None else np.zeros(4, np.uint32)
    out = np.zeros(block * form.nregs, np.uint32)
    mod = ptx.load(kernel(form, words, hooks))
    mod.launch("k", grid=1, block=block, args=[out, image.view(np.uint32), a_regs, cinit],
               shared_bytes=image.size + kw.pop("extra_shared", 0), **kw)
    return out.reshape(block, form.nregs), prep


# bf16, K-major, 128B swizzle: A 64 x 64 and B 32 x 64 in one swizzle-atom column each; four k16 steps advance the
# start address by 32 bytes inside the atom (as compiled kernels do)
BF16 = Form("m64n32k16", "f32", "bf16", "bf16",
            [D(BASE + 32 * s, 16, 1024, "128B") for s in range(4)],
            [D(BASE + 0x2000 + 32 * s, 16, 1024, "128B") for s in range(4)], seed=1)
# f16 with f16 accumulators: A K-major 64B swizzle (two k16 steps inside the atom), B MN-major 64B swizzle
# (imm-trans-b = 1), 32 columns = one atom row; the second step's B starts two SBOs (16 K rows) further
F16 = Form("m64n32k16", "f16", "f16", "f16",
           [D(BASE + 32 * s, 16, 512, "64B") for s in range(2)],
           [D(BASE + 0x1000 + 1024 * s, 2048, 512, "64B") for s in range(2)], trans_b=1, seed=2, lo=-3, hi=3)
# tf32: 32B swizzle (one k8 step per 32-byte row); each step's tiles sit in their own area
TF32 = Form("m64n16k8", "f32", "tf32", "tf32",
            [D(BASE + 0x800 * s, 16, 256, "32B") for s in range(3)],
            [D(BASE + 0x2000 + 0x200 * s, 16, 256, "32B") for s in range(3)], seed=3, scale_b=-1)
# e4m3 without swizzle (interleaved core matrices): LBO between the two 16-byte K chunks, SBO between 8-row groups
E4M3 = Form("m64n16k32", "f32", "e4m3", "e4m3",
            [D(BASE + 0x800 * s, 128, 256, "none") for s in range(2)],
            [D(BASE + 0x1000 + 0x200 * s, 128, 256, "none") for s in range(2)], seed=4)
# s8 with .satfinite, 128B swizzle, accumulators loaded near the s32 limits before the fence
S8 = Form("m64n16k32", "s32", "s8", "s8",
          [D(BASE + 32 * s, 16, 1024, "128B") for s in range(2)],
          [D(BASE + 0x2000 + 32 * s, 16, 1024, "128B") for s in range(2)], satfinite=True, init_c=True, seed=5,
          lo=-128, hi=127, extra={"c0": np.where(np.arange(64 * 16).reshape(64, 16) % 3 == 0, 2**31 - 20000,
                                                 np.where(np.arange(64 * 16).reshape(64, 16) % 3 == 1,
                                                          -2**31 + 20000, 12345))})
# bf16 with A from registers (loaded before the fence), B MN-major without swizzle (imm-trans-b = 1: 8 N x 8 K
# core matrices, LBO between the two K halves, SBO between 8-column groups), accumulators initialised
AREG = Form("m64n24k16", "f32", "bf16", "bf16", [None, None],
            [D(BASE + 0x400 * s, 128, 256, "none") for s in range(2)], trans_b=1, init_c=True, seed=6)
