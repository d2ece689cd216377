"""sm90 matrix descriptor: encoding (PTX 9.7.15.5.1.2.2), validation findings, errors."""
import pytest

from tcemu import DescriptorError, GmmaDescriptor, SwizzleMode, TcemuError


def test_field_positions():
    d = GmmaDescriptor(start_address=0x3FFF0, lbo=0x10, sbo=0x20, base_offset=5, swizzle="32B")
    assert d.encode() == 0x3FFF | 0x1 << 16 | 0x2 << 32 | 5 << 49 | 3 << 62


@pytest.mark.parametrize("code,mode", [(0, "none"), (1, "128B"), (2, "64B"), (3, "32B")])
def test_layout_type_codes(code, mode):
    d = GmmaDescriptor.decode(code << 62)
    assert d.swizzle is SwizzleMode.parse(mode)
    assert d.encode() == code << 62


def test_ptx_worked_example_encodings():
    # PTX Figure 166: K-major, no swizzle, tf32: LBO = 64*4 bytes -> 16, SBO = 32*4 bytes -> 8.
    d = GmmaDescriptor(lbo=64 * 4, sbo=32 * 4)
    assert (d.encode() >> 16 & 0x3FFF, d.encode() >> 32 & 0x3FFF) == (16, 8)
    # Figure 170: MN-major 64B bf16: LBO 256*2 -> 32, SBO 512*2 -> 64.
    d = GmmaDescriptor(lbo=256 * 2, sbo=512 * 2, swizzle="64B")
    assert (d.encode() >> 16 & 0x3FFF, d.encode() >> 32 & 0x3FFF, d.encode() >> 62) == (32, 64, 2)


def test_decode_hex_string_and_roundtrip():
    d = GmmaDescriptor.decode("0x4000004000010040")
    assert (d.start_address, d.lbo, d.sbo, d.base_offset, d.swizzle) == (0x400, 0x10, 0x400, 0, SwizzleMode.B128)
    assert d.encode() == 0x4000004000010040
    assert GmmaDescriptor.decode(d.encode()) == d


def test_reserved_bits_roundtrip_and_are_errors():
    value = 1 << 14 | 1 << 47 | 1 << 60
    d = GmmaDescriptor.decode(value)
    assert d.encode() == value
    (f,) = [f for f in d.validate() if f.field == "reserved_bits"]
    assert f.severity == "error" and "14, 47, 60" in f.rule
    with pytest.raises(DescriptorError, match="reserved_bits"):
        d.check()


@pytest.mark.parametrize("kwargs,field,text", [
    (dict(start_address=0x408), "start_address", "multiple of 16"),
    (dict(lbo=0x40000), "lbo", "does not fit"),
    (dict(sbo=-16), "sbo", "does not fit"),
    (dict(base_offset=8), "base_offset", "3-bit"),
])
def test_encoding_errors_name_the_field(kwargs, field, text):
    d = GmmaDescriptor(**kwargs)
    with pytest.raises(DescriptorError, match=field) as e:
        d.encode()
    assert e.value.field == field and text in e.value.rule
    assert [f.field for f in d.validate() if f.severity == "error"] == [field]


def test_start_beyond_window():
    d = GmmaDescriptor(start_address=0x39000)
    (f,) = d.validate()
    assert (f.field, f.severity) == ("start_address", "error") and "228 KiB" in f.rule
    assert GmmaDescriptor(start_address=0x38FF0).validate() == []


def test_warnings_for_ignored_fields():
    fields = lambda d, **kw: [(f.field, f.severity) for f in d.validate(**kw)]
    assert fields(GmmaDescriptor(base_offset=3)) == [("base_offset", "warning")]
    assert fields(GmmaDescriptor(base_offset=2, swizzle="32B")) == [("base_offset", "warning")]
    assert fields(GmmaDescriptor(base_offset=1, swizzle="32B")) == []
    assert fields(GmmaDescriptor(base_offset=3, swizzle="64B")) == []
    assert fields(GmmaDescriptor(base_offset=4, swizzle="64B")) == [("base_offset", "warning")]
    sw = GmmaDescriptor(lbo=0x100, swizzle="128B")
    assert fields(sw, major="K") == [("lbo", "warning")]
    assert fields(sw, major="MN") == [] and fields(sw) == []


