// The register-fragment side of the tile-op contract (tile_op.h's OpInfo). An op
// that runs on register fragments (`regs` in tile_ops.def) defines, in
// src/ops/<op>_registers.cpp:
//   infer_<op>_fragments   what it asks of the layouts of the fragments it touches:
//                          ties, seeds, per-row / per-column vectors, or a demotion to
//                          shared memory with the reason (phase 1 of lower_fragments);
//   lower_<op>_registers   its per-thread code over the registers each thread holds
//                          once the layouts are solved (phase 3).
// lower_fragments is the generic driver of both: its Collector (collect.cpp) notes
// where each fragment is used and hands every tile op to its infer_<op>_fragments; its
// Lowerer (lower.cpp) hands every tile op that touches a register fragment to its
// lower_<op>_registers. An op without a register lowering keeps the fragments it
// touches block-wide in shared memory (infer_none_fragments).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ops/tile_op.h"
#include "transform/lower_fragments/plan.h"

namespace tl::fragments {

// What phase 1 shows a tile op of the kernel around it. The Collector implements it.
class OpUses {
 public:
  explicit OpUses(Analysis& analysis) : a(analysis) {}
  OpUses(const OpUses&) = delete;
  OpUses& operator=(const OpUses&) = delete;
  virtual ~OpUses() = default;

  Analysis& a;  // the constraints collected so far, which the op adds to

  // Whether the op sits inside a T.Parallel nest (the element form of an atomic).
  virtual bool in_parallel_loop() const = 0;
  // An element access of fragment `b` at `idx` inside that nest, taken as a load or
  // store written there is.
  virtual void element_access(const Buffer& b, const std::vector<Expr>& idx) = 0;
  // The values of the pure index-typed lets around the op (`k0 = j * 16`): what a K
  // slice's start is a multiple of.
  virtual const std::map<const VarNode*, Expr>& lets() const = 0;

  bool frag(const BufferRegion& r) const { return a.candidate(r.buffer); }
  // Every fragment the op names goes to shared memory, for `why` at the op's line.
  void demote_all(const TileOpNode* op, const std::string& why) {
    for (const BufferRegion& r : op->regions) a.demote(r.buffer, at(op->span, why));
  }
};

// ---- what the register lowerings share (registers.cpp)

// Both sides of a copy have the same non-unit constant extents, in order.
bool pairs_exactly(const BufferRegion& s, const BufferRegion& d);

// The other side's index for fragment index `idx`: non-unit dims pair in order,
// counted from the start of the fragment's region.
std::vector<Expr> paired_index(const BufferRegion& frag, const BufferRegion& other, const std::vector<Expr>& idx);

// Whether fragment index `idx` lies in the region `frag` of its fragment.
Expr in_region(const BufferRegion& frag, const std::vector<Expr>& idx);

// The widest run (<= `run` elements along the last dim) that region `mem` can move
// as one aligned vector.
// Packed sub-byte elements (float4_e2m1fn, int4) move element by element, except
// between two packed buffers of one dtype (`packed`): a run of w elements from an
// even one on is w / 2 whole bytes (lower_mem_copy).
int64_t vector_width(const BufferRegion& mem, int64_t run, int64_t bytes, bool packed = false);

}  // namespace tl::fragments
