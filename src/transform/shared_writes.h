// Who writes each shared buffer: ordinary thread stores (the generic proxy) or TMA
// (the async proxy). A tile that only TMA fills needs no generic -> async proxy
// fence before the tensor cores read it (docs/design/hopper.md, "The wgmma proxy
// fence"); a tile that threads write does, and so do bytes that TMA fills after
// threads wrote them under another buffer's name (plan_shared_memory).
#pragma once

#include <set>

#include "ir/ir.h"

namespace tl {

struct SharedWrites {
  std::set<const BufferNode*> generic;  // written by a thread store, a tile op, cp.async, or an address not read-only
  std::set<const BufferNode*> tma;      // the destination of a tl::tma_load / tl::tma_load_multicast

  // Whether `b` is written, and only by TMA.
  bool tma_only(const BufferNode* b) const { return tma.count(b) && !generic.count(b); }
};

// The writes of every buffer in `s`. Conservative: any use of a buffer other than a
// load, an address marked read-only (AddressAccess::Read / ReadInFlight), a read
// region of a tile op or the shared side of a TMA call counts as a generic write.
SharedWrites shared_writes(const Stmt& s);

}  // namespace tl
