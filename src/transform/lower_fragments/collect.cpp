// Phase 1 of lower_fragments (plan.h): every fragment of a T.Kernel with a constant
// shape is a candidate, and each use adds a constraint. T.Parallel nests tie the
// fragments they index by their loop variables to one layout (and per-row vectors
// indexed by the leading variables to the rows of it; a fragment indexed through
// T.reshape, at the row-major position of the variables in a nest of as many
// elements, is covered whole too, and the nest then runs over its registers);
// T.reduce over the last dim makes the destination the rows of the source, over dim
// 0 the columns (and the source a layout whose threads hold whole columns); per-column
// vectors (indexed by the last variable of a 2-d nest) are the columns of the nest's
// tile; a fragment-to-fragment T.copy ties both; T.gemm fixes its accumulator to the mma (or
// wgmma) layout. What a tile op asks is the op's to say (infer_<op>_fragments,
// src/ops/<op>_registers.cpp): the Collector notes where each fragment is used and
// hands it every tile op through the op table (ops/registers.h's OpUses). A use of
// any other shape (an index that is not the loop variable, an op without a register
// lowering) keeps that fragment block-wide in shared memory ("demoted").
#include "arith/simplify.h"
#include "ir/visitor.h"
#include "ops/extent_util.h"
#include "ops/registers.h"
#include "ops/tile_op.h"
#include "transform/lower_explicit_hopper.h"
#include "transform/lower_fragments/plan.h"
#include "transform/lower_tile_ops.h"

namespace tl::fragments {

namespace {

class Collector : public IRVisitor, public OpUses {
 public:
  explicit Collector(Analysis& a) : OpUses(a), a_(a) {}
  using IRVisitor::visit;

  // A T.ws region: its ops and fragments are spread over its threads only.
  void visit(const AttrNode* op) override {
    auto [lo, count] = warp_group_range(op);
    if (count == 0) return IRVisitor::visit(op);
    Scoped<int64_t> in_region(region_lo_, lo), threads(a_.threads, count);
    IRVisitor::visit(op);
  }

  // A fragment's registers belong to the threads of one region.
  void note_region(const Buffer& b, const SourceSpan& span) {
    if (!a_.candidate(b)) return;
    std::pair<int64_t, int64_t> here{region_lo_, a_.threads};
    auto [it, fresh] = a_.region_of.emplace(b.get(), here);
    if (fresh || it->second == here) return;
    auto threads = [](std::pair<int64_t, int64_t> r) {
      return str_cat("threads [", r.first, ", ", r.first + r.second, ")");
    };
    throw_user_error(span,
                     str_cat("fragment '", b->name, "' is used by ", threads(it->second), " and by ", threads(here),
                             "; a fragment's registers belong to the threads of one T.ws region (or of the "
                             "whole block): use it, T.clear included, inside one `with T.ws(...)` only"));
  }

  void visit(const AllocateNode* op) override {
    if (op->buffer->scope == Scope::Fragment && const_shape(op->buffer)) a_.candidates[op->buffer.get()] = op->buffer;
    IRVisitor::visit(op);
  }

  void visit(const BufferLoadNode* op) override {
    note_use(op->buffer, op->indices, false);
    classify(op->buffer, op->indices);
    IRVisitor::visit(op);
  }
  void visit(const BufferStoreNode* op) override {
    note_use(op->buffer, op->indices, true);
    classify(op->buffer, op->indices, true);
    IRVisitor::visit(op);
  }

  // The values of the pure index-typed lets around a use (`k0 = j * 16`): what a
  // K slice's start is a multiple of.
  void visit(const LetStmtNode* op) override {
    std::optional<Expr> pure = pure_index_value(op->value, lets_);
    if (pure) lets_[op->var.node()] = *pure;
    IRVisitor::visit(op);
    if (pure) lets_.erase(op->var.node());
  }

