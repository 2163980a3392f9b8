// Hopper control written by hand becomes device calls (docs/guide/targets.md,
// "Explicit Hopper control"). The statements it makes are ordered by the user's
// mbarriers, so they are wrapped as a pipeline's TMA bookkeeping is (kThreadOpAttr
// around kAsyncCopyAttr) and plan_barriers leaves them alone; T.tma_copy reuses the
// pipelines' TMA planning (tma_tile_loads in tma_copy.h), so its tiles, maps and
// swizzles are theirs.
#include "transform/lower_explicit_hopper.h"

#include <map>
#include <set>

#include "ir/device_calls.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "layout/layout.h"
#include "ops/extent_util.h"
#include "ops/tile_op.h"
#include "transform/lower_fragments.h"
#include "transform/lower_tile_ops.h"
#include "transform/tma_copy.h"

namespace tl {
namespace {

using BufKey = const BufferNode*;

// The marker name after kExplicitPrefix ("arrive", "ws" ...), or "" for any other expression.
std::string marker_of(const Expr& e, const CallNode** call = nullptr) {
  auto* c = e.as<CallNode>();
  if (!c || c->op != Intrinsic::Extern) return "";
  const std::string& name = c->args[0].as<StringImmNode>()->value;
  if (name.rfind(kExplicitPrefix, 0) != 0) return "";
  if (call) *call = c;
  return name.substr(std::string(kExplicitPrefix).size());
}

// The user-facing name of a marker, for messages.
std::string api_of(const std::string& marker) {
  if (marker == "ws") return "T.ws";
  if (marker == "init_barriers") return "T.alloc_barrier";
  if (marker == "arrive") return "T.barrier_arrive";
  if (marker == "wait") return "T.barrier_wait";
  if (marker == "expect_tx") return "T.mbarrier_expect_tx";
  if (marker == "wait_wgmma") return "T.wait_wgmma";
  return "T." + marker;
}

// The first use of explicit control in a function (and of T.wgmma_gemm), with its line.
struct FirstUse : IRVisitor {
  std::string api, wgmma;
  SourceSpan api_span, wgmma_span, current;
  using IRVisitor::visit;
  void visit(const Stmt& s) override {
    SourceSpan saved = current;
    if (s.defined() && s.span().defined()) current = s.span();
    IRVisitor::visit(s);
    current = saved;
  }
  void visit(const CallNode* op) override {
    if (const std::string* name = extern_name(op)) {
      // (A region ThreadBranches made of a plain branch is no use of the explicit API.)
      bool branch_region = *name == str_cat(kExplicitPrefix, "ws") && op->args.size() > 3;
      if (name->rfind(kExplicitPrefix, 0) == 0 && !branch_region)
        note(api_of(name->substr(std::string(kExplicitPrefix).size())));
    }
    IRVisitor::visit(op);
  }
  void visit(const TileOpNode* op) override {
    if (op->attrs.count(kTmaBarrierAttr)) note("T.tma_copy", op->span);
    if (op->attrs.count(kWgmmaExplicitAttr)) {
      note("T.wgmma_gemm", op->span);
      if (wgmma.empty()) wgmma = "T.wgmma_gemm", wgmma_span = op->span.defined() ? op->span : current;
    }
    IRVisitor::visit(op);
  }
  void note(const std::string& what, const SourceSpan& span = {}) {
    if (!api.empty()) return;
    api = what;
    api_span = span.defined() ? span : current;
  }
};

// Statements ordered by mbarriers, not by block barriers: plan_barriers skips them.
Stmt unplanned(Stmt s) {
  return attr_stmt(kThreadOpAttr, int64_t(1), attr_stmt(kAsyncCopyAttr, int64_t(1), std::move(s)));
}

Expr address_of(const Expr& element) {
  TL_ICHECK(element.as<BufferLoadNode>(), "an mbarrier operand is not a buffer element");
  return call(Intrinsic::AddressOf, {element});
}

Stmt device_call(const std::string& fn, std::vector<Expr> args, const SourceSpan& span) {
  return unplanned(evaluate(call_extern(dtype::Void, fn, std::move(args)), span));
}

int64_t const_arg(const CallNode* c, size_t i) {
  auto v = as_const_int(c->args[i]);
  TL_ICHECK(v, "argument ", i, " of ", c->args[0].as<StringImmNode>()->value, " is not a constant");
  return *v;
}

// Step 1: warpgroup regions and mbarrier operations.
class LowerMarkers : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  // The regions test the thread's rank here, which later passes use to simplify
  // their bodies; warp_specialize, last, makes the test warp-uniform to nvcc.
  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    Scoped<const KernelLaunchNode*> in_kernel(launch_, op);
    return IRMutator::visit(op, self);
  }