def test_several_errors_are_all_named():
    d = GmmaDescriptor(start_address=0x401, lbo=0x7, base_offset=9)
    with pytest.raises(DescriptorError) as e:
        d.check()
    assert e.value.field == "start_address, lbo, base_offset"


@pytest.mark.parametrize("bad", [-1, 1 << 64, 1.5, None, "zz", "12x", True])
def test_decode_rejects_non_descriptors(bad):
    with pytest.raises(DescriptorError, match="descriptor"):
        GmmaDescriptor.decode(bad)


def test_bad_constructor_values():
    with pytest.raises(DescriptorError, match="swizzle"):
        GmmaDescriptor(swizzle="16B")
    with pytest.raises(DescriptorError, match="lbo"):
        GmmaDescriptor(lbo=16.0)
    assert issubclass(DescriptorError, TcemuError) and issubclass(TcemuError, ValueError)


@pytest.mark.parametrize("text", ["128B", "128", "sw128", "128b", SwizzleMode.B128])
def test_swizzle_spellings(text):
    assert SwizzleMode.parse(text) is SwizzleMode.B128
    assert SwizzleMode.parse("none") is SwizzleMode.parse("interleave") is SwizzleMode.parse(0) is SwizzleMode.NONE


# ---- architecture hints: a Blackwell descriptor decoded as Hopper's, and back (issue 13's friction) ----

def _tk_blackwell_desc(addr, lbo, sbo, hopper_code):
    """ThunderKittens include/types/shared/descriptor.cuh (matrix_descriptor_raw): on Blackwell it ORs 1 << 46
    (the version) into the Hopper encoding, whose 2-bit layout code sits at bit 62 on both archs."""
    enc = lambda x: (x & 0x3FFFF) >> 4  # noqa: E731  PTX matrix-descriptor-encode
    return enc(addr) | enc(lbo) << 16 | enc(sbo) << 32 | 1 << 46 | hopper_code << 62



def test_blackwell_descriptor_decoded_as_hopper_names_the_version_bit(capsys):
    from tcemu import GmmaDescriptor, UmmaDescriptor
    from tcemu.cli import main
    value = _tk_blackwell_desc(0x400, 16, 1024, 1)  # K-major 128B, as ThunderKittens builds it for tcgen05
    assert value == 0x4000404000010040
    [f] = [f for f in GmmaDescriptor.decode(value).validate() if f.severity == "error"]
    assert f.field == "reserved_bits"
    assert f.rule == ("bit 46 is reserved and must be 0; bit 46 is sm100's descriptor version bit (UMMA descriptors "
                      "carry version 1 in bits 46-47): this looks like a Blackwell descriptor, decode it with --arch "
                      "sm100 (arch='sm100')")
    assert main(["decode", hex(value)]) == 1
    assert "decode it with --arch sm100" in capsys.readouterr().out
    sm100 = UmmaDescriptor.decode(value)  # the same value read as sm100: Hopper's code 1 << 62 is 128B there too
    assert (sm100.swizzle.value, sm100.version, sm100.validate(major="K")) == ("128B", 1, [])
    assert main(["decode", hex(value), "--arch", "sm100"]) == 0



def test_hopper_layout_codes_in_the_sm100_field_are_named():
    """A hand-rolled sm100 builder that stores Hopper's GMMA layout enum (B128 = 1, B32 = 3) in the 3-bit layout
    field at bits 61-63 (CuTe's UMMA::SmemDescriptor::layout_type_) gets 128B_base32B or an unused code."""
    from tcemu import DescriptorError, UmmaDescriptor
    from tcemu.tools.explain import explain
    base = 0x40 | 1 << 16 | 0x40 << 32 | 1 << 46
    with pytest.raises(DescriptorError) as e:
        UmmaDescriptor.decode(base | 3 << 61)
    assert e.value.field == "swizzle" and "3 is Hopper's encoding of the 32B swizzle" in e.value.rule
    assert "sm100 encodes as 6" in e.value.rule
    text = explain(base | 1 << 61, arch="sm100", dtype="bf16", major="K")
    assert ("error: swizzle: 128B_base32B is MN-major only (CuTe static-asserts K-major); layout type 1 (bits 61-63) "
            "is Hopper's encoding of the 128B swizzle; sm100 encodes 128B as 2") in text
