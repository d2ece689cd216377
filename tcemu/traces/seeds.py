"""Bit-exact mirror of the input generator of scripts/capture_numerics.cu (the wgmma numerics capture).

The hardware trace stores one seed per case; everything the kernel fed to wgmma is regenerated here:

  rnd(seed, stream, index) = mix64(seed ^ mix64(stream << 32 | index))   (uint64, wrap-around)
  mix64 = splitmix64's finaliser

  stream 3, index 0        case parameters (case_params): mode, specials flag, exponent centres
  stream 2, row * N + col  C, element (row, col) of the 64 x N accumulator
  stream 16*step           A in shared memory, element (row, k) at index row * K + k
  stream 16*step + 1       B in shared memory, element (row, k) at index row * K + k
  stream 16*step + 4       A registers of the register-A forms, index (thread*4 + reg) * per + e

All arithmetic is done on numpy uint64 arrays with explicit np.uint64 constants (C's unsigned 64-bit
wrap-around; no Python-int / numpy-scalar mixing subject to NEP 50), then narrowed the way the kernel's
casts narrow. Nothing here is imported from scripts/; tests/test_seeds.py compiles the CUDA generator for
the host and compares every output bit for bit.
"""
from typing import NamedTuple

import numpy as np

from ..core.errors import TcemuError
from ..core.validate import MAX_ELEMENTS, as_array, as_bool, as_int, show

__all__ = ["NUMERICS_KINDS", "FORMAT_IDS", "FMTS", "KindFormats", "KIND_FORMATS", "CaseParams", "mix64", "rnd",
           "special_bits", "gen_float", "gen_int32", "gen_elem", "case_params", "case_params_formats",
           "kind_formats", "fill_k", "instruction_k", "operand_bits", "operand_smem", "c_bits",
           "a_register_bits", "STREAM_C", "STREAM_PARAMS", "operand_stream", "register_a_stream"]

# (atype, btype, dtype, satfinite), index = kind. Identical to scripts/gen_numerics_wrappers.KINDS.
NUMERICS_KINDS = [("tf32", "tf32", "f32", 0), ("f16", "f16", "f32", 0), ("f16", "f16", "f16", 0),
                  ("bf16", "bf16", "f32", 0)]
