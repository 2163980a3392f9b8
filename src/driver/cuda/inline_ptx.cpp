// Extended-asm statements of PTX translated into C++ for the CUDA emulator (see
// inline_ptx.h): a scan of the C++ source for the statements, a parse of each one's
// template and operands, and a translation of its PTX statement by statement.
#include "driver/cuda/inline_ptx.h"

#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "support/error.h"

namespace tl {
namespace {

bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool space(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}
std::string trim(std::string_view s) {
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return std::string(s);
}
int line_at(const std::string& s, size_t pos) {
  int line = 1;
  for (size_t i = 0; i < pos && i < s.size(); ++i) line += s[i] == '\n';
  return line;
}

// One operand of the statement: [name] "constraint" (expression).
struct AsmOperand {
  std::string name, constraint, expr;
};
struct AsmStatement {
  std::string ptx;  // the template, its literals joined and unescaped
  std::vector<AsmOperand> outputs, inputs;
  int line = 0;
};

// A statement the emulator cannot run: its message, which the translation turns into a
// `#pragma GCC error` in the statement's place, so that it stops the build only where
// the preprocessor keeps the statement (not in an `#if defined(__CUDA_ARCH__)` branch).
struct Untranslatable {
  std::string message;
};

[[noreturn]] void fail(int line, const std::string& what) {
  throw Untranslatable{str_cat("inline PTX at line ", line, " of the CUDA source: ", what,
                               "; the CUDA emulator runs the PTX instructions listed in docs/guide/targets.md "
                               "(\"Inline PTX\"), a GPU build assembles the source as written")};
}

// `text` as the body of a C string literal.
std::string escaped(const std::string& text) {
  std::string r;
  for (char c : text) {
    if (c == '"' || c == '\\') r += '\\';
    r += c == '\n' ? ' ' : c;
  }
  return r;
}

// A C++ string literal at `i` (i at the opening quote): its unescaped text; `i` moves
// past the closing quote.
std::string read_literal(const std::string& s, size_t& i, int line) {
  std::string out;
  for (++i; i < s.size() && s[i] != '"'; ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    if (++i >= s.size()) break;
    char c = s[i];
    switch (c) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case '0':
      case '1':
      case '2':
      case '3':
      case '4':
      case '5':
      case '6':
      case '7': {
        int v = 0, k = 0;
        while (k < 3 && i < s.size() && s[i] >= '0' && s[i] <= '7') v = v * 8 + (s[i++] - '0'), ++k;
        --i;
        out += char(v);
        break;
      }
      case 'x': {
        int v = 0;
        while (i + 1 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])))
          v = v * 16 + std::stoi(std::string(1, s[++i]), nullptr, 16);
        out += char(v);
        break;
      }
      case '\n':
        break;  // a line continuation
      default:
        out += c;
    }
  }
  if (i >= s.size()) fail(line, "an unterminated string literal");
  ++i;
  return out;
}

// Skips a C++ comment, string or character literal at `i`; false when none starts there.
bool skip_lexeme(const std::string& s, size_t& i) {
  if (s.compare(i, 2, "//") == 0) {
    while (i < s.size() && s[i] != '\n') i += s[i] == '\\' && i + 1 < s.size() ? 2 : 1;
    return true;
  }
  if (s.compare(i, 2, "/*") == 0) {
    size_t e = s.find("*/", i + 2);
    i = e == std::string::npos ? s.size() : e + 2;
    return true;
  }
  if (s[i] == '"' || s[i] == '\'') {
    const char q = s[i];
    for (++i; i < s.size() && s[i] != q; ++i)
      if (s[i] == '\\') ++i;
    ++i;
    return true;
  }
  return false;
}

// The text from `i` up to the parenthesis that closes the one before `i`, or up to a
// `:` or `,` at depth 0 when `stop_at_separator`; `i` moves to that character.
std::string balanced(const std::string& s, size_t& i, bool stop_at_separator) {
  const size_t start = i;
  int depth = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (skip_lexeme(s, i)) continue;
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') {
      if (depth == 0) break;
      --depth;
    }
    if (depth == 0 && stop_at_separator && (c == ':' || c == ',')) break;
    ++i;
  }
  return s.substr(start, i - start);
}

