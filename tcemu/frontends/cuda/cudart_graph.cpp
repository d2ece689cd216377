// Stream capture and CUDA graphs of tcemu's libcudart.so. Between cudaStreamBeginCapture and cudaStreamEndCapture,
// the work a stream receives (kernel launches, cudaMemcpyAsync / cudaMemsetAsync and their 2D, symbol and driver
// forms, cudaLaunchHostFunc) is checked as the call would be and recorded as a node instead of run; a launch's
// parameter bytes are copied then, as CUDA copies them. cudaGraphInstantiate snapshots the nodes, and
// cudaGraphLaunch runs them in capture order on the calling thread (streams here run synchronously, and a
// single-stream capture's nodes form a chain, so capture order is a valid order). One stream captures at a time
// per capture: joining another stream in through an event is refused by name (cudart_api.cpp). The explicit
// graph-building calls (cudaGraphCreate, cudaGraphAdd*Node ...) stay unsupported stubs.
#include "cudart.h"

#include <atomic>
#include <cstring>
#include <set>

using namespace tcemu_rt;

namespace tcemu_rt {

Graph::~Graph() {
  for (Node* n : nodes) delete n;
}

static Stream* stream_object(cudaStream_t s) {
  // the legacy and per-thread default streams are no Stream objects, and cannot capture
  if (!s || s == cudaStreamLegacy || s == cudaStreamPerThread) return nullptr;
  return reinterpret_cast<Stream*>(s);
}

Graph* capturing(cudaStream_t s) {
  Stream* st = stream_object(s);
  return st ? st->capture : nullptr;
}

static std::set<unsigned long long>& active() {
  static auto* a = new std::set<unsigned long long>;
  return *a;
}
unsigned long long capture_id(cudaStream_t s) {
  Stream* st = stream_object(s);
  return st && st->capture ? st->capture_id : 0;
}
bool capture_active(unsigned long long id) { return active().count(id) != 0; }

Node* add_node(Graph* g, Node::Kind kind, const char* api) {
  Node* n = new Node();
  n->kind = kind;
  n->api = api;
  g->nodes.push_back(n);
  return n;
}

cudaError_t capture_copy(Graph* g, const char* api, void* dst, const void* src, std::size_t n, cudaMemcpyKind kind) {
  cudaError_t e = copy(api, dst, src, n, kind, nullptr, false);
  if (e != cudaSuccess) return e;
  Node* node = add_node(g, Node::kMemcpy, api);
  node->dst = dst;
  node->src = src;
  node->n = n;
  node->copy_kind = kind;
  return cudaSuccess;
}

cudaError_t capture_fill(Graph* g, const char* api, void* dst, unsigned value, std::size_t count, std::size_t elem) {
  Guard lock(g_lock);
  cudaError_t e = check_range(api, "destination", dst, count * elem, nullptr);
  if (e != cudaSuccess) return ret(e);
  Node* node = add_node(g, Node::kMemset, api);
  node->dst = dst;
  node->value = value;
  node->n = count;
  node->elem = elem;
  return cudaSuccess;
}

// the parameter bytes of a launch of `func` from the program's argument pointers (runtime.param_blob)
std::string kernel_params(const void* func, void** args) {
  int fatbin = 0;
  const std::string& name = kernel_name(func, &fatbin);
  std::string blob(32768, '\0');   // CUDA 12.1+: at most 32764 bytes of parameters
  long long n = call_python("param_blob", "(KisKKn)", (unsigned long long)(uintptr_t)fatbin_data(fatbin), fatbin,
                            name.c_str(), (unsigned long long)(uintptr_t)args,
                            (unsigned long long)(uintptr_t)blob.data(), (Py_ssize_t)blob.size());
  if (n < 0) stop(kExitRefused, "the program ends here: tcemu cannot capture this launch of %s (above)", name.c_str());
  blob.resize(static_cast<std::size_t>(n));
  return blob;
}

// one node, as its call would have run outside the capture
static cudaError_t run_node(const Node& n) {
  switch (n.kind) {
    case Node::kKernel:
      if (g_sticky != cudaSuccess) return ret(g_sticky);
      return run_kernel(n.api, n.func, n.grid, n.block, n.cluster, n.smem, nullptr, &n.params);
    case Node::kMemcpy:
      return copy(n.api, n.dst, n.src, n.n, n.copy_kind, nullptr);
    case Node::kMemset: {
      if (n.elem == 1) return fill(n.api, n.dst, static_cast<int>(n.value), n.n, nullptr);
      cudaError_t e = fill(n.api, n.dst, 0, n.n * n.elem, nullptr, false);
      if (e != cudaSuccess) return e;
      auto* q = static_cast<uint32_t*>(n.dst);
      for (std::size_t i = 0; i < n.n; ++i) q[i] = n.value;
      return cudaSuccess;
    }
    case Node::kHost:
      n.fn(n.data);
      return cudaSuccess;
  }
  return cudaSuccess;
}

}  // namespace tcemu_rt

