// Stand-ins for the CUDA runtime and driver calls CUTLASS/CuTe host code makes, for launch-record builders
// (record.h). Linked with `nvcc -cudart none`: there is no real runtime in the program, so a call nobody
// stands in for is a link error, and a call that must not happen (allocation, copies, events) stops the
// program with its name. Device properties are fixed H100 SXM values (cudaDeviceProp below); a launch is
// recorded, never run; cuTensorMapEncodeTiled records its arguments and writes a 128-byte placeholder that
// finish() finds again in the parameter blob.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <malloc.h>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "record.h"

namespace {

[[noreturn]] void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "fake_cuda: ");
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  va_end(ap);
  std::exit(3);
}

// Every fake buffer lies in [lo, hi): above x86-64's 47-bit user space, so no host pointer left in a struct's
// padding can fall in it (host libraries are mapped at 0x7e.. and 0x7f..).
constexpr uint64_t kFakeZoneLo = 0x00F0000000000000ull;
constexpr uint64_t kFakeZoneHi = 0x00F1000000000000ull;
constexpr uint64_t kFakeStep = 0x1000000000ull;       // 64 GiB between buffers
const char kMapMagic[8] = {'t', 'c', 'T', 'M', 'A', 'P', 'p', 'h'};

struct Buffer {
  std::string name, role, dtype;
  std::vector<long long> storage;
  uint64_t address;
  std::size_t bytes;
};

struct Encode {
  int dtype, rank, interleave, swizzle, l2, oob;
  uint64_t address;
  std::vector<uint64_t> dims, strides;
  std::vector<uint32_t> box, estrides;
};

struct Param {
  std::string name;
  std::size_t bytes, align, offset;
};

struct Launch {
  std::string api, entry;
  unsigned grid[3], block[3], cluster[3];
  bool cluster_given;
  std::size_t smem;
  std::vector<std::string> attributes;
  std::vector<Param> params;
  std::vector<uint8_t> blob;
};

struct State {
  std::string ptx_path, ptx;
  std::vector<Buffer> buffers;
  std::vector<Encode> encodes;
  std::vector<Launch> launches;
  std::vector<std::pair<std::string, std::string>> notes;
  std::vector<std::string> calls;            // every runtime call, in order (for the record)
  std::map<const void*, std::string> kernels;  // host stub -> mangled entry name (__cudaRegisterFunction)
  std::map<const void*, std::vector<std::string>> func_attributes;
  dim3 pending_grid, pending_block;
  std::size_t pending_smem = 0;
  bool pending = false;
};

State& S() {
  static State s;
  return s;
}

std::string jstr(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += c; }
    else if (static_cast<unsigned char>(c) < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\u%04x", c); o += b; }
    else o += c;
  }
  return o + "\"";
}

