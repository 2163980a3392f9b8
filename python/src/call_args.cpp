// Argument reading for kernel calls; see call_args.h. The kind of each Python
// type (exchange API, numpy array, numpy scalar, other) is looked up once and
// kept in a small table, so a call does no attribute lookups.
#include "call_args.h"

#include <string>

#include "convert.h"

using namespace tl;

static_assert(sizeof(Py_ssize_t) == sizeof(int64_t), "buffer shapes are read as int64_t");

namespace {

enum class TypeKind : uint8_t {
  Exchange,     // publishes a DLPackExchangeApi (torch.Tensor)
  NumpyArray,   // numpy.ndarray: the buffer protocol
  NumpyScalar,  // numpy.generic: converted to a Python number first
  Other,        // anything else: nanobind's ndarray (DLPack, buffer protocol)
};

struct TypeEntry {
  PyTypeObject* type;
  TypeKind kind;
  const DLPackExchangeApi* api;
};

// Reads the exchange API a type publishes: a PyCapsule (torch) or an address
// as an int (early producers), under the current or the earlier attribute name.
const DLPackExchangeApi* exchange_api_of(PyTypeObject* tp) {
  for (const char* name : {"__dlpack_c_exchange_api__", "__c_dlpack_exchange_api__"}) {
    PyObject* attr = PyObject_GetAttrString(reinterpret_cast<PyObject*>(tp), name);
    if (!attr) {
      PyErr_Clear();
      continue;
    }
    void* ptr = nullptr;
    if (PyCapsule_CheckExact(attr))
      ptr = PyCapsule_GetPointer(attr, PyCapsule_GetName(attr));
    else if (PyLong_Check(attr))
      ptr = PyLong_AsVoidPtr(attr);
    Py_DECREF(attr);
    if (!ptr) {
      PyErr_Clear();
      continue;
    }
    auto* api = static_cast<const DLPackExchangeApi*>(ptr);
    if (api->header.major == 1 && api->dltensor_from_py_object_no_sync) return api;
  }
  return nullptr;
}

// numpy.ndarray and numpy.generic, or nullptr without numpy.
PyTypeObject* numpy_type(const char* name) {
  PyObject* numpy = PyImport_ImportModule("numpy");
  if (!numpy) {
    PyErr_Clear();
    return nullptr;
  }
  PyObject* t = PyObject_GetAttrString(numpy, name);
  Py_DECREF(numpy);
  if (!t || !PyType_Check(t)) {
    PyErr_Clear();
    Py_XDECREF(t);
    return nullptr;
  }
  return reinterpret_cast<PyTypeObject*>(t);  // kept: a reference for the process
}

TypeEntry classify(PyTypeObject* tp) {
  if (const DLPackExchangeApi* api = exchange_api_of(tp)) return {tp, TypeKind::Exchange, api};
  static PyTypeObject* ndarray = numpy_type("ndarray");
  static PyTypeObject* generic = numpy_type("generic");
  if (ndarray && PyType_IsSubtype(tp, ndarray)) return {tp, TypeKind::NumpyArray, nullptr};
  if (generic && PyType_IsSubtype(tp, generic)) return {tp, TypeKind::NumpyScalar, nullptr};
  return {tp, TypeKind::Other, nullptr};
}

// Types seen so far. Called with the GIL held, so no lock; each type is kept
// alive by a reference, so its address never comes back as another type.
TypeEntry entry_for(PyTypeObject* tp) {
  static TypeEntry table[32];
  static int size = 0;
  for (int i = 0; i < size; ++i)
    if (table[i].type == tp) return table[i];
  TypeEntry e = classify(tp);
  if (size < 32) {
    Py_INCREF(tp);
    table[size++] = e;
  }
  return e;
}

void fill_tensor(ArgValue& out, const nb::dlpack::dltensor& t, bool readonly) {
  out.kind = ArgValue::Kind::Tensor;
  out.tensor.data = static_cast<char*>(t.data) + t.byte_offset;
  out.tensor.dtype = dtype_of(t.dtype);
  out.tensor.itemsize = (int32_t(t.dtype.bits) * t.dtype.lanes + 7) / 8;
  out.tensor.readonly = readonly;
  out.tensor.ndim = t.ndim;
  out.tensor.shape = t.shape;
  out.tensor.strides = t.strides;
  out.tensor.device_type = t.device.device_type;
  out.tensor.device_id = t.device.device_id;
}

// The dtype a buffer's struct-module format names, or nullopt.
std::optional<DataType> buffer_dtype(const char* format, Py_ssize_t itemsize) {
  if (!format) return DataType(ScalarType::UInt8, 1);  // plain bytes
  if (*format == '@' || *format == '=' || *format == '<' || *format == '|') ++format;
  if (!format[0] || format[1]) return std::nullopt;  // big-endian, structured, complex...
  auto sized = [itemsize](ScalarType s8, ScalarType s16, ScalarType s32, ScalarType s64) -> std::optional<DataType> {
    switch (itemsize) {
      case 1:
        return DataType(s8, 1);
      case 2:
        return DataType(s16, 1);
      case 4:
        return DataType(s32, 1);
      case 8:
        return DataType(s64, 1);
      default:
        return std::nullopt;
    }
  };
  switch (*format) {
    case '?':
      return DataType(ScalarType::Bool, 1);
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
      return sized(ScalarType::Int8, ScalarType::Int16, ScalarType::Int32, ScalarType::Int64);
    case 'B':
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
      return sized(ScalarType::UInt8, ScalarType::UInt16, ScalarType::UInt32, ScalarType::UInt64);
    case 'e':
      return DataType(ScalarType::Float16, 1);
    case 'f':
      return DataType(ScalarType::Float32, 1);
    case 'd':
      return DataType(ScalarType::Float64, 1);
    default:
      return std::nullopt;
  }
}

bool read_buffer(PyObject* o, ArgValue& out, CallScratch& scratch) {
  Py_buffer* view = scratch.new_buffer();
  if (PyObject_GetBuffer(o, view, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    scratch.drop_last_buffer();
    return false;
  }
  std::optional<DataType> dtype = buffer_dtype(view->format, view->itemsize);
  if (!dtype) {
    PyBuffer_Release(view);
    scratch.drop_last_buffer();
    return false;
  }
  out.kind = ArgValue::Kind::Tensor;
  out.tensor.data = view->buf;
  out.tensor.dtype = *dtype;
  out.tensor.ndim = view->ndim;
  out.tensor.shape = reinterpret_cast<const int64_t*>(view->shape);
  out.tensor.strides = nullptr;
  out.tensor.device_type = int32_t(DeviceType::CPU);
  out.tensor.device_id = 0;
  out.tensor.itemsize = int32_t(view->itemsize);
  out.tensor.readonly = view->readonly != 0;
  if (!view->strides) return true;
  int64_t* strides = scratch.new_int64s(size_t(view->ndim));
  for (int d = 0; d < view->ndim; ++d) {
    if (view->strides[d] % view->itemsize != 0)
      throw nb::type_error(("a tensor argument has a byte stride of " + std::to_string(view->strides[d]) +
                            " in dimension " + std::to_string(d) + ", not a multiple of its element size " +
                            std::to_string(view->itemsize) + "; pass a contiguous copy")
                               .c_str());
    strides[d] = view->strides[d] / view->itemsize;
  }
  out.tensor.strides = strides;
  return true;
}

}  // namespace

void throw_not_a_tensor(nb::handle h) {
  std::string got = nb::str(nb::handle(h.type())).c_str();
  // An array whose elements the runtime cannot read (big-endian, complex, object,
  // structured): say which dtype it has.
  if (entry_for(Py_TYPE(h.ptr())).kind == TypeKind::NumpyArray && nb::hasattr(h, "dtype"))
    got += str_cat(" of dtype ", nb::str(nb::repr(h.attr("dtype"))).c_str(),
                   ", whose elements the runtime cannot read (pass a native-endian array of a numeric dtype)");
  throw nb::type_error(
      ("kernel arguments must be tensors (numpy arrays, torch tensors) or Python numbers, got " + got).c_str());
}

DataType dtype_of(const nb::dlpack::dtype& d) {
  using Code = nb::dlpack::dtype_code;
  auto code = Code(d.code);
  // A dtype is only ever read as one of exactly its width: an element size the
  // runtime would get wrong is refused, never widened or narrowed.
  auto unsupported = [&d]() {
    throw nb::type_error(("unsupported tensor dtype (DLPack code " + std::to_string(int(d.code)) + ", " +
                          std::to_string(d.bits) + " bits)")
                             .c_str());
  };
  auto by_bits = [&](ScalarType b8, ScalarType b16, ScalarType b32, ScalarType b64) {
    switch (d.bits) {
      case 8:
        return b8;
      case 16:
        return b16;
      case 32:
        return b32;
      case 64:
        return b64;
    }
    unsupported();
    return b8;
  };
  ScalarType t;
  switch (code) {
    case Code::Int:
      t = by_bits(ScalarType::Int8, ScalarType::Int16, ScalarType::Int32, ScalarType::Int64);
      break;
    case Code::UInt:
      t = by_bits(ScalarType::UInt8, ScalarType::UInt16, ScalarType::UInt32, ScalarType::UInt64);
      break;
    case Code::Float:
      if (d.bits == 8) unsupported();
      t = by_bits(ScalarType::Void, ScalarType::Float16, ScalarType::Float32, ScalarType::Float64);
      break;
    case Code::Bfloat:
      if (d.bits != 16) unsupported();
      t = ScalarType::BFloat16;
      break;
    case Code::Bool:
      if (d.bits != 8) unsupported();
      t = ScalarType::Bool;
      break;
    default: {
      // DLPack 1.1 float4_e2m1fn: torch's float4_e2m1fn_x2 is two of them a byte.
      if (int(d.code) == 17 && d.bits == 4 && d.lanes == 2) return DataType(ScalarType::Float4E2M1FN, 2);
      if (d.bits != 8) unsupported();
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
          unsupported();
      }
    }
  }
  return DataType(t, d.lanes);
}

