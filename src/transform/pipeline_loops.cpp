// T.Pipelined loops as multi-stage software pipelines (docs/design/cuda_lowering.md):
// the schedule of units and steps, versions of the staged tiles, and the producer
// copies as cp.async (waits counting commit groups) or, on sm_90, TMA (waits on an
// mbarrier per version, docs/design/hopper.md).
#include "transform/pipeline_loops.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "arith/simplify.h"
#include "ir/visitor.h"
#include "ops/extent_util.h"
#include "ops/tile_op.h"
#include "transform/lower_explicit_hopper.h"
#include "transform/lower_fragments.h"
#include "transform/lower_tile_ops.h"

namespace tl {
namespace {

using BufKey = const BufferNode*;

// A producer: T.copy from a global tensor into a whole shared tile.
const TileOpNode* producer(const Stmt& s) {
  auto* op = s.as<TileOpNode>();
  if (!op || op->op != TileOpKind::Copy) return nullptr;
  if (op->regions[0].buffer->scope != Scope::Global || !is_shared(op->regions[1].buffer)) return nullptr;
  return op;
}

// A staged tile: the buffer with a leading version dimension, and how many versions.
struct Staged {
  Buffer buffer;
  int64_t versions;
};

// A producer copy that TMA does: the map it reads through, and the boxes its tile
// splits into (one, or one per column block of a wgmma tile wider than its swizzle).
struct TmaCopy {
  Expr map;  // the kTmaMapCall
  int64_t blocks = 1;
  int64_t block_cols = 0;  // the tile's last-dim elements per box
  int64_t bytes = 0;       // of the whole tile: what its loads bring to the mbarrier
  std::shared_ptr<const Layout> layout;
  // Multicast in a thread block cluster (plan_multicast): the `ctas` blocks that
  // share the tile each load `slice_rows` rows of it (global dimension `row_dim`),
  // slice `slice` (the block's rank among them), through `slice_map` and multicast
  // them to the blocks of `mask`; `ctas` is 0 when the copy is the block's own.
  int64_t ctas = 0, slice_rows = 0;
  int row_dim = 0;
  Expr slice_map, slice, mask;
};

// The TMA copies of one producer stage whose tiles have the same number of versions
// and the same first reader: they complete on one mbarrier per version (`bars`), armed once per step.
struct TmaGroup {
  int64_t stage = 0, versions = 0;
  size_t reader = 0;  // the unit that first reads the group's tiles
  Buffer bars;
  Buffer empty;      // warp-specialized loops: the consumers' releases, one per version
  int64_t ctas = 1;  // blocks whose consumers release each version (a tile of the group is multicast)
  // Warp-specialized loops whose consumers read the group's tiles only through wgmma,
  // in whole warpgroups: one release per warpgroup (tl::mbarrier_arrive_warpgroup).
  bool per_warpgroup = false;
  int64_t bytes = 0;
  std::set<BufKey> tiles;  // the original (unstaged) tiles
};

// The statements TMA bookkeeping becomes are ordered by the mbarriers, not by
// block barriers: the attribute keeps plan_barriers away from them.
Stmt unplanned(Stmt s) {
  return attr_stmt(kAsyncCopyAttr, int64_t(1), std::move(s));
}

Expr address_of(const Buffer& b, std::vector<Expr> idx) {
  return call(Intrinsic::AddressOf, {buffer_load(b, std::move(idx))});
}

// Every use of a staged tile gets the version of iteration `iter` in front.
class AddStage : public IRMutator {
 public:
  AddStage(const std::map<BufKey, Staged>& staged, Expr iter) : staged_(staged), iter_(std::move(iter)) {}
  using IRMutator::mutate;

  Buffer mutate_buffer(const Buffer& b) override {
    auto it = staged_.find(b.get());
    return it == staged_.end() ? b : it->second.buffer;
  }

 protected:
  using IRMutator::visit;
  Expr version(const Staged& st) const { return floormod(iter_, int_imm(st.versions)); }
  Expr visit(const BufferLoadNode* op, const Expr& self) override {
    auto it = staged_.find(op->buffer.get());
    if (it == staged_.end()) return IRMutator::visit(op, self);
    std::vector<Expr> idx{version(it->second)};
    for (const Expr& e : op->indices) idx.push_back(mutate(e));
    return buffer_load(it->second.buffer, idx, op->span);
  }
  Stmt visit(const BufferStoreNode* op, const Stmt& self) override {
    auto it = staged_.find(op->buffer.get());
    if (it == staged_.end()) return IRMutator::visit(op, self);
    std::vector<Expr> idx{version(it->second)};
    for (const Expr& e : op->indices) idx.push_back(mutate(e));
    return buffer_store(it->second.buffer, mutate(op->value), idx, op->span);
  }
  Stmt visit(const TileOpNode* op, const Stmt& self) override {
    std::vector<BufferRegion> regions;
    for (const BufferRegion& r : op->regions) {
      auto it = staged_.find(r.buffer.get());
      if (it == staged_.end()) {
        regions.push_back(mutate_region(r));
        continue;
      }
      BufferRegion nr{it->second.buffer, {Range{version(it->second), int_imm(1)}}};
      for (const Range& rg : r.ranges) nr.ranges.push_back(Range{mutate(rg.min), mutate(rg.extent)});
      regions.push_back(nr);
    }
    std::vector<Expr> args;
    for (const Expr& a : op->args) args.push_back(mutate(a));
    return tile_op(op->op, regions, args, op->attrs, op->span);
  }

