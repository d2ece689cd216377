// WMMA fragment layouts on the GPU (nvcuda::wmma, PTX wmma.load): for each fragment kind, the matrix element each
// lane's fragment element x[e] holds. The matrix in memory holds its own linear index (exact in f16 / bf16 / f32),
// so the value loaded names the element. Output: one int32 per (config, lane, e), configs in the order below.
//   nvcc -gencode=arch=compute_90a,code=sm_90a -O2 capture_wmma.cu -o capture_wmma && ./capture_wmma out.bin
#include <cstdio>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#include <type_traits>
using namespace nvcuda;

template <typename Frag, typename T, typename Load>
__device__ void dump(const T* m, int ld, int* out, Load load) {
  Frag f;
  load(f, m, ld);
  for (int e = 0; e < f.num_elements; ++e) out[threadIdx.x * f.num_elements + e] = (int)float(f.x[e]);
}

#define AB(KIND, M, N, K, T, LAYOUT, ROWS, COLS)                                                               \
  {                                                                                                            \
    using F = wmma::fragment<wmma::KIND, M, N, K, T, wmma::LAYOUT>;                                            \
    int ld = std::is_same<wmma::LAYOUT, wmma::row_major>::value ? COLS : ROWS;                                 \
    dump<F>((const T*)mem, ld, out + at, [](F& f, const T* p, int l) { wmma::load_matrix_sync(f, p, l); });    \
    at += 32 * F::num_elements;                                                                                \
  }
#define ACC(M, N, K, T, MEMLAYOUT, ROWS, COLS)                                                                 \
  {                                                                                                            \
    using F = wmma::fragment<wmma::accumulator, M, N, K, T>;                                                   \
    int ld = MEMLAYOUT == wmma::mem_row_major ? COLS : ROWS;                                                   \
    dump<F>((const T*)mem, ld, out + at,                                                                       \
            [](F& f, const T* p, int l) { wmma::load_matrix_sync(f, p, l, MEMLAYOUT); });                     \
    at += 32 * F::num_elements;                                                                                \
  }

__global__ void layouts(const void* h16, const void* b16, const void* f32, int* out) {
  int at = 0;
  const void* mem;
  // m16n16k16: A 16x16, B 16x16, C 16x16
  mem = h16;
  AB(matrix_a, 16, 16, 16, half, row_major, 16, 16) AB(matrix_a, 16, 16, 16, half, col_major, 16, 16)
  AB(matrix_b, 16, 16, 16, half, row_major, 16, 16) AB(matrix_b, 16, 16, 16, half, col_major, 16, 16)
  ACC(16, 16, 16, half, wmma::mem_row_major, 16, 16) ACC(16, 16, 16, half, wmma::mem_col_major, 16, 16)
  mem = f32;
  ACC(16, 16, 16, float, wmma::mem_row_major, 16, 16) ACC(16, 16, 16, float, wmma::mem_col_major, 16, 16)
  // m32n8k16: A 32x16, B 16x8, C 32x8
  mem = h16;
  AB(matrix_a, 32, 8, 16, half, row_major, 32, 16) AB(matrix_a, 32, 8, 16, half, col_major, 32, 16)
  AB(matrix_b, 32, 8, 16, half, row_major, 16, 8) AB(matrix_b, 32, 8, 16, half, col_major, 16, 8)
  ACC(32, 8, 16, half, wmma::mem_row_major, 32, 8) ACC(32, 8, 16, half, wmma::mem_col_major, 32, 8)
  mem = f32;
  ACC(32, 8, 16, float, wmma::mem_row_major, 32, 8) ACC(32, 8, 16, float, wmma::mem_col_major, 32, 8)
  // m8n32k16: A 8x16, B 16x32, C 8x32
  mem = h16;
  AB(matrix_a, 8, 32, 16, half, row_major, 8, 16) AB(matrix_a, 8, 32, 16, half, col_major, 8, 16)
  AB(matrix_b, 8, 32, 16, half, row_major, 16, 32) AB(matrix_b, 8, 32, 16, half, col_major, 16, 32)
  ACC(8, 32, 16, half, wmma::mem_row_major, 8, 32) ACC(8, 32, 16, half, wmma::mem_col_major, 8, 32)
  mem = f32;
  ACC(8, 32, 16, float, wmma::mem_row_major, 8, 32) ACC(8, 32, 16, float, wmma::mem_col_major, 8, 32)
  // bf16 operands of m16n16k16
  mem = b16;
  AB(matrix_a, 16, 16, 16, __nv_bfloat16, row_major, 16, 16) AB(matrix_a, 16, 16, 16, __nv_bfloat16, col_major, 16, 16)
  AB(matrix_b, 16, 16, 16, __nv_bfloat16, row_major, 16, 16) AB(matrix_b, 16, 16, 16, __nv_bfloat16, col_major, 16, 16)
  if (threadIdx.x == 0) out[(1 << 18) - 1] = at;   // how many ints were written
}

