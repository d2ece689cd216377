// Device-heap probe (session 12): the heap limit a 1000-byte request leaves, malloc(0), and how many blocks fit.
//   nvcc -gencode=arch=compute_90a,code=sm_90a probe_device_heap.cu -o heapprobe && ./heapprobe
// NVIDIA H200, driver 580.159.04, CUDA 13.0, 2026-11-26: default heap 8388608; set 1000: no error, now 4194304;
// sizes 48, 16, 256: 4096 of 4096 got a block; size 4096: 400 of 4096; malloc(0) non-NULL every time.
#include <cstdio>
__global__ void k(int* got, unsigned long long* zero, int size) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  void* p = malloc(size);
  got[t] = p != nullptr;
  if (t == 0) { void* z = malloc(0); *zero = (unsigned long long)z; free(z); }
}
int main() {
  size_t lim; cudaDeviceGetLimit(&lim, cudaLimitMallocHeapSize); printf("default heap %zu\n", lim);
  cudaError_t s = cudaDeviceSetLimit(cudaLimitMallocHeapSize, 1000); cudaDeviceGetLimit(&lim, cudaLimitMallocHeapSize);
  printf("set 1000: %s, now %zu\n", cudaGetErrorString(s), lim);
  int* got; unsigned long long* z; cudaMallocManaged(&got, 4096 * 4); cudaMallocManaged(&z, 8);
  int sizes[] = {48, 16, 256, 4096};
  for (int size : sizes) {
    k<<<64, 64>>>(got, z, size); cudaError_t e = cudaDeviceSynchronize();
    int n = 0; for (int i = 0; i < 4096; i++) n += got[i];
    printf("size %d: %s, %d of 4096 got a block; malloc(0) %s\n", size, cudaGetErrorString(e), n, *z ? "non-NULL" : "NULL");
  }
  return 0;
}
