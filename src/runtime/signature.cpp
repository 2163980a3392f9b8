// The small integer evaluator used to bind shapes and compute the grid at call
// time, and the text form exported kernels store: the runtime library's part of
// the signature (signature_from.cpp reads one off a PrimFunc, in the compiler).
#include "runtime/signature.h"

#include <sstream>

#include "ir/printer.h"
#include "ir/visitor.h"

namespace tl {

std::string kernel_part_name(const std::string& name, size_t i) {
  return i == 0 ? name : str_cat(name, "_k", i);
}

std::optional<int64_t> apply_int_op(BinaryOp op, int64_t p, int64_t q) {
  switch (op) {
    case BinaryOp::Add:
      return p + q;
    case BinaryOp::Sub:
      return p - q;
    case BinaryOp::Mul:
      return p * q;
    // Defined for every divisor, as in the kernels (device/common/int_div.h): x // 0 == 0,
    // x % 0 == x, and INT64_MIN // -1 wraps instead of trapping.
    case BinaryOp::Div:
    case BinaryOp::FloorDiv: {
      if (q == 0) return 0;
      if (q == -1) return int64_t(0ull - uint64_t(p));
      int64_t r = p / q;
      if (op == BinaryOp::Div) return r;
      return (p % q != 0 && ((p < 0) != (q < 0))) ? r - 1 : r;
    }
    case BinaryOp::Mod:
    case BinaryOp::FloorMod: {
      if (q == 0) return p;
      if (q == -1) return 0;
      int64_t r = p % q;
      if (op == BinaryOp::Mod) return r;
      return (r != 0 && ((r < 0) != (q < 0))) ? r + q : r;
    }
    case BinaryOp::Min:
      return std::min(p, q);
    case BinaryOp::Max:
      return std::max(p, q);
    case BinaryOp::EQ:
      return p == q;
    case BinaryOp::NE:
      return p != q;
    case BinaryOp::LT:
      return p < q;
    case BinaryOp::LE:
      return p <= q;
    case BinaryOp::GT:
      return p > q;
    case BinaryOp::GE:
      return p >= q;
    case BinaryOp::And:
      return p && q;
    case BinaryOp::Or:
      return p || q;
    case BinaryOp::BitAnd:
      return p & q;
    case BinaryOp::BitOr:
      return p | q;
    case BinaryOp::BitXor:
      return p ^ q;
    case BinaryOp::Shl:
      return p << q;
    case BinaryOp::Shr:
      return p >> q;
  }
  return std::nullopt;
}

// ---- serialization
//
// Format (one record per line, tokens separated by single spaces):
//   tl-signature 1
//   name <kernel>
//   var <id> <dtype> <name>                 every Var used below, in first-use order
//   tensor <param> <buffer> <dtype> <ndim> <expr>... <nstrides> <expr>...
//   readonly <param>                        the tensor above is never written (absent: it may be)
//   unused <param>                          the tensor above is never accessed (absent: it may be)
//   scalar <param> <var id>
//   dynamic <var id>
//   grid <n> <expr>...                      starts a launch (one per T.Kernel block)
//   threads <n> <int>...                    of the launch above
//   cluster <n> <int>...                    of the launch above, when it has clusters
//   cooperative                             of the launch above, when it calls T.sync_grid
//   tma <param> <dtype> <rank> <box,...> <swizzle> <dynamic>   TmaMapSpec::str(), of the launch above
//   assume <expr>                           a T.assume every call checks
// An expression is written in prefix form: `I <dtype> <value>`, `V <id>`,
// `B <op> <dtype> <a> <b>`, `C <dtype> <a>`, `S <dtype> <cond> <t> <f>`. Nodes
// are rebuilt as they were (no simplification), so evaluation is unchanged.
namespace {

constexpr const char* kSignatureHeader = "tl-signature 1";

const char* binary_op_ident(BinaryOp op) {
  switch (op) {
#define TL_BINARY(Ident, sym, is_cmp) \
  case BinaryOp::Ident:               \
    return #Ident;
#include "ir/binary_ops.def"
#undef TL_BINARY
  }
  return "?";
}

std::optional<BinaryOp> binary_op_from_ident(const std::string& s) {
#define TL_BINARY(Ident, sym, is_cmp) \
  if (s == #Ident) return BinaryOp::Ident;
#include "ir/binary_ops.def"
#undef TL_BINARY
  return std::nullopt;
}

void check_token(const std::string& what, const std::string& s) {
  if (s.empty() || s.find_first_of(" \t\n") != std::string::npos)
    throw_user_error(
        {}, str_cat("cannot serialize the signature: ", what, " '", s, "' is empty or contains whitespace; rename it"));
}

class SignatureWriter {
 public:
  std::string write(const KernelSignature& sig) {
    check_token("kernel name", sig.name);
    body_ << "name " << sig.name << "\n";
    for (size_t i = 0; i < sig.params.size(); ++i) {
      const Param& p = sig.params[i];
      check_token("parameter name", p.name);
      if (!p.is_tensor()) {
        body_ << "scalar " << p.name << " " << var_id(p.var) << "\n";
        continue;
      }
      check_token("buffer name", p.buffer->name);
      std::ostringstream line;
      line << "tensor " << p.name << " " << p.buffer->name << " " << p.buffer->dtype.name();
      write_exprs(line, p.buffer->shape);
      write_exprs(line, p.buffer->strides);
      body_ << line.str() << "\n";
      if (!sig.writes(i)) body_ << "readonly " << p.name << "\n";
      if (!sig.accesses(i)) body_ << "unused " << p.name << "\n";
      if (p.workspace) body_ << "workspace " << p.name << "\n";
      if (p.address) body_ << "address " << p.name << "\n";
    }
    for (const Var& v : sig.dynamic_vars) body_ << "dynamic " << var_id(v) << "\n";
    for (const LaunchSpec& l : sig.launches) {
      std::ostringstream grid;
      grid << "grid";
      write_exprs(grid, l.grid);
      body_ << grid.str() << "\n";
      body_ << "threads " << l.threads.size();
      for (int64_t t : l.threads) body_ << " " << t;
      body_ << "\n";
      if (!l.cluster.empty()) {
        body_ << "cluster " << l.cluster.size();
        for (int64_t c : l.cluster) body_ << " " << c;
        body_ << "\n";
      }
      if (l.cooperative) body_ << "cooperative\n";
      for (const TmaMapSpec& m : l.tma_maps) body_ << m.str() << "\n";
    }
    for (const Expr& a : sig.assumes) {
      std::ostringstream line;
      line << "assume";
      write_expr(line, a);
      body_ << line.str() << "\n";
    }
    return std::string(kSignatureHeader) + "\n" + vars_.str() + body_.str();
  }

 private:
  int var_id(const Var& v) {
    auto [it, fresh] = ids_.emplace(v.node(), int(ids_.size()));
    if (fresh) {
      check_token("variable name", v.name());
      vars_ << "var " << it->second << " " << v.dtype().name() << " " << v.name() << "\n";
    }
    return it->second;
  }

  void write_exprs(std::ostream& os, const std::vector<Expr>& es) {
    os << " " << es.size();
    for (const Expr& e : es) write_expr(os, e);
  }

  void write_expr(std::ostream& os, const Expr& e) {
    if (auto* i = e.as<IntImmNode>()) {
      os << " I " << e.dtype().name() << " " << i->value;
    } else if (auto* v = e.as<VarNode>()) {
      os << " V " << var_id(Var::from(e));
      (void)v;
    } else if (auto* b = e.as<BinaryNode>()) {
      os << " B " << binary_op_ident(b->op) << " " << e.dtype().name();
      write_expr(os, b->a);
      write_expr(os, b->b);
    } else if (auto* c = e.as<CastNode>()) {
      os << " C " << e.dtype().name();
      write_expr(os, c->value);
    } else if (auto* s = e.as<SelectNode>()) {
      os << " S " << e.dtype().name();
      write_expr(os, s->cond);
      write_expr(os, s->true_value);
      write_expr(os, s->false_value);
    } else {
      throw_user_error({}, str_cat("cannot serialize the signature: the expression '", to_string(e),
                                   "' (a shape, stride or grid extent) is not integer arithmetic"));
    }
  }

  std::map<const VarNode*, int> ids_;
  std::ostringstream vars_, body_;
};

class SignatureReader {
 public:
  KernelSignature read(const std::string& text) {
    std::istringstream lines(text);
    std::string line;
    if (!std::getline(lines, line) || line != kSignatureHeader)
      fail(1, str_cat("expected the header '", kSignatureHeader, "'"));
    KernelSignature sig;
    int number = 1;
    while (std::getline(lines, line)) {
      ++number;
      if (line.empty()) continue;
      in_ = std::istringstream(line);
      line_ = number;
      std::string kind = word();
      if (kind == "name") {
        sig.name = word();
      } else if (kind == "var") {
        int id = integer();
        DataType t = dtype();
        std::string name = word();
        if (id != int(vars_.size())) fail(line_, "variable ids must be consecutive");
        vars_.emplace_back(name, t);
      } else if (kind == "tensor") {
        std::string name = word(), buffer = word();
        DataType t = dtype();
        std::vector<Expr> shape = exprs(), strides = exprs();
        sig.params.push_back(Param{name, Buffer::make(buffer, t, shape, Scope::Global, strides), {}});
        sig.written.push_back(true);
        sig.accessed.push_back(true);
      } else if (kind == "unused") {
        std::string name = word();
        if (sig.params.empty() || !sig.params.back().is_tensor() || sig.params.back().name != name)
          fail(line_, str_cat("'unused ", name, "' does not follow the record of tensor '", name, "'"));
        sig.accessed.back() = false;
      } else if (kind == "readonly") {
        std::string name = word();
        if (sig.params.empty() || !sig.params.back().is_tensor() || sig.params.back().name != name)
          fail(line_, str_cat("'readonly ", name, "' does not follow the record of tensor '", name, "'"));
        sig.written.back() = false;
      } else if (kind == "workspace") {
        std::string name = word();
        if (sig.params.empty() || !sig.params.back().is_tensor() || sig.params.back().name != name)
          fail(line_, str_cat("'workspace ", name, "' does not follow the record of tensor '", name, "'"));
        sig.params.back().workspace = true;
      } else if (kind == "address") {
        std::string name = word();
        if (sig.params.empty() || !sig.params.back().is_tensor() || sig.params.back().name != name)
          fail(line_, str_cat("'address ", name, "' does not follow the record of tensor '", name, "'"));
        sig.params.back().address = true;
      } else if (kind == "scalar") {
        std::string name = word();
        sig.params.push_back(Param{name, {}, var()});
        sig.written.push_back(false);
        sig.accessed.push_back(true);
      } else if (kind == "dynamic") {
        sig.dynamic_vars.push_back(var());
      } else if (kind == "grid") {
        sig.launches.push_back(LaunchSpec{exprs(), {}, {}, {}, {}});
      } else if (kind == "threads") {
        LaunchSpec& l = current_launch(sig, kind);
        int n = integer();
        for (int i = 0; i < n; ++i) l.threads.push_back(integer());
      } else if (kind == "cluster") {
        LaunchSpec& l = current_launch(sig, kind);
        int n = integer();
        for (int i = 0; i < n; ++i) l.cluster.push_back(integer());
      } else if (kind == "assume") {
        sig.assumes.push_back(expr());
      } else if (kind == "cooperative") {
        current_launch(sig, kind).cooperative = true;
      } else if (kind == "tma") {
        current_launch(sig, kind).tma_maps.push_back(TmaMapSpec::parse(line));
      } else {
        fail(line_, str_cat("unknown record '", kind, "'"));
      }
    }
    if (sig.name.empty() || sig.launches.empty()) fail(number, "the signature has no name or no grid");
    for (size_t i = sig.num_visible_params(); i < sig.params.size(); ++i)
      if (!sig.params[i].workspace) fail(number, "a workspace comes before another parameter");
    return sig;
  }

 private:
  [[noreturn]] void fail(int line, const std::string& why) {
    throw_user_error({}, str_cat("malformed kernel signature (line ", line, "): ", why));
  }
  LaunchSpec& current_launch(KernelSignature& sig, const std::string& kind) {
    if (sig.launches.empty()) fail(line_, str_cat("a '", kind, "' record before any 'grid' record"));
    return sig.launches.back();
  }
  std::string word() {
    std::string w;
    if (!(in_ >> w)) fail(line_, "the line ends early");
    return w;
  }
  int64_t integer() {
    std::string w = word();
    try {
      size_t used = 0;
      int64_t v = std::stoll(w, &used);
      if (used == w.size()) return v;
    } catch (const std::exception&) {
    }
    fail(line_, str_cat("expected an integer, got '", w, "'"));
  }
  DataType dtype() {
    std::string w = word();
    auto t = DataType::parse(w);
    if (!t) fail(line_, str_cat("unknown dtype '", w, "'"));
    return *t;
  }
  Var var() {
    int64_t id = integer();
    if (id < 0 || id >= int64_t(vars_.size())) fail(line_, str_cat("unknown variable id ", id));
    return vars_[id];
  }
  std::vector<Expr> exprs() {
    int64_t n = integer();
    std::vector<Expr> out;
    for (int64_t i = 0; i < n; ++i) out.push_back(expr());
    return out;
  }
  Expr expr() {
    std::string tag = word();
    if (tag == "I") {
      DataType t = dtype();
      return make_node<Expr, IntImmNode>(t, integer());
    }
    if (tag == "V") return var();
    if (tag == "B") {
      std::string op = word();
      auto o = binary_op_from_ident(op);
      if (!o) fail(line_, str_cat("unknown operator '", op, "'"));
      DataType t = dtype();
      Expr a = expr();
      Expr b = expr();
      return make_node<Expr, BinaryNode>(t, *o, a, b);
    }
    if (tag == "C") {
      DataType t = dtype();
      return make_node<Expr, CastNode>(t, expr());
    }
    if (tag == "S") {
      DataType t = dtype();
      Expr c = expr();
      Expr x = expr();
      Expr y = expr();
      return make_node<Expr, SelectNode>(t, c, x, y);
    }
    fail(line_, str_cat("unknown expression tag '", tag, "'"));
  }

  std::vector<Var> vars_;
  std::istringstream in_;
  int line_ = 0;
};

}  // namespace

std::string TmaMapSpec::str() const {
  std::ostringstream os;
  os << "tma " << param << " " << dtype.name() << " " << box.size() << " ";
  for (size_t d = 0; d < box.size(); ++d) os << (d ? "," : "") << box[d];
  os << " " << swizzle_bytes << " " << dynamic_dims;
  return os.str();
}

TmaMapSpec TmaMapSpec::parse(const std::string& line) {
  auto fail = [&](const std::string& why) -> TmaMapSpec {
    throw_user_error({}, str_cat("malformed TMA map record '", line, "': ", why));
  };
  std::istringstream in(line);
  std::string tag, dtype, box;
  TmaMapSpec m;
  int64_t rank = 0;
  if (!(in >> tag >> m.param >> dtype >> rank >> box >> m.swizzle_bytes >> m.dynamic_dims) || tag != "tma")
    return fail("expected 'tma <param> <dtype> <rank> <box,...> <swizzle> <dynamic>'");
  auto t = DataType::parse(dtype);
  if (!t) return fail(str_cat("unknown dtype '", dtype, "'"));
  m.dtype = *t;
  std::istringstream parts(box);
  for (std::string v; std::getline(parts, v, ',');) {
    size_t used = 0;
    try {
      m.box.push_back(std::stoll(v, &used));
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != v.size()) return fail(str_cat("box entry '", v, "' is not an integer"));
  }
  if (rank < 1 || rank > 5 || int64_t(m.box.size()) != rank)
    return fail(str_cat("rank ", rank, " with ", m.box.size(), " box entries (a map has rank 1 to 5)"));
  if (m.swizzle_bytes != 0 && m.swizzle_bytes != 32 && m.swizzle_bytes != 64 && m.swizzle_bytes != 128)
    return fail(str_cat("swizzle ", m.swizzle_bytes, " is not 0, 32, 64 or 128"));
  return m;
}

std::string KernelSignature::serialize() const {
  return SignatureWriter().write(*this);
}

KernelSignature KernelSignature::parse(const std::string& text) {
  return SignatureReader().read(text);
}

}  // namespace tl
