// T.device_assert(cond, msg): checked at run time by the kernel. The CPU runtime
// raises a failure as a Python exception after the launch (see device/cpu/debug.h).
//   args: cond;  attrs: msg (the user's message with its source location)
#include "ops/tile_op.h"

namespace tl {

Stmt make_device_assert_op(TileOpArgs a) {
  if (a.args.size() != 1 || !a.regions.empty()) throw_user_error(a.span, "T.device_assert takes a condition and msg=");
  Expr cond = a.args[0];
  if (!cond.dtype().is_scalar())
    throw_user_error(a.span, str_cat("T.device_assert needs a scalar condition, got ", cond.dtype().name()));
  if (!cond.dtype().is_bool()) cond = ne(cond, make_const(cond.dtype(), 0));
  return tile_op(TileOpKind::DeviceAssert, {}, {cond}, std::move(a.attrs), a.span);
}

Stmt lower_device_assert_serial(const TileOpNode* op) {
  std::string msg;
  if (auto it = op->attrs.find("msg"); it != op->attrs.end())
    if (auto* s = std::get_if<std::string>(&it->second)) msg = *s;
  return evaluate(call(Intrinsic::DeviceAssert, {op->args[0], string_imm(msg)}, op->span), op->span);
}

}  // namespace tl
