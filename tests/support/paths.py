"""Where things are, for every test: the repository root, tests/fixtures, traces/ and scripts/ (absolute paths,
whatever folder the test sits in and whatever the working directory), and where a recorded path lives now."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.join(ROOT, "tests")
SUPPORT = os.path.join(TESTS, "support")
FIXTURES = os.path.join(TESTS, "fixtures")
PTX_FIXTURES = os.path.join(FIXTURES, "ptx")
TRACES = os.path.join(ROOT, "traces")
EXAMPLES = os.path.join(ROOT, "examples")
SCRIPTS = os.path.join(ROOT, "scripts")
CAPTURE = os.path.join(SCRIPTS, "capture")          # GPU capture drivers, their .cu / .h and the .inc files
FIXTURE_MAKERS = os.path.join(SCRIPTS, "fixtures")  # the scripts that make tests/fixtures, and their C++ sources
CHECKS = os.path.join(SCRIPTS, "checks")            # differential checks against external tools (ptxas)

# Issue 22 moved the flat scripts/ into subfolders. Traces and fixtures keep the paths they were made with (their
# provenance is history): current_path() maps such a recorded path to where the file is now.
MOVED_SCRIPTS = {
    "capture": ("banks_targeted.py", "build_sfu_tables.py", "capture_addresses.cu", "capture_addresses.py",
                "capture_atomics.cu", "capture_atomics.py", "capture_banks.cu", "capture_banks.py", "capture_cutlass.py",
                "capture_edges.cu", "capture_edges.inc", "capture_edges.py", "capture_kernels.py", "capture_numerics.cu",
                "capture_numerics.py", "capture_ptx_alu.cu", "capture_ptx_alu.py", "capture_sfu.cu", "capture_sfu2.cu",
                "capture_sfu_kernels.py", "capture_sparse.cu", "capture_sparse.py", "capture_tma.cu", "capture_tma.py",
                "capture_torch_gemm.py", "gen_numerics_wrappers.py", "gen_probe_wrappers.py", "gen_sparse_wrappers.py",
                "pack_sfu.py", "prove_sfu.cu", "prove_sfu.py", "ptx_alu_ops.inc", "sfu_proof_trace.py", "sparse_gen.h",
                "wgmma_numerics_wrappers.inc", "wgmma_probe_wrappers.inc", "wgmma_sparse_wrappers.inc"),
    "fixtures": ("cute_sm100", "cute_sm100_kernels.py", "cutlass", "cutlass_kernels.py", "cutlass_sfu_kernels.py",
                 "mmasim_crosscheck.py", "triton_kernels.py", "triton_kernels_sm100.py", "triton_sfu_kernels.py"),
    "bench": ("cutlass_bench_record.py", "scaling.py"),
    "checks": ("ptx_mutants.py",),
}
_MOVES = {f"scripts/{name}": f"scripts/{folder}/{name}" for folder, names in MOVED_SCRIPTS.items() for name in names}


def current_path(recorded: str) -> str:
    """The absolute path now of a repository-relative path recorded in a trace or fixture ("scripts/capture_tma.cu",
    "scripts/cutlass/record.h", "tcemu/traces/inputs.py")."""
    parts = recorded.split("/")
    moved = _MOVES.get("/".join(parts[:2]))
    return os.path.join(ROOT, *(moved.split("/") + parts[2:] if moved else parts))
