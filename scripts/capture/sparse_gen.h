// Input generator of the sparse wgmma numerics capture (scripts/capture/capture_sparse.cu), host- and device-callable.
// Mirrored bit for bit by tcemu/traces/sparse_seeds.py (which reuses tcemu/traces/seeds.py for the parts below that repeat
// scripts/capture/capture_numerics.cu); tests/traces/test_sparse_capture.py compiles this header for the host and compares.
//
//   rnd(seed, stream, index) = mix64(seed ^ mix64(stream << 32 | index))
//   stream 3, index 0     case parameters (as capture_numerics.cu); stream 3, index 1: the negzero flag
//   stream 2              C, element (row, col) at index row * N + col
//   stream 16*step        stored A, element (row, s) at index row * (K/2) + s
//   stream 16*step + 1    B, element (row, k) at index row * K + k
//   stream 16*step + 4    register A, index (thread * 4 + reg) * per + e
//   stream 16*step + 5    metadata register of thread t, index t, shaped by the case's metadata class
#pragma once
#include <cstdint>

#ifdef __CUDACC__
#define SPG __host__ __device__ __forceinline__
#else
#define SPG inline
#endif

SPG uint64_t sp_mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
SPG uint64_t sp_rnd(uint64_t seed, uint32_t stream, uint32_t index) {
  return sp_mix64(seed ^ sp_mix64((static_cast<uint64_t>(stream) << 32) | index));
}

// Formats: 0 f32, 1 tf32, 2 f16, 3 bf16, 4 e4m3, 5 e5m2, 6 s8, 7 u8, 8 s32 (as capture_numerics.cu)
struct SpFmt { int E, M, bias, fn; };
SPG SpFmt sp_fmt(int f) {
  switch (f) {
    case 0: return {8, 23, 127, 0};
    case 1: return {8, 10, 127, 0};
    case 2: return {5, 10, 15, 0};
    case 3: return {8, 7, 127, 0};
    case 4: return {4, 3, 7, 1};
    default: return {5, 2, 15, 0};
  }
}
SPG int sp_max_normal_field(const SpFmt& f) { return f.fn ? (1 << f.E) - 1 : (1 << f.E) - 2; }

struct SpParams { int mode, specials, ca, cb, cc, negzero; };

SPG uint32_t sp_special_bits(const SpFmt& f, int sel, uint32_t sign) {
  const uint32_t s = sign << (f.E + f.M), emask = (1u << f.E) - 1, mmask = (1u << f.M) - 1;
  switch (sel) {
    case 0: return 0;
    case 1: return 1u << (f.E + f.M);
    case 2: return f.fn ? (s | (emask << f.M) | mmask) : (s | (emask << f.M));
    case 3: return f.fn ? (s | (emask << f.M) | mmask) : (s | (emask << f.M) | (1u << (f.M - 1)));
    case 4: return s | 1u;
    case 5: return s | mmask;
    case 6: return f.fn ? (s | (emask << f.M) | (mmask - 1)) : (s | ((emask - 1) << f.M) | mmask);
    default: return s | (1u << f.M);
  }
}

// capture_numerics.cu's gen_float, except that e4m3 outside raw mode and outside the special draws never
// lands on the NaN pattern (the dense capture's known weakness): S.1111.111 becomes S.1111.110.
SPG uint32_t sp_gen_float(uint64_t r, int fmt, int center, const SpParams& p) {
  const SpFmt f = sp_fmt(fmt);
  const int nb = 1 + f.E + f.M;
  uint32_t bits;
  if (p.mode == 0) {
    bits = static_cast<uint32_t>(r & ((1ull << nb) - 1));
  } else if (p.specials && (r >> 60) == 0) {
    bits = sp_special_bits(f, static_cast<int>((r >> 52) & 7), static_cast<uint32_t>((r >> 51) & 1));
  } else {
    if (p.mode >= 4 && ((r >> 58) & 3) == 0) {
      bits = static_cast<uint32_t>(r & 1) << (f.E + f.M);
    } else {
      const int w = (p.mode == 1) ? 1 : (p.mode == 2 || p.mode == 5) ? 4 : (1 << f.E);
      int field = center + static_cast<int>((r >> 24) % static_cast<uint64_t>(2 * w + 1)) - w;
      field = field < 0 ? 0 : (field > sp_max_normal_field(f) ? sp_max_normal_field(f) : field);
      bits = (static_cast<uint32_t>(r & 1) << (f.E + f.M)) | (static_cast<uint32_t>(field) << f.M) |
             static_cast<uint32_t>((r >> 1) & ((1ull << f.M) - 1));
    }
    if (fmt == 4 && (bits & 0x7F) == 0x7F) bits ^= 1u;
  }
  if (fmt == 1) bits = (bits << 13) | static_cast<uint32_t>((r >> 32) & 0x1FFF);
  return bits;
}

SPG uint32_t sp_gen_int32(uint64_t r, int mode) {
  switch (mode & 3) {
    case 0: return static_cast<uint32_t>(r);
    case 1: return static_cast<uint32_t>(static_cast<int32_t>(r % 65536) - 32768);
    case 2: return ((r >> 40) & 1) ? 0x7FFFFFFFu - static_cast<uint32_t>(r % 4096) : 0x80000000u + static_cast<uint32_t>(r % 4096);
    default: return static_cast<uint32_t>(static_cast<int32_t>(r % (1u << 24)) - (1 << 23));
  }
}

