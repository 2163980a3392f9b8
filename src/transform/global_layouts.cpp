// See global_layouts.h. A layout is checked by evaluating it: its output indices fall
// into groups over disjoint sets of logical dimensions (FlashAttention's dQ layout:
// batch, heads, and (row, column) together), and the whole map is a bijection onto its
// output box exactly when each group's part is one onto its own box, so only each
// group's points are enumerated, never the whole buffer's.
#include "transform/global_layouts.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

#include "arith/int_math.h"
#include "arith/simplify.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "ops/tile_op.h"

namespace tl {
namespace {

using BufKey = const BufferNode*;

// The most points of one group of dimensions the check enumerates.
constexpr int64_t kMaxGroupPoints = int64_t(1) << 24;

struct GlobalLayout {
  Buffer logical, physical;
  std::vector<Var> vars;      // one per logical dimension
  std::vector<Expr> forward;  // the output indices, over `vars`
  SourceSpan span;
  // The longest run (4, 2 or 1 elements) along the last logical dimension that the
  // layout keeps whole: every run starting at a multiple of it lands on consecutive
  // places of the last output dimension, starting at a multiple of it too.
  int64_t run = 1;
};

const CallNode* as_marker(const Stmt& s) {
  auto* e = s.as<EvaluateNode>();
  if (!e) return nullptr;
  const std::string* n = extern_name(e->value);
  return n && *n == kGlobalLayoutMarker ? e->value.as<CallNode>() : nullptr;
}

// The value of an integer expression with its variables at `env`; nullopt when it
// reads anything else or divides by zero.
class Evaluator {
 public:
  std::unordered_map<const VarNode*, int64_t> env;

  std::optional<int64_t> eval(const Expr& e) const {
    if (auto* i = e.as<IntImmNode>()) return i->value;
    if (auto* v = e.as<VarNode>()) {
      auto it = env.find(v);
      return it == env.end() ? std::nullopt : std::optional<int64_t>(it->second);
    }
    if (auto* c = e.as<CastNode>()) return c->dtype.is_integer() || c->dtype.is_bool() ? eval(c->value) : std::nullopt;
    if (auto* s = e.as<SelectNode>()) {
      auto c = eval(s->cond);
      if (!c) return std::nullopt;
      return eval(*c ? s->true_value : s->false_value);
    }
    if (auto* u = e.as<UnaryNode>()) {
      auto a = eval(u->a);
      if (!a) return std::nullopt;
      switch (u->op) {
        case UnaryOp::Neg:
          return -*a;
        case UnaryOp::Not:
          return int64_t(!*a);
        case UnaryOp::BitNot:
          return ~*a;
      }
    }
    if (auto* b = e.as<BinaryNode>()) return binary(b);
    return std::nullopt;
  }

