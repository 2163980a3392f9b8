// The op table decides; this pass only walks the tree and asks it.
#include "transform/lower_tile_ops.h"

#include "ir/visitor.h"
#include "ops/tile_op.h"

namespace tl {
namespace {

class TileOpLowerer : public IRMutator {
 public:
  explicit TileOpLowerer(const Target& t) : target_(t) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const TileOpNode* op, const Stmt& self) override {
    TL_ICHECK(target_.runs_blocks_serially(), "tile-op lowering for ", target_.str(), " is not written yet");
    return op_info(op->op).lower_serial(op);
  }

 private:
  const Target& target_;
};

}  // namespace

PrimFunc lower_tile_ops(const PrimFunc& f, const Target& target) {
  return f.with_body(TileOpLowerer(target).mutate(f->body));
}

}  // namespace tl
