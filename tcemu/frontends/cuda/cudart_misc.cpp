// The runtime calls of tcemu's libcudart.so that ordinary programs and the CUDA samples reach beside launches and
// plain memory (cudart.cpp, cudart_api.cpp): cooperative launches, peer copies and peer access on a one-GPU machine,
// registered host memory, managed-memory hints, 3-D linear memory, stream-ordered memory pools, stream attributes,
// occupancy and small device queries. Each returns what CUDA 13 returns on one H100 and checks its arguments as
// CUDA does; CUDA arrays, textures and surfaces stay refused by name (their stubs).
#include "cudart.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

using namespace tcemu_rt;

namespace {

// a managed allocation holding [p, p + n) (the hints below take managed memory only: CUDA's cudaErrorInvalidValue)
bool managed(const void* p, std::size_t n) {
  auto* a = find_alloc(p, n);
  return a && std::strcmp(a->second.kind, "cudaMallocManaged") == 0;
}

cudaError_t bad(const char* api, const char* why, cudaError_t e) {
  warn("%s: %s (%s); called from %s", api, why, error_text(e) ? error_text(e)->name : "?", where(here()).c_str());
  return ret(e);
}

// ------------------------------------------------------------------ managed-memory advice, in the order given
// A hint covers [a, b); a range's attribute is the last hint covering each byte, and is reported only if every
// byte of the range agrees (CUDA: else the range's "mixed" value).
enum HintKind { kReadMostly, kPreferred, kAccessedBy, kAccessedByHost, kPrefetched };
struct Hint { uintptr_t a, b; HintKind kind; int value; };
std::vector<Hint> g_hints;

int hint_at(uintptr_t x, HintKind kind, int unset) {
  int v = unset;
  for (const Hint& h : g_hints)
    if (h.kind == kind && h.a <= x && x < h.b) v = h.value;
  return v;
}
// the value over all of [a, b), or `mixed`
int hint_over(uintptr_t a, uintptr_t b, HintKind kind, int unset, int mixed) {
  std::set<uintptr_t> cuts = {a};
  for (const Hint& h : g_hints) {
    if (h.kind != kind) continue;
    if (h.a > a && h.a < b) cuts.insert(h.a);
    if (h.b > a && h.b < b) cuts.insert(h.b);
  }
  int v = hint_at(a, kind, unset);
  for (uintptr_t c : cuts)
    if (hint_at(c, kind, unset) != v) return mixed;
  return v;
}

// a cudaMemLocation naming this GPU or the host: its device id (cudaCpuDeviceId for the host), else an error
cudaError_t location(const char* api, const cudaMemLocation& loc, int* id) {
  switch (loc.type) {
    case cudaMemLocationTypeDevice:
      if (loc.id != 0) return bad(api, "the location names a device other than device 0", cudaErrorInvalidDevice);
      *id = 0;
      return cudaSuccess;
    case cudaMemLocationTypeHost: case cudaMemLocationTypeHostNuma: case cudaMemLocationTypeHostNumaCurrent:
      *id = cudaCpuDeviceId;
      return cudaSuccess;
    default:
      return bad(api, "the location type is none of device, host, host NUMA", cudaErrorInvalidValue);
  }
}

// ------------------------------------------------------------------------------------------------ memory pools
// Bookkeeping only: a pool's allocations are cudaMallocAsync's (device memory carved at once); freed memory goes
// back at once, so a pool's reserved memory is its used memory.
struct Pool {
  unsigned long long threshold = 0, used_high = 0;
  int follow = 1, opportunistic = 1, internal = 1;
  bool created = false;   // cudaMemPoolCreate'd (the device's default pool is never destroyed)
};
Pool g_default;
Pool* g_current = &g_default;
std::set<Pool*> g_pools = {&g_default};
std::map<uintptr_t, Pool*> g_pool_of;   // each pool allocation's pool (stale once freed: checked against live)

unsigned long long pool_used(Pool* pool) {
  unsigned long long used = 0;
  for (auto it = g_pool_of.begin(); it != g_pool_of.end();) {
    auto live = M().live.find(it->first);
    if (live == M().live.end()) {
      it = g_pool_of.erase(it);
      continue;
    }
    if (it->second == pool) used += live->second.size;
    ++it;
  }
  return used;
}

Pool* pool_of(cudaMemPool_t p) {
  auto* pool = reinterpret_cast<Pool*>(p);
  return g_pools.count(pool) ? pool : nullptr;
}

// ------------------------------------------------------------------------------------------- 3-D linear copies
// one row of n bytes at (x, y, z) of a pitched pointer
char* row(const cudaPitchedPtr& p, const cudaPos& pos, std::size_t y, std::size_t z) {
  return static_cast<char*>(p.ptr) + (pos.z + z) * p.pitch * p.ysize + (pos.y + y) * p.pitch + pos.x;
}

cudaError_t copy3d(const char* api, const cudaMemcpy3DParms* p, cudaStream_t s, void* caller) {
  if (!p) return ret(cudaErrorInvalidValue);
  if (p->srcArray || p->dstArray)
    stop(kExitRefused, "%s with a CUDA array: tcemu does not model CUDA arrays, textures or surfaces (called from "
         "%s)", api, where(here()).c_str());
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

namespace tcemu_rt {
cudaError_t pool_alloc(const char* api, void** p, std::size_t size, cudaMemPool_t handle) {
  Guard lock(g_lock);
  ensure_at_exit();
  Pool* pool = handle ? pool_of(handle) : g_current;
  if (!p || !pool) return ret(cudaErrorInvalidValue);
  if (size == 0) { *p = nullptr; return cudaSuccess; }
  void* q = carve(size, api, true);
  if (!q) { *p = nullptr; return ret(cudaErrorMemoryAllocation); }
  *p = q;
  g_pool_of[reinterpret_cast<uintptr_t>(q)] = pool;
  pool->used_high = std::max(pool->used_high, pool_used(pool));
  return cudaSuccess;
}
}  // namespace tcemu_rt

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

// ------------------------------------------------------------------------------------- registered host memory
// The range becomes an allocation at its own address (not carved: never unmapped), so kernels reach it as they
// reach cudaMallocHost's memory and cudaHostGetDevicePointer returns it.
cudaError_t CUDARTAPI cudaHostRegister(void* p, size_t size, unsigned flags) {
  Guard lock(g_lock);
  ensure_at_exit();
  const char* api = "cudaHostRegister";
  if (!p || !size) return bad(api, "a null pointer or zero bytes", cudaErrorInvalidValue);
  if (flags & ~unsigned(cudaHostRegisterPortable | cudaHostRegisterMapped | cudaHostRegisterIoMemory |
                        cudaHostRegisterReadOnly))
    return bad(api, "unknown flags", cudaErrorInvalidValue);
  if (flags & cudaHostRegisterIoMemory) return bad(api, "cudaHostRegisterIoMemory: no I/O memory here",
                                                   cudaErrorInvalidValue);
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = M().live.lower_bound(a + size);
  if (it != M().live.begin() && (--it)->first + it->second.size > a && !it->second.device)
    return bad(api, "the range overlaps pinned host memory (registered, or from cudaMallocHost / cudaHostAlloc)",
               cudaErrorHostMemoryAlreadyRegistered);
  if (is_device(p)) return bad(api, "the range is device memory", cudaErrorInvalidValue);
  // every page must be mapped host memory (CUDA refuses a range it cannot pin)
  long page = sysconf(_SC_PAGESIZE);
  uintptr_t first = a / page * page;
  std::vector<unsigned char> vec((a + size - first + page - 1) / page);
  if (mincore(reinterpret_cast<void*>(first), a + size - first, vec.data()) != 0)
    return bad(api, "the range is not mapped host memory", cudaErrorInvalidValue);
  M().live[a] = {size, 0, api, here(), false};
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaHostUnregister(void* p) {
  Guard lock(g_lock);
  auto it = M().live.find(reinterpret_cast<uintptr_t>(p));
  if (!p || it == M().live.end() || it->second.mapped)
    return bad("cudaHostUnregister", "not the start of a range registered with cudaHostRegister",
               cudaErrorHostMemoryNotRegistered);
  M().live.erase(it);
  return cudaSuccess;
}

// ------------------------------------------------------------------------------------------ managed memory
cudaError_t CUDARTAPI cudaMemPrefetchAsync(const void* p, size_t n, struct cudaMemLocation loc, unsigned flags,
                                           cudaStream_t) {
  Guard lock(g_lock);
  const char* api = "cudaMemPrefetchAsync";
  if (!managed(p, n)) return bad(api, "the range is not inside one cudaMallocManaged allocation", cudaErrorInvalidValue);
  if (flags) return bad(api, "flags must be 0", cudaErrorInvalidValue);
  int id;
  if (cudaError_t e = location(api, loc, &id)) return e;
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  g_hints.push_back({a, a + n, kPrefetched, id});   // memory is where it is: only the attribute changes
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaMemPrefetchAsync_ptsz(const void* p, size_t n, struct cudaMemLocation loc, unsigned flags,
                                                cudaStream_t s) {
  return cudaMemPrefetchAsync(p, n, loc, flags, s);
}
cudaError_t CUDARTAPI cudaMemAdvise(const void* p, size_t n, enum cudaMemoryAdvise advice, struct cudaMemLocation loc) {
  Guard lock(g_lock);
  const char* api = "cudaMemAdvise";
  if (!managed(p, n)) return bad(api, "the range is not inside one cudaMallocManaged allocation", cudaErrorInvalidValue);
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  int id = 0;
  switch (advice) {
    case cudaMemAdviseSetReadMostly: case cudaMemAdviseUnsetReadMostly:
      g_hints.push_back({a, a + n, kReadMostly, advice == cudaMemAdviseSetReadMostly});
      return cudaSuccess;
    case cudaMemAdviseSetPreferredLocation:
      if (cudaError_t e = location(api, loc, &id)) return e;
      g_hints.push_back({a, a + n, kPreferred, id});
      return cudaSuccess;
    case cudaMemAdviseUnsetPreferredLocation:
      g_hints.push_back({a, a + n, kPreferred, cudaInvalidDeviceId});
      return cudaSuccess;
    case cudaMemAdviseSetAccessedBy: case cudaMemAdviseUnsetAccessedBy:   // a device, or the host (no NUMA node)
      if (loc.type != cudaMemLocationTypeDevice && loc.type != cudaMemLocationTypeHost)
        return bad(api, "accessed-by takes a device or cudaMemLocationTypeHost", cudaErrorInvalidValue);
      if (cudaError_t e = location(api, loc, &id)) return e;
      g_hints.push_back({a, a + n, id == 0 ? kAccessedBy : kAccessedByHost, advice == cudaMemAdviseSetAccessedBy});
      return cudaSuccess;
    default:
      return bad(api, "unknown advice", cudaErrorInvalidValue);
  }
}
cudaError_t CUDARTAPI cudaMemRangeGetAttribute(void* data, size_t size, enum cudaMemRangeAttribute attr,
                                               const void* p, size_t n) {
  Guard lock(g_lock);
  const char* api = "cudaMemRangeGetAttribute";
  if (!data || !managed(p, n)) return bad(api, "a null data pointer, or the range is not inside one cudaMallocManaged "
                                               "allocation", cudaErrorInvalidValue);
  uintptr_t a = reinterpret_cast<uintptr_t>(p), b = a + n;
  int* out = static_cast<int*>(data);
  int v;
  if (attr == cudaMemRangeAttributeAccessedBy) {
    if (size == 0 || size % 4) return ret(cudaErrorInvalidValue);
    for (size_t i = 0; i < size / 4; ++i) out[i] = cudaInvalidDeviceId;
    size_t k = 0;   // the processors set over the whole range: device 0, then the host (cudaCpuDeviceId)
    if (hint_over(a, b, kAccessedBy, 0, 0) && k < size / 4) out[k++] = 0;
    if (hint_over(a, b, kAccessedByHost, 0, 0) && k < size / 4) out[k++] = cudaCpuDeviceId;
    return cudaSuccess;
  }
  if (size != 4) return bad(api, "this attribute is a 4-byte int", cudaErrorInvalidValue);
  switch (attr) {
    case cudaMemRangeAttributeReadMostly: *out = hint_over(a, b, kReadMostly, 0, 0); return cudaSuccess;
    case cudaMemRangeAttributePreferredLocation:
    case cudaMemRangeAttributePreferredLocationType: case cudaMemRangeAttributePreferredLocationId:
      v = hint_over(a, b, kPreferred, cudaInvalidDeviceId, cudaInvalidDeviceId);
      break;
    case cudaMemRangeAttributeLastPrefetchLocation:
    case cudaMemRangeAttributeLastPrefetchLocationType: case cudaMemRangeAttributeLastPrefetchLocationId:
      v = hint_over(a, b, kPrefetched, cudaInvalidDeviceId, cudaInvalidDeviceId);
      break;
    default: return bad(api, "unknown attribute", cudaErrorInvalidValue);
  }
  if (attr == cudaMemRangeAttributePreferredLocationType || attr == cudaMemRangeAttributeLastPrefetchLocationType)
    *out = v == 0 ? cudaMemLocationTypeDevice : v == cudaCpuDeviceId ? cudaMemLocationTypeHost
                                                                     : cudaMemLocationTypeInvalid;
  else if (attr == cudaMemRangeAttributePreferredLocationId || attr == cudaMemRangeAttributeLastPrefetchLocationId)
    *out = v == 0 ? 0 : cudaInvalidDeviceId;
  else *out = v;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaMemRangeGetAttributes(void** data, size_t* sizes, enum cudaMemRangeAttribute* attrs,
                                                size_t count, const void* p, size_t n) {
  if (!data || !sizes || !attrs || !count) return ret(cudaErrorInvalidValue);
  for (size_t i = 0; i < count; ++i)
    if (cudaError_t e = cudaMemRangeGetAttribute(data[i], sizes[i], attrs[i], p, n)) return e;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamAttachMemAsync(cudaStream_t s, void* p, size_t n, unsigned flags) {
  Guard lock(g_lock);
  const char* api = "cudaStreamAttachMemAsync";
  auto* a = find_alloc(p);
  if (!a || a->first != reinterpret_cast<uintptr_t>(p) || std::strcmp(a->second.kind, "cudaMallocManaged") != 0)
    return bad(api, "not the start of a cudaMallocManaged allocation", cudaErrorInvalidValue);
  if (n != 0 && n != a->second.size) return bad(api, "length must be 0 or the whole allocation", cudaErrorInvalidValue);
  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost && flags != cudaMemAttachSingle)
    return bad(api, "flags must be one of cudaMemAttachGlobal, Host, Single", cudaErrorInvalidValue);
  if (flags == cudaMemAttachSingle && (!s || s == cudaStreamLegacy || s == cudaStreamPerThread))
    return bad(api, "cudaMemAttachSingle to the NULL stream (a virtual global stream, not one stream)",
               cudaErrorInvalidValue);
  return cudaSuccess;   // visibility only: every stream here sees all memory, work runs in order
}
cudaError_t CUDARTAPI cudaStreamAttachMemAsync_ptsz(cudaStream_t s, void* p, size_t n, unsigned flags) {
  return cudaStreamAttachMemAsync(s, p, n, flags);
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

// --------------------------------------------------------------------------------------------- memory pools
cudaError_t CUDARTAPI cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  if (!pool) return ret(cudaErrorInvalidValue);
  if (device != 0) return ret(cudaErrorInvalidDevice);
  *pool = reinterpret_cast<cudaMemPool_t>(&g_default);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaDeviceGetMemPool(cudaMemPool_t* pool, int device) {
  Guard lock(g_lock);
  if (!pool) return ret(cudaErrorInvalidValue);
  if (device != 0) return ret(cudaErrorInvalidDevice);
  *pool = reinterpret_cast<cudaMemPool_t>(g_current);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaDeviceSetMemPool(int device, cudaMemPool_t handle) {
  Guard lock(g_lock);
  if (device != 0) return ret(cudaErrorInvalidDevice);
  Pool* pool = pool_of(handle);
  if (!pool) return ret(cudaErrorInvalidValue);
  g_current = pool;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaMemPoolCreate(cudaMemPool_t* handle, const struct cudaMemPoolProps* props) {
  Guard lock(g_lock);
  const char* api = "cudaMemPoolCreate";
  if (!handle || !props) return ret(cudaErrorInvalidValue);
  if (props->allocType != cudaMemAllocationTypePinned || props->location.type != cudaMemLocationTypeDevice)
    return bad(api, "tcemu's pools are pinned device memory (allocType cudaMemAllocationTypePinned, location type "
                    "cudaMemLocationTypeDevice)", cudaErrorInvalidValue);
  if (props->location.id != 0) return ret(cudaErrorInvalidDevice);
  if (props->handleTypes != cudaMemHandleTypeNone)
    stop(kExitRefused, "%s with shareable handle types (IPC) is not supported (called from %s)", api,
         where(here()).c_str());
  Pool* pool = new Pool;
  pool->created = true;
  g_pools.insert(pool);
  *handle = reinterpret_cast<cudaMemPool_t>(pool);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaMemPoolDestroy(cudaMemPool_t handle) {
  Guard lock(g_lock);
  Pool* pool = pool_of(handle);
  if (!pool || !pool->created) return bad("cudaMemPoolDestroy", "not a pool cudaMemPoolCreate made",
                                          cudaErrorInvalidValue);
  if (g_current == pool) g_current = &g_default;
  g_pools.erase(pool);
  for (auto& [a, p] : g_pool_of)
    if (p == pool) p = nullptr;   // its allocations stay allocated until freed (CUDA frees them at destroy)
  delete pool;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaMallocFromPoolAsync(void** p, size_t size, cudaMemPool_t pool, cudaStream_t) {
  if (!pool) return ret(cudaErrorInvalidValue);
  return pool_alloc("cudaMallocFromPoolAsync", p, size, pool);
}
cudaError_t CUDARTAPI cudaMallocFromPoolAsync_ptsz(void** p, size_t size, cudaMemPool_t pool, cudaStream_t s) {
  return cudaMallocFromPoolAsync(p, size, pool, s);
}
cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void** p, size_t size, cudaStream_t) {
  return pool_alloc("cudaMallocAsync", p, size, nullptr);
}
cudaError_t CUDARTAPI cudaMemPoolTrimTo(cudaMemPool_t handle, size_t) {
  return pool_of(handle) ? cudaSuccess : ret(cudaErrorInvalidValue);   // nothing is kept beyond what is used
}
cudaError_t CUDARTAPI cudaMemPoolSetAttribute(cudaMemPool_t handle, enum cudaMemPoolAttr attr, void* value) {
  Guard lock(g_lock);
  Pool* pool = pool_of(handle);
  if (!pool || !value) return ret(cudaErrorInvalidValue);
  int i = *static_cast<int*>(value);
  unsigned long long u = *static_cast<unsigned long long*>(value);
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies: pool->follow = i; return cudaSuccess;
    case cudaMemPoolReuseAllowOpportunistic: pool->opportunistic = i; return cudaSuccess;
    case cudaMemPoolReuseAllowInternalDependencies: pool->internal = i; return cudaSuccess;
    case cudaMemPoolAttrReleaseThreshold: pool->threshold = u; return cudaSuccess;
    case cudaMemPoolAttrReservedMemHigh: case cudaMemPoolAttrUsedMemHigh:   // only a reset to the current value
      if (u != 0) return bad("cudaMemPoolSetAttribute", "a high-water mark may only be reset (set to 0)",
                             cudaErrorInvalidValue);
      pool->used_high = pool_used(pool);
      return cudaSuccess;
    default:
      return bad("cudaMemPoolSetAttribute", "the attribute is read-only or unknown", cudaErrorInvalidValue);
  }
}
cudaError_t CUDARTAPI cudaMemPoolGetAttribute(cudaMemPool_t handle, enum cudaMemPoolAttr attr, void* value) {
  Guard lock(g_lock);
  Pool* pool = pool_of(handle);
  if (!pool || !value) return ret(cudaErrorInvalidValue);
  int* i = static_cast<int*>(value);
  auto* u = static_cast<unsigned long long*>(value);
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies: *i = pool->follow; return cudaSuccess;
    case cudaMemPoolReuseAllowOpportunistic: *i = pool->opportunistic; return cudaSuccess;
    case cudaMemPoolReuseAllowInternalDependencies: *i = pool->internal; return cudaSuccess;
    case cudaMemPoolAttrReleaseThreshold: *u = pool->threshold; return cudaSuccess;
    case cudaMemPoolAttrReservedMemCurrent: case cudaMemPoolAttrUsedMemCurrent: *u = pool_used(pool); return cudaSuccess;
    case cudaMemPoolAttrReservedMemHigh: case cudaMemPoolAttrUsedMemHigh: *u = pool->used_high; return cudaSuccess;
    default:
      return bad("cudaMemPoolGetAttribute", "unknown attribute", cudaErrorInvalidValue);
  }
}

// the pool's own device always reads and writes it (the only access there is to set); no other device exists
cudaError_t CUDARTAPI cudaMemPoolSetAccess(cudaMemPool_t handle, const struct cudaMemAccessDesc* list, size_t n) {
  Guard lock(g_lock);
  const char* api = "cudaMemPoolSetAccess";
  if (!pool_of(handle) || (n && !list)) return ret(cudaErrorInvalidValue);
  for (size_t i = 0; i < n; ++i) {
    if (list[i].location.type != cudaMemLocationTypeDevice)
      return bad(api, "a device pool's access is set for devices only", cudaErrorInvalidValue);
    if (list[i].location.id != 0) return bad(api, "one GPU (device 0) only", cudaErrorInvalidDevice);
    if (list[i].flags != cudaMemAccessFlagsProtReadWrite)
      return bad(api, "the pool's own device keeps read-write access", cudaErrorInvalidValue);
  }
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaMemPoolGetAccess(enum cudaMemAccessFlags* flags, cudaMemPool_t handle,
                                           struct cudaMemLocation* loc) {
  Guard lock(g_lock);
  if (!flags || !loc || !pool_of(handle)) return ret(cudaErrorInvalidValue);
  if (loc->type != cudaMemLocationTypeDevice) return ret(cudaErrorInvalidValue);
  if (loc->id != 0) return ret(cudaErrorInvalidDevice);
  *flags = cudaMemAccessFlagsProtReadWrite;
  return cudaSuccess;
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
// a channel format is plain data (what takes one, cudaMallocArray and the texture calls, stays refused by name)
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

// the dynamic shared memory that lets numBlocks CTAs of blockSize threads share an SM (the rules of
// cudaOccupancyMaxActiveBlocksPerMultiprocessor: 2048 threads, 32 CTAs and the SM's shared memory, 1 KiB of it
// reserved per CTA); 0 when that many CTAs cannot share an SM at all
cudaError_t CUDARTAPI cudaOccupancyAvailableDynamicSMemPerBlock(size_t* out, const void* func, int blocks, int threads) {
  const std::string* name;
  bool nonportable;
  int smem;
  if (!out || blocks <= 0 || threads <= 0) return ret(cudaErrorInvalidValue);
  if (!kernel_info(func, &name, &nonportable, &smem)) return ret(cudaErrorInvalidDeviceFunction);
  if (blocks > std::min(2048 / threads, 32)) {
    *out = 0;
    return cudaSuccess;
  }
  *out = std::min<size_t>(dev().smem_sm / blocks - 1024, dev().smem_optin);
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
