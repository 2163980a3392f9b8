// The CUDA dialect of the C-family printer. The passes have already decided
// registers, pipelines, barriers and shared-memory offsets (pipeline.cpp); this
// prints what they left: block-scope buffers at plan_shared_memory's offsets in the
// one dynamic shared-memory array, block ops spread over the block's threads (or a
// T.ws region's) when their outer loops are parallel and run on thread 0 otherwise,
// the barriers plan_barriers placed (named barriers inside regions), and the TMA
// maps the kernel takes after its arguments.
#include "codegen/cuda/codegen_cuda.h"

#include <cctype>
#include <iomanip>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "codegen/c_family/codegen_c.h"
#include "driver/program_source.h"
#include "ir/attrs.h"
#include "ir/device_calls.h"
#include "ir/visitor.h"
#include "layout/layout.h"
#include "transform/lower_explicit_hopper.h"
#include "transform/tma_copy.h"

namespace tl {
namespace {

class CodeGenCUDA : public CodeGenC {
 public:
  // One kernel and its emulation entry. A prelude (file-scope code of the
  // T.Kernel) is printed unless `preludes` holds it already.
  CudaLaunchInfo generate(const PrimFunc& f, const KernelSignature& sig, std::set<std::string>& preludes) {
    CudaLaunchInfo src;
    src.entry_name = "tl_kernel_" + c_ident(f->name);
    alias_params(f->params, sig.params);
    find_launch(f->body);
    if (const CallNode* given = source_kernel(f->body)) return generate_source_kernel(given, sig, src);
    if (launch_ && !launch_->prelude.empty() && preludes.insert(launch_->prelude).second)
      out_ << launch_->prelude << "\n\n";
    int64_t threads = 1;
    if (launch_)
      for (int64_t t : launch_->threads) threads *= t;
    // T.annotate_min_blocks_per_sm(n): the blocks per SM the registers must allow; one
    // otherwise, as TileLang prints it (`__launch_bounds__(threads, 1)`). A warp-specialized
    // kernel moves registers between its warpgroups (setmaxnreg): ptxas honours that only
    // when it knows the count every thread starts with, which one block per SM fixes
    // (65536 / threads), so there the annotation is not taken.
    bool moves_registers = calls_device(f->body, kSetmaxnregIncCall) || calls_device(f->body, kSetmaxnregDecCall);
    int64_t min_blocks = 1;
    if (!moves_registers)
      for_each_expr(f->body, [&](const Expr& e) {
        auto* c = e.as<CallNode>();
        if (c && c->op == Intrinsic::Extern && c->args[0].as<StringImmNode>()->value == kMinBlocksPerSmCall)
          min_blocks = std::max<int64_t>(1, as_const_int(c->args[1]).value_or(1));
      });
    out_ << "extern \"C\" __global__ void ";
    // Clusters are fixed at compile time: a plain launch then forms them.
    if (launch_ && !launch_->cluster.empty())
      out_ << "__cluster_dims__(" << launch_->cluster[0] << ", " << launch_->cluster[1] << ", " << launch_->cluster[2]
           << ") ";
    out_ << "__launch_bounds__(" << threads << ", " << min_blocks << ") " << src.entry_name << "(";
    bool first = true;
    auto sep = [&] {
      if (!first) out_ << ", ";
      first = false;
    };
    // Scalars travel as 64-bit values and are narrowed inside: the runtime then
    // needs no per-type packing. A tensor that TMA stores write and the threads also
    // load is not __restrict__: nvcc does not see the writes (they go through the
    // tensor map) and would load it through the non-coherent path (ld.global.nc),
    // stale after the store.
    std::set<int64_t> shared_with_tma = loaded_and_tma_written(f->body, sig);
    for (size_t i = 0; i < sig.params.size(); ++i) {
      const Param& p = sig.params[i];
      sep();
      if (p.is_tensor())
        out_ << storage_type(p.buffer->dtype) << (shared_with_tma.count(int64_t(i)) ? "* " : "* __restrict__ ")
             << name_of(p.buffer);
      else
        out_ << (p.var.dtype().is_float() ? "double " : "int64_t ") << name_of(p.var.node()) << "_arg";
    }
    for (const Var& v : sig.dynamic_vars) {
      sep();
      out_ << "int64_t " << name_of(v.node()) << "_arg";
    }
    // TMA maps travel by value (__grid_constant__: the copies read them from the
    // parameter space, by address).
    collect_tma_maps(f->body, sig);
    for (size_t m = 0; m < tma_specs_.size(); ++m) {
      sep();
      out_ << "const __grid_constant__ tl::TensorMap tl_tma_map" << m;
    }
    out_ << ") {\n";
    indent();
    for (const Param& p : sig.params)
      if (!p.is_tensor())
        line("const " + type_name(p.var.dtype()) + " " + name_of(p.var.node()) + " = (" + type_name(p.var.dtype()) +
             ")" + name_of(p.var.node()) + "_arg;");
    for (const Var& v : sig.dynamic_vars)
      line("const " + type_name(v.dtype()) + " " + name_of(v.node()) + " = (" + type_name(v.dtype()) + ")" +
           name_of(v.node()) + "_arg;");
    // The TMA unit fetches a tensor map on its first copy; asking for it at entry
    // overlaps that fetch with the block's setup (barrier init, the first waits).
    if (!tma_specs_.empty()) {
      line("if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {");
      indent();
      for (size_t m = 0; m < tma_specs_.size(); ++m) line(str_cat("tl::prefetch_tensormap(&tl_tma_map", m, ");"));
      dedent();
      line("}");
    }
    threads_ = threads;
    stmt(f->body);
    dedent();
    out_ << "}\n";
    emit_emulation_entry(sig, src.entry_name);
    src.shared_bytes = shared_bytes_;
    src.tma_maps = tma_specs_;
    if (launch_) src.threads = launch_->threads;
    return src;
  }

