// The frame stack behind FunctionBuilder. Allocations and lets are recorded as
// wrappers and folded around the statements that follow them when a frame closes.
#include "builder/builder.h"

#include <algorithm>
#include <set>

#include "arith/simplify.h"
#include "ir/device_calls.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "ops/tile_op.h"

namespace tl {

FunctionBuilder::FunctionBuilder(std::string name, SourceSpan span)
    : name_(std::move(name)), func_span_(span), span_(span) {
  frames_.push_back(Frame{FrameKind::Root, span, {}, {}, {}, {}, {}, ForKind::Serial, {}, {}, {}, {}, {}, {}, {}});
}

bool FunctionBuilder::name_taken(const std::string& name) const {
  for (const auto* list : {&params_, &workspaces_})
    for (const Param& p : *list)
      if (p.name == name) return true;
  return false;
}

Buffer FunctionBuilder::tensor_param(const std::string& name, std::vector<Expr> shape, DataType dtype,
                                     std::vector<Expr> strides, bool address) {
  if (name_taken(name)) throw_user_error(span_, str_cat("duplicate parameter name '", name, "'"));
  for (size_t i = 0; i < shape.size(); ++i)
    if (auto c = as_const_int(shape[i]); c && *c < 0)
      throw_user_error(span_,
                       str_cat("shape of parameter '", name, "' must not be negative; dimension ", i, " is ", *c));
  Buffer b = Buffer::make(name, dtype, std::move(shape), Scope::Global, std::move(strides), span_);
  params_.push_back(Param{name, b, {}});
  params_.back().address = address;
  return b;
}

Var FunctionBuilder::scalar_param(const std::string& name, DataType dtype) {
  if (name_taken(name)) throw_user_error(span_, str_cat("duplicate parameter name '", name, "'"));
  Var v(name, dtype, span_);
  params_.push_back(Param{name, {}, v});
  return v;
}

Buffer FunctionBuilder::workspace(const std::string& name, std::vector<Expr> shape, DataType dtype) {
  if (kernel_depth_ > 0)
    throw_user_error(span_, str_cat("T.alloc_global('", name,
                                    "') is inside a `with T.Kernel(...)` block; it allocates a global workspace "
                                    "that the function's kernels share, so call it in the function body before "
                                    "the kernels (inside a kernel, use T.alloc_shared, T.alloc_fragment or "
                                    "T.alloc_local)"));
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!shape[i].dtype().is_integer())
      throw_user_error(span_, str_cat("T.alloc_global: the shape of '", name, "' must be integers; dimension ", i,
                                      " has dtype ", shape[i].dtype().name()));
    if (auto c = as_const_int(shape[i]); c && *c < 0)
      throw_user_error(
          span_, str_cat("T.alloc_global: the shape of '", name, "' must not be negative; dimension ", i, " is ", *c));
  }
  // A parameter's name is its identifier in the generated code: keep it unique.
  std::string unique = name;
  for (int k = 1; name_taken(unique); ++k) unique = str_cat(name, "_", k);
  Buffer b = Buffer::make(unique, dtype, std::move(shape), Scope::Global, {}, span_);
  Param p{unique, b, {}};
  p.workspace = true;
  workspaces_.push_back(p);
  return b;
}

// The vars a call binds: scalar parameters, and the dims and strides of tensor
// parameters that are a bare var.
static std::set<const VarNode*> vars_bound_by_arguments(const std::vector<Param>& params) {
  std::set<const VarNode*> bound;
  for (const Param& p : params) {
    if (!p.is_tensor()) {
      bound.insert(p.var.node());
      continue;
    }
    for (const auto* dims : {&p.buffer->shape, &p.buffer->strides})
      for (const Expr& e : *dims)
        if (auto* v = e.as<VarNode>()) bound.insert(v);
  }
  return bound;
}

