// The phases of lower_fragments (src/transform/lower_fragments.cpp) and the plans
// they hand each other. For each T.Kernel, in order:
//   1. collect.cpp    what each use of a fragment asks of its layout (Analysis); each
//                     tile op says what it asks (ops/registers.h, infer_<op>_fragments);
//      analyze.cpp    runs the collection for a kernel: reducers, replicated scalar
//                     fragments, and the FullRow retry of gemms whose rows conflict;
//   2. solve.cpp      a layout for each class of tied fragments, demoting those no
//                     layout fits (Solution), and the layouts of the shared gemm tiles;
//   3. lower.cpp      fragments become per-thread registers, T.Parallel nests loops
//                     over them; the tile ops that touch them lower themselves
//                     (lower_<op>_registers in src/ops/<op>_registers.cpp).
// Solving demotes fragments in the Analysis it is given (the collection is redone
// when a policy changes); the lowering only reads both plans. LayoutFacts
// (lower_fragments.h) runs phases 1 and 2 once per kernel and keeps their result
// (KernelPlan) for the passes before lower_fragments and for phase 3.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "layout/fragment.h"
#include "ops/tile_op.h"
#include "target/target.h"
#include "transform/lower_fragments.h"

namespace tl::fragments {

using BufKey = const BufferNode*;

// The shape of `b` when every dimension is a constant.
inline std::optional<std::vector<int64_t>> const_shape(const Buffer& b) {
  std::vector<int64_t> out;
  for (const Expr& e : b->shape) {
    auto c = as_const_int(e);
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

inline int64_t elem_bytes(DataType t) {
  return std::max<int64_t>(1, t.bits() * t.lanes() / 8);
}

// `why`, prefixed by the user's source line when known.
inline std::string at(const SourceSpan& span, const std::string& why) {
  return span.defined() ? span.str() + ": " + why : why;
}

// ---------------------------------------------------------------- 1. collect

struct GemmUse {
  const TileOpNode* op;
  BufKey a = nullptr, b = nullptr, c = nullptr;  // the fragment operands
};

struct Analysis {
  int64_t threads = 1;  // of the block, or of the T.ws region being collected
  // The threads ({first, count}) that use each fragment: a T.ws region's, or the block's.
  std::map<BufKey, std::pair<int64_t, int64_t>> region_of;
  int64_t threads_of(BufKey k) const {
    auto it = region_of.find(k);
    return it == region_of.end() ? threads : it->second.second;
  }
  const Target* target = nullptr;
  bool wgmma = false;          // register gemms try wgmma first (sm_90a, not disabled)
  bool wgmma_refused = false;  // a register gemm fits mma.sync but not wgmma
  bool sparse_wgmma = false;   // compressed T.gemm_sp tries wgmma.sp first (tl.gemm_sp_wgmma)
  std::map<BufKey, Buffer> candidates;
  std::map<BufKey, std::string> demoted;  // and why (the first reason), for the debug log
  // Fragments that code outside T.Parallel reads or writes (every thread runs it), and
  // fragments that a tile op or a T.Parallel nest uses by their loop variables, or
  // writes. Those of the first kind alone, used otherwise only by a whole T.fill and
  // by loop-invariant reads in T.Parallel, are replicated: every thread keeps its own
  // copy, as TileLang's replicated layout does (replicate_scalar_fragments).
  std::set<BufKey> simt_uses, tile_uses;
  // Fragments read or written at index 0 of every dim inside a T.Parallel loop (the
  // loop's line): per-iteration scalars, replicated like the SIMT-only fragments.
  std::map<BufKey, SourceSpan> loop_scalars;
  std::map<BufKey, Buffer> replicated;
  // Reducers (the fragments T.finalize_reducer names), and those a T.Parallel loop
  // updates at indices that are not its variables (`total[0] += x[i]`): each thread
  // keeps its own partial of every element, which T.finalize_reducer combines across
  // the threads, as TileLang's replicated reducer layout does.
  // A first collection finds partial_updates; the second takes every loop access
  // of those reducers (`out[j] = best[j]` too) as one of the thread's own copy.
  std::set<BufKey> reducers, partial_updates, replicated_reducers;
  // The fragments a T.Parallel nest indexes by all its variables (full), by all but
  // the last (rows: per-row vectors), by the last of two (cols: per-column vectors),
  // and, in a nest of one variable j, 2-d fragments indexed [e, j] with e free of j
  // (col_parents: the nest's vectors are their columns, held whole by each thread).
  struct Loop {
    std::vector<BufKey> full, rows, cols, col_parents;
  };
  std::vector<Loop> loops;
  std::vector<std::pair<BufKey, BufKey>> same, row_of;  // (a, b): a ~ b; (rows, parent)
  std::vector<std::pair<BufKey, BufKey>> col_of;        // (cols, parent): T.reduce over dim 0
  std::map<BufKey, FragmentLayoutPtr> seeds;
  std::map<BufKey, SourceSpan> seed_spans;  // the T.gemm that fixed each seed
  std::map<BufKey, int64_t> narrowest;      // bytes of the narrowest element copied with it
  std::set<BufKey> loaded_from_global;      // fragments a T.copy fills from global memory
  std::vector<GemmUse> gemms;
  // Gemms of tensor-core operands into an accumulator dtype no instruction takes
  // (bfloat16, say): they run as loops; the message says so.
  std::vector<std::pair<const TileOpNode*, std::string>> off_tensor_cores;
  // Shared tiles that go to global memory whole (T.copy or T.atomic_add, and the TMA
  // stores they became): laid out in 128-byte swizzled column blocks (sm_90).
  std::map<BufKey, Buffer> store_tiles;
  // Gemms whose default (Square) policy is taken as FullRow, and the fragments of
  // tiles whose per-row vectors found the rows split differently (solve sets it).
  std::set<const TileOpNode*> full_row;
  std::set<BufKey> row_split_conflicts;
  std::set<const TileOpNode*> a_wants_full_row;  // register A refused only for the warp split

  int64_t policy(const TileOpNode* op) const { return full_row.count(op) ? 1 : attr_int(op->attrs, "policy", 0); }

  bool candidate(const Buffer& b) const { return candidates.count(b.get()); }
  void demote(const Buffer& b, const std::string& why) {
    if (candidate(b)) demoted.emplace(b.get(), why);
  }
  void note_bytes(const Buffer& frag, const Buffer& peer) {
    if (!candidate(frag)) return;
    int64_t& n = narrowest[frag.get()];
    int64_t b = std::min(elem_bytes(frag->dtype), elem_bytes(peer->dtype));
    n = n ? std::min(n, b) : b;
  }
};

// Adds the constraints of the uses in `body` (a kernel's) to `a`.
void collect(Analysis& a, const Stmt& body);

// The analysis of one kernel: its fragments' constraints, collected with wgmma for
// the register gemms where `wgmma` allows it and fits every one of them, and for the
// compressed T.gemm_sp ones too where `sparse_wgmma` asks for it and they fit.
Analysis analyze_launch(const KernelLaunchNode* op, const Target& target, bool wgmma, bool sparse_wgmma);

// ---------------------------------------------------------------- 2. solve

struct Solution {
  std::map<BufKey, FragmentLayoutPtr> layouts;
};

class UnionFind {
 public:
  BufKey find(BufKey k) {
    auto it = parent_.find(k);
    if (it == parent_.end() || it->second == k) return k;
    return parent_[k] = find(it->second);
  }
  void unite(BufKey a, BufKey b) { parent_[find(a)] = find(b); }

 private:
  std::map<BufKey, BufKey> parent_;
};

// Two gemms fixing different register layouts for fragments one T.Parallel loop or
// T.copy ties together: no demotion resolves it, the kernel has no solution.
struct LayoutConflict {
  SourceSpan span;  // the T.gemm of one of the two
  std::string message;
};

// The layout of every fragment that keeps its registers, or the conflict that leaves
// the kernel without one; demotes (in `a`) the fragments no layout fits.
struct SolveResult {
  Solution solution;
  std::optional<LayoutConflict> conflict;
};
SolveResult try_solve(Analysis& a);
// try_solve, with the conflict a user error.
Solution solve(Analysis& a);

// The shared operand tiles of the register gemms, and the layout each gets.
std::map<BufKey, std::pair<Buffer, SharedTileLayout>> operand_layouts(const Analysis& a, const Solution& s);

// What layout inference decided for one kernel (LayoutFacts::plan): the analysis as
// solving left it (its demotions made), and the solution.
struct KernelPlan {
  Analysis analysis;
  Solution solution;
};

// ---------------------------------------------------------------- 3. lower

// `body` (a kernel's, whose thread is `thread`) with its fragments in registers:
// the plans of `a` and `s`; `cuda` for the CUDA target's paired conversions.
Stmt lower_kernel_body(const Stmt& body, const Analysis& a, const Solution& s, Expr thread, bool cuda);

// What the lowering of a tile op on register fragments reads (ops/registers.h).
struct LowerContext {
  const Analysis& a;
  const Solution& s;
  Expr t;                                // the thread's rank in the block, or in its T.ws region
  int64_t threads;                       // of the block, or of the T.ws region
  bool cuda;                             // 16-bit fragments cast in pairs (tl::cast_pair)
  const std::map<BufKey, Buffer>& regs;  // each register fragment's registers
  // A buffer or region as the lowered kernel has it (shared tiles swizzled,
  // replicated fragments per-thread), its index expressions lowered too.
  std::function<Buffer(const Buffer&)> buffer;
  std::function<BufferRegion(const BufferRegion&)> region;
  // The shared buffers of the kernel that only TMA writes (shared_writes.h): a wgmma
  // reading only those needs no proxy fence.
  const std::set<BufKey>& tma_only;

  const FragmentLayoutPtr& layout(const Buffer& b) const { return s.layouts.at(b.get()); }
  const Buffer& reg(const Buffer& b) const { return regs.at(b.get()); }
};

// The tile ops on register fragments lower themselves (ops/registers.h). A T.copy
// between memories (no register fragment on either side) is dealt to the threads in
// runs (src/ops/copy_registers.cpp); undefined when it does not apply.
Stmt lower_mem_copy(const TileOpNode* op, const LowerContext& ctx);

// Thread `thread` is the first of the threads that hold a row of the 2-d layout `p`
// (the others hold copies of the same per-row values: one of them writes).
Expr row_leader(const FragmentLayout& p, const Expr& thread);

// Whether `e` is a multiple of `n` for every value of its variables (affine forms).
bool divisible(const Expr& e, int64_t n);

inline int64_t elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

inline bool is_const_true(const Expr& e) {
  auto c = as_const_int(e);
  return c && *c != 0;
}

}  // namespace tl::fragments
