"""Replay of a `wgmma_zero_sign` trace (scripts/capture_edges.py, traces/README.md): one dense or sparse wgmma
(N = 8) per case on patterned operands, every thread's raw D registers; the questions were the sign of an exact
zero sum and whether a -133 zero floor applies where no zero term is visible (NOTES.md "Edge capture"). The H100
capture (traces/wgmma_zero_sign_sm90.npz) settled both: the unit gives +0 for every exact zero, and scale-d = 0
adds a +0 accumulator (hopper.fdp_unit); tcemu's model now matches all 120 cases.

    r = replay_zero_sign(meta, columns)          # the trace's meta dict and numeric columns
    r.ok, r.cases[i].values_matched, r.table()   # per case: tcemu.wgmma / tcemu.wgmma_sp against the registers
    replay_zero_sign(meta, columns, hypotheses=HYPOTHESES)  # also: does each alternative explain each case?

Operands are rebuilt from the patterns (element (r, k) of an operand with `cols` elements per row is
pool[off + (r * cols + k) % len]), laid into shared memory as the capture did (K-major, no swizzle) and run
through tcemu's instruction models. Alternatives (HYPOTHESES; "model" is tcemu as it stands), each the model with
one rule changed:
  signed_zero            IEEE 754's sign of an exact zero sum: -0 when every term is -0 (fdp.FdpUnit.signed_zero;
                         tcemu's dense rule before this capture; sparse.py's rule "signed")
  no_c_term              scale-d 0 adds no C term (fdp.FdpUnit.zero_c_when_absent off; tcemu before this capture):
                         no zero floor unless a product is zero
  zeros                  sparse rule "zeros": pruned positions are (scale-a-signed) +0 x B terms (their B here is
                         finite, so 0 x inf never arises)
  pruned_plus_zero       sparse: pruned positions are +0 terms
Against the capture: signed_zero fails every dense case whose terms are all -0 with C given; no_c_term fails
floor_dense_noc and floor_sparse_noc; the sparse pruned-position alternatives match every case here (the +0
accumulator already puts a zero term at -133, so a pruned zero term changes nothing: only an inf or NaN of B at a
pruned position separates "zeros", and traces/wgmma_sp_numerics_sm90.npz rejects it there).
"""
from dataclasses import dataclass, field
from typing import Dict, List, NamedTuple, Optional

import numpy as np

from ...arith.fdp import OUT_NUMPY, decode_operand, fused_dot
from ...core.errors import TcemuError, TraceError
from ...core.validate import as_int, is_int, show
from ...hopper.sparse import SP_K_OF, densify, gather_b, meta_nibbles, wgmma_sp
from ...hopper.wgmma import K_OF, fdp_unit, legal_n, wgmma
from ...layout.descriptors import GmmaDescriptor
from ...layout.fragments import to_d_registers
from ...layout.smem import SharedMemory
from ..archive import MAX_POOL, Trace, check_declared
from .base import GroupResult, Kind, ReplayResult, col, meta_list, offsets

KIND = "wgmma_zero_sign"
COLUMNS = ("inst", "group", "scale_d", "sp_meta", "a_off", "a_len", "b_off", "b_len", "c_off", "c_len", "pool",
           "d_offsets", "d_regs")
DENSE_HYPOTHESES = ("model", "signed_zero", "no_c_term")
SPARSE_HYPOTHESES = ("model", "signed_zero", "no_c_term", "zeros", "pruned_plus_zero")
HYPOTHESES = tuple(dict.fromkeys(DENSE_HYPOTHESES + SPARSE_HYPOTHESES))
_BASE, _B_OFF = 0x400, 4096  # where this replay lays A and B (the capture's own base is not recorded: no swizzle)
_NEG_ZERO = {"tf32": 0x80000000, "f16": 0x8000, "bf16": 0x8000, "e4m3": 0x80, "e5m2": 0x80}
_ONE = {"tf32": 0x3F800000, "f16": 0x3C00, "bf16": 0x3F80, "e4m3": 0x38, "e5m2": 0x3C}