// Each workspace's size must follow from the arguments of a call.
static void check_workspace_shapes(const std::vector<Param>& params, const std::vector<Param>& workspaces) {
  std::set<const VarNode*> bound = vars_bound_by_arguments(params);
  for (const Param& w : workspaces) {
    const std::vector<Expr>& shape = w.buffer->shape;
    for (size_t d = 0; d < shape.size(); ++d) {
      for_each_expr(shape[d], [&](const Expr& x) {
        auto* v = x.as<VarNode>();
        if (!v || bound.count(v)) return;
        throw_user_error(w.buffer->span,
                         str_cat("T.alloc_global: dimension ", d, " of workspace '", w.name, "' is '",
                                 to_string(shape[d]), "', and no argument binds '", v->name,
                                 "'; a workspace's size must follow from the arguments: use constants, scalar "
                                 "parameters, or T.dynamic sizes that are a dimension of a tensor parameter"));
      });
    }
  }
}

Var FunctionBuilder::dynamic_var(const std::string& name, DataType dtype) {
  if (!dtype.is_integer())
    throw_user_error(span_, str_cat("T.dynamic('", name, "') needs an integer dtype, got ", dtype.name()));
  return Var(name, dtype, span_);
}

void FunctionBuilder::push(Frame f) {
  frames_.push_back(std::move(f));
}

Stmt FunctionBuilder::fold(std::vector<Item>& items) {
  Stmt rest;
  for (int i = int(items.size()) - 1; i >= 0; --i) {
    Item& it = items[i];
    if (it.alloc.defined()) {
      rest = allocate(it.alloc, rest.defined() ? rest : seq({}), it.span);
    } else if (it.let_var.defined()) {
      rest = let_stmt(it.let_var, it.let_value, rest.defined() ? rest : seq({}), it.span);
    } else {
      rest = rest.defined() ? seq({it.stmt, rest}) : it.stmt;
    }
  }
  return rest.defined() ? rest : seq({});
}

Stmt FunctionBuilder::pop(FrameKind expected, const char* what) {
  if (frames_.size() <= 1 || top().kind != expected)
    throw_internal_error(__FILE__, __LINE__, str_cat("unbalanced builder frames closing ", what));
  Stmt body = fold(top().items);
  return body;
}

void FunctionBuilder::require_kernel(const char* what) {
  if (kernel_depth_ == 0) throw_user_error(span_, str_cat(what, " must be inside a `with T.Kernel(...)` block"));
}

// The cluster of a T.Kernel, checked against its grid: 1 to 3 positive sizes of at
// most 8 blocks in all (the portable limit), each dividing its grid extent where that
// is a constant (a symbolic one is checked at the launch). All ones is no cluster.
static std::vector<int64_t> check_cluster(std::vector<int64_t> cluster, const std::vector<Expr>& grid,
                                          const SourceSpan& span) {
  if (cluster.empty()) return cluster;
  auto shown = [&] {
    std::string s = "(";
    for (size_t i = 0; i < cluster.size(); ++i) s += (i ? ", " : "") + std::to_string(cluster[i]);
    return s + (cluster.size() == 1 ? ",)" : ")");
  };
  if (cluster.size() > 3) throw_user_error(span, str_cat("T.Kernel cluster_dims takes 1 to 3 sizes, got ", shown()));
  int64_t total = 1;
  for (int64_t c : cluster) {
    if (c < 1) throw_user_error(span, str_cat("T.Kernel cluster_dims must be positive, got ", shown()));
    total *= c;
  }
  if (total > 8)
    throw_user_error(span, str_cat("T.Kernel cluster_dims=", shown(), " asks for clusters of ", total,
                                   " blocks; the portable limit is 8"));
  if (total == 1) return {};
  const char* axis = "xyz";
  for (size_t i = 0; i < cluster.size(); ++i) {
    if (cluster[i] == 1) continue;
    if (i >= grid.size())
      throw_user_error(span, str_cat("T.Kernel cluster_dims=", shown(), " clusters blocks along ", axis[i],
                                     ", but the grid has ", grid.size(), " dimension(s)"));
    auto g = as_const_int(grid[i]);
    if (g && *g % cluster[i] != 0)
      throw_user_error(span, str_cat("T.Kernel cluster_dims=", shown(), ": the grid's ", *g, " blocks along ", axis[i],
                                     " are not a multiple of the cluster's ", cluster[i]));
  }
  cluster.resize(3, 1);
  return cluster;
}

