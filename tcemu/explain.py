"""`tcemu.explain` is tcemu.tools.explain: this name is kept for users' imports (the same module object)."""
import sys

from .tools import explain as _module

sys.modules[__name__] = _module
