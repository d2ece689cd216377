"""Load a PTX module and launch its kernels on the CPU.

    mod = tcemu.ptx.load("matmul.ptx")            # a path or the PTX text
    mod.kernels                                    # {name: [Param(name, type, kind, size), ...]}
    mod.launch("matmul_kernel", grid=(8,), block=(256,), args=[a, b, c, 512, ...], shared_bytes=147456)

Pointer parameters take numpy arrays (their final contents are written back in place, like a device buffer
copied back) or None (a null pointer); scalar parameters take numbers that fit the `.param` type; byte-array
parameters (`.param .align 64 .b8 p[128]`, a CUtensorMap or a struct) take bytes of exactly that size.
"""
import gc
import math
import os
import struct
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..layout.smem import SMEM_WINDOW
from ..core.validate import as_int, show
from . import callgraph, parser as P
from . import strict
from .errors import KernelFault, PtxError, PtxLimit, PtxSyntaxError, PtxUnsupported, PtxUnsupportedWarning
from .hang import WriteLog
from . import distribute, lockstep, races
from .heap import HEAP_BYTES
from .machine import RegisterSlabs, cluster_builder, run_ctas, warp_specialised
from .memory import SMEM_RESERVED, ByteSpace, GlobalMemory
from .ops import lookup
from .program import Program, Symbol
from .schedule import Corners, Residency, check_floor, check_pace
from .tensormap import TensorMap
from .texture import TextureObject
from .types import ptx_type
from .wrappers import guarded, hazard_checked

SMEM_LIMIT = 227 * 1024  # sm90: the most shared memory one CTA may allocate (static + dynamic)
MAX_INSTRUCTIONS = 2_000_000_000  # warp instructions per cluster (the time limit usually ends a livelock first)
DEFAULT_TIMEOUT = 600.0           # seconds per launch
# CUDA's limits (programming guide, compute capability 9.0 / 10.0; CUDA 12.1+ for the parameters)
PARAM_LIMIT = 32_764        # bytes of a kernel's parameters
CONST_LIMIT = 64 * 1024     # bytes of a module's .const variables
LOCAL_LIMIT = 512 * 1024    # bytes of one thread's local frame
# What one launch may allocate on the CPU for its own state: module variables, parameters, each warp's
# registers and local frames, each CTA's shared-memory window (an estimate, checked before allocating).
# Arrays passed as arguments are the caller's own and are not counted.
MEMORY_LIMIT = 4 << 30
GC_YOUNG = 20_000    # allocations between the cyclic GC's young collections during a launch (Module.launch)
# bytes of tcemu's state per byte of a CTA's shared window, besides SharedMemory's bytes and written flags (counted
# as SMEM_WINDOW each), by kernel (shadow_bytes): the granule shadows (memory._GRANULES: 1.5 a byte); racecheck's
# records per unit of races.shared_unit bytes (races.Shadow: four fields and a row per warp, 8 bytes each: 6 a byte
# for Triton's 8-warp GEMM, 32 for CUTLASS ping-pong's 12 warps and 4-byte unit); where that unit is below 16
# (stores of parts of granules), the per-byte epochs and sources those make (PART_SHADOW_BYTES); and where the
# kernel has a bulk or tensor copy, a TMA's guard_bar / guard_phase / copy_pc (and guard16: 0.5 a byte) and the
# mbarrier and bulk-store shadows (TMA_SHADOW_BYTES). Measured (session 25): Triton's bf16 GEMM 7.5 a byte
# (estimated 7.5), CUTLASS's 66.5 (estimated 74.5). Until then one figure, 28 (+20 with TMA), served every
# kernel: Triton's waves were less than half what the budget holds, CUTLASS's a third over it.
GRANULE_SHADOW_BYTES = 1.5
SMALL_SHADOW_BYTES = 4096   # a CTA's small arrays beside those (racecheck's per-warp clocks and bounds)
PART_SHADOW_BYTES = 16
TMA_SHADOW_BYTES = 25.5


def shadow_bytes(prog: Program, warps: int) -> float:
    """The estimate of tcemu's state per byte of one CTA's shared window (warps: the CTA's)."""
    unit = races.shared_unit(prog)
    return (GRANULE_SHADOW_BYTES + (4 + warps) * 8 / unit + (PART_SHADOW_BYTES if unit < 16 else 0) +
            (TMA_SHADOW_BYTES if prog.table.uses("bulk") else 0))


@dataclass(frozen=True)
class Param:
    name: str
    type: str      # PTX type of one element
    kind: str      # "pointer", "scalar" or "bytes"
    size: int      # bytes


