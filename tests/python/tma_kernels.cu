// Test kernels for the TMA copies and mbarriers (device/cuda/tma.cuh).
// test_tma_device.py builds this file for the CPU against the emulation shims and
// compares with numpy, and compiles it with NVRTC for sm_90 and sm_90a;
// tests/gpu/test_tma_gpu.py runs it on a Hopper GPU with maps from the driver.
// Every entry runs one block and takes the same parameters: the tensor map, an int
// array of arguments (args) and a byte buffer (buf). Under TL_EMULATE an entry is a
// host function that runs the block and takes the map by pointer.
#include "tl_cuda.cuh"

#ifdef TL_EMULATE
#define TMA_ENTRY(name, threads, call)                                                                \
  extern "C" void name(const tl::TensorMap* map_arg, const int* args, unsigned char* buf) {           \
    const tl::TensorMap& map = *map_arg;                                                              \
    ::tl::emu::run_block(0, 0, 0, threads, 1, 1, test::kSharedBytes, [&] { call(&map, args, buf); }); \
  }
#else
#define TMA_ENTRY(name, threads, call)                                                       \
  extern "C" __global__ void __launch_bounds__(threads)                                      \
      name(const __grid_constant__ tl::TensorMap map, const int* args, unsigned char* buf) { \
    call(&map, args, buf);                                                                   \
  }
#endif

