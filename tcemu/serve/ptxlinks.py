"""What one traced PTX instruction did to shared memory, for the PTX view of `tcemu serve`: the lanes'
addresses and bank wavefronts of ld/st.shared, ldmatrix and stmatrix (tcemu.banks.bank_conflicts), the operand
descriptors of wgmma.mma_async / tcgen05.mma and the box of a TMA load, each with the field values that open the
banks, descriptor or TMA view on them (the warp's actual values).

Read from the warp's registers right after the instruction ran (the launch's trace hook): an address register
that the instruction itself overwrote (ld.shared %r1, [%r1]) no longer holds the address, and says so.
Register typed values (`typed`) follow the register's declared type (PTX 5.2 fundamental types).
"""
import numpy as np

from ..core.errors import TcemuError
from ..layout.banks import bank_conflicts, parse_op
from ..ptx import parser as P
from ..ptx import tensormap as TM
from ..ptx.ops.bulk import _read_map  # reads the 128-byte map as the TMA instruction did (no side effects)
from ..ptx.ops.memory_ops import address, shared_target
from ..ptx.program import CLASS_ATTR

SHARED_ADDR_BITS = 24   # tcemu's shared::cta addresses are offsets in the CTA's window (memory_ops.shared_target)
_TMA_DTYPES = {0: "u8", 1: "bf16", 6: "f16", 10: "bf16", 11: "tf32", 12: "tf32", 7: "tf32", 8: "tf32"}


