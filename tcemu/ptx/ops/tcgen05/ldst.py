"""tcgen05.ld / .st / .wait::ld / .wait::st (PTX 9.7.16.8): registers to and from tensor memory; a warp reaches
the 32 lanes of its sub-partition only (warp % 4 owns lanes 32 (warp % 4) .. +31, 9.7.16.8.1).

Data paths of tcgen05.ld / .st (thread t, register j; PTX 9.7.16.2.3.1's figures are images, these follow CuTe's
SM100_TMEM_LOAD/STORE Copy_Traits, nvidia-cutlass 4.2 cute/atom/copy_traits_sm100.hpp, checked element by element in
tests/test_cute_tmem_copy.py):
  .32x32b    lane t,                            column j
  .16x64b    lane 8 (t % 2) + t / 4,             column (t / 2) % 2 + 2 j
  .16x128b   lane t / 4 + 8 (j % 2),             column t % 4 + 4 (j / 2)
  .16x256b   lane t / 4 + 8 ((j / 2) % 2),       column 2 (t % 4) + j % 2 + 8 (j / 4)
  .16x32bx2  lane t % 16,                        column j + (t / 16) immHalfSplitoff
with .pack::16b / .unpack::16b each register holding the low halves of two adjacent columns (2c low bits, 2c + 1
high bits) where the plain form holds column c (CuTe's _16b ValIDs); unpack writes zeros to the cells' high halves
(our reading).
"""
import numpy as np

from ....blackwell.tmem import COLUMNS
from ... import parser as P
from ...errors import MemoryFault, PtxSyntaxError
from ...types import TYPES
from ..common import Mods, where
from ..registry import register
from .state import check_allocated, check_async, check_pending, split, state, tmem_getter, uniform, whole_warp

B32 = TYPES["b32"]


SHAPES = ("16x64b", "16x128b", "16x256b", "32x32b", "16x32bx2")
_REGS_PER_NUM = {"16x64b": 1, "16x128b": 2, "16x256b": 4, "32x32b": 1, "16x32bx2": 1}


def datapath(shape: str, num: int, split_off: int = 0, pack: bool = False):
    """(lanes, columns) of thread t's register j, each (32, registers, parts): the lane (relative to taddr's) and
    column (relative to taddr's) of each 32-bit cell the register covers; parts is 2 with pack/unpack::16b (low
    half from the first cell, high half from the second), else 1. See the module text for the maps."""
    nregs = _REGS_PER_NUM[shape] * num
    t = np.arange(32)[:, None]
    j = np.arange(nregs)[None, :]
    if shape == "32x32b":
        lane, col = t + 0 * j, j + 0 * t
    elif shape == "16x64b":
        lane, col = 8 * (t % 2) + t // 4 + 0 * j, (t // 2) % 2 + 2 * j
    elif shape == "16x128b":
        lane, col = t // 4 + 8 * (j % 2), t % 4 + 4 * (j // 2)
    elif shape == "16x256b":
        lane, col = t // 4 + 8 * ((j // 2) % 2), 2 * (t % 4) + j % 2 + 8 * (j // 4)
    else:  # 16x32bx2: two 16-lane accesses, the second at taddr + immHalfSplitoff
        lane, col = t % 16 + 0 * j, j + 0 * t
        lanes_hi = (t // 16) + 0 * j
    if not pack:
        if shape == "16x32bx2":
            col = col + lanes_hi * split_off
        return lane[..., None], col[..., None]
    col = 2 * col[..., None] + np.arange(2)
    if shape == "16x32bx2":
        col = col + (lanes_hi * split_off)[..., None]
    return np.broadcast_to(lane[..., None], col.shape), col


def _num(mods, ins):
    num = [int(p[1:]) for p in mods.parts if p[0] == "x" and p[1:].isdigit()]
    if len(num) != 1 or num[0] not in (1, 2, 4, 8, 16, 32, 64, 128):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected one .num of .x1 .. .x128")
    return num[0]


def _ldst_form(ins, mods):
    shape = mods.one_of(SHAPES)
    if shape is None:
        shapes = ", ".join("." + s for s in SHAPES)
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected a shape ({shapes})")
    num = _num(mods, ins)
    nregs = _REGS_PER_NUM[shape] * num
    if nregs > 128:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: .{shape}.x{num} would take {nregs} registers; PTX "
                                                "Table 47 stops at 128")
    if "red" in mods:
        mods.unsupported("tcgen05.ld.red (sm_103a / sm_110a) is not modelled")
    pack = "pack::16b" in mods or "unpack::16b" in mods
    return shape, num, nregs, pack


def _cells(W, taddr, shape, num, split_off, pack, wh, what):
    """Absolute (lanes, cols) of every register's cells, after the address and sub-partition checks."""
    lane0, col0 = split(taddr, wh)
    lanes, cols = datapath(shape, num, split_off, pack)
    lanes, cols = lanes + lane0, cols + col0
    q = W.index % 4
    if lanes.min() < 32 * q or lanes.max() >= 32 * q + 32:
        bad = int(lanes[(lanes < 32 * q) | (lanes >= 32 * q + 32)].flat[0])
        raise MemoryFault(wh, f"warp {W.index} ({what} at {taddr:#010x}) touches tensor-memory lane {bad}: warp "
                              f"{W.index} is warp {q} of its warpgroup and may access lanes {32 * q}-{32 * q + 31} "
                              "only "
                              "(PTX 9.7.16.8.1)")
    if cols.max() >= COLUMNS:
        raise MemoryFault(wh, f"{what} at {taddr:#010x} runs to column {int(cols.max())}, past column {COLUMNS - 1}")
    return lanes, cols


