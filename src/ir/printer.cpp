// The IR printer. One case per node kind; output is Python-like and indented.
#include "ir/printer.h"

#include <cmath>
#include <iomanip>
#include <limits>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "ir/attrs.h"
#include "ir/visitor.h"

namespace tl {
namespace {

class Printer {
 public:
  std::string expr(const Expr& e) {
    std::ostringstream os;
    print_expr(os, e);
    return os.str();
  }

  void print_func(const PrimFunc& f) {
    out_ << "@T.prim_func\ndef " << f->name << "(";
    bool first_param = true;
    for (const Param& p : f->params) {
      if (p.workspace) continue;  // printed in the body, as written
      if (!first_param) out_ << ", ";
      first_param = false;
      if (p.address) {
        out_ << buffer_name(p.buffer) << ": T.ptr";  // made a tensor in the body, as written
      } else if (p.is_tensor()) {
        out_ << buffer_name(p.buffer) << ": T.Tensor(" << shape(p.buffer) << ", \"" << p.buffer->dtype.name() << "\"";
        if (!p.buffer->strides.empty()) out_ << ", strides=" << exprs(p.buffer->strides);
        if (p.buffer->scope != Scope::Global) out_ << ", scope=\"" << scope_name(p.buffer->scope) << "\"";
        out_ << ")";
      } else {
        out_ << var_name(p.var.node()) << ": T." << p.var.dtype().name();
      }
    }
    out_ << "):\n";
    indent_ = 1;
    for (const Param& p : f->params) {
      if (!p.address) continue;
      line();
      out_ << buffer_name(p.buffer) << " = T.make_tensor(" << buffer_name(p.buffer) << ", " << shape(p.buffer) << ", \""
           << p.buffer->dtype.name() << "\"";
      if (!p.buffer->strides.empty()) out_ << ", strides=" << exprs(p.buffer->strides);
      out_ << ")\n";
    }
    for (const Param& p : f->params) {
      if (!p.workspace) continue;
      line();
      out_ << buffer_name(p.buffer) << " = T.alloc_global(" << shape(p.buffer) << ", \"" << p.buffer->dtype.name()
           << "\")\n";
    }
    // The function's attributes change its code (T.annotate_safe_value), so they are
    // part of the text that keys the cache.
    if (!f->attrs.empty()) {
      line();
      out_ << "T.func_attr({";
      bool first = true;
      for (const auto& [k, v] : f->attrs) {
        out_ << (first ? "" : ", ") << '"' << k << "\": " << to_string(v);
        first = false;
      }
      out_ << "})\n";
    }
    print_stmt(f->body);
  }

  void print_stmt(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
#define TL_STMT(Name)                               \
  case NodeKind::Name:                              \
    print(static_cast<const Name##Node*>(s.get())); \
    return;
#define TL_EXPR(Name)  \
  case NodeKind::Name: \
    break;
#include "ir/node_kinds.def"
    }
    TL_UNREACHABLE("expression in statement position");
  }

  std::string str() const {
    return out_.str();
  }

 private:
  std::ostringstream out_;
  int indent_ = 0;
  std::unordered_map<const void*, std::string> names_;
  std::unordered_set<std::string> taken_;

  std::string unique(const void* key, const std::string& base) {
    auto it = names_.find(key);
    if (it != names_.end()) return it->second;
    std::string name = base;
    for (int n = 1; taken_.count(name); ++n) name = base + "_" + std::to_string(n);
    taken_.insert(name);
    return names_[key] = name;
  }
  std::string var_name(const VarNode* v) {
    return unique(v, v->name.empty() ? "v" : v->name);
  }
  std::string buffer_name(const Buffer& b) {
    return unique(b.get(), b->name.empty() ? "buf" : b->name);
  }

  std::string exprs(const std::vector<Expr>& v) {
    std::ostringstream os;
    os << "(";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) os << ", ";
      print_expr(os, v[i]);
    }
    if (v.size() == 1) os << ",";
    os << ")";
    return os.str();
  }

  std::string shape(const Buffer& b) {
    std::ostringstream os;
    os << "(";
    for (size_t i = 0; i < b->shape.size(); ++i) {
      if (i) os << ", ";
      print_expr(os, b->shape[i]);
    }
    if (b->shape.size() == 1) os << ",";
    os << ")";
    return os.str();
  }

  void line() {
    for (int i = 0; i < indent_; ++i) out_ << "    ";
  }

