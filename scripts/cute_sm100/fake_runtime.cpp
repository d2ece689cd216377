// Stand-ins for the CUDA runtime and driver calls that CuTe's Blackwell tutorials make on the host, so that the
// tutorials' own host functions run on a CPU-only machine and write out the launch they would make (tcemu,
// scripts/cute_sm100_kernels.py). Linked with `nvcc -cudart none`: a call with no stand-in here is a link error,
// and one that must not happen (allocation, copies) stops the program with its name. Nothing is launched.
//
// Output (stdout, one JSON object): the launched entry (from __cudaRegisterFunction), grid, block, cluster,
// dynamic shared bytes, each kernel argument's bytes (sizes from TCEMU_PARAM_SIZES, the entry's .param list in
// declaration order, comma-separated) and every cuTensorMapEncodeTiled call's arguments. An encoded map is a
// 128-byte placeholder: the 8 bytes "tcemuMAP", then the call's index (uint32); the replay puts tcemu's own
// encoding of the same arguments there.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "fake_runtime: %s must not be called while recording a launch\n", what);
  std::exit(3);
}

std::map<const void*, std::string>& names() {
  static std::map<const void*, std::string> m;
  return m;
}

std::vector<std::string>& encodes() {
  static std::vector<std::string> v;
  return v;
}

int launches = 0;

template <class T>
std::string list(const T* v, int n) {
  std::ostringstream o;
  o << "[";
  for (int i = 0; i < n; ++i) o << (i ? ", " : "") << static_cast<unsigned long long>(v[i]);
  o << "]";
  return o.str();
}

}  // namespace

extern "C" {

void** __cudaRegisterFatBinary(void*) {
  static void* handle = nullptr;
  return &handle;
}
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
void __cudaRegisterFunction(void**, const char* host_fun, char* device_fun, const char*, int, uint3*, uint3*, dim3*,
                            dim3*, int*) {
  names()[host_fun] = device_fun;
}
void __cudaRegisterVar(void**, char*, char*, const char*, int, size_t, int, int) {}
unsigned __cudaPushCallConfiguration(dim3, dim3, size_t, void*) { return 0; }
cudaError_t __cudaPopCallConfiguration(dim3*, dim3*, size_t*, void*) { return cudaSuccess; }

char __cudaInitModule(void**) { return 0; }
cudaError_t __cudaGetKernel(cudaKernel_t*, const void*) { return cudaSuccess; }
cudaError_t __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t) { die("a <<<>>> launch"); }
cudaError_t cudaLaunchKernel(const void*, dim3, dim3, void**, size_t, cudaStream_t) { die("cudaLaunchKernel"); }
cudaError_t cudaFuncSetAttribute(const void*, cudaFuncAttribute, int) { return cudaSuccess; }
cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaPeekAtLastError() { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
const char* cudaGetErrorString(cudaError_t) { return "(fake runtime)"; }
const char* cudaGetErrorName(cudaError_t) { return "(fake runtime)"; }
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaGetDeviceCount(int* n) { *n = 1; return cudaSuccess; }
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes*, const void*) { die("cudaFuncGetAttributes"); }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp*, int) { die("cudaGetDeviceProperties"); }
cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
cudaError_t cudaMalloc(void**, size_t) { die("cudaMalloc"); }
cudaError_t cudaFree(void*) { die("cudaFree"); }
cudaError_t cudaMemcpy(void*, const void*, size_t, cudaMemcpyKind) { die("cudaMemcpy"); }
cudaError_t cudaMemcpyAsync(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t) { die("cudaMemcpyAsync"); }
cudaError_t cudaStreamSynchronize(cudaStream_t) { die("cudaStreamSynchronize"); }

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  ++launches;
  unsigned cluster[3] = {1, 1, 1};
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const cudaLaunchAttribute& a = config->attrs[i];
    if (a.id == cudaLaunchAttributeClusterDimension) {
      cluster[0] = a.val.clusterDim.x;
      cluster[1] = a.val.clusterDim.y;
      cluster[2] = a.val.clusterDim.z;
    }
  }
  const char* sizes = std::getenv("TCEMU_PARAM_SIZES");
  if (!sizes) {
    std::fprintf(stderr, "fake_runtime: set TCEMU_PARAM_SIZES to the entry's .param sizes\n");
    std::exit(2);
  }
  std::printf("{\"entry\": \"%s\", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], \"cluster\": [%u, %u, %u], "
              "\"shared_bytes\": %zu, \"args\": [",
              names().count(func) ? names()[func].c_str() : "?", config->gridDim.x, config->gridDim.y,
              config->gridDim.z, config->blockDim.x, config->blockDim.y, config->blockDim.z, cluster[0], cluster[1],
              cluster[2], config->dynamicSmemBytes);
  std::stringstream in(sizes);
  std::string item;
  for (int i = 0; std::getline(in, item, ','); ++i) {
    size_t n = std::stoul(item);
    const unsigned char* p = static_cast<const unsigned char*>(args[i]);
    std::printf("%s\"", i ? ", " : "");
    for (size_t b = 0; b < n; ++b) std::printf("%02x", p[b]);
    std::printf("\"");
  }
  std::printf("], \"encodes\": [");
  for (size_t i = 0; i < encodes().size(); ++i) std::printf("%s%s", i ? ", " : "", encodes()[i].c_str());
  std::printf("]}\n");
  return cudaSuccess;
}

CUresult cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType dtype, cuuint32_t rank, void* address,
                                const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                                CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  std::ostringstream o;
  o << "{\"dtype\": " << int(dtype) << ", \"rank\": " << rank << ", \"address\": "
    << reinterpret_cast<uintptr_t>(address) << ", \"dims\": " << list(dims, rank)
    << ", \"strides_bytes\": " << list(strides, rank - 1) << ", \"box\": " << list(box, rank)
    << ", \"element_strides\": " << list(element_strides, rank) << ", \"interleave\": " << int(interleave)
    << ", \"swizzle\": " << int(swizzle) << ", \"l2_promotion\": " << int(l2) << ", \"oob_fill\": " << int(oob)
    << "}";
  uint32_t index = static_cast<uint32_t>(encodes().size());
  encodes().push_back(o.str());
  std::memset(map, 0, sizeof(*map));
  std::memcpy(map, "tcemuMAP", 8);
  std::memcpy(reinterpret_cast<char*>(map) + 8, &index, 4);
  return CUDA_SUCCESS;
}

}  // extern "C"

int tcemu_launches() { return launches; }
