"""The Python side of tcemu's libcudart.so (cudart.cpp calls these in the program's own process).

    launch(...)          one kernel launch: PTX from the fatbinary, the parameter blob from the program's argument
                         pointers, every live allocation mapped in place at its own address; 0 ok, 1 kernel fault
                         (reported here), 2 a launch tcemu cannot run (reported here), 3 a bad configuration,
                         4 a cooperative grid larger than the GPU holds at once, 5 a device assert (reported here);
                         the fatbinary's __device__ / __constant__ variables map at their own device addresses
    initialise(...)      the PTX initialisers of a fatbinary's variables, written at their device addresses
    param_blob(...)      a captured launch's parameter bytes (a graph's kernel node), written into the library
    param_offsets(...)   each parameter's offset in a kernel's parameter space (cudaGraphKernelNodeGetParams)
    static_shared(...)   a kernel's static shared memory (cudaFuncGetAttributes)
    occupancy(...)       CTAs per SM of a kernel, the interpreter's own count (cudaOccupancy* queries)
    available_shared(...) the dynamic shared memory that lets N CTAs share an SM
    encode_tiled(...)    cuTensorMapEncodeTiled: tcemu's 128-byte map (tcemu.ptx.tensormap) written in place
    at_exit()            writes the --record file, and prints the --summary lines

Settings come from the environment that `tcemu exec` sets: TCEMU_EXEC_ARCH (sm90 | sm100),
TCEMU_EXEC_CHECK_LAYOUTS (0 turns the operand-provenance check off), TCEMU_EXEC_RECORD (a .json path),
TCEMU_EXEC_ZERO_INIT_SHARED (1: shared memory starts as zeros, not unwritten), TCEMU_EXEC_TIMEOUT (each launch's
wall-clock budget in seconds; 0: none), TCEMU_EXEC_SUMMARY (1: at exit, the launches per kernel and the seconds
the interpreter spent on them), TCEMU_EXEC_LAUNCH_LOG (a path: one line appended as each launch ends, its
kernel, grid, block, cluster, interpreter seconds and outcome), TCEMU_EXEC_RACECHECK (0 turns the race checks of
shared, global and tensor memory off: to see whether a program that stops at a HazardError computes the right values regardless).
"""
import ctypes
import os
import sys
import time

import numpy as np

from ... import ptx as tptx
from ...core.errors import TcemuError
from ...ptx.errors import KernelFault, PtxError, PtxLimit, PtxUnsupported
from ...ptx.heap import HEAP_BYTES, HEAP_MIN
from ...ptx.memory import SMEM_RESERVED
from ...ptx.module import DEFAULT_TIMEOUT, SMEM_LIMIT
from ...ptx.schedule import SMEM_PER_CTA_RESERVED, SMEM_PER_SM
from ...ptx.schedule import occupancy as ctas_per_sm
from ...ptx.tensormap import ATOMICITIES, DRIVER_TYPES, SIZE, TensorMap, validate
from ...traces.records import DRIVER_DTYPES
from . import fatbin
from .build import CudaExecError
from .record import Recorder

OK, FAULT, REFUSED, BAD_CONFIG, TOO_LARGE, ASSERT = 0, 1, 2, 3, 4, 5
ARCH = os.environ.get("TCEMU_EXEC_ARCH", "sm90")
_modules = {}      # fatbinary index -> (Module, PTX text)
_recorder = Recorder(os.environ.get("TCEMU_EXEC_RECORD") or None)
_launches = {}     # kernel name -> [launches, seconds in the interpreter], in first-launch order


def _say(text: str) -> None:
    sys.stdout.flush()
    print(f"tcemu exec: {text}", file=sys.stderr, flush=True)


def _module(address: int, index: int, kernel: str):
    if index not in _modules:
        text = fatbin.choose_ptx(fatbin.read_at(address), ARCH if ARCH in fatbin.TARGETS else "sm90", kernel)
        _modules[index] = (tptx.load(text), text)
    return _modules[index]


def _blob(prog, args_address: int) -> bytes:
    """The parameter space: each argument copied from the pointer the program passed, at its .param offset."""
    params = prog.fn.params
    blob = bytearray(prog.param_size)
    if not params:
        return bytes(blob)
    if not args_address:
        raise PtxError("kernelParams", f"is null, but the kernel takes {len(params)} parameter"
                                       f"{'' if len(params) == 1 else 's'}")
    ptrs = (ctypes.c_void_p * len(params)).from_address(args_address)
    for i, p in enumerate(params):
        sym = prog.symbols[p.name]
        if not ptrs[i]:
            raise PtxError("args", f"argument {i} ({p.name}) is a null pointer in the launch's argument array")
        blob[sym.address:sym.address + sym.size] = ctypes.string_at(ptrs[i], sym.size)
    return bytes(blob)


