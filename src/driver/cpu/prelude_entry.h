// The host compiler's prelude entries of the disk cache (docs/design/foundation.md,
// "Cache"): the headers every kernel of a kind includes, precompiled by g++ once per
// host compiler, flag set and header version, and for the emulators also the parts
// of the CUDA and Metal shims that do not depend on the kernel (device/emu/emu_core.h,
// TL_EMU_RUNTIME_SPLIT), compiled into an object that every emulated kernel links.
#pragma once

#include <string>
#include <vector>

#include "tl/compile.h"

namespace tl {

// How the host compiler builds an emulated kernel: the emulator's flags, the shims'
// header it force-includes, and what the prelude adds after it.
struct EmulatorBuild {
  std::vector<std::string> flags;
  std::string header, more;
};

// Compiles the emulated kernel dir/`source` into dir/kernel.so with the emulator's
// flags and the user's (opt.compile_flags, translated for the host compiler by
// driver/compile_flags.h), against its shims: through the prelude
// entry when the disk cache is on, else (or when that fails: an entry damaged since
// this process checked it, with a warning) against the headers alone. `identity`
// names everything else the entry's build depends on (the compiler's build, the
// device headers' digest) for its key.
void compile_emulated(const CompileOptions& opt, const std::string& identity, const std::string& dir,
                      const std::string& source, const EmulatorBuild& build);

// Compiles the cpu-target kernel dir/`source` (which includes tl_cpu.h) into
// dir/kernel.so with the user's flags: with g++ and the disk cache on, against the
// entry's precompiled tl_cpu.h (0.9 -> 0.4 s for the quickstart GEMM), else as is.
void compile_cpu(const CompileOptions& opt, const std::string& identity, const std::string& dir,
                 const std::string& source);

// Builds the prelude entry compile_emulated / compile_cpu would use, if it is missing
// (the autotuner prepares it before timing compiles against a limit).
void prepare_emulated(const CompileOptions& opt, const std::string& identity, const EmulatorBuild& build);
void prepare_cpu(const CompileOptions& opt, const std::string& identity);

}  // namespace tl
