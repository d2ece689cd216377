"""tcgen05.cp and tcgen05.shift (PTX 9.7.16.9): asynchronous copies into tensor memory, completed through
tcgen05.commit.

tcgen05.cp (9.7.16.9.2) reads rows of 16-byte chunks through its shared-memory descriptor like a
K-major operand and writes row r to lane r (.128x256b, .128x128b), lane 32 r (.4x256b), lanes r + 32 q
(.32x128b.warpx4), r and r + 64 (.64x128b.warpx2::02_13), r % 32 + 64 (r / 32) and + 32 (::01_23): CuTe's UTCCP
Copy_Traits; the .b8x16 decompression puts each fp4 / fp6 value in an 8-bit container (tcemu.blackwell.tmem.CONTAINER_SHIFT).
"""
import numpy as np

from ....blackwell.tmem import COLUMNS, CONTAINER_SHIFT, LANES
from ....layout.addressing import operand_addresses
from ....layout.descriptors import UmmaDescriptor
from ...errors import KernelFault, MemoryFault, PtxSyntaxError
from ...types import TYPES
from ..common import where
from ..registry import register
from .shared import smem_spots
from .state import (AsyncOp, check_allocated, check_async, check_pending, issuers, pair_of, qualifiers, split, state,
                    tmem_getter)

U64 = TYPES["u64"]


CP_SHAPES = {"128x256b": (128, 32), "4x256b": (4, 32), "128x128b": (128, 16), "64x128b": (64, 16),
             "32x128b": (32, 16)}   # rows, bytes per row


