// Capture the exact results of PTX ALU instructions (see scripts/capture/capture_ptx_alu.py, which writes the trace).
//
// One kernel per op form, generated into scripts/capture/ptx_alu_ops.inc (`capture_ptx_alu.py --gen-inc`): thread i
// reads the four 64-bit operand slots of case i, casts them to the form's register widths, runs the form's
// inline PTX (inputs come from global memory, so nothing is folded at compile time) and stores its one or
// two destination registers (predicates through selp as 0/1).
//
//   capture_ptx_alu --list            the form names, one per line (the driver checks them)
//   capture_ptx_alu IN.bin OUT.bin    IN: int64 n, int32 op[n], uint64 slots[n][4]; OUT: uint64 out[n][2]
//
// Build: nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o /tmp/ptx_alu scripts/capture/capture_ptx_alu.cu
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

typedef void (*Kernel)(const unsigned long long*, unsigned long long*, int);

#include "ptx_alu_ops.inc"

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

int main(int argc, char** argv) {
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (int k = 0; k < NFORMS; ++k) printf("%s\n", NAMES[k]);
        return 0;
    }
    if (argc != 3) { fprintf(stderr, "usage: %s IN.bin OUT.bin | --list\n", argv[0]); return 2; }
    FILE* f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 1; }
    long long n = 0;
    if (fread(&n, 8, 1, f) != 1 || n <= 0) { fprintf(stderr, "bad header\n"); return 1; }
    std::vector<int> op(n);
    std::vector<unsigned long long> slots(4 * n), out(2 * n, 0xDEADBEEFDEADBEEFull);
    if (fread(op.data(), 4, n, f) != (size_t)n || fread(slots.data(), 8, 4 * n, f) != (size_t)(4 * n)) {
        fprintf(stderr, "short input\n"); return 1;
    }
    fclose(f);
    unsigned long long *din, *dout;
    CHECK(cudaMalloc(&din, 8 * 4 * n));
    CHECK(cudaMalloc(&dout, 8 * 2 * n));
    CHECK(cudaMemcpy(din, slots.data(), 8 * 4 * n, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dout, out.data(), 8 * 2 * n, cudaMemcpyHostToDevice));
    long long start = 0;
    while (start < n) {  // cases of one form are contiguous
        long long end = start;
        while (end < n && op[end] == op[start]) ++end;
        int k = op[start];
        if (k < 0 || k >= NFORMS) { fprintf(stderr, "bad op %d\n", k); return 1; }
        int cnt = (int)(end - start);
        KERNELS[k]<<<(cnt + 255) / 256, 256>>>(din + 4 * start, dout + 2 * start, cnt);
        CHECK(cudaGetLastError());
        start = end;
    }
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(out.data(), dout, 8 * 2 * n, cudaMemcpyDeviceToHost));
    FILE* g = fopen(argv[2], "wb");
    if (!g || fwrite(out.data(), 8, 2 * n, g) != (size_t)(2 * n)) { perror(argv[2]); return 1; }
    fclose(g);
    printf("%lld cases, %d forms\n", n, NFORMS);
    return 0;
}
