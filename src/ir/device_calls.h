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
#include <type_traits>
#include <unordered_map>
#include <utility>
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

// A template argument of a device call's name: a number, or a name (a type, a functor,
// a function) as the call prints it.
struct TemplateArg {
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  TemplateArg(I v) : text(std::to_string(v)) {}       // NOLINT(google-explicit-constructor)
  TemplateArg(std::string s) : text(std::move(s)) {}  // NOLINT(google-explicit-constructor)
  TemplateArg(const char* s) : text(s) {}             // NOLINT(google-explicit-constructor)
  std::string text;
};

// `fn<a, b, ...>`: the name of a device call with template arguments.
inline std::string device_call_name(const char* fn, const std::vector<TemplateArg>& args) {
  std::string s = std::string(fn) + "<";
  for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + args[i].text;
  return s + ">";
}

// The template arguments of a device call's name, as device_call_name wrote them
// (`tl::warp_allreduce<tl::SumOp, 16>`: {"tl::SumOp", "16"}; a nested `<...>` stays in
// its argument); empty where the name has none.
inline std::vector<std::string> device_call_template_args(std::string_view callee) {
  std::vector<std::string> args;
  size_t lt = callee.find('<');
  if (lt == std::string_view::npos || callee.back() != '>') return args;
  std::string_view inner = callee.substr(lt + 1, callee.size() - lt - 2);
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= inner.size(); ++i) {
    char ch = i < inner.size() ? inner[i] : ',';
    depth += ch == '<' ? 1 : ch == '>' ? -1 : 0;
    if (ch != ',' || depth != 0) continue;
    std::string_view a = inner.substr(start, i - start);
    while (!a.empty() && a.front() == ' ') a.remove_prefix(1);
    while (!a.empty() && a.back() == ' ') a.remove_suffix(1);
    if (!a.empty() || i < inner.size()) args.emplace_back(a);
    start = i + 1;
  }
  return args;
}

// The template argument at `index` of a device call's name as a number (`tl::atomic_add<5>`
// at 0: 5); nullopt where it is absent or not a plain decimal number.
inline std::optional<int64_t> device_call_int_arg(std::string_view callee, size_t index) {
  std::vector<std::string> args = device_call_template_args(callee);
  if (index >= args.size()) return std::nullopt;
  const std::string& a = args[index];
  if (a.empty() || a.size() > 18 || a.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(a);
}

// The one template argument of a device call's name, a number (`tl::atomic_add<5>`: 5);
// nullopt where there is none, or more, or it is not a plain number.
inline std::optional<int64_t> device_call_int_arg(std::string_view callee) {
  if (device_call_template_args(callee).size() != 1) return std::nullopt;
  return device_call_int_arg(callee, 0);
}

}  // namespace tl
