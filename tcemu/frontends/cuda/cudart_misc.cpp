// The runtime calls of tcemu's libcudart.so that ordinary programs and the CUDA samples reach beside launches and
// plain memory (cudart.cpp, cudart_api.cpp; cudart_memory.cpp has registered, managed and pool memory): cooperative
// launches and graph kernel node attributes, peer copies and peer access on a one-GPU machine, 3-D linear memory,
// stream attributes, occupancy and small device queries. Each returns what CUDA 13 returns on one H100 and checks
// its arguments as CUDA does; cudaMemcpy3D reaches CUDA arrays through cudart_texture.cpp.
#include "cudart.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

using namespace tcemu_rt;

namespace {

cudaError_t bad(const char* api, const char* why, cudaError_t e) {
  warn("%s: %s (%s); called from %s", api, why, error_text(e) ? error_text(e)->name : "?", where(here()).c_str());
  return ret(e);
}

// ------------------------------------------------------------------------------------------- 3-D linear copies
// one row of n bytes at (x, y, z) of a pitched pointer
char* row(const cudaPitchedPtr& p, const cudaPos& pos, std::size_t y, std::size_t z) {
  return static_cast<char*>(p.ptr) + (pos.z + z) * p.pitch * p.ysize + (pos.y + y) * p.pitch + pos.x;
}

cudaError_t copy3d(const char* api, const cudaMemcpy3DParms* p, cudaStream_t s, void* caller) {
  if (!p) return ret(cudaErrorInvalidValue);
  if (p->srcArray || p->dstArray) {   // an array side as a pitched pointer (cudart_texture.cpp); the extent and the
    cudaMemcpy3DParms q = *p;         // array side's x position count elements (CUDA Runtime API, cudaMemcpy3D)
    std::size_t es = 0, es2 = 0;
    if (p->srcArray && !array_pitched(p->srcArray, &q.srcPtr, &es)) return bad(api, "srcArray is not a live CUDA array",
                                                                               cudaErrorInvalidResourceHandle);
    if (p->dstArray && !array_pitched(p->dstArray, &q.dstPtr, p->srcArray ? &es2 : &es))
      return bad(api, "dstArray is not a live CUDA array", cudaErrorInvalidResourceHandle);
    if (p->srcArray && p->dstArray && es != es2) return bad(api, "the arrays' elements differ in size", cudaErrorInvalidValue);
    q.srcArray = q.dstArray = nullptr;
    if (p->srcArray) q.srcPos.x *= es;
    if (p->dstArray) q.dstPos.x *= es;
    q.extent.width *= es;
    return copy3d(api, &q, s, caller);
  }
  const cudaExtent& e = p->extent;
  if (!e.width || !e.height || !e.depth) return cudaSuccess;
  if (!p->srcPtr.ptr || !p->dstPtr.ptr) return bad(api, "srcPtr.ptr or dstPtr.ptr is null", cudaErrorInvalidValue);
  if (p->srcPos.x + e.width > p->srcPtr.pitch || p->dstPos.x + e.width > p->dstPtr.pitch)
    return bad(api, "a row (position x + extent width) runs past its pitch", cudaErrorInvalidPitchValue);
  if ((e.depth > 1 || p->srcPos.z || p->dstPos.z) &&
      (p->srcPos.y + e.height > p->srcPtr.ysize || p->dstPos.y + e.height > p->dstPtr.ysize))
    return bad(api, "position y + extent height runs past a pitched pointer's ysize", cudaErrorInvalidValue);
  Stream* g = capturing(s);
  for (std::size_t z = 0; z < e.depth; ++z)
    for (std::size_t y = 0; y < e.height; ++y) {
      char* d = row(p->dstPtr, p->dstPos, y, z);
      const char* src = row(p->srcPtr, p->srcPos, y, z);
      cudaError_t r = g ? capture_copy(g, api, d, src, e.width, p->kind) : copy(api, d, src, e.width, p->kind, caller);
      if (r != cudaSuccess) return r;
    }
  return cudaSuccess;
}

cudaError_t fill3d(const char* api, cudaPitchedPtr p, int value, cudaExtent e, cudaStream_t s, void* caller) {
  if (!e.width || !e.height || !e.depth) return cudaSuccess;
  if (e.width > p.pitch) return bad(api, "the extent's width is larger than the pitch", cudaErrorInvalidValue);
  Stream* g = capturing(s);
  for (std::size_t z = 0; z < e.depth; ++z)
    for (std::size_t y = 0; y < e.height; ++y) {
      char* d = row(p, cudaPos{0, 0, 0}, y, z);
      cudaError_t r = g ? capture_fill(g, api, d, value & 0xFF, e.width, 1) : fill(api, d, value, e.width, caller);
      if (r != cudaSuccess) return r;
    }
  return cudaSuccess;
}

thread_local cudaStreamCaptureMode t_capture_mode = cudaStreamCaptureModeGlobal;
std::map<long long, std::map<int, cudaLaunchAttributeValue>> g_stream_attrs;   // by stream id (never reused)
long long stream_key(cudaStream_t s) {
  if (!s || s == cudaStreamLegacy || s == cudaStreamPerThread) return -1 - reinterpret_cast<intptr_t>(s);
  return reinterpret_cast<Stream*>(s)->id;
}

cudaError_t peer_copy(const char* api, void* dst, int dst_dev, const void* src, int src_dev, std::size_t n,
                      cudaStream_t s, void* caller) {
  if (dst_dev != 0 || src_dev != 0) return bad(api, "one GPU (device 0) only", cudaErrorInvalidDevice);
  if (Stream* g = capturing(s)) return capture_copy(g, api, dst, src, n, cudaMemcpyDeviceToDevice);
  return copy(api, dst, src, n, cudaMemcpyDeviceToDevice, caller);
}

}  // namespace

