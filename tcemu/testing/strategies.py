"""Hypothesis strategies for tcemu inputs (needs hypothesis: pip install 'tcemu[test]').

    from tcemu.testing.strategies import operands
    @given(operands())
    def test_my_kernel_layout(case): desc, rows, k, dtype, major = case; ...
"""
import numpy as np
from hypothesis import strategies as st

from ..layout.addressing import operand_addresses
from ..core.arch import SMEM_WINDOW, check_arch
from ..layout.descriptors import (SM90_RESERVED_MASK, SM90_SWIZZLES, SM100_SWIZZLES, GmmaDescriptor, SwizzleMode,
                                  UmmaDescriptor)
from ..arith.dtypes import SM90_MN_MAJOR_DTYPES, SM90_OPERAND_DTYPES, element_type
from ..core.errors import TcemuError
from ..hopper.wgmma import K_OF
from ..blackwell.instr import (BLOCK_SCALED, D_CODES, KINDS, SCALE_CODES, TYPE_CODES, WS_KINDS, InstrDescriptor,
                               ZeroColumnMask)
from ..blackwell.instr import SELECTORS as TCGEN05_SELECTORS
from ..blackwell.instr import shape_findings
from ..blackwell.mma import K_OF_KIND
from ..blackwell.sparse import CHUNK as TCGEN05_CHUNK, VALID_NIBBLES as TCGEN05_VALID_NIBBLES
from ..hopper.sparse import SELECTORS, SP_K_OF, VALID_NIBBLES, CHUNK, meta_registers
from ..core.validate import as_int, show

WINDOW = SMEM_WINDOW["sm90"]


def descriptor_values():
    """Any 64-bit value: what a buggy kernel might hand the tensor core."""
    return st.integers(0, (1 << 64) - 1)


def valid_descriptors(swizzles=None, max_stride=4096, arch: str = "sm90"):
    """Descriptors validate() accepts: GmmaDescriptor (sm90) or UmmaDescriptor with the version bit (sm100,
    sm103). Arguments are checked when the strategy is made (an unknown arch raises here, not at draw time)."""
    check_arch(arch)
    legal = SM100_SWIZZLES if arch != "sm90" else SM90_SWIZZLES
    if swizzles is not None:
        if isinstance(swizzles, (str, SwizzleMode)) or not isinstance(swizzles, (list, tuple)) or not swizzles:
            raise TcemuError("swizzles", f"must be a non-empty list of swizzle modes, got {show(swizzles)}")
        swizzles = [SwizzleMode.parse(m) for m in swizzles]
        for m in swizzles:
            if m not in legal:
                raise TcemuError("swizzles", f"{m.value} is not an {arch} descriptor swizzle")
    max_stride = as_int(max_stride, "max_stride", 0, 16 * 0x3FFF)
    return _valid_descriptors(tuple(swizzles or legal), max_stride, arch)


