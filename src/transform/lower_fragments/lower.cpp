// Phase 3 of lower_fragments (plan.h): the fragments that keep their registers become
// per-thread register arrays, and the T.Parallel nests over them unrolled loops over
// the registers a thread holds; nests over memory alone are dealt to the threads in
// vector runs. Tile ops on register fragments lower themselves (ops/registers.h).
#include "arith/bounds.h"
#include "arith/simplify.h"
#include "ir/device_calls.h"
#include "ir/structural.h"
#include "ir/visitor.h"
#include "ops/extent_util.h"
#include "ops/packed_pairs.h"
#include "ops/tile_op.h"
#include "transform/lower_explicit_hopper.h"
#include "transform/lower_fragments/plan.h"
#include "transform/lower_tile_ops.h"
#include "transform/shared_writes.h"

namespace tl::fragments {
namespace {

// The shared tiles a tl::tma_load of `s` writes (pipeline_loops).
std::set<BufKey> tma_destinations(const Stmt& s) {
  std::set<BufKey> out;
  for_each_expr(s, [&](const Expr& e) {
    bool load = false;
    Buffer b = tma_call_tile(e.as<CallNode>(), &load);
    if (b.defined() && load) out.insert(b.get());
  });
  return out;
}

// The buffers of `s` that only TMA writes.
std::set<BufKey> tma_only_buffers(const Stmt& s) {
  SharedWrites w = shared_writes(s);
  std::set<BufKey> out;
  for (BufKey b : w.tma)
    if (w.tma_only(b)) out.insert(b);
  return out;
}

// `tl::atomic_add<order>(&dst[...], value)` (an element atomic as lowered) into a
// float32 / float16 / bfloat16 tensor: the parts a vector run of it needs.
struct AtomicAddCall {
  const CallNode* call = nullptr;
  const BufferLoadNode* dst = nullptr;
  int64_t order = 0;
};
std::optional<AtomicAddCall> vectorizable_atomic_add(const Stmt& s) {
  auto* ev = s.as<EvaluateNode>();
  auto* c = ev ? ev->value.as<CallNode>() : nullptr;
  const std::string* name = extern_name(c);
  if (!name || device_call_of(*name) != DeviceCall::kAtomicAddCall || c->args.size() != 3) return std::nullopt;
  auto* address = c->args[1].as<CallNode>();
  auto* dst = address && address->op == Intrinsic::AddressOf ? address->args[0].as<BufferLoadNode>() : nullptr;
  if (!dst || dst->buffer->scope != Scope::Global) return std::nullopt;
  DataType t = dst->buffer->dtype;
  if (t != dtype::Float32 && t != dtype::Float16 && t != dtype::BFloat16) return std::nullopt;
  std::optional<int64_t> order = device_call_int_arg(*name);
  if (!order) return std::nullopt;
  return AtomicAddCall{c, dst, *order};
}

class Lowerer : public IRMutator {
 public:
  Lowerer(const Analysis& a, const Solution& s, Expr thread, const std::set<BufKey>& tma_tiles,
          std::set<BufKey> tma_only, bool cuda)
      : a_(a), s_(s), t_(std::move(thread)), threads_(a.threads), cuda_(cuda), tma_only_(std::move(tma_only)) {
    for (auto& [k, l] : s_.layouts) {
      const Buffer& b = a_.candidates.at(k);
      regs_[k] = Buffer::make(b->name, b->dtype, {int_imm(l->local_size())}, Scope::Local, {}, b->span);
    }
    for (const auto& [k, bl] : operand_layouts(a_, s_)) {
      const auto& [b, l] = bl;
      // A tile TMA fills was laid out by pipeline_loops, from the plan of the
      // kernel before pipelining (LayoutFacts::shared_tile_layouts).
      TL_ICHECK(!tma_tiles.count(k) || (b->layout && b->layout->same_placement(*l.layout)), "the TMA-filled tile '",
                b->name, "' has layout ", b->layout ? b->layout->str() : "none", " but its gemm reads it as ",
                l.layout->str());
      swizzled_[k] = with_layout(b, l.layout);
    }
    for (BufKey k : a_.partial_updates)
      if (auto it = a_.replicated.find(k); it != a_.replicated.end()) partials_.insert(it->second.get());
  }
  using IRMutator::mutate;

  Buffer mutate_buffer(const Buffer& b) override {
    if (auto it = swizzled_.find(b.get()); it != swizzled_.end()) return it->second;
    if (auto it = a_.replicated.find(b.get()); it != a_.replicated.end()) return it->second;
    return b;
  }

 protected:
  using IRMutator::visit;

  Stmt visit(const AllocateNode* op, const Stmt& self) override {
    if (auto it = regs_.find(op->buffer.get()); it != regs_.end()) return allocate(it->second, mutate(op->body));
    if (auto it = a_.replicated.find(op->buffer.get()); it != a_.replicated.end())
      return allocate(it->second, mutate(op->body));
    return IRMutator::visit(op, self);
  }

  // A T.ws region: thread t_ counts from its first thread, work spreads over its threads.
  Stmt visit(const AttrNode* op, const Stmt& self) override {
    auto [lo, count] = warp_group_range(op);
    if (count == 0) return IRMutator::visit(op, self);
    Scoped<Expr> thread(t_, sub(t_, int_imm(lo)));
    Scoped<int64_t> threads(threads_, count);
    return IRMutator::visit(op, self);
  }