extern "C" {

// ---------------------------------------------------------------------------------------- cooperative launches
cudaError_t CUDARTAPI cudaLaunchCooperativeKernel(const void* func, dim3 grid, dim3 block, void** args, size_t smem,
                                                  cudaStream_t s) {
  return launch("cudaLaunchCooperativeKernel", func, grid, block, dim3(1, 1, 1), smem, args,
                __builtin_return_address(0), s, true);
}
cudaError_t CUDARTAPI cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 grid, dim3 block, void** args,
                                                       size_t smem, cudaStream_t s) {
  return launch("cudaLaunchCooperativeKernel", func, grid, block, dim3(1, 1, 1), smem, args,
                __builtin_return_address(0), s, true);
}

// a graph kernel node's launch attributes: cooperative and the cluster shape change how it runs (launch_ex's
// rules); any other attribute stops the program naming it
cudaError_t CUDARTAPI cudaGraphKernelNodeSetAttribute(cudaGraphNode_t node, cudaLaunchAttributeID attr,
                                                      const cudaLaunchAttributeValue* v) {
  Guard lock(g_lock);
  auto* n = reinterpret_cast<Node*>(node);
  if (!n || !v || n->kind != Node::kKernel) return ret(cudaErrorInvalidValue);
  switch (attr) {
    case cudaLaunchAttributeCooperative: n->cooperative = v->cooperative != 0; return cudaSuccess;
    case cudaLaunchAttributeClusterDimension:
      if (!v->clusterDim.x || !v->clusterDim.y || !v->clusterDim.z) return ret(cudaErrorInvalidValue);
      n->cluster = dim3(v->clusterDim.x, v->clusterDim.y, v->clusterDim.z);
      return cudaSuccess;
    default:
      stop(kExitRefused, "unsupported kernel node attribute %d in cudaGraphKernelNodeSetAttribute (tcemu models "
           "cudaLaunchAttributeCooperative and cudaLaunchAttributeClusterDimension; called from %s)",
           static_cast<int>(attr), where(here()).c_str());
  }
}
cudaError_t CUDARTAPI cudaGraphKernelNodeGetAttribute(cudaGraphNode_t node, cudaLaunchAttributeID attr,
                                                      cudaLaunchAttributeValue* v) {
  Guard lock(g_lock);
  auto* n = reinterpret_cast<Node*>(node);
  if (!n || !v || n->kind != Node::kKernel) return ret(cudaErrorInvalidValue);
  std::memset(v, 0, sizeof *v);
  switch (attr) {
    case cudaLaunchAttributeCooperative: v->cooperative = n->cooperative; return cudaSuccess;
    case cudaLaunchAttributeClusterDimension:
      v->clusterDim.x = n->cluster.x, v->clusterDim.y = n->cluster.y, v->clusterDim.z = n->cluster.z;
      return cudaSuccess;
    default:
      stop(kExitRefused, "unsupported kernel node attribute %d in cudaGraphKernelNodeGetAttribute (tcemu models "
           "cudaLaunchAttributeCooperative and cudaLaunchAttributeClusterDimension; called from %s)",
           static_cast<int>(attr), where(here()).c_str());
  }
}
cudaError_t CUDARTAPI cudaGraphKernelNodeCopyAttributes(cudaGraphNode_t dst, cudaGraphNode_t src) {
  Guard lock(g_lock);
  auto *d = reinterpret_cast<Node*>(dst), *s = reinterpret_cast<Node*>(src);
  if (!d || !s || d->kind != Node::kKernel || s->kind != Node::kKernel) return ret(cudaErrorInvalidValue);
  d->cooperative = s->cooperative;
  d->cluster = s->cluster;
  return cudaSuccess;
}

