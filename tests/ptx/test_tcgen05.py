"""The tcgen05 instruction family of tcemu.ptx (sm_100a), one form at a time, in small hand-written kernels.

MMA kernels: 128 threads copy a shared-memory image (built here with tcemu.SharedMemory.write_operand through the
same descriptors) from global memory with st.shared, fence the async proxy, warp 0 allocates tensor memory, thread
0 issues the MMAs (descriptors and instruction descriptor from parameters), commits to an mbarrier everyone waits on,
and each warp reads its 32 lanes back with tcgen05.ld.32x32b. The expected D is tcemu.tcgen05_mma called on the same
image without the interpreter; the lanes are the PTX data-path layouts (9.7.16.10.5: layout D, M = 128: row r in
lane r; layout F, M = 64: row r in lane 32 (r / 16) + r % 16 (+ 16 for the upper half)), written out here.
ld/st: every shape against a plain-Python statement of CuTe's data paths (tests/ptx/test_cute_tmem_copy.py checks those
against CuTe itself). Hazards and allocation rules: each reported with the instruction and the cells.
"""
import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu import InstrDescriptor, SharedMemory, TensorMemory, tcgen05_mma
from tcemu.ptx.errors import Deadlock, HazardError, KernelFault, MemoryFault, PtxSyntaxError, PtxUnsupportedWarning

from tcgen05_kernel import BAR, BASE, EPILOGUE, HEADER, IMG, PROLOGUE, REGS, SLOT, desc, rand_bits

ZERO = """  // each warp writes zeros into its 32 lanes x {N} columns (cells the MMA leaves alone are read back too)
  shl.b32 %r15, %r1, 21;
  add.u32 %r15, %r15, %r10;
  mov.u32 %r16, 0;
  tcgen05.st.sync.aligned.32x32b.x{N}.b32 [%r15], {{{ZEROS}}};
  tcgen05.wait::st.sync.aligned;
  bar.sync 0;
"""


def kernel(body, n=64, cols=512, group=1, params="", epilogue=True, extra_regs="", zero=0):
    """PTX of one kernel `k`: the prologue, zeros in `zero` columns of every lane (if any), `body` (runs with %r10 =
    tensor-memory base, %r12 = &mbarrier), and the epilogue reading n columns of D at %r10 (each warp its 32 lanes)."""
    pro = PROLOGUE.format(IMG=IMG, STRIDE=128 * 16, SLOT_OFF=SLOT - BASE, BAR_OFF=BAR - BASE, COLS=cols, G=group)
    if zero:
        pro += ZERO.format(N=zero, ZEROS=", ".join(["%r16"] * zero))
    epi = ""
    if epilogue:
        stores = "\n".join(f"  st.global.u32 [%rd4+{4 * j}], %d{j};" for j in range(n))
        epi = EPILOGUE.format(N=n, DREGS=", ".join(f"%d{j}" for j in range(n)), ROWBYTES=4 * n, STORES=stores,
                              COLS=cols, G=group, CTABYTES=4 * n * 128)
    return f"""{HEADER}
.extern .shared .align 1024 .b8 dyn[];
.visible .entry k(.param .u64 out, .param .u64 img{params})
{{
{REGS}{extra_regs}{pro}{body}{epi}
}}
"""


def launch(text, image, n=64, args=(), grid=1, cluster=1, block=128, out_rows=128, **kw):
    mod = ptx.load(text)
    ncta = grid if isinstance(grid, int) else int(np.prod(grid))
    out = np.zeros((ncta, out_rows, n), np.uint32)
    img = np.zeros(IMG, np.uint8)
    img[:image.size] = image
    mod.launch("k", grid=grid, block=block, cluster=cluster, args=[out, img] + list(args),
               shared_bytes=SLOT + 16 - BASE, **kw)
    return out


def image_of(smem):
    return smem.data[BASE:BASE + IMG].copy()


def mma_body(mmas, kind, commit=True, extra=""):
    """Thread 0 issues the MMAs: each (a-desc param or a tensor-memory A, b-desc param, enable-input-d, tail)."""
    lines = [extra, "  @%p2 bra ISSUED;"]
    for i, (a, b, enable, tail) in enumerate(mmas):
        lines.append(f"  ld.param.u64 %rd{10 + 2 * i}, [{b}];")
        a_op = a if a.startswith("[") else f"%rd{11 + 2 * i}"
        if not a.startswith("["):
            lines.append(f"  ld.param.u64 %rd{11 + 2 * i}, [{a}];")
        lines.append(f"  setp.ne.u32 %p{5 + (i % 8)}, {enable}, 0;")
        lines.append(f"  tcgen05.mma.cta_group::1.kind::{kind} [%r10], {a_op}, %rd{10 + 2 * i}, "
                     f"%r30{tail.format(p=5 + i % 8)};")
    if commit:
        lines.append("  tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r12];")
    lines.append("ISSUED:")
    return "\n".join(lines) + "\n"


def u64params(names):
    return "".join(f", .param .u64 {n}" for n in names)


def run_mma(kind, idesc, image, mmas, descs, n, extra_body="", tail=", %p{p}", **kw):
    params = u64params(sorted(descs)) + ", .param .u32 idesc"
    body = "  ld.param.u32 %r30, [idesc];\n" + mma_body([(a, b, e, tail) for a, b, e in mmas], kind, extra=extra_body)
    args = [descs[k] for k in sorted(descs)] + [idesc]
    return launch(kernel(body, n=n, params=params, **kw), image, n=n, args=args)[0]


# ------------------------------------------------------------------------------------------------ MMA forms

@pytest.mark.parametrize("kind,dtype_a,dtype_b,dtype_d,n", [
    ("f16", "bf16", "bf16", "f32", 64), ("f16", "f16", "f16", "f16", 32), ("tf32", "tf32", "tf32", "f32", 32),
    ("f8f6f4", "e4m3", "e2m1", "f32", 64), ("f8f6f4", "e3m2", "e5m2", "f16", 32), ("i8", "s8", "u8", "s32", 32)])
