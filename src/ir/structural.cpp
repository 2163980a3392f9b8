// Structural equality and hashing. The fields of each node kind are described
// once, by a `fields` overload written against a Reducer; the equality reducer
// walks two trees side by side, the hash reducer walks one tree (passed as both
// sides). Sharing the description keeps equality and hash from drifting apart.
#include "ir/structural.h"

#include <bit>
#include <optional>
#include <span>
#include <type_traits>
#include <unordered_map>

namespace tl {
namespace {

// ---------------------------------------------------------------- shared field lists
//
// A Reducer R provides:
//   value(a, b)               plain data (enums, integers, strings, doubles, dtypes)
//   expr(a, b) / stmt(a, b)   subtrees, either possibly undefined
//   var_use(a, b)             a Var read as an expression
//   buffer_use(a, b)          a Buffer referenced by a load, store or region
//   layout(a, b)              the optional layout of a buffer definition
//   with_vars(a, b, body)     binds vars for the duration of body()
//   with_buffer(a, b, body)   binds an allocated buffer for the duration of body()
// Each returns false as soon as the two sides differ (the hash reducer never does).

template <typename R>
bool reduce_exprs(R& r, const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (!r.value(a.size(), b.size())) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!r.expr(a[i], b[i])) return false;
  return true;
}

template <typename R>
bool reduce_attr_value(R& r, const AttrValue& a, const AttrValue& b) {
  if (!r.value(a.index(), b.index())) return false;
  return std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Expr>)
          return r.expr(x, std::get<Expr>(b));
        else
          return r.value(x, std::get<T>(b));
      },
      a);
}

template <typename R>
bool reduce_attrs(R& r, const Attrs& a, const Attrs& b) {
  if (!r.value(a.size(), b.size())) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    if (!r.value(ia->first, ib->first)) return false;
    if (!reduce_attr_value(r, ia->second, ib->second)) return false;
  }
  return true;
}

// What a buffer definition (parameter or Allocate) must agree on.
template <typename R>
bool reduce_buffer_def(R& r, const Buffer& a, const Buffer& b) {
  return r.value(a->dtype, b->dtype) && r.value(a->scope, b->scope) && reduce_exprs(r, a->shape, b->shape) &&
         reduce_exprs(r, a->strides, b->strides) && r.layout(a, b);
}

template <typename R>
bool reduce_region(R& r, const BufferRegion& a, const BufferRegion& b) {
  if (!r.buffer_use(a.buffer, b.buffer) || !r.value(a.ranges.size(), b.ranges.size())) return false;
  for (size_t i = 0; i < a.ranges.size(); ++i)
    if (!r.expr(a.ranges[i].min, b.ranges[i].min) || !r.expr(a.ranges[i].extent, b.ranges[i].extent)) return false;
  return true;
}

// One overload per node kind. Kind and dtype are already matched by the caller.

template <typename R>
bool fields(R& r, const IntImmNode& a, const IntImmNode& b) {
  return r.value(a.value, b.value);
}
template <typename R>
bool fields(R& r, const FloatImmNode& a, const FloatImmNode& b) {
  return r.value(a.value, b.value);
}
template <typename R>
bool fields(R& r, const StringImmNode& a, const StringImmNode& b) {
  return r.value(a.value, b.value);
}
template <typename R>
bool fields(R& r, const VarNode& a, const VarNode& b) {
  return r.var_use(&a, &b);
}
template <typename R>
bool fields(R& r, const BinaryNode& a, const BinaryNode& b) {
  return r.value(a.op, b.op) && r.expr(a.a, b.a) && r.expr(a.b, b.b);
}
template <typename R>
bool fields(R& r, const UnaryNode& a, const UnaryNode& b) {
  return r.value(a.op, b.op) && r.expr(a.a, b.a);
}
template <typename R>
bool fields(R& r, const SelectNode& a, const SelectNode& b) {
  return r.expr(a.cond, b.cond) && r.expr(a.true_value, b.true_value) && r.expr(a.false_value, b.false_value);
}
template <typename R>
bool fields(R& r, const CastNode& a, const CastNode& b) {
  return r.expr(a.value, b.value);
}
template <typename R>
bool fields(R& r, const ReinterpretNode& a, const ReinterpretNode& b) {
  return r.expr(a.value, b.value);
}
template <typename R>
bool fields(R& r, const CallNode& a, const CallNode& b) {
  return r.value(a.op, b.op) && reduce_exprs(r, a.args, b.args);
}
template <typename R>
bool fields(R& r, const BufferLoadNode& a, const BufferLoadNode& b) {
  return r.buffer_use(a.buffer, b.buffer) && reduce_exprs(r, a.indices, b.indices);
}
template <typename R>
bool fields(R& r, const RampNode& a, const RampNode& b) {
  return r.value(a.lanes, b.lanes) && r.expr(a.base, b.base) && r.expr(a.stride, b.stride);
}
template <typename R>
bool fields(R& r, const BroadcastNode& a, const BroadcastNode& b) {
  return r.value(a.lanes, b.lanes) && r.expr(a.value, b.value);
}
template <typename R>
bool fields(R& r, const LetNode& a, const LetNode& b) {
  return r.expr(a.value, b.value) &&
         r.with_vars(std::span(&a.var, 1), std::span(&b.var, 1), [&] { return r.expr(a.body, b.body); });
}

