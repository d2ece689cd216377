"""sm90 wgmma matrix descriptor (PTX 9.7.15.5.1.2.2, "Matrix Descriptor Format").

    bits  0-13  start address >> 4        bits 49-51  base offset
    bits 16-29  LBO >> 4                  bits 62-63  layout type (swizzle)
    bits 32-45  SBO >> 4                  all others reserved

Fields are held in bytes; encode() applies matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4.
"""
from dataclasses import dataclass, field
from enum import Enum
from typing import List, NamedTuple

from ..core.arch import SMEM_WINDOW, check_arch, is_blackwell
from ..arith.dtypes import parse_major
from ..core.errors import DescriptorError
from .swizzle import SWIZZLE_128B, SWIZZLE_128B_BASE32B, SWIZZLE_32B, SWIZZLE_64B, SWIZZLE_NONE, Swizzle
from ..core.validate import as_int, as_int_literal, is_int, show


class SwizzleMode(Enum):
    NONE = "none"
    B32 = "32B"
    B64 = "64B"
    B128 = "128B"
    B128_BASE32B = "128B_base32B"  # sm100 only: 128B swizzle with 32-byte atoms, MN-major only

    @property
    def swizzle(self) -> Swizzle:
        return _SWIZZLES[self]

    @property
    def bytes(self) -> int:
        """Swizzle width: bytes of one swizzled row (16 for no swizzle: one core-matrix row)."""
        return self.swizzle.atom_bytes

    @classmethod
    def parse(cls, value) -> "SwizzleMode":
        if isinstance(value, cls):
            return value
        if is_int(value) and 0 <= value <= 128:  # 0 (none), 32, 64, 128: the width in bytes
            value = str(int(value))
        if not isinstance(value, str) or len(value) > 40:
            raise DescriptorError("swizzle", f"{show(value)} is not a swizzle mode; expected none, 32B, 64B, 128B "
                                             "or 128B_base32B (sm100)")
        text = value.strip().upper().removesuffix("B").removeprefix("SW")
        if text.replace("_", "").replace("ATOM", "BASE") in ("128BBASE32", "128BASE32"):
            return cls.B128_BASE32B
        for mode in cls:
            if text == mode.value.upper().removesuffix("B") or (text in ("0", "INTERLEAVE") and mode is cls.NONE):
                return mode
        raise DescriptorError("swizzle", f"{show(value)} is not a swizzle mode; expected none, 32B, 64B, 128B "
                                         "or 128B_base32B (sm100)")


_SWIZZLES = {SwizzleMode.NONE: SWIZZLE_NONE, SwizzleMode.B32: SWIZZLE_32B, SwizzleMode.B64: SWIZZLE_64B,
             SwizzleMode.B128: SWIZZLE_128B, SwizzleMode.B128_BASE32B: SWIZZLE_128B_BASE32B}
# Layout-type field, bits 62-63 (PTX 9.7.15.5.1.2.2).
_SM90_LAYOUT_CODE = {SwizzleMode.NONE: 0, SwizzleMode.B128: 1, SwizzleMode.B64: 2, SwizzleMode.B32: 3}
_SM90_LAYOUT_MODE = {v: k for k, v in _SM90_LAYOUT_CODE.items()}
SM90_SWIZZLES = (SwizzleMode.NONE, SwizzleMode.B32, SwizzleMode.B64, SwizzleMode.B128)


class Finding(NamedTuple):
    field: str
    rule: str
    severity: str  # "error": the descriptor is unusable; "warning": legal but likely not meant

    def __str__(self) -> str:
        return f"{self.severity}: {self.field}: {self.rule}"


_FIELD_MAX = 1 << 18  # 14-bit fields hold bytes >> 4
_ADDRESS_FIELDS = (("start_address", 0), ("lbo", 16), ("sbo", 32))
_BASE_OFFSET_SHIFT, _LAYOUT_SHIFT = 49, 62
SM90_RESERVED_MASK = ((1 << 64) - 1) & ~(
    (0x3FFF << 0) | (0x3FFF << 16) | (0x3FFF << 32) | (0x7 << _BASE_OFFSET_SHIFT) | (0x3 << _LAYOUT_SHIFT))


