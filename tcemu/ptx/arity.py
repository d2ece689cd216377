"""Operand counts, vector sizes and range-checked immediates of the variable-arity instructions tcemu runs, as
ptxas accepts them: the asynchronous copies (PTX ISA 9.7.9.25-27), mbarrier (9.7.13.15), tcgen05 (9.7.16),
wgmma (9.7.15), mma.sync (9.7.14.5.14), vector ld/st/atom/red (9.7.9.8-13), ldmatrix/stmatrix (9.7.14.5.15-16),
tensormap (9.7.9.28-29), fence, prefetch, bfe/bfi, setmaxnreg. Each rule was probed against ptxas 13.0 and Triton's
13.4 (tests/fixtures/strict/probe_*.py and their recorded verdicts); where the two differ tcemu follows 13.4,
which reads every .version 13.0 reads. A mismatch is a PtxSyntaxError worded as ptxas words it."""
import re
from typing import Optional, Tuple

from ..core.errors import TcemuError
from ..hopper.mma_sync import parse_form
from . import parser as P
from .errors import PtxSyntaxError
from .types import TYPES

_DIM = re.compile(r"([1-5])d")


def _dim(parts) -> Optional[int]:
    for p in parts:
        m = _DIM.fullmatch(p)
        if m:
            return int(m.group(1))
    return None


def _one(parts, options):
    return next((p for p in parts if p in options), None)


_LOAD_MODES = ("tile", "tile::gather4", "tile::scatter4", "im2col", "im2col::w", "im2col::w::128", "im2col_no_offs")


def _tensor(parts, has, policy, load: bool, prefetch: bool = False):
    """cp.async.bulk.tensor / cp.reduce.async.bulk.tensor / cp.async.bulk.prefetch.tensor: [tensorMap,
    tensorCoords] (dim coordinates; 5 for .tile::gather4/scatter4), then for a load [dstMem] first and [mbar],
    im2colInfo (dim-2 16-bit offsets for .im2col, wHalo and wOffset for .im2col::w), ctaMask with
    .multicast::cluster, cache-policy with .L2::cache_hint (PTX ISA 9.7.9.25.5.1; ptxas probe)."""
    dim = _dim(parts)
    mode = _one(parts, _LOAD_MODES)
    coords = 5 if mode in ("tile::gather4", "tile::scatter4") else dim
    im2col = None
    if mode == "im2col" and dim is not None:
        im2col = dim - 2
    elif mode in ("im2col::w", "im2col::w::128"):
        im2col = 2
    if prefetch:
        ops, vecs, n = ["[tensorMap, tensorCoords]"], {0: ("coords", coords)}, 1
    elif load:
        ops, vecs, n = ["[dstMem]", "[tensorMap, tensorCoords]", "[mbar]"], {1: ("coords", coords)}, 3
    else:
        return ["[tensorMap, tensorCoords]", "[srcMem]"] + policy, [], {0: ("coords", coords)}
    if im2col is not None:
        vecs[n] = ("offsets", im2col)
        ops.append("im2colInfo")
    if has("multicast::cluster"):
        ops.append("ctaMask")
    return ops + policy, [], vecs


def _spaces(parts):
    """State spaces in the order written (ptxas takes qualifiers in any order, the destination space first)."""
    return [p for p in parts if p in ("global", "shared", "shared::cta", "shared::cluster")] + ["", ""]


