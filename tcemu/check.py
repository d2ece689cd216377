"""`tcemu.check` is tcemu.tools.check: this name is kept for users' imports (the same module object)."""
import sys

from .tools import check as _module

sys.modules[__name__] = _module
