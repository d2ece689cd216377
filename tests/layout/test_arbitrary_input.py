"""On arbitrary input, tcemu's public functions return a result or raise TcemuError (a ValueError
naming the field); no other exception may escape."""
import numpy as np
import pytest
from hypothesis import example, given, strategies as st

import tcemu
from tcemu import GmmaDescriptor, SwizzleMode, TcemuError
from tcemu.layout.descriptors import SM90_RESERVED_MASK, SM90_SWIZZLES
from tcemu.layout.smem import SharedMemory

DTYPE_NAMES = ["tf32", "f16", "bf16", "e4m3", "e5m2", "s8", "u8", "b1", "f32", "s32", ".bf16"]
U64 = st.integers(0, 2**64 - 1)
junk = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=12),
                 st.binary(max_size=8), st.integers(-2**70, 2**70).map(hex), st.just(np.int64(64)))


def mostly(valid):
    """valid 7 times in 8, junk otherwise (one_of would weight junk's many branches)."""
    return st.integers(0, 7).flatmap(lambda i: junk if i == 0 else valid)


dtypes = mostly(st.sampled_from(DTYPE_NAMES))
majors = mostly(st.just("K") | st.sampled_from(["MN", "M", "N", "k", "mn-major", "K-major", "x"]))
swizzles = mostly(st.sampled_from(list(SwizzleMode) + ["none", "32B", "64b", "sw128", "0", "interleave", "16B"]))
# rows/k: legal-looking shapes (so the window checks run) and odd ones, all <= 4096 (no unbounded
# ints: a legal (rows, k) near 2**24 would really allocate gigabytes). Larger sizes: test_huge_shapes.
sizes = st.one_of(st.sampled_from([8, 16, 32, 64, 256]), st.integers(1, 32).map(lambda x: 8 * x),
                  st.integers(-16, 4096), st.floats(), st.text(max_size=3),
                  st.sampled_from([0, -8, 8.0, "8", True, None, np.int64(64), np.uint16(16)]))
field = st.integers(0, 64).map(lambda x: 16 * x) | st.integers(0, 0x3FFF).map(lambda x: 16 * x)
valid_descriptors = st.builds(GmmaDescriptor, field, field, field, st.integers(0, 7), st.sampled_from(SM90_SWIZZLES))
descriptors = mostly(st.one_of(valid_descriptors, valid_descriptors.map(GmmaDescriptor.encode), U64,
                               st.builds(GmmaDescriptor, field | st.integers(), field | st.integers(),
                                         field | st.integers(), st.integers(-1, 8), st.sampled_from(SM90_SWIZZLES))))


def calls(fn, *args, **kwargs):
    """fn's result, or None after checking the TcemuError names its field."""
    try:
        return fn(*args, **kwargs)
    except TcemuError as exc:
        assert isinstance(exc, ValueError)
        assert isinstance(exc.field, str) and exc.field and exc.field in str(exc), repr(exc)
        return None


@given(st.one_of(U64, junk, st.integers(-2**80, 2**80), U64.map(hex), U64.map(lambda x: f"{x:_}")))
def test_decode_arbitrary(value):
    desc = calls(GmmaDescriptor.decode, value)
    if desc is not None:  # only a 64-bit int, or a string spelling one, decodes
        assert desc.encode() == (int(value) if isinstance(value, (int, np.integer)) else int(value.replace("_", ""), 0))


@given(U64)
def test_decode_encode_round_trip(value):
    assert GmmaDescriptor.decode(value).encode() == value


@given(st.integers(0, 0x3FFF), st.integers(0, 0x3FFF), st.integers(0, 0x3FFF), st.integers(0, 7),
       st.sampled_from(SM90_SWIZZLES), U64)
def test_encode_decode_round_trip(start, lbo, sbo, b0, swizzle, reserved):
    desc = GmmaDescriptor(16 * start, 16 * lbo, 16 * sbo, b0, swizzle, reserved & SM90_RESERVED_MASK)
    assert GmmaDescriptor.decode(desc.encode()) == desc


ints = st.integers() | st.integers(0, 0x3FFF).map(lambda x: 16 * x) | st.integers(0, 7)


@given(ints, ints, ints, ints, swizzles, st.just(0) | st.integers(),
       st.just("sm90") | st.text(max_size=5), st.none() | majors)
