// Binds FunctionBuilder: the Python frontend turns each construct of a kernel body
// into one of these calls.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "builder/builder.h"
#include "convert.h"

using namespace tl;

namespace {

ForKind parse_for_kind(const std::string& k) {
  if (k == "serial") return ForKind::Serial;
  if (k == "parallel") return ForKind::Parallel;
  if (k == "vectorized") return ForKind::Vectorized;
  if (k == "unroll") return ForKind::Unrolled;
  throw nb::value_error(("unknown loop kind " + k).c_str());
}

AttrValue to_attr(nb::handle h) {
  if (PyBool_Check(h.ptr())) return int64_t(h.ptr() == Py_True);
  if (PyLong_Check(h.ptr())) return to_int64(h, "the attribute value");
  if (PyFloat_Check(h.ptr())) return PyFloat_AsDouble(h.ptr());
  if (nb::isinstance<nb::str>(h)) return nb::cast<std::string>(h);
  if (nb::isinstance<Expr>(h)) return nb::cast<Expr>(h);
  if (nb::isinstance<nb::sequence>(h)) {
    std::vector<int64_t> v;
    for (nb::handle x : nb::cast<nb::sequence>(h)) v.push_back(to_int64(x, "an element of the attribute's list"));
    return v;
  }
  throw nb::type_error(
      ("unsupported attribute value of type " + std::string(nb::str(nb::handle(h.type())).c_str())).c_str());
}

Attrs to_attrs(const nb::dict& d) {
  Attrs a;
  for (auto [k, v] : d) {
    if (v.is_none()) continue;
    a[nb::cast<std::string>(k)] = to_attr(v);
  }
  return a;
}

CopyOperand to_operand(const Buffer& b, const nb::sequence& mins, const std::optional<nb::sequence>& extents) {
  CopyOperand o{b, to_exprs(mins), {}};
  if (extents) o.extents = to_exprs(*extents);
  return o;
}

}  // namespace

