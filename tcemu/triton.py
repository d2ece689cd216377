"""`tcemu.triton` is tcemu.frontends.triton: this name is kept for users' imports (the same module object)."""
import sys

from .frontends import triton as _module

sys.modules[__name__] = _module