  Expr visit(const BufferLoadNode* op, const Expr& self) override {
    TL_ICHECK(!regs_.count(op->buffer.get()), "register fragment '", op->buffer->name, "' read outside its lowering");
    return IRMutator::visit(op, self);
  }

  Stmt visit(const ForNode* op, const Stmt& self) override {
    if (op->for_kind != ForKind::Parallel) return IRMutator::visit(op, self);
    if (Stmt serial = per_thread_nest(self); serial.defined()) return mutate(serial);
    std::vector<const ForNode*> nest = parallel_nest(op);
    // The driver: a register fragment indexed by all loop variables.
    FragmentLayoutPtr driver;
    std::set<BufKey> touched;
    for_each_expr(nest.back()->body, [&](const Expr& e) {
      if (auto* l = e.as<BufferLoadNode>()) touched.insert(l->buffer.get());
    });
    struct Stores : IRVisitor {
      std::set<BufKey>* out;
      using IRVisitor::visit;
      void visit(const BufferStoreNode* s) override {
        out->insert(s->buffer.get());
        IRVisitor::visit(s);
      }
      void visit(const TileOpNode* op) override {  // element-wise atomics in the loop
        for (const BufferRegion& r : op->regions) out->insert(r.buffer.get());
        IRVisitor::visit(op);
      }
    } stores;
    stores.out = &touched;
    stores.visit(nest.back()->body);
    // Or a fragment the loop covers through T.reshape (Collector::reshaped in
    // collect.cpp): as many elements as the loop, in another shape.
    std::vector<int64_t> extents;
    int64_t count = 1;
    for (const ForNode* f : nest) {
      auto ex = as_const_int(f->extent);
      extents.push_back(ex ? *ex : -1);
      count = ex && count > 0 ? count * *ex : -1;
    }
    // A fragment of the loop's shape drives it; else one of its rank (a (1,) row vector
    // of a 1-d loop read [0] is not one: it only rides along).
    FragmentLayoutPtr reshaped, same_rank;
    for (BufKey k : touched) {
      auto it = s_.layouts.find(k);
      if (it == s_.layouts.end()) continue;
      const FragmentLayoutPtr& l = it->second;
      if (l->shape().size() == nest.size()) {
        same_rank = l;
        if (l->shape() == extents) driver = l;
      }
      if (l->shape() != extents && elements(l->shape()) == count && count > 0) reshaped = l;
    }
    if (!driver) driver = same_rank;
    if (!driver || (reshaped && driver->shape() != extents)) driver = reshaped;
    if (!driver) {
      // A loop that updates reducer partials stays spread over the threads (each
      // iteration combines into the partial of the one thread that runs it), though
      // it then writes only registers (per_thread_nest).
      bool partials = false;
      for (const auto& [k, b] : a_.replicated) partials = partials || (a_.partial_updates.count(k) && touched.count(k));
      if (partials) {
        Stmt s = IRMutator::visit(op, self);
        auto* f = s.as<ForNode>();
        Attrs ann = f->annotations;
        ann[kSpreadOverThreads] = int64_t(1);
        return for_loop(f->var, f->min, f->extent, f->for_kind, f->body, ann, f->span);
      }
      // (mutate: the accesses take the swizzled versions of their buffers)
      if (Stmt v = vectorize_nest(nest); v.defined()) return thread_op(mutate(v));
      return IRMutator::visit(op, self);
    }
    Var k("k", dtype::Int32);
    std::vector<Expr> logical = driver->logical(t_, k);
    if (driver->shape() != extents && elements(driver->shape()) == count) {
      // The row-major position of the driver's element, over the loop's extents.
      Expr flat = int_imm(0);
      for (size_t d = 0; d < logical.size(); ++d) flat = add(mul(flat, int_imm(driver->shape()[d])), logical[d]);
      logical.assign(nest.size(), Expr());
      for (int d = int(nest.size()) - 1; d >= 0; --d) {
        logical[d] = d == 0 ? flat : floormod(flat, int_imm(extents[d]));
        if (d > 0) flat = floordiv(flat, int_imm(extents[d]));
      }
    }
    Stmt body = RegisterAccess(*this, driver, k).mutate(nest.back()->body);
    body = mutate(body);
    // A row vector drives the loop: every thread holding a row runs its iteration.
    // Only the row's first thread writes memory (shared, global, atomics); the others
    // would repeat its read-modify-write (`l[i] = l[i] * 2 + s[i]` on a demoted l,
    // `T.atomic_add(O[i], row_sum[i])`).
    if (driver->kind() == FragmentLayout::Kind::Rows)
      body = LeaderWrites(row_leader(*driver->parent(), t_), partials_).mutate(body);
    // The same for a column vector held by several threads.
    if (driver->kind() == FragmentLayout::Kind::Cols && !is_const_true(driver->col_leader(t_)))
      body = LeaderWrites(driver->col_leader(t_), partials_).mutate(body);
    Expr valid = driver->valid(t_, k);
    if (Stmt pairs = paired_cast(body, k, driver->local_size(), valid, op->span); pairs.defined())
      return thread_op(pairs);
    if (driver->shape() == extents && is_const_true(valid))
      if (Stmt runs = atomic_runs(nest, *driver, body, k, logical, op->span); runs.defined()) return thread_op(runs);
    if (!is_const_true(valid)) body = if_then_else(valid, body);
    for (int d = int(nest.size()) - 1; d >= 0; --d)
      body = let_stmt(nest[d]->var, cast(nest[d]->var.dtype(), logical[d]), body);
    return thread_op(for_loop(k, int_imm(0), int_imm(driver->local_size()), ForKind::Unrolled, body, {}, op->span));
  }

