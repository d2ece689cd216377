"""The one type table (tcemu.arith.dtypes.TYPE_TABLE) and its views: the element types, the number formats' widths
and the PTX interpreter's fundamental types agree with it and with each other."""
import ml_dtypes
import numpy as np
import pytest

from tcemu.arith.dtypes import CONTAINER, DTYPES, NUMPY_TYPES, TYPE_TABLE
from tcemu.arith.formats import FLOAT_FORMATS, INT_FORMATS
from tcemu.ptx.errors import PtxError
from tcemu.ptx.types import TYPES, ptx_type


def test_views_are_read_from_the_table():
    assert set(TYPES) == {n for n, r in TYPE_TABLE.items() if r.ptx}
    assert all((t.bits, t.kind) == (TYPE_TABLE[n].bits, TYPE_TABLE[n].kind) for n, t in TYPES.items())
    assert set(DTYPES) == {n for n, r in TYPE_TABLE.items() if r.smem_bits}
    assert all(e.bits == TYPE_TABLE[n].smem_bits for n, e in DTYPES.items())
    assert NUMPY_TYPES == {n: r.numpy for n, r in TYPE_TABLE.items() if r.numpy is not None}
    assert all(f.bits == TYPE_TABLE[n].bits for n, f in FLOAT_FORMATS.items())
    assert all(INT_FORMATS[n] == (TYPE_TABLE[n].bits, TYPE_TABLE[n].kind == "s") for n in INT_FORMATS)


@pytest.mark.parametrize("name", sorted(TYPE_TABLE))
def test_each_row_is_consistent(name):
    r = TYPE_TABLE[name]
    assert r.kind in ("b", "u", "s", "f", "pred")
    if r.smem_bits:  # an operand's storage holds its value
        assert r.smem_bits >= r.bits and 128 % r.smem_bits == 0
    if name in FLOAT_FORMATS:
        f = FLOAT_FORMATS[name]
        assert r.kind == "f" and f.field_bits + f.shift <= r.bits
    if r.numpy is not None and name not in ("b1", "tf32"):  # b1 as bool, tf32 in an f32 container
        if r.kind == "f":
            assert ml_dtypes.finfo(r.numpy).bits == r.bits
        else:
            assert np.dtype(r.numpy).itemsize * 8 == r.bits and (np.dtype(r.numpy).kind == "i") == (r.kind == "s")
    if r.ptx and r.bits in CONTAINER:
        assert TYPES[name].container == CONTAINER[r.bits]


def test_ptx_refuses_types_it_does_not_have():
    for name in ("b1", "e2m1", "ue8m0", "ue4m3"):
        with pytest.raises(PtxError, match="is not a PTX fundamental type"):
            ptx_type(name)
    assert ptx_type(".e2m1x2").bits == 8 and ptx_type("tf32").kind == "f"