class CaseInputs(NamedTuple):
    sparse: bool
    atype: str
    btype: str
    dtype: str
    n: int
    k: int            # logical K
    scale_a: int
    scale_b: int
    scale_d: bool
    sp_meta: int      # the metadata register of every thread (sparse)
    a: np.ndarray     # (64, K) or (64, K/2) stored, raw bits
    b: np.ndarray     # (N, K) raw bits
    c: np.ndarray     # (64, N) raw bits of D's type


@dataclass
class CaseResult:
    index: int
    group: str
    form: str
    values: int
    values_matched: int
    first_mismatch: Optional[str] = None
    hypotheses: Dict[str, bool] = field(default_factory=dict)  # alternative -> every register matches

    @property
    def ok(self) -> bool:
        return self.values == self.values_matched

    @property
    def group_key(self) -> str:
        """A replay group name: what the case asks and the instruction form."""
        return f"{self.group} {self.form}"

    def describe(self) -> str:
        return (f"case {self.index} {self.group_key}: {self.values - self.values_matched} of {self.values} registers "
                f"differ" + (f" (first: {self.first_mismatch})" if self.first_mismatch else ""))


@dataclass
class ZeroSignReplay:
    meta: dict
    cases: List[CaseResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.cases) and all(c.ok for c in self.cases)

    def by_group(self) -> Dict[str, Dict[str, int]]:
        """group -> {"cases": n, "model": cases matched, <hypothesis>: cases it explains, ...}."""
        out: Dict[str, Dict[str, int]] = {}
        for c in self.cases:
            g = out.setdefault(c.group, {"cases": 0, "model": 0})
            g["cases"] += 1
            g["model"] += c.ok
            for h, ok in c.hypotheses.items():
                if h != "model":
                    g[h] = g.get(h, 0) + ok
        return out

    def table(self) -> str:
        lines = []
        for name, g in self.by_group().items():
            alts = ", ".join(f"{h} {v}" for h, v in g.items() if h not in ("cases", "model"))
            lines.append(f"{name:<22} {g['cases']:>3} cases, model {g['model']:>3}" + (f"; {alts}" if alts else ""))
        return "\n".join(lines)


def _check(meta, cols, registers=True):
    """The trace reader's checks of a wgmma_zero_sign trace (_check_zero_sign below), for a meta and columns handed
    in directly: TraceError naming the field unless they have the documented form. Without `registers`, a
    capture plan's: the operands only (no D registers yet)."""
    if not isinstance(meta, dict) or meta.get("kind") != KIND:
        raise TraceError("meta.kind", f"expected the meta of a tcemu-trace of kind {KIND!r}, got {show(meta)}")
    if not isinstance(cols, dict) or not all(isinstance(k, str) for k in cols):
        raise TraceError("columns", f"must map column names to arrays, got {show(cols)}")
    missing = [c for c in (COLUMNS if registers else COLUMNS[:-2]) if c not in cols]
    if missing:
        raise TraceError(", ".join(missing), "columns missing")
    if registers:
        check_declared(Trace("<columns>", meta, cols), {KIND: TRACE_KINDS[0]})  # as tcemu.traces.check_trace
    else:
        check_zero_sign_operands(meta, cols)


def _tile(cols, p, rows, width):
    off, ln = int(cols[f"{p}_off"]), int(cols[f"{p}_len"])
    return cols["pool"][off + np.arange(rows * width) % ln].reshape(rows, width)


def case_inputs(meta, cols, i) -> CaseInputs:
    """The operands of case i, rebuilt from its patterns (the D registers need not be there: a capture plan)."""
    _check(meta, cols, registers=False)
    return _case_inputs(meta, cols, as_int(i, "i", 0, cols["inst"].size - 1, TraceError))


