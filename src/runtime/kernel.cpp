// Argument checking and binding, shared by every backend's kernels: a fast path
// that only answers yes or no, and the slow path that explains a no.
//
// What the checks guarantee: a tensor argument's dtype, element size, rank, shape
// and strides (on every dimension the kernel can step along) are those the
// signature asks for, with its symbolic dims bound by the call, so every element
// the kernel may address lies inside the memory the producer described; a tensor
// the kernel may write is writable; an integer scalar or symbolic dim fits its
// dtype, so generated code never truncates it.
#include "runtime/kernel.h"

#include <filesystem>
#include <set>
#include <sstream>

#include "ir/printer.h"
#include "ir/visitor.h"
#include "runtime/assume_check.h"
#include "runtime/packed_args.h"
#include "runtime/tma_launch.h"

namespace tl {

IntBounds int_bounds(DataType t) {
  if (t.is_bool()) return {0, 1};
  if (!t.is_integer() || t.bits() >= 64) return t.is_uint() ? IntBounds{0, INT64_MAX} : IntBounds{};
  if (t.is_uint()) return {0, (int64_t(1) << t.bits()) - 1};
  return {-(int64_t(1) << (t.bits() - 1)), (int64_t(1) << (t.bits() - 1)) - 1};
}

namespace {

bool has_no_elements(const TensorArg& t) {
  for (int d = 0; d < t.ndim; ++d)
    if (t.shape[d] == 0) return true;
  return false;
}

std::string shape_str(const int64_t* shape, int ndim) {
  std::ostringstream os;
  os << "(";
  for (int i = 0; i < ndim; ++i) os << (i ? ", " : "") << shape[i];
  if (ndim == 1) os << ",";
  os << ")";
  return os.str();
}

std::string shape_str(const std::vector<Expr>& shape) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << to_string(shape[i]);
  if (shape.size() == 1) os << ",";
  os << ")";
  return os.str();
}

// An integer argument for a scalar of a dtype with `bounds` (`uint64`: the dtype is uint64).
bool int_arg_fits(const ArgValue& a, const IntBounds& bounds, bool uint64) {
  switch (a.int_range) {
    case ArgValue::IntRange::Int64:
      return bounds.contains(a.i);
    case ArgValue::IntRange::UInt64:
      return uint64;
    case ArgValue::IntRange::Wider:
      return false;
  }
  return false;
}

std::string int_arg_str(const ArgValue& a) {
  switch (a.int_range) {
    case ArgValue::IntRange::Int64:
      return std::to_string(a.i);
    case ArgValue::IntRange::UInt64:
      return std::to_string(uint64_t(a.i));
    case ArgValue::IntRange::Wider:
      return "an integer wider than 64 bits";
  }
  return "?";
}

std::string range_str(DataType t) {
  if (t.is_uint() && t.bits() >= 64) return "[0, 18446744073709551615]";
  IntBounds b = int_bounds(t);
  return str_cat("[", b.lo, ", ", b.hi, "]");
}

// Elements from the first to the last a tensor of this shape and these strides
// (null: compact) spans; 0 when it is empty.
int64_t span_elements(const int64_t* shape, const int64_t* strides, int ndim) {
  int64_t span = 1, compact = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (shape[d] == 0) return 0;
    int64_t stride = strides ? strides[d] : compact;
    span += (shape[d] - 1) * (stride < 0 ? -stride : stride);
    compact *= shape[d];
  }
  return span;
}

std::string to_hex(uintptr_t v) {
  std::ostringstream os;
  os << std::hex << v;
  return os.str();
}

const char* device_name(int32_t t) {
  switch (t) {
    case 1:
      return "cpu";
    case 2:
      return "cuda";
    case 3:
      return "cuda_host";
    case 8:
      return "metal";
    default:
      return "an unsupported device";
  }
}

}  // namespace

Kernel::Kernel(KernelSignature sig, Target target, std::string source, std::string host_source)
    : sig_(std::move(sig)),
      target_(std::move(target)),
      source_(std::move(source)),
      host_source_(std::move(host_source)) {
  if (host_source_.empty()) host_source_ = describe_host(sig_, target_);
  build_plan();
}

