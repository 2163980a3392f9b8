// A compiled kernel, ready to call: it checks arguments against the signature
// (naming the parameter, what was expected and what was given: dtype, element
// size, shape, strides, device, writability, integer ranges), binds symbolic
// dimensions, computes the grid of each T.Kernel block and hands the launches,
// in program order, to its backend.
//
// The checks of a call run against a plan read off the signature once (no map,
// no allocation, no lock); only a call that fails them takes the slow path,
// whose job is the error message (or a call the plan cannot hold).
#pragma once

#include <array>
#include <memory>

#include "runtime/signature.h"
#include "target/target.h"

namespace tl {

class TmaLaunchMaps;

// DLPack device types we meet (values as in dlpack.h).
enum class DeviceType : int32_t { CPU = 1, CUDA = 2, CUDAHost = 3, Metal = 8 };

// A borrowed view of a tensor argument, as DLPack describes one. `strides` may be
// null for a compact row-major tensor; strides count elements.
struct TensorArg {
  void* data = nullptr;
  DataType dtype;
  int ndim = 0;
  const int64_t* shape = nullptr;
  const int64_t* strides = nullptr;
  int32_t device_type = 1;
  int32_t device_id = 0;
  // Bytes of one element as the producer stores it (0: those of `dtype`). Differs
  // from dtype.bytes() only when a caller relabels a buffer's dtype, which the
  // runtime refuses: shape and strides count the producer's elements.
  int32_t itemsize = 0;
  bool readonly = false;  // the producer forbids writes (numpy writeable=False ...)
};

struct ArgValue {
  // None: not given (an output to allocate). Null: no tensor, passed as a null
  // pointer; accepted only for a tensor parameter the kernel never accesses
  // (KernelSignature::accesses), refused for any other.
  enum class Kind { None, Tensor, Int, Float, Null } kind = Kind::None;
  // Kind::Int: `i` holds the integer (Int64), its uint64 bits (UInt64: a value
  // above INT64_MAX), or nothing (Wider: a value no 64-bit integer holds).
  enum class IntRange : uint8_t { Int64, UInt64, Wider } int_range = IntRange::Int64;
  TensorArg tensor;
  int64_t i = 0;
  double f = 0;
};

// One slot of the argument array passed to generated code (same layout as tl::Arg
// in device/cpu/tl_cpu.h).
union KernelArg {
  void* ptr;
  int64_t i;
  double f;
};

// The values of an integer or bool dtype an int64 holds (for uint64, up to
// INT64_MAX; ArgValue::IntRange tells the larger ones apart). Other dtypes: all.
struct IntBounds {
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  bool contains(int64_t v) const { return v >= lo && v <= hi; }
};
IntBounds int_bounds(DataType t);

class Kernel {
 public:
  // An empty `host_source` is replaced by describe_host(sig, target).
  Kernel(KernelSignature sig, Target target, std::string source, std::string host_source);
  virtual ~Kernel();
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  const KernelSignature& signature() const { return sig_; }
  const Target& target() const { return target_; }
  const std::string& source() const { return source_; }
  const std::string& host_source() const { return host_source_; }

  // Where the kernel came from, set by compile() / load_kernel(): the loaded
  // binary (empty when the backend's artifact is not a file), the cache key
  // (SHA-256 hex; empty for loaded kernels), and a private build directory the
  // kernel deletes when it dies (used when the disk cache is off).
  void set_origin(std::string artifact_path, std::string cache_key, std::string owned_dir = {});
  const std::string& artifact_path() const { return artifact_path_; }
  const std::string& cache_key() const { return cache_key_; }

  // Shapes of the parameters whose argument is None (outputs to allocate), from
  // the dims the other arguments bind. Throws when a dim cannot be inferred.
  std::vector<std::optional<std::vector<int64_t>>> output_shapes(const ArgValue* args, size_t n) const;
  std::vector<std::optional<std::vector<int64_t>>> output_shapes(const std::vector<ArgValue>& args) const {
    return output_shapes(args.data(), args.size());
  }
  // `stream` is a CUstream for GPU targets (nullptr: the default stream).
  void call(const ArgValue* args, size_t n, void* stream = nullptr) const;
  void call(const std::vector<ArgValue>& args, void* stream = nullptr) const { call(args.data(), args.size(), stream); }