  void print_float(std::ostream& os, double v, DataType t) {
    if (std::isinf(v)) {
      os << (v < 0 ? "-" : "") << "T.infinity(\"" << t.name() << "\")";
      return;
    }
    if (std::isnan(v)) {
      os << "T.nan(\"" << t.name() << "\")";
      return;
    }
    std::ostringstream s;
    s << std::setprecision(std::numeric_limits<double>::max_digits10) << v;
    std::string str = s.str();
    if (str.find_first_of(".e") == std::string::npos) str += ".0";
    os << str;
    if (t != dtype::Float32) os << "f" << t.bits() << (t == dtype::BFloat16 ? "b" : "");
  }

  void print_expr(std::ostream& os, const Expr& e) {
    if (!e.defined()) {
      os << "<undefined>";
      return;
    }
    switch (e.kind()) {
      case NodeKind::IntImm: {
        auto* n = e.as<IntImmNode>();
        if (n->dtype.is_bool())
          os << (n->value ? "True" : "False");
        else if (n->dtype == dtype::Int32)
          os << n->value;
        else if (n->dtype == dtype::UInt64)
          os << "T.uint64(" << uint64_t(n->value) << ")";  // kept by its bits
        else
          os << "T." << n->dtype.name() << "(" << n->value << ")";
        return;
      }
      case NodeKind::FloatImm: {
        auto* n = e.as<FloatImmNode>();
        print_float(os, n->value, n->dtype);
        return;
      }
      case NodeKind::StringImm: {
        os << std::quoted(e.as<StringImmNode>()->value);
        return;
      }
      case NodeKind::Var:
        os << var_name(e.as<VarNode>());
        return;
      case NodeKind::Binary: {
        auto* n = e.as<BinaryNode>();
        const char* sym = binary_op_symbol(n->op);
        if (std::isalpha(static_cast<unsigned char>(sym[0]))) {
          os << "T." << sym << "(";
          print_expr(os, n->a);
          os << ", ";
          print_expr(os, n->b);
          os << ")";
          return;
        }
        os << "(";
        print_expr(os, n->a);
        os << " " << sym << " ";
        print_expr(os, n->b);
        os << ")";
        return;
      }
      case NodeKind::Unary: {
        auto* n = e.as<UnaryNode>();
        os << unary_op_symbol(n->op) << "(";
        print_expr(os, n->a);
        os << ")";
        return;
      }
      case NodeKind::Select: {
        auto* n = e.as<SelectNode>();
        os << "T.if_then_else(";
        print_expr(os, n->cond);
        os << ", ";
        print_expr(os, n->true_value);
        os << ", ";
        print_expr(os, n->false_value);
        os << ")";
        return;
      }
      case NodeKind::Cast: {
        auto* n = e.as<CastNode>();
        os << "T.cast(";
        print_expr(os, n->value);
        os << ", \"" << n->dtype.name() << "\")";
        return;
      }
      case NodeKind::Reinterpret: {
        auto* n = e.as<ReinterpretNode>();
        os << "T.reinterpret(";
        print_expr(os, n->value);
        os << ", \"" << n->dtype.name() << "\")";
        return;
      }
      case NodeKind::Call: {
        auto* n = e.as<CallNode>();
        os << "T." << intrinsic_name(n->op) << "(";
        for (size_t i = 0; i < n->args.size(); ++i) {
          if (i) os << ", ";
          print_expr(os, n->args[i]);
        }
        if (n->op == Intrinsic::Extern) os << ", dtype=\"" << n->dtype.name() << "\"";
        os << ")";
        return;
      }
      case NodeKind::BufferLoad: {
        auto* n = e.as<BufferLoadNode>();
        os << buffer_name(n->buffer) << "[";
        for (size_t i = 0; i < n->indices.size(); ++i) {
          if (i) os << ", ";
          print_expr(os, n->indices[i]);
        }
        os << "]";
        return;
      }
      case NodeKind::Ramp: {
        auto* n = e.as<RampNode>();
        os << "T.Ramp(";
        print_expr(os, n->base);
        os << ", ";
        print_expr(os, n->stride);
        os << ", " << n->lanes << ")";
        return;
      }
      case NodeKind::Broadcast: {
        auto* n = e.as<BroadcastNode>();
        os << "T.Broadcast(";
        print_expr(os, n->value);
        os << ", " << n->lanes << ")";
        return;
      }
      case NodeKind::Let: {
        auto* n = e.as<LetNode>();
        os << "T.Let(" << var_name(n->var.node()) << ": T." << n->var.dtype().name() << " = ";
        print_expr(os, n->value);
        os << ", ";
        print_expr(os, n->body);
        os << ")";
        return;
      }
#define TL_STMT(Name) case NodeKind::Name:
#include "ir/node_kinds.def"
      break;
    }
    TL_UNREACHABLE("statement in expression position");
  }

