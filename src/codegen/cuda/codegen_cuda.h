// CUDA C++ generation: one `extern "C" __global__` kernel per T.Kernel block of a
// PrimFunc, all in one translation unit compiled by NVRTC against
// device/cuda/tl_cuda.cuh.
#pragma once

#include "ir/ir.h"
#include "runtime/artifact.h"  // CudaLaunchInfo
#include "runtime/signature.h"

namespace tl {

// The source and what the runtime needs to launch each of its kernels.
struct CudaSource {
  std::string code;
  std::vector<CudaLaunchInfo> launches;  // one per kernel, in launch order
};

// `kernels`: the lowered parts of one function (split_kernels), in launch order.
CudaSource codegen_cuda(const std::vector<PrimFunc>& kernels, const KernelSignature& sig);

}  // namespace tl
