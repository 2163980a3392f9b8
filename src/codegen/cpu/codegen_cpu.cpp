// The CPU dialect of the C-family printer: block function signature, argument
// unpacking, and what barriers mean when one executor runs the whole block.
#include "codegen/cpu/codegen_cpu.h"

#include "codegen/c_family/codegen_c.h"
#include "ir/attrs.h"
#include "ir/visitor.h"

namespace tl {
namespace {

class CodeGenCPU : public CodeGenC {
 public:
  // The block function of one kernel; returns its symbol.
  std::string generate(const PrimFunc& f, const KernelSignature& sig) {
    per_thread_ = uses_thread_vars(f);
    alias_params(f->params, sig.params);
    std::string entry = "tl_block_" + c_ident(f->name);
    // A T.Kernel prelude (the kernel's own helper code) goes at file scope, as on GPUs.
    for (const std::string& p : kernel_preludes(f->body)) out_ << p << "\n\n";
    out_ << "extern \"C\" void " << entry
         << "(const tl::Arg* args, int64_t block_x, int64_t block_y, int64_t block_z) {\n";
    indent();
    int slot = 0;
    for (const Param& p : sig.params) {
      if (p.is_tensor()) {
        std::string t = storage_type(p.buffer->dtype);
        line(t + "* __restrict__ " + name_of(p.buffer) + " = static_cast<" + t + "*>(args[" + std::to_string(slot++) +
             "].ptr);");
      } else {
        DataType t = p.var.dtype();
        std::string field = t.is_float() ? ".f" : ".i";
        line("const " + type_name(t) + " " + name_of(p.var.node()) + " = (" + type_name(t) + ")args[" +
             std::to_string(slot++) + "]" + field + ";");
      }
    }
    for (const Var& v : sig.dynamic_vars)
      line("const " + type_name(v.dtype()) + " " + name_of(v.node()) + " = (" + type_name(v.dtype()) + ")args[" +
           std::to_string(slot++) + "].i;");
    stmt(f->body);
    dedent();
    out_ << "}\n";
    return entry;
  }

 protected:
  void emit_barrier(const BarrierNode*) override {
    // With one executor per block, program order is all the ordering there is.
    if (per_thread_) sync();
  }

  void emit_attr(const AttrNode* op) override {
    if (!per_thread_ || op->key != kBlockOpAttr) return CodeGenC::emit_attr(op);
    // Block-wide work (a tile op, a T.Parallel nest) runs once, on thread 0, with
    // the other threads waiting before and after it.
    sync();
    line("if (tl_thread_rank == 0) {");
    indent();
    stmt(op->body);
    dedent();
    line("}");
    sync();
  }

  // One barrier where plan_barriers' and a block op's meet.
  void sync() {
    if (out_.tellp() == synced_at_) return;
    line("tl::sync_threads();");
    synced_at_ = out_.tellp();
  }

  void emit_allocate(const AllocateNode* op) override {
    if (hoisted_.count(op->buffer.get())) return stmt(op->body);
    CodeGenC::emit_allocate(op);
  }

