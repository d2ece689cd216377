"""Loads, stores and copies between state spaces: ld, st, ldmatrix, stmatrix,
prefetch, atom, red (PTX ISA 9.7.9.8-9.7.9.10, 9.7.9.25, 9.7.9.15-16, 9.7.13).

Every access is checked: inside an allocation of its state space, naturally aligned, and (shared memory)
written before it is read.
"""
import numpy as np

from .. import fparith
from .. import parser as P
from .. import graces
from ...core.errors import TcemuError
from ..errors import MemoryFault, PtxSyntaxError
from ..lockstep import Batch, slots_of
from ..signals import Fallback
from ..memory import WINDOW_SIZE, WINDOWS, as_bytes, from_bytes, generic_space
from ..types import CONTAINER, TYPES, resize
from .common import Mods, mask_array, operands, require_ptx, require_target, where, whole_warp
from .memory_gang import (FRAG_COL as _FRAG_COL, FRAG_ROW as _FRAG_ROW, fragments, ld_gang, ldmatrix_gang,
                          ldmatrix_run, matrix_offsets, shared_store_run, st_gang, stmatrix_gang)
from .registry import register
from .runs import Fuse

SPACES = ("global", "shared", "local", "param", "const")
GANG_SPACES = ("global", "shared", "generic")   # ld / st with a gang version (memory_gang.py) on weak forms
CLUSTER_SHIFT = 24  # a shared::cluster address: ((rank + 1) << 24) | offset; offsets below 2^24 are the own CTA's


def space_of(mods: Mods) -> str:
    for p in mods.parts:
        if p == "shared::cluster":
            return "shared::cluster"
        s = p.split("::")[0]
        if s in SPACES:
            return s
    return "generic"


def effective_space(prog, op, space: str) -> str:
    """ld/st.param on a call's or a called function's .param variable reach the per-thread frame."""
    if space == "param" and isinstance(op, P.Addr) and isinstance(op.base, P.Sym):
        sym = prog.symbols.get(op.base.name)
        if sym is not None and sym.space == "local":
            return "local"
    return space


def address(prog, op: P.Addr, ins, space: str):
    """Getter of the per-lane address (uint64) of an address operand."""
    if not isinstance(op, P.Addr):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} needs an address operand [..], got {P.fmt(op)}")
    off = np.uint64(op.offset & 0xFFFFFFFFFFFFFFFF)
    if op.base is None:
        const = np.full(32, off, np.uint64)
        return lambda W: const
    if isinstance(op.base, P.Sym):
        sym = prog.symbols.get(op.base.name)
        if sym is None:
            raise PtxSyntaxError(ins.line, ins.col, f"{op.base.name} is not a declared name")
        window = WINDOWS[sym.space] if space == "generic" and sym.space in WINDOWS else 0
        if sym.space in ("global", "const"):  # placed per launch (Module._place_globals), after compiling
            symbols, name = prog.symbols, op.base.name
            return lambda W: np.full(32, np.uint64((symbols[name].address + window + op.offset)
                                                   & 0xFFFFFFFFFFFFFFFF), np.uint64)
        base = sym.address + window
        const = np.full(32, np.uint64((base + op.offset) & 0xFFFFFFFFFFFFFFFF), np.uint64)
        return lambda W: const
    slot = prog.slot(op.base, ins)
    g = prog.read(op.base, TYPES[f"u{slot.cls}"], ins)
    if slot.cls == 64:
        return lambda W: g(W) + off
    return lambda W: g(W).astype(np.uint64) + off if slot.cls != 32 else \
        (g(W) + np.uint32(op.offset & 0xFFFFFFFF)).astype(np.uint64)


def memory(W, space):
    """The state-space object and an address-to-offset conversion."""
    if isinstance(space, tuple):  # ("remote", rank): another CTA's shared memory (distributed shared memory)
        cl = W.cta.cluster
        if not 0 <= space[1] < len(cl):
            raise MemoryFault("shared::cluster", f"CTA rank {space[1]} is outside the cluster of {len(cl)}")
        return cl[space[1]].shared
    if space == "global":
        return W.cta.launch.gmem
    if space == "shared":
        return W.cta.shared
    if space == "local":
        if W.local is None:
            raise MemoryFault("local", "the kernel declares no local memory")
        return W.local
    if space == "param":
        return W.cta.launch.params
    if space == "const":
        return W.cta.launch.const
    raise PtxSyntaxError(0, 0, f"unknown state space {space}")


