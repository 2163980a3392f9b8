// Layout inference for fragments, then their lowering into per-thread registers.
// This file runs the phases of src/transform/lower_fragments/ (plan.h lists them)
// for each T.Kernel:
//
// 1. Collect: every fragment of a T.Kernel with a constant shape is a candidate.
//    Each use adds a constraint: T.Parallel nests tie the fragments they index by
//    their loop variables to one layout (and per-row vectors indexed by the
//    leading variables to the rows of it); T.reduce over the last dim makes the
//    destination the rows of the source; a fragment-to-fragment T.copy ties both;
//    T.gemm fixes its accumulator to the mma layout. A use of any other shape
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

#include "ir/visitor.h"
#include "support/logging.h"
#include "transform/lower_fragments/plan.h"

namespace tl {
namespace {

using fragments::Analysis;
using fragments::at;
using fragments::GemmUse;
using fragments::Solution;

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
    Analysis a = fragments::analyze_launch(op, target_, wgmma_);
    Solution s = fragments::solve(a);
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
    return with_body(op, fragments::lower_kernel_body(op->body, a, s, thread_rank(op), cuda));
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
    Analysis a = fragments::analyze_launch(op, target, true);
    for (const auto& [buf, layout] : a.seeds)
      if (layout->kind() == FragmentLayout::Kind::WgmmaAccum) out.insert(buf);
  }
  return out;
}

std::map<const BufferNode*, SharedTileLayout> shared_tile_layouts(const PrimFunc& f, const Target& target,
                                                                  bool allow_wgmma) {
  std::map<const BufferNode*, SharedTileLayout> out;
  for (const KernelLaunchNode* op : launches_of(f->body)) {
    Analysis a = fragments::analyze_launch(op, target, allow_wgmma && target.has_wgmma());
    Solution s = fragments::solve(a);
    for (auto& [k, bl] : fragments::operand_layouts(a, s)) out[k] = bl.second;
  }
  return out;
}

std::map<const BufferNode*, FragmentLayoutPtr> fragment_layouts(const PrimFunc& f, const Target& target,
                                                                bool allow_wgmma) {
  std::map<const BufferNode*, FragmentLayoutPtr> out;
  for (const KernelLaunchNode* op : launches_of(f->body)) {
    Analysis a = fragments::analyze_launch(op, target, allow_wgmma && target.has_wgmma());
    Solution s = fragments::solve(a);
    out.insert(s.layouts.begin(), s.layouts.end());
  }
  return out;
}

PrimFunc lower_fragments(const PrimFunc& f, const Target& target, bool allow_wgmma) {
  return f.with_body(PerKernel(target, allow_wgmma).mutate(f->body));
}

}  // namespace tl