namespace test {

// Tiles start at multiples of 1024 bytes, where every swizzle pattern starts; the
// barriers follow the last tile.
constexpr int kTileBytes = 8192, kTiles = 2, kSharedBytes = kTiles * kTileBytes + 64;
static_assert(kSharedBytes <= 48 * 1024, "the launches do not raise the dynamic shared-memory limit");

TL_DEVICE unsigned char* shared_base() {
#ifdef TL_EMULATE
  TL_DYNAMIC_SHARED(smem);
#else
  extern __shared__ __align__(1024) unsigned char smem[];
#endif
  return smem;
}
TL_DEVICE uint64_t* barriers() {
  return reinterpret_cast<uint64_t*>(shared_base() + kTiles * kTileBytes);
}

// The copy of rank `rank` at coords c[0..rank).
TL_DEVICE void load(int rank, void* tile, const tl::TensorMap* map, uint64_t* bar, const int* c) {
  switch (rank) {
    case 1:
      return tl::tma_load<1>(tile, map, bar, c[0]);
    case 2:
      return tl::tma_load<2>(tile, map, bar, c[0], c[1]);
    case 3:
      return tl::tma_load<3>(tile, map, bar, c[0], c[1], c[2]);
    case 4:
      return tl::tma_load<4>(tile, map, bar, c[0], c[1], c[2], c[3]);
    default:
      return tl::tma_load<5>(tile, map, bar, c[0], c[1], c[2], c[3], c[4]);
  }
}
TL_DEVICE void store(int rank, const tl::TensorMap* map, const void* tile, const int* c) {
  switch (rank) {
    case 1:
      return tl::tma_store<1>(map, tile, c[0]);
    case 2:
      return tl::tma_store<2>(map, tile, c[0], c[1]);
    case 3:
      return tl::tma_store<3>(map, tile, c[0], c[1], c[2]);
    case 4:
      return tl::tma_store<4>(map, tile, c[0], c[1], c[2], c[3]);
    default:
      return tl::tma_store<5>(map, tile, c[0], c[1], c[2], c[3], c[4]);
  }
}

TL_DEVICE void init_barriers(int count0, int count1) {
  if (threadIdx.x == 0) {
    tl::mbarrier_init(&barriers()[0], count0);
    tl::mbarrier_init(&barriers()[1], count1);
    tl::fence_mbarrier_init();
  }
  __syncthreads();
}

// The bytes a test moves between buf and a tile: the box rounded up to whole
// 128-byte lines, which the swizzle permutes within.
TL_DEVICE int line_bytes(int box_bytes) {
  return (box_bytes + 127) / 128 * 128;
}

// args = {rank, box bytes, coords (5), tile bytes}: thread 0 loads the box into
// tile 0, every thread waits for the phase, and the tile's raw bytes (swizzled; more
// than the box's when its rows are narrower than the swizzle span) go to buf.
TL_DEVICE void load_box(const tl::TensorMap* map, const int* args, unsigned char* buf) {
  const int rank = args[0], bytes = args[1], tile_bytes = args[7];
  unsigned char* tile = shared_base();
  init_barriers(1, 1);
  if (threadIdx.x == 0) {
    tl::prefetch_tensormap(map);
    tl::mbarrier_arrive_expect_tx(&barriers()[0], bytes);
    load(rank, tile, map, &barriers()[0], args + 2);
  }
  tl::mbarrier_wait(&barriers()[0], 0);
  for (int i = threadIdx.x; i < line_bytes(tile_bytes); i += blockDim.x) buf[i] = tile[i];
}

// args = {rank, tile bytes, coords...}: the raw tile bytes (swizzled; rows a span
// apart when narrower than the swizzle span) in buf go to tile 0 and thread 0 stores
// the box.
TL_DEVICE void store_box(const tl::TensorMap* map, const int* args, unsigned char* buf) {
  const int rank = args[0], bytes = args[1];
  unsigned char* tile = shared_base();
  for (int i = threadIdx.x; i < line_bytes(bytes); i += blockDim.x) tile[i] = buf[i];
  tl::fence_proxy_async();
  __syncthreads();
  if (threadIdx.x == 0) {
    store(rank, map, tile, args + 2);
    tl::tma_store_arrive();
    tl::tma_store_wait<0, true>();
  }
}

// args = {tiles, tile bytes, rows per tile}: a two-stage pipeline over a 2D map
// whose box is whole rows. Thread 32 produces tile k into stage k % 2 once the
// consumers (warp 0) released it; they wait for it, copy it to buf and release it.
// full[s] completes once per tile of stage s (one arrival + the bytes), empty[s]
// once the 32 consumers are done with it; both waits alternate parity per use.
TL_DEVICE void pipeline(const tl::TensorMap* map, const int* args, unsigned char* buf) {
  const int tiles = args[0], bytes = args[1], rows = args[2];
  uint64_t* full = barriers();
  uint64_t* empty = full + 2;
  if (threadIdx.x == 0) {
    for (int s = 0; s < 2; ++s) {
      tl::mbarrier_init(&full[s], 1);
      tl::mbarrier_init(&empty[s], 32);
    }
    tl::fence_mbarrier_init();
  }
  __syncthreads();
  const int t = threadIdx.x;
  if (t == 32) {
    for (int k = 0; k < tiles; ++k) {
      const int s = k % 2;
      tl::mbarrier_wait(&empty[s], ((k / 2) & 1) ^ 1);  // parity 1 of a fresh barrier: free at once
      tl::mbarrier_arrive_expect_tx(&full[s], bytes);
      tl::tma_load<2>(shared_base() + s * kTileBytes, map, &full[s], 0, k * rows);
    }
  } else if (t < 32) {
    for (int k = 0; k < tiles; ++k) {
      const int s = k % 2;
      tl::mbarrier_wait(&full[s], (k / 2) & 1);
      const unsigned char* stage = shared_base() + s * kTileBytes;
      for (int i = t; i < bytes; i += 32) buf[k * bytes + i] = stage[i];
      tl::mbarrier_arrive(&empty[s]);
    }
  }
}

// ---- emulator-only kernels: behaviour the GPU leaves undefined or hangs on.

// args = {rank, box bytes, coords...}: thread 0 reads the tile before the phase
// completes (a second arrival is pending) into buf[0, bytes), then after the wait
// into buf[bytes, 2 bytes).
TL_DEVICE void read_before_phase(const tl::TensorMap* map, const int* args, unsigned char* buf) {
  const int rank = args[0], bytes = args[1];
  unsigned char* tile = shared_base();
  init_barriers(2, 1);
  if (threadIdx.x == 0) {
    tl::mbarrier_arrive_expect_tx(&barriers()[0], bytes);
    load(rank, tile, map, &barriers()[0], args + 2);
    for (int i = 0; i < bytes; ++i) buf[i] = tile[i];
  }
  __syncthreads();
  if (threadIdx.x == 1) tl::mbarrier_arrive(&barriers()[0]);
  tl::mbarrier_wait(&barriers()[0], 0);
  for (int i = threadIdx.x; i < bytes; i += blockDim.x) buf[bytes + i] = tile[i];
}

// args = {kind, box bytes, coords (2D)}: a phase that never completes. kind 0: the
// barrier expects 2 arrivals and gets 1; kind 1: 16 bytes more are expected than
// the box brings; kind 2: the second wait asks for the parity of a phase that
// nobody starts.
TL_DEVICE void deadlock(const tl::TensorMap* map, const int* args, unsigned char* buf) {
  const int kind = args[0], bytes = args[1];
  init_barriers(kind == 0 ? 2 : 1, 1);
  if (threadIdx.x == 0) {
    tl::mbarrier_arrive_expect_tx(&barriers()[0], bytes + (kind == 1 ? 16 : 0));
    tl::tma_load<2>(shared_base(), map, &barriers()[0], args[2], args[3]);
  }
  tl::mbarrier_wait(&barriers()[0], 0);
  if (kind == 2) tl::mbarrier_wait(&barriers()[0], 1);
  buf[threadIdx.x] = 1;  // reached only past the waits
}

// args = {rank, box bytes, coords...}: thread 0 stores the tile, then overwrites
// it before its tma_store_wait.
TL_DEVICE void store_then_overwrite(const tl::TensorMap* map, const int* args, unsigned char* buf) {
  const int rank = args[0], bytes = args[1];
  unsigned char* tile = shared_base();
  for (int i = threadIdx.x; i < bytes; i += blockDim.x) tile[i] = buf[i];
  tl::fence_proxy_async();
  __syncthreads();
  if (threadIdx.x == 0) {
    store(rank, map, tile, args + 2);
    tl::tma_store_arrive();
    tile[0] ^= 0xff;
    tl::tma_store_wait<0, true>();
  }
}

}  // namespace test

TMA_ENTRY(load_box, 64, test::load_box)
TMA_ENTRY(store_box, 64, test::store_box)
TMA_ENTRY(pipeline, 64, test::pipeline)
TMA_ENTRY(read_before_phase, 64, test::read_before_phase)
TMA_ENTRY(deadlock, 64, test::deadlock)
TMA_ENTRY(store_then_overwrite, 64, test::store_then_overwrite)