void bind_builder(nb::module_& m) {
  nb::class_<KernelVars>(m, "KernelVars").def_ro("blocks", &KernelVars::blocks).def_ro("threads", &KernelVars::threads);

  nb::class_<FunctionBuilder>(m, "FunctionBuilder")
      .def(nb::init<std::string, SourceSpan>(), nb::arg("name"), nb::arg("span"))
      .def("set_span", &FunctionBuilder::set_span)
      .def("set_line",
           [](FunctionBuilder& b, const std::string& file, int line) {
             b.set_span(SourceSpan{intern_file(file), line});
           })
      .def(
          "tensor_param",
          [](FunctionBuilder& b, const std::string& name, const nb::sequence& shape, nb::handle dt,
             std::optional<nb::sequence> strides, bool address) {
            std::vector<Expr> st;
            if (strides) st = to_exprs(*strides);
            return b.tensor_param(name, to_exprs(shape), to_dtype(dt), st, address);
          },
          nb::arg("name"), nb::arg("shape"), nb::arg("dtype"), nb::arg("strides") = nb::none(),
          nb::arg("address") = false)
      .def("workspace", [](FunctionBuilder& b, const std::string& name, const nb::sequence& shape,
                           nb::handle dt) { return b.workspace(name, to_exprs(shape), to_dtype(dt)); })
      .def("scalar_param", [](FunctionBuilder& b, const std::string& name,
                              nb::handle dt) { return b.scalar_param(name, to_dtype(dt)); })
      .def("dynamic_var",
           [](FunctionBuilder& b, const std::string& name, nb::handle dt) { return b.dynamic_var(name, to_dtype(dt)); })
      .def(
          "begin_kernel",
          [](FunctionBuilder& b, const nb::sequence& grid, const std::vector<int64_t>& threads,
             const std::string& prelude, std::vector<int64_t> cluster) {
            return b.begin_kernel(to_exprs(grid), threads, prelude, std::move(cluster));
          },
          nb::arg("grid"), nb::arg("threads"), nb::arg("prelude") = "", nb::arg("cluster") = std::vector<int64_t>{})
      .def("resize_kernel",
           [](FunctionBuilder& b, const nb::sequence& grid, std::vector<int64_t> threads) {
             return b.resize_kernel(to_exprs(grid), std::move(threads));
           })
      .def("end_kernel", &FunctionBuilder::end_kernel)
      .def("order_params", &FunctionBuilder::order_params)
      .def("import_source", &FunctionBuilder::import_source)
      .def("set_attr", [](FunctionBuilder& b, const std::string& key, nb::handle v) { b.set_attr(key, to_attr(v)); })
      .def(
          "begin_for",
          [](FunctionBuilder& b, const std::string& name, nb::handle min, nb::handle extent, const std::string& kind,
             const nb::dict& ann) {
            return b.begin_for(name, to_expr(min), to_expr(extent), parse_for_kind(kind), to_attrs(ann));
          },
          nb::arg("name"), nb::arg("min"), nb::arg("extent"), nb::arg("kind") = "serial",
          nb::arg("annotations") = nb::dict())
      .def("end_for", &FunctionBuilder::end_for)
      .def("begin_if", [](FunctionBuilder& b, nb::handle c) { b.begin_if(to_expr(c)); })
      .def("begin_else", &FunctionBuilder::begin_else)
      .def("end_if", &FunctionBuilder::end_if)
      .def("begin_while", [](FunctionBuilder& b, nb::handle c) { b.begin_while(to_expr(c)); })
      .def("end_while", &FunctionBuilder::end_while)
      .def_prop_ro("in_kernel", &FunctionBuilder::in_kernel)
      .def_prop_ro("loop_depth", &FunctionBuilder::loop_depth)
      .def(
          "alloc",
          [](FunctionBuilder& b, const std::string& name, const nb::sequence& shape, nb::handle dt,
             const std::string& scope, bool in_kernel_frame) {
            return b.alloc(name, to_exprs(shape), to_dtype(dt), parse_scope(scope, b.span()), in_kernel_frame);
          },
          nb::arg("name"), nb::arg("shape"), nb::arg("dtype"), nb::arg("scope"), nb::arg("in_kernel_frame") = false)
      .def("let", [](FunctionBuilder& b, const std::string& name, nb::handle v) { return b.let(name, to_expr(v)); })
      .def("let_var", [](FunctionBuilder& b, const Var& var, nb::handle v) { return b.let_var(var, to_expr(v)); })
      .def("store", [](FunctionBuilder& b, const Buffer& buf, const nb::sequence& idx,
                       nb::handle v) { b.store(buf, to_exprs(idx), to_expr(v)); })
      .def("evaluate", [](FunctionBuilder& b, nb::handle e) { b.evaluate(to_expr(e)); })
      .def("emit_break", &FunctionBuilder::emit_break)
      .def("emit_continue", &FunctionBuilder::emit_continue)
      .def("sync_threads", &FunctionBuilder::sync_threads)
      .def("sync_grid", &FunctionBuilder::sync_grid)
      .def(
          "copy",
          [](FunctionBuilder& b, const Buffer& sb, const nb::sequence& smin, const std::optional<nb::sequence>& sext,
             const Buffer& db, const nb::sequence& dmin, const std::optional<nb::sequence>& dext,
             const nb::dict& attrs) {
            b.copy(to_operand(sb, smin, sext), to_operand(db, dmin, dext), to_attrs(attrs));
          },
          nb::arg("src"), nb::arg("src_mins"), nb::arg("src_extents").none(), nb::arg("dst"), nb::arg("dst_mins"),
          nb::arg("dst_extents").none(), nb::arg("attrs") = nb::dict())
      .def("fill", [](FunctionBuilder& b, const BufferRegion& r, nb::handle v) { b.fill(r, to_expr(v)); })
      .def(
          "gemm",
          [](FunctionBuilder& b, const BufferRegion& a, const BufferRegion& bb, const BufferRegion& c,
             const nb::dict& attrs) { b.gemm(a, bb, c, to_attrs(attrs)); },
          nb::arg("a"), nb::arg("b"), nb::arg("c"), nb::arg("attrs") = nb::dict())
      .def(
          "tile_op",
          [](FunctionBuilder& b, const std::string& name, std::vector<BufferRegion> regions, const nb::sequence& args,
             const nb::dict& attrs) { b.tile_op(name, std::move(regions), to_exprs(args), to_attrs(attrs)); },
          nb::arg("name"), nb::arg("regions"), nb::arg("args") = nb::list(), nb::arg("attrs") = nb::dict())
      .def("finish", &FunctionBuilder::finish);
}
