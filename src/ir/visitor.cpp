// The recursive default of IRVisitor and IRMutator, one case per node kind.
#include "ir/visitor.h"

#include "ir/device_calls.h"

#include <algorithm>
#include <functional>

namespace tl {

// ---------------------------------------------------------------- visitor

void IRVisitor::visit(const Expr& e) {
  if (!e.defined()) return;
  switch (e.kind()) {
#define TL_EXPR(Name)  \
  case NodeKind::Name: \
    return visit(static_cast<const Name##Node*>(e.get()));
#define TL_STMT(Name)  \
  case NodeKind::Name: \
    break;
#include "ir/node_kinds.def"
  }
  TL_UNREACHABLE("statement kind in expression position");
}

void IRVisitor::visit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
#define TL_STMT(Name)  \
  case NodeKind::Name: \
    return visit(static_cast<const Name##Node*>(s.get()));
#define TL_EXPR(Name)  \
  case NodeKind::Name: \
    break;
#include "ir/node_kinds.def"
  }
  TL_UNREACHABLE("expression kind in statement position");
}

void IRVisitor::visit_region(const BufferRegion& r) {
  visit_buffer(r.buffer);
  for (const Range& rg : r.ranges) {
    visit(rg.min);
    visit(rg.extent);
  }
}

void IRVisitor::visit(const IntImmNode*) {}
void IRVisitor::visit(const FloatImmNode*) {}
void IRVisitor::visit(const StringImmNode*) {}
void IRVisitor::visit(const VarNode*) {}
void IRVisitor::visit(const BinaryNode* op) {
  visit(op->a);
  visit(op->b);
}
void IRVisitor::visit(const UnaryNode* op) {
  visit(op->a);
}
void IRVisitor::visit(const SelectNode* op) {
  visit(op->cond);
  visit(op->true_value);
  visit(op->false_value);
}
void IRVisitor::visit(const CastNode* op) {
  visit(op->value);
}
void IRVisitor::visit(const ReinterpretNode* op) {
  visit(op->value);
}
void IRVisitor::visit(const CallNode* op) {
  for (const Expr& a : op->args) visit(a);
}
void IRVisitor::visit(const BufferLoadNode* op) {
  visit_buffer(op->buffer);
  for (const Expr& i : op->indices) visit(i);
}
void IRVisitor::visit(const RampNode* op) {
  visit(op->base);
  visit(op->stride);
}
void IRVisitor::visit(const BroadcastNode* op) {
  visit(op->value);
}
void IRVisitor::visit(const LetNode* op) {
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit(const SeqNode* op) {
  for (const Stmt& s : op->seq) visit(s);
}
void IRVisitor::visit(const ForNode* op) {
  for (const auto& [k, a] : op->annotations)
    if (auto* e = std::get_if<Expr>(&a)) visit(*e);
  visit(op->min);
  visit(op->extent);
  visit(op->body);
}
void IRVisitor::visit(const WhileNode* op) {
  visit(op->cond);
  visit(op->body);
}
void IRVisitor::visit(const IfThenElseNode* op) {
  visit(op->cond);
  visit(op->then_case);
  visit(op->else_case);
}
void IRVisitor::visit(const BufferStoreNode* op) {
  visit_buffer(op->buffer);
  visit(op->value);
  for (const Expr& i : op->indices) visit(i);
}
void IRVisitor::visit(const EvaluateNode* op) {
  visit(op->value);
}
void IRVisitor::visit(const LetStmtNode* op) {
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit(const AllocateNode* op) {
  visit_buffer(op->buffer);
  visit(op->body);
}
void IRVisitor::visit(const KernelLaunchNode* op) {
  for (const Expr& g : op->grid) visit(g);
  visit(op->body);
}
void IRVisitor::visit(const TileOpNode* op) {
  for (const BufferRegion& r : op->regions) visit_region(r);
  for (const Expr& a : op->args) visit(a);
  for (const auto& [k, a] : op->attrs)
    if (auto* e = std::get_if<Expr>(&a)) visit(*e);
}
void IRVisitor::visit(const BarrierNode*) {}
void IRVisitor::visit(const AttrNode* op) {
  if (auto* e = std::get_if<Expr>(&op->value)) visit(*e);
  visit(op->body);
}
void IRVisitor::visit(const BreakNode*) {}
void IRVisitor::visit(const ContinueNode*) {}

// ---------------------------------------------------------------- mutator

Expr IRMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  switch (e.kind()) {
#define TL_EXPR(Name)  \
  case NodeKind::Name: \
    return visit(static_cast<const Name##Node*>(e.get()), e);
#define TL_STMT(Name)  \
  case NodeKind::Name: \
    break;
#include "ir/node_kinds.def"
  }
  TL_UNREACHABLE("statement kind in expression position");
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s.kind()) {
#define TL_STMT(Name)  \
  case NodeKind::Name: \
    return visit(static_cast<const Name##Node*>(s.get()), s);
#define TL_EXPR(Name)  \
  case NodeKind::Name: \
    break;
#include "ir/node_kinds.def"
  }
  TL_UNREACHABLE("expression kind in statement position");
}

std::vector<Expr> IRMutator::mutate_all(const std::vector<Expr>& v, bool* changed) {
  std::vector<Expr> out;
  out.reserve(v.size());
  for (const Expr& e : v) {
    out.push_back(mutate(e));
    if (!out.back().same_as(e)) *changed = true;
  }
  return out;
}

BufferRegion IRMutator::mutate_region(const BufferRegion& r) {
  BufferRegion out{mutate_buffer(r.buffer), {}};
  for (const Range& rg : r.ranges) out.ranges.push_back({mutate(rg.min), mutate(rg.extent)});
  return out;
}

Expr IRMutator::visit(const IntImmNode*, const Expr& self) {
  return self;
}
Expr IRMutator::visit(const FloatImmNode*, const Expr& self) {
  return self;
}
Expr IRMutator::visit(const StringImmNode*, const Expr& self) {
  return self;
}
Expr IRMutator::visit(const VarNode*, const Expr& self) {
  return self;
}
Expr IRMutator::visit(const BinaryNode* op, const Expr& self) {
  Expr a = mutate(op->a), b = mutate(op->b);
  if (a.same_as(op->a) && b.same_as(op->b)) return self;
  return rebuild_binary(op->op, a, b, op->span);
}
Expr IRMutator::visit(const UnaryNode* op, const Expr& self) {
  Expr a = mutate(op->a);
  if (a.same_as(op->a)) return self;
  switch (op->op) {
    case UnaryOp::Neg:
      return neg(a);
    case UnaryOp::Not:
      return logical_not(a);
    case UnaryOp::BitNot:
      return bit_not(a);
  }
  TL_UNREACHABLE("bad UnaryOp");
}
Expr IRMutator::visit(const SelectNode* op, const Expr& self) {
  Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
  if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
  return select(c, t, f, op->span);
}
Expr IRMutator::visit(const CastNode* op, const Expr& self) {
  Expr v = mutate(op->value);
  if (v.same_as(op->value)) return self;
  return cast(op->dtype, v, op->span);
}
Expr IRMutator::visit(const ReinterpretNode* op, const Expr& self) {
  Expr v = mutate(op->value);
  if (v.same_as(op->value)) return self;
  return reinterpret(op->dtype, v, op->span);
}
Expr IRMutator::visit(const CallNode* op, const Expr& self) {
  bool changed = false;
  auto args = mutate_all(op->args, &changed);
  if (!changed) return self;
  auto n = std::make_shared<CallNode>(op->dtype, op->op, std::move(args));
  n->span = op->span;
  return Expr(std::move(n));
}
Expr IRMutator::visit(const BufferLoadNode* op, const Expr& self) {
  bool changed = false;
  auto idx = mutate_all(op->indices, &changed);
  Buffer b = mutate_buffer(op->buffer);
  if (!changed && b.same_as(op->buffer)) return self;
  return buffer_load(b, std::move(idx), op->span);
}
Expr IRMutator::visit(const RampNode* op, const Expr& self) {
  Expr b = mutate(op->base), s = mutate(op->stride);
  if (b.same_as(op->base) && s.same_as(op->stride)) return self;
  return ramp(b, s, op->lanes);
}
Expr IRMutator::visit(const BroadcastNode* op, const Expr& self) {
  Expr v = mutate(op->value);
  if (v.same_as(op->value)) return self;
  return broadcast(v, op->lanes);
}
Expr IRMutator::visit(const LetNode* op, const Expr& self) {
  Expr v = mutate(op->value), b = mutate(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return self;
  return let(op->var, v, b);
}

Stmt IRMutator::visit(const SeqNode* op, const Stmt& self) {
  bool changed = false;
  std::vector<Stmt> out;
  for (const Stmt& s : op->seq) {
    out.push_back(mutate(s));
    if (!out.back().same_as(s)) changed = true;
  }
  if (!changed) return self;
  return seq(std::move(out));
}
// Expressions inside annotations / attributes (e.g. a symbolic loop annotation).
Attrs IRMutator::mutate_attrs(const Attrs& attrs, bool* changed) {
  Attrs out = attrs;
  for (auto& [k, v] : out) {
    auto* e = std::get_if<Expr>(&v);
    if (!e) continue;
    Expr m = mutate(*e);
    if (m.same_as(*e)) continue;
    *changed = true;
    v = m;
  }
  return out;
}

Stmt IRMutator::visit(const ForNode* op, const Stmt& self) {
  Expr mn = mutate(op->min), ext = mutate(op->extent);
  bool changed = false;
  Attrs ann = mutate_attrs(op->annotations, &changed);
  Stmt body = mutate(op->body);
  if (!changed && mn.same_as(op->min) && ext.same_as(op->extent) && body.same_as(op->body)) return self;
  return for_loop(op->var, mn, ext, op->for_kind, body, std::move(ann), op->span);
}
Stmt IRMutator::visit(const WhileNode* op, const Stmt& self) {
  Expr c = mutate(op->cond);
  Stmt body = mutate(op->body);
  if (c.same_as(op->cond) && body.same_as(op->body)) return self;
  return while_loop(c, body, op->span);
}
Stmt IRMutator::visit(const IfThenElseNode* op, const Stmt& self) {
  Expr c = mutate(op->cond);
  Stmt t = mutate(op->then_case), e = mutate(op->else_case);
  if (c.same_as(op->cond) && t.same_as(op->then_case) && e.same_as(op->else_case)) return self;
  return if_then_else(c, t, e, op->span);
}
Stmt IRMutator::visit(const BufferStoreNode* op, const Stmt& self) {
  bool changed = false;
  auto idx = mutate_all(op->indices, &changed);
  Expr v = mutate(op->value);
  Buffer b = mutate_buffer(op->buffer);
  if (!changed && v.same_as(op->value) && b.same_as(op->buffer)) return self;
  return buffer_store(b, v, std::move(idx), op->span);
}
Stmt IRMutator::visit(const EvaluateNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  if (v.same_as(op->value)) return self;
  return evaluate(v, op->span);
}
Stmt IRMutator::visit(const LetStmtNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  Stmt b = mutate(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return self;
  return let_stmt(op->var, v, b, op->span);
}
Stmt IRMutator::visit(const AllocateNode* op, const Stmt& self) {
  Buffer buf = mutate_buffer(op->buffer);
  Stmt b = mutate(op->body);
  if (b.same_as(op->body) && buf.same_as(op->buffer)) return self;
  return allocate(buf, b, op->span);
}
Stmt IRMutator::visit(const KernelLaunchNode* op, const Stmt& self) {
  bool changed = false;
  auto grid = mutate_all(op->grid, &changed);
  Stmt b = mutate(op->body);
  if (!changed && b.same_as(op->body)) return self;
  auto n = std::make_shared<KernelLaunchNode>(op->block_vars, std::move(grid), op->thread_vars, op->threads, b,
                                              op->prelude, op->cluster);
  n->span = op->span;
  return Stmt(std::move(n));
}
Stmt IRMutator::visit(const TileOpNode* op, const Stmt& self) {
  bool changed = false;
  std::vector<BufferRegion> regions;
  for (const BufferRegion& r : op->regions) {
    regions.push_back(mutate_region(r));
    const BufferRegion& n = regions.back();
    if (!n.buffer.same_as(r.buffer)) changed = true;
    for (size_t i = 0; i < r.ranges.size(); ++i)
      if (!n.ranges[i].min.same_as(r.ranges[i].min) || !n.ranges[i].extent.same_as(r.ranges[i].extent)) changed = true;
  }
  auto args = mutate_all(op->args, &changed);
  Attrs attrs = mutate_attrs(op->attrs, &changed);
  if (!changed) return self;
  return tile_op(op->op, std::move(regions), std::move(args), std::move(attrs), op->span);
}
Stmt IRMutator::visit(const BarrierNode*, const Stmt& self) {
  return self;
}
Stmt IRMutator::visit(const AttrNode* op, const Stmt& self) {
  AttrValue v = op->value;
  bool changed = false;
  if (auto* e = std::get_if<Expr>(&op->value)) {
    Expr m = mutate(*e);
    changed = !m.same_as(*e);
    v = m;
  }
  Stmt b = mutate(op->body);
  if (!changed && b.same_as(op->body)) return self;
  return attr_stmt(op->key, v, b, op->span);
}
Stmt IRMutator::visit(const BreakNode*, const Stmt& self) {
  return self;
}
Stmt IRMutator::visit(const ContinueNode*, const Stmt& self) {
  return self;
}

// ---------------------------------------------------------------- helpers

namespace {
class FnVisitor : public IRVisitor {
 public:
  explicit FnVisitor(const std::function<void(const Expr&)>& f) : fn_(f) {}
  using IRVisitor::visit;
  void visit(const Expr& e) override {
    if (!e.defined()) return;
    fn_(e);
    IRVisitor::visit(e);
  }

 private:
  const std::function<void(const Expr&)>& fn_;
};

class Substituter : public IRMutator {
 public:
  explicit Substituter(const std::map<const VarNode*, Expr>& m) : map_(m) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const VarNode* op, const Expr& self) override {
    auto it = map_.find(op);
    return it == map_.end() ? self : it->second;
  }

 private:
  const std::map<const VarNode*, Expr>& map_;
};
}  // namespace

void for_each_expr(const Stmt& s, const std::function<void(const Expr&)>& fn) {
  FnVisitor v(fn);
  v.visit(s);
}

void for_each_expr(const Expr& e, const std::function<void(const Expr&)>& fn) {
  FnVisitor v(fn);
  v.visit(e);
}

bool reads_var(const Expr& e, const VarNode* v) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) { found = found || x.get() == v; });
  return found;
}

const StmtNode* find_stmt(const Stmt& s, const std::function<bool(const Stmt&)>& pred) {
  struct Find : IRVisitor {
    const std::function<bool(const Stmt&)>& pred;
    const StmtNode* found = nullptr;
    explicit Find(const std::function<bool(const Stmt&)>& p) : pred(p) {}
    using IRVisitor::visit;
    void visit(const Stmt& st) override {
      if (found || !st.defined()) return;
      if (pred(st))
        found = st.get();
      else
        IRVisitor::visit(st);
    }
  } find(pred);
  find.visit(s);
  return find.found;
}

std::set<const VarNode*> bound_vars(const Stmt& s) {
  struct Bound : IRVisitor {
    std::set<const VarNode*> vars;
    using IRVisitor::visit;
    void visit(const LetStmtNode* op) override {
      vars.insert(op->var.node());
      IRVisitor::visit(op);
    }
    void visit(const ForNode* op) override {
      vars.insert(op->var.node());
      IRVisitor::visit(op);
    }
  } b;
  b.visit(s);
  return b.vars;
}

std::vector<const ForNode*> parallel_nest(const ForNode* op) {
  std::vector<const ForNode*> nest{op};
  while (auto* inner = nest.back()->body.as<ForNode>()) {
    if (inner->for_kind != ForKind::Parallel) break;
    nest.push_back(inner);
  }
  return nest;
}

const std::string* extern_name(const CallNode* c) {
  auto* name = c && c->op == Intrinsic::Extern && !c->args.empty() ? c->args[0].as<StringImmNode>() : nullptr;
  return name ? &name->value : nullptr;
}

const std::string* extern_name(const Expr& e) {
  return extern_name(e.as<CallNode>());
}

const char* atomic_kind(const std::string& name) {
  static const std::pair<DeviceCall, const char*> kKinds[] = {
      {DeviceCall::kAtomicAddCall, "add"},   {DeviceCall::kAtomicMaxCall, "max"},
      {DeviceCall::kAtomicMinCall, "min"},   {DeviceCall::kAtomicAndCall, "and"},
      {DeviceCall::kAtomicOrCall, "or"},     {DeviceCall::kAtomicXorCall, "xor"},
      {DeviceCall::kAtomicLoadCall, "load"}, {DeviceCall::kAtomicStoreCall, "store"}};
  std::optional<DeviceCall> k = device_call_of(name);
  for (const auto& [call, kind] : kKinds)
    if (k == call) return kind;
  return nullptr;
}

bool is_atomic_call(const std::string& name) {
  std::optional<DeviceCall> k = device_call_of(name);
  return atomic_kind(name) || k == DeviceCall::kAtomicAddx2Call || k == DeviceCall::kAtomicAddx4Call ||
         k == DeviceCall::kAtomicAddx2RetCall || k == DeviceCall::kAtomicAddx4RetCall;
}

bool calls_device(const Stmt& s, const char* fn) {
  bool found = false;
  for_each_expr(s, [&](const Expr& e) {
    const std::string* name = extern_name(e);
    found = found || (name && is_device_call(*name, fn));
  });
  return found;
}

std::vector<std::string> kernel_preludes(const Stmt& s) {
  struct Find : IRVisitor {
    std::vector<std::string> found;
    using IRVisitor::visit;
    void visit(const KernelLaunchNode* op) override {
      if (!op->prelude.empty() && std::find(found.begin(), found.end(), op->prelude) == found.end())
        found.push_back(op->prelude);
      IRVisitor::visit(op);
    }
  } find;
  find.visit(s);
  return find.found;
}

Expr substitute(const Expr& e, const std::map<const VarNode*, Expr>& vmap) {
  if (vmap.empty()) return e;
  return Substituter(vmap).mutate(e);
}
Stmt substitute(const Stmt& s, const std::map<const VarNode*, Expr>& vmap) {
  if (vmap.empty()) return s;
  return Substituter(vmap).mutate(s);
}

}  // namespace tl
