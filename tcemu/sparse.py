"""`tcemu.sparse` is tcemu.hopper.sparse: this name is kept for users' imports (the same module object)."""
import sys

from .hopper import sparse as _module

sys.modules[__name__] = _module
