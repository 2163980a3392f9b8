// Structural equality and hashing of IR trees, up to consistent renaming of the
// variables and buffers the trees bind. Passes use them to detect no-op rewrites
// and common subexpressions; the hash is deterministic across processes so it can
// feed content-addressed keys.
//
// Rules, shared by equality and hash:
//  - nodes match by kind, dtype and every field; source spans are ignored;
//  - a Var bound by For, Let, LetStmt, KernelLaunch (block and thread vars) or by
//    being a function parameter matches the Var bound at the same place on the
//    other side; the symbolic shape/stride vars of parameter buffers are bound by
//    the parameter that first mentions them;
//  - a Buffer bound by a function parameter or an Allocate matches the buffer
//    bound at the same place, provided dtype, scope, shape, strides and layout
//    match (buffer and parameter names are not compared);
//  - a free Var or Buffer (used but bound nowhere in the compared trees) matches
//    only itself. Its hash uses its name and dtype, never its address;
//  - layouts are compared by identity (Layout has no structural equality yet) and
//    hashed only by presence.
#pragma once

#include <cstdint>

#include "ir/ir.h"

namespace tl {

bool structural_equal(const Expr& a, const Expr& b);
bool structural_equal(const Stmt& a, const Stmt& b);
bool structural_equal(const PrimFunc& a, const PrimFunc& b);

// Equal trees hash equal; the value depends neither on addresses nor on the names
// of bound variables.
uint64_t structural_hash(const Expr& e);
uint64_t structural_hash(const Stmt& s);
uint64_t structural_hash(const PrimFunc& f);

}  // namespace tl