def typed(values: np.ndarray, typ: str, ran: np.ndarray) -> list:
    """Strings of a register's 32 lanes as its declared type reads them (None where the lane did not run):
    .pred true/false, .f16/.bf16/.f32/.f64 as floats, .s* signed, .u* unsigned decimal, .b* hex."""
    v = np.asarray(values)
    t = typ.lstrip(".")
    if t == "pred":
        out = ["true" if x else "false" for x in v.tolist()]
    elif t in ("f32", "f64", "f16"):
        bits = {"f32": np.uint32, "f64": np.uint64, "f16": np.uint16}[t]
        out = [str(x) for x in v.astype(bits).view({"f32": np.float32, "f64": np.float64, "f16": np.float16}[t])]
    elif t == "bf16":
        out = [str(x) for x in (v.astype(np.uint32) << 16).view(np.float32)]
    elif t[0] == "s" and t[1:].isdigit():
        n = int(t[1:])
        u = v.astype(np.uint64)
        if n == 64:
            sv = u.view(np.int64)
        else:
            sv = (u & np.uint64((1 << n) - 1)).astype(np.int64)
            sv = np.where(sv >= 1 << (n - 1), sv - (1 << n), sv)
        out = [str(x) for x in sv.tolist()]
    elif t[0] == "u" and t[1:].isdigit():
        out = [str(int(x)) for x in v.tolist()]
    else:
        digits = max(int(t[1:]) // 4, 1) if t[1:].isdigit() else 8
        out = [f"{int(x):#0{digits + 2}x}" for x in v.tolist()]
    return [s if on else None for s, on in zip(out, ran.tolist())]


def _addr_operand(ins):
    return next((o for o in ins.operands if isinstance(o, P.Addr)), None)


def _reg_value(prog, w, op, lane: int):
    """The value of a register or immediate operand in one lane (None for anything else)."""
    if isinstance(op, P.Imm):
        return int(op.value)
    if isinstance(op, P.Reg) and op.name in prog.slots:
        s = prog.slots[op.name]
        return int(getattr(w, CLASS_ATTR[s.cls])[s.index][lane])
    return None


def _dest_names(ins):
    first = ins.operands[0] if ins.operands else None
    items = first.items if isinstance(first, P.Vec) else [first]
    return {o.name for o in items if isinstance(o, P.Reg)}


def _shared_access(prog, ins, w, ran):
    """ld/st.shared, ldmatrix, stmatrix: each lane's shared address and the bank wavefronts they cost."""
    op = parse_op(ins.opcode)
    a = _addr_operand(ins)
    if isinstance(a.base, P.Reg) and op.kind in ("ld", "ldmatrix") and a.base.name in _dest_names(ins):
        return {"kind": "shared", "op": op.name, "note": f"the load overwrote its address register {a.base.name.split('@')[0]}"}
    addrs = address(prog, a, ins, "shared::cta")(w).astype(np.int64) & ((1 << SHARED_ADDR_BITS) - 1)
    mask = int(sum(1 << i for i in np.flatnonzero(ran)))
    if op.matrices:   # ldmatrix / stmatrix: threads 0..8x-1 give the row addresses whoever runs
        mask = 0xFFFFFFFF
    rep = bank_conflicts(op, addrs[:32], mask=mask)
    used = [t for t in range(op.threads_used) if op.matrices or mask >> t & 1]
    return {"kind": "shared", "op": op.name, "wavefronts": rep.wavefronts, "ideal": rep.ideal,
            "conflicts": rep.conflicts, "addresses": [int(addrs[t]) for t in used],
            "view": "banks", "values": {"op": op.name, "source": "addresses", "mask": f"{mask:#x}",
                                        "addresses": " ".join(f"{int(x):#x}" for x in addrs[:op.threads_used])}}


def _first_lane(ran):
    on = np.flatnonzero(ran)
    return int(on[0]) if on.size else 0


def _wgmma(prog, ins, w, ran):
    """wgmma.mma_async: the shared-memory descriptors of A (when A is not in registers) and B (PTX 9.7.15.5)."""
    parts = ins.opcode.split(".")
    shape = next(p for p in parts if p.startswith("m64n"))
    n, k = (int(x) for x in shape[4:].split("k"))
    ta, tb = parts[-2], parts[-1]
    ops = ins.operands
    lane = _first_lane(ran)
    a_in_regs = isinstance(ops[1], P.Vec)
    # immediates after scale-d: imm-scale-a, imm-scale-b[, imm-trans-a, imm-trans-b] (f16 / bf16 only)
    tail = [o.value for o in ops[4:] if isinstance(o, P.Imm)]
    trans = tail[2:4] if not a_in_regs else [0] + tail[2:3]
    out = []
    for which, op, dtype, rows, t in (("a", ops[1], ta, 64, trans[0] if trans else 0),
                                      ("b", ops[2], tb, n, trans[1] if len(trans) > 1 else 0)):
        if which == "a" and a_in_regs:
            continue
        v = _reg_value(prog, w, op, lane)
        if v is None:
            continue
        out.append({"kind": "descriptor", "operand": which.upper(), "descriptor": f"{v & (1 << 64) - 1:#018x}",
                    "view": "descriptor",
                    "values": {"arch": "sm90", "descriptor": f"{v & (1 << 64) - 1:#018x}", "dtype": dtype,
                               "major": "MN" if t else "K", "rows": str(rows), "k": str(k), "operand": which}})
    return out


def _tcgen05_mma(prog, ins, w, ran):
    """tcgen05.mma: the descriptors of A (unless A is in tensor memory) and B with the instruction descriptor
    (PTX 9.7.16.10.8)."""
    parts = ins.opcode.split(".")
    kind = next((p.split("::")[1] for p in parts if p.startswith("kind::")), None)
    ops = ins.operands
    if kind is None or len(ops) < 4:
        return []
    lane = _first_lane(ran)
    idesc = _reg_value(prog, w, ops[3], lane)
    arch = "sm103" if any(t.startswith("sm_103") for t in getattr(prog, "target", ())) else "sm100"
    out = []
    for which, op in (("a", ops[1]), ("b", ops[2])):
        v = _reg_value(prog, w, op, lane)
        if v is None or idesc is None:
            continue
        values = {"arch": arch, "descriptor": f"{v & (1 << 64) - 1:#018x}", "instr": f"{idesc & 0xFFFFFFFF:#x}",
                  "kind": kind, "operand": which}
        out.append({"kind": "descriptor", "operand": which.upper(), "descriptor": values["descriptor"],
                    "view": "descriptor", "values": values})
    return out


def _tma(prog, ins, w, ran):
    """cp.async.bulk.tensor (a load into shared memory): the map's tensor and box, the coordinates and the shared
    address, as the TMA view takes them (PTX 9.7.9.25.5.2)."""
    parts = ins.opcode.split(".")
    if not next((p for p in parts if p.startswith(("shared", "global"))), "").startswith("shared"):
        return []
    dst, mapop = ins.operands[0], ins.operands[1]
    lane = _first_lane(ran)
    base_is_param = isinstance(mapop.base, P.Sym) and prog.symbols.get(mapop.base.name, (None,))[0] == "param"
    maddr = address(prog, P.Addr(mapop.base, mapop.offset), ins, "param" if base_is_param else "generic")(w)[lane]
    tm = TM.decode(_read_map(w, maddr, base_is_param, "trace"))
    space = "shared::cluster" if "shared::cluster" in parts else "shared::cta"
    _, off = shared_target(w, address(prog, dst, ins, space)(w)[lane], space, "trace")
    coords = [np.int32(np.uint32(_reg_value(prog, w, c, lane) & 0xFFFFFFFF)).item() for c in mapop.vec.items]
    dtype = _TMA_DTYPES.get(tm.elemtype, {1: "u8", 2: "bf16", 4: "tf32"}.get(tm.element_bytes, "u8"))
    arch = "sm90" if not tm.swizzle_atomicity else "sm100"
    values = {"arch": arch, "dtype": dtype, "dims": "x".join(map(str, tm.global_dim)),
              "box": "x".join(map(str, tm.box_dim)), "coords": ",".join(map(str, coords)),
              "element_strides": ",".join(map(str, tm.element_stride)), "swizzle": TM.swizzle_name(tm),
              "smem_addr": f"{int(off):#x}"}
    return [{"kind": "tma", "elemtype": TM.ELEM_NAMES.get(tm.elemtype, str(tm.elemtype)), "smem_addr": int(off),
             "view": "tma", "values": values}]


def links(prog, ins, w, ran) -> list:
    """[{kind, view, values, ...}] for one executed instruction of the traced warp ([] for any other kind)."""
    head = ins.opcode.split(".")[0]
    parts = ins.opcode.split(".")
    try:
        if head in ("ld", "st") and any(p in ("shared", "shared::cta") for p in parts) and _addr_operand(ins):
            return [_shared_access(prog, ins, w, ran)]
        if head in ("ldmatrix", "stmatrix") and _addr_operand(ins):
            return [_shared_access(prog, ins, w, ran)]
        if ins.opcode.startswith("wgmma.mma_async"):
            return _wgmma(prog, ins, w, ran)
        if ins.opcode.startswith("tcgen05.mma") and not ins.opcode.startswith("tcgen05.mma.ws"):
            return _tcgen05_mma(prog, ins, w, ran)
        if ins.opcode.startswith("cp.async.bulk.tensor"):
            return _tma(prog, ins, w, ran)
    except (TcemuError, StopIteration, ValueError, IndexError, TypeError, AttributeError) as e:
        # a form this reader does not know (the instruction itself ran): say so on the row, never fail the run
        return [{"kind": "unknown", "note": f"not analysed ({type(e).__name__}: {str(e)[:120]})"}]
    return []
