// T.gemm for Metal (see the header). Runs first in the metal pipeline, so that the
// accumulators it keeps in simdgroup matrices never reach layout inference.
//
// An accumulator of path 1 has two homes: its simdgroup matrices (where gemms,
// fills and copy-outs work) and, only when another op needs its elements, a
// threadgroup copy `<name>_tg`. The rewrite walks the kernel in program order
// tracking which home is current and writes one into the other where an op needs
// it; at the edges of loops and branches the matrices are made current again, so
// every iteration and both branches start from the same state.
#include "transform/lower_simdgroup_gemm.h"

#include <cmath>
#include <map>
#include <set>

#include "ir/device_calls.h"
#include "ir/visitor.h"
#include "ops/extent_util.h"
#include "ops/tile_op.h"
#include "support/logging.h"
#include "transform/lower_tile_ops.h"

namespace tl {

int64_t simdgroup_split(int64_t m, int64_t n, int64_t simdgroups, int64_t policy, int64_t tm, int64_t tn) {
  auto fits = [&](int64_t wm) {
    return simdgroups % wm == 0 && m % (tm * wm) == 0 && n % (tn * (simdgroups / wm)) == 0;
  };
  if (policy == 1 && fits(simdgroups)) return simdgroups;
  if (policy == 2 && fits(1)) return 1;
  int64_t best = 0;
  double best_gap = 0;
  for (int64_t wm = 1; wm <= simdgroups; ++wm) {
    if (!fits(wm)) continue;
    int64_t wn = simdgroups / wm;
    double gap = std::abs(double(m) / double(wm) - double(n) / double(wn));
    if (!best || gap < best_gap) best = wm, best_gap = gap;
  }
  return best;
}

namespace {

using BufKey = const BufferNode*;

constexpr int kGeneric = 0, kSimdgroup = 1, kMatmul2d = 2;

struct GemmPlan {
  int path = kGeneric;
  int64_t m = 0, n = 0, k = 0, wm = 0, wn = 0;
  bool ta = false, tb = false, clear = false;
};

// A path-1 accumulator and the state of its two homes.
struct Acc {
  Buffer frag;   // the user's fragment
  Buffer sg;     // simdgroup matrices: [tiles_m * tiles_n] per thread
  Buffer tg;     // threadgroup copy [m, n]
  Buffer stage;  // per-simdgroup 8 x 8 staging tiles for masked or converting copy-outs
  int64_t m = 0, n = 0, wm = 0, wn = 0;
  bool tg_used = false, stage_used = false;
  bool live = false, sg_valid = true, tg_valid = false;
  int64_t tiles_m() const { return m / wm / 8; }
  int64_t tiles_n() const { return n / wn / 8; }
};

std::optional<std::vector<int64_t>> const_shape(const Buffer& b) {
  std::vector<int64_t> out;
  for (const Expr& e : b->shape) {
    auto c = as_const_int(e);
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

// A 2-D tile: every leading dim of the region has extent 1.
bool tile_2d(const BufferRegion& r) {
  if (r.ranges.size() < 2) return false;
  for (size_t d = 0; d + 2 < r.ranges.size(); ++d)
    if (!is_const_one(r.ranges[d].extent)) return false;
  return true;
}

bool unit_inner_stride(const Buffer& b) {
  return is_const_one(b.effective_strides().back()) && !b->layout;
}

const char* msl_scalar(DataType t) {
  return t == dtype::Float32 ? "float" : t == dtype::Float16 ? "half" : "bfloat";
}

Expr address_of(const Buffer& b, std::vector<Expr> idx) {
  return call(Intrinsic::AddressOf, {buffer_load(b, std::move(idx))});
}

Stmt thread_op(Stmt s) {
  return attr_stmt(kThreadOpAttr, int64_t(1), std::move(s));
}

// The indices of region `r` with (row, col) added to its last two dims.
std::vector<Expr> tile_index(const BufferRegion& r, const Expr& row, const Expr& col) {
  std::vector<Expr> idx;
  size_t n = r.ranges.size();
  for (size_t d = 0; d < n; ++d) {
    Expr mn = r.ranges[d].min;
    if (d == n - 2) mn = add(mn, cast(mn.dtype(), row));
    if (d == n - 1) mn = add(mn, cast(mn.dtype(), col));
    idx.push_back(mn);
  }
  return idx;
}

Expr row_stride(const BufferRegion& r) {
  auto s = r.buffer.effective_strides();
  return s[s.size() - 2];
}

Expr ulong2_zero() {
  return call_extern(dtype::UInt64, "ulong2", {int_imm(0), int_imm(0)});
}

class Planner {
 public:
  Planner(const Target& t, int64_t threads) : target_(t), simdgroups_(threads % 32 == 0 ? threads / 32 : 0) {}

  std::set<BufKey> fragments;  // constant-shape T.alloc_fragment buffers
  std::map<const TileOpNode*, GemmPlan> plans;
  std::map<BufKey, Acc> accs;          // path-1 accumulators
  std::map<BufKey, Buffer> to_shared;  // fragments moved to threadgroup memory
  int64_t simdgroups() const { return simdgroups_; }

  void run(const Stmt& body) {
    struct Walk : IRVisitor {
      Planner* p;
      std::vector<const TileOpNode*> gemms;
      using IRVisitor::visit;
      void visit(const AllocateNode* a) override {
        if (a->buffer->scope == Scope::Fragment && const_shape(a->buffer)) p->fragments.insert(a->buffer.get());
        IRVisitor::visit(a);
      }
      void visit(const TileOpNode* op) override {
        if (op->op == TileOpKind::Gemm) gemms.push_back(op);
        IRVisitor::visit(op);
      }
    } walk;
    walk.p = this;
    walk.visit(body);
    // Accumulators: every gemm of a fragment must take the same path.
    std::map<BufKey, std::vector<const TileOpNode*>> by_acc;
    for (const TileOpNode* g : walk.gemms) {
      BufKey c = g->regions[2].buffer.get();
      if (fragments.count(c)) {
        by_acc[c].push_back(g);
        continue;
      }
      // C in shared memory: each gemm on its own.
      GemmPlan p;
      if (target_.has_metal4()) p = fit(g, kMatmul2d, 0);
      if (p.path == kGeneric) p = fit(g, kSimdgroup, 0);
      plans[g] = p;
    }
    for (auto& [c, gemms] : by_acc) {
      if (target_.has_metal4() && all_fit(gemms, kMatmul2d)) {
        to_shared[c] = Buffer();
        continue;
      }
      if (all_fit(gemms, kSimdgroup)) {
        const GemmPlan& first = plans[gemms[0]];
        Acc a;
        a.frag = gemms[0]->regions[2].buffer;
        a.m = first.m, a.n = first.n, a.wm = first.wm, a.wn = first.wn;
        accs[c] = a;
        continue;
      }
      for (const TileOpNode* g : gemms) plans[g] = GemmPlan{};
    }
    // Fragment operands of rewritten gemms are read by simdgroup_load / matmul2d
    // from threadgroup memory.
    for (auto& [g, p] : plans) {
      if (p.path == kGeneric) continue;
      for (int i : {0, 1}) {
        BufKey b = g->regions[i].buffer.get();
        if (fragments.count(b) && !accs.count(b)) to_shared[b] = Buffer();
      }
    }
    for (auto& [k, b] : to_shared) b = Buffer::make(k->name, k->dtype, k->shape, Scope::Shared, k->strides, k->span);
  }

 private:
  bool all_fit(const std::vector<const TileOpNode*>& gemms, int path) {
    int64_t wm = 0;
    std::vector<GemmPlan> found;
    for (const TileOpNode* g : gemms) {
      GemmPlan p = fit(g, path, wm);
      if (p.path != path) return false;
      wm = p.wm;
      found.push_back(p);
    }
    for (size_t i = 0; i < gemms.size(); ++i) plans[gemms[i]] = found[i];
    return true;
  }

  bool block_tile(const BufferRegion& r) const {
    const Buffer& b = r.buffer;
    if (!(is_shared(b) || fragments.count(b.get()))) return false;
    return tile_2d(r) && unit_inner_stride(b);
  }

  // The plan of `g` on `path`, or a generic plan when it does not fit. A nonzero
  // `wm` fixes the split (an accumulator shared by several gemms).
  GemmPlan fit(const TileOpNode* g, int path, int64_t wm) {
    GemmPlan p;
    const BufferRegion &a = g->regions[0], &b = g->regions[1], &c = g->regions[2];
    auto why_not = [&](const std::string& why) {
      log(LogLevel::Debug, str_cat(g->span.defined() ? g->span.str() + ": " : "", "T.gemm does not take the ",
                                   path == kSimdgroup ? "simdgroup_matrix" : "matmul2d", " path: ", why));
      return GemmPlan{};
    };
    if (!simdgroups_) return why_not("the threadgroup is not whole simdgroups of 32 threads");
    p.ta = attr_int(g->attrs, "transpose_A", 0);
    p.tb = attr_int(g->attrs, "transpose_B", 0);
    p.clear = attr_int(g->attrs, "clear_accum", 0);
    if (!block_tile(a) || !block_tile(b))
      return why_not("an operand is not a 2-D tile in shared or fragment memory with unit inner stride");
    bool c_frag = fragments.count(c.buffer.get());
    if (!tile_2d(c) || (c_frag && (!covers_whole(c) || c.buffer.ndim() != 2)) ||
        (!c_frag && !(is_shared(c.buffer) && unit_inner_stride(c.buffer))))
      return why_not("the accumulator is not a whole fragment or a shared tile");
    DataType in = a.buffer->dtype, acc = c.buffer->dtype;
    bool in_ok = in == dtype::Float16 || in == dtype::BFloat16 || in == dtype::Float32;
    if (!in_ok || b.buffer->dtype != in || !(acc == dtype::Float32 || acc == in))
      return why_not(str_cat("operand dtypes ", in.name(), " x ", b.buffer->dtype.name(), " -> ", acc.name(),
                             " have no simdgroup form (float16, bfloat16 or float32 operands of one dtype, "
                             "accumulating in float32 or that dtype)"));
    size_t na = a.ranges.size(), nc = c.ranges.size();
    auto m = as_const_int(c.ranges[nc - 2].extent), n = as_const_int(c.ranges[nc - 1].extent);
    auto k = as_const_int(p.ta ? a.ranges[na - 2].extent : a.ranges[na - 1].extent);
    if (!m || !n || !k) return why_not("the tile extents are not constants");
    p.m = *m, p.n = *n, p.k = *k;
    int64_t policy = attr_int(g->attrs, "policy", 0);
    if (path == kSimdgroup) {
      if (p.k % 8 != 0) return why_not(str_cat("K = ", p.k, " is not a multiple of 8"));
      p.wm = wm ? wm : simdgroup_split(p.m, p.n, simdgroups_, policy, 8, 8);
      if (!p.wm || p.m % (8 * p.wm) || p.n % (8 * (simdgroups_ / p.wm)))
        return why_not(str_cat("the ", p.m, " x ", p.n, " tile does not split into 8 x 8 tiles over ", simdgroups_,
                               " simdgroups"));
    } else {
      if (p.k % 16 != 0) return why_not(str_cat("K = ", p.k, " is not a multiple of 16"));
      p.wm = wm ? wm : simdgroup_split(p.m, p.n, simdgroups_, policy, 16, 32);
      if (!p.wm || p.m % (16 * p.wm) || p.n % (32 * (simdgroups_ / p.wm)))
        return why_not(str_cat("the ", p.m, " x ", p.n, " tile has no split into blocks of 16 x 32 over ", simdgroups_,
                               " simdgroups"));
    }
    p.wn = simdgroups_ / p.wm;
    p.path = path;
    return p;
  }

  const Target& target_;
  int64_t simdgroups_;
};

// Rewrites one kernel's body in program order (see the file comment).
class Rewriter {
 public:
  Rewriter(Planner& plan, Expr rank) : p_(plan), rank_(std::move(rank)) {
    sg_ = floordiv(rank_, int_imm(32));
    lane_ = floormod(rank_, int_imm(32));
    for (auto& [k, a] : p_.accs) {
      std::string name = k->name;
      a.sg = Buffer::make(name, k->dtype, {int_imm(a.tiles_m() * a.tiles_n())}, Scope::MetalSimdgroup, {}, k->span);
      a.tg = Buffer::make(name + "_tg", k->dtype, {int_imm(a.m), int_imm(a.n)}, Scope::Shared, {}, k->span);
      a.stage = Buffer::make(name + "_stage", k->dtype, {int_imm(p_.simdgroups() * 64)}, Scope::Shared, {}, k->span);
    }
  }

  Stmt rw(const Stmt& s) {
    if (!s.defined()) return s;
    switch (s.kind()) {
      case NodeKind::Seq: {
        std::vector<Stmt> out;
        for (const Stmt& x : s.as<SeqNode>()->seq) out.push_back(rw(x));
        return seq(out);
      }
      case NodeKind::Allocate: {
        auto* n = s.as<AllocateNode>();
        auto it = p_.accs.find(n->buffer.get());
        if (it != p_.accs.end()) {
          Acc& a = it->second;
          a.live = true;
          a.sg_valid = true;
          a.tg_valid = false;
          Stmt body = rw(n->body);
          a.live = false;
          body = allocate(a.sg, body, n->span);
          if (a.tg_used) body = allocate(a.tg, body, n->span);
          if (a.stage_used) body = allocate(a.stage, body, n->span);
          return body;
        }
        Buffer b = n->buffer;
        if (auto r = p_.to_shared.find(b.get()); r != p_.to_shared.end()) b = r->second;
        return allocate(b, rw(n->body), n->span);
      }
      case NodeKind::For: {
        auto* f = s.as<ForNode>();
        if (f->for_kind == ForKind::Parallel || touches_acc_expr(f->min) || touches_acc_expr(f->extent)) break;
        Stmt pre = settle();
        Stmt body = rw(f->body);
        body = seq({body, settle()});
        forget_threadgroup_copies();
        return seq(
            {pre, for_loop(f->var, replace(f->min), replace(f->extent), f->for_kind, body, f->annotations, f->span)});
      }
      case NodeKind::While: {
        auto* w = s.as<WhileNode>();
        if (touches_acc_expr(w->cond)) break;
        Stmt pre = settle();
        Stmt body = seq({rw(w->body), settle()});
        forget_threadgroup_copies();
        return seq({pre, while_loop(replace(w->cond), body, w->span)});
      }
      case NodeKind::IfThenElse: {
        auto* n = s.as<IfThenElseNode>();
        if (touches_acc_expr(n->cond)) break;
        Stmt pre = settle();
        auto saved = snapshot();
        Stmt t = seq({rw(n->then_case), settle()});
        restore(saved);
        Stmt e = n->else_case.defined() ? seq({rw(n->else_case), settle()}) : Stmt();
        forget_threadgroup_copies();
        return seq({pre, if_then_else(replace(n->cond), t, e, n->span)});
      }
      case NodeKind::LetStmt: {
        auto* n = s.as<LetStmtNode>();
        if (touches_acc_expr(n->value)) break;
        return let_stmt(n->var, replace(n->value), rw(n->body), n->span);
      }
      case NodeKind::Attr: {
        auto* n = s.as<AttrNode>();
        return attr_stmt(n->key, n->value, rw(n->body), n->span);
      }
      default:
        break;
    }
    return leaf(s);
  }

 private:
  // ---- the two homes of each accumulator

  // Makes the simdgroup matrices current for every live accumulator.
  Stmt settle() {
    std::vector<Stmt> out;
    for (auto& [k, a] : p_.accs)
      if (a.live && !a.sg_valid) out.push_back(reload(a));
    return seq(out);
  }
  void forget_threadgroup_copies() {
    for (auto& [k, a] : p_.accs) a.tg_valid = false;
  }
  std::map<BufKey, std::pair<bool, bool>> snapshot() const {
    std::map<BufKey, std::pair<bool, bool>> out;
    for (auto& [k, a] : p_.accs) out[k] = {a.sg_valid, a.tg_valid};
    return out;
  }
  void restore(const std::map<BufKey, std::pair<bool, bool>>& s) {
    for (auto& [k, a] : p_.accs) std::tie(a.sg_valid, a.tg_valid) = s.at(k);
  }

  // Each simdgroup's block of the accumulator: rows from sg_row, columns from sg_col.
  Expr sg_row(const Acc& a) const { return mul(floordiv(sg_, int_imm(a.wn)), int_imm(a.m / a.wm)); }
  Expr sg_col(const Acc& a) const { return mul(floormod(sg_, int_imm(a.wn)), int_imm(a.n / a.wn)); }

  // for i, j over the simdgroup's tiles: body(i, j, tile index)
  Stmt per_tile(const Acc& a, const std::function<Stmt(const Expr&, const Expr&, const Expr&)>& body) {
    Var i("tl_i", dtype::Int32), j("tl_j", dtype::Int32);
    Expr t = add(mul(i, int_imm(a.tiles_n())), j);
    Stmt inner = for_loop(j, int_imm(0), int_imm(a.tiles_n()), ForKind::Unrolled, body(i, j, t));
    return for_loop(i, int_imm(0), int_imm(a.tiles_m()), ForKind::Unrolled, inner);
  }

  // Matrices -> threadgroup copy.
  Stmt spill(Acc& a) {
    a.tg_used = true;
    a.tg_valid = true;
    return thread_op(per_tile(a, [&](const Expr& i, const Expr& j, const Expr& t) {
      Expr r = add(sg_row(a), mul(i, int_imm(8))), c = add(sg_col(a), mul(j, int_imm(8)));
      return evaluate(call_extern(dtype::Void, "simdgroup_store",
                                  {buffer_load(a.sg, {t}), address_of(a.tg, {r, c}), int_imm(a.n)}));
    }));
  }

  // Threadgroup copy -> matrices.
  Stmt reload(Acc& a) {
    a.tg_used = true;
    a.sg_valid = true;
    return thread_op(per_tile(a, [&](const Expr& i, const Expr& j, const Expr& t) {
      Expr r = add(sg_row(a), mul(i, int_imm(8))), c = add(sg_col(a), mul(j, int_imm(8)));
      return evaluate(
          call_extern(dtype::Void, "simdgroup_load", {buffer_load(a.sg, {t}), address_of(a.tg, {r, c}), int_imm(a.n)}));
    }));
  }

  // ---- leaves

  bool touches_acc_expr(const Expr& e) const {
    bool found = false;
    for_each_expr(evaluate(e), [&](const Expr& x) {
      if (auto* l = x.as<BufferLoadNode>()) found |= p_.accs.count(l->buffer.get()) > 0;
    });
    return found;
  }

  // The path-1 accumulators a statement reads or writes.
  struct Touch {
    std::set<BufKey> read, written;
  };
  Touch touches(const Stmt& s) const {
    struct Walk : IRVisitor {
      const Planner* p;
      Touch t;
      using IRVisitor::visit;
      void visit(const BufferLoadNode* op) override {
        if (p->accs.count(op->buffer.get())) t.read.insert(op->buffer.get());
        IRVisitor::visit(op);
      }
      void visit(const BufferStoreNode* op) override {
        if (p->accs.count(op->buffer.get())) t.written.insert(op->buffer.get());
        IRVisitor::visit(op);
      }
      void visit(const CallNode* op) override {
        if (op->op == Intrinsic::AddressOf)
          if (auto* l = op->args[0].as<BufferLoadNode>(); l && p->accs.count(l->buffer.get()))
            t.written.insert(l->buffer.get());
        IRVisitor::visit(op);
      }
      void visit(const TileOpNode* op) override {
        // Source slots only read: copy / reduce source, gemm A and B, atomic value.
        for (size_t i = 0; i < op->regions.size(); ++i) {
          BufKey b = op->regions[i].buffer.get();
          if (!p->accs.count(b)) continue;
          bool source = (i == 0 && (op->op == TileOpKind::Copy || op->op == TileOpKind::Reduce)) ||
                        (i < 2 && op->op == TileOpKind::Gemm) || (i == 1 && op->op == TileOpKind::Atomic);
          (source ? t.read : t.written).insert(b);
        }
        IRVisitor::visit(op);
      }
    } w;
    w.p = &p_;
    w.visit(s);
    return w.t;
  }

  // Buffers as the statement sees them after this pass: fragments moved to
  // threadgroup memory, accumulators replaced by their threadgroup copies.
  struct Replace : IRMutator {
    const Planner* p;
    using IRMutator::mutate;
    Buffer mutate_buffer(const Buffer& b) override {
      if (auto it = p->to_shared.find(b.get()); it != p->to_shared.end()) return it->second;
      if (auto it = p->accs.find(b.get()); it != p->accs.end()) return it->second.tg;
      return b;
    }
  };
  Stmt replace(const Stmt& s) {
    Replace r;
    r.p = &p_;
    return r.mutate(s);
  }
  Expr replace(const Expr& e) {
    Replace r;
    r.p = &p_;
    return r.mutate(e);
  }
  Buffer replaced(const Buffer& b) {
    Replace r;
    r.p = &p_;
    return r.mutate_buffer(b);
  }
  BufferRegion replaced(const BufferRegion& region) {
    Replace r;
    r.p = &p_;
    return r.mutate_region(region);
  }

  Acc* acc_of(const Buffer& b) {
    auto it = p_.accs.find(b.get());
    return it == p_.accs.end() ? nullptr : &it->second;
  }

  Stmt leaf(const Stmt& s) {
    if (auto* op = s.as<TileOpNode>()) {
      if (op->op == TileOpKind::Gemm) {
        auto it = p_.plans.find(op);
        if (it != p_.plans.end() && it->second.path != kGeneric) return gemm(op, it->second);
      }
      if (Acc* a = acc_of(op->regions.empty() ? Buffer() : op->regions[0].buffer)) {
        if (op->op == TileOpKind::Fill && covers_whole(op->regions[0])) return fill(*a, op);
        if (op->op == TileOpKind::Copy && a->sg_valid && covers_whole(op->regions[0]) &&
            !acc_of(op->regions[1].buffer) && !p_.fragments.count(op->regions[1].buffer.get()))
          if (Stmt out = copy_out(*a, op); out.defined()) return out;
      }
    }
    Touch t = touches(s);
    std::vector<Stmt> out;
    for (BufKey k : t.read)
      if (!p_.accs.at(k).tg_valid) out.push_back(spill(p_.accs.at(k)));
    for (BufKey k : t.written) {
      Acc& a = p_.accs.at(k);
      if (a.tg_valid) continue;
      if (!t.read.count(k) && overwrites_all(s, a)) {
        a.tg_used = a.tg_valid = true;  // nothing of the old value survives: no copy
        continue;
      }
      out.push_back(spill(a));
    }
    out.push_back(replace(s));
    for (BufKey k : t.written) p_.accs.at(k).sg_valid = false;
    return seq(out);
  }

  // A T.Parallel nest over exactly the accumulator's shape whose body (after lets)
  // is one store to acc[i, j] at its own loop variables: every element is written.
  static bool overwrites_all(const Stmt& s, const Acc& a) {
    auto* outer = s.as<ForNode>();
    if (!outer || outer->for_kind != ForKind::Parallel) return false;
    auto* inner = outer->body.as<ForNode>();
    if (!inner || inner->for_kind != ForKind::Parallel) return false;
    auto is = [](const Expr& e, int64_t v) {
      auto c = as_const_int(e);
      return c && *c == v;
    };
    if (!is(outer->min, 0) || !is(inner->min, 0) || !is(outer->extent, a.m) || !is(inner->extent, a.n)) return false;
    Stmt body = inner->body;
    while (auto* l = body.as<LetStmtNode>()) body = l->body;
    auto* store = body.as<BufferStoreNode>();
    if (!store || store->buffer.get() != a.frag.get() || store->indices.size() != 2) return false;
    return store->indices[0].get() == outer->var.get() && store->indices[1].get() == inner->var.get();
  }

  Stmt fill(Acc& a, const TileOpNode* op) {
    std::vector<Stmt> out;
    std::string fn = str_cat("make_filled_simdgroup_matrix<", msl_scalar(a.frag->dtype), ", 8, 8>");
    Expr v = cast(a.frag->dtype, op->args[0]);
    a.sg_valid = true;
    a.tg_valid = false;
    return thread_op(per_tile(a, [&](const Expr&, const Expr&, const Expr& t) {
      return buffer_store(a.sg, call_extern(a.frag->dtype, fn, {v}), {t}, op->span);
    }));
  }

  // T.copy(accumulator, memory): simdgroup_store straight to the destination when
  // the 8 x 8 tile is inside it and the dtype matches; else through the simdgroup's
  // staging tile, element by element with bounds checks and conversion.
  Stmt copy_out(Acc& a, const TileOpNode* op) {
    BufferRegion d = replaced(op->regions[1]);
    // The destination's two non-unit dims take the tile's rows and columns.
    std::vector<size_t> dims;
    for (size_t i = 0; i < d.ranges.size(); ++i)
      if (!is_const_one(d.ranges[i].extent)) dims.push_back(i);
    if (dims.size() != 2) return Stmt();
    auto er = as_const_int(d.ranges[dims[0]].extent), ec = as_const_int(d.ranges[dims[1]].extent);
    if (!er || !ec || *er != a.m || *ec != a.n) return Stmt();
    auto strides = d.buffer.effective_strides();
    bool global = d.buffer->scope == Scope::Global;
    bool direct_ok = d.buffer->dtype == a.frag->dtype && is_const_one(strides[dims[1]]) && !d.buffer->layout;
    auto index = [&](const Expr& r, const Expr& c) {
      std::vector<Expr> idx;
      for (size_t i = 0; i < d.ranges.size(); ++i) {
        Expr mn = d.ranges[i].min;
        if (i == dims[0]) mn = add(mn, cast(mn.dtype(), r));
        if (i == dims[1]) mn = add(mn, cast(mn.dtype(), c));
        idx.push_back(mn);
      }
      return idx;
    };
    Stmt body = per_tile(a, [&](const Expr& i, const Expr& j, const Expr& t) {
      Expr r = add(sg_row(a), mul(i, int_imm(8))), c = add(sg_col(a), mul(j, int_imm(8)));
      std::vector<Expr> at = index(r, c);
      Stmt direct = evaluate(call_extern(dtype::Void, "simdgroup_store",
                                         {buffer_load(a.sg, {t}), address_of(d.buffer, at), strides[dims[0]]}),
                             op->span);
      Expr inside = bool_imm(true);
      if (global)
        inside =
            logical_and(in_bounds(d.buffer, at), in_bounds(d.buffer, index(add(r, int_imm(7)), add(c, int_imm(7)))));
      if (direct_ok && as_const_int(inside) && *as_const_int(inside)) return direct;
      a.stage_used = true;
      Expr base = mul(sg_, int_imm(64));
      Var e("tl_e", dtype::Int32);
      Expr pos = add(mul(lane_, int_imm(2)), e);
      std::vector<Expr> el = index(add(r, floordiv(pos, int_imm(8))), add(c, floormod(pos, int_imm(8))));
      Stmt put = buffer_store(d.buffer, cast(d.buffer->dtype, buffer_load(a.stage, {add(base, pos)})), el, op->span);
      if (global) put = if_then_else(in_bounds(d.buffer, el), put);
      Expr barrier_call = call_extern(dtype::Void, kSimdgroupBarrierCall, {});
      Stmt staged = seq({evaluate(call_extern(dtype::Void, "simdgroup_store",
                                              {buffer_load(a.sg, {t}), address_of(a.stage, {base}), int_imm(8)})),
                         evaluate(barrier_call), for_loop(e, int_imm(0), int_imm(2), ForKind::Unrolled, put),
                         evaluate(barrier_call)});
      return direct_ok ? if_then_else(inside, direct, staged) : staged;
    });
    return thread_op(body);
  }

  Stmt gemm(const TileOpNode* op, const GemmPlan& p) {
    std::vector<Stmt> out;
    // Operands that are path-1 accumulators are read from their threadgroup copies.
    for (int i : {0, 1})
      if (Acc* a = acc_of(op->regions[i].buffer); a && !a->tg_valid) out.push_back(spill(*a));
    BufferRegion ra = replaced(op->regions[0]), rb = replaced(op->regions[1]);
    Acc* acc = acc_of(op->regions[2].buffer);
    if (p.path == kMatmul2d) {
      BufferRegion rc = replaced(op->regions[2]);
      auto tile_ptr = [](const BufferRegion& r) { return address_of(r.buffer, tile_index(r, int_imm(0), int_imm(0))); };
      auto ld = [](const BufferRegion& r) { return cast(dtype::Int32, row_stride(r)); };
      auto flag = [](bool v) { return v ? "true" : "false"; };
      std::string name =
          device_call_name(kMppGemmCall, {p.m / p.wm, p.n / p.wn, p.k, flag(p.ta), flag(p.tb), flag(p.clear),
                                          msl_scalar(ra.buffer->dtype), msl_scalar(rc.buffer->dtype)});
      Expr row0 = mul(floordiv(sg_, int_imm(p.wn)), int_imm(p.m / p.wm));
      Expr col0 = mul(floormod(sg_, int_imm(p.wn)), int_imm(p.n / p.wn));
      out.push_back(thread_op(
          evaluate(call_extern(dtype::Void, name,
                               {tile_ptr(ra), ld(ra), tile_ptr(rb), ld(rb), tile_ptr(rc), ld(rc), row0, col0}),
                   op->span)));
      return seq(out);
    }
    // Path 1. The matrices: the accumulator's own, or (C in shared memory) loaded
    // from C for this call and stored back after it.
    Acc local;
    BufferRegion rc = replaced(op->regions[2]);
    if (acc) {
      if (!acc->sg_valid) out.push_back(reload(*acc));
      acc->sg_valid = true;
      acc->tg_valid = false;
    } else {
      local.frag = rc.buffer;
      local.m = p.m, local.n = p.n, local.wm = p.wm, local.wn = p.wn;
      local.sg = Buffer::make(rc.buffer->name + "_sg", rc.buffer->dtype, {int_imm(local.tiles_m() * local.tiles_n())},
                              Scope::MetalSimdgroup);
    }
    Acc& a = acc ? *acc : local;
    auto c_tile = [&](Expr i, Expr j) {
      return tile_index(rc, add(sg_row(a), mul(std::move(i), int_imm(8))),
                        add(sg_col(a), mul(std::move(j), int_imm(8))));
    };
    std::vector<Stmt> body;
    if (!acc && !p.clear)
      body.push_back(per_tile(a, [&](const Expr& i, const Expr& j, const Expr& t) {
        return evaluate(call_extern(dtype::Void, "simdgroup_load",
                                    {buffer_load(a.sg, {t}), address_of(rc.buffer, c_tile(i, j)), row_stride(rc)}));
      }));
    if (p.clear) {
      std::string fn = str_cat("make_filled_simdgroup_matrix<", msl_scalar(a.frag->dtype), ", 8, 8>");
      body.push_back(per_tile(a, [&](const Expr&, const Expr&, const Expr& t) {
        return buffer_store(a.sg, call_extern(a.frag->dtype, fn, {make_const(a.frag->dtype, 0)}), {t});
      }));
    }
    int64_t tm = a.tiles_m(), tn = a.tiles_n();
    Buffer ma = Buffer::make("tl_a", ra.buffer->dtype, {int_imm(tm)}, Scope::MetalSimdgroup);
    Buffer mb = Buffer::make("tl_b", rb.buffer->dtype, {int_imm(tn)}, Scope::MetalSimdgroup);
    Var kk("tl_k", dtype::Int32), i("tl_i", dtype::Int32), j("tl_j", dtype::Int32);
    Expr k0 = mul(kk, int_imm(8));
    Expr r = add(sg_row(a), mul(i, int_imm(8))), c = add(sg_col(a), mul(j, int_imm(8)));
    Stmt load_a = evaluate(
        call_extern(dtype::Void, "simdgroup_load",
                    {buffer_load(ma, {i}), address_of(ra.buffer, p.ta ? tile_index(ra, k0, r) : tile_index(ra, r, k0)),
                     row_stride(ra), ulong2_zero(), bool_imm(p.ta)}));
    Stmt load_b = evaluate(
        call_extern(dtype::Void, "simdgroup_load",
                    {buffer_load(mb, {j}), address_of(rb.buffer, p.tb ? tile_index(rb, c, k0) : tile_index(rb, k0, c)),
                     row_stride(rb), ulong2_zero(), bool_imm(p.tb)}));
    Expr t = add(mul(i, int_imm(tn)), j);
    Stmt mma = evaluate(
        call_extern(dtype::Void, "simdgroup_multiply_accumulate",
                    {buffer_load(a.sg, {t}), buffer_load(ma, {i}), buffer_load(mb, {j}), buffer_load(a.sg, {t})}),
        op->span);
    Stmt step = seq({for_loop(i, int_imm(0), int_imm(tm), ForKind::Unrolled, load_a),
                     for_loop(j, int_imm(0), int_imm(tn), ForKind::Unrolled, load_b),
                     for_loop(i, int_imm(0), int_imm(tm), ForKind::Unrolled,
                              for_loop(j, int_imm(0), int_imm(tn), ForKind::Unrolled, mma))});
    int64_t steps = p.k / 8;
    body.push_back(
        allocate(ma, allocate(mb, for_loop(kk, int_imm(0), int_imm(steps),
                                           steps <= 4 ? ForKind::Unrolled : ForKind::Serial, step, {}, op->span))));
    if (!acc)
      body.push_back(per_tile(a, [&](const Expr& i, const Expr& j, const Expr& t) {
        return evaluate(call_extern(dtype::Void, "simdgroup_store",
                                    {buffer_load(a.sg, {t}), address_of(rc.buffer, c_tile(i, j)), row_stride(rc)}));
      }));
    Stmt s = seq(body);
    if (!acc) s = allocate(local.sg, s);
    out.push_back(thread_op(s));
    return seq(out);
  }

  Planner& p_;
  Expr rank_, sg_, lane_;
};

class PerKernel : public IRMutator {
 public:
  explicit PerKernel(const Target& t) : target_(t) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    Planner plan(target_, op->thread_count());
    plan.run(op->body);
    bool rewrites = !plan.accs.empty() || !plan.to_shared.empty();
    for (auto& [g, p] : plan.plans) rewrites |= p.path != kGeneric;
    if (!rewrites) return self;
    return with_body(op, Rewriter(plan, thread_rank(op)).rw(op->body));
  }

 private:
  const Target& target_;
};

}  // namespace

PrimFunc lower_simdgroup_gemm(const PrimFunc& f, const Target& target) {
  return f.with_body(PerKernel(target).mutate(f->body));
}

}  // namespace tl