void skip_space(const std::string& s, size_t& i) {
  while (i < s.size()) {
    if (space(s[i])) {
      ++i;
    } else if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '\n') {
      i += 2;
    } else if (s.compare(i, 2, "//") == 0 || s.compare(i, 2, "/*") == 0) {
      skip_lexeme(s, i);
    } else {
      break;
    }
  }
}

// The operand list of one section: [name] "c" (expr), ...
std::vector<AsmOperand> read_operands(const std::string& s, size_t& i, int line) {
  std::vector<AsmOperand> ops;
  skip_space(s, i);
  while (i < s.size() && s[i] != ':' && s[i] != ')') {
    AsmOperand op;
    if (s[i] == '[') {
      size_t e = s.find(']', i);
      if (e == std::string::npos) fail(line, "an unterminated [name]");
      op.name = trim(std::string_view(s).substr(i + 1, e - i - 1));
      i = e + 1;
      skip_space(s, i);
    }
    if (i >= s.size() || s[i] != '"') fail(line, "an operand without a \"constraint\"");
    op.constraint = read_literal(s, i, line);
    skip_space(s, i);
    if (i >= s.size() || s[i] != '(') fail(line, "an operand without its (expression)");
    ++i;
    op.expr = balanced(s, i, false);
    ++i;  // ')'
    ops.push_back(op);
    skip_space(s, i);
    if (i < s.size() && s[i] == ',') {
      ++i;
      skip_space(s, i);
    }
  }
  return ops;
}

// The statement after its keyword and qualifiers, `i` at its '('; `i` moves past its ';'.
AsmStatement read_statement(const std::string& s, size_t& i, int line) {
  AsmStatement st;
  st.line = line;
  ++i;  // '('
  skip_space(s, i);
  if (i >= s.size() || s[i] != '"') fail(line, "a template that is not string literals");
  while (i < s.size() && s[i] == '"') {
    st.ptx += read_literal(s, i, line);
    skip_space(s, i);
  }
  for (int section = 0; i < s.size() && s[i] == ':'; ++section) {
    ++i;
    if (section == 0) st.outputs = read_operands(s, i, line);
    if (section == 1) st.inputs = read_operands(s, i, line);
    if (section == 2) balanced(s, i, false);  // clobbers: nothing to keep
    if (section >= 3) fail(line, "asm goto");
    skip_space(s, i);
  }
  skip_space(s, i);
  if (i >= s.size() || s[i] != ')') fail(line, "an asm statement that does not close");
  ++i;
  skip_space(s, i);
  if (i < s.size() && s[i] == ';') ++i;
  return st;
}

// ---- the PTX side

// The PTX types an instruction names (ptx_emu.h's Ty).
bool is_type(const std::string& t) {
  static const std::set<std::string> types = {"b8",   "b16",    "b32", "b64", "u8",  "u16", "u32",
                                              "u64",  "s8",     "s16", "s32", "s64", "f16", "f16x2",
                                              "bf16", "bf16x2", "f32", "f64", "pred"};
  return types.count(t) > 0;
}
bool is_float_type(const std::string& t) {
  return t == "f16" || t == "f16x2" || t == "bf16" || t == "bf16x2" || t == "f32" || t == "f64";
}
std::string ty(const std::string& t) {
  return "tlp::Ty::" + t;
}

struct Translator {
  explicit Translator(const AsmStatement& s) : st(s) {}
  const AsmStatement& st;
  std::vector<std::string> regs;                    // operand index -> C++ register name
  std::map<std::string, int> named;                 // [name] -> operand index
  std::vector<std::set<std::string>> declared{{}};  // .reg names per { } scope
  std::string out;
  std::string instr;  // the PTX statement being translated, for messages

  [[noreturn]] void bad(const std::string& why) const {
    fail(st.line, why + (instr.empty() ? "" : " (in `" + instr + "`)"));
  }

