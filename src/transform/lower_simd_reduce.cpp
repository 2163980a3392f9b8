// See lower_simd_reduce.h. Rows are dealt to simdgroups so that every simd
// reduction is reached by all 32 lanes of its simdgroup together.
#include "transform/lower_simd_reduce.h"

#include "ir/visitor.h"
#include "ops/extent_util.h"
#include "ops/tile_op.h"
#include "transform/lower_tile_ops.h"

namespace tl {
namespace {

bool block_memory(const Buffer& b) {
  return b->scope == Scope::Shared || b->scope == Scope::SharedDyn || b->scope == Scope::Fragment;
}

class Reducer : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    const int64_t threads = op->thread_count();
    Scoped<Expr> in_kernel(rank_, thread_rank(op));
    Scoped<int64_t> simdgroups(simdgroups_, threads % 32 == 0 ? threads / 32 : 0);
    return IRMutator::visit(op, self);
  }

  Stmt visit(const TileOpNode* op, const Stmt& self) override {
    // (T.finalize_reducer is a Reduce of the reducer into itself: not a fold of a tile.)
    if (op->op != TileOpKind::Reduce || !simdgroups_ || attr_int(op->attrs, "finalize", 0))
      return IRMutator::visit(op, self);
    Stmt s = lower(op);
    return s.defined() ? attr_stmt(kThreadOpAttr, int64_t(1), s) : self;
  }

 private:
  Stmt lower(const TileOpNode* op) {
    const BufferRegion &src = op->regions[0], &dst = op->regions[1];
    std::string kind = attr_string(op->attrs, "kind");
    int rank = int(src.ranges.size());
    if (attr_int(op->attrs, "dim", -1) != rank - 1 || !block_memory(src.buffer) || !block_memory(dst.buffer))
      return Stmt();
    DataType t = dst.buffer->dtype;
    bool low = t == dtype::Float16 || t == dtype::BFloat16;
    if (!(low || t == dtype::Float32 || t == dtype::Int32 || t == dtype::UInt32)) return Stmt();
    DataType acc_t = low ? dtype::Float32 : t;
    // simd_max / simd_min promise nothing of NaN: nan_propagate=True folds with
    // shuffles (lower_fragments' warp_allreduce<tl::MaxOpNan>).
    if (attr_int(op->attrs, "nan_propagate", 0) && t.is_float()) return Stmt();
    const char* simd = nullptr;
    if (kind == "sum" || kind == "abssum") simd = "simd_sum";
    if (kind == "max" || kind == "absmax") simd = "simd_max";
    if (kind == "min") simd = "simd_min";
    if (kind == "bitand") simd = "simd_and";
    if (kind == "bitor") simd = "simd_or";
    if (kind == "bitxor") simd = "simd_xor";
    if (!simd) return Stmt();
    bool is_max = kind == "max" || kind == "absmax", is_min = kind == "min";
    auto combine = [&](const Expr& a, const Expr& b) -> Expr {
      if (is_max) return max(a, b);
      if (is_min) return min(a, b);
      if (kind == "bitand") return binary(BinaryOp::BitAnd, a, b);
      if (kind == "bitor") return binary(BinaryOp::BitOr, a, b);
      if (kind == "bitxor") return binary(BinaryOp::BitXor, a, b);
      return add(a, b);
    };
    Expr identity = kind == "max"      ? (has_infinity(acc_t) ? infinity(acc_t, true) : min_value(acc_t))
                    : is_min           ? (has_infinity(acc_t) ? infinity(acc_t) : max_value(acc_t))
                    : kind == "bitand" ? (acc_t.is_uint() ? max_value(acc_t) : int_imm(-1, acc_t))
                                       : make_const(acc_t, 0);
    // Rows: every source dim but the last, flattened.
    Expr rows = int_imm(1);
    for (int d = 0; d + 1 < rank; ++d) rows = mul(rows, cast(dtype::Int32, src.ranges[d].extent));
    Expr cols = cast(dtype::Int32, src.ranges[rank - 1].extent);
    Expr sg = floordiv(rank_, int_imm(32)), lane = floormod(rank_, int_imm(32));
    Var ir("tl_row_it", dtype::Int32), ic("tl_col_it", dtype::Int32), row("tl_row", dtype::Int32);
    // The source index of (row, column) and the destination index of row.
    std::vector<Expr> src_idx(rank), outer;
    Expr rest = row;
    for (int d = rank - 2; d >= 0; --d) {
      Expr ext = cast(dtype::Int32, src.ranges[d].extent);
      Expr local = d == 0 ? rest : floormod(rest, ext);
      if (d > 0) rest = floordiv(rest, ext);
      src_idx[d] = add(src.ranges[d].min, cast(src.ranges[d].min.dtype(), local));
      if (!is_const_one(src.ranges[d].extent)) outer.insert(outer.begin(), local);
    }
    Expr col = add(mul(ic, int_imm(32)), lane);
    src_idx[rank - 1] = add(src.ranges[rank - 1].min, cast(src.ranges[rank - 1].min.dtype(), col));
    std::vector<Expr> dst_idx;
    size_t next = 0;
    for (const Range& r : dst.ranges) {
      if (is_const_one(r.extent)) {
        dst_idx.push_back(r.min);
        continue;
      }
      if (next >= outer.size()) return Stmt();
      dst_idx.push_back(add(r.min, cast(r.min.dtype(), outer[next++])));
    }
    if (next != outer.size()) return Stmt();

    Buffer acc = Buffer::make("tl_acc", acc_t, {int_imm(1)}, Scope::Local, {}, op->span);
    Expr acc_v = buffer_load(acc, {int_imm(0)});
    Expr x = cast(acc_t, buffer_load(src.buffer, src_idx, op->span));
    if (kind == "abssum" || kind == "absmax") x = call(Intrinsic::Abs, {x});
    Stmt fold = if_then_else(lt(col, cols), buffer_store(acc, combine(acc_v, x), {int_imm(0)}));
    Expr col_iters = floordiv(add(cols, int_imm(31)), int_imm(32));
    Stmt per_row = seq({
        buffer_store(acc, identity, {int_imm(0)}),
        for_loop(ic, int_imm(0), col_iters, ForKind::Serial, fold),
        buffer_store(acc, call_extern(acc_t, simd, {acc_v}), {int_imm(0)}),
    });
    bool clear = attr_int(op->attrs, "clear", 1);
    Expr result = clear ? acc_v : combine(cast(acc_t, buffer_load(dst.buffer, dst_idx)), acc_v);
    Stmt write = if_then_else(eq(lane, int_imm(0)), buffer_store(dst.buffer, cast(t, result), dst_idx, op->span));
    Expr row_iters = floordiv(add(rows, int_imm(simdgroups_ - 1)), int_imm(simdgroups_));
    Stmt body =
        let_stmt(row, add(mul(ir, int_imm(simdgroups_)), sg), if_then_else(lt(row, rows), seq({per_row, write})));
    return allocate(acc, for_loop(ir, int_imm(0), row_iters, ForKind::Serial, body, {}, op->span));
  }

  Expr rank_;
  int64_t simdgroups_ = 0;
};

}  // namespace

PrimFunc lower_simd_reduce(const PrimFunc& f) {
  return f.with_body(Reducer().mutate(f->body));
}

}  // namespace tl
