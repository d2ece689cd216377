// Hardware capture of wgmma numerics (sm_90a). Driven by scripts/capture_numerics.py.
//
// Each case is one CTA (one warpgroup). Inputs come from a counter-based generator that tcemu
// reimplements exactly (tcemu/seeds.py): rnd(seed, stream, index) = mix64(seed ^ mix64(stream<<32 | index)),
// mix64 = splitmix64's finaliser. A (64 x K) and B (N x K) are written to shared memory K-major
// without swizzle (LBO 128, SBO 256), or MN-major without swizzle (SBO 128, LBO rows/8*128) for the
// transposed forms; register-A forms take raw generated registers. C is generated per (row, col)
// into the D fragment. Each step regenerates A and B and issues one wgmma on the same accumulators
// (scale-d = case flag for step 0, 1 after). The raw D registers of every thread are written out.
//
// Build: nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o numerics scripts/capture_numerics.cu
// Usage: numerics CASES.bin OUT.bin   (formats: see capture_numerics.py)
#include <cuda.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include "wgmma_numerics_wrappers.inc"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #x, __FILE__, __LINE__, cudaGetErrorString(e)); exit(2); } } while (0)

constexpr int REGS = 128;           // output stride per thread
constexpr int A_OFF = 0, B_OFF = 4096, SMEM = 4096 + 256 * 32;

struct NCase {  // 24 bytes, little-endian, matches capture_numerics.py CASE_DTYPE
  uint64_t seed;
  int32_t inst, steps, scale_d, pad;
};

// ---- the generator (mirror: tcemu/seeds.py) ----
__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
__device__ __forceinline__ uint64_t rnd(uint64_t seed, uint32_t stream, uint32_t index) {
  return mix64(seed ^ mix64((static_cast<uint64_t>(stream) << 32) | index));
}

// Formats: 0 f32, 1 tf32, 2 f16, 3 bf16, 4 e4m3, 5 e5m2, 6 s8, 7 u8, 8 s32, 9 b1 (byte)
struct Fmt { int E, M, bias, fn; };
__device__ __constant__ Fmt FMTS[6] = {{8, 23, 127, 0}, {8, 10, 127, 0}, {5, 10, 15, 0}, {8, 7, 127, 0},
                                       {4, 3, 7, 1}, {5, 2, 15, 0}};
__device__ __forceinline__ int max_normal_field(const Fmt& f) { return f.fn ? (1 << f.E) - 1 : (1 << f.E) - 2; }

struct Params { int mode, specials, ca, cb, cc; };
// mode: 0 raw bits, 1 narrow (+-1), 2 medium (+-4), 3 wide (whole range), 4 wide + 1/4 zeros, 5 medium + 1/4 zeros
__device__ __forceinline__ int mode_width(int mode, int E) {
  return (mode == 1) ? 1 : (mode == 2 || mode == 5) ? 4 : (1 << E);
}

__device__ uint32_t special_bits(const Fmt& f, int sel, uint32_t sign) {
  const uint32_t s = sign << (f.E + f.M), emask = (1u << f.E) - 1, mmask = (1u << f.M) - 1;
  switch (sel) {
    case 0: return 0;
    case 1: return 1u << (f.E + f.M);
    case 2: return f.fn ? (s | (emask << f.M) | mmask) : (s | (emask << f.M));             // inf (FN: NaN)
    case 3: return f.fn ? (s | (emask << f.M) | mmask) : (s | (emask << f.M) | (1u << (f.M - 1)));  // NaN
    case 4: return s | 1u;                                                                  // min subnormal
    case 5: return s | mmask;                                                               // max subnormal
    case 6: return f.fn ? (s | (emask << f.M) | (mmask - 1)) : (s | ((emask - 1) << f.M) | mmask);  // max finite
    default: return s | (1u << f.M);                                                        // min normal
  }
}

