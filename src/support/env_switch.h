// TileLang's on/off environment variables (TILELANG_PASS_PROFILE,
// TILELANG_PRINT_ON_COMPILATION, TILELANG_TIME_PASSES ...) read by one rule, the rule
// of the Python package's tilelang.env.env_flag, so that a typo never turns a switch on
// or off unnoticed.
#pragma once

namespace tl {

enum class EnvSwitch { Unset, Off, On };

// The state of the variable `name`: Unset when it is not set; Off for "0", "false",
// "no", "off" or an empty value; On for "1", "true", "yes", "on" (any case, blanks
// around the word ignored). Any other value is a UserError naming the variable, the
// value and the words accepted.
EnvSwitch env_switch(const char* name);

}  // namespace tl
