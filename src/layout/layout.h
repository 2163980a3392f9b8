// The physical layout of a shared-memory buffer: where logical element (..., row,
// col) lives. Today one kind: the 16-byte-chunk XOR swizzle that T.gemm's operand
// tiles get on CUDA, so that ldmatrix reads and the copies that fill the tiles are
// free of bank conflicts (docs/design/cuda_layouts.md gives the formula). Code
// generation asks the layout for every offset of such a buffer, so all accesses
// (copies, T.Parallel loops, the fallback paths) agree with the gemm.
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

  // The physical element offset of `indices` in `b` (b's shape, compact row-major).
  Expr offset(const Buffer& b, const std::vector<Expr>& indices) const;
  // Elements that stay contiguous (and 16-byte aligned) under the swizzle.
  int64_t chunk_elems() const { return chunk_; }
  std::string str() const;

 private:
  int64_t cols_ = 0, chunk_ = 1;
  int64_t row_shift_ = 0, row_mask_ = 0;  // chunk ^= (row >> shift) & mask
};

// A copy of `b` carrying `layout`.
Buffer with_layout(const Buffer& b, std::shared_ptr<const Layout> layout);

}  // namespace tl
