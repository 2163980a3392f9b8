// Binds compile(), the cache and Kernel (KernelCaller, the call path of a
// JITKernel, is in kernel_caller.cpp). Tensor arguments are read by call_args.h.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdio>

#include "analysis/inferred_layouts.h"
#include "cache/kernel_cache.h"
#include "cache/memory_cache.h"
#include "call_args.h"
#include "convert.h"
#include "driver/cpu/host_compiler.h"
#include "driver/cuda/nvrtc.h"
#include "driver/device_dir.h"
#include "driver/metal_emu_source.h"
#include "ir/printer.h"
#include "kernel_caller.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/cuda/cuda_kernel.h"
#include "runtime/cuda/tma.h"
#include "runtime/metal/metal_kernel.h"
#include "support/logging.h"
#include "tl/compile.h"
#include "transform/pass_config.h"

using namespace tl;

namespace {

Attrs to_pass_configs(const nb::dict& d) {
  Attrs a;
  for (auto [k, v] : d) {
    std::string key = nb::cast<std::string>(nb::str(k));
    if (PyBool_Check(v.ptr()))
      a[key] = int64_t(v.ptr() == Py_True);
    else if (PyLong_Check(v.ptr()))
      a[key] = to_int64(v, ("pass config '" + key + "'").c_str());
    else if (PyFloat_Check(v.ptr()))
      a[key] = PyFloat_AsDouble(v.ptr());
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
      // A T.alloc_global workspace: allocated on every call, never passed by the caller.
      .def("param_is_workspace", [](const Kernel& k, size_t i) { return k.signature().params.at(i).workspace; })
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
      // The shape of a tensor parameter as expressions (Var, IntImm, Binary ...), the Var
      // of a scalar parameter, and whether the kernel may write a tensor parameter
      // (KernelSignature::writes): tilelang.torch derives an operator's schema and its
      // fake implementation from them.
      .def("param_shape_exprs",
           [](const Kernel& k, size_t i) {
             const Param& p = k.signature().params.at(i);
             return p.is_tensor() ? p.buffer->shape : std::vector<Expr>{};
           })
      // Whether a tensor parameter declares its strides (T.StridedTensor), so that its
      // rows need not lie back to back.
      .def("param_declares_strides",
           [](const Kernel& k, size_t i) {
             const Param& p = k.signature().params.at(i);
             return p.is_tensor() && !p.buffer->strides.empty();
           })
      .def("param_var",
           [](const Kernel& k, size_t i) -> std::optional<Var> {
             const Param& p = k.signature().params.at(i);
             if (p.is_tensor()) return std::nullopt;
             return p.var;
           })
      // Whether the kernel names a tensor parameter at all (KernelSignature::accesses):
      // one it never accesses may be passed as None.
      .def("param_is_accessed",
           [](const Kernel& k, size_t i) {
             const Param& p = k.signature().params.at(i);
             return p.is_tensor() && k.signature().accesses(i);
           })
      .def("param_is_written",
           [](const Kernel& k, size_t i) {
             const Param& p = k.signature().params.at(i);
             return p.is_tensor() && k.signature().writes(i);
           })
      .def("output_shapes",
           [](const Kernel& k, const nb::sequence& args) {
             PlainArgs ca(args, k.signature());
             auto shapes = k.output_shapes(ca.values);
             nb::list out;
             for (auto& s : shapes) out.append(s ? nb::cast(*s) : nb::none());
             return out;
           })
      .def(
          "__call__",
          [](const Kernel& k, const nb::sequence& args, uintptr_t stream) {
            PlainArgs ca(args, k.signature());
            if (k.runs_on_gpu()) return k.call(ca.values, reinterpret_cast<void*>(stream));
            nb::gil_scoped_release release;
            k.call(ca.values, reinterpret_cast<void*>(stream));
          },
          nb::arg("args"), nb::arg("stream") = 0);

  // A metal kernel, which the torch.mps launcher runs (python/tilelang/jit/metal_torch.py):
  // the function it calls, and what a launch with these arguments takes, computed here
  // (runtime/metal/metal_kernel.h): `args` holds per parameter a tensor's shape (a tuple),
  // a scalar's value, or None (to allocate, or never accessed).
  nb::class_<MetalKernel, Kernel>(m, "MetalKernel")
      .def_prop_ro("kernel_name", &MetalKernel::kernel_name)
      .def("plan_launch", [](const MetalKernel& k, const nb::sequence& args) {
        std::vector<MetalArg> in;
        for (nb::handle a : args) {
          MetalArg arg;
          if (a.is_none()) {
            arg.kind = MetalArg::Kind::None;
          } else if (PyBool_Check(a.ptr()) || PyLong_Check(a.ptr())) {
            arg.kind = MetalArg::Kind::Int;
            arg.i = to_int64(a, "a scalar argument");
          } else if (PyFloat_Check(a.ptr())) {
            arg.kind = MetalArg::Kind::Float;
            arg.f = PyFloat_AsDouble(a.ptr());
          } else {
            arg.kind = MetalArg::Kind::Shape;
            for (nb::handle d : nb::cast<nb::sequence>(a)) arg.shape.push_back(to_int64(d, "a tensor dim"));
          }
          in.push_back(std::move(arg));
        }
        MetalLaunchPlan plan = k.plan_launch(in);
        nb::list shapes;
        for (auto& s : plan.shapes) shapes.append(s ? nb::cast(*s) : nb::none());
        nb::dict out;
        out["shapes"] = shapes;
        out["grid"] = nb::make_tuple(plan.grid[0], plan.grid[1], plan.grid[2]);
        out["threads"] = nb::make_tuple(plan.threads[0], plan.threads[1], plan.threads[2]);
        out["args"] = nb::bytes(plan.args.data(), plan.args.size());
        return out;
      });
  // The bytes of a metal kernel's argument struct for [(dtype name, value)] in order.
  m.def("pack_metal_args", [](const nb::sequence& fields) {
    std::vector<MetalArgValue> in;
    for (nb::handle f : fields) {
      auto pair = nb::cast<nb::sequence>(f);
      MetalArgValue v;
      v.dtype = DataType::from_string(nb::cast<std::string>(pair[0]));
      nb::handle value = pair[1];
      v.is_float = PyFloat_Check(value.ptr());
      if (v.is_float)
        v.f = PyFloat_AsDouble(value.ptr());
      else
        v.i = to_int64(value, "a scalar argument");
      in.push_back(v);
    }
    std::string bytes = pack_metal_args(in);
    return nb::bytes(bytes.data(), bytes.size());
  });

  bind_kernel_caller(m);

  m.def(
      "compile",
      [](const PrimFunc& f, const std::string& target, const nb::dict& pass_configs,
         const std::vector<std::string>& compile_flags, bool use_cache, const std::string& cache_dir,
         const nb::object& cuda_postproc) {
        CompileOptions opt;
        opt.target = Target::parse(target);
        opt.pass_configs = to_pass_configs(pass_configs);
        opt.compile_flags = compile_flags;
        opt.use_cache = use_cache;
        opt.cache_dir = cache_dir;
        if (!cuda_postproc.is_none()) {
          // Called from the compile, which runs without the GIL: take it back for the call.
          opt.cuda_postproc = [cb = cuda_postproc](const std::string& code) {
            nb::gil_scoped_acquire gil;
            return nb::cast<std::string>(cb(code));
          };
        }
        nb::gil_scoped_release release;
        return compile(f, opt);
      },
      nb::arg("func"), nb::arg("target") = "cpu", nb::arg("pass_configs") = nb::dict(),
      nb::arg("compile_flags") = std::vector<std::string>(), nb::arg("use_cache") = true, nb::arg("cache_dir") = "",
      nb::arg("cuda_postproc") = nb::none());
  m.def(
      "prepare_host_compiler",
      [](const std::string& target, const std::vector<std::string>& compile_flags, bool use_cache,
         const std::string& cache_dir) {
        CompileOptions opt;
        opt.target = Target::parse(target);
        opt.compile_flags = compile_flags;
        opt.use_cache = use_cache;
        opt.cache_dir = cache_dir;
        nb::gil_scoped_release release;
        prepare_host_compiler(opt);
      },
      nb::arg("target"), nb::arg("compile_flags") = std::vector<std::string>(), nb::arg("use_cache") = true,
      nb::arg("cache_dir") = "");
  m.def(
      "generate_source",
      [](const PrimFunc& f, const std::string& target, const nb::dict& pass_configs) {
        return generate_source(f, Target::parse(target), to_pass_configs(pass_configs));
      },
      nb::arg("func"), nb::arg("target"), nb::arg("pass_configs") = nb::dict());
  m.def("cache_key_material", [](const PrimFunc& f, const std::string& target, const nb::dict& pass_configs,
                                 const std::vector<std::string>& flags) {
    CompileOptions opt;
    opt.target = Target::parse(target);
    opt.pass_configs = to_pass_configs(pass_configs);
    opt.compile_flags = flags;
    return cache_key_material(f, opt);
  });
  // The pass-config keys (transform/pass_config.h): (key, kind of value, that kind in
  // words, whether this compiler acts on it); tilelang.transform checks Python's values
  // against them.
  m.def("pass_config_keys", [] {
    auto kind = [](PassConfigValue v) {
      switch (v) {
        case PassConfigValue::Switch:
          return "switch";
        case PassConfigValue::IndexBitWidth:
          return "index bit width";
        case PassConfigValue::Int:
          return "int";
        case PassConfigValue::Number:
          return "number";
        case PassConfigValue::String:
          return "str";
        case PassConfigValue::Flags:
          return "flags";
        case PassConfigValue::Any:
          break;
      }
      return "any";
    };
    std::vector<std::tuple<std::string, std::string, std::string, bool>> out;
    for (const PassConfigKey& k : pass_config_keys())
      out.emplace_back(k.key, kind(k.value), expected_value(k.value), k.used);
    return out;
  });
  // The layouts lowering gives a kernel's register fragments and swizzled shared
  // tiles, as tables (analysis/inferred_layouts.h; JITKernel.plot_layouts).
  m.def("inferred_layouts", [](const PrimFunc& f, const std::string& target, const nb::dict& pass_configs) {
    nb::list out;
    for (const InferredLayout& l : inferred_layouts(f, Target::parse(target), to_pass_configs(pass_configs))) {
      nb::dict d;
      d["buffer"] = l.buffer;
      d["dtype"] = l.dtype.name();
      d["bits"] = l.dtype.bits();
      d["shape"] = l.shape;
      d["fragment"] = l.fragment;
      d["holders"] = l.holders;
      d["offsets"] = l.offsets;
      out.append(d);
    }
    return out;
  });
  m.def("available_targets", [] {
    std::vector<std::string> t{"cpu", "metal"};
    if (nvrtc()) t.push_back("cuda");
    return t;
  });
  // The limits the compiler plans a target's kernels with (src/target/target.h), for
  // tilelang.carver.arch: its one source of shared memory, thread and register limits.
  m.def("target_limits", [](const std::string& target) {
    Target t = Target::parse(target);
    nb::dict d;
    d["arch"] = t.arch;
    d["sm_version"] = t.sm_version();
    d["warp_size"] = t.warp_size();
    d["max_shared_memory_per_block"] = t.max_shared_memory_per_block();
    d["max_threads_per_block"] = t.max_block_dim(0);
    d["registers_per_sm"] = t.kind == TargetKind::CUDA ? kRegistersPerSm : int64_t(0);
    return d;
  });
  m.def("present_gpu_arch", &present_gpu_arch);
  m.def("cuda_device_count", &cuda_device_count);
  m.def("cuda_device_attribute", &cuda_device_attribute, nb::arg("attribute"), nb::arg("device") = 0);
  m.def("host_compiler_is_gcc", &host_compiler_is_gcc);  // g++ gets precompiled headers (driver/cpu/prelude_entry.h)
  // What `python -m tilelang doctor` reports, from the functions compiling uses.
  m.def("core_version", [] { return std::string(TL_VERSION); });
  m.def("host_compiler_id", &host_compiler_id);
  m.def("host_compiler_rejects", [] { return host_compiler_rejects({}); });
  m.def("nvrtc_version", &nvrtc_version);
  m.def("cuda_driver_version", &cuda_driver_version);
  m.def("cache_dir_problem", &cache_dir_problem);
  m.def("set_device_include_dir", &set_device_include_dir);
  m.def("device_include_dir", &device_include_dir);
  m.def("msl_to_emulated_cpp", &msl_to_emulated_cpp);
  m.def(  // TMA tensor maps (src/runtime/cuda/tma.h): the 128 bytes a kernel takes as a tl::TensorMap
      "encode_tensor_map",
      [](const std::string& dtype, uint64_t base, const std::vector<uint64_t>& dims,
         const std::vector<uint64_t>& strides, const std::vector<uint32_t>& box,
         const std::vector<uint32_t>& elem_strides, int swizzle, int l2_promotion, bool nan_fill, bool emulate) {
        TensorMapParams p{DataType::from_string(dtype),
                          base,
                          dims,
                          strides,
                          box,
                          elem_strides,
                          tma_swizzle_of_bytes(swizzle),
                          tma_l2_promotion_of_bytes(l2_promotion),
                          nan_fill ? TmaOobFill::NanRequestZeroFma : TmaOobFill::Zero};
        const TensorMapBytes map = encode_tensor_map(p, emulate);
        return nb::bytes(reinterpret_cast<const char*>(map.data()), map.size());
      },
      nb::arg("dtype"), nb::arg("base"), nb::arg("dims"), nb::arg("strides"), nb::arg("box"),
      nb::arg("elem_strides") = std::vector<uint32_t>(), nb::arg("swizzle") = 0, nb::arg("l2_promotion") = 0,
      nb::arg("nan_fill") = false, nb::arg("emulate") = false);
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
  m.def("memory_cache_size", &memory_cache_size);
  m.def("cuda_modules_loaded", &cuda_modules_loaded);
  m.def("memory_cache_max_kernels", [] { return memory_cache_bounds().max_entries; });
  m.def("load_kernel", nb::overload_cast<const std::string&, const std::string&, const std::string&>(&load_kernel),
        nb::arg("signature"), nb::arg("target"), nb::arg("artifact_dir"));
  // The one export format, shared with the C++ API (tl::export_kernel / tl::load_kernel).
  m.def("export_kernel", &export_kernel, nb::arg("kernel"), nb::arg("dir"), nb::arg("meta"));
  m.def("load_exported_kernel", [](const std::string& dir) {
    ExportDescription d = read_export(dir);
    return std::make_pair(load_kernel(dir), d.meta);
  });
  m.def("default_cache_dir", &default_cache_dir);
  m.def("cache_stats", [](const std::string& dir) {
    CacheStats s = DiskCache(dir).stats();
    return std::make_pair(s.entries, s.bytes);
  });
  m.def("cache_prune", [](const std::string& dir, int64_t max_bytes) { return DiskCache(dir).prune(max_bytes); });
}