  // A T.Parallel loop over a register fragment whose whole body is one atomic add of
  // a value into a float32 / float16 / bfloat16 tensor at an index whose last dimension
  // steps with the innermost loop variable (`T.atomic_add(C[i0 + i, j0 + j],
  // C_local[i, j])`): the registers of each run of the layout (consecutive registers
  // holding consecutive elements of the last dim) go in one tl::AtomicAddx2 / x4, as
  // a region atomic of the fragment does (lower_atomic); the device function adds
  // element by element where the address is not aligned to the run.
  Stmt atomic_runs(const std::vector<const ForNode*>& nest, const FragmentLayout& driver, const Stmt& body,
                   const Var& k, const std::vector<Expr>& logical, const SourceSpan& span) {
    if (!cuda_) return Stmt();
    std::map<const VarNode*, Expr> lets;
    Stmt b = body;
    while (auto* l = b.as<LetStmtNode>()) {
      lets[l->var.node()] = substitute(l->value, lets);
      b = l->body;
    }
    // lower_atomic_serial's guard of the destination's bounds, if any.
    Expr guard;
    if (auto* g = b.as<IfThenElseNode>(); g && !g->else_case.defined()) {
      guard = substitute(g->cond, lets);
      b = g->then_case;
    }
    std::optional<AtomicAddCall> atomic = vectorizable_atomic_add(b);
    if (!atomic || atomic->dst->buffer->layout) return Stmt();
    const CallNode* c = atomic->call;
    const BufferLoadNode* dst = atomic->dst;
    DataType t = dst->buffer->dtype;
    // The widest w (4 or 2) such that registers r * w .. r * w + w - 1 hold w consecutive
    // elements of the last dim, checked register by register (the layout's run() is a
    // lower bound: a block of one thread holds all its elements in order).
    const int64_t n = driver.local_size();
    auto consecutive = [&](int64_t w) {
      if (n % w != 0 || n > 1024) return false;
      if (driver.run() % w == 0) return true;
      for (int64_t q = 0; q < n; ++q) {
        if (q % w == w - 1) continue;
        std::vector<Expr> a = driver.logical(t_, int_imm(q)), b = driver.logical(t_, int_imm(q + 1));
        for (size_t d = 0; d < a.size(); ++d) {
          auto step = as_const_int(simplify(sub(b[d], a[d])));
          if (!step || *step != (d + 1 == a.size() ? 1 : 0)) return false;
        }
      }
      return true;
    };
    int64_t w = t == dtype::Float32 ? 4 : 2;  // a pair is the widest 16-bit reduction
    while (w > 1 && !consecutive(w)) w /= 2;
    if (w < 2 || !is_const_one(dst->buffer.effective_strides().back())) return Stmt();
    // The destination moves one element per step of the innermost variable, along its
    // last dimension only.
    const Var& j = nest.back()->var;
    std::vector<Expr> idx;
    for (const Expr& e : dst->indices) idx.push_back(substitute(e, lets));
    std::map<const VarNode*, Expr> next{{j.node(), add_one(j)}};
    for (size_t d = 0; d < idx.size(); ++d) {
      auto step = as_const_int(simplify(sub(substitute(idx[d], next), idx[d])));
      if (!step || *step != (d + 1 == idx.size() ? 1 : 0)) return Stmt();
    }
    Expr value = cast(t, substitute(c->args[2], lets));
    // Register k0 + e of the run, its loop variables as the layout places it.
    Var r("r", dtype::Int32);
    Expr k0 = mul(r, int_imm(w));
    auto at = [&](const Expr& e, int64_t lane) {
      std::map<const VarNode*, Expr> m{{k.node(), add(k0, int_imm(lane))}};
      std::map<const VarNode*, Expr> vars;
      for (size_t d = 0; d < nest.size(); ++d)
        vars[nest[d]->var.node()] = cast(nest[d]->var.dtype(), substitute(logical[d], m));
      return substitute(substitute(e, vars), m);
    };
    Buffer values = Buffer::make("atomic_values", t, {int_imm(w)}, Scope::Local);
    std::vector<Stmt> run;
    for (int64_t e = 0; e < w; ++e) run.push_back(buffer_store(values, at(value, e), {int_imm(e)}));
    std::vector<Expr> first;
    for (const Expr& e : idx) first.push_back(at(e, 0));
    run.push_back(
        evaluate(call_extern(dtype::Void, atomic_add_run_call(w),
                             {call(Intrinsic::AddressOf, {buffer_load(dst->buffer, first)}),
                              call(Intrinsic::AddressOf, {buffer_load(values, {int_imm(0)})}), int_imm(atomic->order)}),
                 span));
    Stmt vec = allocate(values, seq(run));
    if (guard.defined()) {
      // The whole run inside the tensor: the vector; else each element under its guard.
      Expr inside = bool_imm(true);
      std::vector<Stmt> one;
      for (int64_t e = 0; e < w; ++e) {
        inside = logical_and(inside, at(guard, e));
        std::vector<Expr> where;
        for (const Expr& x : idx) where.push_back(at(x, e));
        Expr single = call_extern(c->dtype, *extern_name(c),
                                  {call(Intrinsic::AddressOf, {buffer_load(dst->buffer, where)}), at(value, e)});
        one.push_back(if_then_else(at(guard, e), evaluate(single, span)));
      }
      inside = simplify(inside);
      if (!is_const_true(inside)) vec = if_then_else(inside, vec, seq(one));
    }
    return for_loop(r, int_imm(0), int_imm(n / w), ForKind::Unrolled, vec, {}, span);
  }
  static Expr add_one(const Var& v) { return add(v, make_const(v.dtype(), 1)); }