def _buffers(allocations):
    """(address, uint8 view of the program's memory, label) for every live allocation."""
    out = []
    for address, size, label in allocations:
        view = np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(address))
        out.append((address, view, label))
    return out


_heap = [HEAP_BYTES]   # cudaDeviceSetLimit(cudaLimitMallocHeapSize, ...): the launches' device heap


def set_heap(nbytes) -> int:
    """The heap a cudaDeviceSetLimit(cudaLimitMallocHeapSize, nbytes) leaves (HEAP_MIN at least), kept for the
    launches; cudaDeviceGetLimit reports it."""
    _heap[0] = max(int(nbytes), HEAP_MIN)
    return _heap[0]


def _timeout():
    """--launch-timeout: seconds, or None for no limit (0); tcemu.ptx's own default when unset."""
    text = os.environ.get("TCEMU_EXEC_TIMEOUT", "")
    if not text:
        return DEFAULT_TIMEOUT
    return float(text) or None


def _symbols(mod, variables):
    """launch(symbols=...) for the registered variables (PTX name, device address, bytes) this module declares
    (nvcc may leave an unused one out of the PTX)."""
    declared = {v.name for v in mod.tree.variables if v.space in ("global", "const")}
    return {name: (address, size) for name, address, size in variables if name in declared}


DEVRT_PREFIXES = ("cudartErrorCnp", "__cudaCDP")   # the variables libcudadevrt's own module registers


def initialise(fatbin_address, index, variables) -> int:
    """The module's initialisers of a fatbinary's variables (PTX name, device address, bytes), written in place
    before their first use; 0, or 2 (reported)."""
    try:
        if any(name.startswith(DEVRT_PREFIXES) for name, _, _ in variables):
            raise CudaExecError("dynamic parallelism", f"the program links the CUDA device runtime (libcudadevrt: "
                                                       f"its variable {variables[0][0]}), which kernels that launch "
                                                       "kernels (-rdc=true) need; tcemu does not model device-side "
                                                       "launches")
        mod, _ = _module(fatbin_address, index, f"(the module of variable {variables[0][0]})" if variables else "")
        for name, (address, size) in _symbols(mod, variables).items():
            data = mod.initial_bytes(name)
            ctypes.memmove(address, data.tobytes(), min(size, data.size))
    except TcemuError as e:
        _say(f"{type(e).__name__}: {e}")
        return REFUSED
    return OK


def param_blob(fatbin_address, index, name, args_address, out_address, capacity) -> int:
    """A launch's parameter bytes, as a graph captures them, written at out_address: their count, or -1 (reported)."""
    try:
        prog = _module(fatbin_address, index, name)[0].program(name)
        blob = _blob(prog, args_address)
    except TcemuError as e:
        _say(f"kernel {name}: {type(e).__name__}: {e}")
        return -1
    if len(blob) > capacity:
        _say(f"kernel {name}: {len(blob)} bytes of parameters; a launch holds at most {capacity}")
        return -1
    ctypes.memmove(out_address, blob, len(blob))
    return len(blob)


def param_offsets(fatbin_address, index, name, out_address, capacity) -> int:
    """Each parameter's offset in the parameter space of kernel `name` (int64s written at out_address): their
    count (cudaGraphKernelNodeGetParams points kernelParams into a node's bytes), or -1 (reported)."""
    try:
        prog = _module(fatbin_address, index, name)[0].program(name)
    except TcemuError as e:
        _say(f"kernel {name}: {type(e).__name__}: {e}")
        return -1
    offsets = [prog.symbols[p.name].address for p in prog.fn.params]
    if len(offsets) > capacity:
        _say(f"kernel {name}: {len(offsets)} parameters; tcemu reads at most {capacity}")
        return -1
    (ctypes.c_int64 * max(len(offsets), 1)).from_address(out_address)[:len(offsets)] = offsets
    return len(offsets)