template <typename R>
bool fields(R& r, const SeqNode& a, const SeqNode& b) {
  if (!r.value(a.seq.size(), b.seq.size())) return false;
  for (size_t i = 0; i < a.seq.size(); ++i)
    if (!r.stmt(a.seq[i], b.seq[i])) return false;
  return true;
}
template <typename R>
bool fields(R& r, const ForNode& a, const ForNode& b) {
  return r.value(a.for_kind, b.for_kind) && r.expr(a.min, b.min) && r.expr(a.extent, b.extent) &&
         reduce_attrs(r, a.annotations, b.annotations) &&
         r.with_vars(std::span(&a.var, 1), std::span(&b.var, 1), [&] { return r.stmt(a.body, b.body); });
}
template <typename R>
bool fields(R& r, const WhileNode& a, const WhileNode& b) {
  return r.expr(a.cond, b.cond) && r.stmt(a.body, b.body);
}
template <typename R>
bool fields(R& r, const IfThenElseNode& a, const IfThenElseNode& b) {
  return r.expr(a.cond, b.cond) && r.stmt(a.then_case, b.then_case) && r.stmt(a.else_case, b.else_case);
}
template <typename R>
bool fields(R& r, const BufferStoreNode& a, const BufferStoreNode& b) {
  return r.buffer_use(a.buffer, b.buffer) && r.expr(a.value, b.value) && reduce_exprs(r, a.indices, b.indices);
}
template <typename R>
bool fields(R& r, const EvaluateNode& a, const EvaluateNode& b) {
  return r.expr(a.value, b.value);
}
template <typename R>
bool fields(R& r, const LetStmtNode& a, const LetStmtNode& b) {
  return r.expr(a.value, b.value) &&
         r.with_vars(std::span(&a.var, 1), std::span(&b.var, 1), [&] { return r.stmt(a.body, b.body); });
}
template <typename R>
bool fields(R& r, const AllocateNode& a, const AllocateNode& b) {
  return r.with_buffer(a.buffer, b.buffer, [&] { return r.stmt(a.body, b.body); });
}
template <typename R>
bool fields(R& r, const KernelLaunchNode& a, const KernelLaunchNode& b) {
  if (!reduce_exprs(r, a.grid, b.grid) || !r.value(a.threads, b.threads) || !r.value(a.prelude, b.prelude) ||
      !r.value(a.cluster, b.cluster))
    return false;
  return r.with_vars(std::span(a.block_vars), std::span(b.block_vars), [&] {
    return r.with_vars(std::span(a.thread_vars), std::span(b.thread_vars), [&] { return r.stmt(a.body, b.body); });
  });
}
template <typename R>
bool fields(R& r, const TileOpNode& a, const TileOpNode& b) {
  if (!r.value(a.op, b.op) || !r.value(a.regions.size(), b.regions.size())) return false;
  for (size_t i = 0; i < a.regions.size(); ++i)
    if (!reduce_region(r, a.regions[i], b.regions[i])) return false;
  return reduce_exprs(r, a.args, b.args) && reduce_attrs(r, a.attrs, b.attrs);
}
template <typename R>
bool fields(R& r, const BarrierNode& a, const BarrierNode& b) {
  return r.value(a.barrier, b.barrier);
}
template <typename R>
bool fields(R& r, const AttrNode& a, const AttrNode& b) {
  return r.value(a.key, b.key) && reduce_attr_value(r, a.value, b.value) && r.stmt(a.body, b.body);
}
template <typename R>
bool fields(R&, const BreakNode&, const BreakNode&) {
  return true;
}
template <typename R>
bool fields(R&, const ContinueNode&, const ContinueNode&) {
  return true;
}

