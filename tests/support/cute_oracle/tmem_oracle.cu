// Peer oracle for tcemu: where tcgen05.mma's D, A and scale factors sit in tensor memory, as CuTe
// lays them out.
//
// Host-only program: it #includes CuTe (nvidia-cutlass wheel) and calls CuTe's own builders;
// nothing of CuTe is copied here. D and A fragments come from CuTe's MMA path
// (make_tiled_mma(op) -> partition_shape_C/A -> make_tensor<FrgTypeC/A>, i.e. UMMA::tmem_frg_1sm /
// tmem_frg_2sm::make); scale factors from UMMA::tmem_sf_frg::make (the traits' FrgTypeSFA/SFB).
//
// Output, one JSON object per line on stdout: {"rec": "d" | "a" | "sf", case fields, "rows", "cols",
// "tiles": [T1, T2], "shift", "lane": [...], "col": [...], "idx": [...]}. For every element, in the
// order (t2, t1, i, k) of the fragment's coordinate ((i, k), t1, t2), CuTe's tmem_ptr for it
// (tensor.data() + tensor.layout()(coord), what Tensor::operator() dereferences) read through
// tmem_ptr's own fields: dp_ (lane), col_ (column) and idx_ (top byte, where tmem_ptr::operator+
// rotates the sub-word index: rotr(offset, shift), shift = tmem_ptr<T>::OffsetShift =
// log2(32 / bits)). For "sf" records i runs over the whole first mode, replicas included
// (i = row + MN * copy) and k over K (k / VS is the factor).
//
// Build: nvcc -std=c++17 -x c++ -O1 -DNDEBUG -I<cutlass include> tmem_oracle.cu -o tmem_oracle

#include <cstdint>
#include <cstdio>

#include <cutlass/version.h>
#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm100.hpp>

using namespace cute;

template <class T> struct TypeName;
#define TCEMU_NAME(T, s) template <> struct TypeName<T> { static constexpr char const* value = s; };
TCEMU_NAME(tfloat32_t, "tf32")
TCEMU_NAME(half_t, "f16")
TCEMU_NAME(uint8_t, "u8")
TCEMU_NAME(float, "f32")
TCEMU_NAME(int32_t, "s32")
TCEMU_NAME(float_e2m1_t, "e2m1")
TCEMU_NAME(float_ue8m0_t, "ue8m0")
TCEMU_NAME(float_ue4m3_t, "ue4m3")
#undef TCEMU_NAME

// One record: `head` is the JSON text of the case fields (without braces).
template <class Tensor>
void dump(char const* rec, char const* head, Tensor const& t) {
  using T = typename remove_cvref_t<decltype(t.data())>::value_type;
  int const rows = int(size<0, 0>(t)), cols = int(size<0, 1>(t));
  int const t1 = int(size<1>(t)), t2 = int(size<2>(t));
  static_assert(decltype(rank(t))::value == 3, "expected ((rows, cols), tiles, tiles)");
  printf("{\"rec\":\"%s\",%s,\"rows\":%d,\"cols\":%d,\"tiles\":[%d,%d],\"shift\":%d", rec, head, rows, cols, t1, t2,
         int(tmem_ptr<T>::OffsetShift));
  char const* field[3] = {"lane", "col", "idx"};
  for (int f = 0; f < 3; ++f) {
    printf(",\"%s\":[", field[f]);
    char const* sep = "";
    for (int b = 0; b < t2; ++b)
      for (int a = 0; a < t1; ++a)
        for (int i = 0; i < rows; ++i)
          for (int k = 0; k < cols; ++k) {
            auto p = t.data() + t.layout()(make_coord(make_coord(i, k), a, b));
            printf("%s%d", sep, f == 0 ? int(p.dp_) : f == 1 ? int(p.col_) : int(p.idx_));
            sep = ",";
          }
    printf("]");
  }
  printf("}\n");
}

constexpr auto K_ = UMMA::Major::K;