def cp_lanes(shape, multicast):
    """The lanes (relative to taddr's) each source row is copied to: (rows, copies)."""
    rows = CP_SHAPES[shape][0]
    r = np.arange(rows)[:, None]
    if shape in ("128x256b", "128x128b"):
        return r
    if shape == "4x256b":
        return 32 * r
    if shape == "32x128b":
        return r + 32 * np.arange(4)
    if multicast == "warpx2::02_13":
        return r + 64 * np.arange(2)
    return r % 32 + 64 * (r // 32) + 32 * np.arange(2)   # warpx2::01_23


@register("tcgen05.cp")
def c_cp(ins, prog, pc):
    mods, group = qualifiers(ins, prog)
    shape = mods.one_of(tuple(CP_SHAPES))
    if shape is None:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected a shape ({', '.join(CP_SHAPES)})")
    multicast = mods.one_of(("warpx2::02_13", "warpx2::01_23", "warpx4"))
    need = {"64x128b": ("warpx2::02_13", "warpx2::01_23"), "32x128b": ("warpx4",)}.get(shape, (None,))
    if multicast not in need:
        takes = " or ".join("." + n if n else "no multicast" for n in need)
        raise PtxSyntaxError(ins.line, ins.col, f".{shape} takes {takes} (PTX 9.7.16.9.2)")
    src_fmt = mods.one_of(("b6x16_p32", "b4x16_p64"))
    if (src_fmt is None) != ("b8x16" not in mods):
        raise PtxSyntaxError(ins.line, ins.col, ".dst_fmt .b8x16 and .src_fmt .b6x16_p32 / .b4x16_p64 go together")
    rows, row_bytes = CP_SHAPES[shape]
    g_t = tmem_getter(prog, ins.operands[0], ins)
    g_s = prog.read(ins.operands[1], U64, ins)
    wh = where(ins)
    text = f"tcgen05.cp (line {ins.line})"
    rel_lanes = cp_lanes(shape, multicast)

    def issue(W, lane):
        taddr, sdesc = int(g_t(W)[lane]), int(g_s(W)[lane])
        lane0, col0 = split(taddr, wh)
        ctas = list(pair_of(W.cta, wh)) if group == 2 else [W.cta]
        op = AsyncOp("cp", W, lane, group, text)
        ncols = row_bytes // 4
        lanes = (rel_lanes + lane0)[:, :, None]                # (rows, copies, 1)
        cols = (col0 + np.arange(ncols))[None, None, :]        # (1, 1, ncols)
        if lanes.max() >= LANES or cols.max() >= COLUMNS:
            raise MemoryFault(wh, f"tcgen05.cp.{shape} at {taddr:#010x} runs past tensor memory")
        lanes, cols = np.broadcast_arrays(lanes, cols)
        for c in ctas:
            t = state(c)
            check_allocated(t, cols, wh, "tcgen05.cp writes")
            check_pending(t, lanes, cols, wh, "tcgen05.cp writes", loads=True)
            check_async(W, t, lanes, cols, wh, "tcgen05.cp writes", readers=True, pipelined=_ordered_before(op, shape))
            # the source: rows of 16-byte chunks read like a K-major operand of 8-bit elements
            spots = smem_spots(c, sdesc, rows, row_bytes, "u8", "K", False, "tcgen05.cp source", wh, W,
                               rule="rows")
            addrs = operand_addresses(UmmaDescriptor.decode(sdesc), rows=max(rows, 8), k=row_bytes, dtype="u8",
                                      arch="sm100")[:rows]     # checked by _smem_spots above
            if not c.shared.smem.written[addrs].all():
                r, b = np.argwhere(~c.shared.smem.written[addrs])[0]
                raise MemoryFault(wh, f"tcgen05.cp source row {r}, byte {b} reads shared address "
                                      f"{int(addrs[r, b]):#x}, which nothing wrote")
            raw = c.shared.smem.data[addrs]
            if src_fmt is not None:
                raw = _decompress(raw, src_fmt)
            words = np.ascontiguousarray(raw.astype(np.uint8)).view(np.uint32)   # (rows, ncols)
            t.mem.cells[lanes, cols] = np.broadcast_to(words[:, None, :], lanes.shape)
            t.mem.written[lanes, cols] = True
            t.writer[lanes, cols] = op.id
            t.ops[op.id] = op
            op.reads.append((c.shared, spots))
            c.shared.tcgen05_reading[spots] += 1

    def cp(W, m):
        for lane in issuers(W, m):
            issue(W, lane)
    return cp


def _ordered_before(op, shape):
    """Earlier asynchronous tcgen05 operations a tcgen05.cp may overwrite (or whose reads it may overwrite) without
    observing their commit: those of its own thread and .cta_group that execute before it.

    PTX 9.7.16.6.2 lists shift -> cp.4x256b (same N) as a pipeline. It does not list mma -> cp or cp -> cp, yet
    NVIDIA's own kernels rely on both: CUTLASS's sm100 block-scaled mainloop
    (sm100_blockscaled_mma_warpspecialized.hpp) copies SFA / SFB with tcgen05.cp into one tensor-memory buffer every
    k-tile while the previous k-tile's MMAs, which read it, are not waited for, and Triton (3.9 tutorial 10, and its
    Gluon tutorial 10-tcgen05-copy: "all tcgen05 instructions ... on the tensor pipe ... executed in order") does the
    same. tcemu takes the single thread's tcgen05.mma / .cp stream as in order (as it already does for mma ->
    mma reads of scale factors); another thread's operation still needs its commit observed."""
    def ok(o):
        if o.thread != op.thread or o.cta_group != op.cta_group:
            return False
        return o.kind in ("cp", "mma") or (o.kind == "shift" and shape == "4x256b")
    return ok


def _decompress(raw, src_fmt):
    """(rows, bytes) of 16-value chunks (fp4 + 8 padding bytes, or fp6 + 4) -> one 8-bit container per value
    (PTX 9.7.16.9.1; value i at bits [w i, w (i + 1)) of its chunk, as tcemu.smem reads .b4x16_p64 / .b6x16_p32)."""
    width = 4 if src_fmt == "b4x16_p64" else 6
    chunks = raw.reshape(raw.shape[0], -1, 16).astype(np.int64)
    word = np.zeros(chunks.shape[:2], dtype=object)
    for b in range(16):
        word = word + (chunks[..., b].astype(object) << (8 * b))
    out = np.zeros(chunks.shape, np.int64)
    shift = CONTAINER_SHIFT["e2m1" if width == 4 else "e2m3"]
    for i in range(16):
        out[..., i] = ((word >> (width * i)) & ((1 << width) - 1)).astype(np.int64) << shift
    return out.reshape(raw.shape)


@register("tcgen05.shift")
def c_shift(ins, prog, pc):
    mods, group = qualifiers(ins, prog, "down")
    g_t = tmem_getter(prog, ins.operands[0], ins)
    wh = where(ins)
    text = f"tcgen05.shift (line {ins.line})"

    def issue(W, lane):
        taddr = int(g_t(W)[lane])
        lane0, col0 = split(taddr, wh)
        if lane0 % 32:
            raise KernelFault(wh, f"tcgen05.shift's lane {lane0} is not a multiple of 32 (PTX 9.7.16.9.3)")
        op = AsyncOp("shift", W, lane, group, text)
        # .31x256b (our reading of 9.7.16.9.3): rows lane0 .. lane0 + 30 move one lane down, 8 columns
        lanes = np.arange(lane0, lane0 + 32)[:, None]
        cols = (col0 + np.arange(8))[None, :]
        lanes, cols = np.broadcast_arrays(lanes, cols)
        for c in (list(pair_of(W.cta, wh)) if group == 2 else [W.cta]):
            t = state(c)
            check_allocated(t, cols, wh, "tcgen05.shift moves")
            check_pending(t, lanes, cols, wh, "tcgen05.shift moves", loads=True)
            check_async(W, t, lanes, cols, wh, "tcgen05.shift moves", readers=True,
                        pipelined=lambda o: o.kind == "mma" and o.thread == op.thread)
            if not t.mem.written[lanes[:-1], cols[:-1]].all():
                raise MemoryFault(wh, f"tcgen05.shift at {taddr:#010x} moves tensor memory nothing wrote")
            t.mem.cells[lanes[1:], cols[1:]] = t.mem.cells[lanes[:-1], cols[:-1]].copy()
            t.mem.written[lanes[1:], cols[1:]] = True
            t.writer[lanes, cols] = op.id
            t.ops[op.id] = op

    def shift(W, m):
        for lane in issuers(W, m):
            issue(W, lane)
    return shift

