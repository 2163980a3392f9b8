// Guards every global-memory access that may fall outside its tensor: stores are
// skipped and loads read 0 there, or the tensor's T.annotate_safe_value (the function
// attribute `safe_value.<tensor>`). The simplifier then removes the guards the
// tile sizes prove unnecessary. Off with pass config tl.disable_safe_memory_legalize.
#pragma once

#include "ir/ir.h"

namespace tl {

PrimFunc legalize_safe_memory(const PrimFunc& f);

}  // namespace tl
