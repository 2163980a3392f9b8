// The matrix types of Metal for the emulator (included by metal_emu.h):
// simdgroup_matrix 8x8 (every Apple GPU) and the Metal 4 MetalPerformancePrimitives
// matmul2d on cooperative tensors, as far as generated code uses them.
//
// simdgroup_matrix: every lane holds the whole 8x8 matrix, and loads and
// multiplies compute it redundantly, so the lanes' copies agree. thread_elements()
// is a lane's two elements in Apple's layout (below); a lane may change them, so
// the multiplies first gather each element from the lane that owns it (a
// simdgroup collective: every lane of the simdgroup must call them, as on the
// GPU), and a store writes only the elements each lane owns.
//
// Cooperative tensors: per-lane element arrays in the emulator's own layout
// (coop_row / coop_col, docs/design/metal.md "Cooperative tensors in the
// emulator"); run() gathers the lanes' input elements, and each lane computes
// its destination elements. This checks that generated code is consistent with
// the layout it asks for, not the M5's hardware layout.
#pragma once

#include <type_traits>

namespace tl::emu {

// Apple's layout of an 8x8 simdgroup_matrix: lane l holds (row, col) and (row, col + 1).
constexpr int sgm_row(int lane) {
  return ((lane >> 4) & 1) * 4 + ((lane >> 1) & 3);
}
constexpr int sgm_col(int lane) {
  return ((lane >> 3) & 1) * 4 + (lane & 1) * 2;
}

// The emulator's layout of a Rows x Cols cooperative tensor: element i of lane l is
// element l * E + i, row-major, with E = Rows * Cols / 32 elements per lane (each
// lane holds one contiguous run of a row).
constexpr int coop_row(int rows, int cols, int lane, int i) {
  return (lane * (rows * cols / 32) + i) / cols;
}
constexpr int coop_col(int rows, int cols, int lane, int i) {
  return (lane * (rows * cols / 32) + i) % cols;
}

template <class T>
struct ElementOf {
  using type = T;
};
template <class T>
requires requires {
  typename T::value_type;
}
struct ElementOf<T> {
  using type = typename T::value_type;
};

// The accumulator of a matrix product: float for floating types, int64 for integers.
template <class T>
using AccumulatorOf = std::conditional_t<std::is_integral_v<T>, int64_t, float>;

}  // namespace tl::emu

namespace metal {

// ---- simdgroup_matrix (MSL names its template parameters <T, Cols, Rows>).
template <class T, int Cols, int Rows>
struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "the emulator has 8x8 simdgroup matrices only");
  alignas(16) T e[64];  // row-major

  simdgroup_matrix() = default;
  explicit simdgroup_matrix(T diagonal) {
    for (int i = 0; i < 64; ++i) e[i] = i / 8 == i % 8 ? diagonal : T(0);
  }
  vec<T, 2>& thread_elements() { return *reinterpret_cast<vec<T, 2>*>(&e[owned(tl::emu::simd_lane())]); }
  const vec<T, 2>& thread_elements() const {
    return *reinterpret_cast<const vec<T, 2>*>(&e[owned(tl::emu::simd_lane())]);
  }
  // The first of the two elements `lane` owns.
  static constexpr int owned(int lane) { return tl::emu::sgm_row(lane) * 8 + tl::emu::sgm_col(lane); }
};
using simdgroup_float8x8 = simdgroup_matrix<float, 8, 8>;
using simdgroup_half8x8 = simdgroup_matrix<half, 8, 8>;
using simdgroup_bfloat8x8 = simdgroup_matrix<bfloat, 8, 8>;

template <class T, int Cols, int Rows>
inline simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, Cols, Rows> m;
  for (T& x : m.e) x = value;
  return m;
}

// matrix_origin is (column, row) in the source; with transpose_matrix, element (r, c)
// of the matrix comes from (c, r) of the 8x8 block there.
template <class T, class U>
inline void simdgroup_load(simdgroup_matrix<T, 8, 8>& d, const U* src, ulong elements_per_row = 8,
                           ulong2 matrix_origin = ulong2(0), bool transpose_matrix = false) {
  const U* block = src + matrix_origin.y * elements_per_row + matrix_origin.x;
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c)
      d.e[r * 8 + c] = T(transpose_matrix ? block[c * elements_per_row + r] : block[r * elements_per_row + c]);
}

// Each lane writes the elements it owns (and those of lanes a short simdgroup lacks).
template <class T, class U>
inline void simdgroup_store(const simdgroup_matrix<T, 8, 8>& a, U* dst, ulong elements_per_row = 8,
                            ulong2 matrix_origin = ulong2(0), bool transpose_matrix = false) {
  U* block = dst + matrix_origin.y * elements_per_row + matrix_origin.x;
  const int lanes = tl::emu::simd_size();
  for (int owner = tl::emu::simd_lane(); owner < tl::emu::kSimdWidth; owner += lanes) {
    const int r = tl::emu::sgm_row(owner);
    for (int c = tl::emu::sgm_col(owner); c < tl::emu::sgm_col(owner) + 2; ++c)
      (transpose_matrix ? block[c * elements_per_row + r] : block[r * elements_per_row + c]) = U(a.e[r * 8 + c]);
  }
}

