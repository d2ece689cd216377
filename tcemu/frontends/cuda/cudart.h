// Shared by cudart.cpp (reporting, device memory, Python, registration and launches, driver entry points),
// cudart_api.cpp (the device, error, memory, stream and event calls of the runtime API), cudart_vars.cpp
// (__device__ / __constant__ variables and the symbol calls), cudart_graph.cpp (stream capture and graphs),
// cudart_graph_api.cpp (the explicit graph-building calls), cudart_misc.cpp (cooperative launches, peers, 3-D
// memory, stream attributes, occupancy, small queries), cudart_memory.cpp (registered, managed and pool memory),
// cudart_errors.cpp (error names), cudart_texture.cpp (CUDA arrays, texture and surface objects): tcemu's
// libcudart.so.
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
  const char* symbol = nullptr;  // a __device__ / __constant__ variable's memory: "__device__ NAME" (never freed)
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

// the embedded Python (cudart.cpp): tcemu.frontends.cuda.runtime, and FN(*args) on it (args consumed; GIL held)
PyObject* runtime_module();
long long call_tuple(const char* fn, PyObject* args);
constexpr int kLaunchOk = 0;          // runtime.py's OK
const void* fatbin_data(int index);   // the fatbinary of registration `index`
long long call_python(const char* fn, const char* fmt, ...);   // FN(*Py_BuildValue(fmt, ...)), GIL taken here
const std::string& kernel_name(const void* func, int* fatbin);  // a registered kernel's PTX name and fatbinary

// the host shadow of a __device__ / __constant__ variable (what the program names it by) -> its device memory
struct Var { int fatbin; std::string name; std::size_t size; bool constant; char* device; bool initialised = false; };
std::map<const void*, Var>& vars();
void init_vars(int fatbin);         // the PTX initialisers, written before a fatbinary's variables are first used
PyObject* symbol_list(int fatbin);  // [(PTX name, device address, bytes)] of a fatbinary's variables, for a launch

// copy / fill / launch check their arguments, then run (run: false checks only: a captured call)
cudaError_t copy(const char* api, void* dst, const void* src, std::size_t n, cudaMemcpyKind kind, void* caller,
                 bool run = true);
cudaError_t fill(const char* api, void* dst, int value, std::size_t n, void* caller, bool run = true);
cudaError_t launch(const char* api, const void* func, dim3 grid, dim3 block, dim3 cluster, std::size_t smem,
                   void** args, void* caller, cudaStream_t stream, bool cooperative = false);
// a registered kernel's PTX name, whether cudaFuncAttributeNonPortableClusterSizeAllowed is set, and its dynamic
// shared memory limit; false: func is no registered kernel
bool kernel_info(const void* func, const std::string** name, bool* nonportable, int* max_dynamic_smem);

// CUDA graphs (cudart_graph.cpp: stream capture, instantiation and launch; cudart_graph_api.cpp: the explicit
// graph-building calls). Captured and built graphs share one node representation: a node holds its work and the
// nodes it depends on; cudaGraphLaunch runs the nodes one after another on the calling thread in a deterministic
// topological order (among ready nodes, the one added first), a legal order of the graph.
struct Graph;
struct Node {
  enum Kind { kKernel, kMemcpy, kMemset, kHost, kEmpty, kChild, kEventRecord, kEventWait } kind;
  const char* api;                      // the call that made it
  Graph* owner = nullptr;               // the graph holding it
  std::vector<Node*> deps;              // the nodes it depends on (its incoming edges, in the order added)
  // kernel: the registered host function, its configuration and the parameter bytes, copied when set
  const void* func = nullptr;
  dim3 grid, block, cluster;
  std::size_t smem = 0;
  bool cooperative = false;             // a captured cudaLaunchCooperativeKernel
  std::string params;
  // memcpy / memset: `height` rows of n bytes (memset: n elements of elem = 1, 2 or 4 bytes), rows dpitch /
  // spitch bytes apart
  void* dst = nullptr;
  const void* src = nullptr;
  std::size_t n = 0, elem = 1, height = 1, dpitch = 0, spitch = 0;
  cudaMemcpyKind copy_kind = cudaMemcpyDefault;
  unsigned value = 0;
  // host function
  cudaHostFn_t fn = nullptr;
  void* data = nullptr;
  Graph* child = nullptr;               // child graph node: its own copy of the graph (owned by this node)
  cudaEvent_t event = nullptr;          // event record / wait node
  // a kernel node's argument pointers into `params` (cudaGraphKernelNodeGetParams), made on first request
  std::vector<void*> arg_ptrs;
};
struct Graph { std::vector<Node*> nodes; ~Graph(); };   // nodes in the order added
Graph* clone_graph(const Graph* g, std::map<const Node*, Node*>* map = nullptr);
// g's nodes in launch order (among ready nodes the one added first), or false: a cycle (the nodes on it in *cycle)
bool launch_order(const Graph* g, std::vector<Node*>* order, std::vector<Node*>* cycle);
struct GraphExec {
  std::vector<Node> nodes;                   // launch order, child graphs expanded in place (copies)
  std::vector<std::vector<const Node*>> origin;   // the graph nodes each stands for (cudaGraphExec*SetParams)
  std::vector<std::string> shape;            // the topology instantiated (cudaGraphExecUpdate compares it)
};
std::vector<std::string> node_shapes(const Graph* g);   // per node: its kind and edges, its child graph's too
cudaError_t build_exec(const char* api, const Graph* g, GraphExec* x);   // cudaErrorInvalidValue on a cycle
// a kernel node's launch from cudaKernelNodeParams, checked as a launch is (into n's kernel fields)
cudaError_t kernel_node(const char* api, Node* n, const cudaKernelNodeParams* p);
cudaError_t run_node(const Node& n);