 private:
  const std::map<BufKey, Staged>& staged_;
  Expr iter_;
};

// The buffers a statement writes (stores, and the region each tile op writes by the
// op table), or with `all`, every buffer it reads or writes.
std::set<BufKey> buffers_of(const Stmt& s, bool all) {
  struct Walk : IRVisitor {
    bool all = false;
    std::set<BufKey> out;
    using IRVisitor::visit;
    void visit(const BufferLoadNode* op) override {
      if (all) out.insert(op->buffer.get());
      IRVisitor::visit(op);
    }
    void visit(const BufferStoreNode* op) override {
      out.insert(op->buffer.get());
      IRVisitor::visit(op);
    }
    void visit(const TileOpNode* op) override {
      if (all) {
        for (const BufferRegion& r : op->regions) out.insert(r.buffer.get());
      } else {
        // The region the op table names as written (tile_ops.def): a copy's
        // destination, a gemm's C (T.gemm_sp's metadata, read, follows it), an
        // atomic's destination (region 0, before the value it adds); none for
        // T.print / T.device_assert.
        int w = op_info(op->op).written_region;
        if (w >= 0 && size_t(w) < op->regions.size()) out.insert(op->regions[size_t(w)].buffer.get());
      }
      IRVisitor::visit(op);
    }
  } w;
  w.all = all;
  w.visit(s);
  return w.out;
}
std::set<BufKey> written(const Stmt& s) {
  return buffers_of(s, false);
}
std::set<BufKey> touched(const Stmt& s) {
  return buffers_of(s, true);
}

// `for i, k in T.Parallel(M, K): S[i, k] = G[r + i, c + k]`, a whole shared tile S
// loaded element by element from a global tensor (as TileLang's kernels often write
// their tile loads), is T.copy(G[r, c], S): the same elements, and out-of-bounds ones
// read as zeros either way. In a pipelined loop's body it becomes that copy, so that
// the pipeline issues it ahead as a producer (cp.async or TMA); as a loop it would be
// a plain load at the top of every step. An undefined Stmt when `s` is not such a nest.
Stmt parallel_copy_as_tile_op(const Stmt& s) {
  std::vector<const ForNode*> nest;
  const Stmt* body = &s;
  while (auto* f = body->as<ForNode>()) {
    if (f->for_kind != ForKind::Parallel || !f->annotations.empty()) return {};
    nest.push_back(f);
    body = &f->body;
  }
  auto* store = body->as<BufferStoreNode>();
  auto* load = store ? store->value.as<BufferLoadNode>() : nullptr;
  if (nest.empty() || !load || !is_shared(store->buffer) || load->buffer->scope != Scope::Global ||
      load->buffer->dtype != store->buffer->dtype)
    return {};
  const Buffer &dst = store->buffer, &src = load->buffer;
  const size_t n = nest.size(), m = load->indices.size();
  if (store->indices.size() != n || m < n) return {};
  std::set<const VarNode*> vars;
  for (const ForNode* f : nest) vars.insert(f->var.node());
  auto uses_loop_var = [&](const Expr& e) {
    bool found = false;
    for_each_expr(e, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>(); v && vars.count(v)) found = true;
    });
    return found;
  };
  CopyOperand to{dst, {}, {}}, from{src, {}, {}};
  for (size_t d = 0; d < n; ++d) {  // S indexed by the loop variables in order, whole
    auto* v = store->indices[d].as<VarNode>();
    auto mn = as_const_int(nest[d]->min), ext = as_const_int(nest[d]->extent), dim = as_const_int(dst->shape[d]);
    if (v != nest[d]->var.node() || !mn || *mn != 0 || !ext || !dim || *ext != *dim) return {};
    to.mins.push_back(int_imm(0));
    to.extents.push_back(dst->shape[d]);
  }
  for (size_t d = 0; d < m; ++d) {  // G: leading indices fixed, the last n a base plus one variable each
    const Expr& index = load->indices[d];
    if (d < m - n) {
      if (uses_loop_var(index)) return {};
      from.mins.push_back(index);
      from.extents.push_back(int_imm(1));
      continue;
    }
    const ForNode* f = nest[d - (m - n)];
    Expr base = simplify(sub(index, f->var));
    if (uses_loop_var(base)) return {};
    from.mins.push_back(base);
    from.extents.push_back(f->extent);
  }
  return make_copy(from, to, {}, s.span());
}

// The loop body as a flat list of statements; names bound inside it
// (`k = (bz * tiles + ko) * block_K`) are inlined, so that the copies under
// them are seen as producers and statements can be moved apart.
bool flatten_body(const Stmt& s, std::map<const VarNode*, Expr>& lets, std::vector<Stmt>& out) {
  if (auto* l = s.as<LetStmtNode>()) {
    lets[l->var.node()] = substitute(l->value, lets);
    return flatten_body(l->body, lets, out);
  }
  if (auto* q = s.as<SeqNode>()) {
    for (const Stmt& c : q->seq)
      if (!flatten_body(c, lets, out)) return false;
    return true;
  }
  if (s.as<AllocateNode>()) return false;
  Stmt x = substitute(s, lets);
  Stmt copy = parallel_copy_as_tile_op(x);
  out.push_back(copy.defined() ? copy : x);
  return true;
}

// One unit of a pipelined loop's schedule: a statement, or a `group` of them.
struct Unit {
  std::vector<Stmt> stmts;
  int64_t stage = 0;
  int64_t order = 0;
  bool producer = false;  // only whole-tile global -> shared copies
  bool async = false;     // a wgmma gemm left in flight into the next step
  std::set<BufKey> writes, touches;
  SourceSpan span;
};

const std::vector<int64_t>* int_list(const Attrs& a, const char* key) {
  auto it = a.find(key);
  return it == a.end() ? nullptr : std::get_if<std::vector<int64_t>>(&it->second);
}

std::string where(const Unit& u, size_t index) {
  return u.span.defined() ? str_cat("the statement at line ", u.span.line) : str_cat("statement ", index);
}

// Whether `e` loads from a buffer.
bool reads_memory(const Expr& e) {
  bool found = false;
  for_each_expr(evaluate(e), [&](const Expr& x) { found = found || x.as<BufferLoadNode>(); });
  return found;
}

class Pipeliner : public IRMutator {
 public:
  Pipeliner(bool async, std::set<BufKey> wgmma_acc) : async_(async), wgmma_acc_(std::move(wgmma_acc)) {}
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

  // The TMA loads of one copy written by hand (T.tma_copy) inside `launch`, as the
  // producers of a pipeline would issue them; nullopt when TMA cannot do it.
  std::optional<TmaTileLoads> tile_loads(const TileOpNode* c, const Expr& bar, const KernelLaunchNode* launch) {
    launch_ = launch;
    std::optional<TmaCopy> t = plan_tma(c);
    if (!t) return std::nullopt;
    return TmaTileLoads{tma_loads(c, *t, bar), t->bytes, t->layout};
  }

  // The TMA stores of a copy from a whole shared tile to a region of a tensor
  // parameter inside `launch`, planned as the load in the other direction would be
  // (the same map, boxes and tile rules); nullopt when TMA cannot do it.
  std::optional<Stmt> tile_stores(const TileOpNode* c, const KernelLaunchNode* launch, bool add) {
    launch_ = launch;
    Attrs attrs = c->attrs;
    attrs.erase("safe_value");  // it would pad reads of the shared side, which are all in bounds
    Stmt mirror = tile_op(TileOpKind::Copy, {c->regions[1], c->regions[0]}, c->args, attrs, c->span);
    auto* load = mirror.as<TileOpNode>();
    std::optional<TmaCopy> t = plan_tma(load);
    if (!t) return std::nullopt;
    std::vector<Stmt> out;
    for (int64_t blk = 0; blk < t->blocks; ++blk) {
      auto [smem, coords] = tma_box(load, *t, blk);
      std::vector<Expr> args{t->map, smem};
      args.insert(args.end(), coords.begin(), coords.end());
      const char* fn = add ? "tl::tma_reduce_add<" : "tl::tma_store<";
      out.push_back(evaluate(call_extern(dtype::Void, str_cat(fn, coords.size(), ">"), args)));
    }
    return seq(out);
  }