  Stmt visit(const IfThenElseNode* op, const Stmt& self) override {
    const CallNode* c = nullptr;
    if (marker_of(op->cond, &c) != "ws") return IRMutator::visit(op, self);
    TL_ICHECK(launch_, "T.ws outside a T.Kernel");
    int64_t lo = const_arg(c, 1), count = const_arg(c, 2);
    if (in_region_)
      throw_user_error(op->span,
                       "T.ws regions do not nest: this one is inside another T.ws region; close the outer "
                       "`with T.ws(...)` block first");
    in_region_ = true;
    Stmt body = mutate(op->then_case);
    in_region_ = false;
    Expr rank = thread_rank(launch_);
    Expr inside = logical_and(ge(rank, int_imm(lo)), lt(rank, int_imm(lo + count)));
    return attr_stmt(kWarpGroupAttr, std::vector<int64_t>{lo, count}, if_then_else(inside, body, {}, op->span),
                     op->span);
  }

  Expr visit(const CallNode* op, const Expr& self) override {
    if (marker_of(self) == "block_rank_in_cluster") return call_extern(dtype::Int32, "tl::block_rank_in_cluster", {});
    return IRMutator::visit(op, self);
  }

  Stmt visit(const EvaluateNode* op, const Stmt& self) override {
    const CallNode* c = nullptr;
    std::string m = marker_of(op->value, &c);
    if (m.empty()) return IRMutator::visit(op, self);
    const SourceSpan& at = op->span;
    if (m == "init_barriers") return init_barriers(c, at);
    if (m == "arrive") return device_call("tl::mbarrier_arrive", {address_of(c->args[1])}, at);
    if (m == "wait") return device_call("tl::mbarrier_wait", {address_of(c->args[1]), c->args[2]}, at);
    if (m == "expect_tx") return device_call("tl::mbarrier_expect_tx", {address_of(c->args[1]), c->args[2]}, at);
    if (m == "wait_wgmma") return device_call(device_call_name(kWgmmaWaitCall, {const_arg(c, 1)}), {}, at);
    if (m == "set_max_nreg")
      return device_call(device_call_name(const_arg(c, 2) ? kSetmaxnregIncCall : kSetmaxnregDecCall, {const_arg(c, 1)}),
                         {}, at);
    // Cluster barriers: every thread of the cluster takes part, so plan_barriers may
    // treat them as any other statement (they are not wrapped).
    if (m == "cluster_arrive" || m == "cluster_arrive_relaxed" || m == "cluster_wait" || m == "cluster_sync")
      return evaluate(call_extern(dtype::Void, "tl::" + m, {}), at);
    TL_ICHECK(false, "unknown explicit Hopper marker '", m, "'");
    return self;
  }

 private:
  // T.alloc_barrier: thread 0 initializes the mbarriers and fences them for the
  // async proxy, then the whole block waits for it before any thread uses them.
  Stmt init_barriers(const CallNode* c, const SourceSpan& at) {
    TL_ICHECK(launch_, "T.alloc_barrier outside a T.Kernel");
    if (in_region_)
      throw_user_error(at,
                       "T.alloc_barrier inside a T.ws region: every thread of the block waits for the "
                       "barriers' initialization, so allocate them before the first `with T.ws(...)`");
    auto* first = c->args[1].as<BufferLoadNode>();
    TL_ICHECK(first, "T.alloc_barrier marker without its buffer");
    std::vector<Stmt> init;
    for (size_t i = 2; i < c->args.size(); ++i) {
      Expr slot = address_of(buffer_load(first->buffer, {int_imm(int64_t(i - 2))}));
      init.push_back(evaluate(call_extern(dtype::Void, "tl::mbarrier_init", {slot, c->args[i]})));
    }
    init.push_back(evaluate(call_extern(dtype::Void, "tl::fence_mbarrier_init", {})));
    Expr elected = eq(thread_rank(launch_), int_imm(0));
    return seq({unplanned(if_then_else(elected, seq(init), {}, at)), barrier(BarrierKind::Threads, at)});
  }

  const KernelLaunchNode* launch_ = nullptr;
  bool in_region_ = false;
};

std::string scope_name(const Buffer& b) {
  switch (b->scope) {
    case Scope::Global:
      return "global";
    case Scope::Shared:
      return "shared";
    case Scope::SharedDyn:
      return "shared.dyn";
    case Scope::Fragment:
      return "local.fragment";
    default:
      return "local";
  }
}

// Step 2: T.tma_copy and T.wgmma_gemm, once the regions are known (the layouts of
// the gemm tiles depend on the threads of the region that runs the gemm).
class LowerCopiesAndGemms : public IRMutator {
 public:
  LowerCopiesAndGemms(const PrimFunc& f, std::map<BufKey, SharedTileLayout> layouts, std::set<BufKey> wgmma_accs)
      : params_(f->params), layouts_(std::move(layouts)), wgmma_accs_(std::move(wgmma_accs)) {}
  using IRMutator::mutate;

  // The shared tiles TMA writes swizzled, with the layout it writes them in.
  std::map<BufKey, Buffer> laid_out;

