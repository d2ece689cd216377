// The explicit graph-building calls of tcemu's libcudart.so (CUDA 13.0 signatures): cudaGraphCreate, the
// cudaGraphAdd*Node calls, edges, node parameters, clones and cudaGraphExecUpdate. A node's parameters are checked
// and copied when they are set (a kernel node's argument bytes too, as CUDA copies kernelParams then); the nodes
// share cudart_graph.cpp's representation with captured graphs and run in its launch order.
#include "cudart.h"

#include <algorithm>
#include <cstring>

using namespace tcemu_rt;

namespace {

Graph* G(cudaGraph_t g) { return reinterpret_cast<Graph*>(g); }
Node* N(cudaGraphNode_t n) { return reinterpret_cast<Node*>(n); }
cudaGraphNode_t H(Node* n) { return reinterpret_cast<cudaGraphNode_t>(n); }

// a node list the program passes: every node of graph g, none twice
cudaError_t node_list(const char* api, Graph* g, const cudaGraphNode_t* deps, std::size_t count,
                      std::vector<Node*>* out) {
  out->clear();
  if (count && !deps) return ret(cudaErrorInvalidValue);
  for (std::size_t i = 0; i < count; ++i) {
    Node* d = N(deps[i]);
    if (!d || d->owner != g || std::find(out->begin(), out->end(), d) != out->end()) {
      warn("%s: dependency %zu is %s (cudaErrorInvalidValue); called from %s", api, i,
           !d ? "null" : d->owner != g ? "a node of another graph" : "listed twice", where(here()).c_str());
      return ret(cudaErrorInvalidValue);
    }
    out->push_back(d);
  }
  return cudaSuccess;
}

// a new node of `graph` after `deps`, once its parameters are set (set: fills the node, or returns the error)
template <typename Set>
cudaError_t add(const char* api, cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                std::size_t count, Node::Kind kind, Set set) {
  Guard lock(g_lock);
  if (!out || !graph) return ret(cudaErrorInvalidValue);
  std::vector<Node*> list;
  if (cudaError_t e = node_list(api, G(graph), deps, count, &list)) return e;
  Node scratch;
  scratch.kind = kind;
  scratch.api = api;
  if (cudaError_t e = set(&scratch)) return e;
  Node* n = new_node(G(graph), kind, api, list);
  Graph* owner = n->owner;
  *n = scratch;
  n->owner = owner;
  n->deps = list;
  *out = H(n);
  return cudaSuccess;
}

cudaError_t memcpy_node(const char* api, Node* n, const cudaMemcpy3DParms* p) {
  if (!p) return ret(cudaErrorInvalidValue);
  if (p->srcArray || p->dstArray)
    stop(kExitRefused, "unsupported: %s with a CUDA array (tcemu's memcpy nodes copy linear memory; cudaMemcpy3D "
         "copies arrays outside graphs); called from %s", api, where(here()).c_str());
  const cudaExtent& x = p->extent;
  if (x.depth > 1 || p->srcPos.z || p->dstPos.z)
    stop(kExitRefused, "unsupported: %s of a 3-D range (extent depth %zu, z %zu / %zu): tcemu's memcpy nodes copy "
         "1-D and 2-D ranges of linear memory; called from %s", api, x.depth, p->srcPos.z, p->dstPos.z,
         where(here()).c_str());
  std::size_t rows = x.depth == 0 ? 0 : x.height;
  const auto& s = p->srcPtr;
  const auto& d = p->dstPtr;
  if (rows > 1 && (s.pitch < p->srcPos.x + x.width || d.pitch < p->dstPos.x + x.width)) {
    warn("%s: rows of %zu bytes from x = %zu / %zu do not fit the pitches %zu / %zu (cudaErrorInvalidValue); called "
         "from %s", api, x.width, p->srcPos.x, p->dstPos.x, s.pitch, d.pitch, where(here()).c_str());
    return ret(cudaErrorInvalidValue);
  }
  n->src = static_cast<const char*>(s.ptr) + p->srcPos.y * s.pitch + p->srcPos.x;
  n->dst = static_cast<char*>(d.ptr) + p->dstPos.y * d.pitch + p->dstPos.x;
  n->n = x.width;
  n->height = rows;
  n->spitch = s.pitch;
  n->dpitch = d.pitch;
  n->copy_kind = p->kind;
  for (std::size_t r = 0; r < rows; ++r) {
    cudaError_t e = copy(api, static_cast<char*>(n->dst) + r * n->dpitch,
                         static_cast<const char*>(n->src) + r * n->spitch, n->n, n->copy_kind, nullptr, false);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t memcpy_1d(const char* api, Node* n, void* dst, const void* src, std::size_t count, cudaMemcpyKind kind) {
  cudaError_t e = copy(api, dst, src, count, kind, nullptr, false);
  if (e != cudaSuccess) return e;
  n->dst = dst;
  n->src = src;
  n->n = count;
  n->height = 1;
  n->copy_kind = kind;
  return cudaSuccess;
}

cudaError_t memset_node(const char* api, Node* n, const cudaMemsetParams* p) {
  if (!p) return ret(cudaErrorInvalidValue);
  if (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) {
    warn("%s: elementSize %u: must be 1, 2 or 4 (cudaErrorInvalidValue); called from %s", api, p->elementSize,
         where(here()).c_str());
    return ret(cudaErrorInvalidValue);
  }
  std::size_t row = p->width * p->elementSize;
  if (p->height > 1 && p->pitch < row) {
    warn("%s: rows of %zu bytes do not fit the pitch %zu (cudaErrorInvalidValue); called from %s", api, row, p->pitch,
         where(here()).c_str());
    return ret(cudaErrorInvalidValue);
  }
  for (std::size_t r = 0; r < p->height; ++r)
    if (cudaError_t e = check_range(api, "destination", static_cast<char*>(p->dst) + r * p->pitch, row, nullptr))
      return ret(e);
  n->dst = p->dst;
  n->elem = p->elementSize;
  n->value = p->elementSize == 4 ? p->value : p->value & ((1u << (8 * p->elementSize)) - 1);
  n->n = p->width;
  n->height = p->height;
  n->dpitch = p->pitch;
  return cudaSuccess;
}

// the executable's copy of graph node `node` (the graph instantiated, or one a cudaGraphExecUpdate gave it)
Node* exec_slot(cudaGraphExec_t exec, cudaGraphNode_t node, Node::Kind kind) {
  auto* x = reinterpret_cast<GraphExec*>(exec);
  if (!x || !node) return nullptr;
  for (std::size_t i = 0; i < x->nodes.size(); ++i)
    if (std::find(x->origin[i].begin(), x->origin[i].end(), N(node)) != x->origin[i].end())
      return x->nodes[i].kind == kind ? &x->nodes[i] : nullptr;
  return nullptr;
}

void copy_kernel(Node* to, const Node& from) {
  to->func = from.func;
  to->grid = from.grid;
  to->block = from.block;
  to->cluster = from.cluster;
  to->smem = from.smem;
  to->params = from.params;
  to->arg_ptrs.clear();
}

bool has_edge(const Node* from, const Node* to) {
  return std::find(to->deps.begin(), to->deps.end(), from) != to->deps.end();
}

// the edges the program names: nodes of g, and edge data all default (programmatic ports are not modelled)
cudaError_t edge_list(const char* api, Graph* g, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                      const cudaGraphEdgeData* data, std::size_t count) {
  if (count && (!from || !to)) return ret(cudaErrorInvalidValue);
  for (std::size_t i = 0; i < count; ++i) {
    if (!N(from[i]) || !N(to[i]) || N(from[i])->owner != g || N(to[i])->owner != g || from[i] == to[i]) {
      warn("%s: edge %zu joins %s (cudaErrorInvalidValue); called from %s", api, i,
           from[i] == to[i] && from[i] ? "a node to itself" : "a node that is not in the graph",
           where(here()).c_str());
      return ret(cudaErrorInvalidValue);
    }
    if (data) {
      static const cudaGraphEdgeData zero = {};
      if (std::memcmp(&data[i], &zero, sizeof zero) != 0)
        stop(kExitRefused, "unsupported: %s with edge data (ports %u -> %u, type %u): tcemu's graph edges are "
             "full-completion edges; called from %s", api, data[i].from_port, data[i].to_port, data[i].type,
             where(here()).c_str());
    }
  }
  return cudaSuccess;
}

// nodes related to `node` (its dependencies, or its dependents) into the program's arrays
cudaError_t related(cudaGraphNode_t node, bool dependents, cudaGraphNode_t* out, cudaGraphEdgeData* data,
                    size_t* count) {
  Guard lock(g_lock);
  if (!node || !count) return ret(cudaErrorInvalidValue);
  std::vector<Node*> list;
  if (!dependents) list = N(node)->deps;
  else
    for (Node* n : N(node)->owner->nodes)
      if (has_edge(N(node), n)) list.push_back(n);
  if (!out) {
    *count = list.size();
    return cudaSuccess;
  }
  for (std::size_t i = 0; i < *count; ++i) {
    out[i] = i < list.size() ? H(list[i]) : nullptr;
    if (data) data[i] = cudaGraphEdgeData{};
  }
  *count = std::min(*count, list.size());
  return cudaSuccess;
}

}  // namespace

namespace tcemu_rt {

// the kernel node a launch would make: checked as the launch is and its argument bytes copied, through launch()
// into a scratch capture (one path for <<<>>>, cudaLaunchKernel, captured and added kernel nodes)
cudaError_t kernel_node(const char* api, Node* n, const cudaKernelNodeParams* p) {
  if (!p) return ret(cudaErrorInvalidValue);
  if (p->extra)
    stop(kExitRefused, "unsupported: %s with kernel arguments in the `extra` format (pass kernelParams); called from "
         "%s", api, where(here()).c_str());
  Graph scratch;
  Capture capture;
  capture.graph = &scratch;
  Stream stream{0};
  stream.capture = &capture;
  cudaError_t e = launch(api, p->func, p->gridDim, p->blockDim, dim3(1, 1, 1), p->sharedMemBytes, p->kernelParams,
                         nullptr, reinterpret_cast<cudaStream_t>(&stream));
  if (e != cudaSuccess) return e;
  copy_kernel(n, *scratch.nodes.at(0));
  return cudaSuccess;
}

}  // namespace tcemu_rt

extern "C" {

cudaError_t CUDARTAPI cudaGraphCreate(cudaGraph_t* graph, unsigned int flags) {
  if (!graph || flags) return ret(cudaErrorInvalidValue);   // flags: reserved, must be 0
  *graph = reinterpret_cast<cudaGraph_t>(new Graph());
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphAddKernelNode(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                             size_t count, const struct cudaKernelNodeParams* p) {
  return add("cudaGraphAddKernelNode", out, graph, deps, count, Node::kKernel,
             [&](Node* n) { return kernel_node("cudaGraphAddKernelNode", n, p); });
}

cudaError_t CUDARTAPI cudaGraphAddMemcpyNode(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                             size_t count, const struct cudaMemcpy3DParms* p) {
  return add("cudaGraphAddMemcpyNode", out, graph, deps, count, Node::kMemcpy,
             [&](Node* n) { return memcpy_node("cudaGraphAddMemcpyNode", n, p); });
}

cudaError_t CUDARTAPI cudaGraphAddMemcpyNode1D(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                               size_t count, void* dst, const void* src, size_t bytes,
                                               enum cudaMemcpyKind kind) {
  return add("cudaGraphAddMemcpyNode1D", out, graph, deps, count, Node::kMemcpy,
             [&](Node* n) { return memcpy_1d("cudaGraphAddMemcpyNode1D", n, dst, src, bytes, kind); });
}

cudaError_t CUDARTAPI cudaGraphAddMemsetNode(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                             size_t count, const struct cudaMemsetParams* p) {
  return add("cudaGraphAddMemsetNode", out, graph, deps, count, Node::kMemset,
             [&](Node* n) { return memset_node("cudaGraphAddMemsetNode", n, p); });
}

cudaError_t CUDARTAPI cudaGraphAddHostNode(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                           size_t count, const struct cudaHostNodeParams* p) {
  return add("cudaGraphAddHostNode", out, graph, deps, count, Node::kHost, [&](Node* n) {
    if (!p || !p->fn) return ret(cudaErrorInvalidValue);
    n->fn = p->fn;
    n->data = p->userData;
    return cudaSuccess;
  });
}

cudaError_t CUDARTAPI cudaGraphAddEmptyNode(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                            size_t count) {
  return add("cudaGraphAddEmptyNode", out, graph, deps, count, Node::kEmpty, [](Node*) { return cudaSuccess; });
}

// the child node holds a copy of the graph, as CUDA clones it
cudaError_t CUDARTAPI cudaGraphAddChildGraphNode(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                                 size_t count, cudaGraph_t child) {
  return add("cudaGraphAddChildGraphNode", out, graph, deps, count, Node::kChild, [&](Node* n) {
    if (!child || child == graph) return ret(cudaErrorInvalidValue);
    n->child = clone_graph(G(child));
    return cudaSuccess;
  });
}

// events order nothing more here (launches run one after another): a record node stamps the time, a wait none
cudaError_t CUDARTAPI cudaGraphAddEventRecordNode(cudaGraphNode_t* out, cudaGraph_t graph,
                                                  const cudaGraphNode_t* deps, size_t count, cudaEvent_t event) {
  return add("cudaGraphAddEventRecordNode", out, graph, deps, count, Node::kEventRecord, [&](Node* n) {
    n->event = event;
    return event ? cudaSuccess : ret(cudaErrorInvalidValue);
  });
}
cudaError_t CUDARTAPI cudaGraphAddEventWaitNode(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                                size_t count, cudaEvent_t event) {
  return add("cudaGraphAddEventWaitNode", out, graph, deps, count, Node::kEventWait, [&](Node* n) {
    n->event = event;
    return event ? cudaSuccess : ret(cudaErrorInvalidValue);
  });
}

cudaError_t CUDARTAPI cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                               const cudaGraphNode_t* to, const cudaGraphEdgeData* data,
                                               size_t count) {
  Guard lock(g_lock);
  if (!graph) return ret(cudaErrorInvalidValue);
  if (cudaError_t e = edge_list("cudaGraphAddDependencies", G(graph), from, to, data, count)) return e;
  for (std::size_t i = 0; i < count; ++i)
    if (has_edge(N(from[i]), N(to[i]))) return ret(cudaErrorInvalidValue);   // an existing edge (CUDA's rule)
  for (std::size_t i = 0; i < count; ++i) N(to[i])->deps.push_back(N(from[i]));
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                                  const cudaGraphNode_t* to, const cudaGraphEdgeData* data,
                                                  size_t count) {
  Guard lock(g_lock);
  if (!graph) return ret(cudaErrorInvalidValue);
  if (cudaError_t e = edge_list("cudaGraphRemoveDependencies", G(graph), from, to, data, count)) return e;
  for (std::size_t i = 0; i < count; ++i)
    if (!has_edge(N(from[i]), N(to[i]))) return ret(cudaErrorInvalidValue);
  for (std::size_t i = 0; i < count; ++i) {
    auto& deps = N(to[i])->deps;
    deps.erase(std::find(deps.begin(), deps.end(), N(from[i])));
  }
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t* from, cudaGraphNode_t* to,
                                        cudaGraphEdgeData* data, size_t* count) {
  Guard lock(g_lock);
  if (!graph || !count || (!from) != (!to) || (data && !from)) return ret(cudaErrorInvalidValue);
  std::vector<std::pair<Node*, Node*>> edges;   // by dependent node in the order added, then its edges' order
  for (Node* n : G(graph)->nodes)
    for (Node* d : n->deps) edges.emplace_back(d, n);
  if (!from) {
    *count = edges.size();
    return cudaSuccess;
  }
  for (std::size_t i = 0; i < *count; ++i) {
    from[i] = i < edges.size() ? H(edges[i].first) : nullptr;
    to[i] = i < edges.size() ? H(edges[i].second) : nullptr;
    if (data) data[i] = cudaGraphEdgeData{};
  }
  *count = std::min(*count, edges.size());
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t* roots, size_t* count) {
  Guard lock(g_lock);
  if (!graph || !count) return ret(cudaErrorInvalidValue);
  std::vector<Node*> list;
  for (Node* n : G(graph)->nodes)
    if (n->deps.empty()) list.push_back(n);
  if (roots) {
    for (std::size_t i = 0; i < *count; ++i) roots[i] = i < list.size() ? H(list[i]) : nullptr;
    *count = std::min(*count, list.size());
    return cudaSuccess;
  }
  *count = list.size();
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* deps,
                                                   cudaGraphEdgeData* data, size_t* count) {
  return related(node, false, deps, data, count);
}
cudaError_t CUDARTAPI cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t* nodes,
                                                     cudaGraphEdgeData* data, size_t* count) {
  return related(node, true, nodes, data, count);
}

cudaError_t CUDARTAPI cudaGraphDestroyNode(cudaGraphNode_t node) {
  Guard lock(g_lock);
  if (!node) return ret(cudaErrorInvalidValue);
  Node* n = N(node);
  auto& all = n->owner->nodes;
  all.erase(std::find(all.begin(), all.end(), n));
  for (Node* m : all) m->deps.erase(std::remove(m->deps.begin(), m->deps.end(), n), m->deps.end());
  delete n->child;
  delete n;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphClone(cudaGraph_t* clone, cudaGraph_t graph) {
  Guard lock(g_lock);
  if (!clone || !graph) return ret(cudaErrorInvalidValue);
  *clone = reinterpret_cast<cudaGraph_t>(clone_graph(G(graph)));
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t* graph) {
  if (!node || !graph || N(node)->kind != Node::kChild) return ret(cudaErrorInvalidValue);
  *graph = reinterpret_cast<cudaGraph_t>(N(node)->child);
  return cudaSuccess;
}

// kernelParams: pointers into the node's own copy of the argument bytes (valid until its parameters change)
cudaError_t CUDARTAPI cudaGraphKernelNodeGetParams(cudaGraphNode_t node, struct cudaKernelNodeParams* p) {
  Guard lock(g_lock);
  if (!node || !p || N(node)->kind != Node::kKernel) return ret(cudaErrorInvalidValue);
  Node* n = N(node);
  if (n->arg_ptrs.empty()) {
    int fatbin = 0;
    const std::string& name = kernel_name(n->func, &fatbin);
    std::vector<long long> offsets(4096);
    long long count = call_python("param_offsets", "(KisKn)", (unsigned long long)(uintptr_t)fatbin_data(fatbin),
                                  fatbin, name.c_str(), (unsigned long long)(uintptr_t)offsets.data(),
                                  (Py_ssize_t)offsets.size());
    if (count < 0) stop(kExitRefused, "the program ends here: tcemu cannot read the parameters of %s (above)",
                        name.c_str());
    for (long long i = 0; i < count; ++i) n->arg_ptrs.push_back(&n->params[static_cast<std::size_t>(offsets[i])]);
    n->arg_ptrs.push_back(nullptr);
  }
  p->func = const_cast<void*>(n->func);
  p->gridDim = n->grid;
  p->blockDim = n->block;
  p->sharedMemBytes = static_cast<unsigned>(n->smem);
  p->kernelParams = n->arg_ptrs.data();
  p->extra = nullptr;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const struct cudaKernelNodeParams* p) {
  Guard lock(g_lock);
  if (!node || N(node)->kind != Node::kKernel) return ret(cudaErrorInvalidValue);
  Node fresh;
  if (cudaError_t e = kernel_node("cudaGraphKernelNodeSetParams", &fresh, p)) return e;
  copy_kernel(N(node), fresh);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphExecKernelNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                       const struct cudaKernelNodeParams* p) {
  Guard lock(g_lock);
  Node* slot = exec_slot(exec, node, Node::kKernel);
  if (!slot) return ret(cudaErrorInvalidValue);
  Node fresh;
  if (cudaError_t e = kernel_node("cudaGraphExecKernelNodeSetParams", &fresh, p)) return e;
  copy_kernel(slot, fresh);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, struct cudaMemcpy3DParms* p) {
  if (!node || !p || N(node)->kind != Node::kMemcpy) return ret(cudaErrorInvalidValue);
  const Node* n = N(node);
  std::memset(p, 0, sizeof *p);
  p->srcPtr = {const_cast<void*>(n->src), n->spitch ? n->spitch : n->n, n->n, n->height};
  p->dstPtr = {n->dst, n->dpitch ? n->dpitch : n->n, n->n, n->height};
  p->extent = {n->n, n->height, 1};
  p->kind = n->copy_kind;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node, const struct cudaMemcpy3DParms* p) {
  Guard lock(g_lock);
  if (!node || N(node)->kind != Node::kMemcpy) return ret(cudaErrorInvalidValue);
  Node fresh;
  if (cudaError_t e = memcpy_node("cudaGraphMemcpyNodeSetParams", &fresh, p)) return e;
  fresh.kind = Node::kMemcpy;
  std::swap(fresh.deps, N(node)->deps);
  fresh.owner = N(node)->owner;
  fresh.api = N(node)->api;
  *N(node) = fresh;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void* dst, const void* src, size_t count,
                                                     enum cudaMemcpyKind kind) {
  Guard lock(g_lock);
  if (!node || N(node)->kind != Node::kMemcpy) return ret(cudaErrorInvalidValue);
  Node fresh;
  if (cudaError_t e = memcpy_1d("cudaGraphMemcpyNodeSetParams1D", &fresh, dst, src, count, kind)) return e;
  Node* n = N(node);
  n->dst = fresh.dst, n->src = fresh.src, n->n = fresh.n, n->height = 1, n->copy_kind = kind;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t exec, cudaGraphNode_t node, void* dst,
                                                         const void* src, size_t count, enum cudaMemcpyKind kind) {
  Guard lock(g_lock);
  Node* slot = exec_slot(exec, node, Node::kMemcpy);
  if (!slot) return ret(cudaErrorInvalidValue);
  Node fresh;
  if (cudaError_t e = memcpy_1d("cudaGraphExecMemcpyNodeSetParams1D", &fresh, dst, src, count, kind)) return e;
  slot->dst = fresh.dst, slot->src = fresh.src, slot->n = fresh.n, slot->height = 1, slot->copy_kind = kind;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, struct cudaMemsetParams* p) {
  if (!node || !p || N(node)->kind != Node::kMemset) return ret(cudaErrorInvalidValue);
  const Node* n = N(node);
  *p = {n->dst, n->dpitch, n->value, static_cast<unsigned>(n->elem), n->n, n->height};
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphHostNodeGetParams(cudaGraphNode_t node, struct cudaHostNodeParams* p) {
  if (!node || !p || N(node)->kind != Node::kHost) return ret(cudaErrorInvalidValue);
  p->fn = N(node)->fn;
  p->userData = N(node)->data;
  return cudaSuccess;
}

// Same topology (node kinds and edges, child graphs included, in the order added): the executable takes the
// graph's parameters; else cudaErrorGraphExecUpdateFailure, and resultInfo says why and where (CUDA's rules)
cudaError_t CUDARTAPI cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph,
                                          cudaGraphExecUpdateResultInfo* info) {
  Guard lock(g_lock);
  cudaGraphExecUpdateResultInfo local;
  if (!info) info = &local;
  *info = {cudaGraphExecUpdateError, nullptr, nullptr};
  if (!exec || !graph) return ret(cudaErrorInvalidValue);
  auto* x = reinterpret_cast<GraphExec*>(exec);
  Graph* g = G(graph);
  std::vector<std::string> shape = node_shapes(g);
  if (shape != x->shape) {
    info->result = cudaGraphExecUpdateErrorTopologyChanged;
    for (std::size_t i = 0; i < shape.size() && i < x->shape.size(); ++i) {
      if (shape[i] == x->shape[i]) continue;
      info->errorNode = H(g->nodes[i]);
      if (shape[i][0] != x->shape[i][0]) info->result = cudaGraphExecUpdateErrorNodeTypeChanged;
      break;
    }
    warn("cudaGraphExecUpdate: the graph's %s differs from the one instantiated (cudaErrorGraphExecUpdateFailure); "
         "called from %s", info->result == cudaGraphExecUpdateErrorNodeTypeChanged ? "node type" : "topology",
         where(here()).c_str());
    return ret(cudaErrorGraphExecUpdateFailure);
  }
  GraphExec fresh;
  if (cudaError_t e = build_exec("cudaGraphExecUpdate", g, &fresh)) return e;
  for (std::size_t i = 0; i < fresh.origin.size(); ++i)   // the same order: the old graph's node handles still name it
    fresh.origin[i].insert(fresh.origin[i].end(), x->origin[i].begin(), x->origin[i].end());
  *x = fresh;
  info->result = cudaGraphExecUpdateSuccess;
  return cudaSuccess;
}

}  // extern "C"
