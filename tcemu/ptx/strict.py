"""Compile-time legality checks that ptxas makes and the instruction compilers do not: operand register
types (PTX ISA 5.4.5 "Operand Type Information", 6.4.1 "Operand Size Exceeding Instruction-Type Size"),
guards, state spaces, targets, barrier ids and operand counts. Each refusal is a PtxSyntaxError worded
close to ptxas 13.0's message; the rules were measured against ptxas (tests/fixtures/strict/)."""
from typing import Dict, List, Optional

from . import arity
from . import callgraph, parser as P
from .errors import PtxSyntaxError, PtxUnsupported
from .types import TYPES, ptx_type

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
        if isinstance(op, P.Imm) and op.fbits == 0 and TYPES.get(t.rstrip("!")) is not None and \
                TYPES[t.rstrip("!")].kind == "f":   # ptxas: floating-point operands take 0f/0d or decimal floats
            raise PtxSyntaxError(ins.line, ins.col, f"Arguments mismatch for instruction "
                                                    f"'{ins.opcode.split('.')[0]}': operand {i + 1} is the integer "
                                                    f"constant {op.value}, not a .{t} constant (write 0f/0d)")
        if isinstance(op, P.Vec) and ins.opcode.split(".")[0] == "mov" and t in TYPES and len(nat) == 2:
            _check_packing(ins, op, t, reg_types)
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


def _check_packing(ins, vec, t, reg_types):
    """mov.b64 d, {a, b}: each element is a register of the type's width / the element count (PTX ISA 9.7.9.10)."""
    bits = TYPES[t].bits // max(1, len(vec.items))
    for r in vec.items:
        have = reg_types.get(r.name) if isinstance(r, P.Reg) else None
        if have is not None and have in TYPES and have != "pred" and TYPES[have].bits != bits:
            raise PtxSyntaxError(ins.line, ins.col, f"Arguments mismatch for instruction 'mov': {P.fmt(r)} is "
                                                    f".{have}, packing .{t} from {len(vec.items)} needs {bits}-bit "
                                                    "elements")


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
        if "::" in p and p.split("::")[1] in ("cta", "cluster", "entry", "func"):   # .shard::cta: a misspelt space
            raise PtxSyntaxError(ins.line, ins.col, f"Unknown modifier '.{p}' of {parts[0]} (state spaces: PTX "
                                                    "ISA 5.1)")
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
    """PTX ISA 9.7.13.1: barrier ids are 0..15, a thread count a multiple of the warp size (non-zero for
    bar.arrive). ptxas reads both as 32-bit values (2^32 is barrier 0) and prints the id as a 64-bit one."""
    parts = ins.opcode.split(".")
    if parts[0] not in ("bar", "barrier") or "warp" in parts or "cluster" in parts or not ins.operands:
        return
    red = "red" in parts   # bar.red: d, a{, b}, c
    ops = ins.operands[1:] if red else ins.operands
    if ops and isinstance(ops[0], P.Imm) and not 0 <= ops[0].value % 2 ** 32 <= 15:
        raise PtxSyntaxError(ins.line, ins.col, f"Barrier number '{ops[0].value % 2 ** 64}' out of range, expected "
                                                f"to be in range [0..15]")
    count = ops[1] if len(ops) == (3 if red else 2) else None
    if isinstance(count, P.Imm):
        if "arrive" in parts and count.value % 2 ** 64 == 0:
            raise PtxSyntaxError(ins.line, ins.col, f"Instruction '{parts[0]}.arrive' requires a non-zero thread count "
                                                    "argument")
        if count.value % 32:
            raise PtxSyntaxError(ins.line, ins.col, "Number of threads participating in barrier must be in multiple "
                                                    "of warp size")


