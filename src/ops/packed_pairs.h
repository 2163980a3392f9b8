// The packed-pair device functions of device/cuda/packed.cuh (tl::add2 ... tl::abs2:
// two float16 / bfloat16 / float32 values per instruction) as the CUDA lowering names
// them: `tl::add2<tl::__half2>(&out[0], &a[0], &b[0])`; and the pair conversions of
// device/cuda/vec.cuh.
#pragma once

#include <string>

#include "ir/device_calls.h"
#include "ir/dtype.h"
#include "ir/expr.h"

namespace tl {

// The pair function for a binary op (add2, sub2, mul2, max2, min2), or nullptr.
inline const char* packed_op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "add2";
    case BinaryOp::Sub:
      return "sub2";
    case BinaryOp::Mul:
      return "mul2";
    case BinaryOp::Max:
      return "max2";
    case BinaryOp::Min:
      return "min2";
    default:
      return nullptr;
  }
}

// The pair type of an element type (CUDA's names): tl::__half2, tl::__nv_bfloat162,
// tl::float2; empty for any other type.
inline std::string packed_pair_type(DataType t) {
  if (t == dtype::Float16) return "tl::__half2";
  if (t == dtype::BFloat16) return "tl::__nv_bfloat162";
  if (t == dtype::Float32) return "tl::float2";
  return "";
}

// `tl::<fn><pair type>`, the extern call's name.
inline std::string packed_pair_call(const std::string& fn, DataType t) {
  return "tl::" + fn + "<" + packed_pair_type(t) + ">";
}

// The pair conversion of device/cuda/vec.cuh that converts two `from` values into two
// `to` values (tl::__float22half2_rn ..., named as CUDA's headers or TileLang name the
// conversion of that pair of types), or empty where there is none: the template
// argument of the vector moves and of tl::cast_pair / tl::convert_pair.
inline std::string pair_conversion(DataType from, DataType to) {
  using namespace dtype;
  const bool fp8 = to == Float8E4M3FN || to == Float8E5M2, from_fp8 = from == Float8E4M3FN || from == Float8E5M2;
  const char* name = nullptr;
  if (from == Float32 && to == Float16) name = "__float22half2_rn";
  if (from == Float16 && to == Float32) name = "__half22float2";
  if (from == Float32 && to == BFloat16) name = "__float22bfloat162_rn";
  if (from == BFloat16 && to == Float32) name = "__bfloat1622float2";
  if (from == Float32 && fp8) name = "__nv_cvt_float2_to_fp8x2";
  if (from_fp8 && to == Float32) name = "__tl_cvt_fp8x2_to_float2";
  if (from_fp8 && to == Float16) name = "__tl_cvt_fp8x2_to_half2";
  if (from == Float16 && fp8) name = "__tl_cvt_half2_to_fp8x2";
  if (from == Float8E8M0FNU && to == BFloat16) name = "__tl_cvt_e8m0x2_to_bfloat162";
  if (from == BFloat16 && to == Float8E8M0FNU) name = "__tl_cvt_bfloat162_to_e8m0x2";
  if (from == Float32 && to == Float8E8M0FNU) name = "__tl_cvt_float2_to_e8m0x2";
  if (from == Float64 && to == Float8E8M0FNU) name = "__tl_cvt_double2_to_e8m0x2";
  return name ? std::string("tl::") + name : std::string();
}

// The template arguments of a vector move (tl::load_vec / store_vec / copy_vec) of w
// elements from `from` into `to`: {w}, or on CUDA, where the dtypes differ and w is
// even, {w, <pair conversion>} (`tl::store_vec<8, tl::__float22half2_rn>`).
inline std::vector<TemplateArg> vector_move_args(int64_t w, DataType from, DataType to, bool cuda) {
  std::string conversion = cuda && from != to && w % 2 == 0 ? pair_conversion(from, to) : std::string();
  if (conversion.empty()) return {w};
  return {w, conversion};
}

}  // namespace tl
