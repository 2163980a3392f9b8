// Producer/consumer warp specialization of the pipelines pipeline_loops marked
// (kWsPipelineAttr), after plan_barriers on CUDA; plan_shared_memory then places the
// tiles of both parts.
#pragma once

#include "ir/ir.h"

namespace tl {

// A kernel of T threads with a marked pipeline gets T + 128: its own threads run
// the kernel as before (the consumers: T.ws-style region [0, T), whose block
// barriers become named barriers), the extra warpgroup (region [T, T + 128)) gives
// its registers back (setmaxnreg) and one of its threads runs the producer's loop
// of TMA copies. The pipeline's mbarriers are initialized before the two part.
PrimFunc warp_specialize(const PrimFunc& f);

}  // namespace tl
