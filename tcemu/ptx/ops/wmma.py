"""wmma.load / wmma.store / wmma.mma (PTX ISA 9.7.14.4, nvcuda::wmma): warp-level matrix multiply-accumulate on
fragments whose layout PTX leaves unspecified; tcemu uses the H100's (tcemu/layout/wmma_fragments.py), and its
arithmetic: one HMMA over K = 16 per element (tcemu.hopper.mma_sync.hmma), both from traces/wmma_sm90.npz.

Modelled: .m16n16k16, .m32n8k16, .m8n32k16 with .f16 operands (.f16 or .f32 accumulators) and .bf16 operands
(.f32 accumulators), .row / .col memory layouts of each operand, an optional stride (elements between rows of a
.row matrix, columns of a .col one; the matrix's own width when absent). All 32 lanes execute it with one address
and one stride (.sync.aligned)."""
import numpy as np

from ...hopper.mma_sync import hmma
from ...layout.wmma_fragments import SHAPES, coords, count
from ..errors import PtxSyntaxError, PtxUnsupported
from ..memory import from_bytes
from ..types import TYPES
from .common import Mods, uniform, where, whole_warp
from .memory_ops import access, address, space_of
from .mma_sync import registers
from .registry import register

BITS = {"f16": 16, "bf16": 16, "f32": 32}
U32 = TYPES["u32"]
B32 = TYPES["b32"]


def _parts(ins, kind):
    """(fragment, layout, shape, space, type) of wmma.load.{a,b,c} / wmma.store.d."""
    p = ins.opcode.split(".")
    frag = p[2] if len(p) > 2 else ""
    if kind == "load" and frag not in ("a", "b", "c") or kind == "store" and frag != "d":
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: wmma.{kind} takes "
                                                f"{'.a, .b or .c' if kind == 'load' else '.d'}")
    if p[3:5] != ["sync", "aligned"]:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: wmma.{kind} is .sync.aligned")
    layout = next((x for x in p if x in ("row", "col")), None)
    shape = next((x for x in p if x.startswith("m") and "n" in x and "k" in x), None)
    dtype = p[-1]
    if layout is None or shape is None:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: needs .row or .col and a shape")
    if shape not in SHAPES or dtype not in BITS or frag in "ab" and dtype == "f32" or \
            frag in "cd" and dtype == "bf16":
        raise PtxUnsupported(ins.opcode, f".{shape}.{dtype} fragments are not modelled (f16 / bf16 operands, f16 / "
                                         f"f32 accumulators of {', '.join(SHAPES)}; {ins.where()})")
    return "c" if frag == "d" else frag, layout, shape, space_of(Mods(ins)), dtype


def _memory(ins, prog, addr_op, stride_op, frag, layout, shape, space, dtype):
    """Per warp: the byte addresses (32 * count,) its lanes' fragment elements live at. The element at (row, col)
    of a matrix with stride s lies at row * s + col (.row) or col * s + row (.col); no stride: the matrix's width
    (.row) or height (.col)."""
    get_addr = address(prog, addr_op, ins, space)
    get_stride = prog.read(stride_op, U32, ins) if stride_op is not None else None
    m, n, k = SHAPES[shape]
    rows, cols = {"a": (m, k), "b": (k, n), "c": (m, n)}[frag]
    r, c = coords(frag, shape, dtype)
    (major, minor), fixed = ((r, c), cols) if layout == "row" else ((c, r), rows)
    esize = BITS[dtype] // 8
    wh = where(ins)

    def addresses(W):
        base = uniform(get_addr(W), None, "the matrix address", wh)
        stride = uniform(get_stride(W), None, "the stride", wh) if get_stride is not None else fixed
        offs = (major.astype(np.int64) * stride + minor) * esize
        return (np.uint64(base) + offs.astype(np.uint64)).reshape(-1)
    return addresses


