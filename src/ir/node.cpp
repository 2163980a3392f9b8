// Names of node kinds and operators, and the small non-inline members of the
// IR handles.
#include "ir/ir.h"

namespace tl {

const char* node_kind_name(NodeKind kind) {
  switch (kind) {
#define TL_EXPR(Name)  \
  case NodeKind::Name: \
    return #Name;
#define TL_STMT(Name)  \
  case NodeKind::Name: \
    return #Name;
#include "ir/node_kinds.def"
  }
  TL_UNREACHABLE("bad NodeKind");
}

const char* binary_op_symbol(BinaryOp op) {
  switch (op) {
#define TL_BINARY(Ident, sym, is_cmp) \
  case BinaryOp::Ident:               \
    return sym;
#include "ir/binary_ops.def"
#undef TL_BINARY
  }
  TL_UNREACHABLE("bad BinaryOp");
}

bool binary_op_is_comparison(BinaryOp op) {
  switch (op) {
#define TL_BINARY(Ident, sym, is_cmp) \
  case BinaryOp::Ident:               \
    return is_cmp;
#include "ir/binary_ops.def"
#undef TL_BINARY
  }
  TL_UNREACHABLE("bad BinaryOp");
}

const char* unary_op_symbol(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg:
      return "-";
    case UnaryOp::Not:
      return "!";
    case UnaryOp::BitNot:
      return "~";
  }
  TL_UNREACHABLE("bad UnaryOp");
}

namespace {
struct IntrinInfo {
  const char* name;
  int arity;
};
constexpr IntrinInfo kIntrinsics[] = {
#define TL_INTRIN(Ident, name, arity) {name, arity},
#include "ir/intrinsics.def"
#undef TL_INTRIN
};
}  // namespace

const char* intrinsic_name(Intrinsic op) {
  return kIntrinsics[int(op)].name;
}
int intrinsic_arity(Intrinsic op) {
  return kIntrinsics[int(op)].arity;
}

std::optional<Intrinsic> parse_intrinsic(const std::string& name) {
  for (size_t i = 0; i < sizeof(kIntrinsics) / sizeof(kIntrinsics[0]); ++i)
    if (name == kIntrinsics[i].name) return Intrinsic(i);
  return std::nullopt;
}

const char* for_kind_name(ForKind k) {
  switch (k) {
    case ForKind::Serial:
      return "serial";
    case ForKind::Parallel:
      return "parallel";
    case ForKind::Vectorized:
      return "vectorized";
    case ForKind::Unrolled:
      return "unroll";
  }
  TL_UNREACHABLE("bad ForKind");
}

const char* tile_op_name(TileOpKind k) {
  switch (k) {
#define TL_TILE_OP(Ident, name, fn, written, regs) \
  case TileOpKind::Ident:                          \
    return name;
#include "ops/tile_ops.def"
#undef TL_TILE_OP
  }
  TL_UNREACHABLE("bad TileOpKind");
}

const char* scope_name(Scope s) {
  switch (s) {
#define TL_SCOPE(Ident, name) \
  case Scope::Ident:          \
    return name;
#include "ir/scopes.def"
#undef TL_SCOPE
  }
  TL_UNREACHABLE("bad Scope");
}

Scope parse_scope(const std::string& name, SourceSpan span) {
#define TL_SCOPE(Ident, n) \
  if (name == (n)) return Scope::Ident;
#include "ir/scopes.def"
#undef TL_SCOPE
  throw_user_error(span, str_cat("unknown memory scope '", name,
                                 "'; expected one of global, shared, shared.dyn, "
                                 "local.fragment, local, local.var"));
}

Var::Var(std::string name, DataType t, SourceSpan span) {
  auto n = std::make_shared<VarNode>(std::move(name), t);
  n->span = span;
  p_ = std::move(n);
}

Var Var::from(const Expr& e) {
  TL_ICHECK(e.is<VarNode>(), "expected a Var, got ", node_kind_name(e.kind()));
  return Var(e.ptr());
}

Buffer Buffer::make(std::string name, DataType dtype, std::vector<Expr> shape, Scope scope, std::vector<Expr> strides,
                    SourceSpan span) {
  auto n = std::make_shared<BufferNode>();
  n->name = std::move(name);
  n->dtype = dtype;
  n->shape = std::move(shape);
  n->strides = std::move(strides);
  n->scope = scope;
  n->span = span;
  return Buffer(std::move(n));
}

std::vector<Expr> Buffer::effective_strides() const {
  if (!p_->strides.empty()) return p_->strides;
  std::vector<Expr> strides(p_->shape.size());
  Expr running = int_imm(1, p_->shape.empty() ? dtype::Int32 : p_->shape.back().dtype());
  for (int i = ndim() - 1; i >= 0; --i) {
    strides[i] = running;
    running = mul(running, p_->shape[i]);
  }
  return strides;
}

Expr Buffer::num_elements() const {
  Expr n = int_imm(1);
  for (const Expr& e : p_->shape) n = mul(n, e);
  return n;
}

BufferRegion BufferRegion::full(const Buffer& b) {
  BufferRegion r{b, {}};
  for (const Expr& e : b->shape) r.ranges.push_back({int_imm(0, e.dtype()), e});
  return r;
}

std::vector<Expr> BufferRegion::extents() const {
  std::vector<Expr> out;
  for (const Range& r : ranges) out.push_back(r.extent);
  return out;
}

std::optional<int64_t> as_const_int(const Expr& e) {
  if (!e.defined()) return std::nullopt;
  if (auto* i = e.as<IntImmNode>()) return i->value;
  return std::nullopt;
}

bool is_const_one(const Expr& e) {
  auto v = as_const_int(e);
  return v && *v == 1;
}

std::optional<double> as_const_float(const Expr& e) {
  if (!e.defined()) return std::nullopt;
  if (auto* f = e.as<FloatImmNode>()) return f->value;
  if (auto* i = e.as<IntImmNode>()) return double(i->value);
  return std::nullopt;
}

PrimFunc PrimFunc::make(std::string name, std::vector<Param> params, Stmt body, Attrs attrs, SourceSpan span) {
  auto n = std::make_shared<PrimFuncNode>();
  n->name = std::move(name);
  n->params = std::move(params);
  n->body = std::move(body);
  n->attrs = std::move(attrs);
  n->span = span;
  return PrimFunc(std::move(n));
}

PrimFunc PrimFunc::with_body(Stmt body) const {
  auto n = std::make_shared<PrimFuncNode>(*p_);
  n->body = std::move(body);
  return PrimFunc(std::move(n));
}

}  // namespace tl