Kernel::~Kernel() {
  if (owned_dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(owned_dir_, ec);  // best effort: a mapped library survives unlinking
}

void Kernel::set_origin(std::string artifact_path, std::string cache_key, std::string owned_dir) {
  artifact_path_ = std::move(artifact_path);
  cache_key_ = std::move(cache_key);
  owned_dir_ = std::move(owned_dir);
}

std::string describe_host(const KernelSignature& sig, const Target& target) {
  std::ostringstream os;
  os << "# Host side of kernel '" << sig.name << "' (target " << target.str() << ").\n";
  os << "# The C++ runtime does this on every call, before any generated code runs.\n";
  os << "def " << sig.name << "(";
  size_t visible = sig.num_visible_params();
  for (size_t i = 0; i < visible; ++i) os << (i ? ", " : "") << sig.params[i].name;
  os << "):\n";
  const char* device = target.kind == TargetKind::CPU ? "cpu" : "the target's device";
  for (size_t i = 0; i < visible; ++i) {
    const Param& p = sig.params[i];
    if (!p.is_tensor()) {
      os << "    check " << p.name << ": scalar " << p.var.dtype().name();
      if (p.var.dtype().is_integer() || p.var.dtype().is_bool()) os << " in " << range_str(p.var.dtype());
      os << "\n";
      continue;
    }
    os << "    check " << p.name << ": tensor " << p.buffer->dtype.name() << shape_str(p.buffer->shape) << " on "
       << device << ", strides " << shape_str(p.buffer.effective_strides())
       << (sig.writes(i) ? ", writable" : ", may be read-only");
    if (!sig.accesses(i)) os << ", never accessed: None passes a null pointer";
    if (p.address) os << ", or an address (unchecked)";
    if (int align = target.tensor_base_alignment()) os << ", data " << align << "-byte aligned";
    if (p.buffer->dtype.is_sub_byte()) os << "  # passed as bytes, two elements a byte along the last dimension";
    os << "\n";
  }
  for (const Var& v : sig.dynamic_vars) {
    os << "    bind " << v.name() << " =";
    bool found = false;
    for (const Param& p : sig.params) {
      if (!p.is_tensor()) continue;
      for (size_t d = 0; d < p.buffer->shape.size() && !found; ++d)
        if (p.buffer->shape[d].same_as(v)) {
          os << " " << p.name << ".shape[" << d << "]";
          found = true;
        }
      if (found) break;
    }
    if (!found) os << " (a stride or a dimension expression of the arguments)";
    os << "  # checked equal wherever else it appears\n";
  }
  for (size_t i = visible; i < sig.params.size(); ++i) {
    const Param& p = sig.params[i];
    os << "    " << p.name << " = empty(" << shape_str(p.buffer->shape) << ", " << p.buffer->dtype.name()
       << ")  # T.alloc_global: a new workspace per call, in the framework of the arguments\n";
  }
  os << "    args = [";
  for (size_t i = 0; i < sig.params.size(); ++i)
    os << (i ? ", " : "") << sig.params[i].name << (sig.params[i].is_tensor() ? ".data" : "");
  for (const Var& v : sig.dynamic_vars) os << ", " << v.name();
  os << "]\n";
  // One launch per T.Kernel block, in program order, on one stream.
  bool several = sig.launches.size() > 1;
  for (size_t l = 0; l < sig.launches.size(); ++l) {
    const LaunchSpec& launch = sig.launches[l];
    if (!launch.tma_maps.empty()) {
      os << "    maps = [";
      for (size_t i = 0; i < launch.tma_maps.size(); ++i) {
        const TmaMapSpec& m = launch.tma_maps[i];
        bool known = m.param >= 0 && m.param < int(sig.params.size());
        os << (i ? ", " : "") << "tensor_map(" << (known ? sig.params[m.param].name : "?") << ", box=(";
        for (int d = 0; d < m.rank(); ++d) os << (d ? ", " : "") << m.box[d];
        os << "), swizzle=" << m.swizzle_bytes << ")";
      }
      os << "]  # TMA: pointer, shape and strides, innermost first; cached per tensor\n";
    }
    os << "    grid = " << shape_str(launch.grid) << "\n";
    os << "    threads = (";
    for (size_t i = 0; i < launch.threads.size(); ++i) os << (i ? ", " : "") << launch.threads[i];
    os << (launch.threads.size() == 1 ? ",)" : ")") << "\n";
    if (!launch.cluster.empty()) {
      std::vector<int64_t> c = launch.cluster;
      c.resize(3, 1);
      os << "    cluster = (" << c[0] << ", " << c[1] << ", " << c[2] << ")  # clusterDim = {" << c[0] << ", " << c[1]
         << ", " << c[2] << "}: the kernel's __cluster_dims__, each cluster's blocks run at once\n";
    }
    os << "    check_launch_limits(grid, threads)  # no negative extent, none past the target's limits\n";
    os << "    if all(g > 0 for g in grid):  # an empty grid launches nothing\n";
    os << "        " << (launch.cooperative ? "launch_cooperative(" : "launch(") << kernel_part_name(sig.name, l)
       << (launch.tma_maps.empty() ? ", args" : ", args + maps") << ", grid, threads)";
    os << (several ? str_cat("  # kernel ", l + 1, " of ", sig.launches.size(), ", same stream")
                   : std::string("  # one call of the block function per block"));
    os << (launch.cooperative ? "; T.sync_grid: every block resident at once, or the launch is refused\n" : "\n");
  }
  return os.str();
}

// An integer for a pointer parameter (T.ptr / T.handle): the address of memory the
// runtime cannot see, so only what an integer tells is checked: not null, 64 bits,
// and not a parameter a TMA copy reads (its tensor map needs the shape and strides).
void Kernel::check_address(size_t index, const ArgValue& a) const {
  const Param& p = sig_.params[index];
  std::string who = str_cat("argument '", p.name, "' (parameter ", index, " of kernel '", sig_.name, "')");
  if (a.int_range == ArgValue::IntRange::Wider || (a.int_range == ArgValue::IntRange::Int64 && a.i < 0))
    throw_user_error({}, str_cat(who, " is ", int_arg_str(a),
                                 ", which is no address (expected a tensor or a "
                                 "non-negative 64-bit address such as tensor.data_ptr())"));
  if (a.i == 0) throw_user_error({}, str_cat(who, " is the null address; pass a tensor or its data_ptr()"));
  for (const LaunchSpec& l : sig_.launches)
    for (const TmaMapSpec& m : l.tma_maps)
      if (m.param == int(index))
        throw_user_error({}, str_cat(who,
                                     " is an address, but the kernel reads it with TMA copies, whose tensor "
                                     "maps need its shape and strides; pass the tensor itself"));
}

void Kernel::check_tensor(size_t index, const Param& p, const TensorArg& t, Bindings& b) const {
  const Buffer& buf = p.buffer;
  std::string who = str_cat("argument '", p.name, "' (parameter ", index, " of kernel '", sig_.name, "')");
  // A tfloat32 tensor is float32 storage that the kernel's gemms read at tf32
  // precision, as TileLang takes it (no array library has a tfloat32 dtype).
  bool tf32_storage = buf->dtype == dtype::TFloat32 && t.dtype == dtype::Float32;
  if (t.dtype != buf->dtype && !tf32_storage)
    throw_user_error({}, str_cat(who, " has dtype ", t.dtype.name(), ", expected ", buf->dtype.name()));
  if (t.itemsize && t.itemsize != buf->dtype.bytes()) {
    int64_t span = span_elements(t.shape, t.strides, t.ndim);
    throw_user_error({}, str_cat(who, " is a buffer of ", t.itemsize, "-byte elements (", span * t.itemsize,
                                 " bytes) relabelled as ", t.dtype.name(), ", whose elements take ", buf->dtype.bytes(),
                                 " bytes: the kernel would touch ", span * buf->dtype.bytes(),
                                 " bytes; relabel only to a dtype of the same element size (e.g. uint16 as bfloat16)"));
  }
  if (t.ndim != buf.ndim())
    throw_user_error({}, str_cat(who, " has ", t.ndim, " dimension(s) with shape ", shape_str(t.shape, t.ndim),
                                 ", expected ", buf.ndim(), " with shape ", shape_str(buf->shape)));
  if (t.readonly && sig_.writes(index))
    throw_user_error({}, str_cat(who,
                                 " is read-only, but the kernel writes it; pass a writable array "
                                 "(e.g. a copy: np.array(x))"));
  bool want_cpu = target_.kind == TargetKind::CPU || target_.emulated;
  bool on_cpu = t.device_type == int32_t(DeviceType::CPU) || t.device_type == int32_t(DeviceType::CUDAHost);
  if (want_cpu && !on_cpu)
    throw_user_error({}, str_cat(who, " is on ", device_name(t.device_type), ", expected a cpu tensor for the ",
                                 target_.str(), " target"));
  if (target_.kind == TargetKind::CUDA && !target_.emulated && t.device_type != int32_t(DeviceType::CUDA))
    throw_user_error({}, str_cat(who, " is on ", device_name(t.device_type), ", expected a cuda tensor for the ",
                                 target_.str(), " target (move it with .cuda())"));
  if (int align = target_.tensor_base_alignment(); align && reinterpret_cast<uintptr_t>(t.data) % align)
    throw_user_error({}, str_cat(who, " starts at address 0x", to_hex(reinterpret_cast<uintptr_t>(t.data)),
                                 ", not a multiple of ", align, " bytes: the ", target_.str(),
                                 " kernel may move it in vectors of that size; pass a tensor whose data starts "
                                 "aligned (e.g. a copy: .clone() / np.array(x))"));
  for (int d = 0; d < t.ndim; ++d) {
    const Expr& e = buf->shape[d];
    if (auto* v = e.as<VarNode>()) {
      if (!int_bounds(v->dtype).contains(t.shape[d])) {
        // Kernels index in the size's type where that is proven exact (widen_indices).
        std::string hint = t.shape[d] > 0 && v->dtype.bits() < 64
                               ? str_cat("; declare it T.dynamic(\"", v->name, "\", \"int64\")")
                               : std::string();
        throw_user_error({}, str_cat(who, " has shape ", shape_str(t.shape, t.ndim), ": dimension ", d, " is ",
                                     t.shape[d], ", outside the range ", range_str(v->dtype), " of '", v->name, "' (",
                                     v->dtype.name(), ")", hint));
      }
      auto [it, fresh] = b.emplace(v, t.shape[d]);
      if (!fresh && it->second != t.shape[d])
        throw_user_error(
            {}, str_cat(who, " has shape ", shape_str(t.shape, t.ndim), ": dimension ", d, " is ", t.shape[d], " but '",
                        v->name, "' was bound to ", it->second, " by an earlier argument"));
      continue;
    }
    if (auto c = as_const_int(e); c && *c != t.shape[d])
      throw_user_error({}, str_cat(who, " has shape ", shape_str(t.shape, t.ndim), ", expected ", shape_str(buf->shape),
                                   " (dimension ", d, " is ", t.shape[d], ", expected ", *c, ")"));
  }
  // Strides: compact row-major unless the parameter declares its own. A tensor without
  // elements has no element to address: any strides are fine (torch gives an empty
  // tensor strides of its own).
  if (!t.strides || has_no_elements(t)) return;
  std::vector<Expr> want = buf.effective_strides();
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] == 1) continue;  // any stride is fine for a unit dimension
    auto* v = want[d].as<VarNode>();
    if (v && !int_bounds(v->dtype).contains(t.strides[d]))
      throw_user_error({}, str_cat(who, " has stride ", t.strides[d], " in dimension ", d, ", outside the range ",
                                   range_str(v->dtype), " of '", v->name, "' (", v->dtype.name(), ")"));
    if (v) {
      auto [it, fresh] = b.emplace(v, t.strides[d]);
      if (fresh || it->second == t.strides[d]) continue;
    }
    std::optional<int64_t> expect = eval_int(want[d], b);
    if (expect && *expect == t.strides[d]) continue;
    std::string exp_str = expect ? std::to_string(*expect) : to_string(want[d]);
    throw_user_error({}, str_cat(who, " has stride ", t.strides[d], " in dimension ", d, ", expected ", exp_str,
                                 "; pass a contiguous tensor (e.g. .contiguous() / np.ascontiguousarray)"));
  }
}

