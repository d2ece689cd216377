// tcemu's libcudart.so: the CUDA runtime API for an unmodified program, with kernels run by tcemu's PTX
// interpreter (tcemu/frontends/cuda/runtime.py, reached through an embedded Python).
//
// Device memory is host memory: cudaMalloc carves 4 KiB-aligned blocks out of one reserved address range,
// never reusing an address, and every launch maps each live block into the interpreter at its own address, so
// a kernel reads and writes the program's memory in place. Streams run in order, synchronously; events hold
// wall time. Kernels come from the fatbinary's PTX (__cudaRegisterFatBinary / __cudaRegisterFunction).
// Every runtime symbol this file does not define is a weak stub (cudart_stubs.cpp, generated from the real
// library's exports) that stops the program naming the call and its caller: never a silent success.
//
// Settings come from the environment `tcemu exec` sets: TCEMU_EXEC_ARCH (sm90 | sm100),
// TCEMU_EXEC_CONTINUE_ON_FAULT (1: a fault is cudaErrorLaunchFailure, else the program ends with status 1),
// TCEMU_EXEC_PYTHON / TCEMU_EXEC_SYSPATH (the interpreter and sys.path of the tcemu that started it).
#include <Python.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

extern "C" [[noreturn]] void tcemu_unsupported(const char* name, void* caller);

namespace {

constexpr int kExitFault = 1;     // a kernel fault (tcemu's "findings" status)
constexpr int kExitRefused = 2;   // an unsupported call or a program tcemu cannot run (tcemu's "bad input")
constexpr int kExitInternal = 3;  // tcemu's own Python side failed

std::recursive_mutex g_lock;  // one API call at a time (launches run on the interpreter, one after another)
using Guard = std::lock_guard<std::recursive_mutex>;

// ------------------------------------------------------------------------------------------- reporting
// A call site: the stack when it happened, resolved only when a report names it.
struct Site {
  void* pc[10];
  int n = 0;
};

Site here() {
  Site s;
  s.n = backtrace(s.pc, 10);
  return s;
}

struct Frame {
  std::string fn;    // the function (demangled), or empty
  std::string text;  // "FN at FILE:LINE in OBJECT (+OFFSET)", or "OBJECT+OFFSET"
  bool ours = false; // inside this library
};

Frame resolve(void* pc) {
  Frame f;
  Dl_info info, self;
  char buf[1024];
  if (!pc || !dladdr(pc, &info) || !info.dli_fname) {
    std::snprintf(buf, sizeof buf, "%p", pc);
    f.text = buf;
    return f;
  }
  f.ours = dladdr(reinterpret_cast<void*>(&resolve), &self) && self.dli_fbase == info.dli_fbase;
  const char* file = info.dli_fname[0] ? info.dli_fname : "the program";
  unsigned long off = (unsigned long)((char*)pc - (char*)info.dli_fbase);
  if (info.dli_sname) {
    f.fn = info.dli_sname;
    std::snprintf(buf, sizeof buf, "%s+%#lx in %s", info.dli_sname, (unsigned long)((char*)pc - (char*)info.dli_saddr),
                  file);
    f.text = buf;
    return f;
  }
  if (f.ours) return f;
  // no dynamic symbol (main is not exported unless -rdynamic): ask addr2line, on report paths only
  char hexoff[32];
  std::snprintf(hexoff, sizeof hexoff, "%#lx", off);
  std::string cmd = std::string("LD_PRELOAD= addr2line -f -C -e '") + info.dli_fname + "' " + hexoff + " 2>/dev/null";
  std::string line;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char text[512];
    if (std::fgets(text, sizeof text, p)) f.fn = text;
    if (std::fgets(text, sizeof text, p)) line = text;
    pclose(p);
  }
  while (!f.fn.empty() && (f.fn.back() == '\n' || f.fn.back() == '\r')) f.fn.pop_back();
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (f.fn == "??") f.fn.clear();
  bool known_line = !line.empty() && line.find("??") == std::string::npos && line.find(":?") == std::string::npos &&
                    line.find(":0") == std::string::npos;
  if (!f.fn.empty())
    std::snprintf(buf, sizeof buf, "%s%s%s in %s (+%#lx)", f.fn.c_str(), known_line ? " at " : "",
                  known_line ? line.c_str() : "", file, off);
  else std::snprintf(buf, sizeof buf, "%s+%#lx", file, off);
  f.text = buf;
  return f;
}

// The first frame of the program's own code: past this library and past the CUDA headers' inline wrappers
// (cudaMalloc<T>, cudaLaunchKernel<T>, __cudaLaunchKernel_helper) and nvcc's host stub of `kernel`.
std::string where(const Site& s, const char* kernel = nullptr) {
  std::string stub;
  if (kernel) {
    int status = 0;
    char* d = abi::__cxa_demangle(kernel, nullptr, nullptr, &status);
    if (d && status == 0) stub = d;
    std::free(d);
  }
  std::string first;
  for (int i = 0; i < s.n; ++i) {
    // a return address: the call is the byte before it (addr2line then names the call's line)
    Frame f = resolve(static_cast<char*>(s.pc[i]) - 1);
    if (f.ours) continue;
    if (first.empty()) first = f.text;
    std::string fn = f.fn;
    if (fn.rfind("cudaError ", 0) == 0) fn = fn.substr(10);
    if (fn.rfind("cuda", 0) == 0 || fn.rfind("__cuda", 0) == 0 || fn.rfind("__device_stub", 0) == 0 ||
        (!stub.empty() && fn == stub))
      continue;
    return f.text;
  }
  return first.empty() ? std::string("an unknown caller") : first;
}

[[noreturn]] void stop(int status, const char* fmt, ...) {
  std::fflush(stdout);
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "tcemu exec: ");
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  va_end(ap);
  std::fflush(nullptr);
  _exit(status);
}

void warn(const char* fmt, ...) {
  std::fflush(stdout);
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "tcemu exec: ");
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  va_end(ap);
  std::fflush(stderr);
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

bool blackwell() {
  const char* a = std::getenv("TCEMU_EXEC_ARCH");
  return a && std::strncmp(a, "sm100", 5) == 0;
}

// ---------------------------------------------------------------------------------------------- errors
thread_local cudaError_t t_last = cudaSuccess;
cudaError_t g_sticky = cudaSuccess;  // a launch failure: every later call that synchronises returns it

