"""One operand of a tcgen05 instruction: its type, form, major-ness and this CTA's extent, read from the
instruction descriptor, with the CTA pair taken into account.

cta_group::2 splits the instruction between two CTAs: each holds M / 2 rows of A and N / 2 columns of B in its
own shared memory, read through the same descriptors (CuTe's 2-SM MMA traits; blackwell.tcgen05_mma). M = 256
implies the pair; M = 128 may be either (cta_group=None takes ::1).

instruction_k gives the K one instruction reads of an operand for every model: wgmma, wgmma.mma_async.sp (A's
K/2 stored elements, B's K) and tcgen05 (fp4 / fp6 by their packed / padded form). An operand_spec of a sparse
tcgen05 instruction (tcgen05.mma.sp) gives A's K/2 and B's K; of a K = 96 one (sm_103a), 96.
"""
from dataclasses import dataclass

from ..core.arch import check_arch
from ..blackwell.mma import instr_k
from ..arith.dtypes import OPERAND_DTYPES, element_type, is_padded, placement_dtype
from ..core.errors import LayoutError
from ..hopper.wgmma import K_OF as WGMMA_K
from ..blackwell.instr import InstrDescriptor
from ..hopper.sparse import SP_K_OF
from ..core.validate import as_bool, as_int, show


def instruction_k(dtype: str, arch: str = "sm90", sparse: bool = False, operand: str = "A", *, padded=None) -> int:
    """K one instruction reads of an operand: wgmma's per type; tcgen05 reads 32 bytes of K per row, so fp4 / fp6
    in the padded form (one 8-bit slot each) give 32 and packed e2m1 64 (dtypes' packed / padded rule).
    `sparse` (sm90 wgmma.mma_async.sp, PTX 9.7.15.6): A holds K/2 stored elements per row, B all K; `operand`
    ('A' or 'B') says which."""
    etype = element_type(dtype, allowed=OPERAND_DTYPES[check_arch(arch)])
    name = operand_name(operand)
    if padded is not None:
        as_bool(padded, "padded", LayoutError)
    if as_bool(sparse, "sparse", LayoutError):
        if arch != "sm90" or etype.name not in SP_K_OF:
            raise LayoutError("sparse", f"wgmma.mma_async.sp is sm90 with {', '.join(SP_K_OF)} (not {arch} {dtype})")
        return SP_K_OF[etype.name] // (1 if name == "B" else 2)
    if arch == "sm90":
        return WGMMA_K[etype.name]
    return 256 // element_type(placement_dtype(etype.name, padded), allowed=OPERAND_DTYPES[arch]).bits


@dataclass(frozen=True)
class OperandSpec:
    name: str          # "A" or "B"
    dtype: str
    major: str         # "K" or "MN"
    rows: int          # this CTA's rows of the operand: M / cta_group (A) or N / cta_group (B)
    k: int             # K of one instruction
    padded: bool       # fp4 / fp6 form (dtypes' packed / padded rule)
    cta_group: int
    total_rows: int    # the instruction's M (A) or N (B)
    instr: InstrDescriptor

    def describe(self) -> str:
        """This CTA's share of the operand, in words."""
        what = "rows" if self.name == "A" else "columns"
        if self.cta_group == 1:
            return f"{self.name}: {self.total_rows} {what} x K = {self.k}, all in this CTA"
        return (f"cta_group::2: each CTA of the pair holds {self.rows} of {self.name}'s {self.total_rows} {what} "
                f"({what} [0, {self.rows}) in the first CTA, [{self.rows}, {self.total_rows}) in the second, each "
                "read through this descriptor from its own shared memory)")


def operand_name(operand) -> str:
    """'A' or 'B' from 'a', 'A', 'b', 'B'."""
    if not isinstance(operand, str) or operand.upper() not in ("A", "B"):
        raise LayoutError("operand", f"{show(operand)}: 'A' or 'B'")
    return operand.upper()


def operand_spec(instr, *, kind=None, operand="A", cta_group=None) -> OperandSpec:
    """The operand `operand` ('A' or 'B') of the tcgen05 instruction `instr` (an InstrDescriptor, or its
    32-bit value or 64-bit runtime form with `kind`), for one CTA of `cta_group` (None: 2 for M = 256, else 1)."""
    if kind is not None and not isinstance(kind, str):
        raise LayoutError("kind", f"must be a .kind name, got {show(kind)}")
    if isinstance(instr, InstrDescriptor):
        d = instr
        if kind is not None and kind != d.kind:
            raise LayoutError("kind", f"{show(kind)} disagrees with the instruction descriptor's .kind::{d.kind}")
    else:
        if kind is None:
            raise LayoutError("kind", "a raw instruction descriptor does not say its .kind: pass kind=")
        d = InstrDescriptor.decode(instr, kind)
    name = operand_name(operand)
    if cta_group is None:
        cta_group = 2 if d.m == 256 else 1
    cta_group = as_int(cta_group, "cta_group", 1, 2, LayoutError)  # tcgen05 takes cta_group 1 or 2
    if d.m == 256 and cta_group == 1:
        raise LayoutError("cta_group", "M = 256 is a cta_group::2 shape (PTX Table 39): each CTA holds 128 rows of A")
    dtype, mn = (d.dtype_a, d.transpose_a) if name == "A" else (d.dtype_b, d.transpose_b)
    total = d.m if name == "A" else d.n
    if total % cta_group:
        raise LayoutError("cta_group", f"{name}'s {total} {'rows' if name == 'A' else 'columns'} do not split "
                                       "between the two CTAs")
    k = instr_k(d) // (2 if d.sparse and name == "A" else 1)  # tcgen05.mma.sp: A holds K/2, B all K
    return OperandSpec(name, dtype, "MN" if mn else "K", total // cta_group, k,
                       is_padded(dtype, None, kind=d.kind), cta_group, total, d)