  void region(std::ostream& os, const BufferRegion& r) {
    os << buffer_name(r.buffer) << "[";
    for (size_t i = 0; i < r.ranges.size(); ++i) {
      if (i) os << ", ";
      print_expr(os, r.ranges[i].min);
      os << ":";
      print_expr(os, add(r.ranges[i].min, r.ranges[i].extent));
    }
    os << "]";
  }

  void body(const Stmt& s) {
    ++indent_;
    auto* q = s.defined() ? s.as<SeqNode>() : nullptr;
    if (s.defined() && !(q && q->seq.empty()))
      print_stmt(s);
    else {
      line();
      out_ << "pass\n";
    }
    --indent_;
  }

  void print(const SeqNode* op) {
    for (const Stmt& s : op->seq) print_stmt(s);
  }
  void print(const ForNode* op) {
    line();
    std::string v = var_name(op->var.node());
    auto stages = op->annotations.find("num_stages");
    out_ << "for " << v << " in ";
    if (stages != op->annotations.end() && op->for_kind == ForKind::Serial) {
      out_ << "T.Pipelined(";
    } else {
      switch (op->for_kind) {
        case ForKind::Serial:
          out_ << "T.serial(";
          break;
        case ForKind::Parallel:
          out_ << "T.Parallel(";
          break;
        case ForKind::Vectorized:
          out_ << "T.vectorized(";
          break;
        case ForKind::Unrolled:
          out_ << "T.unroll(";
          break;
      }
    }
    if (!is_zero(op->min)) {
      print_expr(out_, op->min);
      out_ << ", ";
      print_expr(out_, add(op->min, op->extent));
    } else {
      print_expr(out_, op->extent);
    }
    for (const auto& [k, val] : op->annotations) out_ << ", " << k << "=" << to_string(val);
    if (op->var.dtype() != dtype::Int32) out_ << ", dtype=\"" << op->var.dtype().name() << "\"";
    out_ << "):\n";
    body(op->body);
  }
  static bool is_zero(const Expr& e) {
    auto v = as_const_int(e);
    return v && *v == 0;
  }
  void print(const WhileNode* op) {
    line();
    out_ << "while ";
    print_expr(out_, op->cond);
    out_ << ":\n";
    body(op->body);
  }
  void print(const IfThenElseNode* op) {
    line();
    out_ << "if ";
    print_expr(out_, op->cond);
    out_ << ":\n";
    body(op->then_case);
    if (op->else_case.defined()) {
      line();
      out_ << "else:\n";
      body(op->else_case);
    }
  }
  void print(const BufferStoreNode* op) {
    line();
    out_ << buffer_name(op->buffer) << "[";
    for (size_t i = 0; i < op->indices.size(); ++i) {
      if (i) out_ << ", ";
      print_expr(out_, op->indices[i]);
    }
    out_ << "] = ";
    print_expr(out_, op->value);
    out_ << "\n";
  }
  void print(const EvaluateNode* op) {
    line();
    print_expr(out_, op->value);
    out_ << "\n";
  }
  void print(const LetStmtNode* op) {
    line();
    out_ << var_name(op->var.node()) << ": T." << op->var.dtype().name() << " = ";
    print_expr(out_, op->value);
    out_ << "\n";
    print_stmt(op->body);
  }
  void print(const AllocateNode* op) {
    line();
    const Buffer& b = op->buffer;
    out_ << buffer_name(b) << " = ";
    switch (b->scope) {
      case Scope::Shared:
      case Scope::SharedDyn:
        out_ << "T.alloc_shared(";
        break;
      case Scope::Fragment:
        out_ << "T.alloc_fragment(";
        break;
      case Scope::LocalVar:
        out_ << "T.alloc_var(";
        break;
      default:
        out_ << "T.alloc_local(";
        break;
    }
    out_ << shape(b) << ", \"" << b->dtype.name() << "\", scope=\"" << scope_name(b->scope) << "\"";
    if (!b->strides.empty()) out_ << ", strides=" << exprs(b->strides);
    out_ << ")\n";
    print_stmt(op->body);
  }
  void print(const KernelLaunchNode* op) {
    line();
    out_ << "with T.Kernel(";
    for (size_t i = 0; i < op->grid.size(); ++i) {
      if (i) out_ << ", ";
      print_expr(out_, op->grid[i]);
    }
    out_ << ", threads=";
    if (op->threads.size() == 1) {
      out_ << op->threads[0];
    } else {
      out_ << "[";
      for (size_t i = 0; i < op->threads.size(); ++i) out_ << (i ? ", " : "") << op->threads[i];
      out_ << "]";
    }
    if (!op->cluster.empty()) {
      out_ << ", cluster_dims=(";
      for (size_t i = 0; i < op->cluster.size(); ++i) out_ << (i ? ", " : "") << op->cluster[i];
      out_ << ")";
    }
    out_ << ") as (";
    for (size_t i = 0; i < op->block_vars.size(); ++i) out_ << (i ? ", " : "") << var_name(op->block_vars[i].node());
    out_ << "):";
    for (const Var& v : op->block_vars)
      if (v.dtype() != dtype::Int32) out_ << "  # " << var_name(v.node()) << ": " << v.dtype().name();
    out_ << "\n";
    ++indent_;
    if (!op->thread_vars.empty()) {
      line();
      for (size_t i = 0; i < op->thread_vars.size(); ++i)
        out_ << (i ? ", " : "") << var_name(op->thread_vars[i].node());
      out_ << (op->thread_vars.size() == 1 ? "," : "") << " = T.get_thread_bindings()\n";
    }
    if (!op->prelude.empty()) {
      line();
      out_ << "# prelude: " << std::quoted(op->prelude) << "\n";
    }
    --indent_;
    body(op->body);
  }
  void print(const TileOpNode* op) {
    line();
    // A scan prints as the function that wrote it: T.cumsum, T.cummax, T.cummin.
    // A copy T.async_copy made prints as T.async_copy, without the attrs it implies.
    std::string name = tile_op_name(op->op);
    std::set<std::string> skip;
    if (name == "cumsum")
      if (auto it = op->attrs.find("kind"); it != op->attrs.end())
        if (auto* kind = std::get_if<std::string>(&it->second)) name = "cum" + *kind, skip = {"kind"};
    if (name == "copy" && op->attrs.count(kAsyncIssueAttr))
      name = "async_copy", skip = {kAsyncIssueAttr, "disable_tma"};
    out_ << "T." << name << "(";
    bool first = true;
    for (const BufferRegion& r : op->regions) {
      if (!first) out_ << ", ";
      first = false;
      region(out_, r);
    }
    for (const Expr& a : op->args) {
      if (!first) out_ << ", ";
      first = false;
      print_expr(out_, a);
    }
    for (const auto& [k, v] : op->attrs) {
      if (skip.count(k)) continue;
      if (!first) out_ << ", ";
      first = false;
      out_ << k << "=" << to_string(v);
    }
    out_ << ")\n";
  }
  void print(const BarrierNode* op) {
    line();
    out_ << (op->barrier == BarrierKind::Threads ? "T.sync_threads()\n" : "T.sync_warp()\n");
  }
  void print(const AttrNode* op) {
    line();
    out_ << "T.attr(\"" << op->key << "\", " << to_string(op->value) << ")\n";
    print_stmt(op->body);
  }
  void print(const BreakNode*) {
    line();
    out_ << "break\n";
  }
  void print(const ContinueNode*) {
    line();
    out_ << "continue\n";
  }
};

}  // namespace

std::string to_string(const Expr& e) {
  return Printer().expr(e);
}

std::string to_string(const Stmt& s) {
  Printer p;
  p.print_stmt(s);
  return p.str();
}

std::string to_string(const PrimFunc& f) {
  Printer p;
  p.print_func(f);
  return p.str();
}

std::string to_string(const AttrValue& v) {
  std::ostringstream os;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          os << x;
        } else if constexpr (std::is_same_v<T, double>) {
          os << std::setprecision(17) << x;
        } else if constexpr (std::is_same_v<T, std::string>) {
          os << std::quoted(x);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          os << "[";
          for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << x[i];
          os << "]";
        } else {
          os << to_string(x);
        }
      },
      v);
  return os.str();
}

}  // namespace tl