cudaError_t ret(cudaError_t e) {
  if (e != cudaSuccess) t_last = e;
  return e;
}

struct ErrorText { int code; const char* name; const char* text; };
const ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorNoKernelImageForDevice, "cudaErrorNoKernelImageForDevice",
     "no kernel image is available for execution on the device"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrorText* error_text(int code) {
  for (const auto& e : kErrors)
    if (e.code == code) return &e;
  return nullptr;
}

// ------------------------------------------------------------------------------------------ allocations
// One reserved range (PROT_NONE until allocated); a block is 4 KiB-aligned with a 64 KiB gap before the next,
// and freed blocks go back to PROT_NONE and are never reused, so a stale pointer stays an error.
constexpr std::size_t kReserve = std::size_t(1) << 38;  // 256 GiB of address space
constexpr std::size_t kGap = 64 << 10;

struct Alloc {
  std::size_t size, mapped;
  const char* kind;  // "cudaMalloc", "cudaMallocHost", ...
  Site site;
  bool device;       // device memory (else pinned host memory, still device-accessible)
};

struct Freed { std::size_t size; const char* kind; Site site; };

struct Memory {
  char* base = nullptr;
  std::size_t used = 0;
  std::map<uintptr_t, Alloc> live;
  std::map<uintptr_t, Freed> freed;
  std::size_t double_frees = 0;
};

Memory& M() {
  static Memory* m = new Memory;  // never destroyed: at_exit (an atexit handler) reads it after static destructors
  return *m;
}

void* carve(std::size_t size, const char* kind, bool device) {
  Memory& m = M();
  if (!m.base) {
    void* p = mmap(nullptr, kReserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) stop(kExitInternal, "cannot reserve %zu bytes of address space for device memory", kReserve);
    m.base = static_cast<char*>(p);
  }
  std::size_t mapped = (size + 4095) / 4096 * 4096;
  if (m.used + mapped + kGap > kReserve) return nullptr;
  char* p = m.base + m.used;
  if (mprotect(p, mapped, PROT_READ | PROT_WRITE) != 0) return nullptr;
  m.used += mapped + kGap;
  m.live[reinterpret_cast<uintptr_t>(p)] = {size, mapped, kind, here(), device};
  return p;
}

// the live allocation holding [p, p + n), or null
const std::pair<const uintptr_t, Alloc>* find_alloc(const void* p, std::size_t n = 1) {
  Memory& m = M();
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = m.live.upper_bound(a);
  if (it == m.live.begin()) return nullptr;
  --it;
  if (a >= it->first && a + (n ? n : 1) <= it->first + it->second.size) return &*it;
  return nullptr;
}

bool in_reserve(const void* p) {
  const char* c = static_cast<const char*>(p);
  return M().base && c >= M().base && c < M().base + kReserve;
}

cudaError_t release(void* p, const char* api, void* caller) {
  if (!p) return cudaSuccess;
  Memory& m = M();
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = m.live.find(a);
  if (it == m.live.end()) {
    auto f = m.freed.find(a);
    if (f != m.freed.end()) {
      ++m.double_frees;
      warn("%s(%p): double free: these %zu bytes (%s, called from %s) were already freed; called from %s", api, p,
           f->second.size, f->second.kind, where(f->second.site).c_str(), where(here()).c_str());
    } else {
      warn("%s(%p): not the start of a live allocation; called from %s", api, p, where(here()).c_str());
    }
    return cudaErrorInvalidValue;
  }
  char* c = reinterpret_cast<char*>(a);
  mmap(c, it->second.mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  m.freed[a] = {it->second.size, it->second.kind, it->second.site};
  m.live.erase(it);
  return cudaSuccess;
}

// device memory a copy or memset touches must lie inside one allocation (the driver's invalid-value rule)
cudaError_t check_range(const char* api, const char* what, const void* p, std::size_t n, void* caller) {
  if (n == 0 || find_alloc(p, n)) return cudaSuccess;
  warn("%s: the %s range [%p, +%zu bytes) is not inside one device allocation; called from %s", api, what, p, n,
       where(here()).c_str());
  return cudaErrorInvalidValue;
}

bool is_device(const void* p) { return in_reserve(p); }

// --------------------------------------------------------------------------------------- kernels, Python
struct Kernel { int fatbin; std::string name; int max_dynamic_smem = 48 << 10; };

struct Runtime {
  std::vector<const void*> fatbins;   // the fatbinary data (its header) of each registration
  std::map<const void*, Kernel> kernels;
  dim3 pending_grid, pending_block;
  std::size_t pending_smem = 0;
  cudaStream_t pending_stream = nullptr;
  int device = 0;
  PyObject* module = nullptr;
  bool at_exit_registered = false;
};

Runtime& R() {
  static Runtime* r = new Runtime;  // never destroyed, as M()
  return *r;
}

PyObject* runtime_module() {
  Runtime& r = R();
  if (r.module) return r.module;
  bool ours = false;
  if (!Py_IsInitialized()) {
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;
    config.parse_argv = 0;
    config.buffered_stdio = 1;
    if (const char* exe = std::getenv("TCEMU_EXEC_PYTHON"))
      PyConfig_SetBytesString(&config, &config.program_name, exe);
    PyStatus st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) stop(kExitInternal, "cannot start Python (%s)", st.err_msg ? st.err_msg : "?");
    ours = true;
  }
  PyGILState_STATE g = PyGILState_Ensure();
  PyRun_SimpleString(
      "import os, sys\n"
      "sys.path[:0] = [p for p in os.environ.get('TCEMU_EXEC_SYSPATH', '').split(os.pathsep) if p and p not in sys.path]\n");
  r.module = PyImport_ImportModule("tcemu.frontends.cuda.runtime");
  if (!r.module) {
    PyErr_Print();
    stop(kExitInternal, "cannot import tcemu.frontends.cuda.runtime (is tcemu on TCEMU_EXEC_SYSPATH?)");
  }
  PyGILState_Release(g);
  if (ours) PyEval_SaveThread();  // Py_Initialize left this thread holding the GIL
  return r.module;
}