def _reserved_bit_list(bits: int) -> str:
    return ", ".join(str(i) for i in range(64) if bits >> i & 1)


@dataclass(frozen=True)
class GmmaDescriptor:
    """A wgmma shared-memory matrix descriptor; byte-valued fields, as the PTX defines them."""

    start_address: int = 0
    lbo: int = 0  # leading dimension byte offset
    sbo: int = 0  # stride dimension byte offset
    base_offset: int = 0
    swizzle: SwizzleMode = SwizzleMode.NONE
    reserved_bits: int = field(default=0, compare=True)  # raw reserved bits, kept so decode/encode round-trip

    _LAYOUT_CODE = _SM90_LAYOUT_CODE
    _RESERVED_MASK = SM90_RESERVED_MASK
    _INT_FIELDS = ("start_address", "lbo", "sbo", "base_offset", "reserved_bits")

    def __post_init__(self):
        object.__setattr__(self, "swizzle", SwizzleMode.parse(self.swizzle))
        if self.swizzle not in self._LAYOUT_CODE:
            raise DescriptorError("swizzle", f"{self.swizzle.value} has no layout-type code in this descriptor "
                                             f"({', '.join(m.value for m in self._LAYOUT_CODE)})")
        for name in self._INT_FIELDS:  # any 64-bit value here; validate() states each field's encoding rule
            object.__setattr__(self, name, as_int(getattr(self, name), name, -(1 << 64), 1 << 64, DescriptorError))

    @classmethod
    def decode(cls, value) -> "GmmaDescriptor":
        """Fields of a 64-bit descriptor (an int, or a hex string such as '0x4000004000010040')."""
        value = _descriptor_int(value)
        start, lbo, sbo = ((value >> shift & 0x3FFF) << 4 for _, shift in _ADDRESS_FIELDS)
        return cls(start, lbo, sbo, value >> _BASE_OFFSET_SHIFT & 0x7,
                   _SM90_LAYOUT_MODE[value >> _LAYOUT_SHIFT & 0x3], value & SM90_RESERVED_MASK)

    def encode(self) -> int:
        """The 64-bit descriptor. Raises DescriptorError naming a field that does not fit its encoding."""
        errors = list(self._encoding_findings())
        if errors:
            raise DescriptorError(errors[0].field, errors[0].rule)
        value = self.reserved_bits | self.base_offset << _BASE_OFFSET_SHIFT
        value |= _SM90_LAYOUT_CODE[self.swizzle] << _LAYOUT_SHIFT
        for name, shift in _ADDRESS_FIELDS:
            value |= (getattr(self, name) & 0x3FFFF) >> 4 << shift
        return value

    def _encoding_findings(self):
        for name, _ in _ADDRESS_FIELDS:
            value = getattr(self, name)
            if not 0 <= value < _FIELD_MAX:
                yield Finding(name, f"{value:#x} does not fit: the 14-bit field holds bytes >> 4, "
                                    f"so 0 <= {name} < 0x40000", "error")
            elif value % 16:
                yield Finding(name, f"{value:#x} is not a multiple of 16 bytes (the field holds bytes >> 4)", "error")
        if not 0 <= self.base_offset <= 7:
            yield Finding("base_offset", f"{self.base_offset} does not fit the 3-bit field (0..7)", "error")
        if self.reserved_bits & ~self._RESERVED_MASK:
            yield Finding("reserved_bits", f"{self.reserved_bits:#x} sets bits that are not reserved", "error")

    def _common_findings(self, arch: str) -> List[Finding]:
        """Encoding rules, reserved bits set, and a start beyond the architecture's window."""
        check_arch(arch)
        findings = list(self._encoding_findings())
        if self.reserved_bits & self._RESERVED_MASK:
            bits = self.reserved_bits & self._RESERVED_MASK
            many = bits & (bits - 1)
            findings.append(Finding("reserved_bits", f"bit{'s' if many else ''} {_reserved_bit_list(bits)} "
                                                     f"{'are' if many else 'is'} reserved and must be 0"
                                                     + self._reserved_hint(bits), "error"))
        window = SMEM_WINDOW[arch]
        if 0 <= self.start_address < _FIELD_MAX and self.start_address >= window:
            findings.append(Finding("start_address", f"{self.start_address:#x} lies beyond the {window // 1024} KiB "
                                                     f"shared-memory window of {arch} (ends at {window:#x})", "error"))
        return findings

    @staticmethod
    def _reserved_hint(bits: int) -> str:
        """Reserved sm90 bits that are fields of the sm100 descriptor: the value is likely a Blackwell one."""
        named = [text for bit, text in ((46, "bit 46 is sm100's descriptor version bit (UMMA descriptors carry "
                                                 "version 1 in bits 46-47)"),
                                        (52, "bit 52 is sm100's LBO mode bit"),
                                        (61, "bit 61 is the low bit of sm100's 3-bit layout type (bits 61-63; "
                                             "1 = 128B_base32B)")) if bits >> bit & 1]
        if not named:
            return ""
        return "; " + "; ".join(named) + ": this looks like a Blackwell descriptor, decode it with --arch sm100 " \
                                         "(arch='sm100')"

    def validate(self, arch: str = "sm90", major: str | None = None) -> List[Finding]:
        """Every rule the descriptor breaks (errors) and every field the hardware will ignore (warnings)."""
        findings = self._common_findings(arch)
        if self.swizzle is SwizzleMode.NONE and self.base_offset:
            findings.append(Finding("base_offset", f"{self.base_offset} is ignored without swizzle (PTX: valid for "
                                                   "swizzled modes only; measured in traces/)", "warning"))
        if self.swizzle is SwizzleMode.B32 and self.base_offset & ~1:
            findings.append(Finding("base_offset", f"{self.base_offset}: 32B swizzle uses only bit 0 of the base "
                                                   "offset (XOR term is 1 bit wide)", "warning"))
        if self.swizzle is SwizzleMode.B64 and self.base_offset & ~3:
            findings.append(Finding("base_offset", f"{self.base_offset}: 64B swizzle uses only bits 0-1 of the base "
                                                   "offset (XOR term is 2 bits wide)", "warning"))
        if major is not None and parse_major(major) and self.swizzle is not SwizzleMode.NONE and self.lbo not in (0, 16):
            findings.append(Finding("lbo", f"{self.lbo:#x} is ignored for swizzled K-major operands "
                                           "(PTX: 'not used, assumed to be 1')", "warning"))
        return findings

    def check(self, arch: str = "sm90") -> "GmmaDescriptor":
        """self, or DescriptorError listing every error-level finding."""
        errors = [f for f in self.validate(arch) if f.severity == "error"]
        if errors:
            raise DescriptorError(", ".join(f.field for f in errors), "; ".join(f.rule for f in errors))
        return self

    def __str__(self) -> str:
        text = (f"GmmaDescriptor(start_address={self.start_address:#x}, lbo={self.lbo:#x}, sbo={self.sbo:#x}, "
                f"base_offset={self.base_offset}, swizzle={self.swizzle.value}")
        return text + (f", reserved_bits={self.reserved_bits:#x})" if self.reserved_bits else ")")


