// CUTLASS 3.x sm_90a GEMMs whose epilogue applies GELU through the epilogue visitor tree (EVT): the
// CollectiveBuilder's fusion operation LinCombEltAct<GELU...>, D = GELU(alpha * acc) with no C. One kernel per
// compilation (-DTCEMU_EVT=<n>), and the launch-record builder that goes with it (main below). The kernels
// need approximate special-function PTX (GELU's erff, GELU_taylor's tanh.approx), which is what they are for:
// ground truth for tcemu's models of those instructions.
//
// Written for tcemu after CUTLASS's example 49_hopper_gemm_with_collective_builder and
// scripts/cutlass/gemm_sm90.cu (same operand layout: A (M, K) row-major, B (N, K) row-major, D (M, N) row-major).
//
//   TCEMU_EVT  activation                                     kernel schedule                       tile         A, B  D
//   1          cutlass::epilogue::thread::GELU (erff)         KernelTmaWarpSpecializedCooperative   128x128x64   bf16  f32
//   2          cutlass::epilogue::thread::GELU_taylor (tanh)  KernelTmaWarpSpecializedCooperative   128x128x64   bf16  f32
//
// D is f32 so that every bit of the activation reaches memory; alpha = 1 (a scalar argument), no C (ElementC void).
//
//   gemm_evt_sm90 --ptx cutlass_evt_gelu_<name>.ptx M N K
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/epilogue/thread/activation.h"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

#include "record.h"

using namespace cute;

#if !defined(TCEMU_EVT)
#error "compile with -DTCEMU_EVT=1..2"
#endif

#if TCEMU_EVT == 1
template <class T> using Activation = cutlass::epilogue::thread::GELU<T>;
#define TCEMU_ACT "\"GELU\""
#elif TCEMU_EVT == 2
template <class T> using Activation = cutlass::epilogue::thread::GELU_taylor<T>;
#define TCEMU_ACT "\"GELU_taylor\""
#else
#error "TCEMU_EVT must be 1..2"
#endif

using ElementAB = cutlass::bfloat16_t;
using ElementD = float;
using ElementAccumulator = float;
using ElementCompute = float;
using TileShape = Shape<_128, _128, _64>;
using ClusterShape = Shape<_1, _1, _1>;
using KernelSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
using LayoutA = cutlass::layout::RowMajor;
using LayoutB = cutlass::layout::ColumnMajor;
using LayoutD = cutlass::layout::RowMajor;
constexpr int kAlignAB = 128 / cutlass::sizeof_bits<ElementAB>::value;
constexpr int kAlignD = 128 / cutlass::sizeof_bits<ElementD>::value;

using FusionOperation = cutlass::epilogue::fusion::LinCombEltAct<Activation, ElementD, ElementCompute, void,
                                                                 ElementCompute>;

using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementCompute,
    void, LayoutD, kAlignD,          // no C operand
    ElementD, LayoutD, kAlignD, EpilogueSchedule, FusionOperation>::CollectiveOp;

using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementAB, LayoutA, kAlignAB, ElementAB, LayoutB, kAlignAB,
    ElementAccumulator, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
    KernelSchedule>::CollectiveOp;

using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int>, CollectiveMainloop, CollectiveEpilogue>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;

int main(int argc, char** argv) {
  std::vector<std::string> a = tcemu_rec::init(argc, argv);
  if (a.size() != 3) {
    std::fprintf(stderr, "usage: gemm_evt_sm90 --ptx FILE M N K\n");
    return 2;
  }
  int m = std::stoi(a[0]), n = std::stoi(a[1]), k = std::stoi(a[2]);
  auto* A = static_cast<ElementAB*>(tcemu_rec::buffer("A", "input", "bf16", {m, k}, sizeof(ElementAB) * m * k));
  auto* B = static_cast<ElementAB*>(tcemu_rec::buffer("B", "input", "bf16", {n, k}, sizeof(ElementAB) * n * k));
  auto* D = static_cast<ElementD*>(tcemu_rec::buffer("D", "output", "f32", {m, n}, sizeof(ElementD) * m * n));

  using StrideA = typename Gemm::GemmKernel::StrideA;
  using StrideB = typename Gemm::GemmKernel::StrideB;
  using StrideC = typename Gemm::GemmKernel::StrideC;
  using StrideD = typename Gemm::GemmKernel::StrideD;
  StrideA sA = cutlass::make_cute_packed_stride(StrideA{}, {m, k, 1});
  StrideB sB = cutlass::make_cute_packed_stride(StrideB{}, {n, k, 1});
  StrideC sC = cutlass::make_cute_packed_stride(StrideC{}, {m, n, 1});
  StrideD sD = cutlass::make_cute_packed_stride(StrideD{}, {m, n, 1});

  cutlass::KernelHardwareInfo hw = cutlass::KernelHardwareInfo::make_kernel_hardware_info<GemmKernel>(0);
  typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                {m, n, k},
                                {A, sA, B, sB},
                                {{}, nullptr, sC, D, sD},
                                hw};
  args.epilogue.thread.alpha = 1.0f;
  args.epilogue.thread.beta = 0.0f;
  tcemu_rec::note("evt", (long long)TCEMU_EVT);
  tcemu_rec::note("activation", TCEMU_ACT);
  tcemu_rec::note("M", (long long)m);
  tcemu_rec::note("N", (long long)n);
  tcemu_rec::note("K", (long long)k);
  tcemu_rec::note("alpha", 1.0);
  tcemu_rec::note("beta", 0.0);
  tcemu_rec::note("sm_count", (long long)hw.sm_count);
  tcemu_rec::note("tile", "[" + std::to_string(size<0>(TileShape{})) + ", " + std::to_string(size<1>(TileShape{})) +
                              ", " + std::to_string(size<2>(TileShape{})) + "]");
  tcemu_rec::note("stages", (long long)CollectiveMainloop::DispatchPolicy::Stages);

  // The adapter keeps the kernel's Params and the launch copies them with their padding: give it storage
  // filled with the run's fill byte (record.h).
  alignas(Gemm) static unsigned char storage[sizeof(Gemm)];
  std::memset(storage, tcemu_rec::fill_byte(), sizeof storage);
  Gemm& gemm = *new (storage) Gemm;
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) {
    std::fprintf(stderr, "gemm_evt_sm90: CUTLASS cannot implement %dx%dx%d with this kernel\n", m, n, k);
    return 7;
  }
  std::size_t ws_bytes = Gemm::get_workspace_size(args);
  void* ws = nullptr;
  if (ws_bytes) ws = tcemu_rec::buffer("workspace", "workspace", "bytes", {(long long)ws_bytes}, ws_bytes);
  tcemu_rec::note("workspace_bytes", (long long)ws_bytes);
  tcemu_rec::fill_stack();
  if (gemm.initialize(args, ws) != cutlass::Status::kSuccess) {
    std::fprintf(stderr, "gemm_evt_sm90: initialize failed\n");
    return 8;
  }
  if (gemm.run() != cutlass::Status::kSuccess) {
    std::fprintf(stderr, "gemm_evt_sm90: run failed\n");
    return 9;
  }
  return tcemu_rec::finish();
}
