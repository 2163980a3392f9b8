#include "transform/plan_barriers.h"

#include <set>

#include "ir/device_calls.h"
#include "ir/visitor.h"
#include "ops/extent_util.h"
#include "transform/lower_explicit_hopper.h"
#include "transform/lower_tile_ops.h"
#include "transform/tma_copy.h"

namespace tl {
namespace {

// A warp-level call whose value differs between lanes with the same arguments: a
// shuffle, vote or ballot, or the lane mask.
bool across_lanes(const std::string& callee) {
  std::optional<DeviceCall> k = device_call_of(callee);
  using D = DeviceCall;
  return k && (*k == D::kShflSyncCall || *k == D::kShflXorSyncCall || *k == D::kShflDownSyncCall ||
               *k == D::kShflUpSyncCall || *k == D::kBallotSyncCall || *k == D::kBallotCall || *k == D::kAnySyncCall ||
               *k == D::kAllSyncCall || *k == D::kActivemaskCall);
}

using BufKey = const BufferNode*;

bool block_shared(const Buffer& b) {
  return b->scope == Scope::Shared || b->scope == Scope::SharedDyn || b->scope == Scope::Fragment;
}

// Shared buffers accessed since the last barrier that orders them. A wgmma issued
// without a wait (Pending = 1) reads its shared operands until tl::wgmma_wait<0>():
// a barrier does not order those reads, the wait turns them into ordinary ones.
// Writes of thread-level statements (`simt_writes`, each thread its own elements)
// need no barrier between them: two such stores to one element by different
// threads are unordered on the GPU with or without one in between, unless something
// reads it in between (a read orders them). Against a tile op's writes, whose
// elements fall to other threads, they are ordered as any write.
struct Access {
  std::set<BufKey> reads, writes, async_reads, simt_writes;
  void clear() { reads.clear(), writes.clear(), simt_writes.clear(); }
  void merge(const Access& o) {
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
    async_reads.insert(o.async_reads.begin(), o.async_reads.end());
    simt_writes.insert(o.simt_writes.begin(), o.simt_writes.end());
  }
  void wgmma_waited() {
    reads.insert(async_reads.begin(), async_reads.end());
    async_reads.clear();
  }
};

// What the block's threads may have accessed since the last barrier (the base), and
// of that what code outside T.ws regions did (`block`) and what each region did (by
// its first thread). A block barrier orders everything; a barrier inside a region (a
// named barrier of its threads) only the region's own accesses. Accesses of two
// different regions are the kernel's to order, with mbarriers: no barrier the
// compiler could place would (the other region's threads do not take it).
struct State : Access {
  Access block;
  std::map<int64_t, Access> regions;
  void clear() {
    Access::clear();
    block.clear();
    for (auto& [first, r] : regions) r.clear();
  }
  void merge(const State& o) {
    Access::merge(o);
    block.merge(o.block);
    for (const auto& [first, r] : o.regions) regions[first].merge(r);
  }
  void wgmma_waited() {
    Access::wgmma_waited();
    block.wgmma_waited();
    for (auto& [first, r] : regions) r.wgmma_waited();
  }
};

bool is_call_to(const Stmt& s, const std::string& name) {
  auto* e = s.as<EvaluateNode>();
  auto* c = e ? e->value.as<CallNode>() : nullptr;
  auto* n = c && c->op == Intrinsic::Extern && !c->args.empty() ? c->args[0].as<StringImmNode>() : nullptr;
  return n && n->value == name;
}

bool meets(const std::set<BufKey>& a, const std::set<BufKey>& b) {
  for (BufKey k : a)
    if (b.count(k)) return true;
  return false;
}

// Accesses `acc` must wait for the pending ones `st`. (A write to a tile a wgmma may
// still read needs the wait first: the pipeline puts one there; the barrier then
// orders it for the other warps.)
bool conflicts(const Access& acc, const Access& st) {
  auto any_write = [](const Access& a, const std::set<BufKey>& b) {
    return meets(a.writes, b) || meets(a.simt_writes, b);
  };
  return any_write(st, acc.reads) || any_write(acc, st.reads) || any_write(acc, st.async_reads) ||
         any_write(st, acc.async_reads) || meets(acc.writes, st.writes) || meets(acc.writes, st.simt_writes) ||
         meets(acc.simt_writes, st.writes);
}

// The shared buffers a statement reads and writes (an address taken counts as both);
// with `skip_async`, not those of the copies that mbarriers order (kAsyncCopyAttr).
Access accesses(const Stmt& s, bool skip_async = false) {
  struct Walk : IRVisitor {
    Access st;
    bool skip_async = false;
    using IRVisitor::visit;
    void visit(const AttrNode* op) override {
      if (!skip_async || op->key != kAsyncCopyAttr) IRVisitor::visit(op);
    }
    void visit(const BufferLoadNode* op) override {
      if (block_shared(op->buffer)) st.reads.insert(op->buffer.get());
      IRVisitor::visit(op);
    }
    void visit(const BufferStoreNode* op) override {
      if (block_shared(op->buffer)) st.writes.insert(op->buffer.get());
      IRVisitor::visit(op);
    }
    void visit(const CallNode* op) override {
      // An address handed to a device call: the callee reads, writes or does both at
      // it, as its mask says (T.access_ptr's, and the lowerings' for the gemm and
      // ldmatrix operands and the vector moves' they pass); without a mask, both.
      if (op->op == Intrinsic::AddressOf) {
        auto* l = op->args[0].as<BufferLoadNode>();
        if (!l || !block_shared(l->buffer)) return IRVisitor::visit(op);
        // A wgmma issued without its wait (ReadInFlight) still reads after the statement.
        const AddressAccess access = address_access(op);
        if (access == AddressAccess::ReadInFlight)
          st.async_reads.insert(l->buffer.get());
        else if (access != AddressAccess::Write)
          st.reads.insert(l->buffer.get());
        if (access == AddressAccess::Write || access == AddressAccess::ReadWrite) st.writes.insert(l->buffer.get());
        for (const Expr& e : l->indices) visit(e);
        return;
      }
      IRVisitor::visit(op);
    }
  } w;
  w.skip_async = skip_async;
  w.visit(s);
  return w.st;
}

// Whether a statement has barriers or block/thread ops inside it (then it is
// planned through rather than treated as one step).
bool compound(const Stmt& s) {
  if (auto* a = s.as<AttrNode>(); a && a->key == kBlockOpAttr) return false;
  auto inside = [](const Stmt& st) {
    auto* a = st.as<AttrNode>();
    return st.as<BarrierNode>() || (a && (a->key == kBlockOpAttr || a->key == kThreadOpAttr));
  };
  if (auto* a = s.as<AttrNode>(); a && a->key == kThreadOpAttr) return any_stmt(a->body, inside);
  return any_stmt(s, inside);
}

// A barrier may only sit where every thread of the block (or region) gets to it, so
// thread-level code is planned statement by statement only under conditions and loop
// bounds that every thread evaluates alike.
// Whether an expression has the same value in every thread of the block: it reads no
// thread index and no register (T.alloc_var, T.alloc_local) or variable that may
// differ between threads (shared tiles and the block-wide fragments left after
// lower_fragments read alike at the same index). A register is uniform when every store into it
// writes a uniform value at uniform indices, under uniform conditions and loop bounds,
// outside block ops, per-thread lowerings and T.ws regions (`v = T.alloc_var(...); v =
// Flag[bx]` then `if v < 0:` is a branch every thread takes alike). Extern calls' values
// (atomics, shuffles) count as varying in such stores. Found as a greatest fixpoint: a
// register assigned from another uniform one stays uniform.
class Uniformity {
 public:
  void enter(const KernelLaunchNode* k) {
    varying_.clear();
    varying_regs_.clear();
    for (const Var& v : k->thread_vars) varying_.insert(v.node());
    Collect c;
    c.visit(k->body);
    for (bool changed = true; changed;) {
      changed = false;
      for (const Def& d : c.defs) {
        bool known = d.var ? varying_.count(d.var) > 0 : varying_regs_.count(d.buffer) > 0;
        if (known || !(d.opaque || !all_uniform(d.deps))) continue;
        if (d.var)
          varying_.insert(d.var);
        else
          varying_regs_.insert(d.buffer);
        changed = true;
      }
    }
  }
  void bind(const Var& v, const Expr& value) {
    if (!uniform(value)) varying_.insert(v.node());
  }
  // The register that makes `e` differ between threads when only registers do (no
  // thread index or variable derived from one), else nullptr.
  const BufferNode* varying_register_only(const Expr& e) const {
    Variation v = variation(e);
    return v.other ? nullptr : v.reg;
  }
  bool uniform(const Expr& e) const {
    Variation v = variation(e);
    return !v.reg && !v.other && !v.call;
  }

