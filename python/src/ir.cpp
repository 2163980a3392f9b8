// Binds the IR handles (Expr, Var, Buffer, PrimFunc) with Python operators, so
// that kernel code like `A[i, k] * 2 + 1` builds IR directly in C++.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <climits>

#include "analysis/kernel_cost.h"
#include "arith/simplify.h"
#include "convert.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "ir/visitor.h"
#include "runtime/signature.h"
#include "transform/simplify_pass.h"

using namespace tl;

Expr to_expr(nb::handle h) {
  if (nb::isinstance<Expr>(h)) return nb::cast<Expr>(h);
  if (PyBool_Check(h.ptr())) return bool_imm(h.ptr() == Py_True);
  if (PyLong_Check(h.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow) throw nb::value_error("integer constant does not fit in 64 bits");
    if (v > INT32_MAX || v < INT32_MIN) return int_imm(v, dtype::Int64);
    return int_imm(v, dtype::Int32);
  }
  if (PyFloat_Check(h.ptr())) return float_imm(PyFloat_AsDouble(h.ptr()), dtype::Float32);
  if (nb::hasattr(h, "__tl_expr__")) return nb::cast<Expr>(h.attr("__tl_expr__")());
  throw nb::type_error(
      ("expected a TileLang expression or a Python number, got " + std::string(nb::str(nb::handle(h.type())).c_str()))
          .c_str());
}

Expr to_expr_like(nb::handle h, const Expr& like) {
  Expr e = to_expr(h);
  (void)like;  // promote_types gives constants the other operand's type
  return e;
}

int64_t to_int64(nb::handle h, const char* what) {
  if (!PyLong_Check(h.ptr()))
    throw_user_error({}, str_cat(what, " must be an integer, got ", nb::str(nb::handle(h.type())).c_str()));
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
  if (overflow) throw_user_error({}, str_cat(what, " ", nb::str(h).c_str(), " does not fit in 64 bits"));
  return v;
}

std::vector<Expr> to_exprs(const nb::sequence& s) {
  std::vector<Expr> out;
  for (nb::handle h : s) out.push_back(to_expr(h));
  return out;
}

DataType to_dtype(nb::handle h) {
  if (nb::isinstance<DataType>(h)) return nb::cast<DataType>(h);
  if (nb::isinstance<nb::str>(h)) return DataType::from_string(nb::cast<std::string>(h));
  if (nb::hasattr(h, "__tl_dtype__")) return nb::cast<DataType>(h.attr("__tl_dtype__")());
  throw nb::type_error(("expected a dtype, got " + std::string(nb::str(nb::handle(h.type())).c_str())).c_str());
}

namespace {

Expr bin(BinaryOp op, nb::handle a, nb::handle b) {
  return binary(op, to_expr(a), to_expr(b));
}

// A literal of dtype `t` from a Python bool, int or float. An integer is checked against
// the range of an integer dtype (a uint64 above INT64_MAX is kept by its bits); any
// other value is a user error, never a raw C++ exception.
Expr checked_const(nb::handle value, DataType t) {
  PyObject* v = value.ptr();
  bool is_int = PyLong_Check(v) && !PyBool_Check(v);
  if (!PyBool_Check(v) && !is_int && !PyFloat_Check(v))
    throw_user_error({}, str_cat("a ", t.name(), " literal needs a Python bool, int or float, got ",
                                 nb::str(nb::handle(value.type())).c_str()));
  if (PyFloat_Check(v) || t.is_float()) {
    double d = PyFloat_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      throw_user_error({},
                       str_cat("the integer ", nb::str(value).c_str(), " is too large for a ", t.name(), " literal"));
    }
    return make_const(t, d);
  }
  if (t.is_bool()) return bool_imm(PyObject_IsTrue(v) == 1);
  int overflow = 0;
  long long i = PyLong_AsLongLongAndOverflow(v, &overflow);
  if (overflow > 0 && t == dtype::UInt64) {
    unsigned long long u = PyLong_AsUnsignedLongLong(v);
    if (!PyErr_Occurred()) return int_imm(int64_t(u), t);
    PyErr_Clear();
  }
  if (overflow) throw_user_error({}, str_cat("the integer ", nb::str(value).c_str(), " does not fit in ", t.name()));
  if (t.is_int() && t.bits() < 64) {
    int64_t hi = (int64_t(1) << (t.bits() - 1)) - 1;
    if (i > hi || i < -hi - 1) throw_user_error({}, str_cat("the integer ", i, " does not fit in ", t.name()));
  } else if (t.is_uint()) {
    bool fits = i >= 0 && (t.bits() >= 64 || i <= int64_t((uint64_t(1) << t.bits()) - 1));
    if (!fits) throw_user_error({}, str_cat("the integer ", i, " does not fit in ", t.name()));
  }
  return int_imm(i, t);
}

