"""`tcemu.smem` is tcemu.layout.smem: this name is kept for users' imports (the same module object)."""
import sys

from .layout import smem as _module

sys.modules[__name__] = _module