_ARITY = {  # base opcode -> operand counts PTX allows (a d|p pair is one operand; PTX ISA 9.7)
    **dict.fromkeys(("abs", "neg", "not", "mov", "cnot", "popc", "clz", "brev", "bfind", "rcp", "sqrt", "rsqrt",
                     "ex2", "lg2", "sin", "cos", "tanh", "cvta", "isspacep", "testp", "getctarank", "elect"), (2,)),
    **dict.fromkeys(("add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "copysign", "mul24",
                     "mapa", "bmsk", "szext", "redux"), (3,)),
    **dict.fromkeys(("mad", "fma", "selp", "bfe", "prmt", "slct", "mad24", "sad", "shf", "dp4a", "dp2a", "fns"),
                    (4,)),
    "bfi": (5,), "lop3": (5, 6), "cvt": (2, 3, 4), "bra": (1,), "ret": (0,), "exit": (0,), "shfl": (5,),
    "match": (3, 4), "min": (3,), "max": (3,), "setp": (3,), "ld": (2,), "st": (2,), "ldu": (2,),
    "activemask": (1,), "trap": (0,), "vote": (2, 3), "bar": (1, 2), "barrier": (0, 1, 2),
    "ldmatrix": (2,), "stmatrix": (2,),
}


def check_arity(ins: P.Instruction, target=None):
    """Instructions with a fixed number of operands ("Arguments mismatch for instruction", ptxas): too few
    or too many is a syntax error, never an IndexError in a compiler or an operand silently ignored."""
    parts = ins.opcode.split(".")
    base = parts[0]
    allowed = _ARITY.get(base)
    if allowed is None:
        return
    if base in ("ld", "st", "ldu"):
        if any(p in ("async", "bulk") for p in parts) or any(p.startswith("mbarrier") for p in parts):
            return
        allowed = (2 + ("L2::cache_hint" in parts),)
    elif base == "setp" and any(p in ("and", "or", "xor") for p in parts):
        allowed = (4,)
    elif base in ("min", "max") and any(p in ("f32", "f16", "bf16", "f16x2", "bf16x2") for p in parts):
        sm = _sm(target)
        allowed = (3, 4) if sm is None or sm[0] >= 100 else (3,)   # three inputs: sm_100 (PTX ISA 8.8)
    elif base in ("bar", "barrier"):
        if "red" in parts:
            allowed = (3, 4)
        elif "cluster" in parts or "warp" in parts:
            allowed = (0,) if "cluster" in parts else (1,)
        elif base == "barrier" and "arrive" not in parts:
            allowed = (1, 2)   # barrier.sync names its barrier (ptxas: "Arguments mismatch for instruction 'barrier'")
        elif "arrive" in parts:
            allowed = (2,) if base == "bar" else (1, 2)
    elif base == "shfl":
        allowed = (5,) if "sync" in parts else (4,)
    if len(ins.operands) not in allowed:
        want = " or ".join(str(a) for a in allowed)
        raise PtxSyntaxError(ins.line, ins.col, f"Arguments mismatch for instruction '{base}': {len(ins.operands)} "
                                                f"operands, {base} takes {want} (PTX ISA 9.7)")