def _cp(parts, has, policy):
    """cp.async / cp.async.bulk / cp.reduce.async.bulk forms."""
    name = ".".join(parts[:3])
    if parts[1] == "reduce":
        if has("tensor"):
            return ("cp.reduce.async.bulk.tensor",) + _tensor(parts, has, policy, load=False)
        dst = _spaces(parts)[0]
        if dst.startswith("shared"):   # .shared::cluster.shared::cta: [dstMem], [srcMem], size, [mbar]
            return "cp.reduce.async.bulk", ["[dstMem]", "[srcMem]", "size", "[mbar]"], [], {}
        return "cp.reduce.async.bulk", ["[dstMem]", "[srcMem]", "size"] + policy, [], {}
    if parts[2] == "bulk":
        rest = parts[3:]
        if rest[:1] == ["wait_group"]:
            return "cp.async.bulk.wait_group", ["N"], [], {}
        if rest[:1] == ["commit_group"]:
            return "cp.async.bulk.commit_group", [], [], {}
        if rest[:1] == ["prefetch"]:
            if has("tensor"):
                return ("cp.async.bulk.prefetch.tensor",) + _tensor(parts, has, policy, load=True, prefetch=True)
            return "cp.async.bulk.prefetch", ["[srcMem]", "size"] + policy, [], {}
        if rest[:1] == ["tensor"]:
            return ("cp.async.bulk.tensor",) + _tensor(parts, has, policy, load=_spaces(parts)[0] != "global")
        dst, src = _spaces(parts)[:2]
        if dst == "global":   # .global.shared::cta.bulk_group: size {, cache-policy} {, byteMask}
            return name, ["[dstMem]", "[srcMem]", "size"] + policy + (["byteMask"] if has("cp_mask") else []), [], {}
        if src == "global":
            mask = ["ctaMask"] if has("multicast::cluster") else []
            return name, ["[dstMem]", "[srcMem]", "size", "[mbar]"] + mask + policy, [], {}
        return name, ["[dstMem]", "[srcMem]", "size", "[mbar]"], [], {}
    what = parts[2]
    if what in ("ca", "cg"):   # [dst], [src], cp-size {, src-size | ignore-src} {, cache-policy}
        return "cp.async", ["[dst]", "[src]", "cp-size"] + policy, ["src-size"], {}
    if what == "wait_group":
        return "cp.async.wait_group", ["N"], [], {}
    if what in ("wait_all", "commit_group"):
        return f"cp.async.{what}", [], [], {}
    if what == "mbarrier":
        return "cp.async.mbarrier.arrive", ["[addr]"], [], {}
    return None


def _mbarrier(parts, has):
    """PTX ISA 9.7.13.15.x: the operands of each mbarrier instruction (state may be the sink _)."""
    op = parts[1] if len(parts) > 1 else ""
    if op == "init":
        return ["[addr]", "count"], []
    if op == "inval":
        return ["[addr]"], []
    if op in ("expect_tx", "complete_tx"):
        return ["[addr]", "txCount"], []
    if op == "pending_count":
        return ["count", "state"], []
    if op in ("arrive", "arrive_drop"):
        if has("expect_tx"):
            return ["state", "[addr]", "txCount"], []
        if has("noComplete"):
            return ["state", "[addr]", "count"], []
        return ["state", "[addr]"], ["count"]
    if op == "test_wait":
        return ["waitComplete", "[addr]", "phaseParity" if has("parity") else "state"], []
    if op == "try_wait":
        return ["waitComplete", "[addr]", "phaseParity" if has("parity") else "state"], ["suspendTimeHint"]
    return None


# tcgen05.ld / st: 32-bit registers per thread for .num = x1 (PTX ISA 9.7.16.8.3, Table 48; ptxas probe)
_TMEM_REGS = {"32x32b": 1, "16x64b": 1, "16x128b": 2, "16x256b": 4, "16x32bx2": 1}


def _tcgen05(parts, has):
    op = parts[1] if len(parts) > 1 else ""
    if op == "alloc":
        return "tcgen05.alloc", ["[dst]", "nCols"], [], {}
    if op == "dealloc":
        return "tcgen05.dealloc", ["taddr", "nCols"], [], {}
    if op in ("relinquish_alloc_permit", "wait::ld", "wait::st", "fence::before_thread_sync",
              "fence::after_thread_sync"):
        return f"tcgen05.{op}", [], [], {}
    if op == "commit":
        return "tcgen05.commit", ["[mbar]"] + (["ctaMask"] if has("multicast::cluster") else []), [], {}
    if op == "shift":
        return "tcgen05.shift", ["[taddr]"], [], {}
    if op == "cp":
        return "tcgen05.cp", ["[taddr]", "s-desc"], [], {}
    if op in ("ld", "st") and not has("red"):
        shape = _one(parts, _TMEM_REGS)
        num = next((p for p in parts if re.fullmatch(r"x\d+", p)), None)
        if shape is None or num is None:
            return None
        regs = _TMEM_REGS[shape] * int(num[1:])   # .pack::16b / .unpack::16b keep the count (ptxas probe)
        split = ["immHalfSplitoff"] if shape == "16x32bx2" else []
        if op == "ld":
            return "tcgen05.ld", ["r", "[taddr]"] + split, [], {0: ("registers", regs)}
        return "tcgen05.st", ["[taddr]"] + split + ["r"], [], {1 + len(split): ("registers", regs)}
    return None


