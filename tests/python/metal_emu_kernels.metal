// Hand-written MSL in the code generator's style (docs/design/metal.md) for
// tests/python/test_metal_emu.py: each kernel exercises a group of the Metal
// emulator's shims (device/emu/metal_emu.h) and has the emulation entry of the
// contract. The kernels are also valid MSL (the templates and the TL_EMULATE
// blocks included), so the same file can be compiled by the Metal compiler.
#include <metal_stdlib>
#include <metal_simdgroup>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;

// ---- scalar conversions and literals
[[kernel, max_total_threads_per_threadgroup(64)]] void convert_kernel(
    const device float* __restrict X [[buffer(0)]], device half* H [[buffer(1)]], device bfloat* Bf [[buffer(2)]],
    device float* Back [[buffer(3)]], device float* Lit [[buffer(4)]], device int* I [[buffer(5)]],
    uint3 blockIdx [[threadgroup_position_in_grid]], uint3 threadIdx [[thread_position_in_threadgroup]],
    uint simd_group_id [[simdgroup_index_in_threadgroup]]) {
  int i = ((int)blockIdx.x) * 64 + ((int)threadIdx.x);
  float x = X[i];
  H[i] = ((half)x);
  Bf[i] = ((bfloat)x);
  Back[i * 2] = ((float)H[i]);
  Back[i * 2 + 1] = ((float)Bf[i]);
  I[i * 3] = ((int)H[i]);
  I[i * 3 + 1] = ((int)((uint)((uchar)((short)threadIdx.x) + (ushort)200)));
  I[i * 3 + 2] = ((int)(((long)x) * ((long)1000000) / ((long)1000)));
  if (i == 0) {
    Lit[0] = ((float)1.000000e+00h);
    Lit[1] = ((float)(-2.500000e+00h * 3.000000e+00h));
    Lit[2] = ((float)6.550400e+04h);
    Lit[3] = ((float)(1.000000e+00h / 3.000000e+00h));
    Lit[4] = ((float)((half)7.000000e+04f));  // overflows half: inf
    Lit[5] = INFINITY;
    Lit[6] = ((float)((bfloat)3.140000e+00f));
    Lit[7] = ((float)(((half)1.000000e+00f) + ((half)9.765625e-04f)));  // 1 + 2^-10: exact
  }
}

// ---- math functions on float and half
[[kernel, max_total_threads_per_threadgroup(64)]] void math_kernel(
    const device float* __restrict X [[buffer(0)]], const device float* __restrict Y [[buffer(1)]],
    device float* F [[buffer(2)]], device half* H [[buffer(3)]], uint3 blockIdx [[threadgroup_position_in_grid]],
    uint3 threadIdx [[thread_position_in_threadgroup]], uint simd_group_id [[simdgroup_index_in_threadgroup]]) {
  int i = ((int)blockIdx.x) * 64 + ((int)threadIdx.x);
  float x = X[i];  // in (0.1, 4)
  float y = Y[i];  // in (-2, 2)
  device float* f = F + i * 16;
  f[0] = exp(y);
  f[1] = exp2(y);
  f[2] = log(x);
  f[3] = sqrt(x);
  f[4] = rsqrt(x);
  f[5] = fast::exp(y);
  f[6] = precise::sqrt(x);
  f[7] = fabs(y);
  f[8] = max(x, y);
  f[9] = fmin(x, y);
  f[10] = clamp(y, -1.000000e+00f, 1.000000e+00f);
  f[11] = pow(x, y);
  f[12] = tanh(y);
  f[13] = floor(y) + ceil(x) * 1.000000e+01f;
  f[14] = fast::log2(x) + precise::exp10(y);
  f[15] = select(y, x, y < 0.000000e+00f);
  device half* h = H + i * 8;
  half hx = ((half)x);
  half hy = ((half)y);
  h[0] = exp(hy);
  h[1] = sqrt(hx);
  h[2] = tanh(hy);
  h[3] = max(hx, hy);
  h[4] = min(hx, hy);
  h[5] = (hx * hy) + 1.000000e+00h;
  h[6] = fast::exp2(hy) / hx;
  h[7] = select(hx, -hy, isnan(hx) || (hy > 5.000000e-01h));
}

