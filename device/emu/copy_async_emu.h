// Emulated twins of cp.async, cp.async.commit_group and cp.async.wait_group for the
// CUDA emulator (device/cuda/copy_async.cuh includes it under TL_EMULATE). Each
// thread keeps its own groups, as on the GPU: a copy is queued when issued, a
// commit closes the queued copies into a group, and a wait lands every committed
// group but the N newest. Landing copies at the latest moment the GPU may land
// them makes a missing or short wait show up as stale data in emulation. The race
// detector sees each copy's shared-memory write twice: when it is issued (against
// readers that still use the buffer) and when it lands (against readers that do
// not wait for it).
#pragma once

#include <cstring>

namespace tl::emu {

TL_EMU_FN void cp_async(void* smem_dst, const void* gmem_src, int bytes, bool pred);
TL_EMU_FN void cp_async_commit();
TL_EMU_FN void cp_async_wait(int n);

#if TL_EMU_DEFINITIONS
// Every 2 bytes: each element of 16-bit and wider types (a race on an 8-bit tile
// still shows on its even elements), at half the cost of every byte.
inline void note_async_write(unsigned char* dst, int bytes) {
  for (int i = 0; i < bytes; i += 2) note_shared(dst + i, true, "|tl::cp_async");
}

TL_EMU_FN void cp_async(void* smem_dst, const void* gmem_src, int bytes, bool pred) {
  AsyncCopy c{static_cast<unsigned char*>(smem_dst), pred ? static_cast<const unsigned char*>(gmem_src) : nullptr,
              bytes};
  note_async_write(c.dst, bytes);
  block_state().async_copies[size_t(thread_rank())].open.push_back(c);
}

TL_EMU_FN void cp_async_commit() {
  AsyncCopies& q = block_state().async_copies[size_t(thread_rank())];
  q.committed.push_back(std::move(q.open));
  q.open.clear();
}

TL_EMU_FN void cp_async_wait(int n) {
  AsyncCopies& q = block_state().async_copies[size_t(thread_rank())];
  while (q.committed.size() > size_t(n)) {
    for (const AsyncCopy& c : q.committed.front()) {
      if (c.src)
        memcpy(c.dst, c.src, size_t(c.bytes));
      else
        memset(c.dst, 0, size_t(c.bytes));
      note_async_write(c.dst, c.bytes);
    }
    q.committed.pop_front();
  }
}

#endif  // TL_EMU_DEFINITIONS

}  // namespace tl::emu
