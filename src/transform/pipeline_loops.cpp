// T.Pipelined loops as multi-stage software pipelines (docs/design/cuda_lowering.md):
// the schedule of units and steps, versions of the staged tiles, and the producer
// copies as cp.async (waits counting commit groups) or, on sm_90, TMA (waits on an
// mbarrier per version, docs/design/hopper.md). This file walks the kernel and hands
// each pipelined loop to the phases of src/transform/pipeline_loops/ (plan.h lists
// them): schedule, staging, the warp-specialization choice, emission.
#include "transform/pipeline_loops.h"

#include "ir/attrs.h"
#include "ir/visitor.h"
#include "support/logging.h"
#include "transform/lower_fragments.h"
#include "transform/pipeline_loops/plan.h"

namespace tl {
namespace {

using pipeliner::BufKey;

// Buffers used outside of any pipelined loop's body.
std::set<BufKey> outside_pipelined(const Stmt& s) {
  struct Walk : IRVisitor {
    std::set<BufKey> out;
    int depth = 0;
    using IRVisitor::visit;
    void visit(const ForNode* op) override {
      bool p = op->annotations.count("num_stages");
      depth += p;
      IRVisitor::visit(op);
      depth -= p;
    }
    void visit(const BufferLoadNode* op) override {
      if (!depth) out.insert(op->buffer.get());
      IRVisitor::visit(op);
    }
    void visit(const BufferStoreNode* op) override {
      if (!depth) out.insert(op->buffer.get());
      IRVisitor::visit(op);
    }
    void visit(const TileOpNode* op) override {
      if (!depth)
        for (const BufferRegion& r : op->regions) out.insert(r.buffer.get());
      IRVisitor::visit(op);
    }
  } w;
  w.visit(s);
  return w.out;
}

// Register buffers (T.alloc_local, T.alloc_var, T.alloc_fragment) allocated in the
// body of a T.Pipelined loop, as a macro called in the body writes them (TileLang
// allocates them for the whole kernel): the schedule needs the body as a flat list of
// statements, so they are allocated around the loop instead. Each thread's storage is
// its own either way, and every use stays in the body, in its statement; a value
// carried from one iteration into the next was undefined before and is not relied
// on. A loop is changed only when it then gets a schedule (otherwise the loop and
// its allocations stay where they were).
class HoistRegisterAllocations : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const ForNode* op, const Stmt& self) override {
    Stmt s = IRMutator::visit(op, self);
    auto* loop = s.as<ForNode>();
    if (!loop->annotations.count("num_stages") && !loop->annotations.count("order") &&
        !loop->annotations.count("stage"))
      return s;
    std::vector<Buffer> hoisted;
    Stmt body = lift(loop->body, hoisted);
    if (hoisted.empty()) return s;
    Stmt moved = for_loop(loop->var, loop->min, loop->extent, loop->for_kind, body, loop->annotations, s.span());
    if (!pipeliner::schedule_loop(moved.as<ForNode>(), {})) return s;
    for (auto it = hoisted.rbegin(); it != hoisted.rend(); ++it) moved = allocate(*it, moved, s.span());
    return moved;
  }

 private:
  // `s` without the register allocations on the path the schedule flattens
  // (sequences, let-bindings, allocations), collected into `out`.
  static Stmt lift(const Stmt& s, std::vector<Buffer>& out) {
    if (auto* q = s.as<SeqNode>()) {
      std::vector<Stmt> parts;
      for (const Stmt& c : q->seq) parts.push_back(lift(c, out));
      return seq(parts);
    }
    if (auto* l = s.as<LetStmtNode>()) return let_stmt(l->var, l->value, lift(l->body, out), s.span());
    if (auto* a = s.as<AllocateNode>()) {
      Scope sc = a->buffer->scope;
      bool reg = sc == Scope::Local || sc == Scope::LocalVar || sc == Scope::Fragment;
      if (!reg || !as_const_int(a->buffer.num_elements())) return s;
      out.push_back(a->buffer);
      return lift(a->body, out);
    }
    return s;
  }
};