def _vector_width(parts) -> Optional[int]:
    for p in parts:
        if p in ("v2", "v4", "v8"):
            return int(p[1:])
    return None


def _memory(parts, has, policy):
    """ld/st/ldu/atom/red (PTX ISA 9.7.9.8-13): the data operand is a { } vector of exactly .vN registers,
    and a scalar form takes a register, not braces."""
    base = parts[0]
    if has("async") or any(p.startswith("mbarrier") for p in parts) or has("bulk"):
        if base in ("st", "red") and has("async"):   # st.async / red.async: [a], b {, [mbar]} (9.7.9.12; probe)
            return f"{base}.async", ["[a]", "b"], ["[mbar]"], {}
        return None
    v = _vector_width(parts)
    elems = ("elements", v) if v else ("scalar", 1)
    if base in ("ld", "ldu"):
        return base, ["d", "[a]"] + policy, [], {0: elems}
    if base == "st":
        return base, ["[a]", "b"] + policy, [], {1: elems}
    if base == "atom":
        ops = ["d", "[a]", "b"] + (["c"] if has("cas") else [])
        # ptxas also takes atom.exch.b32 with a fourth 32-bit register (undocumented; refused when executed)
        extra = ["c"] if has("exch") and has("b32") and not policy else []
        return base, ops + policy, extra, ({0: elems, 2: elems} if v else {})
    if base == "red":
        return base, ["[a]", "b"] + policy, [], ({1: elems} if v else {})
    return None


_LDMATRIX = {("m8n8", "ldmatrix"): 1, ("m8n8", "stmatrix"): 1, ("m16n16", "ldmatrix"): 2,
             ("m8n16", "ldmatrix"): 1, ("m16n8", "stmatrix"): 1}


def _matrix(parts, has):
    """ldmatrix / stmatrix (PTX ISA 9.7.14.5.15-16): .x1/.x2/.x4 matrices, one 32-bit register each (two for
    ldmatrix .m16n16)."""
    shape = _one(parts, ("m8n8", "m16n16", "m8n16", "m16n8"))
    num = _one(parts, ("x1", "x2", "x4"))
    per = _LDMATRIX.get((shape, parts[0]))
    if per is None or num is None:
        return None
    regs = per * int(num[1:])
    if parts[0] == "ldmatrix":
        return parts[0], ["d", "[a]"], [], {0: ("registers", regs)}
    return parts[0], ["[a]", "r"], [], {1: ("registers", regs)}


def _mma(parts):
    """mma.sync.aligned (PTX ISA 9.7.14.5.14): d, a, b, c, each a vector of the registers its form's fragment holds
    (hopper.mma_sync.MmaForm.registers); a form ptxas refuses is refused by the op's compiler, naming its rule."""
    try:
        form = parse_form(parts[3:])
    except TcemuError:
        return None
    return "mma", ["d", "a", "b", "c"], [], {i: ("registers", form.registers(w)) for i, w in enumerate("DABC")}


_TENSORMAP_FIELD2 = {"box_dim", "global_dim", "global_stride", "element_stride"}