CallScratch::~CallScratch() {
  for (int i = 0; i < num_buffers_; ++i) PyBuffer_Release(&buffers_[i]);
  for (auto& b : more_buffers_) PyBuffer_Release(b.get());
}

Py_buffer* CallScratch::new_buffer() {
  if (num_buffers_ < kInlineBuffers) return &buffers_[num_buffers_++];
  more_buffers_.push_back(std::make_unique<Py_buffer>());
  return more_buffers_.back().get();
}

void CallScratch::drop_last_buffer() {
  if (!more_buffers_.empty())
    more_buffers_.pop_back();
  else
    --num_buffers_;
}

int64_t* CallScratch::new_int64s(size_t n) {
  if (num_ints_ + n <= kInlineInts) {
    int64_t* p = &ints_[num_ints_];
    num_ints_ += n;
    return p;
  }
  more_ints_.push_back(std::make_unique<int64_t[]>(n));
  return more_ints_.back().get();
}

nb::ndarray<>& CallScratch::keep(nb::ndarray<> a) {
  arrays_.push_back(std::move(a));
  return arrays_.back();
}

bool read_arg(nb::handle h, ArgValue& out, CallScratch& scratch, const DLPackExchangeApi** api) {
  PyObject* o = h.ptr();
  out = ArgValue();
  if (o == Py_None) return true;
  if (PyLong_Check(o)) {  // bool too
    out.kind = ArgValue::Kind::Int;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) throw nb::python_error();
    out.i = v;
    if (overflow > 0) {  // the runtime names the parameter whose range it misses
      unsigned long long u = PyLong_AsUnsignedLongLong(o);
      bool wider = u == (unsigned long long)-1 && PyErr_Occurred();
      if (wider) PyErr_Clear();
      out.int_range = wider ? ArgValue::IntRange::Wider : ArgValue::IntRange::UInt64;
      out.i = wider ? 0 : int64_t(u);
    } else if (overflow < 0) {
      out.int_range = ArgValue::IntRange::Wider;
    }
    return true;
  }
  if (PyFloat_Check(o)) {
    out.kind = ArgValue::Kind::Float;
    out.f = PyFloat_AS_DOUBLE(o);
    return true;
  }
  if (PyTuple_Check(o) && PyTuple_GET_SIZE(o) == 2) {
    // (array, "bfloat16"): an array of another dtype of the same element size,
    // read as a dtype DLPack cannot describe. The element size is kept, so the
    // runtime refuses a label of another width (shape and strides count elements).
    nb::handle tensor = PyTuple_GET_ITEM(o, 0);
    DataType dtype = to_dtype(PyTuple_GET_ITEM(o, 1));
    if (!read_arg(tensor, out, scratch, api) || out.kind != ArgValue::Kind::Tensor) throw_not_a_tensor(tensor);
    if (!out.tensor.itemsize) out.tensor.itemsize = out.tensor.dtype.bytes();
    out.tensor.dtype = dtype;
    return true;
  }
  TypeEntry e = entry_for(Py_TYPE(o));
  switch (e.kind) {
    case TypeKind::Exchange: {
      nb::dlpack::dltensor t;
      if (e.api->dltensor_from_py_object_no_sync(o, &t) != 0) throw nb::python_error();
      fill_tensor(out, t, /*readonly=*/false);  // torch tensors carry no read-only flag
      *api = e.api;
      return true;
    }
    case TypeKind::NumpyArray:
      return read_buffer(o, out, scratch);
    case TypeKind::NumpyScalar:
      return false;
    case TypeKind::Other: {
      // A writable view first; a producer that exports read-only arrays only
      // (the DLPack read-only flag, a read-only buffer) gives a read-only one.
      nb::ndarray<> arr;
      bool readonly = false;
      if (!nb::try_cast(h, arr)) {
        nb::ndarray<nb::ro> ro;
        if (!nb::try_cast(h, ro)) return false;
        arr = nb::ndarray<>(ro);
        readonly = true;
      }
      nb::ndarray<>& kept = scratch.keep(std::move(arr));
      nb::dlpack::dltensor t;
      t.data = kept.data();
      t.device = {kept.device_type(), kept.device_id()};
      t.ndim = int32_t(kept.ndim());
      t.dtype = kept.dtype();
      t.shape = const_cast<int64_t*>(kept.shape_ptr());
      t.strides = const_cast<int64_t*>(kept.stride_ptr());
      fill_tensor(out, t, readonly);
      return true;
    }
  }
  return false;
}

