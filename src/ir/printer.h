// A printer whose output reads like the TileLang DSL. Variables and buffers that
// share a name get deterministic suffixes (i, i_1, ...) in order of first use, so
// the print of a function is canonical: it serves dumps, tests and cache keys.
#pragma once

#include <string>

#include "ir/ir.h"

namespace tl {

std::string to_string(const Expr& e);
std::string to_string(const Stmt& s);
std::string to_string(const PrimFunc& f);
std::string to_string(const AttrValue& v);

}  // namespace tl
