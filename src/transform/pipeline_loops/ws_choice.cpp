// Phase 3 of pipeline_loops (plan.h): whether a producer warpgroup takes a pipeline's
// copies over (warp specialization, docs/design/hopper.md), how its consumers release
// each version to it, and which tiles a thread block cluster multicasts.
#include <functional>

#include "ir/device_calls.h"
#include "ir/visitor.h"
#include "ops/extent_util.h"
#include "ops/tile_op.h"
#include "transform/pipeline_loops/plan.h"

namespace tl::pipeliner {
namespace {

// Whether `e` loads from a buffer.
bool reads_memory(const Expr& e) {
  bool found = false;
  for_each_expr(evaluate(e), [&](const Expr& x) { found = found || x.as<BufferLoadNode>(); });
  return found;
}

// Whether `s` reads a thread's registers or a fragment (a T.alloc_var that the kernel
// sets before the pipeline): the producer warpgroup runs none of the consumers' code, so
// copies whose indices read one stay with the consumers.
bool reads_thread_values(const Stmt& s) {
  bool found = false;
  for_each_expr(s, [&](const Expr& x) {
    auto* l = x.as<BufferLoadNode>();
    found = found || (l && (thread_private(l->buffer) || l->buffer->scope == Scope::Fragment));
  });
  return found;
}

// Whether `s`, outside tile ops (whose lowerings read the staged tiles as the
// pipeline plans), hands the address of one of `tiles` to a device function.
bool passes_tile_addresses(const Stmt& s, const std::set<BufKey>& tiles) {
  struct Find : IRVisitor {
    const std::set<BufKey>* tiles;
    bool found = false;
    using IRVisitor::visit;
    void visit(const TileOpNode*) override {}
    void visit(const CallNode* op) override {
      if (op->op == Intrinsic::Extern)
        for (const Expr& a : op->args) {
          auto* addr = a.as<CallNode>();
          auto* l = addr && addr->op == Intrinsic::AddressOf ? addr->args[0].as<BufferLoadNode>() : nullptr;
          found = found || (l && tiles->count(l->buffer.get()));
        }
      IRVisitor::visit(op);
    }
  } f;
  f.tiles = &tiles;
  f.visit(s);
  return f.found;
}

// `s` reads no variable bound inside the kernel other than `loop` and the persistent
// loop's (the block and thread indices and the function's parameters are bound outside
// its body).
bool only_block_vars(const Stmt& s, const Var& loop, const LoopContext& ctx) {
  struct Bound : IRVisitor {
    std::set<const VarNode*> vars;
    using IRVisitor::visit;
    void visit(const LetStmtNode* l) override {
      vars.insert(l->var.node());
      IRVisitor::visit(l);
    }
    void visit(const ForNode* f) override {
      vars.insert(f->var.node());
      IRVisitor::visit(f);
    }
  } bound;
  bound.visit(ctx.launch->body);
  struct Uses : IRVisitor {
    std::set<const VarNode*> vars;
    using IRVisitor::visit;
    void visit(const VarNode* v) override { vars.insert(v); }
  } uses;
  uses.visit(s);
  const VarNode* round = ctx.ws_outer ? ctx.ws_outer->var.node() : nullptr;
  for (const VarNode* v : uses.vars)
    if (v != loop.node() && v != round && bound.vars.count(v)) return false;
  return true;
}

// Thread block clusters: a producer copy whose source region does not depend on
// some of the block indices the cluster spans reads the same box in the blocks of
// the cluster that differ only along those dimensions (all C blocks when it depends
// on none; a row or a column of a 2-D cluster otherwise). Each of those G blocks
// then loads a G-th of the tile's rows and multicasts it to the G: the tile costs
// one read of L2 per G blocks instead of G. Every block's full mbarrier still
// expects the whole tile; its versions are released to all C blocks of the cluster
// (empty mbarriers counting the consumer warps of the cluster), which covers every
// block that may write into it. Warp-specialized pipelines only, 2-D tiles whose
// slices keep TMA's alignment (whole swizzle patterns), and no T.use_swizzle (it
// remaps the block indices).
void plan_multicast(std::map<const TileOpNode*, std::pair<TmaCopy, size_t>>& tma, std::vector<TmaGroup>& groups,
                    const LoopContext& ctx) {
  const KernelLaunchNode* launch = ctx.launch;
  const int64_t ctas = launch->cluster_size();
  if (ctas == 1 || !ctx.multicast || calls_device(launch->body, kUseSwizzleCall)) return;
  std::map<const VarNode*, size_t> spanned;  // block index -> its cluster dimension
  for (size_t d = 0; d < launch->cluster.size() && d < launch->block_vars.size(); ++d)
    if (launch->cluster[d] > 1) spanned[launch->block_vars[d].node()] = d;
  for (auto& [copy, tg] : tma) {
    TmaCopy& tc = tg.first;
    const BufferRegion& src = copy->regions[0];
    const Buffer& tile = copy->regions[1].buffer;
    int along = 0;  // the cluster dimensions the box is the same along
    for (const auto& [v, d] : spanned) along |= 1 << d;
    for (const Range& r : src.ranges)
      for_each_expr(evaluate(substitute(r.min, *ctx.outer_lets)), [&](const Expr& e) {
        auto* v = e.as<VarNode>();
        if (v && spanned.count(v)) along &= ~(1 << spanned.at(v));
      });
    int64_t sharing = 1;
    for (size_t d = 0; d < launch->cluster.size(); ++d)
      if (along >> d & 1) sharing *= launch->cluster[d];
    if (sharing == 1 || tile->shape.size() != 2) continue;
    int64_t rows = *as_const_int(tile->shape[0]), cols = *as_const_int(tile->shape[1]);
    int64_t slice = rows / sharing, row_bytes = cols * tile->dtype.bytes();
    if (rows % sharing != 0 || (tc.layout ? slice % 8 != 0 : (slice * row_bytes) % 128 != 0)) continue;
    int row_dim = -1;  // the source dimension of the tile's rows: its first of extent > 1
    for (size_t d = 0; d < src.ranges.size() && row_dim < 0; ++d)
      if (!is_const_one(src.ranges[d].extent)) row_dim = int(d);
    if (row_dim < 0 || row_dim + 1 == int(src.ranges.size())) continue;
    auto* map = tc.map.as<CallNode>();
    std::vector<Expr> args(map->args.begin() + 1, map->args.end());  // param, swizzle, dynamic, box innermost first
    args[3 + (src.ranges.size() - 1 - size_t(row_dim))] = int_imm(slice);
    tc.ctas = sharing;
    tc.slice_rows = slice;
    tc.row_dim = row_dim;
    tc.slice_map = call_extern(dtype::Handle, kTmaMapCall, args);
    if (sharing == ctas) {  // the whole cluster: slice by rank, to every block
      tc.slice = call_extern(dtype::Int32, "tl::block_rank_in_cluster", {});
      tc.mask = int_imm((int64_t(1) << ctas) - 1);
    } else {
      std::vector<int64_t> dims(launch->cluster.begin(), launch->cluster.end());
      dims.resize(3, 1);
      std::string shape = str_cat("<", dims[0], ", ", dims[1], ", ", dims[2], ", ", along, ">");
      tc.slice = call_extern(dtype::Int32, "tl::cluster_share_rank" + shape, {});
      tc.mask = call_extern(dtype::Int32, "tl::cluster_share_mask" + shape, {});
    }
    groups[tg.second].ctas = ctas;
  }
}
}  // namespace

// The pipelined loop a kernel's producer warpgroup may take over: the first
// T.Pipelined loop at the top of the kernel body (not inside another loop or a
// condition), or directly inside a persistent loop there (T.Persistent's loop over
// tiles, through conditions and bindings only), in a kernel of whole warpgroups
// along threadIdx.x with room for one more, that places no warpgroups itself
// (T.ws). Returns the loop and the persistent loop around it, if any.
std::pair<const ForNode*, const ForNode*> ws_candidate(const KernelLaunchNode* launch) {
  if (launch->threads.size() != 1 || launch->threads[0] % kWarpGroupThreads != 0 ||
      launch->threads[0] + kWarpGroupThreads > kMaxThreadsPerBlock)
    return {};
  if (any_stmt(launch->body, [](const Stmt& st) {
        auto* a = st.as<AttrNode>();
        return a && a->key == kWarpGroupAttr;
      }))
    return {};
  // The first pipelined loop under `root` through sequences, allocations, bindings
  // and attributes; with `inside` (a persistent loop's body) through conditions too;
  // with `outer` set, also in the body of the first persistent loop met.
  const ForNode* outer = nullptr;
  std::function<const ForNode*(const Stmt&, bool)> find = [&](const Stmt& root, bool inside) -> const ForNode* {
    std::vector<Stmt> todo{root};
    while (!todo.empty()) {
      Stmt t = todo.back();
      todo.pop_back();
      if (auto* f = t.as<ForNode>()) {
        if (f->annotations.count("num_stages") || f->annotations.count("order") || f->annotations.count("stage"))
          return f;
        if (!inside && !outer && f->annotations.count(kPersistentLoopAttr)) {
          if (const ForNode* inner = find(f->body, true)) {
            outer = f;
            return inner;
          }
        }
      } else if (auto* q = t.as<SeqNode>()) {
        for (size_t k = q->seq.size(); k-- > 0;) todo.push_back(q->seq[k]);
      } else if (auto* a = t.as<AllocateNode>()) {
        todo.push_back(a->body);
      } else if (auto* l = t.as<LetStmtNode>()) {
        todo.push_back(l->body);
      } else if (auto* at = t.as<AttrNode>()) {
        todo.push_back(at->body);
      } else if (auto* c = t.as<IfThenElseNode>(); c && inside) {
        if (c->else_case.defined()) todo.push_back(c->else_case);
        todo.push_back(c->then_case);
      }
    }
    return nullptr;
  };
  const ForNode* loop = find(launch->body, false);
  return {loop, loop ? outer : nullptr};
}

WsPlan plan_warp_specialization(const ForNode* op, const Schedule& schedule, Staging& staging, const LoopContext& ctx) {
  const std::vector<Unit>& units = schedule.units;
  const std::vector<size_t>& pos = schedule.pos;
  std::vector<TmaGroup>& groups = staging.groups;
  const std::set<BufKey>& tma_tiles = staging.tma_tiles;
  const std::map<const VarNode*, Expr>& outer_lets = *ctx.outer_lets;
  // Warp specialization: every producer copy is a TMA copy the producer warpgroup
  // can issue on its own (its indices use only the loop, the block and no register).
  bool ws = ctx.ws_candidate && !staging.tma.empty() && tma_tiles.size() == staging.staged.size();
  for (const Unit& p : units)
    for (const Stmt& s : p.stmts)
      ws = ws && (!p.producer || (only_block_vars(substitute(s, outer_lets), op->var, ctx) &&
                                  !reads_thread_values(substitute(s, outer_lets))));
  // Consumers that hand a TMA tile's address to a device function of their own
  // (tilelang.intrinsics' tl::ldmatrix_frag feeding mma.sync) keep the TMA pipeline
  // without a producer warpgroup: such register-heavy consumers fit two blocks per
  // SM, and the extra warpgroup halves that (the emitter's GEMM on the H200: 110
  // against 100 TFLOP/s at 4096^3; docs/design/hopper.md, "The consumers' release").
  for (const Unit& c : units)
    for (const Stmt& s : c.stmts) ws = ws && (c.producer || !passes_tile_addresses(s, tma_tiles));
  Expr ws_min = substitute(op->min, outer_lets), ws_extent = substitute(op->extent, outer_lets);
  ws = ws && only_block_vars(evaluate(ws_extent), op->var, ctx) && only_block_vars(evaluate(ws_min), op->var, ctx) &&
       !reads_registers(ws_extent) && !reads_registers(ws_min);  // the producers never set those
  // Inside a persistent loop the producer runs the rounds too: their bounds and the
  // conditions on the way to this loop must be its to compute (no memory reads).
  bool rounds = false;
  if (ws && ctx.ws_outer) {
    ws = only_block_vars(evaluate(substitute(ctx.ws_outer->extent, outer_lets)), op->var, ctx) &&
         only_block_vars(evaluate(substitute(ctx.ws_outer->min, outer_lets)), op->var, ctx);
    for (const PathStep& p : *ctx.ws_path) {
      Expr e = substitute(p.cond.defined() ? p.cond : p.value, outer_lets);
      ws = ws && only_block_vars(evaluate(e), op->var, ctx) && !reads_memory(e);
    }
    rounds = ws;
  }
  if (ws && !rounds) plan_multicast(staging.tma, groups, ctx);
  if (ws)
    for (TmaGroup& g : groups)
      g.empty = Buffer::make(str_cat(g.bars->name.substr(0, g.bars->name.size() - 5), "_empty"), dtype::UInt64,
                             {int_imm(g.versions)}, Scope::Shared);
  // Warp-specialized: the last reader of each group's tiles (latest stage, then
  // position) releases their version to the producer once it has read them.
  WsPlan plan;
  plan.on = ws;
  plan.rounds = rounds;
  plan.min = ws_min;
  plan.extent = ws_extent;
  std::vector<size_t>& last_reader = plan.last_reader;
  last_reader.assign(groups.size(), units.size());
  for (size_t g = 0; g < groups.size() && ws; ++g)
    for (size_t c = 0; c < units.size(); ++c) {
      bool reads = false;
      for (BufKey t : groups[g].tiles) reads = reads || units[c].touches.count(t);
      if (units[c].producer || !reads) continue;
      size_t& r = last_reader[g];
      if (r == units.size() || std::make_pair(units[r].stage, pos[r]) < std::make_pair(units[c].stage, pos[c])) r = c;
    }
  // Consumers that read a group's tiles other than through wgmma (ldmatrix, element
  // loads, register gemms) read them through the generic proxy, and the producer's
  // next TMA copy into the version writes through the async proxy. The release
  // alone does not order the two: on the H200 an arrive overtook the warp's
  // bank-conflicted ldmatrix reads still queued, the copy landed first, and a third
  // of C came out wrong (docs/design/hopper.md, "The consumers' release"). Such
  // releases fence first (fence.proxy.async waits for the warp's shared accesses).
  std::vector<bool>& generic = plan.generic;
  generic.assign(groups.size(), false);
  for (const Unit& c : units)
    for (const Stmt& s : c.stmts) {
      auto* gemm = s.as<TileOpNode>();
      if (!ws || c.producer ||
          (gemm && gemm->op == TileOpKind::Gemm && ctx.wgmma_acc->count(gemm->regions[2].buffer.get())))
        continue;
      std::set<BufKey> t = touched(s);  // once per statement, for every group
      for (size_t g = 0; g < groups.size(); ++g)
        for (BufKey x : groups[g].tiles) generic[g] = generic[g] || t.count(x);
    }
  for (size_t g = 0; g < groups.size(); ++g)
    groups[g].per_warpgroup = ws && !generic[g] && ctx.launch->threads[0] % kWarpGroupThreads == 0;
  return plan;
}
}  // namespace tl::pipeliner
