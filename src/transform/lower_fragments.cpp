// Layout inference for fragments, then their lowering into per-thread registers.
//
// 1. Collect: every fragment of a T.Kernel with a constant shape is a candidate.
//    Each use adds a constraint: T.Parallel nests tie the fragments they index by
//    their loop variables to one layout (and per-row vectors indexed by the
//    leading variables to the rows of it; a fragment indexed through T.reshape, at
//    the row-major position of the variables in a nest of as many elements, is
//    covered whole too, and the nest then runs over its registers); T.reduce over
//    the last dim makes the destination the rows of the source; a fragment-to-fragment T.copy ties both;
//    T.gemm fixes its accumulator to the mma layout. A use of any other shape
//    (an index that is not the loop variable, an op without a register lowering)
//    keeps that fragment block-wide in shared memory ("demoted").
// 2. Solve: union the tied fragments into classes; a class takes its seed (the
//    gemm layout), else the rows of its parent class, else the default blocked
//    layout. Conflicts demote the class; repeat until nothing changes.
// 3. Rewrite: fragments become register arrays; their ops become unrolled
//    per-thread loops over the registers (src/layout/fragment.h says which
//    logical element each register holds); T.gemm calls the register-accumulator
//    templates of device/cuda/gemm_sm80.cuh (mma.sync) or, on sm_90a when every
//    register gemm of the kernel splits into whole warpgroups, gemm_sm90.cuh
//    (wgmma), and lays out its shared operands as those templates read them.
#include "transform/lower_fragments.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "arith/simplify.h"
#include "ir/structural.h"
#include "ir/visitor.h"
#include "layout/fragment.h"
#include "layout/layout.h"
#include "ops/extent_util.h"
#include "ops/tile_op.h"
#include "support/logging.h"
#include "transform/lower_explicit_hopper.h"
#include "transform/lower_tile_ops.h"
#include "transform/tma_copy.h"