static void check_launch(const std::vector<Expr>& grid, const std::vector<int64_t>& threads, const SourceSpan& span_) {
  if (grid.empty() || grid.size() > 3)
    throw_user_error(span_, str_cat("T.Kernel takes 1 to 3 grid dimensions, got ", grid.size()));
  if (threads.empty() || threads.size() > 3)
    throw_user_error(span_, str_cat("T.Kernel threads takes 1 to 3 dimensions, got ", threads.size()));
  int64_t total = 1;
  for (int64_t t : threads) {
    if (t < 1) throw_user_error(span_, str_cat("T.Kernel threads must be positive, got ", t));
    total *= t;
  }
  if (total > 1024)
    throw_user_error(span_, str_cat("T.Kernel asks for ", total, " threads per block; the limit is 1024"));
  for (size_t d = 0; d < grid.size(); ++d) {
    const Expr& g = grid[d];
    if (!g.dtype().is_integer())
      throw_user_error(span_, str_cat("T.Kernel grid dimensions must be integers, got ", g.dtype().name()));
    if (auto v = as_const_int(g); v && *v < 1)
      throw_user_error(span_, str_cat("T.Kernel grid dimension ", d, " (", "xyz"[d], ") is ", *v,
                                      "; a launch has at least one block along each dimension"));
  }
}

static const char* const kBlockNames[] = {"bx", "by", "bz"};
static const char* const kThreadNames[] = {"tx", "ty", "tz"};

KernelVars FunctionBuilder::begin_kernel(std::vector<Expr> grid, const std::vector<int64_t>& threads,
                                         std::string prelude, std::vector<int64_t> cluster) {
  if (kernel_depth_ > 0) throw_user_error(span_, "T.Kernel blocks cannot be nested");
  check_launch(grid, threads, span_);
  cluster = check_cluster(std::move(cluster), grid, span_);
  Frame f{FrameKind::Kernel,  span_, {}, {}, {}, {}, {}, ForKind::Serial, {}, {}, grid, threads, std::move(prelude),
          std::move(cluster), {}};
  for (size_t i = 0; i < grid.size(); ++i) f.kernel_vars.blocks.emplace_back(kBlockNames[i], grid[i].dtype(), span_);
  for (size_t i = 0; i < threads.size(); ++i) f.kernel_vars.threads.emplace_back(kThreadNames[i], dtype::Int32, span_);
  KernelVars vars = f.kernel_vars;
  push(std::move(f));
  ++kernel_depth_;
  return vars;
}

KernelVars FunctionBuilder::resize_kernel(std::vector<Expr> grid, std::vector<int64_t> threads) {
  auto kernel =
      std::find_if(frames_.rbegin(), frames_.rend(), [](const Frame& f) { return f.kind == FrameKind::Kernel; });
  if (kernel == frames_.rend()) throw_user_error(span_, "a kernel launch can only be resized inside its kernel");
  check_launch(grid, threads, span_);
  if (!kernel->cluster.empty()) kernel->cluster = check_cluster(kernel->cluster, grid, span_);
  KernelVars& v = kernel->kernel_vars;
  for (size_t i = v.blocks.size(); i < grid.size(); ++i) v.blocks.emplace_back(kBlockNames[i], grid[i].dtype(), span_);
  for (size_t i = v.threads.size(); i < threads.size(); ++i)
    v.threads.emplace_back(kThreadNames[i], dtype::Int32, span_);
  kernel->grid = std::move(grid);
  kernel->threads = std::move(threads);
  return v;
}

void FunctionBuilder::import_source(const std::string& source) {
  auto kernel =
      std::find_if(frames_.rbegin(), frames_.rend(), [](const Frame& f) { return f.kind == FrameKind::Kernel; });
  if (kernel == frames_.rend())
    throw_user_error(span_, "T.import_source must be inside a T.Kernel block (its code goes before that kernel)");
  if (kernel->prelude.find(source) != std::string::npos) return;
  if (!kernel->prelude.empty()) kernel->prelude += "\n";
  kernel->prelude += source;
}

