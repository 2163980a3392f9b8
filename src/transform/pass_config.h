// Pass configs (`tilelang.compile(..., pass_configs={...})`, CompileOptions::pass_configs):
// the one list of keys, with the kind of value each takes, and the typed view of them
// that the pipeline reads. Keys are TileLang's spellings, so existing programs keep
// working; many of TileLang's keys steer passes this compiler does not have and are
// accepted without effect (`used` says which ones act here; docs/guide/debugging.md has
// the table). An unknown key or a value of the wrong kind is a user error, from C++
// and from Python alike (the Python package reads this list).
#pragma once

#include <string>
#include <vector>

#include "ir/node.h"

namespace tl {

enum class PassConfigValue {
  Switch,         // a bool: 0/1 (Python's True/False arrive as 1/0), or "true"/"false"/"1"/"0"
  IndexBitWidth,  // 32 or 64
  Int,
  Number,  // an int or a float
  String,
  Flags,  // a string of compiler flags (Python also takes a list of strings)
  Any,    // whatever the caller gives (tir.add_lower_pass: a Python callable)
};

struct PassConfigKey {
  const char* key;
  PassConfigValue value;
  bool used;  // read by this compiler (the others are accepted for compatibility)
};

// Every key, in TileLang's spelling ("tir." keys are also accepted as "tirx.").
const std::vector<PassConfigKey>& pass_config_keys();

// What a key's value must be, in words ("a bool (True/False, or 1/0)").
const char* expected_value(PassConfigValue v);

// Throws UserError for an unknown key (naming the closest known one) or a value of
// the wrong kind (naming the key, what it takes and what was given).
void check_pass_configs(const Attrs& configs);

// The configs the compiler acts on, checked and read once.
struct PassConfig {
  bool wgmma = true;                      // !tl.disable_wgmma
  bool gemm_sp_wgmma = true;              // tl.gemm_sp_wgmma: T.gemm_sp on wgmma.mma_async.sp (sm_90a)
  bool tma_lower = true;                  // !tl.disable_tma_lower
  bool warp_specialized = true;           // !tl.disable_warp_specialized
  bool tma_multicast = true;              // !tl.disable_tma_multicast
  bool tma_store = true;                  // tl.enable_tma_store (default on)
  bool stage_fragment_stores = true;      // tl.stage_fragment_stores (default on)
  bool safe_memory_legalize = true;       // !tl.disable_safe_memory_legalize
  bool shared_memory_reuse = true;        // !tl.disable_shared_memory_reuse
  bool fast_math = false;                 // tl.enable_fast_math && !tl.disable_fast_math
  bool pass_profile = false;              // tl.pass_profile: print the time of each pass
  double pass_profile_threshold_ms = -1;  // tl.pass_profile_threshold_ms; < 0: not given

  // Checks `configs` (check_pass_configs) and reads the keys above.
  static PassConfig parse(const Attrs& configs);
};

}  // namespace tl
