// Peer oracle for tcemu: shared-memory and instruction descriptors as CuTe builds them.
//
// Host-only program: it #includes CuTe (nvidia-cutlass wheel) and calls CuTe's own builders;
// nothing of CuTe is copied here. Output: one JSON object per line on stdout (schema in
// README.md next to this file). CuTe's host fallback of cast_smem_ptr_to_uint() prints an
// "ERROR: ..." line per descriptor and returns 0; those lines are sent to stderr.
//
// Build: nvcc -std=c++17 -x c++ -O1 -DNDEBUG -I<cutlass include> umma_oracle.cu -o umma_oracle
// (-x cu --expt-relaxed-constexpr gives the same output, only slower: nothing here is device
// code. -DNDEBUG: CuTe asserts a sub-byte index of 0 when a packed-fp4 pointer is turned into a
// byte pointer; the byte holding the element is what we print.)

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <utility>

#include <cutlass/version.h>
#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/atom/mma_traits_sm100.hpp>

using namespace cute;

static FILE* out = stdout;

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------
template <class T> struct TypeName;
#define TCEMU_NAME(T, s) \
  template <> struct TypeName<T> { static constexpr char const* value = s; static constexpr char const* cxx = #T; };
TCEMU_NAME(tfloat32_t, "tf32")
TCEMU_NAME(half_t, "f16")
TCEMU_NAME(bfloat16_t, "bf16")
TCEMU_NAME(float_e4m3_t, "e4m3")
TCEMU_NAME(float_e5m2_t, "e5m2")
TCEMU_NAME(int8_t, "s8")
TCEMU_NAME(uint8_t, "u8")
TCEMU_NAME(float_e2m1_t, "e2m1")                              // packed, 4 bits in smem
TCEMU_NAME(float_e2m3_t, "e2m3")                              // packed C++ types (6 bits)
TCEMU_NAME(float_e3m2_t, "e3m2")
TCEMU_NAME(cutlass::detail::float_e2m1_unpacksmem_t, "e2m1")  // one per byte in smem
TCEMU_NAME(cutlass::detail::float_e2m3_unpacksmem_t, "e2m3")
TCEMU_NAME(cutlass::detail::float_e3m2_unpacksmem_t, "e3m2")
TCEMU_NAME(float, "f32")
TCEMU_NAME(int32_t, "s32")
TCEMU_NAME(float_ue8m0_t, "ue8m0")
TCEMU_NAME(float_ue4m3_t, "ue4m3")
#undef TCEMU_NAME

// ---------------------------------------------------------------------------------------------
// Part 1: shared-memory tiles and their descriptors
// ---------------------------------------------------------------------------------------------
enum class Sw { INTER, SW32, SW64, SW128, SW128_32B };

constexpr char const* sw_name(Sw s) {
  return s == Sw::INTER ? "INTER" : s == Sw::SW32 ? "SW32" : s == Sw::SW64 ? "SW64" : s == Sw::SW128 ? "SW128" : "SW128_32B";
}

// CuTe's canonical smem layout atoms (UMMA:: names; the first eight alias GMMA's).
template <class T, bool KMajor, Sw S> auto atom_of() {
  if constexpr (KMajor) {
    if constexpr (S == Sw::INTER) return UMMA::Layout_K_INTER_Atom<T>{};
    else if constexpr (S == Sw::SW32) return UMMA::Layout_K_SW32_Atom<T>{};
    else if constexpr (S == Sw::SW64) return UMMA::Layout_K_SW64_Atom<T>{};
    else return UMMA::Layout_K_SW128_Atom<T>{};
  } else {
    if constexpr (S == Sw::INTER) return UMMA::Layout_MN_INTER_Atom<T>{};
    else if constexpr (S == Sw::SW32) return UMMA::Layout_MN_SW32_Atom<T>{};
    else if constexpr (S == Sw::SW64) return UMMA::Layout_MN_SW64_Atom<T>{};
    else if constexpr (S == Sw::SW128) return UMMA::Layout_MN_SW128_Atom<T>{};
    else return UMMA::Layout_MN_SW128_32B_Atom<T>{};
  }
}

// A fake shared-memory window: CuTe's swizzle_ptr swizzles the absolute (host) pointer, so the
// window is 1024-aligned and offsets are taken from its start (= shared address 0, which is what
// make_*_desc reads as the start address on the host).
alignas(1024) static uint8_t smem_buf[1 << 17];

// Byte address a CuTe smem iterator dereferences (swizzle applied as CuTe applies it).
template <class T> uint64_t byte_addr(T* p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); }
template <class T> uint64_t byte_addr(subbyte_iterator<T> const& p) {
  return uint64_t(reinterpret_cast<uintptr_t>(raw_pointer_cast(p)));  // the byte holding the element
}
template <class P> uint64_t byte_addr(smem_ptr<P> const& p) { return byte_addr(p.get()); }
template <class S, class P> uint64_t byte_addr(swizzle_ptr<S, P> const& p) {
  return byte_addr(swizzle_ptr<S, P>::apply_swizzle(p.get()));
}