 private:
  std::optional<int64_t> binary(const BinaryNode* op) const {
    auto a = eval(op->a), b = eval(op->b);
    if (!a || !b) return std::nullopt;
    int64_t x = *a, y = *b;
    switch (op->op) {
      case BinaryOp::Add:
        return x + y;
      case BinaryOp::Sub:
        return x - y;
      case BinaryOp::Mul:
        return x * y;
      case BinaryOp::Div:
        return y ? std::optional<int64_t>(x / y) : std::nullopt;
      case BinaryOp::Mod:
        return y ? std::optional<int64_t>(x % y) : std::nullopt;
      case BinaryOp::FloorDiv:
        return y ? std::optional<int64_t>(arith_detail::floor_div(x, y)) : std::nullopt;
      case BinaryOp::FloorMod:
        return y ? std::optional<int64_t>(arith_detail::floor_mod(x, y)) : std::nullopt;
      case BinaryOp::Min:
        return std::min(x, y);
      case BinaryOp::Max:
        return std::max(x, y);
      case BinaryOp::EQ:
        return int64_t(x == y);
      case BinaryOp::NE:
        return int64_t(x != y);
      case BinaryOp::LT:
        return int64_t(x < y);
      case BinaryOp::LE:
        return int64_t(x <= y);
      case BinaryOp::GT:
        return int64_t(x > y);
      case BinaryOp::GE:
        return int64_t(x >= y);
      case BinaryOp::And:
        return int64_t(x && y);
      case BinaryOp::Or:
        return int64_t(x || y);
      case BinaryOp::BitAnd:
        return x & y;
      case BinaryOp::BitOr:
        return x | y;
      case BinaryOp::BitXor:
        return x ^ y;
      case BinaryOp::Shl:
        return y >= 0 && y < 63 ? std::optional<int64_t>(x << y) : std::nullopt;
      case BinaryOp::Shr:
        return y >= 0 && y < 63 ? std::optional<int64_t>(x >> y) : std::nullopt;
    }
    return std::nullopt;
  }
};

std::string list_str(const std::vector<int64_t>& v, const char* open = "(", const char* close = ")") {
  std::string s = open;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + close;
}

std::string shape_str(const std::vector<Expr>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + to_string(shape[i]);
  return s + "]";
}

// Checks the marker's layout and builds the buffer of its output shape.
class LayoutChecker {
 public:
  LayoutChecker(const CallNode* marker, SourceSpan span) : span_(span) {
    TL_ICHECK(marker->args.size() >= 3, "tl::global_layout takes the buffer's element and the output indices");
    auto* load = marker->args[1].as<BufferLoadNode>();
    TL_ICHECK(load, "tl::global_layout's first operand must be an element of the buffer");
    l_.logical = load->buffer;
    l_.span = span;
    for (const Expr& i : load->indices) l_.vars.push_back(Var::from(i));
    l_.forward.assign(marker->args.begin() + 2, marker->args.end());
  }

  GlobalLayout run() {
    const Buffer& b = l_.logical;
    if (!b->strides.empty())
      fail(str_cat("it has explicit strides ", shape_str(b->strides),
                   "; a layout places the elements of a compact (row-major) buffer"));
    const size_t n = l_.vars.size(), m = l_.forward.size();
    // The logical dimensions each output index reads; dimensions read together form a group.
    std::vector<size_t> root(n);
    std::iota(root.begin(), root.end(), size_t(0));
    auto find = [&](size_t d) {
      while (root[d] != d) d = root[d] = root[root[d]];
      return d;
    };
    std::vector<std::vector<size_t>> reads(m);
    for (size_t k = 0; k < m; ++k) {
      for_each_expr(l_.forward[k], [&](const Expr& e) {
        auto* v = e.as<VarNode>();
        if (!v) return;
        for (size_t d = 0; d < n; ++d)
          if (l_.vars[d].node() == v) {
            if (std::find(reads[k].begin(), reads[k].end(), d) == reads[k].end()) reads[k].push_back(d);
            return;
          }
        fail(str_cat("output index ", k, " (", to_string(l_.forward[k]), ") reads '", v->name,
                     "', which is not one of the layout's indices; a global buffer's layout must be a function of "
                     "the indices alone"));
      });
      for (size_t d : reads[k]) root[find(d)] = find(reads[k].front());
    }
    std::map<size_t, std::pair<std::vector<size_t>, std::vector<size_t>>> groups;  // root -> (dims, outputs)
    for (size_t d = 0; d < n; ++d) groups[find(d)].first.push_back(d);
    std::vector<size_t> constant_outputs;
    for (size_t k = 0; k < m; ++k) {
      if (reads[k].empty())
        constant_outputs.push_back(k);
      else
        groups[find(reads[k].front())].second.push_back(k);
    }
    out_shape_.assign(m, Expr());
    for (size_t k : constant_outputs) {
      auto v = Evaluator().eval(l_.forward[k]);
      if (!v) fail(str_cat("output index ", k, " (", to_string(l_.forward[k]), ") is not an integer expression"));
      if (*v < 0) fail(str_cat("output index ", k, " is ", *v, ", a negative index"));
      out_shape_[k] = int_imm(*v + 1);
    }
    std::vector<Group> checked;
    for (auto& [r, g] : groups) checked.push_back(enumerate(g.first, g.second));
    for (const Group& g : checked) check_bijective(g);
    for (size_t k : constant_outputs)
      if (!is_const_one(out_shape_[k])) count_mismatch();
    for (const Group& g : checked)
      if (!g.dims.empty() && g.dims.back() == n - 1)
        for (int64_t len : {4, 2})
          if (l_.run == 1 && keeps_runs(g, len)) l_.run = len;
    l_.physical = Buffer::make(b->name, b->dtype, out_shape_, b->scope, {}, b->span);
    return l_;
  }

