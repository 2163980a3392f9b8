// What the register lowerings of the tile ops share (ops/registers.h), and the
// entries of the ops that have none.
#include "ops/registers.h"

#include "arith/simplify.h"
#include "ops/extent_util.h"

namespace tl {

void infer_none_fragments(const TileOpNode* op, fragments::OpUses& uses) {
  uses.demote_all(op, str_cat("T.", op_info(op->op).name, " has no register lowering"));
}

Stmt lower_none_registers(const TileOpNode* op, const fragments::LowerContext&) {
  TL_ICHECK(false, "tile op T.", op_info(op->op).name, " with a register fragment has no register lowering");
  return Stmt();
}

}  // namespace tl

namespace tl::fragments {

bool pairs_exactly(const BufferRegion& s, const BufferRegion& d) {
  std::vector<int64_t> a, b;
  for (const Expr& e : s.extents()) {
    auto c = as_const_int(e);
    if (!c) return false;
    if (*c != 1) a.push_back(*c);
  }
  for (const Expr& e : d.extents()) {
    auto c = as_const_int(e);
    if (!c) return false;
    if (*c != 1) b.push_back(*c);
  }
  return a == b;
}

std::vector<Expr> paired_index(const BufferRegion& frag, const BufferRegion& other, const std::vector<Expr>& idx) {
  std::vector<Expr> comps;
  for (size_t d = 0; d < frag.ranges.size(); ++d) {
    const Range& r = frag.ranges[d];
    if (is_const_one(r.extent)) continue;
    auto mn = as_const_int(r.min);
    comps.push_back(mn && *mn == 0 ? idx[d] : sub(idx[d], cast(idx[d].dtype(), r.min)));
  }
  std::vector<Expr> out;
  size_t next = 0;
  for (const Range& r : other.ranges) {
    if (is_const_one(r.extent)) {
      out.push_back(r.min);
      continue;
    }
    out.push_back(add(r.min, cast(r.min.dtype(), comps[next++])));
  }
  return out;
}

Expr in_region(const BufferRegion& frag, const std::vector<Expr>& idx) {
  Expr ok;
  for (size_t d = 0; d < frag.ranges.size(); ++d) {
    if (covers_dim(frag, d)) continue;
    const Range& r = frag.ranges[d];
    Expr lo = cast(idx[d].dtype(), r.min);
    Expr here = logical_and(ge(idx[d], lo), lt(idx[d], add(lo, cast(idx[d].dtype(), r.extent))));
    ok = ok.defined() ? logical_and(ok, here) : here;
  }
  return ok.defined() ? ok : bool_imm(true);
}

int64_t vector_width(const BufferRegion& mem, int64_t run, int64_t bytes, bool packed) {
  if (run <= 1 || is_const_one(mem.ranges.back().extent) || (mem.buffer->dtype.is_sub_byte() && !packed)) return 1;
  auto strides = mem.buffer.effective_strides();
  if (!is_const_one(strides.back())) return 1;
  int64_t w = std::min<int64_t>(run, 16 / bytes);
  auto ok = [&](int64_t w) {
    if (run % w != 0 || !divisible(mem.ranges.back().min, w)) return false;
    for (size_t d = 0; d + 1 < strides.size(); ++d)
      if (!divisible(strides[d], w)) return false;
    if (mem.buffer->scope == Scope::Global && !divisible(mem.buffer->shape.back(), w)) return false;
    if (mem.buffer->layout && mem.buffer->layout->chunk_elems() % w != 0) return false;
    return true;
  };
  while (w > 1 && !ok(w)) w /= 2;
  return w;
}

// Whether `e` is a multiple of `n` for every value of its variables (affine forms).
bool divisible(const Expr& e, int64_t n) {
  if (n == 1) return true;
  if (auto c = as_const_int(e)) return *c % n == 0;
  if (auto* b = e.as<BinaryNode>()) {
    switch (b->op) {
      case BinaryOp::Add:
      case BinaryOp::Sub:
        return divisible(b->a, n) && divisible(b->b, n);
      case BinaryOp::Mul:
        return divisible(b->a, n) || divisible(b->b, n);
      case BinaryOp::FloorDiv: {  // (q * n * d) / d = q * n, as in k * block_K // e_factor
        auto d = as_const_int(b->b);
        return d && *d > 0 && divisible(b->a, n * *d);
      }
      default:
        return false;
    }
  }
  if (auto* c = e.as<CastNode>()) return c->value.dtype().is_integer() && divisible(c->value, n);
  return false;
}

Expr row_leader(const FragmentLayout& p, const Expr& thread) {
  Expr leader = eq(floormod(thread, int_imm(p.row_lanes())), int_imm(0));
  if (p.row_warps() > 1) leader = logical_and(leader, eq(p.row_warp_index(thread), int_imm(0)));
  return leader;
}

}  // namespace tl::fragments
