// Test kernels for the sm_80 device building blocks (device/cuda/gemm_sm80.cuh,
// swizzle.cuh, copy_async.cuh, warp.cuh). test_device_sm80.py compiles this file
// with NVRTC for sm_80 and sm_90, and for the CPU against the emulation shims
// (device/emu), runs it there and compares with numpy. Each entry runs one block;
// under TL_EMULATE it is a host function that runs that block. The fp8 entries
// need sm_89+ and are left out of builds for older archs.
#include "tl_cuda.cuh"

#ifdef TL_EMULATE
#define TEST_ENTRY(name, threads, shared_bytes, params, call)                  \
  extern "C" void name params {                                                \
    ::tl::emu::run_block(0, 0, 0, threads, 1, 1, shared_bytes, [&] { call; }); \
  }
#else
#define TEST_ENTRY(name, threads, shared_bytes, params, call)         \
  extern "C" __global__ void __launch_bounds__(threads) name params { \
    call;                                                             \
  }
#endif

namespace test {

// Copies a Rows x Cols block of a row-major global matrix (leading dimension ld)
// into a swizzled shared tile, 16 bytes per cp.async.
template <int Rows, int Cols, class T>
TL_DEVICE void fill_tile(T* tile, const T* src, int ld, int rank, int threads) {
  constexpr int kVec = 16 / int(sizeof(T)), kChunks = Rows * Cols / kVec;
  static_assert(Cols % kVec == 0, "test tiles have whole 16-byte chunks");
  for (int c = rank; c < kChunks; c += threads) {
    const int row = c / (Cols / kVec), col = c % (Cols / kVec) * kVec;
    tl::cp_async<16>(tile + tl::swizzle_offset<Cols, int(sizeof(T))>(row, col), src + row * ld + col, true);
  }
}

// C = C0 + op(A) * op(B) over two K tiles, each in its own shared stage and
// cp.async group: stage 0 is used after cp_async_wait<1>, stage 1 after <0>.
// A is [M][2K] ([2K][M] when TA), B is [2K][N] ([N][2K] when TB); their element
// types EA and EB differ only for the mixed fp8 gemms.
template <class EA, class EB, class Acc, int M, int N, int K, int WM, int WN, bool TA, bool TB>
TL_DEVICE void gemm_ss(const EA* A, const EB* B, const Acc* C0, Acc* C) {
  TL_DYNAMIC_SHARED(smem);
  constexpr int kThreads = WM * WN * 32, MT = M / WM / 16, NT = N / WN / 8;
  EA* As = reinterpret_cast<EA*>(smem);            // [2][M * K]
  EB* Bs = reinterpret_cast<EB*>(As + 2 * M * K);  // [2][K * N]
  const int rank = int(threadIdx.x);
  for (int kt = 0; kt < 2; ++kt) {
    if (TA)
      fill_tile<K, M>(As + kt * M * K, A + kt * K * M, M, rank, kThreads);
    else
      fill_tile<M, K>(As + kt * M * K, A + kt * K, 2 * K, rank, kThreads);
    if (TB)
      fill_tile<N, K>(Bs + kt * K * N, B + kt * K, 2 * K, rank, kThreads);
    else
      fill_tile<K, N>(Bs + kt * K * N, B + kt * K * N, N, rank, kThreads);
    tl::cp_async_commit();
  }
  const int warp = rank / 32, lane = rank % 32, g = lane / 4, q = lane % 4;
  const int r0 = warp / WN * (M / WM), c0 = warp % WN * (N / WN);
  Acc acc[MT * NT * 4];
#pragma unroll
  for (int i = 0; i < MT * NT * 4; ++i) {
    const int mt = i / 4 / NT, nt = i / 4 % NT, e = i % 4;
    acc[i] = C0[(r0 + mt * 16 + g + 8 * (e / 2)) * N + c0 + nt * 8 + 2 * q + e % 2];
  }
#pragma unroll 1  // one copy of the gemm code: halves NVRTC time
  for (int kt = 0; kt < 2; ++kt) {
    if (kt == 0)
      tl::cp_async_wait<1>();
    else
      tl::cp_async_wait<0>();
    __syncthreads();
    tl::gemm_ss<M, N, K, WM, WN, TA, TB>(As + kt * M * K, Bs + kt * K * N, acc);
  }
#pragma unroll
  for (int i = 0; i < MT * NT * 4; ++i) {
    const int mt = i / 4 / NT, nt = i / 4 % NT, e = i % 4;
    C[(r0 + mt * 16 + g + 8 * (e / 2)) * N + c0 + nt * 8 + 2 * q + e % 2] = acc[i];
  }
}

// C = C0 + A * op(B) with A (M x K, row-major) read straight into the register
// fragment gemm_rs takes (accumulator layout, warps (WM, 1), element type T).
template <class T, int M, int N, int K, int WM, bool TB>
TL_DEVICE void gemm_rs(const T* A, const T* B, const float* C0, float* C) {
  TL_DYNAMIC_SHARED(smem);
  constexpr int kThreads = WM * 32, MT = M / WM / 16, NT = N / 8, KT = K / 8;
  T* Bs = reinterpret_cast<T*>(smem);
  const int rank = int(threadIdx.x);
  if (TB)
    fill_tile<N, K>(Bs, B, K, rank, kThreads);
  else
    fill_tile<K, N>(Bs, B, N, rank, kThreads);
  tl::cp_async_wait_all();
  __syncthreads();
  const int warp = rank / 32, lane = rank % 32, g = lane / 4, q = lane % 4, r0 = warp * (M / WM);
  T a[MT * KT * 4];
  float acc[MT * NT * 4];
#pragma unroll
  for (int i = 0; i < MT * KT * 4; ++i) {
    const int mt = i / 4 / KT, kt = i / 4 % KT, e = i % 4;
    a[i] = A[(r0 + mt * 16 + g + 8 * (e / 2)) * K + kt * 8 + 2 * q + e % 2];
  }
#pragma unroll
  for (int i = 0; i < MT * NT * 4; ++i) {
    const int mt = i / 4 / NT, nt = i / 4 % NT, e = i % 4;
    acc[i] = C0[(r0 + mt * 16 + g + 8 * (e / 2)) * N + nt * 8 + 2 * q + e % 2];
  }
  tl::gemm_rs<M, N, K, WM, 1, TB>(a, Bs, acc);
#pragma unroll
  for (int i = 0; i < MT * NT * 4; ++i) {
    const int mt = i / 4 / NT, nt = i / 4 % NT, e = i % 4;
    C[(r0 + mt * 16 + g + 8 * (e / 2)) * N + nt * 8 + 2 * q + e % 2] = acc[i];
  }
}

// One warp, one fp8 mma on fragments read straight from memory (a[lane][4],
// b[lane][2], c[lane][4]): out[lane][0..3] from mma_m16n8k32_f8 (the form the
// target arch uses), out[lane][4..7] from the two-f16-mma form of sm_90.
template <bool AE5m2, bool BE5m2>
TL_DEVICE void mma_f8(const uint32_t* a, const uint32_t* b, const float* c, float* out) {
  const int lane = int(threadIdx.x);
  const uint32_t ra[4] = {a[lane * 4], a[lane * 4 + 1], a[lane * 4 + 2], a[lane * 4 + 3]};
  const uint32_t rb[2] = {b[lane * 2], b[lane * 2 + 1]};
  float d[4], via_f16[4];
  for (int e = 0; e < 4; ++e) d[e] = via_f16[e] = c[lane * 4 + e];
  tl::mma::mma_m16n8k32_f8<AE5m2, BE5m2>(d, ra, rb);
  tl::mma::mma_m16n8k32_f8_via_f16<AE5m2, BE5m2>(via_f16, ra, rb);
  for (int e = 0; e < 4; ++e) {
    out[lane * 8 + e] = d[e];
    out[lane * 8 + 4 + e] = via_f16[e];
  }
}

// One mma.sp m16n8k32 (f16 or bf16 -> f32) from per-lane registers: a[4], b[4], e,
// c[4] -> out[4], with sparsity selector Sel.
template <bool Bf16, int Sel>
TL_DEVICE void mma_sp(const uint32_t* a, const uint32_t* b, const uint32_t* e, const float* c, float* out) {
  const int lane = int(threadIdx.x);
  const uint32_t ra[4] = {a[lane * 4], a[lane * 4 + 1], a[lane * 4 + 2], a[lane * 4 + 3]};
  const uint32_t rb[4] = {b[lane * 4], b[lane * 4 + 1], b[lane * 4 + 2], b[lane * 4 + 3]};
  float d[4];
  for (int i = 0; i < 4; ++i) d[i] = c[lane * 4 + i];
  tl::mma::mma_sp_m16n8k32<Bf16, Sel>(d, ra, rb, e[lane]);
  for (int i = 0; i < 4; ++i) out[lane * 4 + i] = d[i];
}

// Swizzled offsets as the device computes them, for every (row, col) of a tile.
template <int Rows, int Cols, int ElemBytes>
TL_DEVICE void swizzle_table(int* out) {
  for (int i = int(threadIdx.x); i < Rows * Cols; i += int(blockDim.x))
    out[i] = tl::swizzle_offset<Cols, ElemBytes>(i / Cols, i % Cols);
}

// One warp: src holds 32 rows of 8 16-bit values; lane l supplies row perm[l]
// (only lanes < 8 * Num are used) and writes its Num registers to out[l * 4 + i].
template <int Num, bool Trans>
TL_DEVICE void ldmatrix(const uint16_t* src, const int* perm, uint32_t* out) {
  TL_DYNAMIC_SHARED(smem);
  uint16_t* rows = reinterpret_cast<uint16_t*>(smem);
  const int lane = int(threadIdx.x);
  for (int i = 0; i < 8; ++i) rows[lane * 8 + i] = src[lane * 8 + i];
  __syncthreads();
  uint32_t r[Num];
  tl::ldmatrix<Num, Trans>(r, tl::smem_addr(rows + perm[lane] * 8));
  for (int i = 0; i < Num; ++i) out[lane * 4 + i] = r[i];
}

// out[(op * 6 + w) * threads + rank]: op in sum, max, min; w: widths 1, 2, ..., 32.
template <class T>
TL_DEVICE void warp_allreduce(const T* in, T* out) {
  const int rank = int(threadIdx.x), threads = int(blockDim.x);
  const T v = in[rank];
#define TEST_ALLREDUCE(op, opi)                                            \
  out[(opi * 6 + 0) * threads + rank] = tl::warp_allreduce<tl::op, 1>(v);  \
  out[(opi * 6 + 1) * threads + rank] = tl::warp_allreduce<tl::op, 2>(v);  \
  out[(opi * 6 + 2) * threads + rank] = tl::warp_allreduce<tl::op, 4>(v);  \
  out[(opi * 6 + 3) * threads + rank] = tl::warp_allreduce<tl::op, 8>(v);  \
  out[(opi * 6 + 4) * threads + rank] = tl::warp_allreduce<tl::op, 16>(v); \
  out[(opi * 6 + 5) * threads + rank] = tl::warp_allreduce<tl::op, 32>(v);
  TEST_ALLREDUCE(SumOp, 0)
  TEST_ALLREDUCE(MaxOp, 1)
  TEST_ALLREDUCE(MinOp, 2)
#undef TEST_ALLREDUCE
}

// The raw shuffles with their CUDA semantics at the edges of width groups:
// out[k * threads + rank] for k = idx(5, width 8), idx(rank % 7), down(3, width 8),
// up(2, width 16), xor(5), xor(12, width 8: lanes of the later group keep their value).
template <class T>
TL_DEVICE void shuffles(const T* in, T* out) {
  const int rank = int(threadIdx.x), threads = int(blockDim.x);
  const T v = in[rank];
  out[0 * threads + rank] = __shfl_sync(0xffffffffu, v, 5, 8);
  out[1 * threads + rank] = __shfl_sync(0xffffffffu, v, rank % 7);
  out[2 * threads + rank] = __shfl_down_sync(0xffffffffu, v, 3, 8);
  out[3 * threads + rank] = __shfl_up_sync(0xffffffffu, v, 2, 16);
  out[4 * threads + rank] = __shfl_xor_sync(0xffffffffu, v, 5);
  out[5 * threads + rank] = __shfl_xor_sync(0xffffffffu, v, 12, 8);
}

// Thread t copies `Bytes` from src + t * Bytes to shared, predicated on pred[t]
// (false: zero fill from a null source), in two groups (even, odd threads' second
// copy); out gets shared after each wait.
template <int Bytes>
TL_DEVICE void copy_async(const unsigned char* src, const int* pred, unsigned char* out) {
  TL_DYNAMIC_SHARED(smem);
  const int rank = int(threadIdx.x), threads = int(blockDim.x), n = threads * Bytes;
  for (int i = rank; i < 2 * n; i += threads) smem[i] = 0xab;
  __syncthreads();
  tl::cp_async<Bytes>(smem + rank * Bytes, pred[rank] ? src + rank * Bytes : nullptr, pred[rank] != 0);
  tl::cp_async_commit();
  tl::cp_async<Bytes>(smem + n + rank * Bytes, src + n + rank * Bytes, true);
  tl::cp_async_commit();
  tl::cp_async_wait<1>();
  __syncthreads();
  for (int i = rank; i < n; i += threads) out[i] = smem[i];
  tl::cp_async_wait<0>();
  __syncthreads();
  for (int i = rank; i < n; i += threads) out[n + i] = smem[n + i];
}

// Races the emulator must report (Barrier = true: the fixed kernel, no report);
// TL_SMEM marks the plain shared accesses for the race detector, as generated code does.
// Kind 0: thread t copies chunk t with cp.async and reads chunk t + 1.
// Kind 1: threads write a gemm operand tile that gemm_ss then reads.
// Kind 2: gemm_ss reads a tile that cp.async then overwrites.
template <int Kind, bool Barrier>
TL_DEVICE void race(const tl::half_t* src, float* out) {
  TL_DYNAMIC_SHARED(smem);
  tl::half_t* tile = reinterpret_cast<tl::half_t*>(smem);  // 16 x 16 A, then 16 x 8 B
  const int rank = int(threadIdx.x);
  if constexpr (Kind == 0) {
    tl::cp_async<16>(tile + rank * 8, src + rank * 8, true);
    tl::cp_async_wait_all();
    if (Barrier) __syncthreads();
    out[rank] = float(TL_SMEM(tile, (rank + 1) % 32 * 8, 0, "tile|race kernel"));
    return;
  }
  for (int i = rank; i < 16 * 16 + 16 * 8; i += 32) TL_SMEM(tile, i, 1, "tile|race kernel") = src[i];
  if (Kind == 1 && Barrier) __syncthreads();
  if (Kind == 2) __syncthreads();
  float acc[4] = {0, 0, 0, 0};
  tl::gemm_ss<16, 8, 16, 1, 1, false, false>(tile, tile + 16 * 16, acc);
  if (Kind == 2) {
    if (Barrier) __syncthreads();
    tl::cp_async<16>(tile + rank * 8, src + rank * 8, true);
    tl::cp_async_wait_all();
  }
  out[rank] = acc[0];
}

// Atomic adds from every thread of the block into 16 slots (8 threads per slot):
// scalar adds of each type, and the 2- and 4-wide vector adds of AtomicAddx2 / x4.
TL_DEVICE void atomic_adds(float* f32, double* f64, int* i32, int64_t* i64, tl::half_t* f16, tl::bfloat16_t* bf16,
                           float* f32x2, float* f32x4, tl::half_t* f16x2, tl::bfloat16_t* bf16x2, const float* v) {
  const int r = int(threadIdx.x), slot = r % 16;
  const float x = v[r];
  tl::atomic_add(f32 + slot, x);
  tl::atomic_add(f64 + slot, double(x));
  tl::atomic_add(i32 + slot, int(x) * 1000 - r);
  tl::atomic_add(i64 + slot, (long long)(x)*10000000000LL + r);
  tl::atomic_add(f16 + slot, x);
  tl::atomic_add(bf16 + slot, x);
  const float two[2] = {x, -2 * x}, four[4] = {x, 2 * x, -x, 3 * x};
  tl::AtomicAddx2(f32x2 + 2 * slot, two);
  tl::AtomicAddx4(f32x4 + 4 * slot, four);
  const tl::half_t h2[2] = {tl::half_t(x), tl::half_t(-2 * x)};
  tl::AtomicAddx2(f16x2 + 2 * slot, h2);
  const tl::bfloat16_t b2[2] = {tl::bfloat16_t(x), tl::bfloat16_t(-2 * x)};
  tl::AtomicAddx2(bf16x2 + 2 * slot, b2);
}

}  // namespace test