def spec(ins: P.Instruction):
    """(name ptxas uses, required operands, optional trailing operands, {operand index: (what, elements)}),
    or None for instructions whose operands are checked elsewhere (strict.check_arity, the compilers)."""
    parts = ins.opcode.split(".")
    s = set(parts)
    has = s.__contains__
    base = parts[0]
    policy = ["cache-policy"] if "L2::cache_hint" in s else []
    if base == "cp" and len(parts) > 2 and "async" in parts[1:3]:
        return _cp(parts, has, policy)
    if base == "mbarrier":
        m = _mbarrier(parts, has)
        if m is None:
            return None
        name = "mbarrier." + parts[1] + (".expect_tx" if has("expect_tx") and parts[1] != "expect_tx" else "") \
            + (".parity" if has("parity") else "")
        return name, m[0], m[1], {}
    if base == "tcgen05":
        return _tcgen05(parts, has)
    if base in ("ld", "ldu", "st", "atom", "red"):
        return _memory(parts, has, policy)
    if base in ("ldmatrix", "stmatrix"):
        return _matrix(parts, has)
    if base == "mma" and parts[1:3] == ["sync", "aligned"]:
        return _mma(parts)
    if base == "wgmma" and len(parts) > 1 and parts[1] in ("fence", "commit_group", "wait_group"):
        return "wgmma." + parts[1], ["N"] if parts[1] == "wait_group" else [], [], {}
    if base == "tensormap" and len(parts) > 1:
        if parts[1] == "replace":
            return "tensormap.replace", ["[addr]"] + (["ord"] if s & _TENSORMAP_FIELD2 else []) + ["new_val"], [], {}
        if parts[1] == "cp_fenceproxy":
            return "tensormap.cp_fenceproxy", ["[dst]", "[src]", "size"], [], {}
        return None
    if base in ("prefetch", "prefetchu"):
        return base, ["[a]"], [], {}
    if base == "fence" and len(parts) > 1:   # fence.proxy.tensormap::generic.acquire: [addr], size (9.7.13.4)
        acquire = any(p.startswith("tensormap::") for p in parts) and has("acquire")
        return ".".join(parts[:2]), ["[addr]", "size"] if acquire else [], [], {}
    if base == "membar":
        return "membar", [], [], {}
    if base == "brx":
        return "brx.idx", ["index", "tlist"], [], {}
    return None


def counts(req, opt) -> Tuple[int, ...]:
    return tuple(len(req) + k for k in range(len(opt) + 1))


def _items(op):
    if isinstance(op, P.Vec):
        return len(op.items)
    return None


def _reg_bits(op, reg_types) -> Optional[int]:
    t = reg_types.get(op.name) if isinstance(op, P.Reg) and reg_types else None
    return None if t is None or t not in TYPES else (1 if t == "pred" else TYPES[t].bits)


def _sm(target) -> Optional[int]:
    for t in target or ():
        if t.startswith("sm_"):
            digits = "".join(ch for ch in t[3:] if ch.isdigit())
            return int(digits) if digits else None
    return None


def check_wide(ins: P.Instruction, target):
    """256-bit ld/st (.v8 of 32-bit, .v4 of 64-bit elements) need sm_100 and the global (or generic) space
    (PTX ISA 9.7.9.8; ptxas probe)."""
    parts = ins.opcode.split(".")
    if parts[0] not in ("ld", "st", "ldu"):
        return
    v = _vector_width(parts)
    types = [TYPES[p] for p in parts if p in TYPES]
    if not v or not types or v * types[-1].bits != 256:
        return
    sm = _sm(target)
    if sm is not None and sm < 100:
        raise PtxSyntaxError(ins.line, ins.col, "Feature '256 bit wide load/store' requires .target sm_100 or higher")
    if any(p in ("shared", "local", "param", "const") or p.startswith(("shared::", "param::")) for p in parts):
        raise PtxSyntaxError(ins.line, ins.col, "global state space expected for feature '256 bit wide load/store'")


_TENSORMAP_B64 = {"global_address", "global_stride"}
_TENSORMAP_ENUMS = {"elemtype", "interleave_layout", "swizzle_mode", "swizzle_atomicity", "fill_mode"}


def check_tensormap(ins: P.Instruction, reg_types, target):
    """tensormap.replace: .b64 for .global_address/.global_stride, .b32 for the other fields, a new value of that
    width (an immediate for the enumerated fields), .swizzle_atomicity on sm_100 or later (ptxas probe)."""
    parts = ins.opcode.split(".")
    if parts[:2] != ["tensormap", "replace"]:
        return
    field = next((p for p in parts if p in _TENSORMAP_B64 or p in _TENSORMAP_ENUMS or p in _TENSORMAP_FIELD2
                  or p == "rank"), None)
    types = [p for p in parts if p in TYPES]
    if field is None or len(types) != 1:
        return
    if types[0] not in ("b32", "b64"):
        raise PtxSyntaxError(ins.line, ins.col, "Unexpected instruction types specified for 'tensormap.replace' "
                                                f"(.{types[0]}: it takes .b32 or .b64)")
    want = "b64" if field in _TENSORMAP_B64 else "b32"
    if types[0] != want:
        raise PtxSyntaxError(ins.line, ins.col, f"Illegal modifier '.{field}' for instruction 'tensormap.replace' "
                                                f"with type '.{types[0]}' (.{field} is .{want})")
    sm = _sm(target)
    if field == "swizzle_atomicity" and sm is not None and sm < 100:
        raise PtxSyntaxError(ins.line, ins.col, "Instruction 'tensormap.replace.swizzle_atomicity' not supported on "
                                                f".target 'sm_{sm}' (requires sm_100 or higher)")
    new = ins.operands[-1] if ins.operands else None
    bits = _reg_bits(new, reg_types)
    if isinstance(new, P.Reg) and (field in _TENSORMAP_ENUMS or (bits is not None and bits != int(want[1:]))):
        raise PtxSyntaxError(ins.line, ins.col, f"Arguments mismatch for instruction 'tensormap.replace': new_val "
                                                f"{P.fmt(new)} " + ("must be an immediate for ." + field
                                                                    if field in _TENSORMAP_ENUMS else
                                                                    f"is {bits}-bit, not .{want}"))


