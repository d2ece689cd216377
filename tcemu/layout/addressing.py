"""Resolve every element of a wgmma operand to its absolute shared-memory byte address.

Canonical layouts of PTX 9.7.15.5.1.2.1.3, in bytes, with W the swizzle width (16 for none)
and T = 128 / element bits. A core matrix is 8 rows of 16 contiguous bytes.

  K-major  (row r of M/N, column k):     chunk c = k // T
     none:      (r//8)*SBO + (r%8)*16 + c*LBO + byte(k%T)
     swizzled:  (r//8)*SBO + (r%8)*W  + c*16  + byte(k%T)          (LBO unused while K fits in W bytes)
     swizzled, K wider than W (sm90 sparse B: 64 bytes of K, 32B swizzle): chunk c sits in swizzle-atom
                column c // (W/16), which starts LBO bytes after the previous one:
                (r//8)*SBO + (r%8)*W + (c // (W/16))*LBO + (c % (W/16))*16 + byte(k%T)
                (XLA's sparse wgmma lowering and Triton's descriptor set LBO to that column distance;
                 confirmed on an H100 by traces/wgmma_sp_addresses_sm90.npz. Blackwell reads that wide only
                 for tcgen05.mma.sp's B (64 bytes of K) and K = 96 (48 bytes) with 32B / 64B swizzle: tcemu
                 applies the same rule there, an inference from the shared descriptor text)
  MN-major (row r of M/N, column k):
     none:      (r//T)*SBO + (k%8)*16 + (k//8)*LBO + byte(r%T)
     swizzled:  (r//(T*W/16))*LBO + (k%A)*W + (k//A)*SBO + byte(r%(T*W/16))
  with A = 8 rows per swizzle atom (4 for sm100's 128B_base32B, Swizzle<2,5,2>: CuTe's
  Layout_MN_SW128_32B_Atom, tests/test_cute_umma.py); swizzled K-major rows step the same way.

then address = Swizzle(start + offset, base offset) on the absolute address (swizzle.py).

sm103 (arch="sm103"), LBO mode 1 (PTX 9.7.16.3.1.2: "the leading dimension absolute address can point to the
second data chunk"; K-major, 128B swizzle, base offset 0): with c0 = the start's 16-byte chunk in its 128-byte
line, chunks c0 .. 7 of K come from the start as in mode 0; chunk j >= 8 - c0 comes from the LBO address,
(j - (8 - c0))*16 bytes on, rows placed by the same SBO and 128-byte row pitch. Which bytes that second part
holds is our reading of the PTX sentence, pinned by CuTe's sm103 mainloop (tests/test_cute_umma.py: its K = 96
descriptors, LBO = the next stage's start, read exactly the K blocks of its own shared-memory layout); no
silicon has confirmed it.
"""
from dataclasses import replace

import numpy as np
from numba import njit

from ..core.arch import SMEM_WINDOW, check_arch
from .descriptors import HOPPER_CODE_1, GmmaDescriptor, SwizzleMode, as_arch_descriptor
from ..arith.dtypes import MN_MAJOR_DTYPES, OPERAND_DTYPES, element_type, parse_major
from ..core.errors import DescriptorError, LayoutError
from .swizzle import swizzle_address
from ..core.validate import show