template <class T>
std::string jlist(const std::vector<T>& v) {
  std::ostringstream o;
  o << "[";
  for (std::size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << v[i];
  o << "]";
  return o.str();
}

std::string hex(const std::vector<uint8_t>& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  s.reserve(b.size() * 2);
  for (uint8_t x : b) { s += d[x >> 4]; s += d[x & 15]; }
  return s;
}

// ---------------------------------------------------------------------------------------------- PTX params
// The .param list of `.entry NAME( ... )`: an array parameter `.param .align A .b8 name[N]` is N bytes at
// alignment A; a scalar `.param .u64 [.ptr ...] name` is its width at its own alignment (an .align after
// .ptr is the pointee's). Offsets follow in declaration order.
std::vector<Param> ptx_params(const std::string& entry) {
  const std::string& t = S().ptx;
  std::size_t pos = 0;
  while ((pos = t.find(".entry", pos)) != std::string::npos) {
    std::size_t p = pos + 6;
    while (p < t.size() && std::isspace(static_cast<unsigned char>(t[p]))) ++p;
    std::size_t q = p;
    while (q < t.size() && (std::isalnum(static_cast<unsigned char>(t[q])) || t[q] == '_' || t[q] == '$')) ++q;
    if (t.compare(p, q - p, entry) == 0 && q - p == entry.size()) {
      std::size_t open = t.find('(', q), close = t.find(')', q);
      if (open == std::string::npos || close == std::string::npos || close < open) die("PTX: no parameter list for %s", entry.c_str());
      std::vector<Param> out;
      std::string list = t.substr(open + 1, close - open - 1);
      std::stringstream ss(list);
      std::string decl;
      std::size_t off = 0;
      while (std::getline(ss, decl, ',')) {
        std::istringstream ws(decl);
        std::vector<std::string> w;
        for (std::string x; ws >> x;) w.push_back(x);
        if (w.empty()) continue;
        if (w[0] != ".param") die("PTX: unexpected parameter declaration '%s'", decl.c_str());
        std::size_t width = 0, align = 0, count = 0;
        bool ptr = false;
        for (std::size_t i = 1; i + 1 < w.size(); ++i) {
          if (w[i] == ".ptr") ptr = true;
          else if (w[i] == ".align" && !ptr) align = std::stoul(w[++i]);
          else if (w[i] == ".align") ++i;
          else if (w[i].size() > 2 && std::strchr("bsuf", w[i][1]) && std::isdigit(static_cast<unsigned char>(w[i][2])))
            width = std::stoul(w[i].substr(2)) / 8;
        }
        std::string name = w.back();
        std::size_t br = name.find('[');
        if (br != std::string::npos) {
          count = std::stoul(name.substr(br + 1));
          name = name.substr(0, br);
        }
        if (!width) die("PTX: no width in '%s'", decl.c_str());
        std::size_t bytes = width * (count ? count : 1);
        if (!count || !align) align = width;
        off = (off + align - 1) / align * align;
        out.push_back({name, bytes, align, off});
        off += bytes;
      }
      return out;
    }
    pos = q;
  }
  die("PTX %s has no .entry %s (was the builder compiled from the fixture's source and -D?)",
      S().ptx_path.c_str(), entry.c_str());
}

void record_launch(const char* api, const void* func, dim3 g, dim3 b, std::size_t smem, void** args,
                   const unsigned* cluster, std::vector<std::string> attributes) {
  auto it = S().kernels.find(func);
  if (it == S().kernels.end()) die("%s: kernel %p was never registered", api, func);
  Launch L;
  L.api = api;
  L.entry = it->second;
  L.grid[0] = g.x; L.grid[1] = g.y; L.grid[2] = g.z;
  L.block[0] = b.x; L.block[1] = b.y; L.block[2] = b.z;
  L.cluster_given = cluster != nullptr;
  for (int i = 0; i < 3; ++i) L.cluster[i] = cluster ? cluster[i] : 1;
  L.smem = smem;
  L.attributes = std::move(attributes);
  auto fa = S().func_attributes.find(func);
  if (fa != S().func_attributes.end())
    for (auto& a : fa->second) L.attributes.insert(L.attributes.begin(), a);
  L.params = ptx_params(L.entry);
  std::size_t end = L.params.empty() ? 0 : L.params.back().offset + L.params.back().bytes;
  L.blob.assign(end, 0);
  for (std::size_t i = 0; i < L.params.size(); ++i)
    std::memcpy(L.blob.data() + L.params[i].offset, args[i], L.params[i].bytes);
  S().launches.push_back(std::move(L));
  S().calls.push_back(api);
}

int find_buffer(uint64_t v) {
  for (std::size_t i = 0; i < S().buffers.size(); ++i) {
    const Buffer& b = S().buffers[i];
    if (v >= b.address && v <= b.address + b.bytes) return static_cast<int>(i);
  }
  return -1;
}

std::string encode_json(const Encode& e) {
  std::ostringstream o;
  int bi = find_buffer(e.address);
  o << "{\"dtype\": " << e.dtype << ", \"rank\": " << e.rank << ", \"address\": " << e.address
    << ", \"buffer\": " << (bi < 0 ? std::string("null") : jstr(S().buffers[bi].name))
    << ", \"delta\": " << (bi < 0 ? 0 : e.address - S().buffers[bi].address)
    << ", \"dims\": " << jlist(e.dims) << ", \"strides_bytes\": " << jlist(e.strides)
    << ", \"box\": " << jlist(e.box) << ", \"element_strides\": " << jlist(e.estrides)
    << ", \"interleave\": " << e.interleave << ", \"swizzle\": " << e.swizzle << ", \"l2_promotion\": " << e.l2
    << ", \"oob_fill\": " << e.oob << "}";
  return o.str();
}

}  // namespace