 private:
  struct Group {
    std::vector<size_t> dims, outputs;
    std::vector<int64_t> extents;  // of dims; empty for a symbolic dimension carried over whole
    std::vector<int64_t> out_extents;
    int64_t points = 1;
  };

  [[noreturn]] void fail(const std::string& why) const {
    throw_user_error(span_, str_cat("T.annotate_layout: the layout of global buffer '", l_.logical->name, "' (shape ",
                                    shape_str(l_.logical->shape), ") is invalid: ", why));
  }

  [[noreturn]] void count_mismatch() const {
    std::vector<Expr> shape;
    for (const Expr& e : out_shape_) shape.push_back(e.defined() ? e : int_imm(0));
    fail(str_cat("it maps the buffer's elements onto the output shape ", shape_str(shape),
                 ", which holds a different number of elements; a global buffer's layout must be a bijection onto "
                 "an output of the same element count"));
  }

  // The logical index with the group's dims at `point` and every other dim 0.
  std::vector<int64_t> logical_at(const Group& g, int64_t point) const {
    std::vector<int64_t> idx(l_.vars.size(), 0);
    for (size_t j = g.dims.size(); j-- > 0;) {
      idx[g.dims[j]] = point % g.extents[j];
      point /= g.extents[j];
    }
    return idx;
  }

  std::vector<int64_t> forward_at(const std::vector<int64_t>& idx) const {
    Evaluator ev;
    for (size_t d = 0; d < idx.size(); ++d) ev.env[l_.vars[d].node()] = idx[d];
    std::vector<int64_t> out;
    for (const Expr& f : l_.forward) out.push_back(ev.eval(f).value_or(-1));
    return out;
  }

  // The group's outputs at its point `p` (its dims in mixed radix, the last fastest).
  void outputs_at(const Group& g, int64_t p, Evaluator& ev, std::vector<int64_t>& out) const {
    for (size_t j = g.dims.size(); j-- > 0;) {
      ev.env[l_.vars[g.dims[j]].node()] = p % g.extents[j];
      p /= g.extents[j];
    }
    out.resize(g.outputs.size());
    for (size_t o = 0; o < g.outputs.size(); ++o) {
      auto v = ev.eval(l_.forward[g.outputs[o]]);
      if (!v)
        fail(str_cat("output index ", g.outputs[o], " (", to_string(l_.forward[g.outputs[o]]),
                     ") cannot be evaluated on integers"));
      out[o] = *v;
    }
  }