// force: 0 as generated, 1 the sign alone (-0: stored A, register A, C of negzero cases), 2 the sign cleared (B)
SPG uint32_t sp_elem(uint64_t r, int fmt, int center, const SpParams& p, int force) {
  if (fmt > 5) return static_cast<uint32_t>(r & 0xFF);  // s8, u8
  const SpFmt f = sp_fmt(fmt);
  const uint32_t sign = fmt == 1 ? 0x80000000u : (1u << (f.E + f.M));
  uint32_t bits = sp_gen_float(r, fmt, center, p);
  if (force == 1) bits = sign | (fmt == 1 ? static_cast<uint32_t>((r >> 32) & 0x1FFF) : 0u);
  if (force == 2) bits &= ~sign;
  return bits;
}

SPG SpParams sp_case_params(uint64_t seed, int fa, int fb, int fc) {
  const uint64_t q = sp_rnd(seed, 3, 0);
  SpParams p;
  p.mode = static_cast<int>(q % 6);
  p.specials = ((q >> 8) & 3) == 0;
  p.ca = p.cb = p.cc = 0;
  p.negzero = 0;
  if (fa <= 5) {
    const SpFmt a = sp_fmt(fa), b = sp_fmt(fb), c = sp_fmt(fc);
    p.ca = 1 + static_cast<int>(((q >> 16) & 0xFF) % sp_max_normal_field(a));
    p.cb = 1 + static_cast<int>(((q >> 24) & 0xFF) % sp_max_normal_field(b));
    int ec = (p.ca - a.bias) + (p.cb - b.bias) + static_cast<int>((q >> 32) % 9) - 4 + c.bias;
    p.cc = ec < 1 ? 1 : (ec > sp_max_normal_field(c) ? sp_max_normal_field(c) : ec);
    p.negzero = (sp_rnd(seed, 3, 1) & 15) == 0;  // A and C all -0, B all positive: sign rule of pruned terms
  }
  return p;
}

// Metadata classes: 0 valid, 1 raw 32-bit words, 2 invalid-but-distinct (2:4: idx0 > idx1; tf32: any value
// other than 0b0100 / 0b1110), 3 repeated indices, 4 all zero.
SPG uint32_t sp_meta_table(int chunk, int cls, int i, int* len) {
  const uint8_t valid4[6] = {0x4, 0x8, 0xC, 0x9, 0xD, 0xE}, rev4[6] = {0x1, 0x2, 0x3, 0x6, 0x7, 0xB};
  const uint8_t valid2[2] = {0x4, 0xE}, other2[14] = {0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15};
  const uint8_t rep[4] = {0x0, 0x5, 0xA, 0xF};
  if (cls == 3) { *len = 4; return rep[i % 4]; }
  if (chunk == 2) {
    if (cls == 0) { *len = 2; return valid2[i % 2]; }
    *len = 14; return other2[i % 14];
  }
  if (cls == 0) { *len = 6; return valid4[i % 6]; }
  *len = 6; return rev4[i % 6];
}

SPG uint32_t sp_meta_register(uint64_t seed, int step, int t, int cls, int chunk) {
  const uint64_t r = sp_rnd(seed, 16 * step + 5, static_cast<uint32_t>(t));
  if (cls == 1) return static_cast<uint32_t>(r);
  if (cls == 4) return 0u;
  uint32_t reg = 0;
  for (int j = 0; j < 8; ++j) {
    int len = 1;
    sp_meta_table(chunk, cls, 0, &len);
    reg |= sp_meta_table(chunk, cls, static_cast<int>(((r >> (8 * j)) & 0xFF) % static_cast<uint64_t>(len)), &len) << (4 * j);
  }
  return reg;
}

// The operands of one case, element by element (the kernel and the host test both call these).
SPG uint32_t sp_stored_a(uint64_t seed, int step, int row, int s, int K, int fa, const SpParams& p) {
  return sp_elem(sp_rnd(seed, 16 * step, static_cast<uint32_t>(row * (K / 2) + s)), fa, p.ca, p, p.negzero ? 1 : 0);
}
SPG uint32_t sp_b(uint64_t seed, int step, int row, int k, int K, int fb, const SpParams& p) {
  return sp_elem(sp_rnd(seed, 16 * step + 1, static_cast<uint32_t>(row * K + k)), fb, p.cb, p, p.negzero ? 2 : 0);
}
SPG uint32_t sp_c(uint64_t seed, int row, int col, int N, int fc, const SpParams& p) {
  const uint64_t r = sp_rnd(seed, 2, static_cast<uint32_t>(row * N + col));
  return fc == 8 ? sp_gen_int32(r, p.mode) : sp_elem(r, fc, p.cc, p, p.negzero ? 1 : 0);
}
SPG uint32_t sp_rega(uint64_t seed, int step, int t, int i, int bits, int fa, const SpParams& p) {
  const int per = 32 / bits;
  uint32_t a = 0;
  for (int e = 0; e < per; ++e) {
    const uint32_t v = sp_elem(sp_rnd(seed, 16 * step + 4, static_cast<uint32_t>((t * 4 + i) * per + e)), fa, p.ca,
                               p, p.negzero ? 1 : 0);
    a |= bits >= 32 ? v : (v & ((1u << bits) - 1)) << (bits * e);
  }
  return a;
}