// ORACLE_PART: unset prints everything; 0 and 1 split the work in two binaries that can be
// compiled in parallel (0: K-major tiles, LBO-mode cases, instruction descriptors; 1: MN-major tiles).
#ifndef ORACLE_PART
#define ORACLE_PART -1
#endif
// Type map only (never called): the DescriptorIterator of a descriptor type.
UMMA::DescriptorIterator DescriptorIteratorOf(UMMA::SmemDescriptor);
GMMA::DescriptorIterator DescriptorIteratorOf(GmmaDescriptor);

static int next_tile_id = ORACLE_PART > 0 ? 10000 * ORACLE_PART : 0;

static void print_umma_desc(int tile, char const* how, int mn0, int k0, int mm, int kk, UMMA::SmemDescriptor d) {
  fprintf(out,
          "{\"rec\":\"smem_desc\",\"arch\":\"sm100\",\"tile\":%d,\"how\":\"%s\",\"mn0\":%d,\"k0\":%d,\"mm\":%d,\"kk\":%d,"
          "\"desc\":\"0x%016llx\",\"start_address\":%u,\"lbo\":%u,\"sbo\":%u,\"version\":%u,\"base_offset\":%u,"
          "\"lbo_mode\":%u,\"layout_type\":%u,\"layout_name\":\"%s\"}\n",
          tile, how, mn0, k0, mm, kk, (unsigned long long)uint64_t(d), unsigned(d.start_address_) << 4,
          unsigned(d.leading_byte_offset_) << 4, unsigned(d.stride_byte_offset_) << 4, unsigned(d.version_),
          unsigned(d.base_offset_), unsigned(d.lbo_mode_), unsigned(d.layout_type_),
          UMMA::to_string(UMMA::LayoutType(d.layout_type_)));
}

static void print_gmma_desc(int tile, char const* how, int mn0, int k0, int mm, int kk, GmmaDescriptor d) {
  fprintf(out,
          "{\"rec\":\"smem_desc\",\"arch\":\"sm90\",\"tile\":%d,\"how\":\"%s\",\"mn0\":%d,\"k0\":%d,\"mm\":%d,\"kk\":%d,"
          "\"desc\":\"0x%016llx\",\"start_address\":%u,\"lbo\":%u,\"sbo\":%u,\"base_offset\":%u,\"layout_type\":%u}\n",
          tile, how, mn0, k0, mm, kk, (unsigned long long)d.desc_, unsigned(d.bitfield.start_address_) << 4,
          unsigned(d.bitfield.leading_byte_offset_) << 4, unsigned(d.bitfield.stride_byte_offset_) << 4,
          unsigned(d.bitfield.base_offset_), unsigned(d.bitfield.layout_type_));
}

