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


# The fixture makers whose sha256 their fixtures pin ("rebuilt since the source last changed"). Issue 22 changed them
# without changing what they make: their tcemu imports (tcemu.triton -> tcemu.frontends.triton, 94d4d05) and, in the
# move to scripts/fixtures/, their paths (the repository root one folder further up, scripts/... paths, usage lines).
# recorded path: (the digest their fixtures recorded, the digest of the file as issue 22 left it); `git diff
# 3a10df1 -- scripts/` shows the edits. Any later edit gives another digest, and the fixtures must be rebuilt.
RELOCATED_SOURCES = {
    "scripts/cutlass_kernels.py": ("ccfe1902a9335b1c7dc38777840635be61e9cc3894c5834dc1dfa44130d0d3ef",
                                   "baa75bef9ebc06a760c5d32b30ac0d5c97efe7e9028676a39e883bebcf2c7c12"),
    "scripts/cutlass_sfu_kernels.py": ("c33209b46f440153ea50e4b4b69ab6ff8c7540f2c520a28c24bb6d569161c989",
                                       "566174fcf6baea4b2fbe7f09706f5b6e24fa89afac9b3393bcab9c64420ca4f1"),
    "scripts/triton_kernels.py": ("8d3607f522825481c6a14b991da7b800a68cfcdfc38d6c1306d8dc8429071285",
                                  "a44b12d90115d1ff923b6f65d77f4388a94f1b2f6ef1f4f5145a2af7f1f13db4"),
    "scripts/triton_kernels_sm100.py": ("4888f4199ab097fa699c3a7040543416bb541b98ae24b3170062cd9ead8844da",
                                        "46cb11dca010ffc11be7cbcdd2ecac921c9cc08ebd072a6d5fe615958bf55783"),
    "scripts/triton_sfu_kernels.py": ("f2060a01c2b3be6d82f17a83a5ca417b2a282814ee56be68cbd3121c3eaaa85f",
                                      "d563729696f89302a960d8db21f5316b17208b32f723cfcf1824cbd6b531a003"),
}


def source_is_unchanged(recorded: str, digest: str) -> bool:
    """Whether the source a fixture recorded (repository path and sha256 when it was made) is unchanged: the file's
    digest now is the recorded one, or the pair is a RELOCATED_SOURCES entry (issue 22's import and path edits)."""
    import hashlib
    with open(current_path(recorded), "rb") as fh:
        now = hashlib.sha256(fh.read()).hexdigest()
    return now == digest or RELOCATED_SOURCES.get(recorded) == (digest, now)
