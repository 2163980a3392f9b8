// Emulated twins of the sm_90a warpgroup MMA instructions for the CUDA emulator
// (device/cuda/gemm_sm90.cuh includes it under TL_EMULATE): wgmma.mma_async
// m64nNk16 f16/bf16 -> f32 with A and B from shared-memory matrix descriptors or A
// from registers, wgmma.fence, commit_group and wait_group, and the shared-window
// address a descriptor holds.
//
// The twins read operands the way the hardware does: the descriptor is decoded
// (start address, leading and stride byte offsets, swizzle mode), the canonical
// K-major or MN-major layout of the PTX ISA gives each element's address, and the
// swizzle is applied to the absolute shared-window address (16-byte chunk bits
// 4.. XOR address bits 7..). A wrong descriptor, a tile laid out otherwise, or a
// tile that does not start on a whole swizzle pattern therefore gives wrong
// products in emulation, as on the GPU.
//
// As on the GPU the operation is asynchronous: it is queued when issued and runs
// when a wait_group covers its commit group, so a missing wait leaves the
// accumulators unchanged in emulation. Each thread computes its own accumulators
// (warp w of the warpgroup: rows 16w + lane / 4 + {0, 8}, columns 8i + 2 (lane % 4)
// + {0, 1}); only A from registers needs the other lanes, through
// exchange_in_warp (cuda_emu.h), so every thread of the block must reach each
// register-A call (the gemms guarantee it: all warpgroups run the same steps).
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <string>
#include <vector>