 protected:
  // float8_e5m2 has infinities, but its conversion from float saturates them to
  // +-57344 (cvt.rn.satfinite): T.infinity of it is written by its bits instead.
  std::string special_literal(double v, DataType t) override {
    if (t != dtype::Float8E5M2 || v != v) return {};
    return v < 0 ? "tl::float8_e5m2_t::from_bits(0xfc)" : "tl::float8_e5m2_t::from_bits(0x7c)";
  }
  std::string special_float(double v, DataType t) override {
    if (v != v) return "tl::nan_f64()";
    return v < 0 ? "(-tl::infinity_f64())" : "tl::infinity_f64()";
  }

  // Register arrays are indexed by unrolled loop counters: unroll them fully.
  std::string unroll_pragma() override { return "#pragma unroll"; }
  std::string unroll_pragma(int64_t factor) override { return "#pragma unroll " + std::to_string(factor); }

  void emit_barrier(const BarrierNode* op) override {
    // In a T.ws region the block barrier is the region's named barrier: the other
    // threads never reach it.
    if (op->barrier == BarrierKind::Threads && region_threads_) {
      if (region_threads_ == 1) return line("// (one thread: its own order is the barrier)");
      if (region_threads_ % 32 || region_lo_ % 32)
        throw_user_error(statement_span_,
                         str_cat("threads [", region_lo_, ", ", region_lo_ + region_threads_,
                                 ") of a branch on the thread index need a barrier between their steps, and "
                                 "barriers take whole warps: branch on whole warps (`if tx < 32:`) or on one "
                                 "thread, or move the steps that read what others wrote out of the branch"));
      return line(str_cat("tl::__sync_thread_partial(", region_barrier_id(), ", ", region_threads_, ");"));
    }
    line(op->barrier == BarrierKind::Threads ? "__syncthreads();" : "__syncwarp();");
  }

  void emit_print(const CallNode* op) override {
    std::string msg = !op->args.empty() ? expr(op->args[0]) : "\"\"";
    if (op->args.size() > 1)
      line("printf(\"%sblock (%d, %d, %d), thread (%d, %d, %d): %g\\n\", " + msg +
           ", blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z, (double)" + expr(op->args[1]) +
           ");");
    else
      line("printf(\"%s\\n\", " + msg + ");");
  }

