"""tcgen05 instruction descriptors (PTX 9.7.16.4.2, Tables 42-44): a 32-bit value whose layout
depends on the instruction's .kind, which the value does not encode (decode takes it).

Table 42 (tf32, f16, f8f6f4, i8): 0-1 sparsity selector, 2 sparse, 3 saturate, 4-5 D type, 7-9 A type,
10-12 B type, 13/14 negate A/B, 15/16 transpose A/B, 17-22 N >> 3, 24-28 M >> 4, 30-31 max shift (.ws).
Tables 43/44 (mxf8f6f4, mxf4, mxf4nvf4): 0-1 sparsity selector (reserved in the PTX text; CuTe writes
it, and CuTe wins here: tests/test_cute_umma.py), 2 sparse, 4-5 B scale-factor id, 7-9 A type, 10-12 (mxf4*:
10-11) B type, 13-16 negate/transpose, 17-22 N >> 3, 23 scale type, 27-28 M >> 7, 29-30 A scale-factor
id, 31 (mxf4*) K = 96. Not silicon-verified: PTX text and CuTe only.

Sparsity selector (tcgen05.mma.sp, PTX 9.7.16.10.8.4): 0-3 for .kind::tf32 / f16; must be 0 for .kind::i8 /
f8f6f4; "assumed to be 0" for the block-scaled kinds (whose Tables 43/44 call bits 0-1 reserved). A dense
descriptor carries 0 (CuTe's make_runtime_instr_desc asserts it). Max shift (bits 30-31, .ws only): codes 0-3 =
no shift, 8, 16, 32 columns, the largest column shift a zero-column mask descriptor may ask for (Table 45).
K = 96 (bit 31, sm_103a) is dense only ("Dense K=96" in Table 44).

ZeroColumnMask: the 64-bit zero-column mask descriptor of tcgen05.mma.ws (PTX 9.7.16.4.3, Table 45).
"""
from dataclasses import dataclass

import numpy as np

from ..core.errors import DescriptorError
from ..core.validate import as_bool, as_int, as_int_literal, is_int, show
from .forms import BLOCK_SCALED, KINDS, WS_KINDS, shape_findings  # noqa: F401  (WS_KINDS: read from here too)

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
# K = 96 (sm_103a, PTX 9.7.16.10.7.2.4-5 and 9.7.16.10.7.3.4-5): .block32 reads three factors from any byte 0-3
# (Figures 234-237, four ids), .block16 six from byte 0 or 2 (Figures 238-239, two ids); a run that passes the
# cell's last byte continues in a later column (tmem.py). CuTe's sm103 mainloop issues ids 0, 3, 2, 1 in turn.
SCALE_IDS = {1: (0, 1, 2, 3), 2: (0, 2), 4: (0,), 3: (0, 1, 2, 3), 6: (0, 2)}
# Instruction-descriptor bits 30-31 (Table 42): the largest column shift .ws B reuse may ask for.
MAX_SHIFT_COLUMNS = {0: 0, 1: 8, 2: 16, 3: 32}
# Sparsity selectors the kind reads (PTX 9.7.16.10.8.4): tf32 and f16 pick among sub-columns; the others read 0.
SELECTORS = {"tf32": (0, 1, 2, 3), "f16": (0, 1, 2, 3), "f8f6f4": (0,), "i8": (0,), "mxf8f6f4": (0,), "mxf4": (0,),
             "mxf4nvf4": (0,)}