// ================================================================================ the builder's interface
namespace tcemu_rec {

void* buffer(const std::string& name, const std::string& role, const std::string& dtype,
             const std::vector<long long>& storage, std::size_t bytes) {
  for (auto& b : S().buffers)
    if (b.name == name) die("buffer %s declared twice", name.c_str());
  uint64_t addr = kFakeZoneLo + (S().buffers.size() + 1) * kFakeStep;
  if (bytes >= kFakeStep) die("buffer %s: %zu bytes do not fit the fake spacing", name.c_str(), bytes);
  S().buffers.push_back({name, role, dtype, storage, addr, bytes});
  return reinterpret_cast<void*>(addr);
}

void note(const std::string& key, const std::string& json_value) { S().notes.push_back({key, json_value}); }
void note(const std::string& key, long long value) { note(key, std::to_string(value)); }
void note(const std::string& key, double value) {
  char b[64];
  std::snprintf(b, sizeof b, "%.17g", value);
  note(key, std::string(b));
}

// Host code copies the kernel's Params struct with its padding bytes, which hold whatever memory held.
// TCEMU_STACK_FILL=<byte>: fill_stack() writes that byte over 1 MiB of stack below its caller, and glibc's
// fresh heap blocks start with it, so scripts/cutlass_kernels.py can run a builder with two fills and find
// (and zero) every byte of the blob that no host code wrote.
int fill_byte() {
  const char* fill = std::getenv("TCEMU_STACK_FILL");
  return fill ? static_cast<int>(std::strtol(fill, nullptr, 0)) & 0xFF : 0;
}

__attribute__((noinline)) void fill_stack() {
  volatile unsigned char pad[1 << 20];
  const unsigned char byte = static_cast<unsigned char>(fill_byte());
  for (std::size_t i = 0; i < sizeof pad; ++i) pad[i] = byte;
}

std::vector<std::string> init(int argc, char** argv) {
  mallopt(M_PERTURB, fill_byte() ^ 0xFF);   // glibc: a fresh allocation holds the complement of M_PERTURB
  fill_stack();
  std::vector<std::string> rest;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--ptx" && i + 1 < argc) S().ptx_path = argv[++i];
    else rest.push_back(a);
  }
  if (S().ptx_path.empty()) die("usage: %s --ptx FIXTURE.ptx [case arguments]", argv[0]);
  std::ifstream f(S().ptx_path, std::ios::binary);
  if (!f) die("cannot read %s", S().ptx_path.c_str());
  std::stringstream ss;
  ss << f.rdbuf();
  S().ptx = ss.str();
  return rest;
}