// --------------------------------------------------------------------------------------------- peers (one GPU)
cudaError_t CUDARTAPI cudaMemcpyPeer(void* dst, int dst_dev, const void* src, int src_dev, size_t n) {
  return peer_copy("cudaMemcpyPeer", dst, dst_dev, src, src_dev, n, nullptr, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemcpyPeerAsync(void* dst, int dst_dev, const void* src, int src_dev, size_t n,
                                          cudaStream_t s) {
  return peer_copy("cudaMemcpyPeerAsync", dst, dst_dev, src, src_dev, n, s, __builtin_return_address(0));
}
// the only device is the current one: it is never its own peer (CUDA: cudaErrorInvalidDevice)
cudaError_t CUDARTAPI cudaDeviceEnablePeerAccess(int peer, unsigned flags) {
  if (peer == 0) return bad("cudaDeviceEnablePeerAccess", "device 0 is the current device, not a peer",
                            cudaErrorInvalidDevice);
  if (flags) return ret(cudaErrorInvalidValue);
  return bad("cudaDeviceEnablePeerAccess", "one GPU (device 0) only", cudaErrorInvalidDevice);
}
cudaError_t CUDARTAPI cudaDeviceDisablePeerAccess(int) {
  return bad("cudaDeviceDisablePeerAccess", "one GPU (device 0) only: no peer", cudaErrorInvalidDevice);
}
cudaError_t CUDARTAPI cudaDeviceGetP2PAttribute(int* value, enum cudaDeviceP2PAttr, int src, int dst) {
  if (!value) return ret(cudaErrorInvalidValue);
  if (src != 0 || dst != 0) return ret(cudaErrorInvalidDevice);
  // CUDA: srcDevice and dstDevice must be different devices
  return bad("cudaDeviceGetP2PAttribute", "source and destination are the same device", cudaErrorInvalidDevice);
}

// --------------------------------------------------------------------------------------- 3-D linear memory
cudaError_t CUDARTAPI cudaMalloc3D(struct cudaPitchedPtr* p, struct cudaExtent e) {
  Guard lock(g_lock);
  ensure_at_exit();
  if (!p) return ret(cudaErrorInvalidValue);
  std::size_t pitch = (e.width + 511) / 512 * 512;   // as cudaMallocPitch
  *p = cudaPitchedPtr{nullptr, pitch, e.width, e.height};
  if (!pitch || !e.height || !e.depth) return cudaSuccess;
  p->ptr = carve(pitch * e.height * e.depth, "cudaMalloc3D", true);
  return p->ptr ? cudaSuccess : ret(cudaErrorMemoryAllocation);
}
cudaError_t CUDARTAPI cudaMemcpy3D(const struct cudaMemcpy3DParms* p) {
  return copy3d("cudaMemcpy3D", p, nullptr, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemcpy3DAsync(const struct cudaMemcpy3DParms* p, cudaStream_t s) {
  return copy3d("cudaMemcpy3DAsync", p, s, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms* p, cudaStream_t s) {
  return copy3d("cudaMemcpy3DAsync", p, s, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemset3D(struct cudaPitchedPtr p, int value, struct cudaExtent e) {
  return fill3d("cudaMemset3D", p, value, e, nullptr, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemset3DAsync(struct cudaPitchedPtr p, int value, struct cudaExtent e, cudaStream_t s) {
  return fill3d("cudaMemset3DAsync", p, value, e, s, __builtin_return_address(0));
}

static cudaError_t copy3d_peer(const char* api, const cudaMemcpy3DPeerParms* p, cudaStream_t s, void* caller) {
  if (!p) return ret(cudaErrorInvalidValue);
  if (p->srcDevice != 0 || p->dstDevice != 0) return bad(api, "one GPU (device 0) only", cudaErrorInvalidDevice);
  cudaMemcpy3DParms q = {};
  q.srcArray = p->srcArray; q.srcPos = p->srcPos; q.srcPtr = p->srcPtr;
  q.dstArray = p->dstArray; q.dstPos = p->dstPos; q.dstPtr = p->dstPtr;
  q.extent = p->extent;
  q.kind = cudaMemcpyDeviceToDevice;
  return copy3d(api, &q, s, caller);
}
cudaError_t CUDARTAPI cudaMemcpy3DPeer(const struct cudaMemcpy3DPeerParms* p) {
  return copy3d_peer("cudaMemcpy3DPeer", p, nullptr, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemcpy3DPeerAsync(const struct cudaMemcpy3DPeerParms* p, cudaStream_t s) {
  return copy3d_peer("cudaMemcpy3DPeerAsync", p, s, __builtin_return_address(0));
}

// ------------------------------------------------------------------------------------------ stream attributes
// hints (an L2 access-policy window, priority, synchronisation policy): kept and returned, no effect on results
cudaError_t CUDARTAPI cudaStreamSetAttribute(cudaStream_t s, cudaLaunchAttributeID attr,
                                             const cudaLaunchAttributeValue* v) {
  Guard lock(g_lock);
  const char* api = "cudaStreamSetAttribute";
  if (!v) return ret(cudaErrorInvalidValue);
  switch (attr) {
    case cudaLaunchAttributeAccessPolicyWindow: {
      const cudaAccessPolicyWindow& w = v->accessPolicyWindow;
      if (w.num_bytes > 134213632) return bad(api, "num_bytes exceeds cudaDevAttrMaxAccessPolicyWindowSize "
                                                   "(134213632)", cudaErrorInvalidValue);
      if (!(w.hitRatio >= 0.0f && w.hitRatio <= 1.0f)) return bad(api, "hitRatio must lie in [0, 1]",
                                                                   cudaErrorInvalidValue);
      if (w.missProp == cudaAccessPropertyPersisting) return bad(api, "missProp may not be persisting",
                                                                 cudaErrorInvalidValue);
      break;
    }
    case cudaLaunchAttributeSynchronizationPolicy: case cudaLaunchAttributePriority:
    case cudaLaunchAttributeMemSyncDomainMap: case cudaLaunchAttributeMemSyncDomain:
      break;
    default:
      return bad(api, "not a stream attribute", cudaErrorInvalidValue);
  }
  g_stream_attrs[stream_key(s)][attr] = *v;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamSetAttribute_ptsz(cudaStream_t s, cudaLaunchAttributeID attr,
                                                  const cudaLaunchAttributeValue* v) {
  return cudaStreamSetAttribute(s, attr, v);
}
cudaError_t CUDARTAPI cudaStreamGetAttribute(cudaStream_t s, cudaLaunchAttributeID attr, cudaLaunchAttributeValue* v) {
  Guard lock(g_lock);
  if (!v) return ret(cudaErrorInvalidValue);
  switch (attr) {
    case cudaLaunchAttributeAccessPolicyWindow: case cudaLaunchAttributeSynchronizationPolicy:
    case cudaLaunchAttributePriority: case cudaLaunchAttributeMemSyncDomainMap: case cudaLaunchAttributeMemSyncDomain:
      break;
    default:
      return bad("cudaStreamGetAttribute", "not a stream attribute", cudaErrorInvalidValue);
  }
  std::memset(v, 0, sizeof *v);
  if (attr == cudaLaunchAttributeSynchronizationPolicy) v->syncPolicy = cudaSyncPolicyAuto;
  if (attr == cudaLaunchAttributeMemSyncDomainMap) v->memSyncDomainMap.remote = 1;
  auto it = g_stream_attrs.find(stream_key(s));
  if (it != g_stream_attrs.end() && it->second.count(attr)) *v = it->second[attr];
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamGetAttribute_ptsz(cudaStream_t s, cudaLaunchAttributeID attr,
                                                  cudaLaunchAttributeValue* v) {
  return cudaStreamGetAttribute(s, attr, v);
}
cudaError_t CUDARTAPI cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src) {
  Guard lock(g_lock);
  auto it = g_stream_attrs.find(stream_key(src));
  if (it == g_stream_attrs.end()) g_stream_attrs.erase(stream_key(dst));
  else g_stream_attrs[stream_key(dst)] = it->second;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamCopyAttributes_ptsz(cudaStream_t dst, cudaStream_t src) {
  return cudaStreamCopyAttributes(dst, src);
}
// a created stream's id is its creation number (1, 2, ...); the NULL stream's 0, the per-thread stream's ~0
cudaError_t CUDARTAPI cudaStreamGetId(cudaStream_t s, unsigned long long* id) {
  if (!id) return ret(cudaErrorInvalidValue);
  *id = (!s || s == cudaStreamLegacy) ? 0 : s == cudaStreamPerThread ? ~0ull : reinterpret_cast<Stream*>(s)->id;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamGetId_ptsz(cudaStream_t s, unsigned long long* id) { return cudaStreamGetId(s, id); }
cudaError_t CUDARTAPI cudaCtxResetPersistingL2Cache(void) { return cudaSuccess; }
cudaError_t CUDARTAPI cudaDeviceGetCacheConfig(enum cudaFuncCache* config) {
  if (!config) return ret(cudaErrorInvalidValue);
  *config = cudaFuncCachePreferNone;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaDeviceGetSharedMemConfig(enum cudaSharedMemConfig* config) {
  if (!config) return ret(cudaErrorInvalidValue);
  *config = cudaSharedMemBankSizeFourByte;   // Hopper's banks are 4 bytes wide
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaDeviceSetSharedMemConfig(enum cudaSharedMemConfig config) {
  if (config < cudaSharedMemBankSizeDefault || config > cudaSharedMemBankSizeEightByte) return ret(cudaErrorInvalidValue);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaDeviceFlushGPUDirectRDMAWrites(enum cudaFlushGPUDirectRDMAWritesTarget target,
                                                         enum cudaFlushGPUDirectRDMAWritesScope scope) {
  if (target != cudaFlushGPUDirectRDMAWritesTargetCurrentDevice ||
      (scope != cudaFlushGPUDirectRDMAWritesToOwner && scope != cudaFlushGPUDirectRDMAWritesToAllDevices))
    return ret(cudaErrorInvalidValue);
  return cudaSuccess;   // no remote writer exists
}
cudaError_t CUDARTAPI cudaKernelSetAttributeForDevice(cudaKernel_t kernel, enum cudaFuncAttribute attr, int value,
                                                      int device) {
  if (device != 0) return ret(cudaErrorInvalidDevice);
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), attr, value);   // __cudaGetKernel: the stub
}

// ------------------------------------------------------------------------------------------- small queries
// a channel format is plain data (cudart_texture.cpp takes it: arrays, texture and surface objects)
struct cudaChannelFormatDesc CUDARTAPI cudaCreateChannelDesc(int x, int y, int z, int w, enum cudaChannelFormatKind f) {
  return cudaChannelFormatDesc{x, y, z, w, f};
}
cudaError_t CUDARTAPI cudaProfilerStart(void) { return cudaSuccess; }
cudaError_t CUDARTAPI cudaProfilerStop(void) { return cudaSuccess; }
cudaError_t CUDARTAPI cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
  if (!mode || *mode < cudaStreamCaptureModeGlobal || *mode > cudaStreamCaptureModeRelaxed)
    return ret(cudaErrorInvalidValue);
  std::swap(*mode, t_capture_mode);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaChooseDevice(int* device, const struct cudaDeviceProp* prop) {
  if (!device || !prop) return ret(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamGetDevice(cudaStream_t, int* device) {
  if (!device) return ret(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamGetDevice_ptsz(cudaStream_t s, int* device) { return cudaStreamGetDevice(s, device); }
cudaError_t CUDARTAPI cudaSetValidDevices(int* devices, int n) {
  if (n < 0 || (n > 0 && !devices)) return ret(cudaErrorInvalidValue);
  for (int i = 0; i < n; ++i)
    if (devices[i] != 0) return ret(cudaErrorInvalidDevice);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaDeviceGetPCIBusId(char* id, int len, int device) {
  if (!id || len <= 0) return ret(cudaErrorInvalidValue);
  if (device != 0) return ret(cudaErrorInvalidDevice);
  std::snprintf(id, len, "0000:18:00.0");   // domain 0, bus 0x18 (cudaDevAttrPciBusId), device 0, function 0
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaDeviceGetByPCIBusId(int* device, const char* id) {
  if (!device || !id) return ret(cudaErrorInvalidValue);
  unsigned dom = 0, bus = 0, slot = 0, fn = 0;
  int n = std::sscanf(id, "%x:%x:%x.%x", &dom, &bus, &slot, &fn);
  if (n < 3) n = std::sscanf(id, "%x:%x.%x", &bus, &slot, &fn) + 1;
  if (n < 3 || dom != 0 || bus != 0x18 || slot != 0) return ret(cudaErrorInvalidDevice);
  *device = 0;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaFuncSetSharedMemConfig(const void* func, enum cudaSharedMemConfig config) {
  const std::string* name;
  bool nonportable;
  int smem;
  if (!kernel_info(func, &name, &nonportable, &smem)) return ret(cudaErrorInvalidDeviceFunction);
  if (config < cudaSharedMemBankSizeDefault || config > cudaSharedMemBankSizeEightByte)
    return ret(cudaErrorInvalidValue);
  return cudaSuccess;   // Hopper's banks are 4 bytes wide whatever is asked
}
cudaError_t CUDARTAPI cudaGetFuncBySymbol(cudaFunction_t* fn, const void* func) {
  const std::string* name;
  bool nonportable;
  int smem;
  if (!fn) return ret(cudaErrorInvalidValue);
  if (!kernel_info(func, &name, &nonportable, &smem)) return ret(cudaErrorInvalidDeviceFunction);
  *fn = reinterpret_cast<cudaFunction_t>(const_cast<void*>(func));   // a driver call on it stops, naming itself
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGetKernel(cudaKernel_t* kernel, const void* func) {   // a kernel handle is its host stub
  const std::string* name;
  bool nonportable;
  int smem;
  if (!kernel) return ret(cudaErrorInvalidValue);
  if (!kernel_info(func, &name, &nonportable, &smem)) return ret(cudaErrorInvalidDeviceFunction);
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void*>(func));
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaFuncGetName(const char** out, const void* func) {
  const std::string* name;
  bool nonportable;
  int smem;
  if (!out) return ret(cudaErrorInvalidValue);
  if (!kernel_info(func, &name, &nonportable, &smem)) return ret(cudaErrorInvalidDeviceFunction);
  *out = name->c_str();   // the PTX entry's (mangled) name
  return cudaSuccess;
}

// Occupancy is the interpreter's own count (runtime.occupancy: tcemu.ptx.schedule, which a cooperative launch is
// held to): 2048 threads, 64 warps and 32 CTAs per SM, and 228 KiB of shared memory, static and dynamic, with 1 KiB
// reserved per CTA; so a cooperative grid sized by cudaOccupancyMaxActiveBlocksPerMultiprocessor x SMs is accepted.
static cudaError_t ask_occupancy(const char* fn, const void* func, int a, int b, long long* out) {
  Guard lock(g_lock);
  const std::string* name;
  bool nonportable;
  int smem, fatbin;
  if (!kernel_info(func, &name, &nonportable, &smem)) return ret(cudaErrorInvalidDeviceFunction);
  kernel_name(func, &fatbin);
  *out = call_python(fn, "(Kisii)", (unsigned long long)(uintptr_t)fatbin_data(fatbin), fatbin, name->c_str(), a, b);
  return *out < 0 ? ret(cudaErrorNoKernelImageForDevice) : cudaSuccess;   // no PTX to run (reported)
}
cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, const void* func, int threads, size_t smem) {
  if (!n || threads <= 0) return ret(cudaErrorInvalidValue);
  long long v = 0;
  if (threads <= 1024 && smem <= static_cast<size_t>(dev().smem_optin))
    if (cudaError_t e = ask_occupancy("occupancy", func, threads, static_cast<int>(smem), &v)) return e;
  *n = static_cast<int>(v);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* n, const void* func, int threads,
                                                                             size_t smem, unsigned) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, func, threads, smem);
}
// the dynamic shared memory that lets `blocks` CTAs of `threads` threads share an SM; 0 when they cannot
cudaError_t CUDARTAPI cudaOccupancyAvailableDynamicSMemPerBlock(size_t* out, const void* func, int blocks, int threads) {
  if (!out || blocks <= 0 || threads <= 0 || threads > 1024) return ret(cudaErrorInvalidValue);
  long long v = 0;
  if (cudaError_t e = ask_occupancy("available_shared", func, blocks, threads, &v)) return e;
  *out = static_cast<size_t>(v);
  return cudaSuccess;
}
// the largest cluster a GPC holds: 8 CTAs (portable), 16 with cudaFuncAttributeNonPortableClusterSizeAllowed
cudaError_t CUDARTAPI cudaOccupancyMaxPotentialClusterSize(int* size, const void* func, const cudaLaunchConfig_t* c) {
  const std::string* name;
  bool nonportable;
  int smem;
  if (!size || !c) return ret(cudaErrorInvalidValue);
  if (!kernel_info(func, &name, &nonportable, &smem)) return ret(cudaErrorInvalidDeviceFunction);
  unsigned threads = c->blockDim.x * c->blockDim.y * c->blockDim.z;
  if (!threads || threads > 1024) return ret(cudaErrorInvalidValue);
  *size = std::min(nonportable ? 16 : 8, dev().sms);
  return cudaSuccess;
}

}  // extern "C"