// clang-format off
#define GEMM_SS_ONE(tag, EA, EB, Acc, M, N, K, WM, WN, TA, TB, nt)                                       \
  TEST_ENTRY(gemm_ss_##tag##_##M##x##N##x##K##_##WM##x##WN##_##nt, WM * WN * 32,                          \
             2 * (M * sizeof(EA) + N * sizeof(EB)) * K, (const EA* A, const EB* B, const Acc* C0, Acc* C), \
             (test::gemm_ss<EA, EB, Acc, M, N, K, WM, WN, TA, TB>(A, B, C0, C)))
#define GEMM_SS_AB(tag, EA, EB, Acc, M, N, K, WM, WN)                      \
  GEMM_SS_ONE(tag, EA, EB, Acc, M, N, K, WM, WN, false, false, nn)         \
  GEMM_SS_ONE(tag, EA, EB, Acc, M, N, K, WM, WN, false, true, nt)          \
  GEMM_SS_ONE(tag, EA, EB, Acc, M, N, K, WM, WN, true, false, tn)          \
  GEMM_SS_ONE(tag, EA, EB, Acc, M, N, K, WM, WN, true, true, tt)
#define GEMM_SS(tag, T, Acc, M, N, K, WM, WN) GEMM_SS_AB(tag, T, T, Acc, M, N, K, WM, WN)

