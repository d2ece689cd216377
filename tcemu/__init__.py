"""tcemu: a bit-accurate CPU emulator of how NVIDIA tensor cores read shared memory and multiply."""
from .addressing import canonical_layout, core_matrix_rows, footprint, operand_addresses
from .descriptors import Finding, GmmaDescriptor, SwizzleMode
from .errors import DescriptorError, LayoutError, SharedMemoryError, TcemuError, TraceError
from .swizzle import Swizzle

__version__ = "0.1.0"
