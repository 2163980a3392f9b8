// ir/device_calls.def is true: every name is distinct, every file it names as a
// producer or consumer of a device call spells that call's constant (or, for the
// frontend's Python files, the name itself), and is_device_call tells a call of one
// name from a call of a longer one.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "ir/device_calls.h"
#include "source_files.h"

namespace tl {
namespace {

using test::names;
using test::source_of;

TEST(DeviceCalls, NamesAreDistinct) {
  std::set<std::string> seen;
  for (const DeviceCallInfo& c : device_calls()) EXPECT_TRUE(seen.insert(c.name).second) << c.name;
}

TEST(DeviceCalls, ProducersAndConsumersUseTheName) {
  for (const DeviceCallInfo& c : device_calls()) {
    for (const char* list : {c.producer, c.consumers}) {
      for (const std::string& file : names(list)) {
        std::string text = source_of(file);
        ASSERT_FALSE(text.empty()) << c.ident << ": no source for '" << file << "'";
        bool python = file.find(".py") != std::string::npos;
        EXPECT_NE(text.find(python ? std::string("\"") + c.name + "\"" : std::string(c.ident)), std::string::npos)
            << file << " is named for " << c.ident << " (" << c.name << ") but does not use it";
      }
    }
  }
}

TEST(DeviceCalls, TemplateArgumentsButNotLongerNames) {
  EXPECT_TRUE(is_device_call("tl::tma_load", kTmaLoadCall));
  EXPECT_TRUE(is_device_call("tl::tma_load<2>", kTmaLoadCall));
  EXPECT_FALSE(is_device_call("tl::tma_load_multicast<2>", kTmaLoadCall));
  EXPECT_TRUE(is_device_call("tl::tma_load_multicast<2>", kTmaLoadMulticastCall));
  EXPECT_FALSE(is_device_call("tl::tma", kTmaLoadCall));
  EXPECT_TRUE(is_device_call("tl::wgmma_wait<0>", kWgmmaWaitCall));
  EXPECT_EQ(device_call_name(kTmaStoreAddCall, {3}), "tl::tma_store_add<3>");
}

TEST(DeviceCalls, TemplateArgumentsAreWrittenAndReadBackByPosition) {
  std::string name = device_call_name(kWarpAllreduceBatchCall, {"tl::MaxOpNan", 16, int64_t(4)});
  EXPECT_EQ(name, "tl::warp_allreduce_batch<tl::MaxOpNan, 16, 4>");
  EXPECT_EQ(device_call_template_args(name), (std::vector<std::string>{"tl::MaxOpNan", "16", "4"}));
  EXPECT_EQ(device_call_int_arg(name, 1), 16);
  EXPECT_EQ(device_call_int_arg(name, 2), 4);
  EXPECT_EQ(device_call_int_arg(name, 0), std::nullopt);  // a name, not a number
  EXPECT_EQ(device_call_int_arg(name, 3), std::nullopt);  // absent
  EXPECT_EQ(device_call_int_arg(name), std::nullopt);     // not the one argument
  EXPECT_EQ(device_call_int_arg("tl::atomic_add<5>"), 5);
  // A nested argument list stays whole; a name without arguments has none.
  EXPECT_EQ(device_call_template_args("tl::f<tl::g<1, 2>, 3>"), (std::vector<std::string>{"tl::g<1, 2>", "3"}));
  EXPECT_TRUE(device_call_template_args(kTmaLoadCall).empty());
  EXPECT_TRUE(device_call_template_args("tl::f<>").empty());
  EXPECT_EQ(device_call_name(kStoreVecCall, {8, "tl::__float22half2_rn"}), "tl::store_vec<8, tl::__float22half2_rn>");
}

}  // namespace
}  // namespace tl