 private:
  // A register store or a variable binding, with what its value depends on.
  struct Def {
    const VarNode* var = nullptr;        // a let or loop variable, or
    const BufferNode* buffer = nullptr;  // a register written
    std::vector<Expr> deps;              // value, indices, enclosing conditions and bounds
    bool opaque = false;                 // in a block op, a per-thread lowering, a region, or an extern's value
  };
  struct Collect : IRVisitor {
    std::vector<Def> defs;
    std::vector<Expr> context;
    int opaque = 0;
    using IRVisitor::visit;
    void def(const VarNode* v, const BufferNode* b, std::vector<Expr> deps, bool extern_value = false) {
      deps.insert(deps.end(), context.begin(), context.end());
      defs.push_back(Def{v, b, std::move(deps), opaque > 0 || extern_value});
    }
    void visit(const BufferStoreNode* op) override {
      if (thread_private(op->buffer)) {
        bool ext = false;
        for_each_expr(op->value, [&](const Expr& x) { ext = ext || extern_name(x); });
        std::vector<Expr> deps = op->indices;
        deps.push_back(op->value);
        def(nullptr, op->buffer.get(), deps, ext);
      }
      IRVisitor::visit(op);
    }
    void visit(const LetStmtNode* op) override {
      def(op->var.node(), nullptr, {op->value});
      IRVisitor::visit(op);
    }
    void visit(const ForNode* op) override {
      def(op->var.node(), nullptr, {op->min, op->extent}, op->for_kind == ForKind::Parallel);
      context.push_back(op->min), context.push_back(op->extent);
      IRVisitor::visit(op);
      context.pop_back(), context.pop_back();
    }
    void visit(const IfThenElseNode* op) override {
      context.push_back(op->cond);
      IRVisitor::visit(op);
      context.pop_back();
    }
    void visit(const WhileNode* op) override {
      context.push_back(op->cond);
      IRVisitor::visit(op);
      context.pop_back();
    }
    void visit(const AttrNode* op) override {
      bool hides = op->key == kBlockOpAttr || op->key == kThreadOpAttr || warp_group_range(op).second > 0;
      opaque += hides;
      IRVisitor::visit(op);
      opaque -= hides;
    }
  };
  // What makes `e` differ between threads: a varying register it reads (`reg`), a
  // thread index or a variable computed from one (`other`), or a device
  // call whose value differs between threads with the same arguments (`call`: an
  // atomic's previous value, a shuffle or vote across lanes, the lane mask).
  struct Variation {
    const BufferNode* reg = nullptr;
    bool other = false, call = false;
  };
  Variation variation(const Expr& e) const {
    Variation v;
    for_each_expr(e, [&](const Expr& x) {
      if (const std::string* n = extern_name(x)) v.call = v.call || is_atomic_call(*n) || across_lanes(*n);
      // A fragment left here is block-wide (shared memory, or the cpu target's one array
      // for the block): read at the same index it gives every thread the same value, as
      // a shared tile does; its index tells whether the index is the same.
      if (auto* l = x.as<BufferLoadNode>())
        if (!v.reg && thread_private(l->buffer) && varying_regs_.count(l->buffer.get())) v.reg = l->buffer.get();
      v.other = v.other || varying_.count(x.as<VarNode>());
    });
    return v;
  }
  bool all_uniform(const std::vector<Expr>& es) const {
    for (const Expr& e : es)
      if (!uniform(e)) return false;
    return true;
  }