def resolve(W, space, addrs, tids, wh):
    """[(state space, offsets, lane selector)] for the addresses of the active lanes."""
    if space != "generic":
        if space == "global":
            return [("global", addrs, slice(None))]
        if space == "shared::cluster":
            return _cluster_parts(W, addrs.astype(np.int64), slice(None), wh)
        return [(space, addrs.astype(np.int64), slice(None))]
    kinds = np.full(addrs.shape, "global", object)
    out = []
    for s, base in WINDOWS.items():
        inside = (addrs >= np.uint64(base)) & (addrs < np.uint64(base + WINDOW_SIZE))
        if inside.any():
            offs = (addrs[inside] - np.uint64(base)).astype(np.int64)
            if s == "shared":
                out.extend(_cluster_parts(W, offs, inside, wh))
            else:
                out.append((s, offs, inside))
            kinds[inside] = s
    rest = kinds == "global"
    if rest.any():
        out.append(("global", addrs[rest], rest))
    return out


def _cluster_parts(W, offs, sel, wh):
    """Split shared::cluster offsets by the CTA they name: ("shared", ...) for the own CTA, ("remote", ...)."""
    remote = offs >= (1 << CLUSTER_SHIFT)
    if not remote.any():
        return [("shared", offs, sel)]
    base_sel = np.ones(offs.size, bool) if isinstance(sel, slice) else sel
    idx = np.flatnonzero(base_sel)
    out = []
    if (~remote).any():
        m = np.zeros(offs.size if isinstance(sel, slice) else sel.size, bool)
        m[idx[~remote]] = True
        out.append(("shared", offs[~remote], m))
    for rank in np.unique(offs[remote] >> CLUSTER_SHIFT):
        pick = remote & ((offs >> CLUSTER_SHIFT) == rank)
        m = np.zeros(offs.size if isinstance(sel, slice) else sel.size, bool)
        m[idx[pick]] = True
        out.append((("remote", int(rank) - 1), offs[pick] & ((1 << CLUSTER_SHIFT) - 1), m))
    return out


def access(W, space, addrs, tids, nbytes, wh, data=None, strong=False, sem=()):
    """Load (data None) or store `nbytes` per active lane; loads return (n, nbytes) uint8. `strong`: an atomic or
    .volatile/.relaxed/.acquire/.release access (racecheck: those do not race with each other); `sem`: the
    global racecheck's (acquire, release, rmw) flags (graces.py)."""
    if addrs.size and nbytes > 1:
        mis = (addrs % np.uint64(nbytes)) != 0
        if mis.any():
            j = int(np.flatnonzero(mis)[0])
            raise MemoryFault(wh, f"thread {int(tids[j])} accesses {nbytes} bytes at {int(addrs[j]):#x}, "
                                  f"not aligned to {nbytes} bytes (misaligned address)")
    parts = resolve(W, space, addrs, tids, wh)
    if data is None:
        if len(parts) == 1 and isinstance(parts[0][2], slice):
            s, offs, _ = parts[0]
            if s == "global" and W.cta.launch.check_races:
                graces.on_access(W, W.cta.launch.gmem, offs, nbytes, tids, wh, None, strong, *sem)
            return _load(W, s, offs, nbytes, tids, wh, strong)
        out = np.zeros((addrs.size, nbytes), np.uint8)
        for s, offs, sel in parts:
            if s == "global" and W.cta.launch.check_races:
                graces.on_access(W, W.cta.launch.gmem, offs, nbytes, tids[sel], wh, None, strong, *sem)
            out[sel] = _load(W, s, offs, nbytes, tids[sel], wh, strong)
        return out
    for s, offs, sel in parts:
        mem = memory(W, s)
        d = data if isinstance(sel, slice) else data[sel]
        t = tids if isinstance(sel, slice) else tids[sel]
        if s == "shared" or isinstance(s, tuple):
            mem.store(offs, d, t, wh, W=W, strong=strong)
        else:
            if s == "global" and W.cta.launch.check_races:
                graces.on_access(W, mem, offs, nbytes, t, wh, d, strong, *sem)
            mem.store(offs, d, t, wh)


