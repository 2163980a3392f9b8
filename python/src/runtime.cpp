// Binds compile() and Kernel. Tensor arguments arrive through nanobind's ndarray
// (DLPack or the buffer protocol), so numpy arrays and torch tensors both work; a
// tuple (array, "bfloat16") passes raw bytes with a dtype DLPack cannot describe.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdio>

#include "cache/kernel_cache.h"
#include "convert.h"
#include "ir/printer.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/device_dir.h"
#include "support/logging.h"
#include "tl/compile.h"

using namespace tl;

namespace {

DataType dtype_of(const nb::dlpack::dtype& d) {
  using Code = nb::dlpack::dtype_code;
  auto code = Code(d.code);
  ScalarType t;
  switch (code) {
    case Code::Int:
      t = d.bits == 8    ? ScalarType::Int8
          : d.bits == 16 ? ScalarType::Int16
          : d.bits == 32 ? ScalarType::Int32
                         : ScalarType::Int64;
      break;
    case Code::UInt:
      t = d.bits == 8    ? ScalarType::UInt8
          : d.bits == 16 ? ScalarType::UInt16
          : d.bits == 32 ? ScalarType::UInt32
                         : ScalarType::UInt64;
      break;
    case Code::Float:
      t = d.bits == 16 ? ScalarType::Float16 : d.bits == 32 ? ScalarType::Float32 : ScalarType::Float64;
      break;
    case Code::Bfloat:
      t = ScalarType::BFloat16;
      break;
    case Code::Bool:
      t = ScalarType::Bool;
      break;
    default: {
      // DLPack 1.1 float8 codes.
      switch (int(d.code)) {
        case 10:
          t = ScalarType::Float8E4M3FN;
          break;
        case 11:
          t = ScalarType::Float8E4M3FNUZ;
          break;
        case 12:
          t = ScalarType::Float8E5M2;
          break;
        case 13:
          t = ScalarType::Float8E5M2FNUZ;
          break;
        case 14:
          t = ScalarType::Float8E8M0FNU;
          break;
        default:
          throw nb::type_error(("unsupported tensor dtype (DLPack code " + std::to_string(int(d.code)) + ", " +
                                std::to_string(d.bits) + " bits)")
                                   .c_str());
      }
    }
  }
  return DataType(t, d.lanes);
}

// Keeps the ndarrays (and shape/stride storage) alive for the duration of a call.
struct CallArgs {
  std::vector<nb::ndarray<>> arrays;
  std::vector<std::vector<int64_t>> shapes, strides;
  std::vector<ArgValue> values;
};

void convert_args(const nb::sequence& args, CallArgs& out) {
  size_t n = nb::len(args);
  out.arrays.reserve(n);
  out.shapes.reserve(n);
  out.strides.reserve(n);
  for (nb::handle h : args) {
    ArgValue v;
    if (h.is_none()) {
      out.values.push_back(v);
      continue;
    }
    if (PyBool_Check(h.ptr()) || PyLong_Check(h.ptr())) {
      v.kind = ArgValue::Kind::Int;
      v.i = nb::cast<int64_t>(h);
      out.values.push_back(v);
      continue;
    }
    if (PyFloat_Check(h.ptr())) {
      v.kind = ArgValue::Kind::Float;
      v.f = nb::cast<double>(h);
      out.values.push_back(v);
      continue;
    }
    std::optional<DataType> override_dtype;
    nb::handle tensor = h;
    if (nb::isinstance<nb::tuple>(h) && nb::len(h) == 2) {
      tensor = h[0];
      override_dtype = to_dtype(h[1]);
    }
    nb::ndarray<> arr;
    if (!nb::try_cast(tensor, arr))
      throw nb::type_error(("kernel arguments must be tensors (numpy arrays, torch tensors) or Python numbers, got " +
                            std::string(nb::str(nb::handle(tensor.type())).c_str()))
                               .c_str());
    out.arrays.push_back(arr);
    std::vector<int64_t> shape(arr.ndim()), strides(arr.ndim());
    for (size_t d = 0; d < arr.ndim(); ++d) {
      shape[d] = arr.shape(d);
      strides[d] = arr.stride(d);
    }
    out.shapes.push_back(std::move(shape));
    out.strides.push_back(std::move(strides));
    v.kind = ArgValue::Kind::Tensor;
    v.tensor.data = arr.data();
    v.tensor.dtype = override_dtype ? *override_dtype : dtype_of(arr.dtype());
    v.tensor.ndim = int(arr.ndim());
    v.tensor.shape = out.shapes.back().data();
    v.tensor.strides = out.strides.back().data();
    v.tensor.device_type = arr.device_type();
    v.tensor.device_id = arr.device_id();
    out.values.push_back(v);
  }
}

Attrs to_pass_configs(const nb::dict& d) {
  Attrs a;
  for (auto [k, v] : d) {
    std::string key = nb::cast<std::string>(nb::str(k));
    if (PyBool_Check(v.ptr()) || PyLong_Check(v.ptr()))
      a[key] = nb::cast<int64_t>(v);
    else if (PyFloat_Check(v.ptr()))
      a[key] = nb::cast<double>(v);
    else
      a[key] = std::string(nb::str(v).c_str());
  }
  return a;
}

bool python_alive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

}  // namespace

