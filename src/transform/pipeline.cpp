// The whole lowering order, per target, readable in one place. Each step is a
// one-function pass from this folder; run_pass names, times, dumps and verifies it.
#include "transform/pipeline.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>

#include "ir/device_calls.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "ir/visitor.h"
#include "support/env_switch.h"
#include "transform/align_shifted_fragment_reads.h"
#include "transform/check_bounds.h"
#include "transform/check_parallel_stores.h"
#include "transform/drop_idle_async_waits.h"
#include "transform/fragment_updates_once.h"
#include "transform/global_layouts.h"
#include "transform/hoist_invariant_ifs.h"
#include "transform/legalize_negative_indices.h"
#include "transform/legalize_safe_memory.h"
#include "transform/lower_explicit_hopper.h"
#include "transform/lower_fragments.h"
#include "transform/lower_simd_reduce.h"
#include "transform/lower_simdgroup_gemm.h"
#include "transform/lower_tile_ops.h"
#include "transform/lower_tma_stores.h"
#include "transform/pair_lane_stores.h"
#include "transform/pipeline_loops.h"
#include "transform/plan_barriers.h"
#include "transform/plan_shared_memory.h"
#include "transform/select_gemm_sp.h"
#include "transform/shared_layouts.h"
#include "transform/simplify_pass.h"
#include "transform/split_parallel_at_barriers.h"
#include "transform/stage_reduction_sources.h"
#include "transform/vectorize_loops.h"
#include "transform/warp_specialize.h"
#include "transform/widen_indices.h"

namespace tl {
namespace {

// A variable that holds a value (TILELANG_DUMP_IR: 1 or a directory); unset, empty and 0
// are off.
const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string(v) != "0" ? v : nullptr;
}

// The observer of the lower() call running on this thread, if it was given one.
thread_local const PassObserver* observer = nullptr;

// Pass timing of the lower() call running on this thread: passes that take at least
// `threshold_ms` are printed; < 0: off.
thread_local double profile_threshold_ms = -1;

// Where pass times are printed from: tl.pass_profile or TILELANG_PASS_PROFILE (each pass
// taking at least tl.pass_profile_threshold_ms, else TILELANG_PASS_PROFILE_THRESHOLD_MS,
// else 0 ms), or TILELANG_TIME_PASSES (every pass); -1 when none is on.
double pass_profile_threshold(const PassConfig& configs) {
  if (env_switch("TILELANG_TIME_PASSES") == EnvSwitch::On) return 0;
  if (!configs.pass_profile && env_switch("TILELANG_PASS_PROFILE") != EnvSwitch::On) return -1;
  if (configs.pass_profile_threshold_ms >= 0) return configs.pass_profile_threshold_ms;
  const char* v = std::getenv("TILELANG_PASS_PROFILE_THRESHOLD_MS");
  std::string text = v ? v : "";
  size_t first = text.find_first_not_of(" \t"), last = text.find_last_not_of(" \t");
  text = first == std::string::npos ? "" : text.substr(first, last - first + 1);
  if (text.empty()) return 0;
  char* end = nullptr;
  errno = 0;
  double ms = std::strtod(text.c_str(), &end);
  if (errno || end != text.c_str() + text.size() || !(ms >= 0) || !std::isfinite(ms))
    throw_user_error({}, str_cat("TILELANG_PASS_PROFILE_THRESHOLD_MS must be a finite non-negative number of "
                                 "milliseconds, got '",
                                 v, "'"));
  return ms;
}

void dump(const std::string& step, const PrimFunc& f) {
  if (observer && *observer) (*observer)(step, f);
  const char* where = env("TILELANG_DUMP_IR");
  if (!where) return;
  std::string text = "# after " + step + "\n" + to_string(f) + "\n";
  if (std::string(where) == "1") {
    std::fputs(text.c_str(), stderr);
    return;
  }
  std::string path = std::string(where) + "/" + f->name + "." + step + ".py";
  std::ofstream out(path);
  out << text;
  out.flush();
  if (!out)
    throw_user_error({}, str_cat("TILELANG_DUMP_IR=", where, ": cannot write ", path, " (", std::strerror(errno),
                                 "); give an existing, writable directory, or 1 to print to stderr"));
}

PrimFunc run_pass(const char* name, const PrimFunc& f, const std::function<PrimFunc(const PrimFunc&)>& pass) {
  auto start = std::chrono::steady_clock::now();
  PrimFunc out = pass(f);
  if (profile_threshold_ms >= 0) {
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (ms >= profile_threshold_ms) std::fprintf(stderr, "[tilelang] pass %-24s %8.3f ms\n", name, ms);
  }
  dump(name, out);
  verify(out);  // a malformed result is a compiler bug: stop here, naming the pass's output
  return out;
}

}  // namespace