// D (and, for TS atoms, A) of one MMA atom over an (M_TILE x N) or (M_TILE x K_TILE) CTA tile.
template <class Op, int N_SM, int M, int N, int M_TILE = M>
void d_case(char const* op) {
  auto mma = make_tiled_mma(Op{});
  using C = typename decltype(mma)::ValTypeC;
  Tensor d = partition_fragment_C(mma, Shape<Int<M_TILE>, Int<N>>{});
  char head[256];
  snprintf(head, sizeof head, "\"op\":\"%s\",\"n_sm\":%d,\"m\":%d,\"n\":%d,\"dtype\":\"%s\"", op, N_SM, M, N,
           TypeName<C>::value);
  dump("d", head, d);
}

template <class Op, int N_SM, int M, int N, int K_TILE, int M_TILE = M>
void a_case(char const* op) {
  auto mma = make_tiled_mma(Op{});
  using A = typename decltype(mma)::ValTypeA;
  Tensor a = make_tensor<typename decltype(mma)::FrgTypeA>(partition_shape_A(mma, Shape<Int<M_TILE>, Int<K_TILE>>{}));
  char head[256];
  snprintf(head, sizeof head, "\"op\":\"%s\",\"n_sm\":%d,\"m\":%d,\"n\":%d,\"dtype\":\"%s\",\"bits\":%d", op, N_SM, M,
           N, TypeName<A>::value, int(sizeof_bits_v<A>));
  dump("a", head, a);
  d_case<Op, N_SM, M, N, M_TILE>(op);  // a TS atom's D (NonInterleaved, int32 storage)
}

// Scale factors: tmem_sf_frg over one MMA's ((MN, (VS, NSF)), 1, 1), K = VS * NSF. sf_id: the
// fragment starts sf_id bytes into its cells (tmem_ptr + sf_id; CuTe's block-scaled MMA traits take
// the instruction descriptor's scale-factor id from the top two bits of that address).
template <class SF, int VS, int NSF, int N_SM, bool IsSFA, int MN,
          UMMA::TmemAllocMode Mode = UMMA::TmemAllocMode::ScaleFactorDuplicated4by1>
void sf_case(char const* mode, int sf_id = 0) {
  Tensor s0 = UMMA::tmem_sf_frg<SF, VS, N_SM, IsSFA, Mode>::make(
      make_shape(make_shape(Int<MN>{}, make_shape(Int<VS>{}, Int<NSF>{})), _1{}, _1{}));
  Tensor s = make_tensor(s0.data() + sf_id, s0.layout());
  char head[256];
  snprintf(head, sizeof head,
           "\"which\":\"%s\",\"n_sm\":%d,\"mn\":%d,\"vs\":%d,\"nsf\":%d,\"sf\":\"%s\",\"mode\":\"%s\",\"sf_id\":%d",
           IsSFA ? "sfa" : "sfb", N_SM, MN, VS, NSF, TypeName<SF>::value, mode, sf_id);
  dump("sf", head, s);
}

template <class SF, int VS, int NSF>
void sf_grid() {
  sf_case<SF, VS, NSF, 1, true, 128>("4x1");
  sf_case<SF, VS, NSF, 1, false, 128>("4x1");
  sf_case<SF, VS, NSF, 1, false, 256>("4x1");
  sf_case<SF, VS, NSF, 2, true, 128>("4x1");   // cta_group::2, M = 256: 128 rows per CTA
  sf_case<SF, VS, NSF, 2, false, 256>("4x1");
  sf_case<SF, VS, NSF, 2, true, 64>("4x1");    // cta_group::2, M = 128: SFA stays 4x1
  sf_case<SF, VS, NSF, 2, false, 256, UMMA::TmemAllocMode::ScaleFactorDuplicated2by2>("2x2");  // ... SFB 2x2
}

