// Nsight Compute ground truth for shared-memory wavefronts (sm_90). Driven by scripts/capture/capture_banks.py.
//
// One launch = one warp executing exactly one shared-memory instruction; thread t uses byte offset
// addr[t] into dynamic shared memory (ld/st: only threads whose bit is set in `mask` execute it;
// ldmatrix/stmatrix: all 32, as .sync.aligned requires). No other shared-memory access is made, so
// l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum of the launch is that instruction's.
//
// Build: nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o banks scripts/capture/capture_banks.cu
// Usage: banks PATTERNS.bin    (int32 records: op, mask, addr[32]; see capture_banks.py OPS)
#include <cuda.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #x, __FILE__, __LINE__, cudaGetErrorString(e)); exit(2); } } while (0)

extern __shared__ __align__(128) uint8_t smem[];

template <int OP>
__global__ void probe(const int32_t* __restrict__ rec, uint32_t* __restrict__ out) {
  const int t = threadIdx.x;
  const uint32_t mask = static_cast<uint32_t>(rec[1]);
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(smem)) + static_cast<uint32_t>(rec[2 + t]);
  uint32_t r0 = t, r1 = t + 1, r2 = t + 2, r3 = t + 3;
  uint64_t q0 = t, q1 = t + 7;
  __syncwarp();
  if (OP >= 14 || ((mask >> t) & 1)) {
    if (OP == 0) asm volatile("ld.shared.u8 %0, [%1];" : "=r"(r0) : "r"(a) : "memory");
    if (OP == 1) asm volatile("ld.shared.u16 %0, [%1];" : "=h"(*reinterpret_cast<uint16_t*>(&r0)) : "r"(a) : "memory");
    if (OP == 2) asm volatile("ld.shared.b32 %0, [%1];" : "=r"(r0) : "r"(a) : "memory");
    if (OP == 3) asm volatile("ld.shared.b64 %0, [%1];" : "=l"(q0) : "r"(a) : "memory");
    if (OP == 4) asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(a) : "memory");
    if (OP == 5) asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a) : "memory");
    if (OP == 6) asm volatile("ld.shared.v2.b64 {%0, %1}, [%2];" : "=l"(q0), "=l"(q1) : "r"(a) : "memory");
    if (OP == 7) asm volatile("st.shared.u8 [%0], %1;" :: "r"(a), "r"(r0) : "memory");
    if (OP == 8) asm volatile("st.shared.u16 [%0], %1;" :: "r"(a), "h"(static_cast<uint16_t>(r0)) : "memory");
    if (OP == 9) asm volatile("st.shared.b32 [%0], %1;" :: "r"(a), "r"(r0) : "memory");
    if (OP == 10) asm volatile("st.shared.b64 [%0], %1;" :: "r"(a), "l"(q0) : "memory");
    if (OP == 11) asm volatile("st.shared.v2.b32 [%0], {%1, %2};" :: "r"(a), "r"(r0), "r"(r1) : "memory");
    if (OP == 12) asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" :: "r"(a), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
    if (OP == 13) asm volatile("st.shared.v2.b64 [%0], {%1, %2};" :: "r"(a), "l"(q0), "l"(q1) : "memory");
    if (OP == 14) asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(a) : "memory");
    if (OP == 15) asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(a) : "memory");
    if (OP == 16) asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a) : "memory");
    if (OP == 17) asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(a) : "memory");
    if (OP == 18) asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(a) : "memory");
    if (OP == 19) asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a) : "memory");
    if (OP == 20) asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" :: "r"(a), "r"(r0) : "memory");
    if (OP == 21) asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" :: "r"(a), "r"(r0), "r"(r1) : "memory");
    if (OP == 22) asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" :: "r"(a), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
    if (OP == 23) asm volatile("stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%0], {%1};" :: "r"(a), "r"(r0) : "memory");
    if (OP == 24) asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};" :: "r"(a), "r"(r0), "r"(r1) : "memory");
    if (OP == 25) asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" :: "r"(a), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
  }
  const uint64_t q = q0 ^ (q1 * 3);  // consume every loaded bit, or ptxas narrows the load
  out[t] = r0 + r1 + r2 + r3 + static_cast<uint32_t>(q) + static_cast<uint32_t>(q >> 32);
}

typedef void (*Kern)(const int32_t*, uint32_t*);
static const Kern KERNELS[] = {probe<0>, probe<1>, probe<2>, probe<3>, probe<4>, probe<5>, probe<6>, probe<7>,
                               probe<8>, probe<9>, probe<10>, probe<11>, probe<12>, probe<13>, probe<14>, probe<15>,
                               probe<16>, probe<17>, probe<18>, probe<19>, probe<20>, probe<21>, probe<22>,
                               probe<23>, probe<24>, probe<25>};

int main(int argc, char** argv) {
  if (argc != 2) { fprintf(stderr, "usage: banks PATTERNS.bin\n"); return 1; }
  FILE* f = fopen(argv[1], "rb");
  if (!f) { perror(argv[1]); return 1; }
  std::vector<int32_t> recs;
  int32_t buf[34];
  while (fread(buf, 4, 34, f) == 34) recs.insert(recs.end(), buf, buf + 34);
  fclose(f);
  const int n = static_cast<int>(recs.size() / 34);
  int32_t* drec; uint32_t* dout;
  CK(cudaMalloc(&drec, recs.size() * 4));
  CK(cudaMalloc(&dout, 32 * 4));
  CK(cudaMemcpy(drec, recs.data(), recs.size() * 4, cudaMemcpyHostToDevice));
  for (int i = 0; i < n; ++i) {
    const int op = recs[i * 34];
    KERNELS[op]<<<1, 32, 32 * 1024>>>(drec + i * 34, dout);
    CK(cudaGetLastError());
  }
  CK(cudaDeviceSynchronize());
  printf("launched %d\n", n);
  return 0;
}
