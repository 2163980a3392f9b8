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
  EXPECT_EQ(device_call_name(kTmaStoreAddCall, "3"), "tl::tma_store_add<3>");
}

}  // namespace
}  // namespace tl