NUMERICS_KINDS += [(a, b, d, 0) for d in ("f32", "f16") for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2")]
NUMERICS_KINDS += [(a, b, "s32", s) for s in (0, 1) for a in ("s8", "u8") for b in ("s8", "u8")]
NUMERICS_KINDS += [("b1", "b1", "s32", 0)]

# The kernel's format numbering ("Formats: 0 f32, 1 tf32, ..."). Only 0..5 have an FMTS entry.
FORMAT_IDS = {"f32": 0, "tf32": 1, "f16": 2, "bf16": 3, "e4m3": 4, "e5m2": 5, "s8": 6, "u8": 7, "s32": 8, "b1": 9}
# FMTS[fmt] = (E, M, bias, fn): exponent bits, mantissa bits, bias, finite+NaN-only (e4m3).
FMTS = ((8, 23, 127, 0), (8, 10, 127, 0), (5, 10, 15, 0), (8, 7, 127, 0), (4, 3, 7, 1), (5, 2, 15, 0))
_OPERAND_BITS = {"tf32": 32, "f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "b1": 1}


class KindFormats(NamedTuple):
    """The kernel's KF[kind]: format ids of A, B and C/D, and the operand element width (b1: 1)."""
    fa: int
    fb: int
    fc: int
    bits: int


KIND_FORMATS = tuple(KindFormats(FORMAT_IDS[a], FORMAT_IDS[b], FORMAT_IDS[d], _OPERAND_BITS[a])
                     for a, b, d, _ in NUMERICS_KINDS)


class CaseParams(NamedTuple):
    """The kernel's Params. mode: 0 raw bits, 1 narrow (+-1), 2 medium (+-4), 3 wide (+-2^E),
    4 wide + 1/4 signed zeros, 5 medium + 1/4 signed zeros. specials: 1/16 of float elements are special
    patterns (not in mode 0). ca/cb/cc: biased exponent centres of A, B, C (0 for integer kinds)."""
    mode: int
    specials: int
    ca: int
    cb: int
    cc: int


STREAM_C = 2
STREAM_PARAMS = 3
_MASK64 = (1 << 64) - 1
_MASK32 = (1 << 32) - 1

_U64 = np.uint64
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_MUL1 = _U64(0xBF58476D1CE4E5B9)
_MUL2 = _U64(0x94D049BB133111EB)
_S27, _S30, _S31, _S32 = _U64(27), _U64(30), _U64(31), _U64(32)
_M32 = _U64(_MASK32)
_ONE = _U64(1)


def operand_stream(step: int, which: str) -> int:
    """rnd stream of the shared-memory operand A (16*step) or B (16*step + 1)."""
    return 16 * _step(step) + (0 if _which(which) == "A" else 1)


def register_a_stream(step: int) -> int:
    """rnd stream of the register-A words (16*step + 4)."""
    return 16 * _step(step) + 4


# ---- the generator ----

def mix64(z) -> np.ndarray:
    """splitmix64's finaliser on uint64 (any shape; other integer inputs are reinterpreted as uint64)."""
    z = _as_r(z)
    with np.errstate(over="ignore"):
        z = z + _GOLDEN
        z = (z ^ (z >> _S30)) * _MUL1
        z = (z ^ (z >> _S27)) * _MUL2
        return np.asarray(z ^ (z >> _S31), dtype=np.uint64)


def rnd(seed: int, stream: int, index) -> np.ndarray:
    """mix64(seed ^ mix64(stream << 32 | index)) with the kernel's types: seed uint64, stream and index
    uint32 (wider values are truncated as static_cast<uint32_t> would). Same shape as index."""
    seed = _U64(as_int(seed, "seed", 0, _MASK64))
    stream = as_int(stream, "stream", 0, _MASK64) & _MASK32
    idx = as_array(index, "index")
    if idx.dtype.kind not in "iu" or idx.size > MAX_ELEMENTS:
        raise TcemuError("index", f"rnd index must be integers (at most {MAX_ELEMENTS:,}), got {show(idx)}")
    idx = idx.astype(np.uint64) & _M32
    return mix64(seed ^ mix64(_U64(stream << 32) | idx))


def _max_normal_field(fmt: int) -> int:
    E, _, _, fn = FMTS[fmt]
    return (1 << E) - 1 if fn else (1 << E) - 2


def _mode_width(mode: int, E: int) -> int:
    return 1 if mode == 1 else 4 if mode in (2, 5) else 1 << E


def special_bits(fmt: int, sel: int, sign: int) -> int:
    """The kernel's special_bits: 0 +0, 1 -0, 2 inf (e4m3: NaN), 3 NaN, 4 min subnormal, 5 max subnormal,
    6 max finite, 7 min normal (4..7 carry `sign`)."""
    E, M, _, fn = FMTS[as_int(fmt, "fmt", 0, len(FMTS) - 1)]
    s = (as_int(sign, "sign", 0, 1) << (E + M)) & _MASK32
    emask, mmask = (1 << E) - 1, (1 << M) - 1
    sel = as_int(sel, "sel", 0, 7)
    if sel == 0:
        v = 0
    elif sel == 1:
        v = 1 << (E + M)
    elif sel == 2:
        v = (s | (emask << M) | mmask) if fn else (s | (emask << M))
    elif sel == 3:
        v = (s | (emask << M) | mmask) if fn else (s | (emask << M) | (1 << (M - 1)))
    elif sel == 4:
        v = s | 1
    elif sel == 5:
        v = s | mmask
    elif sel == 6:
        v = (s | (emask << M) | (mmask - 1)) if fn else (s | ((emask - 1) << M) | mmask)
    else:
        v = s | (1 << M)
    return v & _MASK32


_SPECIAL_TABLES = tuple(np.array([[special_bits(f, sel, sign) for sel in range(8)] for sign in (0, 1)], np.uint64)
                        for f in range(len(FMTS)))


def _gen_float(r: np.ndarray, fmt: int, center: int, p: CaseParams) -> np.ndarray:
    """gen_float on a uint64 array r; result uint64 holding the uint32 bits."""
    E, M, _, _ = FMTS[fmt]
    em = _U64(E + M)
    if p.mode == 0:
        bits = r & _U64((1 << (1 + E + M)) - 1)
    else:
        w = _mode_width(p.mode, E)
        field = ((r >> _U64(24)) % _U64(2 * w + 1)).astype(np.int64) + (int(center) - w)
        np.clip(field, 0, _max_normal_field(fmt), out=field)
        sign = (r & _ONE) << em
        bits = sign | (field.astype(np.uint64) << _U64(M)) | ((r >> _ONE) & _U64((1 << M) - 1))
        if p.mode >= 4:  # 1/4 signed zeros (lower priority than specials)
            bits = np.where(((r >> _U64(58)) & _U64(3)) == _U64(0), sign, bits)
        if p.specials:
            sel = (r >> _U64(52)) & _U64(7)
            sgn = (r >> _U64(51)) & _ONE
            bits = np.where((r >> _U64(60)) == _U64(0), _SPECIAL_TABLES[fmt][sgn, sel], bits)
    if fmt == 1:  # tf32: format bits in [31:13], junk in [12:0]
        bits = ((bits << _U64(13)) | ((r >> _S32) & _U64(0x1FFF))) & _M32
    return bits


def _gen_int32(r: np.ndarray, mode: int) -> np.ndarray:
    """gen_int32 on a uint64 array r; result uint64 holding the uint32 bits."""
    m = int(mode) & 3
    if m == 0:
        return r & _M32
    if m == 1:  # int32(r % 65536) - 32768
        return ((r % _U64(65536)) + _U64((1 << 32) - 32768)) & _M32
    if m == 2:  # near INT32_MAX or INT32_MIN
        lo = r % _U64(4096)
        return np.where(((r >> _U64(40)) & _ONE) != _U64(0), _U64(0x7FFFFFFF) - lo, _U64(0x80000000) + lo)
    return ((r % _U64(1 << 24)) + _U64((1 << 32) - (1 << 23))) & _M32  # int32(r % 2^24) - 2^23


def _gen_elem(r: np.ndarray, fmt: int, center: int, p: CaseParams) -> np.ndarray:
    if fmt <= 5:
        return _gen_float(r, fmt, center, p)
    return r & _U64(0xFF)  # s8, u8, b1 (a byte of bits)


def _as_r(r) -> np.ndarray:
    r = as_array(r, "r")
    if r.size > MAX_ELEMENTS:
        raise TcemuError("r", f"{r.size:,} words exceed the {MAX_ELEMENTS:,} limit")
    if r.dtype != np.uint64:
        if r.dtype.kind not in "iu":
            raise TcemuError("r", f"expected integer (uint64) random words, got {r.dtype}")
        r = r.astype(np.uint64)
    return r


def gen_float(r, fmt: int, center: int, params: CaseParams) -> np.ndarray:
    """The kernel's gen_float, elementwise on uint64 words r: uint32 bit patterns of format `fmt` (0..5)."""
    fmt = as_int(fmt, "fmt", 0, len(FMTS) - 1)
    return _gen_float(_as_r(r), fmt, _center(center, fmt), _params(params)).astype(np.uint32)


def gen_int32(r, mode: int) -> np.ndarray:
    """The kernel's gen_int32, elementwise on uint64 words r: uint32 (two's complement s32) values."""
    return _gen_int32(_as_r(r), as_int(mode, "mode", 0, 5)).astype(np.uint32)


def gen_elem(r, fmt: int, center: int, params: CaseParams) -> np.ndarray:
    """The kernel's gen_elem (operand element bits; formats > 5 give the low byte), as uint32."""
    fmt = as_int(fmt, "fmt", 0, len(FORMAT_IDS) - 1)
    if fmt <= 5:
        center = _center(center, fmt)
    return _gen_elem(_as_r(r), fmt, center, _params(params)).astype(np.uint32)


def _center(center, fmt) -> int:
    return as_int(center, "center", 0, _max_normal_field(fmt))


def _params(params) -> CaseParams:
    if not isinstance(params, CaseParams):
        raise TcemuError("params", f"must be a CaseParams (seeds.case_params), got {show(params)}")
    as_int(params.mode, "params.mode", 0, 5)
    as_int(params.specials, "params.specials", 0, 1)
    return params


# ---- per-case inputs ----

def _kind(kind) -> int:
    if isinstance(kind, (tuple, list)):
        key = tuple(kind)
        if key not in NUMERICS_KINDS:
            raise TcemuError("kind", f"unknown numerics kind {show(kind)}")
        return NUMERICS_KINDS.index(key)
    if isinstance(kind, bool) or not isinstance(kind, (int, np.integer)) or not 0 <= int(kind) < len(NUMERICS_KINDS):
        raise TcemuError("kind", f"kind must be an index 0..{len(NUMERICS_KINDS) - 1} or a NUMERICS_KINDS tuple, got {show(kind)}")
    return int(kind)


def _step(step) -> int:
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or not 0 <= int(step) < (1 << 27):
        raise TcemuError("step", f"step must be a non-negative integer, got {show(step)}")
    return int(step)


def _which(which) -> str:
    w = which.upper() if isinstance(which, str) else None
    if w not in ("A", "B"):
        raise TcemuError("which", f"which must be 'A' or 'B', got {show(which)}")
    return w


def _count(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 < int(value) <= (1 << 20):
        raise TcemuError(name, f"{name} must be a positive integer, got {show(value)}")
    return int(value)


def kind_formats(kind) -> KindFormats:
    """KF[kind] of the kernel."""
    return KIND_FORMATS[_kind(kind)]


def fill_k(kind) -> int:
    """Elements per row that fill_operand generates: the instruction K, except b1 (32 bytes of 8 bits)."""
    bits = kind_formats(kind).bits
    return 32 if bits == 1 else 256 // bits


def instruction_k(kind) -> int:
    """K of the wgmma instruction in elements (tf32 8, 16-bit 16, 8-bit 32, b1 256)."""
    bits = kind_formats(kind).bits
    return 256 // bits


def case_params_formats(seed: int, fa: int, fb: int, fc: int) -> CaseParams:
    """The kernel's case_params(seed, fa, fb, fc) on format ids."""
    fa = as_int(fa, "fa", 0, len(FORMAT_IDS) - 1)
    fb, fc = (as_int(f, name, 0, len(FMTS) - 1 if fa <= 5 else len(FORMAT_IDS) - 1)
              for f, name in ((fb, "fb"), (fc, "fc")))
    q = int(rnd(seed, STREAM_PARAMS, 0))
    mode = q % 6
    specials = int(((q >> 8) & 3) == 0)
    ca = cb = cc = 0
    if fa <= 5:
        a, b, c = FMTS[fa], FMTS[fb], FMTS[fc]
        ca = 1 + ((q >> 16) & 0xFF) % _max_normal_field(fa)
        cb = 1 + ((q >> 24) & 0xFF) % _max_normal_field(fb)
        ec = (ca - a[2]) + (cb - b[2]) + (q >> 32) % 9 - 4 + c[2]
        cc = min(max(ec, 1), _max_normal_field(fc))
    return CaseParams(mode, specials, ca, cb, cc)


def case_params(seed: int, kind) -> CaseParams:
    """The kernel's case_params with the formats of `kind` (index into NUMERICS_KINDS, or the tuple)."""
    kf = kind_formats(kind)
    return case_params_formats(seed, kf.fa, kf.fb, kf.fc)


def _operand_dtype(bits: int):
    return np.uint32 if bits == 32 else np.uint16 if bits == 16 else np.uint8


def _operand_values(seed, kind, step, which, rows):
    k = _kind(kind)
    kf, p = KIND_FORMATS[k], case_params(seed, k)
    rows, K = _count(rows, "rows"), fill_k(k)
    w = _which(which)
    fmt, center = (kf.fa, p.ca) if w == "A" else (kf.fb, p.cb)
    r = rnd(seed, operand_stream(step, w), np.arange(rows * K, dtype=np.uint64))
    return _gen_elem(r, fmt, center, p).reshape(rows, K), kf.bits


def operand_bits(seed: int, kind, step: int, which: str, rows: int) -> np.ndarray:
    """Raw element bits of the shared-memory operand A (stream 16*step) or B (16*step + 1), (rows, K) in
    logical (row, k) order, element index row*K + k as fill_operand generates it. dtype: uint32 for tf32
    (the whole container, junk low 13 bits included), uint16 for f16/bf16, uint8 for 8-bit types.
    b1: (rows, 32) uint8, the raw bytes of each row's 32-byte K extent (bit j of byte kb is k = 8*kb + j
    if the hardware reads bits LSB first)."""
    v, bits = _operand_values(seed, kind, step, which, rows)
    return v.astype(_operand_dtype(bits))


def operand_smem(seed: int, kind, step: int, which: str, rows: int, mn_major: bool = False) -> np.ndarray:
    """The rows*32 bytes fill_operand writes from its `off`: K-major without swizzle (LBO 128, SBO 256), or
    for 16-bit kinds MN-major without swizzle (SBO 128, LBO rows/8*128). uint8, shape (rows*32,)."""
    mn_major = as_bool(mn_major, "mn_major")
    v, bits = _operand_values(seed, kind, step, which, rows)
    rows, K = v.shape
    eb = 1 if bits == 1 else bits // 8
    r = np.arange(rows)[:, None]
    k = np.arange(K)[None, :]
    if mn_major:
        if bits != 16:
            raise TcemuError("mn_major", "the capture kernel writes MN-major operands only for 16-bit kinds")
        if rows % 8:
            raise TcemuError("rows", f"rows must be a multiple of 8, got {rows}")
        addr = (r // 8) * 128 + (k % 8) * 16 + (k // 8) * (rows // 8) * 128 + (r % 8) * 2
    else:
        if rows % 8:
            raise TcemuError("rows", f"rows must be a multiple of 8, got {rows}")
        kb = k * eb
        addr = (r // 8) * 256 + (r % 8) * 16 + (kb // 16) * 128 + kb % 16
    img = np.zeros(rows * 32, np.uint8)
    for b in range(eb):
        img[addr + b] = ((v >> _U64(8 * b)) & _U64(0xFF)).astype(np.uint8)
    return img


def c_bits(seed: int, kind, n: int) -> np.ndarray:
    """C of the 64 x n accumulator: element (row, col) from rnd(seed, 2, row*n + col); gen_int32 for s32,
    gen_float with centre cc otherwise. (64, n), uint32 for f32/s32, uint16 for f16."""
    k = _kind(kind)
    kf, p = KIND_FORMATS[k], case_params(seed, k)
    n = _count(n, "n")
    r = rnd(seed, STREAM_C, np.arange(64 * n, dtype=np.uint64))
    if kf.fc == FORMAT_IDS["s32"]:
        v = _gen_int32(r, p.mode).astype(np.uint32)
    else:
        v = _gen_float(r, kf.fc, p.cc, p).astype(np.uint16 if kf.fc == FORMAT_IDS["f16"] else np.uint32)
    return v.reshape(64, n)


def a_register_bits(seed: int, kind, step: int) -> np.ndarray:
    """Raw A registers of the register-A forms, (128 threads, 4) uint32: register i of thread t packs
    elements e = 0..per-1 from rnd(seed, 16*step + 4, (t*4 + i)*per + e) into bits [bits*e, bits*(e+1));
    tf32: one 32-bit container per register; b1: the low 32 bits of rnd itself."""
    k = _kind(kind)
    kf, p = KIND_FORMATS[k], case_params(seed, k)
    per = 1 if kf.bits == 1 else 32 // kf.bits
    idx = np.arange(128 * 4 * per, dtype=np.uint64).reshape(128, 4, per)
    r = rnd(seed, register_a_stream(step), idx)
    if kf.bits == 1:
        regs = (r & _M32)[..., 0]
    elif kf.bits >= 32:
        regs = (_gen_elem(r, kf.fa, p.ca, p) & _M32)[..., 0]
    else:
        v = _gen_elem(r, kf.fa, p.ca, p) & _U64((1 << kf.bits) - 1)
        shifts = (np.arange(per, dtype=np.uint64) * _U64(kf.bits))
        regs = np.bitwise_or.reduce(v << shifts, axis=2) & _M32
    return regs.astype(np.uint32)
