#include "transform/pipeline_loops.h"

#include <map>
#include <set>

#include "ir/visitor.h"
#include "ops/extent_util.h"
#include "ops/tile_op.h"

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

// Every use of the buffers in `staged` gets the stage index in front.
class AddStage : public IRMutator {
 public:
  AddStage(const std::map<BufKey, Buffer>& staged, Expr stage) : staged_(staged), stage_(std::move(stage)) {}
  using IRMutator::mutate;

  Buffer mutate_buffer(const Buffer& b) override {
    auto it = staged_.find(b.get());
    return it == staged_.end() ? b : it->second;
  }

 protected:
  using IRMutator::visit;
  Expr visit(const BufferLoadNode* op, const Expr& self) override {
    auto it = staged_.find(op->buffer.get());
    if (it == staged_.end()) return IRMutator::visit(op, self);
    std::vector<Expr> idx{stage_};
    for (const Expr& e : op->indices) idx.push_back(mutate(e));
    return buffer_load(it->second, idx, op->span);
  }
  Stmt visit(const BufferStoreNode* op, const Stmt& self) override {
    auto it = staged_.find(op->buffer.get());
    if (it == staged_.end()) return IRMutator::visit(op, self);
    std::vector<Expr> idx{stage_};
    for (const Expr& e : op->indices) idx.push_back(mutate(e));
    return buffer_store(it->second, mutate(op->value), idx, op->span);
  }
  Stmt visit(const TileOpNode* op, const Stmt& self) override {
    std::vector<BufferRegion> regions;
    for (const BufferRegion& r : op->regions) {
      auto it = staged_.find(r.buffer.get());
      if (it == staged_.end()) {
        regions.push_back(mutate_region(r));
        continue;
      }
      BufferRegion nr{it->second, {Range{stage_, int_imm(1)}}};
      for (const Range& rg : r.ranges) nr.ranges.push_back(Range{mutate(rg.min), mutate(rg.extent)});
      regions.push_back(nr);
    }
    std::vector<Expr> args;
    for (const Expr& a : op->args) args.push_back(mutate(a));
    return tile_op(op->op, regions, args, op->attrs, op->span);
  }

 private:
  const std::map<BufKey, Buffer>& staged_;
  Expr stage_;
};

// Buffers a tile op or store writes.
std::set<BufKey> written(const Stmt& s) {
  struct Walk : IRVisitor {
    std::set<BufKey> out;
    using IRVisitor::visit;
    void visit(const BufferStoreNode* op) override {
      out.insert(op->buffer.get());
      IRVisitor::visit(op);
    }
    void visit(const TileOpNode* op) override {
      // The destination of every op is its last region (copy, gemm C, reduce, fill ...).
      if (!op->regions.empty()) out.insert(op->regions.back().buffer.get());
      IRVisitor::visit(op);
    }
  } w;
  w.visit(s);
  return w.out;
}