  // Analysis::simt_uses / tile_uses.
  void note_use(const Buffer& b, const std::vector<Expr>& idx, bool store) {
    if (!a_.candidate(b)) return;
    if (!loop_) {
      a_.simt_uses.insert(b.get());
      return;
    }
    if (partial_update(b, idx)) {
      a_.simt_uses.insert(b.get());
      a_.partial_updates.insert(b.get());
      return;
    }
    if (store && loop_scalar(b, idx)) {
      a_.simt_uses.insert(b.get());
      a_.loop_scalars.emplace(b.get(), loop_span_);
      return;
    }
    bool by_loop_var = false;
    for (const Expr& e : idx)
      for (const VarNode* v : vars_) by_loop_var = by_loop_var || reads_var(e, v);
    if (store || by_loop_var) a_.tile_uses.insert(b.get());
  }

  // `frag[0]` (index 0 of every dim) of a fragment other than a reducer, written in
  // a T.Parallel loop: a per-iteration scalar, each thread's own copy (the fragment is
  // replicated), as TileLang's layout inference makes it; reads of it at [0] are then
  // the thread's own too. (A fragment only read at [0] in loops is a loop-invariant
  // value, replicated or in shared memory as before.) A store at another constant
  // index is refused before (check_parallel_stores.h).
  bool loop_scalar(const Buffer& b, const std::vector<Expr>& idx) const {
    if (!loop_ || a_.reducers.count(b.get())) return false;
    for (const Expr& e : idx) {
      auto c = as_const_int(e);
      if (!c || *c != 0) return false;
    }
    return true;
  }

  // An access in a T.Parallel loop to a reducer at indices other than those a layout
  // follows (`total[0]`, `best[j]` in a loop over i, j): the iteration combines into
  // the running thread's own partial.
  bool partial_update(const Buffer& b, const std::vector<Expr>& idx) const {
    if (!loop_ || !a_.reducers.count(b.get())) return false;
    if (a_.replicated_reducers.count(b.get()) || extents_.empty()) return true;
    Access access = loop_access(b, idx);  // (a reducer's layout follows only whole loops or their rows)
    return access != Access::Full && access != Access::Row;
  }

  // How a T.Parallel nest with constant extents indexes a fragment: by all its
  // variables (or through T.reshape), by all but the last (a per-row vector; [0] of a
  // (1,) one in a 1-d nest), or else.
  enum class Access { Full, Row, Col, ColParent, Other };
  Access loop_access(const Buffer& b, const std::vector<Expr>& idx) const {
    auto shape = *const_shape(b);
    auto is_var = [&](size_t i) {
      auto* v = idx[i].as<VarNode>();
      return v && v == vars_[i];
    };
    bool full = idx.size() == vars_.size() && shape == extents_;
    for (size_t i = 0; full && i < idx.size(); ++i) full = is_var(i);
    if (full) return Access::Full;
    bool row = vars_.size() >= 2 && idx.size() == vars_.size() - 1 &&
               shape == std::vector<int64_t>(extents_.begin(), extents_.end() - 1);
    for (size_t i = 0; row && i < idx.size(); ++i) row = is_var(i);
    // The one row of a 1-d nest: a (1,) fragment read [0] (the result of reducing a
    // 1-d fragment, `T.exp(x[i] - m[0])`). A (1,) reducer updated so stays each
    // thread's own partial (partial_update).
    if (!row && vars_.size() == 1 && idx.size() == 1 && shape == std::vector<int64_t>{1} &&
        !a_.reducers.count(b.get())) {
      auto zero = as_const_int(idx[0]);
      row = zero && *zero == 0;
    }
    if (row) return Access::Row;
    // A per-column vector: [j] in a nest over (i, j).
    if (vars_.size() == 2 && idx.size() == 1 && shape == std::vector<int64_t>{extents_[1]} &&
        idx[0].as<VarNode>() == vars_[1])
      return Access::Col;
    // A 2-d fragment read [e, j] in a nest over j alone, e free of j: the nest's
    // vectors are its columns.
    if (vars_.size() == 1 && idx.size() == 2 && shape.size() == 2 && shape[1] == extents_[0] &&
        idx[1].as<VarNode>() == vars_[0] && !reads_var(idx[0], vars_[0]))
      return Access::ColParent;
    return reshaped(shape, idx) ? Access::Full : Access::Other;
  }