 protected:
  using IRMutator::visit;

  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    Scoped<const KernelLaunchNode*> in_kernel(launch_, op);
    return IRMutator::visit(op, self);
  }

  Stmt visit(const AttrNode* op, const Stmt& self) override {
    auto [lo, count] = warp_group_range(op);
    if (count == 0) return IRMutator::visit(op, self);
    Scoped<int64_t> in_region(region_lo_, lo);
    return IRMutator::visit(op, self);
  }

  Stmt visit(const TileOpNode* op, const Stmt& self) override {
    if (op->op == TileOpKind::Copy && op->attrs.count(kTmaBarrierAttr)) return tma_copy(op);
    if (op->op != TileOpKind::Gemm || !op->attrs.count(kWgmmaExplicitAttr)) return IRMutator::visit(op, self);
    const Buffer& acc = op->regions[2].buffer;
    if (!wgmma_accs_.count(acc.get()))
      throw_user_error(
          op->span,
          str_cat("T.wgmma_gemm: this gemm cannot run on wgmma (accumulator '", acc->name,
                  "'): it needs float16 or bfloat16 tiles in shared memory (A may be a fragment; a slice of a "
                  "tile only along K, starting at a multiple of the instruction's K, 32 bytes), a "
                  "T.alloc_fragment float32 accumulator, K a multiple of 16 and M x N splitting into "
                  "m64 x n16 blocks over the warpgroups that run it (and every other register gemm of the "
                  "kernel must fit wgmma too); the `tilelang` logger says why at DEBUG level, or use T.gemm"));
    Attrs attrs = op->attrs;
    attrs[kWgmmaAsyncAttr] = int64_t(1);
    return tile_op(op->op, op->regions, op->args, attrs, op->span);
  }

 private:
  [[noreturn]] void refuse(const TileOpNode* op, const std::string& why) {
    throw_user_error(op->span, "T.tma_copy: " + why);
  }

  Stmt tma_copy(const TileOpNode* op) {
    TL_ICHECK(launch_, "T.tma_copy outside a T.Kernel");
    const BufferRegion &src = op->regions[0], &dst = op->regions[1];
    Expr bar = std::get<Expr>(op->attrs.at(kTmaBarrierAttr));
    if (src.buffer->scope != Scope::Global)
      refuse(op, str_cat("copies global -> shared; its source '", src.buffer->name, "' is in ", scope_name(src.buffer),
                         " memory (a TMA store, shared -> global, is not supported: use T.copy)"));
    if (!is_shared(dst.buffer))
      refuse(op, str_cat("the destination must be a T.alloc_shared tile; '", dst.buffer->name, "' is in ",
                         scope_name(dst.buffer), " memory"));
    bool param = false;
    for (const Param& p : params_) param = param || (p.is_tensor() && p.buffer.same_as(src.buffer));
    if (!param)
      refuse(op, str_cat("the source must be a tensor parameter of the kernel (the runtime encodes its tensor map "
                         "at the launch); '",
                         src.buffer->name, "' is not"));
    if (!(src.buffer->dtype == dst.buffer->dtype))
      refuse(op, str_cat("source and destination need the same dtype (TMA moves bytes); got ", src.buffer->dtype.name(),
                         " and ", dst.buffer->dtype.name()));
    // The tile: the trailing dims of the destination, whole, after unit leading ones.
    size_t n = dst.ranges.size(), first = n;
    while (first > 0) {
      const Range& r = dst.ranges[first - 1];
      auto mn = as_const_int(r.min), ex = as_const_int(r.extent), sh = as_const_int(dst.buffer->shape[first - 1]);
      if (!(mn && *mn == 0 && ex && sh && *ex == *sh)) break;
      --first;
    }
    for (size_t d = 0; d < first; ++d)
      if (!is_const_one(dst.ranges[d].extent))
        refuse(op, str_cat("writes a whole tile: the destination must cover the trailing dims of '", dst.buffer->name,
                           "' whole after single indices (such as ", dst.buffer->name, "[s, :, :]); dim ", d,
                           " is neither"));
    if (first == n) refuse(op, str_cat("the destination region of '", dst.buffer->name, "' is empty of whole dims"));
    std::vector<Expr> shape(dst.buffer->shape.begin() + int64_t(first), dst.buffer->shape.end());
    Buffer tile = Buffer::make(dst.buffer->name, dst.buffer->dtype, shape, dst.buffer->scope, {}, dst.buffer->span);
    BufferRegion whole{tile, {}};
    for (const Expr& e : shape) whole.ranges.push_back(Range{int_imm(0), e});
    std::map<BufKey, SharedTileLayout> layouts = layouts_;
    if (auto it = layouts_.find(dst.buffer.get()); it != layouts_.end()) layouts[tile.get()] = it->second;
    Attrs attrs = op->attrs;
    attrs.erase(kTmaBarrierAttr);
    const Expr& start = src.ranges.back().min;
    if (!tma_inner_start_aligned(start, src.buffer->dtype))
      refuse(op, str_cat("the innermost start of the source, ", to_string(start), ", is not a provable multiple of ",
                         16 / src.buffer->dtype.bytes(), " ", src.buffer->dtype.name(),
                         " elements (16 bytes); the GPU stops a TMA copy at any other start with an illegal "
                         "instruction. Copy with T.copy instead"));
    Stmt copy = tile_op(TileOpKind::Copy, {src, whole}, op->args, attrs, op->span);
    std::optional<TmaTileLoads> plan =
        tma_tile_loads(copy.as<TileOpNode>(), address_of(bar), launch_, params_, layouts);
    if (!plan && !layouts_.count(dst.buffer.get())) {
      if (std::optional<int64_t> bytes = contiguous_run_bytes(src, dst, first)) {
        // One contiguous run in the tensor and in a plainly laid out tile (a row longer
        // than a TMA box): one bulk copy, no tensor map (device/cuda/tma.cuh, bulk_load).
        std::vector<Expr> smins, dmins;
        for (const Range& r : src.ranges) smins.push_back(r.min);
        for (const Range& r : dst.ranges) dmins.push_back(r.min);
        Expr dst_ptr = address_of(buffer_load(dst.buffer, dmins), AddressAccess::Write);
        Expr src_ptr = address_of(buffer_load(src.buffer, smins));
        Stmt issue =
            seq({evaluate(call_extern(dtype::Void, "tl::mbarrier_expect_tx", {address_of(bar), int_imm(*bytes)})),
                 evaluate(
                     call_extern(dtype::Void, "tl::bulk_load", {dst_ptr, src_ptr, int_imm(*bytes), address_of(bar)}))});
        return unplanned(if_then_else(leader(op), issue, {}, op->span));
      }
    }
    if (!plan)
      refuse(op, str_cat("TMA cannot copy into '", dst.buffer->name,
                         "' here. It needs: a source whose innermost stride is 1 and whose other strides and innermost "
                         "extent are whole multiples of 16 bytes; a box (the source region's extents, equal to the "
                         "tile's) of at most 256 per dim; rows of a 16-byte multiple and a tile of a 128-byte "
                         "multiple; a gemm operand tile with a multiple of 8 rows; padding with zeros"));
    // The loads address the stand-in tile; point them at the destination's slice.
    struct Rebase : IRMutator {
      const BufferNode* tile;
      Buffer real;
      std::vector<Expr> lead;
      using IRMutator::mutate;
      using IRMutator::visit;
      Expr visit(const BufferLoadNode* l, const Expr& self) override {
        if (l->buffer.get() != tile) return IRMutator::visit(l, self);
        std::vector<Expr> idx = lead;
        idx.insert(idx.end(), l->indices.begin(), l->indices.end());
        return buffer_load(real, idx, l->span);
      }
    } rebase;
    rebase.tile = tile.get();
    rebase.real = dst.buffer;
    for (size_t d = 0; d < first; ++d) rebase.lead.push_back(dst.ranges[d].min);
    Stmt loads = multicast(op, rebase.mutate(plan->loads));
    if (plan->layout) {
      auto it = laid_out.find(dst.buffer.get());
      if (it != laid_out.end() && !it->second->layout->same_placement(*plan->layout))
        refuse(op, str_cat("'", dst.buffer->name, "' is written by TMA in two different layouts"));
      laid_out[dst.buffer.get()] = with_layout(dst.buffer, plan->layout);
    }
    Stmt issue = seq(
        {evaluate(call_extern(dtype::Void, "tl::mbarrier_expect_tx", {address_of(bar), int_imm(plan->bytes)})), loads});
    return unplanned(if_then_else(leader(op), issue, {}, op->span));
  }

  // The thread that issues a T.tma_copy: the first of the enclosing T.ws region (else
  // thread 0), or with leader_scope_threads = n the first of every n threads.
  Expr leader(const TileOpNode* op) {
    auto it = op->attrs.find("leader_scope_threads");
    if (it == op->attrs.end()) return eq(thread_rank(launch_), int_imm(region_lo_));
    auto* n = std::get_if<int64_t>(&it->second);
    if (!n || *n <= 0 || *n % 32 != 0)
      refuse(op, str_cat("leader_scope_threads must be a positive multiple of 32 (whole warps), got ",
                         n ? std::to_string(*n) : std::string("a value that is not an int")));
    return eq(floormod(sub(thread_rank(launch_), int_imm(region_lo_)), int_imm(*n)), int_imm(0));
  }

  // The bytes of a T.tma_copy whose source region is one contiguous run of a compact
  // tensor (unit dims, then one partial dim, then whole dims) with as many elements as
  // the destination's trailing tile (dims `first` on); nullopt otherwise.
  static std::optional<int64_t> contiguous_run_bytes(const BufferRegion& src, const BufferRegion& dst, size_t first) {
    if (!src.buffer->strides.empty() || src.buffer->dtype.bits() % 8 != 0) return std::nullopt;
    size_t n = src.ranges.size(), k = 0;
    while (k < n && is_const_one(src.ranges[k].extent)) ++k;
    int64_t count = 1;
    for (size_t d = k; d < n; ++d) {
      auto ex = as_const_int(src.ranges[d].extent);
      if (!ex) return std::nullopt;
      if (d > k) {
        auto mn = as_const_int(src.ranges[d].min), sh = as_const_int(src.buffer->shape[d]);
        if (!mn || *mn != 0 || !sh || *sh != *ex) return std::nullopt;
      }
      count *= *ex;
    }
    int64_t tile = 1;
    for (size_t d = first; d < dst.ranges.size(); ++d) tile *= *as_const_int(dst.buffer->shape[d]);
    if (count != tile || count <= 0) return std::nullopt;
    return count * src.buffer->dtype.bytes();
  }

  // cluster_mask (TileLang's, also as annotations={"cluster_mask": m}): the blocks of
  // the cluster whose rank bit is set share the tile. The lowest of them multicasts
  // it into all of them, the others in the mask issue nothing (their arrival still
  // expects the tile's bytes, which the multicast brings), and a block outside the
  // mask loads its own. Every block of the mask must have initialized its barrier
  // before the multicast (T.cluster_sync after T.alloc_barrier).
  Stmt multicast(const TileOpNode* op, Stmt loads) {
    auto it = op->attrs.find("cluster_mask");
    if (it == op->attrs.end()) return loads;
    auto* m = std::get_if<int64_t>(&it->second);
    if (!m || *m < 1 || *m > 0xffff)
      refuse(op,
             "cluster_mask must be an int in [1, 0xffff]: bit r set for each block rank r of the cluster that "
             "shares the tile");
    const int64_t mask = *m, blocks = launch_->cluster_size();
    int high = 63 - __builtin_clzll(uint64_t(mask)), low = __builtin_ctzll(uint64_t(mask));
    if (high >= blocks)
      refuse(op, str_cat("cluster_mask ", mask, " names block rank ", high, ", but the kernel's clusters have ", blocks,
                         " block(s) (T.Kernel cluster_dims=...)"));
    struct ToMulticast : IRMutator {
      int64_t mask;
      using IRMutator::mutate;
      using IRMutator::visit;
      Expr visit(const CallNode* c, const Expr& self) override {
        auto* name = c->op == Intrinsic::Extern ? c->args[0].as<StringImmNode>() : nullptr;
        if (!name || !is_device_call(name->value, kTmaLoadCall)) return IRMutator::visit(c, self);
        std::vector<Expr> args(c->args.begin() + 1, c->args.end());  // smem, map, bar, coords...
        args.insert(args.begin() + 3, int_imm(mask));
        return call_extern(c->dtype, device_call_name(kTmaLoadMulticastCall, {*device_call_int_arg(name->value)}),
                           args);
      }
    } to_multicast;
    to_multicast.mask = mask;
    Stmt shared = to_multicast.mutate(loads);
    Expr rank = call_extern(dtype::Int32, "tl::block_rank_in_cluster", {}), in_mask;
    for (int r = 0; r < 16; ++r)
      if (mask >> r & 1) in_mask = in_mask.defined() ? logical_or(in_mask, eq(rank, int_imm(r))) : eq(rank, int_imm(r));
    return if_then_else(in_mask, if_then_else(eq(rank, int_imm(low)), shared), loads);
  }

  std::vector<Param> params_;
  std::map<BufKey, SharedTileLayout> layouts_;
  std::set<BufKey> wgmma_accs_;
  const KernelLaunchNode* launch_ = nullptr;
  int64_t region_lo_ = 0;  // the first thread of the enclosing T.ws region (0: the whole block)
};