def scale_id_rule(per_row: int, sf_id, field: str = "sf_id"):
    """None when `sf_id` is where an instruction reading `per_row` scale factors per row (1, 2 or 4:
    .scale_vec::1X/2X/4X) may find them; otherwise the rule, in words, for the error."""
    legal = SCALE_IDS.get(per_row)
    if legal is None:
        return (f"{per_row} scale factors per row: tcgen05.mma reads 1, 2 or 4 (.scale_vec::1X, 2X, 4X), or 3 or 6 "
                "with K = 96 (sm_103a)")
    if sf_id in legal:
        return None
    where = {1: "one scale byte per row, at byte offset 0-3 of its 32-bit tensor-memory cell",
             2: "two scale bytes per row, at half-word offset 0 or 2 of its 32-bit tensor-memory cell",
             4: "four scale bytes per row, which fill its 32-bit tensor-memory cell: the id must be 0",
             3: "three scale bytes per row (K = 96 .block32) from any byte offset 0-3",
             6: "six scale bytes per row (K = 96 .block16) from half-word offset 0 or 2"}[per_row]
    vec = f".scale_vec::{per_row}X" if per_row in (1, 2, 4) else f"K = 96 (.scale_vec::{per_row}X)"
    return (f"{field} = {sf_id}: {vec} reads {where} (PTX 9.7.16.10.7.2-3: 1X takes ids 0-3, "
            "2X 0 or 2, 4X only 0; K = 96: 3X 0-3, 6X 0 or 2)")


def scale_vec(kind: str, scale_type: str, block_size=None, *, k96: bool = False) -> int:
    """Scale factors per row that one instruction of a block-scaled kind reads (PTX Table 54): mxf8f6f4 1X;
    mxf4 2X; mxf4nvf4 4X with ue4m3 (.block16) and 2X or 4X with ue8m0 (.block32 / .block16; None takes 2X,
    the looser rule, when the block size is not known). K = 96 (sm_103a): 3 (.block32) or 6 (.block16)."""
    if kind == "mxf8f6f4":
        return 1
    sixteen = kind == "mxf4nvf4" and (scale_type == "ue4m3" or block_size == 16)
    if k96:
        return 6 if sixteen else 3
    return 4 if sixteen else 2


def instr_value(value) -> int:
    """The 32-bit instruction descriptor in `value`: an int (numpy ints too) or an integer literal string.

    A 64-bit value is the runtime form CuTe passes to tcgen05.mma (cute/arch/mma_sm100_desc.hpp,
    make_runtime_instr_desc: the descriptor in the upper 32 bits, the lower 32 bits a sparse-metadata
    tensor-memory address that dense MMAs ignore; the inline asm hands the instruction `idescE >> 32`)."""
    value = as_int_literal(value, "descriptor", 64, "a 32-bit value (or its 64-bit form)",
                           "an integer (a 32-bit instruction descriptor)", DescriptorError)
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
    sparse: bool = False         # tcgen05.mma.sp: A holds K/2 of the K elements per row
    sparsity_selector: int = 0   # Table 42: which metadata sub-columns (tf32 / f16: 0-3; others 0)
    saturate: bool = False       # i8
    max_shift: int = 0           # Table 42: .ws B-reuse shift code (0-3: 0, 8, 16, 32 columns)
    scale_type: str = "ue8m0"    # block-scaled
    a_scale_id: int = 0
    b_scale_id: int = 0
    k96: bool = False            # mxf4*: dense K = 96 instead of 64 (sm_103a)

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

    @property
    def max_shift_columns(self) -> int:
        """The .ws B-reuse shift bits 30-31 mean, in columns of B (Table 42): 0, 8, 16 or 32."""
        return MAX_SHIFT_COLUMNS.get(self.max_shift, 0)

    def validate(self, strict: bool = True, cta_group=None, *, ws: bool = False):
        """[(field, rule)] for every broken rule; strict adds the shape rules of PTX Table 39 (with `ws`, those
        of tcgen05.mma.ws)."""
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
        if scaled:  # K = 96: Table 44 says "0 or 2", its Scale Factor ID sections (and CuTe's sm103 path) 0-3
            per_row = scale_vec(self.kind, self.scale_type, k96=self.k96)
            for name in ("a_scale_id", "b_scale_id"):
                rule = scale_id_rule(per_row, getattr(self, name), name) if 0 <= getattr(self, name) <= 3 else None
                if rule:
                    out.append((name, f"{rule}; .kind::{self.kind} with {self.scale_type} scales"))
        if scaled and (self.max_shift or self.saturate):
            out.append(("max_shift" if self.max_shift else "saturate", f".kind::{self.kind} has no such field"))
        out += self._sparse_findings()
        if strict and not out:
            out += shape_findings(self.kind, self.m, self.n, cta_group, sparse=self.sparse, ws=ws, k96=self.k96)
        return out

    def _sparse_findings(self):
        """The sparsity selector and the K = 96 bit against the sparse bit (PTX 9.7.16.10.8.4, Table 44)."""
        sel = self.sparsity_selector
        if not isinstance(sel, (int, np.integer)) or isinstance(sel, bool) or not 0 <= sel <= 3:
            return []  # the 2-bit range rule above already spoke
        if not self.sparse and sel:
            return [("sparsity_selector", f"{sel}: the selector picks sparse metadata sub-columns, so a dense "
                                          "descriptor (sparse = 0) carries 0 (PTX Table 42: \"if Sparsity is enabled\"; "
                                          "CuTe's make_runtime_instr_desc asserts it)")]
        if self.sparse and sel not in SELECTORS[self.kind]:
            how = ("must be 0" if self.kind in ("i8", "f8f6f4") else
                   "is assumed to be 0 (bits 0-1 are reserved in PTX Tables 43/44)")
            return [("sparsity_selector", f"{sel}: for .kind::{self.kind} the sparsity selector {how} "
                                          "(PTX 9.7.16.10.8.4.5-6; only .kind::tf32 / f16 take 0-3)")]
        if self.sparse and self.k96:
            return [("k96", "K = 96 is a dense shape (PTX Table 44: \"Dense K=96\"); sparse mxf4* is K = 128")]
        return []