def check(ins: P.Instruction, reg_types=None, target=None):
    """Too few or too many operands, or a vector of the wrong size, is a syntax error as in ptxas: never an
    operand silently ignored, never a missing one reaching an instruction compiler as None."""
    check_wide(ins, target)
    check_tensormap(ins, reg_types, target)
    got = spec(ins)
    if got is None:
        return
    name, req, opt, vecs = got
    allowed = counts(req, opt)
    n = len(ins.operands)
    if n not in allowed:
        want = " or ".join(str(a) for a in allowed)
        names = ", ".join(req + [f"{{{o}}}" for o in opt]) or "no operands"
        raise PtxSyntaxError(ins.line, ins.col, f"Arguments mismatch for instruction '{name}': {n} operands, "
                                                f"{name} takes {want} ({names})")
    # with .L2::cache_hint the last operand is the 64-bit cache policy (a register or an immediate); cp.async's
    # optional src-size before it is 32-bit or an ignore-src predicate (ptxas probe: a 32-bit policy or a 64-bit
    # src-size is "Arguments mismatch")
    if "cache-policy" in req:
        at = n - 1 if name == "cp.async" else req.index("cache-policy")
        bits = _reg_bits(ins.operands[at], reg_types)
        if bits is not None and bits != 64:
            raise PtxSyntaxError(ins.line, ins.col, f"Arguments mismatch for instruction '{name}': the cache-policy "
                                                    f"operand {P.fmt(ins.operands[at])} is {bits}-bit, not .b64")
    if name == "atom" and opt and n == len(req) + 1:
        bits = _reg_bits(ins.operands[3], reg_types)
        if bits != 32:   # an immediate or another width: ptxas reads it as a cache policy or refuses it
            raise PtxSyntaxError(ins.line, ins.col, "Arguments mismatch for instruction 'atom': 4 operands, atom "
                                                    "takes 3 (d, [a], b)")
    if name == "cp.async" and n == len(req) + 1:
        bits = _reg_bits(ins.operands[3], reg_types)
        if bits is not None and bits not in (1, 32):
            raise PtxSyntaxError(ins.line, ins.col, f"Arguments mismatch for instruction 'cp.async': src-size "
                                                    f"{P.fmt(ins.operands[3])} is {bits}-bit, not .u32 (or an "
                                                    "ignore-src .pred)")
    for i, (what, k) in vecs.items():
        if i >= n or k is None:
            continue
        op = ins.operands[i]
        if what == "coords":
            vec = op.vec if isinstance(op, P.Addr) else None
            have = len(vec.items) if vec is not None else 0
            if have != k:
                raise PtxSyntaxError(ins.line, ins.col, f"Arguments mismatch for instruction '{name}': "
                                                        f"{have} tensor coordinates, .{_dim(ins.opcode.split('.'))}d "
                                                        f"takes {k} (PTX ISA 9.7.9.25.5.1)")
            continue
        have = _items(op)
        if what == "scalar":   # ptxas takes {%r1} for a scalar, not two registers for one wider value
            if have is not None and have != 1:
                raise PtxSyntaxError(ins.line, ins.col, f"Argument vector size mismatch for instruction '{name}': "
                                                        f"operand {i + 1} is a vector of {have}, {ins.opcode} has "
                                                        "no .v2/.v4/.v8")
            continue
        if have != k:
            got_s = f"a vector of {have}" if have is not None else "a scalar"
            raise PtxSyntaxError(ins.line, ins.col, f"Arguments mismatch for instruction '{name}': operand {i + 1} "
                                                    f"is {got_s}, {ins.opcode} takes a vector of {k} {what}")


