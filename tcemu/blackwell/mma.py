"""tcgen05.mma (sm_100a): D = A * B (+ D), B and (usually) A read from shared memory through UMMA
descriptors, A optionally from tensor memory, shapes and types from the instruction descriptor (instr.py).

What each rule rests on (none of it is silicon-verified; README.md, "Blackwell"):
  shapes, kinds, scale_vec sizes, operand forms: PTX 9.7.16 (Tables 39, 49-50, 54-55);
  operand layouts in shared memory: CuTe's UMMA layouts (tests/test_cute_umma.py); fp4/fp6 padding in
  shared memory: PTX .b4x16_p64 / .b6x16_p32; tensor-memory maps: CuTe (tmem.py);
  arithmetic: the published measured models (MMA-Sim, arXiv 2511.10909; Khattak & Mikaitis, arXiv
  2512.07004): one fused sum of all K products and D, F = 25 (35 for kind::mxf4*), f32 toward zero,
  f16 to nearest even; mxf8f6f4 adds the ue8m0 scale exponents to each product; mxf4* sums groups of 16
  exactly and aligns each at its scales' exponents (fdp.grouped_dot). Zero terms count at 2^-133 (2^-139
  for mxf4*), as the published tables say and our H200 captures showed for Hopper (MMA-Sim's code uses
  2^-126, which the Hopper silicon rejects).

Forms beyond the dense MMA (README.md, "Blackwell"; nothing of them has met silicon):
  tcgen05.mma.sp (sparse=1 in the instruction descriptor, sparse_meta=): A holds K/2 of K per row, the metadata
    (blackwell_sparse.py; in tensor memory: tmem.py) picks B's columns; the dense unit on the stored products
    (an exact zero sum +0, as every unit: fdp_unit). Shapes: PTX Table 39.
  tcgen05.mma.ws (ws=True): cta_group::1, M = 32 / 64 / 128, N = 64 / 128 / 256 (sparse 64 / 128), kinds tf32 /
    f16 / f8f6f4 / i8; D in layouts D / E / G (tmem.py); the same arithmetic; an optional zero-column mask
    descriptor (instr.ZeroColumnMask) zeroes and shifts B's columns within the instruction descriptor's max
    shift; collector buffers b0-b3 (collector.py).
  sm_103a (arch="sm103"): K = 96 for kind::mxf4* (3 or 6 scale factors a row) and LBO mode 1 of the shared
    memory descriptor (addressing.py).
"""
import numpy as np

from ..layout.addressing import operand_addresses
from .sparse import chunks_per_row, gather_b, invalid_nibbles
from .collector import CollectorBuffers, CollectorOp
from ..arith.dtypes import OPERAND_DTYPES, element_type, is_padded, placement_dtype
from ..core.errors import DescriptorError, LayoutError
from ..arith.fdp import (CLS, LSB, OUT_NUMPY, RNE, RZ, FdpUnit, accumulator_bits, decode_operand, fused_dot,
                         grouped_dot, integer_dot)
from ..arith.formats import NAN, decode_int
from .forms import BLOCK_SCALED, GROUPED, K_OF_KIND, a_tmem_bits, block_size, check_form, instr_k
from .instr import InstrDescriptor, ZeroColumnMask, scale_id_rule
from ..layout.smem import SUBBYTE, as_shared_memory
from .tmem import TensorMemory
from ..core.validate import as_array, as_bool, as_int, as_uint_bits, show


def fdp_unit(kind: str, dtype_d: str) -> FdpUnit:
    """Design constants of the Blackwell dot-product unit (MMA-Sim; Khattak & Mikaitis; not silicon-verified).

    An exact zero sum is +0 whatever the signs of the terms (signed_zero=False): the rule the H100 follows for
    dense and sparse wgmma (traces/wgmma_zero_sign_sm90.npz), and what MMA-Sim's tcgen05 model computes for every
    exact zero (its fused sum starts from +0.0); tcemu's tcgen05.mma.sp already gave +0, and dense and sparse
    now share the rule. Not measured on a Blackwell. Without C (enable-input-d false) no C term is added
    (zero_c_when_absent=False), unlike the H100's scale-d = 0: nothing tells how tcgen05 behaves there (MMA-Sim
    always adds C); the two differ only when every product lies below the zero floor."""
    rules = dict(signed_zero=False, zero_c_when_absent=False)
    if kind in GROUPED:
        return FdpUnit(35, "f32", 23, RZ, zero_exp=-139, **rules)
    if dtype_d == "f16":
        return FdpUnit(25, "f16", 10, RNE, **rules)
    return FdpUnit(25, "f32", 23, RZ, **rules)


