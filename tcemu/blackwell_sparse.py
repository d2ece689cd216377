"""`tcemu.blackwell_sparse` is tcemu.blackwell.sparse: this name is kept for users' imports (the same module object)."""
import sys

from .blackwell import sparse as _module

sys.modules[__name__] = _module
