// Thread block clusters (sm_90): the blocks of a cluster (T.Kernel(...,
// cluster_dims=...), compiled into the kernel as __cluster_dims__) run at the same
// time on one GPC, meet at the cluster barrier and reach each other's shared
// memory. Here: the cluster barrier, the block's rank, arrivals on an mbarrier of
// another block of the cluster, and TMA loads multicast to several blocks.
//
// Under TL_EMULATE the blocks of a cluster are fibers of one scheduler
// (device/emu/tma_emu.h, run_cluster): the twins below reach the other blocks'
// shared memory through it.
#pragma once

#include "tma.cuh"

namespace tl {

// ---- the cluster barrier. Every non-exited thread of the cluster arrives; a wait
// returns once all have. The plain arrive releases the thread's earlier memory
// accesses to the threads past the wait; the relaxed one orders nothing.

template <int Dep = 0>
TL_DEVICE void cluster_arrive() {
  static_assert(TmaArchCheck<Dep>::ok);
#ifdef TL_EMULATE
  emu::cluster_arrive();
#else
  asm volatile("barrier.cluster.arrive.aligned;\n" ::: "memory");
#endif
}

template <int Dep = 0>
TL_DEVICE void cluster_arrive_relaxed() {
  static_assert(TmaArchCheck<Dep>::ok);
#ifdef TL_EMULATE
  emu::cluster_arrive();
#else
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
#endif
}

template <int Dep = 0>
TL_DEVICE void cluster_wait() {
  static_assert(TmaArchCheck<Dep>::ok);
#ifdef TL_EMULATE
  emu::cluster_wait();
#else
  asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
#endif
}

template <int Dep = 0>
TL_DEVICE void cluster_sync() {
  cluster_arrive<Dep>();
  cluster_wait<Dep>();
}

// The calling block's rank in its cluster (x fastest), 0 without a cluster.
template <int Dep = 0>
TL_DEVICE int block_rank_in_cluster() {
  static_assert(TmaArchCheck<Dep>::ok);
#ifdef TL_EMULATE
  return emu::cta_rank();
#else
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return int(r);
#endif
}

// The blocks of a Cx x Cy x Cz cluster that load the same tile: those whose cluster
// coordinates differ only along the dimensions set in `Along` (bit 0 x, 1 y, 2 z).
// cluster_share_rank is the block's rank among them (its coordinates along `Along`,
// x fastest), cluster_share_mask their cluster ranks as a multicast mask. A rank is
// x + Cx * (y + Cy * z), as %cluster_ctarank counts.
template <int Cx, int Cy, int Cz, int Along>
TL_DEVICE int cluster_share_rank() {
  const int r = block_rank_in_cluster();
  const int c[3] = {r % Cx, r / Cx % Cy, r / (Cx * Cy)}, size[3] = {Cx, Cy, Cz};
  int rank = 0, stride = 1;
  for (int d = 0; d < 3; ++d)
    if (Along >> d & 1) {
      rank += c[d] * stride;
      stride *= size[d];
    }
  return rank;
}

template <int Cx, int Cy, int Cz, int Along>
TL_DEVICE int cluster_share_mask() {
  static_assert(Cx * Cy * Cz <= 16, "a cluster has at most 16 blocks");
  const int r = block_rank_in_cluster();
  int mask = 0;
  for (int i = 0; i < Cx * Cy * Cz; ++i) {
    const int diff[3] = {i % Cx - r % Cx, i / Cx % Cy - r / Cx % Cy, i / (Cx * Cy) - r / (Cx * Cy)};
    bool same = true;
    for (int d = 0; d < 3; ++d) same = same && ((Along >> d & 1) || diff[d] == 0);
    if (same) mask |= 1 << i;
  }
  return mask;
}

namespace cluster_detail {
// An arrival on the mbarrier at `bar`'s offset in block `cta` of the cluster (mapa);
// ClusterRelease: with a cluster-scope release, else the default (CTA-scope) one.
template <bool ClusterRelease>
TL_DEVICE void arrive_remote(uint64_t* bar, int cta) {
#ifdef TL_EMULATE
  emu::mbarrier_arrive_remote(bar, cta);
#else
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_addr(bar)), "r"(cta));
  if constexpr (ClusterRelease) {
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
  } else {
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
  }
#endif
}
}  // namespace cluster_detail