  // True when tensor arguments live in GPU memory (cuda, not emulated): the
  // launch then goes to a stream.
  bool runs_on_gpu() const { return want_cuda_; }

 protected:
  // Launches kernel `index` of the signature's launches (one per T.Kernel block);
  // a call launches each in turn, in program order, on `stream`.
  virtual void launch(size_t index, const KernelArg* slots, size_t num_slots, const std::array<int64_t, 3>& grid,
                      int device_id, void* stream) const = 0;

 private:
  class FastBindings;
  // call() and output_shapes() once every tensor describes its elements (the byte
  // tensors of packed sub-byte parameters are read as elements first: packed_args.h).
  void call_with_elements(const ArgValue* args, size_t n, void* stream) const;
  std::vector<std::optional<std::vector<int64_t>>> output_shapes_of_elements(const ArgValue* args, size_t n) const;
  // The checks of bind(), against the plan: false when any fails (or the plan
  // cannot hold the call), and the caller then takes the slow path for the message.
  bool fast_bind(const ArgValue* args, bool allow_missing, FastBindings& b) const;
  bool fast_check_tensor(size_t index, const TensorArg& t, FastBindings& b) const;
  void call_slow(const ArgValue* args, size_t n, void* stream) const;
  void fill_slots(const ArgValue* args, KernelArg* slots) const;
  // Launch `index` with its grid: with its TMA maps (if any) encoded into the
  // slots after the dynamic vars (each slot points at its map's 128 bytes).
  void launch_one(size_t index, const ArgValue* args, KernelArg* slots, const std::array<int64_t, 3>& grid,
                  int device_id, void* stream) const;
  int device_of(const ArgValue* args) const;
  Bindings bind(const ArgValue* args, size_t n, bool allow_missing) const;
  void bind_affine_dims(const ArgValue* args, size_t n, Bindings& b) const;
  void check_tensor(size_t index, const Param& p, const TensorArg& t, Bindings& b) const;
  void check_address(size_t index, const ArgValue& a) const;
  void build_plan();

  // What the fast path checks per parameter, read off the signature once.
  struct ParamPlan {
    bool is_tensor = false;
    bool integer_scalar = false;   // a scalar of integer or bool dtype: binds its var
    bool float_scalar = false;     // a scalar of float dtype: an int argument is converted
    const VarNode* var = nullptr;  // the scalar's var
    DataType dtype;
    int itemsize = 0;      // dtype.bytes()
    bool written = false;  // the kernel may write the tensor: read-only arrays are refused
    IntBounds bounds;      // a scalar's values (its dtype's)
    // Per dimension: the values its size and its stride may take (those of the
    // var they bind; all for other dims).
    std::vector<IntBounds> shape_bounds, stride_bounds;
    int ndim = 0;
    std::vector<Expr> strides;   // effective strides (row-major unless declared)
    bool has_expr_dims = false;  // a dim that is neither a constant nor a var
  };
  std::vector<ParamPlan> plan_;
  bool has_sub_byte_ = false;      // a tensor parameter of packed sub-byte elements
  bool want_cpu_ = true;           // arguments must be in host memory
  bool want_cuda_ = false;         // arguments must be in cuda device memory
  uintptr_t base_align_mask_ = 0;  // tensor data pointers must have these bits clear
  // What each launch needs beyond the arguments, read off its LaunchSpec once.
  struct LaunchPlan {
    std::array<int64_t, 3> const_grid{1, 1, 1};
    bool grid_is_const = false;
    std::unique_ptr<TmaLaunchMaps> tma;  // set when the launch takes TMA maps
  };
  std::vector<LaunchPlan> launch_plans_;

  KernelSignature sig_;
  Target target_;
  std::string source_, host_source_;
  std::string artifact_path_, cache_key_, owned_dir_;
};

// A readable account of what the host does on a call (the checks on every
// argument, the symbolic dimensions it binds, the grid and the launch):
// get_host_source() for backends whose host side is this runtime.
std::string describe_host(const KernelSignature& sig, const Target& target);

}  // namespace tl
