"""wgmma.mma_async.sp (sm_90a): D = A * B (+ C) with A structured-sparse (PTX 9.7.15.6).

A is logically 64 x K with 2 non-zeros in every 4-wide chunk of a row (tf32: 1 in every 2-wide chunk);
only the K/2 non-zeros are stored, and a 4-bit metadata nibble per chunk says where they sit.

  form                      stored A    B read     nibble per chunk                 sp-sel
  m64nNk16 tf32 -> f32      64 x 8      N x 16     0b0100 (first) or 0b1110 (second)  0, 1
  m64nNk32 f16/bf16         64 x 16     N x 32     idx0 | idx1 << 2, idx0 < idx1      0, 1
  m64nNk64 e4m3/e5m2/s8/u8  64 x 32     N x 64     idx0 | idx1 << 2, idx0 < idx1      0

Stored element 2c + j of a row (tf32: c) belongs to chunk c and multiplies the B element of logical column
4c + idx_j. The metadata register of thread t = 32w + l of the warpgroup (w = warp, g = l // 4), per
CuTe's ELayout_64x{16,32,64} (cute/atom/mma_traits_sm90_gmma_sparse.hpp) and PTX Figures 176-181:
  tf32, f16, bf16: thread 32w + 4g + 2*sel + h holds rows 16w + g (nibbles 0-3) and 16w + g + 8 (nibbles
                   4-7), chunks 4h .. 4h + 3 (K columns 16h.. for 16-bit, 8h.. for tf32); the other two
                   threads of each quad are ignored;
  8-bit:           thread 32w + 4g + 2h + r holds row 16w + g + 8r, chunks 8h .. 8h + 7 (nibble j = chunk 8h + j).
Nibble j is bits [4j, 4j + 4) of the register. A from registers: the dense fragment (fragments.py) of the
stored 64 x K/2 matrix (CuTe's ALayout_64x32 "sparse 16-bit" and ALayout_64x64). A in shared memory: the
stored matrix read through its descriptor like a dense A of K/2. B: N x K through its descriptor; with 32B
swizzle K-major B's 64 bytes of K span two atom columns, LBO apart (addressing.py).

Arithmetic ("selected", the default; traces/wgmma_sp_numerics_sm90.npz, H100: 1,536 of 1,536 cases): one
fused dot product of the Hopper unit (hopper.fdp_unit) over the K/2 stored products and C, nothing else: an
exact zero sum is +0 even when every stored product and C is -0 (57 captured cases, A = C = -0 and B > 0,
read +0 on every output), the unit's own rule, dense included (traces/wgmma_zero_sign_sm90.npz); scale-d = 0
adds the unit's +0 accumulator (same trace: floor_sparse_noc). Pruned positions multiply nothing: an inf or
NaN of B at a pruned position leaves the result alone. Whether they also count as zero terms for the -133
zero floor cannot be seen: the accumulator term (C, or the +0 of scale-d = 0) always counts at -133 or
above. Three alternatives are kept for replaying traces against them, and the traces reject each: "zeros"
(a K-wide fused sum with +0 A at pruned positions, so 0 * inf = NaN there), "halves" (two fused sums over
logical K halves, the accumulator rounded between them) and "signed" (IEEE 754's zero sign: -0 when every
stored product and C is -0, fdp.FdpUnit.signed_zero).

PTX leaves invalid metadata undefined (repeated indices 0b0000, 0b0101, 0b1010, 0b1111; for tf32 anything
but 0b0100 / 0b1110). tcemu refuses it unless invalid_meta="gather": each stored element then multiplies
the B element its own index names (tf32: the B bits made of the two 16-bit halves of the chunk its two
indices name, low half idx0). PTX calls that undefined, but the H100 follows it in every captured case (704
metadata and 763 numerics cases with raw, unordered, repeated and zero registers, traces/wgmma_sp_*_sm90.npz).
ptxas rejects selectors PTX calls undefined ("expected to be 0 or 1" / "expected to be 0"), so they
cannot reach the hardware; tcemu refuses them too.
"""
import numpy as np

from ..core.errors import LayoutError
from ..arith.fdp import OUT_NUMPY, decode_operand, fused_dot, fused_dot_batch, integer_dot, integer_dot_batch
from ..arith.formats import decode_int
from .forms import SELECTORS, SP_K_OF, check_form, sparse_dtype, sparse_selector
from .wgmma import fdp_unit, read_operands
from ..core.validate import as_array, as_bool, as_choice, as_int, as_int_array, as_uint_bits, show