def test_mma_chain_equals_the_instruction_model(kind, dtype_a, dtype_b, dtype_d, n):
    """Two MMAs on one accumulator (the first without C), operands K-major in shared memory."""
    rng = np.random.default_rng(hash((kind, dtype_a, dtype_b)) % 2**32)
    K = {"f16": 16, "tf32": 8}.get(kind, 32)
    bits = {"bf16": 16, "f16": 16, "tf32": 32}.get(dtype_a, 8)   # fp4/fp6 padded to one byte slot in f8f6f4
    smem = SharedMemory("sm100")
    d = {}
    for i in range(2):
        da, db = desc(BASE + 0x2000 * i, 128, K, bits), desc(BASE + 0x4000 + 0x1000 * i, n, K, bits)
        pad = {"padded": True} if kind == "f8f6f4" else {}   # fp4 / fp6 as .b4x16_p64 / .b6x16_p32
        smem.write_operand(da, rand_bits(rng, (128, K), dtype_a), dtype=dtype_a,
                           **(pad if dtype_a in ("e2m1", "e2m3", "e3m2") else {}))
        smem.write_operand(db, rand_bits(rng, (n, K), dtype_b), dtype=dtype_b,
                           **(pad if dtype_b in ("e2m1", "e2m3", "e3m2") else {}))
        d[f"a{i}"], d[f"b{i}"] = da.encode(), db.encode()
    idesc = InstrDescriptor(kind, dtype_a, dtype_b, m=128, n=n, dtype_d=dtype_d, saturate=kind == "i8")
    got = run_mma(kind, idesc.encode(), image_of(smem), [("a0", "b0", 0), ("a1", "b1", 1)], d, n)
    want = None
    for i in range(2):
        want = tcgen05_mma(smem, d[f"a{i}"], d[f"b{i}"], idesc, c=want)
    cells = np.ascontiguousarray(want).view(np.uint16 if dtype_d == "f16" else np.uint32).astype(np.uint32)
    assert np.array_equal(got, cells)   # f16 D sits in the low half of its cell (PTX 9.7.16.10.4.1)