using Clock = std::chrono::steady_clock;
struct Stream;
// one stream capture: its graph, the stream it began in and every stream joined into it through an event
struct Capture {
  Graph* graph = nullptr;
  unsigned long long id = 0;
  bool invalidated = false;     // a call broke the capture: cudaStreamEndCapture returns no graph
  Stream* origin = nullptr;
  std::vector<Stream*> streams; // the origin first, then the joined streams, in the order they joined
};
// an event recorded in a capture holds the capturing stream's dependency set then (a wait joins it)
struct Event {
  Clock::time_point t;
  bool recorded = false;
  unsigned long long capture = 0;   // recorded in capture N (0: outside a capture)
  std::vector<Node*> nodes;
};
struct Stream {
  int id;
  Capture* capture = nullptr;   // the capture this stream takes part in, or null
  std::vector<Node*> tail;      // the nodes the stream's next captured work depends on
};
Stream* capturing(cudaStream_t s);         // s, when it takes part in a capture; else null
unsigned long long capture_id(cudaStream_t s);   // its capture's id, or 0
bool capture_active(unsigned long long id);
// cudaEventRecord[WithFlags] in a capture (true), else false
bool capture_record(cudaStream_t s, Event* ev, unsigned flags);
// cudaStreamWaitEvent: joins s into the event's capture
cudaError_t capture_wait(cudaStream_t s, Event* ev, unsigned flags);
void leave_capture(Stream* s, const char* api);   // a stream destroyed during a capture: the capture is invalidated
Node* add_node(Stream* s, Node::Kind kind, const char* api);   // depends on s's tail, and becomes it
Node* new_node(Graph* g, Node::Kind kind, const char* api, const std::vector<Node*>& deps);
// a copy (cudaMemcpyAsync ...) or fill of elem-byte values on a capturing stream: checked now, run with the graph
cudaError_t capture_copy(Stream* s, const char* api, void* dst, const void* src, std::size_t n, cudaMemcpyKind kind);
cudaError_t capture_fill(Stream* s, const char* api, void* dst, unsigned value, std::size_t count, std::size_t elem);
std::string kernel_params(const void* func, void** args);   // the parameter bytes of a launch, for a kernel node
cudaError_t run_kernel(const char* api, const void* func, dim3 grid, dim3 block, dim3 cluster, std::size_t smem,
                       void** args, const std::string* params, bool cooperative = false);
// cudart_texture.cpp: a live CUDA array as a pitched pointer over its elements, and its element bytes (cudaMemcpy3D)
bool array_pitched(cudaArray_const_t a, cudaPitchedPtr* p, std::size_t* esize);
// cudart_memory.cpp: an allocation of a stream-ordered memory pool (cudaMallocAsync: the device's current pool)
cudaError_t pool_alloc(const char* api, void** p, std::size_t size, cudaMemPool_t pool);

}  // namespace tcemu_rt