__device__ uint32_t gen_float(uint64_t r, int fmt, int center, const Params& p) {
  const Fmt f = FMTS[fmt];
  const int nb = 1 + f.E + f.M;
  uint32_t bits;
  if (p.mode == 0) {
    bits = static_cast<uint32_t>(r & ((1ull << nb) - 1));
  } else if (p.specials && (r >> 60) == 0) {
    bits = special_bits(f, static_cast<int>((r >> 52) & 7), static_cast<uint32_t>((r >> 51) & 1));
  } else if (p.mode >= 4 && ((r >> 58) & 3) == 0) {
    bits = static_cast<uint32_t>(r & 1) << (f.E + f.M);
  } else {
    const int w = mode_width(p.mode, f.E);
    int field = center + static_cast<int>((r >> 24) % static_cast<uint64_t>(2 * w + 1)) - w;
    field = field < 0 ? 0 : (field > max_normal_field(f) ? max_normal_field(f) : field);
    bits = (static_cast<uint32_t>(r & 1) << (f.E + f.M)) | (static_cast<uint32_t>(field) << f.M) |
           static_cast<uint32_t>((r >> 1) & ((1ull << f.M) - 1));
  }
  if (fmt == 1) bits = (bits << 13) | static_cast<uint32_t>((r >> 32) & 0x1FFF);  // tf32: junk low bits
  return bits;
}

__device__ uint32_t gen_int32(uint64_t r, int mode) {
  switch (mode & 3) {
    case 0: return static_cast<uint32_t>(r);
    case 1: return static_cast<uint32_t>(static_cast<int32_t>(r % 65536) - 32768);
    case 2: return ((r >> 40) & 1) ? 0x7FFFFFFFu - static_cast<uint32_t>(r % 4096) : 0x80000000u + static_cast<uint32_t>(r % 4096);
    default: return static_cast<uint32_t>(static_cast<int32_t>(r % (1u << 24)) - (1 << 23));
  }
}

// Element of an operand format (A/B), as bits.
__device__ __forceinline__ uint32_t gen_elem(uint64_t r, int fmt, int center, const Params& p) {
  if (fmt <= 5) return gen_float(r, fmt, center, p);
  return static_cast<uint32_t>(r & 0xFF);  // s8, u8, b1 (a byte of bits)
}

__device__ Params case_params(uint64_t seed, int fa, int fb, int fc) {
  const uint64_t q = rnd(seed, 3, 0);
  Params p;
  p.mode = static_cast<int>(q % 6);
  p.specials = ((q >> 8) & 3) == 0;
  p.ca = p.cb = p.cc = 0;
  if (fa <= 5) {
    const Fmt a = FMTS[fa], b = FMTS[fb], c = FMTS[fc];
    p.ca = 1 + static_cast<int>(((q >> 16) & 0xFF) % max_normal_field(a));
    p.cb = 1 + static_cast<int>(((q >> 24) & 0xFF) % max_normal_field(b));
    int ec = (p.ca - a.bias) + (p.cb - b.bias) + static_cast<int>((q >> 32) % 9) - 4 + c.bias;
    p.cc = ec < 1 ? 1 : (ec > max_normal_field(c) ? max_normal_field(c) : ec);
  }
  return p;
}

// kind -> formats (mirror of gen_numerics_wrappers.KINDS)
struct KindFmt { int fa, fb, fc, bits; };
__device__ __constant__ KindFmt KF[21] = {
  {1, 1, 0, 32}, {2, 2, 0, 16}, {2, 2, 2, 16}, {3, 3, 0, 16},
  {4, 4, 0, 8}, {4, 5, 0, 8}, {5, 4, 0, 8}, {5, 5, 0, 8}, {4, 4, 2, 8}, {4, 5, 2, 8}, {5, 4, 2, 8}, {5, 5, 2, 8},
  {6, 6, 8, 8}, {6, 7, 8, 8}, {7, 6, 8, 8}, {7, 7, 8, 8}, {6, 6, 8, 8}, {6, 7, 8, 8}, {7, 6, 8, 8}, {7, 7, 8, 8},
  {9, 9, 8, 1}};

