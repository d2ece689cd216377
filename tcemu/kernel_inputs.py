"""`tcemu.kernel_inputs` is tcemu.traces.inputs: this name is kept for users' imports (the same module object)."""
import sys

from .traces import inputs as _module

sys.modules[__name__] = _module