  // The group's extents and output extents (the largest index + 1), checked for
  // negative indices; values are computed again where needed, never stored.
  Group enumerate(const std::vector<size_t>& dims, const std::vector<size_t>& outputs) {
    Group g{dims, outputs, {}, {}, 1};
    for (size_t d : dims) {
      auto ext = as_const_int(l_.logical->shape[d]);
      if (ext) {
        g.extents.push_back(*ext);
        continue;
      }
      // A symbolic dimension can only be carried over whole (to any output position).
      bool in_place = dims.size() == 1 && outputs.size() == 1 && l_.forward[outputs[0]].same_as(l_.vars[d]);
      if (!in_place)
        fail(str_cat("dimension ", d, " has the symbolic size ", to_string(l_.logical->shape[d]),
                     ", which the layout must carry over whole (one output index that is exactly the index of "
                     "that dimension, read by no other); only dimensions of constant size can be split or "
                     "combined"));
      out_shape_[outputs[0]] = l_.logical->shape[d];
      g.extents.clear();
      return g;
    }
    for (int64_t e : g.extents) {
      g.points *= e;
      if (g.points > kMaxGroupPoints)
        fail(str_cat("dimensions ", list_str(std::vector<int64_t>(dims.begin(), dims.end())),
                     " are permuted together over more than ", kMaxGroupPoints,
                     " elements, too many to check; permute smaller groups of dimensions"));
    }
    Evaluator ev;
    std::vector<int64_t> out;
    g.out_extents.assign(outputs.size(), 1);
    for (int64_t p = 0; p < g.points; ++p) {
      outputs_at(g, p, ev, out);
      for (size_t o = 0; o < outputs.size(); ++o) {
        if (out[o] < 0)
          fail(str_cat("logical index ", list_str(logical_at(g, p)), " maps to ",
                       list_str(forward_at(logical_at(g, p)), "[", "]"), ", a negative index"));
        g.out_extents[o] = std::max(g.out_extents[o], out[o] + 1);
      }
    }
    for (size_t o = 0; o < outputs.size(); ++o) out_shape_[outputs[o]] = int_imm(g.out_extents[o]);
    return g;
  }

  // Whether `g`, the group of the last logical dimension, keeps aligned runs of `len`
  // elements of that dimension whole on the last output dimension.
  bool keeps_runs(const Group& g, int64_t len) const {
    const size_t last = l_.forward.size() - 1;
    auto pos = std::find(g.outputs.begin(), g.outputs.end(), last);
    if (g.extents.empty() || pos == g.outputs.end()) return false;
    const size_t o_last = size_t(pos - g.outputs.begin());
    if (g.extents.back() % len || g.out_extents[o_last] % len) return false;
    Evaluator ev;
    std::vector<int64_t> base, next;
    for (int64_t p = 0; p < g.points; p += len) {  // the last dim's index is a multiple of len
      outputs_at(g, p, ev, base);
      if (base[o_last] % len) return false;
      for (int64_t k = 1; k < len; ++k) {
        outputs_at(g, p + k, ev, next);
        for (size_t o = 0; o < base.size(); ++o)
          if (next[o] != base[o] + (o == o_last ? k : 0)) return false;
      }
    }
    return true;
  }

  void check_bijective(const Group& g) const {
    if (g.extents.empty()) return;  // a symbolic dimension carried over whole
    int64_t box = 1;
    for (int64_t e : g.out_extents) {
      box *= e;
      if (box > g.points) count_mismatch();
    }
    Evaluator ev;
    std::vector<int64_t> out;
    auto flat_at = [&](int64_t p) {
      outputs_at(g, p, ev, out);
      int64_t flat = 0;
      for (size_t o = 0; o < out.size(); ++o) flat = flat * g.out_extents[o] + out[o];
      return flat;
    };
    std::vector<bool> seen(size_t(box), false);
    for (int64_t p = 0; p < g.points; ++p) {
      int64_t flat = flat_at(p);
      if (!seen[size_t(flat)]) {
        seen[size_t(flat)] = true;
        continue;
      }
      int64_t q = 0;
      while (flat_at(q) != flat) ++q;
      fail(str_cat("it is not a bijection: logical indices ", list_str(logical_at(g, q)), " and ",
                   list_str(logical_at(g, p)), " both map to ", list_str(forward_at(logical_at(g, p)), "[", "]")));
    }
  }

  GlobalLayout l_;
  SourceSpan span_;
  std::vector<Expr> out_shape_;
};

// The conjuncts of a condition, printed.
void conjuncts(const Expr& c, std::set<std::string>& out) {
  if (auto* b = c.as<BinaryNode>(); b && b->op == BinaryOp::And) {
    conjuncts(b->a, out);
    conjuncts(b->b, out);
    return;
  }
  out.insert(to_string(c));
}

class Remap : public IRMutator {
 public:
  Remap(const std::map<BufKey, GlobalLayout>& layouts, const Attrs& func_attrs)
      : layouts_(layouts), func_attrs_(func_attrs) {}
  using IRMutator::mutate;