  std::set<const VarNode*> varying_;
  std::set<const BufferNode*> varying_regs_;
};

// Thread-level code every thread runs alike (a loop with uniform bounds, an `if` on a
// uniform condition, a sequence) that touches shared memory: planned statement by
// statement, so that one thread's write and another's read of a shared buffer in it
// get a barrier between them, as TileLang places them.
bool uniform_thread_code(const Stmt& s, const Uniformity& u) {
  switch (s.kind()) {
    case NodeKind::KernelLaunch:
    case NodeKind::Seq:
    case NodeKind::LetStmt:
    case NodeKind::Allocate:
      break;
    case NodeKind::Attr: {
      const std::string& key = s.as<AttrNode>()->key;
      if (key == kBlockOpAttr || key == kThreadOpAttr || key == kAsyncCopyAttr) return false;
      break;
    }
    case NodeKind::For: {
      auto* f = s.as<ForNode>();
      if (f->for_kind == ForKind::Parallel || !u.uniform(f->min) || !u.uniform(f->extent)) return false;
      break;
    }
    case NodeKind::IfThenElse:
      if (!u.uniform(s.as<IfThenElseNode>()->cond)) return false;
      break;
    case NodeKind::While:
      if (!u.uniform(s.as<WhileNode>()->cond)) return false;
      break;
    default:
      return false;
  }
  Access a = accesses(s);
  return !a.reads.empty() || !a.writes.empty();
}

class Planner {
 public:
  Stmt plan(const Stmt& s, State& st) {
    if (!s.defined()) return s;
    if (s.as<BarrierNode>()) {
      if (s.as<BarrierNode>()->barrier == BarrierKind::Threads) clear(st);
      return s;
    }
    // A pipelined loop's producer copy: its own wait and barrier order it against the
    // loop's reads. Reads from before the loop are not the pipeline's: when the loop is
    // entered again (in a serial or while loop) its first copies would overwrite a
    // stage the previous instance's last gemm may still read, so they wait for them.
    if (auto* a = s.as<AttrNode>(); a && (a->key == kAsyncCopyAttr || a->key == kThreadOpAttr))
      if (auto* inner = a->key == kAsyncCopyAttr ? a : a->body.as<AttrNode>(); inner && inner->key == kAsyncCopyAttr) {
        if (blocked() || region_ >= 0 || !meets(accesses(s).writes, st.reads)) return s;
        clear(st);
        return seq({barrier(BarrierKind::Threads), s});
      }
    static const std::string wait_all = device_call_name(kWgmmaWaitCall, {0});
    if (is_call_to(s, wait_all)) {
      st.wgmma_waited();
      return s;
    }
    if (!compound(s) && (lowered_ || divergent_ || !uniform_thread_code(s, uniform_))) {
      Access acc = accesses(s);
      if ((thread_level_ || (!lowered_ && own_thread_code(s))) && !is_block_op(s)) acc.simt_writes.swap(acc.writes);
      bool sync = !blocked() && conflicts(acc, region_ < 0 ? static_cast<const Access&>(st) : st.regions[region_]);
      if (sync) clear(st);
      st.Access::merge(acc);
      (region_ < 0 ? st.block : st.regions[region_]).merge(acc);
      return sync ? seq({barrier(BarrierKind::Threads), s}) : s;
    }
    // Not compound and planned through: thread-level code every thread runs alike.
    Scoped<bool> thread_level(thread_level_, thread_level_ || !compound(s));
    switch (s.kind()) {
      case NodeKind::Seq: {
        std::vector<Stmt> out;
        for (const Stmt& x : s.as<SeqNode>()->seq) out.push_back(plan(x, st));
        return seq(out);
      }
      case NodeKind::For: {
        auto* f = s.as<ForNode>();
        Scoped<bool> divergent(divergent_, divergent_ || !uniform_.uniform(f->min) || !uniform_.uniform(f->extent));
        State start = loop_entry(f->body, st);
        Stmt body = plan(f->body, start);
        // When what ran before the loop is what puts barriers in its body (a tile
        // written before a pipelined loop and read in it), one barrier before the
        // loop does instead.
        State fresh = loop_entry(f->body, State{});
        State after = fresh;
        Stmt alone = plan(f->body, after);
        if (!blocked() && barriers_in(alone) < barriers_in(body)) {
          st = after;
          return seq({barrier(BarrierKind::Threads),
                      for_loop(f->var, f->min, f->extent, f->for_kind, alone, f->annotations, f->span)});
        }
        st.merge(start);
        return for_loop(f->var, f->min, f->extent, f->for_kind, body, f->annotations, f->span);
      }
      case NodeKind::While: {
        auto* w = s.as<WhileNode>();
        Scoped<bool> divergent(divergent_, divergent_ || !uniform_.uniform(w->cond));
        State start = loop_entry(w->body, st);
        Stmt body = plan(w->body, start);
        st.merge(start);
        return while_loop(w->cond, body, w->span);
      }
      case NodeKind::IfThenElse: {
        auto* n = s.as<IfThenElseNode>();
        // Threads that skip a branch would not reach a block barrier in it. What the
        // branches touch that earlier accesses conflict with gets one barrier before
        // the `if`; inside, no block barrier is placed (a T.ws region, planned above,
        // has barriers of its own threads), and thread-level code is one step per
        // statement of its tile-op structure, as before thread-level planning.
        const bool splits = !uniform_.uniform(n->cond);
        // (Inside a T.ws region a register the region's threads share is theirs to test.)
        if (const BufferNode* reg = splits && region_ < 0 ? uniform_.varying_register_only(n->cond) : nullptr)
          refuse_block_ops(n, reg);
        Scoped<bool> divergent(divergent_, divergent_ || splits);
        bool sync = false;
        if (splits && region_ < 0 && !no_block_barrier_) {
          sync = conflicts(accesses(s), st);
          if (sync) clear(st);
        } else if (!splits) {
          // Every thread reads the condition before either branch: its shared reads
          // (`if T.any_of(mask_shared):` after the threads stored the mask) wait for
          // the writes pending before the `if`.
          Access cond = accesses(evaluate(n->cond));
          Access& pending = region_ < 0 ? static_cast<Access&>(st) : st.regions[region_];
          sync = !blocked() && conflicts(cond, pending);
          if (sync) clear(st);
          st.Access::merge(cond);
          (region_ < 0 ? st.block : st.regions[region_]).merge(cond);
        }
        Scoped<bool> no_block_barrier(no_block_barrier_, no_block_barrier_ || (splits && region_ < 0));
        State a = st, b = st;
        Stmt t = plan(n->then_case, a);
        Stmt e = n->else_case.defined() ? plan(n->else_case, b) : n->else_case;
        st = a;
        st.merge(b);
        Stmt out = if_then_else(n->cond, t, e, n->span);
        return sync ? seq({barrier(BarrierKind::Threads), out}) : out;
      }
      case NodeKind::LetStmt: {
        auto* n = s.as<LetStmtNode>();
        uniform_.bind(n->var, n->value);
        // Every thread reads the bound value before the body (`offset = idx_shared[0]`
        // after the threads stored it): its shared reads wait for the pending writes.
        Access value = accesses(evaluate(n->value));
        Access& pending = region_ < 0 ? static_cast<Access&>(st) : st.regions[region_];
        bool sync = !blocked() && conflicts(value, pending);
        if (sync) clear(st);
        st.Access::merge(value);
        (region_ < 0 ? st.block : st.regions[region_]).merge(value);
        Stmt out = let_stmt(n->var, n->value, plan(n->body, st), n->span);
        return sync ? seq({barrier(BarrierKind::Threads), out}) : out;
      }
      case NodeKind::Allocate: {
        auto* n = s.as<AllocateNode>();
        return allocate(n->buffer, plan(n->body, st), n->span);
      }
      case NodeKind::Attr: {
        auto* n = s.as<AttrNode>();
        // A T.ws region: a barrier inside it becomes the region's named barrier, which
        // the threads outside it do not take. Whatever the region touches that the
        // block's earlier accesses (any thread's) conflict with needs a block barrier
        // before the region; inside, only the region's own order is planned.
        if (n->key == kWarpGroupAttr && region_ < 0) {
          // (Inside a branch on the thread index, the barrier before that branch did.)
          bool sync = !no_block_barrier_ && conflicts(accesses(n->body, true), st.block);
          if (sync) st.clear();
          region_ = warp_group_range(n).first;
          Stmt body = plan(n->body, st);
          region_ = -1;
          Stmt out = attr_stmt(n->key, n->value, body, n->span);
          return sync ? seq({barrier(BarrierKind::Threads), out}) : out;
        }
        // Code a lowering wrote (a reduction's cross-warp steps ...) carries the
        // barriers it needs; only its own nested ops are planned, as before.
        Scoped<bool> lowered(lowered_, lowered_ || n->key == kThreadOpAttr);
        return attr_stmt(n->key, n->value, plan(n->body, st), n->span);
      }
      case NodeKind::KernelLaunch: {
        auto* n = s.as<KernelLaunchNode>();
        uniform_.enter(n);
        State fresh;
        return with_body(n, plan(n->body, fresh));
      }
      default:
        return s;
    }
  }

