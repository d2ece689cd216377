"""Output tiles of a GEMM as tasks on a dask.distributed cluster (optional: pip install 'tcemu[dask]').

tcemu.matmul(scheduler=...) hands this module the function to run on each tile and each tile's arguments: the
tile's rows of A, its columns of B (and of C and of the scales), the whole K. Output elements are independent,
so the tiles' bits are the whole GEMM's bits whatever the tiling or the order in which workers finish. This
module imports nothing of tcemu's arithmetic (the function travels by reference: workers import tcemu).
"""
import numpy as np

from ..core.errors import TcemuError
from ..core.validate import show

DEFAULT_TILE = (1024, 1024)


def tile_shape(tile):
    """(rows, cols) of a task: `tile` or DEFAULT_TILE; TcemuError on anything but two positive integers."""
    tm, tn = DEFAULT_TILE if tile is None else tile if isinstance(tile, tuple) and len(tile) == 2 else (0, 0)
    for v in (tm, tn):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise TcemuError("tile", f"a pair of positive integers (rows, cols) per task, got {show(tile)}")
    return int(tm), int(tn)


def connect(scheduler):
    """(client, whether this call made it): a distributed.Client as given, or one connected to an address."""
    try:
        from distributed import Client  # optional dependency: dask.distributed
    except ImportError:
        raise TcemuError("scheduler", "spreading tiles over a cluster needs dask.distributed: "
                                      "pip install 'tcemu[dask]'") from None
    if isinstance(scheduler, Client):
        return scheduler, False
    if isinstance(scheduler, str):
        try:
            return Client(scheduler, timeout=30), True
        except (OSError, TimeoutError, ValueError) as e:
            raise TcemuError("scheduler", f"cannot reach the dask scheduler at {show(scheduler)} ({e})") from None
    raise TcemuError("scheduler", f"a dask scheduler address ('tcp://host:8786') or a distributed.Client, "
                                  f"got {type(scheduler).__name__}")


def run_tiles(scheduler, fn, out, tile, tile_args, on_done):
    """out[r0:r1, c0:c1] = fn(*args, **kwargs) for every tile, as tasks; tile_args(r0, r1, c0, c1) gives
    (args, kwargs); on_done(r0, r1, c0, c1) is called as each tile arrives."""
    from distributed import as_completed  # optional dependency: dask.distributed
    client, own = connect(scheduler)
    tm, tn = tile
    M, N = out.shape
    try:
        futures = {}
        for r0 in range(0, M, tm):
            for c0 in range(0, N, tn):
                box = (r0, min(M, r0 + tm), c0, min(N, c0 + tn))
                args, kwargs = tile_args(*box)
                futures[client.submit(fn, *args, pure=False, **kwargs)] = box
        for f in as_completed(list(futures)):
            r0, r1, c0, c1 = futures[f]
            out[r0:r1, c0:c1] = f.result()
            on_done(r0, r1, c0, c1)
    finally:
        if own:
            client.close()
    return out
