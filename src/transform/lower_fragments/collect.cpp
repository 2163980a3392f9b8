// Phase 1 of lower_fragments (plan.h): every fragment of a T.Kernel with a constant
// shape is a candidate, and each use adds a constraint. T.Parallel nests tie the
// fragments they index by their loop variables to one layout (and per-row vectors
// indexed by the leading variables to the rows of it; a fragment indexed through
// T.reshape, at the row-major position of the variables in a nest of as many
// elements, is covered whole too, and the nest then runs over its registers);
// T.reduce over the last dim makes the destination the rows of the source, over dim
// 0 the columns (and the source a layout whose threads hold whole columns); per-column
// vectors (indexed by the last variable of a 2-d nest) are the columns of the nest's
// tile; a fragment-to-fragment T.copy ties both; T.gemm fixes its accumulator to the mma (or
// wgmma) layout. A use of any other shape (an index that is not the loop variable, an
// op without a register lowering) keeps that fragment block-wide in shared memory
// ("demoted").
#include "arith/simplify.h"
#include "ir/visitor.h"
#include "ops/extent_util.h"
#include "ops/tile_op.h"
#include "support/logging.h"
#include "transform/lower_explicit_hopper.h"
#include "transform/lower_fragments/plan.h"
#include "transform/lower_tile_ops.h"

namespace tl::fragments {
namespace {

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

}  // namespace

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

namespace {

// Dim `d` of `r` is a constant-width slice of its buffer's dim starting at a multiple
// of `align` (proven with the lets' values), inside the buffer where the start is
// known.
bool slice_at_multiple(const BufferRegion& r, size_t d, int64_t align, const std::map<const VarNode*, Expr>* lets) {
  auto ex = as_const_int(r.ranges[d].extent), sh = as_const_int(r.buffer->shape[d]);
  if (!ex || !sh || *ex <= 0 || *ex > *sh) return false;
  Expr start = simplify(r.ranges[d].min);
  auto c = as_const_int(start);
  if (c && (*c < 0 || *c + *ex > *sh)) return false;
  auto rem = as_const_int(simplify(floormod(lets ? substitute(start, *lets) : start, int_imm(align))));
  return rem && *rem == 0;
}

bool leading_dims_single(const BufferRegion& r) {
  for (size_t d = 0; d + 2 < r.ranges.size(); ++d)
    if (!is_const_one(r.ranges[d].extent)) return false;
  return true;
}

}  // namespace

std::optional<KSlice> k_slice(const BufferRegion& r, size_t k_dim, int64_t step,
                              const std::map<const VarNode*, Expr>* lets) {
  size_t n = r.ranges.size();
  if (n < 2 || k_dim + 2 < n || k_dim >= n || !leading_dims_single(r)) return std::nullopt;
  size_t other = k_dim == n - 1 ? n - 2 : n - 1;
  auto omin = as_const_int(r.ranges[other].min), oex = as_const_int(r.ranges[other].extent),
       osh = as_const_int(r.buffer->shape[other]);
  if (!omin || *omin != 0 || !oex || !osh || *oex != *osh) return std::nullopt;
  if (!slice_at_multiple(r, k_dim, step, lets) || *as_const_int(r.ranges[k_dim].extent) % step != 0)
    return std::nullopt;
  return KSlice{simplify(r.ranges[k_dim].min), *as_const_int(r.buffer->shape[k_dim])};
}

bool mma_slice(const BufferRegion& r, size_t k_dim, int64_t step, const std::map<const VarNode*, Expr>* lets) {
  size_t n = r.ranges.size();
  if (n < 2 || k_dim + 2 < n || k_dim >= n || !leading_dims_single(r)) return false;
  size_t mn_dim = k_dim == n - 1 ? n - 2 : n - 1;
  // M / N: rows at a multiple of 8 (the swizzle's period), or columns at 128 bytes.
  int64_t mn_align = mn_dim == n - 1 ? std::max<int64_t>(1, 128 / elem_bytes(r.buffer->dtype)) : 8;
  return slice_at_multiple(r, k_dim, step, lets) && *as_const_int(r.ranges[k_dim].extent) % step == 0 &&
         slice_at_multiple(r, mn_dim, mn_align, lets);
}

namespace {

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

