#include "transform/select_gemm_sp.h"

#include <set>

#include "ir/attrs.h"
#include "ir/visitor.h"
#include "layout/layout.h"
#include "ops/extent_util.h"
#include "ops/tile_op.h"
#include "support/logging.h"

namespace tl {
namespace {

using BufKey = const BufferNode*;

// Why wgmma.mma_async.sp cannot take A_sparse from registers ("" when it can): the
// rule of lower_fragments' try_wgmma for a register A (16-bit, untransposed, every
// warpgroup along M).
std::string register_a_refusal(const TileOpNode* op, int64_t threads) {
  const BufferRegion &b = op->regions[1], &c = op->regions[2], &a = op->regions[3];
  if (attr_int(op->attrs, "transpose_A", 0)) return "A_sparse in registers is read untransposed only";
  if (!covers_whole(a) || a.buffer.ndim() != 2) return "A_sparse in registers is not a whole 2-d fragment";
  if (threads % kWarpGroupThreads != 0)
    return str_cat("the block's ", threads, " threads are not whole warpgroups of ", kWarpGroupThreads);
  auto m = as_const_int(c.ranges[0].extent), n = as_const_int(c.ranges[1].extent);
  auto k2 = as_const_int(a.ranges[1].extent);
  int64_t groups = threads / kWarpGroupThreads;
  if (!m || !n || !k2 || *m % (64 * groups) != 0 || *n % 16 != 0 || *k2 % 16 != 0)
    return str_cat("A_sparse in registers needs M a multiple of 64 per warpgroup (", groups,
                   " warpgroups, every one along M), N a multiple of 16 and K a multiple of 32");
  auto cols = as_const_int(b.buffer->shape.back());
  if (!cols || !Layout::wgmma_swizzle(*cols, b.buffer->dtype.bytes()))
    return str_cat("the rows of '", b.buffer->name, "' are not a multiple of 32 bytes");
  return "";
}

// Why mma.sp cannot run this gemm ("" when it can), for a block of `threads`; a
// register A_sparse (wgmma.mma_async.sp only) where `sparse_wgmma`.
std::string refusal(const TileOpNode* op, const Target& target, int64_t threads, bool sparse_wgmma) {
  const BufferRegion &b = op->regions[1], &c = op->regions[2], &a = op->regions[3], &e = op->regions[4];
  if (target.kind != TargetKind::CUDA || !target.has_mma_sync()) return "the target has no mma.sp (sm_80 and later)";
  DataType in = a.buffer->dtype, in_b = b.buffer->dtype;
  auto fp8 = [](DataType t) { return t == dtype::Float8E4M3FN || t == dtype::Float8E5M2; };
  bool half = (in == dtype::Float16 || in == dtype::BFloat16) && in_b == in;
  bool byte = (in == dtype::Int8 || in == dtype::UInt8) && in_b == in;
  bool f8 = fp8(in) && fp8(in_b);
  if (!half && !byte && !f8)
    return str_cat(
        "mma.sp is emitted for float16 or bfloat16 (m16n8k32), int8 or uint8 and fp8 (m16n8k64) A and B, "
        "not ",
        in.name(), " x ", in_b.name());
  // sm_89 runs the fp8 mma.sp on its tensor cores (QMMA.SP). sm_90 has none: ptxas
  // rewrites it as f16 HMMA.SP with conversions and spills thousands of bytes at a
  // 128 x 128 x 128 tile, while the decoded tile takes the fp8 wgmma.
  if (f8 && target.sm_version() != 89)
    return str_cat(
        "mma.sp of fp8 operands is emitted for sm_89 only (sm_80 has no fp8 tensor cores, sm_90 runs the "
        "fp8 mma.sp as f16 instructions), not sm_",
        target.sm_version());
  DataType acc = byte ? DataType(dtype::Int32) : DataType(dtype::Float32);
  if (!(c.buffer->dtype == acc)) return str_cat("the accumulator is ", c.buffer->dtype.name(), ", not ", acc.name());
  if (c.buffer->scope != Scope::Fragment || !covers_whole(c) || c.buffer.ndim() != 2)
    return "the accumulator is not a whole 2-d register fragment";
  if (a.buffer->scope == Scope::Fragment) {
    if (!half || !sparse_wgmma)
      return str_cat("'", a.buffer->name,
                     "' is a register fragment, which only wgmma.mma_async.sp takes (float16 / bfloat16, sm_90a)");
    if (std::string why = register_a_refusal(op, threads); !why.empty()) return why;
  }
  for (const BufferRegion* r : {&a, &b, &e}) {
    if (r == &a && a.buffer->scope == Scope::Fragment) continue;
    if (!is_shared(r->buffer) || !covers_whole(*r) || r->buffer.ndim() != 2)
      return str_cat("'", r->buffer->name, "' is not a whole 2-d shared-memory tile");
  }
  if (a.buffer->scope == Scope::Fragment) return "";  // the register rule above is wgmma's
  if (threads % 32 != 0) return "the block is not whole warps";
  bool ta = attr_int(op->attrs, "transpose_A", 0);
  auto m = as_const_int(c.ranges[0].extent), n = as_const_int(c.ranges[1].extent);
  auto k2 = as_const_int(ta ? a.ranges[0].extent : a.ranges[1].extent);
  if (!m || !n || !k2) return "a tile extent is not a constant";
  int64_t inst_k = half ? 32 : 64;  // the dense K of one instruction: 32 bytes of kept values a row
  if ((2 * *k2) % inst_k != 0) return str_cat("K = ", 2 * *k2, " is not a multiple of ", inst_k);
  int64_t warps = threads / 32, wm = gemm_warp_split(*m, *n, warps, attr_int(op->attrs, "policy", 0), 16);
  // wgmma.mma_async.sp splits C by warpgroups, not warps: a tile that its m64nNk32
  // takes (64 x 160 over 4 warps, whose Square split gives each warp 40 columns) is
  // kept for it; should lower_fragments find wgmma.sp does not fit after all, the
  // compressed gemm takes the shared-memory path, which decodes A.
  bool wgmma_shape = half && sparse_wgmma && threads % 128 == 0 && *m % 64 == 0 && *n % 16 == 0;
  if (!wm && !wgmma_shape)
    return str_cat("the ", *m, " x ", *n, " tile does not split into m16 x n16 warp tiles over ", warps, " warps");
  for (const BufferRegion* r : {&a, &b}) {
    auto cols = as_const_int(r->buffer->shape.back());
    if (!cols || !Layout::swizzle(*cols, r->buffer->dtype.bytes()))
      return str_cat("the rows of '", r->buffer->name, "' are not whole 16-byte chunks");
  }
  return "";
}

// Chooses each T.gemm_sp's form; collects the dense tiles that are no longer used.
class Select : public IRMutator {
 public:
  Select(const Target& t, bool sparse_wgmma) : target_(t), sparse_wgmma_(sparse_wgmma) {}
  std::set<BufKey> dropped;
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    int64_t saved = threads_;
    threads_ = op->thread_count();
    Stmt s = IRMutator::visit(op, self);
    threads_ = saved;
    return s;
  }
  Stmt visit(const TileOpNode* op, const Stmt& self) override {
    if (op->op != TileOpKind::Gemm || attr_int(op->attrs, kGemmSpAttr, 0) != kGemmSpDecoded) return self;
    std::string why = refusal(op, target_, threads_, sparse_wgmma_);
    std::string where = op->span.defined() ? op->span.str() + ": " : "";
    Attrs attrs = op->attrs;
    if (why.empty()) {
      bool half = op->regions[3].buffer->dtype.bytes() == 2;  // A_sparse
      if (op->regions[3].buffer->scope == Scope::Fragment)
        log(LogLevel::Debug, where +
                                 "T.gemm_sp runs on the sparse tensor cores (wgmma.mma_async.sp, A_sparse from "
                                 "registers)");
      else
        log(LogLevel::Debug,
            where + str_cat("T.gemm_sp runs on the sparse tensor cores (mma.sp ", half ? "m16n8k32" : "m16n8k64", ")"));
      attrs[kGemmSpAttr] = int64_t(kGemmSpCompressed);
      dropped.insert(op->regions[0].buffer.get());
      return tile_op(TileOpKind::Gemm, {op->regions[3], op->regions[1], op->regions[2], op->regions[4]}, {},
                     std::move(attrs), op->span);
    }
    log(LogLevel::Debug, where + "T.gemm_sp decodes A into a dense tile and runs T.gemm: " + why);
    attrs.erase(kGemmSpAttr);
    attrs.erase("transpose_E");
    return tile_op(TileOpKind::Gemm, {op->regions[0], op->regions[1], op->regions[2]}, {}, std::move(attrs), op->span);
  }