  void emit_kernel_launch(const KernelLaunchNode* op) override {
    part_region_ids_.clear();
    const char* bidx[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
    const char* tidx[] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
    std::vector<std::string> block_index(bidx, bidx + 3);
    rasterize(op, block_index);
    for (size_t i = 0; i < op->block_vars.size(); ++i)
      line("const " + type_name(op->block_vars[i].dtype()) + " " + name_of(op->block_vars[i].node()) + " = (" +
           type_name(op->block_vars[i].dtype()) + ")" + block_index[i] + ";");
    for (size_t i = 0; i < op->thread_vars.size(); ++i)
      line("const int32_t " + name_of(op->thread_vars[i].node()) + " = (int32_t)" + tidx[i] + ";");
    int64_t dims[3] = {1, 1, 1};
    for (size_t i = 0; i < op->threads.size(); ++i) dims[i] = op->threads[i];
    line(str_cat("const int32_t tl_thread_rank = (int32_t)(threadIdx.x + ", dims[0], " * (threadIdx.y + ", dims[1],
                 " * threadIdx.z));"));
    // Block-scope buffers: their offsets in the one dynamic shared-memory array come
    // from plan_shared_memory (in the pre-order of their allocations).
    auto* plan = op->body.as<AttrNode>();
    TL_ICHECK(plan && plan->key == kSharedOffsetsAttr, "kernel without a shared-memory plan reached codegen");
    const auto& offsets = std::get<std::vector<int64_t>>(plan->value);
    struct Collect : IRVisitor {
      std::vector<Buffer> buffers;
      using IRVisitor::visit;
      void visit(const AllocateNode* a) override {
        Scope sc = a->buffer->scope;
        if (sc == Scope::Shared || sc == Scope::SharedDyn || sc == Scope::Fragment) buffers.push_back(a->buffer);
        IRVisitor::visit(a);
      }
    } collect;
    collect.visit(plan->body);
    TL_ICHECK(offsets.size() == collect.buffers.size() + 1, "shared-memory plan does not match the allocations");
    if (!collect.buffers.empty()) line("TL_DYNAMIC_SHARED(tl_smem);");
    for (size_t i = 0; i < collect.buffers.size(); ++i) {
      const Buffer& b = collect.buffers[i];
      line(storage_type(b->dtype) + "* " + name_of(b) + " = reinterpret_cast<" + storage_type(b->dtype) +
           "*>(tl_smem + " + std::to_string(offsets[i]) + ");");
      hoisted_.insert(b.get());
    }
    shared_bytes_ = offsets.back();
    stmt(plan->body);
  }

  void emit_allocate(const AllocateNode* op) override {
    if (hoisted_.count(op->buffer.get())) return stmt(op->body);
    CodeGenC::emit_allocate(op);
  }

  // Register arrays of 16-bit values are read and written two at a time
  // (tl::cast_pair, tl::load_pair): 4-byte aligned.
  std::string alloc_prefix(const Buffer& b) override {
    return b->scope == Scope::Local && b->dtype.bits() == 16 ? "alignas(4) " : "";
  }

  bool scalar_var(const Buffer& b) override {
    return b->scope == Scope::LocalVar && !b->dtype.is_sub_byte() && b->dtype.lanes() == 1 &&
           as_const_int(b.num_elements()) == int64_t(1);
  }

  // Shared-memory elements go through TL_SMEM, which is plain indexing on the GPU
  // and a recorded access under the emulator's race detector.
  std::string element(const Buffer& b, const std::string& offset, bool write, const SourceSpan& span) override {
    if (!hoisted_.count(b.get())) return CodeGenC::element(b, offset, write, span);
    return "TL_SMEM(" + name_of(b) + ", " + offset + ", " + (write ? "1" : "0") + ", " + access_site(b, span) + ")";
  }
  // Packed elements the same way, each nibble its own element (TL_SMEM_PACKED).
  std::string packed_base(const Buffer& b, const std::string& offset, bool write, const SourceSpan& span) override {
    if (!hoisted_.count(b.get())) return CodeGenC::packed_base(b, offset, write, span);
    return "TL_SMEM_PACKED(" + name_of(b) + ", " + offset + ", " + (write ? "1" : "0") + ", " + access_site(b, span) +
           ")";
  }
  // "buffer|file:line" of an access, as the race detector names it.
  std::string access_site(const Buffer& b, const SourceSpan& span) {
    const SourceSpan& at = span.defined() ? span : statement_span_;
    std::string where = at.defined() ? at.str() : std::string("generated code");
    std::ostringstream quoted;
    quoted << std::quoted(b->name + "|" + where);
    return quoted.str();
  }

  void emit_attr(const AttrNode* op) override {
    if (auto [lo, count] = warp_group_range(op); count) return emit_warp_group(op, lo, count);
    if (op->key != kBlockOpAttr) return CodeGenC::emit_attr(op);
    emit_block_op(op->body, threads_);
  }

  // A T.ws region (its `if` is the body): block ops spread over its threads, counted
  // from its first, and its barriers are named barrier 1 + its first warpgroup.
  void emit_warp_group(const AttrNode* op, int64_t lo, int64_t count) {
    std::string saved_rank = thread_rank_;
    int64_t saved_threads = threads_;
    thread_rank_ = lo ? str_cat("(tl_thread_rank - ", lo, ")") : "tl_thread_rank";
    threads_ = count;
    region_threads_ = count;
    region_lo_ = lo;
    stmt(op->body);
    thread_rank_ = saved_rank;
    threads_ = saved_threads;
    region_threads_ = 0;
  }

 private:
  // T.use_swizzle(panel, order): blocks launched one after another cover `panel`
  // rows (column order: columns) of the grid before moving on, so the tiles they
  // read stay in L2. A bijection of (blockIdx.x, blockIdx.y); the last panel may be
  // shorter.
  void rasterize(const KernelLaunchNode* op, std::vector<std::string>& index) {
    if (op->grid.size() < 2) return;
    const CallNode* marker = nullptr;
    for_each_expr(op->body, [&](const Expr& e) {
      auto* c = e.as<CallNode>();
      if (c && c->op == Intrinsic::Extern && c->args[0].as<StringImmNode>()->value == kUseSwizzleCall) marker = c;
    });
    if (!marker) return;
    int64_t panel = *as_const_int(marker->args[1]);
    bool column = *as_const_int(marker->args[2]) == 1;
    std::string gx = "(int)(" + expr(op->grid[0]) + ")", gy = "(int)(" + expr(op->grid[1]) + ")";
    // Row order walks panels of `panel` rows (blockIdx.y); column order the transpose.
    std::string along = column ? gx : gy, across = column ? gy : gx;
    line("const int tl_raster_id = (int)(blockIdx.y * " + gx + " + blockIdx.x);");
    line(str_cat("const int tl_raster_panel = tl_raster_id / (", panel, " * ", across, ");"));
    line(str_cat("const int tl_raster_in = tl_raster_id % (", panel, " * ", across, ");"));
    line(str_cat("const int tl_raster_left = ", along, " - tl_raster_panel * ", panel, ";"));
    line(str_cat("const int tl_raster_rows = tl_raster_left < ", panel, " ? tl_raster_left : ", panel, ";"));
    std::string a = str_cat("(tl_raster_panel * ", panel, " + tl_raster_in % tl_raster_rows)");
    std::string b = "(tl_raster_in / tl_raster_rows)";
    index[0] = column ? a : b;
    index[1] = column ? b : a;
  }

  // T.CUDASourceCodeKernel: the launch's body is one tl::source_kernel(source, entry,
  // ...) call; the kernel is that CUDA source, launched by its entry's name with the
  // signature's arguments (the emulation entry keeps the part's name, as the runtime
  // looks it up by that). The emulator gives each thread its own copy of a __shared__
  // array, so it refuses source that declares one.
  static const CallNode* source_kernel(const Stmt& body) {
    const CallNode* found = nullptr;
    for_each_expr(body, [&](const Expr& e) {
      auto* c = e.as<CallNode>();
      if (c && c->op == Intrinsic::Extern && c->args.size() >= 3 &&
          c->args[0].as<StringImmNode>()->value == kSourceKernelCall)
        found = c;
    });
    return found;
  }

  CudaLaunchInfo generate_source_kernel(const CallNode* given, const KernelSignature& sig, CudaLaunchInfo src) {
    auto* source = given->args[1].as<StringImmNode>();
    auto* entry = given->args[2].as<StringImmNode>();
    TL_ICHECK(source && entry, "malformed ", kSourceKernelCall, " call");
    if (launch_ && !launch_->prelude.empty()) out_ << launch_->prelude << "\n\n";
    out_ << kProgramSourceMarker << "\n" << source->value << "\n";
    if (source->value.find("__shared__") != std::string::npos)
      out_ << "\n#ifdef TL_EMULATE\n#error \"T.CUDASourceCodeKernel: the CUDA emulator cannot run source that "
              "declares __shared__ arrays (each emulated thread would get its own copy); run it on a GPU\"\n"
              "#endif\n";
    std::string wrapper = src.entry_name;
    src.entry_name = entry->value;
    emit_emulation_entry(sig, wrapper, entry->value);
    src.shared_bytes = 0;
    if (launch_) src.threads = launch_->threads;
    return src;
  }

  // Invisible to NVRTC: the CPU emulation (device/emu) calls this once per block.
  // `callee`: the __global__ function it runs (by default `entry`, its own kernel).
  void emit_emulation_entry(const KernelSignature& sig, const std::string& entry, std::string callee = {}) {
    if (callee.empty()) callee = entry;
    int64_t dims[3] = {1, 1, 1};
    if (launch_)
      for (size_t i = 0; i < launch_->threads.size(); ++i) dims[i] = launch_->threads[i];
    out_ << "\n#ifdef TL_EMULATE\n";
    out_ << "extern \"C\" void tl_emu_" << entry
         << "(const ::tl::emu::Arg* args, int64_t bx, int64_t by, int64_t bz) {\n";
    if (launch_ && !launch_->cluster.empty()) {
      // The first block of each cluster runs the whole cluster; the others return.
      const std::vector<int64_t>& c = launch_->cluster;
      out_ << str_cat("  if (bx % ", c[0], " != 0 || by % ", c[1], " != 0 || bz % ", c[2], " != 0) return;\n");
      out_ << str_cat("  ::tl::emu::run_cluster(bx, by, bz, ", c[0], ", ", c[1], ", ", c[2], ", ");
    } else {
      out_ << "  ::tl::emu::run_block(bx, by, bz, ";
    }
    out_ << str_cat(dims[0], ", ", dims[1], ", ", dims[2], ", ", shared_bytes_, ", [&] { ", callee, "(");
    const bool program_source = callee != entry;
    int slot = 0;
    for (const Param& p : sig.params) {
      if (slot) out_ << ", ";
      if (p.is_tensor() && program_source)
        out_ << "::tl::emu::SourcePointer{args[" << slot << "].ptr}";
      else if (p.is_tensor())
        out_ << "static_cast<" << storage_type(p.buffer->dtype) << "*>(args[" << slot << "].ptr)";
      else if (p.var.dtype().is_float() && program_source)
        out_ << "::tl::emu::SourceDouble{args[" << slot << "].f}";
      else
        out_ << "args[" << slot << "]" << (p.var.dtype().is_float() ? ".f" : ".i");
      ++slot;
    }
    for (size_t j = 0; j < sig.dynamic_vars.size(); ++j, ++slot) out_ << (slot ? ", " : "") << "args[" << slot << "].i";
    // A TMA map's slot points at the map the runtime encoded for the emulator.
    for (size_t m = 0; m < tma_specs_.size(); ++m, ++slot)
      out_ << (slot ? ", " : "") << "*static_cast<const ::tl::TensorMap*>(args[" << slot << "].ptr)";
    out_ << "); });\n}\n#endif\n";
  }

  // The tensor parameters that TMA stores or reduce-adds write (through their
  // kTmaMapCall) and that the threads load element by element too.
  static std::set<int64_t> loaded_and_tma_written(const Stmt& body, const KernelSignature& sig) {
    std::set<int64_t> written;
    std::set<const BufferNode*> loaded;
    for_each_expr(body, [&](const Expr& e) {
      if (auto* l = e.as<BufferLoadNode>()) loaded.insert(l->buffer.get());
      auto* c = e.as<CallNode>();
      if (!c || c->op != Intrinsic::Extern || c->args.size() < 2) return;
      const std::string& fn = c->args[0].as<StringImmNode>()->value;
      if (!is_device_call(fn, kTmaStoreCall) && !is_device_call(fn, kTmaStoreAddCall)) return;
      if (std::optional<int64_t> param = tma_map_param(c->args[1].as<CallNode>())) written.insert(*param);
    });
    std::set<int64_t> out;
    for (int64_t i : written)
      if (i >= 0 && size_t(i) < sig.params.size() && sig.params[size_t(i)].is_tensor() &&
          loaded.count(sig.params[size_t(i)].buffer.get()))
        out.insert(i);
    return out;
  }

  // The distinct TMA maps the body's copies read through (kTmaMapCall), in order
  // of appearance; parameter tl_tma_map<i> is the i-th.
  void collect_tma_maps(const Stmt& body, const KernelSignature& sig) {
    for_each_expr(body, [&](const Expr& e) {
      auto* c = e.as<CallNode>();
      if (!c || c->op != Intrinsic::Extern || c->args[0].as<StringImmNode>()->value != kTmaMapCall) return;
      std::string key = tma_map_key(c);
      if (tma_index_.count(key)) return;
      TL_ICHECK(c->args.size() >= 5, "malformed ", kTmaMapCall, " call");
      TmaMapSpec m;
      m.param = int(*as_const_int(c->args[1]));
      m.swizzle_bytes = int(*as_const_int(c->args[2]));
      m.dynamic_dims = uint32_t(*as_const_int(c->args[3]));
      for (size_t i = 4; i < c->args.size(); ++i) m.box.push_back(*as_const_int(c->args[i]));
      TL_ICHECK(m.param >= 0 && m.param < int(sig.params.size()) && sig.params[m.param].is_tensor(),
                "a TMA map names parameter ", m.param, ", which is not a tensor");
      m.dtype = sig.params[m.param].buffer->dtype;
      tma_index_[key] = tma_specs_.size();
      tma_specs_.push_back(m);
    });
  }

  std::string tma_map_key(const CallNode* c) {
    std::string key;
    for (size_t i = 1; i < c->args.size(); ++i) key += std::to_string(*as_const_int(c->args[i])) + ",";
    return key;
  }

  // A map argument of a copy is the address of its kernel parameter. The max / min of
  // two float16 / bfloat16 values are CUDA's half intrinsics by name, as in TileLang's
  // CUDA code (tl_cuda.cuh defines them for the package's 16-bit types).
  std::string print_expr(const Expr& e) override {
    auto* c = e.as<CallNode>();
    if (c && c->op == Intrinsic::Extern && c->args[0].as<StringImmNode>()->value == kTmaMapCall)
      return str_cat("(&tl_tma_map", tma_index_.at(tma_map_key(c)), ")");
    if (auto name = half_min_max(e)) return *name;
    if (auto name = fast_math(e)) return *name;
    if (auto name = warp_intrinsic(e)) return *name;
    if (auto name = named_atomic(e, true)) return *name;
    if (auto name = named_allreduce(c)) return *name;
    // A cp.async whose bounds check became true: TileLang's unconditional form.
    if (c && c->op == Intrinsic::Extern && c->args.size() == 4 && as_const_int(c->args[3]) &&
        *as_const_int(c->args[3]) != 0) {
      const std::string& callee = c->args[0].as<StringImmNode>()->value;
      if (is_device_call(callee, kCpAsyncConditionalCall))
        return str_cat("tl::cp_async_gs<", *device_call_int_arg(callee), ">(", print_expr(c->args[1]), ", ",
                       print_expr(c->args[2]), ")");
    }
    return CodeGenC::print_expr(e);
  }
  std::string print_evaluated(const Expr& e) override {
    if (auto name = named_atomic(e, false)) return *name;
    return print_expr(e);
  }

  // The lane reductions by TileLang's name (device/cuda/warp.cuh):
  // tl::warp_allreduce<Op, Width>(v) as tl::AllReduce<Op, Width, 1, 0>::run(v), and
  // tl::warp_allreduce_batch<Op, Width, Batch>(x), Batch rows at once, as
  // tl::AllReduce<Op, Width, 1, 0, tl::SyncThreadsBarrier, Batch, 0>::run_batch(x).
  std::optional<std::string> named_allreduce(const CallNode* c) {
    if (!c || c->op != Intrinsic::Extern || c->args.size() != 2) return std::nullopt;
    const std::string& callee = c->args[0].as<StringImmNode>()->value;
    const bool batch = is_device_call(callee, kWarpAllreduceBatchCall);
    if (!batch && !is_device_call(callee, kWarpAllreduceCall)) return std::nullopt;
    std::vector<std::string> t = device_call_template_args(callee);  // Op, Width[, Batch]
    TL_ICHECK(t.size() == (batch ? 3u : 2u), "a lane reduction without its template arguments: ", callee);
    if (!batch) return str_cat("tl::AllReduce<", t[0], ", ", t[1], ", 1, 0>::run(", print_expr(c->args[1]), ")");
    return str_cat("tl::AllReduce<", t[0], ", ", t[1], ", 1, 0, tl::SyncThreadsBarrier, ", t[2], ", 0>::run_batch(",
                   print_expr(c->args[1]), ")");
  }

  // An element atomic, tl::atomic_<op><order>(addr, value), by TileLang's name with the
  // order as its last operand (device/cuda/atomic.cuh): `tl::AtomicAdd(addr, value, 0)`
  // where the previous value is unused, `tl::AtomicAddRet(...)` where it is used;
  // tl::AtomicLoad(addr, order), tl::AtomicStore(addr, value, order).
  std::optional<std::string> named_atomic(const Expr& e, bool used) {
    auto* c = e.as<CallNode>();
    if (!c || c->op != Intrinsic::Extern) return std::nullopt;
    const std::string& name = c->args[0].as<StringImmNode>()->value;
    const char* kind = atomic_kind(name);
    std::optional<int64_t> order = device_call_int_arg(name);
    if (!kind || !order) return std::nullopt;
    std::string named(kind);  // "add" -> AtomicAdd
    named[0] = char(std::toupper(static_cast<unsigned char>(named[0])));
    const bool rmw = named != "Load" && named != "Store";
    std::string s = str_cat("tl::Atomic", named, rmw && used ? "Ret" : "", "(");
    for (size_t i = 1; i < c->args.size(); ++i) s += print_expr(c->args[i]) + ", ";
    return str_cat(s, *order, ")");
  }

  // The warp-level helpers whose operands CUDA's own intrinsics take as they are, printed
  // as those intrinsics (as TileLang's CUDA code does): the votes, ballots, matches,
  // __ffsll / __fns, __syncwarp, the block votes, and shuffles of 32- and 64-bit values.
  // The other shuffles (8- and 16-bit values) keep the lane-word helpers of warp.cuh.
  std::optional<std::string> warp_intrinsic(const Expr& e) {
    auto* c = e.as<CallNode>();
    if (!c || c->op != Intrinsic::Extern) return std::nullopt;
    std::optional<DeviceCall> k = device_call_of(c->args[0].as<StringImmNode>()->value);
    if (!k) return std::nullopt;
    using D = DeviceCall;
    std::vector<std::string> a;
    for (size_t i = 1; i < c->args.size(); ++i) a.push_back(print_expr(c->args[i]));
    auto call = [&](const char* fn, size_t from, size_t to) {
      std::string s = str_cat(fn, "(");
      for (size_t i = from; i < to; ++i) s += (i > from ? ", " : "") + a[i];
      return s + ")";
    };
    if ((*k == D::kAnySyncCall || *k == D::kAllSyncCall) && a.size() == 2)
      return call(*k == D::kAnySyncCall ? "__any_sync" : "__all_sync", 0, 2);
    if (*k == D::kBallotSyncCall && a.size() == 2) return "((uint64_t)" + call("__ballot_sync", 0, 2) + ")";
    if (*k == D::kBallotCall && a.size() == 1) return "((uint64_t)__ballot_sync(0xffffffffu, " + a[0] + "))";
    if (*k == D::kActivemaskCall && a.empty()) return std::string("((uint64_t)__activemask())");
    if (*k == D::kFindFirstSetCall && a.size() == 1) return "__ffsll((long long)(" + a[0] + "))";
    if (*k == D::kFindNthSetCall && a.size() == 3) return "((uint32_t)" + call("__fns", 0, 3) + ")";
    if (*k == D::kMatchAnySyncCall && a.size() == 2) return "((uint32_t)" + call("__match_any_sync", 0, 2) + ")";
    if (*k == D::kMatchAllSyncCall && a.size() == 2)  // its third operand, a flag, is not T's result
      return str_cat("([&]() { int tl_match_pred; return (uint32_t)__match_all_sync(", a[0], ", ", a[1],
                     ", &tl_match_pred); }())");
    if (*k == D::kSyncWarpCall && a.size() <= 1) return call("__syncwarp", 0, a.size());
    // Named barriers by TileLang's names (device/cuda/tma.cuh).
    if (*k == D::kNamedBarrierSyncCall && a.size() == 2) return call("tl::__sync_thread_partial", 0, 2);
    if (*k == D::kNamedBarrierArriveCall && a.size() == 2) return call("tl::__named_barrier_arrive", 0, 2);
    const char* vote = *k == D::kSyncthreadsCountCall ? "__syncthreads_count"
                       : *k == D::kSyncthreadsAndCall ? "__syncthreads_and"
                       : *k == D::kSyncthreadsOrCall  ? "__syncthreads_or"
                                                      : nullptr;
    if (vote && a.size() == 2) return str_cat(vote, "(", a[0], ")");
    const char* shuffle = *k == D::kShflSyncCall       ? "__shfl_sync"
                          : *k == D::kShflXorSyncCall  ? "__shfl_xor_sync"
                          : *k == D::kShflDownSyncCall ? "__shfl_down_sync"
                          : *k == D::kShflUpSyncCall   ? "__shfl_up_sync"
                                                       : nullptr;
    if (shuffle && a.size() == 4) {
      DataType t = c->dtype;
      bool native = t.is_scalar() && (t.bits() == 32 || t.bits() == 64) &&
                    (t.is_integer() || t == dtype::Float32 || t == dtype::Float64);
      if (native) return str_cat(shuffle, "(", a[0], ", ", a[1], ", ", a[2], ", ", a[3], ")");
    }
    return std::nullopt;
  }

  // TileLang's fast-math names as its CUDA code prints them: CUDA's intrinsics for
  // float (__expf ...; tl::fast_rcp, rcp.approx), the half-style tl::hexp ... for
  // float16 / bfloat16 (and tl::htan for T.tan of them too), the precise functions for
  // float64 (tl_cuda.cuh).
  std::optional<std::string> fast_math(const Expr& e) {
    auto* c = e.as<CallNode>();
    if (!c) return std::nullopt;
    DataType t = c->dtype;
    bool half = t == dtype::Float16 || t == dtype::BFloat16;
    if (c->op == Intrinsic::Tan && half) return "tl::htan(" + print_expr(c->args[0]) + ")";
    const char* f = fast_math_function(c->op);
    if (!f || !t.is_scalar()) return std::nullopt;
    std::string x = print_expr(c->args[0]);
    bool rcp = c->op == Intrinsic::FastRcp;
    if (t == dtype::Float64) return str_cat("tl::", rcp ? "fast_rcp" : f, "(", x, ")");
    if (half && !rcp) return str_cat("tl::h", f, "(", x, ")");
    std::string fn = rcp ? std::string("tl::fast_rcp") : str_cat("__", f, "f");
    if (t == dtype::Float32) return fn + "(" + x + ")";
    return str_cat(type_name(t), "(", fn, "((float)", x, "))");
  }

  std::optional<std::string> half_min_max(const Expr& e) {
    DataType t = e.dtype();
    if (!(t == dtype::Float16 || t == dtype::BFloat16)) return std::nullopt;
    const char* fn = nullptr;
    Expr a, b;
    if (auto* n = e.as<BinaryNode>(); n && (n->op == BinaryOp::Max || n->op == BinaryOp::Min)) {
      fn = n->op == BinaryOp::Max ? "__hmax" : "__hmin";
      a = n->a, b = n->b;
    } else if (auto* n = e.as<CallNode>(); n && (n->op == Intrinsic::MaxNan || n->op == Intrinsic::MinNan)) {
      fn = n->op == Intrinsic::MaxNan ? "__hmax_nan" : "__hmin_nan";
      a = n->args[0], b = n->args[1];
    }
    if (!fn) return std::nullopt;
    return str_cat(fn, "(", print_expr(a), ", ", print_expr(b), ")");
  }

  void find_launch(const Stmt& s) {
    struct Finder : IRVisitor {
      const KernelLaunchNode* launch = nullptr;
      using IRVisitor::visit;
      void visit(const KernelLaunchNode* op) override { launch = op; }
    } finder;
    finder.visit(s);
    launch_ = finder.launch;
  }

  const KernelLaunchNode* launch_ = nullptr;
  int64_t threads_ = 1;
  int64_t region_threads_ = 0;  // of the T.ws region being printed (0: none)
  int64_t region_lo_ = 0;       // its first thread
  // Named barrier ids of regions that are not whole warpgroups (a branch over some
  // warps), from 15 down; whole warpgroups take 1 + their first warpgroup.
  std::map<std::pair<int64_t, int64_t>, int64_t> part_region_ids_;

  int64_t region_barrier_id() {
    if (region_lo_ % 128 == 0 && region_threads_ % 128 == 0) return 1 + region_lo_ / 128;
    auto [it, fresh] =
        part_region_ids_.emplace(std::pair{region_lo_, region_threads_}, 15 - int64_t(part_region_ids_.size()));
    int64_t groups = launch_ ? (launch_->thread_count() + 127) / 128 : 8;
    if (fresh && it->second <= groups)
      throw_user_error(statement_span_,
                       str_cat("too many branches on the thread index need barriers in this kernel: the ",
                               part_region_ids_.size(), " ranges of warps and the block's ", groups,
                               " warpgroups need more than the 15 named barriers of a block"));
    return it->second;
  }
  int64_t shared_bytes_ = 0;
  std::set<const void*> hoisted_;
  std::vector<TmaMapSpec> tma_specs_;        // parameter tl_tma_map<i> is tma_specs_[i]
  std::map<std::string, size_t> tma_index_;  // by the map call's arguments
};

}  // namespace

CudaSource codegen_cuda(const std::vector<PrimFunc>& kernels, const KernelSignature& sig) {
  TL_ICHECK(!kernels.empty(), "codegen_cuda without a kernel");
  std::ostringstream code;
  code << "// Generated by tilelang-cpp: kernel '" << sig.name << "' for the cuda target.\n";
  // The one folder the source needs to compile elsewhere (nvcc, NVRTC), named without
  // its path so that the source does not depend on where the package is installed.
  code << "// Needs -I <tilelang device dir>/cuda, printed by: python -m tilelang --include-dir\n";
  code << "#include \"tl_cuda.cuh\"\n";
  CudaSource src;
  std::set<std::string> preludes;
  for (const PrimFunc& f : kernels) {
    CodeGenCUDA gen;  // names, shared memory and TMA maps are per kernel
    src.launches.push_back(gen.generate(f, sig, preludes));
    code << "\n" << gen.str();
  }
  src.code = code.str();
  return src;
}

}  // namespace tl