 private:
  // Work spread over the block's threads (a tile op, a T.Parallel nest) under a branch
  // that differs between threads only through a register: the threads that skip the
  // branch would not do their share. (Branches on the thread index are ThreadBranches'.)
  static void refuse_block_ops(const IfThenElseNode* n, const BufferNode* reg) {
    struct Find : IRVisitor {
      bool found = false;
      using IRVisitor::visit;
      void visit(const AttrNode* op) override {
        if (warp_group_range(op).second > 0) return;                           // a region of its own threads
        found = found || op->key == kBlockOpAttr || op->key == kThreadOpAttr;  // spread or already split
        if (!found) IRVisitor::visit(op);
      }
    } find;
    find.visit(n->then_case);
    if (n->else_case.defined()) find.visit(n->else_case);
    if (!find.found) return;
    throw_user_error(n->span, str_cat("a tile op or T.Parallel loop under this condition would be spread over all "
                                      "threads of the block, but the condition reads '",
                                      reg->name,
                                      "', a register that may differ between threads (a store into it reads a "
                                      "thread index, a fragment or an atomic's result, or sits under such a "
                                      "condition), so only the threads taking the branch would run their share. "
                                      "Give the register the same value in every thread (from T.get_block_binding, "
                                      "a global or shared element every thread reads alike) or move the op out of "
                                      "the branch"));
  }