  static std::string reg_name(const std::string& ptx_name) {
    std::string r = "tl_ptx_r_";
    for (char c : ptx_name) r += ident_char(c) ? c : '_';
    return r;
  }
  bool is_declared(const std::string& name) const {
    for (const auto& scope : declared)
      if (scope.count(name)) return true;
    return false;
  }

  // An integer literal of PTX (decimal, 0x hex, 0b binary, 0 octal, a U suffix, a sign).
  std::optional<uint64_t> integer(std::string t) const {
    bool neg = false;
    if (!t.empty() && (t[0] == '-' || t[0] == '+')) neg = t[0] == '-', t = t.substr(1);
    if (!t.empty() && (t.back() == 'U' || t.back() == 'u')) t.pop_back();
    if (t.empty()) return std::nullopt;
    int base = 10;
    size_t k = 0;
    if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X'))
      base = 16, k = 2;
    else if (t.size() > 2 && t[0] == '0' && (t[1] == 'b' || t[1] == 'B'))
      base = 2, k = 2;
    else if (t.size() > 1 && t[0] == '0')
      base = 8, k = 1;
    uint64_t v = 0;
    for (; k < t.size(); ++k) {
      int d = std::isdigit(static_cast<unsigned char>(t[k]))    ? t[k] - '0'
              : std::isxdigit(static_cast<unsigned char>(t[k])) ? std::tolower(t[k]) - 'a' + 10
                                                                : 99;
      if (d >= base) return std::nullopt;
      v = v * uint64_t(base) + uint64_t(d);
    }
    return neg ? uint64_t(0) - v : v;
  }

  // One scalar operand as a C++ expression of its bits; `lane` names the type a
  // decimal float literal converts to.
  std::string value(std::string t, const std::string& lane = "f32") const {
    t = trim(t);
    if (t.empty()) bad("an empty operand");
    if (t[0] == '[') bad("a memory operand (ld / st and the like are not emulated)");
    if (t[0] == '{') bad("a vector operand outside mov");
    if (t.size() == 10 && (t.compare(0, 2, "0f") == 0 || t.compare(0, 2, "0F") == 0)) return "0x" + t.substr(2) + "ull";
    if (t.size() == 18 && (t.compare(0, 2, "0d") == 0 || t.compare(0, 2, "0D") == 0)) return "0x" + t.substr(2) + "ull";
    if (auto v = integer(t)) return str_cat(*v, "ull");
    if (std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '-' || t[0] == '.') {
      char* end = nullptr;
      std::strtod(t.c_str(), &end);
      if (end && *end == '\0') return "tlp::from_double<" + ty(lane) + ">(" + t + ")";
      bad("the operand `" + t + "`");
    }
    if (t[0] == '$') bad("the operand `" + t + "`");
    static const std::map<std::string, std::string> specials = {
        {"%tid.x", "tlp::u64(threadIdx.x)"},  {"%tid.y", "tlp::u64(threadIdx.y)"},
        {"%tid.z", "tlp::u64(threadIdx.z)"},  {"%ntid.x", "tlp::u64(blockDim.x)"},
        {"%ntid.y", "tlp::u64(blockDim.y)"},  {"%ntid.z", "tlp::u64(blockDim.z)"},
        {"%ctaid.x", "tlp::u64(blockIdx.x)"}, {"%ctaid.y", "tlp::u64(blockIdx.y)"},
        {"%ctaid.z", "tlp::u64(blockIdx.z)"}, {"%laneid", "tlp::lane_id()"},
        {"%warpid", "tlp::warp_id()"}};
    if (auto it = specials.find(t); it != specials.end()) return it->second;
    if (t[0] == '\x01') return regs[size_t(std::stoi(t.substr(1)))];  // %N, substituted
    if (is_declared(t)) return reg_name(t);
    bad("the register `" + t + "`, neither an operand nor declared by .reg");
  }
  // A destination: a register (an operand or a .reg name).
  std::string dest(const std::string& t) const {
    std::string v = value(t);
    if (v.compare(0, 7, "tl_ptx_") != 0) bad("the destination `" + trim(t) + "`");
    return v;
  }

