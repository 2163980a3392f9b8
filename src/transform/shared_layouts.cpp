#include "transform/shared_layouts.h"

#include <map>
#include <set>

#include "ir/visitor.h"
#include "layout/layout.h"

namespace tl {
namespace {

using BufKey = const BufferNode*;

bool is_marker(const Expr& e) {
  const std::string* n = extern_name(e);
  return n && *n == kSharedLayoutMarker;
}

// The marked tiles with their (row_shift, row_mask), and the gemms' operands.
struct Collect : IRVisitor {
  std::map<BufKey, std::pair<Buffer, std::pair<int64_t, int64_t>>> marks;
  std::set<BufKey> gemm_operands;
  using IRVisitor::visit;

  void visit(const EvaluateNode* op) override {
    if (!is_marker(op->value)) return IRVisitor::visit(op);
    auto* c = op->value.as<CallNode>();
    TL_ICHECK(c->args.size() == 4, "tl::shared_layout takes a tile address, a row shift and a row mask");
    auto* addr = c->args[1].as<CallNode>();
    auto* load = addr && addr->op == Intrinsic::AddressOf ? addr->args[0].as<BufferLoadNode>() : nullptr;
    auto shift = as_const_int(c->args[2]), mask = as_const_int(c->args[3]);
    TL_ICHECK(load && shift && mask, "malformed tl::shared_layout marker");
    marks[load->buffer.get()] = {load->buffer, {*shift, *mask}};
  }

  void visit(const TileOpNode* op) override {
    if (op->op == TileOpKind::Gemm)
      for (int i : {0, 1}) gemm_operands.insert(op->regions[i].buffer.get());
    IRVisitor::visit(op);
  }
};

class Apply : public IRMutator {
 public:
  explicit Apply(std::map<BufKey, Buffer> laid) : laid_(std::move(laid)) {}
  using IRMutator::mutate;

  Buffer mutate_buffer(const Buffer& b) override {
    auto it = laid_.find(b.get());
    return it == laid_.end() ? b : it->second;
  }

 protected:
  using IRMutator::visit;
  Stmt visit(const EvaluateNode* op, const Stmt& self) override {
    return is_marker(op->value) ? seq({}) : IRMutator::visit(op, self);
  }

 private:
  std::map<BufKey, Buffer> laid_;
};

}  // namespace

PrimFunc apply_shared_layouts(const PrimFunc& f, const Target& target) {
  Collect c;
  c.visit(f->body);
  if (c.marks.empty()) return f;
  std::map<BufKey, Buffer> laid;
  for (const auto& [k, mark] : c.marks) {
    const auto& [b, params] = mark;
    if (target.kind != TargetKind::CUDA || c.gemm_operands.count(k) || b->layout || b.ndim() < 2) continue;
    auto cols = as_const_int(b->shape.back());
    int64_t bytes = b->dtype.lanes() == 1 && b->dtype.bits() % 8 == 0 ? b->dtype.bytes() : 0;
    auto layout = cols && bytes ? Layout::xor_chunks(*cols, bytes, params.first, params.second) : nullptr;
    if (layout) laid[k] = with_layout(b, layout);
  }
  return f.with_body(Apply(std::move(laid)).mutate(f->body));
}

}  // namespace tl