  int64_t region_ = -1;  // the first thread of the T.ws region being planned, -1 outside
  Uniformity uniform_;
  bool lowered_ = false;       // inside a lowering's per-thread code (kThreadOpAttr)
  bool divergent_ = false;     // under a condition or loop bound that depends on the thread
  bool thread_level_ = false;  // inside thread-level code planned statement by statement

  bool no_block_barrier_ = false;  // under a branch on the thread index, outside T.ws regions
  // No barrier may go here: a block barrier some threads skip would hang the block.
  bool blocked() const { return no_block_barrier_ && region_ < 0; }

  static bool is_block_op(const Stmt& s) {
    auto* a = s.as<AttrNode>();
    return a && a->key == kBlockOpAttr;
  }

  // The kernel's own per-thread code (a store each thread makes to its element), not
  // a tile op or a lowering's per-thread share of one: its writes are thread-level
  // wherever it stands, at the kernel's top level as in a loop.
  static bool own_thread_code(const Stmt& s) {
    auto* a = s.as<AttrNode>();
    return !(a && (a->key == kBlockOpAttr || a->key == kThreadOpAttr || a->key == kAsyncCopyAttr));
  }

  // A barrier here: of the block outside regions, of the region's threads inside one.
  void clear(State& st) const {
    if (region_ < 0)
      st.clear();
    else
      st.regions[region_].clear();
  }

  static int barriers_in(const Stmt& s) {
    struct Count : IRVisitor {
      int n = 0;
      using IRVisitor::visit;
      void visit(const BarrierNode* b) override { n += b->barrier == BarrierKind::Threads; }
    } c;
    c.visit(s);
    return c.n;
  }

  // What may be pending when an iteration starts: the state before the loop, or
  // what an earlier iteration left behind.
  State loop_entry(const Stmt& body, const State& before) {
    State sim = before;
    plan(body, sim);
    State start = before;
    start.merge(sim);
    return start;
  }
};

}  // namespace

PrimFunc plan_barriers(const PrimFunc& f) {
  State st;
  return f.with_body(Planner().plan(f->body, st));
}

}  // namespace tl