@st.composite
def _valid_descriptors(draw, swizzles, max_stride, arch):
    mode = draw(st.sampled_from(swizzles))
    fields = (16 * draw(st.integers(0x40, 0x2000)), 16 * draw(st.integers(0, max_stride // 16)),
              16 * draw(st.integers(0, max_stride // 16)), draw(st.integers(0, 7)) if mode is not SwizzleMode.NONE else 0,
              mode)
    return UmmaDescriptor(*fields, version=1) if arch != "sm90" else GmmaDescriptor(*fields)


@st.composite
def invalid_descriptors(draw):
    """Descriptors that validate() rejects: reserved bits set, or a start beyond the window."""
    d = draw(valid_descriptors())
    if draw(st.booleans()):
        bits = draw(st.integers(1, (1 << 64) - 1)) & SM90_RESERVED_MASK
        return GmmaDescriptor.decode(d.encode() | (bits or 1 << 14))
    return GmmaDescriptor(16 * draw(st.integers(WINDOW // 16, (1 << 14) - 1)), d.lbo, d.sbo, d.base_offset, d.swizzle)


def operands(dtypes=SM90_OPERAND_DTYPES, majors=("K", "MN")):
    """(desc, rows, k, dtype, major) that operand_addresses accepts: the instruction's K, rows a legal M/N,
    strides up to 4 KiB, and a start address that keeps the whole operand inside the 228 KiB window."""
    if isinstance(dtypes, str) or not isinstance(dtypes, (list, tuple)) or not dtypes or \
            not all(d in SM90_OPERAND_DTYPES for d in dtypes):
        raise TcemuError("dtypes", f"must be a non-empty list of {', '.join(SM90_OPERAND_DTYPES)}, got {show(dtypes)}")
    if isinstance(majors, str) or not isinstance(majors, (list, tuple)) or not majors or \
            not all(m in ("K", "MN") for m in majors):
        raise TcemuError("majors", f"must be a non-empty list of 'K' and 'MN', got {show(majors)}")
    if "K" not in majors and not any(d in SM90_MN_MAJOR_DTYPES for d in dtypes):
        raise TcemuError("majors", f"MN-major needs one of {', '.join(SM90_MN_MAJOR_DTYPES)} among the dtypes")
    return _operands(tuple(dtypes), tuple(majors))


@st.composite
def _operands(draw, dtypes, majors):
    dtype = draw(st.sampled_from([d for d in dtypes if "K" in majors or d in SM90_MN_MAJOR_DTYPES]))
    major = draw(st.sampled_from([m for m in majors if m == "K" or dtype in SM90_MN_MAJOR_DTYPES]))
    shape = draw(valid_descriptors())
    rows = 8 * draw(st.integers(1, 32))
    if major == "MN":
        rows = max(rows // element_type(dtype).per_chunk, 1) * element_type(dtype).per_chunk
    k = K_OF[dtype]
    # the operand's extent from start 0 (a swizzle only permutes bytes inside a 128-byte line), then a start
    # address that keeps it in the window
    probe = GmmaDescriptor(0, shape.lbo, shape.sbo, shape.base_offset, shape.swizzle)
    extent = (int(operand_addresses(probe, rows=rows, k=k, dtype=dtype, major=major).max()) | 127) + 1
    top = min(0x2000, (WINDOW - extent) // 16)
    start = 16 * draw(st.integers(min(0x40, top), top))
    return GmmaDescriptor(start, shape.lbo, shape.sbo, shape.base_offset, shape.swizzle), rows, k, dtype, major


def wgmma_forms():
    """(shape, dtype_a, dtype_b, dtype_d) of legal wgmma forms."""
    pairs = [("tf32", "tf32", "f32"), ("f16", "f16", "f32"), ("f16", "f16", "f16"), ("bf16", "bf16", "f32")]
    pairs += [(a, b, d) for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2") for d in ("f32", "f16")]
    pairs += [(a, b, "s32") for a in ("s8", "u8") for b in ("s8", "u8")] + [("b1", "b1", "s32")]
    return st.sampled_from(pairs).flatmap(lambda p: st.sampled_from(
        [n for n in range(8, 257, 8) if p[2] != "s32" or n in (8, 16, 24) or n % 16 == 0]).map(
        lambda n: (f"m64n{n}k{K_OF[p[0]]}",) + p))


def tcgen05_forms(kinds=KINDS, cta_group: int = 1):
    """InstrDescriptors of legal tcgen05.mma forms (PTX Tables 39, 42-44) for `cta_group`."""
    if isinstance(kinds, str) or not isinstance(kinds, (list, tuple)) or not kinds or \
            not all(k in KINDS for k in kinds):
        raise TcemuError("kinds", f"must be a non-empty list of {', '.join(KINDS)}, got {show(kinds)}")
    return _tcgen05_forms(tuple(kinds), as_int(cta_group, "cta_group", 1, 2))


@st.composite
def _tcgen05_forms(draw, kinds, cta_group):
    kind = draw(st.sampled_from(kinds))
    types = list(TYPE_CODES[kind])
    scaled, packed = kind in BLOCK_SCALED, kind in ("mxf4", "mxf4nvf4")
    m = draw(st.sampled_from([128] if scaled and cta_group == 1 else [64, 128] if cta_group == 1 else [128, 256]))
    dtype_a, dtype_b = draw(st.sampled_from(types)), draw(st.sampled_from(types))
    dtype_d = "f32" if scaled else draw(st.sampled_from(
        [d for d in D_CODES[kind] if not (d == "f16" and "bf16" in (dtype_a, dtype_b))]))
    mn_ok = not packed and kind != "tf32"  # tf32 MN-major needs the 32-byte-atom swizzle: keep forms simple
    transpose_b = mn_ok and dtype_b not in ("e2m1", "e2m3", "e3m2") and draw(st.booleans())
    eight_bit_b = transpose_b and dtype_b in ("e4m3", "e5m2", "s8", "u8")
    n = draw(st.sampled_from([n for n in range(8, 257, 8)
                              if not shape_findings(kind, m, n, cta_group, transposed_8bit_b=eight_bit_b)]))
    return InstrDescriptor(kind, dtype_a, dtype_b, m=m, n=n, dtype_d=dtype_d,
                           transpose_a=mn_ok and dtype_a not in ("e2m1", "e2m3", "e3m2") and draw(st.booleans()),
                           transpose_b=transpose_b, negate_a=kind != "i8" and draw(st.booleans()),
                           scale_type=draw(st.sampled_from(list(SCALE_CODES.get(kind, {"ue8m0": 1})))))


def wgmma_sp_forms():
    """(shape, dtype_a, dtype_b, dtype_d, sparsity_selector) of legal wgmma.mma_async.sp forms (PTX 9.7.15.6.3)."""
    pairs = [("tf32", "tf32", "f32"), ("f16", "f16", "f32"), ("f16", "f16", "f16"), ("bf16", "bf16", "f32")]
    pairs += [(a, b, d) for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2") for d in ("f32", "f16")]
    pairs += [(a, b, "s32") for a in ("s8", "u8") for b in ("s8", "u8")]
    return st.sampled_from(pairs).flatmap(lambda p: st.tuples(
        st.sampled_from([n for n in range(8, 257, 8) if p[2] != "s32" or n in (8, 16, 24) or n % 16 == 0]),
        st.sampled_from(SELECTORS[p[0]])).map(lambda ns: (f"m64n{ns[0]}k{SP_K_OF[p[0]]}",) + p + (ns[1],)))


@st.composite
def sparse_meta(draw, dtype_a: str, selector: int = 0, valid: bool = True):
    """(128,) uint32 metadata registers: with `valid`, every chunk a nibble PTX defines (ascending indices) and
    the ignored threads random; otherwise any 32-bit words."""
    if not valid:
        return np.array(draw(st.lists(st.integers(0, (1 << 32) - 1), min_size=128, max_size=128)), np.uint32)
    chunks = SP_K_OF[dtype_a] // CHUNK[dtype_a]
    table = VALID_NIBBLES[CHUNK[dtype_a]]
    nib = np.array(draw(st.lists(st.sampled_from(table), min_size=64 * chunks, max_size=64 * chunks)),
                   np.uint8).reshape(64, chunks)
    return meta_registers(nib, dtype_a, selector, fill=draw(st.integers(0, (1 << 32) - 1)))


# ---- tcgen05 beyond the dense MMA: .sp, .ws, sm_103a -------------------------------------------------------

def _dense_to(d: InstrDescriptor, draw, *, sparse=False, ws=False, cta_group=1, max_shift=0):
    """d with an M and N legal for the form (PTX Table 39), or None when the form has none."""
    eight_bit_b = d.transpose_b and d.dtype_b in ("e4m3", "e5m2", "s8", "u8")
    ms = [m for m in (32, 64, 128, 256) if not shape_findings(d.kind, m, 256 if not sparse or not ws else 128,
                                                              cta_group, sparse=sparse, ws=ws,
                                                              transposed_8bit_b=eight_bit_b)
          or any(not shape_findings(d.kind, m, n, cta_group, sparse=sparse, ws=ws, transposed_8bit_b=eight_bit_b)
                 for n in range(8, 257, 8))]
    m = draw(st.sampled_from(ms))
    ns = [n for n in range(8, 257, 8) if not shape_findings(d.kind, m, n, cta_group, sparse=sparse, ws=ws,
                                                            transposed_8bit_b=eight_bit_b)]
    return InstrDescriptor(**{**d.__dict__, "m": m, "n": draw(st.sampled_from(ns)), "sparse": sparse,
                              "max_shift": max_shift})


@st.composite
def tcgen05_sparse_forms(draw, kinds=KINDS, cta_group: int = 1):
    """InstrDescriptors of legal tcgen05.mma.sp forms: the sparse bit, a selector the kind reads (tf32 / f16:
    0-3, else 0), M and N of PTX Table 39's sparse rows for `cta_group`."""
    d = draw(tcgen05_forms(kinds=kinds, cta_group=cta_group))
    d = _dense_to(d, draw, sparse=True, cta_group=cta_group)
    return InstrDescriptor(**{**d.__dict__, "sparsity_selector": draw(st.sampled_from(TCGEN05_SELECTORS[d.kind]))})


@st.composite
def tcgen05_ws_forms(draw, kinds=WS_KINDS, sparse=None):
    """(InstrDescriptor, zero-column mask value or None) of legal tcgen05.mma.ws forms: tf32 / f16 / f8f6f4 / i8,
    M 32 / 64 / 128, N 64 / 128 / 256 (sparse: 64 / 128), a max shift, and a mask whose column shift keeps
    within it (PTX Tables 39, 42, 45). sparse=None draws either."""
    kinds = [k for k in kinds if k in WS_KINDS]
    d = draw(tcgen05_forms(kinds=kinds, cta_group=1))
    sp = draw(st.booleans()) if sparse is None else sparse
    d = _dense_to(d, draw, sparse=sp, ws=True, max_shift=draw(st.integers(0, 3)))
    if sp:
        d = InstrDescriptor(**{**d.__dict__, "sparsity_selector": draw(st.sampled_from(TCGEN05_SELECTORS[d.kind]))})
    if not draw(st.booleans()):
        return d, None
    limit = min(d.max_shift_columns, 16 if d.m == 32 else 32)
    z = ZeroColumnMask(tuple(draw(st.integers(0, 255)) for _ in range(4)), tuple(draw(st.integers(0, 1)) for _ in range(4)),
                       draw(st.booleans()), draw(st.integers(0, 255)), draw(st.integers(0, 255)),
                       draw(st.integers(0, limit)))
    return d, z.encode()


@st.composite
def sparse_nibbles(draw, kind: str, rows: int, valid: bool = True):
    """(rows, chunks) uint8 metadata nibbles for a tcgen05.mma.sp of `kind`: the meaningful ones of PTX
    9.7.16.10.8 (valid) or any 4-bit values."""
    chunks = 2 * K_OF_KIND[kind] // TCGEN05_CHUNK[kind]
    table = TCGEN05_VALID_NIBBLES[TCGEN05_CHUNK[kind]] if valid else tuple(range(16))
    return np.array(draw(st.lists(st.sampled_from(table), min_size=rows * chunks, max_size=rows * chunks)),
                    np.uint8).reshape(rows, chunks)


@st.composite
def sm103_forms(draw, cta_group: int = 1):
    """K = 96 InstrDescriptors (sm_103a, kind::mxf4 / mxf4nvf4): M and N as PTX Table 39 and CuTe's SM103 atoms
    allow, scale ids a 3X (.block32) / 6X (.block16) run may start at."""
    kind = draw(st.sampled_from(["mxf4", "mxf4nvf4"]))
    scale_type = draw(st.sampled_from(list(SCALE_CODES[kind])))
    m = draw(st.sampled_from([128] if cta_group == 1 else [128, 256]))
    ids = (0, 2) if scale_type == "ue4m3" else (0, 1, 2, 3)
    return InstrDescriptor(kind, "e2m1", "e2m1", m=m, n=16 * draw(st.integers(1, 16)), scale_type=scale_type,
                           k96=True, a_scale_id=draw(st.sampled_from(ids)), b_scale_id=draw(st.sampled_from(ids)),
                           negate_a=draw(st.booleans()))


@st.composite
def lbo_mode_descriptors(draw):
    """UmmaDescriptors with LBO mode 1 that validate(arch='sm103') accepts: 128B swizzle, base offset 0, the second
    chunk at the start of a 128-byte line (what CuTe's sm103 mainloop writes)."""
    return UmmaDescriptor(16 * draw(st.integers(0x40, 0x2000)), 128 * draw(st.integers(8, 0x600)),
                          16 * draw(st.integers(1, 256)), 0, SwizzleMode.B128, version=1, lbo_mode=1)
