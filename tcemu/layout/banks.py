"""Shared-memory bank conflicts of one warp-wide instruction, counted in wavefronts as Nsight Compute
counts them (l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum).

Model (traces/smem_wavefronts_sm90.npz): 32 banks of 4 bytes, bank = (address / 4) mod 32. Threads are
served in phases: 32 threads for accesses of 4 bytes or less, 16 for 8 bytes, 8 for 16 bytes, and one
8x16B matrix (8 row addresses) per phase for ldmatrix/stmatrix. A phase costs, over all banks, the
largest number of distinct 4-byte words one bank must deliver (identical words are broadcast);
phases without an active thread cost nothing.
64- and 128-bit LOADS are pair-merged: if, for x = 1 or for x = 2, every active lane t has lane t ^ x
inactive or reading the same address (checked over the whole warp), a phase doubles: the whole warp
for 8-byte loads, each half-warp for 16-byte loads (the group then needs at most 128 bytes of distinct
data). Stores never merge. Exact on all 7,560 launches of traces/smem_wavefronts_sm90.npz.
"""
import ast
import re
from dataclasses import dataclass, field
from typing import List

import numpy as np
from numba import njit

from ..core.arch import check_arch
from .addressing import core_matrix_rows, operand_addresses
from ..core.errors import TcemuError
from ..core.validate import as_int, as_int_array, as_int_list, is_int, show

MAX_BATCH = 1 << 22  # patterns per wavefronts_batch call (4 M: the int64 copy of the addresses is 1 GiB)

BANKS, BANK_BYTES, WAVEFRONT_BYTES = 32, 4, 128


class BankError(TcemuError):
    """An op the analyzer does not know, or addresses/masks it cannot use."""


@dataclass(frozen=True)
class SmemOp:
    name: str          # canonical PTX spelling
    kind: str          # "ld", "st", "ldmatrix" or "stmatrix"
    width: int         # bytes each thread accesses (16 per row address for the matrix ops)
    matrices: int = 0  # .x1/.x2/.x4 of ldmatrix/stmatrix
    trans: bool = False

    @property
    def phase_threads(self) -> int:
        return 8 if self.matrices else WAVEFRONT_BYTES // max(self.width, BANK_BYTES)

    @property
    def pair_merges(self) -> bool:
        """64/128-bit loads serve twice as many threads per phase when lanes pair up (module doc)."""
        return self.kind == "ld" and self.width in (8, 16)

    @property
    def threads_used(self) -> int:
        """Threads whose address the instruction reads (ldmatrix .x1 uses threads 0-7)."""
        return 8 * self.matrices if self.matrices else 32

    @property
    def metric(self) -> str:
        return "ld" if self.kind in ("ld", "ldmatrix") else "st"


_WIDTH = {"u8": 1, "s8": 1, "b8": 1, "u16": 2, "s16": 2, "b16": 2, "f16": 2, "bf16": 2, "u32": 4, "s32": 4,
          "b32": 4, "f32": 4, "u64": 8, "s64": 8, "b64": 8, "f64": 8, "b128": 16}