void bind_runtime(nb::module_& m) {
  nb::class_<Kernel>(m, "Kernel")
      .def_prop_ro("source", &Kernel::source)
      .def_prop_ro("host_source", &Kernel::host_source)
      .def_prop_ro("signature_text", [](const Kernel& k) { return k.signature().serialize(); })
      .def_prop_ro("artifact_dir", &Kernel::artifact_path)
      .def_prop_ro("cache_key", &Kernel::cache_key)
      .def_prop_ro("name", [](const Kernel& k) { return k.signature().name; })
      .def_prop_ro("target", [](const Kernel& k) { return k.target().str(); })
      .def_prop_ro("param_names",
                   [](const Kernel& k) {
                     std::vector<std::string> v;
                     for (const Param& p : k.signature().params) v.push_back(p.name);
                     return v;
                   })
      .def("param_is_tensor", [](const Kernel& k, size_t i) { return k.signature().params.at(i).is_tensor(); })
      .def("param_dtype",
           [](const Kernel& k, size_t i) {
             const Param& p = k.signature().params.at(i);
             return p.is_tensor() ? p.buffer->dtype.name() : p.var.dtype().name();
           })
      .def("param_shape",
           [](const Kernel& k, size_t i) {
             const Param& p = k.signature().params.at(i);
             nb::list out;
             if (!p.is_tensor()) return out;
             for (const Expr& e : p.buffer->shape) {
               if (auto c = as_const_int(e))
                 out.append(*c);
               else
                 out.append(to_string(e));
             }
             return out;
           })
      .def("output_shapes",
           [](const Kernel& k, const nb::sequence& args) {
             CallArgs ca;
             convert_args(args, ca);
             auto shapes = k.output_shapes(ca.values);
             nb::list out;
             for (auto& s : shapes) out.append(s ? nb::cast(*s) : nb::none());
             return out;
           })
      .def(
          "__call__",
          [](const Kernel& k, const nb::sequence& args, uintptr_t stream) {
            CallArgs ca;
            convert_args(args, ca);
            nb::gil_scoped_release release;
            k.call(ca.values, reinterpret_cast<void*>(stream));
          },
          nb::arg("args"), nb::arg("stream") = 0);

  m.def(
      "compile",
      [](const PrimFunc& f, const std::string& target, const nb::dict& pass_configs,
         const std::vector<std::string>& compile_flags, bool use_cache, const std::string& cache_dir) {
        CompileOptions opt;
        opt.target = Target::parse(target);
        opt.pass_configs = to_pass_configs(pass_configs);
        opt.compile_flags = compile_flags;
        opt.use_cache = use_cache;
        opt.cache_dir = cache_dir;
        nb::gil_scoped_release release;
        return compile(f, opt);
      },
      nb::arg("func"), nb::arg("target") = "cpu", nb::arg("pass_configs") = nb::dict(),
      nb::arg("compile_flags") = std::vector<std::string>(), nb::arg("use_cache") = true, nb::arg("cache_dir") = "");
  m.def("generate_source",
        [](const PrimFunc& f, const std::string& target) { return generate_source(f, Target::parse(target)); });
  m.def("cache_key_material", [](const PrimFunc& f, const std::string& target, const nb::dict& pass_configs,
                                 const std::vector<std::string>& flags) {
    CompileOptions opt;
    opt.target = Target::parse(target);
    opt.pass_configs = to_pass_configs(pass_configs);
    opt.compile_flags = flags;
    return cache_key_material(f, opt);
  });
  m.def("available_targets", [] {
    std::vector<std::string> t{"cpu"};
    if (nvrtc()) t.push_back("cuda");
    return t;
  });
  m.def("present_gpu_arch", &present_gpu_arch);
  m.def("set_device_include_dir", &set_device_include_dir);
  m.def("device_include_dir", &device_include_dir);
  m.def(
      "set_log_sink",
      [](nb::object fn) {
        if (fn.is_none()) {
          set_log_sink(nullptr);
          return;
        }
        // The sink may outlive the interpreter (static destructors, threads still
        // logging at exit): never touch Python once it is finalizing; leak instead.
        std::shared_ptr<PyObject> held(fn.release().ptr(), [](PyObject* p) {
          if (!python_alive()) return;
          nb::gil_scoped_acquire gil;
          Py_DECREF(p);
        });
        set_log_sink([held](LogLevel level, const std::string& msg) {
          if (!python_alive()) {
            if (level >= LogLevel::Warning) std::fprintf(stderr, "[tilelang] %s\n", msg.c_str());
            return;
          }
          nb::gil_scoped_acquire gil;
          PyObject* r = PyObject_CallFunction(held.get(), "is", int(level), msg.c_str());
          if (r)
            Py_DECREF(r);
          else
            PyErr_Clear();
        });
      },
      nb::arg("sink").none());
  m.def("compile_count", &compile_count);
  m.def("load_kernel", &load_kernel, nb::arg("signature"), nb::arg("target"), nb::arg("artifact_dir"));
  m.def("default_cache_dir", &default_cache_dir);
  m.def("cache_stats", [](const std::string& dir) {
    CacheStats s = DiskCache(dir).stats();
    return std::make_pair(s.entries, s.bytes);
  });
  m.def("cache_prune", [](const std::string& dir, int64_t max_bytes) { return DiskCache(dir).prune(max_bytes); });
}