// Dispatch on the one list of node kinds: a kind without a `fields` overload
// does not compile. `a` and `b` have the same kind.
template <typename R>
bool reduce_expr_fields(R& r, const Expr& a, const Expr& b) {
  switch (a.kind()) {
#define TL_EXPR(Name)  \
  case NodeKind::Name: \
    return fields(r, static_cast<const Name##Node&>(*a.get()), static_cast<const Name##Node&>(*b.get()));
#define TL_STMT(Name)  \
  case NodeKind::Name: \
    break;
#include "ir/node_kinds.def"
  }
  TL_UNREACHABLE("statement kind in expression position");
}

template <typename R>
bool reduce_stmt_fields(R& r, const Stmt& a, const Stmt& b) {
  switch (a.kind()) {
#define TL_STMT(Name)  \
  case NodeKind::Name: \
    return fields(r, static_cast<const Name##Node&>(*a.get()), static_cast<const Name##Node&>(*b.get()));
#define TL_EXPR(Name)  \
  case NodeKind::Name: \
    break;
#include "ir/node_kinds.def"
  }
  TL_UNREACHABLE("expression kind in statement position");
}

// Function parameters bind their scalar vars, their buffers, and the symbolic
// vars of those buffers' shapes and strides (in order of first mention).
template <typename R>
bool reduce_func(R& r, const PrimFuncNode& a, const PrimFuncNode& b) {
  if (!r.value(a.name, b.name) || !r.value(a.params.size(), b.params.size())) return false;
  for (size_t i = 0; i < a.params.size(); ++i) {
    const Param& pa = a.params[i];
    const Param& pb = b.params[i];
    if (!r.value(pa.is_tensor(), pb.is_tensor())) return false;
    // Only workspaces add to the hash: the hashes of other functions stay as they were.
    if ((pa.workspace || pb.workspace) && !r.value(pa.workspace, pb.workspace)) return false;
    if ((pa.address || pb.address) && !r.value(pa.address, pb.address)) return false;
    bool ok = pa.is_tensor() ? r.define_param_buffer(pa.buffer, pb.buffer) : r.define_param_var(pa.var, pb.var);
    if (!ok) return false;
  }
  return reduce_attrs(r, a.attrs, b.attrs) && r.stmt(a.body, b.body);
}

// ---------------------------------------------------------------- equality

// How a use on the left relates to a use on the right.
enum class Match { Same, Different, Unbound };

// A scoped one-to-one correspondence between the binders of the two sides.
template <typename T>
class Correspondence {
 public:
  struct Saved {
    const T* a;
    const T* b;
    const T* old_of_a;
    const T* old_of_b;
  };

  bool empty() const { return fwd_.empty(); }

  // Both directions must agree: when one side rebinds (shadows) a var, the
  // other side's outer binder still maps forward but no longer back.
  Match lookup(const T* a, const T* b) const {
    auto fa = fwd_.find(a);
    auto bb = back_.find(b);
    if (fa == fwd_.end() && bb == back_.end()) return Match::Unbound;
    if (fa != fwd_.end() && bb != back_.end() && fa->second == b && bb->second == a) return Match::Same;
    return Match::Different;
  }

  Saved bind(const T* a, const T* b) {
    Saved s{a, b, get(fwd_, a), get(back_, b)};
    fwd_[a] = b;
    back_[b] = a;
    return s;
  }

  void restore(const Saved& s) {
    put(fwd_, s.a, s.old_of_a);
    put(back_, s.b, s.old_of_b);
  }

 private:
  using Map = std::unordered_map<const T*, const T*>;
  static const T* get(const Map& m, const T* k) {
    auto it = m.find(k);
    return it == m.end() ? nullptr : it->second;
  }
  static void put(Map& m, const T* k, const T* v) {
    if (v)
      m[k] = v;
    else
      m.erase(k);
  }

  Map fwd_, back_;
};

class EqualReducer {
 public:
  template <typename T>
  bool value(const T& a, const T& b) {
    return a == b;
  }
  // Bitwise, so that NaN equals itself and -0.0 differs from 0.0.
  bool value(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }

  bool expr(const Expr& a, const Expr& b) {
    if (!a.defined() || !b.defined()) return a.defined() == b.defined();
    // With no binders in play, a shared subtree is trivially equal to itself.
    if (a.same_as(b) && vars_.empty() && buffers_.empty()) return true;
    if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
    return reduce_expr_fields(*this, a, b);
  }

  bool stmt(const Stmt& a, const Stmt& b) {
    if (!a.defined() || !b.defined()) return a.defined() == b.defined();
    if (a.same_as(b) && vars_.empty() && buffers_.empty()) return true;
    if (a.kind() != b.kind()) return false;
    return reduce_stmt_fields(*this, a, b);
  }

  bool var_use(const VarNode* a, const VarNode* b) {
    switch (vars_.lookup(a, b)) {
      case Match::Same:
        return true;
      case Match::Different:
        return false;
      case Match::Unbound:
        break;
    }
    if (!defining_) return a == b;  // free on both sides
    vars_.bind(a, b);               // first mention of a symbolic shape var
    return true;
  }

  bool buffer_use(const Buffer& a, const Buffer& b) {
    switch (buffers_.lookup(a.get(), b.get())) {
      case Match::Same:
        return true;
      case Match::Different:
        return false;
      case Match::Unbound:
        return a.same_as(b);
    }
    TL_UNREACHABLE("bad Match");
  }

  bool layout(const Buffer& a, const Buffer& b) { return a->layout == b->layout; }

  template <typename F>
  bool with_vars(std::span<const Var> a, std::span<const Var> b, F&& body) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].dtype() != b[i].dtype()) return false;
    std::vector<Correspondence<VarNode>::Saved> saved;
    saved.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) saved.push_back(vars_.bind(a[i].node(), b[i].node()));
    bool ok = body();
    for (size_t i = saved.size(); i-- > 0;) vars_.restore(saved[i]);
    return ok;
  }

  template <typename F>
  bool with_buffer(const Buffer& a, const Buffer& b, F&& body) {
    if (!reduce_buffer_def(*this, a, b)) return false;
    auto saved = buffers_.bind(a.get(), b.get());
    bool ok = body();
    buffers_.restore(saved);
    return ok;
  }

  bool define_param_var(const Var& a, const Var& b) {
    defining_ = true;
    bool ok = expr(a, b);
    defining_ = false;
    return ok;
  }

  bool define_param_buffer(const Buffer& a, const Buffer& b) {
    switch (buffers_.lookup(a.get(), b.get())) {
      case Match::Same:
        return true;
      case Match::Different:
        return false;
      case Match::Unbound:
        break;
    }
    defining_ = true;
    bool ok = reduce_buffer_def(*this, a, b);
    defining_ = false;
    if (ok) buffers_.bind(a.get(), b.get());
    return ok;
  }

 private:
  Correspondence<VarNode> vars_;
  Correspondence<BufferNode> buffers_;
  bool defining_ = false;  // inside a parameter's shape: unbound vars get bound
};