  // A T.Parallel loop whose whole body is `dst[...] = D(src[...])` between two register
  // fragments of one layout, on CUDA, where a pair conversion converts the two dtypes
  // (ops/packed_pairs.h): two registers at a time. float32 into float16 / bfloat16 is
  // tl::cast_pair<...> (two values per cvt into one 32-bit register), as lower_copy
  // casts a T.copy between fragments; per element it is a cvt and a byte permute each.
  // The others are tl::convert_pair<...>(&dst[2 k], &src[2 k]). Only where the body
  // names no loop variable but through the register index and the element's validity
  // does not depend on the register. A cast through float32 from a narrower float
  // (`half(float(fp8))`, as the frontend writes some) is exact, so it is the direct one.
  Stmt paired_cast(const Stmt& body, const Var& k, int64_t n, Expr valid, const SourceSpan& span) {
    if (!cuda_ || n % 2 != 0) return Stmt();
    auto is_reg = [&](const Buffer& b) {
      for (const auto& [key, r] : regs_)
        if (r.same_as(b)) return true;
      return false;
    };
    auto at_k = [&](const std::vector<Expr>& idx) { return idx.size() == 1 && idx[0].same_as(k); };
    auto* st = body.as<BufferStoreNode>();
    if (!st || !at_k(st->indices) || !is_reg(st->buffer)) return Stmt();
    const DataType to = st->buffer->dtype;
    auto* c = st->value.as<CastNode>();
    Expr from_value = c ? c->value : Expr();
    if (auto* inner = from_value.defined() ? from_value.as<CastNode>() : nullptr;
        inner && inner->dtype == dtype::Float32 && inner->value.dtype().is_float() && inner->value.dtype().bits() <= 32)
      from_value = inner->value;
    auto* ld = from_value.defined() ? from_value.as<BufferLoadNode>() : nullptr;
    if (!ld || !at_k(ld->indices) || !is_reg(ld->buffer)) return Stmt();
    const DataType from = ld->buffer->dtype;
    const std::string conversion = pair_conversion(from, to);
    if (conversion.empty()) return Stmt();
    Var k2("k", dtype::Int32);
    Expr even = mul(k2, int_imm(2));
    // Both registers of a pair valid together (`floordiv(k, 8) * 4 + tx / 32 < 1`: the
    // same for 2 k2 and 2 k2 + 1), else no pairs.
    if (reads_var(valid, k.node())) {
      BoundAnalyzer bounds;
      bounds.bind(k2, 0, n / 2 - 1);
      Expr v0 = simplify(substitute(valid, {{k.node(), even}}), &bounds);
      Expr v1 = simplify(substitute(valid, {{k.node(), add(even, int_imm(1))}}), &bounds);
      if (!structural_equal(v0, v1)) return Stmt();
      valid = v0;
    }
    Expr dst = call(Intrinsic::AddressOf, {buffer_load(st->buffer, {even})});
    Stmt pair = from == dtype::Float32 && (to == dtype::Float16 || to == dtype::BFloat16)
                    ? evaluate(call_extern(
                          dtype::Void, str_cat("tl::cast_pair<", conversion, ">"),
                          {dst, buffer_load(ld->buffer, {even}), buffer_load(ld->buffer, {add(even, int_imm(1))})}))
                    : evaluate(call_extern(dtype::Void, str_cat("tl::convert_pair<", conversion, ">"),
                                           {dst, call(Intrinsic::AddressOf, {buffer_load(ld->buffer, {even})})}));
    if (!is_const_true(valid)) pair = if_then_else(valid, pair);
    // The store names no loop variable (its only index is k): their lets are not needed.
    return for_loop(k2, int_imm(0), int_imm(n / 2), ForKind::Unrolled, pair, {}, span);
  }

