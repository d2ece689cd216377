"""tcgen05 instruction descriptors (PTX 9.7.16.4.2, Tables 42-44): a 32-bit value whose layout
depends on the instruction's .kind, which the value does not encode (decode takes it).

Table 42 (tf32, f16, f8f6f4, i8): 0-1 sparsity selector, 2 sparse, 3 saturate, 4-5 D type, 7-9 A type,
10-12 B type, 13/14 negate A/B, 15/16 transpose A/B, 17-22 N >> 3, 24-28 M >> 4, 30-31 max shift (.ws).
Tables 43/44 (mxf8f6f4, mxf4, mxf4nvf4): 0-1 sparsity selector (reserved in the PTX text; CuTe writes
it, and CuTe wins here: tests/test_cute_umma.py), 2 sparse, 4-5 B scale-factor id, 7-9 A type, 10-12 (mxf4*:
10-11) B type, 13-16 negate/transpose, 17-22 N >> 3, 23 scale type, 27-28 M >> 7, 29-30 A scale-factor
id, 31 (mxf4*) K = 96. Not silicon-verified: PTX text and CuTe only.
"""
from dataclasses import dataclass

import numpy as np

from .errors import DescriptorError
from .validate import as_bool, as_int, show

KINDS = ("tf32", "f16", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4")
BLOCK_SCALED = ("mxf8f6f4", "mxf4", "mxf4nvf4")
_F8F6F4 = {"e4m3": 0, "e5m2": 1, "e2m3": 3, "e3m2": 4, "e2m1": 5}
TYPE_CODES = {"tf32": {"tf32": 2}, "f16": {"f16": 0, "bf16": 1}, "f8f6f4": _F8F6F4, "i8": {"u8": 0, "s8": 1},
              "mxf8f6f4": _F8F6F4, "mxf4": {"e2m1": 1}, "mxf4nvf4": {"e2m1": 1}}
D_CODES = {"tf32": {"f32": 1}, "f16": {"f16": 0, "f32": 1}, "f8f6f4": {"f16": 0, "f32": 1}, "i8": {"s32": 2}}
SCALE_CODES = {"mxf8f6f4": {"ue8m0": 1}, "mxf4": {"ue8m0": 1}, "mxf4nvf4": {"ue4m3": 0, "ue8m0": 1}}


# Where a row's scale factors sit in its 32-bit tensor-memory cell (PTX 9.7.16.10.7.2-3, "Scale Factor A ID" /
# "Scale Factor B ID"; 9.7.17.* in later ISA versions): the id is the byte the row's factors start at.
# .scale_vec::1X (one factor per row; mxf8f6f4) takes byte offsets 0-3; .scale_vec::2X (two; mxf4, and mxf4nvf4
# .block32) half-word offsets 0 or 2; .scale_vec::4X (four; mxf4nvf4 .block16, the only size for ue4m3 scales)
# fills the cell, so only 0.
SCALE_IDS = {1: (0, 1, 2, 3), 2: (0, 2), 4: (0,)}


def scale_id_rule(per_row: int, sf_id, field: str = "sf_id"):
    """None when `sf_id` is where an instruction reading `per_row` scale factors per row (1, 2 or 4:
    .scale_vec::1X/2X/4X) may find them; otherwise the rule, in words, for the error."""
    legal = SCALE_IDS.get(per_row)
    if legal is None:
        return (f"{per_row} scale factors per row: tcgen05.mma reads 1, 2 or 4 (.scale_vec::1X, 2X, 4X; "
                "K = 96 is not modelled)")
    if sf_id in legal:
        return None
    where = {1: "one scale byte per row, at byte offset 0-3 of its 32-bit tensor-memory cell",
             2: "two scale bytes per row, at half-word offset 0 or 2 of its 32-bit tensor-memory cell",
             4: "four scale bytes per row, which fill its 32-bit tensor-memory cell: the id must be 0"}[per_row]
    return (f"{field} = {sf_id}: .scale_vec::{per_row}X reads {where} (PTX 9.7.16.10.7.2-3: 1X takes ids 0-3, "
            "2X 0 or 2, 4X only 0)")


def scale_vec(kind: str, scale_type: str, block_size=None) -> int:
    """Scale factors per row that one instruction of a block-scaled kind reads (PTX Table 54): mxf8f6f4 1X;
    mxf4 2X; mxf4nvf4 4X with ue4m3 (.block16) and 2X or 4X with ue8m0 (.block32 / .block16; None takes 2X,
    the looser rule, when the block size is not known)."""
    if kind == "mxf8f6f4":
        return 1
    if kind == "mxf4nvf4" and (scale_type == "ue4m3" or block_size == 16):
        return 4
    return 2


def instr_value(value) -> int:
    """The 32-bit instruction descriptor in `value`: an int (numpy ints too) or an integer literal string.

    A 64-bit value is the runtime form CuTe passes to tcgen05.mma (cute/arch/mma_sm100_desc.hpp,
    make_runtime_instr_desc: the descriptor in the upper 32 bits, the lower 32 bits a sparse-metadata
    tensor-memory address that dense MMAs ignore; the inline asm hands the instruction `idescE >> 32`)."""
    if isinstance(value, str) and len(value) > 64:
        raise DescriptorError("descriptor", f"{show(value)} is too long for a 32-bit value (or its 64-bit form)")
    if isinstance(value, str):
        try:
            value = int(value.replace("_", ""), 0)
        except ValueError:
            raise DescriptorError("descriptor", f"{show(value)} is not an integer literal (hex needs 0x)") from None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise DescriptorError("descriptor", f"must be an integer (a 32-bit instruction descriptor), got "
                                            f"{show(value)}")
    value = int(value)
    if 0 <= value < 1 << 32:
        return value
    if 1 << 32 <= value < 1 << 64:
        if value & 0xFFFFFFFF == 0:
            return value >> 32
        raise DescriptorError("descriptor", f"{value:#018x} has 64 bits: the runtime form (CuTe's "
                                            "make_runtime_instr_desc) holds the 32-bit descriptor in bits 32-63 "
                                            f"and leaves bits 0-31 zero for dense MMA, but they are {value & 0xFFFFFFFF:#010x}; "
                                            f"shift right by 32 ({value >> 32:#010x}) if that half is the descriptor")
    shown = f"{value:#x}" if value.bit_length() <= 128 else show(value)  # hex reads as the bit fields it holds
    raise DescriptorError("descriptor", f"{shown} is not a 32-bit instruction descriptor (nor its 64-bit "
                                        "runtime form, the value << 32)")


def _field(value, lo, width):
    return value >> lo & ((1 << width) - 1)


def _name(codes, code, field):
    for name, c in codes.items():
        if c == code:
            return name
    raise DescriptorError(field, f"code {code} is not defined ({', '.join(f'{n} = {c}' for n, c in codes.items())})")


@dataclass(frozen=True)
class InstrDescriptor:
    kind: str
    dtype_a: str
    dtype_b: str
    m: int
    n: int
    dtype_d: str = "f32"         # Table 42 kinds; block-scaled kinds accumulate in f32
    negate_a: bool = False
    negate_b: bool = False
    transpose_a: bool = False    # MN-major A
    transpose_b: bool = False
    sparse: bool = False
    sparsity_selector: int = 0   # Table 42
    saturate: bool = False       # i8
    max_shift: int = 0           # Table 42: .ws B-reuse shift code
    scale_type: str = "ue8m0"    # block-scaled
    a_scale_id: int = 0
    b_scale_id: int = 0
    k96: bool = False            # mxf4*: dense K = 96 instead of 64

    def __post_init__(self):
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise DescriptorError("kind", f"{show(self.kind)}: expected one of {', '.join(KINDS)}")
        # types and field widths at construction (validate() states the .kind's rules)
        for name in ("dtype_a", "dtype_b", "dtype_d", "scale_type"):
            if not isinstance(getattr(self, name), str):
                raise DescriptorError(name, f"must be a type name, got {show(getattr(self, name))}")
        for name in ("negate_a", "negate_b", "transpose_a", "transpose_b", "sparse", "saturate", "k96"):
            object.__setattr__(self, name, as_bool(getattr(self, name), name, DescriptorError))
        for name in ("m", "n"):
            object.__setattr__(self, name, as_int(getattr(self, name), name, 0, 1 << 16, DescriptorError))
        for name in ("sparsity_selector", "max_shift", "a_scale_id", "b_scale_id"):  # 2-bit fields
            object.__setattr__(self, name, as_int(getattr(self, name), name, 0, 3, DescriptorError))

    @classmethod
    def decode(cls, value, kind: str) -> "InstrDescriptor":
        """Fields of a 32-bit value (an int, or a string such as '0x8400490') read as .kind::`kind`.

        The 64-bit runtime form that CuTe's make_runtime_instr_desc and DeepGEMM's
        make_runtime_instr_desc_with_sf_id build (the 32-bit value << 32, low half 0) is taken too."""
        value = instr_value(value)
        if not isinstance(kind, str) or kind not in KINDS:
            raise DescriptorError("kind", f"{show(kind)}: expected one of {', '.join(KINDS)}")
        codes = TYPE_CODES[kind]
        common = dict(dtype_a=_name(codes, _field(value, 7, 3), "dtype_a"),
                      dtype_b=_name(codes, _field(value, 10, 2 if kind in ("mxf4", "mxf4nvf4") else 3), "dtype_b"),
                      negate_a=bool(value >> 13 & 1), negate_b=bool(value >> 14 & 1),
                      transpose_a=bool(value >> 15 & 1), transpose_b=bool(value >> 16 & 1),
                      n=_field(value, 17, 6) << 3, sparse=bool(value >> 2 & 1))
        if kind in BLOCK_SCALED:
            desc = cls(kind, m=_field(value, 27, 2) << 7, scale_type=_name(SCALE_CODES[kind], value >> 23 & 1,
                                                                           "scale_type"),
                       sparsity_selector=_field(value, 0, 2),  # PTX marks bits 0-1 reserved; CuTe writes them
                       a_scale_id=_field(value, 29, 2), b_scale_id=_field(value, 4, 2),
                       k96=bool(value >> 31 & 1) if kind != "mxf8f6f4" else False, **common)
        else:
            desc = cls(kind, m=_field(value, 24, 5) << 4, dtype_d=_name(D_CODES[kind], _field(value, 4, 2), "dtype_d"),
                       sparsity_selector=_field(value, 0, 2), saturate=bool(value >> 3 & 1),
                       max_shift=_field(value, 30, 2), **common)
        if desc.encode() != value:
            raise DescriptorError("reserved", f"{value:#010x} sets bits that are reserved for .kind::{kind} "
                                              f"({value ^ desc.encode():#010x})")
        return desc

    def encode(self) -> int:
        for f in self.validate(strict=False):
            raise DescriptorError(f[0], f[1])
        codes = TYPE_CODES[self.kind]
        v = (codes[self.dtype_a] << 7 | codes[self.dtype_b] << 10 | self.negate_a << 13 | self.negate_b << 14
             | self.transpose_a << 15 | self.transpose_b << 16 | (self.n >> 3) << 17 | self.sparse << 2)
        if self.kind in BLOCK_SCALED:
            return (v | SCALE_CODES[self.kind][self.scale_type] << 23 | (self.m >> 7) << 27 | self.a_scale_id << 29
                    | self.sparsity_selector
                    | self.b_scale_id << 4 | (self.k96 << 31 if self.kind != "mxf8f6f4" else 0))
        return (v | D_CODES[self.kind][self.dtype_d] << 4 | (self.m >> 4) << 24 | self.sparsity_selector
                | self.saturate << 3 | self.max_shift << 30)

    def validate(self, strict: bool = True, cta_group=None):
        """[(field, rule)] for every broken rule; strict adds the shape rules of PTX Table 39."""
        out = []
        codes = TYPE_CODES[self.kind]
        for name in ("dtype_a", "dtype_b"):
            if getattr(self, name) not in codes:
                out.append((name, f"{show(getattr(self, name))} is not a .kind::{self.kind} type ({', '.join(codes)})"))
        scaled = self.kind in BLOCK_SCALED
        if not scaled and self.dtype_d not in D_CODES[self.kind]:
            out.append(("dtype_d", f"{show(self.dtype_d)} is not a .kind::{self.kind} accumulator "
                                   f"({', '.join(D_CODES[self.kind])})"))
        if scaled and self.scale_type not in SCALE_CODES[self.kind]:
            out.append(("scale_type", f"{show(self.scale_type)}: .kind::{self.kind} takes {', '.join(SCALE_CODES[self.kind])}"))
        m_unit, m_bits = (128, 2) if scaled else (16, 5)
        if not (isinstance(self.m, int) and self.m % m_unit == 0 and 0 <= self.m >> (m_unit.bit_length() - 1) < 1 << m_bits):
            out.append(("m", f"{show(self.m)} does not fit: the field holds M / {m_unit} in {m_bits} bits"))
        if not (isinstance(self.n, int) and self.n % 8 == 0 and 0 <= self.n >> 3 < 64):
            out.append(("n", f"{show(self.n)} does not fit: the field holds N / 8 in 6 bits"))
        for name, top in (("sparsity_selector", 3), ("max_shift", 3), ("a_scale_id", 3), ("b_scale_id", 3)):
            if not 0 <= getattr(self, name) <= top:
                out.append((name, f"{getattr(self, name)} does not fit its 2-bit field"))
        if self.kind == "f16" and self.dtype_d == "f16" and "bf16" in (self.dtype_a, self.dtype_b):
            out.append(("dtype_d", "an f16 accumulator needs f16 A and B, not bf16 (PTX Table 39)"))
        if self.saturate and self.kind != "i8":
            out.append(("saturate", "only .kind::i8 saturates"))
        if self.kind == "i8" and (self.negate_a or self.negate_b):
            out.append(("negate_a" if self.negate_a else "negate_b", ".kind::i8 cannot negate (Table 42)"))
        if self.kind in ("mxf4", "mxf4nvf4") and (self.transpose_a or self.transpose_b):
            out.append(("transpose_a" if self.transpose_a else "transpose_b", "packed fp4 cannot be transposed (Table 44)"))
        if scaled and self.k96:  # K = 96 (sm_103a, not modelled): Table 44's "0 or 2"
            for name in ("a_scale_id", "b_scale_id"):
                if getattr(self, name) in (1, 3):
                    out.append((name, f"{name} = {getattr(self, name)}: .kind::{self.kind} takes 0 or 2 (PTX Table 44)"))
        elif scaled:
            per_row = scale_vec(self.kind, self.scale_type)
            for name in ("a_scale_id", "b_scale_id"):
                rule = scale_id_rule(per_row, getattr(self, name), name) if 0 <= getattr(self, name) <= 3 else None
                if rule:
                    out.append((name, f"{rule}; .kind::{self.kind} with {self.scale_type} scales"))
        if scaled and (self.max_shift or self.saturate):
            out.append(("max_shift" if self.max_shift else "saturate", f".kind::{self.kind} has no such field"))
        if strict and not out:
            out += shape_findings(self.kind, self.m, self.n, cta_group)
        return out


def shape_findings(kind: str, m: int, n: int, cta_group=None, *, transposed_8bit_b: bool = False):
    """[(field, rule)] for an M/N that PTX Table 39 (tcgen05 kinds and shapes) does not list.

    cta_group::1: M 64 or 128 (block-scaled kinds: 128 only), N 8..256 step 8; cta_group::2: M 128 or
    256, N 16..256 step 16. i8: N in {8, 16, 24, 32, 48, ..., 256} (::2: 32..256 step 32). 8-bit MN-major
    B doubles the N step (PTX Table 50). cta_group=None takes ::2 for M = 256 and ::1 otherwise."""
    if cta_group is None:
        cta_group = 2 if m == 256 else 1
    if cta_group not in (1, 2):
        return [("cta_group", f"{show(cta_group)}: tcgen05 takes cta_group 1 or 2")]
    scaled = kind in BLOCK_SCALED
    legal_m = ((128,) if scaled else (64, 128)) if cta_group == 1 else (128, 256)
    if m not in legal_m:
        return [("m", f"M = {m}: .kind::{kind} with cta_group::{cta_group} takes M in {legal_m} (PTX Table 39)")]
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
