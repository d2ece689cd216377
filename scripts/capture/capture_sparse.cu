// Hardware capture of sparse wgmma (wgmma.mma_async.sp, sm_90a). Driven by scripts/capture/capture_sparse.py.
//
// Three probe families, one per binary (-DSP_FAMILY_ADDR / _META / _NUM; none of them: all three):
//
// addr  Which shared-memory bytes (or register elements) feed which element. As capture_addresses.cu: every
//       dynamic shared-memory slot holds a code of its own index (slot = address / element size), in three
//       passes of 8-bit digits, except a 4 KiB selector tile at the top (K-major, no swizzle). The metadata
//       register is the same valid nibble in every thread and chunk, so its layout does not matter here.
//         role 0, probe A: nibbles 0x4 (2:4: positions 0, 1; tf32: element 0); B = one-hot B[n][k] = (k == n),
//                 N = K (LBO 128, SBO 512), so D[m][n] = logical A[m][n]: the stored element (m, 2c + j) at
//                 column 4c + j (tf32: stored c at 2c), zero elsewhere.
//         role 1, probe B: two runs, nibbles 0x4 then 0xE (positions 2, 3; tf32: element 1), summed: A = a
//                 selector whose row m holds a 1 at logical column m % K (stored 32 bytes per row, LBO 128,
//                 SBO 256), so D[m][n] = B[n][m % K].
//         role 2, A from registers: element e of register i of thread t holds the digits of
//                 (t * 4 + i) * per + e; B one-hot as role 0, so D shows which register element feeds which
//                 stored position.
// meta  Where the metadata bits sit and what invalid metadata does. Stored A (row m, s) = 1 for even s, 2 for
//       odd s (tf32: 1.0); B one-hot with N = K; the 128 metadata registers come from the case table.
//       D[m][n] = the sum of the stored elements whose index lands on logical column n.
// num   Numerics: seeded random operands (scripts/capture/sparse_gen.h, mirrored by tcemu/traces/sparse_seeds.py), stored A
//       64 x K/2 and B N x K in shared memory without swizzle (K-major: A LBO 128 SBO 256, B LBO 128 SBO 512;
//       MN-major: SBO 128, LBO rows/8 * 128), or A in registers; metadata per thread from the case's class.
//
// Build (each family alone compiles faster; run the three in parallel):
//   nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -DSP_FAMILY_ADDR -o sp_addr scripts/capture/capture_sparse.cu
// Usage: sp_addr --base | sp_addr CASES.bin OUT.bin ; sp_meta CASES.bin META.bin OUT.bin ; sp_num CASES.bin OUT.bin
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "sparse_gen.h"
#include "wgmma_sparse_wrappers.inc"

#if !defined(SP_FAMILY_ADDR) && !defined(SP_FAMILY_META) && !defined(SP_FAMILY_NUM)
#define SP_FAMILY_ADDR
#define SP_FAMILY_META
#define SP_FAMILY_NUM
#endif

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #x, __FILE__, __LINE__, cudaGetErrorString(e_)); exit(2); } } while (0)

constexpr int SMEM_BYTES = 227 * 1024;  // max dynamic shared memory per block on sm90
constexpr int SEL_BYTES = 4096;         // selector tile at the top of the window (address probe)
constexpr int REGS = 128;               // output stride per thread

extern __shared__ __align__(1024) uint8_t smem[];

__device__ __forceinline__ uint32_t smem_base() { return static_cast<uint32_t>(__cvta_generic_to_shared(smem)); }