  Stmt visit(const TileOpNode* op, const Stmt& self) override {
    if (op->op == TileOpKind::Reduce && attr_int(op->attrs, "finalize", 0) &&
        a_.replicated.count(op->regions[0].buffer.get()))
      return thread_op(op_info(op->op).lower_registers(op, context()));
    // A replicated reducer copied out to memory: once it is finalized every thread
    // holds the same values, so the copy's elements are spread over the threads as a
    // copy of shared memory is (rather than every thread writing all of them).
    if (op->op == TileOpKind::Copy && a_.replicated.count(op->regions[0].buffer.get()) &&
        a_.reducers.count(op->regions[0].buffer.get())) {
      Stmt s = IRMutator::visit(op, self);
      return op_info(TileOpKind::Copy).lower_serial(s.as<TileOpNode>());
    }
    bool touches = false;
    for (const BufferRegion& r : op->regions) touches |= s_.layouts.count(r.buffer.get()) > 0;
    // (A copy to or from a thread's own registers stays a per-thread loop: lower_tile_ops.)
    if (!touches && op->op == TileOpKind::Copy && !touches_registers(op)) {
      Stmt s = lower_mem_copy(op, context());
      if (s.defined()) return thread_op(s);
    }
    // An atomic between memories (`T.atomic_add(C[...], C_shared)`): spread over the
    // threads as a T.Parallel nest, in vector runs where vectorize_nest proves them
    // (else lower_tile_ops spreads it element by element).
    if (!touches && op->op == TileOpKind::Atomic && cuda_ && !touches_registers(op) &&
        !attr_int(op->attrs, "per_thread", 0)) {
      Stmt nest = parallel_loops(simplify(op_info(op->op).lower_serial(op)));
      std::vector<const ForNode*> loops;
      for (auto* f = nest.as<ForNode>(); f && f->for_kind == ForKind::Parallel; f = f->body.as<ForNode>())
        loops.push_back(f);
      if (!loops.empty())
        if (Stmt v = vectorize_nest(loops); v.defined()) return thread_op(mutate(v));
    }
    if (!touches) return IRMutator::visit(op, self);
    return thread_op(op_info(op->op).lower_registers(op, context()));
  }

 private:
  // Rewrites the fragment accesses of a T.Parallel body driven by `driver`.
  class RegisterAccess : public IRMutator {
   public:
    RegisterAccess(Lowerer& up, FragmentLayoutPtr driver, Var k)
        : up_(up), driver_(std::move(driver)), k_(std::move(k)) {
      if (driver_->shape().size() == 2) {
        driver_rows_ = FragmentLayout::rows(driver_);
        driver_cols_ = FragmentLayout::cols(driver_);
      } else if (driver_->shape().size() == 1 && driver_->kind() == FragmentLayout::Kind::Blocked) {
        driver_rows_ = FragmentLayout::rows(driver_);  // its one row
      }
    }
    using IRMutator::mutate;

   protected:
    using IRMutator::visit;
    Expr visit(const BufferLoadNode* op, const Expr& self) override {
      if (auto reg = local_index(op->buffer, op->indices))
        return buffer_load(up_.regs_.at(op->buffer.get()), {*reg}, op->span);
      return IRMutator::visit(op, self);
    }
    Stmt visit(const BufferStoreNode* op, const Stmt& self) override {
      if (auto reg = local_index(op->buffer, op->indices))
        return buffer_store(up_.regs_.at(op->buffer.get()), mutate(op->value), {*reg}, op->span);
      return IRMutator::visit(op, self);
    }
    // An element-wise T.atomic_add(dst[...], frag[i, j]) inside the loop: each thread
    // updates its own elements.
    Stmt visit(const TileOpNode* op, const Stmt& self) override {
      if (op->op != TileOpKind::Atomic) return IRMutator::visit(op, self);
      return mutate(op_info(op->op).lower_serial(op));
    }

   private:
    std::optional<Expr> local_index(const Buffer& b, const std::vector<Expr>& idx) {
      auto it = up_.s_.layouts.find(b.get());
      if (it == up_.s_.layouts.end()) return std::nullopt;
      const FragmentLayoutPtr& l = it->second;
      if (l->equals(*driver_)) return Expr(k_);
      // A column vector of this driver's tile: the register of the driver's column.
      if (l->kind() == FragmentLayout::Kind::Cols) {
        TL_ICHECK(driver_cols_ && l->equals(*driver_cols_), "fragment '", b->name, "' has layout ", l->str(),
                  " in a loop driven by ", driver_->str());
        return driver_cols_->col_local(k_);
      }
      // A tile read [e, j] in a loop over its columns j (driven by a column vector of
      // it): row e of the column in register k, in the thread's own registers.
      if (driver_->kind() == FragmentLayout::Kind::Cols && l->holds_whole_columns() && driver_->parent()->equals(*l) &&
          idx.size() == 2)
        return driver_->parent_register(mutate(idx[0]), k_);
      // A row vector: the rows of this driver, or of a tile whose rows the threads
      // hold alike (then the driver's rows say which register holds the row).
      TL_ICHECK(l->kind() == FragmentLayout::Kind::Rows && driver_rows_ && l->same_rows(*driver_rows_), "fragment '",
                b->name, "' has layout ", l->str(), " in a loop driven by ", driver_->str());
      return driver_rows_->row_local(k_);
    }
    Lowerer& up_;
    FragmentLayoutPtr driver_, driver_rows_, driver_cols_;
    Var k_;
  };

  // Wraps each store to memory that is not a thread's registers, and each atomic
  // (a tile op, or the call lower_tile_ops made of an element-wise one), in
  // `if (leader)`.
  class LeaderWrites : public IRMutator {
   public:
    // (`partials`: reducer partials, which only the leader combines an iteration into.)
    LeaderWrites(Expr leader, const std::set<const BufferNode*>& partials)
        : leader_(std::move(leader)), partials_(partials) {}
    using IRMutator::mutate;

