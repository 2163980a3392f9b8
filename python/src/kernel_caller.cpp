// KernelCaller: what JITKernel.__call__ is, in one C++ call. Arguments come in the
// order the user passes them (the inputs, or all parameters); they are read
// (call_args.h) and checked against the kernel's plan, the outputs named by
// out_idx and the workspaces of T.alloc_global (trailing parameters the user never
// sees) are allocated through a Python hook, the stream is found (torch's current
// stream through its DLPack exchange API), and the kernel is launched.
// Nothing on the path of a call with given tensors allocates or takes a lock.
#include "kernel_caller.h"

#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "call_args.h"

using namespace tl;

namespace {

// The hooks are module functions of tilelang.jit.kernel: (to_native,
// explicit_stream, default_stream, allocate_outputs).
class KernelCaller {
 public:
  KernelCaller(std::shared_ptr<Kernel> kernel, std::string target, const std::vector<int64_t>& out_idx,
               const nb::tuple& hooks)
      : kernel_(std::move(kernel)), target_(std::move(target)), out_idx_(out_idx.begin(), out_idx.end()) {
    const KernelSignature& sig = kernel_->signature();
    num_visible_ = sig.num_visible_params();
    is_output_.resize(sig.params.size());
    for (int64_t i : out_idx) {
      if (i < 0 || size_t(i) >= num_visible_)
        throw nb::value_error(("out_idx entry " + std::to_string(i) + " is out of range").c_str());
      is_output_[size_t(i)] = true;
    }
    std::string names;
    for (size_t i = 0; i < num_visible_; ++i) {
      if (is_output_[i]) continue;
      names += (inputs_.empty() ? "" : ", ") + sig.params[i].name;
      inputs_.push_back(i);
    }
    count_message_ = str_cat("kernel '", sig.name, "' takes ", inputs_.size(), " argument(s) (", names, "), got ");
    for (const Param& p : sig.params) dtypes_.push_back(p.is_tensor() ? p.buffer->dtype.name() : p.var.dtype().name());
    cuda_target_ = kernel_->target().kind == TargetKind::CUDA;
    on_gpu_ = kernel_->runs_on_gpu();
    if (hooks.size() != 4) throw nb::value_error("KernelCaller needs 4 hooks");
    to_native_ = hooks[0];
    explicit_stream_ = hooks[1];
    default_stream_ = hooks[2];
    allocate_outputs_ = hooks[3];
  }

  nb::object call(nb::handle args, nb::handle stream, bool return_all) const {
    nb::object tuple = PyTuple_Check(args.ptr()) ? nb::borrow(args) : nb::steal(PySequence_Tuple(args.ptr()));
    if (!tuple.is_valid()) throw nb::python_error();
    size_t n = size_t(PyTuple_GET_SIZE(tuple.ptr()));
    size_t num_params = kernel_->signature().params.size();
    if (n != inputs_.size() && n != num_visible_) throw nb::type_error((count_message_ + std::to_string(n)).c_str());

    void* raw_stream = nullptr;
    nb::object stream_obj = nb::none();
    if (!stream.is_none()) explicit_stream(stream, raw_stream, stream_obj);

    InlineArray<PyObject*, 16> objs(num_params);
    if (n == num_visible_) {
      for (size_t i = 0; i < n; ++i) objs[i] = PyTuple_GET_ITEM(tuple.ptr(), Py_ssize_t(i));
      for (size_t i = n; i < num_params; ++i) objs[i] = Py_None;  // the workspaces
    } else {
      for (size_t i = 0; i < num_params; ++i) objs[i] = Py_None;
      for (size_t k = 0; k < n; ++k) objs[inputs_[k]] = PyTuple_GET_ITEM(tuple.ptr(), Py_ssize_t(k));
    }

    CallScratch scratch;
    InlineArray<ArgValue, 16> values(num_params);
    std::vector<nb::object> keep;
    bool missing = false;
    const DLPackExchangeApi* cuda_api = nullptr;
    int cuda_device = -1;
    for (size_t i = 0; i < num_params; ++i) {
      const DLPackExchangeApi* api = nullptr;
      read_param(i, objs[i], values[i], scratch, &api, keep);
      const ArgValue& v = values[i];
      if (v.kind == ArgValue::Kind::None && !is_output_[i] && i < num_visible_) {
        // A tensor the kernel never accesses takes None as a null pointer.
        if (!kernel_->signature().params[i].is_tensor() || kernel_->signature().accesses(i)) throw_none_input(i);
        values[i].kind = ArgValue::Kind::Null;
      }
      missing |= v.kind == ArgValue::Kind::None;
      if (cuda_device < 0 && v.kind == ArgValue::Kind::Tensor && v.tensor.device_type == int32_t(DeviceType::CUDA)) {
        cuda_device = v.tensor.device_id;
        cuda_api = api;
      }
    }
    if (on_gpu_ && stream.is_none() && cuda_device >= 0) raw_stream = current_stream(cuda_api, cuda_device, tuple);

    nb::list full;
    if (missing) {
      allocate_outputs(objs, values, full, raw_stream, stream_obj, stream);
      for (size_t i = 0; i < num_params; ++i) {
        if (values[i].kind != ArgValue::Kind::None) continue;
        objs[i] = PyList_GET_ITEM(full.ptr(), Py_ssize_t(i));
        const DLPackExchangeApi* api = nullptr;
        read_param(i, objs[i], values[i], scratch, &api, keep);
      }
    }

    if (on_gpu_) {
      kernel_->call(values.data(), num_params, raw_stream);  // an asynchronous launch: keep the GIL
    } else {
      nb::gil_scoped_release release;
      kernel_->call(values.data(), num_params, raw_stream);
    }

    if (return_all) {
      nb::list all;
      for (size_t i = 0; i < num_visible_; ++i) all.append(nb::handle(objs[i]));
      return std::move(all);
    }
    if (out_idx_.empty()) return nb::none();
    if (out_idx_.size() == 1) return nb::borrow(objs[out_idx_[0]]);
    nb::list outs;
    for (size_t i : out_idx_) outs.append(nb::handle(objs[i]));
    return std::move(outs);
  }