// One tile: tile_to_shape(atom, (MN, K)) placed `base` bytes into the window (0: 1024-aligned);
// the byte offset of every element from the window start; make_umma_desc on the whole tile (where
// CuTe accepts it); and the descriptors of the MMA sub-tiles exactly as CuTe's partition path makes
// them (MakeTensor<smem_desc<Major>>: make_*_desc on sub-tile 0, then DescriptorIterator + layout
// offset). On the host make_*_desc reads the start address as 0, so a tile at base != 0 gets its
// start through CuTe's DescriptorIterator as well (+ base / 16).
template <class T, bool KMajor, Sw S, int MN, int K, bool SM90>
void tile_case(int base = 0) {
  constexpr int bits = int(sizeof_bits_v<T>);
  using Atom = decltype(atom_of<T, KMajor, S>());
  constexpr int atom_mn = int(size<0>(Atom{}));
  constexpr int atom_k = int(size<1>(Atom{}));
  static_assert(MN % atom_mn == 0 && K % atom_k == 0, "tile is not a whole number of atoms");

  auto layout = tile_to_shape(Atom{}, Shape<Int<MN>, Int<K>>{});
  static_assert(int(cosize(layout)) * bits / 8 <= int(sizeof(smem_buf)) / 2, "buffer too small");
  if (base < 0 || base % 16 || base > int(sizeof(smem_buf)) / 2) { fprintf(stderr, "bad base %d\n", base); exit(2); }
  Tensor t = make_tensor(make_smem_ptr<T>(static_cast<void*>(smem_buf + base)), layout);

  int const id = next_tile_id++;
  uint64_t const window = uint64_t(reinterpret_cast<uintptr_t>(smem_buf));
  fprintf(out,
          "{\"rec\":\"tile\",\"id\":%d,\"atom\":\"%s\",\"swizzle\":\"%s\",\"dtype\":\"%s\",\"bits\":%d,\"major\":\"%s\","
          "\"mn\":%d,\"k\":%d,\"atom_mn\":%d,\"atom_k\":%d,\"base\":%d,\"offsets\":[",
          id, KMajor ? (S == Sw::INTER ? "Layout_K_INTER_Atom" : S == Sw::SW32 ? "Layout_K_SW32_Atom" : S == Sw::SW64 ? "Layout_K_SW64_Atom" : "Layout_K_SW128_Atom")
                     : (S == Sw::INTER ? "Layout_MN_INTER_Atom" : S == Sw::SW32 ? "Layout_MN_SW32_Atom" : S == Sw::SW64 ? "Layout_MN_SW64_Atom" : S == Sw::SW128 ? "Layout_MN_SW128_Atom" : "Layout_MN_SW128_32B_Atom"),
          sw_name(S), TypeName<T>::value, bits, KMajor ? "K" : "MN", MN, K, atom_mn, atom_k, base);
  for (int m = 0; m < MN; ++m) {
    for (int k = 0; k < K; ++k) {
      uint64_t a = byte_addr(t.data() + t.layout()(m, k));
      fprintf(out, (m | k) ? ",%llu" : "%llu", (unsigned long long)(a - window));
    }
  }
  fprintf(out, "]}\n");

  auto at_base = [base](auto d) { return *(decltype(DescriptorIteratorOf(d)){d} + base / 16); };
  constexpr auto umma_major = KMajor ? UMMA::Major::K : UMMA::Major::MN;
  // Whole tile: MN-major always canonical; K-major swizzled only within one atom of K.
  if constexpr (!KMajor || S == Sw::INTER || K == atom_k) {
    print_umma_desc(id, "tile", 0, 0, MN, K, at_base(UMMA::make_umma_desc<umma_major>(t)));
  }

  // MMA sub-tiles: K = 256 bits of K (one tcgen05.mma / wgmma K step), MN = 64 rows or one atom.
  constexpr int KS = 256 / bits;
  constexpr int MS0 = KMajor ? 64 : (atom_mn > 64 ? atom_mn : 64);
  constexpr int MS = MS0 < MN ? MS0 : MN;
  Tensor parts = tiled_divide(t, Shape<Int<MS>, Int<KS>>{});  // ((MS,KS), MN/MS, K/KS)
  {
    Tensor d = MakeTensor<UMMA::smem_desc<umma_major>>{}(parts);
    for (int i = 0; i < MN / MS; ++i)
      for (int j = 0; j < K / KS; ++j) print_umma_desc(id, "mma", i * MS, j * KS, MS, KS, at_base(d(0, i, j)));
  }
  if constexpr (SM90 && S != Sw::SW128_32B) {
    constexpr auto gmma_major = KMajor ? GMMA::Major::K : GMMA::Major::MN;
    Tensor d = MakeTensor<GMMA::smem_desc<gmma_major>>{}(parts);
    for (int i = 0; i < MN / MS; ++i)
      for (int j = 0; j < K / KS; ++j) print_gmma_desc(id, "mma", i * MS, j * KS, MS, KS, at_base(d(0, i, j)));
  }
}

// Tiles that do not start on a 1024-byte boundary: CuTe's swizzle_ptr swizzles the absolute
// address, as the hardware does with base offset 0 (which is all CuTe ever writes).
static void misaligned_cases() {
#if ORACLE_PART != 1
  for (int base : {128, 512, 528}) {
    tile_case<half_t, true, Sw::SW128, 128, 64, true>(base);
    tile_case<half_t, true, Sw::SW64, 128, 32, true>(base);
    tile_case<tfloat32_t, true, Sw::SW32, 64, 8, true>(base);
    tile_case<float_e4m3_t, true, Sw::INTER, 64, 32, true>(base);
  }
#endif
#if ORACLE_PART != 0
  for (int base : {128, 512, 528}) {
    tile_case<half_t, false, Sw::SW128, 128, 16, true>(base);
    tile_case<half_t, false, Sw::SW32, 64, 32, true>(base);
    tile_case<float_e4m3_t, false, Sw::SW128_32B, 128, 32, false>(base);
  }
#endif
}

// Grid over tile shapes (whole atoms only): (64, u), (128, u), (128, 2u), (256, 2u), where the
// K unit u is max(atom K, MMA K) for K-major and the MMA K (256 bits) for MN-major.
template <class T, bool KMajor, Sw S, bool SM90>
void tile_grid() {
  constexpr int bits = int(sizeof_bits_v<T>);
  using Atom = decltype(atom_of<T, KMajor, S>());
  constexpr int atom_mn = int(size<0>(Atom{}));
  constexpr int atom_k = int(size<1>(Atom{}));
  constexpr int mma_k = 256 / bits;
  constexpr int u = KMajor ? (atom_k > mma_k ? atom_k : mma_k) : mma_k;
  static_assert(u % atom_k == 0);
  if constexpr (64 % atom_mn == 0) tile_case<T, KMajor, S, 64, u, SM90>();
  if constexpr (128 % atom_mn == 0) { tile_case<T, KMajor, S, 128, u, SM90>(); tile_case<T, KMajor, S, 128, 2 * u, SM90>(); }
  if constexpr (256 % atom_mn == 0) tile_case<T, KMajor, S, 256, 2 * u, SM90>();
}