def _idesc(idesc, kind) -> InstrDescriptor:
    if kind is not None and not isinstance(kind, str):
        raise LayoutError("kind", f"must be a .kind name, got {show(kind)}")
    if isinstance(idesc, InstrDescriptor):
        if kind is not None and kind != idesc.kind:
            raise LayoutError("kind", f"{show(kind)} disagrees with the instruction descriptor's .kind::{idesc.kind}")
        return idesc
    if kind is None:
        raise LayoutError("kind", "a raw instruction descriptor does not say its .kind: pass kind=")
    return InstrDescriptor.decode(idesc, kind)


def _pair(obj, cta_group, field, make=None):
    objs = list(obj) if isinstance(obj, (list, tuple)) else [obj]
    if len(objs) > 2:
        raise LayoutError(field, f"one per CTA of the pair, got {len(objs)}")
    if len(objs) != cta_group:
        raise LayoutError(field, f"cta_group::{cta_group} needs {cta_group} of them (one per CTA of the pair)")
    return [make(o) if make else o for o in objs]


def _as_smem(s):
    return as_shared_memory(s, "sm100")


def _operand_bits(d, which, smem, desc, tmem_obj, a_tmem, rows, K, cta_group, arch="sm100", keep=None):
    """Raw (rows, K) bits of one CTA's part of A or B (keep: B rows read, the others 0)."""
    dtype = d.dtype_a if which == "a" else d.dtype_b
    f8f6f4 = d.kind in ("f8f6f4", "mxf8f6f4")
    if a_tmem is not None:
        bits = a_tmem_bits(d.kind, dtype)
        container = dtype if f8f6f4 and dtype in SUBBYTE else None
        return tmem_obj.read_a(a_tmem, rows, K, bits, cta_group, container=container)
    major = "MN" if (d.transpose_a if which == "a" else d.transpose_b) else "K"
    padded = is_padded(dtype, None, kind=d.kind)  # dtypes' packed / padded rule: the kind decides
    # a swizzled K-major read wider than one swizzled row (sparse B: 64 bytes of K) takes the next atom column
    # LBO bytes on: the wide-row rule the H100 showed for wgmma.sp's B, carried over (addressing.py)
    return smem.read_operand(desc, rows=rows, k=K, dtype=dtype, major=major, padded=padded, keep_rows=keep, arch=arch)


def _places(d, which, desc, tmem_obj, a_tmem, rows, K, cta_group, arch, keep=None):
    """int64 keys of where each element of this operand was read (collector buffers): shared memory
    address * 8 + bit, or (1 << 40) + tensor-memory (lane, column, bit)."""
    if a_tmem is not None:
        bits = a_tmem_bits(d.kind, d.dtype_a)
        lanes, cols, shift = tmem_obj._a_cells(a_tmem, rows, K, bits, cta_group)
        return (1 << 40) + ((lanes.astype(np.int64) << 9 | (cols + (a_tmem & 0xFFFF))) << 5) + shift
    dtype = d.dtype_a if which == "a" else d.dtype_b
    major = "MN" if (d.transpose_a if which == "a" else d.transpose_b) else "K"
    padded = is_padded(dtype, None, kind=d.kind)
    at = placement_dtype(dtype, padded, major=major)
    addrs = operand_addresses(desc, rows=rows, k=K, dtype=at, major=major, arch=arch)
    keys = addrs * 8 + ((np.arange(K) % 2 * 4)[None, :] if at == "e2m1" else 0)  # packed e2m1: two per byte
    return keys if keep is None else keys[np.asarray(keep, bool)]


def _scales(d, scale, rows_per_cta, nsf, sf_id, tmems, field, cta_group):
    """(rows, nsf) raw scale bytes from an array or from tensor memory (cta_group::1)."""
    if isinstance(scale, (int, np.integer)) and not isinstance(scale, bool):
        if cta_group != 1 or tmems is None:
            raise LayoutError(field, "scale factors from tensor memory need tmem= and cta_group::1 (the 2x2 "
                                     "scale layout of cta_group::2 is not modelled: pass arrays)")
        return tmems[0].read_scales(scale, rows_per_cta, nsf, sf_id, field)
    arr = as_array(scale, field, LayoutError)
    if arr.dtype.kind not in "iu" or arr.shape != (rows_per_cta * cta_group, nsf):
        raise LayoutError(field, f"must be a ({rows_per_cta * cta_group}, {nsf}) array of raw scale bytes "
                                 f"(one per {d.kind} block of K), got {arr.dtype} {arr.shape}")
    return as_uint_bits(arr, 8, field, LayoutError)


