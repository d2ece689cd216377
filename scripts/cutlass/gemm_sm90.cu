// CUTLASS 3.x sm_90a GEMMs made with the CollectiveBuilder and run through GemmUniversalAdapter, one kernel per
// compilation (-DTCEMU_GEMM=<n>), and the launch-record builder that goes with each (main below).
//
// Written for tcemu after CUTLASS's examples 48_hopper_warp_specialized_gemm, 49_hopper_gemm_with_collective_builder
// and 54_hopper_fp8_warp_specialized_gemm (nvidia-cutlass 4.2): the same builder calls, with the schedules and
// types chosen here. A is (M, K) row-major, B is (N, K) row-major (CUTLASS ColumnMajor K x N: both operands
// K-major, the "TN" GEMM, the only form wgmma takes for fp8), D is (M, N) row-major; there is no C (ElementC
// void), alpha = 1, beta = 0, so D = round(accumulator) in D's type.
//
//   TCEMU_GEMM  kernel schedule                              tile          cluster  A, B   D     epilogue
//   1           KernelTmaWarpSpecialized                     128x128x64    1x1x1    bf16   bf16  TmaWarpSpecialized
//   2           KernelTmaWarpSpecializedPingpong             64x128x64     1x1x1    bf16   f32   TmaWarpSpecialized
//   3           KernelTmaWarpSpecializedCooperative          128x128x64    2x1x1    bf16   bf16  TmaWarpSpecializedCooperative
//   4           KernelTmaWarpSpecializedFP8FastAccum         128x128x128   1x1x1    e4m3   f32   TmaWarpSpecialized
//   5           KernelTmaWarpSpecialized (fp8: promotes)     128x128x128   1x1x1    e4m3   f32   TmaWarpSpecialized
//
// 5 is CUTLASS's default fp8 mainloop (MainloopSm90TmaGmmaWarpSpecializedFP8): partial sums of
// mma_promotion_interval (default 4) k-blocks of wgmma are added into f32 registers with ordinary adds;
// 4 chains every k-block into one wgmma accumulator ("fast accumulation").
//
//   gemm_sm90 --ptx cutlass_<name>.ptx M N K
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

#include "record.h"

using namespace cute;

#if !defined(TCEMU_GEMM)
#error "compile with -DTCEMU_GEMM=1..5"
#endif

#if TCEMU_GEMM == 1
using ElementAB = cutlass::bfloat16_t;
using ElementD = cutlass::bfloat16_t;
using TileShape = Shape<_128, _128, _64>;
using ClusterShape = Shape<_1, _1, _1>;
using KernelSchedule = cutlass::gemm::KernelTmaWarpSpecialized;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
#define TCEMU_NAMES "bf16", "bf16"
#elif TCEMU_GEMM == 2
using ElementAB = cutlass::bfloat16_t;
using ElementD = float;
using TileShape = Shape<_64, _128, _64>;
using ClusterShape = Shape<_1, _1, _1>;
using KernelSchedule = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
#define TCEMU_NAMES "bf16", "f32"
#elif TCEMU_GEMM == 3
using ElementAB = cutlass::bfloat16_t;
using ElementD = cutlass::bfloat16_t;
using TileShape = Shape<_128, _128, _64>;
using ClusterShape = Shape<_2, _1, _1>;
using KernelSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
#define TCEMU_NAMES "bf16", "bf16"
#elif TCEMU_GEMM == 4
using ElementAB = cutlass::float_e4m3_t;
using ElementD = float;
using TileShape = Shape<_128, _128, _128>;
using ClusterShape = Shape<_1, _1, _1>;
using KernelSchedule = cutlass::gemm::KernelTmaWarpSpecializedFP8FastAccum;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
#define TCEMU_NAMES "e4m3", "f32"
#elif TCEMU_GEMM == 5
using ElementAB = cutlass::float_e4m3_t;
using ElementD = float;
using TileShape = Shape<_128, _128, _128>;
using ClusterShape = Shape<_1, _1, _1>;
using KernelSchedule = cutlass::gemm::KernelTmaWarpSpecialized;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
#define TCEMU_NAMES "e4m3", "f32"
#else
#error "TCEMU_GEMM must be 1..5"
#endif

