// Vars and Buffers: the named things of the IR. A Var is an expression whose
// identity is the node itself; a Buffer is an N-d array in some memory scope.
#pragma once

#include "ir/node.h"

namespace tl {

struct VarNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Var;
  VarNode(std::string n, DataType t) : ExprNode(kKind, t), name(std::move(n)) {}
  const std::string name;
};

class Var : public Expr {
 public:
  Var() = default;
  Var(std::string name, DataType t, SourceSpan span = {});
  explicit Var(std::shared_ptr<const ExprNode> p) : Expr(std::move(p)) {}
  static Var from(const Expr& e);  // e must be a Var
  const VarNode* node() const { return static_cast<const VarNode*>(get()); }
  const std::string& name() const { return node()->name; }
};

enum class Scope : uint8_t {
#define TL_SCOPE(Ident, name) Ident,
#include "ir/scopes.def"
#undef TL_SCOPE
};
const char* scope_name(Scope s);
// Parses a scope name; throws a UserError listing the valid ones.
Scope parse_scope(const std::string& name, SourceSpan span = {});

class Layout;  // layout/layout.h

struct BufferNode {
  std::string name;
  DataType dtype;
  std::vector<Expr> shape;
  std::vector<Expr> strides;  // empty: compact row-major
  Scope scope = Scope::Global;
  std::shared_ptr<const Layout> layout;  // optional, set by annotate_layout
  SourceSpan span;
};

class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::shared_ptr<const BufferNode> p) : p_(std::move(p)) {}
  static Buffer make(std::string name, DataType dtype, std::vector<Expr> shape, Scope scope,
                     std::vector<Expr> strides = {}, SourceSpan span = {});

  bool defined() const { return p_ != nullptr; }
  const BufferNode* operator->() const { return p_.get(); }
  const BufferNode* get() const { return p_.get(); }
  bool same_as(const Buffer& o) const { return p_ == o.p_; }
  int ndim() const { return int(p_->shape.size()); }
  const std::shared_ptr<const BufferNode>& ptr() const { return p_; }

  // Strides as expressions (compact row-major when none were given).
  std::vector<Expr> effective_strides() const;
  // Number of elements, as an expression.
  Expr num_elements() const;

 private:
  std::shared_ptr<const BufferNode> p_;
};

struct Range {
  Expr min, extent;
};

// A rectangular piece of a buffer: the operand of tile ops.
struct BufferRegion {
  Buffer buffer;
  std::vector<Range> ranges;

  static BufferRegion full(const Buffer& b);
  std::vector<Expr> extents() const;
};

// One side of T.copy (FunctionBuilder::copy, make_copy in ops/tile_op.h): a buffer
// with per-dimension starts and extents. An empty `extents` means "start point": the
// extent is taken from the other side.
struct CopyOperand {
  Buffer buffer;
  std::vector<Expr> mins;
  std::vector<Expr> extents;
};

}  // namespace tl