@register("wmma.load", "wmma.store")
def c_wmma_memory(ins, prog, pc):
    kind = ins.opcode.split(".")[1]
    frag, layout, shape, space, dtype = _parts(ins, kind)
    ops = list(ins.operands)
    regs_at, addr_at = (0, 1) if kind == "load" else (1, 0)
    if len(ops) not in (2, 3):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} takes a register vector, an address and an optional "
                                                "stride")
    per = count(frag, shape, dtype)
    nregs = per * BITS[dtype] // 32
    regs = registers(ins, ops[regs_at], "the fragment", nregs)
    addresses = _memory(ins, prog, ops[addr_at], ops[2] if len(ops) == 3 else None, frag, layout, shape, space, dtype)
    wh = where(ins)
    esize = BITS[dtype] // 8
    cont = np.uint16 if esize == 2 else np.uint32

    if kind == "load":
        sets = [prog.write(r, B32, ins) for r in regs]

        def load(W, m):
            whole_warp(m, wh, "wmma")
            raw = access(W, space, addresses(W), np.repeat(W.tid, per), esize, wh)
            words = np.ascontiguousarray(from_bytes(raw, cont).reshape(32, per)).view(np.uint32)   # low half first
            for i, s in enumerate(sets):
                s(W, np.ascontiguousarray(words[:, i]), None)
        return load

    gets = [prog.read(r, B32, ins) for r in regs]

    def store(W, m):
        whole_warp(m, wh, "wmma")
        words = np.ascontiguousarray(np.stack([g(W) for g in gets], axis=1).astype(np.uint32))
        values = words.view(cont).reshape(-1)   # (32 * count,), element order
        access(W, space, addresses(W), np.repeat(W.tid, per), esize, wh,
               data=values.view(np.uint8).reshape(-1, esize))
    return store


@register("wmma.mma")
def c_wmma_mma(ins, prog, pc):
    p = ins.opcode.split(".")
    if p[2:4] != ["sync", "aligned"]:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: wmma.mma is .sync.aligned")
    layouts = [x for x in p if x in ("row", "col")]
    shape = next((x for x in p if x.startswith("m") and "n" in x and "k" in x), None)
    types = [x for x in p[p.index(shape) + 1:]] if shape in p else []
    if len(layouts) != 2 or shape is None:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: needs .alayout.blayout and a shape")
    # .dtype.ctype (f16 operands) or .dtype.atype.btype.ctype
    if len(types) == 2:
        dt, at, bt, ct = types[0], "f16", "f16", types[1]
    elif len(types) == 4:
        dt, at, bt, ct = types
    else:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: expected .dtype.ctype or .dtype.atype.btype.ctype")
    if shape not in SHAPES or at != bt or at not in ("f16", "bf16") or dt not in ("f16", "f32") or \
            ct not in ("f16", "f32") or at == "bf16" and (dt, ct) != ("f32", "f32") or "satfinite" in p:
        raise PtxUnsupported(ins.opcode, f"this wmma.mma form is not modelled (f16 / bf16 operands with f16 / f32 "
                                         f"accumulators of {', '.join(SHAPES)}, no .satfinite; {ins.where()})")
    m, n, k = SHAPES[shape]
    ops = ins.operands
    if len(ops) != 4:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} takes 4 operands (d, a, b, c)")
    want = {"d": count("c", shape, dt) * BITS[dt] // 32, "a": count("a", shape, at) * BITS[at] // 32,
            "b": count("b", shape, bt) * BITS[bt] // 32, "c": count("c", shape, ct) * BITS[ct] // 32}
    regs = {w: registers(ins, ops[i], w, want[w]) for i, w in enumerate("dabc")}
    gets = {w: [prog.read(r, B32, ins) for r in regs[w]] for w in "abc"}
    sets = [prog.write(r, B32, ins) for r in regs["d"]]
    wh = where(ins)

    def matrix(W, w, t, rows, cols):
        words = np.ascontiguousarray(np.stack([g(W) for g in gets[w]], axis=1).astype(np.uint32))
        el = words.view(np.uint16 if BITS[t] == 16 else np.uint32)
        r, c = coords(w, shape, t)
        out = np.zeros((rows, cols), el.dtype)
        out[r, c] = el   # repeated elements hold the same matrix element: the last write wins, as any would
        return out

    def op(W, m_):
        whole_warp(m_, wh, "wmma")
        A = matrix(W, "a", at, m, k)
        B = matrix(W, "b", bt, k, n)
        C = matrix(W, "c", ct, m, n)
        D = np.asarray(hmma(A, B, C, at, dt))
        r, c = coords("c", shape, dt)
        words = np.ascontiguousarray(D[r, c]).view(np.uint32)
        for i, s in enumerate(sets):
            s(W, np.ascontiguousarray(words[:, i]), None)
    return op