@njit(cache=True)
def _resolve(start, lbo, sbo, sw_bits, sw_base, sw_shift, base_offset, width, k_major, elem_bits, out):
    rows, cols = out.shape
    per_chunk = 128 // elem_bits
    swizzled = sw_bits > 0
    per_atom = per_chunk * (width // 16)  # MN elements in one swizzled row
    atom_rows = 1 << sw_shift             # rows of one swizzle atom: 8, or 4 for Swizzle<2,5,2> (CuTe)
    for r in range(rows):
        for k in range(cols):
            if k_major:
                byte = ((k % per_chunk) * elem_bits) >> 3
                if swizzled:  # chunks beyond one swizzled row: next atom column, LBO further on
                    chunk = k // per_chunk
                    off = (r // atom_rows) * sbo + (r % atom_rows) * width + (chunk // (width // 16)) * lbo \
                        + (chunk % (width // 16)) * 16 + byte
                else:
                    off = (r >> 3) * sbo + (r & 7) * 16 + (k // per_chunk) * lbo + byte
            elif swizzled:
                off = (r // per_atom) * lbo + (k % atom_rows) * width + (k // atom_rows) * sbo \
                    + ((r % per_atom) * elem_bits >> 3)
            else:
                off = (r // per_chunk) * sbo + (k & 7) * 16 + (k >> 3) * lbo + ((r % per_chunk) * elem_bits >> 3)
            out[r, k] = swizzle_address(start + off, sw_bits, sw_base, sw_shift, base_offset)


MAX_ELEMENTS = 1 << 24  # far beyond any operand: wgmma reads at most 256 x 256 b1 elements


def _check_shape(desc: GmmaDescriptor, rows, k, dtype, k_major, arch):
    etype = element_type(dtype, allowed=OPERAND_DTYPES[arch])
    if not k_major and etype.name not in MN_MAJOR_DTYPES[arch]:
        rule = "imm-trans only for .f16/.bf16" if arch == "sm90" else "transposes take 8-, 16- and 32-bit elements only (9.7.16.10.3)"
        raise LayoutError("major", f"{etype.name} must be K-major on {arch} (PTX: {rule})")
    if k_major and desc.swizzle is SwizzleMode.B128_BASE32B:
        raise LayoutError("major", "128B_base32B swizzle is MN-major only (CuTe static-asserts K-major)"
                                   + HOPPER_CODE_1)
    for name, value in (("rows", rows), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
            raise LayoutError(name, f"must be a positive integer, got {show(value)}")
    rows, k = int(rows), int(k)
    if rows * k > MAX_ELEMENTS:
        raise LayoutError("rows, k", f"{show(rows)} x {show(k)} elements exceed the {MAX_ELEMENTS:,}-element limit "
                                     "(the 228 KiB window holds at most 1,867,776 b1 elements)")
    T = etype.per_chunk
    if k_major:
        if rows % 8:
            raise LayoutError("rows", f"{rows} is not a whole number of 8-row core matrices")
        if k % T:
            raise LayoutError("k", f"{k} {etype.name} elements do not fill whole 16-byte core-matrix rows "
                                   f"({T} per row)")
    else:
        if rows % T:
            raise LayoutError("rows", f"{rows} is not a whole number of 16-byte chunks ({T} {etype.name} each)")
        if k % 8:
            raise LayoutError("k", f"{k} is not a whole number of 8-row core matrices along K (MN-major)")
    return etype


def operand_addresses(desc, *, rows: int, k: int, dtype: str, major: str = "K", arch: str = "sm90") -> np.ndarray:
    """(rows, k) int64 array: the absolute shared-memory byte address of element (row, k).

    row is M for A and N for B; for b1 the address is that of the byte holding the bit.
    """
    check_arch(arch)
    desc = as_arch_descriptor(desc, arch).check(arch)
    k_major = parse_major(major)
    if getattr(desc, "lbo_mode", 0):
        return _absolute_lbo_addresses(desc, rows, k, dtype, k_major, arch)
    etype = _check_shape(desc, rows, k, dtype, k_major, arch)
    sw = desc.swizzle.swizzle
    base_offset = desc.base_offset if desc.swizzle is not SwizzleMode.NONE else 0
    out = np.empty((int(rows), int(k)), dtype=np.int64)
    _resolve(desc.start_address, desc.lbo, desc.sbo, sw.bits, sw.base, sw.shift, base_offset,
             desc.swizzle.bytes, k_major, etype.bits, out)
    last = int(out.max()) + max(etype.bits // 8, 1)  # (b1 / fp4: the byte holding the element)
    if last > SMEM_WINDOW[arch]:
        r, c = np.unravel_index(int(out.argmax()), out.shape)
        raise DescriptorError("start_address, lbo, sbo", f"element ({r}, {c}) resolves to {int(out[r, c]):#x}, "
                                                         f"past the end of the {arch} shared window "
                                                         f"({SMEM_WINDOW[arch]:#x})")
    return out


_RESOLVED = {}      # (descriptor, rows, k, dtype, major, arch) -> read-only addresses (resolved_addresses)
_RESOLVED_MAX = 4096


def resolved_addresses(desc, *, rows: int, k: int, dtype: str, major: str = "K", arch: str = "sm90") -> np.ndarray:
    """operand_addresses, remembered per descriptor value and shape: a read-only array shared by every caller
    (the interpreter resolves the same few descriptors for every MMA of a kernel)."""
    exact = isinstance(desc, (GmmaDescriptor, np.integer)) or type(desc) is int
    try:
        key = (type(desc), int(desc) if isinstance(desc, np.integer) else desc, rows, k, dtype, major, arch)
        hit = _RESOLVED.get(key) if exact else None
    except TypeError:   # an unhashable argument: operand_addresses names it
        return operand_addresses(desc, rows=rows, k=k, dtype=dtype, major=major, arch=arch)
    if hit is None:
        hit = operand_addresses(desc, rows=rows, k=k, dtype=dtype, major=major, arch=arch)
        hit.setflags(write=False)
        if len(_RESOLVED) >= _RESOLVED_MAX:
            _RESOLVED.clear()
        if exact:
            _RESOLVED[key] = hit
    return hit


def lbo_mode_split(desc, k: int, dtype: str, arch: str = "sm103") -> int:
    """Elements of K an LBO-mode-1 descriptor reads from its start (the rest come from the LBO address):
    the chunks from the start's 16-byte chunk to the end of its 128-byte line (module text)."""
    T = element_type(dtype, allowed=OPERAND_DTYPES[arch]).per_chunk
    return min(k, (8 - ((desc.start_address >> 4) & 7)) * T)


def _absolute_lbo_addresses(desc, rows, k, dtype, k_major, arch):
    if not k_major:
        raise LayoutError("major", "LBO mode 1 is K-major only (PTX 9.7.16.3.1.2.1)")
    n1 = lbo_mode_split(desc, k, dtype, arch)
    out = np.empty((int(rows), int(k)), np.int64)
    first = replace(desc, lbo_mode=0, lbo=16)          # the start's line, as in mode 0
    out[:, :n1] = operand_addresses(first, rows=rows, k=n1, dtype=dtype, major="K", arch=arch)
    if k > n1:
        second = replace(desc, start_address=desc.lbo, lbo_mode=0, lbo=16)  # the second chunk, at LBO
        out[:, n1:] = operand_addresses(second, rows=rows, k=k - n1, dtype=dtype, major="K", arch=arch)
    return out


def core_matrix_rows(desc, *, rows: int, k: int, dtype: str, major: str = "K", arch: str = "sm90") -> np.ndarray:
    """Addresses of the 16-byte rows of every 8x16B core matrix the operand reads.

    Shape (mn_blocks, k_blocks, 8). K-major: core matrix (i, j) holds M/N rows 8i..8i+7 and the
    j-th 16-byte chunk of K; its row p is M/N row 8i+p. MN-major: core matrix (i, j) holds the
    i-th 16-byte chunk of M/N and K rows 8j..8j+7; its row p is K row 8j+p.
    """
    addrs = operand_addresses(desc, rows=rows, k=k, dtype=dtype, major=major, arch=arch)
    T = element_type(dtype, allowed=OPERAND_DTYPES[arch]).per_chunk
    if parse_major(major):
        firsts = addrs[:, ::T]  # (rows, k/T): first element of each 16-byte row
        return np.ascontiguousarray(firsts.reshape(rows // 8, 8, k // T).transpose(0, 2, 1))
    firsts = addrs[::T, :]  # (rows/T, k)
    return np.ascontiguousarray(firsts.reshape(rows // T, k // 8, 8))


def canonical_layout(desc, *, dtype: str | None = None, major: str = "K", arch: str = "sm90") -> str:
    """The PTX canonical layout of the operand in CuTe notation, instantiated for this descriptor.

    Units are elements of `dtype` (bytes when dtype is None); m and k count repeats of the atom.
    """
    desc = as_arch_descriptor(desc, arch).check(arch)
    k_major = parse_major(major)
    bits = 8 if dtype is None else element_type(dtype, allowed=OPERAND_DTYPES[arch]).bits
    if not k_major and dtype is not None and dtype not in MN_MAJOR_DTYPES[arch]:
        raise LayoutError("major", f"{dtype} must be K-major on {arch}")
    T = 128 // bits
    w = desc.swizzle.bytes // 16  # 16-byte chunks per swizzled row (1 without swizzle)

    def el(nbytes):  # a byte stride in elements
        return f"{nbytes * 8 // bits}" if nbytes * 8 % bits == 0 else f"{nbytes}B"

    if k_major and desc.swizzle is SwizzleMode.NONE:
        shape, stride = f"((8,m),({T},2k))", f"(({T},{el(desc.sbo)}),(1,{el(desc.lbo)}))"
    elif k_major:
        shape, stride = f"((8,m),({T},2k))", f"(({w * T},{el(desc.sbo)}),(1,{T}))"
    elif desc.swizzle is SwizzleMode.NONE:
        shape, stride = f"(({T},1,m),(8,k))", f"((1,{T},{el(desc.sbo)}),({T},{el(desc.lbo)}))"
    else:
        shape, stride = f"(({T},{w},m),(8,k))", f"((1,{T},{el(desc.lbo)}),({w * T},{el(desc.sbo)}))"
    return f"{desc.swizzle.swizzle} o {shape}:{stride}"


def footprint(desc, *, rows: int, k: int, dtype: str, major: str = "K", arch: str = "sm90"):
    """(lowest, highest + 1) byte address the operand touches."""
    addrs = operand_addresses(desc, rows=rows, k=k, dtype=dtype, major=major, arch=arch)
    return int(addrs.min()), int(addrs.max()) + max(element_type(dtype, allowed=OPERAND_DTYPES[arch]).bits // 8, 1)


__all__ = ["operand_addresses", "core_matrix_rows", "canonical_layout", "footprint", "lbo_used", "lbo_mode_split",
           "DescriptorError"]


def lbo_used(desc, *, k: int, dtype: str, major: str = "K", arch: str = "sm90") -> bool:
    """Whether the LBO field places any element of a (rows, k) operand: always, except for a swizzled
    K-major operand whose K extent fits in one swizzled row (PTX: "not used, assumed to be 1")."""
    desc = as_arch_descriptor(desc, arch)
    if getattr(desc, "lbo_mode", 0):  # sm103 absolute LBO: used when the read runs past the start's line
        return lbo_mode_split(desc, k, dtype, arch) < k
    if not parse_major(major) or desc.swizzle is SwizzleMode.NONE:
        return True
    return k * element_type(dtype, allowed=OPERAND_DTYPES[arch]).bits > 8 * desc.swizzle.bytes