   protected:
    using IRMutator::visit;
    Stmt visit(const BufferStoreNode* op, const Stmt& self) override {
      Scope s = op->buffer->scope;
      bool own = (s == Scope::Local || s == Scope::LocalVar) && !partials_.count(op->buffer.get());
      return own ? self : if_then_else(leader_, self);
    }
    Stmt visit(const TileOpNode* op, const Stmt& self) override {
      return op->op == TileOpKind::Atomic ? if_then_else(leader_, self) : IRMutator::visit(op, self);
    }
    Stmt visit(const EvaluateNode* op, const Stmt& self) override {
      const std::string* name = extern_name(op->value);
      return name && is_atomic_call(*name) ? if_then_else(leader_, self) : self;
    }

   private:
    Expr leader_;
    const std::set<const BufferNode*>& partials_;
  };

  static Stmt thread_op(Stmt s) { return attr_stmt(kThreadOpAttr, int64_t(1), std::move(s)); }

  // A T.Parallel nest over memory (no register fragment), `dst[...] = f(loads)` or,
  // on CUDA, `T.atomic_add(dst[...], f(loads))` into a float32 / float16 / bfloat16
  // tensor, under an optional guard, split into runs of v consecutive elements of the
  // innermost variable, dealt to the threads in turn. A run whose accesses are all
  // in bounds and whose guard holds at both ends (the guard is a conjunction of
  // comparisons of affine expressions, so it holds in between) moves as vectors
  // (an atomic add: tl::AtomicAddx2 / x4, at most 4 elements); any other run takes
  // the element-by-element body.
  Stmt vectorize_nest(const std::vector<const ForNode*>& nest) {
    std::vector<int64_t> ext;
    for (const ForNode* f : nest) {
      auto mn = as_const_int(f->min), ex = as_const_int(f->extent);
      if (!mn || *mn != 0 || !ex) return Stmt();
      ext.push_back(*ex);
    }
    Stmt body = nest.back()->body;
    // Names the user bound inside the loop (`idx = bx * block + i`) are inlined.
    while (auto* l = body.as<LetStmtNode>()) body = substitute(l->body, {{l->var.node(), l->value}});
    Expr guard;
    if (auto* i = body.as<IfThenElseNode>(); i && !i->else_case.defined()) {
      guard = i->cond;
      body = i->then_case;
    }
    // The write: a store, or an atomic add of `value` at `&dst[...]` (order >= 0).
    const BufferStoreNode* store = body.as<BufferStoreNode>();
    int64_t order = -1;
    if (!store) {
      std::optional<AtomicAddCall> atomic = vectorizable_atomic_add(body);
      if (!cuda_ || !atomic) return Stmt();
      order = atomic->order;
      const BufferLoadNode* dst = atomic->dst;
      body = buffer_store(dst->buffer, cast(dst->buffer->dtype, atomic->call->args[2]), dst->indices);
      store = body.as<BufferStoreNode>();
    }
    if (!store || store->buffer->dtype.lanes() != 1 || s_.layouts.count(store->buffer.get())) return Stmt();
    const Var& j = nest.back()->var;
    // Every access: last index = (something without j) + j, the others without j.
    std::vector<const BufferLoadNode*> loads;
    bool ok = true;
    for_each_expr(evaluate(store->value), [&](const Expr& e) {
      if (auto* l = e.as<BufferLoadNode>()) loads.push_back(l);
      if (auto* c = e.as<CallNode>(); c && c->op == Intrinsic::AddressOf) ok = false;
    });
    if (!ok) return Stmt();
    auto uses_j = [&](const Expr& e) {
      bool found = false;
      for_each_expr(evaluate(e), [&](const Expr& x) { found |= x.get() == j.get(); });
      return found;
    };
    int64_t widest = elem_bytes(store->buffer->dtype);
    auto unit_stride = [&](const Buffer& b, const std::vector<Expr>& idx) {
      if (s_.layouts.count(b.get()) || b->dtype.lanes() != 1 || b->dtype.is_sub_byte() || idx.empty()) return false;
      for (size_t d = 0; d + 1 < idx.size(); ++d)
        if (uses_j(idx[d])) return false;
      std::map<const VarNode*, Expr> next{{j.node(), add(j, make_const(j.dtype(), 1))}};
      Expr step = simplify(sub(substitute(idx.back(), next), idx.back()));
      auto c = as_const_int(step);
      return c && *c == 1 && is_const_one(b.effective_strides().back());
    };
    if (!unit_stride(store->buffer, store->indices)) return Stmt();
    for (const BufferLoadNode* l : loads) {
      if (!uses_j(buffer_load(l->buffer, l->indices))) continue;  // broadcast: read once per element
      if (!unit_stride(l->buffer, l->indices)) return Stmt();
      widest = std::max(widest, elem_bytes(l->buffer->dtype));
    }
    if (guard.defined() && !affine_comparisons(guard)) return Stmt();
    // An atomic run: at most 4 float32 elements, 2 of float16 / bfloat16 (the pair is the
    // widest 16-bit reduction, as TileLang's AtomicAddx2).
    const int64_t atomic_max = store->buffer->dtype == dtype::Float32 ? 4 : 2;
    int64_t cols = ext.back(),
            v = std::min<int64_t>(order >= 0 ? std::min<int64_t>(16 / widest, atomic_max) : 16 / widest, cols);
    auto aligned = [&](const Buffer& b, const std::vector<Expr>& idx, int64_t w) {
      std::map<const VarNode*, Expr> at0{{j.node(), make_const(j.dtype(), 0)}};
      if (!divisible(simplify(substitute(idx.back(), at0)), w)) return false;
      auto strides = b.effective_strides();
      for (size_t d = 0; d + 1 < strides.size(); ++d)
        if (!divisible(strides[d], w)) return false;
      return true;
    };
    auto all_aligned = [&](int64_t w) {
      if (cols % w != 0 || !aligned(store->buffer, store->indices, w)) return false;
      for (const BufferLoadNode* l : loads)
        if (uses_j(buffer_load(l->buffer, l->indices)) && !aligned(l->buffer, l->indices, w)) return false;
      return true;
    };
    while (v > 1 && !all_aligned(v)) v /= 2;
    if (v < 2) return Stmt();

    int64_t runs_per_row = cols / v, runs = runs_per_row;
    for (size_t d = 0; d + 1 < ext.size(); ++d) runs *= ext[d];
    int64_t iters = (runs + threads_ - 1) / threads_;
    Var it("it", dtype::Int32);
    Expr r = add(mul(it, int_imm(threads_)), t_);
    Var j0(j.name() + "_v", j.dtype());
    std::vector<std::pair<Var, Expr>> binds;  // outer nest vars and the run start
    Expr rest = floordiv(r, int_imm(runs_per_row));
    for (int d = int(ext.size()) - 2; d >= 0; --d) {
      binds.emplace_back(nest[d]->var, cast(nest[d]->var.dtype(), d == 0 ? rest : floormod(rest, int_imm(ext[d]))));
      if (d > 0) rest = floordiv(rest, int_imm(ext[d]));
    }
    binds.emplace_back(j0, cast(j.dtype(), mul(floormod(r, int_imm(runs_per_row)), int_imm(v))));
    std::map<const VarNode*, Expr> at_start{{j.node(), Expr(j0)}};
    std::map<const VarNode*, Expr> at_end{{j.node(), add(j0, make_const(j.dtype(), v - 1))}};
    // The fast run: one vector per access.
    Expr fast = bool_imm(true);
    if (guard.defined()) fast = logical_and(substitute(guard, at_start), substitute(guard, at_end));
    std::vector<Stmt> pre;
    std::vector<Buffer> temps;
    std::map<const BufferLoadNode*, Buffer> temp_of;
    for (const BufferLoadNode* l : loads) {
      if (!uses_j(buffer_load(l->buffer, l->indices)) || temp_of.count(l)) continue;
      Buffer tmp = Buffer::make(l->buffer->name + "_v", l->buffer->dtype, {int_imm(v)}, Scope::Local);
      std::vector<Expr> idx;
      for (const Expr& e : l->indices) idx.push_back(substitute(e, at_start));
      if (l->buffer->scope == Scope::Global) fast = logical_and(fast, run_in_bounds(l->buffer, idx, v));
      pre.push_back(evaluate(call_extern(dtype::Void, device_call_name(kLoadVecCall, {v}),
                                         {address_of(buffer_load(tmp, {int_imm(0)}), AddressAccess::Write),
                                          address_of(buffer_load(l->buffer, idx), AddressAccess::Read)})));
      temps.push_back(tmp);
      temp_of[l] = tmp;
    }
    std::vector<Expr> sidx;
    for (const Expr& e : store->indices) sidx.push_back(substitute(e, at_start));
    if (store->buffer->scope == Scope::Global) fast = logical_and(fast, run_in_bounds(store->buffer, sidx, v));
    Var e("e", dtype::Int32);
    struct UseTemps : IRMutator {
      const std::map<const BufferLoadNode*, Buffer>* temps;
      Expr lane;
      using IRMutator::mutate;
      using IRMutator::visit;
      Expr visit(const BufferLoadNode* op, const Expr& self) override {
        auto it = temps->find(op);
        return it == temps->end() ? IRMutator::visit(op, self) : buffer_load(it->second, {lane});
      }
    } use;
    use.temps = &temp_of;
    use.lane = e;
    Buffer out = Buffer::make(store->buffer->name + "_v", store->buffer->dtype, {int_imm(v)}, Scope::Local);
    std::map<const VarNode*, Expr> at_lane{{j.node(), add(j0, cast(j.dtype(), e))}};
    Expr value = substitute(use.mutate(store->value), at_lane);
    std::vector<Stmt> vec = pre;
    Stmt pairs = order < 0 && cuda_ ? packed_pairs(out, value, e, v) : Stmt();
    vec.push_back(pairs.defined()
                      ? pairs
                      : for_loop(e, int_imm(0), int_imm(v), ForKind::Unrolled, buffer_store(out, value, {e})));
    Expr dst_ptr = address_of(buffer_load(store->buffer, sidx), AddressAccess::Write);
    Expr out_ptr = address_of(buffer_load(out, {int_imm(0)}), AddressAccess::Read);
    vec.push_back(order >= 0
                      ? evaluate(call_extern(dtype::Void, atomic_add_run_call(v), {dst_ptr, out_ptr, int_imm(order)}))
                      : evaluate(call_extern(dtype::Void, device_call_name(kStoreVecCall, {v}), {dst_ptr, out_ptr})));
    Stmt vec_run = allocate(out, seq(vec));
    for (const Buffer& tmp : temps) vec_run = allocate(tmp, vec_run);
    // The slow run: the user's body, element by element.
    Stmt slow = for_loop(e, int_imm(0), int_imm(v), ForKind::Unrolled,
                         let_stmt(j, add(j0, cast(j.dtype(), e)), nest.back()->body));
    Stmt run = if_then_else(fast, vec_run, slow);
    for (int b = int(binds.size()) - 1; b >= 0; --b) run = let_stmt(binds[b].first, binds[b].second, run);
    if (runs % threads_ != 0) run = if_then_else(lt(r, int_imm(runs)), run);
    return for_loop(it, int_imm(0), int_imm(iters), iters <= 16 ? ForKind::Unrolled : ForKind::Serial, run, {},
                    nest[0]->span);
  }