int finish() {
  State& s = S();
  if (s.launches.size() != 1) {
    std::fprintf(stderr, "fake_cuda: expected exactly one launch, recorded %zu\n", s.launches.size());
    return 4;
  }
  const Launch& L = s.launches[0];
  const std::vector<uint8_t>& blob = L.blob;
  int status = 0;
  // tensor maps: the placeholder of encode i, wherever the host code copied it
  std::vector<std::pair<std::size_t, uint32_t>> maps;
  std::vector<bool> covered(blob.size(), false);
  for (std::size_t off = 0; off + 128 <= blob.size(); off += 8) {
    if (std::memcmp(blob.data() + off, kMapMagic, 8) != 0) continue;
    uint32_t idx;
    std::memcpy(&idx, blob.data() + off + 8, 4);
    bool whole = idx < s.encodes.size();
    for (std::size_t j = 12; whole && j < 128; ++j) whole = blob[off + j] == static_cast<uint8_t>(0xA5 ^ j ^ idx);
    if (!whole) { std::fprintf(stderr, "fake_cuda: damaged tensor-map placeholder at blob offset %zu\n", off); status = 5; continue; }
    if (off % 64) { std::fprintf(stderr, "fake_cuda: tensor map at blob offset %zu is not 64-byte aligned\n", off); status = 5; }
    maps.push_back({off, idx});
    for (std::size_t j = 0; j < 128; ++j) covered[off + j] = true;
  }
  // pointers: every 8-byte word in the fake zone must point into (or one past) a buffer
  std::ostringstream ptrs;
  int nptr = 0;
  for (std::size_t off = 0; off + 8 <= blob.size(); off += 8) {
    if (covered[off]) continue;
    uint64_t v;
    std::memcpy(&v, blob.data() + off, 8);
    if (v < kFakeZoneLo || v >= kFakeZoneHi) continue;
    int bi = find_buffer(v);
    if (bi < 0) { std::fprintf(stderr, "fake_cuda: blob offset %zu holds %#llx, in the fake zone but in no buffer\n", off, (unsigned long long)v); status = 6; continue; }
    ptrs << (nptr++ ? ", " : "") << "{\"offset\": " << off << ", \"buffer\": " << jstr(s.buffers[bi].name)
         << ", \"delta\": " << (v - s.buffers[bi].address) << "}";
  }
  // a fake address cut in half (4-byte aligned, not 8) would escape the scan above: refuse it
  for (std::size_t off = 4; off + 8 <= blob.size(); off += 8) {
    uint64_t v;
    std::memcpy(&v, blob.data() + off, 8);
    if (!covered[off] && v >= kFakeZoneLo && v < kFakeZoneHi && find_buffer(v) >= 0) {
      std::fprintf(stderr, "fake_cuda: buffer address at unaligned blob offset %zu\n", off);
      status = 6;
    }
  }
  std::ostringstream o;
  o << "{\n  \"entry\": " << jstr(L.entry) << ",\n  \"launch_api\": " << jstr(L.api)
    << ",\n  \"grid\": [" << L.grid[0] << ", " << L.grid[1] << ", " << L.grid[2] << "]"
    << ",\n  \"block\": [" << L.block[0] << ", " << L.block[1] << ", " << L.block[2] << "]"
    << ",\n  \"cluster\": [" << L.cluster[0] << ", " << L.cluster[1] << ", " << L.cluster[2] << "]"
    << ",\n  \"cluster_attribute\": " << (L.cluster_given ? "true" : "false")
    << ",\n  \"shared_bytes\": " << L.smem << ",\n  \"attributes\": [";
  for (std::size_t i = 0; i < L.attributes.size(); ++i) o << (i ? ", " : "") << jstr(L.attributes[i]);
  o << "],\n  \"params\": [";
  for (std::size_t i = 0; i < L.params.size(); ++i)
    o << (i ? ", " : "") << "{\"name\": " << jstr(L.params[i].name) << ", \"offset\": " << L.params[i].offset
      << ", \"bytes\": " << L.params[i].bytes << ", \"align\": " << L.params[i].align << "}";
  o << "],\n  \"param_bytes\": " << blob.size() << ",\n  \"param_blob\": " << jstr(hex(blob))
    << ",\n  \"pointers\": [" << ptrs.str() << "],\n  \"tensormaps\": [";
  for (std::size_t i = 0; i < maps.size(); ++i)
    o << (i ? ", " : "") << "{\"offset\": " << maps[i].first << ", \"encode\": " << maps[i].second << "}";
  o << "],\n  \"encodes\": [";
  for (std::size_t i = 0; i < s.encodes.size(); ++i) o << (i ? ",\n    " : "\n    ") << encode_json(s.encodes[i]);
  o << "],\n  \"buffers\": [";
  for (std::size_t i = 0; i < s.buffers.size(); ++i) {
    const Buffer& b = s.buffers[i];
    o << (i ? ",\n    " : "\n    ") << "{\"name\": " << jstr(b.name) << ", \"role\": " << jstr(b.role)
      << ", \"dtype\": " << jstr(b.dtype) << ", \"storage\": " << jlist(b.storage) << ", \"bytes\": " << b.bytes
      << ", \"address\": " << b.address << "}";
  }
  o << "],\n  \"notes\": {";
  for (std::size_t i = 0; i < s.notes.size(); ++i)
    o << (i ? ", " : "") << jstr(s.notes[i].first) << ": " << s.notes[i].second;
  o << "},\n  \"runtime_calls\": [";
  for (std::size_t i = 0; i < s.calls.size(); ++i) o << (i ? ", " : "") << jstr(s.calls[i]);
  o << "]\n}\n";
  std::fputs(o.str().c_str(), stdout);
  return status;
}

}  // namespace tcemu_rec

