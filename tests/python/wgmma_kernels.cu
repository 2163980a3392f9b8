// Test kernels for the sm_90a wgmma gemms (device/cuda/gemm_sm90.cuh).
// test_wgmma_device.py compiles this file with NVRTC for sm_90a, and for the CPU
// against the emulation shims (device/emu), runs it there and compares with numpy;
// tests/gpu/test_wgmma_gpu.py runs the same entries on an H100/H200. Each entry
// runs one block; under TL_EMULATE it is a host function that runs that block.
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
// into a shared tile in the wgmma layout, 16 bytes per cp.async.
template <int Rows, int Cols, class T>
TL_DEVICE void fill_tile(T* tile, const T* src, int ld, int rank, int threads) {
  constexpr int kVec = 16 / int(sizeof(T)), kChunks = Rows * Cols / kVec;
  for (int c = rank; c < kChunks; c += threads) {
    const int row = c / (Cols / kVec), col = c % (Cols / kVec) * kVec;
    tl::cp_async<16>(tile + tl::wgmma_tile_offset<Rows, Cols, int(sizeof(T))>(row, col), src + row * ld + col, true);
  }
}

// (row, col) of accumulator i of this thread in the wgmma layout of an M x N tile
// over warpgroups (WGM, WGN).
template <int M, int N, int WGM, int WGN>
TL_DEVICE void acc_coord(int i, int& row, int& col) {
  constexpr int TM = M / WGM, TN = N / WGN;
  const int rank = int(threadIdx.x), wg = rank / 128, w = rank / 32 % 4, g = rank % 32 / 4, q = rank % 4;
  const int mi = i / 4 / (TN / 8), nt = i / 4 % (TN / 8), e = i % 4;
  row = wg / WGN * TM + 64 * mi + 16 * w + g + 8 * (e / 2);
  col = wg % WGN * TN + 8 * nt + 2 * q + e % 2;
}

// C = C0 + op(A) * op(B) over two K tiles, each in its own shared stage and
// cp.async group. A is [M][2K] ([2K][M] when TA), B is [2K][N] ([N][2K] when TB).
// Shift moves both stages by that many bytes of the shared window: a tile off its
// swizzle pattern must give wrong products (the hardware swizzles absolute addresses).
template <class T, int M, int N, int K, int WGM, int WGN, bool TA, bool TB, int Shift = 0>
TL_DEVICE void wgmma_ss(const T* A, const T* B, const float* C0, float* C) {
  TL_DYNAMIC_SHARED(smem);
  constexpr int kThreads = WGM * WGN * 128, kAcc = M * N / kThreads;
  T* As = reinterpret_cast<T*>(smem + Shift);  // [2][M * K]
  T* Bs = As + 2 * M * K;                      // [2][K * N]
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
  float acc[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) {
    int row, col;
    acc_coord<M, N, WGM, WGN>(i, row, col);
    acc[i] = C0[row * N + col];
  }
#pragma unroll 1  // one copy of the gemm code: halves NVRTC time
  for (int kt = 0; kt < 2; ++kt) {
    if (kt == 0)
      tl::cp_async_wait<1>();
    else
      tl::cp_async_wait<0>();
    __syncthreads();
    tl::wgmma_gemm_ss<M, N, K, WGM, WGN, TA, TB>(As + kt * M * K, Bs + kt * K * N, acc);
  }
#pragma unroll
  for (int i = 0; i < kAcc; ++i) {
    int row, col;
    acc_coord<M, N, WGM, WGN>(i, row, col);
    C[row * N + col] = acc[i];
  }
}

// C = C0 + A * op(B) with A (M x K, row-major) read straight into the register
// fragment wgmma_gemm_rs takes (the accumulator layout of M x K over (WGM, 1)).
template <class T, int M, int N, int K, int WGM, bool TB>
TL_DEVICE void wgmma_rs(const T* A, const T* B, const float* C0, float* C) {
  TL_DYNAMIC_SHARED(smem);
  constexpr int kThreads = WGM * 128, kA = M * K / kThreads, kAcc = M * N / kThreads;
  T* Bs = reinterpret_cast<T*>(smem);
  const int rank = int(threadIdx.x);
  if (TB)
    fill_tile<N, K>(Bs, B, K, rank, kThreads);
  else
    fill_tile<K, N>(Bs, B, N, rank, kThreads);
  tl::cp_async_wait_all();
  __syncthreads();
  T a[kA];
  float acc[kAcc];
#pragma unroll
  for (int i = 0; i < kA; ++i) {
    int row, col;
    acc_coord<M, K, WGM, 1>(i, row, col);
    a[i] = A[row * K + col];
  }
#pragma unroll
  for (int i = 0; i < kAcc; ++i) {
    int row, col;
    acc_coord<M, N, WGM, 1>(i, row, col);
    acc[i] = C0[row * N + col];
  }
  tl::wgmma_gemm_rs<M, N, K, WGM, 1, TB>(a, Bs, acc);
#pragma unroll
  for (int i = 0; i < kAcc; ++i) {
    int row, col;
    acc_coord<M, N, WGM, 1>(i, row, col);
    C[row * N + col] = acc[i];
  }
}