__device__ __forceinline__ uint64_t desc_of(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return ((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>((lbo & 0x3FFFF) >> 4) << 16) |
         (static_cast<uint64_t>((sbo & 0x3FFFF) >> 4) << 32);
}

// Kind -> element format (sparse_gen.h numbering) of A, B, C and the element bits; mirror of KINDS.
struct SpKind { int fa, fb, fc, bits; };
__device__ __constant__ SpKind SPK[20] = {
  {1, 1, 0, 32}, {2, 2, 0, 16}, {2, 2, 2, 16}, {3, 3, 0, 16},
  {4, 4, 0, 8}, {4, 5, 0, 8}, {5, 4, 0, 8}, {5, 5, 0, 8}, {4, 4, 2, 8}, {4, 5, 2, 8}, {5, 4, 2, 8}, {5, 5, 2, 8},
  {6, 6, 8, 8}, {6, 7, 8, 8}, {7, 6, 8, 8}, {7, 7, 8, 8}, {6, 6, 8, 8}, {6, 7, 8, 8}, {7, 6, 8, 8}, {7, 7, 8, 8}};

template <int KIND> struct KindInfo {
  static constexpr int BITS = KIND == 0 ? 32 : KIND <= 3 ? 16 : 8;
  static constexpr int EB = BITS / 8;
  static constexpr int K = KIND == 0 ? 16 : KIND <= 3 ? 32 : 64;  // logical K
  static constexpr int CHUNK = KIND == 0 ? 2 : 4;
  static constexpr int PER = 32 / BITS;                           // elements per A register
};

// The value v (a small integer) as one element of the kind's A/B type.
template <int KIND> __device__ __forceinline__ uint32_t encode(uint32_t v) {
  if (KIND == 0) return __float_as_uint(static_cast<float>(v));
  if (KIND == 1 || KIND == 2) return __half_as_ushort(__uint2half_rn(v));
  if (KIND == 3) return __bfloat16_as_ushort(__uint2bfloat16_rn(v));
  if (KIND >= 4 && KIND <= 11) {  // fp8 e4m3 (A and B of the probe kinds are e4m3): v in {0, 1, 2, 3}
    __nv_fp8_e4m3 x(static_cast<float>(v));
    return static_cast<uint32_t>(x.__x);
  }
  return v;
}

// Logical column of stored element s under a uniform nibble (0x4 or 0xE).
template <int KIND> __device__ __forceinline__ int logical_col(int s, uint32_t nib) {
  if (KindInfo<KIND>::CHUNK == 2) return 2 * s + (nib == 0xE ? 1 : 0);
  return 4 * (s / 2) + (nib == 0xE ? 2 : 0) + (s % 2);
}

template <typename ACC, int NR, void (*MMA)(ACC (&)[NR], uint64_t, uint64_t, const uint32_t (&)[4], uint32_t, int)>
__device__ __forceinline__ void issue(ACC (&d)[NR], uint64_t da, uint64_t db, const uint32_t (&a)[4], uint32_t e,
                                      int scale_d) {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  MMA(d, da, db, a, e, scale_d);
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  __syncthreads();
}

template <typename ACC> __device__ __forceinline__ uint32_t raw_bits(ACC x) {
  if constexpr (std::is_same<ACC, float>::value) return __float_as_uint(x);
  else return static_cast<uint32_t>(x);
}

// ------------------------------------------------------------------------------------------------ addr

struct ACase {  // 32 bytes, matches capture_sparse.py ADDR_CASE
  uint64_t desc_a, desc_b;
  int32_t inst, role, n, pad;
};

// Fill the window with slot codes (digit `pass`) and the selector tile for `role` / `nib` at the top.
template <int KIND> __device__ void addr_fill(int pass, int role, uint32_t nib) {
  using KI = KindInfo<KIND>;
  constexpr int EB = KI::EB, T = 16 / EB, K = KI::K;
  const uint32_t base = smem_base();
  for (int off = threadIdx.x * 16; off < SMEM_BYTES; off += blockDim.x * 16) {
    uint8_t bytes[16];
    const int sel = off - (SMEM_BYTES - SEL_BYTES);
    for (int e = 0; e < T; ++e) {
      uint32_t v;
      if (sel >= 0 && role == 1) {  // A selector: 64 x K/2 stored, K-major no swizzle, LBO 128, SBO 256
        const int row = 8 * (sel / 256) + (sel % 128) / 16;
        const int s = ((sel % 256) / 128) * T + e;
        v = (sel < 2048 && logical_col<KIND>(s, nib) == row % K) ? 1u : 0u;
      } else if (sel >= 0) {        // B one-hot: N = K rows x K, K-major no swizzle, LBO 128, SBO 512
        const int row = 8 * (sel / 512) + (sel % 128) / 16;
        const int k = ((sel % 512) / 128) * T + e;
        v = (row < K && k == row) ? 1u : 0u;
      } else {
        const uint32_t slot = (base + off + e * EB) / EB;
        v = (slot >> (8 * pass)) & 0xFFu;
      }
      const uint32_t x = encode<KIND>(v);
      for (int b = 0; b < EB; ++b) bytes[e * EB + b] = (x >> (8 * b)) & 0xFF;
    }
    *reinterpret_cast<uint4*>(smem + off) = *reinterpret_cast<uint4*>(bytes);
  }
}

template <int KIND, int N, int REGA, int TA, int TB, int NR, typename ACC,
          void (*MMA)(ACC (&)[NR], uint64_t, uint64_t, const uint32_t (&)[4], uint32_t, int)>
__global__ void __launch_bounds__(128, 1) addr_probe(const ACase* cases, const int* ids, int count, int32_t* out) {
  using KI = KindInfo<KIND>;
  const uint32_t sel_base = smem_base() + SMEM_BYTES - SEL_BYTES;
  const int t = threadIdx.x;
  for (int c = blockIdx.x; c < count; c += gridDim.x) {
    const int id = ids[c];
    const ACase cs = cases[id];
    int32_t acc[NR];
    for (int i = 0; i < NR; ++i) acc[i] = 0;
    const int runs = cs.role == 1 ? 2 : 1;
    for (int run = 0; run < runs; ++run) {
      const uint32_t nib = run == 0 ? 0x4u : 0xEu;
      const uint32_t e = nib * 0x11111111u;
      for (int pass = 0; pass < 3; ++pass) {
        addr_fill<KIND>(pass, cs.role, nib);
        uint32_t a[4] = {0, 0, 0, 0};
        if (REGA) {
          for (int i = 0; i < 4; ++i)
            for (int el = 0; el < KI::PER; ++el) {
              const uint32_t id_ = static_cast<uint32_t>((t * 4 + i) * KI::PER + el);
              const uint32_t x = encode<KIND>((id_ >> (8 * pass)) & 0xFFu);
              a[i] |= KI::BITS == 32 ? x : (x & ((1u << KI::BITS) - 1)) << (KI::BITS * el);
            }
        }
        // role 0 / 2: B is the one-hot tile; role 1: A is the selector tile
        const uint64_t db = cs.role == 1 ? cs.desc_b : desc_of(sel_base, 128, 512);
        const uint64_t da = cs.role == 1 ? desc_of(sel_base, 128, 256) : cs.desc_a;
        ACC d[NR];
        for (int i = 0; i < NR; ++i) d[i] = 0;
        issue<ACC, NR, MMA>(d, da, db, a, e, 0);
        for (int i = 0; i < NR; ++i) acc[i] += static_cast<int32_t>(d[i]) << (8 * pass);
      }
    }
    int32_t* o = out + (static_cast<size_t>(id) * 128 + t) * REGS;
    for (int i = 0; i < NR; ++i) o[i] = acc[i];
  }
}

__global__ void base_kernel(uint32_t* out) { *out = smem_base(); }

// ------------------------------------------------------------------------------------------------ meta

struct MCase {  // 16 bytes, matches capture_sparse.py META_CASE
  int32_t inst, cls, walk, pad;
};

template <int KIND, int N, int REGA, int TA, int TB, int NR, typename ACC,
          void (*MMA)(ACC (&)[NR], uint64_t, uint64_t, const uint32_t (&)[4], uint32_t, int)>
__global__ void __launch_bounds__(128, 1) meta_probe(const MCase* cases, const uint32_t* metas, const int* ids,
                                                     int count, uint32_t* out) {
  using KI = KindInfo<KIND>;
  constexpr int EB = KI::EB, T = 16 / EB, K = KI::K;
  const uint32_t base = smem_base();
  const int t = threadIdx.x;
  // stored A at +0 (64 x K/2, LBO 128, SBO 256); B one-hot at +4096 (K x K, LBO 128, SBO 512)
  for (int off = t * 16; off < 4096 + 8 * 512; off += 128 * 16) {
    uint8_t bytes[16];
    for (int e = 0; e < T; ++e) {
      uint32_t x;
      if (off < 4096) {
        const int s = ((off % 256) / 128) * T + e;
        x = off < 2048 ? encode<KIND>(KI::CHUNK == 2 ? 1u : 1u + (s & 1)) : 0u;
      } else {
        const int o = off - 4096, row = 8 * (o / 512) + (o % 128) / 16, k = ((o % 512) / 128) * T + e;
        x = encode<KIND>(row < K && k == row ? 1u : 0u);
      }
      for (int b = 0; b < EB; ++b) bytes[e * EB + b] = (x >> (8 * b)) & 0xFF;
    }
    *reinterpret_cast<uint4*>(smem + off) = *reinterpret_cast<uint4*>(bytes);
  }
  uint32_t a[4] = {0, 0, 0, 0};
  if (REGA) {  // register element e: stored column of parity e % 2 (dense fragment of the stored matrix)
    for (int i = 0; i < 4; ++i)
      for (int el = 0; el < KI::PER; ++el) {
        const uint32_t x = encode<KIND>(KI::CHUNK == 2 ? 1u : 1u + (el & 1));
        a[i] |= KI::BITS == 32 ? x : (x & ((1u << KI::BITS) - 1)) << (KI::BITS * el);
      }
  }
  for (int c = blockIdx.x; c < count; c += gridDim.x) {
    const int id = ids[c];
    ACC d[NR];
    for (int i = 0; i < NR; ++i) d[i] = 0;
    issue<ACC, NR, MMA>(d, desc_of(base, 128, 256), desc_of(base + 4096, 128, 512), a,
                        metas[static_cast<size_t>(id) * 128 + t], 0);
    uint32_t* o = out + (static_cast<size_t>(id) * 128 + t) * REGS;
    for (int i = 0; i < NR; ++i) o[i] = raw_bits(d[i]);
  }
}

// ------------------------------------------------------------------------------------------------ num

struct NCase {  // 24 bytes, matches capture_sparse.py NUM_CASE
  uint64_t seed;
  int32_t inst, steps, scale_d, cls;
};

// Stored A (b_operand false: rows 64, K/2 per row) or B (rows N, K per row) into shared memory at `off`.
template <int BITS>
__device__ void fill_sparse_operand(int off, int rows, int K, bool b_operand, bool mn_major, uint64_t seed, int step,
                                    int fmt, const SpParams& p) {
  constexpr int EB = BITS / 8;
  const int per_row = b_operand ? K : K / 2;
  for (int idx = threadIdx.x; idx < rows * per_row; idx += blockDim.x) {
    const int r = idx / per_row, k = idx % per_row;
    const uint32_t v = b_operand ? sp_b(seed, step, r, k, K, fmt, p) : sp_stored_a(seed, step, r, k, K, fmt, p);
    int addr;
    if (!mn_major) {  // K-major, no swizzle: LBO 128, SBO = per_row*EB/16 * 128 (A: 256, B: 512)
      const int kb = k * EB;
      addr = (r / 8) * (per_row * EB / 16) * 128 + (r % 8) * 16 + (kb / 16) * 128 + kb % 16;
    } else {          // MN-major, no swizzle (16-bit): SBO 128, LBO rows/8 * 128
      addr = (r / 8) * 128 + (k % 8) * 16 + (k / 8) * (rows / 8) * 128 + (r % 8) * 2;
    }
    for (int b = 0; b < EB; ++b) smem[off + addr + b] = (v >> (8 * b)) & 0xFF;
  }
}

constexpr int A_OFF = 0, B_OFF = 4096, NUM_SMEM = 4096 + 256 * 64;

template <int KIND, int N, int REGA, int TA, int TB, int NR, typename ACC,
          void (*MMA)(ACC (&)[NR], uint64_t, uint64_t, const uint32_t (&)[4], uint32_t, int)>
__global__ void __launch_bounds__(128, 1) num_probe(const NCase* cases, const int* ids, int count, uint32_t* out) {
  using KI = KindInfo<KIND>;
  constexpr int K = KI::K;
  const int t = threadIdx.x, w = t / 32, l = t % 32;
  const uint32_t base = smem_base();
  for (int c = blockIdx.x; c < count; c += gridDim.x) {
    const int id = ids[c];
    const NCase cs = cases[id];
    const SpKind kf = SPK[KIND];
    const SpParams p = sp_case_params(cs.seed, kf.fa, kf.fb, kf.fc);
    ACC d[NR];
    for (int j = 0; j < NR; ++j) {  // C into the D fragment (as capture_numerics.cu)
      uint32_t word = 0;
      const int per = (kf.fc == 2) ? 2 : 1;
      for (int h = 0; h < per; ++h) {
        const int i = j * per + h;
        const int row = 16 * w + l / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + (l % 4) * 2 + (i % 2);
        word |= sp_c(cs.seed, row, col, N, kf.fc, p) << (16 * h);
      }
      if constexpr (std::is_same<ACC, float>::value) d[j] = __uint_as_float(word);
      else d[j] = static_cast<ACC>(word);
    }
    for (int s = 0; s < cs.steps; ++s) {
      uint32_t a[4] = {0, 0, 0, 0};
      if (REGA) {
        for (int i = 0; i < 4; ++i) a[i] = sp_rega(cs.seed, s, t, i, KI::BITS, kf.fa, p);
      } else {
        fill_sparse_operand<KI::BITS>(A_OFF, 64, K, false, TA, cs.seed, s, kf.fa, p);
      }
      fill_sparse_operand<KI::BITS>(B_OFF, N, K, true, TB, cs.seed, s, kf.fb, p);
      const uint32_t e = sp_meta_register(cs.seed, s, t, cs.cls, KI::CHUNK);
      const uint64_t da = TA ? desc_of(base + A_OFF, 8 * 128, 128) : desc_of(base + A_OFF, 128, 256);
      const uint64_t db = TB ? desc_of(base + B_OFF, (N / 8) * 128, 128) : desc_of(base + B_OFF, 128, 512);
      issue<ACC, NR, MMA>(d, da, db, a, e, (s > 0 || cs.scale_d) ? 1 : 0);
    }
    uint32_t* o = out + (static_cast<size_t>(id) * 128 + t) * REGS;
    for (int j = 0; j < NR; ++j) o[j] = raw_bits(d[j]);
  }
}

// ------------------------------------------------------------------------------------------------ host

template <typename T> static std::vector<T> read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) { perror(path); exit(1); }
  fseek(f, 0, SEEK_END); const long bytes = ftell(f); fseek(f, 0, SEEK_SET);
  std::vector<T> v(bytes / sizeof(T));
  if (fread(v.data(), sizeof(T), v.size(), f) != v.size()) { fprintf(stderr, "short read %s\n", path); exit(1); }
  fclose(f);
  return v;
}