namespace {

// Every target, last: the tile ops left become loops, global accesses get their
// bounds checks, and the simplifier removes the checks the sizes prove.
PrimFunc lower_common(PrimFunc f, const Target& t, const PassConfig& configs) {
  f = run_pass("lower_tile_ops", f, [&](const PrimFunc& g) { return lower_tile_ops(g, t); });
  // Out-of-bounds global accesses are skipped (stores) or read 0 (loads) by default.
  if (configs.safe_memory_legalize)
    f = run_pass("legalize_safe_memory", f, [&](const PrimFunc& g) { return legalize_safe_memory(g); });
  f = run_pass("simplify", f, [&](const PrimFunc& g) { return simplify_func(g); });
  // `for k: if c: ...` with c the same in every iteration: `if c: for k: ...`.
  f = run_pass("hoist_invariant_ifs", f, [&](const PrimFunc& g) { return hoist_invariant_ifs(g); });
  return f;
}

// The first statement that calls the extern function `name`, if any.
const EvaluateNode* find_extern_call(const Stmt& body, const std::string& name) {
  return static_cast<const EvaluateNode*>(find_stmt(body, [&](const Stmt& st) {
    auto* e = st.as<EvaluateNode>();
    const std::string* n = e ? extern_name(e->value) : nullptr;
    return n && *n == name;
  }));
}

// T.sync_threads(id, count): a named barrier of part of the block, which the CUDA
// targets have and the cpu target runs with its fibers (device/cpu/warp.h).
void refuse_named_barriers(const PrimFunc& f, const Target& t) {
  const EvaluateNode* call = find_extern_call(f->body, kNamedBarrierSyncCall);
  if (!call) call = find_extern_call(f->body, kNamedBarrierArriveCall);
  if (call)
    throw_user_error(call->span,
                     "T.sync_threads(barrier_id, arrive_count) and T.named_barrier_arrive are a named barrier of "
                     "part of the block, "
                     "which the CUDA targets have and the target '" +
                         t.str() + "' has not; use T.sync_threads() there");
}

// T.__ffs, T.__fns, T.match_any_sync, T.match_all_sync: CUDA's bit and warp-match
// intrinsics, which the cpu target and the CUDA emulator compute too; Metal's SIMD
// groups have no match instruction, and the source carries no copy of the others.
void refuse_cuda_warp_bits(const PrimFunc& f, const Target& t) {
  static const std::map<std::string, const char*> names = {{kFindFirstSetCall, "T.__ffs"},
                                                           {kFindNthSetCall, "T.__fns"},
                                                           {kMatchAnySyncCall, "T.match_any_sync"},
                                                           {kMatchAllSyncCall, "T.match_all_sync"}};
  const char* found = nullptr;
  for_each_expr(f->body, [&](const Expr& e) {
    const std::string* n = extern_name(e);
    if (auto it = n ? names.find(*n) : names.end(); !found && it != names.end()) found = it->second;
  });
  if (found)
    throw_user_error(f->span,
                     str_cat(found, " is available on the cuda and cpu targets, not on the target '", t.str(), "'"));
}

// T.rng_init: cuRAND's generators live in the C++ device headers
// (device/common/philox_rng.h, mrg32k3a_rng.h, xorwow_rng.h); Metal's self-contained
// source has no copy of them, and their double-precision draws need float64, which
// Metal lacks.
void refuse_random_numbers(const PrimFunc& f, const Target& t) {
  const EvaluateNode* call = find_extern_call(f->body, "tl::philox_init");
  if (!call) call = find_extern_call(f->body, "tl::mrg32k3a_init");
  if (!call) call = find_extern_call(f->body, "tl::xorwow_init");
  if (call)
    throw_user_error(call->span,
                     "T.rng_init (cuRAND's generators) is available on the cpu and cuda "
                     "targets, not on the target '" +
                         t.str() + "'; draw the random numbers on the host and pass them in");
}

// T.ldg* / T.stg* / T.lds* / T.sts* and T.ptx_cp_async / commit / wait: device functions
// of the C++ headers (device/common/wide_access.h, device/cuda/copy_async.cuh), which
// Metal's self-contained source has no copy of.
void refuse_wide_accesses(const PrimFunc& f, const Target& t) {
  struct Find : IRVisitor {
    SourceSpan at;
    const std::string* name = nullptr;
    SourceSpan where;
    using IRVisitor::visit;
    void visit(const Stmt& s) override {
      if (name || !s.defined()) return;
      Scoped<SourceSpan> here(at, s.span());
      IRVisitor::visit(s);
    }
    void visit(const CallNode* op) override {
      const std::string* n = extern_name(op);
      for (const char* prefix :
           {"tl::load_global_", "tl::store_global_", "tl::load_shared_", "tl::store_shared_", "tl::cp_async"})
        if (!name && n && n->rfind(prefix, 0) == 0) {
          name = n;
          where = at;
        }
      IRVisitor::visit(op);
    }
  } find;
  find.visit(f->body);
  if (find.name)
    throw_user_error(find.where, "T.ldg / T.stg / T.lds / T.sts and T.ptx_cp_async (" + *find.name +
                                     ") are available on the cpu and cuda targets, not on the target '" + t.str() +
                                     "'; read and write the elements directly");
}

// T.sync_grid: a barrier of the whole launch, which needs every block resident at once
// (a cooperative launch on CUDA, one OS thread per block on the cpu target and the CUDA
// emulator). Metal has no such launch; a cluster kernel would need the driver's
// cluster-aware occupancy check, which the runtime does not make.
void check_grid_barrier(const PrimFunc& f, const Target& t) {
  const EvaluateNode* call = find_extern_call(f->body, kSyncGridCall);
  if (!call) return;
  if (t.kind == TargetKind::Metal)
    throw_user_error(call->span,
                     "T.sync_grid() needs every block of the launch resident at once (a cooperative "
                     "launch), which the target '" +
                         t.str() +
                         "' has not; split the kernel at the barrier into two T.Kernel blocks, which "
                         "run one after the other");
  struct FindCluster : IRVisitor {
    const KernelLaunchNode* launch = nullptr;
    using IRVisitor::visit;
    void visit(const KernelLaunchNode* op) override {
      if (!op->cluster.empty()) launch = op;
    }
  } cluster;
  cluster.visit(f->body);
  if (cluster.launch)
    throw_user_error(call->span,
                     "T.sync_grid() in a kernel with cluster_dims is not supported (a cooperative launch of thread "
                     "block clusters); drop cluster_dims from the T.Kernel, or split the kernel at the barrier "
                     "into two T.Kernel blocks");
}

// Grid and block sizes known at compile time against the target's limits (CUDA's
// gridDim and blockDim, Metal's threadgroups); dynamic extents are checked at launch.
void check_launch_limits(const PrimFunc& f, const Target& t) {
  struct Check : IRVisitor {
    const Target& t;
    const std::string& name;
    Check(const Target& t, const std::string& name) : t(t), name(name) {}
    using IRVisitor::visit;
    void visit(const KernelLaunchNode* op) override {
      std::array<int64_t, 3> grid{1, 1, 1};
      for (size_t d = 0; d < op->grid.size() && d < 3; ++d) grid[d] = as_const_int(op->grid[d]).value_or(-1);
      if (auto why = launch_limit_violation(t, grid, op->threads))
        throw_user_error(op->span, str_cat("T.Kernel of kernel '", name, "': ", *why));
    }
  } check(t, f->name);
  check.visit(f->body);
}

// On-chip arrays that live on a stack: one that does not fit overflows it and ends the
// process (SIGSEGV), so the sizes known here are checked, at the T.Kernel's line. The
// arrays one thread keeps (T.alloc_local, and on the GPU targets the fragments lowering
// spread over the threads) take at most kMaxThreadArrayBytes on every target: CUDA
// allows 512 KiB of local memory a thread, and the emulators and the cpu target's
// threads run on 1 MiB fiber stacks (device/cpu/threads.h). The cpu target also keeps a
// block's shared, fragment and local arrays on the stack of the OS thread that runs the
// block: at most kMaxCpuBlockArrayBytes of them.
constexpr int64_t kMaxThreadArrayBytes = int64_t(512) << 10;
constexpr int64_t kMaxCpuBlockArrayBytes = int64_t(4) << 20;

void check_stack_arrays(const PrimFunc& f, const Target& t) {
  struct Check : IRVisitor {
    const Target& t;
    const std::string& name;
    std::vector<Buffer> thread, block;  // the arrays of the launch being visited
    std::set<const VarNode*> thread_vars;
    bool reads_thread_index = false;  // cpu: only such kernels run threads as fibers
    Check(const Target& t, const std::string& name) : t(t), name(name) {}
    using IRVisitor::visit;
    static int64_t bytes(const Buffer& b) {
      return (as_const_int(b.num_elements()).value_or(0) * b->dtype.bits() * b->dtype.lanes() + 7) / 8;
    }
    static std::string listed(std::vector<Buffer> bufs) {
      std::stable_sort(bufs.begin(), bufs.end(), [](const Buffer& a, const Buffer& b) { return bytes(a) > bytes(b); });
      std::string out;
      for (size_t i = 0; i < bufs.size() && i < 4; ++i) {
        std::string shape;
        for (size_t d = 0; d < bufs[i]->shape.size(); ++d) {
          auto n = as_const_int(bufs[i]->shape[d]);
          shape += str_cat(d ? "x" : "", n ? std::to_string(*n) : std::string("?"));
        }
        out += str_cat(i ? ", " : "", "'", bufs[i]->name, "' ", bytes(bufs[i]), " (", shape, " ", bufs[i]->dtype.name(),
                       ")");
      }
      return out;
    }
    static int64_t total(const std::vector<Buffer>& bufs) {
      int64_t sum = 0;
      for (const Buffer& b : bufs) sum += bytes(b);
      return sum;
    }
    void visit(const KernelLaunchNode* op) override {
      thread.clear();
      block.clear();
      thread_vars.clear();
      for (const Var& v : op->thread_vars) thread_vars.insert(v.node());
      reads_thread_index = false;
      IRVisitor::visit(op);
      const std::string target = t.str();
      // A cpu kernel that reads no thread index runs its block on one executor: its
      // local arrays are the block's (counted below).
      const bool fibers = t.kind != TargetKind::CPU || reads_thread_index;
      if (int64_t n = total(thread); fibers && n > kMaxThreadArrayBytes)
        throw_user_error(
            op->span,
            str_cat("kernel '", name, "': the arrays each thread keeps take ", n, " bytes (", listed(thread),
                    "), more than the ", kMaxThreadArrayBytes, " (512 KiB) a thread may have on the target '", target,
                    "' (CUDA's local memory a thread; the emulators and the cpu target run each thread on a "
                    "1 MiB stack). Use smaller tiles or more threads, or keep the data in shared or global "
                    "memory"));
      if (int64_t n = total(block); n > kMaxCpuBlockArrayBytes)
        throw_user_error(
            op->span, str_cat("kernel '", name, "': the on-chip buffers of a block take ", n, " bytes (", listed(block),
                              "), more than the ", kMaxCpuBlockArrayBytes, " (4 MiB) the target '", target,
                              "' allows: it keeps them on the stack of the thread that runs the block. "
                              "Use smaller tiles, or keep the data in global memory"));
    }
    void visit(const VarNode* op) override {
      if (thread_vars.count(op)) reads_thread_index = true;
    }
    void visit(const AllocateNode* op) override {
      const Scope s = op->buffer->scope;
      if (s == Scope::Local || s == Scope::LocalVar) thread.push_back(op->buffer);
      if (t.kind == TargetKind::CPU && s != Scope::Global) block.push_back(op->buffer);
      IRVisitor::visit(op);
    }
  } check(t, f->name);
  check.visit(f->body);
}

// CPU: one executor per thread block, so fragments are block-wide arrays and tile
// ops become plain loops; no layout inference is needed. Kernels that read thread
// indices run each thread as a fiber; their shared memory gets the barriers a GPU
// would (the code generator adds those around block ops), and a fragment element that
// code outside T.Parallel writes is written by one thread (fragment_updates_once.h).
PrimFunc lower_for_cpu(PrimFunc f, const Target& t, const PassConfig& configs) {
  f = lower_common(f, t, configs);
  f = run_pass("plan_barriers", f, [&](const PrimFunc& g) { return plan_barriers(g); });
  return run_pass("fragment_updates_once", f, [&](const PrimFunc& g) { return fragment_updates_once(g); });
}

// CUDA: fragments go to registers where layout inference allows it, and the ops
// that touch them become per-thread code; every other tile op becomes a block op
// that the code generator spreads over the threads. Barriers come last, from an
// analysis of the shared memory each step touches.
PrimFunc lower_for_cuda(PrimFunc f, const Target& t, const PassConfig& configs, LayoutFacts& layouts) {
  // T.ptx_commit_group / T.ptx_wait_group where the kernel issues no cp.async itself:
  // they would only wait for the compiler's own (T.Pipelined's prefetches).
  f = run_pass("drop_idle_async_waits", f, [&](const PrimFunc& g) { return drop_idle_async_waits(g, t); });
  f = run_pass("pipeline_loops", f, [&](const PrimFunc& g) { return pipeline_loops(g, layouts, configs); });
  // Shared-tile epilogues go out through TMA stores (tl.enable_tma_store: False, or
  // tl.disable_tma_lower, keeps them element-wise).
  // Fragment epilogues go through a shared tile first (tl.stage_fragment_stores: False
  // keeps them element-wise).
  if (configs.stage_fragment_stores && configs.tma_store && configs.tma_lower)
    f = run_pass("stage_fragment_stores", f, [&](const PrimFunc& g) { return stage_fragment_stores(g, t); });
  if (configs.tma_store && configs.tma_lower)
    f = run_pass("lower_tma_stores", f, [&](const PrimFunc& g) { return lower_tma_stores(g, layouts); });
  f = run_pass("stage_reduction_sources", f, [&](const PrimFunc& g) { return stage_reduction_sources(g, t); });
  f = run_pass("lower_fragments", f, [&](const PrimFunc& g) { return lower_fragments(g, layouts); });
  f = lower_common(f, t, configs);
  // T.vectorized copies between shared memory and registers: 16-byte accesses where
  // the offsets (swizzles included) are proven contiguous and aligned.
  f = run_pass("vectorize_loops", f, [&](const PrimFunc& g) { return vectorize_loops(g, t); });
  // A T.Ramp pair's two stores (T.add2 ...): one packed-pair call.
  f = run_pass("pair_lane_stores", f, [&](const PrimFunc& g) { return pair_lane_stores(g); });
  f = run_pass("plan_barriers", f, [&](const PrimFunc& g) { return plan_barriers(g); });
  f = run_pass("warp_specialize", f, [&](const PrimFunc& g) { return warp_specialize(g); });
  f = run_pass("plan_shared_memory", f,
               [&](const PrimFunc& g) { return plan_shared_memory(g, t, configs.shared_memory_reuse); });
  return f;
}

// Metal: gemm accumulators become simdgroup matrices (or Metal 4 cooperative
// tensors) before layout inference sees them; there is no cp.async, so pipelined
// loops stay plain loops; reductions over threadgroup memory use simd_sum & co.
PrimFunc lower_for_metal(PrimFunc f, const Target& t, const PassConfig& configs, LayoutFacts& layouts) {
  refuse_named_barriers(f, t);
  refuse_random_numbers(f, t);
  refuse_cuda_warp_bits(f, t);
  refuse_wide_accesses(f, t);
  f = run_pass("lower_simdgroup_gemm", f, [&](const PrimFunc& g) { return lower_simdgroup_gemm(g, t); });
  f = run_pass("lower_fragments", f, [&](const PrimFunc& g) { return lower_fragments(g, layouts); });
  f = run_pass("lower_simd_reduce", f, [&](const PrimFunc& g) { return lower_simd_reduce(g); });
  f = lower_common(f, t, configs);
  f = run_pass("plan_barriers", f, [&](const PrimFunc& g) { return plan_barriers(g); });
  return f;
}

}  // namespace

