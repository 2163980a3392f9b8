// A Metal kernel as the core holds it: the generated MSL and the signature. It has
// no binary: on macOS the "torch" execution backend compiles the source with
// torch.mps.compile_shader and launches it (python/tilelang/jit/metal_torch.py).
// The core cannot launch it itself; it computes what a launch takes instead
// (plan_launch): the checks and bindings of Kernel::call on the arguments' shapes
// and values, the shapes of the tensors to allocate, the grid, the threadgroup and
// the bytes of the kernel's argument struct.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace tl {

// The MSL type of a scalar field of a Metal kernel's `<name>_args_t` struct (the
// scalar parameters, then the dynamic dims) and its size in bytes, which is also its
// alignment: bool travels as int; float64 has no Metal type (a UserError).
struct MetalArgField {
  const char* msl_type;
  int bytes;
};
MetalArgField metal_arg_field(DataType t);

// The bytes of an args struct holding `fields` (dtype, value) in order, as MSL lays
// it out: each field at its natural alignment, the size rounded up to the widest.
// Integers are stored as their dtype's bits; a float value is rounded once to the
// field's type (float16 / bfloat16 / float32, to nearest even).
struct MetalArgValue {
  DataType dtype;
  bool is_float = false;
  int64_t i = 0;
  double f = 0;
};
std::string pack_metal_args(const std::vector<MetalArgValue>& fields);

// An argument of a Metal kernel as the torch.mps launcher describes it: a tensor's
// shape, a scalar's value, or nothing (an output or workspace to allocate, or a
// tensor the kernel never accesses).
struct MetalArg {
  enum class Kind { None, Shape, Int, Float } kind = Kind::None;
  std::vector<int64_t> shape;
  int64_t i = 0;
  double f = 0;
};

struct MetalLaunchPlan {
  // Per parameter: a tensor's shape, the given one or the one inferred for a tensor
  // to allocate; nullopt for a scalar and for a tensor the kernel never accesses
  // that was not given.
  std::vector<std::optional<std::vector<int64_t>>> shapes;
  std::array<int64_t, 3> grid{1, 1, 1};     // threadgroups along x, y, z
  std::array<int64_t, 3> threads{1, 1, 1};  // threads of a threadgroup
  std::string args;                         // the `<name>_args_t` bytes; empty when it has no field
};

class MetalKernel : public Kernel {
 public:
  MetalKernel(KernelSignature sig, Target target, std::string source, std::string kernel_name);
  const std::string& kernel_name() const { return kernel_name_; }

  // One argument per parameter (workspaces included). Errors name the argument and
  // the kernel, as Kernel::call's do.
  MetalLaunchPlan plan_launch(const std::vector<MetalArg>& args) const;

 protected:
  void launch(size_t index, const KernelArg* slots, size_t num_slots, const std::array<int64_t, 3>& grid, int device_id,
              void* stream) const override;

 private:
  std::string kernel_name_;
};

}  // namespace tl
