// KernelCaller: the whole call path of a JITKernel in one C++ call.
#pragma once

#include <nanobind/nanobind.h>

void bind_kernel_caller(nanobind::module_& m);
