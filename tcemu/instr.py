"""`tcemu.instr` is tcemu.blackwell.instr: this name is kept for users' imports (the same module object)."""
import sys

from .blackwell import instr as _module

sys.modules[__name__] = _module
