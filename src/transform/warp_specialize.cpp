// Producer/consumer warp specialization (docs/design/hopper.md): pipeline_loops
// marked a pipeline whose copies one thread can issue on its own; this pass, the
// last of the CUDA lowering, gives the kernel an extra warpgroup for them.
//
//   Allocate(full/empty mbarriers)
//     if (rank == 0) { init the mbarriers; fence }      all T + 128 threads
//     __syncthreads()
//     T.ws [0, T):       setmaxnreg.inc; the kernel body, the pipeline's loop
//                        (the two regions test warp_leader_rank(rank), which nvcc
//                        knows is warp-uniform: see device/cuda/warp_specialize.cuh)
//                        waiting on full[v] and arriving on empty[v]
//     T.ws [T, T + 128): setmaxnreg.dec; rank T runs the producer's loop
//
// With TMA multicast (a thread block cluster, plan_multicast in
// pipeline_loops/ws_choice.cpp) the blocks of a cluster write into each other's tiles and arrive on each other's
// empty mbarriers: a cluster barrier after the initialization keeps every copy out
// of a block whose mbarriers are not initialized yet, and one at the consumers'
// end keeps every block alive until no other block arrives on its mbarriers any
// more (the producer warpgroup has exited by then, which the barrier allows).
//
// The regions are kWarpGroupAttr ones (as T.ws writes them), so the code generator
// spreads the consumers' block ops over their T threads and turns their block
// barriers into a named barrier of those threads. Everything before this pass saw
// a block of T threads, which is what the consumers are.
#include "transform/warp_specialize.h"

#include "arith/simplify.h"
#include "ir/device_calls.h"
#include "ir/visitor.h"
#include "ops/extent_util.h"
#include "support/logging.h"
#include "transform/lower_explicit_hopper.h"
#include "transform/lower_tile_ops.h"
#include "transform/plan_shared_memory.h"
#include "transform/tma_copy.h"

namespace tl {
namespace {

// The registers per thread a block of `threads` may hold at launch, and what the
// consumers may raise theirs to once the producer warpgroup is down to kProducer:
// the block's pool stays within what it was given.
constexpr int64_t kProducerRegs = 24;  // the least setmaxnreg allows: the producer only issues TMA copies
int64_t launch_regs(int64_t threads) {
  return std::min<int64_t>(kRegistersPerSm / threads / 8 * 8, 248);
}
int64_t consumer_regs(int64_t consumers) {
  int64_t total = launch_regs(consumers + kWarpGroupThreads) * (consumers + kWarpGroupThreads);
  return std::min<int64_t>((total - kProducerRegs * kWarpGroupThreads) / consumers / 8 * 8, 240);
}

// The counts of T.annotate_producer_reg_dealloc (tl::setmaxnreg_hint(0, n)) and
// T.annotate_consumer_reg_alloc (tl::setmaxnreg_hint(1, n)) in `body`; the last wins.
std::pair<std::optional<int64_t>, std::optional<int64_t>> register_hints(const Stmt& body) {
  std::pair<std::optional<int64_t>, std::optional<int64_t>> out;
  for_each_expr(body, [&](const Expr& e) {
    const std::string* name = extern_name(e);
    if (!name || *name != kSetmaxnregHintCall) return;
    const std::vector<Expr>& args = e.as<CallNode>()->args;  // the name, then which and the count
    if (args.size() != 3) return;
    auto which = as_const_int(args[1]), n = as_const_int(args[2]);
    if (!which || !n) return;
    (*which == 0 ? out.first : out.second) = *n;
  });
  return out;
}

// Takes the marked pipeline out of the kernel body: the body with the mark
// replaced by the consumers' loop, and the mark's parts.
class TakePipeline : public IRMutator {
 public:
  using IRMutator::mutate;
  const AttrNode* mark = nullptr;
  std::vector<Buffer> barriers;
  Stmt init, producer;

