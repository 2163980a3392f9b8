// LayoutFacts (transform/lower_fragments.h): layout inference runs once per kernel for
// all the passes that read it, again only for a kernel a pass has rewritten, and the
// choices the earlier passes read are those lower_fragments lowers by.
#include <gtest/gtest.h>

#include "builder/builder.h"
#include "ir/expr_ops.h"
#include "ir/visitor.h"
#include "target/target.h"
#include "transform/lower_fragments.h"
#include "transform/lower_fragments/plan.h"
#include "transform/pipeline_loops.h"

namespace tl {
namespace {

// C = A @ B on 64x64x32 float16 tiles into a float32 fragment, with a pipelined K loop
// when `stages` > 0.
PrimFunc gemm(int64_t stages) {
  const int64_t M = 128, N = 128, K = 128, BM = 64, BN = 64, BK = 32;
  FunctionBuilder fb("gemm");
  Buffer A = fb.tensor_param("A", {int_imm(M), int_imm(K)}, dtype::Float16);
  Buffer B = fb.tensor_param("B", {int_imm(K), int_imm(N)}, dtype::Float16);
  Buffer C = fb.tensor_param("C", {int_imm(M), int_imm(N)}, dtype::Float32);
  fb.kernel({int_imm(N / BN), int_imm(M / BM)}, {128}, [&](KernelVars kv) {
    Expr bx = kv.blocks[0], by = kv.blocks[1];
    Buffer As = fb.alloc("A_shared", {int_imm(BM), int_imm(BK)}, dtype::Float16, Scope::SharedDyn);
    Buffer Bs = fb.alloc("B_shared", {int_imm(BK), int_imm(BN)}, dtype::Float16, Scope::SharedDyn);
    Buffer Cl = fb.alloc("C_local", {int_imm(BM), int_imm(BN)}, dtype::Float32, Scope::Fragment);
    fb.fill(BufferRegion::full(Cl), float_imm(0));
    auto step = [&](Expr k) {
      fb.copy({A, {by * BM, k * BK}, {}}, {As, {int_imm(0), int_imm(0)}, {int_imm(BM), int_imm(BK)}});
      fb.copy({B, {k * BK, bx * BN}, {}}, {Bs, {int_imm(0), int_imm(0)}, {int_imm(BK), int_imm(BN)}});
      fb.gemm(BufferRegion::full(As), BufferRegion::full(Bs), BufferRegion::full(Cl));
    };
    if (stages > 0)
      fb.pipelined(int_imm(K / BK), stages, [&](Var k) { step(k); });
    else
      step(int_imm(0));
    fb.copy({Cl, {int_imm(0), int_imm(0)}, {int_imm(BM), int_imm(BN)}}, {C, {by * BM, bx * BN}, {}});
  });
  return fb.finish();
}

std::map<std::string, SharedTileLayout> by_name(const std::map<const BufferNode*, SharedTileLayout>& m) {
  std::map<std::string, SharedTileLayout> out;
  for (const auto& [b, l] : m) out[b->name] = l;
  return out;
}

TEST(LayoutFacts, InfersEachKernelOnceForEveryPassThatAsks) {
  Target t = Target::parse("cuda -arch=sm_90a");
  PrimFunc f = gemm(0);
  LayoutFacts facts(t);
  std::set<const BufferNode*> accs = facts.wgmma_accumulators(f);
  ASSERT_EQ(accs.size(), 1u);
  EXPECT_EQ((*accs.begin())->name, "C_local");
  auto tiles = by_name(facts.shared_tile_layouts(f));
  ASSERT_EQ(tiles.size(), 2u);
  EXPECT_TRUE(tiles.at("A_shared").wgmma);
  EXPECT_TRUE(tiles.at("B_shared").wgmma);
  lower_fragments(f, facts);
  EXPECT_EQ(facts.inferences(), 1);
}

TEST(LayoutFacts, InfersAgainOnlyAKernelAPassRewrote) {
  Target t = Target::parse("cuda -arch=sm_90a");
  LayoutFacts facts(t);
  PrimFunc f = gemm(2);
  PrimFunc pipelined = pipeline_loops(f, facts);  // asks about f, makes a new kernel
  EXPECT_EQ(facts.inferences(), 1);
  lower_fragments(pipelined, facts);
  EXPECT_EQ(facts.inferences(), 2);
  lower_fragments(pipelined, facts);  // the same kernel again: its plan is kept
  EXPECT_EQ(facts.inferences(), 2);
}

TEST(LayoutFacts, OffWgmmaTheAccumulatorsAreNoneAndNothingIsInferred) {
  for (const char* target : {"cuda -arch=sm_80", "cuda -arch=sm_90a"}) {
    SCOPED_TRACE(target);
    Target t = Target::parse(target);
    LayoutFacts facts(t, /*allow_wgmma=*/std::string(target) == "cuda -arch=sm_80");
    EXPECT_TRUE(facts.wgmma_accumulators(gemm(0)).empty());
    EXPECT_EQ(facts.inferences(), 0);
    auto tiles = by_name(facts.shared_tile_layouts(gemm(0)));
    ASSERT_EQ(tiles.size(), 2u);
    EXPECT_FALSE(tiles.at("A_shared").wgmma);  // the mma.sync swizzle
  }
}

TEST(LayoutFacts, SolvingReportsAConflictAsAResult) {
  // Two gemm accumulators that the policies FullRow and FullCol lay out differently,
  // tied by one T.Parallel loop: solving them returns the conflict (analyze_launch and
  // lower_fragments raise it as the user's error).
  FunctionBuilder fb("conflict");
  Buffer A = fb.tensor_param("A", {int_imm(64), int_imm(32)}, dtype::Float16);
  Buffer B = fb.tensor_param("B", {int_imm(32), int_imm(64)}, dtype::Float16);
  Buffer C = fb.tensor_param("C", {int_imm(64), int_imm(64)}, dtype::Float32);
  fb.kernel({int_imm(1)}, {128}, [&](KernelVars) {
    Buffer As = fb.alloc("A_shared", {int_imm(64), int_imm(32)}, dtype::Float16, Scope::SharedDyn);
    Buffer Bs = fb.alloc("B_shared", {int_imm(32), int_imm(64)}, dtype::Float16, Scope::SharedDyn);
    Buffer C1 = fb.alloc("C1", {int_imm(64), int_imm(64)}, dtype::Float32, Scope::Fragment);
    Buffer C2 = fb.alloc("C2", {int_imm(64), int_imm(64)}, dtype::Float32, Scope::Fragment);
    fb.copy({A, {int_imm(0), int_imm(0)}, {}}, {As, {int_imm(0), int_imm(0)}, {int_imm(64), int_imm(32)}});
    fb.copy({B, {int_imm(0), int_imm(0)}, {}}, {Bs, {int_imm(0), int_imm(0)}, {int_imm(32), int_imm(64)}});
    fb.gemm(BufferRegion::full(As), BufferRegion::full(Bs), BufferRegion::full(C1), Attrs{{"policy", int64_t(1)}});
    fb.gemm(BufferRegion::full(As), BufferRegion::full(Bs), BufferRegion::full(C2), Attrs{{"policy", int64_t(2)}});
    fb.parallel({int_imm(64), int_imm(64)}, [&](std::vector<Var> iv) {
      fb.store(C, {iv[0], iv[1]}, buffer_load(C1, {iv[0], iv[1]}) + buffer_load(C2, {iv[0], iv[1]}));
    });
  });
  PrimFunc f = fb.finish();
  const KernelLaunchNode* launch = nullptr;
  struct Find : IRVisitor {
    const KernelLaunchNode** out;
    using IRVisitor::visit;
    void visit(const KernelLaunchNode* op) override { *out = op; }
  } find;
  find.out = &launch;
  find.visit(f->body);
  ASSERT_NE(launch, nullptr);
  Target t = Target::parse("cuda -arch=sm_80");
  fragments::Analysis a;
  a.target = &t;
  a.threads = launch->thread_count();
  fragments::collect(a, launch->body);
  fragments::SolveResult r = fragments::try_solve(a);
  ASSERT_TRUE(r.conflict.has_value());
  EXPECT_NE(r.conflict->message.find("layout conflict: fragment '"), std::string::npos) << r.conflict->message;
  EXPECT_TRUE(r.solution.layouts.empty());
}

}  // namespace
}  // namespace tl
