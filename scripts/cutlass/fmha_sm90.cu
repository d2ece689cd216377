// CUTLASS example 88 (88_hopper_fmha, nvidia-cutlass 4.2): the Hopper fused multi-head attention forward
// kernel in fp16, built as the example's FwdRunner builds it, and the launch-record builder that goes with it
// (main below). The kernel is the example's own (its kernel/, collective/ and device/ headers, included from
// the wheel's examples folder unmodified); the host code here replaces the runner's allocation and timing.
//
//   Element half_t, QK and PV accumulators float, DefaultFusion (no mask), head dimension 64,
//   KernelTmaWarpSpecializedCooperative with TileShape 128x64x64 (the example's "tma ws cooperative 128x64x64"
//   for d <= 64), IndividualTileScheduler, 1x1 cluster.
//
// Layouts as the runner's initialize(): Q, K, V, O (B, H, S, D) row-major (strides (D, 1, (H*S*D, S*D))), LSE
// (B, H, Q) f32. The softmax scale is the example's default (1/sqrt(D), set by the mainloop from the head
// dimension). Outputs: O (f16) and LSE (f32).
//
// The kernel needs approximate special-function PTX (exp2f -> ex2.approx, __logf -> lg2.approx, __frcp_rn):
// ground truth for tcemu's models of those instructions.
//
//   fmha_sm90 --ptx cutlass_fmha_f16.ptx B H Q K D
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/kernel_hardware_info.h"

#include "88_hopper_fmha/collective/fmha_fusion.hpp"
#include "88_hopper_fmha/device/device_universal.hpp"
#include "88_hopper_fmha/kernel/fmha_kernel_builder.hpp"

#include "record.h"

using namespace cute;
using namespace cutlass::fmha::kernel;
using namespace cutlass::fmha::collective;
using namespace cutlass::fmha;

using Element = cutlass::half_t;
using ElementAccumulatorQK = float;
using ElementAccumulatorPV = float;
using TileShape = Shape<_128, _64, _64>;
using DispatchPolicy = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using ActiveFusion = DefaultFusion;

using ProblemShapeType = cute::tuple<int, int, int, int, int>;   // B H Q K D
using StrideQ = cute::tuple<int, _1, cute::tuple<int, int>>;     // Q D (B H)
using StrideK = cute::tuple<int, _1, cute::tuple<int, int>>;     // K D (B H)
using StrideV = cute::tuple<int, _1, cute::tuple<int, int>>;     // K D (B H)
using StrideO = cute::tuple<int, _1, cute::tuple<int, int>>;     // Q D (B H)
using StrideLSE = cute::tuple<_1, cute::tuple<int, int>>;        // Q (B H)

using Operation = cutlass::device::Universal<typename cutlass::fmha::kernel::FmhaBuilder<
    Element, ElementAccumulatorQK, ElementAccumulatorPV, TileShape, StrideQ, StrideK, StrideV, ActiveFusion,
    DispatchPolicy>::Kernel>;

int main(int argc, char** argv) {
  std::vector<std::string> a = tcemu_rec::init(argc, argv);
  if (a.size() != 5) {
    std::fprintf(stderr, "usage: fmha_sm90 --ptx FILE B H Q K D\n");
    return 2;
  }
  int b = std::stoi(a[0]), h = std::stoi(a[1]), q = std::stoi(a[2]), k = std::stoi(a[3]), d = std::stoi(a[4]);
  if (d % 8) {
    std::fprintf(stderr, "fmha_sm90: D must be a multiple of 8 (the runner rounds it up)\n");
    return 2;
  }
  long long nq = 1LL * b * h * q * d, nk = 1LL * b * h * k * d, nl = 1LL * b * h * q;
  auto* Q = static_cast<Element*>(tcemu_rec::buffer("Q", "input", "f16", {b, h, q, d}, 2 * nq));
  auto* K = static_cast<Element*>(tcemu_rec::buffer("K", "input", "f16", {b, h, k, d}, 2 * nk));
  auto* V = static_cast<Element*>(tcemu_rec::buffer("V", "input", "f16", {b, h, k, d}, 2 * nk));
  auto* O = static_cast<Element*>(tcemu_rec::buffer("O", "output", "f16", {b, h, q, d}, 2 * nq));
  auto* LSE = static_cast<float*>(tcemu_rec::buffer("LSE", "output", "f32", {b, h, q}, 4 * nl));

  // the runner's initialize_stride
  StrideQ sQ = make_stride(d, _1{}, make_stride(h * q * d, q * d));
  StrideK sK = make_stride(d, _1{}, make_stride(h * k * d, k * d));
  StrideV sV = make_stride(d, _1{}, make_stride(h * k * d, k * d));
  StrideO sO = make_stride(d, _1{}, make_stride(h * q * d, q * d));
  StrideLSE sLSE = make_stride(_1{}, make_stride(h * q, q));

  cutlass::KernelHardwareInfo hw;
  hw.device_id = 0;
  hw.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(hw.device_id);
  ProblemShapeType problem{b, h, q, k, d};
  typename Operation::Arguments args{problem, {Q, sQ, K, sK, V, sV}, {O, sO, LSE, sLSE}, hw};

  tcemu_rec::note("B", (long long)b);
  tcemu_rec::note("H", (long long)h);
  tcemu_rec::note("Q", (long long)q);
  tcemu_rec::note("K", (long long)k);
  tcemu_rec::note("D", (long long)d);
  tcemu_rec::note("fusion", "\"DefaultFusion\"");
  tcemu_rec::note("schedule", "\"KernelTmaWarpSpecializedCooperative\"");
  tcemu_rec::note("sm_count", (long long)hw.sm_count);
  tcemu_rec::note("tile", "[" + std::to_string(size<0>(TileShape{})) + ", " + std::to_string(size<1>(TileShape{})) +
                              ", " + std::to_string(size<2>(TileShape{})) + "]");

  // Universal keeps the kernel's Params and the launch copies them with their padding: give it storage filled
  // with the run's fill byte (record.h).
  alignas(Operation) static unsigned char storage[sizeof(Operation)];
  std::memset(storage, tcemu_rec::fill_byte(), sizeof storage);
  Operation& op = *new (storage) Operation;
  if (op.can_implement(args) != cutlass::Status::kSuccess) {
    std::fprintf(stderr, "fmha_sm90: CUTLASS cannot implement this problem with this kernel\n");
    return 7;
  }
  std::size_t ws_bytes = Operation::get_workspace_size(args);
  void* ws = nullptr;
  if (ws_bytes) ws = tcemu_rec::buffer("workspace", "workspace", "bytes", {(long long)ws_bytes}, ws_bytes);
  tcemu_rec::note("workspace_bytes", (long long)ws_bytes);
  tcemu_rec::fill_stack();
  if (op.initialize(args, ws) != cutlass::Status::kSuccess) {
    std::fprintf(stderr, "fmha_sm90: initialize failed\n");
    return 8;
  }
  if (op.run() != cutlass::Status::kSuccess) {   // as the example: run() launches the initialized params
    std::fprintf(stderr, "fmha_sm90: run failed\n");
    return 9;
  }
  return tcemu_rec::finish();
}