  // out[e] = a[e] op b[e] over a run's registers, float16 / bfloat16 add, sub, mul, max
  // or min of two loaded runs: two lanes per instruction (tl::add2<tl::__half2> ...,
  // device/cuda/packed.cuh), which rounds each lane as the element loop does.
  static Stmt packed_pairs(const Buffer& out, const Expr& value, const Var& e, int64_t v) {
    const DataType t = out->dtype;
    auto* b = value.as<BinaryNode>();
    if (v % 2 != 0 || !b || value.dtype() != t || !(t == dtype::Float16 || t == dtype::BFloat16)) return Stmt();
    const char* fn = packed_op_name(b->op);
    auto* x = b->a.as<BufferLoadNode>();
    auto* y = b->b.as<BufferLoadNode>();
    auto lane_run = [&](const BufferLoadNode* l) {
      return l && l->buffer->dtype == t && l->buffer->scope == Scope::Local && l->indices.size() == 1 &&
             l->indices[0].same_as(e);
    };
    if (!fn || !lane_run(x) || !lane_run(y)) return Stmt();
    Var k("k", dtype::Int32);
    Expr even = mul(k, int_imm(2));
    auto at = [&](const Buffer& buf) { return call(Intrinsic::AddressOf, {buffer_load(buf, {even})}); };
    return for_loop(
        k, int_imm(0), int_imm(v / 2), ForKind::Unrolled,
        evaluate(call_extern(dtype::Void, packed_pair_call(fn, t), {at(out), at(x->buffer), at(y->buffer)})));
  }

