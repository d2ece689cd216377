"""`tcemu.launches` is tcemu.traces.launches: this name is kept for users' imports (the same module object)."""
import sys

from .traces import launches as _module

sys.modules[__name__] = _module