  // "%0", "%[name]" and "%%" substituted: an operand becomes \x01N (a token no PTX
  // text has), "%%" a plain '%'.
  std::string substitute(const std::string& ptx) const {
    std::string r;
    for (size_t i = 0; i < ptx.size(); ++i) {
      if (ptx[i] != '%') {
        r += ptx[i];
        continue;
      }
      if (i + 1 < ptx.size() && ptx[i + 1] == '%') {
        r += '%';
        ++i;
      } else if (i + 1 < ptx.size() && std::isdigit(static_cast<unsigned char>(ptx[i + 1]))) {
        size_t j = i + 1;
        while (j < ptx.size() && std::isdigit(static_cast<unsigned char>(ptx[j]))) ++j;
        const size_t n = std::stoul(ptx.substr(i + 1, j - i - 1));
        if (n >= regs.size()) fail(st.line, str_cat("%", n, " names no operand (there are ", regs.size(), ")"));
        r += "\x01" + std::to_string(n);
        i = j - 1;
      } else if (i + 1 < ptx.size() && ptx[i + 1] == '[') {
        size_t e = ptx.find(']', i);
        const std::string name = ptx.substr(i + 2, e == std::string::npos ? 0 : e - i - 2);
        auto it = named.find(name);
        if (e == std::string::npos || it == named.end()) fail(st.line, "%[" + name + "] names no operand");
        r += "\x01" + std::to_string(it->second);
        i = e;
      } else if (i + 1 < ptx.size() && ptx[i + 1] == '=') {
        fail(st.line, "%= in the template");
      } else {
        r += '%';
      }
    }
    return r;
  }

  // Operands split at the commas outside { }.
  static std::vector<std::string> split_operands(const std::string& s) {
    std::vector<std::string> ops;
    int depth = 0;
    std::string cur;
    for (char c : s) {
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') --depth;
      if (c == ',' && depth == 0) {
        ops.push_back(trim(cur));
        cur.clear();
      } else {
        cur += c;
      }
    }
    if (!trim(cur).empty()) ops.push_back(trim(cur));
    return ops;
  }
  static std::vector<std::string> vector_parts(const std::string& t) {
    return split_operands(t.substr(1, t.size() - 2));
  }

  void declare(const std::string& rest) {
    // .reg .type a, b<4>, c;
    std::string r = trim(rest);
    size_t sp = r.find_first_of(" \t\n");
    if (r.empty() || r[0] != '.' || sp == std::string::npos) bad("a .reg declaration without a type");
    const std::string type = r.substr(1, sp - 1);
    if (!is_type(type)) bad("a .reg of type ." + type);
    for (const std::string& raw : split_operands(r.substr(sp))) {
      std::string name = raw;
      int count = -1;
      if (size_t lt = name.find('<'); lt != std::string::npos) {
        count = std::stoi(name.substr(lt + 1));
        name = trim(name.substr(0, lt));
      }
      if (count == 0) bad("an empty .reg vector");
      std::vector<std::string> names;
      for (int k = 0; k < count; ++k) names.push_back(name + std::to_string(k));
      if (count < 0) names.push_back(name);
      for (const std::string& n : names) {
        declared.back().insert(n);
        out += "tlp::u64 " + reg_name(n) + " = 0; ";
      }
    }
  }