def _lane_mask(words, cta_group, cta):
    if words is None:
        return None
    words = as_uint_bits(words, 32, "disable_output_lane", LayoutError, ndim=1).astype(np.uint64)
    if words.size != 4 * cta_group:
        raise LayoutError("disable_output_lane", f"cta_group::{cta_group} takes {4 * cta_group} 32-bit words")
    w = words[4 * cta:4 * cta + 4]
    return ((w[:, None] >> np.arange(32, dtype=np.uint64)) & 1).astype(bool).ravel()


def tcgen05_mma(smem, a, desc_b, idesc, *, kind=None, cta_group: int = 1, c=None, enable_input_d: bool = True,
                scale_input_d: int = 0, tmem=None, d_tmem=None, a_tmem=None, scale_a=None, scale_b=None,
                block_size_k=None, disable_output_lane=None, sparse_meta=None, invalid_meta=None, ws: bool = False,
                zero_column_mask=None, collector=None, collector_op=None, arch: str = "sm100") -> np.ndarray:
    """One tcgen05.mma: the (M, N) result D as float32, float16 or int32.

    smem: the CTA's SharedMemory (sm100) or a uint8 array of it; for cta_group=2 a pair, one per CTA:
      A's rows [0, M/2) and B's columns [0, N/2) come from the first, the rest from the second, through the
      same descriptors (CuTe's 2-SM atoms).
    a: A's matrix descriptor (UmmaDescriptor, int or hex); None with a_tmem= (A in tensor memory).
    idesc: an InstrDescriptor, or its 32-bit value with kind=.
    c: the (M, N) accumulator to add when enable_input_d (float32/float16/int32, D's type); or d_tmem= with
      tmem= to read D from tensor memory and write the result back (disable_output_lane keeps lanes).
    scale_input_d: D = A * B + D * 2^-scale_input_d (tf32/f16 kinds), applied exactly.
    scale_a, scale_b: block-scaled kinds: raw scale bytes, (M, K / block) and (N, K / block), or
      tensor-memory addresses (cta_group 1); the instruction descriptor's scale-factor ids pick the bytes.
    block_size_k: 16 or 32 (.block16 / .block32) where the kind leaves a choice.
    sparse_meta: tcgen05.mma.sp (the descriptor's sparse bit): the metadata, a tensor-memory address (tmem=;
      the descriptor's sparsity selector picks the sub-column) or an (M, chunks) array of nibbles (every row
      of the instruction, both CTAs of a pair). A then holds K/2 elements per row.
    invalid_meta: None refuses nibbles PTX leaves undefined; "gather" reads them as the H100's wgmma.sp does.
    ws: tcgen05.mma.ws. zero_column_mask: its 64-bit zero-column mask descriptor (int or ZeroColumnMask).
    collector, collector_op: a CollectorBuffers and its op ("a::fill", .ws "b0::use", ...): tcemu checks that a
      use reads what the fill read (collector.py); the result always comes from memory.
    arch: "sm103" allows K = 96 (kind::mxf4*) and LBO mode 1 descriptors.
    """
    d = _idesc(idesc, kind)
    cta_group = as_int(cta_group, "cta_group", 1, 2, LayoutError)
    enable_input_d = as_bool(enable_input_d, "enable_input_d", LayoutError)
    scale_input_d = as_int(scale_input_d, "scale_input_d", 0, 15, LayoutError)
    if disable_output_lane is not None:
        _lane_mask(disable_output_lane, cta_group, 0)  # its form, before any work
        if d_tmem is None:
            raise LayoutError("disable_output_lane", "masks lanes of D in tensor memory: pass d_tmem= and tmem=")
    if (a is None) == (a_tmem is None):
        raise LayoutError("a", "A comes from a shared-memory descriptor or from a_tmem=, exactly one of them")
    ws = as_bool(ws, "ws", LayoutError)
    check_form(d, cta_group, a_tmem is not None, a, desc_b, scale_input_d, ws=ws, arch=arch)
    if d.sparse != (sparse_meta is not None):
        raise LayoutError("sparse_meta", "the instruction descriptor is sparse (bit 2): pass the metadata, sparse_meta="
                          if d.sparse else "sparse_meta= goes with a sparse instruction descriptor (bit 2 set)")
    if not (invalid_meta is None or (isinstance(invalid_meta, str) and invalid_meta == "gather")):
        raise LayoutError("invalid_meta", f"{show(invalid_meta)}: None (refuse undefined metadata) or 'gather'")
    if ws and disable_output_lane is not None:
        raise LayoutError("disable_output_lane", "tcgen05.mma.ws takes no lane mask (PTX 9.7.16.10.9.3)")
    zcm = decode_zero_column_mask(zero_column_mask, d, ws)
    op = CollectorOp.parse(collector_op, ws)
    if collector is not None and not isinstance(collector, CollectorBuffers):
        raise LayoutError("collector", f"must be a CollectorBuffers, got {type(collector).__name__}")
    if collector is None and op.op in ("use", "lastuse"):
        raise LayoutError("collector", f".collector::{op.buffer}::{op.op} reads a buffer an earlier fill left: pass the "
                                       "CollectorBuffers that saw the fill (collector=)")
    smems = _pair(smem, cta_group, "smem", _as_smem)
    tmems = _pair(tmem, cta_group, "tmem") if tmem is not None else None
    meta_in_tmem = isinstance(sparse_meta, (int, np.integer)) and not isinstance(sparse_meta, bool)
    if (a_tmem is not None or d_tmem is not None or meta_in_tmem) and tmems is None:
        raise LayoutError("tmem", "a_tmem=, d_tmem= and a metadata address (sparse_meta=) point into tensor memory: pass tmem=")
    for t in tmems or ():
        if not isinstance(t, TensorMemory):
            raise LayoutError("tmem", f"must be a TensorMemory, got {type(t).__name__}")
    M, N, K = d.m, d.n, instr_k(d)
    KA = K // 2 if d.sparse else K
    mc, nc = M // cta_group, N // cta_group
    scaled = (_scaled_inputs(d, scale_a, scale_b, mc, nc, tmems, cta_group, block_size_k)
              if d.kind in BLOCK_SCALED else (None, None, 0))
    if d.kind not in BLOCK_SCALED and (scale_a is not None or scale_b is not None or block_size_k is not None):
        raise LayoutError("scale_a" if scale_a is not None else "scale_b" if scale_b is not None else "block_size_k",
                          f".kind::{d.kind} is not block-scaled")
    if d.kind in BLOCK_SCALED and disable_output_lane is not None:
        raise LayoutError("disable_output_lane", "the block-scaled forms take no lane mask (PTX 9.7.16.10.9)")
    a_bits = np.concatenate([_operand_bits(d, "a", s, a, t, a_tmem, mc, KA, cta_group, arch)
                             for s, t in zip(smems, tmems or [None] * cta_group)])
    shift, keep_b = 0, None
    if zcm is not None:  # ws: cta_group::1, this CTA reads all N columns
        shift, keep_b = zcm.shift, b_rows_kept(d, zcm)
        b_bits = _operand_bits(d, "b", smems[0], desc_b, None, None, keep_b.size, K, 1, arch, keep_b)[shift:shift + N]
    else:
        b_bits = np.concatenate([_operand_bits(d, "b", s, desc_b, None, None, nc, K, cta_group, arch) for s in smems])
    if collector is not None:
        _collect(collector, op, d, ws, a, desc_b, a_bits, b_bits, tmems, a_tmem, mc, KA, K, cta_group, arch, keep_b,
                 shift)
    nibbles = None
    if d.sparse:
        nibbles = _sparse_nibbles(d, sparse_meta, tmems, mc, cta_group, ws, K, invalid_meta)

    c_given = accumulator_bits(c, (M, N), d.dtype_d) if c is not None else None  # checked even if unused
    layout = dict(sparse=d.sparse, ws=ws)
    c_bits = None
    if enable_input_d:
        if d_tmem is not None:
            c_bits = np.concatenate([t.read_d(d_tmem, M, N, d.dtype_d, cta_group, **layout) for t in tmems])
        elif c is not None:
            c_bits = c_given
    if d.sparse:
        out = _sparse_arithmetic(d, a_bits, b_bits, nibbles, c_bits, scale_input_d, *scaled)
    else:
        out = _arithmetic(d, a_bits, b_bits, c_bits, scale_input_d, *scaled)
    if d_tmem is not None:
        for i, t in enumerate(tmems):
            t.write_d(d_tmem, out[i * mc:(i + 1) * mc], M, d.dtype_d, cta_group,
                      keep_lanes=_lane_mask(disable_output_lane, cta_group, i), **layout)
    elif disable_output_lane is not None:
        raise LayoutError("disable_output_lane", "masks lanes of D in tensor memory: pass d_tmem= and tmem=")
    return out.view(OUT_NUMPY[d.dtype_d])


