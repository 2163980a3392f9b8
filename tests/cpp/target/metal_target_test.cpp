// Target parsing for Metal: the string and dict forms, the metal4 key, and the
// Metal 4 decision from (macOS version, chip) that detect_metal_keys makes on a Mac.
#include <gtest/gtest.h>

#include "support/error.h"
#include "target/target.h"

namespace tl {
namespace {

TEST(MetalTarget, StringForms) {
  Target t = Target::parse("metal -keys=metal4");
  EXPECT_EQ(t.kind, TargetKind::Metal);
  EXPECT_TRUE(t.has_metal4());
  EXPECT_EQ(t.str(), "metal -keys=metal4");
  Target e = Target::parse("metal -keys=metal4 -emulate");
  EXPECT_TRUE(e.emulated && e.has_metal4());
  EXPECT_EQ(e.str(), "metal -keys=metal4 -emulate");
  // An explicit empty key list turns detection off.
  EXPECT_FALSE(Target::parse("metal -keys=").has_metal4());
  EXPECT_FALSE(Target::parse("cuda -arch=sm_90 -keys=metal4").has_metal4());
}

TEST(MetalTarget, DictForm) {
  Target t = Target::parse(R"({"kind": "metal", "keys": ["metal4"]})");
  EXPECT_EQ(t.str(), "metal -keys=metal4");
  Target e = Target::parse(R"({"kind": "metal", "keys": ["metal4", "gpu"], "emulate": true})");
  EXPECT_TRUE(e.emulated && e.has_metal4() && e.keys.count("gpu"));
  Target c = Target::parse(R"({'kind': 'cuda', 'arch': 'sm_90a'})");
  EXPECT_EQ(c.kind, TargetKind::CUDA);
  EXPECT_EQ(c.arch, "sm_90a");
  try {
    Target::parse(R"({"keys": ["metal4"]})");
    FAIL() << "a dict without a kind must be refused";
  } catch (const UserError& err) {
    EXPECT_NE(std::string(err.what()).find("it has no \"kind\""), std::string::npos) << err.what();
  }
}

TEST(MetalTarget, Metal4NeedsMacOS26AndM5) {
  EXPECT_TRUE(metal4_supported("26.0", "Apple M5"));
  EXPECT_TRUE(metal4_supported("26.1", "Apple M5 Pro"));
  EXPECT_TRUE(metal4_supported("27.0", "Apple M6 Max"));
  EXPECT_FALSE(metal4_supported("15.6", "Apple M5"));
  EXPECT_FALSE(metal4_supported("26.1", "Apple M4 Max"));
  EXPECT_FALSE(metal4_supported("26.1", "Apple M1"));
  EXPECT_FALSE(metal4_supported("", ""));
#ifndef __APPLE__
  EXPECT_TRUE(detect_metal_keys().empty());
  EXPECT_FALSE(Target::parse("metal").has_metal4());
#endif
}

}  // namespace
}  // namespace tl
