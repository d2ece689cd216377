"""tcgen05.mma (PTX 9.7.16.10): D (+)= A * B with A and B from shared memory (A optionally from tensor memory),
D in tensor memory, run through tcemu's instruction model (tcemu.blackwell.mma) at issue.

Forms beyond the dense MMA (operand grammar: PTX 9.7.16.10.9, every line checked with ptxas 13.0):
  tcgen05.mma.sp   [d], a, b, [sp-meta-tmem], idesc, ... : the descriptor's sparse bit must be set; the metadata cells
                   (tcemu.blackwell.tmem.meta_cells: the selector's sub-column, .ws copies) are read like A and the scale factors;
  tcgen05.mma.ws / .ws.sp   ..., enable-input-d {, zero-column-mask-desc}: cta_group::1, kinds tf32/f16/f8f6f4/i8; D in
                   the .ws layouts (D / E / G); B's rows read are those the mask keeps, from its column shift on;
  .collector::a::fill/use/lastuse/discard (non-.ws) and .collector::b0..b3::* (.ws): one CollectorBuffers per CTA (the
                   pair's even CTA for cta_group::2); no qualifier is ::a::discard (.ws: ::b0::discard); a use the buffer
                   cannot serve (no live fill, other places, changed bytes) is a KernelFault from the instruction model;
  .target sm_103a: K = 96 (bit 31 of the mxf4 / mxf4nvf4 descriptor, the dense spelling) with its 3 / 6 scale factors
                   a row running on past byte 3, and LBO mode 1 descriptors; .kind::i8 is refused there (ptxas 13.0).
Refused: .ashift (not modelled), block-scaled cta_group::2 (the 2x2 scale-factor layout).
Not silicon-verified (README, "Blackwell").
"""
import time

import numpy as np

from ....blackwell import mma as blackwell
from ....blackwell.collector import CollectorBuffers, CollectorOp
from ....blackwell.instr import BLOCK_SCALED, WS_KINDS, InstrDescriptor, ZeroColumnMask
from ....blackwell.tmem import TensorMemory, d_cells, meta_cells, row_lanes
from ....core.errors import DescriptorError, TcemuError
from ....layout.smem import SUBBYTE
from ... import parser as P
from ...errors import KernelFault, PtxSyntaxError, PtxUnsupported
from ...types import TYPES
from ..common import Mods, where
from ..registry import register
from .shared import smem_spots
from .state import (AsyncOp, check_allocated, check_async, check_pending, issuers, pair_of, parse_cta_group, split, state,
                    tmem_getter)

