// Typed constructors for expressions and statements: dtype promotion, constant
// folding of immediates, and the user-facing checks. Passes and frontends build IR
// through these, never through node constructors directly.
#pragma once

#include "ir/stmt.h"

namespace tl {

Expr make_const(DataType t, double value);  // IntImm or FloatImm as t requires
Expr int_imm(int64_t v, DataType t = dtype::Int32);
Expr float_imm(double v, DataType t = dtype::Float32);
Expr bool_imm(bool v);
Expr string_imm(std::string s);

// The dtype both operands are converted to before a binary op.
DataType promote_types(const Expr& a, const Expr& b);

// An integer division or remainder by the constant 0 is a user error here.
Expr binary(BinaryOp op, Expr a, Expr b, SourceSpan span = {});
// binary() for passes that rebuild a node: a division whose divisor a substitution or
// a fold made the constant 0 is kept as it is, not reported (the code holding it may be
// dead, and its run-time result is defined: x // 0 == 0, x % 0 == x).
Expr rebuild_binary(BinaryOp op, Expr a, Expr b, SourceSpan span = {});
Expr add(Expr a, Expr b);
Expr sub(Expr a, Expr b);
Expr mul(Expr a, Expr b);
Expr div(Expr a, Expr b);  // true division for floats, truncating for ints
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr ceildiv(const Expr& a, const Expr& b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
// The reductions' combination: with propagate_nan (T.reduce_max(..., nan_propagate=True))
// and a float dtype, a NaN operand gives NaN (Intrinsic::MaxNan); otherwise max / min,
// which ignore a NaN operand.
Expr reduction_max(Expr a, Expr b, bool propagate_nan);
Expr reduction_min(Expr a, Expr b, bool propagate_nan);
Expr eq(Expr a, Expr b);
Expr ne(Expr a, Expr b);
Expr lt(Expr a, Expr b);
Expr le(Expr a, Expr b);
Expr gt(Expr a, Expr b);
Expr ge(Expr a, Expr b);
Expr logical_and(Expr a, Expr b);
Expr logical_or(Expr a, Expr b);
Expr logical_not(Expr a);
Expr neg(const Expr& a);
Expr bit_not(const Expr& a);
Expr cast(DataType t, Expr v, SourceSpan span = {});
Expr reinterpret(DataType t, Expr v, SourceSpan span = {});
Expr select(Expr cond, Expr t, Expr f, SourceSpan span = {});
Expr call(Intrinsic op, std::vector<Expr> args, SourceSpan span = {});
Expr call_extern(DataType t, const std::string& name, std::vector<Expr> args);
// The address of `element` (a BufferLoad) for a device call, with how the callee uses
// the memory there (T.access_ptr's mask: 1 reads, 2 writes, 3 both), which the
// barrier planner orders it by. An address without a mask reads and writes.
// ReadInFlight (5: a read, bit 2 "still going on after the call returns") is what a
// wgmma issued without its wait passes: the planner keeps those reads pending until
// the wgmma wait that ends them.
enum class AddressAccess : int { Read = 1, Write = 2, ReadWrite = 3, ReadInFlight = 5 };
Expr address_of(Expr element, AddressAccess access);
// The mask of an address_of call; ReadWrite when it has none.
AddressAccess address_access(const CallNode* address);
Expr buffer_load(const Buffer& b, std::vector<Expr> indices, SourceSpan span = {});
Expr ramp(Expr base, Expr stride, int lanes);
Expr broadcast(Expr value, int lanes);
Expr let(Var v, Expr value, Expr body);

// Largest / smallest finite value and infinity of a dtype, as constants.
Expr max_value(DataType t);
Expr min_value(DataType t);
Expr infinity(DataType t, bool negative = false);

Stmt seq(std::vector<Stmt> stmts);  // flattens nested sequences; one stmt returns itself
Stmt for_loop(Var v, Expr min, Expr extent, ForKind kind, Stmt body, Attrs ann = {}, SourceSpan span = {});
Stmt while_loop(const Expr& cond, Stmt body, SourceSpan span = {});
Stmt if_then_else(const Expr& cond, Stmt then_case, Stmt else_case = {}, SourceSpan span = {});
Stmt buffer_store(const Buffer& b, Expr value, std::vector<Expr> indices, SourceSpan span = {});
Stmt evaluate(Expr v, SourceSpan span = {});
Stmt let_stmt(Var v, Expr value, Stmt body, SourceSpan span = {});
Stmt allocate(Buffer b, Stmt body, SourceSpan span = {});
Stmt attr_stmt(std::string key, AttrValue value, Stmt body, SourceSpan span = {});
Stmt barrier(BarrierKind k, SourceSpan span = {});
Stmt break_stmt(SourceSpan span = {});
Stmt continue_stmt(SourceSpan span = {});
Stmt tile_op(TileOpKind op, std::vector<BufferRegion> regions, std::vector<Expr> args, Attrs attrs,
             SourceSpan span = {});

// The flat rank of the thread in `launch` (int32): x fastest, then y, then z.
Expr thread_rank(const KernelLaunchNode* launch);

}  // namespace tl
