// Conversions shared by the binding files: Python numbers to IR constants, and
// UserError to the Python exception users see.
#pragma once

#include <nanobind/nanobind.h>

#include "ir/ir.h"

namespace nb = nanobind;

// An Expr from an Expr, bool, int or float (ints that overflow int32 become int64).
tl::Expr to_expr(nb::handle h);
// Like to_expr, but a Python constant takes `like`'s dtype when that keeps its kind.
tl::Expr to_expr_like(nb::handle h, const tl::Expr& like);
std::vector<tl::Expr> to_exprs(const nb::sequence& s);
// A Python int as int64 (a user error naming `what` when it is not an int or does not
// fit), never a raw C++ cast exception.
int64_t to_int64(nb::handle h, const char* what);
tl::DataType to_dtype(nb::handle h);  // DataType or string
