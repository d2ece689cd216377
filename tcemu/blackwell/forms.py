"""tcgen05.mma's legal forms (PTX 9.7.16.10.9, Tables 39 and 54-55): the kinds, which of them are block-scaled or
take .ws, K per kind, the scale-vector qualifiers, the bits of an A element in tensor memory, the legal M / N
(shape_findings) and the whole-form check (check_form). One table for the instruction model (mma.py, instr.py)
and the PTX operand grammar (tcemu/ptx/ops/tcgen05/mma.py)."""
from ..core.arch import TCGEN05_KINDS as KINDS  # noqa: F401  (the kinds: read from here by instr.py and the PTX ops)
from ..core.errors import LayoutError
from ..core.validate import as_bool, as_int, is_int, show
from ..layout.descriptors import SwizzleMode, as_arch_descriptor

BLOCK_SCALED = ("mxf8f6f4", "mxf4", "mxf4nvf4")
WS_KINDS = ("tf32", "f16", "f8f6f4", "i8")  # Table 39: .ws takes no block-scaled kind
GROUPED = ("mxf4", "mxf4nvf4")              # e2m1 only; products summed exactly in groups of 16 (fdp.grouped_dot)
K_OF_KIND = {"tf32": 8, "f16": 16, "f8f6f4": 32, "i8": 32, "mxf8f6f4": 32, "mxf4": 64, "mxf4nvf4": 64}
ARCHS = ("sm100", "sm103")
# The block-size qualifiers of the block-scaled kinds: K elements per scale factor (PTX 9.7.16.10.9.1, Table 54)
SCALE_VEC = {"scale_vec::1X": 32, "scale_vec::2X": 32, "scale_vec::4X": 16, "block16": 16, "block32": 32}


def a_tmem_bits(kind: str, dtype_a: str) -> int:
    """Bits of one A element in tensor memory: tf32 32, f16 / bf16 16, e2m1 of the mxf4 kinds 4, else an 8-bit
    container (PTX 9.7.16.10.3; tmem.py)."""
    return {"tf32": 32, "f16": 16, "bf16": 16}.get(dtype_a, 4 if kind in GROUPED else 8)


def instr_k(d) -> int:
    """Logical K of one instruction (PTX Table 39): the dense K of the kind, twice that when sparse, 96 for the
    sm_103a K = 96 bit. A sparse A holds half of it."""
    if d.k96:
        return 96
    return K_OF_KIND[d.kind] * (2 if d.sparse else 1)


def block_size(d, requested=None) -> int:
    """Elements of K per scale factor (PTX Tables 54-55): mxf8f6f4 and mxf4 32; mxf4nvf4 16 (.scale_vec::4X,
    the only size for ue4m3 scales) or 32 (.scale_vec::2X, ue8m0), which must then be said."""
    legal = {"mxf8f6f4": (32,), "mxf4": (32,)}.get(d.kind, (16,) if d.scale_type == "ue4m3" else (16, 32))  # (dense K)
    if requested is None:
        if len(legal) > 1:
            raise LayoutError("block_size_k", ".kind::mxf4nvf4 with ue8m0 scales needs block_size_k 16 (.block16) "
                                              "or 32 (.block32): PTX requires the qualifier")
        return legal[0]
    if not is_int(requested) or requested not in legal:
        raise LayoutError("block_size_k", f"{show(requested)}: .kind::{d.kind} with {d.scale_type} scales takes {legal}")
    return requested