CHUNK = {"tf32": 2, "f16": 4, "bf16": 4, "e4m3": 4, "e5m2": 4, "s8": 4, "u8": 4}
VALID_NIBBLES = {2: (0x4, 0xE), 4: (0x4, 0x8, 0xC, 0x9, 0xD, 0xE)}  # by chunk width (PTX 9.7.15.6.1)
RULES = ("selected", "zeros", "halves", "signed")
_BITS = {"tf32": 32, "f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8}  # raw bits of one element

__all__ = ["SP_K_OF", "CHUNK", "SELECTORS", "VALID_NIBBLES", "meta_slots", "meta_registers", "meta_nibbles",
           "invalid_nibbles", "sparsify", "densify", "gather_b", "sparse_dot", "wgmma_sp"]


def _raw(bits, dtype, field, shape=None, ndim=None) -> np.ndarray:
    """`bits`, checked: an integer array of `dtype` elements' raw bit patterns in [0, 2^bits) (s8: its values
    in [-128, 128) too); floats are values, not bits, and are refused. Returned as given (its own dtype)."""
    arr = as_array(bits, field, LayoutError)
    width = _BITS[dtype]
    as_int_array(arr, field, -(1 << (width - 1)) if dtype == "s8" else 0, (1 << width) - 1, LayoutError,
                 shape=shape, ndim=ndim, what=f" ({width}-bit {dtype} patterns)")
    return arr


def chunks_per_row(dtype_a: str) -> int:
    return SP_K_OF[sparse_dtype(dtype_a)] // CHUNK[dtype_a]


def meta_slots(dtype_a: str, selector: int = 0):
    """(thread, nibble) int arrays of shape (64, chunks): which thread's register, and which nibble of it,
    holds the metadata of chunk c of row m (layout in the module docstring)."""
    sel = sparse_selector(dtype_a, selector)
    m = np.arange(64)[:, None]
    c = np.arange(chunks_per_row(dtype_a))[None, :]
    w, g, r = m // 16, m % 8, (m % 16) // 8
    if CHUNK[dtype_a] == 4 and SP_K_OF[dtype_a] == 64:  # 8-bit: T(4g + 2h + r), 8 chunks each
        thread = 32 * w + 4 * g + 2 * (c // 8) + r
        nibble = c % 8 + 0 * m
    else:                                             # tf32, 16-bit: T(4g + 2 sel + h), rows g and g + 8
        thread = 32 * w + 4 * g + 2 * sel + c // 4
        nibble = 4 * r + c % 4
    return thread, nibble


def _meta_array(meta) -> np.ndarray:
    arr = as_array(meta, "sparse_meta", LayoutError)
    if arr.shape != (128,) or arr.dtype.kind not in "iu":
        raise LayoutError("sparse_meta", f"must be 128 integer registers (one per warpgroup thread), got "
                                         f"shape {arr.shape} of {arr.dtype}")
    # registers are 32-bit: values must lie in [0, 2^32)
    return as_uint_bits(arr, 32, "sparse_meta", LayoutError).astype(np.uint32)


def meta_nibbles(meta, dtype_a: str, selector: int = 0) -> np.ndarray:
    """(64, chunks) uint8: the metadata nibble the instruction uses for each chunk of A."""
    regs = _meta_array(meta)
    thread, nibble = meta_slots(dtype_a, selector)
    return ((regs[thread] >> (4 * nibble).astype(np.uint32)) & 0xF).astype(np.uint8)


def meta_registers(nibbles, dtype_a: str, selector: int = 0, fill: int = 0) -> np.ndarray:
    """(128,) uint32 registers carrying (64, chunks) nibbles; threads that hold no metadata get `fill`."""
    thread, nibble = meta_slots(dtype_a, selector)
    nib = as_uint_bits(nibbles, 4, "nibbles", LayoutError, shape=thread.shape)  # 4-bit values
    regs = np.full(128, as_int(fill, "fill", 0, (1 << 32) - 1, LayoutError), np.uint64)
    regs[np.unique(thread)] = 0
    np.bitwise_or.at(regs, thread.ravel(), nib.astype(np.uint64).ravel() << (4 * nibble.ravel()).astype(np.uint64))
    return regs.astype(np.uint32)


def invalid_nibbles(nibbles, dtype_a: str) -> np.ndarray:
    """Boolean mask of the nibbles PTX leaves undefined (repeated indices; tf32: not 0b0100 / 0b1110).
    Unordered distinct indices (idx0 > idx1) are not listed as invalid by PTX and are not flagged."""
    nib = as_uint_bits(nibbles, 4, "nibbles", LayoutError)
    if CHUNK[sparse_dtype(dtype_a)] == 2:
        return ~np.isin(nib, VALID_NIBBLES[2])
    return (nib & 3) == (nib >> 2)


def _check_stored(a_bits, dtype_a):
    want = (64, SP_K_OF[sparse_dtype(dtype_a)] // 2)
    a = as_array(a_bits, "a", LayoutError)
    if a.shape != want:
        raise LayoutError("a", f"stored A must be {want} ({dtype_a}: K/2 of each row), got {a.shape}")
    return _raw(a, dtype_a, "a")


def sparsify(a_bits, dtype_a: str):
    """(stored (64, K/2), nibbles (64, chunks)) of a logical (64, K) raw-bit matrix A whose chunks hold at most
    2 (tf32: 1) non-zero bit patterns; zeros fill the remaining slots in ascending index order."""
    sparse_dtype(dtype_a)
    a = as_array(a_bits, "a", LayoutError)
    K, w = SP_K_OF[dtype_a], CHUNK[dtype_a]
    if a.shape != (64, K):
        raise LayoutError("a", f"logical A must be (64, {K}), got {a.shape}")
    a = _raw(a, dtype_a, "a")
    keep = w // 2
    chunks = a.reshape(64, K // w, w)
    nonzero = chunks != 0
    if (nonzero.sum(axis=2) > keep).any():
        m, c = np.argwhere(nonzero.sum(axis=2) > keep)[0]
        raise LayoutError("a", f"row {m} chunk {c} holds {int(nonzero[m, c].sum())} non-zeros; {dtype_a} keeps {keep} "
                               f"of every {w}")
    # the kept indices: the non-zeros first, then the lowest zero slots, sorted ascending
    order = np.argsort(~nonzero, axis=2, kind="stable")[:, :, :keep]
    idx = np.sort(order, axis=2)
    stored = np.take_along_axis(chunks, idx, axis=2).reshape(64, K // 2)
    if w == 2:
        nib = np.where(idx[:, :, 0] == 0, 0x4, 0xE).astype(np.uint8)
    else:
        nib = (idx[:, :, 0] | (idx[:, :, 1] << 2)).astype(np.uint8)
    return stored.astype(a.dtype), nib


def densify(stored, nibbles, dtype_a: str) -> np.ndarray:
    """The logical (64, K) matrix (raw bits, zeros elsewhere) of stored A and valid metadata."""
    a = _check_stored(stored, sparse_dtype(dtype_a))
    nib = as_uint_bits(nibbles, 4, "nibbles", LayoutError, shape=(64, chunks_per_row(dtype_a)))
    if invalid_nibbles(nib, dtype_a).any() or (CHUNK[dtype_a] == 4 and ((nib & 3) > (nib >> 2)).any()):
        raise LayoutError("nibbles", "densify needs valid metadata with ascending indices")
    out = np.zeros((64, SP_K_OF[dtype_a]), a.dtype)
    out[np.arange(64)[:, None], _columns(nib, dtype_a)] = a
    return out


def _columns(nib, dtype_a):
    """(64, K/2) logical column named by each stored element's index (tf32: the element of idx0's half)."""
    nib = np.asarray(nib).astype(np.int64)
    if CHUNK[dtype_a] == 2:
        return 2 * np.arange(nib.shape[1])[None, :] + ((nib >> 1) & 1)
    c = np.arange(nib.shape[1])[None, :, None]
    idx = np.stack([nib & 3, nib >> 2], axis=2)
    return (4 * c + idx).reshape(nib.shape[0], -1)


def gather_b(b_bits, nib_row, dtype_a: str) -> np.ndarray:
    """(N, K/2) raw bits of the B elements that the stored elements of one A row multiply, for that row's
    (chunks,) nibbles. 2:4 kinds: B[:, 4c + idx_j]. tf32: the 32-bit value made of the chunk's 16-bit
    halves idx0 (low) and idx1 (high), halves numbered low-first across B[:, 2c] and B[:, 2c + 1] (equal to
    B[:, 2c] for 0b0100 and B[:, 2c + 1] for 0b1110)."""
    b = _raw(b_bits, sparse_dtype(dtype_a), "b", ndim=2)
    nib = as_uint_bits(nib_row, 4, "nib_row", LayoutError, ndim=1)
    if nib.size * CHUNK[dtype_a] != b.shape[1]:
        raise LayoutError("nib_row", f"{nib.size} nibbles do not cover B's {b.shape[1]} K columns in chunks of "
                                     f"{CHUNK[dtype_a]}")
    return _gather(b, nib[None, :], dtype_a)[0]


def _gather(b, patterns, dtype_a):
    """(P, N, K/2) raw bits gather_b gives for each row of (P, chunks) nibble patterns; b checked raw bits."""
    patterns = patterns.astype(np.int64)
    if CHUNK[dtype_a] == 4:
        return b[:, _columns(patterns, dtype_a)].transpose(1, 0, 2)
    b32 = b.astype(np.uint32)
    halves = np.stack([b32[:, 0::2] & 0xFFFF, b32[:, 0::2] >> 16, b32[:, 1::2] & 0xFFFF, b32[:, 1::2] >> 16], axis=2)
    c = np.arange(patterns.shape[1])[None, :]
    lo, hi = halves[:, c, patterns & 3], halves[:, c, patterns >> 2]
    return (lo | (hi << 16)).astype(np.uint32).transpose(1, 0, 2)


def sparse_dot(a_bits, b_bits, nibbles, c, *, dtype_a, dtype_b, dtype_d, scale_a=1, scale_b=1, satfinite=False,
               rule="selected") -> np.ndarray:
    """D (64, N) raw bits (int32 for s32) of stored A (64, K/2) raw bits, B (N, K) raw bits and (64, chunks)
    nibbles, C raw bits or None. `rule`: "selected" (the model), or the alternatives "signed", "zeros" and
    "halves" (the last two for valid metadata only), kept to test the model against traces."""
    a = _check_stored(a_bits, dtype_a)
    rule = as_choice(rule, "rule", RULES, LayoutError)
    # the form's types, scales and .satfinite (hopper's rules, with the sparse K; N is checked below)
    check_form(f"m64n8k{SP_K_OF[dtype_a]}", dtype_a, dtype_b, dtype_d, False, False, scale_a, scale_b, satfinite,
               k_of=SP_K_OF, what="sparse wgmma")
    b = as_array(b_bits, "b", LayoutError)
    if b.ndim != 2 or b.shape[1] != SP_K_OF[dtype_a] or not 1 <= b.shape[0] <= 256:
        raise LayoutError("b", f"B must be (N, {SP_K_OF[dtype_a]}) with N up to 256, got {b.shape}")
    b = _raw(b, dtype_b if dtype_b in _BITS else dtype_a, "b")
    nib = as_uint_bits(nibbles, 4, "nibbles", LayoutError, shape=(64, chunks_per_row(dtype_a)))
    if c is not None:  # raw bits of C (int32 s32 values are their own bits)
        c = as_array(c, "c", LayoutError)
        c = c.view(np.uint32) if dtype_d == "s32" and c.dtype == np.int32 else c
        width = 16 if dtype_d == "f16" else 32
        c = as_uint_bits(c, width, "c", LayoutError, shape=(64, b.shape[0])).astype(
            np.uint16 if width == 16 else np.uint32)
    args = (dtype_a, dtype_b, dtype_d, scale_a, scale_b, satfinite)
    unit = fdp_unit(dtype_a, dtype_d) if dtype_d != "s32" else None
    if rule in ("selected", "signed"):
        return _selected(a, b, nib, c, *args, unit=unit._replace(signed_zero=True) if rule == "signed" and unit
                         else unit)
    if invalid_nibbles(nib, dtype_a).any():
        raise LayoutError("rule", f"{show(rule)} is defined for valid metadata only")
    if rule == "zeros":  # one K-wide fused sum, +0 at the pruned positions
        logical = np.zeros((64, b.shape[1]), a.dtype)
        logical[np.arange(64)[:, None], _columns(nib, dtype_a)] = a
        if dtype_d == "s32":
            return integer_dot(decode_int(logical, dtype_a), decode_int(b, dtype_b),
                               None if c is None else np.asarray(c).view(np.int32), satfinite=satfinite)
        return fused_dot(decode_operand(logical, dtype_a, negate=scale_a == -1),
                         decode_operand(b, dtype_b, negate=scale_b == -1),
                         None if c is None else decode_operand(c, dtype_d), unit)
    hs, hk, hc = a.shape[1] // 2, b.shape[1] // 2, nib.shape[1] // 2  # "halves": two steps over logical K halves
    acc = c
    for h in range(2):
        acc = _selected(a[:, h * hs:(h + 1) * hs], b[:, h * hk:(h + 1) * hk], nib[:, h * hc:(h + 1) * hc], acc, *args)
        acc = acc.view(np.uint32) if dtype_d == "s32" else acc
    return acc.view(np.int32) if dtype_d == "s32" else acc


def _selected(a, b, nib, c, dtype_a, dtype_b, dtype_d, scale_a, scale_b, satfinite, unit=None):
    """One fused sum per output of the stored products (each with the B element its index names) and C, in
    `unit` (default: the Hopper unit of the types; None for integer kinds)."""
    if unit is None and dtype_d != "s32":
        unit = fdp_unit(dtype_a, dtype_d)
    patterns, inverse = np.unique(nib, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    integer = dtype_d == "s32"
    A = decode_int(a, dtype_a) if integer else decode_operand(a, dtype_a, negate=scale_a == -1)
    C = None if c is None else (np.asarray(c).view(np.int32) if integer else decode_operand(c, dtype_d))
    bg = _gather(b, patterns, dtype_a)  # rows with the same metadata read the same B columns
    P, N, H = bg.shape
    # one product per row: its stored elements (1, K/2) against the B columns its pattern names (the raw bits
    # gathered, then decoded: decoded elements are 40 bytes each, too wide to gather)
    cr = None if C is None else C[:, None]
    if integer:
        return integer_dot_batch(A[:, None], decode_int(bg, dtype_b), cr, b_of=inverse, satfinite=satfinite)[:, 0]
    BG = decode_operand(bg.reshape(P * N, H), dtype_b, negate=scale_b == -1).reshape(P, N, H, -1)
    return fused_dot_batch(A[:, None], BG, cr, unit, b_of=inverse)[:, 0]


def wgmma_sp(smem, desc_a, desc_b, *, shape: str, dtype_a: str, dtype_b: str, dtype_d: str, sparse_meta,
             sparsity_selector: int = 0, trans_a: bool = False, trans_b: bool = False, c=None, scale_d: bool = True,
             scale_a: int = 1, scale_b: int = 1, satfinite: bool = False, a_regs=None,
             invalid_meta: str = "raise", rule: str = "selected") -> np.ndarray:
    """One wgmma.mma_async.sp: the (64, N) result as float32, float16 or int32.

    As hopper.wgmma, with A's K/2 stored elements per row read through `desc_a` (or from `a_regs`, 128 x 4
    registers in the dense fragment layout of the stored matrix), `sparse_meta` the 128 metadata registers of
    the warpgroup (meta_registers builds them) and `sparsity_selector` the sp-sel immediate.
    `invalid_meta`: "raise" (PTX: undefined) or "gather" (the hypothesis in the module docstring).
    `rule`: the arithmetic, "selected" (the model) or an alternative kept for testing it against traces.
    """
    N, K = check_form(shape, dtype_a, dtype_b, dtype_d, trans_a, trans_b, scale_a, scale_b, satfinite,
                      k_of=SP_K_OF, what="sparse wgmma")
    sel = sparse_selector(dtype_a, sparsity_selector)
    as_choice(invalid_meta, "invalid_meta", ("raise", "gather"), LayoutError)
    as_choice(rule, "rule", RULES, LayoutError)
    scale_d = as_bool(scale_d, "scale_d", LayoutError)
    nib = meta_nibbles(sparse_meta, dtype_a, sel)
    bad = invalid_nibbles(nib, dtype_a)
    if bad.any() and invalid_meta == "raise":
        m, ch = (int(x) for x in np.argwhere(bad)[0])
        thread, nibble = meta_slots(dtype_a, sel)
        raise LayoutError("sparse_meta", f"row {m} chunk {ch}: nibble {int(nib[m, ch]):#06b} (thread "
                                         f"{int(thread[m, ch])}, bits {4 * int(nibble[m, ch])}-"
                                         f"{4 * int(nibble[m, ch]) + 3}) is undefined for {dtype_a} (PTX 9.7.15.6.1; "
                                         f"{int(bad.sum())} such chunks); invalid_meta='gather' applies tcemu's "
                                         "hypothesis")
    a_bits, b_bits, c = read_operands(smem, desc_a, desc_b, a_regs, c, scale_d, N, K // 2, K, dtype_a, dtype_b,
                                      dtype_d, trans_a, trans_b)
    d = sparse_dot(a_bits, b_bits, nib, c, dtype_a=dtype_a, dtype_b=dtype_b, dtype_d=dtype_d, scale_a=scale_a,
                   scale_b=scale_b, satfinite=satfinite, rule=rule)
    return d.view(OUT_NUMPY[dtype_d])