def _load(W, s, offs, nbytes, tids, wh, strong):
    if s == "shared":
        return W.cta.shared.load(offs, nbytes, tids, wh, W, strong=strong)
    if isinstance(s, tuple):  # another CTA's window: racecheck only (its TMA guard is the owner's business)
        return memory(W, s).load(offs, nbytes, tids, wh, W, guard=False, strong=strong)
    return memory(W, s).load(offs, nbytes, tids, wh)


def _vec_parts(ins, op):
    return list(op.items) if isinstance(op, P.Vec) else [op]


def _ld_st_operands(ins, prog, regs_at, addr_at, what):
    """ld / st: (type, vector width, state space, register names, address getter, element bytes); the register
    vector is operand regs_at (`what` names its role in the error) and must hold .v<n> registers."""
    mods = Mods(ins)
    t = mods.type()
    space = space_of(mods)
    vec = int(next((p[1:] for p in mods.parts if p in ("v2", "v4", "v8")), 1))
    a = ins.operands[addr_at]
    space = effective_space(prog, a, space)
    regs = _vec_parts(ins, ins.operands[regs_at])
    if len(regs) != vec:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} has {len(regs)} {what} for .v{vec}")
    return t, vec, space, regs, address(prog, a, ins, space), max(1, t.bits // 8)


def _strong(ins) -> bool:
    """ld/st .volatile, .relaxed, .acquire, .release: morally strong (PTX 8.6), they race only with weak ones."""
    return bool({"volatile", "relaxed", "acquire", "release"} & set(ins.opcode.split(".")))


@register("ld")
def c_ld(ins, prog, pc):
    t, vec, space, dests, get_addr, ebytes = _ld_st_operands(ins, prog, 0, 1, "destinations")
    if t.bits == 128:
        raise PtxSyntaxError(ins.line, ins.col, ".b128 loads are not modelled")
    sets = [prog.write(x, t, ins) for x in dests]
    wh = where(ins)
    cont = CONTAINER[max(t.bits, 8)]
    strong = _strong(ins)
    sem = ("acquire" in ins.opcode.split("."), False, False)

    def op(W, m):
        act = mask_array(m) if m is not None else (W.live if not W.full else None)
        addrs = get_addr(W) if act is None else get_addr(W)[act]
        tids = W.tid if act is None else W.tid[act]
        raw = access(W, space, addrs, tids, ebytes * vec, wh, strong=strong, sem=sem)
        vals = from_bytes(raw, cont)  # (n, vec)
        for i, s in enumerate(sets):
            if act is None:
                s(W, vals[:, i], None)
            else:
                full = np.zeros(32, cont)
                full[act] = vals[:, i]
                s(W, full, act)
    if not strong and space in GANG_SPACES:
        op.gang = ld_gang(space, get_addr, ebytes * vec, cont, sets, wh, slots_of(prog, ins.operands),
                          slots_of(prog, dests))
    elif space == "param":
        op.gang = _param_gang(get_addr, ebytes * vec, cont, sets, slots_of(prog, dests),
                              slots_of(prog, [ins.operands[1]]), wh)
    return op


def _param_gang(get_addr, nbytes, cont, sets, dests, base, wh):
    """op.gang of ld.param where every lane of every warp reads one address (a constant one, or a register holding
    the same offset everywhere: CUTLASS's [%rd+k] into its Params struct): one load of the launch's parameter bytes
    into all the gang's registers at once (lockstep.Batch); other addresses run warp by warp."""
    touched = {c: np.union1d(dests.get(c, np.zeros(0, int)), base.get(c, np.zeros(0, int))) for c in {*dests, *base}}

    def gang(pairs):
        W = pairs[0][0]
        B = Batch([W for W, _ in pairs], touched)
        addrs = get_addr(B if base else W)
        if base and (addrs != addrs.flat[0]).any():
            raise Fallback
        try:
            raw = access(W, "param", np.broadcast_to(addrs.flat[0], (32,)), W.tid, nbytes, wh)
        except TcemuError:
            raise Fallback from None   # each warp's own load reports it
        vals = from_bytes(raw, cont)   # (32, vec): every lane of every warp reads the same bytes
        for i, s in enumerate(sets):
            s(B, vals[:, i], None)
        B.store(dests)
    return gang


@register("st")
def c_st(ins, prog, pc):
    t, vec, space, srcs, get_addr, ebytes = _ld_st_operands(ins, prog, 1, 0, "sources")
    gets = [prog.read(x, t, ins) for x in srcs]
    wh = where(ins)
    strong = _strong(ins)
    sem = (False, "release" in ins.opcode.split("."), False)

    def op(W, m):
        act = m if m is not None else (W.live if not W.full else None)
        vals = np.stack([g(W) for g in gets], axis=1)  # (32, vec)
        addrs = get_addr(W)
        tids = W.tid
        if act is not None:
            vals, addrs, tids = vals[act], addrs[act], tids[act]
        access(W, space, addrs, tids, ebytes * vec, wh, data=pack(vals), strong=strong, sem=sem)

    def pack(vals):   # (lanes, vec) values -> (lanes, ebytes vec) little-endian bytes
        return as_bytes(vals, ebytes * vec) if ebytes == vals.dtype.itemsize else \
            np.ascontiguousarray(vals).view(np.uint8).reshape(vals.shape[0], -1)
    if not strong and space in GANG_SPACES:
        touched = slots_of(prog, ins.operands)
        op.gang = st_gang(space, gets, get_addr, ebytes * vec, pack, wh, touched)
        if op.gang is not None and space == "shared" and ins.guard is None:   # a run of them is one (runs.py)
            def capture(B, nw):
                vals = np.stack([np.broadcast_to(g(B), (nw, 32)) for g in gets], axis=-1)   # (warps, 32, vec)
                return (np.broadcast_to(get_addr(B), (nw, 32)).astype(np.int64), pack(vals.reshape(nw * 32, -1)),
                        wh)
            op.fuse = Fuse(("st.shared", ebytes * vec), touched, capture, shared_store_run)
    return op


@register("prefetch", "prefetchu", "applypriority", "discard", "createpolicy")
def c_prefetch(ins, prog, pc):
    if ins.opcode.startswith("createpolicy"):
        sd = prog.write(ins.operands[0], TYPES["b64"], ins)

        def policy(W, m):  # an opaque cache policy; loads and stores ignore it
            sd(W, np.zeros(32, np.uint64), m)
        return policy
    return lambda W, m: None


# ----------------------------------------------------------------------------------------------- ldmatrix

def _matrix_form(ins, mods):
    shape = mods.one_of(("m8n8", "m16n16", "m8n16", "m16n8"))
    if shape != "m8n8" or mods.type().bits != 16:
        mods.unsupported(f"only .m8n8 .b16 matrices are modelled ({shape})")
    count = mods.one_of(("x1", "x2", "x4"))
    if count is None:  # PTX 9.7.14.5.15-16: .num is required
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: needs the matrix count .x1, .x2 or .x4")
    num = {"x1": 1, "x2": 2, "x4": 4}[count]
    return num, "trans" in mods


def _row_addresses(W, get_addr, num, generic, wh):
    """Row r of matrix i comes from the address in thread 8 i + r (PTX 9.7.14.5.15); without a state space the
    address is generic and must point into .shared; rows of 8 16-bit elements are 16-byte aligned."""
    a = get_addr(W)[:8 * num]
    if generic:
        base = np.uint64(WINDOWS["shared"])
        outside = (a < base) | (a >= base + np.uint64(WINDOW_SIZE))
        if outside.any():
            j = int(np.flatnonzero(outside)[0])
            raise MemoryFault(wh, f"thread {int(W.tid[j])}: generic address {int(a[j]):#x} is not in the shared "
                                  "window")
        a = a - base
    a = a.astype(np.int64)
    if (a % 16).any():
        j = int(np.flatnonzero(a % 16)[0])
        raise MemoryFault(wh, f"thread {int(W.tid[j])}: row address {int(a[j]):#x} is not aligned to 16 bytes")
    return a.reshape(num, 8)


def _matrix_operands(ins, prog, name, verb, regs_at, addr_at):
    """ldmatrix (verb "writes") / stmatrix ("reads"): (num, trans, b32 register setters / getters, rows(W, m),
    where); the register vector is operand regs_at and must hold one register per matrix, the address is
    operand addr_at; rows checks that the whole warp executes and gives the (num, 8) row addresses in the
    shared window."""
    mods = Mods(ins)
    num, trans = _matrix_form(ins, mods)
    regs = _vec_parts(ins, ins.operands[regs_at])
    if len(regs) != num:
        raise PtxSyntaxError(ins.line, ins.col, f"{name} .x{num} {verb} {num} registers")
    space = space_of(mods)
    get_addr = address(prog, ins.operands[addr_at], ins, space)
    access_reg = prog.write if verb == "writes" else prog.read
    fns = [access_reg(x, TYPES["b32"], ins) for x in regs]
    wh = where(ins)

    def rows(W, m):
        whole_warp(m, wh, ins.opcode.split(".")[0])
        return _row_addresses(W, get_addr, num, space == "generic", wh)
    rows.get_addr, rows.generic = get_addr, space == "generic"
    return num, trans, fns, rows, wh


@register("ldmatrix")
def c_ldmatrix(ins, prog, pc):
    num, trans, sets, rows_of, wh = _matrix_operands(ins, prog, "ldmatrix", "writes", 0, 1)

    def op(W, m):
        rows = rows_of(W, m)
        raw = W.cta.shared.load(rows.reshape(-1), 16, W.tid[:8 * num], wh, W)  # (8 num, 16) bytes
        v = fragments(raw, 1, num, trans)[0]   # (num, 32)
        for i, s in enumerate(sets):
            s(W, v[i], None)
    op.gang = ldmatrix_gang(num, trans, sets, rows_of.get_addr, rows_of.generic, wh, slots_of(prog, ins.operands),
                            slots_of(prog, ins.operands[:1]))
    if op.gang is not None and ins.guard is None:   # ldmatrix of this form in a run (runs.py) are one
        get_addr, generic = rows_of.get_addr, rows_of.generic

        def capture(B, nw):
            return matrix_offsets(np.broadcast_to(get_addr(B), (nw, 32))[:, :8 * num], generic), sets, wh
        regs = slots_of(prog, ins.operands)
        op.fuse = Fuse(("ldmatrix", num, trans, generic), regs, capture, ldmatrix_run(num, trans),
                       slots_of(prog, ins.operands[:1]))
    return op


@register("stmatrix")
def c_stmatrix(ins, prog, pc):
    num, trans, gets, rows_of, wh = _matrix_operands(ins, prog, "stmatrix", "reads", 1, 0)

    def op(W, m):
        rows = rows_of(W, m)
        mats = np.zeros((num, 8, 8), np.uint16)
        for i, g in enumerate(gets):
            v = g(W)
            mt = np.zeros((8, 8), np.uint16)
            mt[_FRAG_ROW, _FRAG_COL] = (v & np.uint32(0xFFFF)).astype(np.uint16)
            mt[_FRAG_ROW, _FRAG_COL + 1] = (v >> np.uint32(16)).astype(np.uint16)
            mats[i] = mt.T if trans else mt
        raw = np.ascontiguousarray(mats.reshape(num * 8, 8)).view(np.uint8)
        W.cta.shared.store(rows.reshape(-1), raw, W.tid[:8 * num], wh, W=W)
    op.gang = stmatrix_gang(num, trans, gets, rows_of.get_addr, rows_of.generic, wh, slots_of(prog, ins.operands))
    return op


# ----------------------------------------------------------------------------------------------- atomics

# atom / red with a vector type (PTX 9.7.13.5-6; PTX ISA 8.1, sm_90, .global only): allowed vector sizes per
# type and operation (the ISA's table, and ptxas 13.0: "Only .v2 or .v4 ... with type .f16x2 on .add")
_VECTOR_FORMS = {"f32": ((2, 4), ("add",)), "f16": ((2, 4, 8), ("add", "min", "max")),
                 "bf16": ((2, 4, 8), ("add", "min", "max")), "f16x2": ((2, 4), ("add", "min", "max")),
                 "bf16x2": ((2, 4), ("add", "min", "max"))}
_HALF = ("f16", "bf16", "f16x2", "bf16x2")


def _atomic_fn(op_name, t):
    """new = fn(old, b, c, in_global) on unsigned containers, one row per vector element."""
    bits = t.bits
    if bits not in CONTAINER:  # .b128 (atom.cas / exch, PTX 8.3): refused as unsupported by the caller
        return None
    cont = CONTAINER[bits]
    if t.kind == "f":
        if t.name == "f32" and op_name == "add":
            # rounds to nearest even; on global memory subnormal inputs and results are flushed to a zero of the
            # same sign, on shared memory kept (PTX 9.7.13.5). NaN: the canonical 0x7fffffff of add.f32 (assumed)
            return lambda old, b, c, in_global: fparith.float_op("add", "f32", old, b, rounding="rn",
                                                                 ftz=in_global)
        if t.name in _HALF and op_name in ("add", "min", "max"):
            # .noftz: the add.rn / min / max of f16, bf16 and their x2 forms, subnormals kept (PTX 9.7.13.5);
            # NaN results canonical (0x7fff per half), as those instructions give (assumed for the atomic unit)
            return lambda old, b, c, in_global: fparith.float_op(op_name, t.name, old, b)
        if t.name == "f64" and op_name == "add":
            return lambda old, b, c, in_global: (old.view(np.float64) + b.view(np.float64)).view(cont)
        return None
    sv = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}[bits]
    fns = {
        "add": lambda o, b, c: (o + b).astype(cont),
        "and": lambda o, b, c: o & b, "or": lambda o, b, c: o | b, "xor": lambda o, b, c: o ^ b,
        "exch": lambda o, b, c: b,
        "cas": lambda o, b, c: np.where(o == b, c, o).astype(cont),
        "inc": lambda o, b, c: np.where(o >= b, 0, o + 1).astype(cont),
        "dec": lambda o, b, c: np.where((o == 0) | (o > b), b, o - 1).astype(cont),
        "min": (lambda o, b, c: np.minimum(o.view(sv), b.view(sv)).view(cont)) if t.signed else
               (lambda o, b, c: np.minimum(o, b)),
        "max": (lambda o, b, c: np.maximum(o.view(sv), b.view(sv)).view(cont)) if t.signed else
               (lambda o, b, c: np.maximum(o, b)),
    }
    fn = fns.get(op_name)
    return None if fn is None else (lambda old, b, c, in_global: fn(old, b, c))