// SM90: also print wgmma descriptors (K-major: all wgmma smem types; MN-major: 16-bit only).
template <class T, bool SM90K, bool SM90MN, bool MNMajorOK = true>
void type_grid() {
#if ORACLE_PART != 1
  tile_grid<T, true, Sw::INTER, SM90K>();
  tile_grid<T, true, Sw::SW32, SM90K>();
  tile_grid<T, true, Sw::SW64, SM90K>();
  tile_grid<T, true, Sw::SW128, SM90K>();
#endif
#if ORACLE_PART != 0
  if constexpr (MNMajorOK) {
    tile_grid<T, false, Sw::INTER, SM90MN>();
    tile_grid<T, false, Sw::SW32, SM90MN>();
    tile_grid<T, false, Sw::SW64, SM90MN>();
    tile_grid<T, false, Sw::SW128, SM90MN>();
    tile_grid<T, false, Sw::SW128_32B, false>();
  }
#endif
}

// LBO mode 1 (PTX: LBO holds an encoded absolute address of the next chunk; used by CuTe's sm103
// K=96 block-scaled path, which rewrites the fields of the base descriptor through the union).
[[maybe_unused]] static void lbo_mode_cases() {
  using T = float_e2m1_t;
  auto layout = tile_to_shape(UMMA::Layout_K_SW128_Atom<T>{}, Shape<_128, _256>{});
  Tensor t = make_tensor(make_smem_ptr<T>(static_cast<void*>(smem_buf)), layout);
  Tensor parts = tiled_divide(t, Shape<_128, _64>{});
  Tensor d = MakeTensor<UMMA::smem_desc<UMMA::Major::K>>{}(parts);
  for (int j = 0; j + 1 < 4; ++j) {
    UMMA::SmemDescriptor a = d(0, 0, j), next = d(0, 0, j + 1);
    a.lbo_mode_ = 1;
    a.leading_byte_offset_ = next.start_address_;
    print_umma_desc(-1, "lbo_mode", 0, j * 64, 128, 64, a);
  }
}

// sm103 K = 96 (CuTe's sm103 block-scaled mainloop, sm103_blockscaled_mma_warpspecialized.hpp): A (or B) in shared
// memory as its SmemLayoutA, UMMA::tile_to_mma_shape(Layout_K_SW128_Atom<uint8_t>, ((MN, 16 bytes), 1, 8 K blocks,
// 3 stages), K-major order); the descriptor of every 16-byte K block from MakeTensor<smem_desc<K>> (its tCrA); and
// the eight K = 96 MMAs one three-stage k-tile issues (K block, stage, next stage, as its mma() lists them), each
// descriptor rewritten as SM103::mma_unpack rewrites it: lbo_mode_ = 1, LBO field = the next buffer's
// start_address_ field. Records: "sm103_tile" (byte offset of every (stage, row, K byte) from the window start)
// and "sm103_desc" (MMA j reads K bytes [48 j, 48 j + 48) of the three stages laid end to end).
template <int MN>
[[maybe_unused]] static void sm103_cases() {
  using T = uint8_t;
  auto layout = UMMA::tile_to_mma_shape(UMMA::Layout_K_SW128_Atom<T>{},
                                        make_shape(make_shape(Int<MN>{}, _16{}), _1{}, _8{}, _3{}), Step<_1, _2, _3>{});
  Tensor sA = make_tensor(make_smem_ptr<T>(smem_buf), layout);
  Tensor tCrA = MakeTensor<UMMA::smem_desc<UMMA::Major::K>>{}(sA);
  fprintf(out, "{\"rec\":\"sm103_tile\",\"mn\":%d,\"offsets\":[", MN);
  char const* sep = "";
  for (int st = 0; st < 3; ++st)
    for (int m = 0; m < MN; ++m)
      for (int kb = 0; kb < 128; ++kb) {
        fprintf(out, "%s%llu", sep, (unsigned long long)(byte_addr(&sA(make_coord(make_coord(m, kb % 16), 0, kb / 16, st))) -
                                                         byte_addr(smem_buf)));
        sep = ",";
      }
  fprintf(out, "]}\n");
  int const sched[8][3] = {{0, 0, 0}, {3, 0, 0}, {6, 0, 1}, {1, 1, 1}, {4, 1, 1}, {7, 1, 2}, {2, 2, 2}, {5, 2, 2}};
  for (int j = 0; j < 8; ++j) {
    UMMA::SmemDescriptor a = tCrA(0, 0, sched[j][0], sched[j][1]);
    UMMA::SmemDescriptor next = tCrA(0, 0, 0, sched[j][2]);
    a.lbo_mode_ = 1;
    a.leading_byte_offset_ = next.start_address_;
    fprintf(out, "{\"rec\":\"sm103_desc\",\"mn\":%d,\"mma\":%d,\"kblock\":%d,\"stage\":%d,\"next\":%d,"
                 "\"desc\":\"0x%016llx\"}\n", MN, j, sched[j][0], sched[j][1], sched[j][2], (unsigned long long)uint64_t(a));
  }
}