// runtime.FN(*args) for a tuple `args` (a new reference, consumed; null: an error is set); its int result
long long call_tuple(const char* fn, PyObject* args) {
  std::fflush(stdout);
  PyObject* mod = runtime_module();
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject* f = args ? PyObject_GetAttrString(mod, fn) : nullptr;
  PyObject* r = f ? PyObject_CallObject(f, args) : nullptr;
  Py_XDECREF(f);
  Py_XDECREF(args);
  if (!r) {
    PyErr_Print();
    stop(kExitInternal, "internal error in tcemu.frontends.cuda.runtime.%s (above)", fn);
  }
  long long v = PyLong_AsLongLong(r);
  Py_DECREF(r);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Print();
    stop(kExitInternal, "tcemu.frontends.cuda.runtime.%s returned no int", fn);
  }
  PyGILState_Release(g);
  return v;
}

// runtime.FN(*args), args built by Py_BuildValue(fmt, ...) with fmt a tuple "(...)" of plain C values
long long call_python(const char* fn, const char* fmt, ...) {
  runtime_module();
  PyGILState_STATE g = PyGILState_Ensure();
  va_list ap;
  va_start(ap, fmt);
  PyObject* args = Py_VaBuildValue(fmt, ap);
  va_end(ap);
  long long v = call_tuple(fn, args);
  PyGILState_Release(g);
  return v;
}

// the live allocations as a Python list of (address, bytes, label)
PyObject* allocation_list() {
  PyObject* list = PyList_New(0);
  for (const auto& [a, b] : M().live) {
    char label[96];
    std::snprintf(label, sizeof label, "%s#%#lx", b.kind, (unsigned long)a);
    PyObject* t = Py_BuildValue("(Kns)", (unsigned long long)a, (Py_ssize_t)b.size, label);
    PyList_Append(list, t);
    Py_DECREF(t);
  }
  return list;
}

// runtime.launch's answers
constexpr int kLaunchOk = 0, kLaunchFault = 1, kLaunchBadConfig = 3;  // 2: refused (reported by Python)

cudaError_t launch(const char* api, const void* func, dim3 grid, dim3 block, dim3 cluster, std::size_t smem,
                   void** args, void* caller) {
  Guard lock(g_lock);
  if (g_sticky != cudaSuccess) return ret(g_sticky);
  auto it = R().kernels.find(func);
  if (it == R().kernels.end()) {
    warn("%s: %p is not a registered kernel (a host function pointer nvcc registered); called from %s", api, func,
         where(here()).c_str());
    return ret(cudaErrorInvalidDeviceFunction);
  }
  const Kernel& k = it->second;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0 ||
      block.x * block.y * block.z > 1024)
    return ret(cudaErrorInvalidConfiguration);
  if (smem > static_cast<std::size_t>(k.max_dynamic_smem)) {
    warn("%s: %s asks for %zu bytes of dynamic shared memory; above 48 KiB a kernel needs "
         "cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize) (set: %d); called from %s",
         api, k.name.c_str(), smem, k.max_dynamic_smem, where(here(), k.name.c_str()).c_str());
    return ret(cudaErrorInvalidValue);
  }
  runtime_module();
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject* pargs = Py_BuildValue("(Kis(III)(III)(III)nKN)", (unsigned long long)(uintptr_t)R().fatbins[k.fatbin],
                                 k.fatbin, k.name.c_str(), grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                 cluster.x, cluster.y, cluster.z, (Py_ssize_t)smem,
                                 (unsigned long long)(uintptr_t)args, allocation_list());
  long long r = call_tuple("launch", pargs);
  PyGILState_Release(g);
  std::fflush(stdout);
  if (r == kLaunchOk) return cudaSuccess;
  warn("the launch of %s came from %s", k.name.c_str(), where(here(), k.name.c_str()).c_str());
  switch (r) {
    case kLaunchFault:
      if (!env_flag("TCEMU_EXEC_CONTINUE_ON_FAULT")) stop(kExitFault, "the program ends at this kernel fault");
      g_sticky = cudaErrorLaunchFailure;
      return ret(cudaErrorLaunchFailure);
    case kLaunchBadConfig: return ret(cudaErrorInvalidConfiguration);
    default: stop(kExitRefused, "the program ends here: tcemu cannot run this launch (above)");
  }
}

void at_exit() {
  Guard lock(g_lock);
  Memory& m = M();
  if (!m.live.empty()) {
    std::size_t total = 0;
    std::fflush(stdout);
    for (const auto& [a, b] : m.live) {
      std::fprintf(stderr, "tcemu exec: leaked %zu bytes at %#lx (%s, called from %s)\n", b.size, (unsigned long)a,
                   b.kind, where(b.site).c_str());
      total += b.size;
    }
    std::fprintf(stderr, "tcemu exec: LEAK SUMMARY: %zu bytes leaked in %zu allocation%s\n", total, m.live.size(),
                 m.live.size() == 1 ? "" : "s");
  }
  if (m.double_frees)
    std::fprintf(stderr, "tcemu exec: ERROR SUMMARY: %zu double free%s\n", m.double_frees,
                 m.double_frees == 1 ? "" : "s");
  if (R().module || std::getenv("TCEMU_EXEC_RECORD")) call_python("at_exit", "()");
  std::fflush(nullptr);
}

void ensure_at_exit() {
  if (!R().at_exit_registered) {
    R().at_exit_registered = true;
    std::atexit(at_exit);
  }
}

// ------------------------------------------------------------------------------------- device properties
struct Device {
  const char* name;
  int major, minor, sms, l2, smem_optin, smem_sm, clock_khz, mem_clock_khz, bus_width;
  unsigned long long memory;
};
const Device kH100 = {"NVIDIA H100 80GB HBM3 (tcemu)", 9, 0, 132, 52428800, 232448, 233472, 1980000, 2619000, 5120,
                      85520809984ull};
const Device kB200 = {"NVIDIA B200 (tcemu)", 10, 0, 148, 132644864, 232448, 233472, 1965000, 3996000, 8192,
                      191503892480ull};
const Device& dev() { return blackwell() ? kB200 : kH100; }

using Clock = std::chrono::steady_clock;
struct Event { Clock::time_point t; bool recorded = false; };
struct Stream { int id; };

