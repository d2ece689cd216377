"""tcemu.matmul: the exact bits of a whole GEMM as a tensor-core kernel computes it (tcemu.gemm.engine), with
output tiles over a dask cluster as an option (tcemu.gemm.distributed)."""
from .engine import matmul
from .plan import BlockScales, Plan, plan_matmul

__all__ = ["BlockScales", "Plan", "matmul", "plan_matmul"]
