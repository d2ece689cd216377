"""What `tcemu exec` reads from the program's ELF file before running it: which libcudart it needs (DT_NEEDED),
and whether the CUDA runtime is linked in statically (nvcc's default -cudart static), which no replacement
library can stand in for."""
import struct
from dataclasses import dataclass, field
from typing import List

MAX_ELF = 1 << 31
SHT_SYMTAB, SHT_DYNAMIC, SHT_DYNSYM = 2, 6, 11
DT_NEEDED = 1


@dataclass
class ElfInfo:
    needed: List[str] = field(default_factory=list)
    defines_register_fatbinary: bool = False   # __cudaRegisterFatBinary defined in the file itself
    has_fatbin: bool = False                    # a .nv_fatbin section (device code)

    @property
    def cudart(self):
        """The libcudart soname it needs, or None."""
        return next((n for n in self.needed if n.startswith("libcudart.so")), None)

    @property
    def static_cudart(self) -> bool:
        return self.cudart is None and (self.defines_register_fatbinary or self.has_fatbin)


def _cstr(data: bytes, off: int) -> str:
    end = data.find(b"\0", off)
    return data[off:end if end >= 0 else len(data)].decode("latin-1")


def read(path: str):
    """ElfInfo of a 64-bit little-endian ELF file, or None for anything else (a script, another format)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_ELF)
    except OSError:
        return None
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if not shoff or shentsize < 64 or shoff + shnum * shentsize > len(data):
        return None
    sections = []
    for i in range(shnum):
        name, typ, _flags, _addr, off, size, link, _info, _align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        sections.append((name, typ, off, size, link, entsize))
    info = ElfInfo()
    named = b"__cudaRegisterFatBinary\0" in data   # else no symbol table entry can name it
    strtab_off = sections[shstrndx][2] if shstrndx < len(sections) else None
    for name, typ, off, size, link, entsize in sections:
        if off + size > len(data) or link >= len(sections):
            continue
        if strtab_off is not None and _cstr(data, strtab_off + name) == ".nv_fatbin":
            info.has_fatbin = True
        strings = sections[link][2]
        if typ == SHT_DYNAMIC:
            for p in range(off, off + size - 15, 16):
                tag, val = struct.unpack_from("<qQ", data, p)
                if tag == DT_NEEDED:
                    info.needed.append(_cstr(data, strings + val))
        elif named and typ in (SHT_SYMTAB, SHT_DYNSYM) and entsize >= 24:
            for p in range(off, off + size - 23, entsize):
                st_name, _st_info, _other, shndx = struct.unpack_from("<IBBH", data, p)
                if shndx and _cstr(data, strings + st_name) == "__cudaRegisterFatBinary":
                    info.defines_register_fatbinary = True
    return info