// Step 3: the tiles TMA writes swizzled take that layout everywhere.
class UseLayouts : public IRMutator {
 public:
  explicit UseLayouts(const std::map<BufKey, Buffer>& b) : b_(b) {}
  using IRMutator::mutate;
  Buffer mutate_buffer(const Buffer& b) override {
    auto it = b_.find(b.get());
    return it == b_.end() ? b : it->second;
  }

 private:
  const std::map<BufKey, Buffer>& b_;
};

}  // namespace

std::pair<int64_t, int64_t> warp_group_range(const AttrNode* op) {
  if (op->key != kWarpGroupAttr) return {0, 0};
  auto* v = std::get_if<std::vector<int64_t>>(&op->value);
  TL_ICHECK(v && v->size() == 2, "malformed ", kWarpGroupAttr, " attribute");
  return {(*v)[0], (*v)[1]};
}

Buffer tma_call_tile(const CallNode* c, bool* loads) {
  if (!c || c->op != Intrinsic::Extern || c->args.size() < 3) return {};
  const std::string& fn = c->args[0].as<StringImmNode>()->value;
  bool load = is_device_call(fn, kTmaLoadCall) || is_device_call(fn, kTmaLoadMulticastCall);
  if (!load && !is_device_call(fn, kTmaStoreCall) && !is_device_call(fn, kTmaStoreAddCall)) return {};
  if (loads) *loads = load;
  auto* addr = c->args[load ? 1 : 2].as<CallNode>();
  auto* l = addr && addr->op == Intrinsic::AddressOf ? addr->args[0].as<BufferLoadNode>() : nullptr;
  TL_ICHECK(l, fn, "'s shared side is not the address of a shared tile");
  return l->buffer;
}