// ---------------------------------------------------------------------------------------------
// Part 2: instruction descriptors
// ---------------------------------------------------------------------------------------------
constexpr char const* major_name(UMMA::Major m) { return m == UMMA::Major::K ? "K" : "MN"; }

template <class A, class B, class C, int M, int N, UMMA::Major am, UMMA::Major bm,
          UMMA::ScaleIn an = UMMA::ScaleIn::One, UMMA::ScaleIn bn = UMMA::ScaleIn::One,
          UMMA::Saturate sat = UMMA::Saturate::False, bool sparse = false,
          UMMA::MaxShift shift = UMMA::MaxShift::NoShift>
void idesc(char const* kind, int sparse_id2 = 0) {
  uint32_t v;
  if (sparse) {
    v = uint32_t(UMMA::make_runtime_instr_desc<A, B, C, M, N, am, bm, an, bn, sat, sparse, shift>(uint16_t(sparse_id2)) >> 32);
  } else {
    v = uint32_t(UMMA::make_instr_desc<A, B, C, M, N, am, bm, an, bn, sat, sparse, shift>());
  }
  fprintf(out,
          "{\"rec\":\"idesc\",\"kind\":\"%s\",\"a\":\"%s\",\"b\":\"%s\",\"a_cxx\":\"%s\",\"b_cxx\":\"%s\",\"d\":\"%s\",\"m\":%d,\"n\":%d,\"a_major\":\"%s\","
          "\"b_major\":\"%s\",\"a_neg\":%d,\"b_neg\":%d,\"saturate\":%d,\"sparse\":%d,\"sparse_id2\":%d,\"max_shift\":%d,"
          "\"value\":\"0x%08x\"}\n",
          kind, TypeName<A>::value, TypeName<B>::value, TypeName<A>::cxx, TypeName<B>::cxx, TypeName<C>::value, M, N,
          major_name(am), major_name(bm), int(an), int(bn), int(sat), int(sparse), sparse_id2, int(shift), v);
}

template <class A, class B, class SF, int M, int N, UMMA::Major am = UMMA::Major::K, UMMA::Major bm = UMMA::Major::K,
          UMMA::ScaleIn an = UMMA::ScaleIn::One, UMMA::ScaleIn bn = UMMA::ScaleIn::One, bool sparse = false>
void idesc_bs(char const* kind, int a_sf_id = 0, int b_sf_id = 0, int k_size = 0, int sparse_id2 = 0) {
  UMMA::InstrDescriptorBlockScaled d = UMMA::make_instr_desc_block_scaled<A, B, float, SF, M, N, am, bm, an, bn, sparse>();
  d.k_size_ = k_size;  // as CuTe's SM103 mma_unpack does for K=96
  // Scale-factor ids come from the top two bits of the TMEM addresses of the scale factors.
  uint64_t e = UMMA::make_runtime_instr_desc_block_scaled<sparse>(d, uint32_t(a_sf_id) << 30, uint32_t(b_sf_id) << 30,
                                                                  uint16_t(sparse_id2));
  uint32_t v = uint32_t(e >> 32);
  fprintf(out,
          "{\"rec\":\"idesc\",\"kind\":\"%s\",\"a\":\"%s\",\"b\":\"%s\",\"a_cxx\":\"%s\",\"b_cxx\":\"%s\",\"d\":\"f32\",\"sf\":\"%s\",\"m\":%d,\"n\":%d,"
          "\"a_major\":\"%s\",\"b_major\":\"%s\",\"a_neg\":%d,\"b_neg\":%d,\"sparse\":%d,\"sparse_id2\":%d,"
          "\"a_sf_id\":%d,\"b_sf_id\":%d,\"k_size\":%d,\"value\":\"0x%08x\"}\n",
          kind, TypeName<A>::value, TypeName<B>::value, TypeName<A>::cxx, TypeName<B>::cxx, TypeName<SF>::value, M, N,
          major_name(am), major_name(bm), int(an), int(bn), int(sparse), sparse_id2, a_sf_id, b_sf_id, k_size, v);
}