// ---- the fast path

// The symbolic dims bound during one call: kernels have a handful, so a small
// array searched linearly beats any map and lives on the stack.
class Kernel::FastBindings {
 public:
  const int64_t* find(const VarNode* v) const {
    for (int i = 0; i < n_; ++i)
      if (vars_[i] == v) return &values_[i];
    return nullptr;
  }
  // Binds `v` unless it is bound; false when it is bound to another value (or
  // the array is full: the slow path then binds the call).
  bool bind(const VarNode* v, int64_t value) {
    if (const int64_t* old = find(v)) return *old == value;
    return append(v, value);
  }
  auto lookup() const {
    return [this](const VarNode* v) { return find(v); };
  }

 private:
  bool append(const VarNode* v, int64_t value) {
    if (n_ == kCapacity) return false;
    vars_[n_] = v;
    values_[n_++] = value;
    return true;
  }
  static constexpr int kCapacity = 16;
  const VarNode* vars_[kCapacity];
  int64_t values_[kCapacity];
  int n_ = 0;
};

void Kernel::build_plan() {
  want_cpu_ = target_.kind == TargetKind::CPU || target_.emulated;
  want_cuda_ = target_.kind == TargetKind::CUDA && !target_.emulated;
  if (int align = target_.tensor_base_alignment()) base_align_mask_ = uintptr_t(align) - 1;
  for (const Param& p : sig_.params) {
    ParamPlan pp;
    pp.is_tensor = p.is_tensor();
    if (pp.is_tensor) {
      pp.dtype = p.buffer->dtype;
      has_sub_byte_ |= pp.dtype.is_sub_byte();
      pp.itemsize = pp.dtype.bytes();
      pp.written = sig_.writes(plan_.size());
      pp.ndim = p.buffer.ndim();
      pp.strides = p.buffer.effective_strides();
      auto bounds = [](const Expr& e) { return e.is<VarNode>() ? int_bounds(e.dtype()) : IntBounds{}; };
      for (const Expr& e : p.buffer->shape) pp.shape_bounds.push_back(bounds(e));
      for (const Expr& e : pp.strides) pp.stride_bounds.push_back(bounds(e));
      for (const Expr& e : p.buffer->shape) pp.has_expr_dims |= !e.is<VarNode>() && !e.is<IntImmNode>();
    } else {
      pp.var = p.var.node();
      pp.dtype = p.var.dtype();
      pp.bounds = int_bounds(pp.dtype);
      pp.integer_scalar = pp.dtype.is_integer() || pp.dtype.is_bool();
      pp.float_scalar = pp.dtype.is_float();
    }
    plan_.push_back(std::move(pp));
  }
  TL_ICHECK(!sig_.launches.empty(), "kernel '", sig_.name, "' has no launch");
  for (const LaunchSpec& l : sig_.launches) {
    LaunchPlan lp;
    for (const TmaMapSpec& m : l.tma_maps)  // a TMA map reads its tensor: never a null pointer
      TL_ICHECK(sig_.accesses(size_t(m.param)), "kernel '", sig_.name, "' has a TMA map of parameter ", m.param,
                ", which its signature records as never accessed");
    if (!l.tma_maps.empty()) lp.tma = std::make_unique<TmaLaunchMaps>(sig_, l.tma_maps, target_.emulated);
    lp.grid_is_const = l.grid.size() <= 3;
    for (size_t d = 0; d < l.grid.size() && lp.grid_is_const; ++d) {
      auto c = as_const_int(l.grid[d]);
      lp.grid_is_const = c.has_value();
      if (c) lp.const_grid[d] = *c;
    }
    launch_plans_.push_back(std::move(lp));
  }
}