void FunctionBuilder::end_kernel() {
  Stmt body = pop(FrameKind::Kernel, "T.Kernel");
  Frame f = std::move(top());
  frames_.pop_back();
  --kernel_depth_;
  auto n = std::make_shared<KernelLaunchNode>(f.kernel_vars.blocks, f.grid, f.kernel_vars.threads, f.threads, body,
                                              f.prelude, f.cluster);
  n->span = f.span;
  emit(Stmt(std::move(n)));
}

Var FunctionBuilder::begin_for(const std::string& name, const Expr& min, const Expr& extent, ForKind kind,
                               Attrs annotations) {
  if (!min.dtype().is_integer() || !extent.dtype().is_integer())
    throw_user_error(span_,
                     str_cat("loop bounds must be integers, got ", min.dtype().name(), " and ", extent.dtype().name()));
  DataType t = promote_types(min, extent);
  Frame f{FrameKind::For,
          span_,
          {},
          Var(name, t, span_),
          cast(t, min),
          cast(t, extent),
          {},
          kind,
          std::move(annotations),
          {},
          {},
          {},
          {},
          {},
          {}};
  Var v = f.loop_var;
  push(std::move(f));
  ++loop_depth_;
  return v;
}

void FunctionBuilder::end_for() {
  Stmt body = pop(FrameKind::For, "for");
  Frame f = std::move(top());
  frames_.pop_back();
  --loop_depth_;
  emit(for_loop(f.loop_var, f.min, f.extent, f.for_kind, body, f.annotations, f.span));
}

void FunctionBuilder::begin_if(Expr cond) {
  if (!cond.dtype().is_scalar())
    throw_user_error(span_, str_cat("an `if` condition must be a scalar, got a value of type ", cond.dtype().name()));
  push(Frame{FrameKind::Then, span_, {}, {}, {}, {}, std::move(cond), ForKind::Serial, {}, {}, {}, {}, {}, {}, {}});
}

void FunctionBuilder::begin_else() {
  Stmt then_case = pop(FrameKind::Then, "if");
  Frame& f = top();
  f.kind = FrameKind::Else;
  f.then_case = then_case;
  f.items.clear();
}

void FunctionBuilder::end_if() {
  bool has_else = top().kind == FrameKind::Else;
  Stmt body = pop(has_else ? FrameKind::Else : FrameKind::Then, "if");
  Frame f = std::move(top());
  frames_.pop_back();
  if (has_else)
    emit(if_then_else(f.cond, f.then_case, body, f.span));
  else
    emit(if_then_else(f.cond, body, Stmt(), f.span));
}

void FunctionBuilder::begin_while(Expr cond) {
  push(Frame{FrameKind::While, span_, {}, {}, {}, {}, std::move(cond), ForKind::Serial, {}, {}, {}, {}, {}, {}, {}});
  ++loop_depth_;
}

void FunctionBuilder::end_while() {
  Stmt body = pop(FrameKind::While, "while");
  Frame f = std::move(top());
  frames_.pop_back();
  --loop_depth_;
  emit(while_loop(f.cond, body, f.span));
}

Buffer FunctionBuilder::alloc(const std::string& name, std::vector<Expr> shape, DataType dtype, Scope scope,
                              bool in_kernel_frame) {
  require_kernel("buffer allocation");
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!shape[i].dtype().is_integer())
      throw_user_error(span_, str_cat("shape of '", name, "' must be integers; dimension ", i, " has dtype ",
                                      shape[i].dtype().name()));
    auto c = as_const_int(shape[i]);
    if (scope != Scope::Global && !c)
      throw_user_error(span_,
                       str_cat("on-chip buffer '", name, "' needs a constant shape; dimension ", i, " is symbolic"));
    if (c && *c <= 0)
      throw_user_error(span_, str_cat("shape of '", name, "' must be positive; dimension ", i, " is ", *c));
  }
  Buffer b = Buffer::make(name, dtype, std::move(shape), scope, {}, span_);
  // Shared tiles and fragments belong to the block, wherever the kernel allocates them
  // (TileLang's rule): one inside a loop or branch is allocated in the kernel's own
  // frame, so that the loop's body stays a plain list of statements (T.Pipelined
  // schedules those; an Allocate around part of the body would hide its copies).
  Frame* home = &top();
  if (in_kernel_frame || scope == Scope::Shared || scope == Scope::SharedDyn || scope == Scope::Fragment)
    for (auto f = frames_.rbegin(); f != frames_.rend(); ++f)
      if (f->kind == FrameKind::Kernel) {
        home = &*f;
        break;
      }
  home->items.push_back(Item{{}, b, {}, {}, span_});
  return b;
}

