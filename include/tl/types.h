// Element types of host tensors that C++ has no type for: half_t, bfloat16_t and the
// fp8 / e8m0 minifloats, bit-compatible with what kernels read and write and rounding
// like the GPU (and numpy / ml_dtypes). They are the cpu target's own types
// (device/cpu/types.h), installed under tl/detail/device so that one definition serves
// generated kernels and host code.
#pragma once

#include "tl/detail/device/cpu/types.h"
