"""tcgen05.mma.sp, tcgen05.mma.ws (zero-column mask, collector buffers), .collector::a and sm_103a's K = 96 through
tcemu.ptx, in small hand-written kernels (the harness of test_ptx_tcgen05.py: 128 threads copy a shared-memory image,
fence the async proxy, warp 0 allocates 512 columns; thread 0 issues, commits, everyone waits and reads its 32 lanes).

Tensor-memory inputs (sparse metadata, scale factors, A) are laid by the instruction model's own writers
(TensorMemory.write_sparse_meta / write_scales / write_a) into a reference TensorMemory; the kernel stores those exact
cells with tcgen05.st.32x32b (each warp its lanes), waits (tcgen05.wait::st) and syncs before the MMA. Expected D:
tcemu.tcgen05_mma called directly on the same shared-memory image and that reference tensor memory, placed into lanes
by the data-path layouts written out here (M = 128: row r in lane r; .ws M = 64: N's halves in lanes 0-63 / 64-127;
.ws M = 32: its quarters in the four sub-partitions; CuTe's tmem_frg_ws). The operand grammar of every line was
checked with ptxas 13.0 (`ptxas -arch=sm_100a` / `sm_103a`), see test_grammar_matches_ptxas.

Planted bugs: each hazard the new forms add is reported at its instruction (metadata not yet stored / copied /
overwritten under the MMA, .ws D read before the commit is observed in a lane block only the .ws layout uses, K = 96
scale factors in their run-on column, a collector buffer's source changed or discarded before a use).
None of it is silicon-verified.
"""
import shutil
import subprocess
import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu import InstrDescriptor, SharedMemory, TensorMemory, UmmaDescriptor, tcgen05_mma
from tcemu.blackwell.sparse import VALID_NIBBLES
from tcemu.blackwell.collector import CollectorBuffers
from tcemu.blackwell.instr import ZeroColumnMask
from tcemu.ptx.errors import HazardError, KernelFault, PtxSyntaxError, PtxUnsupported, PtxUnsupportedWarning

from tcgen05_kernel import BASE, EPILOGUE, PROLOGUE, REGS, desc, rand_bits

from paths import PTX_FIXTURES

IMG = 0x8000
META, SFA, SFB, ACOL = 256, 288, 320, 384     # tensor-memory columns of the inputs (D at column 0)
CHUNK = {"tf32": 2, "f16": 4, "f8f6f4": 4, "i8": 4, "mxf8f6f4": 4, "mxf4": 8, "mxf4nvf4": 8}


def build(body, *, n, img=IMG, group=1, params="", target="sm_100a", extra_regs="", epilogue=True):
    """One kernel `k(out, img, pre{params})`: the prologue of test_ptx_tcgen05 for an image of `img` bytes, `body`
    (%r10 = tensor-memory base, %r12 = &mbarrier, %p2 = tid != 0) and the epilogue reading n columns of D."""
    bar = BASE + img
    pro = PROLOGUE.format(IMG=img, STRIDE=128 * 16, SLOT_OFF=bar + 8 - BASE, BAR_OFF=bar - BASE, COLS=512, G=group)
    epi = ""
    if epilogue:
        stores = "\n".join(f"  st.global.u32 [%rd4+{4 * j}], %d{j};" for j in range(n))
        epi = EPILOGUE.format(N=n, DREGS=", ".join(f"%d{j}" for j in range(n)), ROWBYTES=4 * n, STORES=stores,
                              COLS=512, G=group, CTABYTES=4 * n * 128)
    return f""".version 8.8
.target {target}
.address_size 64

.extern .shared .align 1024 .b8 dyn[];
.visible .entry k(.param .u64 out, .param .u64 img, .param .u64 pre{params})
{{
{REGS}{extra_regs}{pro}{body}{epi}
}}
"""


def preload(cols):
    """Every warp stores its 32 lanes of the tensor-memory columns `cols` ((start, count) pairs, count a power of two)
    from pre[rank][thread][...], waits for the stores and syncs: the tcgen05.st .. wait::st .. fence/bar.sync order
    of PTX 9.7.16.6.4."""
    out, off = [], 0
    for start, cnt in cols:
        regs = ", ".join(f"%d{j}" for j in range(cnt))
        loads = "".join(f"  ld.global.u32 %d{j}, [%rd26+{4 * (off + j)}];\n" for j in range(cnt))
        out.append(f"{loads}  add.u32 %r17, %r15, {start};\n"
                   f"  tcgen05.st.sync.aligned.32x32b.x{cnt}.b32 [%r17], {{{regs}}};\n")
        off += cnt
    return f"""  ld.param.u64 %rd26, [pre];
  cvta.to.global.u64 %rd26, %rd26;
  mov.u32 %r18, %cluster_ctarank;
  mad.lo.u32 %r18, %r18, 128, %r0;
  mul.wide.u32 %rd27, %r18, {4 * off};
  add.s64 %rd26, %rd26, %rd27;
  shl.b32 %r15, %r1, 21;
  add.u32 %r15, %r15, %r10;
{''.join(out)}  tcgen05.wait::st.sync.aligned;
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
  tcgen05.fence::after_thread_sync;
"""


def pre_words(tms, cols):
    """The words preload() stores: (CTAs, 128, columns) from reference tensor memories."""
    return np.stack([np.concatenate([t.cells[:, s:s + c] for s, c in cols], axis=1) for t in tms])


def issue(lines, group=1):
    """Thread 0 loads idesc and the u64 parameters named in `lines` (as {name}) and issues them, then commits."""
    import re
    names = sorted(set(re.findall(r"\{(\w+)\}", "".join(lines))))
    regs = {nm: f"%rd{10 + i}" for i, nm in enumerate(names)}
    loads = "".join(f"  ld.param.u64 {regs[nm]}, [{nm}];\n" for nm in names)
    body = "".join("  " + ln.format(**regs) + "\n" for ln in lines)
    return f"""  @%p2 bra ISSUED;
  ld.param.u32 %r30, [idesc];
{loads}  add.u32 %r31, %r10, {META};
  add.u32 %r32, %r10, {SFA};
  add.u32 %r33, %r10, {SFB};
  add.u32 %r34, %r10, {ACOL};
  setp.ne.u32 %p5, 0, 0;
  setp.ne.u32 %p6, 1, 0;
{body}  tcgen05.commit.cta_group::{group}.mbarrier::arrive::one.shared::cluster.b64 [%r12];
ISSUED:
""", names


def params_of(names):
    return "".join(f", .param .u64 {nm}" for nm in names) + ", .param .u32 idesc"


def run(text, smems, pre, n, args, img=IMG, cluster=1):
    mod = ptx.load(text)
    ncta = len(smems)
    out = np.zeros((ncta, 128, n), np.uint32)
    image = np.zeros((ncta, img), np.uint8)
    for i, s in enumerate(smems):
        image[i] = s.data[BASE:BASE + img]
    if ncta > 1:   # each CTA copies its own image: offset the image pointer by rank
        text = text.replace("  ld.param.u64 %rd0, [img];\n", "  ld.param.u64 %rd0, [img];\n  mov.u32 %r35, "
                            f"%cluster_ctarank;\n  mul.wide.u32 %rd9, %r35, {img};\n  add.s64 %rd0, %rd0, %rd9;\n")
        mod = ptx.load(text)
    mod.launch("k", grid=ncta, block=128, cluster=cluster, args=[out, image, pre] + list(args),
               shared_bytes=img + 24)
    return out


