"""A launch's grid spread over a dask.distributed cluster: Module.launch(..., scheduler=ADDRESS or Client).

The grid's clusters (a cluster is never split) are cut into contiguous chunks, one task per chunk. Each worker
rebuilds the module, maps copies of the same buffers at the same device addresses (the same arguments bound in
the same order give the same addresses; a captured launch's buffers keep theirs), runs launch(..., ctas=chunk)
and returns what it changed: per buffer, runs of (offset, length) and their bytes. The caller's arrays are
updated only after every chunk has returned, so a failed chunk leaves them as they were.

CTAs that do not communicate through global memory give the same bits however they are split. Two chunks that
leave different values in one byte race (PTX ISA 8.4 / 8.7: two CTAs' weak writes to a location are not ordered,
so a local run keeps whichever came last): refused, naming the byte and both chunks. Kernels whose CTAs may talk
through global memory (global or generic atom / red (PTX 9.7.13.5-6), strong ld / st (.acquire, .relaxed,
.volatile, .release: PTX 8.6), gpu- or system-scope fences (PTX 9.7.13.4), the grid workspace of grid.sync()
(%envreg, cooperative=True)) are refused before anything runs unless the grid makes a single chunk.

Limitation: a chunk's writes are found by comparing each buffer with its input, so a write that leaves a byte's
value unchanged is invisible: a race of one chunk changing a byte and another writing back its old value is not
seen (the merged result is then the changing chunk's).
"""
import hashlib
import sys
import threading
import time
from dataclasses import replace

import numpy as np

from ..core.errors import TcemuError
from ..core.validate import show
from ..gemm.distributed import connect
from .errors import HazardError, PtxError
from .tensormap import TensorMap

MAX_CTAS = 1 << 20      # module.MAX_CTAS (this module may not import that one): CTAs of a launch without ctas=
CHUNKS_PER_WORKER = 1   # chunks per worker thread: more balances uneven CTAs, fewer compiles the module less often
_MODULES = {}           # worker side: (key, thread) -> Module with its compiled programs (the last few)


# ---------------------------------------------------------------------------------------------- what is refused

_WEAK_SPACES = (".shared", ".local", ".param", ".const")   # ld / st / atom of these never reach global memory


def _space(parts) -> str:
    """The state space of an ld/st/atom/red form: global for .global and for the generic forms (no space)."""
    return "other" if any(p.startswith(s[1:]) for p in parts[1:] for s in _WEAK_SPACES) else "global"


def communication(instrs):
    """[(line, text, why)] of the instructions (a kernel's) through which CTAs may communicate via global memory."""
    found = []
    for ins in instrs:
        parts, text = ins.parts, ins.text()
        op, why = parts[0], None
        if op in ("atom", "red") and _space(parts) == "global":
            why = f"{op} on global memory (PTX 9.7.13.{5 if op == 'atom' else 6})"
        elif op == "cp" and "reduce" in parts and "global" in ".".join(parts):
            why = "a bulk reduction into global memory (PTX 9.7.9.25)"
        elif op in ("ld", "st") and _space(parts) == "global" and \
                {"acquire", "relaxed", "volatile", "release"} & set(parts):
            why = f"a strong {op} of global memory, as a flag is read or set (PTX 8.6)"
        elif (op == "fence" and not {"proxy", "mbarrier_init"} & {p.split("::")[0] for p in parts}
              and {"gpu", "sys"} & set(parts)) or (op == "membar" and {"gl", "sys"} & set(parts)):
            why = "a gpu- or system-scope fence, which orders writes for other CTAs (PTX 9.7.13.4)"
        elif "%envreg" in text:
            why = "%envreg: the cooperative grid workspace of grid.sync() (PTX 10.27)"
        if why:
            found.append((ins.line, text, why))
    return found


# ---------------------------------------------------------------------------------------------- the caller's side

