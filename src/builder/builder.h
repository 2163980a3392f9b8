// FunctionBuilder: the one way to write a kernel, used by the C++ API (include/tl)
// and by the Python frontend alike. It keeps a stack of open frames (kernel, loops,
// ifs); statements go into the innermost one, and closing a frame wraps its
// statements into the node it stands for.
#pragma once

#include <functional>
#include <optional>

#include "ir/ir.h"

namespace tl {

struct KernelVars {
  std::vector<Var> blocks;   // bx, by, bz (one per grid dim)
  std::vector<Var> threads;  // tx, ty, tz (one per thread dim)
};

class FunctionBuilder {
 public:
  explicit FunctionBuilder(std::string name, SourceSpan span = {});

  // The span given to the statements and expressions that follow.
  void set_span(SourceSpan span) { span_ = span; }
  const SourceSpan& span() const { return span_; }

  // ---- parameters
  // `address`: the parameter was declared a pointer (T.ptr / T.handle); see Param.
  Buffer tensor_param(const std::string& name, std::vector<Expr> shape, DataType dtype, std::vector<Expr> strides = {},
                      bool address = false);
  Var scalar_param(const std::string& name, DataType dtype);
  // A symbolic dimension (T.dynamic); bound at call time from the argument shapes.
  Var dynamic_var(const std::string& name, DataType dtype = dtype::Int32);
  // T.alloc_global: a global tensor the function's kernels share, allocated by the
  // runtime on every call and hidden from the caller (Param::workspace). Called
  // outside every kernel; each symbolic dim must be bound by the arguments (checked
  // when the function is finished, at this call's line).
  Buffer workspace(const std::string& name, std::vector<Expr> shape, DataType dtype);
  const std::vector<Param>& params() const { return params_; }
  // Puts the parameters named in `names` first, in that order; the others follow in the
  // order they were declared (a T.prim_func whose body declares its parameters keeps
  // its signature's order, T.empty outputs last).
  void order_params(const std::vector<std::string>& names);

  // ---- frames
  // `cluster`: blocks per thread block cluster along x, y, z (sm_90+); empty or all
  // ones for none.
  KernelVars begin_kernel(std::vector<Expr> grid, const std::vector<int64_t>& threads, std::string prelude = {},
                          std::vector<int64_t> cluster = {});
  // The launch of the innermost open kernel set anew (TVM's `for bx in
  // T.thread_binding(...)` loops give it one axis at a time): the same checks as
  // begin_kernel; index variables of axes it did not have yet are added.
  KernelVars resize_kernel(std::vector<Expr> grid, std::vector<int64_t> threads);
  // T.import_source: appends `source` (once) to the enclosing kernel's prelude.
  void import_source(const std::string& source);
  // An attribute of the function (the last value set for a key wins), e.g. the
  // `safe_value.<tensor>` of T.annotate_safe_value.
  void set_attr(const std::string& key, AttrValue value) { attrs_[key] = std::move(value); }
  void end_kernel();
  Var begin_for(const std::string& name, const Expr& min, const Expr& extent, ForKind kind, Attrs annotations = {});
  void end_for();
  void begin_if(Expr cond);
  void begin_else();
  void end_if();
  void begin_while(Expr cond);
  void end_while();
  bool in_kernel() const { return kernel_depth_ > 0; }
  int loop_depth() const { return loop_depth_; }

  // ---- statements
  // `in_kernel_frame`: allocate in the kernel's own frame, wherever the call is (shared
  // tiles and fragments always are; a per-thread state such as T.rng_init's asks for it).
  Buffer alloc(const std::string& name, std::vector<Expr> shape, DataType dtype, Scope scope,
               bool in_kernel_frame = false);
  // Binds `value` to a new variable for the rest of the current frame.
  Var let(const std::string& name, Expr value);
  // Binds `value` (cast to v's dtype) to the existing, unbound variable `v` for the rest
  // of the current frame (T.let); returns v.
  Var let_var(Var v, Expr value);
  void store(const Buffer& b, std::vector<Expr> indices, Expr value);
  void emit(Stmt s);
  void evaluate(Expr e);
  void emit_break();
  void emit_continue();
  void sync_threads();
  void sync_grid();

  // ---- tile ops (validated here; errors point at the current span)
  void copy(const CopyOperand& src, const CopyOperand& dst, Attrs attrs = {});
  void fill(const BufferRegion& dst, Expr value);
  void gemm(const BufferRegion& a, const BufferRegion& b, const BufferRegion& c, Attrs attrs = {});
  // Any op of ops/tile_ops.def by name ("reduce", "atomic_add" ...).
  void tile_op(const std::string& name, std::vector<BufferRegion> regions, std::vector<Expr> args, Attrs attrs = {});

  // Closes the function. Throws a UserError when frames are still open.
  PrimFunc finish();

  // C++ convenience: run `body` inside a frame.
  void kernel(std::vector<Expr> grid, const std::vector<int64_t>& threads, const std::function<void(KernelVars)>& body);
  void serial(const Expr& extent, const std::function<void(Var)>& body);
  void parallel(std::vector<Expr> extents, const std::function<void(std::vector<Var>)>& body);
  void pipelined(const Expr& extent, int num_stages, const std::function<void(Var)>& body);

 private:
  enum class FrameKind { Root, Kernel, For, Then, Else, While };
  // A statement of a frame, or a wrapper (Allocate / LetStmt) around the statements after it.
  struct Item {
    Stmt stmt;
    Buffer alloc;
    Var let_var;
    Expr let_value;
    SourceSpan span;
  };
  // Region extents written through let-bound variables (`H1 = H0 + 64`, then
  // `X[H0:H1]`: extent H1 - H0) folded to the constant the lets' values give, so that
  // the op sees the tile size its buffers are allocated with.
  void fold_extents(std::vector<Expr>& extents) const;
  void fold_extents(BufferRegion& r) const { fold_extents_of(r.ranges); }
  void fold_extents_of(std::vector<Range>& ranges) const;
  struct Frame {
    FrameKind kind;
    SourceSpan span;
    std::vector<Item> items;
    // For loops / kernels / ifs: what the frame becomes when closed.
    Var loop_var;
    Expr min, extent, cond;
    ForKind for_kind = ForKind::Serial;
    Attrs annotations;
    Stmt then_case;  // set when an If frame moves to its else branch
    std::vector<Expr> grid;
    std::vector<int64_t> threads;
    std::string prelude;
    std::vector<int64_t> cluster;
    KernelVars kernel_vars;
  };

  Frame& top() { return frames_.back(); }
  void push(Frame f);
  Stmt pop(FrameKind expected, const char* what);
  static Stmt fold(std::vector<Item>& items);
  void require_kernel(const char* what);
  bool name_taken(const std::string& name) const;  // by a parameter or a workspace

  std::string name_;
  SourceSpan func_span_, span_;
  std::vector<Param> params_;
  std::vector<Param> workspaces_;  // appended to params_ by finish()
  Attrs attrs_;
  std::vector<Frame> frames_;
  int kernel_depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace tl