class Pipeliner : public IRMutator {
 public:
  explicit Pipeliner(bool async) : async_(async) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const AllocateNode* op, const Stmt& self) override {
    Stmt body = mutate(op->body);
    if (auto it = staged_.find(op->buffer.get()); it != staged_.end()) return allocate(it->second, body, op->span);
    return body.same_as(op->body) ? self : allocate(op->buffer, body, op->span);
  }

  Stmt visit(const ForNode* op, const Stmt& self) override {
    auto it = op->annotations.find("num_stages");
    int64_t stages = 0;
    if (it != op->annotations.end())
      if (auto* v = std::get_if<int64_t>(&it->second)) stages = *v;
    if (stages < 2 || op->for_kind != ForKind::Serial) return IRMutator::visit(op, self);
    // Names bound at the top of the body (`k = (bz * tiles + ko) * block_K`) are
    // inlined, so that the copies under them are seen as producers.
    Stmt whole = op->body;
    while (auto* l = whole.as<LetStmtNode>()) whole = substitute(l->body, {{l->var.node(), l->value}});
    std::vector<Stmt> body;
    if (auto* s = whole.as<SeqNode>())
      body = s->seq;
    else
      body = {whole};
    size_t np = 0;
    while (np < body.size() && producer(body[np])) ++np;
    if (np == 0 || np == body.size()) return IRMutator::visit(op, self);
    // The staged tiles: written by the producers only, used nowhere outside the loop.
    std::map<BufKey, Buffer> staged;
    for (size_t i = 0; i < np; ++i) {
      const Buffer& b = body[i].as<TileOpNode>()->regions[1].buffer;
      if (staged.count(b.get()) || !covers_whole(body[i].as<TileOpNode>()->regions[1]))
        return IRMutator::visit(op, self);
      std::vector<Expr> shape{int_imm(stages)};
      for (const Expr& e : b->shape) shape.push_back(e);
      staged[b.get()] = Buffer::make(b->name, b->dtype, shape, b->scope, {}, b->span);
    }
    for (size_t i = np; i < body.size(); ++i)
      for (BufKey k : written(body[i]))
        if (staged.count(k)) return IRMutator::visit(op, self);
    for (auto& [k, b] : staged)
      if (outside_uses_.count(k)) return IRMutator::visit(op, self);
    for (auto& kv : staged) staged_.insert(kv);

    const Var& k = op->var;
    Expr n = op->extent, lo = op->min;
    auto issue = [&](Expr iter, Expr stage) {
      std::vector<Stmt> out;
      std::map<const VarNode*, Expr> at{{k.node(), add(lo, iter)}};
      for (size_t i = 0; i < np; ++i) {
        auto* p = body[i].as<TileOpNode>();
        Attrs attrs = p->attrs;
        if (async_) attrs[kAsyncCopyAttr] = int64_t(1);
        Stmt s = tile_op(p->op, p->regions, p->args, attrs, p->span);
        out.push_back(AddStage(staged, stage).mutate(substitute(s, at)));
      }
      return seq(out);
    };
    // Without cp.async (before sm_80) the producers copy synchronously: the same
    // schedule, with nothing to commit or wait for.
    Stmt commit = async_ ? evaluate(call_extern(dtype::Void, "tl::cp_async_commit", {})) : Stmt(seq({}));
    // Prologue: iterations 0 .. S-2.
    std::vector<Stmt> pro;
    for (int64_t s = 0; s + 1 < stages; ++s) {
      pro.push_back(if_then_else(lt(int_imm(s), n), issue(int_imm(s), int_imm(s))));
      pro.push_back(commit);
    }
    // Steady state (iteration it = k - lo), in two loops: while iterations remain
    // to prefetch, each issues the producers of it + S - 1; the last S - 1 only wait
    // and compute. (Split rather than guarded, so that the prefetch's index range is
    // the loop's and its bounds checks fold away.)
    Expr iter = sub(k, lo);
    std::vector<Stmt> consumers(body.begin() + np, body.end());
    Stmt compute = mutate(seq(consumers));
    auto step = [&](bool prefetch) {
      std::vector<Stmt> loop;
      if (async_)
        loop.push_back(evaluate(call_extern(dtype::Void, str_cat("tl::cp_async_wait<", stages - 2, ">"), {})));
      loop.push_back(barrier(BarrierKind::Threads));
      Expr ahead = add(iter, int_imm(stages - 1));
      if (prefetch) loop.push_back(issue(ahead, floormod(ahead, int_imm(stages))));
      loop.push_back(commit);
      loop.push_back(AddStage(staged, floormod(iter, int_imm(stages))).mutate(compute));
      return seq(loop);
    };
    Attrs ann = op->annotations;
    ann.erase("num_stages");
    ann["tl.pipelined"] = stages;
    Expr steady = max(sub(n, make_const(n.dtype(), stages - 1)), make_const(n.dtype(), 0));
    pro.push_back(for_loop(k, lo, steady, ForKind::Serial, step(true), ann, op->span));
    Var k2(k.name(), k.dtype());
    Stmt tail = substitute(step(false), {{k.node(), Expr(k2)}});
    pro.push_back(for_loop(k2, add(lo, steady), sub(n, steady), ForKind::Serial, tail, ann, op->span));
    // Drain: no copy may be in flight when the tiles are reused or freed.
    if (async_) pro.push_back(evaluate(call_extern(dtype::Void, "tl::cp_async_wait<0>", {})));
    return seq(pro);
  }

 public:
  std::set<BufKey> outside_uses_;

 private:
  std::map<BufKey, Buffer> staged_;
  bool async_;
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

PrimFunc pipeline_loops(const PrimFunc& f, const Target& target) {
  Pipeliner p(target.sm_version() >= 80);
  p.outside_uses_ = outside_pipelined(f->body);
  return f.with_body(p.mutate(f->body));
}

}  // namespace tl