// Mirrors check_tensor() without building any message.
bool Kernel::fast_check_tensor(size_t index, const TensorArg& t, FastBindings& b) const {
  const ParamPlan& pp = plan_[index];
  if (t.dtype != pp.dtype || t.ndim != pp.ndim) return false;
  if ((t.itemsize && t.itemsize != pp.itemsize) || (t.readonly && pp.written)) return false;
  if (reinterpret_cast<uintptr_t>(t.data) & base_align_mask_) return false;
  bool on_cpu = t.device_type == int32_t(DeviceType::CPU) || t.device_type == int32_t(DeviceType::CUDAHost);
  if (want_cpu_ && !on_cpu) return false;
  if (want_cuda_ && t.device_type != int32_t(DeviceType::CUDA)) return false;
  const std::vector<Expr>& shape = sig_.params[index].buffer->shape;
  for (int d = 0; d < t.ndim; ++d) {
    if (auto* v = shape[d].as<VarNode>()) {
      if (!pp.shape_bounds[d].contains(t.shape[d]) || !b.bind(v, t.shape[d])) return false;
      continue;
    }
    if (auto c = as_const_int(shape[d]); c && *c != t.shape[d]) return false;
  }
  if (!t.strides || has_no_elements(t)) return true;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] == 1) continue;
    const Expr& want = pp.strides[d];
    if (auto* v = want.as<VarNode>()) {
      if (!pp.stride_bounds[d].contains(t.strides[d]) || !b.bind(v, t.strides[d])) return false;
      continue;
    }
    std::optional<int64_t> expect = eval_int_with(want, b.lookup());
    if (!expect || *expect != t.strides[d]) return false;
  }
  return true;
}

