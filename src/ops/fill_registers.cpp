// T.fill on register fragments (ops/registers.h): a fill of a whole fragment sets
// every register each thread holds; part of a fragment keeps it in shared memory.
#include "ops/extent_util.h"
#include "ops/registers.h"

namespace tl {

using namespace fragments;

void infer_fill_fragments(const TileOpNode* op, OpUses& uses) {
  if (uses.frag(op->regions[0]) && !covers_whole(op->regions[0])) uses.demote_all(op, "T.fill of part of a fragment");
}

Stmt lower_fill_registers(const TileOpNode* op, const LowerContext& ctx) {
  const Buffer& b = op->regions[0].buffer;
  Var k("k", dtype::Int32);
  Stmt st = buffer_store(ctx.reg(b), cast(b->dtype, op->args[0]), {k}, op->span);
  return for_loop(k, int_imm(0), int_imm(ctx.layout(b)->local_size()), ForKind::Unrolled, st);
}

}  // namespace tl
