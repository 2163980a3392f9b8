// The register-fragment contract of the tile ops (ops/registers.h): the op table gives
// every op both entries, the ops that run on registers are those tile_ops.def names,
// and an op's layout inference says what it asks through OpUses alone, without the
// lower_fragments pass around it.
#include <gtest/gtest.h>

#include "ir/expr_ops.h"
#include "ops/registers.h"

namespace tl {
namespace {

using fragments::Analysis;

// OpUses for an op outside any T.Parallel loop and let.
class Uses : public fragments::OpUses {
 public:
  explicit Uses(Analysis& a) : OpUses(a) {}
  bool in_parallel_loop() const override { return false; }
  void element_access(const Buffer& b, const std::vector<Expr>&) override { accessed.push_back(b->name); }
  const std::map<const VarNode*, Expr>& lets() const override { return lets_; }
  std::vector<std::string> accessed;

 private:
  std::map<const VarNode*, Expr> lets_;
};

Buffer fragment(const std::string& name, std::vector<Expr> shape, DataType t = dtype::Float32) {
  return Buffer::make(name, t, std::move(shape), Scope::Fragment);
}

std::string demoted(const Analysis& a, const Buffer& b) {
  auto it = a.demoted.find(b.get());
  return it == a.demoted.end() ? "" : it->second;
}

TEST(RegisterContract, EveryOpHasBothEntriesAndTheTableNamesTheRegisterOps) {
  std::set<std::string> with_registers;
  const TileOpKind kinds[] = {
#define TL_TILE_OP(Ident, name, fn, written, regs) TileOpKind::Ident,
#include "ops/tile_ops.def"
#undef TL_TILE_OP
  };
  for (TileOpKind kind : kinds) {
    const OpInfo& info = op_info(kind);
    ASSERT_NE(info.infer_fragments, nullptr) << info.name;
    ASSERT_NE(info.lower_registers, nullptr) << info.name;
    if (info.lower_registers != &lower_none_registers) with_registers.insert(info.name);
    EXPECT_EQ(info.infer_fragments == &infer_none_fragments, info.lower_registers == &lower_none_registers)
        << info.name << ": an op infers layouts for its fragments exactly when it lowers on registers";
  }
  EXPECT_EQ(with_registers, (std::set<std::string>{"atomic", "copy", "fill", "gemm", "reduce"}));
}

TEST(RegisterContract, AnOpWithoutRegisterLoweringDemotesItsFragmentsWithTheReason) {
  Analysis a;
  Buffer x = fragment("x", {int_imm(64)}), y = fragment("y", {int_imm(64)});
  a.candidates[x.get()] = x;
  a.candidates[y.get()] = y;
  Stmt s = op_info("cumsum").make({{BufferRegion::full(x), BufferRegion::full(y)}, {}, {}, {}});
  Uses uses(a);
  op_info(TileOpKind::Cumsum).infer_fragments(s.as<TileOpNode>(), uses);
  EXPECT_EQ(demoted(a, x), "T.cumsum has no register lowering");
  EXPECT_EQ(demoted(a, y), "T.cumsum has no register lowering");
}

TEST(RegisterContract, FillAsksForAWholeFragment) {
  Analysis a;
  Buffer x = fragment("x", {int_imm(64)});
  a.candidates[x.get()] = x;
  Uses uses(a);
  Stmt whole = make_fill(BufferRegion::full(x), float_imm(0), {});
  op_info(TileOpKind::Fill).infer_fragments(whole.as<TileOpNode>(), uses);
  EXPECT_TRUE(a.demoted.empty());
  Stmt part = make_fill(BufferRegion{x, {Range{int_imm(0), int_imm(32)}}}, float_imm(0), {});
  op_info(TileOpKind::Fill).infer_fragments(part.as<TileOpNode>(), uses);
  EXPECT_EQ(demoted(a, x), "T.fill of part of a fragment");
}

TEST(RegisterContract, CopyTiesTwoWholeFragmentsOfOneShape) {
  Analysis a;
  Buffer x = fragment("x", {int_imm(16), int_imm(16)});
  Buffer y = fragment("y", {int_imm(16), int_imm(16)}, dtype::Float16);
  Buffer z = fragment("z", {int_imm(256)});
  for (const Buffer& b : {x, y, z}) a.candidates[b.get()] = b;
  Uses uses(a);
  std::vector<Expr> origin{int_imm(0), int_imm(0)}, tile{int_imm(16), int_imm(16)};
  Stmt same = make_copy(CopyOperand{x, origin, tile}, CopyOperand{y, origin, tile}, {}, {});
  op_info(TileOpKind::Copy).infer_fragments(same.as<TileOpNode>(), uses);
  ASSERT_EQ(a.same.size(), 1u) << demoted(a, x);
  EXPECT_EQ(a.same[0],
            std::make_pair(static_cast<fragments::BufKey>(x.get()), static_cast<fragments::BufKey>(y.get())));
  EXPECT_EQ(a.narrowest.at(x.get()), 2);  // the narrowest element copied with x: float16
  EXPECT_TRUE(a.demoted.empty());
}

TEST(RegisterContract, ReduceOverTheLastDimMakesTheDestinationTheRowsOfTheSource) {
  Analysis a;
  Buffer s = fragment("s", {int_imm(64), int_imm(32)}), d = fragment("d", {int_imm(64)});
  a.candidates[s.get()] = s;
  a.candidates[d.get()] = d;
  Stmt r = op_info("reduce").make(
      {{BufferRegion::full(s), BufferRegion::full(d)}, {}, {{"kind", std::string("sum")}, {"dim", int64_t(1)}}, {}});
  Uses uses(a);
  op_info(TileOpKind::Reduce).infer_fragments(r.as<TileOpNode>(), uses);
  ASSERT_EQ(a.row_of.size(), 1u);
  EXPECT_EQ(a.row_of[0].first, d.get());
  EXPECT_EQ(a.row_of[0].second, s.get());
}

}  // namespace
}  // namespace tl
