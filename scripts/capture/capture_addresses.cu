// Hardware capture of wgmma operand address maps (sm_90a). Driven by scripts/capture/capture_addresses.py.
//
// Method: per case, one CTA (one warpgroup) fills its whole dynamic shared memory with codes of each
// element slot's own absolute index (slot = address / element size), in three passes of 8-bit digits,
// except a 2 KiB selector tile at the top. The selector is the other operand, K-major, no swizzle
// (LBO = 128, SBO = 256): selector[row][k] = (k == row % K), so D copies single elements exactly:
//   probe A: B is the selector, N = K, D[m][n] = A[m][n];
//   probe B: A is the selector,       D[m][n] = B[n][m % K].
// D's raw registers are accumulated over the passes as sum(digit << 8*pass) and written out per
// thread; the Python driver maps registers to (row, col) and addresses to elements.
//
// Build: nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o probe scripts/capture/capture_addresses.cu
// Usage: probe --base                      prints the absolute shared address of dynamic smem
//        probe CASES.bin OUT.bin           runs every case (format: see capture_addresses.py)
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "wgmma_probe_wrappers.inc"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #x, __FILE__, __LINE__, cudaGetErrorString(e)); exit(2); } } while (0)

constexpr int SMEM_BYTES = 227 * 1024;  // max dynamic shared memory per block on sm90
constexpr int SEL_BYTES = 2048;         // selector tile at the top of the window
constexpr int REGS = 128;               // output stride per thread (N = 256 f32 -> 128 registers)

struct Case {  // 32 bytes, little-endian, matches capture_addresses.py CASE_DTYPE
  uint64_t desc_a, desc_b;
  int32_t kind, n, trans_a, trans_b;
};

extern __shared__ __align__(1024) uint8_t smem[];

__device__ __forceinline__ uint32_t smem_base() {
  return static_cast<uint32_t>(__cvta_generic_to_shared(smem));
}

// Encode the small integer v (0..255) as one element of the probe type, little-endian into bytes.
template <int KIND> __device__ __forceinline__ uint32_t encode(uint32_t v) {
  if (KIND == 0) return __float_as_uint(static_cast<float>(v));             // tf32 (f32 container)
  if (KIND == 1) return __half_as_ushort(__uint2half_rn(v));               // f16
  if (KIND == 2) return __bfloat16_as_ushort(__uint2bfloat16_rn(v));       // bf16
  return v;                                                                // u8
}

template <int KIND> __device__ void fill(int pass, int K) {
  constexpr int EB = KIND == 0 ? 4 : (KIND == 3 ? 1 : 2);
  const uint32_t base = smem_base();
  for (int off = threadIdx.x * 16; off < SMEM_BYTES; off += blockDim.x * 16) {
    uint8_t bytes[16];
    const int sel = off - (SMEM_BYTES - SEL_BYTES);
    for (int e = 0; e < 16 / EB; ++e) {
      uint32_t v;
      if (sel >= 0) {  // selector: row = 8*(sel/256) + (sel%128)/16, k = chunk*T + element
        const int row = 8 * (sel / 256) + (sel % 128) / 16;
        const int k = ((sel % 256) / 128) * (16 / EB) + e;
        v = encode<KIND>(k == row % K ? 1u : 0u);
      } else {
        const uint32_t slot = (base + off + e * EB) / EB;
        v = encode<KIND>((slot >> (8 * pass)) & 0xFFu);
      }
      for (int b = 0; b < EB; ++b) bytes[e * EB + b] = (v >> (8 * b)) & 0xFF;
    }
    *reinterpret_cast<uint4*>(smem + off) = *reinterpret_cast<uint4*>(bytes);
  }
}

