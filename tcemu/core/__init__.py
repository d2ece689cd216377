"""The foundations every part stands on: tcemu's error types, argument checks at the public boundary, per-architecture constants."""
from .lazy import lazy

__getattr__, __dir__ = lazy(__name__)   # tcemu.core.<submodule> without importing it first
