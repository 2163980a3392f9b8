// Copies from shared tiles to tensor parameters as TMA stores. The planning (which
// copies qualify, their boxes, maps and swizzle) is the pipelines' TMA planning run
// in the store direction (tma_tile_stores in tma_copy.cpp); this pass adds the
// ordering around the stores.
#include "transform/lower_tma_stores.h"

#include <map>
#include <optional>
#include <set>

#include "arith/bounds.h"
#include "ir/device_calls.h"
#include "ir/visitor.h"
#include "ops/extent_util.h"
#include "ops/tile_op.h"
#include "transform/lower_explicit_hopper.h"
#include "transform/lower_fragments.h"
#include "transform/lower_tile_ops.h"
#include "transform/tma_copy.h"

namespace tl {
namespace {

using BufKey = const BufferNode*;

bool is_store_candidate(const TileOpNode* op) {
  return op->op == TileOpKind::Copy && is_shared(op->regions[0].buffer) &&
         op->regions[1].buffer->scope == Scope::Global;
}

// T.atomic_add(C[...], C_shared) of a whole tile with relaxed order, of a dtype the
// tensor form of cp.reduce.async.bulk adds (float32, float16, bfloat16, int32, uint32,
// uint64; the tensor map carries it): a TMA reduce-add.
bool is_reduce_candidate(const TileOpNode* op) {
  if (op->op != TileOpKind::Atomic || op->regions.size() != 2 || attr_string(op->attrs, "kind") != "add" ||
      attr_int(op->attrs, "memory_order", 0) != 0)
    return false;
  const Buffer &dst = op->regions[0].buffer, &src = op->regions[1].buffer;
  DataType t = dst->dtype;
  bool addable = t == dtype::Float32 || t == dtype::Float16 || t == dtype::BFloat16 || t == dtype::Int32 ||
                 t == dtype::UInt32 || t == dtype::UInt64;
  return addable && is_shared(src) && dst->scope == Scope::Global && src->dtype == t;
}

bool has_store_candidate(const Stmt& s) {
  return any_stmt(s, [](const Stmt& st) {
    auto* op = st.as<TileOpNode>();
    return op && (is_store_candidate(op) || is_reduce_candidate(op));
  });
}

Stmt thread_op(Stmt s) {
  return attr_stmt(kThreadOpAttr, int64_t(1), std::move(s));
}

// The tensor a store or reduce-add candidate writes.
const Buffer& destination(const TileOpNode* op) {
  return op->regions[op->op == TileOpKind::Atomic ? 0 : 1].buffer;
}

// How often `body` names each tensor: its loads, stores and tile-op regions, and the
// TMA maps (of the pipelines' loads) that read through it.
std::map<BufKey, int> tensor_uses(const Stmt& body, const std::vector<Param>& params) {
  struct Count : IRVisitor {
    const std::vector<Param>* params;
    std::map<BufKey, int> uses;
    using IRVisitor::visit;
    void visit_buffer(const Buffer& b) override {
      if (b->scope == Scope::Global) ++uses[b.get()];
    }
    void visit(const CallNode* c) override {
      IRVisitor::visit(c);
      std::optional<int64_t> p = tma_map_param(c);
      if (p && *p >= 0 && size_t(*p) < params->size() && (*params)[size_t(*p)].is_tensor())
        ++uses[(*params)[size_t(*p)].buffer.get()];
    }
  } count;
  count.params = &params;
  count.visit(body);
  return count.uses;
}

class StoreLowerer : public IRMutator {
 public:
  StoreLowerer(std::vector<Param> params, std::map<BufKey, SharedTileLayout> layouts)
      : params_(std::move(params)), layouts_(std::move(layouts)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    Scoped<const KernelLaunchNode*> in_kernel(launch_, op);
    uses_ = tensor_uses(op->body, params_);
    for (const Var& t : op->thread_vars) per_thread_.insert(t.node());
    for (size_t d = 0; d < op->block_vars.size(); ++d) bounds_.bind_range(op->block_vars[d], int_imm(0), op->grid[d]);
    for (size_t d = 0; d < op->thread_vars.size(); ++d) bounds_.bind(op->thread_vars[d], 0, op->threads[d] - 1);
    return IRMutator::visit(op, self);
  }

  // Names bound to a value that depends on the thread index do too.
  Stmt visit(const LetStmtNode* op, const Stmt& self) override {
    if (uses_thread_var(op->value)) per_thread_.insert(op->var.node());
    if (op->var.dtype().is_int()) bounds_.bind(op->var, bounds_.bounds(op->value));
    return IRMutator::visit(op, self);
  }