def _row_unit(d):
    """Rows of B one descriptor read must come in: 8 K-major; 16 bytes of MN MN-major."""
    if not d.transpose_b:
        return 8
    return element_type(placement_dtype(d.dtype_b, is_padded(d.dtype_b, None, kind=d.kind)),
                        allowed=OPERAND_DTYPES["sm100"]).per_chunk


def b_rows_kept(d, zcm):
    """(rows,) bool over the rows of B a .ws MMA reads under zero-column mask `zcm` (whole row units from row 0):
    True at rows shift .. shift + N - 1 that the mask keeps (PTX Table 45)."""
    unit = _row_unit(d)
    keep = np.zeros(-(-(d.n + zcm.shift) // unit) * unit, bool)
    keep[zcm.shift:zcm.shift + d.n] = ~zcm.mask(d.m, d.n)
    return keep


def decode_zero_column_mask(value, d, ws):
    """The ZeroColumnMask of `value` (None: none), checked against the form and the descriptor's max shift."""
    if value is None:
        return None
    if not ws:
        raise LayoutError("zero_column_mask", "only tcgen05.mma.ws takes a zero-column mask descriptor "
                                              "(PTX 9.7.16.10.9.3)")
    zcm = ZeroColumnMask.decode(value)
    for f, rule in zcm.validate(d.m, d.n, d.max_shift_columns):
        raise DescriptorError(f, rule)
    return zcm


def _sparse_nibbles(d, meta, tmems, mc, cta_group, ws, K, invalid_meta):
    """(M, chunks) metadata nibbles from tensor memory (each CTA's rows) or an array."""
    chunks = chunks_per_row(d.kind, K)
    if isinstance(meta, (int, np.integer)) and not isinstance(meta, bool):
        nib = np.concatenate([t.read_sparse_meta(meta, d.kind, mc, selector=d.sparsity_selector, ws=ws)
                              for t in tmems])
    else:
        try:
            nib = np.asarray(meta)
        except (TypeError, ValueError) as e:
            raise LayoutError("sparse_meta", f"not an array of nibbles ({e})") from None
        if nib.shape != (d.m, chunks) or nib.dtype.kind not in "iu" or (nib.size and (nib.min() < 0 or nib.max() > 15)):
            raise LayoutError("sparse_meta", f"must be a tensor-memory address or a ({d.m}, {chunks}) array of 4-bit "
                                             f"nibbles (one per chunk of K = {K}), got {nib.dtype} {nib.shape}")
        nib = nib.astype(np.uint8)
    bad = invalid_nibbles(nib, d.kind)
    if invalid_meta is None and bad.any():
        m, c = np.argwhere(bad)[0]
        raise LayoutError("sparse_meta", f"row {m} chunk {c}: nibble {int(nib[m, c]):#06b} is undefined for .kind::{d.kind} "
                                         f"(PTX 9.7.16.10.8; {int(bad.sum())} such chunks); invalid_meta='gather' "
                                         "reads each index as the H100's wgmma.sp does")
    return nib


def _collect(collector, op, d, ws, desc_a, desc_b, a_bits, b_bits, tmems, a_tmem, mc, KA, K, cta_group, arch, keep_b,
             shift):
    """The collector buffer's check and update for the operand it holds (.ws: B, else A)."""
    if ws:
        rows = keep_b.size if keep_b is not None else d.n
        places = _places(d, "b", desc_b, None, None, rows, K, 1, arch, keep_b)
        bits = b_bits[np.asarray(keep_b, bool)[shift:shift + d.n]] if keep_b is not None else b_bits
        collector.apply(op, places, bits, may_hold_more=d.max_shift > 0, operand="B")
        return
    places = np.concatenate([_places(d, "a", desc_a, t, a_tmem, mc, KA, cta_group, arch) + (i << 44)
                             for i, t in enumerate(tmems or [None] * cta_group)])
    collector.apply(op, places, a_bits, operand="A")


def _scaled_inputs(d, scale_a, scale_b, mc, nc, tmems, cta_group, requested):
    """(scale_a bytes, scale_b bytes, block size) of a block-scaled kind."""
    for name, value in (("scale_a", scale_a), ("scale_b", scale_b)):
        if value is None:
            raise LayoutError(name, f".kind::{d.kind} is block-scaled: pass {name} (an array or a tensor-memory "
                                    "address)")
    bs = block_size(d, requested)
    nsf = (96 if d.k96 else K_OF_KIND[d.kind]) // bs  # sparse: the K/2 stored elements, K_OF_KIND of them
    for name in ("a_scale_id", "b_scale_id"):  # ue8m0 .block16 is 4X: the descriptor alone allowed 2
        rule = scale_id_rule(nsf, getattr(d, name), name)
        if rule:
            raise LayoutError(name, f"{rule}; .kind::{d.kind} .block{bs}")
    sa = _scales(d, scale_a, mc, nsf, d.a_scale_id, tmems, "scale_a", cta_group)
    sb = _scales(d, scale_b, nc, nsf, d.b_scale_id, tmems, "scale_b", cta_group)
    return sa, sb, bs


def _arithmetic(d, a_bits, b_bits, c_bits, scale_input_d, sa, sb, bs):
    """Raw D bits from raw operand bits (data flows descriptor -> addresses -> bytes -> values -> D)."""
    if d.kind == "i8":
        c = c_bits.view(np.int32) if c_bits is not None else None
        return integer_dot(decode_int(a_bits, d.dtype_a), decode_int(b_bits, d.dtype_b), c,
                           satfinite=d.saturate).view(np.uint32)
    A = decode_operand(a_bits, d.dtype_a, negate=d.negate_a)
    B = decode_operand(b_bits, d.dtype_b, negate=d.negate_b)
    C = decode_operand(c_bits, d.dtype_d) if c_bits is not None else None
    if C is not None and scale_input_d:
        C[..., LSB:] -= scale_input_d  # D * 2^-s: both exponents (lsb, alignment) move, exactly
    unit = fdp_unit(d.kind, d.dtype_d)
    if d.kind == "mxf8f6f4":  # ue8m0 scales (one per 32 = K): add their exponents to every product's
        A, B = _fold_scale(A, sa), _fold_scale(B, sb)
        return fused_dot(A, B, C, unit)
    if d.kind in GROUPED:
        group = 16
        SA = np.repeat(decode_operand(sa, d.scale_type), bs // group, axis=1)
        SB = np.repeat(decode_operand(sb, d.scale_type), bs // group, axis=1)
        return grouped_dot(A, B, C, SA, SB, unit, group)
    return fused_dot(A, B, C, unit)


def _sparse_arithmetic(d, a_bits, b_bits, nib, c_bits, scale_input_d, sa, sb, bs):
    """D of tcgen05.mma.sp: rows with the same metadata read the same B columns; the dense unit on the K/2 stored
    products of each (blackwell_sparse.py), an exact zero sum +0 as the unit gives it (fdp_unit)."""
    patterns, inverse = np.unique(nib, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).ravel()
    out = None
    for p in range(patterns.shape[0]):
        rows = np.flatnonzero(inverse == p)
        part = _arithmetic(d, a_bits[rows], gather_b(b_bits, patterns[p], d.kind),
                           None if c_bits is None else c_bits[rows], scale_input_d, None if sa is None else sa[rows],
                           sb, bs)
        if out is None:
            out = np.empty((a_bits.shape[0], part.shape[1]), part.dtype)
        out[rows] = part
    return out


def _fold_scale(X, scale_bits):
    """X's elements times their row's ue8m0 scale 2^e (one scale covers all K = 32): exponents move by e;
    a NaN scale (0xFF) makes every element NaN."""
    S = decode_operand(scale_bits[:, 0], "ue8m0")  # (rows, 5)
    X = X.copy()
    nan = S[:, CLS] == NAN
    X[..., LSB:] += np.where(nan, 0, S[:, LSB])[:, None, None]  # LSB and ALIGN
    X[nan, :, CLS] = NAN
    return X
