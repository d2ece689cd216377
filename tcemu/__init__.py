"""tcemu: a bit-accurate CPU emulator of how NVIDIA tensor cores read shared memory and multiply."""
from .addressing import canonical_layout, core_matrix_rows, footprint, operand_addresses
from .descriptors import Finding, GmmaDescriptor, SwizzleMode, UmmaDescriptor
from .errors import DescriptorError, LayoutError, SharedMemoryError, TcemuError, TmemError, TraceError
from .fragments import from_a_registers, from_d_registers, to_a_registers, to_d_registers
from .banks import bank_conflicts
from .smem import SharedMemory
from .swizzle import Swizzle
from .tma import tma_load
from .hopper import wgmma
from .sparse import wgmma_sp
from .instr import InstrDescriptor
from .tmem import TensorMemory, tmem_address
from .blackwell import tcgen05_mma
from .gemm import BlockScales, matmul

__version__ = "0.1.0"
__all__ = ["canonical_layout", "core_matrix_rows", "footprint", "operand_addresses", "Finding", "GmmaDescriptor",
           "SwizzleMode", "UmmaDescriptor", "InstrDescriptor", "DescriptorError", "LayoutError", "SharedMemoryError", "TcemuError", "TraceError",
           "from_a_registers", "from_d_registers", "to_a_registers", "to_d_registers", "bank_conflicts",
           "SharedMemory", "Swizzle", "tma_load", "wgmma", "wgmma_sp", "TensorMemory", "TmemError", "tmem_address", "tcgen05_mma",
           "matmul", "BlockScales"]