extern "C" {

static cudaError_t begin_capture(cudaStream_t s, cudaStreamCaptureMode mode) {
  static std::atomic<unsigned long long> next_id{1};
  Guard lock(g_lock);
  Stream* st = stream_object(s);
  if (!st) {
    warn("cudaStreamBeginCapture: the legacy default stream cannot capture (CUDA's rule; capture on a stream from "
         "cudaStreamCreate); called from %s", where(here()).c_str());
    return ret(cudaErrorStreamCaptureUnsupported);
  }
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed)
    return ret(cudaErrorInvalidValue);
  if (st->capture) return ret(cudaErrorIllegalState);
  st->capture = new Graph();
  st->invalidated = false;
  st->capture_id = next_id++;
  active().insert(st->capture_id);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  return begin_capture(s, mode);
}
cudaError_t CUDARTAPI cudaStreamBeginCapture_ptsz(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  return begin_capture(s, mode);
}

static cudaError_t end_capture(cudaStream_t s, cudaGraph_t* graph) {
  Guard lock(g_lock);
  if (!graph) return ret(cudaErrorInvalidValue);
  Stream* st = stream_object(s);
  if (!st || !st->capture) return ret(cudaErrorIllegalState);
  Graph* g = st->capture;
  st->capture = nullptr;
  active().erase(st->capture_id);
  if (st->invalidated) {
    delete g;
    *graph = nullptr;
    return ret(cudaErrorStreamCaptureInvalidated);
  }
  *graph = reinterpret_cast<cudaGraph_t>(g);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) { return end_capture(s, graph); }
cudaError_t CUDARTAPI cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t* graph) { return end_capture(s, graph); }