namespace detail {

// d = a * b (+ c): gathers each operand element from its owner lane, then computes
// the whole product in float, adding the products to c in k order.
template <class TD, class TA, class TB, class TC>
inline void simdgroup_mma(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                          const simdgroup_matrix<TB, 8, 8>& b, const simdgroup_matrix<TC, 8, 8>* c,
                          const tl::emu::Site& at) {
  struct Owned {
    vec<TA, 2> a;
    vec<TB, 2> b;
    vec<TC, 2> c;
  };
  using A = simdgroup_matrix<TA, 8, 8>;
  using B = simdgroup_matrix<TB, 8, 8>;
  using C = simdgroup_matrix<TC, 8, 8>;
  Owned mine{a.thread_elements(), b.thread_elements(), c ? c->thread_elements() : vec<TC, 2>(TC(0))};
  auto lanes = tl::emu::simd_exchange(mine, at);
  A ga = a;
  B gb = b;
  C gc = c ? *c : make_filled_simdgroup_matrix<TC, 8, 8>(TC(0));
  for (int l = 0; l < tl::emu::kSimdWidth; ++l) {
    if (!lanes.active(l)) continue;
    const Owned o = lanes[l];
    for (int j = 0; j < 2; ++j) {
      ga.e[A::owned(l) + j] = o.a[j];
      gb.e[B::owned(l) + j] = o.b[j];
      gc.e[C::owned(l) + j] = o.c[j];
    }
  }
  for (int r = 0; r < 8; ++r)
    for (int col = 0; col < 8; ++col) {
      float sum = float(gc.e[r * 8 + col]);
      for (int k = 0; k < 8; ++k) sum += float(ga.e[r * 8 + k]) * float(gb.e[k * 8 + col]);
      d.e[r * 8 + col] = TD(sum);
    }
}

}  // namespace detail

template <class TD, class TA, class TB, class TC>
inline void simdgroup_multiply_accumulate(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                                          const simdgroup_matrix<TB, 8, 8>& b, const simdgroup_matrix<TC, 8, 8>& c,
                                          tl::emu::Site at = TL_MSL_SITE("simdgroup_multiply_accumulate")) {
  detail::simdgroup_mma(d, a, b, &c, at);
}
template <class TD, class TA, class TB>
inline void simdgroup_multiply(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                               const simdgroup_matrix<TB, 8, 8>& b,
                               tl::emu::Site at = TL_MSL_SITE("simdgroup_multiply")) {
  detail::simdgroup_mma(d, a, b, static_cast<const simdgroup_matrix<TD, 8, 8>*>(nullptr), at);
}

// ---- Metal 4 cooperative tensors (the parts matmul2d needs).
struct execution_thread {};
struct execution_simdgroup {};
template <int N>
struct execution_simdgroups {};

template <class T>
using remove_addrspace_t = T;

template <class T, int Rows, int Cols>
struct cooperative_tensor {
  static_assert(Rows * Cols % 32 == 0, "a cooperative tensor spreads its elements evenly over 32 lanes");
  using value_type = T;
  using element_type = T;
  static constexpr int rows = Rows, cols = Cols, per_lane = Rows * Cols / 32;

  T elems[per_lane] = {};

  T& operator[](int i) { return elems[i]; }
  const T& operator[](int i) const { return elems[i]; }
  static constexpr ushort get_capacity() { return per_lane; }
  bool is_valid_element(int) const { return true; }  // every element of this layout is valid
  // (column, row) of the calling lane's element i: x first, as MPP's tensor coordinates.
  array<int, 2> get_multidimensional_index(int i) const {
    const int lane = tl::emu::simd_lane();
    return {{tl::emu::coop_col(Rows, Cols, lane, i), tl::emu::coop_row(Rows, Cols, lane, i)}};
  }
  // The names the MetalPerformancePrimitives header's usage comment gives the same calls.
  static constexpr ushort capacity() { return per_lane; }
  bool mask(int i) const { return is_valid_element(i); }
  array<int, 2> multidimensional_indices(int i) const { return get_multidimensional_index(i); }
};

}  // namespace metal

