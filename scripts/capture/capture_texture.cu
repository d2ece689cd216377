// Texture / surface sampling on silicon, case by case from a plan (capture_texture.py writes it, and turns the
// results into traces/texture_sm90.npz; traces/README.md, kind `texture`).
//   nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o capture_texture capture_texture.cu
//   ./capture_texture plan.bin data.bin coords.bin results.bin status.bin
// plan.bin: one Case (below) per case. Each case makes a CUDA array (or linear memory) from its bytes of data.bin,
// a texture or surface object of it, and samples it at its coordinates of coords.bin (x, y as 32-bit words:
// float bits, or ints for fetches and surface reads); results.bin gets 4 words per coordinate, status.bin one
// cudaError_t per case (creation failures: the case is not sampled).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

struct Case {
  int dims, resource, bits[4], kind, read_mode, filter, addr, normalized, width, height, result, op, n;
  int data_off, data_bytes, coord_off;
  float border[4];
};
enum { kTex = 0, kFetch = 1, kGather0 = 2, kSurfClamp = 6, kSurfZero = 7 };

template <class T> __device__ uint4 bits(T v) { return make_uint4(__float_as_uint(v.x), __float_as_uint(v.y),
                                                                   __float_as_uint(v.z), __float_as_uint(v.w)); }
template <> __device__ uint4 bits<int4>(int4 v) { return make_uint4(v.x, v.y, v.z, v.w); }
template <> __device__ uint4 bits<uint4>(uint4 v) { return v; }

template <class T>
__global__ void sample(cudaTextureObject_t t, int dims, int op, const unsigned* cx, const unsigned* cy, uint4* out,
                       int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = __uint_as_float(cx[i]), y = __uint_as_float(cy[i]);
  T v;
  if (op == kFetch) v = tex1Dfetch<T>(t, (int)cx[i]);
  else if (op == kGather0) v = tex2Dgather<T>(t, x, y, 0);
  else if (op == kGather0 + 1) v = tex2Dgather<T>(t, x, y, 1);
  else if (op == kGather0 + 2) v = tex2Dgather<T>(t, x, y, 2);
  else if (op == kGather0 + 3) v = tex2Dgather<T>(t, x, y, 3);
  else if (dims == 1) v = tex1D<T>(t, x);
  else v = tex2D<T>(t, x, y);
  out[i] = bits(v);
}

__global__ void surf(cudaSurfaceObject_t s, int dims, int op, const unsigned* cx, const unsigned* cy, uint4* out,
                     int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = (int)cx[i], y = (int)cy[i];
  unsigned v;
  if (dims == 1) v = op == kSurfClamp ? surf1Dread<unsigned>(s, x, cudaBoundaryModeClamp)
                                      : surf1Dread<unsigned>(s, x, cudaBoundaryModeZero);
  else v = op == kSurfClamp ? surf2Dread<unsigned>(s, x, y, cudaBoundaryModeClamp)
                            : surf2Dread<unsigned>(s, x, y, cudaBoundaryModeZero);
  out[i] = make_uint4(v, 0, 0, 0);
}

static std::vector<char> slurp(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) { fprintf(stderr, "cannot open %s\n", path); exit(2); }
  std::vector<char> v;
  char buf[1 << 16];
  size_t k;
  while ((k = fread(buf, 1, sizeof buf, f)) > 0) v.insert(v.end(), buf, buf + k);
  fclose(f);
  return v;
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

