"""A Triton driver backed by tcemu: ordinary `kernel[grid](...)` launches on CPU tensors run on tcemu.

Switched on before the first launch by `TCEMU_TRITON=sm90` (or `sm100`) in the environment, through the
`triton.backends` entry point `tcemu` (the small `tcemu_triton` package), or by `tcemu.triton.activate()`.
The driver reports an H100 (sm90) or a B200 (sm100) as Triton's CUDA driver would: GPUTarget("cuda", 90 or
100, 32), that device's SM count, registers and shared memory. Triton then compiles exactly as for that GPU,
with its own NVIDIA backend (same specialisation, same PTX, same cubin), and the launch runs the PTX on tcemu
(triton_launch.Launcher).

What else it does while active:
- numpy arrays (and tcemu.triton.TensorDescriptor over them) are accepted as kernel arguments, specialised as
  a tensor of that dtype at that address would be;
- the autotuner's benchmarker runs each config once and times it on the CPU; `triton.testing.do_bench` times
  the launches on the CPU too (the device interface's events read the wall clock): emulator time, not GPU time;
- where torch has no CUDA, `torch.cuda.get_device_capability`, `get_device_properties`, `get_device_name`,
  `current_device`, `synchronize` and `device(...)` answer for the emulated device (user code and Triton's tests
  ask them).
"""
import contextlib
import os
import struct
import sys
import time
import types
import warnings

import numpy as np

from ..core.validate import show
from ..ptx import PtxUnsupported
from .triton_args import TensorDescriptor, TritonError
from . import triton_launch
from .triton_launch import Launcher, last_launch

__all__ = ["ARCHS", "DEVICES", "Driver", "activate", "deactivate", "env_arch", "last_launch", "bench_once"]

ARCHS = {"sm90": 90, "sm100": 100}
# what cudaGetDeviceProperties says on an H100 SXM5 and a B200 (shared memory: the opt-in per-block maximum)
DEVICES = {
    "sm90": {"name": "NVIDIA H100 80GB HBM3", "multiprocessor_count": 132, "max_shared_mem": 232448,
             "max_num_regs": 65536, "warpSize": 32, "sm_clock_rate": 1980000, "mem_clock_rate": 2619000,
             "mem_bus_width": 5120, "total_memory": 85520809984, "max_threads_per_sm": 2048},
    "sm100": {"name": "NVIDIA B200", "multiprocessor_count": 148, "max_shared_mem": 232448,
              "max_num_regs": 65536, "warpSize": 32, "sm_clock_rate": 1965000, "mem_clock_rate": 3996000,
              "mem_bus_width": 8192, "total_memory": 191537496064, "max_threads_per_sm": 2048},
}
_DEVICE_INDEX = {"sm90": 90, "sm100": 100}   # Triton caches per device number: none a CUDA device has


def env_arch():
    """The arch TCEMU_TRITON asks for, or None when it is unset (or empty, or "0")."""
    value = os.environ.get("TCEMU_TRITON", "")
    if value in ("", "0"):
        return None
    if value not in ARCHS:
        raise TritonError("TCEMU_TRITON", f"{show(value)}: sm90 or sm100 (unset, Triton's own drivers)")
    return value


# ------------------------------------------------------------------------------------------- the device