  // The values of the pure index-typed lets around a use (`k0 = j * 16`): what a
  // K slice's start is a multiple of.
  void visit(const LetStmtNode* op) override {
    std::optional<Expr> pure = pure_index_value(op->value, lets_);
    if (pure) lets_[op->var.node()] = *pure;
    IRVisitor::visit(op);
    if (pure) lets_.erase(op->var.node());
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
    if (a_.replicated_reducers.count(b.get()) || extents_.empty()) return true;
    Access access = loop_access(b, idx);  // (a reducer's layout follows only whole loops or their rows)
    return access != Access::Full && access != Access::Row;
  }

  // How a T.Parallel nest with constant extents indexes a fragment: by all its
  // variables (or through T.reshape), by all but the last (a per-row vector), or else.
  enum class Access { Full, Row, Col, ColParent, Other };
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
    // A per-column vector: [j] in a nest over (i, j).
    if (vars_.size() == 2 && idx.size() == 1 && shape == std::vector<int64_t>{extents_[1]} &&
        idx[0].as<VarNode>() == vars_[1])
      return Access::Col;
    // A 2-d fragment read [e, j] in a nest over j alone, e free of j: the nest's
    // vectors are its columns.
    if (vars_.size() == 1 && idx.size() == 2 && shape.size() == 2 && shape[1] == extents_[0] &&
        idx[1].as<VarNode>() == vars_[0] && !reads_var(idx[0], vars_[0]))
      return Access::ColParent;
    return reshaped(shape, idx) ? Access::Full : Access::Other;
  }

  void visit(const ForNode* op) override {
    if (op->for_kind != ForKind::Parallel || loop_) return IRVisitor::visit(op);
    // A nest that writes only registers runs whole on every thread (per_thread_nest):
    // thread-level code, whose fragment reads are per-thread uses.
    if (writes_only_registers(op->body)) return IRVisitor::visit(op);
    std::vector<const ForNode*> nest = parallel_nest(op);
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
    if (loop.full.empty()) {
      for (BufKey r : loop.rows)
        a_.demoted.emplace(r, at(op->span,
                                 "indexed by the leading variables of a T.Parallel loop that no register "
                                 "fragment covers"));
      for (BufKey c : loop.cols)
        a_.demoted.emplace(c, at(op->span,
                                 "indexed by the last variable of a T.Parallel loop that no register fragment "
                                 "covers"));
      for (BufKey c : loop.col_parents)
        a_.demoted.emplace(c,
                           at(op->span, "indexed [e, j] in a T.Parallel loop over j that no register vector covers"));
    }
    a_.loops.push_back(std::move(loop));
  }

