// Runs the kernels of tests/fixtures/ptx/atomics_sm90.cu on the GPU and writes each one's output buffer.
// Build: nvcc -gencode=arch=compute_90a,code=sm_90a -o .bins/capture_atomics scripts/capture/capture_atomics.cu
// Run:   .bins/capture_atomics OUTDIR      (writes <kernel>.bin; scripts/capture/capture_atomics.py makes the trace)
#include "../tests/fixtures/ptx/atomics_sm90.cu"
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s\n", cudaGetErrorString(e_)); exit(1);} } while (0)
struct K { const char* name; void (*fn)(uint32_t*); int grid, block, words; };
int main(int argc, char** argv) {
  K ks[] = {{"add_f32_global", add_f32_global, 3, 192, 1152}, {"add_f32_shared", add_f32_shared, 1, 576, 1152},
            {"red_f32_global", red_f32_global, 3, 192, 1152}, {"add_f16_global", add_f16_global, 3, 192, 1152},
            {"add_bf16_global", add_bf16_global, 3, 192, 1152}, {"add_f16x2_global", add_f16x2_global, 3, 192, 1152},
            {"add_bf16x2_global", add_bf16x2_global, 3, 192, 1152},
            {"add_v4_f32_global", add_v4_f32_global, 3, 192, 4608}, {"add_f32_contended", add_f32_contended, 1, 256, 2}};
  uint32_t* d; CK(cudaMalloc(&d, 4608 * 4));
  for (auto& k : ks) {
    CK(cudaMemset(d, 0, 4608 * 4));
    k.fn<<<k.grid, k.block>>>(d); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    std::vector<uint32_t> h(k.words);
    CK(cudaMemcpy(h.data(), d, k.words * 4, cudaMemcpyDeviceToHost));
    std::string p = std::string(argv[1]) + "/" + k.name + ".bin";
    FILE* f = fopen(p.c_str(), "wb"); fwrite(h.data(), 4, k.words, f); fclose(f);
    printf("%s %d words\n", k.name, k.words);
  }
  return 0;
}
