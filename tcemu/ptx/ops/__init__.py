"""PTX instruction semantics, one module per family (integer, floating, data, memory_ops, cp_async, control, wgmma, wmma,
mbarrier, bulk, calls, tcgen05, texture, video). Each family registers its opcodes in registry.py when imported; importing this
package imports them all, so `lookup` here finds every opcode. common.py holds what the families share."""
from . import (bulk, calls, control, cp_async, data, floating, integer, mbarrier, memory_ops,  # noqa: F401
               mma_sync, tcgen05, texture, video, wgmma, wmma)
from .registry import OPCODES, lookup, register  # noqa: F401