// ---- vectors, as_type, 128-bit copies through threadgroup memory
[[kernel, max_total_threads_per_threadgroup(32)]] void vector_kernel(
    const device float* __restrict X [[buffer(0)]], const device half* __restrict H [[buffer(1)]],
    device float* F [[buffer(2)]], device half* HOut [[buffer(3)]], device uint* U [[buffer(4)]],
    device bfloat* B [[buffer(5)]], uint3 blockIdx [[threadgroup_position_in_grid]],
    uint3 threadIdx [[thread_position_in_threadgroup]], uint simd_group_id [[simdgroup_index_in_threadgroup]]) {
  threadgroup half H_shared[256];
  int t = ((int)threadIdx.x);
  int g = ((int)blockIdx.x) * 32 + t;
  float4 v = *(const device float4*)(X + g * 4);
  float4 w = float4(v.w, v.z, v.y, v.x);
  float4 r = (v * 2.000000e+00f) + w;
  r[1] = r[1] - v[3];
  *(device float4*)(F + g * 4) = r;
  half4 hv = half4(v);
  half2 lo = half2(hv.x, hv.y) * half2(1.000000e+00h, 2.000000e+00h);
  *(device half2*)(HOut + g * 4) = lo;
  HOut[g * 4 + 2] = hv.z + hv.w;
  HOut[g * 4 + 3] = hv[3];
  U[g * 4] = as_type<uint>(v.x);
  U[g * 4 + 1] = as_type<uint>(half2(hv.x, hv.y));
  int2 iv = int2(((int)t), -((int)t)) * 3;
  U[g * 4 + 2] = ((uint)(iv.x - iv.y));
  uint2 uv = uint2(((uint)t), 7u) << uint2(2u, 1u);
  U[g * 4 + 3] = uv.x | uv.y;
  bfloat4 bv = bfloat4(v);
  *(device bfloat4*)(B + g * 4) = bv;
  // 8 halves per thread move as one uint4, reversed through threadgroup memory.
  *(threadgroup uint4*)(H_shared + (31 - t) * 8) = *(const device uint4*)(H + g * 8);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  *(device uint4*)(HOut + 4096 + g * 8) = *(threadgroup uint4*)(H_shared + t * 8);
}

// ---- threadgroup memory and barriers, 2-D threadgroups
[[kernel, max_total_threads_per_threadgroup(64)]] void reverse_kernel(
    const device float* __restrict X [[buffer(0)]], device float* Y [[buffer(1)]],
    uint3 blockIdx [[threadgroup_position_in_grid]], uint3 threadIdx [[thread_position_in_threadgroup]],
    uint simd_group_id [[simdgroup_index_in_threadgroup]]) {
  threadgroup float tile[4][16];
  threadgroup float sums[4];
  int row = ((int)threadIdx.y);
  int col = ((int)threadIdx.x);
  int base = ((int)blockIdx.x) * 64;
  tile[row][col] = X[base + row * 16 + col];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (col == 0) {
    float s = 0.000000e+00f;
    for (int k = 0; k < 16; ++k) s += tile[row][k];
    sums[row] = s;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);
  Y[base + row * 16 + col] = tile[3 - row][15 - col] + sums[3 - row];
}

// ---- simdgroup collectives (80 threads: two full simdgroups and one of 16 lanes)
[[kernel, max_total_threads_per_threadgroup(80)]] void simd_kernel(
    const device float* __restrict X [[buffer(0)]], device float* F [[buffer(1)]], device uint* V [[buffer(2)]],
    uint3 blockIdx [[threadgroup_position_in_grid]], uint3 threadIdx [[thread_position_in_threadgroup]],
    uint simd_group_id [[simdgroup_index_in_threadgroup]]) {
  threadgroup float exchange[80];
  int t = ((int)threadIdx.x);
  ushort lane = ((ushort)(t % 32));
  float x = X[t];
  device float* f = F + t * 16;
  f[0] = simd_sum(x);
  f[1] = simd_max(x);
  f[2] = simd_min(x);
  f[3] = simd_prod(1.000000e+00f + (x * 1.000000e-01f));
  f[4] = simd_shuffle(x, ((ushort)((lane * 7) % 32)));
  f[5] = simd_shuffle_xor(x, ((ushort)5));
  f[6] = simd_shuffle_down(x, ((ushort)3));
  f[7] = simd_shuffle_up(x, ((ushort)3));
  f[8] = simd_broadcast(x, ((ushort)4));
  f[9] = simd_prefix_inclusive_sum(x);
  f[10] = simd_prefix_exclusive_sum(x);
  f[11] = ((float)simd_sum(((half)x)));
  float2 pair = simd_shuffle_xor(float2(x, -x), ((ushort)1));
  f[12] = pair.x + (pair.y * 1.000000e+01f);
  f[13] = -1.000000e+00f;
  if (lane < 12) {
    f[13] = simd_sum(x);  // the active lanes only
  }
  // Lanes exchange through threadgroup memory, ordered by the simdgroup barrier.
  exchange[t] = x;
  simdgroup_barrier(mem_flags::mem_threadgroup);
  f[14] = exchange[(t / 32) * 32 + ((lane + 1) % 16)];
  f[15] = ((float)simd_max(((int)(x * 1.000000e+02f))));
  device uint* v = V + t * 4;
  v[0] = ((uint)simd_all(x > -3.000000e+00f));
  v[1] = ((uint)simd_any(x > 1.500000e+00f));
  v[2] = ((uint)((ulong)simd_ballot(x > 0.000000e+00f)));
  v[3] = simd_or(((uint)1) << ((uint)(lane % 8)));
}

