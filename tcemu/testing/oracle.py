"""An independent formulation of operand addressing, for fuzzing and tests: the PTX canonical
layouts (9.7.15.5.1.2.1.3) written as CuTe layouts with CuTe's own Python layout algebra (pycute,
from the nvidia-cutlass wheel: pip install --no-deps nvidia-cutlass), and the measured swizzle rule
Swizzle(start + L - 128*b0) + 128*b0 (base offset ignored without swizzle). It shares no code with
addressing.py.
"""
import functools

import numpy as np

from ..core.errors import TcemuError
from ..core.validate import as_bool, as_int, show


def _pycute():
    try:
        import pycute
        return pycute
    except ImportError:
        raise TcemuError("oracle", "needs pycute: pip install --no-deps nvidia-cutlass") from None


def chunk_mode(bits):
    """(shape, byte stride) of the T elements in a 16-byte chunk; b1: 8 bits share a byte."""
    T = 128 // bits
    return (T, bits // 8) if bits >= 8 else ((8, T // 8), (0, 1))


# Swizzle<B, M, S> of each layout type (PTX canonical-layouts table; sm100's 32-byte-atom 128B mode as CuTe's
# Layout_MN_SW128_32B_Atom, whose atoms hold 4 K rows).
SWIZZLES = {"32B": (1, 4, 3), "64B": (2, 4, 3), "128B": (3, 4, 3), "128B_base32B": (2, 5, 2)}


def ptx_layout(bits, k_major, W, rows, k, lbo, sbo, atom_rows=8):
    """The PTX canonical layout in bytes; coordinates (MN row, K column) for both majors."""
    Layout = _pycute().Layout
    T = 128 // bits
    ts, td = chunk_mode(bits)
    if k_major:  # ((8,m),(T,2k)): none ((1T,SBO),(1,LBO)); swizzled ((W/16*T,SBO),(1,T))
        mn_stride, kc_stride = (16, lbo) if W == 16 else (W, 16)
        return Layout(((8, rows // 8), (ts, k // T)), ((mn_stride, sbo), (td, kc_stride)))
    atoms = -(-rows // (T * W // 16))  # MN-major: ((T,W/16,m),(8,k))
    if W == 16:  # ((1,T,SBO),(1T,LBO)): 1T elements = 16 bytes
        return Layout(((ts, 1, atoms), (8, k // 8)), ((td, 16, sbo), (16, lbo)))
    return Layout(((ts, W // 16, atoms), (atom_rows, k // atom_rows)), ((td, 16, lbo), (W, sbo)))


@functools.lru_cache(maxsize=256)
def layout_offsets(bits, k_major, W, rows, k, lbo, sbo, atom_rows=8):
    L = ptx_layout(bits, k_major, W, rows, k, lbo, sbo, atom_rows)
    out = np.array([[L(r, c) for c in range(k)] for r in range(rows)], np.int64)
    out.setflags(write=False)
    return out


def oracle(start, lbo, sbo, b0, W, bits, k_major, rows, k, mode=None):
    """Hardware rule (H200 trace): Swizzle(start + L - 128*b0) + 128*b0; no swizzle ignores b0.
    `mode` names the layout type (default: the Hopper one of width W)."""
    start, lbo, sbo = (as_int(v, name, 0, 1 << 18) for v, name in ((start, "start"), (lbo, "lbo"), (sbo, "sbo")))
    b0 = as_int(b0, "b0", -7, 7)  # negative: the tests try wrong base-offset rules
    W = as_int(W, "W", 16, 128)
    bits = as_int(bits, "bits", 1, 32)
    k_major = as_bool(k_major, "k_major")
    rows, k = as_int(rows, "rows", 1, 4096), as_int(k, "k", 1, 4096)
    if W not in (16, 32, 64, 128) or bits not in (1, 4, 8, 16, 32) or rows * k > 1 << 16:
        raise TcemuError("W, bits, rows, k", f"W in 16/32/64/128, bits in 1/4/8/16/32, rows * k <= 65536; got "
                                             f"{W}, {bits}, {rows} x {k}")
    if mode is not None and mode not in ("none",) + tuple(SWIZZLES):
        raise TcemuError("mode", f"{show(mode)}: expected none, {', '.join(SWIZZLES)}")
    mode = mode or {16: "none", 32: "32B", 64: "64B", 128: "128B"}[W]
    if mode == "none":
        return start + layout_offsets(bits, k_major, W, rows, k, lbo, sbo)
    B, M, S = SWIZZLES[mode]
    addr = start + layout_offsets(bits, k_major, W, rows, k, lbo, sbo, 1 << S)
    return _pycute().Swizzle(B, M, S)(addr - 128 * b0) + 128 * b0
