"""Where operands live: swizzle atoms, matrix descriptors, operand addressing, shared memory, register fragments, bank conflicts, TMA tiles."""
from ..core.lazy import lazy

__getattr__, __dir__ = lazy(__name__)   # tcemu.layout.<submodule> without importing it first
