// Statement nodes, the PrimFunc, and tile-op statements.
#pragma once

#include "ir/expr.h"

namespace tl {

struct SeqNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Seq;
  explicit SeqNode(std::vector<Stmt> s) : StmtNode(kKind), seq(std::move(s)) {}
  const std::vector<Stmt> seq;
};

enum class ForKind : uint8_t { Serial, Parallel, Vectorized, Unrolled };
const char* for_kind_name(ForKind k);

// for var in [min, min + extent). T.Pipelined is a Serial loop annotated with
// num_stages (and order/stage/group).
struct ForNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::For;
  ForNode(Var v, Expr mn, Expr ext, ForKind k, Stmt b, Attrs ann = {})
      : StmtNode(kKind),
        var(std::move(v)),
        min(std::move(mn)),
        extent(std::move(ext)),
        for_kind(k),
        body(std::move(b)),
        annotations(std::move(ann)) {}
  const Var var;
  const Expr min, extent;
  const ForKind for_kind;
  const Stmt body;
  const Attrs annotations;
};

struct WhileNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::While;
  WhileNode(Expr c, Stmt b) : StmtNode(kKind), cond(std::move(c)), body(std::move(b)) {}
  const Expr cond;
  const Stmt body;
};

struct IfThenElseNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::IfThenElse;
  IfThenElseNode(Expr c, Stmt t, Stmt e)
      : StmtNode(kKind), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  const Expr cond;
  const Stmt then_case, else_case;  // else_case may be undefined
};

struct BufferStoreNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::BufferStore;
  BufferStoreNode(Buffer b, Expr v, std::vector<Expr> i)
      : StmtNode(kKind), buffer(std::move(b)), value(std::move(v)), indices(std::move(i)) {}
  const Buffer buffer;
  const Expr value;
  const std::vector<Expr> indices;
};

struct EvaluateNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Evaluate;
  explicit EvaluateNode(Expr v) : StmtNode(kKind), value(std::move(v)) {}
  const Expr value;
};

struct LetStmtNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::LetStmt;
  LetStmtNode(Var v, Expr val, Stmt b)
      : StmtNode(kKind), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  const Var var;
  const Expr value;
  const Stmt body;
};

// Declares `buffer` (shared, fragment, local ...) for the duration of `body`.
struct AllocateNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Allocate;
  AllocateNode(Buffer b, Stmt bd) : StmtNode(kKind), buffer(std::move(b)), body(std::move(bd)) {}
  const Buffer buffer;
  const Stmt body;
};

// The launch region: a grid of blocks (block_vars over grid) of `threads` threads.
struct KernelLaunchNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::KernelLaunch;
  KernelLaunchNode(std::vector<Var> bv, std::vector<Expr> g, std::vector<Var> tv, std::vector<int64_t> t, Stmt b,
                   std::string pre = {}, std::vector<int64_t> c = {})
      : StmtNode(kKind),
        block_vars(std::move(bv)),
        grid(std::move(g)),
        thread_vars(std::move(tv)),
        threads(std::move(t)),
        body(std::move(b)),
        prelude(std::move(pre)),
        cluster(std::move(c)) {}
  const std::vector<Var> block_vars;  // bx, by, bz (as many as grid dims)
  const std::vector<Expr> grid;
  const std::vector<Var> thread_vars;  // tx, ty, tz (as many as thread dims)
  const std::vector<int64_t> threads;
  const Stmt body;
  const std::string prelude;  // user source pasted before the kernel
  // Thread block cluster (sm_90+): blocks per cluster along x, y, z; empty when the
  // kernel launches no clusters (T.Kernel's cluster_dims).
  const std::vector<int64_t> cluster;
  int64_t thread_count() const {  // threads per block
    int64_t n = 1;
    for (int64_t t : threads) n *= t;
    return n;
  }
  int64_t cluster_size() const {
    int64_t n = 1;
    for (int64_t c : cluster) n *= c;
    return n;
  }
};

// The launch `op` around a new body, everything else kept.
Stmt with_body(const KernelLaunchNode* op, Stmt body);

enum class TileOpKind : uint8_t {
#define TL_TILE_OP(Ident, name, fn, written, regs) Ident,
#include "ops/tile_ops.def"
#undef TL_TILE_OP
};
const char* tile_op_name(TileOpKind k);

// A tile operator (copy, gemm, fill ...): operands are buffer regions plus scalar
// arguments and options. What each means is defined by its file in src/ops/.
struct TileOpNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::TileOp;
  TileOpNode(TileOpKind o, std::vector<BufferRegion> r, std::vector<Expr> a, Attrs at)
      : StmtNode(kKind), op(o), regions(std::move(r)), args(std::move(a)), attrs(std::move(at)) {}
  const TileOpKind op;
  const std::vector<BufferRegion> regions;
  const std::vector<Expr> args;
  const Attrs attrs;
};

enum class BarrierKind : uint8_t { Threads, Warp };
struct BarrierNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Barrier;
  explicit BarrierNode(BarrierKind k) : StmtNode(kKind), barrier(k) {}
  const BarrierKind barrier;
};

// A keyed annotation over a statement (layout map, swizzle, pass config ...).
struct AttrNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Attr;
  AttrNode(std::string k, AttrValue v, Stmt b)
      : StmtNode(kKind), key(std::move(k)), value(std::move(v)), body(std::move(b)) {}
  const std::string key;
  const AttrValue value;
  const Stmt body;
};

struct BreakNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Break;
  BreakNode() : StmtNode(kKind) {}
};
struct ContinueNode : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Continue;
  ContinueNode() : StmtNode(kKind) {}
};

// A kernel parameter: a tensor (buffer in global scope) or a scalar var.
// A workspace (T.alloc_global) is a tensor the caller never sees: the runtime
// allocates it on every call, with the shape its symbolic dims get from the other
// arguments, and passes it to each kernel. Workspaces come after every other
// parameter, so the caller's parameter indices (out_idx) do not move.
struct Param {
  std::string name;
  Buffer buffer;  // set for tensors
  Var var;        // set for scalars
  bool workspace = false;
  // A tensor declared as a pointer (`p: T.ptr` or `T.handle`, made a tensor by
  // T.make_tensor / T.match_buffer): the caller passes a tensor, checked like any
  // tensor parameter, or an integer address, which nothing can check
  // (docs/design/pointer_params.md).
  bool address = false;
  bool is_tensor() const { return buffer.defined(); }
};

struct PrimFuncNode {
  std::string name;
  std::vector<Param> params;
  Stmt body;
  Attrs attrs;
  SourceSpan span;
};

class PrimFunc {
 public:
  PrimFunc() = default;
  explicit PrimFunc(std::shared_ptr<const PrimFuncNode> p) : p_(std::move(p)) {}
  static PrimFunc make(std::string name, std::vector<Param> params, Stmt body, Attrs attrs = {}, SourceSpan span = {});
  PrimFunc with_body(Stmt body) const;
  bool defined() const { return p_ != nullptr; }
  const PrimFuncNode* operator->() const { return p_.get(); }

 private:
  std::shared_ptr<const PrimFuncNode> p_;
};

}  // namespace tl
