// stage_reduction_sources.h.
#include "transform/stage_reduction_sources.h"

#include <set>

#include "ir/visitor.h"
#include "ops/extent_util.h"

namespace tl {
namespace {

// The most elements of a staged source a thread holds (its registers).
constexpr int64_t kMaxStagedPerThread = 64;

// The fragments whose layout another fragment's ties: those a T.Parallel nest or a
// tile op (other than a copy or a fill) uses together with another fragment. A staged
// source's layout makes its destination's rows; a destination tied elsewhere (a row
// vector FlashAttention subtracts from a gemm accumulator) could then leave the
// staged fragment in shared memory, which only adds a copy and its bytes.
class TiedFragments : public IRVisitor {
 public:
  std::set<const BufferNode*> tied;
  using IRVisitor::visit;

 protected:
  void visit(const ForNode* op) override {
    if (op->for_kind != ForKind::Parallel || in_parallel_) return IRVisitor::visit(op);
    std::set<const BufferNode*> used = fragments_in(op->body);
    if (used.size() > 1) tied.insert(used.begin(), used.end());
    Scoped<bool> inside(in_parallel_, true);
    IRVisitor::visit(op);
  }
  void visit(const TileOpNode* op) override {
    if (op->op != TileOpKind::Copy && op->op != TileOpKind::Fill) {
      std::set<const BufferNode*> used;
      for (const BufferRegion& r : op->regions)
        if (r.buffer->scope == Scope::Fragment) used.insert(r.buffer.get());
      if (used.size() > 1) tied.insert(used.begin(), used.end());
    }
    IRVisitor::visit(op);
  }

 private:
  // The fragments `s` loads or stores.
  static std::set<const BufferNode*> fragments_in(const Stmt& s) {
    struct Uses : IRVisitor {
      std::set<const BufferNode*> found;
      using IRVisitor::visit;
      void visit(const BufferLoadNode* op) override {
        if (op->buffer->scope == Scope::Fragment) found.insert(op->buffer.get());
        IRVisitor::visit(op);
      }
      void visit(const BufferStoreNode* op) override {
        if (op->buffer->scope == Scope::Fragment) found.insert(op->buffer.get());
        IRVisitor::visit(op);
      }
    } uses;
    uses.visit(s);
    return uses.found;
  }
  bool in_parallel_ = false;
};

class StageSources : public IRMutator {
 protected:
  using IRMutator::visit;

  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    Scoped<int64_t> threads(threads_, op->thread_count());
    TiedFragments ties;
    ties.visit(op->body);
    Scoped<std::set<const BufferNode*>> tied(tied_, std::move(ties.tied));
    return IRMutator::visit(op, self);
  }

  Stmt visit(const TileOpNode* op, const Stmt& self) override {
    if (!eligible(op)) return self;
    const BufferRegion& src = op->regions[0];
    Buffer regs =
        Buffer::make(src.buffer->name + "_regs", src.buffer->dtype, src.buffer->shape, Scope::Fragment, {}, op->span);
    Stmt copy = tile_op(TileOpKind::Copy, {src, BufferRegion::full(regs)}, {}, {}, op->span);
    Stmt reduce =
        tile_op(TileOpKind::Reduce, {BufferRegion::full(regs), op->regions[1]}, op->args, op->attrs, op->span);
    return allocate(regs, seq({copy, reduce}), op->span);
  }

 private:
  bool eligible(const TileOpNode* op) const {
    if (op->op != TileOpKind::Reduce || op->regions.size() != 2 || attr_int(op->attrs, "finalize", 0) ||
        attr_int(op->attrs, "dim", -1) != 1 || threads_ <= 0)
      return false;
    const std::string kind = attr_string(op->attrs, "kind");
    if (kind != "sum" && kind != "abssum" && kind != "max" && kind != "min" && kind != "absmax") return false;
    const BufferRegion &src = op->regions[0], &dst = op->regions[1];
    const Scope s = src.buffer->scope;
    if ((s != Scope::Shared && s != Scope::SharedDyn && s != Scope::Global) || dst.buffer->scope != Scope::Fragment)
      return false;
    if (src.buffer.ndim() != 2 || dst.buffer.ndim() != 1 || !covers_whole(src) || !covers_whole(dst)) return false;
    if (!src.buffer->strides.empty() || src.buffer->dtype.lanes() != 1) return false;
    auto m = as_const_int(src.buffer->shape[0]), n = as_const_int(src.buffer->shape[1]);
    auto rows = as_const_int(dst.buffer->shape[0]);
    if (!m || !n || !rows || *rows != *m || tied_.count(dst.buffer.get())) return false;
    // Rows of a power of two (at least 2) and at least an element per thread: the shapes
    // the register layouts split over the threads without leaving the fragment in shared
    // memory, where staging would only add a copy.
    if (*n < 2 || (*n & (*n - 1)) != 0 || *m * *n < threads_) return false;
    return (*m * *n + threads_ - 1) / threads_ <= kMaxStagedPerThread;
  }

  int64_t threads_ = 0;
  std::set<const BufferNode*> tied_;
};

}  // namespace

PrimFunc stage_reduction_sources(const PrimFunc& f, const Target& target) {
  if (target.kind != TargetKind::CUDA) return f;
  return f.with_body(StageSources().mutate(f->body));
}

}  // namespace tl
