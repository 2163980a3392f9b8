// Shared-memory addresses as the PTX instructions that read or fill shared memory
// (ldmatrix, cp.async) take them: a 32-bit offset in the shared window on the
// GPU, converted once per tile so per-fragment address arithmetic stays 32-bit. In
// emulation there is no shared window, so the "address" is the plain pointer.
#pragma once

namespace tl {

#ifdef TL_EMULATE
using SmemAddr = uintptr_t;
TL_DEVICE SmemAddr smem_addr(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}
#else
using SmemAddr = uint32_t;
TL_DEVICE SmemAddr smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
#endif

}  // namespace tl