// Mirrors bind(): same order of checks and bindings, so that it accepts exactly
// the calls bind() accepts.
bool Kernel::fast_bind(const ArgValue* args, bool allow_missing, FastBindings& b) const {
  bool expr_dims = false;
  for (size_t i = 0; i < plan_.size(); ++i) {
    const ParamPlan& pp = plan_[i];
    const ArgValue& a = args[i];
    if (a.kind == ArgValue::Kind::None) {
      if (allow_missing) continue;
      return false;
    }
    if (a.kind == ArgValue::Kind::Null) {
      if (pp.is_tensor && !sig_.accesses(i)) continue;
      return false;
    }
    if (pp.is_tensor) {
      if (a.kind != ArgValue::Kind::Tensor || !fast_check_tensor(i, a.tensor, b)) return false;
      expr_dims |= pp.has_expr_dims;
      continue;
    }
    if (a.kind == ArgValue::Kind::Tensor) return false;
    if (pp.integer_scalar) {
      if (a.kind != ArgValue::Kind::Int || !int_arg_fits(a, pp.bounds, pp.dtype == dtype::UInt64) ||
          !b.bind(pp.var, a.i))
        return false;
    } else if (a.kind == ArgValue::Kind::Int && a.int_range == ArgValue::IntRange::Wider) {
      return false;
    }
  }
  if (!expr_dims) return true;
  for (size_t i = 0; i < plan_.size(); ++i) {
    if (!plan_[i].has_expr_dims || args[i].kind != ArgValue::Kind::Tensor) continue;
    const TensorArg& t = args[i].tensor;
    const std::vector<Expr>& shape = sig_.params[i].buffer->shape;
    for (int d = 0; d < t.ndim; ++d) {
      if (shape[d].is<VarNode>() || shape[d].is<IntImmNode>()) continue;
      // A size that appears only inside such expressions (`X: (m * 2,)`) is solved for
      // by the slow path's bind_affine_dims: an unbound one is not this path's.
      auto v = eval_int_with(shape[d], b.lookup());
      if (!v || *v != t.shape[d]) return false;
    }
  }
  return true;
}

// ---- the slow path: full checks with messages

// A symbolic size that appears only inside dimension expressions (`T.Tensor((n * 4,),
// ...)`, `n * 3 + 1`) is bound from a dimension affine in it: with the other variables
// bound, e(n) = a * n + c, so n = (extent - c) / a when a divides it exactly. The check
// that follows in bind() then verifies every dimension against the value found. Runs
// before the checks of each argument (so that strides built from such a size resolve);
// sizes that are whole dimensions are taken first, the checks then confirm them.
void Kernel::bind_affine_dims(const ArgValue* args, size_t n, Bindings& b) const {
  bool affine = false;
  for (size_t i = 0; i < n; ++i) {
    const Param& p = sig_.params[i];
    if (!p.is_tensor() || args[i].kind != ArgValue::Kind::Tensor) continue;
    const TensorArg& t = args[i].tensor;
    for (int d = 0; d < t.ndim && d < int(p.buffer->shape.size()); ++d) {
      const Expr& e = p.buffer->shape[d];
      if (auto* v = e.as<VarNode>(); v && int_bounds(v->dtype).contains(t.shape[d]))
        b.emplace(v, t.shape[d]);
      else if (!e.is<IntImmNode>() && !e.is<VarNode>())
        affine = true;
    }
  }
  if (!affine) {
    b.clear();  // nothing to solve: the checks bind the plain sizes themselves
    return;
  }
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < n; ++i) {
      const Param& p = sig_.params[i];
      if (!p.is_tensor() || args[i].kind != ArgValue::Kind::Tensor) continue;
      const TensorArg& t = args[i].tensor;
      for (int d = 0; d < t.ndim && d < int(p.buffer->shape.size()); ++d) {
        const Expr& e = p.buffer->shape[d];
        if (e.is<VarNode>() || e.is<IntImmNode>()) continue;
        const VarNode* unknown = nullptr;
        bool several = false;
        for_each_expr(e, [&](const Expr& x) {
          auto* v = x.as<VarNode>();
          if (!v || b.count(v) || v == unknown) return;
          several = several || unknown != nullptr;
          unknown = v;
        });
        if (!unknown || several || !unknown->dtype.is_integer()) continue;
        auto at = [&](int64_t value) {
          return eval_int_with(e, [&](const VarNode* v) -> const int64_t* {
            if (v == unknown) return &value;
            auto it = b.find(v);
            return it == b.end() ? nullptr : &it->second;
          });
        };
        auto c = at(0), c1 = at(1);
        if (!c || !c1 || *c1 == *c) continue;
        int64_t a = *c1 - *c, rest = t.shape[d] - *c;
        if (rest % a != 0) continue;
        int64_t value = rest / a;
        if (auto check = at(value); !check || *check != t.shape[d]) continue;
        if (!int_bounds(unknown->dtype).contains(value)) continue;
        b.emplace(unknown, value);
        progress = true;
      }
    }
  }
}