# -- immediate operands ptxas range-checks (ptxas probe: tests/fixtures/strict/probe_immediates.py) ------------
# ptxas holds an immediate as a 64-bit value and checks some operands on its low 32 bits: each rule names the
# view it checks (s64, u32, s32) and the one its message prints.

def _s64(v):
    return (v + 2 ** 63) % 2 ** 64 - 2 ** 63


def _u32(v):
    return v % 2 ** 32


def _s32(v):
    return (v + 2 ** 31) % 2 ** 32 - 2 ** 31


# each rule returns None or ptxas's message, with {A} for "Argument i of instruction 'name'"
def _rng(lo, hi, view=_s64, shown=None):
    def rule(v):
        if not lo <= view(v) <= hi:
            return f"{{A}}: value '{(shown or view)(v)}' out of range, expected to be in range [{lo}..{hi}]"
    return rule


def _mult(n, view=_s64):
    def rule(v):
        if view(v) % n:
            return f"{{A}}: unexpected value '{view(v)}', expected to be multiple of {n}"
    return rule


def _among(values, view=_s64):
    def rule(v):
        if view(v) not in values:
            return f"{{A}}: unexpected value '{view(v)}', expected to be {' or '.join(str(x) for x in values)}"
    return rule


def _positive(view=_s64, zero_only=False):
    def rule(v):
        if view(v) == 0 or view(v) < 0 and not zero_only:
            return f"{{A}} : value '{view(v)}' expected to be a non-zero positive"
    return rule


def _pow2(v):
    if _s32(v) & (_s32(v) - 1):
        return "Argument {i} of '{name}' instruction: value must be power of 2"


_TENSORMAP_VALUES = {"elemtype": 12, "swizzle_mode": 3, "interleave_layout": 2, "fill_mode": 1}


