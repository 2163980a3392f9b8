// Producer/consumer warp specialization (docs/design/hopper.md): pipeline_loops
// marked a pipeline whose copies one thread can issue on its own; this pass, the
// last of the CUDA lowering, gives the kernel an extra warpgroup for them.
//
//   Allocate(full/empty mbarriers)
//     if (rank == 0) { init the mbarriers; fence }      all T + 128 threads
//     __syncthreads()
//     T.ws [0, T):       setmaxnreg.inc; the kernel body, the pipeline's loop
//                        waiting on full[v] and arriving on empty[v]
//     T.ws [T, T + 128): setmaxnreg.dec; rank T runs the producer's loop
//
// The regions are kWarpGroupAttr ones (as T.ws writes them), so the code generator
// spreads the consumers' block ops over their T threads and turns their block
// barriers into a named barrier of those threads. Everything before this pass saw
// a block of T threads, which is what the consumers are.
#include "transform/warp_specialize.h"

#include "ir/visitor.h"
#include "ops/extent_util.h"
#include "support/logging.h"
#include "transform/lower_explicit_hopper.h"
#include "transform/lower_tile_ops.h"
#include "transform/pipeline_loops.h"

namespace tl {
namespace {

// The registers per thread a block of `threads` may hold at launch, and what the
// consumers may raise theirs to once the producer warpgroup is down to kProducer:
// the block's pool stays within what it was given.
constexpr int64_t kProducerRegs = 40;
int64_t launch_regs(int64_t threads) {
  return std::min<int64_t>(65536 / threads / 8 * 8, 248);
}
int64_t consumer_regs(int64_t consumers) {
  int64_t total = launch_regs(consumers + 128) * (consumers + 128);
  return std::min<int64_t>((total - kProducerRegs * 128) / consumers / 8 * 8, 240);
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

// Ping-pong between two consumer warpgroups (as FlashAttention-3 does): in each
// step of a pipelined loop that waits for its own wgmmas inside the step (a
// softmax between the gemms), warpgroup w issues its gemms only after the other
// one has issued its, so that one warpgroup's softmax runs while the other's gemms
// use the tensor cores. Named barriers kTurn + w ("w may issue") carry the turn:
// w syncs on its own before its first gemm and arrives on the other's after its
// last. Loops with a block barrier between their gemms are left alone (a warpgroup
// waiting for its turn there would never let the other one reach the barrier).
constexpr int kTurn = 12;  // named barriers 12 and 13 (1 + lo / 128 numbers the T.ws regions)

bool calls(const Stmt& s, const char* prefix) {
  bool found = false;
  struct Find : IRVisitor {
    const char* prefix;
    bool* found;
    using IRVisitor::visit;
    void visit(const CallNode* op) override {
      auto* n = op->op == Intrinsic::Extern && !op->args.empty() ? op->args[0].as<StringImmNode>() : nullptr;
      if (n && n->value.rfind(prefix, 0) == 0) *found = true;
      IRVisitor::visit(op);
    }
  } f;
  f.prefix = prefix;
  f.found = &found;
  f.visit(s);
  return found;
}

bool has_barrier(const Stmt& s) {
  bool found = calls(s, "tl::named_barrier");
  struct Find : IRVisitor {
    bool* found;
    using IRVisitor::visit;
    void visit(const BarrierNode*) override { *found = true; }
  } f;
  f.found = &found;
  f.visit(s);
  return found;
}

// tl::wgmma_gemm_xx<..., 1>(...) (issue, then wait for the older groups) becomes
// tl::wgmma_gemm_xx<..., -1>(...) (issue only) when the statement is that call.
class NoWait : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const EvaluateNode* op, const Stmt& self) override {
    auto* c = op->value.as<CallNode>();
    auto* n = c && c->op == Intrinsic::Extern && !c->args.empty() ? c->args[0].as<StringImmNode>() : nullptr;
    const std::string tail = ", 1>";
    if (!n || n->value.rfind("tl::wgmma_gemm_", 0) != 0 || n->value.size() < tail.size() ||
        n->value.compare(n->value.size() - tail.size(), tail.size(), tail) != 0)
      return self;
    std::vector<Expr> args(c->args.begin() + 1, c->args.end());
    std::string name = n->value.substr(0, n->value.size() - tail.size()) + ", -1>";
    return evaluate(call_extern(c->dtype, name, args), op->span);
  }
};

class PingPong : public IRMutator {
 public:
  explicit PingPong(Expr warpgroup) : wg_(std::move(warpgroup)) {}
  using IRMutator::mutate;
  bool any = false;