  // A store TMA can take from a shared tile: the tile is stored whole to a global
  // region (T.copy, or added by T.atomic_add), or already by tl::tma_store /
  // tl::tma_store_add (lower_tma_stores ran): every pass sees the same tiles.
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
        // (lower_copy in lower_ops.cpp); between two fragments, only whole ones pair.
        if (!pairs_exactly(s, d) || (frag(s) && frag(d) && (!covers_whole(s) || !covers_whole(d)))) {
          demote_all("T.copy between parts of fragments, or of regions whose extents do not pair up");
          break;
        }
        if (frag(s) && frag(d)) {
          if (*const_shape(s.buffer) == *const_shape(d.buffer))
            a_.same.emplace_back(s.buffer.get(), d.buffer.get());
          else
            demote_all("T.copy between fragments of different shapes");
        }
        a_.note_bytes(s.buffer, d.buffer);
        a_.note_bytes(d.buffer, s.buffer);
        if (frag(d) && s.buffer->scope == Scope::Global) a_.loaded_from_global.insert(d.buffer.get());
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
          a_.row_of.emplace_back(d.buffer.get(), s.buffer.get());
        } else if (frag(s) && frag(d) && shuffled && covers_whole(s) && covers_whole(d) && s.buffer.ndim() == 2 &&
                   d.buffer.ndim() == 1 && attr_int(op->attrs, "dim", -1) == 0 &&
                   *as_const_int(d.buffer->shape[0]) == *as_const_int(s.buffer->shape[1])) {
          // Over dim 0: each thread holds whole columns of the source and folds them.
          a_.col_of.emplace_back(d.buffer.get(), s.buffer.get());
        } else {
          demote_all("T.reduce_" + kind + " other than over dim 1 or dim 0 of a whole 2-d fragment into a 1-d one");
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
        a_.off_tensor_cores.emplace_back(
            op, str_cat(why, "; use a ", acc.name(), " accumulator", in == dtype::Float16 ? " (or float16)" : ""));
      return fail(why);
    }
    if (!covers_whole(c) || c.buffer.ndim() != 2) return fail("the accumulator region is not a whole 2-d fragment");
    bool ta = attr_int(op->attrs, "transpose_A", 0), tb = attr_int(op->attrs, "transpose_B", 0);
    int64_t m = *as_const_int(c.ranges[0].extent), n = *as_const_int(c.ranges[1].extent);
    size_t na = a.ranges.size();
    auto kk = as_const_int(ta ? a.ranges[na - 2].extent : a.ranges[na - 1].extent);
    int64_t k_step = 32 / elem_bytes(in);  // one mma reads 32 bytes of K
    if (!kk || *kk % k_step != 0) return fail(str_cat("K is not a multiple of ", k_step));
    // T.gemm_sp on the sparse tensor cores (select_gemm_sp chose it): A holds the kept
    // values, half of K; one instruction reads 32 bytes of them a row (mma.sp m16n8k32
    // and wgmma.sp m64nNk32 for 16-bit types, mma.sp m16n8k64 for 8-bit ones).
    // Operands from shared memory; wgmma.sp only for 16-bit types (unless
    // tl.gemm_sp_wgmma is off), and a gemm it does not fit keeps mma.sp without moving
    // the kernel's other gemms off wgmma (mma.sp's operands are its own).
    bool sparse = attr_int(op->attrs, kGemmSpAttr, 0) == kGemmSpCompressed;
    if (sparse) {
      bool fits = (half || fp8) ? c.buffer->dtype == dtype::Float32 : byte && c.buffer->dtype == dtype::Int32;
      if (!fits || !is_shared(op->regions[3].buffer))
        return fail(
            "mma.sp takes float16/bfloat16/fp8 operands into float32 and int8/uint8 into int32, metadata in "
            "shared memory");
      // A_sparse in registers (select_gemm_sp chose it for wgmma.sp with A from
      // registers): try_wgmma gives it the register layout of a wgmma A.
    }
    const bool sparse_regs = sparse && use.a;
    std::string where = op->span.defined() ? op->span.str() + ": " : "";
    if (a_.wgmma && sparse && a_.sparse_wgmma && !half)
      log(LogLevel::Debug, where + "T.gemm_sp runs on mma.sp: wgmma.mma_async.sp is emitted for float16 and bfloat16");
    if (a_.wgmma && sparse && a_.sparse_wgmma && half) {
      std::string why = try_wgmma(op, use, m, n, *kk, ta);
      if (why.empty()) {
        log(LogLevel::Debug, where + "T.gemm_sp runs on wgmma.mma_async.sp (tl.gemm_sp_wgmma=False keeps mma.sp)");
        return;
      }
      // A_sparse in registers has no mma.sp form: the gemm takes the shared-memory
      // path (A_sparse demoted, dot products reading it through the metadata).
      if (sparse_regs) return fail("A_sparse in registers cannot use wgmma.mma_async.sp: " + why);
      log(LogLevel::Debug, where + "T.gemm_sp cannot use wgmma.mma_async.sp, so it runs on mma.sp: " + why);
    }
    if (sparse_regs) return fail("A_sparse in registers runs on wgmma.mma_async.sp only, which is off here");
    if (a_.wgmma && !sparse) {
      std::string why = try_wgmma(op, use, m, n, *kk, ta);
      if (why.empty()) return;
      a_.wgmma_refused = true;
      log(LogLevel::Debug, where + "T.gemm cannot use wgmma, so the kernel's gemms use mma.sync: " + why);
    }
    int64_t warps = a_.threads / 32;
    int64_t wm = gemm_warp_split(m, n, warps, a_.policy(op), 16);
    if (!wm)
      return fail(str_cat("the ", m, " x ", n, " tile does not split over ", warps,
                          " warps into warp tiles of 16-row and 16-column multiples"));
    for (const BufferRegion* r : {&a, &b}) {
      size_t nd = r->ranges.size(), k_dim = (r == &a ? !ta : tb) ? nd - 1 : nd - 2;
      bool sliced = !sparse && is_shared(r->buffer) && mma_slice(*r, k_dim, k_step, &lets_);
      if (!(is_shared(r->buffer) || a_.candidate(r->buffer)) || !(covers_tile(*r) || sliced))
        return fail("an operand is not a whole shared-memory tile (or a slice of one: K from a multiple of " +
                    std::to_string(k_step) + ", M / N from a multiple of 8 rows or 128 bytes of a row)");
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
  // into int32; one instruction reads 32 bytes of K; for a compressed T.gemm_sp, A
  // the kept values, whose K / 2-wide rows wgmma.sp reads as the dense m64nNk16
  // reads A, and `kk` their extent), warpgroups splitting C into
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
    bool tb = attr_int(op->attrs, "transpose_B", 0), sparse = attr_int(op->attrs, kGemmSpAttr, 0) != 0;
    if (!half && (ta || !tb))
      return str_cat("wgmma reads ", in.name(), " operands only K-major: A [M][K] and B [N][K] (transpose_A=False, ",
                     "transpose_B=True), and this T.gemm has transpose_A=", ta ? "True" : "False",
                     ", transpose_B=", tb ? "True" : "False");
    for (const BufferRegion* r : {&a, &b}) {
      size_t nd = r->ranges.size(), k_dim = (r == &a ? !ta : tb) ? nd - 1 : nd - 2;
      bool sliced =
          is_shared(r->buffer) && (covers_column_blocks(*r) || (!sparse && k_slice(*r, k_dim, inst_k, &lets_)));
      if (!(is_shared(r->buffer) || a_.candidate(r->buffer)) || !(covers_tile(*r) || sliced))
        return "an operand is not a whole shared-memory tile (or whole swizzle column blocks of one, or a K slice "
               "of one at a multiple of the instruction's K)";
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
      case Access::Col:
        return loop_->cols.push_back(b.get());
      case Access::ColParent:
        return loop_->col_parents.push_back(b.get());
      case Access::Other:
        break;
    }
    a_.demote(b, at(loop_span_,
                    "indexed by something other than the T.Parallel loop's variables (all of them, all "
                    "but the last for a per-row vector, or the last of two for a per-column vector)"));
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
  int64_t region_lo_ = 0;                // the first thread of the T.ws region being collected
  std::map<const VarNode*, Expr> lets_;  // visit(LetStmtNode)
  Analysis::Loop* loop_ = nullptr;
  SourceSpan loop_span_;
  std::vector<const VarNode*> vars_;
  std::vector<Var> loop_vars_;
  std::vector<int64_t> extents_;
};

}  // namespace

void collect(Analysis& a, const Stmt& body) {
  Collector(a).visit(body);
}

}  // namespace tl::fragments
