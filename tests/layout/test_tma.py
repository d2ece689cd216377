"""TMA tile loads: the writer side of a descriptor bug, and the rules the hardware enforces."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import tcemu
from tcemu.layout.smem import SharedMemory
from tcemu.layout.tma import TmaError, tensor_view, tma_load

from arbitrary import junk, only_ours


def tile(rows=128, cols=64):
    return (np.arange(rows * cols, dtype=np.uint16) * 7 + 1).reshape(rows, cols)


@pytest.mark.parametrize("dst", [0x400, 0x480, 0x2000, 0x2380])
def test_tma_128b_tile_is_what_a_128b_descriptor_reads(dst):
    """CuTe's mainloop pairing: TMA with 128B swizzle writes a 64-column bf16 tile that a K-major
    128B-swizzled descriptor (SBO 1024) reads back exactly. Both swizzle absolute address bits, so the
    matching base offset is 0 even at a destination that is not 1024-aligned; the PTX formula
    (dst >> 7) & 7 then reads other elements (traces: wgmma and TMA captures)."""
    g = tile()
    smem = SharedMemory()
    tma_load(smem, dst, g, box=[64, 64], coords=[0, 32], swizzle="128B")
    for kblock in range(4):  # advance the start 32 bytes per K block, as CuTe does
        d = tcemu.GmmaDescriptor(dst + 32 * kblock, 16, 1024, 0, "128B")
        assert np.array_equal(smem.read_operand(d, rows=64, k=16, dtype="bf16"), g[32:96, 16 * kblock:16 * kblock + 16])
    if (dst >> 7) & 7:
        wrong = tcemu.GmmaDescriptor(dst, 16, 1024, (dst >> 7) & 7, "128B")
        assert not np.array_equal(smem.read_operand(wrong, rows=64, k=16, dtype="bf16"), g[32:96, :16])


def test_unswizzled_rows_are_dense_and_oob_is_zero():
    g = tile(8, 24)
    smem = SharedMemory()
    addrs = tma_load(smem, 0x800, g, box=[16, 4], coords=[16, 6])  # columns 16..31, rows 6..9
    assert addrs.shape == (4, 16) and addrs[1, 0] == 0x800 + 32     # pitch = box inner size
    got = smem.gather(addrs, "f16")
    want = np.zeros((4, 16), np.uint16)
    want[:2, :8] = g[6:8, 16:24]                                     # rows 8, 9 and columns 24.. are outside
    assert np.array_equal(got, want)


def test_swizzled_rows_take_a_whole_span_and_element_strides():
    g = tile(32, 16)
    smem = SharedMemory()
    addrs = tma_load(smem, 0x1000, g, box=[8, 8], coords=[0, 0], element_strides=[1, 2], swizzle="64B")
    assert addrs.shape == (4, 8)                                     # ceil(8 / 2) rows
    assert [int(a) & ~15 for a in addrs[:, 0]] == [0x1000, 0x1040, 0x1090, 0x10D0]  # 64-byte rows, swizzled chunk
    assert np.array_equal(smem.gather(addrs, "f16"), g[0:8:2, 0:8])


def test_tensor_view_matches_driver_parameters():
    buf = np.arange(4096, dtype=np.uint8)
    v = tensor_view(buf, 32, 2, dims=[10, 3], strides=[48])          # rows of 10 u16, 48-byte pitch
    assert v.shape == (3, 10) and int(v[1, 0]) == 80 | 81 << 8


@pytest.mark.parametrize("kw,field", [
    (dict(box=[64, 8], coords=[0, 0], swizzle="64B"), "box"),        # 128 bytes > 64B span
    (dict(box=[12, 8], coords=[0, 0]), "box"),                       # 24 bytes: not a multiple of 16
    (dict(box=[8, 300], coords=[0, 0]), "box"),
    (dict(box=[8, 8], coords=[4, 0]), "coords"),                     # 8 bytes into the row: illegal instruction
    (dict(box=[8, 8], coords=[0, 0], element_strides=[1, 9]), "element_strides"),
    (dict(box=[8, 8], coords=[0, 0], swizzle="16B"), "swizzle"),
    (dict(box=[8], coords=[0, 0]), "box"),
    (dict(box=[8, 8], coords=[0, 0], oob_fill="nan"), "oob_fill"),
])
def test_refusals_name_the_field(kw, field):
    with pytest.raises(TmaError) as e:
        tma_load(SharedMemory(), 0x400, tile(16, 64), **kw)
    assert e.value.field == field


def test_misaligned_destination():
    with pytest.raises(TmaError, match="smem_addr: 1088: the destination must be 128-byte aligned"):
        tma_load(SharedMemory(), 0x440, tile(16, 64), box=[8, 8], coords=[0, 0])


@pytest.mark.parametrize("dst", [0x400, 0x680])
def test_sm100_atom_32b_tile_is_what_a_128b_base32b_descriptor_reads(dst):
    """TMA 128B_ATOM_32B writes an MN-major tf32 tile (32 M x 8 K per 4-line atom) that the UMMA
    descriptor's 128B_base32B mode (the same Swizzle<2,5,2>) reads back; 128B does not."""
    g = (np.arange(8 * 32, dtype=np.uint32) * np.uint32(0x9E3779B1)).reshape(8, 32)  # (K, M), distinct values
    smem = SharedMemory("sm100")
    tma_load(smem, dst, g, box=[32, 8], coords=[0, 0], swizzle="128B_ATOM_32B")
    d = tcemu.UmmaDescriptor(start_address=dst, lbo=4096, sbo=512, swizzle="128B_base32B", version=1)
    assert np.array_equal(smem.read_operand(d, rows=32, k=8, dtype="tf32", major="MN"), g.T)
    wrong = tcemu.UmmaDescriptor(start_address=dst, lbo=4096, sbo=1024, swizzle="128B", version=1)
    assert not np.array_equal(smem.read_operand(wrong, rows=32, k=8, dtype="tf32", major="MN"), g.T)


