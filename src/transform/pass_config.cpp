#include "transform/pass_config.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "support/error.h"

namespace tl {
namespace {

using V = PassConfigValue;

// The value written in an error message: strings quoted, as Python's repr would.
std::string shown(const AttrValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return "int " + std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return str_cat("float ", *d);
  if (auto* s = std::get_if<std::string>(&v)) return "str '" + *s + "'";
  if (std::holds_alternative<std::vector<int64_t>>(v)) return "a list of ints";
  return "an expression";
}

bool fits(V kind, const AttrValue& v) {
  const int64_t* i = std::get_if<int64_t>(&v);
  const std::string* s = std::get_if<std::string>(&v);
  switch (kind) {
    case V::Switch:
      return (i && (*i == 0 || *i == 1)) ||
             (s && (*s == "0" || *s == "1" || *s == "true" || *s == "false" || *s == "True" || *s == "False"));
    case V::IndexBitWidth:
      return i && (*i == 32 || *i == 64);
    case V::Int:
      return i != nullptr;
    case V::Number:
      return i || std::holds_alternative<double>(v);
    case V::String:
    case V::Flags:
      return s != nullptr;
    case V::Any:
      return true;
  }
  return false;
}

// Levenshtein distance, for "did you mean".
size_t distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The key as the table spells it ("tirx.x" is "tir.x"), or null when unknown.
const PassConfigKey* find_key(const std::string& key) {
  std::string spelled = key.rfind("tirx.", 0) == 0 ? "tir." + key.substr(5) : key;
  for (const PassConfigKey& k : pass_config_keys())
    if (spelled == k.key) return &k;
  return nullptr;
}

bool switch_on(const Attrs& configs, const char* key, bool unset) {
  auto it = configs.find(key);
  if (it == configs.end()) return unset;
  if (auto* i = std::get_if<int64_t>(&it->second)) return *i != 0;
  auto* s = std::get_if<std::string>(&it->second);
  return s && (*s == "1" || *s == "true" || *s == "True");
}

}  // namespace

const std::vector<PassConfigKey>& pass_config_keys() {
  static const std::vector<PassConfigKey> keys = {
      // Read by this compiler.
      {"tl.disable_wgmma", V::Switch, true},
      {"tl.gemm_sp_wgmma", V::Switch, true},
      {"tl.disable_tma_lower", V::Switch, true},
      {"tl.disable_warp_specialized", V::Switch, true},
      {"tl.disable_tma_multicast", V::Switch, true},
      {"tl.enable_tma_store", V::Switch, true},
      {"tl.stage_fragment_stores", V::Switch, true},
      {"tl.disable_safe_memory_legalize", V::Switch, true},
      {"tl.disable_shared_memory_reuse", V::Switch, true},
      {"tl.enable_fast_math", V::Switch, true},
      {"tl.disable_fast_math", V::Switch, true},
      {"tl.pass_profile", V::Switch, true},
      {"tl.pass_profile_threshold_ms", V::Number, true},
      // TileLang's, accepted without effect here.
      {"tl.Simplify", V::Switch, false},
      {"tl.config_index_bitwidth", V::IndexBitWidth, false},
      {"tl.disable_vectorize_256", V::Switch, false},
      {"tl.debug_merge_shared_memory_allocations", V::Switch, false},
      {"tl.enable_aggressive_shared_memory_merge", V::Switch, false},
      {"tl.disable_shuffle_elect", V::Switch, false},
      {"tl.disable_thread_storage_sync", V::Switch, false},
      {"tl.disable_dynamic_tail_split", V::Switch, false},
      {"tl.dynamic_alignment", V::Int, false},
      {"tl.ptxas_register_usage_level", V::Int, false},
      {"tl.enable_ptxas_verbose_output", V::Switch, false},
      {"tl.device_compile_flags", V::Flags, false},
      {"tl.enable_dump_ir", V::Switch, false},
      {"tl.dump_ir_dir", V::String, false},
      {"tl.layout_visualization_enable", V::Switch, false},
      {"tl.layout_visualization_formats", V::String, false},
      {"tl.storage_rewrite_detect_inplace", V::Switch, false},
      {"tl.force_let_inline", V::Switch, false},
      {"tl.disable_out_of_bound_warning", V::Switch, false},
      {"tir.enable_equiv_terms_in_cse_tir", V::Switch, false},
      {"tir.disable_cse_tir", V::Switch, false},
      {"tir.Simplify", V::Switch, false},
      {"tir.disable_storage_rewrite", V::Switch, false},
      {"tir.disable_vectorize", V::Switch, false},
      {"tir.use_async_copy", V::Switch, false},
      {"tir.enable_debug", V::Switch, false},
      {"tir.merge_static_smem", V::Switch, false},
      {"tir.noalias", V::Switch, false},
      {"cuda.kernels_output_dir", V::String, false},
      // Keys of later TileLang releases.
      {"tl.disable_buffer_init_check", V::Switch, false},
      {"tl.disable_data_race_check", V::Switch, false},
      {"tl.disable_prelower_semantic_check", V::Switch, false},
      {"tl.enable_auto_warp_specialization", V::Switch, false},
      {"tl.emit_line_directives", V::Switch, false},
      {"tl.enable_reducer_plan_verbose", V::Switch, false},
      {"tl.layout_cost_model", V::String, false},
      {"tl.reducer_force_baseline", V::Switch, false},
      {"tl.enable_fp32x2_reduction", V::Switch, false},
      {"tl.enable_async_copy", V::Switch, false},
      {"tl.enable_lower_ldgstg", V::Switch, false},
      {"tl.enable_lower_ldgstg_predicated", V::Switch, false},
      {"tl.enable_vectorize_planner_verbose", V::Switch, false},
      {"tl.disable_loop_unswitching", V::Switch, false},
      {"tl.loop_unswitching_allow_non_trivial_else", V::Switch, false},
      {"tl.if_stmt_binding_inline_replayable_binds", V::Switch, false},
      {"tl.ast_print_enable", V::Switch, false},
      {"tl.dump_ir_path", V::String, false},
      {"tir.add_lower_pass", V::Any, false},
  };
  return keys;
}

const char* expected_value(PassConfigValue v) {
  switch (v) {
    case V::Switch:
      return "a bool (True/False, or 1/0)";
    case V::IndexBitWidth:
      return "32 or 64";
    case V::Int:
      return "an int";
    case V::Number:
      return "a number";
    case V::String:
      return "a str";
    case V::Flags:
      return "a str or a list of str";
    case V::Any:
      return "any value";
  }
  return "";
}

void check_pass_configs(const Attrs& configs) {
  for (const auto& [key, value] : configs) {
    const PassConfigKey* k = find_key(key);
    if (!k) {
      const char* best = nullptr;
      size_t best_d = 0;
      for (const PassConfigKey& c : pass_config_keys()) {
        size_t d = distance(key, c.key);
        if (!best || d < best_d) best = c.key, best_d = d;
      }
      std::string hint = best && best_d <= std::max<size_t>(3, key.size() / 3)
                             ? str_cat(" (did you mean '", best, "'?)")
                             : std::string();
      throw_user_error(
          {}, str_cat("unknown pass config key '", key, "'", hint,
                      "; tilelang.PassConfigKey and docs/guide/debugging.md (\"Pass configs\") list the known keys"));
    }
    if (!fits(k->value, value))
      throw_user_error({},
                       str_cat("pass config '", key, "' must be ", expected_value(k->value), ", got ", shown(value)));
  }
}

PassConfig PassConfig::parse(const Attrs& configs) {
  check_pass_configs(configs);
  PassConfig c;
  c.wgmma = !switch_on(configs, "tl.disable_wgmma", false);
  c.gemm_sp_wgmma = switch_on(configs, "tl.gemm_sp_wgmma", true);
  c.tma_lower = !switch_on(configs, "tl.disable_tma_lower", false);
  c.warp_specialized = !switch_on(configs, "tl.disable_warp_specialized", false);
  c.tma_multicast = !switch_on(configs, "tl.disable_tma_multicast", false);
  c.tma_store = switch_on(configs, "tl.enable_tma_store", true);
  c.stage_fragment_stores = switch_on(configs, "tl.stage_fragment_stores", true);
  c.safe_memory_legalize = !switch_on(configs, "tl.disable_safe_memory_legalize", false);
  c.shared_memory_reuse = !switch_on(configs, "tl.disable_shared_memory_reuse", false);
  c.fast_math = switch_on(configs, "tl.enable_fast_math", false) && !switch_on(configs, "tl.disable_fast_math", false);
  c.pass_profile = switch_on(configs, "tl.pass_profile", false);
  if (auto it = configs.find("tl.pass_profile_threshold_ms"); it != configs.end()) {
    const int64_t* i = std::get_if<int64_t>(&it->second);
    double ms = i ? double(*i) : std::get<double>(it->second);
    if (!(ms >= 0) || !std::isfinite(ms))
      throw_user_error({}, str_cat("pass config 'tl.pass_profile_threshold_ms' must be a finite non-negative number "
                                   "of milliseconds, got ",
                                   shown(it->second)));
    c.pass_profile_threshold_ms = ms;
  }
  return c;
}

}  // namespace tl
