"""Explain a matrix descriptor in plain words, with lints for the traps kernel authors fall into."""
from typing import List

import numpy as np

from .addressing import canonical_layout, core_matrix_rows, operand_addresses
from .descriptors import Finding, SwizzleMode, as_descriptor
from .dtypes import element_type, parse_major
from .errors import TcemuError
from .hopper import K_OF as INSTRUCTION_K

DYNAMIC_SMEM_BASE = 0x400  # where dynamic shared memory started in every capture (traces/*.npz)


def dense_strides(desc, dtype: str, major: str, rows: int, k: int):
    """(LBO, SBO) in bytes of a densely packed canonical tile (CuTe's make_gmma_desc would produce)."""
    T = element_type(dtype).per_chunk
    w = desc.swizzle.bytes
    if parse_major(major):
        return (128, 128 * (k // T)) if desc.swizzle is SwizzleMode.NONE else (16, 8 * w)
    if desc.swizzle is SwizzleMode.NONE:
        return 128 * (rows // T), 128
    return 8 * w * max(k // 8, 1), 8 * w


def lint(desc, *, dtype: str, major: str = "K", rows: int = 64, k=None) -> List[Finding]:
    """Findings beyond validate(): traps that give silently wrong results."""
    desc = as_descriptor(desc)
    k = k or INSTRUCTION_K[element_type(dtype).name]
    out = list(desc.validate(major=major))
    if any(f.severity == "error" for f in out):
        return out
    try:
        addrs = operand_addresses(desc, rows=rows, k=k, dtype=dtype, major=major)
    except TcemuError as e:
        return out + [Finding(e.field, e.rule, "error")]
    nbytes = max(element_type(dtype).bits // 8, 1)
    if element_type(dtype).bits >= 8:
        flat = addrs.ravel()
        order = np.argsort(flat, kind="stable")
        dup = np.flatnonzero(flat[order][1:] < flat[order][:-1] + nbytes)
        if dup.size:
            i, j = np.unravel_index(order[dup[0]], addrs.shape), np.unravel_index(order[dup[0] + 1], addrs.shape)
            out.append(Finding("lbo, sbo", f"strides overlap: elements {tuple(map(int, i))} and {tuple(map(int, j))} "
                                           f"share bytes at {int(addrs[i]):#x} ({dup.size} such pairs)", "warning"))
    lbo, sbo = dense_strides(desc, dtype, major, rows, k)
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


def explain(desc, *, dtype: str = "bf16", major: str = "K", rows: int = 64, k=None, arch: str = "sm90") -> str:
    desc = as_descriptor(desc)
    etype = element_type(dtype)
    k = k or INSTRUCTION_K[etype.name]
    sw = desc.swizzle.swizzle
    lines = [f"{desc}  ({arch}, read as {rows} x {k} {etype.name}, {'K' if parse_major(major) else 'MN'}-major)"]
    if desc.swizzle is SwizzleMode.NONE:
        lines.append("swizzle: none; the operand is built from 8x16-byte core matrices placed by LBO and SBO")
    else:
        lines.append(f"swizzle: {desc.swizzle.value} = {sw}: 16-byte chunk bits [4, {4 + sw.bits}) of every absolute "
                     f"address are XORed with bits [7, {7 + sw.bits}) (minus the base offset {desc.base_offset}); "
                     f"the pattern repeats every {128 << sw.bits} bytes")
    try:
        lines.append(f"layout: {canonical_layout(desc, dtype=etype.name, major=major)}  (elements; m, k count atoms)")
        rows_of = core_matrix_rows(desc, rows=rows, k=k, dtype=etype.name, major=major)
        lines.append("first core matrices (16-byte row addresses):")
        for i in range(min(2, rows_of.shape[0])):
            for j in range(min(2, rows_of.shape[1])):
                lines.append(f"  ({i}, {j}): " + " ".join(f"{int(a):#07x}" for a in rows_of[i, j]))
    except TcemuError as e:
        lines.append(f"layout: cannot be resolved: {e}")
    findings = lint(desc, dtype=etype.name, major=major, rows=rows, k=k)
    lines += [str(f) for f in findings] or ["no findings"]
    return "\n".join(lines)