// Walks the kernels, keeping what the phases need to know about the place of each
// pipelined loop (its kernel, the names bound around it, a persistent loop around a
// warp-specialized one), and replaces the allocations of the tiles they staged.
class Pipeliner : public IRMutator {
 public:
  Pipeliner(bool cp_async, std::set<BufKey> wgmma_acc, std::set<BufKey> outside_uses)
      : cp_async_(cp_async), wgmma_acc_(std::move(wgmma_acc)), outside_uses_(std::move(outside_uses)) {}
  using IRMutator::mutate;

  // TMA for eligible producers: the kernel's parameters and the layouts
  // lower_fragments will give the shared gemm operands.
  void enable_tma(std::vector<Param> params, std::map<BufKey, SharedTileLayout> layouts) {
    tma_ = true;
    params_ = std::move(params);
    layouts_ = std::move(layouts);
  }
  // Producer/consumer warp specialization of TMA pipelines (kWsPipelineAttr).
  void enable_warp_specialization(bool multicast) {
    ws_ = true;
    multicast_ = multicast;
  }

 protected:
  using IRMutator::visit;

  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    Scoped<const KernelLaunchNode*> in_kernel(launch_, op);
    auto [loop, outer] = ws_ ? pipeliner::ws_candidate(op) : std::pair<const ForNode*, const ForNode*>{};
    Scoped<const ForNode*> ws_loop(ws_loop_, loop), ws_outer(ws_outer_, outer);
    return IRMutator::visit(op, self);
  }

  // Between a persistent loop and its warp-specialized pipeline: the conditions the
  // producer re-evaluates for each round (as the consumers took them).
  Stmt visit(const IfThenElseNode* op, const Stmt& self) override {
    if (!in_ws_outer_) return IRMutator::visit(op, self);
    ws_path_.push_back({op->cond, Var(), Expr()});
    Stmt then_case = mutate(op->then_case);
    ws_path_.back().cond = logical_not(op->cond);
    Stmt else_case = op->else_case.defined() ? mutate(op->else_case) : Stmt();
    ws_path_.pop_back();
    if (then_case.same_as(op->then_case) && (!op->else_case.defined() || else_case.same_as(op->else_case))) return self;
    return if_then_else(op->cond, then_case, else_case, op->span);
  }

  // Names bound around a pipelined loop (`loop_range = T.min(...)`): a producer
  // warpgroup takes their values, since it does not run the statements binding them.
  Stmt visit(const LetStmtNode* op, const Stmt& self) override {
    outer_lets_[op->var.node()] = substitute(op->value, outer_lets_);
    if (in_ws_outer_) ws_path_.push_back({Expr(), op->var, op->value});
    Stmt s = IRMutator::visit(op, self);
    if (in_ws_outer_) ws_path_.pop_back();
    outer_lets_.erase(op->var.node());
    return s;
  }

  Stmt visit(const AllocateNode* op, const Stmt& self) override {
    Stmt body = mutate(op->body);
    if (auto it = staged_.find(op->buffer.get()); it != staged_.end())
      return allocate(it->second.buffer, body, op->span);
    return body.same_as(op->body) ? self : allocate(op->buffer, body, op->span);
  }

  Stmt visit(const ForNode* op, const Stmt& self) override {
    if (op == ws_outer_) {
      // The consumers' pipeline iteration counter starts at 0 before the rounds;
      // each round's pipeline reads it and adds its iterations.
      Scoped<bool> inside(in_ws_outer_, true);
      Stmt s = IRMutator::visit(op, self);
      if (!ws_rounds_) return s;
      pipeliner::RoundsPipeline r = std::move(*ws_rounds_);
      ws_rounds_.reset();
      s = allocate(r.count, seq({buffer_store(r.count, int_imm(0), {int_imm(0)}), s}), op->span);
      return pipeliner::ws_region(r.init, r.producer, s, r.groups, r.consumers);
    }
    std::optional<pipeliner::Schedule> schedule = pipeliner::schedule_loop(op, wgmma_acc_);
    if (!schedule) return IRMutator::visit(op, self);
    pipeliner::LoopContext ctx = context(op);
    std::optional<pipeliner::Staging> staging = pipeliner::stage_tiles(*schedule, outside_uses_, ctx);
    if (!staging) return IRMutator::visit(op, self);
    pipeliner::check_dependences(*schedule, staging->staged);
    pipeliner::WsPlan ws = pipeliner::plan_warp_specialization(op, *schedule, *staging, ctx);
    for (const auto& kv : staging->staged) staged_.insert(kv);
    pipeliner::EmittedLoop emitted =
        pipeliner::emit_pipeline(op, *schedule, *staging, ws, ctx, [this](const Stmt& s) { return mutate(s); });
    // A pipeline inside a persistent loop: its mark goes around that loop (above).
    if (emitted.rounds) ws_rounds_ = std::move(emitted.rounds);
    return emitted.stmt;
  }

 private:
  pipeliner::LoopContext context(const ForNode* op) const {
    pipeliner::LoopContext ctx;
    ctx.launch = launch_;
    ctx.cp_async = cp_async_;
    ctx.wgmma_acc = &wgmma_acc_;
    ctx.outer_lets = &outer_lets_;
    if (tma_) {
      ctx.tma_params = &params_;
      ctx.tma_layouts = &layouts_;
    }
    ctx.ws_candidate = op == ws_loop_;
    ctx.ws_outer = ws_outer_;
    ctx.ws_path = &ws_path_;
    ctx.multicast = multicast_;
    return ctx;
  }

  bool cp_async_;
  std::set<BufKey> wgmma_acc_;
  std::set<BufKey> outside_uses_;
  std::map<BufKey, pipeliner::Staged> staged_;  // every staged tile so far, for its allocation
  bool tma_ = false;
  std::vector<Param> params_;
  std::map<BufKey, SharedTileLayout> layouts_;
  const KernelLaunchNode* launch_ = nullptr;
  bool ws_ = false;
  bool multicast_ = true;
  const ForNode* ws_loop_ = nullptr;  // of the kernel being visited (ws_candidate)
  // A persistent loop around ws_loop_ (T.Persistent), whose rounds the producer runs
  // too; while inside it, the conditions and bindings that enclose the statement
  // visited (those of the pipeline, when it is scheduled); the parts of its pipeline,
  // which the mark around the persistent loop takes, with the consumers' count of
  // pipeline iterations over the rounds (a local variable that loop allocates).
  const ForNode* ws_outer_ = nullptr;
  bool in_ws_outer_ = false;
  std::vector<pipeliner::PathStep> ws_path_;
  std::optional<pipeliner::RoundsPipeline> ws_rounds_;
  std::map<const VarNode*, Expr> outer_lets_;
};