// ---------------------------------------------------------------------------------------- tensor maps
// cuTensorMapEncodeTiled writes tcemu's 128-byte format (tcemu/ptx/tensormap.py), checked there.
CUresult encode_tiled(CUtensorMap* map, CUtensorMapDataType dtype, cuuint32_t rank, void* address,
                      const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                      const cuuint32_t* estrides, CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                      CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  Guard lock(g_lock);
  if (!map || rank < 1 || rank > 5 || !dims || !box || !estrides || (rank > 1 && !strides))
    return CUDA_ERROR_INVALID_VALUE;
  long long r = call_python("encode_tiled", "(KiiKKKKKiiii)", (unsigned long long)(uintptr_t)map, (int)dtype, (int)rank,
                            (unsigned long long)(uintptr_t)address, (unsigned long long)(uintptr_t)dims,
                            (unsigned long long)(uintptr_t)strides, (unsigned long long)(uintptr_t)box,
                            (unsigned long long)(uintptr_t)estrides, (int)interleave, (int)swizzle, (int)l2, (int)oob);
  return r == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

// ===================================================================================== exported C API
extern "C" {

[[noreturn]] void tcemu_unsupported(const char* name, void* caller) {
  (void)caller;
  stop(kExitRefused, "unsupported CUDA runtime call %s (called from %s)", name, where(here()).c_str());
}

// ------------------------------------------------------------------------------------- registration
void** CUDARTAPI __cudaRegisterFatBinary(void* wrapper) {
  Guard lock(g_lock);
  ensure_at_exit();
  struct Wrapper { int magic, version; const void* data; void* filename; };
  const Wrapper* w = static_cast<const Wrapper*>(wrapper);
  if (w->magic != 0x466243b1) stop(kExitRefused, "__cudaRegisterFatBinary: wrapper magic %#x is not a fatbinary's",
                                   (unsigned)w->magic);
  R().fatbins.push_back(w->data);
  // the handle: a pointer whose value is the registration's index + 1
  auto* handle = new void*(reinterpret_cast<void*>(R().fatbins.size()));
  return handle;
}

void CUDARTAPI __cudaRegisterFatBinaryEnd(void**) {}
void CUDARTAPI __cudaUnregisterFatBinary(void**) {}

void CUDARTAPI __cudaRegisterFunction(void** handle, const char* host_fun, char* device_fun, const char*, int,
                                      uint3*, uint3*, dim3*, dim3*, int*) {
  Guard lock(g_lock);
  int index = static_cast<int>(reinterpret_cast<uintptr_t>(*handle)) - 1;
  R().kernels[host_fun] = {index, device_fun};
}

// __device__ variables: registered (nothing to do until the host names them: cudaMemcpyToSymbol is unsupported)
void CUDARTAPI __cudaRegisterVar(void**, char*, char*, const char*, int, size_t, int, int) {}
void CUDARTAPI __cudaRegisterManagedVar(void**, void**, char*, const char*, int, size_t, int, int) {}
char CUDARTAPI __cudaInitModule(void**) { return 1; }

cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t* kernel, const void* fun) {
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void*>(fun));
  return cudaSuccess;
}

unsigned CUDARTAPI __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t smem, struct CUstream_st* stream) {
  Guard lock(g_lock);
  R().pending_grid = grid;
  R().pending_block = block;
  R().pending_smem = smem;
  R().pending_stream = stream;
  return 0;
}

cudaError_t CUDARTAPI __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* smem, void* stream) {
  Guard lock(g_lock);
  *grid = R().pending_grid;
  *block = R().pending_block;
  *smem = R().pending_smem;
  *static_cast<cudaStream_t*>(stream) = R().pending_stream;
  return cudaSuccess;
}

cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t smem,
                                         cudaStream_t) {
  return launch("<<<>>>", reinterpret_cast<const void*>(kernel), grid, block, dim3(1, 1, 1), smem, args,
                __builtin_return_address(0));
}
cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t smem,
                                              cudaStream_t) {
  return launch("<<<>>>", reinterpret_cast<const void*>(kernel), grid, block, dim3(1, 1, 1), smem, args,
                __builtin_return_address(0));
}

cudaError_t CUDARTAPI cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t smem,
                                       cudaStream_t) {
  return launch("cudaLaunchKernel", func, grid, block, dim3(1, 1, 1), smem, args, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaLaunchKernel_ptsz(const void* func, dim3 grid, dim3 block, void** args, size_t smem,
                                            cudaStream_t) {
  return launch("cudaLaunchKernel", func, grid, block, dim3(1, 1, 1), smem, args, __builtin_return_address(0));
}

static cudaError_t launch_ex(const cudaLaunchConfig_t* config, const void* func, void** args, void* caller) {
  if (!config) return ret(cudaErrorInvalidValue);
  dim3 cluster(1, 1, 1);
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const cudaLaunchAttribute& a = config->attrs[i];
    switch (a.id) {
      case cudaLaunchAttributeClusterDimension:
        cluster = dim3(a.val.clusterDim.x, a.val.clusterDim.y, a.val.clusterDim.z);
        break;
      // scheduling hints with no effect on what a kernel computes when launches run one after another
      case cudaLaunchAttributeProgrammaticStreamSerialization:
      case cudaLaunchAttributeClusterSchedulingPolicyPreference:
      case cudaLaunchAttributePriority:
      case cudaLaunchAttributeCooperative:
        break;
      default:
        stop(kExitRefused, "unsupported launch attribute %d in cudaLaunchKernelExC (called from %s)",
             static_cast<int>(a.id), where(here()).c_str());
    }
  }
  return launch("cudaLaunchKernelExC", func, config->gridDim, config->blockDim, cluster, config->dynamicSmemBytes,
                args, caller);
}

cudaError_t CUDARTAPI cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  return launch_ex(config, func, args, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func, void** args) {
  return launch_ex(config, func, args, __builtin_return_address(0));
}

cudaError_t CUDARTAPI cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  Guard lock(g_lock);
  auto it = R().kernels.find(func);
  if (it == R().kernels.end()) return ret(cudaErrorInvalidDeviceFunction);
  switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize:
      if (value < 0 || value > dev().smem_optin) return ret(cudaErrorInvalidValue);
      it->second.max_dynamic_smem = std::max(value, 48 << 10);
      return cudaSuccess;
    case cudaFuncAttributePreferredSharedMemoryCarveout:
    case cudaFuncAttributeNonPortableClusterSizeAllowed:
    case cudaFuncAttributeRequiredClusterWidth:
    case cudaFuncAttributeRequiredClusterHeight:
    case cudaFuncAttributeRequiredClusterDepth:
    case cudaFuncAttributeClusterSchedulingPolicyPreference:
      return cudaSuccess;
    default:
      stop(kExitRefused, "unsupported cudaFuncSetAttribute attribute %d (called from %s)", static_cast<int>(attr),
           where(here()).c_str());
  }
}