template <int KIND, int N, int TA, int TB, typename ACC, void (*MMA)(ACC (&)[N / 2], uint64_t, uint64_t)>
__global__ void __launch_bounds__(128, 1) probe(const Case* cases, const int* ids, int count, int32_t* out) {
  constexpr int K = KIND == 0 ? 8 : (KIND == 3 ? 32 : 16);
  for (int c = blockIdx.x; c < count; c += gridDim.x) {
    const int id = ids[c];
    const Case cs = cases[id];
    int32_t acc[N / 2];
    for (int i = 0; i < N / 2; ++i) acc[i] = 0;
    for (int pass = 0; pass < 3; ++pass) {
      fill<KIND>(pass, K);
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      __syncthreads();
      ACC d[N / 2];
      for (int i = 0; i < N / 2; ++i) d[i] = 0;
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
      MMA(d, cs.desc_a, cs.desc_b);
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
      for (int i = 0; i < N / 2; ++i) acc[i] += static_cast<int32_t>(d[i]) << (8 * pass);
      __syncthreads();
    }
    int32_t* o = out + (static_cast<size_t>(id) * 128 + threadIdx.x) * REGS;
    for (int i = 0; i < N / 2; ++i) o[i] = acc[i];
  }
}

__global__ void base_kernel(uint32_t* out) { *out = smem_base(); }

int main(int argc, char** argv) {
  if (argc == 2 && !strcmp(argv[1], "--base")) {
    uint32_t* d; uint32_t h;
    CK(cudaFuncSetAttribute(base_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
    CK(cudaMalloc(&d, 4));
    base_kernel<<<1, 1, SMEM_BYTES>>>(d);
    CK(cudaGetLastError());
    CK(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost));
    printf("%u %d\n", h, SMEM_BYTES);
    return 0;
  }
  if (argc != 3) { fprintf(stderr, "usage: probe --base | probe CASES.bin OUT.bin\n"); return 1; }
  FILE* f = fopen(argv[1], "rb");
  if (!f) { perror(argv[1]); return 1; }
  fseek(f, 0, SEEK_END); long bytes = ftell(f); fseek(f, 0, SEEK_SET);
  const int n = static_cast<int>(bytes / sizeof(Case));
  std::vector<Case> cases(n);
  if (fread(cases.data(), sizeof(Case), n, f) != static_cast<size_t>(n)) { fprintf(stderr, "short read\n"); return 1; }
  fclose(f);

  Case* dcases; int32_t* dout; int* dids;
  const size_t out_elems = static_cast<size_t>(n) * 128 * REGS;
  CK(cudaMalloc(&dcases, n * sizeof(Case)));
  CK(cudaMalloc(&dout, out_elems * 4));
  CK(cudaMalloc(&dids, n * sizeof(int)));
  CK(cudaMemcpy(dcases, cases.data(), n * sizeof(Case), cudaMemcpyHostToDevice));
  CK(cudaMemset(dout, 0xFF, out_elems * 4));  // poison: unwritten slots read -1

  // Group the cases by instantiation and launch each group.
  std::vector<int> done(n, 0);
  int launched = 0;
  for (int i = 0; i < n; ++i) {
    if (done[i]) continue;
    const Case& c0 = cases[i];
    std::vector<int> ids;
    for (int j = i; j < n; ++j)
      if (!done[j] && cases[j].kind == c0.kind && cases[j].n == c0.n && cases[j].trans_a == c0.trans_a &&
          cases[j].trans_b == c0.trans_b) { ids.push_back(j); done[j] = 1; }
    CK(cudaMemcpy(dids, ids.data(), ids.size() * sizeof(int), cudaMemcpyHostToDevice));
    bool ok = false;
#define LAUNCH(KD, NN, A, B, ACC, FN) { \
      auto kern = probe<KD, NN, A, B, ACC, FN>; \
      CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES)); \
      kern<<<132, 128, SMEM_BYTES>>>(dcases, dids, static_cast<int>(ids.size()), dout); \
      CK(cudaGetLastError()); CK(cudaDeviceSynchronize()); ok = true; }
    PROBE_DISPATCH(c0.kind, c0.n, c0.trans_a, c0.trans_b, LAUNCH)
    if (!ok) { fprintf(stderr, "no instantiation for kind %d n %d ta %d tb %d\n", c0.kind, c0.n, c0.trans_a, c0.trans_b); return 1; }
    launched += static_cast<int>(ids.size());
  }
  std::vector<int32_t> host(out_elems);
  CK(cudaMemcpy(host.data(), dout, out_elems * 4, cudaMemcpyDeviceToHost));
  FILE* o = fopen(argv[2], "wb");
  fwrite(host.data(), 4, out_elems, o);
  fclose(o);
  printf("ran %d cases\n", launched);
  return 0;
}
