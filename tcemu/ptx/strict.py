"""Compile-time legality checks that ptxas makes and the instruction compilers do not: operand register
types (PTX ISA 5.4.5 "Operand Type Information", 6.4.1 "Operand Size Exceeding Instruction-Type Size"),
guards, state spaces, targets, barrier ids and operand counts. Each refusal is a PtxSyntaxError worded
close to ptxas 13.0's message; the rules were measured against ptxas (tests/fixtures/strict/)."""
from typing import Dict, List, Optional

from . import parser as P
from .errors import PtxSyntaxError, PtxUnsupported
from .types import TYPES

# -- operand types ---------------------------------------------------------------------------------------

_SAME_TYPE = {"add", "sub", "min", "max", "mul", "mad", "fma", "neg", "abs", "and", "or", "xor", "not", "mov",
              "selp", "div", "rem"}
_RELAXED = {"ld", "st", "cvt"}   # PTX 6.4.1: the register may be wider than the instruction type


def compatible(itype: str, rtype: str, relaxed: bool = False) -> bool:
    """May a register declared .rtype be an operand of instruction type .itype? (PTX ISA 5.4.5 and 6.4.1,
    as ptxas 13.0 applies them; a .f16x2 register counts as a 32-bit integer one there, except for a shift
    amount or a shfl membermask, marked "u32!". ptxas also lets a .f16x2 register be a .pred operand of
    and/or/xor/not/mov: refused here, as the PTX ISA says.)"""
    if itype == "u32!":
        return rtype in ("b32", "u32", "s32")
    if itype == "pred" or rtype == "pred":
        return itype == rtype
    it, rt = TYPES.get(itype), TYPES.get(rtype)
    if it is None or rt is None or it.bits > 64 or rt.bits > 64:
        return True   # b128, vectors of sub-byte formats ...: not checked here
    rk = "u" if rtype == "f16x2" else rt.kind
    ik = "u" if it.kind == "s" else it.kind
    rk = "u" if rk == "s" else rk
    if rt.bits == it.bits:
        return ik == "b" or rk == "b" or (ik == rk == "u") or (ik == "f" and itype == rtype) or \
            (itype == "f16x2" and rtype == "f16x2")
    if relaxed and rt.bits > it.bits:
        return ik == "b" or rk == "b" or (ik == "u" and rk == "u")
    return False


def _types(parts: List[str]) -> List[str]:
    return [p for p in parts if p in TYPES]


def natural_types(ins: P.Instruction) -> Optional[List[Optional[str]]]:
    """The type each operand of `ins` has in PTX (None: not a register of a checked type), for the common
    instructions; None for instructions not checked here."""
    parts = ins.opcode.split(".")
    base, types = parts[0], _types(parts[1:])
    if not types:
        return None
    t = types[-1]
    n = len(ins.operands)
    if "L2::cache_hint" in parts:  # a trailing .b64 cache-policy operand (PTX ISA 9.7.9.8)
        rest = natural_types(_without_policy(ins))
        return None if rest is None else rest + ["b64"]
    if base in ("shl", "shr") and n == 3:
        return [t, t, "u32!"]
    if base == "setp":
        return ["pred", t, t] + ["pred"] * (n - 3)
    if base == "selp" and n == 4:
        return [t, t, t, "pred"]
    if base == "cvt" and len(types) == 2 and n == 2:
        return [types[0], types[1]]
    if base == "shfl" and t == "b32" and n == 5:
        return ["b32", "b32", "b32", "b32", "u32!"]
    if base in ("mul", "mad") and "wide" in parts:
        w = t[0] + str(TYPES[t].bits * 2)
        return [w, t, t] + ([w] if base == "mad" else [])
    if base in _SAME_TYPE and base not in ("mov",):
        return [t] * n
    if base == "mov" and n == 2:
        return [t, t]
    if base == "atom" and n in (3, 4) and not any(p.startswith("v") and p[1:].isdigit() for p in parts):
        return [t, None] + [t] * (n - 2)
    if base == "red" and n == 2 and not any(p.startswith("v") and p[1:].isdigit() for p in parts):
        return [None, t]
    if base in ("ld", "st") and n == 2 and len(types) == 1:
        return [t, None] if base == "ld" else [None, t]
    return None


