// T.print: a message, a scalar expression, or a whole tile of a buffer, each line
// prefixed with the block and thread index. Lowered to calls of the device
// header's tl::debug_print_* helpers; a tile is printed by one executor, row by row.
//   args:  bx, by, bz (block index), nx, ny (thread extents), then the value if any
//   attrs: msg (the label, or the header line of a tile), name (the tile's buffer),
//          last (the text of the tile's last-dimension range, ":" when whole)
#include "ir/device_calls.h"
#include "ops/tile_op.h"

namespace tl {
namespace {

constexpr size_t kWhereArgs = 5;

std::string attr_string(const Attrs& attrs, const std::string& key) {
  auto it = attrs.find(key);
  if (it == attrs.end()) return {};
  auto* s = std::get_if<std::string>(&it->second);
  return s ? *s : std::string();
}

Stmt call_stmt(const std::string& fn, std::vector<Expr> args, SourceSpan span) {
  return evaluate(call_extern(dtype::Void, fn, std::move(args)), span);
}

}  // namespace

Stmt make_print_op(TileOpArgs a) {
  size_t values = a.args.size() >= kWhereArgs ? a.args.size() - kWhereArgs : 0;
  if (a.args.size() < kWhereArgs || values + a.regions.size() > 1)
    throw_user_error(a.span, "T.print takes one buffer, one expression or only msg=");
  if (values == 1 && !a.args.back().dtype().is_scalar())
    throw_user_error(a.span,
                     str_cat("T.print prints scalar expressions, got one of type ", a.args.back().dtype().name()));
  if (values == 1 && a.args.back().dtype().is_handle())
    throw_user_error(a.span, "T.print cannot print a pointer; print the buffer itself");
  return tile_op(TileOpKind::Print, std::move(a.regions), std::move(a.args), std::move(a.attrs), a.span);
}

Stmt lower_print_serial(const TileOpNode* op) {
  std::vector<Expr> where(op->args.begin(), op->args.begin() + kWhereArgs);
  auto with_where = [&](Expr first, std::vector<Expr> rest) {
    std::vector<Expr> v{std::move(first)};
    v.insert(v.end(), where.begin(), where.end());
    v.insert(v.end(), rest.begin(), rest.end());
    return v;
  };
  Expr msg = string_imm(attr_string(op->attrs, "msg"));
  if (op->regions.empty()) {
    if (op->args.size() == kWhereArgs) return call_stmt(kDebugPrintMsgCall, with_where(msg, {}), op->span);
    return call_stmt(kDebugPrintValueCall, with_where(msg, {op->args.back()}), op->span);
  }
  // A tile: begin (lock, header), per row its index and elements, end (unlock).
  const BufferRegion& r = op->regions[0];
  int nd = int(r.ranges.size());
  std::vector<Var> vars;
  std::vector<Expr> idx;
  for (int d = 0; d < nd; ++d) {
    // str_cat, not "p" + std::to_string(): GCC 12 gives a false -Wrestrict warning on that (GCC bug 105651)
    vars.emplace_back(str_cat("p", d), r.ranges[d].extent.dtype());
    idx.push_back(add(r.ranges[d].min, vars.back()));
  }
  std::vector<Expr> row_args{string_imm(attr_string(op->attrs, "name")), string_imm(attr_string(op->attrs, "last"))};
  row_args.insert(row_args.end(), idx.begin(), idx.end() - 1);
  Stmt elem = call_stmt(kDebugPrintBufferElemCall, {buffer_load(r.buffer, idx, op->span)}, op->span);
  const Range& last = r.ranges[nd - 1];
  Stmt body = seq({call_stmt(kDebugPrintBufferRowCall, row_args, op->span),
                   for_loop(vars[nd - 1], make_const(last.extent.dtype(), 0), last.extent, ForKind::Serial, elem)});
  for (int d = nd - 2; d >= 0; --d)
    body = for_loop(vars[d], make_const(r.ranges[d].extent.dtype(), 0), r.ranges[d].extent, ForKind::Serial, body);
  return seq({call_stmt(kDebugPrintBufferBeginCall, with_where(msg, {}), op->span), body,
              call_stmt(kDebugPrintBufferEndCall, {}, op->span)});
}

}  // namespace tl
