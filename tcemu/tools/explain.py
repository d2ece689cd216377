"""Explain a matrix descriptor in plain words, with lints for the traps kernel authors fall into.

A lint fires only where the descriptor alone proves something is off (encoding rules, elements that overlap,
reads past the window, a start below dynamic shared memory, a base offset a TMA tile cannot have), or, when
told the extent of the tile the kernel keeps in shared memory (`tile=`), where one instruction's read does not
fit in it. Large LBO / SBO values are legal for large resident tiles (a 256-deep MN-major B, a K-major A whose
8-row groups hold 1024 elements of K), so they are judged only against a tile or a writer's placement
(check.check_operand, which names unit slips against the descriptor it would suggest).
"""
from dataclasses import replace
from typing import List

import numpy as np

from ..layout.addressing import canonical_layout, core_matrix_rows, lbo_mode_split, lbo_used, operand_addresses
from ..core.arch import check_arch
from ..blackwell.mma import check_form, instr_k
from ..layout.descriptors import Finding, SwizzleMode, as_arch_descriptor
from ..arith.dtypes import FP4_FP6, OPERAND_DTYPES, element_type, form_text, is_padded, parse_major, placement_dtype
from ..core.errors import LayoutError, TcemuError
from ..blackwell.instr import InstrDescriptor
from .operand import instruction_k, operand_name, operand_spec
from ..hopper.sparse import invalid_nibbles, meta_nibbles, meta_slots
from ..core.validate import as_bool, as_int_list, is_int, show

DYNAMIC_SMEM_BASE = 0x400  # where dynamic shared memory started in every capture (traces/*.npz)

__all__ = ["explain", "lint", "describe_instruction", "describe_sparse_meta", "dense_strides", "instruction_k",
           "has_errors"]


