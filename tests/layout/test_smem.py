"""SharedMemory: the sm90 window, typed tiles, errors at the edges."""
import ml_dtypes
import numpy as np
import pytest

from tcemu import GmmaDescriptor, SharedMemoryError, operand_addresses
from tcemu.layout.smem import SharedMemory


def test_window_size_and_edges():
    smem = SharedMemory()
    assert smem.size == 228 * 1024
    smem.write(smem.size - 4, b"\x01\x02\x03\x04")
    assert smem.read(smem.size - 4, 4).tolist() == [1, 2, 3, 4]
    with pytest.raises(SharedMemoryError, match=r"address: bytes \[0x38ffd, 0x39001\)"):
        smem.read(smem.size - 3, 4)
    with pytest.raises(SharedMemoryError, match="address"):
        smem.write(-1, b"\x00")


def test_gather_scatter_little_endian():
    smem = SharedMemory()
    smem.scatter([0x400, 0x402], np.array([0x1234, 0xABCD]), "bf16")
    assert smem.read(0x400, 4).tolist() == [0x34, 0x12, 0xCD, 0xAB]
    assert smem.gather([[0x402, 0x400]], "f16").tolist() == [[0xABCD, 0x1234]]
    smem.scatter(np.array([0x410]), np.float32(1.5), "tf32")
    assert smem.gather([0x410], "tf32")[0] == 0x3FC00000


def test_misaligned_and_unfit_values():
    smem = SharedMemory()
    with pytest.raises(SharedMemoryError, match="0x401 is not aligned to the 2-byte"):
        smem.gather([0x400, 0x401], "bf16")
    with pytest.raises(SharedMemoryError, match=r"values: value 256 at \(0,\) is outside \[0, 255\] \(8-bit u8\)"):
        smem.scatter([0], [256], "u8")
    with pytest.raises(SharedMemoryError, match="values: float16 values cannot be stored as tf32: give float32"):
        smem.scatter([0], np.float16(1), "tf32")
    with pytest.raises(SharedMemoryError, match="dtype: b1"):
        smem.gather([0], "b1")


@pytest.mark.parametrize("dtype,np_type,major", [("bf16", ml_dtypes.bfloat16, "K"), ("f16", np.float16, "MN"),
                                                  ("e4m3", ml_dtypes.float8_e4m3fn, "K"), ("tf32", np.float32, "K")])
@pytest.mark.parametrize("swizzle", ["none", "32B", "64B", "128B"])
def test_operand_roundtrip_lands_where_the_descriptor_reads(dtype, np_type, major, swizzle):
    rng = np.random.default_rng(7)
    desc = GmmaDescriptor(0x480, 0x800, 0x80 if swizzle == "none" else 0x400, 3, swizzle)  # no overlap
    k = 256 // np.dtype(np_type).itemsize // 8
    values = rng.standard_normal((64, k)).astype(np_type)
    smem = SharedMemory()
    smem.write_operand(desc, values, dtype=dtype, major=major)
    back = smem.read_operand(desc, rows=64, k=k, dtype=dtype, major=major)
    assert np.array_equal(back.view(np_type), values)
    addrs = operand_addresses(desc, rows=64, k=k, dtype=dtype, major=major)
    # each element's bytes sit at its resolved address, nowhere else
    assert np.count_nonzero(smem.data) <= values.nbytes
    r, c = 5, k - 1
    assert smem.read(int(addrs[r, c]), values.itemsize).tobytes() == values[r, c].tobytes()


def test_b1_operand_bits():
    desc = GmmaDescriptor(0x1000, 16, 1024, 0, "128B")
    bits = (np.arange(64 * 256).reshape(64, 256) % 3 == 0).astype(np.uint8)
    smem = SharedMemory()
    smem.write(0x1000, np.full(8192, 0xFF, np.uint8))  # stale ones must be cleared
    smem.write_operand(desc, bits, dtype="b1")
    assert np.array_equal(smem.read_operand(desc, rows=64, k=256, dtype="b1"), bits)
    addr = operand_addresses(desc, rows=64, k=256, dtype="b1")[1, 9]
    assert smem.read(int(addr), 1)[0] >> 1 & 1 == bits[1, 9]  # bit k % 8 of the byte


def test_write_operand_shape_error():
    with pytest.raises(SharedMemoryError, match="values: must be a \\(rows, k\\) matrix"):
        SharedMemory().write_operand(GmmaDescriptor(), np.zeros(16), dtype="bf16")