  Stmt visit(const AttrNode* op, const Stmt& self) override {
    auto [lo, count] = warp_group_range(op);
    if (count == 0) return IRMutator::visit(op, self);
    Scoped<int64_t> in_region(region_lo_, lo);
    // The region's own condition: its threads all reach the region's barrier.
    Scoped<const IfThenElseNode*> region_if(region_if_, op->body.as<IfThenElseNode>());
    return IRMutator::visit(op, self);
  }

  // A copy inside a T.Parallel nest is one thread's element copy, not a tile's.
  //
  // In a loop whose body refills the tile before storing it (the statement that
  // first touches the tile comes before the store, and none after it), the issuing
  // thread need not wait for the store's read right away: it waits, and a barrier
  // holds the others, right before that first statement of the next iteration, and
  // once after the loop. Its warp then goes on while TMA reads the tile.
  Stmt visit(const ForNode* op, const Stmt& self) override {
    if (op->for_kind == ForKind::Parallel) return self;
    bounds_.bind_range(op->var, op->min, op->extent);
    auto* body = op->body.as<SeqNode>();
    if (!launch_ || divergent_ || !body) return IRMutator::visit(op, self);
    const std::vector<Stmt>& stmts = body->seq;
    std::map<size_t, size_t> refill_of;  // index of the first touch -> of the store
    for (size_t i = 0; i < stmts.size(); ++i) {
      auto* c = stmts[i].as<TileOpNode>();
      if (!c || !issue(c) || read_back(c)) continue;
      const Buffer& tile = c->regions[c->op == TileOpKind::Atomic ? 1 : 0].buffer;
      std::vector<size_t> touching;
      for (size_t j = 0; j < stmts.size(); ++j)
        if (references(stmts[j], tile)) touching.push_back(j);
      if (touching.front() < i && touching.back() == i && !refill_of.count(touching.front()))
        refill_of[touching.front()] = i;
    }
    if (refill_of.empty()) return IRMutator::visit(op, self);
    for (const auto& [first, store] : refill_of) deferred_.insert(stmts[store].as<TileOpNode>());
    std::vector<Stmt> out;
    for (size_t j = 0; j < stmts.size(); ++j) {
      if (refill_of.count(j)) {
        out.push_back(wait_for_stores(op->span));
        out.push_back(barrier(BarrierKind::Threads, op->span));
      }
      out.push_back(mutate(stmts[j]));
    }
    Stmt loop = for_loop(op->var, op->min, op->extent, op->for_kind, seq(out), op->annotations, op->span);
    return seq({loop, wait_for_stores(op->span), barrier(BarrierKind::Threads, op->span)});
  }

  // Under a condition on the thread index not every thread would reach the block
  // barrier: such copies keep the element-wise path.
  Stmt visit(const IfThenElseNode* op, const Stmt& self) override {
    if (!launch_ || op == region_if_ || !uses_thread_var(op->cond)) return IRMutator::visit(op, self);
    ++divergent_;
    Stmt s = IRMutator::visit(op, self);
    --divergent_;
    return s;
  }

  // The writers fence their generic-proxy writes of the tile, then a block barrier
  // makes them visible to the issuing thread, which stores, commits and waits until
  // the stores have read the tile (cp.async.bulk.wait_group.read), or, when the
  // kernel touches the tensor elsewhere too, until their writes are done and visible
  // to it (cp.async.bulk.wait_group): a later barrier then publishes them to the
  // threads that read the tensor back (a split-K partner through T.cluster_sync, a
  // second pass over the output). The stores take
  // the tile's address, which plan_barriers counts as a write: a later use of the
  // tile gets a barrier, behind which the issuing thread's wait is done.
  // A reduce-add goes the same way, as the copy of its value tile to its destination.
  Stmt visit(const TileOpNode* op, const Stmt& self) override {
    if (!launch_ || divergent_) return self;
    std::optional<Stmt> stores = issue(op);
    if (!stores) return self;
    std::vector<Stmt> by_issuer{*stores, evaluate(call_extern(dtype::Void, kTmaStoreArriveCall, {}))};
    if (read_back(op))
      by_issuer.push_back(evaluate(call_extern(dtype::Void, device_call_name(kTmaStoreWaitCall, {0, "false"}), {})));
    else if (!deferred_.count(op))
      by_issuer.push_back(evaluate(call_extern(dtype::Void, device_call_name(kTmaStoreWaitCall, {0, "true"}), {})));
    return seq({thread_op(evaluate(call_extern(dtype::Void, "tl::fence_proxy_async", {}), op->span)),
                barrier(BarrierKind::Threads, op->span), by_issuer_only(seq(by_issuer), op->span)});
  }

