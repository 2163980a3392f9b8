// The lowering pipeline: the list of passes for each target, in order.
#pragma once

#include "ir/ir.h"
#include "target/target.h"

namespace tl {

// Runs every pass for `target` on `f`. Each step is named, and can be dumped
// (TILELANG_DUMP_IR=1 or =<dir>) and timed (TILELANG_TIME_PASSES=1).
PrimFunc lower(const PrimFunc& f, const Target& target, const Attrs& pass_configs = {});

// Whether pass config `key` is set to a true value (1, True, "true"); `unset` when absent.
bool config_on(const Attrs& configs, const std::string& key, bool unset = false);

}  // namespace tl