def dense_strides(desc, dtype: str, major: str, rows: int, k: int, arch: str = "sm90"):
    """(LBO, SBO) in bytes of a canonical tile of exactly `rows` x `k` (one instruction's K), packed densely with
    the M/N atoms adjacent (CuTe's make_gmma_desc would produce these for such a tile)."""
    check_arch(arch)
    T = element_type(dtype, allowed=OPERAND_DTYPES[arch]).per_chunk
    w = desc.swizzle.bytes
    if parse_major(major):
        if desc.swizzle is SwizzleMode.NONE:
            return 128, 128 * (k // T)
        # K wider than one swizzled row (sparse B): atom columns follow all the rows (Triton's tile order)
        return (rows * w if lbo_used(desc, k=k, dtype=dtype, major=major, arch=arch) else 16), 8 * w
    if desc.swizzle is SwizzleMode.NONE:
        return 128 * (rows // T), 128
    return 8 * w * max(k // 8, 1), 8 * w


def _overlap(addrs, nbytes):
    """(i, j, pairs): the first two elements sharing bytes, or None."""
    flat = addrs.ravel()
    order = np.argsort(flat, kind="stable")
    dup = np.flatnonzero(flat[order][1:] < flat[order][:-1] + nbytes)
    if not dup.size:
        return None
    i = np.unravel_index(order[dup[0]], addrs.shape)
    j = np.unravel_index(order[dup[0] + 1], addrs.shape)
    return tuple(map(int, i)), tuple(map(int, j)), int(dup.size)


def _repairs(desc, read, ok, accept=lambda d: True):
    """The one-slip repairs of `desc` (x16, /16, LBO <-> SBO) that `accept` takes and for which ok(addresses)
    holds, in words."""
    candidates = []
    for name in ("lbo", "sbo"):
        have = getattr(desc, name)
        for new, why in ((have * 16, f"{name.upper()} {have:#x} x 16 = {have * 16:#x}"),
                         (have // 16, f"{name.upper()} {have:#x} / 16 = {have // 16:#x}")):
            if new and new % 16 == 0 and new != have:
                candidates.append((replace(desc, **{name: new}), why, "shifted twice?" if new > have else
                                   "a byte count written into the field without the >> 4?"))
    if desc.lbo != desc.sbo:
        candidates.append((replace(desc, lbo=desc.sbo, sbo=desc.lbo), "LBO and SBO swapped", "swapped?"))
    out = []
    for cand, why, question in candidates:
        try:
            if accept(cand) and ok(read(cand)):
                out.append((why, question))
        except TcemuError:
            pass
    return out


def lint(desc, *, dtype=None, major: str = "K", rows: int = 64, k=None, arch: str = "sm90", padded=None,
         instr=None, kind=None, operand=None, cta_group=None, tile=None, sparse: bool = False) -> List[Finding]:
    """Findings beyond validate(): traps that give silently wrong results. Every message names the operand.

    instr (an InstrDescriptor, or its value with kind=): the operand's type, form, major-ness and this CTA's
    rows and K come from the instruction (operand 'A' or 'B'; cta_group None: 2 for M = 256).
    tile: (rows, k) of the whole tile the kernel keeps in shared memory, densely packed; one instruction's read
    must then fit in the tile's bytes (this is what tells a 16x SBO from a large resident tile).
    sparse (sm90 wgmma.mma_async.sp): without k=, A's K/2 stored elements or B's K. A swizzled K-major operand
    whose K spans more than one swizzled row (sparse B) is placed by LBO too, so an LBO below the row width is
    flagged (addressing.lbo_used)."""
    sparse = as_bool(sparse, "sparse", LayoutError)
    if instr is not None:
        if sparse:
            raise LayoutError("sparse", "sparse= is sm90's wgmma.mma_async.sp; a tcgen05 instruction descriptor "
                                        "(instr=) gives the operand's shape itself")
        spec = operand_spec(instr, kind=kind, operand=operand or "A", cta_group=cta_group)
        dtype, major, rows, k, name = spec.dtype, spec.major, spec.rows, spec.k, spec.name
        arch = "sm103" if spec.instr.k96 or arch == "sm103" else "sm100"
        padded = spec.padded
    else:
        if dtype is None:
            raise LayoutError("dtype", "name the operand's type (dtype=...) or give the instruction (instr=...)")
        name = "A" if operand is None else operand_name(operand)
        padded = is_padded(dtype, padded)
    desc = as_arch_descriptor(desc, arch)
    at = placement_dtype(dtype, padded, major=major)
    if k is not None and not is_int(k):
        raise LayoutError("k", f"must be an integer or None, got {show(k)}")
    k = instruction_k(dtype, arch, sparse, name, padded=padded) if k is None else k  # k=0 is an error
    tag = f" (operand {name})"
    out = [f._replace(rule=f.rule + tag) for f in desc.validate(arch, major=major)]
    wide = parse_major(major) and desc.swizzle is not SwizzleMode.NONE and not getattr(desc, "lbo_mode", 0) and \
        lbo_used(desc, k=k, dtype=at, major=major, arch=arch)  # K beyond one swizzled row (sparse B)
    if wide:  # validate() cannot know K: here LBO places the next atom column
        out = [f for f in out if not (f.field == "lbo" and "is ignored" in f.rule)]
        if desc.lbo < desc.swizzle.bytes:
            out.append(Finding("lbo", f"{desc.lbo:#x}: K spans more than one {desc.swizzle.value}-swizzled row, so LBO "
                                      "places the next atom column; below the row width it lands inside the first "
                                      "(CuTe writes 1 here, which only suits K within one row)" + tag, "warning"))
    if any(f.severity == "error" for f in out):
        return out
    read = lambda d: operand_addresses(d, rows=rows, k=k, dtype=at, major=major, arch=arch)  # noqa: E731
    try:
        addrs = read(desc)
    except TcemuError as e:
        return out + [Finding(e.field, e.rule + tag, "error")]
    bits = element_type(at, allowed=OPERAND_DTYPES[arch]).bits
    nbytes = max(bits // 8, 1)
    if bits >= 8:
        hit = _overlap(addrs, nbytes)
        if hit:  # a repair is named only where it gives the densely packed strides (one instruction's tile)
            dense = dense_strides(desc, at, major, rows, k, arch)
            uses_lbo = lbo_used(desc, k=k, dtype=at, major=major, arch=arch)
            own = wide and desc.lbo < desc.swizzle.bytes  # that LBO has its own finding above: no LBO repair here
            is_dense = lambda d: (not own or d.lbo == desc.lbo) and \
                (d.lbo if uses_lbo else dense[0], d.sbo) == dense  # noqa: E731
            (i, j, pairs), fixes = hit, _repairs(desc, read, lambda a: _overlap(a, nbytes) is None, is_dense)
            why = "".join(f"; with {what} they would not: {q}" for what, q in fixes)
            out.append(Finding("lbo, sbo", f"strides overlap: elements {name}[{i[0]}, {i[1]}] and {name}[{j[0]}, "
                                           f"{j[1]}] share bytes at {int(addrs[i]):#x} ({pairs} such pairs){why}"
                                           + tag, "warning"))
    if tile is not None:
        out += _tile_findings(desc, addrs, read, tile, rows, k, bits, nbytes, name, form_text(dtype, padded), tag,
                              major)
    chunk0 = (desc.start_address >> 4) & 7
    if parse_major(major) and desc.swizzle is SwizzleMode.B128 and not getattr(desc, "lbo_mode", 0) and \
            chunk0 * 16 + k * bits // 8 > 128 and k * bits // 8 == 48:  # K = 96 fp4 (sm_103a)
        out.append(Finding("lbo_mode", f"a 48-byte K read from chunk {chunk0} of its 128-byte line runs past the line "
                                       "(mode 0 reads on into the next row's bytes); PTX 9.7.16.3.1.2 splits such a "
                                       "read with LBO mode 1, the LBO field holding the second chunk's address" + tag,
                           "warning"))
    if 0 < desc.start_address < DYNAMIC_SMEM_BASE:
        out.append(Finding("start_address", f"{desc.start_address:#x} lies below 0x400, where dynamic shared "
                                            "memory begins: was the address shifted twice?" + tag, "warning"))
    if desc.swizzle is not SwizzleMode.NONE and desc.base_offset:
        out.append(Finding("base_offset", f"{desc.base_offset}: the XOR pattern is taken relative to 128-byte line "
                                          f"{desc.base_offset}; tiles written by TMA (or any writer that swizzles "
                                          "absolute addresses) need base offset 0 wherever they start" + tag,
                           "warning"))
    return out


def _tile_findings(desc, addrs, read, tile, rows, k, bits, nbytes, name, label, tag, major):
    t_rows, t_k = as_int_list(tile, "tile", 2, 1, 1 << 20, LayoutError)  # (rows, k) of the tile in shared memory
    if t_rows < rows or t_k < k:
        raise LayoutError("tile", f"{show(tile)}: the tile holds at least one instruction's {rows} x {k}")
    # a swizzled tile keeps whole W-byte rows (TMA's pitch is the swizzle span): its contiguous direction rounds up
    w = desc.swizzle.bytes if desc.swizzle is not SwizzleMode.NONE else 1
    inner, outer = (t_k, t_rows) if parse_major(major) else (t_rows, t_k)
    size = outer * -(-inner * bits // 8 // w) * w
    span = lambda a: int(a.max()) + nbytes - int(a.min())  # noqa: E731
    if span(addrs) <= size:
        return []
    fixes = _repairs(desc, read, lambda a: span(a) <= size and (bits < 8 or _overlap(a, nbytes) is None))
    why = "".join(f"; {what} would fit: {q}" for what, q in fixes)
    return [Finding("lbo, sbo", f"one instruction reads {span(addrs)} bytes ({int(addrs.min()):#x} to "
                                f"{int(addrs.max()) + nbytes:#x}), more than the whole {t_rows} x {t_k} {label} tile "
                                f"of {name} holds ({size} bytes): the descriptor reads outside the tile{why}" + tag,
                    "warning")]


def has_errors(text: str) -> bool:
    """Whether explain()'s text reports an error (its findings are printed one per line)."""
    return any(line.startswith("error:") for line in text.splitlines())


def describe_instruction(idesc, *, ws: bool = False) -> List[str]:
    """A tcgen05 instruction descriptor in words, with the shape rules it breaks (PTX Table 39; `ws`: those of
    tcgen05.mma.ws)."""
    if not isinstance(idesc, InstrDescriptor):
        raise LayoutError("idesc", f"must be an InstrDescriptor, got {show(idesc)}")
    ws = as_bool(ws, "ws", LayoutError)
    d = idesc
    major = lambda t: "MN-major" if t else "K-major"  # noqa: E731
    form = lambda t: f"{t} {'padded' if is_padded(t, None, kind=d.kind) else 'packed'}" if t in FP4_FP6 else t  # noqa: E731
    lines = [f"instruction: .kind::{d.kind} M = {d.m}, N = {d.n}; A {form(d.dtype_a)} {major(d.transpose_a)}"
             f"{' negated' if d.negate_a else ''}, B {form(d.dtype_b)} {major(d.transpose_b)}"
             f"{' negated' if d.negate_b else ''}, D " + ("f32" if d.kind in ("mxf8f6f4", "mxf4", "mxf4nvf4")
                                                          else d.dtype_d)]
    if d.kind in ("mxf8f6f4", "mxf4", "mxf4nvf4"):
        lines.append(f"block scales: {d.scale_type}, A's from byte {d.a_scale_id} and B's from byte {d.b_scale_id} "
                     "of their tensor-memory cells" + (" (K = 96: runs of 3 or 6 bytes, on into later columns)"
                                                      if d.k96 else ""))
    if d.sparse:
        w = {"tf32": "1:2", "mxf4": "4:8 in pairs", "mxf4nvf4": "4:8 in pairs"}.get(d.kind, "2:4")
        sel = (f"sparsity selector {d.sparsity_selector}: metadata from the address's column + {d.sparsity_selector}"
               if d.kind in ("tf32", "f16") else "sparsity selector 0 (the only value this kind reads)")
        lines.append(f"sparse (tcgen05.mma.sp): A holds K/2 = {instr_k(d) // 2} of K = {instr_k(d)} per row, {w}; "
                     f"metadata in tensor memory, {sel}")
    if d.max_shift:
        lines.append(f"max shift {d.max_shift_columns} columns: a .ws zero-column mask may shift B's columns by up to "
                     "that (tcgen05.mma.ws only)")
    if d.k96:
        lines.append("K = 96 (sm_103a): 48 bytes of packed e2m1 per row; a read that runs past its 128-byte line "
                     "needs LBO mode 1 (PTX 9.7.16.3.1.2)")
    lines += [f"error: {f}: {rule}" for f, rule in d.validate(ws=ws)]
    return lines


def describe_sparse_meta(meta, dtype_a: str, selector: int = 0) -> List[str]:
    """The 128 metadata registers of a wgmma.mma_async.sp in words: who supplies them, and every chunk whose nibble
    PTX leaves undefined or whose indices are out of order."""
    nib = meta_nibbles(meta, dtype_a, selector)
    thread, nibble = meta_slots(dtype_a, selector)
    owners = np.unique(thread)
    lines = [f"sparse metadata ({dtype_a}, sp-sel {selector}): {owners.size} threads supply it "
             f"({', '.join(map(str, owners[:6]))}, ...); the other {128 - owners.size} registers are ignored"]
    bad = np.argwhere(invalid_nibbles(nib, dtype_a))
    for m, c in bad[:8]:
        lines.append(f"error: sparse_meta: row {m} chunk {c}: nibble {int(nib[m, c]):#06b} (thread {int(thread[m, c])}, "
                     f"bits {4 * int(nibble[m, c])}-{4 * int(nibble[m, c]) + 3}) is undefined (PTX 9.7.15.6.1)")
    if len(bad) > 8:
        lines.append(f"error: sparse_meta: {len(bad) - 8} more undefined chunks")
    if dtype_a != "tf32":
        swapped = int(((nib & 3) > (nib >> 2)).sum())
        if swapped:
            lines.append(f"warning: sparse_meta: {swapped} chunks name their two indices in descending order (PTX lists "
                         "them as valid; mma.sp::ordered_metadata would not)")
    return lines


def explain(desc, *, dtype: str = "bf16", major: str = "K", rows: int = 64, k=None, arch: str = "sm90",
            instr=None, kind=None, operand: str = "a", sparse: bool = False, padded=None, cta_group=None,
            tile=None, ws: bool = False) -> str:
    """`desc` in plain words. With a tcgen05 instruction descriptor (`instr`, an InstrDescriptor or its value
    with `kind`), the operand's type, form, major-ness and this CTA's extent come from it (operand "a" or "b";
    cta_group None takes 2 for M = 256: each CTA of the pair holds half of A's rows and of B's columns). With
    `sparse` (sm90 wgmma.mma_async.sp) the extent is A's K/2 stored elements or B's K (operand "a" or "b")."""
    sparse = as_bool(sparse, "sparse", LayoutError)
    if sparse and instr is not None:
        raise LayoutError("sparse", "sparse= is sm90's wgmma.mma_async.sp; a tcgen05 instruction descriptor "
                                    "(instr=) gives the operand's shape itself")
    if k is not None and not is_int(k):
        raise LayoutError("k", f"must be an integer or None, got {show(k)}")
    lines = []
    name = operand_name(operand)
    if instr is not None:
        spec = operand_spec(instr, kind=kind, operand=name, cta_group=cta_group)
        d = spec.instr
        arch = "sm103" if d.k96 or arch == "sm103" else "sm100"  # K = 96 and LBO mode 1 are sm_103a's
        dtype, major, rows, k, padded = spec.dtype, spec.major, spec.rows, spec.k, spec.padded
        lines += describe_instruction(d, ws=ws)
        if spec.cta_group == 2:
            lines.append(spec.describe())
    else:
        padded = is_padded(dtype, padded)
    desc = as_arch_descriptor(desc, arch)
    etype = element_type(dtype, allowed=OPERAND_DTYPES[arch])
    at = placement_dtype(etype.name, padded, major=major)
    if sparse:
        full = instruction_k(etype.name, arch, True, "B")
        k = instruction_k(etype.name, arch, True, name) if k is None else k
        lines.append(f"sparse wgmma (k{full}): " + ("A holds K/2 stored elements per row, read like a dense A"
                                                     if name == "A" else f"B reads all {full} K elements"))
        if name == "B" and parse_major(major) and desc.swizzle is not SwizzleMode.NONE and \
                lbo_used(desc, k=k, dtype=at, major=major, arch=arch):
            lines.append(f"K spans {k * etype.bits // 8} bytes but a {desc.swizzle.value}-swizzled row holds "
                         f"{desc.swizzle.bytes}: the next atom column starts LBO = {desc.lbo:#x} bytes on (Triton/XLA's "
                         "descriptors; pending traces/wgmma_sp_addresses_sm90.npz)")
    k = instruction_k(etype.name, arch, padded=padded) if k is None else k
    if getattr(desc, "lbo_mode", 0):
        n1 = lbo_mode_split(desc, k, at, "sm103") if arch == "sm103" else k
        lines.append(f"LBO mode 1 (sm_103a): the LBO field holds the absolute address {desc.lbo:#x} of the second chunk; "
                     + (f"this read takes K elements 0-{n1 - 1} from the start's 128-byte line and {n1}-{k - 1} from "
                        f"{desc.lbo:#x} on, rows placed by the same SBO" if n1 < k else
                        "this read stays in the start's 128-byte line, so the second chunk is not read"))
    if etype.name in FP4_FP6:
        lines.append(f"{form_text(etype.name, padded)}: " + (
            "16 values then padding in each 16-byte chunk (PTX .b4x16_p64 / .b6x16_p32); each value is addressed "
            "as its 8-bit slot, like a u8 operand" if padded else
            "two values per byte, even k in the low nibble; each value's address is the byte that holds it"))
    sw = desc.swizzle.swizzle
    lines.insert(0, f"{desc}  ({arch}, operand {name}, read as {rows} x {k} {form_text(etype.name, padded)}, "
                    f"{'K' if parse_major(major) else 'MN'}-major)")
    if desc.swizzle is SwizzleMode.NONE:
        lines.append("swizzle: none; the operand is built from 8x16-byte core matrices placed by LBO and SBO")
    else:
        hi = sw.base + sw.shift
        lines.append(f"swizzle: {desc.swizzle.value} = {sw}: bits [{sw.base}, {sw.base + sw.bits}) of every absolute "
                     f"address are XORed with bits [{hi}, {hi + sw.bits}) (minus the base offset {desc.base_offset}); "
                     f"the pattern repeats every {1 << (hi + sw.bits)} bytes")
    try:
        lines.append(f"layout: {canonical_layout(desc, dtype=at, major=major, arch=arch)}  "
                     f"({'8-bit slots' if at != etype.name else 'elements'}; m, k count atoms)")
        rows_of = core_matrix_rows(desc, rows=rows, k=k, dtype=at, major=major, arch=arch)
        lines.append("first core matrices (16-byte row addresses):")
        for i in range(min(2, rows_of.shape[0])):
            for j in range(min(2, rows_of.shape[1])):
                lines.append(f"  ({i}, {j}): " + " ".join(f"{int(a):#07x}" for a in rows_of[i, j]))
    except TcemuError as e:
        lines.append(f"layout: cannot be resolved: {e}")
    findings = lint(desc, dtype=etype.name, major=major, rows=rows, k=k, arch=arch, padded=padded, operand=name,
                    tile=tile)
    if instr is not None:  # rules tying this operand's descriptor to the instruction (blackwell.check_form)
        try:
            check_form(d, spec.cta_group, False, *((desc, None) if name == "A" else (None, desc)), 0, ws=ws,
                       arch=arch)
        except TcemuError as e:
            findings.append(Finding(e.field, e.rule, "error"))
    lines += [str(f) for f in findings] or ["no findings"]
    return "\n".join(lines)