namespace mpp::tensor_ops {

struct matmul2d_descriptor {
  enum class mode { multiply, multiply_accumulate };
  int m, n, k;
  bool transpose_left, transpose_right, relaxed_precision;
  mode matmul_mode;
  constexpr matmul2d_descriptor(int m_, int n_, int k_ = -1, bool transpose_left_ = false,
                                bool transpose_right_ = false, bool relaxed_precision_ = false,
                                mode matmul_mode_ = mode::multiply)
      : m(m_),
        n(n_),
        k(k_),
        transpose_left(transpose_left_),
        transpose_right(transpose_right_),
        relaxed_precision(relaxed_precision_),
        matmul_mode(matmul_mode_) {}
};
using mode = matmul2d_descriptor::mode;

// The left operand is M x K (K x M with transpose_left), the right K x N (N x K with
// transpose_right), the destination M x N; each cooperative tensor holds its operand
// as stored, in the emulator's lane layout. run() computes
// destination = left * right (+ destination with mode::multiply_accumulate), in float
// (int64 for integer destinations) with the products added in k order;
// relaxed_precision changes nothing.
template <matmul2d_descriptor D, class Scope, class... Args>
struct matmul2d {
  static_assert(std::is_same_v<Scope, metal::execution_simdgroup>,
                "the emulator runs matmul2d on one simdgroup (metal::execution_simdgroup)");
  static_assert(D.m > 0 && D.n > 0 && D.k > 0, "the emulator needs a matmul2d_descriptor with static m, n and k");
  static constexpr matmul2d_descriptor descriptor = D;
  static constexpr int kLeftRows = D.transpose_left ? D.k : D.m, kLeftCols = D.transpose_left ? D.m : D.k;
  static constexpr int kRightRows = D.transpose_right ? D.n : D.k, kRightCols = D.transpose_right ? D.k : D.n;

  template <class L, class R, class E, class... More>
  using cooperative_tensor_left_input_t =
      metal::cooperative_tensor<typename tl::emu::ElementOf<L>::type, kLeftRows, kLeftCols>;
  template <class L, class R, class E, class... More>
  using cooperative_tensor_right_input_t =
      metal::cooperative_tensor<typename tl::emu::ElementOf<R>::type, kRightRows, kRightCols>;
  template <class L, class R, class E, class... More>
  using cooperative_tensor_destination_t = metal::cooperative_tensor<E, D.m, D.n>;

  template <class L, class R, class E, class... More>
  cooperative_tensor_left_input_t<L, R, E> get_left_input_cooperative_tensor() const {
    return {};
  }
  template <class L, class R, class E, class... More>
  cooperative_tensor_right_input_t<L, R, E> get_right_input_cooperative_tensor() const {
    return {};
  }
  template <class L, class R, class E, class... More>
  cooperative_tensor_destination_t<L, R, E> get_destination_cooperative_tensor() const {
    return {};
  }

  template <class TA, class TB, class TD>
  void run(const metal::cooperative_tensor<TA, kLeftRows, kLeftCols>& left,
           const metal::cooperative_tensor<TB, kRightRows, kRightCols>& right,
           metal::cooperative_tensor<TD, D.m, D.n>& destination,
           tl::emu::Site at = TL_MSL_SITE("matmul2d::run")) const {
    constexpr int kA = kLeftRows * kLeftCols / 32, kB = kRightRows * kRightCols / 32;
    struct Inputs {
      TA a[kA];
      TB b[kB];
    };
    Inputs mine;
    for (int i = 0; i < kA; ++i) mine.a[i] = left[i];
    for (int i = 0; i < kB; ++i) mine.b[i] = right[i];
    auto lanes = tl::emu::simd_exchange(mine, at);
    if (lanes.lanes != 0xffffffffu) {
      tl::emu::record_failure(std::string("matmul2d::run at line ") + std::to_string(at.line) +
                              " needs all 32 lanes of the simdgroup; lane mask " + std::to_string(lanes.lanes) +
                              " took part");
      return;
    }
    // The operands as stored, row-major: element i of lane l is element l * per_lane + i.
    TA a[kLeftRows * kLeftCols];
    TB b[kRightRows * kRightCols];
    for (int l = 0; l < 32; ++l) {
      const Inputs in = lanes[l];
      for (int i = 0; i < kA; ++i) a[l * kA + i] = in.a[i];
      for (int i = 0; i < kB; ++i) b[l * kB + i] = in.b[i];
    }
    using Acc = tl::emu::AccumulatorOf<TD>;
    const int lane = tl::emu::simd_lane();
    for (int i = 0; i < destination.per_lane; ++i) {
      const int r = tl::emu::coop_row(D.m, D.n, lane, i), c = tl::emu::coop_col(D.m, D.n, lane, i);
      Acc sum = D.matmul_mode == mode::multiply_accumulate ? Acc(destination[i]) : Acc(0);
      for (int k = 0; k < D.k; ++k) {
        const TA& x = D.transpose_left ? a[k * D.m + r] : a[r * D.k + k];
        const TB& y = D.transpose_right ? b[c * D.k + k] : b[k * D.n + c];
        sum += Acc(x) * Acc(y);
      }
      destination[i] = TD(sum);
    }
  }
};

}  // namespace mpp::tensor_ops