// ---- atomics, from threadgroups running on parallel OS threads
[[kernel, max_total_threads_per_threadgroup(64)]] void atomic_kernel(
    const device float* __restrict X [[buffer(0)]], device atomic_int* Counts [[buffer(1)]],
    device atomic_float* Sum [[buffer(2)]], device atomic_uint* Bits [[buffer(3)]], device int* Slots [[buffer(4)]],
    device float* FMax [[buffer(5)]], uint3 blockIdx [[threadgroup_position_in_grid]],
    uint3 threadIdx [[thread_position_in_threadgroup]], uint simd_group_id [[simdgroup_index_in_threadgroup]]) {
  threadgroup atomic_int local_count;
  int t = ((int)threadIdx.x);
  int i = ((int)blockIdx.x) * 64 + t;
  float x = X[i];
  if (t == 0) {
    atomic_store_explicit(&local_count, 0, memory_order_relaxed);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  atomic_fetch_add_explicit(&Counts[0], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(Sum, x, memory_order_relaxed);
  atomic_fetch_max_explicit(&Counts[1], ((int)(x * 1.000000e+03f)), memory_order_relaxed);
  atomic_fetch_min_explicit(&Counts[2], ((int)(x * 1.000000e+03f)), memory_order_relaxed);
  atomic_fetch_or_explicit(Bits, ((uint)1) << ((uint)(i % 32)), memory_order_relaxed);
  int slot = atomic_fetch_add_explicit(&local_count, 1, memory_order_relaxed);
  // A compare-exchange loop: the float maximum through its bit pattern.
  device atomic_uint* fmax_bits = (device atomic_uint*)FMax;
  uint seen = atomic_load_explicit(fmax_bits, memory_order_relaxed);
  while (as_type<float>(seen) < x &&
         !atomic_compare_exchange_weak_explicit(fmax_bits, &seen, as_type<uint>(x), memory_order_relaxed,
                                                memory_order_relaxed)) {
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  Slots[i] = slot + (64 * ((int)(atomic_load_explicit(&local_count, memory_order_relaxed) == 64)));
  if (t == 0) {
    atomic_exchange_explicit(&Counts[3], ((int)blockIdx.x), memory_order_relaxed);
  }
}

// ---- simdgroup_matrix GEMM in the generated style: C[M, N] = A * B, 32x32 tiles,
// 4 simdgroups of 16x16 each, A and B staged in threadgroup memory with 128-bit copies.
struct sgm_gemm_args_t {
  int M;
  int N;
  int K;
  int trans_a;
};

[[kernel, max_total_threads_per_threadgroup(128)]] void sgm_gemm_kernel(
    const device half* __restrict A [[buffer(0)]], const device half* __restrict B [[buffer(1)]],
    device float* C [[buffer(2)]], constant sgm_gemm_args_t& arg [[buffer(3)]],
    uint3 blockIdx [[threadgroup_position_in_grid]], uint3 threadIdx [[thread_position_in_threadgroup]],
    uint simd_group_id [[simdgroup_index_in_threadgroup]]) {
  threadgroup half A_shared[512];
  threadgroup half B_shared[512];
  simdgroup_float8x8 C_local[4];
  int t = ((int)threadIdx.x);
  int m0 = ((int)blockIdx.y) * 32;
  int n0 = ((int)blockIdx.x) * 32;
  int wm = (((int)simd_group_id) / 2) * 16;
  int wn = (((int)simd_group_id) % 2) * 16;
  for (int i = 0; i < 4; ++i) {
    C_local[i] = make_filled_simdgroup_matrix<float, 8, 8>(0.000000e+00f);
  }
  for (int k0 = 0; k0 < arg.K; k0 += 16) {
    // 512 halves per operand: 64 threads move 8 each.
    if (t < 64) {
      int r = t / 2;
      int c = (t % 2) * 8;
      if (arg.trans_a) {  // A is K x M: A_shared is 16 x 32
        int kr = t / 4;
        int mc = (t % 4) * 8;
        *(threadgroup uint4*)(A_shared + (kr * 32 + mc)) = *(const device uint4*)(A + ((k0 + kr) * arg.M + m0 + mc));
      } else {  // A_shared is 32 x 16
        *(threadgroup uint4*)(A_shared + (r * 16 + c)) = *(const device uint4*)(A + ((m0 + r) * arg.K + k0 + c));
      }
    } else {
      int kr = (t - 64) / 4;
      int nc = ((t - 64) % 4) * 8;
      *(threadgroup uint4*)(B_shared + (kr * 32 + nc)) = *(const device uint4*)(B + ((k0 + kr) * arg.N + n0 + nc));
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int kk = 0; kk < 16; kk += 8) {
      simdgroup_half8x8 a_frag[2];
      simdgroup_half8x8 b_frag[2];
      for (int i = 0; i < 2; ++i) {
        if (arg.trans_a) {
          simdgroup_load(a_frag[i], &A_shared[kk * 32 + wm + i * 8], 32, 0, true);
        } else {
          simdgroup_load(a_frag[i], &A_shared[(wm + i * 8) * 16 + kk], 16, 0, false);
        }
        simdgroup_load(b_frag[i], &B_shared[kk * 32 + wn + i * 8], 32, 0, false);
      }
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 2; ++j) {
          simdgroup_multiply_accumulate(C_local[i * 2 + j], a_frag[i], b_frag[j], C_local[i * 2 + j]);
        }
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      simdgroup_store(C_local[i * 2 + j], &C[(m0 + wm + i * 8) * arg.N + n0 + wn + j * 8], arg.N, 0, false);
    }
  }
}

// ---- one simdgroup: bfloat operands, load origins and transposes, thread_elements
// epilogues in Apple's lane layout, a multiply after lanes changed their elements,
// a diagonal matrix.
[[kernel, max_total_threads_per_threadgroup(32)]] void sgm_small_kernel(
    const device bfloat* __restrict A [[buffer(0)]], const device bfloat* __restrict B [[buffer(1)]],
    const device float* __restrict C [[buffer(2)]], device float* D [[buffer(3)]], device float* E [[buffer(4)]],
    uint3 blockIdx [[threadgroup_position_in_grid]], uint3 threadIdx [[thread_position_in_threadgroup]],
    uint simd_group_id [[simdgroup_index_in_threadgroup]]) {
  ushort lane = ((ushort)threadIdx.x);
  simdgroup_bfloat8x8 a;
  simdgroup_bfloat8x8 b;
  simdgroup_float8x8 c;
  simdgroup_float8x8 d;
  simdgroup_load(a, A, 8);
  simdgroup_load(b, B, 8, 0, true);
  simdgroup_load(c, C, 16, ulong2(8, 0));  // columns 8..15 of a 16 x 16 matrix
  simdgroup_multiply_accumulate(d, a, b, c);
  // Element (row, col) and (row, col + 1) of this lane, in Apple's layout.
  ushort qid = lane / 4;
  ushort row = (qid & 4) + ((lane / 2) % 4);
  ushort col = ((qid & 2) * 2) + ((lane % 2) * 2);
  thread float2& mine = d.thread_elements();
  for (int j = 0; j < 2; ++j) {
    mine[j] = (mine[j] * 2.000000e+00f) + ((float)((row * 8) + col + j));
  }
  simdgroup_float8x8 e;
  simdgroup_multiply(e, d, c);  // every element of e needs elements other lanes changed
  simdgroup_store(d, D, 8, ulong2(0, 8));  // rows 8..15 of a 16 x 8 matrix
  simdgroup_store(e, E, 8, 0, true);
  simdgroup_float8x8 diagonal = simdgroup_float8x8(3.000000e+00f);
  simdgroup_store(diagonal, E + 64, 8);
}

// ---- Metal 4 cooperative tensors: D[16, 32] += A[16, K] * B[K, 32] on one simdgroup,
// A filled through the emulator's documented layout (lane * per_lane + i), B and
// D through the coordinates the tensors report (get_multidimensional_index, and
// multidimensional_indices, the name in MPP's usage comment).
template <bool TRANS_A, bool TRANS_B, typename T>
void coop_gemm(const device T* A, const device T* B, device float* D, int K, ushort lane) {
  constexpr auto desc = mpp::tensor_ops::matmul2d_descriptor(
      16, 32, 16, TRANS_A, TRANS_B, true, mpp::tensor_ops::matmul2d_descriptor::mode::multiply_accumulate);
  mpp::tensor_ops::matmul2d<desc, metal::execution_simdgroup> op;
  auto ct_a = op.template get_left_input_cooperative_tensor<T, T, float>();
  auto ct_b = op.template get_right_input_cooperative_tensor<T, T, float>();
  auto ct_c = op.template get_destination_cooperative_tensor<decltype(ct_a), decltype(ct_b), float>();
  for (ushort i = 0; i < ct_c.get_capacity(); ++i) {
    if (!ct_c.is_valid_element(i)) continue;
    auto idx = ct_c.get_multidimensional_index(i);
    ct_c[i] = D[idx[1] * 32 + idx[0]];
  }
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (ushort i = 0; i < ct_a.get_capacity(); ++i) {
      int e = ((int)lane) * 8 + ((int)i);  // stored 16 x 16: (e / 16, e % 16)
      ct_a[i] = TRANS_A ? A[(k0 + e / 16) * 16 + e % 16] : A[(e / 16) * K + k0 + e % 16];
    }
    for (ushort i = 0; i < ct_b.get_capacity(); ++i) {
      auto idx = ct_b.get_multidimensional_index(i);  // (column, row) of B as stored
      ct_b[i] = TRANS_B ? B[idx[1] * K + k0 + idx[0]] : B[(k0 + idx[1]) * 32 + idx[0]];
    }
    op.run(ct_a, ct_b, ct_c);
  }
  for (ushort i = 0; i < ct_c.get_capacity(); ++i) {
    auto idx = ct_c.multidimensional_indices(i);
    D[idx[1] * 32 + idx[0]] = ct_c[i];
  }
}

struct coop_args_t {
  int K;
};

#define COOP_KERNEL(NAME, TA, TB, T)                                                                               \
  [[kernel, max_total_threads_per_threadgroup(32)]] void NAME(                                                     \
      const device T* __restrict A [[buffer(0)]], const device T* __restrict B [[buffer(1)]],                      \
      device float* D [[buffer(2)]], constant coop_args_t& arg [[buffer(3)]],                                      \
      uint3 blockIdx [[threadgroup_position_in_grid]], uint3 threadIdx [[thread_position_in_threadgroup]],         \
      uint simd_group_id [[simdgroup_index_in_threadgroup]]) {                                                     \
    coop_gemm<TA, TB, T>(A, B, D, arg.K, ((ushort)threadIdx.x));                                                   \
  }
COOP_KERNEL(coop_nn_kernel, false, false, half)
COOP_KERNEL(coop_tn_kernel, true, false, half)
COOP_KERNEL(coop_nt_kernel, false, true, half)
COOP_KERNEL(coop_tt_bf16_kernel, true, true, bfloat)

// ---- barriers reached at different places, and the same kernel done right
[[kernel, max_total_threads_per_threadgroup(64)]] void divergent_kernel(
    device float* Y [[buffer(0)]], uint3 blockIdx [[threadgroup_position_in_grid]],
    uint3 threadIdx [[thread_position_in_threadgroup]], uint simd_group_id [[simdgroup_index_in_threadgroup]]) {
  threadgroup float s[64];
  s[threadIdx.x] = ((float)threadIdx.x);
  if (threadIdx.x < 32) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  } else {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  Y[threadIdx.x] = s[63 - threadIdx.x];
}

[[kernel, max_total_threads_per_threadgroup(64)]] void uniform_kernel(
    device float* Y [[buffer(0)]], uint3 blockIdx [[threadgroup_position_in_grid]],
    uint3 threadIdx [[thread_position_in_threadgroup]], uint simd_group_id [[simdgroup_index_in_threadgroup]]) {
  threadgroup float s[64];
  s[threadIdx.x] = ((float)threadIdx.x);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  Y[threadIdx.x] = s[63 - threadIdx.x];
}

// ---- printing
[[kernel, max_total_threads_per_threadgroup(2)]] void print_kernel(
    const device half* __restrict X [[buffer(0)]], uint3 blockIdx [[threadgroup_position_in_grid]],
    uint3 threadIdx [[thread_position_in_threadgroup]], uint simd_group_id [[simdgroup_index_in_threadgroup]]) {
  printf("block %u thread %u x=%.4f\n", blockIdx.x, threadIdx.x, X[threadIdx.x]);
  if (threadIdx.x == 0) {
    os_log_default.log("sum %.3f", ((float)(X[0] + X[1])));
  }
}

#ifdef TL_EMULATE
#define TL_TEST_ENTRY(NAME, NX, NY, NZ, ...)                                                                       \
  extern "C" void tl_emu_##NAME(const ::tl::emu::Arg* args, int64_t bx, int64_t by, int64_t bz) {                \
    ::tl::emu::run_threadgroup(bx, by, bz, NX, NY, NZ, [&](uint3 tl_group, uint3 tl_thread, uint tl_simdgroup) { \
      __VA_ARGS__;                                                                                                 \
    });                                                                                                            \
  }
