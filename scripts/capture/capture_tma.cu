// Hardware capture of TMA tile loads (cp.async.bulk.tensor, sm_90). Driven by scripts/capture/capture_tma.py.
//
// Global memory byte i holds gbyte(i); shared memory byte j is pre-filled with sbyte(j) (both below, and
// in tcemu/layout/tma.py). Per case: encode a tiled tensor map (cuTensorMapEncodeTiled), one thread loads the
// box at `coords` to shared offset `dst` (from a 1024-aligned base) through an mbarrier, and the whole
// 48 KiB window is copied out.
//
// Build: nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o tma scripts/capture/capture_tma.cu
// Usage: tma CASES.bin OUT.bin   (record format: capture_tma.py CASE_DTYPE)
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #x, __FILE__, __LINE__, cudaGetErrorString(e)); exit(2); } } while (0)

constexpr int WINDOW = 48 * 1024;
constexpr size_t GLOBAL_BYTES = 8u << 20;

struct TCase {  // 160 bytes, little-endian; mirror of capture_tma.py CASE_DTYPE
  int32_t dtype, rank, swizzle, dst;                 // dtype: 0 u8, 1 u16, 2 u32; swizzle: CUtensorMapSwizzle
  int64_t gaddr;                                      // byte offset of the tensor in the global buffer
  int64_t gdim[5], gstride[4];                        // globalDim (elements), globalStrides (bytes, dims 1..)
  int32_t box[5], estride[5], coord[5], pad;
};

__host__ __device__ inline uint8_t gbyte(uint64_t i) { return static_cast<uint8_t>((i * 0x9Du) ^ (i >> 8) ^ ((i >> 16) * 0x5Bu)); }
__host__ __device__ inline uint8_t sbyte(uint32_t j) { return static_cast<uint8_t>(0xA7u ^ (j * 0x35u) ^ (j >> 7)); }

__global__ void fill_global(uint8_t* g, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) g[i] = gbyte(i);
}

extern __shared__ __align__(1024) uint8_t smem[];

template <int RANK>
__global__ void load(const __grid_constant__ CUtensorMap map, TCase cs, uint8_t* out) {
  __shared__ __align__(8) uint64_t mbar;
  __shared__ int timed_out;
  for (int j = threadIdx.x; j < WINDOW; j += blockDim.x) smem[j] = sbyte(j);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const uint32_t bar = static_cast<uint32_t>(__cvta_generic_to_shared(&mbar));
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem)) + cs.dst;
  if (threadIdx.x == 0) {
    uint32_t bytes = cs.dtype == 0 ? 1 : (cs.dtype == 1 ? 2 : 4);
    for (int d = 0; d < RANK; ++d) bytes *= (cs.box[d] + (d ? cs.estride[d] : 1) - 1) / (d ? cs.estride[d] : 1);
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
    const uint64_t m = reinterpret_cast<uint64_t>(&map);
    const int* c = cs.coord;
    if (RANK == 1) asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2}], [%3];"
                                :: "r"(dst), "l"(m), "r"(c[0]), "r"(bar) : "memory");
    if (RANK == 2) asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                                :: "r"(dst), "l"(m), "r"(c[0]), "r"(c[1]), "r"(bar) : "memory");
    if (RANK == 3) asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                                :: "r"(dst), "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(bar) : "memory");
    if (RANK == 4) asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
                                :: "r"(dst), "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(bar) : "memory");
    if (RANK == 5) asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
                                :: "r"(dst), "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(bar) : "memory");
    uint32_t done = 0;
    for (int it = 0; it < (1 << 22) && !done; ++it)  // bounded: a wrong byte count must not hang the run
      asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}\n"
                   : "=r"(done) : "r"(bar) : "memory");
    timed_out = !done;
  }
  __syncthreads();
  for (int j = threadIdx.x; j < WINDOW; j += blockDim.x) out[j] = timed_out ? 0xEE : smem[j];
}

typedef CUresult (*EncodeFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
                             const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                             CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

int main(int argc, char** argv) {
  if (argc != 3) { fprintf(stderr, "usage: tma CASES.bin OUT.bin\n"); return 1; }
  FILE* f = fopen(argv[1], "rb");
  if (!f) { perror(argv[1]); return 1; }
  std::vector<TCase> cases;
  TCase c;
  while (fread(&c, sizeof(TCase), 1, f) == 1) cases.push_back(c);
  fclose(f);
  EncodeFn encode = nullptr;
  cudaDriverEntryPointQueryResult q;
  CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&encode), 12000, cudaEnableDefault, &q));
  uint8_t *g, *dout;
  CK(cudaMalloc(&g, GLOBAL_BYTES));
  CK(cudaMalloc(&dout, WINDOW));
  CK(cudaFuncSetAttribute(load<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, WINDOW));
  CK(cudaFuncSetAttribute(load<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, WINDOW));
  CK(cudaFuncSetAttribute(load<3>, cudaFuncAttributeMaxDynamicSharedMemorySize, WINDOW));
  CK(cudaFuncSetAttribute(load<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, WINDOW));
  CK(cudaFuncSetAttribute(load<5>, cudaFuncAttributeMaxDynamicSharedMemorySize, WINDOW));
  fill_global<<<256, 256>>>(g, GLOBAL_BYTES);
  CK(cudaDeviceSynchronize());
  FILE* o = fopen(argv[2], "wb");
  std::vector<uint8_t> host(WINDOW);
  const CUtensorMapDataType types[3] = {CU_TENSOR_MAP_DATA_TYPE_UINT8, CU_TENSOR_MAP_DATA_TYPE_UINT16, CU_TENSOR_MAP_DATA_TYPE_UINT32};
  int failed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const TCase& cs = cases[i];
    CUtensorMap map;
    cuuint64_t gdim[5], gstride[4];
    cuuint32_t box[5], es[5];
    for (int d = 0; d < 5; ++d) { gdim[d] = cs.gdim[d]; box[d] = cs.box[d]; es[d] = cs.estride[d]; }
    for (int d = 0; d < 4; ++d) gstride[d] = cs.gstride[d];
    CUresult r = encode(&map, types[cs.dtype], cs.rank, g + cs.gaddr, gdim, gstride, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        static_cast<CUtensorMapSwizzle>(cs.swizzle), CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {  // record the refusal as an all-0xFF window with a marker
      ++failed;
      fprintf(stderr, "case %zu: cuTensorMapEncodeTiled returned %d\n", i, static_cast<int>(r));
      std::fill(host.begin(), host.end(), 0xFF);
      fwrite(host.data(), 1, WINDOW, o);
      continue;
    }
    switch (cs.rank) {
      case 1: load<1><<<1, 128, WINDOW>>>(map, cs, dout); break;
      case 2: load<2><<<1, 128, WINDOW>>>(map, cs, dout); break;
      case 3: load<3><<<1, 128, WINDOW>>>(map, cs, dout); break;
      case 4: load<4><<<1, 128, WINDOW>>>(map, cs, dout); break;
      default: load<5><<<1, 128, WINDOW>>>(map, cs, dout); break;
    }
    CK(cudaGetLastError());
    CK(cudaMemcpy(host.data(), dout, WINDOW, cudaMemcpyDeviceToHost));
    fwrite(host.data(), 1, WINDOW, o);
  }
  fclose(o);
  printf("ran %zu cases, %d refused by the encoder\n", cases.size(), failed);
  return 0;
}
