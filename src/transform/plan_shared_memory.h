// Where each block-scope buffer of a CUDA kernel lives in its dynamic shared memory.
#pragma once

#include <map>

#include "ir/attrs.h"
#include "ir/ir.h"
#include "target/target.h"

namespace tl {

// Bytes each shared tile that a tl::tma_load writes or a tl::tma_store reads must be
// aligned to: 128, or the whole swizzle pattern when it is swizzled (the hardware
// swizzles by shared-memory address).
std::map<const BufferNode*, int64_t> tma_tile_alignment(const Stmt& body);

// Plans every kernel's shared memory (docs/design/cuda_lowering.md, "Shared memory
// reuse"): a buffer whose uses all come after another's last use (the epilogue tile
// after the pipeline's stages) may take the other's bytes, with a block barrier
// before its first use. Kernels with T.ws regions written by hand are carved
// without reuse, and so is every kernel when `reuse` is false (pass config
// tl.disable_shared_memory_reuse). A kernel that needs more than one block of
// `target` may have is a user error naming the biggest buffers.
PrimFunc plan_shared_memory(const PrimFunc& f, const Target& target, bool reuse = true);

}  // namespace tl