def _immediate_rules(ins: P.Instruction):
    """[(operand index, ptxas's instruction name, [rules])] for `ins`."""
    parts = ins.opcode.split(".")
    s = set(parts)
    base, n = parts[0], len(ins.operands)
    if base == "bfe":
        return [(2, "bfe", [_rng(0, 255)]), (3, "bfe", [_rng(0, 255)])]
    if base == "bfi":
        return [(3, "bfi", [_rng(0, 255)]), (4, "bfi", [_rng(0, 255)])]
    if base == "setmaxnreg":
        name = "setmaxnreg." + ("inc" if "inc" in s else "dec")
        return [(0, name, [_mult(8), _rng(24, 256, shown=_s32)])]
    if base == "mbarrier" and len(parts) > 1:
        if parts[1] in ("arrive", "arrive_drop") and "expect_tx" not in s and n == 3:
            return [(2, "mbarrier." + parts[1], [_positive()])]
        if parts[1] == "init":   # ptxas 13.4 (13.0 takes any count); PTX ISA 9.7.13.15.9: 1 .. 2^20-1
            return [(1, "mbarrier.init", [_rng(1, 1048575, _s32)])]
        if parts[1] in ("test_wait", "try_wait") and "parity" in s:
            return [(2, f"mbarrier.{parts[1]}.parity", [_among((0, 1))])]
        return []
    if base == "wgmma" and parts[1:2] == ["mma_async"] and "s32" not in s:
        # d, a, b, {sp-meta, sp-sel,} scale-d, imm-scale-a, imm-scale-b{, imm-trans-a}{, imm-trans-b} (9.7.15.5.2)
        name, at = "wgmma.mma_async with floating point types", 3 + 2 * ("sp" in s)
        bits = [(at, name, [_among((0, 1))])]
        bits += [(at + k, name, [_among((-1, 1))]) for k in (1, 2)]
        return bits + [(k, name, [_among((0, 1))]) for k in range(at + 3, n)]
    if base == "wgmma" and parts[1:2] == ["wait_group"]:
        return [(0, "wgmma.wait_group", [lambda v: None if _s64(v) >= 0 else
                                         f"{{A}}: unexpected value '{_s64(v)}', expected to be non-negative integer"])]
    if base == "cp" and parts[1:2] == ["async"] and len(parts) > 2:
        if parts[2] in ("ca", "cg"):
            sizes = (4, 8, 16) if parts[2] == "ca" else (16,)
            out = [(2, "cp.async", [_among(sizes)])]
            size = ins.operands[2] if n > 2 else None
            if n > 3 and isinstance(size, P.Imm) and _s64(size.value) in sizes:
                out.append((3, "cp.async", [_rng(0, _s64(size.value))]))   # src-size <= cp-size
            return out
        if parts[2] == "bulk" and "prefetch" in s and "tensor" not in s:
            return [(1, "cp.async.bulk.prefetch", [_mult(16), _rng(0, 1048560, shown=_s32)])]
        mask = [(n - 1 - ("L2::cache_hint" in s), "cp.async.bulk", [_rng(0, 65535)])] \
            if "multicast::cluster" in s else []   # ctaMask: 16 bits (ptxas 13.4)
        if parts[2] == "bulk" and parts[3:4] not in (["tensor"], ["wait_group"], ["commit_group"]):
            # size: a multiple of 16 (its low 32 bits), at most 2^20-16 (ptxas 13.4; 13.0 checks the low 32 bits)
            return [(2, "cp.async.bulk", [_mult(16, _u32), _rng(0, 1048560)])] + mask
        return mask
    if base == "cp" and parts[1:4] == ["reduce", "async", "bulk"] and "tensor" not in s:
        return [(2, "cp.reduce.async.bulk", [_mult(16, _u32), _rng(0, 1048560)])]
    if base == "tcgen05" and len(parts) > 1:
        if parts[1] in ("alloc", "dealloc"):
            name = "tcgen05." + parts[1]
            return [(1, name, [_mult(32, _u32), _positive(_s32, zero_only=True), _rng(32, 512, _s32), _pow2])]
        if parts[1] == "commit" and "multicast::cluster" in s:
            return [(1, "tcgen05.commit", [_rng(0, 65535)])]
        if parts[1] == "mma" and "block_scale" not in s and "ws" not in s:
            rest = ins.operands[4 + ("sp" in s):]
            if rest and isinstance(rest[0], P.Vec):
                rest = rest[1:]
            if len(rest) == 2:   # enable-input-d, scale-input-d: not with .kind::f8f6f4 (ptxas probe)
                if "kind::f8f6f4" in s:
                    return [(n - 1, "tcgen05.mma", [lambda v: "Illegal modifier '.kind::f8f6f4' for instruction "
                                                              "'tcgen05.mma' with 'arg scale-inp-d-imm'"])]
                if "kind::f16" in s or "kind::tf32" in s:
                    return [(n - 1, "tcgen05.mma", [_rng(0, 15, _s32)])]
        return []
    if base == "tensormap" and parts[1:2] == ["replace"]:
        field = next((p for p in parts if p in _TENSORMAP_VALUES or p in _TENSORMAP_FIELD2), None)
        hi = 4 if field in _TENSORMAP_FIELD2 else _TENSORMAP_VALUES.get(field)
        if hi is None:
            return []
        return [(1, "tensormap.replace", [lambda v, hi=hi, field=field: None if 0 <= _s64(v) <= hi else
                                          f"{{A}}: value '{_s64(v)}' expected to be in range [0..{hi}] when .{field} "
                                          "modifier is used."])]
    if base == "tensormap" and parts[1:2] == ["cp_fenceproxy"]:
        return [(2, "tensormap.cp_fenceproxy", [_among((128,), _u32)])]
    if base == "fence" and any(p.startswith("tensormap::") for p in parts) and "acquire" in s:
        return [(1, "fence.proxy", [_among((128,), _u32)])]
    return []


def check_immediates(ins: P.Instruction):
    """Immediates outside what ptxas accepts, in its words ("Argument 2 of instruction 'bfe': value '300' out of
    range, expected to be in range [0..255]"; arguments counted from 0, as ptxas counts them)."""
    for i, name, rules in _immediate_rules(ins):
        op = ins.operands[i] if i < len(ins.operands) else None
        if not isinstance(op, P.Imm) or op.fbits:
            continue
        for rule in rules:
            why = rule(op.value)
            if why:
                raise PtxSyntaxError(ins.line, ins.col, why.format(A=f"Argument {i} of instruction '{name}'", i=i,
                                                                   name=name))
