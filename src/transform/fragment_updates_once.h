// The cpu target runs a kernel that reads thread indices one fiber per thread, with
// each fragment one array of the block (codegen/cpu). A fragment element that code
// outside T.Parallel writes (`run_sum[0] = run_sum[0] * c + s[0]`) is, on a GPU, one
// copy per thread, each updated once; on that one array every fiber would apply the
// update again. This pass makes such a store a block op, which the cpu code generator
// runs on thread 0 between two barriers, so it is applied once.
//
// Left per thread: stores whose indices or value read a thread index (each thread
// writes its own element or its own value), and stores under control flow that a
// thread index decides (a barrier there would not be reached by every thread).
#pragma once

#include "ir/ir.h"

namespace tl {

PrimFunc fragment_updates_once(const PrimFunc& f);

}  // namespace tl