  // The statement's instruction as C++ (without its guard).
  std::string instruction(const std::string& opcode, const std::vector<std::string>& ops) const {
    std::vector<std::string> parts;
    for (size_t i = 0, j; i <= opcode.size(); i = j + 1) {
      j = opcode.find('.', i);
      if (j == std::string::npos) j = opcode.size();
      parts.push_back(opcode.substr(i, j - i));
    }
    const std::string op = parts[0];
    std::vector<std::string> types, mods;
    for (size_t k = 1; k < parts.size(); ++k) (is_type(parts[k]) ? types : mods).push_back(parts[k]);
    auto has = [&](const char* m) {
      for (const auto& x : mods)
        if (x == m) return true;
      return false;
    };
    auto allow = [&](const std::set<std::string>& ok) {
      for (const auto& x : mods)
        if (!ok.count(x)) bad("the modifier ." + x + " of " + op);
    };
    auto need = [&](size_t n) {
      if (ops.size() != n) bad(str_cat(op, " with ", ops.size(), " operands (", n, " expected)"));
    };
    auto one_type = [&]() {
      if (types.size() != 1) bad(op + " without one type");
      return types[0];
    };
    auto lane_of = [](const std::string& t) {
      return t == "f16x2" ? std::string("f16") : t == "bf16x2" ? std::string("bf16") : t;
    };
    // Float ops: .ftz flushes float32 operands and the result; .sat clamps it.
    auto float_wrap = [&](const std::string& t, const std::string& call, const std::vector<std::string>& args) {
      std::string a;
      for (size_t k = 0; k < args.size(); ++k) {
        std::string v = value(args[k], lane_of(t));
        if (has("ftz") && t == "f32") v = "tlp::flush32(" + v + ")";
        a += (k ? ", " : "") + v;
      }
      std::string r = call + "<" + ty(t) + ">(" + a + ")";
      if (has("ftz") && t == "f32") r = "tlp::flush32(" + r + ")";
      if (has("sat")) {
        if (!is_float_type(t) || t == "f16x2" || t == "bf16x2") bad(".sat of ." + t);
        r = "tlp::saturate<" + ty(t) + ">(" + r + ")";
      }
      return r;
    };
    auto set = [&](const std::string& d, const std::string& e) { return dest(d) + " = " + e + ";"; };

    if (op == "mov") {
      allow({});
      const std::string t = one_type();
      need(2);
      if (ops[1][0] == '{') {
        std::string list;
        for (const auto& p : vector_parts(ops[1])) list += (list.empty() ? "" : ", ") + value(p);
        return set(ops[0], "tlp::pack<" + ty(t) + ">({" + list + "})");
      }
      if (ops[0][0] == '{') {
        auto ps = vector_parts(ops[0]);
        std::string r = "{ tlp::u64 tl_v = " + value(ops[1]) + "; ";
        for (size_t k = 0; k < ps.size(); ++k)
          r += dest(ps[k]) + str_cat(" = tlp::unpack<", ty(t), ">(tl_v, ", k, ", ", ps.size(), "); ");
        return r + "}";
      }
      return set(ops[0], "tlp::mov<" + ty(t) + ">(" + value(ops[1], t) + ")");
    }
    if (op == "and" || op == "or" || op == "xor") {
      allow({});
      need(3);
      const std::string t = one_type();
      return set(ops[0], "tlp::" + op + "_<" + ty(t) + ">(" + value(ops[1]) + ", " + value(ops[2]) + ")");
    }
    if (op == "not" || op == "cnot" || op == "popc" || op == "clz" || op == "brev") {
      allow({});
      need(2);
      const std::string t = one_type();
      return set(ops[0], "tlp::" + std::string(op == "not" ? "not_" : op) + "<" + ty(t) + ">(" + value(ops[1]) + ")");
    }
    if (op == "shl" || op == "shr") {
      allow({});
      need(3);
      return set(ops[0], "tlp::" + op + "<" + ty(one_type()) + ">(" + value(ops[1]) + ", " + value(ops[2]) + ")");
    }
    if (op == "lop3" || op == "bfi") {
      allow({});
      need(5);
      return set(ops[0], "tlp::" + op + "<" + ty(one_type()) + ">(" + value(ops[1]) + ", " + value(ops[2]) + ", " +
                             value(ops[3]) + ", " + value(ops[4]) + ")");
    }
    if (op == "prmt" || op == "bfe") {
      allow({});
      need(4);
      return set(ops[0], "tlp::" + op + "<" + ty(one_type()) + ">(" + value(ops[1]) + ", " + value(ops[2]) + ", " +
                             value(ops[3]) + ")");
    }
    if (op == "add" || op == "sub" || op == "mul" || op == "mad" || op == "fma" || op == "min" || op == "max" ||
        op == "neg" || op == "abs") {
      const std::string t = one_type();
      if (is_float_type(t)) {
        allow({"rn", "ftz", "sat", "NaN"});
        if (has("NaN") && op != "min" && op != "max") bad(".NaN of " + op);
        if ((op == "fma" || (op == "mad" && t != "f32")) && !has("rn") && t != "f32") bad(op + " without .rn");
        const bool unary = op == "neg" || op == "abs", ternary = op == "mad" || op == "fma";
        need(unary ? 2 : ternary ? 4 : 3);
        std::string fn = "tlp::" + (op == "mad" ? std::string("fma") : op);
        if (has("NaN")) fn += "_nan";
        return set(ops[0], float_wrap(t, fn, std::vector<std::string>(ops.begin() + 1, ops.end())));
      }
      if (t == "pred") bad(op + " of .pred");
      allow({"lo", "hi", "wide"});
      std::string fn = op;
      if (has("hi")) fn += "_hi";
      if (has("wide")) fn += "_wide";
      if ((has("hi") || has("wide") || has("lo")) && op != "mul" && op != "mad") bad("." + mods[0] + " of " + op);
      const bool unary = op == "neg" || op == "abs", ternary = op == "mad";
      if (op == "fma") bad("fma of an integer type");
      need(unary ? 2 : ternary ? 4 : 3);
      std::string a;
      for (size_t k = 1; k < ops.size(); ++k) a += (k > 1 ? ", " : "") + value(ops[k]);
      return set(ops[0], "tlp::" + fn + "<" + ty(t) + ">(" + a + ")");
    }
    if (op == "setp") {
      static const std::set<std::string> cmps = {"eq", "ne",  "lt",  "le",  "gt",  "ge",  "lo",  "ls",  "hi",
                                                 "hs", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
      const std::string t = one_type();
      std::string cmp;
      for (const auto& m : mods) {
        if (cmps.count(m) && cmp.empty())
          cmp = m;
        else if (m != "ftz")
          bad("the modifier ." + m + " of setp");
      }
      if (cmp.empty()) bad("setp without a comparison");
      if (ops[0].find('|') != std::string::npos) bad("setp with two destinations");
      need(3);
      static const std::map<std::string, std::string> unsigned_names = {
          {"lo", "lt"}, {"ls", "le"}, {"hi", "gt"}, {"hs", "ge"}};
      if (auto it = unsigned_names.find(cmp); it != unsigned_names.end()) cmp = it->second;
      return set(ops[0],
                 "tlp::setp<" + ty(t) + ">(tlp::Cmp::" + cmp + ", " + value(ops[1], t) + ", " + value(ops[2], t) + ")");
    }
    if (op == "selp") {
      allow({});
      need(4);
      const std::string t = one_type();
      return set(ops[0],
                 "tlp::selp<" + ty(t) + ">(" + value(ops[1], t) + ", " + value(ops[2], t) + ", " + value(ops[3]) + ")");
    }
    if (op == "cvt") {
      if (types.size() != 2) bad("cvt without a destination and a source type");
      std::string rnd = "none";
      for (const auto& m : mods) {
        if (m == "rn" || m == "rni" || m == "rzi" || m == "rmi" || m == "rpi")
          rnd = m;
        else if (m != "ftz" && m != "sat")
          bad("the modifier ." + m + " of cvt");
      }
      const std::string& d = types[0];
      const std::string& s = types[1];
      if (d == "f16x2" || d == "bf16x2") {
        if (s != "f32" || rnd != "rn") bad("cvt to ." + d + " other than cvt.rn." + d + ".f32");
        need(3);
        return set(ops[0], "tlp::cvt_pair<" + ty(d) + ">(" + value(ops[1]) + ", " + value(ops[2]) + ")");
      }
      if (s == "f16x2" || s == "bf16x2" || d == "pred" || s == "pred") bad("cvt between ." + d + " and ." + s);
      need(2);
      std::string e = "tlp::cvt<" + ty(d) + ", " + ty(s) + ">(" + value(ops[1], s) + ", tlp::Rnd::" + rnd + ")";
      if (has("sat") && is_float_type(d))
        e = "tlp::saturate<" + ty(d) + ">(" + e + ")";
      else if (has("sat"))
        bad(".sat of a conversion to ." + d);
      return set(ops[0], e);
    }
    if (op == "bar" || op == "barrier") {
      for (const auto& m : mods)
        if (m != "sync" && m != "aligned") bad("the modifier ." + m + " of " + op);
      if (!has("sync") && op == "barrier") bad("barrier without .sync");
      if (ops.size() != 1) bad(op + " with a thread count (only the whole block's barrier is emulated)");
      return "__syncthreads();";
    }
    if (op == "membar" || op == "fence") return "__atomic_thread_fence(__ATOMIC_SEQ_CST);";
    bad("the instruction `" + opcode + "`");
  }

  void statement(std::string text) {
    text = trim(text);
    if (text.empty()) return;
    instr = text;
    for (char& c : instr)
      if (c == '\x01') c = '%';
    std::string guard;
    if (text[0] == '@') {
      size_t sp = text.find_first_of(" \t\n");
      if (sp == std::string::npos) bad("a guard without an instruction");
      std::string p = text.substr(1, sp - 1);
      const bool negate = !p.empty() && p[0] == '!';
      if (negate) p = p.substr(1);
      guard = "if (" + std::string(negate ? "!" : "") + "(" + value(p) + " & 1)) ";
      text = trim(text.substr(sp));
    }
    size_t sp = text.find_first_of(" \t\n");
    const std::string opcode = text.substr(0, sp);
    if (opcode.back() == ':') bad("a label");
    const std::string rest = sp == std::string::npos ? "" : text.substr(sp);
    if (opcode == ".reg") {
      if (!guard.empty()) bad("a guarded declaration");
      declare(rest);
    } else if (opcode[0] == '.') {
      bad("the directive " + opcode);
    } else {
      out += guard + instruction(opcode, split_operands(rest)) + " ";
    }
    instr.clear();
  }

  // The PTX body: statements, `{ }` scopes and comments.
  void body(const std::string& ptx) {
    std::string text;
    for (size_t i = 0; i < ptx.size(); ++i) {  // comments out
      if (ptx.compare(i, 2, "//") == 0) {
        while (i < ptx.size() && ptx[i] != '\n') ++i;
      } else if (ptx.compare(i, 2, "/*") == 0) {
        size_t e = ptx.find("*/", i + 2);
        i = e == std::string::npos ? ptx.size() : e + 1;
      } else {
        text += ptx[i];
      }
    }
    std::string cur;
    int depth = 0;  // braces inside the current statement (vector operands)
    for (char c : text) {
      if ((c == '{' || c == '}') && trim(cur).empty()) {
        if (c == '{') {
          declared.emplace_back();
          out += "{ ";
        } else {
          if (declared.size() == 1) fail(st.line, "a `}` that closes no scope");
          declared.pop_back();
          out += "} ";
        }
        cur.clear();
        continue;
      }
      if (c == '{') ++depth;
      if (c == '}') --depth;
      if (c == ';' && depth == 0) {
        statement(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    statement(cur);
    if (declared.size() != 1) fail(st.line, "a `{` that is not closed");
  }

  std::string translate() {
    out = "{ namespace tlp = ::tl::emu::ptx; ";
    std::vector<std::string> stores;
    const size_t n = st.outputs.size() + st.inputs.size();
    regs.resize(n);
    for (size_t k = 0; k < n; ++k) {
      regs[k] = "tl_ptx_" + std::to_string(k);
      const AsmOperand& o = k < st.outputs.size() ? st.outputs[k] : st.inputs[k - st.outputs.size()];
      if (!o.name.empty()) named[o.name] = int(k);
    }
    for (size_t k = 0; k < n; ++k) {
      const bool is_out = k < st.outputs.size();
      const AsmOperand& o = is_out ? st.outputs[k] : st.inputs[k - st.outputs.size()];
      std::string c;
      bool plus = false, eq = false;
      for (char ch : o.constraint) {
        if (ch == '+')
          plus = true;
        else if (ch == '=')
          eq = true;
        else if (ch != '&' && !space(ch))
          c += ch;
      }
      std::string expr;
      for (char ch : o.expr) expr += ch == '\n' ? ' ' : ch;
      if (is_out && !plus && !eq) fail(st.line, "an output constraint \"" + o.constraint + "\" without = or +");
      if (!c.empty() && std::isdigit(static_cast<unsigned char>(c[0]))) {
        const size_t tied = std::stoul(c);
        if (is_out || tied >= st.outputs.size()) fail(st.line, "the matching constraint \"" + o.constraint + "\"");
        out += "tlp::u64& " + regs[k] + " = " + regs[tied] + "; " + regs[k] + " = tlp::bits(" + expr + "); ";
        continue;
      }
      if (c != "r" && c != "h" && c != "l" && c != "f" && c != "d" && c != "n" && c != "i")
        fail(st.line, "the constraint \"" + o.constraint + "\" (the emulator takes h, r, l, f, d, n and i)");
      if (is_out) {
        out += "auto& " + regs[k] + "_out = (" + expr + "); tlp::u64 " + regs[k] + " = " +
               (plus ? "tlp::bits(" + regs[k] + "_out)" : std::string("0")) + "; ";
        stores.push_back("tlp::store(" + regs[k] + "_out, " + regs[k] + "); ");
      } else {
        out += "tlp::u64 " + regs[k] + " = tlp::bits(" + expr + "); ";
      }
    }
    body(substitute(st.ptx));
    for (const auto& s : stores) out += s;
    return out + "}";
  }
};

bool asm_keyword(const std::string& w) {
  return w == "asm" || w == "__asm__" || w == "__asm";
}
bool asm_qualifier(const std::string& w) {
  return w == "volatile" || w == "__volatile__" || w == "__volatile" || w == "inline" || w == "goto";
}

}  // namespace

std::string emulate_inline_ptx(const std::string& cuda) {
  std::string out;
  size_t i = 0, copied = 0;
  while (i < cuda.size()) {
    if (skip_lexeme(cuda, i)) continue;
    if (!ident_char(cuda[i]) || (i > 0 && (ident_char(cuda[i - 1]) || cuda[i - 1] == '.'))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cuda.size() && ident_char(cuda[j])) ++j;
    const std::string word = cuda.substr(i, j - i);
    if (!asm_keyword(word) || (i > 1 && cuda.compare(i - 2, 2, "->") == 0)) {
      i = j;
      continue;
    }
    size_t k = j;
    skip_space(cuda, k);
    while (k < cuda.size() && ident_char(cuda[k])) {
      size_t e = k;
      while (e < cuda.size() && ident_char(cuda[e])) ++e;
      if (!asm_qualifier(cuda.substr(k, e - k))) break;
      k = e;
      skip_space(cuda, k);
    }
    if (k >= cuda.size() || cuda[k] != '(') {
      i = j;
      continue;
    }
    const int line = line_at(cuda, i);
    std::string code;
    try {
      AsmStatement st = read_statement(cuda, k, line);
      try {
        Translator t(st);
        code = t.translate();
      } catch (const Untranslatable& e) {
        code = "_Pragma(\"" + escaped("GCC error \"" + escaped(e.message) + "\"") + "\")";
      }
    } catch (const Untranslatable&) {
      i = j;  // not a statement this parser reads: left to the host compiler as written
      continue;
    }
    // The statement's lines kept: its line breaks follow the code (with a backslash
    // where the statement continued a macro).
    out.append(cuda, copied, i - copied);
    out += code;
    for (size_t p = i; p < k; ++p)
      if (cuda[p] == '\n') out += (p > 0 && cuda[p - 1] == '\\') ? " \\\n" : "\n";
    i = copied = k;
  }
  if (copied == 0) return cuda;
  out.append(cuda, copied, std::string::npos);
  return out;
}

}  // namespace tl