bool expr_bool(const Expr& e) {
  if (auto v = as_const_int(e)) return *v != 0;
  // `a == b` of one and the same integer expression (two buffers sharing a T.dynamic
  // size: `A.shape[0] == B.shape[0]`) is true whatever its value, as in TVM.
  if (auto* b = e.as<BinaryNode>();
      b && (b->op == BinaryOp::EQ || b->op == BinaryOp::NE) && b->a.same_as(b->b) && !b->a.dtype().is_float())
    return b->op == BinaryOp::EQ;
  throw nb::type_error(("the symbolic condition `" + to_string(e) +
                        "` has no Python truth value; use it in an `if`/`while` of the kernel body, "
                        "T.if_then_else, or T.all/T.any")
                           .c_str());
}

}  // namespace

void bind_ir(nb::module_& m) {
  nb::class_<SourceSpan>(m, "SourceSpan")
      .def("__init__",
           [](SourceSpan* s, const std::string& file, int line) {
             new (s) SourceSpan{intern_file(file), line};
           })
      .def_prop_ro("file", [](const SourceSpan& s) { return s.file ? std::string(s.file) : std::string(); })
      .def_ro("line", &SourceSpan::line);

  auto expr = nb::class_<Expr>(m, "Expr");
  expr.def_prop_ro("dtype", &Expr::dtype)
      .def_prop_ro("kind", [](const Expr& e) { return std::string(node_kind_name(e.kind())); })
      .def("__repr__", [](const Expr& e) { return to_string(e); })
      .def("__str__", [](const Expr& e) { return to_string(e); })
      .def("__hash__", [](const Expr& e) { return (size_t)e.get(); })
      .def("__bool__", &expr_bool)
      .def("same_as", [](const Expr& a, const Expr& b) { return a.same_as(b); })
      // A constant's Python value (TVM's IntImm.value / FloatImm.value); None otherwise.
      .def_prop_ro("value",
                   [](const Expr& e) -> nb::object {
                     if (auto* i = e.as<IntImmNode>())
                       return e.dtype() == dtype::Bool ? nb::object(nb::bool_(i->value != 0))
                                                       : nb::object(nb::int_(i->value));
                     if (auto* f = e.as<FloatImmNode>()) return nb::float_(f->value);
                     return nb::none();
                   })
      // Whether evaluating it may read memory or call a function (a load or a call
      // anywhere in it): what a later store could change.
      .def("reads_memory",
           [](const Expr& e) {
             bool found = false;
             for_each_expr(e, [&](const Expr& x) { found = found || x.as<BufferLoadNode>() || x.as<CallNode>(); });
             return found;
           })
      // Whether it loads an element of `b` other than the one at `idx`: the frontend
      // reads a vector's lanes before storing them where a lane reads what another
      // lane's store writes (`A[T.Ramp(i + 1, 1, 2)] = A[T.Ramp(i, 1, 2)]`).
      .def("reads_other_element",
           [](const Expr& e, const Buffer& b, const std::vector<Expr>& idx) {
             bool found = false;
             for_each_expr(e, [&](const Expr& x) {
               auto* l = x.as<BufferLoadNode>();
               if (!l || !l->buffer.same_as(b)) return;
               bool same = l->indices.size() == idx.size();
               for (size_t d = 0; same && d < idx.size(); ++d) same = structural_equal(l->indices[d], idx[d]);
               found = found || !same;
             });
             return found;
           })
      // The operands of a call (empty for other kinds) and the buffer a load reads
      // (None for other kinds): the frontend checks the addresses T.ptx_cp_async gets.
      .def_prop_ro("call_args",
                   [](const Expr& e) {
                     auto* c = e.as<CallNode>();
                     return c ? c->args : std::vector<Expr>{};
                   })
      .def_prop_ro("call_name",
                   [](const Expr& e) -> nb::object {
                     auto* c = e.as<CallNode>();
                     return c ? nb::object(nb::str(intrinsic_name(c->op))) : nb::none();
                   })
      .def_prop_ro("load_buffer",
                   [](const Expr& e) -> nb::object {
                     auto* l = e.as<BufferLoadNode>();
                     return l ? nb::cast(l->buffer) : nb::none();
                   })
      // The operands of a Binary (a, b), Select (cond, true, false) or Cast (value) and
      // a Binary's operator name ("Add", "FloorDiv" ...): tilelang.torch evaluates a
      // kernel's shape expressions on torch's symbolic sizes with them.
      .def_prop_ro("operands",
                   [](const Expr& e) -> std::vector<Expr> {
                     if (auto* b = e.as<BinaryNode>()) return {b->a, b->b};
                     if (auto* s = e.as<SelectNode>()) return {s->cond, s->true_value, s->false_value};
                     if (auto* c = e.as<CastNode>()) return {c->value};
                     return {};
                   })
      .def_prop_ro("binary_op",
                   [](const Expr& e) -> nb::object {
                     auto* b = e.as<BinaryNode>();
                     if (!b) return nb::none();
                     switch (b->op) {
#define TL_BINARY(Ident, sym, is_cmp) \
  case BinaryOp::Ident:               \
    return nb::str(#Ident);
#include "ir/binary_ops.def"
#undef TL_BINARY
                     }
                     return nb::none();
                   })
      .def("const_value",
           [](const Expr& e) -> nb::object {
             if (auto* i = e.as<IntImmNode>())
               return e.dtype().is_bool() ? nb::object(nb::bool_(i->value != 0)) : nb::object(nb::int_(i->value));
             if (auto* f = e.as<FloatImmNode>()) return nb::float_(f->value);
             return nb::none();
           })
      .def("__add__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::Add, a, b); })
      .def("__radd__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::Add, b, a); })
      .def("__sub__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::Sub, a, b); })
      .def("__rsub__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::Sub, b, a); })
      .def("__mul__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::Mul, a, b); })
      .def("__rmul__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::Mul, b, a); })
      .def("__truediv__",
           [](nb::handle a, nb::handle b) {
             Expr x = to_expr(a), y = to_expr(b);
             // Python's `/` is true division: integers divide as floats.
             if (!x.dtype().is_float() && !y.dtype().is_float()) {
               x = cast(dtype::Float32, x);
               y = cast(dtype::Float32, y);
             }
             return div(x, y);
           })
      .def("__rtruediv__",
           [](nb::handle a, nb::handle b) {
             Expr x = to_expr(b), y = to_expr(a);
             if (!x.dtype().is_float() && !y.dtype().is_float()) {
               x = cast(dtype::Float32, x);
               y = cast(dtype::Float32, y);
             }
             return div(x, y);
           })
      .def("__floordiv__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::FloorDiv, a, b); })
      .def("__rfloordiv__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::FloorDiv, b, a); })
      .def("__mod__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::FloorMod, a, b); })
      .def("__rmod__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::FloorMod, b, a); })
      .def("__pow__",
           [](nb::handle a, nb::handle b) {
             return call(Intrinsic::Pow, {to_expr(a), to_expr(b)});
           })
      .def("__rpow__",
           [](nb::handle a, nb::handle b) {
             return call(Intrinsic::Pow, {to_expr(b), to_expr(a)});
           })
      .def("__and__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::BitAnd, a, b); })
      .def("__rand__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::BitAnd, b, a); })
      .def("__or__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::BitOr, a, b); })
      .def("__ror__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::BitOr, b, a); })
      .def("__xor__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::BitXor, a, b); })
      .def("__rxor__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::BitXor, b, a); })
      .def("__lshift__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::Shl, a, b); })
      .def("__rlshift__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::Shl, b, a); })
      .def("__rshift__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::Shr, a, b); })
      .def("__rrshift__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::Shr, b, a); })
      .def("__lt__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::LT, a, b); })
      .def("__le__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::LE, a, b); })
      .def("__gt__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::GT, a, b); })
      .def("__ge__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::GE, a, b); })
      .def("__eq__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::EQ, a, b); })
      .def("__ne__", [](nb::handle a, nb::handle b) { return bin(BinaryOp::NE, a, b); })
      .def("__neg__", [](const Expr& a) { return neg(a); })
      .def("__pos__", [](const Expr& a) { return a; })
      .def("__invert__", [](const Expr& a) { return a.dtype().is_bool() ? logical_not(a) : bit_not(a); })
      .def("__abs__", [](const Expr& a) { return call(Intrinsic::Abs, {a}); })
      .def("astype", [](const Expr& a, nb::handle dt) { return cast(to_dtype(dt), a); })
      .def("__index__", [](const Expr& e) -> int64_t {
        if (auto v = as_const_int(e)) return *v;
        throw nb::type_error(("`" + to_string(e) + "` is symbolic and cannot be used as a Python int").c_str());
      });

  nb::class_<Var, Expr>(m, "Var")
      .def("__init__", [](Var* v, const std::string& name, nb::handle dt) { new (v) Var(name, to_dtype(dt)); })
      .def_prop_ro("name", &Var::name);

  nb::class_<Buffer>(m, "Buffer")
      .def_prop_ro("name", [](const Buffer& b) { return b->name; })
      .def_prop_ro("dtype", [](const Buffer& b) { return b->dtype; })
      .def_prop_ro("shape", [](const Buffer& b) { return b->shape; })
      .def_prop_ro("strides", [](const Buffer& b) { return b->strides; })
      .def_prop_ro("scope", [](const Buffer& b) { return std::string(scope_name(b->scope)); })
      .def_prop_ro("ndim", &Buffer::ndim)
      .def("same_as", &Buffer::same_as)
      .def("__hash__", [](const Buffer& b) { return (size_t)b.get(); })
      .def("__eq__", [](const Buffer& a, const Buffer& b) { return a.same_as(b); });

  nb::class_<BufferRegion>(m, "BufferRegion")
      .def("__init__",
           [](BufferRegion* r, const Buffer& b, const nb::sequence& mins, const nb::sequence& extents) {
             std::vector<Expr> mn = to_exprs(mins), ex = to_exprs(extents);
             if (mn.size() != ex.size() || int(mn.size()) != b.ndim())
               throw nb::value_error("BufferRegion needs one min and one extent per buffer dimension");
             new (r) BufferRegion{b, {}};
             for (size_t i = 0; i < mn.size(); ++i) r->ranges.push_back({mn[i], ex[i]});
           })
      .def_prop_ro("buffer", [](const BufferRegion& r) { return r.buffer; })
      .def_prop_ro("mins",
                   [](const BufferRegion& r) {
                     std::vector<Expr> v;
                     for (auto& x : r.ranges) v.push_back(x.min);
                     return v;
                   })
      .def_prop_ro("extents", &BufferRegion::extents);

  nb::class_<Stmt>(m, "Stmt").def("__repr__", [](const Stmt& s) { return to_string(s); });

  nb::class_<PrimFunc>(m, "PrimFunc")
      .def_prop_ro("name", [](const PrimFunc& f) { return f->name; })
      .def("script", [](const PrimFunc& f) { return to_string(f); })
      .def("simplified", [](const PrimFunc& f) { return simplify_func(f); })
      // The same kernel under another name (T.prim_func's with_attr("global_symbol", ...)).
      .def("renamed",
           [](const PrimFunc& f, const std::string& name) {
             return PrimFunc::make(name, f->params, f->body, f->attrs, f->span);
           })
      .def("without_unused_tensor_params", &drop_unused_tensor_params)
      .def("__repr__", [](const PrimFunc& f) { return to_string(f); })
      // The caller's parameters: T.alloc_global workspaces (the last ones) are left out.
      .def_prop_ro("param_names",
                   [](const PrimFunc& f) {
                     std::vector<std::string> v;
                     for (auto& p : f->params)
                       if (!p.workspace) v.push_back(p.name);
                     return v;
                   })
      .def("param_buffer",
           [](const PrimFunc& f, size_t i) -> std::optional<Buffer> {
             if (i >= f->params.size()) throw nb::index_error();
             if (!f->params[i].is_tensor()) return std::nullopt;
             return f->params[i].buffer;
           })
      // Per parameter (workspaces included): whether the body may write the tensor.
      .def("written_params", &written_params)
      .def("param_var",
           [](const PrimFunc& f, size_t i) -> std::optional<Var> {
             if (i >= f->params.size()) throw nb::index_error();
             if (f->params[i].is_tensor()) return std::nullopt;
             return f->params[i].var;
           })
      // The FLOPs and global bytes of all blocks (analysis/kernel_cost.h), as a dict.
      .def("cost", [](const PrimFunc& f) {
        KernelCost c = kernel_cost(f);
        nb::dict d;
        d["gemm_flops"] = c.gemm_flops;
        d["scalar_flops"] = c.scalar_flops;
        d["global_read_bytes"] = c.global_read_bytes;
        d["global_write_bytes"] = c.global_write_bytes;
        return d;
      });

  // ---- expression functions (the T.* math surface builds on these)
  m.def("const", [](nb::handle value, nb::handle dt) { return checked_const(value, to_dtype(dt)); });
  m.def(
      "cast",
      [](nb::handle v, nb::handle dt, std::optional<SourceSpan> span) {
        return cast(to_dtype(dt), to_expr(v), span.value_or(SourceSpan{}));
      },
      nb::arg("value"), nb::arg("dtype"), nb::arg("span") = nb::none());
  m.def(
      "reinterpret",
      [](nb::handle v, nb::handle dt, std::optional<SourceSpan> span) {
        return reinterpret(to_dtype(dt), to_expr(v), span.value_or(SourceSpan{}));
      },
      nb::arg("value"), nb::arg("dtype"), nb::arg("span") = nb::none());
  m.def("select", [](nb::handle c, nb::handle t, nb::handle f) { return select(to_expr(c), to_expr(t), to_expr(f)); });
  m.def("binary", [](const std::string& op, nb::handle a, nb::handle b) {
#define TL_BINARY(Ident, sym, is_cmp) \
  if (op == #Ident) return bin(BinaryOp::Ident, a, b);
#include "ir/binary_ops.def"
#undef TL_BINARY
    throw nb::value_error(("unknown binary op " + op).c_str());
  });
  m.def("logical_and", [](nb::handle a, nb::handle b) { return logical_and(to_expr(a), to_expr(b)); });
  m.def("logical_or", [](nb::handle a, nb::handle b) { return logical_or(to_expr(a), to_expr(b)); });
  m.def("logical_not", [](nb::handle a) { return logical_not(to_expr(a)); });
  m.def("ceildiv", [](nb::handle a, nb::handle b) { return ceildiv(to_expr(a), to_expr(b)); });
  m.def(
      "call",
      [](const std::string& name, const nb::sequence& args, std::optional<SourceSpan> span) {
        auto op = parse_intrinsic(name);
        if (!op) throw nb::value_error(("unknown intrinsic '" + name + "'").c_str());
        return call(*op, to_exprs(args), span.value_or(SourceSpan{}));
      },
      nb::arg("name"), nb::arg("args"), nb::arg("span") = nb::none());
  m.def("string_imm", [](const std::string& value) { return string_imm(value); });
  m.def("call_extern", [](nb::handle dt, const std::string& name, const nb::sequence& args) {
    return call_extern(to_dtype(dt), name, to_exprs(args));
  });
  m.def("max_value", [](nb::handle dt) { return max_value(to_dtype(dt)); });
  m.def("min_value", [](nb::handle dt) { return min_value(to_dtype(dt)); });
  m.def(
      "infinity", [](nb::handle dt, bool negative) { return infinity(to_dtype(dt), negative); }, nb::arg("dtype"),
      nb::arg("negative") = false);
  m.def(
      "buffer_load",
      [](const Buffer& b, const nb::sequence& idx, std::optional<SourceSpan> span) {
        return buffer_load(b, to_exprs(idx), span.value_or(SourceSpan{}));
      },
      nb::arg("buffer"), nb::arg("indices"), nb::arg("span") = nb::none());
  m.def("is_const", [](const Expr& e) { return e.is<IntImmNode>() || e.is<FloatImmNode>(); });
  // The arithmetic simplifier on one expression (tvm.arith.Analyzer().simplify).
  m.def("simplify_expr", [](const Expr& e) { return simplify(e); });
  // `e` with `var` replaced by `value` (tvm.tir.stmt_functor.substitute of one variable):
  // the frontend compares an address at two values of a loop variable.
  m.def("substitute_var", [](const Expr& e, const Var& var, const Expr& value) -> Expr {
    std::map<const VarNode*, Expr> vmap{{var.node(), value}};
    return substitute(e, vmap);
  });
  // The operator of a Binary node by its name in binary_ops.def ("Add", "Min", ...),
  // None for other nodes: isinstance(e, tvm.tirx.Min) asks it.
  m.def("binary_op_name", [](const Expr& e) -> nb::object {
    auto* b = e.as<BinaryNode>();
    if (!b) return nb::none();
    switch (b->op) {
#define TL_BINARY(Ident, sym, is_cmp) \
  case BinaryOp::Ident:               \
    return nb::str(#Ident);
#include "ir/binary_ops.def"
#undef TL_BINARY
    }
    return nb::none();
  });
}
