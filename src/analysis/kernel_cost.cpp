// Counts a kernel's floating-point work and global traffic by walking its frontend
// IR with a trip-count multiplier: the grid of each T.Kernel and the extent of each
// loop multiply what the statements inside them count once.
#include "analysis/kernel_cost.h"

#include "arith/simplify.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "ops/tile_op.h"
#include "support/error.h"

namespace tl {
namespace {

bool is_arithmetic(BinaryOp op) {
  return op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul || op == BinaryOp::Div ||
         op == BinaryOp::Min || op == BinaryOp::Max;
}

class CostCounter : public IRVisitor {
 public:
  KernelCost cost;

  using IRVisitor::visit;

  void visit(const KernelLaunchNode* op) override {
    int64_t blocks = 1;
    for (const Expr& g : op->grid) blocks *= constant(g, op->span, "the grid size of T.Kernel");
    Scoped<int64_t> inside(times_, times_ * blocks);
    visit(op->body);
  }

  void visit(const ForNode* op) override {
    int64_t trips = constant(op->extent, op->span, str_cat("the trip count of the loop over '", op->var.name(), "'"));
    Scoped<int64_t> inside(times_, times_ * trips);
    visit(op->body);
  }

  void visit(const WhileNode* op) override {
    throw_user_error(op->span,
                     "cannot count the cost of a kernel with a while loop: its trip count is not known before it runs");
  }

  void visit(const BufferLoadNode* op) override {
    if (op->buffer->scope == Scope::Global) read_bits_ += bits(op->dtype) * times_;
    IRVisitor::visit(op);
  }

  void visit(const BufferStoreNode* op) override {
    if (op->buffer->scope == Scope::Global) write_bits_ += bits(op->value->dtype) * times_;
    IRVisitor::visit(op);
  }

  void visit(const BinaryNode* op) override {
    if (op->dtype.is_float() && is_arithmetic(op->op))
      cost.scalar_flops[op->dtype.with_lanes(1).name()] += op->dtype.lanes() * times_;
    IRVisitor::visit(op);
  }

  void visit(const TileOpNode* op) override {
    std::vector<int64_t> elements;
    for (const BufferRegion& r : op->regions) elements.push_back(region_elements(r, op->span));
    int written = op_info(op->op).written_region;
    // T.im2col names its whole input tensor and gathers one patch tile from it: it
    // reads as many elements as it writes.
    if (op->op == TileOpKind::Im2col) elements[0] = elements[written];
    for (size_t i = 0; i < op->regions.size(); ++i) {
      const Buffer& b = op->regions[i].buffer;
      if (b->scope != Scope::Global) continue;
      int64_t amount = bits(b->dtype) * elements[i] * times_;
      bool writes = int(i) == written || (op->op == TileOpKind::Atomic && i == 0);
      bool reads = int(i) != written || op->op == TileOpKind::Atomic;
      if (writes) write_bits_ += amount;
      if (reads) read_bits_ += amount;
    }
    switch (op->op) {
      case TileOpKind::Gemm: {
        // C is M x N; A is M x K, or K x M when transposed.
        bool ta = attr_int(op->attrs, "transpose_A", 0);
        std::vector<Expr> a = op->regions[0].extents(), c = op->regions[2].extents();
        int64_t m = constant(c[c.size() - 2], op->span, "the M extent of T.gemm");
        int64_t n = constant(c.back(), op->span, "the N extent of T.gemm");
        int64_t k = constant(ta ? a[a.size() - 2] : a.back(), op->span, "the K extent of T.gemm");
        cost.gemm_flops[op->regions[0].buffer->dtype.name()] += 2 * m * n * k * times_;
        break;
      }
      case TileOpKind::Reduce:
      case TileOpKind::Cumsum: {
        const Buffer& src = op->regions[0].buffer;
        if (src->dtype.is_float()) cost.scalar_flops[src->dtype.name()] += elements[0] * times_;
        break;
      }
      case TileOpKind::Copy:
      case TileOpKind::Fill:
      case TileOpKind::Atomic:
      case TileOpKind::Transpose:
      case TileOpKind::Im2col:
      case TileOpKind::Print:
      case TileOpKind::DeviceAssert:
        break;
    }
    for (const Expr& a : op->args) visit(a);
  }

  void finish() {
    cost.global_read_bytes = (read_bits_ + 7) / 8;
    cost.global_write_bytes = (write_bits_ + 7) / 8;
  }

 private:
  int64_t times_ = 1;  // how often the statement being visited runs, over all blocks
  int64_t read_bits_ = 0, write_bits_ = 0;

  static int64_t bits(DataType t) { return int64_t(t.bits()) * t.lanes(); }

  static int64_t constant(const Expr& e, const SourceSpan& span, const std::string& what) {
    if (auto v = as_const_int(simplify(e))) return *v;
    throw_user_error(span, str_cat("cannot count the cost of this kernel: ", what, " is ", to_string(e),
                                   ", not a compile-time constant; analyze the kernel at constant sizes"));
  }

  static int64_t region_elements(const BufferRegion& r, const SourceSpan& span) {
    int64_t n = 1;
    for (const Expr& e : r.extents())
      n *= constant(e, span, str_cat("an extent of the region of '", r.buffer->name, "'"));
    return n;
  }
};

}  // namespace

KernelCost kernel_cost(const PrimFunc& f) {
  CostCounter counter;
  counter.visit(f->body);
  counter.finish();
  return counter.cost;
}

}  // namespace tl