def _atom_form(ins, prog, mods, t, name, vec, space):
    """Refuse the float and vector forms ptxas 13.0 refuses, naming the rule."""
    def bad(rule):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: {rule}")
    half = t.name in _HALF
    if "noftz" in mods and not half:
        bad(".noftz applies to .f16 .bf16 .f16x2 .bf16x2 only")
    if half and "noftz" not in mods:
        bad(f".{t.name} needs .noftz (atom/red.add.noftz.{t.name})")
    if t.name.startswith("bf16"):
        require_target(ins, prog, f"{name}.{t.name}", lambda sm: sm[0] >= 90, "sm_90 or higher")
    if vec == 1:
        if half and name != "add":
            bad(f".{name}.{t.name} exists only with a vector qualifier (.v2 .v4{' .v8' if '2' not in t.name else ''})")
        return
    require_target(ins, prog, "atom/red with a vector type", lambda sm: sm[0] >= 90, "sm_90 or higher")
    require_ptx(ins, prog, "atom/red with a vector type", "8.1")
    sizes, ops = _VECTOR_FORMS.get(t.name, ((), ()))
    if not sizes:
        bad(f"vector atom/red takes .f32 .f16 .bf16 .f16x2 .bf16x2, not .{t.name}")
    if name not in ops:
        bad(f"vector atom/red on .{t.name} is {' '.join('.' + o for o in ops)} only")
    if vec not in sizes:
        bad(f".v{vec} on .{t.name}: vector sizes are {' '.join(f'.v{v}' for v in sizes)}")
    if space != "global" and space != "generic":
        bad(f"vector atom/red addresses .global only, not .{space}")