Bindings Kernel::bind(const ArgValue* args, size_t n, bool allow_missing) const {
  if (n != sig_.params.size())
    throw_user_error({}, str_cat("kernel '", sig_.name, "' takes ", sig_.params.size(), " argument(s), got ", n));
  Bindings b;
  bind_affine_dims(args, n, b);
  for (size_t i = 0; i < n; ++i) {
    const Param& p = sig_.params[i];
    const ArgValue& a = args[i];
    if (a.kind == ArgValue::Kind::None) {
      if (allow_missing) continue;
      throw_user_error({}, str_cat("argument '", p.name, "' of kernel '", sig_.name, "' is missing"));
    }
    if (a.kind == ArgValue::Kind::Null) {
      if (p.is_tensor() && !sig_.accesses(i)) continue;
      throw_user_error(
          {}, str_cat("argument '", p.name, "' (parameter ", i, " of kernel '", sig_.name, "') is None; expected ",
                      p.is_tensor() ? str_cat("a tensor of dtype ", p.buffer->dtype.name())
                                    : str_cat("a scalar of dtype ", p.var.dtype().name()),
                      " (only a tensor the kernel never accesses may be a null pointer)"));
    }
    if (p.is_tensor()) {
      if (p.address && a.kind == ArgValue::Kind::Int) {
        check_address(i, a);
        continue;
      }
      if (a.kind != ArgValue::Kind::Tensor)
        throw_user_error({},
                         str_cat("argument '", p.name, "' of kernel '", sig_.name, "' must be a tensor of shape ",
                                 shape_str(p.buffer->shape), " and dtype ", p.buffer->dtype.name(), ", got a scalar"));
      check_tensor(i, p, a.tensor, b);
      continue;
    }
    if (a.kind == ArgValue::Kind::Tensor)
      throw_user_error({}, str_cat("argument '", p.name, "' of kernel '", sig_.name, "' must be a scalar of dtype ",
                                   p.var.dtype().name(), ", got a tensor"));
    DataType t = p.var.dtype();
    std::string who = str_cat("argument '", p.name, "' (parameter ", i, " of kernel '", sig_.name, "')");
    if (t.is_integer() || t.is_bool()) {
      if (a.kind != ArgValue::Kind::Int)
        throw_user_error({}, str_cat(who, " must be an integer (", t.name(), "), got a float"));
      if (!int_arg_fits(a, int_bounds(t), t == dtype::UInt64))
        throw_user_error({}, str_cat(who, " is ", int_arg_str(a), ", outside the range ", range_str(t),
                                     " of its dtype ", t.name(), "; it would be truncated"));
      auto [it, fresh] = b.emplace(p.var.node(), a.i);
      if (!fresh && it->second != a.i)
        throw_user_error({}, str_cat(who, " is ", a.i, ", but '", p.var.name(), "' was bound to ", it->second,
                                     " by the shape or strides of an earlier argument"));
    } else if (a.kind == ArgValue::Kind::Int && a.int_range == ArgValue::IntRange::Wider) {
      throw_user_error({}, str_cat(who, " is an integer wider than 64 bits; pass a float (", t.name(), ")"));
    }
  }
  // The tensors the kernel makes of addresses take their shapes from the other
  // arguments: an address carries none.
  for (size_t i = 0; i < n; ++i) {
    const Param& p = sig_.params[i];
    if (!p.is_tensor() || args[i].kind != ArgValue::Kind::Int) continue;
    for (const Expr& e : p.buffer->shape) {
      if (eval_int(e, b)) continue;
      throw_user_error({}, str_cat("argument '", p.name, "' of kernel '", sig_.name, "' is an address, but the shape ",
                                   shape_str(p.buffer->shape), " of the tensor the kernel makes of it has '",
                                   to_string(e), "', which no other argument gives; pass the tensor itself"));
    }
  }
  // Dims given as expressions of bound vars (e.g. 2*n) are checked now.
  for (size_t i = 0; i < n; ++i) {
    const Param& p = sig_.params[i];
    if (!p.is_tensor() || args[i].kind != ArgValue::Kind::Tensor) continue;
    const TensorArg& t = args[i].tensor;
    for (int d = 0; d < t.ndim; ++d) {
      const Expr& e = p.buffer->shape[d];
      if (e.is<VarNode>() || e.is<IntImmNode>()) continue;
      auto v = eval_int(e, b);
      if (!v) {
        std::vector<std::string> unbound;
        for_each_expr(e, [&](const Expr& x) {
          auto* var = x.as<VarNode>();
          if (var && !b.count(var) && std::find(unbound.begin(), unbound.end(), var->name) == unbound.end())
            unbound.push_back(var->name);
        });
        if (unbound.size() == 1)
          throw_user_error({}, str_cat("argument '", p.name, "' of kernel '", sig_.name, "' has shape ",
                                       shape_str(t.shape, t.ndim), ": dimension ", d, " is ", t.shape[d], ", which is ",
                                       python_syntax(e, 0), " for no integer ", unbound[0], " of its dtype"));
      }
      if (v && *v != t.shape[d])
        throw_user_error(
            {}, str_cat("argument '", p.name, "' of kernel '", sig_.name, "' has shape ", shape_str(t.shape, t.ndim),
                        ": dimension ", d, " is ", t.shape[d], ", expected ", to_string(e), " = ", *v));
    }
  }
  return b;
}