  Stmt mutate(const Stmt& s) override {
    if (!s.defined()) return s;
    Scoped<SourceSpan> here(at_, s.span().defined() ? s.span() : at_);
    return IRMutator::mutate(s);
  }

 protected:
  using IRMutator::visit;

  Expr visit(const BufferLoadNode* op, const Expr& self) override {
    const GlobalLayout* l = find(op->buffer);
    if (!l) return IRMutator::visit(op, self);
    bool changed = false;
    std::vector<Expr> idx = mutate_all(op->indices, &changed);
    Expr load = buffer_load(l->physical, physical(*l, idx), op->span);
    if (in_address_) return load;
    Expr ok = unguarded(l->logical, idx);
    return is_true(ok) ? load : select(ok, load, read_outside(l->logical, op->dtype), op->span);
  }

  Stmt visit(const BufferStoreNode* op, const Stmt& self) override {
    const GlobalLayout* l = find(op->buffer);
    if (!l) return IRMutator::visit(op, self);
    bool changed = false;
    std::vector<Expr> idx = mutate_all(op->indices, &changed);
    Stmt store = buffer_store(l->physical, mutate(op->value), physical(*l, idx), op->span);
    Expr ok = unguarded(l->logical, idx);
    return is_true(ok) ? store : if_then_else(ok, store, Stmt(), op->span);
  }

  Expr visit(const CallNode* op, const Expr& self) override {
    if (op->op == Intrinsic::AddressOf) {
      Scoped<bool> address(in_address_, true);
      return IRMutator::visit(op, self);
    }
    if (const std::string* n = extern_name(op))
      for (const char* prefix : {"tl::load_global_", "tl::store_global_", "tl::cp_async"})
        if (n->rfind(prefix, 0) == 0)
          for (const Expr& a : op->args)
            if (const GlobalLayout* l = addressed(a))
              throw_user_error(
                  at_, str_cat(*n, " reads or writes a run of consecutive elements of '", l->logical->name,
                               "', whose annotated layout places elements apart; ", "access its elements one by one"));
    return IRMutator::visit(op, self);
  }

  Expr visit(const SelectNode* op, const Expr& self) override {
    Expr cond = mutate(op->cond), f = mutate(op->false_value);
    std::set<std::string> saved = guards_;
    conjuncts(op->cond, guards_);
    Expr t = mutate(op->true_value);
    guards_ = std::move(saved);
    return select(cond, t, f, op->span);
  }

  Stmt visit(const IfThenElseNode* op, const Stmt& self) override {
    Expr cond = mutate(op->cond);
    std::set<std::string> saved = guards_;
    conjuncts(op->cond, guards_);
    Stmt then_case = mutate(op->then_case);
    guards_ = std::move(saved);
    Stmt else_case = mutate(op->else_case);
    return if_then_else(cond, then_case, else_case, op->span);
  }

  Stmt visit(const ForNode* op, const Stmt& self) override {
    Scoped<bool> parallel(in_parallel_, in_parallel_ || op->for_kind == ForKind::Parallel);
    Stmt body = mutate(op->body);
    if (is_empty(body)) return seq({});  // a marker's loop nest
    return for_loop(op->var, op->min, op->extent, op->for_kind, body, op->annotations, op->span);
  }

  Stmt visit(const EvaluateNode* op, const Stmt& self) override {
    return as_marker(self) ? seq({}) : IRMutator::visit(op, self);
  }