Var FunctionBuilder::let(const std::string& name, Expr value) {
  Var v(name, value.dtype(), span_);
  top().items.push_back(Item{{}, {}, v, std::move(value), span_});
  return v;
}

void FunctionBuilder::order_params(const std::vector<std::string>& names) {
  std::vector<Param> ordered, rest;
  for (const std::string& name : names)
    for (const Param& p : params_)
      if (p.name == name) ordered.push_back(p);
  for (const Param& p : params_)
    if (std::find(names.begin(), names.end(), p.name) == names.end()) rest.push_back(p);
  TL_ICHECK(ordered.size() + rest.size() == params_.size(), "order_params: duplicate parameter names");
  ordered.insert(ordered.end(), rest.begin(), rest.end());
  params_ = std::move(ordered);
}

Var FunctionBuilder::let_var(Var v, Expr value) {
  if (value.dtype() != v.dtype()) value = cast(v.dtype(), std::move(value), span_);
  top().items.push_back(Item{{}, {}, v, std::move(value), span_});
  return v;
}

void FunctionBuilder::store(const Buffer& b, std::vector<Expr> indices, Expr value) {
  emit(buffer_store(b, std::move(value), std::move(indices), span_));
}

void FunctionBuilder::emit(Stmt s) {
  top().items.push_back(Item{std::move(s), {}, {}, {}, span_});
}

void FunctionBuilder::evaluate(Expr e) {
  emit(tl::evaluate(std::move(e), span_));
}

void FunctionBuilder::emit_break() {
  if (loop_depth_ == 0) throw_user_error(span_, "`break` outside a loop");
  emit(break_stmt(span_));
}

void FunctionBuilder::emit_continue() {
  if (loop_depth_ == 0) throw_user_error(span_, "`continue` outside a loop");
  emit(continue_stmt(span_));
}

void FunctionBuilder::sync_threads() {
  require_kernel("T.sync_threads");
  emit(barrier(BarrierKind::Threads, span_));
}

void FunctionBuilder::sync_grid() {
  require_kernel("T.sync_grid");
  emit(tl::evaluate(call_extern(dtype::Void, kSyncGridCall, {}), span_));
}

void FunctionBuilder::fold_extents(std::vector<Expr>& extents) const {
  std::map<const VarNode*, Expr> lets;  // pure index-typed lets in scope, outermost first
  bool any = false;
  for (Expr& e : extents) any = any || !as_const_int(e);
  if (!any) return;
  for (const Frame& f : frames_)
    for (const Item& it : f.items)
      if (std::optional<Expr> v = it.let_var.defined() ? pure_index_value(it.let_value, lets) : std::nullopt)
        lets[it.let_var.node()] = *v;
  if (lets.empty()) return;
  for (Expr& e : extents) {
    if (as_const_int(e)) continue;
    Expr folded = simplify(substitute(e, lets));
    if (as_const_int(folded)) e = folded;
  }
}

void FunctionBuilder::fold_extents_of(std::vector<Range>& ranges) const {
  std::vector<Expr> extents;
  for (const Range& r : ranges) extents.push_back(r.extent);
  fold_extents(extents);
  for (size_t i = 0; i < ranges.size(); ++i) ranges[i].extent = extents[i];
}

void FunctionBuilder::copy(const CopyOperand& src, const CopyOperand& dst, Attrs attrs) {
  require_kernel("T.copy");
  CopyOperand s = src, d = dst;
  fold_extents(s.extents);
  fold_extents(d.extents);
  emit(make_copy(s, d, std::move(attrs), span_));
}

