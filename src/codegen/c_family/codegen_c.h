// The printer shared by every C-family backend (CPU C++, CUDA, Metal). A backend
// subclasses it and overrides the few hooks where its dialect differs (type
// names, allocation qualifiers, kernel signature), instead of re-writing it.
#pragma once

#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ir/ir.h"

namespace tl {

class CodeGenC {
 public:
  virtual ~CodeGenC() = default;

  std::string expr(const Expr& e);
  void stmt(const Stmt& s);
  std::string str() const { return out_.str(); }

 protected:
  // ---- dialect hooks
  virtual std::string type_name(DataType t);
  virtual std::string alloc_prefix(const Buffer& b) { return "alignas(64) "; }
  virtual std::string math_prefix() { return "tl::"; }
  // The name, after math_prefix(), of a math intrinsic on operands of type `t`: the
  // cpu and cuda headers spell float abs `fabs` and round-half-away
  // `RoundTiesAwayFromZero`, as TileLang's CUDA code does.
  virtual std::string math_name(Intrinsic op, DataType t);
  // Emitted before T.unroll loops and the register loops of GPU lowerings.
  virtual std::string unroll_pragma() { return "#pragma GCC unroll 8"; }
  // The pragma that unrolls a loop `factor` times (T.unroll's unroll_factor).
  virtual std::string unroll_pragma(int64_t factor) { return "#pragma GCC unroll " + std::to_string(factor); }
  // Whether the target's 16- and 8-bit float types take float64 and integers whole
  // and round them once (the cpu and cuda headers); otherwise they go through float.
  virtual bool rounds_wide_once() { return true; }
  // Whether the target's header has tl::fma of float16 / bfloat16 operands rounded once
  // (the cpu and cuda headers); otherwise it computes in float and rounds back.
  virtual bool fma16_rounds_once() { return true; }
  // Infinity or NaN as an expression of the dialect (a double-typed value).
  // Infinity or NaN of type `t` as a whole expression of that type, where the dialect
  // must not convert it from a double (empty: the usual conversion).
  virtual std::string special_literal(double v, DataType t) { return {}; }
  virtual std::string special_float(double v, DataType t) {
    if (v != v) return "NAN";
    return v < 0 ? "-INFINITY" : "INFINITY";
  }
  virtual void emit_barrier(const BarrierNode* op) = 0;
  virtual void emit_kernel_launch(const KernelLaunchNode* op) = 0;
  virtual void emit_print(const CallNode* op) = 0;
  virtual void emit_allocate(const AllocateNode* op);
  virtual void emit_attr(const AttrNode* op) { stmt(op->body); }
  // One element of a buffer as an lvalue; `write` and the user's span let a dialect
  // instrument the access (the CUDA emulation's race detector does).
  virtual std::string element(const Buffer& b, const std::string& offset, bool write, const SourceSpan& span) {
    return scalar_var(b) ? name_of(b) : name_of(b) + "[" + offset + "]";
  }
  // Whether `b` (a T.alloc_var of one element) is printed as a plain variable, `x`
  // rather than `x[0]`, as TileLang's CUDA code does.
  virtual bool scalar_var(const Buffer&) { return false; }

  // ---- helpers for backends
  // The element type of a buffer's memory and the number of them that hold
  // `elements` of dtype `t`: bytes for the packed sub-byte types (DataType::is_sub_byte).
  std::string storage_type(DataType t);
  static int64_t storage_count(DataType t, int64_t elements);
  // An element of a packed sub-byte buffer (device/common/sub_byte.h), read as a
  // value and written by a statement.
  std::string packed_load(const Buffer& b, const std::string& offset, const SourceSpan& span);
  std::string packed_store(const Buffer& b, const std::string& offset, const std::string& value,
                           const SourceSpan& span);
  // The base pointer a packed element access goes through (a dialect may instrument
  // it, as element() does).
  virtual std::string packed_base(const Buffer& b, const std::string& offset, bool write, const SourceSpan& span) {
    return name_of(b);
  }
  // A block op (kBlockOpAttr body) run by every thread of a block of `threads`,
  // whose flat rank is `tl_thread_rank`: a cooperative device call runs on every
  // thread, a T.Parallel nest is flattened and strided over the threads, anything
  // else runs on thread 0. Barriers around it come from plan_barriers.
  void emit_block_op(const Stmt& body, int64_t threads);
  std::string name_of(const VarNode* v);
  std::string name_of(const Buffer& b);
  // A pass may give a parameter another buffer (a global buffer in the shape of its
  // annotated layout, transform/global_layouts.h): the lowered function's buffer then
  // names the argument the signature's `declared` buffer does.
  void alias_params(const std::vector<Param>& lowered, const std::vector<Param>& declared);
  std::string flat_offset(const Buffer& b, const std::vector<Expr>& indices);
  void line(const std::string& s);
  void indent() { ++indent_; }
  void dedent() { --indent_; }
  std::string literal(const Expr& e);
  // The operand of a bit reinterpretation, in its own type: arithmetic on 8- and
  // 16-bit integers is promoted to int in C++ and MSL, which has other bits.
  std::string reinterpret_operand(const ReinterpretNode* n);
  static std::string c_ident(const std::string& name);

  std::ostringstream out_;
  SourceSpan statement_span_;  // of the statement being printed (see stmt())
  // The rank emit_block_op spreads over (a T.ws region has its own).
  std::string thread_rank_ = "tl_thread_rank";

  // Every expression is printed through here: a dialect overrides the nodes it
  // spells differently and passes the rest on (children come back through it).
  virtual std::string print_expr(const Expr& e);
  // An expression evaluated as a statement, its value unused (T.evaluate, a device call).
  virtual std::string print_evaluated(const Expr& e) { return print_expr(e); }

 private:
  std::string print_binary(const BinaryNode* op);
  std::string print_call(const CallNode* op);
  void print_for(const ForNode* op);

  int indent_ = 0;
  int flat_counter_ = 0;
  std::unordered_map<const void*, std::string> names_;
  std::unordered_set<std::string> taken_;
};

// A constant divisor other than 0 and -1: C's `/` and `%` are defined for it, so an
// integer division by it is printed as is (the targets' truncdiv / truncmod helpers
// define the other two; see device/common/int_div.h).
bool is_safe_divisor(const Expr& b);

// The function a fast-math intrinsic approximates ("exp" for T.__exp, "rcp" for
// T.fast_rcp), or nullptr for any other intrinsic. The cpu target prints tl::fast_<it>.
const char* fast_math_function(Intrinsic op);

}  // namespace tl
