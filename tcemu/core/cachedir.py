"""Where tcemu keeps what it builds or decodes once per machine: ~/.cache/tcemu (TCEMU_CACHE moves it). Its users:
the CUDA runtime library of `tcemu exec` (frontends/cuda/build.py) and the decoded MUFU tables (sfu/tables.py)."""
import os


def cache_root() -> str:
    return os.environ.get("TCEMU_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "tcemu")
