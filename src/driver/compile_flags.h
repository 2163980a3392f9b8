// compile_flags as TileLang's users write them (nvcc's options: upstream hands them
// to nvcc) turned into what each of our compilers takes: NVRTC for the cuda target,
// the host C++ compiler for cpu and the emulators, nothing for Metal on its GPU
// (torch compiles the MSL without options). docs/design/compile_flags.md has the table.
#pragma once

#include <string>
#include <vector>

#include "target/target.h"

namespace tl {

enum class FlagCompiler { Nvrtc, Host, Metal };

struct TranslatedFlags {
  // What the compiler gets, in the order given.
  std::vector<std::string> flags;
  // Those of `flags` that only the compiler can judge (options we pass through
  // unread, values handed on to ptxas or the host compiler), each with the flag
  // the user wrote: verify_compile_flags asks the compiler about them.
  struct Unread {
    std::string flag, given;
  };
  std::vector<Unread> unread;
  // The flags that mean nothing for this compiler, each with the reason.
  std::vector<std::string> dropped;
  // Metal on its GPU: the lines "#define X 1" / "#undef X" that -D / -U become,
  // put before the kernel's source.
  std::vector<std::string> source_lines;
};

// Translates `given` (nvcc's spelling, or the host compiler's for options nvcc does
// not know) for `compiler` and `target`. Pure: no compiler is run. A flag that needs
// a value it lacks, an -arch other than the target's, and on Metal any flag it cannot
// honour are user errors naming the flag and the target.
TranslatedFlags translate_compile_flags(const std::vector<std::string>& given, FlagCompiler compiler,
                                        const Target& target);

// Logs what was dropped (debug level) and asks the compiler whether it takes the
// unread flags (a compile of an empty program, remembered per process): a flag it
// refuses is a user error naming the flag, the target and what the compiler said.
void verify_compile_flags(const TranslatedFlags& t, FlagCompiler compiler, const Target& target);

}  // namespace tl