_FLOAT_TYPES = {"f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "f32x2"}


def _unexpected(ins, why, name=None):
    raise PtxSyntaxError(ins.line, ins.col, f"Unexpected instruction types specified for '{name or ins.opcode}' ({why})")


# The types each ALU instruction form takes, by its modifiers in sorted order, as ptxas 13.4 takes them
# (tests/fixtures/strict/probe_instruction_types.py --table; PTX ISA 9.7.1-9.7.4). A form not listed is held to
# the types any form of its instruction takes.
_INSTRUCTION_TYPES = {
    "abs": "s16 f16 bf16 s32 f32 f16x2 bf16x2 s64 f64",
    "abs.ftz": "f16 f32 f16x2",
    "add": "u16 s16 f16 bf16 u32 s32 f32 f16x2 bf16x2 u64 s64 f64",
    "add.cc": "u32 s32 u64 s64",
    "add.ftz": "f16 f32 f16x2",
    "add.ftz.rn": "f16 f32 f16x2",
    "add.rn": "f16 bf16 f32 f16x2 bf16x2 f64",
    "add.sat": "f16 u32 s32 f32 f16x2",
    "addc": "u16 s16 u32 s32 u64 s64",
    "and": "pred b16 b32 b64",
    "bfe": "u32 s32 u64 s64",
    "bfi": "b32 b64",
    "bfind": "u32 s32 u64 s64",
    "bfind.shiftamt": "u32 s32 u64 s64",
    "brev": "b32 b64",
    "clz": "b32 b64",
    "cnot": "b16 b32 b64",
    "copysign": "f32 f64",
    "cos.approx": "f32",
    "cos.approx.ftz": "f32",
    "div": "u16 s16 u32 s32 u64 s64",
    "div.approx": "f32",
    "div.approx.ftz": "f32",
    "div.ftz.full": "f32",
    "div.ftz.rn": "f32",
    "div.full": "f32",
    "div.rn": "f32 f64",
    "ex2.approx": "f16 f32 f16x2",
    "ex2.approx.ftz": "bf16 f32 bf16x2",
    "fma.ftz.rn": "f16 f32 f16x2",
    "fma.relu.rn": "f16 bf16 f16x2 bf16x2",
    "fma.rn": "f16 bf16 f32 f16x2 bf16x2 f64",
    "fma.rn.sat": "f16 f32 f16x2",
    "fma.rz": "bf16 f32 bf16x2 f64",
    "lg2.approx": "f32",
    "lg2.approx.ftz": "f32",
    "mad.ftz.rn": "f32",
    "mad.hi": "u16 s16 u32 s32 u64 s64",
    "mad.hi.sat": "s32",
    "mad.lo": "u16 s16 u32 s32 u64 s64",
    "mad.rn": "f32 f64",
    "mad.wide": "u16 s16 u32 s32",
    "mad24.hi": "u32 s32",
    "mad24.lo": "u32 s32",
    "madc.lo": "u16 s16 u32 s32 u64 s64",
    "max": "u16 s16 f16 bf16 u32 s32 f32 f16x2 bf16x2 u64 s64 f64",
    "max.NaN": "f16 bf16 f32 f16x2 bf16x2",
    "max.ftz": "f16 f32 f16x2",
    "min": "u16 s16 f16 bf16 u32 s32 f32 f16x2 bf16x2 u64 s64 f64",
    "min.NaN": "f16 bf16 f32 f16x2 bf16x2",
    "min.ftz": "f16 f32 f16x2",
    "min.relu": "s32",
    "mul": "f16 bf16 f32 f16x2 bf16x2 f64",
    "mul.ftz": "f16 f32 f16x2",
    "mul.ftz.rn": "f16 f32 f16x2",
    "mul.hi": "u16 s16 u32 s32 u64 s64",
    "mul.lo": "u16 s16 u32 s32 u64 s64",
    "mul.rn": "f16 bf16 f32 f16x2 bf16x2 f64",
    "mul.wide": "u16 s16 u32 s32",
    "mul24.hi": "u32 s32",
    "mul24.lo": "u32 s32",
    "neg": "s16 f16 bf16 s32 f32 f16x2 bf16x2 s64 f64",
    "neg.ftz": "f16 f32 f16x2",
    "not": "pred b16 b32 b64",
    "or": "pred b16 b32 b64",
    "popc": "b32 b64",
    "rcp.approx": "f32",
    "rcp.approx.ftz": "f32 f64",
    "rcp.ftz.rn": "f32 f64",
    "rcp.rn": "f32 f64",
    "rem": "u16 s16 u32 s32 u64 s64",
    "rsqrt.approx": "f32 f64",
    "rsqrt.approx.ftz": "f32 f64",
    "sad": "u16 s16 u32 s32 u64 s64",
    "selp": "b16 u16 s16 b32 u32 s32 f32 b64 u64 s64 f64",
    "setp.eq": "b16 u16 s16 f16 bf16 b32 u32 s32 f32 f16x2 bf16x2 b64 u64 s64 f64",
    "setp.eq.ftz": "f16 f32 f16x2",
    "setp.equ": "f16 bf16 f32 f16x2 bf16x2 f64",
    "setp.ftz.lt": "f16 f32 f16x2",
    "setp.ge": "u16 s16 f16 bf16 u32 s32 f32 f16x2 bf16x2 u64 s64 f64",
    "setp.geu": "f16 bf16 f32 f16x2 bf16x2 f64",
    "setp.gt": "u16 s16 f16 bf16 u32 s32 f32 f16x2 bf16x2 u64 s64 f64",
    "setp.gtu": "f16 bf16 f32 f16x2 bf16x2 f64",
    "setp.hi": "u16 u32 u64",
    "setp.hs": "u16 u32 u64",
    "setp.le": "u16 s16 f16 bf16 u32 s32 f32 f16x2 bf16x2 u64 s64 f64",
    "setp.leu": "f16 bf16 f32 f16x2 bf16x2 f64",
    "setp.lo": "u16 u32 u64",
    "setp.ls": "u16 u32 u64",
    "setp.lt": "u16 s16 f16 bf16 u32 s32 f32 f16x2 bf16x2 u64 s64 f64",
    "setp.ltu": "f16 bf16 f32 f16x2 bf16x2 f64",
    "setp.nan": "f16 bf16 f32 f16x2 bf16x2 f64",
    "setp.ne": "b16 u16 s16 f16 bf16 b32 u32 s32 f32 f16x2 bf16x2 b64 u64 s64 f64",
    "setp.neu": "f16 bf16 f32 f16x2 bf16x2 f64",
    "setp.num": "f16 bf16 f32 f16x2 bf16x2 f64",
    "shl": "b16 b32 b64",
    "shr": "b16 u16 s16 b32 u32 s32 b64 u64 s64",
    "sin.approx": "f32",
    "sin.approx.ftz": "f32",
    "sqrt.approx": "f32",
    "sqrt.approx.ftz": "f32",
    "sqrt.ftz.rn": "f32",
    "sqrt.rn": "f32 f64",
    "sub": "u16 s16 f16 bf16 u32 s32 f32 f16x2 bf16x2 u64 s64 f64",
    "sub.ftz": "f16 f32 f16x2",
    "sub.rn": "f16 bf16 f32 f16x2 bf16x2 f64",
    "sub.sat": "f16 s32 f32 f16x2",
    "subc": "u16 s16 u32 s32 u64 s64",
    "tanh.approx": "f16 bf16 f32 f16x2 bf16x2",
    "testp.finite": "f32 f64",
    "testp.infinite": "f32 f64",
    "testp.normal": "f32 f64",
    "testp.notanumber": "f32 f64",
    "testp.number": "f32 f64",
    "testp.subnormal": "f32 f64",
    "xor": "pred b16 b32 b64",
}
_INSTRUCTION_TYPES = {k: set(v.split()) for k, v in _INSTRUCTION_TYPES.items()}
_BASE_TYPES: Dict[str, set] = {}
for _k, _v in _INSTRUCTION_TYPES.items():
    _BASE_TYPES.setdefault(_k.split(".")[0], set()).update(_v)


def _check_type_table(ins, parts):
    types = [p for p in parts[1:] if p in TYPES]
    if len(types) != 1 or types[0] == "f32x2":   # sm_100 forms: fparith's LEGAL table (test_forms_sm100 vs ptxas)
        return
    key = ".".join([parts[0]] + sorted(p for p in parts[1:] if p not in TYPES))
    allowed = _INSTRUCTION_TYPES.get(key, _BASE_TYPES.get(parts[0]))
    if allowed is not None and types[0] not in allowed:
        shown = key if key in _INSTRUCTION_TYPES else parts[0]
        order = sorted(allowed, key=lambda t: (TYPES[t].bits, t))
        _unexpected(ins, f".{types[0]}: {shown} takes " + ", ".join("." + t for t in order), parts[0])


def check_instruction_types(ins: P.Instruction):
    """Instruction types an instruction does not take ("Unexpected instruction types specified", ptxas)."""
    parts = ins.opcode.split(".")
    if parts[0] in _BASE_TYPES:
        _check_type_table(ins, parts)
    base, types = parts[0], _types(parts[1:])
    if base in ("mul", "mad") and types:
        t = types[-1]
        mode = [p for p in parts if p in ("lo", "hi", "wide")]
        if t in _FLOAT_TYPES and mode:
            _unexpected(ins, f".{mode[0]} is for integer types (PTX ISA 9.7.1.5)")
        if t not in _FLOAT_TYPES and not mode and TYPES[t].kind != "b":
            _unexpected(ins, "an integer mul/mad names .lo, .hi or .wide (PTX ISA 9.7.1.5)")
        if "wide" in mode and TYPES[t].bits not in (16, 32):
            _unexpected(ins, ".wide takes 16- or 32-bit integers")
    elif base in ("mbarrier", "tcgen05") and types and (base == "mbarrier" or parts[1] == "commit"):
        if any(t != "b64" for t in types):
            _unexpected(ins, "an mbarrier object is .b64 (PTX ISA 9.7.13.15)")
    elif base in ("ldmatrix", "stmatrix") and types:
        if not all(t in ("b16", "b8") or "x16" in t for t in types) and not any("x16" in p for p in parts):
            _unexpected(ins, f"{base} takes .b16 or .b8 (PTX ISA 9.7.14.5.15-16)")
    elif base == "setmaxnreg" and types and types != ["u32"]:
        _unexpected(ins, "setmaxnreg takes .u32 (PTX ISA 9.7.19.6)")


_MBARRIER = {"init", "inval", "expect_tx", "complete_tx", "arrive", "arrive_drop", "test_wait", "try_wait",
             "pending_count", "parity", "noComplete", "shared", "shared::cta", "shared::cluster", "b64", "release",
             "acquire", "relaxed", "cta", "cluster", "sync", "aligned"}
_CP_BULK = {"async", "bulk", "tensor", "reduce", "prefetch", "commit_group", "wait_group", "read", "1d", "2d", "3d",
            "4d", "5d", "global", "shared", "shared::cta", "shared::cluster", "mbarrier::complete_tx::bytes",
            "bulk_group", "multicast::cluster", "L2", "L2::cache_hint", "tile", "im2col", "im2col::w",
            "im2col::w::128", "tile::gather4", "tile::scatter4", "im2col_no_offs", "cta_group::1", "cta_group::2",
            "cp_mask", "ignore_oob", "add", "min", "max", "inc", "dec", "and", "or", "xor", "noftz", "ftz", "rn",
            "tile::im2col_no_offs", "dst", "src", "sm", "pack", "sync", "aligned"}
_BAD_ASYNC_SPACES = {"local", "param", "const", "generic"}


def _mbarrier_sem_scope(ins, parts):
    """An mbarrier's .sem and .scope come together, and its type is .b64 (ptxas 13.0/13.4: "Modifier '.cta'
    requires order", "Modifier '.relaxed' requires scope"; probe_qualifiers.py)."""
    name = "mbarrier." + ".".join(p for p in parts[1:] if p in ("init", "inval", "expect_tx", "complete_tx", "arrive",
                                                                 "arrive_drop", "test_wait", "try_wait", "parity",
                                                                 "pending_count", "noComplete"))
    sem = [p for p in parts if p in ("release", "acquire", "relaxed")]
    scope = [p for p in parts if p in ("cta", "cluster")]
    if scope and not sem:
        raise PtxSyntaxError(ins.line, ins.col, f"Modifier '.{scope[0]}' requires order with '{name}' instruction")
    if sem and not scope:
        raise PtxSyntaxError(ins.line, ins.col, f"Modifier '.{sem[0]}' requires scope with '{name}' instruction")
    if "b64" not in parts:
        _unexpected(ins, "an mbarrier object is .b64 (PTX ISA 9.7.13.15)", name)


# cp.reduce.async.bulk: the types each reduction takes, by destination (PTX ISA 9.7.9.25.4.2; ptxas probe)
_REDUCE_TYPES = {
    "global": {"add": {"f32", "f64", "s32", "u32", "u64"}, "and": {"b32", "b64"}, "or": {"b32", "b64"},
               "xor": {"b32", "b64"}, "inc": {"u32"}, "dec": {"u32"},
               "min": {"bf16", "f16", "s32", "s64", "u32", "u64"}, "max": {"bf16", "f16", "s32", "s64", "u32", "u64"}},
    "shared::cluster": {"add": {"s32", "u32", "u64"}, "and": {"b32"}, "or": {"b32"}, "xor": {"b32"}, "inc": {"u32"},
                        "dec": {"u32"}, "min": {"s32", "u32"}, "max": {"s32", "u32"}},
}


def _reduce_types(ins, parts):
    dst = next((p for p in parts if p in ("global", "shared::cluster", "shared::cta", "shared")), None)
    ops = [p for p in parts if p in _REDUCE_TYPES["global"]]
    types = [p for p in parts if p in TYPES]
    table = _REDUCE_TYPES.get(dst)
    if table is None or len(ops) != 1 or len(types) != 1:
        return
    op, t = ops[0], types[0]
    if op == "add" and t in ("f16", "bf16") and dst == "global":
        if "noftz" not in parts:
            raise PtxSyntaxError(ins.line, ins.col, f"Modifier '.noftz' required for instruction 'cp.reduce.async.bulk' "
                                                    f"with type '.{t}' and operation '.add'")
        return
    if t not in table[op]:
        raise PtxSyntaxError(ins.line, ins.col, f"Incorrect type '.{t}' for operation '.{op}' in instruction "
                                                f"'cp.reduce.async.bulk' (takes {', '.join(sorted(table[op]))})")


def check_async_qualifiers(ins: P.Instruction):
    """Qualifiers of the asynchronous families (mbarrier, cp.async, cp.reduce.async, fence.proxy): ".shared::"
    names .cta or .cluster (PTX ISA 5.1), mbarrier's modifiers are those of PTX ISA 9.7.13.15, completion is
    .mbarrier::complete_tx::bytes, cp.async copies global to shared (9.7.9.25)."""
    parts = ins.opcode.split(".")
    base = parts[0]
    for p in parts[1:]:
        for piece in ([p] + p.split("::")[1:2] if p.startswith("async::") else [p]):
            sub = piece[len("async::"):] if piece.startswith("async::") else piece
            if sub.startswith("shared::") and sub not in ("shared::cta", "shared::cluster"):
                raise PtxSyntaxError(ins.line, ins.col, f"Unknown modifier '.{p}' (.shared:: names ::cta or "
                                                        "::cluster, PTX ISA 5.1)")
        if p.startswith("mbarrier::complete_tx::") and p != "mbarrier::complete_tx::bytes":
            raise PtxSyntaxError(ins.line, ins.col, f"Unknown modifier '.{p}' (completion mechanism: "
                                                    ".mbarrier::complete_tx::bytes)")
    if base == "mbarrier":
        for p in parts[1:]:
            if p not in _MBARRIER:
                raise PtxSyntaxError(ins.line, ins.col, f"Unknown modifier '.{p}' of mbarrier (PTX ISA 9.7.13.15)")
        _mbarrier_sem_scope(ins, parts)
    if base == "cp" and parts[1:4] == ["reduce", "async", "bulk"] and "tensor" not in parts:
        _reduce_types(ins, parts)
    asyncs = base == "cp" and len(parts) > 2 and "async" in parts[1:3]
    if asyncs and any(p in _BAD_ASYNC_SPACES for p in parts):
        raise PtxSyntaxError(ins.line, ins.col, f"State space incorrect for instruction '{ins.opcode}'")
    if base == "cp" and "bulk" in parts[1:4]:
        for p in parts[1:]:
            if p not in _CP_BULK and p not in TYPES:
                raise PtxSyntaxError(ins.line, ins.col, f"Unknown modifier '.{p}' of {'.'.join(parts[:3])} (PTX "
                                                        "ISA 9.7.9.25.4-5)")
    if base == "cp" and parts[1:2] == ["async"] and len(parts) > 2:
        if parts[2] not in ("ca", "cg", "commit_group", "wait_group", "wait_all", "mbarrier", "bulk"):
            raise PtxSyntaxError(ins.line, ins.col, f"Unknown modifier '.{parts[2]}' of cp.async (.ca or .cg, "
                                                    "PTX ISA 9.7.9.25.3)")
        if parts[2] in ("ca", "cg"):
            spaces = [p for p in parts[3:] if p in SPACES or p.split("::")[0] in SPACES]
            if spaces and spaces != ["shared", "global"] and spaces != ["shared::cta", "global"]:
                raise PtxSyntaxError(ins.line, ins.col, "State space incorrect for instruction 'cp.async' "
                                                        "(.shared{::cta}.global)")


def check(ins: P.Instruction, reg_types: Dict[str, str], target):
    check_arity(ins, target)
    arity.check(ins, reg_types, target)
    check_instruction_types(ins)
    check_async_qualifiers(ins)
    check_guard(ins, reg_types)
    check_spaces(ins)
    check_target(ins, target)
    check_barrier(ins)
    arity.check_immediates(ins)
    check_operand_types(ins, reg_types)


# -- calls against the callee's prototype (PTX ISA 9.7.12.8, 5.1.6.4) -----------------------------------------

def _param_shape(v: P.VarDecl):
    """What ptxas compares between an argument and its formal parameter: scalar width, or array bytes and
    alignment."""
    elem = max(1, ptx_type(v.type).bits // 8) * v.vector
    if v.count is None and v.vector == 1:
        return ("scalar", elem)
    return ("array", v.size, v.align or elem)


def _describe(shape) -> str:
    return f".b{shape[1] * 8}" if shape[0] == "scalar" else f"{shape[1]} bytes aligned {shape[2]}"


def check_calls(fn: P.Function, functions: Dict[str, P.Function]):
    """Each direct call's return and argument lists against the callee's prototype: the same number, and
    each .param variable of the call sequence the same width (or array size and alignment) as the formal
    parameter ("Type of argument does not match formal parameter", ptxas)."""
    for ins in fn.body:
        if ins.opcode.split(".")[0] != "call":
            continue
        ops = list(ins.operands)
        rets = list(ops.pop(0).items) if ops and isinstance(ops[0], P.Vec) else []
        if ops and isinstance(ops[0], P.Reg):
            _check_indirect(fn, functions, ins, rets, ops[1:])
            continue
        if not ops or not isinstance(ops[0], P.Sym):
            continue   # "call names no function" when compiled
        callee = functions.get(ops[0].name)
        if callee is None or callee.entry:
            continue   # an unknown name: refused when the call compiles
        rest = ops[1:]
        args = list(rest[0].items) if rest and isinstance(rest[0], P.Vec) else []
        if len(rest) > 1 and not (len(rest) == 2 and isinstance(rest[1], P.Sym)):   # (args), prototype/targets
            raise PtxSyntaxError(ins.line, ins.col, f"call to {callee.name}: unexpected operands after the "
                                                    "argument list")
        _check_against(fn, ins, callee.name, rets, args, callee.returns, callee.params)


def _check_indirect(fn, functions, ins, rets, rest):
    """An indirect call against its .callprototype, or against each function of its .calltargets list."""
    args = list(rest.pop(0).items) if rest and isinstance(rest[0], P.Vec) else []
    label = rest[0].name if len(rest) == 1 and isinstance(rest[0], P.Sym) else None
    decl = callgraph.call_decl(fn, ins.scope, label) if label else None
    if decl is None:
        raise PtxSyntaxError(ins.line, ins.col, f"an indirect call names {label or 'no label'}; it needs a "
                                                ".callprototype or .calltargets label after its arguments "
                                                "(PTX ISA 9.7.12.8)")
    if decl.kind == "callprototype":
        _check_against(fn, ins, f"prototype {label}", rets, args, decl.returns, decl.params)
    for name in decl.targets:
        callee = functions.get(name)
        if callee is None or callee.entry:
            raise PtxSyntaxError(decl.line, 1, f".calltargets {label}: {name} is not a .func of this module")
        _check_against(fn, ins, callee.name, rets, args, callee.returns, callee.params)


def _check_against(fn, ins, name, rets, args, returns, params):
    """Return and argument counts, and each .param argument's width, against a prototype."""
    for what, got, formal in (("return values", rets, returns), ("arguments", args, params)):
        if len(got) != len(formal):
            raise PtxSyntaxError(ins.line, ins.col, f"Function '{name}' takes {len(formal)} {what}, "
                                                    f"the call passes {len(got)} (PTX ISA 9.7.12.8)")
        for a, f in zip(got, formal):
            if not isinstance(a, P.Sym):
                continue   # a register or constant argument (non-ABI call): checked when compiled
            decl = _declared_before(fn, a.name, ins.line)
            if decl is None or decl.space != "param":
                continue
            want, have = _param_shape(f), _param_shape(decl)
            if want != have:
                raise PtxSyntaxError(ins.line, ins.col, f"Type of argument does not match formal parameter "
                                                        f"'{f.name}': {a.name} is {_describe(have)}, "
                                                        f"{f.name} is {_describe(want)} (PTX ISA 9.7.12.8)")


def _declared_before(fn: P.Function, name: str, line: int) -> Optional[P.VarDecl]:
    """The last declaration of `name` in `fn`'s body before `line` (call sequences redeclare param0...)."""
    best = None
    for v in fn.locals:
        if v.name == name and v.line <= line and (best is None or v.line >= best.line):
            best = v
    return best