namespace {

template <class Lookup>
std::vector<std::optional<std::vector<int64_t>>> shapes_of_missing(const KernelSignature& sig, const ArgValue* args,
                                                                   size_t n, const Lookup& lookup) {
  std::vector<std::optional<std::vector<int64_t>>> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (args[i].kind != ArgValue::Kind::None) continue;
    const Param& p = sig.params[i];
    if (!p.is_tensor())
      throw_user_error({}, str_cat("argument '", p.name, "' of kernel '", sig.name,
                                   "' is a scalar and cannot be an output; pass a value"));
    std::vector<int64_t> shape;
    for (const Expr& e : p.buffer->shape) {
      auto v = eval_int_with(e, lookup);
      if (!v) {
        if (p.workspace)
          throw_user_error({}, str_cat("cannot size the workspace '", p.name, "' (T.alloc_global) of kernel '",
                                       sig.name, "', of shape ", shape_str(p.buffer->shape), ": '", to_string(e),
                                       "' is bound by no argument given; pass the output that binds it"));
        throw_user_error({}, str_cat("cannot infer the shape ", shape_str(p.buffer->shape), " of output '", p.name,
                                     "' of kernel '", sig.name, "': '", to_string(e),
                                     "' is not bound by any input; pass the output tensor explicitly"));
      }
      if (p.workspace && *v < 0)
        throw_user_error({}, str_cat("the workspace '", p.name, "' (T.alloc_global) of kernel '", sig.name,
                                     "' would have ", *v, " elements in dimension ", shape.size(), " (its shape is ",
                                     shape_str(p.buffer->shape), "); check the arguments that size it"));
      shape.push_back(*v);
    }
    // A packed sub-byte output is allocated as the bytes that hold it.
    if (p.buffer->dtype.is_sub_byte()) check_packed_rows(sig, i, shape.data(), int(shape.size()), /*output=*/true);
    out[i] = p.buffer->dtype.is_sub_byte() ? packed_storage_shape(p.buffer->dtype, std::move(shape)) : std::move(shape);
  }
  return out;
}

}  // namespace

std::vector<std::optional<std::vector<int64_t>>> Kernel::output_shapes(const ArgValue* args, size_t n) const {
  if (has_sub_byte_) {
    PackedArgs elements(sig_, args, n);
    return output_shapes_of_elements(elements.data(), n);
  }
  return output_shapes_of_elements(args, n);
}

std::vector<std::optional<std::vector<int64_t>>> Kernel::output_shapes_of_elements(const ArgValue* args,
                                                                                   size_t n) const {
  FastBindings fb;
  if (n == plan_.size() && fast_bind(args, /*allow_missing=*/true, fb))
    return shapes_of_missing(sig_, args, n, fb.lookup());
  Bindings b = bind(args, n, /*allow_missing=*/true);
  return shapes_of_missing(sig_, args, n, [&b](const VarNode* v) -> const int64_t* {
    auto it = b.find(v);
    return it == b.end() ? nullptr : &it->second;
  });
}

void Kernel::fill_slots(const ArgValue* args, KernelArg* slots) const {
  for (size_t i = 0; i < plan_.size(); ++i) {
    const ArgValue& a = args[i];
    if (a.kind == ArgValue::Kind::Tensor)
      slots[i].ptr = a.tensor.data;
    else if (a.kind == ArgValue::Kind::Null)  // a tensor the kernel never accesses (checked by bind)
      slots[i].ptr = nullptr;
    else if (plan_[i].is_tensor)  // an address for a pointer parameter (checked by bind)
      slots[i].ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(a.i));
    else if (a.kind == ArgValue::Kind::Float)
      slots[i].f = a.f;
    else if (plan_[i].float_scalar)
      slots[i].f = a.int_range == ArgValue::IntRange::UInt64 ? double(uint64_t(a.i)) : double(a.i);
    else
      slots[i].i = a.i;
  }
}

int Kernel::device_of(const ArgValue* args) const {
  for (size_t i = 0; i < plan_.size(); ++i)
    if (args[i].kind == ArgValue::Kind::Tensor) return args[i].tensor.device_id;
  return 0;
}