 private:
  const Target& target_;
  bool sparse_wgmma_;
  int64_t threads_ = 1;
};

// Whether `s` only writes buffers of `dead` (its stores' targets; it holds no tile
// op, call or other effect): the decoding of a tile mma.sp no longer reads.
bool writes_only(const Stmt& s, const std::set<BufKey>& dead) {
  struct Check : IRVisitor {
    const std::set<BufKey>& dead;
    bool ok = true, stores = false;
    explicit Check(const std::set<BufKey>& d) : dead(d) {}
    using IRVisitor::visit;
    void visit(const BufferStoreNode* op) override {
      stores = true;
      ok = ok && dead.count(op->buffer.get());
      IRVisitor::visit(op);
    }
    void visit(const TileOpNode*) override { ok = false; }
    void visit(const EvaluateNode*) override { ok = false; }
    void visit(const AllocateNode*) override { ok = false; }
  } check(dead);
  check.visit(s);
  return check.ok && check.stores;
}

class Drop : public IRMutator {
 public:
  explicit Drop(const std::set<BufKey>& dead) : dead_(dead) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const ForNode* op, const Stmt& self) override {
    return writes_only(self, dead_) ? seq({}) : IRMutator::visit(op, self);
  }
  Stmt visit(const AllocateNode* op, const Stmt& self) override {
    return dead_.count(op->buffer.get()) ? mutate(op->body) : IRMutator::visit(op, self);
  }

 private:
  const std::set<BufKey>& dead_;
};

}  // namespace

PrimFunc select_gemm_sp(const PrimFunc& f, const Target& target, bool sparse_wgmma) {
  Select select(target, sparse_wgmma && target.has_wgmma());
  Stmt body = select.mutate(f->body);
  if (!select.dropped.empty()) body = Drop(select.dropped).mutate(body);
  return f.with_body(body);
}

}  // namespace tl