int main(int argc, char** argv) {
  if (argc != 6) { fprintf(stderr, "usage: %s plan data coords results status\n", argv[0]); return 2; }
  std::vector<char> plan = slurp(argv[1]), data = slurp(argv[2]), coords = slurp(argv[3]);
  int cases = (int)(plan.size() / sizeof(Case));
  const Case* cs = reinterpret_cast<const Case*>(plan.data());
  size_t total = coords.size() / 8;   // x words then y words
  const unsigned* hx = reinterpret_cast<const unsigned*>(coords.data());
  unsigned *dx, *dy;
  uint4* dout;
  CK(cudaMalloc(&dx, total * 4)); CK(cudaMalloc(&dy, total * 4)); CK(cudaMalloc(&dout, total * 16));
  CK(cudaMemcpy(dx, hx, total * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dy, hx + total, total * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(dout, 0, total * 16));
  std::vector<int> status(cases);
  for (int c = 0; c < cases; ++c) {
    const Case& k = cs[c];
    cudaChannelFormatDesc fd = cudaCreateChannelDesc(k.bits[0], k.bits[1], k.bits[2], k.bits[3],
                                                      (cudaChannelFormatKind)k.kind);
    int esize = (k.bits[0] + k.bits[1] + k.bits[2] + k.bits[3]) / 8;
    cudaResourceDesc rd = {};
    cudaArray_t arr = nullptr;
    void* lin = nullptr;
    bool surface = k.op >= kSurfClamp;
    if (k.resource == 1) {
      CK(cudaMalloc(&lin, k.data_bytes));
      CK(cudaMemcpy(lin, data.data() + k.data_off, k.data_bytes, cudaMemcpyHostToDevice));
      rd.resType = cudaResourceTypeLinear;
      rd.res.linear.devPtr = lin; rd.res.linear.desc = fd; rd.res.linear.sizeInBytes = k.data_bytes;
    } else {
      CK(cudaMallocArray(&arr, &fd, k.width, k.dims == 1 ? 0 : k.height, surface ? cudaArraySurfaceLoadStore : 0));
      CK(cudaMemcpy2DToArray(arr, 0, 0, data.data() + k.data_off, (size_t)k.width * esize, (size_t)k.width * esize,
                             k.dims == 1 ? 1 : k.height, cudaMemcpyHostToDevice));
      rd.resType = cudaResourceTypeArray;
      rd.res.array.array = arr;
    }
    int blocks = (k.n + 127) / 128;
    cudaError_t e;
    if (surface) {
      cudaSurfaceObject_t s = 0;
      e = cudaCreateSurfaceObject(&s, &rd);
      if (e == cudaSuccess) {
        surf<<<blocks, 128>>>(s, k.dims, k.op, dx + k.coord_off, dy + k.coord_off, dout + k.coord_off, k.n);
        CK(cudaDeviceSynchronize());
        CK(cudaDestroySurfaceObject(s));
      }
    } else {
      cudaTextureDesc td = {};
      for (int d = 0; d < 3; ++d) td.addressMode[d] = (cudaTextureAddressMode)k.addr;
      td.filterMode = (cudaTextureFilterMode)k.filter;
      td.readMode = (cudaTextureReadMode)k.read_mode;
      td.normalizedCoords = k.normalized;
      for (int d = 0; d < 4; ++d) td.borderColor[d] = k.border[d];
      cudaTextureObject_t t = 0;
      e = cudaCreateTextureObject(&t, &rd, &td, nullptr);
      if (e == cudaSuccess) {
        const unsigned* x = dx + k.coord_off;
        const unsigned* y = dy + k.coord_off;
        uint4* o = dout + k.coord_off;
        if (k.result == 0) sample<float4><<<blocks, 128>>>(t, k.dims, k.op, x, y, o, k.n);
        else if (k.result == 1) sample<int4><<<blocks, 128>>>(t, k.dims, k.op, x, y, o, k.n);
        else sample<uint4><<<blocks, 128>>>(t, k.dims, k.op, x, y, o, k.n);
        CK(cudaDeviceSynchronize());
        CK(cudaDestroyTextureObject(t));
      }
    }
    cudaGetLastError();
    status[c] = (int)e;
    if (arr) CK(cudaFreeArray(arr));
    if (lin) CK(cudaFree(lin));
  }
  std::vector<unsigned> out(total * 4);
  CK(cudaMemcpy(out.data(), dout, total * 16, cudaMemcpyDeviceToHost));
  FILE* f = fopen(argv[4], "wb"); fwrite(out.data(), 4, out.size(), f); fclose(f);
  f = fopen(argv[5], "wb"); fwrite(status.data(), 4, status.size(), f); fclose(f);
  printf("%d cases, %zu coordinates\n", cases, total);
  return 0;
}