// The wgmma layout's offsets as the device computes them, for every (row, col).
template <int Rows, int Cols, int ElemBytes>
TL_DEVICE void layout_table(int* out) {
  for (int i = int(threadIdx.x); i < Rows * Cols; i += int(blockDim.x))
    out[i] = tl::wgmma_tile_offset<Rows, Cols, ElemBytes>(i / Cols, i % Cols);
}

}  // namespace test

// clang-format off
#define WGMMA_SS_ONE(tag, T, M, N, K, WGM, WGN, TA, TB, nt)                                             \
  TEST_ENTRY(wgmma_ss_##tag##_##M##x##N##x##K##_##WGM##x##WGN##_##nt, WGM * WGN * 128,                  \
             2 * (M + N) * K * sizeof(T), (const T* A, const T* B, const float* C0, float* C),          \
             (test::wgmma_ss<T, M, N, K, WGM, WGN, TA, TB>(A, B, C0, C)))
#define WGMMA_SS(tag, T, M, N, K, WGM, WGN)                       \
  WGMMA_SS_ONE(tag, T, M, N, K, WGM, WGN, false, false, nn)       \
  WGMMA_SS_ONE(tag, T, M, N, K, WGM, WGN, false, true, nt)        \
  WGMMA_SS_ONE(tag, T, M, N, K, WGM, WGN, true, false, tn)        \
  WGMMA_SS_ONE(tag, T, M, N, K, WGM, WGN, true, true, tt)
#define WGMMA_RS(tag, T, M, N, K, WGM)                                                                 \
  TEST_ENTRY(wgmma_rs_##tag##_##M##x##N##x##K##_##WGM##_n, WGM * 128, N * K * sizeof(T),               \
             (const T* A, const T* B, const float* C0, float* C),                                      \
             (test::wgmma_rs<T, M, N, K, WGM, false>(A, B, C0, C)))                                    \
  TEST_ENTRY(wgmma_rs_##tag##_##M##x##N##x##K##_##WGM##_t, WGM * 128, N * K * sizeof(T),               \
             (const T* A, const T* B, const float* C0, float* C),                                      \
             (test::wgmma_rs<T, M, N, K, WGM, true>(A, B, C0, C)))
#define LAYOUT(rows, cols, bytes)                                                                      \
  TEST_ENTRY(layout_##rows##x##cols##x##bytes, 128, 0, (int* out), (test::layout_table<rows, cols, bytes>(out)))
// clang-format on

// One m64 block and one n64 instruction; two warpgroups along M with 256-byte
// (two column block) rows and an n128 instruction; two along N, each taking half of
// a 128-byte N-major block (instructions that start inside a swizzle row); 64- and
// 32-byte rows (the 64B and 32B modes) with n16 instructions; three m64 blocks.
#define WGMMA_SS_SHAPES(tag, T)         \
  WGMMA_SS(tag, T, 64, 64, 32, 1, 1)    \
  WGMMA_SS(tag, T, 128, 128, 128, 2, 1) \
  WGMMA_SS(tag, T, 128, 64, 64, 1, 2)   \
  WGMMA_SS(tag, T, 64, 48, 32, 1, 1)    \
  WGMMA_SS(tag, T, 192, 16, 16, 1, 1)
WGMMA_SS_SHAPES(f16, tl::half_t)
WGMMA_SS_SHAPES(bf16, tl::bfloat16_t)
// The widest instruction (n256) over two warpgroups.
WGMMA_SS_ONE(f16, tl::half_t, 128, 256, 64, 2, 1, false, false, nn)
WGMMA_SS_ONE(bf16, tl::bfloat16_t, 128, 256, 64, 2, 1, false, true, nt)
// The 64x64x32 tiles moved 256 bytes off their 512- and 1024-byte swizzle patterns.
TEST_ENTRY(wgmma_ss_f16_misaligned, 128, 2 * (64 + 64) * 32 * 2 + 256,
           (const tl::half_t* A, const tl::half_t* B, const float* C0, float* C),
           (test::wgmma_ss<tl::half_t, 64, 64, 32, 1, 1, false, false, 256>(A, B, C0, C)))

WGMMA_RS(f16, tl::half_t, 64, 64, 64, 1)
WGMMA_RS(bf16, tl::bfloat16_t, 128, 32, 32, 2)
WGMMA_RS(f16, tl::half_t, 128, 128, 16, 2)

LAYOUT(16, 64, 2)
LAYOUT(16, 128, 2)
LAYOUT(16, 32, 2)
LAYOUT(16, 16, 2)
LAYOUT(16, 48, 2)
LAYOUT(16, 96, 2)
