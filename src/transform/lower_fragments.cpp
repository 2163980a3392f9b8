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
  PerKernel(const PrimFunc& f, LayoutFacts& facts) : f_(f), facts_(facts) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    const fragments::KernelPlan& plan = facts_.plan(f_, op);
    const Analysis& a = plan.analysis;
    const Solution& s = plan.solution;
    // A demoted fragment is a performance cliff: say which and why.
    std::vector<std::string> lines;
    for (const auto& [k, why] : a.demoted)
      lines.push_back(str_cat("fragment '", k->name, "' stays in shared memory: ", why));
    std::sort(lines.begin(), lines.end());
    for (const std::string& line : lines) log(LogLevel::Debug, line);
    bool cuda = facts_.target().kind == TargetKind::CUDA;
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
  const PrimFunc& f_;
  LayoutFacts& facts_;
};

}  // namespace

LayoutFacts::LayoutFacts(const Target& target, bool allow_wgmma, bool gemm_sp_wgmma)
    : target_(target), wgmma_(allow_wgmma && target.has_wgmma()), gemm_sp_wgmma_(gemm_sp_wgmma) {}

LayoutFacts::~LayoutFacts() = default;

const fragments::KernelPlan& LayoutFacts::plan(const PrimFunc& f, const KernelLaunchNode* op) {
  auto it = plans_.find(op);
  if (it != plans_.end()) return *it->second;
  if (seen_.empty() || !seen_.back().same_as(f->body)) seen_.push_back(f->body);
  ++inferences_;
  auto plan = std::make_unique<fragments::KernelPlan>();
  plan->analysis = fragments::analyze_launch(op, target_, wgmma_, gemm_sp_wgmma_);
  plan->solution = fragments::solve(plan->analysis);
  return *plans_.emplace(op, std::move(plan)).first->second;
}

std::set<const BufferNode*> LayoutFacts::wgmma_accumulators(const PrimFunc& f) {
  std::set<const BufferNode*> out;
  if (!wgmma_) return out;
  for (const KernelLaunchNode* op : launches_of(f->body))
    for (const auto& [buf, layout] : plan(f, op).analysis.seeds)
      if (layout->kind() == FragmentLayout::Kind::WgmmaAccum) out.insert(buf);
  return out;
}

std::map<const BufferNode*, SharedTileLayout> LayoutFacts::shared_tile_layouts(const PrimFunc& f) {
  std::map<const BufferNode*, SharedTileLayout> out;
  for (const KernelLaunchNode* op : launches_of(f->body)) {
    const fragments::KernelPlan& p = plan(f, op);
    for (auto& [k, bl] : fragments::operand_layouts(p.analysis, p.solution)) out[k] = bl.second;
  }
  return out;
}

std::map<const BufferNode*, FragmentLayoutPtr> LayoutFacts::fragment_layouts(const PrimFunc& f) {
  std::map<const BufferNode*, FragmentLayoutPtr> out;
  for (const KernelLaunchNode* op : launches_of(f->body)) {
    const Solution& s = plan(f, op).solution;
    out.insert(s.layouts.begin(), s.layouts.end());
  }
  return out;
}

PrimFunc lower_fragments(const PrimFunc& f, LayoutFacts& facts) {
  return f.with_body(PerKernel(f, facts).mutate(f->body));
}

PrimFunc lower_fragments(const PrimFunc& f, const Target& target, bool allow_wgmma) {
  LayoutFacts facts(target, allow_wgmma);
  return lower_fragments(f, facts);
}

}  // namespace tl