template <class C>
void d_grid_1sm() {
  d_case<SM100_MMA_F16BF16_SS<half_t, half_t, C, 128, 8, K_, K_>, 1, 128, 8>("F16BF16_SS");
  d_case<SM100_MMA_F16BF16_SS<half_t, half_t, C, 128, 64, K_, K_>, 1, 128, 64>("F16BF16_SS");
  d_case<SM100_MMA_F16BF16_SS<half_t, half_t, C, 128, 256, K_, K_>, 1, 128, 256>("F16BF16_SS");
  d_case<SM100_MMA_F16BF16_SS<half_t, half_t, C, 64, 8, K_, K_>, 1, 64, 8>("F16BF16_SS");
  d_case<SM100_MMA_F16BF16_SS<half_t, half_t, C, 64, 64, K_, K_>, 1, 64, 64>("F16BF16_SS");
  d_case<SM100_MMA_F16BF16_SS<half_t, half_t, C, 64, 256, K_, K_>, 1, 64, 256>("F16BF16_SS");
  // Two M = 64 atoms stacked in M: Interleaved puts the second at lane base 16.
  d_case<SM100_MMA_F16BF16_SS<half_t, half_t, C, 64, 64, K_, K_>, 1, 64, 64, 128>("F16BF16_SS");
}

template <class C>
void d_grid_2sm() {
  d_case<SM100_MMA_F16BF16_2x1SM_SS<half_t, half_t, C, 256, 64, K_, K_>, 2, 256, 64>("F16BF16_2x1SM_SS");
  d_case<SM100_MMA_F16BF16_2x1SM_SS<half_t, half_t, C, 256, 256, K_, K_>, 2, 256, 256>("F16BF16_2x1SM_SS");
  d_case<SM100_MMA_F16BF16_2x1SM_SS<half_t, half_t, C, 128, 64, K_, K_>, 2, 128, 64>("F16BF16_2x1SM_SS");
  d_case<SM100_MMA_F16BF16_2x1SM_SS<half_t, half_t, C, 128, 256, K_, K_>, 2, 128, 256>("F16BF16_2x1SM_SS");
}

// Sparse metadata (tcgen05.mma.sp): UMMA::tmem_e_frg (the sparse traits' FrgTypeE) and tmem_e_frg_ws (.ws),
// over one MMA's ((M, K[, copies]), 1, TILES) where K counts logical elements of A. For every (tile, copy, row,
// k): lane, column and the sub-word index (units of the metadata element's bits: 1 for f16 / 8-bit, 2 for tf32,
// 1/2 for fp4, i.e. tmem_ptr<sparse_elem<S, uint8_t>>::OffsetShift 5, 4, 6).
template <class Frg, class V, int M, int K, int TILES>
void e_case(char const* kind, int ws) {
  Tensor t = Frg::make(make_shape(make_shape(Int<M>{}, Int<K>{}), _1{}, Int<TILES>{}));
  using T = typename remove_cvref_t<decltype(t.data())>::value_type;
  // .ws copies: a third sub-mode (tf32 / f16 atoms), or the high part of an over-long K mode (8-bit atoms:
  // Shape<M, Shape<64, copies>>); element k of copy q is then K index k + K * q.
  constexpr int R0 = decltype(rank<0>(t))::value;
  int copies = 1;
  if constexpr (R0 == 3) copies = int(size<0, 2>(t));
  else copies = int(size<0, 1>(t)) / K;
  printf("{\"rec\":\"e\",\"kind\":\"%s\",\"ws\":%d,\"m\":%d,\"k\":%d,\"copies\":%d,\"tiles\":%d,\"shift\":%d", kind, ws,
         M, K, copies, TILES, int(tmem_ptr<T>::OffsetShift));
  char const* field[3] = {"lane", "col", "idx"};
  for (int f = 0; f < 3; ++f) {
    printf(",\"%s\":[", field[f]);
    char const* sep = "";
    for (int b = 0; b < TILES; ++b)
      for (int q = 0; q < copies; ++q)
        for (int i = 0; i < M; ++i)
          for (int k = 0; k < K; ++k) {
            int off;
            if constexpr (R0 == 3) off = t.layout()(make_coord(make_coord(i, k, q), 0, b));
            else off = t.layout()(make_coord(make_coord(i, k + K * q), 0, b));
            auto p = t.data() + off;
            printf("%s%d", sep, f == 0 ? int(p.dp_) : f == 1 ? int(p.col_) : int(p.idx_));
            sep = ",";
          }
    printf("]");
  }
  printf("}\n");
}

