// Edge cases left open by the ALU and sparse-wgmma captures (driven by scripts/capture/capture_edges.py, which writes
// traces/ptx_alu_edges_sm90.npz and traces/wgmma_zero_sign_sm90.npz).
//
// alu    One kernel per PTX op form (generated into scripts/capture/capture_edges.inc by `capture_edges.py --gen-inc`), as
//        scripts/capture/capture_ptx_alu.cu: thread i reads the four 64-bit operand slots of case i from global memory (no
//        constant folding), runs the form's inline PTX and stores its destination register(s).
// wgmma  One warpgroup per case: A (64 x K, or the 64 x K/2 stored elements of wgmma.sp) and B (8 x K) are laid
//        K-major without swizzle into shared memory (A at +0: LBO 128, SBO 256; B at +4096: LBO 128, SBO 256 dense
//        or 512 sparse) from the case's patterns: element (r, k) of an operand with `cols` elements per row is
//        pool[off + (r * cols + k) % len]. C (64 x 8) goes into the D fragment the same way (element (m, n) =
//        pool[c_off + (m * 8 + n) % c_len]); one wgmma (N = 8) with the case's scale-d and, for .sp, the case's
//        metadata register in every thread and sp-sel 0; every thread's raw D registers are stored.
//
//   capture_edges --list                      ALU form names, one per line
//   capture_edges --wgmma-list                wgmma instantiation names, one per line
//   capture_edges alu IN.bin OUT.bin          IN: int64 n, int32 op[n], uint64 slots[n][4]; OUT: uint64 out[n][2]
//   capture_edges wgmma CASES.bin POOL.bin OUT.bin
//                                             CASES: ZCase[n] (capture_edges.py ZCASE); POOL: uint32[];
//                                             OUT: uint32 [n][128][4] raw D registers (unused slots 0xFFFFFFFF)
//
// Build: nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o .bins/capture_edges scripts/capture/capture_edges.cu
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>
#include <cuda_runtime.h>

typedef void (*AluKernel)(const unsigned long long*, unsigned long long*, int);

#include "capture_edges.inc"

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

constexpr int REGS = 4;  // D registers stored per thread (N = 8: 4 for f32, 2 for f16)

struct ZCase {  // 40 bytes, matches capture_edges.py ZCASE
  int32_t inst, scale_d;
  uint32_t meta;
  int32_t a_off, a_len, b_off, b_len, c_off, c_len, pad;
};

