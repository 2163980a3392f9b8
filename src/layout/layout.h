// The physical layout of a shared-memory buffer: where logical element (..., row,
// col) lives. One family: the 16-byte-chunk XOR swizzle that T.gemm's operand
// tiles get on CUDA, so that ldmatrix reads and the copies that fill the tiles are
// free of bank conflicts, and (wgmma_swizzle) the same swizzle cut into column
// blocks one swizzle atom wide, which is what a wgmma matrix descriptor describes
// (docs/design/cuda_layouts.md gives both formulas). Code generation asks the
// layout for every offset of such a buffer, so all accesses (copies, T.Parallel
// loops, the fallback paths) agree with the gemm.
#pragma once

#include <memory>
#include <string>

#include "ir/ir.h"

namespace tl {

class Layout {
 public:
  // Swizzle over the last two dims of a tile whose rows hold `cols` elements of
  // `elem_bytes` bytes; nullptr when the row length has no conflict-free swizzle.
  static std::shared_ptr<const Layout> swizzle(int64_t cols, int64_t elem_bytes);
  // The wgmma form: rows of 128 (else 64, else 32) bytes swizzled as the
  // descriptor's swizzle mode of that width, a tile with longer rows stored as
  // column blocks of that width one after another; nullptr when the row length is
  // not a multiple of 32 bytes.
  static std::shared_ptr<const Layout> wgmma_swizzle(int64_t cols, int64_t elem_bytes);
  // The general form of the family: in a tile whose rows hold `cols` elements of
  // `elem_bytes` bytes, 16-byte chunk c of row r moves to c ^ ((r >> row_shift) &
  // row_mask) (a T.annotate_layout the frontend recognized); nullptr when a row is not
  // a whole number of the chunk groups the mask permutes.
  static std::shared_ptr<const Layout> xor_chunks(int64_t cols, int64_t elem_bytes, int64_t row_shift,
                                                  int64_t row_mask);

  // The physical element offset of `indices` in `b` (b's shape, compact row-major).
  Expr offset(const Buffer& b, const std::vector<Expr>& indices) const;
  // Elements that stay contiguous (and 16-byte aligned) under the swizzle.
  int64_t chunk_elems() const { return chunk_; }
  // Bytes a buffer's start must be aligned to: the hardware swizzles absolute
  // shared addresses, so a wgmma tile starts on a whole swizzle pattern.
  int64_t base_align() const { return base_align_; }
  // Columns per column block (the whole row when the layout is not blocked).
  int64_t block_cols() const { return block_cols_; }
  // Whether `o` puts every element where this layout does (the base alignment aside).
  bool same_placement(const Layout& o) const {
    return cols_ == o.cols_ && chunk_ == o.chunk_ && block_cols_ == o.block_cols_ && row_shift_ == o.row_shift_ &&
           row_mask_ == o.row_mask_;
  }
  std::string str() const;

 private:
  int64_t cols_ = 0, chunk_ = 1;
  int64_t block_cols_ = 0;                // columns per column block (== cols_ when not blocked)
  int64_t row_shift_ = 0, row_mask_ = 0;  // chunk ^= (row >> shift) & mask
  int64_t base_align_ = 16;
};

// A copy of `b` carrying `layout`.
Buffer with_layout(const Buffer& b, std::shared_ptr<const Layout> layout);

}  // namespace tl