def test_mma_m64_layout_f_and_scale_input_d_and_disabled_lanes():
    """M = 64 at lane base 16 (layout F: row r in lane 16 + 32 (r / 16) + r % 16), a second MMA with scale-input-d 2
    (D = A B + D / 4) and disable-output-lane sparing lanes 16-19 and 48 (they keep the first MMA's D)."""
    rng = np.random.default_rng(7)
    smem = SharedMemory("sm100")
    d = {}
    for i in range(2):
        da, db = desc(BASE + 0x1000 * i, 64, 16, 16), desc(BASE + 0x4000 + 0x1000 * i, 32, 16, 16)
        smem.write_operand(da, rand_bits(rng, (64, 16), "f16"), dtype="f16")
        smem.write_operand(db, rand_bits(rng, (32, 16), "f16"), dtype="f16")
        d[f"a{i}"], d[f"b{i}"] = da.encode(), db.encode()
    idesc = InstrDescriptor("f16", "f16", "f16", m=64, n=32, dtype_d="f32")
    disabled = [(1 << 16) | (1 << 17) | (1 << 18) | (1 << 19), 1 << 16, 0, 0]
    extra = "".join(f"  mov.u32 %r{40 + i}, {w};\n" for i, w in enumerate(disabled))
    extra += "  add.u32 %r10, %r10, 0x100000;\n"   # D at lane 16
    body = ("  ld.param.u32 %r30, [idesc];\n" +
            mma_body([("a0", "b0", 0, ", %p{p}"), ("a1", "b1", 1, ", {{%r40, %r41, %r42, %r43}}, %p{p}, 2")], "f16",
                     extra=extra) + "  sub.u32 %r10, %r10, 0x100000;\n")
    got = launch(kernel(body, n=32, params=u64params(sorted(d)) + ", .param .u32 idesc", zero=32), image_of(smem),
                 n=32, args=[d[k] for k in sorted(d)] + [idesc.encode()])[0]
    first = tcgen05_mma(smem, d["a0"], d["b0"], idesc)
    second = tcgen05_mma(smem, d["a1"], d["b1"], idesc, c=first, scale_input_d=2)
    lane_of = np.array([16 + 32 * (r // 16) + r % 16 for r in range(64)])
    keep = np.isin(lane_of, [16, 17, 18, 19, 48])
    want = np.where(keep[:, None], first, second).view(np.uint32)
    assert np.array_equal(got[lane_of], want)


def test_a_from_tensor_memory_through_tcgen05_cp():
    """tcgen05.cp.128x256b copies A (128 x 16 bf16, K-major rows of 32 bytes) into 8 columns, row r in lane r; the MMA
    reads A from there ([a-tmem]); tcgen05.cp -> tcgen05.mma of one thread is a pipeline (9.7.16.6.2)."""
    rng = np.random.default_rng(3)
    a, b = rand_bits(rng, (128, 16), "bf16"), rand_bits(rng, (64, 16), "bf16")
    smem = SharedMemory("sm100")
    da, db = desc(BASE, 128, 16, 16), desc(BASE + 0x2000, 64, 16, 16)
    smem.write_operand(da, a, dtype="bf16")
    smem.write_operand(db, b, dtype="bf16")
    idesc = InstrDescriptor("f16", "bf16", "bf16", m=128, n=64)
    extra = ("  @%p2 bra CP;\n  ld.param.u64 %rd20, [a0];\n  add.u32 %r31, %r10, 256;\n"
             "  tcgen05.cp.cta_group::1.128x256b [%r31], %rd20;\nCP:\n")
    body = "  ld.param.u32 %r30, [idesc];\n" + mma_body([("[%r31]", "b0", 0, ", %p{p}")], "f16", extra=extra)
    got = launch(kernel(body, n=64, params=u64params(["a0", "b0"]) + ", .param .u32 idesc"), image_of(smem), n=64,
                 args=[da.encode(), db.encode(), idesc.encode()])[0]
    assert np.array_equal(got, tcgen05_mma(smem, da, db, idesc).view(np.uint32))
    tm = TensorMemory()   # the same A laid by the model's own writer: the same D
    tm.write_a(256, a, 16)
    assert np.array_equal(got, tcgen05_mma(smem, None, db, idesc, tmem=tm, a_tmem=256, d_tmem=0,
                                           enable_input_d=False).view(np.uint32))


def _sf_rows(scales, copies):
    """The 32 source rows of tcgen05.cp.32x128b.warpx4 for (rows, nsf) scale bytes: row i, column c (4 bytes) holds
    the factors of matrix row 32 c + i (CuTe's tmem_sf_frg: row r at lane r % 32, column r / 32, byte = factor)."""
    rows, nsf = scales.shape
    out = np.zeros((32, 16), np.uint8)
    for r in range(rows):
        out[r % 32, 4 * (r // 32):4 * (r // 32) + nsf] = scales[r]
    return out


@pytest.mark.parametrize("kind,dtype,block,stype", [("mxf8f6f4", "e4m3", 32, "ue8m0"),
                                                     ("mxf4nvf4", "e2m1", 16, "ue4m3")])
def test_block_scaled_mma_with_scale_factors_copied_by_tcgen05_cp(kind, dtype, block, stype):
    """Scale factors copied from shared memory with tcgen05.cp.32x128b.warpx4 (one 32-row copy per matrix, multicast
    into the four sub-partitions), then the block-scaled MMA reads them at [scale-A-tmem], [scale-B-tmem]."""
    rng = np.random.default_rng(11)
    K = blackwell_k = {"mxf8f6f4": 32, "mxf4nvf4": 64}[kind]
    nsf = blackwell_k // block
    a, b = rand_bits(rng, (128, K), dtype), rand_bits(rng, (128, K), dtype)
    lo, hi = (124, 131) if stype == "ue8m0" else (0x30, 0x40)
    sa, sb = rng.integers(lo, hi, (128, nsf)).astype(np.uint8), rng.integers(lo, hi, (128, nsf)).astype(np.uint8)
    smem = SharedMemory("sm100")
    bits = 8 if dtype == "e4m3" else 4
    da, db = desc(BASE, 128, K, bits), desc(BASE + 0x1000, 128, K, bits)
    smem.write_operand(da, a, dtype=dtype)
    smem.write_operand(db, b, dtype=dtype)
    dsa, dsb = desc(BASE + 0x2000, 32, 16, 8), desc(BASE + 0x2400, 32, 16, 8)
    smem.write_operand(dsa, _sf_rows(sa, 4), dtype="u8")
    smem.write_operand(dsb, _sf_rows(sb, 4), dtype="u8")
    idesc = InstrDescriptor(kind, dtype, dtype, m=128, n=128, scale_type=stype)
    extra = ("  @%p2 bra CP;\n  ld.param.u64 %rd20, [sfa];\n  ld.param.u64 %rd21, [sfb];\n"
             "  add.u32 %r31, %r10, 256;\n  add.u32 %r32, %r10, 260;\n"
             "  tcgen05.cp.cta_group::1.32x128b.warpx4 [%r31], %rd20;\n"
             "  tcgen05.cp.cta_group::1.32x128b.warpx4 [%r32], %rd21;\nCP:\n")
    vec = ".block32" if block == 32 else ".block16"
    body = "  ld.param.u32 %r30, [idesc];\n" + mma_body([("a0", "b0", 0, ", [%r31], [%r32], %p{p}")],
                                                         f"{kind}.block_scale{vec}", extra=extra)
    d = {"a0": da.encode(), "b0": db.encode(), "sfa": dsa.encode(), "sfb": dsb.encode()}
    got = launch(kernel(body, n=128, params=u64params(sorted(d)) + ", .param .u32 idesc"), image_of(smem), n=128,
                 args=[d[k] for k in sorted(d)] + [idesc.encode()])[0]
    want = tcgen05_mma(smem, da, db, idesc, scale_a=sa, scale_b=sb, block_size_k=block)
    assert np.array_equal(got, want.view(np.uint32))


def test_cta_pair_mma_reads_both_ctas_and_writes_both_tensor_memories():
    """cta_group::2, M = 256: CTA rank 0's thread 0 issues it; A's rows 0-127 and B's columns 0-31 come from rank 0's
    shared memory, the rest from rank 1's, through the same descriptors; each CTA's 128 rows land in its own tensor
    memory; the commit multicasts to both CTAs' mbarriers. Allocation is a pair collective (one warp per CTA)."""
    rng = np.random.default_rng(5)
    smems, images = [], []
    da, db = desc(BASE, 128, 16, 16), desc(BASE + 0x2000, 32, 16, 16)
    for _ in range(2):
        s = SharedMemory("sm100")
        s.write_operand(da, rand_bits(rng, (128, 16), "f16"), dtype="f16")
        s.write_operand(db, rand_bits(rng, (32, 16), "f16"), dtype="f16")
        smems.append(s)
    idesc = InstrDescriptor("f16", "f16", "f16", m=256, n=64)
    body = """  ld.param.u32 %r30, [idesc];
  mov.u32 %r33, %cluster_ctarank;
  setp.ne.u32 %p4, %r33, 0;
  barrier.cluster.arrive.aligned;
  barrier.cluster.wait.aligned;
  or.pred %p4, %p4, %p2;
  @%p4 bra ISSUED;
  ld.param.u64 %rd10, [a0];
  ld.param.u64 %rd11, [b0];
  setp.ne.u32 %p5, 0, 0;
  tcgen05.mma.cta_group::2.kind::f16 [%r10], %rd10, %rd11, %r30, %p5;
  mov.u16 %rs0, 3;
  tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%r12], %rs0;
ISSUED:
"""
    mod_text = kernel(body, n=64, group=2, params=u64params(["a0", "b0"]) + ", .param .u32 idesc",
                      extra_regs="  .reg .b16 %rs<4>;\n")
    mod = ptx.load(mod_text)
    out = np.zeros((2, 128, 64), np.uint32)
    # each CTA copies its own image: the image parameter is per launch, so pass both and pick by rank
    img = np.stack([image_of(s) for s in smems])
    text = mod_text.replace("  ld.param.u64 %rd0, [img];\n",
                            "  ld.param.u64 %rd0, [img];\n  mov.u32 %r34, %cluster_ctarank;\n"
                            f"  mul.wide.u32 %rd9, %r34, {IMG};\n  add.s64 %rd0, %rd0, %rd9;\n")
    mod = ptx.load(text)
    mod.launch("k", grid=2, block=128, cluster=2, args=[out, img, da.encode(), db.encode(), idesc.encode()],
               shared_bytes=SLOT + 16 - BASE)
    want = tcgen05_mma([smems[0], smems[1]], da, db, idesc, cta_group=2).view(np.uint32)
    assert np.array_equal(np.concatenate([out[0], out[1]]), want)


# ------------------------------------------------------------------------------------------------ ld / st data paths

def ref_cells(shape, num, split, pack):
    """(lane, column, half) of thread t's register j (half: 0 whole cell / low 16 bits, 1 high 16 bits), written out
    from CuTe's SM100_TMEM_LOAD traits one thread and register at a time (plain Python)."""
    out = {}
    regs = {"16x128b": 2, "16x256b": 4}.get(shape, 1) * num
    for t in range(32):
        for j in range(regs):
            if shape == "32x32b":
                lane, col = t, j
            elif shape == "16x64b":
                lane, col = 8 * (t % 2) + t // 4, (t // 2) % 2 + 2 * j
            elif shape == "16x128b":
                lane, col = t // 4 + 8 * (j % 2), t % 4 + 4 * (j // 2)
            elif shape == "16x256b":
                lane, col = t // 4 + 8 * ((j // 2) % 2), 2 * (t % 4) + j % 2 + 8 * (j // 4)
            else:
                lane, col = t % 16, j
            if pack:
                cells = [(lane, 2 * col + h + (split if shape == "16x32bx2" and t >= 16 else 0), h) for h in (0, 1)]
            else:
                cells = [(lane, col + (split if shape == "16x32bx2" and t >= 16 else 0), -1)]
            out[(t, j)] = cells
    return out, regs


@pytest.mark.parametrize("shape,num,pack", [(s, n, p) for s in ("32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2")
                                            for n, p in ((1, False), (4, False), (2, True))])
def test_st_then_ld_through_every_shape(shape, num, pack):
    """Warp 1 stores distinct words with tcgen05.st (shape, .num, .unpack::16b) at lane 32 + 16 (the 16-lane shapes)
    or 32, column 8, waits, and reads every cell of its sub-partition back with tcgen05.ld.32x32b.x64: each word must
    sit where the data path says; the same shape's tcgen05.ld (.pack::16b) gives the words back."""
    split = 4 * num if shape == "16x32bx2" else 0
    cells, regs = ref_cells(shape, num, split, pack)
    base_lane = 32 + (16 if shape.startswith("16") else 0)
    taddr = (base_lane << 16) | 8
    xs = ", ".join(f"%d{j}" for j in range(regs))
    ys = ", ".join(f"%d{64 + j}" for j in range(regs))
    split_op = f"{split}, " if shape == "16x32bx2" else ""
    ld_split = f", {split}" if shape == "16x32bx2" else ""
    suffix = ".unpack::16b" if pack else ""
    body = f"""  mov.u32 %r40, 0;
  setp.ne.u32 %p6, %r1, 1;
  @%p6 bra DONE;
{''.join(f'  mad.lo.u32 %d{j}, %r2, 1000, {j + 1};' + chr(10) for j in range(regs))}  add.u32 %r41, %r10, {taddr};
  tcgen05.st.sync.aligned.{shape}.x{num}{suffix}.b32 [%r41], {split_op}{{{xs}}};
  tcgen05.wait::st.sync.aligned;
  tcgen05.ld.sync.aligned.{shape}.x{num}{'.pack::16b' if pack else ''}.b32 {{{ys}}}, [%r41]{ld_split};
  tcgen05.wait::ld.sync.aligned;
  ld.param.u64 %rd6, [back];
  cvta.to.global.u64 %rd6, %rd6;
  mul.wide.u32 %rd7, %r2, {4 * regs};
  add.s64 %rd6, %rd6, %rd7;
{''.join(f'  st.global.u32 [%rd6+{4 * j}], %d{64 + j};' + chr(10) for j in range(regs))}  shl.b32 %r42, %r1, 21;
  add.u32 %r42, %r42, %r10;
  tcgen05.ld.sync.aligned.32x32b.x64.b32 {{{', '.join(f'%d{j}' for j in range(64))}}}, [%r42];
  tcgen05.wait::ld.sync.aligned;
  ld.param.u64 %rd4, [out];
  cvta.to.global.u64 %rd4, %rd4;
  mul.wide.u32 %rd5, %r0, 256;
  add.s64 %rd4, %rd4, %rd5;
{''.join(f'  st.global.u32 [%rd4+{4 * j}], %d{j};' + chr(10) for j in range(64))}DONE:
  bar.sync 0;
  @!%p1 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r10, 512;
  ret;
"""
    text = kernel(body, params=", .param .u64 back", epilogue=False, zero=64)
    mod = ptx.load(text)
    out = np.zeros((128, 64), np.uint32)
    back = np.zeros((32, regs), np.uint32)
    mod.launch("k", grid=1, block=128, args=[out, np.zeros(IMG, np.uint8), back], shared_bytes=SLOT + 16 - BASE,
               zero_init_shared=True)
    expect = np.zeros((128, 64), np.uint32)
    written = np.zeros((128, 64), bool)
    for (t, j), where in cells.items():
        word = t * 1000 + j + 1
        for lane, col, half in where:
            lane, col = lane + base_lane, col + 8
            expect[lane, col] = word if half < 0 else (word >> (16 * half)) & 0xFFFF
            written[lane, col] = True
    lanes = slice(32, 64)
    assert np.array_equal(out[lanes][written[lanes]], expect[lanes][written[lanes]])
    words = (np.arange(32)[:, None] * 1000 + np.arange(regs) + 1).astype(np.uint32)
    assert np.array_equal(back, words)


def test_warp_outside_its_sub_partition_faults():
    body = "  tcgen05.ld.sync.aligned.32x32b.x1.b32 {%d0}, [%r10];\n  ret;\n"   # every warp reads lanes 0-31
    # warps one at a time: the first past the barrier is not warp 0 (in lock-step warp 0 goes first, allowed
    # lane 0, and faults on the unwritten cell it reads: the second test below)
    with pytest.raises(MemoryFault) as e:
        launch(kernel(body, epilogue=False), np.zeros(0, np.uint8), lockstep=False)
    w = int(str(e.value).split("warp ")[1][0])   # the first warp the scheduler runs past the barrier
    assert w > 0 and f"warp {w} (tcgen05.ld at 0x00000000) touches tensor-memory lane 0: warp {w} is warp {w} of its " \
        f"warpgroup and may access lanes {32 * w}-{32 * w + 31} only (PTX 9.7.16.8.1)" in str(e.value)
    with pytest.raises(MemoryFault, match="warp 0: thread 0 of warp 0 reads tensor-memory lane 0, column 0, which "
                                          "nothing wrote"):
        launch(kernel(body, epilogue=False), np.zeros(0, np.uint8))


def test_st_packing_pairs_of_columns():
    """.unpack::16b: a register's low half goes to the first cell, its high half to the next (zero-extended)."""
    body = """  setp.ne.u32 %p6, %r1, 0;
  @%p6 bra DONE;
  mov.u32 %d0, 0xBBBBAAAA;
  tcgen05.st.sync.aligned.32x32b.x1.unpack::16b.b32 [%r10], {%d0};
  tcgen05.wait::st.sync.aligned;
  tcgen05.ld.sync.aligned.32x32b.x2.b32 {%d1, %d2}, [%r10];
  tcgen05.wait::ld.sync.aligned;
  ld.param.u64 %rd4, [out];
  cvta.to.global.u64 %rd4, %rd4;
  mul.wide.u32 %rd5, %r0, 256;
  add.s64 %rd4, %rd4, %rd5;
  st.global.u32 [%rd4], %d1;
  st.global.u32 [%rd4+4], %d2;
DONE:
  bar.sync 0;
  @!%p1 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r10, 512;
  ret;
"""
    out = launch(kernel(body, epilogue=False), np.zeros(0, np.uint8))[0]
    assert (out[:32, 0] == 0xAAAA).all() and (out[:32, 1] == 0xBBBB).all()


# ------------------------------------------------------------------------------------------------ allocation

def alloc_kernel(body):
    return f"""{HEADER}
.shared .align 16 .b32 slot[4];
.visible .entry k(.param .u64 out)
{{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, slot;
{body}
  ret;
}}
"""


def run_alloc(body, block=32):
    out = np.zeros(8, np.uint32)
    ptx.load(alloc_kernel(body)).launch("k", grid=1, block=block, args=[out])
    return out


def test_alloc_writes_the_column_to_shared_memory_and_allocations_do_not_overlap():
    body = """  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 128;
  add.u32 %r2, %r1, 4;
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r2], 64;
  ld.shared.u32 %r3, [%r1];
  ld.shared.u32 %r4, [%r1+4];
  ld.param.u64 %rd0, [out];
  st.global.u32 [%rd0], %r3;
  st.global.u32 [%rd0+4], %r4;
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r3, 128;
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r4, 64;"""
    body = body.replace("  ld.param.u64 %rd0, [out];", "  .reg .b64 %rd<2>;\n  ld.param.u64 %rd0, [out];")
    out = run_alloc(body)
    assert out[0] == 0 and out[1] == 128   # lane 0, first free column aligned to the allocation's size


# an immediate column count is checked at load, in ptxas 13.4's words (tests/fixtures/strict immediates probe)
@pytest.mark.parametrize("cols,rule", [(96, "value must be power of 2"), (16, "expected to be multiple of 32"),
                                       (1024, "expected to be in range \\[32..512\\]")])
def test_alloc_column_counts(cols, rule):
    with pytest.raises(PtxSyntaxError, match=rule):
        run_alloc(f"  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], {cols};")


def test_alloc_after_relinquish_and_growing_allocations_are_refused():
    with pytest.raises(KernelFault, match="after it executed tcgen05.relinquish_alloc_permit"):
        run_alloc("  tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n"
                  "  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32;")
    with pytest.raises(KernelFault, match="should not increase"):
        run_alloc("  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32;\n"
                  "  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 64;")


def test_alloc_blocks_until_columns_are_free():
    # warp 0 takes all 512 columns and never frees them; warp 1's allocation waits: a deadlock, named
    body = """  shr.u32 %r5, %r0, 5;
  setp.ne.u32 %p0, %r5, 0;
  @%p0 bra W1;
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 512;
  bra.uni END;
W1:
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 256;
END:"""
    with pytest.raises(Deadlock, match=r"256 free columns \(tcgen05.alloc blocks until a tcgen05.dealloc"):
        run_alloc(body, block=64)


def test_dealloc_must_name_an_allocation_and_exit_needs_dealloc():
    with pytest.raises(KernelFault, match="not an allocation"):
        run_alloc("  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 64;\n"
                  "  tcgen05.dealloc.cta_group::1.sync.aligned.b32 0, 32;")
    with pytest.raises(KernelFault, match="exits with 64 tensor-memory columns from column 0 still allocated"):
        run_alloc("  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 64;")


def test_one_cta_group_per_kernel_and_refused_forms():
    with pytest.raises(PtxSyntaxError, match="must use the same .cta_group"):
        ptx.load(alloc_kernel("  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 64;\n"
                              "  tcgen05.dealloc.cta_group::2.sync.aligned.b32 0, 64;")).program("k")
    # (.sp and .ws were refused here until branch ptxsp modelled them: tests/ptx/test_tcgen05_forms.py)
    for form, what in (("tcgen05.mma.cta_group::1.kind::f16.ashift [%r0], [%r0], %rd0, %r0, %p0;", ".ashift"),
                       ("tcgen05.ld.red.sync.aligned.32x32b.x2.u32.max {%r2, %r3}, %r4, [%r0];", "tcgen05.ld.red")):
        text = alloc_kernel(f"  .reg .b64 %rd<2>;\n  {form}")
        # valid PTX tcemu does not model: listed when the kernel compiles, refused if a thread runs it
        with pytest.warns(PtxUnsupportedWarning):
            mod = ptx.load(text)
            mod.program("k")
        assert any(what in rule for _, _, rule in mod.unsupported("k"))


# ------------------------------------------------------------------------------------------------ hazards

def _simple_mma_image(rng, n=32):
    smem = SharedMemory("sm100")
    da, db = desc(BASE, 128, 16, 16), desc(BASE + 0x2000, n, 16, 16)
    smem.write_operand(da, rand_bits(rng, (128, 16), "f16"), dtype="f16")
    smem.write_operand(db, rand_bits(rng, (n, 16), "f16"), dtype="f16")
    return smem, {"a0": da.encode(), "b0": db.encode()}, InstrDescriptor("f16", "f16", "f16", m=128, n=n)


def test_scale_factors_from_another_threads_cp_need_its_commit():
    """Warp 1 copies the scale factors (tcgen05.cp), thread 0 issues the MMA after a bar.sync only: the copy is
    asynchronous and not tracked by any commit (PTX 9.7.16.6.4.3 wants commit + mbarrier, or fence + sync around
    a pipelined pair of one thread). With warp 1 committing to a second mbarrier that thread 0 waits on, it runs."""
    rng = np.random.default_rng(2)
    smem = SharedMemory("sm100")
    da, db = desc(BASE, 128, 32, 8), desc(BASE + 0x1000, 128, 32, 8)
    smem.write_operand(da, rand_bits(rng, (128, 32), "e4m3"), dtype="e4m3")
    smem.write_operand(db, rand_bits(rng, (128, 32), "e4m3"), dtype="e4m3")
    ds = desc(BASE + 0x2000, 32, 16, 8)
    smem.write_operand(ds, np.full((32, 16), 127, np.uint8), dtype="u8")
    idesc = InstrDescriptor("mxf8f6f4", "e4m3", "e4m3", m=128, n=128)

    def body(wait):
        return f"""  ld.param.u32 %r30, [idesc];
  add.u32 %r31, %r10, 256;
  add.u32 %r35, %r12, 16;
  setp.ne.u32 %p7, %r0, 32;
  @!%p2 mbarrier.init.shared::cta.b64 [%r35], 1;
  bar.sync 0;
  @%p7 bra NOCP;
  ld.param.u64 %rd20, [sf];
  tcgen05.cp.cta_group::1.32x128b.warpx4 [%r31], %rd20;
  {'tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r35];' if wait else ''}
NOCP:
  bar.sync 0;
  @%p2 bra ISSUED;
{'WCP: mbarrier.try_wait.parity.shared::cta.b64 %p8, [%r35], 0;' + chr(10) + '  @!%p8 bra WCP;' if wait else ''}
  ld.param.u64 %rd10, [b0];
  ld.param.u64 %rd11, [a0];
  setp.ne.u32 %p5, 0, 0;
  tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.block32 [%r10], %rd11, %rd10, %r30, [%r31], [%r31], %p5;
  tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r12];
ISSUED:
"""
    d = {"a0": da.encode(), "b0": db.encode(), "sf": ds.encode()}
    args = [d[k] for k in sorted(d)] + [idesc.encode()]
    params = u64params(sorted(d)) + ", .param .u32 idesc"
    with pytest.raises(HazardError) as e:
        launch(kernel(body(False), n=128, params=params), image_of(smem), n=128, args=args)
    msg = str(e.value)
    assert "tcgen05.mma reads its scale factors of A from tensor memory lane 0, column 256" in msg
    assert "written by tcgen05.cp" in msg and "issued by thread 32 (warp 1)" in msg
    assert "no tcgen05.commit tracks it yet" in msg
    got = launch(kernel(body(True), n=128, params=params), image_of(smem), n=128, args=args)[0]
    sf = np.full((128, 1), 127, np.uint8)
    assert np.array_equal(got, tcgen05_mma(smem, da, db, idesc, scale_a=sf, scale_b=sf).view(np.uint32))


def test_stage_overwritten_before_the_commit():
    """A thread rewrites an operand byte after the MMA is issued and before any commit completes it."""
    rng = np.random.default_rng(1)
    smem, d, idesc = _simple_mma_image(rng)
    body = mma_body([("a0", "b0", 0, ", %p{p}")], "f16", commit=False) + """  bar.sync 0;
  @!%p2 st.shared.u32 [dyn], 0;
  @!%p2 tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r12];
"""
    with pytest.raises(HazardError, match=r"writes shared address 0x400, which a tcgen05.mma / tcgen05.cp still reads"):
        launch(kernel("  ld.param.u32 %r30, [idesc];\n" + body, n=32, params=u64params(sorted(d)) +
                      ", .param .u32 idesc"), image_of(smem), n=32, args=[d["a0"], d["b0"], idesc.encode()])


def test_ld_of_cells_a_store_has_not_finished_and_mma_over_a_pending_load():
    body = """  shl.b32 %r13, %r1, 21;
  add.u32 %r13, %r13, %r10;
  tcgen05.st.sync.aligned.32x32b.x1.b32 [%r13], {%r0};
  tcgen05.ld.sync.aligned.32x32b.x1.b32 {%d0}, [%r13];
  ret;
"""
    with pytest.raises(HazardError) as e:
        launch(kernel(body, epilogue=False), np.zeros(0, np.uint8))
    w = int(str(e.value).split("), CTA (0, 0, 0), warp ")[1][0])
    assert f"tcgen05.ld reads tensor memory lane {32 * w}, column 0 while tcgen05.st (line " in str(e.value)
    assert f"of warp {w} on it has not completed (tcgen05.wait::st first)" in str(e.value)
    rng = np.random.default_rng(4)
    smem, d, idesc = _simple_mma_image(rng)
    body = """  shl.b32 %r13, %r1, 21;
  add.u32 %r13, %r13, %r10;
  tcgen05.st.sync.aligned.32x32b.x1.b32 [%r13], {%r0};
  tcgen05.wait::st.sync.aligned;
  setp.eq.u32 %p9, %r1, 1;
  @%p9 tcgen05.ld.sync.aligned.32x32b.x1.b32 {%d0}, [%r13];
  bar.sync 0;
  ld.param.u32 %r30, [idesc];
""" + mma_body([("a0", "b0", 0, ", %p{p}")], "f16")
    with pytest.raises(HazardError, match=r"tcgen05.mma accumulates into tensor memory lane 32, column 0 while "
                                          r"tcgen05.ld \(line \d+\) of warp 1 on it has not completed"):
        launch(kernel(body, n=32, params=u64params(sorted(d)) + ", .param .u32 idesc"), image_of(smem), n=32,
               args=[d["a0"], d["b0"], idesc.encode()])


def test_st_over_a_pending_load_is_lenient_for_the_loading_warp_only():
    # CUTLASS's sm100 FMHA softmax: a warp loads a row, then stores over the cells it loaded, no tcgen05.wait::ld
    own = """  shl.b32 %r13, %r1, 21;
  and.b32 %r13, %r13, 0x600000;
  add.u32 %r13, %r13, %r10;
  tcgen05.st.sync.aligned.32x32b.x1.b32 [%r13], {%r0};
  tcgen05.wait::st.sync.aligned;
  setp.lt.u32 %p9, %r1, 4;
  @%p9 tcgen05.ld.sync.aligned.32x32b.x1.b32 {%d1}, [%r13];
  @%p9 add.u32 %d1, %d1, 1000;
  {other}
  @%p9 tcgen05.st.sync.aligned.32x32b.x1.b32 [%r13], {%d1};
  tcgen05.wait::st.sync.aligned;
  bar.sync 0;
  @!%p2 mbarrier.arrive.shared::cta.b64 %rd30, [%r12];
"""
    # warps 0-3 each load their lanes and store the loaded value + 1000 back: the epilogue reads it
    got = launch(kernel(own.replace("{other}", ""), n=1), np.zeros(0, np.uint8), n=1, block=128)[0]
    assert got[:, 0].tolist() == [t + 1000 for t in range(128)]
    # warps 4-7 share the sub-partitions of warps 0-3: their store over warp w - 4's pending load is reported
    other = """  shl.b32 %r13, %r1, 21;
  and.b32 %r13, %r13, 0x600000;
  add.u32 %r13, %r13, %r10;
  setp.lt.u32 %p9, %r0, 128;
  @%p9 tcgen05.st.sync.aligned.32x32b.x1.b32 [%r13], {%r0};
  tcgen05.wait::st.sync.aligned;
  bar.sync 0;
  @%p9 tcgen05.ld.sync.aligned.32x32b.x1.b32 {%d1}, [%r13];
  bar.sync 0;
  @!%p9 tcgen05.st.sync.aligned.32x32b.x1.b32 [%r13], {%r0};
  tcgen05.wait::st.sync.aligned;
  bar.sync 0;
  and.b32 %r1, %r1, 3;
  @!%p2 mbarrier.arrive.shared::cta.b64 %rd30, [%r12];
"""
    with pytest.raises(HazardError, match=r"tcgen05.st writes tensor memory lane \d+, column 0 while tcgen05.ld "
                                          r"\(line \d+\) of warp \d on it has not completed \(tcgen05.wait::ld first\)"):
        launch(kernel(other, n=1), np.zeros(0, np.uint8), n=1, block=256, out_rows=256)
    # with the race checks off it runs through: the lanes hold what warps 4-7 stored (threads 128-255)
    got = launch(kernel(other, n=1), np.zeros(0, np.uint8), n=1, block=256, out_rows=256, check_races=False)[0]
    assert got[:, 0].tolist() == [t % 128 + 128 for t in range(256)]


def test_mma_of_another_thread_on_one_accumulator_after_the_commit_is_observed():
    """Thread 0 and thread 32 each issue an MMA on one accumulator: unordered unless thread 32 observed the phase of
    thread 0's commit. With the wait in between, D is the chain of the two."""
    rng = np.random.default_rng(8)
    smem, d, idesc = _simple_mma_image(rng)

    def body(wait):
        return f"""  ld.param.u32 %r30, [idesc];
  ld.param.u64 %rd10, [b0];
  ld.param.u64 %rd11, [a0];
  add.u32 %r35, %r12, 16;
  @!%p2 mbarrier.init.shared::cta.b64 [%r35], 1;
  bar.sync 0;
  setp.ne.u32 %p5, 0, 0;
  setp.ne.u32 %p6, 1, 0;
  @%p2 bra T32;
  tcgen05.mma.cta_group::1.kind::f16 [%r10], %rd11, %rd10, %r30, %p5;
  tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r35];
T32:
  setp.ne.u32 %p7, %r0, 32;
  @%p7 bra ISSUED;
{'W2: mbarrier.try_wait.parity.shared::cta.b64 %p8, [%r35], 0;' + chr(10) + '  @!%p8 bra W2;' if wait else ''}
  tcgen05.mma.cta_group::1.kind::f16 [%r10], %rd11, %rd10, %r30, %p6;
  tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r12];
ISSUED:
"""
    params = u64params(sorted(d)) + ", .param .u32 idesc"
    args = [d["a0"], d["b0"], idesc.encode()]
    with pytest.raises(HazardError) as e:
        launch(kernel(body(False), n=32, params=params), image_of(smem), n=32, args=args)
    assert "tcgen05.mma accumulates into tensor memory lane 0, column 0 of CTA rank 0, written by tcgen05.mma" in \
        str(e.value) and "issued by thread 0 (warp 0)" in str(e.value) and "warp 1 has not observed" in str(e.value)
    got = launch(kernel(body(True), n=32, params=params), image_of(smem), n=32, args=args)[0]
    first = tcgen05_mma(smem, d["a0"], d["b0"], idesc)
    assert np.array_equal(got, tcgen05_mma(smem, d["a0"], d["b0"], idesc, c=first).view(np.uint32))


# ------------------------------------------------------------------------------------------------ cp / shift

def _cp_and_read(cp_form, image, ncols, shape_rows=128):
    """Thread 0 copies with `cp_form` at column 8 of lane 0, commits, everyone waits and reads columns 8.. of its
    lanes (ncols of them); out[lane][column - 8]."""
    body = f"""  @%p2 bra ISSUED;
  ld.param.u64 %rd20, [src];
  add.u32 %r31, %r10, 8;
  {cp_form} [%r31], %rd20;
  tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r12];
ISSUED:
"""
    text = kernel(body, n=ncols, params=", .param .u64 src", zero=16)
    text = text.replace("  add.u32 %r13, %r13, %r10;\n", "  add.u32 %r13, %r13, %r10;\n  add.u32 %r13, %r13, 8;\n", 1)
    return text


def test_cp_64x128b_multicast_and_4x256b_rows():
    """.64x128b.warpx2::02_13: source row r (16 bytes) into lanes r and r + 64; .4x256b: row r (32 bytes) into lane
    32 r (CuTe's UTCCP traits; tests/ptx/test_cute_tmem_copy.py)."""
    smem = SharedMemory("sm100")
    d64 = desc(BASE, 64, 16, 8)
    rows64 = np.arange(64 * 16, dtype=np.uint32).reshape(64, 16).astype(np.uint8) ^ 0x5A
    smem.write_operand(d64, rows64, dtype="u8")
    out = launch(_cp_and_read("tcgen05.cp.cta_group::1.64x128b.warpx2::02_13", None, 4), image_of(smem), n=4,
                 args=[d64.encode()])[0]
    words = rows64.view(np.uint32)                       # (64, 4): the row's 16 bytes as 4 cells
    assert np.array_equal(out[:64], words) and np.array_equal(out[64:], words)
    d4 = desc(BASE + 0x1000, 8, 32, 8)                   # 4 rows used of an 8-row core-matrix group
    rows4 = (np.arange(8 * 32).reshape(8, 32) * 7 % 251).astype(np.uint8)
    smem.write_operand(d4, rows4, dtype="u8")
    out = launch(_cp_and_read("tcgen05.cp.cta_group::1.4x256b", None, 8), image_of(smem), n=8,
                 args=[d4.encode()])[0]
    for r in range(4):
        assert np.array_equal(out[32 * r], rows4[r].view(np.uint32))
        assert not out[32 * r + 1:32 * r + 32].any()     # the other lanes keep their zeros


def test_cp_decompresses_fp4_into_byte_containers():
    """.128x128b.b8x16.b4x16_p64: each 16-byte source chunk (16 e2m1 values, first in the low bits, then 8 padding
    bytes, PTX 9.7.16.9.1.1) becomes 16 bytes, value i in byte i at bits 2-5 (tcemu's container reading, as for
    tcgen05.mma's A in tensor memory; not silicon-verified)."""
    rng = np.random.default_rng(9)
    vals = rng.integers(0, 16, (128, 16)).astype(np.uint8)
    src = np.zeros((128, 16), np.uint8)
    src[:, :8] = vals[:, 0::2] | vals[:, 1::2] << 4
    smem = SharedMemory("sm100")
    d = desc(BASE, 128, 16, 8)
    smem.write_operand(d, src, dtype="u8")
    out = launch(_cp_and_read("tcgen05.cp.cta_group::1.128x128b.b8x16.b4x16_p64", None, 4), image_of(smem), n=4,
                 args=[d.encode()])[0]
    assert np.array_equal(out.view(np.uint8).reshape(128, 16), (vals << 2).astype(np.uint8))


def test_shift_moves_rows_down_one_lane():
    """tcgen05.shift.down (PTX 9.7.16.9.3: 32-byte elements move down one row, all rows but the last): our reading,
    lanes L..L+30 of 8 columns go to L+1..L+31, lane L keeps its value."""
    body = """  shl.b32 %r13, %r1, 21;
  add.u32 %r13, %r13, %r10;
{MOVS}  tcgen05.st.sync.aligned.32x32b.x8.b32 [%r13], {%d0, %d1, %d2, %d3, %d4, %d5, %d6, %d7};
  tcgen05.wait::st.sync.aligned;
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
  tcgen05.fence::after_thread_sync;
  @%p2 bra ISSUED;
  tcgen05.shift.cta_group::1.down [%r10];
  tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r12];
ISSUED:
""".replace("{MOVS}", "".join(f"  mad.lo.u32 %d{j}, %r0, 16, {j};\n" for j in range(8)))
    out = launch(kernel(body, n=8), np.zeros(0, np.uint8), n=8)[0]
    before = np.arange(128)[:, None] * 16 + np.arange(8)
    want = before.copy()
    want[1:32] = before[0:31]
    assert np.array_equal(out, want)


# ------------------------------------------------------------------------------------------------ sm100 TMA modes

def _tma_kernel(target):
    return f"""{HEADER.replace('sm_100a', target)}
.extern .shared .align 1024 .b8 dyn[];
.visible .entry k(.param .u64 out, .param .align 64 .b8 tmap[128])
{{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, dyn;
  add.u32 %r2, %r1, 8192;
  setp.ne.u32 %p0, %r0, 0;
  @!%p0 mbarrier.init.shared::cta.b64 [%r2], 1;
  bar.sync 0;
  mov.u32 %r3, 64;
  mov.u32 %r4, 0;
  @!%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 4096;
  @!%p0 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [tmap, {{%r3, %r4}}], [%r2];
W:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], 0;
  @!%p1 bra W;
  // copy the 4 KiB stage out: thread t copies bytes 16 t .. 16 t + 15, 256 threads
  shl.b32 %r5, %r0, 4;
  add.u32 %r6, %r1, %r5;
  ld.shared.v4.u32 {{%r7, %r8, %r9, %r10}}, [%r6];
  ld.param.u64 %rd0, [out];
  cvta.to.global.u64 %rd0, %rd0;
  cvt.u64.u32 %rd1, %r5;
  add.s64 %rd0, %rd0, %rd1;
  st.global.v4.u32 [%rd0], {{%r7, %r8, %r9, %r10}};
  ret;
}}
"""


@pytest.mark.parametrize("swizzle", ["128B_ATOM_32B", "128B_ATOM_32B_FLIP_8B", "128B_ATOM_64B", "128B"])
def test_tma_with_sm100_swizzle_modes(swizzle):
    """A TMA tile load through a tensor map with a Blackwell swizzle mode (tensormap's swizzle_atomicity) puts every
    byte where tcemu.tma_load on sm100 shared memory puts it; an sm_90a kernel refuses the mode."""
    from tcemu import tma_load
    from tcemu.ptx.tensormap import encode_tiled
    tensor = (np.arange(64 * 256, dtype=np.uint32) * 2654435761 % 65521).astype(np.uint16).reshape(64, 256)
    tm = encode_tiled(tensor, [64, 32], swizzle=swizzle)          # 32 rows of 128 bytes from column 64
    out = np.zeros(4096, np.uint8)
    ptx.load(_tma_kernel("sm_100a")).launch("k", grid=1, block=256, args=[out, tm], shared_bytes=8192 + 16)
    smem = SharedMemory("sm100")
    tma_load(smem, BASE, tensor, box=[64, 32], coords=[64, 0], swizzle=swizzle)
    assert np.array_equal(out, smem.data[BASE:BASE + 4096])
    if swizzle != "128B":
        plain = SharedMemory("sm100")   # the mode matters: the plain 128B swizzle puts the bytes elsewhere
        tma_load(plain, BASE, tensor, box=[64, 32], coords=[64, 0], swizzle="128B")
        assert not np.array_equal(out, plain.data[BASE:BASE + 4096])
        with pytest.raises(KernelFault, match="TMA"):
            ptx.load(_tma_kernel("sm_90a")).launch("k", grid=1, block=256, args=[out, tm],
                                                   shared_bytes=8192 + 16)
