// The base of every IR node and the reference-counted handles (Expr, Stmt) that
// passes hold. Nodes are immutable once built: a rewrite builds new nodes and shares
// the untouched subtrees.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ir/dtype.h"
#include "support/error.h"

namespace tl {

enum class NodeKind : uint8_t {
#define TL_EXPR(Name) Name,
#define TL_STMT(Name) Name,
#include "ir/node_kinds.def"
};

const char* node_kind_name(NodeKind kind);

struct Node {
  explicit Node(NodeKind k) : kind(k) {}
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const NodeKind kind;
  SourceSpan span;  // set on nodes the user wrote; empty on compiler-made ones
};

struct ExprNode : Node {
  ExprNode(NodeKind k, DataType t) : Node(k), dtype(t) {}
  const DataType dtype;
};

struct StmtNode : Node {
  using Node::Node;
};

// A handle to an immutable node of base type Base. Cheap to copy; equality of
// handles is identity (use structural_equal for structure).
template <typename Base>
class NodeRef {
 public:
  NodeRef() = default;
  explicit NodeRef(std::shared_ptr<const Base> p) : p_(std::move(p)) {}

  bool defined() const { return p_ != nullptr; }
  const Base* get() const { return p_.get(); }
  const Base* operator->() const { return p_.get(); }
  NodeKind kind() const { return p_->kind; }
  const SourceSpan& span() const { return p_->span; }

  // The node as its concrete type, or nullptr when it is another kind.
  template <typename T>
  const T* as() const {
    return p_ && p_->kind == T::kKind ? static_cast<const T*>(p_.get()) : nullptr;
  }
  template <typename T>
  bool is() const {
    return as<T>() != nullptr;
  }
  bool same_as(const NodeRef& o) const { return p_ == o.p_; }
  const std::shared_ptr<const Base>& ptr() const { return p_; }

 protected:
  std::shared_ptr<const Base> p_;
};

class Expr : public NodeRef<ExprNode> {
 public:
  using NodeRef::NodeRef;
  DataType dtype() const { return p_->dtype; }
};

class Stmt : public NodeRef<StmtNode> {
 public:
  using NodeRef::NodeRef;
};

// Builds a node of type T and wraps it in handle H.
template <typename H, typename T, typename... Args>
H make_node(Args&&... args) {
  return H(std::make_shared<const T>(std::forward<Args>(args)...));
}

// Values of annotations and attributes (loop annotations, op options, pass configs).
using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, Expr>;
using Attrs = std::map<std::string, AttrValue>;  // sorted: prints deterministically

}  // namespace tl