 private:
  // Whether the kernel names the store's tensor anywhere else: a load (element-wise or
  // TMA), another store or tile op. Its writes must then land before the kernel goes
  // on, where a plain epilogue only needs the tile read.
  bool read_back(const TileOpNode* op) const {
    auto it = uses_.find(destination(op).get());
    return it != uses_.end() && it->second > 1;
  }

  bool uses_thread_var(const Expr& e) const {
    struct Uses : IRVisitor {
      const std::set<const VarNode*>* vars;
      bool found = false;
      using IRVisitor::visit;
      void visit(const VarNode* v) override { found = found || vars->count(v); }
    } uses;
    uses.vars = &per_thread_;
    uses.visit(e);
    return uses.found;
  }

  // The TMA stores (or reduce-adds) of a store candidate, or nullopt. The box must
  // start inside the tensor or past its end, never before it: on the H200 a store
  // whose box starts at a negative coordinate stops the kernel with an illegal
  // instruction (FlashAttention's causal row tiles aligned to the sequence's end,
  // whose first tile starts before row 0), where the loads clip such boxes. Regions
  // that may start below 0 keep the element-wise store and its predicates.
  std::optional<Stmt> issue(const TileOpNode* op) const {
    bool store = is_store_candidate(op);
    if (!store && !is_reduce_candidate(op)) return std::nullopt;
    for (const Range& r : op->regions[store ? 1 : 0].ranges)
      if (!bounds_.bounds(r.min).is_non_negative()) return std::nullopt;
    if (store) return tma_tile_stores(op, launch_, params_, layouts_, false);
    Stmt copy = tile_op(TileOpKind::Copy, {op->regions[1], op->regions[0]}, {}, {}, op->span);
    return tma_tile_stores(copy.as<TileOpNode>(), launch_, params_, layouts_, true);
  }

  // `s` run by the thread that issues the stores: the first of the block, or of the
  // enclosing T.ws region.
  Stmt by_issuer_only(Stmt s, const SourceSpan& span) const {
    return thread_op(if_then_else(eq(thread_rank(launch_), int_imm(region_lo_)), std::move(s), {}, span));
  }

  Stmt wait_for_stores(const SourceSpan& span) const {
    return by_issuer_only(
        evaluate(call_extern(dtype::Void, device_call_name(kTmaStoreWaitCall, {0, "true"}), {}), span), span);
  }

  static bool references(const Stmt& s, const Buffer& b) {
    struct Find : IRVisitor {
      const BufferNode* target;
      bool found = false;
      using IRVisitor::visit;
      void visit_buffer(const Buffer& x) override { found = found || x.get() == target; }
    } f;
    f.target = b.get();
    f.visit(s);
    return f.found;
  }