 private:
  void read_param(size_t i, nb::handle h, ArgValue& out, CallScratch& scratch, const DLPackExchangeApi** api,
                  std::vector<nb::object>& keep) const {
    ::read_param(kernel_->signature(), i, h, out, scratch, api, to_native_, keep);
  }

  // None stands for an output to allocate, or a null pointer for a tensor the kernel
  // never accesses; for another input it would hand the kernel uninitialized memory.
  [[noreturn]] void throw_none_input(size_t i) const {
    const Param& p = kernel_->signature().params[i];
    std::string expected = p.is_tensor() ? str_cat("a tensor of dtype ", p.buffer->dtype.name())
                                         : str_cat("a scalar of dtype ", p.var.dtype().name());
    throw nb::type_error(str_cat(describe_param(kernel_->signature(), i), " is None; expected ", expected,
                                 " (only the outputs named by out_idx may be None or left out)")
                             .c_str());
  }

  void explicit_stream(nb::handle stream, void*& raw, nb::object& obj) const {
    if (!cuda_target_)
      throw nb::type_error(str_cat("stream= was given to kernel '", kernel_->signature().name, "', which targets ",
                                   target_, "; streams apply to cuda kernels only (drop the argument)")
                               .c_str());
    if (!on_gpu_) return;  // emulated: runs on the host, in order
    if (PyLong_CheckExact(stream.ptr())) {
      raw = PyLong_AsVoidPtr(stream.ptr());
      if (!raw && PyErr_Occurred()) throw nb::python_error();
      return;
    }
    nb::object pair = explicit_stream_(stream, kernel_->signature().name);
    raw = reinterpret_cast<void*>(nb::cast<uintptr_t>(pair[0]));
    obj = pair[1];
  }

  // The producer's current stream on the device of the first cuda tensor: torch
  // answers through its exchange API; other producers through the Python hook.
  void* current_stream(const DLPackExchangeApi* api, int device, nb::handle args) const {
    if (api && api->current_work_stream) {
      void* s = nullptr;
      if (api->current_work_stream(int32_t(DeviceType::CUDA), device, &s) != 0) throw nb::python_error();
      return s;
    }
    return reinterpret_cast<void*>(nb::cast<uintptr_t>(default_stream_(args)));
  }

  void allocate_outputs(InlineArray<PyObject*, 16>& objs, InlineArray<ArgValue, 16>& values, nb::list& full,
                        void* raw_stream, const nb::object& stream_obj, nb::handle stream) const {
    size_t num_params = objs.size();
    auto shapes = kernel_->output_shapes(values.data(), num_params);
    nb::list missing, shape_list, dtypes;
    for (size_t i = 0; i < num_params; ++i) {
      full.append(nb::handle(objs[i]));
      if (values[i].kind != ArgValue::Kind::None) continue;
      missing.append(i);
      nb::list dims;
      for (int64_t d : *shapes[i]) dims.append(d);
      shape_list.append(nb::tuple(dims));
      dtypes.append(dtypes_[i]);
    }
    allocate_outputs_(full, missing, shape_list, dtypes, reinterpret_cast<uintptr_t>(raw_stream), stream_obj, stream);
  }

  std::shared_ptr<Kernel> kernel_;
  std::string target_;
  std::vector<size_t> out_idx_, inputs_;
  size_t num_visible_ = 0;  // parameters before the workspaces
  std::vector<bool> is_output_;
  std::vector<std::string> dtypes_;
  std::string count_message_;
  bool cuda_target_ = false, on_gpu_ = false;
  nb::object to_native_, explicit_stream_, default_stream_, allocate_outputs_;
};

}  // namespace

void bind_kernel_caller(nb::module_& m) {
  nb::class_<KernelCaller>(m, "KernelCaller")
      .def(nb::init<std::shared_ptr<Kernel>, std::string, const std::vector<int64_t>&, const nb::tuple&>(),
           nb::arg("kernel"), nb::arg("target"), nb::arg("out_idx"), nb::arg("hooks"))
      .def(
          "__call__",
          [](const KernelCaller& c, nb::handle args, nb::handle stream) { return c.call(args, stream, false); },
          nb::arg("args"), nb::arg("stream").none() = nb::none())
      .def(
          "run", [](const KernelCaller& c, nb::handle args, nb::handle stream) { return c.call(args, stream, true); },
          nb::arg("args"), nb::arg("stream").none() = nb::none());
}