  void visit(const ForNode* op) override {
    if (op->for_kind != ForKind::Parallel || loop_) return IRVisitor::visit(op);
    // A nest that writes only registers runs whole on every thread (per_thread_nest):
    // thread-level code, whose fragment reads are per-thread uses.
    if (writes_only_registers(op->body)) return IRVisitor::visit(op);
    std::vector<const ForNode*> nest = parallel_nest(op);
    bool ok = true;
    std::vector<int64_t> extents;
    for (const ForNode* f : nest) {
      auto mn = as_const_int(f->min), ex = as_const_int(f->extent);
      ok = ok && mn && *mn == 0 && ex;
      vars_.push_back(f->var.node());
      loop_vars_.push_back(f->var);
      extents.push_back(ex ? *ex : -1);
    }
    Analysis::Loop loop;
    loop_ = &loop;
    loop_span_ = op->span;
    extents_ = ok ? extents : std::vector<int64_t>{};
    visit(nest.back()->body);
    loop_ = nullptr;
    vars_.clear();
    loop_vars_.clear();
    if (loop.full.empty()) {
      // A reducer indexed by some of the variables of a nest that no register fragment
      // covers (`acc[i] += s[i, k]` over a shared tile) is updated as each thread's own
      // partial, like one indexed by no layout (partial_update), rather than in shared
      // memory, where the nest's threads would race on it.
      auto partials = [&](std::vector<BufKey>& of) {
        std::erase_if(of, [&](BufKey b) {
          if (!a_.reducers.count(b)) return false;
          a_.simt_uses.insert(b);
          a_.partial_updates.insert(b);
          return true;
        });
      };
      partials(loop.rows);
      partials(loop.cols);
      partials(loop.col_parents);
      for (BufKey r : loop.rows)
        a_.demoted.emplace(r, at(op->span,
                                 "indexed by the leading variables of a T.Parallel loop that no register "
                                 "fragment covers"));
      for (BufKey c : loop.cols)
        a_.demoted.emplace(c, at(op->span,
                                 "indexed by the last variable of a T.Parallel loop that no register fragment "
                                 "covers"));
      for (BufKey c : loop.col_parents)
        a_.demoted.emplace(c,
                           at(op->span, "indexed [e, j] in a T.Parallel loop over j that no register vector covers"));
    }
    a_.loops.push_back(std::move(loop));
  }

  // A store TMA can take from a shared tile: the tile is stored whole to a global
  // region (T.copy, or added by T.atomic_add), or already by tl::tma_store /
  // tl::tma_store_add (lower_tma_stores ran): every pass sees the same tiles.
  void note_store_tile(const Buffer& b) {
    auto sh = const_shape(b);
    if (!a_.target->has_tma() || !is_shared(b) || b->layout || !sh || sh->size() != 2 || (*sh)[0] % 8 != 0 ||
        (*sh)[0] > 256)
      return;
    a_.store_tiles.emplace(b.get(), b);
  }

  void visit(const CallNode* op) override {
    IRVisitor::visit(op);
    bool load = false;
    Buffer b = tma_call_tile(op, &load);
    if (b.defined() && !load) note_store_tile(b);
  }

  void visit(const TileOpNode* op) override {
    for (const BufferRegion& r : op->regions) {
      note_region(r.buffer, op->span);
      // (Finalizing a reducer, or copying one out, suits a replicated one too.)
      bool finalize = op->op == TileOpKind::Reduce && attr_int(op->attrs, "finalize", 0);
      bool copy_out = op->op == TileOpKind::Copy && &r == &op->regions[0] && a_.reducers.count(r.buffer.get()) &&
                      (op->regions[1].buffer->scope == Scope::Global || is_shared(op->regions[1].buffer));
      if (a_.candidate(r.buffer) && !(op->op == TileOpKind::Fill && covers_whole(r)) && !finalize && !copy_out)
        a_.tile_uses.insert(r.buffer.get());
    }
    if (op->regions.size() == 2) {
      const BufferRegion &s = op->regions[op->op == TileOpKind::Atomic ? 1 : 0],
                         &d = op->regions[op->op == TileOpKind::Atomic ? 0 : 1];
      bool whole = op->op == TileOpKind::Copy || (op->op == TileOpKind::Atomic && op->args.empty());
      if (whole && d.buffer->scope == Scope::Global && covers_whole(s)) note_store_tile(s.buffer);
    }
    op_info(op->op).infer_fragments(op, *this);
    // Regions are not indexed accesses: do not classify them as loads.
  }