def as_descriptor(desc) -> GmmaDescriptor:
    """A GmmaDescriptor from a GmmaDescriptor, a 64-bit int or a hex string."""
    return desc if isinstance(desc, GmmaDescriptor) else GmmaDescriptor.decode(desc)


# ---- sm100: the tcgen05 shared-memory descriptor (PTX 9.7.16; CuTe UMMA::SmemDescriptor) ----
#   bits  0-13 start >> 4    16-29 LBO >> 4    32-45 SBO >> 4    46-47 version (1 on sm100)
#   bits 49-51 base offset   52 LBO mode       61-63 layout type; all others reserved
_SM100_LAYOUT_CODE = {SwizzleMode.NONE: 0, SwizzleMode.B128_BASE32B: 1, SwizzleMode.B128: 2,
                      SwizzleMode.B64: 4, SwizzleMode.B32: 6}
_SM100_LAYOUT_MODE = {v: k for k, v in _SM100_LAYOUT_CODE.items()}
SM100_SWIZZLES = SM90_SWIZZLES + (SwizzleMode.B128_BASE32B,)
# sm100 layout type 1 is what a Hopper layout code 1 (128B) written into bits 61-63 becomes.
HOPPER_CODE_1 = ("; layout type 1 (bits 61-63) is Hopper's encoding of the 128B swizzle; sm100 encodes 128B as 2 "
                 "(or write Hopper's code at bit 62: 1 << 62 is 128B on both)")