__device__ __forceinline__ uint64_t desc_of(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return ((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>((lbo & 0x3FFFF) >> 4) << 16) |
         (static_cast<uint64_t>((sbo & 0x3FFFF) >> 4) << 32);
}

// rows x cols elements of BITS bits, K-major without swizzle: 8-row core-matrix groups SBO apart, 16-byte K chunks
// LBO = 128 apart (SBO = cols * EB / 16 * 128).
template <int BITS>
__device__ void fill_operand(uint8_t* base, int rows, int cols, const uint32_t* pool, int off, int len) {
  constexpr int EB = BITS / 8;
  const int sbo = cols * EB / 16 * 128;
  for (int idx = threadIdx.x; idx < rows * cols; idx += blockDim.x) {
    const int r = idx / cols, k = idx % cols, kb = k * EB;
    const uint32_t v = pool[off + idx % len];
    uint8_t* p = base + (r / 8) * sbo + (r % 8) * 16 + (kb / 16) * 128 + kb % 16;
    for (int b = 0; b < EB; ++b) p[b] = (v >> (8 * b)) & 0xFF;
  }
}

template <int SPARSE, int BITS, int K, int NR, typename ACC,
          void (*MMA)(ACC (&)[NR], uint64_t, uint64_t, uint32_t, int)>
__global__ void __launch_bounds__(128, 1) zs_probe(const ZCase* cases, const int* ids, const uint32_t* pool,
                                                   uint32_t* out) {
  __shared__ __align__(1024) uint8_t sm[4096 + 1024];
  constexpr int KA = SPARSE ? K / 2 : K;  // stored elements per row of A
  constexpr int EB = BITS / 8;
  const int id = ids[blockIdx.x];
  const ZCase cs = cases[id];
  const int t = threadIdx.x, w = t / 32, l = t % 32;
  fill_operand<BITS>(sm, 64, KA, pool, cs.a_off, cs.a_len);
  fill_operand<BITS>(sm + 4096, 8, K, pool, cs.b_off, cs.b_len);
  ACC d[NR];
  constexpr int per = std::is_same<ACC, float>::value ? 1 : 2;  // f16 D: two elements per register
  for (int j = 0; j < NR; ++j) {  // C into the D fragment (PTX Figure 149 numbering; f16 packs 2j, 2j + 1)
    uint32_t word = 0;
    for (int h = 0; h < per; ++h) {
      const int i = j * per + h;
      const int row = 16 * w + l / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + (l % 4) * 2 + (i % 2);
      const uint32_t c = pool[cs.c_off + (row * 8 + col) % cs.c_len];
      word |= (per == 2 ? (c & 0xFFFF) : c) << (16 * h);
    }
    if constexpr (std::is_same<ACC, float>::value) d[j] = __uint_as_float(word);
    else d[j] = word;
  }
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(sm));
  const uint64_t da = desc_of(base, 128, KA * EB / 16 * 128);
  const uint64_t db = desc_of(base + 4096, 128, K * EB / 16 * 128);
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  MMA(d, da, db, cs.meta, cs.scale_d);
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  uint32_t* o = out + (static_cast<size_t>(id) * 128 + t) * REGS;
  for (int j = 0; j < NR; ++j) {
    if constexpr (std::is_same<ACC, float>::value) o[j] = __float_as_uint(d[j]);
    else o[j] = d[j];
  }
}

template <typename T> static std::vector<T> read_file(const char* path, size_t skip = 0) {
  FILE* f = fopen(path, "rb");
  if (!f) { perror(path); exit(1); }
  fseek(f, 0, SEEK_END);
  const long bytes = ftell(f) - static_cast<long>(skip);
  fseek(f, static_cast<long>(skip), SEEK_SET);
  std::vector<T> v(bytes / sizeof(T));
  if (fread(v.data(), sizeof(T), v.size(), f) != v.size()) { fprintf(stderr, "short read %s\n", path); exit(1); }
  fclose(f);
  return v;
}

static void write_file(const char* path, const void* data, size_t bytes) {
  FILE* o = fopen(path, "wb");
  if (!o || fwrite(data, 1, bytes, o) != bytes) { perror(path); exit(1); }
  fclose(o);
}

static int run_alu(const char* in, const char* outp) {
  FILE* f = fopen(in, "rb");
  if (!f) { perror(in); return 1; }
  long long n = 0;
  if (fread(&n, 8, 1, f) != 1 || n <= 0) { fprintf(stderr, "bad header\n"); return 1; }
  std::vector<int> op(n);
  std::vector<unsigned long long> slots(4 * n), out(2 * n, 0xDEADBEEFDEADBEEFull);
  if (fread(op.data(), 4, n, f) != (size_t)n || fread(slots.data(), 8, 4 * n, f) != (size_t)(4 * n)) {
    fprintf(stderr, "short input\n"); return 1;
  }
  fclose(f);
  unsigned long long *din, *dout;
  CK(cudaMalloc(&din, 8 * 4 * n));
  CK(cudaMalloc(&dout, 8 * 2 * n));
  CK(cudaMemcpy(din, slots.data(), 8 * 4 * n, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dout, out.data(), 8 * 2 * n, cudaMemcpyHostToDevice));
  long long start = 0;
  while (start < n) {  // cases of one form are contiguous
    long long end = start;
    while (end < n && op[end] == op[start]) ++end;
    const int k = op[start];
    if (k < 0 || k >= ALU_NFORMS) { fprintf(stderr, "bad op %d\n", k); return 1; }
    const int cnt = (int)(end - start);
    ALU_KERNELS[k]<<<(cnt + 255) / 256, 256>>>(din + 4 * start, dout + 2 * start, cnt);
    CK(cudaGetLastError());
    start = end;
  }
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(out.data(), dout, 8 * 2 * n, cudaMemcpyDeviceToHost));
  write_file(outp, out.data(), 8 * 2 * n);
  printf("alu: %lld cases, %d forms\n", n, ALU_NFORMS);
  return 0;
}