def _without_policy(ins: P.Instruction) -> P.Instruction:
    parts = [p for p in ins.opcode.split(".") if p != "L2::cache_hint"]
    return P.Instruction(".".join(parts), ins.operands[:-1], ins.guard, ins.line, ins.col, ins.loc, ins.scope)


def _regs(op):
    """(register, is a vector element) pairs of an operand the type rule applies to."""
    if isinstance(op, P.Reg):
        return [op]
    if isinstance(op, P.Not):
        return _regs(op.item)
    if isinstance(op, P.Vec):
        return [x for x in op.items if isinstance(x, P.Reg)]
    return []


def check_operand_types(ins: P.Instruction, reg_types: Dict[str, str]):
    nat = natural_types(ins)
    if nat is None:
        return
    relaxed = ins.opcode.split(".")[0] in _RELAXED
    for i, (op, t) in enumerate(zip(ins.operands, nat)):
        if t is None:
            continue
        if isinstance(op, P.Pair):  # d|p: the value at t, the predicate .pred
            pairs = [(op.first, t), (op.second, "pred")]
        else:
            pairs = [(op, t)]
        for o, want in pairs:
            if isinstance(o, P.Vec) and ins.opcode.startswith("mov"):
                continue  # mov.b64 d, {a, b}: packing, halves checked by the compiler
            for r in _regs(o):
                have = reg_types.get(r.name)
                if have is not None and not compatible(want, have, relaxed):
                    raise PtxSyntaxError(ins.line, ins.col, f"Arguments mismatch for instruction "
                                         f"'{ins.opcode.split('.')[0]}': operand {i + 1} {P.fmt(r)} is declared "
                                         f".{have}, not compatible with .{want.rstrip('!')} (PTX ISA 5.4.5, 6.4.1)")


def check_guard(ins: P.Instruction, reg_types: Dict[str, str]):
    """PTX ISA 9.3: a guard is a .pred register."""
    if ins.guard and reg_types.get(ins.guard[0], "pred") != "pred":
        raise PtxSyntaxError(ins.line, ins.col, f"Predicate expression expected: guard {ins.guard[0].split('@')[0]}"
                                                f" is declared .{reg_types[ins.guard[0]]}, not .pred")


# -- state spaces and modifiers of memory instructions (PTX ISA 5.1, 9.7.9) -----------------------------------

SPACES = {"global", "shared", "local", "param", "const", "shared::cta", "shared::cluster", "param::entry",
          "param::func", "generic"}
_MEM = {"ld", "st", "atom", "red", "cvta", "isspacep", "prefetch", "prefetchu", "ldu"}
_MODS = {"weak", "volatile", "relaxed", "acquire", "release", "sc", "acq_rel", "mmio", "cta", "cluster", "gpu",
         "sys", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc", "v2", "v4", "v8", "to", "add", "min", "max", "inc",
         "dec", "and", "or", "xor", "exch", "cas", "noftz", "ftz", "rn", "unified", "L1", "L2", "tensormap",
         "relaxed", "level", "async", "sync", "aligned", "bf16", "bf16x2", "f16", "f16x2", "e4m3", "e5m2", "bulk"}
_HEADS = {"L1", "L2", "level", "tensormap", "cache_hint", "mbarrier", "bulk_group"}


def check_spaces(ins: P.Instruction):
    parts = ins.opcode.split(".")
    if parts[0] not in _MEM:
        return
    for p in parts[1:]:
        head = p.split("::")[0]
        if p in SPACES or p in TYPES or p in _MODS or head in _HEADS:
            continue
        if "::" in p and head not in SPACES:  # a qualifier tcemu does not know: valid PTX is not refused
            raise PtxUnsupported(ins.opcode, f"modifier .{p} is not modelled ({ins.where()})")
        raise PtxSyntaxError(ins.line, ins.col, f"Unknown modifier '.{p}' of {parts[0]} (state spaces: PTX ISA 5.1)")
    if parts[0] == "cvta" and any(p in TYPES and p not in ("u32", "u64") for p in parts[1:]):
        raise PtxSyntaxError(ins.line, ins.col, f"Unexpected instruction types specified for '{ins.opcode}' "
                                                "(cvta takes .u32 or .u64, PTX ISA 9.7.9.17)")
    if parts[0] in ("cvta", "isspacep") and not any(p in SPACES for p in parts[1:]):
        raise PtxSyntaxError(ins.line, ins.col, f"State space modifier required for instruction '{parts[0]}'")


