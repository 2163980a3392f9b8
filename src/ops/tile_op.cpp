// The table of tile operators, built from ops/tile_ops.def, and helpers the ops share.
#include "ops/tile_op.h"

namespace tl {

const OpInfo& op_info(TileOpKind kind) {
  static const OpInfo kTable[] = {
      {"copy", lower_copy_serial},
      {"fill", lower_fill_serial},
      {"gemm", lower_gemm_serial},
  };
  static_assert(sizeof(kTable) / sizeof(kTable[0]) == 0
#define TL_TILE_OP(Ident, name) +1
#include "ops/tile_ops.def"
#undef TL_TILE_OP
                ,
                "every op in tile_ops.def needs a row here");
  return kTable[static_cast<int>(kind)];
}

int64_t attr_int(const Attrs& attrs, const std::string& key, int64_t fallback) {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  return fallback;
}

Expr in_bounds(const Buffer& buffer, const std::vector<Expr>& indices) {
  Expr cond = bool_imm(true);
  for (size_t d = 0; d < indices.size(); ++d) {
    const Expr& i = indices[d];
    const Expr& n = buffer->shape[d];
    auto ci = as_const_int(i), cn = as_const_int(n);
    if (ci && cn && *ci >= 0 && *ci < *cn) continue;
    cond = logical_and(cond, logical_and(ge(i, make_const(i.dtype(), 0)), lt(i, n)));
  }
  return cond;
}

}  // namespace tl