cudaError_t CUDARTAPI cudaFuncGetAttributes(struct cudaFuncAttributes* attr, const void* func) {
  Guard lock(g_lock);
  auto it = R().kernels.find(func);
  if (!attr) return ret(cudaErrorInvalidValue);
  if (it == R().kernels.end()) return ret(cudaErrorInvalidDeviceFunction);
  std::memset(attr, 0, sizeof *attr);
  attr->maxThreadsPerBlock = 1024;
  attr->numRegs = 32;
  attr->ptxVersion = blackwell() ? 100 : 90;
  attr->binaryVersion = attr->ptxVersion;
  attr->maxDynamicSharedSizeBytes = it->second.max_dynamic_smem;
  attr->preferredShmemCarveout = -1;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaFuncSetCacheConfig(const void*, enum cudaFuncCache) { return cudaSuccess; }

// occupancy: threads (2048 per SM), blocks (32 per SM) and shared memory bound the count
cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, const void* func, int block, size_t smem) {
  if (!n || block <= 0) return ret(cudaErrorInvalidValue);
  if (!R().kernels.count(func)) return ret(cudaErrorInvalidDeviceFunction);
  int by_threads = 2048 / block, by_smem = smem ? static_cast<int>(dev().smem_sm / (smem + 1024)) : 32;
  *n = std::max(0, std::min({by_threads, 32, by_smem}));
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* n, const void* func, int block,
                                                                             size_t smem, unsigned) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, func, block, smem);
}

cudaError_t CUDARTAPI cudaOccupancyMaxActiveClusters(int* clusters, const void* func, const cudaLaunchConfig_t* config) {
  if (!clusters || !config) return ret(cudaErrorInvalidValue);
  if (!R().kernels.count(func)) return ret(cudaErrorInvalidDeviceFunction);
  unsigned size = 1;
  for (unsigned i = 0; i < config->numAttrs; ++i)
    if (config->attrs[i].id == cudaLaunchAttributeClusterDimension)
      size = config->attrs[i].val.clusterDim.x * config->attrs[i].val.clusterDim.y * config->attrs[i].val.clusterDim.z;
  *clusters = dev().sms / static_cast<int>(size ? size : 1);
  return cudaSuccess;
}

// ------------------------------------------------------------------------------------------ device
cudaError_t CUDARTAPI cudaGetDeviceCount(int* n) { if (!n) return ret(cudaErrorInvalidValue); *n = 1; return cudaSuccess; }
cudaError_t CUDARTAPI cudaGetDevice(int* d) { if (!d) return ret(cudaErrorInvalidValue); *d = 0; return cudaSuccess; }
cudaError_t CUDARTAPI cudaSetDevice(int d) { return d == 0 ? cudaSuccess : ret(cudaErrorInvalidDevice); }
cudaError_t CUDARTAPI cudaInitDevice(int d, unsigned, unsigned) { return cudaSetDevice(d); }
cudaError_t CUDARTAPI cudaSetDeviceFlags(unsigned) { return cudaSuccess; }
cudaError_t CUDARTAPI cudaGetDeviceFlags(unsigned* f) { if (f) *f = 0; return cudaSuccess; }
cudaError_t CUDARTAPI cudaDeviceSetCacheConfig(enum cudaFuncCache) { return cudaSuccess; }
cudaError_t CUDARTAPI cudaDeviceSetLimit(enum cudaLimit, size_t) { return cudaSuccess; }
cudaError_t CUDARTAPI cudaDeviceGetLimit(size_t* v, enum cudaLimit limit) {
  if (!v) return ret(cudaErrorInvalidValue);
  *v = limit == cudaLimitStackSize ? 1024 : limit == cudaLimitPrintfFifoSize ? (1 << 20) : 0;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaDeviceCanAccessPeer(int* can, int, int) { if (can) *can = 0; return cudaSuccess; }
cudaError_t CUDARTAPI cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaRuntimeGetVersion(int* v) { if (v) *v = CUDART_VERSION; return cudaSuccess; }
cudaError_t CUDARTAPI cudaDriverGetVersion(int* v) { if (v) *v = CUDART_VERSION; return cudaSuccess; }

cudaError_t CUDARTAPI cudaGetDeviceProperties(struct cudaDeviceProp* p, int device) {
  if (!p) return ret(cudaErrorInvalidValue);
  if (device != 0) return ret(cudaErrorInvalidDevice);
  const Device& d = dev();
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "%s", d.name);
  p->major = d.major; p->minor = d.minor;
  p->multiProcessorCount = d.sms;
  p->totalGlobalMem = d.memory;
  p->sharedMemPerBlock = 49152;
  p->sharedMemPerBlockOptin = d.smem_optin;
  p->sharedMemPerMultiprocessor = d.smem_sm;
  p->reservedSharedMemPerBlock = 1024;
  p->regsPerBlock = 65536; p->regsPerMultiprocessor = 65536;
  p->warpSize = 32;
  p->memPitch = 2147483647;
  p->maxThreadsPerBlock = 1024; p->maxThreadsPerMultiProcessor = 2048; p->maxBlocksPerMultiProcessor = 32;
  p->maxThreadsDim[0] = 1024; p->maxThreadsDim[1] = 1024; p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647; p->maxGridSize[1] = 65535; p->maxGridSize[2] = 65535;
  p->totalConstMem = 65536;
  p->textureAlignment = 512; p->texturePitchAlignment = 32;
  p->l2CacheSize = d.l2; p->persistingL2CacheMaxSize = d.l2 * 3 / 4;
  p->memoryBusWidth = d.bus_width;
  p->concurrentKernels = 1; p->asyncEngineCount = 2; p->unifiedAddressing = 1;
  p->managedMemory = 1; p->concurrentManagedAccess = 1; p->pageableMemoryAccess = 0;
  p->canMapHostMemory = 1; p->globalL1CacheSupported = 1; p->localL1CacheSupported = 1;
  p->streamPrioritiesSupported = 1; p->cooperativeLaunch = 1; p->clusterLaunch = 1;
  p->computePreemptionSupported = 1; p->hostNativeAtomicSupported = 0;
  p->ECCEnabled = 1; p->pciBusID = 0x18;
  p->memoryPoolsSupported = 1;
  p->deviceNumaId = -1; p->hostNumaId = -1;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGetDeviceProperties_v2(struct cudaDeviceProp* p, int device) {
  return cudaGetDeviceProperties(p, device);
}

cudaError_t CUDARTAPI cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  if (!value) return ret(cudaErrorInvalidValue);
  if (device != 0) return ret(cudaErrorInvalidDevice);
  const Device& d = dev();
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrMaxBlockDimX: case cudaDevAttrMaxBlockDimY: *value = 1024; break;
    case cudaDevAttrMaxBlockDimZ: *value = 64; break;
    case cudaDevAttrMaxGridDimX: *value = 2147483647; break;
    case cudaDevAttrMaxGridDimY: case cudaDevAttrMaxGridDimZ: *value = 65535; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = 49152; break;
    case cudaDevAttrTotalConstantMemory: *value = 65536; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMaxRegistersPerBlock: case cudaDevAttrMaxRegistersPerMultiprocessor: *value = 65536; break;
    case cudaDevAttrMultiProcessorCount: *value = d.sms; break;
    case cudaDevAttrClockRate: *value = d.clock_khz; break;
    case cudaDevAttrMemoryClockRate: *value = d.mem_clock_khz; break;
    case cudaDevAttrGlobalMemoryBusWidth: *value = d.bus_width; break;
    case cudaDevAttrL2CacheSize: *value = d.l2; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = 2048; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *value = 32; break;
    case cudaDevAttrComputeCapabilityMajor: *value = d.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = d.minor; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = d.smem_sm; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = d.smem_optin; break;
    case cudaDevAttrReservedSharedMemoryPerBlock: *value = 1024; break;
    case cudaDevAttrClusterLaunch: case cudaDevAttrCooperativeLaunch: case cudaDevAttrUnifiedAddressing:
    case cudaDevAttrManagedMemory: case cudaDevAttrConcurrentKernels: case cudaDevAttrStreamPrioritiesSupported:
    case cudaDevAttrMemoryPoolsSupported: case cudaDevAttrCanMapHostMemory: case cudaDevAttrGlobalL1CacheSupported:
    case cudaDevAttrConcurrentManagedAccess: case cudaDevAttrComputePreemptionSupported:
      *value = 1;
      break;
    case cudaDevAttrPageableMemoryAccess: case cudaDevAttrIntegrated: case cudaDevAttrKernelExecTimeout:
    case cudaDevAttrPciDomainId: case cudaDevAttrTccDriver: case cudaDevAttrHostNativeAtomicSupported:
      *value = 0;
      break;
    case cudaDevAttrAsyncEngineCount: *value = 2; break;
    case cudaDevAttrPciBusId: *value = 0x18; break;
    case cudaDevAttrPciDeviceId: *value = 0; break;
    case cudaDevAttrComputeMode: *value = cudaComputeModeDefault; break;
    case cudaDevAttrEccEnabled: *value = 1; break;
    default:
      stop(kExitRefused, "unsupported cudaDeviceGetAttribute attribute %d (called from %s)", static_cast<int>(attr),
           where(here()).c_str());
  }
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceSynchronize(void) { return g_sticky != cudaSuccess ? ret(g_sticky) : cudaSuccess; }
cudaError_t CUDARTAPI cudaDeviceReset(void) {
  Guard lock(g_lock);
  std::vector<uintptr_t> all;
  for (const auto& [a, b] : M().live) all.push_back(a);
  for (uintptr_t a : all) release(reinterpret_cast<void*>(a), "cudaDeviceReset", nullptr);
  g_sticky = cudaSuccess;
  t_last = cudaSuccess;
  return cudaSuccess;
}

