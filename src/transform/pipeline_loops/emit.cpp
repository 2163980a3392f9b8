// Phase 4 of pipeline_loops (plan.h): the pipelined loop as the steps of its schedule,
// a prologue, a steady-state loop and a tail, with the waits each reader needs
// (cp.async commit groups, TMA mbarriers, wgmma groups left in flight) and, in a
// warp-specialized pipeline, the consumers' releases of the versions they are done with.
#include <algorithm>

#include "ir/device_calls.h"
#include "ir/visitor.h"
#include "ops/extent_util.h"
#include "ops/tile_op.h"
#include "transform/pipeline_loops/plan.h"

namespace tl::pipeliner {

// The statements TMA bookkeeping becomes are ordered by the mbarriers, not by
// block barriers: the attribute keeps plan_barriers away from them.
Stmt unplanned(Stmt s) {
  return attr_stmt(kAsyncCopyAttr, int64_t(1), std::move(s));
}

Expr address_of(const Buffer& b, std::vector<Expr> idx) {
  return call(Intrinsic::AddressOf, {buffer_load(b, std::move(idx))});
}

namespace {

// A wgmma gemm of a consumer unit that may be issued without waiting for it within
// its step (unit.async ones wait across steps instead): its accumulator, and A when
// A is in registers, are wgmma fragments. The step waits for it before anything
// else touches those registers, and by its end (see `step` in emit_pipeline).
bool in_step_async(const Stmt& s, const Unit& u, const std::set<BufKey>& wgmma_acc) {
  auto* g = s.as<TileOpNode>();
  if (u.producer || u.async || !g || g->op != TileOpKind::Gemm || attr_int(g->attrs, "clear_accum", 0)) return false;
  const Buffer &a = g->regions[0].buffer, &b = g->regions[1].buffer, &c = g->regions[2].buffer;
  return wgmma_acc.count(c.get()) && is_shared(b) && (is_shared(a) || wgmma_acc.count(a.get()));
}

// A unit's statements with every T.unroll loop of constant extent (at most 8) whose
// body is one gemm that may be issued in flight (the unit's gemm left in flight into
// the next step, mark_async in schedule.cpp, or in_step_async: K slices of staged
// tiles, `T.gemm(A_s[:, j * w:(j + 1) * w], B_s[j * w:(j + 1) * w, :], C)`) replaced by
// its iterations, each with the count of the loop's gemms: they are issued back to
// back, each leaving that many groups running (wgmma_wait<n>), as one gemm on the
// whole tile leaves its own, instead of each slice waiting for itself. Other
// statements keep the count 1.
std::vector<std::pair<Stmt, int64_t>> expand_sliced_gemms(const Unit& u, const std::set<BufKey>& wgmma_acc) {
  std::vector<std::pair<Stmt, int64_t>> out;
  for (const Stmt& s : u.stmts) {
    const ForNode* f = sliced_gemm_loop(s);
    if (f && (u.async || in_step_async(f->body, u, wgmma_acc))) {
      int64_t lo = *as_const_int(f->min), ext = *as_const_int(f->extent);
      for (int64_t j = 0; j < ext; ++j) {
        std::map<const VarNode*, Expr> at{{f->var.node(), make_const(f->var.dtype(), lo + j)}};
        out.emplace_back(substitute(f->body, at), ext);
      }
      continue;
    }
    out.emplace_back(s, 1);
  }
  return out;
}

// The pipelined loop `s` with its mbarriers: allocated, initialized by one thread
// (arrival count 1: the elected thread's arrive_expect_tx) and published with a
// fence and a barrier before it, invalidated after it once every thread is past
// its last wait (the loop may run again, in an outer loop, and init them anew).
Stmt with_mbarriers(Stmt s, const std::vector<TmaGroup>& groups, const Expr& elected) {
  if (groups.empty()) return s;
  std::vector<Stmt> init, inval;
  for (const TmaGroup& g : groups)
    for (int64_t v = 0; v < g.versions; ++v) {
      init.push_back(
          evaluate(call_extern(dtype::Void, "tl::mbarrier_init", {address_of(g.bars, {int_imm(v)}), int_imm(1)})));
      inval.push_back(evaluate(call_extern(dtype::Void, "tl::mbarrier_inval", {address_of(g.bars, {int_imm(v)})})));
    }
  init.push_back(evaluate(call_extern(dtype::Void, "tl::fence_mbarrier_init", {})));
  s = seq({unplanned(if_then_else(elected, seq(init))), barrier(BarrierKind::Threads), s, barrier(BarrierKind::Threads),
           unplanned(if_then_else(elected, seq(inval)))});
  for (const TmaGroup& g : groups) s = allocate(g.bars, s);
  return s;
}

}  // namespace

EmittedLoop emit_pipeline(const ForNode* op, const Schedule& schedule, const Staging& staging, const WsPlan& ws_plan,
                          const LoopContext& ctx, const std::function<Stmt(const Stmt&)>& lower_consumer) {
  const std::vector<Unit>& units = schedule.units;
  const std::vector<size_t>& pos = schedule.pos;
  const std::map<BufKey, Staged>& staged = staging.staged;
  const auto& tma = staging.tma;
  const std::vector<TmaGroup>& groups = staging.groups;
  const std::set<BufKey>& tma_tiles = staging.tma_tiles;
  const bool ws = ws_plan.on, rounds = ws_plan.rounds, any_async = schedule.any_async;
  const std::vector<size_t>& last_reader = ws_plan.last_reader;
  const std::vector<bool>& generic = ws_plan.generic;
  const int64_t max_stage = schedule.max_stage;
  // With rounds, versions and mbarrier phases follow the pipeline's iterations
  // counted over all rounds so far: `base` (the counter's value at this round's
  // start) plus the iteration within the round.
  Var base("pipe_base", dtype::Int32);
  auto overall = [&](const Expr& iter) { return rounds ? add(cast(iter.dtype(), Expr(base)), iter) : iter; };
  // Waits: at the top of a step, the copies a reader d >= 1 steps later needs
  // may leave the d - 1 newer commit groups in flight; a reader in the same step
  // as its copy waits for everything right before it.
  // (TMA tiles are waited for on their mbarriers instead, right before each reader.)
  int64_t top_wait = -1;
  std::vector<bool> wait_before(units.size(), false);
  bool any_cp_async = staged.size() > tma_tiles.size();
  for (const Unit& c : units) {
    if (c.producer) continue;
    for (const Unit& p : units) {
      if (!p.producer) continue;
      bool reads = false;
      for (const auto& kv : staged)
        reads = reads || (!tma_tiles.count(kv.first) && p.writes.count(kv.first) && c.touches.count(kv.first));
      if (!reads) continue;
      int64_t d = c.stage - p.stage;
      if (d == 0)
        wait_before[&c - units.data()] = true;
      else
        top_wait = top_wait < 0 ? d - 1 : std::min(top_wait, d - 1);
    }
  }
  const Var& k = op->var;
  Expr n = op->extent, lo = op->min;
  std::vector<size_t> emit_order(units.size());
  for (size_t i = 0; i < units.size(); ++i) emit_order[pos[i]] = i;
  Stmt commit = ctx.cp_async ? evaluate(call_extern(dtype::Void, kCpAsyncCommitCall, {})) : Stmt(seq({}));
  auto wait = [&](int64_t count) {
    return ctx.cp_async ? evaluate(call_extern(dtype::Void, device_call_name(kCpAsyncWaitCall, {count}), {}))
                        : Stmt(seq({}));
  };
  // The mbarrier of iteration `iter` in group g: one per version, its phase
  // parity flipping each time the version comes round again.
  auto bar = [&](const TmaGroup& g, const Expr& iter) {
    return address_of(g.bars, {floormod(iter, int_imm(g.versions))});
  };
  auto parity = [&](const TmaGroup& g, const Expr& iter) {
    return floormod(floordiv(iter, int_imm(g.versions)), int_imm(2));
  };
  Expr elected;  // the thread that arms the mbarriers and issues the TMA copies
  if (!tma.empty()) {
    TL_ICHECK(ctx.launch, "a TMA pipeline outside a T.Kernel");
    elected = eq(thread_rank(ctx.launch), int_imm(0));
  }
  // The consumers' release of group g's version of iteration `done` (counted over
  // the rounds): a multicast tile goes back to every block that writes into it.
  auto release_of = [&](size_t g, const Expr& done) {
    std::string arrive = groups[g].per_warpgroup ? str_cat("tl::mbarrier_arrive_warpgroup<", groups[g].ctas, ">")
                         : groups[g].ctas > 1    ? str_cat("tl::mbarrier_arrive_warp_cluster<", groups[g].ctas, ">")
                                                 : std::string("tl::mbarrier_arrive_warp");
    Stmt release = evaluate(
        call_extern(dtype::Void, arrive, {address_of(groups[g].empty, {floormod(done, int_imm(groups[g].versions))})}));
    return generic[g] ? seq({evaluate(call_extern(dtype::Void, "tl::fence_proxy_async", {})), release}) : release;
  };
  // One step of the schedule. `last` is the iteration of the max-stage units
  // (unit u runs iteration last + max_stage - stage[u]); `run(u)` is its guard,
  // or null when the unit is skipped in this step.
  auto step = [&](const Expr& last, const std::function<Expr(const Unit&)>& run, bool sync_top) {
    std::vector<Stmt> out;
    if (ws) sync_top = false;  // the empty mbarriers order the reuse of versions
    if (!staged.empty() && sync_top) {
      if (top_wait >= 0) out.push_back(wait(top_wait));
      out.push_back(barrier(BarrierKind::Threads));
    }
    bool committed = false;
    std::set<size_t> armed;                       // groups whose mbarrier this step has armed
    std::set<std::pair<size_t, int64_t>> waited;  // (group, stage) a reader of this step waited for
    // wgmma gemms of this step issued without a wait (in_step_async), oldest first:
    // each call waits for all but its own group (wgmma_wait<1>), or all but its n - 1
    // predecessors' and its own for the n K slices of an unrolled loop
    // (expand_sliced_gemms: wgmma_wait<n>), so an unguarded issue completes the rest
    // before it; wgmma_wait<0> completes them all. The releases of their tiles to the
    // producer go out once they are complete.
    struct InFlight {
      std::set<BufKey> regs;    // accumulator, and A when in registers: not to be touched
      std::set<BufKey> shared;  // operands in unstaged shared tiles: not to be written
      std::vector<Stmt> releases;
    };
    std::vector<InFlight> in_flight;
    auto complete = [&](std::vector<Stmt>& to, bool wait_all, size_t keep) {
      if (wait_all) to.push_back(evaluate(call_extern(dtype::Void, device_call_name(kWgmmaWaitCall, {0}), {})));
      keep = std::min(keep, in_flight.size());
      for (size_t f = 0; f + keep < in_flight.size(); ++f)
        for (const Stmt& r : in_flight[f].releases) to.push_back(r);
      in_flight.erase(in_flight.begin(), in_flight.end() - std::ptrdiff_t(keep));
    };
    auto hazard = [&](const Stmt& s, const TileOpNode* issuing) {
      std::set<BufKey> t = touched(s), w = written(s);
      for (const InFlight& f : in_flight) {
        for (BufKey r : f.regs) {
          if (!t.count(r)) continue;
          // Another wgmma into the same accumulator queues behind the pending one.
          if (issuing && issuing->regions[2].buffer.get() == r) continue;
          return true;
        }
        // (Staged tiles have a version per step in flight; the rest must wait.)
        for (BufKey b : f.shared)
          if (w.count(b)) return true;
      }
      return false;
    };
    for (size_t i : emit_order) {
      const Unit& u = units[i];
      if (ws && u.producer) continue;  // the producer warpgroup issues it
      if (!u.producer && !committed && any_cp_async) {
        out.push_back(commit);
        committed = true;
      }
      Expr guard = run(u);
      if (!guard.defined()) continue;
      Expr iter = add(last, int_imm(max_stage - u.stage));
      std::vector<Stmt> body;
      if (wait_before[i]) {
        body.push_back(wait(0));
        body.push_back(barrier(BarrierKind::Threads));
      }
      for (size_t g = 0; g < groups.size() && !u.producer; ++g) {
        bool reads = false;
        for (BufKey t : groups[g].tiles) reads = reads || (tma_tiles.count(t) && u.touches.count(t));
        if (!reads || !waited.insert({g, u.stage}).second) continue;
        body.push_back(unplanned(evaluate(call_extern(
            dtype::Void, "tl::mbarrier_wait", {bar(groups[g], overall(iter)), parity(groups[g], overall(iter))}))));
      }
      std::map<const VarNode*, Expr> at{{k.node(), add(lo, iter)}};
      std::vector<Stmt> issue;  // this unit's TMA copies, by the elected thread
      const bool always = as_const_int(guard) == std::optional<int64_t>(1);
      std::vector<size_t> issued_here;  // in_flight entries this unit issued
      for (const auto& [s, pending] : expand_sliced_gemms(u, *ctx.wgmma_acc)) {
        // Under a guard (prologue and tail steps) the gemm waits for itself: ptxas
        // serializes every wgmma of the kernel (C7515) when a group may or may not
        // have been issued before a wait.
        const bool async_issue = always && in_step_async(s, u, *ctx.wgmma_acc);
        if (!in_flight.empty() && hazard(s, async_issue ? s.as<TileOpNode>() : nullptr)) {
          // Under a guard the wait goes before the unit (waiting early is safe).
          complete(always ? body : out, true, 0);
          issued_here.clear();
        }
        if (auto it = tma.find(s.as<TileOpNode>()); u.producer && it != tma.end()) {
          const auto& [tc, g] = it->second;
          if (armed.insert(g).second)
            issue.push_back(evaluate(call_extern(dtype::Void, "tl::mbarrier_arrive_expect_tx",
                                                 {bar(groups[g], iter), int_imm(groups[g].bytes)})));
          Stmt t = at_version(substitute(s, at), staged, iter);
          issue.push_back(tma_loads(t.as<TileOpNode>(), tc, bar(groups[g], iter)));
          continue;
        }
        Stmt t = s;
        if (u.producer && ctx.cp_async) {
          auto* c = s.as<TileOpNode>();
          Attrs attrs = c->attrs;
          attrs[kAsyncCopyAttr] = int64_t(1);
          t = tile_op(c->op, c->regions, c->args, attrs, c->span);
        }
        if (u.async || async_issue) {
          auto* g = s.as<TileOpNode>();
          Attrs attrs = g->attrs;
          attrs[kWgmmaAsyncAttr] = pending;
          t = tile_op(g->op, g->regions, g->args, attrs, g->span);
        }
        t = at_version(substitute(t, at), staged, overall(iter));
        body.push_back(u.producer ? t : lower_consumer(t));
        if (async_issue) {
          // Its wgmma_wait<pending> completed every group but the newest pending - 1
          // before it, when it ran for sure.
          if (always) {
            size_t before = in_flight.size();
            complete(body, false, size_t(pending - 1));
            size_t done = before - in_flight.size();
            std::vector<size_t> left;
            for (size_t x : issued_here)
              if (x >= done) left.push_back(x - done);
            issued_here = left;
          }
          auto* g = s.as<TileOpNode>();
          InFlight f;
          f.regs.insert(g->regions[2].buffer.get());
          for (int r = 0; r < 2; ++r) {
            const Buffer& x = g->regions[r].buffer;
            if (!is_shared(x))
              f.regs.insert(x.get());
            else if (!staged.count(x.get()))
              f.shared.insert(x.get());
          }
          in_flight.push_back(f);
          issued_here.push_back(in_flight.size() - 1);
        } else if (u.async && always) {
          complete(body, false, 0);  // its wgmma_wait<1> did the same
          issued_here.clear();
        }
      }
      if (!issue.empty()) body.insert(body.begin(), unplanned(if_then_else(elected, seq(issue))));
      for (size_t g = 0; g < groups.size() && ws; ++g) {
        if (last_reader[g] != i) continue;
        // Every consumer warp arrives. A wgmma left in flight still reads its
        // tiles: the version it is done with is the previous iteration's.
        Stmt release = release_of(g, u.async ? sub(overall(iter), int_imm(1)) : overall(iter));
        release = unplanned(u.async ? if_then_else(ge(iter, int_imm(1)), release) : release);
        // A gemm of this unit still in flight releases the tiles once complete.
        if (!issued_here.empty()) {
          in_flight[issued_here.back()].releases.push_back(always ? release : unplanned(if_then_else(guard, release)));
          continue;
        }
        body.push_back(release);
      }
      Stmt b = seq(body);
      out.push_back(always ? b : if_then_else(guard, b));
    }
    if (!in_flight.empty()) complete(out, true, 0);
    if (!committed && any_cp_async) out.push_back(commit);
    return seq(out);
  };
  std::vector<Stmt> out;
  // Prologue: steps 0 .. max_stage - 1; unit u runs iteration t - stage[u] when
  // that is in [0, n). Until the first reader has run, the steps only issue copies
  // into fresh versions: nothing to wait for.
  int64_t first_reader = max_stage;
  for (const Unit& u : units)
    if (!u.producer) first_reader = std::min(first_reader, u.stage);
  for (int64_t t = 0; t < max_stage; ++t) {
    out.push_back(step(
        int_imm(t - max_stage),
        [&](const Unit& u) -> Expr {
          if (t < u.stage) return {};
          return lt(int_imm(t - u.stage), n);
        },
        t >= first_reader));
  }
  // Steady state: every unit runs. Then the last max_stage steps, where the
  // early stages have run out of iterations. (Two loops rather than one
  // guarded one, so that index ranges are the loop's and bounds checks fold.)
  Attrs ann = op->annotations;
  ann.erase("num_stages");
  ann.erase("order");
  ann.erase("stage");
  ann.erase("group");
  ann[kPipelinedAttr] = max_stage + 1;
  Expr steady = max(sub(n, make_const(n.dtype(), max_stage)), make_const(n.dtype(), 0));
  Var it(k.name(), k.dtype());
  out.push_back(for_loop(it, int_imm(0), steady, ForKind::Serial,
                         step(
                             Expr(it), [](const Unit&) { return int_imm(1); }, true),
                         ann, op->span));
  Var it2(k.name(), k.dtype());
  Stmt tail = step(
      Expr(it2),
      [&](const Unit& u) -> Expr {
        if (u.stage == 0 && max_stage > 0) return {};  // its iterations all ran already
        if (u.stage == max_stage) return int_imm(1);
        return lt(add(Expr(it2), int_imm(max_stage - u.stage)), n);
      },
      true);
  out.push_back(for_loop(it2, steady, sub(n, steady), ForKind::Serial, tail, ann, op->span));
  // Drain: no copy and no wgmma may be in flight when the tiles are reused or freed
  // or the accumulators read.
  if (any_async) out.push_back(evaluate(call_extern(dtype::Void, device_call_name(kWgmmaWaitCall, {0}), {})));
  if (ctx.cp_async && any_cp_async) out.push_back(wait(0));
  EmittedLoop done;
  if (rounds) {
    // A gemm kept in flight released its tiles one iteration late: the round's last
    // version goes back to the producer now, for the next round's copies.
    for (size_t g = 0; g < groups.size(); ++g)
      if (last_reader[g] < units.size() && units[last_reader[g]].async)
        out.push_back(unplanned(
            if_then_else(ge(n, make_const(n.dtype(), 1)), release_of(g, overall(sub(n, make_const(n.dtype(), 1)))))));
    Buffer count = Buffer::make("pipe_count", dtype::Int32, {int_imm(1)}, Scope::LocalVar);
    out.push_back(buffer_store(count, add(Expr(base), cast(dtype::Int32, n)), {int_imm(0)}));
    Stmt consumer = let_stmt(base, buffer_load(count, {int_imm(0)}), seq(out));
    done.stmt = warp_specialized(consumer, op, schedule, staging, ws_plan, ctx, count, done.rounds);
    return done;
  }
  if (ws) {
    done.stmt = warp_specialized(seq(out), op, schedule, staging, ws_plan, ctx, Buffer(), done.rounds);
    return done;
  }
  done.stmt = with_mbarriers(seq(out), groups, elected);
  return done;
}

}  // namespace tl::pipeliner
