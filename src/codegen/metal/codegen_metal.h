// Metal Shading Language generation: one self-contained `[[kernel]]` function per
// PrimFunc, run on macOS through torch.mps.compile_shader and on Linux through the
// emulator shims (device/emu/metal_emu.h). docs/design/metal.md is the contract.
#pragma once

#include "ir/ir.h"
#include "runtime/signature.h"

namespace tl {

struct MetalSource {
  std::string code;
  std::string kernel_name;  // "<name>_kernel", the function torch calls
  std::string emu_entry;    // "tl_emu_<name>_kernel", the emulation's per-threadgroup entry
};

MetalSource codegen_metal(const PrimFunc& lowered, const KernelSignature& sig);

// The MSL type of one field of the scalar-argument struct (`<name>_args_t`) for a
// scalar or dynamic-dim variable of dtype `t`: "int", "uint", "long", "ulong",
// "float", "half" or "bfloat" (bool travels as int). Throws for float64.
std::string metal_arg_field_type(DataType t);

}  // namespace tl