// Legal N per CuTe's MMA op static_asserts (which follow the PTX shape tables).
constexpr bool legal_n(char const* kind0, int M, int N, bool b_mn) {
  // kind0[0]: 't' tf32, 'f' f16 / f8f6f4, 'i' i8, 'm' block scaled
  if (N < 8 || N > 256 || N % 8) return false;
  if (M == 256 && N % 16) return false;             // cta_group::2
  if (kind0[0] == 'i' && N != 8 && N % 16) return false;
  if (kind0[0] == 'i' && M == 256 && N % 32) return false;
  if (kind0[0] == 'f' && kind0[1] == '8' && b_mn && N % 16) return false;
  return true;
}

template <class A, class B, class C, int M, int... Ns>
void sweep_n(char const* kind, std::integer_sequence<int, Ns...>) {
  ((legal_n(kind, M, (Ns + 1) * 8, false) ? idesc<A, B, C, M, (Ns + 1) * 8, UMMA::Major::K, UMMA::Major::K>(kind) : void()), ...);
}
template <class A, class B, class SF, int M, int... Ns>
void sweep_n_bs(char const* kind, std::integer_sequence<int, Ns...>) {
  ((legal_n(kind, M, (Ns + 1) * 8, false) ? idesc_bs<A, B, SF, M, (Ns + 1) * 8>(kind) : void()), ...);
}

using N32 = std::make_integer_sequence<int, 32>;
constexpr auto K_ = UMMA::Major::K;
constexpr auto MN_ = UMMA::Major::MN;
constexpr auto NEG = UMMA::ScaleIn::Neg;
constexpr auto ONE = UMMA::ScaleIn::One;

// Majors and negates around a fixed shape; negate/transpose only where the PTX allows them.
template <class A, class B, class C, bool transpose_ok, bool negate_ok>
void variants(char const* kind) {
  idesc<A, B, C, 128, 256, K_, K_>(kind);
  idesc<A, B, C, 64, 8, K_, K_>(kind);
  idesc<A, B, C, 256, 144, K_, K_>(kind);
  if constexpr (transpose_ok) {
    idesc<A, B, C, 128, 128, MN_, K_>(kind);
    idesc<A, B, C, 128, 128, K_, MN_>(kind);
    idesc<A, B, C, 64, 48, MN_, MN_>(kind);
  }
  if constexpr (negate_ok) {
    idesc<A, B, C, 128, 64, K_, K_, NEG, ONE>(kind);
    idesc<A, B, C, 128, 64, K_, K_, ONE, NEG>(kind);
    idesc<A, B, C, 64, 32, K_, MN_, NEG, NEG>(kind);
  }
}

template <class A, class B> void f8f6f4_pair() {
  constexpr bool t = (is_same_v<A, float_e4m3_t> || is_same_v<A, float_e5m2_t>) &&
                     (is_same_v<B, float_e4m3_t> || is_same_v<B, float_e5m2_t>);
  variants<A, B, float, t, true>("f8f6f4");
  idesc<A, B, half_t, 128, 128, K_, K_>("f8f6f4");
}
template <class A, class... Bs> void f8f6f4_row() { (f8f6f4_pair<A, Bs>(), ...); }

template <class A, class B, class SF> void bs_variants(char const* kind, bool transpose_ok, bool is_fp4) {
  idesc_bs<A, B, SF, 128, 256>(kind);
  idesc_bs<A, B, SF, 256, 128>(kind);
  idesc_bs<A, B, SF, 128, 64, K_, K_, NEG, ONE>(kind);
  idesc_bs<A, B, SF, 128, 64, K_, K_, ONE, NEG>(kind);
  if (transpose_ok) {
    idesc_bs<A, B, SF, 128, 128, MN_, K_>(kind);
    idesc_bs<A, B, SF, 128, 128, K_, MN_>(kind);
  }
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      if (!is_fp4 || ((a % 2 == 0) && (b % 2 == 0))) idesc_bs<A, B, SF, 128, 128>(kind, a, b);
}
template <class A, class... Bs> void mxf8f6f4_row() {
  (bs_variants<A, Bs, float_ue8m0_t>("mxf8f6f4",
      (is_same_v<A, float_e4m3_t> || is_same_v<A, float_e5m2_t>) && (is_same_v<Bs, float_e4m3_t> || is_same_v<Bs, float_e5m2_t>),
      false), ...);
}

