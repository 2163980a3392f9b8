// The lowering pipeline: the list of passes for each target, in order.
#pragma once

#include <functional>
#include <string>

#include "ir/ir.h"
#include "target/target.h"
#include "transform/pass_config.h"

namespace tl {

// Sees the function after each named step of lower(): "input" first, then every pass
// in order (tests/cpp/transform/pass_golden_test.cpp pins each pass's output with it).
using PassObserver = std::function<void(const std::string& step, const PrimFunc& after)>;

// Runs every pass for `target` on `input`. Each step is named, and can be dumped
// (TILELANG_DUMP_IR=1 or =<dir>), timed (tl.pass_profile, TILELANG_PASS_PROFILE with its
// threshold, TILELANG_TIME_PASSES=1) and observed.
// The pass configs are checked first (transform/pass_config.h): an unknown key or a
// value of the wrong kind is a user error.
PrimFunc lower(const PrimFunc& input, const Target& target, const Attrs& pass_configs = {},
               const PassObserver& observe = {});
PrimFunc lower(const PrimFunc& input, const Target& target, const PassConfig& configs,
               const PassObserver& observe = {});

}  // namespace tl