def check_form(d, cta_group, a_from_tmem: bool, desc_a, desc_b, scale_input_d, *, ws: bool = False,
               arch: str = "sm100", sparse=None):
    """Refuse what the hardware refuses or tcemu does not model, naming the field and the rule. `ws`: the
    tcgen05.mma.ws form; `arch`: "sm103" allows K = 96 and LBO mode 1; `sparse` (None: the descriptor's bit)
    the .sp form the instruction is, which the descriptor's sparse bit must match."""
    scale_input_d = as_int(scale_input_d, "scale_input_d", 0, 15, LayoutError)
    ws = as_bool(ws, "ws", LayoutError)
    if not isinstance(arch, str) or arch not in ARCHS:
        raise LayoutError("arch", f"{show(arch)}: tcgen05.mma runs on {' or '.join(ARCHS)}")
    if sparse is not None:
        sparse = as_bool(sparse, "sparse", LayoutError)
    for f, rule in d.validate(strict=False):
        raise LayoutError(f, rule)
    if sparse is not None and bool(sparse) != d.sparse:
        raise LayoutError("sparse", f"the instruction is {'tcgen05.mma.sp' if sparse else 'a dense tcgen05.mma'} but "
                                    f"the instruction descriptor's sparse bit (2) is {int(d.sparse)}")
    if d.k96 and arch != "sm103":
        raise LayoutError("k96", "K = 96 is sm_103a only (PTX 9.7.16.2.1.1): pass arch='sm103'")
    eight_bit_b = d.transpose_b and d.dtype_b in ("e4m3", "e5m2", "s8", "u8")
    for f, rule in shape_findings(d.kind, d.m, d.n, cta_group, transposed_8bit_b=eight_bit_b, sparse=d.sparse,
                                  ws=ws, k96=d.k96):
        raise LayoutError(f, rule)
    if d.max_shift and not ws:
        raise LayoutError("max_shift", f"code {d.max_shift} ({d.max_shift_columns} columns): the max shift is the B "
                                       "reuse shift of tcgen05.mma.ws (PTX Table 42); a non-.ws MMA carries 0")
    if scale_input_d and (ws or d.kind not in ("tf32", "f16") or not 0 <= scale_input_d <= 15):
        raise LayoutError("scale_input_d", f"{show(scale_input_d)}: an immediate 0..15, for .kind::tf32 and "
                                           ".kind::f16 only, and not with .ws (PTX 9.7.16.10.9)")
    if a_from_tmem:
        if d.transpose_a:
            raise LayoutError("transpose_a", "A read from tensor memory is K-major (PTX Table 51)")
        if d.m == 128 and cta_group == 1 and d.n % 16 and not ws:
            raise LayoutError("n", f"N = {d.n}: with A in tensor memory M = 128 takes N in steps of 16 "
                                   "(CuTe's SM100 TS atoms; not in PTX Table 39)")
        if ws and d.m != 128:
            raise LayoutError("a_tmem", f"A in tensor memory with .ws M = {d.m} is not modelled (no source pins where "
                                        "the 1x4 / 2x2 data paths find A's rows)")
        if d.sparse and cta_group == 2 and d.m == 128:
            raise LayoutError("a_tmem", "A in tensor memory with sparse cta_group::2 M = 128 (layout C) is not "
                                        "modelled")
    for name, desc, mn in (("desc_a", desc_a, d.transpose_a), ("desc_b", desc_b, d.transpose_b)):
        if desc is None:
            continue
        ud = as_arch_descriptor(desc, "sm100")
        atom32 = ud.swizzle is SwizzleMode.B128_BASE32B
        if mn and (d.kind == "tf32") != atom32:
            raise LayoutError(name, "MN-major tf32 needs the 128B swizzle with 32-byte atoms, and no other kind "
                                    "may use that mode (PTX 9.7.16.10.3)")
        if ud.lbo_mode:
            if arch != "sm103":
                raise LayoutError(name, "LBO mode 1 (bit 52: LBO holds an absolute address) is sm_103a only "
                                        "(PTX 9.7.16.4.1.1): pass arch='sm103'")
            if mn:
                raise LayoutError(name, "LBO mode 1 is K-major only: the transpose bits must be 0 (PTX 9.7.16.3.1.2.1)")
            if not d.k96:
                raise LayoutError(name, "LBO mode 1 is the absolute-address mode for a K of 48 bytes (K = 96 fp4, "
                                        "PTX 9.7.16.3.1.2); tcemu models it for K = 96 instructions only")


