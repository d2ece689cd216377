// Second SFU capture: the cell tables of MUFU.SIN / MUFU.COS and MUFU.TANH over every f32 input.
// sin.approx.ftz.f32 / cos.approx.ftz.f32 are FMUL.RZ(x, 0x3e22f983) then MUFU.SIN / MUFU.COS; the first capture
// showed the MUFU result depends only on the sign and on trunc(|t| * 2^25) mod 2^25 (t the FMUL.RZ product). Here
// every one of the 2^32 inputs writes its output into the table cell of its key (sin: odd, so the output is
// stored for +|x|; cos: even); a cell written twice with different values counts a conflict.
// tanh.approx.f32 (MUFU.TANH) depends on (sign, exponent, mantissa >> k_e) for exponents 119..129 (k_e below,
// from the first capture's resolution counts); every input of those binades fills its cell the same way, and
// the outputs of whole binades 100..118 are written as they are.
// Files (argv[1]): sin_cells.u32, cos_cells.u32 (2^25 words, 0xffffffff = no input reaches the cell),
// tanh_cells_<exp>.u32 (2^(24-k) words: + then -), tanh_b0_<exp>.u32 (2^23 words), conflicts.txt.
// Build: nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o sfu_capture2 scripts/capture/capture_sfu2.cu
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <string>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)

__constant__ int TANH_K[11] = {6, 6, 6, 5, 5, 4, 4, 4, 3, 2, 3};  // exponents 119..129
__device__ unsigned long long conflicts[4];
__device__ uint32_t first_conflict[4][4];

__device__ __forceinline__ void put(uint32_t* tab, uint32_t idx, uint32_t y, int which, uint32_t x) {
  uint32_t old = atomicCAS(&tab[idx], 0xffffffffu, y);
  if (old != 0xffffffffu && old != y) {
    unsigned long long n = atomicAdd(&conflicts[which], 1ull);
    if (n == 0) { first_conflict[which][0] = x; first_conflict[which][1] = idx;
                  first_conflict[which][2] = old; first_conflict[which][3] = y; }
  }
}

__global__ void sincos(uint32_t hi, uint32_t* S, uint32_t* C) {
  uint32_t x = (hi << 28) | (blockIdx.x * blockDim.x + threadIdx.x);
  if ((x & 0x7f800000u) == 0x7f800000u) return;  // inf, NaN
  float xf = __uint_as_float(x), s, c;
  asm volatile("sin.approx.ftz.f32 %0, %1;" : "=f"(s) : "f"(xf));
  asm volatile("cos.approx.ftz.f32 %0, %1;" : "=f"(c) : "f"(xf));
  double a = fabs((double)__fmul_rz(xf, 0.15915493667125701904f));
  uint32_t q = a >= 4294967296.0 ? 0u : (uint32_t)((unsigned long long)(a * 33554432.0) & 0x1ffffffull);
  uint32_t sp = (x >> 31) ? (__float_as_uint(s) ^ 0x80000000u) : __float_as_uint(s);
  put(S, q, sp, 0, x);
  put(C, q, __float_as_uint(c), 1, x);
}

__global__ void tanh_cells(int e, uint32_t* T) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;  // 2^24: sign, mantissa
  uint32_t x = ((i >> 23) << 31) | ((uint32_t)e << 23) | (i & 0x7fffff);
  float y; asm volatile("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(__uint_as_float(x)));
  int k = TANH_K[e - 119];
  put(T, ((i >> 23) << (23 - k)) | ((i & 0x7fffff) >> k), __float_as_uint(y), 2, x);
}

__global__ void tanh_binade(int e, uint32_t* out) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  float y; asm volatile("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(__uint_as_float(((uint32_t)e << 23) | i)));
  out[i] = __float_as_uint(y);
}

static void save(const std::string& path, const void* dev, size_t bytes) {
  std::vector<char> h(bytes);
  CK(cudaMemcpy(h.data(), dev, bytes, cudaMemcpyDeviceToHost));
  FILE* f = fopen(path.c_str(), "wb");
  if (!f || fwrite(h.data(), 1, bytes, f) != bytes) { fprintf(stderr, "write %s failed\n", path.c_str()); exit(1); }
  fclose(f);
}

int main(int argc, char** argv) {
  if (argc < 2) { fprintf(stderr, "usage: sfu_capture2 OUTDIR\n"); return 2; }
  std::string dir = argv[1];
  uint32_t *S, *C, *T;
  CK(cudaMalloc(&S, 4u << 25)); CK(cudaMalloc(&C, 4u << 25)); CK(cudaMalloc(&T, 4u << 24));
  CK(cudaMemset(S, 0xff, 4u << 25)); CK(cudaMemset(C, 0xff, 4u << 25));
  for (uint32_t hi = 0; hi < 16; ++hi) { sincos<<<1u << 20, 256>>>(hi, S, C); CK(cudaGetLastError()); }
  save(dir + "/sin_cells.u32", S, 4u << 25);
  save(dir + "/cos_cells.u32", C, 4u << 25);
  for (int e = 119; e <= 129; ++e) {
    CK(cudaMemset(T, 0xff, 4u << 24));
    tanh_cells<<<1u << 16, 256>>>(e, T); CK(cudaGetLastError());
    int k = e == 119 || e == 120 || e == 121 ? 6 : e <= 123 ? 5 : e <= 126 ? 4 : e == 127 ? 3 : e == 128 ? 2 : 3;
    char name[128]; snprintf(name, sizeof name, "%s/tanh_cells_%d.u32", dir.c_str(), e);
    save(name, T, (size_t(4)) << (24 - k));
  }
  int bins[] = {100, 108, 112, 114, 115, 116, 117, 118};
  for (int e : bins) {
    tanh_binade<<<1u << 15, 256>>>(e, T); CK(cudaGetLastError());
    char name[128]; snprintf(name, sizeof name, "%s/tanh_b0_%d.u32", dir.c_str(), e);
    save(name, T, size_t(4) << 23);
  }
  unsigned long long n[4]; uint32_t fc[4][4];
  CK(cudaMemcpyFromSymbol(n, conflicts, sizeof n)); CK(cudaMemcpyFromSymbol(fc, first_conflict, sizeof fc));
  FILE* f = fopen((dir + "/conflicts.txt").c_str(), "w");
  const char* names[4] = {"sin", "cos", "tanh", "-"};
  for (int i = 0; i < 3; ++i) {
    fprintf(f, "%s conflicts %llu first x=%08x cell=%u old=%08x new=%08x\n", names[i], n[i], fc[i][0], fc[i][1],
            fc[i][2], fc[i][3]);
    printf("%s conflicts %llu first x=%08x cell=%u old=%08x new=%08x\n", names[i], n[i], fc[i][0], fc[i][1],
           fc[i][2], fc[i][3]);
  }
  fclose(f);
  return 0;
}
