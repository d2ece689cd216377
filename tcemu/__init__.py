"""tcemu: a bit-accurate CPU emulator of how NVIDIA tensor cores read shared memory and multiply."""
from .addressing import canonical_layout, core_matrix_rows, footprint, operand_addresses
from .descriptors import Finding, GmmaDescriptor, SwizzleMode, UmmaDescriptor
from .errors import DescriptorError, LayoutError, LimitError, SharedMemoryError, TcemuError, TmemError, TraceError
from .fragments import from_a_registers, from_d_registers, to_a_registers, to_d_registers
from .banks import bank_conflicts
from .smem import SharedMemory
from .swizzle import Swizzle
from .tma import tma_load, tma_placement
from .hopper import wgmma
from .sparse import wgmma_sp
from .instr import InstrDescriptor
from .tmem import TensorMemory, tmem_address
from .blackwell import tcgen05_mma
from . import check, explain  # writer-vs-reader checks; descriptors in plain words (tcemu.explain.lint)
from .check import check_operand, check_tile, suggest_descriptor

# Public submodules loaded on first use (PEP 562): they pull optional dependencies (hypothesis, pycute,
# matplotlib, triton) or are tools rather than models. `import tcemu; tcemu.traces.replay(...)` works all the same.
_LAZY_SUBMODULES = ("cli", "fuzz", "kernel_inputs", "oracle", "pictures", "ptx", "seeds", "sparse_seeds", "strategies",
                    "traces", "triton", "gemm", "chain", "gemm_trace", "distributed")
from .gemm import BlockScales, matmul

__version__ = "0.1.0"
__all__ = ["canonical_layout", "core_matrix_rows", "footprint", "operand_addresses", "Finding", "GmmaDescriptor",
           "SwizzleMode", "UmmaDescriptor", "InstrDescriptor", "DescriptorError", "LayoutError", "LimitError", "SharedMemoryError", "TcemuError", "TraceError",
           "from_a_registers", "from_d_registers", "to_a_registers", "to_d_registers", "bank_conflicts",
           "SharedMemory", "Swizzle", "tma_load", "wgmma", "wgmma_sp", "TensorMemory", "TmemError", "tmem_address", "tcgen05_mma",
           "check_operand", "suggest_descriptor", "check_tile", "tma_placement", "check", "explain", "matmul", "BlockScales"]


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'tcemu' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_SUBMODULES))