void FunctionBuilder::fill(const BufferRegion& dst, Expr value) {
  require_kernel("T.fill");
  BufferRegion d = dst;
  fold_extents(d);
  emit(make_fill(d, std::move(value), span_));
}

void FunctionBuilder::gemm(const BufferRegion& a, const BufferRegion& b, const BufferRegion& c, Attrs attrs) {
  require_kernel("T.gemm");
  BufferRegion ra = a, rb = b, rc = c;
  for (BufferRegion* r : {&ra, &rb, &rc}) fold_extents(*r);
  emit(make_gemm(ra, rb, rc, std::move(attrs), span_));
}

void FunctionBuilder::tile_op(const std::string& name, std::vector<BufferRegion> regions, std::vector<Expr> args,
                              Attrs attrs) {
  const OpInfo& info = op_info(name, span_);
  require_kernel(info.name);
  for (BufferRegion& r : regions) fold_extents(r);
  emit(info.make(TileOpArgs{std::move(regions), std::move(args), std::move(attrs), span_}));
}

PrimFunc FunctionBuilder::finish() {
  if (frames_.size() != 1) throw_user_error(span_, "kernel body ended with an unclosed block");
  Stmt body = fold(top().items);
  // A body without any T.Kernel block (TileLang's cpu programs of plain loops) runs as
  // one block of one thread.
  struct FindLaunch : IRVisitor {
    bool found = false, work = false;
    using IRVisitor::visit;
    void visit(const KernelLaunchNode*) override { found = true; }
    void visit(const SeqNode* op) override {
      for (const Stmt& s : op->seq) visit(s);
    }
    void visit(const Stmt& s) override {
      if (!s.defined()) return;
      if (!s.is<SeqNode>()) work = true;
      IRVisitor::visit(s);
    }
  } launch;
  launch.visit(body);
  if (!launch.found && launch.work) {
    auto n = std::make_shared<KernelLaunchNode>(std::vector<Var>{Var("bx", dtype::Int32, func_span_)},
                                                std::vector<Expr>{int_imm(1)},
                                                std::vector<Var>{Var("tx", dtype::Int32, func_span_)},
                                                std::vector<int64_t>{1}, body, std::string(), std::vector<int64_t>{});
    n->span = func_span_;
    body = Stmt(std::move(n));
  }
  check_workspace_shapes(params_, workspaces_);
  std::vector<Param> params = params_;
  params.insert(params.end(), workspaces_.begin(), workspaces_.end());
  return PrimFunc::make(name_, std::move(params), body, attrs_, func_span_);
}

void FunctionBuilder::kernel(std::vector<Expr> grid, const std::vector<int64_t>& threads,
                             const std::function<void(KernelVars)>& body) {
  KernelVars v = begin_kernel(std::move(grid), threads);
  body(v);
  end_kernel();
}

void FunctionBuilder::serial(const Expr& extent, const std::function<void(Var)>& body) {
  Var v = begin_for("i", make_const(extent.dtype(), 0), extent, ForKind::Serial);
  body(v);
  end_for();
}

void FunctionBuilder::parallel(std::vector<Expr> extents, const std::function<void(std::vector<Var>)>& body) {
  std::vector<Var> vars;
  const char* names[] = {"i", "j", "k", "l", "m", "n"};
  for (size_t d = 0; d < extents.size(); ++d)
    vars.push_back(begin_for(d < 6 ? names[d] : "p", make_const(extents[d].dtype(), 0), extents[d], ForKind::Parallel));
  body(vars);
  for (size_t d = 0; d < extents.size(); ++d) end_for();
}

void FunctionBuilder::pipelined(const Expr& extent, int num_stages, const std::function<void(Var)>& body) {
  Var v = begin_for("k", make_const(extent.dtype(), 0), extent, ForKind::Serial,
                    Attrs{{"num_stages", int64_t(num_stages)}});
  body(v);
  end_for();
}

}  // namespace tl
