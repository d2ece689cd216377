"""mma.sync.aligned (PTX ISA 9.7.14.5.14): a warp-synchronous D = A * B + C on register fragments, executed at once
for the whole warp (tcemu.hopper.mma_sync: forms, fragments and the HMMA / IMMA arithmetic).

.f64 forms run as DMMA, which the H100 computes as a chain of DFMA over k in order, each rounded to nearest even:
d = fma(a[k], b[k], d) from d = c, with DFMA's NaN rules (fparith.NAN_POLICY); traces/mma_sync_sm90.npz, 784 of
784 cases of m8n8k4 and m16n8k4/k8/k16 (one fused rounding, or the reverse order, each fails).
All 32 lanes must execute it (.aligned): a diverged warp is a HazardError, as for ldmatrix.
"""
import numpy as np

from ...core.errors import TcemuError
from ...hopper import mma_sync as hopper
from ...layout.mma_fragments import scatter
from .. import fparith
from .. import parser as P
from ..errors import KernelFault, PtxSyntaxError, PtxUnsupported
from ..types import TYPES
from .common import require_target, where, whole_warp
from .registry import register

__all__ = ["execute", "dmma", "registers"]


def dmma(A, B, C) -> np.ndarray:
    """(m, n) f64 bits: the chain of DFMA over k in order from C (A (m, k), B (k, n), C (m, n) uint64 bits)."""
    m, k = A.shape
    n = B.shape[1]
    d = np.ascontiguousarray(C, np.uint64).ravel()
    for kk in range(k):   # K <= 16 rounded steps, each vectorised over the m x n outputs
        a = np.repeat(A[:, kk], n)
        b = np.tile(B[kk], m)
        d = fparith.float_op("fma", "f64", a, b, d, rounding="rn")
    return d.reshape(m, n)


def execute(form: hopper.MmaForm, a_words, b_words, c_words) -> np.ndarray:
    """Every lane's D register words (32, words) uint32 (an f64 register: two words, low first)."""
    if form.dtype_d != "f64":
        return hopper.mma_sync(form, a_words, b_words, c_words)
    A, B, C = hopper.operands(form, a_words, b_words, c_words)
    return scatter(dmma(A, B, C), form.m, form.n, 64)


def _form(ins):
    parts = ins.opcode.split(".")
    if parts[:3] != ["mma", "sync", "aligned"]:
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: mma.sync must be .aligned (mma.sync.aligned...)")
    try:
        return hopper.parse_form(parts[3:])
    except TcemuError as e:
        if getattr(e, "field", None) == "form":
            raise PtxUnsupported(ins.opcode, f"{e} ({ins.where()})") from None
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: {e}") from None


def registers(ins, op, what, want):
    """The registers of a vector operand that must hold `want` of them (PtxSyntaxError naming `what` else)."""
    items = op.items if isinstance(op, P.Vec) else None
    if items is None or len(items) != want:
        have = len(items) if items is not None else "a single operand"
        raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: {what} is a vector of {want} registers, got {have}")
    return items


@register("mma.sync")
def c_mma_sync(ins, prog, pc):
    form = _form(ins)
    require_target(ins, prog, f"mma.sync .{form.shape}.{form.dtype_a}", lambda s: s[0] >= form.least_sm,
                   f"sm_{form.least_sm} or higher")
    ops = ins.operands
    if len(ops) != 4:
        raise PtxSyntaxError(ins.line, ins.col, f"Arguments mismatch for instruction 'mma': {len(ops)} operands, mma "
                                                "takes 4 (d, a, b, c)")
    wide = form.dtype_d == "f64"
    t = TYPES["b64"] if wide else TYPES["b32"]
    regs = {w: registers(ins, ops[i], w, form.registers(w)) for i, w in enumerate("DABC")}
    gets = {w: [prog.read(r, t, ins) for r in regs[w]] for w in "ABC"}
    sets = [prog.write(r, t, ins) for r in regs["D"]]
    wh = where(ins)

    def words(W, w):
        v = np.stack([g(W) for g in gets[w]], axis=1)   # (32, registers)
        return v.view(np.uint32) if wide else v         # little-endian: low word first

    def op(W, m):
        whole_warp(m, wh, "mma.sync")
        try:
            d = execute(form, words(W, "A"), words(W, "B"), words(W, "C"))
        except TcemuError as e:
            raise KernelFault(wh, f"{e}") from None
        if wide:
            d = np.ascontiguousarray(d).view(np.uint64)
        for i, s in enumerate(sets):
            s(W, np.ascontiguousarray(d[:, i]), None)
    return op
