"""Ways in from kernel languages: Triton (tcemu.frontends.triton, also importable as tcemu.triton)."""
from ..core.lazy import lazy

__getattr__, __dir__ = lazy(__name__)   # tcemu.frontends.<submodule> without importing it first