static void write_file(const char* path, const void* data, size_t bytes) {
  FILE* o = fopen(path, "wb");
  if (!o) { perror(path); exit(1); }
  fwrite(data, 1, bytes, o);
  fclose(o);
}

template <typename Case> static std::vector<int> ids_of(const std::vector<Case>& cases, int inst) {
  std::vector<int> ids;
  for (int j = 0; j < static_cast<int>(cases.size()); ++j) if (cases[j].inst == inst) ids.push_back(j);
  return ids;
}

#define LAUNCH_WITH(KERNEL, SMEM, ...) { \
      CK(cudaFuncSetAttribute(KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM)); \
      KERNEL<<<132, 128, SMEM>>>(__VA_ARGS__); \
      CK(cudaGetLastError()); CK(cudaDeviceSynchronize()); }

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
  int* dids;
  CK(cudaMalloc(&dids, 1 << 20));
  int launched = 0;
#if defined(SP_FAMILY_ADDR)
  if (argc == 4 && !strcmp(argv[1], "addr")) {
    const std::vector<ACase> cases = read_file<ACase>(argv[2]);
    const int n = static_cast<int>(cases.size());
    ACase* dcases; int32_t* dout;
    const size_t elems = static_cast<size_t>(n) * 128 * REGS;
    CK(cudaMalloc(&dcases, n * sizeof(ACase)));
    CK(cudaMalloc(&dout, elems * 4));
    CK(cudaMemcpy(dcases, cases.data(), n * sizeof(ACase), cudaMemcpyHostToDevice));
    CK(cudaMemset(dout, 0xFF, elems * 4));
    for (int inst = 0; inst < ADDR_DISPATCH_COUNT; ++inst) {
      const std::vector<int> ids = ids_of(cases, inst);
      if (ids.empty()) continue;
      CK(cudaMemcpy(dids, ids.data(), ids.size() * sizeof(int), cudaMemcpyHostToDevice));
#define LAUNCH(KD, NN, RA, TA_, TB_, NRR, ACC, FN) { auto kern = addr_probe<KD, NN, RA, TA_, TB_, NRR, ACC, FN>; \
        LAUNCH_WITH(kern, SMEM_BYTES, dcases, dids, static_cast<int>(ids.size()), dout) }
      ADDR_DISPATCH(inst, LAUNCH)
#undef LAUNCH
      launched += static_cast<int>(ids.size());
    }
    if (launched != n) { fprintf(stderr, "only %d of %d cases had an instantiation\n", launched, n); return 1; }
    std::vector<int32_t> host(elems);
    CK(cudaMemcpy(host.data(), dout, elems * 4, cudaMemcpyDeviceToHost));
    write_file(argv[3], host.data(), elems * 4);
    printf("addr: ran %d cases\n", launched);
    return 0;
  }