 protected:
  using IRMutator::visit;

  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    Scoped<const KernelLaunchNode*> in_kernel(launch_, op);
    auto [loop, outer] = ws_ ? ws_candidate(op) : std::pair<const ForNode*, const ForNode*>{};
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
      RoundsPipeline r = std::move(*ws_rounds_);
      ws_rounds_.reset();
      s = allocate(r.count, seq({buffer_store(r.count, int_imm(0), {int_imm(0)}), s}), op->span);
      return ws_region(r.init, r.producer, s, r.groups, r.consumers);
    }
    auto it = op->annotations.find("num_stages");
    int64_t stages = 0;
    if (it != op->annotations.end())
      if (auto* v = std::get_if<int64_t>(&it->second)) stages = *v;
    const std::vector<int64_t>* order = int_list(op->annotations, "order");
    const std::vector<int64_t>* stage = int_list(op->annotations, "stage");
    bool by_hand = (order && !order->empty()) || (stage && !stage->empty());
    if ((stages < 2 && !by_hand) || op->for_kind != ForKind::Serial) return IRMutator::visit(op, self);
    std::map<const VarNode*, Expr> lets;
    std::vector<Stmt> body;
    if (!flatten_body(op->body, lets, body)) {
      if (by_hand)
        throw_user_error(op->span,
                         "T.Pipelined with order=/stage=: the loop body allocates a buffer; allocate it "
                         "before the loop so that its statements can be scheduled");
      return IRMutator::visit(op, self);
    }
    std::vector<Unit> units = by_hand ? units_by_hand(op, body, stages, order, stage) : default_units(body, stages);
    if (units.empty()) return IRMutator::visit(op, self);
    return schedule(op, self, units);
  }

 private:
  // T.Pipelined(n, num_stages=S): the copies into shared tiles run S - 1
  // iterations ahead of the rest of the body. Those are the leading copies, and
  // any later copy of a global tensor into a whole shared tile that no earlier
  // statement of the body touches (FlashAttention's V tile, copied after the
  // softmax) when the loop writes nothing it reads. Loops without such a copy stay
  // as they are (correct, just not overlapped).
  std::vector<Unit> default_units(const std::vector<Stmt>& body, int64_t stages) {
    std::set<BufKey> loop_writes, seen;
    for (const Stmt& s : body)
      for (BufKey b : written(s)) loop_writes.insert(b);
    std::vector<bool> is_producer(body.size(), false);
    bool leading = true;
    size_t count = 0;
    for (size_t i = 0; i < body.size(); ++i) {
      const TileOpNode* c = producer(body[i]);
      leading = leading && c;
      if (c && !leading)
        c = covers_whole(c->regions[1]) && !seen.count(c->regions[1].buffer.get()) &&
                    !loop_writes.count(c->regions[0].buffer.get())
                ? c
                : nullptr;
      is_producer[i] = c != nullptr;
      count += is_producer[i];
      for (BufKey b : touched(body[i])) seen.insert(b);
    }
    if (count == 0 || count == body.size()) return {};
    std::vector<Unit> units;
    for (size_t i = 0; i < body.size(); ++i) {
      Unit u;
      u.stmts = {body[i]};
      u.order = int64_t(i);
      u.producer = is_producer[i];
      units.push_back(std::move(u));
    }
    // A wgmma gemm left in flight holds its tiles one step longer: it reads them
    // one step earlier, so that the tiles still have num_stages versions.
    bool any_async = mark_async(units);
    for (Unit& u : units) u.stage = u.producer ? 0 : std::max<int64_t>(stages - 1 - (any_async ? 1 : 0), 0);
    return units;
  }

  // A gemm on shared tiles whose accumulator becomes a wgmma accumulator, that does
  // not clear it and whose accumulator no other statement of the loop touches: its
  // wgmma may run on while the next step waits for its copies (kWgmmaAsyncAttr).
  bool mark_async(std::vector<Unit>& units) const {
    bool any = false;
    for (Unit& u : units) {
      auto* g = u.stmts.size() == 1 ? u.stmts[0].as<TileOpNode>() : nullptr;
      if (u.producer || !g || g->op != TileOpKind::Gemm || attr_int(g->attrs, "clear_accum", 0)) continue;
      BufKey acc = g->regions[2].buffer.get();
      if (!wgmma_acc_.count(acc) || !is_shared(g->regions[0].buffer) || !is_shared(g->regions[1].buffer)) continue;
      // Nothing else touches the accumulator, and only producer copies (which get a
      // version per step) write the tiles.
      bool alone = true;
      for (const Unit& other : units) {
        if (&other == &u) continue;
        alone = alone && !touched(seq(other.stmts)).count(acc);
        std::set<BufKey> w = written(seq(other.stmts));
        if (!other.producer)
          alone = alone && !w.count(g->regions[0].buffer.get()) && !w.count(g->regions[1].buffer.get());
      }
      u.async = alone;
      any = any || alone;
    }
    return any;
  }

  // A wgmma gemm of a consumer unit that may be issued without waiting for it within
  // its step (unit.async ones wait across steps instead): its accumulator, and A when
  // A is in registers, are wgmma fragments. The step waits for it before anything
  // else touches those registers, and by its end (see `step` in schedule).
  bool in_step_async(const Stmt& s, const Unit& u) const {
    auto* g = s.as<TileOpNode>();
    if (u.producer || u.async || !g || g->op != TileOpKind::Gemm || attr_int(g->attrs, "clear_accum", 0)) return false;
    const Buffer &a = g->regions[0].buffer, &b = g->regions[1].buffer, &c = g->regions[2].buffer;
    return wgmma_acc_.count(c.get()) && is_shared(b) && (is_shared(a) || wgmma_acc_.count(a.get()));
  }

  // order=/stage=/group= given by hand (TileLang's semantics): unit u of iteration
  // k runs in step k + stage[u], at position order[u] within the step; -1 leaves a
  // copy into shared memory to the compiler, which issues it num_stages - 1 steps
  // before its first reader.
  std::vector<Unit> units_by_hand(const ForNode* op, const std::vector<Stmt>& body, int64_t stages,
                                  const std::vector<int64_t>* order, const std::vector<int64_t>* stage) {
    std::vector<std::vector<size_t>> groups;
    if (auto g = op->annotations.find("group"); g != op->annotations.end()) {
      if (auto* text = std::get_if<std::string>(&g->second)) {
        std::vector<size_t> cur;
        std::string num;
        for (char c : *text + ";") {
          if (c == ',' || c == ';') {
            if (!num.empty()) cur.push_back(size_t(std::stoll(num)));
            num.clear();
            if (c == ';') groups.push_back(std::move(cur)), cur.clear();
          } else {
            num += c;
          }
        }
      }
    }
    if (groups.empty())
      for (size_t i = 0; i < body.size(); ++i) groups.push_back({i});
    std::vector<bool> covered(body.size(), false);
    for (const auto& g : groups)
      for (size_t i : g) {
        if (i >= body.size())
          throw_user_error(op->span, str_cat("T.Pipelined group= names statement ", i, " but the loop body has ",
                                             body.size(), " statements (after inlining its let-bindings)"));
        covered[i] = true;
      }
    for (size_t i = 0; i < body.size(); ++i)
      if (!covered[i])
        throw_user_error(op->span, str_cat("T.Pipelined group= leaves statement ", i,
                                           " of the loop body out; every statement must be in one group"));
    size_t n = groups.size();
    auto check_len = [&](const std::vector<int64_t>* v, const char* name) {
      if (v && !v->empty() && v->size() != n)
        throw_user_error(op->span, str_cat("T.Pipelined ", name, "= has ", v->size(), " entries but the loop body has ",
                                           n, " statements or groups (after inlining its let-bindings)"));
    };
    check_len(order, "order");
    check_len(stage, "stage");
    std::vector<Unit> units(n);
    for (size_t u = 0; u < n; ++u) {
      Unit& un = units[u];
      for (size_t i : groups[u]) un.stmts.push_back(body[i]);
      un.span = un.stmts.front().span();
      un.producer = true;
      for (const Stmt& s : un.stmts)
        un.producer = un.producer && producer(s) && covers_whole(s.as<TileOpNode>()->regions[1]);
      un.order = order && !order->empty() ? (*order)[u] : int64_t(u);
      un.stage = stage && !stage->empty() ? (*stage)[u] : (un.producer ? -1 : std::max<int64_t>(stages - 1, 0));
      if ((un.order < 0) != (un.stage < 0))
        throw_user_error(un.span, str_cat("T.Pipelined: ", where(un, u), " has order ", un.order, " and stage ",
                                          un.stage, "; -1 (left to the compiler) must be given for both or neither"));
      if (un.stage < 0 && !un.producer)
        throw_user_error(un.span, str_cat("T.Pipelined: ", where(un, u),
                                          " has stage -1, which only a T.copy from global memory into a whole "
                                          "shared tile may have (the compiler then schedules the copy)"));
    }
    // Copies left to the compiler run num_stages - 1 steps before their first reader.
    int64_t lead = std::max<int64_t>(stages - 1, 1);
    for (Unit& p : units) {
      if (p.stage >= 0) continue;
      BufKey tile = p.stmts.front().as<TileOpNode>()->regions[1].buffer.get();
      int64_t first = -1;
      for (const Unit& c : units)
        if (c.stage >= 0 && touched(seq(c.stmts)).count(tile)) first = first < 0 ? c.stage : std::min(first, c.stage);
      p.stage = (first < 0 ? 0 : first) - lead;
    }
    int64_t lowest = 0;
    for (const Unit& u : units) lowest = std::min(lowest, u.stage);
    for (Unit& u : units) u.stage -= lowest;
    return units;
  }

  // Emits the schedule of `units` for the loop `op`.
  Stmt schedule(const ForNode* op, const Stmt& self, std::vector<Unit>& units) {
    for (Unit& u : units) {
      u.writes = written(seq(u.stmts));
      u.touches = touched(seq(u.stmts));
    }
    bool any_async = mark_async(units);
    // Producers are issued first in each step, right after the step's barrier;
    // the rest follow in `order`.
    std::vector<size_t> pos(units.size());
    {
      std::vector<size_t> idx(units.size());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
        if (units[a].producer != units[b].producer) return units[a].producer;
        return units[a].order < units[b].order;
      });
      for (size_t p = 0; p < idx.size(); ++p) pos[idx[p]] = p;
    }
    // The staged tiles: written by producers only, used nowhere outside the loop.
    // A tile written in stage sp and read in stage sc needs sc - sp + 1 versions.
    std::map<BufKey, Staged> staged;
    std::map<const TileOpNode*, std::pair<TmaCopy, size_t>> tma;  // producer copy -> its TMA form and group
    std::vector<TmaGroup> groups;
    for (const Unit& p : units) {
      if (!p.producer) continue;
      for (const Stmt& s : p.stmts) {
        auto* copy = s.as<TileOpNode>();
        const Buffer& b = copy->regions[1].buffer;
        if (staged.count(b.get()) || outside_uses_.count(b.get())) return IRMutator::visit(op, self);
        int64_t versions = 1;
        for (const Unit& c : units) {
          if (&c == &p || !c.touches.count(b.get())) continue;
          if (c.writes.count(b.get()) || c.stage < p.stage) return IRMutator::visit(op, self);
          versions = std::max(versions, c.stage - p.stage + 1 + (c.async ? 1 : 0));
        }
        std::vector<Expr> shape{int_imm(versions)};
        for (const Expr& e : b->shape) shape.push_back(e);
        Buffer tile = Buffer::make(b->name, b->dtype, shape, b->scope, {}, b->span);
        if (b->layout) tile = with_layout(tile, b->layout);  // T.annotate_layout's (apply_shared_layouts)
        if (std::optional<TmaCopy> t = plan_tma(copy)) {
          if (t->layout) tile = with_layout(tile, t->layout);  // the swizzle TMA writes
          // Tiles share an mbarrier when their first reader is the same: a reader
          // then waits for its own tiles only (FlashAttention's Q K^T does not wait
          // for V).
          size_t reader = units.size();
          for (size_t c = 0; c < units.size(); ++c)
            if (!units[c].producer && units[c].touches.count(b.get()) &&
                (reader == units.size() ||
                 std::make_pair(units[c].stage, pos[c]) < std::make_pair(units[reader].stage, pos[reader])))
              reader = c;
          size_t g = 0;
          while (g < groups.size() &&
                 !(groups[g].stage == p.stage && groups[g].versions == versions && groups[g].reader == reader))
            ++g;
          if (g == groups.size()) {
            TmaGroup fresh;
            fresh.stage = p.stage;
            fresh.versions = versions;
            fresh.reader = reader;
            fresh.bars = Buffer::make(str_cat(b->name, "_full"), dtype::UInt64, {int_imm(versions)}, Scope::Shared);
            groups.push_back(fresh);
          }
          groups[g].bytes += t->bytes;
          groups[g].tiles.insert(b.get());
          tma[copy] = {*t, g};
        }
        staged[b.get()] = Staged{tile, versions};
      }
    }
    // (A group's bytes stay within an mbarrier's tx-count range, 2^20 - 1: they fit
    // in shared memory.)
    std::set<BufKey> tma_tiles;
    for (const auto& [copy, tg] : tma) tma_tiles.insert(copy->regions[1].buffer.get());
    check_dependences(units, pos, staged);
    // Warp specialization: every producer copy is a TMA copy the producer warpgroup
    // can issue on its own (its indices use only the loop and the block).
    bool ws = op == ws_loop_ && !tma.empty() && tma_tiles.size() == staged.size();
    for (const Unit& p : units)
      for (const Stmt& s : p.stmts) ws = ws && (!p.producer || only_block_vars(substitute(s, outer_lets_), op->var));
    // Consumers that hand a TMA tile's address to a device function of their own
    // (tilelang.intrinsics' tl::ldmatrix_frag feeding mma.sync) keep the TMA pipeline
    // without a producer warpgroup: such register-heavy consumers fit two blocks per
    // SM, and the extra warpgroup halves that (the emitter's GEMM on the H200: 110
    // against 100 TFLOP/s at 4096^3; docs/design/hopper.md, "The consumers' release").
    for (const Unit& c : units)
      for (const Stmt& s : c.stmts) ws = ws && (c.producer || !passes_tile_addresses(s, tma_tiles));
    Expr ws_min = substitute(op->min, outer_lets_), ws_extent = substitute(op->extent, outer_lets_);
    ws = ws && only_block_vars(evaluate(ws_extent), op->var) && only_block_vars(evaluate(ws_min), op->var) &&
         !reads_registers(ws_extent) && !reads_registers(ws_min);  // the producers never set those
    // Inside a persistent loop the producer runs the rounds too: their bounds and the
    // conditions on the way to this loop must be its to compute (no memory reads).
    bool rounds = false;
    if (ws && ws_outer_) {
      ws = only_block_vars(evaluate(substitute(ws_outer_->extent, outer_lets_)), op->var) &&
           only_block_vars(evaluate(substitute(ws_outer_->min, outer_lets_)), op->var);
      for (const PathStep& p : ws_path_) {
        Expr e = substitute(p.cond.defined() ? p.cond : p.value, outer_lets_);
        ws = ws && only_block_vars(evaluate(e), op->var) && !reads_memory(e);
      }
      rounds = ws;
    }
    if (ws && !rounds) plan_multicast(tma, groups);
    // With rounds, versions and mbarrier phases follow the pipeline's iterations
    // counted over all rounds so far: `base` (the counter's value at this round's
    // start) plus the iteration within the round.
    Var base("pipe_base", dtype::Int32);
    auto overall = [&](const Expr& iter) { return rounds ? add(cast(iter.dtype(), Expr(base)), iter) : iter; };
    if (ws)
      for (TmaGroup& g : groups)
        g.empty = Buffer::make(str_cat(g.bars->name.substr(0, g.bars->name.size() - 5), "_empty"), dtype::UInt64,
                               {int_imm(g.versions)}, Scope::Shared);
    for (auto& kv : staged) staged_.insert(kv);

    int64_t max_stage = 0;
    for (const Unit& u : units) max_stage = std::max(max_stage, u.stage);
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
    Stmt commit = async_ ? evaluate(call_extern(dtype::Void, "tl::cp_async_commit", {})) : Stmt(seq({}));
    auto wait = [&](int64_t count) {
      return async_ ? evaluate(call_extern(dtype::Void, str_cat("tl::cp_async_wait<", count, ">"), {})) : Stmt(seq({}));
    };
    // The mbarrier of iteration `iter` in group g: one per version, its phase
    // parity flipping each time the version comes round again.
    auto bar = [&](const TmaGroup& g, const Expr& iter) {
      return address_of(g.bars, {floormod(iter, int_imm(g.versions))});
    };
    auto parity = [&](const TmaGroup& g, const Expr& iter) {
      return floormod(floordiv(iter, int_imm(g.versions)), int_imm(2));
    };
    Expr elected = tma.empty() ? Expr() : eq(thread_rank(), int_imm(0));
    // One step of the schedule. `last` is the iteration of the max-stage units
    // (unit u runs iteration last + max_stage - stage[u]); `run(u)` is its guard,
    // or null when the unit is skipped in this step.
    // Warp-specialized: the last reader of each group's tiles (latest stage, then
    // position) releases their version to the producer once it has read them.
    std::vector<size_t> last_reader(groups.size(), units.size());
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
    std::vector<bool> generic(groups.size(), false);
    for (const Unit& c : units)
      for (const Stmt& s : c.stmts) {
        auto* gemm = s.as<TileOpNode>();
        if (!ws || c.producer ||
            (gemm && gemm->op == TileOpKind::Gemm && wgmma_acc_.count(gemm->regions[2].buffer.get())))
          continue;
        std::set<BufKey> t = touched(s);  // once per statement, for every group
        for (size_t g = 0; g < groups.size(); ++g)
          for (BufKey x : groups[g].tiles) generic[g] = generic[g] || t.count(x);
      }
    for (size_t g = 0; g < groups.size(); ++g)
      groups[g].per_warpgroup = ws && !generic[g] && launch_->threads[0] % kWarpGroupThreads == 0;
    // The consumers' release of group g's version of iteration `done` (counted over
    // the rounds): a multicast tile goes back to every block that writes into it.
    auto release_of = [&](size_t g, const Expr& done) {
      std::string arrive = groups[g].per_warpgroup ? str_cat("tl::mbarrier_arrive_warpgroup<", groups[g].ctas, ">")
                           : groups[g].ctas > 1    ? str_cat("tl::mbarrier_arrive_warp_cluster<", groups[g].ctas, ">")
                                                   : std::string("tl::mbarrier_arrive_warp");
      Stmt release = evaluate(call_extern(
          dtype::Void, arrive, {address_of(groups[g].empty, {floormod(done, int_imm(groups[g].versions))})}));
      return generic[g] ? seq({evaluate(call_extern(dtype::Void, "tl::fence_proxy_async", {})), release}) : release;
    };
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
      // each call waits for all but its own group (wgmma_wait<1>), so an unguarded
      // issue completes everything before it; wgmma_wait<0> completes them all. The
      // releases of their tiles to the producer go out once they are complete.
      struct InFlight {
        std::set<BufKey> regs;    // accumulator, and A when in registers: not to be touched
        std::set<BufKey> shared;  // operands in unstaged shared tiles: not to be written
        std::vector<Stmt> releases;
      };
      std::vector<InFlight> in_flight;
      auto complete = [&](std::vector<Stmt>& to, bool wait_all, size_t keep) {
        if (wait_all) to.push_back(evaluate(call_extern(dtype::Void, "tl::wgmma_wait<0>", {})));
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
        for (const Stmt& s : u.stmts) {
          // Under a guard (prologue and tail steps) the gemm waits for itself: ptxas
          // serializes every wgmma of the kernel (C7515) when a group may or may not
          // have been issued before a wait.
          const bool async_issue = always && in_step_async(s, u);
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
            Stmt t = AddStage(staged, iter).mutate(substitute(s, at));
            issue.push_back(tma_loads(t.as<TileOpNode>(), tc, bar(groups[g], iter)));
            continue;
          }
          Stmt t = s;
          if (u.producer && async_) {
            auto* c = s.as<TileOpNode>();
            Attrs attrs = c->attrs;
            attrs[kAsyncCopyAttr] = int64_t(1);
            t = tile_op(c->op, c->regions, c->args, attrs, c->span);
          }
          if (u.async || async_issue) {
            auto* g = s.as<TileOpNode>();
            Attrs attrs = g->attrs;
            attrs[kWgmmaAsyncAttr] = int64_t(1);
            t = tile_op(g->op, g->regions, g->args, attrs, g->span);
          }
          t = AddStage(staged, overall(iter)).mutate(substitute(t, at));
          body.push_back(u.producer ? t : mutate(t));
          if (async_issue) {
            // Its wgmma_wait<1> completed every older group, when it ran for sure.
            if (always) {
              complete(body, false, 0);
              issued_here.clear();
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
            in_flight[issued_here.back()].releases.push_back(always ? release
                                                                    : unplanned(if_then_else(guard, release)));
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
    if (any_async) out.push_back(evaluate(call_extern(dtype::Void, "tl::wgmma_wait<0>", {})));
    if (async_ && any_cp_async) out.push_back(wait(0));
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
      return warp_specialized(consumer, op, ws_min, ws_extent, units, pos, staged, tma, groups, count);
    }
    if (ws) return warp_specialized(seq(out), op, ws_min, ws_extent, units, pos, staged, tma, groups);
    return with_mbarriers(seq(out), groups, elected);
  }

  // The loop of a warp-specialized pipeline, for src/transform/warp_specialize.cpp
  // to split: the consumers' steps `consumer` (waiting on the full mbarriers and
  // arriving on the empty ones), and the producer's loop, which issues iteration
  // k's copies into version k % V once the consumers have released it (from k = V
  // on: the wait for phase k / V - 1 of its empty mbarrier).
  Stmt warp_specialized(Stmt consumer, const ForNode* op, const Expr& min, const Expr& extent,
                        const std::vector<Unit>& units, const std::vector<size_t>& pos,
                        const std::map<BufKey, Staged>& staged,
                        const std::map<const TileOpNode*, std::pair<TmaCopy, size_t>>& tma,
                        const std::vector<TmaGroup>& groups, const Buffer& rounds_count = Buffer()) {
    const bool rounds = rounds_count.defined();
    int64_t consumers = launch_->threads[0];
    Var i(op->var.name(), op->var.dtype());
    // With rounds (a persistent loop around the pipeline), the producer counts its
    // iterations over all rounds as the consumers do.
    Var base("pipe_base", dtype::Int32);
    Expr gi = rounds ? add(cast(i.dtype(), Expr(base)), Expr(i)) : Expr(i);
    // Its round variable, and its own copies of the bindings on the way to the loop;
    // names bound before the persistent loop are substituted.
    Var round_var = ws_outer_ ? Var(ws_outer_->var.name(), ws_outer_->var.dtype()) : Var();
    std::map<const VarNode*, Expr> round_vars = outer_lets_;
    std::vector<Var> round_lets(ws_path_.size());
    if (rounds) {
      round_vars[ws_outer_->var.node()] = Expr(round_var);
      for (size_t p = 0; p < ws_path_.size(); ++p)
        if (!ws_path_[p].cond.defined()) {
          round_lets[p] = Var(ws_path_[p].var.name(), ws_path_[p].var.dtype());
          round_vars[ws_path_[p].var.node()] = Expr(round_lets[p]);
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
        const auto& [tc, g] = tma.at(s.as<TileOpNode>());
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
        Stmt t = AddStage(staged, gi).mutate(substitute(s, at));
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
      for (size_t p = ws_path_.size(); p-- > 0;) {
        const PathStep& step = ws_path_[p];
        producer = step.cond.defined() ? if_then_else(substitute(step.cond, round_vars), producer)
                                       : let_stmt(round_lets[p], substitute(step.value, round_vars), producer);
      }
      producer = for_loop(round_var, substitute(ws_outer_->min, outer_lets_),
                          substitute(ws_outer_->extent, outer_lets_), ForKind::Serial, producer, {}, ws_outer_->span);
      producer = allocate(count, seq({buffer_store(count, int_imm(0), {int_imm(0)}), producer}));
    }
    for (const TmaGroup& g : groups)
      for (int64_t v = 0; v < g.versions; ++v) {
        init.push_back(
            evaluate(call_extern(dtype::Void, "tl::mbarrier_init", {address_of(g.bars, {int_imm(v)}), int_imm(1)})));
        Expr arrivals =
            g.per_warpgroup
                ? call_extern(dtype::Int32, str_cat("tl::release_arrivals<", consumers, ", ", g.ctas, ">"), {})
                : int_imm(consumers / 32 * g.ctas);
        init.push_back(
            evaluate(call_extern(dtype::Void, "tl::mbarrier_init", {address_of(g.empty, {int_imm(v)}), arrivals})));
      }
    init.push_back(evaluate(call_extern(dtype::Void, "tl::fence_mbarrier_init", {})));
    if (rounds) {
      // The mark goes around the persistent loop (visit of ws_outer_): the producer
      // then sits outside the conditions the consumers' rounds take, which later
      // simplification would otherwise fold into it.
      ws_rounds_ = RoundsPipeline{seq(init), producer, groups, consumers, rounds_count};
      return consumer;
    }
    return ws_region(seq(init), producer, consumer, groups, consumers);
  }

  // The mark warp_specialize splits: the mbarriers, their initialization, the
  // producer's loop and the consumers' part.
  static Stmt ws_region(const Stmt& init, const Stmt& producer, const Stmt& consumer,
                        const std::vector<TmaGroup>& groups, int64_t consumers) {
    Stmt s = seq({unplanned(attr_stmt(kWsInitAttr, int64_t(1), init)),
                  unplanned(attr_stmt(kWsProducerAttr, int64_t(1), producer)), consumer});
    for (const TmaGroup& g : groups) s = allocate(g.empty, allocate(g.bars, s));
    return attr_stmt(kWsPipelineAttr, consumers, s);
  }

  // The pipelined loop a kernel's producer warpgroup may take over: the first
  // T.Pipelined loop at the top of the kernel body (not inside another loop or a
  // condition), or directly inside a persistent loop there (T.Persistent's loop over
  // tiles, through conditions and bindings only), in a kernel of whole warpgroups
  // along threadIdx.x with room for one more, that places no warpgroups itself
  // (T.ws). Returns the loop and the persistent loop around it, if any.
  std::pair<const ForNode*, const ForNode*> ws_candidate(const KernelLaunchNode* op) const {
    if (op->threads.size() != 1 || op->threads[0] % kWarpGroupThreads != 0 ||
        op->threads[0] + kWarpGroupThreads > kMaxThreadsPerBlock)
      return {};
    struct HasWarpGroups : IRVisitor {
      bool found = false;
      using IRVisitor::visit;
      void visit(const AttrNode* a) override {
        found = found || a->key == kWarpGroupAttr;
        IRVisitor::visit(a);
      }
    } wg;
    wg.visit(op->body);
    if (wg.found) return {};
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
    const ForNode* loop = find(op->body, false);
    return {loop, loop ? outer : nullptr};
  }

  // `s` reads no variable bound inside the kernel other than `loop` (the block and
  // thread indices and the function's parameters are bound outside its body).
  // Whether `s`, outside tile ops (whose lowerings read the staged tiles as the
  // pipeline plans), hands the address of one of `tiles` to a device function.
  static bool passes_tile_addresses(const Stmt& s, const std::set<BufKey>& tiles) {
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

  bool only_block_vars(const Stmt& s, const Var& loop) const {
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
    bound.visit(launch_->body);
    struct Uses : IRVisitor {
      std::set<const VarNode*> vars;
      using IRVisitor::visit;
      void visit(const VarNode* v) override { vars.insert(v); }
    } uses;
    uses.visit(s);
    const VarNode* round = ws_outer_ ? ws_outer_->var.node() : nullptr;
    for (const VarNode* v : uses.vars)
      if (v != loop.node() && v != round && bound.vars.count(v)) return false;
    return true;
  }

  // Box `blk` of the TMA copy `c` (a global region, then a whole shared tile): the
  // address of its part of the tile and its global coordinates, innermost first.
  // A multicast copy's box is this block's slice of rows.
  std::pair<Expr, std::vector<Expr>> tma_box(const TileOpNode* c, const TmaCopy& tc, int64_t blk) {
    const BufferRegion &global = c->regions[0], &tile = c->regions[1];
    Expr slice;  // the first row of this block's slice
    if (tc.ctas) slice = mul(tc.slice, int_imm(tc.slice_rows));
    std::vector<Expr> at;
    for (const Range& r : tile.ranges) at.push_back(r.min);
    at.back() = add(at.back(), int_imm(blk * tc.block_cols, at.back().dtype()));
    if (tc.ctas) at[at.size() - 2] = add(at[at.size() - 2], cast(at[at.size() - 2].dtype(), slice));
    std::vector<Expr> coords;
    for (size_t d = global.ranges.size(); d-- > 0;) {
      Expr coord = global.ranges[d].min;
      if (d + 1 == global.ranges.size() && blk) coord = add(coord, int_imm(blk * tc.block_cols, coord.dtype()));
      if (tc.ctas && int(d) == tc.row_dim) coord = add(coord, cast(coord.dtype(), slice));
      coords.push_back(coord);
    }
    return {address_of(tile.buffer, at), coords};
  }

  // The TMA loads of one producer copy `c` (its regions already staged and at
  // their iteration): one box per column block of the tile, completing on `bar`;
  // a multicast copy's slices go to every block of the cluster.
  Stmt tma_loads(const TileOpNode* c, const TmaCopy& tc, const Expr& bar) {
    std::vector<Stmt> out;
    for (int64_t blk = 0; blk < tc.blocks; ++blk) {
      auto [smem, coords] = tma_box(c, tc, blk);
      std::vector<Expr> args{smem, tc.ctas ? tc.slice_map : tc.map, bar};
      if (tc.ctas) args.push_back(tc.mask);
      args.insert(args.end(), coords.begin(), coords.end());
      out.push_back(evaluate(call_extern(
          dtype::Void, str_cat(tc.ctas ? "tl::tma_load_multicast<" : "tl::tma_load<", coords.size(), ">"), args)));
    }
    return seq(out);
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
  void plan_multicast(std::map<const TileOpNode*, std::pair<TmaCopy, size_t>>& tma, std::vector<TmaGroup>& groups) {
    const int64_t ctas = launch_->cluster_size();
    if (ctas == 1 || !multicast_ || calls_extern(launch_->body, "tl::use_swizzle")) return;
    std::map<const VarNode*, size_t> spanned;  // block index -> its cluster dimension
    for (size_t d = 0; d < launch_->cluster.size() && d < launch_->block_vars.size(); ++d)
      if (launch_->cluster[d] > 1) spanned[launch_->block_vars[d].node()] = d;
    for (auto& [copy, tg] : tma) {
      TmaCopy& tc = tg.first;
      const BufferRegion& src = copy->regions[0];
      const Buffer& tile = copy->regions[1].buffer;
      int along = 0;  // the cluster dimensions the box is the same along
      for (const auto& [v, d] : spanned) along |= 1 << d;
      for (const Range& r : src.ranges)
        for_each_expr(evaluate(substitute(r.min, outer_lets_)), [&](const Expr& e) {
          auto* v = e.as<VarNode>();
          if (v && spanned.count(v)) along &= ~(1 << spanned.at(v));
        });
      int64_t sharing = 1;
      for (size_t d = 0; d < launch_->cluster.size(); ++d)
        if (along >> d & 1) sharing *= launch_->cluster[d];
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
        std::vector<int64_t> dims(launch_->cluster.begin(), launch_->cluster.end());
        dims.resize(3, 1);
        std::string shape = str_cat("<", dims[0], ", ", dims[1], ", ", dims[2], ", ", along, ">");
        tc.slice = call_extern(dtype::Int32, "tl::cluster_share_rank" + shape, {});
        tc.mask = call_extern(dtype::Int32, "tl::cluster_share_mask" + shape, {});
      }
      groups[tg.second].ctas = ctas;
    }
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
    s = seq({unplanned(if_then_else(elected, seq(init))), barrier(BarrierKind::Threads), s,
             barrier(BarrierKind::Threads), unplanned(if_then_else(elected, seq(inval)))});
    for (const TmaGroup& g : groups) s = allocate(g.bars, s);
    return s;
  }

  // The flat rank of the thread in the enclosing T.Kernel.
  Expr thread_rank() const {
    TL_ICHECK(launch_, "a TMA pipeline outside a T.Kernel");
    return tl::thread_rank(launch_);
  }

  // How TMA does the producer copy `c`, or nullopt when it cannot (cp.async then):
  // the source is a tensor parameter with a unit innermost stride and no other
  // stride that is a known non-multiple of 16 bytes; the destination is a whole
  // shared tile, plain or in a swizzle the hardware writes (the 32/64/128-byte
  // modes: the mma.sync swizzle of 32, 64 or 128-byte rows, the wgmma one); the
  // boxes keep TMA's limits (<= 256 per dim, a 16-byte multiple per row, no wider
  // than the swizzle); the copy pads with zeros, as TMA fills out-of-bounds parts.
  std::optional<TmaCopy> plan_tma(const TileOpNode* c) {
    if (!tma_ || !launch_ || attr_int(c->attrs, "disable_tma", 0)) return std::nullopt;
    const BufferRegion &src = c->regions[0], &dst = c->regions[1];
    const Buffer &g = src.buffer, &t = dst.buffer;
    int param = -1;
    for (size_t i = 0; i < params_.size(); ++i)
      if (params_[i].is_tensor() && params_[i].buffer.same_as(g)) param = int(i);
    DataType dt = g->dtype;
    bool bytes_type = dt.lanes() == 1 && (dt.is_float() || dt.is_int() || dt.is_uint()) &&
                      (dt.bits() == 8 || dt.bits() == 16 || dt.bits() == 32 || dt.bits() == 64);
    if (param < 0 || !(t->dtype == dt) || !bytes_type || !covers_whole(dst)) return std::nullopt;
    // A tile laid out by T.annotate_layout (apply_shared_layouts) takes TMA only in the
    // swizzle TMA writes (the one below for rows of 32, 64 or 128 bytes).
    std::optional<SharedTileLayout> annotated;
    if (t->layout) {
      auto cols = as_const_int(t->shape.back());
      auto hw = cols ? Layout::swizzle(*cols, dt.bytes()) : nullptr;
      if (!hw || hw->str() != t->layout->str()) return std::nullopt;
      annotated = SharedTileLayout{t->layout, false};
    }
    Expr pad = safe_value(c->attrs, dt);
    auto* pad_f = pad.as<FloatImmNode>();
    auto pad_i = as_const_int(pad);
    if (!((pad_f && pad_f->value == 0) || (pad_i && *pad_i == 0))) return std::nullopt;
    const int64_t eb = dt.bytes();
    const int rank = g.ndim();
    std::vector<Expr> strides = g.effective_strides();
    if (rank < 1 || rank > 5 || !is_const_one(strides.back())) return std::nullopt;
    // The driver refuses maps whose innermost extent is not a whole number of 16-byte
    // units (seen on the H200 with a 300-element float16 vector); that extent must be
    // known here, so that such tensors keep cp.async instead of failing at launch.
    auto inner = as_const_int(g->shape.back());
    if (!inner || (*inner * dt.bytes()) % 16 != 0) return std::nullopt;
    if (!tma_inner_start_aligned(src.ranges.back().min, dt)) return std::nullopt;
    if (!tma_coordinates_fit(g)) return std::nullopt;
    uint32_t dynamic = 0;
    for (int d = 0; d < rank; ++d) {
      auto st = as_const_int(strides[d]);
      if (st && d + 1 < rank && (*st * eb) % 16 != 0) return std::nullopt;
      if (!st || !as_const_int(g->shape[d])) dynamic |= 1u << (rank - 1 - d);
    }
    // The box: the source extents; their non-unit ones are the tile's, in order.
    std::vector<int64_t> ext, tile, a, b;
    for (const Range& r : src.ranges) {
      auto e = as_const_int(r.extent);
      if (!e || *e < 1) return std::nullopt;
      ext.push_back(*e);
      if (*e != 1) a.push_back(*e);
    }
    for (const Expr& e : t->shape) {
      tile.push_back(*as_const_int(e));  // covers_whole: constant
      if (tile.back() != 1) b.push_back(tile.back());
    }
    if (a != b || ext.back() != tile.back()) return std::nullopt;
    TmaCopy out;
    int64_t cols = tile.back(), rows = tile.size() >= 2 ? tile[tile.size() - 2] : 1, lead = 1;
    out.bytes = eb;
    for (int64_t n : tile) out.bytes *= n;
    for (size_t d = 0; d + 2 < tile.size(); ++d) lead *= tile[d];
    out.block_cols = cols;
    int64_t swizzle = 0;
    auto it = layouts_.find(t.get());
    const SharedTileLayout* chosen = it != layouts_.end() ? &it->second : annotated ? &*annotated : nullptr;
    if (chosen) {
      // TMA's swizzle XORs 16-byte chunk bits 4.. with address bits 7.., the pattern
      // of both layouts for rows of one 32, 64 or 128-byte span when the tile starts
      // on a whole pattern (8 rows); the wgmma layout keeps wider tiles as column
      // blocks one span wide, each a box of its own.
      int64_t row_bytes = cols * eb;
      if (chosen->wgmma)
        swizzle = row_bytes % 128 == 0 ? 128 : row_bytes % 64 == 0 ? 64 : row_bytes % 32 == 0 ? 32 : 0;
      else
        swizzle = row_bytes == 32 || row_bytes == 64 || row_bytes == 128 ? row_bytes : 0;
      if (!swizzle || rows % 8 != 0) return std::nullopt;
      out.blocks = row_bytes / swizzle;
      out.block_cols = swizzle / eb;
      if (out.blocks > 1 && lead != 1) return std::nullopt;
      out.layout = chosen->layout;
    } else if ((cols * eb) % 16 != 0 || out.bytes % 128 != 0) {
      return std::nullopt;  // a row of 16-byte multiples; versions of the tile 128-byte aligned
    }
    std::vector<Expr> map{int_imm(param), int_imm(swizzle), int_imm(int64_t(dynamic))};
    for (int d = rank - 1; d >= 0; --d) {
      int64_t box = d == rank - 1 ? out.block_cols : ext[d];
      if (box > kTmaMaxBox) return std::nullopt;
      map.push_back(int_imm(box));
    }
    out.map = call_extern(dtype::Handle, kTmaMapCall, map);
    return out;
  }

  // The schedule must keep every pair of statements that touch a common buffer
  // (one of them writing it) in their original order, within an iteration and
  // from one iteration to the next; staged tiles are exempt from the second
  // rule (their versions keep iterations apart).
  void check_dependences(const std::vector<Unit>& units, const std::vector<size_t>& pos,
                         const std::map<BufKey, Staged>& staged) {
    auto key = [&](size_t u, int64_t shift) { return std::make_pair(units[u].stage + shift, int64_t(pos[u])); };
    for (size_t a = 0; a < units.size(); ++a)
      for (size_t b = a + 1; b < units.size(); ++b) {
        std::set<BufKey> common;
        for (BufKey x : units[a].writes)
          if (units[b].touches.count(x)) common.insert(x);
        for (BufKey x : units[b].writes)
          if (units[a].touches.count(x)) common.insert(x);
        if (common.empty()) continue;
        bool only_staged = true;
        for (BufKey x : common) only_staged = only_staged && staged.count(x);
        if (!(key(a, 0) < key(b, 0)))
          throw_user_error(units[b].span,
                           str_cat("T.Pipelined order=/stage= run ", where(units[b], b), " before ", where(units[a], a),
                                   " of the same iteration, but it depends on it (they share a buffer one of them "
                                   "writes); give it a later stage or a later order"));
        if (!only_staged && !(key(b, 0) < key(a, 1)))
          throw_user_error(units[a].span,
                           str_cat("T.Pipelined order=/stage= run ", where(units[a], a),
                                   " of the next iteration before ", where(units[b], b),
                                   " of this one, but they share a buffer one of them writes; "
                                   "give them stages at most one apart, with the later stage ordered first"));
      }
  }

 public:
  std::set<BufKey> outside_uses_;

 private:
  std::map<BufKey, Staged> staged_;
  bool async_;
  std::set<BufKey> wgmma_acc_;
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
  struct PathStep {  // a condition (cond) or a binding (var = value), as written
    Expr cond;
    Var var;
    Expr value;
  };
  std::vector<PathStep> ws_path_;
  struct RoundsPipeline {  // a persistent pipeline's parts, for its mark around the loop
    Stmt init, producer;
    std::vector<TmaGroup> groups;
    int64_t consumers;
    Buffer count;  // the consumers' iteration counter
  };
  std::optional<RoundsPipeline> ws_rounds_;
  std::map<const VarNode*, Expr> outer_lets_;
};

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

}  // namespace

std::optional<int64_t> tma_map_param(const CallNode* c) {
  if (!c || c->op != Intrinsic::Extern || c->args.size() < 2 || c->args[0].as<StringImmNode>()->value != kTmaMapCall)
    return std::nullopt;
  return as_const_int(c->args[1]);
}

std::optional<TmaTileLoads> tma_tile_loads(const TileOpNode* copy, const Expr& bar, const KernelLaunchNode* launch,
                                           const std::vector<Param>& params,
                                           const std::map<const BufferNode*, SharedTileLayout>& layouts) {
  Pipeliner p(true, {});
  p.enable_tma(params, layouts);
  return p.tile_loads(copy, bar, launch);
}

bool tma_inner_start_aligned(const Expr& start, DataType dtype) {
  auto remainder = as_const_int(simplify(floormod(start, int_imm(16 / dtype.bytes(), start.dtype()))));
  return remainder && *remainder == 0;
}

bool tma_coordinates_fit(const Buffer& tensor) {
  for (const Expr& d : tensor->shape) {
    auto* v = d.as<VarNode>();
    auto c = as_const_int(d);
    if (!(v && v->dtype == dtype::Int32) && !(c && *c <= std::numeric_limits<int32_t>::max())) return false;
  }
  return true;
}

std::optional<Stmt> tma_tile_stores(const TileOpNode* copy, const KernelLaunchNode* launch,
                                    const std::vector<Param>& params,
                                    const std::map<const BufferNode*, SharedTileLayout>& layouts, bool add) {
  Pipeliner p(true, {});
  p.enable_tma(params, layouts);
  return p.tile_stores(copy, launch, add);
}

PrimFunc pipeline_loops(const PrimFunc& f, const Target& target, const PassConfig& configs) {
  const bool allow_wgmma = configs.wgmma, allow_tma = configs.tma_lower;
  Pipeliner p(target.sm_version() >= 80, wgmma_accumulators(f, target, allow_wgmma));
  p.outside_uses_ = outside_pipelined(f->body);
  if (allow_tma && target.has_tma()) p.enable_tma(f->params, shared_tile_layouts(f, target, allow_wgmma));
  if (allow_tma && configs.warp_specialized && target.has_tma() && target.has_wgmma())
    p.enable_warp_specialization(configs.tma_multicast);
  return f.with_body(p.mutate(f->body));
}

}  // namespace tl