def _ldst_cells(W, m, ins, gaddr, shape, num, split_off, pack, wh, store):
    """(state, lanes, cols) of the tensor-memory cells a tcgen05.ld (store False) or tcgen05.st moves, after the
    whole-warp, uniform-address, allocation, pending-access and async-completion checks (a store also waits for
    loads and async readers of its cells)."""
    what = "tcgen05.st" if store else "tcgen05.ld"
    act = whole_warp(W, m, ins)
    taddr = uniform(gaddr(W), act, "taddr", wh)
    tm = state(W.cta)
    lanes, cols = _cells(W, taddr, shape, num, split_off, pack, wh, what)
    access = f"{what} writes" if store else f"{what} reads"
    check_allocated(tm, cols, wh, access)
    # a warp's tcgen05.st over cells of its own un-waited tcgen05.ld is not reported (lenient, not silicon-checked:
    # CUTLASS's sm100 FMHA softmax stores the row maxima it loaded, with no tcgen05.wait::ld between; the tcgen05
    # operations of one warp reach tensor memory in issue order, and the store's data depends on the load's)
    check_pending(tm, lanes, cols, wh, access, loads=store, own=W.index)
    check_async(W, tm, lanes, cols, wh, access, readers=store)
    return tm, lanes, cols


@register("tcgen05.ld")
def c_ld(ins, prog, pc):
    mods = Mods(ins, skip=2)
    shape, num, nregs, pack = _ldst_form(ins, mods)
    ops = ins.operands
    dests = list(ops[0].items) if isinstance(ops[0], P.Vec) else [ops[0]]
    if len(dests) != nregs:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} writes {nregs} registers, got {len(dests)}")
    gaddr = tmem_getter(prog, ops[1], ins)
    split_off = 0
    if shape == "16x32bx2":
        if len(ops) != 3 or not isinstance(ops[2], P.Imm):
            raise PtxSyntaxError(ins.line, ins.col, ".16x32bx2 takes an immediate immHalfSplitoff")
        split_off = ops[2].value
    sets = [prog.write(d, B32, ins) for d in dests]
    wh = where(ins)
    text = f"tcgen05.ld (line {ins.line})"

    def op(W, m):
        tm, lanes, cols = _ldst_cells(W, m, ins, gaddr, shape, num, split_off, pack, wh, store=False)
        if not tm.mem.written[lanes, cols].all():
            k = np.argwhere(~tm.mem.written[lanes, cols])[0]
            raise MemoryFault(wh, f"thread {k[0]} of warp {W.index} reads tensor-memory lane {int(lanes[tuple(k)])}, "
                                  f"column {int(cols[tuple(k)])}, which nothing wrote")
        cells = tm.mem.cells[lanes, cols]          # (32, nregs, parts)
        regs = cells[..., 0] if not pack else (cells[..., 0] & 0xFFFF) | ((cells[..., 1] & 0xFFFF) << 16)
        regs = regs.astype(np.uint32)
        for j, s in enumerate(sets):
            s(W, regs[:, j], m)
        tm.ld_warp[lanes, cols] = W.index
        tm.ld_text[W.index] = text
    return op


@register("tcgen05.st")
def c_st(ins, prog, pc):
    mods = Mods(ins, skip=2)
    shape, num, nregs, pack = _ldst_form(ins, mods)
    ops = ins.operands
    gaddr = tmem_getter(prog, ops[0], ins)
    split_off = 0
    rest = ops[1:]
    if shape == "16x32bx2":
        if not rest or not isinstance(rest[0], P.Imm):
            raise PtxSyntaxError(ins.line, ins.col, ".16x32bx2 takes an immediate immHalfSplitoff")
        split_off, rest = rest[0].value, rest[1:]
    srcs = list(rest[0].items) if rest and isinstance(rest[0], P.Vec) else list(rest[:1])
    if len(srcs) != nregs:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} reads {nregs} registers, got {len(srcs)}")
    gets = [prog.read(s, B32, ins) for s in srcs]
    wh = where(ins)
    text = f"tcgen05.st (line {ins.line})"

    def op(W, m):
        tm, lanes, cols = _ldst_cells(W, m, ins, gaddr, shape, num, split_off, pack, wh, store=True)
        regs = np.stack([g(W) for g in gets], axis=1).astype(np.uint32)   # (32, nregs)
        if pack:  # unpack::16b: the low half into the first cell, the high half into the second, zero-extended
            vals = np.stack([regs & 0xFFFF, regs >> 16], axis=-1)
        else:
            vals = regs[..., None]
        tm.mem.cells[lanes, cols] = vals
        tm.mem.written[lanes, cols] = True
        tm.writer[lanes, cols] = -1
        tm.st_warp[lanes, cols] = W.index
        tm.st_text[W.index] = text
    return op


@register("tcgen05.wait::ld", "tcgen05.wait::st")
def c_wait(ins, prog, pc):
    loads = ins.opcode.split(".")[1] == "wait::ld"

    def op(W, m):
        whole_warp(W, m, ins)
        tm = W.cta.tmem
        if tm is not None:
            table = tm.ld_warp if loads else tm.st_warp
            table[table == W.index] = -1
    return op