void Kernel::call_slow(const ArgValue* args, size_t n, void* stream) const {
  Bindings b = bind(args, n, /*allow_missing=*/false);
  std::vector<KernelArg> slots(sig_.num_slots());
  fill_slots(args, slots.data());
  for (size_t j = 0; j < sig_.dynamic_vars.size(); ++j) {
    auto it = b.find(sig_.dynamic_vars[j].node());
    if (it == b.end())
      throw_user_error({}, str_cat("kernel '", sig_.name, "': symbolic dimension '", sig_.dynamic_vars[j].name(),
                                   "' is not bound by any argument"));
    slots[n + j].i = it->second;
  }
  // Every grid is computed before the first launch: a call that cannot launch
  // them all launches none.
  std::vector<std::array<int64_t, 3>> grids(sig_.launches.size(), {1, 1, 1});
  for (size_t l = 0; l < sig_.launches.size(); ++l) {
    const std::vector<Expr>& grid = sig_.launches[l].grid;
    for (size_t d = 0; d < grid.size(); ++d) {
      auto v = eval_int(grid[d], b);
      if (!v)
        throw_user_error({}, str_cat("kernel '", sig_.name, "': grid dimension ", d, " = ", to_string(grid[d]),
                                     " of its T.Kernel block ", l + 1, " depends on values that are not arguments"));
      grids[l][d] = *v;
    }
  }
  check_assumes(sig_, [&b](const VarNode* v) -> const int64_t* {
    auto it = b.find(v);
    return it == b.end() ? nullptr : &it->second;
  });
  int device = device_of(args);
  for (size_t l = 0; l < grids.size(); ++l) launch_one(l, args, slots.data(), grids[l], device, stream);
}

void Kernel::launch_one(size_t index, const ArgValue* args, KernelArg* slots, const std::array<int64_t, 3>& grid,
                        int device_id, void* stream) const {
  const LaunchSpec& spec = sig_.launches[index];
  for (int64_t g : grid)
    if (g == 0) return;  // a dynamic extent of 0 (an empty input): this T.Kernel has no blocks to run
  if (auto why = launch_limit_violation(target_, grid, spec.threads))
    throw_user_error(spec.span, str_cat("kernel '", sig_.name, "' cannot be launched: ", *why));
  const std::vector<int64_t>& cluster = sig_.launches[index].cluster;
  for (size_t d = 0; d < cluster.size(); ++d)
    if (grid[d] % cluster[d] != 0)
      throw_user_error(
          sig_.launches[index].span,
          str_cat("kernel '", sig_.name, "': its grid (", grid[0], ", ", grid[1], ", ", grid[2],
                  ") does not divide into clusters of cluster_dims=(", cluster[0], ", ", cluster[1], ", ", cluster[2],
                  "): ", grid[d], " blocks along ", "xyz"[d], " are not a multiple of ", cluster[d]));
  const size_t first = size_t(sig_.num_args());
  const TmaLaunchMaps* tma = launch_plans_[index].tma.get();
  if (!tma) return launch(index, slots, first, grid, device_id, stream);
  constexpr size_t kInlineMaps = 4;
  TensorMapSlot inline_maps[kInlineMaps];
  std::vector<TensorMapSlot> heap_maps;
  TensorMapSlot* maps = inline_maps;
  if (tma->size() > kInlineMaps) {
    heap_maps.resize(tma->size());
    maps = heap_maps.data();
  }
  tma->encode(args, maps);
  for (size_t m = 0; m < tma->size(); ++m) slots[first + m].ptr = &maps[m];
  launch(index, slots, first + tma->size(), grid, device_id, stream);
}

void Kernel::call(const ArgValue* args, size_t n, void* stream) const {
  if (has_sub_byte_) {
    PackedArgs elements(sig_, args, n);
    return call_with_elements(elements.data(), n, stream);
  }
  call_with_elements(args, n, stream);
}

void Kernel::call_with_elements(const ArgValue* args, size_t n, void* stream) const {
  FastBindings b;
  if (n != plan_.size() || !fast_bind(args, /*allow_missing=*/false, b)) return call_slow(args, n, stream);
  constexpr size_t kInlineSlots = 32;
  KernelArg inline_slots[kInlineSlots];
  std::vector<KernelArg> heap_slots;
  size_t num_slots = size_t(sig_.num_slots());
  KernelArg* slots = inline_slots;
  if (num_slots > kInlineSlots) {
    heap_slots.resize(num_slots);
    slots = heap_slots.data();
  }
  fill_slots(args, slots);
  for (size_t j = 0; j < sig_.dynamic_vars.size(); ++j) {
    const int64_t* v = b.find(sig_.dynamic_vars[j].node());
    if (!v) return call_slow(args, n, stream);
    slots[n + j].i = *v;
  }
  constexpr size_t kInlineLaunches = 4;
  std::array<int64_t, 3> inline_grids[kInlineLaunches];
  std::vector<std::array<int64_t, 3>> heap_grids;
  std::array<int64_t, 3>* grids = inline_grids;
  if (launch_plans_.size() > kInlineLaunches) {
    heap_grids.resize(launch_plans_.size());
    grids = heap_grids.data();
  }
  for (size_t l = 0; l < launch_plans_.size(); ++l) {
    grids[l] = launch_plans_[l].const_grid;
    if (launch_plans_[l].grid_is_const) continue;
    const std::vector<Expr>& grid = sig_.launches[l].grid;
    for (size_t d = 0; d < grid.size(); ++d) {
      auto v = eval_int_with(grid[d], b.lookup());
      if (!v) return call_slow(args, n, stream);
      grids[l][d] = *v;
    }
  }
  if (!sig_.assumes.empty() && !check_assumes(sig_, b.lookup())) return call_slow(args, n, stream);
  int device = device_of(args);
  for (size_t l = 0; l < launch_plans_.size(); ++l) launch_one(l, args, slots, grids[l], device, stream);
}

}  // namespace tl