// D = A B + C through wmma for one case per CTA: A (M x K) row-major, B (K x N) column-major, C and D (M x N)
// row-major, in the element types of the config; `cfg` picks the shape and types (see CONFIGS in capture_wmma.py)
template <int M, int N, int K, typename TA, typename TC>
__device__ void mma_case(const void* a, const void* b, const void* c, void* d) {
  wmma::fragment<wmma::matrix_a, M, N, K, TA, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, M, N, K, TA, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, M, N, K, TC> fc;
  wmma::load_matrix_sync(fa, (const TA*)a, K);
  wmma::load_matrix_sync(fb, (const TA*)b, K);
  wmma::load_matrix_sync(fc, (const TC*)c, N, wmma::mem_row_major);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync((TC*)d, fc, N, wmma::mem_row_major);
}

__global__ void numerics(int cfg, const char* a, const char* b, const char* c, char* d) {
  size_t i = blockIdx.x;   // case i: 512 operand elements of A, B, C and D each (at most 32 x 16 or 16 x 32)
  const char *pa = a + i * 1024, *pb = b + i * 1024, *pc = c + i * 2048;
  char* pd = d + i * 2048;
  switch (cfg) {
    case 0: mma_case<16, 16, 16, half, float>(pa, pb, pc, pd); break;
    case 1: mma_case<16, 16, 16, half, half>(pa, pb, pc, pd); break;
    case 2: mma_case<16, 16, 16, __nv_bfloat16, float>(pa, pb, pc, pd); break;
    case 3: mma_case<32, 8, 16, half, float>(pa, pb, pc, pd); break;
    case 4: mma_case<8, 32, 16, half, float>(pa, pb, pc, pd); break;
    case 5: mma_case<32, 8, 16, half, half>(pa, pb, pc, pd); break;
  }
}

int main(int argc, char** argv) {
  if (argc > 2) {   // numerics: capture_wmma NUMERICS IN.bin OUT.bin CASES: inputs a|b|c per config, 6 configs
    int cases = atoi(argv[4]);
    size_t na = (size_t)cases * 1024, nc = (size_t)cases * 2048;
    char* in = (char*)malloc(6 * (2 * na + nc));
    FILE* fi = fopen(argv[2], "rb");
    if (fread(in, 1, 6 * (2 * na + nc), fi) != 6 * (2 * na + nc)) { printf("short input\n"); return 1; }
    fclose(fi);
    char *da, *db, *dc, *dd;
    cudaMalloc(&da, na); cudaMalloc(&db, na); cudaMalloc(&dc, nc); cudaMalloc(&dd, nc);
    char* out = (char*)malloc(6 * nc);
    for (int cfg = 0; cfg < 6; ++cfg) {
      char* base = in + cfg * (2 * na + nc);
      cudaMemcpy(da, base, na, cudaMemcpyHostToDevice);
      cudaMemcpy(db, base + na, na, cudaMemcpyHostToDevice);
      cudaMemcpy(dc, base + 2 * na, nc, cudaMemcpyHostToDevice);
      cudaMemset(dd, 0, nc);
      numerics<<<cases, 32>>>(cfg, da, db, dc, dd);
      cudaMemcpy(out + cfg * nc, dd, nc, cudaMemcpyDeviceToHost);
    }
    printf("numerics: %s\n", cudaGetErrorString(cudaGetLastError()));
    FILE* fo = fopen(argv[3], "wb");
    fwrite(out, 1, 6 * nc, fo);
    fclose(fo);
    return 0;
  }
  const int n = 512;
  half h[n];
  __nv_bfloat16 b[n];
  float f[n];
  for (int i = 0; i < n; ++i) { h[i] = __int2half_rn(i); b[i] = __int2bfloat16_rn(i); f[i] = (float)i; }
  void *dh, *db, *df;
  int* dout;
  cudaMalloc(&dh, sizeof h); cudaMalloc(&db, sizeof b); cudaMalloc(&df, sizeof f);
  cudaMalloc(&dout, 1 << 20);
  cudaMemset(dout, 0xff, 1 << 20);
  cudaMemcpy(dh, h, sizeof h, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice);
  cudaMemcpy(df, f, sizeof f, cudaMemcpyHostToDevice);
  layouts<<<1, 32>>>(dh, db, df, dout);
  static int out[1 << 18];
  cudaError_t e = cudaMemcpy(out, dout, 1 << 20, cudaMemcpyDeviceToHost);
  int total = out[(1 << 18) - 1];
  printf("%s: %d ints\n", cudaGetErrorString(e), total);
  FILE* fh = fopen(argc > 1 ? argv[1] : "wmma.bin", "wb");
  fwrite(out, 4, total, fh);
  fclose(fh);
  return e != cudaSuccess;
}