  // Both ends of a run starting at `idx` (v elements along the last dim) in bounds.
  static Expr run_in_bounds(const Buffer& b, const std::vector<Expr>& idx, int64_t v) {
    std::vector<Expr> last = idx;
    last.back() = add(last.back(), make_const(last.back().dtype(), v - 1));
    return logical_and(in_bounds(b, idx), in_bounds(b, last));
  }

  // A conjunction of comparisons: true at both ends of a run of an affine index
  // means true all along it.
  static bool affine_comparisons(const Expr& e) {
    auto* b = e.as<BinaryNode>();
    if (!b) return false;
    switch (b->op) {
      case BinaryOp::And:
        return affine_comparisons(b->a) && affine_comparisons(b->b);
      case BinaryOp::LT:
      case BinaryOp::LE:
      case BinaryOp::GT:
      case BinaryOp::GE:
        return affine(b->a) && affine(b->b);
      default:
        return false;
    }
  }
  static bool affine(const Expr& e) {
    if (as_const_int(e) || e.as<VarNode>()) return true;
    if (auto* c = e.as<CastNode>()) return c->value.dtype().is_integer() && affine(c->value);
    auto* b = e.as<BinaryNode>();
    if (!b) return false;
    if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) return affine(b->a) && affine(b->b);
    if (b->op == BinaryOp::Mul) return (as_const_int(b->a) && affine(b->b)) || (as_const_int(b->b) && affine(b->a));
    return false;
  }

  LowerContext context() {
    return LowerContext{a_,
                        s_,
                        t_,
                        threads_,
                        cuda_,
                        regs_,
                        [this](const Buffer& b) { return mutate_buffer(b); },
                        [this](const BufferRegion& r) { return mutate_region(r); },
                        tma_only_};
  }

  const Analysis& a_;
  const Solution& s_;
  Expr t_;
  int64_t threads_;
  std::set<const BufferNode*> partials_;  // the registers of replicated reducers' partials
  bool cuda_;                             // fragments cast in pairs (tl::cast_pair, tl::convert_pair)
  std::map<BufKey, Buffer> regs_;
  std::map<BufKey, Buffer> swizzled_;
  std::set<BufKey> tma_only_;
};

}  // namespace

Stmt lower_kernel_body(const Stmt& body, const Analysis& a, const Solution& s, Expr thread, bool cuda) {
  return Lowerer(a, s, std::move(thread), tma_destinations(body), tma_only_buffers(body), cuda).mutate(body);
}

}  // namespace tl::fragments
