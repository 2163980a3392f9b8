// The emulators' runtime entries of the disk cache (device/emu/emu_core.h,
// TL_EMU_RUNTIME_SPLIT; docs/design/foundation.md, "Cache"): the parts of the CUDA
// and Metal shims that do not depend on the kernel, compiled once per host
// compiler, flag set and header version into an object that every emulated
// kernel links, beside the shims' header precompiled by g++.
#pragma once

#include <string>
#include <vector>

#include "tl/compile.h"

namespace tl {

// Compiles the emulated kernel dir/`source` into dir/kernel.so with the emulator's
// `flags` and the user's (opt.compile_flags), against the shims `header`
// (force-included) and whatever `more` their prelude adds: through the runtime entry
// when the disk cache is on, else (or when that fails: an entry damaged since this
// process checked it, with a warning) against the headers alone. `identity` names
// everything else the entry's build depends on (the compiler's build, the device
// headers' digest) for its key.
void compile_emulated(const CompileOptions& opt, const std::string& identity, const std::string& dir,
                      const std::string& source, std::vector<std::string> flags, const std::string& header,
                      const std::string& more);

}  // namespace tl
