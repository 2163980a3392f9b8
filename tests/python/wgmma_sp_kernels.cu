// Test kernels for the sparse sm_90a gemm (tl::wgmma_gemm_sp_ss, wgmma.mma_async.sp
// in device/cuda/gemm_sm90.cuh). test_wgmma_sp_device.py runs them on the CPU
// through the emulation shims and compares with numpy, and compiles this file with
// NVRTC for sm_90a. Each entry runs one block; under TL_EMULATE it is a host
// function that runs that block.
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

// Copies a Rows x Cols row-major global matrix into a shared tile in the wgmma
// layout, 16 bytes per cp.async.
template <int Rows, int Cols, class T>
TL_DEVICE void fill_tile(T* tile, const T* src, int rank, int threads) {
  constexpr int kVec = 16 / int(sizeof(T)), kChunks = Rows * Cols / kVec;
  for (int c = rank; c < kChunks; c += threads) {
    const int row = c / (Cols / kVec), col = c % (Cols / kVec) * kVec;
    tl::cp_async<16>(tile + tl::wgmma_tile_offset<Rows, Cols, int(sizeof(T))>(row, col), src + row * Cols + col, true);
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

// C = C0 + op(A) * op(B), A 2:4 sparse given as its kept values (A_sparse [M][K / 2],
// [K / 2][M] when TA) and metadata E ([M][K / per], [K / per][M] when TE); B is
// [K][N] ([N][K] when TB).
template <class T, class TE, int M, int N, int K, int WGM, int WGN, bool TA, bool TB, bool TEt>
TL_DEVICE void wgmma_sp(const T* A, const TE* E, const T* B, const float* C0, float* C) {
  TL_DYNAMIC_SHARED(smem);
  constexpr int kThreads = WGM * WGN * 128, kAcc = M * N / kThreads, kE = M * K / (8 * int(sizeof(TE)));
  T* As = reinterpret_cast<T*>(smem);  // M * K / 2 elements: a multiple of 1024 bytes
  T* Bs = As + M * K / 2;
  TE* Es = reinterpret_cast<TE*>(Bs + K * N);
  const int rank = int(threadIdx.x);
  if (TA)
    fill_tile<K / 2, M>(As, A, rank, kThreads);
  else
    fill_tile<M, K / 2>(As, A, rank, kThreads);
  if (TB)
    fill_tile<N, K>(Bs, B, rank, kThreads);
  else
    fill_tile<K, N>(Bs, B, rank, kThreads);
  for (int i = rank; i < kE; i += kThreads) Es[i] = E[i];
  tl::cp_async_wait_all();
  __syncthreads();
  float acc[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) {
    int row, col;
    acc_coord<M, N, WGM, WGN>(i, row, col);
    acc[i] = C0[row * N + col];
  }
  tl::wgmma_gemm_sp_ss<M, N, K, WGM, WGN, TA, TB, TEt>(As, Es, Bs, acc);
#pragma unroll
  for (int i = 0; i < kAcc; ++i) {
    int row, col;
    acc_coord<M, N, WGM, WGN>(i, row, col);
    C[row * N + col] = acc[i];
  }
}

}  // namespace test

// clang-format off
#define WGMMA_SP(tag, T, TE, etag, M, N, K, WGM, WGN, TA, TB, TEt, flags)                                        \
  TEST_ENTRY(wgmma_sp_##tag##_##etag##_##M##x##N##x##K##_##WGM##x##WGN##_##flags, WGM * WGN * 128,               \
             M * K + K * N * 2 + M * K / 8,                                                                      \
             (const T* A, const TE* E, const T* B, const float* C0, float* C),                                  \
             (test::wgmma_sp<T, TE, M, N, K, WGM, WGN, TA, TB, TEt>(A, E, B, C0, C)))
#define WGMMA_SP_TRANSPOSES(tag, T, M, N, K, WGM, WGN)                        \
  WGMMA_SP(tag, T, int16_t, i16, M, N, K, WGM, WGN, false, false, false, nnn) \
  WGMMA_SP(tag, T, int16_t, i16, M, N, K, WGM, WGN, false, true, false, ntn)  \
  WGMMA_SP(tag, T, int16_t, i16, M, N, K, WGM, WGN, true, false, false, tnn)  \
  WGMMA_SP(tag, T, int16_t, i16, M, N, K, WGM, WGN, true, true, false, ttn)
// clang-format on
// One m64 block, n64 instructions, 32-byte kept rows (the 32B mode); two
// warpgroups along M with 64-byte kept rows; two along N, n64 each from 128-byte
// B rows; n16 instructions (N = 48); 8- and 32-bit metadata and transposed E.
WGMMA_SP_TRANSPOSES(f16, tl::half_t, 64, 64, 32, 1, 1)
WGMMA_SP_TRANSPOSES(bf16, tl::bfloat16_t, 64, 64, 32, 1, 1)
WGMMA_SP_TRANSPOSES(f16, tl::half_t, 128, 64, 64, 2, 1)
WGMMA_SP_TRANSPOSES(bf16, tl::bfloat16_t, 128, 128, 128, 1, 2)
WGMMA_SP_TRANSPOSES(f16, tl::half_t, 64, 48, 64, 1, 1)
WGMMA_SP(f16, tl::half_t, uint8_t, u8, 64, 64, 64, 1, 1, false, false, false, nnn)
WGMMA_SP(bf16, tl::bfloat16_t, int32_t, i32, 64, 64, 128, 1, 1, false, true, false, ntn)
WGMMA_SP(f16, tl::half_t, int16_t, i16, 64, 64, 64, 1, 1, false, false, true, nnt)