def _param_info(v: P.VarDecl) -> Param:
    t = ptx_type(v.type)
    if v.count:
        return Param(v.name, v.type, "bytes", v.size)
    if v.ptr_space is not None:
        return Param(v.name, v.type, "pointer", 8)
    return Param(v.name, v.type, "scalar", max(1, t.bits // 8))


class Launch:
    """Everything one launch shares across its CTAs."""

    def __init__(self, grid, block, cluster, shared_bytes, explicit_cluster):
        self.grid, self.block, self.cluster = grid, block, cluster
        self.nthreads = math.prod(block)
        self.shared_bytes = shared_bytes
        self.explicit_cluster = int(explicit_cluster)
        self.gmem = GlobalMemory()
        self.params: Optional[ByteSpace] = None
        self.const = ByteSpace(np.zeros(0, np.uint8), "const")
        self.check_layouts = True
        self.tiles = {}                 # layout verdicts already given (provenance.check_tile's memo)
        self.check_races = True         # racecheck / synccheck of shared memory (races.py)
        self.lockstep = True            # converged warps at one PC run together (lockstep.py)
        self.progress = None            # the progress line (module._Progress), ticked by machine.run_ctas
        self.tensor_core_seconds = 0.0  # time inside the instruction models (wgmma / tcgen05 arithmetic)
        self.trace = None               # callable(warp, pc, mask, control) after each warp instruction (machine.py)
        self.printed = []               # device-side printf output, in execution order
        self.echo = True
        self.symbols = {}               # variable name -> device address (launch(symbols=...))
        self.scratch = {}               # dtype -> buffers lock-step batches reuse (slabcopy.scratch)
        self._t0 = time.perf_counter_ns()  # %clock / %globaltimer count from the launch

    def printf(self, text: str):
        self.printed.append(text)
        if self.echo:
            sys.stdout.write(text)
            sys.stdout.flush()

    def clock(self) -> int:
        return (time.perf_counter_ns() - self._t0) & 0xFFFFFFFF


# CUDA's launch limits (programming guide, compute capability 9.0 / 10.0): gridDim and blockDim per axis
DIM3_LIMITS = {"grid": ((1 << 31) - 1, 65535, 65535), "block": (1024, 1024, 64), "cluster": (16, 16, 16)}
MAX_CTAS = 1 << 20  # CTAs one launch runs on the CPU (a larger grid: pick some with ctas=)


def _dim3(value, field: str):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (int(value),)
    try:
        dims = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise PtxError(field, f"must be an int or a tuple of up to three ints, got {show(value)}") from None
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims) or \
            any(not isinstance(v, (int, np.integer)) or isinstance(v, bool) for v in value):
        raise PtxError(field, f"must be 1-3 positive ints, got {show(value)}")
    dims = dims + (1,) * (3 - len(dims))
    limits = DIM3_LIMITS.get(field)
    if limits and any(d > lim for d, lim in zip(dims, limits)):
        raise PtxError(field, f"{show(dims)} exceeds CUDA's limits {limits} (x, y, z)")
    return dims


def _cta_index(value):
    """A CTA index: 1-3 non-negative ints (missing trailing coordinates are 0), unlike grid/block sizes."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    try:
        dims = tuple(value)
    except TypeError:
        dims = ()
    if not 1 <= len(dims) <= 3 or any(not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0
                                      for v in dims):
        raise PtxError("ctas", f"each entry must be a CTA index of 1-3 non-negative ints, got {show(value)}")
    return tuple(int(v) for v in dims) + (0,) * (3 - len(dims))


class Module:
    def __init__(self, text: str, name: str = "<ptx>"):
        self.name = name
        self.text = text     # the source: dask workers (distribute.py) load the module from it
        self.tree = P.parse(text)
        if not self.tree.version:  # PTX ISA 11.1.1: each module begins with a .version directive
            raise PtxSyntaxError(1, 1, "a PTX module begins with a .version directive (is this PTX text?)")
        self._programs: Dict[str, Program] = {}
        for f in self.tree.functions.values():   # call sites against their callees' prototypes (strict.py)
            strict.check_calls(f, self.tree.functions)
        # each function's address (the code window: pointers, vtables) and those whose address is taken
        self.function_addresses = callgraph.function_addresses(self.tree.functions)
        self.address_taken = callgraph.address_taken(self.tree.functions, self.tree.variables)
        if self.tree.address_size != 64:
            raise PtxUnsupported(".address_size", "only 64-bit addressing is modelled")
        # sm_100a kernels' shared memory is read through UMMA descriptors and Blackwell TMA modes
        self.arch = "sm100" if any(t.startswith("sm_10") for t in self.tree.target) else "sm90"

    @property
    def kernels(self) -> Dict[str, List[Param]]:
        return {n: [_param_info(p) for p in f.params] for n, f in self.tree.functions.items() if f.entry and f.body}

    def compiled(self, name: str) -> Optional[Program]:
        """The kernel's Program where it is compiled already (program(name)), else None."""
        return self._programs.get(name)

    def program(self, name: str) -> Program:
        """The compiled kernel (compiling on first use: unsupported instructions are refused here)."""
        prog = self._programs.get(name)
        if prog is not None:
            return prog
        fn = self.tree.functions.get(name)
        if fn is None or not fn.entry:
            raise PtxError("kernel", f"{show(name)} is not a kernel of this module; kernels: {', '.join(self.kernels)}")
        prog = Program(fn, self._module_symbols(), [v for v in self.tree.variables if v.space == "shared"],
                       self.tree.functions, self.address_taken)
        prog.target = tuple(self.tree.target)   # sm_103a forms (tcgen05 K = 96, LBO mode 1) read it
        prog.ptx_version = self.tree.version     # forms newer than the module's .version are refused
        prog.set_dynamic_base()
        code = []
        prog.unsupported = []   # (line, opcode, rule) of instructions refused only if executed
        for pc, ins in enumerate(prog.instrs):
            strict.check(ins, prog.reg_types, prog.target)   # what ptxas refuses (strict.py)
            try:
                op = lookup(ins)(ins, prog, pc)
            except IndexError:  # an instruction compiler read an operand the text does not have
                raise PtxSyntaxError(ins.line, ins.col, f"{ins.opcode}: {len(ins.operands)} operands are too few for "
                                                        "this instruction") from None
            except PtxUnsupported as e:  # valid PTX tcemu does not model: refused when a thread runs it
                prog.unsupported.append((ins.line, ins.opcode, e.rule))
                op = _refused(ins, e)
            except KeyError as e:  # a form no table holds (e.g. a 128-bit type): never a raw KeyError
                e = PtxUnsupported(ins.opcode, f"this form ({show(str(e.args[0]) if e.args else '', 40)}) is "
                                               f"not modelled ({ins.where()})")
                prog.unsupported.append((ins.line, ins.opcode, e.rule))
                op = _refused(ins, e)
            code.append(guarded(op, ins, prog) if ins.guard and not getattr(op, "guarded", False) else op)
        prog.code = [hazard_checked(op, ins, prog) for op, ins in zip(code, prog.instrs)]
        prog.code.append(_fell_off(fn))
        lockstep.analyse(prog, code)
        self._programs[name] = prog
        if prog.unsupported:
            warnings.warn(f"{name}: {len(prog.unsupported)} instructions tcemu does not model, refused if executed: "
                          + "; ".join(f"line {ln} {op}" for ln, op, _ in prog.unsupported[:8])
                          + (" ..." if len(prog.unsupported) > 8 else ""), PtxUnsupportedWarning, stacklevel=2)
        return prog

    def unsupported(self, name: str):
        """[(line, opcode, rule)] of kernel `name`'s instructions tcemu does not model (compiles it)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PtxUnsupportedWarning)
            return list(self.program(name).unsupported)

    def _module_symbols(self) -> Dict[str, Symbol]:
        syms = {}
        for v in self.tree.variables:
            if v.space in ("global", "const"):
                syms[v.name] = Symbol(v.space, 0, v.size)  # addressed per launch (see _place_globals)
        for name, addr in self.function_addresses.items():
            syms[name] = Symbol("func", addr, 0)
        return syms

    def launch(self, name: str, *, grid, block, args: Sequence = (), shared_bytes: int = 0,
               ctas: Optional[Sequence] = None, cluster=(1, 1, 1), zero_init_shared: bool = False,
               max_instructions: int = MAX_INSTRUCTIONS, progress: bool = False, check_layouts: bool = True,
               param_bytes=None, buffers=(), printf: str = "stdout", trace=None,
               timeout: Optional[float] = DEFAULT_TIMEOUT, resident="occupancy", cooperative: bool = False,
               check_races: bool = True, lockstep: bool = True, scheduler=None, symbols=None,
               heap_bytes: int = HEAP_BYTES):
        """Run kernel `name` over the grid (or only the CTAs listed in `ctas`); returns launch statistics.

        zero_init_shared: shared memory starts as zeros (else reading a byte nothing wrote is a fault).
        check_layouts: check that every tensor-core operand copied from global memory is a coherent tile of
        its source array (catches swizzle/LBO/SBO disagreements between writer and descriptor).
        check_races: racecheck of shared memory: RAW/WAR/WAW between threads that no synchronisation orders
        (happens-before from barriers and mbarriers, never from tcemu's execution order; docs/guide.md), of global
        memory between CTAs, and of tensor memory (tcgen05 accesses not waited for or not known complete).
        heap_bytes: the device heap that kernel-side malloc allocates from (cudaLimitMallocHeapSize; heap.py).
        param_bytes: the whole parameter space as bytes (a captured launch's blob), instead of `args`; then
        `buffers` lists (device address, numpy array) pairs, or (address, array, name) triples, to map at exactly
        those addresses.
        symbols: {name: address} or {name: (address, bytes)}: the module's .global / .const variables that live
        at those device addresses, inside a mapped buffer (a program's __device__ / __constant__ variables), instead
        of tcemu's own placement: a .global one is read and written there in place, a .const one reads the
        buffer's bytes as they stand at the launch (kernels cannot write .const, PTX ISA 5.1.3).
        printf: "stdout" (device printf output is written as it happens) or "collect" (only kept in the
        statistics' "printf" list).
        trace: called as trace(warp, pc, mask, control) after every instruction any warp executes (machine.py);
        an exception it raises ends the launch.
        max_instructions / timeout: the launch's budgets, warp instructions per cluster (default
        MAX_INSTRUCTIONS, 2e9) and wall-clock seconds for the whole launch (default DEFAULT_TIMEOUT, 600 s; None:
        no time limit); past either, BudgetExceeded (a Deadlock) names what every unfinished warp was doing: its
        PC, instruction and source line. A warp proven to spin on memory nobody will change is a Deadlock at once
        (hang.py), without waiting for a budget. A grid that could not finish in time is refused up front (PtxLimit:
        a lower bound of its bookkeeping) or, once a tenth of the timeout has passed, when its finished CTAs' pace
        projects more than 1.5 times the timeout (BudgetExceeded, with the estimate).
        resident: how many CTAs may run at once when some wait on CTAs not yet started (schedule.py):
        "occupancy" (an H100's, the default), "grid" (all of them) or a number of CTAs. Clusters run one at a
        time while they make progress; past the limit, CTAs waiting on CTAs that cannot start are a Deadlock
        (the GPU would hang too).
        lockstep: warps of the resident CTAs that stand converged at one PC run together, their register-only
        instructions as one batch (lockstep.py); False runs each warp on its own until it blocks. Results of
        race-free kernels are the same bits either way; the order in which racing accesses meet differs.
        cooperative: a cooperative launch (cudaLaunchCooperativeKernel): %envreg1 / %envreg2 give the address of a
        zeroed grid workspace, which cooperative groups' grid.sync() counts arrivals in; a grid larger than an
        H100 holds at once is refused, as CUDA refuses it (cudaErrorCooperativeLaunchTooLarge).
        scheduler: a dask.distributed Client or scheduler address: the clusters run as tasks on its workers
        (distribute.py; docs/guide.md "Grids over dask")."""
        if scheduler is not None:
            return distribute.launch(self, name, scheduler, {k: v for k, v in locals().items()
                                                             if k not in ("self", "name", "scheduler")})
        if not isinstance(name, str):
            raise PtxError("kernel", f"must be a kernel name, got {show(name)}")
        prog = self.program(name)
        grid, block, cluster = _dim3(grid, "grid"), _dim3(block, "block"), _dim3(cluster, "cluster")
        max_instructions = as_int(max_instructions, "max_instructions", 1, 1 << 62, PtxError)
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float, np.integer, np.floating)) or \
                    not 0 < float(timeout) < 1e9:
                raise PtxError("timeout", f"must be None or a positive number of seconds, got {show(timeout)}")
            timeout = float(timeout)
        if isinstance(shared_bytes, bool) or not isinstance(shared_bytes, (int, np.integer)) or shared_bytes < 0:
            raise PtxError("shared_bytes", f"must be a non-negative int, got {show(shared_bytes)}")
        for flag, value in (("zero_init_shared", zero_init_shared), ("check_layouts", check_layouts),
                            ("progress", progress), ("cooperative", cooperative), ("check_races", check_races),
                            ("lockstep", lockstep)):
            if not isinstance(value, (bool, np.bool_)):
                raise PtxError(flag, f"must be a bool, got {show(value)}")
        nthreads = int(np.prod(block))
        if nthreads > 1024:
            raise PtxError("block", f"{nthreads} threads per CTA; at most 1024")
        req = prog.fn.directives.get("reqntid")
        if req and tuple(req) + (1,) * (3 - len(req)) != block:
            raise PtxError("block", f"the kernel requires .reqntid {tuple(req)}, launched with {block}")
        mx = prog.fn.directives.get("maxntid")
        if mx and nthreads > int(np.prod(mx)):
            raise PtxError("block", f"the kernel allows at most {int(np.prod(mx))} threads (.maxntid), got {nthreads}")
        total_smem = prog.dynamic_base() - SMEM_RESERVED + int(shared_bytes)
        if total_smem > SMEM_LIMIT:
            raise PtxLimit("shared_bytes", f"{prog.shared_static} static + {shared_bytes} dynamic bytes exceed "
                                           f"the {SMEM_LIMIT} bytes a CTA may have")
        self._check_memory(prog, nthreads, cluster, total_smem)
        for i in range(3):
            if grid[i] % cluster[i]:
                raise PtxError("cluster", f"grid {grid} is not a multiple of the cluster shape {cluster}")
        req = prog.fn.directives.get("reqnctapercluster")
        if req and tuple(req) + (1,) * (3 - len(req)) != cluster:
            raise PtxError("cluster", f"the kernel requires .reqnctapercluster {tuple(req)}, launched with {cluster}")
        if int(np.prod(cluster)) > 16:
            raise PtxError("cluster", f"{int(np.prod(cluster))} CTAs per cluster; at most 16 (8 portable)")
        L = Launch(grid, block, cluster, int(shared_bytes), "explicitcluster" in prog.fn.directives)
        L.check_layouts = bool(check_layouts)
        L.check_races = bool(check_races)
        L.lockstep = bool(lockstep)
        L.heap_bytes = as_int(heap_bytes, "heap_bytes", 0, 1 << 40, PtxError)   # device malloc (heap.py)
        if printf not in ("stdout", "collect"):
            raise PtxError("printf", f"{show(printf)}: 'stdout' or 'collect'")
        L.echo = printf == "stdout"
        if trace is not None and not callable(trace):
            raise PtxError("trace", f"must be a callable (warp, pc, mask, control), got {type(trace).__name__}")
        L.trace = trace
        L.symbols = self._symbol_addresses(symbols)
        if param_bytes is not None:
            writeback = self._bind_blob(prog, L, param_bytes, buffers)
        else:
            writeback = self._bind_args(prog, L, args)
        if ctas is None:
            if int(np.prod(grid)) > MAX_CTAS:
                raise PtxLimit("grid", f"{int(np.prod(grid)):,} CTAs; the CPU runs at most {MAX_CTAS:,} in one launch "
                                       "(choose some with ctas=)")
            check_floor(int(np.prod(grid)), nthreads, timeout)
            chosen = None   # every CTA: its clusters in order without a list of them (2^20 tuples: ~100 MB)
        else:
            if not isinstance(ctas, (list, tuple)) or not 1 <= len(ctas) <= MAX_CTAS:
                raise PtxError("ctas", f"must be a list of CTA indices, got {show(ctas)}")
            chosen = [_cta_index(c) for c in ctas]
            for c in chosen:
                if any(c[i] >= grid[i] for i in range(3)):
                    raise PtxError("ctas", f"CTA {c} is outside the grid {grid}")
        stats = {"ctas": 0, "warp_instructions": 0, "seconds": 0.0}
        t0 = time.perf_counter()
        deadline = None if timeout is None else time.monotonic() + timeout
        # the clusters holding the chosen CTAs, each run as one (its CTAs' warps interleave); one at a time while
        # it makes progress, more at once when the resident ones wait on CTAs not yet started (schedule.py)
        if chosen is None:
            groups = Corners(tuple(grid[i] // cluster[i] for i in range(3)))
        else:
            groups = {}
            for c in chosen:
                groups.setdefault(tuple(c[i] // cluster[i] for i in range(3)), None)
        L.writes = WriteLog()
        L.writes.watch_global(L.gmem)

        # the global byte behind each shared byte: only a tensor-core operand's layout check reads it
        keep_sources = L.check_layouts and prog.table.uses("wgmma", "tcgen05")

        build = cluster_builder(L, prog, cluster, SMEM_RESERVED + total_smem, bool(zero_init_shared), keep_sources,
                                self.arch)

        def finished(ctas):   # (the clusters that finished in one round of the scheduler)
            stats["ctas"] += len(ctas)
            for c in ctas:
                c.release()
            if bar:
                bar.step(len(ctas) // math.prod(cluster))
            if timeout is not None:
                check_pace(stats["ctas"], grid_.total, time.perf_counter() - t0, timeout)
        grid_ = Residency(resident, groups, build, nthreads, total_smem, int(np.prod(cluster)),
                          self._cluster_bytes(prog, nthreads, cluster, total_smem), MEMORY_LIMIT, finished)
        if cooperative:
            n = int(np.prod(grid)) if chosen is None else len(chosen)
            if n > grid_.occupancy:
                raise PtxError("cooperative", f"{n:,} CTAs; a cooperative launch may have at most as many "
                                              f"as the GPU holds at once ({grid_.occupancy:,} on an H100 here: "
                                              f"{grid_.occupancy_why}), else CUDA refuses it "
                                              "(cudaErrorCooperativeLaunchTooLarge)")
            work = L.gmem.allocate(np.zeros(64, np.uint8), "grid workspace")
            L.envreg = {"1": work >> 32, "2": work & 0xFFFFFFFF}   # high, low half (as grid.sync() joins them)
        if L.lockstep and grid_.wave > 1:   # a wave's register files side by side (a grid's, where it is smaller)
            L.slabs = RegisterSlabs(min(grid_.wave, len(groups)) * int(np.prod(cluster)),
                                    warp_specialised(prog))
        bar = _Progress(len(groups)) if progress else None
        L.progress = bar
        # the cyclic GC's full collections during the run skip what existed before it (the program's compiled
        # instructions, numba, the caller's objects: gc.freeze), unless the caller froze objects of its own
        frozen = gc.get_freeze_count() == 0
        if frozen:
            gc.freeze()
        # and its young collections come every GC_YOUNG allocations, not 700: a wave's CTAs outlive many of those,
        # and each older collection walked them all (65,536 one-warp CTAs: 15 % of the launch on the VM, 3 % now)
        threshold = gc.get_threshold()
        gc.set_threshold(max(threshold[0], GC_YOUNG), *threshold[1:])
        try:
            stats["warp_instructions"] += run_ctas(grid_.admit(), max_instructions, deadline, timeout, grid_)
        except (KernelFault, PtxUnsupported, PtxLimit):
            raise
        except PtxError as e:   # a form an instruction's model does not cover, met while running: not a launch
            raise PtxUnsupported(e.field, e.rule) from None   # the hardware would refuse (tcemu exec ends the program)
        finally:
            if frozen:
                gc.unfreeze()
            gc.set_threshold(*threshold)
            L.writes.running = None   # (the last warp run: nothing of the launch's CTAs outlives it)
            for arr, buf in writeback:
                arr[...] = buf.view(arr.dtype).reshape(arr.shape)
            if bar:
                bar.done()
        stats["seconds"] = time.perf_counter() - t0
        stats["tensor_core_seconds"] = L.tensor_core_seconds
        stats["printf"] = list(L.printed)
        return stats

    def _cluster_bytes(self, prog: Program, nthreads: int, cluster, total_smem: int) -> int:
        """The estimate of _check_memory for one cluster's own state (registers, local frames, shared memory)."""
        return sum(self._cluster_parts(prog, nthreads, cluster, total_smem).values())

    def _cluster_parts(self, prog: Program, nthreads: int, cluster, total_smem: int) -> dict:
        """One cluster's own state, estimated part by part: {part: bytes}."""
        per_cta = -(-nthreads // 32)
        warps = per_cta * int(np.prod(cluster))
        regs = sum(max(prog.nregs[c], 1) * 32 * max(1, c // 8) for c in prog.nregs)
        return {"registers": warps * regs, "local frames": warps * 32 * prog.local_size,
                "shared memory": self._shared_state(prog, per_cta, cluster, total_smem)}

    def _shared_state(self, prog: Program, warps: int, cluster, total_smem: int) -> int:
        """A cluster's shared windows and their shadows, estimated (shadow_bytes; warps: a CTA's)."""
        per = shadow_bytes(prog, warps)
        return int(np.prod(cluster)) * (SMEM_WINDOW[self.arch] * 2 + int((SMEM_RESERVED + total_smem) * per) +
                                        SMALL_SHADOW_BYTES)

    def _check_memory(self, prog: Program, nthreads: int, cluster, total_smem: int):
        """Refuse, before allocating anything, a launch beyond CUDA's size limits or whose own state would need
        more than MEMORY_LIMIT bytes (the message gives the estimate, part by part)."""
        if prog.param_size > PARAM_LIMIT:
            raise PtxLimit("params", f"{prog.name}'s parameters take {prog.param_size:,} bytes; a kernel's "
                                     f"parameters hold at most {PARAM_LIMIT:,} bytes (CUDA 12.1+)")
        const = sum(v.size for v in self.tree.variables if v.space == "const")
        if const > CONST_LIMIT:
            raise PtxLimit(".const", f"the module's .const variables take {const:,} bytes; at most {CONST_LIMIT:,}")
        if prog.local_size > LOCAL_LIMIT:
            raise PtxLimit(".local", f"{prog.name}'s local frame takes {prog.local_size:,} bytes per thread; "
                                     f"at most {LOCAL_LIMIT:,}")
        parts = {"module variables": sum(v.size for v in self.tree.variables if v.space in ("global", "const")),
                 "parameters": prog.param_size, **self._cluster_parts(prog, nthreads, cluster, total_smem)}
        total = sum(parts.values())
        if total > MEMORY_LIMIT:
            raise PtxLimit("launch", f"would need about {_size(total)} of memory ("
                                     + ", ".join(f"{k} {_size(v)}" for k, v in parts.items() if v)
                                     + f"); tcemu's limit is {_size(MEMORY_LIMIT)} "
                                       "(tcemu.ptx.module.MEMORY_LIMIT)")

    def _bind_args(self, prog: Program, L: Launch, args):
        params = prog.fn.params
        infos = [_param_info(p) for p in params]
        if isinstance(args, dict):
            missing = [p.name for p in infos if p.name not in args]
            extra = [k for k in args if k not in {p.name for p in infos}]
            if missing or extra:
                raise PtxError("args", f"missing {missing}, unknown {extra}")
            args = [args[p.name] for p in infos]
        if not isinstance(args, (list, tuple)):
            raise PtxError("args", f"must be a list of the kernel's arguments (or a dict by name), got {show(args)}")
        args = list(args)
        if len(args) != len(infos):
            raise PtxError("args", f"{prog.name} takes {len(infos)} parameters "
                                   f"({', '.join(p.name for p in infos)}), got {len(args)}")
        buf = np.zeros(max(prog.param_size, 1), np.uint8)
        writeback, placed = [], {}
        for p, info, value in zip(params, infos, args):
            off = prog.symbols[p.name].address
            raw = _param_bytes(info, value, L, writeback, placed)
            buf[off:off + len(raw)] = np.frombuffer(raw, np.uint8)
        L.params = ByteSpace(buf, "param")
        self._place_globals(prog, L)
        return writeback

    def _bind_blob(self, prog: Program, L: Launch, blob, buffers):
        if isinstance(blob, np.ndarray):
            blob = blob.tobytes()
        if not isinstance(blob, (bytes, bytearray)):
            raise PtxError("param_bytes", f"must be bytes, got {type(blob).__name__}")
        if len(blob) != prog.param_size:
            raise PtxError("param_bytes", f"{prog.name}'s parameters take {prog.param_size} bytes, got {len(blob)}")
        writeback = []
        for entry in sorted(buffers, key=lambda b: int(b[0])):
            addr, arr = entry[0], entry[1]
            name = entry[2] if len(entry) > 2 and isinstance(entry[2], str) else f"buffer@{int(addr):#x}"
            if not isinstance(arr, np.ndarray) or arr.dtype.hasobject:
                raise PtxError("buffers", "each buffer is (device address, numpy array)")
            if arr.flags.c_contiguous and arr.flags.writeable:
                data = arr.reshape(-1).view(np.uint8)
            else:
                data = np.ascontiguousarray(arr).reshape(-1).view(np.uint8).copy()
                writeback.append((arr, data))
            L.gmem.place(int(addr), data, name, shape=arr.shape, itemsize=arr.dtype.itemsize)
        L.params = ByteSpace(np.frombuffer(bytes(blob), np.uint8).copy(), "param")
        self._place_globals(prog, L)
        return writeback

    def _symbol_addresses(self, symbols) -> Dict[str, int]:
        """launch(symbols=...) checked against the module's .global / .const variables: {name: address}."""
        if symbols is None:
            return {}
        if not isinstance(symbols, dict):
            raise PtxError("symbols", f"must be a dict {{name: address}}, got {type(symbols).__name__}")
        declared = {v.name: v for v in self.tree.variables if v.space in ("global", "const")}
        out = {}
        for name, at in symbols.items():
            v = declared.get(name)
            if v is None:
                raise PtxError("symbols", f"{show(name)} is not a .global or .const variable of this module "
                                          f"(it declares: {', '.join(declared) or 'none'})")
            size = None
            if isinstance(at, tuple) and len(at) == 2:
                at, size = at
            if isinstance(at, bool) or not isinstance(at, (int, np.integer)) or not 0 <= int(at) < 1 << 63:
                raise PtxError("symbols", f"{name}: the address must be an int in [0, 2^63), got {show(at)}")
            if size is not None and int(size) != v.size:
                raise PtxError("symbols", f"{name}: {size} bytes given, but the module declares .{v.space} "
                                          f"{name} with {v.size} bytes")
            out[name] = int(at)
        return out

    def initial_bytes(self, name: str) -> np.ndarray:
        """The bytes .global / .const variable `name` starts with (its initialiser; zeros without one): what a
        program's own copy of the variable holds when the module loads (launch(symbols=...))."""
        for v in self.tree.variables:
            if v.name == name and v.space in ("global", "const"):
                return _initial(v, self.function_addresses)[:v.size]
        raise PtxError("variable", f"{show(name)} is not a .global or .const variable of this module")

    def _bound_symbol(self, v, addr: int, L: Launch) -> np.ndarray:
        """The bytes of the mapped buffer holding variable v at addr (launch(symbols=...))."""
        for a in L.gmem.allocs:
            if a.base <= addr and addr + v.size <= a.end:
                return a.data[addr - a.base:addr - a.base + v.size]
        raise PtxError("symbols", f"{v.name} at {addr:#x}: its {v.size} bytes do not lie inside one mapped buffer "
                                  f"({L.gmem.describe(addr)})")

    def _place_globals(self, prog: Program, L: Launch):
        const = []
        bound = L.symbols
        for v in self.tree.variables:
            if v.space not in ("global", "const"):
                continue
            if v.name in bound:   # the program's own variable: no initialiser here, the buffer holds its bytes
                data = self._bound_symbol(v, bound[v.name], L)
                if v.space == "global":
                    prog.symbols[v.name] = Symbol("global", bound[v.name], v.size)
                else:
                    const.append((v, data.copy()))
                continue
            data = _initial(v, self.function_addresses)
            if v.space == "global":
                addr = L.gmem.allocate(data, v.name)
                prog.symbols[v.name] = Symbol("global", addr, v.size)
            else:
                const.append((v, data))
        if const:
            off, blob = 0, []
            for v, data in const:
                align = max(v.align, 1)
                pad = (-off) % align
                blob.append(np.zeros(pad, np.uint8))
                off += pad
                prog.symbols[v.name] = Symbol("const", off, v.size)
                blob.append(data)
                off += data.size
            L.const = ByteSpace(np.concatenate(blob), "const")


def _initial(v, code=None) -> np.ndarray:
    """A .global / .const variable's bytes as its initialiser gives them (zeros without one; PTX ISA 5.4.4);
    a function's name stands for its address in `code` (vtables, tables of function pointers: callgraph.py)."""
    data = np.zeros(max(v.size, 1), np.uint8)
    if v.init:
        esz = max(1, ptx_type(v.type).bits // 8)
        code = code or {}
        for i, x in enumerate(v.init):
            if isinstance(x, str) and x in code:
                x = code[x]
            if isinstance(x, str):
                raise PtxUnsupported(v.name, f"initialisers holding variables' addresses ({x}) are not modelled")
            data[i * esz:(i + 1) * esz] = np.frombuffer(int(x & ((1 << (8 * esz)) - 1)).to_bytes(esz, "little"),
                                                        np.uint8)
    return data


def _size(n: int) -> str:
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):,.1f} {unit}"
    return f"{n} bytes"


def _param_bytes(info: Param, value, L: Launch, writeback, placed) -> bytes:
    if isinstance(value, TextureObject):   # a .u64 texture / surface handle: the array, then its header (texture.py)
        base = _place(value.array, info.name, L, writeback, placed)
        return _place(value.header(base), info.name + " (texture header)", L, writeback, placed).to_bytes(8, "little")
    if info.kind == "pointer" or (isinstance(value, np.ndarray) and info.type in ("u64", "b64", "s64")
                                  and info.kind == "scalar"):
        if value is None:
            return (0).to_bytes(8, "little")
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            if not 0 <= int(value) < 1 << 64:
                raise PtxError(info.name, f"pointer value {show(value)} does not fit 64 bits")
            return int(value).to_bytes(8, "little")
        if not isinstance(value, np.ndarray):
            raise PtxError(info.name, f"a pointer parameter takes a numpy array, None or an int address, "
                                      f"got {type(value).__name__}")
        if value.dtype.hasobject:
            raise PtxError(info.name, "object arrays cannot be device buffers")
        return _place(value, info.name, L, writeback, placed).to_bytes(8, "little")
    if info.kind == "bytes":
        if isinstance(value, TensorMap):
            if info.size != 128:
                raise PtxError(info.name, f"a tensor map is 128 bytes; this parameter is {info.size}")
            addr = value.global_address
            if value.tensor is not None:
                addr = _place(value.tensor, info.name, L, writeback, placed)
            return value.to_bytes(addr)
        if isinstance(value, np.ndarray) and value.dtype == np.uint8:
            value = value.tobytes()
        elif hasattr(value, "to_bytes") and not isinstance(value, (int, np.integer)):
            value = value.to_bytes()
        if not isinstance(value, (bytes, bytearray)):
            raise PtxError(info.name, f"a .b8[{info.size}] parameter takes {info.size} bytes, got "
                                      f"{type(value).__name__}")
        if len(value) != info.size:
            raise PtxError(info.name, f"takes exactly {info.size} bytes, got {len(value)}")
        return bytes(value)
    return _scalar_bytes(info, value)


def _place(value: np.ndarray, name: str, L: Launch, writeback, placed) -> int:
    """The device address of a numpy array, mapping it once per launch (the same array passed twice, or as a
    pointer and inside a tensor map, is one allocation)."""
    key = id(value)
    if key in placed:
        return placed[key][0]
    if value.dtype.hasobject:
        raise PtxError(name, "object arrays cannot be device buffers")
    if value.flags.c_contiguous and value.flags.writeable:
        data = value.reshape(-1).view(np.uint8)
    else:
        data = np.ascontiguousarray(value).reshape(-1).view(np.uint8).copy()
        if value.flags.writeable:
            writeback.append((value, data))
    addr = L.gmem.allocate(data, name, writable=bool(value.flags.writeable), shape=value.shape,
                           itemsize=value.dtype.itemsize)
    placed[key] = (addr, value)  # keep the array alive while its id is a key
    return addr


def _scalar_bytes(info: Param, value) -> bytes:
    t = ptx_type(info.type)
    if value is None and t.bits == 64 and t.kind in "ub":  # nvcc declares pointers as plain .u64
        return bytes(8)
    if t.kind == "f":
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise PtxError(info.name, f"a .{info.type} parameter takes a number, got {type(value).__name__}")
        fmt = {32: "<f", 64: "<d"}.get(t.bits)
        if fmt is None:
            raise PtxUnsupported(info.name, f".{info.type} parameters")
        raw = struct.pack(fmt, float(value))
        if float(struct.unpack(fmt, raw)[0]) != float(value) and not np.isnan(float(value)):
            raise PtxError(info.name, f"{show(value)} is not exactly representable as .{info.type}")
        return raw
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise PtxError(info.name, f"a .{info.type} parameter takes an int, got {type(value).__name__}")
    v = int(value)
    lo, hi = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.kind == "s" else (0, (1 << t.bits) - 1)
    if t.kind == "b":
        lo = -(1 << (t.bits - 1))
    if not lo <= v <= hi:
        raise PtxError(info.name, f"{show(v)} does not fit .{info.type} [{lo}, {hi}]")
    return (v & ((1 << t.bits) - 1)).to_bytes(t.bits // 8, "little")


def _fell_off(fn):
    def op(W, m):
        raise KernelFault(fn.name, "execution ran past the last instruction without ret/exit")
    return op


class _Progress:
    """The progress line of a launch on stderr: CTAs done of all, CTAs and warp instructions per second, wall
    time. Redrawn when a cluster finishes and, on long rounds, at most every 0.25 s (machine.run_ctas ticks it)."""

    def __init__(self, total):
        self.total, self.n, self.t0 = total, 0, time.perf_counter()
        self.instructions, self.drawn = 0, 0.0

    def step(self, clusters: int = 1):
        self.n += clusters
        self.draw()

    def tick(self, instructions: int):
        self.instructions = instructions
        if time.perf_counter() - self.drawn > 0.25:
            self.draw()

    def draw(self):
        width = 30
        done = width * self.n // self.total
        now = time.perf_counter()
        dt = max(now - self.t0, 1e-9)
        self.drawn = now
        sys.stderr.write(f"\r[{'#' * done}{'.' * (width - done)}] {self.n}/{self.total} CTAs {self.n / dt:.1f}/s, "
                         f"{self.instructions / dt:,.0f} warp instructions/s, {dt:.1f} s")
        sys.stderr.flush()

    def done(self):
        sys.stderr.write("\n")


def _refused(ins, err):
    """The op of an instruction tcemu does not model: raises, naming it and its line, when a thread runs it."""
    rule = err.rule if ins.where() in err.rule else f"{err.rule} ({ins.where()})"

    def op(W, m):
        raise PtxUnsupported(err.field, rule)
    op.refused = True
    return op


def load(source) -> Module:
    """A Module from a PTX file path or PTX text."""
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source and
                                           source.endswith(".ptx")):
        path = os.fspath(source)
        if not isinstance(path, str) or "\0" in path or not os.path.isfile(path):
            raise PtxError("path", f"{show(path)} is not a readable file")
        try:
            with open(path, "rb") as f:
                raw = f.read(MAX_PTX_BYTES + 1)
        except OSError as e:
            raise PtxError("path", f"cannot read {show(path)} ({e.strerror or e})") from None
        return Module(_ptx_text(raw, "path"), os.path.basename(path))
    if isinstance(source, (bytes, bytearray)):
        source = _ptx_text(bytes(source), "source")
    if not isinstance(source, str):
        raise PtxError("source", f"expected a path or PTX text, got {type(source).__name__}")
    if len(source) > MAX_PTX_BYTES:
        raise PtxError("source", f"{len(source):,} characters of PTX; at most {MAX_PTX_BYTES:,}")
    return Module(source)


MAX_PTX_BYTES = 1 << 26  # one module's text (the largest bundled fixture is 85 KB)


def _ptx_text(raw: bytes, field: str) -> str:
    if len(raw) > MAX_PTX_BYTES:
        raise PtxError(field, f"more than {MAX_PTX_BYTES:,} bytes of PTX")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PtxError(field, f"PTX text is UTF-8 (ASCII in practice); byte {e.start} is not ({e.reason})") from None


_ = PtxSyntaxError