// An arrival on the mbarrier at `bar`'s offset in the shared memory of block `cta`
// of the cluster. The arrival has the default (CTA-scope) release: it orders the
// caller's own block's accesses, which is what a tile release needs (the caller
// waited for its wgmma reads first). A cluster-scope release would drain the
// caller's memory operations cluster-wide at every arrival; on the H200 that made
// the multicast skinny GEMM 1.6x slower than without clusters.
template <int Dep = 0>
TL_DEVICE void mbarrier_arrive_cluster(uint64_t* bar, int cta) {
  static_assert(TmaArchCheck<Dep>::ok);
  cluster_detail::arrive_remote<false>(bar, cta);
}

// T.copy_cluster's remote barrier: an arrival on the mbarrier at `bar`'s offset in
// block `cta` with a cluster-scope release, so that the block that waits on it sees
// the stores this block made into its shared memory before (tl::store_cluster,
// ordered by the block barrier before the arrival).
template <int Dep = 0>
TL_DEVICE void mbarrier_arrive_cluster_release(uint64_t* bar, int cta) {
  static_assert(TmaArchCheck<Dep>::ok);
  cluster_detail::arrive_remote<true>(bar, cta);
}

// T.copy_cluster's element store: `value` into the shared memory of block `cta` of
// the cluster, at `dst`'s offset (dst points into the calling block's own shared
// memory; mapa gives the other block's address).
template <class T>
TL_DEVICE void store_cluster(T* dst, int cta, T value) {
  static_assert(TmaArchCheck<int(sizeof(T))>::ok);
#ifdef TL_EMULATE
  emu::store_remote(dst, cta, &value, sizeof(T));
#else
  uint64_t remote;
  asm volatile("mapa.u64 %0, %1, %2;\n" : "=l"(remote) : "l"(reinterpret_cast<uint64_t>(dst)), "r"(cta));
  *reinterpret_cast<T*>(remote) = value;
#endif
}

// A warp's release of a tile version that blocks 0 .. Ctas - 1 of the cluster
// multicast into: the lanes meet, then lane c arrives on block c's mbarrier (whose
// count is in warps of all those blocks).
template <int Ctas>
TL_DEVICE void mbarrier_arrive_warp_cluster(uint64_t* bar) {
  static_assert(Ctas >= 1 && Ctas <= 16, "a cluster has 1 to 16 blocks");
  __syncwarp();
#ifdef TL_EMULATE
  if (threadIdx.x % 32 == 0)
    for (int c = 0; c < Ctas; ++c) mbarrier_arrive_cluster<Ctas>(bar, c);
#else
  const int lane = int(threadIdx.x % 32);
  if (lane < Ctas) mbarrier_arrive_cluster<Ctas>(bar, lane);
#endif
}

// tma_load, multicast: the box lands at smem_dst's offset in the shared memory of
// every block of the cluster whose rank bit is set in `mask`, and its bytes
// complete on the mbarrier at `bar`'s offset in each of those blocks.
template <int Rank, class... Coords>
TL_DEVICE void tma_load_multicast(void* smem_dst, const TensorMap* map, uint64_t* bar, uint16_t mask,
                                  Coords... coords) {
  static_assert(TmaArchCheck<Rank>::ok);
  static_assert(Rank >= 1 && Rank <= 5, "tma_load_multicast: a tensor map has rank 1 to 5");
  static_assert(sizeof...(Coords) == Rank, "tma_load_multicast<Rank>: give one coordinate per dimension");
  const int32_t c[5] = {int32_t(coords)...};
#ifdef TL_EMULATE
  emu::tma_load_multicast(smem_dst, map, bar, mask, c, Rank);
#else
  const SmemAddr dst = smem_addr(smem_dst), mbar = smem_addr(bar);
  const uint64_t desc = reinterpret_cast<uint64_t>(map);
#define TL_TMA_MULTICAST(DIMS, COORDS, ...)                                                                  \
  asm volatile("cp.async.bulk.tensor." DIMS                                                                  \
               ".shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {" COORDS \
               "}], [%2], %3;\n" ::"r"(dst),                                                                 \
               "l"(desc), "r"(mbar), "h"(mask), __VA_ARGS__                                                  \
               : "memory")
  if constexpr (Rank == 1) TL_TMA_MULTICAST("1d", "%4", "r"(c[0]));
  if constexpr (Rank == 2) TL_TMA_MULTICAST("2d", "%4, %5", "r"(c[0]), "r"(c[1]));
  if constexpr (Rank == 3) TL_TMA_MULTICAST("3d", "%4, %5, %6", "r"(c[0]), "r"(c[1]), "r"(c[2]));
  if constexpr (Rank == 4) TL_TMA_MULTICAST("4d", "%4, %5, %6, %7", "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
  if constexpr (Rank == 5)
    TL_TMA_MULTICAST("5d", "%4, %5, %6, %7, %8", "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]));
#undef TL_TMA_MULTICAST
#endif
}

}  // namespace tl
