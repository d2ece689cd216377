// Peer oracle for tcemu: the data paths of tcgen05.ld / tcgen05.st and tcgen05.cp, as CuTe's SM100 copy traits
// describe them (cute/atom/copy_traits_sm100.hpp, nvidia-cutlass wheel). Host-only program: it #includes CuTe and
// evaluates its layouts; nothing of CuTe is copied here.
//
// Output, one JSON object per line on stdout:
//   {"rec": "ld" | "st", "shape": "16dp256b", "num": N, "pack": 0|1, "regs": R, "lane": [...], "col": [...],
//    "bit": [...]}
//     For thread t (0..31), register j (0..R-1) and half h (0: bit 0, 1: bit 16 of the register), in that order,
//     the tensor-memory bit CuTe's traits send it to: ValID(DstLayout(t, 32 j + 16 h)) for loads (SrcLayout for
//     stores), split into lane (>> 21, TMEM::DP_b = 2^21 bits per lane), column and bit within the column.
//   {"rec": "cp", "op": name, "rows": R, "bits": W, "lane": [...], "col": [...]}
//     For every copy c (the modes after the first two: broadcast, and for 01_23 first the repeat of the rows),
//     source row r and 32-bit word w of the row (logical bit 32 w), in the order (c, r, w): the lane and column of
//     ValID's image of logical index r + rows (32 w) + rows bits c.
//
// Build: nvcc -std=c++17 -x c++ -O1 -DNDEBUG -I<cutlass include> tmem_copy_oracle.cu -o tmem_copy_oracle

#include <cstdint>
#include <cstdio>

#include <cute/tensor.hpp>
#include <cute/atom/copy_traits_sm100.hpp>

using namespace cute;

template <class Op, bool Load>
void emit(char const* shape, int num, int pack) {
  using Traits = Copy_Traits<Op>;
  using ThrVal = conditional_t<Load, typename Traits::DstLayout, typename Traits::SrcLayout>;
  auto val_id = typename Traits::ValID{};
  auto thr_val = ThrVal{};
  int bits = int(size<1>(thr_val));
  int regs = bits / 32;
  std::printf("{\"rec\": \"%s\", \"shape\": \"%s\", \"num\": %d, \"pack\": %d, \"regs\": %d", Load ? "ld" : "st",
              shape, num, pack, regs);
  char const* names[3] = {"lane", "col", "bit"};
  for (int f = 0; f < 3; ++f) {
    std::printf(", \"%s\": [", names[f]);
    bool first = true;
    for (int t = 0; t < 32; ++t) {
      for (int j = 0; j < regs; ++j) {
        for (int h = 0; h < 2; ++h) {
          int64_t off = val_id(thr_val(t, 32 * j + 16 * h));
          int64_t v = f == 0 ? off >> 21 : f == 1 ? (off & ((1 << 21) - 1)) >> 5 : off & 31;
          std::printf("%s%lld", first ? "" : ",", static_cast<long long>(v));
          first = false;
        }
      }
    }
    std::printf("]");
  }
  std::printf("}\n");
}

#define TCEMU_LD(S, N)                                                         \
  emit<SM100_TMEM_LOAD_##S##N##x, true>(#S, N, 0);                             \
  emit<SM100_TMEM_LOAD_##S##N##x_16b, true>(#S, N, 1);                         \
  emit<SM100_TMEM_STORE_##S##N##x, false>(#S, N, 0);                           \
  emit<SM100_TMEM_STORE_##S##N##x_16b, false>(#S, N, 1);

template <class Op>
void emit_cp(char const* name) {
  using Traits = Copy_Traits<Op>;
  auto val_id = typename Traits::ValID{};
  int total = int(size(val_id));
  int rows = int(size<0>(val_id));
  int width = int(size<1>(val_id));
  int copies = total / (rows * width);
  std::printf("{\"rec\": \"cp\", \"op\": \"%s\", \"rows\": %d, \"bits\": %d, \"copies\": %d", name, rows, width,
              copies);
  char const* names[2] = {"lane", "col"};
  for (int f = 0; f < 2; ++f) {
    std::printf(", \"%s\": [", names[f]);
    bool first = true;
    for (int c = 0; c < copies; ++c) {   // the index is colexicographic: row, then bit, then the remaining modes
      for (int r = 0; r < rows; ++r) {
        for (int w = 0; w < width / 32; ++w) {
          int64_t off = val_id(r + rows * (32 * w) + rows * width * c);
          int64_t v = f == 0 ? off >> 21 : (off & ((1 << 21) - 1)) >> 5;
          std::printf("%s%lld", first ? "" : ",", static_cast<long long>(v));
          first = false;
        }
      }
    }
    std::printf("]");
  }
  std::printf("}\n");
}

int main() {
  TCEMU_LD(16dp256b, 1) TCEMU_LD(16dp256b, 2) TCEMU_LD(16dp256b, 4) TCEMU_LD(16dp256b, 8) TCEMU_LD(16dp256b, 16)
  TCEMU_LD(16dp256b, 32)
  TCEMU_LD(16dp128b, 1) TCEMU_LD(16dp128b, 2) TCEMU_LD(16dp128b, 4) TCEMU_LD(16dp128b, 8) TCEMU_LD(16dp128b, 16)
  TCEMU_LD(16dp128b, 32) TCEMU_LD(16dp128b, 64)
  TCEMU_LD(16dp64b, 1) TCEMU_LD(16dp64b, 2) TCEMU_LD(16dp64b, 4) TCEMU_LD(16dp64b, 8) TCEMU_LD(16dp64b, 16)
  TCEMU_LD(16dp64b, 32) TCEMU_LD(16dp64b, 64) TCEMU_LD(16dp64b, 128)
  TCEMU_LD(16dp32b, 1) TCEMU_LD(16dp32b, 2) TCEMU_LD(16dp32b, 4) TCEMU_LD(16dp32b, 8) TCEMU_LD(16dp32b, 16)
  TCEMU_LD(16dp32b, 32) TCEMU_LD(16dp32b, 64) TCEMU_LD(16dp32b, 128)
  TCEMU_LD(32dp32b, 1) TCEMU_LD(32dp32b, 2) TCEMU_LD(32dp32b, 4) TCEMU_LD(32dp32b, 8) TCEMU_LD(32dp32b, 16)
  TCEMU_LD(32dp32b, 32) TCEMU_LD(32dp32b, 64) TCEMU_LD(32dp32b, 128)
  emit_cp<SM100_UTCCP_128dp256bit_1cta>("128x256b");
  emit_cp<SM100_UTCCP_128dp128bit_1cta>("128x128b");
  emit_cp<SM100_UTCCP_4x32dp128bit_1cta>("32x128b.warpx4");
  emit_cp<SM100_UTCCP_2x64dp128bitlw0213_1cta>("64x128b.warpx2::02_13");
  emit_cp<SM100_UTCCP_2x64dp128bitlw0123_1cta>("64x128b.warpx2::01_23");
  return 0;
}
