// Stream capture and CUDA graphs of tcemu's libcudart.so. Between cudaStreamBeginCapture and cudaStreamEndCapture,
// the work a stream receives (kernel launches, cudaMemcpyAsync / cudaMemsetAsync and their 2D, symbol and driver
// forms, cudaLaunchHostFunc, cudaGraphLaunch: a child graph) is checked as the call would be and recorded as a
// node instead of run, depending on the stream's last work; a launch's parameter bytes are copied then, as CUDA
// copies them. An event recorded in a capturing stream holds that stream's dependency set; a stream that waits on
// it joins the capture (multi-stream capture), its work depending on that set, and must be joined back into the
// origin stream before cudaStreamEndCapture (else cudaErrorStreamCaptureUnjoined, as CUDA does).
// cudaGraphInstantiate copies the nodes in launch order (build_exec); cudaGraphLaunch runs them one after another
// on the calling thread (streams here run synchronously). The explicit graph-building calls: cudart_graph_api.cpp.
#include "cudart.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <queue>
#include <set>

using namespace tcemu_rt;

namespace tcemu_rt {

Graph::~Graph() {
  for (Node* n : nodes) {
    delete n->child;
    delete n;
  }
}

static Stream* stream_object(cudaStream_t s) {
  // the legacy and per-thread default streams are no Stream objects, and cannot capture
  if (!s || s == cudaStreamLegacy || s == cudaStreamPerThread) return nullptr;
  return reinterpret_cast<Stream*>(s);
}

Stream* capturing(cudaStream_t s) {
  Stream* st = stream_object(s);
  return st && st->capture ? st : nullptr;
}

static std::map<unsigned long long, Capture*>& active() {   // the captures under way, by id
  static auto* a = new std::map<unsigned long long, Capture*>;
  return *a;
}
unsigned long long capture_id(cudaStream_t s) {
  Stream* st = capturing(s);
  return st ? st->capture->id : 0;
}
bool capture_active(unsigned long long id) { return active().count(id) != 0; }

Node* new_node(Graph* g, Node::Kind kind, const char* api, const std::vector<Node*>& deps) {
  Node* n = new Node();
  n->kind = kind;
  n->api = api;
  n->owner = g;
  n->deps = deps;
  g->nodes.push_back(n);
  return n;
}

Node* add_node(Stream* s, Node::Kind kind, const char* api) {
  Node* n = new_node(s->capture->graph, kind, api, s->tail);
  s->tail = {n};
  return n;
}

cudaError_t capture_copy(Stream* s, const char* api, void* dst, const void* src, std::size_t n, cudaMemcpyKind kind) {
  cudaError_t e = copy(api, dst, src, n, kind, nullptr, false);
  if (e != cudaSuccess) return e;
  Node* node = add_node(s, Node::kMemcpy, api);
  node->dst = dst;
  node->src = src;
  node->n = n;
  node->copy_kind = kind;
  return cudaSuccess;
}

cudaError_t capture_fill(Stream* s, const char* api, void* dst, unsigned value, std::size_t count, std::size_t elem) {
  Guard lock(g_lock);
  cudaError_t e = check_range(api, "destination", dst, count * elem, nullptr);
  if (e != cudaSuccess) return ret(e);
  Node* node = add_node(s, Node::kMemset, api);
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

// one node, as its call would have run outside a graph (a child graph's nodes are expanded by build_exec)
cudaError_t run_node(const Node& n) {
  switch (n.kind) {
    case Node::kKernel:
      if (g_sticky != cudaSuccess) return ret(g_sticky);
      return run_kernel(n.api, n.func, n.grid, n.block, n.cluster, n.smem, nullptr, &n.params, n.cooperative);
    case Node::kMemcpy:
      for (std::size_t r = 0; r < n.height; ++r) {
        cudaError_t e = copy(n.api, static_cast<char*>(n.dst) + r * n.dpitch,
                             static_cast<const char*>(n.src) + r * n.spitch, n.n, n.copy_kind, nullptr);
        if (e != cudaSuccess) return e;
      }
      return cudaSuccess;
    case Node::kMemset:
      for (std::size_t r = 0; r < n.height; ++r) {
        char* row = static_cast<char*>(n.dst) + r * n.dpitch;
        if (n.elem == 1) {
          cudaError_t e = fill(n.api, row, static_cast<int>(n.value), n.n, nullptr);
          if (e != cudaSuccess) return e;
          continue;
        }
        cudaError_t e = fill(n.api, row, 0, n.n * n.elem, nullptr, false);
        if (e != cudaSuccess) return e;
        for (std::size_t i = 0; i < n.n; ++i) std::memcpy(row + i * n.elem, &n.value, n.elem);   // little-endian
      }
      return cudaSuccess;
    case Node::kHost:
      n.fn(n.data);
      return cudaSuccess;
    case Node::kEventRecord: {
      auto* ev = reinterpret_cast<Event*>(n.event);
      ev->t = Clock::now();
      ev->recorded = true;
      return cudaSuccess;
    }
    case Node::kEmpty:
    case Node::kEventWait:   // the event's work is done already: launches run one after another
    case Node::kChild:
      return cudaSuccess;
  }
  return cudaSuccess;
}

// Kahn's algorithm, the ready node added first going first: deterministic, and a legal order of the graph
bool launch_order(const Graph* g, std::vector<Node*>* order, std::vector<Node*>* cycle) {
  std::map<const Node*, std::size_t> index;
  for (std::size_t i = 0; i < g->nodes.size(); ++i) index[g->nodes[i]] = i;
  std::vector<std::size_t> waiting(g->nodes.size(), 0);
  std::vector<std::vector<std::size_t>> after(g->nodes.size());
  for (std::size_t i = 0; i < g->nodes.size(); ++i) {
    for (const Node* d : g->nodes[i]->deps) {
      after[index.at(d)].push_back(i);
      ++waiting[i];
    }
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<std::size_t>> ready;
  for (std::size_t i = 0; i < waiting.size(); ++i)
    if (!waiting[i]) ready.push(i);
  order->clear();
  while (!ready.empty()) {
    std::size_t i = ready.top();
    ready.pop();
    order->push_back(g->nodes[i]);
    for (std::size_t j : after[i])
      if (--waiting[j] == 0) ready.push(j);
  }
  if (order->size() == g->nodes.size()) return true;
  if (cycle) {
    cycle->clear();
    for (std::size_t i = 0; i < waiting.size(); ++i)
      if (waiting[i]) cycle->push_back(g->nodes[i]);
  }
  return false;
}

static const char* kind_name(Node::Kind k) {
  static const char* names[] = {"kernel", "memcpy", "memset", "host", "empty", "child graph", "event record",
                                "event wait"};
  return names[k];
}

// each node's kind (its first letter), dependencies by position and child graph: equal lists, same topology
std::vector<std::string> node_shapes(const Graph* g) {
  std::map<const Node*, std::size_t> index;
  for (std::size_t i = 0; i < g->nodes.size(); ++i) index[g->nodes[i]] = i;
  std::vector<std::string> out;
  for (const Node* n : g->nodes) {
    std::string s(1, static_cast<char>('a' + n->kind));
    for (const Node* d : n->deps) s += std::to_string(index.at(d)) + ",";
    if (n->child)
      for (const std::string& c : node_shapes(n->child)) s += "(" + c + ")";
    out.push_back(s);
  }
  return out;
}

static cudaError_t expand(const char* api, const Graph* g, GraphExec* x) {
  std::vector<Node*> order, cycle;
  if (!launch_order(g, &order, &cycle)) {
    std::map<const Node*, std::size_t> index;
    for (std::size_t i = 0; i < g->nodes.size(); ++i) index[g->nodes[i]] = i;
    std::string names;
    for (const Node* n : cycle)
      names += (names.empty() ? "" : ", ") + std::to_string(index[n]) + " (" + kind_name(n->kind) + ")";
    warn("%s: the graph's dependencies form a cycle: nodes %s (numbered in the order added, from 0) lie on it "
         "or after it (cudaErrorInvalidValue); called from %s", api, names.c_str(),
         where(here()).c_str());
    return ret(cudaErrorInvalidValue);
  }
  for (const Node* n : order) {
    if (n->kind == Node::kChild) {
      cudaError_t e = expand(api, n->child, x);
      if (e != cudaSuccess) return e;
      continue;
    }
    x->nodes.push_back(*n);
    x->nodes.back().deps.clear();
    x->nodes.back().child = nullptr;
    x->nodes.back().arg_ptrs.clear();
    x->origin.push_back({n});
  }
  return cudaSuccess;
}

cudaError_t build_exec(const char* api, const Graph* g, GraphExec* x) {
  x->nodes.clear();
  x->origin.clear();
  x->shape = node_shapes(g);
  return expand(api, g, x);
}

Graph* clone_graph(const Graph* g, std::map<const Node*, Node*>* map) {
  std::map<const Node*, Node*> local;
  std::map<const Node*, Node*>& m = map ? *map : local;
  auto* c = new Graph();
  for (const Node* n : g->nodes) {
    Node* k = new Node(*n);
    k->owner = c;
    k->arg_ptrs.clear();
    if (n->child) k->child = clone_graph(n->child, map);
    m[n] = k;
    c->nodes.push_back(k);
  }
  for (Node* k : c->nodes)
    for (Node*& d : k->deps) d = m.at(d);
  return c;
}

// cudaEventRecord on a capturing stream: the event stands for the stream's dependency set now (with
// cudaEventRecordExternal, after an event record node: the event is also recorded when the graph runs)
bool capture_record(cudaStream_t s, Event* ev, unsigned flags) {
  Stream* st = capturing(s);
  if (st && (flags & cudaEventRecordExternal)) add_node(st, Node::kEventRecord, "cudaEventRecordWithFlags")->event =
      reinterpret_cast<cudaEvent_t>(ev);
  ev->capture = st ? st->capture->id : 0;
  ev->nodes = st ? st->tail : std::vector<Node*>();
  return st != nullptr;
}

// the stream leaves its capture, which can no longer give a graph (the origin gone: the capture ends here)
void leave_capture(Stream* st, const char* api) {
  Capture* c = st->capture;
  warn("%s: stream %d takes part in a capture, which is invalidated; called from %s", api, st->id,
       where(here()).c_str());
  c->invalidated = true;
  c->streams.erase(std::find(c->streams.begin(), c->streams.end(), st));
  st->capture = nullptr;
  st->tail.clear();
  if (c->origin != st) return;
  for (Stream* member : c->streams) {
    member->capture = nullptr;
    member->tail.clear();
  }
  active().erase(c->id);
  delete c->graph;
  delete c;
}

// cudaStreamWaitEvent: an event of an active capture joins s into it (s's later work depends on the event's
// nodes, and on s's own when s takes part already); two captures never merge (cudaErrorStreamCaptureMerge); a
// capturing stream waits on an event recorded outside its capture only as an external event wait node
cudaError_t capture_wait(cudaStream_t s, Event* ev, unsigned flags) {
  Stream* st = stream_object(s);
  bool live = ev->capture && capture_active(ev->capture);
  if (st && st->capture && (!live || (flags & cudaEventWaitExternal))) {
    if (flags & cudaEventWaitExternal) {
      add_node(st, Node::kEventWait, "cudaStreamWaitEvent")->event = reinterpret_cast<cudaEvent_t>(ev);
      return cudaSuccess;
    }
    st->capture->invalidated = true;
    warn("cudaStreamWaitEvent: a capturing stream waits on an event recorded outside its capture: the dependency "
         "would cross the capture's boundary (cudaErrorStreamCaptureIsolation; cudaEventWaitExternal makes it an "
         "external event wait node); called from %s", where(here()).c_str());
    return ret(cudaErrorStreamCaptureIsolation);
  }
  if (!live) return cudaSuccess;   // an event recorded outside a capture: its work is done already
  if (!st) {
    warn("cudaStreamWaitEvent: the legacy default stream cannot join a capture (cudaErrorStreamCaptureImplicit); "
         "called from %s", where(here()).c_str());
    return ret(cudaErrorStreamCaptureImplicit);
  }
  if (st->capture && st->capture->id != ev->capture) {
    st->capture->invalidated = true;
    warn("cudaStreamWaitEvent: the stream takes part in another capture than the event's: two captures cannot "
         "merge (cudaErrorStreamCaptureMerge); called from %s", where(here()).c_str());
    return ret(cudaErrorStreamCaptureMerge);
  }
  if (!st->capture) {   // a fork: s joins the capture
    Capture* c = active().at(ev->capture);
    st->capture = c;
    st->tail = ev->nodes;
    c->streams.push_back(st);
    return cudaSuccess;
  }
  for (Node* n : ev->nodes)   // a join: s depends on its own work and the event's
    if (std::find(st->tail.begin(), st->tail.end(), n) == st->tail.end()) st->tail.push_back(n);
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
  auto* c = new Capture();
  c->graph = new Graph();
  c->id = next_id++;
  c->origin = st;
  c->streams = {st};
  st->capture = c;
  st->tail.clear();
  active()[c->id] = c;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  return begin_capture(s, mode);
}
cudaError_t CUDARTAPI cudaStreamBeginCapture_ptsz(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  return begin_capture(s, mode);
}

// every node some stream of the capture depends on now must be, or come before, one the origin depends on
static const Stream* unjoined(const Capture* c) {
  std::set<const Node*> before(c->origin->tail.begin(), c->origin->tail.end());
  std::vector<const Node*> todo(before.begin(), before.end());
  while (!todo.empty()) {
    const Node* n = todo.back();
    todo.pop_back();
    for (const Node* d : n->deps)
      if (before.insert(d).second) todo.push_back(d);
  }
  for (const Stream* st : c->streams)
    for (const Node* n : st->tail)
      if (!before.count(n)) return st;
  return nullptr;
}

static cudaError_t end_capture(cudaStream_t s, cudaGraph_t* graph) {
  Guard lock(g_lock);
  if (!graph) return ret(cudaErrorInvalidValue);
  Stream* st = stream_object(s);
  if (!st || !st->capture) return ret(cudaErrorIllegalState);
  Capture* c = st->capture;
  if (c->origin != st) {
    warn("cudaStreamEndCapture: stream %d joined the capture that stream %d began, and cannot end it "
         "(cudaErrorStreamCaptureUnmatched); called from %s", st->id, c->origin->id, where(here()).c_str());
    c->invalidated = true;
    return ret(cudaErrorStreamCaptureUnmatched);
  }
  const Stream* open = unjoined(c);
  if (open)
    warn("cudaStreamEndCapture: stream %d forked from the capture (cudaStreamWaitEvent) and its work was never joined "
         "back into stream %d, where the capture began: record an event after its last work and wait on it in "
         "stream %d (cudaErrorStreamCaptureUnjoined); called from %s", open->id, st->id, st->id,
         where(here()).c_str());
  for (Stream* member : c->streams) {
    member->capture = nullptr;
    member->tail.clear();
  }
  active().erase(c->id);
  bool invalidated = c->invalidated;
  Graph* g = c->graph;
  delete c;
  if (invalidated || open) {
    delete g;
    *graph = nullptr;
    return ret(open ? cudaErrorStreamCaptureUnjoined : cudaErrorStreamCaptureInvalidated);
  }
  *graph = reinterpret_cast<cudaGraph_t>(g);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) { return end_capture(s, graph); }
cudaError_t CUDARTAPI cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t* graph) { return end_capture(s, graph); }

static cudaStreamCaptureStatus status_of(cudaStream_t s) {
  Stream* st = capturing(s);
  if (!st) return cudaStreamCaptureStatusNone;
  return st->capture->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
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
  Stream* st = capturing(s);
  if (id && st) *id = st->capture->id;
  if (graph) *graph = reinterpret_cast<cudaGraph_t>(st ? st->capture->graph : nullptr);
  // the nodes the stream's next captured work depends on (valid until the stream's next call, as CUDA says)
  std::size_t n = st ? st->tail.size() : 0;
  if (deps) *deps = n ? reinterpret_cast<const cudaGraphNode_t*>(st->tail.data()) : nullptr;
  if (edges) *edges = nullptr;   // every captured edge is a default one
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
    *count = std::min(*count, all.size());
    return cudaSuccess;
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
    case Node::kEmpty: *type = cudaGraphNodeTypeEmpty; break;
    case Node::kChild: *type = cudaGraphNodeTypeGraph; break;
    case Node::kEventRecord: *type = cudaGraphNodeTypeEventRecord; break;
    case Node::kEventWait: *type = cudaGraphNodeTypeWaitEvent; break;
  }
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t graph) {
  Guard lock(g_lock);
  if (!graph) return ret(cudaErrorInvalidValue);
  delete reinterpret_cast<Graph*>(graph);
  return cudaSuccess;
}

static cudaError_t instantiate(const char* api, cudaGraphExec_t* exec, cudaGraph_t graph) {
  Guard lock(g_lock);
  if (!exec || !graph) return ret(cudaErrorInvalidValue);
  auto* x = new GraphExec();
  cudaError_t e = build_exec(api, reinterpret_cast<Graph*>(graph), x);
  if (e != cudaSuccess) {
    delete x;
    *exec = nullptr;
    return e;
  }
  *exec = reinterpret_cast<cudaGraphExec_t>(x);
  return cudaSuccess;
}
// flags (auto-free on launch, upload, device launch, priority) change nothing when graphs run in order here
cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  return instantiate("cudaGraphInstantiate", exec, graph);
}
cudaError_t CUDARTAPI cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  return instantiate("cudaGraphInstantiateWithFlags", exec, graph);
}
static cudaError_t instantiate_params(cudaGraphExec_t* exec, cudaGraph_t graph, cudaGraphInstantiateParams* p) {
  if (!p) return ret(cudaErrorInvalidValue);
  cudaError_t e = instantiate("cudaGraphInstantiateWithParams", exec, graph);
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

// a graph launched into a capturing stream: a child graph node holding the executable's nodes as a chain (their
// launch order, a legal order of the graph they came from)
static cudaError_t capture_graph(Stream* st, const GraphExec* x) {
  Node* child = add_node(st, Node::kChild, "cudaGraphLaunch");
  child->child = new Graph();
  std::vector<Node*> last;
  for (const Node& n : x->nodes) {
    Node* k = new_node(child->child, n.kind, n.api, last);
    Graph* owner = k->owner;
    *k = n;
    k->owner = owner;
    k->deps = last;
    last = {k};
  }
  return cudaSuccess;
}

static cudaError_t graph_launch(cudaGraphExec_t exec, cudaStream_t s) {
  Guard lock(g_lock);
  if (!exec) return ret(cudaErrorInvalidValue);
  if (Stream* st = capturing(s)) return capture_graph(st, reinterpret_cast<GraphExec*>(exec));
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