def nibbles(rng, kind, rows, k):
    valid = VALID_NIBBLES[CHUNK[kind]]
    return rng.choice(valid, (rows, k // CHUNK[kind])).astype(np.uint8)


def scales(rng, stype, shape):
    lo, hi = (124, 131) if stype == "ue8m0" else (0x30, 0x40)
    return rng.integers(lo, hi, shape).astype(np.uint8)


BITS = {"tf32": 32, "f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "e3m2": 8, "e2m3": 8}


def bits_of(kind, dtype):
    return 4 if kind in ("mxf4", "mxf4nvf4") else BITS.get(dtype, 8)   # f8f6f4 fp4 / fp6: padded byte slots


# ------------------------------------------------------------------------------------------------ tcgen05.mma.sp

SPARSE = [  # kind, A, B, D, qualifiers, selector
    ("tf32", "tf32", "tf32", "f32", "", 1),
    ("f16", "f16", "f16", "f32", "", 0),
    ("f16", "bf16", "bf16", "f32", "", 3),
    ("f16", "f16", "f16", "f16", "", 2),
    ("f8f6f4", "e4m3", "e2m1", "f32", "", 0),
    ("i8", "s8", "u8", "s32", "", 0),
    ("mxf8f6f4", "e5m2", "e3m2", "f32", ".block_scale.scale_vec::1X", 0),
    ("mxf4", "e2m1", "e2m1", "f32", ".block_scale.block32", 0),
    ("mxf4nvf4", "e2m1", "e2m1", "f32", ".block_scale.block16", 0),
]


@pytest.mark.parametrize("kind,fa,fb,fd,quals,sel", SPARSE, ids=[f"{s[0]}-{s[1]}-{s[3]}-sel{s[5]}" for s in SPARSE])
def test_sparse_mma_equals_the_instruction_model(kind, fa, fb, fd, quals, sel):
    """tcgen05.mma.sp, M = 128: stored A (K/2 a row) and B (K) in shared memory, the metadata at [sp-meta-tmem] in
    tensor memory (the selector of the instruction descriptor picks its sub-column for tf32 / f16), block scales at
    [scale-A/B-tmem]; two MMAs on one accumulator, the second with C."""
    rng = np.random.default_rng(zlib.crc32(f"{kind} {fa} {fd} {sel}".encode()))   # not hash(): salted
    M, N = 128, 32
    scaled = bool(quals)
    stype = "ue4m3" if ".block16" in quals else "ue8m0"
    d = InstrDescriptor(kind, fa, fb, m=M, n=N, sparse=True, sparsity_selector=sel,
                        **({} if scaled else {"dtype_d": fd, "saturate": kind == "i8"}), **(
                            {"scale_type": stype} if scaled else {}))
    K = {"tf32": 16, "f16": 32, "f8f6f4": 64, "i8": 64, "mxf8f6f4": 64, "mxf4": 128, "mxf4nvf4": 128}[kind]
    smem = SharedMemory("sm100")
    tm = TensorMemory()
    descs, sf = {}, {}
    pad = {"padded": True} if kind == "f8f6f4" and fb == "e2m1" else {}
    ba, bb = bits_of(kind, fa), bits_of(kind, fb)
    for i in range(2):
        da = desc(BASE + 0x1000 * i, M, K // 2, ba)
        db = desc(BASE + 0x2000 + 0x1000 * i, N, K, bb)
        smem.write_operand(da, rand_bits(rng, (M, K // 2), fa), dtype=fa)
        smem.write_operand(db, rand_bits(rng, (N, K), fb), dtype=fb, **pad)
        descs[f"a{i}"], descs[f"b{i}"] = da.encode(), db.encode()
    nib = nibbles(rng, kind, M, K)
    tm.write_sparse_meta(META, nib, kind, selector=sel)
    cols = [(META, 4)]
    tail = ""
    if scaled:
        nsf = {"mxf8f6f4": 1, "mxf4": 2, "mxf4nvf4": 4}[kind]
        sf = {"scale_a": scales(rng, stype, (M, nsf)), "scale_b": scales(rng, stype, (N, nsf))}
        tm.write_scales(SFA, sf["scale_a"])
        tm.write_scales(SFB, sf["scale_b"])
        cols += [(SFA, 4), (SFB, 1)]   # row r at column r // 32
        tail = ", [%r32], [%r33]"
    lines = [f"tcgen05.mma.sp.cta_group::1.kind::{kind}{quals} [%r10], {{a0}}, {{b0}}, [%r31], %r30{tail}, %p5;",
             f"tcgen05.mma.sp.cta_group::1.kind::{kind}{quals} [%r10], {{a1}}, {{b1}}, [%r31], %r30{tail}, %p6;"]
    body, names = issue(lines)
    text = build(preload(cols) + body, n=N, params=params_of(names))
    got = run(text, [smem], pre_words([tm], cols), N, [descs[k] for k in names] + [d.encode()])[0]
    kw = dict(tmem=tm, sparse_meta=META, **({"scale_a": SFA, "scale_b": SFB} if scaled else {}))
    want = tcgen05_mma(smem, descs["a0"], descs["b0"], d, **kw)
    want = tcgen05_mma(smem, descs["a1"], descs["b1"], d, c=want, **kw)
    cells = np.ascontiguousarray(want).view(np.uint16 if fd == "f16" else np.uint32).astype(np.uint32)
    assert np.array_equal(got, cells)
    # the metadata is what made D: the same MMA under other (valid) metadata differs
    other = tm.read_sparse_meta(META, kind, M, selector=sel)
    other[:, 0] = np.where(other[:, 0] == VALID_NIBBLES[CHUNK[kind]][0], VALID_NIBBLES[CHUNK[kind]][1],
                           VALID_NIBBLES[CHUNK[kind]][0])
    tm2 = TensorMemory()
    tm2.cells[:], tm2.written[:] = tm.cells, tm.written
    tm2.write_sparse_meta(META, other, kind, selector=sel)
    assert not np.array_equal(tcgen05_mma(smem, descs["a0"], descs["b0"], d, **dict(kw, tmem=tm2)),
                              tcgen05_mma(smem, descs["a0"], descs["b0"], d, **kw))


def test_sparse_mma_with_a_in_tensor_memory_and_disabled_lanes():
    """tcgen05.mma.sp [d], [a-tmem], b-desc, [sp-meta], idesc, {lane mask}, enable, scale-input-d: A's K/2 stored
    f16 elements a row in tensor memory (write_a's packing), lanes 5 and 70 keep the first MMA's D."""
    rng = np.random.default_rng(21)
    M, N, K = 128, 32, 32
    d = InstrDescriptor("f16", "f16", "f16", m=M, n=N, sparse=True, sparsity_selector=1)
    smem = SharedMemory("sm100")
    db = desc(BASE, N, K, 16)
    smem.write_operand(db, rand_bits(rng, (N, K), "f16"), dtype="f16")
    tm = TensorMemory()
    a = rand_bits(rng, (M, K // 2), "f16")
    tm.write_a(ACOL, a, 16)
    tm.write_sparse_meta(META, nibbles(rng, "f16", M, K), "f16", selector=1)
    cols = [(META, 2), (ACOL, 8)]
    masks = [1 << 5, 0, 1 << 6, 0]
    lines = [f"mov.u32 %r{40 + i}, {w};" for i, w in enumerate(masks)]
    lines += ["tcgen05.mma.sp.cta_group::1.kind::f16 [%r10], [%r34], {b0}, [%r31], %r30, %p5;",
              "tcgen05.mma.sp.cta_group::1.kind::f16 [%r10], [%r34], {b0}, [%r31], %r30, {{%r40, %r41, %r42, %r43}}, "
              "%p6, 3;"]
    body, names = issue(lines)
    got = run(build(preload(cols) + body, n=N, params=params_of(names)), [smem], pre_words([tm], cols), N,
              [db.encode(), d.encode()])[0]
    kw = dict(tmem=tm, sparse_meta=META, a_tmem=ACOL)
    first = tcgen05_mma(smem, None, db, d, **kw)
    second = tcgen05_mma(smem, None, db, d, c=first, scale_input_d=3, **kw)
    keep = np.isin(np.arange(M), [5, 70])
    assert np.array_equal(got, np.where(keep[:, None], first, second).view(np.uint32))


def test_sparse_cta_pair_reads_both_ctas_metadata():
    """tcgen05.mma.sp.cta_group::2, M = 256: each CTA's stored A rows, B columns and metadata (its own tensor memory,
    same address) make its 128 rows of D."""
    rng = np.random.default_rng(5)
    M, N, K = 256, 64, 32
    smems, tms = [], []
    da, db = desc(BASE, 128, K // 2, 16), desc(BASE + 0x2000, N // 2, K, 16)
    for _ in range(2):
        s = SharedMemory("sm100")
        s.write_operand(da, rand_bits(rng, (128, K // 2), "bf16"), dtype="bf16")
        s.write_operand(db, rand_bits(rng, (N // 2, K), "bf16"), dtype="bf16")
        t = TensorMemory()
        t.write_sparse_meta(META, nibbles(rng, "f16", 128, K), "f16")
        smems.append(s)
        tms.append(t)
    d = InstrDescriptor("f16", "bf16", "bf16", m=M, n=N, sparse=True)
    cols = [(META, 1)]
    body = preload(cols) + f"""  ld.param.u32 %r30, [idesc];
  mov.u32 %r33, %cluster_ctarank;
  setp.ne.u32 %p4, %r33, 0;
  barrier.cluster.arrive.aligned;
  barrier.cluster.wait.aligned;
  or.pred %p4, %p4, %p2;
  @%p4 bra ISSUED;
  ld.param.u64 %rd10, [a0];
  ld.param.u64 %rd11, [b0];
  add.u32 %r31, %r10, {META};
  setp.ne.u32 %p5, 0, 0;
  tcgen05.mma.sp.cta_group::2.kind::f16 [%r10], %rd10, %rd11, [%r31], %r30, %p5;
  mov.u16 %rs0, 3;
  tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%r12], %rs0;
ISSUED:
"""
    text = build(body, n=N, group=2, params=params_of(["a0", "b0"]), extra_regs="  .reg .b16 %rs<4>;\n")
    out = run(text, smems, pre_words(tms, cols), N, [da.encode(), db.encode(), d.encode()], cluster=2)
    want = tcgen05_mma(smems, da, db, d, cta_group=2, tmem=tms, sparse_meta=META)
    assert np.array_equal(np.concatenate([out[0], out[1]]), want.view(np.uint32))


# ------------------------------------------------------------------------------------------------ tcgen05.mma.ws

def ws_lanes(M, N):
    """(lane, column) of D's (r, n) for .ws (PTX 9.7.16.10.5 layouts D / E / G, CuTe's tmem_frg_ws): the N columns
    split into 128 / M parts, part p in lanes [p M, (p + 1) M)."""
    parts = 128 // M
    r, n = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    return r + M * (n // (N // parts)), n % (N // parts)


@pytest.mark.parametrize("kind,fa,fb,fd,M,N,sp", [
    ("f16", "bf16", "bf16", "f32", 128, 64, False), ("tf32", "tf32", "tf32", "f32", 64, 64, False),
    ("f8f6f4", "e4m3", "e5m2", "f16", 32, 128, False), ("i8", "u8", "s8", "s32", 64, 128, False),
    ("f16", "f16", "f16", "f32", 64, 64, True), ("f8f6f4", "e2m3", "e4m3", "f32", 32, 64, True)])
def test_ws_mma_equals_the_instruction_model(kind, fa, fb, fd, M, N, sp):
    """tcgen05.mma.ws (and .ws.sp) with M = 128 / 64 / 32: D in layouts D / E / G; sparse metadata copied into every
    block of M lanes (CuTe's tmem_e_frg_ws); no lane mask, no scale-input-d."""
    rng = np.random.default_rng(M * N + sp)
    K = {"tf32": 8, "f16": 16, "f8f6f4": 32, "i8": 32}[kind] * (2 if sp else 1)
    KA = K // 2 if sp else K
    smem = SharedMemory("sm100")
    pad = {"padded": True} if fa in ("e2m3",) else {}
    da, db = desc(BASE, M, KA, bits_of(kind, fa)), desc(BASE + 0x2000, N, K, bits_of(kind, fb))
    smem.write_operand(da, rand_bits(rng, (M, KA), fa), dtype=fa, **pad)
    smem.write_operand(db, rand_bits(rng, (N, K), fb), dtype=fb)
    d = InstrDescriptor(kind, fa, fb, m=M, n=N, dtype_d=fd, sparse=sp, saturate=kind == "i8")
    tm = TensorMemory()
    cols = [(META, 2)]
    if sp:
        tm.write_sparse_meta(META, nibbles(rng, kind, M, K), kind, ws=True)
    form = "ws.sp" if sp else "ws"
    meta = " [%r31]," if sp else ""
    lines = [f"tcgen05.mma.{form}.cta_group::1.kind::{kind} [%r10], {{a0}}, {{b0}},{meta} %r30, %p5;",
             f"tcgen05.mma.{form}.cta_group::1.kind::{kind} [%r10], {{a0}}, {{b0}},{meta} %r30, %p6;"]
    body, names = issue(lines)
    ncols = N * M // 128
    got = run(build(preload(cols) + body, n=ncols, params=params_of(names)), [smem], pre_words([tm], cols), ncols,
              [da.encode(), db.encode(), d.encode()])[0]
    kw = dict(ws=True, **({"tmem": tm, "sparse_meta": META} if sp else {}))
    first = tcgen05_mma(smem, da, db, d, **kw)
    want = np.ascontiguousarray(tcgen05_mma(smem, da, db, d, c=first, **kw))
    cells = want.view(np.uint16 if fd == "f16" else np.uint32).astype(np.uint32)
    lane, col = ws_lanes(M, N)
    assert np.array_equal(got[lane, col], cells)


def test_ws_zero_column_mask_and_max_shift():
    """.ws with a zero-column mask descriptor (PTX Table 45): column n of the product reads B's column n + 3, every
    third and fourth column of B read as zeros; the max-shift field (bits 30-31) allows 8 columns. B's masked rows and
    the 3 before the shift hold +inf: never read, they do not reach D."""
    rng = np.random.default_rng(3)
    M, N, K = 128, 64, 16
    zcm = ZeroColumnMask(non_zero_mask=True, skip_span=1, use_span=1, shift=3)
    mask = zcm.mask(M, N)
    assert mask.tolist()[:8] == [False, False, True, True] * 2   # use span 2 then skip span 2 (Table 45's examples)
    smem = SharedMemory("sm100")
    da, db = desc(BASE, M, K, 16), desc(BASE + 0x2000, 72, K, 16)
    smem.write_operand(da, rand_bits(rng, (M, K), "f16"), dtype="f16")
    b = rand_bits(rng, (72, K), "f16")
    unread = np.ones(72, bool)
    unread[3:3 + N] = mask
    b[unread] = 0x7C00
    smem.write_operand(db, b, dtype="f16")
    d = InstrDescriptor("f16", "f16", "f16", m=M, n=N, max_shift=1)
    lines = ["tcgen05.mma.ws.cta_group::1.kind::f16 [%r10], {a0}, {b0}, %r30, %p5, {zcm};"]
    body, names = issue(lines)
    text = build(body, n=N, params=params_of(names))
    nothing = np.zeros((1, 128, 0), np.uint32)
    got = run(text, [smem], nothing, N, [da.encode(), db.encode(), zcm.encode(), d.encode()])[0]
    want = tcgen05_mma(smem, da, db, d, ws=True, zero_column_mask=zcm.encode())
    assert np.array_equal(got, want.view(np.uint32))
    # independently: the masked product equals the dense one on B's shifted columns with the masked ones zeroed
    b2 = b[3:3 + N].copy()
    b2[mask] = 0
    smem2 = SharedMemory("sm100")
    smem2.write_operand(da, smem.read_operand(da, rows=M, k=K, dtype="f16"), dtype="f16")
    smem2.write_operand(replace(db, start_address=BASE + 0x4000), b2, dtype="f16")
    plain = tcgen05_mma(smem2, da, replace(db, start_address=BASE + 0x4000), replace(d, max_shift=0), ws=True)
    assert np.array_equal(got, plain.view(np.uint32))
    # a shift past the descriptor's max shift is refused at the instruction
    with pytest.raises(KernelFault, match="max_shift"):
        run(text, [smem], nothing, N, [da.encode(), db.encode(), replace(zcm, shift=9).encode(), d.encode()])


# ------------------------------------------------------------------------------------------------ collector buffers

def _collector_case(ws):
    """Three MMAs on one accumulator reusing one operand through a collector buffer: .ws keeps B (A0, A1, A2 with
    one B), the activation-stationary form keeps A (B0, B1, B2 with one A)."""
    rng = np.random.default_rng(40 + ws)
    M, N, K = 128, 64, 16
    smem = SharedMemory("sm100")
    d = {}
    for i in range(3):
        d[f"a{i}"] = desc(BASE + 0x1000 * i, M, K, 16)
        d[f"b{i}"] = desc(BASE + 0x4000 + 0x800 * i, N, K, 16)
        smem.write_operand(d[f"a{i}"], rand_bits(rng, (M, K), "f16"), dtype="f16")
        smem.write_operand(d[f"b{i}"], rand_bits(rng, (N, K), "f16"), dtype="f16")
    return smem, {k: v.encode() for k, v in d.items()}, InstrDescriptor("f16", "f16", "f16", m=M, n=N)


def _collector_lines(ws, ops, pairs):
    form, buf = ("ws.", "b2") if ws else ("", "a")
    out = []
    for i, (op, (a, b)) in enumerate(zip(ops, pairs)):
        q = f".collector::{buf}::{op}" if op else ""
        out.append(f"tcgen05.mma.{form}cta_group::1.kind::f16{q} [%r10], {{{a}}}, {{{b}}}, %r30, "
                   f"{'%p5' if i == 0 else '%p6'};")
    return out


@pytest.mark.parametrize("ws", [True, False])
def test_collector_fill_use_lastuse(ws):
    """.collector::b2::fill / ::use / ::lastuse (.ws, B kept) and .collector::a::* (A kept): D is the three MMAs'
    chain computed from memory (PTX lets the hardware reload; tcemu checks that the buffer would hold the same)."""
    smem, d, idesc = _collector_case(ws)
    pairs = [("a0", "b0"), ("a1", "b0"), ("a2", "b0")] if ws else [("a0", "b0"), ("a0", "b1"), ("a0", "b2")]
    body, names = issue(_collector_lines(ws, ["fill", "use", "lastuse"], pairs))
    got = run(build(body, n=64, params=params_of(names)), [smem], np.zeros((1, 128, 0), np.uint32), 64,
              [d[k] for k in names] + [idesc.encode()])[0]
    cb, want = CollectorBuffers(), None
    buf = "b2" if ws else "a"
    for op, (a, b) in zip(("fill", "use", "lastuse"), pairs):
        want = tcgen05_mma(smem, d[a], d[b], idesc, c=want, ws=ws, collector=cb, collector_op=f"{buf}::{op}")
    assert np.array_equal(got, want.view(np.uint32))


@pytest.mark.parametrize("ws", [True, False])
def test_collector_use_after_the_default_discard_faults(ws):
    """An MMA with no collector qualifier is .collector::a::discard (.ws: ::b0::discard, PTX 9.7.16.10.9): a later
    ::use of that buffer has no fill to read."""
    smem, d, idesc = _collector_case(ws)
    buf = "b0" if ws else "a"
    lines = _collector_lines(ws, ["fill", None, "use"], [("a0", "b0")] * 3)
    lines = [ln.replace(".collector::b2::", ".collector::b0::") for ln in lines]
    body, names = issue(lines)
    with pytest.raises(KernelFault, match=rf"collector_op: \.collector::{buf}::use needs an earlier "
                                          rf"\.collector::{buf}::fill"):
        run(build(body, n=64, params=params_of(names)), [smem], np.zeros((1, 128, 0), np.uint32), 64,
            [d[k] for k in names] + [idesc.encode()])


@pytest.mark.parametrize("ws", [True, False])
def test_collector_source_rewritten_between_fill_and_use_faults(ws):
    """The kept operand's bytes change after the fill (after its commit was observed, so no in-flight hazard):
    PTX requires the source to stay unchanged while the buffer may be used; the ::use reports it."""
    smem, d, idesc = _collector_case(ws)
    kept = "b0" if ws else "a0"
    kept_addr = (BASE + 0x4000) if ws else BASE
    pairs = [("a0", "b0"), ("a1", "b0")] if ws else [("a0", "b0"), ("a0", "b1")]
    fill, use = _collector_lines(ws, ["fill", "use"], pairs)
    body, names = issue([fill, "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r35];",
                         "W2: mbarrier.try_wait.parity.shared::cta.b64 %p8, [%r35], 0;", "@!%p8 bra W2;",
                         "mov.u32 %r36, dyn;", f"add.u32 %r36, %r36, {kept_addr - BASE};",
                         "mov.u16 %rs1, 0x3c00;", "st.shared.u16 [%r36], %rs1;", "fence.proxy.async.shared::cta;",
                         use])
    body = ("  add.u32 %r35, %r12, 16;\n  @!%p2 mbarrier.init.shared::cta.b64 [%r35], 1;\n  bar.sync 0;\n" + body)
    text = build(body, n=64, params=params_of(names), extra_regs="  .reg .b16 %rs<4>;\n")
    with pytest.raises(KernelFault, match=rf"::use: {'B' if ws else 'A'} element \d+ changed since the fill"):
        run(text, [smem], np.zeros((1, 128, 0), np.uint32), 64, [d[k] for k in names] + [idesc.encode()])
    assert kept in names


# ------------------------------------------------------------------------------------------------ sm_103a: K = 96

def _k96_case(kind, stype, bs, sf_id):
    rng = np.random.default_rng(bs + sf_id)
    M, N = 128, 64
    nsf = 96 // bs
    smem = SharedMemory("sm100")
    da, db = desc(BASE, M, 96, 4), desc(BASE + 0x2000, N, 96, 4)
    smem.write_operand(da, rng.integers(0, 16, (M, 96)), dtype="e2m1")
    smem.write_operand(db, rng.integers(0, 16, (N, 96)), dtype="e2m1")
    tm = TensorMemory()
    sa, sb = scales(rng, stype, (M, nsf)), scales(rng, stype, (N, nsf))
    tm.write_scales(SFA, sa, sf_id, k96=True)
    tm.write_scales(SFB, sb, sf_id, k96=True)
    d = InstrDescriptor(kind, "e2m1", "e2m1", m=M, n=N, scale_type=stype, k96=True, a_scale_id=sf_id,
                        b_scale_id=sf_id)
    qual = f".block{bs}"
    line = f"tcgen05.mma.cta_group::1.kind::{kind}.block_scale{qual} [%r10], {{a0}}, {{b0}}, %r30, [%r32], [%r33], %p5;"
    return smem, tm, da, db, d, line, (sa, sb)


@pytest.mark.parametrize("kind,stype,bs,sf_id", [("mxf4nvf4", "ue4m3", 16, 2), ("mxf4nvf4", "ue8m0", 32, 3),
                                                 ("mxf4", "ue8m0", 32, 1)])
def test_k96_on_sm103a(kind, stype, bs, sf_id):
    """K = 96 (instruction-descriptor bit 31) in a `.target sm_103a` module: the same spelling as the dense
    mxf4 / mxf4nvf4 MMA (CuTe's SM103_MXF4_ULTRA atoms issue `.kind::mxf4nvf4.block_scale.block16 / .block32`);
    3 or 6 scale factors a row, their run continuing 4 columns on past byte 3. The same kernel for sm_100a faults."""
    smem, tm, da, db, d, line, (sa, sb) = _k96_case(kind, stype, bs, sf_id)
    cols = [(SFA, 8), (SFB, 8)]
    body, names = issue([line])
    args = [da.encode(), db.encode(), d.encode()]
    got = run(build(preload(cols) + body, n=64, params=params_of(names), target="sm_103a"), [smem],
              pre_words([tm], cols), 64, args)[0]
    want = tcgen05_mma(smem, da, db, d, tmem=tm, scale_a=SFA, scale_b=SFB, arch="sm103",
                       block_size_k=bs if kind == "mxf4nvf4" else None)
    assert np.array_equal(got, want.view(np.uint32))
    # the run past byte 3 is read: the factors as arrays give the same D
    assert np.array_equal(want, tcgen05_mma(smem, da, db, d, scale_a=sa, scale_b=sb, arch="sm103",
                                            block_size_k=bs if kind == "mxf4nvf4" else None))
    with pytest.raises(KernelFault, match="K = 96 is sm_103a only"):
        run(build(preload(cols) + body, n=64, params=params_of(names), target="sm_100a"), [smem],
            pre_words([tm], cols), 64, args)


def test_k96_lbo_mode_1_descriptor_on_sm103a():
    """A's K = 96 read split by LBO mode 1 (bit 52: LBO holds the absolute address of the second chunk, PTX
    9.7.16.3.1.2, as CuTe's sm103 mainloop writes it): 32 bytes at the end of each 128-byte line of stage 0, 16 at the
    start of stage 1's. Equals the same MMA on a contiguous copy; an sm_100a module faults on the descriptor."""
    rng = np.random.default_rng(96)
    img = 0xC000
    a, b = rng.integers(0, 16, (128, 96)), rng.integers(0, 16, (64, 96))
    smem = SharedMemory("sm100")
    stage0, stage1 = BASE, BASE + 0x4000
    sw = dict(sbo=1024, swizzle="128B", version=1)
    smem.write_operand(UmmaDescriptor(stage0 + 96, lbo=16, **sw), a[:, :64], dtype="e2m1")
    smem.write_operand(UmmaDescriptor(stage1, lbo=16, **sw), a[:, 64:], dtype="e2m1")
    db = desc(BASE + 0x8000, 64, 96, 4)
    smem.write_operand(db, b, dtype="e2m1")
    split = UmmaDescriptor(stage0 + 96, lbo=stage1, lbo_mode=1, **sw)
    d = InstrDescriptor("mxf4", "e2m1", "e2m1", m=128, n=64, k96=True)
    tm = TensorMemory()
    tm.write_scales(SFA, np.full((128, 3), 127), 0, k96=True)
    tm.write_scales(SFB, np.full((64, 3), 126), 0, k96=True)
    cols = [(SFA, 4), (SFB, 2)]
    body, names = issue(["tcgen05.mma.cta_group::1.kind::mxf4.block_scale.block32 [%r10], {a0}, {b0}, %r30, [%r32], "
                         "[%r33], %p5;"])
    args = [split.encode(), db.encode(), d.encode()]
    got = run(build(preload(cols) + body, n=64, img=img, params=params_of(names), target="sm_103a"), [smem],
              pre_words([tm], cols), 64, args, img=img)[0]
    flat = SharedMemory("sm100")
    flat.write_operand(desc(BASE, 128, 96, 4), a, dtype="e2m1")
    flat.write_operand(db, b, dtype="e2m1")
    kw = dict(scale_a=np.full((128, 3), 127), scale_b=np.full((64, 3), 126), arch="sm103")
    assert np.array_equal(got, tcgen05_mma(flat, desc(BASE, 128, 96, 4), db, d, **kw).view(np.uint32))
    with pytest.raises(KernelFault, match="sm_103a"):
        run(build(preload(cols) + body, n=64, img=img, params=params_of(names), target="sm_100a"), [smem],
            pre_words([tm], cols), 64, args, img=img)


# ------------------------------------------------------------------------------------------------ planted bugs

def _sparse_f16(seed=1):
    rng = np.random.default_rng(seed)
    M, N, K = 128, 32, 32
    smem = SharedMemory("sm100")
    da, db = desc(BASE, M, K // 2, 16), desc(BASE + 0x2000, N, K, 16)
    smem.write_operand(da, rand_bits(rng, (M, K // 2), "f16"), dtype="f16")
    smem.write_operand(db, rand_bits(rng, (N, K), "f16"), dtype="f16")
    tm = TensorMemory()
    tm.write_sparse_meta(META, nibbles(rng, "f16", M, K), "f16")
    return smem, tm, da, db, InstrDescriptor("f16", "f16", "f16", m=M, n=N, sparse=True)


SP_LINE = "tcgen05.mma.sp.cta_group::1.kind::f16 [%r10], {a0}, {b0}, [%r31], %r30, %p5;"


def test_metadata_stored_without_wait_st():
    """Warp 0 stores its lanes of the metadata again right before thread 0's MMA, without tcgen05.wait::st."""
    smem, tm, da, db, d = _sparse_f16()
    cols = [(META, 1)]
    body, names = issue([SP_LINE])
    restore = ("  setp.ne.u32 %p9, %r1, 0;\n  @%p9 bra NOST;\n  add.u32 %r37, %r10, 256;\n"
               "  ld.global.u32 %d0, [%rd26];\n  tcgen05.st.sync.aligned.32x32b.x1.b32 [%r37], {%d0};\nNOST:\n")
    text = build(preload(cols) + restore + body, n=32, params=params_of(names))
    with pytest.raises(HazardError) as e:
        run(text, [smem], pre_words([tm], cols), 32, [da.encode(), db.encode(), d.encode()])
    assert "tcgen05.mma reads its sparse metadata from tensor memory lane 0, column 256 while tcgen05.st (line" in \
        str(e.value) and "of warp 0 on it has not completed (tcgen05.wait::st first)" in str(e.value)


def _cp_meta(thread):
    """tcgen05.cp.128x128b of the metadata column (source row r = the 16 bytes of lane r's cells at META..META+3)
    by `thread`, then thread 0's MMA."""
    smem, tm, da, db, d = _sparse_f16(2)
    ds = desc(BASE + 0x3000, 128, 16, 8)
    smem.write_operand(ds, np.ascontiguousarray(tm.cells[:, META:META + 4]).view(np.uint8), dtype="u8")
    cp = f"""  setp.ne.u32 %p9, %r0, {thread};
  @%p9 bra NOCP;
  ld.param.u64 %rd20, [src];
  add.u32 %r37, %r10, {META};
  tcgen05.cp.cta_group::1.128x128b [%r37], %rd20;
NOCP:
  bar.sync 0;
"""
    body, names = issue([SP_LINE])
    names_all = names + ["src"]
    text = build(cp + body, n=32, params=params_of(names).replace(", .param .u32 idesc", "")
                 + ", .param .u32 idesc, .param .u64 src")
    return text, smem, tm, [da.encode(), db.encode(), d.encode(), ds.encode()], (da, db, d), names_all


def test_metadata_copied_by_another_thread_needs_its_commit():
    """tcgen05.cp by thread 32 writes the metadata; thread 0's MMA after a bar.sync only: the copy is asynchronous
    and no commit of thread 32 was observed. The same copy by thread 0 itself is a pipelined cp -> mma pair
    (9.7.16.6.2) and the MMA equals the model on the copied metadata."""
    text, smem, tm, args, (da, db, d), _ = _cp_meta(32)
    with pytest.raises(HazardError) as e:
        run(text, [smem], np.zeros((1, 128, 0), np.uint32), 32, args)
    msg = str(e.value)
    assert "tcgen05.mma reads its sparse metadata from tensor memory lane 0, column 256" in msg
    assert "written by tcgen05.cp" in msg and "issued by thread 32 (warp 1)" in msg and "no tcgen05.commit" in msg
    text, smem, tm, args, (da, db, d), _ = _cp_meta(0)
    got = run(text, [smem], np.zeros((1, 128, 0), np.uint32), 32, args)[0]
    assert np.array_equal(got, tcgen05_mma(smem, da, db, d, tmem=tm, sparse_meta=META).view(np.uint32))


def test_metadata_overwritten_under_an_uncommitted_mma():
    """Thread 0 issues the MMA without a commit yet; warp 1 then stores into the metadata column."""
    smem, tm, da, db, d = _sparse_f16(3)
    cols = [(META, 1)]
    body, names = issue([SP_LINE])
    body = body.replace("  tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r12];\n", "")
    body += ("  bar.sync 0;\n  setp.ne.u32 %p9, %r1, 1;\n  @%p9 bra DONE;\n  add.u32 %r37, %r15, 256;\n"
             "  tcgen05.st.sync.aligned.32x32b.x1.b32 [%r37], {%r0};\nDONE:\n  ret;\n")
    with pytest.raises(HazardError) as e:
        run(build(preload(cols) + body, n=32, params=params_of(names), epilogue=False), [smem],
            pre_words([tm], cols), 32, [da.encode(), db.encode(), d.encode()])
    msg = str(e.value)
    assert "tcgen05.st writes tensor memory lane 32, column 256 of CTA rank 0, read by tcgen05.mma.sp (line" in msg
    assert "no tcgen05.commit tracks it yet" in msg


def test_ws_d_read_before_the_commit_in_a_lane_block_only_ws_uses():
    """.ws M = 64 puts D's second half in lanes 64-127 (layout E); warp 2 reads lanes 80-95 (which the dense M = 64
    layout F leaves alone) without waiting for the commit."""
    rng = np.random.default_rng(64)
    smem = SharedMemory("sm100")
    da, db = desc(BASE, 64, 16, 16), desc(BASE + 0x2000, 64, 16, 16)
    smem.write_operand(da, rand_bits(rng, (64, 16), "f16"), dtype="f16")
    smem.write_operand(db, rand_bits(rng, (64, 16), "f16"), dtype="f16")
    d = InstrDescriptor("f16", "f16", "f16", m=64, n=64)
    body, names = issue(["tcgen05.mma.ws.cta_group::1.kind::f16 [%r10], {a0}, {b0}, %r30, %p5;"])
    body += ("  bar.sync 0;\n  setp.ne.u32 %p9, %r1, 2;\n  @%p9 bra DONE;\n  add.u32 %r37, %r10, 0x500000;\n"
             "  tcgen05.ld.sync.aligned.16x64b.x1.b32 {%d0}, [%r37];\n  tcgen05.wait::ld.sync.aligned;\nDONE:\n")
    with pytest.raises(HazardError) as e:
        run(build(body, n=32, params=params_of(names)), [smem], np.zeros((1, 128, 0), np.uint32), 32,
            [da.encode(), db.encode(), d.encode()])
    assert "tcgen05.ld reads tensor memory lane 80, column 0 of CTA rank 0, written by tcgen05.mma.ws (line" in \
        str(e.value)


def test_k96_scale_factor_run_on_column_stored_without_wait_st():
    """K = 96 .block16 with sf_id 2: each row's 6 factors take bytes 2-3 of column r / 32 and bytes 0-3 of the
    column 4 further; warp 0 stores that run-on column without tcgen05.wait::st before the MMA."""
    smem, tm, da, db, d, line, _ = _k96_case("mxf4nvf4", "ue4m3", 16, 2)
    cols = [(SFA, 8), (SFB, 8)]
    body, names = issue([line])
    late = (f"  setp.ne.u32 %p9, %r1, 0;\n  @%p9 bra NOST;\n  add.u32 %r37, %r10, {SFA + 4};\n"
            "  ld.global.u32 %d0, [%rd26+16];\n  tcgen05.st.sync.aligned.32x32b.x1.b32 [%r37], {%d0};\nNOST:\n")
    with pytest.raises(HazardError, match=rf"tcgen05.mma reads its scale factors of A from tensor memory lane 0, "
                                          rf"column {SFA + 4} while tcgen05.st"):
        run(build(preload(cols) + late + body, n=64, params=params_of(names), target="sm_103a"), [smem],
            pre_words([tm], cols), 64, [da.encode(), db.encode(), d.encode()])


# ------------------------------------------------------------------------------------------------ grammar

ACCEPTED = [  # (target, instruction): ptxas 13.0 assembles each
    ("sm_100a", "tcgen05.mma.sp.cta_group::1.kind::f16 [%r0], %rd0, %rd1, [%r2], %r1, %p0;"),
    ("sm_100a", "tcgen05.mma.sp.cta_group::1.kind::tf32 [%r0], [%r3], %rd1, [%r2], %r1, {%r4, %r5, %r6, %r7}, %p0, 3;"),
    ("sm_100a", "tcgen05.mma.sp.cta_group::2.kind::mxf8f6f4.block_scale.scale_vec::1X [%r0], %rd0, %rd1, [%r2], %r1, "
                "[%r4], [%r5], %p0;"),
    ("sm_100a", "tcgen05.mma.sp.cta_group::1.kind::f16.collector::a::fill [%r0], %rd0, %rd1, [%r2], %r1, %p0;"),
    ("sm_100a", "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.collector::a::use [%r0], %rd0, %rd1, %r1, [%r2], "
                "[%r3], %p0;"),
    ("sm_100a", "tcgen05.mma.ws.cta_group::1.kind::f16.collector::b2::use [%r0], %rd0, %rd1, %r1, %p0, %rd2;"),
    ("sm_100a", "tcgen05.mma.ws.cta_group::1.kind::i8 [%r0], %rd0, %rd1, %r1, %p0, 3;"),
    ("sm_100a", "tcgen05.mma.ws.sp.cta_group::1.kind::i8.collector::b1::lastuse [%r0], [%r3], %rd1, [%r2], %r1, %p0, "
                "%rd2;"),
    ("sm_103a", "tcgen05.mma.ws.sp.cta_group::1.kind::tf32.collector::b3::discard [%r0], %rd0, %rd1, [%r2], %r1, %p0;"),
    ("sm_103a", "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16 [%r0], %rd0, %rd1, %r1, [%r2], [%r3], "
                "%p0;"),
]
REFUSED = [  # (target, instruction, what tcemu raises, ptxas 13.0's message)
    ("sm_100a", "tcgen05.mma.sp.ws.cta_group::1.kind::f16 [%r0], %rd0, %rd1, [%r2], %r1, %p0;", PtxSyntaxError,
     "Unknown modifier '.ws'"),
    ("sm_100a", "tcgen05.mma.ws.cta_group::2.kind::f16 [%r0], %rd0, %rd1, %r1, %p0;", PtxSyntaxError,
     "Illegal modifier '.cta_group::2'"),
    ("sm_100a", "tcgen05.mma.ws.cta_group::1.kind::mxf8f6f4.block_scale [%r0], %rd0, %rd1, %r1, [%r2], [%r3], %p0;",
     PtxSyntaxError, "Arguments mismatch"),
    ("sm_100a", "tcgen05.mma.ws.cta_group::1.kind::f16 [%r0], %rd0, %rd1, %r1, {%r4, %r5, %r6, %r7}, %p0;",
     PtxSyntaxError, "Arguments mismatch"),
    ("sm_100a", "tcgen05.mma.ws.cta_group::1.kind::f16.collector::a::use [%r0], %rd0, %rd1, %r1, %p0;",
     PtxSyntaxError, "Illegal modifier '.collector::a::use'"),
    ("sm_100a", "tcgen05.mma.cta_group::1.kind::f16.collector::b0::fill [%r0], %rd0, %rd1, %r1, %p0;",
     PtxSyntaxError, "Illegal modifier '.collector::b0::fill'"),
    ("sm_100a", "tcgen05.mma.ws.cta_group::1.kind::f16.collector::b0::fill.collector::b1::use [%r0], %rd0, %rd1, %r1, "
                "%p0;", PtxSyntaxError, "Multiple .collector_usage modifiers"),
    ("sm_103a", "tcgen05.mma.cta_group::1.kind::i8 [%r0], %rd0, %rd1, %r1, %p0;", PtxSyntaxError,
     "Feature '.kind::i8' not supported on .target 'sm_103a'"),
    ("sm_100a", "tcgen05.mma.cta_group::1.kind::f16.ashift [%r0], [%r3], %rd1, %r1, %p0;", PtxUnsupported, None),
]


def _grammar_kernel(target, line):
    return f""".version 8.8
.target {target}
.address_size 64
.visible .entry k()
{{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  {line}
  ret;
}}
"""


@pytest.mark.parametrize("target,line", ACCEPTED)
def test_accepted_forms_compile(target, line):
    ptx.load(_grammar_kernel(target, line)).program("k")


@pytest.mark.parametrize("target,line,error,_", REFUSED)
def test_refused_forms(target, line, error, _):
    mod = ptx.load(_grammar_kernel(target, line))
    if error is PtxUnsupported:   # legal PTX tcemu does not model: listed at compile, refused when run
        with pytest.warns(PtxUnsupportedWarning):
            mod.program("k")
        assert mod.unsupported("k")
        return
    with pytest.raises(error):
        mod.program("k")


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_grammar_matches_ptxas(tmp_path):
    """The two lists above, assembled by ptxas 13.0 (skipped without it): the accepted lines assemble, the refused
    ones fail with the message recorded (.ashift is legal PTX that tcemu does not model)."""
    exe = shutil.which("ptxas")
    if exe is None:
        pytest.skip("ptxas not installed")
    def assemble(target, line):
        src = tmp_path / "k.ptx"
        src.write_text(_grammar_kernel(target, line))
        r = subprocess.run([exe, f"-arch={target}", str(src), "-o", str(tmp_path / "k.cubin")], capture_output=True,
                           text=True)
        return r.returncode, r.stdout + r.stderr
    for target, line in ACCEPTED:
        rc, msg = assemble(target, line)
        assert rc == 0, (line, msg)
    for target, line, _, message in REFUSED:
        rc, msg = assemble(target, line)
        assert (rc == 0) if message is None else (rc != 0 and message in msg), (line, msg)


def test_shifted_in_b_column_overwritten_before_the_commit():
    """.ws with column shift 3 reads B's rows 3 .. N + 2: a thread rewriting row N + 2 (past N, read only because of
    the shift) between the MMA and its commit is reported."""
    rng = np.random.default_rng(4)
    M, N, K = 128, 64, 16
    zcm = ZeroColumnMask(non_zero_mask=False, shift=3)
    smem = SharedMemory("sm100")
    da, db = desc(BASE, M, K, 16), desc(BASE + 0x2000, 72, K, 16)
    smem.write_operand(da, rand_bits(rng, (M, K), "f16"), dtype="f16")
    smem.write_operand(db, rand_bits(rng, (72, K), "f16"), dtype="f16")
    d = InstrDescriptor("f16", "f16", "f16", m=M, n=N, max_shift=1)
    body, names = issue(["tcgen05.mma.ws.cta_group::1.kind::f16 [%r10], {a0}, {b0}, %r30, %p5, {zcm};"])
    row = N + 2   # K-major, no swizzle: row r's first 16 bytes at 16 (r % 8) + SBO (r / 8), SBO = 256 here
    off = 0x2000 + 16 * (row % 8) + 256 * (row // 8)
    assert int(db.encode() & 0x3FFF) << 4 == BASE + 0x2000 and db.sbo == 256
    body = body.replace("  tcgen05.commit", f"  mov.u32 %r36, dyn;\n  st.shared.u32 [%r36+{off}], 0;\n"
                                            "  tcgen05.commit", 1)
    with pytest.raises(HazardError, match=rf"writes shared address {BASE + off:#x}, which a tcgen05.mma / "
                                          "tcgen05.cp still reads"):
        run(build(body, n=N, params=params_of(names)), [smem], np.zeros((1, 128, 0), np.uint32), N,
            [da.encode(), db.encode(), zcm.encode(), d.encode()])


def test_metadata_address_with_a_lane_is_refused():
    """The metadata maps (CuTe's tmem_e_frg) name absolute lanes from 0: an [sp-meta-tmem] with a lane field is not
    modelled (the instruction model used to ignore the lane silently)."""
    smem, tm, da, db, d = _sparse_f16(6)
    cols = [(META, 1)]
    body, names = issue([SP_LINE.replace("[%r31]", "[%r38]")])
    body = body.replace("  setp.ne.u32 %p5, 0, 0;\n", "  setp.ne.u32 %p5, 0, 0;\n  add.u32 %r38, %r31, 0x200000;\n")
    with pytest.raises(KernelFault, match=r"sparse metadata at 0x00200100: sparse_meta: 0x00200100 names lane 32"):
        run(build(preload(cols) + body, n=32, params=params_of(names)), [smem], pre_words([tm], cols), 32,
            [da.encode(), db.encode(), d.encode()])


# ------------------------------------------------------------------------------------------------ nvcc + CuTe / CCCL

FX = Path(PTX_FIXTURES)
SM100A_FORMS = ["tcgen05.mma.sp.cta_group::1.kind::f16"] * 2 + [
    "tcgen05.mma.ws.cta_group::1.kind::f16.collector::b0::fill",
    "tcgen05.mma.ws.cta_group::1.kind::f16.collector::b0::use"]


def _fixture(name, entry, forms):
    """The nvcc 13.0 PTX of tests/fixtures/ptx/tcgen05_forms.cu (commands in tests/fixtures/README.md), its entry's
    dynamic base, and the tcgen05.mma lines it holds (checked against `forms`)."""
    text = (FX / name).read_text()
    assert "Cuda compilation tools, release 13.0" in text
    got = [ln.split()[0] for ln in text.splitlines() if ln.strip().startswith("tcgen05.mma")]
    assert got == forms
    mod = ptx.load(text)
    return mod, mod.program(entry).dynamic_base()


def _relative(d, base):
    """A descriptor whose start address is relative to the dynamic array (the kernel adds its address >> 4)."""
    return replace(d, start_address=d.start_address - base).encode()


def test_nvcc_cute_sparse_atom():
    """CuTe's SM100_MMA_F16BF16_SS_SPARSE (M = 128, N = 64) twice on one accumulator, the metadata stored by the
    kernel with CuTe's SM100_TMEM_STORE atom at column 256, read back with SM100_TMEM_LOAD."""
    mod, base = _fixture("tcgen05_forms_sm100a.ptx", "sparse_f16",
                         SM100A_FORMS)
    rng = np.random.default_rng(100)
    M, N, K = 128, 64, 32
    smem, tm = SharedMemory("sm100"), TensorMemory()
    ds = {}
    for i in range(2):
        ds[f"a{i}"] = desc(base + 0x1000 * i, M, K // 2, 16)
        ds[f"b{i}"] = desc(base + 0x2000 + 0x1000 * i, N, K, 16)
        smem.write_operand(ds[f"a{i}"], rand_bits(rng, (M, K // 2), "f16"), dtype="f16")
        smem.write_operand(ds[f"b{i}"], rand_bits(rng, (N, K), "f16"), dtype="f16")
    tm.write_sparse_meta(META, nibbles(rng, "f16", M, K), "f16")
    d = InstrDescriptor("f16", "f16", "f16", m=M, n=N, sparse=True)
    out = np.zeros((128, 64), np.uint32)
    mod.launch("sparse_f16", grid=1, block=128, shared_bytes=0x8000,
               args=[out, smem.data[base:base + 0x8000].copy(), np.ascontiguousarray(tm.cells[:, META:META + 1])]
               + [_relative(ds[k], base) for k in ("a0", "b0", "a1", "b1")] + [d.encode(), META])
    first = tcgen05_mma(smem, ds["a0"], ds["b0"], d, tmem=tm, sparse_meta=META)
    want = tcgen05_mma(smem, ds["a1"], ds["b1"], d, c=first, tmem=tm, sparse_meta=META)
    assert np.array_equal(out, want.view(np.uint32))


def test_nvcc_cccl_ws_collector_and_zero_column_mask():
    """CCCL's cuda::ptx::tcgen05_mma_ws_collector_b0_fill / _use (M = 64, N = 128) with a zero-column mask and a
    column shift of 5 (max shift 8): D in layout E, the second MMA reusing B from buffer b0."""
    mod, base = _fixture("tcgen05_forms_sm100a.ptx", "ws_f16",
                         SM100A_FORMS)
    rng = np.random.default_rng(101)
    M, N, K = 64, 128, 16
    smem = SharedMemory("sm100")
    a0, a1, b = desc(base, M, K, 16), desc(base + 0x1000, M, K, 16), desc(base + 0x2000, 136, K, 16)
    for dd, rows in ((a0, M), (a1, M), (b, 136)):
        smem.write_operand(dd, rand_bits(rng, (rows, K), "f16"), dtype="f16")
    d = InstrDescriptor("f16", "f16", "f16", m=M, n=N, max_shift=1)
    zcm = ZeroColumnMask(non_zero_mask=True, skip_span=0, use_span=2, shift=5, first_spans=(1, 0, 0, 0))
    out = np.zeros((128, 64), np.uint32)
    mod.launch("ws_f16", grid=1, block=128, shared_bytes=0x8000,
               args=[out, smem.data[base:base + 0x8000].copy(), np.zeros(1, np.uint32), _relative(a0, base),
                     _relative(a1, base), _relative(b, base), d.encode(), zcm.encode()])
    cb = CollectorBuffers()
    kw = dict(ws=True, zero_column_mask=zcm.encode(), collector=cb)
    first = tcgen05_mma(smem, a0, b, d, collector_op="b0::fill", **kw)
    want = tcgen05_mma(smem, a1, b, d, c=first, collector_op="b0::use", **kw).view(np.uint32)
    lane, col = ws_lanes(M, N)
    assert np.array_equal(out[lane, col], want)


def test_nvcc_cute_sm103_k96_atom():
    """CuTe's SM103_MXF4_ULTRA_SS_VS (K = 96, .block16, ue4m3 scales) in an sm_103a kernel: its spelling is the
    dense `.kind::mxf4nvf4.block_scale.block16`; K = 96 is bit 31 of the instruction descriptor. Scale factors of A
    from byte 2 (id 2), of B from byte 0, each run of six continuing 4 columns on."""
    mod, base = _fixture("tcgen05_forms_sm103a.ptx", "k96_nvf4", ["tcgen05.mma.cta_group::1.kind::mxf4nvf4"
                                                                  ".block_scale.block16"])
    rng = np.random.default_rng(102)
    M, N = 128, 64
    smem, tm = SharedMemory("sm100"), TensorMemory()
    da, db = desc(base, M, 96, 4), desc(base + 0x2000, N, 96, 4)
    smem.write_operand(da, rng.integers(0, 16, (M, 96)), dtype="e2m1")
    smem.write_operand(db, rng.integers(0, 16, (N, 96)), dtype="e2m1")
    sa, sb = scales(rng, "ue4m3", (M, 6)), scales(rng, "ue4m3", (N, 6))
    tm.write_scales(256, sa, 2, k96=True)
    tm.write_scales(264, sb, 0, k96=True)
    d = InstrDescriptor("mxf4nvf4", "e2m1", "e2m1", m=M, n=N, scale_type="ue4m3", k96=True, a_scale_id=2)
    out = np.zeros((128, 64), np.uint32)
    mod.launch("k96_nvf4", grid=1, block=128, shared_bytes=0x8000,
               args=[out, smem.data[base:base + 0x8000].copy(), np.ascontiguousarray(tm.cells[:, 256:272]),
                     _relative(da, base), _relative(db, base), d.encode(), 256])
    want = tcgen05_mma(smem, da, db, d, scale_a=sa, scale_b=sb, arch="sm103", block_size_k=16)
    assert np.array_equal(out, want.view(np.uint32))


def test_hazard_on_a_later_column_of_a_in_tensor_memory_is_named():
    """A dense MMA with A in tensor memory (8 columns of f16): warp 0 stores A's column 3 again without
    tcgen05.wait::st. The cell is named (the lanes and columns arrays are broadcast before indexing; before, any
    column but the first raised IndexError from inside the check)."""
    rng = np.random.default_rng(8)
    smem = SharedMemory("sm100")
    db = desc(BASE, 32, 16, 16)
    smem.write_operand(db, rand_bits(rng, (32, 16), "f16"), dtype="f16")
    tm = TensorMemory()
    tm.write_a(ACOL, rand_bits(rng, (128, 16), "f16"), 16)
    cols = [(ACOL, 8)]
    d = InstrDescriptor("f16", "f16", "f16", m=128, n=32)
    body, names = issue(["tcgen05.mma.cta_group::1.kind::f16 [%r10], [%r34], {b0}, %r30, %p5;"])
    late = (f"  setp.ne.u32 %p9, %r1, 0;\n  @%p9 bra NOST;\n  add.u32 %r37, %r10, {ACOL + 3};\n"
            "  ld.global.u32 %d0, [%rd26+12];\n  tcgen05.st.sync.aligned.32x32b.x1.b32 [%r37], {%d0};\nNOST:\n")
    with pytest.raises(HazardError, match=rf"tcgen05.mma reads its A from tensor memory lane 0, column {ACOL + 3} "
                                          r"while tcgen05.st"):
        run(build(preload(cols) + late + body, n=32, params=params_of(names)), [smem], pre_words([tm], cols), 32,
            [db.encode(), d.encode()])
