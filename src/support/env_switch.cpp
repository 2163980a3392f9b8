// The one reader of TileLang's on/off environment variables (env_switch.h).
#include "support/env_switch.h"

#include <cctype>
#include <cstdlib>
#include <string>

#include "support/error.h"

namespace tl {

EnvSwitch env_switch(const char* name) {
  const char* value = std::getenv(name);
  if (!value) return EnvSwitch::Unset;
  std::string word(value);
  size_t first = word.find_first_not_of(" \t\n\r"), last = word.find_last_not_of(" \t\n\r");
  word = first == std::string::npos ? "" : word.substr(first, last - first + 1);
  for (char& c : word) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (word.empty() || word == "0" || word == "false" || word == "no" || word == "off") return EnvSwitch::Off;
  if (word == "1" || word == "true" || word == "yes" || word == "on") return EnvSwitch::On;
  throw_user_error({}, str_cat(name, " must be 1, true, yes or on (or 0, false, no, off, empty), got '", value, "'"));
}

}  // namespace tl