  // What a tile op sees of the kernel around it (ops/registers.h).
  bool in_parallel_loop() const override { return loop_ != nullptr; }
  void element_access(const Buffer& b, const std::vector<Expr>& idx) override { classify(b, idx); }
  const std::map<const VarNode*, Expr>& lets() const override { return lets_; }

 private:
  void classify(const Buffer& b, const std::vector<Expr>& idx, bool store = false) {
    if (!a_.candidate(b)) return;
    note_region(b, loop_ ? loop_span_ : SourceSpan{});
    if (!loop_) return a_.demote(b, "an element access outside a T.Parallel loop");
    if (partial_update(b, idx)) return;        // a per-thread partial (replicate_scalar_fragments)
    if (store && loop_scalar(b, idx)) return;  // a per-iteration scalar (replicate_scalar_fragments)
    if (extents_.empty())
      return a_.demote(b, at(loop_span_, "accessed in a T.Parallel loop whose extents are not constants from 0"));
    switch (loop_access(b, idx)) {
      case Access::Full:
        return loop_->full.push_back(b.get());
      case Access::Row:
        return loop_->rows.push_back(b.get());
      case Access::Col:
        return loop_->cols.push_back(b.get());
      case Access::ColParent:
        return loop_->col_parents.push_back(b.get());
      case Access::Other:
        break;
    }
    a_.demote(b, at(loop_span_,
                    "indexed by something other than the T.Parallel loop's variables (all of them, all "
                    "but the last for a per-row vector, or the last of two for a per-column vector)"));
  }

  // A fragment seen through T.reshape: its indices give the element at the row-major
  // position of the loop variables (`s[i, j * H + k]` in a loop over [N, Q, H] for an
  // [N, Q * H] fragment), so the loop covers it whole, in another shape; the Lowerer
  // then runs the loop over its registers.
  bool reshaped(const std::vector<int64_t>& shape, const std::vector<Expr>& idx) const {
    if (idx.size() != shape.size() || shape == extents_) return false;
    int64_t n = 1, m = 1;
    for (int64_t d : shape) n *= d;
    for (int64_t e : extents_) m *= e;
    if (n != m) return false;
    DataType t = idx[0].dtype();
    for (const Expr& e : idx)
      if (e.dtype() != t) return false;
    for (const Var& v : loop_vars_)
      if (v.dtype() != t) return false;
    Expr a = idx[0], b = loop_vars_[0];
    for (size_t d = 1; d < shape.size(); ++d) a = add(mul(a, make_const(t, shape[d])), idx[d]);
    for (size_t d = 1; d < vars_.size(); ++d) b = add(mul(b, make_const(t, extents_[d])), loop_vars_[d]);
    auto diff = as_const_int(simplify(sub(a, b)));
    return diff && *diff == 0;
  }

  Analysis& a_;
  int64_t region_lo_ = 0;                // the first thread of the T.ws region being collected
  std::map<const VarNode*, Expr> lets_;  // visit(LetStmtNode)
  Analysis::Loop* loop_ = nullptr;
  SourceSpan loop_span_;
  std::vector<const VarNode*> vars_;
  std::vector<Var> loop_vars_;
  std::vector<int64_t> extents_;
};

}  // namespace

void collect(Analysis& a, const Stmt& body) {
  Collector(a).visit(body);
}

}  // namespace tl::fragments
