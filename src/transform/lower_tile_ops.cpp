// The op table decides; this pass only walks the tree and asks it.
#include "transform/lower_tile_ops.h"

#include "ir/visitor.h"
#include "ops/extent_util.h"
#include "ops/tile_op.h"
#include "transform/lower_explicit_hopper.h"

namespace tl {

// src/ops/gemm.cpp: T.gemm on tensor cores, or an undefined Stmt when not eligible.
Stmt lower_gemm_mma(const TileOpNode* op, const Target& target, int64_t threads);

bool touches_registers(const TileOpNode* op) {
  for (const BufferRegion& r : op->regions)
    if (thread_private(r.buffer)) return true;
  return false;
}

bool writes_only_registers(const Stmt& body) {
  struct Writes : IRVisitor {
    bool any = false, all_private = true;
    using IRVisitor::visit;
    void visit(const BufferStoreNode* s) override {
      any = true;
      all_private = all_private && thread_private(s->buffer);
      IRVisitor::visit(s);
    }
    // Element-wise atomics and copies in the loop; an op without regions
    // (T.device_assert, T.print of a value) writes nothing.
    void visit(const TileOpNode* op) override {
      for (const BufferRegion& r : op->regions) all_private = all_private && thread_private(r.buffer);
      any = any || !op->regions.empty();
      IRVisitor::visit(op);
    }
  } writes;
  writes.visit(body);
  return writes.any && writes.all_private;
}

Stmt per_thread_nest(const Stmt& loop) {
  auto* nest = loop.as<ForNode>();
  if (!nest || nest->for_kind != ForKind::Parallel || nest->annotations.count(kSpreadOverThreads) ||
      !writes_only_registers(nest->body))
    return {};
  struct Serial : IRMutator {
    using IRMutator::mutate;
    using IRMutator::visit;
    Stmt visit(const ForNode* op, const Stmt& self) override {
      Stmt body = mutate(op->body);
      if (op->for_kind != ForKind::Parallel && body.same_as(op->body)) return self;
      ForKind kind = op->for_kind == ForKind::Parallel ? ForKind::Serial : op->for_kind;
      return for_loop(op->var, op->min, op->extent, kind, body, op->annotations, op->span);
    }
  };
  return Serial().mutate(loop);
}

Stmt parallel_loops(const Stmt& s) {
  auto* f = s.as<ForNode>();
  if (!f || f->for_kind != ForKind::Serial) return s;
  return for_loop(f->var, f->min, f->extent, ForKind::Parallel, parallel_loops(f->body), f->annotations, f->span);
}

namespace {

class TileOpLowerer : public IRMutator {
 public:
  explicit TileOpLowerer(const Target& t) : target_(t) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const TileOpNode* op, const Stmt& self) override {
    // Inside a T.Parallel nest an op belongs to its iteration (an atomic on a run of
    // elements, `T.atomic_addx4(B[i, 4 * j], S[i, 4 * j])`): the thread that runs the
    // iteration does it whole. As a block op it would run on one thread of the block,
    // and only for the iterations that thread was dealt.
    // T.atomic_addx2 / x4 (`per_thread`) are calls each thread makes, as in TileLang.
    const bool cuda = target_.kind == TargetKind::CUDA;
    const bool own = in_parallel_ || (op->op == TileOpKind::Atomic && attr_int(op->attrs, "per_thread", 0));
    if (own && op->op == TileOpKind::Atomic && cuda)
      if (Stmt run = lower_atomic_run(op); run.defined()) return run;
    if (own && op->op != TileOpKind::Gemm) return op_info(op->op).lower_serial(op);
    if (op->op == TileOpKind::Gemm && !target_.runs_blocks_serially()) {
      if (Stmt mma = lower_gemm_mma(op, target_, threads_); mma.defined()) return block_op(mma);
      return block_op(lower_gemm_loops(op));
    }
    // Per-thread ops: every thread checks its own assertion and prints its own value.
    if (op->op == TileOpKind::DeviceAssert || (op->op == TileOpKind::Print && op->regions.empty()))
      return op_info(op->op).lower_serial(op);
    // A fill or copy that touches a thread's own registers (T.alloc_local, T.alloc_var)
    // runs on every thread, each on its own copy, as in TileLang.
    if ((op->op == TileOpKind::Fill || op->op == TileOpKind::Copy) && touches_registers(op))
      return op_info(op->op).lower_serial(op);
    // A reduction left to memory (a fragment reduced over another dim than its last,
    // demoted to shared memory): each destination element is folded by one thread, the
    // elements spread over the block, instead of the whole op on its first thread.
    if (op->op == TileOpKind::Reduce && !target_.runs_blocks_serially() && !touches_registers(op))
      return block_op(parallel_loops(op_info(op->op).lower_serial(op)));
    // An atomic between memories (`T.atomic_add(C[...], C_shared)`): its elements
    // spread over the block as a T.Parallel nest would be (and go in vectors where
    // lower_fragments proves runs), not all on one thread.
    if (op->op == TileOpKind::Atomic && !target_.runs_blocks_serially() && !touches_registers(op)) {
      if (cuda)
        if (Stmt run = lower_atomic_run(op); run.defined()) return block_op(run);
      return block_op(parallel_loops(op_info(op->op).lower_serial(op)));
    }
    return block_op(op_info(op->op).lower_serial(op));
  }

  // A T.ws region: its tensor-core gemms are spread over its threads.
  Stmt visit(const AttrNode* op, const Stmt& self) override {
    auto [lo, count] = warp_group_range(op);
    if (count == 0) return IRMutator::visit(op, self);
    Scoped<int64_t> threads(threads_, count);
    return IRMutator::visit(op, self);
  }

  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    Scoped<int64_t> threads(threads_, op->thread_count());
    return IRMutator::visit(op, self);
  }

  // A T.Parallel nest is a block-wide operation too (its iterations are spread
  // over the block's threads); inner loops stay part of the outer one. A nest that
  // writes only a thread's own registers (T.alloc_local, T.alloc_var) runs whole on
  // every thread instead, as in TileLang: spread, each thread would fill only its
  // share of its own copy.
  Stmt visit(const ForNode* op, const Stmt& self) override {
    if (op->for_kind != ForKind::Parallel || in_parallel_) return IRMutator::visit(op, self);
    if (Stmt serial = per_thread_nest(self); serial.defined()) return mutate(serial);
    in_parallel_ = true;
    Stmt s = IRMutator::visit(op, self);
    in_parallel_ = false;
    return block_op(s);
  }

 private:
  // Marks a statement that the block executes once, as a whole: on targets that
  // run threads one by one it runs on one thread between two barriers.
  static Stmt block_op(Stmt s) { return attr_stmt(kBlockOpAttr, int64_t(1), std::move(s)); }

  const Target& target_;
  bool in_parallel_ = false;
  int64_t threads_ = 1;  // of the enclosing T.Kernel
};

}  // namespace

PrimFunc lower_tile_ops(const PrimFunc& f, const Target& target) {
  return f.with_body(TileOpLowerer(target).mutate(f->body));
}

}  // namespace tl
