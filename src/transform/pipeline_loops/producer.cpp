// Phase 4 of pipeline_loops (plan.h), for warp-specialized pipelines: the producer
// warpgroup's loop, which issues the TMA copies once the consumers have released
// each version, and the mark src/transform/warp_specialize.cpp splits.
#include "ir/visitor.h"
#include "transform/pipeline_loops/plan.h"

namespace tl::pipeliner {

// The loop of a warp-specialized pipeline, for src/transform/warp_specialize.cpp
// to split: the consumers' steps `consumer` (waiting on the full mbarriers and
// arriving on the empty ones), and the producer's loop, which issues iteration
// k's copies into version k % V once the consumers have released it (from k = V
// on: the wait for phase k / V - 1 of its empty mbarrier).
Stmt warp_specialized(Stmt consumer, const ForNode* op, const Schedule& schedule, const Staging& staging,
                      const WsPlan& ws, const LoopContext& ctx, const Buffer& rounds_count,
                      std::optional<RoundsPipeline>& rounds_out) {
  const std::vector<Unit>& units = schedule.units;
  const std::vector<size_t>& pos = schedule.pos;
  const std::vector<TmaGroup>& groups = staging.groups;
  const Expr &min = ws.min, &extent = ws.extent;
  const ForNode* ws_outer = ctx.ws_outer;
  const std::vector<PathStep>& ws_path = *ctx.ws_path;
  const bool rounds = rounds_count.defined();
  int64_t consumers = ctx.launch->threads[0];
  Var i(op->var.name(), op->var.dtype());
  // With rounds (a persistent loop around the pipeline), the producer counts its
  // iterations over all rounds as the consumers do.
  Var base("pipe_base", dtype::Int32);
  Expr gi = rounds ? add(cast(i.dtype(), Expr(base)), Expr(i)) : Expr(i);
  // Its round variable, and its own copies of the bindings on the way to the loop;
  // names bound before the persistent loop are substituted.
  Var round_var = ws_outer ? Var(ws_outer->var.name(), ws_outer->var.dtype()) : Var();
  std::map<const VarNode*, Expr> round_vars = *ctx.outer_lets;
  std::vector<Var> round_lets(ws_path.size());
  if (rounds) {
    round_vars[ws_outer->var.node()] = Expr(round_var);
    for (size_t p = 0; p < ws_path.size(); ++p)
      if (!ws_path[p].cond.defined()) {
        round_lets[p] = Var(ws_path[p].var.name(), ws_path[p].var.dtype());
        round_vars[ws_path[p].var.node()] = Expr(round_lets[p]);
      }
  }
  Expr first = rounds ? substitute(op->min, round_vars) : min;
  Expr count_of = rounds ? substitute(op->extent, round_vars) : extent;
  std::vector<size_t> by_pos(units.size());
  for (size_t u = 0; u < units.size(); ++u) by_pos[pos[u]] = u;
  std::vector<Stmt> body, init;
  std::set<size_t> armed;
  std::map<const VarNode*, Expr> at = round_vars;
  at[op->var.node()] = add(first, Expr(i));
  for (size_t u : by_pos) {
    if (!units[u].producer) continue;
    for (const Stmt& s : units[u].stmts) {
      const auto& [tc, g] = staging.tma.at(s.as<TileOpNode>());
      const TmaGroup& grp = groups[g];
      Expr v = floormod(gi, int_imm(grp.versions));
      if (armed.insert(g).second) {
        Expr parity = floormod(add(floordiv(gi, int_imm(grp.versions)), int_imm(1)), int_imm(2));
        body.push_back(if_then_else(
            ge(gi, int_imm(grp.versions)),
            evaluate(call_extern(dtype::Void, "tl::mbarrier_wait", {address_of(grp.empty, {v}), parity}))));
        body.push_back(evaluate(call_extern(dtype::Void, "tl::mbarrier_arrive_expect_tx",
                                            {address_of(grp.bars, {v}), int_imm(grp.bytes)})));
      }
      Stmt t = at_version(substitute(s, at), staging.staged, gi);
      body.push_back(tma_loads(t.as<TileOpNode>(), tc, address_of(grp.bars, {v})));
    }
  }
  Stmt producer = for_loop(i, int_imm(0), count_of, ForKind::Serial, seq(body), {}, op->span);
  if (rounds) {
    // The rounds of the persistent loop, under the conditions and with the bindings
    // the consumers took on their way to the pipeline (a tile's coordinates are
    // computed once per round, not at every copy), the producer's own copies of them.
    Buffer count = Buffer::make("pipe_count", dtype::Int32, {int_imm(1)}, Scope::LocalVar);
    producer =
        let_stmt(base, buffer_load(count, {int_imm(0)}),
                 seq({producer, buffer_store(count, add(Expr(base), cast(dtype::Int32, count_of)), {int_imm(0)})}));
    for (size_t p = ws_path.size(); p-- > 0;) {
      const PathStep& step = ws_path[p];
      producer = step.cond.defined() ? if_then_else(substitute(step.cond, round_vars), producer)
                                     : let_stmt(round_lets[p], substitute(step.value, round_vars), producer);
    }
    producer = for_loop(round_var, substitute(ws_outer->min, *ctx.outer_lets),
                        substitute(ws_outer->extent, *ctx.outer_lets), ForKind::Serial, producer, {}, ws_outer->span);
    producer = allocate(count, seq({buffer_store(count, int_imm(0), {int_imm(0)}), producer}));
  }
  for (const TmaGroup& g : groups)
    for (int64_t v = 0; v < g.versions; ++v) {
      init.push_back(
          evaluate(call_extern(dtype::Void, "tl::mbarrier_init", {address_of(g.bars, {int_imm(v)}), int_imm(1)})));
      Expr arrivals = g.per_warpgroup ? call_extern(dtype::Int32,
                                                    str_cat("tl::release_arrivals<", consumers, ", ", g.ctas, ">"), {})
                                      : int_imm(consumers / 32 * g.ctas);
      init.push_back(
          evaluate(call_extern(dtype::Void, "tl::mbarrier_init", {address_of(g.empty, {int_imm(v)}), arrivals})));
    }
  init.push_back(evaluate(call_extern(dtype::Void, "tl::fence_mbarrier_init", {})));
  if (rounds) {
    // The mark goes around the persistent loop (visit of ws_outer): the producer
    // then sits outside the conditions the consumers' rounds take, which later
    // simplification would otherwise fold into it.
    rounds_out = RoundsPipeline{seq(init), producer, groups, consumers, rounds_count};
    return consumer;
  }
  return ws_region(seq(init), producer, consumer, groups, consumers);
}

// The mark warp_specialize splits: the mbarriers, their initialization, the
// producer's loop and the consumers' part.
Stmt ws_region(const Stmt& init, const Stmt& producer, const Stmt& consumer, const std::vector<TmaGroup>& groups,
               int64_t consumers) {
  Stmt s = seq({unplanned(attr_stmt(kWsInitAttr, int64_t(1), init)),
                unplanned(attr_stmt(kWsProducerAttr, int64_t(1), producer)), consumer});
  for (const TmaGroup& g : groups) s = allocate(g.empty, allocate(g.bars, s));
  return attr_stmt(kWsPipelineAttr, consumers, s);
}

}  // namespace tl::pipeliner