def _vector(ins, op, vec, what):
    items = list(op.items) if isinstance(op, P.Vec) else [op]
    if vec > 1 and (not isinstance(op, P.Vec) or len(items) != vec):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: {what} is a brace vector of {vec} for .v{vec}, "
                                                f"got {P.fmt(op)}")
    if vec == 1 and isinstance(op, P.Vec):
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: {what} is a vector; the opcode names no .v2/.v4/.v8")
    return items


@register("atom", "red")
def c_atom(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    space = space_of(mods)
    is_red = ins.opcode.startswith("red")
    name = mods.one_of(("add", "and", "or", "xor", "exch", "cas", "inc", "dec", "min", "max"))
    vec = int(next((p[1:] for p in mods.parts if p in ("v2", "v4", "v8")), 1))
    _atom_form(ins, prog, mods, t, name, vec, space)
    fn = _atomic_fn(name, t)
    if fn is None:
        mods.unsupported(f"{name} on .{t.name}")
    ops = ins.operands
    if name == "exch" and len(ops) == 4 and "L2::cache_hint" not in mods:
        # ptxas 13.0/13.4 take atom.exch.b32 d, [a], b, c with c any 32-bit register; the PTX ISA documents no
        # such form (probe_operand_counts.py), so its meaning is not guessed
        mods.unsupported("atom.exch with a fourth operand (accepted by ptxas, undocumented)")
    if is_red:
        a, b = ops[0], ops[1]
        c = None
        dest = None
    else:
        dest, a, b = ops[0], ops[1], ops[2]
        c = ops[3] if name == "cas" else None
    get_addr = address(prog, a, ins, space)
    gbs = [prog.read(x, t, ins) for x in _vector(ins, b, vec, "b")]
    gc = prog.read(c, t, ins) if c is not None else None
    sds = None if dest is None else [prog.write(x, t, ins) for x in _vector(ins, dest, vec, "d")]
    ebytes = t.bits // 8
    nbytes = ebytes * vec
    wh = where(ins)
    cont = CONTAINER[t.bits]
    flushes = t.name == "f32"   # atom.add.f32 flushes subnormals on global memory only
    parts = set(ins.opcode.split("."))
    acq, rel = bool({"acquire", "acq_rel"} & parts), bool({"release", "acq_rel"} & parts)
    int_add = name == "add" and t.kind != "f"

    def op(W, m):
        act = mask_array(m) if m is not None else (W.live if not W.full else np.ones(32, bool))
        addrs = get_addr(W)
        bv = np.stack([g(W) for g in gbs], axis=1)  # (32, vec)
        cv = gc(W)[:, None] if gc is not None else bv
        out = np.zeros((32, vec), cont)
        lanes = np.flatnonzero(act)
        if lanes.size:
            lands = space if space != "generic" else _one_space(addrs[lanes])
            if lands is None:   # lanes in several windows: one lane after another
                for k, lane in enumerate(lanes.tolist()):
                    _atom_lanes(W, lanes[k:k + 1], addrs, bv, cv, out, generic_space(int(addrs[lane])))
            else:
                _atom_lanes(W, lanes, addrs, bv, cv, out, lands)
        if sds is not None:
            for i, sd in enumerate(sds):
                sd(W, out[:, i], act)

    def _atom_lanes(W, lanes, addrs, bv, cv, out, lands):
        """The atomic of `lanes` (all in state space `lands`): each address is read once and written once, and the
        lanes that share it apply their operation one after another in lane order (the order among one
        instruction's lanes is unspecified, PTX 9.7.13.5; tcemu's is lane order)."""
        uniq, order, heads, gid = _atom_groups(addrs[lanes])
        sl = lanes[order]           # the lanes by address, in lane order within each
        tid = W.tid[sl[heads]]      # each address's first lane names its access
        if vec > 1 and lands != "global":
            raise MemoryFault(wh, f"thread {int(tid[0])}: a vector atom/red needs a global address; generic "
                                  f"address {int(uniq[0]):#x} is in the {lands} window")
        cur = from_bytes(access(W, space, uniq, tid, nbytes, wh, strong=True, sem=(acq, False, True)), cont).copy()
        ftz = flushes and lands == "global"
        if int_add:   # integer add: each lane's old value is the address's value plus its earlier lanes' sum
            b = bv[sl]
            excl = np.cumsum(b, axis=0, dtype=np.uint64) - b
            excl -= excl[heads][gid]
            out[sl] = (cur[gid] + excl).astype(cont)
            np.add.at(cur, gid, b)
        else:
            rank = np.arange(sl.size) - heads[gid]   # each lane's place in its address's run
            for r in range(int(rank.max()) + 1):
                at = rank == r
                g, sel = gid[at], sl[at]
                out[sel] = cur[g]
                cur[g] = np.asarray(fn(cur[g], bv[sel], cv[sel], ftz)).reshape(len(sel), vec)
        access(W, space, uniq, tid, nbytes, wh, data=as_bytes(cur, nbytes), strong=True, sem=(False, rel, True))
    return op


def _atom_groups(addrs):
    """The lanes (indices into addrs) by address: (the distinct addresses, the order that sorts the lanes by
    address, lane order kept within one, where each address's run starts in that order, each sorted lane's
    address index)."""
    order = np.argsort(addrs, kind="stable")
    sa = addrs[order]
    start = np.ones(sa.size, bool)
    start[1:] = sa[1:] != sa[:-1]
    heads = np.flatnonzero(start)
    return sa[heads], order, heads, np.cumsum(start) - 1


def _one_space(addrs):
    """The state space every generic address of `addrs` lies in, or None where they lie in several."""
    spaces = {generic_space(int(a)) for a in np.unique(addrs)}
    return spaces.pop() if len(spaces) == 1 else None


_ = resize


# ----------------------------------------------------------------------------------------------- clusters

def shared_target(W, addr: int, space: str, wh: str):
    """(CTA, shared offset) that a shared::cta, shared::cluster or generic address names."""
    addr = int(addr)
    if space == "generic":
        if not WINDOWS["shared"] <= addr < WINDOWS["shared"] + WINDOW_SIZE:
            raise MemoryFault(wh, f"generic address {addr:#x} is not in the shared window")
        addr -= WINDOWS["shared"]
        space = "shared::cluster"
    if space != "shared::cluster" or addr < 1 << CLUSTER_SHIFT:
        return W.cta, addr & ((1 << CLUSTER_SHIFT) - 1) if space == "shared::cluster" else addr
    rank = (addr >> CLUSTER_SHIFT) - 1
    cl = W.cta.cluster
    if not 0 <= rank < len(cl):
        raise MemoryFault(wh, f"shared::cluster address {addr:#x} names CTA rank {rank}; the cluster has {len(cl)}")
    return cl[rank], addr & ((1 << CLUSTER_SHIFT) - 1)


def cluster_space(mods: Mods) -> str:
    """shared::cta / shared::cluster / generic for instructions whose operand is an mbarrier or a stage."""
    for p in mods.parts:
        if p == "shared::cluster":
            return "shared::cluster"
        if p in ("shared", "shared::cta"):
            return "shared::cta"
    return "generic"


@register("getctarank")
def c_getctarank(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    d, a = operands(ins, 2)
    ga, sd = prog.read(a, t, ins), prog.write(d, TYPES["u32"], ins)
    generic = "shared::cluster" not in mods
    base = np.uint64(WINDOWS["shared"])

    def op(W, m):
        v = ga(W).astype(np.uint64)
        off = (v - base) if generic else v
        rank = (off >> np.uint64(CLUSTER_SHIFT)).astype(np.int64)
        sd(W, np.where(rank == 0, W.cta.rank, rank - 1).astype(np.uint32), m)
    return op


@register("mapa")
def c_mapa(ins, prog, pc):
    mods = Mods(ins)
    t = mods.type()
    d, a, b = operands(ins, 3)
    ga, gb, sd = prog.read(a, t, ins), prog.read(b, TYPES["u32"], ins), prog.write(d, t, ins)
    generic = "shared::cluster" not in mods
    base = np.uint64(WINDOWS["shared"])
    wh = where(ins)

    def op(W, m):   # (private: a lock-step batch's warps are of one launch, whose clusters are alike)
        v = ga(W).astype(np.uint64)
        rank = gb(W).astype(np.uint64)
        act = mask_array(m) & W.live
        ctas = len((W.warps[0] if W.__class__ is Batch else W).cta.cluster)
        if (rank[act] >= np.uint64(ctas)).any():
            raise MemoryFault(wh, f"mapa to CTA rank {int(rank[act].max())}; the cluster has {ctas}")
        off = ((v - base) if generic else v) & np.uint64((1 << CLUSTER_SHIFT) - 1)
        r = ((rank + np.uint64(1)) << np.uint64(CLUSTER_SHIFT)) | off
        sd(W, (r + base if generic else r).astype(CONTAINER[t.bits]), m)
    return op