def _dims(value, field):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    try:
        dims = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise PtxError(field, f"must be an int or a tuple of up to three ints, got {show(value)}") from None
    if not 1 <= len(dims) <= 3 or min(dims) < (0 if field == "ctas" else 1):
        raise PtxError(field, f"must be 1-3 {'non-negative' if field == 'ctas' else 'positive'} ints, got "
                              f"{show(value)}")
    return dims + ((0,) if field == "ctas" else (1,)) * (3 - len(dims))


class _Ref:
    """An array argument's place in the job's list of arrays (each distinct array travels once)."""

    def __init__(self, i):
        self.i = i


class _Job:
    """What every chunk shares (scattered to the workers once)."""

    def __init__(self, module_cls, source, key, name, options, args, param_bytes, buffers, arrays, readonly):
        self.module_cls, self.source, self.key, self.name = module_cls, source, key, name
        self.options, self.args, self.param_bytes, self.buffers = options, args, param_bytes, buffers
        self.arrays, self.readonly = arrays, readonly


def _collect(args, param_bytes, buffers, names):
    """(args with arrays replaced by _Ref, buffers likewise, [arrays], [names]); the same array object is one
    entry, as one launch maps it once."""
    arrays, labels, index = [], [], {}

    def ref(a, label):
        if id(a) not in index:
            index[id(a)] = len(arrays)
            arrays.append(a)
            labels.append(label)
        return _Ref(index[id(a)])

    def sub(v, label):
        if isinstance(v, np.ndarray) and not v.dtype.hasobject:
            return ref(v, label)
        if isinstance(v, TensorMap) and isinstance(v.tensor, np.ndarray):
            return replace(v, tensor=ref(v.tensor, label))
        return v
    if param_bytes is not None:
        buffers = [tuple(e[:1]) + (ref(e[1], e[2] if len(e) > 2 and isinstance(e[2], str) else
                                       f"buffer@{int(e[0]):#x}"),) + tuple(e[2:])
                   if isinstance(e, (list, tuple)) and len(e) >= 2 and isinstance(e[1], np.ndarray) else e
                   for e in buffers]
    elif isinstance(args, dict):
        args = {k: sub(v, k) for k, v in args.items()}
    elif isinstance(args, (list, tuple)):
        args = [sub(v, names[i] if i < len(names) else f"argument {i}") for i, v in enumerate(args)]
    for i in range(len(arrays)):
        for j in range(i):
            try:
                shared = np.shares_memory(arrays[i], arrays[j], max_work=1 << 20)
            except np.exceptions.TooHardError:
                shared = True
            if shared:
                raise PtxError("scheduler", f"'{labels[j]}' and '{labels[i]}' are distinct arrays over the same "
                                            "memory: each worker gets its own copy of each, so writes through one "
                                            "would not show through the other (pass one array, or run locally)")
    return args, buffers, arrays, labels