// D of tcgen05.mma.ws: UMMA::tmem_frg_ws (layouts D, E, G) over one MMA's ((M, N), 1, 1).
template <int M, int N>
void dws_case() {
  Tensor d = UMMA::tmem_frg_ws<float, float, 1>::make(make_shape(make_shape(Int<M>{}, Int<N>{}), _1{}, _1{}));
  char head[128];
  snprintf(head, sizeof head, "\"op\":\"tmem_frg_ws\",\"n_sm\":1,\"m\":%d,\"n\":%d,\"dtype\":\"f32\"", M, N);
  dump("dws", head, d);
}

// Scale factors of sm103's K = 96 MMAs as CuTe's sm103 mainloop iterates them: tmem_sf_frg over one factor per
// K step, ((MN, (VS, 1)), 1, NK) (sm103_blockscaled_mma_warpspecialized.hpp: MmaIterShapeSFA/SFB), MMA j
// starting at factor 3j (VS = 32) or 6j (VS = 16).
template <class SF, int VS, bool IsSFA, int MN, int NK>
void sf103_case() {
  Tensor s = UMMA::tmem_sf_frg<SF, VS, 1, IsSFA>::make(
      make_shape(make_shape(Int<MN>{}, make_shape(Int<VS>{}, _1{})), _1{}, Int<NK>{}));
  char head[256];
  snprintf(head, sizeof head, "\"which\":\"%s\",\"n_sm\":1,\"mn\":%d,\"vs\":%d,\"nk\":%d,\"sf\":\"%s\"",
           IsSFA ? "sfa" : "sfb", MN, VS, NK, TypeName<SF>::value);
  dump("sf103", head, s);
}

