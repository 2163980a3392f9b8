// stage_reduction_sources.h.
#include "transform/stage_reduction_sources.h"

#include "ir/visitor.h"
#include "ops/extent_util.h"

namespace tl {
namespace {

// The most elements of a staged source a thread holds (its registers).
constexpr int64_t kMaxStagedPerThread = 64;

class StageSources : public IRMutator {
 protected:
  using IRMutator::visit;

  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    Scoped<int64_t> threads(threads_, op->thread_count());
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
  static bool whole(const BufferRegion& r) {
    for (size_t d = 0; d < r.ranges.size(); ++d) {
      auto lo = as_const_int(r.ranges[d].min), n = as_const_int(r.ranges[d].extent);
      auto full = as_const_int(r.buffer->shape[d]);
      if (!lo || *lo != 0 || !n || !full || *n != *full) return false;
    }
    return true;
  }

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
    if (src.buffer.ndim() != 2 || dst.buffer.ndim() != 1 || !whole(src) || !whole(dst)) return false;
    if (!src.buffer->strides.empty() || src.buffer->dtype.lanes() != 1) return false;
    auto m = as_const_int(src.buffer->shape[0]), n = as_const_int(src.buffer->shape[1]);
    auto rows = as_const_int(dst.buffer->shape[0]);
    if (!m || !n || !rows || *rows != *m) return false;
    // Rows of a power of two (at least 2) and at least an element per thread: the shapes
    // the register layouts split over the threads without leaving the fragment in shared
    // memory, where staging would only add a copy.
    if (*n < 2 || (*n & (*n - 1)) != 0 || *m * *n < threads_) return false;
    return (*m * *n + threads_ - 1) / threads_ <= kMaxStagedPerThread;
  }

  int64_t threads_ = 0;
};

}  // namespace

PrimFunc stage_reduction_sources(const PrimFunc& f, const Target& target) {
  if (target.kind != TargetKind::CUDA) return f;
  return f.with_body(StageSources().mutate(f->body));
}

}  // namespace tl
