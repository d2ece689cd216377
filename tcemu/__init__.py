"""tcemu: a bit-accurate CPU emulator of how NVIDIA tensor cores read shared memory and multiply."""
# The public names, each loaded on first use (PEP 562) from the module that defines it: `import tcemu` costs
# milliseconds, so that a command that needs no model (`tcemu exec`'s launcher, `tcemu decode -h`) starts at once.
_NAMES = {"layout.addressing": "canonical_layout core_matrix_rows footprint operand_addresses",
          "layout.descriptors": "Finding GmmaDescriptor SwizzleMode UmmaDescriptor",
          "core.errors": "DescriptorError LayoutError LimitError SharedMemoryError TcemuError TmemError TraceError",
          "layout.fragments": "from_a_registers from_d_registers to_a_registers to_d_registers",
          "layout.banks": "bank_conflicts", "layout.smem": "SharedMemory", "layout.swizzle": "Swizzle",
          "layout.tma": "tma_load tma_placement", "hopper.wgmma": "wgmma", "hopper.sparse": "wgmma_sp",
          "blackwell.instr": "InstrDescriptor", "blackwell.tmem": "TensorMemory tmem_address",
          "blackwell.mma": "tcgen05_mma", "tools.check": "check_operand check_tile suggest_descriptor",
          "gemm": "BlockScales matmul"}
from .core.lazy import lazy

_ATTRIBUTES = {name: module for module, names in _NAMES.items() for name in names.split()}

# Public submodules, also loaded on first use; some pull optional dependencies (hypothesis, pycute, matplotlib,
# triton). `import tcemu; tcemu.traces.replay(...)` works all the same. check, explain: writer-vs-reader checks;
# descriptors in plain words (tcemu.explain.lint).
_LAZY_SUBMODULES = {"cli": "cli", "fuzz": "testing.fuzz", "kernel_inputs": "traces.inputs", "oracle": "testing.oracle",
                    "pictures": "tools.pictures", "ptx": "ptx", "seeds": "traces.seeds",
                    "sparse_seeds": "traces.sparse_seeds", "strategies": "testing.strategies", "traces": "traces",
                    "triton": "frontends.triton", "gemm": "gemm", "chain": "arith.chain",
                    "gemm_trace": "traces.kinds.gemm_outputs", "distributed": "gemm.distributed",
                    "launches": "traces.launches", "smem": "layout.smem", "banks": "layout.banks",
                    "sparse": "hopper.sparse", "instr": "blackwell.instr", "collector": "blackwell.collector",
                    "blackwell_sparse": "blackwell.sparse", "check": "tools.check", "explain": "tools.explain",
                    **{pkg: pkg for pkg in ("core", "arith", "sfu", "layout", "hopper", "blackwell", "traces",
                                            "frontends", "tools", "testing", "serve")}}
__version__ = "0.1.0"
__all__ = ["canonical_layout", "core_matrix_rows", "footprint", "operand_addresses", "Finding", "GmmaDescriptor",
           "SwizzleMode", "UmmaDescriptor", "InstrDescriptor", "DescriptorError", "LayoutError", "LimitError", "SharedMemoryError", "TcemuError", "TraceError",
           "from_a_registers", "from_d_registers", "to_a_registers", "to_d_registers", "bank_conflicts",
           "SharedMemory", "Swizzle", "tma_load", "wgmma", "wgmma_sp", "TensorMemory", "TmemError", "tmem_address", "tcgen05_mma",
           "check_operand", "suggest_descriptor", "check_tile", "tma_placement", "check", "explain", "matmul", "BlockScales"]


__getattr__, __dir__ = lazy(__name__, _ATTRIBUTES, _LAZY_SUBMODULES)
