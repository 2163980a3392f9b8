// The table of tile operators, built from ops/tile_ops.def, and helpers the ops share.
#include "ops/tile_op.h"

namespace tl {

namespace {
constexpr OpInfo kTable[] = {
#define TL_TILE_OP(Ident, name, fn, written, regs) \
  {name, make_##fn##_op, lower_##fn##_serial, written, infer_##regs##_fragments, lower_##regs##_registers},
#include "ops/tile_ops.def"
#undef TL_TILE_OP
};
}  // namespace

const OpInfo& op_info(TileOpKind kind) {
  return kTable[static_cast<int>(kind)];
}

const OpInfo& op_info(const std::string& name, SourceSpan span) {
  std::string known;
  for (const OpInfo& info : kTable) {
    if (name == info.name) return info;
    known += std::string(known.empty() ? "" : ", ") + info.name;
  }
  throw_user_error(span, str_cat("unknown tile op '", name, "'; known ops: ", known));
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
