// The device calls that one part of the compiler writes and another recognizes, from
// the one list in device_calls.def: each is a `constexpr const char*` here
// (kTmaLoadCall ...) and an entry of the enum DeviceCall, device_calls() describes
// them, is_device_call() tells a call of one (its name, or its name with template
// arguments) from the rest, and device_call_of() gives the DeviceCall an extern call
// names, which a code generator maps to its own spelling.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tl {

#define TL_DEVICE_CALL(ident, name, producer, consumers, meaning) inline constexpr const char* ident = name;
#include "ir/device_calls.def"
#undef TL_DEVICE_CALL

enum class DeviceCall : uint8_t {
#define TL_DEVICE_CALL(ident, name, producer, consumers, meaning) ident,
#include "ir/device_calls.def"
#undef TL_DEVICE_CALL
};

struct DeviceCallInfo {
  const char* ident;
  const char* name;
  const char* producer;   // files that write it, comma-separated
  const char* consumers;  // files that recognize it, comma-separated
  const char* meaning;
};

inline const std::vector<DeviceCallInfo>& device_calls() {
  static const std::vector<DeviceCallInfo> calls = {
#define TL_DEVICE_CALL(ident, name, producer, consumers, meaning) {#ident, name, producer, consumers, meaning},
#include "ir/device_calls.def"
#undef TL_DEVICE_CALL
  };
  return calls;
}

// Whether `callee` (an extern call's name) calls `fn`: `fn` itself or `fn<...>`
// (is_device_call("tl::tma_load<2>", kTmaLoadCall); not "tl::tma_load_multicast<2>").
inline bool is_device_call(std::string_view callee, const char* fn) {
  std::string_view f(fn);
  return callee.substr(0, f.size()) == f && (callee.size() == f.size() || callee[f.size()] == '<');
}

// The device call `callee` (an extern call's name, with or without template arguments)
// names; nullopt for any other function.
inline std::optional<DeviceCall> device_call_of(std::string_view callee) {
  static const std::unordered_map<std::string_view, DeviceCall> by_name = [] {
    std::unordered_map<std::string_view, DeviceCall> m;
#define TL_DEVICE_CALL(ident, name, producer, consumers, meaning) m.emplace(name, DeviceCall::ident);
#include "ir/device_calls.def"
#undef TL_DEVICE_CALL
    return m;
  }();
  auto it = by_name.find(callee.substr(0, callee.find('<')));
  if (it == by_name.end()) return std::nullopt;
  return it->second;
}

// The one integer template argument of a device call's name (`tl::atomic_add<5>`: 5);
// nullopt where there is none, or more, or it is not a plain number.
inline std::optional<int64_t> device_call_int_arg(std::string_view callee) {
  size_t lt = callee.find('<');
  if (lt == std::string_view::npos || callee.back() != '>') return std::nullopt;
  std::string_view arg = callee.substr(lt + 1, callee.size() - lt - 2);
  if (arg.empty() || arg.size() > 18 || arg.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  int64_t v = 0;
  for (char ch : arg) v = v * 10 + (ch - '0');
  return v;
}

// `fn<args>`: the name of a templated device call.
inline std::string device_call_name(const char* fn, const std::string& template_args) {
  return std::string(fn) + "<" + template_args + ">";
}

}  // namespace tl
