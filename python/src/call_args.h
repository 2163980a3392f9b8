// Reads the Python arguments of a kernel call into the runtime's ArgValue views
// without allocating on the common paths: torch tensors through the DLPack C
// exchange API (`__dlpack_c_exchange_api__`, a C function per tensor, no
// capsule), numpy arrays through the buffer protocol, any other DLPack producer
// through nanobind's ndarray, and Python numbers directly. Each tensor view
// records what the runtime's safety checks need: the producer's element size and
// whether it forbids writes; each integer whether it fits 64 bits.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <memory>
#include <vector>

#include "runtime/kernel.h"

namespace nb = nanobind;

// A fixed-capacity array on the stack that moves to the heap when a call needs
// more (kernels with more than N parameters).
template <class T, size_t N>
class InlineArray {
 public:
  explicit InlineArray(size_t n) : size_(n) {
    if (n > N) heap_ = std::make_unique<T[]>(n);
  }
  T* data() { return heap_ ? heap_.get() : inline_; }
  T& operator[](size_t i) { return data()[i]; }
  size_t size() const { return size_; }

 private:
  size_t size_;
  T inline_[N]{};
  std::unique_ptr<T[]> heap_;
};

// The C entry points a tensor type publishes for DLPack exchange (the
// DLPackExchangeAPI struct of dlpack.h 1.2+, declared here with its ABI; only
// the two members the runtime calls are typed).
struct DLPackExchangeApi {
  struct Header {
    uint32_t major, minor;
    const Header* prev_api;
  } header;
  void* managed_tensor_allocator;
  void* managed_tensor_from_py_object_no_sync;
  void* managed_tensor_to_py_object_no_sync;
  int (*dltensor_from_py_object_no_sync)(void* py_object, nb::dlpack::dltensor* out);
  int (*current_work_stream)(int32_t device_type, int32_t device_id, void** out_stream);
};

// What keeps the views of one call valid: the numpy buffers it must release,
// the element strides computed from byte strides, and the nanobind ndarrays of
// other producers. Lives on the caller's stack.
class CallScratch {
 public:
  CallScratch() = default;
  CallScratch(const CallScratch&) = delete;
  CallScratch& operator=(const CallScratch&) = delete;
  ~CallScratch();

  Py_buffer* new_buffer();
  void drop_last_buffer();  // a buffer that was not filled
  int64_t* new_int64s(size_t n);
  nb::ndarray<>& keep(nb::ndarray<> a);

 private:
  static constexpr int kInlineBuffers = 8;
  static constexpr size_t kInlineInts = 64;
  Py_buffer buffers_[kInlineBuffers];
  int num_buffers_ = 0;
  std::vector<std::unique_ptr<Py_buffer>> more_buffers_;
  int64_t ints_[kInlineInts];
  size_t num_ints_ = 0;
  std::vector<std::unique_ptr<int64_t[]>> more_ints_;
  std::vector<nb::ndarray<>> arrays_;
};

// Reads one argument. `api` is set to the exchange API that read a tensor (so
// the caller can ask it for the current stream), else left alone. Returns false
// when the object is of no kind the reader knows: the caller converts it in
// Python and tries once more. Throws TypeError for a tensor whose dtype or
// strides the runtime cannot describe.
// Numpy scalars are not read here (they expose the buffer protocol too, but are
// numbers to a kernel), nor numpy arrays of ml_dtypes types (no buffer format).
bool read_arg(nb::handle h, tl::ArgValue& out, CallScratch& scratch, const DLPackExchangeApi** api);

// The TypeError for an argument that is no tensor and no number.
[[noreturn]] void throw_not_a_tensor(nb::handle h);

// The dtype of a DLPack tensor; throws TypeError for one the runtime lacks.
tl::DataType dtype_of(const nb::dlpack::dtype& d);

// read_arg, with objects it does not know converted through the Python hook
// `to_native` (numpy scalars, ml_dtypes arrays) and read again; what the hook
// returns is kept alive in `keep` for the call. Throws TypeError for anything else.
void read_or_convert(nb::handle h, tl::ArgValue& out, CallScratch& scratch, const DLPackExchangeApi** api,
                     nb::handle to_native, std::vector<nb::object>& keep);

// read_or_convert for parameter `i` of `sig`: an exception of the readers (an
// object of no known kind, an unsupported DLPack dtype, the producer's own error)
// comes back with the parameter named in front of its message, its type kept.
void read_param(const tl::KernelSignature& sig, size_t i, nb::handle h, tl::ArgValue& out, CallScratch& scratch,
                const DLPackExchangeApi** api, nb::handle to_native, std::vector<nb::object>& keep);

// "argument 'A' (parameter 0 of kernel 'k')", as the runtime's errors name one.
std::string describe_param(const tl::KernelSignature& sig, size_t i);

// The arguments of a plain Kernel call (all parameters, no conversion hook).
struct PlainArgs {
  PlainArgs(const nb::sequence& args, const tl::KernelSignature& sig);
  CallScratch scratch;
  std::vector<tl::ArgValue> values;
  std::vector<nb::object> keep;
};
