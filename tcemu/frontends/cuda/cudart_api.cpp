// The device, error, memory, stream and event calls of tcemu's libcudart.so (cudart.cpp has the rest).
#include "cudart.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>

using namespace tcemu_rt;

extern "C" {

// ------------------------------------------------------------------------------------------ device
cudaError_t CUDARTAPI cudaGetDeviceCount(int* n) { if (!n) return ret(cudaErrorInvalidValue); *n = 1; return cudaSuccess; }
cudaError_t CUDARTAPI cudaGetDevice(int* d) { if (!d) return ret(cudaErrorInvalidValue); *d = 0; return cudaSuccess; }
cudaError_t CUDARTAPI cudaSetDevice(int d) { return d == 0 ? cudaSuccess : ret(cudaErrorInvalidDevice); }
cudaError_t CUDARTAPI cudaInitDevice(int d, unsigned, unsigned) { return cudaSetDevice(d); }
cudaError_t CUDARTAPI cudaSetDeviceFlags(unsigned) { return cudaSuccess; }
cudaError_t CUDARTAPI cudaGetDeviceFlags(unsigned* f) { if (f) *f = 0; return cudaSuccess; }
cudaError_t CUDARTAPI cudaDeviceSetCacheConfig(enum cudaFuncCache) { return cudaSuccess; }
// the device heap's size goes to the interpreter (runtime.set_heap: tcemu/ptx/heap.py); the others are kept as given
static size_t g_limits[16] = {1024, 1 << 20, 8 << 20};   // stack, printf FIFO, malloc heap (CUDA's defaults)
cudaError_t CUDARTAPI cudaDeviceSetLimit(enum cudaLimit limit, size_t value) {
  if ((unsigned)limit >= 16) return ret(cudaErrorUnsupportedLimit);
  // the heap's size as the interpreter takes it (at least tcemu/ptx/heap.py HEAP_MIN, as on an H200)
  if (limit == cudaLimitMallocHeapSize) value = (size_t)call_python("set_heap", "(K)", (unsigned long long)value);
  g_limits[limit] = value;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaDeviceGetLimit(size_t* v, enum cudaLimit limit) {
  if (!v) return ret(cudaErrorInvalidValue);
  if ((unsigned)limit >= 16) return ret(cudaErrorUnsupportedLimit);
  *v = g_limits[limit];
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaDeviceCanAccessPeer(int* can, int device, int peer) {   // one GPU: never its own peer
  if (!can) return ret(cudaErrorInvalidValue);
  if (device != 0 || peer != 0) return ret(cudaErrorInvalidDevice);
  *can = 0;
  return cudaSuccess;
}
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
  p->l2CacheSize = d.l2; p->persistingL2CacheMaxSize = d.l2 * 3 / 4; p->accessPolicyMaxWindowSize = 134213632;
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
    case cudaDevAttrMaxPersistingL2CacheSize: *value = d.l2 * 3 / 4; break;
    case cudaDevAttrMaxAccessPolicyWindowSize: *value = 134213632; break;
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
  for (const auto& [a, b] : M().live)
    if (!b.symbol) all.push_back(a);   // __device__ variables stay (a real reset would re-initialise them)
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
  return pool_alloc("cudaMallocAsync", p, size, nullptr);
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
    if (a && a->second.symbol) {
      warn("%s(%p): this is the memory of %s, not an allocation; called from %s", api, p, a->second.symbol,
           where(here()).c_str());
      return ret(cudaErrorInvalidValue);
    }
    if (a && a->first == reinterpret_cast<uintptr_t>(p) && !a->second.mapped) {
      warn("%s(%p): this is host memory registered with cudaHostRegister (cudaHostUnregister releases it); called "
           "from %s", api, p, where(here()).c_str());
      return ret(cudaErrorInvalidValue);
    }
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

}  // extern "C"

namespace tcemu_rt {
// A copy's direction names which side must be device memory (cudaMemcpyDefault: the pointers decide).
cudaError_t copy(const char* api, void* dst, const void* src, size_t n, cudaMemcpyKind kind, void* caller, bool run) {
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
  if (run) std::memmove(dst, src, n);
  return cudaSuccess;
}
}  // namespace tcemu_rt

extern "C" {

cudaError_t CUDARTAPI cudaMemcpy(void* dst, const void* src, size_t n, enum cudaMemcpyKind kind) {
  return copy("cudaMemcpy", dst, src, n, kind, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemcpyAsync(void* dst, const void* src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s) {
  if (Stream* g = capturing(s)) return capture_copy(g, "cudaMemcpyAsync", dst, src, n, kind);
  return copy("cudaMemcpyAsync", dst, src, n, kind, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t n, enum cudaMemcpyKind kind,
                                           cudaStream_t s) {
  if (Stream* g = capturing(s)) return capture_copy(g, "cudaMemcpyAsync", dst, src, n, kind);
  return copy("cudaMemcpyAsync", dst, src, n, kind, __builtin_return_address(0));
}

static cudaError_t copy2d(const char* api, void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                          size_t height, cudaMemcpyKind kind, void* caller, Stream* g = nullptr) {
  if (width > dpitch || width > spitch) return ret(cudaErrorInvalidValue);
  for (size_t r = 0; r < height; ++r) {
    void* d = static_cast<char*>(dst) + r * dpitch;
    const void* s = static_cast<const char*>(src) + r * spitch;
    cudaError_t e = g ? capture_copy(g, api, d, s, width, kind) : copy(api, d, s, width, kind, caller);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                   size_t height, enum cudaMemcpyKind kind) {
  return copy2d("cudaMemcpy2D", dst, dpitch, src, spitch, width, height, kind, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                        size_t height, enum cudaMemcpyKind kind, cudaStream_t s) {
  return copy2d("cudaMemcpy2DAsync", dst, dpitch, src, spitch, width, height, kind, __builtin_return_address(0),
                capturing(s));
}

}  // extern "C"

namespace tcemu_rt {
cudaError_t fill(const char* api, void* dst, int value, size_t n, void* caller, bool run) {
  Guard lock(g_lock);
  if (g_sticky != cudaSuccess) return ret(g_sticky);
  cudaError_t e = check_range(api, "destination", dst, n, caller);
  if (e != cudaSuccess) return ret(e);
  if (n && run) std::memset(dst, value, n);
  return cudaSuccess;
}
}  // namespace tcemu_rt

extern "C" {

cudaError_t CUDARTAPI cudaMemset(void* dst, int value, size_t n) {
  return fill("cudaMemset", dst, value, n, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemsetAsync(void* dst, int value, size_t n, cudaStream_t s) {
  if (Stream* g = capturing(s)) return capture_fill(g, "cudaMemsetAsync", dst, value & 0xFF, n, 1);
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
cudaError_t CUDARTAPI cudaMemset2DAsync(void* dst, size_t pitch, int value, size_t width, size_t height, cudaStream_t s) {
  if (Stream* g = capturing(s)) {
    if (width > pitch) return ret(cudaErrorInvalidValue);
    for (size_t r = 0; r < height; ++r) {
      cudaError_t e = capture_fill(g, "cudaMemset2DAsync", static_cast<char*>(dst) + r * pitch, value & 0xFF, width, 1);
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  }
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
  Guard lock(g_lock);
  if (Stream* st = capturing(s)) leave_capture(st, "cudaStreamDestroy");
  if (s && s != cudaStreamLegacy && s != cudaStreamPerThread) delete reinterpret_cast<Stream*>(s);
  return cudaSuccess;
}
// synchronising with a capturing stream is illegal, and ends the capture's hope of a graph (CUDA's rule)
static cudaError_t refuse_in_capture(cudaStream_t s, const char* api) {
  Stream* g = capturing(s);
  if (!g) return cudaSuccess;
  g->capture->invalidated = true;
  warn("%s on a capturing stream: cudaErrorStreamCaptureUnsupported, and the capture is invalidated; called from %s",
       api, where(here()).c_str());
  return ret(cudaErrorStreamCaptureUnsupported);
}
cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t s) {
  if (cudaError_t e = refuse_in_capture(s, "cudaStreamSynchronize")) return e;
  return cudaDeviceSynchronize();
}
cudaError_t CUDARTAPI cudaStreamQuery(cudaStream_t s) {
  if (cudaError_t e = refuse_in_capture(s, "cudaStreamQuery")) return e;
  return g_sticky != cudaSuccess ? ret(g_sticky) : cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) {
  Guard lock(g_lock);
  if (!e) return ret(cudaErrorInvalidResourceHandle);
  return capture_wait(s, reinterpret_cast<Event*>(e), flags);   // outside a capture: the event's work is done
}
cudaError_t CUDARTAPI cudaStreamGetPriority(cudaStream_t, int* p) { if (p) *p = 0; return cudaSuccess; }
cudaError_t CUDARTAPI cudaStreamGetFlags(cudaStream_t, unsigned* f) { if (f) *f = 0; return cudaSuccess; }
cudaError_t CUDARTAPI cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t fn, void* data, unsigned) {
  if (!fn) return ret(cudaErrorInvalidValue);
  if (capturing(s)) return ret(cudaErrorStreamCaptureUnsupported);  // CUDA: use cudaLaunchHostFunc in a capture
  fn(s, g_sticky, data);  // the stream's work is done already: launches run synchronously
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) {
  if (!fn) return ret(cudaErrorInvalidValue);
  if (Stream* g = capturing(s)) {
    Node* n = add_node(g, Node::kHost, "cudaLaunchHostFunc");
    n->fn = fn;
    n->data = data;
    return cudaSuccess;
  }
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
static cudaError_t event_record(cudaEvent_t e, cudaStream_t s, unsigned flags) {
  Guard lock(g_lock);
  if (!e) return ret(cudaErrorInvalidResourceHandle);
  auto* ev = reinterpret_cast<Event*>(e);
  if (capture_record(s, ev, flags)) return cudaSuccess;   // in a capture: the stream's dependencies, for a wait
  ev->t = Clock::now();
  ev->recorded = true;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t e, cudaStream_t s) { return event_record(e, s, 0); }
cudaError_t CUDARTAPI cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned flags) {
  return event_record(e, s, flags);
}
// an event last recorded in a capture stands for graph nodes, not for work done (CUDA's cudaErrorCapturedEvent)
static cudaError_t captured(const char* api, const Event* ev) {
  if (!ev->capture) return cudaSuccess;
  warn("%s: the event was last recorded in a capturing stream (cudaErrorCapturedEvent); called from %s", api,
       where(here()).c_str());
  return ret(cudaErrorCapturedEvent);
}
cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t e) {
  if (!e) return ret(cudaErrorInvalidResourceHandle);
  if (cudaError_t c = captured("cudaEventSynchronize", reinterpret_cast<Event*>(e))) return c;
  return g_sticky != cudaSuccess ? ret(g_sticky) : cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t e) {
  if (!e) return ret(cudaErrorInvalidResourceHandle);
  if (cudaError_t c = captured("cudaEventQuery", reinterpret_cast<Event*>(e))) return c;
  return g_sticky != cudaSuccess ? ret(g_sticky) : cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  if (!ms || !a || !b) return ret(cudaErrorInvalidValue);
  auto *ea = reinterpret_cast<Event*>(a), *eb = reinterpret_cast<Event*>(b);
  if (cudaError_t c = captured("cudaEventElapsedTime", ea->capture ? ea : eb)) return c;
  if (!ea->recorded || !eb->recorded) return ret(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(eb->t - ea->t).count();
  return cudaSuccess;
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t n, CUstream s) {
  Guard lock(g_lock);
  void* p = reinterpret_cast<void*>(dst);
  if (Stream* g = capturing(reinterpret_cast<cudaStream_t>(s)))
    return capture_fill(g, "cuMemsetD32Async", p, value, n, 4) == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (check_range("cuMemsetD32Async", "destination", p, n * 4, __builtin_return_address(0)) != cudaSuccess)
    return CUDA_ERROR_INVALID_VALUE;
  auto* q = static_cast<uint32_t*>(p);
  for (size_t i = 0; i < n; ++i) q[i] = value;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream s) {
  if (Stream* g = capturing(reinterpret_cast<cudaStream_t>(s)))
    return capture_fill(g, "cuMemsetD8Async", reinterpret_cast<void*>(dst), value, n, 1) == cudaSuccess
               ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  return fill("cuMemsetD8Async", reinterpret_cast<void*>(dst), value, n, __builtin_return_address(0)) == cudaSuccess
             ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