def test_sm100_modes_permute_lines_as_the_pattern_tables_say():
    """One 128-byte line per box row, u8 elements valued by their column: where each 16-byte chunk of
    line r lands (PTX 5.5.7 pattern tables; the flip swaps 8-byte halves on odd lines)."""
    g = np.tile(np.arange(128, dtype=np.uint8), (8, 1))
    chunks = {}
    for mode in ("128B_ATOM_32B", "128B_ATOM_64B", "128B_ATOM_32B_FLIP_8B"):
        smem = SharedMemory("sm100")
        addrs = tma_load(smem, 0x800, g, box=[128, 8], coords=[0, 0], swizzle=mode)
        chunks[mode] = ((addrs[:, ::16] - 0x800) % 128 // 16).tolist()
        if mode.endswith("FLIP_8B"):
            assert (addrs[1, 0] - 0x800) % 16 == 8 and (addrs[0, 0] - 0x800) % 16 == 0
    assert chunks["128B_ATOM_32B"][1] == [2, 3, 0, 1, 6, 7, 4, 5] and chunks["128B_ATOM_32B"][3] == [6, 7, 4, 5, 2, 3, 0, 1]
    assert chunks["128B_ATOM_32B"][4] == list(range(8))  # 4-line pattern
    assert chunks["128B_ATOM_64B"][1] == [4, 5, 6, 7, 0, 1, 2, 3] and chunks["128B_ATOM_64B"][2] == list(range(8))
    assert chunks["128B_ATOM_32B_FLIP_8B"] == chunks["128B_ATOM_32B"]
    with pytest.raises(TmaError, match="sm90 TMA swizzle") as e:
        tma_load(SharedMemory(), 0x800, g, box=[128, 8], coords=[0, 0], swizzle="128B_ATOM_32B")
    assert e.value.field == "swizzle"


def _pack(values, width):
    """Rows of `width`-bit values packed little-endian (element i at bit width*i), as uint8 bytes."""
    rows, n = values.shape
    bits = (values[:, :, None] >> np.arange(width)) & 1
    return np.packbits(bits.reshape(rows, n * width), axis=1, bitorder="little")


@pytest.mark.parametrize("data_type,dtype,width", [("16U4_ALIGN16B", "e2m1", 4), ("16U6_ALIGN16B", "e2m3", 6)])
def test_sm100_padded_types_feed_f8f6f4_operands(data_type, dtype, width):
    """16 packed values then padding per 16 bytes: a 128B K-major descriptor advanced 32 bytes per K block
    reads the packed tensor's elements (kind::f8f6f4), and the padding bytes are never written."""
    rng = np.random.default_rng(1)
    vals = rng.integers(0, 1 << width, (64, 256))
    g = _pack(vals, width)
    smem = SharedMemory("sm100")
    addrs = tma_load(smem, 0x400, g, box=[128, 64], coords=[128, 0], swizzle="128B", data_type=data_type)
    assert addrs.shape == (64, 128) and smem.written[0x400:0x400 + 64 * 128].sum() == 64 * 8 * width * 2
    for kb in range(4):
        d = tcemu.UmmaDescriptor(start_address=0x400 + 32 * kb, lbo=16, sbo=1024, swizzle="128B", version=1)
        got = smem.read_operand(d, rows=64, k=32, dtype=dtype, padded=True)
        assert np.array_equal(got, vals[:, 128 + 32 * kb:128 + 32 * kb + 32])
    with pytest.raises(TmaError, match="box\\[0\\] is 128") as e:
        tma_load(smem, 0x400, g, box=[64, 64], coords=[0, 0], swizzle="128B", data_type=data_type)
    assert e.value.field == "box"
    with pytest.raises(TmaError, match="none, 128B or 128B_ATOM_32B"):
        tma_load(smem, 0x400, g, box=[128, 64], coords=[0, 0], swizzle="64B", data_type=data_type)


def test_sm100_align8b_is_packed_fp4():
    """16U4_ALIGN8B copies packed bytes: two e2m1 per byte, the layout kind::mxf4* reads (K = 64 per MMA)."""
    rng = np.random.default_rng(2)
    vals = rng.integers(0, 16, (32, 256))
    smem = SharedMemory("sm100")
    addrs = tma_load(smem, 0x800, _pack(vals, 4), box=[256, 32], coords=[0, 0], swizzle="128B",
                     data_type="16U4_ALIGN8B")
    assert addrs.shape == (32, 256) and addrs[0, 0] == addrs[0, 1] == 0x800
    for kb in range(4):
        d = tcemu.UmmaDescriptor(start_address=0x800 + 32 * kb, lbo=16, sbo=1024, swizzle="128B", version=1)
        assert np.array_equal(smem.read_operand(d, rows=32, k=64, dtype="e2m1"), vals[:, 64 * kb:64 * kb + 64])
    with pytest.raises(TmaError, match="packed types are sm100") as e:
        tma_load(SharedMemory(), 0x800, _pack(vals, 4), box=[256, 32], coords=[0, 0], data_type="16U4_ALIGN8B")
    assert e.value.field == "data_type"


# ---- arbitrary input: a result or TcemuError naming its field, never another exception ----

@given(st.lists(st.integers(-300, 300), min_size=0, max_size=6), st.lists(st.integers(-300, 300), min_size=0, max_size=6),
       st.one_of(st.none(), st.lists(st.integers(-2, 10), max_size=6)), st.one_of(st.sampled_from(["none", "32B", "64B", "128B"]), junk),
       st.one_of(st.integers(-512, 1 << 20), junk), st.integers(1, 3))
def test_tma(box, coords, est, swizzle, dst, rank):
    tensor = np.zeros((4,) * rank, np.uint16)
    only_ours(tma_load, SharedMemory(), dst, tensor, box=box, coords=coords, element_strides=est, swizzle=swizzle)


@given(st.integers(1, 3), st.sampled_from([1, 2, 4]), st.data())
def test_a_box_inside_the_tensor_is_placed_as_the_general_rule_places_it(rank, es, data):
    """plan_tile reads a box that lies inside the tensor as one strided slice with precomputed offsets; values and
    flat indices equal the per-element rule's (every coordinate checked, out-of-bounds elements zero, -1)."""
    from tcemu.layout.tma import _box_geometry, plan_tile
    per = 16 // es
    box = [per * data.draw(st.integers(1, 3))] + [data.draw(st.integers(1, 8)) for _ in range(rank - 1)]
    est = [1] + [data.draw(st.integers(1, 3)) for _ in range(rank - 1)]
    dims = [box[0] + per * data.draw(st.integers(0, 4))] + [b * e + data.draw(st.integers(0, 5))
                                                         for b, e in zip(box[1:], est[1:])]
    t = np.arange(int(np.prod(dims)), dtype={1: np.uint8, 2: np.uint16, 4: np.uint32}[es]).reshape(dims[::-1])
    coords = [per * data.draw(st.integers(-1, (dims[0] - box[0]) // per + 1))] + \
        [data.draw(st.integers(-2, d - 1)) for d in dims[1:]]
    addr, values, flat, counts, keep = plan_tile(0, t, box, coords, est)
    idx, _ = _box_geometry(0, tuple(counts), es, box[0] * es, 0, 0, 0, False)
    g = np.array(coords)[:, None] + idx * np.array(est)[:, None]
    inside = np.all((g >= 0) & (g < np.array(dims)[:, None]), axis=0)
    want = np.where(inside, np.ravel_multi_index(tuple(np.where(inside, g, 0)[::-1]), t.shape), -1)
    assert np.array_equal(flat, want)
    assert np.array_equal(values, np.where(inside, t.reshape(-1)[np.maximum(want, 0)], 0))
