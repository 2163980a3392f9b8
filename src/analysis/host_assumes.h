// The T.assume conditions a launch checks on the host (KernelSignature::assumes,
// src/driver/signature_from.cpp: a call whose arguments break one is refused before
// the kernel runs), and what the compiler may rely on because of that check.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "ir/ir.h"

namespace tl {

// The vars a launch knows before the kernel runs: scalar parameters, then the symbolic
// sizes and strides of tensor parameters, each once in that order.
std::vector<Var> host_vars(const PrimFunc& f);

// The T.assume conditions on the straight-line path of `body` that read only `host`
// vars (scalar parameters, symbolic dims) through integer arithmetic the signature
// can carry; a condition under a branch or loop may not apply to every call.
std::vector<Expr> host_assumes(const Stmt& body, const std::set<const VarNode*>& host);

// For each host var v of `f` with a host-checked `T.assume(v % m == 0)` (m > 1, a
// constant), the largest such m: every launch has v a multiple of it.
std::map<const VarNode*, int64_t> host_multiples(const PrimFunc& f);

}  // namespace tl