def _assert_failed(fault: KernelFault) -> bool:
    """The fault is a device assert (`call __assertfail`, tcemu.ptx.ops.calls): CUDA's cudaErrorAssert."""
    return str(fault).endswith("failed.") and ": Assertion `" in str(fault)


def launch(fatbin_address, index, name, grid, block, cluster, smem, args_address, allocations, variables=(),
           captured=None, cooperative=False) -> int:
    """captured: the parameter bytes a graph captured (args_address is then unused); cooperative: a cooperative
    launch (cudaLaunchCooperativeKernel: the grid workspace grid.sync() reads, and the grid-size limit)."""
    try:
        mod, text = _module(fatbin_address, index, name)
    except TcemuError as e:
        _say(f"{type(e).__name__}: {e}")
        return REFUSED
    try:
        prog = mod.program(name)
        blob = captured if captured is not None else _blob(prog, args_address)
    except PtxUnsupported as e:
        _say(f"kernel {name}: {type(e).__name__}: {e}")
        return REFUSED
    except TcemuError as e:
        _say(f"kernel {name}: {type(e).__name__}: {e}")
        return REFUSED
    buffers = _buffers(allocations)
    before = _recorder.before(buffers)
    stats = _launches.setdefault(name, [0, 0.0])
    stats[0] += 1
    start, outcome = time.perf_counter(), "failed"
    try:
        mod.launch(name, grid=grid, block=block, cluster=cluster, shared_bytes=smem, param_bytes=blob,
                   zero_init_shared=os.environ.get("TCEMU_EXEC_ZERO_INIT_SHARED") == "1",
                   buffers=buffers, check_layouts=os.environ.get("TCEMU_EXEC_CHECK_LAYOUTS", "1") != "0",
                   check_races=os.environ.get("TCEMU_EXEC_RACECHECK", "1") != "0",
                   printf="stdout", timeout=_timeout(), symbols=_symbols(mod, variables), cooperative=cooperative,
                   heap_bytes=_heap[0])
    except KernelFault as e:
        sys.stdout.flush()
        text = str(e).replace("launch with zero_init_shared=True", "tcemu exec --zero-init-shared")
        _say(f"kernel fault in {name} (grid {tuple(grid)}, block {tuple(block)}, cluster {tuple(cluster)}):\n"
             f"  {type(e).__name__}: {text}")
        return ASSERT if _assert_failed(e) else FAULT
    except PtxLimit as e:
        _say(f"kernel {name}: {type(e).__name__}: {e}")
        return REFUSED
    except PtxUnsupported as e:
        _say(f"kernel {name}: {type(e).__name__}: {e}")
        return REFUSED
    except PtxError as e:  # a launch the hardware refuses too (block, cluster, shared memory, cooperative grid)
        if cooperative and e.field == "cooperative":
            _say(f"cudaLaunchCooperativeKernel of {name} returns cudaErrorCooperativeLaunchTooLarge: {e.rule}")
            return TOO_LARGE
        _say(f"launch of {name} refused: {type(e).__name__}: {e}")
        return BAD_CONFIG
    else:
        outcome = "ok"
    finally:
        stats[1] += time.perf_counter() - start
        _log_launch(name, grid, block, cluster, time.perf_counter() - start, outcome)
        sys.stdout.flush()
    _recorder.add(index, text, name, prog, grid, block, cluster, smem, blob, buffers, before,
                  _symbols(mod, variables), cooperative)
    return OK


def _log_launch(name, grid, block, cluster, seconds, outcome) -> None:
    """TCEMU_EXEC_LAUNCH_LOG: one line a launch, written as it ends (a run killed mid-way still shows its progress)."""
    path = os.environ.get("TCEMU_EXEC_LAUNCH_LOG")
    if path:
        with open(path, "a") as fh:
            fh.write(f"{seconds:.3f} s grid {tuple(grid)} block {tuple(block)} cluster {tuple(cluster)} "
                     f"{outcome} {name}\n")


def _static_shared(fatbin_address, index, name) -> int:
    """Kernel `name`'s static shared memory, as a launch counts it (Module.launch: its window past the reserved KiB)."""
    return _module(fatbin_address, index, name)[0].program(name).dynamic_base() - SMEM_RESERVED


def static_shared(fatbin_address, index, name) -> int:
    """cudaFuncGetAttributes' sharedSizeBytes: kernel `name`'s static shared memory; -1 (reported)."""
    try:
        return _static_shared(fatbin_address, index, name)
    except TcemuError as e:
        _say(f"kernel {name}: {type(e).__name__}: {e}")
        return -1