// Write operand rows x (32 bytes of K) into smem at `off`, element (r, k) from rnd(seed, stream, r*K + k).
template <int BITS>
__device__ void fill_operand(uint8_t* smem, int off, int rows, bool mn_major, uint64_t seed, uint32_t stream,
                             int fmt, int center, const Params& p) {
  constexpr int K = BITS == 1 ? 32 : 256 / BITS;  // b1: bytes of K
  constexpr int EB = BITS == 1 ? 1 : BITS / 8;
  for (int idx = threadIdx.x; idx < rows * K; idx += blockDim.x) {
    const int r = idx / K, k = idx % K;
    const uint32_t v = gen_elem(rnd(seed, stream, idx), fmt, center, p);
    int addr;
    if (!mn_major) {  // K-major, no swizzle: (r/8)*SBO + (r%8)*16 + (kb/16)*LBO + kb%16, LBO 128, SBO 256
      const int kb = k * EB;
      addr = (r / 8) * 256 + (r % 8) * 16 + (kb / 16) * 128 + kb % 16;
    } else {          // MN-major, no swizzle (16-bit): (r/8)*SBO + (k%8)*16 + (k/8)*LBO + (r%8)*2, SBO 128
      addr = (r / 8) * 128 + (k % 8) * 16 + (k / 8) * (rows / 8) * 128 + (r % 8) * 2;
    }
    for (int b = 0; b < EB; ++b) smem[off + addr + b] = (v >> (8 * b)) & 0xFF;
  }
}