[[maybe_unused]] static void instr_grid() {
  using cutlass::detail::float_e2m1_unpacksmem_t;
  using cutlass::detail::float_e2m3_unpacksmem_t;
  using cutlass::detail::float_e3m2_unpacksmem_t;
  // N sweeps for M in {64, 128, 256} (256: cta_group::2), one representative per kind.
  sweep_n<tfloat32_t, tfloat32_t, float, 64>("tf32", N32{});
  sweep_n<tfloat32_t, tfloat32_t, float, 128>("tf32", N32{});
  sweep_n<tfloat32_t, tfloat32_t, float, 256>("tf32", N32{});
  sweep_n<half_t, half_t, half_t, 64>("f16", N32{});
  sweep_n<half_t, half_t, half_t, 128>("f16", N32{});
  sweep_n<bfloat16_t, bfloat16_t, float, 128>("f16", N32{});
  sweep_n<bfloat16_t, bfloat16_t, float, 256>("f16", N32{});
  sweep_n<float_e4m3_t, float_e4m3_t, float, 64>("f8f6f4", N32{});
  sweep_n<float_e4m3_t, float_e5m2_t, float, 128>("f8f6f4", N32{});
  sweep_n<float_e4m3_t, float_e4m3_t, float, 256>("f8f6f4", N32{});
  sweep_n<int8_t, int8_t, int32_t, 64>("i8", N32{});
  sweep_n<int8_t, uint8_t, int32_t, 128>("i8", N32{});
  sweep_n<uint8_t, uint8_t, int32_t, 256>("i8", N32{});
  sweep_n_bs<float_e4m3_t, float_e4m3_t, float_ue8m0_t, 128>("mxf8f6f4", N32{});
  sweep_n_bs<float_e2m1_unpacksmem_t, float_e5m2_t, float_ue8m0_t, 256>("mxf8f6f4", N32{});
  sweep_n_bs<float_e2m1_t, float_e2m1_t, float_ue8m0_t, 128>("mxf4", N32{});
  sweep_n_bs<float_e2m1_t, float_e2m1_t, float_ue4m3_t, 128>("mxf4nvf4", N32{});
  sweep_n_bs<float_e2m1_t, float_e2m1_t, float_ue4m3_t, 256>("mxf4nvf4", N32{});

  // Type grids with majors / negates.
  variants<tfloat32_t, tfloat32_t, float, true, true>("tf32");
  variants<half_t, half_t, half_t, true, true>("f16");
  variants<half_t, half_t, float, true, true>("f16");
  variants<bfloat16_t, bfloat16_t, float, true, true>("f16");
  f8f6f4_row<float_e4m3_t, float_e4m3_t, float_e5m2_t, float_e2m3_unpacksmem_t, float_e3m2_unpacksmem_t, float_e2m1_unpacksmem_t>();
  f8f6f4_row<float_e5m2_t, float_e4m3_t, float_e5m2_t, float_e2m3_unpacksmem_t, float_e3m2_unpacksmem_t, float_e2m1_unpacksmem_t>();
  f8f6f4_row<float_e2m3_unpacksmem_t, float_e4m3_t, float_e5m2_t, float_e2m3_unpacksmem_t, float_e3m2_unpacksmem_t, float_e2m1_unpacksmem_t>();
  f8f6f4_row<float_e3m2_unpacksmem_t, float_e4m3_t, float_e5m2_t, float_e2m3_unpacksmem_t, float_e3m2_unpacksmem_t, float_e2m1_unpacksmem_t>();
  f8f6f4_row<float_e2m1_unpacksmem_t, float_e4m3_t, float_e5m2_t, float_e2m3_unpacksmem_t, float_e3m2_unpacksmem_t, float_e2m1_unpacksmem_t>();
  // Packed sub-byte C++ types handed to make_instr_desc (what to_UMMAFormat makes of them).
  idesc<float_e2m3_t, float_e3m2_t, float, 128, 128, K_, K_>("f8f6f4");
  idesc<float_e2m1_t, float_e2m1_t, float, 128, 128, K_, K_>("f8f6f4");
  variants<int8_t, int8_t, int32_t, true, false>("i8");
  variants<int8_t, uint8_t, int32_t, true, false>("i8");
  variants<uint8_t, int8_t, int32_t, true, false>("i8");
  variants<uint8_t, uint8_t, int32_t, true, false>("i8");
  idesc<int8_t, int8_t, int32_t, 128, 128, K_, K_, ONE, ONE, UMMA::Saturate::True>("i8");
  idesc<uint8_t, int8_t, int32_t, 64, 16, MN_, K_, ONE, ONE, UMMA::Saturate::True>("i8");
  idesc<int8_t, uint8_t, int32_t, 256, 256, K_, MN_, ONE, ONE, UMMA::Saturate::True>("i8");
  // Sparse (bits 0-2) and the .ws maximum shift (bits 30-31).
  idesc<half_t, half_t, float, 128, 128, K_, K_, ONE, ONE, UMMA::Saturate::False, true>("f16", 0);
  idesc<half_t, half_t, float, 128, 128, K_, K_, ONE, ONE, UMMA::Saturate::False, true>("f16", 1);
  idesc<tfloat32_t, tfloat32_t, float, 64, 64, K_, K_, ONE, ONE, UMMA::Saturate::False, true>("tf32", 2);
  idesc<float_e4m3_t, float_e4m3_t, float, 128, 64, K_, K_, ONE, ONE, UMMA::Saturate::False, true>("f8f6f4", 3);
  idesc<int8_t, int8_t, int32_t, 128, 64, K_, K_, ONE, ONE, UMMA::Saturate::True, true>("i8", 1);
  idesc<half_t, half_t, float, 64, 64, K_, K_, ONE, ONE, UMMA::Saturate::False, false, UMMA::MaxShift::MaxShift8>("f16");
  idesc<half_t, half_t, float, 64, 64, K_, K_, ONE, ONE, UMMA::Saturate::False, false, UMMA::MaxShift::MaxShift16>("f16");
  idesc<bfloat16_t, bfloat16_t, float, 64, 128, K_, K_, ONE, ONE, UMMA::Saturate::False, false, UMMA::MaxShift::MaxShift32>("f16");
  idesc<int8_t, int8_t, int32_t, 64, 64, K_, K_, ONE, ONE, UMMA::Saturate::False, false, UMMA::MaxShift::MaxShift32>("i8");

  // Block scaled.
  mxf8f6f4_row<float_e4m3_t, float_e4m3_t, float_e5m2_t, float_e2m3_unpacksmem_t, float_e3m2_unpacksmem_t, float_e2m1_unpacksmem_t>();
  mxf8f6f4_row<float_e5m2_t, float_e4m3_t, float_e5m2_t, float_e2m3_unpacksmem_t, float_e3m2_unpacksmem_t, float_e2m1_unpacksmem_t>();
  mxf8f6f4_row<float_e2m3_unpacksmem_t, float_e4m3_t, float_e5m2_t, float_e2m3_unpacksmem_t, float_e3m2_unpacksmem_t, float_e2m1_unpacksmem_t>();
  mxf8f6f4_row<float_e3m2_unpacksmem_t, float_e4m3_t, float_e5m2_t, float_e2m3_unpacksmem_t, float_e3m2_unpacksmem_t, float_e2m1_unpacksmem_t>();
  mxf8f6f4_row<float_e2m1_unpacksmem_t, float_e4m3_t, float_e5m2_t, float_e2m3_unpacksmem_t, float_e3m2_unpacksmem_t, float_e2m1_unpacksmem_t>();
  bs_variants<float_e2m1_t, float_e2m1_t, float_ue8m0_t>("mxf4", false, true);
  bs_variants<float_e2m1_t, float_e2m1_t, float_ue8m0_t>("mxf4nvf4", false, true);
  bs_variants<float_e2m1_t, float_e2m1_t, float_ue4m3_t>("mxf4nvf4", false, true);
  // K = 96 (k_size bit, sm103) and sparse block-scaled forms.
  idesc_bs<float_e2m1_t, float_e2m1_t, float_ue8m0_t, 128, 128>("mxf4", 0, 0, 1);
  idesc_bs<float_e2m1_t, float_e2m1_t, float_ue4m3_t, 128, 256>("mxf4nvf4", 2, 0, 1);
  idesc_bs<float_e2m1_t, float_e2m1_t, float_ue8m0_t, 256, 128>("mxf4nvf4", 0, 2, 1);
  idesc_bs<float_e4m3_t, float_e4m3_t, float_ue8m0_t, 128, 128, K_, K_, ONE, ONE, true>("mxf8f6f4", 1, 2, 0, 0);
  idesc_bs<float_e4m3_t, float_e4m3_t, float_ue8m0_t, 128, 128, K_, K_, ONE, ONE, true>("mxf8f6f4", 0, 0, 0, 1);
  idesc_bs<float_e2m1_t, float_e2m1_t, float_ue4m3_t, 128, 128, K_, K_, ONE, ONE, true>("mxf4nvf4", 0, 0, 0, 0);
}

int main() {
  // JSON goes to the real stdout; CuTe's host-side printf diagnostics go to stderr.
  int json_fd = dup(1);
  dup2(2, 1);
  out = fdopen(json_fd, "w");
  setvbuf(out, nullptr, _IOFBF, 1 << 20);
  fprintf(out, "{\"rec\":\"meta\",\"part\":%d,\"cutlass\":\"%d.%d.%d\",\"smem_buf_mod_1024\":%d}\n", ORACLE_PART,
          CUTLASS_MAJOR, CUTLASS_MINOR, CUTLASS_PATCH, int(reinterpret_cast<uintptr_t>(smem_buf) % 1024));

  type_grid<tfloat32_t, true, false>();
  type_grid<half_t, true, true>();
  type_grid<float_e4m3_t, true, false>();
  type_grid<float_e2m1_t, false, false, false>();  // packed fp4: K-major only (mxf4*), no wgmma
  misaligned_cases();
#if ORACLE_PART != 1
  lbo_mode_cases();
  sm103_cases<128>();
  sm103_cases<256>();
  instr_grid();
#endif
  fprintf(out, "{\"rec\":\"end\",\"part\":%d}\n", ORACLE_PART);
  fclose(out);
  return 0;
}
