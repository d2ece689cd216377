// Launch-record builder for the CuTe Hopper tutorial (examples/cute/tutorial/hopper/wgmma_tma_sm90.cu of the
// nvidia-cutlass wheel, included unmodified; its main() is renamed). The PTX fixture is that file compiled
// as-is; this program instantiates the same gemm_device kernels through the tutorial's own host functions
// gemm_nt / gemm_tn, which build the TMA atoms (make_tma_atom -> cuTensorMapEncodeTiled) and launch with
// cutlass::launch_kernel_on_cluster. fake_cuda.cpp records that launch.
//
//   cute_tutorial --ptx cutlass_cute_tutorial.ptx NT|TN M N K
//
// Storage (as the tutorial's main sets it up): NT: A is (K, M) row-major (M contiguous, ldA = M), B is (K, N)
// row-major (ldB = N); TN: A is (M, K) row-major (ldA = K), B is (N, K) row-major (ldB = K). C is column-major
// (M, N), i.e. (N, M) row-major storage, ldC = M. Elements are half_t, alpha = 1, beta = 0 as in main().
#define main tutorial_main
#include "cute/tutorial/hopper/wgmma_tma_sm90.cu"
#undef main

#include "record.h"

int main(int argc, char** argv) {
  std::vector<std::string> a = tcemu_rec::init(argc, argv);
  if (a.size() != 4 || (a[0] != "NT" && a[0] != "TN")) {
    std::fprintf(stderr, "usage: cute_tutorial --ptx FILE NT|TN M N K\n");
    return 2;
  }
  int m = std::stoi(a[1]), n = std::stoi(a[2]), k = std::stoi(a[3]);
  bool nt = a[0] == "NT";
  using T = cute::half_t;
  std::vector<long long> sa = nt ? std::vector<long long>{k, m} : std::vector<long long>{m, k};
  std::vector<long long> sb = nt ? std::vector<long long>{k, n} : std::vector<long long>{n, k};
  T* A = static_cast<T*>(tcemu_rec::buffer("A", "input", "f16", sa, sizeof(T) * m * k));
  T* B = static_cast<T*>(tcemu_rec::buffer("B", "input", "f16", sb, sizeof(T) * n * k));
  // C is read only when beta != 0 (CuTe's axpby tests beta == 0 at run time); with main()'s beta = 0 it is an
  // output, which the capture poisons.
  T* C = static_cast<T*>(tcemu_rec::buffer("C", "output", "f16", {n, m}, sizeof(T) * m * n));
  T alpha = T(1.0f), beta = T(0.0f);
  tcemu_rec::note("layout", nt ? "\"NT\"" : "\"TN\"");
  tcemu_rec::note("M", (long long)m);
  tcemu_rec::note("N", (long long)n);
  tcemu_rec::note("K", (long long)k);
  tcemu_rec::note("alpha", 1.0);
  tcemu_rec::note("beta", 0.0);
  tcemu_rec::fill_stack();   // the TMA atoms live in gemm_nt/gemm_tn's frame, padding included (record.h)
  if (nt) gemm_nt(m, n, k, alpha, A, m, B, n, beta, C, m);
  else gemm_tn(m, n, k, alpha, A, k, B, k, beta, C, m);
  return tcemu_rec::finish();
}
