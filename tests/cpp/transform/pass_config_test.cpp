// Pass configs are checked and read in C++ (transform/pass_config.h), whoever calls.
#include <gtest/gtest.h>

#include "support/error.h"
#include "transform/pass_config.h"

namespace tl {
namespace {

std::string error_of(const Attrs& configs) {
  try {
    check_pass_configs(configs);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(PassConfig, UnknownKeysAreRefusedWithTheClosestKnownOne) {
  EXPECT_NE(error_of({{"tl.disable_wgma", int64_t(1)}})
                .find("unknown pass config key 'tl.disable_wgma' (did you mean 'tl.disable_wgmma'?)"),
            std::string::npos);
  EXPECT_NE(error_of({{"zzzz", int64_t(1)}}).find("unknown pass config key 'zzzz';"), std::string::npos);
}

TEST(PassConfig, ValuesOfTheWrongKindAreRefused) {
  EXPECT_NE(error_of({{"tl.disable_tma_lower", std::string("no")}})
                .find("pass config 'tl.disable_tma_lower' must be a bool (True/False, or 1/0), got str 'no'"),
            std::string::npos);
  EXPECT_NE(error_of({{"tl.disable_tma_lower", int64_t(2)}}).find("got int 2"), std::string::npos);
  EXPECT_NE(error_of({{"tl.dynamic_alignment", 1.5}}).find("must be an int, got float 1.5"), std::string::npos);
  EXPECT_NE(error_of({{"tl.config_index_bitwidth", int64_t(16)}}).find("must be 32 or 64"), std::string::npos);
}

TEST(PassConfig, KnownKeysAndTheTirxSpellingPass) {
  EXPECT_EQ(error_of({{"tl.disable_wgmma", int64_t(1)},
                      {"tirx.disable_vectorize", std::string("True")},
                      {"tl.pass_profile_threshold_ms", 2.5},
                      {"tl.device_compile_flags", std::string("-O3")}}),
            "");
}

TEST(PassConfig, ParseReadsTheSwitchesWithTheirDefaults) {
  PassConfig d = PassConfig::parse({});
  EXPECT_TRUE(d.wgmma && d.tma_lower && d.warp_specialized && d.tma_multicast && d.tma_store &&
              d.stage_fragment_stores && d.safe_memory_legalize && d.shared_memory_reuse);
  EXPECT_FALSE(d.fast_math);
  PassConfig c = PassConfig::parse({{"tl.disable_wgmma", int64_t(1)},
                                    {"tl.enable_tma_store", std::string("false")},
                                    {"tl.enable_fast_math", int64_t(1)}});
  EXPECT_FALSE(c.wgmma);
  EXPECT_FALSE(c.tma_store);
  EXPECT_TRUE(c.fast_math);
  EXPECT_FALSE(
      PassConfig::parse({{"tl.enable_fast_math", int64_t(1)}, {"tl.disable_fast_math", int64_t(1)}}).fast_math);
  EXPECT_THROW(PassConfig::parse({{"tl.nope", int64_t(1)}}), UserError);
}

}  // namespace
}  // namespace tl