#endif
#if defined(SP_FAMILY_META)
  if (argc == 5 && !strcmp(argv[1], "meta")) {
    const std::vector<MCase> cases = read_file<MCase>(argv[2]);
    const std::vector<uint32_t> metas = read_file<uint32_t>(argv[3]);
    const int n = static_cast<int>(cases.size());
    if (metas.size() != static_cast<size_t>(n) * 128) { fprintf(stderr, "metadata table size mismatch\n"); return 1; }
    MCase* dcases; uint32_t *dmeta, *dout;
    const size_t elems = static_cast<size_t>(n) * 128 * REGS;
    CK(cudaMalloc(&dcases, n * sizeof(MCase)));
    CK(cudaMalloc(&dmeta, metas.size() * 4));
    CK(cudaMalloc(&dout, elems * 4));
    CK(cudaMemcpy(dcases, cases.data(), n * sizeof(MCase), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dmeta, metas.data(), metas.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(dout, 0xFF, elems * 4));
    for (int inst = 0; inst < META_DISPATCH_COUNT; ++inst) {
      const std::vector<int> ids = ids_of(cases, inst);
      if (ids.empty()) continue;
      CK(cudaMemcpy(dids, ids.data(), ids.size() * sizeof(int), cudaMemcpyHostToDevice));
#define LAUNCH(KD, NN, RA, TA_, TB_, NRR, ACC, FN) { auto kern = meta_probe<KD, NN, RA, TA_, TB_, NRR, ACC, FN>; \
        LAUNCH_WITH(kern, 8192, dcases, dmeta, dids, static_cast<int>(ids.size()), dout) }
      META_DISPATCH(inst, LAUNCH)
#undef LAUNCH
      launched += static_cast<int>(ids.size());
    }
    if (launched != n) { fprintf(stderr, "only %d of %d cases had an instantiation\n", launched, n); return 1; }
    std::vector<uint32_t> host(elems);
    CK(cudaMemcpy(host.data(), dout, elems * 4, cudaMemcpyDeviceToHost));
    write_file(argv[4], host.data(), elems * 4);
    printf("meta: ran %d cases\n", launched);
    return 0;
  }