  Stmt visit(const TileOpNode* op, const Stmt& self) override {
    bool touches = false;
    for (const BufferRegion& r : op->regions) touches |= find(r.buffer) != nullptr;
    if (!touches) return IRMutator::visit(op, self);
    switch (op->op) {
      case TileOpKind::Copy:
      case TileOpKind::Fill:
      case TileOpKind::Transpose:
      case TileOpKind::Im2col:
        // Their element loops are T.Parallel nests, which every target spreads over the block
        // (simplified, so that a fragment's indices are the loops' variables again).
        return mutate(simplify(own_loops(op_info(op->op).lower_serial(op))));
      case TileOpKind::Atomic:
        if (Stmt run = atomic_run(op); run.defined()) return run;
        return all_unit(op) ? atomic_element(op) : mutate(simplify(atomic_loops(op)));
      case TileOpKind::Gemm:
      case TileOpKind::Reduce:
      case TileOpKind::Cumsum:
      case TileOpKind::Print:
      case TileOpKind::DeviceAssert:
        break;
    }
    const BufferRegion* r = &op->regions[0];
    for (const BufferRegion& x : op->regions)
      if (find(x.buffer)) r = &x;
    throw_user_error(op->span.defined() ? op->span : at_,
                     str_cat("T.", op_info(op->op).name, " on '", r->buffer->name,
                             "', a global buffer with an annotated layout, is not supported; T.copy it to or from a "
                             "shared or fragment buffer and apply the op there"));
  }

 private:
  static bool is_true(const Expr& e) {
    auto v = as_const_int(e);
    return v && *v;
  }

  static bool is_empty(const Stmt& s) {
    auto* q = s.as<SeqNode>();
    return q && q->seq.empty();
  }

  const GlobalLayout* find(const Buffer& b) const {
    auto it = layouts_.find(b.get());
    return it == layouts_.end() ? nullptr : &it->second;
  }

  const GlobalLayout* addressed(const Expr& e) const {
    auto* c = e.as<CallNode>();
    auto* load = c && c->op == Intrinsic::AddressOf ? c->args[0].as<BufferLoadNode>() : nullptr;
    return load ? find(load->buffer) : nullptr;
  }

  // The physical indices of logical `idx`.
  std::vector<Expr> physical(const GlobalLayout& l, const std::vector<Expr>& idx) const {
    std::map<const VarNode*, Expr> vmap;
    for (size_t d = 0; d < idx.size(); ++d) {
      Expr i = idx[d];
      if (i.dtype().lanes() != 1)
        throw_user_error(at_, str_cat("a vector access (", to_string(i), ") of '", l.logical->name,
                                      "', whose annotated layout places elements apart, is not supported; access "
                                      "its elements one by one"));
      if (i.dtype() != l.vars[d].dtype()) i = cast(l.vars[d].dtype(), i);
      vmap[l.vars[d].node()] = i;
    }
    std::vector<Expr> out;
    for (const Expr& f : l.forward) out.push_back(simplify(substitute(f, vmap)));
    return out;
  }

  // The logical bounds of `idx` that no enclosing guard already checks.
  Expr unguarded(const Buffer& b, const std::vector<Expr>& idx) const {
    Expr ok = in_bounds(b, idx);
    std::set<std::string> need;
    conjuncts(ok, need);
    for (const std::string& c : need)
      if (c != "True" && c != "true" && !guards_.count(c)) return ok;
    return bool_imm(true);
  }

  // What a load outside the buffer gives: its T.annotate_safe_value, else 0.
  Expr read_outside(const Buffer& b, DataType t) const {
    auto it = func_attrs_.find("safe_value." + b->name);
    if (it == func_attrs_.end()) return make_const(t, 0);
    return safe_value(Attrs{{"safe_value", it->second}}, t);
  }

  static bool all_unit(const TileOpNode* op) {
    for (const BufferRegion& r : op->regions)
      for (const Range& x : r.ranges)
        if (!is_const_one(x.extent)) return false;
    return true;
  }

  static std::vector<Expr> mins(const BufferRegion& r) {
    std::vector<Expr> m;
    for (const Range& x : r.ranges) m.push_back(x.min);
    return m;
  }

  // The element `r` names, at its physical place when its buffer has a layout.
  BufferRegion element_at(const BufferRegion& r) {
    const GlobalLayout* l = find(r.buffer);
    if (!l) return mutate_region(r);
    bool changed = false;
    BufferRegion out{l->physical, {}};
    for (const Expr& i : physical(*l, mutate_all(mins(r), &changed)))
      out.ranges.push_back({i, make_const(i.dtype(), 1)});
    return out;
  }