# -- targets (PTX ISA 9.7 "Target ISA notes" of each instruction) ---------------------------------------------

def _sm(target) -> Optional[tuple]:
    for t in target or ():
        if t.startswith("sm_"):
            num = "".join(ch for ch in t[3:] if ch.isdigit())
            return int(num), t[3 + len(num):]
    return None


_FEATURES = [  # (opcode prefix, ok(sm), what ptxas wants)
    ("wgmma.", lambda s: s == (90, "a"), "sm_90a"),
    ("setmaxnreg", lambda s: s[0] >= 90 and s[1] in ("a", "f"), "sm_90a, sm_100a or another a/f target"),
    ("tcgen05.", lambda s: 100 <= s[0] < 120 and s[1] in ("a", "f"), "sm_100a, sm_103a or the sm_100f family"),
    ("elect", lambda s: s[0] >= 90, "sm_90 or higher"),
    ("mbarrier.expect_tx", lambda s: s[0] >= 90, "sm_90 or higher"),
    ("mbarrier.arrive.expect_tx", lambda s: s[0] >= 90, "sm_90 or higher"),
    ("cp.async.bulk", lambda s: s[0] >= 90, "sm_90 or higher"),
    ("fence.proxy.async", lambda s: s[0] >= 90, "sm_90 or higher"),
]


def check_target(ins: P.Instruction, target):
    sm = _sm(target)
    if sm is None:
        return
    for prefix, ok, needs in _FEATURES:
        if (ins.opcode + ".").startswith(prefix) and not ok(sm):
            raise PtxSyntaxError(ins.line, ins.col, f"Instruction '{ins.opcode}' not supported on .target "
                                                    f"'sm_{sm[0]}{sm[1]}' (requires {needs})")


# -- immediates and operand counts --------------------------------------------------------------------------

def check_barrier(ins: P.Instruction):
    """PTX ISA 9.7.13.1: barrier ids are 0..15, a thread count a multiple of the warp size."""
    parts = ins.opcode.split(".")
    if parts[0] not in ("bar", "barrier") or "warp" in parts or "cluster" in parts or not ins.operands:
        return
    if isinstance(ins.operands[0], P.Imm) and not 0 <= ins.operands[0].value <= 15:
        raise PtxSyntaxError(ins.line, ins.col, f"Barrier number '{ins.operands[0].value}' out of range, expected "
                                                f"to be in range [0..15]")
    if len(ins.operands) > 1 and isinstance(ins.operands[-1], P.Imm) and ins.operands[-1].value % 32 and \
            not ("red" in parts and len(ins.operands) > 2):
        raise PtxSyntaxError(ins.line, ins.col, "Number of threads participating in barrier must be in multiple "
                                                "of warp size")


_COUNTS = {"mbarrier.expect_tx": 2, "mbarrier.complete_tx": 2, "mbarrier.init": 2, "mbarrier.inval": 1,
           "mbarrier.arrive.expect_tx": 3, "mbarrier.try_wait": 2, "mbarrier.test_wait": 2}


def check_count(ins: P.Instruction):
    """Operands an instruction cannot do without (PTX ISA 9.7.13.15 for mbarrier; the ALU forms above)."""
    parts = ins.opcode.split(".")
    for n in range(len(parts), 0, -1):
        need = _COUNTS.get(".".join(parts[:n]))
        if need is not None:
            break
    else:
        return
    if len(ins.operands) < need:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode} takes at least {need} operands, got "
                                                f"{len(ins.operands)}")


def check(ins: P.Instruction, reg_types: Dict[str, str], target):
    check_guard(ins, reg_types)
    check_spaces(ins)
    check_target(ins, target)
    check_barrier(ins)
    check_count(ins)
    check_operand_types(ins, reg_types)
