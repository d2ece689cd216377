"""tcemu.matmul over a dask.distributed cluster: output tiles as tasks (optional: pip install 'tcemu[dask]').

Each task computes one (rows x cols) tile of D with the whole K: its rows of A, its columns of B (and of C and
of the scales) travel with it, and the worker runs tcemu.matmul on them. Output elements are independent, so
the tiles' bits are the whole GEMM's bits whatever the tiling or the order in which workers finish.
"""
import numpy as np

from .errors import TcemuError

DEFAULT_TILE = (1024, 1024)


def _tile_task(a, b, c, scales, kw):
    """One output tile, on a worker."""
    from .gemm import matmul
    return matmul(a, b, c=c, scales=scales, **kw)


def _client(scheduler):
    try:
        from distributed import Client
    except ImportError:
        raise TcemuError("scheduler", "spreading tiles over a cluster needs dask.distributed: "
                                      "pip install 'tcemu[dask]'") from None
    if isinstance(scheduler, Client):
        return scheduler, False
    if isinstance(scheduler, str):
        try:
            return Client(scheduler, timeout=30), True
        except (OSError, TimeoutError, ValueError) as e:
            raise TcemuError("scheduler", f"cannot reach the dask scheduler at {scheduler!r} ({e})") from None
    raise TcemuError("scheduler", f"a dask scheduler address ('tcp://host:8786') or a distributed.Client, "
                                  f"got {type(scheduler).__name__}")


def _tile_shape(tile, plan, scales):
    tm, tn = DEFAULT_TILE if tile is None else tile if isinstance(tile, tuple) and len(tile) == 2 else (0, 0)
    for v in (tm, tn):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise TcemuError("tile", f"a pair of positive integers (rows, cols) per task, got {tile!r}")
    from .gemm import BlockScales
    if scales is not None and (isinstance(scales, BlockScales) or plan.arch == "sm90"):
        sc = scales if isinstance(scales, BlockScales) else BlockScales(*scales)
        if tm % sc.a_block or tn % sc.b_block:
            raise TcemuError("tile", f"({tm}, {tn}) must be whole scale blocks ({sc.a_block} rows of A, "
                                     f"{sc.b_block} columns of B)")
    return int(tm), int(tn)


def _slice_scales(scales, plan, r0, r1, c0, c1):
    if scales is None:
        return None
    from .gemm import BlockScales
    if plan.arch == "sm100" and not isinstance(scales, BlockScales):  # mx scale bytes: per row of A, column of B
        return (scales[0][r0:r1], scales[1][c0:c1])
    sc = scales if isinstance(scales, BlockScales) else BlockScales(*scales)
    return BlockScales(sc.a[r0 // sc.a_block:-(-r1 // sc.a_block)], sc.b[c0 // sc.b_block:-(-c1 // sc.b_block)],
                       sc.a_block, sc.b_block, sc.block_k)


def run_tiles(scheduler, A, B, c, scales, kw, tile, report, plan):
    """D of tcemu.matmul (A, B raw bits, already validated) computed as tasks on a dask cluster."""
    from distributed import as_completed
    from .gemm import _OUT
    client, own = _client(scheduler)
    tm, tn = _tile_shape(tile, plan, scales)
    M, K = A.shape
    N = B.shape[1]
    out = np.empty((M, N), _OUT[plan.out_dtype])
    try:
        futures = {}
        for r0 in range(0, M, tm):
            for c0 in range(0, N, tn):
                r1, c1 = min(M, r0 + tm), min(N, c0 + tn)
                ct = c[r0:r1, c0:c1] if c is not None else None
                f = client.submit(_tile_task, np.ascontiguousarray(A[r0:r1]), np.ascontiguousarray(B[:, c0:c1]), ct,
                                  _slice_scales(scales, plan, r0, r1, c0, c1), kw, pure=False)
                futures[f] = (r0, r1, c0, c1)
        for f in as_completed(list(futures)):
            r0, r1, c0, c1 = futures[f]
            out[r0:r1, c0:c1] = f.result()
            report.add((r1 - r0) * (c1 - c0) * K)
    finally:
        if own:
            client.close()
    return out
