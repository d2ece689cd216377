"""Explain a matrix descriptor in plain words, with lints for the traps kernel authors fall into."""
from typing import List

import numpy as np

from .addressing import canonical_layout, core_matrix_rows, operand_addresses
from .arch import check_arch
from .descriptors import Finding, SwizzleMode, as_arch_descriptor
from .dtypes import OPERAND_DTYPES, element_type, parse_major
from .errors import LayoutError, TcemuError
from .blackwell import K_OF_KIND, check_form
from .hopper import K_OF as INSTRUCTION_K
from .instr import InstrDescriptor
from .validate import is_int, show

DYNAMIC_SMEM_BASE = 0x400  # where dynamic shared memory started in every capture (traces/*.npz)


def dense_strides(desc, dtype: str, major: str, rows: int, k: int, arch: str = "sm90"):
    """(LBO, SBO) in bytes of a densely packed canonical tile (CuTe's make_gmma_desc would produce)."""
    check_arch(arch)
    T = element_type(dtype, allowed=OPERAND_DTYPES[arch]).per_chunk
    w = desc.swizzle.bytes
    if parse_major(major):
        return (128, 128 * (k // T)) if desc.swizzle is SwizzleMode.NONE else (16, 8 * w)
    if desc.swizzle is SwizzleMode.NONE:
        return 128 * (rows // T), 128
    return 8 * w * max(k // 8, 1), 8 * w


def instruction_k(dtype: str, arch: str = "sm90") -> int:
    """K of one instruction: wgmma's per type; tcgen05 reads 32 bytes of K (fp4/fp6 padded to bytes
    except packed e2m1, 64)."""
    etype = element_type(dtype, allowed=OPERAND_DTYPES[check_arch(arch)])
    return INSTRUCTION_K[etype.name] if arch == "sm90" else 256 // etype.bits


def lint(desc, *, dtype: str, major: str = "K", rows: int = 64, k=None, arch: str = "sm90") -> List[Finding]:
    """Findings beyond validate(): traps that give silently wrong results."""
    desc = as_arch_descriptor(desc, arch)
    if k is not None and not is_int(k):
        raise LayoutError("k", f"must be an integer or None, got {show(k)}")
    k = instruction_k(dtype, arch) if k is None else k  # k=0 is an error, not "the default"
    out = list(desc.validate(arch, major=major))
    if any(f.severity == "error" for f in out):
        return out
    try:
        addrs = operand_addresses(desc, rows=rows, k=k, dtype=dtype, major=major, arch=arch)
    except TcemuError as e:
        return out + [Finding(e.field, e.rule, "error")]
    nbytes = max(element_type(dtype, allowed=OPERAND_DTYPES[arch]).bits // 8, 1)
    if nbytes > 1 or element_type(dtype, allowed=OPERAND_DTYPES[arch]).bits == 8:
        flat = addrs.ravel()
        order = np.argsort(flat, kind="stable")
        dup = np.flatnonzero(flat[order][1:] < flat[order][:-1] + nbytes)
        if dup.size:
            i, j = np.unravel_index(order[dup[0]], addrs.shape), np.unravel_index(order[dup[0] + 1], addrs.shape)
            out.append(Finding("lbo, sbo", f"strides overlap: elements {tuple(map(int, i))} and {tuple(map(int, j))} "
                                           f"share bytes at {int(addrs[i]):#x} ({dup.size} such pairs)", "warning"))
    lbo, sbo = dense_strides(desc, dtype, major, rows, k, arch)
    for name, have, dense in (("sbo", desc.sbo, sbo), ("lbo", desc.lbo, lbo)):
        used = not (name == "lbo" and parse_major(major) and desc.swizzle is not SwizzleMode.NONE)
        if used and dense and have == 16 * dense:
            out.append(Finding(name, f"{have:#x} is 16x the dense value {dense:#x}: was a byte count written into "
                                     "the field without the >> 4?", "warning"))
        elif used and dense >= 256 and have * 16 == dense:
            out.append(Finding(name, f"{have:#x} is 1/16 of the dense value {dense:#x}: shifted twice?", "warning"))
    if 0 < desc.start_address < DYNAMIC_SMEM_BASE:
        out.append(Finding("start_address", f"{desc.start_address:#x} lies below 0x400, where dynamic shared "
                                            "memory begins: was the address shifted twice?", "warning"))
    if desc.swizzle is not SwizzleMode.NONE and desc.base_offset:
        out.append(Finding("base_offset", f"{desc.base_offset}: the XOR pattern is taken relative to 128-byte line "
                                          f"{desc.base_offset}; tiles written by TMA (or any writer that swizzles "
                                          "absolute addresses) need base offset 0 wherever they start", "warning"))
    return out


def has_errors(text: str) -> bool:
    """Whether explain()'s text reports an error (its findings are printed one per line)."""
    return any(line.startswith("error:") for line in text.splitlines())


def describe_instruction(idesc) -> List[str]:
    """A tcgen05 instruction descriptor in words, with the shape rules it breaks (PTX Table 39)."""
    if not isinstance(idesc, InstrDescriptor):
        raise LayoutError("idesc", f"must be an InstrDescriptor, got {show(idesc)}")
    d = idesc
    major = lambda t: "MN-major" if t else "K-major"  # noqa: E731
    lines = [f"instruction: .kind::{d.kind} M = {d.m}, N = {d.n}; A {d.dtype_a} {major(d.transpose_a)}"
             f"{' negated' if d.negate_a else ''}, B {d.dtype_b} {major(d.transpose_b)}"
             f"{' negated' if d.negate_b else ''}, D " + ("f32" if d.kind in ("mxf8f6f4", "mxf4", "mxf4nvf4")
                                                          else d.dtype_d)]
    if d.kind in ("mxf8f6f4", "mxf4", "mxf4nvf4"):
        lines.append(f"block scales: {d.scale_type}, A's from byte {d.a_scale_id} and B's from byte {d.b_scale_id} "
                     "of their tensor-memory cells")
    lines += [f"error: {f}: {rule}" for f, rule in d.validate()]
    return lines


def explain(desc, *, dtype: str = "bf16", major: str = "K", rows: int = 64, k=None, arch: str = "sm90",
            instr=None, kind=None, operand: str = "a") -> str:
    """`desc` in plain words. With a tcgen05 instruction descriptor (`instr`, an InstrDescriptor or its value
    with `kind`), the operand's type, major-ness and extent come from it (operand "a" or "b")."""
    if k is not None and not is_int(k):
        raise LayoutError("k", f"must be an integer or None, got {show(k)}")
    lines = []
    if instr is not None:
        d = instr if isinstance(instr, InstrDescriptor) else InstrDescriptor.decode(instr, kind)
        arch = "sm100"
        if operand not in ("a", "b"):
            raise LayoutError("operand", f"{show(operand)}: 'a' or 'b'")
        dtype, mn = (d.dtype_a, d.transpose_a) if operand == "a" else (d.dtype_b, d.transpose_b)
        major, rows, k = ("MN" if mn else "K"), (d.m if operand == "a" else d.n), K_OF_KIND[d.kind]
        lines += describe_instruction(d)
        if dtype == "e2m1" and d.kind in ("f8f6f4", "mxf8f6f4"):  # smem.SUBBYTE's padded form
            lines.append("e2m1 in this kind sits 16 values per 16 bytes, then padding: its slots are addressed "
                         "as bytes (u8)")
            dtype = "u8"
    desc = as_arch_descriptor(desc, arch)
    etype = element_type(dtype, allowed=OPERAND_DTYPES[arch])
    k = instruction_k(etype.name, arch) if k is None else k
    sw = desc.swizzle.swizzle
    lines.insert(0, f"{desc}  ({arch}, read as {rows} x {k} {etype.name}, {'K' if parse_major(major) else 'MN'}-major)")
    if desc.swizzle is SwizzleMode.NONE:
        lines.append("swizzle: none; the operand is built from 8x16-byte core matrices placed by LBO and SBO")
    else:
        hi = sw.base + sw.shift
        lines.append(f"swizzle: {desc.swizzle.value} = {sw}: bits [{sw.base}, {sw.base + sw.bits}) of every absolute "
                     f"address are XORed with bits [{hi}, {hi + sw.bits}) (minus the base offset {desc.base_offset}); "
                     f"the pattern repeats every {1 << (hi + sw.bits)} bytes")
    try:
        lines.append(f"layout: {canonical_layout(desc, dtype=etype.name, major=major, arch=arch)}  "
                     "(elements; m, k count atoms)")
        rows_of = core_matrix_rows(desc, rows=rows, k=k, dtype=etype.name, major=major, arch=arch)
        lines.append("first core matrices (16-byte row addresses):")
        for i in range(min(2, rows_of.shape[0])):
            for j in range(min(2, rows_of.shape[1])):
                lines.append(f"  ({i}, {j}): " + " ".join(f"{int(a):#07x}" for a in rows_of[i, j]))
    except TcemuError as e:
        lines.append(f"layout: cannot be resolved: {e}")
    findings = lint(desc, dtype=etype.name, major=major, rows=rows, k=k, arch=arch)
    if instr is not None:  # rules tying this operand's descriptor to the instruction (blackwell.check_form)
        try:
            check_form(d, None, False, *((desc, None) if operand == "a" else (None, desc)), 0)
        except TcemuError as e:
            findings.append(Finding(e.field, e.rule, "error"))
    lines += [str(f) for f in findings] or ["no findings"]
    return "\n".join(lines)