def parse_op(op) -> SmemOp:
    """PTX spellings (ld.shared.v4.b32, ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16) or short forms
    (ld.v4.b32, lds.128, ldmatrix.x4.trans, stmatrix.x2)."""
    if not isinstance(op, str) or len(op) > 100:
        raise BankError("op", f"must be a PTX or SASS op name, got {show(op)}")
    parts = [p for p in op.strip().lower().split(".") if p and p not in ("sync", "aligned", "m8n8", "shared",
                                                                         "shared::cta", "volatile", "relaxed")]
    if not parts:
        raise BankError("op", "empty op")
    head = parts[0]
    if head in ("ldmatrix", "stmatrix", "ldsm", "stsm"):
        kind = "ldmatrix" if head in ("ldmatrix", "ldsm") else "stmatrix"
        xs = [p for p in parts if re.fullmatch(r"x[124]", p)]
        rest = [p for p in parts[1:] if p not in xs and p not in ("trans", "b16")]
        if len(xs) != 1 or rest:
            raise BankError("op", f"{show(op)}: expected {kind}[.sync.aligned.m8n8].x1|x2|x4[.trans][.shared.b16]")
        x, trans = int(xs[0][1]), "trans" in parts
        name = f"{kind}.sync.aligned.m8n8.x{x}{'.trans' if trans else ''}.shared.b16"
        return SmemOp(name, kind, 16, x, trans)
    if head in ("lds", "sts") and len(parts) <= 2:  # SASS spellings: lds, lds.u8, sts.64, lds.128
        suffix = parts[1] if len(parts) == 2 else "32"
        if suffix not in _SASS:
            raise BankError("op", f"{show(op)}: unknown SASS width .{suffix}")
        return _ld_st(head[:2], *_SASS[suffix])
    if head not in ("ld", "st"):
        raise BankError("op", f"{show(op)}: expected ld, st, ldmatrix or stmatrix")
    vec = 1
    types = []
    for p in parts[1:]:
        if p in ("v2", "v4"):
            vec = int(p[1])
        elif p in _WIDTH:
            types.append(p)
        else:
            raise BankError("op", f"{show(op)}: unknown qualifier .{p}")
    if len(types) != 1:
        raise BankError("op", f"{show(op)}: needs exactly one type (.u8 .u16 .b32 .b64 ...)")
    return _ld_st(head, vec, types[0])


_SASS = {"u8": (1, "u8"), "s8": (1, "s8"), "u16": (1, "u16"), "s16": (1, "s16"), "32": (1, "b32"),
         "64": (1, "b64"), "128": (4, "b32")}


def _ld_st(kind, vec, typ):
    width = vec * _WIDTH[typ]
    if width > 16:
        raise BankError("op", f"{kind} of {width} bytes per thread: at most 16")
    name = f"{kind}.shared{'.v%d' % vec if vec > 1 else ''}.{typ}"
    return SmemOp(name, kind, width)


@dataclass
class Phase:
    threads: List[int]      # active threads served in this phase
    wavefronts: int
    degree: int             # n-way: the most distinct words one bank must deliver
    bank_words: np.ndarray  # (32,) distinct words requested from each bank


@dataclass
class BankReport:
    op: SmemOp
    wavefronts: int
    ideal: int              # one wavefront per phase with an active thread
    phases: List[Phase] = field(default_factory=list)

    @property
    def conflicts(self) -> int:
        """Nsight Compute's bank conflicts: wavefronts beyond the ideal."""
        return self.wavefronts - self.ideal

    @property
    def bank_demand(self) -> np.ndarray:
        """(32,) distinct words each bank delivers, summed over phases."""
        return sum((p.bank_words for p in self.phases), np.zeros(BANKS, np.int64))

    def table(self) -> str:
        lines = [f"{self.op.name}: {self.wavefronts} wavefronts, ideal {self.ideal}, conflicts {self.conflicts}",
                 "phase  threads                wavefronts  degree  busiest banks"]
        for i, p in enumerate(self.phases):
            busy = np.argsort(-p.bank_words, kind="stable")[:4]
            banks = ", ".join(f"{b}:{p.bank_words[b]}" for b in busy if p.bank_words[b])
            lines.append(f"{i:>5}  {_ranges(p.threads):<22} {p.wavefronts:>10}  {p.degree:>5}-way  {banks}")
        return "\n".join(lines)


def _ranges(threads):
    out, start, prev = [], None, None
    for t in threads + [None]:
        if start is None:
            start = prev = t
        elif t is not None and t == prev + 1:
            prev = t
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = t
    return ",".join(out) if threads else "-"