#define PTR(T, k) static_cast<device T*>(args[k].ptr)
TL_TEST_ENTRY(convert_kernel, 64, 1, 1,
              convert_kernel(PTR(float, 0), PTR(half, 1), PTR(bfloat, 2), PTR(float, 3), PTR(float, 4), PTR(int, 5),
                             tl_group, tl_thread, tl_simdgroup))
TL_TEST_ENTRY(math_kernel, 64, 1, 1,
              math_kernel(PTR(float, 0), PTR(float, 1), PTR(float, 2), PTR(half, 3), tl_group, tl_thread,
                          tl_simdgroup))
TL_TEST_ENTRY(vector_kernel, 32, 1, 1,
              vector_kernel(PTR(float, 0), PTR(half, 1), PTR(float, 2), PTR(half, 3), PTR(uint, 4), PTR(bfloat, 5),
                            tl_group, tl_thread, tl_simdgroup))
TL_TEST_ENTRY(reverse_kernel, 16, 4, 1,
              reverse_kernel(PTR(float, 0), PTR(float, 1), tl_group, tl_thread, tl_simdgroup))
TL_TEST_ENTRY(simd_kernel, 80, 1, 1,
              simd_kernel(PTR(float, 0), PTR(float, 1), PTR(uint, 2), tl_group, tl_thread, tl_simdgroup))
