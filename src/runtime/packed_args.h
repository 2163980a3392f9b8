// Tensor arguments of packed sub-byte parameters (int4, float4_e2m1fn). The producer
// describes bytes (torch.float4_e2m1fn_x2, uint8 or int8), each holding two elements
// along the last dimension; the kernel's checks and bindings speak of elements. A
// call's arguments are read as elements first, so that every other check stays one
// check: the last dimension holds twice the bytes (an odd size n, a constant or a
// T.dynamic size another argument gives, takes (n + 1) / 2 bytes), the other strides count twice as many elements as
// bytes, and the packed dimension must be contiguous. The kernel then touches only bytes inside the tensor: element e
// lies in byte e / 2.
#pragma once

#include <memory>
#include <vector>

#include "runtime/kernel.h"

namespace tl {

class PackedArgs {
 public:
  // Throws a UserError naming the argument when a tensor cannot hold its parameter's
  // elements (a dtype other than bytes, a strided packed dimension).
  PackedArgs(const KernelSignature& sig, const ArgValue* args, size_t n);
  const ArgValue* data() const { return args_.data(); }

 private:
  std::vector<ArgValue> args_;
  std::vector<std::unique_ptr<int64_t[]>> dims_;  // the rewritten shapes and strides
};

// Throws a UserError naming parameter `index` when its packed elements of `shape`
// cannot lie in a tensor of bytes as the kernel reads them: the producer packs each
// row to whole bytes, so rows of an odd number of elements (int4: two a byte) lie
// further apart than the kernel's compact rows, unless there is only one row or the
// parameter declares its strides. `output`: an output about to be allocated.
void check_packed_rows(const KernelSignature& sig, size_t index, const int64_t* shape, int ndim, bool output);

// The shape of the byte tensor that holds elements of sub-byte dtype `t` in `shape`
// (the last dimension rounded up to whole bytes), as outputs are allocated.
std::vector<int64_t> packed_storage_shape(DataType t, std::vector<int64_t> shape);

}  // namespace tl
