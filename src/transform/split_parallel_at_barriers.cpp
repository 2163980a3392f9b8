// See split_parallel_at_barriers.h. Only barriers at the top of the loop body (under
// the T.Parallel(M, N, ...) nest) can be split at; one under a branch, a let or an
// inner loop is refused at its line, since no per-iteration placement keeps both
// the barrier's meaning and every thread reaching it.
#include "transform/split_parallel_at_barriers.h"

#include "ir/device_calls.h"
#include "ir/op.h"
#include "ir/visitor.h"
#include "support/error.h"

namespace tl {
namespace {

// A barrier of the whole block or grid: T.sync_threads(), T.sync_grid(). A named
// barrier (part of the block, under a branch on the thread) is left where it is.
bool is_block_barrier(const Stmt& s) {
  if (auto* b = s.as<BarrierNode>()) return b->barrier == BarrierKind::Threads;
  auto* e = s.as<EvaluateNode>();
  if (!e) return false;
  const std::string* name = extern_name(e->value);
  return name && *name == kSyncGridCall;
}

// The first block barrier anywhere in `s` (is_block_barrier's kinds), or nullptr.
const StmtNode* find_barrier(const Stmt& s) {
  return find_stmt(s, is_block_barrier);
}

class SplitAtBarriers : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const ForNode* op, const Stmt& self) override {
    if (op->for_kind != ForKind::Parallel) return IRMutator::visit(op, self);
    // The T.Parallel(M, N, ...) nest: perfectly nested parallel loops.
    std::vector<const ForNode*> nest = parallel_nest(op);
    const Stmt& body = nest.back()->body;
    if (!find_barrier(body)) return self;
    std::vector<Stmt> stmts;
    if (auto* s = body.as<SeqNode>())
      stmts = s->seq;
    else
      stmts = {body};
    // Parts between barriers; a barrier elsewhere than at the top cannot be split at.
    std::vector<Stmt> out;
    std::vector<Stmt> part;
    auto flush = [&] {
      if (!part.empty()) out.push_back(rebuild_nest(nest, seq(part)));
      part.clear();
    };
    for (const Stmt& s : stmts) {
      if (is_block_barrier(s)) {
        flush();
        out.push_back(s);
        continue;
      }
      if (const StmtNode* inner = find_barrier(s))
        throw_user_error(inner->span.defined() ? inner->span : s.span(),
                         "a barrier inside a T.Parallel loop must sit directly in the loop's body, where the loop "
                         "can be split at it (every iteration's work before the barrier, the barrier, then the work "
                         "after it); this one is under a branch, a let or an inner loop. Move it out of the loop, "
                         "between two T.Parallel loops");
      part.push_back(s);
    }
    flush();
    return seq(out);
  }

 private:
  // A copy of the loop nest around `body`, with fresh loop variables so that each
  // part defines its own.
  static Stmt rebuild_nest(const std::vector<const ForNode*>& nest, Stmt body) {
    std::map<const VarNode*, Expr> fresh;
    std::vector<Var> vars;
    for (const ForNode* f : nest) {
      vars.emplace_back(f->var.name(), f->var.dtype(), f->var.span());
      fresh[f->var.node()] = vars.back();
    }
    body = substitute(body, fresh);
    for (size_t d = nest.size(); d-- > 0;) {
      const ForNode* f = nest[d];
      body = for_loop(vars[d], substitute(f->min, fresh), substitute(f->extent, fresh), f->for_kind, body,
                      f->annotations, f->span);
    }
    return body;
  }
};

}  // namespace

PrimFunc split_parallel_at_barriers(const PrimFunc& f) {
  return f.with_body(SplitAtBarriers().mutate(f->body));
}

}  // namespace tl