static int run_wgmma(const char* casef, const char* poolf, const char* outp) {
  const std::vector<ZCase> cases = read_file<ZCase>(casef);
  const std::vector<uint32_t> pool = read_file<uint32_t>(poolf);
  const int n = static_cast<int>(cases.size());
  for (const ZCase& c : cases)
    if (c.inst < 0 || c.inst >= ZS_COUNT || c.a_len <= 0 || c.b_len <= 0 || c.c_len <= 0 ||
        static_cast<size_t>(c.a_off + c.a_len) > pool.size() || static_cast<size_t>(c.b_off + c.b_len) > pool.size() ||
        static_cast<size_t>(c.c_off + c.c_len) > pool.size()) { fprintf(stderr, "bad case record\n"); return 1; }
  ZCase* dcases; uint32_t *dpool, *dout; int* dids;
  const size_t elems = static_cast<size_t>(n) * 128 * REGS;
  CK(cudaMalloc(&dcases, n * sizeof(ZCase)));
  CK(cudaMalloc(&dpool, pool.size() * 4));
  CK(cudaMalloc(&dout, elems * 4));
  CK(cudaMalloc(&dids, n * sizeof(int)));
  CK(cudaMemcpy(dcases, cases.data(), n * sizeof(ZCase), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dpool, pool.data(), pool.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(dout, 0xFF, elems * 4));
  int launched = 0;
  for (int inst = 0; inst < ZS_COUNT; ++inst) {
    std::vector<int> ids;
    for (int j = 0; j < n; ++j) if (cases[j].inst == inst) ids.push_back(j);
    if (ids.empty()) continue;
    CK(cudaMemcpy(dids, ids.data(), ids.size() * sizeof(int), cudaMemcpyHostToDevice));
#define LAUNCH(SP, BITS, KK, NRR, ACC, FN) { \
        zs_probe<SP, BITS, KK, NRR, ACC, FN><<<static_cast<int>(ids.size()), 128>>>(dcases, dids, dpool, dout); \
        CK(cudaGetLastError()); CK(cudaDeviceSynchronize()); }
    ZS_DISPATCH(inst, LAUNCH)
#undef LAUNCH
    launched += static_cast<int>(ids.size());
  }
  if (launched != n) { fprintf(stderr, "only %d of %d cases had an instantiation\n", launched, n); return 1; }
  std::vector<uint32_t> host(elems);
  CK(cudaMemcpy(host.data(), dout, elems * 4, cudaMemcpyDeviceToHost));
  write_file(outp, host.data(), elems * 4);
  printf("wgmma: %d cases, %d instantiations\n", n, ZS_COUNT);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 2 && !strcmp(argv[1], "--list")) {
    for (int k = 0; k < ALU_NFORMS; ++k) printf("%s\n", ALU_NAMES[k]);
    return 0;
  }
  if (argc == 2 && !strcmp(argv[1], "--wgmma-list")) {
    for (int k = 0; k < ZS_COUNT; ++k) printf("%s\n", ZS_NAMES[k]);
    return 0;
  }
  if (argc == 4 && !strcmp(argv[1], "alu")) return run_alu(argv[2], argv[3]);
  if (argc == 5 && !strcmp(argv[1], "wgmma")) return run_wgmma(argv[2], argv[3], argv[4]);
  fprintf(stderr, "usage: %s --list | --wgmma-list | alu IN OUT | wgmma CASES POOL OUT\n", argv[0]);
  return 2;
}