namespace {

// ---------------------------------------------------------------- branches on the thread index
// TileLang kernels specialize warps by hand: `tx = T.get_thread_binding()`, then
// `if tx < 128:` ... `elif 128 <= tx < 256:` around tile ops. A branch over whole
// warpgroups that T.ws could name becomes that T.ws region (sm_90), so its tile ops
// are spread over its threads only. On CUDA a branch over any other range of threads
// (`if tx == 0:`, `if tx < 32:`) becomes a region of those threads too, as TileLang
// spreads an op over the threads its branch leaves: copies, fills, atomics and
// T.Parallel loops, whose work any number of threads can share, and reductions and
// scans when the range is whole warps (they combine through shuffles and the region's
// named barrier). Any other branch on
// the thread index around work spread over the block's threads is refused: only the
// threads taking the branch would run their share of it.

// The first tile op or T.Parallel nest in `s` that spreads its work over the block's
// threads, outside T.ws regions (T.print, T.device_assert and ops on a thread's own
// registers run per thread).
struct SpreadWork {
  SourceSpan span;
  std::string what;
  bool shuffles = false;  // a reduction or scan: whole warps combine through shuffles
};
// A tile op in `s` that needs whole warps working together, or nullopt: the first gemm
// on tensor cores (or im2col) if there is one, else the first reduction or scan (these
// combine through warp shuffles).
std::optional<SpreadWork> warp_work(const Stmt& s) {
  struct Find : IRVisitor {
    std::optional<SpreadWork> found;
    using IRVisitor::visit;
    void visit(const TileOpNode* op) override {
      const bool group = op->op == TileOpKind::Gemm || op->op == TileOpKind::Im2col;
      const bool shuffles = op->op == TileOpKind::Reduce || op->op == TileOpKind::Cumsum;
      if ((group && (!found || found->shuffles)) || (shuffles && !found))
        found = SpreadWork{op->span, str_cat("T.", tile_op_name(op->op)), shuffles};
    }
  } f;
  f.visit(s);
  return f.found;
}

std::optional<SpreadWork> spread_work(const Stmt& s) {
  struct Find : IRVisitor {
    std::optional<SpreadWork> found;
    using IRVisitor::visit;
    void visit(const TileOpNode* op) override {
      if (found || op->op == TileOpKind::Print || op->op == TileOpKind::DeviceAssert || touches_registers(op)) return;
      found = SpreadWork{op->span, str_cat("T.", tile_op_name(op->op))};
    }
    void visit(const ForNode* op) override {
      if (found) return;
      if (op->for_kind == ForKind::Parallel) {
        found = SpreadWork{op->span, "a T.Parallel loop"};
        return;
      }
      IRVisitor::visit(op);
    }
    void visit(const IfThenElseNode* op) override {
      if (marker_of(op->cond) != "ws") IRVisitor::visit(op);
    }
  } f;
  f.visit(s);
  return f.found;
}

Expr strip_casts(Expr e) {
  while (auto* c = e.as<CastNode>()) e = c->value;
  return e;
}

// The thread ranks [first, second) that `cond` selects when it tests the index `tx` of
// a one-dimensional block: tx < c, tx >= c, c <= tx, tx == c, tx // w == k (and <, >=
// ...), and conjunctions of those; nullopt for any other condition.
std::optional<std::pair<int64_t, int64_t>> rank_range(const Expr& cond, const VarNode* tx, int64_t threads) {
  using Range = std::pair<int64_t, int64_t>;
  auto* b = cond.as<BinaryNode>();
  if (!b) return std::nullopt;
  if (b->op == BinaryOp::And) {
    auto x = rank_range(b->a, tx, threads), y = rank_range(b->b, tx, threads);
    if (!x || !y) return std::nullopt;
    return Range{std::max(x->first, y->first), std::min(x->second, y->second)};
  }
  BinaryOp op = b->op;
  Expr side = strip_casts(b->a);
  auto c = as_const_int(b->b);
  if (!c) {  // the constant on the left: mirror the comparison
    c = as_const_int(b->a);
    side = strip_casts(b->b);
    if (!c) return std::nullopt;
    op = op == BinaryOp::LT   ? BinaryOp::GT
         : op == BinaryOp::GT ? BinaryOp::LT
         : op == BinaryOp::LE ? BinaryOp::GE
         : op == BinaryOp::GE ? BinaryOp::LE
                              : op;
  }
  int64_t width = 1;  // tx // width compared with c
  if (auto* d = side.as<BinaryNode>(); d && (d->op == BinaryOp::FloorDiv || d->op == BinaryOp::Div)) {
    auto w = as_const_int(d->b);
    if (!w || *w <= 0) return std::nullopt;
    width = *w;
    side = strip_casts(d->a);
  }
  if (side.get() != tx) return std::nullopt;
  const int64_t k = *c;
  auto clamp = [&](int64_t lo, int64_t hi) {
    return Range{std::clamp<int64_t>(lo, 0, threads), std::clamp<int64_t>(hi, 0, threads)};
  };
  switch (op) {
    case BinaryOp::LT:
      return clamp(0, k * width);
    case BinaryOp::LE:
      return clamp(0, (k + 1) * width);
    case BinaryOp::GT:
      return clamp((k + 1) * width, threads);
    case BinaryOp::GE:
      return clamp(k * width, threads);
    case BinaryOp::EQ:
      return clamp(k * width, (k + 1) * width);
    default:
      return std::nullopt;
  }
}

class ThreadBranches : public IRMutator {
  using Range = std::pair<int64_t, int64_t>;  // thread ranks [first, second)

