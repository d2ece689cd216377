// CUDA arrays, texture objects and surface objects of tcemu's libcudart.so. A CUDA array is device memory (carved as
// any allocation, so every launch maps it) holding its elements row-major, rows width x element bytes apart, then
// height rows per depth slice or layer; the cudaArray_t handle is an opaque host record. A texture or surface object
// is the device address of a 128-byte header tcemu writes into device memory (layout: tcemu/ptx/texture.py), which
// the interpreter's tex / tld4 / suld / sust read. Mipmapped arrays, cube maps, texture references, resource views
// and sRGB reads stay refused by name.
#include "cudart.h"

#include <cstring>
#include <set>

using namespace tcemu_rt;

namespace {

struct Array {
  cudaChannelFormatDesc desc;
  cudaExtent extent;        // as allocated: height 0 (1-D), depth 0 (no 3rd dimension / no layers)
  unsigned flags;
  std::size_t esize, pitch, slice, bytes;
  char* data;
};
std::set<Array*> g_arrays;

#pragma pack(push, 1)
struct Header {   // tcemu/ptx/texture.py's layout
  char magic[4];
  uint8_t resource, dims, flags, filter;
  uint64_t base;
  uint32_t width, height, depth, layers;
  uint64_t pitch, slice;
  uint8_t bits[4], kind, address[3], reserved[8];
  float border[4];
  uint8_t pad[48];
};
#pragma pack(pop)
static_assert(sizeof(Header) == 128, "the texture header is 128 bytes");
constexpr uint8_t kLayered = 1, kNormalizedCoords = 2, kNormalizedRead = 4;

struct Object { Header* header; cudaResourceDesc res; cudaTextureDesc tex; bool surface; };
std::map<unsigned long long, Object> g_objects;

cudaError_t bad(const char* api, const char* why, cudaError_t e) {
  warn("%s: %s (%s); called from %s", api, why, error_text(e) ? error_text(e)->name : "?", where(here()).c_str());
  return ret(e);
}

// bytes of one element, or 0: a channel format CUDA arrays cannot hold (1, 2 or 4 equal channels of 8, 16 or 32
// bits; float channels 16 or 32 bits)
std::size_t element_bytes(const cudaChannelFormatDesc& d) {
  int b[4] = {d.x, d.y, d.z, d.w};
  int n = 0;
  while (n < 4 && b[n]) ++n;
  for (int i = n; i < 4; ++i)
    if (b[i]) return 0;
  if (n == 0 || n == 3) return 0;
  for (int i = 0; i < n; ++i)
    if (b[i] != b[0]) return 0;
  if (b[0] != 8 && b[0] != 16 && b[0] != 32) return 0;
  if (d.f == cudaChannelFormatKindFloat && b[0] == 8) return 0;
  if (d.f != cudaChannelFormatKindSigned && d.f != cudaChannelFormatKindUnsigned && d.f != cudaChannelFormatKindFloat)
    return 0;
  return static_cast<std::size_t>(n * b[0] / 8);
}

Array* find_array(cudaArray_const_t a) {
  auto* p = reinterpret_cast<Array*>(const_cast<cudaArray*>(a));
  return g_arrays.count(p) ? p : nullptr;
}

cudaError_t make_array(const char* api, cudaArray_t* out, const cudaChannelFormatDesc* desc, cudaExtent e,
                       unsigned flags) {
  Guard lock(g_lock);
  ensure_at_exit();
  if (!out || !desc) return bad(api, "array or desc is null", cudaErrorInvalidValue);
  if (flags & (cudaArrayCubemap | cudaArrayTextureGather | cudaArraySparse | cudaArrayDeferredMapping))
    stop(kExitRefused, "%s with cubemap, texture-gather, sparse or deferred-mapping flags (%#x): tcemu models plain, "
         "layered and surface-load/store arrays (called from %s)", api, flags, where(here()).c_str());
  std::size_t es = element_bytes(*desc);
  if (!es) return bad(api, "the channel format is none a CUDA array holds", cudaErrorInvalidChannelDescriptor);
  bool layered = flags & cudaArrayLayered;
  if (!e.width || (e.depth && !e.height && !layered) || (layered && !e.depth))
    return bad(api, "the extent has an empty dimension", cudaErrorInvalidValue);
  auto* a = new Array{*desc, e, flags, es, e.width * es, 0, 0, nullptr};
  std::size_t rows = e.height ? e.height : 1;
  a->slice = a->pitch * rows;
  a->bytes = a->slice * (e.depth ? e.depth : 1);
  a->data = static_cast<char*>(carve(a->bytes, api, true));
  if (!a->data) { delete a; return ret(cudaErrorMemoryAllocation); }
  g_arrays.insert(a);
  *out = reinterpret_cast<cudaArray_t>(a);
  return cudaSuccess;
}

// (address, in-range check) of the byte at column byte x, row y, slice z of an array
char* at(Array* a, std::size_t x, std::size_t y, std::size_t z = 0) { return a->data + z * a->slice + y * a->pitch + x; }

// 2-D copies between an array and linear memory: `to` the array (src is the linear side) or from it
cudaError_t copy_array2d(const char* api, Array* a, std::size_t wo, std::size_t ho, void* lin, std::size_t lpitch,
                         std::size_t width, std::size_t height, cudaMemcpyKind kind, bool to, cudaStream_t s,
                         void* caller) {
  if (!a) return bad(api, "not a live CUDA array", cudaErrorInvalidResourceHandle);
  std::size_t rows = a->extent.height ? a->extent.height : 1;
  if (wo + width > a->pitch || ho + height > rows * (a->extent.depth ? a->extent.depth : 1))
    return bad(api, "the copy runs past the array (offsets and width in bytes, height in rows)", cudaErrorInvalidValue);
  if (width > lpitch && height > 1) return bad(api, "width is larger than the pitch", cudaErrorInvalidPitchValue);
  Stream* g = capturing(s);
  for (std::size_t r = 0; r < height; ++r) {
    char* arow = at(a, wo, ho + r);
    char* lrow = static_cast<char*>(lin) + r * lpitch;
    void* d = to ? static_cast<void*>(arow) : lrow;
    const void* src = to ? static_cast<const void*>(lrow) : arow;
    cudaError_t e = g ? capture_copy(g, api, d, src, width, kind) : copy(api, d, src, width, kind, caller);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

uint8_t address_code(cudaTextureAddressMode m) { return static_cast<uint8_t>(m); }   // wrap 0 clamp 1 mirror 2 border 3

cudaError_t header_of(const char* api, const cudaResourceDesc* r, Header* h) {
  std::memset(h, 0, sizeof *h);
  cudaChannelFormatDesc d{};
  switch (r->resType) {
    case cudaResourceTypeArray: {
      Array* a = find_array(r->res.array.array);
      if (!a) return bad(api, "resDesc.res.array.array is not a live CUDA array", cudaErrorInvalidResourceHandle);
      d = a->desc;
      bool layered = a->flags & cudaArrayLayered;
      h->resource = 0;
      h->dims = a->extent.height ? (a->extent.depth && !layered ? 3 : 2) : 1;
      h->flags = layered ? kLayered : 0;
      h->base = reinterpret_cast<uint64_t>(a->data);
      h->width = a->extent.width;
      h->height = a->extent.height;
      h->depth = layered ? 0 : a->extent.depth;
      h->layers = layered ? a->extent.depth : 0;
      h->pitch = a->pitch;
      h->slice = a->slice;
      break;
    }
    case cudaResourceTypeLinear: {
      d = r->res.linear.desc;
      std::size_t es = element_bytes(d);
      if (!es) return bad(api, "resDesc.res.linear.desc is no texture channel format", cudaErrorInvalidChannelDescriptor);
      if (!r->res.linear.devPtr || reinterpret_cast<uintptr_t>(r->res.linear.devPtr) % 512)
        return bad(api, "res.linear.devPtr is null or not aligned to textureAlignment (512 bytes)",
                   cudaErrorInvalidValue);
      if (r->res.linear.sizeInBytes < es || !find_alloc(r->res.linear.devPtr, r->res.linear.sizeInBytes))
        return bad(api, "res.linear.sizeInBytes is less than an element or runs past the allocation",
                   cudaErrorInvalidValue);
      h->resource = 1;
      h->dims = 1;
      h->base = reinterpret_cast<uint64_t>(r->res.linear.devPtr);
      h->width = r->res.linear.sizeInBytes / es;
      break;
    }
    case cudaResourceTypePitch2D: {
      d = r->res.pitch2D.desc;
      std::size_t es = element_bytes(d);
      const auto& p = r->res.pitch2D;
      if (!es) return bad(api, "resDesc.res.pitch2D.desc is no texture channel format", cudaErrorInvalidChannelDescriptor);
      if (!p.devPtr || reinterpret_cast<uintptr_t>(p.devPtr) % 512 || p.pitchInBytes % 32 ||
          p.pitchInBytes < p.width * es || !p.width || !p.height)
        return bad(api, "res.pitch2D: devPtr aligned to 512 bytes, pitchInBytes a multiple of 32 and at least a row, "
                   "width and height not 0", cudaErrorInvalidValue);
      if (!find_alloc(p.devPtr, p.pitchInBytes * (p.height - 1) + p.width * es))
        return bad(api, "res.pitch2D runs past its allocation", cudaErrorInvalidValue);
      h->resource = 2;
      h->dims = 2;
      h->base = reinterpret_cast<uint64_t>(p.devPtr);
      h->width = p.width;
      h->height = p.height;
      h->pitch = p.pitchInBytes;
      h->slice = p.pitchInBytes * p.height;
      break;
    }
    default:
      stop(kExitRefused, "%s with a %s resource: tcemu models arrays, linear and pitch2D memory (called from %s)", api,
           r->resType == cudaResourceTypeMipmappedArray ? "mipmapped-array" : "unknown", where(here()).c_str());
  }
  int b[4] = {d.x, d.y, d.z, d.w};
  for (int i = 0; i < 4; ++i) h->bits[i] = static_cast<uint8_t>(b[i]);
  h->kind = static_cast<uint8_t>(d.f);
  h->address[0] = h->address[1] = h->address[2] = 1;
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t CUDARTAPI cudaMallocArray(cudaArray_t* array, const struct cudaChannelFormatDesc* desc, size_t width,
                                      size_t height, unsigned int flags) {
  return make_array("cudaMallocArray", array, desc, cudaExtent{width, height, 0}, flags);
}
cudaError_t CUDARTAPI cudaMalloc3DArray(cudaArray_t* array, const struct cudaChannelFormatDesc* desc,
                                        struct cudaExtent extent, unsigned int flags) {
  return make_array("cudaMalloc3DArray", array, desc, extent, flags);
}
cudaError_t CUDARTAPI cudaFreeArray(cudaArray_t array) {
  Guard lock(g_lock);
  if (!array) return cudaSuccess;
  Array* a = find_array(array);
  if (!a) return bad("cudaFreeArray", "not a live CUDA array", cudaErrorInvalidValue);
  release(a->data, "cudaFreeArray", __builtin_return_address(0));
  g_arrays.erase(a);
  delete a;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaArrayGetInfo(struct cudaChannelFormatDesc* desc, struct cudaExtent* extent,
                                       unsigned int* flags, cudaArray_t array) {
  Guard lock(g_lock);
  Array* a = find_array(array);
  if (!a) return bad("cudaArrayGetInfo", "not a live CUDA array", cudaErrorInvalidValue);
  if (desc) *desc = a->desc;
  if (extent) *extent = a->extent;
  if (flags) *flags = a->flags;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGetChannelDesc(struct cudaChannelFormatDesc* desc, cudaArray_const_t array) {
  Guard lock(g_lock);
  Array* a = find_array(array);
  if (!a || !desc) return bad("cudaGetChannelDesc", "not a live CUDA array, or desc is null", cudaErrorInvalidValue);
  *desc = a->desc;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                          size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind) {
  Guard lock(g_lock);
  return copy_array2d("cudaMemcpy2DToArray", find_array(dst), wOffset, hOffset, const_cast<void*>(src), spitch, width,
                      height, kind, true, nullptr, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                               size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind,
                                               cudaStream_t s) {
  Guard lock(g_lock);
  return copy_array2d("cudaMemcpy2DToArrayAsync", find_array(dst), wOffset, hOffset, const_cast<void*>(src), spitch,
                      width, height, kind, true, s, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemcpy2DFromArray(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                            size_t hOffset, size_t width, size_t height, enum cudaMemcpyKind kind) {
  Guard lock(g_lock);
  return copy_array2d("cudaMemcpy2DFromArray", find_array(src), wOffset, hOffset, dst, dpitch, width, height, kind,
                      false, nullptr, __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemcpy2DFromArrayAsync(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                                 size_t hOffset, size_t width, size_t height, enum cudaMemcpyKind kind,
                                                 cudaStream_t s) {
  Guard lock(g_lock);
  return copy_array2d("cudaMemcpy2DFromArrayAsync", find_array(src), wOffset, hOffset, dst, dpitch, width, height,
                      kind, false, s, __builtin_return_address(0));
}
// the deprecated 1-D forms: count bytes from (wOffset bytes, hOffset rows) on, row after row
static cudaError_t copy_linear(const char* api, cudaArray_const_t arr, size_t wo, size_t ho, void* lin, size_t count,
                               cudaMemcpyKind kind, bool to, cudaStream_t s, void* caller) {
  Array* a = find_array(arr);
  if (!a) return bad(api, "not a live CUDA array", cudaErrorInvalidResourceHandle);
  std::size_t start = ho * a->pitch + wo;
  if (wo > a->pitch || start + count > a->bytes) return bad(api, "the copy runs past the array", cudaErrorInvalidValue);
  void* d = to ? static_cast<void*>(a->data + start) : lin;
  const void* src = to ? static_cast<const void*>(lin) : a->data + start;
  if (Stream* g = capturing(s)) return capture_copy(g, api, d, src, count, kind);
  return copy(api, d, src, count, kind, caller);
}
cudaError_t CUDARTAPI cudaMemcpyToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t count,
                                        enum cudaMemcpyKind kind) {
  Guard lock(g_lock);
  return copy_linear("cudaMemcpyToArray", dst, wOffset, hOffset, const_cast<void*>(src), count, kind, true, nullptr,
                     __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemcpyToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src,
                                             size_t count, enum cudaMemcpyKind kind, cudaStream_t s) {
  Guard lock(g_lock);
  return copy_linear("cudaMemcpyToArrayAsync", dst, wOffset, hOffset, const_cast<void*>(src), count, kind, true, s,
                     __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemcpyFromArray(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                          size_t count, enum cudaMemcpyKind kind) {
  Guard lock(g_lock);
  return copy_linear("cudaMemcpyFromArray", src, wOffset, hOffset, dst, count, kind, false, nullptr,
                     __builtin_return_address(0));
}
cudaError_t CUDARTAPI cudaMemcpyFromArrayAsync(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                               size_t count, enum cudaMemcpyKind kind, cudaStream_t s) {
  Guard lock(g_lock);
  return copy_linear("cudaMemcpyFromArrayAsync", src, wOffset, hOffset, dst, count, kind, false, s,
                     __builtin_return_address(0));
}

cudaError_t CUDARTAPI cudaCreateTextureObject(cudaTextureObject_t* out, const struct cudaResourceDesc* r,
                                              const struct cudaTextureDesc* t, const struct cudaResourceViewDesc* v) {
  const char* api = "cudaCreateTextureObject";
  Guard lock(g_lock);
  ensure_at_exit();
  if (!out || !r || !t) return bad(api, "pTexObject, pResDesc or pTexDesc is null", cudaErrorInvalidValue);
  if (v)
    stop(kExitRefused, "%s with a resource view: tcemu does not model resource views (called from %s)", api,
         where(here()).c_str());
  if (t->sRGB)
    stop(kExitRefused, "%s with sRGB: tcemu does not model sRGB-to-linear reads (called from %s)", api,
         where(here()).c_str());
  Header h;
  cudaError_t e = header_of(api, r, &h);
  if (e != cudaSuccess) return e;
  bool floaty = h.kind == cudaChannelFormatKindFloat || t->readMode == cudaReadModeNormalizedFloat;
  if (t->readMode == cudaReadModeNormalizedFloat && (h.kind == cudaChannelFormatKindFloat || h.bits[0] == 32))
    return bad(api, "a normalized-float read needs 8- or 16-bit integer channels", cudaErrorInvalidNormSetting);
  if (t->filterMode == cudaFilterModeLinear && !floaty)
    return bad(api, "linear filtering needs a float read (float channels or cudaReadModeNormalizedFloat)",
               cudaErrorInvalidFilterSetting);
  if (t->filterMode != cudaFilterModePoint && t->filterMode != cudaFilterModeLinear)
    return bad(api, "filterMode is neither point nor linear", cudaErrorInvalidValue);
  std::memcpy(h.magic, "TCTX", 4);
  h.filter = static_cast<uint8_t>(t->filterMode);
  h.flags |= (t->normalizedCoords ? kNormalizedCoords : 0) | (t->readMode == cudaReadModeNormalizedFloat ? kNormalizedRead : 0);
  for (int i = 0; i < 3; ++i) {
    if (t->addressMode[i] < cudaAddressModeWrap || t->addressMode[i] > cudaAddressModeBorder)
      return bad(api, "an addressMode is none of wrap, clamp, mirror, border", cudaErrorInvalidValue);
    h.address[i] = address_code(t->addressMode[i]);
  }
  for (int i = 0; i < 4; ++i) h.border[i] = t->borderColor[i];
  auto* dev = static_cast<Header*>(carve(sizeof(Header), api, true));
  if (!dev) return ret(cudaErrorMemoryAllocation);
  std::memcpy(dev, &h, sizeof h);
  *out = reinterpret_cast<unsigned long long>(dev);
  g_objects[*out] = Object{dev, *r, *t, false};
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaCreateSurfaceObject(cudaSurfaceObject_t* out, const struct cudaResourceDesc* r) {
  const char* api = "cudaCreateSurfaceObject";
  Guard lock(g_lock);
  ensure_at_exit();
  if (!out || !r) return bad(api, "pSurfObject or pResDesc is null", cudaErrorInvalidValue);
  if (r->resType != cudaResourceTypeArray) return bad(api, "a surface is made of a CUDA array", cudaErrorInvalidValue);
  // an array allocated without cudaArraySurfaceLoadStore is accepted, as the H100's CUDA 13 accepts it
  Header h;
  cudaError_t e = header_of(api, r, &h);
  if (e != cudaSuccess) return e;
  std::memcpy(h.magic, "TCSF", 4);
  auto* dev = static_cast<Header*>(carve(sizeof(Header), api, true));
  if (!dev) return ret(cudaErrorMemoryAllocation);
  std::memcpy(dev, &h, sizeof h);
  *out = reinterpret_cast<unsigned long long>(dev);
  g_objects[*out] = Object{dev, *r, cudaTextureDesc{}, true};
  return cudaSuccess;
}

static cudaError_t destroy(const char* api, unsigned long long o, bool surface) {
  Guard lock(g_lock);
  if (!o) return cudaSuccess;
  auto it = g_objects.find(o);
  if (it == g_objects.end() || it->second.surface != surface)
    return bad(api, surface ? "not a live surface object" : "not a live texture object", cudaErrorInvalidValue);
  release(it->second.header, api, __builtin_return_address(0));
  g_objects.erase(it);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaDestroyTextureObject(cudaTextureObject_t t) {
  return destroy("cudaDestroyTextureObject", t, false);
}
cudaError_t CUDARTAPI cudaDestroySurfaceObject(cudaSurfaceObject_t s) {
  return destroy("cudaDestroySurfaceObject", s, true);
}

static const Object* live_object(const char* api, unsigned long long o, bool surface) {
  auto it = g_objects.find(o);
  if (it == g_objects.end() || it->second.surface != surface) {
    bad(api, surface ? "not a live surface object" : "not a live texture object", cudaErrorInvalidValue);
    return nullptr;
  }
  return &it->second;
}
cudaError_t CUDARTAPI cudaGetTextureObjectResourceDesc(struct cudaResourceDesc* r, cudaTextureObject_t t) {
  Guard lock(g_lock);
  const Object* o = live_object("cudaGetTextureObjectResourceDesc", t, false);
  if (!o || !r) return ret(cudaErrorInvalidValue);
  *r = o->res;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGetTextureObjectTextureDesc(struct cudaTextureDesc* d, cudaTextureObject_t t) {
  Guard lock(g_lock);
  const Object* o = live_object("cudaGetTextureObjectTextureDesc", t, false);
  if (!o || !d) return ret(cudaErrorInvalidValue);
  *d = o->tex;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGetSurfaceObjectResourceDesc(struct cudaResourceDesc* r, cudaSurfaceObject_t s) {
  Guard lock(g_lock);
  const Object* o = live_object("cudaGetSurfaceObjectResourceDesc", s, true);
  if (!o || !r) return ret(cudaErrorInvalidValue);
  *r = o->res;
  return cudaSuccess;
}

}  // extern "C"

namespace tcemu_rt {
// cudaMemcpy3D's view of an array: a pitched pointer over its elements (pitch: a row, ysize: rows per slice) and its
// element bytes; false: not a live array
bool array_pitched(cudaArray_const_t arr, cudaPitchedPtr* p, std::size_t* esize) {
  Array* a = find_array(arr);
  if (!a) return false;
  *p = cudaPitchedPtr{a->data, a->pitch, a->pitch, a->extent.height ? a->extent.height : 1};
  *esize = a->esize;
  return true;
}
}  // namespace tcemu_rt
