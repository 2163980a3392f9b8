// Warp-level code: reductions through register shuffles (the building block of
// row-wise reductions over mma accumulators, whose rows span 4 consecutive lanes,
// and of warp-level T.reduce), and the language's warp helpers (T.shfl_*, T.ballot,
// T.any_sync, T.all_sync, T.activemask, T.sync_warp) for values of any scalar dtype.
// The cpu target has the same functions in device/cpu/warp.h. Under TL_EMULATE the
// intrinsics are the twins in device/emu/cuda_emu.h, which need every thread of the
// block to make the same calls.
#pragma once

namespace tl {

struct SumOp {
  template <class T>
  static TL_DEVICE T apply(T a, T b) {
    return a + b;
  }
};
struct MaxOp {
  template <class T>
  static TL_DEVICE T apply(T a, T b) {
    return max<T>(a, b);
  }
};
struct MinOp {
  template <class T>
  static TL_DEVICE T apply(T a, T b) {
    return min<T>(a, b);
  }
};
// The reductions' nan_propagate=True: a NaN in any lane gives NaN.
struct MaxOpNan {
  template <class T>
  static TL_DEVICE T apply(T a, T b) {
    return max_nan<T>(a, b);
  }
};
struct MinOpNan {
  template <class T>
  static TL_DEVICE T apply(T a, T b) {
    return min_nan<T>(a, b);
  }
};
// The bitwise reducers' ops (T.alloc_reducer(..., op="bitand" | "bitor" | "bitxor")).
struct BitAndOp {
  template <class T>
  static TL_DEVICE T apply(T a, T b) {
    return a & b;
  }
};
struct BitOrOp {
  template <class T>
  static TL_DEVICE T apply(T a, T b) {
    return a | b;
  }
};
struct BitXorOp {
  template <class T>
  static TL_DEVICE T apply(T a, T b) {
    return a ^ b;
  }
};

// ---- the language's warp helpers. A value of 1, 2 or 4 bytes travels in one
// 32-bit register, an 8-byte one in a 64-bit pair, whatever its type (half_t, fp8,
// bool ...).
template <int Bytes>
struct LaneWord;
template <>
struct LaneWord<1> {
  using bits = uint8_t;
  using word = uint32_t;
};
template <>
struct LaneWord<2> {
  using bits = uint16_t;
  using word = uint32_t;
};
template <>
struct LaneWord<4> {
  using bits = uint32_t;
  using word = uint32_t;
};
template <>
struct LaneWord<8> {
  using bits = unsigned long long;
  using word = unsigned long long;
};

template <class T>
TL_DEVICE typename LaneWord<sizeof(T)>::word to_lane_word(T v) {
  return bit_cast<typename LaneWord<sizeof(T)>::bits>(v);
}
template <class T>
TL_DEVICE T from_lane_word(typename LaneWord<sizeof(T)>::word w) {
  return bit_cast<T>(typename LaneWord<sizeof(T)>::bits(w));
}

template <class T>
TL_DEVICE T shfl_sync(uint32_t mask, T v, int src_lane, int width = 32) {
  return from_lane_word<T>(__shfl_sync(mask, to_lane_word(v), src_lane, width));
}
template <class T>
TL_DEVICE T shfl_xor_sync(uint32_t mask, T v, int lane_mask, int width = 32) {
  return from_lane_word<T>(__shfl_xor_sync(mask, to_lane_word(v), lane_mask, width));
}

// Op-reduces v over each group of Width consecutive lanes (groups start at lanes
// that are multiples of Width) and returns the result to every lane of the group.
// All 32 lanes of the warp must call it. Values of 1 to 8 bytes (half_t, bfloat16_t ...)
// travel as lane words.
template <class Op, int Width, class T>
TL_DEVICE T warp_allreduce(T v) {
  static_assert(Width >= 1 && Width <= 32 && (Width & (Width - 1)) == 0,
                "warp_allreduce: Width must be a power of two in [1, 32]");
#pragma unroll
  for (int mask = Width / 2; mask > 0; mask /= 2) v = Op::apply(v, shfl_xor_sync(0xffffffffu, v, mask));
  return v;
}
// TileLang's spelling of a lane reduction (T.reduce_*(..., batch=) on the GPU prints
// tl::AllReduce<Op, Threads, 1, 0, tl::SyncThreadsBarrier, Batch, 0>::run_batch(x)): the
// lanes of each aligned group of Threads (at most a warp; Scale 1, no offset) combine
// each of x[0:Batch] as warp_allreduce does, in the same order, the batch's shuffles
// interleaved. The cross-warp step is the lowering's (a shared row), not this struct's.
struct SyncThreadsBarrier {};
template <class Op, int Threads, int Scale = 1, int ThreadOffset = 0, class Barrier = SyncThreadsBarrier, int Batch = 1,
          int WorkspaceStride = 0>
struct AllReduce {
  static_assert(Scale == 1 && ThreadOffset == 0 && Threads >= 1 && Threads <= 32 && (Threads & (Threads - 1)) == 0,
                "tl::AllReduce here combines aligned lane groups of a power of two up to 32");
  template <class T>
  static TL_DEVICE T run(T x) {
    return warp_allreduce<Op, Threads>(x);
  }
  template <class T>
  static TL_DEVICE void run_batch(T* x) {
#pragma unroll
    for (int mask = Threads / 2; mask > 0; mask /= 2) {
#pragma unroll
      for (int b = 0; b < Batch; ++b) x[b] = Op::apply(x[b], shfl_xor_sync(0xffffffffu, x[b], mask));
    }
  }
};

template <class T>
TL_DEVICE T shfl_down_sync(uint32_t mask, T v, int delta, int width = 32) {
  return from_lane_word<T>(__shfl_down_sync(mask, to_lane_word(v), unsigned(delta), width));
}
template <class T>
TL_DEVICE T shfl_up_sync(uint32_t mask, T v, int delta, int width = 32) {
  return from_lane_word<T>(__shfl_up_sync(mask, to_lane_word(v), unsigned(delta), width));
}

// Votes. Ballots are 64-bit as in TileLang (the upper half is zero on 32-lane warps).
TL_DEVICE uint64_t ballot_sync(uint32_t mask, bool pred) {
  return uint64_t(__ballot_sync(mask, pred));
}
TL_DEVICE uint64_t ballot(bool pred) {
  return uint64_t(__ballot_sync(0xffffffffu, pred));
}
TL_DEVICE int32_t any_sync(uint32_t mask, bool pred) {
  return __any_sync(mask, pred);
}
TL_DEVICE int32_t all_sync(uint32_t mask, bool pred) {
  return __all_sync(mask, pred);
}
TL_DEVICE uint64_t activemask() {
  return uint64_t(__activemask());
}
// T.__ffs (64-bit values: __ffsll), T.__fns, T.match_any_sync, T.match_all_sync (sm_70+).
TL_DEVICE int32_t find_first_set(uint64_t x) {
  return x >> 32 ? __ffsll((long long)x) : __ffs(int(uint32_t(x)));
}
TL_DEVICE uint32_t find_nth_set(uint32_t mask, uint32_t base, int32_t offset) {
  return __fns(mask, base, offset);
}
template <class T>
TL_DEVICE uint32_t match_any_sync(uint32_t mask, T v) {
  return __match_any_sync(mask, v);
}
template <class T>
TL_DEVICE uint32_t match_all_sync(uint32_t mask, T v) {
  int pred;
  return __match_all_sync(mask, v, &pred);
}
TL_DEVICE void sync_warp(uint32_t mask = 0xffffffffu) {
  __syncwarp(mask);
}

// Block-wide votes that are also block barriers (T.syncthreads_count / _and / _or).
// `threads`, the block's size, is for the cpu target's single executor (warp.h).
TL_DEVICE int32_t syncthreads_count(bool pred, int) {
  return __syncthreads_count(pred);
}
TL_DEVICE int32_t syncthreads_and(bool pred, int) {
  return __syncthreads_and(pred);
}
TL_DEVICE int32_t syncthreads_or(bool pred, int) {
  return __syncthreads_or(pred);
}

// Programmatic dependent launch (T.pdl_trigger / T.pdl_sync, sm_90+): the dependent
// grid may start once every block has triggered, and waits at pdl_sync until this
// grid's memory is visible. Launched without the PDL attribute, as here, a grid only
// starts after the previous one finished, so both are no-ops before sm_90 and under
// emulation.
TL_DEVICE void pdl_trigger() {
#if !defined(TL_EMULATE) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
TL_DEVICE void pdl_sync() {
#if !defined(TL_EMULATE) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace tl