int main() {
  setvbuf(stdout, nullptr, _IOFBF, 1 << 20);
  printf("{\"rec\":\"meta\",\"cutlass\":\"%d.%d.%d\"}\n", CUTLASS_MAJOR, CUTLASS_MINOR, CUTLASS_PATCH);
  d_grid_1sm<float>();
  d_grid_1sm<half_t>();
  d_grid_2sm<float>();
  d_grid_2sm<half_t>();
  // A in tensor memory (TS atoms, NonInterleaved), two MMAs deep in K.
  a_case<SM100_MMA_TF32_TS<tfloat32_t, tfloat32_t, float, 128, 64, K_, K_>, 1, 128, 64, 16>("TF32_TS");
  a_case<SM100_MMA_TF32_TS<tfloat32_t, tfloat32_t, float, 64, 64, K_, K_>, 1, 64, 64, 16>("TF32_TS");
  a_case<SM100_MMA_F16BF16_TS<half_t, half_t, float, 128, 64, K_, K_>, 1, 128, 64, 32>("F16BF16_TS");
  a_case<SM100_MMA_F16BF16_TS<half_t, half_t, half_t, 64, 64, K_, K_>, 1, 64, 64, 32>("F16BF16_TS");
  a_case<SM100_MMA_S8_TS<uint8_t, uint8_t, int32_t, 128, 64, K_, K_>, 1, 128, 64, 64>("S8_TS");
  a_case<SM100_MMA_S8_TS<uint8_t, uint8_t, int32_t, 64, 64, K_, K_>, 1, 64, 64, 64>("S8_TS");
  // Two M = 64 TS atoms stacked in M: NonInterleaved keeps lane base 0 (next columns instead).
  a_case<SM100_MMA_F16BF16_TS<half_t, half_t, float, 64, 64, K_, K_>, 1, 64, 64, 16, 128>("F16BF16_TS");
  // cta_group::2 TS atoms (A Duplicated).
  a_case<SM100_MMA_F16BF16_2x1SM_TS<half_t, half_t, float, 256, 64, K_, K_>, 2, 256, 64, 32>("F16BF16_2x1SM_TS");
  a_case<SM100_MMA_F16BF16_2x1SM_TS<half_t, half_t, float, 128, 64, K_, K_>, 2, 128, 64, 32>("F16BF16_2x1SM_TS");
  // Packed e2m1 A (8 per column): CuTe has no TS atom for it (no SM100_MMA_MXF4_TS); the builder alone.
  {
    Tensor a = UMMA::tmem_frg_1sm<float_e2m1_t, float_e2m1_t, UMMA::TmemAllocMode::NonInterleaved>::make(
        make_shape(make_shape(_128{}, _64{}), _1{}, _1{}));
    dump("a", "\"op\":\"tmem_frg_1sm\",\"n_sm\":1,\"m\":128,\"n\":0,\"dtype\":\"e2m1\",\"bits\":4", a);
  }
  // Scale factors, K = 64: 16-element blocks (4 per row, ue4m3) and 32-element blocks (2 per row, ue8m0).
  sf_grid<float_ue4m3_t, 16, 4>();
  sf_grid<float_ue8m0_t, 32, 2>();
  // A second scale-factor id: byte 2 for two factors per row (mxf4), bytes 1-3 for one (mxf8f6f4, K = 32).
  sf_case<float_ue8m0_t, 32, 2, 1, true, 128>("4x1", 2);
  sf_case<float_ue8m0_t, 32, 2, 1, false, 256>("4x1", 2);
  for (int id = 1; id < 4; ++id) {
    sf_case<float_ue8m0_t, 32, 1, 1, true, 128>("4x1", id);
    sf_case<float_ue8m0_t, 32, 1, 1, false, 128>("4x1", id);
  }
  // Sparse metadata: tcgen05.mma.sp M = 128 (two MMAs deep in K), and .ws M = 128 / 64 / 32.
  e_case<UMMA::tmem_e_frg<half_t>, half_t, 128, 32, 2>("f16", 0);
  e_case<UMMA::tmem_e_frg<tfloat32_t>, tfloat32_t, 128, 16, 2>("tf32", 0);
  e_case<UMMA::tmem_e_frg<uint8_t>, uint8_t, 128, 64, 2>("i8", 0);
  e_case<UMMA::tmem_e_frg<float_e2m1_t>, float_e2m1_t, 128, 128, 2>("mxf4", 0);
  e_case<UMMA::tmem_e_frg_ws<half_t>, half_t, 128, 32, 1>("f16", 1);
  e_case<UMMA::tmem_e_frg_ws<half_t>, half_t, 64, 32, 1>("f16", 1);
  e_case<UMMA::tmem_e_frg_ws<half_t>, half_t, 32, 32, 1>("f16", 1);
  e_case<UMMA::tmem_e_frg_ws<tfloat32_t>, tfloat32_t, 64, 16, 1>("tf32", 1);
  e_case<UMMA::tmem_e_frg_ws<tfloat32_t>, tfloat32_t, 32, 16, 1>("tf32", 1);
  e_case<UMMA::tmem_e_frg_ws<uint8_t>, uint8_t, 64, 64, 1>("i8", 1);
  e_case<UMMA::tmem_e_frg_ws<uint8_t>, uint8_t, 32, 64, 1>("i8", 1);
  // D of .ws.
  dws_case<128, 64>();
  dws_case<128, 256>();
  dws_case<64, 64>();
  dws_case<64, 256>();
  dws_case<32, 64>();
  dws_case<32, 128>();
  // sm103 K = 96 scale factors: .block32 (3 a MMA, ue8m0) and .block16 (6 a MMA, ue4m3), four MMAs deep.
  sf103_case<float_ue8m0_t, 32, true, 128, 12>();
  sf103_case<float_ue8m0_t, 32, false, 128, 12>();
  sf103_case<float_ue8m0_t, 32, false, 256, 12>();
  sf103_case<float_ue4m3_t, 16, true, 128, 24>();
  sf103_case<float_ue4m3_t, 16, false, 256, 24>();
  printf("{\"rec\":\"end\"}\n");
  return 0;
}
