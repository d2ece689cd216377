"""`tcemu.banks` is tcemu.layout.banks: this name is kept for users' imports (the same module object)."""
import sys

from .layout import banks as _module

sys.modules[__name__] = _module