  // A one-element atomic: its regions moved to their physical elements, guarded by the
  // logical bounds (a value read outside its tensor is 0, as for any atomic).
  Stmt atomic_element(const TileOpNode* op) {
    const BufferRegion& dst = op->regions[0];
    std::vector<BufferRegion> regions;
    for (const BufferRegion& r : op->regions) regions.push_back(element_at(r));
    bool changed = false;
    std::vector<Expr> args = mutate_all(op->args, &changed);
    Stmt body = tile_op(TileOpKind::Atomic, regions, args, op->attrs, op->span);
    if (op->regions.size() > 1 && find(op->regions[1].buffer)) {
      Expr src_ok = unguarded(op->regions[1].buffer, mins(op->regions[1]));
      Stmt zero =
          tile_op(TileOpKind::Atomic, {regions[0]}, {make_const(regions[0].buffer->dtype, 0)}, op->attrs, op->span);
      if (!is_true(src_ok)) body = if_then_else(src_ok, body, zero);
    }
    if (!find(dst.buffer)) return body;
    Expr dst_ok = unguarded(dst.buffer, mins(dst));
    return is_true(dst_ok) ? body : if_then_else(dst_ok, body, Stmt(), op->span);
  }

  // An atomic on a run of 2 or 4 elements along the last dimension (T.atomic_addx2/x4)
  // that the layout keeps whole: the same run at its physical place, so that the op
  // stays one vector atomic, when the run starts at a multiple of its length and lies
  // inside the tensor; element by element otherwise. Undefined when the layout does not
  // keep such runs.
  Stmt atomic_run(const TileOpNode* op) {
    const BufferRegion& dst = op->regions[0];
    const GlobalLayout* l = find(dst.buffer);
    if (!l || (op->regions.size() > 1 && find(op->regions[1].buffer))) return Stmt();
    const size_t last = dst.ranges.size() - 1;
    for (size_t d = 0; d < last; ++d)
      if (!is_const_one(dst.ranges[d].extent)) return Stmt();
    auto len = as_const_int(dst.ranges[last].extent);
    if (!len || *len < 2 || l->run % *len) return Stmt();
    bool changed = false;
    std::vector<Expr> start = mutate_all(mins(dst), &changed);
    BufferRegion run{l->physical, {}};
    for (const Expr& i : physical(*l, start)) run.ranges.push_back({i, make_const(i.dtype(), 1)});
    run.ranges.back().extent = make_const(run.ranges.back().min.dtype(), *len);
    std::vector<BufferRegion> regions{run};
    if (op->regions.size() > 1) regions.push_back(mutate_region(op->regions[1]));
    std::vector<Expr> args = mutate_all(op->args, &changed);
    Stmt whole = tile_op(TileOpKind::Atomic, regions, args, op->attrs, op->span);
    const Expr& first = start[last];
    Expr n = make_const(first.dtype(), *len);
    Expr ok = logical_and(eq(floormod(first, n), make_const(first.dtype(), 0)),
                          logical_and(in_bounds(l->logical, start),
                                      lt(add(first, make_const(first.dtype(), *len - 1)), l->logical->shape[last])));
    ok = simplify(ok);
    if (is_true(ok)) return whole;
    return if_then_else(ok, whole, mutate(simplify(atomic_loops(op))), op->span);
  }

