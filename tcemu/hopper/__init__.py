"""Hopper (sm_90a) tensor-core instructions: wgmma.mma_async and its structured-sparse form."""
from ..core.lazy import lazy

__getattr__, __dir__ = lazy(__name__)   # tcemu.hopper.<submodule> without importing it first