 public:
  explicit ThreadBranches(const Target& t) : target_(t) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    Scoped<const KernelLaunchNode*> in_kernel(launch_, op);
    // The threads that reach a statement, as a range of ranks while branches keep it one.
    Scoped<std::optional<Range>> reach(
        reach_, op->thread_vars.size() == 1 ? std::optional<Range>(Range{0, op->thread_count()}) : std::nullopt);
    return IRMutator::visit(op, self);
  }

  // A condition the frontend named (`cond = tx < 128`) is read through its name.
  Stmt visit(const LetStmtNode* op, const Stmt& self) override {
    lets_[op->var.node()] = substitute(op->value, lets_);
    Stmt out = IRMutator::visit(op, self);
    lets_.erase(op->var.node());
    return out;
  }

  Stmt visit(const IfThenElseNode* op, const Stmt& self) override {
    if (!launch_) return IRMutator::visit(op, self);
    if (marker_of(op->cond) == "ws") {
      Scoped<bool> in_region(in_region_, true);
      return IRMutator::visit(op, self);
    }
    const Expr cond = substitute(op->cond, lets_);
    bool on_thread = false;
    for (const Var& v : launch_->thread_vars) on_thread = on_thread || reads_var(cond, v.node());
    if (!on_thread) return IRMutator::visit(op, self);
    // The ranks each branch reaches: a range test cuts the reaching range in two
    // (the else side stays one range when the test takes one end of it).
    std::optional<Range> taken, other;
    if (reach_)
      if (auto r = rank_range(cond, launch_->thread_vars[0].node(), launch_->thread_count())) {
        taken = Range{std::max(reach_->first, r->first), std::min(reach_->second, r->second)};
        if (r->first <= reach_->first)
          other = Range{std::max(reach_->first, r->second), reach_->second};
        else if (r->second >= reach_->second)
          other = Range{reach_->first, std::min(reach_->second, r->first)};
      }
    // Branches inside first: an elif chain's inner branches become regions of their own.
    Stmt then_case, else_case;
    {
      Scoped<std::optional<Range>> reach(reach_, taken);
      then_case = mutate(op->then_case);
    }
    if (op->else_case.defined()) {
      Scoped<std::optional<Range>> reach(reach_, other);
      else_case = mutate(op->else_case);
    }
    // A branch every thread that gets here takes (tx < 64 in a block of 64) splits nothing.
    if (taken && reach_ && *taken == *reach_) return if_then_else(op->cond, then_case, else_case, op->span);
    std::optional<SpreadWork> then_work = spread_work(then_case);
    std::optional<SpreadWork> else_work = else_case.defined() ? spread_work(else_case) : std::nullopt;
    if (!then_work && !else_work) return if_then_else(op->cond, then_case, else_case, op->span);
    // The branches stay one if/else (barrier planning reads them as alternatives); a
    // branch with work becomes the region of its threads inside it.
    if (then_work) then_case = region(*then_work, op, taken, then_case);
    if (else_work) else_case = region(*else_work, op, other, else_case);
    return if_then_else(op->cond, then_case, else_case, op->span);
  }

