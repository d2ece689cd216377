"""The tensor core's arithmetic: element types, number formats, the fused dot-product unit and the accumulator chains of tcemu.matmul."""
from ..core.lazy import lazy

__getattr__, __dir__ = lazy(__name__)   # tcemu.arith.<submodule> without importing it first
