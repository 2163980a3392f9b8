// encode_tensor_map: the checks cuTensorMapEncodeTiled documents, done here so a
// bad map fails with the argument named rather than CUDA_ERROR_INVALID_VALUE, then
// the driver's encoding or the emulator's.
#include "runtime/cuda/tma.h"

#include <cstdint>
#include <cstring>
#include <sstream>

#include "runtime/cuda/cuda_api.h"
#include "support/error.h"
// The emulator's map layout, shared with device/emu/tma_emu.h.
#include "../../../device/common/tma_map.h"

namespace tl {
namespace {

// CUtensorMapDataType codes.
enum CuTensorMapDataType : int {
  kU8 = 0,
  kU16 = 1,
  kU32 = 2,
  kI32 = 3,
  kU64 = 4,
  kI64 = 5,
  kF16 = 6,
  kF32 = 7,
  kF64 = 8,
  kBF16 = 9,
  kTF32 = 11,
  kNone = -1,
};

// The TMA element type that moves `t`; the copy only moves bytes, so signed and
// fp8 types travel as unsigned integers of their width.
int tma_dtype(ScalarType t) {
  switch (t) {
    case ScalarType::Int8:
    case ScalarType::UInt8:
    case ScalarType::Float8E4M3FN:
    case ScalarType::Float8E5M2:
    case ScalarType::Float8E4M3FNUZ:
    case ScalarType::Float8E5M2FNUZ:
    case ScalarType::Float8E8M0FNU:
      return kU8;
    case ScalarType::Int16:
    case ScalarType::UInt16:
      return kU16;
    case ScalarType::Int32:
      return kI32;
    case ScalarType::UInt32:
      return kU32;
    case ScalarType::Int64:
      return kI64;
    case ScalarType::UInt64:
      return kU64;
    case ScalarType::Float16:
      return kF16;
    case ScalarType::BFloat16:
      return kBF16;
    case ScalarType::Float32:
      return kF32;
    case ScalarType::TFloat32:
      return kTF32;
    case ScalarType::Float64:
      return kF64;
    case ScalarType::Bool:  // sub-byte and non-data types: no TMA element type
    case ScalarType::Int4:
    case ScalarType::Float4E2M1FN:
    case ScalarType::Float4E2M1Unpacked:  // sm_100's unpacking TMA only
    case ScalarType::Handle:
    case ScalarType::Void:
      return kNone;
  }
  return kNone;
}

bool is_float_code(int code) {
  return code == kF16 || code == kF32 || code == kF64 || code == kBF16 || code == kTF32;
}

[[noreturn]] void fail(const std::string& message) {
  throw_user_error({}, "encode_tensor_map: " + message);
}

template <class T>
std::string list(const std::vector<T>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

int swizzle_bytes(TmaSwizzle s) {
  switch (s) {
    case TmaSwizzle::None:
      return 0;
    case TmaSwizzle::B32:
      return 32;
    case TmaSwizzle::B64:
      return 64;
    case TmaSwizzle::B128:
      return 128;
  }
  return 0;
}

void validate(const TensorMapParams& p, int code) {
  const std::string dtype = p.dtype.name();
  if (!p.dtype.is_scalar() || code == kNone)
    fail(str_cat("dtype ", dtype, " has no TMA element type; use an 8, 16, 32 or 64-bit scalar type"));
  const size_t rank = p.dims.size();
  if (rank < 1 || rank > 5) fail(str_cat("a tensor map has rank 1 to 5; dims ", list(p.dims), " has rank ", rank));
  if (p.strides.size() != rank - 1)
    fail(str_cat("strides gives the byte strides of dimensions 1.. (", rank - 1, " for rank ", rank, "); got ",
                 list(p.strides)));
  if (p.box.size() != rank) fail(str_cat("box needs one size per dimension (", rank, "); got ", list(p.box)));
  if (!p.elem_strides.empty() && p.elem_strides.size() != rank)
    fail(str_cat("elem_strides needs one step per dimension (", rank, ") or none; got ", list(p.elem_strides)));
  if (p.base == 0 || p.base % 16 != 0)
    fail(str_cat("base must be a 16-byte aligned address; got 0x", std::hex, p.base));
  const uint64_t elem = uint64_t(p.dtype.bytes());
  for (size_t d = 0; d < rank; ++d)
    if (p.dims[d] < 1 || p.dims[d] > (uint64_t(1) << 32))
      fail(str_cat("dims[", d, "] must be in [1, 2^32]; got ", p.dims[d]));
  for (size_t d = 0; d + 1 < rank; ++d)
    if (p.strides[d] % 16 != 0 || p.strides[d] >= (uint64_t(1) << 40))
      fail(str_cat("strides[", d, "] (the byte stride of dimension ", d + 1,
                   ") must be a multiple of 16 below 2^40; got ", p.strides[d]));
  for (size_t d = 0; d < rank; ++d)
    if (p.box[d] < 1 || p.box[d] > 256) fail(str_cat("box[", d, "] must be in [1, 256]; got ", p.box[d]));
  if (p.box[0] * elem % 16 != 0)
    fail(str_cat("the box's inner row (box[0] * ", elem, " bytes of ", dtype, " = ", p.box[0] * elem,
                 " bytes) must be a multiple of 16 bytes"));
  for (size_t d = 0; d < p.elem_strides.size(); ++d)
    if (p.elem_strides[d] < 1 || p.elem_strides[d] > 8)
      fail(str_cat("elem_strides[", d, "] must be in [1, 8]; got ", p.elem_strides[d]));
  const int span = swizzle_bytes(p.swizzle);
  if (span != 0 && p.box[0] * elem > uint64_t(span))
    fail(str_cat("the box's inner row (", p.box[0] * elem, " bytes) must fit in the ", span,
                 "-byte swizzle span; use box[0] <= ", span / elem, " or a wider swizzle"));
  if (p.oob_fill == TmaOobFill::NanRequestZeroFma && !is_float_code(code))
    fail(str_cat("the NaN out-of-bounds fill needs a float dtype; got ", dtype));
}

TensorMapBytes encode_for_emulator(const TensorMapParams& p, int code) {
  EmuTensorMap m;
  std::memset(&m, 0, sizeof(m));
  m.magic = kEmuTensorMapMagic;
  m.rank = uint8_t(p.dims.size());
  m.elem_bytes = uint8_t(p.dtype.bytes());
  m.swizzle_bytes = uint8_t(swizzle_bytes(p.swizzle));
  m.nan_fill = p.oob_fill == TmaOobFill::NanRequestZeroFma;
  m.dtype = uint8_t(code);
  m.base = p.base;
  for (size_t d = 0; d < p.dims.size(); ++d) {
    m.dims[d] = p.dims[d];
    m.strides[d] = d == 0 ? m.elem_bytes : p.strides[d - 1];
    m.box[d] = uint16_t(p.box[d]);
    m.elem_strides[d] = uint8_t(p.elem_strides.empty() ? 1 : p.elem_strides[d]);
  }
  TensorMapBytes out{};
  std::memcpy(out.data(), &m, sizeof(m));
  return out;
}

// The driver declares cuuint64_t as unsigned long long; uint64_t is unsigned long here.
const unsigned long long* u64(const std::vector<uint64_t>& v) {
  static_assert(sizeof(unsigned long long) == sizeof(uint64_t));
  return reinterpret_cast<const unsigned long long*>(v.data());
}

TensorMapBytes encode_with_driver(const TensorMapParams& p, int code) {
  const CudaDriver* d = cuda_driver();
  if (!d)
    fail(
        "a tensor map for the GPU needs the CUDA driver (libcuda.so), which was not found; "
        "encode with emulate=true for the emulator");
  if (!d->cuTensorMapEncodeTiled)
    fail("the installed CUDA driver has no cuTensorMapEncodeTiled (it needs CUDA 12.0 or later)");
  const size_t rank = p.dims.size();
  std::vector<uint32_t> steps = p.elem_strides.empty() ? std::vector<uint32_t>(rank, 1) : p.elem_strides;
  // A rank-1 map has no strides, but the driver refuses a null array (seen on the H200).
  std::vector<uint64_t> strides = p.strides;
  if (strides.empty()) strides.push_back(0);
  alignas(64) uint8_t map[128] = {};
  check_cuda(d->cuTensorMapEncodeTiled(map, code, unsigned(rank), reinterpret_cast<void*>(uintptr_t(p.base)),
                                       u64(p.dims), u64(strides), p.box.data(), steps.data(), 0 /*interleave*/,
                                       int(p.swizzle), int(p.l2_promotion), int(p.oob_fill)),
             "cuTensorMapEncodeTiled");
  TensorMapBytes out;
  std::memcpy(out.data(), map, out.size());
  return out;
}

}  // namespace

TensorMapBytes encode_tensor_map(const TensorMapParams& p, bool emulate) {
  const int code = tma_dtype(p.dtype.scalar_type());
  validate(p, code);
  return emulate ? encode_for_emulator(p, code) : encode_with_driver(p, code);
}

TmaSwizzle tma_swizzle_of_bytes(int bytes) {
  switch (bytes) {
    case 0:
      return TmaSwizzle::None;
    case 32:
      return TmaSwizzle::B32;
    case 64:
      return TmaSwizzle::B64;
    case 128:
      return TmaSwizzle::B128;
  }
  fail(str_cat("swizzle is the span in bytes: 0 (none), 32, 64 or 128; got ", bytes));
}

TmaL2Promotion tma_l2_promotion_of_bytes(int bytes) {
  switch (bytes) {
    case 0:
      return TmaL2Promotion::None;
    case 64:
      return TmaL2Promotion::B64;
    case 128:
      return TmaL2Promotion::B128;
    case 256:
      return TmaL2Promotion::B256;
  }
  fail(str_cat("l2_promotion is a fetch size in bytes: 0 (none), 64, 128 or 256; got ", bytes));
}

}  // namespace tl
