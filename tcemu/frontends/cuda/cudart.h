// Shared by cudart.cpp (reporting, device memory, Python, registration and launches, driver entry points) and
// cudart_api.cpp (the device, error, memory, stream and event calls of the runtime API): tcemu's libcudart.so.
#pragma once
#include <Python.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

extern "C" [[noreturn]] void tcemu_unsupported(const char* name, void* caller);

namespace tcemu_rt {

constexpr int kExitFault = 1;     // a kernel fault (tcemu's "findings" status)
constexpr int kExitRefused = 2;   // an unsupported call or a program tcemu cannot run (tcemu's "bad input")
constexpr int kExitInternal = 3;  // tcemu's own Python side failed

extern std::recursive_mutex g_lock;  // one API call at a time (launches run on the interpreter, one after another)
using Guard = std::lock_guard<std::recursive_mutex>;

// A call site: the stack when it happened, resolved only when a report names it.
struct Site {
  void* pc[10];
  int n = 0;
};

Site here();
// the first frame of the program's own code (past this library, the CUDA headers' wrappers, nvcc's stub of kernel)
std::string where(const Site& s, const char* kernel = nullptr);
[[noreturn]] void stop(int status, const char* fmt, ...);
void warn(const char* fmt, ...);
bool env_flag(const char* name);
bool blackwell();

extern thread_local cudaError_t t_last;
extern cudaError_t g_sticky;  // a launch failure: every later call that synchronises returns it
cudaError_t ret(cudaError_t e);
struct ErrorText { int code; const char* name; const char* text; };
const ErrorText* error_text(int code);

struct Alloc {
  std::size_t size, mapped;
  const char* kind;  // "cudaMalloc", "cudaMallocHost", ...
  Site site;
  bool device;       // device memory (else pinned host memory, still device-accessible)
};

struct Freed { std::size_t size; const char* kind; Site site; };

struct Memory {
  char* base = nullptr;
  std::size_t used = 0;
  std::map<uintptr_t, Alloc> live;
  std::map<uintptr_t, Freed> freed;
  std::size_t double_frees = 0;
};

Memory& M();
void* carve(std::size_t size, const char* kind, bool device);
const std::pair<const uintptr_t, Alloc>* find_alloc(const void* p, std::size_t n = 1);
cudaError_t release(void* p, const char* api, void* caller);
cudaError_t check_range(const char* api, const char* what, const void* p, std::size_t n, void* caller);
bool is_device(const void* p);
void ensure_at_exit();

struct Device {
  const char* name;
  int major, minor, sms, l2, smem_optin, smem_sm, clock_khz, mem_clock_khz, bus_width;
  unsigned long long memory;
};
const Device& dev();

using Clock = std::chrono::steady_clock;
struct Event { Clock::time_point t; bool recorded = false; };
struct Stream { int id; };

}  // namespace tcemu_rt