def _regcount(cubin, name):
    """Registers per thread of kernel `name` in a cubin (ELF): the EIATTR_REGCOUNT record of .nv.info for the
    kernel's symbol (the sh_info of its .text.<name> section)."""
    try:
        if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
            return 0
        shoff, = struct.unpack_from("<Q", cubin, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
        sections = {}
        heads = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
        strtab = heads[shstrndx][4]
        for h in heads:
            sections[cubin[strtab + h[0]:cubin.index(b"\0", strtab + h[0])].decode()] = h
        symbol = sections[f".text.{name}"][7]
        info = sections[".nv.info"]
        data, i = cubin[info[4]:info[4] + info[5]], 0
        while i + 4 <= len(data):
            fmt, attr = data[i], data[i + 1]
            size = struct.unpack_from("<H", data, i + 2)[0] if fmt == 4 else 0
            if fmt == 4 and attr == 0x2F and size == 8 and struct.unpack_from("<I", data, i + 4)[0] == symbol:
                return struct.unpack_from("<I", data, i + 8)[0]
            i += 4 + size
    except (ValueError, IndexError, KeyError, struct.error, UnicodeDecodeError):
        pass
    return 0


class Utils:
    """What Triton asks of `driver.active.utils`."""

    def __init__(self, arch):
        self.arch = arch

    def get_device_properties(self, device=None):
        return {k: v for k, v in DEVICES[self.arch].items() if k not in ("name", "total_memory")}

    def get_device_capability(self, device=None):
        return divmod(ARCHS[self.arch], 10)

    def load_binary(self, name, kernel, shared, device):
        """(module, function, registers, spills, max threads per block), as cuModuleLoadData reports them."""
        regs = _regcount(bytes(kernel), name)
        per_warp = -(-max(regs, 1) * 32 // 256) * 256   # registers are allocated 256 per warp
        max_threads = min(1024, 65536 // per_warp * 32)
        return 1, 1, regs, 0, max_threads

    def unload_module(self, module):
        pass

    def get_current_device(self):
        return _DEVICE_INDEX[self.arch]

    def set_current_device(self, device):
        pass

    def get_default_stream(self, device=None):
        return 0

    def is_stream_capturing(self, stream=None):
        return False

    def set_printf_fifo_size(self, size):
        pass

    def cuOccupancyMaxActiveClusters(self, function, shared, cluster):
        return DEVICES[self.arch]["multiprocessor_count"] // max(int(cluster), 1)


class _Event:
    """A device event that reads the host's wall clock (timings are the emulator's)."""

    def __init__(self, enable_timing=True, **_):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


class _DeviceInterface:
    """Triton's `get_device_interface()` (torch.cuda on a GPU), for do_bench and the autotuner."""
    Event = _Event

    @staticmethod
    def synchronize(device=None):
        pass

    @staticmethod
    def current_device():
        return 0

    @staticmethod
    @contextlib.contextmanager
    def stream(stream=None):
        yield


def bench_once(kernel_call, quantiles=None, return_mode="mean", **_):
    """The driver's benchmarker (the autotuner's default): one call, its wall time on the CPU in ms. A config
    whose kernel uses an instruction tcemu does not model is timed as infinitely slow (with a warning), as
    Triton's autotuner times a config the GPU cannot run (OutOfResources)."""
    t0 = time.perf_counter()
    try:
        kernel_call()
    except PtxUnsupported as e:
        warnings.warn(f"autotune: a config is left out: {e.field}: {e.rule.splitlines()[0]}", stacklevel=2)
        ms = float("inf")
    else:
        ms = (time.perf_counter() - t0) * 1e3
    if quantiles is not None:
        return [ms] * len(quantiles)
    return [ms] if return_mode == "all" else ms


_CPP = {"i1": "int8_t", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t", "i64": "int64_t", "u1": "uint8_t",
        "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t", "fp16": "double",
        "bf16": "double", "fp32": "double", "f32": "double", "fp64": "double", "nvTmaDesc": "CUtensorMap"}


class Driver:
    """Triton's active driver, backed by tcemu (see the module docstring)."""

    def __init__(self, arch="sm90", torch_queries=False):
        if arch not in ARCHS:
            raise TritonError("arch", f"expected one of {sorted(ARCHS)}, got {show(arch)}")
        self.arch = arch
        self.utils = Utils(arch)
        self.launcher_cls = Launcher
        self.torch_queries = torch_queries   # answer torch.cuda's device queries once torch is imported

    def _torch(self):
        if self.torch_queries and "torch" in sys.modules:
            self.torch_queries = False
            _install_torch_cuda(self.arch)

    @staticmethod
    def is_active():
        return True

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget  # optional dependency (triton)
        self._torch()
        return GPUTarget("cuda", ARCHS[self.arch], 32)

    def get_active_torch_device(self):
        import torch  # optional dependency (torch)
        self._torch()
        return torch.device("cpu")

    def get_current_device(self):
        self._torch()
        return _DEVICE_INDEX[self.arch]

    def set_current_device(self, device):
        pass

    def get_current_stream(self, device=None):
        return 0

    def get_device_capability(self, device=None):
        return self.utils.get_device_capability(device)

    def get_device_interface(self):
        return _DeviceInterface

    def get_benchmarker(self):
        return bench_once

    def get_empty_cache_for_benchmark(self):
        return None

    def clear_cache(self, cache):
        pass

    def map_python_to_cpp_type(self, ty):
        return "CUdeviceptr" if ty.startswith("*") else "CUtensorMap" if ty.startswith("tensordesc") else _CPP[ty]

    def assemble_tensormap_to_arg(self, tensormaps_info, args):
        return args

    def allocate_default_profile_scratch(self, size, alignment, stream):
        return np.zeros(size, np.int8)

    def __repr__(self):
        return f"tcemu Triton driver ({self.arch}: {DEVICES[self.arch]['name']}, emulated)"


# ------------------------------------------------------------------------------------------- switching on

class _NumpyPointer:
    """A numpy array as Triton's specialisation sees a tensor: its dtype and its host address."""

    def __init__(self, array):
        self.tcemu_array = array
        self.dtype = array.dtype
        self.shape = array.shape

    def data_ptr(self):
        return self.tcemu_array.__array_interface__["data"][0]


def _specializer(native):
    def specialize(backend, arg, *rest):
        if isinstance(arg, np.ndarray):
            arg = _NumpyPointer(arg)
        elif isinstance(arg, TensorDescriptor):
            from triton.tools.tensor_descriptor import TensorDescriptor as TD  # optional dependency (triton)
            arg = TD(_NumpyPointer(arg.base), arg.shape, arg.strides, arg.block_shape)
        elif isinstance(arg, (np.integer, np.floating, np.bool_)):
            arg = arg.item()
        return native(backend, arg, *rest)
    specialize.tcemu = True
    return specialize


def _install_numpy_specialization():
    import triton.runtime.jit as jit  # optional dependency (triton)
    if not getattr(jit.native_specialize_impl, "tcemu", False):
        jit.native_specialize_impl = _specializer(jit.native_specialize_impl)


def _install_torch_cuda(arch):
    """Let torch.cuda's device queries answer for the emulated device where torch has no CUDA."""
    torch = sys.modules.get("torch")
    if torch is None or torch.cuda.is_available():
        return
    dev = DEVICES[arch]
    major, minor = divmod(ARCHS[arch], 10)
    props = types.SimpleNamespace(name=dev["name"] + " (tcemu)", major=major, minor=minor,
                                  multi_processor_count=dev["multiprocessor_count"], total_memory=dev["total_memory"],
                                  warp_size=32, max_threads_per_multi_processor=dev["max_threads_per_sm"],
                                  shared_memory_per_block_optin=dev["max_shared_mem"], regs_per_multiprocessor=65536)
    cuda = torch.cuda
    saved = cuda.__dict__.setdefault("_tcemu_saved", {})
    for name, fn in (("get_device_capability", lambda device=None: (major, minor)),
                     ("get_device_properties", lambda device=None: props),
                     ("get_device_name", lambda device=None: props.name),
                     ("current_device", lambda: 0),
                     ("synchronize", lambda device=None: None),
                     ("device", _NoDevice)):
        saved.setdefault(name, getattr(cuda, name))
        setattr(cuda, name, fn)


class _NoDevice:
    """torch.cuda.device(...) as a context that selects nothing: one device is emulated."""

    def __init__(self, device=None):
        self.idx = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _restore_torch_cuda():
    torch = sys.modules.get("torch")
    saved = getattr(getattr(torch, "cuda", None), "_tcemu_saved", None) if torch is not None else None
    for name, fn in (saved or {}).items():
        setattr(torch.cuda, name, fn)
    if saved:
        saved.clear()


def make_driver(arch=None):
    """The driver for TCEMU_TRITON (or `arch`), with numpy arguments and torch.cuda's queries switched on."""
    arch = arch or env_arch() or "sm90"
    drv = Driver(arch, torch_queries=True)
    _install_numpy_specialization()
    drv._torch()
    return drv


LAUNCH_KEYS = {"printf", "timeout", "max_instructions", "check_layouts", "zero_init_shared", "ctas", "progress",
               "trace", "resident", "check_races", "lockstep", "scheduler"}


def launch_options(options):
    """Module.launch options a caller may set for the driver's launches (the driver sets grid, block, cluster,
    shared memory and arguments itself)."""
    if not isinstance(options, dict):
        raise TritonError("launch", f"must be a dict of Module.launch options, got {show(options)}")
    bad = sorted(str(k) for k in options if k not in LAUNCH_KEYS)
    if bad:
        raise TritonError("launch", f"unknown options {bad}: the driver sets grid, block, cluster, shared memory and "
                                    f"arguments; these may be given: {sorted(LAUNCH_KEYS)}")
    return dict(options)


def activate(arch="sm90", **launch):
    """Make tcemu Triton's active driver: every later `kernel[grid](...)` compiles for sm_90a (arch="sm90",
    an H100) or sm_100a ("sm100", a B200) and runs on tcemu. Call it before the first launch. Sets
    TCEMU_TRITON for child processes too. Returns the driver. `launch`: tcemu.ptx Module.launch options for
    every launch, e.g. timeout=600 (seconds; past it a BudgetExceeded names what each warp was doing).

    A launch writes its results into the argument tensors in place. A fault raises tcemu.ptx.KernelFault
    (naming the instruction and its Triton source line) and leaves the tensors as the kernel left them."""
    if not isinstance(arch, str) or arch not in ARCHS:
        raise TritonError("arch", f"expected one of {sorted(ARCHS)}, got {show(arch)}")
    launch = launch_options(launch)
    try:
        from triton.runtime import driver  # optional dependency (triton)
    except ImportError as e:
        raise TritonError("triton", f"Triton is not installed ({e}); pip install 'tcemu[triton]'") from None
    drv = make_driver(arch)
    os.environ["TCEMU_TRITON"] = arch
    _register_backend()
    driver.set_active(drv)
    driver._default = drv   # reset_active() (Triton's tests call it) comes back to tcemu
    triton_launch.LAUNCH_OPTIONS.clear()
    triton_launch.LAUNCH_OPTIONS.update(launch)
    return drv


def _register_backend():
    """Triton's backend list holds tcemu's pair as the entry point would put it there (for a checkout that is not
    installed): code that asks whether any backend's driver is active (triton._internal_testing) then sees it."""
    from triton.backends import Backend, backends  # optional dependency (triton)
    if "tcemu" not in backends:
        from tcemu_triton.compiler import TcemuCompiler  # the entry point's own classes
        from tcemu_triton.driver import TcemuDriver
        backends["tcemu"] = Backend(compiler=TcemuCompiler, driver=TcemuDriver)


def deactivate():
    """Undo `activate`: Triton picks its driver again as without tcemu (TCEMU_TRITON unset)."""
    from triton.runtime import driver  # optional dependency (triton)
    os.environ.pop("TCEMU_TRITON", None)
    _restore_torch_cuda()
    triton_launch.LAUNCH_OPTIONS.clear()
    driver._default = None
    driver._active = None


@contextlib.contextmanager
def using(arch, **options):
    """tcemu's driver for the launches inside the block (Triton's previous driver afterwards), with extra
    Module.launch options; tcemu.triton.run launches through this."""
    from triton.runtime import driver  # optional dependency (triton)
    options = launch_options(options)
    saved = driver._active, driver._default, dict(triton_launch.LAUNCH_OPTIONS)
    current = saved[0]
    if not (isinstance(current, Driver) and current.arch == arch):
        current = Driver(arch)
        _install_numpy_specialization()
    driver._active = current
    triton_launch.LAUNCH_OPTIONS.clear()
    triton_launch.LAUNCH_OPTIONS.update(options)
    try:
        yield current
    finally:
        driver._active, driver._default = saved[0], saved[1]
        triton_launch.LAUNCH_OPTIONS.clear()
        triton_launch.LAUNCH_OPTIONS.update(saved[2])