namespace tl::emu {

// The byte offset of p in the block's shared memory: what __cvta_generic_to_shared
// gives on the GPU, where the dynamic shared array starts the window.
inline uint32_t wgmma_shared_offset(const void* p) {
  const BlockState& st = block_state();
  const unsigned char* c = static_cast<const unsigned char*>(p);
  if (c < st.shared.data() || c >= st.shared.data() + st.shared.size()) {
    record_failure("wgmma: an operand tile is not in the block's dynamic shared memory");
    return 0;
  }
  return uint32_t(c - st.shared.data());
}

struct WgmmaDesc {
  uint32_t start, lbo, sbo;
  int swizzle;  // bytes of one swizzled row: 128, 64, 32; 0 for the interleaved mode
  int base_offset;
};

// PTX ISA "Matrix Descriptor Format": bits 0-13 start address >> 4, 16-29 leading
// byte offset >> 4, 32-45 stride byte offset >> 4, 49-51 base offset, 62-63 swizzle
// mode (0 none, 1 128B, 2 64B, 3 32B).
inline WgmmaDesc decode_wgmma_desc(uint64_t d) {
  static const int widths[4] = {0, 128, 64, 32};
  return {uint32_t(d & 0x3fff) << 4, uint32_t((d >> 16) & 0x3fff) << 4, uint32_t((d >> 32) & 0x3fff) << 4,
          widths[d >> 62], int((d >> 49) & 7)};
}

// Shared-window byte address of element (mn, k) of a swizzled operand. K-major:
// rows of 8 consecutive mn at `swizzle` bytes apart, groups of 8 rows SBO apart, k
// along the row. MN-major: rows of `swizzle` bytes along mn for 8 consecutive k,
// groups of 8 k SBO apart, the next `swizzle` bytes of mn LBO apart.
inline uint32_t wgmma_element_address(const WgmmaDesc& d, bool k_major, int mn, int k, int elem_bytes) {
  const uint32_t sw = uint32_t(d.swizzle);
  uint32_t a;
  if (k_major) {
    a = d.start + uint32_t(mn / 8) * d.sbo + uint32_t(mn % 8) * sw + uint32_t(k * elem_bytes);
  } else {
    const uint32_t mb = uint32_t(mn * elem_bytes);
    a = d.start + mb / sw * d.lbo + uint32_t(k / 8) * d.sbo + uint32_t(k % 8) * sw + mb % sw;
  }
  return a ^ (((a >> 7) & (sw / 16 - 1)) << 4);
}

// One 16-bit operand element as float.
inline float wgmma_value(uint16_t bits, bool bf16) {
  return bf16 ? tl::bit_cast<float>(uint32_t(bits) << 16) : tl::half_bits_to_float(bits);
}

// The K x 16-bit elements of `count` rows (mn_of(i)) of a descriptor operand, read
// from shared memory now (and recorded for the race detector); false (with a
// recorded failure) on a descriptor tilelang never emits or one that reads past
// the block's shared memory.
template <class MnOf>
inline bool wgmma_read_operand(float* out, uint64_t desc, bool k_major, int count, MnOf mn_of, int k_extent, bool bf16,
                               const char* which) {
  const WgmmaDesc d = decode_wgmma_desc(desc);
  if (d.swizzle == 0 || d.base_offset != 0) {
    record_failure(std::string("wgmma: the ") + which +
                   " descriptor uses the interleaved mode or a base offset, which tilelang never emits");
    return false;
  }
  BlockState& st = block_state();
  for (int i = 0; i < count; ++i) {
    for (int k = 0; k < k_extent; ++k) {
      const uint32_t a = wgmma_element_address(d, k_major, mn_of(i), k, 2);
      if (size_t(a) + 2 > st.shared.size()) {
        record_failure(std::string("wgmma: the ") + which + " descriptor reads shared byte " + std::to_string(a) +
                       ", past the block's " + std::to_string(st.shared.size()) + " bytes");
        return false;
      }
      uint16_t bits;
      memcpy(&bits, note_shared(st.shared.data() + a, false, "|wgmma"), 2);
      out[i * k_extent + k] = wgmma_value(bits, bf16);
    }
  }
  return true;
}

// Per thread of the block: the queued operations and their commit groups.
struct WgmmaQueue {
  std::vector<std::function<void()>> open;
  std::deque<std::vector<std::function<void()>>> committed;
};

inline WgmmaQueue& wgmma_queue() {
  struct Queues {
    uint64_t block = ~uint64_t(0);
    std::vector<WgmmaQueue> by_rank;
  };
  static thread_local Queues q;
  if (q.block != block_state().serial) {
    q.block = block_state().serial;
    q.by_rank.assign(size_t(block_threads()), WgmmaQueue{});
  }
  return q.by_rank[size_t(thread_rank())];
}

// The calling thread's accumulator coordinates in an m64nN tile.
struct WgmmaLane {
  int warp, g, q;  // warp in the warpgroup, lane / 4, lane % 4
  WgmmaLane() {
    const int r = thread_rank() % 128, lane = r % 32;
    warp = r / 32, g = lane / 4, q = lane % 4;
  }
  int row(int h) const { return 16 * warp + g + 8 * h; }        // h: e / 2
  int col(int c) const { return 8 * (c / 2) + 2 * q + c % 2; }  // c: 2 * (n8 tile) + e % 2
};

inline bool check_warpgroups(int n) {
  if (block_threads() % 128 != 0) {
    record_failure("wgmma: the block has " + std::to_string(block_threads()) +
                   " threads; wgmma needs whole warpgroups (a multiple of 128)");
    return false;
  }
  if (n % 8 != 0 || n < 8 || n > 256) {
    record_failure("wgmma: N = " + std::to_string(n) + " is not a multiple of 8 in 8..256");
    return false;
  }
  return true;
}

// D (+)= A * B for the calling thread's N / 2 accumulators, from its two A rows
// (a[h * 16 + k]) and its N / 4 B columns (b[c * 16 + k]), k in k order.
inline void wgmma_accumulate(float* d, int n, bool scale_d, const float* a, const float* b) {
  for (int i = 0; i < n / 8; ++i)
    for (int e = 0; e < 4; ++e) {
      float sum = scale_d ? d[4 * i + e] : 0.0f;
      const float *ra = a + (e / 2) * 16, *cb = b + (2 * i + e % 2) * 16;
      for (int k = 0; k < 16; ++k) sum += ra[k] * cb[k];
      d[4 * i + e] = sum;
    }
}

// wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16} d, a-desc, b-desc, scale-d,
// 1, 1, trans-a, trans-b. trans = 0: K-major (A [M][K], B [N][K]); 1: M- / N-major.
inline void wgmma_ss(float* d, int n, uint64_t desc_a, uint64_t desc_b, bool scale_d, bool bf16, bool trans_a,
                     bool trans_b) {
  if (!check_warpgroups(n)) return;
  wgmma_queue().open.push_back([=] {
    const WgmmaLane l;
    std::vector<float> a(2 * 16), b(size_t(n / 4) * 16);
    if (!wgmma_read_operand(
            a.data(), desc_a, !trans_a, 2, [&](int h) { return l.row(h); }, 16, bf16, "A"))
      return;
    if (!wgmma_read_operand(
            b.data(), desc_b, !trans_b, n / 4, [&](int c) { return l.col(c); }, 16, bf16, "B"))
      return;
    wgmma_accumulate(d, n, scale_d, a.data(), b.data());
  });
}

// The same with A from registers: a[4] holds the m64k16 fragment of mma.m16n8k16
// for rows 16w.. of warp w (reg j: row g + 8 (j % 2), k 2q + 8 (j / 2) + {0, 1}).
inline void wgmma_rs(float* d, int n, const uint32_t (&a)[4], uint64_t desc_b, bool scale_d, bool bf16, bool trans_b) {
  if (!check_warpgroups(n)) return;
  const uint32_t* warp = exchange_in_warp<uint32_t, 4, 3>(a);
  const WgmmaLane l;
  std::vector<float> rows(2 * 16);
  for (int h = 0; h < 2; ++h)
    for (int k = 0; k < 16; ++k) {
      const uint32_t reg = warp[(l.g * 4 + (k % 8) / 2) * 4 + h + 2 * (k / 8)];
      rows[size_t(h * 16 + k)] = wgmma_value(uint16_t(reg >> (16 * (k % 2))), bf16);
    }
  wgmma_queue().open.push_back([=] {
    std::vector<float> b(size_t(n / 4) * 16);
    if (!wgmma_read_operand(
            b.data(), desc_b, !trans_b, n / 4, [&](int c) { return l.col(c); }, 16, bf16, "B"))
      return;
    wgmma_accumulate(d, n, scale_d, rows.data(), b.data());
  });
}

inline void wgmma_commit() {
  WgmmaQueue& q = wgmma_queue();
  q.committed.push_back(std::move(q.open));
  q.open.clear();
}

// Runs every committed group but the n newest.
inline void wgmma_wait(int n) {
  WgmmaQueue& q = wgmma_queue();
  while (q.committed.size() > size_t(n)) {
    for (const std::function<void()>& op : q.committed.front()) op();
    q.committed.pop_front();
  }
}

}  // namespace tl::emu
