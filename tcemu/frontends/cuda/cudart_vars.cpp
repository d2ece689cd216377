// __device__ and __constant__ variables of tcemu's libcudart.so: __cudaRegisterVar gives each one device memory
// (a block of the same reserved range as cudaMalloc's, holding the PTX initialiser from the first use of any
// variable of its fatbinary on, as CUDA loads a module lazily: nvcc leaves the host shadow zero), every launch of its fatbinary's kernels maps it as the PTX module's .global / .const
// symbol at that address (runtime.py, tcemu.ptx launch(symbols=...)), and the symbol calls copy to and from it.
// The program names a variable by its host shadow's address (the CUDA headers' templates pass &var).
#include "cudart.h"

#include <cstring>

using namespace tcemu_rt;

namespace tcemu_rt {

std::map<const void*, Var>& vars() {
  static auto* v = new std::map<const void*, Var>;  // never destroyed, as M()
  return *v;
}

PyObject* symbol_list(int fatbin) {
  PyObject* list = PyList_New(0);
  for (const auto& [host, v] : vars()) {
    if (v.fatbin != fatbin) continue;
    PyObject* t = Py_BuildValue("(sKn)", v.name.c_str(), (unsigned long long)(uintptr_t)v.device, (Py_ssize_t)v.size);
    PyList_Append(list, t);
    Py_DECREF(t);
  }
  return list;
}

// The module's initialisers of a fatbinary's __device__ / __constant__ variables, written into their device
// memory before the first use of any of them (as CUDA loads a module lazily): nvcc leaves the host shadow zero.
void init_vars(int fatbin) {
  bool pending = false;
  for (auto& [host, v] : vars()) pending |= v.fatbin == fatbin && !v.initialised;
  if (!pending) return;
  for (auto& [host, v] : vars())
    if (v.fatbin == fatbin) v.initialised = true;
  runtime_module();
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject* args = Py_BuildValue("(KiN)", (unsigned long long)(uintptr_t)fatbin_data(fatbin), fatbin,
                                 symbol_list(fatbin));
  long long r = call_tuple("initialise", args);
  PyGILState_Release(g);
  if (r != kLaunchOk) stop(kExitRefused, "the program ends here: tcemu cannot load the variables of this program "
                           "(above)");
}

}  // namespace tcemu_rt

static const char* kind_of(const Var& v) { return v.constant ? "__constant__" : "__device__"; }

// the variable the program names by `symbol`, or null (reported: cudaErrorInvalidSymbol)
static const Var* find_var(const char* api, const void* symbol) {
  auto it = vars().find(symbol);
  if (it != vars().end()) {
    init_vars(it->second.fatbin);
    return &it->second;
  }
  warn("%s: %p is not a registered __device__ or __constant__ variable (cudaErrorInvalidSymbol); called from %s", api,
       symbol, where(here()).c_str());
  return nullptr;
}

// [offset, offset + count) must lie inside the variable (the runtime's invalid-value rule)
static cudaError_t span(const char* api, const Var& v, size_t count, size_t offset) {
  if (offset <= v.size && count <= v.size - offset) return cudaSuccess;
  warn("%s: %zu bytes at offset %zu run past the end of %s %s (%zu bytes) (cudaErrorInvalidValue); called from %s",
       api, count, offset, kind_of(v), v.name.c_str(), v.size, where(here()).c_str());
  return ret(cudaErrorInvalidValue);
}

static cudaError_t to_symbol(const char* api, const void* symbol, const void* src, size_t count, size_t offset,
                             cudaMemcpyKind kind, cudaStream_t stream) {
  Guard lock(g_lock);
  const Var* v = find_var(api, symbol);
  if (!v) return ret(cudaErrorInvalidSymbol);
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
    return ret(cudaErrorInvalidMemcpyDirection);
  if (cudaError_t e = span(api, *v, count, offset)) return e;
  if (Stream* g = capturing(stream)) return capture_copy(g, api, v->device + offset, src, count, kind);
  return copy(api, v->device + offset, src, count, kind, nullptr);
}

