"""Tools for kernel authors: writer-versus-reader checks, descriptors explained with lints, pictures, and `tcemu run`."""
from ..core.lazy import lazy

__getattr__, __dir__ = lazy(__name__)   # tcemu.tools.<submodule> without importing it first
