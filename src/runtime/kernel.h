// A compiled kernel, ready to call: it checks arguments against the signature
// (naming the parameter, what was expected and what was given), binds symbolic
// dimensions, computes the grid and hands the launch to its backend.
#pragma once

#include <array>
#include <memory>

#include "runtime/signature.h"
#include "target/target.h"

namespace tl {

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
};

struct ArgValue {
  enum class Kind { None, Tensor, Int, Float } kind = Kind::None;
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
  std::vector<std::optional<std::vector<int64_t>>> output_shapes(const std::vector<ArgValue>& args) const;
  // `stream` is a CUstream for GPU targets (nullptr: the default stream).
  void call(const std::vector<ArgValue>& args, void* stream = nullptr) const;

 protected:
  virtual void launch(const std::vector<KernelArg>& slots, const std::array<int64_t, 3>& grid, int device_id,
                      void* stream) const = 0;

 private:
  Bindings bind(const std::vector<ArgValue>& args, bool allow_missing) const;
  void check_tensor(size_t index, const Param& p, const TensorArg& t, Bindings& b) const;

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
