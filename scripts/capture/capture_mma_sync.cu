// Hardware capture of mma.sync.aligned numerics (sm_90a). Driven by scripts/capture/capture_mma_sync.py.
//
// One warp per case. Each lane fills its A, B and C registers from a counter-based generator by register position
// (lane, register, element within the register), mirrored bit for bit by tcemu/traces/mma_seeds.py; the fragment
// layouts are the replay's business (tcemu/layout/mma_fragments.py), so the capture judges them too. The raw D
// registers of every lane are written out (8 words a lane; words a form does not write stay 0xffffffff).
//
// Build: python3 scripts/capture/gen_mma_sync_wrappers.py > scripts/capture/mma_sync_wrappers.inc
//        nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o mma_sync scripts/capture/capture_mma_sync.cu
// Usage: mma_sync CASES.bin OUT.bin   (formats: capture_mma_sync.py)
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #x, __FILE__, __LINE__, cudaGetErrorString(e)); exit(2); } } while (0)

struct Case {  // 16 bytes, little-endian: capture_mma_sync.py CASE_DTYPE
  uint64_t seed;
  int32_t form, modes;  // modes: A | B << 8 | C << 16
};

// ---- the generator (mirror: tcemu/traces/mma_seeds.py) ----
__device__ __forceinline__ uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// One element's bits: ebits == 0 is an integer of `bits` bits, else a float of (ebits, mbits) in a `bits` container.
__device__ uint64_t elem(uint64_t seed, int stream, uint32_t idx, int mode, int ebits, int mbits, int bits) {
  const uint64_t z1 = mix(seed ^ ((uint64_t)(stream * 65536u + idx + 1u) * 0x9E3779B97F4A7C15ull));
  const uint64_t z2 = mix(z1 ^ 0xD1B54A32D192ED03ull);
  const uint64_t mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
  if (ebits == 0) {
    uint64_t v;
    switch (mode) {
      case 0: v = (uint64_t)((int64_t)(z1 % 7) - 3); break;
      case 2: v = (z2 >> 63) ? 0x80000000ull + (z1 & 0x3FFF) : 0x7FFFFFFFull - (z1 & 0x3FFF); break;
      case 3: v = (z2 >> 63) ? 0x80ull + (z1 & 0xF) : 0x7Full - (z1 & 0xF); break;
      default: v = z1;
    }
    return v & mask;
  }
  const uint64_t sign = z2 >> 63, r = (z2 >> 16) & 0xFFFF, sp = (z2 >> 32) & 63;
  uint64_t man = z1 & ((1ull << mbits) - 1);
  const int64_t emaxf = (1 << ebits) - 1, bias = emaxf >> 1;
  int64_t e;
  switch (mode) {
    case 0: e = bias - 3 + (int64_t)(r % 7); break;
    case 1: e = 1 + (int64_t)(r % (uint64_t)(emaxf - 1)); break;
    case 2: {
      const int64_t off[4] = {0, 9, 20, 30};
      e = bias - off[r & 3] + (int64_t)((r >> 2) % 3) - 1;
      if (e < 0) e = 0;
      break;
    }
    case 3: e = (int64_t)(r % 3); break;
    case 4:
      e = bias - 3 + (int64_t)(r % 7);
      if (sp == 0) return sign << (ebits + mbits);
      if (sp == 1) { e = emaxf; man = 0; }
      if (sp == 2) { e = emaxf; man |= 1; }
      break;
    case 5: return z1 & mask;
    case 6: e = bias + (int64_t)(r & 1); man = 0; break;
    case 7: return sign << (ebits + mbits);
    default: e = emaxf - 1 - (int64_t)(r % 3); break;  // 8: near overflow
  }
  return (sign << (ebits + mbits)) | ((uint64_t)e << mbits) | man;
}

template <typename T>
__device__ __forceinline__ void fill(T* x, int n, uint64_t seed, int stream, int lane, int mode, int ebits, int mbits,
                                     int bits) {
  if (sizeof(T) == 8) {
    for (int i = 0; i < n; ++i) x[i] = (T)elem(seed, stream, lane * n + i, mode, ebits, mbits, bits);
    return;
  }
  const int epw = 32 / bits;
  for (int i = 0; i < n; ++i) {
    uint32_t w = 0;
    for (int j = 0; j < epw; ++j)
      w |= (uint32_t)elem(seed, stream, (lane * n + i) * epw + j, mode, ebits, mbits, bits) << (j * bits);
    x[i] = (T)w;
  }
}

__device__ __forceinline__ void store(const uint32_t* d, int n, uint32_t* out) {
  for (int i = 0; i < n; ++i) out[i] = d[i];
}
__device__ __forceinline__ void store(const uint64_t* d, int n, uint32_t* out) {
  for (int i = 0; i < n; ++i) { out[2 * i] = (uint32_t)d[i]; out[2 * i + 1] = (uint32_t)(d[i] >> 32); }
}

#include "mma_sync_wrappers.inc"

constexpr int WARPS = 4, WORDS = 8;

__global__ void capture(const Case* cases, int n, uint32_t* out) {
  const int lane = threadIdx.x & 31, ci = blockIdx.x * WARPS + (threadIdx.x >> 5);
  if (ci >= n) return;  // warp-uniform
  const Case cs = cases[ci];
  run_form(cs.form, cs.seed, cs.modes, out + (size_t)ci * 32 * WORDS + lane * WORDS, lane);
}

int main(int argc, char** argv) {
  if (argc != 3) { fprintf(stderr, "usage: %s CASES.bin OUT.bin\n", argv[0]); return 1; }
  FILE* f = fopen(argv[1], "rb");
  if (!f) { perror(argv[1]); return 1; }
  std::vector<Case> cases;
  Case c;
  while (fread(&c, sizeof c, 1, f) == 1) {
    if (c.form < 0 || c.form >= NUM_FORMS) { fprintf(stderr, "bad form %d\n", c.form); return 1; }
    cases.push_back(c);
  }
  fclose(f);
  const int n = (int)cases.size();
  const size_t out_words = (size_t)n * 32 * WORDS;
  Case* dcases;
  uint32_t* dout;
  CK(cudaMalloc(&dcases, n * sizeof(Case)));
  CK(cudaMalloc(&dout, out_words * 4));
  CK(cudaMemcpy(dcases, cases.data(), n * sizeof(Case), cudaMemcpyHostToDevice));
  CK(cudaMemset(dout, 0xFF, out_words * 4));
  capture<<<(n + WARPS - 1) / WARPS, 32 * WARPS>>>(dcases, n, dout);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<uint32_t> out(out_words);
  CK(cudaMemcpy(out.data(), dout, out_words * 4, cudaMemcpyDeviceToHost));
  FILE* o = fopen(argv[2], "wb");
  if (!o || fwrite(out.data(), 4, out_words, o) != out_words) { perror(argv[2]); return 1; }
  fclose(o);
  printf("%d cases captured\n", n);
  return 0;
}