__device__ __forceinline__ uint64_t desc_of(uint32_t addr, int lbo, int sbo) {
  return ((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>(lbo >> 4) << 16) | (static_cast<uint64_t>(sbo >> 4) << 32);
}

extern __shared__ __align__(1024) uint8_t smem[];

template <int KIND, int N, int TA, int TB, int REGA, int NR, typename ACC, void (*MMA)(ACC (&)[NR], uint64_t, uint64_t, const uint32_t (&)[4], int)>
__global__ void __launch_bounds__(128, 1) numerics(const NCase* cases, const int* ids, int count, uint32_t* out) {
  const int t = threadIdx.x, w = t / 32, l = t % 32;
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  for (int c = blockIdx.x; c < count; c += gridDim.x) {
    const int id = ids[c];
    const NCase cs = cases[id];
    const KindFmt kf = KF[KIND];
    const Params p = case_params(cs.seed, kf.fa, kf.fb, kf.fc);
    // C into the D fragment: f32/s32 register i is (16w + l/4 + 8*((i/2)%2), 8*(i/4) + (l%4)*2 + i%2);
    // f16: register j packs f32-numbered elements 2j (low half) and 2j+1.
    ACC d[NR];
    for (int j = 0; j < NR; ++j) {
      uint32_t word = 0;
      const int per = (kf.fc == 2) ? 2 : 1;
      for (int h = 0; h < per; ++h) {
        const int i = j * per + h;
        const int row = 16 * w + l / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + (l % 4) * 2 + (i % 2);
        const uint64_t r = rnd(cs.seed, 2, static_cast<uint32_t>(row * N + col));
        const uint32_t v = kf.fc == 8 ? gen_int32(r, p.mode) : gen_float(r, kf.fc, p.cc, p);
        word |= v << (16 * h);
      }
      if constexpr (std::is_same<ACC, float>::value) d[j] = __uint_as_float(word);
      else d[j] = static_cast<ACC>(word);
    }
    for (int s = 0; s < cs.steps; ++s) {
      uint32_t a[4] = {0, 0, 0, 0};
      if (REGA) {
        const int per = kf.bits == 1 ? 1 : 32 / kf.bits;  // elements per register (b1: one raw word)
        for (int i = 0; i < 4; ++i)
          for (int e = 0; e < per; ++e) {
            const uint64_t r = rnd(cs.seed, 16 * s + 4, static_cast<uint32_t>((t * 4 + i) * per + e));
            const uint32_t v = kf.bits == 1 ? static_cast<uint32_t>(r) : gen_elem(r, kf.fa, p.ca, p);
            a[i] |= kf.bits >= 32 || kf.bits == 1 ? v : (v & ((1u << kf.bits) - 1)) << (kf.bits * e);
          }
      } else {
        fill_operand<(KIND == 0 ? 32 : KIND <= 3 ? 16 : KIND == 20 ? 1 : 8)>(smem, A_OFF, 64, TA, cs.seed, 16 * s, kf.fa, p.ca, p);
      }
      fill_operand<(KIND == 0 ? 32 : KIND <= 3 ? 16 : KIND == 20 ? 1 : 8)>(smem, B_OFF, N, TB, cs.seed, 16 * s + 1, kf.fb, p.cb, p);
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      __syncthreads();
      const uint64_t da = TA ? desc_of(base + A_OFF, 8 * 128, 128) : desc_of(base + A_OFF, 128, 256);
      const uint64_t db = TB ? desc_of(base + B_OFF, (N / 8) * 128, 128) : desc_of(base + B_OFF, 128, 256);
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
      MMA(d, da, db, a, (s > 0 || cs.scale_d) ? 1 : 0);
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
      __syncthreads();
    }
    uint32_t* o = out + (static_cast<size_t>(id) * 128 + t) * REGS;
    for (int j = 0; j < NR; ++j) {
      if constexpr (std::is_same<ACC, float>::value) o[j] = __float_as_uint(d[j]);
      else o[j] = static_cast<uint32_t>(d[j]);
    }
  }
}

int main(int argc, char** argv) {
  if (argc != 3) { fprintf(stderr, "usage: numerics CASES.bin OUT.bin\n"); return 1; }
  FILE* f = fopen(argv[1], "rb");
  if (!f) { perror(argv[1]); return 1; }
  fseek(f, 0, SEEK_END); const long bytes = ftell(f); fseek(f, 0, SEEK_SET);
  const int n = static_cast<int>(bytes / sizeof(NCase));
  std::vector<NCase> cases(n);
  if (fread(cases.data(), sizeof(NCase), n, f) != static_cast<size_t>(n)) { fprintf(stderr, "short read\n"); return 1; }
  fclose(f);
  NCase* dcases; uint32_t* dout; int* dids;
  const size_t out_elems = static_cast<size_t>(n) * 128 * REGS;
  CK(cudaMalloc(&dcases, n * sizeof(NCase)));
  CK(cudaMalloc(&dout, out_elems * 4));
  CK(cudaMalloc(&dids, n * sizeof(int)));
  CK(cudaMemcpy(dcases, cases.data(), n * sizeof(NCase), cudaMemcpyHostToDevice));
  CK(cudaMemset(dout, 0xFF, out_elems * 4));
  int launched = 0;
  for (int inst = 0; inst < NUM_INSTANTIATIONS; ++inst) {
    std::vector<int> ids;
    for (int j = 0; j < n; ++j) if (cases[j].inst == inst) ids.push_back(j);
    if (ids.empty()) continue;
    CK(cudaMemcpy(dids, ids.data(), ids.size() * sizeof(int), cudaMemcpyHostToDevice));
#define LAUNCH(KD, NN, TA, TB, RA, NRR, ACC, FN) { \
      auto kern = numerics<KD, NN, TA, TB, RA, NRR, ACC, FN>; \
      CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM)); \
      kern<<<132, 128, SMEM>>>(dcases, dids, static_cast<int>(ids.size()), dout); \
      CK(cudaGetLastError()); CK(cudaDeviceSynchronize()); }
    NUMERICS_DISPATCH(inst, LAUNCH)
    launched += static_cast<int>(ids.size());
  }
  if (launched != n) { fprintf(stderr, "only %d of %d cases had an instantiation\n", launched, n); return 1; }
  std::vector<uint32_t> host(out_elems);
  CK(cudaMemcpy(host.data(), dout, out_elems * 4, cudaMemcpyDeviceToHost));
  FILE* o = fopen(argv[2], "wb");
  fwrite(host.data(), 4, out_elems, o);
  fclose(o);
  printf("ran %d cases\n", launched);
  return 0;
}
