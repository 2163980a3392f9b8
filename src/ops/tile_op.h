// The contract every tile operator implements, one file per op in src/ops/:
// `make_<op>` checks the user's operands and builds the TileOp statement;
// `lower_<op>_serial` expands it into loops: on the cpu target one executor runs
// them for the whole block; on the GPU targets lower_tile_ops wraps them in a block
// op that the code generator spreads over the threads. An op that runs on register
// fragments also says what it asks of their layouts and how it runs on the registers
// each thread holds (ops/registers.h; lower_fragments asks it). The tensor-core and
// TMA forms of copies and gemms in pipelined loops are passes of their own in
// src/transform.
#pragma once

#include <functional>
#include <set>

#include "ir/ir.h"

namespace tl {

// The operands of a tile op as the frontends hand them over.
struct TileOpArgs {
  std::vector<BufferRegion> regions;
  std::vector<Expr> args;
  Attrs attrs;
  SourceSpan span;
};

namespace fragments {
class OpUses;
struct LowerContext;
}  // namespace fragments

struct OpInfo {
  const char* name;
  Stmt (*make)(TileOpArgs args);
  Stmt (*lower_serial)(const TileOpNode* op);
  int written_region;  // the index of the region the op writes; -1: none
  // Register fragments (ops/registers.h): the op's constraints on their layouts, and
  // its per-thread code over them; infer_none_fragments / lower_none_registers for an
  // op that has none.
  void (*infer_fragments)(const TileOpNode* op, fragments::OpUses& uses);
  Stmt (*lower_registers)(const TileOpNode* op, const fragments::LowerContext& ctx);
};

const OpInfo& op_info(TileOpKind kind);
// The op called `name` ("copy", "reduce" ...); throws a UserError for unknown names.
const OpInfo& op_info(const std::string& name, SourceSpan span = {});

#define TL_TILE_OP(Ident, name, fn, written, regs)                              \
  Stmt make_##fn##_op(TileOpArgs args);                                         \
  Stmt lower_##fn##_serial(const TileOpNode* op);                               \
  void infer_##regs##_fragments(const TileOpNode* op, fragments::OpUses& uses); \
  Stmt lower_##regs##_registers(const TileOpNode* op, const fragments::LowerContext& ctx);
#include "ops/tile_ops.def"
#undef TL_TILE_OP

// Builders, validated (errors name the user's span). See the op files for semantics.
Stmt make_copy(const CopyOperand& src, const CopyOperand& dst, Attrs attrs, SourceSpan span);
Stmt make_fill(BufferRegion dst, Expr value, SourceSpan span);
Stmt make_gemm(BufferRegion a, BufferRegion b, BufferRegion c, Attrs attrs, SourceSpan span);

// The device call of an element atomic of `kind` (add, max, min: a region atomic's
// kinds) with memory order `order`, `tl::atomic_<kind><order>` (ir/device_calls.def),
// and the call of an atomic add of a run of `width` (2 or 4) elements,
// tl::AtomicAddx2 / x4.
std::string atomic_element_call(const std::string& kind, int64_t order);
const char* atomic_add_run_call(int64_t width);

// CUDA: a T.atomic_add of a run of 2 or 4 consecutive elements along the last
// dimension of both sides (T.atomic_addx2 / x4, or a region of that shape) into a
// float32 / float16 / bfloat16 tensor as one tl::AtomicAddx2 / x4 of the values
// gathered into registers (elements alone where the run leaves the tensor);
// undefined when the op is not such a run.
Stmt lower_atomic_run(const TileOpNode* op);

// T.gemm as a parallel nest of dot products: a GPU gemm that no register or
// tensor-core lowering took.
Stmt lower_gemm_loops(const TileOpNode* op);

// Units (warps, or warpgroups for wgmma) along M for an M x N tile over `units`
// under `policy` (TileLang's GemmWarpPolicy: 0 Square, 1 FullRow, 2 FullCol), among
// the counts `fits` accepts; 0 when none does. FullRow takes the most along M that
// fit, FullCol the fewest; Square the squarest split, ties going to more along M
// when `ties_to_more_m`.
int64_t split_by_policy(int64_t m, int64_t n, int64_t units, int64_t policy, const std::function<bool(int64_t)>& fits,
                        bool ties_to_more_m);

// Warps along M for a gemm of M x N over `warps` warps under `policy`; 0 when no
// split gives every warp a multiple of 16 rows and of `n_step` columns (8: m16n8
// tiles; 16 for the register gemms, whose warps read B 16 columns at a time). The
// policy is a preference among the splits that fit, as in TileLang: FullCol's 8 warps
// on a 64 x 32 tile take 4 x 2 (16 x 16 a warp).
int64_t gemm_warp_split(int64_t m, int64_t n, int64_t warps, int64_t policy, int64_t n_step = 8);

// The fragments that a T.finalize_reducer in `body` names (reducers: each thread keeps
// its own partial of every element until then).
std::set<const BufferNode*> finalized_reducers(const Stmt& body);

// The value an out-of-bounds read of T.copy gives: its safe_value attribute, else 0.
Expr safe_value(const Attrs& attrs, DataType t);

// Shared by ops: an int attribute with a default.
int64_t attr_int(const Attrs& attrs, const std::string& key, int64_t fallback);
// The condition that every index is inside `buffer` (true when no check is needed).
Expr in_bounds(const Buffer& buffer, const std::vector<Expr>& indices);

}  // namespace tl