// ====================================================================================== the CUDA driver
extern "C" CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap* map, CUtensorMapDataType dtype, cuuint32_t rank, void* address, const cuuint64_t* dims,
    const cuuint64_t* strides, const cuuint32_t* box, const cuuint32_t* estrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  if (rank < 1 || rank > 5) die("cuTensorMapEncodeTiled: rank %u", rank);
  Encode e;
  e.dtype = dtype; e.rank = static_cast<int>(rank); e.interleave = interleave; e.swizzle = swizzle;
  e.l2 = l2; e.oob = oob;
  e.address = reinterpret_cast<uint64_t>(address);
  e.dims.assign(dims, dims + rank);
  e.strides.assign(strides, strides + rank - 1);
  e.box.assign(box, box + rank);
  e.estrides.assign(estrides, estrides + rank);
  uint32_t idx = static_cast<uint32_t>(S().encodes.size());
  S().encodes.push_back(e);
  S().calls.push_back("cuTensorMapEncodeTiled");
  uint8_t* p = reinterpret_cast<uint8_t*>(map);
  std::memcpy(p, kMapMagic, 8);
  std::memcpy(p + 8, &idx, 4);
  for (int j = 12; j < 128; ++j) p[j] = static_cast<uint8_t>(0xA5 ^ j ^ idx);
  return CUDA_SUCCESS;
}

// ===================================================================================== the CUDA runtime
extern "C" {

void** CUDARTAPI __cudaRegisterFatBinary(void*) {
  static void* handle = nullptr;
  return &handle;
}
void CUDARTAPI __cudaRegisterFatBinaryEnd(void**) {}
void CUDARTAPI __cudaUnregisterFatBinary(void**) {}
void CUDARTAPI __cudaRegisterFunction(void**, const char* host_fun, char* device_fun, const char*, int, uint3*,
                                      uint3*, dim3*, dim3*, int*) {
  S().kernels[host_fun] = device_fun;
}
void CUDARTAPI __cudaRegisterVar(void**, char*, char*, const char*, int, size_t, int, int) {}
void CUDARTAPI __cudaRegisterManagedVar(void**, void**, char*, const char*, int, size_t, int, int) {}
char CUDARTAPI __cudaInitModule(void**) { return 1; }

cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t* kernel, const void* fun) {
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void*>(fun));
  return cudaSuccess;
}

unsigned CUDARTAPI __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t smem, struct CUstream_st*) {
  S().pending_grid = grid;
  S().pending_block = block;
  S().pending_smem = smem;
  S().pending = true;
  return 0;
}

cudaError_t CUDARTAPI __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* smem, void* stream) {
  if (!S().pending) die("__cudaPopCallConfiguration without a pushed configuration");
  *grid = S().pending_grid;
  *block = S().pending_block;
  *smem = S().pending_smem;
  *static_cast<cudaStream_t*>(stream) = nullptr;
  S().pending = false;
  return cudaSuccess;
}

cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t smem,
                                         cudaStream_t) {
  record_launch("<<<>>>", reinterpret_cast<const void*>(kernel), grid, block, smem, args, nullptr, {});
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t smem,
                                       cudaStream_t) {
  record_launch("cudaLaunchKernel", func, grid, block, smem, args, nullptr, {});
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  const unsigned* cluster = nullptr;
  unsigned c[3];
  std::vector<std::string> attrs;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const cudaLaunchAttribute& a = config->attrs[i];
    if (a.id == cudaLaunchAttributeClusterDimension) {
      c[0] = a.val.clusterDim.x; c[1] = a.val.clusterDim.y; c[2] = a.val.clusterDim.z;
      cluster = c;
    } else if (a.id == cudaLaunchAttributeProgrammaticStreamSerialization) {
      attrs.push_back("ProgrammaticStreamSerialization=" + std::to_string(a.val.programmaticStreamSerializationAllowed));
    } else {
      die("cudaLaunchKernelExC: launch attribute %d is not recorded", static_cast<int>(a.id));
    }
  }
  record_launch("cudaLaunchKernelExC", func, config->gridDim, config->blockDim, config->dynamicSmemBytes, args,
                cluster, attrs);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  const char* name = attr == cudaFuncAttributeMaxDynamicSharedMemorySize ? "MaxDynamicSharedMemorySize"
                     : attr == cudaFuncAttributeNonPortableClusterSizeAllowed ? "NonPortableClusterSizeAllowed"
                     : attr == cudaFuncAttributePreferredSharedMemoryCarveout ? "PreferredSharedMemoryCarveout"
                     : nullptr;
  if (!name) die("cudaFuncSetAttribute: attribute %d is not recorded", static_cast<int>(attr));
  S().func_attributes[func].push_back(std::string(name) + "=" + std::to_string(value));
  S().calls.push_back("cudaFuncSetAttribute");
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGetLastError(void) { return cudaSuccess; }
cudaError_t CUDARTAPI cudaPeekAtLastError(void) { return cudaSuccess; }
const char* CUDARTAPI cudaGetErrorString(cudaError_t) { return "tcemu fake CUDA runtime (no GPU)"; }
const char* CUDARTAPI cudaGetErrorName(cudaError_t) { return "tcemu_fake_runtime"; }
cudaError_t CUDARTAPI cudaGetDevice(int* device) { *device = 0; S().calls.push_back("cudaGetDevice"); return cudaSuccess; }
cudaError_t CUDARTAPI cudaSetDevice(int device) {
  if (device != 0) die("cudaSetDevice(%d): the fake machine has one GPU", device);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }

// NVIDIA H100 80GB HBM3 (SXM5): the values CUTLASS's host code reads (KernelHardwareInfo, tile schedulers,
// shared-memory checks).
constexpr int kSmCount = 132;
constexpr int kSmemOptin = 232448;   // 227 KiB

cudaError_t CUDARTAPI cudaGetDeviceProperties(struct cudaDeviceProp* p, int device) {
  if (device != 0) die("cudaGetDeviceProperties(%d): the fake machine has one GPU", device);
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "NVIDIA H100 80GB HBM3 (tcemu fake runtime)");
  p->major = 9; p->minor = 0;
  p->multiProcessorCount = kSmCount;
  p->sharedMemPerBlock = 49152;
  p->sharedMemPerBlockOptin = kSmemOptin;
  p->sharedMemPerMultiprocessor = 233472;
  p->regsPerBlock = 65536; p->regsPerMultiprocessor = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024; p->maxThreadsPerMultiProcessor = 2048;
  p->maxThreadsDim[0] = 1024; p->maxThreadsDim[1] = 1024; p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647; p->maxGridSize[1] = 65535; p->maxGridSize[2] = 65535;
  p->totalGlobalMem = 85520809984ull;
  p->l2CacheSize = 52428800;
  p->clusterLaunch = 1;
  S().calls.push_back("cudaGetDeviceProperties");
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  if (device != 0) die("cudaDeviceGetAttribute(device %d): the fake machine has one GPU", device);
  switch (attr) {
    case cudaDevAttrMultiProcessorCount: *value = kSmCount; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = kSmemOptin; break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrClusterLaunch: *value = 1; break;
    case cudaDevAttrL2CacheSize: *value = 52428800; break;
    default: die("cudaDeviceGetAttribute: attribute %d has no fake value", static_cast<int>(attr));
  }
  S().calls.push_back("cudaDeviceGetAttribute(" + std::to_string(static_cast<int>(attr)) + ")");
  return cudaSuccess;
}

