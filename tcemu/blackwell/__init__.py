"""Blackwell (sm_100a) tensor-core instructions: tcgen05.mma (dense, sparse, block-scaled), instruction descriptors, tensor memory, collector buffers."""
from ..core.lazy import lazy

__getattr__, __dir__ = lazy(__name__)   # tcemu.blackwell.<submodule> without importing it first