  // A region atomic as a nest of one-element atomics: a T.Parallel nest, or serial loops
  // inside a T.Parallel iteration (whose thread does the op whole).
  Stmt atomic_loops(const TileOpNode* op) const {
    const BufferRegion& dst = op->regions[0];
    std::vector<Var> vars;
    std::vector<Expr> extents;
    for (const Range& r : dst.ranges) {
      if (is_const_one(r.extent)) continue;
      vars.emplace_back(str_cat("i", vars.size()), r.extent.dtype());
      extents.push_back(r.extent);
    }
    std::vector<BufferRegion> regions;
    for (const BufferRegion& region : op->regions) {
      BufferRegion out{region.buffer, {}};
      size_t v = 0;
      for (const Range& r : region.ranges)
        out.ranges.push_back({is_const_one(r.extent) ? r.min : add(r.min, cast(r.min.dtype(), vars[v++])),
                              make_const(r.extent.dtype(), 1)});
      regions.push_back(out);
    }
    Stmt body = tile_op(TileOpKind::Atomic, regions, op->args, op->attrs, op->span);
    ForKind kind = in_parallel_ ? ForKind::Serial : ForKind::Parallel;
    for (int i = int(vars.size()) - 1; i >= 0; --i)
      body = for_loop(vars[size_t(i)], make_const(extents[size_t(i)].dtype(), 0), extents[size_t(i)], kind, body);
    return body;
  }

  // Inside a T.Parallel iteration an op's loops are that iteration's: serial.
  Stmt own_loops(Stmt s) const {
    if (!in_parallel_) return s;
    struct Serial : IRMutator {
      using IRMutator::mutate;
      using IRMutator::visit;
      Stmt visit(const ForNode* op, const Stmt& self) override {
        Stmt body = mutate(op->body);
        ForKind kind = op->for_kind == ForKind::Parallel ? ForKind::Serial : op->for_kind;
        return for_loop(op->var, op->min, op->extent, kind, body, op->annotations, op->span);
      }
    };
    return Serial().mutate(s);
  }

  const std::map<BufKey, GlobalLayout>& layouts_;
  const Attrs& func_attrs_;
  SourceSpan at_;
  bool in_address_ = false, in_parallel_ = false;
  std::set<std::string> guards_;
};

}  // namespace

PrimFunc apply_global_layouts(const PrimFunc& f) {
  struct Collect : IRVisitor {
    std::vector<std::pair<const CallNode*, SourceSpan>> markers;
    int launches = 0;
    using IRVisitor::visit;
    void visit(const EvaluateNode* op) override {
      auto* c = op->value.as<CallNode>();
      const std::string* n = extern_name(op->value);
      if (c && n && *n == kGlobalLayoutMarker) markers.emplace_back(c, op->span);
    }
    void visit(const KernelLaunchNode* op) override {
      ++launches;
      IRVisitor::visit(op);
    }
  } collect;
  collect.visit(f->body);
  if (collect.markers.empty()) return f;
  std::map<BufKey, GlobalLayout> layouts;
  for (const auto& [marker, span] : collect.markers) {
    GlobalLayout l = LayoutChecker(marker, span).run();
    BufKey k = l.logical.get();
    if (auto it = layouts.find(k); it != layouts.end()) {
      // The same layout given twice is fine; two different ones are not.
      std::map<const VarNode*, Expr> vmap;
      for (size_t d = 0; d < l.vars.size(); ++d) vmap[l.vars[d].node()] = it->second.vars[d];
      bool same = l.forward.size() == it->second.forward.size();
      for (size_t i = 0; same && i < l.forward.size(); ++i)
        same = to_string(substitute(l.forward[i], vmap)) == to_string(it->second.forward[i]);
      if (!same)
        throw_user_error(span, str_cat("T.annotate_layout: global buffer '", l.logical->name,
                                       "' already has another layout in this kernel (", it->second.span.str(),
                                       "); annotate it once"));
      continue;
    }
    layouts.emplace(k, std::move(l));
  }
  if (collect.launches > 1)
    throw_user_error(collect.markers.front().second,
                     "T.annotate_layout on a global buffer in a function lowered with several T.Kernel blocks at "
                     "once is not supported on this target; write one T.Kernel per prim_func");
  std::vector<Param> params = f->params;
  for (Param& p : params)
    if (p.is_tensor())
      if (auto it = layouts.find(p.buffer.get()); it != layouts.end()) p.buffer = it->second.physical;
  Stmt body = Remap(layouts, f->attrs).mutate(f->body);
  return PrimFunc::make(f->name, std::move(params), std::move(body), f->attrs, f->span);
}

}  // namespace tl