 protected:
  using IRMutator::visit;
  Stmt visit(const AttrNode* op, const Stmt& self) override {
    if (op->key != kWsPipelineAttr) return IRMutator::visit(op, self);
    TL_ICHECK(!mark, "two warp-specialized pipelines in one kernel");
    mark = op;
    Stmt s = op->body;
    while (auto* a = s.as<AllocateNode>()) {
      barriers.push_back(a->buffer);
      s = a->body;
    }
    // (plan_barriers may have put block barriers between the parts: they stay with
    // the consumers, where they are harmless.)
    std::vector<Stmt> rest;
    for (const Stmt& p : flatten(s)) {
      auto* a = p.as<AttrNode>();  // unplanned(attr_stmt(kWs..., part))
      a = a && a->key == kAsyncCopyAttr ? a->body.as<AttrNode>() : nullptr;
      if (a && a->key == kWsInitAttr)
        init = a->body;
      else if (a && a->key == kWsProducerAttr)
        producer = a->body;
      else
        rest.push_back(p);
    }
    TL_ICHECK(init.defined() && producer.defined(), "malformed warp-specialized pipeline");
    return seq(rest);
  }

 private:
  static std::vector<Stmt> flatten(const Stmt& s) {
    auto* q = s.as<SeqNode>();
    if (!q) return {s};
    std::vector<Stmt> out;
    for (const Stmt& c : q->seq)
      for (const Stmt& d : flatten(c)) out.push_back(d);
    return out;
  }
};

// Takes the shared-memory allocations out of the consumers' part, so that they
// enclose the producer's too (the code generator places every shared buffer at
// the top of the kernel whatever the nesting, so this moves nothing there).
class TakeShared : public IRMutator {
 public:
  using IRMutator::mutate;
  std::vector<Buffer> buffers;

 protected:
  using IRMutator::visit;
  Stmt visit(const AllocateNode* op, const Stmt& self) override {
    if (!is_shared(op->buffer)) return IRMutator::visit(op, self);
    buffers.push_back(op->buffer);
    return mutate(op->body);
  }
};

class Split : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    TakePipeline take;
    Stmt consumer = take.mutate(op->body);
    if (!take.mark) return self;
    TakeShared shared;
    consumer = shared.mutate(consumer);
    int64_t t = op->threads[0];
    Expr rank = cast(dtype::Int32, op->thread_vars[0]);
    // With whole warps of consumers the warpgroups' branches test the rank of the
    // warp's lane 0: the same outcome, and nvcc then knows the branch is warp-uniform.
    Expr warp_rank = t % 32 == 0 ? call_extern(dtype::Int32, "tl::warp_leader_rank", {rank}) : rank;
    int64_t regs = launch_regs(t + kWarpGroupThreads), up = consumer_regs(t), down = kProducerRegs;
    // T.disable_warp_group_reg_alloc: every warpgroup keeps the registers it launched with.
    const bool keep_regs = calls_device(op->body, kNoSetmaxnregCall);
    // T.annotate_producer_reg_dealloc / annotate_consumer_reg_alloc: the counts asked for.
    auto [hint_down, hint_up] = register_hints(op->body);
    if (hint_down) down = *hint_down;
    if (hint_up) up = *hint_up;
    if ((hint_down || hint_up) && !keep_regs && down * kWarpGroupThreads + up * t > kRegistersPerSm)
      throw_user_error(
          op->span, str_cat("the warp-specialized pipeline's register counts (producer ", down, " per thread x ",
                            kWarpGroupThreads, " threads, consumers ", up, " x ", t, ") exceed the ", kRegistersPerSm,
                            " registers of the block's pool, and setmaxnreg.inc would wait forever; "
                            "lower T.annotate_consumer_reg_alloc or T.annotate_producer_reg_dealloc"));
    std::vector<Stmt> cons, prod;
    if ((up > regs || hint_up) && !keep_regs)
      cons.push_back(evaluate(call_extern(dtype::Void, device_call_name(kSetmaxnregIncCall, {up}), {})));
    cons.push_back(consumer);
    if ((down < regs || hint_down) && !keep_regs)
      prod.push_back(evaluate(call_extern(dtype::Void, device_call_name(kSetmaxnregDecCall, {down}), {})));
    prod.push_back(if_then_else(eq(rank, int_imm(t)), take.producer));
    const bool multicast = calls_device(take.producer, kTmaLoadMulticastCall);
    Stmt cluster_sync = evaluate(call_extern(dtype::Void, "tl::cluster_sync", {}));
    if (multicast) cons.push_back(cluster_sync);
    Stmt body = seq({
        if_then_else(eq(rank, int_imm(0)), take.init),
        barrier(BarrierKind::Threads),
        multicast ? cluster_sync : seq({}),
        attr_stmt(kWarpGroupAttr, std::vector<int64_t>{0, t}, if_then_else(lt(warp_rank, int_imm(t)), seq(cons))),
        attr_stmt(kWarpGroupAttr, std::vector<int64_t>{t, kWarpGroupThreads},
                  if_then_else(ge(warp_rank, int_imm(t)), seq(prod))),
    });
    for (const Buffer& b : take.barriers) body = allocate(b, body);
    for (const Buffer& b : shared.buffers) body = allocate(b, body);
    body = attr_stmt(kAutoWarpSpecializedAttr, int64_t(1), body);
    auto n =
        std::make_shared<KernelLaunchNode>(op->block_vars, op->grid, op->thread_vars,
                                           std::vector<int64_t>{t + kWarpGroupThreads}, body, op->prelude, op->cluster);
    n->span = op->span;
    return Stmt(std::move(n));
  }
};