U32 = TYPES["u32"]
U64 = TYPES["u64"]
PRED = TYPES["pred"]
_VEC = {"scale_vec::1X": 32, "scale_vec::2X": 32, "scale_vec::4X": 16, "block16": 16, "block32": 32}
_KINDS = {"kind::" + k: k for k in ("tf32", "f16", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4")}
_BITS_IN_TMEM = {"tf32": 32, "f16": 16, "bf16": 16}


def _mma_pipelined(thread, group, key):
    def ok(op):
        return op.kind == "mma" and op.thread == thread and op.cta_group == group and op.key == key
    return ok


def _feeds_mma(thread, group):
    def ok(op):   # cp -> mma, shift -> mma (9.7.16.6.2), an mma's reads by a later mma of the same pipeline
        return op.thread == thread and op.cta_group == group
    return ok


def _form(ins, mods):
    """(ws, sp) from the qualifiers right after tcgen05.mma: .sp, .ws or .ws.sp (PTX 9.7.16.10.9; ptxas 13.0 refuses
    .sp.ws as "Unknown modifier '.ws'")."""
    parts = mods.parts
    ws = bool(parts) and parts[0] == "ws"
    sp = len(parts) > int(ws) and parts[int(ws)] == "sp"
    if parts.count("ws") + parts.count("sp") != int(ws) + int(sp):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: .ws / .sp go right after tcgen05.mma, in the order "
                                                "tcgen05.mma.ws.sp (PTX 9.7.16.10.9)")
    return ws, sp


def _collector(ins, mods, ws):
    """The .collector::<buffer>::<op> qualifier (None: absent, the default discard). Grammar (PTX 9.7.16.10.9, and
    ptxas 13.0): .collector::a::* on tcgen05.mma and tcgen05.mma.sp of every kind, .collector::b0..b3::* on
    tcgen05.mma.ws and .ws.sp only."""
    found = [p for p in mods.parts if p.startswith("collector")]
    if not found:
        return None
    if len(found) > 1:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: more than one .collector qualifier")
    try:
        return CollectorOp.parse(found[0], ws)
    except TcemuError as e:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: .{found[0]}: {e.rule}") from None


def _arch(prog):
    """sm103 for a module whose .target is sm_103a / sm_103f (K = 96, LBO mode 1), else sm100."""
    return "sm103" if any(t.startswith("sm_103") for t in getattr(prog, "target", ())) else "sm100"


@register("tcgen05.mma")
def c_mma(ins, prog, pc):
    mods = Mods(ins, skip=2)
    ws, sp = _form(ins, mods)
    if "ashift" in mods:
        mods.unsupported(".ashift (the convolution form shifting A's rows) is not modelled")
    group = parse_cta_group(mods, ins, prog)
    kind = mods.one_of(tuple(_KINDS))
    if kind is None:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} needs .kind::tf32/f16/f8f6f4/i8/mxf8f6f4/mxf4/mxf4nvf4")
    kind = _KINDS[kind]
    arch = _arch(prog)
    if kind == "i8" and arch == "sm103":   # ptxas 13.0: "Feature '.kind::i8' not supported on .target 'sm_103a'"
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: .kind::i8 is not supported on .target sm_103a (ptxas "
                                                "13.0 refuses it; CCCL's tcgen05_mma headers guard i8 to sm_100a / "
                                                "sm_110a)")
    if ws and (group != 1 or kind not in WS_KINDS):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: tcgen05.mma.ws is .cta_group::1 with .kind::"
                                                f"{' / '.join(WS_KINDS)} only (PTX Table 39, 9.7.16.10.9)")
    scaled = "block_scale" in mods
    if scaled != (kind in BLOCK_SCALED):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: .block_scale goes with the block-scaled kinds "
                                                "(mxf8f6f4, mxf4, mxf4nvf4) and only with them")
    vec = mods.one_of(tuple(_VEC))
    block = _VEC[vec] if vec else None
    if kind == "mxf4nvf4" and vec is None:
        raise PtxSyntaxError(ins.line, ins.col, ".kind::mxf4nvf4 needs .scale_vec::2X/4X or .block16/.block32 "
                                                "(PTX 9.7.16.10.9.1)")
    ops = list(ins.operands)
    if len(ops) < 5 + sp:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: too few operands")
    g_d = tmem_getter(prog, ops[0], ins)
    a_tmem = isinstance(ops[1], P.Addr)
    collector = _collector(ins, mods, ws)
    g_a = tmem_getter(prog, ops[1], ins) if a_tmem else prog.read(ops[1], U64, ins)
    g_b = prog.read(ops[2], U64, ins)
    g_meta = None
    if sp:   # [d-tmem], a, b-desc, [sp-meta-tmem], idesc, ...
        if not isinstance(ops[3], P.Addr):
            raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: the fourth operand is the sparsity metadata's "
                                                    f"tensor-memory address [sp-meta-tmem], got {P.fmt(ops[3])}")
        g_meta = tmem_getter(prog, ops[3], ins)
    g_i = prog.read(ops[3 + sp], U32, ins)
    rest = ops[4 + sp:]
    g_sa = g_sb = g_lanes = g_zcm = None
    if scaled:
        if len(rest) != 3:
            raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected [scale-A-tmem], [scale-B-tmem], "
                                                    "enable-input-d")
        g_sa, g_sb = tmem_getter(prog, rest[0], ins), tmem_getter(prog, rest[1], ins)
        rest = rest[2:]
    elif ws:   # enable-input-d {, zero-column-mask-desc}: no lane mask, no scale-input-d (9.7.16.10.9)
        if not 1 <= len(rest) <= 2 or any(isinstance(r, P.Vec) for r in rest):
            raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected enable-input-d {{, "
                                                    "zero-column-mask-desc}")
        if len(rest) == 2:
            g_zcm = prog.read(rest[1], U64, ins)
            rest = rest[:1]
    elif isinstance(rest[0], P.Vec):
        if len(rest[0].items) != 4 * group:
            raise PtxSyntaxError(ins.line, ins.col, f"disable-output-lane takes {4 * group} registers with "
                                                    f".cta_group::{group}")
        g_lanes = [prog.read(r, U32, ins) for r in rest[0].items]
        rest = rest[1:]
    if not 1 <= len(rest) <= 2:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected enable-input-d {{, scale-input-d}}")
    g_en = prog.read(rest[0], PRED, ins)
    scale_input_d = 0
    if len(rest) == 2:
        if not isinstance(rest[1], P.Imm):
            raise PtxSyntaxError(ins.line, ins.col, "scale-input-d is an immediate")
        scale_input_d = rest[1].value
    wh = where(ins)
    name = "tcgen05.mma" + (".ws" if ws else "") + (".sp" if sp else "")
    text = f"{name} (line {ins.line})"
    default_buffer = "b0" if ws else "a"   # no qualifier: .collector::a::discard (.ws: ::b0::discard)

    def issue(W, lane):
        d_addr, idesc_v = int(g_d(W)[lane]), int(g_i(W)[lane])
        try:
            d = InstrDescriptor.decode(idesc_v, kind)
            blackwell.check_form(d, group, a_tmem, None, None, scale_input_d, ws=ws, arch=arch, sparse=sp)
            bs = blackwell.block_size(d, block) if scaled else None
        except TcemuError as e:
            raise KernelFault(wh, f"instruction descriptor {idesc_v:#010x} (.kind::{kind}): {e}") from None
        ctas = list(pair_of(W.cta, wh)) if group == 2 else [W.cta]
        tms = [state(c) for c in ctas]
        M, N = d.m, d.n
        K = blackwell.instr_k(d)
        KA = K // 2 if sp else K      # a sparse A holds K/2 of each row's K (9.7.16.10.8)
        mc, nc = M // group, N // group
        thread = (W.cta.rank, W.index, int(lane))
        key = (d_addr, M, N) + (("ws",) if ws else ())
        op = AsyncOp("mma", W, lane, group, text, key)
        d_lane, d_col = split(d_addr, wh, "D address")
        # tensor memory: D (and C), A, scale factors, sparse metadata
        try:
            dl, dc = d_cells(M, N, group, d_lane, sparse=sp, ws=ws)
        except TcemuError as e:
            raise KernelFault(wh, f"D at {d_addr:#010x}: {e}") from None
        dc = dc + d_col
        enable = bool(g_en(W)[lane])
        reads = []   # (tmem, lanes, cols) read as A / scale factors / metadata
        a_addr = None
        if a_tmem:
            a_addr = int(g_a(W)[lane])
            a_lane, a_col = split(a_addr, wh, "A address")
            bits = _BITS_IN_TMEM.get(d.dtype_a, 4 if kind in ("mxf4", "mxf4nvf4") else 8)
            try:
                al = row_lanes(M, group, a_lane)
            except TcemuError as e:
                raise KernelFault(wh, f"A at {a_addr:#010x}: {e}") from None
            ac = a_col + np.arange(-(-KA * bits // 32))
            for t in tms:
                reads.append((t, al[:, None], ac[None, :], "A"))
        meta = None
        if sp:
            meta = int(g_meta(W)[lane])
            try:
                ml, mcols, _ = meta_cells(kind, mc, selector=d.sparsity_selector, ws=ws, address=meta)
            except TcemuError as e:
                raise KernelFault(wh, f"sparse metadata at {meta:#010x}: {e}") from None
            m_col = split(meta, wh, "sparse metadata address")[1]
            for t in tms:   # every copy (.ws M = 64 / 32), each CTA's own rows (cta_group::2)
                reads.append((t, np.stack(ml), (mcols + m_col)[None], "sparse metadata"))
        sfa = sfb = None
        if scaled:
            if group == 2:
                raise PtxUnsupported(ins.opcode, "block-scaled tcgen05.mma with cta_group::2 (the 2x2 scale-factor "
                                                 f"layout) is not modelled ({ins.where()})")
            sfa, sfb = int(g_sa(W)[lane]), int(g_sb(W)[lane])
            for addr, rows, sf_id, mat in ((sfa, M, d.a_scale_id, "A"), (sfb, N, d.b_scale_id, "B")):
                sl, sc = split(addr, wh, f"scale factors of {mat}")
                r = np.arange(rows)
                if d.k96:   # 3 or 6 bytes a row from byte sf_id, running on into later columns (tmem.py)
                    fl, fc, _ = TensorMemory._sf_cells(rows, K // bs, sf_id)
                    reads.append((tms[0], fl[:, :, None] + 32 * np.arange(4) + sl, sc + fc[:, :, None],
                                  f"scale factors of {mat}"))
                    continue
                reads.append((tms[0], (r % 32)[:, None] + 32 * np.arange(4) + sl, sc + (r // 32)[:, None]
                              + 0 * np.arange(4), f"scale factors of {mat}"))
        for t in tms:
            check_allocated(t, dc, wh, "tcgen05.mma's D is")
            check_pending(t, dl, dc, wh, "tcgen05.mma accumulates into", loads=True)
            check_async(W, t, dl, dc, wh, "tcgen05.mma accumulates into", pipelined=_mma_pipelined(thread, group, key),
                        readers=True)
        for t, ll, cc, what in reads:
            check_allocated(t, cc, wh, f"tcgen05.mma's {what} is in")
            check_pending(t, ll, cc, wh, f"tcgen05.mma reads its {what} from")
            check_async(W, t, ll, cc, wh, f"tcgen05.mma reads its {what} from", pipelined=_feeds_mma(thread, group))
        # the zero-column mask (.ws): B's columns read are those the mask keeps, from the column shift on
        zcm, keep_b, rows_b = None, None, nc
        if g_zcm is not None:
            zcm = int(g_zcm(W)[lane])
            try:
                mask = ZeroColumnMask.decode(zcm)
                for f, rule in mask.validate(M, N, d.max_shift_columns):
                    raise DescriptorError(f, rule)
                unit = blackwell._row_unit(d)
                rows_b = -(-(N + mask.shift) // unit) * unit
                keep_b = np.zeros(rows_b, bool)
                keep_b[mask.shift:mask.shift + N] = ~mask.mask(M, N)
            except TcemuError as e:
                raise KernelFault(wh, f"zero-column mask descriptor {zcm:#018x}: {e}") from None
        # shared memory: A (unless in tensor memory) and B, each CTA's rows / columns of the pair
        padded = kind in ("f8f6f4", "mxf8f6f4")
        for which, value, rows, k, dtype, mn, keep in (("A", None if a_tmem else int(g_a(W)[lane]), mc, KA,
                                                        d.dtype_a, d.transpose_a, None),
                                                       ("B", int(g_b(W)[lane]), rows_b, K, d.dtype_b, d.transpose_b,
                                                        keep_b)):
            if value is None:
                continue
            for c in ctas:
                spots = smem_spots(c, value, rows, k, dtype, "MN" if mn else "K", padded and dtype in SUBBYTE,
                                    f"tcgen05.mma operand {which}", wh, W, arch=arch, keep=keep)
                op.reads.append((c.shared, spots))
        lanes_words = None
        if g_lanes is not None:
            lanes_words = np.array([int(g(W)[lane]) for g in g_lanes], np.uint64)
        model_kw = {}
        if sp:
            model_kw["sparse_meta"] = meta
        if ws:
            model_kw.update(ws=True, zero_column_mask=zcm)
        if arch != "sm100":
            model_kw["arch"] = arch
        buffers = state(ctas[0]).collector   # one set per CTA (cta_group::2: the pair's, on its even CTA)
        if collector is not None:
            if buffers is None:
                buffers = state(ctas[0]).collector = CollectorBuffers()
            model_kw.update(collector=buffers, collector_op=collector)
        t0 = time.perf_counter()
        try:
            blackwell.tcgen05_mma([c.shared.smem for c in ctas] if group == 2 else ctas[0].shared.smem,
                                  None if a_tmem else int(g_a(W)[lane]), int(g_b(W)[lane]), d, cta_group=group,
                                  enable_input_d=enable, scale_input_d=scale_input_d,
                                  tmem=[t.mem for t in tms] if group == 2 else tms[0].mem, d_tmem=d_addr,
                                  a_tmem=a_addr, scale_a=sfa, scale_b=sfb, block_size_k=bs,
                                  disable_output_lane=lanes_words, **model_kw)
        except TcemuError as e:
            raise KernelFault(wh, f"{e}") from None
        if collector is None and buffers is not None:
            buffers.buffers.pop(default_buffer, None)
        launch = W.cta.launch
        if hasattr(launch, "tensor_core_seconds"):
            launch.tensor_core_seconds += time.perf_counter() - t0
        # bookkeeping: D cells written (lanes disabled by disable-output-lane keep their writer), reads, smem
        for i, t in enumerate(tms):
            t.ops[op.id] = op
            keep = None
            if lanes_words is not None:
                w = lanes_words[4 * i:4 * i + 4]
                keep = ((w[:, None] >> np.arange(32, dtype=np.uint64)) & np.uint64(1)).astype(bool).ravel()
            written = np.ones(dl.shape, bool) if keep is None else ~keep[dl]
            t.writer[dl[written], dc[written]] = op.id
        for t, ll, cc, _ in reads:
            t.reader[np.broadcast_to(ll, np.broadcast(ll, cc).shape), np.broadcast_to(cc, np.broadcast(ll, cc).shape)] \
                = op.id
        for sh, spots in op.reads:
            sh.tcgen05_reading[spots] += 1

    def mma(W, m):
        for lane in issuers(W, m):   # single-thread semantics: each executing thread issues one MMA
            issue(W, lane)
    return mma