  std::vector<Param> params_;
  std::map<BufKey, SharedTileLayout> layouts_;
  std::map<BufKey, int> uses_;            // tensor_uses of the kernel's body
  std::set<const TileOpNode*> deferred_;  // stores whose wait goes before the tile's refill
  const KernelLaunchNode* launch_ = nullptr;
  int64_t region_lo_ = 0;  // the first thread of the enclosing T.ws region (0: the whole block)
  int divergent_ = 0;      // conditions on the thread index around the visited statement
  const IfThenElseNode* region_if_ = nullptr;
  std::set<const VarNode*> per_thread_;  // the thread indices and names bound to values using them
  BoundAnalyzer bounds_;                 // block, thread and loop indices, and the names bound around
};

}  // namespace

PrimFunc lower_tma_stores(const PrimFunc& f, LayoutFacts& facts) {
  const Target& target = facts.target();
  if (target.kind != TargetKind::CUDA || !target.has_tma() || !has_store_candidate(f->body)) return f;
  StoreLowerer lower(f->params, facts.shared_tile_layouts(f));
  return f.with_body(lower.mutate(f->body));
}

namespace {

int64_t byte_size(const Buffer& b) {
  auto n = as_const_int(b.num_elements());
  return n ? *n * b->dtype.bytes() : -1;
}

// The shared buffers a statement uses, with their sizes in bytes.
std::map<BufKey, int64_t> shared_used(const Stmt& s) {
  struct Uses : IRVisitor {
    std::map<BufKey, int64_t> found;
    using IRVisitor::visit;
    void visit_buffer(const Buffer& b) override {
      if (is_shared(b)) found[b.get()] = byte_size(b);
    }
  } u;
  u.visit(s);
  return u.found;
}

class StageStores : public IRMutator {
 public:
  explicit StageStores(std::set<BufKey> params) : params_(std::move(params)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    // The kernel's top-level statements, through allocations and lets.
    std::vector<Stmt> top;
    std::function<void(const Stmt&)> flatten = [&](const Stmt& s) {
      if (auto* q = s.as<SeqNode>())
        for (const Stmt& c : q->seq) flatten(c);
      else if (auto* a = s.as<AllocateNode>())
        flatten(a->body);
      else if (auto* l = s.as<LetStmtNode>())
        flatten(l->body);
      else
        top.push_back(s);
    };
    flatten(op->body);
    std::vector<std::map<BufKey, int64_t>> uses;
    for (const Stmt& s : top) uses.push_back(shared_used(s));
    for (size_t i = 0; i < top.size(); ++i) {
      auto* c = top[i].as<TileOpNode>();
      if (!c || !eligible(c)) continue;
      // The biggest shared buffer used only before the copy.
      std::set<BufKey> later;
      for (size_t j = i; j < top.size(); ++j)
        for (const auto& [b, bytes] : uses[j]) later.insert(b);
      int64_t dead = 0;
      for (size_t j = 0; j < i; ++j)
        for (const auto& [b, bytes] : uses[j])
          if (!later.count(b)) dead = std::max(dead, bytes);
      const BufferRegion& dst = c->regions[1];
      const Buffer& src = c->regions[0].buffer;
      Buffer stage = Buffer::make(src->name + "_stage", dst.buffer->dtype, src->shape, Scope::Shared, {}, c->span);
      if (byte_size(stage) < 0 || byte_size(stage) > dead) continue;
      staged_[c] = stage;
    }
    return IRMutator::visit(op, self);
  }

  Stmt visit(const TileOpNode* op, const Stmt& self) override {
    auto it = staged_.find(op);
    if (it == staged_.end()) return self;
    const Buffer& stage = it->second;
    Stmt to_shared =
        tile_op(TileOpKind::Copy, {op->regions[0], BufferRegion::full(stage)}, op->args, op->attrs, op->span);
    Stmt to_global =
        tile_op(TileOpKind::Copy, {BufferRegion::full(stage), op->regions[1]}, op->args, op->attrs, op->span);
    return allocate(stage, seq({to_shared, to_global}), op->span);
  }

 private:
  // A whole 2-D fragment to a 2-D region of a tensor parameter, in 16- or 32-bit.
  bool eligible(const TileOpNode* c) const {
    if (c->op != TileOpKind::Copy || c->regions.size() != 2 || attr_int(c->attrs, "disable_tma", 0)) return false;
    const BufferRegion &src = c->regions[0], &dst = c->regions[1];
    if (src.buffer->scope != Scope::Fragment || src.buffer.ndim() != 2 || !params_.count(dst.buffer.get()))
      return false;
    if (dst.buffer->dtype.bytes() != 2 && dst.buffer->dtype.bytes() != 4) return false;
    for (size_t d = 0; d < 2; ++d) {
      auto lo = as_const_int(src.ranges[d].min), n = as_const_int(src.ranges[d].extent);
      auto full = as_const_int(src.buffer->shape[d]);
      if (!lo || *lo != 0 || !n || !full || *n != *full) return false;
    }
    std::vector<Expr> ext = dst.extents();
    std::vector<int64_t> kept;
    for (const Expr& e : ext) {
      auto v = as_const_int(e);
      if (!v) return false;
      if (*v != 1) kept.push_back(*v);
    }
    return kept == std::vector<int64_t>{*as_const_int(src.buffer->shape[0]), *as_const_int(src.buffer->shape[1])};
  }

  std::set<BufKey> params_;
  std::map<const TileOpNode*, Buffer> staged_;
};

}  // namespace

PrimFunc stage_fragment_stores(const PrimFunc& f, const Target& target) {
  if (target.kind != TargetKind::CUDA || !target.has_tma()) return f;
  std::set<BufKey> params;
  for (const Param& p : f->params)
    if (p.buffer.defined()) params.insert(p.buffer.get());
  return f.with_body(StageStores(std::move(params)).mutate(f->body));
}

}  // namespace tl