// ------------------------------------------------------------------------------------------- errors
cudaError_t CUDARTAPI cudaGetLastError(void) {
  cudaError_t e = t_last;
  t_last = g_sticky;
  return e;
}
cudaError_t CUDARTAPI cudaPeekAtLastError(void) { return t_last; }
const char* CUDARTAPI cudaGetErrorString(cudaError_t e) {
  const ErrorText* t = error_text(e);
  return t ? t->text : "unrecognized error code";
}
const char* CUDARTAPI cudaGetErrorName(cudaError_t e) {
  const ErrorText* t = error_text(e);
  return t ? t->name : "cudaErrorUnknown";
}

// ------------------------------------------------------------------------------------------- memory
static cudaError_t alloc(void** p, size_t size, const char* kind, bool device, void* caller) {
  Guard lock(g_lock);
  ensure_at_exit();
  if (!p) return ret(cudaErrorInvalidValue);
  if (size == 0) { *p = nullptr; return cudaSuccess; }
  void* q = carve(size, kind, device);
  if (!q) { *p = nullptr; return ret(cudaErrorMemoryAllocation); }
  *p = q;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMalloc(void** p, size_t size) {
  return alloc(p, size, "cudaMalloc", true, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMallocAsync(void** p, size_t size, cudaStream_t) {
  return alloc(p, size, "cudaMallocAsync", true, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMallocManaged(void** p, size_t size, unsigned) {
  return alloc(p, size, "cudaMallocManaged", true, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMallocHost(void** p, size_t size) {
  return alloc(p, size, "cudaMallocHost", false, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaHostAlloc(void** p, size_t size, unsigned) {
  return alloc(p, size, "cudaHostAlloc", false, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMallocPitch(void** p, size_t* pitch, size_t width, size_t height) {
  if (!pitch) return ret(cudaErrorInvalidValue);
  *pitch = (width + 511) / 512 * 512;
  return alloc(p, *pitch * height, "cudaMallocPitch", true, __builtin_return_address(0));
}

static cudaError_t free_(void* p, const char* api, bool device, void* caller) {
  Guard lock(g_lock);
  if (p) {
    auto* a = find_alloc(p);
    if (a && a->first == reinterpret_cast<uintptr_t>(p) && a->second.device != device) {
      warn("%s(%p): this block came from %s; called from %s", api, p, a->second.kind, where(here()).c_str());
      return ret(cudaErrorInvalidValue);
    }
  }
  cudaError_t e = release(p, api, caller);
  return e == cudaSuccess ? cudaSuccess : ret(e);
}
cudaError_t CUDARTAPI cudaFree(void* p) { return free_(p, "cudaFree", true, __builtin_return_address(0)); }
cudaError_t CUDARTAPI cudaFreeAsync(void* p, cudaStream_t) {
  return free_(p, "cudaFreeAsync", true, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaFreeHost(void* p) { return free_(p, "cudaFreeHost", false, __builtin_return_address(0)); }

cudaError_t CUDARTAPI cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  Guard lock(g_lock);
  std::size_t used = 0;
  for (const auto& [a, b] : M().live) used += b.device ? b.size : 0;
  if (total) *total = dev().memory;
  if (free_bytes) *free_bytes = dev().memory - std::min<std::size_t>(used, dev().memory);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaPointerGetAttributes(struct cudaPointerAttributes* attr, const void* p) {
  Guard lock(g_lock);
  if (!attr) return ret(cudaErrorInvalidValue);
  std::memset(attr, 0, sizeof *attr);
  auto* a = find_alloc(p);
  attr->type = !a ? cudaMemoryTypeUnregistered
               : !a->second.device ? cudaMemoryTypeHost
               : std::strcmp(a->second.kind, "cudaMallocManaged") == 0 ? cudaMemoryTypeManaged : cudaMemoryTypeDevice;
  attr->device = 0;
  attr->devicePointer = a ? const_cast<void*>(p) : nullptr;
  attr->hostPointer = a && (attr->type != cudaMemoryTypeDevice) ? const_cast<void*>(p) : nullptr;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaHostGetDevicePointer(void** d, void* h, unsigned) {
  if (!d || !find_alloc(h)) return ret(cudaErrorInvalidValue);
  *d = h;
  return cudaSuccess;
}

// A copy's direction names which side must be device memory (cudaMemcpyDefault: the pointers decide).
static cudaError_t copy(const char* api, void* dst, const void* src, size_t n, cudaMemcpyKind kind, void* caller) {
  Guard lock(g_lock);
  if (g_sticky != cudaSuccess) return ret(g_sticky);
  if (n == 0) return cudaSuccess;
  if (!dst || !src) return ret(cudaErrorInvalidValue);
  bool dst_dev, src_dev;
  switch (kind) {
    case cudaMemcpyHostToHost: dst_dev = src_dev = false; break;
    case cudaMemcpyHostToDevice: dst_dev = true; src_dev = false; break;
    case cudaMemcpyDeviceToHost: dst_dev = false; src_dev = true; break;
    case cudaMemcpyDeviceToDevice: dst_dev = src_dev = true; break;
    case cudaMemcpyDefault: dst_dev = is_device(dst); src_dev = is_device(src); break;
    default: return ret(cudaErrorInvalidMemcpyDirection);
  }
  cudaError_t e = cudaSuccess;
  if (dst_dev && (e = check_range(api, "destination", dst, n, caller)) != cudaSuccess) return ret(e);
  if (src_dev && (e = check_range(api, "source", src, n, caller)) != cudaSuccess) return ret(e);
  std::memmove(dst, src, n);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMemcpy(void* dst, const void* src, size_t n, enum cudaMemcpyKind kind) {
  return copy("cudaMemcpy", dst, src, n, kind, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemcpyAsync(void* dst, const void* src, size_t n, enum cudaMemcpyKind kind, cudaStream_t) {
  return copy("cudaMemcpyAsync", dst, src, n, kind, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t n, enum cudaMemcpyKind kind,
                                           cudaStream_t) {
  return copy("cudaMemcpyAsync", dst, src, n, kind, __builtin_return_address(0));
}

static cudaError_t copy2d(const char* api, void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                          size_t height, cudaMemcpyKind kind, void* caller) {
  if (width > dpitch || width > spitch) return ret(cudaErrorInvalidValue);
  for (size_t r = 0; r < height; ++r) {
    cudaError_t e = copy(api, static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width,
                         kind, caller);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                   size_t height, enum cudaMemcpyKind kind) {
  return copy2d("cudaMemcpy2D", dst, dpitch, src, spitch, width, height, kind, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                        size_t height, enum cudaMemcpyKind kind, cudaStream_t) {
  return copy2d("cudaMemcpy2DAsync", dst, dpitch, src, spitch, width, height, kind, __builtin_return_address(0));
}

static cudaError_t fill(const char* api, void* dst, int value, size_t n, void* caller) {
  Guard lock(g_lock);
  if (g_sticky != cudaSuccess) return ret(g_sticky);
  cudaError_t e = check_range(api, "destination", dst, n, caller);
  if (e != cudaSuccess) return ret(e);
  if (n) std::memset(dst, value, n);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaMemset(void* dst, int value, size_t n) {
  return fill("cudaMemset", dst, value, n, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemsetAsync(void* dst, int value, size_t n, cudaStream_t) {
  return fill("cudaMemsetAsync", dst, value, n, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemset2D(void* dst, size_t pitch, int value, size_t width, size_t height) {
  if (width > pitch) return ret(cudaErrorInvalidValue);
  for (size_t r = 0; r < height; ++r) {
    cudaError_t e = fill("cudaMemset2D", static_cast<char*>(dst) + r * pitch, value, width, __builtin_return_address(0));
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaMemset2DAsync(void* dst, size_t pitch, int value, size_t width, size_t height, cudaStream_t) {
  return cudaMemset2D(dst, pitch, value, width, height);
}

// ------------------------------------------------------------------------------------ streams, events
cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* s) {
  static std::atomic<int> next{1};
  if (!s) return ret(cudaErrorInvalidValue);
  *s = reinterpret_cast<cudaStream_t>(new Stream{next++});
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { return cudaStreamCreate(s); }
cudaError_t CUDARTAPI cudaStreamCreateWithPriority(cudaStream_t* s, unsigned, int) { return cudaStreamCreate(s); }
cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t s) {
  if (s && s != cudaStreamLegacy && s != cudaStreamPerThread) delete reinterpret_cast<Stream*>(s);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t) { return cudaDeviceSynchronize(); }
cudaError_t CUDARTAPI cudaStreamQuery(cudaStream_t) { return g_sticky != cudaSuccess ? ret(g_sticky) : cudaSuccess; }
cudaError_t CUDARTAPI cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) { return cudaSuccess; }
cudaError_t CUDARTAPI cudaStreamGetPriority(cudaStream_t, int* p) { if (p) *p = 0; return cudaSuccess; }
cudaError_t CUDARTAPI cudaStreamGetFlags(cudaStream_t, unsigned* f) { if (f) *f = 0; return cudaSuccess; }
cudaError_t CUDARTAPI cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t fn, void* data, unsigned) {
  if (!fn) return ret(cudaErrorInvalidValue);
  fn(s, g_sticky, data);  // the stream's work is done already: launches run synchronously
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaLaunchHostFunc(cudaStream_t, cudaHostFn_t fn, void* data) {
  if (!fn) return ret(cudaErrorInvalidValue);
  fn(data);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t* e) {
  if (!e) return ret(cudaErrorInvalidValue);
  *e = reinterpret_cast<cudaEvent_t>(new Event());
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) { return cudaEventCreate(e); }
cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t e) {
  delete reinterpret_cast<Event*>(e);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  if (!e) return ret(cudaErrorInvalidResourceHandle);
  auto* ev = reinterpret_cast<Event*>(e);
  ev->t = Clock::now();
  ev->recorded = true;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned) { return cudaEventRecord(e, s); }
cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t e) {
  if (!e) return ret(cudaErrorInvalidResourceHandle);
  return g_sticky != cudaSuccess ? ret(g_sticky) : cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t e) { return cudaEventSynchronize(e); }
cudaError_t CUDARTAPI cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  if (!ms || !a || !b) return ret(cudaErrorInvalidValue);
  auto *ea = reinterpret_cast<Event*>(a), *eb = reinterpret_cast<Event*>(b);
  if (!ea->recorded || !eb->recorded) return ret(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(eb->t - ea->t).count();
  return cudaSuccess;
}

// ------------------------------------------------------------------------------------- driver entry points
CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType dtype, cuuint32_t rank, void* address,
                                        const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                        const cuuint32_t* estrides, CUtensorMapInterleave interleave,
                                        CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                        CUtensorMapFloatOOBfill oob) {
  return encode_tiled(map, dtype, rank, address, dims, strides, box, estrides, interleave, swizzle, l2, oob);
}

CUresult CUDAAPI cuTensorMapEncodeIm2col(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                         const cuuint64_t*, const int*, const int*, cuuint32_t, cuuint32_t,
                                         const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                         CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
  stop(kExitRefused, "unsupported CUDA driver call cuTensorMapEncodeIm2col: tcemu models tiled tensor maps only "
       "(called from %s)", where(here()).c_str());
}

static const char* driver_error(CUresult r, bool name) {
  switch (r) {
    case CUDA_SUCCESS: return name ? "CUDA_SUCCESS" : "no error";
    case CUDA_ERROR_INVALID_VALUE: return name ? "CUDA_ERROR_INVALID_VALUE" : "invalid argument";
    case CUDA_ERROR_OUT_OF_MEMORY: return name ? "CUDA_ERROR_OUT_OF_MEMORY" : "out of memory";
    case CUDA_ERROR_NOT_INITIALIZED: return name ? "CUDA_ERROR_NOT_INITIALIZED" : "initialization error";
    case CUDA_ERROR_LAUNCH_FAILED: return name ? "CUDA_ERROR_LAUNCH_FAILED" : "unspecified launch failure";
    case CUDA_ERROR_NOT_SUPPORTED: return name ? "CUDA_ERROR_NOT_SUPPORTED" : "operation not supported";
    default: return nullptr;
  }
}
CUresult CUDAAPI cuGetErrorString(CUresult r, const char** s) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  *s = driver_error(r, false);
  return *s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult CUDAAPI cuGetErrorName(CUresult r, const char** s) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  *s = driver_error(r, true);
  return *s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t n, CUstream) {
  Guard lock(g_lock);
  void* p = reinterpret_cast<void*>(dst);
  if (check_range("cuMemsetD32Async", "destination", p, n * 4, __builtin_return_address(0)) != cudaSuccess)
    return CUDA_ERROR_INVALID_VALUE;
  auto* q = static_cast<uint32_t*>(p);
  for (size_t i = 0; i < n; ++i) q[i] = value;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream) {
  return fill("cuMemsetD8Async", reinterpret_cast<void*>(dst), value, n, __builtin_return_address(0)) == cudaSuccess
             ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"

namespace {

// An entry point nobody implemented: a slot that remembers the name and stops when the program calls it.
constexpr int kSlots = 32;
const char* g_slot_names[kSlots];
int g_slots_used = 0;

template <int I>
int driver_slot() {
  stop(kExitRefused, "unsupported CUDA driver call %s (reached through cudaGetDriverEntryPoint; called from %s)",
       g_slot_names[I], where(here()).c_str());
}

template <int... I>
constexpr std::array<void*, sizeof...(I)> slot_table(std::integer_sequence<int, I...>) {
  return {reinterpret_cast<void*>(&driver_slot<I>)...};
}

void* driver_symbol(const char* symbol) {
  struct Entry { const char* name; void* fn; };
  static const Entry known[] = {
      {"cuTensorMapEncodeTiled", reinterpret_cast<void*>(&cuTensorMapEncodeTiled)},
      {"cuTensorMapEncodeIm2col", reinterpret_cast<void*>(&cuTensorMapEncodeIm2col)},
      {"cuGetErrorString", reinterpret_cast<void*>(&cuGetErrorString)},
      {"cuGetErrorName", reinterpret_cast<void*>(&cuGetErrorName)},
      {"cuMemsetD32Async", reinterpret_cast<void*>(&cuMemsetD32Async)},
      {"cuMemsetD8Async", reinterpret_cast<void*>(&cuMemsetD8Async)},
  };
  for (const auto& e : known)
    if (std::strcmp(e.name, symbol) == 0) return e.fn;
  static const auto table = slot_table(std::make_integer_sequence<int, kSlots>());
  for (int i = 0; i < g_slots_used; ++i)
    if (std::strcmp(g_slot_names[i], symbol) == 0) return table[i];
  if (g_slots_used == kSlots) return nullptr;
  g_slot_names[g_slots_used] = strdup(symbol);
  return table[g_slots_used++];
}

cudaError_t entry_point(const char* symbol, void** fn, cudaDriverEntryPointQueryResult* status) {
  Guard lock(g_lock);
  if (!symbol || !fn) return ret(cudaErrorInvalidValue);
  *fn = driver_symbol(symbol);
  if (status) *status = *fn ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return *fn ? cudaSuccess : ret(cudaErrorSymbolNotFound);
}

}  // namespace

extern "C" {
cudaError_t CUDARTAPI cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned long long,
                                              enum cudaDriverEntryPointQueryResult* status) {
  return entry_point(symbol, fn, status);
}
cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int, unsigned long long,
                                                       enum cudaDriverEntryPointQueryResult* status) {
  return entry_point(symbol, fn, status);
}
}  // extern "C"