@dataclass(frozen=True)
class ZeroColumnMask:
    """The zero-column mask descriptor of tcgen05.mma.ws (PTX 9.7.16.4.3, Table 45): a 64-bit value that
    makes an N-bit mask (1: that column of B reads as zeros) and shifts B's columns.

    bits 0-31 start counts sc0-sc3, 32-35 first spans fs0-fs3, 36-38 reserved, 39 non-zero mask,
    40-47 skip span, 48-55 use span, 56-61 column shift, 62-63 reserved.
    Table 45 words the two spans the other way round; its worked examples (and CuTe's MaskAndShiftB comments)
    decide: a sub-mask repeats (use span + 1) 0-bits (B used) and (skip span + 1) 1-bits (zeros), starting
    with the zeros when its first span is 1 and with the used columns when it is 0, its first `start count`
    bits dropped. M = 128 has one sub-mask over N columns, M = 64 two of N/2, M = 32 four of N/4.
    The column shift reads column n of the product from B's column n + shift (Table 45: "allows MMA on
    non-0 starting column"; its example: N = 128, shift 2 uses columns 2..129); at most 16 (M = 32) or 32."""
    start_counts: tuple = (0, 0, 0, 0)
    first_spans: tuple = (0, 0, 0, 0)
    non_zero_mask: bool = False
    skip_span: int = 0
    use_span: int = 0
    shift: int = 0
    reserved_bits: int = 0

    RESERVED = (0x7 << 36) | (0x3 << 62)

    @classmethod
    def decode(cls, value) -> "ZeroColumnMask":
        if isinstance(value, ZeroColumnMask):
            return value
        if isinstance(value, str):
            try:
                value = int(value.replace("_", ""), 0)
            except ValueError:
                raise DescriptorError("zero_column_mask", f"{show(value)} is not an integer literal (hex needs 0x)") from None
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= int(value) < 1 << 64:
            raise DescriptorError("zero_column_mask", f"must be a 64-bit zero-column mask descriptor, got {show(value)}")
        v = int(value)
        return cls(tuple(v >> (8 * i) & 0xFF for i in range(4)), tuple(v >> (32 + i) & 1 for i in range(4)),
                   bool(v >> 39 & 1), v >> 40 & 0xFF, v >> 48 & 0xFF, v >> 56 & 0x3F, v & cls.RESERVED)

    def _fields(self):
        """DescriptorError unless every field has its type and fits its bits (an int past a field's width would
        spill into the next one)."""
        def ints(v, n, hi):
            return isinstance(v, (tuple, list)) and len(v) == n and all(is_int(x) and 0 <= x <= hi for x in v)
        if not ints(self.start_counts, 4, 255):
            raise DescriptorError("start_counts", f"four 8-bit start counts (0..255, PTX Table 45), got "
                                                  f"{show(self.start_counts)}")
        if not ints(self.first_spans, 4, 1):
            raise DescriptorError("first_spans", f"four 1-bit first spans (0 or 1), got {show(self.first_spans)}")
        as_bool(self.non_zero_mask, "non_zero_mask", DescriptorError)
        for name, top in (("skip_span", 255), ("use_span", 255), ("shift", 63)):
            as_int(getattr(self, name), name, 0, top, DescriptorError)
        as_int(self.reserved_bits, "reserved_bits", 0, (1 << 64) - 1, DescriptorError)

    def encode(self) -> int:
        self._fields()
        self = ZeroColumnMask(tuple(int(c) for c in self.start_counts), tuple(int(f) for f in self.first_spans),
                              bool(self.non_zero_mask), int(self.skip_span), int(self.use_span), int(self.shift),
                              int(self.reserved_bits))  # numpy scalars would overflow in the shifts below
        v = self.reserved_bits | int(self.non_zero_mask) << 39 | self.skip_span << 40 | self.use_span << 48 \
            | self.shift << 56
        for i in range(4):
            v |= self.start_counts[i] << (8 * i) | self.first_spans[i] << (32 + i)
        return v

    def validate(self, m: int, n: int, max_shift_columns=None):
        """[(field, rule)]: reserved bits, field widths, the shift limit of M (Table 45) and of the
        instruction descriptor's max shift (Table 42), N split evenly among the sub-masks."""
        self._fields()
        m, n = as_int(m, "m", 1, 256, DescriptorError), as_int(n, "n", 1, 256, DescriptorError)
        if max_shift_columns is not None:
            max_shift_columns = as_int(max_shift_columns, "max_shift", 0, 32, DescriptorError)
        out = []
        if self.reserved_bits & self.RESERVED:
            out.append(("zero_column_mask", f"reserved bits {self.reserved_bits & self.RESERVED:#x} (36-38, 62-63) "
                                            "must be 0 (PTX Table 45)"))
        for name, top in (("skip_span", 255), ("use_span", 255), ("shift", 63)):
            if not 0 <= getattr(self, name) <= top:
                out.append((name, f"{getattr(self, name)} does not fit its field"))
        if len(self.start_counts) != 4 or len(self.first_spans) != 4 or \
                any(not 0 <= c <= 255 for c in self.start_counts) or any(f not in (0, 1) for f in self.first_spans):
            out.append(("start_counts", "four 8-bit start counts and four 1-bit first spans (PTX Table 45)"))
        limit = 16 if m == 32 else 32
        if self.shift > limit:
            out.append(("shift", f"column shift {self.shift}: at most {limit} with M = {m} (PTX Table 45)"))
        if max_shift_columns is not None and self.shift > max_shift_columns:
            out.append(("max_shift", f"column shift {self.shift} exceeds the instruction descriptor's maximum shift "
                                     f"of {max_shift_columns} columns (bits 30-31, PTX Table 42)"))
        if n % 8:
            out.append(("n", f"N = {n}: tcgen05 N is a multiple of 8 (PTX Table 39)"))
        if m not in (32, 64, 128) or n % (128 // m):
            out.append(("m", f"M = {m}, N = {n}: the mask splits N into {128 // m if m in (32, 64, 128) else '?'} "
                             "sub-masks (M = 128, 64, 32: 1, 2, 4)"))
        return out

    def mask(self, m: int, n: int) -> np.ndarray:
        """(n,) bool: True where column n of B reads as zeros."""
        for f, rule in self.validate(m, n):
            raise DescriptorError(f, rule)
        if not self.non_zero_mask:
            return np.zeros(n, bool)
        subs = 128 // m
        width, use, skip = n // subs, self.use_span + 1, self.skip_span + 1
        out = np.zeros(n, bool)
        for i in range(subs):
            period = [True] * skip + [False] * use if self.first_spans[i] else [False] * use + [True] * skip
            pos = (np.arange(width) + self.start_counts[i]) % len(period)
            out[i * width:(i + 1) * width] = np.asarray(period)[pos]
        return out
