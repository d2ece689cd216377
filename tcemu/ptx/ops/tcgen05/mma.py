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

from ....arith.dtypes import is_padded
from ....blackwell import mma as blackwell
from ....blackwell.collector import CollectorBuffers, CollectorOp
from ....blackwell.forms import BLOCK_SCALED, KINDS, SCALE_VEC, WS_KINDS, a_tmem_bits, block_size, check_form, instr_k
from ....blackwell.instr import InstrDescriptor
from ....blackwell.tmem import TensorMemory, d_cells, meta_cells, row_lanes
from ....core.errors import TcemuError
from ... import parser as P
from ...errors import KernelFault, PtxSyntaxError, PtxUnsupported
from ...types import TYPES
from ..common import Mods, where
from ..registry import register
from .shared import smem_spots
from .state import (AsyncOp, check_allocated, check_async, check_pending, issuers, pair_of, parse_cta_group, split,
                    state, tmem_getter)

U32 = TYPES["u32"]
U64 = TYPES["u64"]
PRED = TYPES["pred"]
_KINDS = {"kind::" + k: k for k in KINDS}


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


class MmaForm:
    """What one tcgen05.mma says, read at load time: its qualifiers (form, .cta_group, kind, block scaling, the
    module's target) and a getter per operand (PTX 9.7.16.10.9)."""

    def __init__(self, ins, prog):
        mods = Mods(ins, skip=2)
        self._qualifiers(ins, prog, mods)
        self._operands(ins, prog, mods)
        self.name = "tcgen05.mma" + (".ws" if self.ws else "") + (".sp" if self.sp else "")
        self.text = f"{self.name} (line {ins.line})"
        self.default_buffer = "b0" if self.ws else "a"   # no qualifier: .collector::a::discard (.ws: ::b0::discard)

    def _qualifiers(self, ins, prog, mods):
        self.ws, self.sp = _form(ins, mods)
        if "ashift" in mods:
            mods.unsupported(".ashift (the convolution form shifting A's rows) is not modelled")
        self.group = group = parse_cta_group(mods, ins, prog)
        kind = mods.one_of(tuple(_KINDS))
        if kind is None:
            raise PtxSyntaxError(ins.line, ins.col,
                                 f"{ins.opcode} needs .kind::tf32/f16/f8f6f4/i8/mxf8f6f4/mxf4/mxf4nvf4")
        self.kind = kind = _KINDS[kind]
        self.arch = _arch(prog)
        # ptxas 13.0: "Feature '.kind::i8' not supported on .target 'sm_103a'"
        if kind == "i8" and self.arch == "sm103":
            raise PtxSyntaxError(ins.line, ins.col,
                                 f"{ins.opcode}: .kind::i8 is not supported on .target sm_103a (ptxas 13.0 refuses it; "
                                 "CCCL's tcgen05_mma headers guard i8 to sm_100a / sm_110a)")
        if self.ws and (group != 1 or kind not in WS_KINDS):
            raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: tcgen05.mma.ws is .cta_group::1 with .kind::"
                                                    f"{' / '.join(WS_KINDS)} only (PTX Table 39, 9.7.16.10.9)")
        self.scaled = "block_scale" in mods
        if self.scaled != (kind in BLOCK_SCALED):
            raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: .block_scale goes with the block-scaled kinds "
                                                    "(mxf8f6f4, mxf4, mxf4nvf4) and only with them")
        vec = mods.one_of(tuple(SCALE_VEC))
        self.block = SCALE_VEC[vec] if vec else None
        if kind == "mxf4nvf4" and vec is None:
            raise PtxSyntaxError(ins.line, ins.col, ".kind::mxf4nvf4 needs .scale_vec::2X/4X or .block16/.block32 "
                                                    "(PTX 9.7.16.10.9.1)")

    def _operands(self, ins, prog, mods):
        """[d-tmem], a-desc or [a-tmem], b-desc, {[sp-meta-tmem],} idesc, then the trailing operands."""
        ops = list(ins.operands)
        sp = self.sp
        if len(ops) < 5 + sp:
            raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: too few operands")
        self.g_d = tmem_getter(prog, ops[0], ins)
        self.a_tmem = isinstance(ops[1], P.Addr)
        self.collector = _collector(ins, mods, self.ws)
        self.g_a = tmem_getter(prog, ops[1], ins) if self.a_tmem else prog.read(ops[1], U64, ins)
        self.g_b = prog.read(ops[2], U64, ins)
        self.g_meta = None
        if sp:   # [d-tmem], a, b-desc, [sp-meta-tmem], idesc, ...
            if not isinstance(ops[3], P.Addr):
                raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: the fourth operand is the sparsity metadata's "
                                                        f"tensor-memory address [sp-meta-tmem], got {P.fmt(ops[3])}")
            self.g_meta = tmem_getter(prog, ops[3], ins)
        self.g_i = prog.read(ops[3 + sp], U32, ins)
        self._trailing(ins, prog, ops[4 + sp:])

    def _trailing(self, ins, prog, rest):
        """{[scale-A-tmem], [scale-B-tmem],} {disable-output-lane,} enable-input-d {, scale-input-d} (.ws:
        enable-input-d {, zero-column-mask-desc})."""
        self.g_sa = self.g_sb = self.g_lanes = self.g_zcm = None
        if self.scaled:
            if len(rest) != 3:
                raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected [scale-A-tmem], [scale-B-tmem], "
                                                        "enable-input-d")
            self.g_sa, self.g_sb = tmem_getter(prog, rest[0], ins), tmem_getter(prog, rest[1], ins)
            rest = rest[2:]
        elif self.ws:   # enable-input-d {, zero-column-mask-desc}: no lane mask, no scale-input-d (9.7.16.10.9)
            if not 1 <= len(rest) <= 2 or any(isinstance(r, P.Vec) for r in rest):
                raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected enable-input-d {{, "
                                                        "zero-column-mask-desc}")
            if len(rest) == 2:
                self.g_zcm = prog.read(rest[1], U64, ins)
                rest = rest[:1]
        elif isinstance(rest[0], P.Vec):
            if len(rest[0].items) != 4 * self.group:
                raise PtxSyntaxError(ins.line, ins.col, f"disable-output-lane takes {4 * self.group} registers with "
                                                        f".cta_group::{self.group}")
            self.g_lanes = [prog.read(r, U32, ins) for r in rest[0].items]
            rest = rest[1:]
        if not 1 <= len(rest) <= 2:
            raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected enable-input-d {{, scale-input-d}}")
        self.g_en = prog.read(rest[0], PRED, ins)
        self.scale_input_d = 0
        if len(rest) == 2:
            if not isinstance(rest[1], P.Imm):
                raise PtxSyntaxError(ins.line, ins.col, "scale-input-d is an immediate")
            self.scale_input_d = rest[1].value


@register("tcgen05.mma")
def c_mma(ins, prog, pc):
    form = MmaForm(ins, prog)
    wh = where(ins)

    def mma(W, m):
        for lane in issuers(W, m):   # single-thread semantics: each executing thread issues one MMA
            MmaIssue(form, ins, W, lane, wh).run()
    return mma


class MmaIssue:
    """One thread's tcgen05.mma at issue: its instruction descriptor, then the tensor memory (D, A, scale factors,
    sparse metadata) and shared memory (A, B) it reads and writes, each checked; then the instruction model runs
    and the cells' writers and readers are recorded for the hazard checks (state.py)."""

    def __init__(self, form, ins, W, lane, wh):
        self.f, self.ins, self.W, self.lane, self.wh = form, ins, W, lane, wh
        f = form
        self.d_addr, idesc_v = int(f.g_d(W)[lane]), int(f.g_i(W)[lane])
        try:
            self.d = d = InstrDescriptor.decode(idesc_v, f.kind)
            check_form(d, f.group, f.a_tmem, None, None, f.scale_input_d, ws=f.ws, arch=f.arch, sparse=f.sp)
            self.bs = block_size(d, f.block) if f.scaled else None
        except TcemuError as e:
            raise KernelFault(wh, f"instruction descriptor {idesc_v:#010x} (.kind::{f.kind}): {e}") from None
        self.ctas = list(pair_of(W.cta, wh)) if f.group == 2 else [W.cta]
        self.tms = [state(c) for c in self.ctas]
        self.K = instr_k(d)
        self.KA = self.K // 2 if f.sp else self.K      # a sparse A holds K/2 of each row's K (9.7.16.10.8)
        self.mc, self.nc = d.m // f.group, d.n // f.group
        self.thread = (W.cta.rank, W.index, int(lane))
        self.key = (self.d_addr, d.m, d.n) + (("ws",) if f.ws else ())
        self.op = AsyncOp("mma", W, lane, f.group, f.text, self.key)

    def run(self):
        self.tensor_memory()
        self.check_tensor_memory()
        self.shared_memory()
        self.model()
        self.record()

    def tensor_memory(self):
        """D's cells (and C's), then the cells read as A, sparse metadata and scale factors: `reads`."""
        f, W, lane, wh, d = self.f, self.W, self.lane, self.wh, self.d
        d_lane, d_col = split(self.d_addr, wh, "D address")
        try:
            self.dl, dc = d_cells(d.m, d.n, f.group, d_lane, sparse=f.sp, ws=f.ws)
        except TcemuError as e:
            raise KernelFault(wh, f"D at {self.d_addr:#010x}: {e}") from None
        self.dc = dc + d_col
        self.enable = bool(f.g_en(W)[lane])
        self.reads = []   # (tmem, lanes, cols) read as A / scale factors / metadata
        self.a_addr = None
        if f.a_tmem:
            self.a_addr = int(f.g_a(W)[lane])
            a_lane, a_col = split(self.a_addr, wh, "A address")
            try:
                al = row_lanes(d.m, f.group, a_lane)
            except TcemuError as e:
                raise KernelFault(wh, f"A at {self.a_addr:#010x}: {e}") from None
            ac = a_col + np.arange(-(-self.KA * a_tmem_bits(f.kind, d.dtype_a) // 32))
            for t in self.tms:
                self.reads.append((t, al[:, None], ac[None, :], "A"))
        self.meta = None
        if f.sp:
            self.meta = meta = int(f.g_meta(W)[lane])
            try:
                ml, mcols, _ = meta_cells(f.kind, self.mc, selector=d.sparsity_selector, ws=f.ws, address=meta)
            except TcemuError as e:
                raise KernelFault(wh, f"sparse metadata at {meta:#010x}: {e}") from None
            m_col = split(meta, wh, "sparse metadata address")[1]
            for t in self.tms:   # every copy (.ws M = 64 / 32), each CTA's own rows (cta_group::2)
                self.reads.append((t, np.stack(ml), (mcols + m_col)[None], "sparse metadata"))
        self.sfa = self.sfb = None
        if f.scaled:
            self.scale_factors()

    def scale_factors(self):
        """The cells of A's and B's scale factors (cta_group::1): a row's factors from byte sf_id of its cell."""
        f, d, wh = self.f, self.d, self.wh
        if f.group == 2:
            raise PtxUnsupported(self.ins.opcode, "block-scaled tcgen05.mma with cta_group::2 (the 2x2 scale-factor "
                                                  f"layout) is not modelled ({self.ins.where()})")
        self.sfa, self.sfb = int(f.g_sa(self.W)[self.lane]), int(f.g_sb(self.W)[self.lane])
        for addr, rows, sf_id, mat in ((self.sfa, d.m, d.a_scale_id, "A"), (self.sfb, d.n, d.b_scale_id, "B")):
            sl, sc = split(addr, wh, f"scale factors of {mat}")
            r = np.arange(rows)
            if d.k96:   # 3 or 6 bytes a row from byte sf_id, running on into later columns (tmem.py)
                fl, fc, _ = TensorMemory._sf_cells(rows, self.K // self.bs, sf_id)
                self.reads.append((self.tms[0], fl[:, :, None] + 32 * np.arange(4) + sl, sc + fc[:, :, None],
                                   f"scale factors of {mat}"))
                continue
            self.reads.append((self.tms[0], (r % 32)[:, None] + 32 * np.arange(4) + sl, sc + (r // 32)[:, None]
                               + 0 * np.arange(4), f"scale factors of {mat}"))

    def check_tensor_memory(self):
        W, wh, group, thread = self.W, self.wh, self.f.group, self.thread
        for t in self.tms:
            check_allocated(t, self.dc, wh, "tcgen05.mma's D is")
            check_pending(t, self.dl, self.dc, wh, "tcgen05.mma accumulates into", loads=True)
            check_async(W, t, self.dl, self.dc, wh, "tcgen05.mma accumulates into",
                        pipelined=_mma_pipelined(thread, group, self.key), readers=True)
        for t, ll, cc, what in self.reads:
            check_allocated(t, cc, wh, f"tcgen05.mma's {what} is in")
            check_pending(t, ll, cc, wh, f"tcgen05.mma reads its {what} from")
            check_async(W, t, ll, cc, wh, f"tcgen05.mma reads its {what} from", pipelined=_feeds_mma(thread, group))

    def shared_memory(self):
        """A (unless in tensor memory) and B, each CTA's rows / columns of the pair; under a zero-column mask (.ws)
        the rows of B the mask keeps, from its column shift on."""
        f, W, lane, wh, d = self.f, self.W, self.lane, self.wh, self.d
        self.zcm, keep_b, rows_b = None, None, self.nc
        if f.g_zcm is not None:
            self.zcm = int(f.g_zcm(W)[lane])
            try:
                keep_b = blackwell.b_rows_kept(d, blackwell.decode_zero_column_mask(self.zcm, d, True))
            except TcemuError as e:
                raise KernelFault(wh, f"zero-column mask descriptor {self.zcm:#018x}: {e}") from None
            rows_b = keep_b.size
        a = None if f.a_tmem else int(f.g_a(W)[lane])
        for which, value, rows, k, dtype, mn, keep in (("A", a, self.mc, self.KA, d.dtype_a, d.transpose_a, None),
                                                       ("B", int(f.g_b(W)[lane]), rows_b, self.K, d.dtype_b,
                                                        d.transpose_b, keep_b)):
            if value is None:
                continue
            for c in self.ctas:
                spots = smem_spots(c, value, rows, k, dtype, "MN" if mn else "K", is_padded(dtype, None, kind=f.kind),
                                   f"tcgen05.mma operand {which}", wh, W, arch=f.arch, keep=keep)
                self.op.reads.append((c.shared, spots))

    def model(self):
        """The instruction model (tcemu.blackwell.mma.tcgen05_mma) on the CTAs' shared and tensor memory."""
        f, W, lane, d, ctas, tms = self.f, self.W, self.lane, self.d, self.ctas, self.tms
        self.lanes_words = None
        if f.g_lanes is not None:
            self.lanes_words = np.array([int(g(W)[lane]) for g in f.g_lanes], np.uint64)
        model_kw = {}
        if f.sp:
            model_kw["sparse_meta"] = self.meta
        if f.ws:
            model_kw.update(ws=True, zero_column_mask=self.zcm)
        if f.arch != "sm100":
            model_kw["arch"] = f.arch
        buffers = state(ctas[0]).collector   # one set per CTA (cta_group::2: the pair's, on its even CTA)
        if f.collector is not None:
            if buffers is None:
                buffers = state(ctas[0]).collector = CollectorBuffers()
            model_kw.update(collector=buffers, collector_op=f.collector)
        t0 = time.perf_counter()
        try:
            blackwell.tcgen05_mma([c.shared.smem for c in ctas] if f.group == 2 else ctas[0].shared.smem,
                                  None if f.a_tmem else int(f.g_a(W)[lane]), int(f.g_b(W)[lane]), d,
                                  cta_group=f.group, enable_input_d=self.enable, scale_input_d=f.scale_input_d,
                                  tmem=[t.mem for t in tms] if f.group == 2 else tms[0].mem, d_tmem=self.d_addr,
                                  a_tmem=self.a_addr, scale_a=self.sfa, scale_b=self.sfb, block_size_k=self.bs,
                                  disable_output_lane=self.lanes_words, **model_kw)
        except TcemuError as e:
            raise KernelFault(self.wh, f"{e}") from None
        if f.collector is None and buffers is not None:
            buffers.buffers.pop(f.default_buffer, None)
        launch = W.cta.launch
        if hasattr(launch, "tensor_core_seconds"):
            launch.tensor_core_seconds += time.perf_counter() - t0

    def record(self):
        """D cells written (lanes disabled by disable-output-lane keep their writer), cells read, shared bytes read
        until a tcgen05.commit releases them."""
        op, dl, dc = self.op, self.dl, self.dc
        for i, t in enumerate(self.tms):
            t.ops[op.id] = op
            keep = None
            if self.lanes_words is not None:
                w = self.lanes_words[4 * i:4 * i + 4]
                keep = ((w[:, None] >> np.arange(32, dtype=np.uint64)) & np.uint64(1)).astype(bool).ravel()
            written = np.ones(dl.shape, bool) if keep is None else ~keep[dl]
            t.writer[dl[written], dc[written]] = op.id
        for t, ll, cc, _ in self.reads:
            t.reader[np.broadcast_to(ll, np.broadcast(ll, cc).shape), np.broadcast_to(cc, np.broadcast(ll, cc).shape)] \
                = op.id
        for sh, spots in op.reads:
            sh.tcgen05_reading[spots] += 1