#endif
#if defined(SP_FAMILY_NUM)
  if (argc == 4 && !strcmp(argv[1], "num")) {
    const std::vector<NCase> cases = read_file<NCase>(argv[2]);
    const int n = static_cast<int>(cases.size());
    NCase* dcases; uint32_t* dout;
    const size_t elems = static_cast<size_t>(n) * 128 * REGS;
    CK(cudaMalloc(&dcases, n * sizeof(NCase)));
    CK(cudaMalloc(&dout, elems * 4));
    CK(cudaMemcpy(dcases, cases.data(), n * sizeof(NCase), cudaMemcpyHostToDevice));
    CK(cudaMemset(dout, 0xFF, elems * 4));
    for (int inst = 0; inst < NUM_DISPATCH_COUNT; ++inst) {
      const std::vector<int> ids = ids_of(cases, inst);
      if (ids.empty()) continue;
      CK(cudaMemcpy(dids, ids.data(), ids.size() * sizeof(int), cudaMemcpyHostToDevice));
#define LAUNCH(KD, NN, RA, TA_, TB_, NRR, ACC, FN) { auto kern = num_probe<KD, NN, RA, TA_, TB_, NRR, ACC, FN>; \
        LAUNCH_WITH(kern, NUM_SMEM, dcases, dids, static_cast<int>(ids.size()), dout) }
      NUM_DISPATCH(inst, LAUNCH)
#undef LAUNCH
      launched += static_cast<int>(ids.size());
    }
    if (launched != n) { fprintf(stderr, "only %d of %d cases had an instantiation\n", launched, n); return 1; }
    std::vector<uint32_t> host(elems);
    CK(cudaMemcpy(host.data(), dout, elems * 4, cudaMemcpyDeviceToHost));
    write_file(argv[3], host.data(), elems * 4);
    printf("num: ran %d cases\n", launched);
    return 0;
  }
#endif
  fprintf(stderr, "usage: %s --base | addr CASES OUT | meta CASES METAS OUT | num CASES OUT\n", argv[0]);
  return 1;
}