namespace tl {
namespace {

using BufKey = const BufferNode*;

std::optional<std::vector<int64_t>> const_shape(const Buffer& b) {
  std::vector<int64_t> out;
  for (const Expr& e : b->shape) {
    auto c = as_const_int(e);
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

// The region covers the last two dims of its buffer whole, one index of the others.
bool covers_tile(const BufferRegion& r) {
  size_t n = r.ranges.size();
  if (n < 2) return false;
  for (size_t d = 0; d < n; ++d) {
    if (d + 2 < n) {
      if (!is_const_one(r.ranges[d].extent)) return false;
      continue;
    }
    auto mn = as_const_int(r.ranges[d].min), ex = as_const_int(r.ranges[d].extent),
         sh = as_const_int(r.buffer->shape[d]);
    if (!mn || *mn != 0 || !ex || !sh || *ex != *sh) return false;
  }
  return true;
}

int64_t elem_bytes(DataType t) {
  return std::max<int64_t>(1, t.bits() * t.lanes() / 8);
}

// A wgmma operand may also be a run of whole column blocks of a tile in the wgmma
// layout (Layout::wgmma_swizzle): rows whole, the last dim sliced at a block boundary
// to a width that keeps the tile's swizzle. Those blocks are a tile in that layout
// themselves (the descriptor starts at the first), so B[:, 256:512] of a 512-wide
// tile is the right half's operand.
bool covers_column_blocks(const BufferRegion& r) {
  size_t n = r.ranges.size();
  if (n < 2) return false;
  for (size_t d = 0; d + 2 < n; ++d)
    if (!is_const_one(r.ranges[d].extent)) return false;
  auto rmin = as_const_int(r.ranges[n - 2].min), rex = as_const_int(r.ranges[n - 2].extent);
  auto rows = as_const_int(r.buffer->shape[n - 2]), cols = as_const_int(r.buffer->shape[n - 1]);
  auto c0 = as_const_int(r.ranges[n - 1].min), w = as_const_int(r.ranges[n - 1].extent);
  if (!rmin || *rmin != 0 || !rex || !rows || *rex != *rows || !cols || !c0 || !w || *w <= 0) return false;
  int64_t e = elem_bytes(r.buffer->dtype);
  auto whole = Layout::wgmma_swizzle(*cols, e), part = Layout::wgmma_swizzle(*w, e);
  return whole && part && part->block_cols() == whole->block_cols() && *c0 % whole->block_cols() == 0 &&
         *c0 + *w <= *cols;
}

// Whether `e` is a multiple of `n` for every value of its variables (affine forms).
bool divisible(const Expr& e, int64_t n) {
  if (n == 1) return true;
  if (auto c = as_const_int(e)) return *c % n == 0;
  if (auto* b = e.as<BinaryNode>()) {
    switch (b->op) {
      case BinaryOp::Add:
      case BinaryOp::Sub:
        return divisible(b->a, n) && divisible(b->b, n);
      case BinaryOp::Mul:
        return divisible(b->a, n) || divisible(b->b, n);
      case BinaryOp::FloorDiv: {  // (q * n * d) / d = q * n, as in k * block_K // e_factor
        auto d = as_const_int(b->b);
        return d && *d > 0 && divisible(b->a, n * *d);
      }
      default:
        return false;
    }
  }
  if (auto* c = e.as<CastNode>()) return c->value.dtype().is_integer() && divisible(c->value, n);
  return false;
}

// `why`, prefixed by the user's source line when known.
std::string at(const SourceSpan& span, const std::string& why) {
  return span.defined() ? span.str() + ": " + why : why;
}

struct GemmUse {
  const TileOpNode* op;
  BufKey a = nullptr, b = nullptr, c = nullptr;  // the fragment operands
};

// ---------------------------------------------------------------- analysis

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
  std::map<BufKey, Buffer> candidates;
  std::map<BufKey, std::string> demoted;  // and why (the first reason), for the debug log
  // Fragments that code outside T.Parallel reads or writes (every thread runs it), and
  // fragments that a tile op or a T.Parallel nest uses by their loop variables, or
  // writes. Those of the first kind alone, used otherwise only by a whole T.fill and
  // by loop-invariant reads in T.Parallel, are replicated: every thread keeps its own
  // copy, as TileLang's replicated layout does (replicate_scalar_fragments).
  std::set<BufKey> simt_uses, tile_uses;
  std::map<BufKey, Buffer> replicated;
  // Reducers (the fragments T.finalize_reducer names), and those a T.Parallel loop
  // updates at indices that are not its variables (`total[0] += x[i]`): each thread
  // keeps its own partial of every element, which T.finalize_reducer combines across
  // the threads, as TileLang's replicated reducer layout does.
  // A first collection finds partial_updates; the second takes every loop access
  // of those reducers (`out[j] = best[j]` too) as one of the thread's own copy.
  std::set<BufKey> reducers, partial_updates, replicated_reducers;
  struct Loop {
    std::vector<BufKey> full, rows;
  };
  std::vector<Loop> loops;
  std::vector<std::pair<BufKey, BufKey>> same, row_of;  // (a, b): a ~ b; (rows, parent)
  std::map<BufKey, FragmentLayoutPtr> seeds;
  std::map<BufKey, SourceSpan> seed_spans;  // the T.gemm that fixed each seed
  std::map<BufKey, int64_t> narrowest;      // bytes of the narrowest element copied with it
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

class Collector : public IRVisitor {
 public:
  explicit Collector(Analysis& a) : a_(a) {}
  using IRVisitor::visit;

  // A T.ws region: its ops and fragments are spread over its threads only.
  void visit(const AttrNode* op) override {
    auto [lo, count] = warp_group_range(op);
    if (count == 0) return IRVisitor::visit(op);
    Scoped<int64_t> in_region(region_lo_, lo), threads(a_.threads, count);
    IRVisitor::visit(op);
  }

  // A fragment's registers belong to the threads of one region.
  void note_region(const Buffer& b, const SourceSpan& span) {
    if (!a_.candidate(b)) return;
    std::pair<int64_t, int64_t> here{region_lo_, a_.threads};
    auto [it, fresh] = a_.region_of.emplace(b.get(), here);
    if (fresh || it->second == here) return;
    auto threads = [](std::pair<int64_t, int64_t> r) {
      return str_cat("threads [", r.first, ", ", r.first + r.second, ")");
    };
    throw_user_error(span,
                     str_cat("fragment '", b->name, "' is used by ", threads(it->second), " and by ", threads(here),
                             "; a fragment's registers belong to the threads of one T.ws region (or of the "
                             "whole block): use it, T.clear included, inside one `with T.ws(...)` only"));
  }

  void visit(const AllocateNode* op) override {
    if (op->buffer->scope == Scope::Fragment && const_shape(op->buffer)) a_.candidates[op->buffer.get()] = op->buffer;
    IRVisitor::visit(op);
  }

  void visit(const BufferLoadNode* op) override {
    note_use(op->buffer, op->indices, false);
    classify(op->buffer, op->indices);
    IRVisitor::visit(op);
  }
  void visit(const BufferStoreNode* op) override {
    note_use(op->buffer, op->indices, true);
    classify(op->buffer, op->indices);
    IRVisitor::visit(op);
  }

  // Analysis::simt_uses / tile_uses.
  void note_use(const Buffer& b, const std::vector<Expr>& idx, bool store) {
    if (!a_.candidate(b)) return;
    if (!loop_) {
      a_.simt_uses.insert(b.get());
      return;
    }
    if (partial_update(b, idx)) {
      a_.simt_uses.insert(b.get());
      a_.partial_updates.insert(b.get());
      return;
    }
    bool by_loop_var = false;
    for (const Expr& e : idx)
      for (const VarNode* v : vars_) by_loop_var = by_loop_var || reads_var(e, v);
    if (store || by_loop_var) a_.tile_uses.insert(b.get());
  }

  // An access in a T.Parallel loop to a reducer at indices other than those a layout
  // follows (`total[0]`, `best[j]` in a loop over i, j): the iteration combines into
  // the running thread's own partial.
  bool partial_update(const Buffer& b, const std::vector<Expr>& idx) const {
    if (!loop_ || !a_.reducers.count(b.get())) return false;
    return a_.replicated_reducers.count(b.get()) || extents_.empty() || loop_access(b, idx) == Access::Other;
  }

  // How a T.Parallel nest with constant extents indexes a fragment: by all its
  // variables (or through T.reshape), by all but the last (a per-row vector), or else.
  enum class Access { Full, Row, Other };
  Access loop_access(const Buffer& b, const std::vector<Expr>& idx) const {
    auto shape = *const_shape(b);
    auto is_var = [&](size_t i) {
      auto* v = idx[i].as<VarNode>();
      return v && v == vars_[i];
    };
    bool full = idx.size() == vars_.size() && shape == extents_;
    for (size_t i = 0; full && i < idx.size(); ++i) full = is_var(i);
    if (full) return Access::Full;
    bool row = vars_.size() >= 2 && idx.size() == vars_.size() - 1 &&
               shape == std::vector<int64_t>(extents_.begin(), extents_.end() - 1);
    for (size_t i = 0; row && i < idx.size(); ++i) row = is_var(i);
    if (row) return Access::Row;
    return reshaped(shape, idx) ? Access::Full : Access::Other;
  }

  void visit(const ForNode* op) override {
    if (op->for_kind != ForKind::Parallel || loop_) return IRVisitor::visit(op);
    // A nest that writes only registers runs whole on every thread (per_thread_nest):
    // thread-level code, whose fragment reads are per-thread uses.
    if (writes_only_registers(op->body)) return IRVisitor::visit(op);
    std::vector<const ForNode*> nest{op};
    while (auto* inner = nest.back()->body.as<ForNode>()) {
      if (inner->for_kind != ForKind::Parallel) break;
      nest.push_back(inner);
    }
    bool ok = true;
    std::vector<int64_t> extents;
    for (const ForNode* f : nest) {
      auto mn = as_const_int(f->min), ex = as_const_int(f->extent);
      ok = ok && mn && *mn == 0 && ex;
      vars_.push_back(f->var.node());
      loop_vars_.push_back(f->var);
      extents.push_back(ex ? *ex : -1);
    }
    Analysis::Loop loop;
    loop_ = &loop;
    loop_span_ = op->span;
    extents_ = ok ? extents : std::vector<int64_t>{};
    visit(nest.back()->body);
    loop_ = nullptr;
    vars_.clear();
    loop_vars_.clear();
    if (loop.full.empty())
      for (BufKey r : loop.rows)
        a_.demoted.emplace(r, at(op->span,
                                 "indexed by the leading variables of a T.Parallel loop that no register "
                                 "fragment covers"));
    a_.loops.push_back(std::move(loop));
  }

  // A store TMA can take from a shared tile: the tile is stored whole to a global
  // region (T.copy, or added by T.atomic_add), or already by tl::tma_store /
  // tl::tma_reduce_add (lower_tma_stores ran): every pass sees the same tiles.
  void note_store_tile(const Buffer& b) {
    auto sh = const_shape(b);
    if (!a_.target->has_tma() || !is_shared(b) || b->layout || !sh || sh->size() != 2 || (*sh)[0] % 8 != 0 ||
        (*sh)[0] > 256)
      return;
    a_.store_tiles.emplace(b.get(), b);
  }

  void visit(const CallNode* op) override {
    IRVisitor::visit(op);
    bool load = false;
    Buffer b = tma_call_tile(op, &load);
    if (b.defined() && !load) note_store_tile(b);
  }

  void visit(const TileOpNode* op) override {
    for (const BufferRegion& r : op->regions) {
      note_region(r.buffer, op->span);
      // (Finalizing a reducer, or copying one out, suits a replicated one too.)
      bool finalize = op->op == TileOpKind::Reduce && attr_int(op->attrs, "finalize", 0);
      bool copy_out = op->op == TileOpKind::Copy && &r == &op->regions[0] && a_.reducers.count(r.buffer.get()) &&
                      (op->regions[1].buffer->scope == Scope::Global || is_shared(op->regions[1].buffer));
      if (a_.candidate(r.buffer) && !(op->op == TileOpKind::Fill && covers_whole(r)) && !finalize && !copy_out)
        a_.tile_uses.insert(r.buffer.get());
    }
    if (op->regions.size() == 2) {
      const BufferRegion &s = op->regions[op->op == TileOpKind::Atomic ? 1 : 0],
                         &d = op->regions[op->op == TileOpKind::Atomic ? 0 : 1];
      bool whole = op->op == TileOpKind::Copy || (op->op == TileOpKind::Atomic && op->args.empty());
      if (whole && d.buffer->scope == Scope::Global && covers_whole(s)) note_store_tile(s.buffer);
    }
    auto frag = [&](const BufferRegion& r) { return a_.candidate(r.buffer); };
    auto demote_all = [&](const std::string& why) {
      for (const BufferRegion& r : op->regions) a_.demote(r.buffer, at(op->span, why));
    };
    switch (op->op) {
      case TileOpKind::Fill:
        if (frag(op->regions[0]) && !covers_whole(op->regions[0])) demote_all("T.fill of part of a fragment");
        break;
      case TileOpKind::Copy: {
        const BufferRegion &s = op->regions[0], &d = op->regions[1];
        if (!frag(s) && !frag(d)) break;
        // Part of a fragment goes to or from memory by the registers inside the part
        // (Lowerer::lower_copy); between two fragments, only whole ones pair.
        if (!pairs_exactly(s, d) || (frag(s) && frag(d) && (!covers_whole(s) || !covers_whole(d)))) {
          demote_all("T.copy between parts of fragments, or of regions whose extents do not pair up");
          break;
        }
        if (frag(s) && frag(d)) {
          if (*const_shape(s.buffer) == *const_shape(d.buffer))
            a_.same.push_back({s.buffer.get(), d.buffer.get()});
          else
            demote_all("T.copy between fragments of different shapes");
        }
        a_.note_bytes(s.buffer, d.buffer);
        a_.note_bytes(d.buffer, s.buffer);
        break;
      }
      case TileOpKind::Gemm:
        gemm(op);
        break;
      case TileOpKind::Atomic: {
        // dst (memory) <- value: a whole register fragment (region form), or one
        // element of it inside a T.Parallel loop (element form).
        if (frag(op->regions[0])) {
          demote_all("an atomic update of a fragment");
          break;
        }
        if (op->regions.size() < 2 || !frag(op->regions[1])) break;
        const BufferRegion& v = op->regions[1];
        bool element = true;
        for (const Range& r : v.ranges) element = element && is_const_one(r.extent);
        if (element && loop_) {
          std::vector<Expr> idx;
          for (const Range& r : v.ranges) idx.push_back(r.min);
          classify(v.buffer, idx);
        } else if (!covers_whole(v) || !pairs_exactly(v, op->regions[0])) {
          demote_all("an atomic whose value is part of a fragment");
        }
        break;
      }
      case TileOpKind::Reduce: {
        const BufferRegion &s = op->regions[0], &d = op->regions[1];
        if (attr_int(op->attrs, "finalize", 0)) break;  // in place: the reducer's layout is its loops'
        std::string kind = attr_string(op->attrs, "kind");
        bool shuffled = kind == "sum" || kind == "max" || kind == "min" || kind == "abssum" || kind == "absmax";
        if (!frag(s) && !frag(d)) break;
        if (frag(s) && frag(d) && shuffled && covers_whole(s) && covers_whole(d) && s.buffer.ndim() == 2 &&
            d.buffer.ndim() == 1 && attr_int(op->attrs, "dim", -1) == 1 &&
            d.buffer->shape[0].same_as(d.buffer->shape[0]) &&
            *as_const_int(d.buffer->shape[0]) == *as_const_int(s.buffer->shape[0])) {
          a_.row_of.push_back({d.buffer.get(), s.buffer.get()});
        } else {
          demote_all("T.reduce_" + kind + " other than over dim 1 of a whole 2-d fragment into a 1-d one");
        }
        break;
      }
      default:
        demote_all(str_cat("T.", op_info(op->op).name, " has no register lowering"));
        break;
    }
    // Regions are not indexed accesses: do not classify them as loads.
  }

 private:
  // Both sides of a copy have the same non-unit constant extents, in order.
  static bool pairs_exactly(const BufferRegion& s, const BufferRegion& d) {
    std::vector<int64_t> a, b;
    for (const Expr& e : s.extents()) {
      auto c = as_const_int(e);
      if (!c) return false;
      if (*c != 1) a.push_back(*c);
    }
    for (const Expr& e : d.extents()) {
      auto c = as_const_int(e);
      if (!c) return false;
      if (*c != 1) b.push_back(*c);
    }
    return a == b;
  }

  void gemm(const TileOpNode* op) {
    const BufferRegion &a = op->regions[0], &b = op->regions[1], &c = op->regions[2];
    GemmUse use{op};
    auto fail = [&](const std::string& why) {
      log(LogLevel::Debug,
          str_cat(op->span.defined() ? op->span.str() + ": " : "", "T.gemm takes the shared-memory path: ", why));
      for (const BufferRegion& r : op->regions)
        a_.demote(r.buffer, at(op->span, "T.gemm takes the shared-memory path: " + why));
    };
    if (!a_.candidate(c.buffer)) return fail("the accumulator is not a register fragment");
    use.c = c.buffer.get();
    if (a_.candidate(a.buffer)) use.a = a.buffer.get();
    if (a_.candidate(b.buffer)) use.b = b.buffer.get();
    // tfloat32 operands are float32 storage the tensor cores read as tf32, as float32 ones are.
    auto operand = [](DataType t) { return t == dtype::TFloat32 ? DataType(dtype::Float32) : t; };
    DataType in = operand(a.buffer->dtype), in_b = operand(b.buffer->dtype);
    if (!a_.target->has_mma_sync() || a_.threads % 32 != 0)
      return fail("the target has no mma.sync or the block is not whole warps");
    // mma.sync: f16/bf16 and tf32 (float32 operands) into float32, f16 also into
    // float16, int8/uint8 into int32, and from sm_89 fp8 e4m3fn/e5m2 (A and B may
    // differ) into float32. wgmma takes the same pairs.
    auto is_fp8 = [](DataType t) { return t == dtype::Float8E4M3FN || t == dtype::Float8E5M2; };
    bool half = in == dtype::Float16 || in == dtype::BFloat16;
    bool tf32 = in == dtype::Float32, byte = in == dtype::Int8 || in == dtype::UInt8;
    bool fp8 = is_fp8(in) && is_fp8(in_b) && a_.target->sm_version() >= 89;
    DataType acc = byte ? dtype::Int32 : dtype::Float32;
    bool f16_acc = in == dtype::Float16 && c.buffer->dtype == dtype::Float16;
    bool operands_fit = (half || tf32 || byte || fp8) && (in_b == in || fp8);
    if (!operands_fit || !(c.buffer->dtype == acc || f16_acc)) {
      std::string why = str_cat("no tensor-core instruction that tilelang emits takes ", in.name(), " x ",
                                b.buffer->dtype.name(), " into a ", c.buffer->dtype.name(),
                                " accumulator (it emits float16/bfloat16/float32 into float32, float16 into float16, "
                                "int8/uint8 into int32 and fp8 into float32 from sm_89; none accumulates in bfloat16)");
      if (operands_fit)
        a_.off_tensor_cores.push_back(
            {op, str_cat(why, "; use a ", acc.name(), " accumulator", in == dtype::Float16 ? " (or float16)" : "")});
      return fail(why);
    }
    if (!covers_whole(c) || c.buffer.ndim() != 2) return fail("the accumulator region is not a whole 2-d fragment");
    bool ta = attr_int(op->attrs, "transpose_A", 0);
    int64_t m = *as_const_int(c.ranges[0].extent), n = *as_const_int(c.ranges[1].extent);
    size_t na = a.ranges.size();
    auto kk = as_const_int(ta ? a.ranges[na - 2].extent : a.ranges[na - 1].extent);
    int64_t k_step = 32 / elem_bytes(in);  // one mma reads 32 bytes of K
    if (!kk || *kk % k_step != 0) return fail(str_cat("K is not a multiple of ", k_step));
    // T.gemm_sp on mma.sp (select_gemm_sp chose it): A holds the kept values, half of
    // K; one m16n8k32 reads 16 of them. Operands from shared memory, no wgmma.
    bool sparse = attr_int(op->attrs, kGemmSpAttr, 0) == kGemmSpCompressed;
    if (sparse) {
      if (!half || c.buffer->dtype != dtype::Float32 || !is_shared(op->regions[3].buffer))
        return fail("mma.sp takes float16/bfloat16 operands into float32, metadata in shared memory");
      use.a = nullptr;
    }
    if (a_.wgmma && !sparse) {
      std::string why = try_wgmma(op, use, m, n, *kk, ta);
      if (why.empty()) return;
      a_.wgmma_refused = true;
      log(LogLevel::Debug, str_cat(op->span.defined() ? op->span.str() + ": " : "",
                                   "T.gemm cannot use wgmma, so the kernel's gemms use mma.sync: ", why));
    }
    int64_t warps = a_.threads / 32;
    int64_t wm = gemm_warp_split(m, n, warps, a_.policy(op));
    if (!wm) return fail("the tile does not split into 16 x 8 mma tiles over the warps");
    if (n / (warps / wm) % 16 != 0) return fail("a warp's N is not a multiple of 16");
    for (const BufferRegion* r : {&a, &b}) {
      if (!(is_shared(r->buffer) || a_.candidate(r->buffer)) || !covers_tile(*r))
        return fail("an operand is not a whole shared-memory tile");
      auto sh = const_shape(r->buffer);
      if (!sh || !Layout::swizzle(sh->back(), elem_bytes(r->buffer->dtype)))
        return fail("an operand's row length has no conflict-free swizzle");
    }
    a_.seeds[c.buffer.get()] = FragmentLayout::accum(m, n, wm, warps / wm);
    a_.seed_spans[c.buffer.get()] = op->span;
    if (use.a) {
      // A from registers: the accumulator layout of an M x K tile, every warp along M.
      bool a_fits = half && !ta && covers_whole(a) && a.buffer.ndim() == 2;
      if (!a_fits || warps / wm != 1) {
        if (a_fits && a_.policy(op) == 0) a_.a_wants_full_row.insert(op);
        a_.demote(a.buffer, at(op->span, str_cat("A of T.gemm comes from registers only for a 16-bit, untransposed "
                                                 "whole 2-d fragment with every warp along M (policy FullRow); here ",
                                                 wm, " x ", warps / wm, " warps")));
        use.a = nullptr;
      } else {
        a_.seeds[a.buffer.get()] = FragmentLayout::accum(m, *kk, wm, 1);
        a_.seed_spans[a.buffer.get()] = op->span;
      }
    }
    if (use.b) a_.demote(b.buffer, at(op->span, "B of T.gemm is read from shared memory"));
    use.b = nullptr;
    a_.gemms.push_back(use);
  }

  // The wgmma form of a register gemm (device/cuda/gemm_sm90.cuh): every dtype
  // pair gemm() accepts (f16/bf16, tf32, fp8 in any mix into float32; int8/uint8
  // into int32; one instruction reads 32 bytes of K), warpgroups splitting C into
  // tiles of whole m64 rows and 16-column multiples, operand rows in whole 32-byte
  // swizzle rows; wgmma transposes only 16-bit operands, so the others must be
  // K-major. Seeds the layouts and returns "" when it fits; else says why, and
  // nothing is recorded.
  std::string try_wgmma(const TileOpNode* op, GemmUse use, int64_t m, int64_t n, int64_t kk, bool ta) {
    const BufferRegion &a = op->regions[0], &b = op->regions[1], &c = op->regions[2];
    DataType in = a.buffer->dtype;
    bool half = in == dtype::Float16 || in == dtype::BFloat16;
    if (a_.threads % kWarpGroupThreads != 0)
      return str_cat("the block's ", a_.threads, " threads are not whole warpgroups of ", kWarpGroupThreads);
    int64_t inst_k = 32 / elem_bytes(in);
    if (kk % inst_k != 0)
      return str_cat("K = ", kk, " is not a multiple of ", inst_k, " (32 bytes of ", in.name(), ")");
    bool tb = attr_int(op->attrs, "transpose_B", 0);
    if (!half && (ta || !tb))
      return str_cat("wgmma reads ", in.name(), " operands only K-major: A [M][K] and B [N][K] (transpose_A=False, ",
                     "transpose_B=True), and this T.gemm has transpose_A=", ta ? "True" : "False",
                     ", transpose_B=", tb ? "True" : "False");
    for (const BufferRegion* r : {&a, &b}) {
      if (!(is_shared(r->buffer) || a_.candidate(r->buffer)) ||
          !(covers_tile(*r) || (is_shared(r->buffer) && covers_column_blocks(*r))))
        return "an operand is not a whole shared-memory tile (or whole swizzle column blocks of one)";
      auto sh = const_shape(r->buffer);
      if (!sh || !Layout::wgmma_swizzle(sh->back(), elem_bytes(r->buffer->dtype)))
        return "an operand's rows are not a multiple of 32 bytes";
    }
    // An N-major B: each warpgroup's columns are whole swizzle rows of B, or lie in one.
    int64_t b_row = 128;
    while (b_row > 32 && (n * elem_bytes(in)) % b_row != 0) b_row /= 2;
    int64_t b_width = b_row / elem_bytes(in);
    int64_t groups = a_.threads / kWarpGroupThreads;
    auto fits = [&](int64_t wg_m) {
      if (groups % wg_m != 0 || m % (64 * wg_m) != 0) return false;
      int64_t wg_n = groups / wg_m;
      if (n % wg_n != 0 || (n / wg_n) % 16 != 0) return false;
      int64_t tn = n / wg_n;
      return tb || tn % b_width == 0 || b_width % tn == 0;
    };
    // As gemm_warp_split, over warpgroups; of equally square splits the one with
    // more warpgroups along M, which keeps each row of C in one warpgroup (row
    // reductions stay in registers, and C can be the A of a register gemm).
    int64_t policy = a_.policy(op);
    int64_t wg_m = split_by_policy(m, n, groups, policy, fits, true);
    if (!wg_m)
      return str_cat("the ", m, " x ", n, " tile does not split into m64 x n16 blocks over ", groups, " warpgroups");
    bool a_in_regs = use.a && half && !ta && covers_whole(a) && a.buffer.ndim() == 2;
    if (a_in_regs && wg_m != groups && policy == 0) a_.a_wants_full_row.insert(op);
    if (a_in_regs && wg_m != groups)
      return "A in registers needs every warpgroup along M (policy FullRow and M a multiple of 64 per warpgroup)";
    a_.seeds[c.buffer.get()] = FragmentLayout::wgmma_accum(m, n, wg_m, groups / wg_m);
    a_.seed_spans[c.buffer.get()] = op->span;
    if (use.a && a_in_regs) {
      a_.seeds[a.buffer.get()] = FragmentLayout::wgmma_accum(m, kk, wg_m, 1);
      a_.seed_spans[a.buffer.get()] = op->span;
    } else if (use.a) {
      a_.demote(a.buffer, at(op->span, "A of a wgmma T.gemm comes from registers only 16-bit, untransposed and whole"));
      use.a = nullptr;
    }
    if (use.b) a_.demote(b.buffer, at(op->span, "B of T.gemm is read from shared memory"));
    use.b = nullptr;
    a_.gemms.push_back(use);
    return "";
  }

  void classify(const Buffer& b, const std::vector<Expr>& idx) {
    if (!a_.candidate(b)) return;
    note_region(b, loop_ ? loop_span_ : SourceSpan{});
    if (!loop_) return a_.demote(b, "an element access outside a T.Parallel loop");
    if (partial_update(b, idx)) return;  // a per-thread partial (replicate_scalar_fragments)
    if (extents_.empty())
      return a_.demote(b, at(loop_span_, "accessed in a T.Parallel loop whose extents are not constants from 0"));
    switch (loop_access(b, idx)) {
      case Access::Full:
        return loop_->full.push_back(b.get());
      case Access::Row:
        return loop_->rows.push_back(b.get());
      case Access::Other:
        break;
    }
    a_.demote(b, at(loop_span_,
                    "indexed by something other than the T.Parallel loop's variables (all of them, or all "
                    "but the last for a per-row vector)"));
  }

  // A fragment seen through T.reshape: its indices give the element at the row-major
  // position of the loop variables (`s[i, j * H + k]` in a loop over [N, Q, H] for an
  // [N, Q * H] fragment), so the loop covers it whole, in another shape; the Lowerer
  // then runs the loop over its registers.
  bool reshaped(const std::vector<int64_t>& shape, const std::vector<Expr>& idx) const {
    if (idx.size() != shape.size() || shape == extents_) return false;
    int64_t n = 1, m = 1;
    for (int64_t d : shape) n *= d;
    for (int64_t e : extents_) m *= e;
    if (n != m) return false;
    DataType t = idx[0].dtype();
    for (const Expr& e : idx)
      if (e.dtype() != t) return false;
    for (const Var& v : loop_vars_)
      if (v.dtype() != t) return false;
    Expr a = idx[0], b = loop_vars_[0];
    for (size_t d = 1; d < shape.size(); ++d) a = add(mul(a, make_const(t, shape[d])), idx[d]);
    for (size_t d = 1; d < vars_.size(); ++d) b = add(mul(b, make_const(t, extents_[d])), loop_vars_[d]);
    auto diff = as_const_int(simplify(sub(a, b)));
    return diff && *diff == 0;
  }

  Analysis& a_;
  int64_t region_lo_ = 0;  // the first thread of the T.ws region being collected
  Analysis::Loop* loop_ = nullptr;
  SourceSpan loop_span_;
  std::vector<const VarNode*> vars_;
  std::vector<Var> loop_vars_;
  std::vector<int64_t> extents_;
};

// ---------------------------------------------------------------- solving

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

// One round; returns false when it demoted something (the caller repeats).
bool solve_round(Analysis& a, Solution& out) {
  auto alive = [&](BufKey k) { return a.candidates.count(k) && !a.demoted.count(k); };
  auto demote = [&](BufKey k, const std::string& why) { return a.demoted.emplace(k, why).second; };
  // A gemm whose accumulator lost its registers takes its register A with it.
  for (const GemmUse& g : a.gemms)
    if (g.a && !alive(g.c) && alive(g.a))
      return !demote(g.a, at(g.op->span, str_cat("A of T.gemm, whose accumulator '", g.c->name, "' is demoted")));
  UnionFind uf;
  for (auto& [x, y] : a.same)
    if (alive(x) && alive(y)) uf.unite(x, y);
  for (const Analysis::Loop& l : a.loops) {
    BufKey first = nullptr;
    for (BufKey f : l.full)
      if (alive(f)) first ? uf.unite(f, first) : void(first = f);
  }
  // Rows: a row class may be the rows of several parent classes (FlashAttention's
  // row max and scale vectors are rows of both the scores and the output, tiles of
  // different widths). The parents stay separate classes; the row class takes the
  // rows of the first, and the others must hold the same rows on every thread.
  std::vector<std::pair<BufKey, BufKey>> row_links;  // (row member, parent member), in IR order
  bool changed = false;
  for (const Analysis::Loop& l : a.loops) {
    BufKey driver = nullptr;
    for (BufKey f : l.full)
      if (alive(f)) driver = f;
    for (BufKey r : l.rows) {
      if (!alive(r)) continue;
      if (!driver) {
        changed |= demote(r, "indexed by the leading variables of a T.Parallel loop whose other fragments are demoted");
        continue;
      }
      row_links.push_back({r, driver});
    }
  }
  for (auto& [row, src] : a.row_of) {
    if (alive(row) != alive(src)) {
      BufKey dead = alive(row) ? src : row;
      std::string why =
          str_cat("a register T.reduce between it and '", dead->name, "', which is demoted (", a.demoted.at(dead), ")");
      changed |= demote(row, why) | demote(src, why);
      continue;
    }
    if (alive(row)) row_links.push_back({row, src});
  }
  if (changed) return false;
  // Classes, with their members.
  std::map<BufKey, std::vector<BufKey>> members;
  for (auto& [k, b] : a.candidates)
    if (alive(k)) members[uf.find(k)].push_back(k);
  std::map<BufKey, std::vector<BufKey>> root_parents;  // row class -> its parent classes
  for (auto& [r, p] : row_links) {
    auto& ps = root_parents[uf.find(r)];
    if (std::find(ps.begin(), ps.end(), uf.find(p)) == ps.end()) ps.push_back(uf.find(p));
  }
  std::map<BufKey, FragmentLayoutPtr> class_layout;
  std::map<BufKey, std::string> class_why;  // why a class has no layout
  std::function<FragmentLayoutPtr(BufKey, int)> layout_of = [&](BufKey root, int depth) -> FragmentLayoutPtr {
    if (auto it = class_layout.find(root); it != class_layout.end()) return it->second;
    auto fail = [&](const std::string& why) -> FragmentLayoutPtr {
      class_why.emplace(root, why);
      return nullptr;
    };
    if (depth > 8) return fail("its per-row vectors nest too deep");
    const auto& ms = members[root];
    auto shape = *const_shape(a.candidates[ms[0]]);
    FragmentLayoutPtr seed;
    BufKey seeded = nullptr;
    int64_t bytes = 16;
    for (BufKey m : ms) {
      if (*const_shape(a.candidates[m]) != shape)
        return fail(str_cat("one T.Parallel loop or T.copy ties it to '", m->name, "' of another shape"));
      if (auto it = a.seeds.find(m); it != a.seeds.end()) {
        // Two gemms fix different register layouts for fragments that one T.Parallel
        // loop or T.copy ties together: no layout serves both.
        if (seed && !seed->equals(*it->second))
          throw_user_error(a.seed_spans[m],
                           str_cat("layout conflict: fragment '", m->name, "' gets the layout ", it->second->str(),
                                   " from this T.gemm, but fragment '", seeded->name,
                                   "', used with it in one "
                                   "T.Parallel loop or T.copy, gets ",
                                   seed->str(), " from the T.gemm at ", a.seed_spans[seeded].str(),
                                   "; give both gemms the same tile shape and policy, or copy through shared memory"));
        seed = it->second;
        seeded = m;
      }
      int64_t nb = a.narrowest.count(m) ? a.narrowest[m] : elem_bytes(a.candidates[m]->dtype);
      bytes = std::min(bytes, nb);
    }
    FragmentLayoutPtr l;
    if (auto it = root_parents.find(root); it != root_parents.end()) {
      if (seed) return fail(str_cat("a T.gemm fixes its layout, but it is also a per-row vector"));
      for (BufKey parent : it->second) {
        FragmentLayoutPtr p = layout_of(parent, depth + 1);
        if (!p) return fail(str_cat("it holds the rows of '", parent->name, "', which is demoted"));
        if (p->kind() == FragmentLayout::Kind::Rows || p->shape().size() != 2 ||
            shape != std::vector<int64_t>{p->shape()[0]})
          return fail(str_cat("it is used as the rows of '", parent->name, "' (", p->str(), "), which do not match"));
        FragmentLayoutPtr r = FragmentLayout::rows(p);
        if (!l) {
          l = r;
          continue;
        }
        // Rows shared by tiles whose row ownership differs: no register vector serves
        // both (the gemms' warp splits along M differ; the same policy fixes it).
        if (!l->same_rows(*r)) {
          for (BufKey par : it->second)
            for (BufKey m : members[par]) a.row_split_conflicts.insert(m);
          return fail(str_cat("it holds the rows of both ", l->parent()->str(), " and ", p->str(), " ('", parent->name,
                              "'), whose rows are split differently over the threads"));
        }
      }
    } else if (seed) {
      l = seed;
    } else {
      l = FragmentLayout::blocked(shape, a.threads_of(ms[0]), bytes);
    }
    class_layout[root] = l;
    return l;
  };
  for (auto& [root, ms] : members) {
    FragmentLayoutPtr l = layout_of(root, 0);
    if (!l) {
      for (BufKey m : ms) changed |= demote(m, class_why.count(root) ? class_why[root] : "no layout fits its uses");
      continue;
    }
    for (BufKey m : ms) out.layouts[m] = l;
  }
  return !changed;
}

Solution solve(Analysis& a) {
  Solution s;
  for (size_t round = 0; round <= a.candidates.size() + 1; ++round) {
    s = Solution{};
    if (solve_round(a, s)) return s;
  }
  return Solution{};  // unreachable in practice: every round demotes at least one
}

// ---------------------------------------------------------------- rewriting

// The shared operand tiles of the register gemms, and the layout each gets.
std::map<BufKey, std::pair<Buffer, SharedTileLayout>> operand_layouts(const Analysis& a, const Solution& s) {
  std::map<BufKey, std::pair<Buffer, SharedTileLayout>> out;
  for (const GemmUse& g : a.gemms) {
    if (!s.layouts.count(g.c)) continue;
    for (int i : {0, 1}) {
      const Buffer& b = g.op->regions[i].buffer;
      if (s.layouts.count(b.get())) continue;
      auto sh = *const_shape(b);
      bool wgmma = s.layouts.at(g.c)->kind() == FragmentLayout::Kind::WgmmaAccum;
      out[b.get()] = {b, SharedTileLayout{wgmma ? Layout::wgmma_swizzle(sh.back(), elem_bytes(b->dtype))
                                                : Layout::swizzle(sh.back(), elem_bytes(b->dtype)),
                                          wgmma}};
    }
  }
  // Tiles only stored: threads write them by rows of a fragment, whose unswizzled
  // rows (256 bytes and more apart) would meet in the same banks; the 128-byte
  // swizzle of the TMA store spreads them.
  for (const auto& [k, b] : a.store_tiles) {
    if (out.count(k) || s.layouts.count(k)) continue;
    auto sh = *const_shape(b);
    if ((sh.back() * elem_bytes(b->dtype)) % 128 != 0) continue;
    out[k] = {b, SharedTileLayout{Layout::wgmma_swizzle(sh.back(), elem_bytes(b->dtype)), true}};
  }
  return out;
}

// The shared tiles a tl::tma_load of `s` writes (pipeline_loops).
std::set<BufKey> tma_destinations(const Stmt& s) {
  std::set<BufKey> out;
  for_each_expr(s, [&](const Expr& e) {
    bool load = false;
    Buffer b = tma_call_tile(e.as<CallNode>(), &load);
    if (b.defined() && load) out.insert(b.get());
  });
  return out;
}

class Lowerer : public IRMutator {
 public:
  Lowerer(const Analysis& a, const Solution& s, Expr thread, const std::set<BufKey>& tma_tiles, bool cuda)
      : a_(a), s_(s), t_(std::move(thread)), threads_(a.threads), cuda_(cuda) {
    for (auto& [k, l] : s_.layouts) {
      const Buffer& b = a_.candidates.at(k);
      regs_[k] = Buffer::make(b->name, b->dtype, {int_imm(l->local_size())}, Scope::Local, {}, b->span);
    }
    for (const auto& [k, bl] : operand_layouts(a_, s_)) {
      const auto& [b, l] = bl;
      // A tile TMA fills was laid out by pipeline_loops, from shared_tile_layouts.
      TL_ICHECK(!tma_tiles.count(k) || (b->layout && b->layout->str() == l.layout->str()), "the TMA-filled tile '",
                b->name, "' has layout ", b->layout ? b->layout->str() : "none", " but its gemm reads it as ",
                l.layout->str());
      swizzled_[k] = with_layout(b, l.layout);
    }
    for (BufKey k : a_.partial_updates)
      if (auto it = a_.replicated.find(k); it != a_.replicated.end()) partials_.insert(it->second.get());
  }
  using IRMutator::mutate;

  Buffer mutate_buffer(const Buffer& b) override {
    if (auto it = swizzled_.find(b.get()); it != swizzled_.end()) return it->second;
    if (auto it = a_.replicated.find(b.get()); it != a_.replicated.end()) return it->second;
    return b;
  }

 protected:
  using IRMutator::visit;

  Stmt visit(const AllocateNode* op, const Stmt& self) override {
    if (auto it = regs_.find(op->buffer.get()); it != regs_.end()) return allocate(it->second, mutate(op->body));
    if (auto it = a_.replicated.find(op->buffer.get()); it != a_.replicated.end())
      return allocate(it->second, mutate(op->body));
    return IRMutator::visit(op, self);
  }

  // A T.ws region: thread t_ counts from its first thread, work spreads over its threads.
  Stmt visit(const AttrNode* op, const Stmt& self) override {
    auto [lo, count] = warp_group_range(op);
    if (count == 0) return IRMutator::visit(op, self);
    Scoped<Expr> thread(t_, sub(t_, int_imm(lo)));
    Scoped<int64_t> threads(threads_, count);
    return IRMutator::visit(op, self);
  }

  Expr visit(const BufferLoadNode* op, const Expr& self) override {
    TL_ICHECK(!regs_.count(op->buffer.get()), "register fragment '", op->buffer->name, "' read outside its lowering");
    return IRMutator::visit(op, self);
  }

  Stmt visit(const ForNode* op, const Stmt& self) override {
    if (op->for_kind != ForKind::Parallel) return IRMutator::visit(op, self);
    if (Stmt serial = per_thread_nest(self); serial.defined()) return mutate(serial);
    std::vector<const ForNode*> nest{op};
    while (auto* inner = nest.back()->body.as<ForNode>()) {
      if (inner->for_kind != ForKind::Parallel) break;
      nest.push_back(inner);
    }
    // The driver: a register fragment indexed by all loop variables.
    FragmentLayoutPtr driver;
    std::set<BufKey> touched;
    for_each_expr(nest.back()->body, [&](const Expr& e) {
      if (auto* l = e.as<BufferLoadNode>()) touched.insert(l->buffer.get());
    });
    struct Stores : IRVisitor {
      std::set<BufKey>* out;
      using IRVisitor::visit;
      void visit(const BufferStoreNode* s) override {
        out->insert(s->buffer.get());
        IRVisitor::visit(s);
      }
      void visit(const TileOpNode* op) override {  // element-wise atomics in the loop
        for (const BufferRegion& r : op->regions) out->insert(r.buffer.get());
        IRVisitor::visit(op);
      }
    } stores;
    stores.out = &touched;
    stores.visit(nest.back()->body);
    // Or a fragment the loop covers through T.reshape (Collector::reshaped): as many
    // elements as the loop, in another shape.
    std::vector<int64_t> extents;
    int64_t count = 1;
    for (const ForNode* f : nest) {
      auto ex = as_const_int(f->extent);
      extents.push_back(ex ? *ex : -1);
      count = ex && count > 0 ? count * *ex : -1;
    }
    FragmentLayoutPtr reshaped;
    for (BufKey k : touched) {
      auto it = s_.layouts.find(k);
      if (it == s_.layouts.end()) continue;
      const FragmentLayoutPtr& l = it->second;
      if (l->shape().size() == nest.size()) driver = l;
      if (l->shape() != extents && elements(l->shape()) == count && count > 0) reshaped = l;
    }
    if (!driver || (reshaped && driver->shape() != extents)) driver = reshaped;
    if (!driver) {
      // A loop that updates reducer partials stays spread over the threads (each
      // iteration combines into the partial of the one thread that runs it), though
      // it then writes only registers (per_thread_nest).
      bool partials = false;
      for (const auto& [k, b] : a_.replicated) partials = partials || (a_.partial_updates.count(k) && touched.count(k));
      if (partials) {
        Stmt s = IRMutator::visit(op, self);
        auto* f = s.as<ForNode>();
        Attrs ann = f->annotations;
        ann[kSpreadOverThreads] = int64_t(1);
        return for_loop(f->var, f->min, f->extent, f->for_kind, f->body, ann, f->span);
      }
      // (mutate: the accesses take the swizzled versions of their buffers)
      if (Stmt v = vectorize_nest(nest); v.defined()) return thread_op(mutate(v));
      return IRMutator::visit(op, self);
    }
    Var k("k", dtype::Int32);
    std::vector<Expr> logical = driver->logical(t_, k);
    if (driver->shape() != extents && elements(driver->shape()) == count) {
      // The row-major position of the driver's element, over the loop's extents.
      Expr flat = int_imm(0);
      for (size_t d = 0; d < logical.size(); ++d) flat = add(mul(flat, int_imm(driver->shape()[d])), logical[d]);
      logical.assign(nest.size(), Expr());
      for (int d = int(nest.size()) - 1; d >= 0; --d) {
        logical[d] = d == 0 ? flat : floormod(flat, int_imm(extents[d]));
        if (d > 0) flat = floordiv(flat, int_imm(extents[d]));
      }
    }
    Stmt body = RegisterAccess(*this, driver, k).mutate(nest.back()->body);
    body = mutate(body);
    // A row vector drives the loop: every thread holding a row runs its iteration.
    // Only the row's first thread writes memory (shared, global, atomics); the others
    // would repeat its read-modify-write (`l[i] = l[i] * 2 + s[i]` on a demoted l).
    if (driver->kind() == FragmentLayout::Kind::Rows)
      body = LeaderWrites(row_leader(*driver->parent()), partials_).mutate(body);
    Expr valid = driver->valid(t_, k);
    if (!is_const_true(valid)) body = if_then_else(valid, body);
    for (int d = int(nest.size()) - 1; d >= 0; --d)
      body = let_stmt(nest[d]->var, cast(nest[d]->var.dtype(), logical[d]), body);
    return thread_op(for_loop(k, int_imm(0), int_imm(driver->local_size()), ForKind::Unrolled, body, {}, op->span));
  }

  Stmt visit(const TileOpNode* op, const Stmt& self) override {
    if (op->op == TileOpKind::Reduce && attr_int(op->attrs, "finalize", 0) &&
        a_.replicated.count(op->regions[0].buffer.get()))
      return thread_op(lower_replicated_finalize(op));
    // A replicated reducer copied out to memory: once it is finalized every thread
    // holds the same values, so the copy's elements are spread over the threads as a
    // copy of shared memory is (rather than every thread writing all of them).
    if (op->op == TileOpKind::Copy && a_.replicated.count(op->regions[0].buffer.get()) &&
        a_.reducers.count(op->regions[0].buffer.get())) {
      Stmt s = IRMutator::visit(op, self);
      return op_info(TileOpKind::Copy).lower_serial(s.as<TileOpNode>());
    }
    bool touches = false;
    for (const BufferRegion& r : op->regions) touches |= s_.layouts.count(r.buffer.get()) > 0;
    // (A copy to or from a thread's own registers stays a per-thread loop: lower_tile_ops.)
    if (!touches && op->op == TileOpKind::Copy && !touches_registers(op)) {
      Stmt s = lower_mem_copy(op);
      if (s.defined()) return thread_op(s);
    }
    if (!touches) return IRMutator::visit(op, self);
    switch (op->op) {
      case TileOpKind::Fill:
        return thread_op(lower_fill(op));
      case TileOpKind::Copy:
        return thread_op(lower_copy(op));
      case TileOpKind::Gemm:
        return thread_op(lower_gemm(op));
      case TileOpKind::Reduce:
        return thread_op(attr_int(op->attrs, "finalize", 0) ? lower_finalize(op) : lower_reduce(op));
      case TileOpKind::Atomic:
        return thread_op(lower_atomic(op));
      default:
        TL_ICHECK(false, "tile op with a register fragment has no register lowering");
    }
    return self;
  }

 private:
  // Rewrites the fragment accesses of a T.Parallel body driven by `driver`.
  class RegisterAccess : public IRMutator {
   public:
    RegisterAccess(Lowerer& up, FragmentLayoutPtr driver, Var k)
        : up_(up), driver_(std::move(driver)), k_(std::move(k)) {
      if (driver_->shape().size() == 2) driver_rows_ = FragmentLayout::rows(driver_);
    }
    using IRMutator::mutate;

   protected:
    using IRMutator::visit;
    Expr visit(const BufferLoadNode* op, const Expr& self) override {
      if (auto reg = local_index(op->buffer)) return buffer_load(up_.regs_.at(op->buffer.get()), {*reg}, op->span);
      return IRMutator::visit(op, self);
    }
    Stmt visit(const BufferStoreNode* op, const Stmt& self) override {
      if (auto reg = local_index(op->buffer))
        return buffer_store(up_.regs_.at(op->buffer.get()), mutate(op->value), {*reg}, op->span);
      return IRMutator::visit(op, self);
    }
    // An element-wise T.atomic_add(dst[...], frag[i, j]) inside the loop: each thread
    // updates its own elements.
    Stmt visit(const TileOpNode* op, const Stmt& self) override {
      if (op->op != TileOpKind::Atomic) return IRMutator::visit(op, self);
      return mutate(op_info(op->op).lower_serial(op));
    }

   private:
    std::optional<Expr> local_index(const Buffer& b) {
      auto it = up_.s_.layouts.find(b.get());
      if (it == up_.s_.layouts.end()) return std::nullopt;
      const FragmentLayoutPtr& l = it->second;
      if (l->equals(*driver_)) return Expr(k_);
      // A row vector: the rows of this driver, or of a tile whose rows the threads
      // hold alike (then the driver's rows say which register holds the row).
      TL_ICHECK(l->kind() == FragmentLayout::Kind::Rows && driver_rows_ && l->same_rows(*driver_rows_), "fragment '",
                b->name, "' has layout ", l->str(), " in a loop driven by ", driver_->str());
      return driver_rows_->row_local(k_);
    }
    Lowerer& up_;
    FragmentLayoutPtr driver_, driver_rows_;
    Var k_;
  };

  // Wraps each store to memory that is not a thread's registers, and each atomic, in
  // `if (leader)`.
  class LeaderWrites : public IRMutator {
   public:
    // (`partials`: reducer partials, which only the leader combines an iteration into.)
    LeaderWrites(Expr leader, const std::set<const BufferNode*>& partials)
        : leader_(std::move(leader)), partials_(partials) {}
    using IRMutator::mutate;

   protected:
    using IRMutator::visit;
    Stmt visit(const BufferStoreNode* op, const Stmt& self) override {
      Scope s = op->buffer->scope;
      bool own = (s == Scope::Local || s == Scope::LocalVar) && !partials_.count(op->buffer.get());
      return own ? self : if_then_else(leader_, self);
    }
    Stmt visit(const TileOpNode* op, const Stmt& self) override {
      return op->op == TileOpKind::Atomic ? if_then_else(leader_, self) : IRMutator::visit(op, self);
    }

   private:
    Expr leader_;
    const std::set<const BufferNode*>& partials_;
  };

  static int64_t elements(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }

  static bool is_const_true(const Expr& e) {
    auto c = as_const_int(e);
    return c && *c != 0;
  }

  static Stmt thread_op(Stmt s) { return attr_stmt(kThreadOpAttr, int64_t(1), std::move(s)); }

  const FragmentLayoutPtr& layout(const Buffer& b) const { return s_.layouts.at(b.get()); }
  const Buffer& reg(const Buffer& b) const { return regs_.at(b.get()); }

  // A T.Parallel nest over memory (no register fragment), `dst[...] = f(loads)`
  // under an optional guard, split into runs of v consecutive elements of the
  // innermost variable, dealt to the threads in turn. A run whose accesses are all
  // in bounds and whose guard holds at both ends (the guard is a conjunction of
  // comparisons of affine expressions, so it holds in between) moves as vectors;
  // any other run takes the element-by-element body.
  Stmt vectorize_nest(const std::vector<const ForNode*>& nest) {
    std::vector<int64_t> ext;
    for (const ForNode* f : nest) {
      auto mn = as_const_int(f->min), ex = as_const_int(f->extent);
      if (!mn || *mn != 0 || !ex) return Stmt();
      ext.push_back(*ex);
    }
    Stmt body = nest.back()->body;
    // Names the user bound inside the loop (`idx = bx * block + i`) are inlined.
    while (auto* l = body.as<LetStmtNode>()) body = substitute(l->body, {{l->var.node(), l->value}});
    Expr guard;
    if (auto* i = body.as<IfThenElseNode>(); i && !i->else_case.defined()) {
      guard = i->cond;
      body = i->then_case;
    }
    auto* store = body.as<BufferStoreNode>();
    if (!store || store->buffer->dtype.lanes() != 1 || s_.layouts.count(store->buffer.get())) return Stmt();
    const Var& j = nest.back()->var;
    // Every access: last index = (something without j) + j, the others without j.
    std::vector<const BufferLoadNode*> loads;
    bool ok = true;
    for_each_expr(evaluate(store->value), [&](const Expr& e) {
      if (auto* l = e.as<BufferLoadNode>()) loads.push_back(l);
      if (auto* c = e.as<CallNode>(); c && c->op == Intrinsic::AddressOf) ok = false;
    });
    if (!ok) return Stmt();
    auto uses_j = [&](const Expr& e) {
      bool found = false;
      for_each_expr(evaluate(e), [&](const Expr& x) { found |= x.get() == j.get(); });
      return found;
    };
    int64_t widest = elem_bytes(store->buffer->dtype);
    auto unit_stride = [&](const Buffer& b, const std::vector<Expr>& idx) {
      if (s_.layouts.count(b.get()) || b->dtype.lanes() != 1 || b->dtype.is_sub_byte() || idx.empty()) return false;
      for (size_t d = 0; d + 1 < idx.size(); ++d)
        if (uses_j(idx[d])) return false;
      std::map<const VarNode*, Expr> next{{j.node(), add(j, make_const(j.dtype(), 1))}};
      Expr step = simplify(sub(substitute(idx.back(), next), idx.back()));
      auto c = as_const_int(step);
      return c && *c == 1 && is_const_one(b.effective_strides().back());
    };
    if (!unit_stride(store->buffer, store->indices)) return Stmt();
    for (const BufferLoadNode* l : loads) {
      if (!uses_j(buffer_load(l->buffer, l->indices))) continue;  // broadcast: read once per element
      if (!unit_stride(l->buffer, l->indices)) return Stmt();
      widest = std::max(widest, elem_bytes(l->buffer->dtype));
    }
    if (guard.defined() && !affine_comparisons(guard)) return Stmt();
    int64_t cols = ext.back(), v = std::min<int64_t>(16 / widest, cols);
    auto aligned = [&](const Buffer& b, const std::vector<Expr>& idx, int64_t w) {
      std::map<const VarNode*, Expr> at0{{j.node(), make_const(j.dtype(), 0)}};
      if (!divisible(simplify(substitute(idx.back(), at0)), w)) return false;
      auto strides = b.effective_strides();
      for (size_t d = 0; d + 1 < strides.size(); ++d)
        if (!divisible(strides[d], w)) return false;
      return true;
    };
    auto all_aligned = [&](int64_t w) {
      if (cols % w != 0 || !aligned(store->buffer, store->indices, w)) return false;
      for (const BufferLoadNode* l : loads)
        if (uses_j(buffer_load(l->buffer, l->indices)) && !aligned(l->buffer, l->indices, w)) return false;
      return true;
    };
    while (v > 1 && !all_aligned(v)) v /= 2;
    if (v < 2) return Stmt();

    int64_t runs_per_row = cols / v, runs = runs_per_row;
    for (size_t d = 0; d + 1 < ext.size(); ++d) runs *= ext[d];
    int64_t iters = (runs + threads_ - 1) / threads_;
    Var it("it", dtype::Int32);
    Expr r = add(mul(it, int_imm(threads_)), t_);
    Var j0(j.name() + "_v", j.dtype());
    std::vector<std::pair<Var, Expr>> binds;  // outer nest vars and the run start
    Expr rest = floordiv(r, int_imm(runs_per_row));
    for (int d = int(ext.size()) - 2; d >= 0; --d) {
      binds.push_back({nest[d]->var, cast(nest[d]->var.dtype(), d == 0 ? rest : floormod(rest, int_imm(ext[d])))});
      if (d > 0) rest = floordiv(rest, int_imm(ext[d]));
    }
    binds.push_back({j0, cast(j.dtype(), mul(floormod(r, int_imm(runs_per_row)), int_imm(v)))});
    std::map<const VarNode*, Expr> at_start{{j.node(), Expr(j0)}};
    std::map<const VarNode*, Expr> at_end{{j.node(), add(j0, make_const(j.dtype(), v - 1))}};
    // The fast run: one vector per access.
    Expr fast = bool_imm(true);
    if (guard.defined()) fast = logical_and(substitute(guard, at_start), substitute(guard, at_end));
    std::vector<Stmt> pre;
    std::vector<Buffer> temps;
    std::map<const BufferLoadNode*, Buffer> temp_of;
    for (const BufferLoadNode* l : loads) {
      if (!uses_j(buffer_load(l->buffer, l->indices)) || temp_of.count(l)) continue;
      Buffer tmp = Buffer::make(l->buffer->name + "_v", l->buffer->dtype, {int_imm(v)}, Scope::Local);
      std::vector<Expr> idx;
      for (const Expr& e : l->indices) idx.push_back(substitute(e, at_start));
      if (l->buffer->scope == Scope::Global) fast = logical_and(fast, run_in_bounds(l->buffer, idx, v));
      pre.push_back(evaluate(call_extern(dtype::Void, str_cat("tl::load_vec<", v, ">"),
                                         {call(Intrinsic::AddressOf, {buffer_load(tmp, {int_imm(0)})}),
                                          call(Intrinsic::AddressOf, {buffer_load(l->buffer, idx)})})));
      temps.push_back(tmp);
      temp_of[l] = tmp;
    }
    std::vector<Expr> sidx;
    for (const Expr& e : store->indices) sidx.push_back(substitute(e, at_start));
    if (store->buffer->scope == Scope::Global) fast = logical_and(fast, run_in_bounds(store->buffer, sidx, v));
    Var e("e", dtype::Int32);
    struct UseTemps : IRMutator {
      const std::map<const BufferLoadNode*, Buffer>* temps;
      Expr lane;
      using IRMutator::mutate;
      using IRMutator::visit;
      Expr visit(const BufferLoadNode* op, const Expr& self) override {
        auto it = temps->find(op);
        return it == temps->end() ? IRMutator::visit(op, self) : buffer_load(it->second, {lane});
      }
    } use;
    use.temps = &temp_of;
    use.lane = e;
    Buffer out = Buffer::make(store->buffer->name + "_v", store->buffer->dtype, {int_imm(v)}, Scope::Local);
    std::map<const VarNode*, Expr> at_lane{{j.node(), add(j0, cast(j.dtype(), e))}};
    Expr value = substitute(use.mutate(store->value), at_lane);
    std::vector<Stmt> vec = pre;
    vec.push_back(for_loop(e, int_imm(0), int_imm(v), ForKind::Unrolled, buffer_store(out, value, {e})));
    vec.push_back(evaluate(call_extern(dtype::Void, str_cat("tl::store_vec<", v, ">"),
                                       {call(Intrinsic::AddressOf, {buffer_load(store->buffer, sidx)}),
                                        call(Intrinsic::AddressOf, {buffer_load(out, {int_imm(0)})})})));
    Stmt vec_run = allocate(out, seq(vec));
    for (const Buffer& tmp : temps) vec_run = allocate(tmp, vec_run);
    // The slow run: the user's body, element by element.
    Stmt slow = for_loop(e, int_imm(0), int_imm(v), ForKind::Unrolled,
                         let_stmt(j, add(j0, cast(j.dtype(), e)), nest.back()->body));
    Stmt run = if_then_else(fast, vec_run, slow);
    for (int b = int(binds.size()) - 1; b >= 0; --b) run = let_stmt(binds[b].first, binds[b].second, run);
    if (runs % threads_ != 0) run = if_then_else(lt(r, int_imm(runs)), run);
    return for_loop(it, int_imm(0), int_imm(iters), iters <= 16 ? ForKind::Unrolled : ForKind::Serial, run, {},
                    nest[0]->span);
  }

  // Both ends of a run starting at `idx` (v elements along the last dim) in bounds.
  static Expr run_in_bounds(const Buffer& b, const std::vector<Expr>& idx, int64_t v) {
    std::vector<Expr> last = idx;
    last.back() = add(last.back(), make_const(last.back().dtype(), v - 1));
    return logical_and(in_bounds(b, idx), in_bounds(b, last));
  }

  // A conjunction of comparisons: true at both ends of a run of an affine index
  // means true all along it.
  static bool affine_comparisons(const Expr& e) {
    auto* b = e.as<BinaryNode>();
    if (!b) return false;
    switch (b->op) {
      case BinaryOp::And:
        return affine_comparisons(b->a) && affine_comparisons(b->b);
      case BinaryOp::LT:
      case BinaryOp::LE:
      case BinaryOp::GT:
      case BinaryOp::GE:
        return affine(b->a) && affine(b->b);
      default:
        return false;
    }
  }
  static bool affine(const Expr& e) {
    if (as_const_int(e) || e.as<VarNode>()) return true;
    if (auto* c = e.as<CastNode>()) return c->value.dtype().is_integer() && affine(c->value);
    auto* b = e.as<BinaryNode>();
    if (!b) return false;
    if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) return affine(b->a) && affine(b->b);
    if (b->op == BinaryOp::Mul) return (as_const_int(b->a) && affine(b->b)) || (as_const_int(b->b) && affine(b->a));
    return false;
  }

  // T.atomic_<kind>(dst region, register fragment): each thread updates the
  // elements it holds. Adds of runs of consecutive registers into global memory of
  // the same dtype go 2 or 4 at a time (tl::atomic_add_vec: one vector reduction
  // where the GPU has one), under the same alignment rules as vector copies.
  Stmt lower_atomic(const TileOpNode* op) {
    const BufferRegion d = mutate_region(op->regions[0]);
    const BufferRegion& v = op->regions[1];
    const FragmentLayoutPtr& l = layout(v.buffer);
    std::string kind = attr_string(op->attrs, "kind");
    int64_t order = attr_int(op->attrs, "memory_order", 0);
    int64_t w = 1;
    DataType t = d.buffer->dtype;
    if (kind == "add" && d.buffer->scope == Scope::Global && v.buffer->dtype == t &&
        !is_const_one(v.ranges.back().extent) && (t == dtype::Float32 || t == dtype::Float16 || t == dtype::BFloat16))
      w = std::min<int64_t>(vector_width(d, l->run(), elem_bytes(t)), t == dtype::Float32 ? 4 : 2);
    Var r("r", dtype::Int32);
    Expr k0 = mul(r, int_imm(w));
    std::vector<Expr> di = paired_index(v, d, l->logical(t_, k0));
    Expr ok =
        logical_and(l->valid(t_, k0), d.buffer->scope == Scope::Global ? in_bounds(d.buffer, di) : bool_imm(true));
    Expr dst = call(Intrinsic::AddressOf, {buffer_load(d.buffer, di, op->span)});
    Stmt st;
    if (w > 1) {
      Expr src = call(Intrinsic::AddressOf, {buffer_load(reg(v.buffer), {k0})});
      st =
          evaluate(call_extern(dtype::Void, str_cat("tl::atomic_add_vec<", w, ", ", order, ">"), {dst, src}), op->span);
    } else {
      Expr value = cast(t, buffer_load(reg(v.buffer), {k0}));
      st = evaluate(call_extern(dtype::Void, str_cat("tl::atomic_", kind, "<", order, ">"), {dst, value}), op->span);
    }
    if (!is_const_true(ok)) st = if_then_else(ok, st);
    return for_loop(r, int_imm(0), int_imm(l->local_size() / w), ForKind::Unrolled, st, {}, op->span);
  }

  Stmt lower_fill(const TileOpNode* op) {
    const Buffer& b = op->regions[0].buffer;
    Var k("k", dtype::Int32);
    Stmt st = buffer_store(reg(b), cast(b->dtype, op->args[0]), {k}, op->span);
    return for_loop(k, int_imm(0), int_imm(layout(b)->local_size()), ForKind::Unrolled, st);
  }

  // The other side's index for fragment index `idx`: non-unit dims pair in order,
  // counted from the start of the fragment's region.
  static std::vector<Expr> paired_index(const BufferRegion& frag, const BufferRegion& other,
                                        const std::vector<Expr>& idx) {
    std::vector<Expr> comps;
    for (size_t d = 0; d < frag.ranges.size(); ++d) {
      const Range& r = frag.ranges[d];
      if (is_const_one(r.extent)) continue;
      auto mn = as_const_int(r.min);
      comps.push_back(mn && *mn == 0 ? idx[d] : sub(idx[d], cast(idx[d].dtype(), r.min)));
    }
    std::vector<Expr> out;
    size_t next = 0;
    for (const Range& r : other.ranges) {
      if (is_const_one(r.extent)) {
        out.push_back(r.min);
        continue;
      }
      out.push_back(add(r.min, cast(r.min.dtype(), comps[next++])));
    }
    return out;
  }

  // Whether fragment index `idx` lies in the region `frag` of its fragment.
  static Expr in_region(const BufferRegion& frag, const std::vector<Expr>& idx) {
    Expr ok;
    for (size_t d = 0; d < frag.ranges.size(); ++d) {
      if (covers_dim(frag, d)) continue;
      const Range& r = frag.ranges[d];
      Expr lo = cast(idx[d].dtype(), r.min);
      Expr here = logical_and(ge(idx[d], lo), lt(idx[d], add(lo, cast(idx[d].dtype(), r.extent))));
      ok = ok.defined() ? logical_and(ok, here) : here;
    }
    return ok.defined() ? ok : bool_imm(true);
  }

  // The widest run (<= `run` elements along the last dim) that region `mem` can move
  // as one aligned vector.
  // Packed sub-byte elements (float4_e2m1fn, int4) move element by element, except
  // between two packed buffers of one dtype (`packed`): a run of w elements from an
  // even one on is w / 2 whole bytes (lower_mem_copy).
  static int64_t vector_width(const BufferRegion& mem, int64_t run, int64_t bytes, bool packed = false) {
    if (run <= 1 || is_const_one(mem.ranges.back().extent) || (mem.buffer->dtype.is_sub_byte() && !packed)) return 1;
    auto strides = mem.buffer.effective_strides();
    if (!is_const_one(strides.back())) return 1;
    int64_t w = std::min<int64_t>(run, 16 / bytes);
    auto ok = [&](int64_t w) {
      if (run % w != 0 || !divisible(mem.ranges.back().min, w)) return false;
      for (size_t d = 0; d + 1 < strides.size(); ++d)
        if (!divisible(strides[d], w)) return false;
      if (mem.buffer->scope == Scope::Global && !divisible(mem.buffer->shape.back(), w)) return false;
      if (mem.buffer->layout && mem.buffer->layout->chunk_elems() % w != 0) return false;
      return true;
    };
    while (w > 1 && !ok(w)) w /= 2;
    return w;
  }

  // A copy between memories (global, shared, block-wide fragments): the tile is
  // cut into runs of w elements along its last dim, dealt to the threads in turn,
  // so a warp moves consecutive 16-byte pieces. Producers of a pipelined loop use
  // cp.async where the run is 4, 8 or 16 bytes of one dtype and the padding is 0.
  Stmt lower_mem_copy(const TileOpNode* op) {
    const BufferRegion s = mutate_region(op->regions[0]), d = mutate_region(op->regions[1]);
    std::vector<int64_t> ext;
    for (const Expr& e : d.extents()) {
      auto c = as_const_int(e);
      if (!c) return Stmt();
      if (*c != 1) ext.push_back(*c);
    }
    std::vector<int64_t> sext;
    for (const Expr& e : s.extents()) {
      auto c = as_const_int(e);
      if (!c) return Stmt();
      if (*c != 1) sext.push_back(*c);
    }
    if (ext.empty() || ext != sext) return Stmt();
    int64_t cols = ext.back(), rows = 1;
    for (size_t i = 0; i + 1 < ext.size(); ++i) rows *= ext[i];
    int64_t sb = elem_bytes(s.buffer->dtype), db = elem_bytes(d.buffer->dtype);
    // Two packed buffers of one dtype move whole bytes: runs of an even number of
    // elements that start at an even one (vector_width's divisibility proves both).
    const bool packed = s.buffer->dtype.is_sub_byte() && s.buffer->dtype == d.buffer->dtype;
    int64_t w = std::min(vector_width(s, cols, sb, packed), vector_width(d, cols, db, packed));
    while (w > 1 && (w * std::max(sb, db) > 16 || cols % w != 0)) w /= 2;
    if (packed && w % 2 != 0) w = 1;  // an odd run ends inside a byte
    bool async = !packed && attr_int(op->attrs, kAsyncCopyAttr, 0) && s.buffer->scope == Scope::Global &&
                 d.buffer->scope != Scope::Global && s.buffer->dtype == d.buffer->dtype &&
                 (w * sb == 4 || w * sb == 8 || w * sb == 16);
    // cp.async pads with zero bytes: only right when the padding value is 0.
    Expr pad = safe_value(op->attrs, s.buffer->dtype);
    auto* pad_f = pad.as<FloatImmNode>();
    auto pad_i = as_const_int(pad);
    if (!((pad_f && pad_f->value == 0) || (pad_i && *pad_i == 0))) async = false;
    int64_t runs_per_row = cols / w, chunks = rows * runs_per_row;
    int64_t iters = (chunks + threads_ - 1) / threads_;
    Var it("it", dtype::Int32);
    Expr c = add(mul(it, int_imm(threads_)), t_);
    Expr row = floordiv(c, int_imm(runs_per_row)), col = mul(floormod(c, int_imm(runs_per_row)), int_imm(w));
    std::vector<Expr> comps;
    Expr rest = row;
    for (int i = int(ext.size()) - 2; i >= 0; --i) {
      comps.insert(comps.begin(), i == 0 ? rest : floormod(rest, int_imm(ext[i])));
      if (i > 0) rest = floordiv(rest, int_imm(ext[i]));
    }
    comps.push_back(col);
    auto index = [&](const BufferRegion& r) {
      std::vector<Expr> out;
      size_t next = 0;
      for (const Range& rg : r.ranges)
        out.push_back(is_const_one(rg.extent) ? rg.min : add(rg.min, cast(rg.min.dtype(), comps[next++])));
      return out;
    };
    std::vector<Expr> si = index(s), di = index(d);
    Expr ok_s = s.buffer->scope == Scope::Global ? in_bounds(s.buffer, si) : bool_imm(true);
    Expr ok_d = d.buffer->scope == Scope::Global ? in_bounds(d.buffer, di) : bool_imm(true);
    Expr src_ptr = call(Intrinsic::AddressOf, {buffer_load(s.buffer, si)});
    Expr dst_ptr = call(Intrinsic::AddressOf, {buffer_load(d.buffer, di)});
    Stmt body;
    if (async) {
      body = evaluate(call_extern(dtype::Void, str_cat("tl::cp_async<", w * sb, ">"), {dst_ptr, src_ptr, ok_s}));
    } else {
      // One element e of the run, predicated and padded like the generic copy.
      Var e("e", dtype::Int32);
      std::vector<Expr> se = si, de = di;
      se.back() = add(se.back(), cast(se.back().dtype(), e));
      de.back() = add(de.back(), cast(de.back().dtype(), e));
      Expr ok_se = s.buffer->scope == Scope::Global ? in_bounds(s.buffer, se) : bool_imm(true);
      Expr ok_de = d.buffer->scope == Scope::Global ? in_bounds(d.buffer, de) : bool_imm(true);
      Expr val = buffer_load(s.buffer, se, op->span);
      if (!is_const_true(ok_se)) val = select(ok_se, val, safe_value(op->attrs, s.buffer->dtype));
      Stmt one = buffer_store(d.buffer, cast(d.buffer->dtype, val), de, op->span);
      if (!is_const_true(ok_de)) one = if_then_else(ok_de, one);
      Stmt scalar = for_loop(e, int_imm(0), int_imm(w), ForKind::Unrolled, one);
      if (w == 1) {
        body = scalar;
      } else {
        // A packed element's address is its byte's (codegen_c.cpp): w elements are w / 2 bytes.
        Stmt vec =
            evaluate(call_extern(dtype::Void, str_cat("tl::copy_vec<", packed ? w / 2 : w, ">"), {dst_ptr, src_ptr}));
        Expr ok = logical_and(ok_s, ok_d);
        body = is_const_true(ok) ? vec : if_then_else(ok, vec, scalar);
      }
    }
    if (chunks % threads_ != 0) body = if_then_else(lt(c, int_imm(chunks)), body);
    Stmt loop =
        for_loop(it, int_imm(0), int_imm(iters), iters <= 32 ? ForKind::Unrolled : ForKind::Serial, body, {}, op->span);
    return async ? attr_stmt(kAsyncCopyAttr, int64_t(1), loop) : loop;
  }

  Stmt lower_copy(const TileOpNode* op) {
    const BufferRegion s = mutate_region(op->regions[0]), d = mutate_region(op->regions[1]);
    bool fs = s_.layouts.count(op->regions[0].buffer.get()), fd = s_.layouts.count(op->regions[1].buffer.get());
    Var k("k", dtype::Int32);
    if (fs && fd) {
      int64_t n = layout(s.buffer)->local_size();
      const DataType &from = s.buffer->dtype, &to = d.buffer->dtype;
      if (cuda_ && n % 2 == 0 && from == dtype::Float32 && (to == dtype::Float16 || to == dtype::BFloat16)) {
        // Two values per cvt into one 32-bit register (tl::cast_pair): a float16 P
        // then holds 2 values per register, not 1, while it waits for its gemm.
        Expr k2 = mul(k, int_imm(2));
        Expr dst = call(Intrinsic::AddressOf, {buffer_load(reg(d.buffer), {k2})});
        Stmt st = evaluate(
            call_extern(dtype::Void, "tl::cast_pair",
                        {dst, buffer_load(reg(s.buffer), {k2}), buffer_load(reg(s.buffer), {add(k2, int_imm(1))})}));
        return for_loop(k, int_imm(0), int_imm(n / 2), ForKind::Unrolled, st, {}, op->span);
      }
      Stmt st = buffer_store(reg(d.buffer), cast(to, buffer_load(reg(s.buffer), {k})), {k}, op->span);
      return for_loop(k, int_imm(0), int_imm(n), ForKind::Unrolled, st);
    }
    const BufferRegion& frag = fs ? s : d;
    const BufferRegion& mem = fs ? d : s;
    const FragmentLayoutPtr& l = layout(frag.buffer);
    int64_t run = l->run();
    // Part of a fragment: the registers outside it are left alone. A vector of
    // registers stays inside the part when the part has whole rows.
    const bool whole = covers_whole(frag), whole_rows = covers_dim(frag, frag.ranges.size() - 1);
    int64_t w = is_const_one(frag.ranges.back().extent) || !whole_rows
                    ? 1
                    : vector_width(mem, run, elem_bytes(mem.buffer->dtype));
    bool global = mem.buffer->scope == Scope::Global;
    // One step per w registers.
    Var r("r", dtype::Int32);
    Expr k0 = mul(r, int_imm(w));
    std::vector<Expr> fi = l->logical(t_, k0);
    std::vector<Expr> mi = paired_index(frag, mem, fi);
    Expr ok = l->valid(t_, k0);
    if (global) ok = logical_and(ok, in_bounds(mem.buffer, mi));
    if (fs && l->kind() == FragmentLayout::Kind::Rows) ok = logical_and(ok, row_leader(*l->parent()));
    Expr inside = whole ? Expr() : in_region(frag, fi);
    if (inside.defined() && fs) ok = logical_and(inside, ok);
    Expr mem_ptr = call(Intrinsic::AddressOf, {buffer_load(mem.buffer, mi)});
    Expr reg_ptr = call(Intrinsic::AddressOf, {buffer_load(reg(frag.buffer), {k0})});
    Stmt body;
    if (fs) {
      Stmt st =
          w > 1 ? evaluate(call_extern(dtype::Void, str_cat("tl::store_vec<", w, ">"), {mem_ptr, reg_ptr}))
                : buffer_store(mem.buffer, cast(mem.buffer->dtype, buffer_load(reg(frag.buffer), {k0})), mi, op->span);
      body = is_const_true(ok) ? st : if_then_else(ok, st);
    } else {
      Stmt st =
          w > 1 ? evaluate(call_extern(dtype::Void, str_cat("tl::load_vec<", w, ">"), {reg_ptr, mem_ptr}))
                : buffer_store(reg(frag.buffer), cast(frag.buffer->dtype, buffer_load(mem.buffer, mi)), {k0}, op->span);
      if (!is_const_true(ok)) {
        Var e("e", dtype::Int32);
        Expr safe = cast(frag.buffer->dtype, safe_value(op->attrs, mem.buffer->dtype));
        Stmt fill =
            for_loop(e, int_imm(0), int_imm(w), ForKind::Unrolled, buffer_store(reg(frag.buffer), safe, {add(k0, e)}));
        st = if_then_else(ok, st, fill);
      }
      body = inside.defined() ? if_then_else(inside, st) : st;
    }
    return for_loop(r, int_imm(0), int_imm(l->local_size() / w), ForKind::Unrolled, body, {}, op->span);
  }

  Stmt lower_gemm(const TileOpNode* op) {
    const BufferRegion &a = op->regions[0], &b = op->regions[1], &c = op->regions[2];
    const FragmentLayoutPtr& lc = layout(c.buffer);
    bool ta = attr_int(op->attrs, "transpose_A", 0), tb = attr_int(op->attrs, "transpose_B", 0);
    bool clear = attr_int(op->attrs, "clear_accum", 0);
    int64_t m = lc->shape()[0], n = lc->shape()[1];
    size_t na = a.ranges.size();
    int64_t kk = *as_const_int(ta ? a.ranges[na - 2].extent : a.ranges[na - 1].extent);
    // A wgmma gemm the pipeline marked asynchronous returns with its own group in
    // flight (device/cuda/gemm_sm90.cuh, Pending = 1); the pipeline waits for it.
    bool pending = lc->kind() == FragmentLayout::Kind::WgmmaAccum && !clear && attr_int(op->attrs, kWgmmaAsyncAttr, 0);
    auto ptr = [&](const BufferRegion& r) {
      std::vector<Expr> mins;
      for (const Range& rg : r.ranges) mins.push_back(rg.min);
      // The gemm reads its shared operands, past its return when it is left in flight
      // (the barrier planner's mask).
      return address_of(buffer_load(mutate_buffer(r.buffer), mins),
                        pending ? AddressAccess::ReadInFlight : AddressAccess::Read);
    };
    auto regs = [&](const Buffer& buf) { return call(Intrinsic::AddressOf, {buffer_load(reg(buf), {int_imm(0)})}); };
    auto flag = [](bool v) { return v ? "true" : "false"; };
    std::vector<Stmt> out;
    if (clear) {
      Var k("k", dtype::Int32);
      out.push_back(for_loop(k, int_imm(0), int_imm(lc->local_size()), ForKind::Unrolled,
                             buffer_store(reg(c.buffer), make_const(c.buffer->dtype, 0), {k})));
    }
    // The same template arguments for both forms: warps (mma.sync) or warpgroups (wgmma).
    const char* prefix = lc->kind() == FragmentLayout::Kind::WgmmaAccum ? "tl::wgmma_gemm" : "tl::gemm";
    if (attr_int(op->attrs, kGemmSpAttr, 0) == kGemmSpCompressed) {
      // tl::gemm_sp_ss (device/cuda/gemm_sp_sm80.cuh): K is the dense extent.
      const BufferRegion& e = op->regions[3];
      std::string name =
          str_cat("tl::gemm_sp_ss<", m, ", ", n, ", ", 2 * kk, ", ", lc->warps_m(), ", ", lc->warps_n(), ", ", flag(ta),
                  ", ", flag(tb), ", ", flag(attr_int(op->attrs, "transpose_E", 0)), ">");
      out.push_back(evaluate(call_extern(dtype::Void, name, {ptr(a), ptr(e), ptr(b), regs(c.buffer)}), op->span));
    } else if (s_.layouts.count(a.buffer.get())) {
      std::string name = str_cat(prefix, "_rs<", m, ", ", n, ", ", kk, ", ", lc->warps_m(), ", ", lc->warps_n(), ", ",
                                 flag(tb), pending ? ", 1>" : ">");
      out.push_back(evaluate(call_extern(dtype::Void, name, {regs(a.buffer), ptr(b), regs(c.buffer)}), op->span));
    } else {
      std::string name = str_cat(prefix, "_ss<", m, ", ", n, ", ", kk, ", ", lc->warps_m(), ", ", lc->warps_n(), ", ",
                                 flag(ta), ", ", flag(tb), pending ? ", 1>" : ">");
      out.push_back(evaluate(call_extern(dtype::Void, name, {ptr(a), ptr(b), regs(c.buffer)}), op->span));
    }
    return seq(out);
  }

  // Combines each row's partials (in `red`, one per register of the Rows layout `ld`)
  // across the threads that hold the row in the 2-d layout `ls`: the lanes of a warp
  // with shuffles, then the warps through a shared scratch row.
  // `name` names the scratch row (<name>_xwarp).
  Stmt combine_row_partials(const FragmentLayoutPtr& ls, const FragmentLayoutPtr& ld, const Buffer& red,
                            const std::string& name, const Expr& identity, const char* fn,
                            const std::function<Expr(Expr, Expr)>& combine, SourceSpan span) {
    DataType t = red->dtype;
    int64_t rows = ld->local_size();
    Var i("i", dtype::Int32);
    std::vector<Stmt> body;
    // Across the lanes that share a row, then across the warps that do.
    std::string shfl = str_cat("tl::warp_allreduce<", fn, ", ", ls->row_lanes(), ">");
    if (ls->row_lanes() > 1)
      body.push_back(for_loop(i, int_imm(0), int_imm(rows), ForKind::Unrolled,
                              buffer_store(red, call_extern(t, shfl, {buffer_load(red, {i})}), {i})));
    int64_t warps = ls->row_warps();
    Stmt cross;
    if (warps > 1) {
      std::vector<Expr> shape;
      for (int64_t s : ld->shape()) shape.push_back(int_imm(s));
      shape.push_back(int_imm(warps));
      Buffer ws = Buffer::make(name + "_xwarp", t, shape, Scope::Shared, {}, span);
      std::vector<Expr> at = ld->logical(t_, i);
      std::vector<Expr> widx = at;
      widx.push_back(ls->row_warp_index(t_));
      Expr leader = eq(floormod(t_, int_imm(ls->row_lanes())), int_imm(0));
      Expr row_ok = ld->valid(t_, i);
      Stmt put = if_then_else(logical_and(leader, row_ok), buffer_store(ws, buffer_load(red, {i}), widx));
      Var w("w", dtype::Int32);
      std::vector<Expr> ridx = at;
      ridx.push_back(w);
      Stmt gather = seq({buffer_store(red, identity, {i}),
                         for_loop(w, int_imm(0), int_imm(warps), ForKind::Unrolled,
                                  buffer_store(red, combine(buffer_load(red, {i}), buffer_load(ws, ridx)), {i}))});
      if (!is_const_true(row_ok)) gather = if_then_else(row_ok, gather);
      // The barrier between the warps' partials and their gather; the one that keeps
      // the next reduction's partials from overwriting this one's before every warp
      // has gathered is plan_barriers' to place (often an existing barrier already
      // sits between them).
      cross = allocate(
          ws, seq({for_loop(i, int_imm(0), int_imm(rows), ForKind::Unrolled, put), barrier(BarrierKind::Threads),
                   for_loop(i, int_imm(0), int_imm(rows), ForKind::Unrolled, gather)}));
      body.push_back(cross);
    }
    return seq(body);
  }

  // T.finalize_reducer: every thread holding a row of a reducer (a Rows layout, whose
  // holders each kept their own partial) gets the row's combined value. A reducer of
  // another layout has one holder per element: nothing to combine.
  Stmt lower_finalize(const TileOpNode* op) {
    const Buffer& r = op->regions[0].buffer;
    const FragmentLayoutPtr& l = layout(r);
    if (l->kind() != FragmentLayout::Kind::Rows) return seq({});
    const char* fn = nullptr;
    std::function<Expr(Expr, Expr)> combine;
    Expr identity;
    reducer_op(attr_string(op->attrs, "kind"), r->dtype, fn, combine, identity);
    return combine_row_partials(l->parent(), l, reg(r), r->name, identity, fn, combine, op->span);
  }

  // T.finalize_reducer of a replicated reducer (Analysis::partial_updates): every
  // thread of the block (or of its T.ws region) holds its own partial of every
  // element, and gets the combination of all of them: the lanes of each warp with
  // shuffles, then the warps through a shared scratch array [elements][warps].
  Stmt lower_replicated_finalize(const TileOpNode* op) {
    const Buffer& r = a_.replicated.at(op->regions[0].buffer.get());
    const char* fn = nullptr;
    std::function<Expr(Expr, Expr)> combine;
    Expr identity;
    reducer_op(attr_string(op->attrs, "kind"), r->dtype, fn, combine, identity);
    DataType t = r->dtype;
    std::vector<int64_t> shape;
    for (const Expr& e : r->shape) shape.push_back(*as_const_int(e));
    int64_t n = elements(shape);
    // Lanes combined by shuffles: whole warps, or a block of fewer threads than a warp
    // (a power of two); otherwise every thread is its own group.
    int64_t lanes = threads_ % 32 == 0 ? 32 : (threads_ < 32 && (threads_ & (threads_ - 1)) == 0) ? threads_ : 1;
    int64_t groups = threads_ / lanes;
    Var e("e", dtype::Int32), g("g", dtype::Int32);
    auto element = [&](const Expr& flat) {  // the row-major indices of flat position `flat`
      std::vector<Expr> idx(shape.size());
      Expr rest = flat;
      for (int d = int(shape.size()) - 1; d >= 0; --d) {
        idx[d] = d == 0 ? rest : floormod(rest, int_imm(shape[d]));
        if (d > 0) rest = floordiv(rest, int_imm(shape[d]));
      }
      return idx;
    };
    std::vector<Expr> at = element(e);
    std::vector<Stmt> body;
    if (lanes > 1) {
      std::string shfl = str_cat("tl::warp_allreduce<", fn, ", ", lanes, ">");
      body.push_back(for_loop(e, int_imm(0), int_imm(n), ForKind::Unrolled,
                              buffer_store(r, call_extern(t, shfl, {buffer_load(r, at)}), at)));
    }
    if (groups > 1) {
      Buffer ws = Buffer::make(r->name + "_xwarp", t, {int_imm(n), int_imm(groups)}, Scope::Shared, {}, op->span);
      Expr leader = eq(floormod(t_, int_imm(lanes)), int_imm(0));
      Stmt put = if_then_else(leader, buffer_store(ws, buffer_load(r, at), {e, floordiv(t_, int_imm(lanes))}));
      Stmt gather = seq({buffer_store(r, identity, at),
                         for_loop(g, int_imm(0), int_imm(groups), ForKind::Serial,
                                  buffer_store(r, combine(buffer_load(r, at), buffer_load(ws, {e, g})), at))});
      // The barrier that keeps a later finalize from overwriting the scratch before
      // every thread has gathered is plan_barriers' to place.
      body.push_back(
          allocate(ws, seq({for_loop(e, int_imm(0), int_imm(n), ForKind::Unrolled, put), barrier(BarrierKind::Threads),
                            for_loop(e, int_imm(0), int_imm(n), ForKind::Unrolled, gather)})));
    }
    return seq(body);
  }

  // A reducer op's warp_allreduce functor, its combination and its identity.
  static void reducer_op(const std::string& kind, DataType t, const char*& fn, std::function<Expr(Expr, Expr)>& combine,
                         Expr& identity) {
    if (kind == "sum") {
      fn = "tl::SumOp", identity = make_const(t, 0);
      combine = [](Expr x, Expr y) { return add(x, y); };
    } else if (kind == "max") {
      fn = "tl::MaxOp", identity = has_infinity(t) ? infinity(t, true) : min_value(t);
      combine = [](Expr x, Expr y) { return max(x, y); };
    } else if (kind == "min") {
      fn = "tl::MinOp", identity = has_infinity(t) ? infinity(t) : max_value(t);
      combine = [](Expr x, Expr y) { return min(x, y); };
    } else {
      BinaryOp bop = kind == "bitand" ? BinaryOp::BitAnd : kind == "bitor" ? BinaryOp::BitOr : BinaryOp::BitXor;
      TL_ICHECK(kind == "bitand" || kind == "bitor" || kind == "bitxor", "T.finalize_reducer of reducer op '", kind,
                "'");
      fn = kind == "bitand" ? "tl::BitAndOp" : kind == "bitor" ? "tl::BitOrOp" : "tl::BitXorOp";
      identity = kind != "bitand" ? make_const(t, 0) : t.is_uint() ? max_value(t) : int_imm(-1, t);
      combine = [bop](Expr x, Expr y) { return binary(bop, x, y); };
    }
  }

  Stmt lower_reduce(const TileOpNode* op) {
    const Buffer &src = op->regions[0].buffer, &dst = op->regions[1].buffer;
    const FragmentLayoutPtr &ls = layout(src), &ld = layout(dst);
    std::string kind = attr_string(op->attrs, "kind");
    bool clear = attr_int(op->attrs, "clear", 1);
    DataType t = dst->dtype;
    bool is_max = kind == "max" || kind == "absmax", is_min = kind == "min";
    // nan_propagate=True (a NaN in a line gives NaN) on floats: max.NaN / min.NaN.
    bool nan = attr_int(op->attrs, "nan_propagate", 0) && t.is_float();
    const char* fn = is_max   ? (nan ? "tl::MaxOpNan" : "tl::MaxOp")
                     : is_min ? (nan ? "tl::MinOpNan" : "tl::MinOp")
                              : "tl::SumOp";
    auto combine = [&](Expr x, Expr y) {
      return is_max ? reduction_max(x, y, nan) : is_min ? reduction_min(x, y, nan) : add(x, y);
    };
    // absmax starts from 0, as TileLang's (so a row of NaNs only gives 0).
    Expr identity = kind == "max" ? (has_infinity(t) ? infinity(t, true) : min_value(t))
                    : is_min      ? (has_infinity(t) ? infinity(t) : max_value(t))
                                  : make_const(t, 0);
    int64_t rows = ld->local_size();
    Buffer red = Buffer::make(dst->name + "_red", t, {int_imm(rows)}, Scope::Local, {}, op->span);
    Var i("i", dtype::Int32), k("k", dtype::Int32);
    std::vector<Stmt> body;
    body.push_back(for_loop(i, int_imm(0), int_imm(rows), ForKind::Unrolled, buffer_store(red, identity, {i})));
    Expr x = cast(t, buffer_load(reg(src), {k}));
    if (kind == "abssum" || kind == "absmax") x = call(Intrinsic::Abs, {x});
    TL_ICHECK(ld->kind() == FragmentLayout::Kind::Rows && ld->same_rows(*FragmentLayout::rows(ls)), "reduction into '",
              dst->name, "' (", ld->str(), ") from ", ls->str());
    auto slot_of = [&](const Expr& at) { return FragmentLayout::rows(ls)->row_local(at); };
    Expr slot = slot_of(k);
    Stmt fold = buffer_store(red, combine(buffer_load(red, {slot}), x), {slot});
    Expr valid = ls->valid(t_, k);
    if (!is_const_true(valid)) fold = if_then_else(valid, fold);
    int64_t n = ls->local_size();
    Buffer pairs;
    // 16-bit max / min: two registers per instruction where each pair holds two values
    // of one row and the thread holds all its registers or none (`held`).
    std::optional<Expr> held;
    if (cuda_ && (is_max || is_min) && src->dtype == t && (t == dtype::Float16 || t == dtype::BFloat16) &&
        registers_pair_in_rows(slot_of, n))
      held = same_for_every_register(valid, k, n);
    if (held) {
      // tl::max2 ... (max.f16x2, max.NaN.bf16x2 ...) into two accumulators per row, which
      // start at the identity in place of `red`; then red = the pair's two halves combined.
      // Max and min give the same bits in any order.
      pairs = Buffer::make(dst->name + "_red2", t, {int_imm(2 * rows)}, Scope::Local, {}, op->span);
      std::string fn2 = str_cat("tl::", kind == "absmax" ? "abs_" : "", is_max ? "max2" : "min2", nan ? "_nan" : "");
      Expr k2 = mul(k, int_imm(2));
      Stmt fold2 =
          evaluate(call_extern(dtype::Void, fn2,
                               {call(Intrinsic::AddressOf, {buffer_load(pairs, {mul(slot_of(k2), int_imm(2))})}),
                                call(Intrinsic::AddressOf, {buffer_load(reg(src), {k2})})}));
      body[0] = for_loop(i, int_imm(0), int_imm(2 * rows), ForKind::Unrolled, buffer_store(pairs, identity, {i}));
      Stmt folds = for_loop(k, int_imm(0), int_imm(n / 2), ForKind::Unrolled, fold2);
      body.push_back(is_const_true(*held) ? folds : if_then_else(*held, folds));
      Expr i2 = mul(i, int_imm(2));
      body.push_back(for_loop(
          i, int_imm(0), int_imm(rows), ForKind::Unrolled,
          buffer_store(red, combine(buffer_load(pairs, {i2}), buffer_load(pairs, {add(i2, int_imm(1))})), {i})));
    } else {
      body.push_back(for_loop(k, int_imm(0), int_imm(n), ForKind::Unrolled, fold));
    }
    body.push_back(combine_row_partials(ls, ld, red, dst->name, identity, fn, combine, op->span));
    Expr result = buffer_load(red, {i});
    if (!clear) result = combine(buffer_load(reg(dst), {i}), result);
    body.push_back(
        for_loop(i, int_imm(0), int_imm(rows), ForKind::Unrolled, buffer_store(reg(dst), result, {i}, op->span)));
    Stmt lowered = allocate(red, seq(body));
    return pairs.defined() ? allocate(pairs, lowered) : lowered;
  }

  // `e` (of register index k) when it is the same for all n registers, else nullopt.
  static std::optional<Expr> same_for_every_register(const Expr& e, const Var& k, int64_t n) {
    Expr first = simplify(substitute(e, {{k.node(), int_imm(0)}}));
    for (int64_t j = 1; j < n; ++j)
      if (!structural_equal(simplify(substitute(e, {{k.node(), int_imm(j)}})), first)) return std::nullopt;
    return first;
  }

  // Registers 2j and 2j + 1 of a thread hold values of one row, for every j (n even).
  static bool registers_pair_in_rows(const std::function<Expr(const Expr&)>& slot_of, int64_t n) {
    if (n % 2 != 0) return false;
    for (int64_t j = 0; j < n; j += 2) {
      auto a = as_const_int(simplify(slot_of(int_imm(j)))), b = as_const_int(simplify(slot_of(int_imm(j + 1))));
      if (!a || !b || *a != *b) return false;
    }
    return true;
  }

  // Thread t_ is the first of the threads that hold a row of the 2-d layout `p`
  // (the others hold copies of the same per-row values: one of them writes).
  Expr row_leader(const FragmentLayout& p) const {
    Expr leader = eq(floormod(t_, int_imm(p.row_lanes())), int_imm(0));
    if (p.row_warps() > 1) leader = logical_and(leader, eq(p.row_warp_index(t_), int_imm(0)));
    return leader;
  }

  const Analysis& a_;
  const Solution& s_;
  Expr t_;
  int64_t threads_;
  std::set<const BufferNode*> partials_;  // the registers of replicated reducers' partials
  bool cuda_;                             // 16-bit fragments cast in pairs (tl::cast_pair)
  std::map<BufKey, Buffer> regs_;
  std::map<BufKey, Buffer> swizzled_;
};

// wgmma for all register gemms of the kernel or for none: their fragments may be
// tied to each other and their shared operands shared, and the two kinds lay both
// out differently.
//
// Gemms under the default Square policy whose accumulators share per-row vectors
// (FlashAttention's scores and output, scaled by one row max) but split M over the
// warps differently would leave those vectors, and with them both tiles, in shared
// memory; a register A operand (the probabilities of P @ V) needs every warp along
// M in its gemm and in the gemm that produced it. Such gemms are analyzed again
// with FullRow, which is kept when it leaves fewer fragments in shared memory.
// Fragments only code outside T.Parallel uses (Analysis::simt_uses) leave the layout
// problem: each becomes a per-thread array of its own shape.
// The fragments that a T.finalize_reducer names.
std::set<BufKey> finalized_reducers(const Stmt& body) {
  struct Finalized : IRVisitor {
    std::set<BufKey> found;
    using IRVisitor::visit;
    void visit(const TileOpNode* op) override {
      if (op->op == TileOpKind::Reduce && attr_int(op->attrs, "finalize", 0)) found.insert(op->regions[0].buffer.get());
      IRVisitor::visit(op);
    }
  } finalized;
  finalized.visit(body);
  return finalized.found;
}

void replicate_scalar_fragments(Analysis& a) {
  for (BufKey k : a.simt_uses) {
    if (a.tile_uses.count(k)) {
      // Partials of a reducer that a tile op also reads or writes by a layout: no
      // layout holds both, so the reducer stays in shared memory.
      if (a.partial_updates.count(k))
        a.demote(a.candidates.at(k),
                 "a reducer updated in T.Parallel loops at indices no layout follows, and used by a tile op "
                 "that needs a layout");
      continue;
    }
    const Buffer& b = a.candidates.at(k);
    a.replicated[k] = Buffer::make(b->name, b->dtype, b->shape, Scope::Local, {}, b->span);
    a.candidates.erase(k);
    a.demoted.erase(k);
    a.region_of.erase(k);
  }
}

Analysis analyze_launch(const KernelLaunchNode* op, const Target& target, bool wgmma) {
  auto analyze = [&](bool w, const std::set<const TileOpNode*>& full_row) {
    Analysis a;
    a.target = &target;
    a.wgmma = w;
    a.full_row = full_row;
    a.threads = op->thread_count();
    a.reducers = finalized_reducers(op->body);
    Analysis first = a;
    Collector(first).visit(op->body);
    a.replicated_reducers = first.partial_updates;
    Collector(a).visit(op->body);
    replicate_scalar_fragments(a);
    return a;
  };
  auto analyze_either = [&](const std::set<const TileOpNode*>& full_row) {
    Analysis a = analyze(wgmma, full_row);
    if (!a.wgmma_refused) return a;
    Analysis b = analyze(false, full_row);
    b.a_wants_full_row.insert(a.a_wants_full_row.begin(), a.a_wants_full_row.end());
    return b;
  };
  // How many fragments a solution leaves in shared memory (-1: no solution).
  auto demoted_after_solving = [](Analysis probe) -> int64_t {
    try {
      solve(probe);
    } catch (const UserError&) {
      return -1;
    }
    return int64_t(probe.demoted.size());
  };
  Analysis a = analyze_either({});
  Analysis probe = a;
  solve(probe);
  std::set<const TileOpNode*> full_row;
  for (const GemmUse& g : a.gemms)
    if (probe.row_split_conflicts.count(g.c) && a.policy(g.op) == 0) full_row.insert(g.op);
  // A register A operand (the probabilities of P @ V) needs every warp along M, in
  // its gemm and in the gemms whose accumulators one T.copy or loop ties it to.
  UnionFind ties;
  for (auto& [x, y] : a.same) ties.unite(x, y);
  for (const Analysis::Loop& l : a.loops)
    for (BufKey f : l.full) ties.unite(f, l.full[0]);
  for (const TileOpNode* op : a.a_wants_full_row) {
    full_row.insert(op);
    for (const GemmUse& g : a.gemms)
      if (ties.find(g.c) == ties.find(op->regions[0].buffer.get()) && a.policy(g.op) == 0) full_row.insert(g.op);
  }
  if (full_row.empty()) return a;
  Analysis b = analyze_either(full_row);
  int64_t before = int64_t(probe.demoted.size()), after = demoted_after_solving(b);
  if (after < 0 || after >= before) return a;
  for (const TileOpNode* g : full_row)
    log(LogLevel::Debug, at(g->span,
                            "T.gemm takes policy FullRow instead of Square: it keeps per-row vectors shared with "
                            "another gemm's accumulator, or a register A operand, in registers"));
  return b;
}

std::vector<const KernelLaunchNode*> launches_of(const Stmt& s) {
  struct Launches : IRVisitor {
    std::vector<const KernelLaunchNode*> found;
    using IRVisitor::visit;
    void visit(const KernelLaunchNode* op) override { found.push_back(op); }
  } launches;
  launches.visit(s);
  return launches.found;
}

class PerKernel : public IRMutator {
 public:
  PerKernel(const Target& t, bool allow_wgmma) : target_(t), wgmma_(allow_wgmma && t.has_wgmma()) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    Analysis a = analyze_launch(op, target_, wgmma_);
    Solution s = solve(a);
    // A demoted fragment is a performance cliff: say which and why.
    std::vector<std::string> lines;
    for (const auto& [k, why] : a.demoted)
      lines.push_back(str_cat("fragment '", k->name, "' stays in shared memory: ", why));
    std::sort(lines.begin(), lines.end());
    for (const std::string& line : lines) log(LogLevel::Debug, line);
    bool cuda = target_.kind == TargetKind::CUDA;
    // A gemm whose accumulator another use pushed out of the registers runs as a
    // scalar loop over shared memory, some hundred times slower than on the tensor
    // cores and otherwise silent: say so at the default log level.
    if (cuda)
      for (const GemmUse& g : a.gemms)
        if (auto it = a.demoted.find(g.c); it != a.demoted.end())
          log(LogLevel::Warning,
              at(g.op->span, str_cat("T.gemm runs as a scalar loop, not on the tensor cores: its accumulator '",
                                     g.c->name, "' stays in shared memory because of ", it->second)));
    if (cuda)
      for (const auto& [gemm, why] : a.off_tensor_cores)
        log(LogLevel::Warning, at(gemm->span, str_cat("T.gemm runs as a scalar loop, not on the tensor cores: ", why)));
    return with_body(op, Lowerer(a, s, thread_rank(op), tma_destinations(op->body), cuda).mutate(op->body));
  }

 private:
  const Target& target_;
  bool wgmma_;
};

}  // namespace

std::set<const BufferNode*> wgmma_accumulators(const PrimFunc& f, const Target& target, bool allow_wgmma) {
  std::set<const BufferNode*> out;
  if (!allow_wgmma || !target.has_wgmma()) return out;
  for (const KernelLaunchNode* op : launches_of(f->body)) {
    Analysis a = analyze_launch(op, target, true);
    for (const auto& [buf, layout] : a.seeds)
      if (layout->kind() == FragmentLayout::Kind::WgmmaAccum) out.insert(buf);
  }
  return out;
}

std::map<const BufferNode*, SharedTileLayout> shared_tile_layouts(const PrimFunc& f, const Target& target,
                                                                  bool allow_wgmma) {
  std::map<const BufferNode*, SharedTileLayout> out;
  for (const KernelLaunchNode* op : launches_of(f->body)) {
    Analysis a = analyze_launch(op, target, allow_wgmma && target.has_wgmma());
    Solution s = solve(a);
    for (auto& [k, bl] : operand_layouts(a, s)) out[k] = bl.second;
  }
  return out;
}

PrimFunc lower_fragments(const PrimFunc& f, const Target& target, bool allow_wgmma) {
  return f.with_body(PerKernel(target, allow_wgmma).mutate(f->body));
}

}  // namespace tl