#define GEMM_RS(tag, T, M, N, K, WM)                                                                  \
  TEST_ENTRY(gemm_rs_##tag##_##M##x##N##x##K##_##WM##_n, WM * 32, N * K * sizeof(T),                  \
             (const T* A, const T* B, const float* C0, float* C),                                     \
             (test::gemm_rs<T, M, N, K, WM, false>(A, B, C0, C)))                                     \
  TEST_ENTRY(gemm_rs_##tag##_##M##x##N##x##K##_##WM##_t, WM * 32, N * K * sizeof(T),                  \
             (const T* A, const T* B, const float* C0, float* C),                                     \
             (test::gemm_rs<T, M, N, K, WM, true>(A, B, C0, C)))
// clang-format on

// The tile shapes the compiler picks (128x128x32 over 2x2 warps, 128x256x32 over
// 2x4), a deep K, odd n8 tile counts (ldmatrix.x2), 32- and 48-byte rows.
#define GEMM_SS_SHAPES(tag, T)               \
  GEMM_SS(tag, T, float, 128, 128, 32, 2, 2) \
  GEMM_SS(tag, T, float, 64, 64, 64, 2, 2)   \
  GEMM_SS(tag, T, float, 128, 256, 32, 2, 4) \
  GEMM_SS(tag, T, float, 32, 24, 32, 2, 1)   \
  GEMM_SS(tag, T, float, 32, 48, 16, 1, 2)
