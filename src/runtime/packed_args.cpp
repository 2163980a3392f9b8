// Reads the byte tensors of packed sub-byte parameters as their elements (see the header).
#include "runtime/packed_args.h"

#include <algorithm>
#include <optional>

namespace tl {
namespace {

// Whether a producer's dtype is a byte of packed elements of `want`.
bool is_packed_storage(DataType got, DataType want) {
  if (got == dtype::Int8 || got == dtype::UInt8) return true;
  return got.scalar_type() == want.scalar_type() && got.bits() * got.lanes() == 8;  // float4_e2m1fn_x2
}

std::string storage_names(DataType want) {
  return want.is_float() ? str_cat("torch.", want.torch_name(), ", uint8 or int8") : std::string("int8 or uint8");
}

// `t` read as elements of `p`'s dtype; `dims` receives its shape and strides.
TensorArg logical_tensor(const KernelSignature& sig, size_t index, const TensorArg& t, int64_t* dims,
                         std::optional<int64_t> given) {
  const Param& p = sig.params[index];
  const DataType want = p.buffer->dtype;
  std::string who = str_cat("argument '", p.name, "' (parameter ", index, " of kernel '", sig.name, "')");
  if (!is_packed_storage(t.dtype, want) || (t.itemsize && t.itemsize != 1))
    throw_user_error({}, str_cat(who, " has dtype ", t.dtype.name(), ", expected ", want.name(),
                                 ": a tensor of bytes holding two elements each along its last dimension (",
                                 storage_names(want), ")"));
  TensorArg out = t;
  out.dtype = want;
  out.itemsize = 0;
  if (t.ndim == 0) return out;
  const int last = t.ndim - 1;
  if (t.strides && t.shape[last] > 1 && t.strides[last] != 1)
    throw_user_error({}, str_cat(who, " has stride ", t.strides[last], " in its last dimension, which holds two ",
                                 want.name(), " elements a byte and must be contiguous (stride 1)"));
  int64_t* shape = dims;
  for (int d = 0; d < t.ndim; ++d) shape[d] = t.shape[d];
  const int per_byte = 8 / (want.bits() * want.lanes());
  shape[last] = t.shape[last] * per_byte;
  // A constant odd size of the last dimension rounds up to whole bytes.
  const Expr& declared = p.buffer->shape.empty() ? Expr() : p.buffer->shape.back();
  if (auto c = declared.defined() ? as_const_int(declared) : std::nullopt;
      c && *c > 0 && (*c + per_byte - 1) / per_byte == t.shape[last])
    shape[last] = *c;
  else if (given && *given > 0 && (*given + per_byte - 1) / per_byte == t.shape[last])
    shape[last] = *given;
  out.shape = shape;
  check_packed_rows(sig, index, shape, t.ndim, /*output=*/false);
  if (!t.strides) return out;
  int64_t* strides = dims + t.ndim;
  for (int d = 0; d < last; ++d) strides[d] = t.strides[d] * per_byte;
  strides[last] = 1;
  out.strides = strides;
  return out;
}

// The value another argument gives the T.dynamic size `v`: a scalar that is `v`, or a
// dimension `v` of a tensor other than the last of a packed one (whose bytes leave
// its element count open); nullopt when none does.
std::optional<int64_t> value_elsewhere(const KernelSignature& sig, const ArgValue* args, size_t n, const VarNode* v) {
  for (size_t j = 0; j < n && j < sig.params.size(); ++j) {
    const Param& p = sig.params[j];
    const ArgValue& a = args[j];
    if (!p.is_tensor()) {
      if (p.var.defined() && p.var.node() == v && a.kind == ArgValue::Kind::Int) return a.i;
      continue;
    }
    if (a.kind != ArgValue::Kind::Tensor) continue;
    const std::vector<Expr>& shape = p.buffer->shape;
    const int dims = std::min<int>(int(shape.size()), a.tensor.ndim) - (p.buffer->dtype.is_sub_byte() ? 1 : 0);
    for (int d = 0; d < dims; ++d)
      if (shape[size_t(d)].as<VarNode>() == v) return a.tensor.shape[d];
  }
  return std::nullopt;
}

}  // namespace

void check_packed_rows(const KernelSignature& sig, size_t index, const int64_t* shape, int ndim, bool output) {
  const Param& p = sig.params[index];
  const DataType t = p.buffer->dtype;
  if (ndim < 2 || !p.buffer->strides.empty()) return;  // one row, or row strides the kernel declares
  const int per_byte = 8 / (t.bits() * t.lanes());
  const int64_t last = shape[ndim - 1];
  if (last % per_byte == 0) return;
  int64_t rows = 1;
  for (int d = 0; d + 1 < ndim; ++d) rows *= shape[d];
  if (rows <= 1) return;
  const int64_t bytes = (last + per_byte - 1) / per_byte;
  std::string dims;
  for (int d = 0; d < ndim; ++d) dims += str_cat(d ? ", " : "", shape[d]);
  throw_user_error(
      {}, str_cat(output ? "output '" : "argument '", p.name, "' (parameter ", index, " of kernel '", sig.name, "') ",
                  output ? "would hold " : "holds ", t.name(), " rows of ", last, " elements, shape (", dims,
                  "): a tensor of bytes packs each row to whole bytes (", bytes, " bytes, room for ", bytes * per_byte,
                  " elements), but the kernel reads its ", "rows ", last, " elements apart; a packed ", t.name(),
                  " tensor of more than one row needs a last dimension that is a multiple of ", per_byte));
}

PackedArgs::PackedArgs(const KernelSignature& sig, const ArgValue* args, size_t n) : args_(args, args + n) {
  for (size_t i = 0; i < n && i < sig.params.size(); ++i) {
    const Param& p = sig.params[i];
    ArgValue& a = args_[i];
    if (!p.is_tensor() || !p.buffer->dtype.is_sub_byte() || a.kind != ArgValue::Kind::Tensor) continue;
    dims_.push_back(std::make_unique<int64_t[]>(2 * size_t(a.tensor.ndim) + 1));
    int64_t* dims = dims_.back().get();
    // A T.dynamic last dimension that another argument gives (an odd n takes
    // (n + 1) / 2 bytes, as outputs are allocated) is read as that many elements;
    // otherwise as all the bytes hold.
    const std::vector<Expr>& shape = p.buffer->shape;
    std::optional<int64_t> given;
    if (!shape.empty() && a.tensor.ndim == int(shape.size()))
      if (auto* v = shape.back().as<VarNode>()) given = value_elsewhere(sig, args, n, v);
    a.tensor = logical_tensor(sig, i, a.tensor, dims, given);
  }
}

std::vector<int64_t> packed_storage_shape(DataType t, std::vector<int64_t> shape) {
  if (!shape.empty()) {
    const int per_byte = 8 / (t.bits() * t.lanes());
    shape.back() = (shape.back() + per_byte - 1) / per_byte;
  }
  return shape;
}

}  // namespace tl