def shape_findings(kind: str, m: int, n: int, cta_group=None, *, transposed_8bit_b: bool = False,
                   sparse: bool = False, ws: bool = False, k96: bool = False):
    """[(field, rule)] for an M/N that PTX Table 39 (tcgen05 kinds and shapes) does not list.

    cta_group::1: M 64 or 128 (block-scaled kinds: 128 only), N 8..256 step 8; cta_group::2: M 128 or
    256, N 16..256 step 16. i8: N in {8, 16, 24, 32, 48, ..., 256} (::2: 32..256 step 32). 8-bit MN-major
    B doubles the N step (PTX Table 50). cta_group=None takes ::2 for M = 256 and ::1 otherwise.
    sparse (tcgen05.mma.sp): the dense shapes, except that the block-scaled kinds take only M = 256 with ::2.
    ws (tcgen05.mma.ws): .kind::tf32 / f16 / f8f6f4 / i8, cta_group::1, M 32, 64 or 128, N 64, 128 or 256
    (sparse: 64 or 128). k96 (sm_103a, mxf4*): N 16..256 step 16 with M = 256 and ::2 (PTX Table 39) or, as
    CuTe's SM103_MXF4_ULTRA atoms also issue, M = 128 with ::1 or ::2."""
    if cta_group is None:
        cta_group = 2 if m == 256 else 1
    if cta_group not in (1, 2):
        return [("cta_group", f"{show(cta_group)}: tcgen05 takes cta_group 1 or 2")]
    scaled = kind in BLOCK_SCALED
    form = f".kind::{kind}{' .sp' if sparse else ''}"
    if ws:
        if kind not in WS_KINDS:
            return [("ws", f"{form} has no .ws form (PTX Table 39: .ws takes .kind::{', '.join(WS_KINDS)})")]
        if cta_group != 1:
            return [("cta_group", "tcgen05.mma.ws is cta_group::1 only (PTX Table 39)")]
        if m not in (32, 64, 128):
            return [("m", f"M = {m}: {form} .ws takes M in (32, 64, 128) (PTX Table 39)")]
        legal_n = (64, 128) if sparse else (64, 128, 256)
        if n not in legal_n:
            return [("n", f"N = {n}: {form} .ws takes N in {legal_n} (PTX Table 39)")]
        return []
    if k96:
        legal_m = (128,) if cta_group == 1 else (128, 256)
        if m not in legal_m:
            return [("m", f"M = {m}: K = 96 with cta_group::{cta_group} takes M in {legal_m} (PTX Table 39 lists "
                          "256xNx96 with ::2; CuTe's SM103_MXF4_ULTRA atoms add M = 128)")]
        if not (n % 16 == 0 and 16 <= n <= 256):
            return [("n", f"N = {n}: K = 96 takes N 16..256 in steps of 16 (PTX Table 39; CuTe's SM103 atoms)")]
        return []
    legal_m = ((128,) if scaled else (64, 128)) if cta_group == 1 else ((256,) if scaled and sparse else (128, 256))
    if m not in legal_m:
        extra = "; M = 32 is a .ws shape" if m == 32 else ""
        return [("m", f"M = {m}: {form} with cta_group::{cta_group} takes M in {legal_m} (PTX Table 39{extra})")]
    step = 8 * cta_group * (2 if transposed_8bit_b else 1)
    if kind == "i8" and cta_group == 1 and not transposed_8bit_b:
        ok, rule = n in (8, 16, 24, 32) or (n % 16 == 0 and 48 <= n <= 256), "8, 16, 24, 32, then 48..256 step 16"
    else:
        step *= 2 if kind == "i8" else 1
        ok, rule = n % step == 0 and step <= n <= 256, f"{step}..256 in steps of {step}"
    if not ok:
        why = " (8-bit MN-major B, PTX Table 50)" if transposed_8bit_b else " (PTX Table 39)"
        return [("n", f"N = {n}: .kind::{kind} M = {m} cta_group::{cta_group} takes N {rule}{why}")]
    return []