using LayoutA = cutlass::layout::RowMajor;
using LayoutB = cutlass::layout::ColumnMajor;
using LayoutD = cutlass::layout::RowMajor;
using ElementAccumulator = float;
constexpr int kAlignAB = 128 / cutlass::sizeof_bits<ElementAB>::value;   // 16-byte accesses
constexpr int kAlignD = 128 / cutlass::sizeof_bits<ElementD>::value;

using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementAccumulator,
    void, LayoutD, kAlignD,          // no C operand
    ElementD, LayoutD, kAlignD, EpilogueSchedule>::CollectiveOp;

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
    std::fprintf(stderr, "usage: gemm_sm90 --ptx FILE M N K\n");
    return 2;
  }
  int m = std::stoi(a[0]), n = std::stoi(a[1]), k = std::stoi(a[2]);
  const char* names[2] = {TCEMU_NAMES};
  auto* A = static_cast<ElementAB*>(tcemu_rec::buffer("A", "input", names[0], {m, k}, sizeof(ElementAB) * m * k));
  auto* B = static_cast<ElementAB*>(tcemu_rec::buffer("B", "input", names[0], {n, k}, sizeof(ElementAB) * n * k));
  auto* D = static_cast<ElementD*>(tcemu_rec::buffer("D", "output", names[1], {m, n}, sizeof(ElementD) * m * n));

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
                                {{1.0f, 0.0f}, nullptr, sC, D, sD},
                                hw};
  tcemu_rec::note("gemm", (long long)TCEMU_GEMM);
  tcemu_rec::note("M", (long long)m);
  tcemu_rec::note("N", (long long)n);
  tcemu_rec::note("K", (long long)k);
  tcemu_rec::note("alpha", 1.0);
  tcemu_rec::note("beta", 0.0);
  tcemu_rec::note("sm_count", (long long)hw.sm_count);
  tcemu_rec::note("tile", "[" + std::to_string(size<0>(TileShape{})) + ", " + std::to_string(size<1>(TileShape{})) +
                              ", " + std::to_string(size<2>(TileShape{})) + "]");
  tcemu_rec::note("stages", (long long)CollectiveMainloop::DispatchPolicy::Stages);
#if TCEMU_GEMM == 5
  tcemu_rec::note("mma_promotion_interval", (long long)args.mainloop.mma_promotion_interval);
#endif

  // The adapter keeps the kernel's Params and the launch copies them with their padding: give it storage
  // filled with the run's fill byte (record.h).
  alignas(Gemm) static unsigned char storage[sizeof(Gemm)];
  std::memset(storage, tcemu_rec::fill_byte(), sizeof storage);
  Gemm& gemm = *new (storage) Gemm;
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) {
    std::fprintf(stderr, "gemm_sm90: CUTLASS cannot implement %dx%dx%d with this kernel\n", m, n, k);
    return 7;
  }
  std::size_t ws_bytes = Gemm::get_workspace_size(args);
  void* ws = nullptr;
  if (ws_bytes) ws = tcemu_rec::buffer("workspace", "workspace", "bytes", {(long long)ws_bytes}, ws_bytes);
  tcemu_rec::note("workspace_bytes", (long long)ws_bytes);
  tcemu_rec::fill_stack();
  if (gemm.initialize(args, ws) != cutlass::Status::kSuccess) {
    std::fprintf(stderr, "gemm_sm90: initialize failed\n");
    return 8;
  }
  if (gemm.run() != cutlass::Status::kSuccess) {
    std::fprintf(stderr, "gemm_sm90: run failed\n");
    return 9;
  }
  return tcemu_rec::finish();
}
