// The line-anchored rewrite of MSL for the emulator (see metal_emu_source.h).
#include "driver/metal_emu_source.h"

#include <cctype>
#include <string_view>

namespace tl {
namespace {

bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// `threadgroup <type> <name>[<count>]...;` (an optional trailing // comment): the
// declaration of a threadgroup array or variable, in the form the code generator
// emits. Pointers, references, initialisers and parameters are not declarations of
// storage and stay as they are.
bool is_threadgroup_declaration(std::string_view body) {
  constexpr std::string_view kKeyword = "threadgroup";
  if (body.substr(0, kKeyword.size()) != kKeyword) return false;
  if (body.size() == kKeyword.size() || !std::isspace(static_cast<unsigned char>(body[kKeyword.size()]))) return false;
  if (size_t comment = body.find("//"); comment != std::string_view::npos) body = trim(body.substr(0, comment));
  if (body.empty() || body.back() != ';') return false;
  body = trim(body.substr(kKeyword.size(), body.size() - kKeyword.size() - 1));
  if (body.find_first_of("*&=(){},") != std::string_view::npos) return false;
  // Peel the array extents, then the name must follow a type.
  while (!body.empty() && body.back() == ']') {
    size_t open = body.rfind('[');
    if (open == std::string_view::npos) return false;
    body = trim(body.substr(0, open));
  }
  size_t name_start = body.size();
  while (name_start > 0 && is_ident_char(body[name_start - 1])) --name_start;
  if (name_start == body.size() || std::isdigit(static_cast<unsigned char>(body[name_start]))) return false;
  return !trim(body.substr(0, name_start)).empty();
}

// `#include <metal_...>` or the MetalPerformancePrimitives umbrella header.
bool is_metal_include(std::string_view body) {
  if (body.empty() || body.front() != '#') return false;
  body = trim(body.substr(1));
  constexpr std::string_view kInclude = "include";
  if (body.substr(0, kInclude.size()) != kInclude) return false;
  body = trim(body.substr(kInclude.size()));
  return body.substr(0, 7) == "<metal_" || body.substr(0, 28) == "<MetalPerformancePrimitives/";
}

}  // namespace

std::string msl_to_emulated_cpp(const std::string& msl) {
  std::string out;
  out.reserve(msl.size() + 1024);
  size_t pos = 0;
  while (pos < msl.size()) {
    size_t end = msl.find('\n', pos);
    size_t next = end == std::string::npos ? msl.size() : end + 1;
    std::string_view line(msl.data() + pos, (end == std::string::npos ? msl.size() : end) - pos);
    size_t indent = 0;
    while (indent < line.size() && (line[indent] == ' ' || line[indent] == '\t')) ++indent;
    std::string_view body = line.substr(indent);
    if (is_threadgroup_declaration(trim(body))) {
      out.append(line.substr(0, indent));
      out.append("alignas(16) static thread_local");
      out.append(body.substr(std::string_view("threadgroup").size()));
    } else if (is_metal_include(trim(body))) {
      out.append(line.substr(0, indent));
      out.append("// (provided by metal_emu.h) ");
      out.append(body);
    } else {
      out.append(line);
    }
    if (end != std::string::npos) out.push_back('\n');
    pos = next;
  }
  return out;
}

}  // namespace tl
