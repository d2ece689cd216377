"""tcemu.ptx: run the PTX of whole sm_90a / sm_100a kernels on the CPU.

The interpreter is built on tcemu's instruction models (wgmma, tcgen05_mma, tma_load, SharedMemory) and is
never imported by them.
"""

from .errors import (BudgetExceeded, Deadlock, HazardError, KernelFault, MemoryFault, PtxError, PtxLimit,
                     PtxSyntaxError, PtxUnsupported, WgmmaSerializedWarning)
from .module import Module, Param, load
from .texture import surface_object, texture_object

__all__ = ["load", "Module", "Param", "texture_object", "surface_object", "PtxError", "PtxSyntaxError", "PtxUnsupported", "KernelFault", "MemoryFault",
           "HazardError", "Deadlock", "PtxLimit", "BudgetExceeded", "WgmmaSerializedWarning"]