// ---------------------------------------------------------------- hashing

// Deterministic mixing: FNV-1a for strings, a splitmix64 finalizer to combine.
uint64_t hash_string(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Tags keep fields of different roles from colliding (a bound var's index vs a constant).
enum class Tag : uint64_t {
  Undefined = 1,
  ExprKind,
  StmtKind,
  BoundVar,
  FreeVar,
  BindVar,
  BoundBuffer,
  FreeBuffer,
  BindBuffer,
  Layout,
  Func,
};

class HashReducer {
 public:
  uint64_t result() const { return h_; }

  bool value(const std::string& v, const std::string&) { return mix(hash_string(v)); }
  bool value(double v, double) { return mix(std::bit_cast<uint64_t>(v)); }
  bool value(DataType t, DataType) { return mix(uint64_t(t.scalar_type())) && mix(uint64_t(t.lanes())); }
  bool value(const std::vector<int64_t>& v, const std::vector<int64_t>&) {
    mix(v.size());
    for (int64_t x : v) mix(uint64_t(x));
    return true;
  }
  template <typename T>
  bool value(const T& v, const T&) {
    static_assert(std::is_integral_v<T> || std::is_enum_v<T>, "no hash for this field type");
    return mix(uint64_t(v));
  }

  bool expr(const Expr& a, const Expr&) {
    if (!a.defined()) return mix(Tag::Undefined);
    mix(Tag::ExprKind);
    mix(uint64_t(a.kind()));
    value(a.dtype(), a.dtype());
    return reduce_expr_fields(*this, a, a);
  }

  bool stmt(const Stmt& a, const Stmt&) {
    if (!a.defined()) return mix(Tag::Undefined);
    mix(Tag::StmtKind);
    mix(uint64_t(a.kind()));
    return reduce_stmt_fields(*this, a, a);
  }

  bool var_use(const VarNode* a, const VarNode*) {
    if (auto it = var_ids_.find(a); it != var_ids_.end()) return mix(Tag::BoundVar) && mix(it->second);
    if (defining_) {
      uint64_t id = next_id_++;
      var_ids_[a] = id;
      return mix(Tag::BoundVar) && mix(id);
    }
    return mix(Tag::FreeVar) && mix(hash_string(a->name));  // dtype is mixed by expr()
  }

  bool buffer_use(const Buffer& a, const Buffer&) {
    if (auto it = buffer_ids_.find(a.get()); it != buffer_ids_.end()) return mix(Tag::BoundBuffer) && mix(it->second);
    mix(Tag::FreeBuffer);
    mix(hash_string(a->name));
    value(a->dtype, a->dtype);
    mix(uint64_t(a->scope));
    return mix(uint64_t(a.ndim()));
  }

  bool layout(const Buffer& a, const Buffer&) { return mix(Tag::Layout) && mix(a->layout != nullptr); }

  template <typename F>
  bool with_vars(std::span<const Var> a, std::span<const Var>, F&& body) {
    mix(a.size());
    std::vector<std::pair<const VarNode*, std::optional<uint64_t>>> saved;
    for (const Var& v : a) {
      mix(Tag::BindVar);
      value(v.dtype(), v.dtype());
      saved.emplace_back(v.node(), lookup(var_ids_, v.node()));
      var_ids_[v.node()] = next_id_++;
    }
    body();
    for (size_t i = saved.size(); i-- > 0;) restore(var_ids_, saved[i].first, saved[i].second);
    return true;
  }

  template <typename F>
  bool with_buffer(const Buffer& a, const Buffer&, F&& body) {
    mix(Tag::BindBuffer);
    reduce_buffer_def(*this, a, a);
    auto old = lookup(buffer_ids_, a.get());
    buffer_ids_[a.get()] = next_id_++;
    body();
    restore(buffer_ids_, a.get(), old);
    return true;
  }

  bool define_param_var(const Var& a, const Var&) {
    defining_ = true;
    expr(a, a);
    defining_ = false;
    return true;
  }

  bool define_param_buffer(const Buffer& a, const Buffer&) {
    if (auto it = buffer_ids_.find(a.get()); it != buffer_ids_.end()) return mix(Tag::BoundBuffer) && mix(it->second);
    mix(Tag::BindBuffer);
    defining_ = true;
    reduce_buffer_def(*this, a, a);
    defining_ = false;
    buffer_ids_[a.get()] = next_id_++;
    return true;
  }

  bool mix(Tag t) { return mix(uint64_t(t)); }
  bool mix(uint64_t v) {
    h_ = finalize(h_ ^ (v + 0x9e3779b97f4a7c15ULL + (h_ << 6) + (h_ >> 2)));
    return true;
  }

 private:
  template <typename K>
  using IdMap = std::unordered_map<const K*, uint64_t>;

  template <typename K>
  static std::optional<uint64_t> lookup(const IdMap<K>& m, const K* k) {
    auto it = m.find(k);
    if (it == m.end()) return std::nullopt;
    return it->second;
  }
  template <typename K>
  static void restore(IdMap<K>& m, const K* k, std::optional<uint64_t> old) {
    if (old)
      m[k] = *old;
    else
      m.erase(k);
  }

  uint64_t h_ = 0x736f6d6570736575ULL;
  // Binders are numbered in the order they are met, so equal trees number them alike.
  uint64_t next_id_ = 0;
  IdMap<VarNode> var_ids_;
  IdMap<BufferNode> buffer_ids_;
  bool defining_ = false;
};

}  // namespace

bool structural_equal(const Expr& a, const Expr& b) {
  EqualReducer r;
  return r.expr(a, b);
}

bool structural_equal(const Stmt& a, const Stmt& b) {
  EqualReducer r;
  return r.stmt(a, b);
}

bool structural_equal(const PrimFunc& a, const PrimFunc& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  EqualReducer r;
  return reduce_func(r, *a.operator->(), *b.operator->());
}

uint64_t structural_hash(const Expr& e) {
  HashReducer r;
  r.expr(e, e);
  return r.result();
}

uint64_t structural_hash(const Stmt& s) {
  HashReducer r;
  r.stmt(s, s);
  return r.result();
}

uint64_t structural_hash(const PrimFunc& f) {
  HashReducer r;
  r.mix(Tag::Func);
  if (f.defined())
    reduce_func(r, *f.operator->(), *f.operator->());
  else
    r.mix(Tag::Undefined);
  return r.result();
}

}  // namespace tl
