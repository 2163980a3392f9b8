// KernelSignature::from: the signature read off a PrimFunc, which needs the tile
// ops and split_kernels, so it belongs to the compiler library; the runtime
// library only parses and checks against signatures (signature.cpp).
#include <set>

#include "analysis/host_assumes.h"
#include "ir/device_calls.h"
#include "ir/visitor.h"
#include "ops/tile_op.h"
#include "runtime/signature.h"
#include "transform/split_kernels.h"

namespace tl {

// The tensor parameters `f` may write, read off the IR as the user wrote it:
// stores, the region each tile op writes (tile_ops.def), and addresses taken for
// writing (T.access_ptr with a write mask; an address without a mask, as
// T.address_of and the atomics take it, may be written through). Views of a
// parameter are not buffers of their own (language/views.py), so their accesses
// name the parameter's buffer. A global buffer is matched by name as well, so that
// a rebuilt Buffer of a parameter still counts.
std::vector<bool> written_params(const PrimFunc& f) {
  struct Finder : IRVisitor {
    std::set<const BufferNode*> nodes;
    std::set<std::string> global_names;
    using IRVisitor::visit;
    void mark(const Buffer& b) {
      nodes.insert(b.get());
      if (b->scope == Scope::Global) global_names.insert(b->name);
    }
    void visit(const BufferStoreNode* op) override {
      mark(op->buffer);
      IRVisitor::visit(op);
    }
    void visit(const TileOpNode* op) override {
      int w = op_info(op->op).written_region;
      if (w >= 0 && size_t(w) < op->regions.size()) mark(op->regions[size_t(w)].buffer);
      IRVisitor::visit(op);
    }
    void visit(const CallNode* op) override {
      if (op->op == Intrinsic::AddressOf && !op->args.empty()) {
        std::optional<int64_t> mask = op->args.size() > 1 ? as_const_int(op->args[1]) : std::nullopt;
        bool for_writing = op->args.size() < 2 || !mask || (*mask & 2);
        if (auto* load = op->args[0].as<BufferLoadNode>(); load && for_writing) mark(load->buffer);
      }
      IRVisitor::visit(op);
    }
  } finder;
  finder.visit(f->body);
  std::vector<bool> out;
  for (const Param& p : f->params)
    out.push_back(p.is_tensor() && (finder.nodes.count(p.buffer.get()) || finder.global_names.count(p.buffer->name)));
  return out;
}

// Every Buffer of the body is reached through IRVisitor::visit_buffer (loads,
// stores, tile op regions, allocations): a parameter whose buffer (or a global
// buffer of its name, as written_params matches it) never comes by is not accessed.
std::vector<bool> accessed_params(const PrimFunc& f) {
  struct Finder : IRVisitor {
    std::set<const BufferNode*> nodes;
    std::set<std::string> global_names;
    using IRVisitor::visit;
    void visit_buffer(const Buffer& b) override {
      if (!b.defined()) return;
      nodes.insert(b.get());
      if (b->scope == Scope::Global) global_names.insert(b->name);
    }
  } finder;
  finder.visit(f->body);
  std::vector<bool> out;
  for (const Param& p : f->params)
    out.push_back(!p.is_tensor() || p.workspace || finder.nodes.count(p.buffer.get()) ||
                  finder.global_names.count(p.buffer->name));
  return out;
}

KernelSignature KernelSignature::from(const PrimFunc& f) {
  KernelSignature sig;
  sig.name = f->name;
  sig.params = f->params;
  sig.written = written_params(f);
  sig.accessed = accessed_params(f);
  std::set<const VarNode*> host;
  for (const Param& p : f->params)
    if (!p.is_tensor()) host.insert(p.var.node());
  for (const Var& v : host_vars(f)) {
    if (host.count(v.node())) continue;  // a scalar parameter
    host.insert(v.node());
    sig.dynamic_vars.push_back(v);
  }
  // One launch per T.Kernel block, in program order.
  for (const PrimFunc& part : split_kernels(f)) {
    struct Finder : IRVisitor {
      const KernelLaunchNode* launch = nullptr;
      using IRVisitor::visit;
      void visit(const KernelLaunchNode* op) override {
        if (!launch) launch = op;
      }
    } finder;
    finder.visit(part->body);
    TL_ICHECK(finder.launch, "split_kernels left a part without a T.Kernel block");
    const KernelLaunchNode* k = finder.launch;
    sig.launches.push_back(LaunchSpec{k->grid, k->threads, {}, k->span, k->cluster});
    sig.launches.back().cooperative = calls_device(k->body, kSyncGridCall);
  }
  sig.assumes = host_assumes(f->body, host);
  return sig;
}

}  // namespace tl