void read_or_convert(nb::handle h, ArgValue& out, CallScratch& scratch, const DLPackExchangeApi** api,
                     nb::handle to_native, std::vector<nb::object>& keep) {
  if (read_arg(h, out, scratch, api)) return;
  if (to_native.is_valid()) {
    keep.push_back(to_native(h));
    if (read_arg(keep.back(), out, scratch, api)) return;
  }
  throw_not_a_tensor(h);
}

std::string describe_param(const KernelSignature& sig, size_t i) {
  if (i >= sig.params.size()) return str_cat("argument ", i, " of kernel '", sig.name, "'");
  return str_cat("argument '", sig.params[i].name, "' (parameter ", i, " of kernel '", sig.name, "')");
}

void read_param(const KernelSignature& sig, size_t i, nb::handle h, ArgValue& out, CallScratch& scratch,
                const DLPackExchangeApi** api, nb::handle to_native, std::vector<nb::object>& keep) {
  try {
    read_or_convert(h, out, scratch, api, to_native, keep);
  } catch (nb::builtin_exception& e) {
    throw nb::builtin_exception(e.type(), (describe_param(sig, i) + ": " + e.what()).c_str());
  } catch (nb::python_error& e) {
    std::string message = describe_param(sig, i) + ": " + nb::str(e.value()).c_str();
    PyErr_SetString(e.type().ptr(), message.c_str());
    throw nb::python_error();
  }
}

PlainArgs::PlainArgs(const nb::sequence& args, const KernelSignature& sig) {
  values.resize(nb::len(args));
  size_t i = 0;
  for (nb::handle h : args) {
    const DLPackExchangeApi* api = nullptr;
    read_param(sig, i, h, values[i], scratch, &api, nb::handle(), keep);
    ++i;
  }
}
