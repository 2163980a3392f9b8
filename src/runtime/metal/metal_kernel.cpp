// See metal_kernel.h.
#include "runtime/metal/metal_kernel.h"

#include "runtime/assume_check.h"
#include "support/error.h"

#include "../../../device/cpu/float_bits.h"  // float -> float16 / bfloat16 bits
#define TL_MINIFLOAT_FN inline
#include "../../../device/common/minifloat.h"  // round-to-odd narrowing of float64

namespace tl {

MetalArgField metal_arg_field(DataType t) {
  if (t.is_bool()) return {"int", 4};
  if (t == dtype::Float32) return {"float", 4};
  if (t == dtype::Float16) return {"half", 2};
  if (t == dtype::BFloat16) return {"bfloat", 2};
  if (t.is_int()) return t.bits() == 64 ? MetalArgField{"long", 8} : MetalArgField{"int", 4};
  if (t.is_uint()) return t.bits() == 64 ? MetalArgField{"ulong", 8} : MetalArgField{"uint", 4};
  throw_user_error({}, str_cat("a scalar argument of dtype ", t.name(),
                               " cannot be passed to a Metal kernel (Metal has no double); use float32"));
}

namespace {

// The bits of field `v` in its MSL type, `bytes` wide. A float goes to float32 with
// round-to-odd and then to its type to nearest even: one rounding of the value.
uint64_t field_bits(const MetalArgValue& v, DataType t, int bytes) {
  if (t.is_float()) {
    double d = v.is_float ? v.f : double(v.i);
    if (t == dtype::Float32) return bit_cast<uint32_t>(float(d));
    if (t == dtype::Float16) return double_to_half_bits(d);
    return float_to_bf16_bits(bit_cast<float>(float_bits_odd_of_double_bits(bit_cast<uint64_t>(d))));
  }
  int64_t i = v.is_float ? int64_t(v.f) : v.i;
  return bytes == 8 ? uint64_t(i) : uint64_t(uint32_t(i));
}

}  // namespace

std::string pack_metal_args(const std::vector<MetalArgValue>& fields) {
  std::string out;
  size_t widest = 1;
  for (const MetalArgValue& v : fields) {
    MetalArgField field = metal_arg_field(v.dtype);
    size_t size = size_t(field.bytes);
    widest = std::max(widest, size);
    out.resize((out.size() + size - 1) / size * size, '\0');
    uint64_t bits = field_bits(v, v.dtype, field.bytes);
    for (size_t b = 0; b < size; ++b) out.push_back(char((bits >> (8 * b)) & 0xff));  // little-endian
  }
  out.resize((out.size() + widest - 1) / widest * widest, '\0');
  return out;
}

MetalKernel::MetalKernel(KernelSignature sig, Target target, std::string source, std::string kernel_name)
    : Kernel(std::move(sig), std::move(target), std::move(source), ""), kernel_name_(std::move(kernel_name)) {}

void MetalKernel::launch(size_t, const KernelArg*, size_t, const std::array<int64_t, 3>&, int, void*) const {
  throw_user_error({}, str_cat("the metal kernel '", signature().name,
                               "' runs through the \"torch\" execution backend (torch.mps on macOS), not the core "
                               "runtime; compile it with execution_backend=\"torch\" (the default for metal), or "
                               "with target=\"metal -emulate\" to run it on the CPU"));
}

MetalLaunchPlan MetalKernel::plan_launch(const std::vector<MetalArg>& args) const {
  const KernelSignature& sig = signature();
  const std::string& kernel = sig.name;
  if (args.size() != sig.params.size())
    throw_user_error(
        {}, str_cat("kernel '", kernel, "' has ", sig.params.size(),
                    " parameters (its workspaces included); the launch plan was given ", args.size(), " arguments"));
  auto where = [&](size_t i) { return str_cat("argument '", sig.params[i].name, "' of kernel '", kernel, "'"); };
  auto given = [](const MetalArg& a) {
    switch (a.kind) {
      case MetalArg::Kind::None:
        return std::string("None");
      case MetalArg::Kind::Shape: {
        std::string dims;
        for (int64_t d : a.shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
        return str_cat("a tensor of shape (", dims, ")");
      }
      case MetalArg::Kind::Int:
        return str_cat("the integer ", a.i);
      case MetalArg::Kind::Float:
        return str_cat("the float ", a.f);
    }
    return std::string();
  };
  // Bind the scalars' vars and the dims that are vars, as Kernel::call does.
  Bindings b;
  for (size_t i = 0; i < args.size(); ++i) {
    const Param& p = sig.params[i];
    const MetalArg& a = args[i];
    if (!p.is_tensor()) {
      DataType t = p.var.dtype();
      if (a.kind == MetalArg::Kind::None || a.kind == MetalArg::Kind::Shape)
        throw_user_error({}, str_cat(where(i), " must be a scalar of dtype ", t.name(), ", got ", given(a)));
      if (a.kind == MetalArg::Kind::Float && !t.is_float())
        throw_user_error({}, str_cat(where(i), " must be an integer (dtype ", t.name(), "), got the float ", a.f));
      if (a.kind == MetalArg::Kind::Int && !t.is_float()) {
        if (!int_bounds(t).contains(a.i))
          throw_user_error({}, str_cat(where(i), ": ", a.i, " does not fit its dtype ", t.name()));
        b[p.var.node()] = a.i;
      }
      continue;
    }
    if (a.kind == MetalArg::Kind::Int || a.kind == MetalArg::Kind::Float)
      throw_user_error({},
                       str_cat(where(i), " must be a tensor of dtype ", p.buffer->dtype.name(), ", got ", given(a)));
    if (a.kind != MetalArg::Kind::Shape) continue;
    const std::vector<Expr>& dims = p.buffer->shape;
    if (a.shape.size() != dims.size())
      throw_user_error({}, str_cat(where(i), " must have ", dims.size(), " dims, got ", a.shape.size()));
    for (size_t d = 0; d < dims.size(); ++d) {
      auto* v = dims[d].as<VarNode>();
      if (!v || b.count(v)) continue;
      if (!int_bounds(v->dtype).contains(a.shape[d]))
        throw_user_error({}, str_cat(where(i), ": dim ", d, " is ", a.shape[d], ", beyond the range of its ",
                                     v->dtype.name(), " size '", v->name, "'"));
      b[v] = a.shape[d];
    }
  }
  MetalLaunchPlan plan;
  plan.shapes.resize(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const Param& p = sig.params[i];
    if (!p.is_tensor()) continue;
    const std::vector<Expr>& dims = p.buffer->shape;
    if (args[i].kind == MetalArg::Kind::Shape) {
      for (size_t d = 0; d < dims.size(); ++d) {
        auto want = eval_int(dims[d], b);
        if (want && *want != args[i].shape[d])
          throw_user_error({}, str_cat(where(i), ": dim ", d, " must be ", *want, ", got ", args[i].shape[d]));
      }
      plan.shapes[i] = args[i].shape;
      continue;
    }
    std::vector<int64_t> shape;
    for (const Expr& e : dims) {
      auto v = eval_int(e, b);
      if (!v) break;
      shape.push_back(*v);
    }
    if (shape.size() == dims.size()) {
      plan.shapes[i] = shape;
    } else if (sig.accesses(i)) {
      throw_user_error({}, str_cat("cannot infer the shape of ", p.workspace ? "workspace" : "output", " '", p.name,
                                   "' of kernel '", kernel, "' from its arguments"));
    }
  }
  check_assumes(sig, [&b](const VarNode* v) -> const int64_t* {
    auto it = b.find(v);
    return it == b.end() ? nullptr : &it->second;
  });
  TL_ICHECK(sig.launches.size() == 1, "a metal kernel is one T.Kernel block");
  const LaunchSpec& launch = sig.launches[0];
  for (size_t d = 0; d < launch.grid.size() && d < 3; ++d) {
    auto g = eval_int(launch.grid[d], b);
    if (!g) throw_user_error({}, str_cat("cannot compute the grid of kernel '", kernel, "' from its arguments"));
    plan.grid[d] = *g;
  }
  for (size_t d = 0; d < launch.threads.size() && d < 3; ++d) plan.threads[d] = launch.threads[d];
  std::vector<MetalArgValue> fields;
  for (size_t i = 0; i < args.size(); ++i) {
    const Param& p = sig.params[i];
    if (p.is_tensor()) continue;
    fields.push_back({p.var.dtype(), args[i].kind == MetalArg::Kind::Float, args[i].i, args[i].f});
  }
  for (const Var& v : sig.dynamic_vars) {
    auto it = b.find(v.node());
    if (it == b.end())
      throw_user_error({}, str_cat("cannot compute the size '", v.node()->name, "' of kernel '", kernel,
                                   "' from its arguments: pass a tensor whose shape holds it"));
    fields.push_back({v.dtype(), false, it->second, 0});
  }
  if (!fields.empty()) plan.args = pack_metal_args(fields);
  return plan;
}

}  // namespace tl