def test_descriptor_fields_arbitrary(start, lbo, sbo, b0, swizzle, reserved, arch, major):
    desc = calls(GmmaDescriptor, start, lbo, sbo, b0, swizzle, reserved)
    if desc is None:
        return
    encoded = calls(desc.encode)
    if encoded is not None:
        assert 0 <= encoded < 2**64 and GmmaDescriptor.decode(encoded) == desc
    findings = calls(desc.validate, arch, major)
    checked = calls(desc.check, arch)
    if arch == "sm90" and findings is not None:
        assert (checked is desc) == all(f.severity != "error" for f in findings)


@given(descriptors, sizes, sizes, dtypes, majors)
def test_addressing_arbitrary(desc, rows, k, dtype, major):
    addrs = calls(tcemu.operand_addresses, desc, rows=rows, k=k, dtype=dtype, major=major)
    if addrs is not None:
        assert addrs.shape == (rows, k) and addrs.min() >= 0 and addrs.max() < 228 * 1024
        assert calls(tcemu.footprint, desc, rows=rows, k=k, dtype=dtype, major=major)[0] == addrs.min()
        rows16 = calls(tcemu.core_matrix_rows, desc, rows=rows, k=k, dtype=dtype, major=major)
        assert rows16.shape[-1] == 8 and np.isin(rows16, addrs).all()
    calls(tcemu.canonical_layout, desc, dtype=dtype, major=major)


@pytest.mark.parametrize("size", [2**40, 2**61, 2**64, 2**100, np.int64(2**62)], ids=str)
def test_huge_shapes(size):
    # The footprint runs far past the 228 KiB window, which tcemu reports as DescriptorError;
    # a numpy MemoryError/ValueError from allocating the (rows, k) array first must not escape.
    desc = GmmaDescriptor(0x400, lbo=128, sbo=256)
    for kw in (dict(rows=size, k=8), dict(rows=8, k=size)):
        with pytest.raises(TcemuError):
            tcemu.operand_addresses(desc, dtype="bf16", **kw)


addresses = mostly(st.integers(-300, 228 * 1024 + 300) | st.integers())
arrays = mostly(st.one_of(st.lists(st.integers(-2**40, 2**40), max_size=8), st.lists(st.floats(), max_size=8),
                          st.lists(junk, max_size=4), st.binary(max_size=32),
                          st.sampled_from([np.arange(4, dtype=np.float32), np.arange(0, 24, 4, dtype=np.uint16),
                                           np.zeros((2, 2), np.float16), np.array(["a"]), np.array([], np.int64)])))


@given(addresses, st.one_of(st.integers(-8, 64), junk), arrays)
@example(address=0x400, nbytes=-1, data=b"")  # returns an empty array instead of raising
@example(address=1.0, nbytes=2, data=b"")  # non-int address: TypeError from slicing
@example(address=0, nbytes=8, data=2**70)  # TypeError from the object array's .view
def test_smem_read_write_arbitrary(address, nbytes, data):
    smem = SharedMemory()
    out = calls(smem.read, address, nbytes)
    if out is not None:
        assert out.dtype == np.uint8 and out.size == nbytes
    calls(smem.write, address, data)


@given(arrays, arrays, dtypes)
@example(addrs=[0, 4], values=[1, 2, 3], dtype="u8")  # numpy broadcast ValueError
@example(addrs=["a"], values=[1], dtype="u8")  # int() ValueError
def test_smem_gather_scatter_arbitrary(addrs, values, dtype):
    smem = SharedMemory()
    calls(smem.gather, addrs, dtype)
    calls(smem.scatter, addrs, values, dtype)


@given(descriptors, sizes, sizes, dtypes, majors, arrays | st.integers(-128, 255) | st.integers() | st.floats())
@example(desc=0x400, rows=8, k=32, dtype="u8", major="K", fill=["", b"\x80"])  # UnicodeDecodeError
@pytest.mark.slow
def test_smem_operand_io_arbitrary(desc, rows, k, dtype, major, fill):
    smem = SharedMemory()
    calls(smem.read_operand, desc, rows=rows, k=k, dtype=dtype, major=major)
    calls(smem.write_operand, desc, fill, dtype=dtype, major=major)
    if type(rows) is type(k) is int and 0 < rows <= 2**16 // max(k, 1) and k > 0 and isinstance(fill, (int, float)):
        calls(smem.write_operand, desc, np.full((rows, k), fill), dtype=dtype, major=major)