def _check(op: SmemOp, addresses, mask):
    addrs = as_int_array(addresses, "addresses", -(1 << 62), 1 << 62, BankError)
    if addrs.ndim != 1 or addrs.size not in (op.threads_used, 32):
        raise BankError("addresses", f"{op.name} takes one address per thread: 32 (or the {op.threads_used} "
                                     f"it uses), got shape {addrs.shape}")
    full = np.zeros(32, np.int64)
    full[:addrs.size] = addrs
    mask = as_int(mask, "mask", 0, (1 << 32) - 1, BankError)
    if op.matrices and mask != 0xFFFFFFFF:
        raise BankError("mask", f"{op.kind} is .sync.aligned: all 32 threads execute it")
    mask &= (1 << op.threads_used) - 1
    bad = [t for t in range(32) if mask >> t & 1 and (full[t] < 0 or full[t] % op.width)]
    if bad:
        t = bad[0]
        raise BankError("addresses", f"thread {t}: {int(full[t]):#x} is not a non-negative multiple of the "
                                     f"{op.width}-byte access")
    return full, mask


def bank_conflicts(op, addresses, *, mask: int = 0xFFFFFFFF, arch: str = "sm90") -> BankReport:
    """Wavefronts of one warp-wide shared-memory instruction; `addresses` are the threads' byte addresses
    (ldmatrix/stmatrix: row addresses), `mask` the threads that execute it (ld/st only)."""
    check_arch(arch)
    op = op if isinstance(op, SmemOp) else parse_op(op)
    addrs, mask = _check(op, addresses, mask)
    report = BankReport(op, 0, 0)
    per = op.phase_threads
    if op.pair_merges and (_pair_redundant(addrs, mask, 1) or _pair_redundant(addrs, mask, 2)):
        per *= 2
    for start in range(0, op.threads_used, per):
        threads = [t for t in range(start, start + per) if mask >> t & 1]
        words = {(int(addrs[t]) // BANK_BYTES + w) for t in threads for w in range(max(op.width // BANK_BYTES, 1))}
        bank_words = np.zeros(BANKS, np.int64)
        for w in words:
            bank_words[w % BANKS] += 1
        degree = int(bank_words.max()) if threads else 0
        report.phases.append(Phase(threads, degree, degree, bank_words))
        report.wavefronts += degree
        report.ideal += bool(threads)
    return report


@njit(cache=True)
def _pair_redundant(addrs, mask, x):
    """Every active lane t has lane t ^ x inactive or at the same address."""
    for t in range(32):
        if (mask >> t) & 1 and (mask >> (t ^ x)) & 1 and addrs[t] != addrs[t ^ x]:
            return False
    return True


@njit(cache=True)
def _batch(addrs, masks, width, base_per, used, merges, out):
    nwords = max(width // 4, 1)
    seen = np.empty((32, 128), np.int64)  # distinct words per bank in the current phase
    count = np.zeros(32, np.int64)
    for i in range(addrs.shape[0]):
        total = 0
        per = base_per
        if merges and (_pair_redundant(addrs[i], masks[i], 1) or _pair_redundant(addrs[i], masks[i], 2)):
            per = 2 * base_per
        for start in range(0, used, per):
            count[:] = 0
            degree = 0
            for t in range(start, start + per):
                if not (masks[i] >> t) & 1:
                    continue
                for w in range(nwords):
                    word = addrs[i, t] // 4 + w
                    b = word % 32
                    new = True
                    for j in range(count[b]):
                        if seen[b, j] == word:
                            new = False
                            break
                    if new:
                        seen[b, count[b]] = word
                        count[b] += 1
                        degree = max(degree, count[b])
            total += degree
        out[i] = total


def wavefronts_batch(op, addresses, masks=None) -> np.ndarray:
    """(n,) wavefronts for n patterns of one op: addresses (n, 32), masks (n,) 32-bit thread masks or None
    (all active; the matrix ops take no other)."""
    op = op if isinstance(op, SmemOp) else parse_op(op)
    addrs = as_int_array(addresses, "addresses", 0, 1 << 62, BankError, ndim=2, max_size=MAX_BATCH * 32)
    if addrs.shape[1] != 32:
        raise BankError("addresses", f"must have shape (n, 32), got {addrs.shape}")
    if masks is None:
        masks = np.full(addrs.shape[0], 0xFFFFFFFF, np.int64)
    else:  # one mask per pattern, checked before the kernel indexes it (a short array was read past its end)
        masks = as_int_array(masks, "masks", 0, (1 << 32) - 1, BankError, shape=(addrs.shape[0],))
        if op.matrices and np.any(masks != 0xFFFFFFFF):
            raise BankError("masks", f"{op.kind} is .sync.aligned: all 32 threads execute it")
    if np.any(addrs % op.width):
        raise BankError("addresses", f"every address must be a non-negative multiple of {op.width}")
    addrs, masks = np.ascontiguousarray(addrs), np.ascontiguousarray(masks)
    out = np.empty(addrs.shape[0], np.int64)
    _batch(addrs, masks, op.width, op.phase_threads, op.threads_used, op.pair_merges, out)
    return out


# ---- pattern builders: 32 thread addresses without listing them by hand ----

def pattern_from_layout(shape, stride, *, element_bytes: int = 1, base: int = 0) -> np.ndarray:
    """Thread t -> base + element_bytes * (CuTe layout shape:stride)(t), colexicographic like CuTe.

    pattern_from_layout((8, 4), (64, 4), element_bytes=4): 8 rows of 64 floats, 4 threads per row."""
    shape = as_int_list([shape] if is_int(shape) else shape, "shape", None, 1, 1 << 20, BankError)
    stride = as_int_list([stride] if is_int(stride) else stride, "stride", len(shape), -(1 << 32), 1 << 32, BankError)
    element_bytes = as_int(element_bytes, "element_bytes", 1, 16, BankError)
    base = as_int(base, "base", 0, 1 << 32, BankError)
    if not 1 <= len(shape) <= 8 or np.prod(np.minimum(shape, 32)) < 32:
        raise BankError("shape", f"{show(shape)}:{show(stride)} must cover 32 threads with 1 to 8 modes")
    out = []
    for t in range(32):  # Python ints: no int64 wrap
        offset, rest = 0, t
        for extent, st in zip(shape, stride):
            offset, rest = offset + (rest % extent) * st, rest // extent
        out.append(base + element_bytes * offset)
    if not all(0 <= a < 1 << 40 for a in out):
        raise BankError("stride", f"{show(shape)}:{show(stride)} gives addresses outside [0, 2^40)")
    return np.array(out, np.int64)


MAX_EXPRESSION = 1000   # characters of a --pattern expression
MAX_DEPTH = 200         # nesting of its operators (a + b + ... chains nest one level per operator)
VALUE_LIMIT = 1 << 64   # every intermediate value stays below this (no huge integers, however written)


def pattern_from_expression(expr: str) -> np.ndarray:
    """Addresses from an arithmetic expression in t (thread index): e.g. "(t % 8) * 128 + (t // 8) * 16".

    Only integers, t, + - * // % << >> & | ^ ~ and parentheses are allowed; nothing is executed. The text is
    at most 1,000 characters with at most 200 nested operators, and every intermediate value stays below 2^64 in
    magnitude, so no expression runs long or grows huge numbers."""
    if not isinstance(expr, str) or len(expr) > MAX_EXPRESSION:
        raise BankError("pattern", f"must be an expression of at most {MAX_EXPRESSION} characters, got {show(expr)}")
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Load, ast.Add, ast.Sub,
               ast.Mult, ast.FloorDiv, ast.Mod, ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor,
               ast.Invert, ast.USub, ast.UAdd)
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as e:
        raise BankError("pattern", f"{show(expr)} is not an expression ({e.msg})") from None
    stack = [(tree, 0)]
    while stack:  # iterative: the check itself must not recurse on a deep tree
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise BankError("pattern", f"{show(expr)} nests more than {MAX_DEPTH} operators")
        if not isinstance(node, allowed) or (isinstance(node, ast.Name) and node.id != "t") or \
                (isinstance(node, ast.Constant) and (type(node.value) is not int or abs(node.value) >= VALUE_LIMIT)):
            raise BankError("pattern", f"{show(expr)}: only integers below 2^64, t and integer operators are allowed")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))

    def ev(n, t):
        if isinstance(n, ast.Expression):
            return ev(n.body, t)
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Name):
            return t
        if isinstance(n, ast.UnaryOp):
            v = ev(n.operand, t)
            return -v if isinstance(n.op, ast.USub) else (~v if isinstance(n.op, ast.Invert) else v)
        a, b = ev(n.left, t), ev(n.right, t)
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
               ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b, ast.LShift: lambda: a << b,
               ast.RShift: lambda: a >> b, ast.BitAnd: lambda: a & b, ast.BitOr: lambda: a | b,
               ast.BitXor: lambda: a ^ b}
        if isinstance(n.op, (ast.FloorDiv, ast.Mod)) and b == 0:
            raise BankError("pattern", f"{show(expr)}: division by zero at t = {t}")
        if isinstance(n.op, (ast.LShift, ast.RShift)) and not 0 <= b < 64:
            raise BankError("pattern", f"{show(expr)}: shift by {show(b)} at t = {t}")
        v = ops[type(n.op)]()
        if not -VALUE_LIMIT < v < VALUE_LIMIT:
            raise BankError("pattern", f"{show(expr)}: an intermediate value reaches 2^64 at t = {t}")
        return v
    values = [ev(tree, t) for t in range(32)]
    bad = [t for t, v in enumerate(values) if not -(1 << 40) < v < 1 << 40]
    if bad:
        raise BankError("pattern", f"{show(expr)} gives {show(values[bad[0]])} at t = {bad[0]}, not a shared-memory "
                                   "address")
    return np.array(values, np.int64)