def _chunks(grid, cluster, ctas, n):
    """The chosen CTAs grouped by cluster (in launch order), cut into at most n contiguous chunks."""
    if ctas is None:
        if grid[0] * grid[1] * grid[2] > MAX_CTAS:
            raise PtxError("grid", f"{grid[0] * grid[1] * grid[2]:,} CTAs; the CPU runs at most {MAX_CTAS:,} in one "
                                   "launch (choose some with ctas=)")
        chosen = [(x, y, z) for z in range(grid[2]) for y in range(grid[1]) for x in range(grid[0])]
    else:
        if not isinstance(ctas, (list, tuple)) or not ctas:
            raise PtxError("ctas", f"must be a list of CTA indices, got {show(ctas)}")
        chosen = [_dims(c, "ctas") for c in ctas]
    groups = {}
    for c in chosen:
        groups.setdefault(tuple(c[i] // cluster[i] for i in range(3)), []).append(c)
    groups = list(groups.values())
    n = max(1, min(n, len(groups)))
    bounds = [len(groups) * k // n for k in range(n + 1)]
    return [[c for g in groups[bounds[k]:bounds[k + 1]] for c in g] for k in range(n)]


def _describe(k, n, chunk):
    return f"chunk {k + 1} of {n} (CTAs {chunk[0]} .. {chunk[-1]}, {len(chunk)} listed)"


def launch(mod, name, scheduler, options):
    """Module.launch(name, **options) with its clusters as tasks on the dask cluster `scheduler`."""
    options = dict(options)
    t0 = time.perf_counter()
    if not isinstance(name, str):
        raise PtxError("kernel", f"must be a kernel name, got {show(name)}")
    if options.get("trace") is not None:
        raise PtxError("trace", "runs in the caller's process; a distributed launch runs the CTAs in the workers' "
                                "(leave out scheduler= to trace)")
    printf = options.pop("printf", "stdout")
    if printf not in ("stdout", "collect"):
        raise PtxError("printf", f"{show(printf)}: 'stdout' or 'collect'")
    progress = options.pop("progress", False)
    grid, cluster = _dims(options["grid"], "grid"), _dims(options.get("cluster", (1, 1, 1)), "cluster")
    for i in range(3):
        if grid[i] % cluster[i]:
            raise PtxError("cluster", f"grid {grid} is not a multiple of the cluster shape {cluster}")
    prog = mod.program(name)   # unknown kernels and unsupported PTX are refused here, before any task
    names = [p.name for p in prog.fn.params]
    args, buffers, arrays, labels = _collect(options.pop("args", ()), options.get("param_bytes"),
                                             options.pop("buffers", ()), names)
    client, own = connect(scheduler)
    try:
        threads = client.nthreads()
        slots = sum(threads.values())
        if slots < 1:
            raise TcemuError("scheduler", "the dask cluster has no workers")
        chunks = _chunks(grid, cluster, options.pop("ctas", None), slots * CHUNKS_PER_WORKER)
        talk = communication(prog.instrs)
        if options.get("cooperative"):
            talk.insert(0, (0, "cooperative=True", "a cooperative launch, whose grid.sync() joins every CTA"))
        if talk and len(chunks) > 1:
            line, text, why = talk[0]
            raise PtxError("scheduler", f"{name} cannot be split across processes: CTAs that communicate through "
                                        f"global memory must share it, and {'line %d: ' % line if line else ''}"
                                        f"{show(text, 80)} is {why}"
                                        + (f" ({len(talk) - 1} more such instructions)" if len(talk) > 1 else "")
                                        + f"; {len(chunks)} chunks (run it locally, or on a one-thread cluster)")
        param_bytes = options.pop("param_bytes", None)
        if isinstance(param_bytes, (np.ndarray, bytearray)):
            param_bytes = param_bytes.tobytes() if isinstance(param_bytes, np.ndarray) else bytes(param_bytes)
        job = _Job(type(mod), (mod.text, mod.name), hashlib.sha1(mod.text.encode()).hexdigest(), name, options,
                   args, param_bytes, buffers, arrays, [not a.flags.writeable for a in arrays])
        shared = client.scatter(job, broadcast=True, hash=False)
        # chunk k to worker thread k: one chunk a thread, as the launch was cut, rather than where the scheduler
        # first finds room (a loaded machine's first worker to answer took two chunks); another worker only if
        # that one is gone
        places = [addr for addr, n in sorted(threads.items()) for _ in range(n)]
        futures = [client.submit(_run_chunk, shared, chunk, pure=False, workers=[places[k % len(places)]],
                                 allow_other_workers=True) for k, chunk in enumerate(chunks)]
        results = _gather(futures, chunks, progress)
    finally:
        if own:
            client.close()
    stats = {"ctas": 0, "warp_instructions": 0, "tensor_core_seconds": 0.0, "printf": []}
    for r in results:
        for k in ("ctas", "warp_instructions", "tensor_core_seconds", "printf"):
            stats[k] += r["stats"][k]
    _merge(arrays, labels, results, chunks)
    if printf == "stdout" and stats["printf"]:
        sys.stdout.write("".join(stats["printf"]))
        sys.stdout.flush()
    stats["workers"] = len({r["worker"] for r in results})
    stats["chunks"] = len(chunks)
    stats["chunk_seconds"] = [r["stats"]["seconds"] for r in results]   # each chunk's launch on its worker: wall
    stats["chunk_cpu_seconds"] = [r["cpu_seconds"] for r in results]    # and CPU time of its thread
    stats["seconds"] = time.perf_counter() - t0
    return stats


def _gather(futures, chunks, progress):
    """Every chunk's result, in chunk order; the first failure cancels the rest and raises, naming its chunk."""
    from distributed import as_completed  # optional dependency: dask.distributed
    from distributed.client import FutureCancelledError  # optional dependency: dask.distributed
    try:
        from distributed import KilledWorker  # optional dependency (where this version exports it)
    except ImportError:
        from distributed.scheduler import KilledWorker  # optional dependency: dask.distributed
    where = {f.key: k for k, f in enumerate(futures)}
    results, n = [None] * len(futures), len(futures)
    try:
        for f in as_completed(futures):
            k = where[f.key]
            try:
                r = f.result()
            except KilledWorker as e:
                raise TcemuError("scheduler", f"{_describe(k, n, chunks[k])}: its worker died ({e}); the caller's "
                                              "arrays are unchanged") from None
            except (FutureCancelledError, OSError) as e:
                dead = _killed(futures, KilledWorker)   # a chunk cancelled because another's worker died
                if dead is not None:
                    j, why = where[dead.key], dead.exception()
                    raise TcemuError("scheduler", f"{_describe(j, n, chunks[j])}: its worker died ({why}); the "
                                                  "caller's arrays are unchanged") from None
                raise TcemuError("scheduler", f"{_describe(k, n, chunks[k])} did not run ({type(e).__name__}: "
                                              f"{e}); the caller's arrays are unchanged") from None
            except Exception as e:  # noqa: BLE001 (anything a worker raised, named with its chunk)
                raise TcemuError("scheduler", f"{_describe(k, n, chunks[k])} failed on its worker: "
                                              f"{type(e).__name__}: {e}; the caller's arrays are unchanged") from None
            if "error" in r:
                raise _rebuilt(r["error"], k, n, chunks[k])
            results[k] = r
            if progress:
                done = sum(x is not None for x in results)
                sys.stderr.write(f"\r{done}/{n} chunks" + ("\n" if done == n else ""))
                sys.stderr.flush()
    finally:
        for f in futures:
            if not f.done():
                f.cancel()
    return results


def _killed(futures, killed_worker, settle: float = 5.0):
    """The first future whose worker died (KilledWorker), given `settle` seconds to say so, or None: the scheduler
    may cancel the other chunks before that chunk's own failure arrives."""
    from distributed import wait  # optional dependency: dask.distributed
    try:
        wait(futures, timeout=settle)
    except Exception:  # noqa: BLE001 (a timeout or a cancelled future: look at what has settled)
        pass
    for f in futures:
        if f.status == "error" and isinstance(f.exception(), killed_worker):
            return f
    return None


def _rebuilt(err, k, n, chunk):
    """The tcemu error a chunk raised, of its own class, its rule naming the chunk."""
    cls, state = err
    e = cls.__new__(cls)
    e.__dict__.update(state)
    e.rule = f"{e.rule} [{_describe(k, n, chunk)}; the caller's arrays are unchanged]"
    Exception.__init__(e, f"{e.field}: {e.rule}")
    return e


def _flat(a):
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def _merge(arrays, labels, results, chunks):
    """Apply every chunk's writes to copies, refusing a byte two chunks left with different values; then write
    the copies into the caller's arrays."""
    staged = {}
    for k, r in enumerate(results):
        for i, starts, lengths, values in r["writes"]:
            if i not in staged:
                staged[i] = (_flat(arrays[i]).copy(), np.full(arrays[i].nbytes, -1, np.int32))
            data, owner = staged[i]
            offs = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths) + \
                np.arange(int(lengths.sum()))
            clash = np.flatnonzero((owner[offs] >= 0) & (data[offs] != values))
            if clash.size:
                j = int(clash[0])
                off, other = int(offs[j]), int(owner[offs[j]])
                a, n = arrays[i], len(chunks)
                elem = list(map(int, np.unravel_index(off // a.itemsize, a.shape))) if a.ndim else []
                raise HazardError("global memory", f"byte {off} of '{labels[i]}' (element {elem} of its {a.dtype} "
                                                   f"{a.shape}) is left {int(data[off]):#04x} by "
                                                   f"{_describe(other, n, chunks[other])} and {int(values[j]):#04x} "
                                                   f"by {_describe(k, n, chunks[k])}: CTAs writing one byte with "
                                                   "different values race (PTX 8.7: nothing orders two CTAs' "
                                                   "writes), the result is whichever lands last; the caller's "
                                                   "arrays are unchanged")
            data[offs] = values
            owner[offs] = k
    for i, (data, _) in staged.items():
        a = arrays[i]
        a[...] = data.view(a.dtype).reshape(a.shape)


# ---------------------------------------------------------------------------------------------- the worker's side

def _module(job):
    key = (job.key, threading.get_ident())   # a worker's threads never share a Module's compiled state
    mod = _MODULES.get(key)
    if mod is None:
        mod = job.module_cls(*job.source)   # parsed again from its text: no code object travels
        while len(_MODULES) >= 4:
            _MODULES.pop(next(iter(_MODULES)))
        _MODULES[key] = mod
    return mod


def _filled(v, arrays):
    if isinstance(v, _Ref):
        return arrays[v.i]
    if isinstance(v, TensorMap) and isinstance(v.tensor, _Ref):
        return replace(v, tensor=arrays[v.tensor.i])
    return v


def _run_chunk(job, ctas):
    """One chunk on a worker: {"writes": [(array, starts, lengths, bytes)], "stats", "worker"}, or {"error":
    (class, state)} for a tcemu error (TcemuError's (field, rule) does not survive pickle's exception path)."""
    try:
        from distributed import get_worker  # optional dependency: dask.distributed (this runs on a worker)
        worker = get_worker().address
    except (ImportError, ValueError):
        worker = "local"
    mod = _module(job)
    arrays = [np.array(a, copy=True) for a in job.arrays]   # the inputs stay for the diff; in-process too
    for a, ro in zip(arrays, job.readonly):
        a.flags.writeable = not ro
    kwargs = dict(job.options, ctas=ctas, printf="collect", progress=False)
    if job.param_bytes is not None:
        kwargs.update(param_bytes=job.param_bytes, buffers=[tuple(e[:1]) + (_filled(e[1], arrays),) + tuple(e[2:])
                                                            for e in job.buffers])
    elif isinstance(job.args, dict):
        kwargs["args"] = {k: _filled(v, arrays) for k, v in job.args.items()}
    else:
        kwargs["args"] = [_filled(v, arrays) for v in job.args]
    cpu = time.thread_time()
    try:
        st = mod.launch(job.name, **kwargs)
    except TcemuError as e:
        return {"error": (type(e), dict(e.__dict__))}
    writes = []
    for i, (old, new) in enumerate(zip(job.arrays, arrays)):
        if job.readonly[i] or not new.size:
            continue
        changed = np.flatnonzero(_flat(old) != _flat(new))
        if changed.size:
            cut = np.flatnonzero(np.diff(changed) != 1) + 1
            starts = changed[np.concatenate(([0], cut))]
            lengths = np.diff(np.concatenate(([0], cut, [changed.size])))
            writes.append((i, starts, lengths, _flat(new)[changed]))
    return {"writes": writes, "worker": worker, "cpu_seconds": time.thread_time() - cpu,
            "stats": {k: st[k] for k in ("ctas", "warp_instructions", "tensor_core_seconds", "printf", "seconds")}}