def occupancy(fatbin_address, index, name, nthreads, dynamic) -> int:
    """CTAs of kernel `name` one SM holds with `dynamic` bytes of dynamic shared memory: tcemu.ptx.schedule's count,
    the one a cooperative launch is held to (threads, warps, 32 CTAs, static + dynamic shared memory with 1 KiB
    reserved per CTA; registers are unknown before ptxas); -1 (reported)."""
    try:
        static = _static_shared(fatbin_address, index, name)
    except TcemuError as e:
        _say(f"kernel {name}: {type(e).__name__}: {e}")
        return -1
    if static + dynamic > SMEM_LIMIT:
        return 0
    return ctas_per_sm(nthreads, static + dynamic)[0]


def available_shared(fatbin_address, index, name, blocks, nthreads) -> int:
    """The most dynamic shared memory with which `blocks` CTAs of kernel `name` share an SM (occupancy's rules;
    at most what one CTA may have): 0 when they cannot, whatever the shared memory; -1 (reported)."""
    try:
        static = _static_shared(fatbin_address, index, name)
    except TcemuError as e:
        _say(f"kernel {name}: {type(e).__name__}: {e}")
        return -1
    if ctas_per_sm(nthreads, static)[0] < blocks:
        return 0
    return max(0, min(SMEM_PER_SM // blocks - SMEM_PER_CTA_RESERVED, SMEM_LIMIT) - static)


def encode_tiled(map_address, dtype, rank, address, dims, strides, box, estrides, interleave, swizzle, l2,
                 oob) -> int:
    """cuTensorMapEncodeTiled's arguments (pointers into the program) -> tcemu's map at map_address; 0 or 1."""
    def arr(ptr, ctype, n):
        return [int(v) for v in (ctype * n).from_address(ptr)] if n else []
    try:
        if not 0 <= dtype < len(DRIVER_DTYPES):
            raise CudaExecError("dataType", f"CUtensorMapDataType {dtype} is not modelled (0-12 are)")
        if swizzle not in range(7):
            raise CudaExecError("swizzle", f"CUtensorMapSwizzle {swizzle} is not one of 0-6")
        # driver swizzles 4-6 are the 128B swizzle with a wider atom (tcemu.ptx.tensormap.ATOMICITY_NAMES)
        atom = {4: "128B_ATOM_32B", 5: "128B_ATOM_32B_FLIP_8B", 6: "128B_ATOM_64B"}.get(swizzle)
        tm = TensorMap(DRIVER_TYPES[DRIVER_DTYPES[dtype]], arr(dims, ctypes.c_uint64, rank),
                       arr(strides, ctypes.c_uint64, rank - 1), arr(box, ctypes.c_uint32, rank),
                       arr(estrides, ctypes.c_uint32, rank), swizzle=3 if atom else swizzle, interleave=interleave,
                       fill=oob, l2_promotion=l2, global_address=address,
                       swizzle_atomicity=ATOMICITIES[atom] if atom else 0)
        validate(tm, "cuTensorMapEncodeTiled")
    except TcemuError as e:
        _say(f"cuTensorMapEncodeTiled returns CUDA_ERROR_INVALID_VALUE: {type(e).__name__}: {e}")
        return 1
    ctypes.memmove(map_address, tm.to_bytes(), SIZE)
    return 0


def summary() -> str:
    """--summary: one line for the whole run, then one per kernel (launches, interpreter seconds, name)."""
    n = sum(c for c, _ in _launches.values())
    lines = [f"{n} kernel launch{'' if n == 1 else 'es'} ({len(_launches)} distinct kernel"
             f"{'' if len(_launches) == 1 else 's'}), {sum(t for _, t in _launches.values()):.1f} s in the interpreter"]
    lines += [f"  {c:5d} x {t:8.1f} s  {name}" for name, (c, t) in _launches.items()]
    return "\n".join(lines)


def at_exit() -> int:
    if os.environ.get("TCEMU_EXEC_SUMMARY") == "1":
        _say(summary())
    try:
        _recorder.write()
    except (OSError, TcemuError) as e:
        _say(f"--record: {e}")
        return 1
    finally:
        sys.stdout.flush()
    return 0


__all__ = ["launch", "initialise", "param_blob", "param_offsets", "static_shared", "occupancy", "available_shared",
           "encode_tiled", "at_exit"]