static cudaStreamCaptureStatus status_of(cudaStream_t s) {
  Stream* st = stream_object(s);
  if (!st || !st->capture) return cudaStreamCaptureStatusNone;
  return st->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
}
cudaError_t CUDARTAPI cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus* status) {
  Guard lock(g_lock);
  if (!status) return ret(cudaErrorInvalidValue);
  *status = status_of(s);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamIsCapturing_ptsz(cudaStream_t s, enum cudaStreamCaptureStatus* status) {
  return cudaStreamIsCapturing(s, status);
}

static cudaError_t capture_info(cudaStream_t s, cudaStreamCaptureStatus* status, unsigned long long* id,
                                cudaGraph_t* graph, const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                size_t* ndeps) {
  Guard lock(g_lock);
  if (!status) return ret(cudaErrorInvalidValue);
  *status = status_of(s);
  Stream* st = stream_object(s);
  Graph* g = st ? st->capture : nullptr;
  if (id && g) *id = st->capture_id;
  if (graph) *graph = reinterpret_cast<cudaGraph_t>(g);
  // the node the next captured call depends on: the last one (a single-stream capture is a chain)
  static thread_local cudaGraphNode_t last;
  std::size_t n = g && !g->nodes.empty() ? 1 : 0;
  if (n) last = reinterpret_cast<cudaGraphNode_t>(g->nodes.back());
  if (deps) *deps = n ? &last : nullptr;
  if (edges) *edges = nullptr;
  if (ndeps) *ndeps = n;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamGetCaptureInfo(cudaStream_t s, enum cudaStreamCaptureStatus* status,
                                               unsigned long long* id, cudaGraph_t* graph,
                                               const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                               size_t* ndeps) {
  return capture_info(s, status, id, graph, deps, edges, ndeps);
}
cudaError_t CUDARTAPI cudaStreamGetCaptureInfo_ptsz(cudaStream_t s, enum cudaStreamCaptureStatus* status,
                                                    unsigned long long* id, cudaGraph_t* graph,
                                                    const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                                    size_t* ndeps) {
  return capture_info(s, status, id, graph, deps, edges, ndeps);
}

cudaError_t CUDARTAPI cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  Guard lock(g_lock);
  if (!graph || !count) return ret(cudaErrorInvalidValue);
  const auto& all = reinterpret_cast<Graph*>(graph)->nodes;
  if (nodes) {
    for (std::size_t i = 0; i < *count; ++i)
      nodes[i] = i < all.size() ? reinterpret_cast<cudaGraphNode_t>(all[i]) : nullptr;
  }
  *count = all.size();
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType* type) {
  if (!node || !type) return ret(cudaErrorInvalidValue);
  switch (reinterpret_cast<Node*>(node)->kind) {
    case Node::kKernel: *type = cudaGraphNodeTypeKernel; break;
    case Node::kMemcpy: *type = cudaGraphNodeTypeMemcpy; break;
    case Node::kMemset: *type = cudaGraphNodeTypeMemset; break;
    case Node::kHost: *type = cudaGraphNodeTypeHost; break;
  }
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t graph) {
  Guard lock(g_lock);
  if (!graph) return ret(cudaErrorInvalidValue);
  delete reinterpret_cast<Graph*>(graph);
  return cudaSuccess;
}

static cudaError_t instantiate(cudaGraphExec_t* exec, cudaGraph_t graph) {
  Guard lock(g_lock);
  if (!exec || !graph) return ret(cudaErrorInvalidValue);
  auto* x = new GraphExec();
  for (const Node* n : reinterpret_cast<Graph*>(graph)->nodes) x->nodes.push_back(*n);
  *exec = reinterpret_cast<cudaGraphExec_t>(x);
  return cudaSuccess;
}
// flags (auto-free on launch, upload, device launch, priority) change nothing when graphs run in order here
cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  return instantiate(exec, graph);
}
cudaError_t CUDARTAPI cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  return instantiate(exec, graph);
}
static cudaError_t instantiate_params(cudaGraphExec_t* exec, cudaGraph_t graph, cudaGraphInstantiateParams* p) {
  if (!p) return ret(cudaErrorInvalidValue);
  cudaError_t e = instantiate(exec, graph);
  p->result_out = e == cudaSuccess ? cudaGraphInstantiateSuccess : cudaGraphInstantiateError;
  p->errNode_out = nullptr;
  return e;
}
cudaError_t CUDARTAPI cudaGraphInstantiateWithParams(cudaGraphExec_t* exec, cudaGraph_t graph,
                                                     cudaGraphInstantiateParams* p) {
  return instantiate_params(exec, graph, p);
}
cudaError_t CUDARTAPI cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t* exec, cudaGraph_t graph,
                                                          cudaGraphInstantiateParams* p) {
  return instantiate_params(exec, graph, p);
}

cudaError_t CUDARTAPI cudaGraphExecDestroy(cudaGraphExec_t exec) {
  Guard lock(g_lock);
  if (!exec) return ret(cudaErrorInvalidValue);
  delete reinterpret_cast<GraphExec*>(exec);
  return cudaSuccess;
}

static cudaError_t graph_launch(cudaGraphExec_t exec, cudaStream_t s) {
  Guard lock(g_lock);
  if (!exec) return ret(cudaErrorInvalidValue);
  if (capturing(s))
    stop(kExitRefused, "unsupported: cudaGraphLaunch into a capturing stream (a child graph; called from %s)",
         where(here()).c_str());
  if (g_sticky != cudaSuccess) return ret(g_sticky);
  for (const Node& n : reinterpret_cast<GraphExec*>(exec)->nodes) {
    cudaError_t e = run_node(n);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) { return graph_launch(exec, s); }
cudaError_t CUDARTAPI cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t s) { return graph_launch(exec, s); }

// uploading prepares a launch on a GPU: nothing to do here
cudaError_t CUDARTAPI cudaGraphUpload(cudaGraphExec_t exec, cudaStream_t) {
  return exec ? cudaSuccess : ret(cudaErrorInvalidValue);
}
cudaError_t CUDARTAPI cudaGraphUpload_ptsz(cudaGraphExec_t exec, cudaStream_t) {
  return exec ? cudaSuccess : ret(cudaErrorInvalidValue);
}

}  // extern "C"