GEMM_SS_SHAPES(f16, tl::half_t)
GEMM_SS_SHAPES(bf16, tl::bfloat16_t)
GEMM_SS(tf32, float, float, 64, 64, 32, 2, 2)
GEMM_SS(tf32, float, float, 32, 24, 16, 2, 1)
GEMM_SS(s8, int8_t, int32_t, 64, 64, 64, 2, 2)
GEMM_SS(u8, uint8_t, int32_t, 32, 48, 32, 1, 2)

// fp8 (sm_89+): the compiler's 128x128 tile with a 64-deep K (K-major operands
// only: the element loads of the other layouts need more than 255 registers at
// 64 x 64 per warp), an odd n8 tile count, and the mixed e4m3 x e5m2 forms. Compiling them for sm_80 stops at a
// static_assert (test_fp8_gemm_needs_sm89), so the sm_80 build leaves them out.
#if defined(TL_EMULATE) || __CUDA_ARCH__ >= 890
GEMM_SS_ONE(e4m3, tl::float8_e4m3fn_t, tl::float8_e4m3fn_t, float, 128, 128, 64, 2, 2, false, true, nt)
GEMM_SS(e4m3, tl::float8_e4m3fn_t, float, 64, 64, 64, 2, 2)
GEMM_SS(e4m3, tl::float8_e4m3fn_t, float, 32, 48, 32, 1, 2)
GEMM_SS(e5m2, tl::float8_e5m2_t, float, 64, 64, 64, 2, 2)
GEMM_SS_AB(e4m3_e5m2, tl::float8_e4m3fn_t, tl::float8_e5m2_t, float, 64, 32, 64, 2, 1)
GEMM_SS_AB(e5m2_e4m3, tl::float8_e5m2_t, tl::float8_e4m3fn_t, float, 32, 48, 32, 1, 2)
#define MMA_F8(tag, AE5m2, BE5m2)                                                                     \
  TEST_ENTRY(mma_f8_##tag, 32, 0, (const uint32_t* a, const uint32_t* b, const float* c, float* out), \
             (test::mma_f8<AE5m2, BE5m2>(a, b, c, out)))
