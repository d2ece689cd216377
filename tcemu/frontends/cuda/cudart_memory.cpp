// The memory calls of tcemu's libcudart.so beyond plain allocations and copies (cudart_api.cpp): registered host
// memory, managed-memory hints and range attributes, and stream-ordered memory pools. Each returns what CUDA 13
// returns on one H100 and checks its arguments as CUDA does (an error comes with a line naming the rule).
#include "cudart.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
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

}  // extern "C"
