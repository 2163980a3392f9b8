// The device calls that one part of the compiler writes and another recognizes, from
// the one list in device_calls.def: each is a `constexpr const char*` here
// (kTmaLoadCall ...), device_calls() describes them, and is_device_call() tells a
// call of one (its name, or its name with template arguments) from the rest.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tl {

#define TL_DEVICE_CALL(ident, name, producer, consumers, meaning) inline constexpr const char* ident = name;
#include "ir/device_calls.def"
#undef TL_DEVICE_CALL

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

// `fn<args>`: the name of a templated device call.
inline std::string device_call_name(const char* fn, const std::string& template_args) {
  return std::string(fn) + "<" + template_args + ">";
}

}  // namespace tl