MMA_F8(e4m3_e4m3, false, false)
MMA_F8(e4m3_e5m2, false, true)
MMA_F8(e5m2_e4m3, true, false)
MMA_F8(e5m2_e5m2, true, true)
#endif

#define MMA_SP(tag, bf16, sel)                                                                      \
  TEST_ENTRY(mma_sp_##tag##_sel##sel, 32, 0,                                                        \
             (const uint32_t* a, const uint32_t* b, const uint32_t* e, const float* c, float* out), \
             (test::mma_sp<bf16, sel>(a, b, e, c, out)))
MMA_SP(f16, false, 0)
MMA_SP(f16, false, 1)
MMA_SP(bf16, true, 0)
MMA_SP(bf16, true, 1)

GEMM_RS(f16, tl::half_t, 64, 64, 64, 4)
GEMM_RS(bf16, tl::bfloat16_t, 128, 24, 32, 8)
GEMM_RS(f16, tl::half_t, 64, 128, 16, 2)

TEST_ENTRY(swizzle_16x64x2, 64, 0, (int* out), (test::swizzle_table<16, 64, 2>(out)))
TEST_ENTRY(swizzle_16x32x2, 64, 0, (int* out), (test::swizzle_table<16, 32, 2>(out)))
TEST_ENTRY(swizzle_16x16x2, 64, 0, (int* out), (test::swizzle_table<16, 16, 2>(out)))
TEST_ENTRY(swizzle_16x24x2, 64, 0, (int* out), (test::swizzle_table<16, 24, 2>(out)))
TEST_ENTRY(swizzle_16x32x4, 64, 0, (int* out), (test::swizzle_table<16, 32, 4>(out)))
TEST_ENTRY(swizzle_16x64x1, 64, 0, (int* out), (test::swizzle_table<16, 64, 1>(out)))

