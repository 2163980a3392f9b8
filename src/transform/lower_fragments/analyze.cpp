// Phase 1 of lower_fragments (plan.h), per kernel: the collection run twice (the
// second knows which reducers are updated at indices no layout follows), scalar
// fragments replicated, and gemms retried under policy FullRow where that leaves
// fewer fragments in shared memory.
#include "ir/visitor.h"
#include "ops/tile_op.h"
#include "support/logging.h"
#include "transform/lower_fragments/plan.h"

namespace tl::fragments {
namespace {

// Fragments only code outside T.Parallel uses (Analysis::simt_uses) leave the layout
// problem: each becomes a per-thread array of its own shape.
void replicate_scalar_fragments(Analysis& a) {
  for (BufKey k : a.simt_uses) {
    if (a.tile_uses.count(k)) {
      // Partials of a reducer that a tile op also reads or writes by a layout: no
      // layout holds both, so the reducer stays in shared memory.
      if (a.partial_updates.count(k))
        a.demote(a.candidates.at(k),
                 "a reducer updated in T.Parallel loops at indices no layout follows, and used by a tile op "
                 "that needs a layout");
      if (auto it = a.loop_scalars.find(k); it != a.loop_scalars.end())
        throw_user_error(it->second,
                         str_cat("fragment '", a.candidates.at(k)->name,
                                 "' is used at [0] in this T.Parallel "
                                 "loop, a per-iteration scalar that each thread keeps for itself, and elsewhere "
                                 "by a layout (a T.Parallel loop variable or a tile op spreads it over the "
                                 "threads); keep the scalar in a fragment of its own (or T.alloc_var)"));
      continue;
    }
    const Buffer& b = a.candidates.at(k);
    a.replicated[k] = Buffer::make(b->name, b->dtype, b->shape, Scope::Local, {}, b->span);
    a.candidates.erase(k);
    a.demoted.erase(k);
    a.region_of.erase(k);
  }
}

}  // namespace

// wgmma for all register gemms of the kernel or for none: their fragments may be
// tied to each other and their shared operands shared, and the two kinds lay both
// out differently.
//
// Gemms under the default Square policy whose accumulators share per-row vectors
// (FlashAttention's scores and output, scaled by one row max) but split M over the
// warps differently would leave those vectors, and with them both tiles, in shared
// memory; a register A operand (the probabilities of P @ V) needs every warp along
// M in its gemm and in the gemm that produced it. Such gemms are analyzed again
// with FullRow, which is kept when it leaves fewer fragments in shared memory.
Analysis analyze_launch(const KernelLaunchNode* op, const Target& target, bool wgmma, bool sparse_wgmma) {
  auto analyze = [&](bool w, const std::set<const TileOpNode*>& full_row) {
    Analysis a;
    a.target = &target;
    a.wgmma = w;
    a.sparse_wgmma = sparse_wgmma;
    a.full_row = full_row;
    a.threads = op->thread_count();
    a.reducers = finalized_reducers(op->body);
    Analysis first = a;
    collect(first, op->body);
    a.replicated_reducers = first.partial_updates;
    collect(a, op->body);
    replicate_scalar_fragments(a);
    return a;
  };
  auto analyze_either = [&](const std::set<const TileOpNode*>& full_row) {
    Analysis a = analyze(wgmma, full_row);
    if (!a.wgmma_refused) return a;
    Analysis b = analyze(false, full_row);
    b.a_wants_full_row.insert(a.a_wants_full_row.begin(), a.a_wants_full_row.end());
    return b;
  };
  // How many fragments a solution leaves in shared memory (-1: no solution).
  auto demoted_after_solving = [](Analysis probe) -> int64_t {
    if (try_solve(probe).conflict) return -1;
    return int64_t(probe.demoted.size());
  };
  Analysis a = analyze_either({});
  Analysis probe = a;
  solve(probe);
  std::set<const TileOpNode*> full_row;
  for (const GemmUse& g : a.gemms)
    if (probe.row_split_conflicts.count(g.c) && a.policy(g.op) == 0) full_row.insert(g.op);
  // A register A operand (the probabilities of P @ V) needs every warp along M, in
  // its gemm and in the gemms whose accumulators one T.copy or loop ties it to.
  UnionFind ties;
  for (auto& [x, y] : a.same) ties.unite(x, y);
  for (const Analysis::Loop& l : a.loops)
    for (BufKey f : l.full) ties.unite(f, l.full[0]);
  for (const TileOpNode* op : a.a_wants_full_row) {
    full_row.insert(op);
    for (const GemmUse& g : a.gemms)
      if (ties.find(g.c) == ties.find(op->regions[0].buffer.get()) && a.policy(g.op) == 0) full_row.insert(g.op);
  }
  if (full_row.empty()) return a;
  Analysis b = analyze_either(full_row);
  int64_t before = int64_t(probe.demoted.size()), after = demoted_after_solving(b);
  if (after < 0 || after >= before) return a;
  for (const TileOpNode* g : full_row)
    log(LogLevel::Debug, at(g->span,
                            "T.gemm takes policy FullRow instead of Square: it keeps per-row vectors shared with "
                            "another gemm's accumulator, or a register A operand, in registers"));
  return b;
}

}  // namespace tl::fragments