// Bytes of shared memory the allocations in `s` ask for, before plan_shared_memory
// lets buffers whose lives do not overlap share bytes (so at least what it places).
int64_t shared_bytes(const Stmt& s) {
  struct Sum : IRVisitor {
    int64_t bytes = 0;
    using IRVisitor::visit;
    void visit(const AllocateNode* a) override {
      const Buffer& b = a->buffer;
      if (b->scope == Scope::Shared || b->scope == Scope::SharedDyn)
        if (auto n = as_const_int(b.num_elements())) bytes += (*n * b->dtype.bits() * b->dtype.lanes() + 7) / 8;
      IRVisitor::visit(a);
    }
  } sum;
  sum.visit(s);
  return sum.bytes;
}

// Whether `s` contains a warp-specialized pipeline.
bool warp_specialized(const Stmt& s) {
  return any_stmt(s, [](const Stmt& st) {
    auto* a = st.as<AttrNode>();
    return a && a->key == kWsPipelineAttr;
  });
}

// T.Pipelined(..., num_stages=1) where a producer warpgroup may take the copies over
// (docs/design/hopper.md, "One stage asked"): taken literally, the loop loads each
// tile with the block's own threads and computes only once it has landed. It runs as
// a two-stage warp-specialized pipeline instead when (1) its kernel's shared memory
// already allows a single block per SM, so the producer warpgroup and the tiles'
// second versions cost no occupancy, (2) with the second versions the kernel still
// fits a block's shared memory, and (3) the pipeline it becomes is warp-specialized
// (every copy a TMA copy the producer can issue alone). Loops with order= / stage=
// and num_stages=0 stay as written, and so does every loop when warp specialization
// is off (tl.disable_warp_specialized).
class PromoteSingleStage : public IRMutator {
 public:
  PromoteSingleStage(std::function<Stmt(const Stmt&)> lower, const Target& target)
      : lower_(std::move(lower)), target_(target) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    auto [loop, outer] = pipeliner::ws_candidate(op);
    if (!loop || loop->annotations.count("order") || loop->annotations.count("stage")) return self;
    auto it = loop->annotations.find("num_stages");
    auto* stages = it == loop->annotations.end() ? nullptr : std::get_if<int64_t>(&it->second);
    if (!stages || *stages != 1) return self;
    Attrs ann = loop->annotations;
    ann["num_stages"] = int64_t(2);
    struct Replace : IRMutator {
      const ForNode* loop;
      Attrs ann;
      using IRMutator::visit;
      Stmt visit(const ForNode* f, const Stmt& s) override {
        if (f != loop) return IRMutator::visit(f, s);
        return for_loop(f->var, f->min, f->extent, f->for_kind, f->body, ann, s.span());
      }
    } replace;
    replace.loop = loop;
    replace.ann = std::move(ann);
    Stmt promoted = replace.mutate(self);
    const int64_t per_sm = target_.max_shared_memory_per_sm(), per_block = target_.max_shared_memory_per_block();
    auto blocks = [&](int64_t bytes) { return per_sm / (bytes + kSharedReservedPerBlock); };
    Stmt literal = lower_(self), trial = lower_(promoted);
    int64_t before = shared_bytes(literal), after = shared_bytes(trial);
    if (!warp_specialized(trial) || blocks(before) != 1 || after > per_block) return self;
    log(LogLevel::Debug, str_cat(loop->span.defined() ? loop->span.str() + ": " : "",
                                 "T.Pipelined num_stages=1 runs as a two-stage warp-specialized pipeline (", before,
                                 " -> ", after, " bytes of shared memory, one block per SM either way)"));
    return promoted;
  }

 private:
  // What the CUDA runtime keeps of each resident block's shared memory.
  static constexpr int64_t kSharedReservedPerBlock = 1024;
  std::function<Stmt(const Stmt&)> lower_;
  const Target& target_;
};

}  // namespace

PrimFunc pipeline_loops(const PrimFunc& f, LayoutFacts& facts, const PassConfig& configs) {
  const Target& target = facts.target();
  const bool allow_tma = configs.tma_lower;
  const bool ws = allow_tma && configs.warp_specialized && target.has_tma() && target.has_wgmma();
  const std::set<BufKey> wgmma_acc = facts.wgmma_accumulators(f), outside = outside_pipelined(f->body);
  std::map<BufKey, SharedTileLayout> layouts;
  if (allow_tma && target.has_tma()) layouts = facts.shared_tile_layouts(f);
  auto lower = [&](const Stmt& body) {
    Pipeliner p(target.sm_version() >= 80, wgmma_acc, outside);
    if (allow_tma && target.has_tma()) p.enable_tma(f->params, layouts);
    if (ws) p.enable_warp_specialization(configs.tma_multicast);
    HoistRegisterAllocations hoist;
    return p.mutate(hoist.mutate(body));
  };
  Stmt body = ws ? PromoteSingleStage(lower, target).mutate(f->body) : f->body;
  return f.with_body(lower(body));
}

}  // namespace tl
