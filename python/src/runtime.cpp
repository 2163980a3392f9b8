// Binds compilation and kernel calls (filled in with the CPU runtime).
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_runtime(nb::module_& m) {}
