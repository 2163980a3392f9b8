// The translation of nvcc's options for NVRTC, the host compiler and Metal
// (docs/design/compile_flags.md), and the check of those we hand on unread.
#include "driver/compile_flags.h"

#include <map>
#include <mutex>
#include <optional>

#include "driver/cpu/host_compiler.h"
#include "driver/cuda/nvrtc.h"
#include "driver/device_dir.h"
#include "runtime/cuda/cuda_api.h"
#include "support/error.h"
#include "support/logging.h"

namespace tl {
namespace {

// What an nvcc option is, whatever its spelling.
enum class Kind {
  Define,            // -D, --define-macro
  Undefine,          // -U, --undefine-macro
  IncludePath,       // -I, --include-path
  SystemInclude,     // -isystem, --system-include
  PreInclude,        // -include, --pre-include
  Optimize,          // -O<n>, --optimize: nvcc's host-code optimization level
  HostDebug,         // -g
  DeviceDebug,       // -G
  LineInfo,          // -lineinfo
  FastMath,          // --use_fast_math (and --fast-math)
  Ptxas,             // -Xptxas, --ptxas-options
  HostOptions,       // -Xcompiler, --compiler-options
  RelaxedConstexpr,  // --expt-relaxed-constexpr
  ExtendedLambda,    // --extended-lambda, --expt-extended-lambda
  DeviceCodegen,     // NVRTC's own device-code options: --maxrregcount, --ftz, --dopt ...
  Fmad,              // --fmad
  Std,               // -std, --std
  Arch,              // -arch, --gpu-architecture
  Warning,           // -W...
  NoWarnings,        // -w
  ResourceUsage,     // --resource-usage: ptxas -v
  DriverOnly,        // nvcc driver options with no effect on the code: --keep, -Ofast-compile ...
};

struct Spec {
  const char* name;
  Kind kind;
  bool takes_value;
};

// By name without the leading dashes: nvcc takes one or two for every option.
const Spec kSpecs[] = {
    {"define-macro", Kind::Define, true},
    {"undefine-macro", Kind::Undefine, true},
    {"include-path", Kind::IncludePath, true},
    {"system-include", Kind::SystemInclude, true},
    {"isystem", Kind::SystemInclude, true},
    {"pre-include", Kind::PreInclude, true},
    {"include", Kind::PreInclude, true},
    {"optimize", Kind::Optimize, true},
    {"g", Kind::HostDebug, false},
    {"debug", Kind::HostDebug, false},
    {"G", Kind::DeviceDebug, false},
    {"device-debug", Kind::DeviceDebug, false},
    {"lineinfo", Kind::LineInfo, false},
    {"generate-line-info", Kind::LineInfo, false},
    {"use_fast_math", Kind::FastMath, false},
    {"fast-math", Kind::FastMath, false},
    {"Xptxas", Kind::Ptxas, true},
    {"ptxas-options", Kind::Ptxas, true},
    {"Xcompiler", Kind::HostOptions, true},
    {"compiler-options", Kind::HostOptions, true},
    {"expt-relaxed-constexpr", Kind::RelaxedConstexpr, false},
    {"expt-extended-lambda", Kind::ExtendedLambda, false},
    {"extended-lambda", Kind::ExtendedLambda, false},
    {"maxrregcount", Kind::DeviceCodegen, true},
    {"ftz", Kind::DeviceCodegen, true},
    {"prec-div", Kind::DeviceCodegen, true},
    {"prec-sqrt", Kind::DeviceCodegen, true},
    {"dopt", Kind::DeviceCodegen, true},
    {"extra-device-vectorization", Kind::DeviceCodegen, false},
    {"restrict", Kind::DeviceCodegen, false},
    {"diag-suppress", Kind::DeviceCodegen, true},
    {"diag-warn", Kind::DeviceCodegen, true},
    {"diag-error", Kind::DeviceCodegen, true},
    {"display-error-number", Kind::DeviceCodegen, false},
    {"no-display-error-number", Kind::DeviceCodegen, false},
    {"fmad", Kind::Fmad, true},
    {"std", Kind::Std, true},
    {"arch", Kind::Arch, true},
    {"gpu-architecture", Kind::Arch, true},
    {"w", Kind::NoWarnings, false},
    {"disable-warnings", Kind::NoWarnings, false},
    {"resource-usage", Kind::ResourceUsage, false},
    {"keep", Kind::DriverOnly, false},
    {"src-in-ptx", Kind::DriverOnly, false},
    {"keep-dir", Kind::DriverOnly, true},
    {"Ofast-compile", Kind::DriverOnly, true},
    {"Ofc", Kind::DriverOnly, true},
};

const Spec* find_spec(const std::string& name) {
  for (const Spec& s : kSpecs)
    if (name == s.name) return &s;
  return nullptr;
}

const char* compiler_name(FlagCompiler c) {
  switch (c) {
    case FlagCompiler::Nvrtc:
      return "NVRTC";
    case FlagCompiler::Host:
      return "the host C++ compiler";
    case FlagCompiler::Metal:
      return "Metal";
  }
  return "?";
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t comma = s.find(',', start);
    std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

[[noreturn]] void flag_error(const std::string& given, const Target& target, const std::string& why) {
  throw_user_error({}, str_cat("compile flag '", given, "' (target ", target.str(), "): ", why));
}

// Builds one compiler's flags from the parsed options.
class Translator {
 public:
  Translator(FlagCompiler c, const Target& t) : c_(c), t_(t) {}

  void option(Kind kind, const std::string& name, const std::string& value, const std::string& given) {
    given_ = &given;
    switch (c_) {
      case FlagCompiler::Nvrtc:
        nvrtc(kind, name, value);
        break;
      case FlagCompiler::Host:
        host(kind, value);
        break;
      case FlagCompiler::Metal:
        metal(kind, value);
        break;
    }
  }

  // A flag the table does not know: the compiler judges it (Metal has none to ask).
  void unknown(const std::string& given) {
    given_ = &given;
    if (c_ == FlagCompiler::Metal)
      flag_error(given, t_,
                 "not supported: the metal target hands its MSL to torch.mps, which compiles it without options; it "
                 "takes -D and -U (as #define / #undef lines before the source) and drops the nvcc flags listed in "
                 "docs/design/compile_flags.md");
    unread(given);
  }

  TranslatedFlags out;

 private:
  void pass(const std::string& flag) { out.flags.push_back(flag); }
  void unread(const std::string& flag) {
    out.flags.push_back(flag);
    out.unread.push_back({flag, *given_});
  }
  void drop(const std::string& why) { out.dropped.push_back(str_cat("'", *given_, "' (", why, ")")); }

  void check_arch(const std::string& value) {
    if (t_.kind != TargetKind::CUDA) return drop("the target has no CUDA arch");
    if (value != t_.arch)
      flag_error(*given_, t_,
                 str_cat("asks for ", value, " but the target is ", t_.arch,
                         "; choose the arch with target=\"cuda -arch=", value, "\" instead"));
    drop("the target's arch already");
  }

  void nvrtc(Kind kind, const std::string& name, const std::string& value) {
    switch (kind) {
      case Kind::Define:
        return pass("-D" + value);
      case Kind::Undefine:
        return pass("-U" + value);
      case Kind::IncludePath:
      case Kind::SystemInclude:
        return pass("-I" + value);
      case Kind::PreInclude:
        return pass("--pre-include=" + value);
      case Kind::Optimize:
        return drop("nvcc's -O is the host code's level; NVRTC optimizes device code fully by default");
      case Kind::HostDebug:
        return drop("debug information for host code, which NVRTC does not compile");
      case Kind::DeviceDebug:
        return pass("-G");
      case Kind::LineInfo:
        return pass("-lineinfo");
      case Kind::FastMath:
        return pass("--use_fast_math");
      case Kind::Ptxas:
        for (const std::string& part : split_commas(value)) unread("--ptxas-options=" + part);
        return;
      case Kind::HostOptions:
        return drop("options of nvcc's host compiler; NVRTC compiles no host code");
      case Kind::RelaxedConstexpr:
        return drop("NVRTC has no such option; the kernel is compiled with -default-device");
      case Kind::ExtendedLambda:
        return drop(
            "NVRTC has no such option; it is for __device__ lambdas in host code, which NVRTC does not compile");
      case Kind::DeviceCodegen:
      case Kind::Fmad:
        return unread("--" + name + (value.empty() ? "" : "=" + value));
      case Kind::Std:
        return unread("--std=" + value);
      case Kind::Arch:
        return check_arch(value);
      case Kind::Warning:
        return drop("NVRTC has no -W options (it takes -w and --diag-suppress)");
      case Kind::NoWarnings:
        return pass("-w");
      case Kind::ResourceUsage:
        return pass("--ptxas-options=-v");
      case Kind::DriverOnly:
        return drop("an option of the nvcc driver that NVRTC has no use for");
    }
  }

  void host(Kind kind, const std::string& value) {
    switch (kind) {
      case Kind::Define:
        return pass("-D" + value);
      case Kind::Undefine:
        return pass("-U" + value);
      case Kind::IncludePath:
        return pass("-I" + value);
      case Kind::SystemInclude:
        pass("-isystem");
        return pass(value);
      case Kind::PreInclude:
        pass("-include");
        return pass(value);
      case Kind::Optimize:
        return unread("-O" + value);
      case Kind::HostDebug:
      case Kind::DeviceDebug:  // the kernel is host code here
        return pass("-g");
      case Kind::LineInfo:
        return drop("line tables for GPU profilers; -g gives the host debugger the kernel's lines");
      case Kind::FastMath:
        // nvcc's fast math contracts a*b+c into fma and divides approximately, and
        // defines __USE_FAST_MATH__ (NVRTC too). Not -ffast-math: its finite-math
        // assumption breaks the -inf of softmax maxima, and with g++ before 13 a
        // shared library built with it sets flush-to-zero for the whole process.
        pass("-ffp-contract=fast");
        pass("-freciprocal-math");
        return pass("-D__USE_FAST_MATH__");
      case Kind::Ptxas:
        return drop("options of ptxas, which does not run for this target");
      case Kind::HostOptions:
        for (const std::string& part : split_commas(value)) unread(part);
        return;
      case Kind::RelaxedConstexpr:
      case Kind::ExtendedLambda:
        return drop("a CUDA language extension that host C++ needs not");
      case Kind::DeviceCodegen:
      case Kind::ResourceUsage:
        return drop("a GPU code generation option");
      case Kind::Fmad:
        if (value == "true") return pass("-ffp-contract=fast");
        if (value == "false") return pass("-ffp-contract=off");
        flag_error(*given_, t_, "--fmad takes true or false");
      case Kind::Std:
        return unread("-std=" + value);
      case Kind::Arch:
        return check_arch(value);
      case Kind::Warning:
        return unread(*given_);
      case Kind::NoWarnings:
        return pass("-w");
      case Kind::DriverOnly:
        return drop("an option of the nvcc driver that the host compiler has no use for");
    }
  }

  void metal(Kind kind, const std::string& value) {
    switch (kind) {
      case Kind::Define: {
        size_t eq = value.find('=');
        std::string name = value.substr(0, eq);
        if (name.empty()) flag_error(*given_, t_, "names no macro");
        out.source_lines.push_back("#define " + name + " " + (eq == std::string::npos ? "1" : value.substr(eq + 1)));
        return;
      }
      case Kind::Undefine:
        if (value.empty()) flag_error(*given_, t_, "names no macro");
        out.source_lines.push_back("#undef " + value);
        return;
      case Kind::PreInclude:
        flag_error(*given_, t_, "not supported: torch.mps compiles the MSL from a string, with no files to include");
      case Kind::Arch:
        return check_arch(value);
      default:
        return drop("torch.mps compiles the MSL without options; Metal's fast math is on by default");
    }
  }

  FlagCompiler c_;
  const Target& t_;
  const std::string* given_ = nullptr;
};

}  // namespace

TranslatedFlags translate_compile_flags(const std::vector<std::string>& given, FlagCompiler compiler,
                                        const Target& target) {
  Translator tr(compiler, target);
  for (size_t i = 0; i < given.size(); ++i) {
    const std::string& flag = given[i];
    if (flag.empty()) continue;
    if (flag[0] != '-' || flag.size() == 1) {
      tr.unknown(flag);
      continue;
    }
    std::string body = flag.substr(flag.rfind("--", 0) == 0 ? 2 : 1);
    size_t eq = body.find('=');
    std::string name = body.substr(0, eq);
    std::optional<std::string> value;
    if (eq != std::string::npos) value = body.substr(eq + 1);
    const Spec* spec = find_spec(name);
    // The one-letter options that take their value attached: -DX, -UX, -I/dir, -O3, -Wall.
    if (!spec && flag[1] != '-' && body.size() > 1 && std::string("DUIOW").find(body[0]) != std::string::npos) {
      static const Kind kinds[] = {Kind::Define, Kind::Undefine, Kind::IncludePath, Kind::Optimize, Kind::Warning};
      Kind kind = kinds[std::string("DUIOW").find(body[0])];
      tr.option(kind, body.substr(0, 1), body.substr(1), flag);
      continue;
    }
    std::string shown = flag;
    if (!spec && (body == "D" || body == "U" || body == "I")) {
      if (i + 1 >= given.size()) flag_error(flag, target, "needs a value");
      shown = flag + " " + given[i + 1];
      Kind kind = body == "D" ? Kind::Define : body == "U" ? Kind::Undefine : Kind::IncludePath;
      tr.option(kind, body, given[++i], shown);
      continue;
    }
    if (!spec) {
      tr.unknown(flag);
      continue;
    }
    if (spec->takes_value && !value) {
      if (i + 1 >= given.size()) flag_error(flag, target, "needs a value");
      value = given[++i];
      shown = flag + " " + *value;
    } else if (!spec->takes_value && value) {
      flag_error(flag, target, str_cat("-", spec->name, " takes no value"));
    }
    tr.option(spec->kind, spec->name, value.value_or(""), shown);
  }
  return std::move(tr.out);
}

void verify_compile_flags(const TranslatedFlags& t, FlagCompiler compiler, const Target& target) {
  if (!t.dropped.empty()) {
    std::string list;
    for (const std::string& d : t.dropped) list += (list.empty() ? "" : ", ") + d;
    log(LogLevel::Debug,
        str_cat("compile_flags for ", target.str(), ": ", compiler_name(compiler), " gets none of ", list));
  }
  if (t.unread.empty() || compiler == FlagCompiler::Metal) return;
  // What the compiler says of `flags` (nothing when it takes them), once per process.
  static std::mutex mu;
  static std::map<std::string, std::optional<std::string>> said;
  auto rejects = [&](const std::vector<std::string>& flags) -> std::optional<std::string> {
    std::string key = str_cat(int(compiler), " ", target.arch);
    for (const std::string& f : flags) key += "\n" + f;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (auto it = said.find(key); it != said.end()) return it->second;
    }
    std::optional<std::string> r = compiler == FlagCompiler::Nvrtc
                                       ? nvrtc_rejects(target.arch, device_include_dir() + "/cuda", flags)
                                       : host_compiler_rejects(flags);
    std::lock_guard<std::mutex> lock(mu);
    said.emplace(key, r);
    return r;
  };
  std::vector<std::string> all;
  for (const TranslatedFlags::Unread& u : t.unread) all.push_back(u.flag);
  std::optional<std::string> together = rejects(all);
  if (!together) return;
  // Which of them: each alone; when none fails alone, they fail together.
  std::vector<std::string> culprits;
  std::string output;
  for (const TranslatedFlags::Unread& u : t.unread) {
    if (std::optional<std::string> r = rejects({u.flag})) {
      if (culprits.empty() || culprits.back() != u.given) culprits.push_back(u.given);
      output += *r;
    }
  }
  if (culprits.empty()) {
    for (const TranslatedFlags::Unread& u : t.unread) culprits.push_back(u.given);
    output = *together;
  }
  while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
  std::string names;
  for (const std::string& c : culprits) names += (names.empty() ? "'" : ", '") + c + "'";
  throw_user_error({}, str_cat("compile flag", culprits.size() > 1 ? "s " : " ", names, " (target ", target.str(),
                               ") not accepted by ", compiler_name(compiler),
                               " (docs/design/compile_flags.md lists the nvcc flags tilelang translates); ",
                               compiler_name(compiler), " said:\n", output));
}

}  // namespace tl