SM100_RESERVED_MASK = ((1 << 64) - 1) & ~((0x3FFF << 0) | (0x3FFF << 16) | (0x3FFF << 32) | (0x3 << 46) |
                                         (0x7 << 49) | (1 << 52) | (0x7 << 61))


@dataclass(frozen=True)
class UmmaDescriptor(GmmaDescriptor):
    """A tcgen05 (sm100) shared-memory matrix descriptor; byte-valued fields."""

    version: int = 1
    lbo_mode: int = 0

    _LAYOUT_CODE = _SM100_LAYOUT_CODE
    _RESERVED_MASK = SM100_RESERVED_MASK
    _INT_FIELDS = GmmaDescriptor._INT_FIELDS + ("version", "lbo_mode")

    @classmethod
    def decode(cls, value) -> "UmmaDescriptor":
        value = _descriptor_int(value)
        code = value >> 61 & 0x7
        if code not in _SM100_LAYOUT_MODE:
            hopper = ("; 3 is Hopper's encoding of the 32B swizzle (sm90's 2-bit layout type), which sm100 encodes "
                      "as 6 (Hopper's codes line up only when written at bit 62: 3 << 62 is 32B on both)"
                      if code == 3 else "")
            raise DescriptorError("swizzle", f"layout type {code} (bits 61-63) is unused on sm100; expected 0 none, "
                                             f"1 128B_base32B, 2 128B, 4 64B, 6 32B{hopper}")
        start, lbo, sbo = ((value >> shift & 0x3FFF) << 4 for _, shift in _ADDRESS_FIELDS)
        return cls(start, lbo, sbo, value >> 49 & 0x7, _SM100_LAYOUT_MODE[code], value & SM100_RESERVED_MASK,
                   value >> 46 & 0x3, value >> 52 & 1)

    def encode(self) -> int:
        errors = list(self._encoding_findings())
        if errors:
            raise DescriptorError(errors[0].field, errors[0].rule)
        value = self.reserved_bits | self.base_offset << 49 | self.version << 46 | self.lbo_mode << 52
        value |= _SM100_LAYOUT_CODE[self.swizzle] << 61
        for name, shift in _ADDRESS_FIELDS:
            value |= (getattr(self, name) & 0x3FFFF) >> 4 << shift
        return value

    def _encoding_findings(self):
        yield from super()._encoding_findings()
        if not 0 <= self.version <= 3:
            yield Finding("version", f"{self.version} does not fit the 2-bit field", "error")
        if self.lbo_mode not in (0, 1):
            yield Finding("lbo_mode", f"{self.lbo_mode} does not fit the 1-bit field", "error")

    def validate(self, arch: str = "sm100", major: str | None = None) -> List[Finding]:
        findings = self._common_findings(arch)
        if 0 <= self.version <= 3 and self.version != 1:
            findings.append(Finding("version", f"{self.version}: sm100 descriptors carry version 1 (bits 46-47; "
                                               "CuTe sets it, hand-built descriptors often miss it)", "error"))
        if self.lbo_mode == 1:
            findings += self._lbo_mode_findings(arch, major)
        if self.swizzle is SwizzleMode.NONE and self.base_offset:
            findings.append(Finding("base_offset", f"{self.base_offset} is ignored without swizzle", "warning"))
        if major is not None and parse_major(major) and self.swizzle is SwizzleMode.B128_BASE32B:
            findings.append(Finding("swizzle", "128B_base32B is MN-major only (CuTe static-asserts K-major)"
                                               + HOPPER_CODE_1, "error"))
        return findings

    def _lbo_mode_findings(self, arch, major):
        """LBO mode 1: the LBO field holds the absolute address of a second chunk (PTX 9.7.16.3.1.2; sm_103a,
        9.7.16.4.1.1), with 128B swizzle (16-byte atoms), K-major, base offset 0 (9.7.16.3.1.2.1)."""
        if arch != "sm103":
            return [Finding("lbo_mode", "1 (LBO holds an absolute address) is sm_103a only (PTX 9.7.16.4.1.1): "
                                        "validate with arch='sm103' (tcemu --arch sm103)", "error")]
        out = []
        if self.swizzle is not SwizzleMode.B128:
            out.append(Finding("lbo_mode", f"LBO mode 1 takes the 128B swizzle with 16-byte atoms only, not "
                                           f"{self.swizzle.value} (PTX 9.7.16.3.1.2.1)", "error"))
        if self.base_offset:
            out.append(Finding("base_offset", f"{self.base_offset}: with LBO mode 1 the base offset must be 0 "
                                              "(PTX 9.7.16.3.1.2.1)", "error"))
        if major is not None and not parse_major(major):
            out.append(Finding("lbo_mode", "LBO mode 1 is K-major only (PTX 9.7.16.3.1.2.1: transpose bits 0)", "error"))
        if 0 <= self.lbo < _FIELD_MAX and self.lbo >= SMEM_WINDOW[arch]:
            out.append(Finding("lbo", f"{self.lbo:#x} (the second chunk's absolute address) lies beyond the "
                                      f"{SMEM_WINDOW[arch] // 1024} KiB shared-memory window", "error"))
        elif self.lbo & 0x70:
            out.append(Finding("lbo", f"{self.lbo:#x}: tcemu models the second chunk starting a 128-byte line (chunk "
                                      "0 of the next K buffer, the only address CuTe's sm103 mainloop writes there); "
                                      "an address inside a line is not modelled", "error"))
        return out

    def check(self, arch: str = "sm100") -> "UmmaDescriptor":
        return super().check(arch)

    def __str__(self) -> str:
        return (super().__str__().replace("GmmaDescriptor", "UmmaDescriptor")[:-1]
                + f", version={self.version}, lbo_mode={self.lbo_mode})")


def _descriptor_int(value) -> int:
    value = as_int_literal(value, "descriptor", 100, "a 64-bit value", "an unsigned 64-bit integer", DescriptorError)
    if not 0 <= value < 1 << 64:  # hex reads as the fields it would hold
        shown = f"{value:#x}" if value.bit_length() <= 128 else show(value)
        raise DescriptorError("descriptor", f"must be an unsigned 64-bit integer, got {shown}")
    return value


def as_arch_descriptor(desc, arch: str):
    """The descriptor for `arch`: sm90 GmmaDescriptor, sm100 / sm103 UmmaDescriptor (ints are decoded as such)."""
    check_arch(arch)
    cls = UmmaDescriptor if is_blackwell(arch) else GmmaDescriptor
    if isinstance(desc, GmmaDescriptor):
        if type(desc) is not cls:
            raise DescriptorError("desc", f"a {type(desc).__name__} cannot describe an {arch} operand; use {cls.__name__}")
        return desc
    return cls.decode(desc)
