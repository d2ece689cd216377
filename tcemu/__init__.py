"""tcemu: a bit-accurate CPU emulator of how NVIDIA tensor cores read shared memory and multiply."""
from .layout.addressing import canonical_layout, core_matrix_rows, footprint, operand_addresses
from .layout.descriptors import Finding, GmmaDescriptor, SwizzleMode, UmmaDescriptor
from .core.errors import DescriptorError, LayoutError, LimitError, SharedMemoryError, TcemuError, TmemError, TraceError
from .layout.fragments import from_a_registers, from_d_registers, to_a_registers, to_d_registers
from .layout.banks import bank_conflicts
from .layout.smem import SharedMemory
from .layout.swizzle import Swizzle
from .layout.tma import tma_load, tma_placement
from .hopper.wgmma import wgmma
from .hopper.sparse import wgmma_sp
from .blackwell.instr import InstrDescriptor
from .blackwell.tmem import TensorMemory, tmem_address
from .blackwell.mma import tcgen05_mma
from .tools import check, explain  # writer-vs-reader checks; descriptors in plain words (tcemu.explain.lint)
from .tools.check import check_operand, check_tile, suggest_descriptor

# Public submodules loaded on first use (PEP 562): they pull optional dependencies (hypothesis, pycute,
# matplotlib, triton) or are tools rather than models. `import tcemu; tcemu.traces.replay(...)` works all the same.
_LAZY_SUBMODULES = {"cli": "cli", "fuzz": "testing.fuzz", "kernel_inputs": "traces.inputs", "oracle": "testing.oracle",
                    "pictures": "tools.pictures", "ptx": "ptx", "seeds": "traces.seeds",
                    "sparse_seeds": "traces.sparse_seeds", "strategies": "testing.strategies", "traces": "traces",
                    "triton": "frontends.triton", "gemm": "gemm", "chain": "arith.chain",
                    "gemm_trace": "traces.kinds.gemm_outputs", "distributed": "gemm.distributed",
                    "launches": "traces.launches", "smem": "layout.smem", "banks": "layout.banks",
                    "sparse": "hopper.sparse", "instr": "blackwell.instr", "collector": "blackwell.collector",
                    "blackwell_sparse": "blackwell.sparse",
                    **{pkg: pkg for pkg in ("core", "arith", "sfu", "layout", "hopper", "blackwell", "traces",
                                            "frontends", "tools", "testing", "serve")}}
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
        return importlib.import_module(f".{_LAZY_SUBMODULES[name]}", __name__)
    raise AttributeError(f"module 'tcemu' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_SUBMODULES))