static cudaError_t entry_point(const char* symbol, void** fn, enum cudaDriverEntryPointQueryResult* status) {
  if (std::strcmp(symbol, "cuTensorMapEncodeTiled") != 0) die("cudaGetDriverEntryPoint(%s) has no stand-in", symbol);
  *fn = reinterpret_cast<void*>(&cuTensorMapEncodeTiled);
  if (status) *status = cudaDriverEntryPointSuccess;
  S().calls.push_back(std::string("cudaGetDriverEntryPoint(") + symbol + ")");
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int, unsigned long long,
                                                       enum cudaDriverEntryPointQueryResult* status) {
  return entry_point(symbol, fn, status);
}

cudaError_t CUDARTAPI cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned long long,
                                              enum cudaDriverEntryPointQueryResult* status) {
  return entry_point(symbol, fn, status);
}

// Clusters of one kernel that fit the fake H100 at once: one CTA per SM (the kernels here take more than half
// of an SM's shared memory), so 132 / cluster size. Only the persistent tile schedulers read it, to size a
// grid that the problem's tile count truncates anyway for the small problems recorded here.
cudaError_t CUDARTAPI cudaOccupancyMaxActiveClusters(int* clusters, const void*, const cudaLaunchConfig_t* config) {
  unsigned size = 1;
  for (unsigned i = 0; i < config->numAttrs; ++i)
    if (config->attrs[i].id == cudaLaunchAttributeClusterDimension)
      size = config->attrs[i].val.clusterDim.x * config->attrs[i].val.clusterDim.y * config->attrs[i].val.clusterDim.z;
  *clusters = kSmCount / static_cast<int>(size);
  S().calls.push_back("cudaOccupancyMaxActiveClusters=" + std::to_string(*clusters));
  return cudaSuccess;
}

// Calls a builder must never reach (device memory, copies, timing): referenced by code that is compiled in
// (the tutorial's main, thrust), stopped here by name if it ever runs.
#define TCEMU_NEVER(name, ...) \
  cudaError_t CUDARTAPI name(__VA_ARGS__) { die(#name " called: a launch-record builder has no device"); }
TCEMU_NEVER(cudaMalloc, void**, size_t)
TCEMU_NEVER(cudaFree, void*)
TCEMU_NEVER(cudaMemcpyAsync, void*, const void*, size_t, enum cudaMemcpyKind, cudaStream_t)
TCEMU_NEVER(cudaMemcpy, void*, const void*, size_t, enum cudaMemcpyKind)
TCEMU_NEVER(cudaMemsetAsync, void*, int, size_t, cudaStream_t)
TCEMU_NEVER(cudaMemGetInfo, size_t*, size_t*)
TCEMU_NEVER(cudaEventCreate, cudaEvent_t*)
TCEMU_NEVER(cudaEventDestroy, cudaEvent_t)
TCEMU_NEVER(cudaEventElapsedTime, float*, cudaEvent_t, cudaEvent_t)
TCEMU_NEVER(cudaEventRecord, cudaEvent_t, cudaStream_t)
TCEMU_NEVER(cudaEventSynchronize, cudaEvent_t)
TCEMU_NEVER(cudaOccupancyMaxActiveBlocksPerMultiprocessor, int*, const void*, int, size_t)
#undef TCEMU_NEVER

}  // extern "C"
