// TileLang's on/off variables read by one rule (support/env_switch.h): the words of
// tilelang.env.env_flag, any case and blanks around them; anything else is refused
// naming the variable and the value, so a typo never turns a switch on.
#include "support/env_switch.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "support/error.h"

namespace tl {
namespace {

constexpr const char* kName = "TILELANG_ENV_SWITCH_TEST";

EnvSwitch read_as(const char* value) {
  setenv(kName, value, 1);
  EnvSwitch s = env_switch(kName);
  unsetenv(kName);
  return s;
}

TEST(EnvSwitch, UnsetIsUnset) {
  unsetenv(kName);
  EXPECT_EQ(env_switch(kName), EnvSwitch::Unset);
}

TEST(EnvSwitch, TheOffWordsAndEmptyAreOff) {
  for (const char* v : {"0", "false", "off", "no", "", "FALSE", "Off", " no ", "\t0\n"})
    EXPECT_EQ(read_as(v), EnvSwitch::Off) << "'" << v << "'";
}

TEST(EnvSwitch, TheOnWordsAreOn) {
  for (const char* v : {"1", "true", "on", "yes", "TRUE", "On", "Yes", " 1 "})
    EXPECT_EQ(read_as(v), EnvSwitch::On) << "'" << v << "'";
}

TEST(EnvSwitch, AnyOtherValueIsAnErrorNamingTheVariableAndTheValue) {
  for (const char* v : {"2", "yess", "enable", "-1", "o n", "10"}) {
    setenv(kName, v, 1);
    try {
      env_switch(kName);
      ADD_FAILURE() << "'" << v << "' was accepted";
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string(kName) + " must be 1, true, yes or on (or 0, false, no, off, empty), got '" + v + "'");
    }
    unsetenv(kName);
  }
}

}  // namespace
}  // namespace tl
