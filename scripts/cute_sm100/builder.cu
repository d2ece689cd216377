// Records the launch a CuTe Blackwell tutorial's own host function makes (scripts/cute_sm100/fake_runtime.cpp),
// for the tutorial's kernel compiled to the PTX fixture from the same scripts/cute_sm100/tutorial.cu.
//
//   builder M N K ALPHA BETA     (fake device pointers; the layouts the tutorial's main() builds)
#define main tcemu_tutorial_main
#include "tutorial.cu"
#undef main

#include <cstdlib>
#include <string>

int tcemu_launches();

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: builder M N K ALPHA BETA\n");
    return 2;
  }
  int Gemm_M = std::atoi(argv[1]), Gemm_N = std::atoi(argv[2]), Gemm_K = std::atoi(argv[3]);
  using namespace cute;
  // The storage the tutorials' main() uses: A (M, K) and B (N, K) K-major f16, C and D (M, N) N-major f32.
  Layout layout_A = make_layout(make_shape(Gemm_M, Gemm_K), make_stride(Gemm_K, Int<1>{}));
  Layout layout_B = make_layout(make_shape(Gemm_N, Gemm_K), make_stride(Gemm_K, Int<1>{}));
  Layout layout_C = make_layout(make_shape(Gemm_M, Gemm_N), make_stride(Gemm_N, Int<1>{}));
  Layout layout_D = make_layout(make_shape(Gemm_M, Gemm_N), make_stride(Gemm_N, Int<1>{}));
  // Fake device buffers, 2^36 bytes apart (the replay maps each array at its address).
  auto* A = reinterpret_cast<cutlass::half_t*>(0x7e0000000000ull);
  auto* B = reinterpret_cast<cutlass::half_t*>(0x7e1000000000ull);
  auto* C = reinterpret_cast<float*>(0x7e2000000000ull);
  auto* D = reinterpret_cast<float*>(0x7e3000000000ull);
  float alpha = std::strtof(argv[4], nullptr), beta = std::strtof(argv[5], nullptr);
  gemm_host_f16xf16_f32_f32_tnt(A, layout_A, B, layout_B, C, layout_C, D, layout_D, alpha, beta);
  return tcemu_launches() == 1 ? 0 : 4;
}
