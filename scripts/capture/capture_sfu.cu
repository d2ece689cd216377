// Capture of the H100's special-function unit (MUFU) through the PTX forms whose SASS is a bare MUFU
// (the .ftz forms; `cuobjdump -sass` of this file's cubin shows one MUFU each, sin/cos after FMUL.RZ).
// Writes raw little-endian output words, one file per table, into the folder given as argv[1]:
//   <form>_b<sign><exp>.u32   outputs for every float of one binade (2^23 inputs, sign s, biased exponent e)
//   ex2_grid.u32              ex2.approx.ftz.f32 of +-f * 2^-23, f < 2^23 (positives then negatives)
//   <form16>.u16              the 16-bit forms over all 65,536 inputs
//   rcp64h_b<e>.u32 / rsq64h_b<e>.u32   high words of rcp.approx.ftz.f64 / rsqrt.approx.ftz.f64 for the 2^20
//                             high-word mantissas of one binade (low word 0)
//   resolution.u32            [form][sign*256+exp][k] mismatches of f(x) against f(x with its k low bits
//                             cleared), k = 0..23, over 4096 hashed mantissas per binade
// Build: nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o sfu_capture scripts/capture/capture_sfu.cu
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <string>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)

enum { RCP, RSQ, SQRT, EX2, LG2, SIN, COS, TANH, NFORM };
static const char* NAMES[NFORM] = {"rcp", "rsqrt", "sqrt", "ex2", "lg2", "sin", "cos", "tanh"};

