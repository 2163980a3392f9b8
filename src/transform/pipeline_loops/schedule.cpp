// Phase 1 of pipeline_loops (plan.h): a T.Pipelined loop's body as units, each with
// the stage and the position in a step where it runs; by-hand order=/stage=/group=
// checked against the body and the dependences between its statements.
#include <algorithm>

#include "arith/simplify.h"
#include "ir/visitor.h"
#include "ops/extent_util.h"
#include "ops/tile_op.h"
#include "transform/pipeline_loops/plan.h"

namespace tl::pipeliner {
namespace {

// A producer: T.copy from a global tensor into a whole shared tile.
const TileOpNode* producer(const Stmt& s) {
  auto* op = s.as<TileOpNode>();
  if (!op || op->op != TileOpKind::Copy) return nullptr;
  if (op->regions[0].buffer->scope != Scope::Global || !is_shared(op->regions[1].buffer)) return nullptr;
  return op;
}

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

// How an error names unit u: "the statement at line N", or "statement i".
std::string where(const Unit& u, size_t index) {
  return u.span.defined() ? str_cat("the statement at line ", u.span.line) : str_cat("statement ", index);
}

}  // namespace

std::set<BufKey> written(const Stmt& s) {
  return buffers_of(s, false);
}
std::set<BufKey> touched(const Stmt& s) {
  return buffers_of(s, true);
}

namespace {

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

const std::vector<int64_t>* int_list(const Attrs& a, const char* key) {
  auto it = a.find(key);
  return it == a.end() ? nullptr : std::get_if<std::vector<int64_t>>(&it->second);
}

// A gemm on shared tiles whose accumulator becomes a wgmma accumulator, that does
// not clear it and whose accumulator no other statement of the loop touches: its
// wgmma may run on while the next step waits for its copies (kWgmmaAsyncAttr). The
// K slices of an unrolled loop likewise, all of them in flight.
// The gemm of a unit that is one gemm, or one T.unroll loop of constant extent (at
// most 8) around one gemm: its K slices, issued back to back (emit.cpp,
// expand_sliced_gemms).
const TileOpNode* unit_gemm(const Unit& u) {
  if (u.stmts.size() != 1) return nullptr;
  if (auto* g = u.stmts[0].as<TileOpNode>()) return g;
  const ForNode* f = sliced_gemm_loop(u.stmts[0]);
  return f ? f->body.as<TileOpNode>() : nullptr;
}

bool mark_async(std::vector<Unit>& units, const std::set<BufKey>& wgmma_acc) {
  bool any = false;
  for (Unit& u : units) {
    const TileOpNode* g = unit_gemm(u);
    if (u.producer || !g || g->op != TileOpKind::Gemm || attr_int(g->attrs, "clear_accum", 0)) continue;
    BufKey acc = g->regions[2].buffer.get();
    if (!wgmma_acc.count(acc) || !is_shared(g->regions[0].buffer) || !is_shared(g->regions[1].buffer)) continue;
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

// T.Pipelined(n, num_stages=S): the copies into shared tiles run S - 1
// iterations ahead of the rest of the body. Those are the leading copies, and
// any later copy of a global tensor into a whole shared tile that no earlier
// statement of the body touches (FlashAttention's V tile, copied after the
// softmax); never a copy that reads a buffer the loop writes (its source, or a
// buffer its indices read). Loops without such a copy stay as they are (correct,
// just not overlapped).
std::vector<Unit> default_units(const std::vector<Stmt>& body, int64_t stages, const std::set<BufKey>& wgmma_acc) {
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
    // A copy issued num_stages - 1 steps ahead must not read what the body writes (an
    // index stored into shared memory just before it, a tile the loop updates): it
    // would read the values of an earlier step. Such a copy runs in its place.
    if (c) {
      BufKey dst = c->regions[1].buffer.get();
      for (BufKey b : touched(body[i]))
        if (b != dst && loop_writes.count(b)) c = nullptr;
    }
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
  bool any_async = mark_async(units, wgmma_acc);
  for (Unit& u : units) u.stage = u.producer ? 0 : std::max<int64_t>(stages - 1 - (any_async ? 1 : 0), 0);
  return units;
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
      throw_user_error(un.span, str_cat("T.Pipelined: ", where(un, u), " has order ", un.order, " and stage ", un.stage,
                                        "; -1 (left to the compiler) must be given for both or neither"));
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

}  // namespace

const ForNode* sliced_gemm_loop(const Stmt& s) {
  auto* f = s.as<ForNode>();
  std::optional<int64_t> ext = f ? as_const_int(f->extent) : std::nullopt;
  if (!f || f->for_kind != ForKind::Unrolled || !as_const_int(f->min) || !ext || *ext < 1 || *ext > 8) return nullptr;
  auto* g = f->body.as<TileOpNode>();
  return g && g->op == TileOpKind::Gemm ? f : nullptr;
}

std::optional<Schedule> schedule_loop(const ForNode* op, const std::set<BufKey>& wgmma_acc) {
  auto it = op->annotations.find("num_stages");
  int64_t stages = 0;
  if (it != op->annotations.end())
    if (auto* v = std::get_if<int64_t>(&it->second)) stages = *v;
  const std::vector<int64_t>* order = int_list(op->annotations, "order");
  const std::vector<int64_t>* stage = int_list(op->annotations, "stage");
  bool by_hand = (order && !order->empty()) || (stage && !stage->empty());
  if ((stages < 2 && !by_hand) || op->for_kind != ForKind::Serial) return std::nullopt;
  std::map<const VarNode*, Expr> lets;
  std::vector<Stmt> body;
  if (!flatten_body(op->body, lets, body)) {
    if (by_hand)
      throw_user_error(op->span,
                       "T.Pipelined with order=/stage=: the loop body allocates a buffer; allocate it "
                       "before the loop so that its statements can be scheduled");
    return std::nullopt;
  }
  Schedule out;
  std::vector<Unit>& units = out.units;
  units = by_hand ? units_by_hand(op, body, stages, order, stage) : default_units(body, stages, wgmma_acc);
  if (units.empty()) return std::nullopt;
  for (Unit& u : units) {
    u.writes = written(seq(u.stmts));
    u.touches = touched(seq(u.stmts));
  }
  out.any_async = mark_async(units, wgmma_acc);
  // Producers are issued first in each step, right after the step's barrier;
  // the rest follow in `order`.
  out.pos.resize(units.size());
  std::vector<size_t> idx(units.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    if (units[a].producer != units[b].producer) return units[a].producer;
    return units[a].order < units[b].order;
  });
  for (size_t p = 0; p < idx.size(); ++p) out.pos[idx[p]] = p;
  for (const Unit& u : units) out.max_stage = std::max(out.max_stage, u.stage);
  return out;
}

// The schedule must keep every pair of statements that touch a common buffer
// (one of them writing it) in their original order, within an iteration and
// from one iteration to the next; staged tiles are exempt from the second
// rule (their versions keep iterations apart).
void check_dependences(const Schedule& schedule, const std::map<BufKey, Staged>& staged) {
  const std::vector<Unit>& units = schedule.units;
  const std::vector<size_t>& pos = schedule.pos;
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
                         str_cat("T.Pipelined order=/stage= run ", where(units[a], a), " of the next iteration before ",
                                 where(units[b], b),
                                 " of this one, but they share a buffer one of them writes; "
                                 "give them stages at most one apart, with the later stage ordered first"));
    }
}

}  // namespace tl::pipeliner