#define LDMATRIX(num, trans, name)                                                                  \
  TEST_ENTRY(ldmatrix_x##num##name, 32, 512, (const uint16_t* src, const int* perm, uint32_t* out), \
             (test::ldmatrix<num, trans>(src, perm, out)))
LDMATRIX(1, false, )
LDMATRIX(2, false, )
LDMATRIX(4, false, )
LDMATRIX(1, true, _trans)
LDMATRIX(2, true, _trans)
LDMATRIX(4, true, _trans)

TEST_ENTRY(atomic_adds, 128, 0,
           (float* f32, double* f64, int* i32, int64_t* i64, tl::half_t* f16, tl::bfloat16_t* bf16, float* f32x2,
            float* f32x4, tl::half_t* f16x2, tl::bfloat16_t* bf16x2, const float* v),
           (test::atomic_adds(f32, f64, i32, i64, f16, bf16, f32x2, f32x4, f16x2, bf16x2, v)))
TEST_ENTRY(allreduce_f32, 64, 0, (const float* in, float* out), (test::warp_allreduce<float>(in, out)))
TEST_ENTRY(allreduce_f64, 64, 0, (const double* in, double* out), (test::warp_allreduce<double>(in, out)))
TEST_ENTRY(allreduce_i32, 64, 0, (const int* in, int* out), (test::warp_allreduce<int>(in, out)))
TEST_ENTRY(shuffles_f32, 64, 0, (const float* in, float* out), (test::shuffles<float>(in, out)))
TEST_ENTRY(shuffles_i64, 64, 0, (const long long* in, long long* out), (test::shuffles<long long>(in, out)))

TEST_ENTRY(copy_async_4, 64, 512, (const unsigned char* src, const int* pred, unsigned char* out),
           (test::copy_async<4>(src, pred, out)))
TEST_ENTRY(copy_async_8, 64, 1024, (const unsigned char* src, const int* pred, unsigned char* out),
           (test::copy_async<8>(src, pred, out)))
TEST_ENTRY(copy_async_16, 64, 2048, (const unsigned char* src, const int* pred, unsigned char* out),
           (test::copy_async<16>(src, pred, out)))

#define RACE(kind)                                                                                            \
  TEST_ENTRY(race_##kind, 32, 1024, (const tl::half_t* src, float* out), (test::race<kind, false>(src, out))) \
  TEST_ENTRY(no_race_##kind, 32, 1024, (const tl::half_t* src, float* out), (test::race<kind, true>(src, out)))
RACE(0)
RACE(1)
RACE(2)