  void emit_kernel_launch(const KernelLaunchNode* op) override {
    const char* coords[] = {"block_x", "block_y", "block_z"};
    for (size_t i = 0; i < op->block_vars.size(); ++i) {
      const Var& v = op->block_vars[i];
      line("const " + type_name(v.dtype()) + " " + name_of(v.node()) + " = (" + type_name(v.dtype()) + ")" + coords[i] +
           ";");
    }
    if (!per_thread_) return stmt(op->body);
    // Shared and fragment buffers belong to the block: declare them outside the
    // threads; local buffers stay per thread.
    struct Collect : IRVisitor {
      std::vector<const AllocateNode*> allocs;
      using IRVisitor::visit;
      void visit(const AllocateNode* a) override {
        Scope sc = a->buffer->scope;
        if (sc == Scope::Shared || sc == Scope::SharedDyn || sc == Scope::Fragment) allocs.push_back(a);
        IRVisitor::visit(a);
      }
    } collect;
    collect.visit(op->body);
    for (const AllocateNode* a : collect.allocs) {
      auto count = as_const_int(a->buffer.num_elements());
      TL_ICHECK(count, "allocation of non-constant size reached codegen");
      line(alloc_prefix(a->buffer) + storage_type(a->buffer->dtype) + " " + name_of(a->buffer) + "[" +
           std::to_string(storage_count(a->buffer->dtype, *count)) + "];");
      hoisted_.insert(a->buffer.get());
    }
    int64_t dims[3] = {1, 1, 1};
    for (size_t i = 0; i < op->threads.size(); ++i) dims[i] = op->threads[i];
    line(str_cat("tl::run_threads(", dims[0], ", ", dims[1], ", ", dims[2],
                 ", [&](int32_t tl_tx, int32_t tl_ty, int32_t tl_tz) {"));
    indent();
    const char* tcoords[] = {"tl_tx", "tl_ty", "tl_tz"};
    for (size_t i = 0; i < op->thread_vars.size(); ++i)
      line("const int32_t " + name_of(op->thread_vars[i].node()) + " = " + tcoords[i] + ";");
    line(str_cat("const int32_t tl_thread_rank = tl_tx + ", dims[0], " * (tl_ty + ", dims[1], " * tl_tz);"));
    stmt(op->body);
    dedent();
    line("});");
  }

  void emit_print(const CallNode* op) override {
    std::string msg = !op->args.empty() ? expr(op->args[0]) : "\"\"";
    std::string value = op->args.size() > 1 ? "(double)" + expr(op->args[1]) : "0.0";
    line("tl::print_value(" + msg + ", block_x, block_y, block_z, " + value + ");");
  }

 private:
  // Kernels that read a thread index run their threads one by one (fibers);
  // all others run the block on one executor, which is much faster. An atomic that
  // each thread makes (outside the block's tile ops and T.Parallel loops, which run
  // once per block) needs the threads too: one executor would add once where the
  // block's threads add once each.
  static bool uses_thread_vars(const PrimFunc& f) {
    struct Finder : IRVisitor {
      std::set<const VarNode*> threads;
      bool used = false;
      int block_ops = 0;
      using IRVisitor::visit;
      void visit(const KernelLaunchNode* op) override {
        for (const Var& v : op->thread_vars) threads.insert(v.node());
        IRVisitor::visit(op);
      }
      void visit(const AttrNode* op) override {
        const bool block = op->key == kBlockOpAttr;
        block_ops += block;
        IRVisitor::visit(op);
        block_ops -= block;
      }
      void visit(const CallNode* op) override {
        const std::string* name = extern_name(op);
        if (!block_ops && name && is_atomic_call(*name)) used = true;
        IRVisitor::visit(op);
      }
      void visit(const VarNode* op) override {
        if (threads.count(op)) used = true;
      }
    } finder;
    finder.visit(f->body);
    return finder.used;
  }

  bool per_thread_ = false;
  std::streampos synced_at_ = -1;  // where the last barrier's line ended
  std::set<const void*> hoisted_;
};

}  // namespace

CpuSource codegen_cpu(const std::vector<PrimFunc>& kernels, const KernelSignature& sig) {
  TL_ICHECK(!kernels.empty(), "codegen_cpu without a kernel");
  std::ostringstream code;
  code << "// Generated by tilelang-cpp: kernel '" << sig.name << "' for the cpu target.\n";
  code << "#include \"tl_cpu.h\"\n";
  CpuSource src;
  for (const PrimFunc& f : kernels) {
    CodeGenCPU gen;  // names are per function
    src.entry_names.push_back(gen.generate(f, sig));
    code << "\n" << gen.str();
  }
  src.code = code.str();
  return src;
}

}  // namespace tl
