"""The PTX in a CUDA fatbinary (what nvcc embeds in .nv_fatbin and hands __cudaRegisterFatBinary).

A fatbinary is a 16-byte header (magic 0xBA55ED50, version, header size, payload size) then images, each a
header and its payload:

    offset size  field                offset size  field
    0      2     kind (1 PTX, 2 ELF)  24     2+2  minor, major (PTX ISA version for PTX images)
    2      2     version              28     4    arch (90 for sm_90 / sm_90a, 100 for sm_100a ...)
    4      4     header size          40     8    flags: 0x2000 LZ4-compressed, 0x8000 zstd-compressed
    8      8     payload size         56     8    uncompressed size (compressed images)
    16     4     compressed size

nvcc 13 compresses PTX with zstd by default (-compress-mode=default/size/balance), LZ4 with
-compress-mode=speed, not at all with -compress-mode=none or -no-compress.
"""
import ctypes
import ctypes.util
import re
import struct
from dataclasses import dataclass
from typing import List

from .build import CudaExecError

MAGIC = 0xBA55ED50
WRAPPER_MAGIC = 0x466243B1
KIND_PTX, KIND_ELF = 1, 2
FLAG_LZ4, FLAG_ZSTD = 0x2000, 0x8000
MAX_FATBIN = 1 << 31
GENCODE = {"sm90": "-gencode=arch=compute_90a,code=[sm_90a,compute_90a]",
           "sm100": "-gencode=arch=compute_100a,code=[sm_100a,compute_100a]"}
TARGETS = {"sm90": (90, "sm_90a"), "sm100": (100, "sm_100a")}


@dataclass
class Image:
    kind: int
    arch: int
    flags: int
    payload: bytes
    size: int          # uncompressed bytes (0: not compressed)

    @property
    def what(self) -> str:
        return f"{'PTX compute' if self.kind == KIND_PTX else 'cubin sm'}_{self.arch}"


def images(data: bytes) -> List[Image]:
    """Every image of a fatbinary (one header and its images; `data` may run past it)."""
    if len(data) < 16:
        raise CudaExecError("fatbinary", f"{len(data)} bytes; a fatbinary header alone is 16")
    magic, _version, hsize, fsize = struct.unpack_from("<IHHQ", data, 0)
    if magic != MAGIC:
        raise CudaExecError("fatbinary", f"magic {magic:#x} is not a fatbinary's ({MAGIC:#x})")
    out, p, end = [], hsize, min(len(data), hsize + fsize)
    while p + 64 <= end:
        kind, _v, ehs, size = struct.unpack_from("<HHIQ", data, p)
        if ehs < 64 or p + ehs + size > end:
            raise CudaExecError("fatbinary", f"image at byte {p} runs past the fatbinary ({ehs} + {size} bytes)")
        arch, = struct.unpack_from("<I", data, p + 28)
        flags, = struct.unpack_from("<Q", data, p + 40)
        usize, = struct.unpack_from("<Q", data, p + 56)
        csize, = struct.unpack_from("<I", data, p + 16)
        stored = csize if flags & (FLAG_LZ4 | FLAG_ZSTD) and 0 < csize <= size else size  # the rest is padding
        out.append(Image(kind, arch, flags, bytes(data[p + ehs:p + ehs + stored]), usize))
        p += ehs + size
    return out


def read_at(address: int) -> bytes:
    """The fatbinary whose header is at `address` in this process (what the wrapper's data pointer names)."""
    head = ctypes.string_at(address, 16)
    magic, _v, hsize, fsize = struct.unpack("<IHHQ", head)
    if magic != MAGIC or hsize + fsize > MAX_FATBIN:
        raise CudaExecError("fatbinary", f"no fatbinary at {address:#x} (magic {magic:#x})")
    return ctypes.string_at(address, hsize + fsize)


def lz4_block(src: bytes, size: int) -> bytes:
    """LZ4 block format: tokens of (literal length, match length - 4), then literals, a 2-byte offset."""
    out = bytearray()
    i, n = 0, len(src)
    while i < n:
        token = src[i]
        i += 1
        lit = token >> 4
        if lit == 15:
            while True:
                b = src[i]
                i += 1
                lit += b
                if b != 255:
                    break
        out += src[i:i + lit]
        i += lit
        if i >= n or len(out) >= size:
            break
        off = src[i] | src[i + 1] << 8
        i += 2
        m = (token & 15) + 4
        if token & 15 == 15:
            while True:
                b = src[i]
                i += 1
                m += b
                if b != 255:
                    break
        if off == 0 or off > len(out):
            raise CudaExecError("fatbinary", "corrupt LZ4 image (a match before the start)")
        start = len(out) - off
        if off >= m:
            out += out[start:start + m]
        else:  # overlapping: the run repeats with period `off`
            chunk = bytes(out[start:])
            out += (chunk * (m // off + 1))[:m]
    return bytes(out[:size])


def zstd(src: bytes, size: int) -> bytes:
    try:
        from compression import zstd as z  # Python 3.14+; imported here because it is optional
        return z.decompress(src)
    except ImportError:
        pass
    name = ctypes.util.find_library("zstd") or "libzstd.so.1"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        raise CudaExecError("fatbinary", "the program's PTX is zstd-compressed (nvcc's default) and libzstd.so.1 is "
                                         "not installed: install libzstd1, or rebuild with -compress-mode=none") \
            from None
    lib.ZSTD_decompress.restype = ctypes.c_size_t
    lib.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
    buf = ctypes.create_string_buffer(size)
    got = lib.ZSTD_decompress(buf, size, src, len(src))
    if lib.ZSTD_isError(got):
        raise CudaExecError("fatbinary", "corrupt zstd-compressed PTX image")
    return buf.raw[:got]


def ptx_text(image: Image) -> str:
    data = image.payload
    if image.flags & FLAG_ZSTD:
        data = zstd(data, image.size)
    elif image.flags & FLAG_LZ4:
        data = lz4_block(data, image.size)
    return data.split(b"\0", 1)[0].decode("utf-8", "replace")


def target(text: str) -> str:
    m = re.search(r"^\s*\.target\s+([\w]+)", text, re.M)
    return m.group(1) if m else "?"


def runs_on(tgt: str, arch: str) -> bool:
    """Whether PTX of `.target tgt` runs on the emulated GPU: a plain sm_XX up to its number, an arch-specific
    sm_XXa / sm_XXf only on XX itself (PTX ISA 5.1, the sm_90a / sm_100a feature sets)."""
    m = re.fullmatch(r"sm_(\d+)([af]?)", tgt)
    if not m:
        return False
    num, have = int(m.group(1)), TARGETS[arch][0]
    return num == have if m.group(2) else num <= have


def choose_ptx(data: bytes, arch: str, kernel: str) -> str:
    """The PTX text of the fatbinary that the emulated GPU runs: the newest target it accepts."""
    found, best = [], None
    for im in images(data):
        if im.kind != KIND_PTX:
            found.append(im.what)
            continue
        text = ptx_text(im)
        tgt = target(text)
        found.append(f"PTX {tgt}")
        if runs_on(tgt, arch):
            rank = (int(re.sub(r"\D", "", tgt) or 0), tgt.endswith(("a", "f")))
            if best is None or rank > best[0]:
                best = (rank, text)
    if best is None:
        have = ", ".join(found) or "nothing"
        raise CudaExecError("fatbinary", f"kernel {kernel}: the program carries no PTX that tcemu's {TARGETS[arch][1]} "
                                         f"can run (its fatbinary holds: {have}); tcemu runs PTX, not SASS: rebuild "
                                         f"with {GENCODE[arch]}")
    return best[1]