def pattern_from_descriptor(desc, rows, cols, *, tile_rows: int, tile_k: int, dtype: str,
                            major: str = "K") -> np.ndarray:
    """Thread t's address = that of element (rows[t], cols[t]) of the tile the descriptor describes.

    E.g. an epilogue where thread t stores 16 bytes at row t % 8, column 8 * (t // 8) of a bf16 tile."""
    rows = as_int_array(rows, "rows", 0, 1 << 20, BankError, shape=(32,))
    cols = as_int_array(cols, "cols", 0, 1 << 20, BankError, shape=(32,))
    tile = operand_addresses(desc, rows=tile_rows, k=tile_k, dtype=dtype, major=major)
    if rows.min() < 0 or cols.min() < 0 or rows.max() >= tile_rows or cols.max() >= tile_k:
        raise BankError("rows", f"(row, column) outside the {tile_rows} x {tile_k} tile")
    return tile[rows, cols]


def core_matrix_banks(desc, *, rows: int, k: int, dtype: str, major: str = "K") -> np.ndarray:
    """(mn_blocks, k_blocks) of the worst bank degree over each 8x16B core matrix the tensor core reads:
    1 means its 8 rows cover all 32 banks once. Informational: Nsight Compute reports no bank
    conflicts for tensor-core (wgmma) reads, so nothing here is measured (README)."""
    cm = core_matrix_rows(desc, rows=rows, k=k, dtype=dtype, major=major)  # (i, j, 8) row addresses
    words = (cm[..., None] // BANK_BYTES + np.arange(4)) % BANKS       # (i, j, 8, 4) banks
    counts = np.zeros(cm.shape[:2] + (BANKS,), np.int64)
    for b in range(BANKS):
        counts[..., b] = (words == b).sum(axis=(2, 3))
    return counts.max(axis=2)