 private:
  // `body` as the T.ws region of the threads `range`, or the error that says why not.
  Stmt region(const SpreadWork& work, const IfThenElseNode* branch, std::optional<Range> range, const Stmt& body) {
    constexpr int64_t kGroup = 128;
    const int64_t threads = launch_->thread_count();
    // The cpu target runs a block op whole on thread 0: right for a branch thread 0 takes.
    if (target_.runs_blocks_serially() && range && range->first == 0 && range->second > 0) return body;
    std::string why;
    SpreadWork blamed = work;
    if (target_.kind != TargetKind::CUDA) {
      why = str_cat("regions of threads need a CUDA target, and the target is '", target_.str(), "'");
    } else if (in_region_) {
      why = "the branch is inside a T.ws region already";
    } else if (!range) {
      why = "the condition is not a range of thread indices (tx < c, c0 <= tx < c1, tx == c, tx // 128 == k)";
    } else if (range->second <= range->first) {
      why = str_cat("no thread takes the branch (threads [", range->first, ", ", range->second, "))");
    } else if (auto whole = warp_work(body)) {
      // Tensor-core gemms, reductions and scans need the T.ws region of whole warpgroups.
      auto [lo, hi] = *range;
      int64_t count = hi - lo;
      blamed = *whole;
      if (whole->shuffles && lo % 32 == 0 && count % 32 == 0) {
        // Reductions and scans combine through warp shuffles and the region's named
        // barrier: any whole warps can run them, on every CUDA arch.
      } else if (!target_.has_tma())
        why = str_cat("regions of threads that run it need sm_90 (T.ws), and the target is '", target_.str(), "'");
      else if (lo % kGroup || count % kGroup || lo % count)
        why = str_cat("the branch covers threads [", lo, ", ", hi,
                      "), which are not whole warpgroups of 128 starting at a multiple of their number");
    }
    if (!why.empty())
      throw_user_error(blamed.span,
                       str_cat(blamed.what, " under the condition on the thread index at ", branch->span.str(),
                               " would be spread over all ", threads,
                               " threads of the block, of which only those taking the branch run it: ", why,
                               ". Branch on whole warpgroups (`if tx < 128:`, `elif 128 <= tx < 256:`) on sm_90, "
                               "use `with T.ws(...)`, or move it out of the branch"));
    int64_t lo = range->first, count = range->second - range->first;
    // The third argument marks a region made of a branch (FirstUse: not T.ws itself).
    Expr marker = call_extern(dtype::Bool, str_cat(kExplicitPrefix, "ws"), {int_imm(lo), int_imm(count), int_imm(1)});
    return if_then_else(marker, body, {}, branch->span);
  }

