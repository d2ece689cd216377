"""tma_placement: tma_load's box addresses (outer dimensions first) to a (rows, k) operand placement."""
import numpy as np
import pytest

from tcemu import SharedMemory, tma_load, tma_placement
from tcemu.layout.tma import TmaError

G = np.arange(256 * 128, dtype=np.uint16).reshape(256, 128)


def test_k_major_is_the_box_and_mn_major_its_transpose():
    a = tma_load(SharedMemory(), 0x400, G, box=[64, 32], coords=[0, 0], swizzle="128B")  # (32 rows, 64 K)
    assert np.array_equal(tma_placement(a, rows=1, k=0), a)
    assert np.array_equal(tma_placement(a, rows=0, k=1), a.T)


def test_several_boxes_are_placed_by_their_coords():
    """Two boxes side by side along K (each the 128-byte swizzle span), given in any order."""
    smem = SharedMemory()
    left = tma_load(smem, 0x400, G, box=[64, 32], coords=[0, 64], swizzle="128B")
    right = tma_load(smem, 0x1400, G, box=[64, 32], coords=[64, 64], swizzle="128B")
    p = tma_placement([(right, [64, 64]), (left, [0, 64])], rows=1, k=0)
    assert p.shape == (32, 128) and np.array_equal(p[:, :64], left) and np.array_equal(p[:, 64:], right)


def test_element_strides_count_the_elements_taken():
    a = tma_load(SharedMemory(), 0x400, G, box=[64, 16], coords=[0, 0], element_strides=[1, 2])  # 8 rows taken
    assert a.shape == (8, 64)
    assert np.array_equal(tma_placement(a, rows=1, k=0, element_strides=[1, 2]), a)


def test_a_4d_map_folds_two_dimensions_into_each_axis():
    """dimension 0: 8 K elements, 1: 4 rows, 2: 2 K pieces, 3: 2 row groups; rows = (1, 3), k = (0, 2): operand
    element (r, c) is box element (i3, i2, i1, i0) with r = i1 + 4 i3 and c = i0 + 8 i2."""
    addr = np.arange(2 * 2 * 4 * 8).reshape(2, 2, 4, 8) * 2 + 0x400
    p = tma_placement(addr, rows=(1, 3), k=(0, 2))
    r, c = np.meshgrid(np.arange(8), np.arange(16), indexing="ij")
    assert np.array_equal(p, addr[r // 4, c // 8, r % 4, c % 8])


@pytest.mark.parametrize("loads,kw,field,text", [
    ([(np.zeros((4, 8), int), [0, 0]), (np.zeros((4, 8), int), [0, 2])], dict(rows=1, k=0), "loads", "boxes overlap"),
    ([(np.zeros((4, 8), int), [0, 0]), (np.zeros((4, 8), int), [0, 8])], dict(rows=1, k=0), "loads", "leave a hole"),
    (np.zeros((2, 4, 8), int), dict(rows=1, k=0), "rows, k", "dimension 2 spans 2 elements"),
    (np.zeros((4, 8), int), dict(rows=1, k=1), "rows, k", "distinct dimensions"),
    (np.zeros((4, 8), int), dict(rows=2, k=0), "rows", "TMA dimension numbers 0..1"),
    ([(np.zeros((4, 8), int), [0])], dict(rows=1, k=0), "loads", "with its coords"),
    (np.zeros((4, 8)), dict(rows=1, k=0), "loads", "address array"),
])
def test_refusals_name_the_problem(loads, kw, field, text):
    with pytest.raises(TmaError) as e:
        tma_placement(loads, **kw)
    assert e.value.field == field and text in e.value.rule


def test_empty_inputs_are_refused():
    from tcemu import LayoutError
    from tcemu.tools.check import check_tile
    for loads in ([], np.zeros((0, 8), int)):
        with pytest.raises(TmaError) as e:
            tma_placement(loads, rows=1, k=0)
        assert e.value.field == "loads"
    with pytest.raises(LayoutError) as e:
        check_tile(np.zeros((0, 64), int), 0x4000004000010040, dtype="bf16", start_advance=32)
    assert e.value.field == "written" and "not empty" in e.value.rule
