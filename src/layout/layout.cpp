#include "layout/layout.h"

namespace tl {
namespace {

// e without its terms that are multiples of p: they do not change (e >> s) & m
// when p is a multiple of (m + 1) << s, and dropping them lets the key of a row
// that advances by whole periods be computed once.
Expr drop_multiples(const Expr& e, int64_t p) {
  if (auto c = as_const_int(e)) return int_imm(*c % p == 0 ? 0 : *c, e.dtype());
  if (auto* b = e.as<BinaryNode>()) {
    if (b->op == BinaryOp::Add) return add(drop_multiples(b->a, p), drop_multiples(b->b, p));
    if (b->op == BinaryOp::Mul) {
      auto ca = as_const_int(b->a), cb = as_const_int(b->b);
      if ((ca && *ca % p == 0) || (cb && *cb % p == 0)) return int_imm(0, e.dtype());
    }
  }
  return e;
}

}  // namespace

std::shared_ptr<const Layout> Layout::swizzle(int64_t cols, int64_t elem_bytes) {
  int64_t row_bytes = cols * elem_bytes;
  if (row_bytes % 128 == 0) return xor_chunks(cols, elem_bytes, 0, 7);
  if (row_bytes == 64) return xor_chunks(cols, elem_bytes, 1, 3);
  if (row_bytes == 32) return xor_chunks(cols, elem_bytes, 2, 1);
  return nullptr;
}

std::shared_ptr<const Layout> Layout::xor_chunks(int64_t cols, int64_t elem_bytes, int64_t row_shift,
                                                 int64_t row_mask) {
  if (elem_bytes <= 0 || 16 % elem_bytes != 0 || row_shift < 0 || row_mask < 1 || (row_mask & (row_mask + 1)) != 0)
    return nullptr;
  if ((cols * elem_bytes) % (16 * (row_mask + 1)) != 0) return nullptr;
  auto l = std::make_shared<Layout>();
  l->cols_ = l->block_cols_ = cols;
  l->chunk_ = 16 / elem_bytes;
  l->row_shift_ = row_shift, l->row_mask_ = row_mask;
  return l;
}

std::shared_ptr<const Layout> Layout::wgmma_swizzle(int64_t cols, int64_t elem_bytes) {
  int64_t row_bytes = cols * elem_bytes;
  int64_t width = row_bytes % 128 == 0 ? 128 : row_bytes % 64 == 0 ? 64 : row_bytes % 32 == 0 ? 32 : 0;
  if (!width) return nullptr;
  auto l = std::make_shared<Layout>(*swizzle(width / elem_bytes, elem_bytes));
  l->cols_ = cols;
  l->base_align_ = 8 * width;  // the pattern repeats every 8 rows of one block
  return l;
}

Expr Layout::offset(const Buffer& b, const std::vector<Expr>& indices) const {
  size_t n = indices.size();
  TL_ICHECK(n >= 2, "a swizzled buffer has at least two dims");
  // Leading dims (pipeline stages, batches) stay row-major, in units of tiles.
  Expr outer = int_imm(0);
  for (size_t d = 0; d + 2 < n; ++d) outer = add(mul(outer, b->shape[d]), indices[d]);
  Expr rows = b->shape[n - 2];
  const Expr &row = indices[n - 2], &col = indices[n - 1];
  Expr c = int_imm(chunk_, col.dtype());
  // Column blocks (wgmma): block col / B holds rows x B elements, row-major.
  bool blocked = block_cols_ != cols_;
  Expr bc = int_imm(block_cols_, col.dtype());
  Expr chunk = floordiv(blocked ? floormod(col, bc) : col, c);
  Expr key_row = drop_multiples(row, (row_mask_ + 1) << row_shift_);
  Expr key = binary(BinaryOp::BitAnd, binary(BinaryOp::Shr, key_row, int_imm(row_shift_, row.dtype())),
                    int_imm(row_mask_, row.dtype()));
  Expr phys = add(mul(binary(BinaryOp::BitXor, chunk, cast(chunk.dtype(), key)), c), floormod(col, c));
  if (!blocked) return add(mul(add(mul(outer, rows), row), int_imm(cols_, row.dtype())), phys);
  Expr block = add(mul(outer, int_imm(cols_ / block_cols_, row.dtype())), cast(row.dtype(), floordiv(col, bc)));
  return add(mul(add(mul(block, rows), row), int_imm(block_cols_, row.dtype())), phys);
}

std::string Layout::str() const {
  std::string blocks = block_cols_ == cols_ ? "" : str_cat(", blocks of ", block_cols_);
  return str_cat("swizzle(cols=", cols_, blocks, ", chunk=", chunk_, ", row>>", row_shift_, "&", row_mask_, ")");
}

Buffer with_layout(const Buffer& b, std::shared_ptr<const Layout> layout) {
  auto node = std::make_shared<BufferNode>(*b.get());
  node->layout = std::move(layout);
  return Buffer(std::move(node));
}

}  // namespace tl
