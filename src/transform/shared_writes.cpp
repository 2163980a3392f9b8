// Classifies the writes of shared buffers by proxy: see shared_writes.h.
#include "transform/shared_writes.h"

#include "ir/visitor.h"
#include "ops/tile_op.h"
#include "transform/lower_explicit_hopper.h"

namespace tl {
namespace {

class Writes : public IRVisitor {
 public:
  SharedWrites out;
  using IRVisitor::visit;

  // Any use the overrides below do not recognise as a read.
  void visit_buffer(const Buffer& b) override { out.generic.insert(b.get()); }

  void visit(const AllocateNode* op) override { visit(op->body); }

  void visit(const BufferLoadNode* op) override {
    for (const Expr& i : op->indices) visit(i);
  }

  void visit(const CallNode* op) override {
    if (op->op == Intrinsic::AddressOf) {
      AddressAccess access = address_access(op);
      auto* l = op->args[0].as<BufferLoadNode>();
      if (!l) return IRVisitor::visit(op);
      if (access != AddressAccess::Read && access != AddressAccess::ReadInFlight) out.generic.insert(l->buffer.get());
      return visit(l);  // its indices
    }
    // The shared side of a TMA call: written by the async proxy (a load) or read by
    // it (a store, a reduce-add).
    bool load = false;
    Buffer tile = tma_call_tile(op, &load);
    if (!tile.defined()) return IRVisitor::visit(op);
    if (load) out.tma.insert(tile.get());
    for (const Expr& a : op->args) {
      auto* addr = a.as<CallNode>();
      auto* l = addr && addr->op == Intrinsic::AddressOf ? addr->args[0].as<BufferLoadNode>() : nullptr;
      if (l && l->buffer.same_as(tile))
        visit(l);  // its indices
      else
        visit(a);
    }
  }

  void visit(const TileOpNode* op) override {
    const int written = op_info(op->op).written_region;
    for (size_t i = 0; i < op->regions.size(); ++i) {
      const BufferRegion& r = op->regions[i];
      if (int(i) == written) out.generic.insert(r.buffer.get());
      for (const Range& rg : r.ranges) visit(rg.min), visit(rg.extent);
    }
    for (const Expr& a : op->args) visit(a);
    for (const auto& [k, a] : op->attrs)
      if (auto* e = std::get_if<Expr>(&a)) visit(*e);
  }
};

}  // namespace

SharedWrites shared_writes(const Stmt& s) {
  Writes w;
  w.visit(s);
  return w.out;
}

}  // namespace tl
