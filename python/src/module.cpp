// The tilelang._C extension: one init function per concept, defined in the other
// files of this folder.
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_dtype(nb::module_& m);

NB_MODULE(_C, m) {
  m.doc() = "tilelang-cpp compiler core";
  bind_dtype(m);
}