def _case_inputs(meta, cols, i) -> CaseInputs:
    sparse, kind, n, sa, sb = meta["instantiations"][int(cols["inst"][i])]
    atype, btype, dtype = meta["kinds"][kind][:3]
    k = (SP_K_OF if sparse else K_OF)[atype]
    one = {"a_off": cols["a_off"][i], "a_len": cols["a_len"][i], "b_off": cols["b_off"][i],
           "b_len": cols["b_len"][i], "c_off": cols["c_off"][i], "c_len": cols["c_len"][i], "pool": cols["pool"]}
    a = _tile(one, "a", 64, k // 2 if sparse else k)
    b = _tile(one, "b", n, k)
    c = _tile(one, "c", 64, n).astype(np.uint16 if dtype == "f16" else np.uint32)
    return CaseInputs(bool(sparse), atype, btype, dtype, int(n), k, int(sa), int(sb), bool(cols["scale_d"][i]),
                      int(cols["sp_meta"][i]), a, b, c)


def _smem(x: CaseInputs, b=None):
    da = GmmaDescriptor(_BASE, lbo=128, sbo=256)
    db = GmmaDescriptor(_BASE + _B_OFF, lbo=128, sbo=(512 if x.sparse else 256))
    smem = SharedMemory()
    smem.write_operand(da, x.a, dtype=x.atype)
    smem.write_operand(db, x.b if b is None else b, dtype=x.btype)
    return smem, da, db


def _unit_variant(x: CaseInputs, **rule):
    """D bits of the case through the Hopper unit with one rule changed (fdp.FdpUnit fields): the stored
    products (sparse: each with the B element its metadata names; one pattern for every row here) and C."""
    A = decode_operand(x.a, x.atype, negate=x.scale_a == -1)
    b = x.b
    if x.sparse:
        nib = meta_nibbles(np.full(128, x.sp_meta, np.uint32), x.atype)
        if not (nib == nib[0]).all():
            raise TraceError("sp_meta", "a unit variant needs the same metadata in every row")
        b = gather_b(x.b, nib[0], x.atype)
    B = decode_operand(b, x.btype, negate=x.scale_b == -1)
    C = decode_operand(x.c, x.dtype) if x.scale_d else None
    return fused_dot(A, B, C, fdp_unit(x.atype, x.dtype)._replace(**rule))


def case_bits(x: CaseInputs, hypothesis: str = "model") -> np.ndarray:
    """tcemu's (64, N) raw D bits for the case (uint32, or uint16 for f16) under `hypothesis`."""
    if not isinstance(x, CaseInputs):
        raise TraceError("x", f"must be the CaseInputs of a case (zero_sign.case_inputs), got {show(x)}")
    names = SPARSE_HYPOTHESES if x.sparse else DENSE_HYPOTHESES
    if not isinstance(hypothesis, str) or hypothesis not in names:
        raise TraceError("hypothesis", f"{show(hypothesis)}: {'sparse' if x.sparse else 'dense'} cases take "
                                       f"{', '.join(names)}")
    raw = np.uint16 if x.dtype == "f16" else np.uint32
    if hypothesis == "signed_zero":
        return _unit_variant(x, signed_zero=True).astype(raw)
    if hypothesis == "no_c_term":
        return _unit_variant(x, zero_c_when_absent=False).astype(raw)
    c, scale_d = x.c, x.scale_d
    b = None
    if hypothesis == "pruned_plus_zero":
        nib = meta_nibbles(np.full(128, x.sp_meta, np.uint32), x.atype)
        if not (nib == nib[0, 0]).all():
            raise TraceError("sp_meta", "pruned_plus_zero needs one metadata nibble in every chunk")
        kept = densify(np.ones(x.a.shape, np.uint32), nib, x.atype)[0] != 0  # logical columns the stored ones take
        one = _ONE[x.btype] | (_NEG_ZERO[x.btype] if (x.scale_a == -1) != (x.scale_b == -1) else 0)  # product +0
        b = np.where(kept[None, :], x.b, one).astype(x.b.dtype)
    smem, da, db = _smem(x, b)
    common = dict(shape=f"m64n{x.n}k{x.k}", dtype_a=x.atype, dtype_b=x.btype, dtype_d=x.dtype,
                  c=c.view(OUT_NUMPY[x.dtype]), scale_d=scale_d, scale_a=x.scale_a, scale_b=x.scale_b)
    if x.sparse:
        rule = {"zeros": "zeros", "pruned_plus_zero": "zeros"}.get(hypothesis, "selected")
        d = wgmma_sp(smem, da, db, sparse_meta=np.full(128, x.sp_meta, np.uint32), rule=rule, **common)
    else:
        d = wgmma(smem, da, db, **common)
    return d.view(raw).copy()


def case_registers(meta, cols, i, hypothesis: str = "model") -> np.ndarray:
    """tcemu's (128, nregs) raw D registers for case i (the layout the trace stores)."""
    x = case_inputs(meta, cols, i)
    return to_d_registers(case_bits(x, hypothesis), x.dtype)


def hardware_registers(cols, i, nregs: int) -> np.ndarray:
    lo, hi = int(cols["d_offsets"][i]), int(cols["d_offsets"][i + 1])
    if hi - lo != 128 * nregs:
        raise TraceError("d_offsets", f"case {i}: {hi - lo} registers stored, expected 128 x {nregs}")
    return cols["d_regs"][lo:hi].reshape(128, nregs)


def replay_zero_sign(meta, cols, hypotheses=()) -> ZeroSignReplay:
    """Every case through tcemu.wgmma / tcemu.wgmma_sp against the captured registers; `hypotheses` (names from
    HYPOTHESES) are also tried per case, each where it applies (dense or sparse)."""
    _check(meta, cols)
    if isinstance(hypotheses, str) or not isinstance(hypotheses, (list, tuple)):
        raise TraceError("hypotheses", f"must be a list of names from {', '.join(HYPOTHESES)}, got {show(hypotheses)}")
    unknown = [h for h in hypotheses if not isinstance(h, str) or h not in HYPOTHESES]
    if unknown:
        raise TraceError("hypotheses", f"unknown {show(unknown)}; expected names from {', '.join(HYPOTHESES)}")
    result = ZeroSignReplay(meta)
    for i in range(cols["inst"].size):
        x = _case_inputs(meta, cols, i)
        group = meta["groups"][int(cols["group"][i])]
        group = group["name"] if isinstance(group, dict) else str(group)
        form = (f"{'sp ' if x.sparse else ''}{x.atype}.{x.btype}->{x.dtype}" + (" neg-a" if x.scale_a == -1 else "")
                + ("" if x.scale_d else " scale-d 0") + (f" meta {x.sp_meta:#010x}" if x.sparse else ""))
        try:
            model = to_d_registers(case_bits(x), x.dtype)
        except TcemuError as e:
            model = None
            err = f"tcemu raised {type(e).__name__}: {e}"
        hw = hardware_registers(cols, i, (x.n // 4) if x.dtype == "f16" else x.n // 2)
        same = model == hw if model is not None else np.zeros(hw.shape, bool)
        first = err if model is None else None
        if model is not None and not same.all():
            t, j = (int(v) for v in np.argwhere(~same)[0])
            first = f"thread {t} reg {j}: hardware {int(hw[t, j]):#010x}, tcemu {int(model[t, j]):#010x}"
        case = CaseResult(i, group, form, hw.size, int(same.sum()), first)
        names = SPARSE_HYPOTHESES if x.sparse else DENSE_HYPOTHESES
        for h in hypotheses:
            if h in names:
                try:
                    case.hypotheses[h] = bool((to_d_registers(case_bits(x, h), x.dtype) == hw).all())
                except TcemuError:
                    case.hypotheses[h] = False
        result.cases.append(case)
    return result


# ---- the kind: its consistency check (load_trace and replay both run it) and its replay

# wgmma kinds a wgmma_zero_sign case may name: the floating-point ones (PTX 9.7.15.5.1)
_ZS_KINDS = {("tf32", "tf32", "f32"), ("f16", "f16", "f32"), ("f16", "f16", "f16"), ("bf16", "bf16", "f32")} | {
    (a, b, d) for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2") for d in ("f16", "f32")}
_BITS = {"tf32": 32, "f32": 32, "f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8}


def _check_zero_sign(meta, cols, registers=True):
    """wgmma_zero_sign: kinds are floating-point wgmma kinds, instantiations legal dense or sparse forms, every
    case's A, B and C patterns non-empty slices of the pool holding bits of their types, and (`registers`) its
    registers 128 threads x the D registers of its form."""
    kinds = meta_list(meta, "kinds", 16, lambda v: isinstance(v, list) and len(v) == 3 and
                      all(isinstance(t, str) for t in v) and tuple(v) in _ZS_KINDS)
    insts = meta_list(meta, "instantiations", 4096, lambda v: isinstance(v, list) and len(v) == 5 and
                      all(is_int(x) for x in v) and v[0] in (0, 1) and 0 <= v[1] < len(kinds) and
                      legal_n(v[2], kinds[v[1]][2]) and v[3] in (1, -1) and v[4] in (1, -1))
    groups = meta_list(meta, "groups", 256, lambda v: (isinstance(v, dict) and isinstance(v.get("name"), str)
                                                        and 0 < len(v["name"]) <= 80) or
                       (isinstance(v, str) and 0 < len(v) <= 80))
    n = col(cols, "inst", 0, len(insts) - 1, (None,)).size
    col(cols, "group", 0, len(groups) - 1, (n,))
    col(cols, "scale_d", 0, 1, (n,))
    col(cols, "sp_meta", 0, (1 << 32) - 1, (n,))
    pool = col(cols, "pool", 0, (1 << 32) - 1, (None,))
    if pool.size > MAX_POOL:
        raise TraceError("pool", f"{pool.size:,} values; a trace's pool holds at most {MAX_POOL:,}")
    pats = {}
    for p in ("a", "b", "c"):
        o = col(cols, f"{p}_off", 0, pool.size - 1 if pool.size else 0, (n,)).astype(np.int64)
        ln = col(cols, f"{p}_len", 1, max(pool.size, 1), (n,)).astype(np.int64)
        if n and (not pool.size or int((o + ln).max()) > pool.size):
            raise TraceError(f"{p}_off, {p}_len", "each pattern must be a non-empty slice of pool")
        pats[p] = (o, ln)
    if not registers:  # a plan's columns (scripts/capture_edges.py): the operands only
        return
    regs = col(cols, "d_regs", 0, (1 << 32) - 1, (None,))
    off = offsets(cols, "d_offsets", n, regs.size)
    inst = cols["inst"].astype(np.int64)
    for i in range(n):
        sparse, kind, width, _, _ = insts[int(inst[i])]
        types = dict(zip("abc", kinds[kind]))
        for p, (o, ln) in pats.items():
            values = pool[int(o[i]):int(o[i] + ln[i])]
            if int(values.max()) >> _BITS[types[p]]:
                raise TraceError(f"{p}_off", f"case {i}: its {p.upper()} pattern holds values wider than "
                                             f"{types[p]}'s {_BITS[types[p]]} bits")
        per_thread = width // 4 if kinds[kind][2] == "f16" else width // 2
        if off[i + 1] - off[i] != 128 * per_thread:
            raise TraceError("d_offsets", f"case {i} must hold 128 x {per_thread} registers")


def check_zero_sign_operands(meta: dict, cols: dict) -> None:
    """The wgmma_zero_sign checks of everything but the captured registers (a capture plan has none yet); meta
    and cols are already a dict of kind wgmma_zero_sign and a dict of columns (_check checks that)."""
    _check_zero_sign(meta, cols, registers=False)


def _replay_zero_sign(trace: Trace, result: ReplayResult, max_report: int):
    """Exact-zero signs and the zero floor of wgmma (wgmma_zero_sign): replay_zero_sign, one group per question
    and form, every D register compared."""
    for case in replay_zero_sign(trace.meta, trace.columns).cases:
        g = result.groups.setdefault(case.group_key, GroupResult())
        g.cases += 1
        g.cases_matched += case.ok
        g.values += case.values
        g.values_matched += case.values_matched
        if not case.ok and len(result.mismatches) < max_report:
            result.mismatches.append(case.describe()[:400])


TRACE_KINDS = (Kind(KIND, COLUMNS, _check_zero_sign, _replay_zero_sign),)
