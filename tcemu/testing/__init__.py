"""Testing aids: hypothesis strategies, the independent addressing oracle and the fuzzing campaign."""
from ..core.lazy import lazy

__getattr__, __dir__ = lazy(__name__)   # tcemu.testing.<submodule> without importing it first