TL_TEST_ENTRY(atomic_kernel, 64, 1, 1,
              atomic_kernel(PTR(float, 0), PTR(atomic_int, 1), PTR(atomic_float, 2), PTR(atomic_uint, 3),
                            PTR(int, 4), PTR(float, 5), tl_group, tl_thread, tl_simdgroup))
TL_TEST_ENTRY(sgm_gemm_kernel, 128, 1, 1, {
  sgm_gemm_args_t tl_args{int(args[3].i), int(args[4].i), int(args[5].i), int(args[6].i)};
  sgm_gemm_kernel(PTR(half, 0), PTR(half, 1), PTR(float, 2), tl_args, tl_group, tl_thread, tl_simdgroup);
})
TL_TEST_ENTRY(sgm_small_kernel, 32, 1, 1,
              sgm_small_kernel(PTR(bfloat, 0), PTR(bfloat, 1), PTR(float, 2), PTR(float, 3), PTR(float, 4),
                               tl_group, tl_thread, tl_simdgroup))
#define COOP_ENTRY(NAME, T)                                                                                        \
  TL_TEST_ENTRY(NAME, 32, 1, 1, {                                                                                  \
    coop_args_t tl_args{int(args[3].i)};                                                                           \
    NAME(PTR(T, 0), PTR(T, 1), PTR(float, 2), tl_args, tl_group, tl_thread, tl_simdgroup);                         \
  })
COOP_ENTRY(coop_nn_kernel, half)
COOP_ENTRY(coop_tn_kernel, half)
COOP_ENTRY(coop_nt_kernel, half)
COOP_ENTRY(coop_tt_bf16_kernel, bfloat)
TL_TEST_ENTRY(divergent_kernel, 64, 1, 1, divergent_kernel(PTR(float, 0), tl_group, tl_thread, tl_simdgroup))
TL_TEST_ENTRY(uniform_kernel, 64, 1, 1, uniform_kernel(PTR(float, 0), tl_group, tl_thread, tl_simdgroup))
TL_TEST_ENTRY(print_kernel, 2, 1, 1, print_kernel(PTR(half, 0), tl_group, tl_thread, tl_simdgroup))
#endif
