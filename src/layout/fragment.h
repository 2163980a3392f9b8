// Fragment layouts: how a block-wide tile (T.alloc_fragment) is spread over the
// registers of a thread block. A layout answers two questions, both as IR
// expressions: which logical element does local register k of thread t hold, and
// which local register holds a logical element. Lowering iterates each thread's
// registers with k a compile-time constant (unrolled), so the register arrays
// never leave registers.
//
// Three shapes of layout cover TileLang's kernels:
//   Blocked: the default for 2-d tiles [R, C] (higher ranks fold their leading
//            dims into R). TR x TC threads; thread (tr, tc) holds rows
//            tr, tr + TR, ... and, in each, runs of `vec` consecutive columns
//            starting at tc * vec, tc * vec + TC * vec, ... Consecutive threads
//            hold consecutive runs, so copies are coalesced 16-byte accesses.
//   Accum:   the mma.sync m16n8 accumulator layout of T.gemm's C over
//            WarpsM x WarpsN warps (docs/design/cuda_layouts.md).
//   WgmmaAccum: the wgmma m64nN accumulator layout over WgM x WgN warpgroups of
//            4 warps (sm_90a): the same m16n8 tiles, but warp w of a warpgroup
//            takes rows 16w.. of each m64 block of its warpgroup's tile.
//   Rows:    a vector [R] holding one value per row of a 2-d parent layout, kept
//            by every thread that holds part of that row (replicated): the
//            result of a reduction over the parent's last dim, and the shape that
//            per-row values (row max, row sum, scale) take in T.Parallel loops.
//            A 1-d parent [n] is one row: its Rows vector is [1].
//   Cols:    a vector [C] holding one value per column of a 2-d parent layout
//            (Blocked or an accumulator), kept by every thread that holds part of
//            that column: per-column values in T.Parallel loops (a mask over the
//            columns of a score tile), and the result of a reduction over dim 0 of
//            a parent whose columns lie whole in one thread (Blocked with one
//            thread row, blocked_columns): that reduction is a per-thread loop.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace tl {

class FragmentLayout;
using FragmentLayoutPtr = std::shared_ptr<const FragmentLayout>;

class FragmentLayout {
 public:
  enum class Kind { Blocked, Accum, WgmmaAccum, Rows, Cols };

  // `elem_bytes` sizes the runs: 16 bytes of the narrowest element copied.
  static FragmentLayoutPtr blocked(std::vector<int64_t> shape, int64_t threads, int64_t elem_bytes);
  static FragmentLayoutPtr accum(int64_t m, int64_t n, int64_t warps_m, int64_t warps_n);
  static FragmentLayoutPtr wgmma_accum(int64_t m, int64_t n, int64_t warpgroups_m, int64_t warpgroups_n);
  static FragmentLayoutPtr rows(const FragmentLayoutPtr& parent);
  // A 2-d Blocked layout whose threads each hold whole columns (one thread row:
  // thread t holds every row of its columns), or null when the columns do not
  // divide over the threads.
  static FragmentLayoutPtr blocked_columns(const std::vector<int64_t>& shape, int64_t threads, int64_t elem_bytes);
  // The columns of a 2-d Blocked or accumulator layout (null for another parent).
  static FragmentLayoutPtr cols(const FragmentLayoutPtr& parent);

  Kind kind() const { return kind_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t local_size() const { return local_size_; }
  int64_t threads() const { return threads_; }  // the threads the layout spreads over
  // The groups C is split over: warps (Accum) or warpgroups (WgmmaAccum).
  int64_t warps_m() const { return warps_m_; }
  int64_t warps_n() const { return warps_n_; }
  bool is_accum() const { return kind_ == Kind::Accum || kind_ == Kind::WgmmaAccum; }
  const FragmentLayoutPtr& parent() const { return parent_; }
  // Consecutive registers holding consecutive elements of the last dim.
  int64_t run() const;

  // The logical index held by register `k` of thread `t`, and whether it is inside
  // the shape (false only where the tile does not divide over the threads).
  std::vector<Expr> logical(const Expr& t, const Expr& k) const;
  Expr valid(const Expr& t, const Expr& k) const;
  // For a Rows layout: the register of the row that register `k` of the parent holds.
  Expr row_local(const Expr& parent_k) const;
  // For a Cols layout: the register of the column that register `k` of the parent
  // holds; whether thread t is the first of the threads holding its columns; and,
  // where the parent holds whole columns, the parent register of row `row` of the
  // column in register `k`.
  Expr col_local(const Expr& parent_k) const;
  Expr col_leader(const Expr& t) const;
  Expr parent_register(const Expr& row, const Expr& k) const;
  // A 2-d Blocked layout of one thread row: every thread holds whole columns.
  bool holds_whole_columns() const { return kind_ == Kind::Blocked && shape_.size() == 2 && tr_ == 1; }
  // For a 2-d layout, the threads that share a row: groups of `lanes` consecutive
  // lanes of a warp (a power of two <= 32), times `warps` consecutive warps; and
  // the position of thread t's warp among those warps.
  int64_t row_lanes() const;
  int64_t row_warps() const;
  Expr row_warp_index(const Expr& t) const;

  bool equals(const FragmentLayout& o) const;
  // For two Rows layouts: every thread holds the same rows in the same registers
  // (the parents split the rows over the threads alike, whatever their widths), so
  // one register vector serves loops over both parents.
  bool same_rows(const FragmentLayout& o) const;
  std::string str() const;

 private:
  Kind kind_ = Kind::Blocked;
  std::vector<int64_t> shape_;
  int64_t threads_ = 1, local_size_ = 0;
  int64_t tr_ = 1, tc_ = 1, vec_ = 1, rows_per_thread_ = 1, runs_per_row_ = 1;  // Blocked
  int64_t warps_m_ = 1, warps_n_ = 1;                                           // Accum, WgmmaAccum
  int64_t group_warps_ = 1;   // warps per group: 1 (Accum) or 4 (WgmmaAccum)
  FragmentLayoutPtr parent_;  // Rows, Cols
};

}  // namespace tl