  const Target& target_;
  const KernelLaunchNode* launch_ = nullptr;
  bool in_region_ = false;
  std::optional<Range> reach_;
  std::map<const VarNode*, Expr> lets_;  // the values of the names bound around
};

// Without wgmma every T.gemm completes before the next statement (mma.sync, or loops
// on the cpu and Metal), so T.wait_wgmma has nothing to wait for: it is dropped, and a
// kernel written for Hopper (`T.gemm(..., wg_wait=-1)` then `T.wait_wgmma(0)`) runs there.
struct DropWgmmaWaits : IRMutator {
  using IRMutator::visit;
  Stmt visit(const EvaluateNode* op, const Stmt& self) override {
    return marker_of(op->value) == "wait_wgmma" ? seq({}) : self;
  }
};

}  // namespace

PrimFunc lower_explicit_hopper(const PrimFunc& input, LayoutFacts& facts, bool allow_wgmma) {
  const Target& target = facts.target();
  const PrimFunc f = target.has_wgmma() ? input : input.with_body(DropWgmmaWaits().mutate(input->body));
  struct Clusters : IRVisitor {
    const Target* target;
    using IRVisitor::visit;
    void visit(const KernelLaunchNode* k) override {
      if (k->cluster_size() > 1 && !target->has_tma())
        throw_user_error(
            k->span, str_cat("T.Kernel cluster_dims=(", k->cluster[0], ", ", k->cluster[1], ", ", k->cluster[2],
                             ") needs thread block clusters (CUDA sm_90 or later), but the target is '", target->str(),
                             "'; compile for target \"cuda -arch=sm_90a\" or drop cluster_dims"));
      IRVisitor::visit(k);
    }
  } clusters;
  clusters.target = &target;
  clusters.visit(f->body);
  PrimFunc branched = f.with_body(ThreadBranches(target).mutate(f->body));
  FirstUse use;
  use.visit(branched->body);
  if (use.api.empty())  // at most regions made of branches: they need only LowerMarkers
    return branched->body.same_as(f->body) ? f : branched.with_body(LowerMarkers().mutate(branched->body));
  if (!target.has_tma())
    throw_user_error(use.api_span, str_cat(use.api,
                                           " needs sm_90 or later (Hopper mbarriers, TMA and warpgroups), but the "
                                           "target is '",
                                           target.str(), "'; compile for target \"cuda -arch=sm_90a\""));
  if (!use.wgmma.empty() && !target.has_wgmma())
    throw_user_error(use.wgmma_span, str_cat("T.wgmma_gemm needs the wgmma instructions of sm_90a, but the target is '",
                                             target.str(), "'; compile for target \"cuda -arch=sm_90a\""));
  if (!use.wgmma.empty() && !allow_wgmma)
    throw_user_error(use.wgmma_span,
                     "T.wgmma_gemm needs wgmma, but the pass config tl.disable_wgmma is set; use T.gemm instead");
  PrimFunc g = branched.with_body(LowerMarkers().mutate(branched->body));
  LowerCopiesAndGemms lower(g, facts.shared_tile_layouts(g), facts.wgmma_accumulators(g));
  Stmt body = lower.mutate(g->body);
  if (!lower.laid_out.empty()) body = UseLayouts(lower.laid_out).mutate(body);
  return g.with_body(body);
}

}  // namespace tl
