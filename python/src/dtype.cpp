// Binds DataType. The Python-side dtype class (tilelang.language.dtypes) wraps it.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "ir/dtype.h"

namespace nb = nanobind;
using tl::DataType;

void bind_dtype(nb::module_& m) {
  nb::class_<DataType>(m, "DataType")
      .def_static("from_string", &DataType::from_string)
      .def_prop_ro("name", &DataType::name)
      .def_prop_ro("bits", &DataType::bits)
      .def_prop_ro("bytes", &DataType::bytes)
      .def_prop_ro("lanes", &DataType::lanes)
      .def_prop_ro("numpy_name", &DataType::numpy_name)
      .def_prop_ro("torch_name", &DataType::torch_name)
      .def("with_lanes", &DataType::with_lanes)
      .def("__eq__",
           [](const DataType& a, nb::handle b) {
             if (nb::isinstance<DataType>(b)) return a == nb::cast<DataType>(b);
             if (nb::isinstance<nb::str>(b)) {
               auto t = DataType::parse(nb::cast<std::string>(b));
               return t && *t == a;
             }
             return false;
           })
      .def("__hash__", [](const DataType& a) { return std::hash<std::string>()(a.name()); })
      .def("__repr__", &DataType::name)
      .def("__str__", &DataType::name);
  m.def("scalar_type_names", [] {
    std::vector<std::string> names;
    for (int i = 0; i < tl::num_scalar_types(); ++i) names.push_back(DataType(tl::ScalarType(i)).name());
    return names;
  });
}
