"""`tcemu.collector` is tcemu.blackwell.collector: this name is kept for users' imports (the same module object)."""
import sys

from .blackwell import collector as _module

sys.modules[__name__] = _module