static cudaError_t from_symbol(const char* api, void* dst, const void* symbol, size_t count, size_t offset,
                               cudaMemcpyKind kind, cudaStream_t stream) {
  Guard lock(g_lock);
  const Var* v = find_var(api, symbol);
  if (!v) return ret(cudaErrorInvalidSymbol);
  if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
    return ret(cudaErrorInvalidMemcpyDirection);
  if (cudaError_t e = span(api, *v, count, offset)) return e;
  if (Stream* g = capturing(stream)) return capture_copy(g, api, dst, v->device + offset, count, kind);
  return copy(api, dst, v->device + offset, count, kind, nullptr);
}

extern "C" {

void CUDARTAPI __cudaRegisterVar(void** handle, char* host_var, char*, const char* device_name, int, size_t size,
                                 int constant, int) {
  Guard lock(g_lock);
  ensure_at_exit();
  int index = static_cast<int>(reinterpret_cast<uintptr_t>(*handle)) - 1;
  char* p = static_cast<char*>(carve(size ? size : 1, constant ? "__constant__ variable" : "__device__ variable",
                                     true));
  if (!p) stop(kExitInternal, "no device memory for variable %s (%zu bytes)", device_name, size);
  std::memcpy(p, host_var, size);  // the module's initialiser follows at first use (init_vars)
  Var v{index, device_name, size, constant != 0, p};
  M().live[reinterpret_cast<uintptr_t>(p)].symbol = strdup((std::string(kind_of(v)) + " " + device_name).c_str());
  vars()[host_var] = v;
}

cudaError_t CUDARTAPI cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                                         enum cudaMemcpyKind kind) {
  return to_symbol("cudaMemcpyToSymbol", symbol, src, count, offset, kind, nullptr);
}
cudaError_t CUDARTAPI cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t count, size_t offset,
                                              enum cudaMemcpyKind kind) {
  return to_symbol("cudaMemcpyToSymbol", symbol, src, count, offset, kind, nullptr);
}
cudaError_t CUDARTAPI cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                                              enum cudaMemcpyKind kind, cudaStream_t stream) {
  return to_symbol("cudaMemcpyToSymbolAsync", symbol, src, count, offset, kind, stream);
}
cudaError_t CUDARTAPI cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src, size_t count, size_t offset,
                                                   enum cudaMemcpyKind kind, cudaStream_t stream) {
  return to_symbol("cudaMemcpyToSymbolAsync", symbol, src, count, offset, kind, stream);
}
cudaError_t CUDARTAPI cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                                           enum cudaMemcpyKind kind) {
  return from_symbol("cudaMemcpyFromSymbol", dst, symbol, count, offset, kind, nullptr);
}
cudaError_t CUDARTAPI cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t count, size_t offset,
                                                enum cudaMemcpyKind kind) {
  return from_symbol("cudaMemcpyFromSymbol", dst, symbol, count, offset, kind, nullptr);
}
cudaError_t CUDARTAPI cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset,
                                                enum cudaMemcpyKind kind, cudaStream_t stream) {
  return from_symbol("cudaMemcpyFromSymbolAsync", dst, symbol, count, offset, kind, stream);
}
cudaError_t CUDARTAPI cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t count, size_t offset,
                                                     enum cudaMemcpyKind kind, cudaStream_t stream) {
  return from_symbol("cudaMemcpyFromSymbolAsync", dst, symbol, count, offset, kind, stream);
}

cudaError_t CUDARTAPI cudaGetSymbolAddress(void** ptr, const void* symbol) {
  Guard lock(g_lock);
  if (!ptr) return ret(cudaErrorInvalidValue);
  const Var* v = find_var("cudaGetSymbolAddress", symbol);
  if (!v) return ret(cudaErrorInvalidSymbol);
  *ptr = v->device;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGetSymbolSize(size_t* size, const void* symbol) {
  Guard lock(g_lock);
  if (!size) return ret(cudaErrorInvalidValue);
  const Var* v = find_var("cudaGetSymbolSize", symbol);
  if (!v) return ret(cudaErrorInvalidSymbol);
  *size = v->size;
  return cudaSuccess;
}

}  // extern "C"