__device__ __forceinline__ uint32_t f1(int form, uint32_t xb) {
  float x = __uint_as_float(xb), y = 0.f;
  switch (form) {
    case RCP: asm volatile("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); break;
    case RSQ: asm volatile("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); break;
    case SQRT: asm volatile("sqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); break;
    case EX2: asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); break;
    case LG2: asm volatile("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); break;
    case SIN: asm volatile("sin.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); break;
    case COS: asm volatile("cos.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); break;
    case TANH: asm volatile("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x)); break;
  }
  return __float_as_uint(y);
}

__global__ void binade(int form, uint32_t base, uint32_t n, uint32_t* out) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = f1(form, base + i);
}

__global__ void ex2grid(uint32_t* out) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < (1u << 24); i += gridDim.x * blockDim.x) {
    float v = (float)(i & 0x7fffff) * 1.1920928955078125e-07f;  // f * 2^-23, exact
    if (i >> 23) v = -v;
    out[i] = f1(EX2, __float_as_uint(v));
  }
}

__device__ __forceinline__ uint32_t mix(uint32_t x) {
  x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16; return x;
}

// grid: (512 binades, NFORM); block: 256 threads, each 16 mantissas
__global__ void resolution(uint32_t* counts) {
  int form = blockIdx.y, bin = blockIdx.x;
  uint32_t sign = (uint32_t)(bin >> 8) << 31, exp = (uint32_t)(bin & 255) << 23;
  for (int j = 0; j < 16; ++j) {
    uint32_t m = mix((uint32_t)(bin * 4096 + threadIdx.x * 16 + j) ^ (form * 0x9e3779b9u)) & 0x7fffff;
    uint32_t x = sign | exp | m;
    uint32_t y = f1(form, x);
    for (int k = 1; k < 24; ++k) {
      uint32_t xk = x & ~((1u << k) - 1);
      if (f1(form, xk) != y) atomicAdd(&counts[(form * 512 + bin) * 24 + k], 1u);
    }
  }
}

__device__ __forceinline__ uint16_t h1(int form, uint16_t x) {
  uint16_t y = 0;
  switch (form) {
    case 0: asm volatile("ex2.approx.f16 %0, %1;" : "=h"(y) : "h"(x)); break;
    case 1: asm volatile("ex2.approx.ftz.bf16 %0, %1;" : "=h"(y) : "h"(x)); break;
    case 2: asm volatile("tanh.approx.f16 %0, %1;" : "=h"(y) : "h"(x)); break;
    case 3: asm volatile("tanh.approx.bf16 %0, %1;" : "=h"(y) : "h"(x)); break;
  }
  return y;
}

__global__ void half_forms(uint16_t* out) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;  // 4 * 65536
  out[i] = h1(i >> 16, (uint16_t)(i & 0xffff));
}

__global__ void hi64(int which, uint32_t exphi, uint32_t* out) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;  // 2^20
  double x = __hiloint2double((int)(exphi | i), 0), y;
  if (which == 0) asm volatile("rcp.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(x));
  else asm volatile("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(x));
  out[i] = (uint32_t)__double2hiint(y);
  if (__double2loint(y) != 0) out[i] = 0xdeadbeef;  // the low word is expected to be 0
}

static void save(const std::string& path, const void* dev, size_t bytes) {
  std::vector<char> h(bytes);
  CK(cudaMemcpy(h.data(), dev, bytes, cudaMemcpyDeviceToHost));
  FILE* f = fopen(path.c_str(), "wb");
  if (!f || fwrite(h.data(), 1, bytes, f) != bytes) { fprintf(stderr, "write %s failed\n", path.c_str()); exit(1); }
  fclose(f);
}

int main(int argc, char** argv) {
  if (argc < 2) { fprintf(stderr, "usage: sfu_capture OUTDIR\n"); return 2; }
  std::string dir = argv[1];
  uint32_t* buf; CK(cudaMalloc(&buf, (size_t(1) << 24) * 4));
  struct B { int form; int sign; int exp; };
  std::vector<B> bins = {
    {RCP, 0, 127}, {RSQ, 0, 127}, {RSQ, 0, 128}, {SQRT, 0, 127}, {SQRT, 0, 128},
    {LG2, 0, 127}, {LG2, 0, 126}, {LG2, 0, 128}, {LG2, 0, 125}, {LG2, 0, 129}, {LG2, 0, 131}, {LG2, 0, 123},
    {LG2, 0, 191}, {LG2, 0, 63}, {LG2, 0, 254}, {LG2, 0, 1},
    {SIN, 0, 124}, {SIN, 0, 125}, {SIN, 0, 126}, {SIN, 0, 127}, {SIN, 0, 128}, {SIN, 0, 129}, {SIN, 1, 127},
    {SIN, 0, 107},
    {COS, 0, 124}, {COS, 0, 125}, {COS, 0, 126}, {COS, 0, 127}, {COS, 0, 128}, {COS, 0, 129}, {COS, 1, 127},
    {COS, 0, 107},
    {TANH, 0, 126}, {TANH, 0, 127}, {TANH, 0, 128}, {TANH, 0, 120}, {TANH, 1, 127},
  };
  for (auto& b : bins) {
    binade<<<1024, 256>>>(b.form, ((uint32_t)b.sign << 31) | ((uint32_t)b.exp << 23), 1u << 23, buf);
    CK(cudaGetLastError());
    char name[128]; snprintf(name, sizeof name, "%s/%s_b%d_%d.u32", dir.c_str(), NAMES[b.form], b.sign, b.exp);
    save(name, buf, (size_t(1) << 23) * 4);
  }
  ex2grid<<<1024, 256>>>(buf); CK(cudaGetLastError());
  save(dir + "/ex2_grid.u32", buf, (size_t(1) << 24) * 4);
  half_forms<<<1024, 256>>>((uint16_t*)buf); CK(cudaGetLastError());
  save(dir + "/half_forms.u16", buf, 4 * 65536 * 2);
  for (int which = 0; which < 2; ++which)
    for (uint32_t e = 0x3ff; e <= 0x400; ++e) {
      hi64<<<4096, 256>>>(which, e << 20, buf); CK(cudaGetLastError());
      char name[128]; snprintf(name, sizeof name, "%s/%s_b%u.u32", dir.c_str(), which ? "rsq64h" : "rcp64h", e);
      save(name, buf, (size_t(1) << 20) * 4);
    }
  CK(cudaMemset(buf, 0, NFORM * 512 * 24 * 4));
  resolution<<<dim3(512, NFORM), 256>>>(buf); CK(cudaGetLastError());
  save(dir + "/resolution.u32", buf, NFORM * 512 * 24 * 4);
  CK(cudaDeviceSynchronize());
  printf("sfu_capture: %zu binades written to %s\n", bins.size(), dir.c_str());
  return 0;
}
