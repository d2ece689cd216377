"""Per-architecture constants."""
from .errors import TcemuError
from .validate import show

# Shared-memory window per CTA as the descriptors address it (bytes).
# sm90: 228 KiB (CUDA Programming Guide, compute capability 9.0); dynamic shared
# memory started at 0x400 in our captures (traces/*.npz, meta "smem_base").
SMEM_WINDOW = {"sm90": 228 * 1024, "sm100": 228 * 1024}  # sm100: 228 KiB per SM (CUDA guide, cc 10.0)

ARCHES = tuple(SMEM_WINDOW)


def check_arch(arch: str) -> str:
    if not isinstance(arch, str) or arch not in SMEM_WINDOW:
        raise TcemuError("arch", f"{show(arch)} is not supported; expected one of {', '.join(ARCHES)}")
    return arch