  Stmt turn(const char* what, Expr id) const {
    return evaluate(call_extern(dtype::Void, what, {std::move(id), int_imm(256)}));
  }

 protected:
  using IRMutator::visit;
  Stmt visit(const ForNode* op, const Stmt& self) override {
    if (!op->annotations.count("tl.pipelined") || !calls(op->body, "tl::wgmma_gemm_") ||
        !calls(op->body, "tl::wgmma_wait<0>") || has_barrier(op->body))
      return self;
    std::vector<Stmt> body;
    if (auto* q = op->body.as<SeqNode>())
      body = q->seq;
    else
      body = {op->body};
    size_t first = body.size(), last = 0;
    for (size_t i = 0; i < body.size(); ++i)
      if (calls(body[i], "tl::wgmma_gemm_")) first = std::min(first, i), last = i;
    // Only gemms issued back to back hand over the turn: a wait for them in between
    // (the softmax of an unscheduled FlashAttention) would serialize the warpgroups.
    for (size_t i = first; i <= last; ++i)
      if (calls(body[i], "tl::wgmma_wait<0>")) return self;
    // The last gemm hands over the turn as soon as it is issued: its own wait for the
    // groups before it (Pending 1) moves after the arrive.
    Stmt issued = body[last].as<EvaluateNode>() ? NoWait().mutate(body[last]) : body[last];
    std::vector<Stmt> out(body.begin(), body.begin() + std::ptrdiff_t(first));
    out.push_back(turn("tl::named_barrier_sync", add(int_imm(kTurn), wg_)));
    out.insert(out.end(), body.begin() + std::ptrdiff_t(first), body.begin() + std::ptrdiff_t(last));
    out.push_back(issued);
    out.push_back(turn("tl::named_barrier_arrive", sub(int_imm(kTurn + 1), wg_)));
    if (!issued.same_as(body[last])) out.push_back(evaluate(call_extern(dtype::Void, "tl::wgmma_wait<1>", {})));
    out.insert(out.end(), body.begin() + std::ptrdiff_t(last + 1), body.end());
    any = true;
    return for_loop(op->var, op->min, op->extent, op->for_kind, seq(out), op->annotations, op->span);
  }

 private:
  Expr wg_;
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
    int64_t regs = launch_regs(t + 128), up = consumer_regs(t);
    std::vector<Stmt> cons, prod;
    if (up > regs) cons.push_back(evaluate(call_extern(dtype::Void, str_cat("tl::setmaxnreg_inc<", up, ">"), {})));
    if (t == 256) {
      // Warpgroup 1 lets warpgroup 0 go first; warpgroup 0 takes that last turn
      // back at the end, so that both barriers finish balanced.
      Expr wg = floordiv(rank, int_imm(128));
      PingPong pp(wg);
      Stmt played = pp.mutate(consumer);
      if (pp.any)
        consumer = seq({if_then_else(eq(wg, int_imm(1)), pp.turn("tl::named_barrier_arrive", int_imm(kTurn))), played,
                        if_then_else(eq(wg, int_imm(0)), pp.turn("tl::named_barrier_sync", int_imm(kTurn)))});
    }
    cons.push_back(consumer);
    if (kProducerRegs < regs)
      prod.push_back(evaluate(call_extern(dtype::Void, str_cat("tl::setmaxnreg_dec<", kProducerRegs, ">"), {})));
    prod.push_back(if_then_else(eq(rank, int_imm(t)), take.producer));
    Stmt body = seq({
        if_then_else(eq(rank, int_imm(0)), take.init),
        barrier(BarrierKind::Threads),
        attr_stmt(kWarpGroupAttr, std::vector<int64_t>{0, t}, if_then_else(lt(rank, int_imm(t)), seq(cons))),
        attr_stmt(kWarpGroupAttr, std::vector<int64_t>{t, 128}, if_then_else(ge(rank, int_imm(t)), seq(prod))),
    });
    for (const Buffer& b : take.barriers) body = allocate(b, body);
    for (const Buffer& b : shared.buffers) body = allocate(b, body);
    auto n = std::make_shared<KernelLaunchNode>(op->block_vars, op->grid, op->thread_vars,
                                                std::vector<int64_t>{t + 128}, body, op->prelude);
    n->span = op->span;
    return Stmt(std::move(n));
  }
};

}  // namespace

PrimFunc warp_specialize(const PrimFunc& f) {
  return f.with_body(Split().mutate(f->body));
}

}  // namespace tl