PrimFunc lower(const PrimFunc& input, const Target& target, const Attrs& pass_configs, const PassObserver& observe) {
  return lower(input, target, PassConfig::parse(pass_configs), observe);
}

PrimFunc lower(const PrimFunc& input, const Target& target, const PassConfig& configs, const PassObserver& observe) {
  Scoped<const PassObserver*> observing(observer, &observe);
  Scoped<double> profiling(profile_threshold_ms, pass_profile_threshold(configs));
  dump("input", input);
  // Layout inference, once per kernel: the passes before lower_fragments read the
  // choices it lowers by (transform/lower_fragments.h).
  LayoutFacts layouts(target, configs.wgmma, configs.gemm_sp_wgmma);
  // A[-i - 1]: an index the loops prove negative counts from the end, as in Python.
  PrimFunc f =
      run_pass("legalize_negative_indices", input, [&](const PrimFunc& g) { return legalize_negative_indices(g); });
  // A fragment its T.Parallel loops write past its shape: grown to what they write.
  f = run_pass("grow_overindexed_fragments", f, [&](const PrimFunc& g) { return grow_overindexed_fragments(g); });
  check_onchip_bounds(f);
  check_parallel_stores(f);
  check_grid_barrier(f, target);
  check_launch_limits(f, target);
  // T.annotate_layout on global buffers, on every target: their elements move.
  f = run_pass("apply_global_layouts", f, [&](const PrimFunc& g) { return apply_global_layouts(g); });
  // T.gemm_sp: mma.sp where it fits (CUDA sm_80+), else its decoded dense tile.
  f = run_pass("select_gemm_sp", f,
               [&](const PrimFunc& g) { return select_gemm_sp(g, target, configs.wgmma && configs.gemm_sp_wgmma); });
  // A barrier in a T.Parallel body: the loop becomes one loop per part, the barrier between.
  f = run_pass("split_parallel_at_barriers", f, [&](const PrimFunc& g) { return split_parallel_at_barriers(g); });
  // A T.Parallel loop that reads a register fragment only at a shifted position runs
  // each iteration where the element is held (before the layouts are inferred).
  if (target.kind != TargetKind::CPU)
    f = run_pass("align_shifted_fragment_reads", f, [&](const PrimFunc& g) { return align_shifted_fragment_reads(g); });
  // T.annotate_layout's swizzles of shared tiles: applied on CUDA, dropped elsewhere.
  f = run_pass("apply_shared_layouts", f, [&](const PrimFunc& g) { return apply_shared_layouts(g, target); });
  // Hopper control written by hand (T.ws, T.alloc_barrier, T.tma_copy ...): refused off sm_90.
  f = run_pass("lower_explicit_hopper", f,
               [&](const PrimFunc& g) { return lower_explicit_hopper(g, layouts, configs.wgmma); });
  switch (target.kind) {
    case TargetKind::CPU:
      f = lower_for_cpu(f, target, configs);
      break;
    case TargetKind::CUDA:
      f = lower_for_cuda(f, target, configs, layouts);
      break;
    case TargetKind::Metal:
      f = lower_for_metal(f, target, configs, layouts);
      break;
  }
  if (env_switch("TILELANG_TIME_PASSES") == EnvSwitch::On)
    std::fprintf(stderr, "[tilelang] layout inference of %s: %lld kernel(s) inferred\n", f->name.c_str(),
                 static_cast<long long>(layouts.inferences()));
  // Last, on the expressions codegen prints: int64 index arithmetic where int32 may overflow.
  f = run_pass("widen_indices", f, [&](const PrimFunc& g) { return widen_indices(g); });
  check_stack_arrays(f, target);
  return f;
}

}  // namespace tl