// T.ws regions written by hand (lower_explicit_hopper) test the thread's rank,
// which the passes before this one used to simplify their bodies. Here, last, they
// test `tl_warp_rank` instead: lane 0's rank (tl::warp_leader_rank), read once at
// the kernel's start, where every warp is converged (a region may sit under
// divergent code, where the shuffle could not be), so nvcc knows each region's
// branch is warp-uniform. Blocks and regions of whole warps only.
class UniformRegions : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    if (op->thread_count() % 32 != 0) return self;
    Scoped<const KernelLaunchNode*> in_kernel(launch_, op);
    used_ = false;
    Stmt s = IRMutator::visit(op, self);
    if (!used_) return s;
    auto* k = s.as<KernelLaunchNode>();
    Expr rank = call_extern(dtype::Int32, "tl::warp_leader_rank", {simplify(thread_rank(op))});
    return with_body(k, let_stmt(leader_, rank, k->body));
  }

  Stmt visit(const AttrNode* op, const Stmt& self) override {
    Stmt s = IRMutator::visit(op, self);
    auto* a = s.as<AttrNode>();
    auto* region = launch_ && a && a->key == kWarpGroupAttr ? a->body.as<IfThenElseNode>() : nullptr;
    if (!region) return s;
    const auto [lo, count] = warp_group_range(a);
    if (lo % 32 != 0 || count % 32 != 0) return s;
    used_ = true;
    // Bounds that every rank meets are left out (ranks are in [0, thread_count)).
    const Expr from = ge(leader_, int_imm(lo)), below = lt(leader_, int_imm(lo + count));
    Expr inside = lo == 0 ? below : lo + count >= launch_->thread_count() ? from : logical_and(from, below);
    return attr_stmt(a->key, a->value, if_then_else(inside, region->then_case, region->else_case, region->span),
                     a->span);
  }

 private:
  const KernelLaunchNode* launch_ = nullptr;
  const Var leader_{"tl_warp_rank", dtype::Int32};
  bool used_ = false;
};

}  // namespace

PrimFunc warp_specialize(const PrimFunc& f) {
  return f.with_body(Split().mutate(UniformRegions().mutate(f->body)));
}

}  // namespace tl
