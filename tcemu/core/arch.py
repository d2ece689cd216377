"""Per-architecture constants."""
from .errors import TcemuError
from .validate import show

# Shared-memory window per CTA as the descriptors address it (bytes).
# sm90: 228 KiB (CUDA Programming Guide, compute capability 9.0); dynamic shared
# memory started at 0x400 in our captures (traces/*.npz, meta "smem_base").
SMEM_WINDOW = {"sm90": 228 * 1024, "sm100": 228 * 1024,   # sm100: 228 KiB per SM (CUDA guide, cc 10.0)
               "sm103": 228 * 1024}                       # sm103 (Blackwell Ultra, cc 10.3): as cc 10.0 (CUDA guide)

ARCHES = tuple(SMEM_WINDOW)
# Blackwell: UMMA descriptors, tcgen05. sm103 adds K = 96 for kind::mxf4* and LBO mode 1 of the descriptor
# (PTX 9.7.16.2.1.1, 9.7.16.4.1.1); everything else is sm100's.
BLACKWELL = ("sm100", "sm103")
# tcgen05.mma's .kind qualifiers (PTX 9.7.16.10.9, Table 39): here, where the command line reads them without
# loading the models; blackwell/forms.py holds the rest of the instruction's legal forms
TCGEN05_KINDS = ("tf32", "f16", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4")


def is_blackwell(arch) -> bool:
    return arch in BLACKWELL


def check_arch(arch: str) -> str:
    if not isinstance(arch, str) or arch not in SMEM_WINDOW:
        raise TcemuError("arch", f"{show(arch)} is not supported; expected one of {', '.join(ARCHES)}")
    return arch
